//! `critic-gate check`: apply release budgets to a replay's output folder;
//! exit 0 when every budget passes, 1 when any fails, 2 when it cannot
//! judge (missing or unreadable folder, unknown variant, no budget given).

use std::path::PathBuf;
use std::process::ExitCode;

use critic_gate::CheckConfig;

use super::CliResult;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The output folder of a `replay`.
    pub dir: PathBuf,
    /// Config whose `[check]` table gives budgets (flags override it).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Fail when a variant has more safety regressions than N.
    #[arg(long, value_name = "N")]
    pub max_safety_regressions: Option<u64>,
    /// Fail when the one-sided 95% upper bound of the safety-regression
    /// rate (regressions / labelled skips) exceeds R.
    #[arg(long, value_name = "R")]
    pub max_safety_regression_rate: Option<f64>,
    /// Fail when the skip rate is below R.
    #[arg(long, value_name = "R")]
    pub min_skip_rate: Option<f64>,
    /// Fail when added calls / turns exceeds R.
    #[arg(long, value_name = "R")]
    pub max_added_call_rate: Option<f64>,
    /// Fail when risky skips / skips exceeds R (skips whose matched ack
    /// covers less than the replay's --max-ack-share of the draft).
    #[arg(long, value_name = "R")]
    pub max_risky_skip_rate: Option<f64>,
    /// Fail when labelled skips / skips is below R.
    #[arg(long, value_name = "R")]
    pub min_label_coverage: Option<f64>,
    /// Fail when the baseline decides as production did (by the recorded
    /// critic events) on fewer than R of the turns where that is known.
    #[arg(long, value_name = "R")]
    pub min_production_agreement: Option<f64>,
    /// Fail when a variant has replayed fewer than N turns (a replay of 0
    /// turns is never judged: exit 2).
    #[arg(long, value_name = "N")]
    pub min_turns: Option<u64>,
    /// Fail when more than N input lines were rejected.
    #[arg(long, value_name = "N")]
    pub max_rejected: Option<u64>,
    /// The variant(s) to check (default: every non-baseline variant).
    #[arg(long = "variant", value_name = "NAME")]
    pub variants: Vec<String>,
    /// Also write the verdict as Markdown to FILE (e.g. $GITHUB_STEP_SUMMARY).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
}

pub fn run(a: Args) -> CliResult {
    let request = critic_gate::jobs::check::Request {
        dir: a.dir,
        config: a.config,
        budgets: CheckConfig {
            max_safety_regressions: a.max_safety_regressions,
            max_safety_regression_rate: a.max_safety_regression_rate,
            min_skip_rate: a.min_skip_rate,
            max_added_call_rate: a.max_added_call_rate,
            max_risky_skip_rate: a.max_risky_skip_rate,
            min_label_coverage: a.min_label_coverage,
            max_rejected: a.max_rejected,
            min_production_agreement: a.min_production_agreement,
            min_turns: a.min_turns,
            variant: Some(a.variants).filter(|v| !v.is_empty()),
        },
        markdown: a.markdown,
    };
    let verdict = critic_gate::jobs::check::run(&request)?;
    super::output::stdout(&verdict.text)?;
    Ok(if verdict.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
