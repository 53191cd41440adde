"""The keyword options of critic-gate's commands, as a type checker reads
them: generated from the option declarations (the same ones the command
line's flags come from). Do not edit: `CRITIC_GATE_BLESS=1 cargo test
--release --lib python_flags` writes it."""

from __future__ import annotations

import os
from typing import Literal, Optional, Sequence, TypedDict, Union

PathLike = Union[str, "os.PathLike[str]"]


class RunFlags(TypedDict, total=False):
    """The options of a run (None, or left out: its default)."""

    from_: Optional[Literal["traffic", "openai-chat", "otlp"]]
    """The input's format: traffic (critic-gate's own), openai-chat (chat transcripts, one conversation a line) or otlp (symfonic's OpenTelemetry traces); see docs/import-formats.md [default: traffic]."""

    threads: Optional[int]
    """Worker threads (default: one per core)."""

    skip_invalid: Optional[bool]
    """Set invalid lines aside in rejects.jsonl instead of stopping."""

    max_line_bytes: Optional[int]
    """Lines longer than this many bytes are invalid (read in constant memory, reported with their first 4 KiB) [default: 16777216]."""

    force: Optional[bool]
    """Write into --out even when it is a non-empty folder that holds no earlier critic-gate report."""

    max_ack_share: Optional[float]
    """A skip is risky when its matched ack covers less than this share of the draft (the summary's risky_* figures) [default: 0.5]."""


SweepFlags = RunFlags


class ReplayFlags(SweepFlags, total=False):
    """The options of a replay (None, or left out: its default)."""

    decisions: Optional[Literal["all", "changed", "none"]]
    """Which rows decisions.csv keeps: all (every turn and variant), changed (where a variant decides differently from the baseline) or none [default: all]."""

    group_by: Optional[Sequence[str]]
    """Extra grouping dimension for segments.csv: a dotted path into the turn (e.g. `critic.model`, `scope.user.tier`). Repeatable."""

    scope_columns: Optional[Sequence[str]]
    """Scope keys to make columns of decisions.csv and regressions.csv (`tenant` -> `scope_tenant`), comma-separated; an empty value makes none. Default: the keys of the first 10,000 turns (at most 16, in order of first appearance). Name them to get the same header in every run."""

    plan: Optional[PathLike]
    """A plan (plan.toml, from `critic-gate plan`): production's skips are measured against its critic sample (the traffic's shadow labels and production's own reviews of the turns it draws)."""


# Each keyword's default, as the command line's --help gives it (None:
# none, or the command works it out).
DEFAULTS: dict[str, object] = {
    "from_": "traffic",
    "threads": None,
    "skip_invalid": False,
    "max_line_bytes": 16777216,
    "force": False,
    "max_ack_share": 0.5,
    "decisions": "all",
    "group_by": None,
    "scope_columns": None,
    "plan": None,
}
