#!/usr/bin/env python3
"""The derivation benchmark's two halves (called by scripts/bench-replay.sh).

  bench_derive.py inputs TRANSCRIPTS OUT
      writes one `critic-gate derive` input line per turn of the
      transcripts (the turn's user message, its reply as the draft, the
      tool calls since that user message with their results, and the
      domain of datasets/transcripts.toml);
  bench_derive.py upstream INPUTS
      runs symfonic-core 9.12.0's own `IntentClassifier().classify` and
      `detect_fabrication` on every line, on one core, and prints the
      turns per second of the derivations alone (JSON reading left out).
"""
import json
import sys
import time

KEYS = ["order_id"]
KEYWORDS = {"get_order": ["order", "pedido", "Bestellung", "commande"]}


def inputs(transcripts, out):
    with open(transcripts, encoding="utf-8") as f, open(out, "w", encoding="utf-8") as o:
        for line in f:
            conv = json.loads(line)
            user, calls, results = "", [], {}
            for m in conv["messages"]:
                role = m["role"]
                if role == "user":
                    user, calls = m["content"], []
                elif role == "tool":
                    # The latest call of that id without a result (an id
                    # may be used again once answered, as critic-gate reads it).
                    for c in reversed(calls):
                        if c["id"] == m["tool_call_id"] and id(c) not in results:
                            results[id(c)] = m["content"]
                            break
                elif role == "assistant" and m.get("tool_calls"):
                    calls += m["tool_calls"]
                elif role == "assistant" and m.get("content"):
                    tcs = [{"name": c["function"]["name"], "args": json.loads(c["function"]["arguments"]),
                            "result": results.get(id(c))} for c in calls]
                    o.write(json.dumps({"user_message": user, "draft": m["content"], "tool_calls": tcs,
                                        "identifier_keys": KEYS, "tool_trigger_keywords": KEYWORDS}) + "\n")


def upstream(path):
    from symfonic.agent.domain import DomainTemplate
    from symfonic.agent.middleware.fabrication import detect_fabrication
    from symfonic.agent.triage.intent import IntentClassifier

    cases = [json.loads(l) for l in open(path, encoding="utf-8")]
    domain = DomainTemplate(name="shop", tool_trigger_keywords=KEYWORDS, identifier_keys=KEYS)
    classifier = IntentClassifier()
    start = time.perf_counter()
    findings = 0
    for c in cases:
        verdict = classifier.classify(c["user_message"], domain)
        findings += len(detect_fabrication(c["draft"], tool_calls_this_turn=c["tool_calls"],
                                           hydrated_context="", user_message=c["user_message"],
                                           identifier_keys=KEYS, intent_verdict=verdict))
    secs = time.perf_counter() - start
    print(f"{len(cases)} {secs:.3f} {findings}")


if __name__ == "__main__":
    {"inputs": lambda: inputs(sys.argv[2], sys.argv[3]), "upstream": lambda: upstream(sys.argv[2])}[sys.argv[1]]()
