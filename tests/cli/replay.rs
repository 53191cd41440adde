//! `critic-gate replay` on the committed datasets and on edge inputs.

use std::collections::HashMap;
use std::io::Write;
use std::process::Stdio;

use critic_gate::gate::Gate;
use critic_gate::ConfigFile;
use critic_gate::Turn;
use serde_json::Value;

use crate::util::*;

#[test]
fn seed_story_legacy_fires_every_turn_smart_about_half() {
    let d = Dir::new();
    let o = replay_in(
        d.tmp.path(),
        &["datasets/seed.jsonl", "--config", "datasets/gate.toml"],
    );
    expect_code(&o, 0);
    let s = summary(d.tmp.path());
    assert_eq!(s["turns"], 20);
    assert_eq!(s["variants"]["legacy"]["fires"], 20);
    // The README's seed story: the smart gate fires on exactly 10.
    assert_eq!(s["variants"]["smart"]["fires"], 10);
    assert_eq!(s["variants"]["smart"]["safety_regressions"], 1);
    assert_eq!(s["variants"]["legacy"]["contract_violations"], 0);
    assert!(stderr(&o).contains("skip rate"), "{}", stderr(&o));
}

/// Every decision row equals the library gate's decision for that line and
/// variant (the semantics the conformance cases prove).
#[test]
fn decisions_on_every_dataset_equal_the_gate() {
    let config = ConfigFile::load(&root().join("datasets/gate.toml"))
        .unwrap()
        .plan()
        .unwrap();
    let gates: HashMap<String, Gate> = config
        .variants
        .iter()
        .map(|v| (v.name.clone(), Gate::new(v.config.clone()).unwrap()))
        .collect();
    for name in ["seed", "multilingual", "floors"] {
        let d = Dir::new();
        let o = replay_in(
            d.tmp.path(),
            &[
                &format!("datasets/{name}.jsonl"),
                "--config",
                "datasets/gate.toml",
                "--quiet",
            ],
        );
        expect_code(&o, 0);
        let text = std::fs::read_to_string(root().join(format!("datasets/{name}.jsonl"))).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let rows = csv_rows(&d.read("decisions.csv"));
        assert_eq!(rows.len(), lines.len() * 2, "{name}");
        for row in rows {
            let n: usize = row["line"].parse().unwrap();
            let turn = Turn::parse(lines[n - 1]).unwrap();
            let e = gates[&row["variant"]].evaluate(&turn);
            assert_eq!(
                row["fires"],
                e.fires().to_string(),
                "{name}:{n} {}",
                row["variant"]
            );
            assert_eq!(row["reasons"], e.reasons().to_string(), "{name}:{n}");
        }
    }
}

#[test]
fn output_is_byte_identical_for_any_thread_count() {
    let d = Dir::new();
    let traffic = d.path("t.jsonl");
    let o = run(
        &[
            "synth",
            "--turns",
            "6000",
            "--seed",
            "11",
            "--out",
            traffic.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    let mut outs = Vec::new();
    for threads in ["1", "2", "3"] {
        let out = d.path(&format!("out{threads}"));
        let o = run(
            &[
                "replay",
                traffic.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
                "--threads",
                threads,
                "--quiet",
                "--group-by",
                "critic.model",
                // The folders differ; the run is the same.
                "--label",
                "threads",
            ],
            None,
        );
        expect_code(&o, 0);
        outs.push(out);
    }
    for f in [
        "decisions.csv",
        "summary.csv",
        "summary.json",
        "floors.csv",
        "segments.csv",
        "regressions.csv",
        "matrix.csv",
        "report.md",
    ] {
        let a = std::fs::read(outs[0].join(f)).unwrap();
        for o in &outs[1..] {
            assert!(
                a == std::fs::read(o.join(f)).unwrap(),
                "{f} differs between thread counts"
            );
        }
    }
}

#[test]
fn strict_mode_stops_at_the_first_bad_line_and_writes_nothing() {
    let d = Dir::new();
    let mut text = String::new();
    for i in 1..=20 {
        if i == 17 {
            text.push_str("{\"run_id\":\"r\",\"draft\":\"x\",\"confidence\":\"high\"}\n");
        } else {
            text.push_str(&format!(
                "{{\"run_id\":\"r\",\"turn\":{i},\"draft\":\"ok\"}}\n"
            ));
        }
    }
    let f = d.write("traffic.jsonl", text);
    let out = d.path("out");
    let o = run(
        &[
            "replay",
            f.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 2);
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "{}:17: confidence must be a number in [0, 1], got \"high\"",
            f.display()
        )),
        "{err}"
    );
    // Not even the (new) output folder is left behind.
    assert!(!out.exists(), "{} was left behind", out.display());
}

#[test]
fn a_failed_run_leaves_the_previous_report_alone() {
    let d = Dir::new();
    let good = d.write("good.jsonl", "{\"run_id\":\"r\",\"draft\":\"ok\"}\n");
    let bad = d.write("bad.jsonl", "{\"run_id\":\"r\"}\n");
    let out = d.path("out");
    expect_code(
        &run(
            &[
                "replay",
                good.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
                "--quiet",
            ],
            None,
        ),
        0,
    );
    let before = std::fs::read(out.join("summary.json")).unwrap();
    expect_code(
        &run(
            &[
                "replay",
                bad.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
                "--quiet",
            ],
            None,
        ),
        2,
    );
    assert_eq!(before, std::fs::read(out.join("summary.json")).unwrap());
    assert_eq!(
        std::fs::read_dir(&out).unwrap().count(),
        std::fs::read_dir(root().join("reports/seed"))
            .unwrap()
            .count(),
        "no staging folder is left behind (the files of a report and the marker)"
    );
}

#[test]
fn skip_invalid_sets_every_bad_line_aside_and_counts_it() {
    let d = Dir::new();
    let o = replay_in(
        d.tmp.path(),
        &["datasets/invalid.jsonl", "--skip-invalid", "--quiet"],
    );
    expect_code(&o, 0);
    let s = summary(d.tmp.path());
    let rejects = d.read("rejects.jsonl");
    let n_rejects = rejects.lines().count() as u64;
    assert_eq!(s["rejected"].as_u64().unwrap(), n_rejects);
    let text = std::fs::read(root().join("datasets/invalid.jsonl")).unwrap();
    let nonblank = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .count() as u64;
    assert_eq!(s["turns"].as_u64().unwrap() + n_rejects, nonblank);
    for needle in [
        "confidence must be a number in [0, 1], got \\\"high\\\"",
        "confidence must be a number in [0, 1], got 1.5",
        "run_id is missing",
        "draft must be a string",
        "a turn must be a JSON object",
        "intent_verdict must be an object or null",
        "intent_verdict.label must be a string or null",
        "tool_calls_this_turn must be an array",
        "critic.verdict must be",
        "must be a whole number from 0 to 1000000000, got -5",
        "invalid JSON at column 42: expected value",
        "number out of range",
        "activated_nodes must be an array or null",
        "score must be a number",
        "EOF while parsing",
        "bytes are not UTF-8",
    ] {
        assert!(
            rejects.contains(needle),
            "no reject for {needle}:\n{rejects}"
        );
    }
    for line in rejects.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["source"], "datasets/invalid.jsonl");
        assert!(v["line"].as_u64().unwrap() > 0 && v["raw"].is_string() && v["reason"].is_string());
    }
}

#[test]
fn gzip_zstd_and_stdin_read_like_plain() {
    let d = Dir::new();
    let plain = std::fs::read(root().join("datasets/seed.jsonl")).unwrap();
    let gz = d.path("seed.jsonl.gz");
    let mut e = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::default(),
    );
    e.write_all(&plain).unwrap();
    e.finish().unwrap();
    let zst = d.path("seed.jsonl.zst");
    std::fs::write(&zst, zstd::encode_all(&plain[..], 3).unwrap()).unwrap();
    let variants = |out: &std::path::Path| summary(out)["variants"].clone();
    let base = d.path("plain");
    expect_code(
        &run(
            &[
                "replay",
                root().join("datasets/seed.jsonl").to_str().unwrap(),
                "--out",
                base.to_str().unwrap(),
                "--quiet",
            ],
            None,
        ),
        0,
    );
    for (name, input) in [("gz", gz.to_str().unwrap()), ("zst", zst.to_str().unwrap())] {
        let out = d.path(name);
        expect_code(
            &run(
                &["replay", input, "--out", out.to_str().unwrap(), "--quiet"],
                None,
            ),
            0,
        );
        assert_eq!(variants(&out), variants(&base), "{name}");
    }
    let out = d.path("stdin");
    expect_code(
        &run(
            &["replay", "-", "--out", out.to_str().unwrap(), "--quiet"],
            Some(&plain),
        ),
        0,
    );
    assert_eq!(variants(&out), variants(&base));
    assert_eq!(summary(&out)["sources"][0], "-");
}

#[test]
fn empty_input_gives_empty_reports() {
    let d = Dir::new();
    let f = d.write("empty.jsonl", "\n\n");
    let out = d.path("out");
    let o = run(
        &[
            "replay",
            f.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    let s = summary(&out);
    assert_eq!(s["turns"], 0);
    assert_eq!(s["variants"]["smart"]["skip_rate"], Value::Null);
    let decisions = std::fs::read_to_string(out.join("decisions.csv")).unwrap();
    assert_eq!(decisions.lines().count(), 1, "header only");
}

#[test]
fn group_by_adds_a_dotted_path_dimension() {
    let d = Dir::new();
    let o = replay_in(
        d.tmp.path(),
        &[
            "datasets/seed.jsonl",
            "--group-by",
            "critic.model",
            "--quiet",
        ],
    );
    expect_code(&o, 0);
    let rows = csv_rows(&d.read("segments.csv"));
    let opus = rows
        .iter()
        .find(|r| {
            r["variant"] == "smart"
                && r["dimension"] == "critic.model"
                && r["value"] == "claude-opus"
        })
        .expect("a critic.model segment");
    assert_eq!(opus["turns"], "20");
    assert!(rows
        .iter()
        .any(|r| r["dimension"] == "scope.channel" && r["value"] == "web"));
    // Every dimension's rows add up to the turns, once each.
    for dim in [
        "language",
        "intent",
        "draft_length",
        "call_site",
        "scope.channel",
        "critic.model",
    ] {
        let sum: u64 = rows
            .iter()
            .filter(|r| r["variant"] == "smart" && r["dimension"] == dim)
            .map(|r| r["turns"].parse::<u64>().unwrap())
            .sum();
        assert_eq!(sum, 20, "{dim}");
    }
}

/// `--group-by scope.channel` counted every turn again (slack 20 + web 20
/// for a 20-turn file); a dimension segments.csv already has, or a path
/// given twice, is refused; so is a path with an empty part. The input
/// exists, so exit 2 comes from the validation alone.
#[test]
fn group_by_refuses_a_dimension_that_already_exists() {
    let d = Dir::new();
    for (args, says) in [
        (
            &["--group-by", "scope.channel"][..],
            "already has this dimension",
        ),
        (
            &["--group-by", "language"][..],
            "already has this dimension",
        ),
        (&["--group-by", "scope"][..], "already has this dimension"),
        (
            &["--group-by", "critic.model", "--group-by", "critic.model"][..],
            "given twice",
        ),
        (&["--group-by", "scope..x"][..], "give a dotted path"),
    ] {
        let mut all = vec!["datasets/seed.jsonl", "--quiet"];
        all.extend_from_slice(args);
        let o = replay_in(&d.path("o"), &all);
        expect_code(&o, 2);
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert!(!d.path("o").exists(), "nothing written for {args:?}");
    }
    // A deeper path is a new dimension.
    let o = replay_in(
        &d.path("ok"),
        &[
            "datasets/seed.jsonl",
            "--quiet",
            "--group-by",
            "scope.channel.x",
        ],
    );
    expect_code(&o, 0);
}

#[test]
fn decisions_changed_keeps_only_flips() {
    let d = Dir::new();
    let o = replay_in(
        d.tmp.path(),
        &[
            "datasets/seed.jsonl",
            "--config",
            "datasets/gate.toml",
            "--decisions",
            "changed",
            "--quiet",
        ],
    );
    expect_code(&o, 0);
    let rows = csv_rows(&d.read("decisions.csv"));
    assert_eq!(rows.len(), 10);
    assert!(rows.iter().all(|r| r["fires"] != r["baseline_fires"]));
}

#[test]
fn floors_report_sole_blockers() {
    let d = Dir::new();
    let o = replay_in(
        d.tmp.path(),
        &[
            "datasets/floors.jsonl",
            "--config",
            "datasets/gate.toml",
            "--quiet",
        ],
    );
    expect_code(&o, 0);
    let rows = csv_rows(&d.read("floors.csv"));
    let get = |reason: &str| {
        rows.iter()
            .find(|r| r["variant"] == "smart" && r["reason"] == reason)
            .unwrap()
            .clone()
    };
    // "thanks yyyy…" (171 code points) is only blocked by its length.
    assert_eq!(get("too_long")["sole_blocker"], "1");
    assert_eq!(get("intent")["hits"], "3");
    let s = summary(d.tmp.path());
    assert_eq!(s["warnings"]["duplicate_turn"]["count"], 1);
    assert_eq!(
        s["warnings"]["empty_sensitive_hit"]["first"][0],
        "datasets/floors.jsonl:2"
    );
    assert_eq!(s["unknown_fields"], 24);
}

/// Set (to anything) to rewrite reports/ from datasets/ instead of
/// comparing: `CRITIC_GATE_BLESS=1 cargo test --release --test cli reports_match_datasets`.
const BLESS: &str = "CRITIC_GATE_BLESS";

/// reports/ is exactly what these replays of datasets/ write (the one list
/// of committed reports).
#[test]
fn reports_match_datasets() {
    let d = Dir::new();
    let cases: [(&str, &[&str]); 16] = [
        (
            "unlabelled",
            &[
                "datasets/unlabelled.jsonl",
                "--config",
                "datasets/gate.toml",
            ],
        ),
        (
            "unlabelled-smart-baseline",
            &[
                "datasets/unlabelled.jsonl",
                "--config",
                "datasets/gate-smart-baseline.toml",
            ],
        ),
        (
            "transcripts",
            &[
                "datasets/transcripts.jsonl",
                "--from",
                "openai-chat",
                "--config",
                "datasets/transcripts.toml",
            ],
        ),
        (
            "mine",
            &[
                "mine",
                "datasets/multilingual.jsonl",
                "--config",
                "datasets/gate.toml",
                "--stress",
            ],
        ),
        (
            "plan",
            &[
                "plan",
                "datasets/multilingual.jsonl",
                "--config",
                "datasets/gate-smart-baseline.toml",
                "--max-skip-regression-rate",
                "0.05",
                "--strata",
                "language",
                "--salt",
                "committed",
                "--days",
                "1",
            ],
        ),
        (
            "plan-watched",
            &[
                "plan",
                "datasets/watched.jsonl",
                "--config",
                "datasets/gate-smart-baseline.toml",
                "--max-skip-regression-rate",
                "0.05",
                "--strata",
                "language",
                "--salt",
                "committed",
            ],
        ),
        // After plan-watched: it reads the plan that case writes.
        (
            "monitor",
            &[
                "monitor",
                "datasets/watched.jsonl",
                "--plan",
                "reports/plan-watched/plan.toml",
                "--config",
                "datasets/gate-smart-baseline.toml",
            ],
        ),
        (
            "sweep",
            &[
                "sweep",
                "datasets/costs.jsonl",
                "datasets/fail-open.jsonl",
                "datasets/floors.jsonl",
                "datasets/invalid.jsonl",
                "datasets/multilingual.jsonl",
                "datasets/seed.jsonl",
                "datasets/threshold-0.7.jsonl",
                "--config",
                "datasets/sweep.toml",
                "--skip-invalid",
            ],
        ),
        (
            "fail-open",
            &["datasets/fail-open.jsonl", "--config", "datasets/gate.toml"],
        ),
        (
            "threshold-0.7",
            &[
                "datasets/threshold-0.7.jsonl",
                "--config",
                "datasets/gate.toml",
            ],
        ),
        (
            "threshold-0.7-matched",
            &[
                "datasets/threshold-0.7.jsonl",
                "--config",
                "datasets/gate-0.7.toml",
            ],
        ),
        (
            "costs",
            &["datasets/costs.jsonl", "--config", "datasets/gate.toml"],
        ),
        (
            "seed",
            &["datasets/seed.jsonl", "--config", "datasets/gate.toml"],
        ),
        (
            "multilingual",
            &[
                "datasets/multilingual.jsonl",
                "--config",
                "datasets/gate.toml",
            ],
        ),
        (
            "floors",
            &["datasets/floors.jsonl", "--config", "datasets/gate.toml"],
        ),
        (
            "invalid",
            &[
                "datasets/invalid.jsonl",
                "--config",
                "datasets/gate.toml",
                "--skip-invalid",
            ],
        ),
    ];
    for (name, args) in cases {
        let out = d.path(name);
        // A case runs `replay` unless it names its command.
        let mut all: Vec<&str> = match args[0] {
            "sweep" | "mine" | "plan" | "monitor" => args.to_vec(),
            _ => [&["replay"], args].concat(),
        };
        all.push("--quiet");
        let committed = root().join("reports").join(name);
        if std::env::var_os(BLESS).is_some() {
            // Written anew: a file no longer written must not stay.
            let _ = std::fs::remove_dir_all(&committed);
            expect_code(&run_in(&committed, &all), 0);
            continue;
        }
        expect_code(&run_in(&out, &all), 0);
        let files = files_in(&committed);
        assert_eq!(files, files_in(&out), "{name}: file list");
        for f in files {
            let a = std::fs::read(committed.join(&f)).unwrap();
            let b = std::fs::read(out.join(&f)).unwrap();
            assert!(
                a == b,
                "reports/{name}/{f} drifted: if the change is intended, rewrite reports/ with {BLESS}=1 (see this test)"
            );
        }
    }
}

/// Every file of a folder with its bytes, by name.
fn snapshot(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let v: Vec<_> = files_in(dir)
        .into_iter()
        .map(|name| {
            let bytes = std::fs::read(dir.join(&name)).unwrap();
            (name, bytes)
        })
        .collect();
    v
}

#[test]
fn a_failed_run_leaves_the_earlier_report_as_it_was() {
    let d = Dir::new();
    let out = d.path("out");
    expect_code(&replay_in(&out, &["datasets/seed.jsonl", "--quiet"]), 0);
    let before = snapshot(&out);
    assert!(before.iter().any(|(n, _)| n == "summary.json"));
    let bad = d.write(
        "bad.jsonl",
        "{\"run_id\":\"r\",\"draft\":\"ok\"}\nnot json\n",
    );
    let o = replay_in(&out, &[bad.to_str().unwrap(), "--quiet"]);
    expect_code(&o, 2);
    assert!(
        stderr(&o).contains(":2: invalid JSON at column 2"),
        "{}",
        stderr(&o)
    );
    assert!(before == snapshot(&out), "the earlier report changed");
}

/// A recorded value spelled like one of the tool's own labels (`(none)`
/// for "not recorded", `(other)` for folded rows) was counted together
/// with them; now it is its own row, written in double quotes.
#[test]
fn a_recorded_value_spelled_like_a_label_is_kept_apart() {
    let d = Dir::new();
    let input = d.write(
        "t.jsonl",
        concat!(
            "{\"run_id\": \"a\", \"turn\": 0, \"draft\": \"ok\", \"language\": \"(none)\", \"intent_verdict\": {\"label\": \"(other)\", \"confidence\": 0.9}, \"scope\": {\"tenant\": \"(none)\"}}\n",
            "{\"run_id\": \"b\", \"turn\": 0, \"draft\": \"ok\"}\n",
        ),
    );
    let out = d.path("o");
    expect_code(&replay_in(&out, &[input.to_str().unwrap(), "--quiet"]), 0);
    let rows = csv_rows(&std::fs::read_to_string(out.join("segments.csv")).unwrap());
    let turns = |dim: &str, value: &str| -> Vec<String> {
        rows.iter()
            .filter(|r| r["variant"] == "legacy" && r["dimension"] == dim && r["value"] == value)
            .map(|r| r["turns"].clone())
            .collect()
    };
    assert_eq!(turns("language", "(none)"), vec!["1"]);
    assert_eq!(turns("language", "\"(none)\""), vec!["1"]);
    assert_eq!(turns("intent", "\"(other)\""), vec!["1"]);
    assert_eq!(turns("scope.tenant", "\"(none)\""), vec!["1"]);
    // The turn without a scope: in the (none) row, apart from the recorded
    // "(none)".
    assert_eq!(turns("scope.tenant", "(none)"), vec!["1"]);
}

/// Scope keys that cannot be columns are named in a note.
#[test]
fn unusable_scope_keys_are_noted() {
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

/// Every dimension of segments.csv adds up to the run's turns: turns
/// without a scope key are in its `(none)` row.
#[test]
fn every_segment_dimension_adds_up() {
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

/// Column names say what they count, and a decision is one type.
#[test]
fn names_and_types() {
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

/// A scope of very many keys: past the cap a run has no scope
/// dimensions (which could not add up), and says so; a run under it keeps
/// every one.
#[test]
fn scope_dimensions_are_capped_and_noted() {
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

/// An error message with stderr closed panicked; the exit code stays 2.
#[test]
fn an_error_with_stderr_closed_still_exits_2() {
    let code = run_with_closed(
        &["replay", "/nonexistent.jsonl", "--out", "/tmp/never"],
        true,
    );
    assert_eq!(code, Some(2));
}

/// `--threads 100000` started 15,735 threads and hung the machine.
#[test]
fn thread_counts_beyond_four_per_core_are_refused() {
    let d = Dir::new();
    for n in ["100000", "0"] {
        let o = replay_in(&d.path("o"), &["datasets/seed.jsonl", "--threads", n]);
        expect_error(&o, 2, &format!("--threads {n}: give 1 to "));
    }
    let cores = std::thread::available_parallelism().unwrap().get();
    let max = (4 * cores).to_string();
    let o = replay_in(
        &d.path("o"),
        &["datasets/seed.jsonl", "--threads", &max, "--quiet"],
    );
    expect_code(&o, 0);
}

/// `replay d/summary.json --out d` replaced its own input.
#[test]
fn an_output_folder_holding_an_input_is_refused() {
    let d = Dir::new();
    let input = d.write("d/traffic.jsonl", "{\"run_id\":\"r\",\"draft\":\"ok\"}\n");
    let before = std::fs::read(&input).unwrap();
    let o = run(
        &[
            "replay",
            input.to_str().unwrap(),
            "--out",
            d.path("d").to_str().unwrap(),
            "--force",
        ],
        None,
    );
    expect_error(&o, 2, "contains the input");
    assert_eq!(std::fs::read(&input).unwrap(), before);
    assert_eq!(std::fs::read_dir(d.path("d")).unwrap().count(), 1);
}

/// SIGINT and SIGTERM left `.critic-gate-partial-PID` folders behind.
#[cfg(unix)]
#[test]
fn a_signal_removes_the_staging_folder_and_exits_128_plus_the_signal() {
    for (signal, code) in [("-INT", 130), ("-TERM", 143)] {
        let d = Dir::new();
        let out = d.path("new");
        // Reading a stdin that stays open: the run waits with its staging
        // folder in place.
        let mut child = cmd()
            .args(["replay", "-", "--out", out.to_str().unwrap(), "--quiet"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let status = signal_when(&mut child, || !staging_folders(&out).is_empty(), signal);
        assert_eq!(status, Some(code), "{signal}");
        assert!(
            !out.exists(),
            "{signal}: the folder this run created is gone; it holds {:?}",
            files_in(&out)
        );
    }
}

/// SIGKILL cannot be caught: the next run into the folder removes the
/// staging folders of dead processes (and only those).
#[test]
fn the_next_run_removes_staging_folders_of_dead_processes() {
    let d = Dir::new();
    let out = d.path("r");
    expect_code(&replay_in(&out, &["datasets/seed.jsonl", "--quiet"]), 0);
    let dead = out.join(".critic-gate-partial-4000000000");
    std::fs::create_dir(&dead).unwrap();
    std::fs::write(dead.join("decisions.csv"), "x".repeat(1000)).unwrap();
    let alive = out.join(format!(".critic-gate-partial-{}", std::process::id()));
    std::fs::create_dir(&alive).unwrap();
    expect_code(&replay_in(&out, &["datasets/seed.jsonl", "--quiet"]), 0);
    assert_eq!(
        staging_folders(&out),
        vec![format!(".critic-gate-partial-{}", std::process::id())]
    );
}

/// 2,100 turns with `reflection_tokens_in: 8999999999999999` wrapped
/// `saved_tokens_in`; a latency of 1.797e308 ms clamped `saved_latency_ms`.
/// Values past the documented bounds are invalid lines now.
#[test]
fn values_a_tally_cannot_hold_are_invalid_lines() {
    let d = Dir::new();
    let line =
        |critic: &str| format!("{{\"run_id\":\"r\",\"draft\":\"ok\",\"critic\":{critic}}}\n");
    let tokens = line(
        r#"{"verdict":"approve","reflection_tokens_in":8999999999999999,"reflection_tokens_out":1}"#,
    );
    let latency = line(r#"{"verdict":"approve","reflection_latency_ms":1.797e308}"#);
    for (text, says) in [
        (
            tokens.repeat(2100),
            "critic.reflection_tokens_in must be a whole number from 0 to 1000000000, got 8999999999999999",
        ),
        (
            latency.clone(),
            "critic.reflection_latency_ms must be a number of ms from 0 to 86400000 (one day), got 1.797e308",
        ),
    ] {
        let input = d.write("t.jsonl", &text);
        let o = replay_in(&d.path("o"), &[input.to_str().unwrap()]);
        expect_error(&o, 2, &format!("t.jsonl:1: {says}"));
    }
    let input = d.write("t.jsonl", tokens.repeat(2100));
    let out = d.path("skip");
    expect_code(
        &replay_in(
            &out,
            &[input.to_str().unwrap(), "--skip-invalid", "--quiet"],
        ),
        0,
    );
    let s = summary(&out);
    assert_eq!(
        (s["turns"].clone(), s["rejected"].clone()),
        (0.into(), 2100.into())
    );
    // At the bounds, the values are valid and summed exactly.
    let input = d.write(
        "max.jsonl",
        line(r#"{"verdict":"approve","reflection_tokens_in":1000000000,"reflection_tokens_out":0,"reflection_latency_ms":86400000}"#)
            .repeat(3),
    );
    let out = d.path("max");
    expect_code(&replay_in(&out, &[input.to_str().unwrap(), "--quiet"]), 0);
    assert_eq!(summary(&out)["turns"], 3);
}

/// No line-length cap: one 1 GB line took 55 s and 3.16 GB, and its whole
/// text went to rejects.jsonl.
#[test]
fn a_line_past_max_line_bytes_is_rejected_with_a_prefix() {
    let d = Dir::new();
    let long = format!(
        "{{\"run_id\":\"r\",\"draft\":\"{}\"}}",
        "x".repeat(2_000_000)
    );
    let ok = "{\"run_id\":\"r\",\"draft\":\"ok\"}";
    let input = d.write("t.jsonl", format!("{ok}\n{long}\n{ok}\n"));
    let args = |extra: &'static str| {
        vec![
            input.to_str().unwrap().to_string(),
            "--max-line-bytes".into(),
            "100000".into(),
            extra.into(),
        ]
    };
    let a = args("--quiet");
    let o = replay_in(
        &d.path("strict"),
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    expect_code(&o, 2);
    let says = format!(
        "t.jsonl:2: the line is {} bytes, longer than --max-line-bytes 100000",
        long.len()
    );
    assert!(stderr(&o).contains(&says), "{}", stderr(&o));
    let out = d.path("skip");
    let a = args("--skip-invalid");
    expect_code(
        &replay_in(&out, &a.iter().map(String::as_str).collect::<Vec<_>>()),
        0,
    );
    let s = summary(&out);
    assert_eq!(
        (
            s["turns"].clone(),
            s["rejected"].clone(),
            s["lines"].clone()
        ),
        (2.into(), 1.into(), 3.into())
    );
    let r = rejects(&out).remove(0);
    assert_eq!(r["line"], 2);
    let raw = r["raw"].as_str().unwrap();
    assert_eq!(
        raw.chars().count(),
        4096 + 1,
        "the first 4 KiB and an ellipsis"
    );
    assert!(raw.ends_with('…'));
}

/// A form-feed-only line was silently dropped from `lines` while a
/// vertical-tab-only line was rejected: only JSON whitespace is blank.
#[test]
fn only_json_whitespace_makes_a_blank_line() {
    let d = Dir::new();
    let input = d.write(
        "ws.jsonl",
        "{\"run_id\":\"r\",\"draft\":\"ok\"}\n \t\r\n\x0c\n\x0b\n",
    );
    let out = d.path("o");
    expect_code(
        &replay_in(
            &out,
            &[input.to_str().unwrap(), "--skip-invalid", "--quiet"],
        ),
        0,
    );
    let s = summary(&out);
    assert_eq!(
        (
            s["lines"].clone(),
            s["turns"].clone(),
            s["rejected"].clone()
        ),
        (3.into(), 1.into(), 2.into())
    );
}

/// `\ud800`, `1e400` and deep nesting were accepted in `scope` and in
/// unknown fields but rejected everywhere else.
#[test]
fn scope_and_unknown_fields_are_held_to_the_same_rules() {
    let d = Dir::new();
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    let lines = [
        r#"{"run_id":"r","draft":"\ud800"}"#.to_string(),
        r#"{"run_id":"r","draft":"ok","scope":{"a":"\ud800"}}"#.to_string(),
        r#"{"run_id":"r","draft":"ok","extra":"\ud800"}"#.to_string(),
        r#"{"run_id":"r","draft":"ok","scope":{"a":1e400}}"#.to_string(),
        r#"{"run_id":"r","draft":"ok","extra":1e400}"#.to_string(),
        format!(r#"{{"run_id":"r","draft":"ok","scope":{deep}}}"#),
        format!(r#"{{"run_id":"r","draft":"ok","extra":{deep}}}"#),
        r#"{"run_id":"r","draft":"ok","scope":{"a":"\ud83d\ude00"},"extra":[1e300]}"#.to_string(),
    ];
    let input = d.write("t.jsonl", lines.join("\n") + "\n");
    let out = d.path("o");
    expect_code(
        &replay_in(
            &out,
            &[input.to_str().unwrap(), "--skip-invalid", "--quiet"],
        ),
        0,
    );
    let s = summary(&out);
    assert_eq!(
        (s["turns"].clone(), s["rejected"].clone()),
        (1.into(), 7.into())
    );
}

/// rejects.jsonl stored a lossy `raw` for bytes that are not UTF-8.
#[test]
fn a_line_that_is_not_utf8_keeps_its_exact_bytes_in_rejects() {
    let d = Dir::new();
    let input = d.write(
        "t.jsonl",
        b"{\"run_id\":\"bad\",\"draft\":\"\xff\xfe not utf-8\"}\n",
    );
    let out = d.path("o");
    expect_code(
        &replay_in(
            &out,
            &[input.to_str().unwrap(), "--skip-invalid", "--quiet"],
        ),
        0,
    );
    let r = rejects(&out).remove(0);
    // Python: base64.b64encode(the line's bytes).
    assert_eq!(
        r["raw_base64"],
        "eyJydW5faWQiOiJiYWQiLCJkcmFmdCI6Iv/+IG5vdCB1dGYtOCJ9"
    );
    assert!(r["raw"].as_str().unwrap().contains('\u{fffd}'));
}

/// A broken compressed stream was reported "after line 0" when thousands
/// of lines had been read from it.
#[test]
fn a_broken_gzip_stream_names_the_last_whole_line() {
    use std::io::{Read, Write};
    let d = Dir::new();
    // Incompressible lines, so the cut falls well inside the text.
    let mut x: u64 = 7;
    let mut text = String::new();
    for i in 0..20_000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        text.push_str(&format!(
            "{{\"run_id\":\"r{i}\",\"draft\":\"{x:016x}{:016x}\"}}\n",
            x.rotate_left(17)
        ));
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(text.as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    let cut = &gz[..gz.len() * 2 / 3];
    let input = d.write("t.jsonl.gz", cut);
    // The whole lines a gzip reader gets out of the cut stream.
    let mut got = Vec::new();
    let _ = flate2::read::GzDecoder::new(cut).read_to_end(&mut got);
    let whole = got.iter().filter(|&&b| b == b'\n').count();
    assert!(whole > 1000);
    let o = replay_in(&d.path("o"), &[input.to_str().unwrap()]);
    expect_code(&o, 2);
    assert!(
        stderr(&o).contains(&format!("t.jsonl.gz: read error after line {whole}:")),
        "{whole}: {}",
        stderr(&o)
    );
}

/// Duplicate `(run_id, turn)` pairs hid a new safety regression from
/// `diff --fail-on-new-regressions`; the same file under another path was
/// "different traffic"; a side that kept no turns compared 0 rows, exit 0.
#[test]
fn diff_matches_turns_by_line_and_sees_the_same_bytes_as_the_same_traffic() {
    let d = Dir::new();
    let dup = d.write(
        "dup.jsonl",
        "{\"run_id\":\"r\",\"turn\":0,\"draft\":\"ok\",\"critic\":{\"verdict\":\"revise\",\"reflection_tokens_in\":10,\"reflection_tokens_out\":1}}\n\
         {\"run_id\":\"r\",\"turn\":0,\"draft\":\"thanks\",\"critic\":{\"verdict\":\"revise\",\"reflection_tokens_in\":10,\"reflection_tokens_out\":1}}\n",
    );
    let cfg = |name: &str, pattern: &str| {
        d.write(
            name,
            format!("metacognition_trivial_ack_patterns = [\"{pattern}\"]\n[variants.legacy]\nmetacognition_selective_gate = false\n[variants.smart]\nmetacognition_selective_gate = true\n"),
        )
    };
    let (pb, pa) = (cfg("pb.toml", "^ok$"), cfg("pa.toml", "^thanks$"));
    // The new replay reads the same file through another path.
    let other_path = format!(
        "{}/../{}/dup.jsonl",
        d.tmp.path().display(),
        d.tmp.path().file_name().unwrap().to_string_lossy()
    );
    for (out, input, c) in [
        ("old", dup.to_str().unwrap().to_string(), &pb),
        ("new", other_path, &pa),
    ] {
        let o = run(
            &[
                "replay",
                &input,
                "--config",
                c.to_str().unwrap(),
                "--out",
                d.path(out).to_str().unwrap(),
                "--quiet",
            ],
            None,
        );
        expect_code(&o, 0);
    }
    let o = run(
        &[
            "diff",
            d.path("old").to_str().unwrap(),
            d.path("new").to_str().unwrap(),
            "--fail-on-new-regressions",
        ],
        None,
    );
    expect_code(&o, 1);
    assert!(
        stdout(&o).contains("2 turns flipped, 1 with a new safety regression"),
        "{}",
        stdout(&o)
    );
    // The same traffic, but one side kept no turns.
    let o = run(
        &[
            "replay",
            dup.to_str().unwrap(),
            "--skip-invalid",
            "--max-line-bytes",
            "50",
            "--out",
            d.path("none").to_str().unwrap(),
            "--quiet",
        ],
        None,
    );
    expect_code(&o, 0);
    let o = run(
        &[
            "diff",
            d.path("old").to_str().unwrap(),
            d.path("none").to_str().unwrap(),
        ],
        None,
    );
    expect_error(&o, 2, "kept different turns (2 in");
}

/// `--max-line-bytes 0` was taken as 1; a rejected long line was cut in
/// the middle of a character, and short ones got a `…` although nothing
/// was cut.
#[test]
fn overlong_lines_keep_whole_characters_and_the_limit_is_at_least_one() {
    let d = Dir::new();
    let o = replay_in(
        &d.path("z"),
        &["datasets/seed.jsonl", "--max-line-bytes", "0"],
    );
    expect_error(&o, 2, "invalid value '0' for '--max-line-bytes");
    let long = format!("{{\"run_id\":\"r\",\"draft\":\"{}\"}}", "€".repeat(3000));
    let input = d.write("t.jsonl", format!("{long}\n"));
    let out = d.path("o");
    let args = [
        input.to_str().unwrap(),
        "--skip-invalid",
        "--max-line-bytes",
        "100",
        "--quiet",
    ];
    expect_code(&replay_in(&out, &args), 0);
    let r = rejects(&out).remove(0);
    let raw = r["raw"].as_str().unwrap();
    assert!(!raw.contains('\u{fffd}') && raw.ends_with("€…"), "{raw}");
    // A line past a small limit but shorter than the prefix is kept whole.
    let input = d.write("s.jsonl", "{\"run_id\":\"r\",\"draft\":\"hello there\"}\n");
    let out = d.path("s");
    let args = [
        input.to_str().unwrap(),
        "--skip-invalid",
        "--max-line-bytes",
        "10",
        "--quiet",
    ];
    expect_code(&replay_in(&out, &args), 0);
    let r = rejects(&out).remove(0);
    assert_eq!(r["raw"], "{\"run_id\":\"r\",\"draft\":\"hello there\"}");
}

/// Tool calls recorded as plain strings (`["search_docs"]`) fire the
/// mutating-tool floor, even for a read-only tool: warned like a call
/// without a `name`.
#[test]
fn a_tool_call_that_is_not_an_object_is_warned_about() {
    let d = Dir::new();
    let input = d.write(
        "t.jsonl",
        "{\"run_id\":\"r\",\"draft\":\"ok\",\"tool_calls_this_turn\":[\"search_docs\"]}\n",
    );
    let out = d.path("o");
    expect_code(&replay_in(&out, &[input.to_str().unwrap(), "--quiet"]), 0);
    assert_eq!(
        summary(&out)["warnings"]["tool_call_without_name"]["count"],
        1
    );
}

/// With no token or latency fields in any event, smart's 10 saved calls
/// showed `saved_usd` 0.0 and a critic-latency p95 of 0 ms.
#[test]
fn sums_and_percentiles_of_nothing_measured_are_absent_with_a_note() {
    let d = Dir::new();
    let seed = std::fs::read_to_string(root().join("datasets/seed.jsonl")).unwrap();
    let mut stripped = String::new();
    for line in seed.lines() {
        let mut t: serde_json::Value = serde_json::from_str(line).unwrap();
        let c = t["critic"].as_object_mut().unwrap();
        for k in [
            "reflection_tokens_in",
            "reflection_tokens_out",
            "reflection_latency_ms",
        ] {
            c.remove(k);
        }
        stripped.push_str(&t.to_string());
        stripped.push('\n');
    }
    let input = d.write("t.jsonl", stripped);
    let out = d.path("o");
    let args = [
        input.to_str().unwrap(),
        "--config",
        "datasets/gate.toml",
        "--quiet",
    ];
    expect_code(&replay_in(&out, &args), 0);
    let s = summary(&out);
    let smart = &s["variants"]["smart"];
    assert_eq!(smart["saved_calls"], 10);
    for k in [
        "saved_usd",
        "net_usd",
        "saved_tokens_in",
        "saved_latency_ms",
        "critic_latency_p95_ms",
    ] {
        assert!(smart[k].is_null(), "{k}: {}", smart[k]);
    }
    let notes = s["notes"].to_string();
    assert!(
        notes.contains("none of its 10 saved calls recorded token counts"),
        "{notes}"
    );
    assert!(
        notes.contains("user-facing fires recorded a latency"),
        "{notes}"
    );
}

#[test]
fn the_run_label_is_never_empty_and_dot_is_named_by_its_folder() {
    let d = Dir::new();
    let seed = root().join("datasets/seed.jsonl");
    let o = run(
        &[
            "replay",
            seed.to_str().unwrap(),
            "--out",
            d.path("l").to_str().unwrap(),
            "--label",
            "",
        ],
        None,
    );
    expect_error(&o, 2, "give a non-empty name");
    let here = d.path("nightly");
    std::fs::create_dir(&here).unwrap();
    let o = cmd()
        .current_dir(&here)
        .args(["replay", seed.to_str().unwrap(), "--out", ".", "--quiet"])
        .output()
        .unwrap();
    expect_code(&o, 0);
    assert_eq!(summary(&here)["run"], "nightly");
}

#[test]
fn an_empty_text_is_written_as_empty_text_not_as_a_missing_value() {
    let d = Dir::new();
    let traffic = d.path("t.jsonl");
    std::fs::write(
        &traffic,
        "{\"run_id\": \"\", \"turn\": 1, \"draft\": \"ok\", \"language\": \"\", \"sensitive_hit\": \"\"}\n{\"run_id\": \"r\", \"draft\": \"ok\"}\n",
    )
    .unwrap();
    let out = d.path("o");
    expect_code(&replay_in(&out, &[traffic.to_str().unwrap(), "--quiet"]), 0);
    let rows = std::fs::read_to_string(out.join("decisions.csv")).unwrap();
    let lines: Vec<&str> = rows.lines().collect();
    // run_id and language recorded as "": quoted; turn, scope, intent and
    // verdict absent: bare empty fields.
    assert!(lines[1].contains(",1,\"\",1,,,,legacy,"), "{}", lines[1]);
    assert!(lines[1].contains(",\"\",,,2,"), "{}", lines[1]);
    assert!(lines[3].contains(",r,,,,,legacy,"), "{}", lines[3]);
    assert!(lines[3].contains(",,,,2,"), "{}", lines[3]);
}

/// A bad top-level value was blamed on "variant legacy", a variant the
/// config never wrote, and no error of a config's values named the file.
/// Each names the file, then the key (and the variant only when the
/// variant sets it).
#[test]
fn config_value_errors_name_the_file_the_line_and_the_key() {
    let d = Dir::new();
    for (text, says) in [
        (
            "metacognition_confidence_threshold = 1.5\n",
            "shared.toml:1: metacognition_confidence_threshold must be in [0, 1]",
        ),
        (
            "[variants.a]\nmetacognition_confidence_threshold = 2\n",
            "shared.toml:2: variant a: metacognition_confidence_threshold must be in [0, 1]",
        ),
        (
            "[deployment]\nfabrication_refuse_min_confidence = 3\n",
            "shared.toml:2: deployment.fabrication_refuse_min_confidence must be in [0, 1]",
        ),
        (
            "baseline = \"nope\"\n",
            "shared.toml:1: baseline \"nope\" is not a variant",
        ),
        // A top-level list is the smart variant's to use, not legacy's,
        // and its line is the top level's.
        (
            "read_only_tools = []\nmetacognition_trivial_ack_patterns = [\"ok\", \"(oops\"]\n",
            "shared.toml:2: variant smart: metacognition_trivial_ack_patterns[1] = \"(oops\" cannot be compiled",
        ),
        (
            "[variants.a]\nmetacognition_selective_gate = true\nmetacognition_trivial_ack_patterns = [\"(oops\"]\n",
            "shared.toml:3: variant a: metacognition_trivial_ack_patterns[0] = \"(oops\" cannot be compiled",
        ),
    ] {
        let cfg = d.write("shared.toml", text);
        let out = d.path("out");
        let o = run(
            &[
                "replay",
                "datasets/seed.jsonl",
                "--config",
                cfg.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
            None,
        );
        expect_error(&o, 2, says);
        assert!(!stderr(&o).contains("variant legacy"), "{}", stderr(&o));
    }
}

/// Every command's help has an example, its exit codes and where the
/// reference is.
#[test]
fn every_commands_help_has_an_example_and_the_exit_codes() {
    let commands = [
        "replay",
        "sweep",
        "calibrate",
        "mine",
        "check",
        "diff",
        "explain",
        "derive",
        "import",
        "merge",
        "synth",
        "init",
        "patterns",
    ];
    for c in commands {
        let o = run(&[c, "--help"], None);
        expect_code(&o, 0);
        let h = stdout(&o);
        assert!(
            h.contains(&format!("critic-gate {c}")),
            "{c}: no example:\n{h}"
        );
        assert!(h.contains("Exit codes: 0"), "{c}: no exit codes:\n{h}");
        assert!(h.contains("Reference: docs/"), "{c}: no docs:\n{h}");
    }
    let top = stdout(&run(&["--help"], None));
    for c in commands {
        assert!(
            top.contains(&format!("  {c}")),
            "{c} missing from --help:\n{top}"
        );
    }
    assert!(top.contains("critic-gate init"), "{top}");
}

/// report.md opens with a bottom line per candidate and, on traffic too
/// small to conclude anything, says how many labels it would take; on
/// enough traffic, no such warning.
#[test]
fn report_md_opens_with_a_bottom_line_and_a_small_sample_warning() {
    let md = std::fs::read_to_string(root().join("reports/seed/report.md")).unwrap();
    let bottom = md.find("## Bottom line").expect("a bottom line");
    assert!(bottom < md.find("## Every variant").unwrap());
    assert!(
        md.contains("- **`smart`** instead of `legacy`: saves 10 critic calls (50.0% of `legacy`'s) and adds 0 over 20 turns, $0.48 net; of its 10 new skips (turns `legacy` fires on), 10 have a critic verdict and the critic revised or refused 1"),
        "{md}"
    );
    assert!(
        md.contains("**Too few labels to conclude.** `smart` has 10 labelled new skips"),
        "{md}"
    );
    assert!(
        md.contains("takes at least 59 in as many effective runs, and about 591 runs like these for an 80% chance of it at a true rate of 2.5%"),
        "{md}"
    );
    // 2,000 synthetic turns have hundreds of labelled skips: no warning.
    let d = Dir::new();
    let t = synth(&d, "t.jsonl", 2000, 3);
    let out = d.path("r");
    expect_code(&replay_in(&out, &[t.to_str().unwrap(), "--quiet"]), 0);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## Bottom line"), "{md}");
    assert!(!md.contains("Too few labels"), "{md}");
}

/// A price note says exactly which dollar figures are missing: a run
/// whose unpriced model only reviewed fired turns still reports its
/// saved dollars.
#[test]
fn the_price_note_does_not_contradict_the_dollars() {
    let d = Dir::new();
    let cfg = d.write(
        "c.toml",
        "[cost]\ndefault_model = \"opus\"\n[cost.models.opus]\nusd_per_mtok_in = 15.0\nusd_per_mtok_out = 75.0\n",
    );
    let ev = |model: &str, verdict: &str| {
        format!("{{\"verdict\":\"{verdict}\",\"model\":\"{model}\",\"reflection_tokens_in\":1000,\"reflection_tokens_out\":100,\"reflection_latency_ms\":900}}")
    };
    let lines = [
        format!("{{\"run_id\":\"a\",\"draft\":\"Got it, thanks!\",\"critic\":{}}}", ev("opus", "approve")),
        format!("{{\"run_id\":\"b\",\"draft\":\"Your order 1234 shipped on May 3 and arrives Friday.\",\"critic\":{}}}", ev("haiku", "approve")),
    ];
    let t = d.write("t.jsonl", lines.join("\n") + "\n");
    let out = d.path("r");
    let o = replay_in(
        &out,
        &[t.to_str().unwrap(), "--config", cfg.to_str().unwrap()],
    );
    expect_code(&o, 0);
    let s = summary(&out);
    assert!(
        s["variants"]["smart"]["saved_usd"].as_f64().is_some(),
        "{s}"
    );
    let note = s["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .find(|n| n.starts_with("no price for critic model(s) \"haiku\""))
        .unwrap_or_else(|| panic!("{s}"))
        .to_string();
    assert!(note.contains("figures without them are"), "{note}");
    assert!(!note.ends_with("dollars are not reported"), "{note}");
}

#[test]
fn no_label_reads_as_unknown_and_risky_skips_show_beside_regressions() {
    let md = committed("unlabelled/report.md");
    for says in [
        "whether its new skips (turns `legacy` fires on) let out replies the critic would change is unknown: none of its 7 new skips has a recorded critic verdict",
        "4 skips are risky",
        "| `smart` | 70.0% | 2 | 7 (77.8%) | 0 | n/a | n/a | unknown, no labels (n/a) | 100.0% | 4 |",
        "Unknown: no skip of a candidate has a recorded critic verdict",
        "**Risky skips: 4.**",
    ] {
        assert!(md.contains(says), "{says}\n{md}");
    }
    assert!(!md.contains("None: no skipped turn"), "{md}");
    assert!(!md.contains("skipped 0 turns the critic revised"), "{md}");
    let d = Dir::new();
    let o = replay_in(
        &d.path("r"),
        &[
            "datasets/unlabelled.jsonl",
            "--config",
            "datasets/gate.toml",
        ],
    );
    expect_code(&o, 0);
    let err = stderr(&o);
    for says in [
        "saved calls       7 (77.8% of legacy's calls)",
        "regressions unknown (none of its 7 new skips on turns legacy fires on has a recorded critic verdict), 4 risky skips",
        "1 fire is on an empty draft: no critic runs there (symfonic reviews no empty reply), so 9 critic calls",
    ] {
        assert!(err.contains(says), "{says}\n{err}");
    }
}

#[test]
fn a_fire_on_an_empty_draft_is_no_critic_call() {
    let s: Value = serde_json::from_str(&committed("unlabelled/summary.json")).unwrap();
    let (legacy, smart) = (&s["variants"]["legacy"], &s["variants"]["smart"]);
    assert_eq!(
        (legacy["fires"].as_u64(), legacy["critic_calls"].as_u64()),
        (Some(10), Some(9))
    );
    assert_eq!(legacy["fires_without_critic"], 1);
    assert_eq!(smart["fires_without_critic"], 1);
    // The smart gate saves 7 of legacy's 9 calls: 77.8% of its calls, 70%
    // of the turns.
    assert_eq!(smart["saved_calls"], 7);
    assert!((smart["saved_call_share"].as_f64().unwrap() - 7.0 / 9.0).abs() < 1e-6);
    assert!(legacy["saved_call_share"].is_null());
    // A legacy variant of another threshold "skipping" an empty draft the
    // baseline fires on saves no call: the sweep's threshold-0.5 points.
    let sweep: Value = serde_json::from_str(&committed("sweep/summary.json")).unwrap();
    let base = &sweep["variants"]["legacy"];
    for (name, v) in sweep["variants"].as_object().unwrap() {
        assert!(
            v["saved_calls"].as_u64() <= base["critic_calls"].as_u64(),
            "{name}: {} saved of {} calls",
            v["saved_calls"],
            base["critic_calls"]
        );
    }
}

#[test]
fn notes_fit_a_smart_baseline() {
    let md = committed("unlabelled-smart-baseline/report.md");
    assert!(
        md.contains("the baseline's smart gate does not read confidence"),
        "{md}"
    );
    assert!(!md.contains("(the baseline smart's is"), "{md}");
}
