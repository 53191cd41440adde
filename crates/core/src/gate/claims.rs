//! `draft_has_claims`: symfonic's four built-in claim patterns, run as one
//! hand-written pass with CPython's `\b`, `\d` and `\s`.
//!
//! The patterns (`re.search`, no flags):
//! `\d`, `[$€£¥]`, `\b[0-9a-fA-F]{6,}\b`, `\b[A-Z][a-zA-Z]+\s+[A-Z][a-zA-Z]+`.
//! Each is a scan over maximal runs, so no backtracking is needed:
//! - a hex match must start and end at word boundaries, and hex digits are
//!   word characters, so it is a maximal run of >= 6 hex digits with a
//!   non-word (or no) character on each side;
//! - in the entity pattern `[a-zA-Z]+` must eat its whole letter run (the
//!   next item, `\s`, is not a letter), so the pattern is: a capital after a
//!   non-word character, letters, whitespace, a capital, one letter.
//!
//! Equality with the regexes is proved by the conformance cases and by a
//! property test against `regex` on text where its classes equal CPython's.

use crate::gate::pyre::{any_byte, is_decimal, is_space, is_word};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Entity {
    Idle,
    /// After a capital that follows a boundary.
    Cap1,
    /// In the letters of the first word.
    Word1,
    /// In the whitespace between the words.
    Gap,
    /// After the second capital.
    Cap2,
}

/// What the scan needs to know of one character.
#[derive(Clone, Copy)]
struct Class {
    /// A digit or a currency sign: a claim on its own.
    claim: bool,
    word: bool,
    hex: bool,
    letter: bool,
    upper: bool,
    space: bool,
}

const CLAIM: u8 = 1;
const WORD: u8 = 2;
const HEX: u8 = 4;
const LETTER: u8 = 8;
const UPPER: u8 = 16;
const SPACE: u8 = 32;

/// The class bits of every ASCII byte, computed at compile time.
const ASCII_CLASS: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut i = 0;
    while i < 128 {
        let c = i as u8;
        let mut b = 0;
        if c.is_ascii_digit() || c == b'$' {
            b |= CLAIM;
        }
        if c.is_ascii_alphanumeric() || c == b'_' {
            b |= WORD;
        }
        if c.is_ascii_hexdigit() {
            b |= HEX;
        }
        if c.is_ascii_alphabetic() {
            b |= LETTER;
        }
        if c.is_ascii_uppercase() {
            b |= UPPER;
        }
        if matches!(c, b'\t'..=b'\r' | 0x1c..=0x1f | b' ') {
            b |= SPACE;
        }
        t[i] = b;
        i += 1;
    }
    t
};

impl Class {
    #[inline]
    fn ascii(c: u8) -> Class {
        let b = ASCII_CLASS[(c & 0x7f) as usize];
        Class {
            claim: b & CLAIM != 0,
            word: b & WORD != 0,
            hex: b & HEX != 0,
            letter: b & LETTER != 0,
            upper: b & UPPER != 0,
            space: b & SPACE != 0,
        }
    }

    #[inline]
    fn of(c: char) -> Class {
        if c.is_ascii() {
            return Class::ascii(c as u8);
        }
        Class {
            claim: is_decimal(c) || matches!(c, '€' | '£' | '¥'),
            word: is_word(c),
            hex: false,
            letter: false,
            upper: false,
            space: is_space(c),
        }
    }
}

/// True when any built-in claim pattern has a match in `text`.
pub fn draft_has_claims(text: &str) -> bool {
    has_claims(text, text.is_ascii())
}

/// [`draft_has_claims`] of a text already known to be ASCII or not.
pub(crate) fn has_claims(text: &str, ascii: bool) -> bool {
    if ascii {
        return ascii_words(text.as_bytes());
    }
    // An ASCII digit or `$` is a claim on its own, wherever it is: most
    // answers have one, and this one pass is cheaper than the stand-ins.
    if any_byte(text.as_bytes(), |b| b.is_ascii_digit() || b == b'$') {
        return true;
    }
    STAND_INS.with(|buf| {
        let mut buf = buf.borrow_mut();
        match stand_in_text(text, &mut buf) {
            Some(()) => ascii_words(&buf),
            None => true,
        }
    })
}

thread_local! {
    /// The ASCII stand-in of the last non-ASCII draft (reused).
    static STAND_INS: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `text` with each non-ASCII character replaced by one ASCII byte of the
/// same class for the scan (`_` a word character, ` ` whitespace, `.`
/// anything else; none is a hex digit or a letter, as no non-ASCII
/// character is for these patterns), so the fast ASCII pass decides a
/// mostly-ASCII draft. The scan reads only classes, one per character, so
/// its answer is unchanged. None when a character is a claim on its own
/// (a non-ASCII digit or currency sign).
fn stand_in_text(text: &str, out: &mut Vec<u8>) -> Option<()> {
    out.clear();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(off) = bytes[i..].iter().position(|b| !b.is_ascii()) {
        out.extend_from_slice(&bytes[i..i + off]);
        let c = text[i + off..]
            .chars()
            .next()
            .expect("a character starts here");
        let k = Class::of(c);
        if k.claim {
            return None;
        }
        out.push(match (k.word, k.space) {
            (true, _) => b'_',
            (false, true) => b' ',
            (false, false) => b'.',
        });
        i += off + c.len_utf8();
    }
    out.extend_from_slice(&bytes[i..]);
    Some(())
}

/// The claim patterns on ASCII text, window by window with 64-byte bit
/// masks: a digit or `$` is a claim on its own; an entity
/// starts at a capital after a non-word byte (a few per sentence), and a
/// hex ID needs six hex letters in a row (rare in prose; when a window has
/// such a run, the exact pass decides the whole text). About a byte per
/// instruction instead of several.
fn ascii_words(b: &[u8]) -> bool {
    let mut prev_word = false;
    let mut prev_hex = 0u64;
    for (w, chunk) in b.chunks(64).enumerate() {
        let m = Masks::of(chunk);
        if m.claim != 0 {
            return true;
        }
        // Six hex letters in a row, counting the end of the last window.
        let h = (m.hex as u128) << 64 | (prev_hex as u128);
        let run6 = h & h >> 1 & h >> 2 & h >> 3 & h >> 4 & h >> 5;
        if run6 >> 59 != 0 {
            return scan(b.iter().map(|&c| Class::ascii(c)));
        }
        prev_hex = m.hex;
        let mut starts = m.upper & !(m.word << 1 | prev_word as u64);
        while starts != 0 {
            if entity_at(b, w * 64 + starts.trailing_zeros() as usize) {
                return true;
            }
            starts &= starts - 1;
        }
        prev_word = m.word >> (chunk.len() - 1) & 1 == 1;
    }
    false
}

/// `[A-Z][a-zA-Z]+\s+[A-Z][a-zA-Z]` at `p` (whose capital follows a
/// boundary). `[a-zA-Z]+` eats the whole letter run: `\s` is no letter.
fn entity_at(b: &[u8], p: usize) -> bool {
    let class = |j: usize| b.get(j).map_or(0, |&c| ASCII_CLASS[(c & 0x7f) as usize]);
    let mut j = p + 1;
    while class(j) & LETTER != 0 {
        j += 1;
    }
    if j == p + 1 || class(j) & SPACE == 0 {
        return false;
    }
    while class(j) & SPACE != 0 {
        j += 1;
    }
    class(j) & UPPER != 0 && class(j + 1) & LETTER != 0
}

/// Bit i of each mask describes byte i of a window of up to 64 bytes.
#[derive(Default)]
struct Masks {
    /// Digits and `$`.
    claim: u64,
    upper: u64,
    hex: u64,
    word: u64,
}

impl Masks {
    fn of(chunk: &[u8]) -> Masks {
        let mut m = Masks::default();
        let mut i = 0;
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::*;
            // SAFETY: SSE2 is in the x86-64 baseline; each load reads 16
            // bytes inside `chunk` (i + 16 <= len).
            unsafe {
                // `x - lo <= span` (unsigned) as a byte mask.
                let within = |x: __m128i, lo: u8, span: u8| {
                    let t = _mm_sub_epi8(x, _mm_set1_epi8(lo as i8));
                    _mm_cmpeq_epi8(_mm_min_epu8(t, _mm_set1_epi8(span as i8)), t)
                };
                while i + 16 <= chunk.len() {
                    let x = _mm_loadu_si128(chunk.as_ptr().add(i) as *const __m128i);
                    let folded = _mm_or_si128(x, _mm_set1_epi8(0x20));
                    let digit = within(x, b'0', 9);
                    let claim = _mm_or_si128(digit, _mm_cmpeq_epi8(x, _mm_set1_epi8(b'$' as i8)));
                    let upper = within(x, b'A', 25);
                    let hex = within(folded, b'a', 5);
                    let word = _mm_or_si128(
                        _mm_or_si128(within(folded, b'a', 25), digit),
                        _mm_cmpeq_epi8(x, _mm_set1_epi8(b'_' as i8)),
                    );
                    let bits = |v: __m128i| (_mm_movemask_epi8(v) as u32 as u64) << i;
                    m.claim |= bits(claim);
                    m.upper |= bits(upper);
                    m.hex |= bits(hex);
                    m.word |= bits(word);
                    i += 16;
                }
            }
        }
        for (k, &c) in chunk.iter().enumerate().skip(i) {
            let class = ASCII_CLASS[(c & 0x7f) as usize];
            m.claim |= u64::from(class & CLAIM != 0) << k;
            m.upper |= u64::from(class & UPPER != 0) << k;
            m.hex |= u64::from(class & HEX != 0 && !c.is_ascii_digit()) << k;
            m.word |= u64::from(class & WORD != 0) << k;
        }
        m
    }
}

/// The one pass over character classes (see the module doc).
fn scan(classes: impl Iterator<Item = Class>) -> bool {
    let mut prev_word = false;
    let mut hex_run = 0usize;
    let mut hex_start_ok = false;
    let mut entity = Entity::Idle;
    for c in classes {
        if c.claim {
            return true;
        }
        // Hex IDs.
        if c.hex {
            if hex_run == 0 {
                hex_start_ok = !prev_word;
            }
            hex_run += 1;
        } else {
            if hex_run >= 6 && hex_start_ok && !c.word {
                return true;
            }
            hex_run = 0;
        }
        // Two capitalised words.
        entity = match entity {
            Entity::Cap1 if c.letter => Entity::Word1,
            Entity::Word1 if c.letter => Entity::Word1,
            Entity::Word1 | Entity::Gap if c.space => Entity::Gap,
            Entity::Gap if c.upper => Entity::Cap2,
            Entity::Cap2 if c.letter => return true,
            // No state but Idle can restart on `c`: every failing character
            // above is not a capital (see the module doc).
            _ if c.upper && !prev_word => Entity::Cap1,
            _ => Entity::Idle,
        };
        prev_word = c.word;
    }
    hex_run >= 6 && hex_start_ok
}

#[cfg(test)]
mod tests {
    use super::draft_has_claims as claims;

    #[test]
    fn ascii_and_unicode_scans_agree() {
        for t in [
            "Got It",
            "ok abcdef",
            "abcdef_",
            "Thanks\u{1c}Anna",
            "A Bc",
            "xx Ab Cd",
            "deadbeef!",
            "$",
            "ok 4",
            "ok",
        ] {
            assert_eq!(
                super::scan(t.bytes().map(super::Class::ascii)),
                super::scan(t.chars().map(super::Class::of)),
                "{t:?}"
            );
        }
    }

    #[test]
    fn stand_ins_give_the_exact_scan_on_mixed_text() {
        let alphabet: Vec<char> =
            "abcdefABCDEFxyzG _.,\t-7$éßÉ日\u{3000}\u{a0}—«\u{301}٣€ſı\u{1c}abcdefAB Cd"
                .chars()
                .collect();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for case in 0..20_000 {
            let len = case % 120;
            let text: String = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    alphabet[(seed % alphabet.len() as u64) as usize]
                })
                .collect();
            assert_eq!(
                super::has_claims(&text, text.is_ascii()),
                super::scan(text.chars().map(super::Class::of)),
                "{text:?}"
            );
        }
    }

    #[test]
    fn ascii_word_pass_equals_the_exact_scan() {
        // Every window and boundary position: random ASCII over the bytes
        // that matter (digits and `$` rare, so the other patterns decide).
        let alphabet = b"abcdefABCDEFxyzGXZ _.,\t\n\x1c\x1f-abcdefABCDEFxyzGXZ _.,\t\n\x1c\x1f-7$";
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for case in 0..20_000 {
            let len = case % 200;
            let text: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    alphabet[(seed % alphabet.len() as u64) as usize]
                })
                .collect();
            let exact = super::scan(text.iter().map(|&c| super::Class::ascii(c)));
            assert_eq!(
                super::ascii_words(&text),
                exact,
                "{:?}",
                String::from_utf8_lossy(&text)
            );
        }
        // Runs that cross a 64-byte window.
        for at in 56..70 {
            let mut t = vec![b'x'; 140];
            t[at - 1] = b' ';
            t[at..at + 6].copy_from_slice(b"facade");
            t[at + 6] = b' ';
            assert!(super::ascii_words(&t), "{at}");
            let mut t = vec![b'q'; 140];
            t[at - 1] = b' ';
            t[at..at + 8].copy_from_slice(b"Ab \t Cd!");
            assert!(super::ascii_words(&t), "{at}");
        }
    }

    #[test]
    fn digits_are_unicode_decimals_only() {
        assert!(claims("ok ٣"));
        assert!(claims("ok ３"));
        assert!(!claims("ok ²"));
        assert!(!claims("ok ½"));
    }

    #[test]
    fn currency() {
        assert!(claims("thanks €"));
        assert!(claims("$"));
        assert!(!claims("thanks ₹"));
    }

    #[test]
    fn hex_ids_need_boundaries() {
        assert!(claims("great, decade"));
        assert!(claims("deadbeef"));
        assert!(!claims("ok abcde"));
        assert!(!claims("ok_abcdef"));
        assert!(!claims("café"));
        assert!(claims("okay,abcdef!"));
        assert!(!claims("xxxxxx"));
        assert!(!claims("ok ff ff ff"));
        assert!(!claims("abcdefé"));
        assert!(claims("abcdef\u{301}"));
    }

    #[test]
    fn entities_are_two_capitalised_ascii_words() {
        assert!(claims("Got It"));
        assert!(claims("Thanks\tAnna Bell"));
        assert!(claims("Thanks Anna\nBell"));
        assert!(claims("Thanks\u{1c}Anna"));
        assert!(!claims("sounds Good"));
        assert!(!claims("Thanks É Bell"));
        assert!(!claims("Thanks Ünal Bell"));
        assert!(!claims("ok, I'll do that"));
        assert!(!claims("Okay I'll Handle it"));
        assert!(claims("GOT IT"));
        assert!(!claims("éGot It"));
        assert!(claims("Ab C Def Gh"));
        assert!(!claims("A Bc"));
    }
}
