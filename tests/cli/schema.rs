//! Every CSV of every committed report loads with the types its folder's
//! `schema.json` declares, the same table concatenates across reports, and
//! the README names every column.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use polars_core::prelude::*;
use polars_io::prelude::*;
use serde_json::Value;

use crate::util::root;

fn report_folders() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("reports"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("summary.json").is_file())
        .collect();
    dirs.sort();
    dirs
}

/// A schema.json without the run's own scope columns (`scope_tenant`).
fn without_scope_columns(mut schema: Value) -> Value {
    for table in schema["tables"].as_object_mut().unwrap().values_mut() {
        let cols = table["columns"].as_array_mut().unwrap();
        cols.retain(|c| !c["name"].as_str().unwrap().starts_with("scope_"));
    }
    schema
}

fn schema_of(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("schema.json")).unwrap()).unwrap()
}

fn dtype(name: &str) -> DataType {
    match name {
        "u64" => DataType::UInt64,
        "i64" => DataType::Int64,
        "f64" => DataType::Float64,
        "string" => DataType::String,
        "bool" => DataType::Boolean,
        other => panic!("schema.json: unknown type {other}"),
    }
}

/// `file` of `dir` read with the declared types (an error if any value does
/// not parse as its column's type).
fn load(dir: &Path, file: &str, table: &Value) -> DataFrame {
    let columns = table["columns"].as_array().unwrap();
    let schema: Schema = columns
        .iter()
        .map(|c| {
            let name = c["name"].as_str().unwrap();
            Field::new(name.into(), dtype(c["type"].as_str().unwrap()))
        })
        .collect();
    let path = dir.join(file);
    let header = std::fs::read_to_string(&path).unwrap();
    let header = header.lines().next().unwrap_or("");
    let names: Vec<&str> = columns
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(header, names.join(","), "{}: header", path.display());
    let df = CsvReadOptions::default()
        .with_has_header(true)
        .with_schema(Some(Arc::new(schema)))
        .try_into_reader_with_file_path(Some(path.clone()))
        .and_then(|r| r.finish())
        .unwrap_or_else(|e| panic!("{}: does not load with its schema: {e}", path.display()));
    for c in columns.iter().filter(|c| c["nullable"] == false) {
        let name = c["name"].as_str().unwrap();
        assert_eq!(
            df.column(name).unwrap().null_count(),
            0,
            "{}: {name} is declared never empty",
            path.display()
        );
    }
    df
}

#[test]
fn every_committed_csv_loads_with_its_declared_types_and_concatenates() {
    let dirs = report_folders();
    assert!(dirs.len() >= 8);
    let schema = without_scope_columns(schema_of(&dirs[0]));
    let tables = schema["tables"].as_object().unwrap();
    for (file, table) in tables {
        // diff's tables are checked by diff_tables_have_the_declared_schema,
        // mine's by mine_tables_load_with_their_declared_types, plan's by
        // the_plan_table_loads_with_its_declared_types, monitor's by
        // the_monitor_table_loads_with_its_declared_types.
        if ["diff", "mine", "plan", "monitor"]
            .iter()
            .any(|w| table["written_by"] == *w)
        {
            continue;
        }
        let mut all: Option<DataFrame> = None;
        for dir in &dirs {
            let own = schema_of(dir);
            assert_eq!(
                without_scope_columns(own.clone()),
                schema,
                "{}: schema.json",
                dir.display()
            );
            if !dir.join(file).is_file() {
                continue;
            }
            // Loaded with its own columns; stacked on the columns every
            // run has (a run's scope columns are its own).
            let df = load(dir, file, &own["tables"][file]);
            let common: Vec<&str> = table["columns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["name"].as_str().unwrap())
                .collect();
            let df = df.select(common).unwrap();
            match all.as_mut() {
                None => all = Some(df),
                Some(a) => {
                    a.vstack_mut(&df).unwrap_or_else(|e| {
                        panic!("{file} of {} does not concatenate: {e}", dir.display())
                    });
                }
            }
        }
        assert!(all.is_some(), "{file} is in no committed report");
    }
}

/// No money figure has more than 6 decimals, no whole-number column is
/// written with a decimal point, and summary.json carries the values of
/// summary.csv.
#[test]
fn figures_are_written_without_float_noise() {
    for dir in report_folders() {
        let schema = schema_of(&dir);
        for (file, table) in schema["tables"].as_object().unwrap() {
            let path = dir.join(file);
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let columns = table["columns"].as_array().unwrap();
            let mut reader = csv_fields(&text);
            reader.next();
            for (n, fields) in reader.enumerate() {
                for (c, field) in columns.iter().zip(&fields) {
                    let name = c["name"].as_str().unwrap();
                    let at = format!("{}:{} {name} = {field:?}", path.display(), n + 2);
                    if matches!(c["type"].as_str(), Some("u64" | "i64")) {
                        assert!(!field.contains(['.', 'e']), "{at}: a whole number");
                    }
                    if c["unit"] == "USD" {
                        let decimals = field.split('.').nth(1).map_or(0, str::len);
                        assert!(decimals <= 6, "{at}: more than 6 decimals");
                    }
                    // Rates and means: at most 9 significant digits (a
                    // recorded confidence is written as recorded).
                    if c["type"] == "f64" && c["unit"] != "USD" && name != "confidence" {
                        let digits = field.trim_start_matches(['-', '0', '.']).replace('.', "");
                        assert!(
                            digits.trim_end_matches('0').len() <= 9,
                            "{at}: more than 9 digits"
                        );
                    }
                }
            }
        }
        summary_json_matches_csv(&dir, &schema);
    }
}

/// The fields of each line of a CSV without quoted commas or newlines in
/// number columns (enough for the checks above: text is compared whole).
fn csv_fields(text: &str) -> impl Iterator<Item = Vec<String>> + '_ {
    text.lines().map(|l| {
        let mut fields = Vec::new();
        let (mut cur, mut quoted) = (String::new(), false);
        for ch in l.chars() {
            match ch {
                '"' => quoted = !quoted,
                ',' if !quoted => fields.push(std::mem::take(&mut cur)),
                _ => cur.push(ch),
            }
        }
        fields.push(cur);
        fields
    })
}

fn summary_json_matches_csv(dir: &Path, schema: &Value) {
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let csv = load(dir, "summary.csv", &schema["tables"]["summary.csv"]);
    let names = strings(&csv, "variant");
    for c in schema["tables"]["summary.csv"]["columns"]
        .as_array()
        .unwrap()
    {
        let name = c["name"].as_str().unwrap();
        if matches!(
            name,
            "variant" | "baseline" | "production" | "selective_gate"
        ) {
            continue;
        }
        let col = csv.column(name).unwrap().cast(&DataType::Float64).unwrap();
        let col = col.f64().unwrap();
        for (i, v) in names.iter().enumerate() {
            let in_json = json["variants"][v][name].as_f64();
            assert_eq!(in_json, col.get(i), "{}: {v}.{name}", dir.display());
        }
    }
}

/// Every column of every committed report is in the reports reference
/// (docs/reports.md, printed from the schema declaration).
#[test]
fn the_reports_reference_names_every_column() {
    let readme = std::fs::read_to_string(root().join("docs/reports.md")).unwrap();
    let words: std::collections::HashSet<&str> = readme
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    let mut missing = Vec::new();
    for dir in report_folders() {
        for (file, table) in schema_of(&dir)["tables"].as_object().unwrap() {
            for c in table["columns"].as_array().unwrap() {
                // A run's scope columns are documented as one.
                let name = match c["name"].as_str().unwrap() {
                    n if n.starts_with("scope_") => "scope_KEY",
                    n => n,
                };
                if !words.contains(name) {
                    missing.push(format!("{file}: {name}"));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/reports.md does not name: {missing:?}"
    );
}

/// A column's values as f64 (empty as 0: a sum whose inputs were all
/// unmeasured adds nothing).
fn numbers(df: &DataFrame, name: &str) -> Vec<f64> {
    let c = df.column(name).unwrap().cast(&DataType::Float64).unwrap();
    let c = c.f64().unwrap();
    (0..c.len()).map(|i| c.get(i).unwrap_or(0.0)).collect()
}

fn strings(df: &DataFrame, name: &str) -> Vec<String> {
    let c = df.column(name).unwrap().str().unwrap();
    (0..c.len())
        .map(|i| c.get(i).unwrap_or("").to_string())
        .collect()
}

#[test]
fn every_dimension_that_covers_all_turns_adds_up_to_the_summary() {
    const SUMS: [&str; 10] = [
        "saved_calls",
        "added_calls",
        "saved_tokens_in",
        "saved_tokens_out",
        "saved_usd",
        "saved_latency_ms",
        "added_tokens_in_estimated",
        "added_tokens_out_estimated",
        "added_usd_estimated",
        "added_latency_ms_estimated",
    ];
    let mut checked = 0;
    // A sweep's folder has no segments (see the sweep's tests).
    for dir in report_folders()
        .into_iter()
        .filter(|d| d.join("segments.csv").is_file())
    {
        let schema = schema_of(&dir);
        let tables = &schema["tables"];
        let summary = load(&dir, "summary.csv", &tables["summary.csv"]);
        let segments = load(&dir, "segments.csv", &tables["segments.csv"]);
        let (variants, seg_variants, dims) = (
            strings(&summary, "variant"),
            strings(&segments, "variant"),
            strings(&segments, "dimension"),
        );
        let turns = numbers(&summary, "turns");
        let seg_turns = numbers(&segments, "turns");
        let mut dim_names = dims.clone();
        dim_names.sort();
        dim_names.dedup();
        for (v, name) in variants.iter().enumerate() {
            for dim in &dim_names {
                let rows: Vec<usize> = (0..segments.height())
                    .filter(|&i| &seg_variants[i] == name && &dims[i] == dim)
                    .collect();
                if rows.iter().map(|&i| seg_turns[i]).sum::<f64>() != turns[v] {
                    continue; // scope.KEY: only the turns that have the key
                }
                for col in SUMS {
                    let want = numbers(&summary, col)[v];
                    let got: f64 = rows.iter().map(|&i| numbers(&segments, col)[i]).sum();
                    // Each row is written rounded (dollars to 6 places, ms
                    // to whole ones): the rows may differ from the total by
                    // half a unit each.
                    let half = match col {
                        c if c.contains("usd") => 0.5e-6,
                        c if c.contains("_ms") => 0.5,
                        _ => 0.0,
                    };
                    let tolerance = half * (rows.len() + 1) as f64 + 1e-9 * want.abs().max(1.0);
                    assert!(
                        (got - want).abs() <= tolerance,
                        "{}: {name} {dim}: {col} rows add up to {got}, the summary says {want}",
                        dir.display()
                    );
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 8 * 2 * 4, "only {checked} dimensions checked");
}

/// skips.csv lists what each variant skips where the baseline fired, and
/// its rows add up to the summary's saved calls and dollars.
#[test]
fn skips_list_the_saved_drafts_and_add_up() {
    for dir in report_folders()
        .into_iter()
        .filter(|d| d.join("skips.csv").is_file())
    {
        let schema = schema_of(&dir);
        let tables = &schema["tables"];
        let summary = load(&dir, "summary.csv", &tables["summary.csv"]);
        let skips = load(&dir, "skips.csv", &tables["skips.csv"]);
        let (names, skip_variants) = (strings(&summary, "variant"), strings(&skips, "variant"));
        for (v, name) in names.iter().enumerate() {
            let rows: Vec<usize> = (0..skips.height())
                .filter(|&i| &skip_variants[i] == name)
                .collect();
            // Dollars the summary cannot vouch for, no row reports.
            let usd = skips.column("saved_usd").unwrap().f64().unwrap().clone();
            if summary
                .column("saved_usd")
                .unwrap()
                .f64()
                .unwrap()
                .get(v)
                .is_none()
            {
                for &i in &rows {
                    assert_eq!(
                        usd.get(i),
                        None,
                        "{}: {name}: skips.csv saved_usd",
                        dir.display()
                    );
                }
            }
            for (col, sum_col, half) in [
                ("saved_calls", "saved_calls", 0.0),
                ("saved_usd", "saved_usd", 0.5e-6),
            ] {
                let want = numbers(&summary, sum_col)[v];
                let got: f64 = rows.iter().map(|&i| numbers(&skips, col)[i]).sum();
                assert!(
                    (got - want).abs() <= half * (rows.len() + 1) as f64 + 1e-9,
                    "{}: {name}: skips.csv {col} adds up to {got}, the summary's {sum_col} is {want}",
                    dir.display()
                );
            }
        }
    }
    let seed = root().join("reports/seed");
    let text = std::fs::read_to_string(seed.join("skips.csv")).unwrap();
    for ack in [
        "\"got it, thanks!\",1,en:1",
        "sounds good.,1,en:1",
        "\"great, will do.\",1,en:1,1,0,1,0",
    ] {
        assert!(
            text.contains(&format!("seed,smart,{ack}")),
            "{ack} in\n{text}"
        );
    }
    assert_eq!(
        text.lines().count(),
        1 + 10,
        "the 10 acks the smart gate skips"
    );
}

/// The committed mine report's tables load with the types schema.json
/// declares for them.
#[test]
fn mine_tables_load_with_their_declared_types() {
    let dir = root().join("reports/mine");
    let schema = schema_of(&dir.join("validation"));
    // The dataset's skips are all plain acks: its risky tables have a
    // header only, and load as well.
    for (file, rows) in [
        ("proposals.csv", true),
        ("missed.csv", true),
        ("risky_skips.csv", false),
        ("risky_drafts.csv", false),
    ] {
        let table = &schema["tables"][file];
        assert_eq!(table["written_by"], "mine");
        let df = load(&dir, file, table);
        assert_eq!(df.height() > 0, rows, "{file}");
    }
}

/// plan.csv (reports/plan) loads with the types schema.json declares, a
/// row per stratum and the pooled row last (the example's languages are
/// all too small for a promise of their own: one `(other)` stratum).
#[test]
fn the_plan_table_loads_with_its_declared_types() {
    let schema = schema_of(&root().join("reports/seed"));
    let table = &schema["tables"]["plan.csv"];
    assert_eq!(table["written_by"], "plan");
    let df = load(&root().join("reports/plan"), "plan.csv", table);
    assert!(df.height() >= 2);
    let strata = df.column("stratum").unwrap().str().unwrap().clone();
    assert_eq!(strata.get(0), Some("(other)"));
    assert_eq!(strata.get(df.height() - 1), Some("(all)"));
}

/// monitor.csv loads with the types schema.json declares, a pooled row
/// (`all`) after each period's strata.
#[test]
fn the_monitor_table_loads_with_its_declared_types() {
    let schema = schema_of(&root().join("reports/seed"));
    let table = &schema["tables"]["monitor.csv"];
    assert_eq!(table["written_by"], "monitor");
    let df = load(&root().join("reports/monitor"), "monitor.csv", table);
    assert_eq!(df.height(), 14 * 3);
    let strata = df.column("stratum").unwrap().str().unwrap().clone();
    assert_eq!(strata.get(df.height() - 1), Some("all"));
    assert_eq!(strata.get(0), Some("de"));
}

/// diff's tables load with the types schema.json declares for them, and
/// name both runs.
#[test]
fn diff_tables_have_the_declared_schema() {
    let d = crate::util::Dir::new();
    let (old, new) = (d.path("old"), d.path("new"));
    let seed = [
        "datasets/seed.jsonl",
        "--config",
        "datasets/gate.toml",
        "--quiet",
    ];
    crate::util::expect_code(&crate::util::replay_in(&old, &seed), 0);
    // Smart made legacy: it fires on the acks it skipped.
    let cfg = d.write(
        "legacy.toml",
        "[variants.legacy]\n[variants.smart]\nmetacognition_selective_gate = false\n",
    );
    let mut legacy = seed.to_vec();
    legacy[2] = cfg.to_str().unwrap();
    crate::util::expect_code(&crate::util::replay_in(&new, &legacy), 0);
    let o = crate::util::run(
        &["diff", old.to_str().unwrap(), new.to_str().unwrap()],
        None,
    );
    crate::util::expect_code(&o, 0);
    let schema = schema_of(&new);
    for file in ["flips.csv", "metrics_diff.csv"] {
        let table = &schema["tables"][file];
        assert_eq!(table["written_by"], "diff");
        let df = load(&new, file, table);
        assert!(df.height() > 0, "{file}");
        assert_eq!(
            strings(&df, "run"),
            vec!["new".to_string(); df.height()],
            "{file}"
        );
        assert_eq!(
            strings(&df, "old_run"),
            vec!["old".to_string(); df.height()],
            "{file}"
        );
    }
}

/// `--format both` writes every table also as Parquet with the declared
/// types and the same values; `--format parquet` writes no CSV table;
/// a later CSV replay into the folder removes the Parquet files.
#[test]
fn parquet_tables_have_the_declared_schema_and_the_csv_values() {
    let d = crate::util::Dir::new();
    for (name, args) in [
        (
            "seed",
            vec!["datasets/seed.jsonl", "--config", "datasets/gate.toml"],
        ),
        (
            "invalid",
            vec![
                "datasets/invalid.jsonl",
                "--config",
                "datasets/gate.toml",
                "--skip-invalid",
            ],
        ),
    ] {
        let out = d.path(name);
        let mut all = args.clone();
        all.extend(["--format", "both", "--quiet"]);
        crate::util::expect_code(&crate::util::replay_in(&out, &all), 0);
        let schema = schema_of(&out);
        for (file, table) in schema["tables"].as_object().unwrap() {
            if table["written_by"] != "replay" {
                continue;
            }
            let csv = load(&out, file, table);
            let pq = out.join(format!("{}.parquet", file.trim_end_matches(".csv")));
            let bytes = std::fs::read(&pq).unwrap_or_else(|e| panic!("{}: {e}", pq.display()));
            let df = critic_gate::read_parquet(bytes).unwrap();
            assert_eq!(df.schema(), csv.schema(), "{}: types", pq.display());
            assert!(
                df.equals_missing(&csv),
                "{}: values differ from the CSV",
                pq.display()
            );
        }
    }
    let only = d.path("only");
    let o = crate::util::replay_in(
        &only,
        &["datasets/seed.jsonl", "--format", "parquet", "--quiet"],
    );
    crate::util::expect_code(&o, 0);
    assert!(only.join("summary.parquet").is_file() && only.join("decisions.parquet").is_file());
    assert!(!only.join("summary.csv").exists() && !only.join("decisions.csv").exists());
    crate::util::expect_code(
        &crate::util::replay_in(&only, &["datasets/seed.jsonl", "--quiet"]),
        0,
    );
    assert!(
        !only.join("summary.parquet").exists(),
        "an earlier run's Parquet outlived it"
    );
}
