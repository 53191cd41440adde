//! critic-gate: replay recorded LLM-agent traffic through symfonic's
//! metacognition critic gates and measure what a gate change saves and
//! risks.
//!
//! Modules import in one direction only. The layers are drawn once, with
//! what lives in each, in ARCHITECTURE.md's map; `TIERS` and `INNER` in
//! `src/layers.rs` are that drawing as code: one test reads every
//! `crate::` path of both crates and fails on an edge that runs back up,
//! another fails when the map and `TIERS` disagree.
//!
//! The crate root re-exports what the command line and the Python package
//! (`python/`, a workspace member the CLI never links) use; everything else
//! is `pub(crate)`, and the compiler holds that (`unreachable_pub`).

#![warn(unreachable_pub)]

// The polars-free core (crates/core), under the same names as before the
// split, so every layer above reaches it as `crate::gate`, `crate::read`.
pub use critic_gate_core::{
    anytime, budgets, coin, config, cusum, deployment, derive, gate, grid, import, options, pooled,
    read, stats, vocab,
};

/// A message that names settings as data (`crate::options::Said`).
pub use critic_gate_core::said;

pub mod cmd;
mod error;
pub mod explain;
#[doc(hidden)]
pub mod fuzz;
pub(crate) mod pipeline;
pub(crate) mod replay;
pub(crate) mod report;
pub(crate) mod summary;
pub mod synth;
pub mod transcripts;

pub use error::{Error, Failure, Result};

/// Choosing a sweep variant with a bound that survives the choice.
pub use cmd::calibrate::{CalibrateOptions, Calibration};
/// Mining acks the patterns miss and skips that are more than an ack.
pub use cmd::mine::{MineOptions, Mined};
/// The config file and what it resolves to.
pub use config::{
    CheckConfig, ConfigError, ConfigFile, CostConfig, FrameworkConfig, Plan, Variant,
};
/// A sweep's variants from the config's `[sweep]` table.
pub use grid::{sweep_plan, MAX_VARIANTS};
/// Replaying shard by shard: a run's partial result, and the merge of
/// several into the reports of one replay over all their files.
pub use pipeline::partial::PartialTarget;
pub use pipeline::{import, ImportOptions, ImportOutcome};
pub use pipeline::{merge, MergeOptions, Targets};
/// What a replay says as it runs and when it is done; the parse-only baseline.
pub use pipeline::{parse_only, Outcome, Parsed, Progress};
/// Lines longer than this are invalid unless `--max-line-bytes` says otherwise.
pub use read::reader::DEFAULT_MAX_LINE_BYTES;
/// A validated turn, read from one line of traffic.
pub use read::turn::Turn;
/// A run's label when none is given: its output folder's name.
pub use replay::options::default_label;
/// What a replay is asked to do.
pub use replay::options::DEFAULT_MAX_ACK_SHARE;
pub use replay::{
    validate_group_by, DecisionsMode, Format, Input, Outputs, ReplayOptions, Tallies,
};
/// Called from a signal handler: remove this process's staging folders and exit.
pub use report::abandon_in_progress_and_exit;
pub use summary::partial::PartialInput;
/// The reports reference (docs/reports.md): every table's columns, the
/// warnings, segment dimensions and matrix cells, from their declarations.
pub use summary::schema::reference_markdown as reports_reference;
/// The version of the report folders this build writes and reads.
pub use summary::schema::SCHEMA_VERSION;

/// Pieces the tests, benchmarks and fuzz targets reach into; not API.
#[doc(hidden)]
pub use critic_gate_core::internals;
#[doc(hidden)]
pub use summary::parquet::decoded_estimate as parquet_decoded_estimate;
/// The Parquet reader `check` uses, for the tests; not API.
#[doc(hidden)]
pub use summary::parquet::read_frame as read_parquet;

#[cfg(test)]
mod layers;

/// Every declared table with its columns, as a report folder's
/// schema.json holds them (without scope columns): what the Python
/// package reads tables with.
pub fn schema_json() -> serde_json::Value {
    summary::schema::to_json(&[])
}
