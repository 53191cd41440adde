//! `calibrate` on traffic whose revise rate is set per ack word: it picks
//! what the learn part's order tested on the calibration part says, and
//! reports the choice on the held-out part.

use serde_json::Value;

use crate::util::*;

/// 3,000 one-turn runs: "ok" acks never revised, "sure" acks revised 1 in
/// 50, "fine" acks 1 in 4; every turn cold (the legacy gate fires) with a
/// critic event.
fn traffic() -> String {
    let mut t = String::new();
    for i in 0..3000 {
        let (draft, revised) = match i % 3 {
            0 => ("ok", false),
            1 => ("sure", (i / 3) % 50 == 0),
            _ => ("fine", (i / 3) % 4 == 0),
        };
        let verdict = if revised { "revise" } else { "approve" };
        t.push_str(&format!(
            "{{\"run_id\": \"r{i}\", \"turn\": 0, \"draft\": \"{draft}\", \"critic\": {{\"ran\": true, \"verdict\": \"{verdict}\", \"reflection_latency_ms\": 2000.0, \"reflection_tokens_in\": 3000, \"reflection_tokens_out\": 40, \"model\": \"claude-opus\"}}}}\n"
        ));
    }
    t
}

const CONFIG: &str = r#"
baseline = "legacy"
[variants.legacy]
metacognition_selective_gate = false
[cost]
default_model = "claude-opus"
[cost.models.claude-opus]
usd_per_mtok_in = 15.0
usd_per_mtok_out = 75.0
[sweep]
metacognition_selective_gate = [true]
metacognition_trivial_ack_patterns = [["\\bok\\b"], ["\\bok\\b", "\\bsure\\b"], ["\\bok\\b", "\\bsure\\b", "\\bfine\\b"]]
"#;

#[test]
fn calibrate_picks_what_the_calibration_half_certifies() {
    let d = Dir::new();
    let input = d.write("t.jsonl", traffic());
    let cfg = d.write("c.toml", CONFIG);
    let out = d.path("cal");
    let o = run_in(
        &out,
        &[
            "calibrate",
            input.to_str().unwrap(),
            "--config",
            cfg.to_str().unwrap(),
            "--max-regression-rate",
            "0.05",
            "--seed",
            "7",
        ],
    );
    expect_code(&o, 0);
    let c: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("calibration.json")).unwrap())
            .unwrap();
    // The math, from the parts' own figures: the family is the learn
    // part's savers ordered by their learn bound (all covered: every turn
    // is labelled); the calibration part tests them in that order.
    let learn = summary(&out.join("learn"));
    let cal = summary(&out.join("calibration"));
    let names = [
        "sel=on/ack=1-patterns",
        "sel=on/ack=2-patterns",
        "sel=on/ack=3-patterns",
    ];
    let bound = |s: &Value, v: &str| {
        let m = &s["variants"][v];
        let (k, n) = (
            m["safety_regressions"].as_u64().unwrap(),
            m["new_labelled_skips"].as_u64().unwrap(),
        );
        critic_gate::internals::clopper_pearson_upper(k, n, 0.05).unwrap()
    };
    let mut order: Vec<(f64, &str)> = names.iter().map(|v| (bound(&learn, v), *v)).collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut certified = Vec::new();
    for (_, v) in &order {
        if bound(&cal, v) > 0.05 {
            break;
        }
        certified.push(*v);
    }
    let saves = |v: &&str| {
        cal["variants"][*v]["net_usd_per_1k_turns"]
            .as_f64()
            .unwrap()
    };
    let want = certified
        .iter()
        .max_by(|a, b| saves(a).total_cmp(&saves(b)))
        .unwrap();
    assert_eq!(*want, "sel=on/ack=2-patterns", "{order:?}");
    assert_eq!(c["selection"]["chosen"], "sel=on/ack=2-patterns", "{c}");
    let family: Vec<&str> = c["selection"]["family"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["variant"].as_str().unwrap())
        .collect();
    let by_learn: Vec<&str> = order.iter().map(|o| o.1).collect();
    assert_eq!(family, by_learn);
    let fixed = &c["selection"]["procedures"][0];
    assert_eq!(fixed["procedure"], "fixed-sequence");
    assert!(
        fixed["stopped"]
            .as_str()
            .unwrap()
            .starts_with("sel=on/ack=3-patterns: "),
        "{c}"
    );
    assert!(c["guarantee"]
        .as_str()
        .unwrap()
        .contains("worst-case bound (every unlabelled new skip a regression"));
    // The parts split the runs, and the held-out figures are the held-out
    // replay's, net.
    let t = &c["turns"];
    let parts = [&t["learn"], &t["calibration"], &t["held_out"]].map(|x| x.as_u64().unwrap());
    assert_eq!(parts.iter().sum::<u64>(), 3000);
    assert!(parts.iter().all(|p| *p > 850), "{parts:?}");
    let held = &summary(&out.join("held-out"))["variants"]["sel=on/ack=2-patterns"];
    for k in [
        "saved_calls",
        "added_calls",
        "net_calls",
        "net_usd",
        "safety_regressions",
        "new_skips",
        "skips",
    ] {
        assert_eq!(c["held_out"][k], held[k], "{k}");
    }
    assert_eq!(c["held_out"]["above_r"], false, "{c}");
    // calibrated.toml replays as the chosen variant.
    let toml_text = std::fs::read_to_string(out.join("calibrated.toml")).unwrap();
    assert!(
        toml_text.starts_with("# sel=on/ack=2-patterns: chosen by calibrate (fixed-sequence)"),
        "{toml_text}"
    );
    let cfg2 = d.write(
        "chosen.toml",
        format!("baseline = \"calibrated\"\n{toml_text}"),
    );
    let r = d.path("r");
    expect_code(
        &replay_in(
            &r,
            &[
                input.to_str().unwrap(),
                "--config",
                cfg2.to_str().unwrap(),
                "--quiet",
            ],
        ),
        0,
    );
    let s = summary(&r);
    assert_eq!(
        s["variants"]["calibrated"]["skips"], 2000,
        "ok and sure acks skip"
    );
    assert!(
        stdout(&o).contains("chosen: sel=on/ack=2-patterns; on the held-out part: net "),
        "{}",
        stdout(&o)
    );
}

#[test]
fn too_few_labels_keep_the_baseline_and_say_how_many_are_needed() {
    let d = Dir::new();
    let input = d.write("t.jsonl", traffic());
    let cfg = d.write("c.toml", CONFIG);
    let out = d.path("cal");
    let args = [
        "calibrate",
        input.to_str().unwrap(),
        "--config",
        cfg.to_str().unwrap(),
        "--max-regression-rate",
        "0.0001",
        "--quiet",
    ];
    expect_code(&run_in(&out, &args), 0);
    let c: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("calibration.json")).unwrap())
            .unwrap();
    assert!(c["selection"]["chosen"].is_null(), "{c}");
    assert_eq!(c["labels_needed"], 29956);
    assert!(
        c["selection"]["procedures"][0]["stopped"]
            .as_str()
            .unwrap()
            .contains("it takes at least 29956 labelled skips"),
        "{c}"
    );
    let toml_text = std::fs::read_to_string(out.join("calibrated.toml")).unwrap();
    assert!(
        toml_text.starts_with("# legacy: calibrate certified no variant"),
        "{toml_text}"
    );
    expect_error(
        &run(
            &[
                "calibrate",
                "-",
                "--config",
                cfg.to_str().unwrap(),
                "--max-regression-rate",
                "0.05",
                "--out",
                d.path("x").to_str().unwrap(),
            ],
            Some(b""),
        ),
        2,
        "calibrate reads the traffic more than once",
    );
    expect_error(
        &run_in(
            &d.path("y"),
            &[
                "calibrate",
                input.to_str().unwrap(),
                "--config",
                cfg.to_str().unwrap(),
                "--max-regression-rate",
                "1.5",
            ],
        ),
        2,
        "give a number between 0 and 1",
    );
}

/// Found by review: a failed calibrate left the empty --out it made.
#[test]
fn a_failed_calibrate_leaves_no_folder_it_made() {
    let d = Dir::new();
    let bad = d.write("bad.jsonl", "{not json\n");
    let cfg = d.write("c.toml", CONFIG);
    let out = d.path("cal");
    let o = run_in(
        &out,
        &[
            "calibrate",
            bad.to_str().unwrap(),
            "--config",
            cfg.to_str().unwrap(),
            "--max-regression-rate",
            "0.05",
        ],
    );
    expect_code(&o, 2);
    assert!(!out.exists(), "{}", stderr(&o));
}

/// Holm and Bonferroni on the same data, and two parts only: every
/// procedure's outcome is in calibration.json, the asked one decides.
#[test]
fn each_procedure_is_offered_and_the_held_out_part_can_be_left_out() {
    let d = Dir::new();
    let input = d.write("t.jsonl", traffic());
    let cfg = d.write("c.toml", CONFIG);
    let out = d.path("cal");
    let o = run_in(
        &out,
        &[
            "calibrate",
            input.to_str().unwrap(),
            "--config",
            cfg.to_str().unwrap(),
            "--max-regression-rate",
            "0.05",
            "--procedure",
            "holm",
            "--no-held-out",
            "--quiet",
        ],
    );
    expect_code(&o, 0);
    let c: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("calibration.json")).unwrap())
            .unwrap();
    assert_eq!(c["selection"]["procedure"], "holm");
    let names: Vec<&str> = c["selection"]["procedures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["procedure"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["fixed-sequence", "holm", "bonferroni"]);
    assert_eq!(
        c["selection"]["chosen"],
        c["selection"]["procedures"][1]["chosen"]
    );
    assert!(
        c["turns"]["held_out"].is_null() && c["held_out"].is_null(),
        "{c}"
    );
    assert!(!out.join("held-out").exists());
    assert_eq!(
        c["turns"]["learn"].as_u64().unwrap() + c["turns"]["calibration"].as_u64().unwrap(),
        3000
    );
    expect_error(
        &run_in(
            &d.path("z"),
            &[
                "calibrate",
                input.to_str().unwrap(),
                "--config",
                cfg.to_str().unwrap(),
                "--max-regression-rate",
                "0.05",
                "--min-label-coverage",
                "1.5",
            ],
        ),
        2,
        "give a number from 0 up to 1",
    );
}

/// Commands that read their input twice refuse a source that is not a
/// regular file, before writing anything.
#[test]
fn calibrate_and_mine_refuse_pipes() {
    let d = Dir::new();
    for (cmd, extra) in [
        (
            "calibrate",
            vec![
                "--config",
                "datasets/sweep.toml",
                "--max-regression-rate",
                "0.1",
            ],
        ),
        ("mine", vec![]),
    ] {
        for src in ["-", "/dev/stdin"] {
            let out = d.path(&format!("{cmd}-{}", src.len()));
            let mut args = vec![cmd, src];
            args.extend(&extra);
            args.extend(["--out", out.to_str().unwrap()]);
            let o = piped(&args);
            expect_error(&o, 2, "regular file");
            assert!(!out.exists(), "{cmd} {src} made {}", out.display());
        }
    }
}

/// #45 item 7 in `calibrate`: 600 runs of 10 turns over 7 days, "ok" acks
/// revised 1 in 200 and always reviewed, "sure" acks revised 8 in 100
/// whose critic call fails open (no label) on 80% of the turns it would
/// revise and 10% of the rest. The variant skipping both (`both`) has a
/// true rate of about 0.04 on its new skips. Without an audit its worst
/// case (every unlabelled new skip a regression) is far above R = 0.06 and
/// calibrate keeps the "ok"-only variant; with `--plan` (an audit of
/// `both`, its draws answered by a shadow critic with the truth) the
/// two-phase bound stands for the worst case, is within R, and certifies
/// `both`. A plan of production's skips is refused.
#[test]
fn calibrate_reads_an_audit_of_the_unlabelled_new_skips() {
    use critic_gate::internals::SplitMix as Rng;
    let d = Dir::new();
    let mut rng = Rng(0xfa1);
    let (mut t, mut truth) = (String::new(), Vec::new());
    for r in 0..600u64 {
        for turn in 0..10u64 {
            let ack = rng.next() < 0.5;
            let revised = rng.next() < if ack { 0.005 } else { 0.08 };
            let fails = !ack && rng.next() < if revised { 0.8 } else { 0.1 };
            let verdict = if revised { "revise" } else { "approve" };
            if fails {
                truth.push((format!("r{r}"), turn, verdict));
            }
            let (v, tokens) = if fails {
                ("approve", 0)
            } else {
                (verdict, 3000)
            };
            t.push_str(&format!(
                "{{\"run_id\": \"r{r}\", \"turn\": {turn}, \"ts\": \"2026-11-{:02}T10:00:00Z\", \"draft\": \"{}\", \"critic\": {{\"verdict\": \"{v}\", \"reflection_latency_ms\": 2000.0, \"reflection_tokens_in\": {tokens}, \"reflection_tokens_out\": {}, \"model\": \"claude-opus\"}}}}\n",
                1 + r % 7,
                if ack { "ok" } else { "sure" },
                tokens / 10
            ));
        }
    }
    let traffic = d.write("t.jsonl", t);
    let config = d.write(
        "c.toml",
        "baseline = \"legacy\"\n[variants.legacy]\nmetacognition_selective_gate = false\n[variants.both]\nmetacognition_selective_gate = true\nmetacognition_trivial_ack_patterns = [\"\\\\bok\\\\b\", \"\\\\bsure\\\\b\"]\n[cost]\ndefault_model = \"claude-opus\"\n[cost.models.claude-opus]\nusd_per_mtok_in = 15.0\nusd_per_mtok_out = 75.0\n[sweep]\nmetacognition_selective_gate = [true]\nmetacognition_trivial_ack_patterns = [[\"\\\\bok\\\\b\"], [\"\\\\bok\\\\b\", \"\\\\bsure\\\\b\"]]\n",
    );
    let (plan, labelled) = crate::plan::audited(&d, &traffic, &config, "both", &truth);
    let calibrate = |name: &str, plan: Option<&std::path::Path>| {
        let out = d.path(name);
        let mut args = vec![
            "calibrate",
            labelled.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
            "--max-regression-rate",
            "0.06",
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ];
        if let Some(p) = plan {
            args.extend(["--plan", p.to_str().unwrap()]);
        }
        let o = run(&args, None);
        let c = match o.status.code() {
            Some(0) => serde_json::from_str(&d.read(&format!("{name}/calibration.json"))).unwrap(),
            _ => Value::Null,
        };
        (o, c)
    };
    let member = |c: &Value, v: &str| {
        c["selection"]["family"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["variant"] == v)
            .unwrap()
            .clone()
    };
    let (o, bare) = calibrate("bare", None);
    expect_code(&o, 0);
    assert_eq!(
        bare["selection"]["chosen"], "sel=on/ack=1-patterns",
        "{bare}"
    );
    let both = member(&bare, "both");
    assert_eq!(both["calibration"]["two_phase"], false, "{both}");
    assert!(
        both["calibration"]["worst_case_upper_bound"]
            .as_f64()
            .unwrap()
            > 0.1,
        "{both}"
    );
    let (o, audit) = calibrate("audit", Some(&plan));
    expect_code(&o, 0);
    assert_eq!(audit["selection"]["chosen"], "both", "{audit}");
    let both = member(&audit, "both");
    assert_eq!(both["calibration"]["two_phase"], true, "{both}");
    let bound = both["calibration"]["worst_case_upper_bound"]
        .as_f64()
        .unwrap();
    assert!((0.03..=0.06).contains(&bound), "{both}");
    assert!(
        audit["guarantee"]
            .as_str()
            .unwrap()
            .contains("realised rate"),
        "{audit}"
    );
    // The "ok"-only variant has no unlabelled new skip: nothing to audit.
    let ok = member(&audit, "sel=on/ack=1-patterns");
    assert_eq!(ok["calibration"]["two_phase"], false, "{ok}");
    // A plan of production's skips is for after the switch.
    let after = d.path("after");
    let switched = d.write(
        "switched.toml",
        format!("production = \"both\"\n{}", d.read("c.toml")),
    );
    let o = run(
        &[
            "plan",
            traffic.to_str().unwrap(),
            "--config",
            switched.to_str().unwrap(),
            "--max-skip-regression-rate",
            "0.05",
            "--out",
            after.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    let (o, _) = calibrate("wrong", Some(&after.join("plan.toml")));
    expect_error(&o, 2, "calibrate reads an audit");
    assert!(!d.path("wrong").exists(), "nothing written");
}
