//! `diff`: a release's replay against its candidate's: every summary metric
//! per variant (metrics_diff.csv) and the turns whose decision flipped
//! (flips.csv), new safety regressions first.

mod engine;
pub mod report;

pub use engine::*;

use std::path::PathBuf;

/// What `--help` adds after the options: examples, exit codes, the
/// reference.
pub const HELP: &str = "\
Example:
  critic-gate diff reports/release reports/candidate --fail-on-new-regressions

Exit codes: 0 compared; 1 new safety regressions with --fail-on-new-regressions; 2 cannot compare (different traffic, a damaged folder).
Reference: docs/ci.md, docs/reports.md (flips.csv, metrics_diff.csv).";

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

impl Args {
    /// The request these flags make.
    pub fn request(&self) -> Request {
        Request {
            old: self.old.clone(),
            new: self.new.clone(),
            out: self.out.clone(),
            fail_on_new_regressions: self.fail_on_new_regressions,
        }
    }
}

/// What to compare, and where the files go.
#[derive(Clone, Debug)]
pub struct Request {
    /// The old replay's folder (the release).
    pub old: PathBuf,
    /// The new replay's folder (the candidate).
    pub new: PathBuf,
    /// Where flips.csv and metrics_diff.csv go (None: the new folder).
    pub out: Option<PathBuf>,
    /// Fail when the candidate has safety regressions the old replay did
    /// not.
    pub fail_on_new_regressions: bool,
}

/// The comparison, written.
pub struct Compared {
    pub result: DiffResult,
    /// The verdict (exit 0 or 1): false only when asked to fail on new
    /// regressions and there are some.
    pub passed: bool,
    /// The folder the files went into.
    pub out: PathBuf,
    /// What `diff` prints.
    pub text: String,
}

/// Compare the two folders and write the two files.
pub fn run(r: &Request) -> crate::Result<Compared> {
    let result = crate::cmd::diff::diff(&r.old, &r.new)?;
    let out = r.out.clone().unwrap_or_else(|| r.new.clone());
    crate::cmd::diff::report::write(&result, &out)?;
    let text = result.render_text(&out);
    let passed = !(r.fail_on_new_regressions && result.new_regressions > 0);
    Ok(Compared {
        result,
        passed,
        out,
        text,
    })
}
