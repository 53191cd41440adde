//! Scope keys as columns of `decisions.csv` and `regressions.csv`
//! (`scope.tenant` -> `scope_tenant`), so a table joins on a tenant without
//! parsing JSON. The keys are those `--scope-columns` names, else those
//! found in the first turns of the input: found before any row is written,
//! from the same leading blocks whatever the thread count, so the header
//! never depends on scheduling. The raw JSON stays in `scope`.

use std::borrow::Cow;

use serde_json::value::RawValue;

use crate::read::reader::{lines, Block};
use crate::read::turn::object_entries;
use crate::replay::segments::{capped, raw_label, MAX_VALUE_BYTES};

/// Turns read for the default keys.
pub(crate) const SCAN_TURNS: usize = 10_000;
/// Blocks (of 1 MiB) read at most for the default keys, so lines of
/// megabytes cannot make the scan hold the input in memory.
pub(crate) const SCAN_BLOCKS: usize = 64;
/// Keys found by default at most (in order of first appearance).
pub(crate) const MAX_FOUND: usize = 16;
/// Keys `--scope-columns` may name at most.
pub(crate) const MAX_NAMED: usize = 64;
/// The longest key made a column, in bytes.
pub(crate) const MAX_KEY_BYTES: usize = 64;

/// The scope keys that become columns, in column order.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct ScopeColumns {
    keys: Vec<String>,
    /// Usable keys the default scan saw past [`MAX_FOUND`], in order (a
    /// note names them: they are not columns), and whether there were
    /// more than [`MAX_LEFT_OUT`] of them.
    left_out: Vec<String>,
    left_out_more: bool,
    /// Keys the scan saw that cannot be columns (empty, too long, control
    /// characters), in order, for the note; and whether there were more.
    #[serde(default)]
    unusable: Vec<String>,
    #[serde(default)]
    unusable_more: bool,
}

/// Keys past [`MAX_FOUND`] remembered by name; that there are more is
/// remembered, not how many (counting them took a set of every key: a
/// million on one line).
const MAX_LEFT_OUT: usize = 1000;

/// Distinct usable keys a scan records, in order: the columns and the
/// names left out.
const SCAN_KEYS: usize = MAX_FOUND + MAX_LEFT_OUT;

/// What the default scan saw of one input's leading blocks, in a form that
/// concatenates: one replay's scan of several shards' files is the shards'
/// scans one after the other (so `merge` finds the columns one replay
/// finds, see [`ScopeColumns::found`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Scan {
    /// Per leading block, in order: its line ends (they decide how many
    /// blocks are read) and its non-blank lines (those are scanned).
    pub blocks: Vec<(u64, u64)>,
    /// Each usable key at its first appearance in the first
    /// [`SCAN_TURNS`] non-blank lines: (the line's index among them, key).
    pub first: Vec<(u64, String)>,
    /// Likewise each key that cannot be a column (at most
    /// [`MAX_LEFT_OUT`]).
    #[serde(default)]
    pub unusable: Vec<(u64, String)>,
    /// The index of the line where a key past [`SCAN_KEYS`] usable ones
    /// (or past [`MAX_LEFT_OUT`] unusable ones) first appeared: the lists
    /// are each the first so many keys in order, which is all a merge needs
    /// to find what one replay finds (the first so many of several scans
    /// one after the other are among the first so many of each).
    #[serde(default)]
    pub more_at: Option<u64>,
    #[serde(default)]
    pub unusable_more_at: Option<u64>,
}

impl Scan {
    /// The scan of an input's leading blocks (as the replay reads them:
    /// up to [`SCAN_TURNS`] line ends or [`SCAN_BLOCKS`] blocks). A line
    /// longer than `max_line_bytes` is invalid, so it is not read for keys
    /// (its scope of a million keys took seconds to list).
    pub(crate) fn of(blocks: &[&Block], max_line_bytes: usize) -> Scan {
        let mut scan = Scan::default();
        let mut seen = std::collections::HashSet::new();
        let mut index = 0u64;
        for b in blocks {
            let ends = memchr::memchr_iter(b'\n', b.bytes()).count() as u64;
            // Converted turns come as values: each stands for a line.
            let turns = b.turns().count() as u64;
            for (_, c) in b.turns() {
                if index < SCAN_TURNS as u64 {
                    scan.note_keys(c.turn().scope.as_deref(), index, &mut seen);
                }
                index += 1;
            }
            let mut nonblank = turns;
            let lines = match b.overlong {
                Some(_) => None,
                None => Some(lines(b)),
            };
            for (_, line) in lines.into_iter().flatten() {
                if !line.iter().any(|c| !c.is_ascii_whitespace()) {
                    continue;
                }
                nonblank += 1;
                if index < SCAN_TURNS as u64 && line.len() <= max_line_bytes {
                    scan.note_keys(top_level_scope(line), index, &mut seen);
                }
                index += 1;
            }
            scan.blocks.push((ends + turns, nonblank));
        }
        scan
    }

    /// The keys of a turn's `scope` (its raw JSON text).
    fn note_keys<'l>(
        &mut self,
        scope: Option<&'l str>,
        index: u64,
        seen: &mut std::collections::HashSet<Cow<'l, str>>,
    ) {
        let Some(entries) = scope.and_then(object_entries) else {
            return;
        };
        for (k, _) in entries {
            if seen.contains(&k) {
                continue;
            }
            let (list, cap, more) = match unusable(&k) {
                None => (&mut self.first, SCAN_KEYS, &mut self.more_at),
                Some(_) => (&mut self.unusable, MAX_LEFT_OUT, &mut self.unusable_more_at),
            };
            if list.len() < cap {
                list.push((index, k.to_string()));
                seen.insert(k);
            } else if more.is_none() {
                *more = Some(index);
            }
        }
    }
}

/// The first `cap` distinct keys of several scans in order, and whether
/// there were more.
struct KeyAcc {
    cap: usize,
    keys: Vec<String>,
    seen: std::collections::HashSet<String>,
    more: bool,
}

impl KeyAcc {
    fn new(cap: usize) -> KeyAcc {
        KeyAcc {
            cap,
            keys: Vec::new(),
            seen: Default::default(),
            more: false,
        }
    }

    /// One scan's list (the lines before `take`), and whether that scan
    /// saw more keys than its list holds before `take`.
    fn add(&mut self, list: &[(u64, String)], more_at: Option<u64>, take: u64) {
        for (_, k) in list.iter().take_while(|(i, _)| *i < take) {
            if self.seen.contains(k) {
                continue;
            }
            if self.keys.len() < self.cap {
                self.seen.insert(k.clone());
                self.keys.push(k.clone());
            } else {
                self.more = true;
            }
        }
        // A scan that saw more distinct keys than it lists saw more than
        // `cap` on its own.
        self.more |= more_at.is_some_and(|i| i < take);
    }
}

impl ScopeColumns {
    /// The keys `--scope-columns` names (an empty list: no columns).
    pub(crate) fn named(keys: &[String]) -> crate::Result<ScopeColumns> {
        let usage = |m: crate::options::Said| Err(crate::Error::Usage(m));
        if keys.len() > MAX_NAMED {
            return usage(crate::said![
                crate::vocab::Setting::ScopeColumns,
                format!(
                    " names {} keys; at most {MAX_NAMED} can be columns",
                    keys.len()
                )
            ]);
        }
        for (i, k) in keys.iter().enumerate() {
            if let Some(why) = unusable(k) {
                return usage(crate::said![
                    crate::vocab::Setting::ScopeColumns,
                    format!(": key {k:?} {why}")
                ]);
            }
            if keys[..i].contains(k) {
                return usage(crate::said![
                    crate::vocab::Setting::ScopeColumns,
                    format!(": key {k:?} is named twice")
                ]);
            }
        }
        Ok(ScopeColumns {
            keys: keys.to_vec(),
            ..Default::default()
        })
    }

    /// The default keys of one replay over inputs whose leading blocks
    /// were scanned as `scans` (one input's, or several shards' in order):
    /// the keys of the scopes of the first [`SCAN_TURNS`] non-blank lines
    /// of the first blocks (up to [`SCAN_TURNS`] line ends or
    /// [`SCAN_BLOCKS`] blocks), at most [`MAX_FOUND`], in order of first
    /// appearance. Lines that are not JSON objects are passed over (the
    /// replay reports them).
    pub(crate) fn found(scans: &[&Scan]) -> ScopeColumns {
        let mut usable = KeyAcc::new(SCAN_KEYS);
        let mut unusable = KeyAcc::new(MAX_LEFT_OUT);
        let (mut ends, mut blocks, mut scanned) = (0u64, 0usize, 0u64);
        for scan in scans {
            let mut lines = 0;
            for &(block_ends, nonblank) in &scan.blocks {
                if ends >= SCAN_TURNS as u64 || blocks >= SCAN_BLOCKS {
                    break;
                }
                ends += block_ends;
                blocks += 1;
                lines += nonblank;
            }
            let take = lines.min(SCAN_TURNS as u64 - scanned);
            usable.add(&scan.first, scan.more_at, take);
            unusable.add(&scan.unusable, scan.unusable_more_at, take);
            scanned += take;
        }
        let mut keys = usable.keys;
        let left_out = keys.split_off(keys.len().min(MAX_FOUND));
        ScopeColumns {
            keys,
            left_out,
            left_out_more: usable.more,
            unusable: unusable.keys,
            unusable_more: unusable.more,
        }
    }

    /// What the run should say of the keys it did not make columns.
    pub(crate) fn notes(&self) -> impl Iterator<Item = String> {
        self.note().into_iter().chain(self.unusable_note())
    }

    /// The keys that cannot be columns, named.
    fn unusable_note(&self) -> Option<String> {
        let n = self.unusable.len();
        let count = match self.unusable_more {
            true => format!("more than {n}"),
            false => n.to_string(),
        };
        (n > 0).then(|| {
            let shown: Vec<String> = self
                .unusable
                .iter()
                .take(8)
                .map(|k| serde_json::to_string(&capped(k, 24)).expect("a string serialises"))
                .collect();
            let more = if n > 8 { ", ..." } else { "" };
            format!(
                "{count} scope keys cannot be columns of decisions.csv ({}{more}): a column's key is 1 to {MAX_KEY_BYTES} bytes without control characters; they are still in the scope column and in segments.csv",
                shown.join(", ")
            )
        })
    }

    fn note(&self) -> Option<String> {
        let n = self.left_out.len();
        let count = match self.left_out_more {
            true => format!("more than {n}"),
            false => n.to_string(),
        };
        (n > 0).then(|| {
            let shown: Vec<&str> = self.left_out.iter().take(8).map(String::as_str).collect();
            let more = if n > 8 { ", ..." } else { "" };
            crate::said![format!("{count} more scope keys are not columns ({}{more}): the first {MAX_FOUND} are; name the ones you want with ", shown.join(", ")), crate::vocab::Setting::ScopeColumns].to_string()
        })
    }

    pub(crate) fn keys(&self) -> &[String] {
        &self.keys
    }

    /// The column of a key.
    pub(crate) fn column_name(key: &str) -> String {
        format!("scope_{key}")
    }

    /// Each key's value in the raw `scope` JSON, in column order: a string
    /// as it is, other JSON as its text, cut to [`MAX_VALUE_BYTES`];
    /// None where the key is absent or null, or the scope is not an object.
    pub(crate) fn values<'a>(&self, scope: Option<&'a str>) -> Vec<Option<Cow<'a, str>>> {
        let entries = scope
            .filter(|s| !self.keys.is_empty() && s.starts_with('{'))
            .and_then(object_entries)
            .unwrap_or_default();
        self.keys
            .iter()
            .map(|k| {
                let (_, v) = entries.iter().find(|(e, _)| e == k)?;
                let v: &'a RawValue = v;
                (v.get() != "null").then(|| match raw_label(v.get()) {
                    Cow::Borrowed(s) => capped(s, MAX_VALUE_BYTES),
                    Cow::Owned(s) => Cow::Owned(capped(&s, MAX_VALUE_BYTES).into_owned()),
                })
            })
            .collect()
    }
}

/// The raw JSON of the top-level `scope` of an object line (the last one,
/// as serde keeps), found without parsing the rest: a byte scan that skips
/// strings and tracks depth, then one value read. It runs before the
/// first block is replayed, alone, so it must be cheap (a serde pass over
/// 10,000 lines held the workers back by 2% of a replay). Only columns
/// are picked with it: an invalid line is not told apart (the replay
/// reports it), and a key spelled with escapes is not seen.
fn top_level_scope(line: &[u8]) -> Option<&str> {
    let mut i = line.iter().position(|c| !c.is_ascii_whitespace())?;
    if line[i] != b'{' {
        return None;
    }
    let (mut depth, mut expect_key, mut found) = (1usize, true, None);
    i += 1;
    while i < line.len() {
        match line[i] {
            b'"' => {
                let end = string_end(line, i)?;
                if depth == 1 && expect_key {
                    let key = &line[i + 1..end - 1];
                    i = skip_space(line, end);
                    if line.get(i) != Some(&b':') {
                        return found;
                    }
                    expect_key = false;
                    if key == b"scope" {
                        let (raw, next) = value_at(line, i + 1)?;
                        found = Some(raw);
                        i = next;
                    } else {
                        i += 1;
                    }
                    continue;
                }
                i = end;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.checked_sub(1)?,
            b',' if depth == 1 => expect_key = true,
            _ => {}
        }
        i += 1;
    }
    found
}

/// The index after the string that opens at `i` (a `"`).
fn string_end(line: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        let j = i + memchr::memchr2(b'"', b'\\', &line[i..])?;
        match line[j] {
            b'\\' => i = j + 2,
            _ => return Some(j + 1),
        }
    }
}

fn skip_space(line: &[u8], mut i: usize) -> usize {
    while line.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// The JSON value that starts at (or after spaces from) `i`, and the index
/// after it.
fn value_at(line: &[u8], i: usize) -> Option<(&str, usize)> {
    let start = skip_space(line, i);
    let mut de = serde_json::Deserializer::from_slice(&line[start..]);
    let raw: &RawValue = serde::Deserialize::deserialize(&mut de).ok()?;
    Some((raw.get(), start + raw.get().len()))
}

/// Why a key cannot be a column, if it cannot.
fn unusable(k: &str) -> Option<&'static str> {
    if k.is_empty() {
        Some("is empty")
    } else if k.len() > MAX_KEY_BYTES {
        Some("is longer than 64 bytes")
    } else if k.chars().any(char::is_control) {
        Some("holds a control character")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_follow_the_keys() {
        let c = ScopeColumns::named(&["tenant".into(), "tier".into(), "n".into()]).unwrap();
        let v = c.values(Some(r#"{"n": 3, "tenant": "acme", "x": 1}"#));
        assert_eq!(v, vec![Some("acme".into()), None, Some("3".into())]);
        assert_eq!(c.values(Some(r#""web""#)), vec![None, None, None]);
        assert_eq!(c.values(None), vec![None, None, None]);
        let v = c.values(Some(r#"{"tenant": null, "tier": {"a": [1]}, "n": "é\"x"}"#));
        assert_eq!(
            v,
            vec![None, Some(r#"{"a":[1]}"#.into()), Some("é\"x".into())]
        );
    }

    /// The byte scan finds what serde finds, past strings holding braces,
    /// quotes and the key itself, and nested `scope`s.
    #[test]
    fn the_scan_finds_the_top_level_scope_as_serde_does() {
        let lines = [
            r#"{"draft": "a {\"scope\": 1} }", "scope": {"tenant": "t"}}"#,
            r#"{"critic": {"scope": {"x": 1}}, "scope": {"a": [1, {"b": 2}]}, "z": 3}"#,
            r#"{"critic": {"scope": {"x": 1}}}"#,
            r#"  { "scope" : "web" , "z": {"late": true}}"#,
            r#"{"run_id": "\\", "scope":{"k":"v"}}"#,
            r#"{"scope": null}"#,
        ];
        for l in lines {
            #[derive(serde::Deserialize)]
            struct S<'a> {
                #[serde(borrow, default)]
                scope: Option<&'a RawValue>,
            }
            let want = serde_json::from_str::<S>(l)
                .ok()
                .and_then(|s| s.scope.map(|r| r.get().to_string()));
            let got = top_level_scope(l.as_bytes()).map(str::to_string);
            let got = got.filter(|g| g != "null");
            assert_eq!(got, want, "{l}");
        }
        // Not an object (serde's derive would read an array as a tuple).
        assert_eq!(top_level_scope(br#"[{"scope": {"x": 1}}]"#), None);
    }

    #[test]
    fn named_keys_are_checked() {
        let e = ScopeColumns::named(&["a".into(), "a".into()]).unwrap_err();
        assert!(
            matches!(&e, crate::Error::Usage(m) if m.contains("named twice")),
            "{e}"
        );
        let e = ScopeColumns::named(&["".into()]).unwrap_err();
        assert!(e.to_string().contains("is empty"), "{e}");
        let e = ScopeColumns::named(&["x".repeat(65)]).unwrap_err();
        assert!(e.to_string().contains("longer than 64 bytes"), "{e}");
    }
}
