//! symfonic's OpenTelemetry traces (`--from otlp`): OTLP/JSON as the
//! Collector's file exporter writes it (one document a line, or one
//! pretty-printed document a file), read into turns.
//!
//! Each `run()` is a trace: a root `symfonic.run` span and flat children,
//! all carrying `symfonic.run.id`. A run's spans may arrive in several
//! documents, so a source is gathered whole before its runs are turned
//! into turns: the user's message from the root, the draft from the last
//! main-loop `symfonic.llm.call`, the tool calls from `symfonic.tool.*`
//! spans, and what production's critic did from its own LLM span
//! (`symfonic.node.name = metacognition_critic`). A turn's place is its
//! run's ordinal in its session, by the root's start time.
//!
//! A document that is not what the format says (not JSON, a span without
//! a run id, an unknown span kind or status code, an int64 that is not a
//! string) is refused whole, by line; spans of other instrumentation are
//! counted and left out.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;
use serde_json::Value;

use super::pyliteral;
use super::raw::{CallLog, Captured, LoggedCall, RawCall, RawCalls, RawTurn, ResultText, Scope};
use crate::deployment::History;
use crate::derive::reflection;
use crate::read::provenance::Origin;
use crate::read::reader::Failed;
use std::sync::Arc;

/// The exporter's limit on a text attribute, and what it ends a cut one in
/// (`observability/otel/attributes.py`).
const MAX_ATTRIBUTE_BYTES: usize = 4096;
const TRUNCATION_MARKER: &str = "...[truncated]";

/// Counts a gathering keeps (reported in `summary.json`, `import`).
pub const COUNT_NAMES: [&str; 12] = [
    "documents",
    "repeated_spans",
    "unreadable_critic_tokens",
    "critic_answers_unparsed",
    "runs_with_error",
    "runs",
    "stream_runs",
    "runs_without_root",
    "root_spans_left_out",
    "critic_spans_left_out",
    "foreign_spans",
    "unknown_symfonic_spans",
];

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Document {
    resource_spans: Vec<ResourceSpans>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceSpans {
    #[serde(default)]
    scope_spans: Vec<ScopeSpans>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ScopeSpans {
    /// Read one by one: a span of other instrumentation is only named.
    #[serde(default)]
    spans: Vec<Box<serde_json::value::RawValue>>,
}

/// A span's name alone (anything else in it is not read).
#[derive(Deserialize)]
struct Named {
    #[serde(default)]
    name: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Span {
    #[serde(default)]
    trace_id: Option<Value>,
    #[serde(default)]
    span_id: Option<Value>,
    #[serde(default)]
    name: String,
    #[serde(default)]
    kind: Option<Value>,
    #[serde(default)]
    start_time_unix_nano: Option<Value>,
    #[serde(default)]
    end_time_unix_nano: Option<Value>,
    #[serde(default)]
    attributes: Vec<KeyValue>,
    #[serde(default)]
    status: Option<Status>,
}

#[derive(Deserialize)]
struct KeyValue {
    key: String,
    value: Option<Value>,
}

#[derive(Deserialize)]
struct Status {
    #[serde(default)]
    code: Option<Value>,
}

/// An attribute value as symfonic's spans use them.
#[derive(Clone, Debug, PartialEq)]
enum Attr {
    Str(String),
    Int(i64),
    Double(f64),
    Other,
}

/// One span, reduced to what a turn needs.
#[derive(Clone, Debug)]
struct SpanRec {
    /// (traceId, spanId), where the span gives both.
    ids: Option<(String, String)>,
    name: String,
    /// None when the span does not say (OTLP's default 0 is no time).
    start: Option<u64>,
    end: Option<u64>,
    error: bool,
    attrs: Vec<(String, Attr)>,
    source: usize,
    line: u64,
}

impl SpanRec {
    fn get(&self, key: &str) -> Option<&Attr> {
        self.attrs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    fn str(&self, key: &str) -> Option<&str> {
        match self.get(key) {
            Some(Attr::Str(s)) => Some(s),
            _ => None,
        }
    }

    fn int(&self, key: &str) -> Option<i64> {
        match self.get(key) {
            Some(Attr::Int(i)) => Some(*i),
            _ => None,
        }
    }

    /// A count another exporter may write as a `stringValue` of digits or
    /// a whole `doubleValue`: Some(Ok) read, Some(Err) present but not a
    /// whole number, None absent.
    fn count(&self, key: &str) -> Option<Result<i64, ()>> {
        Some(match self.get(key)? {
            Attr::Int(i) if *i >= 0 => Ok(*i),
            Attr::Str(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
                s.parse::<i64>().map_err(drop)
            }
            Attr::Double(d) if d.fract() == 0.0 && (0.0..9.0e15).contains(d) => Ok(*d as i64),
            _ => Err(()),
        })
    }

    fn node(&self) -> Option<&str> {
        self.str("symfonic.node.name")
    }
}

/// The spans of every source, by run id (in the order runs first appear).
#[derive(Default)]
pub struct Gathering {
    runs: HashMap<String, Vec<SpanRec>>,
    order: Vec<String>,
    /// (traceId, spanId) of every span read: an exporter's retry sends a
    /// span again, and it counts once.
    seen: std::collections::HashSet<(String, String)>,
    /// Documents refused, with their source.
    pub failed: Vec<(usize, Failed)>,
    pub counts: BTreeMap<&'static str, u64>,
}

/// Documents of one source parsed and not yet gathered
/// ([`Gathering::overlap`]).
pub struct Parsed {
    docs: Vec<(u64, String)>,
    spans: Vec<Result<Spans, super::not_imported::NotImported>>,
    source: usize,
}

/// Turns with the source and line their record starts on (and the turn
/// again under each further history asked for), the documents refused,
/// what the gathering counted, and the keys of the runs and sessions it
/// saw any span of ([`TraceKeys`]).
pub type Gathered = (
    Vec<(usize, u64, RawTurn, Vec<RawTurn>)>,
    Vec<(usize, Failed)>,
    BTreeMap<&'static str, u64>,
    Vec<String>,
);

/// What a replay of part of a trace must share with no other part for
/// their results to merge exactly: the runs it saw any span of (`run ID`)
/// and the sessions of its roots (`session TENANT SESSION`, as JSON): a run
/// split over two files is two incomplete runs, and a session split over
/// two is numbered, and its history read, in each alone.
pub struct TraceKeys;

impl TraceKeys {
    pub fn run(id: &str) -> String {
        format!("run {id}")
    }

    pub fn session(tenant: Option<&str>, session: &str) -> String {
        format!(
            "session {}",
            serde_json::json!({"tenant": tenant, "session": session})
        )
    }
}

impl Gathering {
    fn count(&mut self, what: &'static str, n: u64) {
        if n > 0 {
            *self.counts.entry(what).or_default() += n;
        }
    }

    /// Read one document (of source `source`, on line `line`); a document
    /// that is not valid is refused whole.
    pub fn document(&mut self, text: &str, source: usize, line: u64) {
        self.absorb(spans(text, source, line), text, source, line);
    }

    /// Read a source's documents (each with its line), parsed on every
    /// core of the current pool and gathered in order (a span sent twice
    /// counts where it first came).
    pub fn documents(&mut self, docs: Vec<(u64, String)>, source: usize) {
        // A few hundred at a time: the spans parsed and not yet gathered
        // are held in memory.
        let mut pending = None;
        let mut docs = docs.into_iter().peekable();
        while docs.peek().is_some() {
            let chunk: Vec<(u64, String)> = docs.by_ref().take(256).collect();
            pending = Some(self.overlap(pending, chunk, source));
        }
        self.settle(pending);
    }

    /// Gather the documents parsed before (`pending`) while `docs` are
    /// parsed on the other cores of the current pool: gathering is one
    /// thread's work, and waiting for it left the other cores idle.
    pub fn overlap(
        &mut self,
        pending: Option<Parsed>,
        docs: Vec<(u64, String)>,
        source: usize,
    ) -> Parsed {
        use rayon::prelude::*;
        let ((), spans) = rayon::join(
            || self.settle(pending),
            || {
                docs.par_iter()
                    .map(|(line, text)| spans(text, source, *line))
                    .collect()
            },
        );
        Parsed {
            docs,
            spans,
            source,
        }
    }

    /// Gather documents parsed already, in order.
    pub fn settle(&mut self, parsed: Option<Parsed>) {
        if let Some(p) = parsed {
            for ((line, text), spans) in p.docs.iter().zip(p.spans) {
                self.absorb(spans, text, p.source, *line);
            }
        }
    }

    /// A document read: its spans gathered, or it refused whole.
    fn absorb(
        &mut self,
        read: Result<Spans, super::not_imported::NotImported>,
        text: &str,
        source: usize,
        line: u64,
    ) {
        match read {
            Ok((spans, foreign)) => {
                self.count("documents", 1);
                self.count("foreign_spans", foreign);
                for (run, span) in spans {
                    if let Some(ids) = span.ids.clone() {
                        if !self.seen.insert(ids) {
                            self.count("repeated_spans", 1);
                            continue;
                        }
                    }
                    if !known(&span.name) {
                        self.count("unknown_symfonic_spans", 1);
                    }
                    if !self.runs.contains_key(&run) {
                        self.order.push(run.clone());
                    }
                    self.runs.entry(run).or_default().push(span);
                }
            }
            Err(reason) => self.failed.push((
                source,
                Failed {
                    line,
                    reason: reason.0,
                    // A document can be a whole pretty-printed file: its
                    // first 4 KiB say what it is.
                    raw: text.as_bytes()[..text.len().min(4096)].to_vec(),
                },
            )),
        }
    }

    /// The runs gathered, as turns (each with the source and line its
    /// record starts on), in the order of their runs' start.
    /// The gathered runs as turns, made with `history`, and each again
    /// with every one of `others` (deployments that pass other history).
    pub fn turns(mut self, history: History, others: &[History]) -> Gathered {
        use rayon::prelude::*;
        // Each run is assembled, and each turn made, on every core of the
        // current pool; what they count is added after, and the turns
        // sorted, so the result is the same in any order.
        let mut keys: Vec<String> = self.order.iter().map(|id| TraceKeys::run(id)).collect();
        let runs: Vec<(String, Vec<SpanRec>)> = std::mem::take(&mut self.order)
            .into_iter()
            .map(|id| {
                let spans = self.runs.remove(&id).unwrap_or_default();
                (id, spans)
            })
            .collect();
        self.count("runs", runs.len() as u64);
        let assembled: Vec<(Vec<SpanRec>, Option<Run>, Counted)> = runs
            .into_par_iter()
            .map(|(id, spans)| assemble(id, spans))
            .collect();
        let mut roots: Vec<Run> = Vec::new();
        let mut skill: Vec<SpanRec> = Vec::new();
        for (calls, run, counted) in assembled {
            skill.extend(calls);
            roots.extend(run);
            self.add(counted);
        }
        let mut out: Vec<Placed> = Vec::new();
        // Skill-gate calls are turns of symfonic's own run id, numbered by
        // their start (Unix nanoseconds): the same number in any shard of
        // the trace, where an ordinal restarted at 0 in each and a merge
        // saw duplicates. One without a start has its place in the trace.
        skill.sort_by_key(|s| (s.start, s.source, s.line));
        for (n, s) in skill.iter().enumerate() {
            let number = s.start.unwrap_or(n as u64);
            let t = skill_turn(number, s);
            // A skill-gate call has no history to pass.
            let again = others.iter().map(|_| t.clone()).collect();
            out.push((s.start, s.source, s.line, t, again));
        }
        let sessions = in_sessions(&roots);
        let places: Vec<(&Session, usize)> = sessions
            .iter()
            .flat_map(|s| (0..s.runs.len()).map(move |n| (s, n)))
            .collect();
        let made: Vec<(Made, Vec<RawTurn>)> = places
            .into_par_iter()
            .map(|(s, n)| {
                let again: Vec<RawTurn> = others.iter().map(|&h| run_turn(s, n, h)).collect();
                (turn_of(s, n, history), again)
            })
            .collect();
        for ((key, (start, source, line, turn), counted), again) in made {
            keys.extend(key);
            out.push((start, source, line, turn, again));
            self.add(counted);
        }
        keys.sort();
        keys.dedup();
        out.sort_by(|a, b| (a.0, a.1, a.2, &a.3.run_id).cmp(&(b.0, b.1, b.2, &b.3.run_id)));
        (
            out.into_iter()
                .map(|(_, source, line, t, again)| (source, line, t, again))
                .collect(),
            self.failed,
            self.counts,
            keys,
        )
    }

    /// What one part of the work counted, added in.
    fn add(&mut self, counted: Counted) {
        for (what, n) in counted.0 {
            self.count(what, n);
        }
    }
}

/// A run's spans, sorted: its skill-gate calls, and the rest as a run
/// (None when it is not one: [`run_of`]).
fn assemble(id: String, mut spans: Vec<SpanRec>) -> (Vec<SpanRec>, Option<Run>, Counted) {
    spans.sort_by_key(|s| (s.start, s.end));
    let (calls, rest): (Vec<SpanRec>, Vec<SpanRec>) = spans
        .into_iter()
        .partition(|s| s.node() == Some("metacognition_skill_gate"));
    let mut counted = Counted::default();
    let run = run_of(id, rest, &mut counted);
    (calls, run, counted)
}

/// A turn with where its root starts (start, source, line), and the turn
/// again under each further history.
type Placed = (Option<u64>, usize, u64, RawTurn, Vec<RawTurn>);

/// The turn of the `n`th run of a session, with where its root starts,
/// the key of its session, and what it counted.
type Made = (Option<String>, (Option<u64>, usize, u64, RawTurn), Counted);

fn turn_of(session: &Session, n: usize, history: History) -> Made {
    let mut counted = Counted::default();
    let run = session.runs[n];
    let root = &run.spans[run.root];
    let key = run.session().map(|s| TraceKeys::session(run.tenant(), s));
    let turn = run_turn(session, n, history);
    let critic = critic_of(run);
    if critic.is_some_and(|c| {
        TOKEN_ATTRS
            .iter()
            .any(|(_, a)| matches!(c.count(a), Some(Err(()))))
    }) {
        counted.add("unreadable_critic_tokens", 1);
    }
    if critic
        .and_then(|c| c.str("gen_ai.completion.text"))
        .is_some_and(|t| !is_cut(t) && reflection::parse(t).is_some_and(|r| r.malformed))
    {
        counted.add("critic_answers_unparsed", 1);
    }
    if root.error {
        counted.add("runs_with_error", 1);
    }
    (key, (root.start, root.source, root.line, turn), counted)
}

/// What the assembly of one run counted, added to the gathering's counts
/// by [`Gathering::count`] (which keeps no zero).
#[derive(Default)]
struct Counted(Vec<(&'static str, u64)>);

impl Counted {
    fn add(&mut self, what: &'static str, n: u64) {
        self.0.push((what, n));
    }
}

/// A run of its spans (skill-gate calls taken out): None when it has no
/// root, is a streaming run, or holds only skill-gate calls; what it left
/// out counted in `counted`.
fn run_of(id: String, spans: Vec<SpanRec>, counted: &mut Counted) -> Option<Run> {
    if spans.is_empty() {
        return None;
    }
    let roots = spans.iter().filter(|s| s.name == "symfonic.run").count() as u64;
    counted.add("root_spans_left_out", roots.saturating_sub(1));
    let critics = spans.iter().filter(|s| is_critic(s)).count() as u64;
    counted.add("critic_spans_left_out", critics.saturating_sub(1));
    let Some(root) = spans.iter().position(|s| s.name == "symfonic.run") else {
        counted.add("runs_without_root", 1);
        return None;
    };
    let entry = spans[root].str("symfonic.entry_point").unwrap_or("run");
    if matches!(entry, "stream" | "stream_typed") {
        counted.add("stream_runs", 1);
        return None;
    }
    let calls = spans
        .iter()
        .filter(|s| s.name.starts_with("symfonic.tool."))
        .map(call)
        .collect();
    Some(Run {
        id,
        root,
        spans,
        calls,
    })
}

/// A critic call of production's gate.
fn is_critic(s: &SpanRec) -> bool {
    s.name == "symfonic.llm.call" && s.node() == Some("metacognition_critic")
}

/// The span names symfonic emits.
fn known(name: &str) -> bool {
    const EXACT: [&str; 7] = [
        "symfonic.run",
        "symfonic.llm.call",
        "symfonic.hydration",
        "symfonic.tool_routing",
        "symfonic.token_budget",
        "symfonic.consolidation",
        "symfonic.skill_gate",
    ];
    EXACT.contains(&name)
        || ["symfonic.node.", "symfonic.tool.", "symfonic.interrupt."]
            .iter()
            .any(|p| name.starts_with(p))
}

/// A run with a root span (index into its spans, sorted by start), and
/// its tool spans as calls, made once: with `history = "conversation"`
/// every later run of its session holds them too (shared, not copied).
struct Run {
    id: String,
    root: usize,
    spans: Vec<SpanRec>,
    calls: Vec<RawCall>,
}

impl Run {
    fn session(&self) -> Option<&str> {
        self.spans[self.root].str("symfonic.session.id")
    }

    fn tenant(&self) -> Option<&str> {
        self.spans[self.root].str("symfonic.tenant.id")
    }

    /// The conversation the run is a turn of, as the traffic format's
    /// `run_id` (the unit the bounds sample): its session, as
    /// `TENANT/SESSION` when the root names a tenant (a `%` or `/` in the
    /// tenant written `%25`, `%2F`, so two tenants' sessions never share
    /// an id), else the run alone, by its own id.
    fn conversation(&self) -> String {
        match (self.tenant(), self.session()) {
            (_, None) => self.id.clone(),
            (None, Some(s)) => s.to_string(),
            (Some(t), Some(s)) => {
                format!("{}/{s}", t.replace('%', "%25").replace('/', "%2F"))
            }
        }
    }
}

/// A session's runs in order (by the root's start), and its tool calls
/// in that order: a run's calls, and with history its session's earlier
/// ones, are a window of that one log (a copy of every earlier run for
/// each run made memory grow with the square of a session: 1.66 GB for
/// 20,000 runs; a list of every earlier call, as much for a session whose
/// runs each call a tool).
struct Session<'a> {
    runs: Vec<&'a Run>,
    log: Arc<CallLog>,
    /// For each run, how many calls of the session come before its own.
    calls_before: Vec<usize>,
}

impl<'a> Session<'a> {
    fn of(runs: Vec<&'a Run>) -> Session<'a> {
        let mut calls = Vec::new();
        let mut calls_before = Vec::with_capacity(runs.len());
        for r in &runs {
            calls_before.push(calls.len());
            calls.extend(r.calls.iter().map(|c| LoggedCall {
                name: c.name.clone(),
                args: c.args.clone(),
                // A span's result is there as the run ends.
                result: c.result.clone().map(|r| (0, r)),
                whole: c.whole,
            }));
        }
        Session {
            runs,
            log: Arc::new(CallLog::new(calls)),
            calls_before,
        }
    }

    /// The `n`th run's calls, after its session's earlier ones when the
    /// deployment passes history; `captured`: whether the run's texts
    /// were.
    fn calls(&self, n: usize, history: History, captured: bool) -> RawCalls {
        let to = self.calls_before[n] + self.runs[n].calls.len();
        RawCalls::Window {
            log: self.log.clone(),
            from: match history {
                History::None => self.calls_before[n],
                History::Conversation => 0,
            },
            to,
            answered: usize::MAX,
            captured,
        }
    }
}

/// The runs by session. A session is a tenant's: two tenants' sessions of
/// one id are two; a run without a session stands alone (first, in the
/// order of `runs`; then the sessions by tenant and id).
fn in_sessions(runs: &[Run]) -> Vec<Session<'_>> {
    let mut by_session: BTreeMap<(Option<&str>, &str), Vec<&Run>> = BTreeMap::new();
    let mut out = Vec::new();
    for r in runs {
        match r.session() {
            Some(s) => by_session.entry((r.tenant(), s)).or_default().push(r),
            None => out.push(Session::of(vec![r])),
        }
    }
    for (_, mut rs) in by_session {
        rs.sort_by(|a, b| (a.spans[a.root].start, &a.id).cmp(&(b.spans[b.root].start, &b.id)));
        out.push(Session::of(rs));
    }
    out
}

/// A text attribute: whole, cut by the exporter, or absent.
fn captured(s: Option<&str>) -> Captured {
    match s {
        None => Captured::Absent,
        Some(t) if is_cut(t) => Captured::Cut(t.into()),
        Some(t) => Captured::Whole(t.into()),
    }
}

/// A text attribute as symfonic's exporter writes one: past
/// [`MAX_ATTRIBUTE_BYTES`], cut (at a character boundary) and ended in the
/// marker, so it reads as cut ([`is_cut`]) and what rests on it is
/// unknown. No symfonic trace holds a longer one, and holding one whole
/// let a few kilobytes of compressed input take gigabytes.
fn as_exported(s: &str) -> String {
    if s.len() <= MAX_ATTRIBUTE_BYTES {
        return s.to_string();
    }
    let mut end = MAX_ATTRIBUTE_BYTES - TRUNCATION_MARKER.len();
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{TRUNCATION_MARKER}", &s[..end])
}

/// Whether the exporter cut `t` (it keeps at most 4,096 bytes, ending a cut
/// text in the marker; a text that merely ends so is taken as cut too).
fn is_cut(t: &str) -> bool {
    t.ends_with(TRUNCATION_MARKER)
        && t.len() + 4 > MAX_ATTRIBUTE_BYTES - TRUNCATION_MARKER.len()
        && t.len() <= MAX_ATTRIBUTE_BYTES
}

/// A run's turn.
fn run_turn(session: &Session, n: usize, history: History) -> RawTurn {
    let run = session.runs[n];
    let root = &run.spans[run.root];
    let query = root.str("symfonic.query.text");
    // Prompts are captured or not for the whole deployment: a root without
    // the query means no text attribute was recorded.
    let capture = query.is_some();
    let main = run.spans.iter().rev().find(|s| {
        s.name == "symfonic.llm.call"
            && matches!(s.node(), Some("react" | "react_synthesize_fallback"))
    });
    // Captured, a main-loop call without text returned content blocks (an
    // empty draft); a run without one (the middleware driven directly) has
    // no draft in the trace.
    let completion = match (capture, main) {
        (true, Some(s)) => captured(Some(s.str("gen_ai.completion.text").unwrap_or(""))),
        _ => Captured::Absent,
    };
    let tool_calls = session.calls(n, history, capture);
    let calls_known = match history {
        History::None => true,
        // The session's earlier runs are all in the trace when the run's
        // count of user messages (`symfonic.turn.index`) is its place.
        History::Conversation => run
            .spans
            .iter()
            .filter_map(|s| s.int("symfonic.turn.index"))
            .max()
            .is_some_and(|i| i == n as i64 + 1),
    };
    let critic = critic_of(run);
    let mut scope = serde_json::Map::new();
    for (key, attr) in [
        ("tenant", "symfonic.tenant.id"),
        ("session", "symfonic.session.id"),
    ] {
        if let Some(v) = root.str(attr) {
            scope.insert(key.into(), Value::String(v.into()));
        }
    }
    RawTurn {
        run_id: run.conversation().into(),
        turn: n as u64,
        ts: root
            .start
            .map(|t| crate::read::rfc3339::from_unix_nanos(t).into()),
        trace_id: root.ids.as_ref().map(|(t, _)| t.clone()),
        span_id: root.ids.as_ref().map(|(_, s)| s.clone()),
        message_index: None,
        turn_id: Some(run.id.clone()),
        scope: (!scope.is_empty()).then(|| Scope::new(Value::Object(scope).to_string())),
        user_message: captured(query),
        completion,
        tool_calls,
        calls_known,
        critic: critic.map(critic_json),
        critic_origin: if critic.is_some() {
            Origin::Recorded
        } else {
            Origin::Unknown
        },
        call_site: None,
    }
}

/// The run's critic call (its last, when there are more).
fn critic_of(run: &Run) -> Option<&SpanRec> {
    run.spans.iter().rev().find(|s| is_critic(s))
}

/// The critic's token counts: the traffic format's key and the span's.
const TOKEN_ATTRS: [(&str, &str); 2] = [
    ("reflection_tokens_in", "gen_ai.usage.input_tokens"),
    ("reflection_tokens_out", "gen_ai.usage.output_tokens"),
];

/// A skill-gate critic call as a turn of its own, of symfonic's run id
/// `skill-gate` (what it reviewed is in no span: the draft is unknown).
fn skill_turn(n: u64, s: &SpanRec) -> RawTurn {
    RawTurn {
        run_id: crate::read::turn::CallSite::SKILL_GATE_RUN_ID.into(),
        turn: n,
        ts: s
            .start
            .map(|t| crate::read::rfc3339::from_unix_nanos(t).into()),
        trace_id: s.ids.as_ref().map(|(t, _)| t.clone()),
        span_id: s.ids.as_ref().map(|(_, s)| s.clone()),
        message_index: None,
        turn_id: None,
        scope: None,
        user_message: Captured::Absent,
        completion: Captured::Absent,
        tool_calls: super::raw::RawCalls::default(),
        calls_known: false,
        critic: Some(critic_json(s)),
        critic_origin: Origin::Recorded,
        call_site: Some("skill_gate"),
    }
}

/// A tool span as a call: its arguments read back from Python's `repr`
/// (else the recorded string), its result, or on an error its message;
/// whole when neither is cut (and the deployment captures them: a turn
/// that holds it says).
fn call(s: &SpanRec) -> RawCall {
    let name: std::sync::Arc<str> = s
        .str("symfonic.tool.name")
        .unwrap_or(&s.name["symfonic.tool.".len()..])
        .into();
    let args = s.str("symfonic.tool.args");
    let result = match s.error {
        true => s.str("symfonic.error.message"),
        false => s.str("symfonic.tool.result"),
    };
    let whole = !args.is_some_and(is_cut) && !result.is_some_and(is_cut);
    RawCall {
        name,
        args: args.map(|a| {
            pyliteral::to_json(a)
                .unwrap_or_else(|| serde_json::to_string(a).expect("a string serialises"))
                .into()
        }),
        result: result.map(|r| ResultText::Text(r.into())),
        whole,
    }
}

/// The critic span as the traffic format's `critic`: it ran, with its
/// tokens, latency and model, and the verdict its text gives (none when the
/// text is cut or absent: a call that fired, without a label).
fn critic_json(s: &SpanRec) -> String {
    let mut c = serde_json::Map::new();
    c.insert("ran".into(), Value::Bool(true));
    // A text whose reading cannot be told is, like a cut one, unlabelled.
    let whole = match captured(s.str("gen_ai.completion.text")) {
        Captured::Whole(text) => reflection::parse(&text),
        _ => None,
    };
    if let Some(r) = whole {
        c.insert("verdict".into(), Value::String(r.verdict.into()));
        let key = match r.verdict {
            "revise" => Some("revised_draft"),
            "refuse" => Some("refusal_message"),
            _ => None,
        };
        if let (Some(key), Value::String(t)) = (key, r.text) {
            c.insert(key.into(), Value::String(t));
        }
    }
    // A span without both times, or ending before it starts, measured
    // nothing.
    if let (Some(start), Some(end)) = (s.start, s.end) {
        if end >= start {
            c.insert(
                "reflection_latency_ms".into(),
                Value::from((end - start) as f64 / 1e6),
            );
        }
    }
    // A count not written as a whole number is left unknown (and counted
    // by the gathering), never read as 0.
    for (key, attr) in TOKEN_ATTRS {
        if let Some(Ok(n)) = s.count(attr) {
            c.insert(key.into(), Value::from(n));
        }
    }
    if let Some(m) = s.str("gen_ai.request.model") {
        c.insert("model".into(), Value::String(m.into()));
    }
    Value::Object(c).to_string()
}

/// A document's symfonic spans with their run ids, and how many spans of
/// other instrumentation it holds.
type Spans = (Vec<(String, SpanRec)>, u64);

fn spans(text: &str, source: usize, line: u64) -> Result<Spans, super::not_imported::NotImported> {
    let doc: Document = serde_json::from_str(text)
        .map_err(|e| format!("not an OTLP/JSON document {{\"resourceSpans\": [...]}}: {e}"))?;
    let mut out = Vec::new();
    let mut foreign = 0;
    for (r, rs) in doc.resource_spans.into_iter().enumerate() {
        for (k, ss) in rs.scope_spans.into_iter().enumerate() {
            for (i, raw) in ss.spans.into_iter().enumerate() {
                // Another instrumentation's span (even under a run id) is
                // counted, never read: nothing in it (an `intValue` written
                // as a number, attributes of another shape, not even an
                // object) costs the document its turns. A span is parsed
                // once; only one that fails is looked at for its name.
                let symfonic = |n: &str| n.starts_with("symfonic.");
                let span = match serde_json::from_str::<Span>(raw.get()) {
                    Ok(span) if symfonic(&span.name) => span,
                    Ok(_) => {
                        foreign += 1;
                        continue;
                    }
                    Err(e) => {
                        let name = serde_json::from_str::<Named>(raw.get())
                            .ok()
                            .and_then(|n| n.name);
                        match name {
                            Some(Value::String(n)) if symfonic(&n) => {
                                return Err(format!(
                                    "resourceSpans[{r}].scopeSpans[{k}].spans[{i}] ({n}): not an OTLP span: {e}"
                                ).into())
                            }
                            _ => {
                                foreign += 1;
                                continue;
                            }
                        }
                    }
                };
                let at = format!(
                    "resourceSpans[{r}].scopeSpans[{k}].spans[{i}] ({})",
                    span.name
                );
                let rec = span_rec(span, source, line).map_err(|e| format!("{at}: {e}"))?;
                match rec.get("symfonic.run.id") {
                    Some(Attr::Str(run)) => out.push((run.clone(), rec)),
                    Some(_) => {
                        return Err(format!("{at}: symfonic.run.id must be a stringValue").into())
                    }
                    None => {
                        return Err(format!(
                            "{at}: no symfonic.run.id attribute (every symfonic span carries one)"
                        )
                        .into())
                    }
                }
            }
        }
    }
    Ok((out, foreign))
}

fn span_rec(
    s: Span,
    source: usize,
    line: u64,
) -> Result<SpanRec, super::not_imported::NotImported> {
    if let Some(k) = &s.kind {
        enum_value(
            k,
            "SPAN_KIND_",
            &[
                "UNSPECIFIED",
                "INTERNAL",
                "SERVER",
                "CLIENT",
                "PRODUCER",
                "CONSUMER",
            ],
        )
        .map_err(|v| format!("kind {v} is not a span kind (0-5 or SPAN_KIND_INTERNAL, ...)"))?;
    }
    let code = match s.status.and_then(|st| st.code) {
        None => 0,
        Some(c) => enum_value(&c, "STATUS_CODE_", &["UNSET", "OK", "ERROR"]).map_err(|v| {
            format!("status.code {v} is not a status code (0-2 or STATUS_CODE_UNSET, _OK, _ERROR)")
        })?,
    };
    let time =
        |v: Option<&Value>, what: &str| -> Result<Option<u64>, super::not_imported::NotImported> {
            match int64(v, what)? {
                // OTLP writes an unset time as 0 (or leaves it out).
                None | Some(0) => Ok(None),
                Some(t) => u64::try_from(t)
                    .map(Some)
                    .map_err(|_| format!("{what} {t} is before 1970").into()),
            }
        };
    let start = time(s.start_time_unix_nano.as_ref(), "startTimeUnixNano")?;
    let end = time(s.end_time_unix_nano.as_ref(), "endTimeUnixNano")?;
    let mut attrs = Vec::with_capacity(s.attributes.len());
    for kv in s.attributes {
        let v = any_value(kv.value.as_ref()).map_err(|e| format!("attribute {}: {e}", kv.key))?;
        attrs.push((kv.key, v));
    }
    // Hex ids, in either case (the same span may come back upper-cased),
    // lowered; an id in another encoding (base64, as some protobuf-to-JSON
    // writers give it) is case-sensitive, and kept as written.
    let id = |v: Option<Value>| match v {
        Some(Value::String(s)) if s.bytes().all(|b| b.is_ascii_hexdigit()) && !s.is_empty() => {
            Some(s.to_ascii_lowercase())
        }
        Some(Value::String(s)) if !s.is_empty() => Some(s),
        _ => None,
    };
    Ok(SpanRec {
        ids: id(s.trace_id).zip(id(s.span_id)),
        name: s.name,
        start,
        end,
        error: code == 2,
        attrs,
        source,
        line,
    })
}

/// An OTLP enum: its number, or its name with `prefix`; Err gives the value.
fn enum_value(
    v: &Value,
    prefix: &str,
    names: &[&str],
) -> Result<usize, super::not_imported::NotImported> {
    let found = match v {
        Value::Number(n) => n.as_u64().map(|n| n as usize).filter(|n| *n < names.len()),
        Value::String(s) => s
            .strip_prefix(prefix)
            .and_then(|rest| names.iter().position(|n| *n == rest)),
        _ => None,
    };
    found.ok_or_else(|| super::not_imported::NotImported::from(v.to_string()))
}

/// An int64 field, which OTLP/JSON writes as a decimal string and some
/// exporters (OpenTelemetry JS) as a JSON number; receivers take both.
fn int64(v: Option<&Value>, what: &str) -> Result<Option<i64>, super::not_imported::NotImported> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => s
            .parse::<i64>()
            .map(Some)
            .map_err(|_| format!("{what} {s:?} is not a 64-bit integer").into()),
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| {
                // `100.0`: a whole number all the same.
                n.as_f64()
                    .filter(|x| x.fract() == 0.0 && x.abs() < 9.0e15)
                    .map(|x| x as i64)
            })
            .map(Some)
            .ok_or_else(|| format!("{what} {n} is not a whole number within 64 bits").into()),
        Some(other) => Err(format!(
            "{what} must be a 64-bit integer, as a string or a number ({other} given)"
        )
        .into()),
    }
}

/// An `AnyValue`.
fn any_value(v: Option<&Value>) -> Result<Attr, super::not_imported::NotImported> {
    let Some(Value::Object(m)) = v else {
        return match v {
            None | Some(Value::Null) => Ok(Attr::Other),
            Some(other) => Err(format!("value must be an AnyValue object, got {other}").into()),
        };
    };
    if let Some(s) = m.get("stringValue") {
        return match s {
            Value::String(s) => Ok(Attr::Str(as_exported(s))),
            other => Err(format!("stringValue must be a string, got {other}").into()),
        };
    }
    if let Some(i) = m.get("intValue") {
        return int64(Some(i), "intValue").map(|i| i.map_or(Attr::Other, Attr::Int));
    }
    if let Some(Value::Number(d)) = m.get("doubleValue") {
        return Ok(d.as_f64().map_or(Attr::Other, Attr::Double));
    }
    let known = [
        "doubleValue",
        "boolValue",
        "arrayValue",
        "kvlistValue",
        "bytesValue",
    ];
    match m.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(format!("{k:?} is not an AnyValue field").into()),
        None => Ok(Attr::Other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// #47 item 3: a text attribute past the exporter's 4,096 bytes is held
    /// as the exporter writes one, cut and marked (it was held whole).
    #[test]
    fn a_long_attribute_is_held_as_the_exporter_cuts_it() {
        for long in ["x".repeat(1 << 20), "é".repeat(5000)] {
            let v = serde_json::json!({"stringValue": long});
            let Ok(Attr::Str(s)) = any_value(Some(&v)) else {
                panic!("a string")
            };
            assert!(s.len() <= MAX_ATTRIBUTE_BYTES && is_cut(&s), "{}", s.len());
            assert!(long.starts_with(s.trim_end_matches(TRUNCATION_MARKER)));
        }
        let short = serde_json::json!({"stringValue": "ok"});
        assert!(matches!(any_value(Some(&short)), Ok(Attr::Str(s)) if s == "ok"));
    }
}
