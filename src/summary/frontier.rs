//! The risk-savings frontier of a sweep, from the summary's typed figures:
//! what "saves" means (net USD or net calls per 1,000 turns), the risk
//! (expected new harmful skips per 1,000 turns: the run-level upper 95%
//! bound of the rate on new skips times the share of turns that are new
//! skips, so diluting a rate with approved skips is not rewarded and the
//! baseline, with no new skips, adds none; new skips without labels: a
//! bound of 1; and never below the worst case, every unlabelled new skip
//! a regression: a candidate whose critic fails on the turns it would
//! revise was drawn at a quarter of its true harm on its labels alone),
//! which variants are
//! covered enough to be on it ([`MIN_LABEL_COVERAGE`]), and the points no
//! other one beats on both. `report::frontier` draws and writes it;
//! `calibrate` chooses on it.

use super::figures::VariantSummary;

/// What "saves" means in a frontier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Savings {
    NetUsd,
    NetCalls,
}

impl Savings {
    /// The summary column it is.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Savings::NetUsd => "net_usd_per_1k_turns",
            Savings::NetCalls => "net_calls_per_1k_turns",
        }
    }

    /// The variant's savings by this measure.
    pub(crate) fn of(self, v: &VariantSummary) -> Option<f64> {
        match self {
            Savings::NetUsd => v.net_usd_per_1k_turns,
            Savings::NetCalls => v.net_calls_per_1k_turns,
        }
    }

    /// The axis label.
    pub(crate) fn unit(self) -> &'static str {
        match self {
            Savings::NetUsd => "net savings (USD per 1,000 turns)",
            Savings::NetCalls => "net critic calls saved per 1,000 turns",
        }
    }
}

/// Below this label coverage a variant's bound rests more on the
/// unlabelled skips being like the labelled ones than on labels (they
/// outnumber them): it is never on the frontier, and `calibrate` cannot
/// certify it by default.
pub(crate) const MIN_LABEL_COVERAGE: f64 = crate::options::DEFAULT_MIN_LABEL_COVERAGE;

/// Expected new harmful skips per 1,000 turns at regression rate `rate`
/// on the variant's new skips (0 without new skips: the baseline adds no
/// new harm).
pub(crate) fn per_1k(rate: f64, v: &VariantSummary) -> f64 {
    match v.turns {
        0 => 0.0,
        t => rate * v.new_skips as f64 / t as f64 * 1000.0,
    }
}

/// Whether a variant's labels cover enough of its skips (no skips: yes).
pub(crate) fn covered(v: &VariantSummary) -> bool {
    v.label_coverage.is_none_or(|c| c >= MIN_LABEL_COVERAGE)
}

/// One variant on the savings/risk plane.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Point {
    /// None where the variant has no turns.
    pub savings: Option<f64>,
    /// Harmful skips per 1,000 turns at the rate's upper 95% bound (1
    /// without labelled skips) or its worst case's, the larger: the risk
    /// axis.
    pub bound: f64,
    /// The same at the labels' bound alone.
    pub labels_bound: f64,
    pub covered: bool,
    pub on_frontier: bool,
}

/// Dollars when every variant has them, else calls.
pub(crate) fn savings_metric(variants: &[&VariantSummary]) -> Savings {
    match variants.iter().all(|v| v.net_usd_per_1k_turns.is_some()) {
        true => Savings::NetUsd,
        false => Savings::NetCalls,
    }
}

/// Each variant's point, in order, with the frontier marked: a variant is
/// on it unless another saves more with a lower or equal bound, or as much
/// with a lower bound.
pub(crate) fn points(variants: &[&VariantSummary], metric: Savings) -> Vec<Point> {
    let mut pts: Vec<Point> = variants
        .iter()
        .map(|v| {
            // New skips without labels: nothing shows their rate is below 1.
            let labels = v.safety_regression_rate_upper95.unwrap_or(1.0);
            let worst = v.safety_regression_rate_worst_case_upper95.unwrap_or(1.0);
            Point {
                savings: metric.of(v),
                bound: per_1k(labels.max(worst), v),
                labels_bound: per_1k(labels, v),
                covered: covered(v),
                on_frontier: false,
            }
        })
        .collect();
    let beats = |a: &Point, s: f64, b: f64| {
        a.covered
            && a.savings
                .is_some_and(|sa| (sa > s && a.bound <= b) || (sa >= s && a.bound < b))
    };
    for i in 0..pts.len() {
        let Some(s) = pts[i].savings.filter(|_| pts[i].covered) else {
            continue;
        };
        let b = pts[i].bound;
        pts[i].on_frontier = !pts.iter().any(|a| beats(a, s, b));
    }
    pts
}
