//! critic-gate: replay recorded LLM-agent traffic through symfonic's
//! metacognition critic gates and measure what a gate change saves and
//! risks.
//!
//! Data flows one way: [`reader`] (lines) -> [`turn`] (validated turns) ->
//! [`gate`] (an [`gate::Evaluation`] per turn and variant) -> tallies ->
//! reports.

pub mod config;
pub mod explain;
pub mod gate;
pub mod pyre;
pub mod turn;
