//! Reports: tabulate the merged tallies as polars DataFrames and write them.
//!
//! Each report file is one [`Export`] (a name and a writer). Files are
//! written into a staging folder inside the output folder and moved into
//! place only when the whole replay succeeded, so a failed run never leaves
//! a half-written or partial report.

pub mod decisions;
pub mod markdown;
pub mod summary;
mod tables;

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use polars::prelude::*;

use crate::config::Plan;
use crate::replay::{Regression, Reject, Totals};
use crate::Error;

pub use summary::{Cell, Summary};
pub use tables::{FloorsCsv, MatrixCsv, RegressionsCsv, SegmentsCsv, SummaryCsv, SummaryJson};

/// Everything a report is built from.
pub struct ReplayReport<'a> {
    pub plan: &'a Plan,
    pub totals: &'a Totals,
    pub summary: &'a Summary,
    pub regressions: &'a [Regression],
    pub sources: &'a [String],
}

/// One report file.
pub trait Export {
    fn file_name(&self) -> &'static str;
    fn write(&self, r: &ReplayReport, out: &mut dyn Write) -> Result<(), String>;
}

/// Every report file that may sit in a replay folder: `replay`'s own and
/// `diff`'s (written there by default). A new replay removes those it did
/// not write, so no file of an earlier run outlives it.
pub const REPORT_FILES: [&str; 12] = [
    "decisions.csv",
    "mismatches.csv",
    "summary.csv",
    "summary.json",
    "floors.csv",
    "segments.csv",
    "regressions.csv",
    "matrix.csv",
    "rejects.jsonl",
    "report.md",
    "flips.csv",
    "metrics_diff.csv",
];

/// A column of a report table.
pub enum Col {
    Str(Vec<Option<String>>),
    U64(Vec<u64>),
    OptU64(Vec<Option<u64>>),
    I64(Vec<i64>),
    F64(Vec<Option<f64>>),
    Bool(Vec<bool>),
}

/// Build a DataFrame from named columns.
pub fn frame(cols: Vec<(&str, Col)>) -> Result<DataFrame, String> {
    let columns: Vec<Column> = cols
        .into_iter()
        .map(|(name, c)| match c {
            Col::Str(v) => Column::new(name.into(), v),
            Col::U64(v) => Column::new(name.into(), v),
            Col::OptU64(v) => Column::new(name.into(), v),
            Col::I64(v) => Column::new(name.into(), v),
            Col::F64(v) => Column::new(name.into(), v),
            Col::Bool(v) => Column::new(name.into(), v),
        })
        .collect();
    DataFrame::new_infer_height(columns).map_err(|e| e.to_string())
}

/// Write a DataFrame as CSV.
pub fn write_csv(df: &mut DataFrame, out: &mut dyn Write, header: bool) -> Result<(), String> {
    CsvWriter::new(out)
        .include_header(header)
        .finish(df)
        .map_err(|e| e.to_string())
}

/// The file that marks a folder as a critic-gate report folder: `replay`
/// writes into a non-empty folder only when it has one (or with `--force`).
pub const MARKER: &str = ".critic-gate-report";
const MARKER_TEXT: &str =
    "This folder holds a critic-gate report; `critic-gate replay --out` may replace its report files.\n";

/// The prefix of a run's staging folder (followed by its process id).
const STAGING_PREFIX: &str = ".critic-gate-partial-";

/// What `replay --out DIR` may not do: write over an input, or scatter
/// report files among files that are not an earlier report.
pub fn check_out_dir(dir: &Path, sources: &[String], force: bool) -> crate::Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    if !dir.is_dir() {
        return Err(Error::Usage(format!(
            "--out {}: not a folder",
            dir.display()
        )));
    }
    let canon =
        fs::canonicalize(dir).map_err(|e| Error::Usage(format!("--out {}: {e}", dir.display())))?;
    for s in sources.iter().filter(|s| *s != "-") {
        if fs::canonicalize(s).is_ok_and(|p| p.starts_with(&canon)) {
            return Err(Error::Usage(format!(
                "--out {} contains the input {s}: the reports could overwrite or remove it; write them into another folder",
                dir.display()
            )));
        }
    }
    if force || dir.join(MARKER).is_file() {
        return Ok(());
    }
    let foreign = fs::read_dir(dir)
        .map_err(|e| Error::Usage(format!("--out {}: {e}", dir.display())))?
        .filter_map(Result::ok)
        .find(|e| !e.file_name().to_string_lossy().starts_with(STAGING_PREFIX));
    match foreign {
        None => Ok(()),
        Some(e) => Err(Error::Usage(format!(
            "--out {}: the folder is not empty ({} and maybe more) and holds no earlier critic-gate report (no {MARKER} file): choose a new or empty folder, or pass --force to write the report files among what is there",
            dir.display(),
            e.file_name().to_string_lossy()
        ))),
    }
}

/// The staging folder of the run in progress (and the output folder when
/// the run created it), so a signal handler can remove them; held locked
/// while the reports are moved into place.
static IN_PROGRESS: Mutex<Option<(PathBuf, Option<PathBuf>)>> = Mutex::new(None);

/// Remove the staging folder of the run in progress, if any, and exit
/// with `code` (a signal is ending the process). A commit under way
/// finishes first; the lock is held until the exit, so none starts after.
pub fn abandon_in_progress_and_exit(code: i32) -> ! {
    let mut g = IN_PROGRESS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((tmp, created)) = g.take() {
        let _ = fs::remove_dir_all(&tmp);
        if let Some(dir) = created {
            let _ = fs::remove_dir(dir);
        }
    }
    std::process::exit(code)
}

/// Whether process `pid` is alive (no procfs: assumed alive, so nothing
/// of a live run is ever removed).
fn alive(pid: u32) -> bool {
    let proc = Path::new("/proc");
    !proc.join("self").exists() || proc.join(pid.to_string()).exists()
}

/// Remove the staging folders that runs killed before they could clean up
/// (SIGKILL, power loss) left in `dir`.
fn remove_stale_staging(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let name = e.file_name();
        let pid = name
            .to_str()
            .and_then(|n| n.strip_prefix(STAGING_PREFIX))
            .and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|p| p != std::process::id() && !alive(p)) {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

/// The output folder and its staging area.
pub struct Staging {
    pub dir: PathBuf,
    pub tmp: PathBuf,
    /// The output folder did not exist before this run.
    created: bool,
}

impl Staging {
    pub fn create(dir: &Path) -> crate::Result<Staging> {
        let created = !dir.exists();
        fs::create_dir_all(dir).map_err(|e| {
            Error::Write(format!(
                "{}: cannot create the output folder: {e}",
                dir.display()
            ))
        })?;
        remove_stale_staging(dir);
        let tmp = dir.join(format!("{STAGING_PREFIX}{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir(&tmp).map_err(|e| {
            Error::Write(format!(
                "{}: cannot create a staging folder: {e}",
                tmp.display()
            ))
        })?;
        *IN_PROGRESS.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((tmp.clone(), created.then(|| dir.to_path_buf())));
        let staging = Staging {
            dir: dir.to_path_buf(),
            tmp,
            created,
        };
        let marker = staging.tmp.join(MARKER);
        fs::write(&marker, MARKER_TEXT)
            .map_err(|e| Error::Write(format!("{}: {e}", marker.display())))?;
        Ok(staging)
    }

    pub fn file(&self, name: &str) -> crate::Result<(PathBuf, BufWriter<File>)> {
        let p = self.tmp.join(name);
        File::create(&p)
            .map(|f| (p.clone(), BufWriter::with_capacity(1 << 20, f)))
            .map_err(|e| Error::Write(format!("{}: {e}", p.display())))
    }

    /// Move every staged file into the output folder, replacing the old
    /// report; report files this run did not write are removed.
    pub fn commit(self) -> crate::Result<()> {
        // A signal waits for the moves to finish.
        let mut in_progress = IN_PROGRESS.lock().unwrap_or_else(|e| e.into_inner());
        let failed = |e: std::io::Error| {
            Error::Write(format!(
                "{}: cannot move the reports into place: {e}",
                self.dir.display()
            ))
        };
        let mut written = Vec::new();
        for entry in fs::read_dir(&self.tmp).map_err(failed)? {
            let entry = entry.map_err(failed)?;
            written.push(entry.file_name());
            fs::rename(entry.path(), self.dir.join(entry.file_name())).map_err(failed)?;
        }
        for name in REPORT_FILES {
            if !written.iter().any(|w| w == name) {
                let _ = fs::remove_file(self.dir.join(name));
            }
        }
        *in_progress = None;
        fs::remove_dir_all(&self.tmp).map_err(failed)
    }

    /// Drop everything staged (the run failed), and the output folder too
    /// if this run created it (only while empty: nothing else is touched).
    pub fn abandon(self) {
        *IN_PROGRESS.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let _ = fs::remove_dir_all(&self.tmp);
        if self.created {
            let _ = fs::remove_dir(&self.dir);
        }
    }
}

/// A write error naming the file (a full disk is exit 2 with the path).
fn write_error(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::Write(format!("{}: {e}", path.display()))
}

/// Streams a CSV that grows with the input (`decisions.csv`,
/// `mismatches.csv`): the header, then each block's formatted rows.
pub struct RowsWriter {
    path: PathBuf,
    out: BufWriter<File>,
}

impl RowsWriter {
    pub fn new(
        (path, mut out): (PathBuf, BufWriter<File>),
        header: &str,
    ) -> crate::Result<RowsWriter> {
        out.write_all(header.as_bytes())
            .map_err(write_error(&path))?;
        Ok(RowsWriter { path, out })
    }

    pub fn write(&mut self, rows: &[u8]) -> crate::Result<()> {
        self.out.write_all(rows).map_err(write_error(&self.path))
    }

    pub fn finish(mut self) -> crate::Result<()> {
        self.out.flush().map_err(write_error(&self.path))
    }
}

/// Streams `rejects.jsonl`.
pub struct RejectsWriter {
    path: PathBuf,
    out: BufWriter<File>,
    sources: Vec<String>,
}

impl RejectsWriter {
    pub fn new((path, out): (PathBuf, BufWriter<File>), sources: &[String]) -> RejectsWriter {
        RejectsWriter {
            path,
            out,
            sources: sources.to_vec(),
        }
    }

    pub fn write(&mut self, rejects: &[Reject]) -> crate::Result<()> {
        for r in rejects {
            let mut v = serde_json::json!({"source": self.sources[r.source], "line": r.line, "reason": r.reason, "raw": r.raw});
            if let Some(b) = &r.raw_base64 {
                v["raw_base64"] = b.clone().into();
            }
            writeln!(self.out, "{v}").map_err(write_error(&self.path))?;
        }
        Ok(())
    }

    pub fn finish(mut self) -> crate::Result<()> {
        self.out.flush().map_err(write_error(&self.path))
    }
}

/// Standard base64 (RFC 4648, with padding): the exact bytes of a line
/// that is not UTF-8, in `rejects.jsonl`.
pub fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Write every table report into the staging folder.
pub fn write_all(
    r: &ReplayReport,
    staging: &Staging,
    exports: &[&dyn Export],
) -> crate::Result<()> {
    for e in exports {
        let (path, mut f) = staging.file(e.file_name())?;
        e.write(r, &mut f)
            .map_err(|m| Error::Write(format!("{}: {m}", path.display())))?;
        f.flush().map_err(write_error(&path))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_matches_rfc_4648_vectors() {
        for (raw, want) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(super::base64(raw.as_bytes()), want, "{raw:?}");
        }
        assert_eq!(super::base64(&[0xff, 0xfe, 0x00]), "//4A");
    }
}
