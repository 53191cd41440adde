#!/usr/bin/env python3
"""Write crates/core/tests/conformance/derive-hard.jsonl: derive cases of
the kinds real model output and real exporters produce and the random set
does not, answered by symfonic-core 9.12.0 itself:

- long drafts (100 KB to 1.5 MB) full of curly quotes, emoji, em-dashes and
  other non-ASCII text, with claims, hex words and key=value pairs placed
  anywhere (at the end, past a million steps of a backtracking search);
  a draft is stored as {"head", "unit", "times", "tail"} and the test
  builds head + unit * times + tail, as this script does;
- tool results holding floats, half of them ties (a float exactly between
  two shortest decimals, where Python's repr rounds half to even), with a
  draft naming each as Python writes it;
- tool values JSON writes outside its grammar or range, which Python's
  json.loads reads (1e400 as inf, NaN, Infinity, -Infinity): each line is
  written with the literal as it stands, and answered from json.loads of
  that very line;
- lines with a repeated key (json.loads keeps the last);
- short drafts of the characters where matching the patterns by hand
  could part from CPython's re (non-ASCII word characters and spaces
  beside hex words, keys and claims; the letters IGNORECASE folds).

    python3 -m venv /tmp/sym && /tmp/sym/bin/pip install symfonic-core==9.12.0
    /tmp/sym/bin/python scripts/symfonic_derive_hard_cases.py   # from the repository root

The seed is fixed, so the file only changes when this script does."""
import json
import random
import sys

from symfonic.agent.domain import DomainTemplate
from symfonic.agent.middleware.fabrication import detect_fabrication
from symfonic.agent.triage.intent import IntentClassifier

assert sys.version_info[:2] == (3, 11), "CPython 3.11, as symfonic runs"
random.seed(32)

NON_ASCII = ["\u2019", "\u201c", "\u201d", "\u2014", "\u2013", "\u2026", "\u2022", "\u2705", "\u26a0\ufe0f",
             "\U0001f600", "\U0001f680", "\u00e9", "\u00fc", "\u4e2d\u6587", "\u0394", "\u00a0", "\u2028",
             "\u0661\u0662", "\uff11", "\u00b2"]
PLAIN = ["Here", "is", "the", "summary", "I", "looked", "at", "it,", "and", "fine.", "- item", "**bold**",
         "job", "task", "ran", "sent", "id", ":", "=", "the build", "\n", "  "]
CLAIMS = ["I ran the job abcdef12", "task_id=zz9 done", "I sent it", "order_id: ORD-77",
          "3e4f5a6b-7c8d-9e0f-a1b2-c3d4e5f6a7b8", "I checked cafe1234", "job_id=deadbeef",
          "I\u2009ran it", "I\u00a0sent x", "pid=4821", "I started task 9f2b1e47.", "request_id = r-1.a"]
TOOLS = [{"name": "run_job", "result": "abcdef12 done"}, {"name": "send_email", "result": "ok"},
         {"name": "get_order", "result": {"id": "ORD-77"}}, {"name": "search_docs"}]
OUT = "crates/core/tests/conformance/derive-hard.jsonl"


def words(n):
    out = []
    for _ in range(n):
        r = random.random()
        out.append(random.choice(NON_ASCII) if r < 0.3 else random.choice(PLAIN))
    return " ".join(out)


def answer(case):
    """What symfonic-core computes for a case as json.loads reads it."""
    domain = None
    if case["identifier_keys"] or case["tool_trigger_keywords"]:
        domain = DomainTemplate(name="d", identifier_keys=case["identifier_keys"],
                                tool_trigger_keywords=case["tool_trigger_keywords"])
    verdict = IntentClassifier().classify(case["user_message"], domain) if case["intent_on"] else None
    findings = detect_fabrication(
        case["draft"], case["tool_calls"], hydrated_context=case["hydrated_context"],
        user_message=case["user_message"], identifier_keys=case["identifier_keys"],
        intent_verdict=verdict)
    return {
        "intent": None if verdict is None else {
            "label": verdict.label, "confidence": verdict.confidence,
            "matched_tool_keywords": verdict.matched_tool_keywords, "reasoning": verdict.reasoning,
            "action_score": verdict.action_score, "knowledge_score": verdict.knowledge_score},
        "findings": [f.to_event_payload() for f in findings],
    }


def base(draft, calls, keys=()):
    return {"user_message": random.choice(["Run the job", "What is the status?", "¿Qué pasó?", ""]),
            "draft": draft, "tool_calls": calls, "identifier_keys": list(keys),
            "tool_trigger_keywords": {}, "hydrated_context": "", "intent_on": True}


lines = []

# Long drafts: the repeated unit mixes non-ASCII characters into ordinary
# prose; the claims sit in the head, the unit or the tail.
SIZES = [2_000, 6_000, 20_000, 60_000]
for i in range(16):
    unit = words(random.randint(8, 30)) + " "
    times = random.choice(SIZES) if i >= 4 else [10_000, 20_000, 12_000, 9_000][i]
    head = random.choice(["\u26a0\ufe0f ", "", "\u201cOK\u201d \u2014 ", "I ran it. "])
    tail = " " + " ".join(random.sample(CLAIMS, random.randint(1, 4)))
    if i % 4 == 1:
        unit += random.choice(CLAIMS) + " "
    if i == 0:  # the issue's own example
        head = "\u26a0\ufe0f "
        unit = "Here\u2019s the summary \u2705 \u2014 I looked at it, and I\u2019d say it\u2019s fine. "
        times = 20_000
        tail = " Then I ran the job abcdef12 and task_id=zz9 done."
    calls = [] if i == 0 else random.sample(TOOLS, random.randint(0, 2))
    case = base(head + unit * times + tail, calls, random.choice([[], ["order_id"]]))
    case["user_message"] = "x" if i == 0 else case["user_message"]
    expect = answer(case)
    case["draft"] = {"head": head, "unit": unit, "times": times, "tail": tail}
    case["expect"] = expect
    lines.append(json.dumps(case, ensure_ascii=False))


def tie_float():
    """A float whose shortest repr is a tie half the time."""
    if random.random() < 0.5:
        n = random.randrange(2**49, 2**53)
        return n / 2 ** random.randint(1, 4) * 10.0 ** random.randint(-3, 3)
    return random.uniform(-1e6, 1e6) * 10.0 ** random.randint(-20, 20)


# Floats in tool results: each named in the draft as Python writes it, so
# every one is grounded exactly when the port writes str() as Python does.
for i in range(400):
    xs = [tie_float() for _ in range(random.randint(1, 5))]
    result = random.choice([xs, {"values": xs}, xs[0]])
    draft = " ".join(f"order_id={x!r}" for x in xs) + random.choice(["", " and order_id=1.25"])
    case = base(draft, [{"name": "get_values", "result": result}], ["order_id"])
    case["expect"] = answer(case)
    lines.append(json.dumps(case, ensure_ascii=False))

# Literals outside JSON's range or grammar, as Python's json.loads reads
# them: the line keeps the literal as written.
LITERALS = ["1e400", "-1e400", "NaN", "Infinity", "-Infinity", "1E+999"]
for lit in LITERALS:
    for shape in ['{"name": "get", "result": %s}', '{"name": "get", "result": [1, %s, "x"]}',
                  '{"name": "get", "args": {"n": %s}, "output": "9f2b1e47"}']:
        for draft in ["order_id=inf done", "order_id=nan done", "I ran the job 9f2b1e47",
                      "order_id=-inf", "\u2705 order_id=inf"]:
            call = shape % lit
            line = ('{"user_message": "go", "draft": %s, "tool_calls": [%s], "identifier_keys": ["order_id"], '
                    '"tool_trigger_keywords": {}, "hydrated_context": "", "intent_on": true}'
                    % (json.dumps(draft, ensure_ascii=False), call))
            case = json.loads(line)
            line = line[:-1] + ', "expect": ' + json.dumps(answer(case), ensure_ascii=False) + "}"
            lines.append(line)

# A repeated key: json.loads keeps the last value.
for first, last in [("I ran it", "Done."), ("Done.", "I sent abcdef12")]:
    line = ('{"user_message": "go", "draft": %s, "tool_calls": [], "identifier_keys": [], '
            '"tool_trigger_keywords": {}, "hydrated_context": "", "intent_on": true, "draft": %s}'
            % (json.dumps(first), json.dumps(last)))
    case = json.loads(line)
    lines.append(line[:-1] + ', "expect": ' + json.dumps(answer(case), ensure_ascii=False) + "}")

# Short drafts of the characters where matching the patterns by hand
# could part from CPython's re: non-ASCII word characters (letters, digits
# of other scripts, a combining accent is not one) next to hex words, keys
# and claims; CPython's white space beyond ASCII (U+001C..U+001F, NBSP,
# U+2028, U+3000) in claims and around `:` and `=`; and the letters
# IGNORECASE folds onto ASCII (dotless i, dotted capital I, long s, the
# Kelvin sign) in `I <verb>`. Drawn after the sections above, so their
# lines stay as they were.
EDGE = ["I ", "i\t", "\u0131 ", "\u0130\u3000", "I\u00a0\u017fent", "I \u212achecked", "I\x1csent", "I ran",
        "I sent", "I checked", "I pushed", "chec\u212aed", "\u00e9", "\u00df", "\u0663", "e\u0301", "\u200d",
        "\u2019", "\u201c", "\u2014", "\u2705", "\U0001f600", "\u2028", "\u3000", "\u00a0", "\x1f", " ", ".",
        "-", "/", "_", ":", "=", " = ", "task_id", "order_id", "job_id", "pid", "deadbeef", "cafe1234", "abcdef",
        "0123456789abcdef", "3e4f5a6b-7c8d-9e0f-a1b2-c3d4e5f6a7b8", "3e4f5a6b7c8d9e0fa1b2c3d4e5f6a7b8",
        "zz9", "r-1.a", "ORD-77", "x" * 33, "v" * 130, "task_id=", "order_id: ", "job_id\u00a0=\u3000", "pid=",
        "\u00e9job_id=", "request_id =\u2028", "trace_id:", "ticket_id=\u00e9", "run_id=ab.\u00e9", "span_id=ab./"]
for i in range(1000):
    draft = "".join(random.choice(EDGE) for _ in range(random.randint(3, 30)))
    case = base(draft, random.sample(TOOLS, random.randint(0, 2)), random.choice([[], ["order_id"], ["Job_Id"]]))
    case["expect"] = answer(case)
    lines.append(json.dumps(case, ensure_ascii=False))

with open(OUT, "w", encoding="utf-8") as out:
    for line in lines:
        out.write(line + "\n")
print(f"{len(lines)} cases written to {OUT}", file=sys.stderr)
