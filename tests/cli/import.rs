//! `import` and `--from`: symfonic's own traces (tests/samples/otel, written
//! by symfonic-core 9.12.0's exporter from real runs, with the in-process
//! ground truth beside each) reproduce what production computed for every
//! field a trace can hold; the rest is reported unknown.

use serde_json::{json, Value};

use crate::trace::*;
use crate::util::*;

/// The deployment of samples B, C and E (`generate_traces.py`): the shop
/// domain's keys and trigger keywords.
const SHOP: &str = r#"identifier_keys = ["order_id", "tracking"]
history = "none"
[deployment.tool_trigger_keywords]
get_order_status = ["order", "shipping"]
"#;

fn sample(name: &str) -> String {
    root()
        .join("tests/samples/otel")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

fn ground_truth(name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(sample(name)).unwrap();
    match serde_json::from_str::<Value>(&text).unwrap() {
        Value::Array(a) => a,
        one => vec![one],
    }
}

/// Import a sample under a `[deployment]` table; the traffic lines.
fn import(dir: &Dir, otlp: &str, deployment: &str) -> Vec<Value> {
    let config = dir.write("gate.toml", format!("[deployment]\n{deployment}"));
    let out = dir.path("traffic.jsonl");
    let o = run(
        &[
            "import",
            &sample(otlp),
            "--from",
            "otlp",
            "--config",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    dir.read("traffic.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Equal, numbers within 1e-9 (symfonic rounds a verdict's scores).
fn close(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            (x.as_f64().unwrap() - y.as_f64().unwrap()).abs() <= 1e-9
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| close(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| close(v, w)))
        }
        _ => a == b,
    }
}

fn provenance(t: &Value, signal: &str) -> String {
    t["provenance"][signal].as_str().unwrap().to_string()
}

/// What production's critic did, as the ground truth's ReflectionEvent
/// says, against the imported `critic` (a critic that did not run leaves
/// no span: unknown).
fn check_critic(t: &Value, event: &Value) {
    let ran = event["reflection_tokens_in"] != 0 || event["reflection_tokens_out"] != 0;
    if !ran {
        assert!(t.get("critic").is_none(), "{t}");
        assert_eq!(provenance(t, "critic"), "unknown");
        return;
    }
    let c = &t["critic"];
    assert_eq!(c["ran"], true);
    assert_eq!(c["reflection_tokens_in"], event["reflection_tokens_in"]);
    assert_eq!(c["reflection_tokens_out"], event["reflection_tokens_out"]);
    assert_eq!(c["verdict"], event["verdict"], "{t}");
    for key in ["revised_draft", "refusal_message"] {
        assert_eq!(
            c.get(key).unwrap_or(&Value::Null),
            &event[key],
            "{key}: {t}"
        );
    }
}

/// Capture on: the draft, intent verdict, findings and critic are
/// production's, turn for turn.
fn check_captured(turns: &[Value], truth: &[Value], intent_on: bool) {
    assert_eq!(turns.len(), truth.len());
    for (t, g) in turns.iter().zip(truth) {
        // symfonic's run is the turn; the conversation is its session.
        assert_eq!(t["turn_id"], g["run_id"]);
        assert_eq!(t["run_id"], "tenant-demo/sess-0001");
        let event = &g["reflection_event"];
        if event["reflection_tokens_in"] != 0 {
            assert_eq!(t["draft"], event["original_draft"], "{t}");
        }
        assert_eq!(provenance(t, "draft"), "derived");
        match intent_on {
            true => assert!(
                close(&t["intent_verdict"], &g["intent_verdict"]),
                "{t}\n{g}"
            ),
            false => assert_eq!(t["intent_verdict"], Value::Null),
        }
        assert_eq!(provenance(t, "intent"), "derived");
        let want = match &g["fabrication_findings"] {
            Value::Null => Value::Array(vec![]),
            f => f.clone(),
        };
        assert!(close(&t["fabrication_findings"], &want), "{t}\n{want}");
        assert_eq!(provenance(t, "findings"), "derived");
        for s in ["confidence", "sensitive"] {
            assert_eq!(provenance(t, s), "unknown");
        }
        check_critic(t, event);
    }
}

#[test]
fn sample_b_capture_on_intent_observe_reproduces_production() {
    let dir = Dir::new();
    let deployment = format!(
        "intent_filter_mode = \"observe\"\ntool_routing_mode = \"observe\"\nfabrication_check_mode = \"observe\"\n{SHOP}"
    );
    let turns = import(
        &dir,
        "B_capture_on_selective_gate_intent_observe.otlp.json",
        &deployment,
    );
    let truth = ground_truth("B_capture_on_selective_gate_intent_observe.agent_response.json");
    check_captured(&turns, &truth, true);
    // The turn's place is its run's in the session (by start), not
    // symfonic.turn.index.
    let places: Vec<u64> = turns.iter().map(|t| t["turn"].as_u64().unwrap()).collect();
    assert_eq!(places, [0, 1, 2]);
    assert_eq!(
        turns[1]["tool_calls_this_turn"][0]["args"],
        serde_json::json!({"order_id": "ORD-1042"})
    );
    assert_eq!(
        turns[0]["scope"],
        serde_json::json!({"tenant": "tenant-demo", "session": "sess-0001"})
    );
}

#[test]
fn sample_c_intent_off_no_history_reproduces_production() {
    let dir = Dir::new();
    let deployment = format!("fabrication_check_mode = \"observe\"\n{SHOP}");
    let turns = import(
        &dir,
        "C_capture_on_selective_gate_no_intent_no_history.otlp.json",
        &deployment,
    );
    let truth =
        ground_truth("C_capture_on_selective_gate_no_intent_no_history.agent_response.json");
    check_captured(&turns, &truth, false);
    // The ack the gate skipped left no critic span.
    assert!(turns[0].get("critic").is_none());
}

#[test]
fn sample_a_capture_off_leaves_every_text_signal_unknown() {
    let dir = Dir::new();
    let turns = import(&dir, "A_defaults_capture_off.otlp.json", "");
    let truth = ground_truth("A_defaults_capture_off.agent_response.json");
    assert_eq!(turns.len(), 2);
    for (t, g) in turns.iter().zip(&truth) {
        assert_eq!(t["draft"], "");
        assert_eq!(provenance(t, "draft"), "unknown");
        // Both intent stages and the fabrication check are off in this
        // deployment: production computed none, which needs no text.
        assert_eq!(t["intent_verdict"], Value::Null);
        assert_eq!(provenance(t, "intent"), "derived");
        assert_eq!(provenance(t, "findings"), "derived");
        let c = &t["critic"];
        let event = &g["reflection_event"];
        assert_eq!(c["reflection_tokens_in"], event["reflection_tokens_in"]);
        assert_eq!(c["reflection_tokens_out"], event["reflection_tokens_out"]);
        // No completion text: a call that fired, without a label.
        assert!(c.get("verdict").is_none(), "{t}");
    }
    let names: Vec<&Value> = turns[1]["tool_calls_this_turn"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["name"])
        .collect();
    assert_eq!(names, ["get_order_status"]);
    assert!(turns[1]["tool_calls_this_turn"][0].get("args").is_none());
}

#[test]
fn sample_a_with_the_fabrication_check_on_has_unknown_findings() {
    let dir = Dir::new();
    let turns = import(
        &dir,
        "A_defaults_capture_off.otlp.json",
        "fabrication_check_mode = \"observe\"\nintent_filter_mode = \"enforce\"\n",
    );
    for t in &turns {
        assert!(
            t.get("fabrication_findings").is_none() && t.get("intent_verdict").is_none(),
            "{t}"
        );
        assert_eq!(provenance(t, "findings"), "unknown");
        assert_eq!(provenance(t, "intent"), "unknown");
    }
}

#[test]
fn sample_d_direct_middleware_holds_neither_draft_nor_sensitive_hit() {
    let dir = Dir::new();
    let turns = import(&dir, "D_direct_middleware_sensitive.otlp.json", "");
    let event = &ground_truth("D_direct_middleware_sensitive.reflection_event.json")[0];
    assert_eq!(turns.len(), 1);
    let t = &turns[0];
    assert_eq!(t["turn_id"], event["run_id"]);
    assert_eq!(provenance(t, "draft"), "unknown");
    // The hit ("pii") and the confidence (1.0) are in the event only.
    assert!(t.get("sensitive_hit").is_none() && t.get("confidence").is_none());
    assert_eq!(provenance(t, "sensitive"), "unknown");
    check_critic(t, event);
}

#[test]
fn sample_e_history_the_trace_does_not_show_is_a_production_disagreement() {
    let dir = Dir::new();
    let deployment = format!("fabrication_check_mode = \"observe\"\n{SHOP}");
    let turns = import(&dir, "E_ack_after_tool_history.otlp.json", &deployment);
    let truth = ground_truth("E_ack_after_tool_history.agent_response.json");
    assert_eq!(turns.len(), 1);
    // The earlier call came in the history: no span shows it.
    assert_eq!(turns[0]["tool_calls_this_turn"], serde_json::json!([]));
    check_critic(&turns[0], &truth[0]["reflection_event"]);
    // Replayed, the smart gate skips the ack production's critic reviewed.
    let traffic = dir.path("traffic.jsonl");
    let o = run(
        &[
            "replay",
            traffic.to_str().unwrap(),
            "--out",
            dir.path("r").to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    let s: Value = serde_json::from_str(&dir.read("r/summary.json")).unwrap();
    assert_eq!(
        s["variants"]["smart"]["production_fired_variant_skips"], 1,
        "{s}"
    );
}

/// A report folder's files, with what names the input taken out: the
/// `source` and `line` cells of every table, `sources`, `source_facts` and
/// `input_counts` of summary.json, and `FILE:LINE` / `FILE` in report.md.
fn without_input_names(dir: &std::path::Path, names: &[&str]) -> Vec<(String, String)> {
    let place = regex::Regex::new(&format!(
        "(?:{}):[0-9]+",
        names
            .iter()
            .map(|n| regex::escape(n))
            .collect::<Vec<_>>()
            .join("|")
    ))
    .unwrap();
    files_in(dir)
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(dir.join(&f)).unwrap();
            let text = if f == "summary.json" {
                let mut v: Value = serde_json::from_str(&text).unwrap();
                for k in ["sources", "source_facts", "input_counts"] {
                    v.as_object_mut().unwrap().remove(k);
                }
                v.to_string()
            } else if f == ".critic-gate-report" {
                // The manifest's sizes are those of files that name their
                // inputs: its file names are compared.
                text.lines()
                    .map(|l| l.rsplit('\t').next().unwrap_or(l))
                    .collect::<Vec<_>>()
                    .join("\n")
            } else if f.ends_with(".csv") {
                let mut lines = text.lines();
                let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
                let drop: Vec<usize> = header
                    .iter()
                    .enumerate()
                    .filter(|(_, h)| matches!(**h, "source" | "line"))
                    .map(|(i, _)| i)
                    .collect();
                // The input-naming columns come before any quoted cell.
                text.lines()
                    .map(|l| {
                        l.splitn(header.len().min(4), ',')
                            .enumerate()
                            .filter(|(i, _)| !drop.contains(i))
                            .map(|(_, c)| c)
                            .collect::<Vec<_>>()
                            .join(",")
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            } else {
                let t = place.replace_all(&text, "INPUT:N").into_owned();
                names.iter().fold(t, |t, n| t.replace(n, "INPUT"))
            };
            (f, text)
        })
        .collect()
}

/// 225 synthetic transcripts (datasets/transcripts.jsonl): `import` then
/// `replay` gives the reports `replay --from openai-chat` gives, byte for
/// byte once the input's names are taken out (the converted turns reach
/// the gate as values, not as lines).
#[test]
fn import_then_replay_is_replay_from_transcripts() {
    let input = root().join("datasets/transcripts.jsonl");
    let config = root().join("datasets/transcripts.toml");
    let (input, config) = (input.to_str().unwrap(), config.to_str().unwrap());
    let dir = Dir::new();
    import_then_replay_is_replay_from(&dir, input, "openai-chat", config, &[]);
    let direct = dir.path("direct");
    // A turn's line is its conversation's line.
    let decisions = std::fs::read_to_string(direct.join("decisions.csv")).unwrap();
    assert!(
        decisions
            .lines()
            .nth(1)
            .unwrap()
            .contains("transcripts.jsonl,1,syn-21-0000001,0,"),
        "{decisions:.300}"
    );
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(direct.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(s["provenance"]["intent"]["derived"], 1500);
    assert_eq!(s["provenance"]["confidence"]["unknown"], 1500);
    assert!(s["notes"].as_array().unwrap().iter().any(|n| n
        .as_str()
        .unwrap()
        .starts_with("confidence unknown on 1500 of 1500 turns")));

    // Segments by any field of the traffic line, and every decision.
    let dir = Dir::new();
    import_then_replay_is_replay_from(&dir, input, "openai-chat", config, GROUPED);
}

/// Flags that read any field of the traffic line (`--group-by`), and
/// write every decision.
const GROUPED: &[&str] = &[
    "--group-by",
    "provenance.critic",
    "--group-by",
    "intent_verdict.reasoning",
    "--group-by",
    "tool_calls_this_turn",
    "--decisions",
    "all",
];

/// symfonic's own traces (every sample in one replay): as for transcripts.
#[test]
fn import_then_replay_is_replay_from_traces() {
    let input = Dir::new();
    let gate = std::fs::read_to_string(root().join("datasets/gate.toml")).unwrap();
    let toml = input.write(
        "gate.toml",
        format!("{gate}\n[deployment]\nintent_filter_mode = \"observe\"\nfabrication_check_mode = \"observe\"\n{SHOP}"),
    );
    let samples = [
        "A_defaults_capture_off",
        "B_capture_on_selective_gate_intent_observe",
        "C_capture_on_selective_gate_no_intent_no_history",
        "D_direct_middleware_sensitive",
        "E_ack_after_tool_history",
    ];
    // One file of pretty-printed documents one after another.
    let all: Vec<String> = samples
        .iter()
        .map(|n| std::fs::read_to_string(sample(&format!("{n}.otlp.json"))).unwrap())
        .collect();
    let file = input.write("all.otlp.json", all.join("\n"));
    for flags in [&[][..], GROUPED] {
        let dir = Dir::new();
        import_then_replay_is_replay_from(
            &dir,
            file.to_str().unwrap(),
            "otlp",
            toml.to_str().unwrap(),
            flags,
        );
    }
}

/// `replay --from FORMAT` of `input`, and `import` then `replay`, give
/// the same reports; the direct replay's folder is `dir`'s "direct".
fn import_then_replay_is_replay_from(
    dir: &Dir,
    input: &str,
    from: &str,
    config: &str,
    flags: &[&str],
) {
    let direct = dir.path("direct");
    let o = run(
        &[
            "replay",
            input,
            "--from",
            from,
            "--config",
            config,
            "--out",
            direct.to_str().unwrap(),
            "--label",
            "t",
            "--quiet",
        ]
        .iter()
        .chain(flags)
        .copied()
        .collect::<Vec<_>>(),
        None,
    );
    expect_code(&o, 0);
    let traffic = dir.path("traffic.jsonl");
    let o = run(
        &[
            "import",
            input,
            "--from",
            from,
            "--config",
            config,
            "--out",
            traffic.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    let imported = dir.path("imported");
    let o = run(
        &[
            "replay",
            traffic.to_str().unwrap(),
            "--config",
            config,
            "--out",
            imported.to_str().unwrap(),
            "--label",
            "t",
            "--quiet",
        ]
        .iter()
        .chain(flags)
        .copied()
        .collect::<Vec<_>>(),
        None,
    );
    expect_code(&o, 0);
    let names = [input, traffic.to_str().unwrap()];
    let (a, b) = (
        without_input_names(&direct, &names),
        without_input_names(&imported, &names),
    );
    assert_eq!(
        a.iter().map(|f| &f.0).collect::<Vec<_>>(),
        b.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    for ((file, x), (_, y)) in a.iter().zip(&b) {
        assert!(x == y, "{file} differs");
    }
    // Every other file byte for byte (the charts, the schema).
    for f in files_in(&direct)
        .iter()
        .filter(|f| f.ends_with(".svg") || *f == "schema.json")
    {
        assert_eq!(
            std::fs::read(direct.join(f)).unwrap(),
            std::fs::read(imported.join(f)).unwrap(),
            "{f}"
        );
    }
}

/// The other commands read transcripts and traces too.
#[test]
fn every_reading_command_takes_from() {
    let dir = Dir::new();
    let input = root().join("datasets/transcripts.jsonl");
    let input = input.to_str().unwrap();
    let config = root().join("datasets/transcripts.toml");
    let config = config.to_str().unwrap();
    let sweep = dir.write(
        "sweep.toml",
        format!(
            "{}\n[sweep]\nmetacognition_confidence_threshold = [0.4, 0.6]\n",
            std::fs::read_to_string(config).unwrap()
        ),
    );
    for args in [
        vec![
            "sweep",
            input,
            "--from",
            "openai-chat",
            "--config",
            sweep.to_str().unwrap(),
            "--out",
            dir.path("s").to_str().unwrap(),
            "--quiet",
        ],
        vec![
            "calibrate",
            input,
            "--from",
            "openai-chat",
            "--config",
            sweep.to_str().unwrap(),
            "--out",
            dir.path("c").to_str().unwrap(),
            "--max-regression-rate",
            "0.5",
            "--quiet",
        ],
        vec![
            "mine",
            input,
            "--from",
            "openai-chat",
            "--config",
            config,
            "--out",
            dir.path("m").to_str().unwrap(),
            "--quiet",
        ],
        vec![
            "replay",
            input,
            "--from",
            "openai-chat",
            "--config",
            config,
            "--partial",
            dir.path("p.partial").to_str().unwrap(),
            "--quiet",
        ],
    ] {
        let o = run(&args, None);
        expect_code(&o, 0);
    }
    let s: Value = serde_json::from_str(&dir.read("s/summary.json")).unwrap();
    assert_eq!(s["turns"], 1500);
    let trace = sample("B_capture_on_selective_gate_intent_observe.otlp.json");
    let o = run(
        &[
            "replay",
            &trace,
            "--from",
            "otlp",
            "--out",
            dir.path("o").to_str().unwrap(),
            "--quiet",
        ],
        None,
    );
    expect_code(&o, 0);
    let s: Value = serde_json::from_str(&dir.read("o/summary.json")).unwrap();
    assert_eq!(
        (s["turns"].as_u64(), s["input_counts"]["runs"].as_u64()),
        (Some(3), Some(3))
    );
    let o = run(&["explain", &trace, "--from", "otlp"], None);
    expect_code(&o, 0);
    assert!(
        stdout(&o).contains("turn tenant-demo/sess-0001#2"),
        "{}",
        stdout(&o)
    );
}

/// A good conversation, and what a bad one says, by line.
#[test]
fn bad_transcripts_are_named_by_line_or_counted() {
    let dir = Dir::new();
    let good = r#"{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello!"}]}"#;
    for (bad, says) in [
        (r#"{"run_id": "x"}"#, "a conversation needs \"messages\""),
        (r#"[{"role": "tool", "tool_call_id": "c9", "content": "42"}, {"role": "assistant", "content": "ok"}]"#, "messages[0]: tool message answers tool_call_id \"c9\", which no earlier assistant message called"),
        (r#"{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hel"#, "not a conversation: EOF while parsing"),
        (r#"{"messages": [{"role": "assistant", "content": "x"}], "ts": "yesterday"}"#, "turn 0: ts must be an RFC 3339 timestamp"),
        (r#"{"messages": [{"role": "assistant", "content": "x", "critic": {"verdict": "maybe"}}]}"#, "turn 0: critic.verdict"),
    ] {
        let f = dir.write("t.jsonl", format!("{good}\n{bad}\n{good}\n"));
        let f = f.to_str().unwrap();
        let o = run(&["replay", f, "--from", "openai-chat", "--out", dir.path("r").to_str().unwrap()], None);
        expect_error(&o, 2, &format!("{f}:2: {says}"));
        assert!(!dir.path("r/summary.json").exists(), "nothing half-written");
        let o = run(&["replay", f, "--from", "openai-chat", "--out", dir.path("k").to_str().unwrap(), "--skip-invalid", "--quiet", "--force"], None);
        expect_code(&o, 0);
        let s: Value = serde_json::from_str(&dir.read("k/summary.json")).unwrap();
        assert_eq!((s["turns"].as_u64(), s["rejected"].as_u64(), s["lines"].as_u64()), (Some(2), Some(1), Some(3)), "{bad}");
        let r = rejects(&dir.path("k"));
        assert_eq!((r.len(), r[0]["line"].as_u64()), (1, Some(2)));
        assert!(r[0]["reason"].as_str().unwrap().contains(says), "{}", r[0]);
        std::fs::remove_dir_all(dir.path("k")).unwrap();
        let out = dir.path("i.jsonl");
        let o = run(&["import", f, "--from", "openai-chat", "--out", out.to_str().unwrap()], None);
        expect_error(&o, 2, &format!("{f}:2: {says}"));
        assert!(!out.exists(), "nothing half-written");
    }
}

/// An OTLP document that is not what the format says is refused whole, by
/// line; the other documents are read.
#[test]
fn bad_trace_documents_are_named_by_line_or_counted() {
    let dir = Dir::new();
    let text = std::fs::read_to_string(sample(
        "C_capture_on_selective_gate_no_intent_no_history.otlp.json",
    ))
    .unwrap();
    let good: Value = serde_json::from_str(&text).unwrap();
    let span =
        |doc: &mut Value| -> Value { doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0].take() };
    let mut cases: Vec<(String, &str)> = Vec::new();
    let mut doc = good.clone();
    let mut s = span(&mut doc);
    s["attributes"]
        .as_array_mut()
        .unwrap()
        .retain(|kv| kv["key"] != "symfonic.run.id");
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0] = s;
    cases.push((
        doc.to_string(),
        "(symfonic.run): no symfonic.run.id attribute",
    ));
    let mut doc = good.clone();
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["kind"] = "SPAN_KIND_SIDEWAYS".into();
    cases.push((
        doc.to_string(),
        "kind \"SPAN_KIND_SIDEWAYS\" is not a span kind",
    ));
    let mut doc = good.clone();
    // A whole number written as a JSON number is read (OpenTelemetry JS
    // writes them so); a fraction is no 64-bit integer.
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["startTimeUnixNano"] = 1796102390.5.into();
    cases.push((
        doc.to_string(),
        "startTimeUnixNano 1796102390.5 is not a whole number within 64 bits",
    ));
    let cut = good.to_string();
    cases.push((
        cut[..cut.len() / 2].to_string(),
        "not an OTLP/JSON document",
    ));
    cases.push((
        "{\"resourceMetrics\": []}".into(),
        "unknown field `resourceMetrics`",
    ));
    let other = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "GET /", "kind": 3}]}]}]});
    for (bad, says) in cases {
        let f = dir.write("t.otlp.jsonl", format!("{bad}\n{other}\n"));
        let f = f.to_str().unwrap();
        let o = run(
            &[
                "replay",
                f,
                "--from",
                "otlp",
                "--out",
                dir.path("r").to_str().unwrap(),
            ],
            None,
        );
        expect_error(&o, 2, &format!("{f}:1: "));
        assert!(stderr(&o).contains(says), "{says}: {}", stderr(&o));
        let o = run(
            &[
                "replay",
                f,
                "--from",
                "otlp",
                "--out",
                dir.path("k").to_str().unwrap(),
                "--skip-invalid",
                "--quiet",
                "--force",
            ],
            None,
        );
        expect_code(&o, 0);
        let s: Value = serde_json::from_str(&dir.read("k/summary.json")).unwrap();
        assert_eq!(
            (s["turns"].as_u64(), s["rejected"].as_u64()),
            (Some(0), Some(1)),
            "{says}"
        );
        assert_eq!(s["input_counts"]["foreign_spans"], 1, "{s}");
        std::fs::remove_dir_all(dir.path("k")).unwrap();
    }
}

/// The Collector writes one batch a line: a run's spans spread over many
/// documents, in any order, and a run's background span in the next run's
/// batch, give the turns of the trace written as one document.
#[test]
fn a_run_split_over_many_documents_is_one_turn() {
    let dir = Dir::new();
    let name = "B_capture_on_selective_gate_intent_observe.otlp.json";
    let deployment =
        format!("intent_filter_mode = \"observe\"\nfabrication_check_mode = \"observe\"\n{SHOP}");
    let whole = import(&dir, name, &deployment);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(sample(name)).unwrap()).unwrap();
    let spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .unwrap()
        .clone();
    // One span a document, the last span first, then every third.
    let mut order: Vec<usize> = (0..spans.len()).rev().collect();
    order.sort_by_key(|i| i % 3);
    let lines: Vec<String> = order
        .iter()
        .map(|&i| {
            let mut one = doc.clone();
            one["resourceSpans"][0]["scopeSpans"][0]["spans"] =
                Value::Array(vec![spans[i].clone()]);
            one.to_string()
        })
        .collect();
    let split = dir.write("split.otlp.jsonl", lines.join("\n") + "\n");
    let config = dir.path("gate.toml");
    let out = dir.path("split.jsonl");
    let o = run(
        &[
            "import",
            split.to_str().unwrap(),
            "--from",
            "otlp",
            "--config",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    let got: Vec<Value> = dir
        .read("split.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(got, whole);
    assert!(
        stderr(&o).contains(&format!("documents: {}", spans.len())),
        "{}",
        stderr(&o)
    );
}

// What an adversarial review of `import` / `--from` found, one test each:
// input limits, output paths, traces spread over documents and files,
// span times, skill-gate calls, and the provenance a line may claim.

#[test]
fn max_line_bytes_holds_for_transcripts_and_traces() {
    let dir = Dir::new();
    let long = json!([{"role": "user", "content": "x".repeat(5000)}, {"role": "assistant", "content": "ok"}]);
    let f = dir.write("long.jsonl", format!("{long}\n"));
    let f = f.to_str().unwrap();
    for from in ["openai-chat", "otlp"] {
        let o = run(
            &[
                "replay",
                f,
                "--from",
                from,
                "--max-line-bytes",
                "1000",
                "--out",
                dir.path("r").to_str().unwrap(),
            ],
            None,
        );
        let bytes = long.to_string().len();
        expect_error(
            &o,
            2,
            &format!("{f}:1: the line is {bytes} bytes, longer than --max-line-bytes"),
        );
        let o = run(
            &[
                "import",
                f,
                "--from",
                from,
                "--max-line-bytes",
                "1000",
                "--out",
                dir.path("o.jsonl").to_str().unwrap(),
            ],
            None,
        );
        expect_error(&o, 2, "longer than --max-line-bytes");
    }
}

#[test]
fn import_writes_only_a_regular_file_of_plain_json_lines() {
    let dir = Dir::new();
    let f = dir.write(
        "c.jsonl",
        "[{\"role\": \"assistant\", \"content\": \"ok\"}]\n",
    );
    let target = dir.write("target.jsonl", "keep\n");
    let link = dir.path("link.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for (out, says) in [
        (link.to_str().unwrap(), "is a symbolic link"),
        ("-", "--out -: give the file to write"),
        ("/dev/null", "is not a regular file"),
        (
            &*dir.path("t.jsonl.gz").to_string_lossy().into_owned(),
            "writes plain JSON Lines",
        ),
    ] {
        let o = run(
            &[
                "import",
                f.to_str().unwrap(),
                "--from",
                "openai-chat",
                "--out",
                out,
            ],
            None,
        );
        expect_error(&o, 2, says);
    }
    assert_eq!(dir.read("target.jsonl"), "keep\n");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn a_clean_import_removes_the_rejects_of_the_last() {
    let dir = Dir::new();
    let good = "[{\"role\": \"assistant\", \"content\": \"ok\"}]";
    let bad = dir.write("bad.jsonl", format!("{good}\nnot json\n"));
    let out = dir.path("t.jsonl");
    let o = run(
        &[
            "import",
            bad.to_str().unwrap(),
            "--from",
            "openai-chat",
            "--skip-invalid",
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    assert!(dir.path("t.rejects.jsonl").exists());
    let clean = dir.write("good.jsonl", format!("{good}\n"));
    let o = run(
        &[
            "import",
            clean.to_str().unwrap(),
            "--from",
            "openai-chat",
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    assert!(
        !dir.path("t.rejects.jsonl").exists(),
        "a stale rejects file stays"
    );
}

#[test]
fn pretty_documents_are_read_one_by_one_and_a_cut_one_is_one_reject() {
    let dir = Dir::new();
    let a = serde_json::to_string_pretty(&doc(run_spans("r1", T))).unwrap();
    let b = serde_json::to_string_pretty(&doc(run_spans("r2", T + 1_000_000_000))).unwrap();
    let two = dir.write("two.json", format!("{a}\n{b}\n"));
    let s = replay_trace(&dir, &[&two]);
    assert_eq!(
        (s["turns"].as_u64(), s["rejected"].as_u64()),
        (Some(2), Some(0)),
        "{}",
        s["input_counts"]
    );
    let cut = dir.write("cut.json", format!("{a}\n{}\n", &b[..b.len() / 2]));
    let s = replay_trace(&dir, &[&cut]);
    assert_eq!(
        (s["turns"].as_u64(), s["rejected"].as_u64()),
        (Some(1), Some(1))
    );
    let r = rejects(&dir.path("r"));
    let b_line = a.lines().count() as u64 + 1;
    assert_eq!(r[0]["line"].as_u64(), Some(b_line), "{}", r[0]);
    assert!(
        r[0]["reason"]
            .as_str()
            .unwrap()
            .contains("not an OTLP/JSON document"),
        "{}",
        r[0]
    );
}

#[test]
fn span_times_that_are_missing_or_reversed_are_no_figures() {
    let dir = Dir::new();
    let mut spans = run_spans("r1", T);
    spans[2]["endTimeUnixNano"] = json!((T + 60_000_000).to_string()); // before its start
    let mut other = run_spans("r2", T + 1_000_000_000);
    other[2].as_object_mut().unwrap().remove("endTimeUnixNano");
    other[0]
        .as_object_mut()
        .unwrap()
        .remove("startTimeUnixNano");
    let f = dir.write("t.jsonl", lines(&[doc(spans), doc(other)]));
    let turns = import_trace(&dir, &[&f]);
    for t in &turns {
        assert!(t["critic"].get("reflection_latency_ms").is_none(), "{t}");
    }
    let r2 = turns.iter().find(|t| t["turn_id"] == "r2").unwrap();
    assert!(r2.get("ts").is_none(), "{r2}");
}

#[test]
fn skill_gate_calls_are_turns_of_their_own_run_id() {
    let dir = Dir::new();
    let mut spans = run_spans("r1", T);
    spans.push(critic("r1", T + 95_000_000, 77, "metacognition_skill_gate"));
    let lone = vec![critic(
        "skill-gate",
        T + 2_000_000_000,
        78,
        "metacognition_skill_gate",
    )];
    let f = dir.write("t.jsonl", lines(&[doc(spans), doc(lone)]));
    let turns = import_trace(&dir, &[&f]);
    let skill: Vec<&Value> = turns
        .iter()
        .filter(|t| t["call_site"] == "skill_gate")
        .collect();
    assert_eq!(skill.len(), 2);
    // Numbered by their span's start, in Unix nanoseconds.
    for (t, start) in skill.iter().zip([T + 95_000_000, T + 2_000_000_000]) {
        assert_eq!(
            (t["run_id"].as_str(), t["turn"].as_u64()),
            (Some("skill-gate"), Some(start)),
            "{t}"
        );
    }
}

#[test]
fn runs_and_sessions_spread_over_files_are_one() {
    let dir = Dir::new();
    let spans = run_spans("r1", T);
    let a = dir.write("a.jsonl", lines(&[doc(spans[..2].to_vec())]));
    let b = dir.write(
        "b.jsonl",
        lines(&[
            doc(spans[2..].to_vec()),
            doc(run_spans("r2", T + 1_000_000_000)),
        ]),
    );
    let turns = import_trace(&dir, &[&a, &b]);
    assert_eq!(turns.len(), 2);
    assert_eq!(
        turns[0]["critic"]["reflection_tokens_in"], 300,
        "{}",
        turns[0]
    );
    assert_eq!(
        (turns[0]["turn"].as_u64(), turns[1]["turn"].as_u64()),
        (Some(0), Some(1))
    );
    let s = replay_trace(&dir, &[&a, &b]);
    assert_eq!(s["input_counts"]["runs"], 2, "{}", s["input_counts"]);
    assert!(s["input_counts"]
        .get("runs_without_root")
        .is_none_or(|n| n == 0));
}

#[test]
fn spans_a_turn_cannot_hold_are_counted() {
    let dir = Dir::new();
    let mut spans = run_spans("r1", T);
    spans.push(critic("r1", T + 95_000_000, 500, "metacognition_critic"));
    spans.push(span("HTTP POST", "r1", T + 1, T + 2, &[]));
    let mut again = run_spans("r1", T + 5);
    again.truncate(1);
    let f = dir.write("t.jsonl", lines(&[doc(spans), doc(again)]));
    let s = replay_trace(&dir, &[&f]);
    let c = &s["input_counts"];
    assert_eq!(
        (
            c["critic_spans_left_out"].as_u64(),
            c["root_spans_left_out"].as_u64(),
            c["foreign_spans"].as_u64()
        ),
        (Some(1), Some(1), Some(1)),
        "{c}"
    );
    assert!(
        c.get("unknown_symfonic_spans").is_none_or(|n| n == 0),
        "{c}"
    );
    assert!(
        s["notes"].to_string().contains("critic spans"),
        "{}",
        s["notes"]
    );
}

#[test]
fn merge_refuses_shards_of_other_deployments() {
    let dir = Dir::new();
    let f = dir.write(
        "c.jsonl",
        "[{\"role\": \"assistant\", \"content\": \"ok\"}]\n",
    );
    let on = dir.write(
        "on.toml",
        "[deployment]\nfabrication_check_mode = \"observe\"\n",
    );
    let off = dir.write("off.toml", "[deployment]\n");
    for (cfg, p) in [(&on, "a.partial"), (&off, "b.partial")] {
        let o = run(
            &[
                "replay",
                f.to_str().unwrap(),
                "--from",
                "openai-chat",
                "--config",
                cfg.to_str().unwrap(),
                "--partial",
                dir.path(p).to_str().unwrap(),
                "--quiet",
            ],
            None,
        );
        expect_code(&o, 0);
    }
    let o = run(
        &[
            "merge",
            dir.path("a.partial").to_str().unwrap(),
            dir.path("b.partial").to_str().unwrap(),
            "--out",
            dir.path("m").to_str().unwrap(),
        ],
        None,
    );
    expect_error(&o, 2, "the deployment ([deployment])");
}

#[test]
fn a_line_claims_recorded_only_for_what_it_holds() {
    let dir = Dir::new();
    for (field, line) in [
        (
            "confidence",
            r#"{"run_id": "a", "draft": "x", "provenance": {"confidence": "recorded"}}"#,
        ),
        (
            "sensitive",
            r#"{"run_id": "a", "draft": "x", "provenance": {"sensitive": "recorded"}}"#,
        ),
        (
            "critic",
            r#"{"run_id": "a", "draft": "x", "provenance": {"critic": "recorded"}}"#,
        ),
    ] {
        let f = dir.write("t.jsonl", format!("{line}\n"));
        let o = run(
            &[
                "replay",
                f.to_str().unwrap(),
                "--out",
                dir.path("r").to_str().unwrap(),
            ],
            None,
        );
        expect_error(
            &o,
            2,
            &format!("provenance.{field} is \"recorded\", but the line records no"),
        );
    }
}

#[test]
fn the_refuse_threshold_is_a_confidence() {
    let dir = Dir::new();
    let cfg = dir.write(
        "c.toml",
        "[deployment]\nfabrication_refuse_min_confidence = -3\n",
    );
    let f = dir.write(
        "c.jsonl",
        "[{\"role\": \"assistant\", \"content\": \"ok\"}]\n",
    );
    let o = run(
        &[
            "replay",
            f.to_str().unwrap(),
            "--from",
            "openai-chat",
            "--config",
            cfg.to_str().unwrap(),
            "--out",
            dir.path("r").to_str().unwrap(),
        ],
        None,
    );
    expect_error(&o, 2, "fabrication_refuse_min_confidence must be in [0, 1]");
}

#[test]
fn a_turn_with_more_tool_calls_than_a_replay_holds_is_refused() {
    let dir = Dir::new();
    let mut messages = Vec::new();
    for i in 0..2100 {
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("c{i}"), "type": "function", "function": {"name": "t", "arguments": "{}"}}]}));
        messages.push(json!({"role": "assistant", "content": "ok"}));
    }
    let f = dir.write("c.jsonl", format!("{}\n", Value::Array(messages)));
    let cfg = dir.write("c.toml", "[deployment]\nhistory = \"conversation\"\n");
    let o = run(
        &[
            "import",
            f.to_str().unwrap(),
            "--from",
            "openai-chat",
            "--config",
            cfg.to_str().unwrap(),
            "--out",
            dir.path("t.jsonl").to_str().unwrap(),
        ],
        None,
    );
    expect_error(&o, 2, "more than 1024 tool calls");
}

#[test]
fn explain_skips_the_lines_replay_skips_and_no_other() {
    let dir = Dir::new();
    let f = dir.write(
        "c.jsonl",
        "[{\"role\": \"assistant\", \"content\": \"ok\"}]\n\u{c}\n",
    );
    let o = run(
        &["explain", f.to_str().unwrap(), "--from", "openai-chat"],
        None,
    );
    expect_error(&o, 2, ":2: ");
}

#[test]
fn integers_past_64_bits_ground_as_python_writes_them() {
    let line = r#"{"user_message": "track it", "draft": "Your tracking=12345678901234567890123 ok.", "tool_calls": [{"name": "t", "args": {"x": 12345678901234567890123}}], "identifier_keys": ["tracking"]}"#;
    let dir = Dir::new();
    let f = dir.write("d.jsonl", format!("{line}\n"));
    let o = run(&["derive", f.to_str().unwrap()], None);
    expect_code(&o, 0);
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert!(!v["findings"].to_string().contains("\"kv\""), "{v}");
}

/// A second review: a cut document in the middle of a pretty-printed file
/// refuses itself only, and a line that cannot be read refuses the whole
/// document holding it.
#[test]
fn a_bad_pretty_document_refuses_itself_and_no_other() {
    let dir = Dir::new();
    let docs: Vec<String> = (0..4)
        .map(|k| {
            serde_json::to_string_pretty(&doc(run_spans(&format!("r{k}"), T + k * 1_000_000_000)))
                .unwrap()
        })
        .collect();
    let cut = &docs[1][..docs[1].len() / 2];
    let f = dir.write(
        "cut.json",
        format!("{}\n{cut}\n{}\n{}\n", docs[0], docs[2], docs[3]),
    );
    let s = replay_trace(&dir, &[&f]);
    assert_eq!(
        (s["turns"].as_u64(), s["rejected"].as_u64()),
        (Some(3), Some(1)),
        "{}",
        s["input_counts"]
    );
    let mut long = run_spans("r9", T);
    long[0]["attributes"][2]["value"]["stringValue"] = json!("q".repeat(3000));
    let long = serde_json::to_string_pretty(&doc(long)).unwrap();
    let f = dir.write("long.json", format!("{}\n{long}\n", docs[0]));
    let out = dir.path("r");
    let _ = std::fs::remove_dir_all(&out);
    let o = run(
        &[
            "replay",
            f.to_str().unwrap(),
            "--from",
            "otlp",
            "--skip-invalid",
            "--quiet",
            "--max-line-bytes",
            "2000",
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    let s: Value = serde_json::from_str(&dir.read("r/summary.json")).unwrap();
    assert_eq!(
        (s["turns"].as_u64(), s["rejected"].as_u64()),
        (Some(1), Some(1)),
        "{s}"
    );
    let r = rejects(&out);
    assert!(
        r[0]["reason"]
            .as_str()
            .unwrap()
            .contains("longer than --max-line-bytes"),
        "{}",
        r[0]
    );
}

/// A second review: a session of a trace whose history holds more calls
/// than a turn may is refused by turn, in bounded memory.
#[test]
fn a_trace_turn_with_too_many_tool_calls_is_refused() {
    let dir = Dir::new();
    let mut spans = run_spans("r1", T);
    for i in 0..1100u64 {
        spans.push(span(
            "symfonic.tool.t",
            "r1",
            T + 1000 + i,
            T + 2000 + i,
            &[("symfonic.tool.name", json!("t"))],
        ));
    }
    let f = dir.write(
        "t.jsonl",
        lines(&[doc(spans), doc(run_spans("r2", T + 1_000_000_000))]),
    );
    let s = replay_trace(&dir, &[&f]);
    assert_eq!(
        (s["turns"].as_u64(), s["rejected"].as_u64()),
        (Some(1), Some(1))
    );
    assert!(rejects(&dir.path("r"))[0]["reason"]
        .as_str()
        .unwrap()
        .contains("run r1: the turn has more than 1024 tool calls"));
}

/// A second review: an import that fails leaves no file of its own behind,
/// and needs no rejects file unless it may set records aside.
#[test]
fn a_failed_import_leaves_nothing() {
    let dir = Dir::new();
    let f = dir.write(
        "c.jsonl",
        "[{\"role\": \"assistant\", \"content\": \"ok\"}]\n",
    );
    std::os::unix::fs::symlink(dir.path("elsewhere"), dir.path("y.rejects.jsonl")).unwrap();
    let o = run(
        &[
            "import",
            f.to_str().unwrap(),
            "--from",
            "openai-chat",
            "--out",
            dir.path("y.jsonl").to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    let o = run(
        &[
            "import",
            f.to_str().unwrap(),
            "--from",
            "openai-chat",
            "--skip-invalid",
            "--out",
            dir.path("y.jsonl").to_str().unwrap(),
        ],
        None,
    );
    expect_error(&o, 2, "(where --skip-invalid sets records aside)");
    let bad = dir.write("bad.jsonl", "not json\n");
    let o = run(
        &[
            "import",
            bad.to_str().unwrap(),
            "--from",
            "openai-chat",
            "--out",
            dir.path("z.jsonl").to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 2);
    let left: Vec<String> = files_in(dir.tmp.path())
        .into_iter()
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Each imported turn names its span (#49 item 12): a trace's turn the
/// `symfonic.run` span it was read from (its trace and span id, as the
/// document gives them, each run's own), and decisions.csv and
/// mismatches.csv carry them, so a reader opens the turn in a trace
/// viewer; a transcript's turn its assistant message.
#[test]
fn every_turn_names_its_place_in_the_source() {
    let dir = Dir::new();
    let name = "B_capture_on_selective_gate_intent_observe.otlp.json";
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(sample(name)).unwrap()).unwrap();
    let mut runs: Vec<(String, String, String)> = Vec::new();
    for rs in doc["resourceSpans"].as_array().unwrap() {
        for ss in rs["scopeSpans"].as_array().unwrap() {
            for s in ss["spans"].as_array().unwrap() {
                if s["name"] == "symfonic.run" {
                    let id = s["attributes"].as_array().unwrap().iter();
                    let id = id.filter(|a| a["key"] == "symfonic.run.id");
                    let run = id.map(|a| a["value"]["stringValue"].clone()).next();
                    runs.push((
                        run.unwrap().as_str().unwrap().to_string(),
                        s["traceId"].as_str().unwrap().to_string(),
                        s["spanId"].as_str().unwrap().to_string(),
                    ));
                }
            }
        }
    }
    assert_eq!(runs.len(), 3);
    let spans: std::collections::HashSet<&str> = runs.iter().map(|r| r.2.as_str()).collect();
    assert_eq!(spans.len(), 3, "each run its own span");
    let turns = import(&dir, name, SHOP);
    assert_eq!(turns.len(), 3);
    for t in &turns {
        let want = runs.iter().find(|r| t["turn_id"] == r.0.as_str()).unwrap();
        assert_eq!(
            (&t["trace_id"], &t["span_id"]),
            (&json!(want.1), &json!(want.2)),
            "{t}"
        );
        assert!(t.get("message_index").is_none(), "{t}");
    }
    // The replay's rows carry them, turn for turn.
    let config = dir.write("d.toml", format!("[deployment]\n{SHOP}"));
    let out = dir.path("out");
    let o = run(
        &[
            "replay",
            &sample(name),
            "--from",
            "otlp",
            "--config",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--decisions",
            "all",
            "--quiet",
        ],
        None,
    );
    expect_code(&o, 0);
    let rows = csv_rows(&std::fs::read_to_string(out.join("decisions.csv")).unwrap());
    assert_eq!(rows.len(), 3 * 2, "three turns, two variants");
    for (n, want) in runs.iter().enumerate() {
        let mine: Vec<_> = rows.iter().filter(|r| r["span_id"] == want.2).collect();
        assert_eq!(mine.len(), 2, "{n}: {rows:?}");
        for r in mine {
            assert_eq!(r["trace_id"], want.1, "{r:?}");
            assert_eq!(r["message_index"], "");
        }
    }

    // A transcript's turn: its assistant message's index in `messages`.
    let chat = dir.write(
        "chat.jsonl",
        concat!(
            r#"{"run_id":"c","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"},"#,
            r#"{"role":"assistant","content":"Hello!"},{"role":"user","content":"thanks"},"#,
            r#"{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},"#,
            r#"{"role":"tool","tool_call_id":"a","content":"ok"},{"role":"assistant","content":"You're welcome."}]}"#,
            "\n"
        ),
    );
    let out = dir.path("chat-out");
    let o = run(
        &[
            "replay",
            chat.to_str().unwrap(),
            "--from",
            "openai-chat",
            "--out",
            out.to_str().unwrap(),
            "--decisions",
            "all",
            "--quiet",
        ],
        None,
    );
    expect_code(&o, 0);
    let rows = csv_rows(&std::fs::read_to_string(out.join("decisions.csv")).unwrap());
    let mut indices: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["turn"].as_str(), r["message_index"].as_str()))
        .collect();
    indices.dedup();
    assert_eq!(indices, [("0", "2"), ("1", "6")]);
    assert!(rows
        .iter()
        .all(|r| r["trace_id"].is_empty() && r["span_id"].is_empty()));
}

/// A line whose id keys hold values they cannot (as recorders wrote them
/// before the format read them) is replayed, the ids left out and the
/// turn counted in the `source_id_unreadable` warning: the keys change no
/// decision, and the lines were valid before.
#[test]
fn an_unreadable_id_is_left_out_not_a_refusal() {
    let dir = Dir::new();
    let traffic = dir.write(
        "compat.jsonl",
        concat!(
            r#"{"run_id":"a","draft":"Sure.","confidence":0.9,"trace_id":{"w3c":"00-4bf9-00f0-01"}}"#,
            "\n",
            r#"{"run_id":"b","draft":"Sure.","confidence":0.9,"span_id":340282366920938463463374607431768211455}"#,
            "\n",
            r#"{"run_id":"c","draft":"Sure.","confidence":0.9,"message_index":"3","turn_id":"t-3"}"#,
            "\n"
        ),
    );
    let out = replay_every_decision(&dir, &traffic);
    let s = summary(&out);
    assert_eq!(s["turns"], 3);
    assert_eq!(s["warnings"]["source_id_unreadable"]["count"], 3, "{s}");
    let rows = csv_rows(&std::fs::read_to_string(out.join("decisions.csv")).unwrap());
    assert!(rows.iter().all(|r| r["trace_id"].is_empty()
        && r["span_id"].is_empty()
        && r["message_index"].is_empty()));
}

/// A traffic line's own ids reach decisions.csv and mismatches.csv as
/// recorded (a tracer's whole-number id in decimal), and an id longer than
/// any tracer writes is cut, as a scope is.
#[test]
fn a_lines_ids_reach_its_rows() {
    let dir = Dir::new();
    let long = "f".repeat(300);
    let traffic = dir.write(
        "t.jsonl",
        format!(
            concat!(
                r#"{{"run_id":"a","draft":"Sure.","confidence":0.9,"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":12345678901234567890,"message_index":4,"critic":{{"verdict":"approve","reflection_tokens_in":10}}}}"#,
                "\n",
                r#"{{"run_id":"b","draft":"Sure.","confidence":0.9,"trace_id":"{}","critic":{{"verdict":"approve","reflection_tokens_in":10}}}}"#,
                "\n"
            ),
            long
        ),
    );
    let out = replay_every_decision(&dir, &traffic);
    for table in ["decisions.csv", "mismatches.csv"] {
        let rows = csv_rows(&std::fs::read_to_string(out.join(table)).unwrap());
        assert!(!rows.is_empty(), "{table}");
        for r in &rows {
            let (trace, span, message) = (&r["trace_id"], &r["span_id"], &r["message_index"]);
            match r["run_id"].as_str() {
                "a" => assert_eq!(
                    (trace.as_str(), span.as_str(), message.as_str()),
                    (
                        "4bf92f3577b34da6a3ce929d0e0e4736",
                        "12345678901234567890",
                        "4"
                    ),
                    "{table}"
                ),
                _ => {
                    assert_eq!(*trace, format!("{}…", &long[..128]), "{table}");
                    assert_eq!((span.as_str(), message.as_str()), ("", ""), "{table}");
                }
            }
        }
    }
}

/// A replay of `traffic` into `dir`'s "out" that writes every decision.
fn replay_every_decision(dir: &Dir, traffic: &std::path::Path) -> std::path::PathBuf {
    let out = dir.path("out");
    let o = run(
        &[
            "replay",
            traffic.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--decisions",
            "all",
            "--quiet",
        ],
        None,
    );
    expect_code(&o, 0);
    out
}
