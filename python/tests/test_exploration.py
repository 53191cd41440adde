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


@pytest.fixture(scope="module")
def made_plan(tmp_path_factory: pytest.TempPathFactory, root: Path, cli: str) -> Path:
    """A plan ``critic-gate plan`` made (on synthetic traffic, production
    the smart gate): plan.toml's path."""
    tmp = tmp_path_factory.mktemp("plan")
    traffic = str(tmp / "synth.jsonl")
    subprocess.run([cli, "synth", "--turns", "3000", "--seed", "4", "--out", traffic], check=True)
    critic_gate.plan(traffic, tmp / "plan", root / "datasets/gate-smart-baseline.toml",
                     max_skip_regression_rate=0.05, days=1, salt="s1", window_days=1)
    return tmp / "plan/plan.toml"


def _plan_dict(path: Path) -> dict[str, Any]:
    import tomllib

    return tomllib.loads(path.read_text(encoding="utf-8"))


def _ctx(plan: dict[str, Any], draft: str, run_id: str, intent: Any = None, **over: Any) -> CriticGateContext:
    g = plan["gate"]
    fields: dict[str, Any] = dict(
        draft=draft, tool_calls_this_turn=(), fabrication_findings=(), intent_verdict=intent, confidence=0.5,
        sensitive_hit=None, read_only_tools=frozenset(g["read_only_tools"]),
        selective_gate_enabled=g["metacognition_selective_gate"],
        trivial_ack_patterns=tuple(g["metacognition_trivial_ack_patterns"]), scope=None, run_id=run_id)
    fields.update(over)
    return CriticGateContext(**fields)


def test_exploration_gate_decides_by_symfonics_gate_then_the_coin(made_plan: Path) -> None:
    plan = _plan_dict(made_plan)
    gate = critic_gate.ExplorationGate(plan)
    assert critic_gate.ExplorationGate(made_plan).probabilities == gate.probabilities
    drawn = 0
    for i in range(400):
        c = _ctx(plan, "Thanks!", f"run-{i}")
        assert not default_smart_gate(c)
        expected = critic_gate.drawn(plan["salt"], f"run-{i}".encode(), gate.probability(c))
        assert gate(c) == expected
        drawn += expected
    assert 0 < drawn < 400, drawn
    assert gate(_ctx(plan, "The order ORD-1 shipped on 2024-01-02 for $40.", "x"))  # the smart gate fires
    assert (gate.fires, gate.explored, gate.skips, gate.errors) == (1, drawn, 400 - drawn, 0)
    by_language = critic_gate.plan(made_plan.parent.parent / "synth.jsonl", made_plan.parent.parent / "lang",
                                   Path(__file__).resolve().parents[2] / "datasets/gate-smart-baseline.toml",
                                   max_skip_regression_rate=0.05, days=1, salt="s1", window_days=1,
                                   strata="language")
    with pytest.raises(critic_gate.UsageError, match="stratum="):
        critic_gate.ExplorationGate(by_language)


def test_exploration_gate_refuses_a_plan_the_cli_refuses(made_plan: Path, tmp_path: Path) -> None:
    """#63 item 5: an edited plan (its id no longer the hash of the rest),
    another format, an audit plan and a missing file are refused as
    ``InputError``, as ``critic-gate sample`` refuses them."""
    plan = _plan_dict(made_plan)
    text = made_plan.read_text(encoding="utf-8")
    edited = {**plan, "default_probability": 0.999}
    with pytest.raises(critic_gate.InputError, match="edited after"):
        critic_gate.ExplorationGate(edited)
    (tmp_path / "edited.toml").write_text(text.replace("salt = ", "salt = \"x\"\nold_salt = ", 1), encoding="utf-8")
    with pytest.raises(critic_gate.InputError):
        critic_gate.ExplorationGate(tmp_path / "edited.toml")
    with pytest.raises(critic_gate.InputError, match="format 99"):
        critic_gate.ExplorationGate({**plan, "format": 99})
    acks = tmp_path / "acks.jsonl"
    acks.write_text("".join(json.dumps({"run_id": f"a{i}", "turn": 0, "draft": "Got it, thanks!"}) + "\n"
                            for i in range(300)), encoding="utf-8")
    audit = critic_gate.plan(acks, tmp_path / "audit",
                             Path(__file__).resolve().parents[2] / "datasets/gate.toml",
                             max_skip_regression_rate=0.05, days=1, salt="s1", window_days=1, audit="smart")
    with pytest.raises(critic_gate.InputError, match="audit"):
        critic_gate.ExplorationGate(audit)
    with pytest.raises(critic_gate.InputError, match="cannot read the plan"):
        critic_gate.ExplorationGate(tmp_path / "no-such-plan.toml")


def test_exploration_gate_refuses_a_config_that_is_not_the_plans(made_plan: Path) -> None:
    """#63 item 5: a FrameworkConfig whose gate settings are not the plan's
    is refused at construction, naming the setting; so is one with the
    selective gate off (every ack would fire, none be explored)."""
    plan = _plan_dict(made_plan)
    g = plan["gate"]
    same = FrameworkConfig(metacognition_enabled=True, metacognition_selective_gate=True,
                           read_only_tools=list(g["read_only_tools"]),
                           metacognition_sensitive_tags=list(g["metacognition_sensitive_tags"]),
                           metacognition_confidence_threshold=g["metacognition_confidence_threshold"],
                           metacognition_trivial_ack_patterns=list(g["metacognition_trivial_ack_patterns"]))
    critic_gate.ExplorationGate(made_plan, config=same)
    english = same.model_copy(update={"metacognition_trivial_ack_patterns": [r"^(ok|thanks)[.!]?$"]})
    with pytest.raises(critic_gate.ConfigError, match="metacognition_trivial_ack_patterns"):
        critic_gate.ExplorationGate(made_plan, config=english)
    off = same.model_copy(update={"metacognition_selective_gate": False})
    with pytest.raises(critic_gate.ConfigError, match="metacognition_selective_gate"):
        critic_gate.ExplorationGate(made_plan, config=off)


def test_exploration_gate_logs_counts_and_reports_its_errors(
        made_plan: Path, caplog: pytest.LogCaptureFixture) -> None:
    """#63 item 5: a raising ``stratum=`` or ``gate=``, or settings that
    are not the plan's at a call, fire the critic and are logged through
    symfonic's metacognition logger (as symfonic logs a raising gate),
    counted, kept and handed to ``on_error``."""
    plan = _plan_dict(made_plan)
    seen: list[Any] = []

    def broken(_: Any) -> bool:
        raise RuntimeError("boom")

    g = critic_gate.ExplorationGate(plan, gate=broken, on_error=seen.append)
    with caplog.at_level("ERROR", logger="symfonic.agent.middleware.metacognitive"):
        assert g(_ctx(plan, "Thanks!", "r1")) is True, "it never raises: it fires"
    assert g.errors == 1 and len(g.last_errors) == 1 and g.last_errors[0].run_id == "r1"
    assert isinstance(seen[0].error, RuntimeError)
    assert any("degrading to FIRE" in r.getMessage() and "boom" in r.getMessage() for r in caplog.records)
    s = critic_gate.ExplorationGate(plan, stratum=lambda ctx: ctx.scope["missing"])
    assert s(_ctx(plan, "Thanks!", "r2")) is True and s.errors == 1
    assert isinstance(s.last_errors[0].error, TypeError)
    # Symfonic hands it the selective gate off: every turn fires, loudly.
    o = critic_gate.ExplorationGate(plan)
    assert o(_ctx(plan, "Thanks!", "r3", selective_gate_enabled=False)) is True
    assert o.errors == 1 and "metacognition_selective_gate" in str(o.last_errors[0].error)


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
    # #63 item 2: the exploration fires are production's design: they agree
    # with production's variant, counted apart, with no "config differs" note,
    # and check's agreement budget passes (it read 0.0 here: every turn whose
    # recording says what production did was an exploration fire).
    assert smart["production_known"] == len(expected)
    assert smart["production_explored"] == len(expected)
    assert smart["production_fired_variant_skips"] == 0
    assert smart["production_agreement"] == 1.0
    assert smart["production_fires_without_turn_id"] == 0
    assert "probably differs" not in done.stderr, done.stderr
    report = (tmp_path / "r/report.md").read_text(encoding="utf-8")
    assert "probably differs" not in report
    checked = subprocess.run([cli, "check", str(tmp_path / "r"), "--min-production-agreement", "0.99"],
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # #63 item 3: the same week recorded without turn_id: the exploration
    # fires cannot be matched to the plan's coin, and that is said, with the fix.
    imported = subprocess.run([cli, "import", str(tmp_path / "week2.otlp.json"), "--from", "otlp",
                               "--config", str(config), "--out", str(tmp_path / "week2.jsonl")],
                              capture_output=True, text=True)
    assert imported.returncode == 0, imported.stderr
    lines = [json.loads(x) for x in (tmp_path / "week2.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all(t.get("turn_id") for t in lines)
    for t in lines:
        del t["turn_id"]
    (tmp_path / "week2-no-id.jsonl").write_text("".join(json.dumps(t) + "\n" for t in lines), encoding="utf-8")
    bare = subprocess.run([cli, "replay", str(tmp_path / "week2-no-id.jsonl"), "--config", str(config),
                           "--plan", str(tmp_path / "plan/plan.toml"), "--out", str(tmp_path / "r2")],
                          capture_output=True, text=True)
    assert bare.returncode == 0, bare.stderr
    smart = _smart(json.loads((tmp_path / "r2/summary.json").read_text(encoding="utf-8")))
    assert smart["production_fires_without_turn_id"] == len(expected), smart
    said = f"production's critic ran on {len(expected)} turns its gate skips that record no turn_id"
    assert said in bare.stderr, bare.stderr
    assert said in (tmp_path / "r2/report.md").read_text(encoding="utf-8").replace("\\", "")
    assert "record turn_id" in bare.stderr


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
    order = {(r["run_id"], r["turn"]): i for i, r in
             enumerate(map(json.loads, (tmp_path / "s/requests.jsonl").read_text(encoding="utf-8").splitlines()))}

    def critic(request: dict[str, Any]) -> Any:
        key = (request["run_id"], request["turn"])
        i = order[key]
        seen.append(f"{key}")
        if i % 5 == 4:
            raise critic_gate.shadow.Failed("the critic refused to answer")
        if i % 3 == 0 and seen.count(f"{key}") == 1:
            raise TimeoutError("the critic timed out")  # retried
        return {"verdict": "revise" if i % 7 == 0 else "approve", "model": "opus", "tokens_in": 9}

    counts = critic_gate.shadow.run(tmp_path / "s/requests.jsonl", critic, tmp_path / "v.jsonl",
                                    concurrency=1, backoff=0.001, progress=False)
    lines = [json.loads(x) for x in (tmp_path / "v.jsonl").read_text(encoding="utf-8").splitlines()]
    assert counts["requests"] == len(lines) == len(order) > 5
    assert counts["failed"] == sum("error" in x for x in lines) == sum(i % 5 == 4 for i in order.values())
    assert counts["retries"] == sum(i % 3 == 0 and i % 5 != 4 for i in order.values())
    assert all(("verdict" in x) != ("error" in x) for x in lines)
    done = subprocess.run([cli, "labels", traffic, "--verdicts", str(tmp_path / "v.jsonl"), "--plan",
                           str(tmp_path / "plan/plan.toml"), "--config", config, "--out",
                           str(tmp_path / "labelled.jsonl")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"{len(lines)} of {len(lines)} verdicts became labels ({counts['failed']} failed" in done.stdout

    def interrupted(request: dict[str, Any]) -> str:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        critic_gate.shadow.run(tmp_path / "s/requests.jsonl", interrupted, tmp_path / "w.jsonl", progress=False)
    assert (tmp_path / "w.jsonl").read_text(encoding="utf-8") == "", "no call answered, no line"


PROMPTS: dict[str, str] = {}


class Judging(Scripted):
    """Replies to a user's message with a draft of its own; as the critic,
    keeps each prompt (by the draft's order number) and revises the drafts
    about refunds."""

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
        text = str(messages[-1].content)
        if CRITIC_MARK in text:
            n = text.split("order #", 1)[1].split(" ", 1)[0]
            PROMPTS[n] = text
            usage = {"input_tokens": 1000 + len(text), "output_tokens": 17 + int(n), "total_tokens": 0}
            body = ({"verdict": "revise", "revised_draft": "No refunds here.", "matched_preferences": ["p"]}
                    if "is refunded" in text else {"verdict": "approve", "matched_preferences": []})
            return ChatResult(generations=[ChatGeneration(message=AIMessage(
                content=json.dumps(body), usage_metadata=usage))])
        n = text.rsplit(" ", 1)[-1]
        draft = ("Got it, thanks!" if int(n) % 4 == 0
                 else f"Your order #{n} is refunded to the card ending 4242." if int(n) % 3 == 0
                 else f"Your order #{n} ships on Monday, as promised.")
        return ChatResult(generations=[ChatGeneration(message=AIMessage(
            content=draft, usage_metadata={"input_tokens": 50, "output_tokens": 12, "total_tokens": 62}))])


class JudgingProvider(Provider):
    def get_chat_model(self, config: Any) -> Judging:
        return Judging(model=f"fake::{config.model_name}")


def test_symfonic_critic_is_production_s_critic(tmp_path: Path, cli: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """#63 item 7: for the same turns, ``shadow.symfonic_critic`` sends byte
    for byte the prompt symfonic's in-process critic sent (its template, the
    domain's core preferences, the draft as recorded, the sensitive hit) and
    returns its verdict and tokens; a model that raises is a failed call
    (symfonic itself would approve), a transient one retried by ``run``."""
    from symfonic.agent.domain import CorePreference, DomainTemplate

    from critic_gate import shadow

    domain = DomainTemplate(name="shop", core_preferences=[
        CorePreference(statement="Never promise a refund the policy does not give.", priority=9),
        CorePreference(statement="Be brief.", priority=2)])
    config = FrameworkConfig(otel_enabled=True, otel_capture_prompts=True, metacognition_enabled=True,
                             metacognition_selective_gate=True, fabrication_check_mode="observe",
                             domain=domain)
    monkeypatch.setattr(otel_exporter, "build_if_enabled", _in_memory)
    SPANS.clear()
    PROMPTS.clear()
    agent = SymfonicAgent(JudgingProvider(), config=config)

    async def go() -> None:
        for i in range(1, 13):
            await agent.run(f"Where is my order? It is number {i}", scope=FrameworkTenantScope(tenant_id="t"),
                            session_id=f"s-{i}", run_id=f"run-{i:02d}")
        agent._otel_handles.tracer.force_flush()

    asyncio.run(go())
    _export(list(SPANS.get_finished_spans()), tmp_path / "week.otlp.json")
    in_process = dict(PROMPTS)
    assert len(in_process) == 9, sorted(in_process)
    # The recording, imported, planned (production the smart gate: the
    # acks skipped, every other turn reviewed and in the fidelity sample)
    # and sampled.
    gate = tmp_path / "gate.toml"
    gate.write_text(CONFIG, encoding="utf-8")
    traffic = tmp_path / "week.jsonl"
    run_cli_ok = [cli, "import", str(tmp_path / "week.otlp.json"), "--from", "otlp", "--config", str(gate),
                  "--out", str(traffic)]
    assert subprocess.run(run_cli_ok, capture_output=True, text=True).returncode == 0
    critic_gate.plan(traffic, tmp_path / "plan", gate, max_skip_regression_rate=0.05, days=1,
                     salt="f", fidelity_share=0.99999)
    critic_gate.sample(traffic, tmp_path / "plan/plan.toml", tmp_path / "s", gate)
    requests = [r for x in (tmp_path / "s/requests.jsonl").read_text(encoding="utf-8").splitlines()
                if (r := json.loads(x))["stratum"] == "(fidelity)"]
    assert len(requests) == 9
    recorded = {(t["run_id"], t["turn"]): t["critic"] for x in traffic.read_text(encoding="utf-8").splitlines()
                if "critic" in (t := json.loads(x))}
    PROMPTS.clear()
    critic = shadow.symfonic_critic(JudgingProvider(), config, domain)
    out = tmp_path / "verdicts.jsonl"
    shadow.run(requests, critic, out, concurrency=4, progress=False)
    assert PROMPTS == in_process
    lines = {(v["run_id"], v["turn"]): v for x in out.read_text(encoding="utf-8").splitlines()
             if (v := json.loads(x))}
    assert sorted(lines) == sorted(recorded)
    for turn_id, line in lines.items():
        production = recorded[turn_id]
        assert line["verdict"] == production["verdict"], (turn_id, line, production)
        assert (line["tokens_in"], line["tokens_out"]) == (
            production["reflection_tokens_in"], production["reflection_tokens_out"]), (line, production)
    assert sum(v["verdict"] == "revise" for v in lines.values()) == 3

    # The line's recorded activation log reaches the prompt (its sensitive
    # hit), as does a recorded sensitive_hit without a log.
    tagged = config.model_copy(update={"metacognition_sensitive_tags": ["pii"]})
    sensitive = shadow.symfonic_critic(JudgingProvider(), tagged, domain)
    for recorded_signals in ({"activation_log": {"activated_nodes": [{"tags": ["pii"], "score": 1.0}]}},
                             {"sensitive_hit": "pii"}):
        PROMPTS.clear()
        asyncio.run(sensitive({**requests[0], "recorded": recorded_signals}))
        (prompt,) = PROMPTS.values()
        assert "SENSITIVE_TAG_HIT:\npii" in prompt, prompt

    # A model that fails: symfonic approves with 0 tokens; the shadow
    # critic says the call failed, and retries a transient failure.
    class Down(Judging):
        async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
            raise TimeoutError("the model did not answer")

    class DownProvider(Provider):
        def get_chat_model(self, config: Any) -> Down:
            return Down(model="down")

    broken = shadow.symfonic_critic(DownProvider(), config, domain)
    with pytest.raises(TimeoutError):
        asyncio.run(broken(requests[0]))
    failed = tmp_path / "failed.jsonl"
    c = shadow.run(requests[:2], broken, failed, retries=1, backoff=0.01, progress=False)
    assert (c["failed"], c["verdicts"], c["retries"]) == (2, 0, 2), c

    # A model that cannot be made (no key), or a procedural layer that
    # raises: symfonic approves (with no rules); the shadow critic fails.
    class NoKey(Provider):
        def get_chat_model(self, config: Any) -> Any:
            raise RuntimeError("no API key")

    class Layer:
        async def retrieve(self, scope: Any, query: str, top_k: int) -> list[str]:
            raise KeyError("tenant")

    keyless = shadow.symfonic_critic(NoKey(), config, domain)
    with pytest.raises(shadow.Failed, match="no API key"):
        asyncio.run(keyless(requests[0]))
    layered = shadow.symfonic_critic(JudgingProvider(), config, domain, procedural_layer=Layer(),
                                     scope=lambda r: r["scope"])
    logged = {**requests[0], "recorded": {"activation_log": {"inference_paths": [["Order", "Refund"]]}}}
    with pytest.raises(shadow.Failed, match="tenant"):
        asyncio.run(layered(logged))
