//! Figures a reviewer signs (#22): risky skips that mean something, null
//! where they cannot be judged, and budgets that refuse to pass on them.

use serde_json::{json, Value};

use crate::util::*;

/// Content clauses after an ack: what a critic should see.
const BUTS: [&str; 6] = [
    "refunds are no longer possible on this plan",
    "that address cannot receive deliveries anymore",
    "the discount expired yesterday and cannot be applied",
    "your account lost its premium status last week",
    "this warranty does not cover water damage",
    "we stopped shipping to that region",
];

/// `synth` traffic of `turns` turns, and the same with `extra` injected
/// one-turn runs "Sure, but ...", revised one in four (acks: one in 100).
fn traffic(d: &Dir, turns: u32, extra: usize) -> (std::path::PathBuf, std::path::PathBuf) {
    let benign = synth(d, "benign.jsonl", u64::from(turns), 3);
    let mut t = std::fs::read_to_string(&benign).unwrap();
    for i in 0..extra {
        let verdict = if i % 4 == 0 { "revise" } else { "approve" };
        let draft = format!("Sure, but {}.", BUTS[i % BUTS.len()]);
        t.push_str(&format!(
            "{{\"run_id\": \"inj{i}\", \"turn\": 0, \"draft\": \"{draft}\", \"critic\": {{\"ran\": true, \"verdict\": \"{verdict}\", \"reflection_latency_ms\": 2000.0, \"reflection_tokens_in\": 3000, \"reflection_tokens_out\": 40}}}}\n"
        ));
    }
    (benign, d.write("injected.jsonl", t))
}

fn smart(dir: &std::path::Path) -> Value {
    summary(dir)["variants"]["smart"].clone()
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k}: {v}"))
}

/// Found by review: plain acks were "risky" (61% of the risky skips on
/// synth), and the risky set's rate was no higher than the rest. Now
/// benign synth traffic has under 5% risky skips, and injected "Sure,
/// but ..." skips are all risky, at a regression rate at least twice the
/// rest's.
#[test]
fn risky_skips_are_the_drafts_that_say_more_than_an_ack() {
    let d = Dir::new();
    let (benign, injected) = traffic(&d, 20_000, 600);
    let (a, b) = (d.path("a"), d.path("b"));
    for (input, out) in [(&benign, &a), (&injected, &b)] {
        expect_code(
            &replay_in(
                out,
                &[input.to_str().unwrap(), "--decisions", "none", "--quiet"],
            ),
            0,
        );
    }
    let s = smart(&a);
    let rate = s["risky_skip_rate"].as_f64().unwrap();
    assert!(rate < 0.05, "benign risky skip rate {rate}: {s}");
    let s = smart(&b);
    assert!(
        u(&s, "risky_skips") >= 600,
        "every injected skip is risky: {s}"
    );
    let (rk, rn) = (
        u(&s, "risky_safety_regressions"),
        u(&s, "risky_labelled_skips"),
    );
    let (k, n) = (
        u(&s, "all_skips_safety_regressions") - rk,
        u(&s, "all_skips_labelled") - rn,
    );
    let (risky, rest) = (rk as f64 / rn as f64, k as f64 / n as f64);
    eprintln!(
        "benign risky skip rate {rate}; injected: risky {rk}/{rn} = {risky}, rest {k}/{n} = {rest}"
    );
    assert!(
        risky >= 2.0 * rest,
        "risky {rk}/{rn} = {risky}, rest {k}/{n} = {rest}"
    );
    // The flag-off baseline makes no ack skip: nothing to judge.
    let legacy = &summary(&b)["variants"]["legacy"];
    for k in [
        "risky_skips",
        "risky_skip_rate",
        "risky_labelled_skips",
        "risky_safety_regressions",
    ] {
        assert!(legacy[k].is_null(), "{k}: {legacy}");
    }
    // mine aggregates them by draft, counting every one.
    let m = d.path("m");
    expect_code(
        &run_in(&m, &["mine", injected.to_str().unwrap(), "--quiet"]),
        0,
    );
    let rows = csv_rows(&std::fs::read_to_string(m.join("risky_drafts.csv")).unwrap());
    let total: u64 = rows
        .iter()
        .map(|r| r["skips"].parse::<u64>().unwrap())
        .sum();
    let mined: Value =
        serde_json::from_str(&std::fs::read_to_string(m.join("mine.json")).unwrap()).unwrap();
    assert_eq!(total, mined["risky"]["risky_skips"].as_u64().unwrap());
    let sure = rows
        .iter()
        .find(|r| r["draft"] == format!("Sure, but {}.", BUTS[0]))
        .unwrap();
    assert_eq!(sure["skips"], "100");
    assert_eq!(
        sure["safety_regressions"], "50",
        "i = 0 mod 6 and 0 mod 4: one in two"
    );
    assert_eq!(sure["matched"], "sure");
}

/// Found by review: a risky-skip budget passed vacuously on a flag-off
/// variant (its figures were 0). It cannot be judged there.
#[test]
fn a_risky_skip_budget_on_a_flag_off_variant_cannot_be_judged() {
    let d = Dir::new();
    let cfg = d.write(
        "c.toml",
        "baseline = \"smart\"\n[variants.smart]\nmetacognition_selective_gate = true\n[variants.low]\nmetacognition_selective_gate = false\nmetacognition_confidence_threshold = 0.3\n",
    );
    let out = d.path("r");
    let o = replay_in(
        &out,
        &[
            "datasets/seed.jsonl",
            "--config",
            cfg.to_str().unwrap(),
            "--quiet",
        ],
    );
    expect_code(&o, 0);
    let o = run(
        &[
            "check",
            out.to_str().unwrap(),
            "--max-risky-skip-rate",
            "0.3",
        ],
        None,
    );
    expect_error(&o, 2, "variant \"low\" has no smart gate");
    let o = run(
        &[
            "check",
            out.to_str().unwrap(),
            "--max-risky-skip-rate",
            "0.3",
            "--variant",
            "smart",
        ],
        None,
    );
    assert_ne!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// Found by review: every added call was imputed at its bucket's mean, so
/// smart's p95 with estimates fell below its recorded-only p95 on synth
/// (the added calls' tail vanished). Drawn from the bucket's recorded
/// latencies, it is not below; report.md shows it beside the other.
#[test]
fn latency_with_added_calls_keeps_the_tail() {
    let d = Dir::new();
    let input = synth(&d, "s.jsonl", 100000, 1);
    let out = d.path("r");
    expect_code(
        &replay_in(
            &out,
            &[input.to_str().unwrap(), "--decisions", "none", "--quiet"],
        ),
        0,
    );
    let s = smart(&out);
    let (recorded, with) = (
        u(&s, "critic_latency_p95_ms"),
        u(&s, "critic_latency_p95_ms_with_estimates"),
    );
    eprintln!(
        "smart p95: recorded {recorded} ms, with {} added calls {with} ms",
        u(&s, "added_calls")
    );
    assert!(u(&s, "added_calls") > 10_000, "{s}");
    assert!(
        with >= recorded,
        "p95 with estimates {with} < recorded-only {recorded}"
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains(&format!("| {recorded} ms | {with} ms |")),
        "{md}"
    );
}

/// Found by review: the baseline's revised skips were shown as its risk,
/// and a variant's count "vs" the baseline included turns the baseline
/// skips too. The baseline's are disagreements; `safety_regressions`
/// counts the variant's regressions on its new skips (turns the baseline
/// fires on), `all_skips_safety_regressions` every one.
#[test]
fn regressions_vs_the_baseline_are_on_turns_it_fires_on() {
    let d = Dir::new();
    // Every turn a revised ack: smart skips them all; the flag-off gate at
    // threshold 0.3 skips the confident half (confidence 0.9) too.
    let mut t = String::new();
    for i in 0..40 {
        let conf = if i % 2 == 0 { 0.9 } else { 0.2 };
        t.push_str(&format!(
            "{{\"run_id\": \"r{i}\", \"turn\": 0, \"draft\": \"ok\", \"confidence\": {conf}, \"critic\": {{\"verdict\": \"revise\"}}}}\n"
        ));
    }
    let input = d.write("t.jsonl", t);
    let cfg = d.write(
        "c.toml",
        "baseline = \"low\"\n[variants.low]\nmetacognition_selective_gate = false\nmetacognition_confidence_threshold = 0.3\n[variants.smart]\nmetacognition_selective_gate = true\n",
    );
    let out = d.path("r");
    let o = replay_in(
        &out,
        &[input.to_str().unwrap(), "--config", cfg.to_str().unwrap()],
    );
    expect_code(&o, 0);
    let s = summary(&out);
    let (low, smart) = (&s["variants"]["low"], &s["variants"]["smart"]);
    assert_eq!(u(low, "new_skips"), 0, "{low}");
    let rows = csv_rows(&std::fs::read_to_string(out.join("decisions.csv")).unwrap());
    let new = rows
        .iter()
        .filter(|r| {
            r["variant"] == "smart" && r["fires"] == "false" && r["baseline_fires"] == "true"
        })
        .count() as u64;
    assert_eq!(new, 20, "the low-confidence half");
    assert_eq!(u(smart, "all_skips_safety_regressions"), 40);
    assert_eq!(u(smart, "safety_regressions"), new);
    let err = stderr(&o);
    assert!(
        err.contains("20 production disagreements (its skips"),
        "{err}"
    );
    assert!(
        err.contains("20 regressions in 20 labelled new skips (turns low fires on), bound"),
        "{err}"
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("| none new; 20 disagreements (") && md.contains("| 20 of 20 ("),
        "{md}"
    );
}

/// Conversations are the sampling unit on traces (#44 item 2): a trace's
/// runs of one session import as one `run_id` (the session), each keeping
/// symfonic's run id as `turn_id`, so the bound counts one run where it
/// counted one per turn.
#[test]
fn a_traces_session_is_one_run() {
    use crate::trace::{doc, lines, run_spans, T};
    let d = Dir::new();
    // Each run answers with an ack, which the smart gate skips.
    let ack = |mut spans: Vec<Value>| {
        for a in spans[1]["attributes"].as_array_mut().unwrap() {
            if a["key"] == "gen_ai.completion.text" {
                a["value"] = serde_json::json!({"stringValue": "Got it, thanks!"});
            }
        }
        spans
    };
    let docs: Vec<Value> = (0..12u64)
        .map(|i| doc(ack(run_spans(&format!("r{i}"), T + i * 1_000_000_000))))
        .collect();
    let trace = d.write("one-session.otlp.jsonl", lines(&docs));
    let s = smart_from(&d, &trace, "otlp");
    assert_eq!(u(&s, "new_skips"), 12, "{s}");
    assert_eq!(u(&s, "labelled_runs"), 1, "one session, one run: {s}");
    let o = run(
        &[
            "import",
            trace.to_str().unwrap(),
            "--from",
            "otlp",
            "--out",
            d.path("t.jsonl").to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    let imported = d.read("t.jsonl");
    let turns: Vec<Value> = imported
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(turns.iter().all(|t| t["run_id"] == "s1"), "{imported}");
    let ids: std::collections::BTreeSet<&str> = turns
        .iter()
        .map(|t| t["turn_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 12);
}

/// Traffic whose `run_id` names a turn while its turns carry a session
/// (symfonic's run id recorded as the conversation) says so: every
/// labelled run holds one label over fewer sessions. The same turns with
/// the session as `run_id` say nothing.
#[test]
fn run_ids_that_name_turns_within_sessions_are_noted() {
    let d = Dir::new();
    let line = |run: &str, session: u32| {
        format!(
            r#"{{"run_id":"{run}","draft":"Got it, thanks!","scope":{{"session":"s{session}"}},"critic":{{"ran":true,"verdict":"approve","reflection_tokens_in":3000,"reflection_tokens_out":40}}}}"#
        )
    };
    let per_turn: String = (0..30)
        .map(|i| line(&format!("run-{i}"), i % 3) + "\n")
        .collect();
    let per_session: String = (0..30)
        .map(|i| line(&format!("s{}", i % 3), i % 3) + "\n")
        .collect();
    let note = |name: &str, text: String| -> Option<String> {
        let out = replay_gated(&d, name, text);
        let s = summary(&out);
        s["notes"].as_array().unwrap().iter().find_map(|n| {
            let n = n.as_str().unwrap();
            n.starts_with("every labelled run of smart holds one label")
                .then(|| n.to_string())
        })
    };
    let n = note("per-turn.jsonl", per_turn).expect("noted");
    assert!(n.contains("(3 sessions over those 30 runs)"), "{n}");
    assert_eq!(note("per-session.jsonl", per_session), None);
}

/// Clustered labels read from a trace give the bound the same traffic
/// gives with conversation ids (#44 item 2): sessions of 1 to 6 runs,
/// some revising most of their turns, replayed `--from otlp` and as
/// traffic lines whose `run_id` is the session, agree on every run-level
/// figure. (Imported, each run was its own conversation: a design effect
/// of 1 and a bound too low on such traffic.)
#[test]
fn a_trace_is_bounded_as_traffic_with_conversation_ids() {
    use crate::trace::{doc, lines, run_spans, T};
    let d = Dir::new();
    let (mut docs, mut traffic) = (Vec::new(), String::new());
    let mut n = 0u64;
    for session in 0..40u64 {
        let risky = session % 5 == 0;
        for k in 0..(1 + session % 6) {
            let verdict = if risky && k % 3 != 2 {
                "revise"
            } else {
                "approve"
            };
            let run = format!("r{n}");
            let mut spans = run_spans(&run, T + n * 1_000_000_000);
            for s in spans.iter_mut() {
                let llm = s["name"] == "symfonic.llm.call";
                for a in s["attributes"].as_array_mut().unwrap() {
                    match a["key"].as_str().unwrap() {
                        "symfonic.session.id" => {
                            a["value"] = json!({"stringValue": format!("s{session}")})
                        }
                        "gen_ai.completion.text" if llm => {
                            let critic = a["value"]["stringValue"]
                                .as_str()
                                .unwrap()
                                .contains("verdict");
                            a["value"] = json!({"stringValue": match critic {
                                true => format!("{{\"verdict\": \"{verdict}\"}}"),
                                false => "Got it, thanks!".to_string(),
                            }});
                        }
                        _ => {}
                    }
                }
            }
            docs.push(doc(spans));
            traffic.push_str(&format!(
                "{{\"run_id\":\"s{session}\",\"turn\":{k},\"draft\":\"Got it, thanks!\",\"critic\":{{\"ran\":true,\"verdict\":\"{verdict}\",\"reflection_tokens_in\":300,\"reflection_tokens_out\":40}}}}\n"
            ));
            n += 1;
        }
    }
    let trace = d.write("t.otlp.jsonl", lines(&docs));
    let traffic = d.write("t.jsonl", traffic);
    let figures = |input: &std::path::Path, from: &str| {
        let s = smart_from(&d, input, from);
        [
            "new_skips",
            "new_labelled_skips",
            "safety_regressions",
            "labelled_runs",
            "design_effect",
            "effective_runs",
            "safety_regression_rate_upper95",
        ]
        .map(|k| (k, s[k].clone()))
    };
    let (from_trace, from_traffic) = (figures(&trace, "otlp"), figures(&traffic, "traffic"));
    assert_eq!(from_trace, from_traffic);
    assert_eq!(from_trace[3].1, 40, "{from_trace:?}");
    assert!(
        from_trace[4].1.as_f64().unwrap() > 1.5,
        "clustered: {from_trace:?}"
    );
}

/// The smart variant's figures of a replay of `input` read `--from` a
/// format, under datasets/gate.toml.
fn smart_from(d: &Dir, input: &std::path::Path, from: &str) -> Value {
    let out = d.path(&format!("{from}.out"));
    let config = root().join("datasets/gate.toml");
    let o = run(
        &[
            "replay",
            input.to_str().unwrap(),
            "--from",
            from,
            "--config",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ],
        None,
    );
    expect_code(&o, 0);
    smart(&out)
}

/// A rate budget that fails for want of runs says so (#44 item 4): 400
/// labels in 40 runs, none revised, fail R = 0.05 (the bound is the exact
/// one on 40 effective runs, 7.2%), and the hint counted labels only, so
/// it said nothing; it now says 59 effective runs are needed.
#[test]
fn a_budget_short_of_runs_says_so() {
    let d = Dir::new();
    let traffic: String = (0..400)
        .map(|i| {
            format!(
                "{{\"run_id\":\"r{}\",\"turn\":{},\"draft\":\"Got it, thanks!\",\"critic\":{{\"ran\":true,\"verdict\":\"approve\",\"reflection_tokens_in\":300,\"reflection_tokens_out\":40}}}}\n",
                i / 10,
                i % 10
            )
        })
        .collect();
    let out = replay_gated(&d, "t.jsonl", traffic);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("**Too few runs to conclude.** `smart`'s labels are in 40 runs, worth 40.0 effective runs"),
        "{md}"
    );
    let o = run(
        &[
            "check",
            out.to_str().unwrap(),
            "--max-safety-regression-rate",
            "0.05",
        ],
        None,
    );
    expect_code(&o, 1);
    let text = stdout(&o) + &stderr(&o);
    assert!(text.contains("upper 95% bound 7.22%"), "{text}");
    assert!(
        text.contains("too few runs: runs are the sampling unit, and a bound at or below 5.00% takes at least 59 effective runs, even with none revised or refused; these labels are in 40 runs worth 40.0"),
        "{text}"
    );
}

/// A replay of the traffic `text` (written as `name`) under
/// datasets/gate.toml: its folder.
fn replay_gated(d: &Dir, name: &str, text: String) -> std::path::PathBuf {
    let traffic = d.write(name, text);
    let out = d.path(&format!("{name}.out"));
    let o = replay_in(
        &out,
        &[
            traffic.to_str().unwrap(),
            "--config",
            "datasets/gate.toml",
            "--quiet",
        ],
    );
    expect_code(&o, 0);
    out
}
