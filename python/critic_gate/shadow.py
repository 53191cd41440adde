"""A shadow critic over a plan's sample, outside production: ``run`` sends
each request ``critic-gate sample`` wrote (requests.jsonl) to a critic you
supply and appends its verdicts to the file ``critic-gate labels`` reads.

A critic is any callable, plain or ``async def``, taking one request (a
dict: ``run_id``, ``turn``, ``draft``, ``tool_calls``, ``scope``,
``stratum``, ``probability``, ...) and returning ``"approve"``,
``"revise"`` or ``"refuse"``, or a dict with ``verdict`` and optionally
``tokens_in``, ``tokens_out``, ``latency_ms`` and ``model``.
``symfonic_critic`` builds one from symfonic's own critic.

How a call can end, and what its line says:

- a verdict: the verdict line;
- a failure worth trying again (the critic raises :class:`Transient`, or a
  timeout, a lost connection, a rate limit or an overloaded service, see
  :func:`is_transient`): retried with exponential backoff, and written as
  an ``error`` line only when the retries are spent;
- a failure for good (the critic raises :class:`Failed`): an ``error``
  line at once;
- anything else the critic raises, or a value that is not a verdict, is a
  bug in the critic, not a failed call: :class:`CriticError` is raised at
  once, naming the request: the calls under way are waited for and
  written (they are paid for), the calls not yet made are not made.

Every line is appended and flushed as its call ends (in the order calls
end), so an interrupted run keeps every call it made; run again into the
same file, it makes only the calls that have no verdict yet (failed ones
are asked again: ``labels`` takes a verdict beside a failed call for the
same turn as a retry). Ctrl-C stops it within a second, keeping the calls
under way that come back within ``GRACE`` (0.4 s).
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import contextvars
import inspect
import json
import os
import random
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, Union

VERDICTS = ("approve", "revise", "refuse")
EXTRAS = ("tokens_in", "tokens_out", "latency_ms", "model")

# Seconds the calls under way at Ctrl-C have to come back and be kept (the
# run stops within a second).
GRACE = 0.4

Request = dict[str, Any]
Critic = Callable[[Request], Any]

# The exception classes of the usual model clients (anthropic, openai,
# httpx, langchain's wrappers) that say "try again later", by name, so no
# client need be imported here.
TRANSIENT_NAMES = frozenset({
    "RateLimitError", "APITimeoutError", "APIConnectionError", "InternalServerError",
    "OverloadedError", "ServiceUnavailableError", "TimeoutException", "ConnectTimeout",
    "ReadTimeout", "RemoteProtocolError",
})


class Transient(Exception):
    """Raise from a critic for a failure worth trying again (a timeout, a
    rate limit). ``retry_after``: seconds the service asked to wait, if it
    said; the backoff waits at least that."""

    def __init__(self, message: str = "", *, retry_after: Optional[float] = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after

    def __reduce__(self) -> Any:
        return (_transient, (str(self), self.retry_after))


def _transient(message: str, retry_after: Optional[float]) -> Transient:
    return Transient(message, retry_after=retry_after)


class Failed(Exception):
    """Raise from a critic for a call that failed for good (the model
    refused to answer, the request is too long): its line says ``error``
    at once, with no retry."""


class CriticError(RuntimeError):
    """The critic is broken: it raised something that is neither
    :class:`Transient` nor :class:`Failed` (a ``KeyError``, a ``TypeError``)
    or returned something that is not a verdict. Names the request: its
    line in the requests file (``where``), ``run_id`` and ``turn``. The
    critic's own exception is ``__cause__``."""

    def __init__(self, message: str, where: str = "", run_id: Any = None, turn: Any = None) -> None:
        super().__init__(message)
        self.where, self.run_id, self.turn = where, run_id, turn

    def __reduce__(self) -> Any:
        return (CriticError, (str(self), self.where, self.run_id, self.turn))


def is_transient(e: BaseException) -> bool:
    """Whether a call that raised ``e`` is worth trying again: a
    :class:`Transient`, a ``TimeoutError`` or ``ConnectionError``, or an
    exception of a model client named as one of ``TRANSIENT_NAMES`` (its
    class or a base class: ``RateLimitError``, ``APITimeoutError``,
    ``APIConnectionError``, ``InternalServerError``, ...)."""
    if isinstance(e, (Transient, TimeoutError, ConnectionError, asyncio.TimeoutError)):
        return True
    return any(c.__name__ in TRANSIENT_NAMES for c in type(e).__mro__)


class Progress:
    """Where a run stands: ``total`` requests (None when unknown),
    ``answered_before`` (verdicts the file had already), ``done`` calls
    ended this run, of them ``failed``, and ``retries`` made; ``rate``
    (calls a second) and ``left`` (seconds, an estimate)."""

    def __init__(self, total: Optional[int]) -> None:
        self.total = total
        self.answered_before = 0
        self.done = self.failed = self.retries = 0
        self.started = time.monotonic()

    @property
    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.done / elapsed if elapsed > 0 else 0.0

    @property
    def left(self) -> Optional[float]:
        if self.total is None or self.rate <= 0:
            return None
        return max(self.total - self.answered_before - self.done, 0) / self.rate

    def __str__(self) -> str:
        total = "?" if self.total is None else str(self.total - self.answered_before)
        left = self.left
        eta = "" if left is None else f", about {int(left) // 60}:{int(left) % 60:02d} left"
        before = f" ({self.answered_before} answered before)" if self.answered_before else ""
        return (f"shadow: {self.done}/{total} calls{before}, {self.failed} failed, "
                f"{self.retries} retries, {self.rate:.1f}/s{eta}")


def _shows(progress: Any) -> Optional[Callable[[Progress, bool], None]]:
    """What shows progress: a callable given, a line on a terminal's
    stderr, a display in a notebook, or nothing."""
    if progress is False:
        return None
    if callable(progress):
        return lambda p, last: progress(p)
    if "ipykernel" in sys.modules:
        try:
            from IPython.display import display  # type: ignore[import-not-found]

            handle: list[Any] = []

            def notebook(p: Progress, last: bool) -> None:
                if not handle:
                    handle.append(display(str(p), display_id=True))
                elif handle[0] is not None:
                    handle[0].update(str(p))

            return notebook
        except ImportError:  # pragma: no cover - a kernel without IPython
            pass
    if progress is True or sys.stderr.isatty():
        def terminal(p: Progress, last: bool) -> None:
            sys.stderr.write("\r" + str(p) + ("\n" if last else ""))
            sys.stderr.flush()

        return terminal
    return None


def _requests(requests: Union[str, os.PathLike, Iterable[Request]]) -> Iterator[tuple[str, Request]]:
    """Each request with where it is (``FILE:LINE``, or ``request N``)."""
    if isinstance(requests, (str, os.PathLike)):
        name = os.fspath(requests)
        with open(requests, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        r = json.loads(line)
                    except json.JSONDecodeError as e:
                        raise ValueError(f"{name}:{n}: not a request: {e}") from e
                    if not isinstance(r, dict) or not isinstance(r.get("run_id"), str):
                        raise ValueError(f"{name}:{n}: not a request: no run_id")
                    yield f"{name}:{n}", r
    else:
        for n, r in enumerate(requests, 1):
            yield f"request {n}", r


def _count(requests: Union[str, os.PathLike, Iterable[Request]]) -> Optional[int]:
    if isinstance(requests, (str, os.PathLike)):
        with open(requests, "rb") as fh:
            return sum(1 for line in fh if line.strip())
    return len(requests) if hasattr(requests, "__len__") else None  # type: ignore[arg-type]


def _key(line: dict[str, Any]) -> tuple[Any, Any]:
    return (line.get("run_id"), line.get("turn"))


def _answered(out: Path) -> tuple[set[tuple[Any, Any]], set[Any]]:
    """The keys ``out`` holds a verdict for, and the plans its lines name.
    A last line cut short (a run killed while writing it) is cut off."""
    answered: set[tuple[Any, Any]] = set()
    plans: set[Any] = set()
    if not out.exists():
        return answered, plans
    data = out.read_bytes()
    whole = data.rfind(b"\n") + 1
    if whole < len(data):
        with open(out, "r+b") as fh:
            fh.truncate(whole)
    for n, line in enumerate(data[:whole].decode("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            v = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{out}:{n}: not a verdict line ({e}): give another out, or mend it") from e
        if not isinstance(v, dict):
            raise ValueError(f"{out}:{n}: not a verdict line: give another out, or mend it")
        if v.get("plan_id") is not None:
            plans.add(v["plan_id"])
        if v.get("verdict") in VERDICTS:
            answered.add(_key(v))
    return answered, plans


class _Policy:
    def __init__(self, retries: int, backoff: float, max_backoff: float,
                 transient: Callable[[BaseException], bool], stop: threading.Event) -> None:
        self.retries, self.backoff, self.max_backoff = retries, backoff, max_backoff
        self.transient, self.stop = transient, stop

    def delay(self, attempt: int, e: BaseException) -> float:
        d = min(self.max_backoff, self.backoff * 2 ** attempt) * (0.5 + random.random())
        after = getattr(e, "retry_after", None)
        return max(d, float(after)) if isinstance(after, (int, float)) else d


class _Bug(Exception):
    """The critic's own bug, carried to the main thread."""

    def __init__(self, message: str, cause: Optional[BaseException]) -> None:
        super().__init__(message)
        self.cause = cause


def _said(said: Any) -> dict[str, Any]:
    if isinstance(said, str):
        said = {"verdict": said}
    if not isinstance(said, dict) or said.get("verdict") not in VERDICTS:
        raise _Bug(f"the critic returned {said!r:.200}, not one of {VERDICTS} or a dict with one", None)
    return said


def _failure(e: BaseException, policy: _Policy, attempt: int) -> Optional[str]:
    """The error line's text when the call has failed for good (None: try
    again); raises where the critic is broken."""
    if isinstance(e, Failed):
        return f"{type(e).__name__}: {e}"[:200]
    if not policy.transient(e):
        raise _Bug(f"the critic raised {type(e).__name__}: {e}", e) from e
    if attempt >= policy.retries:
        return f"{type(e).__name__}: {e} (after {attempt + 1} attempts)"[:200]
    return None


def _call(critic: Critic, request: Request, policy: _Policy) -> tuple[Optional[dict[str, Any]], Optional[str], int]:
    """One request, retried: (the critic's answer, or the failure's text;
    the retries made)."""
    attempt = 0
    while True:
        try:
            return _said(critic(request)), None, attempt
        except _Bug:
            raise
        except Exception as e:
            failed = _failure(e, policy, attempt)
            if failed is not None:
                return None, failed, attempt
            if policy.stop.wait(policy.delay(attempt, e)):
                raise KeyboardInterrupt from None
            attempt += 1


async def _acall(critic: Critic, request: Request, policy: _Policy) -> tuple[Optional[dict[str, Any]], Optional[str], int]:
    attempt = 0
    while True:
        try:
            return _said(await critic(request)), None, attempt
        except _Bug:
            raise
        except Exception as e:
            failed = _failure(e, policy, attempt)
            if failed is not None:
                return None, failed, attempt
            await asyncio.sleep(policy.delay(attempt, e))
            attempt += 1


def _line(request: Request, said: Optional[dict[str, Any]], error: Optional[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"run_id": request["run_id"], "turn": request.get("turn"),
                           "plan_id": request.get("plan_id")}
    if said is None:
        out["error"] = error
    else:
        out["verdict"] = said["verdict"]
        out.update({k: said[k] for k in EXTRAS if said.get(k) is not None})
    return out


class _Loop:
    """An event loop on a thread of its own, for an ``async def`` critic:
    the calls are its tasks, each a ``concurrent.futures.Future`` here."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="critic-gate-shadow", daemon=True)
        self.thread.start()

    def submit(self, coro: Any) -> cf.Future:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=1.0)


def run(requests: Union[str, os.PathLike, Iterable[Request]], critic: Critic,
        out: Union[str, os.PathLike], *, concurrency: int = 8, retries: int = 5,
        backoff: float = 1.0, max_backoff: float = 60.0,
        transient: Callable[[BaseException], bool] = is_transient,
        progress: Union[bool, None, Callable[[Progress], None]] = None) -> dict[str, int]:
    """Review every request with ``critic``, ``concurrency`` calls at a
    time, appending each verdict to ``out`` (JSON Lines) as its call ends.

    ``out`` may hold an earlier run's lines: the requests it has a verdict
    for are not asked again (a file of another plan's verdicts is
    refused). A failure ``transient`` accepts is retried up to ``retries``
    times, waiting ``backoff`` x 2^attempt seconds (at most
    ``max_backoff``, jittered, at least a ``retry_after`` the failure
    carries). ``progress``: None shows it on a terminal or in a notebook,
    True always, False never, or a callable given a :class:`Progress`.

    Returns ``{"requests", "answered_before", "verdicts", "failed",
    "retries"}``: requests read, those ``out`` answered already, and of
    this run's calls the verdicts, the failed calls written, and the
    retries made. Raises :class:`CriticError` where the critic is broken,
    keeping every line written before."""
    if not (isinstance(concurrency, int) and concurrency >= 1):
        raise ValueError(f"concurrency: give a whole number of calls at a time >= 1, got {concurrency!r}")
    if not (isinstance(retries, int) and retries >= 0):
        raise ValueError(f"retries: give a whole number >= 0, got {retries!r}")
    out = Path(out)
    answered, plans = _answered(out)
    p = Progress(_count(requests))
    show = _shows(progress)
    stop = threading.Event()
    policy = _Policy(retries, backoff, max_backoff, transient, stop)
    is_async = inspect.iscoroutinefunction(critic) or inspect.iscoroutinefunction(
        getattr(critic, "__call__", None))
    loop = _Loop() if is_async else None
    pool = None if is_async else cf.ThreadPoolExecutor(concurrency, thread_name_prefix="critic-gate-shadow")
    counts = {"requests": 0, "answered_before": 0, "verdicts": 0, "failed": 0, "retries": 0}
    pending: dict[cf.Future, tuple[str, Request]] = {}

    def start(where: str, request: Request) -> None:
        if loop is not None:
            f = loop.submit(_acall(critic, request, policy))
        else:
            assert pool is not None
            f = pool.submit(_call, critic, request, policy)
        pending[f] = (where, request)

    def finish(fh: Any, f: cf.Future) -> None:
        where, request = pending.pop(f)
        try:
            said, error, tries = f.result()
        except _Bug as e:
            raise CriticError(
                f"{where}: run_id {request.get('run_id')!r}, turn {request.get('turn')!r}: {e}: a bug in "
                "the critic, not a failed call (raise critic_gate.shadow.Transient for a failure worth "
                "trying again, shadow.Failed for one that is not)",
                where, request.get("run_id"), request.get("turn")) from e.cause
        fh.write(json.dumps(_line(request, said, error), ensure_ascii=False) + "\n")
        fh.flush()
        counts["failed" if said is None else "verdicts"] += 1
        counts["retries"] += tries
        p.done += 1
        p.failed += said is None
        p.retries += tries

    def settle(fh: Any, shown: float) -> float:
        """Wait a quarter of a second at most (so Ctrl-C is heard) for a
        call to end; write what ended; show progress twice a second."""
        done, _ = cf.wait(pending, timeout=0.25, return_when=cf.FIRST_COMPLETED)
        for f in done:
            finish(fh, f)
        if show is not None and time.monotonic() - shown > 0.5:
            show(p, False)
            return time.monotonic()
        return shown

    def feed(fh: Any) -> None:
        """Every request not answered before, ``concurrency`` calls at a
        time, each line written as its call ends."""
        shown = 0.0
        for where, request in _requests(requests):
            counts["requests"] += 1
            pid = request.get("plan_id")
            if pid is not None and plans and pid not in plans:
                raise ValueError(
                    f"{out}: its verdicts are of plan {sorted(map(str, plans))[0]}, these requests of "
                    f"{pid}: give another out (labels refuses another plan's verdicts)")
            if _key(request) in answered:
                counts["answered_before"] += 1
                p.answered_before += 1
                continue
            start(where, request)
            while len(pending) >= concurrency:
                shown = settle(fh, shown)
        while pending:
            shown = settle(fh, shown)

    def keep(fh: Any, deadline: Optional[float]) -> None:
        """The calls under way, once no more are to start: each that comes
        back (by ``deadline``, if any) is written, as it was paid for; one
        that fails or breaks now is left out."""
        stop.set()  # a retry's wait ends; a call not started never starts
        if pool is not None:
            for f in [f for f in pending if f.cancel()]:
                pending.pop(f)
        while pending and (deadline is None or time.monotonic() < deadline):
            wait = 0.25 if deadline is None else max(deadline - time.monotonic(), 0.0)
            done, _ = cf.wait(pending, timeout=wait, return_when=cf.FIRST_COMPLETED)
            for f in done:
                try:
                    finish(fh, f)
                except (Exception, KeyboardInterrupt):
                    pass

    try:
        with open(out, "a", encoding="utf-8") as fh:
            try:
                feed(fh)
            except KeyboardInterrupt:
                keep(fh, time.monotonic() + GRACE)
                raise
            except CriticError:
                keep(fh, None)
                raise
    except BaseException:
        # Ctrl-C, a broken critic, a file that cannot be written: the calls
        # still under way are dropped (what they answer later is not
        # written), the rest are not made; every line written stays.
        stop.set()
        for f in pending:
            f.cancel()
        raise
    finally:
        stop.set()
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        if loop is not None:
            loop.close()
        if show is not None and p.done:
            show(p, True)
    return counts


class _Proxy:
    """Stands for ``inner``: every attribute it does not watch is inner's."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Watched(_Proxy):
    """A model provider whose chat models note a failed call: symfonic's
    critic catches any exception of its model and approves (0 tokens), so
    the shadow runner could never tell a failed call from an approval."""

    def get_chat_model(self, config: Any) -> Any:
        try:
            return _WatchedModel(self._inner.get_chat_model(config))
        except BaseException as e:
            _noted(e)
            raise


class _WatchedModel(_Proxy):
    """A chat model whose ``ainvoke`` notes what it raised (in the calling
    task's ``_FAILURE``) before raising it to symfonic, and that it
    answered."""

    async def ainvoke(self, *args: Any, **kwargs: Any) -> Any:
        try:
            said = await self._inner.ainvoke(*args, **kwargs)
        except BaseException as e:
            _noted(e)
            raise
        box = _FAILURE.get()
        if box is not None:
            box.answered = True
        return said


class _WatchedLayer(_Proxy):
    """A procedural layer whose ``retrieve`` notes what it raised: symfonic
    then lists no rules, silently, where production's prompt had them."""

    async def retrieve(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await self._inner.retrieve(*args, **kwargs)
        except BaseException as e:
            _noted(e)
            raise


class _Box:
    """What one call of the shadow critic saw go wrong, and whether its
    model answered."""

    def __init__(self) -> None:
        self.errors: list[BaseException] = []
        self.answered = False


def _noted(e: BaseException) -> None:
    box = _FAILURE.get()
    if box is not None:
        box.errors.append(e)


_FAILURE: "contextvars.ContextVar[Optional[_Box]]" = contextvars.ContextVar(
    "critic_gate_shadow_failure", default=None)


def _always(_: Any) -> bool:
    """The gate of a shadow call: it always fires (the turn was drawn)."""
    return True


def symfonic_critic(model_provider: Any, config: Any, domain: Any, *,
                    procedural_layer: Any = None,
                    scope: Optional[Callable[[Request], Any]] = None,
                    reflection_prompt_template: Optional[str] = None) -> Critic:
    """symfonic's own critic as the shadow critic: a ``MetacognitiveMiddleware``
    built from the deployment's ``model_provider``, ``FrameworkConfig``
    (``config``: its ``role_models["critic"]`` picks the model, its
    ``metacognition_sensitive_tags`` with the domain's the sensitive hit),
    ``DomainTemplate`` (its core preferences) and procedural layer, whose
    ``evaluate`` is called for each request with the gate forced to fire.
    So the prompt, the rules, the model and the parser are production's.

    What the request carries is passed as production passed it: the draft,
    the run id (``turn_id``, else ``run_id``), and the line's recorded
    activation log (the sensitive hit and the procedural rules' query come
    from it; without one, a recorded ``sensitive_hit`` is given as the
    only tagged node, and the rules' query is empty) and tool calls
    (findings and the intent verdict decide only the gate, forced here). ``scope`` turns a request into the scope object
    the procedural layer takes (required with ``procedural_layer``).

    Returns an ``async`` critic for :func:`run`: the verdict, with
    ``tokens_in``, ``tokens_out``, ``latency_ms`` and ``model``. A call
    whose model raised (symfonic itself approves then) raises instead: the
    exception itself when it is transient (:func:`is_transient`, so
    :func:`run` retries it), else :class:`Failed`; so does a call whose
    model could not be made, whose model answered nothing symfonic could
    take, or whose procedural layer raised (symfonic would list no rules)."""
    from symfonic.agent.middleware.metacognitive import MetacognitiveMiddleware

    if procedural_layer is not None and scope is None:
        raise ValueError("procedural_layer= needs scope=: a function from a request to the scope "
                         "object the procedural layer retrieves with (its rules depend on it)")
    forced = config.model_copy(update={"metacognition_enabled": True, "metacognition_gate": _always})
    layer = _WatchedLayer(procedural_layer) if procedural_layer is not None else None
    middleware = MetacognitiveMiddleware(model_provider=_Watched(model_provider), config=forced,
                                         domain=domain, procedural_layer=layer,
                                         reflection_prompt_template=reflection_prompt_template)
    critic_config = (getattr(config, "role_models", None) or {}).get("critic")

    async def critic(request: Request) -> dict[str, Any]:
        recorded = request.get("recorded") or {}
        log = recorded.get("activation_log")
        if not isinstance(log, dict):
            hit = recorded.get("sensitive_hit")
            log = {"activated_nodes": [{"tags": [hit]}]} if isinstance(hit, str) else {}
        box = _Box()
        token = _FAILURE.set(box)
        try:
            event = await middleware.evaluate(
                run_id=str(request.get("turn_id") or request["run_id"]),
                draft=request["draft"],
                activation_log=log,
                scope=scope(request) if scope is not None else request.get("scope"),
                tool_calls_this_turn=recorded.get("tool_calls_this_turn") or None,
                fabrication_findings=None,
                intent_verdict=None,
            )
        finally:
            _FAILURE.reset(token)
        if box.errors:
            e = box.errors[0]
            if is_transient(e):
                raise e
            raise Failed(f"{type(e).__name__}: {e}") from e
        if not box.answered:
            # symfonic's critic fell back to approve without its model's
            # answer (it failed after the call, or never made it).
            raise Failed("symfonic's critic approved without an answer of its model")
        model = getattr(critic_config, "model_name", None)
        return {"verdict": event.verdict, "tokens_in": event.reflection_tokens_in,
                "tokens_out": event.reflection_tokens_out, "latency_ms": event.reflection_latency_ms,
                **({"model": model} if model else {})}

    return critic


def main(argv: Optional[list[str]] = None) -> int:
    """``python -m critic_gate.shadow``: the runner from a shell, with a
    critic named as ``module:callable`` (a factory called with no argument
    when ``--factory``)."""
    import argparse
    import importlib

    ap = argparse.ArgumentParser(prog="python -m critic_gate.shadow", description=(
        "Send each request of a plan's sample (requests.jsonl, from `critic-gate sample`) to a critic "
        "and append the verdicts to the file `critic-gate labels` reads. A rerun into the same file "
        "makes only the calls not yet answered."))
    ap.add_argument("requests", help="requests.jsonl, as `critic-gate sample` wrote it")
    ap.add_argument("--critic", required=True, metavar="MODULE:NAME",
                    help="the critic: a callable (plain or async) taking a request")
    ap.add_argument("--factory", action="store_true",
                    help="MODULE:NAME is a function that returns the critic (called once, with no argument)")
    ap.add_argument("--out", required=True, help="the verdicts file (appended to)")
    ap.add_argument("--concurrency", type=int, default=8, help="calls at a time [default: 8]")
    ap.add_argument("--retries", type=int, default=5, help="retries of a transient failure [default: 5]")
    ap.add_argument("--backoff", type=float, default=1.0, help="first retry's wait in seconds [default: 1]")
    ap.add_argument("--quiet", action="store_true", help="no progress line")
    a = ap.parse_args(argv)
    module, _, name = a.critic.partition(":")
    if not name:
        ap.error(f"--critic {a.critic!r}: give MODULE:NAME, as my_critics:opus")
    try:
        critic = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        print(f"critic-gate shadow: --critic {a.critic}: {e}", file=sys.stderr)
        return 2
    if a.factory:
        critic = critic()
    try:
        c = run(a.requests, critic, a.out, concurrency=a.concurrency, retries=a.retries,
                backoff=a.backoff, progress=False if a.quiet else None)
    except KeyboardInterrupt:
        print(f"critic-gate shadow: interrupted; every answered call is in {a.out}: run again to go on",
              file=sys.stderr)
        return 130
    except (CriticError, ValueError, OSError) as e:
        print(f"critic-gate shadow: {e}", file=sys.stderr)
        return 2
    print(f"shadow: {c['verdicts']} verdicts, {c['failed']} failed calls, {c['retries']} retries "
          f"({c['answered_before']} of {c['requests']} requests answered before): {a.out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Without waiting for calls still under way on the pool's threads (an
    # interrupted run keeps what was answered; the rest is dropped).
    os._exit(code)
