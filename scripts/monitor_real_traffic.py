#!/usr/bin/env python3
"""#46 on real traffic: does monitor's change alarm fire after a rise, and
not before, on a published agent dataset's structure?

Taskmaster-4 (Google Research, CC BY 4.0: github.com/google-research-datasets/
Taskmaster, TM-4-2024/data/*.json) holds 3,710 coffee-ordering dialogs whose
assistant turns make API calls (menu lookups, order items). Each assistant
turn becomes a traffic turn (its text the draft, its API calls the tool
calls, no confidence: cold traffic, where the legacy gate fires on every
turn), recorded as if under the legacy gate (the critic reviewed every
turn), 120 dialogs a day over 31 days. Replayed with production = the
smart gate, the turns it would skip are the population. The truth is
injected: a known share of the conversations' would-be skips is relabelled
`revise` (R/2 of them before day INJECT, 3R from it on; which ones by a
hash of the conversation, so a conversation's skips regress together), the
rest `approve`.

For each of 200 salts: `plan` (the salt fixes which skips the coin draws)
and `monitor` over the 31 days; the drawn skips' recorded verdicts are
production's own critic's, as an exploration gate would record them. It
prints the share of salts whose alarm fires on or after the injection day,
and before it (the issue asks at least 90% and at most 5%).

usage: scripts/monitor_real_traffic.py TASKMASTER4_DATA_DIR [CRITIC_GATE]
"""

from __future__ import annotations

import csv
import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile

RATE = 0.05
INJECT = 16
SALTS = 200
PER_DAY = 120

GATE = """baseline = "legacy"
production = "smart"
[variants.legacy]
[variants.smart]
metacognition_selective_gate = true
"""


def unit(text: str) -> float:
    """A uniform number in [0, 1) from a text (independent of the coin)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") / 2**64


def day_ts(day: int) -> str:
    return f"2026-09-{day + 1:02d}T12:00:00Z" if day < 30 else f"2026-10-{day - 29:02d}T12:00:00Z"


def convert(data_dir: str, out: str) -> int:
    """Taskmaster-4 dialogs as traffic, every turn approved (relabelled by
    `inject` once the smart gate's skips are known)."""
    n = 0
    with open(out, "w", encoding="utf-8") as f:
        for path in sorted(glob.glob(os.path.join(data_dir, "*.json"))):
            with open(path, encoding="utf-8") as src:
                dialogs = json.load(src)
            for d in dialogs:
                day = n // PER_DAY
                n += 1
                for u in d["utterances"]:
                    if u["speaker"] == "user":
                        continue
                    calls = [a["value"] for a in u.get("annotations", []) if a["name"] == "api_call"]
                    f.write(json.dumps({
                        "run_id": d["conversation_id"], "turn": u["index"], "ts": day_ts(day),
                        "draft": u["text"], "language": "en", "tool_calls_this_turn": calls,
                        "critic": {"ran": True, "verdict": "approve"},
                    }) + "\n")
    return n


def smart_skips(cli: str, traffic: str, config: str, work: str) -> set[tuple[str, int]]:
    """The turns production's (smart) gate skips, from a replay's decisions."""
    out = os.path.join(work, "replay")
    subprocess.run([cli, "replay", traffic, "--config", config, "--out", out, "--quiet",
                    "--decisions", "all"], check=True)
    skips = set()
    with open(os.path.join(out, "decisions.csv"), encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if r["variant"] == "smart" and r["fires"] == "false":
                skips.add((r["run_id"], int(r["turn"])))
    return skips


def inject(traffic: str, skips: set[tuple[str, int]], out: str) -> tuple[int, int]:
    """Relabel a conversation's would-be skips `revise` when its hash falls
    below the day's true rate; returns the skips before and from INJECT."""
    before = after = 0
    with open(traffic, encoding="utf-8") as src, open(out, "w", encoding="utf-8") as f:
        for line in src:
            t = json.loads(line)
            day = int(t["ts"][8:10]) - 1 if t["ts"][5:7] == "09" else 29 + int(t["ts"][8:10])
            if (t["run_id"], t["turn"]) in skips:
                rate = RATE / 2 if day < INJECT else 3 * RATE
                before += day < INJECT
                after += day >= INJECT
                if unit(t["run_id"]) < rate:
                    t["critic"]["verdict"] = "revise"
            f.write(json.dumps(t) + "\n")
    return before, after


def main() -> None:
    data_dir = sys.argv[1]
    cli = sys.argv[2] if len(sys.argv) > 2 else "target/release/critic-gate"
    with tempfile.TemporaryDirectory() as work:
        raw, traffic = os.path.join(work, "raw.jsonl"), os.path.join(work, "traffic.jsonl")
        config = os.path.join(work, "gate.toml")
        with open(config, "w", encoding="utf-8") as f:
            f.write(GATE)
        dialogs = convert(data_dir, raw)
        skips = smart_skips(cli, raw, config, work)
        before, after = inject(raw, skips, traffic)
        print(f"{dialogs} dialogs, {len(skips)} smart-gate skips ({before} before day {INJECT + 1}, {after} from it)")
        fired_after = fired_before = 0
        predicted = None
        delays = []
        for salt in range(SALTS):
            plan = os.path.join(work, f"plan{salt}")
            subprocess.run([cli, "plan", traffic, "--config", config, "--out", plan, "--quiet",
                            "--max-skip-regression-rate", str(RATE), "--window", "3d",
                            "--salt", f"real-{salt}"], check=True)
            if predicted is None:
                with open(os.path.join(plan, "plan.csv"), encoding="utf-8") as f:
                    row = list(csv.DictReader(f))[-1]
                predicted = (row["calls_per_day"], row["days_to_detect_2r"], row["days_to_detect_3r"])
            watch = os.path.join(work, f"watch{salt}")
            done = subprocess.run([cli, "monitor", traffic, "--plan", os.path.join(plan, "plan.toml"),
                                   "--config", config, "--out", watch, "--quiet"])
            assert done.returncode in (0, 1), done
            with open(os.path.join(watch, "monitor.csv"), encoding="utf-8") as f:
                pooled = [r for r in csv.DictReader(f) if r["stratum"] == "all"]
            first = next((i for i, r in enumerate(pooled) if r["alarm"] == "true"), None)
            fired_before += first is not None and first < INJECT
            fired_after += first is not None and first >= INJECT
            if first is not None and first >= INJECT:
                delays.append(first - INJECT + 1)
        delays.sort()
        median = delays[len(delays) // 2] if delays else None
        print(f"plan: {predicted[0]} calls a day; days to detect 2R {predicted[1]}, 3R {predicted[2]}")
        print(f"alarm on or after the injection: {fired_after} of {SALTS} salts "
              f"({100 * fired_after / SALTS:.1f}%); before it: {fired_before} "
              f"({100 * fired_before / SALTS:.1f}%); median delay {median} days")
        ok = fired_after >= 0.9 * SALTS and fired_before <= 0.05 * SALTS
        sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
