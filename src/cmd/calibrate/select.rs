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

use crate::replay::design::TwoPhase;
use crate::stats::{certificate_upper, run_level_p_value, run_level_passes, RunLabels};
use crate::summary::numbers::sig_up;

/// What one part of the traffic says about a candidate, on its new skips
/// (the turns it skips that the baseline fires on: the baseline adds no
/// new harm), with runs as the sampling unit.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Evidence {
    /// By the savings metric (per 1,000 turns).
    pub savings: f64,
    pub new_skips: u64,
    /// The labelled new skips and regressions by run.
    pub labels: RunLabels,
    /// Every new skip by run, each unlabelled one a regression.
    pub worst: RunLabels,
    /// An audit's two-phase parts (`calibrate --plan`): what stands for
    /// the worst case when present.
    pub audit: Option<TwoPhase>,
}

impl Evidence {
    /// Evidence where every label is its own run (independent labels):
    /// `skips` new skips, `labelled` of them labelled, `k` regressions.
    pub fn independent(savings: f64, skips: u64, labelled: u64, k: u64) -> Evidence {
        let unlabelled = skips - labelled;
        Evidence {
            savings,
            new_skips: skips,
            labels: RunLabels::independent(labelled, k),
            worst: RunLabels::independent(skips, k + unlabelled),
            audit: None,
        }
    }

    pub fn labelled_skips(&self) -> u64 {
        self.labels.labels
    }

    pub fn safety_regressions(&self) -> u64 {
        self.labels.regressions
    }

    /// Labelled new skips over new skips; None without new skips.
    pub fn coverage(&self) -> Option<f64> {
        (self.new_skips > 0).then(|| self.labels.labels as f64 / self.new_skips as f64)
    }

    /// The run-level upper bound at 1 - `alpha` a certificate rests on
    /// (each run at most one trial); None without labels.
    pub fn upper(&self, alpha: f64) -> Option<f64> {
        certificate_upper(&self.labels, alpha)
    }

    /// The bound that does not take the unlabelled new skips as missing
    /// at random: with an audit, its two-phase bound (each failed shadow
    /// call a regression); else every
    /// unlabelled new skip counted as a regression.
    pub fn worst_case_upper(&self, alpha: f64) -> Option<f64> {
        match &self.audit {
            Some(a) => a.upper(alpha, true),
            None => certificate_upper(&self.worst, alpha),
        }
    }

    /// Whether [`Evidence::worst_case_upper`] at 1 - `level` is within `r`.
    pub fn worst_case_passes(&self, r: f64, level: f64) -> bool {
        match &self.audit {
            Some(a) => a.upper(level, true).is_some_and(|u| u <= r),
            None => run_level_passes(&self.worst, r, level),
        }
    }

    /// Whether the bound at 1 - `alpha` is at most `r`: the test at level
    /// alpha (no labels: never).
    pub fn passes(&self, r: f64, alpha: f64) -> bool {
        run_level_passes(&self.labels, r, alpha)
    }

    /// The p-value of "the rate is R or more" that matches the bound: at
    /// most alpha exactly when the bound at 1 - alpha is at most R (1
    /// without labels).
    pub fn p_value(&self, r: f64) -> f64 {
        run_level_p_value(&self.labels, r)
    }
}

/// A variant that saves something, with its evidence on both parts.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub variant: String,
    pub learn: Evidence,
    pub calibration: Evidence,
}

/// How the family is tested (declared with `--procedure`'s names and
/// help).
pub use crate::options::Procedure;

/// What is asked: the rate, the confidence and the coverage floor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rule {
    pub max_regression_rate: f64,
    pub delta: f64,
    /// Below this label coverage (on either part) a candidate cannot be
    /// certified.
    pub min_label_coverage: f64,
    /// Certify on the labels alone, taking the unlabelled new skips to be
    /// missing at random; otherwise a candidate whose worst-case bound
    /// (every unlabelled new skip a regression) is above R is not
    /// certifiable.
    pub assume_missing_at_random: bool,
}

impl Rule {
    /// Whether the labels can support a certificate: the coverage floor,
    /// and unless missing at random is assumed, a worst-case bound within
    /// R (at delta: it does not depend on the labels' verdicts alone).
    fn covered(&self, e: &Evidence) -> bool {
        e.coverage().is_some_and(|c| c >= self.min_label_coverage)
            && (self.assume_missing_at_random || self.supported(e))
    }

    /// The bound a member is certified on, at 1 - delta: its labels' and,
    /// unless missing at random is assumed, its worst case's, the larger
    /// (so the learn part orders and prunes by what will be tested: a
    /// variant whose labels look safe but whose worst case is not must
    /// not push a certifiable one off the frontier).
    fn tested_bound(&self, e: &Evidence) -> f64 {
        let labels = e.upper(self.delta).unwrap_or(1.0);
        match self.assume_missing_at_random {
            true => labels,
            false => labels.max(e.worst_case_upper(self.delta).unwrap_or(1.0)),
        }
    }

    /// The worst-case bound at 1 - delta is within R.
    fn supported(&self, e: &Evidence) -> bool {
        e.worst_case_passes(self.max_regression_rate, self.delta)
    }

    /// The test at `level`: the labels' bound within R and, unless
    /// missing at random is assumed, the worst case's at the same level
    /// (so a procedure that splits delta splits this test too).
    fn passes(&self, e: &Evidence, level: f64) -> bool {
        let r = self.max_regression_rate;
        e.passes(r, level) && (self.assume_missing_at_random || e.worst_case_passes(r, level))
    }
}

/// One part's figures as calibration.json gives them (on new skips).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Figures {
    pub savings: f64,
    pub new_skips: u64,
    pub labelled_skips: u64,
    pub safety_regressions: u64,
    pub label_coverage: Option<f64>,
    pub labelled_runs: u64,
    pub design_effect: Option<f64>,
    /// At 1 - delta (run-level), rounded up.
    pub upper_bound: Option<f64>,
    /// Every unlabelled new skip a regression, at 1 - delta; with an
    /// audit, its two-phase bound.
    pub worst_case_upper_bound: Option<f64>,
    /// The worst-case bound is an audit's two-phase bound.
    pub two_phase: bool,
}

impl Figures {
    fn of(e: &Evidence, delta: f64) -> Figures {
        Figures {
            savings: e.savings,
            new_skips: e.new_skips,
            labelled_skips: e.labelled_skips(),
            safety_regressions: e.safety_regressions(),
            label_coverage: crate::summary::numbers::sig(e.coverage()),
            labelled_runs: e.labels.runs,
            design_effect: e.labels.design_effect,
            upper_bound: sig_up(e.upper(delta)),
            worst_case_upper_bound: sig_up(e.worst_case_upper(delta)),
            two_phase: e.audit.is_some(),
        }
    }
}

/// A member of the family, in testing order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Member {
    pub variant: String,
    pub learn: Figures,
    pub calibration: Figures,
    /// On the calibration part: the p-value of "the rate exceeds R" of
    /// the labels' test (the worst-case or two-phase guard is apart).
    pub p_value: f64,
    /// On the calibration part, every unlabelled skip a regression; with
    /// an audit that covers the member, its two-phase bound
    /// (`calibration.two_phase`).
    pub worst_case_upper_bound: Option<f64>,
    /// False: on the calibration part its coverage of new skips is below
    /// the floor, or (unless missing at random is assumed) its worst-case
    /// bound is above R.
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
        } else if !floor(rule, &c.learn) {
            Some(format!(
                "label coverage of its new skips {} on the learn part is below the floor {}: not certifiable",
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
        .map(|c| (rule.tested_bound(&c.learn), c))
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

/// A share or bound as the reasons and calibrated.toml's comments write
/// it ("none" when absent).
pub fn show_share(x: Option<f64>) -> String {
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

/// Each at delta in order; the first failure stops, and so does a member
/// whose worst-case bound is above R (that bound depends on its verdicts:
/// passing over it would let the sequence reach a later member only
/// because an earlier one looked bad). A member below the coverage floor
/// is passed over when labels are taken as missing at random (coverage
/// then says nothing of the verdicts), and stops the sequence otherwise.
fn fixed_sequence(fam: &[Candidate], rule: &Rule) -> (Vec<String>, String) {
    let mut certified = Vec::new();
    let r = rule.max_regression_rate;
    for c in fam {
        if !floor(rule, &c.calibration) {
            match rule.assume_missing_at_random {
                true => continue,
                false => return (certified, below_floor(c, rule)),
            }
        }
        if !c.calibration.passes(r, rule.delta) {
            return (certified, why_failed(c, rule, rule.delta));
        }
        if !rule.assume_missing_at_random && !rule.supported(&c.calibration) {
            return (certified, unsupported(c, rule));
        }
        certified.push(c.variant.clone());
    }
    (
        certified,
        end_of(fam, "every covered member of the family passed"),
    )
}

/// Why a member below the coverage floor stopped the sequence.
fn below_floor(c: &Candidate, rule: &Rule) -> String {
    format!(
        "{}: label coverage of its new skips {} on the calibration part is below the floor {}",
        c.variant,
        show_share(c.calibration.coverage()),
        rule.min_label_coverage
    )
}

/// At or above the coverage floor on new skips.
fn floor(rule: &Rule, e: &Evidence) -> bool {
    e.coverage().is_some_and(|c| c >= rule.min_label_coverage)
}

/// Why a member the labels cannot support stopped the sequence.
fn unsupported(c: &Candidate, rule: &Rule) -> String {
    if let Some(a) = &c.calibration.audit {
        return format!(
            "{}: its two-phase bound on the calibration part ({}: its {} labelled new skips' regressions as counted, the audit's bound on the {} unlabelled ones it covers with each failed shadow call a regression, {} it does not cover each a regression) is above R = {}; more of the audit's sample can lower it",
            c.variant,
            show_share(c.calibration.worst_case_upper(rule.delta)),
            c.calibration.labelled_skips(),
            (a.new_skips - c.calibration.labelled_skips()).saturating_sub(a.outside),
            a.outside,
            show(rule.max_regression_rate)
        );
    }
    crate::said![format!("{}: its worst-case bound on the calibration part ({}: every one of its {} unlabelled new skips a regression) is above R = {}; the labels cannot support a certificate (", c.variant, show_share(c.calibration.worst_case_upper(rule.delta)), c.calibration.new_skips - c.calibration.labelled_skips(), show(rule.max_regression_rate)), crate::vocab::Setting::AssumeMissingAtRandom, " certifies on the labels alone)"].to_string()
}

/// Holm's step-down (the uncovered count in m but cannot pass): while r
/// members remain, every remaining one whose bound at delta / r is within
/// R passes (the one with the least p-value passes exactly when any
/// does, and a pass only raises the next level).
fn holm(fam: &[Candidate], rule: &Rule) -> (Vec<String>, String) {
    let r = rule.max_regression_rate;
    let mut left: Vec<&Candidate> = fam.iter().collect();
    let mut certified = Vec::new();
    while !left.is_empty() {
        let level = rule.delta / left.len() as f64;
        let pass =
            |c: &&Candidate| floor(rule, &c.calibration) && rule.passes(&c.calibration, level);
        let (passed, rest): (Vec<&Candidate>, Vec<&Candidate>) = left.into_iter().partition(pass);
        if passed.is_empty() {
            // The remaining member nearest to passing, and what stops it.
            let stop = rest
                .iter()
                .filter(|c| floor(rule, &c.calibration))
                .min_by(|a, b| {
                    let u = |c: &Candidate| c.calibration.upper(level).unwrap_or(1.0);
                    u(a).total_cmp(&u(b))
                });
            let why = match stop {
                Some(c) if c.calibration.passes(r, level) => unsupported(c, rule),
                Some(c) => why_failed(c, rule, level),
                None => "no remaining member reaches the coverage floor".to_string(),
            };
            return (certified, why);
        }
        certified.extend(passed.iter().map(|c| c.variant.clone()));
        left = rest;
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
        .filter(|c| floor(rule, &c.calibration))
        .filter(|c| rule.passes(&c.calibration, level))
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
    let too_few = labels_needed(r, level).is_none_or(|n| e.labelled_skips() < n);
    let level = crate::summary::numbers::sig(Some(level)).unwrap_or(level);
    let head = format!(
        "{}: {} regressions in {} labelled new skips ({} runs) on the calibration part bound its rate at level {level} by {}, above {}",
        c.variant,
        e.safety_regressions(),
        e.labelled_skips(),
        e.labels.runs,
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
