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
use crate::stats::clopper_pearson_upper;
use crate::summary::figures::{RunSummary, VariantSummary};
use crate::Error;

pub mod phrases;
pub mod scan;
pub mod stress;

use phrases::{cover, pattern};
use scan::{Scan, ScanSetup};

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
    pub new_regression_rate_upper95: Option<f64>,
    /// Proposed: its new skips hold at least `--min-labelled` labels and
    /// their upper 95% bound is within the budget; else not, and `why`.
    pub proposed: bool,
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
        Some(n) => Error::Usage(format!(
            "--variant {n:?} is not a variant of the config; its variants are: {}",
            names()
        )),
        None => Error::Usage(format!(
            "no variant has metacognition_selective_gate = true ({}): name one with --variant",
            names()
        )),
    })?;
    if !v.config.metacognition_selective_gate {
        return Err(Error::Usage(format!(
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
            .filter(|(d, _)| phrases::phrases(d).iter().any(|p| chosen.contains(p)))
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
}

/// The validation replay's plan: the mined variant (the baseline) and
/// one variant per candidate, its list plus the candidate's pattern.
fn validation_plan(o: &MineOptions, v: &Variant, cands: &[Candidate]) -> Plan {
    let mut variants = vec![Variant {
        name: "mined".into(),
        config: v.config.clone(),
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
        });
    }
    Plan {
        variants,
        baseline: 0,
        cost: o.plan.cost.clone(),
        check: Default::default(),
        deployment: o.plan.deployment.clone(),
    }
}

/// What a candidate's variant adds over the mined one, judged by rates.
fn proposal(
    (lang, phrases, support): (&str, &[String], u64),
    p: &VariantSummary,
    m: &VariantSummary,
    b: &Budget,
) -> Proposal {
    let new_labelled = p.all_skips_labelled - m.all_skips_labelled;
    let new_regressions = p.all_skips_safety_regressions - m.all_skips_safety_regressions;
    let upper = clopper_pearson_upper(new_regressions, new_labelled, 0.05);
    // A pattern that skips nothing new (its phrase never matches as the
    // gate matches: a joiner inside a word, a mark after a letter) is no
    // proposal either.
    let why = match (p.saved_calls, b.max_upper95, upper) {
        (0, _, _) => "it skips nothing new".to_string(),
        _ if new_labelled < b.min_labelled => format!(
            "{new_labelled} of its new skips are labelled, fewer than --min-labelled {}: too little evidence",
            b.min_labelled
        ),
        (_, None, _) => "the mined variant has no bound to hold it to: give --max-regression-rate".to_string(),
        (_, Some(max), Some(u)) if u > max => format!(
            "{new_regressions} regressions in {new_labelled} labelled new skips bound its rate by {}, above the budget {max} ({})",
            crate::summary::numbers::sig_up(Some(u)).unwrap_or(u),
            b.from
        ),
        _ => String::new(),
    };
    Proposal {
        language: lang.to_string(),
        pattern: pattern(phrases),
        phrases: phrases.to_vec(),
        support,
        new_skips: p.saved_calls,
        saved_usd: p.saved_usd,
        new_labelled_skips: new_labelled,
        new_safety_regressions: new_regressions,
        new_regression_rate_upper95: crate::summary::numbers::sig_up(upper),
        proposed: why.is_empty(),
        why: match why.is_empty() {
            true => format!(
                "{new_labelled} labelled new skips bound its rate within the budget ({})",
                b.from
            ),
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

/// What each candidate adds, read from the validation replay's summary.
pub fn proposals(o: &MineOptions, cands: &[Candidate], run: &RunSummary) -> Vec<Proposal> {
    let m = &run.variants["mined"];
    let budget = match o.max_regression_rate {
        Some(r) => Budget {
            min_labelled: o.min_labelled,
            max_upper95: Some(r),
            from: "--max-regression-rate",
        },
        None => Budget {
            min_labelled: o.min_labelled,
            max_upper95: m.safety_regression_rate_upper95,
            from: "the mined variant's own upper 95% bound",
        },
    };
    cands
        .iter()
        .map(|(lang, ph, support)| {
            let v = &run.variants[&proposal_name(lang)];
            proposal((lang, ph, *support), v, m, &budget)
        })
        .collect()
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
pub fn scan(o: &MineOptions, v: &Variant) -> crate::Result<Scan> {
    let setup = ScanSetup {
        config: &v.config,
        cost: &o.plan.cost,
        max_ack_share: o.max_ack_share,
        stress: o.stress,
        skip_invalid: o.skip_invalid,
        decoder: crate::import::Decoder {
            format: o.from,
            deployment: o.plan.deployment.clone(),
            names: o.sources.clone().into(),
            max_line_bytes: o.max_line_bytes,
        },
    };
    scan::scan(&o.sources, o.max_line_bytes, &setup)
}

/// Why no pattern was proposed: nothing fired for want of an ack, or no
/// phrase recurs often enough in one language's missed drafts.
fn nothing_to_propose(o: &MineOptions, scan: &Scan) -> String {
    let turns = |drafts: &std::collections::BTreeMap<String, phrases::Missed>| -> u64 {
        drafts.values().map(|m| m.turns).sum()
    };
    let most = scan
        .missed
        .iter()
        .map(|(lang, d)| (turns(d), lang))
        .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(a.1)));
    match most {
        None | Some((0, _)) => "nothing proposed: no turn fires for want of an ack pattern alone, so no pattern would save a call".to_string(),
        Some((n, lang)) => format!(
            "nothing proposed: no phrase recurs in --min-support {} or more missed drafts of one language (the most missed turns in one language: {n}, {lang}); mine more traffic, or lower --min-support",
            o.min_support
        ),
    }
}

/// What was mined: the counts, the proposals and the notes.
pub fn summarise(o: &MineOptions, v: &Variant, scan: &Scan, proposals: Vec<Proposal>) -> Mined {
    let mut notes = Vec::new();
    if proposals.is_empty() {
        notes.push(nothing_to_propose(o, scan));
    }
    if scan.missed_unlisted > 0 {
        notes.push(format!(
            "{} missed turns past {} distinct drafts are counted, not listed",
            scan.missed_unlisted,
            scan::MAX_MISSED
        ));
    }
    if scan.risky_unlisted > 0 {
        notes.push(format!(
            "{} risky skips past {} are counted, not listed",
            scan.risky_unlisted,
            scan::MAX_RISKY
        ));
    }
    let stress = scan.stress.as_ref().map(|s| StressSummary {
        tested_skips: s.tested,
        survived: stress::TRANSFORMS
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
