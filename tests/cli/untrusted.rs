//! Tenants' content is untrusted (#47): a value from traffic, or a file
//! name, never writes a line of its own into a CI log or a rendered
//! report.

use std::path::Path;

use crate::util::*;

/// What would open a line of its own: a GitHub Actions command, a
/// Markdown heading claiming success, and an escape sequence.
const HOSTILE: &str =
    "m\n::error title=critic-gate::all budgets passed\n# ✅ release approved\u{1b}[31m";

/// Found by review (#47 items 13 and 14): an unpriced `critic.model` was
/// printed raw in a note on stderr and in report.md, and a source file's
/// name kept its newlines in report.md and `check --markdown`, so traffic
/// could post "all budgets passed" into the job log and a "✅" heading
/// into a pull request. Each is written on its line, escaped.
#[cfg(unix)]
#[test]
fn traffic_cannot_write_a_line_of_its_own() {
    let d = Dir::new();
    let model = serde_json::to_string(HOSTILE).unwrap();
    let line = format!(
        "{{\"run_id\":\"r\",\"draft\":\"Got it, thanks!\",\"critic\":{{\"ran\":true,\"verdict\":\"approve\",\"reflection_tokens_in\":300,\"reflection_tokens_out\":40,\"model\":{model}}}}}\n"
    );
    let traffic = d.write("t\n# ✅ critic-gate check: passed\n.jsonl", line);
    let out = d.path("out");
    let o = run(
        &[
            "replay",
            traffic.to_str().unwrap(),
            "--config",
            root().join("datasets/gate.toml").to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    let err = stderr(&o);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let comment = d.path("comment.md");
    let o = run(
        &[
            "check",
            out.to_str().unwrap(),
            "--max-safety-regressions",
            "0",
            "--markdown",
            comment.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    let comment = std::fs::read_to_string(&comment).unwrap();
    for (what, text) in [
        ("stderr", &err),
        ("report.md", &md),
        ("check --markdown", &comment),
    ] {
        assert!(!text.contains('\u{1b}'), "{what}: an escape sequence");
        for l in text.lines() {
            assert!(!l.starts_with("::"), "{what}: {l}");
            assert!(
                !l.contains("release approved") || !l.trim_start().starts_with('#'),
                "{what}: {l}"
            );
            assert!(
                !l.contains("check: passed") || !l.trim_start().starts_with('#'),
                "{what}: {l}"
            );
        }
    }
    // The model is named, quoted as JSON.
    assert!(
        err.contains("no price for critic model(s) \"m\\n::error"),
        "{err}"
    );
}

/// Found by review (#47 item 9): `diff` opened flips.csv and
/// metrics_diff.csv with `File::create`, following a link planted at
/// either name and truncating its target outside the folder. Each is now
/// written beside and renamed over the name: the link is replaced, the
/// file it pointed to untouched.
#[cfg(unix)]
#[test]
fn diff_writes_through_no_planted_link() {
    let d = Dir::new();
    let (old, new) = (d.path("old"), d.path("new"));
    for out in [&old, &new] {
        let o = replay_in(
            out,
            &[
                "datasets/seed.jsonl",
                "--config",
                "datasets/gate.toml",
                "--quiet",
            ],
        );
        expect_code(&o, 0);
    }
    let mut victims = Vec::new();
    for name in ["flips.csv", "metrics_diff.csv"] {
        let victim = d.write(&format!("victim-{name}"), "precious\n");
        std::os::unix::fs::symlink(&victim, new.join(name)).unwrap();
        victims.push((name, victim));
    }
    let o = run(
        &["diff", old.to_str().unwrap(), new.to_str().unwrap()],
        None,
    );
    expect_code(&o, 0);
    for (name, victim) in victims {
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "precious\n",
            "{name}"
        );
        let m = std::fs::symlink_metadata(new.join(name)).unwrap();
        assert!(m.is_file(), "{name} is a file of its own");
        assert!(
            std::fs::read_to_string(new.join(name))
                .unwrap()
                .starts_with("run,"),
            "{name}"
        );
    }
}

/// #47 item 8: a `charts` link planted in a report folder made `replay`
/// write its chart files into the link's target, and a later run remove
/// files there. A report subfolder that is a link (or not a folder) is
/// refused before anything moves: exit 2 naming it, the target untouched,
/// the folder's earlier report as it was.
#[test]
fn a_planted_charts_link_is_refused_not_followed() {
    let d = Dir::new();
    let out = d.path("r");
    let args = [
        "datasets/seed.jsonl",
        "--config",
        "datasets/gate.toml",
        "--quiet",
    ];
    expect_code(&replay_in(&out, &args), 0);
    let before = std::fs::read_to_string(out.join("summary.json")).unwrap();
    let target = d.path("elsewhere");
    std::fs::create_dir(&target).unwrap();
    let kept = d.write("elsewhere/floors.svg", "precious\n");
    std::fs::remove_dir_all(out.join("charts")).unwrap();
    std::os::unix::fs::symlink(&target, out.join("charts")).unwrap();
    let o = replay_in(&out, &args);
    expect_error(&o, 2, "charts");
    assert!(stderr(&o).contains("link"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "precious\n");
    assert_eq!(
        std::fs::read_dir(&target).unwrap().count(),
        1,
        "nothing written there"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("summary.json")).unwrap(),
        before
    );
    assert!(
        staging_folders(&out).is_empty(),
        "{:?}",
        staging_folders(&out)
    );
    // A sweep into the folder removes a replay's charts it does not
    // write: never through the link (the old build removed the target's).
    let o = run_from(
        root(),
        &[
            "sweep",
            "datasets/seed.jsonl",
            "--config",
            "datasets/sweep.toml",
            "--quiet",
            "--force",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    expect_code(&o, 0);
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "precious\n");
}

/// #47 item 2: tallies keyed by traffic text had no cap: 20,000 distinct
/// 10 KB languages, critic models and finding kinds (a 1 MB `.gz`) reached
/// 1.0-1.25 GB and wrote 200 MB into the reports. A language past 64
/// bytes is left out and counted (`label_unreadable`), an unpriced model
/// is named cut among the first ten, a finding kind symfonic does not
/// make is `(other)`: 2,000 such lines of 30 KB each give a summary.json
/// under 64 KB (20 MB on the previous build) and reports under 1 MB.
#[cfg(unix)]
#[test]
fn tallies_keyed_by_traffic_text_stay_small() {
    let d = Dir::new();
    let mut text = String::new();
    for i in 0..2000 {
        let big = |c: &str| format!("{c}{i}{}", "x".repeat(10_000));
        let line = serde_json::json!({
            "run_id": format!("r{i}"),
            "draft": "Got it, thanks!",
            "language": big("l"),
            "fabrication_findings": [{"kind": big("k")}],
            "critic": {"verdict": "approve", "model": big("m"), "reflection_tokens_in": 10, "reflection_tokens_out": 2},
        });
        text.push_str(&line.to_string());
        text.push('\n');
    }
    let input = d.write("t.jsonl", text);
    let out = d.path("r");
    let config = d.write(
        "c.toml",
        "[cost.models.opus]\nusd_per_mtok_in = 15.0\nusd_per_mtok_out = 75.0\n",
    );
    let (code, mib, err) = run_measured(&[
        "replay",
        input.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let bytes = std::fs::metadata(out.join("summary.json")).unwrap().len();
    assert!(bytes < 64 << 10, "summary.json: {bytes} bytes");
    let s = summary(&out);
    assert_eq!(
        s["warnings"]["label_unreadable"]["count"], 2000,
        "{}",
        s["warnings"]
    );
    assert_eq!(s["fabrication_kinds"], serde_json::json!({"(other)": 2000}));
    let notes = s["notes"].to_string();
    assert!(notes.contains("and more"), "{notes}");
    // The peak is mostly the reading's blocks (87 MiB alone, more under a
    // loaded machine's read-ahead; 175 MiB on the previous build): the
    // reports' size is what grew with the values.
    eprintln!("2,000 lines of distinct 10 KB labels: peak {mib} MiB");
    for f in ["skips.csv", "report.md"] {
        let n = std::fs::metadata(out.join(f)).unwrap().len();
        assert!(n < 1 << 20, "{f}: {n} bytes");
    }
}

/// `text` written to `t.jsonl` in `d` and replayed quietly into `d/r`,
/// which must succeed: the report folder and the peak memory in MiB.
#[cfg(unix)]
fn replay_measured(d: &Dir, text: &str) -> (std::path::PathBuf, u64) {
    let input = d.write("t.jsonl", text);
    let out = d.path("r");
    let (code, mib, err) = run_measured(&[
        "replay",
        input.to_str().unwrap(),
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    (out, mib)
}

/// #47 item 1: every safety regression was kept whole until the end, its
/// draft, revised draft and refusal message uncut (100 regressions with
/// 2 MB revised drafts peaked at 1.0 GB). Each text is kept cut at 4 KiB,
/// as the scope is: 60 regressions with 1 MB revised drafts write a
/// regressions.csv under 1 MB, each revised draft ending in `…`.
#[cfg(unix)]
#[test]
fn a_regressions_texts_are_kept_cut() {
    let d = Dir::new();
    let mut text = String::new();
    let huge = "y".repeat(1 << 20);
    for i in 0..60 {
        let line = serde_json::json!({
            "run_id": format!("r{i}"),
            "draft": "Got it, thanks!",
            "critic": {"verdict": "revise", "revised_draft": huge, "refusal_message": huge},
        });
        text.push_str(&line.to_string());
        text.push('\n');
    }
    let (out, mib) = replay_measured(&d, &text);
    let csv = std::fs::read_to_string(out.join("regressions.csv")).unwrap();
    assert!(csv.len() < 1 << 20, "regressions.csv: {} bytes", csv.len());
    let rows = csv_rows(&csv);
    assert_eq!(rows.len(), 60);
    assert!(rows
        .iter()
        .all(|r| r["revised_draft"].ends_with('…') && r["revised_draft"].len() <= 4096 + 3));
    eprintln!("60 regressions of 1 MB texts: peak {mib} MiB");
}

/// #47 item 15: an output folder that is a link to a missing folder said
/// only "File exists". It says what it is, and nothing is created at the
/// link's target.
#[test]
fn a_dangling_out_link_says_what_it_is() {
    let d = Dir::new();
    let out = d.path("r");
    let target = d.path("gone");
    std::os::unix::fs::symlink(&target, &out).unwrap();
    let o = replay_in(&out, &["datasets/seed.jsonl", "--quiet"]);
    expect_error(&o, 2, "symbolic link");
    assert!(!target.exists());
}

/// #47 item 3: `--from otlp` held a pretty-printed source line by line,
/// each a string of its own, until its end: a 1.8 KB `.zst` of short lines
/// reached 1.7 GB. A pretty-printed source is held to four times
/// `--max-line-bytes` (at least 64 MiB), each line counted with what
/// keeping it costs (1.2 GB for these); past
/// that the rest of the source is refused (one reject saying why, its
/// first 4 KiB kept) and the replay goes on within a few hundred MiB.
#[cfg(unix)]
#[test]
fn a_pretty_printed_trace_is_held_to_a_budget() {
    let d = Dir::new();
    // 12 million lines of two bytes: 24 MB, about 1.2 GB held as lines.
    let mut text = String::from("{\n");
    text.push_str(&" 1\n".repeat(12_000_000));
    let input = d.write("t.json", text);
    let out = d.path("r");
    let (code, mib, err) = run_measured(&[
        "replay",
        input.to_str().unwrap(),
        "--from",
        "otlp",
        "--skip-invalid",
        "--max-line-bytes",
        "1048576",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    eprintln!("a pretty-printed source of 12 million lines: exit {code:?}, peak {mib} MiB");
    assert!(mib < 300, "peak {mib} MiB: {err}");
    let rejects = rejects(&out);
    assert!(
        rejects.iter().any(|r| r["reason"]
            .as_str()
            .unwrap_or("")
            .contains("pretty-printed")),
        "{rejects:?} {err}"
    );
}

/// #47 item 4: segments kept up to 256 scope dimensions x 100,000 values
/// each: 5,000 lines with 256 distinct scope values each took 1.4 GB. The
/// segment cells (values x variants) of all dimensions together are held
/// to a budget; past it new values are counted under `(other)` and the
/// dimensions noted, and the replay stays within a few hundred MiB.
#[cfg(unix)]
#[test]
fn segments_are_held_to_one_budget_across_dimensions() {
    let d = Dir::new();
    let mut text = String::new();
    for i in 0..5000 {
        let scope: serde_json::Map<String, serde_json::Value> = (0..256)
            .map(|k| (format!("k{k}"), serde_json::json!(format!("v{i}-{k}"))))
            .collect();
        let line = serde_json::json!({"run_id": format!("r{i}"), "draft": "ok", "scope": scope});
        text.push_str(&line.to_string());
        text.push('\n');
    }
    let (out, mib) = replay_measured(&d, &text);
    eprintln!("5,000 lines of 256 distinct scope values: peak {mib} MiB");
    assert!(mib < 500, "peak {mib} MiB");
    let notes = summary(&out)["notes"].to_string();
    assert!(
        notes.contains("segment cells") && notes.contains("scope.k"),
        "{notes}"
    );
}

/// A copy of report folder `main` (its marker too) into `into`, with
/// `other`'s decisions.csv in place of its own.
fn mix_decisions(main: &Path, other: &Path, into: &Path) {
    for f in files_in(main) {
        if let Some(parent) = into.join(&f).parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        let from = if f == "decisions.csv" { other } else { main };
        std::fs::copy(from.join(&f), into.join(&f)).unwrap();
    }
}

/// #47 item 11: a report folder is locked for a run's writes and its
/// marker is a manifest of the files the run moved into place. A run
/// killed during its moves, or a file of another run beside this one's,
/// once read as one replay (`check`, exit 0); a second run into the same
/// folder wrote among the first's files.
#[cfg(unix)]
#[test]
fn a_folder_never_passes_as_one_run_when_it_mixes_two() {
    let d = Dir::new();
    let a = replayed(&d, "a", &[SEED]);
    let seed = std::fs::read_to_string(root().join(SEED)).unwrap();
    let renamed = d.write("b.jsonl", seed.replace("\"run_id\":\"", "\"run_id\":\"b-"));
    let b = replayed(&d, "b", &[renamed.to_str().unwrap()]);
    let check = |dir: &Path| {
        run(
            &["check", dir.to_str().unwrap(), "--min-skip-rate", "0"],
            None,
        )
    };
    expect_code(&check(&a), 0);
    // Another run's decisions beside this one's summary.
    let mixed = d.path("mixed");
    mix_decisions(&a, &b, &mixed);
    expect_error(&check(&mixed), 2, "comes from another run");
    // Another run's file of the same size (a tenant renamed to a name of
    // the same length): the manifest holds contents, not only sizes (the
    // review of 34c2f5c had check pass such a folder).
    let plain = d.write("p.jsonl", seed.clone());
    let swapped = d.write("q.jsonl", seed.replacen("\"acme\"", "\"acne\"", 1));
    let p = replayed(&d, "p", &[plain.to_str().unwrap(), "--label", "s"]);
    let q = replayed(&d, "q", &[swapped.to_str().unwrap(), "--label", "s"]);
    let same = d.path("same");
    mix_decisions(&p, &q, &same);
    let bytes = |dir: &Path| std::fs::read(dir.join("decisions.csv")).unwrap();
    assert_eq!(bytes(&p).len(), bytes(&q).len());
    assert_ne!(bytes(&p), bytes(&q));
    expect_error(&check(&same), 2, "other content");
    // A run stopped while it moved its files leaves the marker saying so.
    let marker = a.join(".critic-gate-report");
    let complete = std::fs::read_to_string(&marker).unwrap();
    std::fs::write(
        &marker,
        complete.replace("report: complete", "report: moving files into place"),
    )
    .unwrap();
    expect_error(&check(&a), 2, "stopped while it moved");
    expect_error(
        &run(&["diff", a.to_str().unwrap(), b.to_str().unwrap()], None),
        2,
        "stopped while it moved",
    );
    // The next replay into the folder makes it whole again.
    expect_code(&replay_in(&a, &[SEED, "--quiet"]), 0);
    expect_code(&check(&a), 0);
    // While another run holds the folder, a replay into it is refused and
    // check waits for nothing half-moved.
    let lock = std::fs::File::open(&a).unwrap();
    lock.try_lock().unwrap();
    expect_error(
        &replay_in(&a, &[SEED, "--quiet"]),
        2,
        "another critic-gate run",
    );
    expect_error(&check(&a), 2, "is writing its reports");
    drop(lock);
    expect_code(&check(&a), 0);
}

/// #47's memory bound, path by path: one input that carries every
/// hazard the review found (long run ids and drafts of braces, revised
/// drafts of 64 KiB, a new scope key, language, finding kind and critic
/// model on every line) through replay, a 50-variant sweep, two shards
/// merged, and check; and chats of long tool results and replies of
/// braces and identifiers through import. Each stays under the 1 GiB docs/performance.md
/// states (peaks are printed; they vary with the machine's load).
#[cfg(unix)]
#[test]
fn every_path_stays_within_the_stated_memory_budget() {
    let d = Dir::new();
    let shard = |name: &str, from: usize| {
        let mut text = String::new();
        for i in from..from + 500 {
            let scope: serde_json::Map<String, serde_json::Value> = (0..8)
                .map(|k| (format!("k{i}-{k}"), serde_json::json!(format!("v{i}"))))
                .collect();
            let line = serde_json::json!({
                "run_id": format!("{i}-{}", "r".repeat(4096)),
                // Half acks the smart gate skips (regressions, with their
                // revised drafts), half replies of braces (the clean-up).
                "draft": if i % 2 == 0 { "Got it, thanks!".to_string() } else { format!("Sure {}", "{".repeat(8192)) },
                "scope": scope,
                "language": format!("l{i:062}"),
                // A finding is a floor: on the replies of braces only.
                "fabrication_findings": if i % 2 == 0 { serde_json::json!([]) } else { serde_json::json!([{"kind": format!("k{i}")}]) },
                "critic": {"verdict": "revise", "revised_draft": "y".repeat(64 << 10),
                           "model": format!("m{i}"), "reflection_tokens_in": 10, "reflection_tokens_out": 2},
            });
            text.push_str(&line.to_string());
            text.push('\n');
        }
        d.write(name, text).display().to_string()
    };
    let (a, b) = (shard("a.jsonl", 0), shard("b.jsonl", 500));
    let measured = |what: &str, args: &[&str]| {
        let (code, mib, err) = run_measured(args);
        assert!(matches!(code, Some(0 | 1)), "{what}: {err}");
        eprintln!("{what}: peak {mib} MiB");
        assert!(mib < 1024, "{what}: peak {mib} MiB");
    };
    let out = d.path("replay").display().to_string();
    measured("replay", &["replay", &a, &b, "--quiet", "--out", &out]);
    let s = summary(Path::new(&out));
    assert_eq!(s["variants"]["smart"]["all_skips_safety_regressions"], 500);
    let sweep = root().join("datasets/sweep.toml").display().to_string();
    let swept = d.path("sweep").display().to_string();
    measured(
        "sweep of 50 variants",
        &[
            "sweep", &a, &b, "--config", &sweep, "--quiet", "--out", &swept,
        ],
    );
    let (pa, pb) = (
        d.path("a.p").display().to_string(),
        d.path("b.p").display().to_string(),
    );
    // Each line its own scope keys: the shards name their columns (none).
    for (what, f, p) in [("shard a", &a, &pa), ("shard b", &b, &pb)] {
        let args = [
            "replay",
            f,
            "--quiet",
            "--scope-columns",
            "",
            "--partial",
            p,
        ];
        measured(what, &args);
    }
    let merged = d.path("merged").display().to_string();
    measured("merge", &["merge", &pa, &pb, "--quiet", "--out", &merged]);
    measured(
        "check",
        &[
            "check",
            &out,
            "--max-safety-regressions",
            "0",
            "--min-skip-rate",
            "0",
        ],
    );
    // import: chats whose tool results are long and whose replies are
    // braces and identifiers (the clean-up and the fabrication check).
    let mut chats = String::new();
    for i in 0..200 {
        let mut messages =
            vec![serde_json::json!({"role": "user", "content": "where is my order?"})];
        for c in 0..20 {
            messages.push(serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": format!("c{c}"), "type": "function", "function": {"name": "get_order", "arguments": "{}"}}]}));
            messages.push(serde_json::json!({"role": "tool", "tool_call_id": format!("c{c}"), "content": format!("ORD-{i}-{c} ").repeat(2000)}));
        }
        messages.push(serde_json::json!({"role": "assistant",
            "content": format!("Order {} {}", "ORD-1-2 ".repeat(5000), "{".repeat(20000))}));
        chats.push_str(&serde_json::json!({"messages": messages}).to_string());
        chats.push('\n');
    }
    let chats = d.write("chats.jsonl", chats).display().to_string();
    let imported = d.path("imported.jsonl").display().to_string();
    measured(
        "import",
        &[
            "import",
            &chats,
            "--from",
            "openai-chat",
            "--out",
            &imported,
        ],
    );
}

/// #47 item 1: every safety regression was kept whole until the run
/// ended (1,000,000 one-word ones peaked at 741 MB; these 500,000 at 462
/// MiB on 7284b5b, 136 MiB now). Their rows are now streamed to regressions.csv as the
/// decisions are, and a run keeps only the ten report.md lists.
#[cfg(unix)]
#[test]
fn regressions_are_streamed_not_kept() {
    let d = Dir::new();
    let mut text = String::new();
    for i in 0..500_000 {
        text.push_str(&format!(
            "{{\"run_id\":\"r{}\",\"turn\":{i},\"draft\":\"ok\",\"critic\":{{\"verdict\":\"revise\"}}}}\n",
            i % 1000
        ));
    }
    let (out, mib) = replay_measured(&d, &text);
    eprintln!("500,000 regressions: peak {mib} MiB");
    // Alone it peaks near 131 MiB; under the whole suite's load the
    // in-order window fills (workers run ahead of a starved consumer) and
    // it reached 287 MiB: bounded by the window, not by the input.
    assert!(mib < 400, "peak {mib} MiB (462 on 7284b5b, alone)");
    let csv = std::fs::read_to_string(out.join("regressions.csv")).unwrap();
    assert_eq!(csv.lines().count(), 500_001);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("(500000 in all; first 10)"), "{md}");
}

/// #47 item 15: runs were keyed by FNV-1a of their `run_id`, whose
/// collisions anyone finds in minutes: these two ids (16 hex digits
/// each, found by a rho search) share the FNV-1a key 3e42bb46fb6d582b,
/// and their runs were counted as one (`labelled_runs` 1 on 7284b5b).
/// Keys are now SipHash-1-3 under a fixed key.
#[test]
fn two_runs_whose_ids_collide_under_fnv_stay_two() {
    let (a, b) = ("4db4be9ccd269edd", "049676eff0705c0b");
    let fnv = |s: &str| {
        s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, c| {
            (h ^ u64::from(c)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    assert_eq!(fnv(a), fnv(b), "the fixture collides under FNV-1a");
    let d = Dir::new();
    let line = |id: &str, verdict: &str| {
        format!("{{\"run_id\":\"{id}\",\"draft\":\"Got it, thanks!\",\"critic\":{{\"verdict\":\"{verdict}\"}}}}\n")
    };
    let input = d.write("t.jsonl", line(a, "revise") + &line(b, "approve"));
    let out = d.path("r");
    expect_code(&replay_in(&out, &[input.to_str().unwrap(), "--quiet"]), 0);
    let s = summary(&out);
    assert_eq!(
        s["variants"]["smart"]["labelled_runs"], 2,
        "{}",
        s["variants"]["smart"]
    );
}

/// A conversation's `run_id` is repeated by every row of its turns: a
/// transcript of 500 turns under a 200 KB id wrote a 200 MB
/// decisions.csv (7284b5b), quadratic in the line (a 16 MiB line could
/// make terabytes). Rows cut the id at 4 KiB, as regressions.csv does.
#[test]
fn a_long_run_id_is_not_repeated_whole_by_every_row() {
    let d = Dir::new();
    let mut messages = Vec::new();
    for i in 0..500 {
        messages.push(serde_json::json!({"role": "user", "content": format!("question {i}")}));
        messages.push(serde_json::json!({"role": "assistant", "content": "Got it, thanks!"}));
    }
    let line = serde_json::json!({"run_id": "r".repeat(200_000), "messages": messages});
    let input = d.write("chat.jsonl", format!("{line}\n"));
    let out = d.path("r");
    let o = replay_in(
        &out,
        &[input.to_str().unwrap(), "--from", "openai-chat", "--quiet"],
    );
    expect_code(&o, 0);
    let bytes = std::fs::metadata(out.join("decisions.csv")).unwrap().len();
    assert!(bytes < 10 << 20, "decisions.csv: {bytes} bytes");
    let rows = csv_rows(&std::fs::read_to_string(out.join("decisions.csv")).unwrap());
    assert_eq!(rows.len(), 1000);
    let id = &rows[0]["run_id"];
    assert!(id.len() == 4096 && id.contains('…'), "{}", id.len());
}

/// Two run ids longer than 4 KiB that share their first 4 KiB stay two
/// runs in the tables: cut alike, check counted one run in decisions.csv
/// against two in the summary and refused a sound folder (the review of
/// 01cb404). A cut id ends in its run key.
#[test]
fn two_long_run_ids_alike_at_their_start_stay_two_runs() {
    let d = Dir::new();
    let stem = "a".repeat(4096);
    let mut text = String::new();
    for end in ["1", "2"] {
        text.push_str(&format!(
            "{{\"run_id\":\"{stem}{end}\",\"turn\":0,\"draft\":\"Got it, thanks!\",\"critic\":{{\"verdict\":\"revise\"}}}}\n"
        ));
    }
    let input = d.write("t.jsonl", text);
    let out = d.path("r");
    expect_code(&replay_in(&out, &[input.to_str().unwrap(), "--quiet"]), 0);
    let o = run(
        &[
            "check",
            out.to_str().unwrap(),
            "--max-safety-regressions",
            "5",
            "--min-skip-rate",
            "0",
        ],
        None,
    );
    assert!(!stderr(&o).contains("contradict"), "{}", stderr(&o));
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let rows = csv_rows(&std::fs::read_to_string(out.join("regressions.csv")).unwrap());
    assert_eq!(rows.len(), 2);
    assert_ne!(rows[0]["run_id"], rows[1]["run_id"]);
}
