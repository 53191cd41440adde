//! Config files: what a mistyped key or an impossible value is told.

use crate::util::*;

#[test]
fn a_price_past_the_bound_is_a_config_error() {
    let d = Dir::new();
    let cfg = d.write(
        "c.toml",
        "[cost.models.m]\nusd_per_mtok_in = 1e300\nusd_per_mtok_out = 1.0\n",
    );
    let o = replay_in(
        &d.path("o"),
        &["datasets/seed.jsonl", "--config", cfg.to_str().unwrap()],
    );
    expect_error(
        &o,
        2,
        "cost.models.m.usd_per_mtok_in must be a number from 0 to 1000000",
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
