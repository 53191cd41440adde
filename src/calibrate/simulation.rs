//! The guarantee of [`super::select`], held by simulation: near-tied
//! risky variants whose dollars depend on their verdicts (the case that
//! broke the earlier procedure, kept here as the control), a known-answer
//! grid with a distractor, and the order the learn part fixes.

use super::select::{choose, select, Candidate, Evidence, Procedure, Rule};
use crate::stats::clopper_pearson_upper;

/// splitmix64: a seeded generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        // In (0, 1]: the logarithm below never sees 0.
        (((z ^ (z >> 31)) >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Binomial(n, p) exactly, by geometric gaps between successes
    /// (about n p draws instead of n).
    fn binomial(&mut self, n: u64, p: f64) -> u64 {
        if p <= 0.0 {
            return 0;
        }
        let ln_q = (-p).ln_1p();
        let (mut k, mut at) = (0, 0u64);
        loop {
            let gap = (self.next().ln() / ln_q).floor();
            if gap >= (n - at) as f64 {
                return k;
            }
            at += gap as u64 + 1;
            k += 1;
        }
    }
}

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
    Evidence {
        savings,
        skips,
        labelled_skips: labelled,
        safety_regressions: k,
    }
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
fn lower95(k: u64, n: u64) -> f64 {
    match k {
        0 => 0.0,
        _ => 1.0 - clopper_pearson_upper(n - k, n, 0.025).unwrap(),
    }
}

const RULE: Rule = Rule {
    max_regression_rate: 0.02,
    delta: 0.05,
    min_label_coverage: 0.5,
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
    let ev = |n: u64, r: f64| Evidence {
        savings: n as f64,
        skips: n,
        labelled_skips: n,
        safety_regressions: (n as f64 * r).round() as u64,
    };
    let cands: Vec<Candidate> = grid
        .iter()
        .map(|(v, n, r)| Candidate {
            variant: v.to_string(),
            learn: ev(*n, *r),
            calibration: ev(*n, *r),
        })
        .collect();
    let rule = Rule {
        max_regression_rate: 0.015,
        ..RULE
    };
    for p in Procedure::ALL {
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
    let ev = |s: f64, k: u64| Evidence {
        savings: s,
        skips: 1000,
        labelled_skips: 1000,
        safety_regressions: k,
    };
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
    let ev = |skips: u64, labelled: u64, s: f64| Evidence {
        savings: s,
        skips,
        labelled_skips: labelled,
        safety_regressions: u64::from(s == 40.0) * 3,
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
            calibration: Evidence {
                labelled_skips: 300,
                ..ev(1000, 900, 40.0)
            },
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
