#!/usr/bin/env python3
"""Write crates/core/tests/conformance/reflection-cases.jsonl: random critic outputs with
what symfonic-core 9.12.0's `MetacognitiveMiddleware._parse_reflection_output`
makes of them ([verdict, text, matched_preferences]). The outputs mix valid
JSON objects of every verdict spelling, code fences, prose around JSON,
other JSON types, duplicate keys, numbers JSON itself has no place for
(NaN, Infinity, 1e400), lone surrogate escapes, and truncated text. A
non-finite number in the text or the list is written as null (JSON has
none), a lone surrogate in a string as U+FFFD. Run from the repository root with the package installed (see
scripts/symfonic_derive_cases.py); the seed is fixed."""
import json
import math
import random
import sys

from symfonic.agent.middleware.metacognitive import MetacognitiveMiddleware

assert sys.version_info[:2] == (3, 11), "CPython 3.11, as symfonic runs"
random.seed(23)
VERDICTS = ['"approve"', '"revise"', '"refuse"', '"REVISE"', '"ok"', '1', 'null', 'NaN', '"re\\ud800"', None]
TEXTS = ['"Fixed draft."', '""', '42', 'null', 'Infinity', '1e400', '["a"]', '"\\ud83d"', '{"x": 1}', None]
MATCHED = ['["tone", "brevity"]', '[]', '"tone"', 'null', '[1, NaN]', '{"a": 1}', None]


def body():
    parts = []
    v = random.choice(VERDICTS)
    if v is not None:
        parts.append(f'"verdict": {v}')
    for key in ("revised_draft", "refusal_message"):
        t = random.choice(TEXTS)
        if t is not None:
            parts.append(f'"{key}": {t}')
    m = random.choice(MATCHED)
    if m is not None:
        parts.append(f'"matched_preferences": {m}')
    if random.random() < 0.1:
        parts.append('"verdict": "refuse"')
    random.shuffle(parts)
    return "{" + ", ".join(parts) + "}"


def raw():
    b = body()
    r = random.random()
    if r < 0.15:
        b = "```json\n" + b + "\n```"
    elif r < 0.22:
        b = "```\n" + b + "\n  ```  \n"
    elif r < 0.3:
        b = "Here is my verdict: " + b
    elif r < 0.36:
        b = b[: random.randint(0, len(b))]
    elif r < 0.42:
        b = random.choice(['[{"verdict": "revise"}]', '"revise"', "3", "", "   ", "null", "```", "``` ```"])
    if random.random() < 0.2:
        b = random.choice([" \n\t", "\x1c", "\u3000"]) + b + random.choice(["", "\n", "\x1f "])
    return b


def clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, str):
        # A lone surrogate is no character of a JSON reader's string.
        return "".join("\ufffd" if 0xD800 <= ord(c) < 0xE000 else c for c in v)
    if isinstance(v, list):
        return [clean(x) for x in v]
    if isinstance(v, dict):
        return {clean(k): clean(x) for k, x in v.items()}
    return v


with open("crates/core/tests/conformance/reflection-cases.jsonl", "w", encoding="utf-8") as out:
    for _ in range(2000):
        r = raw()
        verdict, text, matched = MetacognitiveMiddleware._parse_reflection_output(r)
        case = {"raw": r, "expect": [verdict, clean(text), clean(matched)]}
        out.write(json.dumps(case, ensure_ascii=True) + "\n")
