//! `critic-gate explain`: show how each gate decides one turn, and why.
//!
//! The turn is a JSON argument, a file, or standard input. A file or stdin
//! may also hold JSON Lines: each turn is explained in turn (with `--json`,
//! one JSON object per line).

use std::path::PathBuf;
use std::process::ExitCode;

use super::CliResult;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The turn: inline JSON (`{"run_id":...}`), a file of one turn or of
    /// JSON Lines, or `-` / nothing for standard input.
    pub turn: Option<String>,
    /// Gate config (TOML, or JSON if it ends in .json). Default: symfonic's
    /// defaults, explained as `legacy` (flag off) and `smart` (flag on).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Print JSON instead of the readable trace.
    #[arg(long)]
    pub json: bool,
    /// The input's format: traffic, openai-chat (each turn of each
    /// conversation is explained) or otlp (each run of the trace); the
    /// config's [deployment] table says how to derive them.
    #[arg(long, default_value = "traffic", value_parser = super::replay::from())]
    pub from: critic_gate::import::InputFormat,
}

pub fn run(a: Args) -> CliResult {
    super::output::waiting_for_stdin(&[a.turn.as_deref().unwrap_or("-")]);
    let request = critic_gate::jobs::explain::Request {
        turn: a.turn,
        config: a.config,
        json: a.json,
        from: a.from,
    };
    super::output::stdout(&critic_gate::jobs::explain::run(&request)?)?;
    Ok(ExitCode::SUCCESS)
}
