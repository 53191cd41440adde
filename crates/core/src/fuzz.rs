//! The fuzz targets' bodies (`fuzz/fuzz_targets/*.rs` call these), so that
//! `cargo test` replays the committed corpus (`crates/core/tests/fuzz_corpus.rs`) on
//! stable Rust. Each must never panic on any input; `turn` also checks a
//! property (the fast reader and `serde_json` agree on validity).

use std::path::Path;
use std::sync::OnceLock;

use crate::config::{ConfigFile, FrameworkConfig};
use crate::gate::pyre::PySet;
use crate::gate::Gate;
use crate::read::turn::Turn;

/// The legacy and smart gates with symfonic's defaults.
fn default_gates() -> &'static [Gate; 2] {
    static G: OnceLock<[Gate; 2]> = OnceLock::new();
    G.get_or_init(|| {
        let smart = FrameworkConfig {
            metacognition_selective_gate: true,
            ..Default::default()
        };
        [
            Gate::new(FrameworkConfig::default()).expect("defaults compile"),
            Gate::new(smart).expect("defaults compile"),
        ]
    })
}

/// A traffic line: parsed by both readers (which must agree on whether it
/// is valid), then evaluated by both gates.
pub fn turn(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let fast = Turn::parse(text);
    let slow = Turn::parse_with_serde_json(text);
    assert_eq!(
        fast.is_ok(),
        slow.is_ok(),
        "the readers disagree on {text:?}: {fast:?} / {slow:?}"
    );
    if let Ok(t) = fast {
        for g in default_gates() {
            let e = g.evaluate(&t);
            let _ = (e.fires(), e.reasons(), t.production(), t.call_site());
        }
    }
}

/// A config file (TOML): parsed, planned, and every variant's gate built.
pub fn config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(file) = ConfigFile::parse(text, Path::new("fuzz.toml")) else {
        return;
    };
    if let Ok(plan) = file.plan() {
        for v in &plan.variants {
            let _ = Gate::new(v.config.clone());
        }
    }
}

/// An adopter pattern (the first line) matched against a draft (the rest).
pub fn pattern(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (pattern, draft) = text.split_once('\n').unwrap_or((text, "ok thanks"));
    if let Ok(set) = PySet::new(&[pattern], true) {
        let _ = set.is_match(draft);
        let _ = set.is_match(&crate::gate::py_lower(draft));
    }
}

/// A line of `critic-gate derive` input: derived or refused, never a panic.
pub fn derive(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = crate::derive::derive_line(text);
}

/// The deployment the reader targets derive with: every derivation on.
fn fuzz_deployment() -> &'static crate::deployment::Deployment {
    use crate::deployment::*;
    static D: OnceLock<Deployment> = OnceLock::new();
    D.get_or_init(|| Deployment {
        intent_filter_mode: StageMode::Observe,
        fabrication_check_mode: FabricationMode::Refuse,
        activation_log_mode: ActivationLogMode::Complex,
        identifier_keys: vec!["order_id".into()],
        tool_trigger_keywords: vec![("get_order".into(), vec!["order".into()])],
        ..Deployment::default()
    })
}

/// A reader target's input: the first byte picks the history mode, the rest
/// is the text (None when it is not UTF-8).
fn history_and_text(data: &[u8]) -> Option<(crate::deployment::History, &str)> {
    use crate::deployment::History;
    let (&mode, rest) = data.split_first()?;
    let text = std::str::from_utf8(rest).ok()?;
    let history = match mode % 2 {
        0 => History::None,
        _ => History::Conversation,
    };
    Some((history, text))
}

/// A transcript line (the first byte picks the history mode): turned into
/// turns or refused, never a panic, the same by the fast reader as by
/// `serde_json` alone; every turn converted is the turn its traffic line
/// reads as.
pub fn openai(data: &[u8]) {
    let Some((history, text)) = history_and_text(data) else {
        return;
    };
    let turns = crate::import::openai::turns(text, "f.jsonl", 1, history);
    let by_serde = crate::import::openai::turns_by_serde_json(text, "f.jsonl", 1, history);
    assert_eq!(turns, by_serde, "{text}");
    for t in turns.into_iter().flatten() {
        converted_is_its_line(t);
    }
}

/// A raw turn converted (when the format holds it) is, value for value,
/// the turn [`Turn::parse`] reads from the traffic line it stands for.
pub fn converted_is_its_line(t: crate::import::RawTurn) {
    use crate::import::raw;
    use crate::read::reader::Converted;
    let d = fuzz_deployment();
    // The draft as derived on its own (the line writes the turn's).
    let draft = raw::derive(&t, d, &|| raw::calls_json(&t)).draft;
    if let Ok(c) = raw::convert(t, d) {
        let line = c.line();
        let parsed = Turn::parse(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert_eq!(format!("{:?}", c.turn()), format!("{parsed:?}"), "{line}");
        assert_eq!(c.turn().draft, draft, "{line}");
    }
}

/// OTLP documents, one a line (the first byte picks the history mode):
/// gathered into turns or refused by line, never a panic; every turn
/// converted is the turn its traffic line reads as.
pub fn otlp(data: &[u8]) {
    let Some((history, text)) = history_and_text(data) else {
        return;
    };
    let mut g = crate::import::otlp::Gathering::default();
    for (n, line) in text.lines().enumerate() {
        g.document(line, 0, n as u64 + 1);
    }
    let (turns, _, _, _) = g.turns(history, &[]);
    for (_, _, t, _) in turns {
        converted_is_its_line(t);
    }
}
