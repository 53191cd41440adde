"""critic-gate in Python: replay recorded LLM-agent traffic through
symfonic's critic gates and read what a gate change saves and risks as
polars DataFrames.

    import critic_gate
    report = critic_gate.replay(["traffic.jsonl"], config="gate.toml")
    report.summary          # summary.csv as a DataFrame
    report.summary_dict     # summary.json as a dict

The shard API runs the same replay file by file on many machines and merges
the partial results into the reports of one replay over every file, byte
for byte:

    parts = [critic_gate.replay_partial(data, path, config_text=text) for ...]
    report = critic_gate.merge(parts, "reports/month")

Every table crosses from the replay as Parquet with its declared schema
(the types of `schema.json`), never as CSV text. Errors raise
`CriticGateError`, whose message names the file, the line and the reason;
each kind is its own subclass (`InvalidLineError`, with `source`, `line`
and `reason`; `InputError`, `ConfigError`, `UsageError`, `WriteError`,
`CannotJudgeError`, `SystemRefusedError`). An `InputError` or a
`WriteError` the operating system refused has that `OSError` (with its
`errno`) as its `__cause__`.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Iterable,
    Literal,
    Mapping,
    Optional,
    Sequence,
    TypedDict,
    Union,
    overload,
)

import polars as pl

if TYPE_CHECKING:
    # Only a type checker reads it (annotations are strings at run time).
    from typing_extensions import Unpack

from . import _flags, _native
from ._flags import (
    CalibrateFlags,
    CheckFlags,
    DiffFlags,
    ImportFlags,
    InitFlags,
    LabelsFlags,
    MergeFlags,
    MineFlags,
    MonitorFlags,
    PlanFlags,
    RunFlags,
    SampleFlags,
    SweepFlags,
    SynthFlags,
)
from ._native import (
    CannotJudgeError,
    ConfigError,
    CriticGateError,
    InputError,
    InvalidLineError,
    SystemRefusedError,
    UsageError,
    WriteError,
)

__all__ = [
    "CriticGateWarning",
    "CannotJudgeError",
    "ConfigError",
    "CriticGateError",
    "InputError",
    "InvalidLineError",
    "SystemRefusedError",
    "UsageError",
    "WriteError",
    "Report",
    "Verdict",
    "calibrate",
    "check",
    "diff",
    "explain",
    "merge",
    "mine",
    "monitor",
    "Watch",
    "Calibration",
    "Mined",
    "plan",
    "Planned",
    "sample",
    "labels",
    "PlanFlags",
    "SampleFlags",
    "LabelsFlags",
    "MonitorFlags",
    "CalibrateFlags",
    "MineFlags",
    "MergeFlags",
    "ImportFlags",
    "SynthFlags",
    "InitFlags",
    "CheckFlags",
    "DiffFlags",
    "coin_value",
    "drawn",
    "turn_key",
    "replay",
    "replay_partial",
    "ReplayFlags",
    "RunFlags",
    "SweepFlags",
    "sweep",
    "derive",
    "import_",
    "Imported",
    "synth",
    "patterns",
    "init",
]
__version__: str = _native.__version__

PathLike = Union[str, "os.PathLike[str]"]
# The values the command line's choices take (`--decisions`, `--from`,
# `--format`, `--procedure`): a type checker holds a call to them. A keyword
# left at None takes the library's default, the command line's.
Decisions = Literal["all", "changed", "none"]
InputFormat = Literal["traffic", "openai-chat", "otlp"]
TablesFormat = Literal["csv", "parquet", "both"]
Procedure = Literal["fixed-sequence", "holm", "bonferroni"]
ImportFormat = Literal["openai-chat", "otlp"]
# A config: a file's path (TOML, or JSON by its name), or the config itself
# as a dict, keyed as the file would be (``{"variants": {"smart": {...}}}``).
ConfigLike = Union[PathLike, Mapping[str, Any]]
Mix = Literal["default", "multilingual"]
Shape = Literal["traffic", "openai-chat"]


class ReplayFlags(_flags.ReplayFlags, total=False):
    """The command line's replay flags, as :func:`replay` and
    :func:`replay_partial` take them (None, or left out: its default):
    each declared once with its flag (``_flags.py`` is generated from the
    declarations), and ``config_text``, a config's TOML text."""

    config_text: Optional[str]


class Report:
    """A replay's reports: every table as a polars DataFrame
    (``report.summary``, ``report.segments``, ``report.floors``,
    ``report.decisions``, ...) and summary.json as ``report.summary_dict``.

    A report of a folder reads each table when first asked for: from its
    Parquet files, or in a folder of CSV tables only (what the CLI writes
    by default) from the CSV files, with the types its schema.json declares
    (the same DataFrames). A report made without a folder
    (``replay(..., out=None)``) holds every table in memory and leaves no
    files behind.
    """

    def __init__(self, folder: PathLike, *, in_memory: bool = False) -> None:
        self.folder: Optional[Path] = Path(folder)
        self.summary_dict: dict[str, Any] = json.loads(
            (self.folder / "summary.json").read_text(encoding="utf-8")
        )
        self._files = {p.stem: p for p in sorted(self.folder.glob("*.parquet"))}
        self._declared: dict[str, Any] = {}
        if not self._files:
            # CSV only: each declared table, read with its declared types.
            schema = self.folder / "schema.json"
            if schema.is_file():
                self._declared = json.loads(schema.read_text(encoding="utf-8"))["tables"]
            self._files = {
                p.stem: p for p in sorted(self.folder.glob("*.csv")) if p.name in self._declared
            }
        if not self._files:
            raise CriticGateError(
                f"{self.folder}: no tables (no Parquet files, and no CSV tables schema.json declares)"
            )
        self._frames: dict[str, pl.DataFrame] = {}
        if in_memory:
            for name in self._files:
                self.table(name)
            self.folder = None

    @property
    def tables(self) -> list[str]:
        """The names of the report's tables (``summary``, ``segments``, ...)."""
        return list(self._files)

    def table(self, name: str) -> pl.DataFrame:
        """The table ``name`` (a report file without its extension)."""
        if name not in self._frames:
            if name not in self._files:
                raise KeyError(f"no table {name!r}; the tables are {', '.join(self._files)}")
            path = self._files[name]
            self._frames[name] = (
                _declared_csv(path, self._declared[path.name])
                if path.suffix == ".csv"
                else pl.read_parquet(path)
            )
        return self._frames[name]

    def __getattr__(self, name: str) -> pl.DataFrame:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self.table(name)
        except KeyError as e:
            raise AttributeError(str(e)) from None

    def __dir__(self) -> Iterable[str]:
        return [*super().__dir__(), *self._files]

    def __repr__(self) -> str:
        where = f" in {self.folder}" if self.folder else ""
        return f"<critic_gate.Report {self.summary_dict.get('run', '')!r}{where}: {', '.join(self._files)}>"


def _tables_format(out: Optional[PathLike], format: str) -> str:
    """The format a run writes: its tables are read from the Parquet files,
    so a folder gets ``parquet`` or ``both`` (refused before any work
    otherwise), and a run without one ``parquet`` only."""
    if format not in ("parquet", "both"):
        raise ValueError(
            f"format={format!r}: the DataFrames are read from the Parquet tables; "
            "give 'both' (CSV beside them) or 'parquet'"
        )
    return "parquet" if out is None else format


def _label(label: Optional[str], out: Optional[PathLike]) -> Optional[str]:
    """The run's label: ``label``; by default (None) the output folder's
    name, which the replay works out as the CLI does, else ``run``."""
    return "run" if label is None and out is None else label


class CriticGateWarning(UserWarning):
    """What a run warns of or notes (the CLI's `warning:` and `note:`
    lines on stderr): invalid values it counted, a production gate that
    does not match the recording, a sample without a bound, ..."""


def _warn(said: Optional[Sequence[str]]) -> None:
    # stacklevel 4: the caller of replay/merge, past _run_into and the job.
    for message in said or ():
        warnings.warn(message, CriticGateWarning, stacklevel=4)


def _run_into(out: Optional[PathLike], job: Callable[[str], Optional[Sequence[str]]]) -> Report:
    """Run ``job(folder)`` into ``out``, or into a temporary folder that is
    read into memory and removed; what the job warns of, as warnings."""
    if out is not None:
        _warn(job(os.fspath(out)))
        return Report(out)
    tmp = tempfile.mkdtemp(prefix="critic-gate-")
    try:
        folder = os.path.join(tmp, "report")
        _warn(job(folder))
        return Report(folder, in_memory=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def replay(
    paths: Union[PathLike, Sequence[PathLike]],
    config: Optional[ConfigLike] = None,
    out: Optional[PathLike] = None,
    *,
    label: Optional[str] = None,
    format: TablesFormat = "both",
    **flags: Unpack[ReplayFlags],
) -> Report:
    """Replay traffic files (JSON Lines, plain, .gz or .zst) through every
    variant of ``config`` (a gate config file's path, or the config as a
    dict keyed as the file), or of ``config_text=`` (its TOML text);
    neither: symfonic's defaults as
    ``legacy`` and ``smart``. :func:`replay_partial` takes the config the
    same way.

    ``out``: the report folder, written as ``critic-gate replay --out``
    writes it (``format``: both, or parquet only; the DataFrames are read
    from the Parquet tables); None keeps the tables in memory only.
    ``label``: the ``run`` column, by default the folder's name (as the
    CLI's), else ``run``. ``flags`` (:class:`ReplayFlags`) are the
    command line's flags (None: its default): ``plan``, ``skip_invalid``, ``decisions`` (all, changed,
    none), ``group_by`` (list), ``scope_columns`` (list; ``[""]`` names no
    key), ``force``, ``from_`` (traffic, openai-chat, otlp),
    ``max_ack_share``, ``max_line_bytes``, and ``threads`` (the blocks
    are evaluated on a pool of that many worker threads of the run's own,
    checked as ``--threads``; default: the process's, one per core).
    Every job that replays takes ``threads`` too.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files = [os.fspath(p) for p in paths]
    format = _tables_format(out, format)
    name = _label(label, out)
    options = _flags_given(**flags)
    cfg = _config(config, options)
    return _run_into(
        out, lambda folder: _native.replay(files, folder, cfg, name, format, **options)
    )


def _config(config: Optional[ConfigLike], options: dict[str, Any]) -> Optional[str]:
    """A config's path for the library, or None; a dict's TOML text goes
    into ``options`` as ``config_text`` (what a file holding it says)."""
    if config is None or isinstance(config, (str, os.PathLike)):
        return os.fspath(config) if config is not None else None
    if "config_text" in options:
        raise ValueError("give config (a path or a dict) or config_text (TOML text), not both")
    options["config_text"] = _native.config_toml(json.dumps(dict(config)))
    return None


def _flags_given(**given: Any) -> dict[str, Any]:
    """The keywords given (not None), paths as strings: what the library
    reads as the command line's flags; the rest take its defaults."""
    def path(v: Any) -> Any:
        return os.fspath(v) if isinstance(v, os.PathLike) else v

    return {
        k: ([path(x) for x in v] if isinstance(v, (list, tuple)) else path(v))
        for k, v in given.items()
        if v is not None
    }


def replay_partial(
    data: bytes,
    source: str,
    config: Optional[ConfigLike] = None,
    **flags: Unpack[ReplayFlags],
) -> bytes:
    """The partial result of one shard: ``data`` (the bytes of one traffic
    file, plain, gzip or zstd) replayed as the file named ``source``, under
    ``config`` (a config file's path) or ``config_text=`` (its TOML text,
    for workers that do not see the driver's files), as :func:`replay`
    takes them. The other keywords as for :func:`replay`. Every shard of one
    merge must use the same config and options."""
    options = _flags_given(**flags)
    cfg = _config(config, options)
    return _native.replay_partial(data, source, cfg, **options)


def merge(
    partials: Sequence[Union[bytes, PathLike]],
    out: Optional[PathLike] = None,
    *,
    label: Optional[str] = None,
    format: str = "both",
    **flags: Unpack[MergeFlags],
) -> Report:
    """Merge partial results, in the order of their files, into the
    reports of one replay over all of them (byte for byte what
    ``critic-gate replay FILES... --format both`` writes into a folder of
    the same name; ``label`` and ``format`` as for :func:`replay`). Each partial
    result is its bytes, or the path of a file ``critic-gate replay
    --partial`` wrote (read as the merge goes: many large shards merge in
    bounded memory)."""
    if isinstance(partials, (str, bytes, os.PathLike)):
        raise TypeError("partials: give a list of partial results (bytes or paths), in order")
    parts = [p if isinstance(p, bytes) else os.fspath(p) for p in partials]
    format = _tables_format(out, format)
    name = _label(label, out)
    options = _flags_given(label=name, format=format, **flags)
    return _run_into(out, lambda folder: _native.merge(parts, folder, **options))


@overload
def explain(
    turns: dict[str, Any], config: Optional[PathLike] = None, *, from_: Literal["traffic"] = "traffic"
) -> dict[str, Any]: ...
@overload
def explain(
    turns: Union[dict[str, Any], Sequence[dict[str, Any]], PathLike],
    config: Optional[PathLike] = None,
    *,
    from_: str = "traffic",
) -> list[dict[str, Any]]: ...
def explain(
    turns: Union[dict[str, Any], Sequence[dict[str, Any]], PathLike],
    config: Optional[PathLike] = None,
    *,
    from_: str = "traffic",
) -> Union[dict[str, Any], list[dict[str, Any]]]:
    """How each variant of ``config`` decides a turn, and why: the reasons,
    the confidence and where it came from, the draft's features.

    ``turns``: one turn (a dict as one line of traffic holds; the result is
    one dict), a list of them, or a file's path (``from_``: traffic,
    openai-chat or otlp, as ``explain --from``: one conversation or trace
    document holds several turns); the result is then a list,
    one dict a turn in order, worked out in one call (as fast as the
    CLI's ``explain --json``). An invalid turn raises InvalidLineError
    with ``source`` ``turn`` (one), ``turns`` and ``line`` its place from
    1 (a list), or the file and its line.""" 
    cfg = os.fspath(config) if config is not None else None
    if isinstance(turns, dict) and from_ == "traffic":
        return json.loads(_native.explain(json.dumps(turns), cfg, None, "turn", from_=from_))
    if isinstance(turns, dict):
        turns = [turns]
    if isinstance(turns, (str, os.PathLike)):
        out = _native.explain(None, cfg, os.fspath(turns), "turn", from_=from_)
    else:
        text = "\n".join(json.dumps(t) for t in turns)
        out = _native.explain(text, cfg, None, "turns", from_=from_)
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _files(paths: Union[PathLike, Sequence[PathLike]]) -> list[str]:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    return [os.fspath(p) for p in paths]


def sweep(
    paths: Union[PathLike, Sequence[PathLike]],
    config: ConfigLike,
    out: PathLike,
    *,
    label: Optional[str] = None,
    format: TablesFormat = "both",
    **flags: Unpack[SweepFlags],
) -> Report:
    """``critic-gate sweep``: every setting of ``config``'s ``[sweep]`` grid
    against the baseline, with frontier.csv and frontier.svg, into ``out``.
    ``label`` and ``format`` (both or parquet) as for :func:`replay`;
    ``flags`` (:class:`SweepFlags`) are the command line's: ``from_``,
    ``threads``, ``skip_invalid``, ``max_line_bytes``, ``force``,
    ``max_ack_share``."""
    # The DataFrames are read from the Parquet tables: refused before any
    # work unless the folder gets them.
    options = _flags_given(label=label, format=_tables_format(out, format), **flags)
    cfg = _config(config, options)
    _native.sweep(_files(paths), os.fspath(out), cfg, **options)
    return Report(out)


class Calibration(dict[str, Any]):
    """calibration.json as a dict (the guarantee, the family, every
    procedure's outcome, the held-out figures), with the family as a
    DataFrame (``family``: a row per member, its parts' figures as
    ``learn.savings``, ``calibration.upper_bound``, ...) and each part's
    sweep as a :class:`Report` (``parts``: ``learn``, ``calibration``,
    ``held-out``, those written). ``folder``: where they are."""

    def __init__(self, folder: Path) -> None:
        super().__init__(json.loads((folder / "calibration.json").read_text(encoding="utf-8")))
        self.folder = folder
        self.family = pl.json_normalize(self["selection"]["family"], separator=".")
        self.parts = {
            name: Report(folder / name)
            for name in ("learn", "calibration", "held-out")
            if (folder / name / "schema.json").is_file()
        }


class Mined(dict[str, Any]):
    """mine.json as a dict, with mine's tables as DataFrames typed as
    docs/reports.md declares them (``proposals``, ``missed``,
    ``risky_skips``, ``risky_drafts``) and the validation replay of the
    proposals as a :class:`Report` (``validation``, None when no pattern
    was proposed). ``folder``: where they are."""

    def __init__(self, folder: Path) -> None:
        super().__init__(json.loads((folder / "mine.json").read_text(encoding="utf-8")))
        self.folder = folder
        tables = json.loads(_native.schema_json())["tables"]
        read = lambda name: _declared_csv(folder / f"{name}.csv", tables[f"{name}.csv"])  # noqa: E731
        self.proposals = read("proposals")
        self.missed = read("missed")
        self.risky_skips = read("risky_skips")
        self.risky_drafts = read("risky_drafts")
        validation = folder / "validation"
        self.validation = Report(validation) if (validation / "schema.json").is_file() else None


def calibrate(
    paths: Union[PathLike, Sequence[PathLike]],
    config: ConfigLike,
    out: PathLike,
    max_regression_rate: float,
    *,
    label: Optional[str] = None,
    format: TablesFormat = "both",
    **flags: Unpack[CalibrateFlags],
) -> Calibration:
    """``critic-gate calibrate``: the ``[sweep]`` variant that saves the most
    while its safety regression rate stays within ``max_regression_rate``
    with confidence 1 - ``delta`` (Learn then Test). Returns calibration.json
    (the guarantee, the family, every procedure's outcome, the held-out
    figures); calibrated.toml is beside it in ``out``. ``flags``
    (:class:`CalibrateFlags`, the command line's): ``delta`` (0.05),
    ``seed`` (0), ``procedure`` (fixed-sequence, holm, bonferroni),
    ``min_label_coverage`` (0.5), ``held_out`` (True; False is
    ``--no-held-out``), ``assume_missing_at_random`` (False: a variant
    whose worst-case bound, every unlabelled new skip a regression, is
    above R is not certified), ``plan`` (an audit plan, ``plan --audit``,
    whose shadow verdicts the traffic holds: a member's two-phase worst
    case stands for its worst case), and the flags of :func:`sweep`;
    ``label`` and ``format`` as for :func:`sweep`."""
    options = _flags_given(
        label=label,
        # None (untyped) is Python's default too, not the CLI's csv.
        format=format if format is not None else "both",
        **flags,
    )
    cfg = _config(config, options)
    _native.calibrate(_files(paths), os.fspath(out), cfg, max_regression_rate, **options)
    return Calibration(Path(out))


def mine(
    paths: Union[PathLike, Sequence[PathLike]],
    out: PathLike,
    config: Optional[ConfigLike] = None,
    *,
    label: Optional[str] = None,
    **flags: Unpack[MineFlags],
) -> Mined:
    """``critic-gate mine``: the acks a smart variant's patterns miss
    (proposed or held back, with why) and the skips that are more than an
    ack. Returns mine.json; proposals.csv, proposals.toml, risky_skips.csv
    and validation/ are in ``out``. ``flags`` (:class:`MineFlags`, the
    command line's): ``variant``, ``min_support`` (5), ``min_labelled``
    (30), ``max_regression_rate`` (0.05; or ``budget_from_variant=True``,
    not both), ``stress``, ``assume_missing_at_random``, ``label``, and the
    flags of a run (``from_``, ``threads``, ``skip_invalid``,
    ``max_line_bytes``, ``force``, ``max_ack_share``)."""
    options = _flags_given(label=label, **flags)
    cfg = _config(config, options)
    _native.mine(_files(paths), os.fspath(out), cfg, **options)
    return Mined(Path(out))


class Planned(dict):  # type: ignore[type-arg]
    """plan.toml as a dict, as ``plan`` returns it, with the caveats the
    command line prints in ``caveats`` (a list of str; an attribute, so the
    dict stays the plan ``ExplorationGate`` and the commands take)."""

    caveats: list[str] = []


def plan(
    paths: Union[PathLike, Sequence[PathLike]],
    out: PathLike,
    config: Optional[ConfigLike] = None,
    **flags: Unpack[PlanFlags],
) -> "Planned":
    """``critic-gate plan``: a critic sample of production's skips sized to
    certify their regression rate within ``max_skip_regression_rate`` (or
    ``max_harmful_per_1k`` harmful skips per 1,000 turns; one of the two)
    at ``confidence`` within ``window_days`` (a number of days, or the
    command line's ``"2w"``), a probability per ``strata`` value. Returns
    plan.toml as a dict; plan.csv and plan.md are in ``out``. Refused
    (``UsageError``, nothing written) when ``max_calls_per_day`` cannot
    meet the rate: the message gives the best rate it can.
    ``fidelity_share`` also sends that share of production's reviewed
    fires to the shadow critic, for ``monitor``'s fidelity check. ``flags``
    (:class:`PlanFlags`) are the command line's, each declared once with
    its flag. The plan's caveats (strata it does not expect to certify in
    time, a config that is probably not production's), which the command
    line prints, are warned (:class:`CriticGateWarning`) and in the
    returned dict's ``caveats`` attribute (a :class:`Planned`). Ctrl-C stops it within a second with
    nothing written. See docs/watching.md."""
    options = _flags_given(**flags)
    cfg = _config(config, options)
    _, written, caveats = _native.plan(_files(paths), os.fspath(out), cfg, **options)
    for c in caveats:
        warnings.warn(c, CriticGateWarning, stacklevel=2)
    planned = Planned(json.loads(written))
    planned.caveats = caveats
    return planned


def sample(
    paths: Union[PathLike, Sequence[PathLike]],
    plan: PathLike,
    out: PathLike,
    config: Optional[ConfigLike] = None,
    **flags: Unpack[SampleFlags],
) -> dict[str, Any]:
    """``critic-gate sample``: draw ``plan``'s shadow sample of
    production's skips from recorded traffic. Returns sample.json as a
    dict; requests.jsonl (one request a line, for a critic to review) is
    beside it in ``out``. ``config``'s production variant must have the
    plan's gate settings. ``flags`` (:class:`SampleFlags`) are the command
    line's; ``threads`` places the turns on a pool of the run's own (the
    requests are the same with any number). See docs/watching.md."""
    options = _flags_given(**flags)
    cfg = _config(config, options)
    _, summary = _native.sample(_files(paths), os.fspath(plan), os.fspath(out), cfg, **options)
    return json.loads(summary)


def labels(
    paths: Union[PathLike, Sequence[PathLike]],
    verdicts: PathLike,
    plan: PathLike,
    out: PathLike,
    config: Optional[ConfigLike] = None,
    **flags: Unpack[LabelsFlags],
) -> dict[str, Any]:
    """``critic-gate labels``: a shadow critic's ``verdicts`` (one JSON
    object a line, ``{"run_id", "turn", "verdict"}`` or ``{"run_id",
    "turn", "error"}`` for a failed call) on ``plan``'s sample, brought
    back into the traffic as labels with their inclusion probability,
    written to the file ``out`` (``force=True`` replaces it). Returns
    what it counted (turns, verdicts, labelled, failed, duplicates, ...).
    ``flags`` (:class:`LabelsFlags`) are the command line's. See
    docs/watching.md."""
    options = _flags_given(**flags)
    cfg = _config(config, options)
    _, counts = _native.labels(
        _files(paths), os.fspath(verdicts), os.fspath(plan), os.fspath(out), cfg, **options
    )
    return json.loads(counts)


def derive(inputs: Union[PathLike, Iterable[dict[str, Any]]]) -> list[dict[str, Any]]:
    """``critic-gate derive``: the signals symfonic derives from a turn's
    inputs (``user_message``, ``draft``, ``tool_calls``, ``identifier_keys``,
    ``tool_trigger_keywords``, ``hydrated_context``, ``intent_on``), one dict
    per input. ``inputs`` is a JSON Lines file (plain, .gz or .zst) or the
    inputs themselves as dicts; a bad one raises ``InvalidLineError`` naming
    its line (for dicts, ``<inputs>`` and its number from 1)."""
    if isinstance(inputs, (str, os.PathLike)):
        text = _native.derive_file(os.fspath(inputs))
        return [json.loads(line) for line in text.splitlines() if line]
    lines = [json.dumps(i, ensure_ascii=False) for i in inputs]
    return [json.loads(line) for line in _native.derive_lines(lines, "<inputs>")]


class Imported:
    """What ``critic-gate import`` did: ``turns`` written to ``out``,
    ``rejected`` records (set aside in ``rejects`` with ``skip_invalid``),
    and what the conversion ``counts`` (a trace's runs, ...)."""

    def __init__(
        self,
        out: Path,
        turns: int,
        rejected: int,
        counts: dict[str, int],
        rejects: Optional[Path],
        text: str,
    ) -> None:
        self.out, self.turns, self.rejected = out, turns, rejected
        self.counts, self.rejects, self.text = counts, rejects, text

    def __repr__(self) -> str:
        return f"Imported({self.turns} turns into {os.fspath(self.out)!r}, {self.rejected} rejected)"


def import_(
    paths: Union[PathLike, Sequence[PathLike]],
    out: PathLike,
    *,
    from_: ImportFormat,
    config: Optional[PathLike] = None,
    **flags: Unpack[ImportFlags],
) -> Imported:
    """``critic-gate import`` (``import`` is Python's keyword, hence the
    underscore, as ``from_``): OpenAI-chat transcripts or OTLP traces into
    the traffic file ``out``, written only when every input was read (or,
    with ``skip_invalid``, with what cannot be converted set aside beside
    it). ``config``'s ``[deployment]`` table says how production was
    configured. ``flags`` (:class:`ImportFlags`) are the command line's.
    See docs/import-formats.md."""
    cfg = os.fspath(config) if config is not None else None
    text, turns, rejected, counts, rejects = _native.import_(
        _files(paths), os.fspath(out), from_, cfg, **_flags_given(**flags)
    )
    return Imported(
        Path(out),
        turns,
        rejected,
        dict(counts),
        Path(rejects) if rejects is not None else None,
        text,
    )


def synth(
    out: PathLike,
    turns: int,
    **flags: Unpack[SynthFlags],
) -> Path:
    """``critic-gate synth``: ``turns`` turns of synthetic traffic into
    ``out`` (``.gz`` or ``.zst`` compress; the same seed, the same traffic),
    or, with ``shape="openai-chat"``, the same runs as chat transcripts.
    ``flags`` (:class:`SynthFlags`: ``seed``, ``mix``, ``shape``) are the
    command line's. Returns ``out``."""
    _native.synth(os.fspath(out), turns, **_flags_given(**flags))
    return Path(out)


def patterns(config: Optional[PathLike] = None) -> str:
    """``critic-gate patterns``: symfonic's built-in trivial-ack patterns
    as a TOML list to paste, or, with ``config``, the list each variant
    ends up with."""
    return _native.patterns(os.fspath(config) if config is not None else None)


def init(out: Optional[PathLike] = None, **flags: Unpack[InitFlags]) -> str:
    """``critic-gate init``: the commented starter config. Returns its
    text, and writes it to ``out`` when given (an existing file only with
    ``force``)."""
    return _native.init(os.fspath(out) if out is not None else None, **_flags_given(**flags))


class Watch:
    """What ``critic-gate monitor`` found: ``failed`` (its exit 1: a change
    alarm, or the rate above the budget), ``text`` (what it prints),
    ``table`` (monitor.csv or .parquet as a DataFrame: one row per period
    and stratum, ``stratum == "all"`` the pooled row), ``status`` (the
    last pooled row as a dict) and ``decided_by`` (which anytime bounds
    the status read: ``"worst_case"``, the default, or
    ``"missing_at_random"`` where ``assume_missing_at_random`` asked)."""

    def __init__(self, failed: bool, text: str, table: pl.DataFrame) -> None:
        self.failed = failed
        self.text = text
        self.table = table
        pooled = table.filter(pl.col("stratum") == "all")
        self.status: Optional[dict[str, Any]] = pooled.row(-1, named=True) if pooled.height else None
        self.decided_by: Optional[str] = self.status["decided_by"] if self.status else None

    def __bool__(self) -> bool:
        return not self.failed

    def __repr__(self) -> str:
        if not self.status:
            return f"<critic_gate.Watch no period failed={self.failed}>"
        return (f"<critic_gate.Watch {self.status['status']} ({self.decided_by}) "
                f"failed={self.failed}>")


def monitor(
    paths: Union[PathLike, Sequence[PathLike]],
    plan: PathLike,
    out: PathLike,
    config: Optional[ConfigLike] = None,
    *,
    format: TablesFormat = "csv",
    **flags: Unpack[MonitorFlags],
) -> Watch:
    """``critic-gate monitor``: traffic labelled by ``plan``'s sample,
    cut ``by`` day, week or release (``release_at`` dates, or the scope
    path ``release_field`` that names each turn's release), with the
    estimate, the period's bound, bounds valid at every look, the change
    alarm and a status per period and stratum, written into ``out``
    (``format``: the table's, as the command line's ``--format``).
    ``state`` keeps the counts between runs (a period counted already is
    refused); ``merge`` adds shards' states. ``paths`` may be empty with
    ``merge`` or an existing ``state``. ``flags`` (:class:`MonitorFlags`)
    are the command line's. See docs/watching.md."""
    options = _flags_given(format=format, **flags)
    # True, False or None (the config's `[monitor]` table decides).
    mar = options.pop("assume_missing_at_random", None)
    cfg = _config(config, options)
    files = _files(paths) if paths else []
    text, failed, said = _native.monitor(files, os.fspath(plan), os.fspath(out), cfg, mar, **options)
    for w in said:
        warnings.warn(w, CriticGateWarning, stacklevel=2)
    folder = Path(out)
    if format == "parquet":
        table = pl.read_parquet(folder / "monitor.parquet")
    else:
        declared = json.loads(_native.schema_json())["tables"]["monitor.csv"]
        table = _declared_csv(folder / "monitor.csv", declared)
    return Watch(failed, text, table)


def coin_value(salt: str, key: bytes) -> int:
    """The plan's coin for ``key`` under ``salt``: the top 53 bits of
    SHA-256(salt, a zero byte, key), in [0, 2**53)."""
    return _native.coin_value(salt, key)


def drawn(salt: str, key: bytes, probability: float) -> bool:
    """Whether the turn with ``key`` is in a sample drawn at
    ``probability`` under ``salt``: ``coin_value(salt, key) / 2**53 <
    probability``, the same inside symfonic and offline."""
    return _native.coin_drawn(salt, key, probability)


def turn_key(run_id: str, turn: Optional[int] = None, turn_id: Optional[str] = None) -> bytes:
    """A turn's coin key: ``turn_id`` (symfonic's run id, one per user
    turn), else ``run_id``, the byte 0x1F and ``turn``, else ``run_id``."""
    return _native.turn_key(run_id, turn, turn_id)


class Verdict:
    """What ``critic-gate check`` decides: ``passed`` (its exit 0), ``text``
    (what it prints) and ``results``, one dict per budget and variant
    (``variant``, ``budget``, ``metric``, ``value``, ``op``, ``limit``,
    ``pass``, ``note``)."""

    def __init__(self, passed: bool, text: str, results: list[dict[str, Any]]) -> None:
        self.passed = passed
        self.text = text
        self.results = results

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        failed = sum(1 for r in self.results if not r["pass"])
        return f"<critic_gate.Verdict passed={self.passed} ({failed} of {len(self.results)} failed)>"


def check(
    folder: PathLike,
    config: Optional[PathLike] = None,
    *,
    max_safety_regressions: Optional[int] = None,
    max_safety_regression_rate: Optional[float] = None,
    max_worst_case_regression_rate: Optional[float] = None,
    min_skip_rate: Optional[float] = None,
    max_added_call_rate: Optional[float] = None,
    min_label_coverage: Optional[float] = None,
    min_turns: Optional[int] = None,
    max_risky_skip_rate: Optional[float] = None,
    max_rejected: Optional[int] = None,
    min_production_agreement: Optional[float] = None,
    max_skip_regression_rate: Optional[float] = None,
    max_skip_worst_case_regression_rate: Optional[float] = None,
    **flags: Unpack[CheckFlags],
) -> Verdict:
    """``critic-gate check``: a replay's folder against release budgets,
    given as keyword arguments named as ``[check]``'s keys (for example
    ``max_safety_regressions=0``, ``max_safety_regression_rate=0.02``; an
    unknown one is refused, naming them all), each over ``config``'s
    ``[check]`` table. With no budget at all it raises
    :class:`CannotJudgeError` rather than pass. Unless
    ``assume_missing_at_random=True`` (or ``[check]``'s key says so),
    ``max_safety_regression_rate`` also holds the worst case (every
    unlabelled new skip a regression) to its limit. ``flags``
    (:class:`CheckFlags`: ``variants``, ``markdown``,
    ``assume_missing_at_random``) are the command line's."""
    cfg = os.fspath(config) if config is not None else None
    options = _flags_given(**flags)
    mar = options.pop("assume_missing_at_random", None)
    # The budgets as `check --help` lists them (a test holds the two
    # lists together); None: not given.
    budgets = _flags_given(
        max_safety_regressions=max_safety_regressions,
        max_safety_regression_rate=max_safety_regression_rate,
        max_worst_case_regression_rate=max_worst_case_regression_rate,
        min_skip_rate=min_skip_rate,
        max_added_call_rate=max_added_call_rate,
        min_label_coverage=min_label_coverage,
        min_turns=min_turns,
        max_risky_skip_rate=max_risky_skip_rate,
        max_rejected=max_rejected,
        min_production_agreement=min_production_agreement,
        max_skip_regression_rate=max_skip_regression_rate,
        max_skip_worst_case_regression_rate=max_skip_worst_case_regression_rate,
    )
    passed, text, results = _native.check(
        os.fspath(folder), cfg, mar, **options, **budgets
    )
    return Verdict(passed, text, json.loads(results))


def diff(
    old: PathLike,
    new: PathLike,
    out: Optional[PathLike] = None,
    **flags: Unpack[DiffFlags],
) -> dict[str, Any]:
    """``critic-gate diff``: the release's replay ``old`` against the
    candidate's ``new``. Writes flips.csv and metrics_diff.csv into ``out``
    (default: ``new``) and returns ``text`` (what the command prints),
    ``new_regressions``, ``passed`` (the CLI's exit 0: false only with
    ``fail_on_new_regressions`` and new regressions), and the two tables
    as DataFrames (``flips``, ``metrics``)."""
    text, new_regressions, folder, passed = _native.diff(
        os.fspath(old),
        os.fspath(new),
        os.fspath(out) if out is not None else None,
        **_flags_given(**flags),
    )
    schema = json.loads(Path(new, "schema.json").read_text(encoding="utf-8"))["tables"]
    return {
        "text": text,
        "new_regressions": new_regressions,
        "passed": passed,
        "out": folder,
        "flips": _declared_csv(Path(folder, "flips.csv"), schema["flips.csv"]),
        "metrics": _declared_csv(Path(folder, "metrics_diff.csv"), schema["metrics_diff.csv"]),
    }


_POLARS_TYPES = {
    "u64": pl.UInt64,
    "i64": pl.Int64,
    "f64": pl.Float64,
    "string": pl.String,
    "bool": pl.Boolean,
}


# A JSON number, as the CSV writer tells `-2` (a number) from `-x` (text a
# spreadsheet would run).
_NUMBER = r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$"


def _unguarded(cell: pl.Expr) -> pl.Expr:
    """A text cell as the table holds it: the CSV writer puts a `'` before
    text a spreadsheet would read as a formula (`=`, `+`, `@`, a tab or a
    carriage return first, or `-` before anything but a number), and
    before such a text that opens with `'` already; this takes it off."""
    rest = cell.str.slice(1)
    core = rest.str.strip_chars_start("'")
    formula = core.str.contains(r"^[=+@\t\r]") | (
        core.str.starts_with("-") & (core.str.len_chars() > 1) & ~core.str.contains(_NUMBER)
    )
    return pl.when(cell.str.starts_with("'") & formula).then(rest).otherwise(cell)


def _declared_csv(path: Path, table: dict[str, Any]) -> pl.DataFrame:
    """A CSV table read with the types its schema declares (never guessed),
    its text cells as the table holds them (without the CSV's guard)."""
    schema = {c["name"]: _POLARS_TYPES[c["type"]] for c in table["columns"]}
    df = pl.read_csv(path, schema=schema)
    text = [name for name, ty in schema.items() if ty == pl.String]
    return df.with_columns(_unguarded(pl.col(n)).alias(n) for n in text) if text else df


# The sampling helpers (after `drawn`, which the exploration gate uses).
from . import shadow  # noqa: E402
from .exploration import ExplorationGate  # noqa: E402

__all__ += ["ExplorationGate", "shadow"]
