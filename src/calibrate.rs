//! `calibrate`: choose the sweep variant that saves the most while its
//! safety regression rate stays within R with confidence 1 - delta, in a
//! way that stays valid after the choice.
//!
//! Quoting the best of many variants' own bounds on the data that picked
//! it is optimistic (each bound holds for one variant chosen in advance,
//! not for the best-looking of many). So the traffic is split by a seeded
//! hash of `run_id` into a calibration half and a held-out half; on the
//! calibration half the variants that save something are ordered by
//! savings, least first (savings do not depend on the verdicts), and
//! tested in that order, as in Learn-then-Test's fixed-sequence testing: a
//! variant passes when its Clopper-Pearson upper bound at 1 - delta is at
//! most R, the first failure stops the sequence, and the last variant that
//! passed is chosen. The chance that the choice's true rate exceeds R is
//! then at most delta. The held-out half reports the choice's figures on
//! traffic that played no part in it.

use std::path::Path;

use serde::Serialize;

use crate::config::Plan;
use crate::pipeline::{self, Progress};
use crate::replay::options::Split;
use crate::replay::ReplayOptions;
use crate::report::figures::{RunSummary, VariantSummary};
use crate::report::frontier::{savings_metric, Savings};
use crate::stats::clopper_pearson_upper;

/// A variant tested on the calibration half, in testing order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Tested {
    pub variant: String,
    pub savings: f64,
    pub safety_regressions: u64,
    pub labelled_skips: u64,
    /// The Clopper-Pearson upper bound at 1 - delta; None without labels.
    pub upper_bound: Option<f64>,
    pub passed: bool,
}

/// The outcome of fixed-sequence testing.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Selection {
    /// Every variant tested, in order, up to and with the first failure.
    pub tested: Vec<Tested>,
    /// The last variant that passed; None: keep the baseline.
    pub chosen: Option<String>,
    /// Why the sequence stopped where it did.
    pub stopped: String,
}

/// One candidate: its savings and labelled skips on the calibration half.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub variant: String,
    pub savings: f64,
    pub safety_regressions: u64,
    pub labelled_skips: u64,
}

/// The fewest labelled skips that could certify rate `r` at confidence
/// 1 - `delta`: with no regression at all, the bound is 1 - delta^(1/n).
/// None past 2^53, where a double no longer counts exactly.
pub fn labels_needed(r: f64, delta: f64) -> Option<u64> {
    if r >= 1.0 {
        return Some(0);
    }
    // ln_1p: ln(1 - r) loses r entirely below about 1e-16.
    let n = (delta.ln() / (-r).ln_1p()).ceil().max(1.0);
    (n.is_finite() && n <= (1u64 << 53) as f64).then_some(n as u64)
}

/// A rate as text: tiny ones in scientific notation.
fn show(r: f64) -> String {
    match r != 0.0 && r.abs() < 1e-4 {
        true => format!("{r:e}"),
        false => format!("{r}"),
    }
}

/// Fixed-sequence testing of `candidates` (any order; tested by savings,
/// least first, ties by name).
pub fn fixed_sequence(mut candidates: Vec<Candidate>, r: f64, delta: f64) -> Selection {
    candidates.sort_by(|a, b| {
        a.savings
            .total_cmp(&b.savings)
            .then_with(|| a.variant.cmp(&b.variant))
    });
    let mut tested = Vec::new();
    let mut chosen = None;
    for c in candidates {
        let upper = clopper_pearson_upper(c.safety_regressions, c.labelled_skips, delta);
        let passed = upper.is_some_and(|u| u <= r);
        tested.push(Tested {
            variant: c.variant.clone(),
            savings: c.savings,
            safety_regressions: c.safety_regressions,
            labelled_skips: c.labelled_skips,
            // Rounded up: still a bound; the test used the exact one.
            upper_bound: crate::report::numbers::sig_up(upper),
            passed,
        });
        if !passed {
            let stopped = why_failed(&c, upper, r, delta);
            return Selection {
                tested,
                chosen,
                stopped,
            };
        }
        chosen = Some(c.variant);
    }
    let stopped = match &chosen {
        Some(_) => "every variant that saves something passed".to_string(),
        None => "no variant saves anything on the calibration half".to_string(),
    };
    Selection {
        tested,
        chosen,
        stopped,
    }
}

/// Why a variant failed its test, and how many labels would help.
fn why_failed(c: &Candidate, upper: Option<f64>, r: f64, delta: f64) -> String {
    let needed = labels_needed(r, delta);
    // None: more than can be counted, so more than any count of labels.
    let too_few = needed.is_none_or(|n| c.labelled_skips < n);
    let need = needed.map_or("more than 2^53".to_string(), |n| n.to_string());
    let r = show(r);
    match upper {
        None => format!(
            "{} has no labelled skips: nothing bounds its rate (certifying {r} at {:.0}% confidence takes at least {need} labelled skips without a regression)",
            c.variant,
            (1.0 - delta) * 100.0
        ),
        Some(u) if too_few => format!(
            "{}: {} regressions in {} labelled skips bound its rate by {u:.4}, above {r}; labels are too few to certify {r}: it takes at least {need} labelled skips without a regression",
            c.variant, c.safety_regressions, c.labelled_skips
        ),
        Some(u) => format!(
            "{}: {} regressions in {} labelled skips bound its rate by {u:.4}, above {r}",
            c.variant, c.safety_regressions, c.labelled_skips
        ),
    }
}

/// What `calibrate` is asked to do.
pub struct CalibrateOptions {
    /// The sweep's replay (its plan, sources and settings); the split is
    /// set here.
    pub replay: ReplayOptions,
    pub max_regression_rate: f64,
    pub delta: f64,
    pub seed: u64,
}

/// The chosen variant's figures on the held-out half.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HeldOut {
    pub turns: u64,
    pub skips: u64,
    pub saved_calls: u64,
    pub saved_usd: Option<f64>,
    pub safety_regressions: u64,
    pub labelled_skips: u64,
    /// At 1 - delta, as on the calibration half.
    pub upper_bound: Option<f64>,
    pub label_coverage: Option<f64>,
}

/// `calibration.json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Calibration {
    pub max_regression_rate: f64,
    pub delta: f64,
    pub seed: u64,
    /// Turns in each half.
    pub calibration_turns: u64,
    pub held_out_turns: u64,
    /// What the variants are ordered and compared by.
    pub savings_metric: &'static str,
    pub selection: Selection,
    /// The least labelled skips that could certify the rate at all (null
    /// past 2^53).
    pub labels_needed: Option<u64>,
    /// Invalid lines set aside (`--skip-invalid`): read by both halves,
    /// so counted once here.
    pub rejected: u64,
    pub notes: Vec<String>,
    pub held_out: Option<HeldOut>,
}

/// The variants that save something, with their calibration figures.
fn candidates(run: &RunSummary) -> (Savings, Vec<Candidate>) {
    let vs: Vec<&VariantSummary> = run.ordered().collect();
    let metric = savings_metric(&vs);
    let c = vs
        .iter()
        .filter(|v| !v.baseline)
        .filter_map(|v| {
            metric.of(v).filter(|s| *s > 0.0).map(|s| Candidate {
                variant: v.variant.clone(),
                savings: s,
                safety_regressions: v.safety_regressions,
                labelled_skips: v.labelled_skips,
            })
        })
        .collect();
    (metric, c)
}

fn held_out(v: &VariantSummary, delta: f64) -> HeldOut {
    HeldOut {
        turns: v.turns,
        skips: v.skips,
        saved_calls: v.saved_calls,
        saved_usd: v.saved_usd,
        safety_regressions: v.safety_regressions,
        labelled_skips: v.labelled_skips,
        upper_bound: crate::report::numbers::sig_up(clopper_pearson_upper(
            v.safety_regressions,
            v.labelled_skips,
            delta,
        )),
        label_coverage: v.label_coverage,
    }
}

/// What the halves say that the figures do not.
fn notes(cal: &RunSummary, held: &RunSummary) -> Vec<String> {
    let mut notes = Vec::new();
    for (name, h) in [("calibration", cal), ("held-out", held)] {
        if h.turns == 0 {
            notes.push(format!("the {name} half has no turns (every run_id hashes to the other half): its figures say nothing"));
        }
    }
    if cal.rejected > 0 {
        notes.push(format!("{} invalid lines were set aside; each half's report counts them, as both read every line", cal.rejected));
    }
    notes
}

/// Replay one half into `dir`.
fn half(
    o: &CalibrateOptions,
    held_out: bool,
    dir: &Path,
    p: &dyn Progress,
) -> crate::Result<RunSummary> {
    let mut replay = o.replay.clone();
    replay.split = Some(Split {
        seed: o.seed,
        held_out,
    });
    let name = if held_out { "held-out" } else { "calibration" };
    replay.label = format!("{}-{name}", o.replay.label);
    replay.notes.push(format!(
        "the {name} half of calibrate: the runs whose run_id hashes (XXH3, seed {}) to {}",
        o.seed,
        u8::from(held_out)
    ));
    Ok(pipeline::run(replay, dir, p)?.summary.run)
}

/// Calibrate into `out`: `calibration/` and `held-out/` (each a sweep's
/// report folder), then `calibration.json` and `calibrated.toml`. A
/// failed run removes the folder if it made it.
pub fn calibrate(o: &CalibrateOptions, out: &Path, p: &dyn Progress) -> crate::Result<Calibration> {
    crate::report::or_remove_new(out, || calibrate_into(o, out, p))
}

fn calibrate_into(
    o: &CalibrateOptions,
    out: &Path,
    p: &dyn Progress,
) -> crate::Result<Calibration> {
    crate::read::reader::regular_files(&o.replay.sources, "calibrate", "one pass per half")?;
    crate::report::claim_job_dir(out, &o.replay.sources, "calibrate", o.replay.force)?;
    let cal = half(o, false, &out.join("calibration"), p)?;
    let held = half(o, true, &out.join("held-out"), p)?;
    let (metric, candidates) = candidates(&cal);
    let selection = fixed_sequence(candidates, o.max_regression_rate, o.delta);
    let held_out = selection
        .chosen
        .as_ref()
        .and_then(|c| held.variants.get(c))
        .map(|v| held_out(v, o.delta));
    let c = Calibration {
        max_regression_rate: o.max_regression_rate,
        delta: o.delta,
        seed: o.seed,
        calibration_turns: cal.turns,
        held_out_turns: held.turns,
        savings_metric: metric.name(),
        selection,
        labels_needed: labels_needed(o.max_regression_rate, o.delta),
        rejected: cal.rejected,
        notes: notes(&cal, &held),
        held_out,
    };
    write_files(&c, &o.replay.plan, out)?;
    Ok(c)
}

/// The chosen settings as a config snippet (the baseline's settings when
/// nothing was chosen: keep what you have).
pub fn calibrated_toml(c: &Calibration, plan: &Plan) -> String {
    let (name, why) = match &c.selection.chosen {
        Some(v) => (
            v.as_str(),
            format!(
                "chosen by calibrate: safety regression rate <= {} with {:.0}% confidence",
                c.max_regression_rate,
                (1.0 - c.delta) * 100.0
            ),
        ),
        None => (
            plan.variants[plan.baseline].name.as_str(),
            format!(
                "calibrate certified no variant ({}): keep the baseline",
                c.selection.stopped
            ),
        ),
    };
    let config = &plan
        .variants
        .iter()
        .find(|v| v.name == name)
        .expect("the chosen variant is in the plan")
        .config;
    let body = toml::to_string(config).expect("a gate config serializes");
    format!("# {name}: {why}\n[variants.calibrated]\n{body}")
}

/// Write `calibration.json` and `calibrated.toml` (each whole or not at
/// all: written beside, then renamed).
fn write_files(c: &Calibration, plan: &Plan, out: &Path) -> crate::Result<()> {
    let json = serde_json::to_string_pretty(c).expect("serializes") + "\n";
    crate::report::put(out, "calibration.json", json.as_bytes())?;
    crate::report::put(out, "calibrated.toml", calibrated_toml(c, plan).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(name: &str, savings: f64, k: u64, n: u64) -> Candidate {
        Candidate {
            variant: name.into(),
            savings,
            safety_regressions: k,
            labelled_skips: n,
        }
    }

    /// Tested from the least saving up; the first failure stops.
    #[test]
    fn the_last_variant_to_pass_before_the_first_failure_is_chosen() {
        let s = fixed_sequence(
            vec![
                cand("c", 30.0, 40, 400),
                cand("a", 10.0, 0, 400),
                cand("d", 40.0, 0, 400),
                cand("b", 20.0, 1, 400),
            ],
            0.05,
            0.05,
        );
        let order: Vec<&str> = s.tested.iter().map(|t| t.variant.as_str()).collect();
        assert_eq!(order, ["a", "b", "c"], "d is never tested: c failed first");
        assert_eq!(s.chosen.as_deref(), Some("b"));
        assert!(
            s.stopped
                .starts_with("c: 40 regressions in 400 labelled skips"),
            "{}",
            s.stopped
        );
    }

    #[test]
    fn too_few_labels_say_how_many_are_needed() {
        assert_eq!(labels_needed(0.01, 0.05), Some(299));
        // ln(1 - r) lost tiny rates (1e-17 needed "1").
        assert_eq!(labels_needed(1e-10, 0.05), Some(29_957_322_735));
        assert_eq!(labels_needed(1e-17, 0.05), None);
        let s = fixed_sequence(vec![cand("a", 1.0, 0, 50)], 0.01, 0.05);
        assert_eq!(s.chosen, None);
        assert!(
            s.stopped.contains("it takes at least 299 labelled skips"),
            "{}",
            s.stopped
        );
        let s = fixed_sequence(vec![cand("a", 1.0, 0, 299)], 0.01, 0.05);
        assert_eq!(s.chosen.as_deref(), Some("a"));
    }

    /// splitmix64: a seeded generator for the simulation.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> f64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        }
        fn binomial(&mut self, n: u64, p: f64) -> u64 {
            (0..n).filter(|_| self.next() < p).count() as u64
        }
    }

    /// Three safe variants, then 30 that save more at a true rate just
    /// above R (each passes its own test by luck about 2% of the time):
    /// over 200 seeds the chosen variant's true rate exceeds R in at most
    /// about delta of them (here: at most 15 of 200, delta = 0.05). Testing
    /// on past the first failure, or the most saving variant whose point
    /// estimate is within R, exceeds it far more often.
    #[test]
    fn the_choice_exceeds_r_in_at_most_about_delta_of_seeds() {
        let (r, delta) = (0.05, 0.05);
        let mut rates = vec![0.0, 0.01, 0.02];
        rates.extend([0.055; 30]);
        let (mut bad, mut naive_bad) = (0, 0);
        for seed in 0..200u64 {
            let mut rng = Rng(seed);
            let cands: Vec<Candidate> = rates
                .iter()
                .enumerate()
                .map(|(i, p)| cand(&format!("v{i}"), i as f64 + 1.0, rng.binomial(300, *p), 300))
                .collect();
            let s = fixed_sequence(cands.clone(), r, delta);
            let true_rate = |name: &str| rates[name[1..].parse::<usize>().unwrap()];
            if s.chosen.as_deref().is_some_and(|c| true_rate(c) > r) {
                bad += 1;
            }
            // Naive: the most saving variant whose own point estimate is
            // within R (ignoring the selection).
            let naive = cands
                .iter()
                .filter(|c| (c.safety_regressions as f64 / c.labelled_skips as f64) <= r)
                .max_by(|a, b| a.savings.total_cmp(&b.savings));
            if naive.is_some_and(|c| true_rate(&c.variant) > r) {
                naive_bad += 1;
            }
        }
        assert!(bad <= 15, "the choice exceeded R in {bad} of 200 seeds");
        assert!(
            naive_bad > 40,
            "the naive choice exceeded R in only {naive_bad} of 200"
        );
    }
}
