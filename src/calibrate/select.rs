//! How `calibrate` chooses, apart from the replays: the family of
//! candidates and its testing order are fixed on the learn part, the tests
//! run on the calibration part, and the most saving certified candidate is
//! chosen (Learn then Test).
//!
//! The guarantee: if runs are independent draws from one traffic, and a
//! candidate's labelled skips on the calibration part are independent
//! draws of its true regression rate (the chance that a labelled skip is
//! a turn production's critic revised or refused), then the chance that
//! any certified candidate's true rate exceeds R is at most delta, for
//! each of the three procedures; so the chosen one's exceeds R with
//! probability at most delta. It holds because nothing the calibration
//! verdicts say chose the family, its order or the levels: those come
//! from the learn part, which shares no run with it. It says nothing
//! about the unlabelled skips (they are assumed missing at random: the
//! worst-case bound beside it counts every one as a regression).

use serde::Serialize;

use crate::stats::{binom_cdf, clopper_pearson_upper};
use crate::summary::numbers::sig_up;

/// What one part of the traffic says about a candidate.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Evidence {
    /// By the savings metric (per 1,000 turns).
    pub savings: f64,
    pub skips: u64,
    pub labelled_skips: u64,
    pub safety_regressions: u64,
}

impl Evidence {
    /// Labelled skips over skips; None without skips.
    pub fn coverage(&self) -> Option<f64> {
        (self.skips > 0).then(|| self.labelled_skips as f64 / self.skips as f64)
    }

    /// The Clopper-Pearson upper bound at 1 - `alpha`; None without labels.
    pub fn upper(&self, alpha: f64) -> Option<f64> {
        clopper_pearson_upper(self.safety_regressions, self.labelled_skips, alpha)
    }

    /// The bound when every unlabelled skip is counted as a regression.
    pub fn worst_case_upper(&self, alpha: f64) -> Option<f64> {
        let unlabelled = self.skips.saturating_sub(self.labelled_skips);
        clopper_pearson_upper(self.safety_regressions + unlabelled, self.skips, alpha)
    }

    /// The exact p-value of "the rate is R or more": the chance of this
    /// few regressions in this many labelled skips at rate R (1 without
    /// labels). It is at most alpha exactly when the bound is at most R.
    pub fn p_value(&self, r: f64) -> f64 {
        match self.labelled_skips {
            0 => 1.0,
            n => binom_cdf(self.safety_regressions, n, r),
        }
    }
}

/// A variant that saves something, with its evidence on both parts.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub variant: String,
    pub learn: Evidence,
    pub calibration: Evidence,
}

/// How the family is tested.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Procedure {
    /// In the learn part's order, each at level delta, up to the first
    /// failure.
    FixedSequence,
    /// Holm's step-down: the k-th smallest p-value at delta / (m - k + 1).
    Holm,
    /// Each at delta / m.
    Bonferroni,
}

impl std::str::FromStr for Procedure {
    type Err = crate::vocab::UnknownName;

    fn from_str(s: &str) -> Result<Procedure, crate::vocab::UnknownName> {
        crate::vocab::choose("--procedure", s, &Procedure::NAMES, &Procedure::ALL)
    }
}

impl Procedure {
    /// The names `--procedure` takes, in the order of [`Procedure::ALL`].
    pub const NAMES: [&'static str; 3] = ["fixed-sequence", "holm", "bonferroni"];

    /// What each does (the flag's help).
    pub fn help(self) -> &'static str {
        match self {
            Procedure::FixedSequence => {
                "The learn part's order, each at delta, up to the first failure"
            }
            Procedure::Holm => "Holm's step-down over the family's p-values",
            Procedure::Bonferroni => "Each member at delta / m",
        }
    }

    pub const ALL: [Procedure; 3] = [
        Procedure::FixedSequence,
        Procedure::Holm,
        Procedure::Bonferroni,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Procedure::FixedSequence => "fixed-sequence",
            Procedure::Holm => "holm",
            Procedure::Bonferroni => "bonferroni",
        }
    }
}

/// What is asked: the rate, the confidence and the coverage floor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rule {
    pub max_regression_rate: f64,
    pub delta: f64,
    /// Below this label coverage (on either part) a candidate cannot be
    /// certified.
    pub min_label_coverage: f64,
}

impl Rule {
    fn covered(&self, e: &Evidence) -> bool {
        e.coverage().is_some_and(|c| c >= self.min_label_coverage)
    }
}

/// One part's figures as calibration.json gives them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Figures {
    pub savings: f64,
    pub skips: u64,
    pub labelled_skips: u64,
    pub safety_regressions: u64,
    pub label_coverage: Option<f64>,
    /// At 1 - delta, rounded up.
    pub upper_bound: Option<f64>,
}

impl Figures {
    fn of(e: &Evidence, delta: f64) -> Figures {
        Figures {
            savings: e.savings,
            skips: e.skips,
            labelled_skips: e.labelled_skips,
            safety_regressions: e.safety_regressions,
            label_coverage: crate::summary::numbers::sig(e.coverage()),
            upper_bound: sig_up(e.upper(delta)),
        }
    }
}

/// A member of the family, in testing order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Member {
    pub variant: String,
    pub learn: Figures,
    pub calibration: Figures,
    /// On the calibration part: the p-value of "the rate exceeds R".
    pub p_value: f64,
    /// On the calibration part, every unlabelled skip a regression.
    pub worst_case_upper_bound: Option<f64>,
    /// False: its calibration coverage is below the floor.
    pub covered: bool,
    /// The procedures that certify it.
    pub certified_by: Vec<Procedure>,
}

/// A variant the learn part left out of the family, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LeftOut {
    pub variant: String,
    pub why: String,
}

/// What one procedure certifies and chooses.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Outcome {
    pub procedure: Procedure,
    pub certified: Vec<String>,
    /// The most saving certified on the calibration part; None: keep the
    /// baseline.
    pub chosen: Option<String>,
    pub stopped: String,
}

/// The whole selection.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Selection {
    pub procedure: Procedure,
    pub family: Vec<Member>,
    pub left_out: Vec<LeftOut>,
    /// Every procedure on the same data (the asked one decides).
    pub procedures: Vec<Outcome>,
    pub chosen: Option<String>,
}

/// Fix the family on the learn part: candidates saving something there,
/// covered, on its frontier (none saves more at a lower or equal learn
/// bound), ordered from the safest (lowest learn bound) up.
pub fn family(cands: Vec<Candidate>, rule: &Rule) -> (Vec<Candidate>, Vec<LeftOut>) {
    let mut left = Vec::new();
    let mut kept = Vec::new();
    for c in cands {
        let why = if c.learn.savings <= 0.0 {
            Some("saves nothing on the learn part".to_string())
        } else if !rule.covered(&c.learn) {
            Some(format!(
                "label coverage {} on the learn part is below the floor {}: not certifiable",
                show_share(c.learn.coverage()),
                rule.min_label_coverage
            ))
        } else {
            None
        };
        match why {
            Some(why) => left.push(LeftOut {
                variant: c.variant,
                why,
            }),
            None => kept.push(c),
        }
    }
    let mut kept: Vec<(f64, Candidate)> = kept
        .into_iter()
        .map(|c| (c.learn.upper(rule.delta).unwrap_or(1.0), c))
        .collect();
    kept.sort_by(|(ra, a), (rb, b)| {
        ra.total_cmp(rb)
            // The most saving of equal risks first: it dominates the rest.
            .then(b.learn.savings.total_cmp(&a.learn.savings))
            .then_with(|| a.variant.cmp(&b.variant))
    });
    let mut family: Vec<Candidate> = Vec::new();
    for (_, c) in kept {
        // Sorted by risk: c is dominated by a member saving as much.
        match family.iter().find(|f| f.learn.savings >= c.learn.savings) {
            Some(f) => left.push(LeftOut {
                why: format!(
                    "off the learn part's frontier: {} saves as much or more with a bound as low or lower",
                    f.variant
                ),
                variant: c.variant,
            }),
            None => family.push(c),
        }
    }
    left.sort_by(|a, b| a.variant.cmp(&b.variant));
    (family, left)
}

fn show_share(x: Option<f64>) -> String {
    x.map_or("none".to_string(), |x| format!("{x:.4}"))
}

/// The family, what it left out, and every procedure's outcome (in
/// [`Procedure::ALL`]'s order).
pub fn choose(cands: Vec<Candidate>, rule: &Rule) -> (Vec<Candidate>, Vec<LeftOut>, Vec<Outcome>) {
    let (fam, left_out) = family(cands, rule);
    let outcomes = Procedure::ALL.iter().map(|p| run(*p, &fam, rule)).collect();
    (fam, left_out, outcomes)
}

/// Choose among `cands` by `procedure`, reporting every procedure and
/// every member's figures.
pub fn select(cands: Vec<Candidate>, rule: &Rule, procedure: Procedure) -> Selection {
    let (fam, left_out, outcomes) = choose(cands, rule);
    let family = fam
        .iter()
        .map(|c| Member {
            variant: c.variant.clone(),
            learn: Figures::of(&c.learn, rule.delta),
            calibration: Figures::of(&c.calibration, rule.delta),
            p_value: c.calibration.p_value(rule.max_regression_rate),
            worst_case_upper_bound: sig_up(c.calibration.worst_case_upper(rule.delta)),
            covered: rule.covered(&c.calibration),
            certified_by: outcomes
                .iter()
                .filter(|o| o.certified.contains(&c.variant))
                .map(|o| o.procedure)
                .collect(),
        })
        .collect();
    let chosen = outcomes
        .iter()
        .find(|o| o.procedure == procedure)
        .and_then(|o| o.chosen.clone());
    Selection {
        procedure,
        family,
        left_out,
        procedures: outcomes,
        chosen,
    }
}

/// One procedure over the family (in testing order).
fn run(p: Procedure, fam: &[Candidate], rule: &Rule) -> Outcome {
    let (certified, stopped) = match p {
        Procedure::FixedSequence => fixed_sequence(fam, rule),
        Procedure::Holm => holm(fam, rule),
        Procedure::Bonferroni => bonferroni(fam, rule),
    };
    let chosen = fam
        .iter()
        .filter(|c| certified.contains(&c.variant) && c.calibration.savings > 0.0)
        .max_by(|a, b| {
            a.calibration
                .savings
                .total_cmp(&b.calibration.savings)
                .then_with(|| b.variant.cmp(&a.variant))
        })
        .map(|c| c.variant.clone());
    let stopped = match (&chosen, certified.is_empty()) {
        (None, false) => {
            format!("{stopped}; no certified variant saves anything on the calibration part")
        }
        _ => stopped,
    };
    Outcome {
        procedure: p,
        certified,
        chosen,
        stopped,
    }
}

/// Each at delta in order; an uncovered member is passed over (coverage
/// does not depend on the verdicts), the first failure stops.
fn fixed_sequence(fam: &[Candidate], rule: &Rule) -> (Vec<String>, String) {
    let mut certified = Vec::new();
    for c in fam.iter().filter(|c| rule.covered(&c.calibration)) {
        if c.calibration.p_value(rule.max_regression_rate) > rule.delta {
            return (certified, why_failed(c, rule, rule.delta));
        }
        certified.push(c.variant.clone());
    }
    (
        certified,
        end_of(fam, "every covered member of the family passed"),
    )
}

/// Holm's step-down over the covered members' p-values (the uncovered
/// count in m but cannot pass).
fn holm(fam: &[Candidate], rule: &Rule) -> (Vec<String>, String) {
    let m = fam.len();
    let mut order: Vec<&Candidate> = fam
        .iter()
        .filter(|c| rule.covered(&c.calibration))
        .collect();
    let p = |c: &Candidate| c.calibration.p_value(rule.max_regression_rate);
    order.sort_by(|a, b| p(a).total_cmp(&p(b)));
    let mut certified = Vec::new();
    for (i, c) in order.into_iter().enumerate() {
        let level = rule.delta / (m - i) as f64;
        if p(c) > level {
            return (certified, why_failed(c, rule, level));
        }
        certified.push(c.variant.clone());
    }
    (
        certified,
        end_of(fam, "every covered member of the family passed"),
    )
}

/// Each covered member at delta / m.
fn bonferroni(fam: &[Candidate], rule: &Rule) -> (Vec<String>, String) {
    let level = rule.delta / fam.len().max(1) as f64;
    let certified: Vec<String> = fam
        .iter()
        .filter(|c| rule.covered(&c.calibration))
        .filter(|c| c.calibration.p_value(rule.max_regression_rate) <= level)
        .map(|c| c.variant.clone())
        .collect();
    let stopped = format!(
        "{} of {} members pass at delta / {} = {}",
        certified.len(),
        fam.len(),
        fam.len(),
        crate::summary::numbers::sig(Some(level)).unwrap_or(level)
    );
    (certified, end_of(fam, &stopped))
}

fn end_of(fam: &[Candidate], done: &str) -> String {
    match fam.is_empty() {
        true => "the learn part leaves no candidate: no variant saves something there with enough label coverage".to_string(),
        false => done.to_string(),
    }
}

/// Why a member failed at `level`, and how many labels would help.
fn why_failed(c: &Candidate, rule: &Rule, level: f64) -> String {
    let r = rule.max_regression_rate;
    let e = &c.calibration;
    let need = labels_needed(r, level).map_or("more than 2^53".to_string(), |n| n.to_string());
    let too_few = labels_needed(r, level).is_none_or(|n| e.labelled_skips < n);
    let level = crate::summary::numbers::sig(Some(level)).unwrap_or(level);
    let head = format!(
        "{}: {} regressions in {} labelled skips on the calibration part bound its rate at level {level} by {}, above {}",
        c.variant,
        e.safety_regressions,
        e.labelled_skips,
        show_share(e.upper(level)),
        show(r),
    );
    match too_few {
        true => format!("{head}; labels are too few to certify {} at that level: it takes at least {need} labelled skips without a regression", show(r)),
        false => head,
    }
}

pub use crate::stats::labels_needed;

/// A rate as text: tiny ones in scientific notation.
pub fn show(r: f64) -> String {
    match r != 0.0 && r.abs() < 1e-4 {
        true => format!("{r:e}"),
        false => format!("{r}"),
    }
}
