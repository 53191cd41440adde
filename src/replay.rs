//! The replay: read -> evaluate every variant -> tally, block by block.
//!
//! Blocks are parsed and evaluated in parallel (rayon) and their results
//! merged strictly in input order, so every output is byte-identical for
//! any thread count. Per-turn work is one parse, one set of draft features
//! shared by every variant, and one gate evaluation per variant.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hash, Hasher};

use serde_json::Value;

use crate::config::{FrameworkConfig, Plan};
use crate::gate::{DraftFeatures, Evaluation, Gate, Reason, Reasons};
use crate::reader::{self, Block, Source};
use crate::segments::SegmentAcc;
use crate::tally::{label_index, Counts, EventFacts, Mismatch, SegmentMap, VariantTally, NOT_RUN};
use crate::turn::{CallSite, Intent, SensitiveField, ToolCall, Turn, Verdict};

/// Which decision rows to keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DecisionsMode {
    /// Every (turn, variant).
    All,
    /// Only rows where the variant decides differently from the baseline.
    Changed,
    /// None (summary reports only).
    None,
}

impl DecisionsMode {
    /// The name `--decisions` takes (recorded in summary.json).
    pub fn name(self) -> &'static str {
        match self {
            DecisionsMode::All => "all",
            DecisionsMode::Changed => "changed",
            DecisionsMode::None => "none",
        }
    }
}

/// Distinct values tracked per grouping dimension; later new values are
/// counted under `(other)` at once (keeps memory bounded).
pub const MAX_TRACKED_VALUES: usize = 100_000;
/// Warnings keep this many example locations per kind.
pub const WARNING_EXAMPLES: usize = 5;

/// What a replay was asked to do.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    pub sources: Vec<String>,
    pub plan: Plan,
    pub skip_invalid: bool,
    pub decisions: DecisionsMode,
    /// Extra grouping dimensions: dotted paths into the turn (`scope.channel`).
    pub group_by: Vec<String>,
    /// Write into a non-empty folder that holds no earlier report.
    pub force: bool,
    /// Longer lines are invalid (`--max-line-bytes`).
    pub max_line_bytes: usize,
}

/// An invalid line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reject {
    pub source: usize,
    pub line: u64,
    pub reason: String,
    /// The line as text (invalid UTF-8 replaced by U+FFFD).
    pub raw: String,
    /// The exact bytes, when they are not UTF-8.
    pub raw_base64: Option<String>,
}

/// A blank line is skipped: JSON whitespace only (space, tab, CR). Any
/// other byte (a form feed, a vertical tab) makes a line, which is then
/// invalid JSON.
pub fn is_blank(raw: &[u8]) -> bool {
    raw.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
}

/// Line 1 without a UTF-8 byte-order mark (skipped, as most JSON Lines
/// readers do).
pub fn without_bom(line: u64, raw: &[u8]) -> &[u8] {
    match line {
        1 => raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw),
        _ => raw,
    }
}

/// A skip of a turn the critic revised or refused.
#[derive(Clone, Debug, PartialEq)]
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
}

/// Warning kinds (valid input the gate treats in a way a recorder may not
/// expect).
pub const WARNING_KINDS: [&str; 5] = [
    "tool_call_without_name",
    "unknown_intent_label",
    "empty_sensitive_hit",
    "duplicate_turn",
    "critic_not_run",
];

/// Count and first locations per warning kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Warnings(pub BTreeMap<&'static str, (u64, Vec<(usize, u64)>)>);

impl Warnings {
    pub fn add(&mut self, kind: &'static str, source: usize, line: u64) {
        let e = self.0.entry(kind).or_default();
        e.0 += 1;
        if e.1.len() < WARNING_EXAMPLES {
            e.1.push((source, line));
        }
    }

    pub fn merge(&mut self, o: &Warnings) {
        for (k, (n, ex)) in &o.0 {
            let e = self.0.entry(k).or_default();
            e.0 += n;
            for x in ex {
                if e.1.len() < WARNING_EXAMPLES {
                    e.1.push(*x);
                }
            }
        }
    }

    pub fn count(&self, kind: &str) -> u64 {
        self.0.get(kind).map_or(0, |e| e.0)
    }
}

/// Everything a replay tallies (mergeable).
#[derive(Clone, Debug, Default)]
pub struct Totals {
    pub turns: u64,
    pub rejected: u64,
    pub nonblank_lines: u64,
    pub bytes: u64,
    pub unknown_fields: u64,
    pub variants: Vec<VariantTally>,
    pub segments: SegmentMap,
    /// Dimensions that had more than MAX_TRACKED_VALUES distinct values.
    pub segments_capped: BTreeMap<String, u64>,
    pub warnings: Warnings,
    /// Critic models that recorded tokens but have no price.
    pub unpriced_models: BTreeSet<String>,
    pub fabrication_kinds: BTreeMap<String, u64>,
}

impl Totals {
    fn new(n: usize) -> Totals {
        Totals {
            variants: vec![VariantTally::default(); n],
            ..Default::default()
        }
    }

    /// Merge `o` (the next block, in input order) into `self`.
    pub fn merge(&mut self, o: &Totals) {
        self.turns += o.turns;
        self.rejected += o.rejected;
        self.nonblank_lines += o.nonblank_lines;
        self.bytes += o.bytes;
        self.unknown_fields += o.unknown_fields;
        for (a, b) in self.variants.iter_mut().zip(&o.variants) {
            a.merge(b);
        }
        for (dim, values) in &o.segments {
            let mine = self.segments.entry(dim.clone()).or_default();
            for (value, counts) in values {
                let key = if mine.contains_key(value) || mine.len() < MAX_TRACKED_VALUES {
                    value.clone()
                } else {
                    *self.segments_capped.entry(dim.clone()).or_default() += 1;
                    OTHER.to_string()
                };
                let slot = mine
                    .entry(key)
                    .or_insert_with(|| vec![Counts::default(); counts.len()]);
                for (s, c) in slot.iter_mut().zip(counts) {
                    s.merge(c);
                }
            }
        }
        for (k, v) in &o.segments_capped {
            *self.segments_capped.entry(k.clone()).or_default() += v;
        }
        self.warnings.merge(&o.warnings);
        self.unpriced_models
            .extend(o.unpriced_models.iter().cloned());
        for (k, v) in &o.fabrication_kinds {
            *self.fabrication_kinds.entry(k.clone()).or_default() += v;
        }
    }
}

/// `map[key]`, inserting a default; allocates the key only when it is new.
pub fn slot<'m, V>(
    map: &'m mut BTreeMap<String, V>,
    key: &str,
    new: impl FnOnce() -> V,
) -> &'m mut V {
    if !map.contains_key(key) {
        map.insert(key.to_string(), new());
    }
    map.get_mut(key).expect("just inserted")
}

/// The `(other)` segment value.
pub const OTHER: &str = "(other)";
/// The value of a dimension a turn does not have.
pub const NONE: &str = "(none)";

/// Draft length buckets (code points).
pub fn length_bucket(chars: u64) -> &'static str {
    match chars {
        0 => "0",
        1..=20 => "1-20",
        21..=80 => "21-80",
        81..=160 => "81-160",
        161..=500 => "161-500",
        _ => "501+",
    }
}

/// The output of one block.
#[derive(Debug, Default)]
pub struct BlockResult {
    pub totals: Totals,
    /// This block's rows of decisions.csv, already formatted (the workers
    /// format them in parallel; the writer only appends bytes).
    pub decisions_csv: Vec<u8>,
    /// This block's rows of mismatches.csv (the baseline against
    /// production), formatted likewise.
    pub mismatches_csv: Vec<u8>,
    pub rejects: Vec<Reject>,
    pub regressions: Vec<Regression>,
    /// (hash of (run_id, turn), source, line) for the duplicate check.
    pub keys: Vec<(u64, usize, u64)>,
    /// Bytes of the source consumed when this block was read.
    pub consumed: u64,
}

/// Buffers reused from turn to turn (no per-turn allocation for them), and
/// the block's segment tallies.
struct Scratch {
    counts: Vec<Counts>,
    fields: crate::report::decisions::TurnFields,
    /// `fields` hold the current turn's.
    fields_set: bool,
    segments: SegmentAcc,
}

const DIM_LANGUAGE: u32 = 0;
const DIM_INTENT: u32 = 1;
const DIM_DRAFT_LENGTH: u32 = 2;
const DIM_CALL_SITE: u32 = 3;

/// The dimensions every replay segments by (`DIM_*` in this order), beside
/// `scope` / `scope.KEY`.
pub const BUILTIN_DIMENSIONS: [&str; 4] = ["language", "intent", "draft_length", "call_site"];

/// Check `--group-by` paths: dotted, and not a dimension segments.csv
/// already has (it would count every turn again), nor given twice.
pub fn validate_group_by(paths: &[String]) -> crate::Result<()> {
    for (i, g) in paths.iter().enumerate() {
        if g.is_empty() || g.split('.').any(str::is_empty) {
            return Err(crate::Error::Usage(format!(
                "--group-by {g:?}: give a dotted path such as scope.user.tier or critic.model"
            )));
        }
        let scope_level = g == "scope" || (g.starts_with("scope.") && g.matches('.').count() == 1);
        if BUILTIN_DIMENSIONS.contains(&g.as_str()) || scope_level {
            return Err(crate::Error::Usage(format!(
                "--group-by {g}: segments.csv already has this dimension (language, intent, draft_length, call_site, scope and every scope.KEY are built in); group by a deeper path (scope.KEY.FIELD) or another field"
            )));
        }
        if paths[..i].contains(g) {
            return Err(crate::Error::Usage(format!(
                "--group-by {g} is given twice"
            )));
        }
    }
    Ok(())
}

impl Scratch {
    fn new(variants: usize) -> Scratch {
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
            fields_set: false,
            segments,
        }
    }
}

/// A compiled replay: one gate per variant.
pub struct Replayer {
    pub opts: ReplayOptions,
    gates: Vec<Gate>,
    /// Per variant: the flag-off config to check the contract against.
    legacy_check: Vec<Option<FrameworkConfig>>,
}

/// FNV-1a: a fixed, fast hash for the duplicate check (stable across runs).
#[derive(Default)]
pub struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf29ce484222325
        } else {
            self.0
        };
        for b in bytes {
            h ^= *b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
        self.0 = h;
    }
}

/// A set of already-hashed keys.
#[derive(Default)]
pub struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 keys")
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

pub type KeySet = HashSet<u64, BuildHasherDefault<Identity>>;

fn turn_key(run_id: &str, turn: u64) -> u64 {
    let mut h = Fnv::default();
    run_id.hash(&mut h);
    turn.hash(&mut h);
    h.finish()
}

/// The legacy gate, computed independently of [`Evaluation`] (to check
/// that flag-off variants are byte-identical to it).
fn legacy_reference(turn: &Turn, cfg: &FrameworkConfig) -> bool {
    let confidence = turn
        .confidence
        .or(turn.activation_log.as_ref().map(|l| l.confidence))
        .unwrap_or(crate::gate::confidence::COLD_CONFIDENCE);
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

/// Value of a dotted path into a JSON value, as a segment label.
fn path_value(v: &Value, path: &str) -> String {
    let mut cur = v;
    for part in path.split('.') {
        match cur.get(part) {
            Some(x) => cur = x,
            None => return NONE.to_string(),
        }
    }
    crate::segments::scalar_label(cur)
}

impl Replayer {
    pub fn new(opts: ReplayOptions) -> crate::Result<Replayer> {
        let mut cache = crate::gate::PatternCache::default();
        let gates = opts
            .plan
            .variants
            .iter()
            .map(|v| {
                Gate::new_cached(v.config.clone(), &mut cache)
                    .map_err(|e| crate::Error::Config(format!("variant {}: {e}", v.name)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let legacy_check = opts
            .plan
            .variants
            .iter()
            .map(|v| (!v.config.metacognition_selective_gate).then(|| v.config.clone()))
            .collect();
        Ok(Replayer {
            opts,
            gates,
            legacy_check,
        })
    }

    /// A recorded event's dollars in nano-USD (tokens x USD per million
    /// tokens x 1e3), priced by its model or the default model; Err names
    /// the model that has no price.
    fn nano_usd<'m>(
        &'m self,
        (tin, tout): (u64, u64),
        model: Option<&'m str>,
    ) -> Result<u64, &'m str> {
        let cost = &self.opts.plan.cost;
        let name = model
            .filter(|m| !m.is_empty())
            .or(cost.default_model.as_deref());
        let p = name
            .and_then(|n| cost.models.get(n))
            .ok_or_else(|| name.unwrap_or("(no model and no cost.default_model)"))?;
        Ok(
            (tin as f64 * p.usd_per_mtok_in * 1e3 + tout as f64 * p.usd_per_mtok_out * 1e3).round()
                as u64,
        )
    }

    pub fn sources(&self) -> Vec<Source> {
        self.opts
            .sources
            .iter()
            .map(|s| Source { name: s.clone() })
            .collect()
    }

    pub fn empty_totals(&self) -> Totals {
        Totals::new(self.gates.len())
    }

    /// Parse, evaluate and tally one block.
    pub fn process(&self, block: &Block) -> BlockResult {
        let mut out = BlockResult {
            totals: self.empty_totals(),
            consumed: block.consumed,
            ..Default::default()
        };
        out.totals.bytes = block.bytes().len() as u64;
        // Reserve for a row of about 140 bytes per variant per line of
        // about 500 bytes, rather than grow (and copy) the rows several times
        // (only touched pages count as memory).
        if self.opts.decisions == DecisionsMode::All {
            out.decisions_csv
                .reserve(block.bytes().len() / 500 * self.gates.len() * 140);
        }
        let mut scratch = Scratch::new(self.gates.len());
        if let Some(bytes) = block.overlong {
            out.totals.nonblank_lines += 1;
            out.totals.rejected += 1;
            out.rejects
                .push(self.overlong(block.source, block.first_line, bytes, block.bytes()));
            return out;
        }
        for (line_no, raw) in reader::lines(block) {
            let raw = without_bom(line_no, raw);
            if is_blank(raw) {
                continue;
            }
            out.totals.nonblank_lines += 1;
            if raw.len() > self.opts.max_line_bytes {
                out.totals.rejected += 1;
                out.rejects
                    .push(self.overlong(block.source, line_no, raw.len() as u64, raw));
                continue;
            }
            let reject = |reason: String| Reject {
                source: block.source,
                line: line_no,
                reason,
                raw: String::from_utf8_lossy(raw).into_owned(),
                raw_base64: None,
            };
            let text = match std::str::from_utf8(raw) {
                Ok(t) => t,
                Err(e) => {
                    out.totals.rejected += 1;
                    out.rejects.push(Reject {
                        // The exact bytes, since the text cannot hold them.
                        raw_base64: Some(crate::report::base64(raw)),
                        ..reject(format!("bytes are not UTF-8 (at byte {})", e.valid_up_to()))
                    });
                    continue;
                }
            };
            // Borrowed from the result, not moved out of it (a turn is a few
            // hundred bytes; the copy showed in profiles).
            let parsed = Turn::parse(text);
            let turn = match &parsed {
                Ok(t) => t,
                Err(e) => {
                    out.totals.rejected += 1;
                    out.rejects.push(reject(e.to_string()));
                    continue;
                }
            };
            let at = At {
                source: block.source,
                line: line_no,
            };
            self.tally_turn(turn, text, at, &mut out, &mut scratch);
        }
        out.totals.segments = block_segments(scratch.segments, &out.totals);
        for v in &mut out.totals.variants {
            v.latency.settle();
        }
        out
    }

    /// The reject of a line longer than `--max-line-bytes`: its first
    /// bytes only.
    fn overlong(&self, source: usize, line: u64, bytes: u64, raw: &[u8]) -> Reject {
        // The first bytes, cut at a character boundary; `…` when cut.
        let mut prefix = &raw[..raw.len().min(reader::OVERLONG_PREFIX)];
        if let Err(e) = std::str::from_utf8(prefix) {
            if e.error_len().is_none() {
                prefix = &prefix[..e.valid_up_to()];
            }
        }
        let cut = (prefix.len() as u64) < bytes;
        Reject {
            source,
            line,
            reason: format!(
                "the line is {bytes} bytes, longer than --max-line-bytes {}",
                self.opts.max_line_bytes
            ),
            raw: String::from_utf8_lossy(prefix).into_owned() + if cut { "…" } else { "" },
            raw_base64: None,
        }
    }

    /// One valid turn: warnings, evaluation, and every tally it feeds.
    fn tally_turn(
        &self,
        turn: &Turn<'_>,
        text: &str,
        at: At,
        out: &mut BlockResult,
        scratch: &mut Scratch,
    ) {
        self.note_turn(turn, at, out);
        let features = DraftFeatures::of(&turn.draft);
        let evals: Vec<Evaluation> = self
            .gates
            .iter()
            .map(|g| g.evaluate_with(turn, &features))
            .collect();
        let facts = self.facts(turn, at, features.chars as u64, &mut out.totals);
        let base_fires = evals[self.opts.plan.baseline].fires();
        scratch.counts.clear();
        scratch.fields_set = false;
        for (i, e) in evals.iter().enumerate() {
            let d = Decision {
                variant: i,
                fires: e.fires(),
                base_fires,
                reasons: e.reasons(),
            };
            let c = count(&d, &facts);
            self.tally_variant(turn, &d, &facts, &mut out.totals.variants[i]);
            out.totals.variants[i].counts.merge(&c);
            scratch.counts.push(c);
            if d.skips() && facts.label.is_some_and(Verdict::is_intervention) {
                out.regressions.push(Regression::of(turn, at, &d));
            }
            self.write_decision(turn, e, &d, &facts, out, scratch);
            if i == self.opts.plan.baseline {
                self.write_mismatch(turn, e, &d, &facts, out);
            }
        }
        self.segment(turn, text, &facts, scratch);
    }

    /// Counts, warnings and keys of a valid turn that do not depend on the
    /// variants.
    fn note_turn(&self, turn: &Turn<'_>, at: At, out: &mut BlockResult) {
        let t = &mut out.totals;
        t.turns += 1;
        t.unknown_fields += turn.unknown_fields as u64;
        let w = &mut t.warnings;
        // A call with no `name` key, or not an object at all (a plain
        // string): the gate counts it as mutating, which a recorder may not
        // expect.
        if turn
            .tool_calls
            .iter()
            .any(|c| matches!(c, ToolCall::NoName { .. } | ToolCall::NotObject))
        {
            w.add("tool_call_without_name", at.source, at.line);
        }
        if let Intent::Label(l) = &turn.intent {
            if !matches!(l.as_ref(), "action" | "knowledge" | "ambiguous") {
                w.add("unknown_intent_label", at.source, at.line);
            }
        }
        if matches!(&turn.sensitive_hit, SensitiveField::Hit(s) if s.is_empty()) {
            w.add("empty_sensitive_hit", at.source, at.line);
        }
        if turn.critic_not_run() {
            w.add("critic_not_run", at.source, at.line);
        }
        if let Some(n) = turn.turn {
            out.keys
                .push((turn_key(&turn.run_id, n), at.source, at.line));
        }
        for k in &turn.fabrication_kinds {
            *slot(&mut t.fabrication_kinds, k, || 0) += 1;
        }
    }

    /// What the turn's recording says, priced: the same for every variant.
    fn facts(&self, turn: &Turn<'_>, at: At, draft_chars: u64, t: &mut Totals) -> TurnFacts {
        let review = turn.review();
        let tokens = review.and_then(|c| c.tokens_in.zip(c.tokens_out));
        let latency_ms = review.and_then(|c| c.latency_ms);
        let model = review.and_then(|c| c.model.as_deref());
        let nano_usd = match tokens.map(|tk| self.nano_usd(tk, model)) {
            Some(Ok(n)) => Some(n),
            Some(Err(name)) => {
                if !t.unpriced_models.contains(name) {
                    t.unpriced_models.insert(name.to_string());
                }
                None
            }
            None => None,
        };
        TurnFacts {
            at,
            label: turn.verdict(),
            label_index: label_index(turn),
            event: review.map(|_| EventFacts {
                tokens,
                latency_ms,
                nano_usd,
            }),
            latency_ms,
            production: turn.production().fired(),
            call_site: turn.call_site(),
            draft_chars,
        }
    }

    /// A variant's tallies that are not [`Counts`]: the contract check,
    /// reasons, the matrix, latency and disagreements with production.
    fn tally_variant(&self, turn: &Turn<'_>, d: &Decision, f: &TurnFacts, vt: &mut VariantTally) {
        if let Some(cfg) = &self.legacy_check[d.variant] {
            if d.fires != legacy_reference(turn, cfg) {
                vt.contract_violations += 1;
            }
        }
        for r in d.reasons.iter() {
            vt.reason_hits[r as usize] += 1;
        }
        if let Some(r) = d.reasons.single() {
            if r != Reason::TrivialAck && r != Reason::Confident {
                vt.sole_blocker[r as usize] += 1;
            }
        }
        vt.matrix[d.base_fires as usize][d.fires as usize][f.label_index] += 1;
        // Latency added to a user-facing turn: 0 on a skip, the recorded
        // latency on a fire (fires without one are counted apart).
        // Skill-gate calls are not a user's wait.
        if f.call_site == CallSite::Turn {
            match (d.fires, f.latency_ms) {
                (false, _) => vt.latency.add(0.0),
                (true, Some(l)) => {
                    vt.latency.add(l);
                    vt.latency_measured_fires += 1
                }
                (true, None) => vt.latency_unmeasured_fires += 1,
            }
        }
        if let Some(m) = d.mismatch(f.production) {
            let first = d.reasons.iter().next().unwrap_or(Reason::Confident);
            vt.mismatch_reasons[m as usize][first as usize] += 1;
        }
    }

    /// The variant's row of decisions.csv, when kept.
    fn write_decision(
        &self,
        turn: &Turn<'_>,
        e: &Evaluation,
        d: &Decision,
        f: &TurnFacts,
        out: &mut BlockResult,
        scratch: &mut Scratch,
    ) {
        let keep = match self.opts.decisions {
            DecisionsMode::All => true,
            DecisionsMode::Changed => d.fires != d.base_fires,
            DecisionsMode::None => false,
        };
        if !keep {
            return;
        }
        let row = crate::report::decisions::Row {
            source: &self.opts.sources[f.at.source],
            line: f.at.line,
            run_id: &turn.run_id,
            turn: turn.turn,
            variant: &self.opts.plan.variants[d.variant].name,
            fires: d.fires,
            baseline_fires: d.base_fires,
            reasons: d.reasons,
            language: turn.language.as_deref(),
            scope: turn.scope,
            intent: turn.intent_label(),
            draft_chars: f.draft_chars,
            confidence: e.confidence,
            verdict: f.label,
            production: f.production,
        };
        if !scratch.fields_set {
            scratch.fields.set(&row);
            scratch.fields_set = true;
        }
        scratch.fields.write(&mut out.decisions_csv, &row);
    }

    /// The baseline's row of mismatches.csv, when it disagrees with
    /// production.
    fn write_mismatch(
        &self,
        turn: &Turn<'_>,
        e: &Evaluation,
        d: &Decision,
        f: &TurnFacts,
        out: &mut BlockResult,
    ) {
        let Some(production_fired) = f.production.filter(|&p| p != d.fires) else {
            return;
        };
        crate::report::decisions::MismatchRow {
            source: &self.opts.sources[f.at.source],
            line: f.at.line,
            run_id: &turn.run_id,
            turn: turn.turn,
            call_site: f.call_site.as_str(),
            production_fired,
            baseline_fires: d.fires,
            reasons: d.reasons,
            confidence: e.confidence,
            sensitive_hit: e.sensitive_hit,
        }
        .write(&mut out.mismatches_csv);
    }

    /// Add the turn's per-variant counts to each of its segments.
    fn segment(&self, turn: &Turn<'_>, text: &str, f: &TurnFacts, scratch: &mut Scratch) {
        let counts = &scratch.counts;
        let seg = &mut scratch.segments;
        seg.add(
            DIM_LANGUAGE,
            turn.language.as_deref().unwrap_or(NONE),
            counts,
        );
        seg.add(DIM_INTENT, turn.intent_label().unwrap_or(NONE), counts);
        seg.add(DIM_DRAFT_LENGTH, length_bucket(f.draft_chars), counts);
        // Nearly every turn is a user-facing `turn`: only skill-gate calls
        // are added here, and the `turn` row is the block's totals less
        // them (see `block_segments`), exact and one lookup less a turn.
        if f.call_site != CallSite::Turn {
            seg.add(DIM_CALL_SITE, f.call_site.as_str(), counts);
        }
        if let Some(raw) = turn.scope {
            seg.add_scope(raw, counts);
        }
        if !self.opts.group_by.is_empty() {
            let whole: Value = serde_json::from_str(text).unwrap_or(Value::Null);
            for path in &self.opts.group_by {
                let dim = seg.dim(path);
                seg.add(dim, &path_value(&whole, path), counts);
            }
        }
    }
}

/// A block's segment tallies, with the `call_site` `turn` row: the block's
/// per-variant totals less its skill-gate calls (only those are added turn
/// by turn).
fn block_segments(acc: SegmentAcc, totals: &Totals) -> SegmentMap {
    let mut map = acc.into_map();
    let sites = map
        .entry(BUILTIN_DIMENSIONS[DIM_CALL_SITE as usize].to_string())
        .or_default();
    let turn: Vec<Counts> = totals
        .variants
        .iter()
        .enumerate()
        .map(|(i, v)| match sites.get(CallSite::SkillGate.as_str()) {
            Some(skill) => v.counts.minus(&skill[i]),
            None => v.counts.clone(),
        })
        .collect();
    if turn.first().is_some_and(|c| c.turns > 0) {
        sites.insert(CallSite::Turn.as_str().to_string(), turn);
    }
    if sites.is_empty() {
        map.remove(BUILTIN_DIMENSIONS[DIM_CALL_SITE as usize]);
    }
    map
}

/// Where a line is: its source index and line number.
#[derive(Clone, Copy, Debug)]
struct At {
    source: usize,
    line: u64,
}

/// One variant's decision on a turn, beside the baseline's.
struct Decision {
    variant: usize,
    fires: bool,
    base_fires: bool,
    reasons: Reasons,
}

impl Decision {
    fn skips(&self) -> bool {
        !self.fires
    }

    /// How the decision disagrees with production's (`Some(fired)`), if it
    /// does.
    fn mismatch(&self, production: Option<bool>) -> Option<Mismatch> {
        match production {
            Some(true) if !self.fires => Some(Mismatch::ProductionFired),
            Some(false) if self.fires => Some(Mismatch::ProductionSkipped),
            _ => None,
        }
    }
}

/// What a turn's recording says, worked out once for every variant.
struct TurnFacts {
    at: At,
    /// The verdict of a critic that really ran.
    label: Option<Verdict>,
    /// Index into the matrix's label dimension.
    label_index: usize,
    /// The recorded event of a critic that ran, priced.
    event: Option<EventFacts>,
    latency_ms: Option<f64>,
    /// What production's gate did (`Some(fired)`).
    production: Option<bool>,
    call_site: CallSite,
    draft_chars: u64,
}

/// A turn's [`Counts`] under one variant.
fn count(d: &Decision, f: &TurnFacts) -> Counts {
    let mut c = Counts {
        turns: 1,
        fires: d.fires as u64,
        critic_not_run: (f.label_index == NOT_RUN) as u64,
        production_known: f.production.is_some() as u64,
        ..Default::default()
    };
    match d.mismatch(f.production) {
        Some(Mismatch::ProductionFired) => c.production_fired_variant_skips = 1,
        Some(Mismatch::ProductionSkipped) => c.production_skipped_variant_fires = 1,
        None => {}
    }
    if let Some(ev) = &f.event {
        c.events.add(ev);
    }
    if d.base_fires && !d.fires {
        c.saved_calls = 1;
        match &f.event {
            Some(ev) => c.saved.add(ev),
            // Saved, but nothing recorded of its cost.
            None => c.saved.turns += 1,
        }
    }
    if !d.base_fires && d.fires {
        c.added_calls = 1;
    }
    if d.skips() {
        if f.label.is_some() {
            c.labelled_skips = 1;
        }
        if f.label.is_some_and(Verdict::is_intervention) {
            c.safety_regressions = 1;
        }
    }
    c
}

impl Regression {
    /// The regression a variant's skip of `turn` is (its label revise or
    /// refuse).
    fn of(turn: &Turn<'_>, at: At, d: &Decision) -> Regression {
        let c = turn.review().expect("a label comes from a review");
        Regression {
            source: at.source,
            line: at.line,
            run_id: turn.run_id.to_string(),
            turn: turn.turn,
            variant: d.variant,
            draft: turn.draft.to_string(),
            verdict: c.verdict.expect("a regression has a verdict"),
            revised_draft: c.revised_draft.as_deref().map(str::to_string),
            refusal_message: c.refusal_message.as_deref().map(str::to_string),
            reasons: d.reasons,
        }
    }
}

/// The duplicate check across blocks: one 64-bit hash per numbered turn.
#[derive(Default)]
pub struct DuplicateCheck {
    seen: KeySet,
}

impl DuplicateCheck {
    pub fn check(&mut self, keys: &[(u64, usize, u64)], warnings: &mut Warnings) {
        for &(k, source, line) in keys {
            if !self.seen.insert(k) {
                warnings.add("duplicate_turn", source, line);
            }
        }
    }
}

/// Per-variant map of the matrix cell name to its turns (used by reports).
pub fn matrix_cell(base_fires: bool, fires: bool) -> &'static str {
    match (base_fires, fires) {
        (true, true) => "both_fire",
        (true, false) => "saved",
        (false, true) => "added",
        (false, false) => "both_skip",
    }
}

/// Keep the `limit` largest values of each dimension, folding the rest into
/// `(other)`; returns the dimensions that were cut, with their distinct
/// value counts.
pub fn cap_segments(
    segments: &mut SegmentMap,
    limit: usize,
    baseline: usize,
) -> BTreeMap<String, usize> {
    let mut cut = BTreeMap::new();
    for (dim, values) in segments.iter_mut() {
        if values.len() <= limit {
            continue;
        }
        cut.insert(dim.clone(), values.len());
        let mut order: Vec<(String, u64)> = values
            .iter()
            .filter(|(k, _)| *k != OTHER)
            .map(|(k, v)| (k.clone(), v[baseline].turns))
            .collect();
        order.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let keep: HashMap<String, ()> = order
            .into_iter()
            .take(limit)
            .map(|(k, _)| (k, ()))
            .collect();
        let mut other: Option<Vec<Counts>> = values.remove(OTHER);
        values.retain(|k, v| {
            if keep.contains_key(k) {
                true
            } else {
                let o = other.get_or_insert_with(|| vec![Counts::default(); v.len()]);
                for (a, b) in o.iter_mut().zip(v.iter()) {
                    a.merge(b);
                }
                false
            }
        });
        if let Some(o) = other {
            values.insert(OTHER.to_string(), o);
        }
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(turns: u64) -> Vec<Counts> {
        vec![Counts {
            turns,
            ..Default::default()
        }]
    }

    #[test]
    fn segments_keep_the_largest_values_and_fold_the_rest() {
        let mut seg: SegmentMap = BTreeMap::new();
        let values = seg.entry("scope.user".into()).or_default();
        for i in 0..5u64 {
            values.insert(format!("u{i}"), counts(i + 1));
        }
        seg.entry("language".into())
            .or_default()
            .insert("en".into(), counts(9));
        let cut = cap_segments(&mut seg, 3, 0);
        assert_eq!(cut.get("scope.user"), Some(&5));
        assert!(!cut.contains_key("language"));
        let users = &seg["scope.user"];
        let kept: Vec<&str> = users.keys().map(String::as_str).collect();
        assert_eq!(kept, vec!["(other)", "u2", "u3", "u4"]);
        assert_eq!(users[OTHER][0].turns, 1 + 2);
    }
}
