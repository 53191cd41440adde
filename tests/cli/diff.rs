//! `critic-gate diff`: a release's replay against its candidate's.

use crate::util::*;

/// `check DIR | true`, `explain FILE | head -1`, `diff A B | head -1`
/// panicked (exit 101); the exit code is now what the command decided.
#[test]
fn a_closed_stdout_ends_output_quietly_with_the_decided_exit_code() {
    let d = Dir::new();
    let diff_out = d.path("diff");
    let diff_out = diff_out.to_str().unwrap();
    let cases: [(&[&str], i32); 5] = [
        (
            &["check", "reports/seed", "--max-safety-regressions", "0"],
            1,
        ),
        (
            &[
                "check",
                "reports/multilingual",
                "--max-safety-regressions",
                "0",
            ],
            0,
        ),
        (
            &[
                "explain",
                "datasets/floors.jsonl",
                "--config",
                "datasets/gate.toml",
            ],
            0,
        ),
        (
            &["diff", "reports/seed", "reports/seed", "--out", diff_out],
            0,
        ),
        (&["synth", "--turns", "20000", "--out", "-"], 0),
    ];
    for (args, want) in cases {
        for _ in 0..3 {
            assert_eq!(run_with_closed(args, false), Some(want), "{args:?}");
        }
    }
}

/// `diff reports/seed reports/floors` exited 0 comparing 0 rows; a
/// truncated or header-only decisions.csv, `--decisions changed` against
/// `all`, and different variants all exited 0.
#[test]
fn diff_refuses_what_it_cannot_compare() {
    let d = Dir::new();
    let replay = |name: &str, args: &[&str]| {
        let out = d.path(name);
        let mut all = args.to_vec();
        all.push("--quiet");
        expect_code(&replay_in(&out, &all), 0);
        out.to_str().unwrap().to_string()
    };
    let seed = replay("seed", &["datasets/seed.jsonl"]);
    let floors = replay("floors", &["datasets/floors.jsonl"]);
    let changed = replay(
        "changed",
        &["datasets/seed.jsonl", "--decisions", "changed"],
    );
    let one = d.write(
        "one.toml",
        "[variants.legacy]\nmetacognition_selective_gate = false\n",
    );
    let one = replay(
        "one",
        &["datasets/seed.jsonl", "--config", one.to_str().unwrap()],
    );
    let truncated = replay("truncated", &["datasets/seed.jsonl"]);
    let p = d.path("truncated/decisions.csv");
    let text = std::fs::read_to_string(&p).unwrap();
    let kept: Vec<&str> = text.lines().take(30).collect();
    tamper(&p, kept.join("\n") + "\n");
    let header_only = replay("header", &["datasets/seed.jsonl"]);
    let p = d.path("header/decisions.csv");
    let header = std::fs::read_to_string(&p)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    tamper(&p, header + "\n");
    let out = d.path("diff");
    let out = out.to_str().unwrap();
    for (other, says) in [
        (&floors, "read different traffic"),
        (&changed, "diff needs every row"),
        (&one, "different variants"),
        (
            &truncated,
            "decisions.csv has 29 rows, but 20 turns x 2 variants make 40",
        ),
        (&header_only, "decisions.csv has 0 rows"),
    ] {
        for args in [
            vec!["diff", seed.as_str(), other.as_str(), "--out", out],
            vec![
                "diff",
                seed.as_str(),
                other.as_str(),
                "--out",
                out,
                "--fail-on-new-regressions",
            ],
        ] {
            let o = run(&args, None);
            expect_code(&o, 2);
            assert!(stderr(&o).contains(says), "{other}: {}", stderr(&o));
        }
    }
    // The same traffic under two configs still compares.
    expect_code(&run(&["diff", &seed, &seed, "--out", out], None), 0);
}
