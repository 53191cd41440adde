//! The gate port against symfonic-core 9.12.0's own answers.
//!
//! `tests/conformance/cases.jsonl` was produced by running the upstream
//! Python code (see `tests/conformance/README.md`). Every case must pass:
//! `fires`, `legacy_fires`, `hard_fire`, `draft_has_claims`,
//! `draft_is_trivial_ack`, `took_tool_action` and `sensitive_hit` exactly,
//! `confidence` within 1e-12.

use critic_gate_core::gate::Gate;
use critic_gate_core::FrameworkConfig;
use critic_gate_core::Turn;
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

/// The upstream derive cases, then those of this repository's generator
/// (`scripts/symfonic_derive_cases.py`, answered by symfonic-core 9.12.0).
const DERIVE_CASES: &str = concat!(
    include_str!("conformance/derive-cases.jsonl"),
    include_str!("conformance/derive-random.jsonl")
);

/// A derive case's domain keywords (their order does not matter: the
/// matched tools are sorted).
fn tool_keywords(case: &Value) -> Vec<(String, Vec<String>)> {
    case["tool_trigger_keywords"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::from_value(v.clone()).unwrap()))
        .collect()
}

/// The intent verdict of `tests/conformance/derive-cases.jsonl` (what
/// symfonic-core 9.12.0's `IntentClassifier().classify` returned): label,
/// matched tools and reasoning exactly, scores within 1e-12.
#[test]
fn every_derived_intent_matches_upstream() {
    use critic_gate_core::derive::intent::classify;
    let mut n = 0;
    let mut bad = Vec::new();
    for (i, line) in DERIVE_CASES.lines().enumerate() {
        let case: Value = serde_json::from_str(line).unwrap();
        let want = &case["expect"]["intent"];
        if !case["intent_on"].as_bool().unwrap() {
            assert!(want.is_null(), "case {}: intent off but a verdict", i + 1);
            continue;
        }
        let keywords = tool_keywords(&case);
        let got = classify(case["user_message"].as_str().unwrap(), &keywords);
        let got = serde_json::to_value(&got).unwrap();
        for key in ["label", "matched_tool_keywords", "reasoning"] {
            if got[key] != want[key] {
                bad.push(format!(
                    "case {}: {key} expected {} got {}",
                    i + 1,
                    want[key],
                    got[key]
                ));
            }
        }
        for key in ["confidence", "action_score", "knowledge_score"] {
            let (g, w) = (got[key].as_f64().unwrap(), want[key].as_f64().unwrap());
            if (g - w).abs() > 1e-12 {
                bad.push(format!("case {}: {key} expected {w} got {g}", i + 1));
            }
        }
        n += 1;
    }
    assert!(n > 1000, "{n} cases with an intent");
    assert!(
        bad.is_empty(),
        "{} of {n}:\n{}",
        bad.len(),
        bad[..bad.len().min(30)].join("\n")
    );
}

/// The fabrication findings of every derive case (what symfonic-core
/// 9.12.0's `detect_fabrication`, given the case's intent verdict,
/// returned): every payload field exactly, confidence within 1e-12, in
/// upstream order.
#[test]
fn every_derived_finding_matches_upstream() {
    use critic_gate_core::derive::fabrication::{detect, Inputs, ToolCalls};
    use critic_gate_core::derive::intent::classify;
    let (mut n, mut findings) = (0, 0);
    let mut bad = Vec::new();
    for (i, line) in DERIVE_CASES.lines().enumerate() {
        let case: Value = serde_json::from_str(line).unwrap();
        let keywords = tool_keywords(&case);
        let text = |k: &str| case[k].as_str().unwrap().to_string();
        let user = text("user_message");
        let intent = case["intent_on"]
            .as_bool()
            .unwrap()
            .then(|| classify(&user, &keywords));
        let keys: Vec<String> = serde_json::from_value(case["identifier_keys"].clone()).unwrap();
        // The calls as JSON text, their keys in the order written.
        #[derive(serde::Deserialize)]
        struct Raw<'a> {
            #[serde(borrow)]
            tool_calls: Vec<&'a serde_json::value::RawValue>,
        }
        let raw: Raw = serde_json::from_str(line).unwrap();
        let got = detect(&Inputs {
            draft: &text("draft"),
            tool_calls: ToolCalls::Written(
                &raw.tool_calls.iter().map(|c| c.get()).collect::<Vec<_>>(),
            ),
            hydrated_context: &text("hydrated_context"),
            user_message: &user,
            identifier_keys: &keys,
            intent: intent.as_ref(),
        })
        .unwrap();
        let got = serde_json::to_value(&got).unwrap();
        let want = &case["expect"]["findings"];
        if !same_findings(&got, want) {
            bad.push(format!("case {}: expected {want}\n   got {got}", i + 1));
        }
        n += 1;
        findings += want.as_array().unwrap().len();
    }
    assert!(
        n == 5000 && findings > 6000,
        "{n} cases, {findings} findings"
    );
    assert!(
        bad.is_empty(),
        "{} of {n}:\n{}",
        bad.len(),
        bad[..bad.len().min(10)].join("\n")
    );
}

/// Whether two lists of finding payloads agree: every field exactly,
/// confidence within 1e-12, in order.
fn same_findings(got: &Value, want: &Value) -> bool {
    let (Some(got), Some(want)) = (got.as_array(), want.as_array()) else {
        return false;
    };
    got.len() == want.len()
        && got.iter().zip(want).all(|(g, w)| {
            [
                "identifier",
                "kind",
                "severity",
                "reason",
                "key",
                "pattern_kind",
                "span",
            ]
            .iter()
            .all(|k| g[k] == w[k])
                && (g["confidence"].as_f64().unwrap() - w["confidence"].as_f64().unwrap()).abs()
                    < 1e-12
        })
}

/// `derive` of the cases real model output and real exporters produce
/// (`scripts/symfonic_derive_hard_cases.py`, answered by symfonic-core
/// 9.12.0 from `json.loads` of each line): drafts of 100 KB to 1.5 MB full
/// of non-ASCII text with claims anywhere (a backtracking search with a
/// step budget loses them), floats whose shortest repr is a tie, tool
/// values of `1e400`, `NaN` and `Infinity`, a repeated key, and 1,000
/// short drafts of the characters where the hand-written scanners
/// (`derive/scan.rs`) could part from CPython's `re`. Each line goes
/// through `derive_line`, as `critic-gate derive` reads it.
#[test]
fn every_hard_derive_case_matches_upstream() {
    use critic_gate_core::derive::derive_line;
    let text = std::fs::read_to_string("tests/conformance/derive-hard.jsonl").unwrap();
    let (mut n, mut long, mut findings) = (0, 0, 0);
    let mut bad = Vec::new();
    for (i, line) in text.lines().enumerate() {
        // A long draft is stored as head + unit * times + tail.
        let mut case: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(_) => Value::Null, // a literal outside JSON: given as it is
        };
        let line = match case["draft"].as_object() {
            Some(d) => {
                let unit = d["unit"].as_str().unwrap();
                let built = format!(
                    "{}{}{}",
                    d["head"].as_str().unwrap(),
                    unit.repeat(d["times"].as_u64().unwrap() as usize),
                    d["tail"].as_str().unwrap()
                );
                case["draft"] = Value::String(built);
                long += 1;
                std::borrow::Cow::Owned(case.to_string())
            }
            None => std::borrow::Cow::Borrowed(line),
        };
        // The expectation is the line's last key.
        let at = line.rfind(", \"expect\": ").unwrap_or(line.len());
        let want: Value = match case.get("expect") {
            Some(w) => w.clone(),
            None => serde_json::from_str(&line[at + 12..line.len() - 1]).unwrap(),
        };
        n += 1;
        findings += want["findings"].as_array().unwrap().len();
        match derive_line(&line) {
            Ok(got) if same_findings(&got["findings"], &want["findings"]) => {}
            Ok(got) => bad.push(format!(
                "case {}: expected {}\n   got {}",
                i + 1,
                want["findings"],
                got["findings"]
            )),
            Err(e) => bad.push(format!("case {}: refused: {e}", i + 1)),
        }
    }
    assert!(
        n >= 1508 && long >= 16 && findings > 1300,
        "{n} cases, {long} long, {findings} findings"
    );
    assert!(
        bad.is_empty(),
        "{} of {n}:\n{}",
        bad.len(),
        bad[..bad.len().min(10)].join("\n")
    );
}

/// The draft the critic sees (extraction block, citation tags, footer per
/// `activation_log_mode`), on 3,000 completions cleaned by symfonic-core
/// 9.12.0 itself (scripts/symfonic_draft_cases.py).
#[test]
fn every_cleaned_draft_matches_upstream() {
    use critic_gate_core::deployment::ActivationLogMode;
    let text = std::fs::read_to_string("tests/conformance/draft-cases.jsonl").unwrap();
    let mut failures = Vec::new();
    let mut changed = 0;
    for (i, line) in text.lines().enumerate() {
        let case: Value = serde_json::from_str(line).unwrap();
        let mode: ActivationLogMode =
            serde_json::from_value(case["activation_log_mode"].clone()).unwrap();
        let completion = case["completion"].as_str().unwrap();
        let got = critic_gate_core::derive::draft::clean(
            completion,
            mode,
            case["has_tool_calls"].as_bool().unwrap(),
        );
        let want = case["expect"].as_str().unwrap();
        changed += usize::from(want != completion);
        if got != want {
            failures.push(format!("line {}: got {got:?}, want {want:?}", i + 1));
        }
    }
    assert!(changed > 2000, "the cases exercise the clean-up: {changed}");
    assert!(
        failures.is_empty(),
        "{} of {}:\n{}",
        failures.len(),
        text.lines().count(),
        failures[..failures.len().min(10)].join("\n")
    );
}
