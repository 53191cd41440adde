"""Type stubs of the compiled module (python/src/lib.rs)."""

from typing import Any, Optional, Union

__version__: str

class CriticGateError(Exception):
    """A critic-gate error: the message names the file, the line and the reason."""

def replay(
    paths: list[str],
    out: str,
    config: Optional[str] = None,
    label: Optional[str] = None,
    format: str = "both",
    **options: Any,
) -> None:
    """Replay ``paths`` into the report folder ``out``."""

def replay_partial(data: bytes, source: str, config: str, **options: Any) -> bytes:
    """One shard's partial result (``config``: the config's TOML text)."""

def merge(
    partials: list[Union[bytes, str]], out: str, label: Optional[str] = None, format: str = "both", force: bool = False
) -> None:
    """Merge partial results, in order, into the report folder ``out``."""

def explain(turn: str, config: Optional[str] = None) -> str:
    """One turn (JSON text) explained under each variant, as JSON text."""
