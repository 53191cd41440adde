"""The exploration gate: a plan's critic sample taken inside production.
``ExplorationGate(plan, config=...)`` is a symfonic ``metacognition_gate``
(symfonic-core >= 9.12: ``FrameworkConfig(metacognition_gate=...)``). It
asks symfonic's own default smart gate first; where that skips, it fires
when the plan's coin draws the turn, so the sampled skips get the real
critic (its verdict applies, as the legacy gate's would) and only they pay
its latency.

The coin is the one ``critic-gate sample`` and a replay with ``--plan``
use: SHA-256 of the plan's salt and symfonic's run id (one per user turn,
``CriticGateContext.run_id``, the ``turn_id`` ``critic-gate import --from
otlp`` writes), at the turn's stratum's probability. Offline, a replay with
the plan recognises these fires by the same coin and counts their
verdicts as sampled labels (``sampled_labelled_production``).

It is checked as the command line checks a plan: at construction it
refuses (``InputError``) a plan ``critic-gate sample`` would refuse (an
edited one, another build's format, an audit plan, a missing file), and
(``ConfigError``) a ``FrameworkConfig`` whose gate settings are not the
plan's, naming each. At each call it holds the gate settings symfonic
hands it to the plan's too. It never raises into symfonic: an error inside
it (a raising ``stratum=`` or ``gate=``, settings that changed) fires the
critic, is logged through symfonic's metacognition logger as symfonic logs
a raising gate, counted in ``errors``, kept in ``last_errors`` and handed
to ``on_error``.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any, Callable, Mapping, NamedTuple, Optional, Union

from . import ConfigError, InputError, UsageError, _native
from . import drawn as _drawn

OTHER = "(other)"
NONE = "(none)"

# symfonic's own logger for the critic and its gate: a raising gate is
# logged there ("metacognition_gate raised; degrading to FIRE").
LOGGER = logging.getLogger("symfonic.agent.middleware.metacognitive")

# The gate settings a plan is made for, as FrameworkConfig names them; the
# lists compared as sets (their order changes no decision).
GATE_SETTINGS = ("metacognition_selective_gate", "metacognition_confidence_threshold",
                 "metacognition_sensitive_tags", "metacognition_trivial_ack_patterns",
                 "read_only_tools")
SET_SETTINGS = ("metacognition_sensitive_tags", "metacognition_trivial_ack_patterns", "read_only_tools")

# How many errors ``last_errors`` keeps.
KEPT_ERRORS = 100


class GateError(NamedTuple):
    """An error inside the gate: the turn's run id and the exception."""

    run_id: Optional[str]
    error: BaseException


def _read_plan(plan: Union[str, os.PathLike, Mapping[str, Any]]) -> dict[str, Any]:
    """The plan, held to what ``critic-gate plan`` writes (its id the hash
    of the rest, its format this build's, production's skips its
    population): ``InputError`` otherwise."""
    if isinstance(plan, Mapping):
        name, text, as_json = "the plan given", json.dumps(dict(plan)), True
    else:
        name = os.fspath(plan)
        try:
            with open(plan, encoding="utf-8") as fh:
                text = fh.read()
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"{name}: cannot read the plan: {e}") from e
        as_json = False
    try:
        return json.loads(_native.exploration_plan(name, text, as_json))
    except UsageError as e:
        raise InputError(str(e)) from e


def _normal(key: str, value: Any) -> Any:
    if key in SET_SETTINGS:
        return sorted(str(v) for v in (value or ()))
    if key == "metacognition_confidence_threshold":
        return float(value)
    return bool(value)


def gate_differences(plan: Mapping[str, Any], config: Any) -> list[str]:
    """The gate settings where ``config`` (a ``FrameworkConfig``, or a dict
    of its settings) is not the plan's ``[gate]``, each named with both
    values; empty when they agree."""
    gate = plan.get("gate") or {}
    get = config.get if isinstance(config, Mapping) else (lambda k, d=None: getattr(config, k, d))
    out = []
    for key in GATE_SETTINGS:
        if key not in gate:
            continue
        ours, theirs = _normal(key, gate[key]), _normal(key, get(key, None))
        if ours != theirs:
            out.append(f"{key}: the plan's {ours!r} against the config's {theirs!r}")
    if not isinstance(config, Mapping) and not getattr(config, "metacognition_enabled", True):
        out.append("metacognition_enabled: off in the config, so the critic never runs")
    return out


class ExplorationGate:
    """A ``metacognition_gate`` that samples a plan's share of the smart
    gate's skips for the critic.

    ``plan``: plan.toml's path, or the dict ``critic_gate.plan`` returns.
    ``config``: the ``FrameworkConfig`` production runs (without this
    gate): refused unless its gate settings are the plan's. ``gate``: the
    gate asked first (default: symfonic's ``default_smart_gate``).
    ``stratum``: a callable from the gate context to the turn's stratum
    value, as plan.csv names it; required when the plan's strata are not
    ``all`` or ``intent`` (the context carries no language, call site or
    the traffic's scope as the replay reads it). ``on_error``: called with
    each :class:`GateError` (for a metric), after it is logged.
    """

    def __init__(self, plan: Union[str, os.PathLike, Mapping[str, Any]], *,
                 config: Any = None,
                 gate: Optional[Callable[[Any], bool]] = None,
                 stratum: Optional[Callable[[Any], str]] = None,
                 on_error: Optional[Callable[[GateError], None]] = None) -> None:
        p = _read_plan(plan)
        self.plan_id: str = p["plan_id"]
        self.salt: str = p["salt"]
        self.strata: str = p["strata"]
        self.probabilities: dict[str, float] = {s["value"]: float(s["probability"])
                                                for s in p.get("stratum", [])}
        self.default_probability = float(p["default_probability"])
        self._plan_gate = dict(p.get("gate") or {})
        if stratum is None and self.strata not in ("all", "intent"):
            raise UsageError(
                f"the plan's strata are {self.strata!r}: give stratum=, a callable from the gate "
                "context to the turn's value as plan.csv names it")
        if config is not None:
            differ = gate_differences(p, config)
            if differ:
                raise ConfigError(
                    f"the FrameworkConfig is not the one plan {self.plan_id} was made for: "
                    + "; ".join(differ)
                    + ": run production with the plan's [gate] settings, or make a plan for these")
        if gate is None:
            from symfonic.agent.middleware.critic_gate import default_smart_gate
            gate = default_smart_gate
        self._gate = gate
        self._stratum = stratum
        self._on_error = on_error
        self._checked: Optional[tuple[Any, ...]] = None
        self.fires = self.skips = self.explored = self.errors = 0
        self.last_errors: list[GateError] = []

    def stratum(self, ctx: Any) -> str:
        """The turn's stratum value."""
        if self._stratum is not None:
            return str(self._stratum(ctx))
        if self.strata == "all":
            return "all"
        return getattr(ctx, "intent_label", None) or NONE

    def probability(self, ctx: Any) -> float:
        """The turn's inclusion probability: its stratum's, else
        ``(other)``'s, else the plan's default (as the replay takes it)."""
        value = self.stratum(ctx)
        for k in (value, OTHER):
            if k in self.probabilities:
                return self.probabilities[k]
        return self.default_probability

    def _check_context(self, ctx: Any) -> None:
        """The gate settings symfonic hands this turn, held to the plan's
        (once for each distinct set seen)."""
        seen = (getattr(ctx, "selective_gate_enabled", None), tuple(getattr(ctx, "read_only_tools", ()) or ()),
                tuple(getattr(ctx, "trivial_ack_patterns", ()) or ()))
        if seen == self._checked:
            return
        settings = {"metacognition_selective_gate": seen[0], "read_only_tools": seen[1],
                    "metacognition_trivial_ack_patterns": seen[2]}
        differ = gate_differences({"gate": {k: v for k, v in self._plan_gate.items() if k in settings}},
                                  settings)
        if differ:
            raise ConfigError(f"symfonic runs this gate with other settings than plan {self.plan_id}'s: "
                              + "; ".join(differ))
        self._checked = seen

    def _failed(self, ctx: Any, e: BaseException) -> bool:
        run_id = getattr(ctx, "run_id", None)
        self.errors += 1
        self.last_errors.append(GateError(None if run_id is None else str(run_id), e))
        del self.last_errors[:-KEPT_ERRORS]
        LOGGER.error("critic_gate.ExplorationGate (plan %s) raised on run %s; degrading to FIRE "
                     "(conservative): %s: %s", self.plan_id, run_id, type(e).__name__, e, exc_info=e)
        if self._on_error is not None:
            try:
                self._on_error(GateError(None if run_id is None else str(run_id), e))
            except Exception:
                LOGGER.exception("critic_gate.ExplorationGate's on_error raised")
        return True

    def __call__(self, ctx: Any) -> bool:
        try:
            self._check_context(ctx)
            if self._gate(ctx):
                self.fires += 1
                return True
            if _drawn(self.salt, str(ctx.run_id).encode("utf-8"), self.probability(ctx)):
                self.explored += 1
                return True
            self.skips += 1
            return False
        except Exception as e:
            return self._failed(ctx, e)
