//! `critic-gate diff`: compare a release's replay with its candidate's:
//! every summary metric per variant (metrics_diff.csv) and the turns whose
//! decision flipped (flips.csv), new safety regressions first.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use critic_gate::diff::{diff, flips_frame, metrics_frame};
use critic_gate::report::write_csv;

use super::CliResult;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The old replay's output folder (the release).
    pub old: PathBuf,
    /// The new replay's output folder (the candidate).
    pub new: PathBuf,
    /// Where to write flips.csv and metrics_diff.csv (default: NEW).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Exit 1 when the candidate has safety regressions the old replay did not.
    #[arg(long)]
    pub fail_on_new_regressions: bool,
}

pub fn run(a: Args) -> CliResult {
    let d = diff(&a.old, &a.new).map_err(|e| e.0)?;
    let out = a.out.clone().unwrap_or_else(|| a.new.clone());
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    for (name, df) in [
        ("flips.csv", flips_frame(&d.flips)?),
        ("metrics_diff.csv", metrics_frame(&d.metrics)?),
    ] {
        let p = out.join(name);
        let mut df = df;
        let mut f = std::fs::File::create(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        write_csv(&mut df, &mut f, true)?;
    }
    let changed: Vec<_> = d
        .metrics
        .iter()
        .filter(|m| m.delta().is_some_and(|x| x != 0.0) || m.old.is_some() != m.new.is_some())
        .collect();
    let mut text = String::new();
    let _ = writeln!(
        text,
        "{} decision rows compared; {} flipped ({} new safety regressions); {} of {} metrics changed",
        d.compared_rows,
        d.flips.len(),
        d.new_regressions,
        changed.len(),
        d.metrics.len()
    );
    for m in &changed {
        let f = |x: Option<f64>| x.map_or("n/a".to_string(), |x| format!("{x}"));
        let _ = writeln!(
            text,
            "  {:<10} {:<34} {} -> {} ({:+})",
            m.variant,
            m.metric,
            f(m.old),
            f(m.new),
            m.delta().unwrap_or(f64::NAN)
        );
    }
    for fl in d.flips.iter().take(10) {
        let _ = writeln!(
            text,
            "  flip {} {}#{} ({}:{}): {} -> {}{}",
            fl.variant,
            fl.run_id,
            fl.turn,
            fl.source,
            fl.line,
            if fl.old_fires { "fire" } else { "skip" },
            if fl.new_fires { "fire" } else { "skip" },
            if fl.new_regression {
                "  NEW SAFETY REGRESSION"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(
        text,
        "wrote {} and {}",
        out.join("flips.csv").display(),
        out.join("metrics_diff.csv").display()
    );
    super::output::stdout(&text)?;
    Ok(if a.fail_on_new_regressions && d.new_regressions > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
