//! A fast, sound-but-incomplete JSON reader for turn lines.
//!
//! Parsing JSON is most of a replay's work, and `serde_json`'s general
//! machinery (a visitor call per token, a byte-at-a-time string scan) is
//! most of that. This reader handles the JSON that recorded traffic is
//! made of, finding string ends sixteen bytes at a time (SSE2), writing
//! each value where it will live, and gives up ([`Bail`]) on
//! anything it is not certain about: any syntax error, lone surrogates,
//! `-0`, integers outside 64 bits, numbers out of range, deep nesting.
//! A caller that gets `Bail` parses the line again with `serde_json`, which
//! stays the authority for what is valid and for every error message. So
//! the one property this module must have is: when it returns a value,
//! `serde_json` accepts the same text and reads the same value. The
//! property test `fast_reader_agrees_with_serde_json` checks exactly that.

use std::borrow::Cow;

use serde::de::Unexpected;

use super::Node;

/// The reader gave up: let `serde_json` parse the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bail;

/// Nesting deeper than this bails (`serde_json` allows 128).
const MAX_DEPTH: usize = 100;

/// A cursor over one line.
pub struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(text: &'a str) -> Reader<'a> {
        Reader {
            text,
            bytes: text.as_bytes(),
            pos: 0,
        }
    }

    /// The next byte, not consumed.
    #[inline]
    pub fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// Skip JSON whitespace.
    #[inline]
    pub fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// Consume `b` if it is next.
    #[inline]
    pub fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    #[inline]
    pub fn expect(&mut self, b: u8) -> Result<(), Bail> {
        if self.eat(b) {
            Ok(())
        } else {
            Err(Bail)
        }
    }

    pub fn at_end(&self) -> bool {
        self.pos == self.bytes.len()
    }

    /// An object key and its colon: `"key" :` (whitespace after the colon
    /// is skipped too).
    pub fn key(&mut self) -> Result<Cow<'a, str>, Bail> {
        self.expect(b'"')?;
        let k = self.string()?;
        self.ws();
        self.expect(b':')?;
        self.ws();
        Ok(k)
    }

    /// After `{` (and whitespace): whether another member follows, consuming
    /// the separator; `first` is true before the first member.
    pub fn more_members(&mut self, first: bool) -> Result<bool, Bail> {
        self.more(b'}', first)
    }

    /// After `[` (and whitespace): whether another item follows, consuming
    /// the separator; `first` is true before the first item.
    pub fn more_items(&mut self, first: bool) -> Result<bool, Bail> {
        self.more(b']', first)
    }

    #[inline]
    fn more(&mut self, close: u8, first: bool) -> Result<bool, Bail> {
        self.ws();
        if self.eat(close) {
            return Ok(false);
        }
        if !first {
            self.expect(b',')?;
            self.ws();
        }
        Ok(true)
    }

    /// One value, as a tree.
    pub fn value(&mut self) -> Result<Node<'a>, Bail> {
        let mut node = Node::Null;
        self.value_into(&mut node, 1, true)?;
        Ok(node)
    }

    /// Check one value and move past it, building nothing.
    pub fn skip_value(&mut self) -> Result<(), Bail> {
        self.value_into(&mut Node::Null, 1, false)
    }

    /// One value, as its exact text (checked, not built).
    pub fn raw_value(&mut self) -> Result<&'a str, Bail> {
        let start = self.pos;
        self.skip_value()?;
        Ok(&self.text[start..self.pos])
    }

    /// Read a value into `slot`, where it will live (returning nodes by
    /// value up the recursion cost store-forwarding stalls on every copy).
    /// With `keep` false, containers stay empty: checked, not built, so
    /// skipping allocates nothing.
    fn value_into(&mut self, slot: &mut Node<'a>, depth: usize, keep: bool) -> Result<(), Bail> {
        match self.peek().ok_or(Bail)? {
            b'"' => {
                self.pos += 1;
                match keep {
                    true => *slot = Node::Str(self.string()?),
                    false => self.skip_string()?,
                }
            }
            b'{' => {
                if depth > MAX_DEPTH {
                    return Err(Bail);
                }
                self.pos += 1;
                // Room for a critic record's members in one allocation.
                let mut members = Vec::with_capacity(if keep { 6 } else { 0 });
                let mut first = true;
                while self.more_members(first)? {
                    first = false;
                    let k = self.key()?;
                    if keep {
                        members.push((k, Node::Null));
                        let last = members.last_mut().map(|m| &mut m.1).ok_or(Bail)?;
                        self.value_into(last, depth + 1, true)?;
                    } else {
                        self.value_into(&mut Node::Null, depth + 1, false)?;
                    }
                }
                *slot = Node::Map(members);
            }
            b'[' => {
                if depth > MAX_DEPTH {
                    return Err(Bail);
                }
                self.pos += 1;
                let mut items = Vec::new();
                self.ws();
                if !self.eat(b']') {
                    loop {
                        if keep {
                            items.push(Node::Null);
                            let last = items.last_mut().ok_or(Bail)?;
                            self.value_into(last, depth + 1, true)?;
                        } else {
                            self.value_into(&mut Node::Null, depth + 1, false)?;
                        }
                        self.ws();
                        if self.eat(b']') {
                            break;
                        }
                        self.expect(b',')?;
                        self.ws();
                    }
                }
                *slot = Node::Seq(items);
            }
            b't' => *slot = self.literal(b"true", Node::Bool(true))?,
            b'f' => *slot = self.literal(b"false", Node::Bool(false))?,
            b'n' => *slot = self.literal(b"null", Node::Null)?,
            b'-' | b'0'..=b'9' => *slot = self.number()?,
            _ => return Err(Bail),
        }
        Ok(())
    }

    fn literal(&mut self, word: &[u8], node: Node<'a>) -> Result<Node<'a>, Bail> {
        if self.bytes[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(node)
        } else {
            Err(Bail)
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, read as `serde_json`
    /// reads it: integers as u64 (or i64 when negative), the rest as the
    /// correctly rounded f64.
    fn number(&mut self) -> Result<Node<'a>, Bail> {
        let start = self.pos;
        let negative = self.eat(b'-');
        let int_start = self.pos;
        let n = self.digits();
        if n == 0 || (n > 1 && self.bytes[int_start] == b'0') {
            return Err(Bail);
        }
        let mut float = false;
        if self.eat(b'.') {
            float = true;
            if self.digits() == 0 {
                return Err(Bail);
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            float = true;
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(Bail);
            }
        }
        let text = &self.text[start..self.pos];
        if float {
            let x: f64 = text.parse().map_err(|_| Bail)?;
            if !x.is_finite() {
                return Err(Bail);
            }
            Ok(Node::Num(x, Unexpected::Float(x)))
        } else if negative {
            // `-0` is a float in serde_json; overflow falls back to f64 there.
            match text.parse::<i64>() {
                Ok(i) if i != 0 => Ok(Node::Num(i as f64, Unexpected::Signed(i))),
                _ => Err(Bail),
            }
        } else {
            let u: u64 = text.parse().map_err(|_| Bail)?;
            Ok(Node::Num(u as f64, Unexpected::Unsigned(u)))
        }
    }

    /// The rest of a string whose opening quote is consumed: borrowed when
    /// it has no escapes.
    /// (Inlined: a string returned through memory stalled the reload.)
    #[inline(always)]
    fn string(&mut self) -> Result<Cow<'a, str>, Bail> {
        let start = self.pos;
        let end = self.plain_run()?;
        if self.bytes[end] == b'"' {
            self.pos = end + 1;
            return Ok(Cow::Borrowed(&self.text[start..end]));
        }
        self.escaped_string(start, end)
    }

    /// A string with escapes, from `start` to its first backslash at `end`.
    #[inline(never)]
    fn escaped_string(&mut self, start: usize, end: usize) -> Result<Cow<'a, str>, Bail> {
        let mut out = String::with_capacity(end - start + 64);
        out.push_str(&self.text[start..end]);
        self.rest_of_string(end, &mut out)?;
        Ok(Cow::Owned(out))
    }

    /// The rest of a string from `from` (the bytes before it given to
    /// `out` already) to past its closing quote, its text given to `out`.
    /// Sixteen bytes at a time, every escape in them read from one mask:
    /// a tool result or a call's arguments are JSON written inside a
    /// string, an escaped quote every few bytes, and going back to the
    /// scan after each was most of the cost of reading one.
    #[inline(always)]
    fn rest_of_string<S: Sink>(&mut self, from: usize, out: &mut S) -> Result<(), Bail> {
        let b = self.bytes;
        // Bytes from `run` on are plain and not yet given to `out`.
        let (mut run, mut i) = (from, from);
        'chunks: while i + 16 <= b.len() {
            let mut m = special_mask(&b[i..i + 16]);
            while m != 0 {
                let k = i + m.trailing_zeros() as usize;
                out.text(self.text, run, k);
                match b[k] {
                    b'"' => {
                        self.pos = k + 1;
                        return Ok(());
                    }
                    b'\\' => {}
                    _ => return Err(Bail),
                }
                run = self.escape(k + 1, out)?;
                if run >= i + 16 {
                    i = run;
                    continue 'chunks;
                }
                m &= u32::MAX << (run - i);
            }
            i += 16;
        }
        // The last few bytes, a run at a time.
        self.pos = run;
        loop {
            let end = self.plain_run()?;
            out.text(self.text, self.pos, end);
            if b[end] == b'"' {
                self.pos = end + 1;
                return Ok(());
            }
            self.pos = self.escape(end + 1, out)?;
        }
    }

    /// The escape whose letter is at `at` (after its backslash), its
    /// character given to `out`: the index after it.
    #[inline]
    fn escape<S: Sink>(&mut self, at: usize, out: &mut S) -> Result<usize, Bail> {
        let c = match self.bytes.get(at) {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                self.pos = at + 1;
                let c = self.unicode_escape()?;
                out.char(c);
                return Ok(self.pos);
            }
            _ => return Err(Bail),
        };
        out.char(c);
        Ok(at + 1)
    }

    /// A `\u` escape's character (the cursor after the `u`): a surrogate
    /// only as a well-formed pair; anything else bails.
    fn unicode_escape(&mut self) -> Result<char, Bail> {
        let hi = self.hex4()?;
        let c = match hi {
            0xD800..=0xDBFF => {
                if !self.bytes[self.pos..].starts_with(b"\\u") {
                    return Err(Bail);
                }
                self.pos += 2;
                let lo = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&lo) {
                    return Err(Bail);
                }
                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(Bail),
            c => c,
        };
        char::from_u32(c).ok_or(Bail)
    }

    /// Move past a string (the cursor after its opening quote), checking
    /// it as [`Reader::string`] does and building nothing.
    fn skip_string(&mut self) -> Result<(), Bail> {
        self.rest_of_string(self.pos, &mut ())
    }

    /// From the cursor, the index of the next `"` or `\`; bails on a control
    /// character before it (JSON forbids them raw) or at the end of text.
    #[inline]
    fn plain_run(&self) -> Result<usize, Bail> {
        let rest = &self.bytes[self.pos..];
        let k = find_special(rest).ok_or(Bail)?;
        if rest[k] < 0x20 {
            return Err(Bail);
        }
        Ok(self.pos + k)
    }

    fn hex4(&mut self) -> Result<u32, Bail> {
        let h = self.bytes.get(self.pos..self.pos + 4).ok_or(Bail)?;
        let mut v = 0u32;
        for &b in h {
            let d = (b as char).to_digit(16).ok_or(Bail)?;
            v = v * 16 + d;
        }
        self.pos += 4;
        Ok(v)
    }
}

/// The index of the first `"`, `\` or control character (< 0x20): the
/// bytes that end a plain run of a JSON string. Sixteen bytes at a time
/// (`special_mask`: SSE2, part of every x86-64), so a 1 KB draft costs
/// a few hundred instructions; byte by byte for the last few bytes.
#[inline]
pub fn find_special(s: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i + 16 <= s.len() {
        let bits = special_mask(&s[i..i + 16]);
        if bits != 0 {
            return Some(i + bits.trailing_zeros() as usize);
        }
        i += 16;
    }
    s[i..]
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map(|k| i + k)
}

/// Where a string's text goes as it is read: nowhere (it is only
/// checked) or into a `String`.
trait Sink {
    /// `src[start..end]`, plain text.
    fn text(&mut self, src: &str, start: usize, end: usize);
    fn char(&mut self, c: char);
}

impl Sink for () {
    #[inline(always)]
    fn text(&mut self, _: &str, _: usize, _: usize) {}
    #[inline(always)]
    fn char(&mut self, _: char) {}
}

impl Sink for String {
    #[inline(always)]
    fn text(&mut self, src: &str, start: usize, end: usize) {
        self.push_str(&src[start..end]);
    }
    #[inline(always)]
    fn char(&mut self, c: char) {
        self.push(c);
    }
}

/// Of `s`'s 16 bytes, a bit for each `"`, `\` or control character
/// (< 0x20), the first byte the lowest bit.
#[inline]
fn special_mask(s: &[u8]) -> u32 {
    let s: &[u8; 16] = s.try_into().expect("16 bytes");
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is in the x86-64 baseline; the load reads the 16
        // bytes of `s`.
        unsafe {
            let x = _mm_loadu_si128(s.as_ptr() as *const __m128i);
            let control = _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1f)), x);
            let hits = _mm_or_si128(
                _mm_or_si128(
                    _mm_cmpeq_epi8(x, _mm_set1_epi8(b'"' as i8)),
                    _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\\' as i8)),
                ),
                control,
            );
            _mm_movemask_epi8(hits) as u32
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut m = 0;
        for (k, &c) in s.iter().enumerate() {
            if c == b'"' || c == b'\\' || c < 0x20 {
                m |= 1 << k;
            }
        }
        m
    }
}

/// `text` is one JSON value with nothing but whitespace around it
/// (checked, not built).
pub fn check(text: &str) -> Result<(), Bail> {
    let mut r = Reader::new(text);
    r.ws();
    r.skip_value()?;
    r.ws();
    match r.at_end() {
        true => Ok(()),
        false => Err(Bail),
    }
}

/// `text` as one JSON value with nothing but whitespace around it.
pub fn parse(text: &str) -> Result<Node<'_>, Bail> {
    let mut r = Reader::new(text);
    r.ws();
    let v = r.value()?;
    r.ws();
    if r.at_end() {
        Ok(v)
    } else {
        Err(Bail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    /// `serde_json`'s reading of `text`, as a tree.
    pub(super) fn reference(text: &str) -> Result<Node<'_>, ()> {
        let mut de = serde_json::Deserializer::from_str(text);
        let v = Node::deserialize(&mut de).map_err(|_| ())?;
        de.end().map_err(|_| ())?;
        Ok(v)
    }

    fn agrees(text: &str) {
        if let Ok(v) = parse(text) {
            assert_eq!(reference(text), Ok(v), "{text:?}");
        }
        // Skipping accepts exactly what building accepts.
        let mut r = Reader::new(text);
        r.ws();
        let skipped = r.skip_value().is_ok() && {
            r.ws();
            r.at_end()
        };
        assert_eq!(skipped, parse(text).is_ok(), "{text:?}");
    }

    #[test]
    fn reads_what_turns_are_made_of() {
        let t = r#" {"a": [1, -2, 2.5, 1e3, true, false, null], "b": {"c": "d\n\u00e9\ud83d\ude00"}, "e": ""} "#;
        let v = parse(t).unwrap();
        assert_eq!(reference(t), Ok(v));
        let Node::Map(m) = parse(r#"{"k":"plain"}"#).unwrap() else {
            panic!()
        };
        assert!(matches!(m[0].1, Node::Str(Cow::Borrowed("plain"))));
    }

    #[test]
    fn bails_on_what_it_is_not_sure_of() {
        for t in [
            "",
            "{",
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            "[1,]",
            "01",
            "1.",
            "-",
            "-0",
            "1e999",
            "18446744073709551616",
            "-9223372036854775809",
            r#""\ud800""#,
            r#""\udc00x""#,
            r#""\x""#,
            "\"a\u{1}b\"",
            "tru",
            "nul",
            "{} x",
            &"[".repeat(200),
        ] {
            assert_eq!(parse(t), Err(Bail), "{t:?}");
            agrees(t);
        }
    }

    #[test]
    fn special_bytes_are_found_at_every_offset() {
        for len in 0..40 {
            for at in 0..len {
                for special in [b'"', b'\\', 0x00, 0x1f] {
                    let mut s = vec![b'a'; len];
                    s[at] = special;
                    if at + 1 < len {
                        s[at + 1] = b'"';
                    }
                    assert_eq!(find_special(&s), Some(at), "{len} {at} {special}");
                }
            }
            // 0x20 and bytes >= 0x80 (UTF-8) are plain.
            let plain: Vec<u8> = (0..len).map(|k| [b' ', 0x80, 0xff, b'z'][k % 4]).collect();
            assert_eq!(find_special(&plain), None);
        }
    }

    #[test]
    fn numbers_read_as_serde_json_reads_them() {
        for t in [
            "0",
            "7",
            "-7",
            "0.1",
            "2.0",
            "1e5",
            "1E-5",
            "-1.5e+3",
            "0.30000000000000004",
            "9007199254740993",
            "18446744073709551615",
            "-9223372036854775808",
            "1.7976931348623157e308",
            "5e-324",
            "123456789012345678901234567890.5",
        ] {
            assert!(parse(t).is_ok(), "{t}");
            agrees(t);
        }
    }
}
