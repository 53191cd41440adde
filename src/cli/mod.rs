//! Command-line definition and dispatch: each command's flags, help and
//! request are its own module's in the library (`critic_gate::cmd`); what
//! is left here belongs to the process: starting the workers, the
//! progress bar and signals, what is printed and the exit code.

pub mod output;
mod parse_only;
mod progress;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Replay recorded LLM-agent traffic through symfonic's critic gates and
/// report what a gate change saves and risks.
#[derive(Parser, Debug)]
#[command(name = "critic-gate", version, about, after_help = TOP)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    #[command(about = critic_gate::cmd::explain::ABOUT, after_help = critic_gate::cmd::explain::HELP)]
    Explain(critic_gate::cmd::explain::Args),
    #[command(about = critic_gate::cmd::replay::ABOUT, after_help = critic_gate::cmd::replay::HELP)]
    Replay(critic_gate::cmd::replay::Args),
    #[command(about = critic_gate::cmd::sweep::ABOUT, after_help = critic_gate::cmd::sweep::HELP)]
    Sweep(critic_gate::cmd::sweep::Args),
    #[command(about = critic_gate::cmd::calibrate::ABOUT, after_help = critic_gate::cmd::calibrate::HELP)]
    Calibrate(critic_gate::cmd::calibrate::Args),
    #[command(about = critic_gate::cmd::mine::ABOUT, after_help = critic_gate::cmd::mine::HELP)]
    Mine(critic_gate::cmd::mine::Args),
    #[command(about = critic_gate::cmd::synth::ABOUT, after_help = critic_gate::cmd::synth::HELP)]
    Synth(critic_gate::cmd::synth::Args),
    #[command(about = critic_gate::cmd::plan::ABOUT, after_help = critic_gate::cmd::plan::HELP)]
    Plan(critic_gate::cmd::plan::Args),
    #[command(about = critic_gate::cmd::sample::ABOUT, after_help = critic_gate::cmd::sample::HELP)]
    Sample(critic_gate::cmd::sample::Args),
    #[command(about = critic_gate::cmd::labels::ABOUT, after_help = critic_gate::cmd::labels::HELP)]
    Labels(critic_gate::cmd::labels::Args),
    #[command(about = critic_gate::cmd::monitor::ABOUT, after_help = critic_gate::cmd::monitor::HELP)]
    Monitor(critic_gate::cmd::monitor::Args),
    #[command(about = critic_gate::cmd::check::ABOUT, after_help = critic_gate::cmd::check::HELP)]
    Check(critic_gate::cmd::check::Args),
    #[command(about = critic_gate::cmd::diff::ABOUT, after_help = critic_gate::cmd::diff::HELP)]
    Diff(critic_gate::cmd::diff::Args),
    #[command(about = critic_gate::cmd::merge::ABOUT, after_help = critic_gate::cmd::merge::HELP)]
    Merge(critic_gate::cmd::merge::Args),
    #[command(about = critic_gate::cmd::derive::ABOUT, after_help = critic_gate::cmd::derive::HELP)]
    Derive(critic_gate::cmd::derive::Args),
    #[command(about = critic_gate::cmd::import::ABOUT, after_help = critic_gate::cmd::import::HELP)]
    Import(critic_gate::cmd::import::Args),
    #[command(about = critic_gate::cmd::init::ABOUT, after_help = critic_gate::cmd::init::HELP)]
    Init(critic_gate::cmd::init::Args),
    #[command(about = critic_gate::cmd::patterns::ABOUT, after_help = critic_gate::cmd::patterns::HELP)]
    Patterns(critic_gate::cmd::patterns::Args),
    /// Benchmark baseline: read and parse only.
    #[command(hide = true)]
    ParseOnly(parse_only::Args),
}

/// The top-level help's closing lines.
pub const TOP: &str = "\
First steps:
  critic-gate init                         # write critic-gate.toml, commented
  critic-gate replay traffic.jsonl --config critic-gate.toml --out reports/first
  critic-gate check reports/first --config critic-gate.toml

Exit codes: 0 success; 1 a budget failed (check, diff --fail-on-new-regressions, monitor's alarm); 2 the tool could not do its job.
Reference: README.md and docs/ in the critic-gate repository (docs/traffic-format.md: the input).";

/// What a command decided (its exit code), or the error it exits on.
pub type CliResult = Result<ExitCode, critic_gate::Error>;

pub fn run(cli: Cli) -> CliResult {
    use critic_gate::cmd;
    match cli.command {
        Command::Replay(a) => replay(a),
        Command::Sweep(a) => sweep(a),
        Command::Calibrate(a) => {
            start_workers(a.flags.threads())?;
            let c = cmd::calibrate::run(&a.request(), &())?;
            say(!a.flags.quiet(), &c.text)
        }
        Command::Mine(a) => {
            start_workers(a.flags.threads())?;
            let m = cmd::mine::run(&a.request()?, &())?;
            say(!a.flags.quiet(), &m.text)
        }
        Command::Merge(a) => merge(a),
        Command::Import(a) => import(a),
        Command::Synth(a) => cmd::synth::run(&a.request()).and(Ok(ExitCode::SUCCESS)),
        Command::ParseOnly(a) => parse_only::run(a),
        Command::Check(a) => {
            let verdict = cmd::check::run(&a.request())?;
            output::stdout(&verdict.text)?;
            decided(verdict.passed)
        }
        Command::Diff(a) => {
            let d = cmd::diff::run(&a.request())?;
            output::stdout(&d.text)?;
            decided(d.passed)
        }
        Command::Explain(a) => {
            output::waiting_for_stdin(&[a.turn.as_deref().unwrap_or("-")]);
            say(true, &cmd::explain::run(&a.request())?)
        }
        Command::Derive(a) => {
            output::waiting_for_stdin(std::slice::from_ref(&a.file));
            say(true, &cmd::derive::run(&a.request())?)
        }
        Command::Init(a) => say(true, &cmd::init::run(&a.request())?.said()),
        Command::Plan(a) => {
            let mut r = a.request()?;
            r.pass.stop = progress::stop_on_signals()?;
            say(!a.flags.quiet(), &cmd::plan::run(&r)?.text)
        }
        Command::Sample(a) => {
            start_workers(a.flags.threads())?;
            let mut r = a.request();
            r.pass.stop = progress::stop_on_signals()?;
            say(!a.flags.quiet(), &cmd::sample::run(&r, None)?.text)
        }
        Command::Labels(a) => {
            let mut r = a.request();
            r.pass.stop = progress::stop_on_signals()?;
            say(!a.flags.quiet(), &cmd::labels::run(&r)?.text)
        }
        Command::Monitor(a) => {
            let mut r = a.request();
            r.pass.stop = progress::stop_on_signals()?;
            let m = cmd::monitor::run(&r)?;
            if !a.flags.quiet() {
                output::stdout(&m.text)?;
            }
            decided(!m.failed)
        }
        Command::Patterns(a) => say(true, &cmd::patterns::run(&a.request())?),
    }
}

/// `text` on standard output when `loud`; done.
fn say(loud: bool, text: &str) -> CliResult {
    if loud {
        output::stdout(text)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Exit 0 when the budgets `passed`, else 1.
fn decided(passed: bool) -> CliResult {
    Ok(ExitCode::from(if passed { 0 } else { 1 }))
}

fn replay(a: critic_gate::cmd::replay::Args) -> CliResult {
    use critic_gate::cmd::replay;
    start_workers(a.flags.threads())?;
    let r = a.request();
    // Made first: a bad config is said before waiting for standard input.
    let opts = r.options()?;
    let written = r.targets().written();
    progress::run_with_progress(&r.sources, &written, a.flags.quiet(), |p| {
        replay::run_with(&r, opts, p).map(|done| done.outcome)
    })
}

fn sweep(a: critic_gate::cmd::sweep::Args) -> CliResult {
    start_workers(a.flags.threads())?;
    let r = a.request();
    let opts = r.options()?;
    let written = r.targets().written();
    progress::run_with_progress(&r.sources, &written, a.flags.quiet(), |p| {
        critic_gate::cmd::sweep::run_with(&r, opts, p)
    })
}

/// `merge`: the shards' partial results into one replay's reports, its
/// summary on stderr.
fn merge(a: critic_gate::cmd::merge::Args) -> CliResult {
    progress::clean_up_on_signals()?;
    let started = std::time::Instant::now();
    let outcome = critic_gate::cmd::merge::run(a.request())?;
    if !a.flags.quiet() {
        let written = [format!("reports: {}", a.out.display())];
        output::stderr(&outcome.console(started.elapsed().as_secs_f64(), &written));
    }
    Ok(ExitCode::SUCCESS)
}

fn import(a: critic_gate::cmd::import::Args) -> CliResult {
    progress::clean_up_on_signals()?;
    start_workers(a.flags.threads())?;
    let r = a.request();
    output::waiting_for_stdin(&r.sources);
    let imported = critic_gate::cmd::import::run(&r)?;
    if !a.flags.quiet() {
        output::stderr(&imported.text);
    }
    Ok(ExitCode::SUCCESS)
}

/// The signal that stopped a command's pass, if one did.
pub fn signalled() -> Option<u8> {
    let sig = progress::SIGNALLED.load(std::sync::atomic::Ordering::SeqCst);
    u8::try_from(sig).ok().filter(|s| *s > 0 && *s < 128)
}

/// Start the worker pool with `--threads N` (default: one per core).
pub fn start_workers(threads: Option<usize>) -> critic_gate::Result<()> {
    let Some(n) = threads else {
        return Ok(());
    };
    let n = critic_gate::cmd::threads(n)?;
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build_global()
        .map_err(|e| {
            critic_gate::Error::System(critic_gate::Failure::caused(
                format!("--threads {n}: cannot start the worker threads: {e}"),
                e,
            ))
        })
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
