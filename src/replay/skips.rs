//! What a variant skips where the baseline fired (its saved calls), draft
//! by draft: the normalised draft (stripped, lowercased as Python lowers,
//! whitespace collapsed, cut to [`MAX_DRAFT_CHARS`] code points) with how
//! often, in which languages, with which recorded verdicts and at what
//! recorded cost. This is what a reviewer reads before trusting a skip
//! rate (`skips.csv`).
//!
//! Memory stays bounded: past [`MAX_TRACKED_DRAFTS`] distinct drafts per
//! variant, new ones are counted under [`OTHER`]. Maps are ordered, so
//! which drafts are tracked depends only on the input order.

use std::collections::BTreeMap;

use super::segments::{recorded, NONE};
use super::tally::{EventFacts, EventSums};
use crate::gate::pyre::is_space;
use crate::gate::{py_lower, py_strip};
use crate::read::turn::Verdict;

/// Longest normalised draft kept, in code points.
pub(crate) const MAX_DRAFT_CHARS: usize = 200;
/// Distinct drafts tracked per variant; the rest go to [`OTHER`].
pub(crate) const MAX_TRACKED_DRAFTS: usize = 100_000;
/// The row of drafts past the cap.
pub(crate) const OTHER: &str = "(other)";

/// One normalised draft's saved calls under one variant.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SkipTally {
    pub count: u64,
    /// Turns by recorded language (`(none)` without one).
    pub languages: BTreeMap<String, u64>,
    /// Labelled skips by verdict: approve, revise, refuse.
    pub verdicts: [u64; 3],
    /// The recorded events of these turns (their saved cost).
    pub saved: EventSums,
}

impl SkipTally {
    pub fn labelled(&self) -> u64 {
        self.verdicts.iter().sum()
    }

    fn merge(&mut self, o: &SkipTally) {
        let SkipTally {
            count,
            languages,
            verdicts,
            saved,
        } = o;
        self.count += count;
        for (l, n) in languages {
            *self.languages.entry(l.clone()).or_default() += n;
        }
        for (a, b) in self.verdicts.iter_mut().zip(verdicts) {
            *a += b;
        }
        self.saved.merge(saved);
    }
}

/// One variant's skipped drafts.
pub(crate) type SkipMap = BTreeMap<String, SkipTally>;

/// `draft` as `skips.csv` groups it.
pub(crate) fn normalise(draft: &str) -> String {
    let lowered = py_lower(py_strip(draft));
    let mut out = String::new();
    // Python's whitespace (str.split()), which includes U+001C..U+001F.
    let words = lowered.split(is_space).filter(|w| !w.is_empty());
    for (i, word) in words.enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(word);
    }
    let out = match out.char_indices().nth(MAX_DRAFT_CHARS) {
        Some((cut, _)) => out[..cut].to_string(),
        None => out,
    };
    // A draft spelled like the folded row's label is kept apart from it.
    match out == OTHER {
        true => format!("\"{OTHER}\""),
        false => out,
    }
}

/// One saved call of a turn.
pub(crate) struct Skip<'a> {
    pub language: Option<&'a str>,
    pub verdict: Option<Verdict>,
    pub event: Option<&'a EventFacts>,
}

/// Count `skip` under its draft (or [`OTHER`] past the cap).
pub(crate) fn add(map: &mut SkipMap, key: &str, skip: &Skip) {
    let t = slot(map, key);
    t.count += 1;
    // Most saved calls repeat a language already counted: no allocation then.
    let language = skip.language.map(recorded);
    let language = language.as_deref().unwrap_or(NONE);
    match t.languages.get_mut(language) {
        Some(n) => *n += 1,
        None => {
            t.languages.insert(language.to_string(), 1);
        }
    }
    match skip.verdict {
        Some(Verdict::Approve) => t.verdicts[0] += 1,
        Some(Verdict::Revise) => t.verdicts[1] += 1,
        Some(Verdict::Refuse) => t.verdicts[2] += 1,
        None => {}
    }
    match skip.event {
        Some(e) => t.saved.add(e),
        // Saved, but nothing recorded of its cost (as the summary counts it).
        None => t.saved.turns += 1,
    }
}

fn slot<'m>(map: &'m mut SkipMap, key: &str) -> &'m mut SkipTally {
    let key = if map.contains_key(key) || map.len() < MAX_TRACKED_DRAFTS {
        key
    } else {
        OTHER
    };
    if !map.contains_key(key) {
        map.insert(key.to_string(), SkipTally::default());
    }
    map.get_mut(key).expect("just inserted")
}

/// Merge `o` (the next block, in input order) into `mine`.
pub(crate) fn merge(mine: &mut SkipMap, o: &SkipMap) {
    for (k, t) in o {
        slot(mine, k).merge(t);
    }
}

/// The `limit` most skipped drafts (by count, then text), and the rest
/// folded into one [`OTHER`] row, so the rows add up to the saved calls.
pub(crate) fn top(map: &SkipMap, limit: usize) -> Vec<(String, SkipTally)> {
    let mut rows: Vec<(&String, &SkipTally)> = map.iter().filter(|(k, _)| *k != OTHER).collect();
    rows.sort_by(|a, b| b.1.count.cmp(&a.1.count).then_with(|| a.0.cmp(b.0)));
    let mut other = map.get(OTHER).cloned();
    for (_, t) in rows.iter().skip(limit) {
        other.get_or_insert_with(SkipTally::default).merge(t);
    }
    let mut out: Vec<(String, SkipTally)> = rows
        .into_iter()
        .take(limit)
        .map(|(k, t)| (k.clone(), t.clone()))
        .collect();
    if let Some(o) = other {
        out.push((OTHER.to_string(), o));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skip(map: &mut SkipMap, draft: &str) {
        let s = Skip {
            language: Some("en"),
            verdict: Some(Verdict::Approve),
            event: None,
        };
        add(map, &normalise(draft), &s);
    }

    #[test]
    fn drafts_group_by_their_normalised_text() {
        assert_eq!(normalise("  Got it,\n  THANKS!\t"), "got it, thanks!");
        assert_eq!(normalise("ok\u{1c}alpha\u{3000}beta"), "ok alpha beta");
        assert_eq!(normalise(&"x".repeat(300)).chars().count(), MAX_DRAFT_CHARS);
        let mut m = SkipMap::new();
        for d in ["Got it, thanks!", "got it,  thanks!", "ok", "Sure"] {
            skip(&mut m, d);
        }
        let rows = top(&m, 2);
        assert_eq!(rows[0].0, "got it, thanks!");
        assert_eq!(rows[0].1.count, 2);
        assert_eq!(rows[1].0, "ok");
        // The rest is one (other) row: the counts still add up.
        assert_eq!(rows[2].0, OTHER);
        assert_eq!(rows.iter().map(|r| r.1.count).sum::<u64>(), 4);
    }
}
