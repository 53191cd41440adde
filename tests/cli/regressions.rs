//! Bugs that were found, each test written first to show it (it failed
//! before the fix) and named for what broke. A test of a command's
//! behaviour as designed lives in that command's file.

use serde_json::json;

use crate::util::*;

/// Shards whose different files share a name would repeat decisions.csv's
/// (source, line) key: merge refuses them, naming both.
#[test]
fn merge_refuses_different_sources_of_one_name() {
    let d = Dir::new();
    let (n1, n2) = (d.path("n1"), d.path("n2"));
    d.write("n1/traffic.jsonl", "{\"run_id\":\"a\",\"draft\":\"ok\"}\n");
    d.write(
        "n2/traffic.jsonl",
        "{\"run_id\":\"b\",\"draft\":\"Sure thing.\"}\n",
    );
    let (p1, p2) = (d.path("1.partial"), d.path("2.partial"));
    partial_from(&n1, "traffic.jsonl", &p1);
    partial_from(&n2, "traffic.jsonl", &p2);
    let out = d.path("m");
    let o = run(
        &[
            "merge",
            p1.to_str().unwrap(),
            p2.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_error(&o, 2, "traffic.jsonl");
    assert!(stderr(&o).contains("both"), "{}", stderr(&o));
    assert!(!out.exists());
    // The same file in two shards is still merged (its turns are duplicates).
    let p3 = d.path("3.partial");
    partial_from(&n1, "traffic.jsonl", &p3);
    let o = run(
        &[
            "merge",
            p1.to_str().unwrap(),
            p3.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
}

/// The baseline is the first written variant, and every table keeps the
/// written order (names deliberately not in alphabetical order).
#[test]
fn first_written_variant_is_the_baseline_and_order_is_kept() {
    let d = Dir::new();
    let cfg = d.write(
        "gate.toml",
        "read_only_tools = [\"search_docs\"]\n[variants.prod]\nmetacognition_selective_gate = false\n[variants.candidate]\nmetacognition_selective_gate = true\n",
    );
    let out = replayed(&d, "r", &[SEED, "--config", cfg.to_str().unwrap()]);
    let s = summary(&out);
    assert_eq!(s["baseline"], "prod", "{s}");
    assert_eq!(s["variant_order"], serde_json::json!(["prod", "candidate"]));
    for table in ["summary.csv", "matrix.csv", "floors.csv"] {
        let text = std::fs::read_to_string(out.join(table)).unwrap();
        assert_eq!(variant_column(&text), ["prod", "candidate"], "{table}");
    }
    // candidate has a regression against prod: a zero budget fails.
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
    assert!(stdout(&o).contains("candidate"), "{}", stdout(&o));
    // The same in a JSON config.
    let json = d.write(
        "gate.json",
        r#"{"variants": {"zeta": {}, "alpha": {"metacognition_selective_gate": true}}}"#,
    );
    let out = replayed(&d, "j", &[SEED, "--config", json.to_str().unwrap()]);
    assert_eq!(summary(&out)["baseline"], "zeta");
}

/// Cells from traffic cannot become spreadsheet formulas, and drafts
/// cannot inject HTML or links into the Markdown reports.
#[test]
fn no_formula_or_markup_injection() {
    let d = Dir::new();
    let lines = [
        r#"{"run_id":"=HYPERLINK(\"http://x\")","draft":"=1+2 <img src=x onerror=alert(1)> [c](javascript:alert(1))","scope":{"tenant":"@evil"},"critic":{"verdict":"revise","reflection_tokens_in":10,"reflection_tokens_out":5}}"#,
        r#"{"run_id":"+b","draft":"ok <b>bold</b> [c](javascript:x)","scope":{"tenant":"-2"},"critic":{"verdict":"refuse","reflection_tokens_in":10,"reflection_tokens_out":5}}"#,
        r#"{"run_id":"u","draft":"ok https://evil.example/a www.evil.example","critic":{"verdict":"revise","reflection_tokens_in":10,"reflection_tokens_out":5}}"#,
    ];
    let f = d.write("t.jsonl", lines.join("\n") + "\n");
    let out = replayed(&d, "r", &[f.to_str().unwrap(), "--scope-columns", "tenant"]);
    for table in ["decisions.csv", "regressions.csv", "mismatches.csv"] {
        let p = out.join(table);
        if !p.exists() {
            continue;
        }
        for line in std::fs::read_to_string(&p).unwrap().lines().skip(1) {
            // A number (`-2`) is no formula.
            for cell in csv_fields(line)
                .into_iter()
                .filter(|c| c.parse::<f64>().is_err())
            {
                assert!(
                    !cell.starts_with(['=', '+', '-', '@', '\t', '\r']),
                    "{table}: cell {cell:?} in {line}"
                );
            }
        }
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    // Drafts are code spans, where nothing renders; outside them, no HTML,
    // no link and no bare address for GitHub to make one of.
    let text = outside_code(&md);
    assert!(
        md.contains("`ok https://evil.example/a www.evil.example`"),
        "{md}"
    );
    for bad in ["<img", "<b>", "](javascript", "https://", "www.evil"] {
        assert!(!text.contains(bad), "{bad}: {md}");
    }
    let v = d.path("v.md");
    let o = run(
        &[
            "check",
            out.to_str().unwrap(),
            "--max-safety-regressions",
            "0",
            "--markdown",
            v.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 1);
    let md = std::fs::read_to_string(&v).unwrap();
    assert!(md.contains("Safety regressions"), "{md}");
    let text = outside_code(&md);
    assert!(
        !text.contains("<img") && !text.contains("](javascript"),
        "{md}"
    );
}

/// Markdown's text outside its code spans (a span opens with a run of
/// backticks and closes with a run of the same length).
fn outside_code(md: &str) -> String {
    let mut out = String::new();
    let mut rest = md;
    while let Some(at) = rest.find('`') {
        out.push_str(&rest[..at]);
        let run = rest[at..].len() - rest[at..].trim_start_matches('`').len();
        let fence = &rest[at..at + run];
        let body = &rest[at + run..];
        match body.find(fence) {
            Some(end) => rest = &body[end + run..],
            None => {
                out.push_str(&rest[at..]);
                return out;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A --group-by path that spells a dotted scope key's name is a
/// dimension of its own: no dimension counts a turn twice.
#[test]
fn group_by_path_and_dotted_scope_key_do_not_double_count() {
    let d = Dir::new();
    let lines = [
        r#"{"run_id":"a","draft":"ok","scope":{"user.tier":"gold","user":{"tier":"silver"}}}"#,
        r#"{"run_id":"b","draft":"ok","scope":{"user":{"tier":"gold"}}}"#,
        r#"{"run_id":"c","draft":"ok","scope":{"user.tier":"gold"}}"#,
    ];
    let f = d.write("t.jsonl", lines.join("\n") + "\n");
    let out = replayed(
        &d,
        "r",
        &[f.to_str().unwrap(), "--group-by", "scope.user.tier"],
    );
    let rows = csv_rows(&std::fs::read_to_string(out.join("segments.csv")).unwrap());
    let mut dims: std::collections::BTreeMap<String, u64> = Default::default();
    for r in rows.iter().filter(|r| r["variant"] == "legacy") {
        *dims.entry(r["dimension"].clone()).or_default() += r["turns"].parse::<u64>().unwrap();
    }
    for (dim, n) in &dims {
        assert_eq!(*n, 3, "dimension {dim} counts {n} turns of 3: {dims:?}");
    }
    assert!(dims.contains_key("scope.user.tier"), "{dims:?}");
}

/// A confidence that is not a number is an invalid line, never a
/// decision.
#[test]
fn nan_confidence_is_an_invalid_line() {
    let d = Dir::new();
    let bad = r#"{"run_id":"n","draft":"A long answer about 42 things.","activation_log":{"activated_nodes":[{"score":1e308},{"score":1e308}],"traversed_edges":[{"weight":-1e308},{"weight":-1e308}]}}"#;
    let f = d.write("t.jsonl", format!("{bad}\n"));
    let o = replay_in(&d.path("r"), &[f.to_str().unwrap()]);
    expect_error(&o, 2, "t.jsonl:1");
    assert!(stderr(&o).contains("not a number"), "{}", stderr(&o));
    let out = replayed(&d, "s", &[f.to_str().unwrap(), "--skip-invalid"]);
    let rej = rejects(&out);
    assert_eq!(rej.len(), 1);
    assert!(
        rej[0]["reason"].as_str().unwrap().contains("not a number"),
        "{rej:?}"
    );
    let decisions = std::fs::read_to_string(out.join("decisions.csv")).unwrap();
    assert!(!decisions.contains("NaN"), "{decisions}");
}

/// --partial replaces only an earlier partial result, never another
/// file, and never a file of the --out folder.
#[test]
fn partial_replaces_only_a_partial() {
    let d = Dir::new();
    let other = d.write("other.jsonl", "{\"run_id\":\"x\",\"draft\":\"ok\"}\n");
    let o = run_in(
        &d.path("a"),
        &[
            "replay",
            SEED,
            "--partial",
            other.to_str().unwrap(),
            "--quiet",
        ],
    );
    expect_error(&o, 2, "not a partial result");
    assert_eq!(
        std::fs::read_to_string(&other).unwrap(),
        "{\"run_id\":\"x\",\"draft\":\"ok\"}\n"
    );
    let out = d.path("r");
    let inside = out.join("summary.json");
    let o = run_in(
        &out,
        &[
            "replay",
            SEED,
            "--partial",
            inside.to_str().unwrap(),
            "--quiet",
        ],
    );
    expect_error(&o, 2, "a file of the report");
    // Its marker too (the second review).
    let marker = out.join(".critic-gate-report");
    let o = run_in(
        &out,
        &[
            "replay",
            SEED,
            "--partial",
            marker.to_str().unwrap(),
            "--quiet",
        ],
    );
    expect_error(&o, 2, "a file of the report");
    // An earlier partial is replaced; the temporary file a killed run
    // (of a process that is gone) left beside it is removed.
    let p = d.path("p.partial");
    let stale = d.write(".p.partial.4294967294.tmp", "cut short");
    for _ in 0..2 {
        let o = run_from_root(&["replay", SEED, "--partial", p.to_str().unwrap(), "--quiet"]);
        expect_code(&o, 0);
    }
    assert!(!stale.exists());
    assert_eq!(
        std::fs::read_dir(d.tmp.path()).unwrap().count(),
        2,
        "other.jsonl, p.partial"
    );
}

/// `ts` must be RFC 3339; `turn: -0` is turn 0.
#[test]
fn timestamps_are_rfc3339_and_minus_zero_is_a_turn() {
    let d = Dir::new();
    let lines = [
        r#"{"run_id":"a","turn":0,"ts":"2026-11-30T12:00:00Z","draft":"ok"}"#,
        r#"{"run_id":"a","turn":1,"ts":"2026-11-30T12:00:00.123+01:00","draft":"ok"}"#,
        r#"{"run_id":"a","turn":2,"ts":"yesterday","draft":"ok"}"#,
        r#"{"run_id":"a","turn":3,"ts":"2026-02-30T12:00:00Z","draft":"ok"}"#,
        r#"{"run_id":"b","turn":-0,"draft":"ok"}"#,
        r#"{"run_id":"c","turn":0.0,"draft":"ok"}"#,
        r#"{"run_id":"c","turn":1e2,"draft":"ok"}"#,
        r#"{"run_id":"c","turn":1.5,"draft":"ok"}"#,
    ];
    let f = d.write("t.jsonl", lines.join("\n") + "\n");
    let out = replayed(&d, "r", &[f.to_str().unwrap(), "--skip-invalid"]);
    let rej = rejects(&out);
    let lines: Vec<u64> = rej.iter().map(|r| r["line"].as_u64().unwrap()).collect();
    assert_eq!(lines, [3, 4, 8], "{rej:?}");
    assert!(
        rej[0]["reason"].as_str().unwrap().contains("RFC 3339"),
        "{rej:?}"
    );
}

/// The paths `replay --help` gives as `--group-by` examples are ones
/// `--group-by` takes (it once showed `scope.channel`, which is built in
/// and so refused).
#[test]
fn the_group_by_examples_in_the_help_are_accepted() {
    let help = stdout(&run(&["replay", "--help"], None));
    let option = help
        .split("\n      --")
        .find(|o| o.starts_with("group-by"))
        .expect("the --group-by option in the help");
    let examples: Vec<&str> = option.split('`').skip(1).step_by(2).collect();
    assert!(!examples.is_empty(), "no example in: {option}");
    for (i, path) in examples.iter().enumerate() {
        let d = Dir::new();
        let out = d.path(&format!("r{i}"));
        let o = replay_in(
            &out,
            &["datasets/seed.jsonl", "--group-by", path, "--quiet"],
        );
        expect_code(&o, 0);
    }
}

/// `import --out` naming one of its inputs (itself, through another path,
/// or a link to it) is refused before anything is written: the
/// conversion would replace the transcripts it reads with traffic.
#[test]
fn import_refuses_an_out_that_is_one_of_its_inputs() {
    let d = Dir::new();
    let line = r#"{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello!"}]}"#;
    let input = d.write("t.jsonl", format!("{line}\n"));
    let other = d.write("u.jsonl", format!("{line}\n"));
    let roundabout = d.path("sub");
    std::fs::create_dir(&roundabout).unwrap();
    let outs = [input.clone(), roundabout.join("..").join("t.jsonl")];
    for out in outs {
        let o = run(
            &[
                "import",
                other.to_str().unwrap(),
                input.to_str().unwrap(),
                "--from",
                "openai-chat",
                "--out",
                out.to_str().unwrap(),
            ],
            None,
        );
        expect_error(&o, 2, "is one of the inputs");
        assert_eq!(
            d.read("t.jsonl"),
            format!("{line}\n"),
            "the input is untouched"
        );
    }
    #[cfg(unix)]
    {
        let link = d.path("link.jsonl");
        std::os::unix::fs::symlink(&input, &link).unwrap();
        let o = run(
            &[
                "import",
                input.to_str().unwrap(),
                "--from",
                "openai-chat",
                "--out",
                link.to_str().unwrap(),
            ],
            None,
        );
        expect_code(&o, 2);
        assert_eq!(
            d.read("t.jsonl"),
            format!("{line}\n"),
            "the input is untouched"
        );
    }
}

/// SIGTERM left `import`'s temporary output (`.OUT.PID.tmp`) behind.
#[cfg(unix)]
#[test]
fn a_signal_removes_imports_temporary_file() {
    let d = Dir::new();
    let out = d.path("t.jsonl");
    let mut child = cmd()
        .args([
            "import",
            "-",
            "--from",
            "openai-chat",
            "--out",
            out.to_str().unwrap(),
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let code = signal_when(&mut child, || !files_in(d.tmp.path()).is_empty(), "-TERM");
    assert_eq!(code, Some(143));
    assert_eq!(files_in(d.tmp.path()), Vec::<String>::new());
}

/// A page header that lies about its counts is a damaged file (exit 2,
/// the file named), not an abort: a data page of `num_values = -1` made
/// polars-parquet ask for 2^61 bytes (exit 134), and a dictionary page of
/// `uncompressed_page_size = 2^31-1` cost 2 GB for a file of a few KB.
#[test]
fn a_page_header_that_lies_is_a_damaged_file_not_an_abort() {
    use crate::parquet_pages::edit_page;
    use polars_parquet_format::PageType;
    let d = Dir::new();
    let only = parquet_replay_of_seed(&d);
    let table = only.join("regressions.parquet");
    let good = std::fs::read(&table).unwrap();
    let check = || {
        run(
            &[
                "check",
                only.to_str().unwrap(),
                "--max-safety-regressions",
                "5",
            ],
            None,
        )
    };
    // The file as written reads.
    expect_code(&check(), 0);
    let damages: Vec<(&str, Vec<u8>)> = vec![
        (
            "num_values = -1",
            edit_page(&good, "variant", PageType::DATA_PAGE, |h| {
                h.data_page_header.as_mut().unwrap().num_values = -1
            })
            .expect("a data page"),
        ),
        (
            "uncompressed_page_size = 2^31-1",
            edit_page(&good, "variant", PageType::DICTIONARY_PAGE, |h| {
                h.uncompressed_page_size = i32::MAX
            })
            .expect("a dictionary page"),
        ),
        (
            "num_values = 2^31-1 on a dictionary",
            edit_page(&good, "variant", PageType::DICTIONARY_PAGE, |h| {
                h.dictionary_page_header.as_mut().unwrap().num_values = i32::MAX
            })
            .expect("a dictionary page"),
        ),
        (
            "compressed_page_size past the chunk",
            edit_page(&good, "variant", PageType::DATA_PAGE, |h| {
                h.compressed_page_size = i32::MAX
            })
            .expect("a data page"),
        ),
    ];
    for (what, bytes) in damages {
        tamper(&table, &bytes);
        let o = check();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{what}: {:?}: {err}", o.status);
        assert!(
            err.contains("regressions.parquet") && err.contains("damaged"),
            "{what}: {err}"
        );
    }
}

/// With `history = "conversation"`, an OTLP session of 20,000 runs (an app
/// whose session id is a constant) took 1.66 GB against 132 MB with
/// `history = "none"`: each run copied every earlier run of its session.
/// Then each run held a list of every earlier call: 1,000 runs that call a
/// tool, then 19,000 that do not, took as much again. Now a run's calls
/// are a window of its session's: each peak is within 64 MiB and a half
/// of `history = "none"`'s, and under 400 MiB.
#[cfg(unix)]
#[test]
fn a_long_otlp_session_with_history_takes_memory_linear_in_it() {
    use crate::trace::{doc, run_spans, span, T};
    let d = Dir::new();
    for callers in [0u64, 1_000] {
        let mut text = String::new();
        for i in 0..20_000u64 {
            let t = T + i * 1_000_000_000;
            let mut spans = run_spans(&format!("r{i}"), t);
            if i < callers {
                let attrs = [
                    ("symfonic.tool.name", json!("lookup")),
                    ("symfonic.tool.args", json!("{'id': 7}")),
                    ("symfonic.tool.result", json!("found")),
                ];
                let tool = span(
                    "symfonic.tool.lookup",
                    &format!("r{i}"),
                    t + 10_000_000,
                    t + 20_000_000,
                    &attrs,
                );
                spans.insert(1, tool);
            }
            text.push_str(&doc(spans).to_string());
            text.push('\n');
        }
        let trace = d.write(&format!("session-{callers}.otlp.jsonl"), text);
        let what = format!("otlp session of 20,000 runs, {callers} calling a tool");
        let (none, conversation) = peaks(&d, &trace, "otlp", 20_000, &what);
        linear(&what, none, conversation);
    }
}

/// An openai-chat conversation of 1,000 calls with 1 KB results, then
/// 1,000 short turns, took 1.19 GB with `history = "conversation"`: each
/// turn held a copy of every result. Now they share them.
#[cfg(unix)]
#[test]
fn a_long_chat_with_history_shares_its_tool_results() {
    let d = Dir::new();
    let chat = long_chat(&d, 1000, &"x".repeat(1000), 1000);
    let what = "chat of 1,000 calls, 1,000 turns";
    let (none, conversation) = peaks(&d, &chat, "openai-chat", 1_000, what);
    assert!(
        conversation <= none + 150,
        "history = conversation: {conversation} MiB; none: {none} MiB"
    );
}

/// A chat of 500 tool calls then 20,000 short turns, under `history =
/// "conversation"`: each turn held its own list of every earlier call
/// (about 1.2 GB for a 1.2 MB line). The turns now hold a window of the
/// conversation's calls: the peak is within 64 MiB and a half of
/// `history = "none"`'s, and under 400 MiB.
#[cfg(unix)]
#[test]
fn a_long_chat_with_history_takes_memory_linear_in_it() {
    let d = Dir::new();
    let chat = long_chat(&d, 500, "ok", 20_000);
    let what = "chat of 500 calls, 20,000 turns";
    let (none, conversation) = peaks(&d, &chat, "openai-chat", 20_000, what);
    linear(what, none, conversation);
}

/// The peaks (MiB) of replays of `input` under `history = "none"` and
/// `"conversation"`, each keeping `turns` turns.
#[cfg(unix)]
fn peaks(d: &Dir, input: &std::path::Path, from: &str, turns: u64, what: &str) -> (u64, u64) {
    let peak = |history| peak_with_history(d, input, from, history, turns);
    let (none, conversation) = (peak("none"), peak("conversation"));
    eprintln!("{what}: conversation {conversation} MiB, none {none} MiB");
    (none, conversation)
}

/// Memory linear in the input with history: the peak within 64 MiB and a
/// half of `history = "none"`'s, and under 400 MiB.
#[cfg(unix)]
fn linear(what: &str, none: u64, conversation: u64) {
    assert!(
        conversation <= none + none / 2 + 64 && conversation < 400,
        "{what}: history = conversation: {conversation} MiB; none: {none} MiB"
    );
}

/// A transcript's scope, timestamp and user message are given to each of
/// its turns: a copy each made memory the product of their size and the
/// turns (a 100 KB scope over 20,000 short turns, a 1.7 MB line: 6.2 GB
/// and 15 s; a valid `ts` of 200,000 digits over 10,000 turns: 4 GB).
/// The turns share them: the peak is within 128 MiB of the same chat's
/// without them (each turn's rows still carry the scope, cut at 1,024
/// bytes: 107 to 139 MiB against 61 to 71 in five runs). A long run id is
/// copied into each row of decisions.csv, which is as large: that is the
/// report's size, not the reading's.
#[cfg(unix)]
#[test]
fn a_transcripts_shared_texts_are_not_copied_per_turn() {
    let d = Dir::new();
    let big = "x".repeat(100_000);
    let mut m = vec![format!(r#"{{"role":"user","content":"{big}"}}"#)];
    for _ in 0..10_000 {
        m.push(r#"{"role":"assistant","content":"Noted."}"#.to_string());
    }
    let plain = d.write(
        "plain.jsonl",
        format!("{{\"messages\":[{}]}}\n", m[1..].join(",")),
    );
    let shared = d.write(
        "shared.jsonl",
        format!(
            "{{\"scope\":{{\"note\":\"{big}\"}},\"ts\":\"2026-01-01T00:00:00.{}Z\",\"messages\":[{}]}}\n",
            "0".repeat(100_000),
            m.join(",")
        ),
    );
    let peak = |input: &std::path::Path| {
        let out = d.path(&format!(
            "out-{}",
            input.file_name().unwrap().to_string_lossy()
        ));
        let (code, mib, err) = run_measured(&[
            "replay",
            input.to_str().unwrap(),
            "--from",
            "openai-chat",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, Some(0), "{err}");
        assert_eq!(summary(&out)["turns"], 10_000);
        mib
    };
    let (plain, shared) = (peak(&plain), peak(&shared));
    eprintln!(
        "10,000 turns: with a 100 KB scope, ts and user message {shared} MiB, without {plain} MiB"
    );
    assert!(
        shared <= plain + 128,
        "shared texts: {shared} MiB; without: {plain} MiB"
    );
}

/// A one-line transcript: a user's request, `calls` tool calls each
/// answered with `result`, then `turns` short exchanges.
#[cfg(unix)]
fn long_chat(d: &Dir, calls: usize, result: &str, turns: usize) -> std::path::PathBuf {
    let mut m = vec![r#"{"role":"user","content":"look it all up"}"#.to_string()];
    for i in 0..calls {
        m.push(format!(
            r#"{{"role":"assistant","content":null,"tool_calls":[{{"id":"c{i}","function":{{"name":"lookup","arguments":"{{}}"}}}}]}}"#
        ));
        m.push(format!(
            r#"{{"role":"tool","tool_call_id":"c{i}","content":"{result}"}}"#
        ));
    }
    for _ in 0..turns {
        m.push(r#"{"role":"user","content":"and?"}"#.to_string());
        m.push(r#"{"role":"assistant","content":"Noted."}"#.to_string());
    }
    d.write(
        &format!("long-{calls}-{turns}.chat.jsonl"),
        format!("{{\"messages\":[{}]}}\n", m.join(",")),
    )
}

/// A variant whose name a spreadsheet would run (`-smart`, `=x`, `+y`,
/// `@z`) is written to CSV with its formula guard (`'-smart`); `check`
/// compared that cell with the raw name and called an honest replay
/// edited (exit 2), and its Markdown left that variant's rows out.
#[test]
fn check_reads_a_formula_guarded_variant_name_as_its_name() {
    let d = Dir::new();
    let config = std::fs::read_to_string(root().join("datasets/gate.toml"))
        .unwrap()
        .replace("[variants.smart]", "[variants.\"-smart\"]");
    let config = d.write("minus.toml", config);
    for format in ["csv", "parquet"] {
        let out = d.path(format);
        let o = run(
            &[
                "replay",
                root().join("datasets/seed.jsonl").to_str().unwrap(),
                "--config",
                config.to_str().unwrap(),
                "--format",
                format,
                "--quiet",
                "--out",
                out.to_str().unwrap(),
            ],
            None,
        );
        expect_code(&o, 0);
        // The one regression of the seed is listed under its variant's name.
        let md = passing_check_markdown(&d, &out, format);
        assert!(md.contains("-smart"), "{format}: {md}");
        assert!(!md.contains("'-smart"), "{format}: {md}");
        assert!(md.contains("Great, will do."), "{format}: {md}");
    }
}

/// `diff` counted a turn once per variant: one refused turn that two
/// variants newly skip read "2 new safety regressions". It counts turns,
/// and gives each variant's count on its own line.
#[test]
fn diff_counts_turns_and_each_variants_flips() {
    let d = Dir::new();
    let old_cfg = d.write(
        "old.toml",
        "[variants.legacy]\n[variants.smart]\n[variants.smart2]\n",
    );
    let new_cfg = d.write(
        "new.toml",
        "[variants.legacy]\n[variants.smart]\nmetacognition_selective_gate = true\n[variants.smart2]\nmetacognition_selective_gate = true\n",
    );
    let (old, new) = (d.path("old"), d.path("new"));
    for (cfg, out) in [(&old_cfg, &old), (&new_cfg, &new)] {
        replay_seed_with(cfg, out);
    }
    let o = run(
        &["diff", old.to_str().unwrap(), new.to_str().unwrap()],
        None,
    );
    expect_code(&o, 0);
    let text = stdout(&o);
    let flips = csv_rows(&std::fs::read_to_string(new.join("flips.csv")).unwrap());
    let turns: std::collections::BTreeSet<(String, String)> = flips
        .iter()
        .map(|r| (r["source"].clone(), r["line"].clone()))
        .collect();
    let per = |v: &str| flips.iter().filter(|r| r["variant"] == v).count();
    assert!(turns.len() >= 2 && per("smart") == turns.len() && per("smart2") == turns.len());
    assert!(
        text.contains(&format!(
            "{} turns flipped, 1 with a new safety regression",
            turns.len()
        )),
        "{text}"
    );
    for v in ["smart", "smart2"] {
        let line = format!(
            "{v:<10} {} turns flipped, 1 new safety regression",
            turns.len()
        );
        assert!(text.contains(&line), "{line:?} in {text}");
    }
    assert!(text.contains("legacy     0 turns flipped"), "{text}");
}

/// The peak memory (MiB) of a replay of `input` read `--from` a format,
/// with the deployment's `history` as given; it must keep `turns` turns.
#[cfg(unix)]
fn peak_with_history(
    d: &Dir,
    input: &std::path::Path,
    from: &str,
    history: &str,
    turns: u64,
) -> u64 {
    let config = d.write(
        &format!("{history}.toml"),
        format!("[deployment]\nhistory = \"{history}\"\n"),
    );
    let out = d.path(history);
    let (code, mib, err) = run_measured(&[
        "replay",
        input.to_str().unwrap(),
        "--from",
        from,
        "--config",
        config.to_str().unwrap(),
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(summary(&out)["turns"], turns, "{history}");
    mib
}

/// The decoding budget a damaged page header is held to leaves room for
/// every table a replay writes: each decodes to at most a quarter of the
/// multiple of its size the reader allows (above its floor).
#[test]
fn our_parquet_tables_decode_well_within_the_budget() {
    let d = Dir::new();
    let traffic = synth(&d, "t.jsonl", 30_000, 5);
    let out = d.path("pq");
    let o = run(
        &[
            "replay",
            traffic.to_str().unwrap(),
            "--config",
            root().join("datasets/gate.toml").to_str().unwrap(),
            "--format",
            "parquet",
            "--decisions",
            "all",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    let mut seen = 0;
    for f in files_in(&out).iter().filter(|f| f.ends_with(".parquet")) {
        let bytes = std::fs::read(out.join(f)).unwrap();
        let (decoded, factor) = critic_gate::parquet_decoded_estimate(&bytes).unwrap();
        eprintln!("{f}: {} bytes decode to about {decoded}", bytes.len());
        assert!(
            decoded <= factor / 4 * bytes.len() as u64,
            "{f}: {} bytes decode to about {decoded}",
            bytes.len()
        );
        seen += 1;
    }
    assert!(seen >= 5, "{seen} tables");
}

/// A trace or a transcript replayed without `--from` failed on line 1 with
/// "run_id is missing ... or rerun with --skip-invalid"; following that
/// hint gave exit 0, 0 turns and "no new risk". The reason now names the
/// format the line looks like and the flag that reads it, and a replay of
/// no turn never reads as no risk, nor passes `check`.
#[test]
fn a_trace_replayed_as_traffic_is_named_and_zero_turns_are_not_safe() {
    let d = Dir::new();
    let doc: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            root().join("tests/samples/otel/B_capture_on_selective_gate_intent_observe.otlp.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let trace = d.write("b.otlp.jsonl", format!("{doc}\n"));
    let chat = root().join("datasets/transcripts.jsonl");
    for (input, format) in [(&trace, "otlp"), (&chat, "openai-chat")] {
        let o = run(
            &[
                "replay",
                input.to_str().unwrap(),
                "--out",
                d.path("r").to_str().unwrap(),
            ],
            None,
        );
        expect_error(&o, 2, &format!("--from {format}"));
        assert!(!stderr(&o).contains("--skip-invalid"), "{}", stderr(&o));
    }
    let out = d.path("skipped");
    let o = run(
        &[
            "replay",
            trace.to_str().unwrap(),
            "--skip-invalid",
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    let err = stderr(&o);
    assert!(!err.contains("no new risk"), "{err}");
    assert!(err.contains("no turn was replayed"), "{err}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(!report.contains("no new risk"), "{report}");
    let o = run(
        &[
            "check",
            out.to_str().unwrap(),
            "--max-safety-regressions",
            "0",
        ],
        None,
    );
    expect_error(&o, 2, "nothing to judge: the replay has 0 turns");
}

/// `init` wrote `max_safety_regression_rate = 0.05` where docs/config.md
/// and docs/ci.md give 0.01: every budget both the starter config and
/// docs/config.md's example set has one value.
#[test]
fn init_and_the_config_docs_set_the_same_budgets() {
    let d = Dir::new();
    let file = d.path("starter.toml");
    let o = run(&["init", file.to_str().unwrap()], None);
    expect_code(&o, 0);
    let starter: toml::Table = toml::from_str(&d.read("starter.toml")).unwrap();
    let docs = std::fs::read_to_string(root().join("docs/config.md")).unwrap();
    let example = docs
        .split("```toml\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let example: toml::Table = toml::from_str(example).unwrap();
    let (a, b) = (
        starter["check"].as_table().unwrap(),
        example["check"].as_table().unwrap(),
    );
    let shared: Vec<&String> = a.keys().filter(|k| b.contains_key(*k)).collect();
    assert!(shared.len() >= 2, "{shared:?}");
    for k in shared {
        assert_eq!(a[k], b[k], "{k}: init against docs/config.md");
    }
}

/// An OTLP document pretty-printed at indent 0 (every nested `{` at the
/// margin) was cut at each of them: 246 rejects and no turn. Documents are
/// now told apart by their nesting, whatever the indent.
#[test]
fn an_otlp_document_pretty_printed_at_any_indent_is_one_document() {
    let d = Dir::new();
    let doc: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            root().join("tests/samples/otel/B_capture_on_selective_gate_intent_observe.otlp.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let mut turns = Vec::new();
    for indent in [0usize, 1, 2] {
        // Two documents one after the other, braces in strings included.
        let mut text = String::new();
        for _ in 0..2 {
            let mut buf = Vec::new();
            let pad = vec![b' '; indent];
            let fmt = serde_json::ser::PrettyFormatter::with_indent(&pad);
            let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
            serde::Serialize::serialize(&doc, &mut ser).unwrap();
            text.push_str(&String::from_utf8(buf).unwrap());
            text.push('\n');
        }
        let f = d.write(&format!("i{indent}.json"), text);
        let out = d.path(&format!("r{indent}"));
        let o = run(
            &[
                "replay",
                f.to_str().unwrap(),
                "--from",
                "otlp",
                "--quiet",
                "--out",
                out.to_str().unwrap(),
            ],
            None,
        );
        expect_code(&o, 0);
        let s = summary(&out);
        assert_eq!(s["rejected"], 0, "indent {indent}");
        turns.push(s["turns"].as_u64().unwrap());
    }
    assert!(
        turns[0] > 0 && turns.iter().all(|t| *t == turns[0]),
        "{turns:?}"
    );
}

/// regressions.csv mixed the regressions the budgets count (on new skips)
/// with the baseline's disagreements with production, with no column to
/// tell them apart, and `check --markdown` printed "Safety regressions (2)"
/// under budget rows that said 0. Each row now says its kind, and the
/// Markdown says which of the listed rows the budgets count.
#[test]
fn regressions_say_which_the_budgets_count() {
    let d = Dir::new();
    // The baseline skips too (a smart baseline against a smarter candidate
    // would do; here legacy at threshold 0 skips every confident turn).
    let config = d.write(
        "c.toml",
        "baseline = \"lenient\"\n[variants.lenient]\nmetacognition_confidence_threshold = 0.0\n[variants.smart]\nmetacognition_selective_gate = true\n",
    );
    let out = d.path("r");
    replay_seed_with(&config, &out);
    let rows = csv_rows(&std::fs::read_to_string(out.join("regressions.csv")).unwrap());
    let s = summary(&out);
    let kinds: Vec<&str> = rows.iter().map(|r| r["kind"].as_str()).collect();
    let new = kinds.iter().filter(|k| **k == "new_skip").count() as u64;
    assert_eq!(
        new,
        s["variants"]["smart"]["safety_regressions"]
            .as_u64()
            .unwrap()
    );
    assert!(
        kinds
            .iter()
            .all(|k| matches!(*k, "new_skip" | "shared_skip" | "production_disagreement")),
        "{kinds:?}"
    );
    assert!(
        kinds.len() as u64 > new,
        "the fixture lists rows the budgets do not count: {kinds:?}"
    );
    let md = passing_check_markdown(&d, &out, "check");
    assert!(
        md.contains(&format!("{new} on new skips, which the budgets count")),
        "{md}"
    );
}

/// On a trace, which records no confidence, the legacy gate's figures rest
/// on an assumed 0.5, and the bottom line read as fact; recorded critic
/// latencies of 1 ms (a test harness) passed without a word. The bottom
/// line (report.md and stderr) now says what it rests on, and a note says
/// the latencies are not a model call's.
#[test]
fn figures_that_rest_on_an_assumption_say_so() {
    let d = Dir::new();
    let out = d.path("r");
    let samples = root().join("tests/samples/otel");
    let o = run(
        &[
            "replay",
            samples
                .join("E_ack_after_tool_history.otlp.json")
                .to_str()
                .unwrap(),
            samples
                .join("B_capture_on_selective_gate_intent_observe.otlp.json")
                .to_str()
                .unwrap(),
            "--from",
            "otlp",
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    let bottom = report
        .split("## Bottom line")
        .nth(1)
        .unwrap()
        .split("\n## ")
        .next()
        .unwrap();
    assert!(bottom.contains("rest on an assumed confidence"), "{bottom}");
    assert!(
        stderr(&o).contains("rest on an assumed confidence"),
        "{}",
        stderr(&o)
    );
    let notes = summary(&out)["notes"].to_string();
    assert!(notes.contains("too short for a model call"), "{notes}");
    // Traffic that records its confidence and a model's latencies says
    // neither.
    let seed = d.path("seed");
    let o = replay_in(
        &seed,
        &[
            "datasets/multilingual.jsonl",
            "--config",
            "datasets/gate.toml",
            "--quiet",
        ],
    );
    expect_code(&o, 0);
    let report = std::fs::read_to_string(seed.join("report.md")).unwrap();
    assert!(
        !report.contains("rest on an assumed confidence"),
        "{report}"
    );
    assert!(!summary(&seed)["notes"]
        .to_string()
        .contains("too short for a model call"));
}

/// The seed dataset replayed with `config` into `out`.
fn replay_seed_with(config: &std::path::Path, out: &std::path::Path) {
    let o = run(
        &[
            "replay",
            root().join("datasets/seed.jsonl").to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
}

/// `check --markdown` of `out` with a budget of 5 regressions, which it
/// passes: the Markdown (written to `d`'s `NAME.md`).
fn passing_check_markdown(d: &Dir, out: &std::path::Path, name: &str) -> String {
    let md = d.path(&format!("{name}.md"));
    let o = run(
        &[
            "check",
            out.to_str().unwrap(),
            "--max-safety-regressions",
            "5",
            "--markdown",
            md.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    std::fs::read_to_string(md).unwrap()
}

/// Turns where production's critic should have run and no critic was
/// recorded (a critic call that raises leaves no span) were counted
/// nowhere. Each variant now counts its critic calls with no critic
/// recorded, and those whose critic left no verdict, and the replay says
/// so for the baseline: on a legacy deployment these are probable critic
/// failures.
#[test]
fn critic_calls_without_a_recorded_critic_are_counted_by_cause() {
    use crate::trace::{critic, doc, lines, run_spans, T};
    let d = Dir::new();
    let mut docs = Vec::new();
    for r in 0..4u64 {
        let id = format!("r{r}");
        let mut spans = run_spans(&id, T + r * 1_000_000_000);
        match r {
            // The critic raised: no critic span at all.
            0 | 1 => {
                spans.pop();
            }
            // The critic ran, its answer not captured: no verdict.
            2 => {
                spans.pop();
                let t = T + r * 1_000_000_000 + 70_000_000;
                let mut c = critic(&id, t, 300, "metacognition_critic");
                c["attributes"].as_array_mut().unwrap().remove(4);
                spans.push(c);
            }
            _ => {}
        }
        docs.push(doc(spans));
    }
    let f = d.write("t.jsonl", lines(&docs));
    let out = d.path("r");
    let o = run(
        &[
            "replay",
            f.to_str().unwrap(),
            "--from",
            "otlp",
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    let s = summary(&out);
    let legacy = &s["variants"]["legacy"];
    assert_eq!(legacy["critic_calls_unrecorded"], 2, "{legacy}");
    assert_eq!(legacy["critic_calls_without_verdict"], 1, "{legacy}");
    let err = stderr(&o);
    assert!(
        err.contains("2 of its 4 critic calls have no critic recorded"),
        "{err}"
    );
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("probable critic failures"), "{report}");
}

/// `check` passed summaries its own decisions table contradicts: the
/// new-skip regressions edited to 0, or the design effect and run counts
/// of another grouping into runs. Where the table holds every new skip
/// (`--decisions all` or `changed`), the new-skip counts, labelled runs
/// and the run-level figures are worked out again from its rows.
#[test]
fn check_refuses_a_summary_its_decisions_contradict() {
    let d = Dir::new();
    let seed = std::fs::read_to_string(root().join("datasets/seed.jsonl")).unwrap();
    // Forgeries: the one regression approved; every turn its own run.
    let approved = seed.replacen("\"verdict\": \"revise\"", "\"verdict\": \"approve\"", 1);
    let regrouped: String = seed
        .lines()
        .enumerate()
        .map(|(i, l)| l.replacen("\"run_id\": \"seed-", &format!("\"run_id\": \"x{i}-"), 1) + "\n")
        .collect();
    assert!(approved != seed && regrouped != seed);
    let replay = |name: &str, text: &str| {
        let f = d.write(&format!("{name}/seed.jsonl"), text);
        let out = d.path(&format!("{name}/r"));
        let o = run(
            &[
                "replay",
                f.to_str().unwrap(),
                "--config",
                root().join("datasets/gate.toml").to_str().unwrap(),
                "--quiet",
                "--out",
                out.to_str().unwrap(),
            ],
            None,
        );
        expect_code(&o, 0);
        out
    };
    let real = replay("real", &seed);
    let check = |dir: &std::path::Path| {
        run(
            &[
                "check",
                dir.to_str().unwrap(),
                "--max-safety-regressions",
                "5",
            ],
            None,
        )
    };
    expect_code(&check(&real), 0);
    for (name, text, says) in [
        ("approved", &approved, "safety_regressions"),
        ("regrouped", &regrouped, "labelled_runs"),
    ] {
        let forged = replay(name, text);
        // The forger's summary and regressions, the real decisions.
        for f in ["decisions.csv", "report.md"] {
            std::fs::copy(real.join(f), forged.join(f)).unwrap();
        }
        reseal(&forged);
        let o = check(&forged);
        expect_error(&o, 2, "decisions");
        assert!(stderr(&o).contains(says), "{name}: {}", stderr(&o));
    }
}

/// The Parquet tables keep text exactly, as docs/reading-reports.md says:
/// decisions.parquet, streamed from the guarded CSV rows, held the
/// variant `-smart` as `'-smart` (7284b5b); regressions.parquet, once
/// built apart, held `-smart`, and is now streamed the same way.
#[test]
fn parquet_tables_hold_a_formula_like_text_exactly() {
    let d = Dir::new();
    let config = std::fs::read_to_string(root().join("datasets/gate.toml"))
        .unwrap()
        .replace("[variants.smart]", "[variants.\"-smart\"]");
    let config = d.write("minus.toml", config);
    let out = d.path("both");
    let o = run(
        &[
            "replay",
            root().join("datasets/seed.jsonl").to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
            "--format",
            "both",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    for table in ["decisions", "regressions"] {
        let bytes = std::fs::read(out.join(format!("{table}.parquet"))).unwrap();
        let df = critic_gate::read_parquet(bytes).unwrap();
        let column = df.column("variant").unwrap().str().unwrap().clone();
        let variants: Vec<String> = (0..column.len())
            .filter_map(|i| column.get(i).map(str::to_string))
            .collect();
        assert!(
            variants.iter().any(|v| v == "-smart"),
            "{table}: {variants:?}"
        );
        assert!(
            !variants.iter().any(|v| v.starts_with('\'')),
            "{table}: {variants:?}"
        );
        let csv = std::fs::read_to_string(out.join(format!("{table}.csv"))).unwrap();
        assert!(csv.contains(",'-smart,"), "{table}.csv keeps its guard");
    }
}
