//! `critic-gate check`: apply release budgets to a replay's output folder;
//! exit 0 when every budget passes, 1 when any fails, 2 when it cannot
//! judge (missing or unreadable folder, unknown variant, no budget given).

use std::path::PathBuf;
use std::process::ExitCode;

use critic_gate::check::{
    judge, passed, regressions_judged, render_markdown, render_text, ReplayDir,
};
use critic_gate::{CheckConfig, ConfigFile};

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

fn rate(name: &str, r: Option<f64>) -> Result<(), String> {
    match r {
        Some(x) if !(0.0..=1.0).contains(&x) => {
            Err(format!("{name} must be a rate in [0, 1], got {x}"))
        }
        _ => Ok(()),
    }
}

/// The budgets: each flag over the config's `[check]` value, every rate
/// checked and named where it came from.
fn budgets(a: &Args) -> Result<CheckConfig, critic_gate::Error> {
    let mut budgets = match &a.config {
        Some(p) => ConfigFile::load(p)?.check.unwrap_or_default(),
        None => CheckConfig::default(),
    };
    let over = CheckConfig {
        max_safety_regressions: a.max_safety_regressions.or(budgets.max_safety_regressions),
        max_safety_regression_rate: a
            .max_safety_regression_rate
            .or(budgets.max_safety_regression_rate),
        min_skip_rate: a.min_skip_rate.or(budgets.min_skip_rate),
        max_added_call_rate: a.max_added_call_rate.or(budgets.max_added_call_rate),
        max_risky_skip_rate: a.max_risky_skip_rate.or(budgets.max_risky_skip_rate),
        min_label_coverage: a.min_label_coverage.or(budgets.min_label_coverage),
        max_rejected: a.max_rejected.or(budgets.max_rejected),
        min_production_agreement: a
            .min_production_agreement
            .or(budgets.min_production_agreement),
        min_turns: a.min_turns.or(budgets.min_turns),
        variant: if a.variants.is_empty() {
            budgets.variant.take()
        } else {
            Some(a.variants.clone())
        },
    };
    // A bad rate is named where it came from: the flag, or the config.
    let origin = |flag: Option<f64>, name: &str| match (&a.config, flag) {
        (Some(c), None) => format!("[check] {} in {}", name.replace('-', "_"), c.display()),
        _ => format!("--{name}"),
    };
    for (flag, value, name) in [
        (
            a.max_safety_regression_rate,
            over.max_safety_regression_rate,
            "max-safety-regression-rate",
        ),
        (a.min_skip_rate, over.min_skip_rate, "min-skip-rate"),
        (
            a.max_added_call_rate,
            over.max_added_call_rate,
            "max-added-call-rate",
        ),
        (
            a.min_label_coverage,
            over.min_label_coverage,
            "min-label-coverage",
        ),
        (
            a.max_risky_skip_rate,
            over.max_risky_skip_rate,
            "max-risky-skip-rate",
        ),
        (
            a.min_production_agreement,
            over.min_production_agreement,
            "min-production-agreement",
        ),
    ] {
        rate(&origin(flag, name), value).map_err(critic_gate::Error::Usage)?;
    }
    if !over.any_budget() {
        // Only the contract check would run: a pass would read as a
        // release verdict that judged nothing.
        return Err(critic_gate::Error::CannotJudge(format!(
            "{}: no budget was given, so there is nothing to judge; give at least one (for example --max-safety-regression-rate 0.02 --min-skip-rate 0.1) or a [check] table in --config",
            a.dir.display()
        )));
    }
    Ok(over)
}

pub fn run(a: Args) -> CliResult {
    let over = budgets(&a)?;
    let dir = ReplayDir::open(&a.dir)?;
    let results = judge(&dir, &over)?;
    let ok = passed(&results);
    // The Markdown first: if it cannot be written (exit 2), no verdict has
    // been printed that says otherwise.
    if let Some(md) = &a.markdown {
        let listed = regressions_judged(&a.dir, &results)?;
        let text = render_markdown(
            &results,
            listed
                .as_ref()
                .map(|(lines, total)| (lines.as_slice(), *total)),
        );
        // Append, so it can be pointed at $GITHUB_STEP_SUMMARY.
        use std::io::Write;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(md)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .map_err(|e| critic_gate::Error::Write(format!("{}: {e}", md.display())))?;
    }
    super::output::stdout(&render_text(&results))?;
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
