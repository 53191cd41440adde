//! `critic-gate calibrate`: pick the `[sweep]` variant that saves the most
//! while its safety regression rate stays within R with confidence
//! 1 - delta, valid after the choice (fixed-sequence testing on a
//! calibration half, figures on a held-out half).

use std::path::PathBuf;
use std::process::ExitCode;

use critic_gate::{CalibrateOptions, Calibration};

use super::replay::{FormatArg, RunArgs};
use super::CliResult;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Traffic files (JSON Lines; plain, .gz or .zst): read twice, once per half.
    #[arg(required = true)]
    pub files: Vec<String>,
    /// Gate config with a [sweep] table (and the baseline).
    #[arg(long)]
    pub config: PathBuf,
    /// Folder for calibration/, held-out/, calibration.json and calibrated.toml.
    #[arg(long)]
    pub out: PathBuf,
    /// The safety regression rate to stay within (a share, e.g. 0.02).
    #[arg(long, value_name = "R", value_parser = share)]
    pub max_regression_rate: f64,
    /// The chance the choice's true rate exceeds R is at most this.
    #[arg(long, default_value_t = 0.05, value_parser = share)]
    pub delta: f64,
    /// Seed of the run_id hash that splits the traffic into halves.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[command(flatten)]
    pub format: FormatArg,
    #[command(flatten)]
    pub run: RunArgs,
}

/// A share strictly between 0 and 1.
fn share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x > 0.0 && x < 1.0 => Ok(x),
        _ => Err(format!(
            "give a number between 0 and 1 (exclusive), got {s:?}"
        )),
    }
}

pub fn run(a: Args) -> CliResult {
    super::start_workers(a.run.threads)?;
    let replay = super::sweep::options(&a.files, &a.config, &a.out, &a.run, a.format.format)?;
    let o = CalibrateOptions {
        replay,
        max_regression_rate: a.max_regression_rate,
        delta: a.delta,
        seed: a.seed,
    };
    let c = critic_gate::calibrate(&o, &a.out, &())?;
    if !a.run.quiet {
        super::output::stdout(&render(&c, &a.out))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What calibrate prints: the tests in order, the choice, its held-out
/// figures, and where the files are.
fn render(c: &Calibration, out: &std::path::Path) -> String {
    use std::fmt::Write as _;
    let mut s = format!(
        "calibration half: {} turns, held-out half: {} turns (run_id hash, seed {}); savings: {}\n",
        c.calibration_turns, c.held_out_turns, c.seed, c.savings_metric
    );
    for t in &c.selection.tested {
        let bound = t
            .upper_bound
            .map_or("none".to_string(), |u| format!("{u:.4}"));
        let _ = writeln!(
            s,
            "  {} {:<28} savings {:>10.4}  regressions {:>4} of {:>6} labelled  bound {bound}",
            if t.passed { "PASS" } else { "FAIL" },
            t.variant,
            t.savings,
            t.safety_regressions,
            t.labelled_skips
        );
    }
    let _ = writeln!(s, "stopped: {}", c.selection.stopped);
    for n in &c.notes {
        let _ = writeln!(s, "note: {n}");
    }
    match (&c.selection.chosen, &c.held_out) {
        (Some(v), Some(h)) => {
            let bound = h
                .upper_bound
                .map_or("none".to_string(), |u| format!("{u:.4}"));
            let _ = writeln!(
                s,
                "chosen: {v}; on the held-out half: {} skips, {} saved calls, {} regressions in {} labelled skips (bound {bound})",
                h.skips, h.saved_calls, h.safety_regressions, h.labelled_skips
            );
        }
        _ => {
            let _ = writeln!(s, "chosen: none, keep the baseline");
        }
    }
    let _ = writeln!(
        s,
        "wrote {} and {}",
        out.join("calibration.json").display(),
        out.join("calibrated.toml").display()
    );
    s
}
