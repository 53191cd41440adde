//! The body of the fuzz target that needs the whole tool (`check`, which
//! reads a replay's summary.json); the traffic, config, pattern and reader
//! targets are in the core crate (`critic_gate_core::fuzz`). `cargo test`
//! replays the committed corpus through it (`tests/cli/fuzz_check.rs`).

use crate::check::{judge, render_markdown, render_text, ReplayDir};
use crate::config::CheckConfig;

/// A replay's summary.json, however damaged: `check` with every budget
/// either judges it or says it cannot, never panics.
pub fn check(data: &[u8]) {
    let Ok(dir) = ReplayDir::parse("fuzz/summary.json".into(), data, "fuzz".as_ref()) else {
        return;
    };
    // What check accepts is a summary the replay could have written: it
    // reads back as itself.
    let again = crate::report::figures::RunSummary::from_json(dir.summary.to_json());
    assert_eq!(
        again.as_ref(),
        Ok(&dir.summary),
        "a summary check accepted does not read back"
    );
    let budgets = CheckConfig {
        max_safety_regressions: Some(0),
        max_safety_regression_rate: Some(0.05),
        min_skip_rate: Some(0.1),
        max_added_call_rate: Some(0.1),
        max_risky_skip_rate: Some(0.5),
        min_label_coverage: Some(0.5),
        max_rejected: Some(3),
        min_production_agreement: Some(0.9),
        min_turns: Some(1),
        variant: None,
    };
    if let Ok(results) = judge(&dir, &budgets) {
        let _ = (
            render_text(&results),
            render_markdown(&results, Some((&[], 0))),
        );
    }
}
