//! The replay's summary on stderr: turns and rejects, warnings with their
//! first lines, one line per variant, production agreement and notes.

use std::fmt::Write as _;

use super::{Outcome, SEGMENT_LIMIT};
use crate::replay::tally::VariantTally;
use crate::replay::WARNING_KINDS;
use crate::report::markdown::pct;
use crate::summary::build::published;
use crate::summary::text::{count, one_line};

impl Outcome {
    /// The text `replay` prints on stderr when it is not `--quiet`.
    /// The summary on stderr; `written` names what the run wrote
    /// ([`super::Targets::written`]).
    pub fn console(&self, secs: f64, written: &[String]) -> String {
        let t = &self.totals;
        let mut msg = format!(
            "critic-gate: {}, {} rejected ({}) in {secs:.2}s\n",
            count(t.turns, "turn", "turns"),
            t.rejected,
            count(t.nonblank_lines, "line", "lines")
        );
        self.warning_lines(&mut msg);
        for (dim, n) in &self.segments_cut {
            let _ = writeln!(
                msg,
                "note: segments.csv keeps the {SEGMENT_LIMIT} largest of {n} values of {dim}; the rest are in (other)"
            );
        }
        self.variant_lines(&mut msg);
        if let Some(a) = self
            .summary
            .run
            .assumed_confidence_sentence(&|v| v.to_string())
        {
            let _ = writeln!(msg, "  {a}");
        }
        self.production_line(&mut msg);
        for n in &self.summary.run.notes {
            let _ = writeln!(msg, "note: {}", one_line(n));
        }
        for w in written {
            let _ = writeln!(msg, "{w}");
        }
        msg
    }

    /// The warnings and notes the console prints, a message each without
    /// its `warning:` or `note:`: what a Python caller gets as warnings.
    pub fn cautions(&self) -> Vec<String> {
        // From the console's own text, so every line it warns with is one.
        self.console(0.0, &[])
            .lines()
            .filter_map(|l| {
                let l = l.trim_start();
                l.strip_prefix("warning: ")
                    .or_else(|| l.strip_prefix("note: "))
                    .or_else(|| l.starts_with("CONTRACT VIOLATION: ").then_some(l))
            })
            .map(str::to_string)
            .collect()
    }

    fn warning_lines(&self, msg: &mut String) {
        for kind in WARNING_KINDS {
            if let Some((n, ex)) = self.totals.warnings.0.get(&kind) {
                let at: Vec<String> = ex
                    .iter()
                    .map(|(s, l)| format!("{}:{l}", one_line(&self.sources[*s])))
                    .collect();
                let (name, meaning) = (kind.name(), kind.meaning());
                let _ = writeln!(
                    msg,
                    "warning: {n} × {name} (first at {}): {meaning}",
                    at.join(", ")
                );
            }
        }
    }

    fn variant_lines(&self, msg: &mut String) {
        let plan = &self.plan;
        let base = &plan.variants[plan.baseline].name;
        for (i, v) in plan.variants.iter().enumerate() {
            let vt = &self.totals.variants[i];
            let c = &vt.counts;
            let skip = (c.turns > 0).then(|| c.skips() as f64 / c.turns as f64);
            let risk = self.risk_of(i, vt);
            // Risky skips show beside regressions: a risky skip is news a
            // label may not show.
            let risky = match (v.config.metacognition_selective_gate, c.risky_skips) {
                (true, n) if n > 0 => format!(", {}", count(n, "risky skip", "risky skips")),
                _ => String::new(),
            };
            let base_calls = self.totals.variants[plan.baseline].counts.critic_calls();
            let share = match i == plan.baseline || base_calls == 0 {
                true => String::new(),
                false => format!(
                    " ({} of {base}'s calls)",
                    pct(Some(c.saved_calls as f64 / base_calls as f64))
                ),
            };
            let _ = writeln!(
                msg,
                "  {:<12} skip rate {:>6}  saved calls {:>7}{share}  added calls {:>7}  {risk}{risky}",
                v.name,
                pct(skip),
                c.saved_calls,
                c.added_calls,
            );
            if i != plan.baseline {
                self.unlabelled_line(vt, msg);
            } else if let Some(calls) = crate::summary::text::unlabelled_calls(base, c) {
                let _ = writeln!(msg, "  {:<12} {calls}", "");
            }
            if c.fires_without_critic > 0 {
                let _ = writeln!(
                    msg,
                    "  {:<12} {} on an empty draft: no critic runs there (symfonic reviews no empty reply), so {} critic calls",
                    "",
                    count(c.fires_without_critic, "fire is", "fires are"),
                    c.critic_calls()
                );
            }
            if vt.contract_violations > 0 {
                let _ = writeln!(
                    msg,
                    "  CONTRACT VIOLATION: {} turns where flag-off variant {} differs from the legacy gate",
                    vt.contract_violations, v.name
                );
            }
        }
    }

    /// What a variant risks, on its new skips; the baseline's are
    /// production's disagreements with it.
    fn risk_of(&self, i: usize, vt: &VariantTally) -> String {
        let plan = &self.plan;
        let base = &plan.variants[plan.baseline].name;
        let c = &vt.counts;
        // The baseline's revised skips are production's disagreements
        // with it, not a risk of switching; a variant's count against
        // the baseline is of the turns the baseline fires on.
        let unreviewed =
            self.summary.run.variants[&plan.variants[i].name].unreviewed_production_skips();
        if c.turns == 0 {
            // Nothing read is nothing known, never "no risk".
            "no turn was replayed: nothing is known of its risk".to_string()
        } else if let Some(n) = unreviewed {
            // Production's own skips: no replay of its traffic labels them.
            format!(
                "risk unknown: {} (the gate that produced this traffic) never reached the critic",
                count(n, "skip", "skips")
            )
        } else if i == plan.baseline {
            format!(
                "{} (its skips production's critic revised or refused; the baseline)",
                count(
                    c.safety_regressions,
                    "production disagreement",
                    "production disagreements"
                )
            )
        } else if c.new_skips == 0 {
            format!("no new skips (none of its skips is of a turn {base} fires on): no new risk")
        } else if c.new_labelled_skips == 0 {
            format!(
                "regressions unknown (none of its {} on turns {base} fires on has a recorded critic verdict)",
                count(c.new_skips, "new skip", "new skips")
            )
        } else {
            format!(
                "{} in {} labelled new skips (turns {base} fires on), bound {}",
                count(c.new_safety_regressions, "regression", "regressions"),
                c.new_labelled_skips,
                pct(crate::stats::run_level_upper(
                    &published(vt.run_labels()),
                    0.05
                ))
            )
        }
    }

    /// The unlabelled new skips by cause with the worst-case bound, and
    /// the design effect when the verdicts cluster by run.
    fn unlabelled_line(&self, vt: &VariantTally, msg: &mut String) {
        let c = &vt.counts;
        let unlabelled = c.new_skips - c.new_labelled_skips;
        if unlabelled > 0 {
            let causes = crate::summary::text::unlabelled_causes(
                c.new_unlabelled_not_run,
                c.new_unlabelled_no_event,
                c.new_unlabelled_no_verdict(),
            );
            let worst = crate::stats::run_level_upper(&published(vt.run_worst_case()), 0.05);
            let _ = writeln!(
                msg,
                "  {:<12} {} unlabelled ({}); every one a regression, the bound is {}",
                "",
                count(unlabelled, "new skip", "new skips"),
                causes,
                pct(worst)
            );
        }
        if let Some(d) = published(vt.run_labels())
            .design_effect
            .filter(|d| *d > crate::stats::DESIGN_EFFECT_WARNING)
        {
            let _ = writeln!(
                msg,
                "  {:<12} runs are the sampling unit (design effect {d:.2}): the bound counts {:.0} effective labels of {}",
                "",
                c.new_labelled_skips as f64 / d,
                c.new_labelled_skips
            );
        }
    }

    fn production_line(&self, msg: &mut String) {
        let p = &self.summary.production;
        if p.known > 0 {
            let prod = &self.plan.variants[self.plan.production()].name;
            let _ = writeln!(
                msg,
                "  production   agreement {:>6} of {} turns whose recording says what production did ({prod})",
                pct(p.agreement),
                p.known
            );
            let equally = &self.summary.run.production_fits_equally;
            if !equally.is_empty() {
                let _ = writeln!(
                    msg,
                    "  {:<12} {} fit the recording as well: the traffic cannot tell which gate production ran",
                    "",
                    equally.join(", ")
                );
            }
        }
    }
}
