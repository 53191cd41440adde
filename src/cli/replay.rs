//! `critic-gate replay`: evaluate every variant on recorded traffic and
//! write the reports (decisions, summary, floors, segments, regressions,
//! matrix, report.md) into a folder.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use clap::builder::TypedValueParser;
use critic_gate::{DecisionsMode, Format, Progress, ReplayOptions};

use super::CliResult;

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
    #[arg(long, default_value = "all", value_parser = decisions_mode())]
    pub decisions: DecisionsMode,
    /// Extra grouping dimension for segments.csv: a dotted path into the
    /// turn (e.g. `scope.channel`, `critic.model`). Repeatable.
    #[arg(long = "group-by", value_name = "KEY")]
    pub group_by: Vec<String>,
    /// Scope keys to make columns of decisions.csv and regressions.csv
    /// (`tenant` -> `scope_tenant`), comma-separated; an empty value makes
    /// none. Default: the keys of the first 10,000 turns (at most 16, in
    /// order of first appearance). Name them to get the same header in
    /// every run.
    #[arg(long, value_name = "KEYS", value_delimiter = ',', num_args = 0..)]
    pub scope_columns: Option<Vec<String>>,
    #[command(flatten)]
    pub format: FormatArg,
    #[command(flatten)]
    pub run: RunArgs,
}

/// `--format`, for the commands that write tables as CSV or Parquet
/// (not `mine`, which writes CSV only).
#[derive(clap::Args, Debug)]
pub struct FormatArg {
    /// Write every table as csv, parquet (with the declared schema) or both.
    #[arg(long, default_value = "csv", value_parser = format())]
    pub format: Format,
}

/// What every command that runs a replay takes (`replay`, `sweep`,
/// `calibrate`, `mine`).
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The input's format: traffic (critic-gate's own), openai-chat
    /// (chat transcripts, one conversation a line) or otlp (symfonic's
    /// OpenTelemetry traces); see docs/import-formats.md.
    #[arg(long, default_value = "traffic", value_parser = from())]
    pub from: critic_gate::import::InputFormat,
    /// Worker threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Set invalid lines aside in rejects.jsonl instead of stopping.
    #[arg(long)]
    pub skip_invalid: bool,
    /// No progress bar and no summary on stderr.
    #[arg(long)]
    pub quiet: bool,
    /// Lines longer than this many bytes are invalid (read in constant
    /// memory, reported with their first 4 KiB).
    #[arg(long, value_name = "BYTES", default_value_t = critic_gate::DEFAULT_MAX_LINE_BYTES,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_line_bytes: usize,
    /// The run's name in the `run` column of every table and in
    /// summary.json, to tell runs apart when tables are joined or
    /// concatenated (default: the output folder's name).
    #[arg(long, value_name = "NAME", value_parser = label)]
    pub label: Option<String>,
    /// Write into --out even when it is a non-empty folder that holds no
    /// earlier critic-gate report.
    #[arg(long)]
    pub force: bool,
    /// A skip is risky when its matched ack covers less than this share of
    /// the draft (the summary's risky_* figures).
    #[arg(long, value_name = "SHARE", default_value_t = critic_gate::DEFAULT_MAX_ACK_SHARE, value_parser = ack_share)]
    pub max_ack_share: f64,
}

/// A share in (0, 1].
fn ack_share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x > 0.0 && x <= 1.0 => Ok(x),
        _ => Err(format!("give a share in (0, 1], got {s:?}")),
    }
}

impl RunArgs {
    /// How the jobs read the traffic and name the run, from these flags.
    pub fn reading(&self) -> critic_gate::jobs::Reading {
        critic_gate::jobs::Reading {
            skip_invalid: self.skip_invalid,
            max_line_bytes: self.max_line_bytes,
            force: self.force,
            max_ack_share: self.max_ack_share,
            from: self.from,
            label: self.label.clone(),
        }
    }
}

pub(super) fn format() -> impl clap::builder::TypedValueParser<Value = Format> {
    clap::builder::PossibleValuesParser::new(Format::NAMES).try_map(|s| s.parse::<Format>())
}

/// `--from`: the library's names, parsed by the library.
pub(super) fn from(
) -> impl clap::builder::TypedValueParser<Value = critic_gate::import::InputFormat> {
    clap::builder::PossibleValuesParser::new(critic_gate::import::InputFormat::NAMES)
        .try_map(|s| s.parse::<critic_gate::import::InputFormat>())
}

/// `--decisions`: the library's names, parsed by the library.
fn decisions_mode() -> impl clap::builder::TypedValueParser<Value = DecisionsMode> {
    clap::builder::PossibleValuesParser::new(DecisionsMode::NAMES)
        .try_map(|s| s.parse::<DecisionsMode>())
}

/// `--label`: any text but the empty one (a run must be told apart).
pub(super) fn label(s: &str) -> Result<String, String> {
    match s {
        "" => Err("give a non-empty name (the run column of every table)".to_string()),
        s => Ok(s.to_string()),
    }
}

/// SIGINT and SIGTERM remove the run's staging folder and exit 130 / 143
/// (128 + the signal), as a shell reports them.
#[cfg(unix)]
pub(super) fn clean_up_on_signals() -> Result<(), critic_gate::Error> {
    use signal_hook::consts::signal::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .map_err(|e| critic_gate::Error::System(format!("cannot watch for signals: {e}")))?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                critic_gate::abandon_in_progress_and_exit(128 + sig);
            }
        })
        .map(drop)
        .map_err(|e| critic_gate::Error::System(format!("cannot start the signal thread: {e}")))
}

#[cfg(not(unix))]
pub(super) fn clean_up_on_signals() -> Result<(), critic_gate::Error> {
    Ok(())
}

struct Bar(ProgressBar);

impl Progress for Bar {
    fn update(&self, bytes: u64, turns: u64) {
        self.0.set_position(bytes);
        let secs = self.0.elapsed().as_secs_f64().max(1e-9);
        self.0
            .set_message(format!("{turns} turns, {:.0} turns/s", turns as f64 / secs));
    }
}

pub fn run(a: Args) -> CliResult {
    super::start_workers(a.run.threads)?;
    let request = critic_gate::jobs::replay::Request {
        sources: a.files,
        config: a.config,
        out: a.out,
        partial: a.partial,
        format: a.format.format,
        decisions: a.decisions,
        group_by: a.group_by,
        scope_columns: a.scope_columns,
        reading: a.run.reading(),
    };
    run_with_progress(request.options()?, request.targets(), a.run.quiet)
        .map_err(|e| critic_gate::jobs::in_config(e, request.config.as_deref()))
}

/// Run `opts` into `out` with a progress bar (unless quiet or not a
/// terminal) and the summary on stderr.
pub fn run_with_progress(
    opts: ReplayOptions,
    targets: critic_gate::Targets,
    quiet: bool,
) -> CliResult {
    clean_up_on_signals()?;
    super::output::waiting_for_stdin(&opts.input.sources);
    let total: u64 = opts
        .input
        .sources
        .iter()
        .map(|f| {
            if f == "-" {
                0
            } else {
                std::fs::metadata(f).map(|m| m.len()).unwrap_or(0)
            }
        })
        .sum();
    let show = !quiet && std::io::stderr().is_terminal();
    let bar = if show {
        let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        b.set_style(
            ProgressStyle::with_template("{bar:30} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} ETA {eta} {msg}")
                .unwrap(),
        );
        b
    } else {
        ProgressBar::hidden()
    };
    let started = std::time::Instant::now();
    let written = targets.written();
    let outcome = critic_gate::replay_to(opts, targets, &Bar(bar.clone()));
    bar.finish_and_clear();
    let (outcome, _) = outcome?;
    if quiet {
        return Ok(ExitCode::SUCCESS);
    }
    let msg = outcome.console(started.elapsed().as_secs_f64(), &written);
    super::output::stderr(&msg);
    Ok(ExitCode::SUCCESS)
}
