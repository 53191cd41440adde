//! `sweep`: every setting of the config's `[sweep]` grid against the
//! baseline in one pass over the traffic, with the risk-savings frontier
//! (frontier.csv, frontier.svg) beside the replay's reports, and without
//! decisions.csv (hundreds of variants per turn).

use std::path::PathBuf;

use super::args::{self, Flags};
use super::Reading;
use crate::options::{Setting, Values};
use crate::pipeline::{Outcome, Progress, Targets};
use crate::replay::{DecisionsMode, ReplayOptions};

/// The command's one line in `critic-gate --help`, and the first of its
/// own `--help`.
pub const ABOUT: &str = "Evaluate every setting of the config's [sweep] grid in one pass and \
     write the risk-savings frontier";

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
    pub flags: Flags<args::Sweep>,
}

impl Args {
    /// The request these flags make.
    pub fn request(&self) -> Request {
        Request {
            sources: self.files.clone(),
            config: crate::cmd::Config::File(self.config.clone()),
            out: self.out.clone(),
            flags: self.flags.values.clone(),
        }
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
    /// Every declared option of `sweep` (`options::SWEEP`): the tables'
    /// format and how the traffic is read.
    pub flags: Values,
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
        let reading = Reading::of(&self.flags);
        reading.validate()?;
        let file = self.config.read()?;
        let (plan, notes) = crate::grid::sweep_plan(&file)?;
        let mut o = reading.options(self.sources.clone(), plan, &self.out);
        o.flags = self.flags.clone();
        o.tallies.decisions = DecisionsMode::None;
        o.tallies.detail = false;
        o.outputs.frontier = true;
        o.outputs.notes = notes;
        o.outputs.format = self.flags.name(Setting::Format).unwrap_or_default();
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
