//! `critic-gate sweep`: evaluate every setting of the config's `[sweep]`
//! grid against the baseline in one pass over the traffic, and write the
//! risk-savings frontier (frontier.csv, frontier.svg) beside the replay's
//! reports (without decisions.csv: hundreds of variants per turn).

use std::path::PathBuf;

use super::replay::{run_with_progress, FormatArg, RunArgs};
use super::CliResult;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Traffic files (JSON Lines; plain, .gz or .zst); `-` is standard input.
    #[arg(required = true)]
    pub files: Vec<String>,
    /// Gate config with a [sweep] table (and, as for replay, the baseline).
    #[arg(long)]
    pub config: PathBuf,
    /// Folder for the reports (created if needed).
    #[arg(long)]
    pub out: PathBuf,
    #[command(flatten)]
    pub format: FormatArg,
    #[command(flatten)]
    pub run: RunArgs,
}

pub fn run(a: Args) -> CliResult {
    super::start_workers(a.run.threads)?;
    let opts = request(&a.files, a.config.clone(), &a.out, &a.run, a.format.format).options()?;
    let targets = critic_gate::Targets {
        out: Some(&a.out),
        partial: None,
    };
    run_with_progress(opts, targets, a.run.quiet)
        .map_err(|e| critic_gate::jobs::in_config(e, Some(&a.config)))
}

/// The sweep these flags ask for (also `calibrate`'s, on each part).
pub fn request(
    files: &[String],
    config: PathBuf,
    out: &std::path::Path,
    run: &RunArgs,
    format: critic_gate::Format,
) -> critic_gate::jobs::sweep::Request {
    critic_gate::jobs::sweep::Request {
        sources: files.to_vec(),
        config,
        out: out.to_path_buf(),
        format,
        reading: run.reading(),
    }
}
