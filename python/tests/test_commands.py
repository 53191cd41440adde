"""The commands that make and inspect inputs (synth, import, derive,
patterns, init) from Python: what each writes or returns is what the CLI
writes or prints, byte for byte, and a refusal is the CLI's, in Python's
spelling."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import critic_gate
from conftest import ROOT, run_cli


def cli_out(cli: str, *args: str) -> str:
    done = subprocess.run([cli, *args], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("mix, shape", [("multilingual", "traffic"), ("default", "openai-chat")])
def test_synth_writes_what_the_cli_writes(cli: str, tmp_path: Path, mix: str, shape: str) -> None:
    ours = critic_gate.synth(tmp_path / "py.jsonl.gz", 700, seed=5, mix=mix, shape=shape)  # type: ignore[arg-type]
    assert ours == tmp_path / "py.jsonl.gz"
    run_cli(cli, "synth", "--turns", "700", "--seed", "5", "--mix", mix, "--shape", shape,
            "--out", str(tmp_path / "cli.jsonl.gz"))
    assert ours.read_bytes() == (tmp_path / "cli.jsonl.gz").read_bytes()
    with pytest.raises(critic_gate.UsageError, match="mix"):
        critic_gate.synth(tmp_path / "x.jsonl", 1, mix="klingon")  # type: ignore[arg-type]


def test_import_writes_the_clis_traffic_and_says_what_it_counted(cli: str, tmp_path: Path) -> None:
    chats = critic_gate.synth(tmp_path / "chats.jsonl", 400, seed=2, shape="openai-chat")
    got = critic_gate.import_(chats, tmp_path / "py.jsonl", from_="openai-chat", threads=2)
    run_cli(cli, "import", str(chats), "--from", "openai-chat", "--out", str(tmp_path / "cli.jsonl"))
    assert (tmp_path / "py.jsonl").read_bytes() == (tmp_path / "cli.jsonl").read_bytes()
    lines = (tmp_path / "py.jsonl").read_text().splitlines()
    assert got.turns == len(lines) > 0 and got.rejected == 0 and got.rejects is None
    assert got.text.startswith(f"imported {got.turns} turns into")
    # A broken record: refused by line, or set aside with skip_invalid.
    broken = tmp_path / "broken.jsonl"
    broken.write_text(chats.read_text().splitlines()[0] + "\n{not json\n")
    with pytest.raises(critic_gate.InvalidLineError) as e:
        critic_gate.import_(broken, tmp_path / "b.jsonl", from_="openai-chat")
    assert (e.value.source, e.value.line) == (str(broken), 2)
    assert not (tmp_path / "b.jsonl").exists(), "nothing half-written"
    kept = critic_gate.import_(broken, tmp_path / "b.jsonl", from_="openai-chat", skip_invalid=True)
    assert kept.rejected == 1 and kept.rejects is not None and kept.rejects.is_file()
    # Traffic is not imported; the message names the keyword, not the flag.
    with pytest.raises(critic_gate.UsageError, match="from_ traffic") as u:
        critic_gate.import_(chats, tmp_path / "t.jsonl", from_="traffic")  # type: ignore[arg-type]
    assert "--from" not in str(u.value)


def test_derive_from_a_file_or_from_dicts_gives_the_clis_signals(cli: str, tmp_path: Path) -> None:
    inputs = [
        {"user_message": "please cancel order 4812", "draft": "I cancelled order 4812 for you.",
         "tool_calls": [], "identifier_keys": ["order_id"],
         "tool_trigger_keywords": {"cancel_order": ["cancel"]},
         "hydrated_context": "", "intent_on": True},
        {"user_message": "thanks!", "draft": "You're welcome!", "tool_calls": [],
         "identifier_keys": [], "tool_trigger_keywords": {}, "hydrated_context": "",
         "intent_on": False},
    ]
    file = tmp_path / "inputs.jsonl"
    file.write_text("".join(json.dumps(i) + "\n" for i in inputs))
    want = [json.loads(line) for line in cli_out(cli, "derive", str(file)).splitlines()]
    assert len(want) == 2
    assert critic_gate.derive(file) == want
    assert critic_gate.derive(inputs) == want
    with pytest.raises(critic_gate.InvalidLineError) as e:
        critic_gate.derive([inputs[0], {"draft": 7}])
    assert (e.value.source, e.value.line) == ("<inputs>", 2)


def test_patterns_and_init_print_what_the_cli_prints(cli: str, tmp_path: Path) -> None:
    assert critic_gate.patterns() == cli_out(cli, "patterns")
    sweep = ROOT / "datasets/sweep.toml"
    assert critic_gate.patterns(sweep) == cli_out(cli, "patterns", "--config", str(sweep))
    text = critic_gate.init()
    assert text == cli_out(cli, "init", "-")
    out = tmp_path / "gate.toml"
    assert critic_gate.init(out) == text and out.read_text() == text
    with pytest.raises(critic_gate.UsageError):
        critic_gate.init(out)
    out.write_text("mine")
    critic_gate.init(out, force=True)
    assert out.read_text() == text
