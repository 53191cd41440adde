//! The fabrication check's throughput on drafts as chat transcripts write
//! them: most name no identifier, some name one to three, a few name
//! dozens. Each is grounded in a ~2 KB tool result. Criterion prints
//! elements/s = drafts checked per second on ONE core.
//!
//! The few-identifier case is the one that regressed when the grounding
//! search moved to an automaton built per turn (item 7 of "Safe on
//! untrusted traffic"); the many-identifier case is the one that search
//! exists for (identifiers x corpus before it).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use critic_gate_core::derive::fabrication::{detect, Inputs, ToolCalls};
use std::hint::black_box;

/// A tool result of about 2 KB naming some of the identifiers.
fn tool_result() -> String {
    let mut rows = Vec::new();
    for i in 0..40 {
        rows.push(format!(
            r##"{{"order_id":"#W{:07}","status":"delivered","item":"a3f{:03x}"}}"##,
            4_000_000 + i * 37,
            i
        ));
    }
    format!(r#"{{"name":"get_orders","result":[{}]}}"#, rows.join(","))
}

fn drafts(many: bool) -> Vec<String> {
    let plain = [
        "Thanks for waiting! Let me know if there is anything else I can help with.",
        "I understand. Could you tell me which of your orders you mean?",
        "Sure, I can help with that. What is the email on the account?",
    ];
    let mut out = Vec::new();
    for i in 0..300usize {
        let d = match (many, i % 3) {
            (false, 0) => format!(
                "Order #W{:07} shipped; order_id=W{:07} and item a3f{:03x} are on their way.",
                4_000_000 + (i % 40) * 37,
                5_000_000 + i,
                i % 64
            ),
            (false, _) => plain[i % plain.len()].to_string(),
            (true, _) => (0..40)
                .map(|k| format!("order_id=W{:07} item a3f{:03x}", 4_000_000 + k * 41 + i, k))
                .collect::<Vec<_>>()
                .join("; "),
        };
        out.push(d);
    }
    out
}

fn bench(c: &mut Criterion) {
    let result = tool_result();
    let calls = [result.as_str()];
    let keys: Vec<String> = Vec::new();
    let mut g = c.benchmark_group("fabrication_detect");
    for (name, many) in [("few_identifiers", false), ("many_identifiers", true)] {
        let ds = drafts(many);
        g.throughput(Throughput::Elements(ds.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| {
                ds.iter()
                    .map(|d| {
                        detect(black_box(&Inputs {
                            draft: d,
                            tool_calls: ToolCalls::Written(&calls),
                            hydrated_context: "",
                            user_message: "where is my order?",
                            identifier_keys: &keys,
                            intent: None,
                        }))
                        .map_or(0, |f| f.len())
                    })
                    .sum::<usize>()
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
