//! `critic-gate calibrate`: pick the `[sweep]` variant that saves the most
//! while its safety regression rate stays within R with confidence
//! 1 - delta, valid after the choice (Learn then Test: the family fixed on
//! a learn part, tested on a calibration part, figures on a held-out part).

use std::path::PathBuf;
use std::process::ExitCode;

use critic_gate::calibrate::{Procedure, Rule, DEFAULT_MIN_LABEL_COVERAGE};

use super::replay::{FormatArg, RunArgs};
use super::CliResult;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Traffic files (JSON Lines; plain, .gz or .zst): read once per part.
    #[arg(required = true)]
    pub files: Vec<String>,
    /// Gate config with a [sweep] table (and the baseline).
    #[arg(long)]
    pub config: PathBuf,
    /// Folder for learn/, calibration/, held-out/, calibration.json and calibrated.toml.
    #[arg(long)]
    pub out: PathBuf,
    /// The safety regression rate to stay within (a share, e.g. 0.02).
    #[arg(long, value_name = "R", value_parser = super::share)]
    pub max_regression_rate: f64,
    /// The chance the choice's true rate exceeds R is at most this.
    #[arg(long, default_value_t = critic_gate::jobs::calibrate::DELTA, value_parser = super::share)]
    pub delta: f64,
    /// Seed of the run_id hash that deals the runs into parts.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// How the family is tested on the calibration part (calibration.json
    /// gives what each would certify).
    #[arg(long, default_value = Procedure::NAMES[0], value_parser = procedure())]
    pub procedure: Procedure,
    /// A variant whose labelled new skips are fewer than this share of its
    /// new skips (on the learn or the calibration part) cannot be certified.
    #[arg(long, value_name = "SHARE", default_value_t = DEFAULT_MIN_LABEL_COVERAGE, value_parser = share_or_zero)]
    pub min_label_coverage: f64,
    /// Certify on the labels alone, taking the unlabelled new skips to be
    /// missing at random. Without it a variant whose worst-case bound
    /// (every unlabelled new skip a regression) is above R is not
    /// certified: a critic that fails on hard turns leaves their labels
    /// out. calibrated.toml's first line says it was assumed.
    #[arg(long)]
    pub assume_missing_at_random: bool,
    /// Deal the runs into learn and calibration parts only (more labels
    /// for each; no held-out figures).
    #[arg(long)]
    pub no_held_out: bool,
    #[command(flatten)]
    pub format: FormatArg,
    #[command(flatten)]
    pub run: RunArgs,
}

/// `--procedure`: the library's names and help, parsed by the library.
fn procedure() -> impl clap::builder::TypedValueParser<Value = Procedure> {
    use clap::builder::{PossibleValue, TypedValueParser};
    let values = Procedure::ALL.map(|p| PossibleValue::new(p.name()).help(p.help()));
    clap::builder::PossibleValuesParser::new(values).try_map(|s| s.parse::<Procedure>())
}

/// A share in [0, 1).
fn share_or_zero(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..1.0).contains(&x) => Ok(x),
        _ => Err(format!(
            "give a number from 0 up to 1 (exclusive), got {s:?}"
        )),
    }
}

pub fn run(a: Args) -> CliResult {
    super::start_workers(a.run.threads)?;
    let request = critic_gate::jobs::calibrate::Request {
        sweep: super::sweep::request(&a.files, a.config, &a.out, &a.run, a.format.format),
        rule: Rule {
            max_regression_rate: a.max_regression_rate,
            delta: a.delta,
            min_label_coverage: a.min_label_coverage,
            assume_missing_at_random: a.assume_missing_at_random,
        },
        procedure: a.procedure,
        seed: a.seed,
        held_out: !a.no_held_out,
    };
    let c = critic_gate::jobs::calibrate::run(&request, &())?;
    if !a.run.quiet {
        super::output::stdout(&c.text)?;
    }
    Ok(ExitCode::SUCCESS)
}
