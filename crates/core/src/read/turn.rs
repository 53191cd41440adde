//! One recorded agent turn (`docs/traffic-format.md`), parsed and
//! validated from one JSON line.
//!
//! A line is read by the fast reader ([`crate::read::json::fast`]) and, when that
//! gives up (any invalid line, rare constructs), by `serde_json`, the
//! authority on validity and the source of error messages. Both hand each
//! key's value to one `Builder`, so validation is written once. Large
//! strings (the draft) are borrowed from the line; small nested objects
//! are read as borrowed trees ([`Node`]) and validated into typed fields.
//! Every rule of the spec's "What is invalid" list is checked here, and
//! every "worth a warning" case is flagged on the turn, so the reader can
//! report both without re-parsing.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Unexpected, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::read::activation::ActivationLog;
pub use crate::read::invalid::Invalid;
use crate::read::json::fast::{Bail, Reader};
use crate::read::json::{describe, Node};
use crate::read::provenance::{Origin, Recorded, Signal, Signals};

/// The most tokens one critic event may record (in or out): more is
/// invalid, not summed (no model reads a billion tokens in one call).
pub const MAX_TOKENS: u64 = 1_000_000_000;
/// The longest critic latency one event may record, in ms (one day).
pub const MAX_LATENCY_MS: f64 = 86_400_000.0;

/// The critic's verdict, when it ran in production.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Verdict {
    Approve,
    Revise,
    Refuse,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Approve => "approve",
            Verdict::Revise => "revise",
            Verdict::Refuse => "refuse",
        }
    }

    /// A verdict that changed the draft: skipping such a turn is a safety
    /// regression.
    pub fn is_intervention(self) -> bool {
        matches!(self, Verdict::Revise | Verdict::Refuse)
    }
}

/// The recorded `ReflectionEvent`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Critic<'a> {
    /// `critic.ran` as recorded; see [`Critic::ran`].
    pub ran_recorded: Option<bool>,
    pub verdict: Option<Verdict>,
    pub latency_ms: Option<f64>,
    pub tokens_in: Option<u64>,
    pub tokens_out: Option<u64>,
    pub revised_draft: Option<Cow<'a, str>>,
    pub refusal_message: Option<Cow<'a, str>>,
    pub model: Option<Cow<'a, str>>,
}

impl Critic<'_> {
    /// Whether a critic really ran (the spec's "Whether a critic ran"):
    /// `ran` decides when recorded; otherwise an event with both token
    /// counts recorded as 0 is symfonic's fail-open or gate-skipped
    /// `approve`, where no critic ran; anything else ran.
    pub fn ran(&self) -> bool {
        match self.ran_recorded {
            Some(ran) => ran,
            None => !(self.tokens_in == Some(0) && self.tokens_out == Some(0)),
        }
    }
}

/// What production's gate did on a turn, as its recording says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Production {
    /// A critic ran: production's gate fired.
    Fired,
    /// An event where no critic ran: production's gate skipped.
    Skipped,
    /// No event (`critic` null or absent).
    Unknown,
}

impl Production {
    /// `Some(fired)` when known.
    pub fn fired(self) -> Option<bool> {
        match self {
            Production::Fired => Some(true),
            Production::Skipped => Some(false),
            Production::Unknown => None,
        }
    }
}

/// Where symfonic called the critic (`call_site`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallSite {
    /// A reply to a user (the default).
    Turn,
    /// Procedural-skill approval (`engine._resolve_skill_status`).
    SkillGate,
}

impl CallSite {
    pub fn as_str(self) -> &'static str {
        match self {
            CallSite::Turn => "turn",
            CallSite::SkillGate => "skill_gate",
        }
    }

    /// The `run_id` symfonic gives skill-approval calls.
    pub const SKILL_GATE_RUN_ID: &'static str = "skill-gate";
}

/// What a tool call's `name` is, as far as the mutating-tool floor cares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolCall {
    /// The item is not a JSON object: counts as mutating.
    NotObject,
    /// An object with no `name` key; `openai_style` when it has a
    /// `function` key instead (an OpenAI-style call): counts as mutating.
    NoName { openai_style: bool },
    /// `name` is falsy in Python (`""`, `null`, `0`, `false`, `[]`, `{}`).
    Falsy,
    /// `name` is truthy but not a string: never matches a read-only tool.
    NonString,
    /// A string name, compared exactly with `read_only_tools`.
    Named(String),
}

impl ToolCall {
    /// A call whose `name` is the string `name` (an empty one is falsy).
    pub fn of_name(name: &str) -> ToolCall {
        match name.is_empty() {
            true => ToolCall::Falsy,
            false => ToolCall::Named(name.to_string()),
        }
    }
}

/// A turn's tool calls: its own, or a window of a list the turns of one
/// conversation share. A transcript imported with `history =
/// "conversation"` gives each turn every earlier call: a list each made
/// memory grow with the square of the conversation.
#[derive(Clone)]
pub enum Calls {
    Own(Vec<ToolCall>),
    Shared(std::sync::Arc<[ToolCall]>, std::ops::Range<usize>),
}

impl Default for Calls {
    fn default() -> Calls {
        Calls::Own(Vec::new())
    }
}

impl std::ops::Deref for Calls {
    type Target = [ToolCall];

    fn deref(&self) -> &[ToolCall] {
        match self {
            Calls::Own(v) => v,
            Calls::Shared(all, window) => &all[window.clone()],
        }
    }
}

/// As the list it holds, however held.
impl fmt::Debug for Calls {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self[..].fmt(f)
    }
}

impl PartialEq for Calls {
    fn eq(&self, other: &Calls) -> bool {
        self[..] == other[..]
    }
}

/// A text of a turn that the turns of one conversation may share: borrowed
/// from the turn's line, owned, or shared (`Arc`). An imported transcript
/// gives its run id and scope to every one of its turns; a copy each made
/// memory grow with their product (a 100 KB scope over 20,000 turns took
/// 6 GB).
#[derive(Clone)]
pub enum Text<'a> {
    Borrowed(&'a str),
    Owned(String),
    Shared(std::sync::Arc<str>),
}

impl Default for Text<'_> {
    fn default() -> Self {
        Text::Borrowed("")
    }
}

impl std::ops::Deref for Text<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            Text::Borrowed(s) => s,
            Text::Owned(s) => s,
            Text::Shared(s) => s,
        }
    }
}

impl<'a> From<Cow<'a, str>> for Text<'a> {
    fn from(c: Cow<'a, str>) -> Text<'a> {
        match c {
            Cow::Borrowed(s) => Text::Borrowed(s),
            Cow::Owned(s) => Text::Owned(s),
        }
    }
}

impl Text<'_> {
    /// The text past the line it was read from (a shared one stays shared).
    pub fn into_owned(self) -> Text<'static> {
        match self {
            Text::Borrowed(s) => Text::Owned(s.to_string()),
            Text::Owned(s) => Text::Owned(s),
            Text::Shared(s) => Text::Shared(s),
        }
    }
}

impl fmt::Debug for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl fmt::Display for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl PartialEq for Text<'_> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl PartialEq<str> for Text<'_> {
    fn eq(&self, other: &str) -> bool {
        &**self == other
    }
}

impl PartialEq<&str> for Text<'_> {
    fn eq(&self, other: &&str) -> bool {
        &**self == *other
    }
}

impl serde::Serialize for Text<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self)
    }
}

/// `sensitive_hit` as recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum SensitiveField<'a> {
    /// Not in the record: detect from the activation log.
    #[default]
    Absent,
    /// `null`: production detected none.
    None,
    /// A tag (possibly `""`, which is still a hit).
    Hit(Cow<'a, str>),
}

/// The intent classifier's label.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Intent<'a> {
    /// No verdict, or a verdict without a label.
    #[default]
    None,
    Label(Cow<'a, str>),
}

/// One turn.
#[derive(Clone, Debug, Default)]
pub struct Turn<'a> {
    pub run_id: Text<'a>,
    pub turn: Option<u64>,
    pub ts: Option<Text<'a>>,
    /// The raw JSON text of `scope`, exactly as recorded.
    pub scope: Option<Text<'a>>,
    pub language: Option<Cow<'a, str>>,
    /// Where the turn is in its source, for a reader to open it there: the
    /// trace and span of a traced turn, the message of a transcript's
    /// conversation. They change no decision.
    pub trace_id: Option<Cow<'a, str>>,
    pub span_id: Option<Cow<'a, str>>,
    /// The recorder's own id for this turn (symfonic's run id: one
    /// `run()` a user turn), where `run_id` names the conversation.
    pub turn_id: Option<Cow<'a, str>>,
    pub message_index: Option<u64>,
    /// Whether one of those ids held a value they cannot (left out: they
    /// change no decision, and recorders wrote them before the format
    /// read them).
    pub source_id_unreadable: bool,
    /// Whether a recorded label (the language) was longer than
    /// [`MAX_LABEL_BYTES`] or held a control character (left out).
    pub label_unreadable: bool,
    pub draft: Cow<'a, str>,
    pub tool_calls: Calls,
    pub fabrication_findings: usize,
    /// `kind` of each finding that is an object with a string `kind`.
    pub fabrication_kinds: Vec<String>,
    pub intent: Intent<'a>,
    pub confidence: Option<f64>,
    pub activation_log: Option<ActivationLog>,
    pub sensitive_hit: SensitiveField<'a>,
    pub critic: Option<Critic<'a>>,
    /// `call_site` as recorded; see [`Turn::call_site`].
    pub call_site_recorded: Option<CallSite>,
    /// Top-level keys the format does not define (ignored, counted).
    pub unknown_fields: u32,
    /// Of them, those that look like a key it does define ([`meant_field`]),
    /// with that key: a signal the recorder meant to give and the replay
    /// does not see. (Boxed: almost every turn has none.)
    pub misnamed: Option<Box<Vec<(String, &'static str)>>>,
    /// `provenance` as recorded (by `critic-gate import`).
    pub provenance: Recorded,
    /// A verdict from outside production's critic on a plan's sample
    /// (`sampled_label`, which `critic-gate labels` writes). (Boxed: almost every
    /// turn has none.)
    pub label: Option<Box<SampledLabel>>,
}

/// The version of the `sampled_label` object this build reads and writes.
pub const LABEL_FORMAT: u64 = 1;

/// A shadow critic's verdict on a turn a plan drew (the traffic's `sampled_label`
/// object, `source` "shadow"): the verdict or why the call failed, the
/// turn's inclusion probability and the plan that drew it. A recorded
/// production verdict stays in `critic` (its source is production).
#[derive(Clone, Debug, PartialEq)]
pub struct SampledLabel {
    /// None when the shadow call failed (`error`).
    pub verdict: Option<Verdict>,
    pub error: Option<String>,
    pub probability: f64,
    pub plan_id: String,
}

/// The top-level keys of a turn, as the format defines them.
pub const FIELDS: [&str; 20] = [
    "run_id",
    "draft",
    "turn",
    "ts",
    "language",
    "trace_id",
    "span_id",
    "message_index",
    "turn_id",
    "confidence",
    "sensitive_hit",
    "tool_calls_this_turn",
    "fabrication_findings",
    "intent_verdict",
    "activation_log",
    "critic",
    "call_site",
    "provenance",
    "scope",
    "sampled_label",
];

/// Names other recordings (OpenAI-style stacks, symfonic's own objects)
/// use for the keys whose absence changes a decision or a label. (`draft`
/// is required, so a misnamed draft is already an invalid line; `ts` and
/// `language` change no decision.)
const ALIASES: [(&str, &str); 7] = [
    ("intent", "intent_verdict"),
    ("tool_calls", "tool_calls_this_turn"),
    ("sensitive", "sensitive_hit"),
    ("findings", "fabrication_findings"),
    ("fabrication", "fabrication_findings"),
    ("reflection", "critic"),
    ("reflection_event", "critic"),
];

/// The keys whose absence changes a decision or a label (`run_id` and
/// `draft` are required: a line without them is invalid).
const DECIDING: [&str; 8] = [
    "confidence",
    "sensitive_hit",
    "tool_calls_this_turn",
    "fabrication_findings",
    "intent_verdict",
    "activation_log",
    "critic",
    "call_site",
];

/// The key of the format that an unknown key `key` was probably meant as:
/// a name other recordings use for it; the same words in another case or
/// separator (`intentVerdict`, `Tool-Calls-This-Turn`); any single edit of
/// a key whose absence changes a decision or a label (`critc`,
/// `sensitive_hits`, `fabrication_finding`); or a single edit inside a
/// longer key of six or more characters (`lnguage`, not `languag`). A turn
/// warns of it only when the line lacks that key ([`Turn::parse`]): beside
/// `critic`, `critics` is another key.
pub fn meant_field(key: &str) -> Option<&'static str> {
    MEANT.with(|m| {
        let mut m = m.borrow_mut();
        if let Some(&answer) = m.get(key) {
            return answer;
        }
        let answer = meant_field_uncached(key);
        // Bounded: a recorder's unknown keys are few (trace_id,
        // app_version), a hostile file's may be many.
        if m.len() < MEANT_CACHED {
            m.insert(key.into(), answer);
        }
        answer
    })
}

/// How many distinct unknown keys each thread remembers the answer for.
const MEANT_CACHED: usize = 1024;

thread_local! {
    /// [`meant_field`]'s answers by key: production recorders put the same
    /// few keys the format does not know on every line, and comparing each
    /// with the format's keys on every line was 7.5% of a replay's time
    /// (and most of its allocations) on such traffic.
    static MEANT: std::cell::RefCell<std::collections::HashMap<Box<str>, Option<&'static str>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

fn meant_field_uncached(key: &str) -> Option<&'static str> {
    let alias = |k: &str| ALIASES.iter().find(|(a, _)| *a == k).map(|(_, f)| *f);
    if let Some(k) = alias(key) {
        return Some(k);
    }
    // `CRITIC` and `Intent_Verdict` are the key in another case;
    // `intentVerdict` in camelCase.
    let lower = key.to_lowercase();
    let snake = snake_case(key);
    for k in [&lower, &snake] {
        if let Some(f) = FIELDS
            .iter()
            .find(|f| *f == k)
            .copied()
            .or_else(|| alias(k))
        {
            return Some(f);
        }
    }
    // One edit, or two neighbours swapped (`cirtic`, `sensitive_hti`).
    if let Some(k) = DECIDING
        .iter()
        .find(|d| crate::vocab::one_edit_or_swap(&snake, d))
    {
        return Some(k);
    }
    if key.chars().count() < 6 {
        return None;
    }
    let close = crate::vocab::within(key, FIELDS, 1)?;
    (!key.starts_with(close) && !close.starts_with(key)).then_some(close)
}

/// `intentVerdict`, `IntentVerdict`, `intent-verdict` as `intent_verdict`.
fn snake_case(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for (i, c) in key.chars().enumerate() {
        match c {
            '-' | ' ' | '.' => out.push('_'),
            c if c.is_uppercase() => {
                if i > 0 && !out.ends_with('_') {
                    out.push('_');
                }
                out.extend(c.to_lowercase());
            }
            c => out.push(c),
        }
    }
    out
}

impl<'a> Turn<'a> {
    /// Count a key the format does not define (and whether it looks like
    /// one it does).
    fn unknown(&mut self, key: &str) {
        self.unknown_fields += 1;
        if let Some(k) = meant_field(key) {
            self.misnamed
                .get_or_insert_with(Default::default)
                .push((key.to_string(), k));
        }
    }

    /// The turn holding its own texts (a converted turn, kept past the
    /// text it was read from).
    pub fn into_owned(self) -> Turn<'static> {
        fn own(c: Cow<'_, str>) -> Cow<'static, str> {
            Cow::Owned(c.into_owned())
        }
        Turn {
            run_id: self.run_id.into_owned(),
            turn: self.turn,
            ts: self.ts.map(Text::into_owned),
            scope: self.scope.map(Text::into_owned),
            language: self.language.map(own),
            trace_id: self.trace_id.map(own),
            span_id: self.span_id.map(own),
            turn_id: self.turn_id.map(own),
            source_id_unreadable: self.source_id_unreadable,
            label_unreadable: self.label_unreadable,
            message_index: self.message_index,
            draft: own(self.draft),
            tool_calls: self.tool_calls,
            fabrication_findings: self.fabrication_findings,
            fabrication_kinds: self.fabrication_kinds,
            intent: match self.intent {
                Intent::None => Intent::None,
                Intent::Label(l) => Intent::Label(own(l)),
            },
            confidence: self.confidence,
            activation_log: self.activation_log,
            sensitive_hit: match self.sensitive_hit {
                SensitiveField::Absent => SensitiveField::Absent,
                SensitiveField::None => SensitiveField::None,
                SensitiveField::Hit(h) => SensitiveField::Hit(own(h)),
            },
            critic: self.critic.map(|c| Critic {
                ran_recorded: c.ran_recorded,
                verdict: c.verdict,
                latency_ms: c.latency_ms,
                tokens_in: c.tokens_in,
                tokens_out: c.tokens_out,
                revised_draft: c.revised_draft.map(own),
                refusal_message: c.refusal_message.map(own),
                model: c.model.map(own),
            }),
            call_site_recorded: self.call_site_recorded,
            unknown_fields: self.unknown_fields,
            misnamed: self.misnamed,
            provenance: self.provenance,
            label: self.label,
        }
    }

    /// A turn from the values its line's keys would hold, validated by the
    /// code that validates a parsed line (for a turn converted from another
    /// format, whose line is never written), and its run id, time and scope,
    /// shared with the other turns of its conversation: the scope is raw
    /// JSON text the caller has held to the rules of every other value
    /// ([`Turn::scope_problem`]). Err says why, without the position a
    /// parsed line's error gives.
    pub fn from_fields(
        fields: Vec<(&'static str, Node<'static>)>,
        run_id: std::sync::Arc<str>,
        ts: Option<std::sync::Arc<str>>,
        scope: Option<std::sync::Arc<str>>,
    ) -> Result<Turn<'static>, Invalid> {
        let mut b = Builder::default();
        b.holds("run_id");
        b.run_id = Some(Text::Shared(run_id));
        if let Some(ts) = ts {
            check_ts(&ts)?;
            b.holds("ts");
            b.t.ts = Some(Text::Shared(ts));
        }
        if let Some(raw) = scope {
            b.holds("scope");
            b.t.scope = Some(Text::Shared(raw));
        }
        for (key, v) in fields {
            b.field(key, v)?;
        }
        b.finish()
    }

    /// Why the traffic format refuses `scope` (raw JSON text) as a value,
    /// if it does: a lone surrogate, `1e400`, nesting past 128.
    pub fn scope_problem(scope: &str) -> Option<String> {
        serde_json::from_str::<Node>(scope)
            .err()
            .map(|e| e.to_string())
    }

    /// Parse and validate one line (without its newline).
    pub fn parse(line: &'a str) -> Result<Turn<'a>, TurnError> {
        match parse_fast(line) {
            Ok(t) => Ok(t),
            Err(Bail) => Turn::parse_with_serde_json(line),
        }
    }

    /// [`Turn::parse`] by `serde_json` alone: the authority on what is
    /// valid, and the source of every error message.
    pub fn parse_with_serde_json(line: &'a str) -> Result<Turn<'a>, TurnError> {
        let mut de = serde_json::Deserializer::from_str(line);
        let turn =
            de::DeserializeSeed::deserialize(TurnSeed, &mut de).map_err(TurnError::from_json)?;
        de.end().map_err(TurnError::from_json)?;
        Ok(turn)
    }

    pub fn intent_label(&self) -> Option<&str> {
        match &self.intent {
            Intent::None => None,
            Intent::Label(l) => Some(l),
        }
    }

    /// The recorded critic event where a critic really ran: the one
    /// source of labels, costs and latency samples (an event where no
    /// critic ran is none of these).
    pub fn review(&self) -> Option<&Critic<'a>> {
        self.critic.as_ref().filter(|c| c.ran())
    }

    /// The label: the verdict of a critic that really ran.
    pub fn verdict(&self) -> Option<Verdict> {
        self.review().and_then(|c| c.verdict)
    }

    /// A recorded event where no critic ran (not a label).
    pub fn critic_not_run(&self) -> bool {
        self.critic.as_ref().is_some_and(|c| !c.ran())
    }

    /// What production's gate did, as far as the recording says.
    pub fn production(&self) -> Production {
        match &self.critic {
            None => Production::Unknown,
            Some(c) if c.ran() => Production::Fired,
            Some(_) => Production::Skipped,
        }
    }

    /// Where each signal came from: as `provenance` says, else by which
    /// fields the line holds.
    pub fn signals(&self) -> Signals {
        let seen = |present: bool| match present {
            true => Origin::Recorded,
            false => Origin::Unknown,
        };
        let from_log = |present: bool| match (present, &self.activation_log) {
            (true, _) => Origin::Recorded,
            (false, Some(_)) => Origin::Derived,
            (false, None) => Origin::Unknown,
        };
        // An absent list or verdict is the format's documented "none", as a
        // deployment recording its gate inputs writes it.
        let inferred = [
            Origin::Recorded,
            Origin::Recorded,
            Origin::Recorded,
            Origin::Recorded,
            from_log(self.confidence.is_some()),
            from_log(self.sensitive_hit != SensitiveField::Absent),
            seen(self.critic.is_some()),
        ];
        let mut out = Signals(inferred);
        for s in Signal::ALL {
            if let Some(o) = self.provenance.0[s as usize] {
                out.0[s as usize] = o;
            }
        }
        out
    }

    /// The call site: as recorded, else `skill_gate` for symfonic's
    /// skill-approval run id, else `turn`.
    pub fn call_site(&self) -> CallSite {
        match self.call_site_recorded {
            Some(c) => c,
            None if self.run_id == CallSite::SKILL_GATE_RUN_ID => CallSite::SkillGate,
            None => CallSite::Turn,
        }
    }
}

impl From<Invalid> for TurnError {
    fn from(e: Invalid) -> TurnError {
        TurnError {
            reason: e.0,
            column: None,
        }
    }
}

/// Why a line is invalid, with the column for JSON syntax errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnError {
    pub reason: String,
    pub column: Option<usize>,
}

impl TurnError {
    fn from_json(e: serde_json::Error) -> TurnError {
        let msg = e.to_string();
        // serde_json appends " at line L column C"; we report our own position.
        let reason = match msg.rfind(" at line ") {
            Some(k) => msg[..k].to_string(),
            None => msg,
        };
        // serde_json's words for a surrogate escape without its pair.
        let reason = match reason.as_str() {
            "unexpected end of hex escape" | "lone leading surrogate in hex escape" => {
                "a lone surrogate, or a cut \\u escape: a \\uD800-\\uDBFF escape must be followed by its \\uDC00-\\uDFFF pair (a string must be Unicode text), and every \\u escape has four hex digits".to_string()
            }
            _ => reason,
        };
        let column = match e.classify() {
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                Some(e.column())
            }
            _ => None,
        };
        TurnError { reason, column }
    }
}

impl fmt::Display for TurnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.column {
            Some(c) => write!(f, "invalid JSON at column {c}: {}", self.reason),
            None => f.write_str(&self.reason),
        }
    }
}

/// Keys of an object searched linearly for repeats before a hash index is
/// built.
const LINEAR_KEYS: usize = 16;

/// The entries of a JSON object (keys borrowed where they have no escapes),
/// in order, a repeated key keeping its last value as `serde_json` does;
/// None when `raw` is not an object.
pub fn object_entries(raw: &str) -> Option<Vec<(Cow<'_, str>, &RawValue)>> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<(Cow<'de, str>, &'de RawValue)>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
            let mut out: Vec<(Cow<'de, str>, &'de RawValue)> = Vec::new();
            // Past a few keys, repeats are found by hash: a scope of 100,000
            // keys searched linearly took minutes.
            let mut index: std::collections::HashMap<Cow<'de, str>, usize> = Default::default();
            while let Some(k) = m.next_key::<Node<'de>>()? {
                let Node::Str(k) = k else {
                    unreachable!("JSON keys are strings")
                };
                let v: &'de RawValue = m.next_value()?;
                let at = if out.len() <= LINEAR_KEYS {
                    out.iter().position(|(e, _)| *e == k)
                } else {
                    if index.is_empty() {
                        index.extend(out.iter().enumerate().map(|(i, (e, _))| (e.clone(), i)));
                    }
                    index.get(&k).copied()
                };
                match at {
                    Some(i) => out[i].1 = v,
                    None => {
                        if !index.is_empty() {
                            index.insert(k.clone(), out.len());
                        }
                        out.push((k, v));
                    }
                }
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_str(raw);
    de.deserialize_map(V).ok()
}

struct TurnSeed;

impl<'de> de::DeserializeSeed<'de> for TurnSeed {
    type Value = Turn<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Turn<'de>, D::Error> {
        d.deserialize_any(TurnVisitor)
    }
}

struct TurnVisitor;

fn string_field<'de>(key: &str, v: Node<'de>) -> Result<Cow<'de, str>, Invalid> {
    match v {
        Node::Str(s) => Ok(s),
        other => Err(format!("{key} must be a string, got {}", other.describe()).into()),
    }
}

fn parse_critic(v: Node<'_>) -> Result<Option<Critic<'_>>, Invalid> {
    match v {
        Node::Null => return Ok(None),
        Node::Map(_) => {}
        other => {
            return Err(
                format!("critic must be an object or null, got {}", other.describe()).into(),
            )
        }
    };
    let ran_recorded = match v.get("ran") {
        None | Some(Node::Null) => None,
        Some(Node::Bool(b)) => Some(*b),
        Some(other) => {
            return Err(format!(
                "critic.ran must be true, false or null, got {}",
                other.describe()
            )
            .into())
        }
    };
    let mut c = Critic {
        ran_recorded,
        ..Default::default()
    };
    let opt_string = |k: &str| -> Result<Option<Cow<'_, str>>, Invalid> {
        match v.get(k) {
            None | Some(Node::Null) => Ok(None),
            Some(Node::Str(s)) => Ok(Some(s.clone())),
            Some(other) => {
                Err(format!("critic.{k} must be a string, got {}", other.describe()).into())
            }
        }
    };
    c.verdict = critic_verdict(v.get("verdict"))?;
    if let Some(x) = v.get("reflection_latency_ms") {
        c.latency_ms = critic_latency(x)?;
    }
    if let Some(x) = v.get("reflection_tokens_in") {
        c.tokens_in = critic_tokens("reflection_tokens_in", x)?;
    }
    if let Some(x) = v.get("reflection_tokens_out") {
        c.tokens_out = critic_tokens("reflection_tokens_out", x)?;
    }
    c.revised_draft = opt_string("revised_draft")?;
    c.refusal_message = opt_string("refusal_message")?;
    c.model = opt_string("model")?;
    Ok(Some(c))
}

/// `sampled_label`: null, or a shadow verdict (`{"format": 1, "source": "shadow",
/// "plan_id", "probability", "verdict"}`, or `"error"` for a failed call).
fn parse_label(v: Node<'_>) -> Result<Option<SampledLabel>, Invalid> {
    match v {
        Node::Null => return Ok(None),
        Node::Map(_) => {}
        other => {
            return Err(format!(
                "sampled_label must be an object or null, got {}",
                other.describe()
            )
            .into())
        }
    }
    match v.get("format") {
        Some(Node::Num(n, _)) if *n == LABEL_FORMAT as f64 => {}
        other => {
            return Err(format!(
                "sampled_label.format must be {LABEL_FORMAT} (this build's label format), got {}",
                other.map_or("nothing".into(), |o| o.describe())
            )
            .into())
        }
    }
    match v.get("source") {
        Some(Node::Str(s)) if s == "shadow" => {}
        other => {
            return Err(format!(
                "sampled_label.source must be \"shadow\" (production's own verdicts are the critic event), got {}",
                other.map_or("nothing".into(), |o| o.describe())
            )
            .into())
        }
    }
    let plan_id = match v.get("plan_id") {
        Some(Node::Str(s)) if !s.is_empty() && s.len() <= 64 => s.to_string(),
        other => {
            return Err(format!(
            "sampled_label.plan_id must be the plan's id (a string of at most 64 bytes), got {}",
            other.map_or("nothing".into(), |o| o.describe())
        )
            .into())
        }
    };
    let probability = match v.get("probability") {
        Some(Node::Num(p, _)) if *p > 0.0 && *p <= 1.0 => *p,
        other => {
            return Err(format!(
            "sampled_label.probability must be the turn's inclusion probability, in (0, 1], got {}",
            other.map_or("nothing".into(), |o| o.describe())
        )
            .into())
        }
    };
    let verdict = critic_verdict(v.get("verdict"))
        .map_err(|e| e.0.replacen("critic.", "sampled_label.", 1))?;
    let error = match v.get("error") {
        None | Some(Node::Null) => None,
        Some(Node::Str(s)) => Some(s.chars().take(200).collect::<String>()),
        Some(other) => {
            return Err(format!(
                "sampled_label.error must be a string, got {}",
                other.describe()
            )
            .into())
        }
    };
    if verdict.is_some() == error.is_some() {
        return Err(
            "sampled_label must hold either a verdict or an error (a failed call), not both or neither"
                .into(),
        );
    }
    Ok(Some(SampledLabel {
        verdict,
        error,
        probability,
        plan_id,
    }))
}

fn parse_turn_number(v: Node) -> Result<Option<u64>, Invalid> {
    parse_whole("turn", v)
}

/// `ts` held to RFC 3339.
fn check_ts(ts: &str) -> Result<(), Invalid> {
    match crate::read::rfc3339::problem(ts) {
        None => Ok(()),
        Some(why) => Err(format!(
            "ts must be an RFC 3339 timestamp such as 2026-11-30T12:00:00Z, got {}: {why}",
            crate::read::json::describe_unexpected(Unexpected::Str(ts))
        )
        .into()),
    }
}

/// A whole number >= 0 (`turn`, `message_index`), or null.
fn parse_whole(key: &str, v: Node) -> Result<Option<u64>, Invalid> {
    match v {
        Node::Null => Ok(None),
        Node::Num(_, Unexpected::Unsigned(n)) => Ok(Some(n)),
        // JSON numbers have no integer type: a whole number written as a
        // float (`-0`, which readers give as -0.0 like `-0.0`; `0.0`, `1e2`)
        // is that number, up to 2^53, where every whole f64 is exact.
        Node::Num(x, Unexpected::Float(_))
            if x.fract() == 0.0 && (0.0..=9_007_199_254_740_992.0).contains(&x) =>
        {
            Ok(Some(x as u64))
        }
        n @ Node::Num(x, Unexpected::Float(_)) if x.fract() == 0.0 && x > 0.0 => Err(format!(
            "{key} {} is past 2^53 (9007199254740992), where a number written with an exponent or a fraction part is no longer exact: write the {key} as a plain integer (at most 18446744073709551615)",
            n.describe()
        )
        .into()),
        other => Err(format!("{key} must be an integer >= 0, got {}", other.describe()).into()),
    }
}

impl<'a> Turn<'a> {
    /// A trace, span or turn id: a string (OpenTelemetry's hex), a whole
    /// number as `turn` reads one (as some tracers write them, kept in
    /// decimal), or null; any other value is left out and noted
    /// ([`Turn::source_id_unreadable`]), never a reason to refuse the line.
    /// A recorded label (a language) as the tallies key it: at most
    /// [`MAX_LABEL_BYTES`] bytes and no control character, else left out
    /// and noted ([`Turn::label_unreadable`]): a tally keyed by traffic
    /// text never holds more than that per key.
    fn label(&mut self, l: Cow<'a, str>) -> Option<Cow<'a, str>> {
        let fits = l.len() <= MAX_LABEL_BYTES && !l.chars().any(char::is_control);
        if !fits {
            self.label_unreadable = true;
        }
        fits.then_some(l)
    }

    fn source_id(&mut self, v: Node<'a>) -> Option<Cow<'a, str>> {
        match v {
            Node::Null => None,
            Node::Str(s) => Some(s),
            v => match parse_whole("id", v) {
                Ok(n) => n.map(|n| Cow::Owned(n.to_string())),
                Err(_) => {
                    self.source_id_unreadable = true;
                    None
                }
            },
        }
    }
}

fn optional_string<'de>(key: &str, v: Node<'de>) -> Result<Option<Cow<'de, str>>, Invalid> {
    match v {
        Node::Null => Ok(None),
        v => Ok(Some(string_field(key, v)?)),
    }
}

fn parse_confidence(v: Node) -> Result<Option<f64>, Invalid> {
    match v {
        Node::Null => Ok(None),
        Node::Num(x, _) if (0.0..=1.0).contains(&x) => Ok(Some(x)),
        _ => Err(format!(
            "confidence must be a number in [0, 1], got {}",
            v.describe()
        )
        .into()),
    }
}

fn parse_sensitive_hit(v: Node<'_>) -> Result<SensitiveField<'_>, Invalid> {
    match v {
        Node::Null => Ok(SensitiveField::None),
        Node::Str(s) => Ok(SensitiveField::Hit(s)),
        other => Err(format!(
            "sensitive_hit must be a string or null, got {}",
            other.describe()
        )
        .into()),
    }
}

/// How many findings, and the `kind` of each that has one.
/// The longest recorded label (a language) a tally keys.
pub const MAX_LABEL_BYTES: usize = 64;

/// Every kind of finding symfonic-core 9.12.0's fabrication check makes
/// (and so its port, `derive::fabrication`): a recorded finding of another
/// kind is tallied as [`OTHER_KIND`], so a tally of kinds never grows with
/// what traffic writes.
pub const FINDING_KINDS: [&str; 6] = [
    "intent_action_no_tool",
    "kv",
    "short_hex_near_key",
    "short_hex_near_verb",
    "uuid",
    "verb_claim",
];

/// A recorded finding's kind as tallied: one of [`FINDING_KINDS`], else
/// `(other)`.
pub const OTHER_KIND: &str = "(other)";

fn parse_fabrication(v: Node) -> Result<Option<(usize, Vec<String>)>, Invalid> {
    match v {
        Node::Null => Ok(None),
        Node::Seq(a) => {
            let kinds = a
                .iter()
                .filter_map(|f| match f.get("kind") {
                    Some(Node::Str(k)) => Some(
                        FINDING_KINDS
                            .iter()
                            .find(|known| **known == k.as_ref())
                            .unwrap_or(&OTHER_KIND)
                            .to_string(),
                    ),
                    _ => None,
                })
                .collect();
            Ok(Some((a.len(), kinds)))
        }
        other => Err(format!(
            "fabrication_findings must be an array or null, got {}",
            other.describe()
        )
        .into()),
    }
}

fn parse_intent(v: Node<'_>) -> Result<Intent<'_>, Invalid> {
    match &v {
        Node::Null => Ok(Intent::None),
        Node::Map(_) => match v.get("label") {
            None | Some(Node::Null) => Ok(Intent::None),
            Some(Node::Str(s)) => Ok(Intent::Label(s.clone())),
            Some(other) => Err(format!(
                "intent_verdict.label must be a string or null, got {}",
                other.describe()
            )
            .into()),
        },
        other => Err(format!(
            "intent_verdict must be an object or null, got {}",
            other.describe()
        )
        .into()),
    }
}

fn critic_verdict(v: Option<&Node>) -> Result<Option<Verdict>, Invalid> {
    match v {
        None | Some(Node::Null) => Ok(None),
        Some(Node::Str(s)) if s == "approve" => Ok(Some(Verdict::Approve)),
        Some(Node::Str(s)) if s == "revise" => Ok(Some(Verdict::Revise)),
        Some(Node::Str(s)) if s == "refuse" => Ok(Some(Verdict::Refuse)),
        Some(other) => Err(format!(
            "critic.verdict must be \"approve\", \"revise\" or \"refuse\", got {}",
            other.describe()
        )
        .into()),
    }
}

fn critic_latency(x: &Node) -> Result<Option<f64>, Invalid> {
    match x {
        Node::Null => Ok(None),
        Node::Num(n, _) if (0.0..=MAX_LATENCY_MS).contains(n) => Ok(Some(*n)),
        other => Err(format!(
            "critic.reflection_latency_ms must be a number of ms from 0 to {MAX_LATENCY_MS} (one day), got {}",
            other.describe()
        ).into()),
    }
}

fn critic_tokens(k: &str, x: &Node) -> Result<Option<u64>, Invalid> {
    match x {
        Node::Null => Ok(None),
        Node::Num(n, _) if (0.0..=MAX_TOKENS as f64).contains(n) && n.fract() == 0.0 => {
            Ok(Some(*n as u64))
        }
        other => Err(format!(
            "critic.{k} must be a whole number from 0 to {MAX_TOKENS}, got {}",
            other.describe()
        )
        .into()),
    }
}

fn parse_call_site(v: Node) -> Result<Option<CallSite>, Invalid> {
    match v {
        Node::Null => Ok(None),
        Node::Str(s) if s == "turn" => Ok(Some(CallSite::Turn)),
        Node::Str(s) if s == "skill_gate" => Ok(Some(CallSite::SkillGate)),
        other => Err(format!(
            "call_site must be \"turn\" or \"skill_gate\", got {}",
            other.describe()
        )
        .into()),
    }
}

fn parse_tool_calls(v: Node) -> Result<Vec<ToolCall>, Invalid> {
    let items = match v {
        Node::Seq(a) => a,
        other => {
            return Err(format!(
                "tool_calls_this_turn must be an array, got {}",
                other.describe()
            )
            .into())
        }
    };
    Ok(items
        .into_iter()
        .map(|item| match &item {
            Node::Map(_) => match item.get("name") {
                None => ToolCall::NoName {
                    openai_style: item.get("function").is_some(),
                },
                Some(Node::Str(s)) => ToolCall::of_name(s),
                Some(n) if n.is_falsy() => ToolCall::Falsy,
                Some(_) => ToolCall::NonString,
            },
            _ => ToolCall::NotObject,
        })
        .collect())
}

/// A turn assembled field by field, in the order of the line's keys, by
/// either reader (so both validate with the same code and messages).
#[derive(Default)]
struct Builder<'de> {
    t: Turn<'de>,
    run_id: Option<Text<'de>>,
    draft: Option<Cow<'de, str>>,
    /// The format's keys the line holds, by index into [`FIELDS`].
    present: u32,
}

impl<'de> Builder<'de> {
    /// The keys whose value [`Builder::field`] reads (all the format's keys
    /// but `scope`, which is kept as raw JSON text).
    fn reads(key: &str) -> bool {
        matches!(
            key,
            "run_id"
                | "draft"
                | "turn"
                | "ts"
                | "language"
                | "trace_id"
                | "span_id"
                | "message_index"
                | "turn_id"
                | "confidence"
                | "sensitive_hit"
                | "tool_calls_this_turn"
                | "fabrication_findings"
                | "intent_verdict"
                | "activation_log"
                | "critic"
                | "call_site"
                | "provenance"
                | "sampled_label"
        )
    }

    /// Validate and store the value of one key that [`Builder::reads`].
    fn field(&mut self, key: &str, v: Node<'de>) -> Result<(), Invalid> {
        self.holds(key);
        let t = &mut self.t;
        match key {
            "run_id" => self.run_id = Some(string_field("run_id", v)?.into()),
            "draft" => self.draft = Some(string_field("draft", v)?),
            "turn" => t.turn = parse_turn_number(v)?,
            "ts" => {
                t.ts = optional_string("ts", v)?.map(Text::from);
                t.ts.as_deref().map_or(Ok(()), check_ts)?;
            }
            "language" => {
                t.language = optional_string("language", v)?.and_then(|l| t.label(l));
            }
            "trace_id" => t.trace_id = t.source_id(v),
            "span_id" => t.span_id = t.source_id(v),
            "turn_id" => t.turn_id = t.source_id(v),
            "message_index" => {
                t.message_index = parse_whole("message_index", v).unwrap_or_else(|_| {
                    t.source_id_unreadable = true;
                    None
                })
            }
            "confidence" => t.confidence = parse_confidence(v)?,
            "sensitive_hit" => t.sensitive_hit = parse_sensitive_hit(v)?,
            "tool_calls_this_turn" => t.tool_calls = Calls::Own(parse_tool_calls(v)?),
            "fabrication_findings" => {
                if let Some((n, kinds)) = parse_fabrication(v)? {
                    t.fabrication_findings = n;
                    t.fabrication_kinds = kinds;
                }
            }
            "intent_verdict" => t.intent = parse_intent(v)?,
            "activation_log" => t.activation_log = ActivationLog::from_node(&v)?,
            "critic" => t.critic = parse_critic(v)?,
            "call_site" => t.call_site_recorded = parse_call_site(v)?,
            "provenance" => t.provenance = Recorded::from_node(v)?,
            "sampled_label" => t.label = parse_label(v)?.map(Box::new),
            other => t.unknown(other),
        }
        Ok(())
    }

    /// Note that the line holds the format's key `key`.
    fn holds(&mut self, key: &str) {
        if let Some(i) = FIELDS.iter().position(|f| *f == key) {
            self.present |= 1 << i;
        }
    }

    fn finish(self) -> Result<Turn<'de>, Invalid> {
        let present = self.present;
        let mut t = self.t;
        // A key that looks like one the line holds is another key.
        if let Some(m) = t.misnamed.as_mut() {
            m.retain(|(_, meant)| {
                FIELDS
                    .iter()
                    .position(|f| f == meant)
                    .is_some_and(|i| present & (1 << i) == 0)
            });
        }
        if t.misnamed.as_ref().is_some_and(|m| m.is_empty()) {
            t.misnamed = None;
        }
        t.run_id = self.run_id.ok_or("run_id is missing")?;
        t.draft = self.draft.ok_or("draft is missing")?;
        // A line may say a signal was recorded only when it holds it.
        let holds = [
            (Signal::Confidence, "confidence", t.confidence.is_some()),
            (
                Signal::Sensitive,
                "sensitive_hit",
                t.sensitive_hit != SensitiveField::Absent,
            ),
            (Signal::Critic, "critic event", t.critic.is_some()),
        ];
        for (signal, field, present) in holds {
            if t.provenance.0[signal as usize] == Some(Origin::Recorded) && !present {
                return Err(format!(
                    "provenance.{} is \"recorded\", but the line records no {field}",
                    signal.as_str()
                )
                .into());
            }
        }
        Ok(t)
    }
}

/// The fast reader's pass over a line (see [`crate::read::json::fast`]): Err
/// when the line is invalid or the reader is not sure.
fn parse_fast(line: &str) -> Result<Turn<'_>, Bail> {
    let mut r = Reader::new(line);
    r.ws();
    r.expect(b'{')?;
    let mut b = Builder::default();
    let mut first = true;
    while r.more_members(first)? {
        first = false;
        let key = r.key()?;
        match key.as_ref() {
            "scope" => {
                b.holds("scope");
                b.t.scope = Some(Text::Borrowed(r.raw_value()?))
            }
            k if Builder::reads(k) => {
                let v = r.value()?;
                b.field(k, v).map_err(|_| Bail)?
            }
            other => {
                r.skip_value()?;
                b.t.unknown(other);
            }
        }
    }
    r.ws();
    if !r.at_end() {
        return Err(Bail);
    }
    b.finish().map_err(|_| Bail)
}

impl<'de> Visitor<'de> for TurnVisitor {
    type Value = Turn<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object (one turn)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Turn<'de>, A::Error> {
        let mut b = Builder::default();
        // Keys are borrowed from the line (serde's own Cow<str> would copy
        // every key).
        while let Some(key) = map.next_key::<Node<'de>>()? {
            let Node::Str(key) = key else {
                unreachable!("JSON keys are strings")
            };
            match key.as_ref() {
                "scope" => {
                    let raw = map.next_value::<&'de RawValue>()?.get();
                    // Held to the rules of every other value (a lone
                    // surrogate, `1e400`, nesting past 128 are invalid
                    // here too, as the fast reader treats them).
                    serde_json::from_str::<Node>(raw).map_err(|e| {
                        de::Error::custom(format!("scope: {}", TurnError::from_json(e).reason))
                    })?;
                    b.holds("scope");
                    b.t.scope = Some(Text::Borrowed(raw))
                }
                k if Builder::reads(k) => {
                    let v = map.next_value()?;
                    b.field(k, v).map_err(de::Error::custom)?
                }
                other => {
                    // Read as a value (not skipped), so it is checked alike.
                    map.next_value::<Node>()?;
                    b.t.unknown(other);
                }
            }
        }
        b.finish().map_err(de::Error::custom)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<Turn<'de>, A::Error> {
        Err(de::Error::custom(
            "a turn must be a JSON object, got an array",
        ))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Turn<'de>, E> {
        Err(E::custom(format!(
            "a turn must be a JSON object, got {}",
            describe(&Value::String(s.into()))
        )))
    }
    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Turn<'de>, E> {
        Err(E::custom(format!("a turn must be a JSON object, got {b}")))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Turn<'de>, E> {
        Err(E::custom("a turn must be a JSON object, got null"))
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Turn<'de>, E> {
        Err(E::custom(format!("a turn must be a JSON object, got {n}")))
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Turn<'de>, E> {
        Err(E::custom(format!("a turn must be a JSON object, got {n}")))
    }
    fn visit_f64<E: de::Error>(self, x: f64) -> Result<Turn<'de>, E> {
        Err(E::custom(format!("a turn must be a JSON object, got {x}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ids of a turn's source are read by both readers alike (a whole
    /// number kept in decimal, written as `turn` may be), counted as the
    /// format's keys; a value they cannot hold is left out and noted,
    /// never a reason to refuse a line (recorders wrote these keys before
    /// the format read them, and they change no decision).
    #[test]
    fn a_turns_source_ids_are_read() {
        let line = r#"{"run_id":"r","draft":"x","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":18446744073709551615,"turn_id":1e2,"message_index":7}"#;
        for t in [Turn::parse(line), Turn::parse_with_serde_json(line)] {
            let t = t.unwrap();
            assert_eq!(
                t.trace_id.as_deref(),
                Some("4bf92f3577b34da6a3ce929d0e0e4736")
            );
            assert_eq!(t.span_id.as_deref(), Some("18446744073709551615"));
            assert_eq!(t.turn_id.as_deref(), Some("100"));
            assert_eq!(t.message_index, Some(7));
            assert_eq!((t.unknown_fields, t.source_id_unreadable), (0, false));
        }
        let null = r#"{"run_id":"r","draft":"x","trace_id":null,"span_id":null,"turn_id":null,"message_index":null}"#;
        for t in [Turn::parse(null), Turn::parse_with_serde_json(null)] {
            let t = t.unwrap();
            assert_eq!(
                (t.trace_id, t.span_id, t.turn_id, t.message_index),
                (None, None, None, None)
            );
            assert!(!t.source_id_unreadable);
        }
        for bad in [
            r#""trace_id":{"w3c":"00-4bf9-00f0-01"}"#,
            r#""span_id":340282366920938463463374607431768211455"#,
            r#""turn_id":-3"#,
            r#""message_index":"3""#,
            r#""message_index":1.5"#,
        ] {
            let line = format!(r#"{{"run_id":"r","draft":"x",{bad}}}"#);
            for t in [Turn::parse(&line), Turn::parse_with_serde_json(&line)] {
                let t = t.unwrap();
                assert!(t.source_id_unreadable, "{line}");
                assert_eq!(
                    (t.trace_id, t.span_id, t.turn_id, t.message_index),
                    (None, None, None, None)
                );
            }
        }
    }

    /// Repeated keys keep their first place and their last value, as
    /// `serde_json` keeps them, below and above the linear search's reach.
    #[test]
    fn object_entries_keep_the_last_value_of_a_repeated_key() {
        for n in [3usize, 16, 17, 40] {
            let mut parts: Vec<String> = (0..n).map(|i| format!("\"k{i}\":{i}")).collect();
            parts.push("\"k1\":\"late\"".into());
            parts.push(format!("\"k{}\":\"last\"", n - 1));
            parts.push("\"new\":0".into());
            let raw = format!("{{{}}}", parts.join(","));
            let e = object_entries(&raw).unwrap();
            let keys: Vec<&str> = e.iter().map(|(k, _)| k.as_ref()).collect();
            let mut want: Vec<String> = (0..n).map(|i| format!("k{i}")).collect();
            want.push("new".into());
            assert_eq!(keys, want, "{n}");
            assert_eq!(e[1].1.get(), "\"late\"");
            assert_eq!(e[n - 1].1.get(), "\"last\"");
            let serde: serde_json::Map<String, Value> = serde_json::from_str(&raw).unwrap();
            assert_eq!(serde["k1"], "late");
        }
    }

    #[test]
    fn parses_the_spec_example() {
        let line = r#"{"run_id":"r-7f3a","turn":3,"scope":{"tenant":"acme"},"draft":"Got it, thanks!","tool_calls_this_turn":[],"fabrication_findings":[],"intent_verdict":{"label":"knowledge","confidence":0.71},"confidence":0.5,"sensitive_hit":null,"critic":{"verdict":"approve","reflection_latency_ms":2412.0,"reflection_tokens_in":3105,"reflection_tokens_out":41,"model":"claude-opus"}}"#;
        let t = Turn::parse(line).unwrap();
        assert_eq!(t.run_id, "r-7f3a");
        assert!(matches!(t.draft, Cow::Borrowed(_)));
        assert_eq!(t.turn, Some(3));
        assert_eq!(t.intent_label(), Some("knowledge"));
        assert_eq!(t.sensitive_hit, SensitiveField::None);
        let c = t.critic.unwrap();
        assert_eq!(c.verdict, Some(Verdict::Approve));
        assert_eq!(c.tokens_in, Some(3105));
        assert_eq!(c.latency_ms, Some(2412.0));
    }

    fn err(line: &str) -> String {
        Turn::parse(line).unwrap_err().to_string()
    }

    #[test]
    fn invalid_kinds_have_clear_reasons() {
        assert_eq!(
            err(r#"{"run_id":"r","draft":"x","confidence":"high"}"#),
            r#"confidence must be a number in [0, 1], got "high""#
        );
        assert_eq!(
            err(r#"{"run_id":"r","draft":"x","confidence":1.5}"#),
            "confidence must be a number in [0, 1], got 1.5"
        );
        assert_eq!(err(r#"{"draft":"x"}"#), "run_id is missing");
        assert_eq!(
            err(r#"{"run_id":1,"draft":"x"}"#),
            "run_id must be a string, got 1"
        );
        assert_eq!(err(r#"{"run_id":"r"}"#), "draft is missing");
        assert_eq!(err(r#"[1]"#), "a turn must be a JSON object, got an array");
        assert!(
            err(r#"{"run_id":"r","draft":"x","intent_verdict":"action"}"#)
                .contains("intent_verdict must be an object")
        );
        assert!(
            err(r#"{"run_id":"r","draft":"x","intent_verdict":{"label":3}}"#)
                .contains("label must be a string or null")
        );
        assert!(
            err(r#"{"run_id":"r","draft":"x","tool_calls_this_turn":{}}"#)
                .contains("must be an array")
        );
        assert!(
            err(r#"{"run_id":"r","draft":"x","critic":{"verdict":"ok"}}"#)
                .contains("critic.verdict")
        );
        assert!(
            err(r#"{"run_id":"r","draft":"x","critic":{"reflection_tokens_in":-1}}"#)
                .contains("must be a whole number from 0 to 1000000000, got -1")
        );
        assert!(err(r#"{"run_id":"r","draft":"x","confidence":NaN}"#)
            .starts_with("invalid JSON at column"));
        assert!(err(r#"{"run_id":"r","draft":"x","confidence":1e400}"#).contains("out of range"));
        assert!(err(r#"{"run_id":"r","draft":"x""#).starts_with("invalid JSON at column"));
        assert!(
            err(r#"{"run_id":"r","draft":"x","activation_log":{"activated_nodes":{}}}"#)
                .contains("activated_nodes")
        );
        assert!(err(
            r#"{"run_id":"r","draft":"x","activation_log":{"activated_nodes":[{"score":"hi"}]}}"#
        )
        .contains("score"));
        assert!(err(r#"{"run_id":"r","draft":"x","turn":-1}"#).contains("turn must be an integer"));
        // A whole number past what a float holds exactly is said so (it
        // read as "not an integer"); a lone surrogate is named (it read as
        // "unexpected end of hex escape").
        let e = err(r#"{"run_id":"r","draft":"x","turn":1e20}"#);
        assert!(
            e.contains("2^53") && !e.contains("must be an integer"),
            "{e}"
        );
        for line in [
            r#"{"run_id":"r","draft":"x\ud800y"}"#,
            r#"{"run_id":"r","draft":"x\ud800"}"#,
            r#"{"run_id":"r","draft":"x\udc00y"}"#,
        ] {
            let e = err(line);
            assert!(e.contains("lone surrogate"), "{line}: {e}");
        }
    }

    #[test]
    fn tool_call_names_follow_python_truthiness() {
        let t = Turn::parse(
            r#"{"run_id":"r","draft":"x","tool_calls_this_turn":[{"name":""},{"name":null},{"name":0},{"name":false},{"name":5},{"args":{}},{"function":{"name":"f"}},"s",{"name":"ok"}]}"#,
        )
        .unwrap();
        use ToolCall::*;
        assert_eq!(
            t.tool_calls[..],
            [
                Falsy,
                Falsy,
                Falsy,
                Falsy,
                NonString,
                NoName {
                    openai_style: false
                },
                NoName { openai_style: true },
                NotObject,
                Named("ok".into())
            ]
        );
    }

    #[test]
    fn a_verdict_is_a_label_only_where_a_critic_ran() {
        let t = |critic: &str| {
            let line = format!(r#"{{"run_id":"r","draft":"x","critic":{critic}}}"#);
            let t = Turn::parse(&line).unwrap();
            (t.verdict(), t.production(), t.critic_not_run())
        };
        use Production::*;
        let approve = Some(Verdict::Approve);
        // symfonic's gate-skipped / fail-open event: both token counts 0.
        assert_eq!(
            t(
                r#"{"verdict":"approve","reflection_tokens_in":0,"reflection_tokens_out":0,"reflection_latency_ms":0.004}"#
            ),
            (None, Skipped, true)
        );
        // Tokens recorded and not both 0: ran.
        assert_eq!(
            t(r#"{"verdict":"approve","reflection_tokens_in":10,"reflection_tokens_out":0}"#),
            (approve, Fired, false)
        );
        // One count missing: not "both present and both 0", so it ran.
        assert_eq!(
            t(r#"{"verdict":"approve","reflection_tokens_in":0}"#),
            (approve, Fired, false)
        );
        // No token fields: ran (unmeasured), as before.
        assert_eq!(
            t(r#"{"verdict":"revise"}"#),
            (Some(Verdict::Revise), Fired, false)
        );
        // `ran` decides when present, either way.
        assert_eq!(
            t(
                r#"{"ran":true,"verdict":"approve","reflection_tokens_in":0,"reflection_tokens_out":0}"#
            ),
            (approve, Fired, false)
        );
        assert_eq!(
            t(
                r#"{"ran":false,"verdict":"revise","reflection_tokens_in":900,"reflection_tokens_out":9}"#
            ),
            (None, Skipped, true)
        );
        assert_eq!(t("null"), (None, Unknown, false));
        assert!(err(r#"{"run_id":"r","draft":"x","critic":{"ran":"yes"}}"#)
            .contains("critic.ran must be true, false or null, got \"yes\""));
    }

    #[test]
    fn call_site_is_recorded_or_inferred_from_the_skill_gate_run_id() {
        let site = |line: &str| Turn::parse(line).unwrap().call_site();
        assert_eq!(site(r#"{"run_id":"r","draft":"x"}"#), CallSite::Turn);
        assert_eq!(
            site(r#"{"run_id":"skill-gate","draft":"x"}"#),
            CallSite::SkillGate
        );
        assert_eq!(
            site(r#"{"run_id":"skill-gate","draft":"x","call_site":"turn"}"#),
            CallSite::Turn
        );
        assert_eq!(
            site(r#"{"run_id":"r","draft":"x","call_site":"skill_gate"}"#),
            CallSite::SkillGate
        );
        assert!(err(r#"{"run_id":"r","draft":"x","call_site":"tool"}"#)
            .contains(r#"call_site must be "turn" or "skill_gate", got "tool""#));
    }

    #[test]
    fn unknown_fields_are_counted() {
        let t = Turn::parse(r#"{"run_id":"r","draft":"x","extra":1,"more":{"a":[1]}}"#).unwrap();
        assert_eq!(t.unknown_fields, 2);
        assert!(t.misnamed.is_none());
    }

    /// Asked twice, or past the cache's size, the remembered answer is
    /// the computed one.
    #[test]
    fn remembered_answers_are_the_computed_ones() {
        let keys = [
            "intent",
            "confidense",
            "languag",
            "trace_id",
            "app_version",
            "critc",
        ];
        for key in keys.iter().copied().chain(keys.iter().copied()) {
            assert_eq!(meant_field(key), meant_field_uncached(key), "{key}");
        }
        for i in 0..MEANT_CACHED + 10 {
            let key = format!("critic{i}");
            assert_eq!(meant_field(&key), meant_field_uncached(&key), "{key}");
        }
    }

    /// Keys other recordings use, and typos, are told apart from extras.
    #[test]
    fn misnamed_fields_are_told_apart() {
        let line = r#"{"run_id":"r","draft":"x","intent":"action","tool_calls":[],"confidense":0.9,"tenant":"a"}"#;
        for t in [
            Turn::parse(line).unwrap(),
            Turn::parse_with_serde_json(line).unwrap(),
        ] {
            assert_eq!(
                (t.unknown_fields, t.misnamed.as_ref().map_or(0, |m| m.len())),
                (4, 3)
            );
            let first = &t.misnamed.as_ref().unwrap()[0];
            assert_eq!((first.0.as_str(), first.1), ("intent", "intent_verdict"));
        }
        assert_eq!(meant_field("intent"), Some("intent_verdict"));
        assert_eq!(meant_field("confidense"), Some("confidence"));
        assert_eq!(meant_field("languag"), None, "a shorter form of language");
        assert_eq!(meant_field("langauge"), None, "two edits");
        assert_eq!(meant_field("lnguage"), Some("language"), "one edit inside");
        // Keys a deployment records beside the format's are not misnamed.
        for extra in [
            "tenant",
            "user_id",
            "metadata",
            "model",
            "latency_ms",
            "context",
            "turn_ids",
            "run_uuid",
            "critic_id",
            "call_site_id",
            "run_ids",
            "score",
            "scores",
            "tz",
            "os",
            "t",
            "us",
            "tun",
            "ts2",
            "drift",
            "craft",
            "slope",
            "drafted",
            "tools",
            "confidences",
            "languages",
            "call_sites",
            "provenances",
            "activation_logs",
            "critics",
            "scopes",
            "provenance_v",
            "timestamp",
            "response",
            "lang",
            "sensitive_tags",
            "draft_id",
            "language_code",
            "tools_used",
        ] {
            // Beside every key of the format, no extra is misnamed; alone,
            // only one a single edit from a key that decides is.
            let full = format!(
                r#"{{"run_id":"r","turn":1,"ts":"2026-01-01T00:00:00Z","language":"en","draft":"x","tool_calls_this_turn":[],"fabrication_findings":[],"intent_verdict":null,"activation_log":null,"confidence":0.5,"sensitive_hit":null,"critic":null,"call_site":"turn","scope":"a","provenance":{{}},"{extra}":1}}"#
            );
            let t = Turn::parse(&full).unwrap();
            assert!(t.misnamed.is_none(), "{extra}: {:?}", t.misnamed);
            let near = crate::vocab::within(extra, DECIDING, 1).is_some();
            assert_eq!(meant_field(extra).is_some(), near, "{extra}");
        }
    }

    /// What a first reading typed, each warned of in a line without the
    /// key it meant (each passed in silence before).
    #[test]
    fn typos_and_other_spellings_of_the_format_keys_are_misnamed() {
        for (typo, meant) in [
            ("critc", "critic"),
            ("sensitive_hits", "sensitive_hit"),
            ("tool_calls_this_turns", "tool_calls_this_turn"),
            ("fabrication_finding", "fabrication_findings"),
            ("intentVerdict", "intent_verdict"),
            ("toolCallsThisTurn", "tool_calls_this_turn"),
            ("SensitiveHit", "sensitive_hit"),
            ("call-site", "call_site"),
            ("toolCalls", "tool_calls_this_turn"),
            // Found by review: neighbours swapped, and all capitals.
            ("cirtic", "critic"),
            ("sensitive_hti", "sensitive_hit"),
            ("tool_calls_this_trun", "tool_calls_this_turn"),
            ("CRITIC", "critic"),
        ] {
            let line = format!(r#"{{"run_id":"r","draft":"x","{typo}":null}}"#);
            for t in [
                Turn::parse(&line).unwrap(),
                Turn::parse_with_serde_json(&line).unwrap(),
            ] {
                let m = t.misnamed.as_deref().map(Vec::as_slice).unwrap_or_default();
                assert_eq!(m, [(typo.to_string(), meant)], "{typo}");
            }
        }
    }
}
