//! Python `re` compatibility: compile patterns written for CPython's `re`
//! (as symfonic adopters write them) so they match exactly as they would in
//! symfonic, using `regex` where it can and `fancy-regex` where it must.
//!
//! Where the two dialects differ, and what we do about it:
//! - `\w`, `\d`, `\s` follow CPython's `str` predicates, not UTS#18: they are
//!   rewritten into explicit classes generated from CPython (`tables.rs`).
//! - `\b`/`\B` are defined by CPython's `\w`. `regex` only knows its own
//!   word class, so each pattern is compiled twice: a *native* form that keeps
//!   `regex`'s `\b` (fast, and provably equal on any text that contains no
//!   character on which the two word/space/digit definitions disagree) and an
//!   *exact* form that spells `\b` as look-around over CPython's class
//!   (`fancy-regex`). [`PySet::is_match`] picks per haystack.
//! - Look-around, backreferences, atomic groups and conditionals need
//!   `fancy-regex`, run with a backtracking limit so a hostile pattern cannot
//!   hang a replay; hitting the limit is reported, never guessed.
//! - Under `re.IGNORECASE`, CPython also equates `i`/`ı`/`İ`; the translator
//!   adds them where an `i` can match.
//! - `$` is translated to `regex`'s `$` (end of text). CPython's `$` also
//!   matches before a final `\n`; the gate only ever matches stripped text,
//!   which cannot end in `\n`, so the two agree wherever the gate uses them.

pub mod tables;
mod translate;
mod windowed;

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

pub use translate::{translate, translate_for_empty_text, Refused, Translated};
use windowed::Windowed;

/// A translator: [`translate`], or [`translate_for_empty_text`].
type Translate = fn(&str, bool) -> Result<Translated, Refused>;

/// Texts at most this long (bytes) have their answers remembered.
pub const MEMO_MAX_TEXT: usize = 512;
/// Answers remembered per set and thread (then forgotten all at once).
pub const MEMO_ENTRIES: usize = 4096;

/// The memos' hash: xxh3 of a text in one call (SipHash, the default, was
/// 1% of a replay for the acks' short texts; the traffic is the user's own,
/// so flooding is not a concern).
#[derive(Clone, Copy, Default)]
struct TextHash;

/// The state of one [`TextHash`] hash.
#[derive(Default)]
struct TextHasher(u64);

impl std::hash::BuildHasher for TextHash {
    type Hasher = TextHasher;
    fn build_hasher(&self) -> TextHasher {
        TextHasher::default()
    }
}

impl std::hash::Hasher for TextHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0 = xxhash_rust::xxh3::xxh3_64_with_seed(bytes, self.0);
    }

    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        // One multiply spreads the bits (the set keys are addresses).
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type Memo<T> = HashMap<u64, HashMap<Box<str>, T, TextHash>, TextHash>;

thread_local! {
    /// Recent answers per set, on each thread. Acks repeat ("got it,
    /// thanks!"), and a non-ASCII haystack runs `regex`'s slowest engine
    /// (its DFA cannot decide a Unicode `\b` there): on the multilingual
    /// benchmark mix this was a quarter of a replay. A search is a pure
    /// function of the set and the text, so a remembered answer is exact.
    static MEMO: RefCell<Memo<Result<bool, MatchAborted>>> =
        RefCell::new(HashMap::default());
}

type Found = Result<Option<(usize, usize)>, MatchAborted>;

thread_local! {
    /// [`PySet::find`]'s answers, as `MEMO` holds `is_match`'s.
    static FIND_MEMO: RefCell<Memo<Found>> = RefCell::new(HashMap::default());
}

/// Steps fancy-regex may backtrack per match before giving up.
pub const BACKTRACK_LIMIT: usize = 200_000;

/// A sorted table of inclusive code-point ranges.
#[derive(Clone, Debug)]
pub struct CharTable {
    ranges: Vec<(char, char)>,
    /// The same set over the Basic Multilingual Plane, a bit per code
    /// point (8 KiB): one load per character instead of a binary search.
    bmp: Box<[u64; 1024]>,
}

impl CharTable {
    fn new(ranges: Vec<(char, char)>) -> CharTable {
        let mut bmp = Box::new([0u64; 1024]);
        for &(lo, hi) in &ranges {
            for c in lo as u32..=(hi as u32).min(0xffff) {
                bmp[c as usize >> 6] |= 1 << (c & 63);
            }
        }
        CharTable { ranges, bmp }
    }

    #[inline]
    pub fn contains(&self, c: char) -> bool {
        match c as u32 {
            n @ 0..=0xffff => self.bmp[n as usize >> 6] >> (n & 63) & 1 == 1,
            _ => in_ranges(&self.ranges, c),
        }
    }
}

/// Binary search of `c` in sorted, disjoint inclusive ranges.
#[inline]
pub fn in_ranges(ranges: &[(char, char)], c: char) -> bool {
    ranges
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// A set of code points of the Basic Multilingual Plane, a bit each,
/// built when compiling.
const fn bmp_of(ranges: &[(char, char)]) -> [u64; 1024] {
    let mut bits = [0u64; 1024];
    let mut r = 0;
    while r < ranges.len() {
        let mut c = ranges[r].0 as u32;
        while c <= ranges[r].1 as u32 && c <= 0xffff {
            bits[c as usize >> 6] |= 1 << (c & 63);
            c += 1;
        }
        r += 1;
    }
    bits
}

/// [`tables::PY_WORD`] over the BMP: a load per character of prose in
/// any script instead of a binary search of 700 ranges.
static PY_WORD_BMP: [u64; 1024] = bmp_of(tables::PY_WORD);

/// CPython `\w` (`str.isalnum()` or `_`).
#[inline]
pub fn is_word(c: char) -> bool {
    match c as u32 {
        0..=0x7f => c.is_ascii_alphanumeric() || c == '_',
        n @ 0x80..=0xffff => PY_WORD_BMP[n as usize >> 6] >> (n & 63) & 1 == 1,
        _ => in_ranges(tables::PY_WORD, c),
    }
}

/// CPython `\d` (`str.isdecimal()`).
#[inline]
pub fn is_decimal(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_digit()
    } else {
        in_ranges(tables::PY_DECIMAL, c)
    }
}

/// CPython `\s` (`str.isspace()`), which is also what `str.strip()` removes.
#[inline]
pub fn is_space(c: char) -> bool {
    if c.is_ascii() {
        matches!(c, '\t'..='\r' | '\x1c'..='\x1f' | ' ')
    } else {
        in_ranges(tables::PY_SPACE, c)
    }
}

/// The characters on which CPython's and `regex`'s `\w`, `\s` or `\d`
/// disagree. On text free of them, `regex`'s `\b` is CPython's `\b`.
fn disagreement() -> &'static CharTable {
    static TABLE: OnceLock<CharTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        use regex_syntax::hir::{ClassUnicode, ClassUnicodeRange, HirKind};
        let rust_class = |pat: &str| -> ClassUnicode {
            let hir = regex_syntax::Parser::new()
                .parse(pat)
                .expect("built-in class");
            match hir.kind() {
                HirKind::Class(regex_syntax::hir::Class::Unicode(c)) => c.clone(),
                _ => unreachable!("{pat} is a Unicode class"),
            }
        };
        let py_class = |t: &[(char, char)]| {
            ClassUnicode::new(t.iter().map(|&(a, b)| ClassUnicodeRange::new(a, b)))
        };
        let mut all = ClassUnicode::empty();
        for (pat, table) in [
            (r"\w", tables::PY_WORD),
            (r"\s", tables::PY_SPACE),
            (r"\d", tables::PY_DECIMAL),
        ] {
            let mut diff = rust_class(pat);
            diff.symmetric_difference(&py_class(table));
            all.union(&diff);
        }
        CharTable::new(all.iter().map(|r| (r.start(), r.end())).collect())
    })
}

/// Whether any byte of `bytes` passes `test`: 32 bytes at a time, with
/// no early exit inside a block, so the test is vectorised (a plain
/// `any` stops to branch on every byte).
#[inline]
pub fn any_byte(bytes: &[u8], test: impl Fn(u8) -> bool + Copy) -> bool {
    let mut blocks = bytes.chunks_exact(32);
    for block in &mut blocks {
        if block.iter().fold(false, |hit, &b| hit | test(b)) {
            return true;
        }
    }
    blocks.remainder().iter().any(|&b| test(b))
}

/// True when `regex`'s Unicode `\b` equals CPython's on every position of
/// `text` (no character of `text` is classed differently by the two).
#[inline]
pub fn native_boundaries_agree(text: &str) -> bool {
    if text.is_ascii() {
        // On ASCII the only disagreement is CPython counting U+001C..U+001F
        // as whitespace.
        !any_byte(text.as_bytes(), |b| (0x1c..=0x1f).contains(&b))
    } else {
        let table = disagreement();
        !text.chars().any(|c| table.contains(c))
    }
}

/// Why a pattern could not be compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternError {
    pub pattern: String,
    pub message: String,
    /// CPython's `re` rejects the pattern too (else CPython compiles it and
    /// only critic-gate cannot replay it).
    pub python_rejects: bool,
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.pattern, self.message)
    }
}

/// The backtracking limit was hit: the pattern's answer is unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatchAborted;

/// A regex engine's refusal of a pattern the translator accepted (one too
/// big, a construct it lacks): a limit of critic-gate, not of Python.
#[derive(Debug)]
enum EngineRefused {
    Plain(regex::Error),
    Fancy(Box<fancy_regex::Error>),
}

impl fmt::Display for EngineRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineRefused::Plain(e) => write!(f, "{e}"),
            EngineRefused::Fancy(e) => write!(f, "{e}"),
        }
    }
}

enum Engine {
    Plain(regex::Regex),
    Fancy(fancy_regex::Regex),
}

impl Engine {
    fn build(src: &str, fancy: bool) -> Result<Engine, EngineRefused> {
        if fancy {
            fancy_regex::RegexBuilder::new(src)
                .backtrack_limit(BACKTRACK_LIMIT)
                .build()
                .map(Engine::Fancy)
                .map_err(|e| EngineRefused::Fancy(Box::new(e)))
        } else {
            regex::RegexBuilder::new(src)
                .size_limit(64 << 20)
                .build()
                .map(Engine::Plain)
                .map_err(EngineRefused::Plain)
        }
    }

    #[inline]
    fn is_match(&self, text: &str) -> Result<bool, MatchAborted> {
        match self {
            Engine::Plain(re) => Ok(re.is_match(text)),
            Engine::Fancy(re) => re.is_match(text).map_err(|_| MatchAborted),
        }
    }

    /// The first match's byte range (leftmost, first alternative first,
    /// as Python's `re.search`).
    fn find(&self, text: &str) -> Result<Option<(usize, usize)>, MatchAborted> {
        self.find_at(text, 0)
    }

    /// The first match starting at or after byte `at`, the text before it
    /// still seen by `\b` and lookbehinds.
    fn find_at(&self, text: &str, at: usize) -> Result<Option<(usize, usize)>, MatchAborted> {
        match self {
            Engine::Plain(re) => Ok(re.find_at(text, at).map(|m| (m.start(), m.end()))),
            Engine::Fancy(re) => re
                .find_from_pos(text, at)
                .map(|m| m.map(|m| (m.start(), m.end())))
                .map_err(|_| MatchAborted),
        }
    }

    /// Every match, left to right, not overlapping (`re.finditer`'s
    /// spans; after an empty match the search moves on one character).
    fn find_all(&self, text: &str) -> Result<Vec<(usize, usize)>, MatchAborted> {
        let mut out = Vec::new();
        let mut at = 0;
        while at <= text.len() {
            let Some((a, b)) = self.find_at(text, at)? else {
                break;
            };
            out.push((a, b));
            at = match b > a {
                true => b,
                false => b + text[b..].chars().next().map_or(1, char::len_utf8),
            };
        }
        Ok(out)
    }
}

/// A set of Python patterns, any of which may match (`any(re.search(...))`),
/// each compiled once, matched case-insensitively when built with
/// `ignore_case` (as symfonic does for ack patterns).
pub struct PySet {
    /// Unique for the life of the process (never reused, unlike an
    /// address): the key of this set's remembered answers.
    id: u64,
    /// All patterns `regex` can run, alternated into one automaton, in the
    /// form that keeps `regex`'s `\b`.
    native: Option<Engine>,
    /// `native` for splitting a haystack with a few non-ASCII characters
    /// (see [`Windowed`]), when its matches are short.
    windowed: Option<Windowed>,
    /// The same patterns, `\b` spelled over CPython's word class, when
    /// some pattern uses `\b`/`\B`: its source, and the engine (built with
    /// the set, or on first need for [`PySet::lazy`] sets).
    exact_src: Option<String>,
    exact: OnceLock<Option<Engine>>,
    /// Patterns that need backtracking, each as (native, exact).
    fancy: Vec<(Engine, Engine)>,
    /// When a pattern uses `\B`: the patterns, to build (on first need)
    /// the set that searches an empty text, where CPython 3.11's `\B`
    /// never matches.
    empty_text: Option<EmptyText>,
}

/// A set's patterns, and the set built from them (on first need) to
/// search an empty text.
struct EmptyText {
    patterns: Vec<String>,
    ignore_case: bool,
    set: OnceLock<Option<Box<PySet>>>,
}

/// The patterns that need no look-around, joined into one alternation per
/// form (one engine pass instead of one per pattern).
#[derive(Default)]
struct Plain {
    native: Vec<String>,
    exact: Vec<String>,
    any_boundary: bool,
}

impl Plain {
    fn add(&mut self, t: &Translated) {
        self.any_boundary |= t.uses_boundary;
        self.native.push(format!("(?:{})", t.native));
        self.exact.push(format!("(?:{})", t.exact));
    }

    /// The native engine (the exact one is built by the set).
    fn native_engine(&self) -> Result<Option<Engine>, (usize, PatternError)> {
        if self.native.is_empty() {
            return Ok(None);
        }
        let pattern = self.native.join("|");
        Engine::build(&pattern, false)
            .map(Some)
            .map_err(|m| (0, PatternError::ours(&pattern, m)))
    }
}

impl PatternError {
    /// An engine's refusal of a pattern the translator accepted: a limit
    /// of critic-gate, not of Python.
    fn ours(pattern: &str, why: impl fmt::Display) -> PatternError {
        PatternError {
            pattern: pattern.to_string(),
            message: why.to_string(),
            python_rejects: false,
        }
    }

    fn refused(pattern: &str, r: Refused) -> PatternError {
        let (message, python_rejects) = match r {
            Refused::Python(m) => (m, true),
            Refused::Unsupported(m) => (m, false),
        };
        PatternError {
            pattern: pattern.to_string(),
            message,
            python_rejects,
        }
    }
}

impl PySet {
    pub fn new<S: AsRef<str>>(
        patterns: &[S],
        ignore_case: bool,
    ) -> Result<PySet, (usize, PatternError)> {
        // Compiling is most of a replay's start-up, so the usual case (every
        // pattern valid) builds only the engines it keeps; when anything
        // fails, a second pass compiling each pattern alone names the first
        // culprit in order.
        // The exact engine is built here, eagerly, so that a pattern it
        // cannot take fails now; the second pass names which one.
        let eager = |set: PySet| match set.exact_src.is_some() && set.exact_engine().is_none() {
            true => Err((
                0,
                PatternError::ours(
                    set.exact_src.as_deref().unwrap_or(""),
                    "the exact form does not compile",
                ),
            )),
            false => Ok(set),
        };
        Self::build(patterns, ignore_case, false, translate)
            .and_then(eager)
            .or_else(|first| Self::build(patterns, ignore_case, true, translate).and(Err(first)))
    }

    /// A set for [`PySet::find`] alone, of patterns already accepted in
    /// another set: its exact engine (the costly one, needed only where
    /// `regex`'s `\b` and CPython's disagree) is built on first need, and
    /// it has no windowed engine. Compiling the built-in patterns one by
    /// one with both engines cost more start-up than reading 10,000 turns.
    pub fn lazy<S: AsRef<str>>(
        pattern: S,
        ignore_case: bool,
    ) -> Result<PySet, (usize, PatternError)> {
        Self::build(&[pattern], ignore_case, false, translate).map(|mut set| {
            set.windowed = None;
            set
        })
    }

    /// The exact engine, built on first need; None when no pattern uses
    /// `\b` (or, for a lazy set, when it fails to build).
    fn exact_engine(&self) -> Option<&Engine> {
        self.exact
            .get_or_init(|| {
                self.exact_src
                    .as_ref()
                    .and_then(|s| Engine::build(s, true).ok())
            })
            .as_ref()
    }

    /// Translate and compile `patterns`. With `each`, every plain pattern is
    /// also compiled alone, in both forms, so that an error names the
    /// pattern (not the alternation) that causes it.
    fn build<S: AsRef<str>>(
        patterns: &[S],
        ignore_case: bool,
        each: bool,
        translate: Translate,
    ) -> Result<PySet, (usize, PatternError)> {
        let mut plain = Plain::default();
        let mut fancy = Vec::new();
        let mut non_boundary = false;
        for (i, p) in patterns.iter().enumerate() {
            let p = p.as_ref();
            // The translator mirrors CPython's parser: once it accepts a
            // pattern, an engine's refusal is a limit of critic-gate.
            let err = |e: EngineRefused| (i, PatternError::ours(p, e));
            let t = translate(p, ignore_case).map_err(|r| (i, PatternError::refused(p, r)))?;
            non_boundary |= t.uses_non_boundary;
            if t.needs_fancy {
                let native = Engine::build(&t.native, true).map_err(err)?;
                let exact = Engine::build(&t.exact, true).map_err(err)?;
                fancy.push((native, exact));
                continue;
            }
            if each {
                Engine::build(&t.native, false).map_err(err)?;
                if t.uses_boundary {
                    Engine::build(&t.exact, true).map_err(err)?;
                }
            }
            plain.add(&t);
        }
        let native = plain.native_engine()?;
        let windowed = native
            .as_ref()
            .and_then(|_| Windowed::new(&plain.native.join("|")));
        static NEXT_ID: AtomicU64 = AtomicU64::new(0);
        Ok(PySet {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            native,
            windowed,
            exact_src: plain.any_boundary.then(|| plain.exact.join("|")),
            exact: OnceLock::new(),
            fancy,
            empty_text: non_boundary.then(|| EmptyText {
                patterns: patterns.iter().map(|p| p.as_ref().to_string()).collect(),
                ignore_case,
                set: OnceLock::new(),
            }),
        })
    }

    /// The set to search an empty text with, when it is not this one (a
    /// pattern uses `\B`).
    fn for_empty_text(&self) -> Option<&PySet> {
        let e = self.empty_text.as_ref()?;
        e.set
            .get_or_init(|| {
                Self::build(&e.patterns, e.ignore_case, false, translate_for_empty_text)
                    .ok()
                    .map(Box::new)
            })
            .as_deref()
    }

    /// This set's identity, unique in the process (for memos: an address
    /// can be reused by a later set).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// `any(re.search(p, text, flags) for p in patterns)`.
    pub fn is_match(&self, text: &str) -> Result<bool, MatchAborted> {
        if let Some(set) = text.is_empty().then(|| self.for_empty_text()).flatten() {
            return set.is_match(text);
        }
        if text.len() > MEMO_MAX_TEXT {
            return self.search(text);
        }
        MEMO.with(|m| {
            let mut m = m.borrow_mut();
            let answers = m.entry(self.id).or_default();
            if let Some(&a) = answers.get(text) {
                return a;
            }
            let a = self.search(text);
            if answers.len() >= MEMO_ENTRIES {
                answers.clear();
            }
            answers.insert(text.into(), a);
            a
        })
    }

    /// `re.search(pattern, text)`'s span for a set of one pattern: its
    /// first match's byte range (a set of several gives the leftmost
    /// match of any of them). Remembered per set and text, as
    /// [`PySet::is_match`] is (the same acks recur all day).
    pub fn find(&self, text: &str) -> Result<Option<(usize, usize)>, MatchAborted> {
        self.find_in(text, &std::cell::Cell::new(None))
    }

    /// [`PySet::find`], with whether `regex`'s `\b` agrees with CPython's
    /// on `text` worked out at most once for several sets searching the
    /// same text (scanning a non-ASCII text for it costs more than most
    /// searches).
    pub fn find_in(
        &self,
        text: &str,
        agree: &std::cell::Cell<Option<bool>>,
    ) -> Result<Option<(usize, usize)>, MatchAborted> {
        if let Some(set) = text.is_empty().then(|| self.for_empty_text()).flatten() {
            return set.find_in(text, agree);
        }
        if text.len() > MEMO_MAX_TEXT {
            return self.find_uncached(text, agree);
        }
        FIND_MEMO.with(|m| {
            let mut m = m.borrow_mut();
            let answers = m.entry(self.id).or_default();
            if let Some(&a) = answers.get(text) {
                return a;
            }
            let a = self.find_uncached(text, agree);
            if answers.len() >= MEMO_ENTRIES {
                answers.clear();
            }
            answers.insert(text.into(), a);
            a
        })
    }

    /// The engines that decide `text` as CPython would: the combined
    /// native one (or its exact form where `regex`'s `\b` disagrees), then
    /// each fancy pattern's native or exact engine; whether they agree is
    /// worked out at most once across sets (`known`).
    fn engines<'s>(
        &'s self,
        text: &str,
        known: &std::cell::Cell<Option<bool>>,
    ) -> Result<impl Iterator<Item = &'s Engine>, MatchAborted> {
        let agree = self.exact_src.is_none() && self.fancy.is_empty() || {
            let a = known.get().unwrap_or_else(|| native_boundaries_agree(text));
            known.set(Some(a));
            a
        };
        let first = match (&self.native, self.exact_src.is_some(), agree) {
            (Some(_), true, false) => Some(self.exact_engine().ok_or(MatchAborted)?),
            (native, _, _) => native.as_ref(),
        };
        let fancy = self
            .fancy
            .iter()
            .map(move |(native, exact)| if agree { native } else { exact });
        Ok(first.into_iter().chain(fancy))
    }

    fn find_uncached(
        &self,
        text: &str,
        known: &std::cell::Cell<Option<bool>>,
    ) -> Result<Option<(usize, usize)>, MatchAborted> {
        for engine in self.engines(text, known)? {
            if let Some(span) = engine.find(text)? {
                return Ok(Some(span));
            }
        }
        Ok(None)
    }

    /// Every match of every pattern of the set (each pattern's matches
    /// not overlapping each other; different patterns' may), for how much
    /// of a draft its acks cover. Not remembered: it is asked once per
    /// draft and pattern list.
    pub fn find_all(
        &self,
        text: &str,
        known: &std::cell::Cell<Option<bool>>,
    ) -> Result<Vec<(usize, usize)>, MatchAborted> {
        let mut out = Vec::new();
        for engine in self.engines(text, known)? {
            out.extend(engine.find_all(text)?);
        }
        Ok(out)
    }

    /// [`PySet::is_match`], searched.
    fn search(&self, text: &str) -> Result<bool, MatchAborted> {
        let agree =
            self.exact_src.is_none() && self.fancy.is_empty() || native_boundaries_agree(text);
        if let Some(native) = &self.native {
            let engine = match (self.exact_src.is_some(), agree) {
                (true, false) => self.exact_engine().ok_or(MatchAborted)?,
                _ => native,
            };
            let split = match (
                &self.windowed,
                std::ptr::eq(engine, native) && !text.is_ascii(),
            ) {
                (Some(w), true) => w.is_match(text),
                _ => None,
            };
            if split.map_or_else(|| engine.is_match(text), Ok)? {
                return Ok(true);
            }
        }
        let mut aborted = false;
        for (native, exact) in &self.fancy {
            let engine = if agree { native } else { exact };
            match engine.is_match(text) {
                Ok(true) => return Ok(true),
                Ok(false) => {}
                Err(MatchAborted) => aborted = true,
            }
        }
        if aborted {
            Err(MatchAborted)
        } else {
            Ok(false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, t: &str) -> bool {
        PySet::new(&[p], true).unwrap().is_match(t).unwrap()
    }

    #[test]
    fn any_byte_is_any() {
        let test = |b: u8| b.is_ascii_digit() || b == b'$';
        for len in 0..100 {
            let quiet = vec![b'a'; len];
            assert!(!any_byte(&quiet, test));
            for hit in 0..len {
                for x in [b'0', b'9', b'$'] {
                    let mut b = quiet.clone();
                    b[hit] = x;
                    assert!(any_byte(&b, test), "{len} {hit}");
                }
            }
        }
    }

    #[test]
    fn the_disagreement_bitmap_is_its_ranges() {
        let t = disagreement();
        assert!(!t.ranges.is_empty());
        for c in (0..=0x10ffff).filter_map(char::from_u32) {
            assert_eq!(t.contains(c), in_ranges(&t.ranges, c), "{c:?}");
        }
    }

    /// CPython never case-folds `\\w`, `\\W` (nor `\\b`'s word test) under
    /// IGNORECASE, only literals; `regex` folds whole classes, which adds
    /// U+0345 (it folds with ι) and U+A7CB, U+A7DC (letters since Unicode
    /// 16, whose lowercase forms are older) to `\\w`. Expectations from
    /// CPython 3.11: `bool(re.search(p, t, re.IGNORECASE))`.
    #[test]
    fn shorthand_classes_are_not_case_folded() {
        let cases: [(&str, &str, bool); 18] = [
            (r"\bok\b", "ok\u{345}", true),
            (r"x\B", "x\u{345}", false),
            (r"x\b", "x\u{a7cb}", true),
            (r"\w", "\u{345}", false),
            (r"\W", "\u{345}", true),
            (r"[\w]", "\u{345}", false),
            (r"[\wa]", "\u{345}", false),
            (r"[^\w]", "\u{345}", true),
            (r"[^\wa]", "\u{345}", true),
            (r"[\w\u03b9]", "\u{345}", true),
            (r"[^\W]", "\u{345}", false),
            (r"[\W]", "\u{345}", true),
            (r"\w", "\u{a7cb}", false),
            (r"\W", "\u{a7dc}", true),
            (r"[\wa]", "ι", true),
            (r"[^\w.]", "K", false),
            (r"[\d\u0130]", "i", true),
            (r"[\s\u0130]", "ı", true),
        ];
        let wrong: Vec<_> = cases
            .iter()
            .filter(|&&(p, t, want)| m(p, t) != want)
            .collect();
        assert!(wrong.is_empty(), "{wrong:?}");
    }

    /// 3,000 random patterns of classes, shorthands, boundaries and
    /// literals over characters where the case and class tables disagree,
    /// each with CPython 3.11's answer with and without IGNORECASE
    /// (`scripts/cpython_class_cases.py`).
    #[test]
    fn classes_match_cpython() {
        use rayon::prelude::*;
        let cases = include_str!("../../../tests/cpython/classes.jsonl");
        // Each case compiles its pattern twice: on every core.
        let lines: Vec<&str> = cases.lines().collect();
        let wrong: Vec<(String, String, bool)> = lines
            .par_iter()
            .flat_map_iter(|line| {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                let (p, t) = (v["p"].as_str().unwrap(), v["t"].as_str().unwrap());
                [(true, "i"), (false, "cs")]
                    .into_iter()
                    .filter(|&(ignore_case, key)| {
                        let got = PySet::new(&[p], ignore_case).unwrap().is_match(t).unwrap();
                        got != v[key].as_bool().unwrap()
                    })
                    .map(|(ignore_case, _)| (p.to_string(), t.to_string(), ignore_case))
                    .collect::<Vec<_>>()
            })
            .collect();
        assert!(
            wrong.is_empty(),
            "{} of {}: {wrong:?}",
            wrong.len(),
            cases.lines().count()
        );
    }

    /// 3,000 random patterns of the pieces CPython's parser decides on
    /// (quantifiers after quantifiers, lazy and possessive suffixes, repeats
    /// of nothing, braces, class ranges of classes, groups, look-arounds,
    /// atomic groups), each with CPython 3.11's verdict: its error, or its
    /// answers on sixteen texts with and without IGNORECASE
    /// (`scripts/cpython_syntax_cases.py`). A pattern CPython rejects is
    /// refused as CPython would refuse it; one it accepts matches as it
    /// does (or is refused as one critic-gate cannot replay, counted).
    #[test]
    fn syntax_matches_cpython() {
        use rayon::prelude::*;
        const TEXTS: [&str; 16] = [
            "", "o", "oo", "ooo", "ok", "OK ok", "aab", "a-b", "zk", "b\nk", "k.z", "12", "abab",
            "ooa", "aba", "ook",
        ];
        let cases = include_str!("../../../tests/cpython/syntax.jsonl");
        let lines: Vec<&str> = cases.lines().collect();
        let outcomes: Vec<Result<bool, String>> = lines
            .par_iter()
            .flat_map_iter(|line| {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                let p = v["p"].as_str().unwrap().to_string();
                [(true, "i"), (false, "cs")]
                    .into_iter()
                    .map(move |(ic, key)| {
                        let got = PySet::new(&[p.as_str()], ic);
                        match (&v.get("error"), got) {
                            (Some(_), Err((_, e))) if e.python_rejects => Ok(true),
                            (Some(want), Err((_, e))) => Err(format!(
                            "{p:?}: CPython: {want}; ours says only that it cannot replay it: {}",
                            e.message
                        )),
                            (Some(want), Ok(_)) => {
                                Err(format!("{p:?}: CPython: {want}; ours accepts it"))
                            }
                            (None, Err((_, e))) if !e.python_rejects => Ok(false),
                            (None, Err((_, e))) => Err(format!(
                                "{p:?}: CPython accepts it; ours refuses it: {}",
                                e.message
                            )),
                            (None, Ok(set)) => {
                                let want = v[key].as_array().unwrap();
                                let wrong: Vec<&str> = TEXTS
                                    .iter()
                                    .zip(want)
                                    .filter(|(t, w)| {
                                        set.is_match(t).unwrap() != w.as_bool().unwrap()
                                    })
                                    .map(|(t, _)| *t)
                                    .collect();
                                match wrong.is_empty() {
                                    true => Ok(true),
                                    false => Err(format!(
                                        "{p:?} (ignorecase {ic}): differs on {wrong:?}"
                                    )),
                                }
                            }
                        }
                    })
            })
            .collect();
        let wrong: Vec<&String> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
        let unsupported = outcomes.iter().filter(|o| matches!(o, Ok(false))).count();
        assert!(
            wrong.is_empty(),
            "{} of {} answers wrong:\n{}",
            wrong.len(),
            outcomes.len(),
            wrong
                .iter()
                .take(40)
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        );
        // Refusing to replay is allowed, but not as a way out.
        assert!(
            unsupported * 100 <= outcomes.len(),
            "{unsupported} refused as unsupported"
        );
    }

    /// The review's cases: possessive repeats give back nothing, as in
    /// CPython 3.11; what CPython refuses is refused, naming the pattern.
    #[test]
    fn possessive_repeats_and_refused_syntax() {
        for p in ["o*+o", "o++o", "o{1,3}+o", "(?:o)++o"] {
            assert!(!m(p, "oo"), "{p}");
        }
        // Each iteration gives nothing back either (the second review).
        for (p, t) in [
            ("(?:a|ab){2}+", "abab"),
            ("(?:a|ab){2,}+", "abab"),
            ("(?:o|oa){2,3}+$", "ooa"),
            ("^(?:ok|o){2}+k", "ook"),
            ("(a|ab){2}+", "abab"),
        ] {
            assert!(!m(p, t), "{p} on {t}");
        }
        assert!(m("o*+k", "ook") && m("o*?o", "oo") && m("(?:ab)++c", "ababc"));
        for (p, says) in [
            ("a{1,2}{3}", "multiple repeat"),
            ("a**", "multiple repeat"),
            ("a*?+", "multiple repeat"),
            (r"[\w--k]", "bad character range"),
            (r"[\d-z]", "bad character range"),
            ("*a", "nothing to repeat"),
            ("(?i)+", "nothing to repeat"),
            (r"\b*", "nothing to repeat"),
            ("a|?", "nothing to repeat"),
            ("a{3,2}", "min repeat greater than max repeat"),
        ] {
            let Err((_, e)) = PySet::new(&[p], true) else {
                panic!("{p} accepted");
            };
            assert!(e.python_rejects && e.message.contains(says), "{p}: {e}");
            assert!(e.to_string().contains(&format!("{p:?}")), "{e}");
        }
        // Still repeats: a comment or white space in verbose mode between.
        assert!(m("o(?#c)*k", "ook") && m("(?x) o +k", "ook"));
    }

    #[test]
    fn python_word_boundary_around_combining_marks() {
        // U+0307 is not \w in CPython, so `\bok\b` matches "ok\u{307}".
        assert!(m(r"\bok\b", "ok\u{307}"));
        assert!(!m(r"\bok\b", "oké"));
    }

    #[test]
    fn python_space_includes_information_separators() {
        assert!(m(r"a\sb", "a\u{1c}b"));
        assert!(is_space('\u{1f}'));
        assert!(!is_space('\u{180e}'));
    }

    #[test]
    fn dotless_i_matches_i_under_ignorecase() {
        assert!(m(r"\bwill do\b", "wıll do"));
        assert!(m(r"[a-z]+", "ı"));
        assert!(!PySet::new(&[r"will"], false)
            .unwrap()
            .is_match("wıll")
            .unwrap());
    }

    #[test]
    fn lookaround_and_backrefs_work() {
        assert!(m(r"^(?!.*\bnot\b).*\b(ok|fine)\b", "fine by me"));
        assert!(!m(r"^(?!.*\bnot\b).*\b(ok|fine)\b", "not fine"));
        assert!(m(r"(?<!not )\bgood\b", "good"));
        assert!(!m(r"(?<!not )\bgood\b", "not good"));
        assert!(m(r"(\w)\1", "ok, thanks aa"));
        assert!(m(r"(?P<x>o)(?P=x)", "oo"));
    }

    #[test]
    fn lookbehind_over_multibyte_text() {
        assert!(!m(r"(?<=é)\bok", "é ok"));
        assert!(m(r"(?<=é )ok", "é ok"));
        assert!(m(r"\bok\b", "\u{301}ok\u{301}"));
    }

    #[test]
    fn invalid_pattern_names_index() {
        let err = PySet::new(&["ok", "(unclosed"], true).err().unwrap();
        assert_eq!(err.0, 1);
        assert_eq!(err.1.pattern, "(unclosed");
        // The first failing pattern in order is named, whichever step
        // (translation or compilation) fails, and fancy patterns too.
        let err = PySet::new(&[r"(?<=a)b", "x{2,1}", "(unclosed"], true)
            .err()
            .unwrap();
        assert_eq!((err.0, err.1.pattern.as_str()), (1, "x{2,1}"));
        let err = PySet::new(&["(?=x", "ok"], true).err().unwrap();
        assert_eq!(err.0, 0);
        assert!(PySet::new(&[r"(?<=a)b", r"\bok\b", "fine"], true).is_ok());
    }

    #[test]
    fn the_word_bitmap_is_the_word_table() {
        for n in 0..=0x10ffffu32 {
            let Some(c) = char::from_u32(n) else { continue };
            let want = match c.is_ascii() {
                true => c.is_ascii_alphanumeric() || c == '_',
                false => in_ranges(tables::PY_WORD, c),
            };
            assert_eq!(is_word(c), want, "U+{n:04X}");
        }
    }

    #[test]
    fn disagreement_set_is_small_and_excludes_ascii_letters() {
        let t = disagreement();
        assert!(t.contains('\u{1c}'));
        assert!(t.contains('\u{301}'));
        assert!(t.contains('²'));
        assert!(!t.contains('a'));
        assert!(!t.contains('é'));
    }
}
