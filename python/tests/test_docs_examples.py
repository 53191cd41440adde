"""Every Python example in docs/ and the README runs as written, from a
copy of the repository's root (the files the examples name: datasets/,
the committed reports, and plan/, what `plan --out plan` writes of the
watched dataset). A block marked `<!-- fragment: why -->` on the line before it
is lines from inside other code, not a script, and is left out; the test
counts what it ran so an example cannot drop out unseen."""

from __future__ import annotations

import os
import re
import shutil
import warnings
from pathlib import Path

import pytest

import critic_gate
from conftest import ROOT

BLOCK = re.compile(r"(?:^(<!-- fragment: [^>]+-->)\n)?^```python\n(.*?)^```$", re.M | re.S)


def examples() -> list[tuple[str, str]]:
    found = []
    for md in sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")]):
        for m in BLOCK.finditer(md.read_text(encoding="utf-8")):
            if m.group(1) is None:
                line = md.read_text(encoding="utf-8")[: m.start(2)].count("\n") + 1
                found.append((f"{md.relative_to(ROOT)}:{line}", m.group(2)))
    return found


def test_the_docs_have_examples_to_run() -> None:
    names = [name for name, _ in examples()]
    assert any(n.startswith("docs/shards-python-ray.md") for n in names), names
    assert any(n.startswith("docs/watching.md") for n in names), names


@pytest.mark.parametrize("name, code", examples(), ids=[n for n, _ in examples()])
def test_an_example_runs_as_written(name: str, code: str, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(ROOT / "datasets", tmp_path / "datasets")
    shutil.copytree(ROOT / "reports", tmp_path / "reports")
    monkeypatch.chdir(tmp_path)
    critic_gate.plan("datasets/watched.jsonl", "plan", "datasets/gate-smart-baseline.toml",
                     max_skip_regression_rate=0.05, salt="docs")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(code, name, "exec"), {"__name__": "__example__"})
    # Nothing written outside the scratch copy's out/ (the committed
    # reports are as they were).
    for f in (tmp_path / "reports").rglob("*"):
        if f.is_file():
            assert f.read_bytes() == (ROOT / f.relative_to(tmp_path)).read_bytes(), f
