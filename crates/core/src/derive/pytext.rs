//! CPython 3.11's `unicodedata.normalize("NFC", s)` and `repr(s)`, as the
//! derivations need them (symfonic normalises queries and keywords, and
//! writes matched names into its reasoning with `repr`).
//!
//! NFC comes from `unicode-normalization`, whose tables are newer (Unicode
//! 16) than CPython 3.11's (Unicode 14). Normalization is stable for the
//! characters both know; a character CPython does not know has no
//! decomposition there, sorts as a starter and composes with nothing, so
//! the text is normalised in pieces split at such characters, which are
//! kept as they are.

use std::borrow::Cow;

use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};

use crate::gate::pyre::{in_ranges, tables};

/// Whether CPython 3.11's Unicode assigns `c`.
fn assigned(c: char) -> bool {
    c.is_ascii() || in_ranges(tables::PY_ASSIGNED, c)
}

/// `unicodedata.normalize("NFC", s)` of CPython 3.11; borrowed when `s`
/// is already normalised (all ASCII text is).
pub fn nfc(s: &str) -> Cow<'_, str> {
    if s.is_ascii() || is_nfc_quick(s.chars()) == IsNormalized::Yes && s.chars().all(assigned) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some((i, c)) = rest.char_indices().find(|&(_, c)| !assigned(c)) {
        out.extend(rest[..i].nfc());
        out.push(c);
        rest = &rest[i + c.len_utf8()..];
    }
    out.extend(rest.nfc());
    if out == s {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(out)
    }
}

/// `repr(s)`: in single quotes unless `s` holds a single quote and no
/// double one; backslash, the quote, tab, newline and carriage return
/// escaped; any other character `str.isprintable()` calls not printable
/// as `\xhh`, `\uhhhh` or `\Uhhhhhhhh`.
pub fn repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if printable(c) => out.push(c),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push(quote);
    out
}

/// Classes of ASCII bytes the hand-written matchers read, one lookup a
/// byte: CPython's `\w` on ASCII (`[A-Za-z0-9_]`), hex digits, the
/// key-value pattern's value characters (`[A-Za-z0-9_\-./]`), `-`, and
/// upper-case letters.
pub(crate) const WORD: u8 = 1;
pub(crate) const HEX: u8 = 2;
pub(crate) const VALUE: u8 = 4;
pub(crate) const HYPHEN: u8 = 8;
pub(crate) const UPPER: u8 = 16;
const ASCII_CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 128 {
        let b = c as u8;
        if b.is_ascii_alphanumeric() || b == b'_' {
            t[c] |= WORD | VALUE;
        }
        if b.is_ascii_hexdigit() {
            t[c] |= HEX;
        }
        if matches!(b, b'-' | b'.' | b'/') {
            t[c] |= VALUE;
        }
        if b == b'-' {
            t[c] |= HYPHEN;
        }
        if b.is_ascii_uppercase() {
            t[c] |= UPPER;
        }
        c += 1;
    }
    t
};

/// The [`ASCII_CLASS`] bits of a byte (none for a non-ASCII byte).
#[inline]
pub(crate) fn ascii_class(b: u8) -> u8 {
    ASCII_CLASS[b as usize]
}

/// `repr` of a list of strings: `['a', 'b']`.
pub fn repr_list(items: &[String]) -> String {
    let mut out = String::from("[");
    for (k, s) in items.iter().enumerate() {
        if k > 0 {
            out.push_str(", ");
        }
        out.push_str(&repr(s));
    }
    out.push(']');
    out
}

/// `str.isprintable()` of one character.
fn printable(c: char) -> bool {
    if c.is_ascii() {
        (' '..='~').contains(&c)
    } else {
        in_ranges(tables::PY_PRINTABLE, c)
    }
}

/// The index after the string opening at `b[i]` (or the end of the text).
pub(crate) fn string_end(b: &[u8], mut i: usize) -> usize {
    i += 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// The deepest nesting of arrays and objects outside strings of JSON text
/// (of any text: brackets inside strings are skipped).
pub fn json_depth(s: &str) -> usize {
    let b = s.as_bytes();
    let (mut i, mut d, mut max) = (0, 0usize, 0);
    while i < b.len() {
        match b[i] {
            b'"' => {
                i = string_end(b, i);
                continue;
            }
            b'[' | b'{' => {
                d += 1;
                max = max.max(d);
            }
            b']' | b'}' => d = d.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    max
}

/// The number `NaN` is written as by [`nonfinite_as_numbers`]: a literal
/// JSON reads (as -0.0) that no writer produces; [`py_float_literal`]
/// reads it back as NaN.
pub const NAN_LITERAL: &str = "-0e-314159265358979323846264338327950288";

/// A text that already holds [`NAN_LITERAL`]: it would read back as NaN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HoldsNanLiteral;

impl std::fmt::Display for HoldsNanLiteral {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the line holds the number {NAN_LITERAL}, which critic-gate reserves for NaN"
        )
    }
}

impl std::error::Error for HoldsNanLiteral {}

/// JSON text with Python's `json.loads` extensions outside strings
/// (`NaN`, `Infinity`, `-Infinity`) written as numbers: `Infinity` as
/// `1e999999` (which reads as infinity), `NaN` as [`NAN_LITERAL`]. Borrowed
/// when there is none; Err when the text already holds [`NAN_LITERAL`]
/// (it would read back as NaN).
pub fn nonfinite_as_numbers(text: &str) -> Result<Cow<'_, str>, HoldsNanLiteral> {
    let b = text.as_bytes();
    // Most lines hold none of the three words' capitals outside strings.
    if memchr::memchr2(b'N', b'I', b).is_none() {
        return Ok(Cow::Borrowed(text));
    }
    let mut out = String::new();
    let (mut copied, mut i) = (0, 0);
    while i < b.len() {
        if b[i] == b'"' {
            i = string_end(b, i);
            continue;
        }
        let word = [("NaN", NAN_LITERAL), ("Infinity", "1e999999")]
            .into_iter()
            .find(|(w, _)| b[i..].starts_with(w.as_bytes()));
        match word {
            Some((w, number)) => {
                out.push_str(&text[copied..i]);
                out.push_str(number);
                i += w.len();
                copied = i;
            }
            None => i += 1,
        }
    }
    if copied == 0 {
        return Ok(Cow::Borrowed(text));
    }
    out.push_str(&text[copied..]);
    if text.contains(NAN_LITERAL) {
        return Err(HoldsNanLiteral);
    }
    Ok(Cow::Owned(out))
}

/// A JSON number literal as Python's `json.loads` reads a non-integer:
/// `float(literal)` (out-of-range exponents give infinity or zero), and
/// [`NAN_LITERAL`] as NaN. None for text that is not a number.
pub fn py_float_literal(raw: &str) -> Option<f64> {
    let t = raw.trim();
    if t == NAN_LITERAL {
        return Some(f64::NAN);
    }
    let first = t.bytes().next()?;
    if !(first == b'-' || first.is_ascii_digit()) {
        return None;
    }
    t.parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repr_quotes_and_escapes_as_python() {
        for (s, want) in [
            ("why", "'why'"),
            ("it's", "\"it's\""),
            ("a'b\"c", "'a\\'b\"c'"),
            ("tab\there\n", "'tab\\there\\n'"),
            ("back\\slash", "'back\\\\slash'"),
            ("\u{7f}\u{85}\u{a0}é", "'\\x7f\\x85\\xa0é'"),
            ("\u{200b}\u{1f600}\u{e0001}", "'\\u200b😀\\U000e0001'"),
        ] {
            assert_eq!(repr(s), want, "{s:?}");
        }
        assert_eq!(repr_list(&["a".into(), "b'".into()]), "['a', \"b'\"]");
        assert_eq!(repr_list(&[]), "[]");
    }

    /// CPython 3.11's NFC (`scripts/cpython_nfc_cases.py`): mixed bases,
    /// combining marks in every order, Hangul, and characters newer than
    /// Unicode 14 that `unicode-normalization` would compose.
    #[test]
    fn nfc_matches_cpython() {
        let cases = include_str!("../../tests/cpython/nfc.jsonl");
        let (mut n, mut changed, mut newer) = (0, 0, 0);
        for line in cases.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let (s, want) = (v["s"].as_str().unwrap(), v["nfc"].as_str().unwrap());
            assert_eq!(
                nfc(s),
                want,
                "{:?}",
                s.chars().map(|c| c as u32).collect::<Vec<_>>()
            );
            n += 1;
            changed += usize::from(s != want);
            // Where the crate's Unicode 16 tables alone would be wrong.
            newer += usize::from(s.nfc().collect::<String>() != want);
        }
        assert!(n >= 2000, "{n} cases");
        assert!(
            changed > 500 && newer > 50,
            "{changed} changed, {newer} by newer tables"
        );
    }
}
