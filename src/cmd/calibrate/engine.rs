//! `calibrate`: choose the sweep variant that saves the most while its
//! safety regression rate stays within R with confidence 1 - delta, in a
//! way that stays valid after the choice (Learn then Test).
//!
//! Quoting the best of many variants' own bounds on the data that picked
//! it is optimistic: each bound holds for one variant chosen in advance,
//! not for the best-looking of many. So the traffic is dealt by a seeded
//! hash of `run_id` into a learn part, a calibration part and (unless
//! `--no-held-out`) a held-out part. The learn part fixes the family and
//! its order ([`super::select`]: its frontier, safest first); the calibration
//! part tests it; the held-out part shows the choice on traffic that
//! played no part in it.

use std::collections::BTreeMap;

use serde::Serialize;

pub use super::select::{labels_needed, Candidate, Evidence, Procedure, Rule, Selection};
use crate::config::Plan;
use crate::replay::design::TwoPhase;
use crate::replay::options::Split;
use crate::replay::ReplayOptions;
use crate::stats::RunLabels;
use crate::summary::figures::{RunSummary, VariantSummary};
use crate::summary::frontier::{savings_metric, Savings};
use crate::summary::numbers::sig_up;

/// `--min-label-coverage`'s default, the frontier's floor (a heuristic):
/// below it the unlabelled skips outnumber the labelled ones the bound is
/// computed from, so reading the rate as that of all skips would rest
/// more on their being missing at random than on labels. (Labels alone
/// bound the rate of all skips within R only at a coverage of about
/// 1 - R: see each member's worst-case bound.)
pub const DEFAULT_MIN_LABEL_COVERAGE: f64 = crate::options::DEFAULT_MIN_LABEL_COVERAGE;

/// What `calibrate` is asked to do.
pub struct CalibrateOptions {
    /// The sweep's replay (its plan, sources and settings); the split is
    /// set here.
    pub replay: ReplayOptions,
    pub rule: Rule,
    pub procedure: Procedure,
    pub seed: u64,
    /// Deal the runs into three parts (else learn and calibration only).
    pub held_out: bool,
}

/// The chosen variant's figures on the held-out part: net, as a team
/// would see them after the switch.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HeldOut {
    pub turns: u64,
    pub skips: u64,
    pub saved_calls: u64,
    pub added_calls: u64,
    pub net_calls: i64,
    pub saved_usd: Option<f64>,
    pub added_usd_estimated: Option<f64>,
    pub net_usd: Option<f64>,
    pub new_skips: u64,
    pub safety_regressions: u64,
    pub labelled_skips: u64,
    pub label_coverage: Option<f64>,
    /// At 1 - delta, as on the calibration part.
    pub upper_bound: Option<f64>,
    /// Every unlabelled skip counted as a regression; with an audit that
    /// covers the variant on this part, its two-phase bound (`two_phase`).
    pub worst_case_upper_bound: Option<f64>,
    /// The worst-case bound is the audit's two-phase bound.
    pub two_phase: bool,
    /// The lower bound at 1 - delta: above R is evidence the rate is.
    pub lower_bound: Option<f64>,
    /// Evidence that the rate is above R: the lower bound is. An upper
    /// bound above R alone is too few labels to tell (a truly safe
    /// variant's small part has one).
    pub above_r: bool,
    /// `within R`, `too few labels to tell`, `evidence above R` or `no labels`.
    pub verdict: &'static str,
    pub note: String,
}

/// The turns in each part.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Parts {
    pub learn: u64,
    pub calibration: u64,
    /// None: `--no-held-out`.
    pub held_out: Option<u64>,
}

/// `calibration.json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Calibration {
    pub max_regression_rate: f64,
    pub delta: f64,
    pub min_label_coverage: f64,
    /// `--assume-missing-at-random`: certified on the labels alone.
    pub assume_missing_at_random: bool,
    pub seed: u64,
    pub turns: Parts,
    /// What the variants are ordered and compared by.
    pub savings_metric: &'static str,
    /// What the choice guarantees, and under which assumptions.
    pub guarantee: String,
    pub selection: Selection,
    /// The least labelled skips that could certify the rate at level
    /// delta (null past 2^53).
    pub labels_needed: Option<u64>,
    /// Invalid lines set aside (`--skip-invalid`): read by every part,
    /// so counted once here.
    pub rejected: u64,
    pub notes: Vec<String>,
    pub held_out: Option<HeldOut>,
}

/// The variant an audit plan samples, when calibrate reads one.
fn audited(o: &CalibrateOptions) -> Option<&str> {
    o.replay.tallies.design.as_ref().map(|d| d.variant.as_str())
}

/// The guarantee, in words, for `rule` (and `audited`, the variant an
/// audit plan samples).
pub fn guarantee(rule: &Rule, audited: Option<&str>) -> String {
    let confidence =
        crate::summary::numbers::sig(Some(1.0 - rule.delta)).unwrap_or(1.0 - rule.delta);
    // With an audit the guard is of the realised rate: the statement on
    // the true rate then rests on the labels being missing at random.
    let amr = crate::vocab::Setting::AssumeMissingAtRandom.flag();
    let condition = match (rule.assume_missing_at_random, audited) {
        (false, Some(_)) => " if the recorded labels are missing at random (see below for what holds whatever made them missing)",
        _ => "",
    };
    format!(
        "the procedure certifies a variant whose true safety regression rate on its new skips (the chance that a turn it skips and the baseline fires on is one production's critic would revise or refuse) is above {r} with probability at most {d}{condition}, so with probability at least {confidence} every certified variant, the chosen one among them, is within {r}. It assumes runs are independent draws from one traffic; the turns of one run need not be (the bound and the p-values take runs as the sampling unit: Korn and Graubard's exact bound on effective counts, from the design effect over runs). {missing} It holds for the procedure, R, delta, the coverage floor, the seed and the plan fixed before the run: the other procedures' outcomes in this file are for information, and choosing among them afterwards, or re-running with another seed until something passes, spends delta again. The family and its order come from the learn part, which shares no run with the calibration part",
        missing = match (rule.assume_missing_at_random, audited) {
            (false, None) => "The labels support it whatever made some new skips unlabelled: a variant whose worst-case bound (every unlabelled new skip a regression, at 1 - delta) is above R is not certified.".to_string(),
            (false, Some(v)) => format!("A variant is certified only if, besides, its two-phase bound at the same level is within R (where the audit of `{v}` gives it none, its worst case: every unlabelled new skip a regression). That bound is of the realised rate of the calibration part's new skips, not of future traffic: the labelled ones' regressions as counted, the unlabelled ones the audit covers bounded from its coin-drawn sample (valid for the design: exact with one inclusion probability, tested jointly across several; each failed or missing shadow call a regression), and any it does not cover each a regression. It assumes the shadow critic judges as production's critic would. So, whatever made labels missing, with probability at least {confidence} no certified variant's realised new-skip rate on the calibration part exceeds R."),
            (true, None) => format!("ASSUMED, not shown: the unlabelled new skips are missing at random ({amr}): if the critic failed more often on the turns it would have revised, the rate is higher than the labels say; each member's worst-case bound shows what the labels alone support."),
            (true, Some(v)) => format!("ASSUMED, not shown: the unlabelled new skips are missing at random ({amr}): if the critic failed more often on the turns it would have revised, the rate is higher than the labels say; each member's worst-case bound (the audit of `{v}`'s two-phase bound where it covers the member, marked two_phase) shows what the labels and the audit support without it."),
        },
        r = rule.max_regression_rate,
        d = rule.delta,
    )
}

/// One part's replay, as calibrate reads it: the summary, and with an
/// audit plan each variant's two-phase parts (which the summary publishes
/// only at 95%).
pub struct Part {
    pub run: RunSummary,
    pub audit: BTreeMap<String, TwoPhase>,
}

impl Part {
    pub fn of(o: crate::pipeline::Outcome) -> Part {
        let audit = o.totals.design.as_ref().map_or_else(BTreeMap::new, |d| {
            o.plan
                .variants
                .iter()
                .zip(&o.totals.variants)
                .filter_map(|(v, t)| {
                    let two = crate::summary::build::audit_of(d, &v.name, &t.counts)?;
                    Some((v.name.clone(), two))
                })
                .collect()
        });
        Part {
            run: o.summary.run,
            audit,
        }
    }

    /// A part without an audit.
    pub fn plain(run: RunSummary) -> Part {
        Part {
            run,
            audit: BTreeMap::new(),
        }
    }
}

/// One part's evidence on a variant: its new skips' figures as the part's
/// summary publishes them (the bounds are worked out again from them), and
/// an audit's two-phase parts when there are.
fn evidence(v: Option<&VariantSummary>, metric: Savings, part: &Part) -> Evidence {
    let audit = v.and_then(|v| part.audit.get(&v.variant)).cloned();
    v.map_or_else(Evidence::default, |v| Evidence {
        savings: metric.of(v).unwrap_or(0.0),
        new_skips: v.new_skips,
        labels: RunLabels {
            runs: v.labelled_runs,
            labels: v.new_labelled_skips,
            regressions: v.safety_regressions,
            design_effect: v.design_effect,
            effective_runs: v.effective_runs.unwrap_or(0.0),
        },
        worst: RunLabels {
            runs: v.new_skip_runs,
            labels: v.new_skips,
            regressions: v.safety_regressions + (v.new_skips - v.new_labelled_skips),
            design_effect: v.worst_case_design_effect,
            effective_runs: v.worst_case_effective_runs.unwrap_or(0.0),
        },
        audit,
    })
}

/// The variants other than the baseline, with both parts' evidence.
fn candidates(learn: &Part, cal: &Part) -> (Savings, Vec<Candidate>) {
    // Dollars or calls, by the learn part alone (nothing of the
    // calibration part shapes the family).
    let all: Vec<&VariantSummary> = learn.run.ordered().collect();
    let metric = savings_metric(&all);
    let c = learn
        .run
        .ordered()
        .filter(|v| !v.baseline)
        .map(|v| Candidate {
            variant: v.variant.clone(),
            learn: evidence(Some(v), metric, learn),
            calibration: evidence(cal.run.variants.get(&v.variant), metric, cal),
        })
        .collect();
    (metric, c)
}

fn held_out(v: &VariantSummary, rule: &Rule, part: &Part) -> HeldOut {
    let e = evidence(Some(v), Savings::NetCalls, part);
    let upper = e.upper(rule.delta);
    // The lower bound on effective counts, as the upper one.
    let n_eff = e.labels.effective_labels();
    let lower = (e.labels.labels > 0).then(|| {
        let x = e.safety_regressions() as f64 / e.labels.labels as f64 * n_eff;
        crate::stats::clopper_pearson_lower_real(x, n_eff, rule.delta)
    });
    let r = rule.max_regression_rate;
    let head = "a separate statement on one variant fixed before this part was read";
    let (verdict, note) = match (lower, upper) {
        (Some(l), _) if l > r => (
            "evidence above R",
            format!(
                "{head}: evidence its rate is above R = {r}: even its lower bound here ({}) is; the certificate is the calibration part's, and this part contradicts it",
                sig_up(Some(l)).unwrap_or(l)
            ),
        ),
        (Some(_), Some(u)) if u > r => (
            "too few labels to tell",
            format!(
                "{head}: too few labels to tell: its bound here ({}) is above R = {r} and its lower bound is not, so this part neither confirms the certificate nor contradicts it",
                sig_up(Some(u)).unwrap_or(u)
            ),
        ),
        (Some(_), _) => ("within R", format!("{head}: its bound here is within R as well")),
        (None, _) => (
            "no labels",
            format!("{head}: it has no labelled skips here, so nothing bounds its rate"),
        ),
    };
    let above_r = verdict == "evidence above R";
    HeldOut {
        turns: v.turns,
        skips: v.skips,
        saved_calls: v.saved_calls,
        added_calls: v.added_calls,
        net_calls: v.net_calls,
        saved_usd: v.saved_usd,
        added_usd_estimated: v.added_usd_estimated,
        net_usd: v.net_usd,
        new_skips: v.new_skips,
        safety_regressions: v.safety_regressions,
        labelled_skips: v.new_labelled_skips,
        label_coverage: v.label_coverage,
        upper_bound: sig_up(upper),
        worst_case_upper_bound: sig_up(e.worst_case_upper(rule.delta)),
        two_phase: e.audit.is_some(),
        lower_bound: lower.map(|l| crate::summary::numbers::sig(Some(l)).unwrap_or(l)),
        above_r,
        verdict,
        note,
    }
}

/// What the parts say that the figures do not.
fn notes(parts: &[(&str, &RunSummary)]) -> Vec<String> {
    let mut notes = Vec::new();
    for (name, h) in parts {
        if h.turns == 0 {
            notes.push(format!("the {name} part has no turns (every run_id hashes to another part): its figures say nothing"));
        }
    }
    if let Some((_, first)) = parts.first().filter(|(_, p)| p.rejected > 0) {
        notes.push(format!("{} invalid lines were set aside; each part's report counts them, as every part reads every line", first.rejected));
    }
    notes
}

/// The parts' folders, in order.
pub const PARTS: [&str; 3] = ["learn", "calibration", "held-out"];

/// How many parts the traffic splits into (two, or three with a held-out
/// part).
pub fn parts(o: &CalibrateOptions) -> u8 {
    if o.held_out {
        3
    } else {
        2
    }
}

/// The sweep that replays part `part` (its folder: `PARTS[part]`).
pub fn part_replay(o: &CalibrateOptions, part: u8) -> ReplayOptions {
    let parts = parts(o);
    let mut replay = o.replay.clone();
    replay.input.split = Some(Split {
        seed: o.seed,
        parts,
        part,
    });
    let name = PARTS[usize::from(part)];
    replay.outputs.label = format!("{}-{name}", o.replay.outputs.label);
    replay.outputs.notes.push(format!(
        "the {name} part of calibrate: the runs whose run_id hash (XXH3, seed {}) modulo {parts} is {part}",
        o.seed
    ));
    replay
}

/// The calibration from the parts' summaries: the family learned on
/// `learn`, tested on `cal`, the chosen variant's figures on `held`.
pub fn conclude(
    o: &CalibrateOptions,
    learn_part: &Part,
    cal_part: &Part,
    held_part: Option<&Part>,
) -> Calibration {
    let (metric, candidates) = candidates(learn_part, cal_part);
    let selection = super::select::select(candidates, &o.rule, o.procedure);
    let held_out = held_part.and_then(|h| {
        let c = selection.chosen.as_ref()?;
        h.run.variants.get(c).map(|v| held_out(v, &o.rule, h))
    });
    let (learn, cal, held) = (&learn_part.run, &cal_part.run, held_part.map(|h| &h.run));
    let mut parts = vec![("learn", learn), ("calibration", cal)];
    parts.extend(held.map(|h| ("held-out", h)));
    Calibration {
        max_regression_rate: o.rule.max_regression_rate,
        delta: o.rule.delta,
        min_label_coverage: o.rule.min_label_coverage,
        assume_missing_at_random: o.rule.assume_missing_at_random,
        seed: o.seed,
        turns: Parts {
            learn: learn.turns,
            calibration: cal.turns,
            held_out: held.map(|h| h.turns),
        },
        savings_metric: metric.name(),
        guarantee: guarantee(&o.rule, audited(o)),
        selection,
        labels_needed: labels_needed(o.rule.max_regression_rate, o.rule.delta),
        rejected: learn.rejected,
        notes: notes(&parts),
        held_out,
    }
}

/// Why the asked procedure chose nothing.
fn stopped(c: &Calibration) -> &str {
    c.selection
        .procedures
        .iter()
        .find(|p| p.procedure == c.selection.procedure)
        .map_or("", |p| p.stopped.as_str())
}

/// The chosen settings as a config snippet (the baseline's settings when
/// nothing was chosen: keep what you have).
pub fn calibrated_toml(c: &Calibration, plan: &Plan) -> String {
    let (name, why) = match &c.selection.chosen {
        Some(v) => (
            v.as_str(),
            format!(
                "chosen by calibrate ({}), which certifies a variant above safety regression rate {} on its new skips with probability at most {}; the most saving it certified",
                c.selection.procedure.name(),
                c.max_regression_rate,
                c.delta
            ),
        ),
        None => (
            plan.variants[plan.baseline].name.as_str(),
            format!(
                "calibrate certified no variant ({}): keep the baseline",
                stopped(c)
            ),
        ),
    };
    let chosen = plan
        .variants
        .iter()
        .find(|v| v.name == name)
        .expect("the chosen variant is in the plan");
    let body = toml::to_string(&chosen.config).expect("a gate config serializes")
        + &chosen.deployment_toml("calibrated", &plan.deployment);
    let mut head = String::new();
    if c.assume_missing_at_random {
        head.push_str(
            &crate::said![
                "# ASSUMED, not shown: the unlabelled new skips are missing at random (",
                crate::vocab::Setting::AssumeMissingAtRandom,
                "); the certificate rests on the labels alone\n"
            ]
            .to_string(),
        );
    }
    head.push_str(&format!("# {name}: {why}\n"));
    if let Some(m) = c.selection.family.iter().find(|m| m.variant == name) {
        let cal = &m.calibration;
        head.push_str(&format!(
            "# on the calibration part: {} regressions in {} labelled new skips over {} runs (bound {}); {} of {} new skips unlabelled; every one a regression, the bound is {}\n",
            cal.safety_regressions,
            cal.labelled_skips,
            cal.labelled_runs,
            super::select::show_share(cal.upper_bound),
            cal.new_skips - cal.labelled_skips,
            cal.new_skips,
            super::select::show_share(cal.worst_case_upper_bound),
        ));
    }
    format!("{head}[variants.calibrated]\n{body}")
}

#[cfg(test)]
mod held_out_tests {
    use super::*;

    fn part(labelled: u64, regressions: u64) -> VariantSummary {
        VariantSummary {
            turns: 100,
            skips: labelled,
            new_skips: labelled,
            new_labelled_skips: labelled,
            labelled_runs: labelled,
            new_skip_runs: labelled,
            effective_runs: Some(labelled as f64),
            worst_case_effective_runs: Some(labelled as f64),
            safety_regressions: regressions,
            ..Default::default()
        }
    }

    /// The held-out part flagged a truly safe variant on sample size
    /// alone: 1 regression in 10 labelled skips has a bound of 0.39 above
    /// R = 0.05, but its lower bound (0.005) is below it: too few labels
    /// to tell, not evidence. Evidence takes a lower bound above R.
    #[test]
    fn held_out_says_evidence_only_when_its_lower_bound_is_above_r() {
        let rule = Rule {
            max_regression_rate: 0.05,
            delta: 0.05,
            min_label_coverage: 0.0,
            assume_missing_at_random: false,
        };
        for (labelled, regressions, verdict, above) in [
            (10, 1, "too few labels to tell", false),
            (10, 5, "evidence above R", true),
            (3000, 20, "within R", false),
            (0, 0, "no labels", false),
        ] {
            let h = held_out(
                &part(labelled, regressions),
                &rule,
                &Part::plain(RunSummary::default()),
            );
            assert_eq!(
                (h.verdict, h.above_r),
                (verdict, above),
                "{labelled} {regressions}: {}",
                h.note
            );
        }
        // The guarantee says whether missing at random was assumed.
        assert!(guarantee(&rule, None).contains("worst-case bound (every unlabelled new skip"));
        let assumed = Rule {
            assume_missing_at_random: true,
            ..rule
        };
        assert!(guarantee(&assumed, None).contains("ASSUMED, not shown"));
        // The lower bound is Clopper-Pearson's: 1 in 10 at 95% is 0.00512.
        let l = crate::stats::clopper_pearson_lower(1, 10, 0.05).unwrap();
        assert!((l - 0.005116).abs() < 1e-5, "{l}");
    }
}
