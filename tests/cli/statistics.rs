//! Figures a reviewer signs (#22): risky skips that mean something, null
//! where they cannot be judged, and budgets that refuse to pass on them.

use serde_json::Value;

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
