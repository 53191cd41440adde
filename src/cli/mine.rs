//! `critic-gate mine`: the acks a smart variant's patterns miss (proposed
//! patterns, validated by a replay) and the skips that are more than an
//! ack (risky skips; with `--stress`, how many survive added content).

use std::path::PathBuf;
use std::process::ExitCode;

use super::replay::RunArgs;
use super::CliResult;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Traffic files (JSON Lines; plain, .gz or .zst): read twice.
    #[arg(required = true)]
    pub files: Vec<String>,
    /// Folder for proposals.csv, proposals.toml, missed.csv,
    /// risky_skips.csv, mine.json and validation/.
    #[arg(long)]
    pub out: PathBuf,
    /// Gate config (default: symfonic's defaults, legacy and smart).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The smart variant to mine (default: the first with the flag on).
    #[arg(long)]
    pub variant: Option<String>,
    /// A phrase is proposed only when seen in at least this many turns.
    #[arg(long, default_value_t = critic_gate::jobs::mine::MIN_SUPPORT, value_parser = clap::value_parser!(u64).range(1..))]
    pub min_support: u64,
    /// A pattern is proposed only when its new skips hold at least this
    /// many labels (below 30, a 95% bound cannot go under 0.095 even
    /// without a regression).
    #[arg(long, default_value_t = critic_gate::jobs::mine::MIN_LABELLED, value_parser = clap::value_parser!(u64).range(1..))]
    pub min_labelled: u64,
    /// A pattern is proposed only when its new skips' upper 95% bound is
    /// within this.
    #[arg(long, value_name = "R", value_parser = super::share, default_value_t = critic_gate::jobs::mine::MAX_REGRESSION_RATE, conflicts_with = "budget_from_variant")]
    pub max_regression_rate: f64,
    /// Hold each pattern to the mined variant's own upper 95% bound instead
    /// (no riskier than its skips today; it takes many labels).
    #[arg(long)]
    pub budget_from_variant: bool,
    /// Also add short content to every skipped draft and count the skips that survive.
    #[arg(long)]
    pub stress: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

pub fn run(a: Args) -> CliResult {
    super::start_workers(a.run.threads)?;
    let request = critic_gate::jobs::mine::Request {
        sources: a.files.clone(),
        out: a.out.clone(),
        config: a.config.clone(),
        variant: a.variant.clone(),
        min_support: a.min_support,
        min_labelled: a.min_labelled,
        max_regression_rate: (!a.budget_from_variant).then_some(a.max_regression_rate),
        stress: a.stress,
        reading: a.run.reading(),
    };
    let m = critic_gate::jobs::mine::run(&request, &())?;
    if !a.run.quiet {
        super::output::stdout(&m.text)?;
    }
    Ok(ExitCode::SUCCESS)
}
