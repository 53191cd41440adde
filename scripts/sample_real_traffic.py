#!/usr/bin/env python3
"""#45 on real traffic: does the bound from a plan's shadow sample cover
the true regression rate of production's skips, salt after salt?

Taskmaster-4 (Google Research, CC BY 4.0: github.com/google-research-datasets/
Taskmaster, TM-4-2024/data/*.json): 3,710 coffee-ordering dialogs, turned
into traffic as scripts/monitor_real_traffic.py does (each assistant turn a
turn, its API calls the tool calls, 120 dialogs a day over 31 days). The
smart gate skips 4,154 of its 6,920 assistant turns, mostly "please confirm
the order on the screen" and "your order will be ready soon".

The truth is not injected: it is read from the dialogs. A skipped turn is a
regression when the customer's next utterance corrects the agent ("No, I'd
like it decaf", "Actually, make that...", "wait, ..."): the turn the agent
sent without review was not what the customer wanted. 59 of the 4,154 skips
are (1.42%), clustered in the dialogs whose scenario has the customer change
the order: the population's true rate is known exactly.

The run follows docs/watching.md as a team would after the switch:
1. `plan` on the legacy recording (every turn reviewed, so every skip
   labelled: the prior), with a budget and a window;
2. the production recording: the same turns as the smart gate would have
   recorded them, the critic on the turns it fires on and on none it skips;
3. per salt: `plan --salt`, `sample` (requests.jsonl), a shadow critic that
   answers each request with the truth (in a second run, a share of its
   calls failing, more often on the turns it would revise: informative
   failures, where only the worst case is promised), `labels`,
   and `replay --plan`, whose summary gives the bound.
It prints, per budget and critic, the share of the 200 salts whose 95%
bound covers the true rate (the issue asks at least 95%), and the same for
the worst case that counts every failed call as a regression; it exits 1
when the bound covers in fewer than 95% with no failed calls, or the worst
case in fewer than 95% with any. That rule is the issue's, on 200 salts:
an exact bound whose coverage is 96.2% (the heaviest plan here; printed
as the design's exact coverage) falls under it about one time in seven by
chance, so read a failure beside the exact coverage printed with it.

usage: scripts/sample_real_traffic.py TASKMASTER4_DATA_DIR [CRITIC_GATE]
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from monitor_real_traffic import GATE, convert, smart_skips, unit  # noqa: E402

SALTS = int(os.environ.get("SALTS", "200"))
# (budget R, window): a tight budget over a week (a large share drawn) and a
# looser one over the month (a few dozen calls: where exactness matters).
BUDGETS = [("0.03", "7d"), ("0.05", "31d"), ("0.03", "31d")]
# Two shadow critics: one whose calls all return, and one whose calls fail
# at 3% on turns it would approve and 25% on those it would revise.
FAILURES = [(0.0, 0.0), (0.03, 0.25)]

CORRECTION = re.compile(
    r"^(no\b|nope|nah)|\b(actually|wait|change|instead|wrong|not right|isn't right|incorrect"
    r"|forgot|missing|mistake|remove|cancel)\b",
    re.I,
)


def corrected_skips(data_dir: str, skips: set[tuple[str, int]]) -> set[tuple[str, int]]:
    """The skipped turns whose next customer utterance corrects the agent."""
    import glob

    found = set()
    for path in sorted(glob.glob(os.path.join(data_dir, "*.json"))):
        with open(path, encoding="utf-8") as f:
            dialogs = json.load(f)
        for d in dialogs:
            utterances = d["utterances"]
            for i, u in enumerate(utterances):
                key = (d["conversation_id"], u["index"])
                if key not in skips:
                    continue
                reply = next((v["text"] for v in utterances[i + 1:] if v["speaker"] == "user"), None)
                if reply is not None and CORRECTION.search(reply):
                    found.add(key)
    return found


def recordings(raw: str, skips: set, revised: set, legacy: str, production: str) -> None:
    """The legacy recording (every turn reviewed, the truth on the skips) and
    production's (no critic on the turns the smart gate skips)."""
    with open(raw, encoding="utf-8") as src, open(legacy, "w", encoding="utf-8") as old, \
            open(production, "w", encoding="utf-8") as new:
        for line in src:
            t = json.loads(line)
            key = (t["run_id"], t["turn"])
            if key in revised:
                t["critic"]["verdict"] = "revise"
            old.write(json.dumps(t) + "\n")
            if key in skips:
                del t["critic"]
            new.write(json.dumps(t) + "\n")


def shadow(requests: str, revised: set, salt: str, failures: tuple[float, float], out: str) -> None:
    """An oracle critic whose calls fail more often on the turns it would revise."""
    with open(requests, encoding="utf-8") as src, open(out, "w", encoding="utf-8") as f:
        for line in src:
            r = json.loads(line)
            bad = (r["run_id"], r["turn"]) in revised
            answer = {"run_id": r["run_id"], "turn": r["turn"]}
            if unit(f"{salt}|{r['run_id']}|{r['turn']}") < failures[bad]:
                answer["error"] = "timeout"
            else:
                answer["verdict"] = "revise" if bad else "approve"
            f.write(json.dumps(answer) + "\n")


def exact_coverage(population: int, marked: int, p: float, alpha: float = 0.05) -> float:
    """The chance, over the coin, that the exact bound covers `marked`
    regressions among `population` skips drawn each at `p` (every call
    answered): the drawn count is Binomial(population, p) and, given it,
    the regressions drawn are hypergeometric; the bound covers when seeing
    as few has probability above alpha. What the salts estimate."""
    from math import exp, lgamma, log, sqrt

    def ln_choose(n: int, k: int) -> float:
        return lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1)

    mean, sd = population * p, sqrt(population * p * (1 - p))
    total = 0.0
    for n in range(max(1, int(mean - 8 * sd)), min(population, int(mean + 8 * sd)) + 1):
        weight = exp(ln_choose(population, n) + n * log(p) + (population - n) * log(1 - p))
        seen = covered = 0.0
        for x in range(max(0, n + marked - population), min(n, marked) + 1):
            mass = exp(ln_choose(marked, x) + ln_choose(population - marked, n - x) - ln_choose(population, n))
            seen += mass
            covered += mass if seen > alpha else 0.0
        total += weight * covered
    return total


def one_salt(cli: str, work: str, budget: tuple[str, str], salt: str, revised: set,
             failures: tuple[float, float]) -> dict:
    run = lambda *args: subprocess.run([cli, *args, "--quiet"], check=True)  # noqa: E731
    legacy, production = (os.path.join(work, n) for n in ("legacy.jsonl", "production.jsonl"))
    config = os.path.join(work, "gate.toml")
    d = os.path.join(work, "salt")
    subprocess.run(["rm", "-rf", d], check=True)
    os.makedirs(d)
    run("plan", legacy, "--config", config, "--out", f"{d}/plan", "--max-skip-regression-rate",
        budget[0], "--window", budget[1], "--salt", salt)
    run("sample", production, "--plan", f"{d}/plan/plan.toml", "--config", config, "--out", f"{d}/shadow")
    shadow(f"{d}/shadow/requests.jsonl", revised, salt, failures, f"{d}/verdicts.jsonl")
    run("labels", production, "--verdicts", f"{d}/verdicts.jsonl", "--plan", f"{d}/plan/plan.toml",
        "--config", config, "--out", f"{d}/labelled.jsonl")
    run("replay", f"{d}/labelled.jsonl", "--config", config, "--plan", f"{d}/plan/plan.toml",
        "--out", f"{d}/replay", "--decisions", "none")
    with open(f"{d}/replay/summary.json", encoding="utf-8") as f:
        summary = json.load(f)
    with open(f"{d}/plan/plan.csv", encoding="utf-8") as f:
        probability = float(list(csv.DictReader(f))[-1]["probability"])
    return summary["variants"]["smart"], probability


def main() -> None:
    data_dir = sys.argv[1]
    cli = sys.argv[2] if len(sys.argv) > 2 else "target/release/critic-gate"
    failed = False
    with tempfile.TemporaryDirectory() as work:
        raw = os.path.join(work, "raw.jsonl")
        with open(os.path.join(work, "gate.toml"), "w", encoding="utf-8") as f:
            f.write(GATE)
        dialogs = convert(data_dir, raw)
        skips = smart_skips(cli, raw, os.path.join(work, "gate.toml"), work)
        revised = corrected_skips(data_dir, skips)
        recordings(raw, skips, revised, os.path.join(work, "legacy.jsonl"),
                   os.path.join(work, "production.jsonl"))
        truth = len(revised) / len(skips)
        print(f"{dialogs} dialogs; the smart gate skips {len(skips)} turns, {len(revised)} of them "
              f"corrected by the customer next: true rate {100 * truth:.2f}%")
        for budget, failures in ((b, f) for b in BUDGETS for f in FAILURES):
            covered = worst = drawn = lost = 0
            for i in range(SALTS):
                row, probability = one_salt(cli, work, budget, f"real-{i}", revised, failures)
                drawn += row["sampled_skips"]
                lost += row["sampled_failed"]
                # The bounds are counts over the skips, written as rates to
                # ten digits: compared as counts, a tie is not a miss.
                n = row["production_skips"]
                covered += round(row["skip_regression_rate_upper95"] * n) >= len(revised)
                worst += round(row["skip_regression_rate_worst_case_upper95"] * n) >= len(revised)
            print(f"R = {budget[0]}, window {budget[1]}, calls failing {failures[0]:.0%}/{failures[1]:.0%}: "
                  f"{drawn / SALTS:.0f} skips drawn a salt, {lost / SALTS:.1f} failed; the 95% bound "
                  f"covers in {covered} of {SALTS} salts ({100 * covered / SALTS:.1f}%), the worst case "
                  f"in {worst} ({100 * worst / SALTS:.1f}%)")
            if failures == (0.0, 0.0):
                exact = exact_coverage(len(skips), len(revised), probability)
                print(f"  the design's exact coverage at probability {probability:.4g}: {100 * exact:.1f}%")
            # The bound is promised when failures are unrelated to verdicts
            # (here: none), the worst case always.
            failed |= worst < 0.95 * SALTS or (failures == (0.0, 0.0) and covered < 0.95 * SALTS)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
