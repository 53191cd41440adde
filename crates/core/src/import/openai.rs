//! OpenAI-style chat transcripts (`--from openai-chat`): one conversation
//! a line, `{"messages": [...]}` (with optional `run_id`, `scope`, `ts`) or
//! a bare array of messages, in the Chat Completions message shape.
//!
//! A turn is an assistant message with text and no tool calls (one that
//! calls tools is a step of the agent's loop); its user message is the
//! latest `user` message before it, and its tool calls those of the
//! assistant messages since then (`history = "none"`) or since the start
//! (`"conversation"`), each with the content of the tool message that
//! answers it. An assistant message may carry what production's critic
//! did as `"critic"`, in the traffic format's shape.
//!
//! Tool calls as other writers record them are tool calls too: the legacy
//! `function_call` (answered by a `role: "function"` message of its name),
//! and Anthropic's `tool_use` content parts (answered by `tool_result`
//! parts of a user message, which is then no new user message). A part
//! that looks like a call of a shape not read here makes the turn's calls
//! unknown, never `recorded`.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::raw::{
    CallLog, Captured, LoggedCall, RawCalls, RawTurn, ResultText, Scope, MAX_TOOL_CALLS,
};
use crate::deployment::History;
use crate::read::provenance::Origin;

/// A conversation object, its messages read as `M`: left unread (for the
/// reason a message cannot be read, with its index), or read in the same
/// pass (the common case: read again unread only to say what is wrong).
#[derive(Deserialize)]
#[serde(bound(deserialize = "'de: 'a, M: Deserialize<'de>"))]
struct Conversation<'a, M> {
    messages: Option<Vec<M>>,
    #[serde(default, borrow)]
    run_id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    scope: Option<&'a RawValue>,
    #[serde(default, borrow)]
    ts: Option<&'a RawValue>,
}

/// A chat message as `serde_json` reads it (its errors name a `Message`).
#[derive(Deserialize)]
#[serde(expecting = "struct Message")]
struct JsonMessage<'a> {
    #[serde(borrow)]
    role: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<&'a RawValue>>,
    #[serde(default, borrow)]
    tool_call_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function_call: Option<&'a RawValue>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    critic: Option<&'a RawValue>,
}

/// A chat message, by either reader: the values the walk reads, and the
/// exact JSON text of those it reads further (absent when null).
#[derive(Default)]
struct Message<'a> {
    role: Option<Cow<'a, str>>,
    content: Option<Content<'a>>,
    tool_calls: Option<Vec<&'a str>>,
    tool_call_id: Option<Cow<'a, str>>,
    function_call: Option<&'a str>,
    name: Option<Cow<'a, str>>,
    critic: Option<&'a str>,
}

/// A message's `content`: a string read already (the fast reader's), a
/// string as written (checked by the fast reader: a tool's result, read
/// when needed, or a system prompt, never read), or JSON text to read.
enum Content<'a> {
    Text(Cow<'a, str>),
    Written(&'a str),
    Json(&'a str),
}

impl<'a> From<JsonMessage<'a>> for Message<'a> {
    fn from(m: JsonMessage<'a>) -> Message<'a> {
        Message {
            role: m.role,
            content: m.content.map(|c| Content::Json(c.get())),
            tool_calls: m.tool_calls.map(|c| c.iter().map(|c| c.get()).collect()),
            tool_call_id: m.tool_call_id,
            function_call: m.function_call.map(RawValue::get),
            name: m.name,
            critic: m.critic.map(RawValue::get),
        }
    }
}

#[derive(Deserialize)]
struct Call<'a> {
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    function: Option<Function<'a>>,
}

#[derive(Deserialize)]
struct Function<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
}

/// The turns of one conversation (the line `line` of the file `file`).
pub(crate) fn turns(
    text: &str,
    file: &str,
    line: u64,
    history: History,
) -> Result<Vec<RawTurn>, super::not_imported::NotImported> {
    // One pass reads a valid conversation; one that does not read is read
    // again message by message, for the reason and the message's index.
    let read = match fast::conversation(text).or_else(|| read_whole(text)) {
        Some(read) => read,
        None => read_by_message(text)?,
    };
    walk(read, file, line, history, true)
}

/// [`turns`] by `serde_json` alone (what the fast reader is held to).
pub(crate) fn turns_by_serde_json(
    text: &str,
    file: &str,
    line: u64,
    history: History,
) -> Result<Vec<RawTurn>, super::not_imported::NotImported> {
    let read = match read_whole(text) {
        Some(read) => read,
        None => read_by_message(text)?,
    };
    walk(read, file, line, history, false)
}

/// The turns of a conversation read.
fn walk(
    (messages, run_id, scope, ts): Read,
    file: &str,
    line: u64,
    history: History,
    fast: bool,
) -> Result<Vec<RawTurn>, super::not_imported::NotImported> {
    let run_id = match run_id.map(serde_json::from_str::<Value>) {
        None | Some(Ok(Value::Null)) => format!("{file}:{line}"),
        Some(Ok(Value::String(s))) => s,
        Some(_) => return Err("run_id must be a string".into()),
    };
    let ts = match ts.map(serde_json::from_str::<Value>) {
        None | Some(Ok(Value::Null)) => None,
        Some(Ok(Value::String(s))) => Some(Arc::<str>::from(s)),
        Some(_) => return Err("ts must be an RFC 3339 timestamp string".into()),
    };
    let scope = scope.filter(|s| *s != "null").map(Scope::new);
    let run_id: Arc<str> = run_id.into();
    let mut walk = Walk {
        history,
        fast,
        user: None,
        since_user: 0,
        calls: Vec::new(),
        answers: 0,
        pending: HashMap::new(),
        legacy: HashMap::new(),
        turns: Vec::new(),
        windows: Vec::new(),
        at: 0,
        unread_since_user: false,
        unread_ever: false,
    };
    for (i, m) in messages.into_iter().enumerate() {
        walk.at = i;
        m.and_then(|m| walk.message(m))
            .map_err(|e| format!("messages[{i}]: {e}"))?;
    }
    if walk.turns.is_empty() {
        return Err(
            "the conversation has no turn: no assistant message with text and without tool calls"
                .into(),
        );
    }
    let log = Arc::new(CallLog::new(walk.calls));
    Ok(walk
        .turns
        .into_iter()
        .zip(walk.windows)
        .enumerate()
        .map(|(n, (mut t, (from, to, answered)))| {
            t.run_id = run_id.clone();
            t.turn = n as u64;
            t.ts = ts.clone();
            t.scope = scope.clone();
            t.tool_calls = RawCalls::Window {
                log: log.clone(),
                from,
                to,
                answered,
                captured: true,
            };
            t
        })
        .collect())
}

/// A conversation's messages (each read, or why not), and the JSON text
/// of its `run_id`, `scope` and `ts`.
type Read<'a> = (
    Vec<Result<Message<'a>, super::not_imported::NotImported>>,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
);

/// The conversation read in one pass by `serde_json`, or None when it
/// does not read.
fn read_whole(text: &str) -> Option<Read<'_>> {
    fn ok(m: Vec<JsonMessage<'_>>) -> Vec<Result<Message<'_>, super::not_imported::NotImported>> {
        m.into_iter().map(|m| Ok(m.into())).collect()
    }
    if text.trim_start().starts_with('[') {
        let m: Vec<JsonMessage> = serde_json::from_str(text).ok()?;
        Some((ok(m), None, None, None))
    } else {
        let c: Conversation<JsonMessage> = serde_json::from_str(text).ok()?;
        Some((ok(c.messages?), get(c.run_id), get(c.scope), get(c.ts)))
    }
}

/// The conversation read message by message: Err when it is not a
/// conversation at all, else each message or why it does not read.
fn read_by_message(text: &str) -> Result<Read<'_>, super::not_imported::NotImported> {
    let (messages, run_id, scope, ts) = if text.trim_start().starts_with('[') {
        let m: Vec<&RawValue> = serde_json::from_str(text).map_err(|e| syntax(text, e))?;
        (m, None, None, None)
    } else {
        let c: Conversation<&RawValue> = serde_json::from_str(text).map_err(|e| syntax(text, e))?;
        (
            c.messages
                .ok_or("a conversation needs \"messages\": an array of chat messages")?,
            c.run_id,
            c.scope,
            c.ts,
        )
    };
    fn read(m: &RawValue) -> Result<Message<'_>, super::not_imported::NotImported> {
        serde_json::from_str::<JsonMessage>(m.get())
            .map(Message::from)
            .map_err(|e| super::not_imported::NotImported::from(format!("not a chat message: {e}")))
    }
    Ok((
        messages.into_iter().map(read).collect(),
        get(run_id),
        get(scope),
        get(ts),
    ))
}

/// A raw value's text.
fn get(r: Option<&RawValue>) -> Option<&str> {
    r.map(RawValue::get)
}

/// A JSON error as a reason./// A JSON error as a reason.
fn syntax(text: &str, e: serde_json::Error) -> String {
    let what = if text.trim_start().starts_with(['{', '[']) {
        "not a conversation"
    } else {
        "not a JSON object or array"
    };
    format!("{what}: {e}")
}

/// The conversation read so far.
struct Walk {
    history: History,
    /// Whether tool calls are read by the fast reader first.
    fast: bool,
    user: Option<Arc<str>>,
    /// Index into `calls` of the first call after the latest user message.
    since_user: usize,
    /// Every call so far, with its result once it comes back (an id may
    /// be used again once its call is answered): the log the turns hold
    /// windows of.
    calls: Vec<LoggedCall>,
    /// How many results have come back.
    answers: usize,
    /// The calls of each id, oldest first, answered ones dropped as they
    /// are met: a non-empty id waits for at most one result at a time, and
    /// calls of the empty id are answered in the order they were made.
    pending: HashMap<String, VecDeque<usize>>,
    /// The legacy `function_call`s of each name, latest last, answered
    /// ones dropped as they are met.
    legacy: HashMap<String, Vec<usize>>,
    turns: Vec<RawTurn>,
    /// Each turn's window of `calls`: (from, to, results back by then).
    windows: Vec<(usize, usize, usize)>,
    /// The index in `messages` of the message being read.
    at: usize,
    /// Whether a call of a shape not read here was made since the latest
    /// user message, and at all: a turn whose calls reach back to one has
    /// unknown calls.
    unread_since_user: bool,
    unread_ever: bool,
}

impl Walk {
    fn message(&mut self, m: Message) -> Result<(), super::not_imported::NotImported> {
        let role = m.role.clone().ok_or("a message needs a \"role\"")?;
        match role.as_ref() {
            "system" | "developer" => Ok(()),
            "user" => {
                let parts = Parts::of(m.content)?;
                for (id, result) in parts.results {
                    self.answer(&id, ResultText::Text(result.into()))?;
                }
                // A message of tool results alone is the loop's, not the
                // user's.
                if parts.text.is_some() || !parts.had_results {
                    self.user = Some(parts.text.unwrap_or_default().into());
                    self.since_user = self.calls.len();
                    self.unread_since_user = false;
                }
                // A call in a user message is none this reader reads.
                if parts.unread_call || !parts.uses.is_empty() {
                    self.unread();
                }
                Ok(())
            }
            // The legacy reply to a `function_call`: it answers the latest
            // call of its name not answered yet.
            "function" => {
                let name = m.name.ok_or("a function message needs a \"name\"")?;
                let index = self
                    .legacy_unanswered(&name)
                    .ok_or_else(|| {
                        format!("function message answers {name:?}, which no earlier assistant function_call called")
                    })?;
                self.answered(index, result_of(m.content)?);
                Ok(())
            }
            "tool" => {
                let id = m
                    .tool_call_id
                    .ok_or("a tool message needs a \"tool_call_id\"")?;
                self.answer(&id, result_of(m.content)?)
            }
            "assistant" => self.assistant(m),
            other => Err(format!(
                "role {other:?} is not a chat role (system, developer, user, assistant, tool, function)"
            ).into()),
        }
    }

    /// A call of a shape not read here.
    fn unread(&mut self) {
        self.unread_since_user = true;
        self.unread_ever = true;
    }

    /// The call of id `id` that has no result yet (at most one: see
    /// [`Walk::call`]).
    fn unanswered(&mut self, id: &str) -> Option<usize> {
        let calls = &self.calls;
        let waiting = self.pending.get_mut(id)?;
        while let Some(&i) = waiting.front() {
            looked_at(1);
            if calls[i].result.is_none() {
                return Some(i);
            }
            waiting.pop_front();
        }
        None
    }

    /// The latest legacy call of `name` that has no result yet.
    fn legacy_unanswered(&mut self, name: &str) -> Option<usize> {
        let all = &self.calls;
        let calls = self.legacy.get_mut(name)?;
        while let Some(&i) = calls.last() {
            looked_at(1);
            if all[i].result.is_none() {
                return Some(i);
            }
            calls.pop();
        }
        None
    }

    /// Call `index`'s result came back.
    fn answered(&mut self, index: usize, result: ResultText) {
        self.calls[index].result = Some((self.answers, result));
        self.answers += 1;
    }

    /// Keep a call, findable by its id.
    fn push_call(&mut self, (id, name, args): (String, String, Option<String>)) {
        self.pending
            .entry(id.clone())
            .or_default()
            .push_back(self.calls.len());
        self.calls.push(LoggedCall {
            name: name.into(),
            args: args.map(Into::into),
            result: None,
            whole: true,
        });
    }

    /// A tool result for call `id`: the call of that id not answered yet
    /// (one result per call: a second would leave one of them out of the
    /// grounding).
    fn answer(
        &mut self,
        id: &str,
        result: ResultText,
    ) -> Result<(), super::not_imported::NotImported> {
        let Some(index) = self.unanswered(id) else {
            // Every call's id is a key of `pending`.
            return Err(match self.pending.contains_key(id) {
                true => format!("tool call {id:?} is answered twice").into(),
                false => format!(
                    "tool message answers tool_call_id {id:?}, which no earlier assistant message called"
                )
                .into(),
            });
        };
        self.answered(index, result);
        Ok(())
    }

    /// Record a call. Its id may be one an answered call had (published
    /// trajectories reuse them), never one still waiting for its result:
    /// which of the two a result answers would be unknown.
    fn call(
        &mut self,
        call: (String, String, Option<String>),
    ) -> Result<(), super::not_imported::NotImported> {
        if !call.0.is_empty() && self.unanswered(&call.0).is_some() {
            return Err(format!(
                "two tool calls share the id {:?}, the first still without a result",
                call.0
            )
            .into());
        }
        self.push_call(call);
        Ok(())
    }

    /// A turn holds at most [`MAX_TOOL_CALLS`] calls: those since `from`.
    fn within_cap(&self, from: usize) -> Result<(), super::not_imported::NotImported> {
        match self.calls.len() - from > MAX_TOOL_CALLS {
            true => Err(super::raw::too_many_calls(
                self.history,
                "every call so far",
            )),
            false => Ok(()),
        }
    }

    fn assistant(&mut self, m: Message) -> Result<(), super::not_imported::NotImported> {
        let calls = m.tool_calls.unwrap_or_default();
        let parts = Parts::of(m.content)?;
        let legacy = m.function_call.filter(|f| *f != "null");
        if parts.unread_call {
            self.unread();
        }
        // A message that calls tools, in any of the shapes, is a step of
        // the agent's loop; its text is narration.
        if !calls.is_empty() || legacy.is_some() || !parts.uses.is_empty() {
            for (i, c) in calls.iter().enumerate() {
                let call = parse_call(c, self.fast).map_err(|e| format!("tool_calls[{i}]: {e}"))?;
                self.call(call)
                    .map_err(|e| format!("tool_calls[{i}]: {e}"))?;
            }
            if let Some(f) = legacy {
                let f: Function = serde_json::from_str(f)
                    .map_err(|e| format!("function_call: not {{\"name\", \"arguments\"}}: {e}"))?;
                let name = f.name.ok_or("function_call.name is missing")?;
                let id = format!("{LEGACY}{}", self.calls.len());
                self.legacy
                    .entry(name.to_string())
                    .or_default()
                    .push(self.calls.len());
                self.push_call((id, name.into_owned(), f.arguments.map(|a| args_json(&a))));
            }
            for u in parts.uses {
                self.call(u)?;
            }
            return Ok(());
        }
        let text = parts.text.unwrap_or_default();
        if text.is_empty() {
            return Ok(());
        }
        let from = match self.history {
            History::None => self.since_user,
            History::Conversation => 0,
        };
        self.within_cap(from)?;
        self.windows.push((from, self.calls.len(), self.answers));
        let critic = m.critic.map(str::to_string).filter(|c| c != "null");
        let calls_known = match self.history {
            History::None => !self.unread_since_user,
            History::Conversation => !self.unread_ever,
        };
        self.turns.push(RawTurn {
            run_id: "".into(),
            turn: 0,
            ts: None,
            trace_id: None,
            span_id: None,
            message_index: Some(self.at as u64),
            turn_id: None,
            scope: None,
            user_message: self.user.clone().map_or(Captured::Absent, Captured::Whole),
            completion: Captured::Whole(text.into()),
            // The window, once the conversation's calls are all read.
            tool_calls: RawCalls::default(),
            calls_known,
            critic_origin: if critic.is_some() {
                Origin::Recorded
            } else {
                Origin::Unknown
            },
            critic,
            call_site: None,
        });
        Ok(())
    }
}

// How many calls the matching of results to calls looked at (counted in
// tests only: the matching must stay linear in a conversation's calls).
#[cfg(test)]
thread_local! {
    static LOOKED_AT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
fn looked_at(n: u64) {
    LOOKED_AT.with(|c| c.set(c.get() + n));
}

#[cfg(not(test))]
#[inline(always)]
fn looked_at(_: u64) {}

/// An assistant's tool call: its id, function name, and arguments (the
/// JSON they hold, else the string as written).
fn parse_call(
    raw: &str,
    fast: bool,
) -> Result<(String, String, Option<String>), super::not_imported::NotImported> {
    let c: Call = match fast.then(|| fast::call(raw)).flatten() {
        Some(c) => c,
        None => serde_json::from_str(raw)
            .map_err(|e| format!("not a tool call {{\"id\", \"type\": \"function\", \"function\": {{\"name\", \"arguments\"}}}}: {e}"))?,
    };
    let f = c.function.ok_or("a tool call needs a \"function\"")?;
    let name = f.name.ok_or("function.name is missing")?;
    Ok((
        c.id.unwrap_or_default().into_owned(),
        name.into_owned(),
        f.arguments.map(|a| args_json(&a)),
    ))
}

/// The id prefix of a legacy `function_call` (which has no id of its own).
const LEGACY: &str = "\u{0}function_call#";

/// Arguments written as a JSON string: the JSON they hold when the
/// traffic format holds it (no `1e400`, no lone surrogate), else the
/// string as written.
fn args_json(a: &str) -> String {
    match crate::read::json::holds(a) {
        true => a.trim().to_string(),
        false => serde_json::to_string(a).expect("a string serialises"),
    }
}

/// A message's content read part by part: its text (None when it has no
/// text at all), Anthropic's `tool_use` parts as calls and `tool_result`
/// parts as results, and whether a part looked like a call of a shape not
/// read here.
#[derive(Default)]
struct Parts {
    text: Option<String>,
    uses: Vec<(String, String, Option<String>)>,
    results: Vec<(String, String)>,
    had_results: bool,
    unread_call: bool,
}

impl Parts {
    fn of(raw: Option<Content>) -> Result<Parts, super::not_imported::NotImported> {
        let raw = match raw {
            None => return Ok(Parts::default()),
            Some(Content::Text(t)) => {
                return Ok(Parts {
                    text: Some(t.into_owned()),
                    ..Parts::default()
                })
            }
            Some(Content::Written(raw) | Content::Json(raw)) => raw,
        };
        // Only a list is read as parts (most contents are a string, read
        // once as one).
        let parts = match raw.trim_start().starts_with('[') {
            true => serde_json::from_str::<Value>(raw).ok(),
            false => None,
        };
        let Some(Value::Array(parts)) = parts else {
            let text = content(Some(Content::Json(raw)))?;
            return Ok(Parts {
                text: Some(text),
                ..Parts::default()
            });
        };
        let mut out = Parts::default();
        for (i, p) in parts.iter().enumerate() {
            let at = |e: &str| format!("content[{i}]: {e}");
            match p.get("type").and_then(Value::as_str) {
                Some("text") => match p.get("text") {
                    Some(Value::String(t)) => out.text.get_or_insert_with(String::new).push_str(t),
                    _ => return Err(at("a text part needs a string \"text\"").into()),
                },
                Some("tool_use") => {
                    let id = p
                        .get("id")
                        .and_then(Value::as_str)
                        .ok_or_else(|| at("a tool_use part needs a string \"id\""))?;
                    let name = p
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or_else(|| at("a tool_use part needs a string \"name\""))?;
                    let args = p.get("input").map(|v| v.to_string());
                    out.uses.push((id.to_string(), name.to_string(), args));
                }
                Some("tool_result") => {
                    let (id, text) = tool_result(p).map_err(|e| at(&e.0.to_string()))?;
                    out.results.push((id, text));
                    out.had_results = true;
                }
                // A call in a shape not read here (the Responses API's
                // `function_call`, `web_search_call`, `mcp_call`, a server
                // tool's use).
                Some(t) if ["tool", "function", "call"].iter().any(|w| t.contains(w)) => {
                    out.unread_call = true
                }
                Some(_) => {}
                None => return Err(at("a content part needs a \"type\"").into()),
            }
        }
        // A list of parts with no text part reads as empty text.
        if out.text.is_none() && !out.had_results {
            out.text = Some(String::new());
        }
        Ok(out)
    }
}

/// An Anthropic `tool_result` part: the id of the call it answers, and
/// its text.
fn tool_result(p: &Value) -> Result<(String, String), super::not_imported::NotImported> {
    let id = p
        .get("tool_use_id")
        .and_then(Value::as_str)
        .ok_or("a tool_result part needs a string \"tool_use_id\"")?;
    let text = match p.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(c @ Value::Array(_)) => {
            let raw = serde_json::value::to_raw_value(c).expect("JSON");
            content(Some(Content::Json(raw.get()))).map_err(|e| format!("tool_result: {e}"))?
        }
        Some(other) => {
            return Err(format!(
                "a tool_result's content must be a string, null or a list of parts, got {}",
                crate::read::json::describe(other)
            )
            .into())
        }
    };
    Ok((id.to_string(), text))
}

/// A tool's (or function's) result: its content's text, kept as written
/// when it is a string the fast reader checked.
fn result_of(raw: Option<Content>) -> Result<ResultText, super::not_imported::NotImported> {
    match raw {
        Some(Content::Written(json)) => Ok(ResultText::Json(json.into())),
        other => content(other).map(|t| ResultText::Text(t.into())),
    }
}

/// A message's text: a string, null (empty), or a list of parts whose
/// `text` parts are joined with no separator.
fn content(raw: Option<Content>) -> Result<String, super::not_imported::NotImported> {
    let raw = match raw {
        None => return Ok(String::new()),
        Some(Content::Text(t)) => return Ok(t.into_owned()),
        Some(Content::Written(raw) | Content::Json(raw)) => raw,
    };
    if raw.trim_start().starts_with('"') {
        return serde_json::from_str(raw)
            .map_err(|e| super::not_imported::NotImported::from(e.to_string()));
    }
    match serde_json::from_str::<Value>(raw).map_err(|e| e.to_string())? {
        Value::Null => Ok(String::new()),
        Value::String(s) => Ok(s),
        Value::Array(parts) => {
            let mut text = String::new();
            for (i, p) in parts.iter().enumerate() {
                match (p.get("type").and_then(Value::as_str), p.get("text")) {
                    (Some("text"), Some(Value::String(t))) => text.push_str(t),
                    (Some("text"), _) => {
                        return Err(
                            format!("content[{i}]: a text part needs a string \"text\"").into()
                        )
                    }
                    (Some(_), _) => {}
                    (None, _) => {
                        return Err(format!("content[{i}]: a content part needs a \"type\"").into())
                    }
                }
            }
            Ok(text)
        }
        other => Err(format!(
            "content must be a string, null or a list of parts, got {}",
            crate::read::json::describe(&other)
        )
        .into()),
    }
}

/// The fast reader's pass over a conversation ([`crate::read::json::fast`]):
/// None when it gives up or the text does not read as a conversation, and
/// `serde_json` reads it instead. When it returns, it reads what
/// `serde_json` reads (`the_fast_reader_reads_what_serde_json_reads`):
/// a key given twice, a value of a type the message does not take, any
/// doubt, and it gives up.
mod fast {
    use crate::import::openai::{Call, Content, Function, Message, Read};
    use crate::read::json::fast::{Bail, Reader};
    use crate::read::json::Node;

    pub(super) fn conversation(text: &str) -> Option<Read<'_>> {
        let mut r = Reader::new(text);
        r.ws();
        let read = if r.peek() == Some(b'[') {
            (messages(&mut r).ok()?, None, None, None)
        } else {
            let (mut list, mut run_id, mut scope, mut ts) = (None, None, None, None);
            let keys = ["messages", "run_id", "scope", "ts"];
            object(&mut r, &keys, |r, key| {
                match key {
                    0 => list = Some(messages(r)?),
                    1 => run_id = Some(r.raw_value()?),
                    2 => scope = Some(r.raw_value()?),
                    _ => ts = Some(r.raw_value()?),
                }
                Ok(())
            })
            .ok()?;
            (list?, run_id, scope, ts)
        };
        r.ws();
        r.at_end().then_some(read)
    }

    /// An object's members (the reader at its `{`): each of `keys` read by
    /// `read` with its index, at most once (`serde_json` refuses a key
    /// given twice), the others skipped.
    fn object<'a>(
        r: &mut Reader<'a>,
        keys: &[&str],
        mut read: impl FnMut(&mut Reader<'a>, usize) -> Result<(), Bail>,
    ) -> Result<(), Bail> {
        r.ws();
        r.expect(b'{')?;
        let mut seen = 0u32;
        let mut first = true;
        while r.more_members(first)? {
            first = false;
            let key = r.key()?;
            match keys.iter().position(|k| *k == key) {
                Some(i) if seen & (1 << i) != 0 => return Err(Bail),
                Some(i) => {
                    seen |= 1 << i;
                    read(r, i)?;
                }
                None => r.skip_value()?,
            }
        }
        Ok(())
    }

    fn messages<'a>(
        r: &mut Reader<'a>,
    ) -> Result<Vec<Result<Message<'a>, crate::import::not_imported::NotImported>>, Bail> {
        r.expect(b'[')?;
        let mut out = Vec::new();
        let mut first = true;
        while r.more_items(first)? {
            first = false;
            out.push(Ok(message(r)?));
        }
        Ok(out)
    }

    /// A string or null (`Option<Cow<str>>`); anything else gives up.
    fn text<'a>(r: &mut Reader<'a>) -> Result<Option<std::borrow::Cow<'a, str>>, Bail> {
        match r.value()? {
            Node::Str(s) => Ok(Some(s)),
            Node::Null => Ok(None),
            _ => Err(Bail),
        }
    }

    /// Any value's JSON text, None for null (`Option<&RawValue>`).
    fn raw<'a>(r: &mut Reader<'a>) -> Result<Option<&'a str>, Bail> {
        let v = r.raw_value()?;
        Ok((v != "null").then_some(v))
    }

    const MESSAGE_KEYS: [&str; 7] = [
        "role",
        "content",
        "tool_calls",
        "tool_call_id",
        "function_call",
        "name",
        "critic",
    ];

    fn message<'a>(r: &mut Reader<'a>) -> Result<Message<'a>, Bail> {
        let mut m = Message::default();
        let mut role = false;
        object(r, &MESSAGE_KEYS, |r, key| {
            match key {
                0 => {
                    m.role = text(r)?;
                    role = true;
                }
                1 => {
                    // A tool's result is checked, and read when needed; a
                    // system prompt (often the longest text of the line,
                    // and never read) is only checked.
                    let unread = matches!(
                        m.role.as_deref(),
                        Some("tool" | "function" | "system" | "developer")
                    );
                    m.content = match r.peek() {
                        Some(b'"') if unread => Some(Content::Written(r.raw_value()?)),
                        Some(b'"') => text(r)?.map(Content::Text),
                        _ => raw(r)?.map(Content::Json),
                    };
                }
                2 => {
                    m.tool_calls = match r.peek() {
                        Some(b'[') => Some(items(r)?),
                        _ => match r.value()? {
                            Node::Null => None,
                            _ => return Err(Bail),
                        },
                    }
                }
                3 => m.tool_call_id = text(r)?,
                4 => m.function_call = raw(r)?,
                5 => m.name = text(r)?,
                _ => m.critic = raw(r)?,
            }
            Ok(())
        })?;
        // `role` has no default: a message without one is `serde_json`'s
        // to refuse.
        match role {
            true => Ok(m),
            false => Err(Bail),
        }
    }

    /// A tool call as `serde_json` reads it into [`Call`], or None.
    pub(super) fn call(raw: &str) -> Option<Call<'_>> {
        let mut r = Reader::new(raw);
        let (mut id, mut function) = (None, None);
        object(&mut r, &["id", "function"], |r, key| {
            match key {
                0 => id = text(r)?,
                _ => function = function_of(r)?,
            }
            Ok(())
        })
        .ok()?;
        r.ws();
        r.at_end().then_some(Call { id, function })
    }

    /// A call's `function`: null, or `{"name", "arguments"}`.
    fn function_of<'a>(r: &mut Reader<'a>) -> Result<Option<Function<'a>>, Bail> {
        if r.peek() != Some(b'{') {
            return match r.value()? {
                Node::Null => Ok(None),
                _ => Err(Bail),
            };
        }
        let (mut name, mut arguments) = (None, None);
        object(r, &["name", "arguments"], |r, key| {
            match key {
                0 => name = text(r)?,
                _ => arguments = text(r)?,
            }
            Ok(())
        })?;
        Ok(Some(Function { name, arguments }))
    }

    /// An array's items as JSON text.
    fn items<'a>(r: &mut Reader<'a>) -> Result<Vec<&'a str>, Bail> {
        r.expect(b'[')?;
        let mut out = Vec::new();
        let mut first = true;
        while r.more_items(first)? {
            first = false;
            out.push(r.raw_value()?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(s: &str) -> Result<Vec<RawTurn>, crate::import::not_imported::NotImported> {
        turns(s, "t.jsonl", 3, History::None)
    }

    /// The turns of a conversation share its calls, and each sees them as
    /// they stood when it replied: a result that comes back after a turn
    /// is not that turn's, and later turns see it (the list each turn
    /// copied held the same).
    #[test]
    fn a_turn_sees_the_results_back_by_its_reply() {
        let line = concat!(
            r#"[{"role":"user","content":"check both"},"#,
            r#"{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}},{"id":"b","function":{"name":"","arguments":"{}"}}]},"#,
            r#"{"role":"tool","tool_call_id":"a","content":"A"},"#,
            r#"{"role":"assistant","content":"Still waiting on one."},"#,
            r#"{"role":"tool","tool_call_id":"b","content":"B"},"#,
            r#"{"role":"assistant","content":"Both back."}]"#
        );
        for history in [History::None, History::Conversation] {
            let t = turns(line, "t.jsonl", 1, history).unwrap();
            let seen = |i: usize| -> Vec<(String, Option<String>)> {
                t[i].tool_calls
                    .iter()
                    .map(|c| {
                        (
                            c.name.to_string(),
                            c.result.as_ref().map(|r| r.text().into_owned()),
                        )
                    })
                    .collect()
            };
            let s = |x: &str| x.to_string();
            assert_eq!(seen(0), [(s("f"), Some(s("A"))), (s(""), None)]);
            assert_eq!(seen(1), [(s("f"), Some(s("A"))), (s(""), Some(s("B")))]);
            // As the gate reads them: the empty name is falsy.
            let c = crate::import::raw::convert(t[1].clone(), &Default::default()).unwrap();
            use crate::read::reader::Converted;
            use crate::read::turn::ToolCall;
            assert_eq!(
                c.turn().tool_calls[..],
                [ToolCall::Named(s("f")), ToolCall::Falsy]
            );
            assert_eq!(
                crate::read::turn::Turn::parse(&c.line())
                    .unwrap()
                    .tool_calls,
                c.turn().tool_calls
            );
        }
    }

    /// Matching results to calls looks at a bounded number of calls per
    /// call and result: it scanned every call made so far (a 6 MB line
    /// took 10.8 s, a 15 MB one 56 s, only to be refused).
    #[test]
    fn matching_results_to_calls_is_linear() {
        for history in [History::None, History::Conversation] {
            let mut m = vec![r#"{"role":"user","content":"go"}"#.to_string()];
            let n = 2_000;
            for i in 0..n {
                m.push(format!(
                    r#"{{"role":"assistant","content":null,"tool_calls":[{{"id":"c{i}","function":{{"name":"f","arguments":"{{}}"}}}}]}}"#
                ));
                m.push(format!(
                    r#"{{"role":"tool","tool_call_id":"c{i}","content":"r"}}"#
                ));
                // Legacy calls too, answered by name.
                m.push(format!(
                    r#"{{"role":"assistant","content":null,"function_call":{{"name":"g{i}","arguments":"{{}}"}}}}"#
                ));
                m.push(format!(
                    r#"{{"role":"function","name":"g{i}","content":"r"}}"#
                ));
            }
            m.push(r#"{"role":"assistant","content":"done"}"#.to_string());
            let line = format!(r#"{{"messages":[{}]}}"#, m.join(","));
            LOOKED_AT.with(|c| c.set(0));
            let t = turns(&line, "t.jsonl", 1, history);
            let looked = LOOKED_AT.with(|c| c.get());
            assert!(
                looked <= 10 * n,
                "{history:?}: {looked} calls looked at for {n} calls and results"
            );
            // 4,000 calls in one turn: refused, naming the cap, and
            // history only where the deployment passes it.
            let e = t.unwrap_err().0;
            assert!(e.contains("more than 1024 tool calls"), "{e}");
            assert_eq!(
                e.contains("conversation"),
                history == History::Conversation,
                "{history:?}: {e}"
            );
        }
    }

    /// Calls of an empty id are answered first call first: the results of
    /// two went to them last call first.
    #[test]
    fn calls_of_an_empty_id_get_their_results_in_order() {
        let line = r#"{"messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "", "function": {"name": "first", "arguments": "{}"}},
                {"id": "", "function": {"name": "second", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "", "content": "one"},
            {"role": "tool", "tool_call_id": "", "content": "two"},
            {"role": "assistant", "content": "done"}
        ]}"#
        .replace('\n', "");
        let t = one(&line).unwrap();
        let got: Vec<(String, String)> = t[0]
            .tool_calls
            .iter()
            .map(|c| {
                (
                    c.name.to_string(),
                    c.result.as_ref().unwrap().text().into_owned(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("first".into(), "one".into()),
                ("second".into(), "two".into())
            ]
        );
    }

    #[test]
    fn turns_user_messages_and_calls() {
        let line = r#"{"messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "Check order 7"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": "{\"id\": 7}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "shipped"},
            {"role": "assistant", "content": [{"type": "text", "text": "It "}, {"type": "text", "text": "shipped."}]},
            {"role": "user", "content": "thanks"},
            {"role": "assistant", "content": "Got it!", "critic": {"verdict": "approve"}}
        ]}"#
        .replace('\n', "");
        let t = one(&line).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(&*t[0].run_id, "t.jsonl:3");
        assert_eq!((t[0].turn, t[1].turn), (0, 1));
        assert_eq!(t[0].completion, Captured::Whole("It shipped.".into()));
        let calls = t[0].tool_calls.to_vec();
        assert_eq!(calls[0].args.as_deref(), Some("{\"id\": 7}"));
        assert_eq!(
            calls[0].result.as_ref().map(|r| r.text()),
            Some("shipped".into())
        );
        assert!(t[1].tool_calls.is_empty());
        assert_eq!(t[1].critic_origin, Origin::Recorded);
        let t = turns(&line, "t.jsonl", 3, History::Conversation).unwrap();
        assert_eq!(t[1].tool_calls.len(), 1);
    }

    /// Published trajectories (tau-bench's, a quarter of gpt-4o's airline
    /// conversations) give a new call the id of one already answered: each
    /// result answers the latest call of its id that has none.
    #[test]
    fn an_id_used_again_after_its_result_is_a_new_call() {
        let call = |name: &str| {
            format!(
                r#"{{"role": "assistant", "content": null, "tool_calls": [{{"id": "c1", "type": "function", "function": {{"name": "{name}", "arguments": "{{}}"}}}}]}}"#
            )
        };
        let result = |text: &str| {
            format!(r#"{{"role": "tool", "tool_call_id": "c1", "content": "{text}"}}"#)
        };
        let line = format!(
            r#"[{{"role": "user", "content": "find a flight"}}, {}, {}, {}, {}, {{"role": "assistant", "content": "Two options."}}]"#,
            call("search_direct"),
            result("none direct"),
            call("search_onestop"),
            result("one via ATL"),
        );
        let t = one(&line).unwrap();
        let calls: Vec<_> = t[0]
            .tool_calls
            .iter()
            .map(|c| {
                (
                    c.name.to_string(),
                    c.result.as_ref().map(|r| r.text().into_owned()),
                )
            })
            .collect();
        assert_eq!(
            calls,
            [
                ("search_direct".to_string(), Some("none direct".to_string())),
                (
                    "search_onestop".to_string(),
                    Some("one via ATL".to_string())
                )
            ]
        );
        // Two calls of one id, neither answered: which one a result then
        // answers is unknown.
        let both = format!(
            r#"[{{"role": "user", "content": "x"}}, {}, {}]"#,
            call("a"),
            call("b")
        );
        assert!(one(&both).unwrap_err().0.contains("share the id \"c1\""));
        // A result for a call already answered.
        let twice = format!(
            r#"[{{"role": "user", "content": "x"}}, {}, {}, {}]"#,
            call("a"),
            result("1"),
            result("2")
        );
        assert!(one(&twice).unwrap_err().0.contains("answered twice"));
    }

    /// Keys of a generated message (two spell `role` and `content` again).
    const KEYS: [&str; 10] = [
        "role",
        "content",
        "tool_calls",
        "tool_call_id",
        "name",
        "critic",
        "function_call",
        "x",
        "r\\u006fle",
        "content",
    ];

    /// Values of a generated message's keys.
    const VALUES: [&str; 28] = [
        r#""user""#,
        r#""assistant""#,
        r#""tool""#,
        r#""system""#,
        r#""developer""#,
        r#""function""#,
        "null",
        "3",
        r#""c1""#,
        r#""f""#,
        r#""a\"b \u00e9\n\/""#,
        r#""\ud83d\ude00 ok""#,
        r#""\ud800""#,
        "[]",
        "{}",
        r#"[{"type":"text","text":"x"},{"type":"text","text":"y"}]"#,
        r#"[{"type":"image_url","image_url":{}}]"#,
        r#"[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]"#,
        r#"[{"function":{"name":"g"}}]"#,
        r#"[{"id":null,"function":{"name":"h","arguments":null,"x":[]}},{"id":"c1","id":"c2","function":{"name":"f"}}]"#,
        r#"[{"id":"c9","function":null},{"id":"c8","function":{"name":5}},{"function":{"name":"f","name":"g"}}]"#,
        r#"[{"id":"c\u0031","type":"function","function":{"name":"f\u00e9","arguments":"{\"a\": [1e400]}"}}, 7]"#,
        r#"{"name":"f","arguments":"{}"}"#,
        r#"{"verdict":"approve"}"#,
        r#"{"verdict":"nope"}"#,
        "1e400",
        "-0",
        "[1, [2, {}]]",
    ];

    /// Conversations built from the pieces where a reader could go wrong
    /// (keys given twice or escaped, nulls, values of the wrong type,
    /// escapes, surrogates, white space, unknown keys, lists of parts):
    /// the fast reader reads what `serde_json` reads, or leaves it to it.
    #[test]
    fn the_fast_reader_reads_what_serde_json_reads() {
        use proptest::prelude::*;
        let piece = (0..KEYS.len(), 0..VALUES.len(), 0..3usize);
        let message = prop::collection::vec(piece, 0..7);
        let conversation = (
            prop::collection::vec(message, 0..6),
            0..4usize,
            any::<bool>(),
        );
        let ws = [" ", "", "\n\t ", ""];
        proptest!(ProptestConfig::with_cases(3000), |((messages, shape, history) in conversation)| {
            let messages: Vec<String> = messages
                .iter()
                .map(|m| {
                    let members: Vec<String> = m
                        .iter()
                        .map(|&(k, v, w)| format!("{}\"{}\"{}:{}{}", ws[w], KEYS[k], ws[w], ws[w], VALUES[v]))
                        .collect();
                    format!("{{{}}}", members.join(","))
                })
                .collect();
            let list = format!("[{}]", messages.join(", "));
            let text = match shape {
                0 => list,
                1 => format!(r#"{{"messages": {list}, "run_id": "r", "scope": {{"t": 1}}}}"#),
                2 => format!(r#"{{"ts": null, "messages": {list}, "messages": []}}"#),
                _ => format!(r#" {{"messages":{list},"run_id":null,"x":[1e400]}} "#),
            };
            let history = if history { History::Conversation } else { History::None };
            prop_assert_eq!(
                turns(&text, "t.jsonl", 1, history),
                turns_by_serde_json(&text, "t.jsonl", 1, history),
                "{}", text
            );
        });
    }

    /// Tool calls built from the pieces of one (keys given twice, nulls,
    /// values of the wrong type, escapes): the fast reader reads each as
    /// `serde_json` does, or leaves it to it.
    #[test]
    fn the_fast_reader_reads_calls_as_serde_json_does() {
        use proptest::prelude::*;
        const CALL_KEYS: [&str; 5] = ["id", "type", "function", "x", "i\\u0064"];
        const FUNCTION_KEYS: [&str; 4] = ["name", "arguments", "x", "n\\u0061me"];
        const VALUES: [&str; 10] = [
            r#""c1""#,
            "null",
            "5",
            r#""f\u00e9""#,
            r#""{\"a\": 1}""#,
            r#""{\"a\": 1e400}""#,
            r#""not json""#,
            "[]",
            r#"{"a":"\ud800"}"#,
            r#""""#,
        ];
        let member = |keys: usize| (0..keys, 0..VALUES.len());
        let function = prop::collection::vec(member(FUNCTION_KEYS.len()), 0..4);
        let call = prop::collection::vec(
            (member(CALL_KEYS.len()), prop::option::of(function.clone())),
            0..5,
        );
        let object = |m: Vec<String>| format!("{{{}}}", m.join(", "));
        proptest!(ProptestConfig::with_cases(3000), |(members in call)| {
            let text = object(
                members
                    .iter()
                    .map(|((k, v), f)| match f {
                        Some(f) => {
                            let f = f.iter().map(|(k, v)| format!("\"{}\": {}", FUNCTION_KEYS[*k], VALUES[*v]));
                            format!("\"function\": {}", object(f.collect()))
                        }
                        None => format!("\"{}\": {}", CALL_KEYS[*k], VALUES[*v]),
                    })
                    .collect(),
            );
            prop_assert_eq!(parse_call(&text, true), parse_call(&text, false), "{}", text);
        });
    }

    #[test]
    fn bad_conversations_say_why() {
        for (line, why) in [
            (r#"{"run_id": "a"}"#, "needs \"messages\""),
            (
                r#"[{"role": "tool", "tool_call_id": "x", "content": "1"}]"#,
                "messages[0]: tool message answers tool_call_id \"x\", which no earlier",
            ),
            (
                r#"[{"role": "robot"}]"#,
                "role \"robot\" is not a chat role",
            ),
            (
                r#"[{"role": "user", "content": 3}]"#,
                "content must be a string",
            ),
            (r#"[{"role": "user", "content": "hi"}]"#, "has no turn"),
            (
                "[1]",
                "messages[0]: not a chat message: invalid type: integer `1`, expected struct Message at",
            ),
            (
                r#"{"messages": [], "run_id": 5}"#,
                "run_id must be a string",
            ),
            (
                r#"{"messages": [{"role": "assistant", "content": "x"}"#,
                "not a conversation",
            ),
            ("nonsense", "not a JSON object or array"),
        ] {
            let e = one(line).unwrap_err().0;
            assert!(e.contains(why), "{line}: {e}");
        }
    }
}
