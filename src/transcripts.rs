//! `synth --shape openai-chat`: synthetic OpenAI-style chat transcripts,
//! one conversation a line, made from [`crate::synth`]'s runs (so the mix
//! of languages, replies, tool calls and critic verdicts is the one its
//! module doc describes), deterministic for a given seed.
//!
//! Each turn of a run becomes: a user message in the run's language (a
//! question, a request or a short remark, by the turn's recorded intent),
//! for a turn with tool calls an assistant message calling them and the
//! tool messages answering, and the assistant's reply (the draft), with
//! what production's critic did as the `critic` extension where it ran.
//! What synth records and a transcript cannot hold (confidence, the
//! activation log, the sensitive hit, the intent verdict itself) is left
//! out: importing derives or reports it as a real transcript would.

use std::io::Write;

use serde_json::{json, Value};

use crate::synth::{Mix, Rng, Synth};

/// A question, a request and a remark per language (English for the
/// rest); `{n}` is an order number.
fn user_texts(lang: &str) -> [&'static str; 3] {
    match lang {
        "es" => [
            "¿Cuál es el estado de mi pedido {n}?",
            "Por favor, cambia la dirección del pedido {n}.",
            "vale",
        ],
        "de" => [
            "Wie ist der Status meiner Bestellung {n}?",
            "Bitte ändere die Lieferadresse von Bestellung {n}.",
            "hm ok",
        ],
        "fr" => [
            "Quel est le statut de ma commande {n} ?",
            "Merci de modifier l'adresse de la commande {n}.",
            "d'accord",
        ],
        "pt" => [
            "Qual é o status do meu pedido {n}?",
            "Por favor, altere o endereço do pedido {n}.",
            "beleza",
        ],
        "ja" => [
            "注文{n}の状況を教えてください。",
            "注文{n}の住所を変更してください。",
            "はい",
        ],
        "it" => [
            "Qual è lo stato del mio ordine {n}?",
            "Per favore, cambia l'indirizzo dell'ordine {n}.",
            "va bene",
        ],
        _ => [
            "What is the status of my order {n}?",
            "Please update the shipping address on order {n}.",
            "ok so",
        ],
    }
}

/// The user message of a synth turn.
fn user_message(r: &mut Rng, lang: &str, intent: Option<&str>) -> String {
    let [question, request, remark] = user_texts(lang);
    let text = match intent {
        Some("knowledge") => question,
        Some("action") => request,
        _ if r.chance(0.5) => question,
        _ => remark,
    };
    text.replace("{n}", &format!("ORD-{}", 1000 + r.below(9000)))
}

/// What a tool returns, as its message's content.
fn tool_result(r: &mut Rng, name: &str) -> String {
    match name {
        "get_order" => {
            json!({"order_id": format!("ORD-{}", 1000 + r.below(9000)), "status": "shipped"})
                .to_string()
        }
        "update_order" => json!({"ok": true}).to_string(),
        "send_email" => {
            json!({"sent": true, "message_id": format!("m-{:06x}", r.below(1 << 24))}).to_string()
        }
        _ => "Found 3 articles: Returns, Shipping times, Order status.".to_string(),
    }
}

/// One conversation's messages from a run's synth turns.
fn conversation(r: &mut Rng, turns: &[Value]) -> Value {
    let first = &turns[0];
    let lang = first["language"].as_str().unwrap_or("en");
    let mut messages =
        vec![json!({"role": "system", "content": "You are the shop's support assistant."})];
    for (k, t) in turns.iter().enumerate() {
        let intent = t["intent_verdict"]["label"].as_str();
        messages.push(json!({"role": "user", "content": user_message(r, lang, intent)}));
        let calls = t["tool_calls_this_turn"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if !calls.is_empty() {
            let ids: Vec<String> = (0..calls.len()).map(|i| format!("call_{k}_{i}")).collect();
            let tool_calls: Vec<Value> = calls
                .iter()
                .zip(&ids)
                .map(|(c, id)| json!({"id": id, "type": "function", "function": {"name": c["name"], "arguments": c["args"].to_string()}}))
                .collect();
            messages.push(json!({"role": "assistant", "content": null, "tool_calls": tool_calls}));
            for (c, id) in calls.iter().zip(&ids) {
                let result = tool_result(r, c["name"].as_str().unwrap_or(""));
                messages.push(json!({"role": "tool", "tool_call_id": id, "content": result}));
            }
        }
        let mut reply = json!({"role": "assistant", "content": t["draft"]});
        if let Some(c) = t.get("critic") {
            reply["critic"] = c.clone();
        }
        messages.push(reply);
    }
    json!({"run_id": first["run_id"], "ts": first["ts"], "scope": first["scope"], "messages": messages})
}

/// Write `turns` turns of `mix` to `out` as conversations (synth's runs;
/// the last may be cut short); returns the conversations written.
pub fn write(turns: u64, seed: u64, mix: Mix, out: &mut dyn Write) -> std::io::Result<u64> {
    let mut s = Synth::with_mix(seed, mix);
    // A second stream for the texts synth does not write, so the runs are
    // synth's own for the seed.
    let mut r = Rng::new(seed.wrapping_add(0x5eed));
    let mut written = 0;
    let mut conversations = 0;
    let mut run: Vec<Value> = Vec::new();
    while written < turns || !run.is_empty() {
        let t = (written < turns).then(|| s.next_turn());
        let ends = match (&t, run.first()) {
            (Some(t), Some(f)) => t["run_id"] != f["run_id"],
            (None, _) => true,
            (Some(_), None) => false,
        };
        if ends && !run.is_empty() {
            writeln!(out, "{}", conversation(&mut r, &run))?;
            conversations += 1;
            run.clear();
        }
        if let Some(t) = t {
            run.push(t);
            written += 1;
        }
    }
    Ok(conversations)
}
