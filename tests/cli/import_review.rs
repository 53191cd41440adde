//! What an adversarial review of `import` / `--from` found, one test each:
//! input limits, output paths, traces spread over documents and files,
//! span times, skill-gate calls, and the provenance a line may claim.

use serde_json::{json, Value};

use crate::util::*;

pub(super) const T: u64 = 1_796_102_390_000_000_000;

pub(super) fn attr(k: &str, v: Value) -> Value {
    match v {
        Value::Number(n) => json!({"key": k, "value": {"intValue": n.to_string()}}),
        v => json!({"key": k, "value": {"stringValue": v}}),
    }
}

pub(super) fn span(name: &str, run: &str, t0: u64, t1: u64, attrs: &[(&str, Value)]) -> Value {
    let mut a = vec![attr("symfonic.run.id", json!(run))];
    a.extend(attrs.iter().map(|(k, v)| attr(k, v.clone())));
    json!({"name": name, "kind": 1, "startTimeUnixNano": t0.to_string(), "endTimeUnixNano": t1.to_string(), "attributes": a})
}

pub(super) fn critic(run: &str, t: u64, tokens_in: u64, node: &str) -> Value {
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
pub(super) fn run_spans(run: &str, t: u64) -> Vec<Value> {
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

pub(super) fn doc(spans: Vec<Value>) -> Value {
    json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})
}

pub(super) fn lines(docs: &[Value]) -> String {
    docs.iter().map(|d| d.to_string() + "\n").collect()
}

/// Replay a trace with `--skip-invalid`: its summary.json.
pub(super) fn replay_trace(dir: &Dir, files: &[&std::path::Path]) -> Value {
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

pub(super) fn import_trace(dir: &Dir, files: &[&std::path::Path]) -> Vec<Value> {
    let mut args = vec!["import".to_string()];
    args.extend(files.iter().map(|f| f.to_str().unwrap().to_string()));
    let out = dir.path("t.jsonl");
    args.extend(["--from", "otlp", "--out", out.to_str().unwrap()].map(String::from));
    let o = run(&args.iter().map(String::as_str).collect::<Vec<_>>(), None);
    expect_code(&o, 0);
    dir.read("t.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

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
    let r2 = turns.iter().find(|t| t["run_id"] == "r2").unwrap();
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
    for (n, t) in skill.iter().enumerate() {
        assert_eq!(
            (t["run_id"].as_str(), t["turn"].as_u64()),
            (Some("skill-gate"), Some(n as u64)),
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
