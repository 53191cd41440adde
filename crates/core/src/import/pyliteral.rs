//! A Python literal as `repr()` writes one (symfonic's OTel exporter
//! records a tool call's arguments as `repr(args)`), read back into JSON
//! text: dicts with string keys, lists, strings, whole and decimal numbers,
//! `True`, `False`, `None`. Only a reading that `repr` writes back to the
//! very same text is kept, so what the fabrication check grounds on
//! (Python's `str()` of the arguments) is exactly production's; anything
//! else (a tuple, a set, an object, a cut text) stays the recorded string.

use crate::derive::fabrication::py_repr;

/// The JSON text of what `text` is the `repr()` of, when it reads back
/// exactly; None otherwise.
pub fn to_json(text: &str) -> Option<String> {
    let mut p = Parser { s: text, i: 0 };
    let mut out = String::with_capacity(text.len());
    p.value(&mut out, 0)?;
    if p.i != text.len() {
        return None;
    }
    (py_repr(&out) == text).then_some(out)
}

/// The deepest nesting read (deeper: kept as the string).
const MAX_DEPTH: usize = 64;

struct Parser<'a> {
    s: &'a str,
    i: usize,
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.s[self.i..]
    }

    fn eat(&mut self, token: &str) -> bool {
        let ok = self.rest().starts_with(token);
        if ok {
            self.i += token.len();
        }
        ok
    }

    fn value(&mut self, out: &mut String, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        let c = self.rest().chars().next()?;
        match c {
            '{' => self.dict(out, depth),
            '[' => self.list(out, depth),
            '\'' | '"' => {
                let s = self.string()?;
                out.push_str(&serde_json::to_string(&s).ok()?);
                Some(())
            }
            _ => {
                for (py, json) in [("True", "true"), ("False", "false"), ("None", "null")] {
                    if self.eat(py) {
                        out.push_str(json);
                        return Some(());
                    }
                }
                self.number(out)
            }
        }
    }

    fn dict(&mut self, out: &mut String, depth: usize) -> Option<()> {
        self.eat("{");
        out.push('{');
        let mut first = true;
        while !self.eat("}") {
            if !first {
                self.eat(", ").then_some(())?;
                out.push(',');
            }
            first = false;
            let c = self.rest().chars().next()?;
            // A JSON object's keys are strings.
            (c == '\'' || c == '"').then_some(())?;
            let key = self.string()?;
            out.push_str(&serde_json::to_string(&key).ok()?);
            self.eat(": ").then_some(())?;
            out.push(':');
            self.value(out, depth + 1)?;
        }
        out.push('}');
        Some(())
    }

    fn list(&mut self, out: &mut String, depth: usize) -> Option<()> {
        self.eat("[");
        out.push('[');
        let mut first = true;
        while !self.eat("]") {
            if !first {
                self.eat(", ").then_some(())?;
                out.push(',');
            }
            first = false;
            self.value(out, depth + 1)?;
        }
        out.push(']');
        Some(())
    }

    /// A quoted string with the escapes `repr` writes.
    fn string(&mut self) -> Option<String> {
        let quote = self.rest().chars().next()?;
        self.i += 1;
        let mut s = String::new();
        loop {
            let c = self.rest().chars().next()?;
            self.i += c.len_utf8();
            match c {
                c if c == quote => return Some(s),
                '\\' => s.push(self.escape()?),
                c => s.push(c),
            }
        }
    }

    fn escape(&mut self) -> Option<char> {
        let c = self.rest().chars().next()?;
        self.i += c.len_utf8();
        let hex = |p: &mut Parser, n: usize| -> Option<char> {
            let digits = p.s.get(p.i..p.i + n)?;
            p.i += n;
            char::from_u32(u32::from_str_radix(digits, 16).ok()?)
        };
        match c {
            '\\' | '\'' | '"' => Some(c),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'x' => hex(self, 2),
            'u' => hex(self, 4),
            'U' => hex(self, 8),
            _ => None,
        }
    }

    /// A number as JSON can hold it (`repr`'s `inf`, `nan` and integers
    /// past 64 bits are not read: the round trip would differ).
    fn number(&mut self, out: &mut String) -> Option<()> {
        let len = self
            .rest()
            .find(|c: char| !matches!(c, '0'..='9' | '-' | '+' | '.' | 'e' | 'E'))
            .unwrap_or(self.rest().len());
        let token = &self.rest()[..len];
        serde_json::from_str::<serde_json::Number>(token).ok()?;
        out.push_str(token);
        self.i += len;
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::to_json;

    #[test]
    fn reprs_read_back_only_when_exact() {
        assert_eq!(
            to_json("{'order_id': 'ORD-1042'}").as_deref(),
            Some(r#"{"order_id":"ORD-1042"}"#)
        );
        assert_eq!(
            to_json(r#"{'a': [1, 2.5, None, True], "it's": 'x\n\x00é'}"#).as_deref(),
            Some(r#"{"a":[1,2.5,null,true],"it's":"x\n\u0000é"}"#)
        );
        assert_eq!(to_json("'plain'").as_deref(), Some(r#""plain""#));
        for kept in [
            "(1, 2)",
            "{1: 'a'}",
            "{'a': inf}",
            "<Tool object at 0x1>",
            "{'a': 1",
            "1e16",
            "{'a':1}",
        ] {
            assert_eq!(to_json(kept), None, "{kept}");
        }
    }
}
