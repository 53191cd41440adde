//! The fabrication detector's four patterns matched by hand, on any text,
//! exactly as CPython's `re.finditer` matches them.
//!
//! Every character a match consumes is ASCII except the claim pattern's
//! white space and its case-folded letters; what else makes a text
//! non-ASCII (a curly apostrophe, an emoji, an accented name) only decides
//! the word boundaries next to it. So each scanner walks the bytes, jumps
//! to the few places a match can start (`memchr` for the claim's `I` and
//! the key-value's `:` or `=`), and decodes a character only where a
//! boundary or a space test meets a non-ASCII byte. Spelling CPython's
//! `\b` with look-arounds for the backtracking engine tried them at every
//! position of the text: one curly quote in a long answer made its
//! searches 3.7x slower than upstream's own.
//!
//! Why each hand matcher is the pattern (the backtracking it would do can
//! never succeed) is written beside it; the property tests in
//! `fabrication.rs` hold each to the CPython-exact engine on texts built
//! from the characters where the two could differ.

use super::pytext::{ascii_class, HEX, VALUE, WORD};
use crate::gate::pyre::{is_space, is_word};

/// A match's groups as byte ranges (group 0: the whole match).
pub(super) struct Caps(pub Vec<Option<(usize, usize)>>);

impl Caps {
    pub(super) fn span(&self, i: usize) -> (usize, usize) {
        self.0[i].unwrap_or((0, 0))
    }

    pub(super) fn str<'t>(&self, text: &'t str, i: usize) -> &'t str {
        self.0[i].map_or("", |(s, e)| &text[s..e])
    }
}

fn class(b: u8, bit: u8) -> bool {
    ascii_class(b) & bit != 0
}

/// CPython's `\w` for the character that ends at byte `p` (false at 0).
fn word_before(text: &str, p: usize) -> bool {
    match text.as_bytes()[..p].last() {
        None => false,
        Some(&b) if b < 0x80 => class(b, WORD),
        Some(_) => text[..p].chars().next_back().is_some_and(is_word),
    }
}

/// CPython's `\w` for the character that starts at byte `p` (false at the
/// end).
fn word_at(text: &str, p: usize) -> bool {
    match text.as_bytes().get(p) {
        None => false,
        Some(&b) if b < 0x80 => class(b, WORD),
        Some(_) => text[p..].chars().next().is_some_and(is_word),
    }
}

/// `\b` at byte `p`.
fn boundary(text: &str, p: usize) -> bool {
    word_before(text, p) != word_at(text, p)
}

/// The end of the run of CPython white space (`\s*`) from byte `p`.
fn skip_spaces(text: &str, mut p: usize) -> usize {
    let b = text.as_bytes();
    while p < b.len() {
        let c = b[p];
        if c < 0x80 {
            if !matches!(c, b'\t'..=b'\r' | 0x1c..=0x1f | b' ') {
                break;
            }
            p += 1;
        } else {
            match text[p..].chars().next() {
                Some(ch) if is_space(ch) => p += ch.len_utf8(),
                _ => break,
            }
        }
    }
    p
}

/// The verbs of the claim pattern, in its order. None is a prefix of
/// another, even case-folded, so at most one fits at a place.
pub(super) const CLAIM_VERBS: [&str; 22] = [
    "ran",
    "called",
    "invoked",
    "executed",
    "queried",
    "triggered",
    "launched",
    "fetched",
    "started",
    "stopped",
    "posted",
    "updated",
    "deleted",
    "created",
    "spawned",
    "sent",
    "delivered",
    "dispatched",
    "checked",
    "retrieved",
    "pulled",
    "pushed",
];

/// The characters IGNORECASE matches for a lower-case ASCII letter of the
/// claim pattern beyond its two cases: `ſ` (U+017F) for `s`, the Kelvin
/// sign for `k` (Unicode simple case folding), and `ı` (U+0131) and `İ`
/// (U+0130) for `i`, which CPython adds.
fn folds_to(c: char, letter: u8) -> bool {
    match c {
        'ſ' => letter == b's',
        '\u{212A}' => letter == b'k',
        'ı' | 'İ' => letter == b'i',
        _ => false,
    }
}

/// Where `word` (lower-case ASCII) ends when it matches case-insensitively
/// at byte `p`.
fn folded_at(text: &str, mut p: usize, word: &str) -> Option<usize> {
    let b = text.as_bytes();
    for &letter in word.as_bytes() {
        let c = *b.get(p)?;
        if c < 0x80 {
            if c.to_ascii_lowercase() != letter {
                return None;
            }
            p += 1;
        } else {
            let ch = text[p..].chars().next()?;
            if !folds_to(ch, letter) {
                return None;
            }
            p += ch.len_utf8();
        }
    }
    Some(p)
}

/// `\b(?P<verb>I\s+(?P<action>ran|called|...))\b` (IGNORECASE): each match
/// as (whole, verb group, action group). At a word start, an `I` (or `i`,
/// `ı`, `İ`), white space, a verb, a word boundary. Giving back white space
/// cannot help (a verb does not start with it), nor trying another verb.
pub(super) fn claims(text: &str) -> Vec<Caps> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut done = 0;
    // `ı` and `İ` are C4 B1 and C4 B0 in UTF-8.
    for p in memchr::memchr3_iter(b'i', b'I', 0xC4, b) {
        let i_len = match b[p] {
            b'i' | b'I' => 1,
            _ if matches!(b.get(p + 1), Some(0xB0 | 0xB1)) => 2,
            _ => continue,
        };
        if p < done || word_before(text, p) {
            continue;
        }
        let q = skip_spaces(text, p + i_len);
        if q == p + i_len {
            continue;
        }
        let end = CLAIM_VERBS
            .iter()
            .find_map(|v| folded_at(text, q, v))
            .filter(|&e| !word_at(text, e));
        if let Some(e) = end {
            out.push(Caps(vec![Some((p, e)), Some((p, e)), Some((q, e))]));
            done = e;
        }
    }
    out
}

/// `\b[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}\b`:
/// at a word's start (nowhere else can `\b` precede a hex digit), groups
/// of 8, 4, 4, 4 and 12 hex digits, each hyphen between them optional
/// (tried first, as `-?` is greedy), then a word boundary; tried at each
/// of `starts`, the words that open with 8 hex digits ([`hex_words`]). A
/// match may run over several words (the hyphens end them); the search
/// goes on at the first start after it.
pub(super) fn uuids(text: &str, starts: &[usize]) -> Vec<Caps> {
    const GROUPS: [usize; 5] = [8, 4, 4, 4, 12];
    fn from(text: &str, pos: usize, g: usize) -> Option<usize> {
        let b = text.as_bytes();
        let end = pos + GROUPS[g];
        if end > b.len() || !b[pos..end].iter().all(|&c| class(c, HEX)) {
            return None;
        }
        if g == GROUPS.len() - 1 {
            return (!word_at(text, end)).then_some(end);
        }
        let hyphen = (b.get(end) == Some(&b'-'))
            .then(|| from(text, end + 1, g + 1))
            .flatten();
        hyphen.or_else(|| from(text, end, g + 1))
    }
    let mut out = Vec::new();
    let mut done = 0;
    for &s in starts {
        if s < done {
            continue;
        }
        if let Some(end) = from(text, s, 0) {
            out.push(Caps(vec![Some((s, end))]));
            done = end;
        }
    }
    out
}

/// In one pass over the runs of hex digits: `\b[0-9a-fA-F]{6,16}\b`'s
/// matches, and the words that open with 8 hex digits, where a UUID may
/// start ([`uuids`]). A boundary cannot fall inside a word, so a match is
/// a whole word of 6 to 16 hex digits: a maximal run of them with no word
/// character on either side. A word that opens with 8 hex digits is a run
/// of 8 or more with none before it.
pub(super) fn hex_words(text: &str) -> (Vec<Caps>, Vec<usize>) {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut uuid_starts = Vec::new();
    // Each run found is maximal: it starts at `i` or after a byte that is
    // not a hex digit (a hex digit before it would start a run found
    // first), and `i` is left after the run.
    let mut i = 0;
    while let Some(s) = run_of_six(b, i) {
        i = s;
        while i < b.len() && class(b[i], HEX) {
            i += 1;
        }
        let len = i - s;
        if word_before(text, s) {
            continue;
        }
        if len >= 8 {
            uuid_starts.push(s);
        }
        if len <= 16 && !word_at(text, i) {
            out.push(Caps(vec![Some((s, i))]));
        }
    }
    (out, uuid_starts)
}

/// The first index at or after `from` where 6 hex digits in a row start
/// (only runs of 6 or more count). Sixteen starts at a time from the hex
/// digits of 32 bytes (prose is full of a-f, but rarely of 6 in a row),
/// then byte by byte for the last few.
fn run_of_six(b: &[u8], mut from: usize) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    while from + 32 <= b.len() {
        let w = hex_mask(&b[from..from + 16]) | hex_mask(&b[from + 16..from + 32]) << 16;
        let starts = w & w >> 1 & w >> 2 & w >> 3 & w >> 4 & w >> 5 & 0xFFFF;
        if starts != 0 {
            return Some(from + starts.trailing_zeros() as usize);
        }
        from += 16;
    }
    (from..(b.len() + 1).saturating_sub(6)).find(|&i| b[i..i + 6].iter().all(|&c| class(c, HEX)))
}

/// Of `s`'s 16 bytes, a bit for each hex digit (`[0-9A-Fa-f]`), the first
/// byte the lowest bit.
#[cfg(target_arch = "x86_64")]
#[inline]
fn hex_mask(s: &[u8]) -> u32 {
    use std::arch::x86_64::*;
    let s: &[u8; 16] = s.try_into().expect("16 bytes");
    // SAFETY: SSE2 is in the x86-64 baseline; the load reads the 16 bytes
    // of `s`.
    unsafe {
        let x = _mm_loadu_si128(s.as_ptr() as *const __m128i);
        // v < n (unsigned) exactly when min(v, n - 1) == v.
        let below =
            |v: __m128i, n: u8| _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8((n - 1) as i8)), v);
        let digit = below(_mm_sub_epi8(x, _mm_set1_epi8(b'0' as i8)), 10);
        // Setting bit 5 lowers an ASCII letter (and maps no other byte
        // into `a`-`f`).
        let lower = _mm_or_si128(x, _mm_set1_epi8(0x20));
        let letter = below(_mm_sub_epi8(lower, _mm_set1_epi8(b'a' as i8)), 6);
        _mm_movemask_epi8(_mm_or_si128(digit, letter)) as u32
    }
}

/// `\b([A-Za-z][A-Za-z0-9_]{1,31})\s*[:=]\s*([A-Za-z0-9][A-Za-z0-9_\-./]{0,127})\b`:
/// each match as (whole, key, value). A match holds exactly one `:` or
/// `=` (the key and the white space hold none, nor does the value), so
/// each one is tried in turn:
/// - the key is the whole ASCII word run before it (and its white space):
///   starting inside the run fails `\b`, and a key that stops short of the
///   run's end is followed by a word character, neither space nor `:=`;
///   the run starts a word (a non-ASCII word character before it fails
///   `\b`), with a letter, and is 2 to 32 long;
/// - the value starts after the white space with a letter or digit (giving
///   back white space leaves a space where it must start) and takes the
///   longest run of value characters that ends on a word boundary.
pub(super) fn key_values(text: &str) -> Vec<Caps> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut done = 0;
    for f in memchr::memchr2_iter(b':', b'=', b) {
        let Some(start) = key_start(text, f) else {
            continue;
        };
        if start < done {
            continue;
        }
        let g = skip_spaces(text, f + 1);
        if !b.get(g).is_some_and(u8::is_ascii_alphanumeric) {
            continue;
        }
        let mut run = g + 1;
        while run < b.len() && run - g <= 127 && class(b[run], VALUE) {
            run += 1;
        }
        let Some(end) = (g + 1..=run).rev().find(|&e| boundary(text, e)) else {
            continue;
        };
        let key_end = start + b[start..].iter().take_while(|&&c| class(c, WORD)).count();
        out.push(Caps(vec![
            Some((start, end)),
            Some((start, key_end)),
            Some((g, end)),
        ]));
        done = end;
    }
    out
}

/// Where the key before the `:` or `=` at byte `f` starts, if one does.
fn key_start(text: &str, f: usize) -> Option<usize> {
    let b = text.as_bytes();
    // Back over white space (ASCII, or a non-ASCII space character).
    let mut e = f;
    loop {
        match b[..e].last() {
            Some(&c) if c < 0x80 && matches!(c, b'\t'..=b'\r' | 0x1c..=0x1f | b' ') => e -= 1,
            Some(&c) if c >= 0x80 => match text[..e].chars().next_back() {
                Some(ch) if is_space(ch) => e -= ch.len_utf8(),
                _ => return None,
            },
            _ => break,
        }
    }
    let s = e - b[..e].iter().rev().take_while(|&&c| class(c, WORD)).count();
    let fits = (2..=32).contains(&(e - s)) && b[s].is_ascii_alphabetic();
    (fits && !word_before(text, s)).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(3000))]
        /// The first run of 6 hex digits at or after any index is the one
        /// a byte-by-byte search finds, on texts long enough for the
        /// 32-byte steps, with runs across their 16-byte halves and
        /// bytes next to the hex ranges (`/`, `:`, `@`, `G`, `` ` ``,
        /// `g`, non-ASCII).
        #[test]
        fn runs_of_six_are_the_byte_searchs(
            text in "([0-9a-fA-F]{1,9}|[/:@G`g \u{e9}\u{2019}x]{1,3}){0,30}",
            from in 0usize..120,
        ) {
            let b = text.as_bytes();
            let from = from.min(b.len());
            let slow = (from..(b.len() + 1).saturating_sub(6))
                .find(|&i| b[i..i + 6].iter().all(u8::is_ascii_hexdigit));
            proptest::prop_assert_eq!(run_of_six(b, from), slow, "{:?} from {}", text, from);
        }
    }
}
