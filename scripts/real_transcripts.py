#!/usr/bin/env python3
"""A benchmark corpus of real model output, as OpenAI-chat conversations
(one a line) for `--from openai-chat`, `import` and `derive`.

The source is tau-bench's released trajectories: the conversations that
gpt-4o and Claude 3.5 Sonnet had as customer-service agents (airline and
retail) with a simulated user and real tool calls, published by Sierra
Research in the repository sierra-research/tau-bench on GitHub under the
MIT licence, folder `historical_trajectories/`, at commit
59a200c6d575d595120f1cb70fea53cef0632f6b (2026-03-18). Each file is a JSON
array of `{"task_id", "trial", "reward", "info", "traj"}`, `traj` being the
conversation's messages in OpenAI's chat format (system, user, assistant
with `tool_calls`, tool). Nothing of the text is changed.

  real_transcripts.py OUT [--turns N] FILE...

writes every trajectory of every FILE, then the whole set again (each copy's
conversation ids end in `#2`, `#3`, ...) until OUT holds at least N user
turns (default 200,000; 0 writes the set once). It prints how many
conversations and turns are distinct and how many times the set was
written: a repeated set measures throughput on real text, but a cache keyed
by text (the replay's ack cover, the gate's memo of short drafts) is warm
on every copy after the first, so the figures for the distinct set alone
are given beside it (`--turns 0`).
"""
import argparse
import json
import sys


def conversations(path):
    """The trajectories of one tau-bench file, as chat lines."""
    with open(path, encoding="utf-8") as f:
        runs = json.load(f)
    if not isinstance(runs, list):
        sys.exit(f"{path}: not a tau-bench trajectory file (a JSON array of runs)")
    name = path.rsplit("/", 1)[-1].removesuffix(".json")
    for i, run in enumerate(runs):
        messages = run.get("traj") if isinstance(run, dict) else None
        if not isinstance(messages, list):
            sys.exit(f"{path}: run {i} has no `traj` list of messages")
        task, trial = run.get("task_id", i), run.get("trial", 0)
        yield {"id": f"{name}/task-{task}/trial-{trial}", "messages": messages}


def user_turns(conv):
    return sum(1 for m in conv["messages"] if isinstance(m, dict) and m.get("role") == "user")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--turns", type=int, default=200_000)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    convs = [c for f in a.files for c in conversations(f)]
    turns = sum(user_turns(c) for c in convs)
    if turns == 0:
        sys.exit("the files hold no user turns")
    copies = max(1, -(-a.turns // turns))
    with open(a.out, "w", encoding="utf-8") as o:
        for k in range(1, copies + 1):
            for c in convs:
                line = c if k == 1 else {**c, "id": f"{c['id']}#{k}"}
                o.write(json.dumps(line, ensure_ascii=False) + "\n")
    non_ascii = sum(1 for c in convs for m in c["messages"]
                    if isinstance(m, dict) and isinstance(m.get("content"), str) and not m["content"].isascii())
    print(f"{len(convs)} conversations, {turns} user turns distinct "
          f"({non_ascii} messages not ASCII); written {copies} time(s): {copies * turns} turns in {a.out}")


if __name__ == "__main__":
    main()
