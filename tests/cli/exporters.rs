//! What real exporters write, read right or refused by name, never a wrong
//! figure: OTLP spans sent twice, sessions of one id in two tenants, a
//! run's spans rotated into two files and replayed as two shards, integers
//! written as JSON numbers, critic token counts in other value types; and
//! chat transcripts' legacy `function_call` and Anthropic's `tool_use` and
//! `tool_result` parts.

use serde_json::{json, Value};

use crate::trace::{attr, doc, import_trace, lines, replay_trace, run_spans, span, T};
use crate::util::*;

/// `s` with the ids an exporter gives every span.
fn with_ids(mut s: Value, trace: &str, id: &str) -> Value {
    s["traceId"] = json!(trace);
    s["spanId"] = json!(id);
    s
}

/// A run's spans, each with ids, and a tool call between the draft and the
/// critic.
fn run_with_tool(run: &str, t: u64, session: &str, tenant: Option<&str>, tool: &str) -> Vec<Value> {
    let mut spans = run_spans(run, t);
    let root = &mut spans[0]["attributes"];
    let root = root.as_array_mut().unwrap();
    root.retain(|a| a["key"] != "symfonic.session.id");
    root.push(attr("symfonic.session.id", json!(session)));
    if let Some(tenant) = tenant {
        root.push(attr("symfonic.tenant.id", json!(tenant)));
    }
    spans.insert(
        1,
        span(
            &format!("symfonic.tool.{tool}"),
            run,
            t + 10_000_000,
            t + 20_000_000,
            &[
                ("symfonic.tool.name", json!(tool)),
                ("symfonic.tool.args", json!("{'id': 7}")),
                ("symfonic.tool.result", json!("done")),
            ],
        ),
    );
    spans
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            // Hex ids, as OTLP/JSON writes them, with letters (an upper-cased
            // retry must read as the same span).
            let hex: String = run.bytes().map(|b| format!("{b:02x}")).collect();
            with_ids(s, &format!("{hex:a>32}"), &format!("{i:a>16}"))
        })
        .collect()
}

#[test]
fn a_span_sent_twice_counts_once() {
    let dir = Dir::new();
    let spans = run_with_tool("r1", T, "s1", None, "get_order");
    // The exporter retried the batch holding the tool span.
    let f = dir.write(
        "trace.jsonl",
        lines(&[doc(spans.clone()), doc(vec![spans[1].clone()])]),
    );
    let turns = import_trace(&dir, &[&f]);
    assert_eq!(turns.len(), 1);
    let calls: Vec<&Value> = turns[0]["tool_calls_this_turn"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    assert_eq!(calls.len(), 1, "{}", turns[0]);
    let s = replay_trace(&dir, &[&f]);
    assert_eq!(
        s["input_counts"]["repeated_spans"], 1,
        "{}",
        s["input_counts"]
    );
    assert!(
        s["input_counts"].get("root_spans_left_out").is_none(),
        "{}",
        s["input_counts"]
    );
}

#[test]
fn sessions_of_one_id_in_two_tenants_are_two() {
    let dir = Dir::new();
    let cfg = dir.write("c.toml", "[deployment]\nhistory = \"conversation\"\n");
    let a = run_with_tool("ra", T, "s1", Some("acme"), "cancel_order");
    let b = run_with_tool("rb", T + 1_000_000_000, "s1", Some("globex"), "get_order");
    let f = dir.write("trace.jsonl", lines(&[doc(a), doc(b)]));
    let out = dir.path("t.out.jsonl");
    let o = run(
        &[
            "import",
            f.to_str().unwrap(),
            "--from",
            "otlp",
            "--config",
            cfg.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    let turns: Vec<Value> = dir
        .read("t.out.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(turns.len(), 2);
    for t in &turns {
        // Each is the first run of its own session, with its own call only.
        assert_eq!(t["turn"], 0, "{t}");
        assert_eq!(
            t["tool_calls_this_turn"].as_array().unwrap().len(),
            1,
            "{t}"
        );
    }
    assert_eq!(turns[1]["tool_calls_this_turn"][0]["name"], "get_order");
}

#[test]
fn a_run_split_over_two_shards_refuses_the_merge_naming_it() {
    let dir = Dir::new();
    let r1 = run_with_tool("r1", T, "s1", None, "get_order");
    let r2 = run_with_tool("r2", T + 1_000_000_000, "s2", None, "get_order");
    // The Collector rotated its file in the middle of r1.
    let a = dir.write("a.jsonl", lines(&[doc(r1[..2].to_vec())]));
    let b = dir.write("b.jsonl", lines(&[doc(r1[2..].to_vec()), doc(r2)]));
    for (f, p) in [(&a, "a.partial"), (&b, "b.partial")] {
        expect_code(&partial(&dir, f, p), 0);
    }
    let o = merge(&dir, &["a.partial", "b.partial"], "m");
    expect_error(&o, 2, "run r1");
    assert!(!dir.path("m").exists(), "nothing written");
    // Whole runs in each shard merge as before.
    let c = dir.write(
        "c.jsonl",
        lines(&[doc(run_with_tool("r3", T, "s3", None, "x"))]),
    );
    expect_code(&partial(&dir, &c, "c.partial"), 0);
    expect_code(&merge(&dir, &["b.partial", "c.partial"], "m2"), 0);
}

/// `replay --from otlp FILE --partial NAME` in `dir`.
fn partial(dir: &Dir, f: &std::path::Path, name: &str) -> std::process::Output {
    let p = dir.path(name);
    let args = [
        "replay",
        f.to_str().unwrap(),
        "--from",
        "otlp",
        "--partial",
        p.to_str().unwrap(),
        "--quiet",
    ];
    run(&args, None)
}

/// `merge` of `dir`'s partial results into `dir/out`.
fn merge(dir: &Dir, partials: &[&str], out: &str) -> std::process::Output {
    let paths: Vec<String> = partials
        .iter()
        .map(|p| dir.path(p).to_str().unwrap().to_string())
        .collect();
    let out = dir.path(out);
    let mut args = vec!["merge"];
    args.extend(paths.iter().map(String::as_str));
    args.extend(["--out", out.to_str().unwrap()]);
    run(&args, None)
}

#[test]
fn integers_written_as_json_numbers_are_read() {
    let dir = Dir::new();
    let mut spans = run_with_tool("r1", T, "s1", None, "get_order");
    // The critic's tokens as a JSON number (OpenTelemetry JS), and a span
    // of another instrumentation writing one too.
    let critic = spans.last_mut().unwrap();
    for a in critic["attributes"].as_array_mut().unwrap() {
        if a["key"] == "gen_ai.usage.input_tokens" {
            a["value"] = json!({"intValue": 300});
        }
    }
    let foreign = json!({"name": "http.request", "startTimeUnixNano": 5, "attributes": [{"key": "http.status_code", "value": {"intValue": 200}}]});
    spans.push(foreign);
    let f = dir.write("trace.jsonl", lines(&[doc(spans)]));
    let turns = import_trace(&dir, &[&f]);
    assert_eq!(turns.len(), 1);
    assert_eq!(
        turns[0]["critic"]["reflection_tokens_in"], 300,
        "{}",
        turns[0]
    );
}

#[test]
fn critic_tokens_in_other_value_types_are_read_or_counted() {
    let dir = Dir::new();
    let mut docs = Vec::new();
    for (i, v) in [
        json!({"stringValue": "310"}),
        json!({"doubleValue": 320.0}),
        json!({"stringValue": "many"}),
    ]
    .into_iter()
    .enumerate()
    {
        let mut spans = run_with_tool(
            &format!("r{i}"),
            T + i as u64 * 1_000_000_000,
            &format!("s{i}"),
            None,
            "x",
        );
        for a in spans.last_mut().unwrap()["attributes"]
            .as_array_mut()
            .unwrap()
        {
            if a["key"] == "gen_ai.usage.input_tokens" {
                a["value"] = v.clone();
            }
        }
        docs.push(doc(spans));
    }
    let f = dir.write("trace.jsonl", lines(&docs));
    let turns = import_trace(&dir, &[&f]);
    assert_eq!(turns[0]["critic"]["reflection_tokens_in"], 310);
    assert_eq!(turns[1]["critic"]["reflection_tokens_in"], 320);
    assert!(
        turns[2]["critic"].get("reflection_tokens_in").is_none(),
        "{}",
        turns[2]
    );
    let s = replay_trace(&dir, &[&f]);
    assert_eq!(
        s["input_counts"]["unreadable_critic_tokens"], 1,
        "{}",
        s["input_counts"]
    );
}

/// Import one chat line; its turns.
fn chat(dir: &Dir, line: &Value) -> Vec<Value> {
    let f = dir.write("c.jsonl", line.to_string() + "\n");
    let out = dir.path("c.out.jsonl");
    let o = run(
        &[
            "import",
            f.to_str().unwrap(),
            "--from",
            "openai-chat",
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    dir.read("c.out.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_legacy_function_call_is_a_tool_call() {
    let dir = Dir::new();
    let turns = chat(
        &dir,
        &json!({"messages": [
            {"role": "user", "content": "Cancel order 7"},
            {"role": "assistant", "content": null, "function_call": {"name": "cancel_order", "arguments": "{\"id\": 7}"}},
            {"role": "function", "name": "cancel_order", "content": "cancelled"},
            {"role": "assistant", "content": "Done, it is cancelled."}
        ]}),
    );
    assert_eq!(turns.len(), 1);
    let calls = &turns[0]["tool_calls_this_turn"];
    assert_eq!(
        calls,
        &json!([{"name": "cancel_order", "args": {"id": 7}, "result": "cancelled"}]),
        "{}",
        turns[0]
    );
    assert_eq!(turns[0]["provenance"]["tool_calls"], "recorded");
}

#[test]
fn anthropic_tool_use_and_tool_result_parts_are_calls_and_results() {
    let dir = Dir::new();
    let turns = chat(
        &dir,
        &json!({"messages": [
            {"role": "user", "content": "Cancel order 7"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Cancelling."},
                {"type": "tool_use", "id": "tu1", "name": "cancel_order", "input": {"id": 7}}
            ]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": [{"type": "text", "text": "cancelled"}]}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}
        ]}),
    );
    assert_eq!(turns.len(), 1, "{turns:?}");
    let t = &turns[0];
    assert_eq!(
        t["tool_calls_this_turn"],
        json!([{"name": "cancel_order", "args": {"id": 7}, "result": "cancelled"}]),
        "{t}"
    );
    // The tool result is not the user's message.
    assert_eq!(t["draft"], "Done.");
    assert_eq!(t["provenance"]["tool_calls"], "recorded");
}

#[test]
fn a_call_of_a_shape_not_read_leaves_the_calls_unknown() {
    let dir = Dir::new();
    let turns = chat(
        &dir,
        &json!({"messages": [
            {"role": "user", "content": "Cancel order 7"},
            {"role": "assistant", "content": [{"type": "server_tool_use", "id": "s1", "name": "web_search"}]},
            {"role": "assistant", "content": "Done."}
        ]}),
    );
    assert_eq!(turns.len(), 1);
    assert_eq!(
        turns[0]["provenance"]["tool_calls"], "unknown",
        "{}",
        turns[0]
    );
}

#[test]
fn unparsed_critic_answers_and_runs_that_raised_are_counted() {
    let dir = Dir::new();
    let mut a = run_with_tool("r1", T, "s1", None, "x");
    for at in a.last_mut().unwrap()["attributes"].as_array_mut().unwrap() {
        if at["key"] == "gen_ai.completion.text" {
            at["value"] = json!({"stringValue": "I approve of this reply."});
        }
    }
    let mut b = run_with_tool("r2", T + 1_000_000_000, "s2", None, "x");
    b[0]["status"] = json!({"code": 2});
    let f = dir.write("trace.jsonl", lines(&[doc(a), doc(b)]));
    let s = replay_trace(&dir, &[&f]);
    let c = &s["input_counts"];
    assert_eq!(
        (
            c["critic_answers_unparsed"].as_u64(),
            c["runs_with_error"].as_u64()
        ),
        (Some(1), Some(1)),
        "{c}"
    );
}

/// What an adversarial review of the change found in the readers, one
/// assertion each.
#[test]
fn review_openai_unread_calls_stay_in_their_turn_and_shapes_are_named() {
    let dir = Dir::new();
    // history "none": an unread call before the second user message does
    // not make the second turn's calls unknown.
    let turns = chat(
        &dir,
        &json!({"messages": [
            {"role": "user", "content": "q1"},
            {"role": "assistant", "content": [{"type": "server_tool_use", "id": "s", "name": "web"}, {"type": "text", "text": "A1"}]},
            {"role": "user", "content": "q2"},
            {"role": "assistant", "content": "A2"}
        ]}),
    );
    let prov: Vec<&Value> = turns
        .iter()
        .map(|t| &t["provenance"]["tool_calls"])
        .collect();
    assert_eq!(prov, [&json!("unknown"), &json!("recorded")], "{turns:?}");
    // Responses-style items and a call inside a user message are unread
    // calls, never an empty recorded list.
    for part in [
        json!({"type": "web_search_call", "id": "w"}),
        json!({"type": "mcp_call", "id": "m"}),
    ] {
        let t = chat(
            &dir,
            &json!({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": [part]}, {"role": "assistant", "content": "A"}]}),
        );
        assert_eq!(t[0]["provenance"]["tool_calls"], "unknown", "{t:?}");
    }
    let t = chat(
        &dir,
        &json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "q"}, {"type": "tool_use", "id": "u", "name": "x", "input": {}}]}, {"role": "assistant", "content": "A"}]}),
    );
    assert_eq!(t[0]["provenance"]["tool_calls"], "unknown", "{t:?}");
}

#[test]
fn review_a_call_answered_twice_or_two_calls_of_one_id_are_refused() {
    let dir = Dir::new();
    let call = |id: &str| json!({"id": id, "type": "function", "function": {"name": "run_job", "arguments": "{}"}});
    for (messages, says) in [
        (
            json!([{"role": "user", "content": "go"}, {"role": "assistant", "content": null, "tool_calls": [call("c1")]},
                   {"role": "tool", "tool_call_id": "c1", "content": "job_id=abc123"}, {"role": "tool", "tool_call_id": "c1", "content": "x"},
                   {"role": "assistant", "content": "Done."}]),
            "answered twice",
        ),
        (
            json!([{"role": "user", "content": "go"}, {"role": "assistant", "content": null, "tool_calls": [call("c1"), call("c1")]},
                   {"role": "assistant", "content": "Done."}]),
            "two tool calls share the id",
        ),
        (
            json!([{"role": "user", "content": "go"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "u", "name": "x", "input": {}}]},
                   {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u", "content": 5}]},
                   {"role": "assistant", "content": "Done."}]),
            "a tool_result's content must be a string, null or a list of parts",
        ),
    ] {
        let f = dir.write("c.jsonl", json!({"messages": messages}).to_string() + "\n");
        let out = dir.path("c.out.jsonl");
        let o = run(
            &[
                "import",
                f.to_str().unwrap(),
                "--from",
                "openai-chat",
                "--out",
                out.to_str().unwrap(),
            ],
            None,
        );
        expect_error(&o, 2, says);
    }
}

#[test]
fn review_otlp_foreign_spans_ids_and_counts() {
    let dir = Dir::new();
    let mut spans = run_with_tool("r1", T, "s1", None, "x");
    // Foreign spans of any shape are counted, never read.
    spans.push(json!({"name": "http.get", "attributes": "x"}));
    spans.push(json!({"name": "http.get", "status": "x", "attributes": [{"key": 5}]}));
    spans.push(json!(7));
    // A whole number written with a fraction part is read; a count with a
    // space is not a count.
    let critic = spans
        .iter_mut()
        .find(|s| {
            s["name"] == "symfonic.llm.call"
                && s["attributes"].to_string().contains("metacognition_critic")
        })
        .unwrap();
    for a in critic["attributes"].as_array_mut().unwrap() {
        if a["key"] == "gen_ai.usage.input_tokens" {
            a["value"] = json!({"intValue": 100.0});
        }
        if a["key"] == "gen_ai.usage.output_tokens" {
            a["value"] = json!({"stringValue": " 40"});
        }
    }
    // The tool span again, its ids upper-cased.
    let mut again = spans[1].clone();
    again["traceId"] = json!(again["traceId"].as_str().unwrap().to_uppercase());
    again["spanId"] = json!(again["spanId"].as_str().unwrap().to_uppercase());
    let f = dir.write("trace.jsonl", lines(&[doc(spans), doc(vec![again])]));
    let turns = import_trace(&dir, &[&f]);
    assert_eq!(turns.len(), 1);
    assert_eq!(
        turns[0]["tool_calls_this_turn"].as_array().unwrap().len(),
        1,
        "{}",
        turns[0]
    );
    assert_eq!(
        turns[0]["critic"]["reflection_tokens_in"], 100,
        "{}",
        turns[0]
    );
    assert!(
        turns[0]["critic"].get("reflection_tokens_out").is_none(),
        "{}",
        turns[0]
    );
    let s = replay_trace(&dir, &[&f]);
    let c = &s["input_counts"];
    assert_eq!(
        (
            c["foreign_spans"].as_u64(),
            c["repeated_spans"].as_u64(),
            c["unreadable_critic_tokens"].as_u64()
        ),
        (Some(3), Some(1), Some(1)),
        "{c}"
    );
}

/// A file of one document a line is gathered while it is read, a block
/// (1 MiB) at a time: a run whose spans are megabytes apart, and a span
/// sent again megabytes later, read as they do in a small file; and the
/// same documents pretty-printed (gathered at the file's end) read the
/// same.
#[test]
fn spans_megabytes_apart_are_gathered_as_in_a_small_file() {
    let dir = Dir::new();
    let r1 = run_with_tool("r1", T, "s1", None, "get_order");
    let mut docs = vec![doc(r1[..2].to_vec())];
    for i in 0..2500u64 {
        let run = format!("f{i}");
        let t = T + (i + 1) * 1_000_000_000;
        docs.push(doc(run_with_tool(
            &run,
            t,
            &format!("s{run}"),
            None,
            "get_order",
        )));
    }
    // The rest of r1, and its tool span sent again.
    docs.push(doc(r1[2..].to_vec()));
    docs.push(doc(vec![r1[1].clone()]));
    let big = dir.write("big.jsonl", lines(&docs));
    assert!(std::fs::metadata(&big).unwrap().len() > 3 << 20);
    let small = dir.write("small.jsonl", lines(&[doc(r1)]));
    let want = import_trace(&dir, &[&small]);
    let got = import_trace(&dir, &[&big]);
    assert_eq!(got.len(), 2501);
    let r1_turn = got.iter().find(|t| t["run_id"] == want[0]["run_id"]);
    assert_eq!(r1_turn, Some(&want[0]));
    let s = replay_trace(&dir, &[&big]);
    assert_eq!(
        s["input_counts"]["repeated_spans"], 1,
        "{}",
        s["input_counts"]
    );
    let pretty: String = docs
        .iter()
        .map(|d| serde_json::to_string_pretty(d).unwrap() + "\n")
        .collect();
    let pretty = dir.write("pretty.json", pretty);
    assert_eq!(import_trace(&dir, &[&pretty]), got);
}

/// An id in another encoding than hex (base64, as some protobuf-to-JSON
/// writers give it) is case-sensitive: the turn's line keeps it as
/// written, where a hex id is lowered (found by review: every id was
/// lowered, which corrupts a base64 one).
#[test]
fn a_base64_id_is_kept_as_written() {
    let dir = Dir::new();
    let spans: Vec<Value> = run_spans("r1", T)
        .into_iter()
        .enumerate()
        .map(|(i, s)| match i {
            0 => with_ids(s, "S/9+AbCdEfGhIjKlMnOpQw==", "AbCdEfGhIjK="),
            _ => with_ids(s, "S/9+AbCdEfGhIjKlMnOpQw==", &format!("{i:A>16}")),
        })
        .collect();
    let f = dir.write("trace.jsonl", lines(&[doc(spans)]));
    let turns = import_trace(&dir, &[&f]);
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0]["trace_id"], "S/9+AbCdEfGhIjKlMnOpQw==");
    assert_eq!(turns[0]["span_id"], "AbCdEfGhIjK=");
}
