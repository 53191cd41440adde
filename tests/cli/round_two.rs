//! "Never a wrong number, round two": each test reproduces one finding of
//! the second adversarial review (its item number in the name) and holds
//! the fix. Each failed before its fix.

use crate::util::*;

const SEED: &str = "datasets/seed.jsonl";

/// A replay of `args` (run from the project root) into `d/name`; exit 0.
fn replayed(d: &Dir, name: &str, args: &[&str]) -> std::path::PathBuf {
    let out = d.path(name);
    let mut a = args.to_vec();
    a.push("--quiet");
    let o = replay_in(&out, &a);
    expect_code(&o, 0);
    out
}

/// The `variant` column of a CSV report, in row order, without repeats.
fn variant_column(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in csv_rows(text) {
        let v = r["variant"].clone();
        if out.last() != Some(&v) && !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

// 1. The baseline is the first written variant, and every table keeps the
// written order (names deliberately not in alphabetical order).
#[test]
fn item01_first_written_variant_is_the_baseline_and_order_is_kept() {
    let d = Dir::new();
    let cfg = d.write(
        "gate.toml",
        "read_only_tools = [\"search_docs\"]\n[variants.prod]\nmetacognition_selective_gate = false\n[variants.candidate]\nmetacognition_selective_gate = true\n",
    );
    let out = replayed(&d, "r", &[SEED, "--config", cfg.to_str().unwrap()]);
    let s = summary(&out);
    assert_eq!(s["baseline"], "prod", "{s}");
    assert_eq!(s["variant_order"], serde_json::json!(["prod", "candidate"]));
    for table in ["summary.csv", "matrix.csv", "floors.csv"] {
        let text = std::fs::read_to_string(out.join(table)).unwrap();
        assert_eq!(variant_column(&text), ["prod", "candidate"], "{table}");
    }
    // candidate has a regression against prod: a zero budget fails.
    let o = run(
        &[
            "check",
            out.to_str().unwrap(),
            "--max-safety-regressions",
            "0",
        ],
        None,
    );
    expect_code(&o, 1);
    assert!(stdout(&o).contains("candidate"), "{}", stdout(&o));
    // The same in a JSON config.
    let json = d.write(
        "gate.json",
        r#"{"variants": {"zeta": {}, "alpha": {"metacognition_selective_gate": true}}}"#,
    );
    let out = replayed(&d, "j", &[SEED, "--config", json.to_str().unwrap()]);
    assert_eq!(summary(&out)["baseline"], "zeta");
}

// 3. A --group-by path that spells a dotted scope key's name is a
// dimension of its own: no dimension counts a turn twice.
#[test]
fn item03_group_by_path_and_dotted_scope_key_do_not_double_count() {
    let d = Dir::new();
    let lines = [
        r#"{"run_id":"a","draft":"ok","scope":{"user.tier":"gold","user":{"tier":"silver"}}}"#,
        r#"{"run_id":"b","draft":"ok","scope":{"user":{"tier":"gold"}}}"#,
        r#"{"run_id":"c","draft":"ok","scope":{"user.tier":"gold"}}"#,
    ];
    let f = d.write("t.jsonl", lines.join("\n") + "\n");
    let out = replayed(
        &d,
        "r",
        &[f.to_str().unwrap(), "--group-by", "scope.user.tier"],
    );
    let rows = csv_rows(&std::fs::read_to_string(out.join("segments.csv")).unwrap());
    let mut dims: std::collections::BTreeMap<String, u64> = Default::default();
    for r in rows.iter().filter(|r| r["variant"] == "legacy") {
        *dims.entry(r["dimension"].clone()).or_default() += r["turns"].parse::<u64>().unwrap();
    }
    for (dim, n) in &dims {
        assert_eq!(*n, 3, "dimension {dim} counts {n} turns of 3: {dims:?}");
    }
    assert!(dims.contains_key("scope.user.tier"), "{dims:?}");
}

// 4. A confidence that is not a number is an invalid line, never a
// decision.
#[test]
fn item04_nan_confidence_is_an_invalid_line() {
    let d = Dir::new();
    let bad = r#"{"run_id":"n","draft":"A long answer about 42 things.","activation_log":{"activated_nodes":[{"score":1e308},{"score":1e308}],"traversed_edges":[{"weight":-1e308},{"weight":-1e308}]}}"#;
    let f = d.write("t.jsonl", format!("{bad}\n"));
    let o = replay_in(&d.path("r"), &[f.to_str().unwrap()]);
    expect_error(&o, 2, "t.jsonl:1");
    assert!(stderr(&o).contains("not a number"), "{}", stderr(&o));
    let out = replayed(&d, "s", &[f.to_str().unwrap(), "--skip-invalid"]);
    let rej = rejects(&out);
    assert_eq!(rej.len(), 1);
    assert!(
        rej[0]["reason"].as_str().unwrap().contains("not a number"),
        "{rej:?}"
    );
    let decisions = std::fs::read_to_string(out.join("decisions.csv")).unwrap();
    assert!(!decisions.contains("NaN"), "{decisions}");
}

/// Where stdin is a pipe: `calibrate` and `mine` would read it twice.
fn piped(args: &[&str]) -> std::process::Output {
    let input = std::fs::read(root().join(SEED)).unwrap();
    let mut c = cmd();
    c.current_dir(root()).args(args);
    c.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    use std::io::Write;
    // The command may refuse before it reads: a closed pipe is fine.
    let _ = child.stdin.take().unwrap().write_all(&input);
    child.wait_with_output().unwrap()
}

// 7. Commands that read their input twice refuse a source that is not a
// regular file, before writing anything.
#[test]
fn item07_calibrate_and_mine_refuse_pipes() {
    let d = Dir::new();
    for (cmd, extra) in [
        (
            "calibrate",
            vec![
                "--config",
                "datasets/sweep.toml",
                "--max-regression-rate",
                "0.1",
            ],
        ),
        ("mine", vec![]),
    ] {
        for src in ["-", "/dev/stdin"] {
            let out = d.path(&format!("{cmd}-{}", src.len()));
            let mut args = vec![cmd, src];
            args.extend(&extra);
            args.extend(["--out", out.to_str().unwrap()]);
            let o = piped(&args);
            expect_error(&o, 2, "regular file");
            assert!(!out.exists(), "{cmd} {src} made {}", out.display());
        }
    }
}

// 8. check --markdown judges a sweep folder and a Parquet-only folder as
// it does without --markdown.
#[test]
fn item08_check_markdown_on_sweep_and_parquet_folders() {
    let d = Dir::new();
    let sweep = d.path("sweep");
    let o = run_in(
        &sweep,
        &["sweep", SEED, "--config", "datasets/sweep.toml", "--quiet"],
    );
    expect_code(&o, 0);
    let pq = replayed(
        &d,
        "pq",
        &[
            SEED,
            "--config",
            "datasets/gate.toml",
            "--format",
            "parquet",
        ],
    );
    // check DIR [--variant smart] --max-safety-regressions 0 [--markdown FILE]
    let check = |dir: &std::path::Path, variant: bool, md: Option<&std::path::Path>| {
        let mut args = vec!["check", dir.to_str().unwrap()];
        if variant {
            args.extend(["--variant", "smart"]);
        }
        args.extend(["--max-safety-regressions", "0"]);
        if let Some(md) = md {
            args.extend(["--markdown", md.to_str().unwrap()]);
        }
        run(&args, None)
    };
    for (i, dir) in [&sweep, &pq].into_iter().enumerate() {
        // Its own file: check --markdown appends.
        let md = d.path(&format!("verdict-{i}.md"));
        expect_code(&check(dir, true, None), 1);
        expect_code(&check(dir, true, Some(&md)), 1);
        let text = std::fs::read_to_string(&md).unwrap();
        assert!(text.contains("failed"), "{text}");
    }
    // The Parquet folder still lists its regressions.
    let md = d.path("verdict.md");
    let o = check(&pq, false, Some(&md));
    expect_code(&o, 1);
    assert!(
        std::fs::read_to_string(&md)
            .unwrap()
            .contains("Safety regressions"),
        "{}",
        std::fs::read_to_string(&md).unwrap()
    );
}

// 10. --partial replaces only an earlier partial result, never another
// file, and never a file of the --out folder.
#[test]
fn item10_partial_replaces_only_a_partial() {
    let d = Dir::new();
    let other = d.write("other.jsonl", "{\"run_id\":\"x\",\"draft\":\"ok\"}\n");
    let o = run_in(
        &d.path("a"),
        &[
            "replay",
            SEED,
            "--partial",
            other.to_str().unwrap(),
            "--quiet",
        ],
    );
    expect_error(&o, 2, "not a partial result");
    assert_eq!(
        std::fs::read_to_string(&other).unwrap(),
        "{\"run_id\":\"x\",\"draft\":\"ok\"}\n"
    );
    let out = d.path("r");
    let inside = out.join("summary.json");
    let o = run_in(
        &out,
        &[
            "replay",
            SEED,
            "--partial",
            inside.to_str().unwrap(),
            "--quiet",
        ],
    );
    expect_error(&o, 2, "a file of the report");
    // Its marker too (the second review).
    let marker = out.join(".critic-gate-report");
    let o = run_in(
        &out,
        &[
            "replay",
            SEED,
            "--partial",
            marker.to_str().unwrap(),
            "--quiet",
        ],
    );
    expect_error(&o, 2, "a file of the report");
    // An earlier partial is replaced; the temporary file a killed run
    // (of a process that is gone) left beside it is removed.
    let p = d.path("p.partial");
    let stale = d.write(".p.partial.4294967294.tmp", "cut short");
    for _ in 0..2 {
        let o = run_from_root(&["replay", SEED, "--partial", p.to_str().unwrap(), "--quiet"]);
        expect_code(&o, 0);
    }
    assert!(!stale.exists());
    assert_eq!(
        std::fs::read_dir(d.tmp.path()).unwrap().count(),
        2,
        "other.jsonl, p.partial"
    );
}

fn run_from_root(args: &[&str]) -> std::process::Output {
    cmd().current_dir(root()).args(args).output().unwrap()
}

/// A seed replay's summary.json, edited by `edit`, judged by `check`.
fn check_tampered(edit: impl Fn(&str) -> String, budget: &[&str]) -> std::process::Output {
    let d = Dir::new();
    let out = replayed(&d, "r", &[SEED, "--config", "datasets/gate.toml"]);
    let p = out.join("summary.json");
    let text = std::fs::read_to_string(&p).unwrap();
    let edited = edit(&text);
    assert_ne!(edited, text, "the edit changed nothing");
    std::fs::write(&p, edited).unwrap();
    let mut args = vec!["check", out.to_str().unwrap()];
    args.extend(budget);
    run(&args, None)
}

/// `text` with the first `"key": value` (a whole number) replaced.
fn set_count(text: &str, key: &str, value: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
    fn walk(v: &mut serde_json::Value, key: &str, value: &serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m.iter_mut() {
                    if k == key {
                        *x = value.clone();
                    } else {
                        walk(x, key, value);
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(|x| walk(x, key, value)),
            _ => {}
        }
    }
    let value: serde_json::Value = serde_json::from_str(value).unwrap();
    walk(&mut v, key, &value);
    serde_json::to_string_pretty(&v).unwrap()
}

// 11. Tampered summaries make check exit 2.
#[test]
fn item11_check_refuses_tampered_summaries() {
    // A second "variants" key (the first one's figures would be judged).
    let o = check_tampered(
        |t| t.replacen("{", "{\n  \"variants\": {},", 1),
        &["--max-safety-regressions", "0"],
    );
    expect_error(&o, 2, "twice");
    // Disagreement counts that wrap to 0 when added.
    let o = check_tampered(
        |t| {
            let t = set_count(t, "production_fired_variant_skips", "9223372036854775808");
            set_count(
                &t,
                "production_skipped_variant_fires",
                "9223372036854775808",
            )
        },
        &["--min-production-agreement", "0.5"],
    );
    expect_code(&o, 2);
    // turns + rejected must be lines.
    let o = check_tampered(|t| set_count(t, "rejected", "7"), &["--max-rejected", "10"]);
    expect_error(&o, 2, "lines");
    // More saved calls than skips; a second variant marked the baseline
    // (the second review).
    let edit = |key: &'static str, value: serde_json::Value| {
        move |t: &str| {
            let mut v: serde_json::Value = serde_json::from_str(t).unwrap();
            v["variants"]["smart"][key] = value.clone();
            serde_json::to_string(&v).unwrap()
        }
    };
    let budget = ["--max-safety-regressions", "5"];
    let o = check_tampered(edit("saved_calls", serde_json::json!(11)), &budget);
    expect_error(&o, 2, "saved_calls");
    let o = check_tampered(edit("baseline", serde_json::json!(true)), &budget);
    expect_error(&o, 2, "variants.smart.baseline is true");
}

// 13. explain reads .gz and .zst files, and names the line that is not
// UTF-8.
#[test]
fn item13_explain_decompresses_and_names_the_bad_line() {
    let d = Dir::new();
    let line = b"{\"run_id\":\"r\",\"draft\":\"Got it, thanks!\"}\n";
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, line).unwrap();
    let gz = d.write("t.jsonl.gz", gz.finish().unwrap());
    let zst = d.write("t.jsonl.zst", zstd::encode_all(&line[..], 3).unwrap());
    for f in [gz, zst] {
        let o = run(&["explain", f.to_str().unwrap()], None);
        expect_code(&o, 0);
        assert!(stdout(&o).contains("smart"), "{}", stdout(&o));
    }
    let mut bytes = line.to_vec();
    bytes.extend(b"{\"run_id\":\"r\",\"draft\":\"caf\xe9\"}\n");
    let bad = d.write("bad.jsonl", bytes);
    let o = run(&["explain", bad.to_str().unwrap()], None);
    expect_error(&o, 2, "bad.jsonl:2");
}

// 14. Cells from traffic cannot become spreadsheet formulas, and drafts
// cannot inject HTML or links into the Markdown reports.
#[test]
fn item14_no_formula_or_markup_injection() {
    let d = Dir::new();
    let lines = [
        r#"{"run_id":"=HYPERLINK(\"http://x\")","draft":"=1+2 <img src=x onerror=alert(1)> [c](javascript:alert(1))","scope":{"tenant":"@evil"},"critic":{"verdict":"revise","reflection_tokens_in":10,"reflection_tokens_out":5}}"#,
        r#"{"run_id":"+b","draft":"ok <b>bold</b> [c](javascript:x)","scope":{"tenant":"-2"},"critic":{"verdict":"refuse","reflection_tokens_in":10,"reflection_tokens_out":5}}"#,
        r#"{"run_id":"u","draft":"ok https://evil.example/a www.evil.example","critic":{"verdict":"revise","reflection_tokens_in":10,"reflection_tokens_out":5}}"#,
    ];
    let f = d.write("t.jsonl", lines.join("\n") + "\n");
    let out = replayed(&d, "r", &[f.to_str().unwrap(), "--scope-columns", "tenant"]);
    for table in ["decisions.csv", "regressions.csv", "mismatches.csv"] {
        let p = out.join(table);
        if !p.exists() {
            continue;
        }
        for line in std::fs::read_to_string(&p).unwrap().lines().skip(1) {
            // A number (`-2`) is no formula.
            for cell in csv_fields(line)
                .into_iter()
                .filter(|c| c.parse::<f64>().is_err())
            {
                assert!(
                    !cell.starts_with(['=', '+', '-', '@', '\t', '\r']),
                    "{table}: cell {cell:?} in {line}"
                );
            }
        }
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    // No bare link for GitHub to make one of: https\:// and www\. render
    // as text.
    assert!(
        md.contains("https\\://evil") && md.contains("www\\.evil"),
        "{md}"
    );
    assert!(!md.contains("<img"), "{md}");
    assert!(!md.contains("<b>"), "{md}");
    assert!(!md.contains("](javascript"), "{md}");
    let v = d.path("v.md");
    let o = run(
        &[
            "check",
            out.to_str().unwrap(),
            "--max-safety-regressions",
            "0",
            "--markdown",
            v.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 1);
    let md = std::fs::read_to_string(&v).unwrap();
    assert!(md.contains("Safety regressions"), "{md}");
    assert!(!md.contains("<img") && !md.contains("](javascript"), "{md}");
}

// 15. `ts` must be RFC 3339; `turn: -0` is turn 0.
#[test]
fn item15_timestamps_are_rfc3339_and_minus_zero_is_a_turn() {
    let d = Dir::new();
    let lines = [
        r#"{"run_id":"a","turn":0,"ts":"2026-11-30T12:00:00Z","draft":"ok"}"#,
        r#"{"run_id":"a","turn":1,"ts":"2026-11-30T12:00:00.123+01:00","draft":"ok"}"#,
        r#"{"run_id":"a","turn":2,"ts":"yesterday","draft":"ok"}"#,
        r#"{"run_id":"a","turn":3,"ts":"2026-02-30T12:00:00Z","draft":"ok"}"#,
        r#"{"run_id":"b","turn":-0,"draft":"ok"}"#,
        r#"{"run_id":"c","turn":0.0,"draft":"ok"}"#,
        r#"{"run_id":"c","turn":1e2,"draft":"ok"}"#,
        r#"{"run_id":"c","turn":1.5,"draft":"ok"}"#,
    ];
    let f = d.write("t.jsonl", lines.join("\n") + "\n");
    let out = replayed(&d, "r", &[f.to_str().unwrap(), "--skip-invalid"]);
    let rej = rejects(&out);
    let lines: Vec<u64> = rej.iter().map(|r| r["line"].as_u64().unwrap()).collect();
    assert_eq!(lines, [3, 4, 8], "{rej:?}");
    assert!(
        rej[0]["reason"].as_str().unwrap().contains("RFC 3339"),
        "{rej:?}"
    );
}

// 15. Commands that tell the user to pass --force take it.
#[test]
fn item15_sweep_calibrate_and_mine_take_force() {
    let d = Dir::new();
    for c in ["sweep", "calibrate", "mine"] {
        let out = d.path(c);
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("mine.txt"), "not a report").unwrap();
        let mut args = vec![c, SEED];
        if c != "mine" {
            args.extend(["--config", "datasets/sweep.toml"]);
        }
        if c == "calibrate" {
            args.extend(["--max-regression-rate", "0.5"]);
        }
        args.push("--quiet");
        let o = run_in(&out, &args);
        expect_error(&o, 2, "--force");
        args.push("--force");
        let o = run_in(&out, &args);
        expect_code(&o, 0);
    }
    // mine's help offers no --format it refuses.
    let o = run(&["mine", "--help"], None);
    assert!(!stdout(&o).contains("--format"), "{}", stdout(&o));
}

// 15. Scope keys that cannot be columns are named in a note.
#[test]
fn item15_unusable_scope_keys_are_noted() {
    let d = Dir::new();
    let long = "k".repeat(70);
    let line = format!(
        "{{\"run_id\":\"a\",\"draft\":\"ok\",\"scope\":{{\"tenant\":\"t\",\"\":1,\"{long}\":2,\"a\\u0001b\":3}}}}\n"
    );
    let f = d.write("t.jsonl", line);
    let out = replayed(&d, "r", &[f.to_str().unwrap()]);
    let notes = summary(&out)["notes"].to_string();
    assert!(notes.contains("cannot be columns"), "{notes}");
    assert!(notes.contains("3 scope keys"), "{notes}");
}

// 16. Every dimension of segments.csv adds up to the run's turns: turns
// without a scope key are in its `(none)` row.
#[test]
fn item16_every_segment_dimension_adds_up() {
    let d = Dir::new();
    let lines = [
        r#"{"run_id":"a","draft":"ok","scope":{"tenant":"t1","variant":"x"}}"#,
        r#"{"run_id":"b","draft":"ok","scope":{"tenant":"t2"}}"#,
        r#"{"run_id":"c","draft":"ok","scope":"web"}"#,
        r#"{"run_id":"d","draft":"ok"}"#,
    ];
    let f = d.write("t.jsonl", lines.join("\n") + "\n");
    let out = replayed(
        &d,
        "r",
        &[f.to_str().unwrap(), "--group-by", "critic.model"],
    );
    let rows = csv_rows(&std::fs::read_to_string(out.join("segments.csv")).unwrap());
    let mut dims: std::collections::BTreeMap<(String, String), u64> = Default::default();
    for r in &rows {
        *dims
            .entry((r["variant"].clone(), r["dimension"].clone()))
            .or_default() += r["turns"].parse::<u64>().unwrap();
    }
    for ((v, dim), n) in &dims {
        assert_eq!(*n, 4, "{v} {dim}: {n} of 4 turns");
    }
    assert!(dims.contains_key(&("legacy".into(), "scope.variant".into())));
    assert!(rows
        .iter()
        .any(|r| r["dimension"] == "scope.variant" && r["value"] == "(none)"));
}

// 17. Column names say what they count, and a decision is one type.
#[test]
fn item17_names_and_types() {
    let d = Dir::new();
    let out = replayed(&d, "r", &[SEED, "--config", "datasets/gate.toml"]);
    let header = |t: &str| {
        std::fs::read_to_string(out.join(t))
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .split(',')
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let skips = header("skips.csv");
    assert!(skips.contains(&"saved_calls".to_string()), "{skips:?}");
    assert!(!skips.contains(&"skips".to_string()), "{skips:?}");
    let mism = header("mismatches.csv");
    assert!(mism.contains(&"baseline_decision".to_string()), "{mism:?}");
    assert!(!mism.contains(&"baseline".to_string()), "{mism:?}");
}

/// A partial result of `file` replayed from `dir` (its name as given).
fn partial_from(dir: &std::path::Path, file: &str, out: &std::path::Path) {
    let o = cmd()
        .current_dir(dir)
        .args([
            "replay",
            file,
            "--partial",
            out.to_str().unwrap(),
            "--quiet",
        ])
        .output()
        .unwrap();
    expect_code(&o, 0);
}

// 9. merge refuses partial results another critic-gate version wrote.
#[test]
fn item09_merge_refuses_another_versions_partials() {
    let d = Dir::new();
    let p = d.path("a.partial");
    partial_from(root(), SEED, &p);
    let raw = zstd::decode_all(&std::fs::read(&p).unwrap()[..]).unwrap();
    let ours = format!("\"tool\":\"{}\"", env!("CARGO_PKG_VERSION"));
    let at = raw
        .windows(ours.len())
        .position(|w| w == ours.as_bytes())
        .expect("the header names the tool");
    let mut other = raw.clone();
    // The same length, so every frame length still holds.
    let theirs = ours.replace(env!("CARGO_PKG_VERSION"), "9.9.9");
    assert_eq!(theirs.len(), ours.len());
    other[at..at + ours.len()].copy_from_slice(theirs.as_bytes());
    let q = d.write("b.partial", zstd::encode_all(&other[..], 3).unwrap());
    let out = d.path("m");
    let o = run(
        &[
            "merge",
            p.to_str().unwrap(),
            q.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_error(&o, 2, "9.9.9");
    assert!(!out.exists());
}

// 12. Shards whose different files share a name would repeat decisions.csv's
// (source, line) key: merge refuses them, naming both.
#[test]
fn item12_merge_refuses_different_sources_of_one_name() {
    let d = Dir::new();
    let (n1, n2) = (d.path("n1"), d.path("n2"));
    d.write("n1/traffic.jsonl", "{\"run_id\":\"a\",\"draft\":\"ok\"}\n");
    d.write(
        "n2/traffic.jsonl",
        "{\"run_id\":\"b\",\"draft\":\"Sure thing.\"}\n",
    );
    let (p1, p2) = (d.path("1.partial"), d.path("2.partial"));
    partial_from(&n1, "traffic.jsonl", &p1);
    partial_from(&n2, "traffic.jsonl", &p2);
    let out = d.path("m");
    let o = run(
        &[
            "merge",
            p1.to_str().unwrap(),
            p2.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_error(&o, 2, "traffic.jsonl");
    assert!(stderr(&o).contains("both"), "{}", stderr(&o));
    assert!(!out.exists());
    // The same file in two shards is still merged (its turns are duplicates).
    let p3 = d.path("3.partial");
    partial_from(&n1, "traffic.jsonl", &p3);
    let o = run(
        &[
            "merge",
            p1.to_str().unwrap(),
            p3.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
}

// 2. A scope of very many keys: past the cap a run has no scope
// dimensions (which could not add up), and says so; a run under it keeps
// every one.
#[test]
fn item02_scope_dimensions_are_capped_and_noted() {
    let d = Dir::new();
    let keys: Vec<String> = (0..50_000).map(|i| format!("\"k{i}\":{i}")).collect();
    let line = format!(
        "{{\"run_id\":\"a\",\"draft\":\"ok\",\"scope\":{{{}}}}}\n",
        keys.join(",")
    );
    let few =
        "{\"run_id\":\"b\",\"draft\":\"ok\",\"scope\":{\"tenant\":\"t\",\"tenant\":\"again\"}}\n";
    let f = d.write("t.jsonl", format!("{few}{}", line.repeat(3)));
    let out = replayed(
        &d,
        "r",
        &[f.to_str().unwrap(), "--group-by", "scope.user.tier"],
    );
    let rows = csv_rows(&std::fs::read_to_string(out.join("segments.csv")).unwrap());
    // A --group-by path into the scope is the user's own: it stays.
    let dims: std::collections::BTreeSet<&str> =
        rows.iter().map(|r| r["dimension"].as_str()).collect();
    assert!(
        dims.contains("scope.user.tier") && dims.contains("language"),
        "{dims:?}"
    );
    assert_eq!(dims.iter().filter(|d| d.starts_with("scope")).count(), 1);
    let notes = summary(&out)["notes"].to_string();
    assert!(
        notes.contains("more than 256 distinct scope keys"),
        "{notes}"
    );
    // 256 keys are dimensions; a repeated key keeps its last value.
    let keys: Vec<String> = (0..255).map(|i| format!("\"k{i}\":{i}")).collect();
    let line = format!(
        "{{\"run_id\":\"a\",\"draft\":\"ok\",\"scope\":{{{}}}}}\n",
        keys.join(",")
    );
    let f = d.write("u.jsonl", format!("{few}{line}"));
    let out = replayed(&d, "u", &[f.to_str().unwrap()]);
    let rows = csv_rows(&std::fs::read_to_string(out.join("segments.csv")).unwrap());
    let dims: std::collections::BTreeSet<&str> = rows
        .iter()
        .map(|r| r["dimension"].as_str())
        .filter(|d| d.starts_with("scope"))
        .collect();
    assert_eq!(dims.len(), 256);
    assert!(rows
        .iter()
        .any(|r| r["dimension"] == "scope.tenant" && r["value"] == "again"));
}
