//! `diff`: a release's replay against its candidate's: every summary metric
//! per variant (metrics_diff.csv) and the turns whose decision flipped
//! (flips.csv), new safety regressions first.

mod engine;
pub mod report;

pub use engine::*;

use std::path::PathBuf;

use crate::cmd::args::{self, Flags};
use crate::options::{Setting, Values};

/// The command's one line in `critic-gate --help`, and the first of its
/// own `--help`.
pub const ABOUT: &str = "Compare two replays of the same traffic: metric changes and flipped \
     decisions";

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
    /// The declared options (`options::DIFF`).
    #[command(flatten)]
    pub flags: Flags<args::Diff>,
}

impl Args {
    /// The request these flags make.
    pub fn request(&self) -> Request {
        Request::of(
            self.old.clone(),
            self.new.clone(),
            self.out.clone(),
            &self.flags.values,
        )
    }
}

impl Request {
    /// The request the declared options (`options::DIFF`) make, from
    /// either front end.
    pub fn of(old: PathBuf, new: PathBuf, out: Option<PathBuf>, v: &Values) -> Request {
        Request {
            old,
            new,
            out,
            fail_on_new_regressions: v.switch(Setting::FailOnNewRegressions),
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
