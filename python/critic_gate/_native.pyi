"""Type stubs of the compiled module (python/src/lib.rs)."""

from typing import Any, Optional, Union

__version__: str

class CriticGateError(Exception):
    """A critic-gate error: the message names the file, the line and the reason."""

class InvalidLineError(CriticGateError):
    """An invalid input line (strict mode)."""
    source: str
    line: int
    reason: str

class InputError(CriticGateError):
    """An input that could not be read."""

class ConfigError(CriticGateError):
    """An invalid config: a key, a value or a pattern."""
    file: Optional[str]
    """The config file, or None for config text or the defaults."""
    line: Optional[int]
    """The line of the value the error is about, when it could be found."""
    kind: str
    """"unreadable", "syntax", "field" or "value"."""

class UsageError(CriticGateError):
    """A request that cannot be carried out as given."""

class WriteError(CriticGateError):
    """A report that could not be written."""

class CannotJudgeError(CriticGateError):
    """A report folder that cannot be judged or compared."""

class SystemRefusedError(CriticGateError):
    """The operating system refused."""

def replay(
    paths: list[str],
    out: str,
    config: Optional[str] = None,
    label: Optional[str] = None,
    format: str = "both",
    **options: Any,
) -> list[str]:
    """Replay ``paths`` into the report folder ``out``; the run's warnings and notes."""

def replay_partial(data: bytes, source: str, config: Optional[str] = None, **options: Any) -> bytes:
    """One shard's partial result (``config``: a path; ``config_text=``: TOML text)."""

def merge(
    partials: list[Union[bytes, str]], out: str, label: Optional[str] = None, format: str = "both", force: bool = False
) -> list[str]:
    """Merge partial results, in order, into the report folder ``out``; the run's warnings and notes."""

def explain(
    turns: Optional[str], config: Optional[str] = None, path: Optional[str] = None, name: str = "turn",
    from_: str = "traffic",
) -> str:
    """Turns (JSON lines, or the file ``path``) explained under each variant, one JSON object a line."""

def sweep(paths: list[str], out: str, config: Optional[str] = None, **options: Any) -> None:
    """``critic-gate sweep`` into ``out``."""

def calibrate(paths: list[str], out: str, config: Optional[str], max_regression_rate: float, **options: Any) -> str:
    """``critic-gate calibrate`` into ``out``; returns what it prints."""

def mine(paths: list[str], out: str, config: Optional[str] = None, budget_from_variant: bool = False, **options: Any) -> str:
    """``critic-gate mine`` into ``out``; returns what it prints."""

def check(dir: str, config: Optional[str] = None, variants: Optional[list[str]] = None, markdown: Optional[str] = None, assume_missing_at_random: Optional[bool] = None, **budgets: Any) -> tuple[bool, str, str]:
    """``critic-gate check``: (passed, text, results as JSON)."""

def diff(
    old: str, new: str, out: Optional[str] = None, fail_on_new_regressions: bool = False
) -> tuple[str, int, str, bool]:
    """``critic-gate diff``: (text, new regressions, the folder written, passed)."""
def monitor(paths: list[str], plan: str, out: str, config: Optional[str] = None, by: str = "day", release_at: list[str] = ..., release_field: Optional[str] = None, state: Optional[str] = None, merge: list[str] = ..., table_format: str = "csv", from_: str = "traffic", skip_invalid: bool = False, force: bool = False, max_fidelity_gap: float = 0.05, false_alarm_every_days: Optional[float] = None, alarm_rise: Optional[float] = None, config_text: Optional[str] = None) -> tuple[str, bool]: ...
def plan(paths: list[str], out: str, config: Optional[str], max_skip_regression_rate: Optional[float], max_harmful_per_1k: Optional[float], confidence: float, window_days: float, strata: Optional[str], max_calls_per_day: Optional[float], salt: Optional[str], days: Optional[float], from_: str, skip_invalid: bool, force: bool, false_alarm_every_days: float = 365.0, audit: Optional[str] = None, fidelity_share: float = 0.0, config_text: Optional[str] = None) -> tuple[str, str]: ...
def config_toml(json: str) -> str: ...
def derive_file(file: str) -> str: ...
def derive_lines(lines: list[str], source: str) -> list[str]: ...
def import_(paths: list[str], out: str, from_: str, config: Optional[str] = None, skip_invalid: bool = False, max_line_bytes: int = ..., threads: Optional[int] = None) -> tuple[str, int, int, list[tuple[str, int]], Optional[str]]: ...
def synth(out: str, turns: int, seed: int = 1, mix: str = "default", shape: str = "traffic") -> None: ...
def patterns(config: Optional[str] = None) -> str: ...
def init(out: Optional[str] = None, force: bool = False) -> str: ...
def schema_json() -> str: ...
