//! `critic-gate replay` on the committed datasets and on edge inputs.

use std::collections::HashMap;
use std::io::Write;

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
    let cases: [(&str, &[&str]); 13] = [
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
            "sweep" | "mine" => args.to_vec(),
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
