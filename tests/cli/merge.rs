//! `replay --partial` and `merge`: shards' partial results merge into the
//! reports of one replay over all their files, byte for byte; partial
//! results that cannot be merged are refused with what to do.

use std::path::Path;

use crate::util::*;

/// Every file of two report folders is byte-identical.
fn assert_same_reports(one: &Path, two: &Path) {
    let files = files_in(one);
    assert_eq!(files, files_in(two), "the same files");
    for f in &files {
        let (a, b) = (
            std::fs::read(one.join(f)).unwrap(),
            std::fs::read(two.join(f)).unwrap(),
        );
        assert!(
            a == b,
            "{f} differs:\n{}\n---\n{}",
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b)
        );
    }
}

/// Each file of `shards` replayed on its own into a partial result in
/// `d` (`extra` options for every shard); their paths.
fn replay_shards(d: &Dir, shards: &[&str], extra: &[&str]) -> Vec<String> {
    let mut partials = Vec::new();
    for (i, f) in shards.iter().enumerate() {
        let p = d.path(&format!("p{i}.partial")).display().to_string();
        let mut args = vec!["replay", f, "--partial", &p, "--quiet"];
        args.extend(extra);
        let o = run_from_root(&args);
        expect_code(&o, 0);
        partials.push(p);
    }
    partials
}

fn run_from_root(args: &[&str]) -> std::process::Output {
    cmd().current_dir(root()).args(args).output().unwrap()
}

fn synth(d: &Dir, name: &str, turns: &str, seed: &str) -> String {
    let p = d.path(name).display().to_string();
    expect_code(
        &run(
            &["synth", "--turns", turns, "--seed", seed, "--out", &p],
            None,
        ),
        0,
    );
    p
}

#[test]
fn merged_shards_are_one_replay_byte_for_byte() {
    let d = Dir::new();
    // Every dataset (rejects, warnings, costs, production, scopes), synth
    // traffic over several blocks, and a file twice (its turns are
    // duplicates only across shards: the merge must find them).
    let s1 = synth(&d, "s1.jsonl.zst", "6000", "1");
    let s2 = synth(&d, "s2.jsonl", "4000", "2");
    let mut files: Vec<String> = [
        "seed",
        "costs",
        "fail-open",
        "floors",
        "invalid",
        "multilingual",
        "threshold-0.7",
    ]
    .iter()
    .map(|n| format!("datasets/{n}.jsonl"))
    .collect();
    files.extend([s1, s2.clone(), s2]);
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    let opts = [
        "--config",
        "datasets/gate.toml",
        "--skip-invalid",
        "--group-by",
        "critic.model",
        "--scope-columns",
        "tenant,channel",
        "--format",
        "both",
    ];
    let one = d.path("one/run");
    let mut args = vec!["replay"];
    args.extend(&files);
    args.extend(opts);
    args.extend(["--out", one.to_str().unwrap(), "--quiet"]);
    expect_code(&run_from_root(&args), 0);
    let partials = replay_shards(&d, &files, &opts);
    let two = d.path("merged/run");
    let mut args = vec!["merge"];
    args.extend(partials.iter().map(String::as_str));
    args.extend(["--out", two.to_str().unwrap(), "--format", "both"]);
    let o = run(&args, None);
    expect_code(&o, 0);
    assert!(stderr(&o).contains("duplicate_turn"), "{}", stderr(&o));
    assert_same_reports(&one, &two);
    // A real run: the synth turns (the second file twice) and more.
    assert!(summary(&two)["turns"].as_u64().unwrap() > 14_000);
}

#[test]
fn shards_with_their_own_reports_and_default_scope_columns_merge_exactly() {
    let d = Dir::new();
    let files: Vec<String> = (1..=3)
        .map(|i| synth(&d, &format!("s{i}.jsonl"), "3000", &i.to_string()))
        .collect();
    let one = d.path("one/all");
    let mut args = vec!["replay"];
    args.extend(files.iter().map(String::as_str));
    args.extend([
        "--out",
        one.to_str().unwrap(),
        "--decisions",
        "changed",
        "--quiet",
    ]);
    expect_code(&run(&args, None), 0);
    let mut partials = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let p = d.path(&format!("p{i}")).display().to_string();
        // One shard is labelled as the merge will be (its rows are copied
        // as they are), the others by their folders (relabelled).
        let out = d.path(&format!("shard{i}/{}", if i == 1 { "all" } else { "x" }));
        let o = run(
            &[
                "replay",
                f,
                "--partial",
                &p,
                "--out",
                out.to_str().unwrap(),
                "--decisions",
                "changed",
                "--quiet",
            ],
            None,
        );
        expect_code(&o, 0);
        assert!(
            out.join("summary.json").is_file(),
            "the shard's own reports"
        );
        partials.push(p);
    }
    let two = d.path("two/all");
    let mut args = vec!["merge"];
    args.extend(partials.iter().map(String::as_str));
    args.extend(["--out", two.to_str().unwrap(), "--quiet"]);
    expect_code(&run(&args, None), 0);
    assert_same_reports(&one, &two);
    // The label is the merge's own: --label, else its folder's name.
    let three = d.path("three/x");
    args.pop();
    args.truncate(args.len() - 2);
    args.extend(["--out", three.to_str().unwrap(), "--label", "all"]);
    expect_code(&run(&args, None), 0);
    assert_same_reports(&one, &three);
}

#[test]
fn partials_of_other_settings_are_refused_and_nothing_is_written() {
    let d = Dir::new();
    let a = d.path("a.partial").display().to_string();
    let b = d.path("b.partial").display().to_string();
    let seed = "datasets/seed.jsonl";
    expect_code(
        &run_from_root(&[
            "replay",
            seed,
            "--config",
            "datasets/gate.toml",
            "--partial",
            &a,
        ]),
        0,
    );
    expect_code(
        &run_from_root(&[
            "replay",
            seed,
            "--config",
            "datasets/gate-0.7.toml",
            "--partial",
            &b,
        ]),
        0,
    );
    let out = d.path("merged");
    let o = run(&["merge", &a, &b, "--out", out.to_str().unwrap()], None);
    expect_error(&o, 2, "replayed with other settings than");
    assert!(
        stderr(&o).contains("the gate settings of variant"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists(), "no folder for a refused merge");
    let c = d.path("c.partial").display().to_string();
    expect_code(
        &run_from_root(&[
            "replay",
            seed,
            "--config",
            "datasets/gate.toml",
            "--group-by",
            "critic.model",
            "--partial",
            &c,
        ]),
        0,
    );
    expect_error(
        &run(&["merge", &a, &c, "--out", out.to_str().unwrap()], None),
        2,
        "--group-by differ",
    );
}

#[test]
fn damaged_or_foreign_partials_are_refused_by_name() {
    let d = Dir::new();
    let a = d.path("a.partial");
    expect_code(
        &run_from_root(&[
            "replay",
            "datasets/seed.jsonl",
            "--partial",
            a.to_str().unwrap(),
        ]),
        0,
    );
    let bytes = std::fs::read(&a).unwrap();
    let cut = d.write("cut.partial", &bytes[..bytes.len() / 2]);
    let out = d.path("merged");
    for (bad, says) in [
        (cut, "cut.partial: damaged partial result"),
        (
            root().join("datasets/seed.jsonl"),
            "seed.jsonl: damaged partial result",
        ),
    ] {
        let o = run(
            &[
                "merge",
                a.to_str().unwrap(),
                bad.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
            None,
        );
        expect_error(&o, 2, says);
        assert!(!out.exists(), "nothing written for {}", bad.display());
    }
}

#[test]
fn shards_whose_default_scope_columns_differ_are_refused_with_the_fix() {
    let d = Dir::new();
    let a = d.write(
        "a.jsonl",
        "{\"run_id\":\"r\",\"turn\":1,\"scope\":{\"tenant\":\"t\"},\"draft\":\"ok\"}\n",
    );
    let b = d.write(
        "b.jsonl",
        "{\"run_id\":\"r\",\"turn\":2,\"scope\":{\"region\":\"eu\"},\"draft\":\"ok\"}\n",
    );
    let (pa, pb) = (d.path("a.partial"), d.path("b.partial"));
    for (f, p) in [(&a, &pa), (&b, &pb)] {
        expect_code(
            &run(
                &[
                    "replay",
                    f.to_str().unwrap(),
                    "--partial",
                    p.to_str().unwrap(),
                ],
                None,
            ),
            0,
        );
    }
    let out = d.path("m");
    let o = run(
        &[
            "merge",
            pa.to_str().unwrap(),
            pb.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_error(
        &o,
        2,
        "replay every shard with --scope-columns tenant,region",
    );
}

#[test]
fn a_failed_shard_leaves_no_partial_and_replay_needs_a_target() {
    let d = Dir::new();
    let p = d.path("bad.partial");
    let o = run_from_root(&[
        "replay",
        "datasets/invalid.jsonl",
        "--partial",
        p.to_str().unwrap(),
    ]);
    expect_code(&o, 2);
    assert_eq!(
        std::fs::read_dir(d.tmp.path()).unwrap().count(),
        0,
        "no partial and no temporary file"
    );
    let o = run_from_root(&["replay", "datasets/seed.jsonl"]);
    expect_error(&o, 2, "--out");
    // The partial result never replaces an input.
    let input = d.write(
        "t.jsonl",
        std::fs::read(root().join("datasets/seed.jsonl")).unwrap(),
    );
    let t = input.to_str().unwrap();
    expect_error(
        &run(&["replay", t, "--partial", t], None),
        2,
        "is the input",
    );
    assert_eq!(
        std::fs::read(&input).unwrap(),
        std::fs::read(root().join("datasets/seed.jsonl")).unwrap()
    );
}

/// A shard of blank lines (or of empty files) uses up one replay's scan for
/// scope columns as it does in one replay: the merge found the next shard's
/// keys instead and wrote columns one replay does not. Now it refuses with
/// the fix, and the fix gives one replay's reports.
#[test]
fn a_blank_shard_before_a_scoped_one_is_refused_with_a_fix_that_works() {
    let d = Dir::new();
    let blank = d.write("blank.jsonl", "\n".repeat(10_000));
    let empties: Vec<String> = (0..64)
        .map(|i| d.write(&format!("e{i:02}.jsonl"), "").display().to_string())
        .collect();
    let seed = root().join("datasets/seed.jsonl").display().to_string();
    for (name, first) in [
        ("blank", vec![blank.display().to_string()]),
        ("empty", empties),
    ] {
        let shard = |files: &[String], p: &str, extra: &[&str]| {
            let mut args = vec!["replay"];
            args.extend(files.iter().map(String::as_str));
            args.extend(["--partial", p]);
            args.extend(extra);
            expect_code(&run(&args, None), 0);
        };
        let (p1, p2) = (d.path(&format!("{name}1.p")), d.path(&format!("{name}2.p")));
        let (p1, p2) = (p1.to_str().unwrap(), p2.to_str().unwrap());
        shard(&first, p1, &[]);
        shard(std::slice::from_ref(&seed), p2, &[]);
        let out = d.path(&format!("{name}-merged/run"));
        let o = run(&["merge", p1, p2, "--out", out.to_str().unwrap()], None);
        expect_error(&o, 2, "replay every shard with --scope-columns ''");
        assert!(!out.exists());
        // The fix: the same columns for every shard.
        shard(&first, p1, &["--scope-columns", ""]);
        shard(std::slice::from_ref(&seed), p2, &["--scope-columns", ""]);
        expect_code(
            &run(&["merge", p1, p2, "--out", out.to_str().unwrap()], None),
            0,
        );
        let one = d.path(&format!("{name}-one/run"));
        let mut args = vec!["replay"];
        args.extend(first.iter().map(String::as_str));
        args.extend([seed.as_str(), "--out", one.to_str().unwrap()]);
        expect_code(&run(&args, None), 0);
        assert_same_reports(&one, &out);
    }
}

/// Two shards of 30,000 distinct values each, the budget of segment cells
/// reached only when they meet: one replay keeps the values in the order
/// blocks bring them; a merge once added the second shard's in sorted
/// order and kept other values (no note).
#[test]
fn values_past_the_cap_across_shards_are_kept_as_one_replay_keeps_them() {
    let d = Dir::new();
    let shard = |name: &str, from: u64| {
        let mut text = String::new();
        // 30,000 values a shard stay inside the segment budget (100,000
        // cells: values times 2 variants); the two together do not.
        for n in from..from + 30_000 {
            let v = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            text.push_str(&format!(
                "{{\"run_id\":\"r{n}\",\"turn\":1,\"draft\":\"ok\",\"request_id\":\"{v:016x}\"}}\n"
            ));
        }
        d.write(name, text).display().to_string()
    };
    let (a, b) = (shard("a.jsonl", 0), shard("b.jsonl", 30_000));
    let (pa, pb) = (d.path("a.p"), d.path("b.p"));
    for (f, p) in [(&a, &pa), (&b, &pb)] {
        let o = run(
            &[
                "replay",
                f,
                "--group-by",
                "request_id",
                "--decisions",
                "none",
                "--partial",
                p.to_str().unwrap(),
            ],
            None,
        );
        expect_code(&o, 0);
    }
    let (one, two) = (d.path("one/run"), d.path("two/run"));
    let o = run(
        &[
            "replay",
            &a,
            &b,
            "--group-by",
            "request_id",
            "--decisions",
            "none",
            "--out",
            one.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    expect_code(
        &run(
            &[
                "merge",
                pa.to_str().unwrap(),
                pb.to_str().unwrap(),
                "--out",
                two.to_str().unwrap(),
            ],
            None,
        ),
        0,
    );
    assert_same_reports(&one, &two);
    let segments = std::fs::read_to_string(one.join("segments.csv")).unwrap();
    assert!(
        segments.contains("request_id,(other)"),
        "the cap is reached"
    );
}

#[test]
fn partial_results_go_only_to_regular_files_and_leave_nothing_on_failure() {
    let d = Dir::new();
    let seed = root().join("datasets/seed.jsonl");
    let seed = seed.to_str().unwrap();
    // A folder (or a device: the file is renamed into place) is refused.
    let folder = d.path("folder");
    std::fs::create_dir(&folder).unwrap();
    expect_error(
        &run(
            &["replay", seed, "--partial", folder.to_str().unwrap()],
            None,
        ),
        2,
        "not a regular file",
    );
    // Refused before any work: no temporary file is left.
    let busy = d.write("busy/x.txt", "x");
    let p = d.path("p.partial");
    let o = run(
        &[
            "replay",
            seed,
            "--out",
            busy.parent().unwrap().to_str().unwrap(),
            "--partial",
            p.to_str().unwrap(),
        ],
        None,
    );
    expect_error(&o, 2, "not empty");
    let names: Vec<String> = files_in(d.tmp.path());
    assert_eq!(names, ["busy/x.txt"], "no partial, no temporary file");
    // Beside the reports, in a folder the run creates.
    let out = d.path("new/run");
    let inside = out.join("run.partial");
    expect_code(
        &run(
            &[
                "replay",
                seed,
                "--out",
                out.to_str().unwrap(),
                "--partial",
                inside.to_str().unwrap(),
            ],
            None,
        ),
        0,
    );
    assert!(inside.is_file() && out.join("summary.json").is_file());
    // merge reads a partial result twice: a folder or a pipe is refused.
    let o = run(
        &[
            "merge",
            inside.to_str().unwrap(),
            folder.to_str().unwrap(),
            "--out",
            d.path("m").to_str().unwrap(),
        ],
        None,
    );
    expect_error(&o, 2, "not a regular file");
}

/// SIGINT left the partial result's temporary file behind.
#[cfg(unix)]
#[test]
fn a_signal_removes_the_partial_results_temporary_file() {
    let d = Dir::new();
    let p = d.path("p.partial");
    let mut child = cmd()
        .args(["replay", "-", "--partial", p.to_str().unwrap(), "--quiet"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let code = signal_when(&mut child, || !files_in(d.tmp.path()).is_empty(), "-INT");
    assert_eq!(code, Some(130));
    assert_eq!(files_in(d.tmp.path()), Vec::<String>::new());
}

/// merge refuses partial results another critic-gate version wrote.
#[test]
fn merge_refuses_another_versions_partials() {
    let d = Dir::new();
    let p = d.path("a.partial");
    partial_from(root(), SEED, &p);
    let ours = format!("\"tool\":\"{}\"", env!("CARGO_PKG_VERSION"));
    let theirs = ours.replace(env!("CARGO_PKG_VERSION"), "9.9.9");
    let q = edited_partial(&d, &p, &ours, &theirs);
    let out = d.path("m");
    let o = run(
        &[
            "merge",
            p.to_str().unwrap(),
            q.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_error(&o, 2, "9.9.9");
    assert!(!out.exists());
}

/// `merge` wrote reports from a partial whose tallies `check` then called
/// damaged (a variant firing on more turns than it has): the merged
/// summary is held to check's own rules before anything is written.
#[test]
fn merge_refuses_tallies_that_check_would_call_damaged() {
    let d = Dir::new();
    let p = d.path("a.partial");
    partial_from(root(), SEED, &p);
    // 99 fires in 20 turns.
    let q = edited_partial(&d, &p, "\"fires\":20", "\"fires\":99");
    let out = d.path("m");
    let o = run(
        &["merge", q.to_str().unwrap(), "--out", out.to_str().unwrap()],
        None,
    );
    expect_error(&o, 2, "damaged");
    assert!(!out.exists());
}

/// Whole-session shards of a trace with skill-gate calls: each partial
/// numbered its skill-gate turns from 0, so the merge warned of duplicate
/// turns one replay does not have, and its rows differed. Skill-gate turns
/// are numbered by their span's start, the same in any shard.
#[test]
fn trace_shards_with_skill_gate_calls_merge_as_one_replay() {
    use crate::trace::{critic, doc, lines, run_spans, T};
    let d = Dir::new();
    let mut files = Vec::new();
    for shard in 0..2u64 {
        let mut docs = Vec::new();
        for r in 0..3u64 {
            let id = format!("s{shard}-r{r}");
            let t = T + (shard * 10 + r) * 1_000_000_000;
            let mut spans = run_spans(&id, t);
            // Each run its own session: whole sessions in each shard.
            spans[0]["attributes"][2]["value"]["stringValue"] = serde_json::json!(id.clone());
            spans.push(critic(&id, t + 95_000_000, 70, "metacognition_skill_gate"));
            docs.push(doc(spans));
        }
        files.push(d.write(&format!("t{shard}.jsonl"), lines(&docs)));
    }
    let files: Vec<&str> = files.iter().map(|f| f.to_str().unwrap()).collect();
    let opts = ["--from", "otlp"];
    let one = d.path("one/run");
    let mut args = vec!["replay"];
    args.extend(&files);
    args.extend(opts);
    args.extend(["--out", one.to_str().unwrap(), "--quiet"]);
    expect_code(&run_from_root(&args), 0);
    let partials = replay_shards(&d, &files, &opts);
    let two = d.path("merged/run");
    let mut args = vec!["merge"];
    args.extend(partials.iter().map(String::as_str));
    args.extend(["--out", two.to_str().unwrap()]);
    let o = run(&args, None);
    expect_code(&o, 0);
    assert!(!stderr(&o).contains("duplicate_turn"), "{}", stderr(&o));
    assert_same_reports(&one, &two);
    let skill = std::fs::read_to_string(one.join("decisions.csv")).unwrap();
    assert_eq!(
        skill.lines().filter(|l| l.contains(",skill-gate,")).count(),
        6 * 2
    );
}

/// A copy of partial `p` (as `d`'s `b.partial`) with the first `ours` of
/// its decompressed bytes replaced by `theirs`, of the same length so
/// every frame length still holds.
fn edited_partial(d: &Dir, p: &Path, ours: &str, theirs: &str) -> std::path::PathBuf {
    assert_eq!(theirs.len(), ours.len());
    let mut raw = zstd::decode_all(&std::fs::read(p).unwrap()[..]).unwrap();
    let at = raw
        .windows(ours.len())
        .position(|w| w == ours.as_bytes())
        .unwrap_or_else(|| panic!("the partial holds {ours}"));
    raw[at..at + ours.len()].copy_from_slice(theirs.as_bytes());
    d.write("b.partial", zstd::encode_all(&raw[..], 3).unwrap())
}

/// A copy of partial `p` (as `d`'s `name`) whose frames `edit` turns,
/// each given its tag and payload, into the frames written in its place
/// (none, itself, or more), their lengths written anew.
fn edited_frames(
    d: &Dir,
    p: &Path,
    name: &str,
    edit: impl Fn(u8, Vec<u8>) -> Vec<(u8, Vec<u8>)>,
) -> std::path::PathBuf {
    let raw = zstd::decode_all(&std::fs::read(p).unwrap()[..]).unwrap();
    // The magic line, the version (4 bytes) and the tallies' shape (8).
    let head = raw.iter().position(|&b| b == b'\n').unwrap() + 1 + 12;
    let mut out = raw[..head].to_vec();
    let mut at = head;
    while at < raw.len() {
        let tag = raw[at];
        let len = u64::from_le_bytes(raw[at + 1..at + 9].try_into().unwrap()) as usize;
        for (tag, payload) in edit(tag, raw[at + 9..at + 9 + len].to_vec()) {
            out.push(tag);
            out.extend((payload.len() as u64).to_le_bytes());
            out.extend(payload);
        }
        at += 9 + len;
    }
    d.write(name, zstd::encode_all(&out[..], 3).unwrap())
}

/// A copy of partial `p` (as `d`'s `name`) whose header and tallies
/// frames `edit` changes (given the frame's tag).
fn edited_state(
    d: &Dir,
    p: &Path,
    name: &str,
    edit: impl Fn(u8, &mut serde_json::Value),
) -> std::path::PathBuf {
    edited_frames(d, p, name, |tag, mut payload| {
        if tag == b'S' || tag == b'H' {
            let mut v: serde_json::Value = serde_json::from_slice(&payload).unwrap();
            edit(tag, &mut v);
            payload = serde_json::to_vec(&v).unwrap();
        }
        vec![(tag, payload)]
    })
}

/// #47 item 12: a merge copied a partial's rows as they came: a crafted
/// row put a formula into decisions.csv (which a replay guards with a
/// leading `'`), and a frame of rows given twice doubled them (exit 0
/// both). Rows must be as a replay writes them and as many as the
/// shard's tallies count (read before any row is written); else the
/// shard is refused and nothing written.
#[test]
fn a_merge_writes_only_rows_a_replay_writes_as_many_as_counted() {
    let d = Dir::new();
    let p = d.path("a.partial");
    partial_from(root(), SEED, &p);
    let out = d.path("m");
    let merge = |a: &Path| {
        run(
            &["merge", a.to_str().unwrap(), "--out", out.to_str().unwrap()],
            None,
        )
    };
    expect_code(&merge(&p), 0);
    std::fs::remove_dir_all(&out).unwrap();
    let formula = edited_partial(&d, &p, ",seed-1,", ",=cmd-1,");
    let o = merge(&formula);
    expect_error(&o, 2, "b.partial");
    assert!(stderr(&o).contains("formula"), "{}", stderr(&o));
    assert!(!out.exists());
    let doubled = edited_frames(&d, &p, "doubled.partial", |tag, payload| match tag {
        b'D' => vec![(tag, payload.clone()), (tag, payload)],
        _ => vec![(tag, payload)],
    });
    let o = merge(&doubled);
    expect_error(&o, 2, "doubled.partial");
    // Refused when the rows pass the count, before the extra ones are
    // written (the tallies are read first).
    assert!(
        stderr(&o).contains("more rows than its tallies count (80 decision rows of at most 40"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
    // Regression rows likewise (the seed has one).
    let doubled = edited_frames(&d, &p, "doubled-g.partial", |tag, payload| match tag {
        b'G' => vec![(tag, payload.clone()), (tag, payload)],
        _ => vec![(tag, payload)],
    });
    let o = merge(&doubled);
    expect_error(&o, 2, "doubled-g.partial");
    assert!(stderr(&o).contains("2 regression rows"), "{}", stderr(&o));
    // A cell longer than any a replay writes (the review: 2,000 rows of a
    // 100 KB draft from a 23 KB partial), tallies that list more
    // regressions than their variants count, and frames after the
    // tallies (a second tallies frame raising the count) are refused.
    let long = edited_frames(&d, &p, "long.partial", |tag, payload| match tag {
        b'G' => {
            let row = String::from_utf8(payload).unwrap();
            let row = row.replacen("\"Great, will do.\"", &"x".repeat(20_000), 1);
            vec![(tag, row.into_bytes())]
        }
        _ => vec![(tag, payload)],
    });
    expect_error(&merge(&long), 2, "a cell longer than any a replay writes");
    let listed = edited_state(&d, &p, "listed.partial", |tag, v| {
        if tag == b'S' {
            v["totals"]["listed_regressions"] = serde_json::json!(2000);
        }
    });
    expect_error(
        &merge(&listed),
        2,
        "list 2000 regressions, where its variants count 1",
    );
    let after = edited_frames(&d, &p, "after.partial", |tag, payload| match tag {
        b'S' => vec![(tag, payload.clone()), (tag, payload)],
        _ => vec![(tag, payload)],
    });
    expect_error(&merge(&after), 2, "frames after its tallies");
    assert!(!out.exists());
    let cut = edited_frames(&d, &p, "cut.partial", |tag, payload| match tag {
        b'D' => vec![(tag, payload[..payload.len() - 1].to_vec())],
        _ => vec![(tag, payload)],
    });
    expect_error(&merge(&cut), 2, "neither a comma nor a newline");
}

/// #47 item 12: a merge added a crafted partial's counts as they came, so
/// `turns = 2^64 - 1` plus a real shard's 20 wrapped to 19 and was
/// reported (exit 0); and one partial given twice was added twice. Counts
/// whose sum would pass 2^64 - 1 are refused naming the shard, and so is
/// a shard whose every source an earlier shard already holds: nothing is
/// written.
#[test]
fn a_merge_never_wraps_a_count_nor_adds_a_shard_twice() {
    let d = Dir::new();
    let p = d.path("a.partial");
    partial_from(root(), SEED, &p);
    let huge = edited_state(&d, &p, "huge.partial", |tag, v| match tag {
        b'H' => v["sources"][0] = serde_json::json!("other.jsonl"),
        _ => {
            v["totals"]["turns"] = serde_json::json!(u64::MAX);
            v["sources"][0]["name"] = serde_json::json!("other.jsonl");
        }
    });
    let out = d.path("m");
    let merge = |a: &Path, b: &Path| {
        run(
            &[
                "merge",
                a.to_str().unwrap(),
                b.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
            None,
        )
    };
    let o = merge(&p, &huge);
    expect_error(&o, 2, "huge.partial");
    assert!(stderr(&o).contains("2^64"), "{}", stderr(&o));
    assert!(!out.exists());
    let o = merge(&p, &p);
    expect_error(&o, 2, "a.partial");
    assert!(stderr(&o).contains("twice"), "{}", stderr(&o));
    assert!(!out.exists());
}

/// Review of #45: shards replayed with another `production` merged into
/// the first shard's (check then passed an unreviewed smart production
/// when the legacy shard came first); now refused, naming it.
#[test]
fn partials_of_another_production_are_refused() {
    let d = Dir::new();
    let gate = std::fs::read_to_string(root().join("datasets/gate.toml")).unwrap();
    let smart = d.write("smart.toml", format!("production = \"smart\"\n{gate}"));
    let (a, b) = (d.path("a.partial"), d.path("b.partial"));
    for (config, partial) in [(root().join("datasets/gate.toml"), &a), (smart, &b)] {
        expect_code(
            &run_from_root(&[
                "replay",
                "datasets/seed.jsonl",
                "--config",
                config.to_str().unwrap(),
                "--partial",
                partial.to_str().unwrap(),
            ]),
            0,
        );
    }
    let out = d.path("merged");
    let o = run(
        &[
            "merge",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_error(&o, 2, "replayed with other settings than");
    assert!(
        stderr(&o).contains("production (the gate that produced the traffic)"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
}
