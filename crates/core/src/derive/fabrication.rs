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
use super::scan::{self, Caps};
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
/// translator (so `\b`, `\s` and IGNORECASE are CPython's). Only the key
/// prefix is searched with them: the other four are matched by hand
/// ([`super::scan`]), and kept here as the exact oracle of its tests.
struct Patterns {
    #[cfg(test)]
    verb: Pattern,
    #[cfg(test)]
    uuid: Pattern,
    #[cfg(test)]
    short_hex: Pattern,
    #[cfg(test)]
    kv: Pattern,
    key_prefix: Pattern,
}

/// One pattern in both of the translator's forms: `regex`'s own, exact
/// wherever `regex`'s `\b` agrees with CPython's (every ASCII text but one
/// with U+001C..U+001F), and the exact one (CPython's `\b` spelled out with
/// look-arounds, for the backtracking engine) for the other texts.
struct Pattern {
    native: regex::Regex,
    exact: fancy_regex::Regex,
}

/// A match's `n` groups, from a getter of either engine's captures.
fn caps(n: usize, get: &dyn Fn(usize) -> Option<(usize, usize)>) -> Caps {
    Caps((0..n).map(get).collect())
}

/// A search the exact engine could not finish (its stack ran out): the
/// turn's findings are unknown, never taken as none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unsearched {
    /// The exact engine could not finish a search of the draft.
    Draft,
    /// A tool call's value nests deeper than [`MAX_GROUNDING_DEPTH`]:
    /// Python's `str()` of it is not written here (CPython's own limit
    /// depends on its stack).
    DeepValue,
    /// The draft's identifiers match the grounding text more than
    /// [`MATCHES_PER_BYTE`] times a byte (identifiers that are each
    /// other's suffixes in a repetitive text): the search stops there.
    Dense,
}

/// Every kind of finding this check makes (the reader tallies a recorded
/// kind outside them as `(other)`; a test holds the two lists alike).
pub use crate::read::turn::FINDING_KINDS;

/// How deep a tool call's value may nest for its `str()` to be written.
pub const MAX_GROUNDING_DEPTH: usize = 128;

impl std::fmt::Display for Unsearched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Unsearched::Draft => {
                "the fabrication patterns could not be searched to the end of the draft"
            }
            Unsearched::DeepValue => {
                "a tool call's value nests deeper than 128 arrays and objects, so the grounding text cannot be written"
            }
            Unsearched::Dense => {
                "the draft's identifiers match the grounding text more than 8 times a byte, so the search was stopped"
            }
        })
    }
}

impl std::error::Error for Unsearched {}

impl Pattern {
    /// `finditer`: every match, left to right (`agree`: the native form
    /// may run on `text`). A match the exact engine cannot finish is an
    /// error, never a shorter list.
    #[cfg(test)]
    fn all(&self, text: &str, agree: bool) -> Result<Vec<Caps>, Unsearched> {
        if agree && self.native.captures_len() == 1 {
            // No groups: the match alone (no capture pass).
            return Ok(self
                .native
                .find_iter(text)
                .map(|m| Caps(vec![Some((m.start(), m.end()))]))
                .collect());
        }
        if agree {
            return Ok(self
                .native
                .captures_iter(text)
                .map(|c| caps(c.len(), &|i| c.get(i).map(|m| (m.start(), m.end()))))
                .collect());
        }
        self.exact
            .captures_iter(text)
            .map(|c| {
                let c = c.map_err(|_| Unsearched::Draft)?;
                Ok(caps(c.len(), &|i| c.get(i).map(|m| (m.start(), m.end()))))
            })
            .collect()
    }

    /// `search`: the first match.
    fn first(&self, text: &str, agree: bool) -> Result<Option<Caps>, Unsearched> {
        Ok(match agree {
            true => self
                .native
                .captures(text)
                .map(|c| caps(c.len(), &|i| c.get(i).map(|m| (m.start(), m.end())))),
            false => self
                .exact
                .captures(text)
                .map_err(|_| Unsearched::Draft)?
                .map(|c| caps(c.len(), &|i| c.get(i).map(|m| (m.start(), m.end())))),
        })
    }

    /// The index of the named group.
    fn group(&self, name: &str) -> usize {
        self.native
            .capture_names()
            .position(|n| n == Some(name))
            .expect("a group of the pattern")
    }
}

fn compile(pattern: &str, ignore_case: bool) -> Pattern {
    let t = crate::gate::pyre::translate(pattern, ignore_case).expect("symfonic's patterns");
    Pattern {
        native: regex::Regex::new(&t.native).expect("symfonic's patterns compile"),
        // No step budget: CPython's `re` has none, and these patterns are
        // linear (no nested repetition), so a search of a long draft ends;
        // the default budget (a million steps over the whole search) lost
        // every match past it on a long draft with one non-ASCII character.
        exact: fancy_regex::RegexBuilder::new(&t.exact)
            .backtrack_limit(usize::MAX)
            .build()
            .expect("symfonic's patterns compile"),
    }
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| Patterns {
        #[cfg(test)]
        verb: compile(
            r"\b(?P<verb>I\s+(?P<action>ran|called|invoked|executed|queried|triggered|launched|fetched|started|stopped|posted|updated|deleted|created|spawned|sent|delivered|dispatched|checked|retrieved|pulled|pushed))\b",
            true,
        ),
        #[cfg(test)]
        uuid: compile(
            r"\b[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}\b",
            false,
        ),
        #[cfg(test)]
        short_hex: compile(r"\b[0-9a-fA-F]{6,16}\b", false),
        #[cfg(test)]
        kv: compile(
            r"\b([A-Za-z][A-Za-z0-9_]{1,31})\s*[:=]\s*([A-Za-z0-9][A-Za-z0-9_\-./]{0,127})\b",
            false,
        ),
        key_prefix: compile(r"(?P<key>[A-Za-z][A-Za-z0-9_]{1,31})\s*[:=]\s*$", false),
    })
}

/// Byte offsets to code points for one text, built on the first match
/// (most drafts have none): the byte offset where each code point starts,
/// and the text's length (none for an ASCII text, where the two are the
/// same).
struct Points<'t> {
    text: &'t str,
    starts: std::cell::OnceCell<Option<Vec<usize>>>,
}

impl<'t> Points<'t> {
    fn of(text: &'t str) -> Points<'t> {
        Points {
            text,
            starts: std::cell::OnceCell::new(),
        }
    }

    fn starts(&self) -> Option<&[usize]> {
        self.starts
            .get_or_init(|| {
                (!self.text.is_ascii()).then(|| {
                    self.text
                        .char_indices()
                        .map(|(i, _)| i)
                        .chain([self.text.len()])
                        .collect()
                })
            })
            .as_deref()
    }

    /// The code point at byte offset `byte` (a char boundary).
    fn cp(&self, byte: usize) -> usize {
        match self.starts() {
            None => byte,
            Some(p) => p.partition_point(|&b| b < byte),
        }
    }

    /// The byte offset of code point `cp`.
    fn byte(&self, cp: usize) -> usize {
        match self.starts() {
            None => cp,
            Some(p) => p[cp],
        }
    }
}

/// The deployment's inputs to `detect_fabrication` for one turn.
pub struct Inputs<'a> {
    pub draft: &'a str,
    /// The turn's tool calls as symfonic collects them (objects with
    /// `name`/`tool`/`tool_name` and `result`/`output`/`response`/`args`/`input`),
    /// as JSON text: Python's `str()` of a dict keeps its keys in the order
    /// written, which a parsed `Value` does not.
    /// Each call as JSON text (an object).
    pub tool_calls: ToolCalls<'a>,
    pub hydrated_context: &'a str,
    pub user_message: &'a str,
    pub identifier_keys: &'a [String],
    pub intent: Option<&'a IntentVerdict>,
}

/// A turn's tool calls, each as JSON text: written already, or written
/// only when a claim needs grounding in them (most turns have none, and
/// writing a call with its result costs more than the whole check).
#[derive(Clone, Copy)]
pub enum ToolCalls<'a> {
    Written(&'a [&'a str]),
    /// How many calls, and how to write them.
    Lazy(usize, &'a dyn Fn() -> Vec<String>),
}

impl ToolCalls<'_> {
    fn is_empty(&self) -> bool {
        match self {
            ToolCalls::Written(t) => t.is_empty(),
            ToolCalls::Lazy(n, _) => *n == 0,
        }
    }
}

/// `detect_fabrication(...)`, each finding as its event payload, in
/// upstream order, one per (identifier, kind); Err when a search could not
/// be finished (the findings are then unknown).
pub fn detect(i: &Inputs) -> Result<Vec<Finding>, Unsearched> {
    let text = py_strip(i.draft);
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let points = Points::of(text);
    // Built on the first candidate identifier (most drafts have none).
    // A corpus that cannot be written (a value nested too deep) makes the
    // findings unknown: noted here, returned once the searches are done.
    let written = std::cell::OnceCell::new();
    let texts = std::cell::OnceCell::new();
    let calls = || -> &[&str] {
        match i.tool_calls {
            ToolCalls::Written(t) => t,
            ToolCalls::Lazy(_, write) => texts.get_or_init(|| {
                let w: &Vec<String> = written.get_or_init(write);
                w.iter().map(String::as_str).collect::<Vec<&str>>()
            }),
        }
    };
    // The fired tools' names, read on the first claim.
    let names = std::cell::OnceCell::new();
    let names = || -> &[String] { names.get_or_init(|| tool_names(calls())) };
    // The built-in keys (lower-case already), then the deployment's.
    let mut keys: Vec<std::borrow::Cow<str>> = DEFAULT_KEYS.iter().map(|k| (*k).into()).collect();
    keys.extend(i.identifier_keys.iter().map(|k| crate::gate::py_lower(k)));
    let t = Text {
        text,
        points: &points,
    };
    // The draft is scanned once. Then the identifiers it asks about are
    // gathered (whether one is grounded only decides whether it is a
    // finding, never what is asked next), the grounding text is searched
    // once for all of them (once per identifier was identifiers x corpus:
    // a 4.6 MB line took 9.8 s), and the scan is judged against it.
    let scanned = Scanned::of(&t, &names);
    let asked = std::cell::RefCell::new(Vec::new());
    identifiers(
        &t,
        &keys,
        &scanned,
        &|ident| {
            asked.borrow_mut().push(ident.to_string());
            true
        },
        &mut Vec::new(),
    )?;
    let asked = asked.into_inner();
    if asked.is_empty() {
        return findings(i, &t, &keys, &scanned, &|_| true);
    }
    let corpus = grounding(calls(), i.hydrated_context, i.user_message)?;
    let found = Grounded::search(&corpus, &asked)?;
    findings(i, &t, &keys, &scanned, &|ident| found.holds(ident))
}

/// Which of the identifiers a draft asks about the grounding text holds,
/// found in one pass over it (Aho-Corasick, every overlapping match).
struct Grounded {
    /// The distinct non-empty identifiers, sorted, and whether each was
    /// found; a binary search answers `holds` (no hashing per question).
    patterns: Vec<String>,
    found: Vec<bool>,
    /// Whether the corpus holds the empty identifier: any non-empty one.
    empty: bool,
}

/// The matches one search may report per byte of the grounding text
/// before its findings are unknown: identifiers that are each other's
/// suffixes, matched at every byte of a repetitive text, report one match
/// each per byte (`Unsearched::Dense`).
pub const MATCHES_PER_BYTE: usize = 8;

/// Up to this many distinct identifiers are searched one by one rather
/// than through an automaton (at most MATCHES_PER_BYTE, so the budget
/// above cannot be reached by them).
const FEW_PATTERNS: usize = MATCHES_PER_BYTE;

impl Grounded {
    fn search(corpus: &str, asked: &[String]) -> Result<Grounded, Unsearched> {
        // Python's `ident in corpus`: the empty corpus grounds nothing
        // (`if corpus and ident in corpus`), the empty identifier is in
        // every other text.
        let mut patterns: Vec<String> = asked.iter().filter(|p| !p.is_empty()).cloned().collect();
        patterns.sort_unstable();
        patterns.dedup();
        let mut g = Grounded {
            found: vec![false; patterns.len()],
            patterns,
            empty: !corpus.is_empty(),
        };
        if corpus.is_empty() || g.patterns.is_empty() {
            return Ok(g);
        }
        // A few identifiers (nearly every draft that has any) are each
        // searched on their own: a pass each is still linear in the
        // corpus, and building an automaton per turn cost more than the
        // searches (derivation on chat transcripts ran at a quarter of its
        // speed). No more than MATCHES_PER_BYTE patterns can ever reach the
        // match budget, so `Dense` cannot arise on this path either.
        if g.patterns.len() <= FEW_PATTERNS {
            for (p, f) in g.patterns.iter().zip(g.found.iter_mut()) {
                *f = memchr::memmem::find(corpus.as_bytes(), p.as_bytes()).is_some();
            }
            return Ok(g);
        }
        // The noncontiguous NFA is the cheapest to build; one search over
        // one turn's corpus does not repay a DFA.
        let ac = aho_corasick::AhoCorasick::builder()
            .kind(Some(aho_corasick::AhoCorasickKind::NoncontiguousNFA))
            .build(&g.patterns)
            .expect("identifiers from a draft build an automaton");
        let budget = MATCHES_PER_BYTE * corpus.len() + 1024;
        let mut left = g.patterns.len();
        for (n, m) in ac.find_overlapping_iter(corpus).enumerate() {
            if n >= budget {
                return Err(Unsearched::Dense);
            }
            let f = &mut g.found[m.pattern().as_usize()];
            if !*f {
                *f = true;
                left -= 1;
                if left == 0 {
                    break;
                }
            }
        }
        Ok(g)
    }

    fn holds(&self, ident: &str) -> bool {
        if ident.is_empty() {
            return self.empty;
        }
        match self.patterns.binary_search_by(|p| p.as_str().cmp(ident)) {
            Ok(i) => self.found[i],
            Err(_) => false,
        }
    }
}

/// What one scan of the draft finds, before any identifier is looked up in
/// the grounding text: judged twice (once to gather the identifiers, once
/// with their answers), so the scans must not run twice.
struct Scanned {
    verb_findings: Vec<Finding>,
    verb_spans: Vec<[usize; 2]>,
    uuids: Vec<Caps>,
    hex_words: Vec<Caps>,
    key_values: Vec<Caps>,
}

impl Scanned {
    fn of<'n>(t: &Text, names: &dyn Fn() -> &'n [String]) -> Scanned {
        let mut verb_findings = Vec::new();
        let verb_spans = verb_claims(t, names, &mut verb_findings);
        let (hex_words, uuid_starts) = scan::hex_words(t.text);
        let uuids = match uuid_starts.is_empty() {
            false => scan::uuids(t.text, &uuid_starts),
            true => Vec::new(),
        };
        Scanned {
            verb_findings,
            verb_spans,
            uuids,
            hex_words,
            key_values: scan::key_values(t.text),
        }
    }
}

/// The findings of a scanned draft, asking `grounded` whether the
/// grounding text holds each identifier.
fn findings(
    i: &Inputs,
    t: &Text,
    keys: &[std::borrow::Cow<str>],
    s: &Scanned,
    grounded: &dyn Fn(&str) -> bool,
) -> Result<Vec<Finding>, Unsearched> {
    let mut out = s.verb_findings.clone();
    identifiers(t, keys, s, grounded, &mut out)?;
    out.extend(
        i.intent
            .and_then(|v| intent_without_tool(v, i.tool_calls.is_empty())),
    );
    let mut seen = std::collections::HashSet::new();
    out.retain(|f| seen.insert((f.identifier.clone(), f.kind)));
    Ok(out)
}

/// The findings about identifiers (UUIDs, short hex runs, key=value
/// pairs) of a scanned draft, in upstream order; with a `grounded` that
/// answers true, only the questions it is asked.
fn identifiers(
    t: &Text,
    keys: &[std::borrow::Cow<str>],
    s: &Scanned,
    grounded: &dyn Fn(&str) -> bool,
    out: &mut Vec<Finding>,
) -> Result<(), Unsearched> {
    let uuid_spans = uuids(t, &s.uuids, grounded, out);
    if !s.hex_words.is_empty() {
        short_hex(
            t,
            &s.hex_words,
            keys,
            &s.verb_spans,
            &uuid_spans,
            grounded,
            out,
        )?;
    }
    key_values(t, &s.key_values, keys, grounded, out);
    Ok(())
}

/// The stripped draft and its code points.
struct Text<'a> {
    text: &'a str,
    points: &'a Points<'a>,
}

/// Claims of an action no fired tool of its kind grounds; the spans of
/// every claim (grounded or not: they anchor short hex runs).
fn verb_claims<'n>(
    t: &Text,
    names: &dyn Fn() -> &'n [String],
    out: &mut Vec<Finding>,
) -> Vec<[usize; 2]> {
    let (text, points) = (t.text, t.points);
    let mut spans = Vec::new();
    let (verb_group, action_group) = (1, 2);
    for c in scan::claims(text) {
        let (start, end) = c.span(0);
        let span = [points.cp(start), points.cp(end)];
        spans.push(span);
        let action = crate::gate::py_lower(c.str(text, action_group)).into_owned();
        if verb_grounded(&action, names()) {
            continue;
        }
        let verb = c.str(text, verb_group);
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
    t: &Text,
    found: &[Caps],
    grounded: &dyn Fn(&str) -> bool,
    out: &mut Vec<Finding>,
) -> Vec<[usize; 2]> {
    let mut spans = Vec::new();
    for c in found {
        let (start, end) = c.span(0);
        let ident = c.str(t.text, 0);
        let span = [t.points.cp(start), t.points.cp(end)];
        spans.push(span);
        if grounded(ident) {
            continue;
        }
        out.push(Finding {
            identifier: ident.to_string(),
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
    t: &Text,
    matches: &[Caps],
    keys: &[std::borrow::Cow<str>],
    verb_spans: &[[usize; 2]],
    uuid_spans: &[[usize; 2]],
    grounded: &dyn Fn(&str) -> bool,
    out: &mut Vec<Finding>,
) -> Result<(), Unsearched> {
    let (text, points) = (t.text, t.points);
    let p = patterns();
    let key_group = p.key_prefix.group("key");
    for c in matches {
        let (m_start, m_end) = c.span(0);
        let (ident, start, end) = (c.str(text, 0), points.cp(m_start), points.cp(m_end));
        if uuid_spans.iter().any(|&[s, e]| start < e && end > s)
            || ident.bytes().all(|b| b.is_ascii_digit())
            || grounded(ident)
        {
            continue;
        }
        // `text[max(0, start - 32):start]`, in code points.
        let prefix = &text[points.byte(start.saturating_sub(NEAR_KEY))..m_start];
        // A prefix of at most 32 code points: the exact engine is cheap
        // here whatever the text.
        let agree = crate::gate::pyre::native_boundaries_agree(prefix);
        let key = p
            .key_prefix
            .first(prefix, agree)?
            .map(|c| c.str(prefix, key_group).to_ascii_lowercase())
            .filter(|k| keys.iter().any(|x| x == k));
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
    Ok(())
}

/// `key=value` pairs whose key is an identifier key.
fn key_values(
    t: &Text,
    found: &[Caps],
    keys: &[std::borrow::Cow<str>],
    grounded: &dyn Fn(&str) -> bool,
    out: &mut Vec<Finding>,
) {
    for c in found {
        let (start, end) = c.span(0);
        let (raw_key, value) = (c.str(t.text, 1), c.str(t.text, 2));
        let key = raw_key.to_ascii_lowercase();
        if !keys.iter().any(|k| *k == key) || grounded(value) {
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
            span: [t.points.cp(start), t.points.cp(end)],
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
fn tool_names(calls: &[&str]) -> Vec<String> {
    calls
        .iter()
        .filter_map(|c| {
            // `call.get(key)`: a repeated key keeps its last value, as here.
            let fields = crate::read::turn::object_entries(c)?;
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
fn grounding(calls: &[&str], hydrated: &str, user: &str) -> Result<String, Unsearched> {
    let mut parts: Vec<String> = Vec::new();
    if !user.is_empty() {
        parts.push(user.to_string());
    }
    if !hydrated.is_empty() {
        parts.push(hydrated.to_string());
    }
    for call in calls {
        // `call.get(key)`: a repeated key keeps its last value, as here.
        let Some(fields) = crate::read::turn::object_entries(call) else {
            continue;
        };
        for key in ["result", "output", "response", "args", "input"] {
            let Some((_, v)) = fields.iter().find(|(k, _)| k == key) else {
                continue;
            };
            // A value JSON cannot hold as a number (`1e400`, Python's
            // `inf`) is written by `py_repr`, never left out.
            // `py_repr` recurses: a value nested past any real tool's
            // output is no text to write, never a stack overflow.
            match v.get().trim_start().as_bytes().first() {
                Some(b'n') => {} // null
                Some(b'"') => parts.push(serde_json::from_str(v.get()).expect("a JSON string")),
                _ if super::pytext::json_depth(v.get()) > MAX_GROUNDING_DEPTH => {
                    return Err(Unsearched::DeepValue)
                }
                _ => parts.push(py_repr(v.get())),
            }
        }
    }
    Ok(parts.join("\n"))
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
        // An integer is exact in Python however long (`json.loads` reads
        // `12345678901234567890123` as an int, not a float).
        Err(_) if is_integer(raw) => match raw.trim() {
            "-0" => "0".into(),
            t => t.to_string(),
        },
        // A number that is not an integer is `float(literal)` in Python,
        // whatever its range (`1e400` is `inf`).
        Err(_) => match super::pytext::py_float_literal(raw) {
            Some(x) => py_float(x),
            None => match serde_json::from_str::<Value>(raw) {
                Ok(Value::Null) => "None".into(),
                Ok(Value::Bool(true)) => "True".into(),
                Ok(Value::Bool(false)) => "False".into(),
                Ok(Value::String(s)) => repr(&s),
                _ => raw.to_string(),
            },
        },
    }
}

/// Whether JSON text is an integer literal (`-`, then digits only).
fn is_integer(raw: &str) -> bool {
    let t = raw.trim();
    let digits = t.strip_prefix('-').unwrap_or(t);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
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
    // `{:e}` gives the fewest digits that read back; where two such
    // decimals are equally near (a tie), Rust takes the upper, Python
    // (`_Py_dg_dtoa`, mode 0) the even one. `{:.N$e}` rounds the exact
    // value to that many digits, half to even, so it agrees with Python on
    // ties and with `{:e}` everywhere else.
    let shortest = format!("{:e}", x);
    let digits = shortest
        .split_once('e')
        .expect("{:e} has an exponent")
        .0
        .bytes()
        .filter(u8::is_ascii_digit)
        .count();
    let sci = format!("{:.*e}", digits - 1, x);
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

    /// The kinds the reader keeps are the kinds this check makes: every
    /// kind written here (`kind: "..."`, and the short-hex pair) is one of
    /// [`FINDING_KINDS`], and each of those is written here.
    #[test]
    fn the_reader_keeps_the_kinds_this_check_makes() {
        let src = include_str!("fabrication.rs");
        let mut made: Vec<&str> = src
            .split("kind: \"")
            .skip(1)
            .map(|r| &r[..r.find('"').unwrap()])
            .chain(["short_hex_near_key", "short_hex_near_verb"])
            .filter(|k| !k.is_empty() && k.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
            .collect();
        made.sort_unstable();
        made.dedup();
        made.retain(|k| *k != "intent_no_grounding"); // a pattern_kind, not a kind
        assert!(
            src.contains("\"short_hex_near_key\",\n") && src.contains("\"short_hex_near_verb\",\n")
        );
        assert_eq!(made, FINDING_KINDS);
    }

    /// #47 item 7: the grounding text is searched once for every
    /// identifier, with the answer of one search per identifier
    /// (`ident in corpus`) on arbitrary identifiers and texts, overlapping
    /// and empty ones included.
    #[test]
    fn one_search_answers_as_one_per_identifier() {
        use proptest::prelude::*;
        let word = "[ab01-]{0,6}";
        let case = (proptest::collection::vec(word, 0..12), "[ab01 -]{0,60}");
        proptest!(ProptestConfig::with_cases(5_000), |((idents, corpus) in case)| {
            let g = Grounded::search(&corpus, &idents).unwrap();
            for id in &idents {
                prop_assert_eq!(g.holds(id), !corpus.is_empty() && corpus.contains(id.as_str()), "{:?} in {:?}", id, corpus);
            }
        });
    }

    /// Identifiers that are each other's suffixes in a repetitive text
    /// match at every byte, one match each: past the budget the findings
    /// are unknown, never the search run to its end.
    #[test]
    fn a_dense_search_is_stopped_and_said() {
        let idents: Vec<String> = (8..40)
            .map(|n| "a".repeat(n))
            .chain(["zz".into()])
            .collect();
        let corpus = "a".repeat(1 << 20);
        assert_eq!(
            Grounded::search(&corpus, &idents).err(),
            Some(Unsearched::Dense)
        );
        // Without the identifier nowhere in it, the search ends once
        // every one is found.
        assert!(Grounded::search(&corpus, &idents[..32]).is_ok());
    }

    /// Texts made of what the patterns look for, and of the characters
    /// where a hand matcher could part from CPython: non-ASCII word
    /// characters (letters, a digit, `ß`) and non-word ones (curly quotes,
    /// an em-dash, emoji, a combining accent, ZWJ), CPython's white space
    /// beyond ASCII's (U+001C, NBSP, U+2028, U+3000), and the letters
    /// IGNORECASE folds onto ASCII (`ı`, `İ`, `ſ`, the Kelvin sign).
    fn any_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let piece = prop_oneof![
            Just("I ".to_string()),
            Just("i\t".to_string()),
            Just("I\x0b".to_string()),
            Just("xI ".to_string()),
            Just("I  SENT".to_string()),
            Just("ran".to_string()),
            Just("started_".to_string()),
            Just("stopped".to_string()),
            Just("ı ".to_string()),
            Just("İ\u{3000}".to_string()),
            Just("I\u{a0}ſent".to_string()),
            Just("I \u{212a}checked".to_string()),
            Just("chec\u{212a}ed".to_string()),
            Just("-".to_string()),
            Just("_".to_string()),
            Just(" ".to_string()),
            Just(".".to_string()),
            Just("/".to_string()),
            Just(":".to_string()),
            Just("=".to_string()),
            Just(" = ".to_string()),
            Just("task_id".to_string()),
            Just("\u{2019}".to_string()),
            Just("\u{201c}".to_string()),
            Just("\u{2014}".to_string()),
            Just("\u{2705}".to_string()),
            Just("\u{1f600}".to_string()),
            Just("\u{200d}".to_string()),
            Just("e\u{301}".to_string()),
            Just("\u{e9}".to_string()),
            Just("\u{df}".to_string()),
            Just("\u{663}".to_string()),
            Just("\u{1c}".to_string()),
            Just("\u{2028}".to_string()),
            "[0-9a-fA-F]{1,14}",
            "[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{10,13}",
            "[a-zA-Z0-9_ ]{1,12}",
            "[a-z0-9./_-]{1,40}",
        ];
        proptest::collection::vec(piece, 0..24).prop_map(|v| v.concat())
    }

    fn spans(c: &[Caps]) -> Vec<Vec<Option<(usize, usize)>>> {
        c.iter().map(|c| c.0.clone()).collect()
    }

    /// The words (CPython's `\w`) that open with 8 hex digits, as every
    /// UUID does.
    fn words_opening_with_8_hex(text: &str) -> Vec<usize> {
        text.char_indices()
            .filter(|&(i, _)| {
                let before = text[..i].chars().next_back();
                !before.is_some_and(crate::gate::pyre::is_word)
                    && text[i..].bytes().take_while(u8::is_ascii_hexdigit).count() >= 8
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// Every hand matcher against the exact engine (CPython's `\b`, `\s`
    /// and IGNORECASE, with look-arounds, on the backtracking engine).
    fn assert_hand_matchers_agree(text: &str) {
        let p = patterns();
        assert_eq!(
            spans(&scan::claims(text)),
            spans(&p.verb.all(text, false).unwrap()),
            "claims in {text:?}"
        );
        let (words, uuid_starts) = scan::hex_words(text);
        assert_eq!(
            spans(&scan::uuids(text, &uuid_starts)),
            spans(&p.uuid.all(text, false).unwrap()),
            "uuids in {text:?}"
        );
        assert_eq!(
            spans(&words),
            spans(&p.short_hex.all(text, false).unwrap()),
            "hex words in {text:?}"
        );
        assert_eq!(
            uuid_starts,
            words_opening_with_8_hex(text),
            "hex openings in {text:?}"
        );
        assert_eq!(
            spans(&scan::key_values(text)),
            spans(&p.kv.all(text, false).unwrap()),
            "key-values in {text:?}"
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(4000))]
        /// The hand matchers find what the patterns find, on any text.
        #[test]
        fn hand_matchers_match_the_patterns(text in any_text()) {
            assert_hand_matchers_agree(&text);
        }
    }

    /// Cases a random text rarely builds: a key or value at its length
    /// limits, a value that must give back characters to end on a word
    /// boundary, and matches that start right where the last one ended.
    #[test]
    fn hand_matchers_at_the_limits() {
        let long_key = "k".repeat(32);
        let longer_key = "k".repeat(33);
        let value = "v".repeat(128);
        for text in [
            format!("{long_key}=1 {longer_key}=2 x{long_key}:3"),
            format!("task_id={value}a job_id={value}.x"),
            "id=ab.\u{e9} id=ab./ id=ab-- id: \u{3000}7f".to_string(),
            "a1=xy:zz=9 ab=cd=ef ab:=cd \u{e9}ab=1 _ab=1 ab\u{a0}=\u{2028}c".to_string(),
            "I ran.I sent I\u{2019}ve I checked\u{e9} I sent\u{2019} \u{e9}I ran".to_string(),
            "0123456789abcdef0123456789abcdef \u{e9}deadbeef deadbeef\u{e9} deadbeef\u{2019}"
                .to_string(),
            "12345678-1234-1234-1234-123456789abc\u{e9} 12345678-1234-1234-1234-123456789abc-1"
                .to_string(),
        ] {
            assert_hand_matchers_agree(&text);
        }
    }

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
