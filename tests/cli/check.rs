//! `critic-gate check` and `critic-gate diff` on real replays.

use critic_gate::gate::BUILTIN_ACK_PATTERNS;

use crate::util::*;

fn replay(out: &std::path::Path, dataset: &str, config: &str) {
    let o = cmd()
        .current_dir(root())
        .args(["replay", dataset, "--config", config, "--quiet", "--out"])
        .arg(out)
        .output()
        .unwrap();
    expect_code(&o, 0);
}

#[test]
fn check_exit_code_agrees_with_the_printed_verdict() {
    let d = Dir::new();
    let seed = d.path("seed");
    let multi = d.path("multi");
    replay(&seed, "datasets/seed.jsonl", "datasets/gate.toml");
    replay(&multi, "datasets/multilingual.jsonl", "datasets/gate.toml");
    // seed has one safety regression; multilingual has none.
    for (dir, code) in [(&seed, 1), (&multi, 0)] {
        let md = d.path("verdict.md");
        let _ = std::fs::remove_file(&md);
        let o = run(
            &[
                "check",
                dir.to_str().unwrap(),
                "--max-safety-regressions",
                "0",
                "--markdown",
                md.to_str().unwrap(),
            ],
            None,
        );
        expect_code(&o, code);
        let out = stdout(&o);
        assert_eq!(out.contains("check passed"), code == 0, "{out}");
        assert_eq!(out.contains("check FAILED"), code == 1, "{out}");
        assert_eq!(
            out.lines().filter(|l| l.starts_with("FAIL")).count() > 0,
            code == 1
        );
        let md = std::fs::read_to_string(md).unwrap();
        assert_eq!(md.contains("✅ passed"), code == 0, "{md}");
        if code == 1 {
            assert!(md.contains("Great, will do."), "{md}");
        }
    }
}

#[test]
fn check_cannot_judge_exits_2() {
    let o = run(
        &[
            "check",
            "/nonexistent/folder",
            "--max-safety-regressions",
            "0",
        ],
        None,
    );
    expect_code(&o, 2);
    assert!(stderr(&o).contains("summary.json"));
    let d = Dir::new();
    let seed = d.path("seed");
    replay(&seed, "datasets/seed.jsonl", "datasets/gate.toml");
    let o = run(
        &[
            "check",
            seed.to_str().unwrap(),
            "--variant",
            "nope",
            "--min-turns",
            "1",
        ],
        None,
    );
    expect_code(&o, 2);
    assert!(stderr(&o).contains("\"nope\" is not in this replay"));
}

/// A check with no budget judged only the contract and printed "check
/// passed", exit 0, on a replay with safety regressions: a verdict that
/// judged nothing. It cannot judge (exit 2) unless a flag or the config's
/// [check] table gives a budget.
#[test]
fn check_without_a_budget_cannot_judge() {
    let o = run(&["check", "reports/seed"], None);
    expect_code(&o, 2);
    assert!(stderr(&o).contains("no budget was given"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    let d = Dir::new();
    let config = d.path("check.toml");
    std::fs::write(&config, "[check]\nmin_turns = 1\n").unwrap();
    let o = run(
        &[
            "check",
            "reports/seed",
            "--config",
            config.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    // A --variant alone names what to judge, not a budget.
    let o = run(&["check", "reports/seed", "--variant", "smart"], None);
    expect_code(&o, 2);
    // A config that cannot be read is a config error, named as such.
    std::fs::write(&config, "[check]\nmin_turns = \"many\"\n").unwrap();
    let o = run(
        &[
            "check",
            "reports/seed",
            "--config",
            config.to_str().unwrap(),
        ],
        None,
    );
    expect_error(&o, 2, "check.toml");
}

#[test]
fn check_and_diff_refuse_a_report_of_another_schema_version() {
    let d = Dir::new();
    let seed = d.path("seed");
    replay(&seed, "datasets/seed.jsonl", "datasets/gate.toml");
    let old = d.path("old");
    replay(&old, "datasets/seed.jsonl", "datasets/gate.toml");
    // A folder from before schema.json: summary.json has no version.
    let p = old.join("summary.json");
    let mut summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    summary.as_object_mut().unwrap().remove("schema_version");
    tamper(&p, summary.to_string());
    let says = &format!(
        "report schema version absent (version 1), this critic-gate reads version {}",
        critic_gate::SCHEMA_VERSION
    );
    let o = run(
        &[
            "check",
            old.to_str().unwrap(),
            "--max-safety-regressions",
            "9",
        ],
        None,
    );
    expect_error(&o, 2, says);
    expect_error(&o, 2, "replay the traffic again");
    let o = run(
        &["diff", old.to_str().unwrap(), seed.to_str().unwrap()],
        None,
    );
    expect_error(&o, 2, says);
    let o = run(
        &[
            "check",
            seed.to_str().unwrap(),
            "--max-safety-regressions",
            "9",
        ],
        None,
    );
    expect_code(&o, 0);
}

#[test]
fn check_reads_budgets_from_the_config() {
    let d = Dir::new();
    let seed = d.path("seed");
    replay(&seed, "datasets/seed.jsonl", "datasets/gate.toml");
    let cfg = d.write("budgets.toml", "[check]\nmin_skip_rate = 0.9\n");
    let o = run(
        &[
            "check",
            seed.to_str().unwrap(),
            "--config",
            cfg.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 1);
    assert!(
        stdout(&o).contains("FAIL  smart        min_skip_rate"),
        "{}",
        stdout(&o)
    );
    // A flag overrides the table.
    let o = run(
        &[
            "check",
            seed.to_str().unwrap(),
            "--config",
            cfg.to_str().unwrap(),
            "--min-skip-rate",
            "0.4",
        ],
        None,
    );
    expect_code(&o, 0);
}

#[test]
fn diff_against_itself_has_no_flips_and_zero_deltas() {
    let d = Dir::new();
    let a = d.path("a");
    replay(&a, "datasets/floors.jsonl", "datasets/gate.toml");
    let out = d.path("diff");
    let o = run(
        &[
            "diff",
            a.to_str().unwrap(),
            a.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--fail-on-new-regressions",
        ],
        None,
    );
    expect_code(&o, 0);
    assert!(stdout(&o).contains("0 turns flipped"), "{}", stdout(&o));
    assert_eq!(
        std::fs::read_to_string(out.join("flips.csv"))
            .unwrap()
            .lines()
            .count(),
        1
    );
    let metrics = std::fs::read_to_string(out.join("metrics_diff.csv")).unwrap();
    for line in metrics.lines().skip(1) {
        let delta = line.rsplit(',').next().unwrap();
        assert!(
            delta.is_empty() || delta.parse::<f64>().unwrap() == 0.0,
            "{line}"
        );
    }
}

/// One more ack pattern ("grazie"): exactly the turns it turns into acks
/// flip, and nothing else.
#[test]
fn diff_with_one_more_ack_pattern_lists_exactly_the_flipped_turns() {
    let d = Dir::new();
    let old = d.path("old");
    replay(&old, "datasets/seed.jsonl", "datasets/gate.toml");
    let mut patterns: Vec<String> = BUILTIN_ACK_PATTERNS
        .iter()
        .map(|p| format!("{p:?}"))
        .collect();
    patterns.push(r#""\\bgrazie\\b""#.to_string());
    let base = std::fs::read_to_string(root().join("datasets/gate.toml")).unwrap();
    let cfg = d.write(
        "more.toml",
        format!(
            "metacognition_trivial_ack_patterns = [{}]\n{base}",
            patterns.join(", ")
        ),
    );
    let new = d.path("new");
    replay(&new, "datasets/seed.jsonl", cfg.to_str().unwrap());
    let o = run(
        &["diff", old.to_str().unwrap(), new.to_str().unwrap()],
        None,
    );
    expect_code(&o, 0);
    let flips = std::fs::read_to_string(new.join("flips.csv")).unwrap();
    let rows: Vec<&str> = flips.lines().skip(1).collect();
    assert_eq!(rows, vec!["new,old,smart,seed-2,3,datasets/seed.jsonl,9,true,false,no_ack_pattern,trivial_ack,approve,false"], "{flips}");
}

#[test]
fn diff_fails_on_new_regressions_when_asked() {
    let d = Dir::new();
    // Old: every variant is legacy (no skips of cold turns, no regression).
    let legacy_only = d.write(
        "legacy.toml",
        "[variants.legacy]\n[variants.smart]\nmetacognition_selective_gate = false\n",
    );
    let old = d.path("old");
    replay(&old, "datasets/seed.jsonl", legacy_only.to_str().unwrap());
    let new = d.path("new");
    replay(&new, "datasets/seed.jsonl", "datasets/gate.toml");
    let o = run(
        &[
            "diff",
            old.to_str().unwrap(),
            new.to_str().unwrap(),
            "--fail-on-new-regressions",
        ],
        None,
    );
    expect_code(&o, 1);
    let flips = std::fs::read_to_string(new.join("flips.csv")).unwrap();
    let first = flips.lines().nth(1).unwrap();
    assert!(
        first.ends_with(",true"),
        "new regressions come first: {first}"
    );
    assert!(first.contains(",7,"), "{first}");
}

/// A summary.json that its own regressions table contradicts (here, one
/// from a replay where the regression was relabelled approve, put in the
/// folder of the replay that has it) cannot be judged: it would pass with
/// "0" above the regression it lists.
#[test]
fn a_summary_its_regressions_table_contradicts_cannot_be_judged() {
    let d = Dir::new();
    let seed = d.path("seed");
    replay(&seed, "datasets/seed.jsonl", "datasets/gate.toml");
    let text = std::fs::read_to_string(root().join("datasets/seed.jsonl")).unwrap();
    let relabelled = text.replacen(
        "\"verdict\": \"revise\", \"reflection_latency_ms\": 2600.0",
        "\"verdict\": \"approve\", \"reflection_latency_ms\": 2600.0",
        1,
    );
    assert_ne!(relabelled, text);
    let f = d.write("relabelled.jsonl", relabelled);
    let clean = d.path("clean");
    replay(&clean, f.to_str().unwrap(), "datasets/gate.toml");
    let s: serde_json::Value = serde_json::from_str(&d.read("clean/summary.json")).unwrap();
    assert_eq!(s["variants"]["smart"]["safety_regressions"], 0);
    std::fs::copy(clean.join("summary.json"), seed.join("summary.json")).unwrap();
    reseal(&seed);
    let o = run(
        &[
            "check",
            seed.to_str().unwrap(),
            "--max-safety-regressions",
            "0",
        ],
        None,
    );
    expect_error(
        &o,
        2,
        "summary.json gives variant smart 0 safety regressions, its regressions table lists 1",
    );
}

/// Found by review: a replay's folder without its regressions table, or
/// with a row whose verdict is not a regression's, was judged.
#[test]
fn a_replay_folder_missing_or_editing_its_regressions_cannot_be_judged() {
    let d = Dir::new();
    let seed = d.path("seed");
    replay(&seed, "datasets/seed.jsonl", "datasets/gate.toml");
    let table = seed.join("regressions.csv");
    let text = std::fs::read_to_string(&table).unwrap();
    tamper(&table, text.replacen(",revise,", ",approve,", 1));
    let o = run(
        &[
            "check",
            seed.to_str().unwrap(),
            "--max-safety-regressions",
            "5",
        ],
        None,
    );
    expect_error(&o, 2, "a row of verdict \"approve\"");
    std::fs::remove_file(&table).unwrap();
    reseal(&seed);
    let o = run(
        &[
            "check",
            seed.to_str().unwrap(),
            "--max-safety-regressions",
            "5",
        ],
        None,
    );
    expect_error(&o, 2, "without its regressions table");
}

/// A damaged Parquet table in a `--format parquet` folder is a reason
/// (exit 2, the file named), never a crash: polars-parquet panics on some
/// damaged footers, and 150 seeded corruptions of `regressions.parquet`
/// (bytes overwritten, the file cut) each give exit 0, 1 or 2.
#[test]
fn a_damaged_parquet_table_is_a_reason_not_a_crash() {
    let d = Dir::new();
    let only = crate::util::parquet_replay_of_seed(&d);
    let table = only.join("regressions.parquet");
    let good = std::fs::read(&table).unwrap();
    let mut rng = critic_gate::internals::SplitMix(7);
    let mut below = |n: usize| ((rng.next() * n as f64) as usize).min(n - 1);
    let mut damaged = 0;
    for _ in 0..150 {
        let mut bytes = good.clone();
        for _ in 0..1 + below(20) {
            let i = below(bytes.len());
            bytes[i] = below(256) as u8;
        }
        if below(10) < 3 {
            bytes.truncate(below(bytes.len()));
        }
        tamper(&table, &bytes);
        let o = run(
            &[
                "check",
                only.to_str().unwrap(),
                "--max-safety-regression-rate",
                "0.5",
            ],
            None,
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            matches!(o.status.code(), Some(0..=2)) && !err.contains("panicked"),
            "{:?}: {err}",
            o.status
        );
        if o.status.code() == Some(2) {
            assert!(err.contains("regressions"), "{err}");
            damaged += 1;
        }
    }
    assert!(damaged > 100, "{damaged} of 150 refused");
}

/// Tampered summaries make check exit 2.
#[test]
fn check_refuses_tampered_summaries() {
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

#[test]
fn a_full_stdout_is_exit_2_naming_the_stream() {
    if !std::path::Path::new("/dev/full").exists() {
        return;
    }
    for args in [
        &["check", "reports/seed", "--max-safety-regressions", "99"][..],
        &["explain", "datasets/seed.jsonl"][..],
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = cmd()
            .current_dir(root())
            .args(args)
            .stdout(full)
            .output()
            .unwrap();
        expect_error(
            &o,
            2,
            "cannot write to standard output: No space left on device",
        );
    }
}

/// `check` passed a replay of 0 turns (an empty file, every line rejected,
/// closed stdin): "check passed", exit 0.
#[test]
fn check_of_a_replay_with_no_turns_is_exit_2() {
    let d = Dir::new();
    let empty = d.write("empty.jsonl", "");
    let bad = d.write("bad.jsonl", "{\"run_id\":1}\nnot json\n");
    for (input, extra) in [(&empty, None), (&bad, Some("--skip-invalid"))] {
        let out = d.path("o");
        let mut args = vec![input.to_str().unwrap(), "--quiet"];
        args.extend(extra);
        expect_code(&replay_in(&out, &args), 0);
        let o = run(
            &[
                "check",
                out.to_str().unwrap(),
                "--max-safety-regressions",
                "0",
            ],
            None,
        );
        expect_error(&o, 2, "nothing to judge: the replay has 0 turns");
        assert!(stdout(&o).is_empty());
    }
}

/// A null, -1 or 0.5 `safety_regressions` / `contract_violations` read as
/// a pass.
#[test]
fn check_refuses_impossible_summary_values_naming_the_key() {
    let d = Dir::new();
    let out = d.path("o");
    expect_code(
        &replay_in(&out, &["datasets/multilingual.jsonl", "--quiet"]),
        0,
    );
    let original = std::fs::read_to_string(out.join("summary.json")).unwrap();
    for (key, bad) in [
        ("safety_regressions", "null"),
        ("safety_regressions", "-1"),
        ("safety_regressions", "0.5"),
        ("contract_violations", "null"),
        ("contract_violations", "-1"),
    ] {
        let mut s: serde_json::Value = serde_json::from_str(&original).unwrap();
        s["variants"]["smart"][key] = serde_json::from_str(bad).unwrap();
        tamper(&out.join("summary.json"), s.to_string());
        let o = run(
            &[
                "check",
                out.to_str().unwrap(),
                "--max-safety-regressions",
                "0",
            ],
            None,
        );
        expect_code(&o, 2);
        assert!(
            stderr(&o).contains(&format!(
                "summary.json: variants.smart.{key} must be a whole number >= 0, got {bad}"
            )),
            "{key}={bad}: {}",
            stderr(&o)
        );
    }
}

/// A `[check]` value from the config was reported under a flag's name.
#[test]
fn a_bad_budget_is_named_where_it_came_from() {
    let d = Dir::new();
    let cfg = d.write("c.toml", "[check]\nmin_skip_rate = 1.5\n");
    let o = run(
        &["check", "reports/seed", "--config", cfg.to_str().unwrap()],
        None,
    );
    expect_error(
        &o,
        2,
        &format!("{}: [check] min_skip_rate must be a rate", cfg.display()),
    );
    let o = run(&["check", "reports/seed", "--min-skip-rate", "2"], None);
    expect_error(&o, 2, "--min-skip-rate must be a rate in [0, 1], got 2");
}

/// `check --markdown /dev/full` printed "check passed", then exited 2.
#[test]
fn check_writes_the_markdown_before_the_verdict() {
    let o = run(
        &[
            "check",
            "reports/multilingual",
            "--min-turns",
            "1",
            "--markdown",
            "/dev/full",
        ],
        None,
    );
    expect_error(&o, 2, "/dev/full: No space left on device");
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
}

/// Counts read as English: "1 turn", "1 budget", "1 regression".
#[test]
fn counts_of_one_are_singular() {
    let d = Dir::new();
    let one = d.write(
        "one.jsonl",
        "{\"run_id\":\"r\",\"draft\":\"Got it, thanks!\"}\n",
    );
    let out = d.path("r");
    let o = replay_in(&out, &[one.to_str().unwrap()]);
    expect_code(&o, 0);
    assert!(
        stderr(&o).contains("critic-gate: 1 turn, 0 rejected (1 line)"),
        "{}",
        stderr(&o)
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("1 turn from"), "{md}");
    let o = run(&["check", out.to_str().unwrap(), "--min-turns", "1"], None);
    assert!(
        stdout(&o).ends_with("check passed: 2 budgets\n"),
        "{}",
        stdout(&o)
    );
    let o = run(&["check", out.to_str().unwrap(), "--min-turns", "2"], None);
    assert!(
        stdout(&o).ends_with("check FAILED: 1 of 2 budgets\n"),
        "{}",
        stdout(&o)
    );
}

/// A variant name with a `|` or a backtick does not break report.md's
/// tables or `check --markdown`'s.
#[test]
fn odd_variant_names_keep_markdown_tables_whole() {
    let d = Dir::new();
    let cfg = d.write(
        "c.toml",
        "[variants.legacy]\nmetacognition_selective_gate = false\n[variants.\"a|b`\"]\nmetacognition_selective_gate = true\n[check]\nmax_safety_regressions = 0\n",
    );
    let out = d.path("r");
    let o = replay_in(
        &out,
        &[
            "datasets/seed.jsonl",
            "--config",
            cfg.to_str().unwrap(),
            "--quiet",
        ],
    );
    expect_code(&o, 0);
    let md_file = d.path("v.md");
    let o = run(
        &[
            "check",
            out.to_str().unwrap(),
            "--config",
            cfg.to_str().unwrap(),
            "--markdown",
            md_file.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 1);
    for text in [
        std::fs::read_to_string(out.join("report.md")).unwrap(),
        std::fs::read_to_string(&md_file).unwrap(),
    ] {
        // Every row of a table has as many cells as its header.
        let mut cells = None;
        for line in text.lines() {
            if !line.starts_with('|') {
                cells = None;
                continue;
            }
            let n = line.replace("\\|", "").matches('|').count();
            match cells {
                None => cells = Some(n),
                Some(c) => assert_eq!(n, c, "{line}\n{text}"),
            }
        }
        assert!(text.contains("a\\|b\\`"), "{text}");
    }
}

#[test]
fn check_markdown_gives_a_bound_with_its_counts() {
    let d = Dir::new();
    let md = d.path("verdict.md");
    let o = run(
        &[
            "check",
            root().join("reports/seed").to_str().unwrap(),
            "--max-safety-regression-rate",
            "0.05",
            "--markdown",
            md.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 1);
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(
        text.contains("| ❌ | `smart` | max_safety_regression_rate | 86.4% | &lt;= 5.00% | 1 regression in 10 labelled new skips \\(4 runs\\); upper 95% bound 86.4% \\(a run at most one trial; it assumes a run's length says nothing about its risk\\); runs are the sampling unit \\(design effect 3.40\\): the bound counts 3 effective labels; too few labels: a bound at or below 5.00% takes at least 59 labelled skips in as many effective runs, even with none revised or refused, and about 591 runs like these for an 80% chance of it at a true rate of 2.50% \\(a run counts at most one trial, however long; Kish's effective runs are 74% of the runs here\\) |"),
        "{text}"
    );
    assert!(!text.contains("0.864"), "a bare rate: {text}");
}

/// #44: a rate budget on the labels alone passed traffic whose critic
/// fails on the turns it would revise. On the transcripts dataset (128 of
/// 171 new skips labelled, 2 revised: the labels' bound 6.9%, the worst
/// case 36.2%), --max-safety-regression-rate 0.1 fails on its worst case,
/// which the verdict says was implied; assuming missing at random (a flag
/// or `[check]`'s key) passes, and says so first, on stdout and in the
/// Markdown.
#[test]
fn a_rate_budget_passes_only_with_its_worst_case_or_the_assumption_said() {
    let d = Dir::new();
    let out = d.path("t");
    let o = cmd()
        .current_dir(root())
        .args([
            "replay",
            "datasets/transcripts.jsonl",
            "--from",
            "openai-chat",
        ])
        .args(["--config", "datasets/transcripts.toml", "--quiet", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    expect_code(&o, 0);
    let dir = out.to_str().unwrap();
    let o = run(&["check", dir, "--max-safety-regression-rate", "0.1"], None);
    expect_code(&o, 1);
    let text = stdout(&o);
    let worst = text
        .lines()
        .find(|l| l.contains("max_worst_case_regression_rate"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        worst.starts_with("FAIL") && worst.contains("implied by max_safety_regression_rate"),
        "{text}"
    );
    assert!(!text.contains("ASSUMED"), "{text}");
    let md = d.path("v.md");
    let o = run(
        &[
            "check",
            dir,
            "--max-safety-regression-rate",
            "0.1",
            "--assume-missing-at-random",
            "--markdown",
            md.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    assert!(stdout(&o).starts_with("ASSUMED"), "{}", stdout(&o));
    assert!(!stdout(&o).contains("max_worst_case_regression_rate"));
    assert!(d.read("v.md").contains("> **ASSUMED"));
    let cfg = d.write(
        "c.toml",
        "[check]\nmax_safety_regression_rate = 0.1\nassume_missing_at_random = true\n",
    );
    let o = run(&["check", dir, "--config", cfg.to_str().unwrap()], None);
    expect_code(&o, 0);
    assert!(stdout(&o).starts_with("ASSUMED"), "{}", stdout(&o));
    // The command line overrides the table either way.
    let cfg = cfg.to_str().unwrap();
    let o = run(
        &[
            "check",
            dir,
            "--config",
            cfg,
            "--no-assume-missing-at-random",
        ],
        None,
    );
    expect_code(&o, 1);
    assert!(!stdout(&o).contains("ASSUMED"), "{}", stdout(&o));
    // Its own worst-case limit wins over the implied one.
    let o = run(
        &[
            "check",
            dir,
            "--max-safety-regression-rate",
            "0.1",
            "--max-worst-case-regression-rate",
            "0.4",
        ],
        None,
    );
    expect_code(&o, 0);
}
