"""#63 item 6: ``critic_gate.shadow.run`` fit for a real critic: slow,
failing, async, interrupted, and sometimes broken. Requests are written as
``critic-gate sample`` writes them; the labels side is in
test_exploration.py and the CLI tests."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from critic_gate import shadow

FULL = bool(os.environ.get("CRITIC_GATE_SHADOW_FULL"))


def _requests(path: Path, n: int, plan: str = "p1") -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"plan_id": plan, "run_id": f"r{i}", "turn": 0, "draft": f"draft {i}",
                                 "stratum": "all", "probability": 0.5}) + "\n")
    return path


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def test_many_slow_calls_run_at_once(tmp_path: Path) -> None:
    """2,000 requests to a critic that takes 2 s a call, 64 at a time: under
    two minutes (the serial runner took 4,000 s). By default the same at a
    tenth of the latency, under a tenth of the time;
    CRITIC_GATE_SHADOW_FULL=1 runs it at 2 s."""
    latency = 2.0 if FULL else 0.2
    reqs = _requests(tmp_path / "requests.jsonl", 2000)

    def critic(request: dict[str, Any]) -> str:
        time.sleep(latency)
        return "approve"

    t0 = time.monotonic()
    counts = shadow.run(reqs, critic, tmp_path / "v.jsonl", concurrency=64, progress=False)
    took = time.monotonic() - t0
    assert counts["verdicts"] == 2000 and counts["failed"] == 0, counts
    assert took < 60 * latency, f"{took:.1f} s"
    assert {x["run_id"] for x in _lines(tmp_path / "v.jsonl")} == {f"r{i}" for i in range(2000)}


def test_an_interrupted_run_keeps_every_answer_and_a_rerun_asks_only_the_rest(tmp_path: Path) -> None:
    reqs = _requests(tmp_path / "requests.jsonl", 400)
    out = tmp_path / "v.jsonl"
    called: list[str] = []
    stopped: list[str] = []
    lock = threading.Lock()

    def stops_halfway(request: dict[str, Any]) -> str:
        with lock:
            called.append(request["run_id"])
            n = len(called)
        if n == 200:
            stopped.append(request["run_id"])
            raise KeyboardInterrupt
        time.sleep(0.005)
        return "revise" if n % 3 == 0 else "approve"

    with pytest.raises(KeyboardInterrupt):
        shadow.run(reqs, stops_halfway, out, concurrency=8, progress=False)
    first = _lines(out)
    # The calls under way when it stopped came back within the grace: kept.
    assert 199 <= len(first) < 200 + 8, len(first)
    answered = {x["run_id"] for x in first}
    assert stopped[0] not in answered
    again: list[str] = []

    def critic(request: dict[str, Any]) -> str:
        with lock:
            again.append(request["run_id"])
        return "approve"

    counts = shadow.run(reqs, critic, out, concurrency=8, progress=False)
    assert counts["answered_before"] == len(answered), counts
    assert not answered & set(again), "no answered call is made again"
    assert len(again) == 400 - len(answered)
    assert {x["run_id"] for x in _lines(out)} == {f"r{i}" for i in range(400)}


def test_a_line_cut_short_is_dropped_and_its_call_made_again(tmp_path: Path) -> None:
    reqs = _requests(tmp_path / "requests.jsonl", 3)
    out = tmp_path / "v.jsonl"
    out.write_text('{"run_id": "r0", "turn": 0, "plan_id": "p1", "verdict": "approve"}\n'
                   '{"run_id": "r1", "turn": 0, "plan_id": "p1", "verd', encoding="utf-8")
    counts = shadow.run(reqs, lambda r: "refuse", out, progress=False)
    assert counts == {"requests": 3, "answered_before": 1, "verdicts": 2, "failed": 0, "retries": 0}
    assert [x["run_id"] for x in _lines(out)][0] == "r0" and len(_lines(out)) == 3


def test_another_plan_s_verdicts_file_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "v.jsonl"
    out.write_text('{"run_id": "r0", "turn": 0, "plan_id": "old", "verdict": "approve"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="plan old"):
        shadow.run(_requests(tmp_path / "r.jsonl", 2), lambda r: "approve", out, progress=False)
    assert len(_lines(out)) == 1


def test_an_async_critic_runs_its_calls_at_once(tmp_path: Path) -> None:
    reqs = _requests(tmp_path / "requests.jsonl", 200)

    async def critic(request: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0.2)
        return {"verdict": "approve", "tokens_in": 10, "model": "opus"}

    t0 = time.monotonic()
    counts = shadow.run(reqs, critic, tmp_path / "v.jsonl", concurrency=100, progress=False)
    assert counts["verdicts"] == 200, counts
    assert time.monotonic() - t0 < 5, "200 calls of 0.2 s, 100 at a time"
    assert _lines(tmp_path / "v.jsonl")[0]["tokens_in"] == 10


@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_bug_in_the_critic_raises_naming_the_request(tmp_path: Path, concurrency: int) -> None:
    reqs = _requests(tmp_path / "requests.jsonl", 50)

    def critic(request: dict[str, Any]) -> str:
        if request["run_id"] == "r7":
            return request["no such field"]
        return "approve"

    with pytest.raises(shadow.CriticError) as e:
        shadow.run(reqs, critic, tmp_path / "v.jsonl", concurrency=concurrency, progress=False)
    assert "requests.jsonl:8" in str(e.value) and "'r7'" in str(e.value), str(e.value)
    assert isinstance(e.value.__cause__, KeyError)
    assert e.value.run_id == "r7"
    # Nothing written for it: the bug is not a failed call.
    assert all("error" not in x for x in _lines(tmp_path / "v.jsonl"))


@pytest.mark.parametrize("stop", [KeyError, KeyboardInterrupt])
def test_calls_under_way_when_the_run_stops_are_kept(tmp_path: Path, stop: type) -> None:
    """A real critic's calls are paid for: when the critic breaks (a bug
    on r7) or Ctrl-C comes, the calls already under way (r4 to r6, 0.2 s
    each) are waited for and written (after Ctrl-C, those back within
    ``shadow.GRACE``); none after them is made."""
    reqs = _requests(tmp_path / "requests.jsonl", 50)

    def critic(request: dict[str, Any]) -> str:
        if request["run_id"] == "r7":
            raise stop("r7")
        time.sleep(0.2)
        return "approve"

    with pytest.raises(shadow.CriticError if stop is KeyError else KeyboardInterrupt):
        shadow.run(reqs, critic, tmp_path / "v.jsonl", concurrency=4, progress=False)
    assert {x["run_id"] for x in _lines(tmp_path / "v.jsonl")} == {f"r{i}" for i in range(7)}


def test_a_value_that_is_not_a_verdict_raises(tmp_path: Path) -> None:
    with pytest.raises(shadow.CriticError, match="'Approve'"):
        shadow.run(_requests(tmp_path / "r.jsonl", 3), lambda r: "Approve", tmp_path / "v.jsonl", progress=False)


def test_transient_failures_are_retried_and_written_only_when_spent(tmp_path: Path) -> None:
    reqs = _requests(tmp_path / "requests.jsonl", 30)
    tries: dict[str, int] = {}
    lock = threading.Lock()

    def critic(request: dict[str, Any]) -> str:
        rid = request["run_id"]
        with lock:
            tries[rid] = tries.get(rid, 0) + 1
            n = tries[rid]
        if rid == "r3":
            raise shadow.Transient("overloaded", retry_after=0.01)
        if rid == "r4":
            raise shadow.Failed("the request is too long")
        if n <= 2 and int(rid[1:]) % 2 == 0:
            raise TimeoutError("timed out")
        return "approve"

    counts = shadow.run(reqs, critic, tmp_path / "v.jsonl", concurrency=4, retries=3, backoff=0.001,
                        progress=False)
    lines = {x["run_id"]: x for x in _lines(tmp_path / "v.jsonl")}
    assert len(lines) == 30
    assert tries["r3"] == 4 and "after 4 attempts" in lines["r3"]["error"], lines["r3"]
    assert tries["r4"] == 1 and lines["r4"]["error"].startswith("Failed: "), lines["r4"]
    assert lines["r2"]["verdict"] == "approve" and tries["r2"] == 3
    assert counts["failed"] == 2 and counts["verdicts"] == 28
    # r3's three, and two for each other even one (r4 and r3 aside).
    assert counts["retries"] == 3 + 2 * 14, counts


def test_a_client_s_rate_limit_is_transient_by_its_name() -> None:
    class RateLimitError(Exception):
        pass

    class Sub(RateLimitError):
        pass

    assert shadow.is_transient(Sub("429"))
    assert shadow.is_transient(ConnectionResetError())
    assert not shadow.is_transient(KeyError("x"))


def test_progress_reaches_a_callback(tmp_path: Path) -> None:
    seen: list[shadow.Progress] = []
    shadow.run(_requests(tmp_path / "r.jsonl", 5), lambda r: "approve", tmp_path / "v.jsonl", progress=seen.append)
    assert seen and seen[-1].done == 5 and seen[-1].total == 5
    assert "5/5 calls" in str(seen[-1])


def test_ctrl_c_stops_the_command_within_a_second(tmp_path: Path) -> None:
    """From a shell: SIGINT to ``python -m critic_gate.shadow`` with calls
    under way that take 30 s: it exits (130) within a second, and the file
    holds every call answered before."""
    reqs = _requests(tmp_path / "requests.jsonl", 100)
    (tmp_path / "slowcritic.py").write_text(textwrap.dedent("""
        import time
        n = 0
        def critic(request):
            global n
            n += 1
            time.sleep(0.01 if n <= 20 else 30)
            return "approve"
    """), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    p = subprocess.Popen([sys.executable, "-m", "critic_gate.shadow", str(reqs), "--critic", "slowcritic:critic",
                          "--out", str(tmp_path / "v.jsonl"), "--concurrency", "1", "--quiet"],
                         env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if (tmp_path / "v.jsonl").exists() and len(_lines(tmp_path / "v.jsonl")) >= 20:
            break
        time.sleep(0.05)
    time.sleep(0.3)
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=10)
    took = time.monotonic() - t0
    assert p.returncode == 130, err
    assert took < 1.0, f"{took:.2f} s"
    assert len(_lines(tmp_path / "v.jsonl")) == 20
    assert "run again to go on" in err
