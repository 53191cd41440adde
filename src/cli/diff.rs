//! `critic-gate diff`: compare a release's replay with its candidate's:
//! every summary metric per variant (metrics_diff.csv) and the turns whose
//! decision flipped (flips.csv), new safety regressions first.

use std::path::PathBuf;
use std::process::ExitCode;

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
    let request = critic_gate::jobs::diff::Request {
        old: a.old,
        new: a.new,
        out: a.out,
    };
    let d = critic_gate::jobs::diff::run(&request)?;
    super::output::stdout(&d.text)?;
    Ok(
        if a.fail_on_new_regressions && d.result.new_regressions > 0 {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        },
    )
}
