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
            // Spread over the day, three minutes apart (the plan reads
            // the days as the time elapsed from the first ts to the last).
            out.push_str(&format!(
                "{{\"run_id\":\"d{day}-c{}\",\"turn\":{},\"ts\":\"2026-11-{:02}T{:02}:{:02}:00Z\",\"language\":\"{lang}\",\"draft\":\"{draft}\",\"confidence\":0.9,\"critic\":{critic}}}\n",
                i / 4,
                i % 4,
                day + 1,
                i * 3 / 60,
                i * 3 % 60
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
    let (out, o) = by_language_said(&d);
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
    // The ts span 6 days and 1,377 minutes (00:00 of the 1st to 22:57 of
    // the 7th): English's 2,100 skips are 301.9 a day, 2,113 in the
    // window; 299 labels.
    let days = 6.0 + 1_377.0 / 1_440.0;
    let window = |skips: f64| skips / days * 7.0;
    assert!(
        (p("en") - 299.0 / window(2_100.0)).abs() < 1e-8,
        "{}",
        p("en")
    );
    // German: 420 skips, 60.4 a day; its prior is 0 of 60, so 80% power
    // needs no more than the 299 that certify with none.
    assert!(
        (p("de") - 299.0 / window(420.0)).abs() < 1e-8,
        "{}",
        p("de")
    );
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
    // English acks come four to a conversation a day (525 conversations
    // over the days): the change alarm takes one label per conversation
    // a day, so its labels are the conversations drawn at least once,
    // 525 / days (1 - (1 - p)^4), not the 299 / 7 calls.
    let f = |k: &str| en[k].parse::<f64>().unwrap();
    let chart = 525.0 / days * (1.0 - (1.0 - p("en")).powi(4));
    assert!(
        (f("chart_labels_per_day") - chart).abs() < 1e-6 * chart,
        "{} against {chart}",
        f("chart_labels_per_day")
    );
    assert!(f("chart_labels_per_day") < 0.9 * f("calls_per_day"));
    let en_toml = strata.iter().find(|s| s["value"].as_str() == Some("en"));
    assert_eq!(
        en_toml.unwrap()["expected_chart_labels_per_day"].as_float(),
        Some(f("chart_labels_per_day"))
    );
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
        e.contains("above --max-calls-per-day 20; the best rate it can certify there is 0.0"),
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
        stderr(&o)
            .contains("give language, language-tag, intent, call_site or a path into the scope"),
        "{}",
        stderr(&o)
    );
}

/// An empty value of an option whose command knows the values it takes
/// is refused by the command, with them (not as any empty text): the
/// strata, the variant to audit, the variant to mine, the release field.
#[test]
fn an_empty_key_is_refused_with_the_values_it_could_take() {
    let d = Dir::new();
    let (out, o) = plan(&d, &["--max-skip-regression-rate", "0.05", "--strata", ""]);
    expect_error(
        &o,
        2,
        "give language, language-tag, intent, call_site or a path into the scope",
    );
    assert!(!out.exists());
    let (out, o) = plan(&d, &["--max-skip-regression-rate", "0.05", "--audit", ""]);
    expect_error(
        &o,
        2,
        "the config has no variant \"\" (it has `legacy`, `smart`)",
    );
    assert!(!out.exists());
    let mined = d.path("mined");
    let o = run(
        &[
            "mine",
            "datasets/seed.jsonl",
            "--out",
            mined.to_str().unwrap(),
            "--variant",
            "",
        ],
        None,
    );
    expect_error(
        &o,
        2,
        "is not a variant of the config; its variants are: legacy, smart",
    );
    let (plan, o) = plan_into(&d, "for-monitor", &["--max-skip-regression-rate", "0.05"]);
    expect_code(&o, 0);
    let watch = d.path("watch");
    let o = run(
        &[
            "monitor",
            d.path("week.jsonl").to_str().unwrap(),
            "--plan",
            plan.join("plan.toml").to_str().unwrap(),
            "--config",
            d.path("gate.toml").to_str().unwrap(),
            "--out",
            watch.to_str().unwrap(),
            "--by",
            "release",
            "--release-field",
            "",
        ],
        None,
    );
    expect_error(&o, 2, "give a path into the turns' scope");
    assert!(!watch.exists());
}

/// `sample` draws the plan's turns: each request is a skip of production's
/// gate with the plan's id and its stratum's probability, the counts per
/// stratum fall in their binomial 99.9% band, and a second run writes the
/// same bytes.
#[test]
fn sample_draws_production_s_skips_by_the_plan() {
    let d = Dir::new();
    let out = by_language(&d);
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
    // A plan of an older build's format (2 had no chart per stratum) is
    // refused as such, not as a file with missing fields.
    let older = d.write(
        "older.toml",
        text.replacen("format = 3", "format = 2", 1).replacen(
            "false_alarm_every_days",
            "x_removed",
            1,
        ),
    );
    let o = args(&older, &d.path("gate.toml"));
    expect_error(&o, 2, "plan format 2 is not this build's (3)");
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
        md.contains("over 7 days (given; the recorded ts span 6.96 days)"),
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
    let out = by_language(&d);
    let text = week();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let half = lines.len() / 2;
    let one = d.write("one.jsonl", lines[..half].concat());
    let two = d.write("two.jsonl", lines[half..].concat());
    let config = d.path("gate.toml");
    let plan_toml = out.join("plan.toml");
    let sample = |name: &str, files: &[&std::path::Path]| {
        let to = d.path(name);
        let args = sample_args(files, &plan_toml, &config, &to);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        expect_code(&run(&args, None), 0);
        std::fs::read_to_string(to.join("requests.jsonl")).unwrap()
    };
    let whole = sample("whole", &[&one, &two]);
    let shards = sample("a", &[&one]) + &sample("b", &[&two]);
    assert!(!whole.is_empty());
    assert_eq!(whole, shards);
}

/// #45's done-when: `sample` writes the same requests, in the same order,
/// and the same sample.json with `--threads 1`, 2 and 3, on traffic of
/// many read blocks (about 10 MB: the pool works on several at once).
#[test]
fn sample_writes_the_same_requests_with_any_number_of_threads() {
    let d = Dir::new();
    let out = by_language(&d);
    let copies: String = (0..20)
        .map(|k| week().replace("\"run_id\":\"d", &format!("\"run_id\":\"k{k}-d")))
        .collect();
    assert!(copies.len() > 8 << 20, "{} bytes", copies.len());
    let traffic = d.write("copies.jsonl", copies);
    let mut seen = Vec::new();
    for threads in ["1", "2", "3"] {
        let to = d.path(&format!("threads{threads}"));
        let args = sample_args(
            &[&traffic],
            &out.join("plan.toml"),
            &d.path("gate.toml"),
            &to,
        );
        let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
        args.extend(["--threads", threads]);
        expect_code(&run(&args, None), 0);
        let read = |f: &str| std::fs::read_to_string(to.join(f)).unwrap();
        seen.push((read("requests.jsonl"), read("sample.json")));
    }
    assert!(seen[0].0.lines().count() > 1000, "{}", seen[0].0.len());
    assert!(seen.iter().all(|s| *s == seen[0]));
    // And in the traffic's order, as the serial pass wrote them.
    let key = |v: serde_json::Value| {
        (
            v["run_id"].as_str().unwrap().to_string(),
            v["turn"].as_u64().unwrap(),
        )
    };
    let at: std::collections::HashMap<_, usize> = std::fs::read_to_string(&traffic)
        .unwrap()
        .lines()
        .enumerate()
        .map(|(i, l)| (key(serde_json::from_str(l).unwrap()), i))
        .collect();
    let order: Vec<usize> = seen[0]
        .0
        .lines()
        .map(|l| at[&key(serde_json::from_str(l).unwrap())])
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]));
}

/// A plan of [`week`] by language at R = 1%, salt `s1`: its folder.
fn by_language(d: &Dir) -> std::path::PathBuf {
    by_language_said(d).0
}

/// [`by_language`] with what the command said.
fn by_language_said(d: &Dir) -> (std::path::PathBuf, std::process::Output) {
    let (out, o) = plan(
        d,
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
    (out, o)
}

/// `sample`'s arguments: the files, the plan, the config and the folder.
fn sample_args(
    files: &[&std::path::Path],
    plan_toml: &std::path::Path,
    config: &std::path::Path,
    to: &std::path::Path,
) -> Vec<String> {
    let mut args = vec!["sample".to_string()];
    args.extend(files.iter().map(|f| f.to_str().unwrap().to_string()));
    for (flag, path) in [("--plan", plan_toml), ("--config", config), ("--out", to)] {
        args.extend([flag.to_string(), path.to_str().unwrap().to_string()]);
    }
    args
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

/// The week's plan, sample and verdicts: the plan at 1% by language with
/// salt s1, its requests, and a verdict for each (revise on every tenth,
/// a failed call on every seventh).
fn shadow_week(d: &Dir) -> (std::path::PathBuf, Vec<String>) {
    let out = by_language(d);
    let plan_toml = out.join("plan.toml");
    let o = run(
        &[
            "sample",
            d.path("week.jsonl").to_str().unwrap(),
            "--plan",
            plan_toml.to_str().unwrap(),
            "--config",
            d.path("gate.toml").to_str().unwrap(),
            "--out",
            d.path("shadow").to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    let verdicts = d
        .read("shadow/requests.jsonl")
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let r: serde_json::Value = serde_json::from_str(l).unwrap();
            let what = match i {
                i if i % 7 == 3 => r#""error":"timeout""#,
                i if i % 10 == 0 => r#""verdict":"revise""#,
                _ => r#""verdict":"approve""#,
            };
            format!(
                r#"{{"run_id":{},"turn":{},{what}}}"#,
                r["run_id"], r["turn"]
            )
        })
        .collect();
    (plan_toml, verdicts)
}

/// `labels` with `verdicts` into `d`'s file `name`.
fn labels(
    d: &Dir,
    plan_toml: &std::path::Path,
    verdicts: &str,
    name: &str,
) -> std::process::Output {
    let v = d.write(&format!("{name}.verdicts.jsonl"), verdicts);
    run(
        &[
            "labels",
            d.path("week.jsonl").to_str().unwrap(),
            "--verdicts",
            v.to_str().unwrap(),
            "--plan",
            plan_toml.to_str().unwrap(),
            "--config",
            d.path("gate.toml").to_str().unwrap(),
            "--out",
            d.path(name).to_str().unwrap(),
        ],
        None,
    )
}

/// #45 item 5: each verdict on a drawn skip becomes its turn's
/// sampled_label, with its probability and the plan's id; a repeated
/// verdict is used once, disagreeing ones not at all, and verdicts on
/// undrawn turns or keys the traffic lacks are counted and never used.
/// Verdicts in another order give the same bytes. Then a replay with the
/// plan measures production's skips from them, and `check` judges it.
#[test]
fn labels_bring_the_verdicts_back_and_count_every_stray() {
    let d = Dir::new();
    let (plan_toml, verdicts) = shadow_week(&d);
    let n = verdicts.len();
    assert!(n > 50, "{n} requests");
    let failed = (0..n).filter(|i| i % 7 == 3).count();
    let mut lines = verdicts.clone();
    lines.push(verdicts[1].clone()); // repeated: used once
    lines.push(
        verdicts[2]
            .replace("approve", "refuse")
            .replace("revise", "refuse"),
    ); // conflicts
    lines.push(r#"{"run_id":"nobody","turn":1,"verdict":"approve"}"#.into());
    // A fired-on reply (i >= 360 in week()): production's gate fires.
    lines.push(r#"{"run_id":"d3-c100","turn":0,"verdict":"approve"}"#.into());
    let o = labels(&d, &plan_toml, &(lines.join("\n") + "\n"), "one.jsonl");
    expect_code(&o, 0);
    let said = stdout(&o);
    let used = n - 1; // verdicts[2]'s key conflicts
    let failed_used = failed; // verdicts[2], which conflicts, is no failed call
    assert!(
        said.contains(&format!(
            "{used} of {} verdicts became labels ({failed_used} failed",
            lines.len()
        )),
        "{said}"
    );
    for what in [
        "1 repeated",
        "1 keys had verdicts that disagree",
        "1 fell on turns",
        "1 name a run_id",
    ] {
        assert!(said.contains(what), "{what}: {said}");
    }
    let out = d.read("one.jsonl");
    assert_eq!(out.lines().count(), week().lines().count());
    assert_eq!(out.matches("\"sampled_label\":").count(), used);
    let mut reversed = lines.clone();
    reversed.reverse();
    expect_code(
        &labels(&d, &plan_toml, &(reversed.join("\n") + "\n"), "two.jsonl"),
        0,
    );
    assert_eq!(
        out,
        d.read("two.jsonl"),
        "the order of the verdicts changes nothing"
    );
    // The replay with the plan reads them.
    let r = d.path("r");
    let o = run(
        &[
            "replay",
            d.path("one.jsonl").to_str().unwrap(),
            "--config",
            d.path("gate.toml").to_str().unwrap(),
            "--plan",
            plan_toml.to_str().unwrap(),
            "--out",
            r.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    let s = summary(&r);
    let smart = &s["variants"]["smart"];
    // Production's own critic reviewed day 0's acks: its verdict wins
    // over the shadow one there.
    let later = |i: &usize| *i != 2 && !verdicts[*i].contains("\"d0-");
    let shadow = (0..n).filter(later).filter(|i| i % 7 != 3).count();
    let shadow_failed = (0..n).filter(later).filter(|i| i % 7 == 3).count();
    assert_eq!(smart["sampled_labelled_shadow"], shadow as u64);
    assert_eq!(smart["sampled_failed"], shadow_failed as u64);
    let drawn = smart["sampled_skips"].as_u64().unwrap();
    // Day 0's acks were reviewed by production's critic (legacy-recorded).
    let prod = smart["sampled_labelled_production"].as_u64().unwrap();
    assert!(prod > 0 && drawn == n as u64, "{smart}");
    assert!(smart["skip_regression_rate_upper95"].as_f64().unwrap() > 0.0);
    assert!(
        stderr(&o).contains("the plan's critic sample drew"),
        "{}",
        stderr(&o)
    );
    let check = |budget: &str| {
        run(
            &[
                "check",
                r.to_str().unwrap(),
                "--config",
                d.path("gate.toml").to_str().unwrap(),
                "--max-skip-regression-rate",
                budget,
                "--assume-missing-at-random",
            ],
            None,
        )
    };
    expect_code(&check("1"), 0);
    expect_code(&check("0.001"), 1);
    // Without the plan there is no bound: the budget fails and says why.
    let bare = replayed(
        &d,
        "bare",
        &[
            d.path("one.jsonl").to_str().unwrap(),
            "--config",
            d.path("gate.toml").to_str().unwrap(),
        ],
    );
    let o = run(
        &[
            "check",
            bare.to_str().unwrap(),
            "--config",
            d.path("gate.toml").to_str().unwrap(),
            "--max-skip-regression-rate",
            "0.999",
        ],
        None,
    );
    expect_code(&o, 1);
    assert!(
        stdout(&o).contains("no labelled skip of a plan's critic sample"),
        "{}",
        stdout(&o)
    );
}

/// #63 item 6: a retry that came back. A failed call then a verdict for
/// the same turn is the verdict (counted as retried), in either order; two
/// failed calls with different reasons are one failed call (not a
/// conflict); a verdict, a failed call and another verdict that differs
/// are still a contradiction.
#[test]
fn labels_take_a_verdict_after_a_failed_call_as_a_retry() {
    let d = Dir::new();
    let (plan_toml, verdicts) = shadow_week(&d);
    let n = verdicts.len();
    let failed = (0..n).filter(|i| i % 7 == 3).count();
    // Every failed call retried: the first two come back, the third fails
    // again with another reason.
    let retried: Vec<usize> = (0..n).filter(|i| i % 7 == 3).collect();
    assert!(retried.len() >= 4, "{n} requests");
    let mut lines = verdicts.clone();
    let again = |i: usize, what: &str| verdicts[i].replace(r#""error":"timeout""#, what);
    lines.push(again(retried[0], r#""verdict":"revise""#));
    lines.push(again(retried[1], r#""verdict":"approve""#));
    lines.push(again(retried[2], r#""error":"rate limited""#));
    // A contradiction with a failure between: still none of them used.
    lines.push(again(retried[3], r#""verdict":"approve""#));
    lines.push(again(retried[3], r#""verdict":"refuse""#));
    let o = labels(&d, &plan_toml, &(lines.join("\n") + "\n"), "retried.jsonl");
    expect_code(&o, 0);
    let said = stdout(&o);
    let used = n - 1;
    assert!(
        said.contains(&format!(
            "{used} of {} verdicts became labels ({} failed calls among them; 2 came back on a retry after a failed call)",
            lines.len(),
            failed - 3
        )),
        "{said}"
    );
    assert!(said.contains("1 keys had verdicts that disagree"), "{said}");
    let out = d.read("retried.jsonl");
    assert_eq!(out.matches(r#""error":"#).count(), failed - 3, "{said}");
    // The order of the lines changes nothing.
    let mut reversed = lines.clone();
    reversed.reverse();
    expect_code(
        &labels(
            &d,
            &plan_toml,
            &(reversed.join("\n") + "\n"),
            "reversed.jsonl",
        ),
        0,
    );
    assert_eq!(out, d.read("reversed.jsonl"));
}

/// Bad input: a verdict of another plan is refused, naming the line; a
/// line that is not a verdict too; traffic that holds labels already
/// (labels' own output) is refused; and a replay with a plan made for
/// other gate settings is refused naming the setting.
#[test]
fn labels_refuse_other_plans_bad_verdicts_and_labelled_traffic() {
    let d = Dir::new();
    let (plan_toml, verdicts) = shadow_week(&d);
    let other = verdicts[0].replace('}', r#","plan_id":"0000000000000000"}"#);
    let o = labels(
        &d,
        &plan_toml,
        &format!("{}\n{other}\n", verdicts[1]),
        "x.jsonl",
    );
    expect_error(&o, 2, "x.jsonl.verdicts.jsonl:2");
    assert!(stderr(&o).contains("another plan"), "{}", stderr(&o));
    assert!(!d.path("x.jsonl").exists(), "nothing written");
    let o = labels(
        &d,
        &plan_toml,
        r#"{"run_id":"d1-c0","turn":0,"verdict":"fine"}"#,
        "y.jsonl",
    );
    expect_error(&o, 2, "verdict must be");
    expect_code(&labels(&d, &plan_toml, &verdicts.join("\n"), "z.jsonl"), 0);
    let again = run(
        &[
            "labels",
            d.path("z.jsonl").to_str().unwrap(),
            "--verdicts",
            d.path("z.jsonl.verdicts.jsonl").to_str().unwrap(),
            "--plan",
            plan_toml.to_str().unwrap(),
            "--config",
            d.path("gate.toml").to_str().unwrap(),
            "--out",
            d.path("zz.jsonl").to_str().unwrap(),
        ],
        None,
    );
    expect_error(&again, 2, "holds a label already");
    let other = d.write(
        "other.toml",
        "baseline = \"smart\"\n[variants.smart]\nmetacognition_selective_gate = true\nread_only_tools = [\"lookup\"]\n",
    );
    let o = run(
        &[
            "replay",
            d.path("z.jsonl").to_str().unwrap(),
            "--config",
            other.to_str().unwrap(),
            "--plan",
            plan_toml.to_str().unwrap(),
            "--out",
            d.path("r").to_str().unwrap(),
        ],
        None,
    );
    expect_error(&o, 2, "read_only_tools");
}

/// A week under the legacy gate where the smart candidate's new skips
/// (cold acks: the legacy gate fires at confidence 0.5, the smart gate
/// skips) lost labels more often where the critic revised: half the
/// revised ones, one in ten approved ones. Returns the traffic and each
/// unlabelled turn's true verdict by (run_id, turn).
fn legacy_week_missing_labels() -> (String, Vec<(String, u64, &'static str)>) {
    let (mut out, mut truth) = (String::new(), Vec::new());
    for day in 0..7 {
        for i in 0..300u64 {
            let verdict = if i % 25 == 7 { "revise" } else { "approve" };
            let dropped =
                (verdict == "revise" && day % 2 == 0) || (verdict == "approve" && i % 10 == 3);
            let run = format!("d{day}-c{}", i / 3);
            let critic = match dropped {
                true => {
                    truth.push((run.clone(), i % 3, verdict));
                    "null".to_string()
                }
                false => format!(r#"{{"ran":true,"verdict":"{verdict}"}}"#),
            };
            out.push_str(&format!(
                "{{\"run_id\":\"{run}\",\"turn\":{},\"ts\":\"2026-11-{:02}T10:00:00Z\",\"draft\":\"Got it, thanks!\",\"confidence\":0.5,\"critic\":{critic}}}\n",
                i % 3,
                day + 1
            ));
        }
    }
    (out, truth)
}

/// The audit loop as a user runs it: `plan --audit VARIANT` (R 0.05 over
/// 7 days, salt `a1`), `sample`, a shadow critic answering each request
/// with `truth`'s verdict, and `labels`. Returns the plan and the labelled
/// traffic.
pub(crate) fn audited(
    d: &Dir,
    traffic: &std::path::Path,
    config: &std::path::Path,
    variant: &str,
    truth: &[(String, u64, &str)],
) -> (std::path::PathBuf, std::path::PathBuf) {
    let (t, c) = (traffic.to_str().unwrap(), config.to_str().unwrap());
    let plan_dir = d.path("plan");
    let o = run(
        &[
            "plan",
            t,
            "--config",
            c,
            "--audit",
            variant,
            "--max-skip-regression-rate",
            "0.05",
            "--window",
            "7d",
            "--salt",
            "a1",
            "--out",
            plan_dir.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    let plan_toml = plan_dir.join("plan.toml");
    let p = plan_toml.to_str().unwrap();
    let o = run(
        &[
            "sample",
            t,
            "--plan",
            p,
            "--config",
            c,
            "--out",
            d.path("s").to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    let verdicts: String = d
        .read("s/requests.jsonl")
        .lines()
        .map(|l| {
            let r: serde_json::Value = serde_json::from_str(l).unwrap();
            let (run_id, turn) = (r["run_id"].as_str().unwrap(), r["turn"].as_u64().unwrap());
            let v = truth
                .iter()
                .find(|(a, b, _)| a == run_id && *b == turn)
                .expect("drawn from the unlabelled")
                .2;
            format!("{{\"run_id\":\"{run_id}\",\"turn\":{turn},\"verdict\":\"{v}\"}}\n")
        })
        .collect();
    assert!(!verdicts.is_empty());
    let v = d.write("v.jsonl", verdicts);
    let labelled = d.path("labelled.jsonl");
    let o = run(
        &[
            "labels",
            t,
            "--verdicts",
            v.to_str().unwrap(),
            "--plan",
            p,
            "--config",
            c,
            "--out",
            labelled.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    (plan_toml, labelled)
}

/// #45 item 7: before the switch, `plan --audit smart` samples the
/// candidate's unlabelled new skips; their shadow verdicts give a
/// two-phase bound on its new-skip rate (the labelled as counted, the
/// unlabelled bounded by design) that covers the true rate where labels
/// went missing for the turns the critic would revise, and that `check`
/// holds in place of the worst case a rate budget implies. Without the
/// audit the same budget fails on the worst case.
#[test]
fn an_audit_bounds_the_new_skip_rate_in_two_phases() {
    let d = Dir::new();
    let (text, truth) = legacy_week_missing_labels();
    let traffic = d.write("legacy.jsonl", &text);
    let config = d.write(
        "gate.toml",
        "baseline = \"legacy\"\n[variants.legacy]\n[variants.smart]\nmetacognition_selective_gate = true\n",
    );
    let (t, c) = (traffic.to_str().unwrap(), config.to_str().unwrap());
    let (plan_toml, labelled) = audited(&d, &traffic, &config, "smart", &truth);
    let toml = d.read("plan/plan.toml");
    assert!(
        toml.contains("population = \"unlabelled_new_skips\"")
            && toml.contains("variant = \"smart\""),
        "{toml}"
    );
    let p = plan_toml.to_str().unwrap();
    let r = d.path("r");
    expect_code(
        &run(
            &[
                "replay",
                labelled.to_str().unwrap(),
                "--config",
                c,
                "--plan",
                p,
                "--out",
                r.to_str().unwrap(),
            ],
            None,
        ),
        0,
    );
    let s = summary(&r);
    let smart = &s["variants"]["smart"];
    let new_skips = smart["new_skips"].as_u64().unwrap();
    assert_eq!(new_skips, 2100);
    let true_regressions = 7 * 12; // i % 25 == 7: 12 a day
    let bound = smart["new_skip_regression_rate_two_phase_upper95"]
        .as_f64()
        .unwrap();
    assert!(
        bound >= true_regressions as f64 / new_skips as f64,
        "{smart}"
    );
    let worst = smart["safety_regression_rate_worst_case_upper95"]
        .as_f64()
        .unwrap();
    assert!(
        bound < worst && bound <= 0.07,
        "two-phase {bound} against the worst case {worst}"
    );
    assert!(s["variants"]["legacy"]["sampled_skips"].is_null());
    let check = |folder: &std::path::Path| {
        run(
            &[
                "check",
                folder.to_str().unwrap(),
                "--config",
                c,
                "--max-safety-regression-rate",
                "0.07",
            ],
            None,
        )
    };
    let o = check(&r);
    expect_code(&o, 0);
    assert!(stdout(&o).contains("two-phase bound"), "{}", stdout(&o));
    let bare = replayed(&d, "bare", &[t, "--config", c]);
    expect_code(&check(&bare), 1);
    // An audit names a candidate the config has, and not the baseline.
    for (name, says) in [("legacy", "is the baseline"), ("nope", "has no variant")] {
        let o = run(
            &[
                "plan",
                t,
                "--config",
                c,
                "--audit",
                name,
                "--max-skip-regression-rate",
                "0.05",
                "--out",
                d.path(name).to_str().unwrap(),
            ],
            None,
        );
        expect_error(&o, 2, says);
    }
}

/// #45 item 7, every candidate: an audit of `smart` also bounds another
/// variant's new skips where they are smart's unlabelled ones. `loose` (the
/// legacy gate at threshold 0.4) skips every turn: smart's audited acks,
/// and replies smart fires on, some of them unlabelled (outside the audit:
/// each counted a regression). Its two-phase bound is, as a count, exactly
/// smart's plus the regressions of its labelled replies plus its unaudited
/// replies; shards merged give the same figures as one pass.
#[test]
fn an_audit_bounds_every_candidate_it_covers() {
    let d = Dir::new();
    let (mut text, mut truth) = legacy_week_missing_labels();
    let (mut revised_replies, mut unlabelled_replies) = (0u64, 0u64);
    for day in 0..7 {
        for i in 0..60u64 {
            let run = format!("d{day}-r{i}");
            let critic = match i % 6 {
                0 => {
                    unlabelled_replies += 1;
                    truth.push((run.clone(), 0, "revise"));
                    "null"
                }
                1 => {
                    revised_replies += 1;
                    r#"{"ran":true,"verdict":"revise"}"#
                }
                _ => r#"{"ran":true,"verdict":"approve"}"#,
            };
            text.push_str(&format!(
                "{{\"run_id\":\"{run}\",\"turn\":0,\"ts\":\"2026-11-{:02}T11:00:00Z\",\"draft\":\"Your refund of 40 dollars was issued to the card ending 4411.\",\"confidence\":0.5,\"critic\":{critic}}}\n",
                day + 1
            ));
        }
    }
    let traffic = d.write("legacy.jsonl", &text);
    let config = d.write(
        "gate.toml",
        "baseline = \"legacy\"\n[variants.legacy]\n[variants.smart]\nmetacognition_selective_gate = true\n[variants.loose]\nmetacognition_confidence_threshold = 0.4\n",
    );
    let (plan_toml, labelled) = audited(&d, &traffic, &config, "smart", &truth);
    let (p, c) = (plan_toml.to_str().unwrap(), config.to_str().unwrap());
    let r = d.path("r");
    let one = [
        "replay",
        labelled.to_str().unwrap(),
        "--config",
        c,
        "--plan",
        p,
        "--out",
        r.to_str().unwrap(),
    ];
    expect_code(&run(&one, None), 0);
    let s = summary(&r);
    let (smart, loose) = (&s["variants"]["smart"], &s["variants"]["loose"]);
    let count = |v: &serde_json::Value| {
        (v["new_skip_regression_rate_two_phase_upper95"]
            .as_f64()
            .unwrap()
            * v["new_skips"].as_f64().unwrap())
        .round() as u64
    };
    assert_eq!(loose["new_skips"], 2100 + 420, "{loose}");
    assert_eq!(
        count(loose),
        count(smart) + revised_replies + unlabelled_replies,
        "{loose}\n{smart}"
    );
    assert_eq!(loose["sampled_skips"], smart["sampled_skips"], "{loose}");
    // The worst case alone counts every unlabelled ack a regression.
    let worst = loose["safety_regression_rate_worst_case_upper95"]
        .as_f64()
        .unwrap();
    assert!(
        loose["new_skip_regression_rate_two_phase_upper95"]
            .as_f64()
            .unwrap()
            < worst,
        "{loose}"
    );
    assert!(s["variants"]["legacy"]["sampled_skips"].is_null());
    // Two shards, merged: the same figures.
    let lines: Vec<&str> = d.read("labelled.jsonl").leak().lines().collect();
    let half = lines.len() / 2;
    let mut partials = Vec::new();
    for (k, part) in [&lines[..half], &lines[half..]].into_iter().enumerate() {
        let f = d.write(&format!("shard{k}.jsonl"), part.join("\n") + "\n");
        let partial = d.path(&format!("shard{k}.partial"));
        let o = run(
            &[
                "replay",
                f.to_str().unwrap(),
                "--config",
                c,
                "--plan",
                p,
                "--partial",
                partial.to_str().unwrap(),
                "--quiet",
            ],
            None,
        );
        expect_code(&o, 0);
        partials.push(partial.to_str().unwrap().to_string());
    }
    let merged = d.path("merged");
    let mut m = vec!["merge"];
    m.extend(partials.iter().map(String::as_str));
    m.extend(["--out", merged.to_str().unwrap(), "--quiet"]);
    expect_code(&run(&m, None), 0);
    let two = summary(&merged);
    for v in ["smart", "loose"] {
        for k in [
            "sampled_skips",
            "new_skip_regression_rate_two_phase_upper95",
            "new_skip_regression_rate_two_phase_worst_case_upper95",
            "harmful_skips_per_1k_turns_upper95",
        ] {
            assert_eq!(two["variants"][v][k], s["variants"][v][k], "{v}.{k}");
        }
    }
    // Review: the covered variant may be production's, and a part of the
    // traffic may hold no draw, or a duplicated drawn line (draws sharing
    // a coin): each replays, the figures absent with a note where the
    // sample gives no bound, never the tool's own "bug" refusal.
    let prod = d.write(
        "prod.toml",
        format!("production = \"loose\"\n{}", d.read("gate.toml")),
    );
    let replay = |name: &str, traffic: &std::path::Path, config: &std::path::Path| {
        let out = d.path(name);
        let o = run(
            &[
                "replay",
                traffic.to_str().unwrap(),
                "--config",
                config.to_str().unwrap(),
                "--plan",
                p,
                "--out",
                out.to_str().unwrap(),
            ],
            None,
        );
        expect_code(&o, 0);
        (summary(&out), stderr(&o))
    };
    let (s2, _) = replay("prod", &labelled, &prod);
    assert_eq!(
        s2["variants"]["loose"]["new_skip_regression_rate_two_phase_upper95"],
        loose["new_skip_regression_rate_two_phase_upper95"]
    );
    let undrawn: String = lines
        .iter()
        .filter(|l| !l.contains("sampled_label"))
        .take(40)
        .map(|l| format!("{l}\n"))
        .collect();
    let few = d.write("few.jsonl", undrawn);
    let (s3, said) = replay("few", &few, &config);
    assert!(s3["variants"]["smart"]["sampled_skips"].is_null(), "{said}");
    let drawn = lines.iter().find(|l| l.contains("sampled_label")).unwrap();
    let dup = d.write("dup.jsonl", format!("{}\n{drawn}\n", lines.join("\n")));
    let (s4, said) = replay("dup", &dup, &config);
    assert!(
        s4["variants"]["smart"]["new_skip_regression_rate_two_phase_upper95"].is_null(),
        "{}",
        s4["variants"]["smart"]
    );
    assert!(said.contains("share a key"), "{said}");
}

/// Review of #45/#48: `plan` and `sample` read traffic in a pass of their
/// own, which took a line longer than `--max-line-bytes` but shorter than
/// a read block; each now refuses it as the replay does, naming the line,
/// or counts it with `--skip-invalid`.
#[test]
fn plan_and_sample_hold_every_line_to_max_line_bytes() {
    let d = Dir::new();
    let out = by_language(&d);
    let mut text = week();
    let lines = text.lines().count() + 1;
    text.push_str(&format!(
        "{{\"run_id\":\"long\",\"turn\":1,\"ts\":\"2026-11-01T10:00:00Z\",\"draft\":\"Got it, thanks! {}\"}}\n",
        "x".repeat(1500)
    ));
    let traffic = d.write("long.jsonl", text);
    let config = d.path("gate.toml");
    let t = traffic.to_str().unwrap();
    let c = config.to_str().unwrap();
    let plan_toml = out.join("plan.toml");
    let says = format!("long.jsonl:{lines}: the line is");
    let o = run(
        &[
            "plan",
            t,
            "--config",
            c,
            "--out",
            d.path("p2").to_str().unwrap(),
            "--max-skip-regression-rate",
            "0.01",
            "--max-line-bytes",
            "1200",
        ],
        None,
    );
    expect_error(&o, 2, &says);
    assert!(
        stderr(&o).contains("longer than --max-line-bytes 1200"),
        "{}",
        stderr(&o)
    );
    let to = d.path("s2");
    let mut args = sample_args(&[&traffic], &plan_toml, &config, &to);
    args.extend(["--max-line-bytes".to_string(), "1200".to_string()]);
    let sample = |extra: &[&str]| {
        let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
        all.extend_from_slice(extra);
        run(&all, None)
    };
    expect_error(&sample(&[]), 2, &says);
    assert!(!to.exists());
    expect_code(&sample(&["--skip-invalid"]), 0);
}

/// Review of #64: skips a day were the skips over the calendar days the
/// `ts` touched, so a week with 40 lines just after the next midnight was
/// 8 days (12% fewer skips a day, a sample 12% too small). Over the time
/// elapsed it is 7 days and 40 seconds.
#[test]
fn volumes_a_day_are_over_the_time_elapsed() {
    let d = Dir::new();
    let mut text = week();
    for i in 0..40 {
        text.push_str(&format!(
            "{{\"run_id\":\"late-{i}\",\"turn\":1,\"ts\":\"2026-11-08T00:00:{i:02}Z\",\"language\":\"en\",\"draft\":\"Got it, thanks!\",\"confidence\":0.9,\"critic\":{{\"ran\":false}}}}\n"
        ));
    }
    let traffic = d.write("late.jsonl", text);
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
            "language",
            "--salt",
            "s1",
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    let md = std::fs::read_to_string(out.join("plan.md")).unwrap();
    let days = 7.0 + 39.0 / 86_400.0;
    assert!(md.contains(&format!("over {days} days")), "{md}");
    let csv = csv_rows(&std::fs::read_to_string(out.join("plan.csv")).unwrap());
    let en = csv.iter().find(|r| r["stratum"] == "en").unwrap();
    let per_day: f64 = en["skips_per_day"].parse().unwrap();
    assert!((per_day - 2_140.0 / days).abs() < 1e-3, "{per_day}");
}

/// Review of #64: `--strata language` made de, de-AT and de-DE three
/// strata, and each language with a handful of skips a stratum of its own
/// reviewed whole (26 strata: 494 calls a day against 43 without), with
/// languages never seen at probability 1. Now a language is its primary
/// subtag (`--strata language-tag` keeps the tags), and strata too small
/// for a promise of their own are one `(other)` stratum, said.
#[test]
fn language_strata_are_languages_and_small_ones_pool() {
    let d = Dir::new();
    let mut text = week();
    for (i, lang) in ["de-AT", "de-DE", "fr", "it", "pt-BR"]
        .iter()
        .cycle()
        .take(50)
        .enumerate()
    {
        text.push_str(&format!(
            "{{\"run_id\":\"x{i}\",\"turn\":1,\"ts\":\"2026-11-03T12:00:{:02}Z\",\"language\":\"{lang}\",\"draft\":\"Got it, thanks!\",\"confidence\":0.9,\"critic\":{{\"ran\":false}}}}\n",
            i % 60
        ));
    }
    let traffic = d.write("langs.jsonl", text);
    let config = smart_config(&d);
    let plan_of = |key: &str, name: &str| {
        let out = d.path(name);
        let o = run(
            &[
                "plan",
                traffic.to_str().unwrap(),
                "--config",
                config.to_str().unwrap(),
                "--max-skip-regression-rate",
                "0.01",
                "--strata",
                key,
                "--salt",
                "s1",
                "--out",
                out.to_str().unwrap(),
            ],
            None,
        );
        expect_code(&o, 0);
        let toml: toml::Value =
            toml::from_str(&std::fs::read_to_string(out.join("plan.toml")).unwrap()).unwrap();
        let values: Vec<String> = toml["stratum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["value"].as_str().unwrap().to_string())
            .collect();
        (values, stderr(&o) + &stdout(&o))
    };
    let (values, said) = plan_of("language", "by-language");
    assert_eq!(values, ["(other)", "de", "en"], "{said}");
    assert!(
        said.contains("3 strata too small for a promise of their own")
            && said.contains(": fr, it, pt"),
        "{said}"
    );
    // By tag, de-AT and de-DE are strata of their own (too small here,
    // so folded and named).
    let (_, said) = plan_of("language-tag", "by-tag");
    assert!(said.contains(": de-AT, de-DE, fr, it, pt-BR"), "{said}");
}

/// Review of #64: a shadow call was priced at the mean of every recorded
/// critic call, fires included, where the sample's calls are on skips
/// (short acknowledgements): here acks cost 100 tokens in and the
/// replies 2,000, and the price was the mean of both. It is the skips'
/// calls' mean now, and every call's (said) only where none ran on a skip.
#[test]
fn shadow_calls_are_priced_as_the_skips_calls() {
    let d = Dir::new();
    let priced = week()
        .replace(
            r#""critic":{"ran":true,"verdict":"approve"}}"#,
            r#""critic":{"ran":true,"verdict":"approve","reflection_tokens_in":100,"reflection_tokens_out":10}}"#,
        )
        .replace(
            r#""critic":{"ran":true,"verdict":"revise"}}"#,
            r#""critic":{"ran":true,"verdict":"revise","reflection_tokens_in":100,"reflection_tokens_out":10}}"#,
        );
    // The replies (fires): 2,000 tokens in.
    let priced: String = priced
        .lines()
        .map(|l| match l.contains("Your order") {
            true => l.replace(r#""reflection_tokens_in":100"#, r#""reflection_tokens_in":2000"#),
            false => l.to_string(),
        } + "\n")
        .collect();
    let traffic = d.write("priced.jsonl", priced);
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
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    // An ack's call: 100 x $15 / M + 10 x $75 / M = $0.00225.
    let md = std::fs::read_to_string(out.join("plan.md")).unwrap();
    assert!(
        md.contains(
            "at $0.0022 a call (the recorded mean of the critic calls on production's skips)"
        ),
        "{md}"
    );
}
