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

def merge(partials: list[Union[bytes, str]], out: str, **options: Any) -> list[str]:
    """Merge partial results, in order, into the report folder ``out``; the run's warnings and notes."""

def explain(
    turns: Optional[str], config: Optional[str] = None, path: Optional[str] = None, name: str = "turn",
    **options: Any,
) -> str:
    """Turns (JSON lines, or the file ``path``) explained under each variant, one JSON object a line."""

def sweep(paths: list[str], out: str, config: Optional[str] = None, **options: Any) -> None:
    """``critic-gate sweep`` into ``out``."""

def calibrate(paths: list[str], out: str, config: Optional[str], max_regression_rate: float, **options: Any) -> str:
    """``critic-gate calibrate`` into ``out``; returns what it prints."""

def mine(paths: list[str], out: str, config: Optional[str] = None, **options: Any) -> str:
    """``critic-gate mine`` into ``out``; returns what it prints."""

def check(dir: str, config: Optional[str] = None, assume_missing_at_random: Optional[bool] = None, **options: Any) -> tuple[bool, str, str]:
    """``critic-gate check``: (passed, text, results as JSON)."""

def diff(old: str, new: str, out: Optional[str] = None, **options: Any) -> tuple[str, int, str, bool]:
    """``critic-gate diff``: (text, new regressions, the folder written, passed)."""

def monitor(paths: list[str], plan: str, out: str, config: Optional[str] = None, assume_missing_at_random: Optional[bool] = None, **options: Any) -> tuple[str, bool, list[str]]:
    """``critic-gate monitor`` into ``out``: (what it prints, whether it fails, its warnings)."""

def plan(paths: list[str], out: str, config: Optional[str] = None, **options: Any) -> tuple[str, str, list[str]]:
    """``critic-gate plan`` into ``out``: (what it prints, plan.toml as JSON, its caveats)."""

def sample(paths: list[str], plan: str, out: str, config: Optional[str] = None, **options: Any) -> tuple[str, str]:
    """``critic-gate sample`` into ``out``: (what it prints, sample.json's text)."""

def labels(paths: list[str], verdicts: str, plan: str, out: str, config: Optional[str] = None, **options: Any) -> tuple[str, str]:
    """``critic-gate labels`` into the file ``out``: (what it prints, its counts as JSON)."""

def config_toml(json: str) -> str: ...
def derive_file(file: str) -> str: ...
def derive_lines(lines: list[str], source: str) -> list[str]: ...
def import_(paths: list[str], out: str, from_: str, config: Optional[str] = None, **options: Any) -> tuple[str, int, int, list[tuple[str, int]], Optional[str]]: ...
def synth(out: str, turns: int, **options: Any) -> None: ...
def patterns(config: Optional[str] = None) -> str: ...
def init(out: Optional[str] = None, **options: Any) -> str: ...
def schema_json() -> str: ...
def exploration_plan(name: str, text: str, json: bool) -> str: ...
