"""The exploration gate: a plan's critic sample taken inside production.
``ExplorationGate(plan)`` is a symfonic ``metacognition_gate`` (symfonic-core
>= 9.12: ``FrameworkConfig(metacognition_gate=...)``). It asks symfonic's
own default smart gate first; where that skips, it fires when the plan's
coin draws the turn, so the sampled skips get the real critic (its verdict
applies, as the legacy gate's would) and only they pay its latency.

The coin is the one ``critic-gate sample`` and a replay with ``--plan``
use: SHA-256 of the plan's salt and symfonic's run id (one per user turn,
``CriticGateContext.run_id``, the ``turn_id`` ``critic-gate import --from
otlp`` writes), at the turn's stratum's probability. Offline, a replay with
the plan recognises these fires by the same coin and counts their
verdicts as sampled labels (``sampled_labelled_production``).

It never raises: any error inside it fires the critic (as symfonic does
with a gate that raises), and is counted in ``errors``.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Mapping, Optional, Union

from . import drawn as _drawn

OTHER = "(other)"
NONE = "(none)"


def _read_plan(plan: Union[str, os.PathLike, Mapping[str, Any]]) -> Mapping[str, Any]:
    if isinstance(plan, Mapping):
        return plan
    try:
        import tomllib  # Python >= 3.11
    except ImportError:  # pragma: no cover - older Pythons
        import tomli as tomllib  # type: ignore[no-redef]
    with open(plan, "rb") as fh:
        return tomllib.load(fh)


class ExplorationGate:
    """A ``metacognition_gate`` that samples a plan's share of the smart
    gate's skips for the critic.

    ``plan``: plan.toml's path, or the dict ``critic_gate.plan`` returns.
    ``gate``: the gate asked first (default: symfonic's
    ``default_smart_gate``). ``stratum``: a callable from the gate context
    to the turn's stratum value, as plan.csv names it; required when the
    plan's strata are not ``all`` or ``intent`` (the context carries no
    language, call site or the traffic's scope as the replay reads it).
    """

    def __init__(self, plan: Union[str, os.PathLike, Mapping[str, Any]], *,
                 gate: Optional[Callable[[Any], bool]] = None,
                 stratum: Optional[Callable[[Any], str]] = None) -> None:
        p = _read_plan(plan)
        self.plan_id: str = p["plan_id"]
        self.salt: str = p["salt"]
        self.strata: str = p["strata"]
        self.probabilities: dict[str, float] = {s["value"]: float(s["probability"])
                                                for s in p.get("stratum", [])}
        self.default_probability = float(p["default_probability"])
        if stratum is None and self.strata not in ("all", "intent"):
            raise ValueError(
                f"the plan's strata are {self.strata!r}: give stratum=, a callable from the gate "
                "context to the turn's value as plan.csv names it")
        if gate is None:
            from symfonic.agent.middleware.critic_gate import default_smart_gate
            gate = default_smart_gate
        self._gate = gate
        self._stratum = stratum
        self.fires = self.skips = self.explored = self.errors = 0

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

    def __call__(self, ctx: Any) -> bool:
        try:
            if self._gate(ctx):
                self.fires += 1
                return True
            if _drawn(self.salt, str(ctx.run_id).encode("utf-8"), self.probability(ctx)):
                self.explored += 1
                return True
            self.skips += 1
            return False
        except Exception:
            self.errors += 1
            return True
