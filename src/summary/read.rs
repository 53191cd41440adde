//! Reading a report folder back: `summary.json` as [`ReplayDir`] and the
//! CSV tables as text, for `check` and `diff` (which never open report
//! files themselves).

use std::path::{Path, PathBuf};

use polars_core::prelude::*;
use polars_io::prelude::*;
use serde_json::Value;

use super::metrics::SCHEMA_VERSION;
use crate::summary::figures::{RunSummary, VariantSummary};

/// Why a verdict cannot be given (exit 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CannotJudge(pub crate::options::Said);

impl CannotJudge {
    /// Why, naming settings as data.
    pub fn new(why: impl Into<crate::options::Said>) -> CannotJudge {
        CannotJudge(why.into())
    }
}

/// A replay's summary, read back.
#[derive(Debug)]
pub struct ReplayDir {
    /// The summary.json it was read from (for messages).
    pub path: std::path::PathBuf,
    pub summary: RunSummary,
    /// The folder, share-locked while it is read: a run writing into it
    /// holds the lock, and its reports are judged only once moved.
    _lock: Option<std::fs::File>,
}

impl ReplayDir {
    pub fn open(dir: &Path) -> Result<ReplayDir, CannotJudge> {
        let lock = super::manifest::lock_shared(dir).map_err(CannotJudge::new)?;
        super::manifest::verify(dir).map_err(CannotJudge::new)?;
        let p = dir.join("summary.json");
        let text = std::fs::read_to_string(&p).map_err(|e| {
            CannotJudge(crate::said![
                format!(
                    "{}: cannot read ({e}); is {} the ",
                    p.display(),
                    dir.display()
                ),
                crate::vocab::Setting::Out,
                " folder of a replay?"
            ])
        })?;
        let mut read = Self::parse(p, text.as_bytes(), dir)?;
        read._lock = lock;
        Ok(read)
    }

    /// Read summary.json's bytes (`path` names it in messages; `dir` is
    /// the folder it came from): the schema version first, then every
    /// figure against its declared type.
    pub fn parse(path: PathBuf, bytes: &[u8], dir: &Path) -> Result<ReplayDir, CannotJudge> {
        if let Err(e) = no_repeated_keys(bytes) {
            return Err(CannotJudge::new(format!(
                "{}: not a critic-gate summary: {e}; the folder is damaged (replay the traffic again)",
                path.display()
            )));
        }
        let value: Value = serde_json::from_slice(bytes).map_err(|e| {
            CannotJudge::new(format!(
                "{}: not a critic-gate summary: {e}",
                path.display()
            ))
        })?;
        same_schema(&path, &value, dir)?;
        let summary = RunSummary::from_json(value).map_err(|e| {
            CannotJudge::new(format!(
                "{}: {e}; the folder is damaged or not from this version of critic-gate (replay the traffic again)",
                path.display()
            ))
        })?;
        Ok(ReplayDir {
            path,
            summary,
            _lock: None,
        })
    }

    pub fn variant_names(&self) -> Vec<String> {
        self.summary.variant_order.clone()
    }

    pub fn baseline(&self) -> &str {
        &self.summary.baseline
    }

    /// One variant's figures (every name of `variant_names` has them).
    pub fn variant(&self, name: &str) -> &VariantSummary {
        &self.summary.variants[name]
    }
}

/// A key written twice in one object: JSON readers keep one of the two
/// (serde_json the last), so a second `"variants"` would be judged in place
/// of the first. The replay never writes one.
fn no_repeated_keys(bytes: &[u8]) -> Result<(), serde_json::Error> {
    use serde::de::{Deserializer as _, MapAccess, SeqAccess, Visitor};
    struct Strict;
    impl<'de> Visitor<'de> for Strict {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("JSON")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
            let mut seen = std::collections::HashSet::new();
            while let Some(k) = m.next_key::<String>()? {
                m.next_value_seed(StrictSeed)?;
                if !seen.insert(k.clone()) {
                    return Err(serde::de::Error::custom(format!(
                        "key {k:?} is written twice in one object"
                    )));
                }
            }
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
            while s.next_element_seed(StrictSeed)?.is_some() {}
            Ok(())
        }
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }
    }
    struct StrictSeed;
    impl<'de> serde::de::DeserializeSeed<'de> for StrictSeed {
        type Value = ();
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(Strict)
        }
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    de.deserialize_any(Strict)
}

/// Report folders of another schema version cannot be read as this one:
/// say so, rather than misread a column.
fn same_schema(path: &Path, summary: &Value, dir: &Path) -> Result<(), CannotJudge> {
    let found = match summary.get("schema_version") {
        Some(v) if v.as_u64() == Some(SCHEMA_VERSION) => return Ok(()),
        None => "absent (version 1)".to_string(),
        Some(v) => crate::read::json::describe(v),
    };
    Err(CannotJudge::new(format!(
        "{}: report schema version {found}, this critic-gate reads version {SCHEMA_VERSION}: the folder {} was written by another version of critic-gate; replay the traffic again with this one",
        path.display(),
        dir.display()
    )))
}

impl From<CannotJudge> for crate::Error {
    fn from(e: CannotJudge) -> crate::Error {
        crate::Error::CannotJudge(e.0)
    }
}

/// Read a CSV report with every column as text.
pub(crate) fn read_csv(path: &Path) -> Result<DataFrame, CannotJudge> {
    read_csv_columns(path, None)
}

fn read_csv_columns(path: &Path, only: Option<&[&str]>) -> Result<DataFrame, CannotJudge> {
    let columns = only.map(|o| o.iter().map(|c| PlSmallStr::from(*c)).collect());
    CsvReadOptions::default()
        .with_has_header(true)
        .with_infer_schema_length(Some(0))
        .with_columns(columns)
        .try_into_reader_with_file_path(Some(path.into()))
        .and_then(|r| r.finish())
        .map_err(|e| CannotJudge::new(format!("{}: cannot read: {e}", path.display())))
}

/// A report table of `dir` by its name without extension (`regressions`):
/// its CSV, else its Parquet with every column as text (a replay with
/// `--format parquet` writes no CSV); None when the folder has neither
/// (a sweep or calibrate folder writes no per-turn tables).
pub(crate) fn read_table(dir: &Path, stem: &str) -> Result<Option<Table>, CannotJudge> {
    read_table_columns(dir, stem, None)
}

/// [`read_table`] of the named columns only (None: every one): a table of
/// a row per turn and variant is read in a fraction of the memory.
pub(crate) fn read_table_columns(
    dir: &Path,
    stem: &str,
    only: Option<&[&str]>,
) -> Result<Option<Table>, CannotJudge> {
    let csv = dir.join(format!("{stem}.csv"));
    if csv.is_file() {
        return read_csv_columns(&csv, only).map(|frame| {
            Some(Table {
                frame,
                guarded: true,
            })
        });
    }
    let pq = dir.join(format!("{stem}.parquet"));
    if !pq.is_file() {
        return Ok(None);
    }
    let cannot = |e: PolarsError| CannotJudge::new(format!("{}: cannot read: {e}", pq.display()));
    let bytes = std::fs::read(&pq)
        .map_err(|e| CannotJudge::new(format!("{}: cannot read: {e}", pq.display())))?;
    let df = super::parquet::read_columns(bytes, only).map_err(cannot)?;
    let columns = df
        .columns()
        .iter()
        .map(|c| c.cast(&DataType::String))
        .collect::<PolarsResult<Vec<Column>>>()
        .map_err(cannot)?;
    DataFrame::new(df.height(), columns)
        .map(|frame| {
            Some(Table {
                frame,
                guarded: false,
            })
        })
        .map_err(cannot)
}

/// A report table read back, every column as text, and how its text
/// cells were written: a CSV's formula-like cells carry a leading `'`
/// (`'-smart`), a Parquet's are exact. The guard cannot be taken off a
/// cell (`'=x` may be a value as written), so a value is compared with a
/// cell in the form the table writes it ([`Table::written`]).
pub(crate) struct Table {
    pub frame: DataFrame,
    guarded: bool,
}

impl Table {
    /// `value` as this table writes it in a cell.
    pub(crate) fn written<'a>(&self, value: &'a str) -> std::borrow::Cow<'a, str> {
        match self.guarded {
            true => crate::replay::rows::guarded(value),
            false => value.into(),
        }
    }
}

/// The text columns of a report, row by row.
pub(crate) fn string_rows(df: &DataFrame, cols: &[&str]) -> Result<Vec<Vec<String>>, CannotJudge> {
    let series: Vec<&StringChunked> = cols
        .iter()
        .map(|c| {
            df.column(c)
                .and_then(|s| s.str())
                .map_err(|e| CannotJudge::new(format!("report has no text column {c}: {e}")))
        })
        .collect::<Result<_, _>>()?;
    Ok((0..df.height())
        .map(|i| {
            series
                .iter()
                .map(|s| s.get(i).unwrap_or("").to_string())
                .collect()
        })
        .collect())
}
