//! `mine`: the traffic read both ways for one smart variant. Acks its
//! patterns miss (savings left on the table) become proposed patterns,
//! one per language, validated in the same run by a replay that adds each
//! to the variant's list; skips whose matched ack covers little of the
//! draft (where regressions hide) are listed; `--stress` adds short
//! content to every skipped draft and counts the skips that survive.

use std::path::Path;

use serde::Serialize;

use crate::config::{Plan, Variant};
use crate::gate::ack_patterns;
use crate::gate::pyre::PySet;
use crate::replay::{DecisionsMode, ReplayOptions};
use crate::stats::{clopper_pearson_upper, run_level_p_value, run_level_passes, RunLabels};
use crate::summary::figures::{RunSummary, VariantSummary};
use crate::summary::frontier::MIN_LABEL_COVERAGE;
use crate::Error;

use super::phrases::{cover, pattern};
use super::scan::{Scan, ScanSetup};

/// Phrases a proposal holds at most.
pub const MAX_PHRASES: usize = 8;

/// What `mine` is asked to do.
pub struct MineOptions {
    pub sources: Vec<String>,
    pub plan: Plan,
    /// The variant to mine (default: the first with the selective gate on).
    pub variant: Option<String>,
    pub min_support: u64,
    /// A proposal's new skips must hold at least this many labels.
    pub min_labelled: u64,
    /// Its new skips' upper 95% bound must be within this (None: the
    /// mined variant's own bound).
    pub max_regression_rate: Option<f64>,
    /// Test on the labels alone (else each worst case must pass too).
    pub assume_missing_at_random: bool,
    pub max_ack_share: f64,
    pub stress: bool,
    pub skip_invalid: bool,
    pub max_line_bytes: usize,
    /// Write into a non-empty folder that holds no earlier report.
    pub force: bool,
    /// The run's name in every table (default: the output folder's name,
    /// as a replay's).
    pub label: Option<String>,
    /// The input's format (`--from`).
    pub from: crate::import::InputFormat,
}

impl MineOptions {
    /// The run's name in the tables of mine writing into `out`.
    pub fn run_name(&self, out: &Path) -> String {
        self.label
            .clone()
            .unwrap_or_else(|| crate::replay::options::default_label(out))
    }
}

/// One proposed pattern, with what adding it did on the traffic.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Proposal {
    pub language: String,
    pub pattern: String,
    pub phrases: Vec<String>,
    /// Missed turns its phrases occur in.
    pub support: u64,
    /// Turns the variant fires on and the variant with the pattern skips.
    pub new_skips: u64,
    pub saved_usd: Option<f64>,
    pub new_labelled_skips: u64,
    pub new_safety_regressions: u64,
    /// Labelled new skips over new skips (the floor is 0.5).
    pub label_coverage: Option<f64>,
    /// Runs with a labelled new skip: the bound's sampling units.
    pub labelled_runs: u64,
    /// The run-level upper 95% bound of its rate on its new skips.
    pub new_regression_rate_upper95: Option<f64>,
    /// The run-level p-value of "its rate is at or above the budget".
    pub p_value: Option<f64>,
    /// Proposed: its new skips hold at least `--min-labelled` labels and
    /// the coverage floor, Holm's step-down over every tested pattern
    /// passes it against the budget, and the proposed patterns pass
    /// together ([`BundleCheck`]); else not, and `why`.
    pub proposed: bool,
    pub why: String,
}

/// The patterns tested together, and how (mine.json's `family`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Family {
    pub procedure: &'static str,
    /// The chance that any pattern whose true rate on its new skips is
    /// at or above the budget is proposed, at most.
    pub delta: f64,
    /// Every pattern tested (the candidates that skip something new):
    /// those below the label or coverage floor count in the family but
    /// cannot pass.
    pub members: Vec<String>,
    pub budget: Option<f64>,
    pub budget_from: &'static str,
    /// Tested on the labels alone (assumed missing at random), not on
    /// the worst case too.
    pub assume_missing_at_random: bool,
}

/// The proposed patterns validated as one bundle, on the bundle's own
/// new skips (a second replay: the mined variant with all of them).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BundleCheck {
    pub patterns: Vec<String>,
    pub new_skips: u64,
    pub new_labelled_skips: u64,
    pub new_safety_regressions: u64,
    pub label_coverage: Option<f64>,
    pub new_regression_rate_upper95: Option<f64>,
    pub passed: bool,
    pub why: String,
}

/// Risky skips of the variant, with their labels and regressions.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RiskySummary {
    pub max_ack_share: f64,
    pub skips: u64,
    pub risky_skips: u64,
    pub risky_labelled: u64,
    pub risky_safety_regressions: u64,
    pub risky_regression_rate_upper95: Option<f64>,
}

/// `mine.json`.
#[derive(Debug, Serialize)]
pub struct Mined {
    pub variant: String,
    pub turns: u64,
    pub rejected: u64,
    pub missed_turns: u64,
    pub proposals: Vec<Proposal>,
    pub family: Option<Family>,
    pub bundle: Option<BundleCheck>,
    pub risky: RiskySummary,
    pub stress: Option<StressSummary>,
    pub notes: Vec<String>,
}

/// `--stress`: per transformation, the skips that survived it.
#[derive(Debug, Serialize)]
pub struct StressSummary {
    pub tested_skips: u64,
    pub survived: Vec<(String, bool, u64)>,
    /// Skips a claim-adding transformation left: 0, or a bug in the port.
    pub claim_survivors: u64,
}

/// The variant to mine: named, else the first with the flag on.
pub fn mined_variant(o: &MineOptions) -> crate::Result<&Variant> {
    let vs = &o.plan.variants;
    let found = match &o.variant {
        Some(n) => vs.iter().find(|v| &v.name == n),
        None => vs.iter().find(|v| v.config.metacognition_selective_gate),
    };
    let names = || {
        vs.iter()
            .map(|v| v.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let v = found.ok_or_else(|| match &o.variant {
        Some(n) => Error::usage(crate::said![
            crate::options::Setting::MinedVariant,
            format!(
                " {n:?}, the one to mine, is not a variant of the config; its variants are: {}",
                names()
            )
        ]),
        None => Error::usage(crate::said![
            format!(
                "no variant has metacognition_selective_gate = true ({}): name one with ",
                names()
            ),
            crate::options::Setting::MinedVariant
        ]),
    })?;
    if !v.config.metacognition_selective_gate {
        return Err(Error::usage(format!(
            "variant {} has the selective gate off: it skips no ack and misses none; mine a smart variant",
            v.name
        )));
    }
    Ok(v)
}

/// A candidate: its language, its phrases and how many missed turns they
/// cover.
pub type Candidate = (String, Vec<String>, u64);

/// One candidate pattern per language, from its missed drafts.
pub fn candidates(scan: &Scan, min_support: u64) -> Vec<Candidate> {
    let mut out = Vec::new();
    for (lang, drafts) in &scan.missed {
        let chosen = cover(drafts, min_support, MAX_PHRASES);
        if chosen.is_empty() {
            continue;
        }
        let support = drafts
            .iter()
            .filter(|(d, _)| {
                super::phrases::phrases(d)
                    .iter()
                    .any(|p| chosen.contains(p))
            })
            .map(|(_, m)| m.turns)
            .sum();
        out.push((lang.clone(), chosen, support));
    }
    out
}

/// A proposal's variant in the validation replay: named by its language.
fn proposal_name(lang: &str) -> String {
    let l: String = lang.chars().filter(|c| !matches!(c, '(' | ')')).collect();
    format!("proposal-{l}")
}

/// The rule a proposal is held to: labels, and a budget for its bound.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Budget {
    pub min_labelled: u64,
    /// None: no budget can be met (the mined variant has no bound).
    pub max_upper95: Option<f64>,
    /// Where the budget comes from.
    pub from: &'static str,
    /// Tested on the labels alone; else the worst case (every unlabelled
    /// new skip a regression) must pass at the same level too.
    pub assume_missing_at_random: bool,
}

impl Budget {
    /// Whether `p`'s new skips pass `max` at `level`: their labels' bound
    /// and, unless missing at random is assumed, their worst case's (a
    /// critic that fails on the turns it would revise leaves exactly
    /// those unlabelled: a pattern at a true 0.08 with 84% coverage was
    /// proposed against 0.05 in 100 of 100 replicates on its labels
    /// alone).
    fn passes(&self, p: &VariantSummary, max: f64, level: f64) -> bool {
        run_level_passes(&labels_of(p), max, level)
            && (self.assume_missing_at_random || run_level_passes(&worst_of(p), max, level))
    }

    /// The p-value matching [`Budget::passes`]: the larger of the two
    /// tests' (the test passes at a level exactly when both do).
    fn p_value(&self, p: &VariantSummary, max: f64) -> f64 {
        let labels = run_level_p_value(&labels_of(p), max);
        match self.assume_missing_at_random {
            true => labels,
            false => labels.max(run_level_p_value(&worst_of(p), max)),
        }
    }
}

/// The validation replay's plan: the mined variant (the baseline) and
/// one variant per candidate, its list plus the candidate's pattern.
fn validation_plan(o: &MineOptions, v: &Variant, cands: &[Candidate]) -> Plan {
    let mut variants = vec![Variant {
        name: "mined".into(),
        config: v.config.clone(),
        deployment: None,
    }];
    for (i, (_, phrases, _)) in cands.iter().enumerate() {
        let mut config = v.config.clone();
        config.metacognition_trivial_ack_patterns = ack_patterns(&v.config);
        config
            .metacognition_trivial_ack_patterns
            .push(pattern(phrases));
        variants.push(Variant {
            name: proposal_name(&cands[i].0),
            config,
            deployment: None,
        });
    }
    Plan {
        variants,
        baseline: 0,
        production: None,
        cost: o.plan.cost.clone(),
        check: Default::default(),
        monitor: Default::default(),
        // The mined variant's deployment, so that each turn is derived
        // once, as it sees it.
        deployment: v
            .deployment
            .clone()
            .unwrap_or_else(|| o.plan.deployment.clone()),
    }
}

/// A validation variant's new skips (turns the mined variant fires on
/// and it skips) by run, as its summary publishes them.
/// Every new skip by run, each unlabelled one a regression, as the
/// summary publishes it.
fn worst_of(p: &VariantSummary) -> RunLabels {
    RunLabels {
        runs: p.new_skip_runs,
        labels: p.new_skips,
        regressions: p.safety_regressions + (p.new_skips - p.new_labelled_skips),
        design_effect: p.worst_case_design_effect,
        effective_runs: p.worst_case_effective_runs.unwrap_or(0.0),
    }
}

fn labels_of(p: &VariantSummary) -> RunLabels {
    RunLabels {
        runs: p.labelled_runs,
        labels: p.new_labelled_skips,
        regressions: p.safety_regressions,
        design_effect: p.design_effect,
        effective_runs: p.effective_runs.unwrap_or(0.0),
    }
}

/// Why a pattern cannot be proposed whatever its verdicts say, if so:
/// nothing new skipped, too few labels, coverage below the floor, or no
/// budget.
fn ineligible(p: &VariantSummary, b: &Budget) -> Option<String> {
    let coverage = p.label_coverage.unwrap_or(0.0);
    match (p.new_skips, b.max_upper95) {
        (0, _) => Some("it skips nothing new".to_string()),
        _ if p.new_labelled_skips < b.min_labelled => Some(crate::said![format!("{} of its new skips are labelled, fewer than ", p.new_labelled_skips), crate::vocab::Setting::MinLabelled, format!(" {}: too little evidence", b.min_labelled)].to_string()),
        _ if coverage < MIN_LABEL_COVERAGE => Some(format!(
            "{} of its {} new skips are labelled (coverage {coverage:.3}), below the floor {MIN_LABEL_COVERAGE}: its bound would rest more on the unlabelled ones being like the labelled than on labels",
            p.new_labelled_skips, p.new_skips
        )),
        (_, None) => Some(crate::said!["the mined variant has no bound to hold it to: give ", crate::vocab::Setting::MaxRegressionRate].to_string()),
        _ => None,
    }
}

/// Decide every candidate: Holm's step-down at [`DELTA`] over the
/// patterns that skip something new, each tested on its own new skips
/// against the budget (run-level p-values); a pattern below the label
/// or coverage floor counts in the family but cannot pass.
pub fn decide(cands: &[Candidate], vs: &[&VariantSummary], b: &Budget) -> (Vec<Proposal>, Family) {
    let members: Vec<usize> = (0..cands.len()).filter(|&i| vs[i].new_skips > 0).collect();
    let mut passed = vec![None; cands.len()];
    if let Some(max) = b.max_upper95 {
        let mut left: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&i| ineligible(vs[i], b).is_none())
            .collect();
        let mut remaining = members.len();
        loop {
            let level = DELTA / remaining.max(1) as f64;
            let (pass, rest): (Vec<usize>, Vec<usize>) =
                left.iter().partition(|&&i| b.passes(vs[i], max, level));
            if pass.is_empty() {
                break;
            }
            for &i in &pass {
                passed[i] = Some(level);
            }
            remaining -= pass.len();
            left = rest;
        }
    }
    let proposals = cands
        .iter()
        .enumerate()
        .map(|(i, c)| proposal(c, vs[i], b, passed[i], members.len()))
        .collect();
    let family = Family {
        procedure: "holm",
        delta: DELTA,
        members: members.iter().map(|&i| cands[i].0.clone()).collect(),
        budget: b.max_upper95,
        budget_from: b.from,
        assume_missing_at_random: b.assume_missing_at_random,
    };
    (proposals, family)
}

/// The chance that any tested pattern whose true rate is at or above the
/// budget is proposed, at most.
pub const DELTA: f64 = 0.05;

/// One candidate's figures and verdict.
fn proposal(
    (lang, phrases, support): &Candidate,
    p: &VariantSummary,
    b: &Budget,
    passed_at: Option<f64>,
    m: usize,
) -> Proposal {
    let why = match (ineligible(p, b), passed_at, b.max_upper95) {
        (Some(why), _, _) => why,
        (None, Some(level), _) => format!(
            "{} labelled new skips over {} runs bound its rate within the budget ({}) at Holm's level {} of {m} patterns tested",
            p.new_labelled_skips,
            p.labelled_runs,
            b.from,
            crate::summary::numbers::sig(Some(level)).unwrap_or(level)
        ),
        (None, None, max) => format!(
            "{} regressions in {} labelled new skips over {} runs{}: its rate is not shown within the budget {} ({}) at Holm's levels over {m} patterns tested",
            p.safety_regressions,
            p.new_labelled_skips,
            p.labelled_runs,
            unlabelled_counted(p, b),
            max.map_or("none".into(), |m| m.to_string()),
            b.from
        ),
    };
    Proposal {
        language: lang.to_string(),
        pattern: pattern(phrases),
        phrases: phrases.to_vec(),
        support: *support,
        new_skips: p.new_skips,
        saved_usd: p.saved_usd,
        new_labelled_skips: p.new_labelled_skips,
        new_safety_regressions: p.safety_regressions,
        label_coverage: p.label_coverage,
        labelled_runs: p.labelled_runs,
        new_regression_rate_upper95: p.safety_regression_rate_upper95,
        p_value: b
            .max_upper95
            .filter(|_| p.new_labelled_skips > 0)
            .map(|max| b.p_value(p, max)),
        proposed: passed_at.is_some(),
        why,
    }
}

/// The bound a pattern or bundle is tested on: its certificate's and,
/// unless missing at random is assumed, its worst case's, the larger.
fn tested_bound(p: &VariantSummary, b: &Budget) -> Option<f64> {
    let labels = p.safety_regression_rate_certificate_upper95;
    match b.assume_missing_at_random {
        true => labels,
        false => match (labels, p.safety_regression_rate_worst_case_upper95) {
            (Some(l), Some(w)) => Some(l.max(w)),
            (l, w) => l.or(w),
        },
    }
}

/// ", and N unlabelled new skips each counted a regression" where the
/// worst case is tested and something is unlabelled.
fn unlabelled_counted(p: &VariantSummary, b: &Budget) -> String {
    let unlabelled = p.new_skips - p.new_labelled_skips;
    match b.assume_missing_at_random || unlabelled == 0 {
        true => String::new(),
        false => format!(
            ", and {unlabelled} unlabelled new skips each counted a regression (the worst case)"
        ),
    }
}

/// Judge the proposed patterns as one bundle on the bundle's own new
/// skips (`bundle`, from a replay of the mined variant with all of
/// them): the label and coverage floors and its bound within the budget
/// at delta. A failing bundle holds every pattern back.
pub fn check_bundle(
    proposals: &mut [Proposal],
    bundle: &VariantSummary,
    b: &Budget,
) -> BundleCheck {
    let passes = b
        .max_upper95
        .is_some_and(|max| b.passes(bundle, max, DELTA));
    let why = match (ineligible(bundle, b), passes) {
        (Some(why), _) => format!("the proposed patterns together: {why}"),
        (None, false) => format!(
            "the proposed patterns together: {} regressions in {} labelled new skips{} bound their rate by {}, above the budget ({})",
            bundle.safety_regressions,
            bundle.new_labelled_skips,
            unlabelled_counted(bundle, b),
            tested_bound(bundle, b).map_or("none".into(), |u| u.to_string()),
            b.from
        ),
        (None, true) => String::new(),
    };
    let passed = why.is_empty();
    let patterns = proposals
        .iter()
        .filter(|p| p.proposed)
        .map(|p| p.pattern.clone())
        .collect();
    if !passed {
        for p in proposals.iter_mut().filter(|p| p.proposed) {
            p.proposed = false;
            p.why = format!("held back with the bundle: {why}");
        }
    }
    BundleCheck {
        patterns,
        new_skips: bundle.new_skips,
        new_labelled_skips: bundle.new_labelled_skips,
        new_safety_regressions: bundle.safety_regressions,
        label_coverage: bundle.label_coverage,
        new_regression_rate_upper95: bundle.safety_regression_rate_upper95,
        passed,
        why: match passed {
            true => "the proposed patterns together stay within the budget on their own new skips"
                .to_string(),
            false => why,
        },
    }
}

/// The replay that validates the candidates into `dir`: the mined variant
/// and one variant per candidate (see [`proposals`]).
pub fn validation_replay(
    o: &MineOptions,
    v: &Variant,
    cands: &[Candidate],
    dir: &Path,
) -> ReplayOptions {
    let plan = validation_plan(o, v, cands);
    let mut replay = ReplayOptions::new(o.sources.clone(), plan, o.run_name(dir));
    replay.input.skip_invalid = o.skip_invalid;
    replay.input.max_line_bytes = o.max_line_bytes;
    replay.input.from = o.from;
    replay.tallies.decisions = DecisionsMode::None;
    replay.tallies.detail = false;
    replay.tallies.max_ack_share = o.max_ack_share;
    replay.outputs.notes = vec![format!(
        "mine's validation of variant {}: proposal-N adds the Nth proposed pattern to its list",
        v.name
    )];
    replay
}

/// The budget a pattern is held to.
pub fn budget(o: &MineOptions, m: &VariantSummary) -> Budget {
    match o.max_regression_rate {
        Some(r) => Budget {
            min_labelled: o.min_labelled,
            max_upper95: Some(r),
            from: crate::vocab::Setting::MaxRegressionRate.flag(),
            assume_missing_at_random: o.assume_missing_at_random,
        },
        None => Budget {
            min_labelled: o.min_labelled,
            max_upper95: m
                .safety_regression_rate_upper95
                .or(m.all_skips_regression_rate_upper95),
            from: "the mined variant's own upper 95% bound",
            assume_missing_at_random: o.assume_missing_at_random,
        },
    }
}

/// What each candidate adds, read from the validation replay's summary.
pub fn proposals(
    o: &MineOptions,
    cands: &[Candidate],
    run: &RunSummary,
) -> (Vec<Proposal>, Family) {
    let m = &run.variants["mined"];
    let b = budget(o, m);
    let vs: Vec<&VariantSummary> = cands
        .iter()
        .map(|(lang, _, _)| &run.variants[&proposal_name(lang)])
        .collect();
    decide(cands, &vs, &b)
}

/// The replay that validates the proposed patterns together into `dir`:
/// the mined variant and `bundle`, its list plus every proposed pattern.
pub fn bundle_replay(
    o: &MineOptions,
    v: &Variant,
    proposed: &[&Proposal],
    dir: &Path,
) -> ReplayOptions {
    let mut config = v.config.clone();
    config.metacognition_trivial_ack_patterns = ack_patterns(&v.config);
    config
        .metacognition_trivial_ack_patterns
        .extend(proposed.iter().map(|p| p.pattern.clone()));
    let mut replay = validation_replay(o, v, &[], dir);
    replay.plan.variants.push(Variant {
        name: "bundle".into(),
        config,
        deployment: None,
    });
    replay.outputs.notes = vec![format!(
        "mine's validation of the proposed patterns together: bundle adds every one to variant {}'s list",
        v.name
    )];
    replay
}

/// The risky skips' counts and bound.
fn risky_summary(scan: &Scan, max: f64) -> RiskySummary {
    // Every risky skip's label, listed in risky_skips.csv or not.
    let t = scan.risky_totals;
    RiskySummary {
        max_ack_share: max,
        skips: scan.skips,
        risky_skips: t.skips,
        risky_labelled: t.labelled,
        risky_safety_regressions: t.safety_regressions,
        risky_regression_rate_upper95: crate::summary::numbers::sig_up(clopper_pearson_upper(
            t.safety_regressions,
            t.labelled,
            0.05,
        )),
    }
}

/// Scan `o`'s traffic as variant `v`'s gate sees it.
pub fn scan(o: &MineOptions, v: &Variant, stopped: &dyn Fn() -> bool) -> crate::Result<Scan> {
    let setup = ScanSetup {
        config: &v.config,
        cost: &o.plan.cost,
        max_ack_share: o.max_ack_share,
        stress: o.stress,
        skip_invalid: o.skip_invalid,
        decoder: crate::import::Decoder::new(
            o.from,
            v.deployment
                .clone()
                .unwrap_or_else(|| o.plan.deployment.clone()),
            o.sources.clone().into(),
            o.max_line_bytes,
        ),
        stopped,
    };
    super::scan::scan(&o.sources, o.max_line_bytes, &setup)
}

/// Why no pattern was proposed: nothing fired for want of an ack, or no
/// phrase recurs often enough in one language's missed drafts.
fn nothing_to_propose(o: &MineOptions, scan: &Scan) -> String {
    let turns = |drafts: &std::collections::BTreeMap<String, super::phrases::Missed>| -> u64 {
        drafts.values().map(|m| m.turns).sum()
    };
    let most = scan
        .missed
        .iter()
        .map(|(lang, d)| (turns(d), lang))
        .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(a.1)));
    match most {
        None | Some((0, _)) => "nothing proposed: no turn fires for want of an ack pattern alone, so no pattern would save a call".to_string(),
        Some((n, lang)) => crate::said!["nothing proposed: no phrase recurs in ", crate::vocab::Setting::MinSupport, format!(" {} or more missed drafts of one language (the most missed turns in one language: {n}, {lang}); mine more traffic, or lower ", o.min_support), crate::vocab::Setting::MinSupport].to_string(),
    }
}

/// What was mined: the counts, the proposals and the notes.
pub fn summarise(
    o: &MineOptions,
    v: &Variant,
    scan: &Scan,
    (proposals, family, bundle): (Vec<Proposal>, Option<Family>, Option<BundleCheck>),
) -> Mined {
    let mut notes = Vec::new();
    if proposals.is_empty() {
        notes.push(nothing_to_propose(o, scan));
    }
    if scan.missed_unlisted > 0 {
        notes.push(format!(
            "{} missed turns past {} distinct drafts are counted, not listed",
            scan.missed_unlisted,
            super::scan::MAX_MISSED
        ));
    }
    if scan.risky_unlisted > 0 {
        notes.push(format!(
            "{} risky skips past {} are counted, not listed",
            scan.risky_unlisted,
            super::scan::MAX_RISKY
        ));
    }
    let stress = scan.stress.as_ref().map(|s| StressSummary {
        tested_skips: s.tested,
        survived: super::stress::TRANSFORMS
            .iter()
            .zip(&s.survived)
            .map(|(t, n)| (t.name.to_string(), t.adds_claim, *n))
            .collect(),
        claim_survivors: s.claim_survivors(),
    });
    Mined {
        variant: v.name.clone(),
        turns: scan.turns,
        rejected: scan.rejected,
        missed_turns: scan
            .missed
            .values()
            .flat_map(|d| d.values())
            .map(|m| m.turns)
            .sum::<u64>()
            + scan.missed_unlisted,
        proposals,
        family,
        bundle,
        risky: risky_summary(scan, o.max_ack_share),
        stress,
        notes,
    }
}

/// Whether a proposed pattern matches a lowered, stripped draft.
pub fn covers(patterns: &[PySet], lowered: &str) -> bool {
    patterns
        .iter()
        .any(|p| p.is_match(lowered).unwrap_or(false))
}

#[cfg(test)]
mod tests {
    //! `mine`'s proposals held by simulation (#33): many patterns tested
    //! at once, thinly labelled ones, and the bundle. Set
    //! CRITIC_GATE_SIM_FULL=1 for the full replicate count.

    use super::*;

    /// The repository's seeded generator (splitmix64).
    use crate::stats::SplitMix as Rng;

    /// A pattern's validation figures: `runs` runs of `per_run` new
    /// skips, each labelled with chance `coverage`, revised with chance
    /// `rate` times the run's factor (2 with probability 1/2, else 0).
    fn pattern_figures(
        rng: &mut Rng,
        runs: u64,
        per_run: u64,
        coverage: f64,
        rate: f64,
    ) -> VariantSummary {
        figures_of(&pattern_runs(rng, runs, per_run, coverage, rate), per_run)
    }

    /// Each run's (labelled, regressions), as [`pattern_figures`] draws them.
    fn pattern_runs(
        rng: &mut Rng,
        runs: u64,
        per_run: u64,
        coverage: f64,
        rate: f64,
    ) -> Vec<(u64, u64)> {
        let mut per = Vec::new();
        for _ in 0..runs {
            let f = if rng.next() < 0.5 { 2.0 } else { 0.0 };
            let (mut n, mut k) = (0, 0);
            for _ in 0..per_run {
                if rng.next() < coverage {
                    n += 1;
                    k += u64::from(rng.next() < rate * f);
                }
            }
            per.push((n, k));
        }
        per
    }

    /// A validation variant's figures from its runs of `per_run` new skips.
    fn figures_of(per: &[(u64, u64)], per_run: u64) -> VariantSummary {
        let l = crate::summary::build::published(RunLabels::of(per.iter().copied()));
        let new_skips = per.len() as u64 * per_run;
        VariantSummary {
            new_skips,
            saved_calls: new_skips,
            new_labelled_skips: l.labels,
            safety_regressions: l.regressions,
            labelled_runs: l.runs,
            design_effect: l.design_effect,
            effective_runs: Some(l.effective_runs),
            label_coverage: Some(l.labels as f64 / new_skips as f64),
            safety_regression_rate_upper95: crate::stats::run_level_upper(&l, 0.05),
            ..Default::default()
        }
    }

    fn cands(n: usize) -> Vec<Candidate> {
        (0..n)
            .map(|i| (format!("l{i}"), vec![format!("phrase{i}")], 10))
            .collect()
    }

    const BUDGET: Budget = Budget {
        min_labelled: 30,
        max_upper95: Some(0.05),
        from: crate::vocab::Setting::MaxRegressionRate.flag(),
        assume_missing_at_random: true,
    };

    /// The review's case of labels missing where the critic fails: a
    /// pattern at a true 0.08 on its new skips against 0.05, its critic
    /// failing on every turn it would revise and labelling 91.3% of the
    /// rest (84% coverage), 600 runs of ten. On its labels alone (no
    /// regression among them) it was proposed in 100 of 100; tested on its
    /// worst case too, in at most 5% of replicates, while assuming missing
    /// at random proposes it in most (so the simulation tells them apart).
    #[test]
    fn a_pattern_whose_critic_fails_where_it_would_revise_is_not_proposed() {
        let n = match std::env::var_os("CRITIC_GATE_SIM_FULL") {
            Some(_) => 1000,
            None => 100,
        };
        let mut rng = Rng(0x84c0);
        let (mut strict, mut assumed) = (0u64, 0u64);
        for _ in 0..n {
            let runs: Vec<(u64, u64, u64)> = (0..600)
                .map(|_| {
                    // A revised turn is never labelled: no regression
                    // reaches the labels.
                    let labelled = (0..10)
                        .filter(|_| rng.next() >= 0.08 && rng.next() < 0.913)
                        .count() as u64;
                    (10, labelled, 0)
                })
                .collect();
            let v = crate::summary::build::of_runs("p", &runs);
            for (assume, count) in [(false, &mut strict), (true, &mut assumed)] {
                let b = Budget {
                    assume_missing_at_random: assume,
                    ..BUDGET
                };
                let (mut props, _) = decide(&cands(1), &[&v], &b);
                if props[0].proposed {
                    check_bundle(&mut props, &v, &b);
                }
                *count += u64::from(props[0].proposed);
            }
        }
        eprintln!("mine, critic fails where it would revise (true 0.08 against 0.05, 84% coverage): proposed in {strict} of {n}; assuming missing at random {assumed} of {n}");
        assert!(strict as f64 <= 0.05 * n as f64, "{strict} of {n}");
        assert!(
            assumed as f64 >= 0.5 * n as f64,
            "the control: {assumed} of {n}"
        );
    }

    /// The review's case: eight patterns at a true rate of 0.052 on their
    /// new skips (the budget is 0.05), about 370 labels each in runs of
    /// ten: tested one by one at 5%, at least one was proposed in 16 of
    /// 60 replicates. Holm's step-down over the eight, then the bundle of
    /// what it proposes tested on its own new skips, puts one in
    /// proposals.toml in at most 5% of them; the one-by-one control shows
    /// the simulation can tell.
    #[test]
    fn eight_near_budget_patterns_are_rarely_proposed() {
        let n = match std::env::var_os("CRITIC_GATE_SIM_FULL") {
            Some(_) => 600,
            None => 60,
        };
        let mut rng = Rng(0x8a7);
        let (mut holm, mut one_by_one) = (0u64, 0u64);
        for _ in 0..n {
            let runs: Vec<Vec<(u64, u64)>> = (0..8)
                .map(|_| pattern_runs(&mut rng, 41, 10, 0.9, 0.052))
                .collect();
            let figs: Vec<VariantSummary> = runs.iter().map(|r| figures_of(r, 10)).collect();
            let vs: Vec<&VariantSummary> = figs.iter().collect();
            let (mut props, family) = decide(&cands(8), &vs, &BUDGET);
            assert_eq!(family.members.len(), 8);
            // The bundle: the proposed patterns' new skips together.
            let together: Vec<(u64, u64)> = props
                .iter()
                .zip(&runs)
                .filter(|(p, _)| p.proposed)
                .flat_map(|(_, r)| r.iter().copied())
                .collect();
            if !together.is_empty() {
                check_bundle(&mut props, &figures_of(&together, 10), &BUDGET);
            }
            holm += u64::from(props.iter().any(|p| p.proposed));
            // The control is the review's procedure: each pattern alone,
            // its per-turn Clopper-Pearson bound at 5%.
            one_by_one += u64::from(figs.iter().any(|f| {
                clopper_pearson_upper(f.safety_regressions, f.new_labelled_skips, 0.05)
                    .is_some_and(|u| u <= 0.05)
            }));
        }
        eprintln!("mine, eight patterns at 0.052: one lands in proposals.toml in {holm} of {n} replicates (Holm, then the bundle), one by one at 5% in {one_by_one}");
        // At full size the share itself is held to 5%; at 60 replicates
        // the share's sampling error is about 2.5 points, so the 95%
        // interval's lower end is (0 of 60 here, and 0 of 600 at full
        // size; the control 29 of 60 and 218 of 600).
        let share = holm as f64 / n as f64;
        let lower = match holm {
            0 => 0.0,
            k => 1.0 - crate::stats::clopper_pearson_upper(n - k, n, 0.025).unwrap(),
        };
        assert!(lower <= 0.05 && (n < 600 || share <= 0.05), "{holm} of {n}");
        assert!(
            one_by_one > 2 * holm.max(1),
            "the control: {one_by_one} of {n}"
        );
    }

    /// The review's other case: patterns at true rates of 0.11 to 0.14
    /// with about 19% of their new skips labelled (the critic failing on
    /// them) were proposed; below the coverage floor none is, whatever
    /// its labels say.
    #[test]
    fn thinly_labelled_patterns_are_never_proposed() {
        let mut rng = Rng(0x19);
        let figs: Vec<VariantSummary> = (0..8)
            .map(|i| pattern_figures(&mut rng, 200, 10, 0.19, 0.11 + 0.004 * i as f64))
            .collect();
        // Labels as if only the approved turns were kept: no regression.
        let figs: Vec<VariantSummary> = figs
            .into_iter()
            .map(|f| VariantSummary {
                safety_regressions: 0,
                design_effect: None,
                ..f
            })
            .collect();
        let vs: Vec<&VariantSummary> = figs.iter().collect();
        let (props, _) = decide(&cands(8), &vs, &BUDGET);
        for p in &props {
            assert!(
                !p.proposed && p.why.contains("below the floor 0.5"),
                "{p:?}"
            );
        }
    }

    /// A bundle whose own new skips fail the budget holds back every
    /// pattern, each saying why; a passing one keeps them.
    #[test]
    fn a_failing_bundle_holds_every_pattern_back() {
        let mut rng = Rng(0xb0);
        let good = pattern_figures(&mut rng, 300, 10, 0.9, 0.0);
        let vs = vec![&good, &good];
        let (mut props, _) = decide(&cands(2), &vs, &BUDGET);
        assert!(props.iter().all(|p| p.proposed));
        let bad = pattern_figures(&mut rng, 300, 10, 0.9, 0.08);
        let b = check_bundle(&mut props, &bad, &BUDGET);
        assert!(!b.passed && b.patterns.len() == 2, "{b:?}");
        assert!(props
            .iter()
            .all(|p| !p.proposed && p.why.starts_with("held back with the bundle")));
        let (mut props, _) = decide(&cands(2), &vs, &BUDGET);
        assert!(check_bundle(&mut props, &good, &BUDGET).passed);
        assert!(props.iter().all(|p| p.proposed));
    }
}
