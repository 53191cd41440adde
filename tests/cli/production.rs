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

/// The deployment of symfonic's sample traces C (smart gate, intent off,
/// no history), with the smart gate as the baseline: what the README's
/// glossary told a team that runs it to write.
fn smart_production_config(d: &Dir, production: Option<&str>) -> std::path::PathBuf {
    let production = production.map_or(String::new(), |p| format!("production = \"{p}\"\n"));
    d.write(
        "gate.toml",
        format!(
            "read_only_tools = [\"search_docs\"]\nbaseline = \"smart\"\n{production}[variants.legacy]\nmetacognition_selective_gate = false\n[variants.smart]\nmetacognition_selective_gate = true\n[deployment]\nidentifier_keys = [\"order_id\", \"tracking\"]\nhistory = \"none\"\n[deployment.tool_trigger_keywords]\nget_order_status = [\"order\", \"shipping\"]\n"
        ),
    )
}

/// symfonic's sample trace C replayed with `config` into `d`'s `r`.
fn replay_smart_trace(
    d: &Dir,
    config: &std::path::Path,
) -> (std::path::PathBuf, std::process::Output) {
    let trace = root()
        .join("tests/samples/otel/C_capture_on_selective_gate_no_intent_no_history.otlp.json");
    let out = d.path("r");
    let o = replay_in(
        &out,
        &[
            trace.to_str().unwrap(),
            "--from",
            "otlp",
            "--config",
            config.to_str().unwrap(),
        ],
    );
    expect_code(&o, 0);
    (out, o)
}

/// #45's trap: symfonic's own trace of a smart-gate deployment (its ack
/// skipped, with no critic span), replayed with the baseline set to what
/// production runs. The report said "Safety regressions: None" and
/// `check` passed a risk budget (exit 0), though no skip ever had a
/// critic. Now the risk of production's skips is unknown everywhere it
/// is shown, and every risk budget on them fails with its value empty.
#[test]
fn a_smart_production_s_unreviewed_skips_are_unknown_risk_never_a_pass() {
    let d = Dir::new();
    let config = smart_production_config(&d, None);
    let (out, o) = replay_smart_trace(&d, &config);
    let said = "1 turn production's gate (`smart`) skipped never reached the critic: its risk is unknown, and cannot come from replaying more of this traffic; `critic-gate plan` sizes a critic sample";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("risk unknown: 1 skip"),
        "{}",
        stderr(&o)
    );
    let s = summary(&out);
    assert_eq!(s["production"], "smart");
    assert_eq!(metric(&s, "smart", "production"), true);
    assert_eq!(metric(&s, "smart", "production_skips"), 1);
    assert_eq!(metric(&s, "smart", "production_skips_unlabelled"), 1);
    assert_eq!(metric(&s, "legacy", "production_skips"), Value::Null);
    assert!(s["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n.as_str().unwrap().contains(said)));
    let csv = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert!(csv
        .lines()
        .next()
        .unwrap()
        .contains("production_skips_unlabelled"));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(!md.contains("None: no skipped turn"), "{md}");
    assert!(
        md.contains("**Unknown for `smart`, the gate that produced this traffic:**"),
        "{md}"
    );
    assert!(
        md.contains("unknown: 1 of production's skips unreviewed"),
        "{md}"
    );
    // `check` judges production's gate, though it is the baseline, and
    // fails every risk budget on it: the count is empty, never 0.
    let verdict = d.path("verdict.md");
    let o = run(
        &[
            "check",
            out.to_str().unwrap(),
            "--max-safety-regressions",
            "0",
            "--max-safety-regression-rate",
            "0.05",
            "--markdown",
            verdict.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 1);
    let text = stdout(&o);
    for budget in [
        "max_safety_regressions",
        "max_safety_regression_rate",
        "max_worst_case_regression_rate",
    ] {
        let line = text
            .lines()
            .find(|l| l.starts_with("FAIL  smart") && l.contains(&format!(" {budget} ")))
            .unwrap_or_else(|| panic!("{budget} not failed on smart:\n{text}"));
        assert!(
            line.contains("value unknown") && line.contains(said),
            "{line}"
        );
    }
    let md = std::fs::read_to_string(&verdict).unwrap();
    assert!(
        md.contains("| ❌ | `smart` | max_safety_regressions | unknown |"),
        "{md}"
    );
    // Markdown escapes the note's code spans; its words are the same.
    assert!(
        md.contains("skipped never reached the critic: its risk is unknown, and cannot come from replaying more of this traffic"),
        "{md}"
    );
    // A variant named alone is judged alone, as before.
    let o = run(
        &[
            "check",
            out.to_str().unwrap(),
            "--max-safety-regressions",
            "0",
            "--variant",
            "legacy",
        ],
        None,
    );
    expect_code(&o, 0);
}

/// Production named apart from the baseline: the smart gate's new skips
/// against the legacy baseline are production's own skips, so its
/// regression count is unknown too (it read 0 and passed
/// max_safety_regressions), and production's agreement is its gate's.
#[test]
fn production_apart_from_the_baseline_is_judged_on_its_own_skips() {
    let d = Dir::new();
    let config = d.write(
        "gate.toml",
        std::fs::read_to_string(smart_production_config(&d, Some("smart")))
            .unwrap()
            .replace("baseline = \"smart\"", "baseline = \"legacy\""),
    );
    let (out, _) = replay_smart_trace(&d, &config);
    let s = summary(&out);
    assert_eq!(
        (s["baseline"].as_str(), s["production"].as_str()),
        (Some("legacy"), Some("smart"))
    );
    assert_eq!(metric(&s, "legacy", "production"), false);
    assert_eq!(metric(&s, "smart", "production_skips_unlabelled"), 1);
    assert_eq!(
        s["production_agreement"],
        metric(&s, "smart", "production_agreement")
    );
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
    assert!(
        stdout(&o).contains("FAIL  smart        max_safety_regressions       value unknown"),
        "{}",
        stdout(&o)
    );
}

/// Review of #45: `check --config` with a config naming another
/// production than the folder was replayed with judged the folder's
/// figures as if they were that production's. Refused now, naming both.
#[test]
fn check_refuses_a_config_of_another_production() {
    let d = Dir::new();
    let config = smart_production_config(&d, None);
    let (out, _) = replay_smart_trace(&d, &config);
    let other = d.write(
        "other.toml",
        std::fs::read_to_string(&config).unwrap().replace(
            "baseline = \"smart\"",
            "baseline = \"smart\"\nproduction = \"legacy\"",
        ),
    );
    let check = |c: &std::path::Path| {
        run(
            &[
                "check",
                out.to_str().unwrap(),
                "--config",
                c.to_str().unwrap(),
                "--min-turns",
                "1",
            ],
            None,
        )
    };
    let o = check(&other);
    expect_error(&o, 2, "replayed with `smart` as production");
    assert!(stderr(&o).contains("names `legacy`"), "{}", stderr(&o));
    expect_code(&check(&config), 0);
}

/// Every recorded critic event of trace C fits the legacy gate as well as
/// the smart one (the legacy gate fires on every turn, and production's
/// only skip left no span): the report says the traffic cannot tell
/// which gate production ran, where it read 100% agreement with either.
#[test]
fn agreement_says_when_the_recording_fits_two_gates_equally() {
    let d = Dir::new();
    let config = smart_production_config(&d, None);
    let (out, o) = replay_smart_trace(&d, &config);
    let s = summary(&out);
    assert_eq!(s["production_fits_equally"], serde_json::json!(["legacy"]));
    assert!(
        stderr(&o).contains(
            "legacy fit the recording as well: the traffic cannot tell which gate production ran"
        ),
        "{}",
        stderr(&o)
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("**The traffic cannot tell which gate production ran:** the recorded critic events fit `legacy` as well as `smart`"), "{md}");
    // Traffic where the gates part (fail-open: production skipped warm
    // turns the legacy gate skips too, and fired on cold ones the smart
    // gate skips) names no other gate.
    let out = d.path("fo");
    expect_code(
        &replay_in(
            &out,
            &["datasets/fail-open.jsonl", "--config", "datasets/gate.toml"],
        ),
        0,
    );
    assert_eq!(
        summary(&out)["production_fits_equally"],
        serde_json::json!([])
    );
}

/// Review of #45: `min_production_agreement` read the baseline's
/// agreement, not production's. fail-open.jsonl was recorded under the
/// legacy gate; named as production, the smart gate agrees with it on
/// far fewer turns, and the budget now says so (it passed on legacy's).
#[test]
fn the_agreement_budget_reads_production_s_gate() {
    let d = Dir::new();
    let gate = std::fs::read_to_string(root().join("datasets/gate.toml")).unwrap();
    let config = d.write("gate.toml", format!("production = \"smart\"\n{gate}"));
    let out = d.path("r");
    expect_code(
        &replay_in(
            &out,
            &[
                "datasets/fail-open.jsonl",
                "--config",
                config.to_str().unwrap(),
            ],
        ),
        0,
    );
    let s = summary(&out);
    let agreement = metric(&s, "smart", "production_agreement")
        .as_f64()
        .unwrap();
    assert!(agreement < 0.99 && metric(&s, "legacy", "production_agreement") == 1.0);
    let o = run(
        &[
            "check",
            out.to_str().unwrap(),
            "--min-production-agreement",
            "0.99",
            "--variant",
            "legacy",
        ],
        None,
    );
    expect_code(&o, 1);
    let line = stdout(&o)
        .lines()
        .find(|l| l.contains("min_production_agreement"))
        .unwrap()
        .to_string();
    assert!(line.starts_with("FAIL  smart"), "{line}");
    assert!(line.contains(&format!("value {agreement}")), "{line}");
}
