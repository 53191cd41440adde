//! The files a replay writes while it reads, block by block: the rows of
//! `decisions.csv`, `mismatches.csv` and `regressions.csv` (formatted by
//! the replay's workers) and the rejected lines of `rejects.jsonl`.

use std::io::{Cursor, Write};
use std::path::PathBuf;
use std::sync::Arc;

use polars_core::prelude::*;
use polars_io::prelude::*;

use super::export::parquet_name;
use super::staging::{write_error, Staging};
use crate::replay::rows::{header, MISMATCH_HEADER};
use crate::replay::scope_columns::ScopeColumns;
use crate::replay::{BlockResult, DecisionsMode, Format, Reject, ReplayOptions};
use crate::summary::parquet::ParquetFile;
use crate::summary::schema::{self, RunColumn, Type};

/// The files a replay streams while it reads (the rest are `EXPORTS`).
pub(crate) const STREAMED_FILES: [&str; 4] = [
    "decisions.csv",
    "mismatches.csv",
    "regressions.csv",
    "rejects.jsonl",
];

/// The streamed files of one run.
pub(crate) struct Streams {
    decisions: Option<TableStream>,
    mismatches: Option<TableStream>,
    regressions: Option<TableStream>,
    rejects: Option<RejectsWriter>,
}

impl Streams {
    /// Create the files `opts` asks for, with their headers (none without
    /// a folder to write them in).
    pub(crate) fn open(
        staging: Option<&Staging>,
        opts: &ReplayOptions,
        scope: &ScopeColumns,
    ) -> crate::Result<Streams> {
        let Some(staging) = staging else {
            return Ok(Streams {
                decisions: None,
                mismatches: None,
                regressions: None,
                rejects: None,
            });
        };
        let [decisions, mismatches, regressions, rejects] = STREAMED_FILES;
        let table = |file, header: &str| {
            let columns = schema::table(file).columns_for(scope.keys());
            TableStream::open(staging, file, header, &columns, opts.outputs.format)
        };
        Ok(Streams {
            decisions: match opts.tallies.decisions {
                DecisionsMode::None => None,
                DecisionsMode::All | DecisionsMode::Changed => {
                    Some(table(decisions, &header(scope))?)
                }
            },
            mismatches: Some(table(mismatches, MISMATCH_HEADER)?),
            // Per-turn detail: a sweep of hundreds of variants has none.
            regressions: match opts.tallies.detail {
                true => Some(table(regressions, &regressions_header(scope))?),
                false => None,
            },
            rejects: match opts.input.skip_invalid {
                true => Some(RejectsWriter::new(
                    staging.file(rejects)?,
                    &opts.input.sources,
                )),
                false => None,
            },
        })
    }

    /// Append one block's rows, in input order.
    pub(crate) fn write(&mut self, res: &BlockResult) -> crate::Result<()> {
        self.decisions(&res.decisions_csv)?;
        self.mismatches(&res.mismatches_csv)?;
        self.regressions(&res.regressions_csv)?;
        self.rejects(&res.rejects, 0)
    }

    /// Append formatted rows of decisions.csv.
    pub(crate) fn decisions(&mut self, rows: &[u8]) -> crate::Result<()> {
        match self.decisions.as_mut() {
            Some(d) => d.write(rows),
            None => Ok(()),
        }
    }

    /// Append formatted rows of mismatches.csv.
    pub(crate) fn mismatches(&mut self, rows: &[u8]) -> crate::Result<()> {
        match self.mismatches.as_mut() {
            Some(m) => m.write(rows),
            None => Ok(()),
        }
    }

    /// Append formatted rows of regressions.csv.
    pub(crate) fn regressions(&mut self, rows: &[u8]) -> crate::Result<()> {
        match self.regressions.as_mut() {
            Some(g) => g.write(rows),
            None => Ok(()),
        }
    }

    /// Append rejected lines whose sources are numbered from `offset` (a
    /// merged shard's) in the run's list of sources.
    pub(crate) fn rejects(&mut self, rejects: &[Reject], offset: usize) -> crate::Result<()> {
        match self.rejects.as_mut() {
            Some(w) => w.write(rejects, offset),
            None => Ok(()),
        }
    }

    pub(crate) fn finish(self) -> crate::Result<()> {
        if let Some(d) = self.decisions {
            d.finish()?;
        }
        if let Some(m) = self.mismatches {
            m.finish()?;
        }
        if let Some(g) = self.regressions {
            g.finish()?;
        }
        match self.rejects {
            Some(w) => w.finish(),
            None => Ok(()),
        }
    }
}

/// The header of regressions.csv, from its declared columns (a column
/// per scope key after `scope`).
fn regressions_header(scope: &ScopeColumns) -> String {
    let columns = schema::table("regressions.csv").columns_for(scope.keys());
    let mut h = Vec::new();
    for c in &columns {
        crate::replay::rows::field(&mut h, &c.name);
        h.push(b',');
    }
    h.pop();
    h.push(b'\n');
    String::from_utf8(h).expect("UTF-8 in, UTF-8 out")
}

/// A streamed table: its CSV, its Parquet twin, or both (`--format`).
struct TableStream {
    csv: Option<RowsWriter>,
    parquet: Option<ParquetRows>,
}

impl TableStream {
    fn open(
        staging: &Staging,
        file: &str,
        header: &str,
        columns: &[RunColumn],
        format: Format,
    ) -> crate::Result<Self> {
        Ok(TableStream {
            csv: match format.csv() {
                true => Some(RowsWriter::new(staging.file(file)?, header)?),
                false => None,
            },
            parquet: match format.parquet() {
                true => Some(ParquetRows::new(
                    staging.file(&parquet_name(file))?,
                    columns,
                )?),
                false => None,
            },
        })
    }

    fn write(&mut self, rows: &[u8]) -> crate::Result<()> {
        if let Some(c) = self.csv.as_mut() {
            c.write(rows)?;
        }
        match self.parquet.as_mut() {
            Some(p) => p.write(rows),
            None => Ok(()),
        }
    }

    fn finish(self) -> crate::Result<()> {
        if let Some(c) = self.csv {
            c.finish()?;
        }
        match self.parquet {
            Some(p) => p.finish(),
            None => Ok(()),
        }
    }
}

/// Streams a table's Parquet file: the blocks' CSV rows gathered up to
/// [`ROW_GROUP_BYTES`], read with the declared schema and written as one
/// row group (a row group per block was thousands of tiny groups, each with
/// its own statistics, on a large replay).
struct ParquetRows {
    path: PathBuf,
    schema: SchemaRef,
    pending: Vec<u8>,
    out: ParquetFile<crate::report::staging::StagedWriter>,
}

/// The CSV text gathered before a row group is written: bounds the memory
/// a streamed Parquet table holds, whatever the input's size.
const ROW_GROUP_BYTES: usize = 16 << 20;

impl ParquetRows {
    fn new(
        (path, out): (PathBuf, crate::report::staging::StagedWriter),
        columns: &[RunColumn],
    ) -> crate::Result<ParquetRows> {
        let schema: SchemaRef = Arc::new(polars_schema(columns));
        let out = ParquetFile::new(out, &schema).map_err(|e| {
            crate::Error::Write(crate::Failure::caused(
                format!("{}: {e}", path.display()),
                e,
            ))
        })?;
        Ok(ParquetRows {
            path,
            schema,
            pending: Vec::new(),
            out,
        })
    }

    fn write(&mut self, rows: &[u8]) -> crate::Result<()> {
        self.pending.extend_from_slice(rows);
        match self.pending.len() >= ROW_GROUP_BYTES {
            true => self.flush(),
            false => Ok(()),
        }
    }

    /// Write the gathered rows as a row group.
    fn flush(&mut self) -> crate::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let fail = |e: PolarsError| {
            crate::Error::Write(crate::Failure::caused(
                format!("{}: {e}", self.path.display()),
                e,
            ))
        };
        let rows = std::mem::take(&mut self.pending);
        let mut df = CsvReadOptions::default()
            .with_has_header(false)
            .with_schema(Some(self.schema.clone()))
            .into_reader_with_file_handle(Cursor::new(rows))
            .finish()
            .map_err(fail)?;
        unguard_text(&mut df).map_err(fail)?;
        self.out.write(df.rechunk_mut_par()).map_err(fail)
    }

    fn finish(mut self) -> crate::Result<()> {
        self.flush()?;
        self.out.finish().map_err(|e| {
            crate::Error::Write(crate::Failure::caused(
                format!("{}: {e}", self.path.display()),
                e,
            ))
        })
    }
}

/// The text columns of `df`, read from guarded CSV rows, with each guard
/// taken off ([`crate::replay::rows::unguarded`]): Parquet holds the
/// text exactly (a variant named `-smart` is `-smart` there, not
/// `'-smart`).
fn unguard_text(df: &mut DataFrame) -> PolarsResult<()> {
    use crate::replay::rows::unguarded;
    let changed = |v: &str| unguarded(v).len() != v.len();
    if let Some(plain) = super::export::map_text(df, changed, |v| unguarded(v).to_string())? {
        *df = plain;
    }
    Ok(())
}

/// A declared table as a polars schema.
pub(super) fn polars_schema(columns: &[RunColumn]) -> Schema {
    columns
        .iter()
        .map(|RunColumn { name, decl: c }| {
            let dtype = match c.ty {
                Type::U64 => DataType::UInt64,
                Type::I64 => DataType::Int64,
                Type::F64 => DataType::Float64,
                Type::Str => DataType::String,
                Type::Bool => DataType::Boolean,
            };
            Field::new(name.into(), dtype)
        })
        .collect()
}

/// Streams a CSV that grows with the input (`decisions.csv`,
/// `mismatches.csv`): the header, then each block's formatted rows.
pub(super) struct RowsWriter {
    path: PathBuf,
    out: crate::report::staging::StagedWriter,
}

impl RowsWriter {
    pub(super) fn new(
        (path, mut out): (PathBuf, crate::report::staging::StagedWriter),
        header: &str,
    ) -> crate::Result<RowsWriter> {
        out.write_all(header.as_bytes())
            .map_err(write_error(&path))?;
        Ok(RowsWriter { path, out })
    }

    pub(super) fn write(&mut self, rows: &[u8]) -> crate::Result<()> {
        // A block's rows (hundreds of KB) go straight to the file: copying
        // them through the buffer first was 0.7% of a replay, on the one
        // thread that writes.
        let direct = |out: &mut crate::report::staging::StagedWriter| {
            out.flush()?;
            out.get_mut().write_all(rows)
        };
        match rows.len() >= 1 << 16 {
            true => direct(&mut self.out),
            false => self.out.write_all(rows),
        }
        .map_err(write_error(&self.path))
    }

    pub(super) fn finish(mut self) -> crate::Result<()> {
        self.out.flush().map_err(write_error(&self.path))
    }
}

/// Streams `rejects.jsonl`.
pub(super) struct RejectsWriter {
    path: PathBuf,
    out: crate::report::staging::StagedWriter,
    sources: Vec<String>,
}

impl RejectsWriter {
    pub(super) fn new(
        (path, out): (PathBuf, crate::report::staging::StagedWriter),
        sources: &[String],
    ) -> RejectsWriter {
        RejectsWriter {
            path,
            out,
            sources: sources.to_vec(),
        }
    }

    pub(super) fn write(&mut self, rejects: &[Reject], offset: usize) -> crate::Result<()> {
        for r in rejects {
            let mut v = serde_json::json!({"source": self.sources[offset + r.source], "line": r.line, "reason": r.reason, "raw": r.raw});
            if let Some(b) = &r.raw_base64 {
                v["raw_base64"] = b.clone().into();
            }
            writeln!(self.out, "{v}").map_err(write_error(&self.path))?;
        }
        Ok(())
    }

    pub(super) fn finish(mut self) -> crate::Result<()> {
        self.out.flush().map_err(write_error(&self.path))
    }
}
