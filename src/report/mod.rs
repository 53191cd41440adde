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

use polars::prelude::*;

use crate::config::Plan;
use crate::replay::{Regression, Reject, Totals};

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

/// Every file `replay` may write (used to clear stale ones).
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

/// The output folder and its staging area.
pub struct Staging {
    pub dir: PathBuf,
    pub tmp: PathBuf,
    /// The output folder did not exist before this run.
    created: bool,
}

impl Staging {
    pub fn create(dir: &Path) -> Result<Staging, String> {
        let created = !dir.exists();
        fs::create_dir_all(dir)
            .map_err(|e| format!("{}: cannot create the output folder: {e}", dir.display()))?;
        let tmp = dir.join(format!(".critic-gate-partial-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir(&tmp)
            .map_err(|e| format!("{}: cannot create a staging folder: {e}", tmp.display()))?;
        Ok(Staging {
            dir: dir.to_path_buf(),
            tmp,
            created,
        })
    }

    pub fn file(&self, name: &str) -> Result<BufWriter<File>, String> {
        let p = self.tmp.join(name);
        File::create(&p)
            .map(|f| BufWriter::with_capacity(1 << 20, f))
            .map_err(|e| format!("{}: {e}", p.display()))
    }

    /// Move every staged file into the output folder, replacing the old
    /// report; report files this run did not write are removed.
    pub fn commit(self) -> Result<(), String> {
        let mut written = Vec::new();
        for entry in fs::read_dir(&self.tmp).map_err(|e| e.to_string())? {
            let entry = entry.map_err(|e| e.to_string())?;
            written.push(entry.file_name());
            fs::rename(entry.path(), self.dir.join(entry.file_name()))
                .map_err(|e| e.to_string())?;
        }
        for name in REPORT_FILES {
            if !written.iter().any(|w| w == name) {
                let _ = fs::remove_file(self.dir.join(name));
            }
        }
        fs::remove_dir_all(&self.tmp).map_err(|e| e.to_string())
    }

    /// Drop everything staged (the run failed), and the output folder too
    /// if this run created it (only while empty: nothing else is touched).
    pub fn abandon(self) {
        let _ = fs::remove_dir_all(&self.tmp);
        if self.created {
            let _ = fs::remove_dir(&self.dir);
        }
    }
}

/// Streams a CSV that grows with the input (`decisions.csv`,
/// `mismatches.csv`): the header, then each block's formatted rows.
pub struct RowsWriter {
    out: BufWriter<File>,
}

impl RowsWriter {
    pub fn new(mut out: BufWriter<File>, header: &str) -> Result<RowsWriter, String> {
        out.write_all(header.as_bytes())
            .map_err(|e| e.to_string())?;
        Ok(RowsWriter { out })
    }

    pub fn write(&mut self, rows: &[u8]) -> Result<(), String> {
        self.out.write_all(rows).map_err(|e| e.to_string())
    }

    pub fn finish(mut self) -> Result<(), String> {
        self.out.flush().map_err(|e| e.to_string())
    }
}

/// Streams `rejects.jsonl`.
pub struct RejectsWriter {
    out: BufWriter<File>,
    sources: Vec<String>,
}

impl RejectsWriter {
    pub fn new(out: BufWriter<File>, sources: &[String]) -> RejectsWriter {
        RejectsWriter {
            out,
            sources: sources.to_vec(),
        }
    }

    pub fn write(&mut self, rejects: &[Reject]) -> Result<(), String> {
        for r in rejects {
            let v = serde_json::json!({"source": self.sources[r.source], "line": r.line, "reason": r.reason, "raw": r.raw});
            writeln!(self.out, "{v}").map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    pub fn finish(mut self) -> Result<(), String> {
        self.out.flush().map_err(|e| e.to_string())
    }
}

/// Write every table report into the staging folder.
pub fn write_all(
    r: &ReplayReport,
    staging: &Staging,
    exports: &[&dyn Export],
) -> Result<(), String> {
    for e in exports {
        let mut f = staging.file(e.file_name())?;
        e.write(r, &mut f)
            .map_err(|m| format!("{}: {m}", e.file_name()))?;
        f.flush().map_err(|m| m.to_string())?;
    }
    Ok(())
}
