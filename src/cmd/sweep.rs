//! `sweep`: every setting of the config's `[sweep]` grid against the
//! baseline in one pass over the traffic, with the risk-savings frontier
//! (frontier.csv, frontier.svg) beside the replay's reports, and without
//! decisions.csv (hundreds of variants per turn).

use std::path::{Path, PathBuf};

use super::args::{FormatArg, RunArgs};
use super::Reading;
use crate::pipeline::{Outcome, Progress, Targets};
use crate::replay::{DecisionsMode, Format, ReplayOptions};

/// What `--help` adds after the options: examples, exit codes, the
/// reference.
pub const HELP: &str = concat!(
    "Example:
  critic-gate sweep traffic.jsonl --config sweep.toml --out reports/sweep   # sweep.toml has a [sweep] grid

",
    super::args::done!(),
    "
Reference: docs/sweeps.md."
);

// Its docs are the flags' help, where `[deployment]` names a config table.
#[allow(rustdoc::broken_intra_doc_links)]
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

impl Args {
    /// The request these flags make.
    pub fn request(&self) -> Request {
        request(
            &self.files,
            &self.config,
            &self.out,
            &self.format,
            &self.run,
        )
    }
}

/// The sweep these flags ask for (also `calibrate`'s, on each part).
pub(super) fn request(
    files: &[String],
    config: &Path,
    out: &Path,
    format: &FormatArg,
    run: &RunArgs,
) -> Request {
    Request {
        sources: files.to_vec(),
        config: crate::cmd::Config::File(config.to_path_buf()),
        out: out.to_path_buf(),
        format: format.format,
        reading: run.reading(),
    }
}

/// What to sweep.
#[derive(Clone, Debug)]
pub struct Request {
    /// Traffic files (`-` is standard input).
    pub sources: Vec<String>,
    /// A config with a `[sweep]` table (and, as for replay, the baseline).
    pub config: crate::cmd::Config,
    /// The report folder (created if needed).
    pub out: PathBuf,
    pub format: Format,
    pub reading: Reading,
}

impl Request {
    /// Where the results go: the report folder (a sweep writes no partial
    /// result).
    pub fn targets(&self) -> Targets<'_> {
        Targets {
            out: Some(&self.out),
            partial: None,
        }
    }

    /// The sweep's replay: the grid as variants, the frontier files, no
    /// per-turn or per-value tables (also what `calibrate` replays on
    /// each part).
    pub fn options(&self) -> crate::Result<ReplayOptions> {
        self.reading.validate()?;
        let file = self.config.read()?;
        let (plan, notes) = crate::grid::sweep_plan(&file)?;
        let mut o = self.reading.options(self.sources.clone(), plan, &self.out);
        o.tallies.decisions = DecisionsMode::None;
        o.tallies.detail = false;
        o.outputs.frontier = true;
        o.outputs.notes = notes;
        o.outputs.format = self.format;
        Ok(o)
    }
}

/// Run the sweep into its folder.
pub fn run(r: &Request, progress: &dyn Progress) -> crate::Result<Outcome> {
    run_with(r, r.options()?, progress)
}

/// [`run`] with the request's options made already (as the command line
/// does, to say a bad config before it waits for standard input).
pub fn run_with(
    r: &Request,
    opts: ReplayOptions,
    progress: &dyn Progress,
) -> crate::Result<Outcome> {
    crate::pipeline::run_to(opts, r.targets(), progress)
        .map(|(o, _)| o)
        .map_err(|e| crate::cmd::in_config(e, r.config.file()))
}
