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

use crate::replay::{Identity, NONE};
use crate::tally::{Counts, SegmentMap};

type ById<V> = HashMap<u64, V, BuildHasherDefault<Identity>>;

/// The longest segment value, in bytes: a longer one is cut (at a
/// character boundary) and ends in `…`, so a 200 MB scope cannot make
/// segments.csv grow with it.
pub const MAX_VALUE_BYTES: usize = 256;

/// `s` cut to at most `max` bytes at a character boundary, with `…` when
/// cut.
pub fn capped(s: &str, max: usize) -> Cow<'_, str> {
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
pub fn raw_label(s: &str) -> Cow<'_, str> {
    if s.len() >= 2 && s.starts_with('"') && !s.contains('\\') {
        Cow::Borrowed(&s[1..s.len() - 1])
    } else {
        match serde_json::from_str::<Value>(s) {
            Ok(v) => Cow::Owned(scalar_label(&v)),
            Err(_) => Cow::Borrowed(s),
        }
    }
}

/// A JSON value as a segment label (`null` is `(none)`).
pub fn scalar_label(v: &Value) -> String {
    match v {
        Value::Null => NONE.to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

struct Slot {
    dim: u32,
    value: String,
    counts: Vec<Counts>,
}

/// Segment tallies of one block.
pub struct SegmentAcc {
    variants: usize,
    dims: Vec<String>,
    slots: Vec<Slot>,
    index: ById<usize>,
    /// Each distinct raw `scope` of the block, with its (dimension, label)
    /// pairs: worked out once, not re-parsed for every turn.
    scopes: Vec<(String, Vec<(u32, String)>)>,
    scope_index: ById<usize>,
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
    pub fn new(variants: usize) -> SegmentAcc {
        SegmentAcc {
            variants,
            dims: Vec::new(),
            slots: Vec::new(),
            index: HashMap::default(),
            scopes: Vec::new(),
            scope_index: HashMap::default(),
        }
    }

    /// The id of dimension `name` (a block sees only a handful).
    pub fn dim(&mut self, name: &str) -> u32 {
        match self.dims.iter().position(|d| d == name) {
            Some(i) => i as u32,
            None => {
                self.dims.push(name.to_string());
                (self.dims.len() - 1) as u32
            }
        }
    }

    /// Add one turn's per-variant counts to segment (`dim`, `value`).
    pub fn add(&mut self, dim: u32, value: &str, counts: &[Counts]) {
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
        let i = match found {
            Some(i) => i,
            None => {
                self.slots.push(Slot {
                    dim,
                    value: value.to_string(),
                    counts: vec![Counts::default(); self.variants],
                });
                let i = self.slots.len() - 1;
                self.index.entry(k).or_insert(i);
                i
            }
        };
        for (s, c) in self.slots[i].counts.iter_mut().zip(counts) {
            s.merge(c);
        }
    }

    /// Add one turn's counts to the segments of its `scope`: one dimension
    /// `scope.KEY` per key of an object, else one dimension `scope`.
    pub fn add_scope(&mut self, text: &str, counts: &[Counts]) {
        let k = key(u32::MAX, text);
        let i = match self.scope_index.get(&k) {
            Some(&i) if self.scopes[i].0 == text => i,
            _ => {
                let pairs = self.scope_pairs(text);
                self.scopes.push((text.to_string(), pairs));
                let i = self.scopes.len() - 1;
                self.scope_index.entry(k).or_insert(i);
                i
            }
        };
        let pairs = std::mem::take(&mut self.scopes[i].1);
        for (dim, value) in &pairs {
            self.add(*dim, value, counts);
        }
        self.scopes[i].1 = pairs;
    }

    fn scope_pairs(&mut self, raw: &str) -> Vec<(u32, String)> {
        let entries = raw
            .starts_with('{')
            .then(|| crate::turn::object_entries(raw))
            .flatten();
        match entries {
            Some(entries) => entries
                .into_iter()
                .map(|(k, v)| {
                    (
                        self.dim(&format!("scope.{k}")),
                        raw_label(v.get()).into_owned(),
                    )
                })
                .collect(),
            None => vec![(self.dim("scope"), raw_label(raw).into_owned())],
        }
    }

    /// The block's tallies as the report's nested map.
    pub fn into_map(self) -> SegmentMap {
        let mut map = SegmentMap::new();
        for s in self.slots {
            map.entry(self.dims[s.dim as usize].clone())
                .or_default()
                .insert(s.value, s.counts);
        }
        map
    }
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
}
