//! `critic-gate explain`, including every conformance case through the CLI.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::util::*;

#[test]
fn cold_ack_legacy_fires_smart_skips() {
    let o = run(
        &["explain", r#"{"run_id":"r","draft":"Got it, thanks!"}"#],
        None,
    );
    expect_code(&o, 0);
    let out = stdout(&o);
    assert!(out.contains("legacy (legacy gate): FIRES"), "{out}");
    assert!(out.contains("confidence 0.5 (cold start"), "{out}");
    assert!(out.contains("< threshold 0.6"), "{out}");
    assert!(out.contains("smart (smart gate): SKIPS"), "{out}");
    assert!(out.contains("trivial_ack"), "{out}");
}

#[test]
fn claims_make_smart_fire() {
    let o = run(
        &[
            "explain",
            "--json",
            r#"{"run_id":"r","draft":"Done. Q3 revenue was $4.2M."}"#,
        ],
        None,
    );
    expect_code(&o, 0);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let smart = &v["variants"][1];
    assert_eq!(smart["variant"], "smart");
    assert_eq!(smart["fires"], true);
    assert_eq!(smart["reasons"], serde_json::json!(["claims"]));
}

#[test]
fn reads_stdin_and_files() {
    let o = run(
        &["explain", "--json"],
        Some(br#"{"run_id":"r","draft":"ok"}"#),
    );
    expect_code(&o, 0);
    let d = Dir::new();
    let f = d.write(
        "t.json",
        "{\n  \"run_id\": \"r\",\n  \"draft\": \"ok\"\n}\n",
    );
    let o = run(&["explain", f.to_str().unwrap()], None);
    expect_code(&o, 0);
    assert!(stdout(&o).contains("SKIPS"));
}

#[test]
fn bad_configs_exit_2_naming_the_problem() {
    let d = Dir::new();
    let cases = [
        (
            "typo.toml",
            "read_only_tool = [\"x\"]\n",
            "unknown field `read_only_tool`",
        ),
        (
            "range.toml",
            "metacognition_confidence_threshold = 1.5\n",
            "must be in [0, 1]",
        ),
        (
            "regex.toml",
            "metacognition_trivial_ack_patterns = [\"ok\", \"(unclosed\"]\n",
            "metacognition_trivial_ack_patterns[1] = \"(unclosed\"",
        ),
    ];
    for (name, text, needle) in cases {
        let p = d.write(name, text);
        let o = run(
            &[
                "explain",
                "--config",
                p.to_str().unwrap(),
                r#"{"run_id":"r","draft":"x"}"#,
            ],
            None,
        );
        expect_code(&o, 2);
        assert!(stderr(&o).contains(needle), "{name}: {}", stderr(&o));
    }
}

#[test]
fn invalid_turn_exits_2_with_reason() {
    let o = run(
        &[
            "explain",
            r#"{"run_id":"r","draft":"x","confidence":"high"}"#,
        ],
        None,
    );
    expect_code(&o, 2);
    assert!(
        stderr(&o).contains(r#"confidence must be a number in [0, 1], got "high""#),
        "{}",
        stderr(&o)
    );
}

/// Every conformance case through `explain --json`: cases are grouped by
/// config so each config is one run over a JSON Lines file of turns.
#[test]
fn every_conformance_case_passes_through_explain_json() {
    let cases = include_str!("../../crates/core/tests/conformance/cases.jsonl");
    let mut by_config: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for line in cases.lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).unwrap();
        by_config
            .entry(case["config"].to_string())
            .or_default()
            .push(case);
    }
    let d = Dir::new();
    let mut checked = 0;
    for (i, (config, group)) in by_config.iter().enumerate() {
        let cfg = d.write(&format!("c{i}.json"), config);
        let turns: String = group.iter().map(|c| c["turn"].to_string() + "\n").collect();
        let tf = d.write(&format!("t{i}.jsonl"), turns);
        let o = run(
            &[
                "explain",
                "--json",
                "--config",
                cfg.to_str().unwrap(),
                tf.to_str().unwrap(),
            ],
            None,
        );
        expect_code(&o, 0);
        let out = stdout(&o);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), group.len());
        for (case, line) in group.iter().zip(lines) {
            let v: Value = serde_json::from_str(line).unwrap();
            let selective = case["config"]["metacognition_selective_gate"]
                .as_bool()
                .unwrap_or(false);
            let got = &v["variants"][if selective { 1 } else { 0 }];
            let x = &case["expect"];
            for k in [
                "fires",
                "legacy_fires",
                "hard_fire",
                "draft_has_claims",
                "draft_is_trivial_ack",
                "took_tool_action",
                "sensitive_hit",
            ] {
                assert_eq!(got[k], x[k], "{}: {k}", case["id"]);
            }
            let dc = got["confidence"].as_f64().unwrap() - x["confidence"].as_f64().unwrap();
            assert!(dc.abs() <= 1e-12, "{}: confidence", case["id"]);
            checked += 1;
        }
    }
    assert_eq!(checked, 3658);
}

/// explain reads .gz and .zst files, and names the line that is not
/// UTF-8.
#[test]
fn explain_decompresses_and_names_the_bad_line() {
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

#[test]
fn explain_takes_a_json_array_as_an_invalid_turn_not_a_path() {
    let o = run(&["explain", "[]"], None);
    expect_error(
        &o,
        2,
        "argument:1: a turn must be a JSON object, got an array",
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

/// `explain` names the pattern that matched and the text it matched.
#[test]
fn explain_names_the_pattern_and_the_matched_text() {
    let o = run(
        &["explain", r#"{"run_id":"r","draft":"Vale, gracias."}"#],
        None,
    );
    expect_code(&o, 0);
    let s = stdout(&o);
    assert!(
        s.contains(r#"ack pattern 2 of 5 (built-in, es) matches "vale" in the lowered draft"#),
        "{s}"
    );
    let o = run(
        &[
            "explain",
            "--json",
            r#"{"run_id":"r","draft":"Vale, gracias."}"#,
        ],
        None,
    );
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let smart = v["variants"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["variant"] == "smart"))
        .cloned()
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(smart["ack"]["match"]["index"], 1);
    assert_eq!(smart["ack"]["match"]["text"], "vale");
    assert_eq!(smart["ack"]["match"]["builtin"], true);
}

/// Found by the newcomer trial: a line written with another recording's
/// names (`intent`, `tool_calls`) was replayed without a word, its floors
/// silently gone. It is now a warning naming the line, in summary.json too.
#[test]
fn a_misnamed_field_is_warned_about() {
    let d = Dir::new();
    let t = d.write(
        "t.jsonl",
        "{\"run_id\":\"a\",\"draft\":\"ok\",\"intent\":\"action\",\"tool_calls\":[{\"name\":\"refund\"}]}\n{\"run_id\":\"b\",\"draft\":\"ok\",\"tenant\":\"acme\"}\n",
    );
    let out = d.path("r");
    let o = replay_in(&out, &[t.to_str().unwrap()]);
    expect_code(&o, 0);
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "warning: 1 × misnamed_field (first at {}:1)",
            t.display()
        )),
        "{err}"
    );
    assert!(err.contains("intent for intent_verdict"), "{err}");
    let s = summary(&out);
    assert_eq!(
        s["warnings"]["misnamed_field"]["count"], 1,
        "{}",
        s["warnings"]
    );
    assert_eq!(s["unknown_fields"], 3);
    let notes = s["notes"].to_string();
    assert!(
        notes.contains("`intent` (the format's `intent_verdict`?), `tool_calls` (the format's `tool_calls_this_turn`?)"),
        "{notes}"
    );
    assert!(!notes.contains("tenant"), "{notes}");
    let o = run(
        &[
            "explain",
            r#"{"run_id":"a","draft":"ok","intent":"action"}"#,
        ],
        None,
    );
    assert!(
        stdout(&o).contains(r#"note: key "intent" is not the format's and is ignored: did you mean "intent_verdict"?"#),
        "{}",
        stdout(&o)
    );
}

/// `-` (or no file) typed on a terminal says the command waits for
/// standard input instead of seeming to hang; piped input is not told so.
/// `script` (util-linux) gives the command a terminal; Ctrl-D ends it.
#[test]
fn reading_a_terminal_says_it_is_waiting() {
    let bin = env!("CARGO_BIN_EXE_critic-gate");
    let waiting = "reading standard input, which is a terminal";
    let d = Dir::new();
    let replay = format!("replay - --quiet --out {}", d.path("r").display());
    for command in ["explain", replay.as_str()] {
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                &format!("(sleep 0.5; printf '\\004') | script -qec '{bin} {command}' /dev/null"),
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("sh and script (util-linux) run");
        let start = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            assert!(
                start.elapsed().as_secs() < 60,
                "{command}: still waiting after Ctrl-D"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let o = child.wait_with_output().unwrap();
        let text =
            String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
        assert!(text.contains(waiting), "{command}: {text}");
    }
    let o = run(&["explain"], Some(b"{\"run_id\":\"r\",\"draft\":\"ok\"}\n"));
    expect_code(&o, 0);
    assert!(!stderr(&o).contains(waiting), "{}", stderr(&o));
}
