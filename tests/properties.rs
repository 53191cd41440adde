//! Property tests of the gate contract (proptest):
//! - flag off is exactly the legacy gate, on every input;
//! - flag on never skips while a hard floor holds;
//! - a skip implies a stripped draft of at most 160 code points, with no
//!   claims, matching an ack pattern;
//! - the hand-written claim scanner equals the four regexes wherever
//!   `regex`'s classes equal CPython's, and stripping never changes it.

use critic_gate::gate::{Gate, PatternCheck};
use critic_gate::internals::{draft_has_claims, py_lower, py_strip, MAX_ACK_CHARS};
use critic_gate::FrameworkConfig;
use critic_gate::Turn;
use proptest::prelude::*;
use serde_json::json;

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("ok".to_string()),
        Just("Got it".to_string()),
        Just("thanks".to_string()),
        Just("Entendido, gracias".to_string()),
        Just("承知しました".to_string()),
        Just("Sounds Good".to_string()),
        Just("decade".to_string()),
        Just("$4.2M".to_string()),
        Just("٣".to_string()),
        Just("İ".to_string()),
        Just("\u{1c}".to_string()),
        Just("\u{301}".to_string()),
        Just(" ".to_string()),
        Just("\u{3000}".to_string()),
        "[a-zA-Z ,.!']{0,12}",
        "\\PC{0,6}",
    ]
}

fn draft() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec(piece(), 0..6).prop_map(|v| v.join(" ")),
        (piece(), 150usize..180).prop_map(|(p, n)| format!("{p} {}", "y".repeat(n))),
    ]
}

fn turn_json() -> impl Strategy<Value = String> {
    (
        draft(),
        prop::option::of(0.0f64..=1.0),
        prop::option::of(prop_oneof![Just(None), Just(Some("")), Just(Some("pii"))]),
        prop::collection::vec(
            prop_oneof![
                Just(json!({"name": "search_docs"})),
                Just(json!({"name": "delete"})),
                Just(json!({"name": ""})),
                Just(json!("x"))
            ],
            0..3,
        ),
        prop::option::of(prop_oneof![
            Just("action"),
            Just("ambiguous"),
            Just("knowledge"),
            Just("Action")
        ]),
        0usize..2,
    )
        .prop_map(|(draft, conf, sens, tools, intent, findings)| {
            let mut t = json!({"run_id": "r", "draft": draft, "tool_calls_this_turn": tools,
                               "fabrication_findings": vec![json!({"kind": "uuid"}); findings]});
            if let Some(c) = conf {
                t["confidence"] = json!(c);
            }
            if let Some(s) = sens {
                t["sensitive_hit"] = json!(s);
            }
            if let Some(l) = intent {
                t["intent_verdict"] = json!({"label": l});
            }
            t.to_string()
        })
}

fn config() -> impl Strategy<Value = FrameworkConfig> {
    (
        prop_oneof![Just(0.0), Just(0.3), Just(0.6), Just(1.0)],
        prop_oneof![Just(vec![]), Just(vec!["search_docs".to_string()])],
        prop_oneof![
            Just(vec![]),
            Just(vec![
                r"\bmerci\b".to_string(),
                r"^(?!.*\bnot\b).*\bok\b".to_string()
            ])
        ],
    )
        .prop_map(|(t, ro, pats)| FrameworkConfig {
            metacognition_confidence_threshold: t,
            read_only_tools: ro,
            metacognition_trivial_ack_patterns: pats,
            ..Default::default()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn flag_off_is_the_legacy_gate(line in turn_json(), cfg in config()) {
        let gate = Gate::new(FrameworkConfig { metacognition_selective_gate: false, ..cfg.clone() }).unwrap();
        let turn = Turn::parse(&line).unwrap();
        let e = gate.evaluate(&turn);
        let legacy = e.confidence < cfg.metacognition_confidence_threshold || e.sensitive_hit.is_some();
        prop_assert_eq!(e.fires(), legacy);
    }

    #[test]
    fn flag_on_never_skips_with_a_floor(line in turn_json(), cfg in config()) {
        let gate = Gate::new(FrameworkConfig { metacognition_selective_gate: true, ..cfg }).unwrap();
        let turn = Turn::parse(&line).unwrap();
        let e = gate.evaluate(&turn);
        if e.hard_fire() {
            prop_assert!(e.fires());
        }
        if !e.fires() {
            let stripped = py_strip(&turn.draft);
            prop_assert!(stripped.chars().count() <= MAX_ACK_CHARS);
            prop_assert!(!draft_has_claims(stripped));
            prop_assert_eq!(gate.ack_pattern(&py_lower(stripped)), PatternCheck::Matched);
            prop_assert!(!turn.draft.is_empty());
        }
    }

    #[test]
    fn stripping_never_changes_claims(d in draft()) {
        prop_assert_eq!(draft_has_claims(&d), draft_has_claims(py_strip(&d)));
    }

    #[test]
    fn claim_scanner_equals_the_regexes_on_ascii(d in "[a-fA-FxyzG-Z0-9 _,.$\t\n-]{0,40}") {
        prop_assert_eq!(draft_has_claims(&d), claim_regexes(&d));
    }

    #[test]
    fn claim_scanner_equals_the_regexes_on_ascii_prose(d in "[a-fA-FxyzG-Z _,.\t\n-]{0,150}") {
        // No digits: the windowed pass over words decides.
        prop_assert_eq!(draft_has_claims(&d), claim_regexes(&d));
    }
}

/// The four claim regexes. On ASCII without U+001C..U+001F, regex's \b,
/// \d and \s are CPython's.
fn claim_regexes(d: &str) -> bool {
    let patterns = [
        r"\d",
        r"[$€£¥]",
        r"\b[0-9a-fA-F]{6,}\b",
        r"\b[A-Z][a-zA-Z]+\s+[A-Z][a-zA-Z]+",
    ];
    patterns
        .iter()
        .any(|p| regex::Regex::new(p).unwrap().is_match(d))
}

/// Any JSON value, with the strings, numbers and nesting traffic has.
fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |x| x.is_finite())
            .prop_map(|x| json!(x)),
        "\\PC{0,12}".prop_map(Value::String),
        "[\"\\\\/\u{0}-\u{1f}a\u{7f}é😀]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(serde_json::Value::Array),
            prop::collection::vec(("[a-z_]{0,6}", inner), 0..5)
                .prop_map(|kv| serde_json::Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// `line` with one edit: a byte dropped, or a JSON-significant character
/// inserted, at `at` (modulo the length).
fn mutate(line: &str, at: usize, edit: usize) -> String {
    let mut b = line.as_bytes().to_vec();
    if b.is_empty() {
        return line.to_string();
    }
    let at = at % b.len();
    const INSERTS: &[&[u8]] = &[
        b"\"", b"\\", b",", b":", b"{", b"}", b"[", b"]", b"-", b"0", b"e", b".", b" ", b"\\u",
        b"\\ud800", b"\x01", b"\t", b"n", b"1e400", b"-0",
    ];
    if edit == 0 {
        b.remove(at);
    } else {
        let ins = INSERTS[edit % INSERTS.len()];
        b.splice(at..at, ins.iter().copied());
    }
    String::from_utf8_lossy(&b).into_owned()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The fast reader never accepts what serde_json rejects, and reads
    /// what it accepts as serde_json does (json::fast's one duty).
    #[test]
    fn fast_reader_agrees_with_serde_json(v in json_value(), at in any::<usize>(), edit in 0usize..40) {
        use critic_gate::internals::{fast, Node};
        use serde::Deserialize;
        let text = v.to_string();
        for t in [text.clone(), mutate(&text, at, edit)] {
            if let Ok(fast) = fast::parse(&t) {
                let mut de = serde_json::Deserializer::from_str(&t);
                let reference = Node::deserialize(&mut de).and_then(|n| de.end().map(|_| n));
                prop_assert_eq!(reference.ok(), Some(fast), "{:?}", t);
            }
        }
        // Whatever serde_json writes is read without falling back.
        prop_assert!(fast::parse(&text).is_ok(), "{:?}", text);
    }

    /// A turn reads the same through the fast path as through serde_json
    /// alone, valid or not, with the same error.
    #[test]
    fn turns_read_the_same_both_ways(line in turn_json(), extra in json_value(), at in any::<usize>(), edit in 0usize..40) {
        let mut with_extra: serde_json::Value = serde_json::from_str(&line).unwrap();
        with_extra["scope"] = extra.clone();
        with_extra["critic"] = json!({"verdict": "revise", "model": extra.to_string(), "reflection_tokens_in": 12});
        for t in [line.clone(), with_extra.to_string(), mutate(&line, at, edit), mutate(&with_extra.to_string(), at, edit)] {
            let fast = Turn::parse(&t).map(|t| format!("{t:?}"));
            let reference = Turn::parse_with_serde_json(&t).map(|t| format!("{t:?}"));
            prop_assert_eq!(fast, reference, "{:?}", t);
        }
    }
}
