//! Everything a replay tallies, mergeable block after block in input
//! order: turn counts, per-variant tallies, segments, warnings with their
//! first lines, and the duplicate check across blocks.

use std::collections::{BTreeMap, BTreeSet};

use super::hash::KeySet;
use super::segments::{MAX_TRACKED_VALUES, OTHER};
use super::skips::SkipMap;
use super::tally::{Counts, EventSums, Histogram, SegmentMap, VariantTally, LENGTH_BUCKETS};

/// Warnings keep this many example locations per kind.
pub(super) const WARNING_EXAMPLES: usize = 5;

/// A warning: valid input the gate treats in a way a recorder may not
/// expect. Declared once, with its name (summary.json's `warnings` key)
/// and meaning (docs/reports.md); in the order of their names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WarningKind {
    CriticNotRun,
    DuplicateTurn,
    EmptySensitiveHit,
    LabelUnreadable,
    MisnamedField,
    SourceIdUnreadable,
    ToolCallWithoutName,
    UnknownIntentLabel,
}

/// Every warning kind, in the order of their names.
pub(crate) const WARNING_KINDS: [WarningKind; 8] = [
    WarningKind::CriticNotRun,
    WarningKind::DuplicateTurn,
    WarningKind::EmptySensitiveHit,
    WarningKind::LabelUnreadable,
    WarningKind::MisnamedField,
    WarningKind::SourceIdUnreadable,
    WarningKind::ToolCallWithoutName,
    WarningKind::UnknownIntentLabel,
];

impl WarningKind {
    pub fn name(self) -> &'static str {
        match self {
            WarningKind::CriticNotRun => "critic_not_run",
            WarningKind::DuplicateTurn => "duplicate_turn",
            WarningKind::EmptySensitiveHit => "empty_sensitive_hit",
            WarningKind::LabelUnreadable => "label_unreadable",
            WarningKind::MisnamedField => "misnamed_field",
            WarningKind::SourceIdUnreadable => "source_id_unreadable",
            WarningKind::ToolCallWithoutName => "tool_call_without_name",
            WarningKind::UnknownIntentLabel => "unknown_intent_label",
        }
    }

    /// What it means and what the replay does about it.
    pub fn meaning(self) -> &'static str {
        match self {
            WarningKind::CriticNotRun => "a critic event where no critic ran (ran: false; or, without ran, both token counts recorded as 0): not a label, a cost or a latency sample, but it says production's gate skipped the turn",
            WarningKind::DuplicateTurn => "a (run_id, turn) pair seen earlier in the replay (turns without a number are not checked): counted once per repeat, every occurrence replayed",
            WarningKind::EmptySensitiveHit => "an empty-string sensitive_hit: not null, so it is a hit (the sensitive floor)",
            WarningKind::LabelUnreadable => "a turn whose language is longer than 64 bytes or holds a control character: left out (the turn counts as without a language; the language decides nothing in the gate), so no tally keyed by traffic text holds more than 64 bytes a key",
            WarningKind::MisnamedField => "a turn with a top-level key the format does not define that looks like one it does (intent for intent_verdict, tool_calls for tool_calls_this_turn, a one-letter typo such as confidense): ignored like any unknown key, so the signal it was meant to give is absent; the run's notes name the keys",
            WarningKind::SourceIdUnreadable => "a turn whose trace_id, span_id, turn_id or message_index is neither a string nor a whole number up to 2^64 - 1 (an object, a fraction, a larger number): left out of the rows, the turn replayed; these keys change no decision",
            WarningKind::ToolCallWithoutName => "a turn with a tool call that has no top-level name key (an OpenAI-style {\"function\": {\"name\": ...}} call included) or is not an object: the gate counts it as a mutating tool (a floor)",
            WarningKind::UnknownIntentLabel => "an intent label other than action, knowledge and ambiguous: compared exactly, so it is not the intent floor",
        }
    }
}

/// One warning kind's count and first (source, line) locations.
pub(super) type KindTally = (u64, Vec<(usize, u64)>);

/// Count and first locations per warning kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Warnings(pub BTreeMap<WarningKind, KindTally>);

impl serde::Serialize for Warnings {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, t)| (k.name(), t)))
    }
}

impl<'de> serde::Deserialize<'de> for Warnings {
    /// Only the known kinds (a partial result from another version of the
    /// tool may name others: refused, not dropped).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let named = BTreeMap::<String, KindTally>::deserialize(d)?;
        let mut out = BTreeMap::new();
        for (name, tally) in named {
            let kind = WARNING_KINDS
                .iter()
                .find(|k| k.name() == name)
                .ok_or_else(|| {
                    serde::de::Error::custom(format!("unknown warning kind {name:?}"))
                })?;
            out.insert(*kind, tally);
        }
        Ok(Warnings(out))
    }
}

impl Warnings {
    pub fn add(&mut self, kind: WarningKind, source: usize, line: u64) {
        let e = self.0.entry(kind).or_default();
        e.0 += 1;
        if e.1.len() < WARNING_EXAMPLES {
            e.1.push((source, line));
        }
    }

    pub fn merge(&mut self, o: &Warnings) {
        for (k, (n, ex)) in &o.0 {
            let e = self.0.entry(*k).or_default();
            e.0 += n;
            for x in ex {
                if e.1.len() < WARNING_EXAMPLES {
                    e.1.push(*x);
                }
            }
        }
    }

    pub fn count(&self, kind: WarningKind) -> u64 {
        self.0.get(&kind).map_or(0, |e| e.0)
    }
}

/// Everything a replay tallies (mergeable).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Totals {
    pub turns: u64,
    pub rejected: u64,
    pub nonblank_lines: u64,
    pub bytes: u64,
    pub unknown_fields: u64,
    pub variants: Vec<VariantTally>,
    pub segments: SegmentMap,
    /// Per dimension, its tracked values in the order they were first
    /// merged: which values a cap keeps depends on it, so a merge of
    /// shards' totals replays it (blocks have none: their values come in
    /// sorted order, as a block's map holds them).
    #[serde(default)]
    pub segment_order: BTreeMap<String, Vec<String>>,
    /// Dimensions that had more than MAX_TRACKED_VALUES distinct values.
    pub segments_capped: BTreeMap<String, u64>,
    /// The run had more than [`super::segments::MAX_SCOPE_DIMENSIONS`]
    /// scope dimensions, so it has none.
    #[serde(default)]
    pub scope_overflow: bool,
    pub warnings: Warnings,
    /// Critic models that recorded tokens but have no price: the first
    /// [`MAX_UNPRICED`] by name, each cut at [`MAX_UNPRICED_CHARS`] (any
    /// merge order keeps the same ones; never empty while one was seen).
    pub unpriced_models: BTreeSet<String>,
    /// Whether more unpriced models were seen than `unpriced_models` names.
    #[serde(default)]
    pub unpriced_more: bool,
    /// Keys that look like the format's (`intent` -> `intent_verdict`):
    /// the first [`MAX_MISNAMED`] by name, so any merge order keeps the
    /// same ones.
    #[serde(default)]
    pub misnamed_keys: BTreeMap<String, String>,
    /// Whether more misnamed keys were seen than `misnamed_keys` names.
    #[serde(default)]
    pub misnamed_more: bool,
    pub fabrication_kinds: BTreeMap<String, u64>,
    /// Production's skips against a plan's sample (a replay with a plan).
    #[serde(default)]
    pub design: Option<super::design::DesignTally>,
    /// Production's variant's fires against its recording: those with no
    /// critic event, and what other settings make of them.
    #[serde(default)]
    pub probe: super::probe::ProbeTally,
    /// Recorded critic events by draft-length bucket (the same for every
    /// variant): the basis of added-call estimates ([`super::tally::AddedCost`]).
    pub events_by_length: [EventSums; LENGTH_BUCKETS.len()],
    /// Their recorded latencies by the same buckets: what an added call's
    /// latency is drawn from.
    #[serde(default)]
    pub latency_by_length: [Histogram; LENGTH_BUCKETS.len()],
    /// The same two tallies under each further deployment variants run
    /// with (its drafts' lengths bucket the events), in the order of
    /// `Plan::deployments` from its second; empty with one deployment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_length_under: Vec<ByLength>,
    /// Per variant: its saved calls by normalised draft (`skips.csv`).
    pub skips: Vec<SkipMap>,
    /// Turns by signal and origin (recorded, derived, unknown): index
    /// [`crate::read::provenance::Signal`], then
    /// [`crate::read::provenance::Origin`].
    #[serde(default)]
    pub provenance: [[u64; 3]; 7],
    /// What converting the input counted (`--from otlp`: runs, stream
    /// runs, spans left out).
    #[serde(default)]
    pub import_counts: BTreeMap<String, u64>,
    /// A trace's runs and sessions seen (`--from otlp`): two shards that
    /// share one cannot be merged exactly.
    #[serde(default)]
    pub trace_keys: std::collections::BTreeSet<String>,
    /// The rows of regressions.csv: every skip of a turn the critic
    /// revised or refused, over the variants (streamed, not kept).
    #[serde(default)]
    pub listed_regressions: u64,
}

/// Recorded critic events, and their latencies, by the draft-length
/// bucket of the turn as one deployment derived it.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct ByLength {
    pub events: [EventSums; LENGTH_BUCKETS.len()],
    pub latency: [Histogram; LENGTH_BUCKETS.len()],
}

impl ByLength {
    fn merge(&mut self, o: &ByLength) {
        let ByLength { events, latency } = o;
        for (a, b) in self.events.iter_mut().zip(events) {
            a.merge(b);
        }
        for (a, b) in self.latency.iter_mut().zip(latency) {
            a.merge(b);
        }
    }

    fn added_cost(&self) -> super::tally::AddedCost {
        super::tally::AddedCost::new(&self.events, &self.latency)
    }
}

/// How many misnamed keys the totals name (the warning counts them all).
pub(super) const MAX_MISNAMED: usize = 8;
/// How many unpriced critic models the totals name.
pub(super) const MAX_UNPRICED: usize = 10;
/// The longest unpriced model name kept, in characters.
pub(super) const MAX_UNPRICED_CHARS: usize = 64;

impl Totals {
    /// Record that critic model `name` has no price: kept cut, among the
    /// first [`MAX_UNPRICED`] names (a tally of traffic's names never grows
    /// with them).
    pub fn note_unpriced(&mut self, name: &str) {
        let name = match name.char_indices().nth(MAX_UNPRICED_CHARS) {
            Some((cut, _)) => &name[..cut],
            None => name,
        };
        if self.unpriced_models.contains(name) {
            return;
        }
        if self.unpriced_models.len() >= MAX_UNPRICED
            && self
                .unpriced_models
                .last()
                .is_some_and(|l| name > l.as_str())
        {
            self.unpriced_more = true;
            return;
        }
        self.unpriced_models.insert(name.to_string());
        if self.unpriced_models.len() > MAX_UNPRICED {
            self.unpriced_models.pop_last();
            self.unpriced_more = true;
        }
    }

    /// Record that key `key` looks like the format's `meant`.
    pub fn note_misnamed(&mut self, key: &str, meant: &str) {
        let full = self.misnamed_keys.len() >= MAX_MISNAMED;
        if self.misnamed_keys.contains_key(key) {
            return;
        }
        // Past the cap only a key before the last kept one can enter.
        if full
            && self
                .misnamed_keys
                .last_key_value()
                .is_some_and(|(l, _)| key > l.as_str())
        {
            self.misnamed_more = true;
            return;
        }
        self.misnamed_keys
            .insert(key.to_string(), meant.to_string());
        if self.misnamed_keys.len() > MAX_MISNAMED {
            self.misnamed_keys.pop_last();
            self.misnamed_more = true;
        }
    }

    /// What an added call of a variant that runs with deployment `k` (its
    /// place in `Plan::deployments`) costs: the recorded events bucketed
    /// by the lengths of that deployment's drafts.
    pub fn added_cost(&self, k: usize) -> super::tally::AddedCost {
        match k.checked_sub(1).and_then(|i| self.by_length_under.get(i)) {
            Some(b) => b.added_cost(),
            // None either way: [deployment]'s, or a further deployment
            // with no turn.
            None if k > 0 => ByLength::default().added_cost(),
            None => super::tally::AddedCost::new(&self.events_by_length, &self.latency_by_length),
        }
    }

    /// The recorded events by draft length, of every deployment.
    fn merge_by_length(
        &mut self,
        events: &[EventSums; LENGTH_BUCKETS.len()],
        latency: &[Histogram; LENGTH_BUCKETS.len()],
        under: &[ByLength],
    ) {
        for (a, b) in self.events_by_length.iter_mut().zip(events) {
            a.merge(b);
        }
        for (a, b) in self.latency_by_length.iter_mut().zip(latency) {
            a.merge(b);
        }
        if self.by_length_under.len() < under.len() {
            self.by_length_under
                .resize_with(under.len(), ByLength::default);
        }
        for (a, b) in self.by_length_under.iter_mut().zip(under) {
            a.merge(b);
        }
    }

    pub fn new(n: usize) -> Totals {
        Totals {
            variants: vec![VariantTally::default(); n],
            skips: vec![SkipMap::new(); n],
            ..Default::default()
        }
    }

    /// Merge `o` (the next block, in input order) into `self`.
    pub fn merge(&mut self, o: &Totals) {
        // Every field named: a new one does not compile until merged.
        let Totals {
            turns,
            rejected,
            nonblank_lines,
            bytes,
            unknown_fields,
            variants,
            segments,
            segment_order,
            segments_capped,
            scope_overflow,
            warnings,
            unpriced_models,
            unpriced_more,
            misnamed_keys,
            misnamed_more,
            fabrication_kinds,
            events_by_length,
            latency_by_length,
            by_length_under,
            skips,
            provenance,
            import_counts,
            trace_keys,
            listed_regressions,
            design,
            probe,
        } = o;
        self.probe.merge(probe);
        self.listed_regressions += listed_regressions;
        self.turns += turns;
        self.rejected += rejected;
        self.nonblank_lines += nonblank_lines;
        self.bytes += bytes;
        self.unknown_fields += unknown_fields;
        for (mine, theirs) in self.provenance.iter_mut().zip(provenance) {
            for (a, b) in mine.iter_mut().zip(theirs) {
                *a += b;
            }
        }
        for (k, n) in import_counts {
            *self.import_counts.entry(k.clone()).or_default() += n;
        }
        self.trace_keys.extend(trace_keys.iter().cloned());
        for (a, b) in self.variants.iter_mut().zip(variants) {
            a.merge(b);
        }
        self.merge_segments(segments, segment_order);
        for (k, v) in segments_capped {
            *self.segments_capped.entry(k.clone()).or_default() += v;
        }
        self.scope_overflow = super::segments::drop_scope_dimensions_past_the_cap(
            &mut self.segments,
            &mut self.segment_order,
            self.scope_overflow || *scope_overflow,
        );
        self.warnings.merge(warnings);
        for (a, b) in self.skips.iter_mut().zip(skips) {
            super::skips::merge(a, b);
        }
        self.merge_by_length(events_by_length, latency_by_length, by_length_under);
        for m in unpriced_models {
            self.note_unpriced(m);
        }
        self.unpriced_more |= *unpriced_more;
        for (k, v) in misnamed_keys {
            self.note_misnamed(k, v);
        }
        self.misnamed_more |= *misnamed_more;
        for (k, v) in fabrication_kinds {
            *self.fabrication_kinds.entry(k.clone()).or_default() += v;
        }
        super::design::merge_into(&mut self.design, design);
    }

    /// Merge a block's (or a shard's) segments, each dimension's values
    /// in the order they were first merged there, past the cap into
    /// `(other)`.
    fn merge_segments(&mut self, segments: &SegmentMap, order_of: &BTreeMap<String, Vec<String>>) {
        // Cells over every dimension together (values times variants).
        let variants = segments
            .values()
            .flat_map(|v| v.values())
            .map(Vec::len)
            .next()
            .unwrap_or(1)
            .max(1);
        let mut values: usize = self.segments.values().map(BTreeMap::len).sum();
        for (dim, dim_values) in segments {
            // Keys are allocated only for a dimension not seen before.
            let mine = slot(&mut self.segments, dim, BTreeMap::new);
            let order = slot(&mut self.segment_order, dim, Vec::new);
            for (value, counts) in in_merge_order(dim_values, order_of.get(dim)) {
                // A shard's `(other)` holds what it folded (and counted) itself.
                let key = if mine.contains_key(value) || value == OTHER {
                    value.clone()
                } else if mine.len() < MAX_TRACKED_VALUES
                    && (values + 1) * variants <= super::segments::MAX_SEGMENT_CELLS
                {
                    values += 1;
                    order.push(value.clone());
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
    }
}

/// A dimension's values in the order they were first merged (`order`,
/// then any value it does not list, such as `(other)`), or sorted.
fn in_merge_order<'a>(
    values: &'a BTreeMap<String, Vec<Counts>>,
    order: Option<&'a Vec<String>>,
) -> Box<dyn Iterator<Item = (&'a String, &'a Vec<Counts>)> + 'a> {
    let Some(order) = order.filter(|o| !o.is_empty()) else {
        return Box::new(values.iter());
    };
    let listed: std::collections::HashSet<&String> = order.iter().collect();
    Box::new(
        order
            .iter()
            .filter_map(|v| values.get_key_value(v))
            .chain(values.iter().filter(move |(v, _)| !listed.contains(v))),
    )
}

/// `map[key]`, inserting a default; allocates the key only when it is new.
pub(super) fn slot<'m, V>(
    map: &'m mut BTreeMap<String, V>,
    key: &str,
    new: impl FnOnce() -> V,
) -> &'m mut V {
    if !map.contains_key(key) {
        map.insert(key.to_string(), new());
    }
    map.get_mut(key).expect("just inserted")
}

/// The duplicate check across blocks: one 64-bit hash per numbered turn.
#[derive(Default)]
pub(crate) struct DuplicateCheck {
    seen: KeySet,
}

impl DuplicateCheck {
    pub(crate) fn check(&mut self, keys: &[(u64, usize, u64)], warnings: &mut Warnings) {
        for &(k, source, line) in keys {
            if !self.seen.insert(k) {
                warnings.add(WarningKind::DuplicateTurn, source, line);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind is listed once, in the order of its name (the order
    /// summary.json and the partial results keep), and reads back by name.
    #[test]
    fn warning_kinds_are_declared_once_in_name_order() {
        let names: Vec<&str> = WARNING_KINDS.iter().map(|k| k.name()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(names, sorted);
        let mut w = Warnings::default();
        for (i, k) in WARNING_KINDS.iter().enumerate() {
            w.add(*k, 0, i as u64 + 1);
            assert!(!k.meaning().is_empty());
        }
        let json = serde_json::to_string(&w).unwrap();
        assert!(json.starts_with("{\"critic_not_run\""), "{json}");
        let back: Warnings = serde_json::from_str(&json).unwrap();
        assert_eq!(back, w);
        assert!(serde_json::from_str::<Warnings>(r#"{"made_up":[1,[]]}"#).is_err());
    }
}
