//! `critic-gate sweep`: evaluate every setting of the config's `[sweep]`
//! grid against the baseline in one pass over the traffic, and write the
//! risk-savings frontier (frontier.csv, frontier.svg) beside the replay's
//! reports (without decisions.csv: hundreds of variants per turn).

use std::path::PathBuf;

use critic_gate::{ConfigFile, DecisionsMode, ReplayOptions};

use super::replay::{run_with_progress, RunArgs};
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
    pub run: RunArgs,
}

pub fn run(a: Args) -> CliResult {
    super::start_workers(a.run.threads)?;
    let file = ConfigFile::load(&a.config)?;
    let (plan, notes) = critic_gate::sweep_plan(&file)?;
    let opts = ReplayOptions {
        sources: a.files.clone(),
        plan,
        skip_invalid: a.run.skip_invalid,
        decisions: DecisionsMode::None,
        group_by: vec![],
        force: false,
        max_line_bytes: a.run.max_line_bytes,
        label: a.run.label_for(&a.out),
        format: a.run.format,
        scope_columns: None,
        frontier: true,
        detail: false,
        notes,
    };
    run_with_progress(opts, &a.out, a.run.quiet)
}
