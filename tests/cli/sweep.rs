//! `sweep`: a grid of gate settings in one pass, its frontier, and that a
//! sweep's variant decides exactly as the same settings replayed.

use std::collections::HashMap;

use crate::util::*;

fn gate_toml_with(sweep: &str) -> String {
    let base = std::fs::read_to_string(root().join("datasets/gate.toml")).unwrap();
    format!("{base}\n[sweep]\n{sweep}\n")
}

/// summary.csv's rows by variant, without the columns that name it.
fn figures(dir: &std::path::Path) -> HashMap<String, Vec<(String, String)>> {
    let rows = csv_rows(&std::fs::read_to_string(dir.join("summary.csv")).unwrap());
    rows.into_iter()
        .map(|r| {
            let name = r["variant"].clone();
            let mut f: Vec<(String, String)> = r
                .into_iter()
                // Whether it is the baseline (and production's gate), and
                // so what it is counted against, differs between a grid
                // point and the replay.
                .filter(|(k, _)| {
                    !matches!(
                        k.as_str(),
                        "run"
                            | "variant"
                            | "baseline"
                            | "production"
                            | "production_skips"
                            | "production_skips_unlabelled"
                            | "safety_regressions_vs_baseline"
                            | "saved_call_share"
                    )
                })
                .collect();
            f.sort();
            (name, f)
        })
        .collect()
}

#[test]
fn a_swept_variant_decides_as_the_same_settings_replayed() {
    let d = Dir::new();
    // Tags gate.toml's variants do not have (so the grid points are not
    // theirs, which a sweep leaves out), and no turn carries.
    let cfg = d.write(
        "s.toml",
        gate_toml_with(
            "metacognition_selective_gate = [false, true]\nmetacognition_sensitive_tags = [[\"pii\", \"unused\"]]",
        ),
    );
    let sweep = d.path("sweep");
    let args = [
        "sweep",
        "datasets/floors.jsonl",
        "--config",
        cfg.to_str().unwrap(),
        "--quiet",
    ];
    expect_code(&run_in(&sweep, &args), 0);
    let replay = d.path("replay");
    expect_code(
        &replay_in(
            &replay,
            &[
                "datasets/floors.jsonl",
                "--config",
                "datasets/gate.toml",
                "--quiet",
            ],
        ),
        0,
    );
    let (s, r) = (figures(&sweep), figures(&replay));
    assert_eq!(s.len(), 4, "{:?}", s.keys());
    assert_eq!(s["sel=off/tags=pii+unused"], r["legacy"]);
    assert_eq!(s["sel=on/tags=pii+unused"], r["smart"]);
    assert_eq!(s["legacy"], r["legacy"]);
    // The grid without the tags axis is legacy and smart again: left out.
    let cfg = d.write(
        "t.toml",
        gate_toml_with("metacognition_selective_gate = [false, true]"),
    );
    let again = d.path("again");
    let args = [
        "sweep",
        "datasets/floors.jsonl",
        "--config",
        cfg.to_str().unwrap(),
        "--quiet",
    ];
    expect_code(&run_in(&again, &args), 0);
    let s = figures(&again);
    assert_eq!(s.len(), 2, "{:?}", s.keys());
    let notes = summary(&again)["notes"].to_string();
    assert!(
        notes.contains("sweep variant sel=off is the same gate as legacy"),
        "{notes}"
    );
}

/// The frontier recomputed here from frontier.csv's own columns, and the
/// chart's points and line.
#[test]
fn the_frontier_marks_what_no_other_variant_beats_and_the_chart_shows_it() {
    let d = Dir::new();
    let out = d.path("o");
    let args = [
        "sweep",
        "datasets/seed.jsonl",
        "datasets/multilingual.jsonl",
        "datasets/floors.jsonl",
        "--config",
        "datasets/sweep.toml",
        "--quiet",
    ];
    expect_code(&run_in(&out, &args), 0);
    let rows = csv_rows(&std::fs::read_to_string(out.join("frontier.csv")).unwrap());
    // 50 grid points and the config's two variants, two of the points
    // being those two.
    assert_eq!(rows.len(), 50);
    assert!(rows
        .iter()
        .all(|r| r["savings_metric"] == "net_usd_per_1k_turns"));
    // Risk: harmful skips per 1,000 turns (the rate's bound, 1 without
    // labels, times the skip rate); a variant below the coverage floor is
    // never on the frontier and beats none.
    let point = |r: &HashMap<String, String>| {
        let bound = match r["safety_regression_rate_upper95"].as_str() {
            "" => 1.0,
            b => b.parse::<f64>().unwrap(),
        };
        let skip: f64 = r["new_skip_rate"].parse().unwrap();
        let covered = r["label_coverage"]
            .parse::<f64>()
            .map_or(true, |c| c >= 0.5);
        assert_eq!(r["below_coverage_floor"] == "true", !covered);
        let per_1k: f64 = r["harmful_skips_per_1k_turns_upper95"].parse().unwrap();
        assert!(
            (per_1k - bound * skip * 1000.0).abs() <= 1e-6 * per_1k.max(1.0),
            "{r:?}"
        );
        (r["savings"].parse::<f64>().unwrap(), per_1k, covered)
    };
    let pts: Vec<(f64, f64, bool)> = rows.iter().map(point).collect();
    let mut on = 0;
    for (r, &(s, b, covered)) in rows.iter().zip(&pts) {
        let beaten = !covered
            || pts
                .iter()
                .any(|&(s2, b2, c2)| c2 && ((s2 > s && b2 <= b) || (s2 >= s && b2 < b)));
        assert_eq!(r["on_frontier"] == "true", !beaten, "{}", r["variant"]);
        on += usize::from(!beaten);
        // Settings a gate does not look at are empty.
        let smart = r["selective_gate"] == "true";
        assert_eq!(
            r["confidence_threshold"].is_empty(),
            smart,
            "{}",
            r["variant"]
        );
        assert_eq!(r["read_only_tools"].is_empty(), !smart, "{}", r["variant"]);
    }
    assert!(on >= 1);
    let svg = std::fs::read_to_string(out.join("frontier.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(
        svg.matches("<circle").count(),
        50 + on,
        "one point per variant, and the frontier's again in red"
    );
    let red = svg
        .lines()
        .filter(|l| l.starts_with("<circle") && l.contains("fill=\"#D62728\""))
        .count();
    assert_eq!(red, on, "a frontier of one point is still drawn");
    let line = svg
        .lines()
        .find(|l| l.starts_with("<polyline") && l.contains("stroke=\"#D62728\""))
        .expect("the frontier's line");
    let points = line
        .split("points=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    assert_eq!(points.split_whitespace().count(), on, "{line}");
    assert!(svg.contains("harmful skips per 1,000 turns (upper 95% bound)"));
    assert!(svg.contains("net savings (USD per 1,000 turns)"));
    assert!(svg.contains("baseline legacy"));
}

#[test]
fn sweep_says_what_it_does_not_multiply_and_refuses_what_it_cannot_do() {
    let d = Dir::new();
    let out = d.path("o");
    let cfg = d.write(
        "s.toml",
        gate_toml_with(
            "metacognition_selective_gate = [true]\nmetacognition_confidence_threshold = [0.5, 0.7]\nread_only_tools = [[], [\"search_docs\"]]",
        ),
    );
    let o = run_in(
        &out,
        &[
            "sweep",
            "datasets/seed.jsonl",
            "--config",
            cfg.to_str().unwrap(),
        ],
    );
    expect_code(&o, 0);
    let err = stderr(&o);
    assert!(
        err.contains("metacognition_confidence_threshold is not multiplied with metacognition_selective_gate = true: the smart gate does not look at confidence"),
        "{err}"
    );
    let names: Vec<String> = csv_rows(&std::fs::read_to_string(out.join("frontier.csv")).unwrap())
        .into_iter()
        .map(|r| r["variant"].clone())
        .collect();
    // sel=on/ro=search_docs is gate.toml's smart: left out.
    assert_eq!(names, ["legacy", "smart", "sel=on/ro=none"]);
    let notes = summary(&out)["notes"].to_string();
    assert!(notes.contains("is not multiplied"), "{notes}");
    let many: Vec<String> = (0..40).map(|i| format!("[\"t{i}\"]")).collect();
    let big = d.write(
        "big.toml",
        gate_toml_with(&format!(
            "metacognition_confidence_threshold = [{}]\nmetacognition_sensitive_tags = [{}]",
            (0..30)
                .map(|i| format!("0.{i:02}"))
                .collect::<Vec<_>>()
                .join(", "),
            many.join(", ")
        )),
    );
    let out2 = d.path("big");
    expect_error(
        &run_in(
            &out2,
            &[
                "sweep",
                "datasets/seed.jsonl",
                "--config",
                big.to_str().unwrap(),
            ],
        ),
        2,
        "[sweep] makes 1200 variants; at most 1000",
    );
    assert!(!out2.exists());
    expect_error(
        &run_in(
            &out2,
            &[
                "sweep",
                "datasets/seed.jsonl",
                "--config",
                "datasets/gate.toml",
            ],
        ),
        2,
        "the config has no [sweep] table",
    );
}

/// check --markdown judges a sweep folder and a Parquet-only folder as
/// it does without --markdown.
#[test]
fn check_markdown_on_sweep_and_parquet_folders() {
    let d = Dir::new();
    let sweep = d.path("sweep");
    let o = run_in(
        &sweep,
        &["sweep", SEED, "--config", "datasets/sweep.toml", "--quiet"],
    );
    expect_code(&o, 0);
    let pq = replayed(
        &d,
        "pq",
        &[
            SEED,
            "--config",
            "datasets/gate.toml",
            "--format",
            "parquet",
        ],
    );
    // check DIR [--variant smart] --max-safety-regressions 0 [--markdown FILE]
    let check = |dir: &std::path::Path, variant: bool, md: Option<&std::path::Path>| {
        let mut args = vec!["check", dir.to_str().unwrap()];
        if variant {
            args.extend(["--variant", "smart"]);
        }
        args.extend(["--max-safety-regressions", "0"]);
        if let Some(md) = md {
            args.extend(["--markdown", md.to_str().unwrap()]);
        }
        run(&args, None)
    };
    for (i, dir) in [&sweep, &pq].into_iter().enumerate() {
        // Its own file: check --markdown appends.
        let md = d.path(&format!("verdict-{i}.md"));
        expect_code(&check(dir, true, None), 1);
        expect_code(&check(dir, true, Some(&md)), 1);
        let text = std::fs::read_to_string(&md).unwrap();
        assert!(text.contains("failed"), "{text}");
    }
    // The Parquet folder still lists its regressions.
    let md = d.path("verdict.md");
    let o = check(&pq, false, Some(&md));
    expect_code(&o, 1);
    assert!(
        std::fs::read_to_string(&md)
            .unwrap()
            .contains("Safety regressions"),
        "{}",
        std::fs::read_to_string(&md).unwrap()
    );
}

/// Commands that tell the user to pass --force take it.
#[test]
fn sweep_calibrate_and_mine_take_force() {
    let d = Dir::new();
    for c in ["sweep", "calibrate", "mine"] {
        let out = d.path(c);
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("mine.txt"), "not a report").unwrap();
        let mut args = vec![c, SEED];
        if c != "mine" {
            args.extend(["--config", "datasets/sweep.toml"]);
        }
        if c == "calibrate" {
            args.extend(["--max-regression-rate", "0.5"]);
        }
        args.push("--quiet");
        let o = run_in(&out, &args);
        expect_error(&o, 2, "--force");
        args.push("--force");
        let o = run_in(&out, &args);
        expect_code(&o, 0);
    }
    // mine's help offers no --format it refuses.
    let o = run(&["mine", "--help"], None);
    assert!(!stdout(&o).contains("--format"), "{}", stdout(&o));
}
