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

use crate::pyre::{is_decimal, is_space, is_word};

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
    if text.is_ascii() {
        let b = text.as_bytes();
        // A vectorisable first pass for the commonest claims.
        if b.iter().any(|&c| c.is_ascii_digit() || c == b'$') {
            return true;
        }
        scan(b.iter().map(|&c| Class::ascii(c)))
    } else {
        scan(text.chars().map(Class::of))
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
