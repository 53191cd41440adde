//! The per-turn steps of a replay, over typed values: a line is checked
//! ([`is_blank`], [`without_bom`]) or set aside ([`Reject`]); a valid
//! turn's recording is worked out once ([`TurnFacts`]); each variant's
//! [`Decision`] is counted ([`count`]) and, where it skips a turn the
//! critic revised or refused, kept as a [`Regression`].

use crate::config::FrameworkConfig;
use crate::gate::{DraftFeatures, Evaluation, Reasons};
use crate::read::turn::{CallSite, SensitiveField, Turn, Verdict};

use super::scope_columns::ScopeColumns;
use super::segments::{
    SegmentAcc, BUILTIN_DIMENSIONS, DIM_CALL_SITE, DIM_DRAFT_LENGTH, DIM_INTENT, DIM_LANGUAGE,
};
use super::tally::{length_bucket_index, Counts, EventFacts, Mismatch, NOT_RUN};
use super::totals::Totals;

/// An invalid line.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Reject {
    pub source: usize,
    pub line: u64,
    pub reason: crate::options::Said,
    /// The line as text (invalid UTF-8 replaced by U+FFFD).
    pub raw: String,
    /// The exact bytes, when they are not UTF-8.
    pub raw_base64: Option<String>,
}

/// A skip of a turn the critic revised or refused.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Regression {
    pub source: usize,
    pub line: u64,
    pub run_id: String,
    pub turn: Option<u64>,
    pub variant: usize,
    pub draft: String,
    pub verdict: Verdict,
    pub revised_draft: Option<String>,
    pub refusal_message: Option<String>,
    pub reasons: Reasons,
    pub language: Option<String>,
    pub intent: Option<String>,
    /// The recorded scope as JSON, cut as decisions.csv cuts it.
    pub scope: Option<String>,
    /// The values of the scope columns, in column order.
    pub scope_values: Vec<Option<String>>,
    /// Whether the baseline fires on the turn (the skip is new).
    pub base_fires: bool,
}

/// How many regressions report.md lists, and so how many a run keeps
/// whole (the first, in input order).
pub(crate) const TOP_REGRESSIONS: usize = 10;

/// The longest text of a regression row kept (draft, revised draft,
/// refusal message, run id), in bytes: longer ones end in `…`.
pub(super) const MAX_REGRESSION_TEXT_BYTES: usize = 4096;

/// What a listed regression is to the budgets: only a new skip's counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegressionKind {
    /// A turn the baseline fires on: the switch lets the reply out; the
    /// regression budgets count it.
    NewSkip,
    /// A turn the baseline skips too: switching changes nothing.
    SharedSkip,
    /// A row of the baseline itself: production's critic revised or
    /// refused a turn the baseline skips.
    ProductionDisagreement,
}

impl RegressionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RegressionKind::NewSkip => "new_skip",
            RegressionKind::SharedSkip => "shared_skip",
            RegressionKind::ProductionDisagreement => "production_disagreement",
        }
    }
}

/// The output of one block.
#[derive(Debug, Default)]
pub(crate) struct BlockResult {
    pub totals: Totals,
    /// This block's rows of decisions.csv, already formatted (the workers
    /// format them in parallel; the writer only appends bytes).
    pub decisions_csv: Vec<u8>,
    /// This block's rows of mismatches.csv (the baseline against
    /// production), formatted likewise.
    pub mismatches_csv: Vec<u8>,
    pub rejects: Vec<Reject>,
    /// This block's rows of regressions.csv, formatted likewise.
    pub regressions_csv: Vec<u8>,
    /// The block's first [`TOP_REGRESSIONS`] regressions, for report.md
    /// (the rest are only rows: a run keeps no more than these).
    pub regressions: Vec<Regression>,
    /// (hash of (run_id, turn), source, line) for the duplicate check.
    pub keys: Vec<(u64, usize, u64)>,
}

/// Buffers reused from turn to turn (no per-turn allocation for them), and
/// the block's segment tallies.
pub(super) struct Scratch {
    pub(super) counts: Vec<Counts>,
    pub(super) fields: super::rows::TurnFields,
    /// `fields` hold the current turn's as this deployment derived it
    /// (its place in `Plan::deployments`).
    pub(super) fields_set: Option<usize>,
    /// The current turn's draft as skips.csv groups it, once a variant
    /// saves its call, and the deployment that derived that draft.
    pub(super) skip_key: Option<(usize, String)>,
    pub(super) segments: SegmentAcc,
    /// The variants other than the baseline and the audited one that skip
    /// the current turn (kept only with an audit plan).
    pub(super) skipping: Vec<usize>,
}

impl Scratch {
    pub(super) fn new(variants: usize) -> Scratch {
        let mut segments = SegmentAcc::new(variants);
        for (id, name) in [DIM_LANGUAGE, DIM_INTENT, DIM_DRAFT_LENGTH, DIM_CALL_SITE]
            .into_iter()
            .zip(BUILTIN_DIMENSIONS)
        {
            let got = segments.dim(name);
            debug_assert_eq!(got, id);
        }
        Scratch {
            counts: Vec::new(),
            fields: Default::default(),
            fields_set: None,
            skip_key: None,
            skipping: Vec::new(),
            segments,
        }
    }
}

/// The legacy gate, computed independently of [`Evaluation`] (to check
/// that flag-off variants are byte-identical to it).
pub(super) fn legacy_reference(turn: &Turn, cfg: &FrameworkConfig) -> bool {
    let confidence = turn
        .confidence
        .or(turn.activation_log.as_ref().map(|l| l.confidence))
        .unwrap_or(crate::read::activation::COLD_CONFIDENCE);
    let hit = match &turn.sensitive_hit {
        SensitiveField::Absent => turn
            .activation_log
            .as_ref()
            .is_some_and(|l| l.sensitive_hit(&cfg.metacognition_sensitive_tags).is_some()),
        SensitiveField::None => false,
        SensitiveField::Hit(_) => true,
    };
    confidence < cfg.metacognition_confidence_threshold || hit
}

/// Where a line is: its source index and line number.
#[derive(Clone, Copy, Debug)]
pub(super) struct At {
    pub(super) source: usize,
    pub(super) line: u64,
}

/// One variant's decision on a turn, beside the baseline's.
pub(super) struct Decision {
    pub(super) variant: usize,
    pub(super) fires: bool,
    pub(super) base_fires: bool,
    pub(super) reasons: Reasons,
}

impl Decision {
    pub(super) fn of(variant: usize, e: &Evaluation, base_fires: bool) -> Decision {
        Decision {
            variant,
            fires: e.fires(),
            base_fires,
            reasons: e.reasons(),
        }
    }

    pub(super) fn skips(&self) -> bool {
        !self.fires
    }

    /// How the decision disagrees with production's (`Some(fired)`), if it
    /// does.
    pub(super) fn mismatch(&self, production: Option<bool>) -> Option<Mismatch> {
        match production {
            Some(true) if !self.fires => Some(Mismatch::ProductionFired),
            Some(false) if self.fires => Some(Mismatch::ProductionSkipped),
            _ => None,
        }
    }
}

/// One variant's decision on one turn, with what every per-variant step
/// reads (a sweep or a merge adds a step over this, not arguments).
pub(super) struct Look<'a, 't> {
    pub(super) turn: &'a Turn<'t>,
    pub(super) facts: &'a TurnFacts,
    pub(super) eval: &'a Evaluation<'a>,
    pub(super) d: Decision,
    /// A skip whose matched ack covers less than `--max-ack-share` of the
    /// draft.
    pub(super) risky: bool,
}

impl Look<'_, '_> {
    /// A skip of a turn the critic (that ran) revised or refused.
    pub(super) fn is_regression(&self) -> bool {
        self.d.skips() && self.facts.label.is_some_and(Verdict::is_intervention)
    }
}

/// What a turn's recording says, worked out once for every variant.
#[derive(Clone)]
pub(super) struct TurnFacts {
    pub(super) at: At,
    /// The verdict of a critic that really ran.
    pub(super) label: Option<Verdict>,
    /// Index into the matrix's label dimension.
    pub(super) label_index: usize,
    /// The recorded event of a critic that ran, priced.
    pub(super) event: Option<EventFacts>,
    pub(super) latency_ms: Option<f64>,
    /// What production did (`Some(fired)`: a critic ran).
    pub(super) production: Option<bool>,
    /// Production's critic ran because the plan's coin drew a skip of
    /// production's gate (the exploration gate): its gate skipped.
    pub(super) explored: bool,
    pub(super) call_site: CallSite,
    pub(super) draft_chars: u64,
    /// Where each of the turn's signals came from.
    pub(super) signals: crate::read::provenance::Signals,
}

impl TurnFacts {
    /// What production's gate decided (`Some(fired)`): a fire the plan's
    /// coin explains (exploration) is its gate's skip.
    pub(super) fn gate(&self) -> Option<bool> {
        match self.explored {
            true => Some(false),
            false => self.production,
        }
    }

    /// The facts of the turn as another deployment derived it: its draft
    /// and signals are that turn's; the recording (label, critic event)
    /// is the turn's as read.
    pub(super) fn under(&self, turn: &Turn<'_>, features: &DraftFeatures<'_>) -> TurnFacts {
        TurnFacts {
            draft_chars: features.chars as u64,
            signals: turn.signals(),
            ..self.clone()
        }
    }
}

/// A turn's [`Counts`] under one variant.
pub(super) fn count(d: &Decision, f: &TurnFacts, risky: bool) -> Counts {
    // symfonic calls no critic on an empty reply (the engine reviews a
    // final response only when there is one): a fire there is no call, and
    // no call is saved or added there.
    let reviewable = f.draft_chars > 0;
    let mut c = Counts {
        turns: 1,
        fires: d.fires as u64,
        fires_without_critic: (d.fires && !reviewable) as u64,
        // A call whose critic left no label: nothing recorded of one, or
        // one that ran without a verdict (an event where none ran is
        // production skipping: a disagreement, counted below).
        critic_calls_unrecorded: (d.fires && reviewable && f.production.is_none()) as u64,
        critic_calls_without_verdict: (d.fires
            && reviewable
            && f.production == Some(true)
            && f.label.is_none()) as u64,
        critic_not_run: (f.label_index == NOT_RUN) as u64,
        production_known: f.production.is_some() as u64,
        production_explored: (f.explored && d.skips()) as u64,
        production_explored_fires: (f.explored && d.fires) as u64,
        ..Default::default()
    };
    match d.mismatch(f.gate()) {
        Some(Mismatch::ProductionFired) => c.production_fired_variant_skips = 1,
        Some(Mismatch::ProductionSkipped) => c.production_skipped_variant_fires = 1,
        None => {}
    }
    if d.base_fires && !d.fires && reviewable {
        c.saved_calls = 1;
        match &f.event {
            Some(ev) => c.saved.add(ev),
            // Saved, but nothing recorded of its cost.
            None => c.saved.turns += 1,
        }
    }
    if !d.base_fires && d.fires && reviewable {
        c.added_calls = 1;
        c.added_by_length[length_bucket_index(f.draft_chars)] = 1;
    }
    if d.skips() {
        if f.label.is_some() {
            c.labelled_skips = 1;
        }
        if f.label.is_some_and(Verdict::is_intervention) {
            c.safety_regressions = 1;
            c.new_safety_regressions = u64::from(d.base_fires);
        }
        if d.base_fires {
            c.new_skips = 1;
            c.new_labelled_skips = c.labelled_skips;
            if f.label.is_none() {
                match f.label_index {
                    NOT_RUN => c.new_unlabelled_not_run = 1,
                    _ if f.production.is_none() => c.new_unlabelled_no_event = 1,
                    _ => {}
                }
            }
        }
        // Risk is on new skips: a risky skip the baseline makes too adds
        // nothing a switch would.
        if risky && d.base_fires {
            c.risky_skips = 1;
            c.risky_labelled_skips = c.labelled_skips;
            c.risky_safety_regressions = c.new_safety_regressions;
        }
    }
    c
}

impl Regression {
    /// What the row is to the budgets, with `baseline` the baseline's index.
    pub fn kind(&self, baseline: usize) -> RegressionKind {
        match (self.variant == baseline, self.base_fires) {
            (true, _) => RegressionKind::ProductionDisagreement,
            (false, true) => RegressionKind::NewSkip,
            (false, false) => RegressionKind::SharedSkip,
        }
    }

    /// A row of regressions.csv: the run's label, the source's name, the
    /// variant's and the regression's kind, then its cells, as the
    /// declared schema orders them.
    pub fn write_row(&self, out: &mut Vec<u8>, run: &str, source: &str, variant: &str, kind: &str) {
        use super::rows::{cell, opt_cell, push_u64};
        let g = self;
        cell(out, run);
        cell(out, source);
        push_u64(out, g.line);
        out.push(b',');
        cell(out, &g.run_id);
        if let Some(t) = g.turn {
            push_u64(out, t);
        }
        out.push(b',');
        cell(out, variant);
        cell(out, g.verdict.as_str());
        cell(out, kind);
        cell(out, &g.draft);
        opt_cell(out, g.revised_draft.as_deref());
        opt_cell(out, g.refusal_message.as_deref());
        cell(out, &g.reasons.to_string());
        opt_cell(out, g.language.as_deref());
        opt_cell(out, g.intent.as_deref());
        opt_cell(out, g.scope.as_deref());
        for v in &g.scope_values {
            opt_cell(out, v.as_deref());
        }
        // The last separator ends the row.
        out.pop();
        out.push(b'\n');
    }

    /// The regression a variant's skip is ([`Look::is_regression`]): its
    /// texts cut at [`MAX_REGRESSION_TEXT_BYTES`] (with `…`), as its scope
    /// is, so the regressions kept until the report is written hold at
    /// most that much text each whatever the traffic's replies.
    pub(super) fn of(look: &Look, columns: &ScopeColumns) -> Regression {
        let (turn, d) = (look.turn, &look.d);
        let c = turn.review().expect("a label comes from a review");
        let cut = |s: &str| super::segments::capped(s, MAX_REGRESSION_TEXT_BYTES).into_owned();
        Regression {
            source: look.facts.at.source,
            line: look.facts.at.line,
            run_id: super::rows::cut_id(&turn.run_id).into_owned(),
            turn: turn.turn,
            variant: d.variant,
            draft: cut(&turn.draft),
            verdict: c.verdict.expect("a regression has a verdict"),
            revised_draft: c.revised_draft.as_deref().map(cut),
            refusal_message: c.refusal_message.as_deref().map(cut),
            reasons: d.reasons,
            language: turn.language.as_deref().map(str::to_string),
            intent: turn.intent_label().map(cut),
            scope: turn
                .scope
                .as_deref()
                .map(|s| super::segments::capped(s, super::rows::MAX_SCOPE_BYTES).into_owned()),
            scope_values: columns
                .values(turn.scope.as_deref())
                .into_iter()
                .map(|v| {
                    v.map(|v| {
                        super::segments::capped(&v, super::rows::MAX_SCOPE_BYTES).into_owned()
                    })
                })
                .collect(),
            base_fires: d.base_fires,
        }
    }
}
