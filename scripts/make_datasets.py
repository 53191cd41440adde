#!/usr/bin/env python3
"""Write the small committed datasets in datasets/ (run from the repo root).

Each file tells one part of the story; docs/datasets.md
table says which.
"""
import json

def critic(verdict="approve", tin=3000, tout=30, lat=2000.0, model="claude-opus", **extra):
    c = {"verdict": verdict, "reflection_latency_ms": lat, "reflection_tokens_in": tin,
         "reflection_tokens_out": tout, "model": model}
    c.update(extra)
    return c

def write(name, turns):
    with open(f"datasets/{name}", "w", encoding="utf-8") as f:
        for t in turns:
            f.write(json.dumps(t, ensure_ascii=False) + "\n")

# The seed story: 20 cold turns (no confidence, no activation log: 0.5).
# The legacy gate fires on all 20; the smart gate skips the 10 trivial acks.
seed = [
    ("Got it, thanks!", "en", {}, critic(tin=3000, tout=40, lat=2000.0)),
    ("Sounds good.", "en", {}, critic(tin=3000, tout=20, lat=1800.0)),
    ("Entendido, gracias.", "es", {}, critic(tin=3100, tout=30, lat=2100.0)),
    ("Alles klar, danke!", "de", {}, critic(tin=2900, tout=25, lat=1900.0)),
    ("D'accord, merci.", "fr", {}, critic(tin=3000, tout=35, lat=2000.0)),
    ("Perfeito, obrigado!", "pt", {}, critic(tin=3000, tout=30, lat=2000.0)),
    ("Great, will do.", "en", {}, critic("revise", tin=3200, tout=120, lat=2600.0,
        revised_draft="I can't do that yet: the order is locked until the refund clears.")),
    ("承知しました。", "ja", {}, critic(tin=3000, tout=30, lat=2000.0)),
    ("Grazie mille!", "it", {}, critic(tin=3000, tout=30, lat=2000.0)),
    ("Done. Q3 revenue was $4.2M.", "en", {}, critic("revise", tin=3500, tout=200, lat=3000.0,
        revised_draft="Done. I could not verify the Q3 revenue figure.")),
    ("ok", "en", {"intent_verdict": {"label": "action", "confidence": 0.81}}, critic(tin=3000, tout=20, lat=1500.0)),
    ("Sure, I'll update the order now.", "en", {"tool_calls_this_turn": [{"name": "update_order", "args": {"id": "A-1"}}]}, critic(tin=3300, tout=60, lat=2200.0)),
    ("Thanks!", "en", {"sensitive_hit": "pii"}, critic("refuse", tin=3100, tout=50, lat=2400.0,
        refusal_message="This conversation contains personal data; I can't confirm it here.")),
    ("Noted.", "en", {"fabrication_findings": [{"kind": "uuid", "span": "order id"}]}, critic(tin=3000, tout=25, lat=1900.0)),
    ("You're welcome!", "en", {}, critic(tin=3000, tout=20, lat=1800.0)),
    ("I went through the onboarding guide and the settings page; the simplest path is to re-run the sync from the admin panel and then refresh the dashboard once it completes.", "en", {}, critic(tin=4000, tout=80, lat=2800.0)),
    ("Understood.", "en", {"tool_calls_this_turn": [{"name": "search_docs", "args": {"q": "refunds"}}]}, critic(tin=3000, tout=20, lat=1700.0)),
    ("Perfect, thanks.", "en", {}, critic(tin=3000, tout=30, lat=2000.0)),
    ("Here is the summary you asked for.", "en", {}, critic(tin=3200, tout=40, lat=2100.0)),
    ("On it! I'll send the €20 refund today.", "en", {}, critic(tin=3000, tout=20, lat=1600.0)),
]
rows = []
for i, (draft, lang, extra, c) in enumerate(seed):
    t = {"run_id": f"seed-{i // 5 + 1}", "turn": i % 5, "scope": {"tenant": "acme", "channel": "web" if i % 2 else "slack"},
         "language": lang, "draft": draft}
    t.update(extra)
    t["critic"] = c
    rows.append(t)
write("seed.jsonl", rows)

# Acknowledgements in many languages: the built-in patterns know en, es, de,
# fr, pt; the others are missed savings.
multi = [
    ("en", "Thank you, that's perfect."), ("en", "okay!"), ("es", "¡Perfecto, gracias!"), ("es", "Claro, sin problema."),
    ("de", "Verstanden, danke."), ("de", "Erledigt."), ("fr", "Parfait, merci !"), ("fr", "C'est fait."),
    ("pt", "Obrigada, com certeza."), ("pt", "Feito!"), ("it", "Perfetto, grazie!"), ("it", "Va bene."),
    ("ja", "了解です。"), ("ja", "ありがとうございます。"), ("zh", "好的，谢谢！"), ("ko", "알겠습니다."),
    ("ru", "Спасибо, понял."), ("ar", "شكرا، تم."), ("nl", "Dank je wel!"), ("pl", "Dziękuję, jasne."),
    ("tr", "Tamam, teşekkürler."), ("sv", "Tack, det blir bra."),
    # More acks in six languages no built-in pattern knows, for `mine`
    # (at least five turns share a word in each).
    ("it", "Grazie!"), ("it", "Grazie mille."), ("it", "Va bene, grazie!"), ("it", "Grazie, perfetto."),
    ("ja", "了解しました。"), ("ja", "了解、ありがとうございます。"), ("ja", "はい、了解です。"), ("ja", "了解です！"),
    ("zh", "好的。"), ("zh", "好的，明白了。"), ("zh", "好的，收到。"), ("zh", "好的！"), ("zh", "谢谢！"),
    ("ru", "Спасибо!"), ("ru", "Понял, спасибо."), ("ru", "Хорошо, спасибо."), ("ru", "Спасибо большое."), ("ru", "Спасибо, хорошо."),
    ("ko", "감사합니다!"), ("ko", "네, 알겠습니다."), ("ko", "알겠습니다, 감사합니다."), ("ko", "좋습니다, 알겠습니다."), ("ko", "알겠습니다!"),
    ("ar", "شكرا!"), ("ar", "شكرا جزيلا."), ("ar", "حسنا، شكرا."), ("ar", "تم، شكرا."), ("ar", "شكرا لك."),
]
write("multilingual.jsonl", [
    {"run_id": f"ml-{lang}", "turn": i, "language": lang, "draft": d, "confidence": 0.5,
     "critic": critic(tin=2800, tout=20, lat=1500.0)}
    for i, (lang, d) in enumerate(multi)
])

# One or more turns per floor and per reason a draft is not a trivial ack,
# plus warm turns (the legacy gate skips, the smart gate may add a call).
floors = [
    {"draft": "Thanks!", "sensitive_hit": "pii", "note": "recorded sensitive hit"},
    {"draft": "Thanks!", "sensitive_hit": "", "note": "empty-string hit still fires (warning)"},
    {"draft": "Thanks!", "activation_log": {"activated_nodes": [{"name": "acct", "score": 0.9, "tags": ["pii"]}], "inference_paths": [["acct"]], "traversed_edges": [{"weight": 6.0}]}, "note": "hit detected from the log with the config's tags"},
    {"draft": "Got it.", "fabrication_findings": [{"kind": "uuid"}], "note": "fabrication"},
    {"draft": "Got it.", "tool_calls_this_turn": [{"name": "delete_record"}], "note": "mutating tool"},
    {"draft": "Got it.", "tool_calls_this_turn": [{"name": "search_docs"}], "note": "read-only tool: no floor"},
    {"draft": "Got it.", "tool_calls_this_turn": [{"function": {"name": "search_docs"}}], "note": "OpenAI-style call: mutating (warning)"},
    {"draft": "Got it.", "tool_calls_this_turn": [{"name": ""}], "note": "falsy name: mutating"},
    {"draft": "Got it.", "intent_verdict": {"label": "action"}, "note": "action intent"},
    {"draft": "Got it.", "intent_verdict": {"label": "ambiguous"}, "note": "ambiguous intent"},
    {"draft": "Got it.", "intent_verdict": {"label": "Action"}, "note": "case matters: no floor (unknown label warning)"},
    {"draft": "Got It", "note": "two capitalised words are claims"},
    {"draft": "great, decade", "note": "a hex-looking word is a claim"},
    {"draft": "ok ٣", "note": "Arabic-Indic digit is a claim"},
    {"draft": "", "note": "empty draft"},
    {"draft": "   ", "note": "whitespace only: not empty, matches no pattern"},
    {"draft": "thanks " + "y" * 170, "note": "too long (sole blocker)"},
    {"draft": "The weather service does not publish that information for free, so you would need to sign up for their premium plan to see it.", "note": "no ack pattern"},
    {"draft": "Got it, thanks!", "confidence": 0.9, "note": "warm ack: both skip"},
    {"draft": "Here you go.", "confidence": 0.9, "note": "warm non-ack: legacy skips, smart adds a call"},
    {"draft": "Here you go.", "confidence": 0.9, "intent_verdict": {"label": "action"}, "note": "warm action: smart adds a call"},
    {"draft": "Noted.", "confidence": 0.75, "tool_calls_this_turn": [{"name": "update_order"}], "note": "warm mutating: smart adds a call"},
    {"draft": "Thanks!", "activation_log": {"activated_nodes": [{"score": 0.9}, {"score": 0.9}], "inference_paths": [["a"], ["b"], ["c"]], "traversed_edges": [{"weight": 6.0}]}, "note": "confidence 0.96 from the log"},
]
out = []
for i, t in enumerate(floors):
    t = dict(t)
    note = t.pop("note")
    row = {"run_id": "floors", "turn": i, "language": "en"}
    row.update(t)
    row["label"] = note  # an unknown field: ignored, counted
    if "confidence" not in t:
        row["critic"] = critic(tin=3000, tout=30, lat=2000.0)
    out.append(row)
out.append(dict(out[0], label="duplicate (run_id, turn) of line 1 (warning)"))
write("floors.jsonl", out)

# Invalid lines, one of each kind, between valid ones.
invalid_lines = [
    '{"run_id":"ok-1","turn":0,"draft":"Got it, thanks!"}',
    '{"run_id":"bad","draft":"x","confidence":"high"}',
    '{"run_id":"bad","draft":"x","confidence":1.5}',
    '{"draft":"no run id"}',
    '{"run_id":"bad","draft":42}',
    '["not", "an", "object"]',
    '{"run_id":"bad","draft":"x","intent_verdict":"action"}',
    '{"run_id":"bad","draft":"x","intent_verdict":{"label":7}}',
    '{"run_id":"bad","draft":"x","tool_calls_this_turn":{"name":"x"}}',
    '{"run_id":"bad","draft":"x","critic":{"verdict":"maybe"}}',
    '{"run_id":"bad","draft":"x","critic":{"verdict":"approve","reflection_tokens_in":-5}}',
    '{"run_id":"bad","draft":"x","confidence":NaN}',
    '{"run_id":"bad","draft":"x","confidence":1e999}',
    '{"run_id":"bad","draft":"x","activation_log":{"activated_nodes":{"a":1}}}',
    '{"run_id":"bad","draft":"x","activation_log":{"activated_nodes":[{"score":"high"}]}}',
    '{"run_id":"bad","draft":"x"',
    '',
    '{"run_id":"ok-2","turn":1,"draft":"Sounds good."}',
]
with open("datasets/invalid.jsonl", "wb") as f:
    for l in invalid_lines:
        f.write(l.encode() + b"\n")
    f.write(b'{"run_id":"bad","draft":"\xff\xfe not utf-8"}\n')
    f.write(b'{"run_id":"ok-3","turn":2,"draft":"Done."}\n')

# Costs you can check by hand (see tests/cli/costs.rs for the arithmetic).
costs = [
    {"run_id": "c", "turn": 1, "draft": "Thanks!", "critic": critic(tin=1000, tout=100, lat=1000.0)},
    {"run_id": "c", "turn": 2, "draft": "ok", "critic": critic(tin=2000, tout=200, lat=3000.0, model="claude-sonnet")},
    {"run_id": "c", "turn": 3, "draft": "Sounds good.", "critic": {"verdict": "revise", "reflection_latency_ms": 2000.0,
        "reflection_tokens_in": 1000, "reflection_tokens_out": 0, "revised_draft": "Before we go on: the booking is not confirmed."}},
    {"run_id": "c", "turn": 4, "draft": "Got it.", "critic": {"verdict": "approve", "reflection_latency_ms": 500.0}},
    {"run_id": "c", "turn": 5, "draft": "Here is the plan we discussed.", "critic": critic(tin=4000, tout=400, lat=4000.0)},
    {"run_id": "c", "turn": 6, "draft": "Here is the plan we discussed.", "confidence": 0.9},
    {"run_id": "c", "turn": 7, "draft": "Thanks!", "confidence": 0.9},
    {"run_id": "c", "turn": 8, "draft": "ok"},
]
write("costs.jsonl", costs)

# symfonic's fail-open events (shared/spec/traffic-format.md, "Whether a
# critic ran"): `evaluate` returns `approve` with 0 tokens in and out on
# every turn its gate skipped. 10 warm turns production skipped, logged
# with that event, and 10 cold turns the critic really reviewed (one
# revised). Only the 10 reviewed turns are labels.
def not_run(**extra):
    c = {"verdict": "approve", "reflection_latency_ms": 0.004, "reflection_tokens_in": 0,
         "reflection_tokens_out": 0, "model": "claude-opus", "confidence_before": 0.8}
    c.update(extra)
    return c

acks = ["Got it, thanks!", "Sounds good.", "Thanks!", "Perfect, thanks.", "Understood.",
        "Noted.", "Will do.", "Okay!", "Sure thing.", "Great, thanks."]
fail_open = []
for i, d in enumerate(acks):
    fail_open.append({"run_id": f"warm-{i}", "turn": 0, "language": "en", "draft": d,
                      "confidence": 0.8, "critic": not_run()})
for i, d in enumerate(acks):
    c = critic(tin=3000 + 10 * i, tout=30, lat=1800.0 + 50 * i)
    if i == 6:
        c = critic("revise", tin=3200, tout=110, lat=2500.0,
                   revised_draft="I can't do that: the refund needs a manager's approval first.")
    fail_open.append({"run_id": f"cold-{i}", "turn": 0, "language": "en", "draft": d, "critic": c})
write("fail-open.jsonl", fail_open)

# Traffic recorded under a legacy threshold of 0.7 (datasets/gate-0.7.toml):
# the critic ran where confidence < 0.7 or a pii tag was hit; elsewhere the
# recorder logged symfonic's no-review event, as `ran: false` or as 0
# tokens. Replayed with gate.toml (threshold 0.6), the turns with
# confidence in [0.6, 0.7) disagree with production (mismatches.csv).
# Two skill-approval calls (`run_id` "skill-gate") and one turn without an
# event (production unknown) complete it.
answers = ["Here is the summary of the onboarding guide you asked for.",
           "The export finished; you can download it from the reports page.",
           "I looked through the settings and the sync is already enabled for your workspace."]
recorded = []
confidences = [0.3, 0.45, 0.5, 0.55, 0.6, 0.61, 0.64, 0.65, 0.68, 0.69, 0.7, 0.72, 0.75, 0.8, 0.85, 0.9, 0.95]
for i, conf in enumerate(confidences):
    draft = acks[i % len(acks)] if i % 2 == 0 else answers[i % len(answers)]
    t = {"run_id": f"rec-{i // 4}", "turn": i % 4, "scope": {"tenant": "globex"}, "language": "en",
         "draft": draft, "confidence": conf}
    if conf < 0.7:
        t["critic"] = critic(tin=2600 + 20 * i, tout=25 + i, lat=1500.0 + 40 * i)
        if i == 3:
            t["critic"]["ran"] = True
    else:
        t["critic"] = {"ran": False, "verdict": "approve"} if i % 3 == 0 else not_run(confidence_before=conf)
    recorded.append(t)
recorded.append({"run_id": "rec-pii", "turn": 0, "language": "en", "draft": "Thanks!", "confidence": 0.9,
                 "sensitive_hit": "pii", "critic": critic(tin=2900, tout=40, lat=1900.0)})
recorded.append({"run_id": "rec-unknown", "turn": 0, "language": "en", "draft": "Thanks!", "confidence": 0.65})
for i, skill in enumerate(["Skill 'refund-small-orders': refunds under 20 EUR without review.",
                           "Skill 'export-csv': exports the current report as CSV."]):
    recorded.append({"run_id": "skill-gate", "turn": i, "draft": skill, "activation_log": {},
                     "tool_calls_this_turn": [], "critic": critic(tin=5200, tout=60, lat=9000.0 + 500 * i)})
write("threshold-0.7.jsonl", recorded)

# A first reading of traffic recorded without the critic's verdicts (a
# trace export with capture on, the critic's spans not kept): cold turns,
# no critic event anywhere, so no skip has a label. Several acks carry
# news ("Sure, but ..."): risky skips, which no label can show here. One
# reply is empty: the gates fire on it, but symfonic calls no critic on an
# empty reply.
unlabelled = []
drafts = ["Got it, thanks!", "Sure, but refunds are closed on Sundays.",
          "Okay, I won't cancel it, but the order ships tomorrow from the Lyon warehouse.",
          "Thanks, thanks so much, we will not refund you, thanks.", "Noted.",
          "Here is the summary of the onboarding guide you asked for.", "",
          "Understood, although the account stays locked until the security review ends.",
          "Perfect, thanks.", "The export finished; you can download it from the reports page."]
for i, d in enumerate(drafts):
    unlabelled.append({"run_id": f"trace-{i // 3}", "turn": i % 3, "scope": {"tenant": "initech"},
                       "language": "en", "draft": d})
write("unlabelled.jsonl", unlabelled)

# Two weeks after the switch (`reports/monitor`, with the plan of
# `reports/plan-watched`): production runs the smart gate and its critic
# reviews every turn an exploration gate sent it; here, as recorded under
# the legacy gate, every turn has production's verdict, so the plan's
# drawn skips are labelled by production's own critic. Each day 40
# conversations of four turns: English and German acks (the smart gate
# skips them), and a reply it fires on; one ack in 120 revised.
watched = []
acks = {"en": ["Got it, thanks!", "Sounds good.", "Perfect, thanks."],
        "de": ["Alles klar, danke!", "Super, danke."]}
n = 0
for day in range(14):
    for c in range(40):
        lang = "de" if c % 5 == 0 else "en"
        for turn in range(4):
            n += 1
            if turn == 3:
                draft, verdict = "Your order 4812 shipped on March 3 via DHL; it arrives in two days.", "approve"
            else:
                draft = acks[lang][(c + turn) % len(acks[lang])]
                verdict = "revise" if n % 120 == 7 else "approve"
            watched.append({"run_id": f"w{day:02d}-{c:02d}", "turn": turn, "language": lang,
                            "ts": f"2026-11-{day + 1:02d}T{9 + c // 5:02d}:{(c * 7) % 60:02d}:00Z",
                            "draft": draft, "critic": critic(verdict)})
write("watched.jsonl", watched)
