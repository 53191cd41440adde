//! The body of the fuzz target that needs the whole tool (`check`, which
//! reads a replay's summary.json); the traffic, config, pattern and reader
//! targets are in the core crate (`critic_gate_core::fuzz`). `cargo test`
//! replays the committed corpus through it (`tests/cli/fuzz_check.rs`).

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
    let _ = (
        render_text(&results, budgets.says_assumed()),
        render_markdown(&results, Some((&[], 0, 0)), budgets.says_assumed()),
    );
    true
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
