//! Replays the committed fuzz corpus (fuzz/corpus/TARGET/*) through the
//! fuzz targets' bodies, so every input a fuzzer kept (and every crash it
//! found, once fixed) stays a test on stable Rust.

use std::path::Path;

fn replay(target: &str, run: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        run(&data);
        n += 1;
    }
    assert!(n > 0, "{}: no corpus", dir.display());
}

#[test]
fn turn_corpus() {
    replay("turn", critic_gate_core::fuzz::turn);
}

#[test]
fn config_corpus() {
    replay("config", critic_gate_core::fuzz::config);
}

#[test]
fn pattern_corpus() {
    replay("pattern", critic_gate_core::fuzz::pattern);
}

#[test]
fn derive_corpus() {
    replay("derive", critic_gate_core::fuzz::derive);
}

#[test]
fn openai_corpus() {
    replay("openai", critic_gate_core::fuzz::openai);
}

#[test]
fn otlp_corpus() {
    replay("otlp", critic_gate_core::fuzz::otlp);
}

/// Every conversation of `datasets/transcripts.jsonl`, in both history
/// modes, through the transcript target: the fast reader reads what
/// `serde_json` reads, and every converted turn is its traffic line.
#[test]
fn transcripts_dataset() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/transcripts.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    for line in text.lines() {
        for mode in [0u8, 1] {
            let mut data = vec![mode];
            data.extend_from_slice(line.as_bytes());
            critic_gate_core::fuzz::openai(&data);
        }
    }
}
