//! symfonic's critic gates (symfonic-core 9.12.0), ported exactly.
//!
//! - the legacy gate: `confidence < threshold or sensitive_hit is not None`;
//! - the smart gate (v8.2.0, `metacognition_selective_gate`): skip only when
//!   no hard floor holds and the draft is a trivial acknowledgement;
//! - the middleware's composition (`_resolve_gate_fires`): flag off, legacy
//!   only; flag on, smart only.
//!
//! An [`Evaluation`] keeps every signal the decision was made from, so every
//! report is derived from the values the gate computed, never recomputed.
//! Work that does not depend on the config (claims, the stripped length,
//! the lowercase copy) lives in [`DraftFeatures`], computed once per turn and
//! shared by every variant.

pub mod claims;
pub mod neutral;
pub mod pyre;
mod reasons;

use std::borrow::Cow;
use std::cell::{Cell, OnceCell};
use std::sync::Arc;

pub use claims::draft_has_claims;
pub use reasons::{Floor, Reason, Reasons};

use crate::config::{ConfigError, FrameworkConfig};
use crate::read::turn::{SensitiveField, ToolCall, Turn};
use pyre::PySet;

pub use crate::config::{builtin_language, BUILTIN_ACK_LANGUAGES, BUILTIN_ACK_PATTERNS};

/// Drafts longer than this many code points are never trivial acks.
pub const MAX_ACK_CHARS: usize = 160;

/// `str.strip()` with CPython's whitespace (wider than `str::trim`).
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(pyre::is_space)
}

/// `str.rstrip()`: CPython's white space removed from the end.
pub fn py_rstrip(s: &str) -> &str {
    s.trim_end_matches(pyre::is_space)
}

/// `str.lower()`: full Unicode lowercasing (with final sigma), borrowed when
/// nothing changes.
pub fn py_lower(s: &str) -> Cow<'_, str> {
    if s.is_ascii() {
        if s.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(s.to_ascii_lowercase())
        } else {
            Cow::Borrowed(s)
        }
    } else if has_newly_cased(s) {
        Cow::Owned(lower_keeping_newly_cased(s))
    } else {
        Cow::Owned(s.to_lowercase())
    }
}

/// Letters that Rust's Unicode lowercases and CPython 3.11's (Unicode 14,
/// where they are unassigned) leaves as they are (a test holds this list to
/// every character's `str.lower()`).
const CASED_SINCE_UNICODE_14: [(char, char); 9] = [
    ('\u{1c89}', '\u{1c89}'),
    ('\u{a7cb}', '\u{a7cc}'),
    ('\u{a7ce}', '\u{a7ce}'),
    ('\u{a7d2}', '\u{a7d2}'),
    ('\u{a7d4}', '\u{a7d4}'),
    ('\u{a7da}', '\u{a7da}'),
    ('\u{a7dc}', '\u{a7dc}'),
    ('\u{10d50}', '\u{10d65}'),
    ('\u{16ea0}', '\u{16eb8}'),
];

fn newly_cased(c: char) -> bool {
    pyre::in_ranges(&CASED_SINCE_UNICODE_14, c)
}

/// Whether `s` holds a letter of [`CASED_SINCE_UNICODE_14`]: their UTF-8
/// starts with 0xE1, 0xEA or 0xF0, so most texts are cleared by one
/// vectorised byte scan.
fn has_newly_cased(s: &str) -> bool {
    pyre::any_byte(s.as_bytes(), |b| matches!(b, 0xe1 | 0xea | 0xf0)) && s.chars().any(newly_cased)
}

/// `s.lower()` as CPython 3.11 computes it for a text with such letters:
/// each of them (and each U+FFFF already there) stands in as U+FFFF, an
/// unassigned code point as they are to CPython (so the final-sigma rule
/// sees them as CPython does), while the rest is lowered, then goes back.
fn lower_keeping_newly_cased(s: &str) -> String {
    const HOLE: char = '\u{ffff}';
    let mut kept = s.chars().filter(|&c| c == HOLE || newly_cased(c));
    let masked: String = s
        .chars()
        .map(|c| if newly_cased(c) { HOLE } else { c })
        .collect();
    masked
        .to_lowercase()
        .chars()
        .map(|c| match c {
            HOLE => kept.next().expect("a kept character per hole"),
            c => c,
        })
        .collect()
}

/// Whether `s` is longer than `n` code points, without counting past `n`.
fn longer_than(s: &str, n: usize) -> bool {
    s.len() > n && s.chars().nth(n).is_some()
}

/// What the trivial-ack check needs of a draft, independent of the config.
pub struct DraftFeatures<'d> {
    pub empty: bool,
    pub stripped: &'d str,
    /// Code points in the draft (`len(draft)`).
    pub chars: usize,
    /// `len(stripped) > 160`.
    pub too_long: bool,
    /// `draft_has_claims(draft)`. symfonic also tests the stripped draft; the
    /// two are equal because CPython's whitespace is never `\w`, a digit or
    /// a currency sign, so stripping cannot create or remove a match.
    pub claims: bool,
    lowered: OnceCell<Cow<'d, str>>,
    /// Ack-pattern answers, each with the address of the pattern set that
    /// gave it, in slots picked by that address: variants that share their
    /// patterns run them once per draft, also when a sweep interleaves
    /// several sets (a single slot made every variant search again).
    ack_memo: [Cell<Option<(usize, PatternCheck)>>; ACK_MEMO_SLOTS],
    /// [`Gate::ack_share`]'s answers, likewise.
    share_memo: [ShareSlot; ACK_MEMO_SLOTS],
}

/// Slots of [`DraftFeatures`]' ack memo (distinct pattern sets past this
/// may share a slot and search again: still exact).
const ACK_MEMO_SLOTS: usize = 8;

impl<'d> DraftFeatures<'d> {
    pub fn of(draft: &'d str) -> DraftFeatures<'d> {
        // One ASCII check spares the code-point walks below (most drafts).
        let ascii = draft.is_ascii();
        let stripped = py_strip(draft);
        DraftFeatures {
            empty: draft.is_empty(),
            stripped,
            chars: if ascii {
                draft.len()
            } else {
                draft.chars().count()
            },
            too_long: if ascii {
                stripped.len() > MAX_ACK_CHARS
            } else {
                longer_than(stripped, MAX_ACK_CHARS)
            },
            claims: claims::has_claims(draft, ascii),
            lowered: OnceCell::new(),
            ack_memo: [const { Cell::new(None) }; ACK_MEMO_SLOTS],
            share_memo: [const { Cell::new(None) }; ACK_MEMO_SLOTS],
        }
    }

    /// `stripped.lower()`, computed on first use.
    pub fn lowered(&self) -> &str {
        self.lowered.get_or_init(|| py_lower(self.stripped))
    }
}

/// The outcome of running the ack patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatternCheck {
    /// Not needed: the answer could not change the decision or any reason's
    /// standing as a sole blocker (e.g. a long draft with several floors).
    NotChecked,
    Matched,
    NoMatch,
    /// A backtracking pattern hit its limit: treated as FIRE, and reported.
    Aborted,
}

/// The trivial-ack check, each step recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckTrace {
    pub empty: bool,
    pub too_long: bool,
    pub claims: bool,
    pub pattern: PatternCheck,
}

impl AckTrace {
    /// `draft_is_trivial_ack(draft, patterns)`.
    pub fn is_trivial(&self) -> bool {
        !self.empty && !self.too_long && !self.claims && self.pattern == PatternCheck::Matched
    }
}

/// Where a turn's sensitive hit came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SensitiveSource {
    Recorded,
    ActivationLog,
}

/// Everything the gates computed for one turn under one config.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation<'t> {
    /// Resolved confidence (recorded, else computed from the log).
    pub confidence: f64,
    pub confidence_recorded: bool,
    /// Resolved sensitive hit.
    pub sensitive_hit: Option<&'t str>,
    pub sensitive_source: SensitiveSource,
    /// `confidence < threshold`.
    pub low_confidence: bool,
    pub threshold: f64,
    /// The hard floors that hold.
    pub floors: Reasons,
    pub ack: AckTrace,
    /// `metacognition_selective_gate`.
    pub selective: bool,
}

impl Evaluation<'_> {
    /// The legacy gate (`_gate_fires`).
    pub fn legacy_fires(&self) -> bool {
        self.low_confidence || self.sensitive_hit.is_some()
    }

    pub fn hard_fire(&self) -> bool {
        !self.floors.is_empty()
    }

    pub fn took_tool_action(&self) -> bool {
        self.floors.contains(Reason::MutatingTool)
    }

    pub fn draft_has_claims(&self) -> bool {
        self.ack.claims
    }

    pub fn draft_is_trivial_ack(&self) -> bool {
        self.ack.is_trivial()
    }

    /// The smart gate: fire unless `not hard_fire and draft_is_trivial_ack`.
    pub fn smart_fires(&self) -> bool {
        self.hard_fire()
            || !self.draft_is_trivial_ack()
            || self.ack.pattern == PatternCheck::Aborted
    }

    /// `_resolve_gate_fires`: the decision symfonic takes.
    pub fn fires(&self) -> bool {
        if self.selective {
            self.smart_fires()
        } else {
            self.legacy_fires()
        }
    }

    /// Why the legacy gate decided as it did.
    pub fn legacy_reasons(&self) -> Reasons {
        let mut r = Reasons::EMPTY;
        if self.low_confidence {
            r.insert(Reason::LowConfidence);
        }
        if self.sensitive_hit.is_some() {
            r.insert(Reason::SensitiveHit);
        }
        if r.is_empty() {
            r.insert(Reason::Confident);
        }
        r
    }

    /// Every reason the smart gate fires for (floors, then the ack check's
    /// failures), or `trivial_ack` when it skips.
    pub fn smart_reasons(&self) -> Reasons {
        let mut r = self.floors;
        if self.ack.empty {
            r.insert(Reason::EmptyDraft);
        }
        if self.ack.too_long {
            r.insert(Reason::TooLong);
        }
        match self.ack.pattern {
            PatternCheck::NoMatch => r.insert(Reason::NoAckPattern),
            PatternCheck::Aborted => r.insert(Reason::PatternAborted),
            PatternCheck::Matched | PatternCheck::NotChecked => {}
        }
        if r.is_empty() {
            r.insert(Reason::TrivialAck);
        }
        r
    }

    /// The reasons of the gate that decides (per the flag).
    pub fn reasons(&self) -> Reasons {
        if self.selective {
            self.smart_reasons()
        } else {
            self.legacy_reasons()
        }
    }
}

/// The ack patterns a config runs: its list, or the built-in set when the
/// list is empty (so a list that adds to the built-ins must spell them).
pub fn ack_patterns(config: &FrameworkConfig) -> Vec<String> {
    match config.metacognition_trivial_ack_patterns.is_empty() {
        true => BUILTIN_ACK_PATTERNS.iter().map(|p| p.to_string()).collect(),
        false => config.metacognition_trivial_ack_patterns.clone(),
    }
}

/// The letters and digits of `text` inside `spans` (sorted, disjoint),
/// and those outside them that are not in a neutral word (each maximal
/// run of uncovered letters and digits is a word).
/// Letters and digits: (in the matched acks, those of the longest, the
/// acks counting as one; outside them, function and courtesy words left
/// out), and whether a negation or contrast stands outside them.
fn count_letters(text: &str, spans: &[(usize, usize)]) -> (usize, usize, bool) {
    let (mut content, mut negated) = (0, false);
    for (at, word) in words_outside(text, spans) {
        // "won't", "can't", "don’t": a `t` after an apostrophe after `n`.
        let before = &text[..at];
        let nt = word == "t" && (before.ends_with("n'") || before.ends_with("n’"));
        negated |= nt || neutral::is_negation(word);
        if !neutral::is_neutral(word) {
            content += word.chars().count();
        }
    }
    // The acks count as one, the longest: a repeated ack ("thanks,
    // thanks so much, ... thanks") or a stack of different ones ("got it,
    // thanks, great, perfect, noted") in front of news does not outweigh
    // it.
    let covered = spans
        .iter()
        .map(|&(a, b)| text[a..b].chars().filter(|c| c.is_alphanumeric()).count())
        .max()
        .unwrap_or(0);
    (covered, content, negated)
}

/// The words (runs of letters and digits) of `text` outside `spans`
/// (sorted, disjoint byte ranges), with their byte offsets; a span cuts a
/// word.
fn words_outside<'t>(text: &'t str, spans: &[(usize, usize)]) -> Vec<(usize, &'t str)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut span = spans.iter().peekable();
    for (i, c) in text.char_indices() {
        while span.next_if(|(_, b)| *b <= i).is_some() {}
        let inside = span.peek().is_some_and(|(a, _)| *a <= i);
        let letter = c.is_alphanumeric() && !inside;
        match (letter, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, &text[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, &text[s..]));
    }
    out
}

/// One remembered ack share: the pattern list's address and its answer.
type ShareSlot = Cell<Option<(usize, Option<f64>)>>;

/// A pattern list, compiled as one set and as one set per pattern.
type CachedSets = (Vec<String>, Arc<PySet>, Arc<Vec<PySet>>);

/// Ack shares by pattern list (its first set's id) and lowered draft.
type Shares = std::collections::HashMap<u64, std::collections::HashMap<Box<str>, Option<f64>>>;

/// Where a draft's acks are, and how much of it they cover.
#[derive(Clone, Debug, PartialEq)]
pub struct AckCover {
    /// Covered letters and digits over the draft's, in [0, 1].
    pub share: f64,
    /// The byte ranges of the lowered draft the matches cover, merged.
    pub spans: Vec<(usize, usize)>,
    /// A negation or contrast stands outside the matches (the share is
    /// then 0: the draft says more than an ack).
    pub negated: bool,
}

/// A config compiled for evaluation: patterns compiled once.
pub struct Gate {
    config: FrameworkConfig,
    acks: Arc<PySet>,
    /// The same patterns, each alone: which one matches first, and where
    /// (for [`Gate::ack_share`]).
    each: Arc<Vec<PySet>>,
    read_only: Vec<String>,
}

/// Compiled ack-pattern sets by pattern list, so variants that share their
/// patterns (the usual case: only flags differ) compile them once.
#[derive(Default)]
pub struct PatternCache {
    sets: Vec<CachedSets>,
}

impl Gate {
    pub fn new(config: FrameworkConfig) -> Result<Gate, ConfigError> {
        Gate::new_cached(config, &mut PatternCache::default())
    }

    /// As [`Gate::new`], reusing (and filling) `cache`.
    pub fn new_cached(
        config: FrameworkConfig,
        cache: &mut PatternCache,
    ) -> Result<Gate, ConfigError> {
        config.validate()?;
        let patterns = ack_patterns(&config);
        let cached = cache
            .sets
            .iter()
            .find(|(p, _, _)| *p == patterns)
            .map(|(_, set, each)| (set.clone(), each.clone()));
        let acks = match cached {
            Some(sets) => Ok(sets),
            None => PySet::new(&patterns, true).and_then(|set| {
                // Each alone compiles too: the whole set did.
                let each = patterns
                    .iter()
                    .enumerate()
                    .map(|(i, p)| PySet::lazy(p, true).map_err(|(_, e)| (i, e)))
                    .collect::<Result<Vec<_>, _>>()?;
                let (set, each) = (Arc::new(set), Arc::new(each));
                cache.sets.push((patterns, set.clone(), each.clone()));
                Ok((set, each))
            }),
        };
        let acks = acks.map_err(|(i, e)| {
            ConfigError::value(if e.python_rejects {
                format!(
                    "metacognition_trivial_ack_patterns[{i}] = {:?} cannot be compiled: {}. \
                     CPython's re rejects it too, so symfonic itself would fail on this pattern \
                     and degrade every turn it reviews to FIRE; fix or remove the pattern.",
                    e.pattern, e.message
                )
            } else {
                format!(
                    "metacognition_trivial_ack_patterns[{i}] = {:?}: critic-gate cannot replay this \
                     construct yet ({}). CPython compiles it, so symfonic runs it; write the \
                     pattern without it to replay this config.",
                    e.pattern, e.message
                )
            })
        })?;
        let (acks, each) = acks;
        let mut read_only = config.read_only_tools.clone();
        read_only.sort();
        read_only.dedup();
        Ok(Gate {
            config,
            acks,
            each,
            read_only,
        })
    }

    /// This gate with `change` made to its config, its compiled ack
    /// patterns reused where the change keeps them (compiling a pattern
    /// set costs far more than a replay of a small file).
    pub fn changed(&self, change: impl FnOnce(&mut FrameworkConfig)) -> Result<Gate, ConfigError> {
        let mut config = self.config.clone();
        change(&mut config);
        let mut cache = PatternCache {
            sets: vec![(
                ack_patterns(&self.config),
                self.acks.clone(),
                self.each.clone(),
            )],
        };
        Gate::new_cached(config, &mut cache)
    }

    pub fn config(&self) -> &FrameworkConfig {
        &self.config
    }

    /// `took_tool_action`: any call that is not a named read-only tool.
    pub fn took_tool_action(&self, calls: &[ToolCall]) -> bool {
        calls.iter().any(|c| match c {
            ToolCall::Named(name) => self.read_only.binary_search(name).is_err(),
            _ => true,
        })
    }

    /// How much of the lowered, stripped draft its acks cover
    /// ([`Gate::ack_cover`]); None when no pattern matches. Variants
    /// sharing their patterns compute it once per draft.
    pub fn ack_share(&self, f: &DraftFeatures) -> Option<f64> {
        let set = Arc::as_ptr(&self.each) as usize;
        let slot = &f.share_memo[(set >> 4) % ACK_MEMO_SLOTS];
        if let Some((s, share)) = slot.get() {
            if s == set {
                return share;
            }
        }
        let share = self.remembered_share(f.lowered());
        slot.set(Some((set, share)));
        share
    }

    /// [`Gate::ack_cover`]'s share, remembered per pattern list and text on
    /// each thread: acks recur all day, and every match of every pattern
    /// costs more than the gate's one search.
    fn remembered_share(&self, lowered: &str) -> Option<f64> {
        thread_local! {
            static SHARES: std::cell::RefCell<Shares> = Default::default();
        }
        let id = self.each.first().map(pyre::PySet::id)?;
        if lowered.len() > pyre::MEMO_MAX_TEXT {
            return self.ack_cover(lowered).map(|c| c.share);
        }
        SHARES.with(|m| {
            let mut m = m.borrow_mut();
            let answers = m.entry(id).or_default();
            if let Some(a) = answers.get(lowered) {
                return *a;
            }
            let a = self.ack_cover(lowered).map(|c| c.share);
            if answers.len() >= pyre::MEMO_ENTRIES {
                answers.clear();
            }
            answers.insert(lowered.into(), a);
            a
        })
    }

    /// The union of every match of every pattern in `lowered`, and the
    /// share of its letters and digits it covers, function and courtesy
    /// words (`neutral`) left out ("OK, done." and "Thank you so much for
    /// your patience." are all ack; "Sure, but refunds are closed" is a
    /// fifth). A draft with nothing else that a pattern matches is all
    /// ack. None when no pattern matches.
    pub fn ack_cover(&self, lowered: &str) -> Option<AckCover> {
        let agree = Cell::new(None);
        let mut spans: Vec<(usize, usize)> = self
            .each
            .iter()
            .filter_map(|p| p.find_all(lowered, &agree).ok())
            .flatten()
            .collect();
        if spans.is_empty() {
            return None;
        }
        spans.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
        for (a, b) in spans {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        let (covered, content, negated) = count_letters(lowered, &merged);
        let share = match (negated, covered + content) {
            // A negation or contrast outside the ack: more than an ack.
            (true, _) => 0.0,
            (false, 0) => 1.0,
            (false, all) => covered as f64 / all as f64,
        };
        Some(AckCover {
            share,
            spans: merged,
            negated,
        })
    }

    /// The first pattern, in list order (as `any()` tries them), that
    /// matches `lowered`, and its first match's byte range: what `explain`
    /// shows. None when none matches (or one hits its backtracking limit).
    pub fn first_ack_match(&self, lowered: &str) -> Option<(usize, (usize, usize))> {
        let agree = Cell::new(None);
        self.each.iter().enumerate().find_map(|(i, p)| {
            let spans = p.find_all(lowered, &agree).ok()?;
            spans.into_iter().min().map(|s| (i, s))
        })
    }

    /// `any(re.search(p, lowered, re.IGNORECASE) for p in patterns)`.
    pub fn ack_pattern(&self, lowered: &str) -> PatternCheck {
        match self.acks.is_match(lowered) {
            Ok(true) => PatternCheck::Matched,
            Ok(false) => PatternCheck::NoMatch,
            Err(pyre::MatchAborted) => PatternCheck::Aborted,
        }
    }

    /// Evaluate one turn.
    pub fn evaluate<'t>(&self, turn: &'t Turn<'_>) -> Evaluation<'t> {
        let features = DraftFeatures::of(&turn.draft);
        self.evaluate_with(turn, &features)
    }

    /// Evaluate one turn whose draft features are already computed (shared
    /// by every variant of a replay).
    pub fn evaluate_with<'t>(&self, turn: &'t Turn<'_>, f: &DraftFeatures<'_>) -> Evaluation<'t> {
        let c = &self.config;
        let (confidence, confidence_recorded) = match (turn.confidence, &turn.activation_log) {
            (Some(x), _) => (x, true),
            (None, Some(log)) => (log.confidence, false),
            (None, None) => (crate::read::activation::COLD_CONFIDENCE, false),
        };
        let (sensitive_hit, sensitive_source) = match &turn.sensitive_hit {
            SensitiveField::Absent => (
                turn.activation_log
                    .as_ref()
                    .and_then(|l| l.sensitive_hit(&c.metacognition_sensitive_tags)),
                SensitiveSource::ActivationLog,
            ),
            SensitiveField::None => (None, SensitiveSource::Recorded),
            SensitiveField::Hit(s) => (Some(s.as_ref()), SensitiveSource::Recorded),
        };
        let mut floors = Reasons::EMPTY;
        if sensitive_hit.is_some() {
            floors.insert(Reason::Sensitive);
        }
        if turn.fabrication_findings > 0 {
            floors.insert(Reason::Fabrication);
        }
        if self.took_tool_action(&turn.tool_calls) {
            floors.insert(Reason::MutatingTool);
        }
        if matches!(turn.intent_label(), Some("action" | "ambiguous")) {
            floors.insert(Reason::Intent);
        }
        if f.claims {
            floors.insert(Reason::Claims);
        }
        // Run the patterns when symfonic would (a non-empty, short, claim-free
        // draft), and also when the answer decides whether a single other
        // reason is the sole blocker of a skip; never on empty drafts.
        let others = floors.len() + f.too_long as usize;
        let symfonic_checks = !f.empty && !f.too_long && !f.claims;
        let pattern = if symfonic_checks || (!f.empty && others <= 1) {
            let set = Arc::as_ptr(&self.acks) as usize;
            // Allocations are at least 16-byte aligned: skip the low bits.
            let slot = &f.ack_memo[(set >> 4) % ACK_MEMO_SLOTS];
            match slot.get() {
                Some((s, answer)) if s == set => answer,
                _ => {
                    let answer = self.ack_pattern(f.lowered());
                    slot.set(Some((set, answer)));
                    answer
                }
            }
        } else {
            PatternCheck::NotChecked
        };
        Evaluation {
            confidence,
            confidence_recorded,
            sensitive_hit,
            sensitive_source,
            low_confidence: confidence < c.metacognition_confidence_threshold,
            threshold: c.metacognition_confidence_threshold,
            floors,
            ack: AckTrace {
                empty: f.empty,
                too_long: f.too_long,
                claims: f.claims,
                pattern,
            },
            selective: c.metacognition_selective_gate,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{DraftFeatures, FrameworkConfig, Gate};

    /// Found by review: the share counted the first match only, so plain
    /// acks were "risky" ("OK, done." 0.22, "Got it, thanks!" 0.40). Every
    /// match of every pattern counts, over letters and digits.
    #[test]
    fn an_ack_share_is_every_match_over_letters() {
        let gate = Gate::new(FrameworkConfig {
            metacognition_selective_gate: true,
            ..FrameworkConfig::default()
        })
        .unwrap();
        let share = |d: &str| gate.ack_share(&DraftFeatures::of(d));
        for plain in [
            "OK, done.",
            "Got it, thanks!",
            "Sure thing, will do!",
            "Thanks — done 👍",
        ] {
            assert!(share(plain).unwrap() >= 0.6, "{plain}: {:?}", share(plain));
        }
        assert_eq!(share("OK, done."), Some(1.0));
        assert_eq!(share("Got it, thanks!"), Some(1.0));
        // A negation or contrast outside the ack makes it more than an ack.
        assert_eq!(
            share("Sure, but refunds are no longer possible on this plan."),
            Some(0.0)
        );
        // Digits count: an order number is more than an ack.
        let s = share("Done: order 48213 for 2 items").unwrap();
        assert!((s - 4.0 / 20.0).abs() < 1e-12, "{s}");
        assert_eq!(share("Thank you so much for your patience."), Some(1.0));
        assert_eq!(share("no ack in here"), None);
    }

    /// Found by review (#33): padding defeated the share. "Thanks, thanks
    /// so much, we will not refund you, thanks." scored 0.667 and "Okay, I
    /// won't do that." 0.571, neither risky. A negation or contrast outside
    /// the ack (also "n't") makes the share 0, and a repeated ack counts
    /// once; an ack phrase holding "no" ("no problem") is still all ack.
    #[test]
    fn negations_and_repeated_acks_do_not_pad_the_share() {
        let gate = Gate::new(FrameworkConfig {
            metacognition_selective_gate: true,
            ..FrameworkConfig::default()
        })
        .unwrap();
        let share = |d: &str| gate.ack_share(&DraftFeatures::of(d));
        for risky in [
            "Thanks, thanks so much, we will not refund you, thanks.",
            "Okay, I won't do that.",
            "Okay, I won’t do that.",
            "Got it, but the store is closed.",
            "Ok, aber das geht nicht.",
        ] {
            assert_eq!(share(risky), Some(0.0), "{risky}");
        }
        // Repeated: "thanks" counted once against "refund" and "order".
        let s = share("Thanks! Thanks! Thanks! Refund order.").unwrap();
        assert!((s - 6.0 / 17.0).abs() < 1e-12, "{s}");
        for plain in [
            "No problem, done!",
            "Thanks, no problem.",
            "Got it, thanks!",
        ] {
            assert_eq!(share(plain), Some(1.0), "{plain}");
        }
    }

    /// Found by review (#44): different acks stacked in front of news
    /// lifted it past the default 0.5 ("Got it, thanks, great, perfect,
    /// noted, the plan is cancelled." scored 0.683, not a risky skip).
    /// However many acks a draft holds, they count as one, the longest;
    /// a draft that is nothing but acks is still all ack.
    #[test]
    fn stacked_acks_count_as_one() {
        let gate = Gate::new(FrameworkConfig {
            metacognition_selective_gate: true,
            ..FrameworkConfig::default()
        })
        .unwrap();
        let share = |d: &str| gate.ack_share(&DraftFeatures::of(d)).unwrap();
        let stacked = share("Got it, thanks, great, perfect, noted, the plan is cancelled.");
        assert!(stacked < 0.5, "{stacked}");
        for plain in [
            "Got it, thanks, great, perfect, noted!",
            "OK, done.",
            "Thanks, noted.",
        ] {
            assert_eq!(share(plain), 1.0, "{plain}");
        }
    }

    /// Every character lowered alone as CPython 3.11 lowers it (its
    /// `str.lower()` table from `scripts/gen_unicode_tables.py`), and texts
    /// where the final sigma meets a letter Rust lowers and CPython keeps.
    #[test]
    fn lowering_is_cpythons() {
        let py: std::collections::HashMap<char, &str> =
            super::pyre::tables::PY_LOWER.iter().copied().collect();
        let mut wrong = Vec::new();
        for c in (0..=0x10ffff).filter_map(char::from_u32) {
            let text = c.to_string();
            let want = py.get(&c).copied().unwrap_or(&text);
            if super::py_lower(&text) != want {
                wrong.push(c);
            }
        }
        assert!(wrong.is_empty(), "{} characters: {wrong:?}", wrong.len());
        // From CPython 3.11: `s.lower()`.
        for (s, want) in [
            ("ΑΣ\u{a7cb}", "ας\u{a7cb}"),
            ("ΑΣ\u{a7cb}Β", "ας\u{a7cb}β"),
            ("\u{a7cb}Σ", "\u{a7cb}σ"),
            ("OK\u{a7cb}\u{ffff}\u{a7dc}Σ", "ok\u{a7cb}\u{ffff}\u{a7dc}σ"),
            ("A\u{10d50}b", "a\u{10d50}b"),
        ] {
            assert_eq!(super::py_lower(s), want, "{s:?}");
        }
    }

    /// What CPython 3.11's `re.compile(p, re.IGNORECASE)` says of each
    /// pattern (recorded by `scripts/cpython_pattern_verdicts.py`), beside
    /// what critic-gate does: it runs the pattern, refuses it as CPython
    /// does (symfonic would fail too), or says it cannot replay it yet
    /// (never claiming symfonic would fail on what CPython compiles).
    #[test]
    fn pattern_verdicts_agree_with_cpython_or_say_they_cannot_replay() {
        use crate::config::FrameworkConfig;
        enum Ours {
            Runs,
            RefusedAsPython(&'static str),
            CannotReplay(&'static str),
        }
        use Ours::*;
        let cases: [(&str, Result<(), &str>, Ours); 11] = [
            (
                r"\N{LATIN SMALL LETTER O}k",
                Ok(()),
                CannotReplay("named Unicode escapes"),
            ),
            (r"(o)?(?(1)k|z)", Ok(()), CannotReplay("conditional groups")),
            (r"(?a)\bs", Ok(()), CannotReplay("the ASCII flag")),
            (r"(?a)(?i)s", Ok(()), CannotReplay("the ASCII flag")),
            (r"(?a)s", Ok(()), CannotReplay("the ASCII flag")),
            (r"(x{1000}){1000}", Ok(()), CannotReplay("size limit")),
            (
                r"\1(o)",
                Err("invalid group reference 1 at position 1"),
                RefusedAsPython("invalid group reference 1 at position 1"),
            ),
            (
                r"(o\1)",
                Err("cannot refer to an open group at position 2"),
                RefusedAsPython("cannot refer to an open group at position 2"),
            ),
            (r"(?i)(?s)ok", Ok(()), Runs),
            (
                r"x(?i)",
                Err("global flags not at the start of the expression at position 1"),
                RefusedAsPython("global flags not at the start of the expression at position 1"),
            ),
            (r"(o)\1", Ok(()), Runs),
        ];
        for (pattern, cpython, ours) in cases {
            let cfg = FrameworkConfig {
                metacognition_trivial_ack_patterns: vec![pattern.to_string()],
                ..Default::default()
            };
            let got = Gate::new(cfg).map(|_| ()).map_err(|e| e.to_string());
            match (&ours, &got) {
                (Runs, Ok(())) => assert!(cpython.is_ok(), "{pattern}"),
                (RefusedAsPython(m), Err(e)) => {
                    assert!(cpython.is_err(), "{pattern}: CPython compiles it");
                    assert!(
                        e.contains(m) && e.contains("CPython's re rejects it too"),
                        "{pattern}: {e}"
                    );
                }
                (CannotReplay(m), Err(e)) => {
                    assert!(cpython.is_ok(), "{pattern}: CPython rejects it");
                    assert!(
                        e.contains(m) && e.contains("critic-gate cannot replay this construct yet"),
                        "{pattern}: {e}"
                    );
                    assert!(!e.contains("symfonic itself would fail"), "{pattern}: {e}");
                }
                (_, got) => panic!("{pattern}: got {got:?}"),
            }
        }
    }
    use super::*;

    fn gate(selective: bool) -> Gate {
        Gate::new(FrameworkConfig {
            metacognition_selective_gate: selective,
            ..Default::default()
        })
        .unwrap()
    }

    fn turn(json: &str) -> Turn<'_> {
        Turn::parse(json).unwrap()
    }

    #[test]
    fn cold_ack_legacy_fires_smart_skips() {
        let t = turn(r#"{"run_id":"r","draft":"Got it, thanks!"}"#);
        let legacy = gate(false).evaluate(&t);
        assert!(legacy.fires());
        assert_eq!(legacy.reasons().to_string(), "low_confidence");
        let smart = gate(true).evaluate(&t);
        assert!(!smart.fires());
        assert_eq!(smart.reasons().to_string(), "trivial_ack");
    }

    #[test]
    fn claims_fire_the_smart_gate() {
        let t = turn(r#"{"run_id":"r","draft":"Done. Q3 revenue was $4.2M."}"#);
        let e = gate(true).evaluate(&t);
        assert!(e.fires());
        assert_eq!(e.reasons().to_string(), "claims");
        // The pattern ran ("done" matches), so claims is the sole blocker.
        assert_eq!(e.ack.pattern, PatternCheck::Matched);
    }

    #[test]
    fn every_reason_is_kept() {
        let t = turn(
            r#"{"run_id":"r","draft":"Sure","intent_verdict":{"label":"action"},"tool_calls_this_turn":[{"name":"x"}],"sensitive_hit":"","fabrication_findings":[{}]}"#,
        );
        let e = gate(true).evaluate(&t);
        assert_eq!(
            e.reasons().to_string(),
            "sensitive;fabrication;mutating_tool;intent"
        );
        assert!(e.draft_is_trivial_ack());
        assert_eq!(
            e.legacy_reasons().to_string(),
            "low_confidence;sensitive_hit"
        );
    }

    #[test]
    fn long_drafts_with_one_floor_are_still_checked() {
        let long = format!("thanks {}", "y".repeat(200));
        let json = format!(r#"{{"run_id":"r","draft":"{long}"}}"#);
        let t = turn(&json);
        let e = gate(true).evaluate(&t);
        assert_eq!(e.ack.pattern, PatternCheck::Matched);
        assert_eq!(e.reasons().to_string(), "too_long");
        assert!(!e.draft_is_trivial_ack());
    }

    /// Two drafts where the port disagreed with symfonic: CPython 3.11
    /// neither lowercases U+A7CB (unassigned in its Unicode 14) nor counts
    /// it as a word character, so `ok` is an ack beside it; and its `\\B`
    /// never matches the empty text a blank draft strips to.
    #[test]
    fn newer_letters_and_blank_drafts_as_cpython() {
        let t = turn(r#"{"run_id":"r","draft":"ok\ua7cb"}"#);
        assert_eq!(gate(true).evaluate(&t).reasons().to_string(), "trivial_ack");
        let g = Gate::new(FrameworkConfig {
            metacognition_selective_gate: true,
            metacognition_trivial_ack_patterns: vec![r"\B".into()],
            ..Default::default()
        })
        .unwrap();
        let t = turn(r#"{"run_id":"r","draft":" "}"#);
        assert_eq!(g.evaluate(&t).reasons().to_string(), "no_ack_pattern");
    }

    #[test]
    fn whitespace_only_drafts_are_not_empty() {
        let f = DraftFeatures::of(" \u{1c} ");
        assert!(!f.empty);
        assert_eq!(f.stripped, "");
        let t = turn(r#"{"run_id":"r","draft":" "}"#);
        let e = gate(true).evaluate(&t);
        assert_eq!(e.reasons().to_string(), "no_ack_pattern");
    }

    #[test]
    fn python_strip_len_and_lower() {
        assert_eq!(py_strip("\u{1f}\u{1e}ok\u{85}\u{3000}"), "ok");
        assert_eq!(py_strip("\u{200b}ok"), "\u{200b}ok");
        assert_eq!(py_lower("İ"), "i\u{307}");
        assert_eq!(py_lower("ΣΑΣ ok"), "σας ok");
        assert!(!longer_than(&"é".repeat(160), 160));
        assert!(longer_than(&"é".repeat(161), 160));
    }

    #[test]
    fn bad_pattern_is_a_config_error_naming_it() {
        let e = Gate::new(FrameworkConfig {
            metacognition_trivial_ack_patterns: vec!["ok".into(), "(oops".into()],
            ..Default::default()
        })
        .err()
        .unwrap();
        assert!(
            e.to_string()
                .contains("metacognition_trivial_ack_patterns[1] = \"(oops\""),
            "{e}"
        );
        assert!(
            e.to_string()
                .contains("degrade every turn it reviews to FIRE"),
            "{e}"
        );
    }
}
