"""The keyword options of critic-gate's commands, as a type checker reads
them: generated from the option declarations (the same ones the command
line's flags come from). Do not edit: `CRITIC_GATE_BLESS=1 cargo test
--release --lib python_flags` writes it."""

from __future__ import annotations

import os
from typing import Literal, Optional, Sequence, TypedDict, Union

PathLike = Union[str, "os.PathLike[str]"]


class RunFlags(TypedDict, total=False):
    """The options of every command that runs a replay (None, or left out: its default)."""

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


class CalibrateFlags(RunFlags, total=False):
    """The options of calibrate (None, or left out: its default)."""

    delta: Optional[float]
    """The chance the choice's true rate exceeds R is at most this [default: 0.05]."""

    seed: Optional[int]
    """Seed of the run_id hash that deals the runs into parts [default: 0]."""

    procedure: Optional[Literal["fixed-sequence", "holm", "bonferroni"]]
    """How the family is tested on the calibration part (calibration.json gives what each would certify) [default: fixed-sequence]."""

    min_label_coverage: Optional[float]
    """A variant whose labelled new skips are fewer than this share of its new skips (on the learn or the calibration part) cannot be certified [default: 0.5]."""

    assume_missing_at_random: Optional[bool]
    """Certify on the labels alone, taking the unlabelled new skips to be missing at random. Without it a variant whose worst-case bound (every unlabelled new skip a regression) is above R is not certified: a critic that fails on hard turns leaves their labels out. calibrated.toml's first line says it was assumed."""

    held_out: Optional[bool]
    """False: deal the runs into learn and calibration parts only (more labels for each; no held-out figures) [default: True]."""

    plan: Optional[PathLike]
    """An audit plan (`plan --audit VARIANT`) whose shadow verdicts the traffic holds (`labels`): a variant's unlabelled new skips the audit covers are bounded from its sample (two-phase) instead of each counted a regression."""


class MineFlags(RunFlags, total=False):
    """The options of mine (None, or left out: its default)."""

    variant: Optional[str]
    """The smart variant to mine (default: the first with the flag on)."""

    min_support: Optional[int]
    """A phrase is proposed only when seen in at least this many turns [default: 5]."""

    min_labelled: Optional[int]
    """A pattern is proposed only when its new skips hold at least this many labels (below 30, a 95% bound cannot go under 0.095 even without a regression) [default: 30]."""

    max_regression_rate: Optional[float]
    """A pattern is proposed only when its new skips' upper 95% bound is within this [default: 0.05]."""

    budget_from_variant: Optional[bool]
    """Hold each pattern to the mined variant's own upper 95% bound instead (no riskier than its skips today; it takes many labels)."""

    assume_missing_at_random: Optional[bool]
    """Test each pattern's and the bundle's bound on its labels alone: assume the unlabelled new skips are missing at random (the output says so). Without it, their worst case (every unlabelled new skip a regression) must be within the budget too."""

    stress: Optional[bool]
    """Also add short content to every skipped draft and count the skips that survive."""


class ReplayFlags(RunFlags, total=False):
    """The options of replay (None, or left out: its default)."""

    decisions: Optional[Literal["all", "changed", "none"]]
    """Which rows decisions.csv keeps: all (every turn and variant), changed (where a variant decides differently from the baseline) or none [default: all]."""

    group_by: Optional[Sequence[str]]
    """Extra grouping dimension for segments.csv: a dotted path into the turn (e.g. `critic.model`, `scope.user.tier`). Repeatable."""

    scope_columns: Optional[Sequence[str]]
    """Scope keys to make columns of decisions.csv and regressions.csv (`tenant` -> `scope_tenant`), comma-separated; an empty value makes none. Default: the keys of the first 10,000 turns (at most 16, in order of first appearance). Name them to get the same header in every run."""

    plan: Optional[PathLike]
    """A plan (plan.toml, from `critic-gate plan`): production's skips are measured against its critic sample (the traffic's shadow labels and production's own reviews of the turns it draws)."""


class PassFlags(TypedDict, total=False):
    """The options of every command that reads its traffic in one pass (None, or left out: its default)."""

    from_: Optional[Literal["traffic", "openai-chat", "otlp"]]
    """The input's format: traffic (critic-gate's own), openai-chat (chat transcripts, one conversation a line) or otlp (symfonic's OpenTelemetry traces); see docs/import-formats.md [default: traffic]."""

    skip_invalid: Optional[bool]
    """Count invalid lines instead of stopping."""

    max_line_bytes: Optional[int]
    """Lines longer than this many bytes are invalid [default: 16777216]."""

    force: Optional[bool]
    """Write into --out even when it is a non-empty folder that holds no earlier critic-gate report."""


class PlanFlags(PassFlags, total=False):
    """The options of plan (None, or left out: its default)."""

    max_skip_regression_rate: Optional[float]
    """Size the sample to certify that the regression rate of production's skips is at most R."""

    max_harmful_per_1k: Optional[float]
    """Size it to certify at most H harmful skips per 1,000 turns (turned into a rate on the skips by the traffic's skip share)."""

    confidence: Optional[float]
    """The bound's confidence [default: 0.95]."""

    window_days: Optional[Union[float, str]]
    """The window the labels are collected in: days (`7d`) or weeks (`2w`) [default: 7d]."""

    strata: Optional[str]
    """A probability per stratum: language (its primary subtag: de for de-AT), language-tag (as recorded), intent, call_site or a path into the scope (scope.tenant)."""

    max_calls_per_day: Optional[float]
    """At most this many shadow critic calls a day."""

    salt: Optional[str]
    """The coin's salt (default: a fresh random one, recorded in plan.toml)."""

    days: Optional[float]
    """The days the traffic covers, where its turns record no `ts`."""

    audit: Optional[str]
    """Before the switch: sample this candidate's new skips that the recording left without a label (the critic failed, or nothing was recorded), for a two-phase bound on its new-skip rate."""

    false_alarm_every_days: Optional[Union[float, str]]
    """How rarely the change alarm (a CUSUM for a doubling of R) may fire when the rate is R: its average run length, in days (`365d`) or weeks; the detection delays are predicted for it [default: 365d]."""

    fidelity_share: Optional[float]
    """Also send this share of production's reviewed fires to the shadow critic: `monitor` measures how far its verdicts agree with production's critic there (0: none) [default: 0]."""

    legacy_production: Optional[bool]
    """Sample production's skips although its gate (the config's `production`) is the legacy gate; without it plan refuses, since after the switch production runs the smart gate and the config should name it."""


class SampleFlags(PassFlags, total=False):
    """The options of sample (None, or left out: its default)."""

    threads: Optional[int]
    """Worker threads (default: one per core); the requests are the same with any number."""


class LabelsFlags(TypedDict, total=False):
    """The options of labels (None, or left out: its default)."""

    from_: Optional[Literal["traffic"]]
    """The input's format: traffic only (convert traces or transcripts with `critic-gate import` first) [default: traffic]."""

    skip_invalid: Optional[bool]
    """Count invalid lines instead of stopping."""

    max_line_bytes: Optional[int]
    """Lines longer than this many bytes are invalid [default: 16777216]."""

    force: Optional[bool]
    """Replace --out when the file exists."""


class MonitorFlags(PassFlags, total=False):
    """The options of monitor (None, or left out: its default)."""

    by: Optional[Literal["day", "week", "release"]]
    """The periods: day or week (of each turn's ts), or release (with --release-at) [default: day]."""

    release_at: Optional[Sequence[str]]
    """A release's first day (YYYY-MM-DD), once per release (--by release)."""

    release_field: Optional[str]
    """The field naming each turn's release, a path into its scope (scope.app_version), for --by release; a state keeps it."""

    timezone: Optional[str]
    """The days are the calendar days of this offset: UTC (the default) or +HH:MM / -HH:MM; each turn's ts is taken to its instant, so a file rotated at UTC midnight is one day whatever offsets its ts record [default: UTC]."""

    state: Optional[PathLike]
    """The counts so far: read when the file exists, the traffic's periods added (a period counted already is refused), written back."""

    merge: Optional[Sequence[PathLike]]
    """A shard's state to merge in (repeat for each shard)."""

    false_alarm_every_days: Optional[Union[float, str]]
    """Redesign the change alarm to fire about once in this many days (or weeks: 52w) at a rate of exactly R, over all strata; default: as the plan designed it (its detection delays hold only then)."""

    alarm_rise: Optional[float]
    """Redesign the change alarm for a rise of the rate to K x R (above 1); default: the plan's (2)."""

    max_fidelity_gap: Optional[float]
    """Warn when the shadow critic disagrees with production's on more than this share of production's reviewed fires (the plan's fidelity sample; its anytime lower bound above it) [default: 0.05]."""

    assume_missing_at_random: Optional[bool]
    """Decide the status on the bounds that take a failed shadow call as unrelated to its verdict (the status line then says ASSUMED). Without it the status holds the worst case: every drawn skip without a verdict a regression (anytime_worst_case_upper95), which a critic that fails on hard turns cannot flatter. True or False; None (left out): as the config says."""


class MergeFlags(TypedDict, total=False):
    """The options of merge (None, or left out: its default)."""

    force: Optional[bool]
    """Write into --out even when it is a non-empty folder that holds no earlier critic-gate report."""


class ImportFlags(TypedDict, total=False):
    """The options of import (None, or left out: its default)."""

    skip_invalid: Optional[bool]
    """Set what cannot be converted aside in OUT's .rejects.jsonl instead of stopping."""

    max_line_bytes: Optional[int]
    """Input lines longer than this many bytes are invalid [default: 16777216]."""

    threads: Optional[int]
    """Worker threads (default: one per core)."""


class ExplainFlags(TypedDict, total=False):
    """The options of explain (None, or left out: its default)."""

    from_: Optional[Literal["traffic", "openai-chat", "otlp"]]
    """The input's format: traffic, openai-chat (each turn of each conversation is explained) or otlp (each run of the trace); the config's [deployment] table says how to derive them [default: traffic]."""


class SynthFlags(TypedDict, total=False):
    """The options of synth (None, or left out: its default)."""

    seed: Optional[int]
    """Random seed (same seed, same traffic) [default: 1]."""

    mix: Optional[Literal["default", "multilingual"]]
    """The traffic mix: default (mostly English), or multilingual (about half the drafts not ASCII) [default: default]."""

    shape: Optional[Literal["traffic", "openai-chat"]]
    """What to write: traffic (critic-gate's format) or openai-chat (the same runs as chat transcripts, one conversation a line, for `--from openai-chat`) [default: traffic]."""


class DiffFlags(TypedDict, total=False):
    """The options of diff (None, or left out: its default)."""

    fail_on_new_regressions: Optional[bool]
    """Exit 1 when the candidate has safety regressions the old replay did not."""


class InitFlags(TypedDict, total=False):
    """The options of init (None, or left out: its default)."""

    force: Optional[bool]
    """Replace the file if it exists."""


class CheckFlags(TypedDict, total=False):
    """The options of check (None, or left out: its default)."""

    variants: Optional[Sequence[str]]
    """The variant(s) to check (default: every non-baseline variant, and a smart-gate production whose skips no critic reviewed)."""

    markdown: Optional[PathLike]
    """Also write the verdict as Markdown to FILE (e.g. $GITHUB_STEP_SUMMARY)."""

    assume_missing_at_random: Optional[bool]
    """Judge a rate budget on the labels alone: assume the unlabelled new skips are missing at random (the output says so first). Without it --max-safety-regression-rate also holds the worst case (every unlabelled new skip a regression) to R, unless --max-worst-case-regression-rate sets its own limit. True or False; None (left out): as the config says."""


# Each class's keywords' defaults, as the --help of the command named
# gives them (None: none, or the command works it out; days as a number).
DEFAULTS: dict[str, tuple[str, dict[str, object]]] = {
    "Run": ("mine", {
        "from_": "traffic",
        "threads": None,
        "skip_invalid": False,
        "max_line_bytes": 16777216,
        "force": False,
        "max_ack_share": 0.5,
    }),
    "Sweep": ("sweep", {
        "from_": "traffic",
        "threads": None,
        "skip_invalid": False,
        "max_line_bytes": 16777216,
        "force": False,
        "max_ack_share": 0.5,
    }),
    "Calibrate": ("calibrate", {
        "delta": 0.05,
        "seed": 0,
        "procedure": "fixed-sequence",
        "min_label_coverage": 0.5,
        "assume_missing_at_random": False,
        "held_out": True,
        "plan": None,
        "from_": "traffic",
        "threads": None,
        "skip_invalid": False,
        "max_line_bytes": 16777216,
        "force": False,
        "max_ack_share": 0.5,
    }),
    "Mine": ("mine", {
        "variant": None,
        "min_support": 5,
        "min_labelled": 30,
        "max_regression_rate": 0.05,
        "budget_from_variant": False,
        "assume_missing_at_random": False,
        "stress": False,
        "from_": "traffic",
        "threads": None,
        "skip_invalid": False,
        "max_line_bytes": 16777216,
        "force": False,
        "max_ack_share": 0.5,
    }),
    "Replay": ("replay", {
        "decisions": "all",
        "group_by": None,
        "scope_columns": None,
        "plan": None,
        "from_": "traffic",
        "threads": None,
        "skip_invalid": False,
        "max_line_bytes": 16777216,
        "force": False,
        "max_ack_share": 0.5,
    }),
    "Pass": ("plan", {
        "from_": "traffic",
        "skip_invalid": False,
        "max_line_bytes": 16777216,
        "force": False,
    }),
    "Plan": ("plan", {
        "max_skip_regression_rate": None,
        "max_harmful_per_1k": None,
        "confidence": 0.95,
        "window_days": 7.0,
        "strata": None,
        "max_calls_per_day": None,
        "salt": None,
        "days": None,
        "audit": None,
        "false_alarm_every_days": 365.0,
        "fidelity_share": 0.0,
        "legacy_production": False,
        "from_": "traffic",
        "skip_invalid": False,
        "max_line_bytes": 16777216,
        "force": False,
    }),
    "Sample": ("sample", {
        "threads": None,
        "from_": "traffic",
        "skip_invalid": False,
        "max_line_bytes": 16777216,
        "force": False,
    }),
    "Labels": ("labels", {
        "from_": "traffic",
        "skip_invalid": False,
        "max_line_bytes": 16777216,
        "force": False,
    }),
    "Monitor": ("monitor", {
        "by": "day",
        "release_at": None,
        "release_field": None,
        "timezone": "UTC",
        "state": None,
        "merge": None,
        "false_alarm_every_days": None,
        "alarm_rise": None,
        "max_fidelity_gap": 0.05,
        "assume_missing_at_random": None,
        "from_": "traffic",
        "skip_invalid": False,
        "max_line_bytes": 16777216,
        "force": False,
    }),
    "Merge": ("merge", {
        "force": False,
    }),
    "Import": ("import", {
        "skip_invalid": False,
        "max_line_bytes": 16777216,
        "threads": None,
    }),
    "Explain": ("explain", {
        "from_": "traffic",
    }),
    "Synth": ("synth", {
        "seed": 1,
        "mix": "default",
        "shape": "traffic",
    }),
    "Diff": ("diff", {
        "fail_on_new_regressions": False,
    }),
    "Init": ("init", {
        "force": False,
    }),
    "Check": ("check", {
        "variants": None,
        "markdown": None,
        "assume_missing_at_random": None,
    }),
}
