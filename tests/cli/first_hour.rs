//! A newcomer's first hour: the starter config, the built-in patterns
//! ready to paste, help that teaches, verdicts and sentences that cannot
//! be misread, and documents that stay inside the repository.

use crate::util::*;

/// `critic-gate ARGS` run from `dir`.
fn run_from(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    cmd().current_dir(dir).args(args).output().unwrap()
}

/// `init` writes a config that loads, is legacy against smart with
/// symfonic's defaults, and sets budgets `check` judges with; it never
/// replaces a file unless told to.
#[test]
fn init_writes_a_commented_config_that_replays_and_judges() {
    let d = Dir::new();
    let cfg = d.path("critic-gate.toml");
    let o = run_from(&d.path("."), &["init"]);
    expect_code(&o, 0);
    let text = std::fs::read_to_string(&cfg).unwrap();
    assert!(
        text.lines().filter(|l| l.starts_with('#')).count() > 20,
        "{text}"
    );
    // Against the defaults (no config): the same decisions.
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
    let plain = d.path("plain");
    expect_code(&replay_in(&plain, &["datasets/seed.jsonl", "--quiet"]), 0);
    for v in ["legacy", "smart"] {
        for k in ["fires", "skips", "safety_regressions"] {
            assert_eq!(
                summary(&out)["variants"][v][k],
                summary(&plain)["variants"][v][k],
                "{v} {k}"
            );
        }
    }
    // Its [check] budgets judge (the seed's one regression fails them).
    let o = run(
        &[
            "check",
            out.to_str().unwrap(),
            "--config",
            cfg.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 1);
    assert!(
        stdout(&o).contains("max_safety_regressions"),
        "{}",
        stdout(&o)
    );
    // The commented-out pattern list, uncommented, is the built-ins: the
    // same decisions on acks in all five languages.
    let listed: String = text
        .lines()
        .skip_while(|l| !l.starts_with("# metacognition_trivial_ack_patterns"))
        .take_while(|l| !l.starts_with("# ]"))
        .chain(["# ]"])
        .map(|l| format!("{}\n", l.trim_start_matches("# ")))
        .collect();
    assert!(listed.lines().count() == 7, "{listed}");
    let spelled = d.write(
        "spelled.toml",
        format!("[variants.smart]\nmetacognition_selective_gate = true\n{listed}"),
    );
    let a = d.path("a");
    expect_code(
        &replay_in(
            &a,
            &[
                "datasets/multilingual.jsonl",
                "--config",
                spelled.to_str().unwrap(),
                "--quiet",
            ],
        ),
        0,
    );
    let b = d.path("b");
    expect_code(
        &replay_in(&b, &["datasets/multilingual.jsonl", "--quiet"]),
        0,
    );
    assert_eq!(
        summary(&a)["variants"]["smart"]["skips"],
        summary(&b)["variants"]["smart"]["skips"]
    );
    // Never over a file unless --force.
    let o = run_from(&d.path("."), &["init"]);
    expect_error(&o, 2, "exists; give another file name, or --force");
    expect_code(&run_from(&d.path("."), &["init", "--force"]), 0);
    let o = run(&["init", "-"], None);
    expect_code(&o, 0);
    assert_eq!(stdout(&o), text);
}

/// `patterns` prints the built-ins as a list to paste, and says which
/// built-ins a variant's own list leaves out (the mistake that silently
/// lost the Spanish, German, French and Portuguese skips).
#[test]
fn patterns_prints_the_builtins_and_names_the_ones_a_list_drops() {
    let o = run(&["patterns"], None);
    expect_code(&o, 0);
    let out = stdout(&o);
    for lang in ["# en", "# es", "# de", "# fr", "# pt"] {
        assert!(out.contains(lang), "{out}");
    }
    let d = Dir::new();
    // Pasted with one more pattern, the list is valid TOML and keeps them.
    let extended = d.write(
        "extended.toml",
        format!(
            "[variants.smart]\nmetacognition_selective_gate = true\n{}",
            out.replace("\n]\n", "\n    \"\\\\b(grazie|perfetto)\\\\b\",\n]\n")
        ),
    );
    let o = run(&["patterns", "--config", extended.to_str().unwrap()], None);
    expect_code(&o, 0);
    assert!(
        stdout(&o).contains("its own list of 6, every built-in included"),
        "{}",
        stdout(&o)
    );
    let dropped = d.write(
        "dropped.toml",
        "[variants.smart]\nmetacognition_selective_gate = true\nmetacognition_trivial_ack_patterns = [\"\\\\b(grazie)\\\\b\"]\n[variants.legacy]\nmetacognition_selective_gate = false\n",
    );
    let o = run(&["patterns", "--config", dropped.to_str().unwrap()], None);
    expect_code(&o, 0);
    let s = stdout(&o);
    assert!(
        s.contains("WITHOUT the built-in patterns for en, es, de, fr, pt"),
        "{s}"
    );
    assert!(s.contains("variant legacy: the legacy gate"), "{s}");
}

/// Every command's help has an example, its exit codes and where the
/// reference is.
#[test]
fn every_commands_help_has_an_example_and_the_exit_codes() {
    let commands = [
        "replay",
        "sweep",
        "calibrate",
        "mine",
        "check",
        "diff",
        "explain",
        "derive",
        "import",
        "merge",
        "synth",
        "init",
        "patterns",
    ];
    for c in commands {
        let o = run(&[c, "--help"], None);
        expect_code(&o, 0);
        let h = stdout(&o);
        assert!(
            h.contains(&format!("critic-gate {c}")),
            "{c}: no example:\n{h}"
        );
        assert!(h.contains("Exit codes: 0"), "{c}: no exit codes:\n{h}");
        assert!(h.contains("Reference: docs/"), "{c}: no docs:\n{h}");
    }
    let top = stdout(&run(&["--help"], None));
    for c in commands {
        assert!(
            top.contains(&format!("  {c}")),
            "{c} missing from --help:\n{top}"
        );
    }
    assert!(top.contains("critic-gate init"), "{top}");
}

/// `explain` names the pattern that matched and the text it matched.
#[test]
fn explain_names_the_pattern_and_the_matched_text() {
    let o = run(
        &["explain", r#"{"run_id":"r","draft":"Vale, gracias."}"#],
        None,
    );
    expect_code(&o, 0);
    let s = stdout(&o);
    assert!(
        s.contains(r#"ack pattern 2 of 5 (built-in, es) matches "vale" in the lowered draft"#),
        "{s}"
    );
    let o = run(
        &[
            "explain",
            "--json",
            r#"{"run_id":"r","draft":"Vale, gracias."}"#,
        ],
        None,
    );
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let smart = v["variants"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["variant"] == "smart"))
        .cloned()
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(smart["ack"]["match"]["index"], 1);
    assert_eq!(smart["ack"]["match"]["text"], "vale");
    assert_eq!(smart["ack"]["match"]["builtin"], true);
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

/// A typo in a config key gets the key it probably meant.
#[test]
fn a_config_key_typo_gets_did_you_mean() {
    let d = Dir::new();
    let cfg = d.write(
        "c.toml",
        "[variants.smart]\nmetacognition_selective_gat = true\n",
    );
    let o = replay_in(
        &d.path("r"),
        &["datasets/seed.jsonl", "--config", cfg.to_str().unwrap()],
    );
    expect_error(&o, 2, "did you mean `metacognition_selective_gate`?");
    assert!(stderr(&o).contains("c.toml"), "{}", stderr(&o));
}

/// Counts read as English: "1 turn", "1 budget", "1 regression".
#[test]
fn counts_of_one_are_singular() {
    let d = Dir::new();
    let one = d.write(
        "one.jsonl",
        "{\"run_id\":\"r\",\"draft\":\"Got it, thanks!\"}\n",
    );
    let out = d.path("r");
    let o = replay_in(&out, &[one.to_str().unwrap()]);
    expect_code(&o, 0);
    assert!(
        stderr(&o).contains("critic-gate: 1 turn, 0 rejected (1 line)"),
        "{}",
        stderr(&o)
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("1 turn from"), "{md}");
    let o = run(&["check", out.to_str().unwrap(), "--min-turns", "1"], None);
    assert!(
        stdout(&o).ends_with("check passed: 2 budgets\n"),
        "{}",
        stdout(&o)
    );
    let o = run(&["check", out.to_str().unwrap(), "--min-turns", "2"], None);
    assert!(
        stdout(&o).ends_with("check FAILED: 1 of 2 budgets\n"),
        "{}",
        stdout(&o)
    );
}

/// report.md opens with a bottom line per candidate and, on traffic too
/// small to conclude anything, says how many labels it would take; on
/// enough traffic, no such warning.
#[test]
fn report_md_opens_with_a_bottom_line_and_a_small_sample_warning() {
    let md = std::fs::read_to_string(root().join("reports/seed/report.md")).unwrap();
    let bottom = md.find("## Bottom line").expect("a bottom line");
    assert!(bottom < md.find("## Every variant").unwrap());
    assert!(
        md.contains("- **`smart`** instead of `legacy`: saves 10 critic calls (50.0% of `legacy`'s) and adds 0 over 20 turns, $0.48 net; of its 10 new skips (turns `legacy` fires on), 10 have a critic verdict and the critic revised or refused 1"),
        "{md}"
    );
    assert!(
        md.contains("**Too few labels to conclude.** `smart` has 10 labelled new skips"),
        "{md}"
    );
    assert!(
        md.contains("takes at least 59, and an 80% chance of one when the true rate is 2.5% takes about 434."),
        "{md}"
    );
    // 2,000 synthetic turns have hundreds of labelled skips: no warning.
    let d = Dir::new();
    let t = synth(&d, "t.jsonl", 2000, 3);
    let out = d.path("r");
    expect_code(&replay_in(&out, &[t.to_str().unwrap(), "--quiet"]), 0);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## Bottom line"), "{md}");
    assert!(!md.contains("Too few labels"), "{md}");
}

/// A price note says exactly which dollar figures are missing: a run
/// whose unpriced model only reviewed fired turns still reports its
/// saved dollars.
#[test]
fn the_price_note_does_not_contradict_the_dollars() {
    let d = Dir::new();
    let cfg = d.write(
        "c.toml",
        "[cost]\ndefault_model = \"opus\"\n[cost.models.opus]\nusd_per_mtok_in = 15.0\nusd_per_mtok_out = 75.0\n",
    );
    let ev = |model: &str, verdict: &str| {
        format!("{{\"verdict\":\"{verdict}\",\"model\":\"{model}\",\"reflection_tokens_in\":1000,\"reflection_tokens_out\":100,\"reflection_latency_ms\":900}}")
    };
    let lines = [
        format!("{{\"run_id\":\"a\",\"draft\":\"Got it, thanks!\",\"critic\":{}}}", ev("opus", "approve")),
        format!("{{\"run_id\":\"b\",\"draft\":\"Your order 1234 shipped on May 3 and arrives Friday.\",\"critic\":{}}}", ev("haiku", "approve")),
    ];
    let t = d.write("t.jsonl", lines.join("\n") + "\n");
    let out = d.path("r");
    let o = replay_in(
        &out,
        &[t.to_str().unwrap(), "--config", cfg.to_str().unwrap()],
    );
    expect_code(&o, 0);
    let s = summary(&out);
    assert!(
        s["variants"]["smart"]["saved_usd"].as_f64().is_some(),
        "{s}"
    );
    let note = s["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .find(|n| n.starts_with("no price for critic model(s) haiku"))
        .unwrap_or_else(|| panic!("{s}"))
        .to_string();
    assert!(note.contains("figures without them are"), "{note}");
    assert!(!note.ends_with("dollars are not reported"), "{note}");
}

/// No document a user reads points outside the repository (the shared
/// specs a clone does not have), and every relative link resolves.
#[test]
fn no_document_points_outside_the_repository() {
    let mut files = vec![root().join("README.md")];
    for dir in ["docs", "tests/conformance", "crates/core/tests/conformance"] {
        if let Ok(rd) = std::fs::read_dir(root().join(dir)) {
            files.extend(
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "md")),
            );
        }
    }
    let sources = walk(&root().join("src"))
        .into_iter()
        .chain(walk(&root().join("crates/core/src")));
    files.extend(sources);
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, line) in text.lines().enumerate() {
            if line.contains("../shared")
                || line.contains("shared/spec")
                || line.contains("shared/conformance")
            {
                bad.push(format!("{}:{}: {line}", f.display(), i + 1));
            }
        }
        if f.extension().is_some_and(|x| x == "md") {
            for link in markdown_links(&text) {
                let target = link.split('#').next().unwrap_or_default();
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let p = f.parent().unwrap().join(target);
                let inside = std::fs::canonicalize(&p)
                    .map(|c| c.starts_with(std::fs::canonicalize(root()).unwrap()))
                    .unwrap_or(false);
                if !inside {
                    bad.push(format!(
                        "{}: link {link} does not resolve inside the repository",
                        f.display()
                    ));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Every `.rs` file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

/// The targets of `[text](target)` links.
fn markdown_links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        match after.find(')') {
            Some(j) => {
                out.push(after[..j].to_string());
                rest = &after[j..];
            }
            None => break,
        }
    }
    out
}

/// docs/ci.md's budget table, written for people, names every budget
/// `check` has (the declaration is `budgets::BUDGETS`): a new budget
/// cannot go undocumented.
#[test]
fn the_ci_guide_documents_every_budget() {
    let doc = std::fs::read_to_string(root().join("docs/ci.md")).unwrap();
    for b in critic_gate::budgets::BUDGETS {
        assert!(
            doc.contains(&format!("| `--{} ", b.long)),
            "docs/ci.md has no row for --{}",
            b.long
        );
    }
}

/// Found by the newcomer trial: a line written with another recording's
/// names (`intent`, `tool_calls`) was replayed without a word, its floors
/// silently gone. It is now a warning naming the line, in summary.json too.
#[test]
fn a_misnamed_field_is_warned_about() {
    let d = Dir::new();
    let t = d.write(
        "t.jsonl",
        "{\"run_id\":\"a\",\"draft\":\"ok\",\"intent\":\"action\",\"tool_calls\":[{\"name\":\"refund\"}]}\n{\"run_id\":\"b\",\"draft\":\"ok\",\"tenant\":\"acme\"}\n",
    );
    let out = d.path("r");
    let o = replay_in(&out, &[t.to_str().unwrap()]);
    expect_code(&o, 0);
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "warning: 1 × misnamed_field (first at {}:1)",
            t.display()
        )),
        "{err}"
    );
    assert!(err.contains("intent for intent_verdict"), "{err}");
    let s = summary(&out);
    assert_eq!(
        s["warnings"]["misnamed_field"]["count"], 1,
        "{}",
        s["warnings"]
    );
    assert_eq!(s["unknown_fields"], 3);
    let notes = s["notes"].to_string();
    assert!(
        notes.contains("`intent` (the format's `intent_verdict`?), `tool_calls` (the format's `tool_calls_this_turn`?)"),
        "{notes}"
    );
    assert!(!notes.contains("tenant"), "{notes}");
    let o = run(
        &[
            "explain",
            r#"{"run_id":"a","draft":"ok","intent":"action"}"#,
        ],
        None,
    );
    assert!(
        stdout(&o).contains(r#"note: key "intent" is not the format's and is ignored: did you mean "intent_verdict"?"#),
        "{}",
        stdout(&o)
    );
}

/// `-` (or no file) typed on a terminal says the command waits for
/// standard input instead of seeming to hang; piped input is not told so.
/// `script` (util-linux) gives the command a terminal; Ctrl-D ends it.
#[test]
fn reading_a_terminal_says_it_is_waiting() {
    let bin = env!("CARGO_BIN_EXE_critic-gate");
    let waiting = "reading standard input, which is a terminal";
    let d = Dir::new();
    let replay = format!("replay - --quiet --out {}", d.path("r").display());
    for command in ["explain", replay.as_str()] {
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                &format!("(sleep 0.5; printf '\\004') | script -qec '{bin} {command}' /dev/null"),
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("sh and script (util-linux) run");
        let start = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            assert!(
                start.elapsed().as_secs() < 60,
                "{command}: still waiting after Ctrl-D"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let o = child.wait_with_output().unwrap();
        let text =
            String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
        assert!(text.contains(waiting), "{command}: {text}");
    }
    let o = run(&["explain"], Some(b"{\"run_id\":\"r\",\"draft\":\"ok\"}\n"));
    expect_code(&o, 0);
    assert!(!stderr(&o).contains(waiting), "{}", stderr(&o));
}

/// Found by an adversarial review: `init` over a folder or into a `.json`
/// name, and `patterns` printing a list that does not compile.
#[test]
fn init_and_patterns_refuse_what_would_not_work() {
    let d = Dir::new();
    let o = run(&["init", d.path(".").to_str().unwrap(), "--force"], None);
    expect_error(&o, 2, "is a folder: give a file name");
    let o = run(&["init", d.path("c.json").to_str().unwrap()], None);
    expect_error(&o, 2, "give a name ending .toml");
    assert!(!d.path("c.json").exists());
    // Nothing is left beside the file it writes.
    expect_code(&run(&["init", d.path("c.toml").to_str().unwrap()], None), 0);
    let names: Vec<String> = std::fs::read_dir(d.path("."))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["c.toml"]);
    let bad = d.write(
        "bad.toml",
        "[variants.smart]\nmetacognition_selective_gate = true\nmetacognition_trivial_ack_patterns = [\"ok\", \"(unclosed\"]\n",
    );
    let o = run(&["patterns", "--config", bad.to_str().unwrap()], None);
    expect_error(
        &o,
        2,
        "bad.toml:3: variant smart: metacognition_trivial_ack_patterns[1]",
    );
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
}

/// A variant name with a `|` or a backtick does not break report.md's
/// tables or `check --markdown`'s.
#[test]
fn odd_variant_names_keep_markdown_tables_whole() {
    let d = Dir::new();
    let cfg = d.write(
        "c.toml",
        "[variants.legacy]\nmetacognition_selective_gate = false\n[variants.\"a|b`\"]\nmetacognition_selective_gate = true\n[check]\nmax_safety_regressions = 0\n",
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
    let md_file = d.path("v.md");
    let o = run(
        &[
            "check",
            out.to_str().unwrap(),
            "--config",
            cfg.to_str().unwrap(),
            "--markdown",
            md_file.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 1);
    for text in [
        std::fs::read_to_string(out.join("report.md")).unwrap(),
        std::fs::read_to_string(&md_file).unwrap(),
    ] {
        // Every row of a table has as many cells as its header.
        let mut cells = None;
        for line in text.lines() {
            if !line.starts_with('|') {
                cells = None;
                continue;
            }
            let n = line.replace("\\|", "").matches('|').count();
            match cells {
                None => cells = Some(n),
                Some(c) => assert_eq!(n, c, "{line}\n{text}"),
            }
        }
        assert!(text.contains("a\\|b\\`"), "{text}");
    }
}
