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
    let again = crate::summary::figures::RunSummary::from_json(dir.summary.to_json());
    assert_eq!(
        again.as_ref(),
        Ok(&dir.summary),
        "a summary check accepted does not read back"
    );
    use crate::budgets::{Amount::*, Budget::*};
    let budgets = CheckConfig::with(&[
        (MaxSafetyRegressions, Count(0)),
        (MaxSafetyRegressionRate, Rate(0.05)),
        (MinSkipRate, Rate(0.1)),
        (MaxAddedCallRate, Rate(0.1)),
        (MaxRiskySkipRate, Rate(0.5)),
        (MinLabelCoverage, Rate(0.5)),
        (MaxRejected, Count(3)),
        (MinProductionAgreement, Rate(0.9)),
        (MinTurns, Count(1)),
    ]);
    if let Ok(results) = judge(&dir, &budgets) {
        let _ = (
            render_text(&results),
            render_markdown(&results, Some((&[], 0))),
        );
    }
}
