//! OTLP traces built for tests: spans as symfonic's exporter writes them
//! (one run's spans, a critic span, documents one a line), and `replay` or
//! `import` of such files read back.

use serde_json::{json, Value};

use crate::util::*;

pub(crate) const T: u64 = 1_796_102_390_000_000_000;

pub(crate) fn attr(k: &str, v: Value) -> Value {
    match v {
        Value::Number(n) => json!({"key": k, "value": {"intValue": n.to_string()}}),
        v => json!({"key": k, "value": {"stringValue": v}}),
    }
}

pub(crate) fn span(name: &str, run: &str, t0: u64, t1: u64, attrs: &[(&str, Value)]) -> Value {
    let mut a = vec![attr("symfonic.run.id", json!(run))];
    a.extend(attrs.iter().map(|(k, v)| attr(k, v.clone())));
    json!({"name": name, "kind": 1, "startTimeUnixNano": t0.to_string(), "endTimeUnixNano": t1.to_string(), "attributes": a})
}

pub(crate) fn critic(run: &str, t: u64, tokens_in: u64, node: &str) -> Value {
    span(
        "symfonic.llm.call",
        run,
        t,
        t + 20_000_000,
        &[
            ("symfonic.node.name", json!(node)),
            ("gen_ai.usage.input_tokens", json!(tokens_in)),
            ("gen_ai.usage.output_tokens", json!(40)),
            (
                "gen_ai.completion.text",
                json!("{\"verdict\": \"approve\"}"),
            ),
        ],
    )
}

/// A run's spans: root, main completion, critic.
pub(crate) fn run_spans(run: &str, t: u64) -> Vec<Value> {
    vec![
        span(
            "symfonic.run",
            run,
            t,
            t + 100_000_000,
            &[
                ("symfonic.entry_point", json!("run")),
                ("symfonic.session.id", json!("s1")),
                ("symfonic.query.text", json!("Where is order 1042?")),
            ],
        ),
        span(
            "symfonic.llm.call",
            run,
            t + 50_000_000,
            t + 60_000_000,
            &[
                ("symfonic.node.name", json!("react")),
                ("gen_ai.completion.text", json!("Order 1042 shipped.")),
            ],
        ),
        critic(run, t + 70_000_000, 300, "metacognition_critic"),
    ]
}

pub(crate) fn doc(spans: Vec<Value>) -> Value {
    json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})
}

pub(crate) fn lines(docs: &[Value]) -> String {
    docs.iter().map(|d| d.to_string() + "\n").collect()
}

/// Replay a trace with `--skip-invalid`: its summary.json.
pub(crate) fn replay_trace(dir: &Dir, files: &[&std::path::Path]) -> Value {
    let mut args = vec!["replay".to_string()];
    args.extend(files.iter().map(|f| f.to_str().unwrap().to_string()));
    let out = dir.path("r");
    let _ = std::fs::remove_dir_all(&out);
    args.extend(
        [
            "--from",
            "otlp",
            "--skip-invalid",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]
        .map(String::from),
    );
    let o = run(&args.iter().map(String::as_str).collect::<Vec<_>>(), None);
    expect_code(&o, 0);
    serde_json::from_str(&dir.read("r/summary.json")).unwrap()
}

pub(crate) fn import_trace(dir: &Dir, files: &[&std::path::Path]) -> Vec<Value> {
    let mut args = vec!["import".to_string()];
    args.extend(files.iter().map(|f| f.to_str().unwrap().to_string()));
    // Not a name the tests give their traces: import refuses to write over an input.
    let out = dir.path("imported.traffic.jsonl");
    args.extend(["--from", "otlp", "--out", out.to_str().unwrap()].map(String::from));
    let o = run(&args.iter().map(String::as_str).collect::<Vec<_>>(), None);
    expect_code(&o, 0);
    dir.read("imported.traffic.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
