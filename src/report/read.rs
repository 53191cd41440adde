//! Reading a report folder back: `summary.json` as [`ReplayDir`] and the
//! CSV tables as text, for `check` and `diff` (which never open report
//! files themselves).

use std::path::Path;

use polars::prelude::*;
use serde_json::Value;

use super::schema::SCHEMA_VERSION;

/// Why a verdict cannot be given (exit 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CannotJudge(pub String);

/// A replay's summary, read back.
pub struct ReplayDir {
    /// The summary.json it was read from (for messages).
    pub path: std::path::PathBuf,
    pub summary: Value,
}

impl ReplayDir {
    pub fn open(dir: &Path) -> Result<ReplayDir, CannotJudge> {
        let p = dir.join("summary.json");
        let text = std::fs::read_to_string(&p).map_err(|e| {
            CannotJudge(format!(
                "{}: cannot read ({e}); is {} the --out folder of a replay?",
                p.display(),
                dir.display()
            ))
        })?;
        let summary: Value = serde_json::from_str(&text)
            .map_err(|e| CannotJudge(format!("{}: not a critic-gate summary: {e}", p.display())))?;
        let d = ReplayDir { path: p, summary };
        d.same_schema(dir)?;
        if !d.summary["variants"].is_object() || d.variant_names().is_empty() {
            return Err(d.bad("variants", "an object with at least one variant"));
        }
        Ok(d)
    }

    /// Report folders of another schema version cannot be read as this
    /// one: say so, rather than misread a column.
    fn same_schema(&self, dir: &Path) -> Result<(), CannotJudge> {
        let found = match self.summary.get("schema_version") {
            Some(v) if v.as_u64() == Some(SCHEMA_VERSION) => return Ok(()),
            None => "absent (version 1)".to_string(),
            Some(v) => crate::read::json::describe(v),
        };
        Err(CannotJudge(format!(
            "{}: report schema version {found}, this critic-gate reads version {SCHEMA_VERSION}: the folder {} was written by another version of critic-gate; replay the traffic again with this one",
            self.path.display(),
            dir.display()
        )))
    }

    pub fn variant_names(&self) -> Vec<String> {
        match self.summary["variant_order"].as_array() {
            Some(a) => a
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            None => self.summary["variants"]
                .as_object()
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default(),
        }
    }

    pub fn baseline(&self) -> Option<&str> {
        self.summary["baseline"].as_str()
    }

    /// `key` of the summary's top level, or of `variants.<variant>`.
    fn value(&self, variant: Option<&str>, key: &str) -> Option<&Value> {
        match variant {
            Some(v) => self.summary["variants"].get(v)?.get(key),
            None => self.summary.get(key),
        }
    }

    fn bad(&self, key: &str, want: &str) -> CannotJudge {
        self.bad_at(None, key, want)
    }

    fn bad_at(&self, variant: Option<&str>, key: &str, want: &str) -> CannotJudge {
        let path = variant.map_or(key.to_string(), |v| format!("variants.{v}.{key}"));
        let got = match self.value(variant, key) {
            None => "it is missing".to_string(),
            Some(v) => format!("got {}", crate::read::json::describe(v)),
        };
        CannotJudge(format!(
            "{}: {path} must be {want}, {got}; the folder is damaged or not from this version of critic-gate (replay the traffic again)",
            self.path.display()
        ))
    }

    /// A count: a whole number >= 0 (never null).
    pub fn count(&self, variant: Option<&str>, key: &str) -> Result<u64, CannotJudge> {
        self.value(variant, key)
            .and_then(Value::as_u64)
            .ok_or_else(|| self.bad_at(variant, key, "a whole number >= 0"))
    }

    /// A rate in [0, 1], or null where it is undefined.
    pub fn rate(&self, variant: Option<&str>, key: &str) -> Result<Option<f64>, CannotJudge> {
        match self.value(variant, key) {
            Some(Value::Null) => Ok(None),
            Some(v) => match v.as_f64() {
                Some(x) if (0.0..=1.0).contains(&x) => Ok(Some(x)),
                _ => Err(self.bad_at(variant, key, "a rate in [0, 1] or null")),
            },
            None => Err(self.bad_at(variant, key, "a rate in [0, 1] or null")),
        }
    }
}

impl From<CannotJudge> for crate::Error {
    fn from(e: CannotJudge) -> crate::Error {
        crate::Error::CannotJudge(e.0)
    }
}

/// Read a CSV report with every column as text.
pub fn read_csv(path: &Path) -> Result<DataFrame, CannotJudge> {
    CsvReadOptions::default()
        .with_has_header(true)
        .with_infer_schema_length(Some(0))
        .try_into_reader_with_file_path(Some(path.into()))
        .and_then(|r| r.finish())
        .map_err(|e| CannotJudge(format!("{}: cannot read: {e}", path.display())))
}

/// The text columns of a report, row by row.
pub fn string_rows(df: &DataFrame, cols: &[&str]) -> Result<Vec<Vec<String>>, CannotJudge> {
    let series: Vec<&StringChunked> = cols
        .iter()
        .map(|c| {
            df.column(c)
                .and_then(|s| s.str())
                .map_err(|e| CannotJudge(format!("report has no text column {c}: {e}")))
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
