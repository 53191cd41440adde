//! Labels only where a critic ran, and whether the replay reproduces
//! production (`datasets/fail-open.jsonl`, `datasets/threshold-0.7.jsonl`).

use serde_json::Value;

use crate::util::*;

fn metric(s: &Value, variant: &str, key: &str) -> Value {
    s["variants"][variant][key].clone()
}

/// The issue's 20 turns: 10 warm turns production skipped, logged with
/// symfonic's zero-token `approve`, and 10 cold turns the critic really
/// reviewed (one revised). Counting the zero-token events as labels gave
/// coverage 1.0 and an upper bound of 0.216, and passed a 0.3 budget.
#[test]
fn fail_open_approve_events_are_not_labels() {
    let d = Dir::new();
    let out = d.path("fo");
    let o = replay_in(
        &out,
        &["datasets/fail-open.jsonl", "--config", "datasets/gate.toml"],
    );
    expect_code(&o, 0);
    let s = summary(&out);
    assert_eq!(metric(&s, "smart", "skips"), 20);
    assert_eq!(metric(&s, "smart", "all_skips_labelled"), 10);
    assert_eq!(metric(&s, "smart", "all_skips_label_coverage"), 0.5);
    // The 10 skips without a label are the baseline's own (production's
    // gate skipped them): none is new, so the new skips are all labelled.
    assert_eq!(metric(&s, "smart", "new_skips"), 10);
    assert_eq!(metric(&s, "smart", "label_coverage"), 1.0);
    assert_eq!(metric(&s, "smart", "safety_regression_rate"), 0.1);
    let upper = metric(&s, "smart", "safety_regression_rate_upper95")
        .as_f64()
        .unwrap();
    assert!((upper - 0.39416).abs() < 1e-5, "{upper}");
    assert_eq!(metric(&s, "smart", "critic_not_run"), 10);
    assert_eq!(metric(&s, "legacy", "critic_not_run"), 10);
    // Not a cost: the 10 saved calls are the cold turns' events alone.
    assert_eq!(metric(&s, "smart", "saved_calls"), 10);
    assert_eq!(metric(&s, "smart", "saved_calls_without_tokens"), 0);
    // 3000 + 10 i for the nine approvals, 3200 for the revised turn (i = 6).
    assert_eq!(
        metric(&s, "smart", "saved_tokens_in"),
        30_450 - 3_060 + 3_200
    );
    // Not a latency sample: the legacy gate's fires are the 10 cold turns
    // (1800 + 50 i ms, the revised one 2500 ms), its skips add 0.
    assert_eq!(metric(&s, "legacy", "critic_latency_p50_ms"), 0.0);
    assert_eq!(metric(&s, "legacy", "critic_latency_p99_ms"), 2500.0);
    assert_eq!(metric(&s, "legacy", "latency_unmeasured_fires"), 0);
    assert_eq!(s["warnings"]["critic_not_run"]["count"], 10);
    assert_eq!(
        s["warnings"]["critic_not_run"]["first"][0],
        "datasets/fail-open.jsonl:1"
    );
    assert!(stderr(&o).contains("warning: 10 × critic_not_run"));
    // The matrix keeps them apart from labels.
    let matrix = csv_rows(&std::fs::read_to_string(out.join("matrix.csv")).unwrap());
    let both_skip = matrix
        .iter()
        .find(|r| r["variant"] == "smart" && r["cell"] == "both_skip")
        .unwrap();
    assert_eq!(both_skip["critic_not_run"], "10");
    assert_eq!(both_skip["labelled"], "0");
    assert_eq!(both_skip["approve"], "0");
    // And the release gate fails as it should.
    let c = run(
        &[
            "check",
            out.to_str().unwrap(),
            "--max-safety-regression-rate",
            "0.3",
        ],
        None,
    );
    expect_code(&c, 1);
    assert!(stdout(&c).contains("FAIL  smart        max_safety_regression_rate   value 0.394163"));
}

/// The dataset's turns with confidence in [0.6, 0.7), read from the file
/// itself: the ones production (threshold 0.7) reviewed and a 0.6
/// baseline skips.
fn lines_between_0_6_and_0_7() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("datasets/threshold-0.7.jsonl")).unwrap();
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            let t: Value = serde_json::from_str(l).unwrap();
            let c = t["confidence"].as_f64().unwrap_or(0.5);
            (0.6..0.7).contains(&c) && !t["critic"].is_null()
        })
        .map(|(i, _)| (i + 1).to_string())
        .collect()
}

#[test]
fn a_replay_under_another_threshold_than_production_lists_the_mismatches() {
    let d = Dir::new();
    let out = d.path("t");
    let o = replay_in(
        &out,
        &[
            "datasets/threshold-0.7.jsonl",
            "--config",
            "datasets/gate.toml",
        ],
    );
    expect_code(&o, 0);
    let s = summary(&out);
    let want = lines_between_0_6_and_0_7();
    assert_eq!(want.len(), 6);
    let rows = csv_rows(&std::fs::read_to_string(out.join("mismatches.csv")).unwrap());
    let lines: Vec<String> = rows.iter().map(|r| r["line"].clone()).collect();
    assert_eq!(lines, want);
    assert!(rows.iter().all(|r| r["production"] == "fire"
        && r["baseline_decision"] == "skip"
        && r["reasons"] == "confident"));
    assert_eq!(s["production_known"], 20);
    assert_eq!(s["production_fired_baseline_skips"], 6);
    assert_eq!(s["production_skipped_baseline_fires"], 0);
    assert_eq!(s["production_agreement"], 14.0 / 20.0);
    let hint = "6 turns: production fired at confidence >= 0.6 with no sensitive hit: was the threshold higher";
    assert!(stderr(&o).contains(hint), "{}", stderr(&o));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains(hint), "{md}");
    let c = run(
        &[
            "check",
            out.to_str().unwrap(),
            "--min-production-agreement",
            "0.9",
        ],
        None,
    );
    expect_code(&c, 1);
    assert!(stdout(&c).contains("FAIL  legacy       min_production_agreement     value 0.7"));

    // Replayed with production's own config, it agrees everywhere.
    let matched = d.path("m");
    expect_code(
        &replay_in(
            &matched,
            &[
                "datasets/threshold-0.7.jsonl",
                "--config",
                "datasets/gate-0.7.toml",
            ],
        ),
        0,
    );
    let s = summary(&matched);
    assert_eq!(s["production_agreement"], 1.0);
    assert_eq!(s["production_known"], 20);
    assert_eq!(
        std::fs::read_to_string(matched.join("mismatches.csv")).unwrap(),
        "run,source,line,run_id,turn,trace_id,span_id,message_index,call_site,production,baseline_decision,reasons,confidence,sensitive_hit\n"
    );
    let c = run(
        &[
            "check",
            matched.to_str().unwrap(),
            "--min-production-agreement",
            "1",
        ],
        None,
    );
    expect_code(&c, 0);
}

#[test]
fn production_agreement_is_unknown_without_events_and_a_budget_then_fails() {
    let d = Dir::new();
    let input = d.write("t.jsonl", "{\"run_id\":\"r\",\"draft\":\"Thanks!\"}\n");
    let out = d.path("o");
    expect_code(&replay_in(&out, &[input.to_str().unwrap(), "--quiet"]), 0);
    let s = summary(&out);
    assert_eq!(s["production_known"], 0);
    assert!(s["production_agreement"].is_null());
    let c = run(
        &[
            "check",
            out.to_str().unwrap(),
            "--min-production-agreement",
            "0.5",
        ],
        None,
    );
    expect_code(&c, 1);
    assert!(stdout(&c).contains("no turn records what production did"));
}

/// Skill-approval calls count in calls and dollars but are not a user's
/// wait: they stay out of the latency percentiles.
#[test]
fn skill_gate_calls_are_a_segment_and_stay_out_of_user_latency() {
    let d = Dir::new();
    let ev = |lat: f64| {
        format!(
            r#"{{"verdict":"approve","reflection_latency_ms":{lat},"reflection_tokens_in":1000,"reflection_tokens_out":10}}"#
        )
    };
    let lines = [
        format!(
            r#"{{"run_id":"u","turn":0,"draft":"Here is the plan.","critic":{}}}"#,
            ev(1000.0)
        ),
        format!(
            r#"{{"run_id":"u","turn":1,"draft":"Here is the rest of it.","critic":{}}}"#,
            ev(1200.0)
        ),
        format!(
            r#"{{"run_id":"skill-gate","turn":0,"draft":"Skill: export reports.","activation_log":{{}},"critic":{}}}"#,
            ev(9000.0)
        ),
        format!(
            r#"{{"run_id":"x","turn":0,"call_site":"skill_gate","draft":"Skill: refunds.","critic":{}}}"#,
            ev(9500.0)
        ),
    ];
    let input = d.write("t.jsonl", lines.join("\n") + "\n");
    let out = d.path("o");
    expect_code(&replay_in(&out, &[input.to_str().unwrap(), "--quiet"]), 0);
    let s = summary(&out);
    assert_eq!(metric(&s, "legacy", "fires"), 4);
    assert_eq!(metric(&s, "legacy", "critic_latency_p99_ms"), 1200.0);
    assert_eq!(metric(&s, "legacy", "critic_latency_p50_ms"), 1000.0);
    let seg = csv_rows(&std::fs::read_to_string(out.join("segments.csv")).unwrap());
    let turns = |value: &str| {
        seg.iter()
            .find(|r| {
                r["variant"] == "legacy" && r["dimension"] == "call_site" && r["value"] == value
            })
            .map(|r| r["turns"].clone())
    };
    assert_eq!(turns("turn").as_deref(), Some("2"));
    assert_eq!(turns("skill_gate").as_deref(), Some("2"));
}
