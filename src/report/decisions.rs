//! `decisions.csv`: one row per (turn, variant), streamed.
//!
//! This is the one report that grows with the input (two variants over ten
//! million turns is twenty million rows), so it is not built as a
//! DataFrame: each worker formats its block's rows into bytes (RFC 4180
//! quoting, as polars writes), and the writer appends them in input order.
//! Building a DataFrame per block doubled the replay's run time.

use std::io::Write;

use crate::gate::Reasons;
use crate::turn::Verdict;

pub const HEADER: &str = "source,line,run_id,turn,variant,fires,baseline_fires,reasons,language,scope,intent,draft_chars,confidence,verdict\n";

/// The fields of one row, borrowed from the turn.
pub struct Row<'a> {
    pub source: &'a str,
    pub line: u64,
    pub run_id: &'a str,
    pub turn: Option<u64>,
    pub variant: &'a str,
    pub fires: bool,
    pub baseline_fires: bool,
    pub reasons: Reasons,
    pub language: Option<&'a str>,
    pub scope: Option<&'a str>,
    pub intent: Option<&'a str>,
    pub draft_chars: u64,
    pub confidence: f64,
    pub verdict: Option<Verdict>,
}

/// Write `s` as one CSV field, quoted only when it must be.
pub fn field(out: &mut Vec<u8>, s: &str) {
    if s.bytes().any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r')) {
        out.push(b'"');
        for b in s.bytes() {
            if b == b'"' {
                out.push(b'"');
            }
            out.push(b);
        }
        out.push(b'"');
    } else {
        out.extend_from_slice(s.as_bytes());
    }
}

/// Append `n` in decimal (the hot path avoids `fmt` machinery).
fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

fn push_bool(out: &mut Vec<u8>, b: bool) {
    out.extend_from_slice(if b { b"true" } else { b"false" });
}

pub fn write_row(out: &mut Vec<u8>, r: &Row) {
    field(out, r.source);
    out.push(b',');
    push_u64(out, r.line);
    out.push(b',');
    field(out, r.run_id);
    out.push(b',');
    if let Some(t) = r.turn {
        push_u64(out, t);
    }
    out.push(b',');
    field(out, r.variant);
    out.push(b',');
    push_bool(out, r.fires);
    out.push(b',');
    push_bool(out, r.baseline_fires);
    out.push(b',');
    for (i, reason) in r.reasons.iter().enumerate() {
        if i > 0 {
            out.push(b';');
        }
        out.extend_from_slice(reason.name().as_bytes());
    }
    out.push(b',');
    field(out, r.language.unwrap_or(""));
    out.push(b',');
    field(out, r.scope.unwrap_or(""));
    out.push(b',');
    field(out, r.intent.unwrap_or(""));
    out.push(b',');
    push_u64(out, r.draft_chars);
    // Shortest representation that reads back to the same f64.
    let _ = write!(out, ",{:?},", r.confidence);
    out.extend_from_slice(r.verdict.map_or("", Verdict::as_str).as_bytes());
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::Reason;

    #[test]
    fn integers_format_like_display() {
        for n in [0u64, 7, 10, 99, 12345, u64::MAX] {
            let mut out = Vec::new();
            super::push_u64(&mut out, n);
            assert_eq!(String::from_utf8(out).unwrap(), n.to_string());
        }
    }

    #[test]
    fn row_snapshot() {
        let mut out = Vec::new();
        write_row(
            &mut out,
            &Row {
                source: "a.jsonl",
                line: 3,
                run_id: "r,1",
                turn: Some(2),
                variant: "smart",
                fires: true,
                baseline_fires: true,
                reasons: [Reason::Intent, Reason::Claims].into_iter().collect(),
                language: Some("en"),
                scope: Some(r#"{"tenant":"acme"}"#),
                intent: None,
                draft_chars: 15,
                confidence: 0.5,
                verdict: Some(Verdict::Revise),
            },
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "a.jsonl,3,\"r,1\",2,smart,true,true,intent;claims,en,\"{\"\"tenant\"\":\"\"acme\"\"}\",,15,0.5,revise\n"
        );
    }
}
