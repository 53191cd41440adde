//! Command-line definition and dispatch.

mod calibrate;
mod check;
mod derive;
mod diff;
mod explain;
mod help;
mod import;
mod init;
mod merge;
mod mine;
pub mod output;
mod parse_only;
mod patterns;
mod replay;
mod sweep;
mod synth;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Replay recorded LLM-agent traffic through symfonic's critic gates and
/// report what a gate change saves and risks.
#[derive(Parser, Debug)]
#[command(name = "critic-gate", version, about, after_help = help::TOP)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Explain how each gate decides one turn, and why.
    #[command(after_help = help::EXPLAIN)]
    Explain(explain::Args),
    /// Replay recorded traffic through every variant and write the reports.
    #[command(after_help = help::REPLAY)]
    Replay(replay::Args),
    /// Evaluate every setting of the config's [sweep] grid in one pass and
    /// write the risk-savings frontier.
    #[command(after_help = help::SWEEP)]
    Sweep(sweep::Args),
    /// Pick the sweep variant that saves the most with its safety regression
    /// rate certified within R (valid after the choice).
    #[command(after_help = help::CALIBRATE)]
    Calibrate(calibrate::Args),
    /// Mine the traffic both ways: acks the patterns miss (proposed patterns)
    /// and skips that are more than an ack (risky skips).
    #[command(after_help = help::MINE)]
    Mine(mine::Args),
    /// Generate realistic synthetic traffic.
    #[command(after_help = help::SYNTH)]
    Synth(synth::Args),
    /// Apply release budgets to a replay's reports (exit 0 pass, 1 fail, 2 cannot judge).
    #[command(after_help = help::CHECK)]
    Check(check::Args),
    /// Compare two replays of the same traffic: metric changes and flipped decisions.
    #[command(after_help = help::DIFF)]
    Diff(diff::Args),
    /// Merge shards' partial results (`replay --partial`) into the reports
    /// of one replay over all their files.
    #[command(after_help = help::MERGE)]
    Merge(merge::Args),
    /// The intent verdict and fabrication findings symfonic computes for
    /// each line of inputs (user message, draft, tool calls, the domain).
    #[command(after_help = help::DERIVE)]
    Derive(derive::Args),
    /// Convert chat transcripts or symfonic's OpenTelemetry traces into
    /// the traffic format (what replay --from reads them as).
    #[command(after_help = help::IMPORT)]
    Import(import::Args),
    /// Write a commented starter config (legacy against smart).
    #[command(after_help = help::INIT)]
    Init(init::Args),
    /// Print the trivial-ack patterns (the built-ins, or each variant's),
    /// ready to paste and extend.
    #[command(after_help = help::PATTERNS)]
    Patterns(patterns::Args),
    /// Benchmark baseline: read and parse only.
    #[command(hide = true)]
    ParseOnly(parse_only::Args),
}

/// What a command decided (its exit code), or the error it exits on.
pub type CliResult = Result<ExitCode, critic_gate::Error>;

pub fn run(cli: Cli) -> CliResult {
    match cli.command {
        Command::Explain(a) => explain::run(a),
        Command::Replay(a) => replay::run(a),
        Command::Sweep(a) => sweep::run(a),
        Command::Calibrate(a) => calibrate::run(a),
        Command::Mine(a) => mine::run(a),
        Command::Synth(a) => synth::run(a),
        Command::ParseOnly(a) => parse_only::run(a),
        Command::Check(a) => check::run(a),
        Command::Diff(a) => diff::run(a),
        Command::Merge(a) => merge::run(a),
        Command::Derive(a) => derive::run(a),
        Command::Import(a) => import::run(a),
        Command::Init(a) => init::run(a),
        Command::Patterns(a) => patterns::run(a),
    }
}

/// The most worker threads `--threads` may ask for, per core: more only
/// adds contention, and a typo (`--threads 100000`) must not start
/// thousands of threads.
pub const THREADS_PER_CORE: usize = 4;

/// Start the worker pool with `--threads N` (default: one per core).
pub fn start_workers(threads: Option<usize>) -> critic_gate::Result<()> {
    let Some(n) = threads else {
        return Ok(());
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let max = THREADS_PER_CORE * cores;
    if n == 0 || n > max {
        return Err(critic_gate::Error::Usage(format!(
            "--threads {n}: give 1 to {max} ({THREADS_PER_CORE} per core on this machine's {cores} cores)"
        )));
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build_global()
        .map_err(|e| {
            critic_gate::Error::System(format!(
                "--threads {n}: cannot start the worker threads: {e}"
            ))
        })
}

/// A share strictly between 0 and 1 (`--max-regression-rate`, `--delta`).
pub fn share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x > 0.0 && x < 1.0 => Ok(x),
        _ => Err(format!(
            "give a number between 0 and 1 (exclusive), got {s:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_valid() {
        Cli::command().debug_assert();
    }
}
