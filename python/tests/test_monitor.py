"""#46 from Python: ``critic_gate.monitor`` writes the folder the CLI
writes, returns its table with the declared types, and refuses a period
counted already."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import critic_gate
from conftest import ROOT, assert_same_reports, run_cli

GATE = 'baseline = "legacy"\nproduction = "smart"\n[variants.legacy]\n[variants.smart]\nmetacognition_selective_gate = true\n'


def fortnight(path: Path) -> None:
    """14 days: 300 English and 60 German acks a day (skipped), 100
    replies (fired on)."""
    with path.open("w", encoding="utf-8") as f:
        for day in range(14):
            for i in range(460):
                lang, draft = ("en", "Got it, thanks!") if i < 300 else (
                    ("de", "Alles klar, danke!") if i < 360 else
                    ("en", "Your order 4812 shipped on March 3 via DHL; it should arrive in two days."))
                critic = {"ran": False} if i < 360 else {"ran": True, "verdict": "approve"}
                f.write(json.dumps({"run_id": f"d{day}-c{i // 4}", "turn": i % 4,
                                    "ts": f"2026-11-{day + 1:02d}T10:00:00Z", "language": lang,
                                    "draft": draft, "confidence": 0.9, "critic": critic}) + "\n")


def planned(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The fortnight, its config and its plan (by language, R = 2%) in
    ``tmp_path``: (traffic, config, plan.toml)."""
    traffic, config = tmp_path / "t.jsonl", tmp_path / "gate.toml"
    fortnight(traffic)
    config.write_text(GATE, encoding="utf-8")
    critic_gate.plan(traffic, tmp_path / "plan", config, max_skip_regression_rate=0.02,
                     strata="language", salt="py")
    return traffic, config, tmp_path / "plan/plan.toml"


def test_monitor_from_python_is_the_clis(tmp_path: Path, cli: str) -> None:
    traffic, config, plan = planned(tmp_path)
    run_cli(cli, "sample", str(traffic), "--plan", str(plan), "--config", str(config),
            "--out", str(tmp_path / "s"))
    requests = (tmp_path / "s/requests.jsonl").read_text(encoding="utf-8").splitlines()
    with (tmp_path / "v.jsonl").open("w", encoding="utf-8") as f:
        for i, line in enumerate(requests):
            r = json.loads(line)
            late = int(r["run_id"][1:].split("-")[0]) >= 7
            verdict = "revise" if (late and i % 6 == 0) or i % 40 == 0 else "approve"
            f.write(json.dumps({"run_id": r["run_id"], "turn": r["turn"], "verdict": verdict}) + "\n")
    labelled = tmp_path / "labelled.jsonl"
    run_cli(cli, "labels", str(traffic), "--verdicts", str(tmp_path / "v.jsonl"), "--plan",
            str(plan), "--config", str(config), "--out", str(labelled))
    w = critic_gate.monitor(labelled, plan, tmp_path / "py", config)
    run_cli(cli, "monitor", str(labelled), "--plan", str(plan), "--config", str(config),
            "--out", str(tmp_path / "cli"), expect=1)
    assert_same_reports(tmp_path / "cli", tmp_path / "py")
    assert w.failed and not w and w.status is not None and w.status["status"] == "alarm", w
    assert w.table.height == 14 * 3
    assert w.table.schema["alarm"] == pl.Boolean and w.table.schema["labelled"] == pl.UInt64
    assert "change alarm since" in w.text
    # Day by day through a state; a day again is refused.
    state = tmp_path / "w.state"
    first = tmp_path / "day1.jsonl"
    first.write_text("".join(l for l in labelled.read_text(encoding="utf-8").splitlines(True)
                             if '"2026-11-01T' in l), encoding="utf-8")
    ok = critic_gate.monitor(first, plan, tmp_path / "daily", config, state=state)
    assert not ok.failed and ok.status is not None and ok.status["period"] == "2026-11-01"
    with pytest.raises(critic_gate.UsageError, match="counted in the state already"):
        critic_gate.monitor(first, plan, tmp_path / "daily", config, state=state)


def test_monitor_says_which_bound_decided(tmp_path: Path, cli: str) -> None:
    """#63 item 1 from Python: with failed shadow calls the worst case
    decides by default; ``assume_missing_at_random=True`` asks for the
    other bounds (ASSUMED), ``False`` holds the worst case over the
    config's ``[monitor]`` table, and the files are the CLI's."""
    traffic, config, plan = planned(tmp_path)
    critic_gate.sample(traffic, plan, tmp_path / "s", config)
    requests = (tmp_path / "s/requests.jsonl").read_text(encoding="utf-8").splitlines()
    with (tmp_path / "v.jsonl").open("w", encoding="utf-8") as f:
        for i, line in enumerate(requests):
            r = json.loads(line)
            what = {"error": "timeout"} if i % 31 == 5 else {"verdict": "approve"}
            f.write(json.dumps({"run_id": r["run_id"], "turn": r["turn"], **what}) + "\n")
    labelled = tmp_path / "labelled.jsonl"
    critic_gate.labels(traffic, tmp_path / "v.jsonl", plan, labelled, config)
    worst = critic_gate.monitor(labelled, plan, tmp_path / "worst", config)
    assert worst.decided_by == "worst_case" and worst.status is not None
    assert worst.status["status"] == "too_few_labels" and "(worst_case)" in repr(worst)
    assumed = critic_gate.monitor(labelled, plan, tmp_path / "assumed", config, assume_missing_at_random=True)
    assert assumed.decided_by == "missing_at_random" and assumed.status is not None
    assert assumed.status["status"] == "certified" and "ASSUMED: certified" in assumed.text
    run_cli(cli, "monitor", str(labelled), "--plan", str(plan), "--config", str(config),
            "--out", str(tmp_path / "cli"), "--assume-missing-at-random")
    assert_same_reports(tmp_path / "cli", tmp_path / "assumed")
    by_config = tmp_path / "assumed.toml"
    by_config.write_text(GATE + "[monitor]\nassume_missing_at_random = true\n", encoding="utf-8")
    held = critic_gate.monitor(labelled, plan, tmp_path / "held", by_config, assume_missing_at_random=False)
    assert held.decided_by == "worst_case"
    assert critic_gate.monitor(labelled, plan, tmp_path / "cfg", by_config).decided_by == "missing_at_random"


def test_sample_and_labels_from_python_are_the_clis(tmp_path: Path, cli: str) -> None:
    """``sample`` and ``labels`` (#48): the files Python writes are the
    CLI's, byte for byte, whatever ``threads``; their options are the
    declared ones, refused in Python's spelling."""
    traffic, config = tmp_path / "t.jsonl", tmp_path / "gate.toml"
    fortnight(traffic)
    config.write_text(GATE, encoding="utf-8")
    critic_gate.plan(traffic, tmp_path / "plan", config, max_skip_regression_rate=0.02,
                     strata="language", salt="py", window_days="2w", fidelity_share=0.1)
    plan = tmp_path / "plan/plan.toml"
    toml = plan.read_text(encoding="utf-8")
    assert "window_days = 14" in toml, toml
    run_cli(cli, "sample", str(traffic), "--plan", str(plan), "--config", str(config),
            "--out", str(tmp_path / "s"))
    got = critic_gate.sample(traffic, plan, tmp_path / "s-py", config, threads=1)
    for name in ("requests.jsonl", "sample.json"):
        assert (tmp_path / "s" / name).read_bytes() == (tmp_path / "s-py" / name).read_bytes(), name
    assert got == json.loads((tmp_path / "s/sample.json").read_text(encoding="utf-8"))
    with (tmp_path / "v.jsonl").open("w", encoding="utf-8") as f:
        for line in (tmp_path / "s/requests.jsonl").read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            f.write(json.dumps({"run_id": r["run_id"], "turn": r["turn"], "verdict": "approve"}) + "\n")
    run_cli(cli, "labels", str(traffic), "--verdicts", str(tmp_path / "v.jsonl"), "--plan",
            str(plan), "--config", str(config), "--out", str(tmp_path / "cli.jsonl"))
    counts = critic_gate.labels(traffic, tmp_path / "v.jsonl", plan, tmp_path / "py.jsonl", config)
    assert (tmp_path / "cli.jsonl").read_bytes() == (tmp_path / "py.jsonl").read_bytes()
    assert counts["labelled"] > 0 and counts["turns"] == 14 * 460, counts
    # The same file again is refused, and force replaces it, as --force.
    with pytest.raises(critic_gate.UsageError):
        critic_gate.labels(traffic, tmp_path / "v.jsonl", plan, tmp_path / "py.jsonl", config)
    critic_gate.labels(traffic, tmp_path / "v.jsonl", plan, tmp_path / "py.jsonl", config,
                       force=True)
    # Refusals name the keyword: labels reads traffic only; a window and a
    # share out of range; a misspelled keyword names the known ones.
    with pytest.raises(critic_gate.UsageError, match='^from_ "otlp": give traffic$'):
        critic_gate.labels(traffic, tmp_path / "v.jsonl", plan, tmp_path / "x.jsonl", config,
                           from_="otlp")  # type: ignore[typeddict-item]
    with pytest.raises(critic_gate.UsageError, match="^window_days: give days"):
        critic_gate.plan(traffic, tmp_path / "p2", config, max_skip_regression_rate=0.02,
                         window_days=0)
    with pytest.raises(critic_gate.UsageError, match="^max_fidelity_gap: give a number between"):
        critic_gate.monitor(tmp_path / "py.jsonl", plan, tmp_path / "m", config,
                            max_fidelity_gap=1.5)
    with pytest.raises(TypeError, match="unknown option \"thread\".*threads"):
        critic_gate.sample(traffic, plan, tmp_path / "s2", config, thread=2)  # type: ignore[call-arg]
    with pytest.raises(critic_gate.UsageError,
                       match="give max_skip_regression_rate or max_harmful_per_1k"):
        critic_gate.plan(traffic, tmp_path / "p3", config)
    # A verdicts line too long names the keyword, as the traffic's does.
    with pytest.raises(critic_gate.InvalidLineError) as e:
        critic_gate.labels(traffic, tmp_path / "v.jsonl", plan, tmp_path / "y.jsonl", config,
                           max_line_bytes=10)
    assert "(max_line_bytes)" in str(e.value) and "--" not in str(e.value), str(e.value)
    # A number past any float's digits is a number (the command holds it
    # to its range), not a wrong type.
    with pytest.raises(critic_gate.UsageError, match="^window_days: "):
        critic_gate.plan(traffic, tmp_path / "p4", config, max_skip_regression_rate=0.02,
                         window_days=10**40)
    # An empty key is refused with the keys it could be.
    with pytest.raises(critic_gate.UsageError, match="give language, language-tag, intent, call_site"):
        critic_gate.plan(traffic, tmp_path / "p5", config, max_skip_regression_rate=0.02,
                         strata="")


def test_check_reads_assume_missing_at_random_as_its_declaration(tmp_path: Path) -> None:
    """``check``'s one keyword for the two flags is read as every declared
    switch: a value that is not True, False or None is refused naming it."""
    with pytest.raises(TypeError, match="^assume_missing_at_random: give True or False, got 1$"):
        critic_gate.check(ROOT / "reports/seed", assume_missing_at_random=1,  # type: ignore[typeddict-item]
                          max_safety_regressions=0)


def test_a_list_keyword_given_one_text_says_what_each_item_is(tmp_path: Path) -> None:
    """A type checker passes a text where a list of texts is asked (a str
    is a Sequence[str]); the refusal says what each item is, in the
    option's own words (a DATE, not a "name")."""
    with pytest.raises(TypeError, match=r"^release_at: give a list, one DATE each, got \"2026-11-03\"$"):
        critic_gate.monitor(tmp_path / "t.jsonl", tmp_path / "plan.toml", tmp_path / "w",
                            by="release", release_at="2026-11-03")
    with pytest.raises(TypeError, match=r"^variants: give a list, one NAME each, got \"smart\"$"):
        critic_gate.check(ROOT / "reports/seed", variants="smart", max_safety_regressions=0)


def test_ctrl_c_stops_plan_sample_labels_and_monitor_with_nothing_written(tmp_path: Path) -> None:
    """#63 item 8: Ctrl-C (``_thread.interrupt_main``, a notebook's
    interrupt) 0.3 s into ``plan``, ``sample``, ``labels`` and ``monitor``
    on 1.3 to 3.9 million turns (1 to 5 s): KeyboardInterrupt within a
    second, no output written (an earlier one left as it was), and
    monitor's state not advanced, so the same call runs afterwards. They
    ran on for 1.5-6.5 s and wrote everything, and monitor's rerun was
    refused as counted already."""
    import _thread
    import signal
    import threading
    import time

    traffic, config, plan = planned(tmp_path)
    small = traffic.read_text(encoding="utf-8")
    big = tmp_path / "big.jsonl"
    # 200 fortnights, each its own conversations (and no day twice in one
    # state: monitor counts the big file once, into a fresh state).
    with big.open("w", encoding="utf-8") as f:
        for k in range(200):
            f.write(small.replace('"run_id": "d', f'"run_id": "k{k}-d'))
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text("", encoding="utf-8")
    state = tmp_path / "state.json"
    earlier = tmp_path / "earlier"
    critic_gate.monitor(traffic, plan, earlier, config, state=state)

    def files(d: Path) -> dict[str, bytes]:
        return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}

    before, state_before = files(earlier), state.read_bytes()
    fresh = tmp_path / "fresh-state.json"
    jobs = {
        "plan": lambda: critic_gate.plan([big] * 3, tmp_path / "p2", config, max_skip_regression_rate=0.02),
        "sample": lambda: critic_gate.sample([big] * 3, plan, tmp_path / "s2", config),
        "labels": lambda: critic_gate.labels([big] * 3, verdicts, plan, tmp_path / "l2.jsonl", config),
        "monitor": lambda: critic_gate.monitor(big, plan, tmp_path / "m2", config, state=fresh),
        "monitor over an earlier one": lambda: critic_gate.monitor(big, plan, earlier, config,
                                                                   state=state, force=True),
    }
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        for name, job in jobs.items():
            fired: list[float] = []
            timer = threading.Timer(0.3, lambda: (fired.append(time.monotonic()), _thread.interrupt_main()))
            timer.start()
            with pytest.raises(KeyboardInterrupt):
                job()
            stopped = time.monotonic()
            timer.join()
            assert fired and stopped - fired[0] < 1.0, f"{name} stopped {stopped - fired[0]:.2f} s after"
    finally:
        signal.signal(signal.SIGINT, previous)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted(["t.jsonl", "gate.toml", "plan", "big.jsonl", "v.jsonl", "state.json",
                           "earlier"]), left
    assert files(earlier) == before and state.read_bytes() == state_before
    # Not advanced: the same day's run is taken afterwards.
    critic_gate.monitor(big, plan, tmp_path / "m2", config, state=fresh)
    assert fresh.is_file()


def test_plan_returns_and_warns_its_caveats(tmp_path: Path) -> None:
    """#63 item 8: ``plan()`` says what the CLI prints of a stratum it does
    not expect to certify ("its prior is at or above the rate"): warned,
    and in the returned plan's ``caveats``; the dict itself is the plan
    (``ExplorationGate`` takes it)."""
    traffic, config = tmp_path / "t.jsonl", tmp_path / "gate.toml"
    fortnight(traffic)
    # Production's skips of German acks were all revised: its prior is 1.
    text = traffic.read_text(encoding="utf-8").replace(
        '"draft": "Alles klar, danke!", "confidence": 0.9, "critic": {"ran": false}',
        '"draft": "Alles klar, danke!", "confidence": 0.9, "critic": {"ran": true, "verdict": "revise"}')
    traffic.write_text(text, encoding="utf-8")
    config.write_text('baseline = "smart"\n[variants.smart]\nmetacognition_selective_gate = true\n',
                      encoding="utf-8")
    with pytest.warns(critic_gate.CriticGateWarning, match="de: its prior"):
        p = critic_gate.plan(traffic, tmp_path / "plan", config, max_skip_regression_rate=0.02,
                             strata="language", salt="c")
    assert isinstance(p, critic_gate.Planned) and "caveats" not in p
    assert any(c.startswith("de: its prior") for c in p.caveats), p.caveats
    critic_gate.ExplorationGate(p, stratum=lambda ctx: "en")
