"""A shadow critic over a plan's sample, outside production: ``run`` sends
each request ``critic-gate sample`` wrote (requests.jsonl) to a critic you
supply and writes the verdicts file ``critic-gate labels`` reads.

A critic is any callable taking one request (a dict: ``run_id``, ``turn``,
``draft``, ``tool_calls``, ``scope``, ``stratum``, ``probability``, ...)
and returning ``"approve"``, ``"revise"`` or ``"refuse"``, or a dict with
``verdict`` and optionally ``tokens_in``, ``tokens_out``, ``latency_ms``
and ``model``. A critic that raises is a failed call: its line says
``error`` (never a verdict), so the figures count it as failed and the
worst case as a regression. KeyboardInterrupt stops the run and writes
nothing.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Union

VERDICTS = ("approve", "revise", "refuse")
EXTRAS = ("tokens_in", "tokens_out", "latency_ms", "model")

Request = dict[str, Any]
Critic = Callable[[Request], Union[str, dict[str, Any]]]


def _requests(requests: Union[str, os.PathLike, Iterable[Request]]) -> Iterable[Request]:
    if isinstance(requests, (str, os.PathLike)):
        with open(requests, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        yield json.loads(line)
                    except json.JSONDecodeError as e:
                        raise ValueError(f"{os.fspath(requests)}:{n}: not a request: {e}") from e
    else:
        yield from requests


def _line(request: Request, critic: Critic) -> dict[str, Any]:
    out: dict[str, Any] = {"run_id": request["run_id"], "turn": request.get("turn"),
                           "plan_id": request.get("plan_id")}
    try:
        said = critic(request)
        if isinstance(said, str):
            said = {"verdict": said}
        if not isinstance(said, dict) or said.get("verdict") not in VERDICTS:
            raise ValueError(f"the critic returned {said!r}, not one of {VERDICTS} or a dict with one")
    except Exception as e:  # a failed call, never a verdict
        out["error"] = f"{type(e).__name__}: {e}"[:200]
        return out
    out["verdict"] = said["verdict"]
    out.update({k: said[k] for k in EXTRAS if said.get(k) is not None})
    return out


def run(requests: Union[str, os.PathLike, Iterable[Request]], critic: Critic,
        out: Union[str, os.PathLike]) -> dict[str, int]:
    """Review every request with ``critic`` and write the verdicts to
    ``out`` (JSON Lines, one per request, in the requests' order; the file
    appears whole or not at all). Returns ``{"requests", "verdicts",
    "failed"}``."""
    out = Path(out)
    counts = {"requests": 0, "verdicts": 0, "failed": 0}
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for request in _requests(requests):
                line = _line(request, critic)
                counts["requests"] += 1
                counts["failed" if "error" in line else "verdicts"] += 1
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return counts
