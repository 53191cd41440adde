//! The gate port against symfonic-core 9.12.0's own answers.
//!
//! `tests/conformance/cases.jsonl` was produced by running the upstream
//! Python code (see `tests/conformance/README.md`). Every case must pass:
//! `fires`, `legacy_fires`, `hard_fire`, `draft_has_claims`,
//! `draft_is_trivial_ack`, `took_tool_action` and `sensitive_hit` exactly,
//! `confidence` within 1e-12.

use critic_gate::gate::Gate;
use critic_gate::FrameworkConfig;
use critic_gate::Turn;
use serde_json::Value;
use std::collections::HashMap;

const CASES: &str = include_str!("conformance/cases.jsonl");

/// Compare one case; returns the mismatches.
fn check(case: &Value, gates: &mut HashMap<String, Gate>) -> Vec<String> {
    let id = case["id"].as_str().unwrap();
    // Compile each distinct config once (the cases share a few dozen).
    let gate = gates.entry(case["config"].to_string()).or_insert_with(|| {
        let config: FrameworkConfig = serde_json::from_value(case["config"].clone()).unwrap();
        Gate::new(config).unwrap_or_else(|e| panic!("{id}: {e}"))
    });
    let line = case["turn"].to_string();
    let turn = Turn::parse(&line).unwrap_or_else(|e| panic!("{id}: {e}"));
    let e = gate.evaluate(&turn);
    let x = &case["expect"];
    let mut bad = Vec::new();
    let mut cmp = |name: &str, got: bool| {
        if x[name].as_bool() != Some(got) {
            bad.push(format!("{id}: {name} expected {} got {got}", x[name]));
        }
    };
    cmp("fires", e.fires());
    cmp("legacy_fires", e.legacy_fires());
    cmp("hard_fire", e.hard_fire());
    cmp("draft_has_claims", e.draft_has_claims());
    cmp("draft_is_trivial_ack", e.draft_is_trivial_ack());
    cmp("took_tool_action", e.took_tool_action());
    let want_conf = x["confidence"].as_f64().unwrap();
    if (e.confidence - want_conf).abs() > 1e-12 {
        bad.push(format!(
            "{id}: confidence expected {want_conf} got {}",
            e.confidence
        ));
    }
    let want_hit = x["sensitive_hit"].as_str();
    if want_hit != e.sensitive_hit {
        bad.push(format!(
            "{id}: sensitive_hit expected {want_hit:?} got {:?}",
            e.sensitive_hit
        ));
    }
    bad
}

#[test]
fn every_conformance_case_passes() {
    let mut n = 0;
    let mut failures = Vec::new();
    let mut gates = HashMap::new();
    for line in CASES.lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).unwrap();
        failures.extend(check(&case, &mut gates));
        n += 1;
    }
    assert_eq!(n, 3658, "the copied case file is complete");
    assert!(
        failures.is_empty(),
        "{} mismatches of {n} cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn the_case_file_covers_every_predicate() {
    for prefix in [
        "up/",
        "claims/",
        "ack/",
        "pattern/",
        "tools/",
        "intent/",
        "conf/",
        "log/",
        "sensitive/",
        "random/",
    ] {
        let count = CASES
            .lines()
            .filter(|l| l.contains(&format!("\"id\": \"{prefix}")))
            .count();
        assert!(count > 0, "no {prefix} cases");
    }
}
