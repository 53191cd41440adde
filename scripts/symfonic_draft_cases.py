#!/usr/bin/env python3
"""Write crates/core/tests/conformance/draft-cases.jsonl: random model completions with
the draft symfonic-core 9.12.0's engine hands its critic
(`agent/engine.py`: `_parse_and_strip_extraction`, `_strip_citation_tags`,
and the activation footer removed per `activation_log_mode`, as the run
loop does). Completions mix every extraction strategy (tagged blocks, a
loose GRAPH_OPERATIONS, a trailing JSON fence, a bare trailing object, with
and without operations), citation tags in any case (also the Kelvin sign
and long s that CPython folds), footers in Spanish and English, short and
long bodies, Unicode white space, and runs with and without tool calls.
Run from the repository root with the package installed (see
scripts/symfonic_derive_cases.py); the seed is fixed."""
import json
import random
import sys

from symfonic.agent.engine import (
    _parse_and_strip_extraction,
    _response_needs_activation_footer,
    _strip_activation_footer,
    _strip_citation_tags,
)

assert sys.version_info[:2] == (3, 11), "CPython 3.11, as symfonic runs"
random.seed(21)
WS = [" ", "\n", "\t", "\u00a0", "\u3000", "\x1c", "\u2028", "", "\r\n", "\n\n"]
WORDS = ["Done", "I saved the file", "Hecho", "Got it, thanks!", "ok", "Voilà",
         "Der Auftrag läuft", "完了しました", "see {braces}", "a } b {", "x=1"]
TAGS = ["semantic", "EPISODIC", "Procedural", "working", "prospective",
        "\u017femantic", "wor\u212aing", "memory", "semantic "]
OPS = ['{"ops": [{"type": "add"}]}', '{"operations": [1]}', '{"type": "node"}',
       '{"ops": []}', '{"ops": NaN}', '{"a": 1}', '{"ops": 0}', '{"ops": "x"}',
       '{"ops": [1], "ops": []}', '[1, 2]', '{"ops": [1]', '{"type": 1e400}']


def ws():
    return random.choice(WS)


def body():
    parts = []
    for _ in range(random.randint(0, 4)):
        parts.append(random.choice(WORDS))
        if random.random() < 0.3:
            parts.append(ws() + "[" + random.choice(TAGS) + "]")
        parts.append(random.choice([". ", "\n", " ", ws()]))
    if random.random() < 0.15:
        parts.append("word " * random.randint(60, 110))
    return "".join(parts)


def extraction():
    r = random.random()
    ops = random.choice(OPS)
    if r < 0.2:
        tag = random.choice(["MEMORY_EXTRACT", "GRAPH_OPERATIONS"])
        close = random.choice(["MEMORY_EXTRACT", "GRAPH_OPERATIONS"])
        return f"{ws()}<{tag}>{ws()}{ops}{ws()}</{close}>{ws()}"
    if r < 0.35:
        lead = random.choice(["<GRAPH_OPERATIONS>", "GRAPH_OPERATIONS"])
        fence = random.choice(["", "```json\n", "```"])
        return f"{ws()}{lead}{ws()}{fence}{ops}"
    if r < 0.5:
        return f"{ws()}```{random.choice(['json', ''])}{ws()}{ops}{ws()}```{ws()}"
    if r < 0.7:
        return f"{ws()}{ops}{ws()}"
    return ""


def footer():
    if random.random() < 0.5:
        return ""
    head = random.choice(["Nodos Activados", "Activated Nodes", "ACTIVATED NODES", "Nodes"])
    dashes = "-" * random.randint(2, 5)
    lines = "".join(f"\n- node {i}" for i in range(random.randint(0, 3)))
    return f"{random.choice(['', chr(10), chr(10) * 2])}{dashes}{ws()}\n{head}: a, b{lines}{ws()}"


def clean(raw, mode, tools):
    fr, _ = _parse_and_strip_extraction(raw)
    fr = _strip_citation_tags(fr)
    messages = [{"tool_calls": [{"name": "t"}]}] if tools else []
    if mode == "never" and fr or (
        mode == "complex" and fr and not _response_needs_activation_footer(fr, messages)
    ):
        fr = _strip_activation_footer(fr)
    return fr


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "crates/core/tests/conformance/draft-cases.jsonl"
    with open(out, "w", encoding="utf-8") as f:
        for _ in range(3000):
            pieces = [body(), footer(), extraction()]
            if random.random() < 0.3:
                pieces[1], pieces[2] = pieces[2], pieces[1]
            raw = "".join(pieces)
            mode = random.choice(["always", "complex", "never"])
            tools = random.random() < 0.3
            case = {"completion": raw, "activation_log_mode": mode,
                    "has_tool_calls": tools, "expect": clean(raw, mode, tools)}
            f.write(json.dumps(case, ensure_ascii=False) + "\n")


main()
