//! Text from traffic or the command line as Markdown that shows it as it
//! is, shared by report.md and `check --markdown`.

/// How many regressions the report lists.
pub(crate) use crate::replay::TOP_REGRESSIONS;

/// The first `n` characters of a draft, on one line (control characters
/// as spaces), as a Markdown code span for a table cell, with `…` after it
/// when cut: in a code span GitHub makes no mention (`@team`), no issue
/// or commit reference (`#1`, `GH-3`, a SHA) and no link (`mailto:`,
/// `https://`) of traffic's text, which escaping does not stop.
pub(crate) fn excerpt(s: &str, n: usize) -> String {
    let one_line: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let short: String = one_line.chars().take(n).collect();
    let short = md_code(&short);
    if one_line.chars().count() > n {
        format!("{short}…")
    } else {
        short
    }
}

/// `s` as a Markdown code span in a table cell: fenced by one backtick
/// more than its longest run, padded where it starts or ends with one,
/// `|` escaped (a table splits on it even inside code), and each character
/// that would break the line written as its escape ("" for "").
pub(crate) fn md_code(s: &str) -> String {
    let mut body = String::with_capacity(s.len() + 4);
    for c in s.chars() {
        match c {
            c if unsafe_in_a_line(c) => escape_in_line(&mut body, c),
            '|' => body.push_str("\\|"),
            c => body.push(c),
        }
    }
    if body.is_empty() {
        return body;
    }
    let longest = body.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if body.starts_with('`') || body.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{body}{pad}{fence}")
}

/// Text from traffic or the command line as Markdown that shows it as it
/// is: `<`, `>` and `&` as entities (no HTML, no images that load), and
/// the punctuation of links, emphasis, code and tables escaped (no
/// `[c](javascript:...)`), since report.md and `check --markdown` are
/// rendered (a pull request, a CI step summary). It never writes a line
/// break: a control character, a line or paragraph separator, or a
/// bidirectional control (U+202E makes "ok dessap kcehc" read "check
/// passed") is written as its escape (`\n`, `\u{202e}`), so text from
/// traffic or a file name cannot open a heading, a rule or a `::` command
/// line of its own.
pub(crate) fn md_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for (i, c) in s.char_indices() {
        match c {
            c if unsafe_in_a_line(c) => escape_in_line(&mut out, c),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '(' | ')' | '!' | '|' | '~' | '#' => {
                out.push('\\');
                out.push(c);
            }
            // GitHub makes links of a bare `https://...` and `www.` in text;
            // escaped, they stay text. (It still makes a `mailto:` link of
            // `name@host`, which escaping does not stop.)
            ':' if s[i..].starts_with("://") => out.push_str("\\:"),
            '.' if out.len() >= 3
                && out.as_bytes()[out.len() - 3..].eq_ignore_ascii_case(b"www") =>
            {
                out.push_str("\\.")
            }
            c => out.push(c),
        }
    }
    out
}

/// `s` as one line of a terminal or a CI log: each character that would
/// break the line, move the cursor, colour the text or turn it around
/// ([`unsafe_in_a_line`]) written as its escape, so a value from traffic
/// (a model name, a key, a file name) cannot start a `::error` command
/// line of its own in a GitHub Actions log.
pub(crate) fn one_line(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(unsafe_in_a_line) {
        return s.into();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match unsafe_in_a_line(c) {
            true => escape_in_line(&mut out, c),
            false => out.push(c),
        }
    }
    out.into()
}

/// `\n`, `\r`, a space for a tab, else `\u{...}`.
fn escape_in_line(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push(' '),
        c => out.extend(c.escape_unicode()),
    }
}

/// A character that may not stand as it is in one line of rendered text:
/// a control character (a line break, an escape sequence), a line or
/// paragraph separator, or a bidirectional control.
pub(crate) fn unsafe_in_a_line(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// `1 turn`, `2 turns`: a count with its noun in the right number.
pub(crate) fn count(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The runs a bound within `r` takes for an 80% chance at a true rate of
/// `true_rate` (`shown` as a percentage), in runs like these: Kish's
/// effective runs (`effective_runs`, None without labels) over the
/// `labelled_runs` (1 without labels, each run one label). A run counts at most one trial, so this is in runs,
/// whatever their length; a simulation of typical traffic found it
/// conservative (65-85% of it sufficed). None past ten million.
pub(crate) fn runs_for_power(
    (effective_runs, labelled_runs): (Option<f64>, u64),
    r: f64,
    true_rate: f64,
    shown: &str,
) -> Option<String> {
    let share = match (effective_runs, labelled_runs) {
        (Some(e), m) if m > 0 => (e / m as f64).min(1.0),
        _ => 1.0,
    };
    let runs = crate::stats::runs_hint(r, true_rate, share)?;
    Some(format!(
        "about {runs} runs like these for an 80% chance of it at a true rate of {shown} (a run counts at most one trial, however long; Kish's effective runs are {:.0}% of the runs here)",
        share * 100.0
    ))
}

/// A name (a variant's) in Markdown: as code when that is safe, else as
/// escaped text, so a `|` never splits a table cell and a backtick never
/// ends a code span.
pub(crate) fn md_name(name: &str) -> String {
    match name.contains(['`', '|', '\n', '\r']) || name.is_empty() {
        false => format!("`{name}`"),
        true => md_text(name),
    }
}

/// The unlabelled new skips by cause, the counted causes only: "3 no
/// critic ran (...), 1 nothing recorded".
/// The baseline's critic calls that left no label, by cause (None when
/// every one did): with `base` written for the medium.
pub(crate) fn unlabelled_calls(base: &str, c: &crate::replay::tally::Counts) -> Option<String> {
    let (none, no_verdict) = (c.critic_calls_unrecorded, c.critic_calls_without_verdict);
    if none + no_verdict == 0 {
        return None;
    }
    let verdictless = match no_verdict {
        0 => String::new(),
        n => format!(", and {n} a critic that ran without a verdict"),
    };
    Some(format!(
        "{none} of its {} {} no critic recorded{verdictless}: where production ran {base}, those with none recorded are probable critic failures (a critic call that raises leaves no span); none of them is a label",
        count(c.critic_calls(), "critic call", "critic calls"),
        if none == 1 { "has" } else { "have" }
    ))
}

pub(crate) fn unlabelled_causes(not_run: u64, no_event: u64, no_verdict: u64) -> String {
    [
        (
            not_run,
            "no critic ran (the gate skipped or the critic failed open)",
        ),
        (no_event, "nothing recorded"),
        (no_verdict, "no verdict recorded"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, why)| format!("{n} {why}"))
    .collect::<Vec<_>>()
    .join(", ")
}

/// What is said wherever risk is shown of a smart-gate production's
/// skips that no critic reviewed: `n` of them, under `production`'s gate.
/// No replay of the traffic can label them (production's gate kept them
/// from its critic), so more traffic is never the advice.
pub(crate) fn unreviewed_skips(production: &str, n: u64) -> String {
    format!(
        "{} production's gate (`{production}`) skipped never reached the critic: {} unknown, and cannot come from replaying more of this traffic; `critic-gate plan` sizes a critic sample of production's skips that can measure it",
        count(n, "turn", "turns"),
        if n == 1 { "its risk is" } else { "their risk is" }
    )
}

#[cfg(test)]
mod tests {
    use super::{excerpt, md_text, one_line};

    /// Found by review (#47 items 13-15): text from traffic or a file name
    /// kept its line breaks, escape sequences and bidi controls, so one
    /// value could open a `::error` line in a CI log or a "✅ passed"
    /// heading in a pull-request comment. Neither writer lets one through.
    /// #47 item 15: a draft in `check --markdown` and report.md carried
    /// `@team` mentions, `#1`, `GH-3` and commit references and `mailto:`
    /// links, which GitHub makes live in a comment (escaping `#` or `@`
    /// does not stop it: its filters read the rendered text). A draft is
    /// shown as a code span, where none of them is made: fenced by more
    /// backticks than it holds, its `|` escaped for the table it sits in,
    /// on one line.
    #[test]
    fn a_draft_is_shown_as_code() {
        let hostile = "ping @org/team re #1 GH-3 a1b2c3d4e5 mailto:x@y.z ``tick`` a|b\n# h";
        let out = excerpt(hostile, 200);
        assert!(out.starts_with("```") && out.ends_with("```"), "{out}");
        let body = &out[3..out.len() - 3];
        assert!(!body.contains("```") && !body.contains('\n'), "{out}");
        assert!(
            body.contains("a\\|b") && body.contains("@org/team"),
            "{out}"
        );
        // Cut: the ellipsis outside the span.
        let cut = excerpt(&"x".repeat(100), 80);
        assert_eq!(cut, format!("`{}`…", "x".repeat(80)));
        assert_eq!(excerpt("`edge`", 80), "`` `edge` ``");
        assert_eq!(excerpt("", 80), "");
    }

    #[test]
    fn text_from_traffic_stays_on_its_line() {
        let hostile = "m\n::error title=critic-gate::all budgets passed\r\n# ✅ release approved\u{1b}[31m\u{2028}x\u{85}y\u{202e}ok dessap\u{2066}";
        for out in [md_text(hostile), one_line(hostile).into_owned()] {
            assert!(
                !out.contains(['\n', '\r', '\u{1b}', '\u{2028}', '\u{85}', '\u{202e}', '\u{2066}']),
                "{out:?}"
            );
        }
        assert_eq!(
            one_line("a\nb\tc\u{1b}[0m\u{202e}"),
            "a\\nb c\\u{1b}[0m\\u{202e}"
        );
        assert!(
            md_text("a\n# b").starts_with("a\\n\\# b"),
            "{}",
            md_text("a\n# b")
        );
        assert_eq!(one_line("plain, ünïcode ✅"), "plain, ünïcode ✅");
    }
}
