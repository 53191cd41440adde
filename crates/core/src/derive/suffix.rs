//! Which `{` of a reply could start one JSON value that runs to the end of
//! the reply, checked without building it: symfonic's last-resort scan
//! tries `json.loads` on the suffix from every `{`, last first, and
//! building each suffix's strict JSON made a reply of many braces
//! quadratic (a 128 KB reply took 21 s; 1 MB would take about 22
//! minutes). [`Suffixes`] validates the grammar Python's `json.loads`
//! accepts (NaN, Infinity, -Infinity; control characters refused inside
//! strings) and remembers where each container that starts at a position
//! ends, so the candidates, tried right to left, share the work: each
//! container is scanned once, and a scan stops at its first error.
//!
//! It is a filter, never the judge: a suffix it accepts is still parsed by
//! [`super::reflection::python_json`]; a suffix it refuses cannot parse
//! (a test holds that on arbitrary fragments).

use std::collections::HashMap;

use super::reflection::MAX_VOUCHED_DEPTH;

/// A value's end (one past its last byte) and its nesting height (1 for
/// a scalar or an empty container), or why there is none.
type Scanned = Result<(usize, usize), Fail>;

/// Why no value starts at a position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fail {
    /// Not the grammar: the same from any start.
    Syntax,
    /// This scan recursed past [`MAX_VOUCHED_DEPTH`]: a scan from a start
    /// nearer may still vouch for it.
    Deep,
}

/// The validator over one text, with what it has learnt of its containers.
pub(super) struct Suffixes<'a> {
    b: &'a [u8],
    /// A container starting at a position: where it ends and how deep it
    /// nests, or that it is not one JSON value.
    containers: HashMap<usize, Scanned>,
    /// Values started and bytes of strings and whitespace read: the work
    /// done, which a test holds linear in the text.
    steps: usize,
}

impl<'a> Suffixes<'a> {
    pub(super) fn new(text: &'a str) -> Suffixes<'a> {
        Suffixes {
            b: text.as_bytes(),
            containers: HashMap::new(),
            steps: 0,
        }
    }

    /// Whether the text from `pos` to its end could be one JSON value
    /// (trailing JSON whitespace allowed) nested no deeper than CPython's
    /// decoder is vouched for.
    pub(super) fn may_parse(&mut self, pos: usize) -> bool {
        match self.value(pos, 0) {
            Ok((end, height)) => height <= MAX_VOUCHED_DEPTH && self.ws(end) == self.b.len(),
            Err(_) => false,
        }
    }

    fn ws(&mut self, mut i: usize) -> usize {
        while i < self.b.len() && matches!(self.b[i], b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
            self.steps += 1;
        }
        i
    }

    /// The value starting at `i` (no whitespace before it); `depth` is how
    /// deep this scan has recursed, past [`MAX_VOUCHED_DEPTH`] it gives up
    /// without remembering (a shallower start may still reach it).
    fn value(&mut self, i: usize, depth: usize) -> Scanned {
        self.steps += 1;
        let scalar = |end: Option<usize>| end.map(|e| (e, 1)).ok_or(Fail::Syntax);
        match *self.b.get(i).ok_or(Fail::Syntax)? {
            b'{' | b'[' => {
                if let Some(known) = self.containers.get(&i) {
                    return *known;
                }
                if depth > MAX_VOUCHED_DEPTH {
                    return Err(Fail::Deep);
                }
                let scanned = self.container(i, depth);
                // A scan cut short by this start's depth is not the
                // container's own answer (unless it is the start).
                if scanned != Err(Fail::Deep) || depth == 0 {
                    self.containers.insert(i, scanned);
                }
                scanned
            }
            b'"' => {
                let end = self.string(i);
                self.steps += end.unwrap_or(i) - i;
                scalar(end)
            }
            b't' => scalar(self.word(i, b"true")),
            b'f' => scalar(self.word(i, b"false")),
            b'n' => scalar(self.word(i, b"null")),
            b'N' => scalar(self.word(i, b"NaN")),
            b'I' => scalar(self.word(i, b"Infinity")),
            b'-' if self.b[i + 1..].starts_with(b"Infinity") => Ok((i + 9, 1)),
            b'-' | b'0'..=b'9' => scalar(self.number(i)),
            _ => Err(Fail::Syntax),
        }
    }

    fn word(&self, i: usize, w: &[u8]) -> Option<usize> {
        self.b[i..].starts_with(w).then_some(i + w.len())
    }

    /// An object or array from its opening bracket.
    fn container(&mut self, open: usize, depth: usize) -> Scanned {
        let object = self.b[open] == b'{';
        let close = if object { b'}' } else { b']' };
        let mut i = self.ws(open + 1);
        let mut height = 0;
        if self.b.get(i) == Some(&close) {
            return Ok((i + 1, 1));
        }
        loop {
            if object {
                if self.b.get(i) != Some(&b'"') {
                    return Err(Fail::Syntax);
                }
                let end = self.string(i).ok_or(Fail::Syntax)?;
                self.steps += end - i;
                i = self.ws(end);
                if self.b.get(i) != Some(&b':') {
                    return Err(Fail::Syntax);
                }
                i = self.ws(i + 1);
            }
            let (end, h) = self.value(i, depth + 1)?;
            height = height.max(h);
            i = self.ws(end);
            match self.b.get(i) {
                Some(b',') => i = self.ws(i + 1),
                Some(c) if *c == close => return Ok((i + 1, height + 1)),
                _ => return Err(Fail::Syntax),
            }
        }
    }

    /// A string from its opening quote to one past its closing one:
    /// escapes as JSON's, no control character (Python's strict mode).
    fn string(&self, open: usize) -> Option<usize> {
        let mut i = open + 1;
        loop {
            match *self.b.get(i)? {
                b'"' => return Some(i + 1),
                b'\\' => match *self.b.get(i + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                    b'u' => {
                        let hex = self.b.get(i + 2..i + 6)?;
                        if !hex.iter().all(u8::is_ascii_hexdigit) {
                            return None;
                        }
                        i += 6;
                    }
                    _ => return None,
                },
                c if c < 0x20 => return None,
                _ => i += 1,
            }
        }
    }

    /// A number as JSON's grammar (Python's `NUMBER_RE`).
    fn number(&self, mut i: usize) -> Option<usize> {
        let digits = |from: usize| {
            let n = self.b[from..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count();
            (n > 0).then_some(from + n)
        };
        if self.b[i] == b'-' {
            i += 1;
        }
        i = match self.b.get(i)? {
            b'0' => i + 1,
            b'1'..=b'9' => digits(i)?,
            _ => return None,
        };
        if self.b.get(i) == Some(&b'.') {
            // Python reads "1." as the number 1 and stops before the dot.
            if let Some(e) = digits(i + 1) {
                i = e;
            }
        }
        if matches!(self.b.get(i), Some(b'e' | b'E')) {
            let sign = usize::from(matches!(self.b.get(i + 1), Some(b'+' | b'-')));
            if let Some(e) = digits(i + 1 + sign) {
                i = e;
            }
        }
        Some(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every candidate of a reply, right to left, as the scan tries them:
    /// the work done over the text's length.
    fn work_per_byte(text: &str) -> f64 {
        let mut s = Suffixes::new(text);
        for (pos, _) in text.match_indices('{').rev() {
            s.may_parse(pos);
        }
        s.steps as f64 / text.len() as f64
    }

    /// #47 item 6: the scan is linear in the reply, on the shapes that
    /// made it quadratic (braces, nested objects, a long string or list
    /// inside many objects, a syntax error at the far end) at 1 MB. (The
    /// work is counted, not timed; on the bench machine a 1 MB reply of
    /// braces takes well under a second through `replay`.)
    #[test]
    fn the_scan_is_linear_in_the_reply() {
        let mb = 1 << 20;
        let cases = [
            "{".repeat(mb / 2) + &"}".repeat(mb / 2),
            "{\"a\":".repeat(mb / 10) + "1" + &"}".repeat(mb / 10),
            "{\"a\":[".repeat(700) + "\"" + &"x".repeat(mb) + "\"" + &"]}".repeat(700),
            "{\"a\":[".repeat(700) + &"1,".repeat(mb / 2) + "x" + &"]}".repeat(700),
            "{\"a\":[".repeat(mb / 12) + "1" + &"]}".repeat(mb / 12),
            "{\"k\": {}, ".repeat(mb / 10) + "}",
        ];
        for text in &cases {
            let w = work_per_byte(text);
            assert!(
                w <= 4.0,
                "{} bytes from {:?}: {w} steps a byte",
                text.len(),
                &text[..20]
            );
        }
    }

    /// The filter never refuses what Python parses: any fragment of a
    /// JSON-like alphabet that [`python_json`] reads as a value, it lets
    /// through (and a serialized value always).
    #[test]
    fn it_never_refuses_what_python_parses() {
        use proptest::prelude::*;
        let alphabet = proptest::sample::select(vec![
            "{", "}", "[", "]", "\"", ":", ",", " ", "\n", "1", "0", "-", ".", "e", "+", "a", "\\",
            "u", "NaN", "Infinity", "true", "null", "\"k\"", "\t", "é",
        ]);
        let fragment = proptest::collection::vec(alphabet, 0..40).prop_map(|v| v.concat());
        proptest!(ProptestConfig::with_cases(20_000), |(f in fragment)| {
            let f = format!("{{{f}");
            if let Ok(Some(_)) = super::super::reflection::python_json(&f, "1") {
                prop_assert!(Suffixes::new(&f).may_parse(0), "{:?}", f);
            }
        });
        let value = proptest::collection::vec(("[a-z\"\\\\é]{0,4}", -1e6f64..1e6), 0..6);
        proptest!(ProptestConfig::with_cases(2_000), |(pairs in value)| {
            let map: serde_json::Map<String, serde_json::Value> =
                pairs.into_iter().map(|(k, x)| (k, serde_json::json!([x, {"n": null}]))).collect();
            let f = serde_json::Value::Object(map).to_string();
            prop_assert!(Suffixes::new(&f).may_parse(0), "{:?}", f);
        });
    }

    /// What it accepts and refuses, as Python's `json.loads` does.
    #[test]
    fn the_grammar_is_pythons() {
        let ok = |s: &str| Suffixes::new(s).may_parse(0);
        for s in [
            r#"{"ops": [1, 2.5e3, -0, NaN, -Infinity, Infinity, true, null]}"#,
            "{ \"a\" : { } , \"b\" : [ ] }\n",
            r#"{"s": "\u00e9\n\"\\"}"#,
            "[]",
        ] {
            assert!(ok(s), "{s}");
        }
        for s in [
            r#"{"a": 01}"#,
            r#"{"a": 1,}"#,
            r#"{a: 1}"#,
            "{\"a\": \"tab\there\"}",
            r#"{"a": "\x"}"#,
            r#"{"a": 1}}"#,
            r#"{"a": 1} x"#,
            "{",
        ] {
            assert!(!ok(s), "{s}");
        }
    }
}
