"""#45 from Python: the plan's coin is SHA-256 as Python's hashlib computes
it (the same draw inside symfonic and offline), and ``plan`` writes the
folder the CLI writes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import critic_gate
from conftest import assert_same_reports, run_cli


def by_hand(salt: str, key: bytes) -> int:
    digest = hashlib.sha256(salt.encode() + b"\x00" + key).digest()
    return int.from_bytes(digest[:8], "big") >> 11


def test_the_coin_is_sha256_as_hashlib_computes_it() -> None:
    keys = [critic_gate.turn_key("conv-1", 3), critic_gate.turn_key("c", turn_id="9f0e"),
            critic_gate.turn_key("会話", None), b"", "ü".encode()]
    assert keys[0] == b"conv-1\x1f3" and keys[1] == b"9f0e" and keys[2] == "会話".encode()
    for salt in ["", "s", "0123abcd" * 4]:
        for key in keys:
            v = by_hand(salt, key)
            assert critic_gate.coin_value(salt, key) == v
            for p in [0.0, 1e-6, 0.3, 0.999, 1.0]:
                assert critic_gate.drawn(salt, key, p) == (v / 2**53 < p), (salt, key, p)


def test_a_plan_from_python_is_the_clis(root: Path, tmp_path: Path, cli: str) -> None:
    traffic = str(root / "datasets/multilingual.jsonl")
    config = str(root / "datasets/gate-smart-baseline.toml")
    p = critic_gate.plan(traffic, tmp_path / "py", config, max_skip_regression_rate=0.05,
                         strata="language", salt="s", days=1)
    run_cli(cli, "plan", traffic, "--config", config, "--max-skip-regression-rate", "0.05",
            "--strata", "language", "--salt", "s", "--days", "1", "--out", str(tmp_path / "cli"))
    assert_same_reports(tmp_path / "cli", tmp_path / "py")
    assert p["salt"] == "s" and p["production"] == "smart" and p["stratum"], p
    with pytest.raises(critic_gate.UsageError, match="max_calls_per_day"):
        critic_gate.plan(traffic, tmp_path / "cap", config, max_skip_regression_rate=0.05,
                         strata="language", days=1, max_calls_per_day=0.5)
    assert not (tmp_path / "cap").exists()


def test_sample_draws_by_the_coin_python_computes(root: Path, tmp_path: Path, cli: str) -> None:
    """Every request ``sample`` writes is one Python's own SHA-256 draws at
    its probability under the plan's salt: the offline draw is the coin
    an exploration gate inside symfonic computes."""
    traffic = str(root / "datasets/multilingual.jsonl")
    config = str(root / "datasets/gate-smart-baseline.toml")
    plan = critic_gate.plan(traffic, tmp_path / "plan", config, max_skip_regression_rate=0.05,
                            days=1, salt="py", window_days=30)
    assert 0 < plan["stratum"][0]["probability"] < 0.5, plan["stratum"]
    run_cli(cli, "sample", traffic, "--plan", str(tmp_path / "plan/plan.toml"), "--config",
            config, "--out", str(tmp_path / "s"))
    lines = (tmp_path / "s/requests.jsonl").read_text(encoding="utf-8").splitlines()
    sample = json.loads((tmp_path / "s/sample.json").read_text(encoding="utf-8"))
    assert 0 < len(lines) == sample["sampled"] < sample["skips"], sample
    for line in lines:
        r = json.loads(line)
        key = (r["turn_id"].encode() if r["turn_id"] is not None
               else f"{r['run_id']}\x1f{r['turn']}".encode() if r["turn"] is not None
               else r["run_id"].encode())
        assert by_hand(plan["salt"], key) / 2**53 < r["probability"], r
        assert r["plan_id"] == plan["plan_id"]


def test_calibrate_reads_an_audit_plan_as_the_cli_does(root: Path, tmp_path: Path, cli: str) -> None:
    """``calibrate(plan=...)`` is ``calibrate --plan``: the same folder for
    an audit plan (a path object accepted), and the same refusal, with
    nothing written, for a plan of production's skips."""
    seed = str(root / "datasets/unlabelled.jsonl")
    sweep_toml = str(root / "datasets/sweep.toml")
    run_cli(cli, "plan", seed, "--config", sweep_toml, "--audit", "smart",
            "--max-skip-regression-rate", "0.05", "--salt", "a", "--days", "1",
            "--out", str(tmp_path / "audit"))
    audit = tmp_path / "audit/plan.toml"
    c = critic_gate.calibrate(seed, sweep_toml, tmp_path / "py", 0.05, plan=audit, label="cal")
    run_cli(cli, "calibrate", seed, "--config", sweep_toml, "--out", str(tmp_path / "cli"),
            "--max-regression-rate", "0.05", "--plan", str(audit), "--quiet", "--label", "cal")
    assert c == json.loads((tmp_path / "cli/calibration.json").read_text(encoding="utf-8"))
    assert "audit of `smart`" in c["guarantee"], c["guarantee"]
    config = str(root / "datasets/gate-smart-baseline.toml")
    critic_gate.plan(seed, tmp_path / "after", config, max_skip_regression_rate=0.05, days=1)
    with pytest.raises(critic_gate.UsageError, match="calibrate reads an audit"):
        critic_gate.calibrate(seed, sweep_toml, tmp_path / "wrong", 0.05,
                              plan=tmp_path / "after/plan.toml")
    assert not (tmp_path / "wrong").exists()
