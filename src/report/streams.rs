//! The files a replay writes while it reads, block by block: the rows of
//! `decisions.csv` and `mismatches.csv` (formatted by the replay's workers)
//! and the rejected lines of `rejects.jsonl`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use super::staging::{write_error, Staging};
use crate::replay::rows::{HEADER, MISMATCH_HEADER};
use crate::replay::{BlockResult, DecisionsMode, Reject, ReplayOptions};

/// The files a replay streams while it reads (the rest are `EXPORTS`).
pub const STREAMED_FILES: [&str; 3] = ["decisions.csv", "mismatches.csv", "rejects.jsonl"];

/// The streamed files of one run.
pub struct Streams {
    decisions: Option<RowsWriter>,
    mismatches: RowsWriter,
    rejects: Option<RejectsWriter>,
}

impl Streams {
    /// Create the files `opts` asks for, with their headers.
    pub fn open(staging: &Staging, opts: &ReplayOptions) -> crate::Result<Streams> {
        let [decisions, mismatches, rejects] = STREAMED_FILES;
        Ok(Streams {
            decisions: match opts.decisions {
                DecisionsMode::None => None,
                _ => Some(RowsWriter::new(staging.file(decisions)?, HEADER)?),
            },
            mismatches: RowsWriter::new(staging.file(mismatches)?, MISMATCH_HEADER)?,
            rejects: match opts.skip_invalid {
                true => Some(RejectsWriter::new(staging.file(rejects)?, &opts.sources)),
                false => None,
            },
        })
    }

    /// Append one block's rows, in input order.
    pub fn write(&mut self, res: &BlockResult) -> crate::Result<()> {
        if let Some(d) = self.decisions.as_mut() {
            d.write(&res.decisions_csv)?;
        }
        self.mismatches.write(&res.mismatches_csv)?;
        if let Some(w) = self.rejects.as_mut() {
            w.write(&res.rejects)?;
        }
        Ok(())
    }

    pub fn finish(self) -> crate::Result<()> {
        if let Some(d) = self.decisions {
            d.finish()?;
        }
        self.mismatches.finish()?;
        match self.rejects {
            Some(w) => w.finish(),
            None => Ok(()),
        }
    }
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
