//! Traffic a deployment already has, read as turns of the traffic format:
//! OpenAI-style chat transcripts ([`openai`]) and symfonic's OpenTelemetry
//! traces ([`otlp`]). Each shape is read into [`RawTurn`]s (what the record
//! holds), and a raw turn is converted (`raw::convert`): the signals
//! symfonic would have computed derived as the deployment (`[deployment]`)
//! computed them, and a `provenance` saying, signal by signal, what was
//! recorded, derived or unknown. A converted turn reaches the replay as a
//! value (the `Turn` its traffic line reads as); `import` writes it as
//! that line.
//!
//! Every command reads imported traffic through a [`Decoder`]: for a
//! transcript each block of lines is converted on the worker that replays
//! it; a trace, whose runs span many lines, is gathered source by source
//! first ([`decode::gather`]). Either way the converted block keeps the
//! input's line numbers, so a turn's `line` is where its record starts.

pub mod decode;
pub mod not_imported;
pub mod openai;
pub mod otlp;
pub mod pyliteral;
pub mod raw;

pub use decode::{convert_text, gather, lines, open, Decoder};
pub use not_imported::NotImported;
pub use raw::{Captured, InputFormat, RawCall, RawTurn, ResultText, MAX_TOOL_CALLS, SAFE_REFUSAL};
