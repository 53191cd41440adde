//! One build serves both README commands: `cargo test` (which also builds
//! the dev-dependencies) and `cargo run` resolve every shared dependency
//! with the same features, so whichever runs second reuses the first one's
//! artifacts instead of rebuilding most of the tree.

use std::collections::BTreeMap;
use std::process::Command;

use crate::util::root;

/// Each package of the dependency tree with its features, for the edges
/// given (`normal`, or `normal,dev`).
fn features(edges: &str) -> BTreeMap<String, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(root())
        .args(["tree", "--locked", "--offline", "--prefix", "none"])
        .args(["-e", edges, "-f", "{p}|{f}"])
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree -e {edges}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let (p, f) = l.trim_end_matches(" (*)").split_once('|')?;
            Some((p.to_string(), f.to_string()))
        })
        .collect()
}

#[test]
fn one_feature_set_for_both_readme_commands() {
    let run = features("normal");
    let test = features("normal,dev");
    let differ: Vec<String> = run
        .iter()
        .filter(|(p, f)| test.get(*p) != Some(f))
        .map(|(p, f)| format!("{p}: [{f}] for cargo run, [{}] for cargo test", test[p]))
        .collect();
    assert!(
        differ.is_empty(),
        "dev-dependencies change the features of shared crates, so `cargo test` and `cargo run` build them twice; pin these features in Cargo.toml's [dependencies]:\n{}",
        differ.join("\n")
    );
}

/// The core crate (traffic, gates, config, derivations, importers) builds
/// and tests without polars, so a gate change and `cargo fuzz` never wait
/// for it.
#[test]
fn the_core_crate_does_not_depend_on_polars() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let tree = |package: &str| {
        let out = Command::new(&cargo)
            .current_dir(root())
            .args([
                "tree",
                "--locked",
                "--offline",
                "--prefix",
                "none",
                "-p",
                package,
            ])
            .args(["-e", "normal,dev", "-f", "{p}"])
            .output()
            .expect("cargo tree runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let core = tree("critic-gate-core");
    assert!(
        core.lines().count() > 10,
        "an implausibly small tree:\n{core}"
    );
    let heavy: Vec<&str> = core
        .lines()
        .filter(|l| {
            l.starts_with("polars") || l.starts_with("plotters") || l.starts_with("critic-gate v")
        })
        .collect();
    assert!(heavy.is_empty(), "the core crate depends on {heavy:?}");
    // The check can fail: the whole tool does depend on polars.
    assert!(tree("critic-gate")
        .lines()
        .any(|l| l.starts_with("polars-core ")));
}
