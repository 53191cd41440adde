//! Risk figures on traffic as it really is (#33), end to end through the
//! program: production's critic runs only where production's gate fires,
//! so the turns a gate skips have no labels. Set CRITIC_GATE_SIM_FULL=1
//! (scripts/simulate-risk.sh does) for the full replicate counts.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::util::*;

/// `small` replicates under `cargo test`, `full` with CRITIC_GATE_SIM_FULL.
fn replicates(small: u64, full: u64) -> u64 {
    match std::env::var_os("CRITIC_GATE_SIM_FULL") {
        Some(_) => full,
        None => small,
    }
}

/// The repository's seeded generator (splitmix64).
use critic_gate::internals::SplitMix as Rng;

/// The critic's chance of revising a turn of confidence `c`: lower
/// confidence, more revisions.
fn revise_rate(c: f64) -> f64 {
    match c {
        c if c < 0.5 => 0.10,
        c if c < 0.6 => 0.04,
        _ => 0.01,
    }
}

/// `runs` runs of 10 turns recorded by a deployment whose legacy gate
/// (threshold 0.6) fired below 0.6: a critic event there, a 0-token
/// approve (no critic ran) above. No label is missing at random: all
/// missing ones are the confident turns.
fn traffic(rng: &mut Rng, runs: u64) -> String {
    let mut t = String::new();
    for r in 0..runs {
        for turn in 0..10 {
            let c = (rng.next() * 1000.0).floor() / 1000.0;
            let revised = rng.next() < revise_rate(c);
            let critic = match c < 0.6 {
                true => format!(
                    "{{\"ran\": true, \"verdict\": \"{}\", \"reflection_latency_ms\": 2000.0, \"reflection_tokens_in\": 3000, \"reflection_tokens_out\": 40}}",
                    if revised { "revise" } else { "approve" }
                ),
                false => "{\"verdict\": \"approve\", \"reflection_tokens_in\": 0, \"reflection_tokens_out\": 0}".to_string(),
            };
            let _ = writeln!(
                t,
                "{{\"run_id\": \"r{r}\", \"turn\": {turn}, \"draft\": \"Your order ships on Tuesday from the north warehouse.\", \"confidence\": {c}, \"critic\": {critic}}}"
            );
        }
    }
    t
}

const CONFIG: &str = r#"
baseline = "production"
[variants.production]
metacognition_selective_gate = false
metacognition_confidence_threshold = 0.6
[sweep]
metacognition_selective_gate = [false]
metacognition_confidence_threshold = [0.5]
"#;

/// Labels missing by confidence: the review drew the baseline at 146
/// harmful skips per 1,000 turns against a true 21 (its own skips, all
/// unlabelled, at a bound of 1) and misread a candidate. On new skips the
/// baseline adds no harm, and the candidate lowering the threshold to
/// 0.5 (new skips: confidence 0.5 to 0.6, a tenth of the turns, true
/// rate 0.04, so 4 new harmful skips per 1,000 turns) is drawn at no
/// less than that, on average over the replicates.
#[test]
fn labels_missing_by_confidence_give_the_baseline_no_new_harm() {
    let n = replicates(3, 50);
    let d = Dir::new();
    let cfg = d.write("c.toml", CONFIG);
    let mut rng = Rng(0x0c0f);
    let mut points = Vec::new();
    for i in 0..n {
        let input = d.write(&format!("t{i}.jsonl"), traffic(&mut rng, 500));
        let out = d.path(&format!("s{i}"));
        let args = [
            "sweep",
            input.to_str().unwrap(),
            "--config",
            cfg.to_str().unwrap(),
            "--quiet",
        ];
        expect_code(&run_in(&out, &args), 0);
        let rows = csv_rows(&std::fs::read_to_string(out.join("frontier.csv")).unwrap());
        let by = |base: bool| -> &HashMap<String, String> {
            rows.iter()
                .find(|r| (r["baseline"] == "true") == base)
                .unwrap()
        };
        let f = |r: &HashMap<String, String>, k: &str| r[k].parse::<f64>().unwrap();
        let (base, cand) = (by(true), by(false));
        assert_eq!(
            f(base, "harmful_skips_per_1k_turns_upper95"),
            0.0,
            "{base:?}"
        );
        assert_eq!(f(base, "new_skips"), 0.0);
        // Every new skip of the candidate was a production fire: labelled.
        assert_eq!(f(cand, "label_coverage"), 1.0, "{cand:?}");
        points.push(f(cand, "harmful_skips_per_1k_turns_upper95"));
        // The baseline's own skips are all unlabelled: the old all-skip
        // figures rested on nothing.
        let s = summary(&out);
        let b = &s["variants"]["production"];
        assert_eq!(b["all_skips_labelled"], 0, "{b}");
        assert!(b["skips"].as_u64().unwrap() > 1500, "{b}");
    }
    let mean = points.iter().sum::<f64>() / points.len() as f64;
    eprintln!("MNAR by confidence: the candidate's point averages {mean:.2} new harmful skips per 1,000 turns over {n} replicates (true 4.0): {points:?}");
    assert!(mean >= 4.0, "{mean}");
}

/// Found by review: the p95 "with added calls" was drawn from a single
/// recorded latency (1,200 ms against a recorded-only 0 ms), with no pool
/// size shown. A draft-length bucket with fewer than 30 recorded
/// latencies draws from every turn's; the pool size is in the summary,
/// and report.md says when it is below 30.
#[test]
fn latency_estimates_name_their_pool_and_fall_back_below_30() {
    let d = Dir::new();
    let cfg = d.write(
        "c.toml",
        "baseline = \"smart\"\n[variants.smart]\nmetacognition_selective_gate = true\n[variants.legacy]\nmetacognition_selective_gate = false\n",
    );
    // 20 short acks production skipped (no critic ran: no latency), one
    // short ack reviewed at 1,200 ms, and `long` long drafts at 2,000 ms.
    let traffic = |long: usize| {
        let mut t = String::new();
        let ran = |ms: u32| {
            format!("{{\"ran\": true, \"verdict\": \"approve\", \"reflection_latency_ms\": {ms}.0, \"reflection_tokens_in\": 100, \"reflection_tokens_out\": 10}}")
        };
        for i in 0..20 {
            let _ = writeln!(t, "{{\"run_id\": \"a{i}\", \"turn\": 0, \"draft\": \"Thanks!\", \"critic\": {{\"ran\": false, \"verdict\": \"approve\"}}}}");
        }
        let _ = writeln!(
            t,
            "{{\"run_id\": \"b\", \"turn\": 0, \"draft\": \"Thanks!\", \"critic\": {}}}",
            ran(1200)
        );
        for i in 0..long {
            let _ = writeln!(t, "{{\"run_id\": \"c{i}\", \"turn\": 0, \"draft\": \"Your order ships on Tuesday from the north warehouse, tracking to follow.\", \"critic\": {}}}", ran(2000));
        }
        t
    };
    for (long, pool, note) in [(40u64, 41u64, false), (2, 3, true)] {
        let input = d.write(&format!("t{long}.jsonl"), traffic(long as usize));
        let out = d.path(&format!("r{long}"));
        let o = replay_in(
            &out,
            &[
                input.to_str().unwrap(),
                "--config",
                cfg.to_str().unwrap(),
                "--quiet",
            ],
        );
        expect_code(&o, 0);
        let s = summary(&out);
        let legacy = &s["variants"]["legacy"];
        assert_eq!(legacy["added_calls"], 21, "{legacy}");
        // The short bucket holds one recorded latency: every turn's pool.
        assert_eq!(legacy["latency_estimate_pool"], pool, "{legacy}");
        if long == 40 {
            // Drawn from 41 values, 40 at 2,000 ms, not the single 1,200
            // ms (21 x 1,200 = 25,200 before).
            let want = 21.0 * (40.0 * 2000.0 + 1200.0) / 41.0;
            let got = legacy["added_latency_ms_estimated"].as_f64().unwrap();
            assert!((got - want).abs() <= 1.0, "{got} vs {want}");
            assert_eq!(
                legacy["critic_latency_p95_ms_with_estimates"], 2000,
                "{legacy}"
            );
        }
        let md = std::fs::read_to_string(out.join("report.md")).unwrap();
        let says = format!("`legacy`'s p95 with added calls rests on {pool} recorded latencies");
        assert_eq!(md.contains(&says), note, "{md}");
    }
}

/// Labels missing where the critic fails, end to end through `calibrate`:
/// 600 runs of 10 turns, "ok" acks revised 1 in 200 and always reviewed,
/// "sure" acks revised 8 in 100 whose critic call fails open (a 0-token
/// approve: no label) on 80% of the turns it would revise and 10% of the
/// rest. Skipping both, a variant's true rate on its new skips is about
/// 0.04 while its labels say about 0.01. Without the assumption calibrate
/// picks the "ok"-only variant (the other's worst case is above R); with
/// --assume-missing-at-random it picks the other, and calibrated.toml's
/// first line says what was assumed.
#[test]
fn calibrate_does_not_certify_what_failing_critics_hide() {
    let d = Dir::new();
    let mut rng = Rng(0xfa1);
    let mut t = String::new();
    let event = |verdict: &str, tokens: u32| {
        format!("{{\"verdict\": \"{verdict}\", \"reflection_latency_ms\": 2000.0, \"reflection_tokens_in\": {tokens}, \"reflection_tokens_out\": {}, \"model\": \"claude-opus\"}}", tokens / 10)
    };
    for r in 0..600 {
        for turn in 0..10 {
            let (draft, critic) = match rng.next() < 0.5 {
                true => {
                    let revised = rng.next() < 0.005;
                    (
                        "ok",
                        event(if revised { "revise" } else { "approve" }, 3000),
                    )
                }
                false => {
                    let revised = rng.next() < 0.08;
                    let fails = rng.next() < if revised { 0.8 } else { 0.1 };
                    match (fails, revised) {
                        (true, _) => ("sure", event("approve", 0)),
                        (false, true) => ("sure", event("revise", 3000)),
                        (false, false) => ("sure", event("approve", 3000)),
                    }
                }
            };
            let _ = writeln!(
                t,
                "{{\"run_id\": \"r{r}\", \"turn\": {turn}, \"draft\": \"{draft}\", \"critic\": {critic}}}"
            );
        }
    }
    let input = d.write("t.jsonl", t);
    let cfg = d.write(
        "c.toml",
        "baseline = \"legacy\"\n[variants.legacy]\nmetacognition_selective_gate = false\n[cost]\ndefault_model = \"claude-opus\"\n[cost.models.claude-opus]\nusd_per_mtok_in = 15.0\nusd_per_mtok_out = 75.0\n[sweep]\nmetacognition_selective_gate = [true]\nmetacognition_trivial_ack_patterns = [[\"\\\\bok\\\\b\"], [\"\\\\bok\\\\b\", \"\\\\bsure\\\\b\"]]\n",
    );
    for (assume, chosen) in [
        (false, "sel=on/ack=1-patterns"),
        (true, "sel=on/ack=2-patterns"),
    ] {
        let out = d.path(&format!("cal-{assume}"));
        let mut args = vec![
            "calibrate",
            input.to_str().unwrap(),
            "--config",
            cfg.to_str().unwrap(),
            "--max-regression-rate",
            "0.05",
            "--quiet",
        ];
        if assume {
            args.push("--assume-missing-at-random");
        }
        expect_code(&run_in(&out, &args), 0);
        let c: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("calibration.json")).unwrap())
                .unwrap();
        assert_eq!(c["selection"]["chosen"], chosen, "{c}");
        let both = c["selection"]["family"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["variant"] == "sel=on/ack=2-patterns")
            .unwrap();
        // Its labels alone would pass; its worst case does not.
        assert!(
            both["calibration"]["upper_bound"].as_f64().unwrap() <= 0.05,
            "{both}"
        );
        assert!(
            both["calibration"]["worst_case_upper_bound"]
                .as_f64()
                .unwrap()
                > 0.05,
            "{both}"
        );
        let toml = std::fs::read_to_string(out.join("calibrated.toml")).unwrap();
        assert_eq!(toml.starts_with("# ASSUMED"), assume, "{toml}");
    }
}
