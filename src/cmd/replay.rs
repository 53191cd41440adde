//! `replay`: every variant of a config replayed over the traffic into a
//! report folder, a partial result (a shard of a larger replay), or both.

use std::path::PathBuf;
use std::sync::Arc;

use super::args::{self, Flags};
use super::{Config, Reading};
use crate::options::{Setting, Values};
use crate::pipeline::partial::PartialTarget;
use crate::pipeline::{Outcome, Progress, Targets};
use crate::replay::ReplayOptions;

/// The command's one line in `critic-gate --help`, and the first of its
/// own `--help`.
pub const ABOUT: &str = "Replay recorded traffic through every variant and write the reports";

/// What `--help` adds after the options: examples, exit codes, the
/// reference.
pub const HELP: &str = concat!(
    "Examples:
  critic-gate replay traffic.jsonl --config gate.toml --out reports/first
  critic-gate replay traces/*.otlp.jsonl.gz --from otlp --config gate.toml --out reports/traces
  zcat big.jsonl.gz | critic-gate replay - --out reports/big --skip-invalid

",
    super::args::done!(),
    "
Reference: docs/traffic-format.md (the input), docs/reading-reports.md, docs/reports.md (every column)."
);

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("target").required(true).multiple(true).args(["out", "partial"])))]
pub struct Args {
    /// Traffic files (JSON Lines; plain, .gz or .zst; or transcripts or
    /// traces, with --from); `-` is standard input.
    #[arg(required = true)]
    pub files: Vec<String>,
    /// Folder for the reports (created if needed).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also (or only) write the run's partial result to FILE, for
    /// `critic-gate merge` to combine with other shards' into the reports of
    /// one replay over all their files.
    #[arg(long, value_name = "FILE")]
    pub partial: Option<PathBuf>,
    /// Gate config with the variants to compare (TOML, or JSON).
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub flags: Flags<args::Replay>,
}

impl Args {
    /// The request these flags make.
    pub fn request(&self) -> Request {
        Request {
            sources: self.files.clone(),
            config: self.config.clone().into(),
            out: self.out.clone(),
            partial: self.partial.clone().map(PartialTarget::File),
            source_bytes: None,
            flags: self.flags.values.clone(),
        }
    }
}

/// What to replay, and where the results go.
#[derive(Clone, Debug)]
pub struct Request {
    /// Traffic files (`-` is standard input).
    pub sources: Vec<String>,
    /// The gate config.
    pub config: Config,
    /// The report folder (None: a partial result only).
    pub out: Option<PathBuf>,
    /// Where the partial result goes, for a later `merge`.
    pub partial: Option<PartialTarget>,
    /// The one source's bytes, when they come from memory and not from
    /// its file (a shard handed over by the Python package).
    pub source_bytes: Option<Arc<[u8]>>,
    /// Every declared option of `replay` (`options::REPLAY`), given or at
    /// its default: which rows and dimensions to keep, the plan, the
    /// tables' format and how the traffic is read.
    pub flags: Values,
}

impl Request {
    /// The replay's options; its label is `reading.label`, else the name
    /// of the folder (or of the partial result's file without extension,
    /// or `shard` for one kept in memory).
    pub fn options(&self) -> crate::Result<ReplayOptions> {
        let f = &self.flags;
        let reading = Reading::of(f);
        reading.validate()?;
        let group_by = f.list(Setting::GroupBy).unwrap_or_default();
        crate::replay::validate_group_by(&group_by)?;
        let plan = self.config.plan()?;
        let named = match (&self.out, &self.partial) {
            (Some(out), _) => out.clone(),
            (None, Some(PartialTarget::File(p))) => p.with_extension(""),
            (None, Some(PartialTarget::Memory)) => PathBuf::from("shard"),
            (None, None) => {
                return Err(crate::Error::Usage(crate::said![
                    "replay: give a report folder (",
                    Setting::Out,
                    ") or a partial result (",
                    Setting::Partial,
                    ")"
                ]))
            }
        };
        let mut o = reading.options(self.sources.clone(), plan, &named);
        o.flags = f.clone();
        o.input.source_bytes = self.source_bytes.clone();
        o.tallies.decisions = f.name(Setting::Decisions).unwrap_or_default();
        o.tallies.group_by = group_by;
        // A scope-column name that is empty names no key.
        o.tallies.scope_columns = f
            .list(Setting::ScopeColumns)
            .map(|ks| ks.into_iter().filter(|k| !k.is_empty()).collect());
        o.outputs.format = f.name(Setting::Format).unwrap_or_default();
        if let Some(path) = f.path(Setting::Plan) {
            o.tallies.design = Some(super::sample::design_of(&path, &o.plan)?);
        }
        Ok(o)
    }

    /// Where the results go.
    pub fn targets(&self) -> Targets<'_> {
        Targets {
            out: self.out.as_deref(),
            partial: self.partial.clone(),
        }
    }
}

/// A replay done: its outcome, and the partial result's bytes when it is
/// kept in memory (else empty).
pub struct Replayed {
    pub outcome: Outcome,
    pub partial: Vec<u8>,
}

/// Run the replay: the one entry of the command line and the Python
/// package.
pub fn run(r: &Request, progress: &dyn Progress) -> crate::Result<Replayed> {
    run_with(r, r.options()?, progress)
}

/// [`run`] with the request's options made already: the command line
/// makes them first, so a bad config or option is said before it waits
/// for standard input.
pub fn run_with(
    r: &Request,
    opts: ReplayOptions,
    progress: &dyn Progress,
) -> crate::Result<Replayed> {
    crate::pipeline::run_to(opts, r.targets(), progress)
        .map(|(outcome, partial)| Replayed { outcome, partial })
        .map_err(|e| super::in_config(e, r.config.file()))
}
