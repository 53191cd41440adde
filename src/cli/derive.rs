//! `critic-gate derive`: the intent verdict and fabrication findings
//! symfonic-core 9.12.0 computes for each line of inputs (user message,
//! draft, tool calls, the deployment's identifier keys and tool trigger
//! keywords, hydrated context), one JSON line out per line in: how an
//! adopter checks what symfonic would derive for a domain, and how the
//! port is held to upstream.

use std::process::ExitCode;

use super::CliResult;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// JSON Lines of inputs (plain, .gz or .zst; `-` is standard input):
    /// `{"user_message", "draft", "tool_calls", "identifier_keys",
    /// "tool_trigger_keywords", "hydrated_context", "intent_on"}`.
    pub file: String,
    /// Benchmark: time the derivations alone (every line read first) and
    /// print `TURNS SECONDS FINDINGS`.
    #[arg(long, hide = true)]
    pub time: bool,
}

pub fn run(a: Args) -> CliResult {
    super::output::waiting_for_stdin(std::slice::from_ref(&a.file));
    let request = critic_gate::jobs::derive::Request {
        file: a.file,
        time: a.time,
    };
    super::output::stdout(&critic_gate::jobs::derive::run(&request)?)?;
    Ok(ExitCode::SUCCESS)
}
