//! Issue 4's figures on `datasets/costs.jsonl`, computed by hand.
//!
//! Eight turns, baseline `legacy`, prices: claude-opus $15/$75 per million
//! tokens in/out, claude-sonnet $3/$15, default model claude-opus.
//!
//! | turn | draft                 | conf | critic event                     | legacy | smart |
//! |------|-----------------------|------|----------------------------------|--------|-------|
//! | 1    | Thanks!               | 0.5  | approve 1000/100, 1000 ms, opus  | fire   | skip  |
//! | 2    | ok                    | 0.5  | approve 2000/200, 3000 ms, sonnet| fire   | skip  |
//! | 3    | Sounds good.          | 0.5  | revise 1000/0, 2000 ms, no model | fire   | skip  |
//! | 4    | Got it.               | 0.5  | approve, 500 ms, no tokens       | fire   | skip  |
//! | 5    | Here is the plan ...  | 0.5  | approve 4000/400, 4000 ms, opus  | fire   | fire  |
//! | 6    | Here is the plan ...  | 0.9  | none                             | skip   | fire  |
//! | 7    | Thanks!               | 0.9  | none                             | skip   | skip  |
//! | 8    | ok                    | 0.5  | none                             | fire   | skip  |

use serde_json::Value;

use crate::util::*;

fn close(got: &Value, want: f64) {
    let g = got
        .as_f64()
        .unwrap_or_else(|| panic!("not a number: {got}"));
    assert!((g - want).abs() < 1e-9, "got {g}, want {want}");
}

#[test]
fn summary_matches_the_hand_computed_figures() {
    let d = Dir::new();
    let o = cmd()
        .current_dir(root())
        .args([
            "replay",
            "datasets/costs.jsonl",
            "--config",
            "datasets/gate.toml",
            "--quiet",
            "--out",
        ])
        .arg(d.tmp.path())
        .output()
        .unwrap();
    expect_code(&o, 0);
    let s: Value = serde_json::from_str(&d.read("summary.json")).unwrap();
    let m = &s["variants"]["smart"];
    // Saved: turns 1, 2, 3, 4, 8.
    assert_eq!(m["saved_calls"], 5);
    assert_eq!(m["added_calls"], 1); // turn 6
    assert_eq!(m["saved_tokens_in"], 4000); // 1000 + 2000 + 1000
    assert_eq!(m["saved_tokens_out"], 300); // 100 + 200 + 0
    assert_eq!(m["saved_calls_without_tokens"], 2); // turns 4 and 8
    assert_eq!(m["saved_calls_without_latency"], 1); // turn 8
    close(&m["saved_latency_ms"], 6500.0); // 1000 + 3000 + 2000 + 500
                                           // opus (turns 1, 3): 2000 x 15e-6 + 100 x 75e-6 = 0.0375
                                           // sonnet (turn 2):   2000 x 3e-6 + 200 x 15e-6  = 0.009
    close(&m["saved_usd"], 0.0465);
    // Added turn 6 (30 code points, segment 21-80): the mean event of that
    // segment is turn 5's: 4000/400 tokens, 4000 ms, 4000 x 15e-6 + 400 x 75e-6.
    close(&m["added_tokens_in_estimated"], 4000.0);
    close(&m["added_tokens_out_estimated"], 400.0);
    // Its latency: the segment has one recorded latency, fewer than the
    // 30 a pool needs, so the mean of every turn's (turns 1-5): 2,100 ms.
    close(&m["added_latency_ms_estimated"], 2100.0);
    close(&m["added_usd_estimated"], 0.09);
    close(&m["net_usd"], 0.0465 - 0.09);
    close(&m["net_usd_per_1k_turns"], (0.0465 - 0.09) * 1000.0 / 8.0);
    close(&m["saved_calls_per_1k_turns"], 625.0);
    // Skips: 1, 2, 3, 4, 7, 8; labelled: 1-4; regression: turn 3 (revise).
    // New skips (legacy fires there): all but one; four labelled, one
    // with no critic event.
    assert_eq!(m["all_skips_labelled"], 4);
    close(&m["all_skips_label_coverage"], 4.0 / 6.0);
    assert_eq!(m["new_skips"], 5);
    assert_eq!(m["new_labelled_skips"], 4);
    assert_eq!(m["new_unlabelled_no_event"], 1);
    close(&m["label_coverage"], 4.0 / 5.0);
    assert_eq!(m["safety_regressions"], 1);
    close(&m["safety_regression_rate"], 0.25);
    // Clopper-Pearson, turns as the unit: (1-p)^4 + 4p(1-p)^3 = 0.05 at
    // p = 0.7513953742698...
    close(&m["all_skips_regression_rate_upper95"], 0.751395374269818);
    // Runs as the unit: one run says nothing of another, so with its
    // regression in the only run the bound is 1.
    assert_eq!(m["labelled_runs"], 1);
    close(&m["safety_regression_rate_upper95"], 1.0);
    // Latency added per turn, smart: six skips (0) and turn 5 (4000 ms);
    // turn 6 fires with no recorded latency and is counted as unmeasured.
    close(&m["critic_latency_p50_ms"], 0.0);
    close(&m["critic_latency_p95_ms"], 4000.0);
    assert_eq!(m["latency_unmeasured_fires"], 1);
    // Legacy: 0, 0 (turns 6, 7), 500, 1000, 2000, 3000, 4000; turn 8 unmeasured.
    let l = &s["variants"]["legacy"];
    close(&l["critic_latency_p50_ms"], 1000.0); // 4th of 7
    close(&l["critic_latency_p95_ms"], 4000.0);
    assert_eq!(l["latency_unmeasured_fires"], 1);
    // matrix.csv: smart's saved cell is 3 approve, 1 revise, 1 unlabelled,
    // none where no critic ran.
    let matrix = d.read("matrix.csv");
    assert!(
        matrix.contains("smart,fire,skip,saved,5,4,1,0,3,1,0"),
        "{matrix}"
    );
    assert!(
        matrix.contains("smart,skip,fire,added,1,0,1,0,0,0,0"),
        "{matrix}"
    );
}

#[test]
fn no_price_means_absent_dollars_with_a_note() {
    let d = Dir::new();
    let o = cmd()
        .current_dir(root())
        .args(["replay", "datasets/costs.jsonl", "--quiet", "--out"])
        .arg(d.tmp.path())
        .output()
        .unwrap();
    expect_code(&o, 0);
    let s: Value = serde_json::from_str(&d.read("summary.json")).unwrap();
    assert!(s["variants"]["smart"]["saved_usd"].is_null());
    assert!(s["variants"]["smart"]["net_usd"].is_null());
    assert!(
        s["notes"][0].as_str().unwrap().contains("no price"),
        "{}",
        s["notes"]
    );
    assert_eq!(s["variants"]["smart"]["saved_tokens_in"], 4000);
}
