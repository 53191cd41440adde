"""Shared fixtures: the repository, the CLI binary the Python results are
compared with, and a byte-for-byte folder comparison."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def cli() -> str:
    """The CLI built by the README's test command (or CRITIC_GATE_BIN)."""
    exe = os.environ.get("CRITIC_GATE_BIN", str(ROOT / "target" / "release" / "critic-gate"))
    if not Path(exe).is_file():
        pytest.fail(f"{exe}: no critic-gate binary; run `cargo test --release --locked` first")
    return exe


def run_cli(cli: str, *args: str, expect: int = 0) -> None:
    done = subprocess.run([cli, *args], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == expect, done.stderr


def files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def assert_same_reports(one: Path, two: Path) -> None:
    """Every file of two report folders is byte-identical (and there are
    files: two empty folders would prove nothing)."""
    assert files(one), f"{one} holds no file"
    assert files(one) == files(two)
    for f in files(one):
        assert (one / f).read_bytes() == (two / f).read_bytes(), f"{f} differs"
