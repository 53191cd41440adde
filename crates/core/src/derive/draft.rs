//! The draft symfonic's critic sees, from the model's last main-loop
//! completion (symfonic-core 9.12.0, `agent/engine.py`), ported exactly:
//! the hidden memory-extraction block removed (`_parse_and_strip_extraction`),
//! the memory-layer citation tags removed (`_strip_citation_tags`), and the
//! spreading-activation footer removed as `activation_log_mode` says
//! (`_strip_activation_footer`, `_response_needs_activation_footer`).
//!
//! The patterns are symfonic's, run by the CPython-exact engine the gate
//! uses (`crate::gate::pyre`). Where symfonic ends a pattern in `\s*$`
//! this port writes `\s*\Z`: the greedy `\s*` always reaches the end of the
//! text, so the two match the same spans.

use std::borrow::Cow;
use std::sync::OnceLock;

use memchr::memmem::Finder;
use serde_json::Value;

use super::reflection::python_json;
use crate::deployment::ActivationLogMode;
use crate::gate::py_rstrip;
use crate::gate::pyre::PySet;

/// `_EXTRACT_RE`.
const EXTRACT: &str =
    r"\s*<(?:MEMORY_EXTRACT|GRAPH_OPERATIONS)>[\s\S]*?</(?:MEMORY_EXTRACT|GRAPH_OPERATIONS)>\s*";
/// `_GRAPH_OPS_LOOSE_RE`.
const GRAPH_OPS_LOOSE: &str =
    r"\s*(?:<GRAPH_OPERATIONS>|GRAPH_OPERATIONS)\s*(?:```(?:json)?\s*)?\{[\s\S]*\Z";
/// `_CODE_FENCE_RE`.
const CODE_FENCE: &str = r"\s*```(?:json)?\s*\{[\s\S]*?\}\s*```\s*\Z";
/// `_CITATION_TAG_RE` (case-insensitive).
const CITATION: &str = r"\s*\[(?:semantic|episodic|procedural|working|prospective)\]";
/// `_ACTIVATION_FOOTER_RE` (case-insensitive).
const FOOTER: &str = r"\n*-{3,}\s*\n+(?:Nodos Activados|Activated Nodes)[^\n]*(?:\n[^\n]*)*\s*\Z";
/// `_EXTRACTION_KEYS`.
const EXTRACTION_KEYS: [&str; 3] = ["ops", "operations", "type"];
/// A body this long (code points) keeps its footer in `complex` mode.
const COMPLEX_FOOTER_CHARS: usize = 400;

struct Patterns {
    extract: PySet,
    loose: PySet,
    fence: PySet,
    citation: PySet,
    footer: PySet,
    /// The literals that a match of `extract`, `loose` and `fence` holds,
    /// searched with SIMD before any pattern is (`str::contains` was a
    /// tenth of a replay from transcripts).
    extract_tag: Finder<'static>,
    graph: Finder<'static>,
    graph_tag: Finder<'static>,
    backticks: Finder<'static>,
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let set =
            |p: &str, ic: bool| PySet::lazy(p, ic).expect("symfonic's draft patterns compile");
        Patterns {
            extract: set(EXTRACT, false),
            loose: set(GRAPH_OPS_LOOSE, false),
            fence: set(CODE_FENCE, false),
            citation: set(CITATION, true),
            footer: set(FOOTER, true),
            extract_tag: Finder::new("_EXTRACT>"),
            graph: Finder::new("GRAPH_OPERATIONS"),
            graph_tag: Finder::new("GRAPH_OPERATIONS>"),
            backticks: Finder::new("```"),
        }
    })
}

/// `re.search(pattern, text)`'s span. The patterns cannot exhaust the
/// backtracking engine (none needs it), so an aborted search is a bug.
fn find(set: &PySet, text: &str) -> Option<(usize, usize)> {
    set.find(text)
        .expect("the draft patterns need no backtracking")
}

/// `pattern.sub("", text)`: every non-overlapping match removed, left to
/// right (no pattern here matches the empty text or looks behind, so
/// searching the rest of the text is searching on from the last match).
fn remove_all(set: &PySet, text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some((start, end)) = find(set, rest) {
        out.push_str(&rest[..start]);
        rest = &rest[end..];
        if start == end {
            // Not reached by these patterns; kept so a change cannot loop.
            let Some(c) = rest.chars().next() else { break };
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out.push_str(rest);
    out
}

/// `_parse_and_strip_extraction(text)[0]`: the text without its
/// extraction block, right-stripped.
pub fn strip_extraction(text: &str) -> Cow<'_, str> {
    let p = patterns();
    // Each pattern holds a literal (they are case-sensitive): a text
    // without it is not searched.
    let has = |f: &Finder| f.find(text.as_bytes()).is_some();
    let graph = has(&p.graph);
    let strategies = [
        (
            &p.extract,
            has(&p.extract_tag) || (graph && has(&p.graph_tag)),
        ),
        (&p.loose, graph),
        (&p.fence, has(&p.backticks)),
    ];
    for (set, may) in strategies {
        if may && find(set, text).is_some() {
            return Cow::Owned(py_rstrip(&remove_all(set, text)).to_string());
        }
    }
    last_resort(text)
}

/// `_last_resort_json_scan(text)[0]`: the text before the last `{` from
/// which the rest parses (Python's `json.loads`) as an object holding an
/// extraction key with a non-empty list of operations.
fn last_resort(text: &str) -> Cow<'_, str> {
    let trimmed = py_rstrip(text);
    // Every candidate fragment ends where the text does: unless it ends
    // in `}`, none parses as an object (and the scan is skipped).
    if trimmed.ends_with('}') {
        // Only a suffix that can be one JSON value is built and parsed:
        // building each one made a reply of many braces quadratic.
        let mut suffixes = super::suffix::Suffixes::new(trimmed);
        for (pos, _) in trimmed.match_indices('{').rev() {
            if suffixes.may_parse(pos) && extraction_ops(&trimmed[pos..]) {
                return Cow::Borrowed(py_rstrip(&text[..pos]));
            }
        }
    }
    Cow::Borrowed(trimmed)
}

/// Whether `fragment` is an object with an extraction key whose
/// `_parse_ops_from_json` result is truthy in Python.
fn extraction_ops(fragment: &str) -> bool {
    // A number JSON cannot hold (NaN, Infinity) is truthy in Python: it
    // stands as 1 here, where only truthiness matters.
    // Nested too deep to vouch for: as before, not an extraction block.
    let Ok(Some(Value::Object(map))) = python_json(fragment, "1") else {
        return false;
    };
    if !EXTRACTION_KEYS.iter().any(|k| map.contains_key(*k)) {
        return false;
    }
    match map.get("ops").or_else(|| map.get("operations")) {
        Some(ops) => truthy(ops),
        // Only "type": the object itself is the one operation.
        None => true,
    }
}

/// Python's `bool()` of a JSON value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// `_strip_citation_tags(text)`.
pub fn strip_citations(text: &str) -> Cow<'_, str> {
    // Every tag holds a `[`.
    match text.contains('[') {
        true => Cow::Owned(remove_all(&patterns().citation, text)),
        false => Cow::Borrowed(text),
    }
}

/// `_strip_activation_footer(text)`.
pub fn strip_footer(text: &str) -> Cow<'_, str> {
    // Every footer opens with a rule of at least three `-`.
    match text.contains("---") {
        true => Cow::Owned(py_rstrip(&remove_all(&patterns().footer, text)).to_string()),
        false => Cow::Borrowed(py_rstrip(text)),
    }
}

/// `_response_needs_activation_footer(text, messages)`, the run's messages
/// holding a tool call being `has_tool_calls`.
fn needs_footer(text: &str, has_tool_calls: bool) -> bool {
    if text.is_empty() {
        return false;
    }
    strip_footer(text).chars().count() >= COMPLEX_FOOTER_CHARS || has_tool_calls
}

/// The draft the critic sees, from the model's completion: the extraction
/// block and citation tags removed, and the footer as `mode` says
/// (`never`: always removed; `complex`: removed unless the run called a
/// tool or the reply is long; `always`: kept).
pub fn clean(completion: &str, mode: ActivationLogMode, has_tool_calls: bool) -> String {
    // Each step borrows when it strips nothing: one copy of the reply, at
    // the end, on most turns.
    let extracted = strip_extraction(completion);
    let text = strip_citations(&extracted);
    let strip = !text.is_empty()
        && match mode {
            ActivationLogMode::Never => true,
            ActivationLogMode::Complex => !needs_footer(&text, has_tool_calls),
            ActivationLogMode::Always => false,
        };
    match strip {
        true => strip_footer(&text).into_owned(),
        false => text.into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_strategy_of_the_extraction_block() {
        let x = "Done.\n<MEMORY_EXTRACT>{\"ops\": []}</MEMORY_EXTRACT>\n";
        assert_eq!(strip_extraction(x), "Done.");
        assert_eq!(strip_extraction("Hi GRAPH_OPERATIONS {\"ops\": [1]"), "Hi");
        assert_eq!(strip_extraction("Hi\n```json\n{\"a\": 1}\n```\n"), "Hi");
        assert_eq!(strip_extraction("Hi {\"ops\": [1]}  "), "Hi");
        // An empty list of operations is not an extraction block.
        assert_eq!(strip_extraction("Hi {\"ops\": []}  "), "Hi {\"ops\": []}");
        assert_eq!(
            strip_extraction("Hi {\"type\": \"x\"} {\"a\": 1}"),
            "Hi {\"type\": \"x\"} {\"a\": 1}"
        );
        assert_eq!(strip_extraction("Hi {\"ops\": NaN}"), "Hi");
    }

    #[test]
    fn footers_by_mode() {
        let t = "Sure [semantic].\n\n---\nActivated Nodes: a, b\nx";
        assert_eq!(
            clean(t, ActivationLogMode::Always, false),
            "Sure.\n\n---\nActivated Nodes: a, b\nx"
        );
        assert_eq!(clean(t, ActivationLogMode::Never, true), "Sure.");
        assert_eq!(clean(t, ActivationLogMode::Complex, false), "Sure.");
        assert_eq!(
            clean(t, ActivationLogMode::Complex, true),
            "Sure.\n\n---\nActivated Nodes: a, b\nx"
        );
    }
}
