//! `critic-gate merge`: the reports of one replay over every shard's
//! files, from the shards' partial results (`replay --partial`), byte for
//! byte.

use std::path::PathBuf;
use std::process::ExitCode;

use critic_gate::{Format, MergeOptions, PartialInput};

use super::replay::{clean_up_on_signals, format, label};
use super::CliResult;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Partial results, in the order of their shards' files.
    #[arg(required = true, value_name = "PARTIAL")]
    pub partials: Vec<PathBuf>,
    /// Folder for the reports (created if needed).
    #[arg(long)]
    pub out: PathBuf,
    /// The run's name in the `run` column of every table (default: the
    /// output folder's name).
    #[arg(long, value_name = "NAME", value_parser = label)]
    pub label: Option<String>,
    /// Write every table as csv, parquet (with the declared schema) or both.
    #[arg(long, default_value = "csv", value_parser = format())]
    pub format: Format,
    /// Write into --out even when it is a non-empty folder that holds no
    /// earlier critic-gate report.
    #[arg(long)]
    pub force: bool,
    /// No summary on stderr.
    #[arg(long)]
    pub quiet: bool,
}

pub fn run(a: Args) -> CliResult {
    clean_up_on_signals()?;
    let started = std::time::Instant::now();
    let o = MergeOptions {
        inputs: a.partials.into_iter().map(PartialInput::File).collect(),
        label: a
            .label
            .unwrap_or_else(|| critic_gate::default_label(&a.out)),
        format: a.format,
        force: a.force,
    };
    let outcome = critic_gate::merge(o, &a.out)?;
    if !a.quiet {
        let written = [format!("reports: {}", a.out.display())];
        super::output::stderr(&outcome.console(started.elapsed().as_secs_f64(), &written));
    }
    Ok(ExitCode::SUCCESS)
}
