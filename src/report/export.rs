//! What every report file shares: the [`Export`] trait (a file name and a
//! writer), what a report is built from, and the step from typed columns
//! to a polars DataFrame to CSV.

use std::io::Write;

use polars_core::prelude::*;
use polars_io::prelude::*;

use super::staging::{write_error, Staging};
use crate::config::Plan;
use crate::replay::{Format, Regression, Totals};
use crate::summary::build::Summary;
use crate::summary::schema::{self, Type};
use crate::Error;

/// Why a report file could not be built or written; the writer that
/// stages the file names it ([`Error::Write`] with the path).
#[derive(Debug)]
pub enum WriteFailure {
    /// A table that differs from its declared schema: a bug, caught before
    /// anything is written.
    Schema(String),
    /// polars refused to build or write a table.
    Polars(String),
    /// A chart could not be drawn.
    Chart(String),
    /// The operating system refused the write: its error, kept whole.
    Io(std::io::Error),
    /// A JSON file could not be encoded.
    Json(String),
}

impl std::fmt::Display for WriteFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteFailure::Schema(m) => write!(f, "{m} (a bug: please report it)"),
            WriteFailure::Polars(m) | WriteFailure::Chart(m) | WriteFailure::Json(m) => {
                f.write_str(m)
            }
            WriteFailure::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for WriteFailure {}

impl From<PolarsError> for WriteFailure {
    fn from(e: PolarsError) -> WriteFailure {
        WriteFailure::Polars(e.to_string())
    }
}

impl From<serde_json::Error> for WriteFailure {
    fn from(e: serde_json::Error) -> WriteFailure {
        WriteFailure::Json(e.to_string())
    }
}

impl From<std::io::Error> for WriteFailure {
    fn from(e: std::io::Error) -> WriteFailure {
        WriteFailure::Io(e)
    }
}

/// Everything a report is built from.
pub(crate) struct ReplayReport<'a> {
    /// The run's label (the `run` column).
    pub label: &'a str,
    pub plan: &'a Plan,
    pub totals: &'a Totals,
    pub summary: &'a Summary,
    pub regressions: &'a [Regression],
    pub sources: &'a [String],
    /// The scope keys made columns (decisions.csv, regressions.csv).
    pub scope_keys: &'a [String],
}

/// One report file.
pub(crate) trait Export {
    fn file_name(&self) -> &'static str;

    /// The table, for an export that is one (written as CSV, Parquet or
    /// both, per `--format`).
    fn table(&self, _: &ReplayReport) -> Option<Result<DataFrame, WriteFailure>> {
        None
    }

    /// Write the file (a table: as CSV).
    fn write(&self, r: &ReplayReport, out: &mut dyn Write) -> Result<(), WriteFailure> {
        match self.table(r) {
            Some(df) => write_csv(&mut df?, out, true),
            None => Ok(()),
        }
    }
}

/// The Parquet twin of a CSV table's file name.
pub(crate) fn parquet_name(csv: &str) -> String {
    format!("{}.parquet", csv.trim_end_matches(".csv"))
}

/// Write a DataFrame as Parquet (zstd-compressed, with statistics).
pub(crate) fn write_parquet(df: &mut DataFrame, out: &mut dyn Write) -> Result<(), WriteFailure> {
    crate::summary::parquet::write_frame(df, out).map_err(WriteFailure::from)
}

/// A column of a report table.
pub(crate) enum Col {
    Str(Vec<Option<String>>),
    U64(Vec<u64>),
    OptU64(Vec<Option<u64>>),
    I64(Vec<i64>),
    OptI64(Vec<Option<i64>>),
    F64(Vec<Option<f64>>),
    Bool(Vec<bool>),
}

/// Build the DataFrame of a declared table (see [`crate::summary::schema`]): the
/// columns must be the declared ones, in order, of the declared types,
/// empty only where the column may be; anything else is a bug reported as
/// a write error, never a report that differs from its schema.
pub(crate) fn typed_frame(
    file: &str,
    r: &ReplayReport,
    cols: Vec<(&str, Col)>,
) -> Result<DataFrame, WriteFailure> {
    let declared = schema::table(file).columns_for(r.scope_keys);
    // Every table opens with the run's label.
    declared_frame(file, &declared, labelled(&[("run", r.label)], cols))
}

/// `cols` after a column per label (`run`, ...), one value per row.
pub(crate) fn labelled<'a>(
    labels: &[(&'a str, &str)],
    cols: Vec<(&'a str, Col)>,
) -> Vec<(&'a str, Col)> {
    let rows = cols.first().map_or(0, |(_, c)| c.len());
    labels
        .iter()
        .map(|(name, value)| (*name, Col::Str(vec![Some(value.to_string()); rows])))
        .chain(cols)
        .collect()
}

/// Build the DataFrame of `cols` if they are the `declared` columns of
/// `file` (names, order, types and nulls).
pub(crate) fn declared_frame(
    file: &str,
    declared: &[schema::RunColumn],
    cols: Vec<(&str, Col)>,
) -> Result<DataFrame, WriteFailure> {
    let names: Vec<&str> = cols.iter().map(|(n, _)| *n).collect();
    if !names.iter().eq(declared.iter().map(|c| &c.name)) {
        let declared: Vec<&str> = declared.iter().map(|c| c.name.as_str()).collect();
        return Err(WriteFailure::Schema(format!(
            "{file}: columns {names:?} differ from the schema's {declared:?}"
        )));
    }
    for ((name, c), decl) in cols.iter().zip(declared.iter().map(|c| c.decl)) {
        let (ty, has_null) = c.shape();
        if ty != decl.ty || (has_null && !decl.nullable) {
            return Err(WriteFailure::Schema(format!(
                "{file}: column {name} is {} with{} empty values; the schema says {}{}",
                ty.name(),
                if has_null { "" } else { "out" },
                decl.ty.name(),
                if decl.nullable {
                    ", nullable"
                } else {
                    ", never empty"
                }
            )));
        }
    }
    frame(cols)
}

impl Col {
    /// A declared column from JSON values (a typed struct serialized):
    /// a value of another type is a bug, reported, never written.
    pub(crate) fn from_json<'a>(
        c: &schema::Column,
        values: impl Iterator<Item = &'a serde_json::Value>,
    ) -> Result<Col, WriteFailure> {
        let values: Vec<&serde_json::Value> = values.collect();
        let bad = |v: &serde_json::Value| {
            WriteFailure::Schema(format!("column {}: {v} is not {}", c.name, c.ty.name()))
        };
        let each = |get: &dyn Fn(&serde_json::Value) -> Option<()>| {
            values
                .iter()
                .try_for_each(|v| match v.is_null() || get(v).is_some() {
                    true => Ok(()),
                    false => Err(bad(v)),
                })
        };
        Ok(match (c.ty, c.nullable) {
            (Type::U64, false) => Col::U64(
                values
                    .iter()
                    .map(|v| v.as_u64().ok_or_else(|| bad(v)))
                    .collect::<Result<_, _>>()?,
            ),
            (Type::I64, false) => Col::I64(
                values
                    .iter()
                    .map(|v| v.as_i64().ok_or_else(|| bad(v)))
                    .collect::<Result<_, _>>()?,
            ),
            (Type::Bool, _) => Col::Bool(
                values
                    .iter()
                    .map(|v| v.as_bool().ok_or_else(|| bad(v)))
                    .collect::<Result<_, _>>()?,
            ),
            (Type::U64, true) => {
                each(&|v| v.as_u64().map(drop))?;
                Col::OptU64(values.iter().map(|v| v.as_u64()).collect())
            }
            (Type::I64, true) => {
                each(&|v| v.as_i64().map(drop))?;
                Col::OptI64(values.iter().map(|v| v.as_i64()).collect())
            }
            (Type::F64, _) => {
                each(&|v| v.as_f64().map(drop))?;
                Col::F64(values.iter().map(|v| v.as_f64()).collect())
            }
            (Type::Str, _) => {
                each(&|v| v.as_str().map(drop))?;
                Col::Str(
                    values
                        .iter()
                        .map(|v| v.as_str().map(str::to_string))
                        .collect(),
                )
            }
        })
    }

    fn len(&self) -> usize {
        match self {
            Col::Str(v) => v.len(),
            Col::U64(v) => v.len(),
            Col::OptU64(v) => v.len(),
            Col::I64(v) => v.len(),
            Col::OptI64(v) => v.len(),
            Col::F64(v) => v.len(),
            Col::Bool(v) => v.len(),
        }
    }

    /// The column's type, and whether it holds an empty value.
    fn shape(&self) -> (Type, bool) {
        match self {
            Col::Str(v) => (Type::Str, v.iter().any(Option::is_none)),
            Col::U64(_) => (Type::U64, false),
            Col::OptU64(v) => (Type::U64, v.iter().any(Option::is_none)),
            Col::I64(_) => (Type::I64, false),
            Col::OptI64(v) => (Type::I64, v.iter().any(Option::is_none)),
            Col::F64(v) => (Type::F64, v.iter().any(Option::is_none)),
            Col::Bool(_) => (Type::Bool, false),
        }
    }
}

/// Build a DataFrame from named columns.
pub(crate) fn frame(cols: Vec<(&str, Col)>) -> Result<DataFrame, WriteFailure> {
    let columns: Vec<Column> = cols
        .into_iter()
        .map(|(name, c)| match c {
            Col::Str(v) => Column::new(name.into(), v),
            Col::U64(v) => Column::new(name.into(), v),
            Col::OptU64(v) => Column::new(name.into(), v),
            Col::I64(v) => Column::new(name.into(), v),
            Col::OptI64(v) => Column::new(name.into(), v),
            Col::F64(v) => Column::new(name.into(), v),
            Col::Bool(v) => Column::new(name.into(), v),
        })
        .collect();
    DataFrame::new_infer_height(columns).map_err(WriteFailure::from)
}

/// Write a DataFrame as CSV, text cells a spreadsheet would run as a
/// formula guarded with a leading `'` (as the replay's own rows are, see
/// [`crate::replay::rows::formula_like`]).
pub(crate) fn write_csv(
    df: &mut DataFrame,
    out: &mut dyn Write,
    header: bool,
) -> Result<(), WriteFailure> {
    let mut guarded = formula_safe(df)?;
    CsvWriter::new(out)
        .include_header(header)
        .finish(guarded.as_mut().unwrap_or(df))
        .map_err(WriteFailure::from)
}

/// `df` with its formula-like text cells guarded, or None when it has none.
fn formula_safe(df: &DataFrame) -> PolarsResult<Option<DataFrame>> {
    use crate::replay::rows::{guarded, needs_guard};
    map_text(df, needs_guard, |v| guarded(v).into_owned())
}

/// `df` with `f` applied to every cell of each text column where `pick`
/// holds for some cell, or None when it holds for none.
pub(super) fn map_text(
    df: &DataFrame,
    pick: impl Fn(&str) -> bool,
    f: impl Fn(&str) -> String,
) -> PolarsResult<Option<DataFrame>> {
    let picked = |c: &Column| {
        c.str()
            .is_ok_and(|s| (0..s.len()).filter_map(|i| s.get(i)).any(&pick))
    };
    if !df.columns().iter().any(picked) {
        return Ok(None);
    }
    let columns = df
        .columns()
        .iter()
        .map(|c| {
            if !picked(c) {
                return Ok(c.clone());
            }
            let ca = c.str()?;
            let s: StringChunked = (0..ca.len()).map(|i| ca.get(i).map(&f)).collect();
            Ok(s.with_name(c.name().clone()).into_column())
        })
        .collect::<PolarsResult<Vec<Column>>>()?;
    DataFrame::new(df.height(), columns).map(Some)
}

/// Write every table report into the staging folder.
pub(crate) fn write_all(
    r: &ReplayReport,
    staging: &Staging,
    exports: &[&dyn Export],
    format: Format,
) -> crate::Result<()> {
    for e in exports {
        let Some(table) = e.table(r) else {
            write_one(staging, e.file_name(), &mut |out| e.write(r, out))?;
            continue;
        };
        let fail = |m: WriteFailure| Error::Write(format!("{}: {m}", e.file_name()).into());
        let mut df = table.map_err(fail)?;
        if format.csv() {
            write_one(staging, e.file_name(), &mut |out| {
                write_csv(&mut df, out, true)
            })?;
        }
        if format.parquet() {
            let name = parquet_name(e.file_name());
            write_one(staging, &name, &mut |out| write_parquet(&mut df, out))?;
        }
    }
    Ok(())
}

/// Write one staged file with `write`, naming it in any error.
fn write_one(
    staging: &Staging,
    name: &str,
    write: &mut dyn FnMut(&mut dyn Write) -> Result<(), WriteFailure>,
) -> crate::Result<()> {
    let (path, mut f) = staging.file(name)?;
    write(&mut f).map_err(|m| {
        let message = format!("{}: {m}", path.display());
        Error::Write(match m {
            WriteFailure::Io(e) => crate::Failure::caused(message, e),
            _ => message.into(),
        })
    })?;
    f.flush().map_err(write_error(&path))
}
