//! `plan` (#45): a critic sample of production's skips sized for a bound,
//! per stratum, with the salt of the one coin; refused, writing nothing,
//! where the call cap or the traffic cannot carry it.

use crate::util::*;

/// 7 days of a smart-gate deployment: each day 300 English and 60
/// German acks (the smart gate skips them) and 100 replies it fires on,
/// the acks' critic events saying none ran, except on the first day,
/// recorded under the legacy gate, where the critic reviewed every ack
/// and revised one English one in a hundred.
fn week() -> String {
    let mut out = String::new();
    for day in 0..7 {
        for i in 0..460 {
            let (lang, draft) = match i {
                0..=299 => ("en", "Got it, thanks!"),
                300..=359 => ("de", "Alles klar, danke!"),
                _ => (
                    "en",
                    "Your order 4812 shipped on March 3 via DHL; it should arrive in two days.",
                ),
            };
            let ack = i < 360;
            let critic = match (ack, day) {
                (true, 0) if i % 100 == 7 && lang == "en" => r#"{"ran":true,"verdict":"revise"}"#,
                (true, 0) => r#"{"ran":true,"verdict":"approve"}"#,
                (true, _) => r#"{"ran":false}"#,
                (false, _) => r#"{"ran":true,"verdict":"approve"}"#,
            };
            out.push_str(&format!(
                "{{\"run_id\":\"d{day}-c{}\",\"turn\":{},\"ts\":\"2026-11-{:02}T10:00:00Z\",\"language\":\"{lang}\",\"draft\":\"{draft}\",\"confidence\":0.9,\"critic\":{critic}}}\n",
                i / 4,
                i % 4,
                day + 1
            ));
        }
    }
    out
}

fn smart_config(d: &Dir) -> std::path::PathBuf {
    d.write(
        "gate.toml",
        "baseline = \"legacy\"\nproduction = \"smart\"\n[variants.legacy]\n[variants.smart]\nmetacognition_selective_gate = true\n[cost]\ndefault_model = \"m\"\n[cost.models.m]\nusd_per_mtok_in = 15.0\nusd_per_mtok_out = 75.0\n",
    )
}

fn plan(d: &Dir, extra: &[&str]) -> (std::path::PathBuf, std::process::Output) {
    plan_into(d, "plan", extra)
}

/// `plan` of [`week`] (in `d`) into `d`'s folder `name`.
fn plan_into(d: &Dir, name: &str, extra: &[&str]) -> (std::path::PathBuf, std::process::Output) {
    let traffic = d.write("week.jsonl", week());
    let config = smart_config(d);
    let out = d.path(name);
    let mut args = vec![
        "plan",
        traffic.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    (out.clone(), run(&args, None))
}

/// Each stratum's probability collects its labels within the window: with
/// no regression at all, ceil(ln 0.05 / ln 0.99) = 299 labels certify 1%;
/// German's prior (60 labels, none revised) asks for 80% power, English's
/// (300, three revised: 1%) cannot certify 1%, so it takes the 299.
#[test]
fn a_plan_sizes_each_stratum_for_its_labels_within_the_window() {
    let d = Dir::new();
    let (out, o) = plan(
        &d,
        &[
            "--max-skip-regression-rate",
            "0.01",
            "--strata",
            "language",
            "--salt",
            "s1",
        ],
    );
    expect_code(&o, 0);
    assert!(stdout(&o).starts_with("plan "), "{}", stdout(&o));
    let toml: toml::Value =
        toml::from_str(&std::fs::read_to_string(out.join("plan.toml")).unwrap()).unwrap();
    assert_eq!(toml["salt"].as_str(), Some("s1"));
    assert_eq!(toml["production"].as_str(), Some("smart"));
    assert_eq!(
        toml["gate"]["metacognition_selective_gate"].as_bool(),
        Some(true)
    );
    let strata = toml["stratum"].as_array().unwrap();
    let p = |v: &str| {
        strata
            .iter()
            .find(|s| s["value"].as_str() == Some(v))
            .unwrap()["probability"]
            .as_float()
            .unwrap()
    };
    // English: 300 skips a day, 2,100 in the window; 299 labels.
    assert!((p("en") - 299.0 / 2_100.0).abs() < 1e-8, "{}", p("en"));
    // German: 60 a day, 420 in the window; its prior is 0 of 60, so 80%
    // power needs no more than the 299 that certify with none.
    assert!((p("de") - 299.0 / 420.0).abs() < 1e-8, "{}", p("de"));
    let csv = csv_rows(&std::fs::read_to_string(out.join("plan.csv")).unwrap());
    let en = csv.iter().find(|r| r["stratum"] == "en").unwrap();
    assert_eq!(
        (
            en["skips"].as_str(),
            en["labelled"].as_str(),
            en["regressions"].as_str()
        ),
        ("2100", "300", "3")
    );
    assert_eq!(en["labels_to_certify"], "299");
    assert_eq!(
        en["labels_for_power"], "",
        "a prior of 1% cannot certify 1%"
    );
    assert_eq!(csv.last().unwrap()["stratum"], "(all)");
    let md = std::fs::read_to_string(out.join("plan.md")).unwrap();
    assert!(md.contains("shadow critic calls a day"), "{md}");
    // The same salt on the same traffic, the same plan; another salt,
    // another id.
    let args = ["--max-skip-regression-rate", "0.01", "--strata", "language"];
    let (again, o) = plan_into(&d, "again", &[&args[..], &["--salt", "s1"]].concat());
    expect_code(&o, 0);
    let id = |p: &std::path::Path| {
        let t: toml::Value =
            toml::from_str(&std::fs::read_to_string(p.join("plan.toml")).unwrap()).unwrap();
        t["plan_id"].as_str().unwrap().to_string()
    };
    assert_eq!(id(&out), id(&again));
    let (fresh, o) = plan_into(&d, "fresh", &args);
    expect_code(&o, 0);
    assert_ne!(id(&out), id(&fresh));
}

/// A cap the design cannot meet: exit 2 with the best rate it can
/// certify, and no folder.
#[test]
fn a_call_cap_too_low_says_the_best_rate_and_writes_nothing() {
    let d = Dir::new();
    let (out, o) = plan(
        &d,
        &[
            "--max-skip-regression-rate",
            "0.01",
            "--strata",
            "language",
            "--max-calls-per-day",
            "20",
        ],
    );
    expect_code(&o, 2);
    let e = stderr(&o);
    assert!(
        e.contains("above max_calls_per_day 20; the best rate it can certify there is 0.0"),
        "{e}"
    );
    assert!(!out.exists());
}

/// Traffic without `ts` has no volume a day: refused unless the days are
/// given; a key that is no stratum is refused naming the choices.
#[test]
fn volumes_need_days_and_strata_need_a_known_key() {
    let d = Dir::new();
    let traffic = d.write("t.jsonl", "{\"run_id\":\"r\",\"turn\":1,\"draft\":\"ok thanks\"}\n{\"run_id\":\"r\",\"turn\":2,\"draft\":\"Got it!\"}\n");
    let config = smart_config(&d);
    let base = [
        "plan",
        traffic.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--max-skip-regression-rate",
        "0.05",
    ];
    let out = d.path("p");
    let mut args = base.to_vec();
    args.extend(["--out", out.to_str().unwrap()]);
    let o = run(&args, None);
    expect_code(&o, 2);
    assert!(
        stderr(&o).contains("no turn records a ts"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
    args.extend(["--days", "1"]);
    expect_code(&run(&args, None), 0);
    let mut args = base.to_vec();
    let out = d.path("q");
    args.extend([
        "--out",
        out.to_str().unwrap(),
        "--days",
        "1",
        "--strata",
        "critic.model",
    ]);
    let o = run(&args, None);
    expect_code(&o, 2);
    assert!(
        stderr(&o).contains("give language, intent, call_site or a path into the scope"),
        "{}",
        stderr(&o)
    );
}

/// `sample` draws the plan's turns: each request is a skip of production's
/// gate with the plan's id and its stratum's probability, the counts per
/// stratum fall in their binomial 99.9% band, and a second run writes the
/// same bytes.
#[test]
fn sample_draws_production_s_skips_by_the_plan() {
    let d = Dir::new();
    let (out, o) = plan(
        &d,
        &[
            "--max-skip-regression-rate",
            "0.01",
            "--strata",
            "language",
            "--salt",
            "s1",
        ],
    );
    expect_code(&o, 0);
    let traffic = d.path("week.jsonl");
    let config = d.path("gate.toml");
    let sample = |name: &str| {
        let to = d.path(name);
        let o = run(
            &[
                "sample",
                traffic.to_str().unwrap(),
                "--plan",
                out.join("plan.toml").to_str().unwrap(),
                "--config",
                config.to_str().unwrap(),
                "--out",
                to.to_str().unwrap(),
            ],
            None,
        );
        expect_code(&o, 0);
        to
    };
    let (one, two) = (sample("s1"), sample("s2"));
    let requests = std::fs::read_to_string(one.join("requests.jsonl")).unwrap();
    assert_eq!(
        requests,
        std::fs::read_to_string(two.join("requests.jsonl")).unwrap()
    );
    let toml: toml::Value =
        toml::from_str(&std::fs::read_to_string(out.join("plan.toml")).unwrap()).unwrap();
    let id = toml["plan_id"].as_str().unwrap();
    let lines: Vec<serde_json::Value> = requests
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!lines.is_empty());
    for r in &lines {
        assert_eq!(r["plan_id"], id);
        // Only acks are skipped by the smart gate.
        assert!(
            r["draft"] == "Got it, thanks!" || r["draft"] == "Alles klar, danke!",
            "{r}"
        );
        assert!(r["probability"].as_f64().unwrap() > 0.0);
    }
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(one.join("sample.json")).unwrap()).unwrap();
    assert_eq!(s["sampled"].as_u64().unwrap(), lines.len() as u64);
    for (k, v) in s["strata"].as_object().unwrap() {
        assert_eq!(v["within_band"], true, "{k}: {v}");
    }
    assert_eq!(s["strata"]["en"]["skips"], 2_100);
}

/// A plan is used only with the gate it was made for, and only as
/// written: another gate's config and an edited plan are refused, naming
/// why, with nothing written.
#[test]
fn sample_refuses_another_gate_or_an_edited_plan() {
    let d = Dir::new();
    let (out, o) = plan(&d, &["--max-skip-regression-rate", "0.01", "--salt", "s1"]);
    expect_code(&o, 0);
    let traffic = d.path("week.jsonl");
    let legacy = d.write("legacy.toml", "[variants.legacy]\n");
    let to = d.path("s");
    let args = |plan: &std::path::Path, config: &std::path::Path| {
        run(
            &[
                "sample",
                traffic.to_str().unwrap(),
                "--plan",
                plan.to_str().unwrap(),
                "--config",
                config.to_str().unwrap(),
                "--out",
                to.to_str().unwrap(),
            ],
            None,
        )
    };
    let o = args(&out.join("plan.toml"), &legacy);
    expect_code(&o, 2);
    assert!(
        stderr(&o).contains("other gate settings than the config's `legacy`: metacognition_selective_gate: the plan's true against the config's false"),
        "{}",
        stderr(&o)
    );
    let text = std::fs::read_to_string(out.join("plan.toml")).unwrap();
    let edited = d.write(
        "edited.toml",
        text.replacen("probability = ", "probability = 0.9", 1)
            .replacen("0.90.", "0.9", 1),
    );
    let o = args(&edited, &d.path("gate.toml"));
    expect_code(&o, 2);
    assert!(
        stderr(&o).contains("the file was edited after `critic-gate plan` wrote it"),
        "{}",
        stderr(&o)
    );
    assert!(!to.exists());
}

/// Review of #45: with `ts` on some turns only, the others counted in the
/// volumes but not in the days (one day of `ts` in four weeks of traffic
/// read as four weeks a day: a sample 28 times too small). Refused now
/// unless the days are given.
#[test]
fn traffic_with_ts_on_some_turns_needs_its_days() {
    let d = Dir::new();
    let mut text = week();
    text.push_str(
        "{\"run_id\":\"x\",\"turn\":1,\"draft\":\"Got it, thanks!\",\"language\":\"en\"}\n",
    );
    let traffic = d.write("mixed.jsonl", text);
    let config = smart_config(&d);
    let out = d.path("p");
    let mut args = vec![
        "plan",
        traffic.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--max-skip-regression-rate",
        "0.01",
        "--out",
        out.to_str().unwrap(),
    ];
    let o = run(&args, None);
    expect_code(&o, 2);
    assert!(
        stderr(&o).contains("1 of 3221 turns record no ts"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
    args.extend(["--days", "7"]);
    let o = run(&args, None);
    expect_code(&o, 0);
    let md = std::fs::read_to_string(out.join("plan.md")).unwrap();
    assert!(
        md.contains("over 7 days (given; the recorded ts span 7 calendar days)"),
        "{md}"
    );
}

/// Review of #45: the plan said every stratum certifies within the window
/// where some cannot. English's prior (3 revised of 300 labels) is at or
/// above 1%; a window of one day holds too few German skips; both are
/// named, on the terminal and in plan.md.
#[test]
fn a_plan_names_the_strata_that_cannot_keep_its_promise() {
    let d = Dir::new();
    let (out, o) = plan(
        &d,
        &[
            "--max-skip-regression-rate",
            "0.01",
            "--strata",
            "language",
            "--window",
            "1d",
        ],
    );
    expect_code(&o, 0);
    let text = stdout(&o);
    assert!(
        text.contains("but not every stratum keeps that promise"),
        "{text}"
    );
    assert!(text.contains("en: its prior"), "{text}");
    assert!(
        text.contains(
            "de: too few skips for the window: every skip is reviewed and its labels take about"
        ),
        "{text}"
    );
    let md = std::fs::read_to_string(out.join("plan.md")).unwrap();
    assert!(
        md.contains("**Not every stratum keeps that promise:**"),
        "{md}"
    );
}

/// #45's done-when: `sample` writes the same requests whatever the
/// sharding: the week split in two files, each sampled on its own, gives
/// exactly the requests of one sample of both (the coin depends on the
/// turn alone).
#[test]
fn sample_shards_write_the_requests_of_one_sample() {
    let d = Dir::new();
    let (out, o) = plan(
        &d,
        &[
            "--max-skip-regression-rate",
            "0.01",
            "--strata",
            "language",
            "--salt",
            "s1",
        ],
    );
    expect_code(&o, 0);
    let text = week();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let half = lines.len() / 2;
    let one = d.write("one.jsonl", lines[..half].concat());
    let two = d.write("two.jsonl", lines[half..].concat());
    let config = d.path("gate.toml");
    let plan_toml = out.join("plan.toml");
    let sample = |name: &str, files: &[&std::path::Path]| {
        let to = d.path(name);
        let mut args = vec!["sample".to_string()];
        args.extend(files.iter().map(|f| f.to_str().unwrap().to_string()));
        args.extend(
            [
                "--plan",
                plan_toml.to_str().unwrap(),
                "--config",
                config.to_str().unwrap(),
                "--out",
                to.to_str().unwrap(),
            ]
            .map(String::from),
        );
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        expect_code(&run(&args, None), 0);
        std::fs::read_to_string(to.join("requests.jsonl")).unwrap()
    };
    let whole = sample("whole", &[&one, &two]);
    let shards = sample("a", &[&one]) + &sample("b", &[&two]);
    assert!(!whole.is_empty());
    assert_eq!(whole, shards);
}

/// A stratum is a traffic value (a tenant's scope): printed on the
/// terminal, it is one line, its control characters escaped, so it
/// cannot start a `::error` command of its own in a CI log.
#[test]
fn a_stratum_value_cannot_start_a_line_of_the_log() {
    let d = Dir::new();
    let mut text = week().replace(
        "\"language\"",
        "\"scope\":{\"tenant\":\"acme\"},\"language\"",
    );
    text.push_str("{\"run_id\":\"x\",\"turn\":1,\"ts\":\"2026-11-02T10:00:00Z\",\"scope\":{\"tenant\":\"evil\\n::error::pwned\"},\"draft\":\"Got it, thanks!\"}\n");
    let traffic = d.write("t.jsonl", text);
    let config = smart_config(&d);
    let out = d.path("p");
    let o = run(
        &[
            "plan",
            traffic.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
            "--max-skip-regression-rate",
            "0.01",
            "--strata",
            "scope.tenant",
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    let said = stdout(&o);
    assert!(
        said.contains("evil\\n::error::pwned: too few skips"),
        "{said}"
    );
    assert!(!said.lines().any(|l| l.starts_with("::error")), "{said}");
}
