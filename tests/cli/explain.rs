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
