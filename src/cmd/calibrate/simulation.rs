//! The guarantee of [`super::select`], held by simulation: near-tied
//! risky variants whose dollars depend on their verdicts (the case that
//! broke the earlier procedure, kept here as the control), a known-answer
//! grid with a distractor, and the order the learn part fixes.

use super::select::{choose, select, Candidate, Evidence, Procedure, Rule};
use crate::stats::clopper_pearson_upper;

/// The repository's seeded generator (splitmix64).
use crate::stats::SplitMix as Rng;

/// Dollars a skip saves: a critic call's input, plus its output, which
/// is about 5x longer when it revises (266.8 vs 55.1 output tokens on
/// synth at $75 per million; 3,000 input tokens at $15).
const APPROVE_USD: f64 = 0.045 + 55.1 * 75e-6;
const REVISE_USD: f64 = 0.045 + 266.8 * 75e-6;

/// One part's evidence on a variant with `skips` skips, `pct` in 100
/// labelled, each labelled skip a regression with chance `rate`.
fn draw(rng: &mut Rng, (skips, pct): (u64, u64), rate: f64, priced: bool) -> Evidence {
    let labelled = skips * pct / 100;
    let k = rng.binomial(labelled, rate);
    let savings = match priced {
        true => (skips - k) as f64 * APPROVE_USD + k as f64 * REVISE_USD,
        false => skips as f64,
    };
    Evidence::independent(savings, skips, labelled, k)
}

/// Case 1: three safe variants (rates 0.004 to 0.012), then 20 risky ack
/// variants at 0.0201, near-tied in skips and saving more, three in four
/// skips labelled; with `thin`, one risky variant in four is labelled 3 in
/// 10 on the calibration part, so the sequence passes over it. R = 0.02.
fn case_one(rng: &mut Rng, priced: bool, thin: bool) -> (Vec<Candidate>, Vec<f64>) {
    let mut spec: Vec<(u64, f64)> = vec![(2000, 0.004), (3000, 0.008), (4000, 0.012)];
    spec.extend((0..20).map(|i| (5000 + i, 0.0201)));
    let cands = spec
        .iter()
        .enumerate()
        .map(|(i, (skips, rate))| Candidate {
            variant: format!("v{i:02}"),
            learn: draw(rng, (*skips, 75), *rate, priced),
            calibration: draw(
                rng,
                (*skips, if thin && i >= 3 && i % 4 == 0 { 30 } else { 75 }),
                *rate,
                priced,
            ),
        })
        .collect();
    (cands, spec.iter().map(|s| s.1).collect())
}

/// The procedure the review broke: the calibration part's variants by
/// savings, least first, each at delta, the last to pass before the first
/// failure chosen.
fn by_savings_on_the_same_data(cands: &[Candidate], rule: &Rule) -> Option<usize> {
    let mut order: Vec<usize> = (0..cands.len()).collect();
    order.sort_by(|a, b| {
        cands[*a]
            .calibration
            .savings
            .total_cmp(&cands[*b].calibration.savings)
    });
    let mut chosen = None;
    for i in order {
        if cands[i].calibration.p_value(rule.max_regression_rate) > rule.delta {
            break;
        }
        chosen = Some(i);
    }
    chosen
}

/// The two-sided 95% Clopper-Pearson interval's lower end for `k` of `n`.
pub(crate) fn lower95(k: u64, n: u64) -> f64 {
    match k {
        0 => 0.0,
        _ => 1.0 - clopper_pearson_upper(n - k, n, 0.025).unwrap(),
    }
}

/// Case 1's labels are missing at random (three in four skips labelled,
/// whatever their verdict): the procedure is tested on the labels alone.
const RULE: Rule = Rule {
    max_regression_rate: 0.02,
    delta: 0.05,
    min_label_coverage: 0.5,
    assume_missing_at_random: true,
};

/// How often each procedure certified any variant above R (the
/// family-wise error, which bounds the chosen one's), and how often the
/// control chose one.
fn case_one_shares(priced: bool, thin: bool, replicates: u64) -> ([u64; 3], u64) {
    let mut bad = [0u64; 3];
    let mut control = 0;
    for seed in 0..replicates {
        let mut rng = Rng(seed ^ if priced { 0xabcd } else { 0 });
        let (cands, rates) = case_one(&mut rng, priced, thin);
        let above = |v: &str| rates[v[1..].parse::<usize>().unwrap()] > RULE.max_regression_rate;
        let (_, _, outcomes) = choose(cands.clone(), &RULE);
        for (i, o) in outcomes.iter().enumerate() {
            let any = o.certified.iter().any(|v| above(v));
            // The chosen one is among the certified.
            assert!(any || !o.chosen.as_deref().is_some_and(above));
            bad[i] += u64::from(any);
        }
        control +=
            u64::from(by_savings_on_the_same_data(&cands, &RULE).is_some_and(|i| rates[i] > 0.02));
    }
    (bad, control)
}

/// Case 1, priced and unpriced, 1,000 replicates each: no procedure
/// certifies any variant above R in more than delta of them within the
/// 95% Clopper-Pearson interval of the share (its lower end is at most
/// delta: a procedure at exactly level delta exceeds delta x n about half
/// the time), while ordering by the same data's dollars chooses one far
/// more often, so the simulation can tell them apart. With thinly
/// labelled members passed over, the same holds.
#[test]
fn no_procedure_exceeds_r_in_more_than_delta_of_replicates() {
    let n = 1000;
    for (priced, thin) in [(false, false), (true, false), (false, true), (true, true)] {
        let (bad, control) = case_one_shares(priced, thin, n);
        for (p, b) in Procedure::ALL.iter().zip(bad) {
            eprintln!(
                "case 1 (priced: {priced}, thin: {thin}) {}: {b} of {n} certify above R (95% CI from {:.4})",
                p.name(),
                lower95(b, n)
            );
            assert!(
                lower95(b, n) <= RULE.delta,
                "{} priced {priced} thin {thin}: {b} of {n}",
                p.name()
            );
        }
        eprintln!(
            "case 1 (priced: {priced}, thin: {thin}) control: {control} of {n} choose above R"
        );
        if priced && !thin {
            assert!(
                lower95(control, n) > 2.0 * RULE.delta,
                "the control chose above R only {control} times"
            );
        }
    }
}

/// Case 2: six nested variants (true rates 0 to 0.0223, saving 3,000 to
/// 18,000 calls) and a distractor at 0.2 saving 7,000; the counts are the
/// rates' expectations on both parts. At R = 0.015 every procedure
/// chooses the 0.0108 variant; the control stops at the distractor and
/// keeps the 2nd.
#[test]
fn the_known_answer_grid_chooses_the_0_0108_variant() {
    let grid = [
        ("n1", 3000, 0.0),
        ("n2", 6000, 0.004),
        ("n3", 9000, 0.007),
        ("n4", 12000, 0.009),
        ("n5", 15000, 0.0108),
        ("n6", 18000, 0.0223),
        ("distractor", 7000, 0.2),
    ];
    let ev = |n: u64, r: f64| Evidence::independent(n as f64, n, n, (n as f64 * r).round() as u64);
    let cands: Vec<Candidate> = grid
        .iter()
        .map(|(v, n, r)| Candidate {
            variant: v.to_string(),
            learn: ev(*n, *r),
            calibration: ev(*n, *r),
        })
        .collect();
    // Every new skip labelled: no assumption about missing labels.
    let rule = Rule {
        max_regression_rate: 0.015,
        assume_missing_at_random: false,
        ..RULE
    };
    for &p in Procedure::ALL {
        let s = select(cands.clone(), &rule, p);
        assert_eq!(s.chosen.as_deref(), Some("n5"), "{}: {s:#?}", p.name());
    }
    let control = by_savings_on_the_same_data(&cands, &rule);
    assert_eq!(control.map(|i| grid[i].0), Some("n2"));
    let s = select(cands, &rule, Procedure::FixedSequence);
    let order: Vec<&str> = s.family.iter().map(|m| m.variant.as_str()).collect();
    assert_eq!(order, ["n1", "n2", "n3", "n4", "n5", "n6"]);
    assert!(
        s.left_out[0]
            .why
            .starts_with("off the learn part's frontier: n3"),
        "{:?}",
        s.left_out
    );
}

/// The order is the learn part's risk, not savings or names: `m`, risky
/// and in the middle by savings, would stop a sequence ordered by savings
/// before `b`; here `b` dominates it on the learn part, and `a`, risky and
/// the most saving, is tested last, so its failure blocks nothing.
#[test]
fn the_learn_part_orders_the_family_from_the_safest() {
    let ev = |s: f64, k: u64| Evidence::independent(s, 1000, 1000, k);
    let c = |v: &str, s: f64, k: u64| Candidate {
        variant: v.into(),
        learn: ev(s, k),
        calibration: ev(s, k),
    };
    let cands = vec![
        c("a", 30.0, 40),
        c("m", 15.0, 40),
        c("b", 20.0, 5),
        c("c", 10.0, 0),
        c("d", 5.0, 0),
    ];
    let rule = Rule {
        max_regression_rate: 0.02,
        ..RULE
    };
    assert_eq!(
        by_savings_on_the_same_data(&cands, &rule),
        Some(3),
        "c, before m stops it"
    );
    let s = select(cands, &rule, Procedure::FixedSequence);
    let order: Vec<&str> = s.family.iter().map(|m| m.variant.as_str()).collect();
    assert_eq!(order, ["c", "b", "a"], "d is dominated by c, m by b");
    assert_eq!(s.chosen.as_deref(), Some("b"));
    assert_eq!(s.procedures[0].certified, ["c", "b"]);
    assert!(
        s.procedures[0]
            .stopped
            .starts_with("a: 40 regressions in 1000"),
        "{:?}",
        s.procedures[0]
    );
}

/// Coverage is part of the claim: below the floor on the learn part a
/// variant is left out, on the calibration part it is passed over.
#[test]
fn a_variant_below_the_coverage_floor_is_never_certified() {
    let ev = |skips: u64, labelled: u64, s: f64| {
        Evidence::independent(s, skips, labelled, u64::from(s == 40.0) * 3)
    };
    let cands = vec![
        Candidate {
            variant: "thin".into(),
            learn: ev(20_000, 400, 50.0),
            calibration: ev(20_000, 400, 50.0),
        },
        Candidate {
            variant: "thin-here".into(),
            learn: ev(1000, 900, 40.0),
            calibration: ev(1000, 300, 40.0),
        },
        Candidate {
            variant: "full".into(),
            learn: ev(1000, 900, 10.0),
            calibration: ev(1000, 900, 10.0),
        },
    ];
    let s = select(cands, &RULE, Procedure::FixedSequence);
    assert_eq!(s.chosen.as_deref(), Some("full"));
    assert!(s
        .left_out
        .iter()
        .any(|l| l.variant == "thin" && l.why.contains("below the floor 0.5")));
    let here = s.family.iter().find(|m| m.variant == "thin-here").unwrap();
    assert!(!here.covered && here.certified_by.is_empty());
    assert!(here.worst_case_upper_bound.unwrap() > 0.7);
}

// ---------------------------------------------------------------------
// #33: traffic as it is. Turns come in runs whose verdicts are alike, and
// labels go missing for a reason (the critic fails on hard turns). Each
// simulation runs at a size that keeps `cargo test` quick; set
// CRITIC_GATE_SIM_FULL=1 (scripts/simulate-risk.sh does) for the
// replicate counts the guarantees are stated at.

/// The replicates to run: `small` under `cargo test`, `full` with
/// CRITIC_GATE_SIM_FULL set.
pub(crate) fn replicates(small: u64, full: u64) -> u64 {
    match std::env::var_os("CRITIC_GATE_SIM_FULL") {
        Some(_) => full,
        None => small,
    }
}

/// How a run's revise rate varies: times `factor` with probability
/// 1 / `factor`, else 0 (mean 1); a factor of 1 is no clustering.
#[derive(Clone, Copy, Debug)]
struct Clustering {
    factor: f64,
}

impl Clustering {
    const NONE: Clustering = Clustering { factor: 1.0 };
    const MILD: Clustering = Clustering { factor: 2.0 };
    const STRONG: Clustering = Clustering { factor: 10.0 };

    fn draw(self, rng: &mut Rng) -> f64 {
        match rng.next() < 1.0 / self.factor {
            true => self.factor,
            false => 0.0,
        }
    }
}

/// One turn kind a variant may skip: its share of turns, its true revise
/// rate, and the chance a turn is labelled when the critic would revise
/// it and when it would not (labels missing not at random when they
/// differ).
#[derive(Clone, Copy, Debug)]
struct Kind {
    share: f64,
    rate: f64,
    labelled_if_revised: f64,
    labelled_else: f64,
}

/// One turn of a run whose rates are times `f`: its kind (None: a kind no
/// variant skips), whether the critic would revise it, and whether it is
/// labelled.
fn one_turn(rng: &mut Rng, kinds: &[Kind], f: f64) -> Option<(usize, bool, bool)> {
    let (mut u, mut kind) = (rng.next(), None);
    for (i, k) in kinds.iter().enumerate() {
        if u < k.share {
            kind = Some(i);
            break;
        }
        u -= k.share;
    }
    let i = kind?;
    let k = kinds[i];
    let revised = rng.next() < (k.rate * f).min(1.0);
    let p_label = if revised {
        k.labelled_if_revised
    } else {
        k.labelled_else
    };
    let labelled = rng.next() < p_label;
    Some((i, revised, labelled))
}

/// Per run and per variant: (new skips, labelled, regressions). A variant
/// skips the kinds `0..=j` (nested variants), every skip a new one (the
/// baseline fires on every turn).
fn simulate_part(
    rng: &mut Rng,
    kinds: &[Kind],
    variants: &[usize],
    runs: usize,
    turns_per_run: usize,
    c: Clustering,
) -> Vec<Vec<(u64, u64, u64)>> {
    let mut out = vec![vec![(0, 0, 0); runs]; variants.len()];
    for r in 0..runs {
        // Every variant's skips of this run share its factor.
        let f = c.draw(rng);
        for _ in 0..turns_per_run {
            let Some((i, revised, labelled)) = one_turn(rng, kinds, f) else {
                continue;
            };
            for (cells, &last) in out.iter_mut().zip(variants) {
                if i <= last {
                    let cell = &mut cells[r];
                    cell.0 += 1;
                    cell.1 += u64::from(labelled);
                    cell.2 += u64::from(labelled && revised);
                }
            }
        }
    }
    out
}

/// A part's evidence on one variant from its runs, as a replay tallies it.
fn evidence_of(runs: &[(u64, u64, u64)], savings: f64) -> Evidence {
    let new_skips = runs.iter().map(|r| r.0).sum();
    Evidence {
        savings,
        new_skips,
        labels: crate::stats::RunLabels::of(runs.iter().map(|r| (r.1, r.2))),
        worst: crate::stats::RunLabels::of(runs.iter().map(|r| (r.0, r.2 + r.0 - r.1))),
        audit: None,
    }
}

/// The true rate of variant `last` (skipping kinds `0..=last`) under
/// clustering `c`: the chance that one of its new skips is a turn the
/// critic would revise (a run's rate times its factor, at most 1).
fn true_rate(kinds: &[Kind], last: usize, c: Clustering) -> f64 {
    let k = &kinds[..=last];
    let capped = |r: f64| (r * c.factor).min(1.0) / c.factor;
    k.iter().map(|k| k.share * capped(k.rate)).sum::<f64>() / k.iter().map(|k| k.share).sum::<f64>()
}

/// Strong clustering (each run's rate times 10 with probability 1/10,
/// else 0; 200 runs of 30 turns, half of them new skips, nine in ten
/// labelled): the per-turn Clopper-Pearson "95%" bound covered the true
/// rate in 72% of replicates (the review's figure). The run-level bound
/// covers it in at least 92% under strong, mild and no clustering, and
/// the simulation tells the two apart.
#[test]
fn the_run_level_bound_covers_when_verdicts_cluster() {
    let n = replicates(200, 1000);
    let kinds = [Kind {
        share: 0.5,
        rate: 0.05,
        labelled_if_revised: 0.9,
        labelled_else: 0.9,
    }];
    for (name, c) in [
        ("strong", Clustering::STRONG),
        ("mild", Clustering::MILD),
        ("none", Clustering::NONE),
    ] {
        let mut rng = Rng(0xc1u64 ^ c.factor.to_bits());
        let (mut run_level, mut per_turn) = (0u64, 0u64);
        for _ in 0..n {
            let part = simulate_part(&mut rng, &kinds, &[0], 200, 30, c);
            let e = evidence_of(&part[0], 0.0);
            run_level += u64::from(e.upper(0.05).unwrap() >= 0.05);
            per_turn += u64::from(
                clopper_pearson_upper(e.safety_regressions(), e.labelled_skips(), 0.05).unwrap()
                    >= 0.05,
            );
        }
        let (rl, pt) = (run_level as f64 / n as f64, per_turn as f64 / n as f64);
        eprintln!(
            "clustering {name}: run-level bound covers {rl:.3}, per-turn {pt:.3} ({n} replicates)"
        );
        assert!(rl >= 0.92, "{name}: run-level coverage {rl}");
        if name == "strong" {
            assert!(pt < 0.85, "the simulation cannot tell: per-turn {pt}");
        }
    }
}

/// Runs of unequal sizes, where an estimated design effect misleads (a
/// statistician's review found 8% and 32% non-coverage before the fix):
/// (a) sizes 1 + an exponential of mean 10, one run in 33 at a rate of
/// 0.3 per turn, 300 runs; (b) 90% of runs of one label and 10% of 50, a
/// whole run revised with chance 0.001 (all or nothing), 1,000 runs. The
/// bound covers the true rate in at least 92% of replicates.
#[test]
fn the_run_level_bound_covers_runs_of_unequal_sizes() {
    let n = replicates(300, 1000);
    let mut rng = Rng(0x51ce);
    let (mut cover_a, mut cover_b) = (0u64, 0u64);
    // (a): the true rate is E[k]/E[n] = 0.3 / 33 (risk independent of size).
    let rate_a = 0.3 / 33.0;
    for _ in 0..n {
        let mut per = Vec::new();
        for _ in 0..300 {
            let size = 1 + (-10.0 * rng.next().ln()).floor() as u64;
            let risky = rng.next() < 1.0 / 33.0;
            let k = match risky {
                true => (0..size).filter(|_| rng.next() < 0.3).count() as u64,
                false => 0,
            };
            per.push((size, k));
        }
        let l = crate::stats::RunLabels::of(per.iter().copied());
        cover_a += u64::from(crate::stats::run_level_upper(&l, 0.05).unwrap() >= rate_a);
        // (b)
        let mut per = Vec::new();
        for i in 0..1000 {
            let size = if i % 10 == 0 { 50 } else { 1 };
            let k = if rng.next() < 0.001 { size } else { 0 };
            per.push((size, k));
        }
        let l = crate::stats::RunLabels::of(per.iter().copied());
        cover_b += u64::from(crate::stats::run_level_upper(&l, 0.05).unwrap() >= 0.001);
    }
    let (a, b) = (cover_a as f64 / n as f64, cover_b as f64 / n as f64);
    eprintln!("unequal runs: the bound covers (a) {a:.3}, (b) {b:.3} ({n} replicates)");
    assert!(a >= 0.92 && b >= 0.92, "(a) {a}, (b) {b}");
}

/// Six nested variants (true rates on their new skips 0.010 to 0.053 with the cap at 1,
/// the last above R = 0.05, the one before it at 0.044), strong
/// clustering shared by every variant's skips of a run, learn and
/// calibration parts of 200 runs of 30 turns: no procedure certifies the
/// too-risky variant in more than delta of the replicates (the lower end
/// of the share's 95% interval is at most delta), while bounds that take
/// turns as independent do, so the simulation tells them apart.
#[test]
fn the_family_wise_error_holds_when_verdicts_cluster() {
    let n = replicates(200, 400);
    let kinds: Vec<Kind> = [0.01, 0.02, 0.04, 0.06, 0.09, 0.12]
        .iter()
        .map(|&rate| Kind {
            share: 0.1,
            rate,
            labelled_if_revised: 0.9,
            labelled_else: 0.9,
        })
        .collect();
    let variants: Vec<usize> = (0..6).collect();
    let rates: Vec<f64> = variants
        .iter()
        .map(|&v| true_rate(&kinds, v, Clustering::STRONG))
        .collect();
    assert!(rates[5] > 0.05 && rates[4] < 0.05, "{rates:?}");
    let rule = Rule {
        max_regression_rate: 0.05,
        delta: 0.05,
        min_label_coverage: 0.5,
        assume_missing_at_random: true,
    };
    let mut bad = [0u64; 3];
    let mut per_turn_bad = 0u64;
    let mut rng = Rng(0xfa11);
    for _ in 0..n {
        let learn = simulate_part(&mut rng, &kinds, &variants, 200, 30, Clustering::STRONG);
        let cal = simulate_part(&mut rng, &kinds, &variants, 200, 30, Clustering::STRONG);
        let cands: Vec<Candidate> = variants
            .iter()
            .map(|&v| {
                let savings = (v + 1) as f64;
                Candidate {
                    variant: format!("v{v}"),
                    learn: evidence_of(&learn[v], savings),
                    calibration: evidence_of(&cal[v], savings),
                }
            })
            .collect();
        let (_, _, outcomes) = choose(cands.clone(), &rule);
        for (i, o) in outcomes.iter().enumerate() {
            bad[i] += u64::from(o.certified.iter().any(|v| v == "v5"));
        }
        // The control: the same test with every label its own run.
        let e = &cands[5].calibration;
        let naive =
            Evidence::independent(0.0, e.new_skips, e.labelled_skips(), e.safety_regressions());
        per_turn_bad += u64::from(naive.passes(0.05, 0.05));
    }
    for (p, b) in Procedure::ALL.iter().zip(bad) {
        eprintln!(
            "clustered family, {}: {b} of {n} certify above R (95% CI from {:.4})",
            p.name(),
            lower95(b, n)
        );
        assert!(lower95(b, n) <= rule.delta, "{}: {b} of {n}", p.name());
    }
    eprintln!("clustered family, per-turn control: {per_turn_bad} of {n} pass v5 alone");
    assert!(
        lower95(per_turn_bad, n) > rule.delta,
        "the control: {per_turn_bad} of {n}"
    );
}

/// Two ack kinds: a safe one (rate 0.03, nine in ten labelled) and a
/// risky one at `risky` whose label is missing on 80% of the turns the
/// critic would revise and 10% of the rest (missing not at random).
fn hard_turns_lose_labels(risky: f64) -> [Kind; 2] {
    [
        Kind {
            share: 0.3,
            rate: 0.03,
            labelled_if_revised: 0.9,
            labelled_else: 0.9,
        },
        Kind {
            share: 0.3,
            rate: risky,
            labelled_if_revised: 0.2,
            labelled_else: 0.9,
        },
    ]
}

/// Labels missing because the critic fails on hard turns (the review's
/// case): 6,000 turns in runs of 10; a safe ack kind (rate 0.03, nine in
/// ten labelled) and a risky one (rate 0.08, labelled on 20% of the turns
/// the critic would revise and 90% of the rest). The variant skipping
/// both has a true rate of 0.055 on its new skips, above R = 0.05; its
/// labels say about 0.025, and its coverage (0.87) is above the floor.
/// Without the assumption, no variant above R is certified in at least
/// 95% of the replicates; assuming missing at random certifies it in most
/// (so the simulation tells them apart), and the guarantee says so.
#[test]
fn labels_missing_where_the_critic_fails_certify_nothing_above_r() {
    let n = replicates(50, 200);
    let kinds = hard_turns_lose_labels(0.08);
    assert!((true_rate(&kinds, 1, Clustering::MILD) - 0.055).abs() < 1e-9);
    let mut rule = Rule {
        max_regression_rate: 0.05,
        delta: 0.05,
        min_label_coverage: 0.5,
        assume_missing_at_random: false,
    };
    let mut above = [0u64; 2];
    let mut rng = Rng(0x3a4);
    for _ in 0..n {
        let learn = simulate_part(&mut rng, &kinds, &[0, 1], 300, 10, Clustering::MILD);
        let cal = simulate_part(&mut rng, &kinds, &[0, 1], 300, 10, Clustering::MILD);
        let cands: Vec<Candidate> = (0..2)
            .map(|v| Candidate {
                variant: format!("v{v}"),
                learn: evidence_of(&learn[v], (v + 1) as f64),
                calibration: evidence_of(&cal[v], (v + 1) as f64),
            })
            .collect();
        for (i, mar) in [false, true].into_iter().enumerate() {
            rule.assume_missing_at_random = mar;
            let s = select(cands.clone(), &rule, Procedure::FixedSequence);
            above[i] += u64::from(
                s.procedures
                    .iter()
                    .any(|o| o.certified.contains(&"v1".to_string())),
            );
        }
    }
    eprintln!(
        "critic fails on hard turns: v1 (true 0.055) certified in {} of {n} without the assumption, {} with it",
        above[0], above[1]
    );
    assert!(above[0] as f64 <= 0.05 * n as f64, "{} of {n}", above[0]);
    assert!(
        above[1] as f64 >= 0.5 * n as f64,
        "the control: {} of {n}",
        above[1]
    );
}

/// The other side of the worst-case requirement: a safe kind (rate
/// 0.005) labelled on 99.5% of its turns, whatever their verdict, is
/// still certified without assuming missing at random (R = 0.05).
#[test]
fn well_labelled_safe_variants_are_still_certified() {
    let n = replicates(50, 200);
    let rule = Rule {
        max_regression_rate: 0.05,
        delta: 0.05,
        min_label_coverage: 0.5,
        assume_missing_at_random: false,
    };
    let mut rng = Rng(0x5afe);
    let safe = [Kind {
        share: 1.0,
        rate: 0.005,
        labelled_if_revised: 0.995,
        labelled_else: 0.995,
    }];
    let mut certified = 0u64;
    for _ in 0..n {
        let learn = simulate_part(&mut rng, &safe, &[0], 300, 10, Clustering::MILD);
        let cal = simulate_part(&mut rng, &safe, &[0], 300, 10, Clustering::MILD);
        let c = Candidate {
            variant: "safe".into(),
            learn: evidence_of(&learn[0], 1.0),
            calibration: evidence_of(&cal[0], 1.0),
        };
        let s = select(vec![c], &rule, Procedure::FixedSequence);
        certified += u64::from(s.chosen.is_some());
    }
    eprintln!("critic fails on hard turns: a safe, 99.5%-labelled variant certified in {certified} of {n}");
    assert!(
        certified as f64 >= 0.8 * n as f64,
        "power: {certified} of {n}"
    );
}

/// An audit of the widest variant's unlabelled new skips: each drawn at
/// its kind's probability (a stratum per kind), its shadow call failing
/// with one chance on the turns the critic would revise and another on
/// the rest.
#[derive(Clone, Copy, Debug)]
struct Audit {
    probabilities: [f64; 2],
    fails_if_revised: f64,
    fails_else: f64,
}

/// One part's evidence per variant with an audit (`audit` None: without
/// one), and each variant's realised regression rate on its new skips. As
/// [`simulate_part`], with one draw and one shadow call per turn shared by
/// every variant that skips it (the widest variant is the audited one, so
/// the audit covers every variant's unlabelled new skips).
fn simulate_audited_part(
    rng: &mut Rng,
    kinds: &[Kind],
    variants: &[usize],
    c: Clustering,
    audit: Option<Audit>,
) -> Vec<(Evidence, f64)> {
    use crate::replay::design::{DesignTally, Population, StratumTally, TwoPhase};
    let n = variants.len();
    let (runs, turns_per_run) = (300, 10);
    // Per run, per variant: (new skips, labelled, regressions).
    let mut cells = vec![vec![(0u64, 0u64, 0u64); n]; runs];
    let mut tallies = vec![std::collections::BTreeMap::<String, StratumTally>::new(); n];
    let mut realised = vec![0u64; n];
    for run in cells.iter_mut() {
        let f = c.draw(rng);
        for _ in 0..turns_per_run {
            let Some((i, revised, labelled)) = one_turn(rng, kinds, f) else {
                continue;
            };
            let a = audit.unwrap_or(Audit {
                probabilities: [0.0; 2],
                fails_if_revised: 0.0,
                fails_else: 0.0,
            });
            let probability = a.probabilities[i.min(1)];
            let drawn = !labelled && rng.next() < probability;
            let fails = rng.next()
                < match revised {
                    true => a.fails_if_revised,
                    false => a.fails_else,
                };
            for (v, _) in variants.iter().enumerate().filter(|(_, l)| i <= **l) {
                let cell = &mut run[v];
                cell.0 += 1;
                cell.1 += u64::from(labelled);
                cell.2 += u64::from(labelled && revised);
                realised[v] += u64::from(revised);
                let t = tallies[v].entry(format!("kind{i}")).or_default();
                t.probability = probability;
                t.skips += u64::from(!labelled);
                t.drawn += u64::from(drawn);
                t.failed += u64::from(drawn && fails);
                t.shadow += u64::from(drawn && !fails);
                t.regressions += u64::from(drawn && !fails && revised);
            }
        }
    }
    (0..n)
        .map(|v| {
            let runs: Vec<(u64, u64, u64)> = cells.iter().map(|run| run[v]).collect();
            let mut e = evidence_of(&runs, (v + 1) as f64);
            e.audit = audit.map(|_| TwoPhase {
                new_skips: e.new_skips,
                labelled_regressions: e.labels.regressions,
                outside: 0,
                sample: DesignTally {
                    population: Population::UnlabelledNewSkips,
                    strata: tallies[v].clone(),
                    ..Default::default()
                },
            });
            let rate = realised[v] as f64 / e.new_skips.max(1) as f64;
            (e, rate)
        })
        .collect()
}

/// The chance, over `n` replicates of a learn and a calibration part, that
/// some variant is certified (any procedure) whose realised new-skip rate
/// on the calibration part is above R, and that `wanted` is certified.
fn audited_shares(
    n: u64,
    seed: u64,
    kinds: &[Kind],
    c: Clustering,
    audit: Option<Audit>,
    wanted: &str,
) -> (u64, u64) {
    let rule = Rule {
        max_regression_rate: 0.05,
        delta: 0.05,
        min_label_coverage: 0.5,
        assume_missing_at_random: false,
    };
    let mut rng = Rng(seed);
    let (mut above, mut certified) = (0u64, 0u64);
    for _ in 0..n {
        let learn = simulate_audited_part(&mut rng, kinds, &[0, 1], c, audit);
        let cal = simulate_audited_part(&mut rng, kinds, &[0, 1], c, audit);
        let cands: Vec<Candidate> = (0..2)
            .map(|v| Candidate {
                variant: format!("v{v}"),
                learn: learn[v].0.clone(),
                calibration: cal[v].0.clone(),
            })
            .collect();
        let s = select(cands, &rule, Procedure::FixedSequence);
        let certified_by_any = |v: &str| {
            s.procedures
                .iter()
                .any(|o| o.certified.iter().any(|c| c == v))
        };
        above +=
            u64::from((0..2).any(|v| {
                certified_by_any(&format!("v{v}")) && cal[v].1 > rule.max_regression_rate
            }));
        certified += u64::from(certified_by_any(wanted));
    }
    (above, certified)
}

/// `calibrate --plan` with an audit (#45 item 7): the recorded labels
/// missing where the critic would revise (a risky kind labelled on 20% of
/// those turns and 90% of the rest, as above), strongly clustered runs,
/// and shadow calls that fail more often on the turns the critic would
/// revise (30% against 5%). The variant skipping both kinds has a true
/// rate of 0.055, above R = 0.05: no procedure certifies a variant whose
/// realised rate on the calibration part is above R in more than delta of
/// the replicates. The two-phase bound counts every failed shadow call a
/// regression, so informative failures do not break it.
///
/// What it does not hold, measured beside it: the true rate. Strong
/// clustering leaves some calibration parts with a realised rate within R
/// although the true rate is above it, and there the labels' own test
/// (missing at random assumed) does not object: v1 is certified in 37 of
/// 400 replicates (9%). The guarantee says the audit's statement is of
/// the calibration part's realised rate (docs/sweeps.md).
#[test]
fn an_audit_certifies_nothing_above_r_whatever_made_labels_missing() {
    let n = replicates(60, 400);
    let kinds = hard_turns_lose_labels(0.08);
    let audit = Audit {
        probabilities: [0.5, 0.5],
        fails_if_revised: 0.3,
        fails_else: 0.05,
    };
    let (above, v1) = audited_shares(n, 0xa0d1, &kinds, Clustering::STRONG, Some(audit), "v1");
    eprintln!("audit, critic fails on hard turns, strong clustering: a variant above R on the calibration part certified in {above} of {n}; v1 (true 0.055) certified in {v1}");
    assert!(above as f64 <= 0.05 * n as f64, "{above} of {n}");
    assert!(
        v1 > 0,
        "the realised rate is what is held, not the true one"
    );
}

/// The other side: the risky kind at 0.05 (the variant skipping both at a
/// true 0.04, within R), labels still missing where the critic would
/// revise. Without an audit its worst case (every unlabelled new skip a
/// regression) certifies it almost never; with an audit drawing 80% of the
/// unlabelled new skips (shadow calls failing at 5%), it is certified in
/// most replicates.
#[test]
fn an_audit_certifies_a_safe_variant_the_worst_case_cannot() {
    let n = replicates(60, 400);
    let kinds = hard_turns_lose_labels(0.05);
    assert!((true_rate(&kinds, 1, Clustering::MILD) - 0.04).abs() < 1e-9);
    let audit = Audit {
        probabilities: [0.8, 0.8],
        fails_if_revised: 0.05,
        fails_else: 0.05,
    };
    let (_, with) = audited_shares(n, 0x5afa, &kinds, Clustering::MILD, Some(audit), "v1");
    let (_, without) = audited_shares(n, 0x5afa, &kinds, Clustering::MILD, None, "v1");
    eprintln!("audit of a safe variant (true 0.04): certified in {with} of {n} with it, {without} without");
    assert!(with as f64 >= 0.5 * n as f64, "power: {with} of {n}");
    assert!(
        without as f64 <= 0.05 * n as f64,
        "the control: {without} of {n}"
    );
}

/// Near R, where the guard decides: the risky kind at 0.072 (the variant
/// skipping both at a true 0.051, so its calibration part's realised rate
/// falls on either side of R = 0.05), its labels missing where the critic
/// would revise, mildly clustered runs. Two audits: (a) 30% of each
/// stratum drawn, no shadow call failing; (b) two strata drawn at unequal
/// probabilities (0.5 and 0.8: the Bonferroni bound), shadow calls failing
/// on 70% of the turns the critic would revise and 1% of the rest. In
/// each, a variant whose realised rate is above R is certified in at most
/// delta of the replicates. The settings tell a sound guard from a
/// weakened one (measured at 400 replicates when this test was written:
/// 0 and 0 certified above R; the guard at 50% confidence: 32 of 400 in
/// (a); failed shadow calls taken as unrelated to the verdict: 116 of 400
/// in (b)).
#[test]
fn near_r_the_audit_certifies_a_realised_rate_above_r_in_at_most_delta() {
    let n = replicates(200, 400);
    let kinds = hard_turns_lose_labels(0.072);
    let settings = [
        (
            "(a) no failures",
            Audit {
                probabilities: [0.3, 0.3],
                fails_if_revised: 0.0,
                fails_else: 0.0,
            },
        ),
        (
            "(b) informative failures, two probabilities",
            Audit {
                probabilities: [0.5, 0.8],
                fails_if_revised: 0.7,
                fails_else: 0.01,
            },
        ),
    ];
    for (name, audit) in settings {
        let (above, v1) = audited_shares(n, 0x4ea2, &kinds, Clustering::MILD, Some(audit), "v1");
        eprintln!("audit near R (v1 true 0.051), {name}: a variant above R on the calibration part certified in {above} of {n}; v1 certified in {v1}");
        assert!(above as f64 <= 0.05 * n as f64, "{name}: {above} of {n}");
        assert!(
            v1 > 0,
            "{name}: the setting is near R: v1 is sometimes certified"
        );
    }
}
