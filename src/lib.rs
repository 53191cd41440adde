//! critic-gate: replay recorded LLM-agent traffic through symfonic's
//! metacognition critic gates and measure what a gate change saves and
//! risks.
//!
//! Data flows one way: [`reader`] (blocks of lines) -> [`turn`] (validated
//! turns, read by [`json::fast`] with `serde_json` as the authority) ->
//! [`gate`] (an [`gate::Evaluation`] per turn and variant) -> [`replay`] /
//! [`tally`] / [`segments`] (mergeable tallies, blocks in parallel via
//! [`ordered`]) -> [`report`] (polars tables, JSON, Markdown).

pub mod check;
pub mod config;
pub mod diff;
mod error;
pub mod explain;
#[doc(hidden)]
pub mod fuzz;
pub mod gate;
pub mod json;
pub mod ordered;
pub mod pipeline;
pub mod pyre;
pub mod reader;
pub mod replay;
pub mod report;
pub mod segments;
pub mod stats;
pub mod synth;
pub mod tally;
pub mod turn;

pub use error::{Error, Result};
