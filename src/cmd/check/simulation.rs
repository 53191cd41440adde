//! Simulations with known truth that hold what a printed pass rests on
//! (#44): docs/ci.md's recipe on traffic whose critic fails on the turns
//! it would revise, and the coverage of the bound a budget reads
//! (`safety_regression_rate_certificate_upper95`) where a few rare long
//! or derailed conversations carry the rate, where sizes are heavy-tailed
//! and where there are few runs; and the runs a budget needs for 80%
//! power. `cargo test` runs them small; `scripts/simulate-risk.sh`
//! (CRITIC_GATE_SIM_FULL) at the replicate counts the guarantees are
//! stated at, printing every figure docs/ci.md and docs/sweeps.md quote.

use crate::budgets::{Amount, Budget};
use crate::cmd::calibrate::simulation::{lower95, replicates};
use crate::config::CheckConfig;
use crate::stats::{certificate_upper, run_level_upper, runs_hint, RunLabels, SplitMix as Rng};
use crate::summary::build::of_runs;

use super::engine::{judge_variant, passed};

/// How many labelled new skips a conversation holds.
#[derive(Clone, Copy, Debug)]
enum Sizes {
    /// 1 + a geometric count of mean `mean - 1`: light-tailed.
    Geometric { mean: f64, cap: u64 },
    /// floor(min U^(-1/alpha)): heavy-tailed (Pareto), at most `cap`.
    Pareto { min: f64, alpha: f64, cap: u64 },
}

impl Sizes {
    fn draw(self, rng: &mut Rng) -> u64 {
        match self {
            Sizes::Geometric { mean, cap } => {
                let q = 1.0 - 1.0 / mean;
                (1 + (rng.next().ln() / q.ln()).floor() as u64).min(cap)
            }
            Sizes::Pareto { min, alpha, cap } => {
                ((min * rng.next().powf(-1.0 / alpha)).floor() as u64).min(cap)
            }
        }
    }

    /// P(size = j).
    fn pmf(self, j: u64) -> f64 {
        let capped = |below: f64, at_cap: f64, cap: u64| match j.cmp(&cap) {
            std::cmp::Ordering::Less => below,
            std::cmp::Ordering::Equal => at_cap,
            std::cmp::Ordering::Greater => 0.0,
        };
        match self {
            Sizes::Geometric { mean, cap } => {
                let q = 1.0 - 1.0 / mean;
                let at_least = |j: u64| q.powi(j as i32 - 1);
                capped(at_least(j) - at_least(j + 1), at_least(cap), cap)
            }
            Sizes::Pareto { min, alpha, cap } => {
                let at_least = |x: u64| (min / x as f64).powf(alpha).min(1.0);
                capped(at_least(j) - at_least(j + 1), at_least(cap), cap)
            }
        }
    }

    /// Kish's effective runs per run for these sizes: E[n]^2 / E[n^2].
    fn kish_share(self) -> f64 {
        let (mut m1, mut m2) = (0.0, 0.0);
        for j in 1..=self.cap() {
            let (p, j) = (self.pmf(j), j as f64);
            m1 += p * j;
            m2 += p * j * j;
        }
        m1 * m1 / m2
    }

    fn cap(self) -> u64 {
        match self {
            Sizes::Geometric { cap, .. } | Sizes::Pareto { cap, .. } => cap,
        }
    }
}

/// Conversations of known truth: `runs` of them, each of `sizes` new
/// skips with its own revise rate, a beta around `scale x shape(size)`
/// (at most 1) of intra-run correlation `icc` (0: each turn its own
/// coin); with chance `derailed.0` a run is derailed instead, of
/// `derailed.1` turns at rate `derailed.2`. A turn is labelled with chance
/// `labelled_if_revised` when the critic would revise it, else
/// `labelled_else` (labels missing not at random when they differ).
#[derive(Clone, Copy, Debug)]
struct Traffic {
    runs: usize,
    sizes: Sizes,
    shape: fn(u64) -> f64,
    scale: f64,
    icc: f64,
    derailed: (f64, u64, f64),
    labelled_if_revised: f64,
    labelled_else: f64,
}

fn flat(_: u64) -> f64 {
    1.0
}

/// Long runs riskier: the rate grows with the square root of the size.
fn longer_riskier(n: u64) -> f64 {
    (n as f64).sqrt()
}

impl Traffic {
    fn rate(&self, n: u64) -> f64 {
        (self.scale * (self.shape)(n)).min(1.0)
    }

    /// The true rate per new skip: expected regressions over expected new
    /// skips (what a replay's rate estimates).
    fn truth(&self) -> f64 {
        let (mut k, mut n) = (0.0, 0.0);
        for j in 1..=self.sizes.cap() {
            let w = self.sizes.pmf(j) * j as f64;
            k += w * self.rate(j);
            n += w;
        }
        let (share, size, rate) = self.derailed;
        let size = size as f64;
        ((1.0 - share) * k + share * size * rate) / ((1.0 - share) * n + share * size)
    }

    /// `scale` such that the true rate is `target` (bisection: the truth
    /// rises with the scale).
    fn at_truth(mut self, target: f64) -> Traffic {
        let (mut lo, mut hi) = (0.0, 1.0);
        for _ in 0..60 {
            self.scale = 0.5 * (lo + hi);
            match self.truth() < target {
                true => lo = self.scale,
                false => hi = self.scale,
            }
        }
        self
    }

    /// Each run's (new skips, labelled, regressions among the labelled).
    fn draw(&self, rng: &mut Rng) -> Vec<(u64, u64, u64)> {
        (0..self.runs)
            .map(|_| {
                let (size, mean) = match rng.next() < self.derailed.0 {
                    true => (self.derailed.1, self.derailed.2),
                    false => {
                        let n = self.sizes.draw(rng);
                        (n, self.rate(n))
                    }
                };
                let p = beta_around(rng, mean, self.icc);
                let (mut labelled, mut k) = (0, 0);
                for _ in 0..size {
                    let revised = rng.next() < p;
                    let chance = match revised {
                        true => self.labelled_if_revised,
                        false => self.labelled_else,
                    };
                    if rng.next() < chance {
                        labelled += 1;
                        k += u64::from(revised);
                    }
                }
                (size, labelled, k)
            })
            .collect()
    }
}

/// A beta of mean `mean` and intra-class correlation `icc` (a + b =
/// (1 - icc) / icc); `mean` itself at icc 0.
fn beta_around(rng: &mut Rng, mean: f64, icc: f64) -> f64 {
    if icc <= 0.0 || mean <= 0.0 || mean >= 1.0 {
        return mean;
    }
    let total = (1.0 - icc) / icc;
    let a = gamma(rng, mean * total);
    let b = gamma(rng, (1.0 - mean) * total);
    a / (a + b)
}

/// Gamma(shape, 1) by Marsaglia and Tsang (shape below 1 boosted).
fn gamma(rng: &mut Rng, shape: f64) -> f64 {
    if shape < 1.0 {
        return gamma(rng, shape + 1.0) * rng.next().powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        // A standard normal by Box and Muller.
        let z = (-2.0 * rng.next().ln()).sqrt() * (std::f64::consts::TAU * rng.next()).cos();
        let v = (1.0 + c * z).powi(3);
        if v > 0.0 && rng.next().ln() < 0.5 * z * z + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

fn labels_of(runs: &[(u64, u64, u64)]) -> RunLabels {
    RunLabels::of(runs.iter().map(|r| (r.1, r.2)))
}

/// docs/ci.md's recipe (`--max-safety-regressions 0
/// --max-safety-regression-rate 0.01 --min-label-coverage 0.5`; its
/// `--max-rejected` judges no variant), with missing at random assumed or
/// not.
fn recipe(assume: bool) -> CheckConfig {
    let mut c = CheckConfig::with(&[
        (Budget::MaxSafetyRegressions, Amount::Count(0)),
        (Budget::MaxSafetyRegressionRate, Amount::Rate(0.01)),
        (Budget::MinLabelCoverage, Amount::Rate(0.5)),
    ]);
    c.assume_missing_at_random = Some(assume);
    c
}

/// The review's first case: 1,000 conversations (sizes 1 + geometric,
/// mean 6), a true rate of 0.02 on new skips, against docs/ci.md's
/// recipe at 0.01; the critic fails on every turn it would revise (none
/// of them labelled) and labels 95% of the rest. The recipe passed in 100
/// of 100 replays on the labels alone; now at most 5%, while assuming
/// missing at random passes it in most (so the simulation tells them
/// apart).
#[test]
fn the_ci_recipe_passes_no_traffic_whose_critic_fails_where_it_would_revise() {
    let n = replicates(100, 1000);
    let t = Traffic {
        runs: 1000,
        sizes: Sizes::Geometric {
            mean: 6.0,
            cap: 200,
        },
        shape: flat,
        scale: 0.0,
        icc: 0.05,
        derailed: (0.0, 0, 0.0),
        labelled_if_revised: 0.0,
        labelled_else: 0.95,
    }
    .at_truth(0.02);
    let mut rng = Rng(0xc1_2ec1);
    let (mut strict, mut assumed) = (0u64, 0u64);
    for _ in 0..n {
        let v = of_runs("smart", &t.draw(&mut rng));
        strict += u64::from(passed(&judge_variant(&v, &recipe(false))));
        assumed += u64::from(passed(&judge_variant(&v, &recipe(true))));
    }
    eprintln!(
        "ci recipe, critic fails where it would revise (true 0.02 against 0.01): passes {strict} of {n}; assuming missing at random {assumed} of {n}"
    );
    assert!(strict as f64 <= 0.05 * n as f64, "{strict} of {n}");
    assert!(
        assumed as f64 >= 0.5 * n as f64,
        "the control: {assumed} of {n}"
    );
}

/// One coverage case: its name, its traffic, and the true rate.
fn coverage_cases() -> Vec<(String, Traffic)> {
    let base = Traffic {
        runs: 300,
        sizes: Sizes::Geometric {
            mean: 8.0,
            cap: 200,
        },
        shape: flat,
        scale: 0.0,
        icc: 0.1,
        derailed: (0.0, 0, 0.0),
        labelled_if_revised: 1.0,
        labelled_else: 1.0,
    };
    let heavy = Sizes::Pareto {
        min: 2.0,
        alpha: 1.3,
        cap: 2000,
    };
    let mut cases = vec![
        (
            "derailed: one conversation in 200 of 40 turns at 0.5, 1,000 runs, the rest at 0.005"
                .to_string(),
            Traffic {
                runs: 1000,
                icc: 0.05,
                scale: 0.005,
                derailed: (1.0 / 200.0, 40, 0.5),
                ..base
            },
        ),
        (
            "light-tailed informative sizes (geometric, mean 8; rate grows as sqrt(size); true 0.03)"
                .to_string(),
            Traffic {
                shape: longer_riskier,
                ..base
            }
            .at_truth(0.03),
        ),
    ];
    for icc in [0.05, 0.1, 0.2] {
        cases.push((
            format!("heavy-tailed sizes (Pareto 1.3 from 2, cap 2000), rate 0.03, icc {icc}"),
            Traffic {
                sizes: heavy,
                icc,
                scale: 0.03,
                ..base
            },
        ));
    }
    for runs in [12, 20, 30] {
        cases.push((
            format!("{runs} runs (geometric sizes, mean 8), rate 0.3, icc 0.3"),
            Traffic {
                runs,
                scale: 0.3,
                icc: 0.3,
                ..base
            },
        ));
    }
    cases
}

/// The review's coverage cases where Korn and Graubard's bound fell short
/// (one derailed conversation in 200 on a small base rate: 89%; light-
/// tailed informative sizes: 86.5%; heavy-tailed sizes alone: 80-91%;
/// 12-30 runs: 91-93.5%): the certificate's bound covers the true rate in
/// at least 94% of replicates (the lower end of the share's 95%
/// Clopper-Pearson interval, over 1,000 at full size; the share itself
/// under `cargo test`). Korn and Graubard's own coverage is printed
/// beside it.
#[test]
fn the_certificate_covers_rare_long_and_few_runs() {
    let n = replicates(200, 1000);
    for (i, (name, t)) in coverage_cases().into_iter().enumerate() {
        let truth = t.truth();
        let mut rng = Rng(0xc0_7e2a + i as u64);
        let (mut cert, mut kg) = (0u64, 0u64);
        for _ in 0..n {
            let l = labels_of(&t.draw(&mut rng));
            cert += u64::from(certificate_upper(&l, 0.05).is_some_and(|u| u >= truth));
            kg += u64::from(run_level_upper(&l, 0.05).is_some_and(|u| u >= truth));
        }
        let share = cert as f64 / n as f64;
        eprintln!(
            "coverage, {name} (true {truth:.4}): certificate {share:.3} (95% CI from {:.3}), Korn-Graubard {:.3} ({n} replicates)",
            lower95(cert, n),
            kg as f64 / n as f64
        );
        match n >= 1000 {
            true => assert!(lower95(cert, n) >= 0.94, "{name}: {cert} of {n}"),
            false => assert!(share >= 0.94, "{name}: {cert} of {n}"),
        }
    }
}

/// Heavy-tailed sizes whose long runs are riskier (the review's 55.5%
/// coverage, and `check` passing a true 0.068 at 0.05 in 33.5%): at a
/// true rate of 1.35 R (R = 0.05), `check` fails or warns that a few runs
/// hold most of the labels in at least 95% of replicates (each share is
/// printed).
#[test]
fn heavy_tailed_risky_long_runs_fail_or_are_warned_about() {
    let n = replicates(200, 1000);
    let t = Traffic {
        runs: 300,
        sizes: Sizes::Pareto {
            min: 2.0,
            alpha: 1.3,
            cap: 2000,
        },
        shape: longer_riskier,
        scale: 0.0,
        icc: 0.1,
        derailed: (0.0, 0, 0.0),
        labelled_if_revised: 1.0,
        labelled_else: 1.0,
    }
    .at_truth(1.35 * 0.05);
    let budget = CheckConfig::with(&[(Budget::MaxSafetyRegressionRate, Amount::Rate(0.05))]);
    let mut rng = Rng(0x4ea7);
    let (mut failed, mut warned, mut either, mut covered) = (0u64, 0u64, 0u64, 0u64);
    let mut kg = 0u64;
    for _ in 0..n {
        let runs = t.draw(&mut rng);
        let l = labels_of(&runs);
        let v = of_runs("smart", &runs);
        let results = judge_variant(&v, &budget);
        let fail = !passed(&results);
        let warn = results.iter().any(|r| {
            r.note
                .as_deref()
                .is_some_and(|n| n.contains("a few runs hold most"))
        });
        assert_eq!(warn, l.few_runs_hold_most(), "the note is the figure's");
        failed += u64::from(fail);
        warned += u64::from(warn);
        either += u64::from(fail || warn);
        covered += u64::from(certificate_upper(&l, 0.05).is_some_and(|u| u >= t.truth()));
        kg += u64::from(run_level_upper(&l, 0.05).is_some_and(|u| u >= t.truth()));
    }
    eprintln!(
        "heavy-tailed, long runs riskier (true {:.4} = 1.35 R): check fails {failed}, warns {warned}, either {either} of {n}; the certificate covers {covered}, Korn-Graubard {kg}",
        t.truth()
    );
    assert!(
        failed as f64 >= 0.95 * n as f64 || warned as f64 >= 0.95 * n as f64,
        "fails {failed}, warns {warned} of {n}"
    );
}

/// The share of `n` replicates of `t` (its runs set to `runs`) whose
/// bound (the certificate's, or Korn and Graubard's) is at or below `r`.
fn power(t: Traffic, runs: usize, r: f64, certificate: bool, n: u64, seed: u64) -> f64 {
    let t = Traffic { runs, ..t };
    let mut rng = Rng(seed);
    let bound = |l: &RunLabels| match certificate {
        true => certificate_upper(l, 0.05),
        false => run_level_upper(l, 0.05),
    };
    let hits = (0..n)
        .filter(|_| bound(&labels_of(&t.draw(&mut rng))).is_some_and(|u| u <= r))
        .count();
    hits as f64 / n as f64
}

/// The fewest runs (on a grid 5% apart) at which the bound is at or
/// below `r` in at least 80% of `n` replicates.
fn runs_for_power(t: Traffic, r: f64, certificate: bool, n: u64) -> usize {
    let mut m = 10usize;
    while power(t, m, r, certificate, n, 0x9043 + m as u64) < 0.8 {
        m += (m / 20).max(1);
    }
    m
}

/// Conversations of geometric sizes (mean 8), intra-run correlation 0.1,
/// every new skip labelled, at a true rate of `rate`.
fn typical(rate: f64) -> Traffic {
    Traffic {
        runs: 0,
        sizes: Sizes::Geometric {
            mean: 8.0,
            cap: 200,
        },
        shape: flat,
        scale: rate,
        icc: 0.1,
        derailed: (0.0, 0, 0.0),
        labelled_if_revised: 1.0,
        labelled_else: 1.0,
    }
}

/// The hint `check` and report.md give ("about N runs like these for an
/// 80% chance at a true rate of R/2": [`crate::stats::labels_for_power`]
/// taken as Kish's effective runs, since a run counts at most one trial,
/// over the share of runs they are) holds in runs of typical traffic: at
/// N runs of mean length 8 the certificate's bound is at or below R in at
/// least 75% of replicates (R = 0.05, a true 0.025). At
/// full size it prints the power price docs/sweeps.md quotes: the runs
/// needed for 80% power by the certificate and by Korn and Graubard's
/// bound, at R = 0.05 and 0.02 and true rates 0.01 and 0.025.
#[test]
fn the_runs_hint_holds_and_the_power_price_is_measured() {
    let n = replicates(200, 1000);
    let t = typical(0.025);
    let hint = runs_hint(0.05, 0.025, t.sizes.kish_share()).unwrap() as usize;
    let at_hint = power(t, hint, 0.05, true, n, 0x417);
    eprintln!("power at the hint's {hint} runs (R 0.05, true 0.025, mean 8): {at_hint:.3}");
    assert!(at_hint >= 0.75, "{at_hint} at {hint} runs");
    if n < 1000 {
        return;
    }
    for (r, truth) in [(0.05, 0.01), (0.05, 0.025), (0.02, 0.01)] {
        let t = typical(truth);
        let cert = runs_for_power(t, r, true, 400);
        let kg = runs_for_power(t, r, false, 400);
        eprintln!(
            "power price, R {r}, true {truth}: {cert} runs for 80% with each run at most one trial, {kg} with Korn-Graubard ({:+.0}%); the hint says {}",
            (cert as f64 / kg as f64 - 1.0) * 100.0,
            runs_hint(r, truth, t.sizes.kish_share()).unwrap()
        );
    }
}

/// Only runs of 15 turns or more regress.
fn long_runs_only(n: u64) -> f64 {
    f64::from(u8::from(n >= 15))
}

/// The limit of what any bound on these labels can say, shown, not hidden
/// (a reviewer's generator): when only long runs regress and long runs
/// are rare (geometric sizes of mean 3, 300 runs, runs of 15 turns or
/// more at rate 0.3), the certificate's bound covers the true rate in
/// far fewer than 95% of replicates, and Kish's effective runs stay well
/// above 30% of the runs, so no warning says so. docs/sweeps.md states
/// it with these figures; the test holds that the limit is real (coverage
/// under 90%), so a claim that it is covered cannot creep back in.
#[test]
fn informative_run_lengths_can_defeat_the_bound_unwarned() {
    let n = replicates(200, 1000);
    let t = Traffic {
        runs: 300,
        sizes: Sizes::Geometric {
            mean: 3.0,
            cap: 200,
        },
        shape: long_runs_only,
        scale: 1.0,
        icc: 0.0,
        derailed: (0.0, 0, 0.0),
        labelled_if_revised: 1.0,
        labelled_else: 1.0,
    };
    let truth = t.truth();
    let mut rng = Rng(0x15);
    let (mut covered, mut warned) = (0u64, 0u64);
    for _ in 0..n {
        let l = labels_of(&t.draw(&mut rng));
        covered += u64::from(certificate_upper(&l, 0.05).is_some_and(|u| u >= truth));
        warned += u64::from(l.few_runs_hold_most());
    }
    eprintln!(
        "only runs of 15 turns or more regress (true {truth:.4}): the certificate covers {covered} of {n}, warned {warned}"
    );
    assert!((covered as f64) < 0.9 * n as f64, "{covered} of {n}");
    assert!((warned as f64) < 0.1 * n as f64, "{warned} of {n}");
}
