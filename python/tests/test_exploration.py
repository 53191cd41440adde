"""#45 items 4 and 5 from Python, through symfonic-core 9.12.0 itself: the
exploration gate wired into a real agent (a scripted chat model, no
network) fires the critic on exactly the smart gate's skips the plan's
coin draws; the traces symfonic's own OpenTelemetry exporter writes,
replayed with the plan, count exactly those fires as sampled labels.
And ``shadow.run`` turns a critic into the verdicts file ``labels`` reads."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

import critic_gate

symfonic = pytest.importorskip("symfonic", reason="symfonic-core 9.12.0 (scripts/python-tests.sh installs it)")
pytest.importorskip("opentelemetry.sdk")

from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

import symfonic.observability.otel.exporter as otel_exporter  # noqa: E402
from symfonic.agent.config import FrameworkConfig  # noqa: E402
from symfonic.agent.engine import SymfonicAgent  # noqa: E402
from symfonic.agent.middleware.critic_gate import CriticGateContext, default_smart_gate  # noqa: E402
from symfonic.agent.types import FrameworkTenantScope  # noqa: E402

SPANS = InMemorySpanExporter()
CRITIC_MARK = "You are an internal critic"
CONFIG = """
baseline = "smart"
[variants.smart]
metacognition_selective_gate = true
[deployment]
fabrication_check_mode = "observe"
"""


def _in_memory(config: Any) -> Any:
    """symfonic's exporter with an in-memory span exporter: the one seam
    (the parameter symfonic's own tests use)."""
    if not getattr(config, "otel_enabled", False):
        return None
    return otel_exporter.OTelExporter.build(
        endpoint=None, service_name="exploration-test", capture_prompts=True,
        span_exporter=SPANS, use_batch_processor=False)


class Scripted(BaseChatModel):
    """The agent replies with an ack; the critic revises every third turn
    it sees (by the run's number in the user message)."""

    model: str = "fake"

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: list[Any], **kwargs: Any) -> "Scripted":
        return self

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
        text = str(messages[-1].content)
        usage = {"input_tokens": 300, "output_tokens": 40, "total_tokens": 340}
        if CRITIC_MARK in text:
            body = {"verdict": "approve", "matched_preferences": []}
            return ChatResult(generations=[ChatGeneration(message=AIMessage(
                content=json.dumps(body), usage_metadata=usage))])
        return ChatResult(generations=[ChatGeneration(message=AIMessage(
            content="Got it, thanks!", usage_metadata=usage))])

    async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
        return self._generate(messages, stop)


class Provider:
    def get_chat_model(self, config: Any) -> Scripted:
        return Scripted(model=f"fake::{config.model_name}")

    def supports_thinking(self) -> bool:
        return False

    def supports_streaming(self) -> bool:
        return False

    def supports_forced_tool_choice(self, config: Any) -> bool:
        return True


def _export(spans: Any, path: Path) -> None:
    """OTLP/JSON of the finished spans, as a collector's file exporter writes it."""
    def val(v: Any) -> dict[str, Any]:
        if isinstance(v, bool):
            return {"boolValue": v}
        if isinstance(v, int):
            return {"intValue": str(v)}
        if isinstance(v, float):
            return {"doubleValue": v}
        if isinstance(v, (list, tuple)):
            return {"arrayValue": {"values": [val(x) for x in v]}}
        return {"stringValue": str(v)}

    def span(s: Any) -> dict[str, Any]:
        c = s.get_span_context()
        return {"traceId": format(c.trace_id, "032x"), "spanId": format(c.span_id, "016x"),
                "parentSpanId": format(s.parent.span_id, "016x") if s.parent else "",
                "name": s.name, "kind": "SPAN_KIND_INTERNAL",
                "startTimeUnixNano": str(s.start_time), "endTimeUnixNano": str(s.end_time),
                "attributes": [{"key": k, "value": val(v)} for k, v in (s.attributes or {}).items()],
                "events": [], "status": {"code": "STATUS_CODE_UNSET"}}

    doc = {"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "exploration-test"}}]},
        "scopeSpans": [{"scope": {"name": "symfonic.core"},
                        "spans": [span(s) for s in sorted(spans, key=lambda s: s.start_time)]}]}]}
    path.write_text(json.dumps(doc) + "\n", encoding="utf-8")


def _run(gate: Any, runs: list[str], out: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One ack turn per run id through a real agent, traces to ``out``."""
    monkeypatch.setattr(otel_exporter, "build_if_enabled", _in_memory)
    SPANS.clear()
    config = FrameworkConfig(otel_enabled=True, otel_capture_prompts=True, metacognition_enabled=True,
                             metacognition_selective_gate=True, fabrication_check_mode="observe",
                             metacognition_gate=gate)
    agent = SymfonicAgent(Provider(), config=config)

    async def go() -> None:
        for i, run_id in enumerate(runs):
            await agent.run("Thanks, that's all", scope=FrameworkTenantScope(tenant_id="t"),
                            session_id=f"s-{i}", run_id=run_id)
        agent._otel_handles.tracer.force_flush()

    asyncio.run(go())
    _export(list(SPANS.get_finished_spans()), out)


def _smart(summary: dict[str, Any]) -> dict[str, Any]:
    v = summary["variants"]
    return v["smart"] if isinstance(v, dict) else next(x for x in v if x["variant"] == "smart")


def test_exploration_gate_decides_by_symfonics_gate_then_the_coin() -> None:
    plan = {"plan_id": "p", "salt": "s1", "strata": "intent", "default_probability": 0.5,
            "stratum": [{"value": "(none)", "probability": 0.25}, {"value": "knowledge", "probability": 1.0}]}
    gate = critic_gate.ExplorationGate(plan)

    def ctx(draft: str, run_id: str, intent: Any = None) -> CriticGateContext:
        return CriticGateContext(draft=draft, tool_calls_this_turn=(), fabrication_findings=(),
                                 intent_verdict=intent, confidence=0.5, sensitive_hit=None,
                                 read_only_tools=frozenset(), selective_gate_enabled=True,
                                 trivial_ack_patterns=(), scope=None, run_id=run_id)

    drawn = 0
    for i in range(400):
        c = ctx("Thanks!", f"run-{i}")
        assert not default_smart_gate(c)
        expected = critic_gate.drawn("s1", f"run-{i}".encode(), 0.25)
        assert gate(c) == expected
        drawn += expected
    assert 70 < drawn < 130, drawn
    assert gate(ctx("The order ORD-1 shipped on 2024-01-02 for $40.", "x"))  # the smart gate fires
    assert (gate.fires, gate.explored, gate.skips, gate.errors) == (1, drawn, 400 - drawn, 0)

    def broken(_: Any) -> bool:
        raise RuntimeError("boom")

    g = critic_gate.ExplorationGate(plan, gate=broken)
    assert g(ctx("Thanks!", "r")) is True and g.errors == 1, "it never raises: it fires"
    with pytest.raises(ValueError, match="stratum="):
        critic_gate.ExplorationGate({**plan, "strata": "language"})


def test_exploration_fires_in_symfonics_traces_are_the_plans_draws(
        tmp_path: Path, cli: str, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "gate.toml"
    config.write_text(CONFIG, encoding="utf-8")
    runs = [f"explore-{i:03d}" for i in range(60)]
    # A first week under the plain smart gate: the plan's traffic.
    _run(None, runs, tmp_path / "week1.otlp.json", monkeypatch)
    plan = critic_gate.plan(tmp_path / "week1.otlp.json", tmp_path / "plan", config,
                            max_skip_regression_rate=0.1, window_days=1, days=1, salt="explore",
                            from_="otlp")
    p = plan["stratum"][0]["probability"]
    assert 0.2 < p < 0.8, plan
    # The next under the exploration gate.
    gate = critic_gate.ExplorationGate(tmp_path / "plan/plan.toml")
    _run(gate, runs, tmp_path / "week2.otlp.json", monkeypatch)
    expected = [r for r in runs if critic_gate.drawn("explore", r.encode(), p)]
    assert gate.explored == len(expected) and 0 < len(expected) < len(runs)
    done = subprocess.run([cli, "replay", str(tmp_path / "week2.otlp.json"), "--from", "otlp",
                           "--config", str(config), "--plan", str(tmp_path / "plan/plan.toml"),
                           "--out", str(tmp_path / "r"), "--quiet"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    smart = _smart(json.loads((tmp_path / "r/summary.json").read_text(encoding="utf-8")))
    assert smart["production_skips"] == len(runs), smart
    assert smart["sampled_skips"] == len(expected)
    assert smart["sampled_labelled_production"] == len(expected)
    assert smart["sampled_labelled_shadow"] == 0 and smart["sampled_unreviewed"] == 0
    # Every drawn turn's critic ran; the others have no critic span.
    rows = (tmp_path / "r/decisions.csv").read_text(encoding="utf-8").splitlines()
    assert sum(',fire,' in r for r in rows) == len(expected), rows[:3]


def test_shadow_run_writes_the_verdicts_labels_reads(root: Path, tmp_path: Path, cli: str) -> None:
    traffic = str(tmp_path / "synth.jsonl")
    subprocess.run([cli, "synth", "--turns", "3000", "--seed", "4", "--out", traffic], check=True)
    config = str(root / "datasets/gate-smart-baseline.toml")
    critic_gate.plan(traffic, tmp_path / "plan", config, max_skip_regression_rate=0.05,
                     days=1, salt="sh", window_days=1)
    done = subprocess.run([cli, "sample", traffic, "--plan", str(tmp_path / "plan/plan.toml"),
                           "--config", config, "--out", str(tmp_path / "s"), "--quiet"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    seen: list[str] = []

    def critic(request: dict[str, Any]) -> Any:
        seen.append(request["run_id"])
        if len(seen) % 5 == 0:
            raise TimeoutError("the critic timed out")
        return {"verdict": "revise" if len(seen) % 7 == 0 else "approve", "model": "opus", "tokens_in": 9}

    counts = critic_gate.shadow.run(tmp_path / "s/requests.jsonl", critic, tmp_path / "v.jsonl")
    lines = [json.loads(x) for x in (tmp_path / "v.jsonl").read_text(encoding="utf-8").splitlines()]
    assert counts["requests"] == len(lines) == len(seen) > 5
    assert counts["failed"] == sum("error" in x for x in lines) == len(seen) // 5
    assert all(("verdict" in x) != ("error" in x) for x in lines)
    done = subprocess.run([cli, "labels", traffic, "--verdicts", str(tmp_path / "v.jsonl"), "--plan",
                           str(tmp_path / "plan/plan.toml"), "--config", config, "--out",
                           str(tmp_path / "labelled.jsonl")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"{len(lines)} of {len(lines)} verdicts became labels ({counts['failed']} failed" in done.stdout

    def interrupted(request: dict[str, Any]) -> str:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        critic_gate.shadow.run(tmp_path / "s/requests.jsonl", interrupted, tmp_path / "w.jsonl")
    assert not (tmp_path / "w.jsonl").exists()
    assert not list(tmp_path.glob(".w.jsonl.*")), "nothing half-written"
