//! symfonic-core 9.12.0's `IntentClassifier().classify(query, domain)`
//! (`symfonic/agent/triage/intent.py` and `lexicon.py`), ported exactly:
//! the verdict a deployment with an intent mode on computes for a user
//! message before the gate sees the turn.
//!
//! The query is stripped (CPython's white space), NFC-normalised, cut into
//! tokens `\w[\w-]*` (CPython's `\w`) and lowercased; an action lane scores
//! action verbs, an action verb first and the domain's tool keywords found
//! in the lowered text; a knowledge lane scores knowledge verbs, one first
//! and a final `?`. Mixed or weak lanes are `ambiguous`.

use std::borrow::Cow;

use serde::Serialize;

use super::pytext::{ascii_class, nfc, repr_list, HYPHEN, UPPER, WORD};
use crate::gate::{py_lower, py_strip};

/// `lexicon.ACTION_VERBS`.
const ACTION_VERBS: [&str; 52] = [
    "run",
    "execute",
    "launch",
    "start",
    "stop",
    "restart",
    "kill",
    "terminate",
    "trigger",
    "fire",
    "invoke",
    "call",
    "create",
    "add",
    "insert",
    "register",
    "provision",
    "update",
    "patch",
    "modify",
    "edit",
    "set",
    "change",
    "rename",
    "delete",
    "remove",
    "drop",
    "destroy",
    "purge",
    "wipe",
    "deploy",
    "rollback",
    "scale",
    "reboot",
    "build",
    "publish",
    "ship",
    "release",
    "push",
    "upload",
    "download",
    "send",
    "post",
    "fetch",
    "pull",
    "sync",
    "backup",
    "restore",
    "schedule",
    "cancel",
    "please",
    "make",
];

/// `lexicon.KNOWLEDGE_VERBS`.
const KNOWLEDGE_VERBS: [&str; 28] = [
    "what",
    "who",
    "where",
    "when",
    "why",
    "how",
    "which",
    "explain",
    "describe",
    "tell",
    "show",
    "summarise",
    "summarize",
    "define",
    "recall",
    "remember",
    "list",
    "enumerate",
    "detail",
    "compare",
    "differentiate",
    "outline",
    "understand",
    "know",
    "mean",
    "refer",
    "think",
    "believe",
];

/// Both lexicons bucketed by word length and first letter, built once:
/// every token of a query is looked up in both, and most tokens share
/// their length and first letter with no word of either (a scan of the 52
/// action verbs was a third of the classifier's time on real user
/// messages; a binary search, a quarter).
struct Lexicons {
    /// Per bucket, its words and whether each is an action verb and a
    /// knowledge verb.
    buckets: Vec<Vec<(&'static str, bool, bool)>>,
}

/// The longest word either lexicon holds, with room to spare.
const LEXICON_MAX_LEN: usize = 16;

impl Lexicons {
    fn get() -> &'static Lexicons {
        static L: std::sync::OnceLock<Lexicons> = std::sync::OnceLock::new();
        L.get_or_init(|| {
            let mut buckets = vec![Vec::new(); LEXICON_MAX_LEN * 26];
            for w in ACTION_VERBS.iter().chain(&KNOWLEDGE_VERBS) {
                let slot = Lexicons::slot(w).expect("lexicon words are short and lower-case");
                let entry = (*w, ACTION_VERBS.contains(w), KNOWLEDGE_VERBS.contains(w));
                if !buckets[slot].contains(&entry) {
                    buckets[slot].push(entry);
                }
            }
            Lexicons { buckets }
        })
    }

    fn slot(t: &str) -> Option<usize> {
        let first = *t.as_bytes().first()?;
        (t.len() < LEXICON_MAX_LEN && first.is_ascii_lowercase())
            .then(|| t.len() * 26 + (first - b'a') as usize)
    }

    /// Whether `t` is an action verb, and whether a knowledge verb.
    fn of(&self, t: &str) -> (bool, bool) {
        let Some(slot) = Lexicons::slot(t) else {
            return (false, false);
        };
        self.buckets[slot]
            .iter()
            .find(|(w, _, _)| *w == t)
            .map_or((false, false), |&(_, a, k)| (a, k))
    }
}

fn is_action(t: &str) -> bool {
    Lexicons::get().of(t).0
}

fn is_knowledge(t: &str) -> bool {
    Lexicons::get().of(t).1
}

/// `IntentClassifier`'s defaults: `ambiguity_confidence_floor`,
/// `min_action_signals`.
const FLOOR: f64 = 0.55;
const MIN_ACTION_SIGNALS: usize = 2;

/// `IntentVerdict`, unrounded (as `classify` returns it).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IntentVerdict {
    pub label: &'static str,
    pub confidence: f64,
    pub matched_tool_keywords: Vec<String>,
    pub reasoning: String,
    pub action_score: f64,
    pub knowledge_score: f64,
}

impl IntentVerdict {
    fn empty(reasoning: &str) -> IntentVerdict {
        IntentVerdict {
            label: "ambiguous",
            confidence: 0.0,
            matched_tool_keywords: Vec::new(),
            reasoning: reasoning.to_string(),
            action_score: 0.0,
            knowledge_score: 0.0,
        }
    }
}

/// `lexicon.tokenize`: NFC, then every `\w[\w-]*`, lowercased.
pub fn tokenize(text: &str) -> Vec<String> {
    let text = nfc(text);
    words(&text).into_iter().map(Cow::into_owned).collect()
}

/// The lower-cased `\w[\w-]*` words of a normalised text (borrowed when
/// already lower-case).
fn words(text: &str) -> Vec<Cow<'_, str>> {
    match text.is_ascii() {
        true => ascii_words(text).collect(),
        false => any_words(text),
    }
}

/// [`words`] on any text, character by character.
fn any_words(text: &str) -> Vec<Cow<'_, str>> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        let word = crate::gate::pyre::is_word(c);
        match start {
            None if word => start = Some(i),
            Some(s) if !word && c != '-' => {
                out.push(py_lower(&text[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push(py_lower(&text[s..]));
    }
    out
}

/// [`words`] on an ASCII text, byte by byte (`\w` is `[A-Za-z0-9_]`),
/// one after another (a lowered text's words are borrowed from it).
fn ascii_words(text: &str) -> impl Iterator<Item = Cow<'_, str>> {
    let b = text.as_bytes();
    let class = |i: usize| ascii_class(b[i]);
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() && class(i) & WORD == 0 {
            i += 1;
        }
        if i == b.len() {
            return None;
        }
        let (s, mut upper) = (i, 0);
        while i < b.len() && class(i) & (WORD | HYPHEN) != 0 {
            upper |= class(i) & UPPER;
            i += 1;
        }
        Some(match upper != 0 {
            true => Cow::Owned(text[s..i].to_ascii_lowercase()),
            false => Cow::Borrowed(&text[s..i]),
        })
    })
}

/// The first token, and the distinct tokens that are action verbs and
/// knowledge verbs, each sorted; None without a token.
fn lexicon_hits<'t>(
    tokens: impl Iterator<Item = Cow<'t, str>>,
) -> Option<(Cow<'t, str>, Vec<String>, Vec<String>)> {
    let lexicons = Lexicons::get();
    let mut first = None;
    let (mut action, mut knowledge) = (Vec::new(), Vec::new());
    for t in tokens {
        let (a, k) = lexicons.of(&t);
        if a {
            action.push(t.to_string());
        }
        if k {
            knowledge.push(t.to_string());
        }
        if first.is_none() {
            first = Some(t);
        }
    }
    for hits in [&mut action, &mut knowledge] {
        hits.sort();
        hits.dedup();
    }
    first.map(|f| (f, action, knowledge))
}

/// `_match_tool_keywords`: the tools (sorted, once each) one of whose
/// keywords, lowered and NFC-normalised, is in the lowered, normalised
/// text. `keywords` is the domain's `tool_trigger_keywords`.
fn match_tool_keywords(
    text: &str,
    lowered_ascii: Option<&str>,
    keywords: &[(String, Vec<String>)],
) -> Vec<String> {
    if keywords.is_empty() {
        return Vec::new();
    }
    // An ASCII text is lowered once, by `classify`.
    let lowered = match lowered_ascii {
        Some(l) => Cow::Borrowed(l),
        None => Cow::Owned(nfc(&py_lower(text)).into_owned()),
    };
    let mut hits: Vec<String> = keywords
        .iter()
        .filter(|(_, kws)| {
            kws.iter()
                .filter(|kw| !kw.is_empty())
                .any(|kw| lowered.contains(nfc(&py_lower(kw)).as_ref()))
        })
        .map(|(tool, _)| tool.clone())
        .collect();
    hits.sort();
    hits.dedup();
    hits
}

/// `IntentClassifier().classify(query, domain)`, the domain given by its
/// `tool_trigger_keywords` (in the domain's order; empty for no domain).
pub fn classify(query: &str, keywords: &[(String, Vec<String>)]) -> IntentVerdict {
    let text = py_strip(query);
    if text.is_empty() {
        return IntentVerdict::empty("empty query");
    }
    let normalized = nfc(text);
    // On ASCII, tokenizing commutes with lowering: the text is lowered
    // once, and no token is lowered (or allocated) on its own.
    let lowered = text.is_ascii().then(|| py_lower(text));
    let hits = match &lowered {
        Some(l) => lexicon_hits(ascii_words(l)),
        None => lexicon_hits(any_words(&normalized).into_iter()),
    };
    let Some((first, action_hit, knowledge_hit)) = hits else {
        return IntentVerdict::empty("no tokens");
    };
    let first = &first;
    // `\?\s*$` on the stripped text: it ends with `?`.
    let is_question = text.ends_with('?');
    let tools = match_tool_keywords(text, lowered.as_deref(), keywords);
    let (first_action, first_knowledge) = (is_action(first), is_knowledge(first));
    let lane = |hit: &[String], first: bool, third: bool| {
        let mut score = 0.0;
        if !hit.is_empty() {
            score += 0.4 + 0.1 * (hit.len() - 1).min(3) as f64;
        }
        if first {
            score += 0.2;
        }
        if third {
            score += 0.3;
        }
        score
    };
    let action_score = lane(&action_hit, first_action, !tools.is_empty());
    let knowledge_score = lane(&knowledge_hit, first_knowledge, is_question);
    let signals = [!action_hit.is_empty(), first_action, !tools.is_empty()]
        .iter()
        .filter(|&&s| s)
        .count();
    let reasoning = reasoning(&action_hit, &knowledge_hit, is_question, &tools, first);
    let (label, confidence) = resolve(action_score, knowledge_score, signals, is_question);
    IntentVerdict {
        label,
        confidence,
        matched_tool_keywords: tools,
        reasoning,
        action_score,
        knowledge_score,
    }
}

/// `_resolve`: the label, and contested or weak turns collapsed to
/// ambiguous.
fn resolve(action: f64, knowledge: f64, signals: usize, question: bool) -> (&'static str, f64) {
    if action == 0.0 && knowledge == 0.0 {
        return ("ambiguous", 0.0);
    }
    if action > 0.0 && knowledge > 0.0 {
        let margin = (action - knowledge).abs();
        let total = action + knowledge;
        let dominant = action.max(knowledge);
        if margin < 0.2 || dominant / total < 0.65 {
            return ("ambiguous", dominant.min(0.5));
        }
    }
    if action > knowledge {
        if signals < MIN_ACTION_SIGNALS {
            return ("ambiguous", action.min(0.5));
        }
        if question && signals < MIN_ACTION_SIGNALS + 1 {
            return ("ambiguous", action.min(0.55));
        }
        let confidence = action.min(1.0);
        return match confidence < FLOOR {
            true => ("ambiguous", confidence),
            false => ("action", confidence),
        };
    }
    let confidence = knowledge.min(1.0);
    match confidence < FLOOR {
        true => ("ambiguous", confidence),
        false => ("knowledge", confidence),
    }
}

/// `_format_reasoning`.
fn reasoning(
    action: &[String],
    knowledge: &[String],
    question: bool,
    tools: &[String],
    first: &str,
) -> String {
    let mut parts = Vec::new();
    if !action.is_empty() {
        parts.push(format!("action_verbs={}", repr_list(action)));
    }
    if !knowledge.is_empty() {
        parts.push(format!("knowledge_verbs={}", repr_list(knowledge)));
    }
    if question {
        parts.push("question_mark".to_string());
    }
    if !tools.is_empty() {
        parts.push(format!("tools={}", repr_list(tools)));
    }
    if is_action(first) {
        parts.push(format!("first_token_action={first}"));
    } else if is_knowledge(first) {
        parts.push(format!("first_token_knowledge={first}"));
    }
    match parts.is_empty() {
        true => "no signals".to_string(),
        false => parts.join("; "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The ASCII tokenizer is the general one on ASCII text, on the
        /// text or on the text lowered first (as `classify` calls it).
        #[test]
        fn ascii_words_are_the_general_words(text in "[ -~\t\n\x0b\x0c\r\x1c-\x1f]{0,60}") {
            proptest::prop_assert_eq!(ascii_words(&text).collect::<Vec<_>>(), any_words(&text));
            let lowered = text.to_ascii_lowercase();
            proptest::prop_assert_eq!(ascii_words(&lowered).collect::<Vec<_>>(), any_words(&text));
        }
    }

    #[test]
    fn lexicon_lookups_are_the_lists() {
        for w in ACTION_VERBS.iter().chain(&KNOWLEDGE_VERBS) {
            assert_eq!(is_action(w), ACTION_VERBS.contains(w), "{w}");
            assert_eq!(is_knowledge(w), KNOWLEDGE_VERBS.contains(w), "{w}");
        }
        for w in ["", "runs", "ru", "whatever", "Run", "please!"] {
            assert!(!is_action(w) && !is_knowledge(w), "{w}");
        }
    }

    #[test]
    fn tokens_are_words_with_hyphens_lowered_after_nfc() {
        assert_eq!(
            tokenize("Re-run the BUILD, please!"),
            ["re-run", "the", "build", "please"]
        );
        assert_eq!(tokenize("-x- -"), ["x-"]);
        // "a" + U+0301 composes to "á": one token.
        assert_eq!(tokenize("gra\u{301}fica"), ["gráfica"]);
    }

    #[test]
    fn the_lexicons_are_symfonics() {
        let v = classify("Why was I charged twice?", &[]);
        assert_eq!(v.label, "knowledge");
        assert_eq!(
            v.reasoning,
            "knowledge_verbs=['why']; question_mark; first_token_knowledge=why"
        );
    }
}
