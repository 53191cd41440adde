//! Deployment settings as variant axes: `[variants.NAME.deployment]` and
//! `[sweep.deployment]` derive imported traffic once per distinct
//! deployment, and each variant's figures are those of a replay under its
//! deployment alone.

use serde_json::{json, Value};

use crate::trace::{doc, lines, span, T};
use crate::util::*;

/// A trace of `n` runs, four to a session: short requests answered with
/// acknowledgements, the critic revising one in seven.
fn ack_trace(d: &Dir, n: u64) -> std::path::PathBuf {
    ack_trace_with(d, n, u64::MAX)
}

/// The same, every `unreviewed`th run without its critic call (no label).
fn ack_trace_with(d: &Dir, n: u64, unreviewed: u64) -> std::path::PathBuf {
    let queries = [
        "thanks",
        "ok please cancel my order",
        "great, book that for me",
        "got it",
        "can you do it now",
    ];
    let replies = ["You're welcome!", "Sure thing!", "Sounds good!", "Okay!"];
    let docs: Vec<Value> = (0..n)
        .map(|i| {
            let (run, t) = (format!("r{i}"), T + i * 1_000_000_000);
            let verdict = if i % 7 == 3 { "revise" } else { "approve" };
            let mut spans = vec![
                span(
                    "symfonic.run",
                    &run,
                    t,
                    t + 100_000_000,
                    &[
                        ("symfonic.entry_point", json!("run")),
                        ("symfonic.session.id", json!(format!("s{}", i / 4))),
                        ("symfonic.query.text", json!(queries[i as usize % 5])),
                    ],
                ),
                span(
                    "symfonic.llm.call",
                    &run,
                    t + 50_000_000,
                    t + 60_000_000,
                    &[
                        ("symfonic.node.name", json!("react")),
                        (
                            "gen_ai.completion.text",
                            json!(replies[(i / 2) as usize % 4]),
                        ),
                    ],
                ),
                span(
                    "symfonic.llm.call",
                    &run,
                    t + 70_000_000,
                    t + 90_000_000,
                    &[
                        ("symfonic.node.name", json!("metacognition_critic")),
                        ("gen_ai.usage.input_tokens", json!(300)),
                        ("gen_ai.usage.output_tokens", json!(40)),
                        (
                            "gen_ai.completion.text",
                            json!(json!({ "verdict": verdict }).to_string()),
                        ),
                    ],
                ),
            ];
            if i % unreviewed == 0 {
                spans.pop();
            }
            doc(spans)
        })
        .collect();
    d.write("acks.otlp.jsonl", lines(&docs))
}

/// Each variant's figures: its summary.json object, and its summary.csv
/// row without the columns that name it.
fn figures_of(dir: &std::path::Path, variant: &str) -> (Value, Vec<(String, String)>) {
    let s = summary(dir);
    let rows = csv_rows(&std::fs::read_to_string(dir.join("summary.csv")).unwrap());
    let row = rows
        .into_iter()
        .find(|r| r["variant"] == variant)
        .unwrap_or_else(|| panic!("{variant} not in {}", dir.display()));
    let mut row: Vec<(String, String)> = row
        .into_iter()
        .filter(|(k, _)| k != "variant" && k != "run")
        .collect();
    row.sort();
    (s["variants"][variant].clone(), row)
}

/// `replay INPUT --config CFG --out OUT --quiet [--from FROM] EXTRA...`.
fn replay(
    input: &std::path::Path,
    from: &str,
    cfg: &std::path::Path,
    out: &std::path::Path,
    extra: &[&str],
) -> std::process::Output {
    let (input, cfg, out) = (
        input.to_str().unwrap(),
        cfg.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let mut a = vec!["replay", input, "--config", cfg, "--out", out, "--quiet"];
    if from != "traffic" {
        a.extend(["--from", from]);
    }
    a.extend(extra);
    run(&a, None)
}

/// `synth --shape openai-chat` of `turns` turns into `d/chat.jsonl`.
fn synth_chat(d: &Dir, turns: u64, seed: u64) -> std::path::PathBuf {
    let chat = d.path("chat.jsonl");
    let (t, s) = (turns.to_string(), seed.to_string());
    let args = [
        "synth",
        "--turns",
        &t,
        "--seed",
        &s,
        "--shape",
        "openai-chat",
        "--out",
        chat.to_str().unwrap(),
    ];
    expect_code(&run(&args, None), 0);
    chat
}

const PRODUCTION: &str =
    "baseline = \"production\"\n[variants.production]\nmetacognition_selective_gate = false\n";

/// The issue's case: production ran the intent check in observe mode, so
/// no gate setting saves a call; the lever is the deployment's. One sweep
/// gives both modes, each with its bound, with the figures of two
/// replays, and derives each run twice (not once per variant).
#[test]
fn a_sweep_over_intent_filter_mode_is_two_replays_in_one_pass() {
    let d = Dir::new();
    let trace = ack_trace(&d, 420);
    let cfg = d.write(
        "sweep.toml",
        format!("{PRODUCTION}[deployment]\nintent_filter_mode = \"observe\"\n[sweep]\nmetacognition_selective_gate = [true]\nmetacognition_sensitive_tags = [[], [\"pii\"]]\n[sweep.deployment]\nintent_filter_mode = [\"observe\", \"off\"]\n"),
    );
    let sweep = d.path("sweep");
    let o = run(
        &[
            "sweep",
            trace.to_str().unwrap(),
            "--from",
            "otlp",
            "--config",
            cfg.to_str().unwrap(),
            "--out",
            sweep.to_str().unwrap(),
            "--quiet",
        ],
        None,
    );
    expect_code(&o, 0);
    let s = summary(&sweep);
    let names: Vec<&str> = s["variant_order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "production",
            "sel=on/tags=none/intent=observe",
            "sel=on/tags=none/intent=off",
            "sel=on/tags=pii/intent=observe",
            "sel=on/tags=pii/intent=off",
        ]
    );
    // Five variants, two deployments: each run derived twice.
    assert_eq!(
        s["input_counts"]["derivations"],
        2 * 420,
        "{}",
        s["input_counts"]
    );
    assert_eq!(s["input_counts"]["runs"], 420);
    let said = s["notes"].to_string();
    assert!(said.contains("variant sel=on/tags=pii/intent=off runs with a deployment of its own, {\\\"intent_filter_mode\\\":\\\"off\\\"} over [deployment]"), "{said}");
    let off = &s["variants"]["sel=on/tags=none/intent=off"];
    assert!(off["saved_calls"].as_u64().unwrap() > 300, "{off}");
    assert!(
        off["safety_regression_rate_upper95"].as_f64().is_some(),
        "{off}"
    );
    assert_eq!(
        s["variants"]["sel=on/tags=none/intent=observe"]["saved_calls"],
        0
    );
    // frontier.csv says which deployment each variant runs with.
    let frontier = csv_rows(&std::fs::read_to_string(sweep.join("frontier.csv")).unwrap());
    let deployment_of =
        |v: &str| frontier.iter().find(|r| r["variant"] == v).unwrap()["deployment"].clone();
    assert_eq!(
        deployment_of("sel=on/tags=pii/intent=off"),
        r#"{"intent_filter_mode":"off"}"#
    );
    assert_eq!(deployment_of("sel=on/tags=pii/intent=observe"), "");
    assert_eq!(deployment_of("production"), "");
    for mode in ["observe", "off"] {
        let cfg = d.write(
            &format!("{mode}.toml"),
            format!("{PRODUCTION}[variants.smart]\nmetacognition_selective_gate = true\n[deployment]\nintent_filter_mode = \"{mode}\"\n"),
        );
        let out = d.path(mode);
        let o = replay(&trace, "otlp", &cfg, &out, &[]);
        expect_code(&o, 0);
        assert_eq!(
            figures_of(&sweep, &format!("sel=on/tags=none/intent={mode}")),
            figures_of(&out, "smart"),
            "{mode}"
        );
        assert_eq!(
            figures_of(&sweep, "production"),
            figures_of(&out, "production")
        );
        assert_eq!(summary(&out)["input_counts"]["derivations"], 420);
    }
}

/// A variant's own `history` (the chat path, where a record's turns are
/// made again with the other history): its figures are a replay's with
/// that history in `[deployment]`.
#[test]
fn a_variant_s_own_history_is_a_replay_with_it() {
    let d = Dir::new();
    let chat = synth_chat(&d, 600, 5);
    let with = |name: &str, config: &str| {
        let cfg = d.write(&format!("{name}.toml"), config);
        let out = d.path(name);
        let o = replay(&chat, "openai-chat", &cfg, &out, &[]);
        expect_code(&o, 0);
        out
    };
    let both = with(
        "both",
        &format!("{PRODUCTION}[variants.smart]\nmetacognition_selective_gate = true\n[variants.remembers]\nmetacognition_selective_gate = true\n[variants.remembers.deployment]\nhistory = \"conversation\"\n"),
    );
    let alone = with(
        "alone",
        &format!("{PRODUCTION}[variants.remembers]\nmetacognition_selective_gate = true\n[deployment]\nhistory = \"conversation\"\n"),
    );
    let plain = with(
        "plain",
        &format!("{PRODUCTION}[variants.smart]\nmetacognition_selective_gate = true\n"),
    );
    assert_eq!(
        figures_of(&both, "remembers"),
        figures_of(&alone, "remembers")
    );
    assert_eq!(figures_of(&both, "smart"), figures_of(&plain, "smart"));
    // The history changes decisions on this traffic (else the test could
    // not fail), and each turn is derived once per deployment.
    assert_ne!(
        figures_of(&both, "remembers").0,
        figures_of(&both, "smart").0
    );
    let turns = summary(&both)["turns"].as_u64().unwrap();
    assert_eq!(summary(&both)["input_counts"]["derivations"], 2 * turns);
    assert_eq!(summary(&plain)["input_counts"]["derivations"], turns);
}

/// Where a deployment of a variant's own cannot be honoured, the config
/// is refused with the reason (exit 2), never read as `[deployment]`.
#[test]
fn a_deployment_of_its_own_is_refused_where_it_cannot_apply() {
    let d = Dir::new();
    let own = format!("{PRODUCTION}[variants.quiet]\nmetacognition_selective_gate = true\n[variants.quiet.deployment]\nintent_filter_mode = \"observe\"\n");
    let cfg = d.write("own.toml", &own);
    // Traffic lines carry their derivations. (A key set to
    // [deployment]'s own value is no deployment of its own.)
    let o = replay(&root().join(SEED), "traffic", &cfg, &d.path("r"), &[]);
    expect_error(&o, 2, "variant quiet runs with a deployment of its own");
    assert!(stderr(&o).contains("--from"), "{}", stderr(&o));
    assert!(!d.path("r").exists());
    // As does explain of a traffic line; and the sampling commands
    // derive a turn once.
    let o = run(&["explain", "--config", cfg.to_str().unwrap(), SEED], None);
    expect_error(&o, 2, "variant quiet runs with a deployment of its own");
    let o = run(
        &[
            "plan",
            SEED,
            "--config",
            cfg.to_str().unwrap(),
            "--audit",
            "quiet",
            "--out",
            d.path("plan").to_str().unwrap(),
            "--max-skip-regression-rate",
            "0.05",
        ],
        None,
    );
    expect_error(&o, 2, "derives each turn with [deployment] alone");
    // Production's deployment is [deployment].
    let prod = d.write(
        "prod.toml",
        format!("{PRODUCTION}[variants.production.deployment]\nhistory = \"conversation\"\n"),
    );
    let o = replay(&root().join(SEED), "traffic", &prod, &d.path("p"), &[]);
    expect_error(&o, 2, "variant production is production");
    // A misspelled key is named, with the key it may mean.
    let typo = d.write(
        "typo.toml",
        own.replace(
            "intent_filter_mode = \"observe\"",
            "intent_filter_mod = \"observe\"",
        ),
    );
    let o = replay(&root().join(SEED), "traffic", &typo, &d.path("t"), &[]);
    expect_error(&o, 2, "did you mean `intent_filter_mode`");
    // A deployment key among a variant's gate keys is told where it goes.
    let flat = d.write(
        "flat.toml",
        format!("{PRODUCTION}[variants.quiet]\nintent_filter_mode = \"off\"\n"),
    );
    let o = replay(&root().join(SEED), "traffic", &flat, &d.path("f"), &[]);
    expect_error(&o, 2, "[variants.NAME.deployment]");
}

/// explain shows each variant's decision on the turn as its own
/// deployment derived it, and says which deployment that is.
#[test]
fn explain_reads_each_variant_s_turn_as_its_deployment_derived_it() {
    let d = Dir::new();
    let trace = ack_trace(&d, 1);
    let cfg = d.write(
        "e.toml",
        format!("{PRODUCTION}[variants.smart]\nmetacognition_selective_gate = true\n[variants.smart-no-intent]\nmetacognition_selective_gate = true\n[variants.smart-no-intent.deployment]\nintent_filter_mode = \"off\"\n[deployment]\nintent_filter_mode = \"observe\"\n"),
    );
    let args = [
        "explain",
        "--from",
        "otlp",
        "--config",
        cfg.to_str().unwrap(),
        trace.to_str().unwrap(),
    ];
    let o = run(&args, None);
    expect_code(&o, 0);
    let text = stdout(&o);
    assert!(text.contains("smart (smart gate): FIRES"), "{text}");
    assert!(text.contains("smart-no-intent (smart gate): SKIPS\n  its own deployment: {\"intent_filter_mode\":\"off\"}"), "{text}");
    let o = run(&[&args[..], &["--json"]].concat(), None);
    expect_code(&o, 0);
    let j: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let vs = j["variants"].as_array().unwrap();
    assert_eq!(
        vs[2]["deployment"],
        json!({"intent_filter_mode": "off"}),
        "{j}"
    );
    assert!(vs[1].get("deployment").is_none(), "{j}");
    assert_ne!(vs[1]["fires"], vs[2]["fires"], "{j}");
}

/// A record that one variant's deployment cannot derive (3 turns of 400
/// calls: each turn holds its own, but with the conversation's history
/// the third holds 1,200) is refused for every variant, the deployment
/// named, so that all compare the same turns.
#[test]
fn a_record_a_variant_s_deployment_cannot_derive_is_refused_for_all() {
    let d = Dir::new();
    let mut m = Vec::new();
    for turn in 0..3 {
        m.push(r#"{"role":"user","content":"look it all up"}"#.to_string());
        let calls: Vec<String> = (0..400)
            .map(|i| {
                format!(
                    r#"{{"id":"c{turn}-{i}","function":{{"name":"lookup","arguments":"{{}}"}}}}"#
                )
            })
            .collect();
        m.push(format!(
            r#"{{"role":"assistant","content":null,"tool_calls":[{}]}}"#,
            calls.join(",")
        ));
        for i in 0..400 {
            m.push(format!(
                r#"{{"role":"tool","tool_call_id":"c{turn}-{i}","content":"ok"}}"#
            ));
        }
        m.push(r#"{"role":"assistant","content":"Done."}"#.to_string());
    }
    let short = r#"{"messages":[{"role":"user","content":"thanks"},{"role":"assistant","content":"You're welcome!"}]}"#;
    let chat = d.write(
        "calls.chat.jsonl",
        format!("{short}\n{{\"messages\":[{}]}}\n", m.join(",")),
    );
    let cfg = d.write(
        "c.toml",
        format!("{PRODUCTION}[variants.remembers]\nmetacognition_selective_gate = true\n[variants.remembers.deployment]\nhistory = \"conversation\"\n"),
    );
    let out = d.path("r");
    let o = replay(&chat, "openai-chat", &cfg, &out, &[]);
    expect_error(
        &o,
        2,
        r#"a variant's own deployment {"history":"conversation"} cannot derive it (a record is refused for every variant, so that all compare the same turns): "#,
    );
    assert!(stderr(&o).contains("calls.chat.jsonl:2"), "{}", stderr(&o));
    let o = replay(&chat, "openai-chat", &cfg, &out, &["--skip-invalid"]);
    expect_code(&o, 0);
    let s = summary(&out);
    assert_eq!(
        (s["turns"].as_u64(), s["rejected"].as_u64()),
        (Some(1), Some(1)),
        "{s}"
    );
    assert_eq!(s["input_counts"]["derivations"], 2);
}

/// The config `calibrate` writes for a chosen variant of its own
/// deployment carries that deployment (it is part of what was measured):
/// replayed, it saves what the sweep's variant saved. `mine`'s
/// proposals.toml does the same for a mined variant.
#[test]
fn a_written_config_carries_the_variant_s_deployment() {
    let d = Dir::new();
    let trace = ack_trace(&d, 1200);
    let head = format!("{PRODUCTION}[deployment]\nintent_filter_mode = \"observe\"\n");
    let cfg = d.write(
        "sweep.toml",
        format!("{head}[sweep]\nmetacognition_selective_gate = [true]\n[sweep.deployment]\nintent_filter_mode = [\"observe\", \"off\"]\n"),
    );
    let (cal, t, c) = (
        d.path("cal"),
        trace.to_str().unwrap(),
        cfg.to_str().unwrap(),
    );
    let o = run(
        &[
            "calibrate",
            t,
            "--from",
            "otlp",
            "--config",
            c,
            "--out",
            cal.to_str().unwrap(),
            "--max-regression-rate",
            "0.3",
            "--quiet",
        ],
        None,
    );
    expect_code(&o, 0);
    let written = std::fs::read_to_string(cal.join("calibrated.toml")).unwrap();
    assert!(
        written.contains("[variants.calibrated.deployment]\nintent_filter_mode = \"off\"\n"),
        "{written}"
    );
    let again = d.write("again.toml", format!("{head}{written}"));
    let out = d.path("again");
    expect_code(&replay(&trace, "otlp", &again, &out, &[]), 0);
    let sweep = d.path("sweep");
    let o = run(
        &[
            "sweep",
            t,
            "--from",
            "otlp",
            "--config",
            c,
            "--out",
            sweep.to_str().unwrap(),
            "--quiet",
        ],
        None,
    );
    expect_code(&o, 0);
    let saved = |dir: &std::path::Path, v: &str| summary(dir)["variants"][v]["saved_calls"].clone();
    assert_eq!(
        saved(&out, "calibrated"),
        saved(&sweep, "sel=on/intent=off")
    );
    assert!(saved(&out, "calibrated").as_u64().unwrap() > 800);

    let own = d.write(
        "own.toml",
        format!("{head}[variants.quiet]\nmetacognition_selective_gate = true\n[variants.quiet.deployment]\nintent_filter_mode = \"off\"\n"),
    );
    let mined = d.path("mined");
    let o = run(
        &[
            "mine",
            t,
            "--from",
            "otlp",
            "--config",
            own.to_str().unwrap(),
            "--variant",
            "quiet",
            "--out",
            mined.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    let proposals = std::fs::read_to_string(mined.join("proposals.toml")).unwrap();
    assert!(
        proposals.contains("[variants.mined.deployment]\nintent_filter_mode = \"off\"\n"),
        "{proposals}"
    );
}

/// A CSV file's records, a quoted field's line breaks kept.
fn csv_records(text: &str) -> Vec<std::collections::HashMap<String, String>> {
    let (mut records, mut cur, mut quoted) = (Vec::new(), String::new(), false);
    for c in text.chars() {
        match c {
            '\n' if !quoted => records.push(std::mem::take(&mut cur)),
            c => {
                quoted ^= c == '"';
                cur.push(c);
            }
        }
    }
    let header = csv_fields(&records[0]);
    records[1..]
        .iter()
        .map(|r| header.iter().cloned().zip(csv_fields(r)).collect())
        .collect()
}

/// A deployment that changes the draft (`activation_log_mode = "never"`
/// strips the footer 60% of these replies carry): the variant's every
/// table is a replay's under that deployment. Before, its added calls
/// were estimated from events bucketed by `[deployment]`'s drafts
/// (net_usd_per_1k_turns -62.34 against -62.39), decisions.csv showed
/// the other deployment's draft_chars, skips.csv grouped under a draft it
/// never saw, and segments.csv bucketed it by `[deployment]`'s drafts.
#[test]
fn a_deployment_that_changes_the_draft_changes_every_table_as_a_replay_would() {
    let d = Dir::new();
    let chat = synth_chat(&d, 2000, 3);
    let mut n = 0;
    let footed: String = std::fs::read_to_string(&chat)
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            for m in v["messages"].as_array_mut().unwrap() {
                if m["role"] == "assistant" && m["content"].is_string() {
                    if n % 5 < 3 {
                        let c = m["content"].as_str().unwrap().to_string();
                        m["content"] = json!(c + "\n---\nnodos activados: x");
                    }
                    n += 1;
                }
            }
            v.to_string() + "\n"
        })
        .collect();
    let chat = d.write("footed.jsonl", footed);
    let base = std::fs::read_to_string(root().join("datasets/transcripts.toml")).unwrap();
    let x = "[variants.x]\nmetacognition_selective_gate = true\n";
    // Legacy at 0.4 fires less than x (x adds calls); at 0.6, more (x saves).
    // The footer stripped; and (intent off) segments' intent values that
    // only [deployment] derives, which x's own replay has no row of.
    let never = "activation_log_mode = \"never\"";
    let (observe, off) = (
        "intent_filter_mode = \"observe\"",
        "intent_filter_mode = \"off\"",
    );
    for (threshold, own) in [("0.4", never), ("0.6", never), ("0.6", off)] {
        let base = base.replace(
            "[variants.legacy]\n",
            &format!("[variants.legacy]\nmetacognition_confidence_threshold = {threshold}\n"),
        );
        let both = d.write(
            "both.toml",
            format!("{base}{x}[variants.x.deployment]\n{own}\n"),
        );
        let in_deployment = match own == off {
            true => base.replace(observe, off),
            false => base.replace("[deployment]\n", &format!("[deployment]\n{own}\n")),
        };
        let alone = d.write("alone.toml", in_deployment + x);
        let case = format!("{threshold}-{}", own.len());
        let (a, b) = (
            d.path(&format!("both-{case}")),
            d.path(&format!("alone-{case}")),
        );
        let all = ["--decisions", "all"];
        expect_code(&replay(&chat, "openai-chat", &both, &a, &all), 0);
        expect_code(&replay(&chat, "openai-chat", &alone, &b, &all), 0);
        assert_eq!(
            summary(&a)["variants"]["x"],
            summary(&b)["variants"]["x"],
            "{threshold}"
        );
        for table in [
            "summary.csv",
            "decisions.csv",
            "skips.csv",
            "segments.csv",
            "regressions.csv",
        ] {
            let rows = |dir: &std::path::Path| {
                let text = std::fs::read_to_string(dir.join(table)).unwrap();
                let mut rows: Vec<Vec<(String, String)>> = csv_records(&text)
                    .into_iter()
                    .filter(|r| r["variant"] == "x")
                    .map(|r| {
                        let mut r: Vec<_> = r
                            .into_iter()
                            .filter(|(k, _)| k != "run" && k != "variant")
                            .collect();
                        r.sort();
                        r
                    })
                    .collect();
                rows.sort();
                rows
            };
            assert_eq!(rows(&a), rows(&b), "{table} at {threshold}, {own}");
        }
        let x = &summary(&a)["variants"]["x"];
        let moved = if threshold == "0.4" {
            "added_calls"
        } else {
            "saved_calls"
        };
        assert!(x[moved].as_u64().unwrap() > 100, "{threshold}: {x}");
    }
}

/// Shards whose variant runs with another deployment of its own are not
/// one replay: merge refuses them, naming the variant (it merged them).
#[test]
fn shards_of_another_own_deployment_are_not_merged() {
    let d = Dir::new();
    let trace = ack_trace(&d, 40);
    let shard = |name: &str, mode: &str| {
        let cfg = d.write(
            &format!("{name}.toml"),
            format!("{PRODUCTION}[variants.x]\nmetacognition_selective_gate = true\n[variants.x.deployment]\nactivation_log_mode = \"{mode}\"\n"),
        );
        let p = d.path(&format!("{name}.partial"));
        let args = [
            "replay",
            trace.to_str().unwrap(),
            "--from",
            "otlp",
            "--config",
            cfg.to_str().unwrap(),
            "--partial",
            p.to_str().unwrap(),
            "--quiet",
        ];
        expect_code(&run(&args, None), 0);
        p
    };
    let (a, b) = (shard("a", "never"), shard("b", "complex"));
    let out = d.path("merged");
    let o = run(
        &[
            "merge",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_error(
        &o,
        2,
        "the deployment variant \"x\" runs with ([variants.x.deployment])",
    );
    assert!(!out.exists());
}

const QUIET: &str = "[variants.quiet]\nmetacognition_selective_gate = true\n";

/// An audit plan of `quiet` (smart) on a trace of 600 runs, one in five
/// unlabelled: the trace, the config, and the plan's folder.
fn audit_plan(d: &Dir) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let trace = ack_trace_with(d, 600, 5);
    let made = d.write("made.toml", format!("{PRODUCTION}{QUIET}"));
    let plan = d.path("plan");
    let (t, c, p) = (
        trace.to_str().unwrap(),
        made.to_str().unwrap(),
        plan.to_str().unwrap(),
    );
    let args = [
        "plan",
        t,
        "--from",
        "otlp",
        "--config",
        c,
        "--audit",
        "quiet",
        "--out",
        p,
        "--max-skip-regression-rate",
        "0.3",
        // The trace spans seconds: too short to read volumes a day from.
        "--days",
        "1",
    ];
    expect_code(&run(&args, None), 0);
    (trace, made, plan)
}

/// A plan's sample was drawn from turns as `[deployment]` derived them: a
/// replay with the plan refuses a config that gives the audited variant a
/// deployment of its own (it counted draws of another population).
#[test]
fn a_plan_s_variant_cannot_take_a_deployment_of_its_own() {
    let d = Dir::new();
    let (trace, made, plan) = audit_plan(&d);
    let quiet = QUIET;
    let own = d.write(
        "own.toml",
        format!(
            "{PRODUCTION}{quiet}[variants.quiet.deployment]\nintent_filter_mode = \"observe\"\n"
        ),
    );
    let p = plan.join("plan.toml");
    let o = replay(
        &trace,
        "otlp",
        &own,
        &d.path("r"),
        &["--plan", p.to_str().unwrap()],
    );
    expect_error(
        &o,
        2,
        "a plan's sample derives each turn with [deployment] alone",
    );
    let o = replay(
        &trace,
        "otlp",
        &made,
        &d.path("r"),
        &["--plan", p.to_str().unwrap()],
    );
    expect_code(&o, 0);
}

/// A plan of production's skips draws on production's decisions alone:
/// a baseline of its own deployment does not stop it (it was refused).
#[test]
fn a_plan_of_production_s_skips_ignores_the_baseline_s_deployment() {
    let d = Dir::new();
    let trace = ack_trace(&d, 300);
    let cfg = d.write(
        "p.toml",
        "baseline = \"legacy\"\nproduction = \"smart\"\n[variants.legacy]\nmetacognition_selective_gate = false\n[variants.legacy.deployment]\nhistory = \"conversation\"\n[variants.smart]\nmetacognition_selective_gate = true\n",
    );
    let plan = d.path("plan");
    let args = [
        "plan",
        trace.to_str().unwrap(),
        "--from",
        "otlp",
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        plan.to_str().unwrap(),
        "--max-skip-regression-rate",
        "0.3",
        // The trace spans seconds: too short to read volumes a day from.
        "--days",
        "1",
    ];
    let o = run(&args, None);
    expect_code(&o, 0);
    assert!(plan.join("plan.toml").exists());
}

/// A plan made on imported traffic records the `[deployment]` it was
/// derived with: a config with another is refused (its strata and
/// population were of other turns; it was accepted).
#[test]
fn a_plan_made_on_imported_traffic_keeps_its_deployment() {
    let d = Dir::new();
    let (trace, made, plan) = audit_plan(&d);
    let quiet = QUIET;
    let p = plan.join("plan.toml");
    assert!(std::fs::read_to_string(&p)
        .unwrap()
        .contains("[deployment]"));
    let other = d.write(
        "other.toml",
        format!("{PRODUCTION}{quiet}[deployment]\nhistory = \"conversation\"\n"),
    );
    let o = replay(
        &trace,
        "otlp",
        &other,
        &d.path("r"),
        &["--plan", p.to_str().unwrap()],
    );
    expect_error(&o, 2, "the plan was made on traffic derived with another [deployment] than the config's (the plan's differs in {\"history\":\"none\"})");
    let o = replay(
        &trace,
        "otlp",
        &made,
        &d.path("r"),
        &["--plan", p.to_str().unwrap()],
    );
    expect_code(&o, 0);
}
