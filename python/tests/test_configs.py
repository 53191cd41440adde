"""A config as a dict, keyed as the file is: every job that takes a config
takes one, with the figures the file gives; what a file could not say (a
None, a list at the top) is refused as a ConfigError."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

import critic_gate
from conftest import ROOT


def as_dict(name: str) -> dict[str, Any]:
    return tomllib.loads((ROOT / "datasets" / name).read_text())


def test_a_dict_replays_sweeps_and_plans_as_its_file(tmp_path: Path) -> None:
    seed = ROOT / "datasets/seed.jsonl"
    gate = as_dict("gate.toml")
    by_file = critic_gate.replay([seed], config=ROOT / "datasets/gate.toml")
    by_dict = critic_gate.replay([seed], config=gate)
    assert by_dict.summary.equals(by_file.summary) and by_dict.summary.height == 2
    assert by_dict.decisions.equals(by_file.decisions)
    part = critic_gate.replay_partial(seed.read_bytes(), "seed.jsonl", config=gate)
    assert part == critic_gate.replay_partial(seed.read_bytes(), "seed.jsonl",
                                              config=ROOT / "datasets/gate.toml")

    sweep = as_dict("sweep.toml")
    a = critic_gate.sweep(seed, ROOT / "datasets/sweep.toml", tmp_path / "file", label="s")
    b = critic_gate.sweep(seed, sweep, tmp_path / "dict", label="s")
    assert a.summary.height > 2 and a.summary.equals(b.summary)

    smart = as_dict("gate-smart-baseline.toml")
    one = critic_gate.plan(ROOT / "datasets/multilingual.jsonl", tmp_path / "p1",
                           ROOT / "datasets/gate-smart-baseline.toml",
                           max_skip_regression_rate=0.05, salt="s", days=1.0)
    two = critic_gate.plan(ROOT / "datasets/multilingual.jsonl", tmp_path / "p2", smart,
                           max_skip_regression_rate=0.05, salt="s", days=1.0)
    assert one["stratum"] == two["stratum"] and one["gate"] == two["gate"]
    assert (tmp_path / "p1/plan.csv").read_bytes() == (tmp_path / "p2/plan.csv").read_bytes()


def test_a_dict_a_file_could_not_hold_is_refused() -> None:
    seed = ROOT / "datasets/seed.jsonl"
    with pytest.raises(critic_gate.ConfigError, match="no null"):
        critic_gate.replay([seed], config={"variants": {"smart": {"metacognition_threshold": None}}})
    # The keys are the file's: a misspelled one is the file's error.
    with pytest.raises(critic_gate.ConfigError, match="metacognition_treshold"):
        critic_gate.replay([seed], config={"variants": {"smart": {"metacognition_treshold": 0.7}}})
    with pytest.raises(ValueError, match="not both"):
        critic_gate.replay([seed], config={"variants": {}}, config_text="")


def test_a_dict_sweeps_deployment_settings_as_replays_do(tmp_path: Path) -> None:
    """[sweep.deployment] from a dict: the variant of the intent check off
    has the figures of a replay whose [deployment] turns it off."""
    chats = ROOT / "datasets/transcripts.jsonl"
    base = as_dict("transcripts.toml")
    swept = dict(base, sweep={"metacognition_selective_gate": [True],
                              "deployment": {"intent_filter_mode": ["observe", "off"]}})
    s = critic_gate.sweep(chats, swept, tmp_path / "s", label="r", from_="openai-chat")
    off = dict(base, deployment=dict(base["deployment"], intent_filter_mode="off"))
    r = critic_gate.replay([chats], config=off, from_="openai-chat", label="r")
    names = s.summary["variant"].to_list()
    assert "sel=on/intent=off" in names and "sel=on/intent=observe" not in names, names
    row = s.summary.filter(s.summary["variant"] == "sel=on/intent=off").drop("variant")
    want = r.summary.filter(r.summary["variant"] == "smart").drop("variant")
    assert row.equals(want)
    assert s.summary_dict["input_counts"]["derivations"] == 2 * s.summary_dict["turns"]
