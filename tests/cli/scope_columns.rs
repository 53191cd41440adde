//! Scope keys as columns of decisions.csv and regressions.csv
//! (`scope_tenant`), named by `--scope-columns` or found in the first
//! 10,000 turns.

use serde_json::Value;

use crate::util::*;

/// The header of a CSV file.
fn header(path: &std::path::Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().next().unwrap().to_string()
}

/// A scope's value as the column holds it (a string as it is, other JSON
/// as text, absent and null empty).
fn cell(scope: &Value, key: &str) -> String {
    match scope.get(key) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

#[test]
fn seed_scope_keys_become_columns_holding_the_recorded_values() {
    let d = Dir::new();
    let out = d.path("seed");
    expect_code(&replay_in(&out, &["datasets/seed.jsonl", "--quiet"]), 0);
    let traffic: Vec<Value> = std::fs::read_to_string(root().join("datasets/seed.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for file in ["decisions.csv", "regressions.csv"] {
        let text = std::fs::read_to_string(out.join(file)).unwrap();
        assert!(
            header(&out.join(file)).contains(",scope,scope_tenant,scope_channel"),
            "{file}: {}",
            header(&out.join(file))
        );
        let rows = csv_rows(&text);
        assert!(!rows.is_empty(), "{file}");
        for r in rows {
            let line: usize = r["line"].parse().unwrap();
            let scope = &traffic[line - 1]["scope"];
            for key in ["tenant", "channel"] {
                assert_eq!(
                    r[&format!("scope_{key}")],
                    cell(scope, key),
                    "{file} line {line}"
                );
            }
        }
    }
    assert_eq!(
        summary(&out)["scope_columns"],
        serde_json::json!(["tenant", "channel"])
    );
}

/// 12,000 turns: `region` first appears at turn 5, `late` only after turn
/// 10,000; the header is the same on one thread, on two, and from stdin.
#[test]
fn the_default_keys_are_those_of_the_first_10000_turns_whatever_the_threads() {
    let d = Dir::new();
    let mut traffic = String::new();
    for i in 0..12_000 {
        let scope = match i {
            5 => r#"{"tenant": "t5", "region": "eu"}"#.to_string(),
            i if i >= 10_000 => r#"{"late": "x", "tenant": "z"}"#.to_string(),
            i => format!(r#"{{"tenant": "t{}", "n": {}}}"#, i % 3, i),
        };
        traffic.push_str(&format!(
            "{{\"run_id\": \"r{i}\", \"turn\": 0, \"draft\": \"Fine, and some padding text to make lines longer than a short ack is.\", \"scope\": {scope}}}\n"
        ));
    }
    let input = d.write("t.jsonl", &traffic);
    let input = input.to_str().unwrap();
    let mut headers = Vec::new();
    for threads in ["1", "2"] {
        let out = d.path(&format!("o{threads}"));
        expect_code(
            &replay_in(&out, &[input, "--threads", threads, "--quiet"]),
            0,
        );
        headers.push(header(&out.join("decisions.csv")));
    }
    let out = d.path("stdin");
    let o = run(
        &["replay", "-", "--out", out.to_str().unwrap(), "--quiet"],
        Some(traffic.as_bytes()),
    );
    expect_code(&o, 0);
    headers.push(header(&out.join("decisions.csv")));
    assert!(
        headers[0].contains(",scope,scope_tenant,scope_n,scope_region,intent,"),
        "{}",
        headers[0]
    );
    assert!(!headers[0].contains("scope_late"), "{}", headers[0]);
    assert!(headers.iter().all(|h| *h == headers[0]), "{headers:?}");
    let rows = csv_rows(&std::fs::read_to_string(d.path("o2").join("decisions.csv")).unwrap());
    assert_eq!(rows[2 * 5]["scope_region"], "eu");
    assert_eq!(rows[2 * 7]["scope_n"], "7");
    assert_eq!(rows[2 * 7]["scope_region"], "");
    assert_eq!(rows[2 * 11_000]["scope_tenant"], "z");
}

#[test]
fn named_scope_columns_replace_the_found_ones() {
    let d = Dir::new();
    for (arg, keys) in [
        ("--scope-columns=channel", ",scope_channel"),
        ("--scope-columns=", ""),
    ] {
        let out = d.path("o");
        expect_code(
            &replay_in(&out, &["datasets/seed.jsonl", arg, "--quiet"]),
            0,
        );
        let decisions = header(&out.join("decisions.csv"));
        assert!(
            decisions.contains(&format!(",scope{keys},intent,")),
            "{arg}: {decisions}"
        );
        let regressions = header(&out.join("regressions.csv"));
        assert!(
            regressions.ends_with(&format!(",scope{keys}")),
            "{arg}: {regressions}"
        );
    }
    let out = d.path("bad");
    expect_error(
        &replay_in(
            &out,
            &["datasets/seed.jsonl", "--scope-columns", "tenant,tenant"],
        ),
        2,
        "--scope-columns: key \"tenant\" is named twice",
    );
    assert!(!out.exists());
}

/// Found by review: keys past the 16th were dropped without a word.
#[test]
fn keys_past_the_sixteenth_are_named_in_a_note() {
    let d = Dir::new();
    let scope: Vec<String> = (0..20).map(|i| format!("\"k{i:02}\": {i}")).collect();
    let line = format!(
        "{{\"run_id\": \"r\", \"turn\": 0, \"draft\": \"ok\", \"scope\": {{{}}}}}\n",
        scope.join(", ")
    );
    let input = d.write("t.jsonl", line);
    let out = d.path("o");
    expect_code(&replay_in(&out, &[input.to_str().unwrap(), "--quiet"]), 0);
    let s = summary(&out);
    assert_eq!(s["scope_columns"].as_array().unwrap().len(), 16);
    let notes = s["notes"].to_string();
    assert!(
        notes.contains("4 more scope keys are not columns (k16, k17, k18, k19)"),
        "{notes}"
    );
}
