//! Gate evaluation throughput on a realistic mix, smart gate against the
//! legacy gate in the same run.
//!
//! The mix (repeated to 10,000 turns): short acks in English, Spanish,
//! German, French, Portuguese and Japanese; long drafts with numbers and
//! names; tool calls (read-only and mutating); action intents; warm and
//! cold confidence. Parsing is done once up front: this measures the gate.
//! Criterion prints elements/s = evaluations per second on ONE core (the
//! benchmark is single-threaded).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use critic_gate_core::gate::Gate;
use critic_gate_core::FrameworkConfig;
use critic_gate_core::Turn;
use std::hint::black_box;

fn mix() -> Vec<String> {
    let acks = [
        "Got it, thanks!",
        "ok",
        "Sounds good.",
        "Thank you so much for your patience.",
        "Entendido, gracias.",
        "Alles klar, danke!",
        "D'accord, merci.",
        "Perfeito, obrigado!",
        "承知しました。",
        "Noted; on it.",
        "great, will do",
        "You're welcome!",
        "sure thing",
        "Vale, de acuerdo.",
        "In Ordnung",
    ];
    let long = [
        "Your order 48213 shipped on March 3 via DHL Express; the tracking number is 1Z999AA10123456784 and it should arrive within 2 business days.",
        "Q3 revenue was $4.2M, up 12% from Q2. The largest contributor was the Enterprise tier, where Acme Corp renewed for another 24 months at the same price point as last year.",
        "I looked through the documentation for the billing API and there are three ways to do this: the first uses webhooks, the second polls the invoices endpoint, and the third batches exports nightly. Each has tradeoffs around latency and cost that depend on your volume.",
        "Sarah Connor from the Berlin office asked whether the migration can start on Monday; the database snapshot is about 340 GB and the copy takes roughly 6 hours.",
    ];
    let mut out = Vec::new();
    for i in 0..10_000usize {
        let draft = if i % 3 == 0 {
            long[i % long.len()]
        } else {
            acks[i % acks.len()]
        };
        let tools = match i % 7 {
            0 => r#"[{"name":"search_docs","args":{}}]"#,
            1 => r#"[{"name":"update_order","args":{"id":1}}]"#,
            _ => "[]",
        };
        let intent = match i % 5 {
            0 => r#"{"label":"action","confidence":0.8}"#,
            1 => r#"{"label":"knowledge","confidence":0.7}"#,
            _ => "null",
        };
        let conf = if i % 4 == 0 { 0.82 } else { 0.5 };
        out.push(format!(
            r#"{{"run_id":"r{}","turn":{},"draft":{},"tool_calls_this_turn":{tools},"intent_verdict":{intent},"confidence":{conf},"sensitive_hit":null}}"#,
            i / 10,
            i % 10,
            serde_json::to_string(draft).unwrap()
        ));
    }
    out
}

fn bench(c: &mut Criterion) {
    let lines = mix();
    let turns: Vec<Turn> = lines.iter().map(|l| Turn::parse(l).unwrap()).collect();
    let legacy = Gate::new(FrameworkConfig::default()).unwrap();
    let smart = Gate::new(FrameworkConfig {
        metacognition_selective_gate: true,
        read_only_tools: vec!["search_docs".into()],
        ..Default::default()
    })
    .unwrap();
    let mut g = c.benchmark_group("gate_evaluate_mix");
    g.throughput(Throughput::Elements(turns.len() as u64));
    g.bench_function("legacy", |b| {
        b.iter(|| {
            turns
                .iter()
                .filter(|t| legacy.evaluate(black_box(t)).fires())
                .count()
        })
    });
    g.bench_function("smart", |b| {
        b.iter(|| {
            turns
                .iter()
                .filter(|t| smart.evaluate(black_box(t)).fires())
                .count()
        })
    });
    g.finish();
    let mut g = c.benchmark_group("gate_compile");
    g.bench_function("smart_builtin_patterns", |b| {
        b.iter(|| {
            Gate::new(FrameworkConfig {
                metacognition_selective_gate: true,
                ..Default::default()
            })
            .unwrap()
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(4));
    targets = bench
}
criterion_main!(benches);
