//! One block's segment tallies (`segments.csv`), keyed by hash.
//!
//! Every turn adds its per-variant counts to five or more segments
//! (language, intent, draft length, each scope key, each `--group-by`
//! path). Looking those up in the report's nested B-trees of strings cost
//! about a tenth of a replay, so a block tallies into a flat table found by
//! a 64-bit hash of (dimension, value), checked against the stored strings,
//! and turns it into the mergeable [`SegmentMap`] once, at the end.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use serde_json::Value;

use std::collections::BTreeMap;

use super::hash::Identity;
use super::tally::{length_bucket_index, VariantTally, LENGTH_BUCKETS};
use crate::read::turn::CallSite;
use crate::replay::tally::{Counts, SegmentMap};

type ById<V> = HashMap<u64, V, BuildHasherDefault<Identity>>;

/// The longest segment value, in bytes: a longer one is cut (at a
/// character boundary) and ends in `…`, so a 200 MB scope cannot make
/// segments.csv grow with it.
pub(crate) const MAX_VALUE_BYTES: usize = 256;

/// `s` cut to at most `max` bytes at a character boundary, with `…` when
/// cut.
pub(crate) fn capped(s: &str, max: usize) -> Cow<'_, str> {
    if s.len() <= max {
        return Cow::Borrowed(s);
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}…", &s[..end]))
}

/// A scope value as a segment label, borrowed when it is a plain string.
pub(crate) fn raw_label(s: &str) -> Cow<'_, str> {
    if s.len() >= 2 && s.starts_with('"') && !s.contains('\\') {
        recorded(&s[1..s.len() - 1])
    } else {
        match serde_json::from_str::<Value>(s) {
            Ok(v) => Cow::Owned(scalar_label(&v)),
            Err(_) => Cow::Borrowed(s),
        }
    }
}

/// A recorded value as a segment label: kept apart from the labels the
/// tool writes itself ([`NONE`], [`OTHER`]) by double quotes when it is
/// spelled like one.
pub(crate) fn recorded(v: &str) -> Cow<'_, str> {
    if v == NONE || v == OTHER {
        Cow::Owned(format!("\"{v}\""))
    } else {
        Cow::Borrowed(v)
    }
}

/// A JSON value as a segment label (`null` is `(none)`).
pub(crate) fn scalar_label(v: &Value) -> String {
    match v {
        Value::Null => NONE.to_string(),
        Value::String(s) => recorded(s).into_owned(),
        other => other.to_string(),
    }
}

struct Slot {
    dim: u32,
    value: String,
    counts: Vec<Counts>,
}

/// Distinct scope dimensions (`scope` and every `scope.KEY`) a run may
/// have. Past it a run's scope dimensions would not be worth reading nor
/// bounded in memory, and capping them in any order would make a merge of
/// shards differ from one replay: so a run with more has none (see
/// [`drop_scope_dimensions_past_the_cap`]), and says so in a note.
pub(crate) const MAX_SCOPE_DIMENSIONS: usize = 256;

/// Whether `dim` is a scope dimension (`scope`, `scope.KEY`, `scope."a.b"`)
/// rather than a `--group-by` path into a scope (`scope.user.tier`: those
/// hold no quote, see [`validate_group_by`]).
pub(crate) fn is_scope_dimension(dim: &str) -> bool {
    dim == "scope"
        || dim
            .strip_prefix("scope.")
            .is_some_and(|k| k.starts_with('"') || !k.contains('.'))
}

/// The dimension of scope key `k`: `scope.KEY`, with the key written as a
/// JSON string where it is empty or holds a `.` or `"` (`scope."user.tier"`),
/// so that it never has the name of a `--group-by` path into nested objects
/// (`scope.user.tier`), which would count its turns twice.
pub(crate) fn scope_dimension(k: &str) -> String {
    if k.is_empty() || k.contains(['.', '"']) {
        format!(
            "scope.{}",
            serde_json::to_string(k).expect("a string serialises")
        )
    } else {
        format!("scope.{k}")
    }
}

/// Every scope dimension removed when a run has more than
/// [`MAX_SCOPE_DIMENSIONS`] of them; true when they were (or already had
/// been). Whether a run has more does not depend on the order its blocks
/// or shards are merged in, so a merge decides as one replay does.
pub(crate) fn drop_scope_dimensions_past_the_cap(
    segments: &mut SegmentMap,
    order: &mut BTreeMap<String, Vec<String>>,
    overflowed: bool,
) -> bool {
    let over = overflowed
        || segments.keys().filter(|d| is_scope_dimension(d)).count() > MAX_SCOPE_DIMENSIONS;
    if over {
        segments.retain(|d, _| !is_scope_dimension(d));
        order.retain(|d, _| !is_scope_dimension(d));
    }
    over
}

/// Every scope dimension gets the turns that do not have it (no such key,
/// a scope that is not an object, or no scope) in its `(none)` row, beside
/// those whose value is null: so each dimension adds up to the run's turns
/// like every other.
pub(crate) fn add_absent_scope_rows(segments: &mut SegmentMap, variants: &[VariantTally]) {
    for (dim, values) in segments.iter_mut() {
        if !is_scope_dimension(dim) {
            continue;
        }
        let mut present = vec![Counts::default(); variants.len()];
        for counts in values.values() {
            for (p, c) in present.iter_mut().zip(counts) {
                p.merge(c);
            }
        }
        let absent: Vec<Counts> = variants
            .iter()
            .zip(&present)
            .map(|(v, p)| v.counts.minus(p))
            .collect();
        if absent.first().is_some_and(|c| c.turns > 0) {
            let row = values
                .entry(NONE.to_string())
                .or_insert_with(|| vec![Counts::default(); variants.len()]);
            for (r, a) in row.iter_mut().zip(&absent) {
                r.merge(a);
            }
        }
    }
}

/// Segment tallies of one block.
pub(crate) struct SegmentAcc {
    variants: usize,
    dims: Vec<String>,
    /// The id of each dimension in `dims` (a scope may have thousands).
    dim_ids: HashMap<String, u32>,
    /// How many of `dims` are scope dimensions, and whether the block saw
    /// more than [`MAX_SCOPE_DIMENSIONS`] (then it adds no more, and the
    /// run has none).
    scope_dims: usize,
    pub scope_overflow: bool,
    slots: Vec<Slot>,
    index: ById<usize>,
    /// Each distinct raw `scope` of the block, with the slots of its
    /// (dimension, label) pairs: worked out once, not re-parsed (or
    /// hashed again) for every turn.
    scopes: Vec<(String, Vec<usize>)>,
    scope_index: ById<usize>,
    /// The slot of each draft-length bucket, once used.
    length_slots: [Option<usize>; LENGTH_BUCKETS.len()],
    /// Per dimension, how often a new value was counted under `(other)`
    /// because the block's cells reached [`MAX_SEGMENT_CELLS`].
    folded: BTreeMap<u32, u64>,
}

/// A 64-bit hash of (dimension, value), eight bytes a step (a byte-wise
/// hash was a visible share of a replay). Collisions are resolved by
/// comparing the stored strings, so quality only affects speed.
fn key(dim: u32, value: &str) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let b = value.as_bytes();
    let mut h = (u64::from(dim) << 32 ^ b.len() as u64).wrapping_mul(K);
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        h = (h ^ w).wrapping_mul(K).rotate_left(29);
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    h = (h ^ u64::from_le_bytes(tail)).wrapping_mul(K);
    h ^ (h >> 31)
}

impl SegmentAcc {
    pub(crate) fn new(variants: usize) -> SegmentAcc {
        SegmentAcc {
            variants,
            dims: Vec::new(),
            dim_ids: HashMap::new(),
            scope_dims: 0,
            scope_overflow: false,
            slots: Vec::new(),
            index: HashMap::default(),
            scopes: Vec::new(),
            scope_index: HashMap::default(),
            length_slots: [None; LENGTH_BUCKETS.len()],
            folded: BTreeMap::new(),
        }
    }

    /// The dimensions whose new values the block counted under `(other)`
    /// for want of cells, with how often.
    pub(crate) fn folded(&self) -> impl Iterator<Item = (&str, u64)> + '_ {
        self.folded
            .iter()
            .map(|(d, n)| (self.dims[*d as usize].as_str(), *n))
    }

    /// The id of dimension `name`.
    pub(crate) fn dim(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.dim_ids.get(name) {
            return i;
        }
        let i = self.dims.len() as u32;
        self.dims.push(name.to_string());
        self.dim_ids.insert(name.to_string(), i);
        if is_scope_dimension(name) {
            self.scope_dims += 1;
            self.scope_overflow |= self.scope_dims > MAX_SCOPE_DIMENSIONS;
        }
        i
    }

    /// Add one turn's per-variant counts to segment (`dim`, `value`).
    pub(crate) fn add(&mut self, dim: u32, value: &str, counts: &[Counts]) {
        let i = self.slot(dim, value);
        self.merge_into(i, counts);
    }

    /// The index of segment (`dim`, `value`)'s slot, made when new. Slots
    /// are never removed, so an index stays good for the block.
    fn slot(&mut self, dim: u32, value: &str) -> usize {
        let value = capped(value, MAX_VALUE_BYTES);
        let value = value.as_ref();
        let k = key(dim, value);
        let found = match self.index.get(&k) {
            Some(&i) if self.slots[i].dim == dim && self.slots[i].value == value => Some(i),
            // A hash collision: find the slot the slow way.
            Some(_) => self
                .slots
                .iter()
                .position(|s| s.dim == dim && s.value == value),
            None => None,
        };
        if found.is_none()
            && value != OTHER
            && (self.slots.len() + 1) * self.variants.max(1) > MAX_SEGMENT_CELLS
        {
            *self.folded.entry(dim).or_default() += 1;
            return self.slot(dim, OTHER);
        }
        found.unwrap_or_else(|| {
            self.slots.push(Slot {
                dim,
                value: value.to_string(),
                counts: vec![Counts::default(); self.variants],
            });
            let i = self.slots.len() - 1;
            self.index.entry(k).or_insert(i);
            i
        })
    }

    fn merge_into(&mut self, slot: usize, counts: &[Counts]) {
        for (s, c) in self.slots[slot].counts.iter_mut().zip(counts) {
            s.merge(c);
        }
    }

    /// Add one turn's counts to the segment of its draft-length bucket
    /// (one of six: their slots are remembered, not hashed every turn).
    pub(crate) fn add_length(&mut self, chars: u64, counts: &[Counts]) {
        let b = length_bucket_index(chars);
        let i = match self.length_slots[b] {
            Some(i) => i,
            None => {
                let i = self.slot(DIM_DRAFT_LENGTH, LENGTH_BUCKETS[b]);
                self.length_slots[b] = Some(i);
                i
            }
        };
        self.merge_into(i, counts);
    }

    /// Add one turn's counts to the segments of its `scope`: one dimension
    /// `scope.KEY` per key of an object, else one dimension `scope`.
    pub(crate) fn add_scope(&mut self, text: &str, counts: &[Counts]) {
        if self.scope_overflow {
            return;
        }
        let k = key(u32::MAX, text);
        let i = match self.scope_index.get(&k) {
            Some(&i) if self.scopes[i].0 == text => i,
            _ => {
                let slots = self
                    .scope_pairs(text)
                    .into_iter()
                    .map(|(dim, value)| self.slot(dim, &value))
                    .collect();
                self.scopes.push((text.to_string(), slots));
                let i = self.scopes.len() - 1;
                self.scope_index.entry(k).or_insert(i);
                i
            }
        };
        for j in 0..self.scopes[i].1.len() {
            let slot = self.scopes[i].1[j];
            self.merge_into(slot, counts);
        }
    }

    fn scope_pairs(&mut self, raw: &str) -> Vec<(u32, String)> {
        let entries = raw
            .starts_with('{')
            .then(|| crate::read::turn::object_entries(raw))
            .flatten();
        match entries {
            Some(entries) => {
                let mut pairs = Vec::with_capacity(entries.len().min(MAX_SCOPE_DIMENSIONS + 1));
                for (k, v) in entries {
                    let dim = self.dim(&scope_dimension(&k));
                    if self.scope_overflow {
                        // The run will have no scope dimensions: stop here
                        // (a scope of a million keys costs one pass).
                        return Vec::new();
                    }
                    pairs.push((dim, raw_label(v.get()).into_owned()));
                }
                pairs
            }
            None => vec![(self.dim("scope"), raw_label(raw).into_owned())],
        }
    }

    /// The block's tallies as the report's nested map.
    pub(crate) fn into_map(self) -> SegmentMap {
        let mut map = SegmentMap::new();
        for s in self.slots {
            if self.scope_overflow && is_scope_dimension(&self.dims[s.dim as usize]) {
                continue;
            }
            map.entry(self.dims[s.dim as usize].clone())
                .or_default()
                .insert(s.value, s.counts);
        }
        map
    }
}

/// Distinct values tracked per grouping dimension; later new values are
/// counted under `(other)` at once (keeps memory bounded).
pub(crate) const MAX_TRACKED_VALUES: usize = 100_000;

/// Segment cells (distinct values times variants) tracked over every
/// dimension together, in a block and in the run: past it a new value is
/// counted under its dimension's `(other)`. 256 scope dimensions of
/// 100,000 values each (what the per-dimension cap allows) took 1.4 GB
/// from 5,000 lines; a cell costs about a kilobyte.
pub(crate) const MAX_SEGMENT_CELLS: usize = 100_000;

/// The `(other)` segment value.
pub(crate) const OTHER: &str = "(other)";

/// The value of a dimension a turn does not have.
pub(crate) const NONE: &str = "(none)";

pub(crate) const DIM_LANGUAGE: u32 = 0;

pub(crate) const DIM_INTENT: u32 = 1;

pub(crate) const DIM_DRAFT_LENGTH: u32 = 2;

pub(crate) const DIM_CALL_SITE: u32 = 3;

/// A dimension every replay segments by: its name in segments.csv and
/// what its values are.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dimension {
    pub name: &'static str,
    pub meaning: &'static str,
}

/// The dimensions every replay segments by (`DIM_*` in this order), beside
/// `scope` / `scope.KEY`: declared once, here.
pub(crate) const BUILTIN: [Dimension; 4] = [
    Dimension {
        name: "language",
        meaning: "the turn's language tag as recorded ((none) without one)",
    },
    Dimension {
        name: "intent",
        meaning: "the intent verdict's label as recorded ((none) without one)",
    },
    Dimension {
        name: DRAFT_LENGTH,
        meaning: "the draft's length in code points, as recorded (not stripped), in buckets (value_order gives their order)",
    },
    Dimension {
        name: "call_site",
        meaning: "turn (a user-facing turn) or skill_gate (a skill-gate call): where the critic call would be",
    },
];

/// The builtin dimensions' names, in `DIM_*` order.
pub(crate) const BUILTIN_DIMENSIONS: [&str; 4] = [
    BUILTIN[0].name,
    BUILTIN[1].name,
    BUILTIN[2].name,
    BUILTIN[3].name,
];

/// The dimension of draft lengths in code points ([`LENGTH_BUCKETS`]).
pub(crate) const DRAFT_LENGTH: &str = "draft_length";

/// Check `--group-by` paths: dotted, and not a dimension segments.csv
/// already has (it would count every turn again), nor given twice.
pub fn validate_group_by(paths: &[String]) -> crate::Result<()> {
    for (i, g) in paths.iter().enumerate() {
        if g.is_empty() || g.split('.').any(str::is_empty) {
            return Err(crate::Error::Usage(crate::said![
                crate::vocab::Setting::GroupBy,
                format!(" {g:?}: give a dotted path such as scope.user.tier or critic.model")
            ]));
        }
        if g.contains('"') {
            return Err(crate::Error::Usage(crate::said![crate::vocab::Setting::GroupBy, format!(" {g}: a path cannot hold a double quote (segments.csv names a scope key with dots as scope.\"a.b\", built in)")]));
        }
        let scope_level = g == "scope" || (g.starts_with("scope.") && g.matches('.').count() == 1);
        if BUILTIN_DIMENSIONS.contains(&g.as_str()) || scope_level {
            return Err(crate::Error::Usage(crate::said![crate::vocab::Setting::GroupBy, format!(" {g}: segments.csv already has this dimension (language, intent, draft_length, call_site, scope and every scope.KEY are built in); group by a deeper path (scope.KEY.FIELD) or another field")]));
        }
        if paths[..i].contains(g) {
            return Err(crate::Error::Usage(crate::said![
                crate::vocab::Setting::GroupBy,
                format!(" {g} is given twice")
            ]));
        }
    }
    Ok(())
}

/// Value of a dotted path into a JSON value, as a segment label.
pub(crate) fn path_value(v: &Value, path: &str) -> String {
    let mut cur = v;
    for part in path.split('.') {
        match cur.get(part) {
            Some(x) => cur = x,
            None => return NONE.to_string(),
        }
    }
    crate::replay::segments::scalar_label(cur)
}

/// A block's segment tallies, with the `call_site` `turn` row: the block's
/// per-variant totals less its skill-gate calls (only those are added turn
/// by turn).
pub(crate) fn block_segments(acc: SegmentAcc, variants: &[VariantTally]) -> SegmentMap {
    let mut map = acc.into_map();
    let sites = map
        .entry(BUILTIN_DIMENSIONS[DIM_CALL_SITE as usize].to_string())
        .or_default();
    let turn: Vec<Counts> = variants
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

/// Keep the `limit` largest values of each dimension, folding the rest into
/// `(other)`; returns the dimensions that were cut, with their distinct
/// value counts.
pub(crate) fn cap_segments(
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

    fn counts(turns: u64, fires: u64) -> Vec<Counts> {
        vec![Counts {
            turns,
            fires,
            ..Default::default()
        }]
    }

    #[test]
    fn adds_by_dimension_and_value() {
        let mut acc = SegmentAcc::new(1);
        let lang = acc.dim("language");
        let intent = acc.dim("intent");
        assert_eq!(acc.dim("language"), lang);
        acc.add(lang, "en", &counts(1, 1));
        acc.add(lang, "de", &counts(1, 0));
        acc.add(lang, "en", &counts(1, 0));
        // The same value under another dimension is another segment.
        acc.add(intent, "en", &counts(1, 1));
        let map = acc.into_map();
        assert_eq!(map["language"]["en"][0].turns, 2);
        assert_eq!(map["language"]["en"][0].fires, 1);
        assert_eq!(map["language"]["de"][0].turns, 1);
        assert_eq!(map["intent"]["en"][0].turns, 1);
        assert_eq!(map.len(), 2);
    }

    #[test]
    fn scopes_are_segmented_per_key() {
        let mut acc = SegmentAcc::new(1);
        let obj = r#"{"tenant":"acme","tier":2,"x":null}"#;
        let plain = r#""web""#;
        acc.add_scope(obj, &counts(1, 1));
        acc.add_scope(obj, &counts(1, 0));
        acc.add_scope(plain, &counts(1, 1));
        let map = acc.into_map();
        assert_eq!(map["scope.tenant"]["acme"][0].turns, 2);
        assert_eq!(map["scope.tier"]["2"][0].fires, 1);
        assert_eq!(map["scope.x"][NONE][0].turns, 2);
        assert_eq!(map["scope"]["web"][0].turns, 1);
    }

    #[test]
    fn many_values_stay_apart() {
        let mut acc = SegmentAcc::new(1);
        let d = acc.dim("scope.user");
        for round in 0..3 {
            for i in 0..5000 {
                acc.add(d, &format!("u{i}"), &counts(1, round % 2));
            }
        }
        let map = acc.into_map();
        assert_eq!(map["scope.user"].len(), 5000);
        assert!(map["scope.user"]
            .values()
            .all(|c| c[0].turns == 3 && c[0].fires == 1));
    }

    /// A 200 MB nested scope made segments.csv 400 MB.
    #[test]
    fn long_values_are_cut_at_a_character_boundary() {
        let mut acc = SegmentAcc::new(1);
        let d = acc.dim("scope.blob");
        let long = "é".repeat(1000);
        acc.add(d, &long, &counts(1, 1));
        acc.add(d, &long, &counts(1, 0));
        let map = acc.into_map();
        let (value, c) = map["scope.blob"].iter().next().unwrap();
        assert_eq!(c[0].turns, 2);
        assert!(value.len() <= MAX_VALUE_BYTES + '…'.len_utf8());
        assert!(value.ends_with('…') && value.starts_with("éé"));
        assert_eq!(capped("short", 10), "short");
    }

    #[test]
    fn raw_labels_are_plain_strings_or_json() {
        assert_eq!(raw_label("\"acme\""), "acme");
        assert_eq!(raw_label("\"a\\\"b\""), "a\"b");
        assert_eq!(raw_label("42"), "42");
        assert_eq!(raw_label("null"), NONE);
    }

    mod cap {
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
}
