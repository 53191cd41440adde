#!/usr/bin/env python3
"""Write crates/core/tests/conformance/derive-random.jsonl: random inputs of the two
derivations, answered by symfonic-core 9.12.0 itself
(`IntentClassifier().classify`, `detect_fabrication`), in the shape of
derive-cases.jsonl. The pools mix languages and scripts, NFD text (a base
letter and a combining accent), long drafts, empty and blank inputs, tool
calls whose names ground some claim verbs and not others, results and
arguments of every JSON type (so Python's str() of them is the grounding),
identifier keys of the domain and built in, and every finding kind.

    python3 -m venv /tmp/sym && /tmp/sym/bin/pip install symfonic-core==9.12.0
    /tmp/sym/bin/python scripts/symfonic_derive_cases.py   # from the repository root

The seed is fixed, so the file only changes when this script does; the
conformance test holds the port to every answer."""
import json
import random
import sys
import unicodedata

from symfonic.agent.domain import DomainTemplate
from symfonic.agent.middleware.fabrication import detect_fabrication
from symfonic.agent.triage.intent import IntentClassifier

assert sys.version_info[:2] == (3, 11), "CPython 3.11, as symfonic runs"
random.seed(21)

QUERIES = [
    "Why was I charged twice?", "Send me the invoice", "Restart the web service please",
    "¿Puedes enviar la gráfica?", "Envía el informe", "Schick mir die Rechnung", "Quel est mon solde ?",
    "cancelar la reserva", "what is the status of order 42?", "deploy and then tell me how it went",
    "please", "", "   ", "?", "list the flights to Paris", "Compare plan A and plan B",
    "Stop the job and delete the logs", "make a backup", "Who approved this?", "book a flight",
    "gra\u0301fica envi\u0301a", "ENVI\u0301A LA GRA\u0301FICA", "re-run the build", "kill -9 1234",
    "Explain why the deploy failed", "Update my address to Main St", "Hi there", "Merci!",
    "送信してください", "Отправь отчёт", "İstanbul flights?", "run_agent now", "vuelo a Madrid",
]
DRAFT_PARTS = [
    "I ran the report.", "I sent the email to the team.", "I spawned subagent X.", "I called the API.",
    "I checked the status.", "I queried the database.", "I retrieved the file.", "i pushed the fix",
    "I  triggered the pipeline", "I started task 9f2b1e47.", "task_id=9f2b1e47 is running",
    "PID: 4821", "request_id = abc-123_x.y", "order_id=ORD-77", "Booking_Ref: XJ4422",
    "reservation_id=r-0091", "3e4f5a6b-7c8d-9e0f-a1b2-c3d4e5f6a7b8", "0af7651916cd43dd8448eb211c80319c",
    "commit deadbeef42 landed", "see cafe1234 and 12345678", "service: billing-api",
    "The task runs every hour.", "Done.", "Your flight is booked.", "He ran home.",
    "Gráfica enviada.", "J'ai envoyé le rapport.", "I dispatched a courier.", "I delivered it.",
    "job_id: 00ff00ff", "instance: i-0abc123def", "trace_id=feedface", "I ran   abcdef012345",
    "ticket_id=T-1\nI created it", "I stopped the service as requested.", "", " ",
    "Ｉ ran it", "ıı I ran x", "I Ran The Job",
]
TOOLS = ["run_report", "send_email", "spawn_subagent", "call_api", "check_status", "query_db",
         "get_file", "git_push", "search_docs", "think", "hydrate_context", "", None, "EXEC_shell"]
VALUES = ["ok", "9f2b1e47", "3e4f5a6b-7c8d-9e0f-a1b2-c3d4e5f6a7b8", "ORD-77", "XJ4422", {"status": "done", "id": "deadbeef42"},
          {"b": 1, "a": [1, 2.5, None, True]}, [1, "abc-123_x.y"], 4821, 1e16, 0.1, True, None, "r-0091 done"]
KEYS = [[], ["Booking_Ref", "flight", "reservation_id"], ["order_id"], ["TASK_ID", "pid"]]
KEYWORDS = [{}, {"cancel_reservation": ["cancel", "cancelar"], "send_email": ["send", "envía", "gráfica"],
                 "restart_service": ["restart"], "search_direct_flight": ["flight", "vuelo"]},
            {"send_email": ["envi\u0301a"], "book": ["book a flight", ""], "empty": []}]


def call():
    c = {}
    name = random.choice(TOOLS)
    if name is not None:
        c[random.choice(["name", "tool", "tool_name"])] = name
    for k in random.sample(["result", "output", "response", "args", "input"], random.randint(0, 3)):
        c[k] = random.choice(VALUES)
    return c


def nfd_maybe(s):
    return unicodedata.normalize("NFD", s) if random.random() < 0.15 else s


with open("crates/core/tests/conformance/derive-random.jsonl", "w", encoding="utf-8") as out:
    for _ in range(2000):
        parts = random.sample(DRAFT_PARTS, random.randint(0, 4))
        if random.random() < 0.05:
            parts = parts * 40  # long drafts
        case = {
            "user_message": nfd_maybe(random.choice(QUERIES)),
            "draft": nfd_maybe(" ".join(parts)),
            "tool_calls": [call() for _ in range(random.choice([0, 0, 1, 2, 3]))],
            "identifier_keys": random.choice(KEYS),
            "tool_trigger_keywords": random.choice(KEYWORDS),
            "hydrated_context": random.choice(["", "", "order ORD-77 placed", "pid 4821 and 9f2b1e47"]),
            "intent_on": random.random() < 0.8,
        }
        domain = None
        if case["identifier_keys"] or case["tool_trigger_keywords"]:
            domain = DomainTemplate(name="d", identifier_keys=case["identifier_keys"],
                                    tool_trigger_keywords=case["tool_trigger_keywords"])
        verdict = IntentClassifier().classify(case["user_message"], domain) if case["intent_on"] else None
        findings = detect_fabrication(
            case["draft"], case["tool_calls"], hydrated_context=case["hydrated_context"],
            user_message=case["user_message"], identifier_keys=case["identifier_keys"],
            intent_verdict=verdict)
        case["expect"] = {
            "intent": None if verdict is None else {
                "label": verdict.label, "confidence": verdict.confidence,
                "matched_tool_keywords": verdict.matched_tool_keywords, "reasoning": verdict.reasoning,
                "action_score": verdict.action_score, "knowledge_score": verdict.knowledge_score},
            "findings": [f.to_event_payload() for f in findings],
        }
        out.write(json.dumps(case, ensure_ascii=False) + "\n")
