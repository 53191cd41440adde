//! `replay`: every variant of a config replayed over the traffic into a
//! report folder, a partial result (a shard of a larger replay), or both.

use std::path::PathBuf;
use std::sync::Arc;

use super::args::{FormatArg, RunArgs};
use super::{Config, Reading};
use crate::pipeline::partial::PartialTarget;
use crate::pipeline::{Outcome, Progress, Targets};
use crate::replay::{DecisionsMode, Format, ReplayOptions};

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
    /// Which rows decisions.csv keeps: all (every turn and variant),
    /// changed (where a variant decides differently from the baseline) or
    /// none.
    #[arg(long, default_value = DecisionsMode::default().name(), value_parser = decisions_mode())]
    pub decisions: DecisionsMode,
    /// Extra grouping dimension for segments.csv: a dotted path into the
    /// turn (e.g. `critic.model`, `scope.user.tier`). Repeatable.
    #[arg(long = "group-by", value_name = "KEY")]
    pub group_by: Vec<String>,
    /// Scope keys to make columns of decisions.csv and regressions.csv
    /// (`tenant` -> `scope_tenant`), comma-separated; an empty value makes
    /// none. Default: the keys of the first 10,000 turns (at most 16, in
    /// order of first appearance). Name them to get the same header in
    /// every run.
    #[arg(long, value_name = "KEYS", value_delimiter = ',', num_args = 0..)]
    pub scope_columns: Option<Vec<String>>,
    /// A plan (plan.toml, from `critic-gate plan`): production's skips
    /// are measured against its critic sample (the traffic's shadow labels
    /// and production's own reviews of the turns it draws).
    #[arg(long, value_name = "PLAN")]
    pub plan: Option<PathBuf>,
    #[command(flatten)]
    pub format: FormatArg,
    #[command(flatten)]
    pub run: RunArgs,
}

/// `--decisions`: the library's names, parsed by the library.
fn decisions_mode() -> impl clap::builder::TypedValueParser<Value = DecisionsMode> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(DecisionsMode::NAMES)
        .try_map(|s| s.parse::<DecisionsMode>())
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
            format: self.format.format,
            decisions: self.decisions,
            group_by: self.group_by.clone(),
            scope_columns: self.scope_columns.clone(),
            reading: self.run.reading(),
            plan: self.plan.clone(),
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
    pub format: Format,
    pub decisions: DecisionsMode,
    /// Extra grouping dimensions (`critic.model`).
    pub group_by: Vec<String>,
    /// The scope keys made columns (Some of no key: none; None: those of
    /// the first turns).
    pub scope_columns: Option<Vec<String>>,
    pub reading: Reading,
    /// The plan whose sample measures production's skips.
    pub plan: Option<PathBuf>,
}

impl Request {
    /// The replay's options; its label is `reading.label`, else the name
    /// of the folder (or of the partial result's file without extension,
    /// or `shard` for one kept in memory).
    pub fn options(&self) -> crate::Result<ReplayOptions> {
        self.reading.validate()?;
        crate::replay::validate_group_by(&self.group_by)?;
        let plan = self.config.plan()?;
        let named = match (&self.out, &self.partial) {
            (Some(out), _) => out.clone(),
            (None, Some(PartialTarget::File(p))) => p.with_extension(""),
            (None, Some(PartialTarget::Memory)) => PathBuf::from("shard"),
            (None, None) => {
                return Err(crate::Error::Usage(format!(
                    "replay: give a report folder ({}) or a partial result ({})",
                    crate::vocab::Setting::Out,
                    crate::vocab::Setting::Partial
                )))
            }
        };
        let mut o = self.reading.options(self.sources.clone(), plan, &named);
        o.input.source_bytes = self.source_bytes.clone();
        o.tallies.decisions = self.decisions;
        o.tallies.group_by = self.group_by.clone();
        // A scope-column name that is empty names no key.
        o.tallies.scope_columns = self
            .scope_columns
            .as_ref()
            .map(|ks| ks.iter().filter(|k| !k.is_empty()).cloned().collect());
        o.outputs.format = self.format;
        if let Some(path) = &self.plan {
            o.tallies.design = Some(super::sample::design_of(path, &o.plan)?);
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
