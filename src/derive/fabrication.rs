//! symfonic-core 9.12.0's `detect_fabrication(draft, tool_calls, ...)`
//! (`symfonic/agent/middleware/fabrication.py`), ported exactly: the
//! findings a deployment with the fabrication check on attaches to a turn.
//!
//! In the stripped draft it looks for claims of an action (`I ran`, `I
//! sent`, ...) that no fired tool of the matching kind grounds, UUIDs,
//! short hex identifiers near such a claim or after an identifier key, and
//! `key=value` pairs of identifier keys, each unless the identifier stands
//! verbatim in the grounding corpus (the user message, the hydrated
//! context, and the tool calls' results and arguments as Python's `str()`
//! writes them); and, given an intent verdict of `action` with no tool
//! call, an `intent_action_no_tool` finding. Spans are in code points.

use std::sync::OnceLock;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::intent::IntentVerdict;
use super::pytext::{repr, repr_list};
use crate::gate::py_strip;

/// One finding, as `FabricationFinding.to_event_payload()` writes it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    pub identifier: String,
    pub kind: &'static str,
    pub severity: &'static str,
    pub reason: String,
    pub key: Option<String>,
    pub pattern_kind: &'static str,
    pub confidence: f64,
    pub span: [usize; 2],
}

/// `_DEFAULT_IDENTIFIER_KEYS`.
const DEFAULT_KEYS: [&str; 17] = [
    "task_id",
    "taskid",
    "job_id",
    "jobid",
    "pid",
    "process_id",
    "request_id",
    "req_id",
    "trace_id",
    "span_id",
    "run_id",
    "ticket_id",
    "order_id",
    "service",
    "service_name",
    "instance",
    "instance_id",
];

/// `_VERB_TO_TOOL_HINTS`.
const VERB_HINTS: [(&str, &[&str]); 22] = [
    (
        "spawned",
        &["spawn", "subagent", "run_agent", "exec", "start_"],
    ),
    ("launched", &["spawn", "launch", "start", "exec"]),
    ("started", &["start", "spawn", "launch", "boot"]),
    (
        "sent",
        &["send", "messag", "sms", "email", "twilio", "post"],
    ),
    ("delivered", &["send", "messag", "deliver", "post"]),
    ("dispatched", &["dispatch", "send", "emit"]),
    ("ran", &["run", "exec", "shell", "bash"]),
    ("called", &["call", "invoke", "exec"]),
    ("invoked", &["invoke", "call", "exec"]),
    ("executed", &["exec", "run", "shell", "bash"]),
    ("queried", &["query", "search", "find", "select", "sql"]),
    ("triggered", &["trigger", "fire", "start", "invoke"]),
    ("fetched", &["fetch", "get", "download", "pull", "read"]),
    ("retrieved", &["fetch", "get", "read", "search", "retriev"]),
    ("pulled", &["pull", "fetch", "download", "get"]),
    ("pushed", &["push", "upload", "send", "commit"]),
    ("stopped", &["stop", "kill", "terminate", "halt"]),
    ("posted", &["post", "send", "publish", "http"]),
    ("updated", &["update", "patch", "write", "edit"]),
    ("deleted", &["delete", "remove", "drop", "destroy"]),
    ("created", &["create", "add", "insert", "make", "provision"]),
    ("checked", &["check", "status", "verify", "inspect"]),
];

const NEAR_VERB: usize = 60;
const NEAR_KEY: usize = 32;
const INTENT_ACTION_MIN_CONFIDENCE: f64 = 0.55;

/// The detector's Python patterns, translated by the gate's CPython
/// translator (so `\b`, `\s` and IGNORECASE are CPython's).
struct Patterns {
    verb: fancy_regex::Regex,
    uuid: fancy_regex::Regex,
    short_hex: fancy_regex::Regex,
    kv: fancy_regex::Regex,
    key_prefix: fancy_regex::Regex,
}

fn compile(pattern: &str, ignore_case: bool) -> fancy_regex::Regex {
    let t = crate::gate::pyre::translate(pattern, ignore_case).expect("symfonic's patterns");
    fancy_regex::Regex::new(&t.exact).expect("symfonic's patterns compile")
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| Patterns {
        verb: compile(
            r"\b(?P<verb>I\s+(?P<action>ran|called|invoked|executed|queried|triggered|launched|fetched|started|stopped|posted|updated|deleted|created|spawned|sent|delivered|dispatched|checked|retrieved|pulled|pushed))\b",
            true,
        ),
        uuid: compile(
            r"\b[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}\b",
            false,
        ),
        short_hex: compile(r"\b[0-9a-fA-F]{6,16}\b", false),
        kv: compile(
            r"\b([A-Za-z][A-Za-z0-9_]{1,31})\s*[:=]\s*([A-Za-z0-9][A-Za-z0-9_\-./]{0,127})\b",
            false,
        ),
        key_prefix: compile(r"(?P<key>[A-Za-z][A-Za-z0-9_]{1,31})\s*[:=]\s*$", false),
    })
}

/// Byte offsets to code points for one text.
/// The byte offset where each code point starts, and the text's length.
struct Points(Vec<usize>);

impl Points {
    fn of(text: &str) -> Points {
        Points(
            text.char_indices()
                .map(|(i, _)| i)
                .chain([text.len()])
                .collect(),
        )
    }

    /// The code point at byte offset `byte` (a char boundary).
    fn cp(&self, byte: usize) -> usize {
        self.0.partition_point(|&b| b < byte)
    }

    /// The byte offset of code point `cp`.
    fn byte(&self, cp: usize) -> usize {
        self.0[cp]
    }
}

/// The deployment's inputs to `detect_fabrication` for one turn.
pub struct Inputs<'a> {
    pub draft: &'a str,
    /// The turn's tool calls as symfonic collects them (objects with
    /// `name`/`tool`/`tool_name` and `result`/`output`/`response`/`args`/`input`),
    /// as JSON text: Python's `str()` of a dict keeps its keys in the order
    /// written, which a parsed `Value` does not.
    pub tool_calls: &'a [&'a RawValue],
    pub hydrated_context: &'a str,
    pub user_message: &'a str,
    pub identifier_keys: &'a [String],
    pub intent: Option<&'a IntentVerdict>,
}

/// `detect_fabrication(...)`, each finding as its event payload, in
/// upstream order, one per (identifier, kind).
pub fn detect(i: &Inputs) -> Vec<Finding> {
    let text = py_strip(i.draft);
    if text.is_empty() {
        return Vec::new();
    }
    let points = Points::of(text);
    let corpus = grounding(i.tool_calls, i.hydrated_context, i.user_message);
    let grounded = |ident: &str| !corpus.is_empty() && corpus.contains(ident);
    let names = tool_names(i.tool_calls);
    let mut keys: Vec<String> = DEFAULT_KEYS.iter().map(|k| k.to_string()).collect();
    keys.extend(
        i.identifier_keys
            .iter()
            .map(|k| crate::gate::py_lower(k).into_owned()),
    );
    let mut out = Vec::new();
    let verb_spans = verb_claims(text, &points, &names, &mut out);
    let uuid_spans = uuids(text, &points, &grounded, &mut out);
    short_hex(
        text,
        &points,
        &keys,
        &verb_spans,
        &uuid_spans,
        &grounded,
        &mut out,
    );
    key_values(text, &points, &keys, &grounded, &mut out);
    out.extend(
        i.intent
            .and_then(|v| intent_without_tool(v, i.tool_calls.is_empty())),
    );
    let mut seen = std::collections::HashSet::new();
    out.retain(|f| seen.insert((f.identifier.clone(), f.kind)));
    out
}

/// Claims of an action no fired tool of its kind grounds; the spans of
/// every claim (grounded or not: they anchor short hex runs).
fn verb_claims(
    text: &str,
    points: &Points,
    names: &[String],
    out: &mut Vec<Finding>,
) -> Vec<[usize; 2]> {
    let mut spans = Vec::new();
    for c in patterns().verb.captures_iter(text).flatten() {
        let whole = c.get(0).expect("a match");
        let span = [points.cp(whole.start()), points.cp(whole.end())];
        spans.push(span);
        let action =
            crate::gate::py_lower(c.name("action").map_or("", |m| m.as_str())).into_owned();
        if verb_grounded(&action, names) {
            continue;
        }
        let verb = c.name("verb").map_or("", |m| m.as_str());
        out.push(Finding {
            identifier: py_strip(verb).to_string(),
            kind: "verb_claim",
            severity: "medium",
            reason: "Draft claims an action was taken but no matching tool call fired this turn."
                .into(),
            key: None,
            pattern_kind: "verb_claim",
            confidence: 0.8,
            span,
        });
    }
    spans
}

/// UUIDs not in the grounding corpus; the spans of every UUID.
fn uuids(
    text: &str,
    points: &Points,
    grounded: &dyn Fn(&str) -> bool,
    out: &mut Vec<Finding>,
) -> Vec<[usize; 2]> {
    let mut spans = Vec::new();
    for m in patterns().uuid.find_iter(text).flatten() {
        let span = [points.cp(m.start()), points.cp(m.end())];
        spans.push(span);
        if grounded(m.as_str()) {
            continue;
        }
        out.push(Finding {
            identifier: m.as_str().to_string(),
            kind: "uuid",
            severity: "high",
            reason: "UUID not found in tool results, hydration, or user query.".into(),
            key: None,
            pattern_kind: "uuid",
            confidence: 0.95,
            span,
        });
    }
    spans
}

/// An intent verdict of `action` (decisive) with no tool call this turn.
fn intent_without_tool(v: &IntentVerdict, no_calls: bool) -> Option<Finding> {
    (v.label == "action" && v.confidence >= INTENT_ACTION_MIN_CONFIDENCE && no_calls).then(|| {
        Finding {
            identifier: String::new(),
            kind: "intent_action_no_tool",
            severity: "medium",
            reason: format!(
                "Intent verdict=action (confidence={:.2}) with zero tool calls this turn. matched_tool_keywords={}",
                v.confidence,
                repr_list(&v.matched_tool_keywords)
            ),
            key: None,
            pattern_kind: "intent_no_grounding",
            confidence: 0.7,
            span: [0, 0],
        }
    })
}

/// Short hex runs anchored after an identifier key or near a claim verb.
fn short_hex(
    text: &str,
    points: &Points,
    keys: &[String],
    verb_spans: &[[usize; 2]],
    uuid_spans: &[[usize; 2]],
    grounded: &dyn Fn(&str) -> bool,
    out: &mut Vec<Finding>,
) {
    let p = patterns();
    for m in p.short_hex.find_iter(text).flatten() {
        let (ident, start, end) = (m.as_str(), points.cp(m.start()), points.cp(m.end()));
        if uuid_spans.iter().any(|&[s, e]| start < e && end > s)
            || ident.bytes().all(|b| b.is_ascii_digit())
            || grounded(ident)
        {
            continue;
        }
        // `text[max(0, start - 32):start]`, in code points.
        let prefix = &text[points.byte(start.saturating_sub(NEAR_KEY))..m.start()];
        let key = p
            .key_prefix
            .captures(prefix)
            .ok()
            .flatten()
            .and_then(|c| c.name("key").map(|k| k.as_str().to_ascii_lowercase()))
            .filter(|k| keys.contains(k));
        let near_verb = verb_spans.iter().any(|&[vs, ve]| {
            (start >= ve && start - ve <= NEAR_VERB) || (vs >= end && vs - end <= NEAR_VERB)
        });
        let (kind, reason) = match (&key, near_verb) {
            (Some(k), _) => (
                "short_hex_near_key",
                format!("Short-hex identifier after '{k}' with no grounding"),
            ),
            (None, true) => (
                "short_hex_near_verb",
                "Short-hex identifier near a claim verb with no grounding".to_string(),
            ),
            (None, false) => continue,
        };
        out.push(Finding {
            identifier: ident.to_string(),
            kind,
            severity: "high",
            reason,
            key,
            pattern_kind: kind,
            confidence: 0.6,
            span: [start, end],
        });
    }
}

/// `key=value` pairs whose key is an identifier key.
fn key_values(
    text: &str,
    points: &Points,
    keys: &[String],
    grounded: &dyn Fn(&str) -> bool,
    out: &mut Vec<Finding>,
) {
    for c in patterns().kv.captures_iter(text).flatten() {
        let whole = c.get(0).expect("a match");
        let (raw_key, value) = (&c[1], &c[2]);
        let key = raw_key.to_ascii_lowercase();
        if !keys.contains(&key) || grounded(value) {
            continue;
        }
        let builtin = DEFAULT_KEYS.contains(&key.as_str());
        out.push(Finding {
            identifier: value.to_string(),
            kind: "kv",
            severity: if builtin { "high" } else { "medium" },
            reason: format!(
                "Identifier '{raw_key}={value}' not found in tool results, hydration, or user query."
            ),
            key: Some(key),
            pattern_kind: "kv",
            confidence: 0.8,
            span: [points.cp(whole.start()), points.cp(whole.end())],
        });
    }
}

/// `_verb_claim_is_grounded`: a fired tool whose lowered name holds one of
/// the verb's hints (any tool, for a verb without hints).
fn verb_grounded(action: &str, names: &[String]) -> bool {
    if names.is_empty() {
        return false;
    }
    match VERB_HINTS.iter().find(|(v, _)| *v == action) {
        None => true,
        Some((_, hints)) => names.iter().any(|n| hints.iter().any(|h| n.contains(h))),
    }
}

/// `_collect_tool_names`: per call, the first of `name`, `tool`,
/// `tool_name` that is a non-empty string, lowered.
fn tool_names(calls: &[&RawValue]) -> Vec<String> {
    calls
        .iter()
        .filter_map(|c| {
            // `call.get(key)`: a repeated key keeps its last value, as here.
            let fields = crate::read::turn::object_entries(c.get())?;
            ["name", "tool", "tool_name"].iter().find_map(|k| {
                let (_, v) = fields.iter().find(|(f, _)| f == k)?;
                let name: String = serde_json::from_str(v.get()).ok()?;
                (!name.is_empty()).then(|| crate::gate::py_lower(&name).into_owned())
            })
        })
        .collect()
}

/// `_build_grounding_corpus`: the user message, the hydrated context and
/// each call's `result`, `output`, `response`, `args` and `input` (a
/// string as it is, anything else as Python's `str()`), joined by `\n`.
fn grounding(calls: &[&RawValue], hydrated: &str, user: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    if !user.is_empty() {
        parts.push(user.to_string());
    }
    if !hydrated.is_empty() {
        parts.push(hydrated.to_string());
    }
    for call in calls {
        // `call.get(key)`: a repeated key keeps its last value, as here.
        let Some(fields) = crate::read::turn::object_entries(call.get()) else {
            continue;
        };
        for key in ["result", "output", "response", "args", "input"] {
            let Some((_, v)) = fields.iter().find(|(k, _)| k == key) else {
                continue;
            };
            match serde_json::from_str::<Value>(v.get()) {
                Ok(Value::Null) | Err(_) => {}
                Ok(Value::String(s)) => parts.push(s),
                Ok(_) => parts.push(py_repr(v.get())),
            }
        }
    }
    parts.join("\n")
}

/// Python's `repr()` of what `json.loads` makes of the JSON text `raw`
/// (which is also its `str()` for everything but a string): dicts keep
/// their keys in the order written, a repeated key its first place and
/// last value, as a Python dict does.
pub fn py_repr(raw: &str) -> String {
    if let Some(entries) = crate::read::turn::object_entries(raw) {
        let parts: Vec<String> = entries
            .iter()
            .map(|(k, v)| format!("{}: {}", repr(k), py_repr(v.get())))
            .collect();
        return format!("{{{}}}", parts.join(", "));
    }
    match serde_json::from_str::<Vec<&RawValue>>(raw) {
        Ok(items) => {
            let parts: Vec<String> = items.iter().map(|v| py_repr(v.get())).collect();
            format!("[{}]", parts.join(", "))
        }
        Err(_) => match serde_json::from_str::<Value>(raw) {
            Ok(Value::Null) => "None".into(),
            Ok(Value::Bool(true)) => "True".into(),
            Ok(Value::Bool(false)) => "False".into(),
            Ok(Value::Number(n)) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => i.to_string(),
                (None, Some(u)) => u.to_string(),
                _ => py_float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Ok(Value::String(s)) => repr(&s),
            _ => raw.to_string(),
        },
    }
}

/// `repr(float)`: the shortest digits that read back, fixed between 1e-4
/// and 1e16, else `1e+16` / `1.5e-07`.
pub fn py_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let sci = format!("{:e}", x);
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("an exponent");
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if (-4..16).contains(&exp) {
        let point = exp + 1;
        let s = if point <= 0 {
            format!("0.{}{digits}", "0".repeat((-point) as usize))
        } else if point as usize >= digits.len() {
            format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
        } else {
            format!(
                "{}.{}",
                &digits[..point as usize],
                &digits[point as usize..]
            )
        };
        format!("{sign}{s}")
    } else {
        let e_sign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{mantissa}e{e_sign}{:02}", exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_read_as_python_writes_them() {
        for (x, want) in [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.5e-7, "1.5e-07"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5, "-2.5"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (-0.0, "-0.0"),
        ] {
            assert_eq!(py_float(x), want, "{x}");
        }
        // Keys in the order written; a repeated key keeps its first place
        // and its last value, as a Python dict does.
        let raw = r#"{"status": "done", "ok": true, "n": [1, 2.5, null, {"b": 1, "a": 2}], "q": "it's", "ok": false}"#;
        assert_eq!(
            py_repr(raw),
            r#"{'status': 'done', 'ok': False, 'n': [1, 2.5, None, {'b': 1, 'a': 2}], 'q': "it's"}"#
        );
    }
}
