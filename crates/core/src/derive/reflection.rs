//! symfonic-core 9.12.0's `MetacognitiveMiddleware._parse_reflection_output`,
//! ported exactly: what the critic's raw answer (in a trace, the critic
//! span's completion) becomes. Malformed output is an `approve`, as in
//! production.
//!
//! The answer is stripped (CPython's white space); when it opens with a
//! code fence, every line that opens with one is dropped; the rest must be
//! a JSON object (Python's `json.loads`, which also takes `NaN`,
//! `Infinity`, numbers past the range of a float and lone surrogate
//! escapes) whose `verdict` is one of the three.

use serde_json::Value;

use super::pytext::string_end;
use crate::gate::py_strip;

/// What the critic said: the verdict, the revised draft or refusal message
/// it gave (any JSON, as `data.get` returns it), and its matched
/// preferences (a list, else empty). A number JSON cannot hold (`NaN`,
/// `Infinity`) stands as null.
#[derive(Clone, Debug, PartialEq)]
pub struct Reflection {
    pub verdict: &'static str,
    pub text: Value,
    pub matched: Vec<Value>,
    /// The answer was not a JSON object with a known verdict: production
    /// read it as `approve` all the same (counted, so it shows).
    pub malformed: bool,
}

impl Reflection {
    /// The fallback for an answer that cannot be read.
    fn malformed() -> Reflection {
        Reflection {
            verdict: "approve",
            text: Value::Null,
            matched: Vec::new(),
            malformed: true,
        }
    }
}

/// How deep an answer's arrays and objects may nest for its reading to be
/// vouched for. CPython's `json.loads` reads any depth below its recursion
/// limit (1,000 less the frames already on the stack, which a trace does
/// not show); past it the parse raises `RecursionError`, which the critic
/// call's own `except Exception` turns into a fail-open `approve`. Below
/// 800 no production stack is deep enough to matter.
pub const MAX_VOUCHED_DEPTH: usize = 800;

/// `_parse_reflection_output(raw)`; None when what production read cannot
/// be told (an answer nested deeper than [`MAX_VOUCHED_DEPTH`]).
pub fn parse(raw: &str) -> Option<Reflection> {
    let mut cleaned = py_strip(raw).to_string();
    if cleaned.starts_with("```") {
        let lines: Vec<&str> = cleaned
            .split('\n')
            .filter(|l| !py_strip(l).starts_with("```"))
            .collect();
        cleaned = py_strip(&lines.join("\n")).to_string();
    }
    let Some(Value::Object(data)) = python_json(&cleaned, "null").ok()? else {
        return Some(Reflection::malformed());
    };
    let verdict = match data.get("verdict").map(Value::as_str) {
        None => "approve",
        Some(Some(v @ ("approve" | "revise" | "refuse"))) => match v {
            "approve" => "approve",
            "revise" => "revise",
            _ => "refuse",
        },
        Some(_) => return Some(Reflection::malformed()),
    };
    let text = match verdict {
        "revise" => data.get("revised_draft").cloned().unwrap_or(Value::Null),
        "refuse" => data.get("refusal_message").cloned().unwrap_or(Value::Null),
        _ => Value::Null,
    };
    let matched = match data.get("matched_preferences") {
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    };
    Some(Reflection {
        verdict,
        text,
        matched,
        malformed: false,
    })
}

/// The text with what Python's `json.loads` takes and strict JSON does not
/// made strict: `NaN`, `Infinity`, `-Infinity` and numbers past a float's
/// range outside strings become `null`, lone surrogate escapes inside
/// strings become U+FFFD. (A verdict so written is none of the three either
/// way; only a text or preference holding one reads differently: null.)
/// Python's `json.loads(s)`, or None where it raises; a number JSON cannot
/// hold stands as `non_finite` (JSON text: `null`, or a truthy `1` where
/// only Python's truthiness of the value matters).
///
/// Nesting has no limit of serde_json's (128) but CPython's: Err when the
/// text nests deeper than [`MAX_VOUCHED_DEPTH`].
pub fn python_json(s: &str, non_finite: &str) -> Result<Option<Value>, TooDeep> {
    let strict = as_strict_json(s, non_finite);
    if super::pytext::json_depth(&strict) > MAX_VOUCHED_DEPTH {
        return Err(TooDeep);
    }
    let mut de = serde_json::Deserializer::from_str(&strict);
    de.disable_recursion_limit();
    let v = serde::Deserialize::deserialize(&mut de).and_then(|v| de.end().map(|()| v));
    Ok(v.ok())
}

/// JSON nested deeper than [`MAX_VOUCHED_DEPTH`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooDeep;

fn as_strict_json(s: &str, non_finite: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let end = string_end(b, i);
                out.push_str(&strict_string(&s[i..end]));
                i = end;
            }
            b'N' if s[i..].starts_with("NaN") => {
                out.push_str(non_finite);
                i += 3;
            }
            b'I' if s[i..].starts_with("Infinity") => {
                out.push_str(non_finite);
                i += 8;
            }
            b'-' if s[i..].starts_with("-Infinity") => {
                out.push_str(non_finite);
                i += 9;
            }
            b'-' | b'0'..=b'9' => {
                let len = b[i..]
                    .iter()
                    .position(|c| !matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                    .unwrap_or(b.len() - i);
                let token = &s[i..i + len];
                match token.parse::<f64>() {
                    Ok(x) if x.is_infinite() => out.push_str(non_finite),
                    _ => out.push_str(token),
                }
                i += len;
            }
            _ => {
                let c = s[i..].chars().next().expect("a char");
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    out
}

/// A JSON string's text with its lone surrogate escapes as `\ufffd`.
fn strict_string(s: &str) -> String {
    let b = s.as_bytes();
    let hex = |at: usize| -> Option<u32> {
        let h = s.get(at..at + 4)?;
        u32::from_str_radix(h, 16)
            .ok()
            .filter(|_| h.bytes().all(|c| c.is_ascii_hexdigit()))
    };
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'u') {
            if let Some(u) = hex(i + 2) {
                let low = |at: usize| {
                    (s.get(at..at + 2) == Some("\\u"))
                        .then(|| hex(at + 2))
                        .flatten()
                        .filter(|l| (0xDC00..0xE000).contains(l))
                };
                if (0xD800..0xDC00).contains(&u) && low(i + 6).is_some() {
                    out.push_str(&s[i..i + 12]);
                    i += 12;
                    continue;
                }
                if (0xD800..0xE000).contains(&u) {
                    out.push_str("\\ufffd");
                    i += 6;
                    continue;
                }
            }
            out.push_str(&s[i..(i + 2).min(b.len())]);
            i += 2;
            continue;
        }
        let c = s[i..].chars().next().expect("a char");
        out.push(c);
        i += c.len_utf8();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2,000 critic outputs with symfonic-core 9.12.0's reading of each
    /// (`scripts/symfonic_reflection_cases.py`).
    #[test]
    fn every_reflection_case_reads_as_upstream() {
        let cases = include_str!("../../tests/conformance/reflection-cases.jsonl");
        let mut bad = Vec::new();
        let mut n = 0;
        for line in cases.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            let r = parse(v["raw"].as_str().unwrap()).unwrap();
            let got = serde_json::json!([r.verdict, r.text, r.matched]);
            if got != v["expect"] {
                bad.push(format!(
                    "{:?}: got {got}, expected {}",
                    v["raw"], v["expect"]
                ));
            }
            n += 1;
        }
        assert_eq!(n, 2000);
        let nested = |d: usize| {
            format!(
                r#"{{"verdict": "refuse", "x": {}{}}}"#,
                "[".repeat(d),
                "]".repeat(d)
            )
        };
        // CPython reads 129 levels (serde_json's limit is 128) and 990.
        for d in [127, 129, 500, MAX_VOUCHED_DEPTH - 1] {
            assert_eq!(parse(&nested(d)).map(|r| r.verdict), Some("refuse"), "{d}");
        }
        // Deeper, what production read depends on its stack: unknown, and
        // no stack of ours overflows.
        for d in [MAX_VOUCHED_DEPTH, 1000, 200_000] {
            assert_eq!(parse(&nested(d)), None, "{d}");
        }
        assert!(
            bad.is_empty(),
            "{} wrong:\n{}",
            bad.len(),
            bad[..bad.len().min(10)].join("\n")
        );
    }
}
