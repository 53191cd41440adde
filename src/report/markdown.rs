//! `report.md`: the headline per variant, the floors with their sole
//! blockers, and the first regressions, for people and pull requests.

use std::fmt::Write as _;
use std::io::Write;

use super::export::{Export, ReplayReport, WriteFailure};
use crate::gate::Reason;
use crate::summary::figures::VariantSummary;
use crate::summary::text::{count, excerpt, md_name, md_text};

/// The rate the small-sample warning measures evidence against: the
/// regression rate a team would want to rule out, at 95% confidence.
pub(crate) const SMALL_SAMPLE_RATE: f64 = 0.05;

/// `12.3%`, or `n/a`.
pub(crate) fn pct(x: Option<f64>) -> String {
    x.map_or("n/a".into(), |x| format!("{:.1}%", x * 100.0))
}

/// `$1.23`, or `n/a` (no price configured).
pub(crate) fn usd(x: Option<f64>) -> String {
    x.map_or("n/a".into(), |x| {
        if x < 0.0 {
            format!("-${:.2}", -x)
        } else {
            format!("${x:.2}")
        }
    })
}

/// Does the replay reproduce production? The baseline against what the
/// recording says production's gate did, and which events were no review.
fn production_section(s: &mut String, r: &ReplayReport) {
    let p = &r.summary.production;
    let prod = r.plan.production();
    let base = md_name(&r.plan.variants[prod].name);
    let who = match prod == r.plan.baseline {
        true => format!("The baseline {base}"),
        false => format!("{base}, the gate named as production's,"),
    };
    let _ = writeln!(s, "\n## Does the replay reproduce production?\n");
    if p.known == 0 {
        let _ = writeln!(
            s,
            "Unknown: no turn records a critic event, so nothing says what production's gate did."
        );
    } else {
        let _ = writeln!(
            s,
            "{who} decides as production did on {} of {} turns whose recording says what production's gate did ({}): production fired where {base} skips on {}, production skipped where it fires on {}.",
            p.known - p.fired_baseline_skips - p.skipped_baseline_fires,
            p.known,
            pct(p.agreement),
            p.fired_baseline_skips,
            p.skipped_baseline_fires,
        );
        if let Some(n) = &p.most_common {
            let _ = writeln!(
                s,
                "\n**Not reproduced: {base}'s config probably differs from production's.** Most common disagreement: {n} Every disagreeing turn is in `mismatches.csv`."
            );
        }
        let equally = &r.summary.run.production_fits_equally;
        if !equally.is_empty() {
            let names: Vec<String> = equally.iter().map(|n| md_name(n)).collect();
            let _ = writeln!(
                s,
                "\n**The traffic cannot tell which gate production ran:** the recorded critic events fit {} as well as {base}. Check that {base} is the gate production ran (the config's `production`).",
                names.join(", ")
            );
        }
    }
    let base_counts = &r.totals.variants[prod].counts;
    if let Some(calls) = crate::summary::text::unlabelled_calls(&base, base_counts) {
        let _ = writeln!(s, "\n{base}: {calls}.");
    }
    let not_run = r.totals.variants[prod].counts.critic_not_run;
    if not_run > 0 {
        let _ = writeln!(
            s,
            "\n{} a critic event where no critic ran (`ran: false`, or 0 tokens in and out: symfonic's gate-skipped or fail-open `approve`). They are not labels, costs or latency samples.",
            count(not_run, "turn carries", "turns carry")
        );
    }
}

pub(crate) struct ReportMd;

impl Export for ReportMd {
    fn file_name(&self) -> &'static str {
        "report.md"
    }

    fn write(&self, r: &ReplayReport, out: &mut dyn Write) -> Result<(), WriteFailure> {
        let mut s = String::new();
        headline_table(&mut s, r);
        production_section(&mut s, r);
        reasons_section(&mut s, r);
        regressions_section(&mut s, r);
        charts_section(&mut s);
        signals_section(&mut s, r);
        notes_section(&mut s, r);
        out.write_all(s.as_bytes()).map_err(WriteFailure::from)
    }
}

/// What was read, and one row of headline figures per variant.
fn headline_table(s: &mut String, r: &ReplayReport) {
    let run = &r.summary.run;
    let _ = writeln!(s, "# critic-gate replay\n");
    let _ = writeln!(
        s,
        "{} from {}; {} rejected; baseline {}; production's gate {}.\n",
        count(run.turns, "turn", "turns"),
        md_text(&r.sources.join(", ")),
        run.rejected,
        md_name(&run.baseline),
        md_name(&run.production)
    );
    bottom_line(s, r);
    let _ = writeln!(s, "## Every variant\n");
    let _ = writeln!(s, "| variant | skip rate | critic calls | saved calls (share) | added calls | saved $ | net $ | regressions on new skips (upper 95%) | worst case | risky skips | label coverage | p95 critic latency (recorded) | p95 with added calls |");
    let _ = writeln!(
        s,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for m in run.ordered() {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} ({}) | {} | {} | {} | {} | {} |",
            md_name(&m.variant),
            pct(m.skip_rate),
            m.critic_calls,
            match m.saved_call_share {
                Some(_) => format!("{} ({})", m.saved_calls, pct(m.saved_call_share)),
                None => m.saved_calls.to_string(),
            },
            m.added_calls,
            usd(m.saved_usd),
            usd(m.net_usd),
            match m.new_skips {
                _ if m.unreviewed_production_skips().is_some() => format!(
                    "unknown: {} of production's skips unreviewed",
                    m.production_skips_unlabelled.unwrap_or(0)
                ),
                _ if m.baseline =>
                    format!("none new; {} disagreements", m.all_skips_safety_regressions),
                0 => "no new skips".to_string(),
                _ if m.new_labelled_skips == 0 => "unknown, no labels".to_string(),
                _ => format!("{} of {}", m.safety_regressions, m.new_labelled_skips),
            },
            pct(m.safety_regression_rate_certificate_upper95),
            pct(m.safety_regression_rate_worst_case_upper95),
            m.risky_skips.map_or("n/a".into(), |n| n.to_string()),
            pct(m.label_coverage),
            m.critic_latency_p95_ms
                .map_or("n/a".into(), |x| format!("{x} ms")),
            m.critic_latency_p95_ms_with_estimates
                .map_or("n/a".into(), |x| format!("{x} ms")),
        );
    }
    let _ = writeln!(
        s,
        "\n`critic calls`: fires on which a critic can run (symfonic reviews no empty reply); `saved calls (share)`: calls the baseline makes that the variant does not, and their share of the baseline's critic calls (the skip rate is a share of turns). `regressions on new skips`: of the variant's new skips (turns it skips that the baseline fires on: the only turns whose risk a switch adds), those production's critic revised or refused, of the labelled ones; the upper 95% bound is `check`'s budget's, each run counted at most one trial (the descriptive Korn-Graubard figure, runs as the sampling unit, is summary.csv's `safety_regression_rate_upper95`, not a 95% bound). Both assume that a run's length says nothing about its risk: in simulations (1,000 replicates each) the budget's bound covered the true rate in 97.3-100% of replicates with rare derailed conversations, heavy-tailed sizes, long runs riskier on light-tailed sizes and 12-30 runs, but in 92.7% where long runs were riskier and sizes heavy-tailed (the descriptive bound 85-100% in the others and about half there), and in about 64% where only rare long runs regress, with no warning; the report warns when a few runs hold most of the labels. `worst case`: the budget's bound with every unlabelled new skip counted a regression, what the labels alone support. `label coverage`: the share of new skips with a label. The baseline's `disagreements`: production's critic intervened on turns the baseline skips, so the baseline does not reproduce production there; they are not a risk of switching. `risky skips`: skips whose ack covers less than half the draft (an acknowledgement with news: \"Sure, but refunds are closed on Sundays\"), labelled or not; `n/a` for a legacy gate, whose skips are no ack skips. `critic-gate mine` lists them.\n\n`p95 with added calls`: the calls a variant adds have no recorded latency; each is drawn from the recorded latencies of drafts of its length (its share spread over every recorded value), so the tail it adds is production's tail, not a mean; a length with fewer than {} recorded latencies draws from every turn's."
    , crate::replay::tally::MIN_LATENCY_POOL);
    for m in run.ordered() {
        if let Some(n) = m
            .latency_estimate_pool
            .filter(|n| *n < crate::replay::tally::MIN_LATENCY_POOL)
        {
            let _ = writeln!(
                s,
                "\n> {}'s p95 with added calls rests on {}: a tail drawn from so few values is little more than one of them.",
                md_name(&m.variant),
                count(n, "recorded latency", "recorded latencies")
            );
        }
    }
}

/// One sentence per candidate (every variant but the baseline): what
/// switching to it saves and risks; then a warning for each whose labels
/// are too few to rule out a regression rate of [`SMALL_SAMPLE_RATE`].
fn bottom_line(s: &mut String, r: &ReplayReport) {
    let run = &r.summary.run;
    let base = &run.baseline;
    let base_md = md_name(base);
    let candidates: Vec<&VariantSummary> = run.ordered().filter(|m| &m.variant != base).collect();
    if candidates.is_empty() {
        return;
    }
    let _ = writeln!(s, "## Bottom line\n");
    let prod = &run.variants[&run.production];
    if let Some(n) = prod.unreviewed_production_skips() {
        let _ = writeln!(
            s,
            "- **{}, the gate that produced this traffic: risk unknown.** {}.",
            md_name(&prod.variant),
            crate::summary::text::unreviewed_skips(&prod.variant, n)
        );
    }
    if let Some(sample) = crate::summary::build::sample_sentence(prod) {
        let _ = writeln!(
            s,
            "- **{}, measured from a critic sample:** {sample}.",
            md_name(&prod.variant)
        );
    }
    for m in &candidates {
        let dollars = match m.net_usd {
            Some(x) => format!("{} net", usd(Some(x))),
            None => "dollars not reported (see the notes)".to_string(),
        };
        let share = m.saved_call_share.map_or(String::new(), |x| {
            format!(" ({} of {base_md}'s)", pct(Some(x)))
        });
        let risk = risk_sentence(m, &base_md);
        let risky = match m.risky_skips {
            Some(n) if n > 0 => format!(
                "; {} risky (the ack covers less than half the draft: an acknowledgement with news, which a label may not show)",
                count(n, "skip is", "skips are")
            ),
            _ => String::new(),
        };
        let bound = bound_sentence(m);
        let _ = writeln!(
            s,
            "- **{}** instead of {base_md}: saves {}{share} and adds {} over {}, {dollars}; {risk}{risky}{bound}.",
            md_name(&m.variant),
            count(m.saved_calls, "critic call", "critic calls"),
            m.added_calls,
            count(m.turns, "turn", "turns"),
        );
    }
    if let Some(a) = run.assumed_confidence_sentence(&|v| md_name(v)) {
        let _ = writeln!(s, "\n> **{a}**");
    }
    too_few_labels(s, &candidates);
    let _ = writeln!(s);
}

/// What a candidate's new skips let out: unknown without labels, else
/// its regressions on them.
fn risk_sentence(m: &VariantSummary, base_md: &str) -> String {
    match (m.new_labelled_skips, m.new_skips) {
        _ if m.turns == 0 => "no turn was replayed, so nothing is known of its risk".to_string(),
        (_, 0) => format!("it skips no turn {base_md} fires on, so it adds no new risk"),
        (0, n) => format!(
            "whether its new skips (turns {base_md} fires on) let out replies the critic would change is unknown: none of its {} has a recorded critic verdict, so nothing bounds its safety regression rate",
            count(n, "new skip", "new skips")
        ),
        (l, n) => format!(
            "of its {} (turns {base_md} fires on), {l} have a critic verdict and the critic revised or refused {}",
            count(n, "new skip", "new skips"),
            m.safety_regressions
        ),
    }
}

/// The run-level bound, what clusters, and what the labels alone
/// support when some new skips are unlabelled.
fn bound_sentence(m: &VariantSummary) -> String {
    let Some(c) = m.safety_regression_rate_certificate_upper95 else {
        return String::new();
    };
    let mut out = format!(
        "; its safety regression rate on new skips is at most {} (95% upper bound over {}, each run worth at most one trial, as `check`'s budget holds it)",
        pct(Some(c)),
        count(m.labelled_runs, "run", "runs")
    );
    if let Some(d) = m
        .design_effect
        .filter(|d| *d > crate::stats::DESIGN_EFFECT_WARNING)
    {
        let _ = write!(
            out,
            "; with runs as the sampling unit (design effect {d:.2}: the verdicts of a run are alike, or too few runs hold a regression to tell how alike) the bound counts about {} independent labels, not {}",
            m.effective_labels.map_or(0.0, f64::round),
            m.new_labelled_skips
        );
    }
    if let Some(u) = m.safety_regression_rate_upper95.filter(|u| *u < c) {
        let _ = write!(
            out,
            "; the descriptive figure with runs as the sampling unit (Korn and Graubard's, `safety_regression_rate_upper95`) is {}, not a 95% bound: where long runs are riskier and sizes heavy-tailed it covered the true rate about half the time in simulation",
            pct(Some(u))
        );
    }
    if let Some(eff) = m.effective_runs.filter(|e| {
        m.labelled_runs >= 2 && *e < crate::stats::FEW_RUNS_HOLD_MOST * m.labelled_runs as f64
    }) {
        let _ = write!(
            out,
            "; **a few runs hold most of its labels** (Kish's effective runs {eff:.1} of {}): a rare long run can carry the rate, and the bound assumes that a run's length says nothing about its risk",
            m.labelled_runs
        );
    }
    let unlabelled = m.new_skips - m.new_labelled_skips;
    if unlabelled > 0 {
        let _ = write!(
            out,
            "; {} unlabelled ({}), and counting every one a regression the bound is {}: the labels alone support no less",
            count(unlabelled, "new skip is", "new skips are"),
            unlabelled_causes(m),
            pct(m.safety_regression_rate_worst_case_upper95)
        );
    }
    out
}

/// The unlabelled new skips by cause, the counted ones only.
fn unlabelled_causes(m: &VariantSummary) -> String {
    crate::summary::text::unlabelled_causes(
        m.new_unlabelled_critic_not_run,
        m.new_unlabelled_no_event,
        m.new_unlabelled_no_verdict,
    )
}

/// A warning for each candidate whose labels are too few to rule out a
/// regression rate of [`SMALL_SAMPLE_RATE`]: the best case, and the count
/// that concludes with good odds when the true rate is half of it; or
/// whose labels are enough but their runs are not (with none revised the
/// bound is the exact one on Kish's effective runs).
fn too_few_labels(s: &mut String, candidates: &[&VariantSummary]) {
    let need = crate::stats::labels_needed(SMALL_SAMPLE_RATE, 0.05);
    for m in candidates {
        // The best case above; a team needs the runs that conclude with
        // good odds when the rate is truly well below the one ruled out.
        let powered = crate::summary::text::runs_for_power(
            (m.effective_runs, m.labelled_runs),
            SMALL_SAMPLE_RATE,
            SMALL_SAMPLE_RATE / 2.0,
            &pct(Some(SMALL_SAMPLE_RATE / 2.0)),
        );
        let powered = powered.map_or(String::new(), |p| format!(", and {p}"));
        if m.new_skips > 0 && need.is_some_and(|n| m.new_labelled_skips < n) {
            let _ = writeln!(
                s,
                "\n> **Too few labels to conclude.** {} has {} (new skips whose critic verdict was recorded); even with none revised or refused, a 95% bound below {} takes at least {} in as many effective runs{powered}. Replay more recorded traffic before deciding.",
                md_name(&m.variant),
                count(m.new_labelled_skips, "labelled new skip", "labelled new skips"),
                pct(Some(SMALL_SAMPLE_RATE)),
                need.unwrap_or_default(),
            );
        } else if let Some(eff) = m
            .effective_runs
            .filter(|e| m.new_skips > 0 && need.is_some_and(|n| *e < n as f64))
        {
            let _ = writeln!(
                s,
                "\n> **Too few runs to conclude.** {}'s labels are in {}, worth {eff:.1} effective runs (Kish's: runs of unequal sizes are worth fewer). Runs are the sampling unit: even with none revised or refused, a 95% bound below {} takes at least {} effective runs, however many labels each holds{powered}. Replay more conversations before deciding.",
                md_name(&m.variant),
                count(m.labelled_runs, "run", "runs"),
                pct(Some(SMALL_SAMPLE_RATE)),
                need.unwrap_or_default(),
            );
        }
    }
}

/// Per variant, how often each reason holds and how often it alone fires.
fn reasons_section(s: &mut String, r: &ReplayReport) {
    let _ = writeln!(s, "\n## Why the gates fire\n");
    let _ = writeln!(
        s,
        "`sole blocker`: turns that would have been skipped had this reason alone not held.\n"
    );
    let _ = writeln!(s, "| variant | reason | hits | share | sole blocker |");
    let _ = writeln!(s, "|---|---|---:|---:|---:|");
    for (i, v) in r.plan.variants.iter().enumerate() {
        let t = &r.totals.variants[i];
        let reasons: &[Reason] = if v.config.metacognition_selective_gate {
            &Reason::SMART_BLOCKERS
        } else {
            &Reason::LEGACY_BLOCKERS
        };
        for &re in reasons.iter().filter(|&&re| t.hits(re) > 0) {
            let share = (t.counts.turns > 0).then(|| t.hits(re) as f64 / t.counts.turns as f64);
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} |",
                md_name(&v.name),
                re.name(),
                t.hits(re),
                pct(share),
                t.sole(re)
            );
        }
    }
}

/// The first safety regressions, or that there are none.
fn regressions_section(s: &mut String, r: &ReplayReport) {
    let _ = writeln!(s, "\n## Safety regressions\n");
    let run = &r.summary.run;
    let prod = &run.variants[&run.production];
    let unreviewed = prod.unreviewed_production_skips();
    if let Some(n) = unreviewed {
        let _ = writeln!(
            s,
            "**Unknown for {}, the gate that produced this traffic:** {}.\n",
            md_name(&prod.variant),
            crate::summary::text::unreviewed_skips(&prod.variant, n)
        );
    }
    let candidates = || run.ordered().filter(|m| m.variant != run.baseline);
    let risky: u64 = candidates().filter_map(|m| m.risky_skips).sum();
    let risky_line = (risky > 0).then(|| {
        format!(
            "\n**Risky skips: {risky}.** Skips whose ack covers less than half the draft (\"Sure, but refunds are closed on Sundays\"): an acknowledgement with news, which the critic may have wanted to see whether or not a label says so. `critic-gate mine` lists them by draft."
        )
    });
    let listed = r.totals.listed_regressions;
    if listed == 0 {
        let labelled: u64 = candidates().map(|m| m.all_skips_labelled).sum();
        let skips: u64 = candidates().map(|m| m.skips).sum();
        let _ = match (labelled, skips) {
            _ if unreviewed.is_some() => Ok(()),
            (0, 1..) => writeln!(
                s,
                "Unknown: no skip of a candidate has a recorded critic verdict, so nothing says whether a skip let out a reply the critic would have revised or refused."
            ),
            _ => writeln!(
                s,
                "None: no skipped turn had a recorded `revise` or `refuse` verdict."
            ),
        };
        if let Some(l) = risky_line {
            let _ = writeln!(s, "{l}");
        }
        return;
    }
    if let Some(l) = risky_line {
        let _ = writeln!(s, "{l}\n");
    }
    let _ = writeln!(s, "Skipped turns whose recorded critic verdict was `revise` or `refuse` ({} in all; first {}):\n", listed, r.regressions.len());
    let _ = writeln!(s, "| variant | where | verdict | draft |");
    let _ = writeln!(s, "|---|---|---|---|");
    for g in r.regressions.iter() {
        let _ = writeln!(
            s,
            "| {} | {}:{} | {} | {} |",
            md_name(&r.plan.variants[g.variant].name),
            md_text(&r.sources[g.source]),
            g.line,
            g.verdict.as_str(),
            excerpt(&g.draft, 80)
        );
    }
}

/// The charts of `charts/`, embedded (relative links: they show on GitHub
/// and in any Markdown viewer opened in the report folder).
fn charts_section(s: &mut String) {
    let _ = writeln!(s, "\n## Charts\n");
    for (chart, title) in &super::charts::CHARTS {
        let _ = writeln!(s, "![{title}]({})\n", chart.file);
    }
}

/// Where the gate's inputs came from, per signal: recorded by production,
/// derived by critic-gate, or unknown (shown when any turn has a signal
/// that was not recorded).
fn signals_section(s: &mut String, r: &ReplayReport) {
    use crate::read::provenance::{Origin, Signal};
    let p = &r.totals.provenance;
    if Signal::ALL
        .iter()
        .all(|sig| p[*sig as usize][Origin::Recorded as usize] == r.totals.turns)
    {
        return;
    }
    let _ = writeln!(s, "\n## Where the signals come from\n");
    let _ = writeln!(
        s,
        "| signal | recorded | derived | unknown |\n|---|---:|---:|---:|"
    );
    for sig in Signal::ALL {
        let c = p[sig as usize];
        let _ = writeln!(s, "| {} | {} | {} | {} |", sig.as_str(), c[0], c[1], c[2]);
    }
    let _ = writeln!(
        s,
        "\nDerived: computed as symfonic computes it (from the activation log, or from an imported transcript or trace). Unknown: no record holds it, and the replay takes the traffic format's default (see the notes). `derived_signals` and `unknown_signals` in decisions.csv say it per turn."
    );
}

/// The summary's notes, less the production finding (its own section).
fn notes_section(s: &mut String, r: &ReplayReport) {
    let notes: Vec<&String> = r
        .summary
        .run
        .notes
        .iter()
        .filter(|n| Some(*n) != r.summary.production.note.as_ref())
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(s, "\n## Notes\n");
        for n in notes {
            let _ = writeln!(s, "- {}", md_text(n));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// #44: the bottom line says when the budget's bound (each run at
    /// most one trial) is above the descriptive one, and warns where a few
    /// runs hold most of the labels (Kish's effective runs below 30% of
    /// the runs), naming the assumption that remains.
    #[test]
    fn the_bound_says_its_certificate_and_warns_of_a_few_heavy_runs() {
        let mut m = VariantSummary {
            new_skips: 500,
            new_labelled_skips: 500,
            safety_regressions: 20,
            labelled_runs: 100,
            effective_runs: Some(12.5),
            safety_regression_rate_upper95: Some(0.061),
            safety_regression_rate_certificate_upper95: Some(0.094),
            ..Default::default()
        };
        let s = bound_sentence(&m);
        assert!(
            s.contains(
                "at most 9.4% (95% upper bound over 100 runs, each run worth at most one trial"
            ),
            "{s}"
        );
        assert!(s.contains("the descriptive figure with runs as the sampling unit (Korn and Graubard's, `safety_regression_rate_upper95`) is 6.1%, not a 95% bound"), "{s}");
        assert!(
            s.contains(
                "**a few runs hold most of its labels** (Kish's effective runs 12.5 of 100)"
            ),
            "{s}"
        );
        assert!(s.contains("says nothing about its risk"), "{s}");
        m.effective_runs = Some(30.0);
        m.safety_regression_rate_certificate_upper95 = m.safety_regression_rate_upper95;
        let s = bound_sentence(&m);
        assert!(
            !s.contains("a few runs") && !s.contains("descriptive"),
            "{s}"
        );
    }
}
