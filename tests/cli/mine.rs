//! `mine`: proposed patterns for the acks the built-ins miss, validated
//! through a replay; risky skips; and the stress test's claims.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::util::*;

fn mine_in(out: &std::path::Path, args: &[&str]) -> std::process::Output {
    let mut all = vec!["mine"];
    all.extend_from_slice(args);
    run_in(out, &all)
}

fn json(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Normalised as mine normalises (lowercase, letters/digits/marks/spaces).
fn normalise(d: &str) -> String {
    let kept: String = d
        .to_lowercase()
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Six languages no built-in pattern knows get a pattern each; replaying
/// with proposals.toml skips exactly the missed acks it covers, keeps the
/// built-ins, and skips nothing with a claim or a floor.
#[test]
fn proposals_cover_the_missed_acks_and_nothing_else() {
    let d = Dir::new();
    let out = d.path("m");
    // Five or six labels a language, all in one run: runs are the
    // sampling unit, so each pattern's bound at Holm's level over six is
    // 1 - (0.05 / 6) = 0.9917 (one run, one trial). Proposed at a budget
    // above it only.
    let o = mine_in(
        &out,
        &[
            "datasets/multilingual.jsonl",
            "--config",
            "datasets/gate.toml",
            "--min-labelled",
            "5",
            "--max-regression-rate",
            "0.995",
            "--quiet",
        ],
    );
    expect_code(&o, 0);
    let props = csv_rows(&std::fs::read_to_string(out.join("proposals.csv")).unwrap());
    let langs: HashSet<&str> = props.iter().map(|p| p["language"].as_str()).collect();
    for l in ["it", "ja", "zh", "ru", "ko", "ar"] {
        assert!(langs.contains(l), "a pattern for {l}: {langs:?}");
    }
    assert!(props
        .iter()
        .all(|p| p["status"] == "proposed" && !p["pattern"].chars().any(|c| c.is_ascii_digit())));
    let toml_text = std::fs::read_to_string(out.join("proposals.toml")).unwrap();
    for p in critic_gate::internals::BUILTIN_ACK_PATTERNS {
        assert!(toml_text.contains(p), "keeps the built-in {p}");
    }
    // Replay: gate.toml's smart against the mined list.
    let gate = std::fs::read_to_string(root().join("datasets/gate.toml")).unwrap();
    let cfg = d.write("c.toml", format!("{gate}\n{toml_text}"));
    let r = d.path("r");
    expect_code(
        &replay_in(
            &r,
            &[
                "datasets/multilingual.jsonl",
                "--config",
                cfg.to_str().unwrap(),
                "--quiet",
            ],
        ),
        0,
    );
    let rows = csv_rows(&std::fs::read_to_string(r.join("decisions.csv")).unwrap());
    let fires = |v: &str| -> HashMap<String, bool> {
        rows.iter()
            .filter(|x| x["variant"] == v)
            .map(|x| (x["line"].clone(), x["fires"] == "true"))
            .collect()
    };
    let (smart, mined) = (fires("smart"), fires("mined"));
    let traffic: Vec<Value> = std::fs::read_to_string(root().join("datasets/multilingual.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let missed = csv_rows(&std::fs::read_to_string(out.join("missed.csv")).unwrap());
    let covered: HashSet<(String, String)> = missed
        .iter()
        .filter(|m| m["covered"] == "true")
        .map(|m| (m["language"].clone(), m["draft"].clone()))
        .collect();
    let mut newly = 0;
    for (line, smart_fires) in &smart {
        let t = &traffic[line.parse::<usize>().unwrap() - 1];
        let key = (
            t["language"].as_str().unwrap().to_string(),
            normalise(t["draft"].as_str().unwrap()),
        );
        match (smart_fires, mined[line]) {
            (true, false) => {
                newly += 1;
                assert!(
                    covered.contains(&key),
                    "line {line}: skipped but not a covered missed ack"
                );
            }
            (true, true) => assert!(
                !covered.contains(&key),
                "line {line}: covered but still fires"
            ),
            (false, fires) => assert!(!fires, "line {line}: the built-ins' skip is kept"),
        }
    }
    let covered_turns: u64 = missed
        .iter()
        .filter(|m| m["covered"] == "true")
        .map(|m| m["turns"].parse::<u64>().unwrap())
        .sum();
    assert_eq!(newly, covered_turns);
    for x in rows
        .iter()
        .filter(|x| x["variant"] == "mined" && x["fires"] == "false")
    {
        assert_eq!(
            x["reasons"], "trivial_ack",
            "line {}: no floor, no claim",
            x["line"]
        );
    }
}

/// "Sure, but ..." drafts are skips where the ack covers little: listed
/// lowest share first, with counts that agree with the replay.
#[test]
fn risky_skips_list_the_drafts_that_are_more_than_an_ack() {
    let d = Dir::new();
    let lines = [
        (
            "Sure, but refunds are no longer possible on this plan.",
            "revise",
        ),
        (
            "ok, but that plan ends soon and cannot be renewed",
            "approve",
        ),
        ("Thanks!", "approve"),
        ("got it", "approve"),
        (
            "Noted, though we cannot ship to that address anymore",
            "refuse",
        ),
    ];
    let traffic: String = lines
        .iter()
        .enumerate()
        .map(|(i, (d, v))| format!(
            "{{\"run_id\": \"r{i}\", \"turn\": 0, \"draft\": \"{d}\", \"critic\": {{\"verdict\": \"{v}\", \"reflection_latency_ms\": 1000.0, \"reflection_tokens_in\": 100, \"reflection_tokens_out\": 10}}}}\n"
        ))
        .collect();
    let input = d.write("risky.jsonl", traffic);
    let out = d.path("m");
    expect_code(&mine_in(&out, &[input.to_str().unwrap(), "--quiet"]), 0);
    let risky = csv_rows(&std::fs::read_to_string(out.join("risky_skips.csv")).unwrap());
    let drafts: Vec<&str> = risky.iter().map(|r| r["draft"].as_str()).collect();
    // Each holds a contrast or a negation outside its ack ("but",
    // "though", "cannot"): a share of 0, whatever its ack covers; equal
    // shares in the order of the traffic.
    assert_eq!(
        drafts,
        [lines[0].0, lines[1].0, lines[4].0],
        "lowest share first"
    );
    assert_eq!(risky[0]["matched"], "sure");
    for r in &risky {
        assert_eq!(r["ack_share"].parse::<f64>().unwrap(), 0.0, "{r:?}");
    }
    let m = json(&out.join("mine.json"));
    assert_eq!(m["risky"]["risky_skips"], 3);
    assert_eq!(m["risky"]["risky_labelled"], 3);
    assert_eq!(m["risky"]["risky_safety_regressions"], 2);
    // The replay agrees: every risky skip is a skip of smart.
    let r = d.path("r");
    expect_code(&replay_in(&r, &[input.to_str().unwrap(), "--quiet"]), 0);
    let rows = csv_rows(&std::fs::read_to_string(r.join("decisions.csv")).unwrap());
    let skips = rows
        .iter()
        .filter(|x| x["variant"] == "smart" && x["fires"] == "false")
        .count();
    assert_eq!(m["risky"]["skips"], skips as u64);
    for x in &risky {
        assert!(rows
            .iter()
            .any(|y| y["variant"] == "smart" && y["line"] == x["line"] && y["fires"] == "false"));
    }
}

/// Adding a claim turns every skip into a fire, on every committed dataset
/// and on 100,000 synthetic turns; the other transformations are counted.
#[test]
fn no_skip_survives_an_added_claim() {
    let d = Dir::new();
    let synth = synth(&d, "synth.jsonl", 100000, 5);
    let mut inputs: Vec<String> = std::fs::read_dir(root().join("datasets"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    inputs.sort();
    inputs.push(synth.to_string_lossy().into_owned());
    for (i, input) in inputs.iter().enumerate() {
        let out = d.path(&format!("m{i}"));
        let o = mine_in(&out, &[input, "--stress", "--skip-invalid", "--quiet"]);
        expect_code(&o, 0);
        let st = &json(&out.join("mine.json"))["stress"];
        assert_eq!(st["claim_survivors"], 0, "{input}: {st}");
        let tested = st["tested_skips"].as_u64().unwrap();
        for t in st["survived"].as_array().unwrap() {
            assert!(t[2].as_u64().unwrap() <= tested);
        }
    }
    let st = &json(&d.path(&format!("m{}", inputs.len() - 1)).join("mine.json"))["stress"];
    assert!(st["tested_skips"].as_u64().unwrap() > 10_000, "{st}");
}

/// Found by review: mine and calibrate wrote among foreign files, into a
/// folder holding their input, or beside a replay's summary.json; a
/// re-run without proposals left the earlier validation replay; a pattern
/// the gate cannot match (a zero-width non-joiner inside the phrase) was
/// proposed with 0 new skips.
#[test]
fn mine_and_calibrate_claim_their_folder_and_propose_only_what_skips() {
    let d = Dir::new();
    let foreign = d.write("j/notes.txt", "mine");
    let j = foreign.parent().unwrap();
    let multi = root().join("datasets/multilingual.jsonl");
    let multi = multi.to_str().unwrap();
    let o = mine_in(j, &[multi, "--quiet"]);
    expect_error(&o, 2, "holds no earlier critic-gate report");
    let o = run_in(
        j,
        &[
            "calibrate",
            multi,
            "--config",
            "datasets/sweep.toml",
            "--max-regression-rate",
            "0.5",
            "--quiet",
        ],
    );
    expect_error(&o, 2, "holds no earlier critic-gate report");
    let io = d.path("io");
    std::fs::create_dir_all(&io).unwrap();
    let input = io.join("t.jsonl");
    std::fs::copy(multi, &input).unwrap();
    expect_error(
        &mine_in(&io, &[input.to_str().unwrap(), "--quiet"]),
        2,
        "contains the input",
    );
    let rp = d.path("rp");
    expect_code(&replay_in(&rp, &["datasets/seed.jsonl", "--quiet"]), 0);
    expect_error(
        &mine_in(&rp, &["datasets/seed.jsonl", "--quiet"]),
        2,
        "holds a replay's report",
    );
    // A re-run with nothing to propose removes the earlier validation.
    let m = d.path("m");
    expect_code(
        &mine_in(&m, &[multi, "--config", "datasets/gate.toml", "--quiet"]),
        0,
    );
    assert!(m.join("validation/summary.json").is_file());
    let empty = d.write("empty.jsonl", "");
    expect_code(&mine_in(&m, &[empty.to_str().unwrap(), "--quiet"]), 0);
    assert!(!m.join("validation").exists());
    // Five acks whose phrase holds a zero-width non-joiner: normalising
    // splits the word there, and the pattern allows it back between the
    // halves, so it skips them; five labels are too few to propose it.
    let zwnj: String = (0..5)
        .map(|i| format!("{{\"run_id\": \"p{i}\", \"turn\": 0, \"language\": \"fa\", \"draft\": \"مرسی\\u200cها\", \"critic\": {{\"verdict\": \"approve\", \"reflection_tokens_in\": 10, \"reflection_tokens_out\": 1}}}}\n"))
        .collect();
    let fa = d.write("fa.jsonl", zwnj);
    let f = d.path("f");
    expect_code(&mine_in(&f, &[fa.to_str().unwrap(), "--quiet"]), 0);
    let props = csv_rows(&std::fs::read_to_string(f.join("proposals.csv")).unwrap());
    assert!(
        props.iter().any(|p| p["status"] == "held back"
            && p["new_skips"] == "5"
            && p["why"].contains("fewer than --min-labelled 30")),
        "{props:?}"
    );
    for p in &props {
        assert!(p["status"] == "held back" || p["new_skips"] != "0", "{p:?}");
    }
    let toml_text = std::fs::read_to_string(f.join("proposals.toml")).unwrap();
    for p in props.iter().filter(|p| p["status"] == "held back") {
        assert!(
            !toml_text.contains(&p["pattern"]),
            "a pattern held back is left out"
        );
    }
}

/// `--label` names the run in every table of mine (as in replay), and a
/// format mine does not write is refused, not ignored.
#[test]
fn mine_takes_the_label_and_refuses_other_formats() {
    let d = Dir::new();
    let out = d.path("m");
    // The dataset's skips are all plain acks: one risky skip added.
    let mut text = std::fs::read_to_string(root().join("datasets/multilingual.jsonl")).unwrap();
    text.push_str("{\"run_id\": \"x\", \"turn\": 0, \"draft\": \"Sure, but that plan ends soon.\", \"critic\": {\"verdict\": \"revise\"}}\n");
    let input = d.write("ml.jsonl", text);
    let o = mine_in(
        &out,
        &[input.to_str().unwrap(), "--label", "nightly", "--quiet"],
    );
    expect_code(&o, 0);
    for table in [
        "proposals.csv",
        "missed.csv",
        "risky_skips.csv",
        "risky_drafts.csv",
    ] {
        let rows = csv_rows(&std::fs::read_to_string(out.join(table)).unwrap());
        assert!(!rows.is_empty(), "{table} has rows");
        assert!(rows.iter().all(|r| r["run"] == "nightly"), "{table}");
    }
    let v = csv_rows(&std::fs::read_to_string(out.join("validation/summary.csv")).unwrap());
    assert!(
        v.iter().all(|r| r["run"] == "nightly"),
        "validation/summary.csv"
    );
    let o = mine_in(
        &d.path("p"),
        &["datasets/multilingual.jsonl", "--format", "parquet"],
    );
    expect_code(&o, 2);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--format"), "{err}");
    assert!(!d.path("p").exists(), "nothing written");
}

/// Found by review: mine proposed on no evidence (0 of 5, bound 0.45) and
/// flagged on any regression; en, en-GB and en-US were three rows; and
/// function words were offered as acks. On 100,000 synthetic turns it
/// proposes the languages the built-ins miss (Italian, Japanese) with
/// bounds within the budget; on the 50-turn dataset nothing. (synth's
/// labels are missing at random, as the test says; without saying so,
/// its worst case holds the Italian pattern back: below.)
#[test]
fn mine_decides_by_rates_with_enough_labels() {
    let d = Dir::new();
    let input = synth(&d, "s.jsonl", 100000, 1);
    // Region subtags and a function-word "ack" no pattern knows.
    let mut text = std::fs::read_to_string(&input).unwrap();
    for (i, lang) in ["it-IT", "it_CH", "IT"].iter().cycle().take(60).enumerate() {
        // An empty tag is no language: grouped by script, not as "".
        text.push_str(&format!("{{\"run_id\": \"e{i}\", \"turn\": 0, \"language\": \"\", \"draft\": \"Cheers mate\", \"critic\": {{\"verdict\": \"approve\"}}}}\n"));
        text.push_str(&format!("{{\"run_id\": \"x{i}\", \"turn\": 0, \"language\": \"{lang}\", \"draft\": \"Grazie mille!\", \"critic\": {{\"verdict\": \"approve\"}}}}\n"));
        text.push_str(&format!("{{\"run_id\": \"y{i}\", \"turn\": 0, \"language\": \"de\", \"draft\": \"Das.\", \"critic\": {{\"verdict\": \"approve\"}}}}\n"));
    }
    let input = d.write("s2.jsonl", text);
    let out = d.path("m");
    let o = mine_in(
        &out,
        &[input.to_str().unwrap(), "--assume-missing-at-random"],
    );
    expect_code(&o, 0);
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("ASSUMED"));
    let props = csv_rows(&std::fs::read_to_string(out.join("proposals.csv")).unwrap());
    let langs: Vec<&str> = props.iter().map(|p| p["language"].as_str()).collect();
    let mut unique = langs.clone();
    unique.dedup();
    assert_eq!(langs, unique, "each language once");
    assert!(!langs.contains(&""), "{langs:?}");
    let it = props
        .iter()
        .find(|p| p["language"] == "it")
        .expect("an Italian proposal");
    assert_eq!(it["status"], "proposed", "{it:?}");
    let bound: f64 = it["new_regression_rate_upper95"].parse().unwrap();
    assert!(
        bound <= 0.05 && it["new_labelled_skips"].parse::<u64>().unwrap() >= 30,
        "{it:?}"
    );
    assert!(
        props
            .iter()
            .all(|p| !p["phrases"].split(';').any(|ph| ph == "das")),
        "{props:?}"
    );
    let v = summary(&out.join("validation"));
    assert!(
        v["variants"]["proposal-it"].is_object(),
        "named by its proposal"
    );
    // Without the assumption a quarter of its new skips, unlabelled, are
    // each a regression in the worst case: held back, saying why.
    let strict = d.path("strict");
    expect_code(&mine_in(&strict, &[input.to_str().unwrap(), "--quiet"]), 0);
    let props = csv_rows(&std::fs::read_to_string(strict.join("proposals.csv")).unwrap());
    let it = props.iter().find(|p| p["language"] == "it").unwrap();
    assert_eq!(it["status"], "held back", "{it:?}");
    assert!(
        it["why"].contains("counted a regression (the worst case)"),
        "{it:?}"
    );
    // The 50-turn dataset supports nothing.
    let m = d.path("ml");
    expect_code(
        &mine_in(
            &m,
            &[
                "datasets/multilingual.jsonl",
                "--config",
                "datasets/gate.toml",
                "--quiet",
            ],
        ),
        0,
    );
    let props = csv_rows(&std::fs::read_to_string(m.join("proposals.csv")).unwrap());
    assert!(
        !props.is_empty() && props.iter().all(|p| p["status"] == "held back"),
        "{props:?}"
    );
    assert!(
        props
            .iter()
            .all(|p| p["why"].contains("fewer than --min-labelled 30")),
        "{props:?}"
    );
}

/// Found by review: a phrase was joined by `\s+` though normalising had
/// taken out the comma between its words, so "Cheers, mate!" (70 labelled
/// turns) was held back as skipping nothing new; "Cheers mate" was
/// proposed. Whatever stood between the words is allowed back.
#[test]
fn an_ack_with_punctuation_between_its_words_is_proposed() {
    let d = Dir::new();
    let text: String = (0..70)
        .map(|i| format!("{{\"run_id\": \"c{i}\", \"turn\": 0, \"language\": \"en\", \"draft\": \"Cheers, mate!\", \"critic\": {{\"verdict\": \"approve\"}}}}\n"))
        .collect();
    let input = d.write("c.jsonl", text);
    let out = d.path("m");
    expect_code(&mine_in(&out, &[input.to_str().unwrap(), "--quiet"]), 0);
    let props = csv_rows(&std::fs::read_to_string(out.join("proposals.csv")).unwrap());
    let p = props
        .iter()
        .find(|p| p["phrases"].split(';').any(|ph| ph == "cheers mate"))
        .expect("a cheers mate phrase");
    assert_eq!(p["status"], "proposed", "{p:?}");
    assert_eq!(p["new_skips"], "70", "{p:?}");
}

/// `--out /` wrote report files into `/`: a non-empty folder that is not
/// an earlier report is refused unless `--force`.
#[test]
fn a_foreign_non_empty_folder_is_refused_without_force() {
    let d = Dir::new();
    d.write("home/notes.txt", "mine");
    let home = d.path("home");
    let o = replay_in(&home, &["datasets/seed.jsonl", "--quiet"]);
    expect_error(&o, 2, "holds no earlier critic-gate report");
    assert_eq!(
        std::fs::read_dir(&home).unwrap().count(),
        1,
        "nothing written"
    );
    expect_code(
        &replay_in(&home, &["datasets/seed.jsonl", "--quiet", "--force"]),
        0,
    );
    assert_eq!(d.read("home/notes.txt"), "mine");
    // Now it is a report folder: a second run needs no --force.
    expect_code(&replay_in(&home, &["datasets/seed.jsonl", "--quiet"]), 0);
}

/// `mine` on traffic it can propose nothing for says why.
#[test]
fn mine_says_why_it_proposed_nothing() {
    let d = Dir::new();
    let out = d.path("m");
    let o = run(
        &[
            "mine",
            "datasets/seed.jsonl",
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    let s = stdout(&o);
    assert!(s.contains("note: nothing proposed: "), "{s}");
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("mine.json")).unwrap()).unwrap();
    assert!(
        m["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().starts_with("nothing proposed: ")),
        "{m}"
    );
}

/// The budget is `--max-regression-rate` (by default 0.05) or, with
/// `--budget-from-variant`, the mined variant's own bound: the flag alone
/// is taken (a flag's default is not a flag given), and both together
/// are refused, naming each.
#[test]
fn the_budget_is_a_rate_or_the_variants_own_bound() {
    let d = Dir::new();
    let base = [
        "datasets/multilingual.jsonl",
        "--quiet",
        "--min-labelled",
        "5",
    ];
    let family = |out: &std::path::Path| json(&out.join("mine.json"))["family"].clone();
    let own = d.path("own");
    let mut args = base.to_vec();
    args.push("--budget-from-variant");
    expect_code(&mine_in(&own, &args), 0);
    assert_eq!(
        family(&own)["budget_from"],
        "the mined variant's own upper 95% bound"
    );
    let rate = d.path("rate");
    expect_code(&mine_in(&rate, &base), 0);
    assert_eq!(family(&rate)["budget_from"], "--max-regression-rate");
    assert_eq!(family(&rate)["budget"], 0.05);
    let both = d.path("both");
    args.extend(["--max-regression-rate", "0.05"]);
    let o = mine_in(&both, &args);
    expect_code(&o, 2);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("give --max-regression-rate or --budget-from-variant, not both"),
        "{err}"
    );
    assert!(!both.exists(), "nothing written");
}
