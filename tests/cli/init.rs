//! `critic-gate init`: the starter config.

use crate::util::*;

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
