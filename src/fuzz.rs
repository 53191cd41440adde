//! The bodies of the fuzz targets that need the whole tool (`check`, which
//! reads a replay's summary.json; `parquet`; `partial`, a shard's partial
//! result merged; `markdown`, text written into rendered reports); the
//! traffic, config, pattern and reader targets are in the core crate
//! (`critic_gate_core::fuzz`). `cargo test` replays the committed corpora
//! through them (`tests/cli/fuzz_check.rs`).

use crate::cmd::check::{judge, render_markdown, render_text, ReplayDir};
use crate::config::CheckConfig;

/// A replay's summary.json, however damaged: `check` with every declared
/// budget either judges it or says it cannot, never panics. Returns
/// whether it was judged (the corpus must reach the verdict, not only the
/// refusals).
pub fn check(data: &[u8]) -> bool {
    let Ok(dir) = ReplayDir::parse("fuzz/summary.json".into(), data, "fuzz".as_ref()) else {
        return false;
    };
    // What check accepts is a summary the replay could have written: it
    // reads back as itself.
    let again = crate::summary::figures::RunSummary::from_json(dir.summary.to_json());
    assert_eq!(
        again.as_ref(),
        Ok(&dir.summary),
        "a summary check accepted does not read back"
    );
    use crate::budgets::{Amount, Limit, BUDGETS};
    let budgets = CheckConfig::with(&BUDGETS.map(|d| match d.limit {
        Limit::Count => (d.budget, Amount::Count(1)),
        Limit::Rate => (d.budget, Amount::Rate(0.5)),
    }));
    let Ok(results) = judge(&dir, &budgets) else {
        return false;
    };
    let _ = render_text(&results, budgets.says_assumed());
    let md = render_markdown(&results, Some((&[], 0, 0)), budgets.says_assumed());
    markdown_lines_are_the_tools(&md);
    true
}

/// Every line of `check --markdown` opens as the tool writes it (its one
/// heading first, then quotes, table rows, bold lead-ins or a
/// parenthesis): text from the input never opens a heading, a rule, a
/// list or a `::` command line of its own.
fn markdown_lines_are_the_tools(md: &str) {
    let mut lines = md.lines();
    assert!(
        lines
            .next()
            .is_some_and(|l| l.starts_with("### critic-gate check: ")),
        "{md}"
    );
    for line in lines.filter(|l| !l.is_empty()) {
        assert!(
            ["|", "> ", "**", "("].iter().any(|p| line.starts_with(p)),
            "a line the input opened: {line:?}"
        );
    }
}

/// Any bytes as the decompressed stream of a shard's partial result,
/// merged alone into a scratch folder: refused (naming the shard) or
/// merged, never a panic; a merged `decisions.csv` or `mismatches.csv`
/// holds only rows a replay writes (no cell a spreadsheet would run).
/// Returns whether it was merged.
pub fn partial(data: &[u8]) -> bool {
    use crate::summary::partial::PartialInput;
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let Ok(bytes) = zstd::encode_all(data, 1) else {
        return false;
    };
    let out = std::env::temp_dir().join(format!(
        "critic-gate-fuzz-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let opts = crate::pipeline::MergeOptions {
        inputs: vec![PartialInput::Memory {
            name: "fuzz.partial".into(),
            bytes: bytes.into(),
        }],
        label: "fuzz".into(),
        format: crate::replay::Format::Csv,
        force: false,
    };
    let merged = crate::pipeline::merge(opts, &out).is_ok();
    if merged {
        for table in ["decisions.csv", "mismatches.csv"] {
            let Ok(text) = std::fs::read(out.join(table)) else {
                continue;
            };
            let header = text.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1);
            let columns = text[..header].split(|&b| b == b',').count();
            if let Err(e) = crate::pipeline::replay_rows(&text[header..], columns) {
                panic!("{table}: a merged row a replay never writes: {e}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&out);
    merged
}

/// Any text through the writers that put traffic's text into report.md,
/// `check --markdown` and stderr: none lets a character through that
/// would break the line, move the cursor or turn the text around.
pub fn markdown(data: &[u8]) {
    let s = String::from_utf8_lossy(data);
    let unsafe_in_a_line = crate::summary::text::unsafe_in_a_line;
    for (writer, out) in [
        ("md_text", crate::summary::text::md_text(&s)),
        ("md_code", crate::summary::text::md_code(&s)),
        ("excerpt", crate::summary::text::excerpt(&s, 80)),
        ("one_line", crate::summary::text::one_line(&s).into_owned()),
    ] {
        assert!(
            !out.chars().any(unsafe_in_a_line),
            "{writer} let a line-breaking character through: {out:?}"
        );
    }
}

/// Any bytes as a Parquet table (a report folder's `--format parquet`
/// table that `check` reads): read, or refused as damaged, never a panic
/// or an abort, and never decoded past the reader's budget (its page
/// headers are held to the file first). Returns whether it was read.
pub fn parquet(data: &[u8]) -> bool {
    match crate::summary::parquet::decoded_estimate(data) {
        Ok((decoded, factor)) => {
            assert!(
                decoded <= crate::summary::parquet::budget(data.len() as u64),
                "a file past its budget was let through: {decoded} bytes ({factor}x)"
            );
        }
        Err(_) => return false,
    }
    crate::summary::parquet::read_frame(data.to_vec()).is_ok()
}
