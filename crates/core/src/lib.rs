//! critic-gate's core, without polars: traffic lines read into turns, the
//! port of symfonic's gates and derivations, the config and its plan, the
//! exact bound, and the transcript and trace readers. The `critic-gate`
//! crate (replay, summaries, reports, commands, the command line) builds on it.
//!
//! Modules import in one direction only, the core's being the bottom
//! layers (stats and vocab up to import): ARCHITECTURE.md's map draws
//! them, and `src/layers.rs` of the `critic-gate` crate reads every
//! `crate::` path of both crates and fails on an edge that runs back up.
//!
//! Each module has its own error type (`ConfigError`, `ReadError`,
//! `TurnError`, `PatternError`, ...); the `critic-gate` crate's `Error`
//! wraps them, each with its kind.

// What no other crate can reach is `pub(crate)`, so the compiler holds
// what the crate offers.
#![warn(unreachable_pub)]

pub mod anytime;
pub mod budgets;
pub mod coin;
pub mod config;
pub mod cusum;
pub mod deployment;
pub mod derive;
#[doc(hidden)]
pub mod fuzz;
pub mod gate;
pub mod grid;
pub mod import;
pub mod options;
pub mod pooled;
pub mod read;
pub mod stats;
pub mod vocab;

/// The config file and what it resolves to.
pub use config::{
    CheckConfig, ConfigError, ConfigFile, CostConfig, FrameworkConfig, Plan, Variant,
};
/// A sweep's variants from the config's `[sweep]` table.
pub use grid::{sweep_plan, MAX_VARIANTS};
/// Lines longer than this are invalid unless `--max-line-bytes` says otherwise.
pub use read::reader::DEFAULT_MAX_LINE_BYTES;
/// A validated turn, read from one line of traffic.
pub use read::turn::Turn;

/// Pieces the tests, benchmarks and fuzz targets reach into; not API.
#[doc(hidden)]
pub mod internals {
    pub use crate::gate::{
        draft_has_claims, py_lower, py_strip, BUILTIN_ACK_PATTERNS, MAX_ACK_CHARS,
    };
    pub use crate::read::json::{fast, holds, Node};
    pub use crate::stats::{clopper_pearson_upper, SplitMix};
}
