//! `diff`: a release's replay against its candidate's: every summary metric
//! per variant (metrics_diff.csv) and the turns whose decision flipped
//! (flips.csv), new safety regressions first.

use std::path::PathBuf;

use crate::diff::DiffResult;

/// What to compare, and where the files go.
#[derive(Clone, Debug)]
pub struct Request {
    /// The old replay's folder (the release).
    pub old: PathBuf,
    /// The new replay's folder (the candidate).
    pub new: PathBuf,
    /// Where flips.csv and metrics_diff.csv go (None: the new folder).
    pub out: Option<PathBuf>,
}

/// The comparison, written.
pub struct Compared {
    pub result: DiffResult,
    /// The folder the files went into.
    pub out: PathBuf,
    /// What `diff` prints.
    pub text: String,
}

/// Compare the two folders and write the two files.
pub fn run(r: &Request) -> crate::Result<Compared> {
    let result = crate::diff::diff(&r.old, &r.new)?;
    let out = r.out.clone().unwrap_or_else(|| r.new.clone());
    crate::report::diff::write(&result, &out)?;
    let text = result.render_text(&out);
    Ok(Compared { result, out, text })
}
