//! `decisions.csv`: one row per (turn, variant), streamed.
//!
//! This is the one report that grows with the input (two variants over ten
//! million turns is twenty million rows), so it is not built as a
//! DataFrame: each worker formats its block's rows into bytes (RFC 4180
//! quoting, as polars writes), and the writer appends them in input order.
//! Building a DataFrame per block doubled the replay's run time.

use std::io::Write;

use crate::gate::Reasons;
use crate::read::turn::Verdict;
use crate::replay::scope_columns::ScopeColumns;
use crate::replay::segments::capped;

/// The header of `decisions.csv` without scope columns.
pub(crate) const HEADER: &str = "run,source,line,run_id,turn,trace_id,span_id,message_index,variant,fires,baseline_fires,reasons,language,scope,intent,draft_chars,confidence,verdict,production,derived_signals,unknown_signals\n";

/// The header of `decisions.csv`: [`HEADER`] with a column per scope key
/// after `scope`.
pub(crate) fn header(columns: &ScopeColumns) -> String {
    let mut h = Vec::new();
    for name in HEADER.trim_end().split(',') {
        field(&mut h, name);
        h.push(b',');
        if name == "scope" {
            for k in columns.keys() {
                field(&mut h, &ScopeColumns::column_name(k));
                h.push(b',');
            }
        }
    }
    h.pop();
    h.push(b'\n');
    String::from_utf8(h).expect("UTF-8 in, UTF-8 out")
}

/// The header of `mismatches.csv`: turns where the baseline decides
/// otherwise than production did.
pub(crate) const MISMATCH_HEADER: &str =
    "run,source,line,run_id,turn,trace_id,span_id,message_index,call_site,production,baseline_decision,reasons,confidence,sensitive_hit\n";

/// The longest `scope` a row carries, in bytes (cut with `…` past it).
pub(crate) const MAX_SCOPE_BYTES: usize = 1024;

/// The longest `run_id` a row carries, in bytes: every turn of a
/// conversation repeats it, so a transcript line with a megabyte id and
/// thousands of turns wrote gigabytes of rows. See [`cut_id`].
pub(crate) const MAX_RUN_ID_BYTES: usize = 4096;

/// A `run_id` as rows carry it: whole up to [`MAX_RUN_ID_BYTES`], else
/// its start, `…` and the 16 hex digits of its run key, so two ids that
/// share their first 4 KiB stay two runs in the tables (`check` counts a
/// table's runs against the summary's).
pub(crate) fn cut_id(id: &str) -> std::borrow::Cow<'_, str> {
    if id.len() <= MAX_RUN_ID_BYTES {
        return id.into();
    }
    let mut end = MAX_RUN_ID_BYTES - "…".len() - 16;
    while !id.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…{:016x}", &id[..end], super::hash::run_key(id)).into()
}

/// The longest trace or span id a row carries, in bytes (cut with `…`
/// past it): OpenTelemetry's are 32 and 16 hex digits.
pub(crate) const MAX_ID_BYTES: usize = 128;

/// Where a turn is in its source, as recorded: the `trace_id`, `span_id`
/// and `message_index` cells, which open the turn in a trace viewer or a
/// transcript.
#[derive(Clone, Copy, Default)]
pub(crate) struct SourceIds<'a> {
    pub trace_id: Option<&'a str>,
    pub span_id: Option<&'a str>,
    pub message_index: Option<u64>,
}

impl<'a> SourceIds<'a> {
    pub(crate) fn of(t: &'a crate::read::turn::Turn<'_>) -> SourceIds<'a> {
        SourceIds {
            trace_id: t.trace_id.as_deref(),
            span_id: t.span_id.as_deref(),
            message_index: t.message_index,
        }
    }

    /// The three cells, each with its separator.
    fn write(&self, out: &mut Vec<u8>) {
        for id in [self.trace_id, self.span_id] {
            opt_cell(out, id.map(|i| capped(i, MAX_ID_BYTES)).as_deref());
        }
        if let Some(m) = self.message_index {
            push_u64(out, m);
        }
        out.push(b',');
    }
}

/// The fields of one row, borrowed from the turn.
pub(crate) struct Row<'a> {
    pub run: &'a str,
    pub source: &'a str,
    pub line: u64,
    pub run_id: &'a str,
    pub turn: Option<u64>,
    pub ids: SourceIds<'a>,
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
    /// What production's gate did (`Some(fired)`), when recorded.
    pub production: Option<bool>,
    /// Where each signal of the turn came from.
    pub signals: crate::read::provenance::Signals,
}

/// The signals of `s` with origin `o`, `;`-separated (empty when none).
fn signals_with(
    out: &mut Vec<u8>,
    s: &crate::read::provenance::Signals,
    o: crate::read::provenance::Origin,
) {
    let mut first = true;
    for sig in crate::read::provenance::Signal::ALL {
        if s.get(sig) == o {
            if !first {
                out.push(b';');
            }
            first = false;
            out.extend_from_slice(sig.as_str().as_bytes());
        }
    }
}

/// `fire` / `skip`, as matrix.csv and mismatches.csv spell a decision.
pub(crate) fn decision(fires: bool) -> &'static str {
    if fires {
        "fire"
    } else {
        "skip"
    }
}

/// Whether a spreadsheet would read the text cell `s` as a formula (it
/// opens with `=`, `+`, `-`, `@`, a tab or a carriage return, and is not a
/// plain number such as `-2` nor a lone `-`): such a cell is written with a
/// leading `'`, as OWASP advises for CSV; Parquet keeps the text exact.
pub(crate) fn formula_like(s: &str) -> bool {
    match s.as_bytes().first() {
        Some(b'=' | b'+' | b'@' | b'\t' | b'\r') => true,
        Some(b'-') => s.len() > 1 && serde_json::from_str::<serde_json::Number>(s).is_err(),
        _ => false,
    }
}

/// Whether `s` is written with a leading `'`: a spreadsheet would run it
/// ([`formula_like`]), or it is itself `'` before such a text (so that
/// [`unguarded`] gives back every text exactly: `'=x` is written `''=x`).
pub(crate) fn needs_guard(s: &str) -> bool {
    let quotes = s.len() - s.trim_start_matches('\'').len();
    formula_like(&s[quotes..])
}

/// `s` as a CSV cell holds it: with a leading `'` when it
/// [`needs_guard`], else as it is.
pub(crate) fn guarded(s: &str) -> std::borrow::Cow<'_, str> {
    match needs_guard(s) {
        true => format!("'{s}").into(),
        false => s.into(),
    }
}

/// The text a [`guarded`] cell holds: its guard taken off (Parquet keeps
/// text exact, so a table streamed as CSV rows is un-guarded there).
pub(crate) fn unguarded(t: &str) -> &str {
    match t.strip_prefix('\'') {
        Some(rest) if needs_guard(rest) => rest,
        _ => t,
    }
}

/// Write `s` as one CSV field, quoted only when it must be (and
/// [`guarded`]).
pub(crate) fn field(out: &mut Vec<u8>, s: &str) {
    plain_field(out, &guarded(s))
}

fn plain_field(out: &mut Vec<u8>, s: &str) {
    let b = s.as_bytes();
    // Most fields need no quotes: short ones are checked byte by byte,
    // long ones with SIMD searches; a quoted one (a scope's JSON) is
    // copied between its quotes in runs.
    let special = |c: &u8| matches!(c, b',' | b'"' | b'\n' | b'\r');
    let plain = match b.len() {
        0..16 => !b.iter().any(special),
        _ => memchr::memchr3(b',', b'"', b'\n', b).is_none() && memchr::memchr(b'\r', b).is_none(),
    };
    if plain {
        out.extend_from_slice(b);
        return;
    }
    out.reserve(b.len() + 8);
    out.push(b'"');
    let mut rest = b;
    while let Some(i) = memchr::memchr(b'"', rest) {
        out.extend_from_slice(&rest[..=i]);
        out.push(b'"');
        rest = &rest[i + 1..];
    }
    out.extend_from_slice(rest);
    out.push(b'"');
}

/// Append `n` in decimal (the hot path avoids `fmt` machinery).
pub(super) fn push_u64(out: &mut Vec<u8>, mut n: u64) {
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

/// `{:?}` of `x` when it is a number of thousandths strictly between 0
/// and 1 (most recorded confidences), without the float formatter: when
/// `k / 1000` rounds to `x`, its decimal digits, trailing zeros cut, are
/// the shortest text that reads back as `x` (no decimal of fewer digits
/// is that close). False, writing nothing, for any other `x`.
fn push_milli(out: &mut Vec<u8>, x: f64) -> bool {
    if !(x > 0.0 && x < 1.0) {
        return false;
    }
    let k = (x * 1000.0).round() as u32;
    if f64::from(k) / 1000.0 != x {
        return false;
    }
    let digits = [k / 100, k / 10 % 10, k % 10].map(|d| b'0' + d as u8);
    let len = match (digits[1], digits[2]) {
        (b'0', b'0') => 1,
        (_, b'0') => 2,
        _ => 3,
    };
    out.extend_from_slice(b"0.");
    out.extend_from_slice(&digits[..len]);
    true
}

/// A field and its separator.
pub(super) fn cell(out: &mut Vec<u8>, s: &str) {
    if s.is_empty() {
        // An empty text, not a missing value: CSV readers take a bare
        // empty field for null.
        out.extend_from_slice(b"\"\"");
    } else {
        field(out, s);
    }
    out.push(b',');
}

/// A text that may be absent: absent is an empty field (null).
pub(super) fn opt_cell(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => cell(out, s),
        None => out.push(b','),
    }
}

/// A turn's rows share most of their fields: they are formatted once per
/// turn (not once per variant) into these buffers, reused across turns.
#[derive(Default)]
pub(crate) struct TurnFields {
    /// `source,line,run_id,turn,`
    head: Vec<u8>,
    /// `language,scope,intent,draft_chars,`
    middle: Vec<u8>,
    /// `,verdict\n`
    tail: Vec<u8>,
    /// The last confidence formatted, as (bits, text): variants usually
    /// resolve the same confidence.
    confidence: Option<(u64, Vec<u8>)>,
    scope_cells: ScopeCells,
    lead: Lead,
}

/// The `scope` cell and the scope columns' cells of the scopes seen
/// lately: the turns of a run share their scope, so each distinct scope is
/// quoted and parsed once, not per turn.
#[derive(Default)]
struct ScopeCells(std::collections::HashMap<u64, (String, Vec<u8>), IdentityHash>);

type IdentityHash = std::hash::BuildHasherDefault<crate::replay::hash::Identity>;

impl ScopeCells {
    /// Kept at most (then started afresh), so memory stays bounded.
    const MAX: usize = 1024;

    fn write(&mut self, out: &mut Vec<u8>, scope: Option<&str>, columns: &ScopeColumns) {
        let Some(raw) = scope else {
            out.extend(std::iter::repeat_n(b',', 1 + columns.keys().len()));
            return;
        };
        let h = xxhash_rust::xxh3::xxh3_64(raw.as_bytes());
        if let Some((_, cells)) = self.0.get(&h).filter(|(r, _)| r == raw) {
            out.extend_from_slice(cells);
            return;
        }
        let mut cells = Vec::new();
        cell(&mut cells, &capped(raw, MAX_SCOPE_BYTES));
        if !columns.keys().is_empty() {
            // Each cut as the scope is: a conversation's turns repeat them.
            for v in columns.values(Some(raw)) {
                opt_cell(
                    &mut cells,
                    v.as_deref().map(|v| capped(v, MAX_SCOPE_BYTES)).as_deref(),
                );
            }
        }
        out.extend_from_slice(&cells);
        if self.0.len() >= Self::MAX {
            self.0.clear();
        }
        // (A hash collision replaces the entry: still correct, a miss.)
        self.0.insert(h, (raw.to_string(), cells));
    }
}

/// The `run,source,` cells, kept while the run and source stay the same
/// (a block's turns share them).
#[derive(Default)]
struct Lead {
    run: String,
    source: String,
    cells: Vec<u8>,
}

impl Lead {
    fn write(&mut self, out: &mut Vec<u8>, run: &str, source: &str) {
        if self.cells.is_empty() || self.run != run || self.source != source {
            self.cells.clear();
            cell(&mut self.cells, run);
            cell(&mut self.cells, source);
            self.run = run.to_string();
            self.source = source.to_string();
        }
        out.extend_from_slice(&self.cells);
    }
}

impl TurnFields {
    /// Format the fields of `r` that do not depend on the variant.
    pub(crate) fn set(&mut self, r: &Row, columns: &ScopeColumns) {
        let h = &mut self.head;
        h.clear();
        self.lead.write(h, r.run, r.source);
        push_u64(h, r.line);
        h.push(b',');
        cell(h, &cut_id(r.run_id));
        if let Some(t) = r.turn {
            push_u64(h, t);
        }
        h.push(b',');
        r.ids.write(h);
        let m = &mut self.middle;
        m.clear();
        opt_cell(m, r.language);
        self.scope_cells.write(m, r.scope, columns);
        opt_cell(m, r.intent);
        push_u64(m, r.draft_chars);
        m.push(b',');
        self.tail.clear();
        self.tail.push(b',');
        self.tail
            .extend_from_slice(r.verdict.map_or("", Verdict::as_str).as_bytes());
        self.tail.push(b',');
        self.tail
            .extend_from_slice(r.production.map_or("", decision).as_bytes());
        self.tail.push(b',');
        signals_with(
            &mut self.tail,
            &r.signals,
            crate::read::provenance::Origin::Derived,
        );
        self.tail.push(b',');
        signals_with(
            &mut self.tail,
            &r.signals,
            crate::read::provenance::Origin::Unknown,
        );
        self.tail.push(b'\n');
    }

    /// Append the row of one variant (the other fields of `r` as last set).
    pub(crate) fn write(&mut self, out: &mut Vec<u8>, r: &Row) {
        out.extend_from_slice(&self.head);
        cell(out, r.variant);
        // Constant cells need no scan for quotes.
        let flag = |b: bool| if b { &b"true,"[..] } else { &b"false,"[..] };
        out.extend_from_slice(flag(r.fires));
        out.extend_from_slice(flag(r.baseline_fires));
        for (i, reason) in r.reasons.iter().enumerate() {
            if i > 0 {
                out.push(b';');
            }
            out.extend_from_slice(reason.name().as_bytes());
        }
        out.push(b',');
        out.extend_from_slice(&self.middle);
        let bits = r.confidence.to_bits();
        let (last, text) = self.confidence.get_or_insert_with(|| (!bits, Vec::new()));
        if *last != bits {
            // Shortest representation that reads back to the same f64 (in
            // the buffer of the last one: no allocation per turn).
            text.clear();
            if !push_milli(text, r.confidence) {
                let _ = write!(text, "{:?}", r.confidence);
            }
            *last = bits;
        }
        out.extend_from_slice(text);
        out.extend_from_slice(&self.tail);
    }
}

/// One row of `mismatches.csv`.
pub(crate) struct MismatchRow<'a> {
    pub run: &'a str,
    pub source: &'a str,
    pub line: u64,
    pub run_id: &'a str,
    pub turn: Option<u64>,
    pub ids: SourceIds<'a>,
    pub call_site: &'a str,
    pub production_fired: bool,
    pub baseline_fires: bool,
    pub reasons: Reasons,
    pub confidence: f64,
    pub sensitive_hit: Option<&'a str>,
}

impl MismatchRow<'_> {
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        cell(out, self.run);
        cell(out, self.source);
        push_u64(out, self.line);
        out.push(b',');
        cell(out, &cut_id(self.run_id));
        if let Some(t) = self.turn {
            push_u64(out, t);
        }
        out.push(b',');
        self.ids.write(out);
        cell(out, self.call_site);
        cell(out, decision(self.production_fired));
        cell(out, decision(self.baseline_fires));
        cell(out, &self.reasons.to_string());
        let _ = write!(out, "{:?},", self.confidence);
        match self.sensitive_hit {
            // An empty tag is a hit (symfonic's `is not None`), not null.
            Some("") => out.extend_from_slice(b"\"\""),
            Some(s) => field(out, s),
            None => {}
        }
        out.push(b'\n');
    }
}

/// Standard base64 (RFC 4648, with padding): the exact bytes of a line
/// that is not UTF-8, in `rejects.jsonl`.
pub(crate) fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {

    /// The guard is taken off exactly: every text, those that begin with
    /// quotes before a formula included, reads back as itself from its
    /// CSV cell (decisions.parquet kept `'-smart` for a variant `-smart`).
    #[test]
    fn a_guard_comes_off_exactly() {
        for s in [
            "-smart", "=1+1", "'=x", "''=x", "'", "''", "'a", "-2", "-", "", "ok", "@x", "'-2",
        ] {
            assert_eq!(unguarded(&guarded(s)), s, "{s:?}");
        }
        assert_eq!(guarded("'=x"), "''=x");
        assert_eq!(guarded("'a"), "'a");
        assert_eq!(guarded("-2"), "-2");
    }

    use super::*;
    use crate::gate::Reason;

    /// One row on its own (the replay formats a turn's fields once and
    /// writes a row per variant).
    fn write_row(out: &mut Vec<u8>, r: &Row) {
        let mut f = TurnFields::default();
        f.set(r, &ScopeColumns::default());
        f.write(out, r);
    }

    #[test]
    fn integers_format_like_display() {
        for n in [0u64, 7, 10, 99, 12345, u64::MAX] {
            let mut out = Vec::new();
            super::push_u64(&mut out, n);
            assert_eq!(String::from_utf8(out).unwrap(), n.to_string());
        }
    }

    #[test]
    fn thousandths_format_like_debug() {
        let debug = |x: f64| format!("{x:?}");
        let milli = |x: f64| {
            let mut out = Vec::new();
            super::push_milli(&mut out, x).then(|| String::from_utf8(out).unwrap())
        };
        for k in 1..1000 {
            let x = f64::from(k) / 1000.0;
            assert_eq!(milli(x), Some(debug(x)), "{k}");
            // Its neighbours are not thousandths: the formatter's.
            assert_eq!(milli(x.next_up()), None);
            assert_eq!(milli(x.next_down()), None);
        }
        for x in [
            0.0,
            -0.0,
            1.0,
            -0.5,
            1e-4,
            0.0005,
            0.1 + 0.2,
            f64::NAN,
            f64::INFINITY,
        ] {
            assert_eq!(milli(x), None, "{x:?}");
        }
    }

    #[test]
    fn fields_are_quoted_only_when_they_must_be() {
        for (raw, want) in [
            ("plain", "plain"),
            ("", ""),
            ("a,b", "\"a,b\""),
            ("say \"hi\"", "\"say \"\"hi\"\"\""),
            ("\"", "\"\"\"\""),
            ("two\nlines\r", "\"two\nlines\r\""),
            ("=1+2", "'=1+2"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("+x", "'+x"),
            ("-1+2", "'-1+2"),
            ("\tx", "'\tx"),
            ("-2", "-2"),
            ("-0.5e3", "-0.5e3"),
            ("-", "-"),
            ("a=b", "a=b"),
            ("=a,b", "\"'=a,b\""),
        ] {
            let mut out = Vec::new();
            field(&mut out, raw);
            assert_eq!(String::from_utf8(out).unwrap(), want, "{raw:?}");
        }
    }

    #[test]
    fn row_snapshot() {
        let mut out = Vec::new();
        write_row(
            &mut out,
            &Row {
                run: "nightly",
                source: "a.jsonl",
                line: 3,
                run_id: "r,1",
                turn: Some(2),
                ids: SourceIds {
                    trace_id: Some("=4bf9"),
                    span_id: None,
                    message_index: Some(9),
                },
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
                production: Some(true),
                signals: {
                    use crate::read::provenance::{Origin::*, Signals};
                    Signals([
                        Derived, Recorded, Derived, Unknown, Unknown, Unknown, Recorded,
                    ])
                },
            },
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "nightly,a.jsonl,3,\"r,1\",2,'=4bf9,,9,smart,true,true,intent;claims,en,\"{\"\"tenant\"\":\"\"acme\"\"}\",,15,0.5,revise,fire,draft;intent,findings;confidence;sensitive\n"
        );
    }

    #[test]
    fn mismatch_row_snapshot() {
        let mut out = Vec::new();
        MismatchRow {
            run: "nightly",
            source: "p.jsonl",
            line: 7,
            run_id: "r",
            turn: None,
            ids: SourceIds {
                trace_id: Some("t"),
                span_id: Some("s,1"),
                message_index: None,
            },
            call_site: "turn",
            production_fired: true,
            baseline_fires: false,
            reasons: [Reason::Confident].into_iter().collect(),
            confidence: 0.65,
            sensitive_hit: None,
        }
        .write(&mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "nightly,p.jsonl,7,r,,t,\"s,1\",,turn,fire,skip,confident,0.65,\n"
        );
    }

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        for (raw, want) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(super::base64(raw.as_bytes()), want, "{raw:?}");
        }
        assert_eq!(super::base64(&[0xff, 0xfe, 0x00]), "//4A");
    }
}
