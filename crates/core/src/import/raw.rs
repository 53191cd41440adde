//! A turn as an imported record holds it ([`RawTurn`]), and the traffic
//! line it becomes (`traffic_line`): the draft cleaned, the intent verdict
//! and findings derived as the deployment derives them, and a `provenance`
//! naming each signal's origin.

use std::sync::Arc;

use serde::Serialize;
use serde_json::value::RawValue;

use crate::deployment::{Deployment, FabricationMode};
use crate::derive::draft;
use crate::derive::fabrication::{self, Finding};
use crate::derive::intent::{self, IntentVerdict};
use crate::read::provenance::Origin;
use crate::read::turn::{Text, Turn};

impl InputFormat {
    /// The format an invalid traffic line looks like, when it looks like
    /// another format the tool reads: an OTLP document (`resourceSpans`;
    /// also the first lines of one pretty-printed) or a chat transcript
    /// (`messages` and no `draft`). Asked only of lines that are not
    /// traffic, so it may read the whole line.
    pub fn recognise(line: &str) -> Option<InputFormat> {
        use serde::de::IgnoredAny;
        let keys = serde_json::from_str::<std::collections::BTreeMap<String, IgnoredAny>>(line);
        match keys {
            Ok(k) if k.contains_key("resourceSpans") => Some(InputFormat::Otlp),
            Ok(k) if k.contains_key("messages") && !k.contains_key("draft") => {
                Some(InputFormat::OpenaiChat)
            }
            Ok(_) => None,
            Err(_) => {
                let t = line.trim_start().trim_start_matches('{').trim_start();
                t.starts_with("\"resourceSpans\"")
                    .then_some(InputFormat::Otlp)
            }
        }
    }

    /// `reason` for a line that is not traffic, with the format it looks
    /// like and the setting that reads it.
    pub fn hint(reason: String, line: &str) -> crate::options::Said {
        match InputFormat::recognise(line) {
            Some(f) => crate::said![
                format!(
                    "{reason}: this line looks like {}, not traffic; read it with ",
                    match f {
                        InputFormat::Otlp => "an OTLP trace document",
                        _ => "an OpenAI-style chat transcript",
                    }
                ),
                crate::options::Setting::From,
                format!(" {}", f.name())
            ],
            None => reason.into(),
        }
    }
}

pub use crate::options::InputFormat;

/// The most tool calls one turn may have (with `history = "conversation"`
/// a long conversation's last turns would otherwise hold every call made,
/// and the traffic grow with the square of the conversation).
pub const MAX_TOOL_CALLS: usize = 1024;

/// What symfonic's `refuse` fabrication mode puts in place of a draft whose
/// finding reaches `fabrication_refuse_min_confidence`
/// (`agent/middleware/fabrication_wiring.py`, `_SAFE_REFUSAL`).
pub const SAFE_REFUSAL: &str =
    "I cannot confirm that action completed. Let me retry or check the tool output before answering.";

/// A text a record holds: whole, cut by the exporter, or not captured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Captured {
    Whole(Arc<str>),
    /// Cut at the exporter's limit (what is left, marker included).
    Cut(Arc<str>),
    Absent,
}

impl Captured {
    fn whole(&self) -> Option<&str> {
        match self {
            Captured::Whole(s) => Some(s),
            _ => None,
        }
    }
}

/// A tool result: its text, or the JSON string a transcript wrote it as
/// (checked, and read only when something reads it: a replay that checks
/// no fabrication never does, and tool results are most of a transcript's
/// escapes).
///
/// Shared (`Arc`): with `history = "conversation"` every later turn of a
/// conversation holds its earlier calls, and a copy each would make memory
/// grow with the square of the conversation.
#[derive(Clone, Debug)]
pub enum ResultText {
    Text(Arc<str>),
    Json(Arc<str>),
}

impl ResultText {
    /// The result's text.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            ResultText::Text(t) => t.as_ref().into(),
            // Checked as a JSON string when it was read.
            ResultText::Json(j) => serde_json::from_str::<String>(j)
                .expect("a result kept as JSON is a JSON string")
                .into(),
        }
    }

    /// A JSON string holding it: as `serde_json` writes one when
    /// `canonical`, else any (the one read, as it was written).
    pub fn json(&self, canonical: bool) -> std::borrow::Cow<'_, str> {
        match self {
            ResultText::Json(j) if !canonical || is_canonical(j) => j.as_ref().into(),
            _ => json_string(&self.text()).into(),
        }
    }

    /// About how many bytes it holds (as kept, escapes and all).
    pub fn size(&self) -> usize {
        match self {
            ResultText::Text(t) | ResultText::Json(t) => t.len(),
        }
    }
}

/// Whether a JSON string (valid, as the fast reader checked it) is written
/// as `serde_json` writes its text: every escape one it writes (`\"`,
/// `\\`, `\b`, `\t`, `\n`, `\f`, `\r`, and `\u00xx` in lower case for the
/// other control characters), so the text is nowhere written another way.
pub fn is_canonical(json: &str) -> bool {
    let b = json.as_bytes();
    let mut i = 1;
    while let Some(k) = memchr::memchr(b'\\', &b[i..]) {
        let e = i + k + 1;
        let ok = match b.get(e) {
            Some(b'"' | b'\\' | b'b' | b't' | b'n' | b'f' | b'r') => {
                i = e + 1;
                true
            }
            Some(b'u') => {
                let hex = b.get(e + 1..e + 5).unwrap_or(&[]);
                i = e + 5;
                match hex {
                    [b'0', b'0', h, l] => {
                        let digit = |c: &u8| c.is_ascii_digit() || (b'a'..=b'f').contains(c);
                        let value =
                            u8::from_str_radix(std::str::from_utf8(&hex[2..]).unwrap_or("zz"), 16);
                        digit(h)
                            && digit(l)
                            && value.is_ok_and(|v| {
                                v < 0x20 && !matches!(v, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d)
                            })
                    }
                    _ => false,
                }
            }
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    true
}

/// Equal when their texts are.
impl PartialEq for ResultText {
    fn eq(&self, other: &ResultText) -> bool {
        self.text() == other.text()
    }
}

/// One tool call as a record holds it; its texts shared by every turn
/// that holds it ([`ResultText`] says why).
#[derive(Clone, Debug, PartialEq)]
pub struct RawCall {
    pub name: Arc<str>,
    /// The arguments as JSON text (parsed), or as the recorded string.
    pub args: Option<Arc<str>>,
    pub result: Option<ResultText>,
    /// Whether its arguments and result were captured whole.
    pub whole: bool,
}

/// A turn's tool calls: a list of its own, or a window of its
/// conversation's calls ([`CallLog`]: a transcript's, a trace's session),
/// which every turn of the conversation shares. A window holds a few
/// numbers, where a list of its own held an entry per call: with `history
/// = "conversation"` that made memory grow with the square of a
/// conversation.
#[derive(Clone, Debug)]
pub enum RawCalls {
    Own(Vec<RawCall>),
    Window {
        log: Arc<CallLog>,
        /// The calls `from..to` of the log.
        from: usize,
        to: usize,
        /// How many results had come back when the turn was replied: a
        /// call answered later has no result in this turn.
        answered: usize,
        /// Whether the turn's deployment captured texts (a trace's run
        /// without them has no call captured whole).
        captured: bool,
    },
}

/// A conversation's calls in order, each with its result and when it came
/// back; and their names as the gate reads them, shared by the turns.
#[derive(Debug, Default)]
pub struct CallLog {
    pub calls: Vec<LoggedCall>,
    names: Arc<[crate::read::turn::ToolCall]>,
    /// How many of the first `i` calls have arguments the format cannot
    /// read as they are, and how many were cut (so a window answers in
    /// constant time, not in a pass over its calls for every turn).
    unread_args_before: Vec<u32>,
    cut_before: Vec<u32>,
}

/// One call of a [`CallLog`].
#[derive(Debug)]
pub struct LoggedCall {
    pub name: Arc<str>,
    pub args: Option<Arc<str>>,
    /// Its result, and how many results had come back before it.
    pub result: Option<(usize, ResultText)>,
    /// Whether its arguments and result were recorded whole.
    pub whole: bool,
}

impl CallLog {
    pub fn new(calls: Vec<LoggedCall>) -> CallLog {
        let names = calls
            .iter()
            .map(|c| crate::read::turn::ToolCall::of_name(&c.name))
            .collect();
        let counts = |f: &dyn Fn(&LoggedCall) -> bool| {
            let mut n = 0;
            let mut out = Vec::with_capacity(calls.len() + 1);
            out.push(n);
            for c in &calls {
                n += u32::from(f(c));
                out.push(n);
            }
            out
        };
        let unread_args_before = counts(&|c| !args_read(c.args.as_deref()));
        let cut_before = counts(&|c| !c.whole);
        CallLog {
            calls,
            names,
            unread_args_before,
            cut_before,
        }
    }

    /// How many of the calls `from..to` `before` counts.
    fn among(before: &[u32], from: usize, to: usize) -> u32 {
        before[to] - before[from]
    }
}

impl Default for RawCalls {
    fn default() -> RawCalls {
        RawCalls::Own(Vec::new())
    }
}

impl RawCalls {
    pub fn len(&self) -> usize {
        match self {
            RawCalls::Own(v) => v.len(),
            RawCalls::Window { from, to, .. } => to - from,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The calls in order (a window's built as the turn sees them).
    pub fn iter(&self) -> impl Iterator<Item = std::borrow::Cow<'_, RawCall>> {
        use std::borrow::Cow;
        let (own, window): (&[RawCall], &[LoggedCall]) = match self {
            RawCalls::Own(v) => (v, &[]),
            RawCalls::Window { log, from, to, .. } => (&[], &log.calls[*from..*to]),
        };
        let (answered, captured) = match self {
            RawCalls::Window {
                answered, captured, ..
            } => (*answered, *captured),
            RawCalls::Own(_) => (0, false),
        };
        own.iter()
            .map(Cow::Borrowed)
            .chain(window.iter().map(move |c| {
                Cow::Owned(RawCall {
                    name: c.name.clone(),
                    args: c.args.clone(),
                    result: c
                        .result
                        .as_ref()
                        .filter(|(before, _)| *before < answered)
                        .map(|(_, r)| r.clone()),
                    whole: c.whole && captured,
                })
            }))
    }

    /// The calls as a list of their own.
    pub fn to_vec(&self) -> Vec<RawCall> {
        self.iter().map(std::borrow::Cow::into_owned).collect()
    }

    /// Whether every call's arguments are JSON the format reads as they
    /// are ([`args_read`]).
    fn args_read(&self) -> bool {
        match self {
            RawCalls::Own(v) => v.iter().all(|c| args_read(c.args.as_deref())),
            RawCalls::Window { log, from, to, .. } => {
                CallLog::among(&log.unread_args_before, *from, *to) == 0
            }
        }
    }

    /// Whether every call's arguments and result were captured whole.
    fn all_whole(&self) -> bool {
        match self {
            RawCalls::Own(v) => v.iter().all(|c| c.whole),
            RawCalls::Window {
                log,
                from,
                to,
                captured,
                ..
            } => from == to || (*captured && CallLog::among(&log.cut_before, *from, *to) == 0),
        }
    }

    /// A window's names, shared with the other turns of its conversation.
    fn shared_names(&self) -> Option<crate::read::turn::Calls> {
        match self {
            RawCalls::Own(_) => None,
            RawCalls::Window { log, from, to, .. } => Some(crate::read::turn::Calls::Shared(
                log.names.clone(),
                *from..*to,
            )),
        }
    }
}

/// Equal when they hold the same calls, however held.
impl PartialEq for RawCalls {
    fn eq(&self, other: &RawCalls) -> bool {
        self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}

/// A record's `scope`, as JSON text, shared by every turn of the record:
/// a copy each made memory grow with the scope's size times the turns (a
/// 100 KB scope over 20,000 turns took 6 GB), and checking it for each
/// turn, time. It is held to the traffic format's rules once.
#[derive(Debug)]
pub struct Scope {
    pub text: Arc<str>,
    reads: std::sync::OnceLock<bool>,
}

impl Scope {
    pub fn new(text: impl Into<Arc<str>>) -> Arc<Scope> {
        Arc::new(Scope {
            text: text.into(),
            reads: std::sync::OnceLock::new(),
        })
    }

    /// Whether the format reads it as it is, nesting no deeper than a
    /// value inside a line may ([`deep`]).
    fn reads(&self) -> bool {
        *self
            .reads
            .get_or_init(|| !deep(&self.text) && Turn::scope_problem(&self.text).is_none())
    }
}

/// Equal when their texts are.
impl PartialEq for Scope {
    fn eq(&self, other: &Scope) -> bool {
        self.text == other.text
    }
}

/// What one turn's record holds, before anything is derived.
#[derive(Clone, Debug, PartialEq)]
pub struct RawTurn {
    /// Shared by the turns of a conversation (see [`Scope`]).
    pub run_id: Arc<str>,
    pub turn: u64,
    pub ts: Option<Arc<str>>,
    /// Where the turn is in its record: a trace's root span, a
    /// transcript's message ([`Turn::trace_id`]).
    pub trace_id: Option<String>,
    pub span_id: Option<String>,
    pub message_index: Option<u64>,
    /// The record's own id for the turn (a trace's symfonic run id).
    pub turn_id: Option<String>,
    pub scope: Option<Arc<Scope>>,
    pub user_message: Captured,
    /// The model's completion (cleaned here into the draft).
    pub completion: Captured,
    pub tool_calls: RawCalls,
    /// Whether the turn's tool calls are all known (a trace without a
    /// session's earlier runs, or history the trace does not show, is not).
    pub calls_known: bool,
    /// `critic` in the traffic format's shape, as JSON text; None: unknown.
    pub critic: Option<String>,
    pub critic_origin: Origin,
    pub call_site: Option<&'static str>,
}

/// The signals of one raw turn, derived as the deployment derives them.
pub struct Derived {
    pub draft: String,
    pub intent: Option<Option<IntentVerdict>>,
    pub findings: Option<Vec<Finding>>,
    pub origins: [Origin; 7],
}

/// Derive a raw turn's draft, intent verdict and findings; `calls` gives
/// its tool calls as the traffic line writes them (`call_json`), asked for
/// only when a claim needs grounding in them.
pub fn derive(t: &RawTurn, d: &Deployment, calls: &dyn Fn() -> Vec<String>) -> Derived {
    let has_calls = !t.tool_calls.is_empty();
    let (mut draft, draft_from) = match &t.completion {
        Captured::Whole(c) => (
            draft::clean(c, d.activation_log_mode, has_calls),
            Origin::Derived,
        ),
        Captured::Cut(c) => (
            draft::clean(c, d.activation_log_mode, has_calls),
            Origin::Unknown,
        ),
        Captured::Absent => (String::new(), Origin::Unknown),
    };
    let user = t.user_message.whole();
    // No verdict at all when both intent stages are off: known (derived).
    let intent = match (d.intent_on(), user) {
        (false, _) => Some(None),
        (true, Some(u)) => Some(Some(intent::classify(u, &d.tool_trigger_keywords))),
        (true, None) => None,
    };
    let calls_whole = t.calls_known && t.tool_calls.all_whole();
    let findings = match (d.fabrication_check_mode, user, intent.as_ref()) {
        (FabricationMode::Off, _, _) => Some(Vec::new()),
        // symfonic checks no empty reply.
        _ if draft_from == Origin::Derived && draft.is_empty() => Some(Vec::new()),
        // A search that could not be finished leaves the findings unknown.
        (_, Some(u), Some(v)) if draft_from == Origin::Derived && calls_whole => {
            let calls = fabrication::ToolCalls::Lazy(t.tool_calls.len(), calls);
            find(&draft, calls, u, d, v.as_ref()).ok()
        }
        _ => None,
    };
    let refuse = d.fabrication_check_mode == FabricationMode::Refuse
        && findings.as_ref().is_some_and(|f| {
            f.iter()
                .any(|f| f.confidence >= d.fabrication_refuse_min_confidence)
        });
    if refuse {
        draft = SAFE_REFUSAL.to_string();
    }
    let known = |k: bool| if k { Origin::Derived } else { Origin::Unknown };
    let origins = [
        draft_from,
        if t.calls_known {
            Origin::Recorded
        } else {
            Origin::Unknown
        },
        known(intent.is_some()),
        known(findings.is_some()),
        Origin::Unknown,
        Origin::Unknown,
        t.critic_origin,
    ];
    Derived {
        draft,
        intent,
        findings,
        origins,
    }
}

/// `detect_fabrication` over the turn's calls (hydrated context: none is
/// recorded, so empty).
fn find(
    draft: &str,
    calls: fabrication::ToolCalls,
    user: &str,
    d: &Deployment,
    intent: Option<&IntentVerdict>,
) -> Result<Vec<Finding>, fabrication::Unsearched> {
    fabrication::detect(&fabrication::Inputs {
        draft,
        tool_calls: calls,
        hydrated_context: "",
        user_message: user,
        identifier_keys: &d.identifier_keys,
        intent,
    })
}

/// A call as the traffic format (and symfonic's `_collect_tool_calls`)
/// writes it: `{"name", "args", "result"}`, its result as `result` says.
fn call_json(c: &RawCall, result: Written) -> String {
    let mut out = Vec::new();
    write_call(&mut out, c, result);
    String::from_utf8(out).expect("JSON written from strings is UTF-8")
}

/// [`call_json`], after `out`.
fn write_call(out: &mut Vec<u8>, c: &RawCall, result: Written) {
    out.extend_from_slice(b"{\"name\":");
    json_into(out, &*c.name);
    if let Some(a) = &c.args {
        out.extend_from_slice(b",\"args\":");
        out.extend_from_slice(a.as_bytes());
    }
    if let (Some(canonical), Some(r)) = (result.canonical(), &c.result) {
        out.extend_from_slice(b",\"result\":");
        out.extend_from_slice(r.json(canonical).as_bytes());
    }
    out.push(b'}');
}

/// How a call's result is written in its JSON.
#[derive(Clone, Copy)]
enum Written {
    /// Left out (what the traffic format reads of a call).
    Without,
    /// As any JSON string holding it (for the fabrication check).
    AsRead,
    /// As `serde_json` writes it (what `import` writes).
    Canonical,
}

impl Written {
    fn canonical(self) -> Option<bool> {
        match self {
            Written::Without => None,
            Written::AsRead => Some(false),
            Written::Canonical => Some(true),
        }
    }
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string serialises")
}

/// `v` as `serde_json` writes it, after `out`.
fn json_into<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    serde_json::to_writer(out, v).expect("a converted turn's value serialises")
}

/// The turn's calls as JSON text for the fabrication check, once
/// [`convert`] has held their names and arguments to the format (each
/// result a JSON string, so each call is JSON).
pub(crate) fn calls_json(t: &RawTurn) -> Vec<String> {
    t.tool_calls
        .iter()
        .map(|c| call_json(&c, Written::AsRead))
        .collect()
}

/// JSON text as a raw value, or the JSON error as a reason.
fn raw_json(s: String) -> Result<Box<RawValue>, super::not_imported::NotImported> {
    RawValue::from_string(s).map_err(|e| super::not_imported::NotImported::from(e.to_string()))
}

/// A traffic line's keys in the order a converted record is checked in
/// (see [`ConvertedTurn::parse_shell`]).
#[derive(Serialize)]
struct Shell<'a> {
    run_id: &'a str,
    draft: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ts: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    span_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message_index: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    turn_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scope: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    critic: Option<&'a RawValue>,
    tool_calls_this_turn: &'a [&'a RawValue],
    turn: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    fabrication_findings: Option<&'a [Finding]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    intent_verdict: Option<&'a Option<IntentVerdict>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    call_site: Option<&'static str>,
    provenance: &'a Provenance,
}

/// `provenance`, every signal named.
#[derive(Serialize)]
struct Provenance {
    draft: &'static str,
    tool_calls: &'static str,
    intent: &'static str,
    findings: &'static str,
    confidence: &'static str,
    sensitive: &'static str,
    critic: &'static str,
}

/// A raw turn converted: the turn as the gate reads it, and what its
/// traffic line holds. The turn is what [`Turn::parse`] reads of that
/// line, built without writing it: the line less its draft and tool
/// results (the long texts) is parsed, so every rule of the traffic format
/// holds the record's own values (`ts`, `scope`, `critic`, the calls'
/// names and arguments), and the draft is set as derived (tool results are
/// strings the format does not read). `converted_turns_are_their_lines`
/// holds the two equal.
#[derive(Debug)]
pub struct ConvertedTurn {
    turn: Turn<'static>,
    /// The record (its completion dropped: the draft is in `turn`).
    raw: RawTurn,
    critic: Option<Box<RawValue>>,
    intent: Option<Option<IntentVerdict>>,
    findings: Option<Vec<Finding>>,
    origins: [Origin; 7],
    /// The turn as each further deployment of the replay derives it
    /// (`Decoder::alternates`, in order); empty with one deployment.
    others: Vec<Turn<'static>>,
}

impl ConvertedTurn {
    /// The turn, carrying `others`' turns: the same record derived under
    /// the replay's further deployments, in their order.
    pub fn with_others(mut self, others: Vec<ConvertedTurn>) -> ConvertedTurn {
        self.others = others.into_iter().map(|c| c.turn).collect();
        self
    }
}

impl crate::read::reader::Converted for ConvertedTurn {
    fn turn(&self) -> &Turn<'static> {
        &self.turn
    }

    fn under(&self, deployment: usize) -> &Turn<'static> {
        match deployment {
            0 => &self.turn,
            k => &self.others[k - 1],
        }
    }

    /// The traffic line, in the format's field order, as `serde_json`
    /// writes it. Written by hand, so that the calls (JSON this module
    /// wrote, each result canonical) are not read again to make them raw
    /// values: that read was a tenth of an `import`.
    fn line(&self) -> String {
        let t = &self.raw;
        let mut out = Vec::with_capacity(self.text_bytes() + 512);
        let key = |out: &mut Vec<u8>, k: &str| {
            out.extend_from_slice(if out.is_empty() { b"{\"" } else { b",\"" });
            out.extend_from_slice(k.as_bytes());
            out.extend_from_slice(b"\":");
        };
        key(&mut out, "run_id");
        json_into(&mut out, &*t.run_id);
        key(&mut out, "turn");
        json_into(&mut out, &t.turn);
        if let Some(ts) = &t.ts {
            key(&mut out, "ts");
            json_into(&mut out, &**ts);
        }
        for (k, id) in [("trace_id", &t.trace_id), ("span_id", &t.span_id)] {
            if let Some(id) = id {
                key(&mut out, k);
                json_into(&mut out, id);
            }
        }
        if let Some(m) = &t.message_index {
            key(&mut out, "message_index");
            json_into(&mut out, m);
        }
        if let Some(id) = &t.turn_id {
            key(&mut out, "turn_id");
            json_into(&mut out, id);
        }
        if let Some(scope) = &t.scope {
            key(&mut out, "scope");
            out.extend_from_slice(scope.text.as_bytes());
        }
        key(&mut out, "draft");
        json_into(&mut out, &self.turn.draft);
        key(&mut out, "tool_calls_this_turn");
        out.push(b'[');
        for (i, c) in t.tool_calls.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_call(&mut out, &c, Written::Canonical);
        }
        out.push(b']');
        if let Some(findings) = &self.findings {
            key(&mut out, "fabrication_findings");
            json_into(&mut out, findings);
        }
        if let Some(intent) = &self.intent {
            key(&mut out, "intent_verdict");
            json_into(&mut out, intent);
        }
        if let Some(site) = t.call_site {
            key(&mut out, "call_site");
            json_into(&mut out, site);
        }
        if let Some(critic) = &self.critic {
            key(&mut out, "critic");
            out.extend_from_slice(critic.get().as_bytes());
        }
        key(&mut out, "provenance");
        json_into(&mut out, &self.provenance());
        out.push(b'}');
        String::from_utf8(out).expect("JSON written from strings is UTF-8")
    }
}

impl ConvertedTurn {
    /// About how many bytes of text the turn holds (its draft, its calls'
    /// arguments and results): what a block of turns is sized by.
    pub fn text_bytes(&self) -> usize {
        let calls = self.raw.tool_calls.iter().map(|c| {
            c.name.len()
                + c.args.as_ref().map_or(0, |a| a.len())
                + c.result.as_ref().map_or(0, ResultText::size)
        });
        200 + self.turn.draft.len() + calls.sum::<usize>()
    }

    /// `provenance`, every signal named.
    fn provenance(&self) -> Provenance {
        let o = self.origins.map(Origin::as_str);
        Provenance {
            draft: o[0],
            tool_calls: o[1],
            intent: o[2],
            findings: o[3],
            confidence: o[4],
            sensitive: o[5],
            critic: o[6],
        }
    }
}

/// The refusal of a turn past [`MAX_TOOL_CALLS`] calls; under `history =
/// "conversation"` it says that `earlier` count too (the conversation's,
/// or the session's, calls so far).
pub(crate) fn too_many_calls(
    history: crate::deployment::History,
    earlier: &str,
) -> super::not_imported::NotImported {
    let history = match history {
        crate::deployment::History::None => String::new(),
        crate::deployment::History::Conversation => {
            format!(" (with history = \"conversation\" {earlier} counts)")
        }
    };
    format!(
        "the turn has more than {MAX_TOOL_CALLS} tool calls{history}: more than one turn of a replay holds"
    )
    .into()
}

/// Convert a raw turn: derive its signals and hold the record's values to
/// the traffic format. Err when the record holds a value the traffic
/// format refuses (a `ts` that is not RFC 3339, a malformed `critic`),
/// with the format's reason.
pub fn convert(
    mut t: RawTurn,
    d: &Deployment,
) -> Result<ConvertedTurn, super::not_imported::NotImported> {
    if t.tool_calls.len() > MAX_TOOL_CALLS {
        return Err(too_many_calls(
            d.history,
            "every call of the session so far",
        ));
    }
    // Each call's arguments are JSON the format holds (most are), or the
    // call's JSON gives the reason it is not (before anything reads it).
    let args_read = t.tool_calls.args_read();
    if !args_read {
        for c in t.tool_calls.iter() {
            raw_json(call_json(&c, Written::Without))?;
        }
    }
    let derived = derive(&t, d, &|| calls_json(&t));
    let critic = t.critic.clone().map(raw_json).transpose()?;
    t.completion = Captured::Absent;
    let mut c = ConvertedTurn {
        turn: Turn::default(),
        raw: t,
        critic,
        intent: derived.intent,
        findings: derived.findings,
        origins: derived.origins,
        others: Vec::new(),
    };
    // The turn from its values; when they do not make one (or nest so
    // deep that the line's own nesting could matter), from the line less
    // its long texts, parsed: the same turn, or the reason the line's
    // parse gives.
    let from_values = args_read.then(|| c.turn_of_values()).flatten();
    let mut turn = match from_values {
        Some(turn) => turn,
        None => c.parse_shell()?,
    };
    turn.draft = std::borrow::Cow::Owned(derived.draft);
    // What the turns of its record share, shared (the line's parse made
    // copies).
    if let Some(shared) = c.raw.tool_calls.shared_names() {
        turn.tool_calls = shared;
    }
    turn.run_id = Text::Shared(c.raw.run_id.clone());
    if let Some(ts) = &c.raw.ts {
        turn.ts = Some(Text::Shared(ts.clone()));
    }
    if let Some(s) = &c.raw.scope {
        turn.scope = Some(Text::Shared(s.text.clone()));
    }
    c.turn = turn;
    Ok(c)
}

/// Whether a call's arguments are JSON the traffic format reads as they
/// are (most are).
fn args_read(args: Option<&str>) -> bool {
    args.is_none_or(|a| !deep(a) && crate::read::json::holds(a))
}

/// More `[` and `{` than this in a value the line holds, and how deep it
/// nests inside the line is left to the line's parse (JSON readers refuse
/// nesting past 128).
const DEEP: usize = 100;

fn deep(json: &str) -> bool {
    json.bytes().filter(|&b| b == b'[' || b == b'{').count() > DEEP
}

impl ConvertedTurn {
    /// The turn as [`Turn::from_fields`] builds it from the values the
    /// line's keys hold (the draft empty, set after; the calls' arguments
    /// read already), or None when that is not certain to be the line's
    /// parse.
    fn turn_of_values(&self) -> Option<Turn<'static>> {
        use crate::read::json::Node;
        use std::borrow::Cow;
        let t = &self.raw;
        let text = |s: &str| Node::Str(Cow::Owned(s.to_string()));
        let word = |s: &'static str| Node::Str(Cow::Borrowed(s));
        let map = |m: Vec<(&'static str, Node<'static>)>| {
            Node::Map(m.into_iter().map(|(k, v)| (Cow::Borrowed(k), v)).collect())
        };
        let n = t.turn;
        let mut fields = Vec::with_capacity(11);
        fields.extend([
            (
                "turn",
                Node::Num(n as f64, serde::de::Unexpected::Unsigned(n)),
            ),
            ("draft", word("")),
        ]);
        for (key, id) in [("trace_id", &t.trace_id), ("span_id", &t.span_id)] {
            if let Some(id) = id {
                fields.push((key, text(id)));
            }
        }
        if let Some(m) = t.message_index {
            fields.push((
                "message_index",
                Node::Num(m as f64, serde::de::Unexpected::Unsigned(m)),
            ));
        }
        if let Some(id) = &t.turn_id {
            fields.push(("turn_id", text(id)));
        }
        // The format reads a call's name (its arguments and result only
        // as JSON it holds); a window's names are its conversation's, set
        // once the turn is built ([`convert`]).
        let calls = match t.tool_calls.shared_names() {
            Some(_) => Vec::new(),
            None => t
                .tool_calls
                .iter()
                .map(|c| map(vec![("name", text(&c.name))]))
                .collect(),
        };
        fields.push(("tool_calls_this_turn", Node::Seq(calls)));
        if let Some(f) = &self.findings {
            let kinds = f.iter().map(|f| map(vec![("kind", word(f.kind))]));
            fields.push(("fabrication_findings", Node::Seq(kinds.collect())));
        }
        if let Some(i) = &self.intent {
            let v = i
                .as_ref()
                .map_or(Node::Null, |v| map(vec![("label", word(v.label))]));
            fields.push(("intent_verdict", v));
        }
        if let Some(site) = t.call_site {
            fields.push(("call_site", word(site)));
        }
        if let Some(c) = &self.critic {
            if deep(c.get()) {
                return None;
            }
            let node: Node = serde_json::from_str(c.get()).ok()?;
            fields.push(("critic", node.into_owned()));
        }
        let signals = crate::read::provenance::Signal::ALL;
        let origins = signals
            .iter()
            .zip(self.origins)
            .map(|(s, o)| (s.as_str(), word(o.as_str())));
        fields.push(("provenance", map(origins.collect())));
        if t.scope.as_ref().is_some_and(|s| !s.reads()) {
            return None;
        }
        let scope = t.scope.as_ref().map(|s| s.text.clone());
        Turn::from_fields(fields, t.run_id.clone(), t.ts.clone(), scope).ok()
    }

    /// The turn as [`Turn::parse`] reads the line less its draft and tool
    /// results (the long texts, which the format reads nothing of but
    /// their being strings); Err gives the parse's reason. The record's
    /// own values come first, the critic before the calls, so a record
    /// with more than one refused names the same one as ever.
    fn parse_shell(&self) -> Result<Turn<'static>, super::not_imported::NotImported> {
        let calls: Vec<Box<RawValue>> = self
            .raw
            .tool_calls
            .iter()
            .map(|c| raw_json(call_json(&c, Written::Without)))
            .collect::<Result<_, _>>()?;
        let calls: Vec<&RawValue> = calls.iter().map(|c| c.as_ref()).collect();
        let t = &self.raw;
        let scope = t
            .scope
            .as_ref()
            .map(|s| serde_json::from_str::<&RawValue>(&s.text));
        let scope = scope
            .transpose()
            .map_err(|e| super::not_imported::NotImported::from(e.to_string()))?;
        let shell = Shell {
            run_id: &t.run_id,
            draft: "",
            ts: t.ts.as_deref(),
            trace_id: t.trace_id.as_deref(),
            span_id: t.span_id.as_deref(),
            message_index: t.message_index,
            turn_id: t.turn_id.as_deref(),
            scope,
            critic: self.critic.as_deref(),
            tool_calls_this_turn: &calls,
            turn: t.turn,
            fabrication_findings: self.findings.as_deref(),
            intent_verdict: self.intent.as_ref(),
            call_site: t.call_site,
            provenance: &self.provenance(),
        };
        let shell = serde_json::to_string(&shell).map_err(|e| e.to_string())?;
        Ok(Turn::parse(&shell).map_err(|e| e.reason)?.into_owned())
    }
}

/// The traffic line of a raw turn (what `import` writes); Err as
/// [`convert`] says.
pub(crate) fn traffic_line(
    t: RawTurn,
    d: &Deployment,
) -> Result<String, super::not_imported::NotImported> {
    use crate::read::reader::Converted;
    convert(t, d).map(|c| c.line())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record whose critic and calls are both refused names its critic,
    /// as before the turn was built from its values (calls nested 126
    /// deep pass alone, not inside a line).
    #[test]
    fn a_refused_turn_names_its_critic_before_its_calls() {
        let deep = format!("{}{}", "[".repeat(126), "]".repeat(126));
        let line = format!(
            r#"[{{"role":"assistant","content":null,"tool_calls":[{{"id":"c","function":{{"name":"f","arguments":"{deep}"}}}}]}},{{"role":"assistant","content":"ok","critic":{{"verdict":"maybe"}}}}]"#
        );
        let history = crate::deployment::History::None;
        let mut turns = crate::import::openai::turns(&line, "f", 1, history).unwrap();
        let e = convert(turns.remove(0), &Deployment::default())
            .unwrap_err()
            .0;
        assert!(e.to_string().starts_with("critic.verdict must be"), "{e}");
    }

    /// `import` writes a line's keys in the format's order, each value as
    /// `serde_json` writes it (the line is written by hand; every
    /// optional key is here, so a key moved or dropped fails).
    #[test]
    fn a_converted_line_is_written_in_the_formats_order() {
        use crate::read::reader::Converted;
        let t = RawTurn {
            run_id: "r\u{e9}\"1".into(),
            turn: 7,
            ts: Some("2026-01-02T03:04:05Z".into()),
            trace_id: Some("4bf92f3577b34da6a3ce929d0e0e4736".into()),
            span_id: Some("00f067aa0ba902b7".into()),
            message_index: Some(3),
            turn_id: Some("run-9".into()),
            scope: Some(Scope::new(r#"{"tenant":"a"}"#)),
            user_message: Captured::Whole("book it".into()),
            completion: Captured::Whole("Booked.\nDone".into()),
            tool_calls: RawCalls::Own(vec![RawCall {
                name: "book".into(),
                args: Some(r#"{"id":1}"#.into()),
                result: Some(ResultText::Text("ok \"x\"".into())),
                whole: true,
            }]),
            calls_known: true,
            critic: Some(r#"{"ran":true,"verdict":"approve"}"#.into()),
            critic_origin: Origin::Recorded,
            call_site: Some("skill_gate"),
        };
        let line = convert(t, &Deployment::default()).unwrap().line();
        let want = concat!(
            r#"{"run_id":"ré\"1","turn":7,"ts":"2026-01-02T03:04:05Z","#,
            r#""trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7","message_index":3,"turn_id":"run-9","#,
            r#""scope":{"tenant":"a"},"#,
            r#""draft":"Booked.\nDone","tool_calls_this_turn":[{"name":"book","args":{"id":1},"result":"ok \"x\""}],"#,
            r#""fabrication_findings":[],"intent_verdict":null,"call_site":"skill_gate","#,
            r#""critic":{"ran":true,"verdict":"approve"},"provenance":{"draft":"derived","#,
            r#""tool_calls":"recorded","intent":"derived","findings":"derived","confidence":"unknown","#,
            r#""sensitive":"unknown","critic":"recorded"}}"#
        );
        assert_eq!(line, want);
    }

    proptest::proptest! {
        /// A JSON string is canonical exactly when it is what `serde_json`
        /// writes for its text: written so, or with one character escaped
        /// another way (`\uXXXX` in either case, `\/`).
        #[test]
        fn canonical_strings_are_serde_jsons(
            text in "[a-z\"\\\\/\u{0}-\u{1f}\u{7f}é\u{2028}😀 ]{0,12}",
            at in 0usize..12,
            upper in proptest::bool::ANY,
        ) {
            let json = serde_json::to_string(&text).unwrap();
            proptest::prop_assert!(is_canonical(&json), "{}", json);
            if let Some(c) = text.chars().nth(at) {
                let mut units = [0u16; 2];
                let escaped: String = c
                    .encode_utf16(&mut units)
                    .iter()
                    .map(|u| match upper {
                        true => format!("\\u{u:04X}"),
                        false => format!("\\u{u:04x}"),
                    })
                    .collect();
                let mut other = String::from("\"");
                for (k, d) in text.chars().enumerate() {
                    let plain = serde_json::to_string(&d.to_string()).unwrap();
                    match k == at {
                        true => other.push_str(&escaped),
                        false => other.push_str(&plain[1..plain.len() - 1]),
                    }
                }
                other.push('"');
                proptest::prop_assert_eq!(serde_json::from_str::<String>(&other).unwrap(), text.clone());
                proptest::prop_assert_eq!(is_canonical(&other), other == json, "{}", other);
                if c == '/' {
                    let slash = json.replacen('/', "\\/", 1);
                    proptest::prop_assert!(!is_canonical(&slash), "{}", slash);
                }
            }
        }
    }
}
