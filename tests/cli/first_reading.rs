//! What a first reader of the reports sees: risky skips beside
//! regressions, regressions unknown (not "none") where no skip has a label,
//! fires on which no critic can run, the share of the baseline's critic
//! calls saved, `check --markdown`'s bound with the counts it rests on, and
//! notes that fit the baseline.

use serde_json::Value;

use crate::util::*;

fn committed(path: &str) -> String {
    std::fs::read_to_string(root().join("reports").join(path)).unwrap()
}

#[test]
fn no_label_reads_as_unknown_and_risky_skips_show_beside_regressions() {
    let md = committed("unlabelled/report.md");
    for says in [
        "whether its new skips (turns `legacy` fires on) let out replies the critic would change is unknown: none of its 7 new skips has a recorded critic verdict",
        "4 skips are risky",
        "| `smart` | 70.0% | 2 | 7 (77.8%) | 0 | n/a | n/a | unknown, no labels (n/a) | 100.0% | 4 |",
        "Unknown: no skip of a candidate has a recorded critic verdict",
        "**Risky skips: 4.**",
    ] {
        assert!(md.contains(says), "{says}\n{md}");
    }
    assert!(!md.contains("None: no skipped turn"), "{md}");
    assert!(!md.contains("skipped 0 turns the critic revised"), "{md}");
    let d = Dir::new();
    let o = replay_in(
        &d.path("r"),
        &[
            "datasets/unlabelled.jsonl",
            "--config",
            "datasets/gate.toml",
        ],
    );
    expect_code(&o, 0);
    let err = stderr(&o);
    for says in [
        "saved calls       7 (77.8% of legacy's calls)",
        "regressions unknown (none of its 7 new skips on turns legacy fires on has a recorded critic verdict), 4 risky skips",
        "1 fire is on an empty draft: no critic runs there (symfonic reviews no empty reply), so 9 critic calls",
    ] {
        assert!(err.contains(says), "{says}\n{err}");
    }
}

#[test]
fn a_fire_on_an_empty_draft_is_no_critic_call() {
    let s: Value = serde_json::from_str(&committed("unlabelled/summary.json")).unwrap();
    let (legacy, smart) = (&s["variants"]["legacy"], &s["variants"]["smart"]);
    assert_eq!(
        (legacy["fires"].as_u64(), legacy["critic_calls"].as_u64()),
        (Some(10), Some(9))
    );
    assert_eq!(legacy["fires_without_critic"], 1);
    assert_eq!(smart["fires_without_critic"], 1);
    // The smart gate saves 7 of legacy's 9 calls: 77.8% of its calls, 70%
    // of the turns.
    assert_eq!(smart["saved_calls"], 7);
    assert!((smart["saved_call_share"].as_f64().unwrap() - 7.0 / 9.0).abs() < 1e-6);
    assert!(legacy["saved_call_share"].is_null());
    // A legacy variant of another threshold "skipping" an empty draft the
    // baseline fires on saves no call: the sweep's threshold-0.5 points.
    let sweep: Value = serde_json::from_str(&committed("sweep/summary.json")).unwrap();
    let base = &sweep["variants"]["legacy"];
    for (name, v) in sweep["variants"].as_object().unwrap() {
        assert!(
            v["saved_calls"].as_u64() <= base["critic_calls"].as_u64(),
            "{name}: {} saved of {} calls",
            v["saved_calls"],
            base["critic_calls"]
        );
    }
}

#[test]
fn check_markdown_gives_a_bound_with_its_counts() {
    let d = Dir::new();
    let md = d.path("verdict.md");
    let o = run(
        &[
            "check",
            root().join("reports/seed").to_str().unwrap(),
            "--max-safety-regression-rate",
            "0.05",
            "--markdown",
            md.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 1);
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(
        text.contains("| ❌ | `smart` | max_safety_regression_rate | 86.4% | &lt;= 5.00% | 1 regression in 10 labelled new skips \\(4 runs\\); upper 95% bound 86.4%; runs are the sampling unit \\(design effect 3.40\\): the bound counts 3 effective labels; too few labels: a bound at or below 5.00% takes at least 59 labelled skips, even with none revised or refused, and about 434 for an 80% chance of it at a true rate of 2.50% |"),
        "{text}"
    );
    assert!(!text.contains("0.864"), "a bare rate: {text}");
}

#[test]
fn notes_fit_a_smart_baseline() {
    let md = committed("unlabelled-smart-baseline/report.md");
    assert!(
        md.contains("the baseline's smart gate does not read confidence"),
        "{md}"
    );
    assert!(!md.contains("(the baseline smart's is"), "{md}");
}
