//! What an adversarial run found (issue 9): closed pipes, full disks,
//! thread counts. Each test drives the real binary as a user would.

use std::process::Stdio;

use crate::util::*;

/// Run from the project root with stdout (or stderr) a pipe whose reading
/// end is closed at once, as `| true` or `| head -1` leave it.
fn run_with_closed(args: &[&str], close_stderr: bool) -> Option<i32> {
    let mut c = cmd();
    c.current_dir(root()).args(args).stdin(Stdio::null());
    if close_stderr {
        c.stdout(Stdio::null()).stderr(Stdio::piped());
    } else {
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
    }
    let mut child = c.spawn().unwrap();
    if close_stderr {
        drop(child.stderr.take());
    } else {
        drop(child.stdout.take());
    }
    let out = child.wait_with_output().unwrap();
    out.status.code()
}

/// `check DIR | true`, `explain FILE | head -1`, `diff A B | head -1`
/// panicked (exit 101); the exit code is now what the command decided.
#[test]
fn a_closed_stdout_ends_output_quietly_with_the_decided_exit_code() {
    let d = Dir::new();
    let diff_out = d.path("diff");
    let diff_out = diff_out.to_str().unwrap();
    let cases: [(&[&str], i32); 5] = [
        (
            &["check", "reports/seed", "--max-safety-regressions", "0"],
            1,
        ),
        (
            &[
                "check",
                "reports/multilingual",
                "--max-safety-regressions",
                "0",
            ],
            0,
        ),
        (
            &[
                "explain",
                "datasets/floors.jsonl",
                "--config",
                "datasets/gate.toml",
            ],
            0,
        ),
        (
            &["diff", "reports/seed", "reports/seed", "--out", diff_out],
            0,
        ),
        (&["synth", "--turns", "20000", "--out", "-"], 0),
    ];
    for (args, want) in cases {
        for _ in 0..3 {
            assert_eq!(run_with_closed(args, false), Some(want), "{args:?}");
        }
    }
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
        std::fs::write(out.join("summary.json"), s.to_string()).unwrap();
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

/// `--out /` wrote report files into `/`: a non-empty folder that is not
/// an earlier report is refused unless `--force`.
#[test]
fn a_foreign_non_empty_folder_is_refused_without_force() {
    let d = Dir::new();
    d.write("home/notes.txt", "mine");
    let home = d.path("home");
    let o = replay_in(&home, &["datasets/seed.jsonl", "--quiet"]);
    expect_error(&o, 2, "holds no earlier critic-gate report");
    assert_eq!(
        std::fs::read_dir(&home).unwrap().count(),
        1,
        "nothing written"
    );
    expect_code(
        &replay_in(&home, &["datasets/seed.jsonl", "--quiet", "--force"]),
        0,
    );
    assert_eq!(d.read("home/notes.txt"), "mine");
    // Now it is a report folder: a second run needs no --force.
    expect_code(&replay_in(&home, &["datasets/seed.jsonl", "--quiet"]), 0);
}

fn staging_folders(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|it| {
            it.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(".critic-gate-partial-"))
                .collect()
        })
        .unwrap_or_default()
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
        let started = std::time::Instant::now();
        while staging_folders(&out).is_empty() {
            assert!(
                started.elapsed().as_secs() < 20,
                "no staging folder appeared"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let killed = std::process::Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(code), "{signal}");
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

#[test]
fn a_price_past_the_bound_is_a_config_error() {
    let d = Dir::new();
    let cfg = d.write(
        "c.toml",
        "[cost.models.m]\nusd_per_mtok_in = 1e300\nusd_per_mtok_out = 1.0\n",
    );
    let o = replay_in(
        &d.path("o"),
        &["datasets/seed.jsonl", "--config", cfg.to_str().unwrap()],
    );
    expect_error(
        &o,
        2,
        "cost.models.m.usd_per_mtok_in must be a number from 0 to 1000000",
    );
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

/// `diff reports/seed reports/floors` exited 0 comparing 0 rows; a
/// truncated or header-only decisions.csv, `--decisions changed` against
/// `all`, and different variants all exited 0.
#[test]
fn diff_refuses_what_it_cannot_compare() {
    let d = Dir::new();
    let replay = |name: &str, args: &[&str]| {
        let out = d.path(name);
        let mut all = args.to_vec();
        all.push("--quiet");
        expect_code(&replay_in(&out, &all), 0);
        out.to_str().unwrap().to_string()
    };
    let seed = replay("seed", &["datasets/seed.jsonl"]);
    let floors = replay("floors", &["datasets/floors.jsonl"]);
    let changed = replay(
        "changed",
        &["datasets/seed.jsonl", "--decisions", "changed"],
    );
    let one = d.write(
        "one.toml",
        "[variants.legacy]\nmetacognition_selective_gate = false\n",
    );
    let one = replay(
        "one",
        &["datasets/seed.jsonl", "--config", one.to_str().unwrap()],
    );
    let truncated = replay("truncated", &["datasets/seed.jsonl"]);
    let p = d.path("truncated/decisions.csv");
    let text = std::fs::read_to_string(&p).unwrap();
    let kept: Vec<&str> = text.lines().take(30).collect();
    std::fs::write(&p, kept.join("\n") + "\n").unwrap();
    let header_only = replay("header", &["datasets/seed.jsonl"]);
    let p = d.path("header/decisions.csv");
    let header = std::fs::read_to_string(&p)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    std::fs::write(&p, header + "\n").unwrap();
    let out = d.path("diff");
    let out = out.to_str().unwrap();
    for (other, says) in [
        (&floors, "read different traffic"),
        (&changed, "diff needs every row"),
        (&one, "different variants"),
        (
            &truncated,
            "decisions.csv has 29 rows, but 20 turns x 2 variants make 40",
        ),
        (&header_only, "decisions.csv has 0 rows"),
    ] {
        for args in [
            vec!["diff", seed.as_str(), other.as_str(), "--out", out],
            vec![
                "diff",
                seed.as_str(),
                other.as_str(),
                "--out",
                out,
                "--fail-on-new-regressions",
            ],
        ] {
            let o = run(&args, None);
            expect_code(&o, 2);
            assert!(stderr(&o).contains(says), "{other}: {}", stderr(&o));
        }
    }
    // The same traffic under two configs still compares.
    expect_code(&run(&["diff", &seed, &seed, "--out", out], None), 0);
}

/// A UTF-8 byte-order mark on line 1 was "invalid JSON at column 1".
#[test]
fn a_leading_byte_order_mark_is_skipped() {
    let d = Dir::new();
    let input = d.write(
        "bom.jsonl",
        b"\xEF\xBB\xBF{\"run_id\":\"r\",\"draft\":\"ok\"}\n{\"run_id\":\"r\",\"draft\":\"ok\"}\n",
    );
    let out = d.path("o");
    expect_code(&replay_in(&out, &[input.to_str().unwrap(), "--quiet"]), 0);
    assert_eq!(summary(&out)["turns"], 2);
    expect_code(&run(&["explain", input.to_str().unwrap()], None), 0);
    // Only on line 1: elsewhere it is not JSON.
    let input = d.write(
        "bom2.jsonl",
        b"{\"run_id\":\"r\",\"draft\":\"ok\"}\n\xEF\xBB\xBF{\"run_id\":\"r\",\"draft\":\"ok\"}\n",
    );
    let o = replay_in(&d.path("o2"), &[input.to_str().unwrap()]);
    expect_error(&o, 2, "bom2.jsonl:2: invalid JSON at column 1");
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

#[test]
fn explain_takes_a_json_array_as_an_invalid_turn_not_a_path() {
    let o = run(&["explain", "[]"], None);
    expect_error(
        &o,
        2,
        "argument:1: a turn must be a JSON object, got an array",
    );
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

/// "must be a whole number, got 9007199254740991" for a valid integer, and
/// `1e2` reported as "got 100" for a turn number: messages now say the
/// bound that was broken, and a float is shown as one.
#[test]
fn messages_say_what_was_wrong_with_the_number() {
    for (turn, says) in [
        (r#"{"run_id":"r","draft":"x","turn":1.5e0}"#, "turn must be an integer >= 0, got 1.5"),
        (
            r#"{"run_id":"r","draft":"x","critic":{"reflection_tokens_in":9007199254740991}}"#,
            "critic.reflection_tokens_in must be a whole number from 0 to 1000000000, got 9007199254740991",
        ),
    ] {
        let o = run(&["explain", turn], None);
        expect_error(&o, 2, says);
    }
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
        stdout(&o).contains("2 flipped (1 new safety regressions)"),
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
    assert!(lines[1].contains(",1,\"\",1,legacy,"), "{}", lines[1]);
    assert!(lines[1].contains(",\"\",,,2,"), "{}", lines[1]);
    assert!(lines[3].contains(",r,,legacy,"), "{}", lines[3]);
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

/// explain's and derive's bad input is an invalid line (`FILE:LINE:
/// reason`, Python's InvalidLineError), with no --skip-invalid advice:
/// neither command can set a line aside.
#[test]
fn explain_and_derive_name_an_invalid_line_without_skip_advice() {
    let o = run(&["explain", "-"], Some(b"{\"run_id\": 5}\n"));
    expect_error(&o, 2, "<stdin>:1: run_id must be a string");
    assert!(!stderr(&o).contains("--skip-invalid"), "{}", stderr(&o));
    let o = run(&["derive", "-"], Some(b"{\"draft\": 3}\n"));
    expect_error(&o, 2, "<stdin>:1: ");
    assert!(!stderr(&o).contains("--skip-invalid"), "{}", stderr(&o));
}
