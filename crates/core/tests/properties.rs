//! Property tests of the gate contract (proptest):
//! - flag off is exactly the legacy gate, on every input (recorded or
//!   computed confidence and sensitive hits, from activation logs too),
//!   against the spec's formulas computed here from the generated fields;
//! - flag on never skips while a hard floor holds;
//! - a skip implies a stripped draft of at most 160 code points, with no
//!   claims, matching an ack pattern;
//! - the hand-written claim scanner equals the four regexes wherever
//!   `regex`'s classes equal CPython's, and stripping never changes it.

use critic_gate_core::gate::{Gate, PatternCheck};
use critic_gate_core::internals::{draft_has_claims, py_lower, py_strip, MAX_ACK_CHARS};
use critic_gate_core::FrameworkConfig;
use critic_gate_core::Turn;
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

/// An activated node: score (absent = 0.0), own tags, properties.tags.
type Node = (Option<f64>, Vec<&'static str>, Option<Vec<&'static str>>);

/// A recorded activation log, as generated (so the test can compute what
/// symfonic would, independently of the crate).
#[derive(Clone, Debug)]
struct Log {
    /// Per activated node.
    nodes: Vec<Node>,
    paths: usize,
    /// Per traversed edge: weight (absent = 0.0).
    weights: Vec<Option<f64>>,
}

impl Log {
    fn to_json(&self) -> serde_json::Value {
        let nodes: Vec<_> = self
            .nodes
            .iter()
            .map(|(score, tags, props)| {
                let mut n = json!({"tags": tags});
                if let Some(s) = score {
                    n["score"] = json!(s);
                }
                if let Some(p) = props {
                    n["properties"] = json!({"tags": p});
                }
                n
            })
            .collect();
        let edges: Vec<_> = self
            .weights
            .iter()
            .map(|w| w.map_or(json!({}), |w| json!({"weight": w})))
            .collect();
        json!({"activated_nodes": nodes, "inference_paths": vec![json!(["a", "b"]); self.paths],
               "traversed_edges": edges})
    }

    /// `compute_confidence(log)` as the spec writes it.
    fn confidence(&self) -> f64 {
        if self.nodes.is_empty() {
            return 0.5;
        }
        let n = self.nodes.len() as f64;
        let seed = self.nodes.iter().fold(0.0, |s, x| s + x.0.unwrap_or(0.0)) / n;
        let path = (self.paths as f64 / 3.0).min(1.0);
        let edge = if self.weights.is_empty() {
            0.0
        } else {
            let sum = self.weights.iter().fold(0.0, |s, w| s + w.unwrap_or(0.0));
            (sum / self.weights.len() as f64 / 5.0).min(1.0)
        };
        (0.4 * seed + 0.3 * path + 0.3 * edge).clamp(0.0, 1.0)
    }

    /// `detect_sensitive_hit(log, tags) is not None` as the spec writes it.
    fn sensitive(&self, tags: &[String]) -> bool {
        self.nodes.iter().any(|(_, own, props)| {
            let effective: &[&str] = match (own.is_empty(), props) {
                (false, _) => own,
                (true, Some(p)) => p,
                (true, None) => &[],
            };
            effective.iter().any(|t| tags.iter().any(|s| s == t))
        })
    }
}

fn log() -> impl Strategy<Value = Log> {
    let tags = prop::collection::vec(
        prop_oneof![Just("pii"), Just("payments"), Just("faq")],
        0..3,
    );
    let node = (
        prop::option::of(prop_oneof![Just(0.0), Just(0.5), 0.0f64..1.5]),
        tags.clone(),
        prop::option::of(tags),
    );
    (
        prop::collection::vec(node, 0..4),
        0usize..5,
        prop::collection::vec(prop::option::of(0.0f64..8.0), 0..3),
    )
        .prop_map(|(nodes, paths, weights)| Log {
            nodes,
            paths,
            weights,
        })
}

/// A generated turn: its JSON line and the recorded fields the legacy gate
/// reads.
#[derive(Clone, Debug)]
struct Recorded {
    line: String,
    confidence: Option<f64>,
    /// `sensitive_hit`: absent (None), null (Some(None)) or a tag.
    sensitive: Option<Option<&'static str>>,
    log: Option<Log>,
}

impl Recorded {
    /// The legacy gate (`confidence < threshold or sensitive_hit is not
    /// None`) from the recorded fields and the spec's formulas alone.
    fn legacy_fires(&self, cfg: &FrameworkConfig) -> bool {
        let confidence = self
            .confidence
            .or(self.log.as_ref().map(Log::confidence))
            .unwrap_or(0.5);
        let sensitive = match self.sensitive {
            Some(recorded) => recorded.is_some(),
            None => self
                .log
                .as_ref()
                .is_some_and(|l| l.sensitive(&cfg.metacognition_sensitive_tags)),
        };
        confidence < cfg.metacognition_confidence_threshold || sensitive
    }
}

fn turn() -> impl Strategy<Value = Recorded> {
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
        prop::option::of(log()),
    )
        .prop_map(|(draft, conf, sens, tools, intent, findings, log)| {
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
            if let Some(l) = &log {
                t["activation_log"] = l.to_json();
            }
            Recorded {
                line: t.to_string(),
                confidence: conf,
                sensitive: sens,
                log,
            }
        })
}

fn turn_json() -> impl Strategy<Value = String> {
    turn().prop_map(|r| r.line)
}

fn config() -> impl Strategy<Value = FrameworkConfig> {
    (
        prop_oneof![Just(0.0), Just(0.3), Just(0.6), Just(1.0)],
        prop_oneof![
            Just(vec![]),
            Just(vec!["pii".to_string()]),
            Just(vec!["payments".to_string(), "pii".to_string()])
        ],
        prop_oneof![Just(vec![]), Just(vec!["search_docs".to_string()])],
        prop_oneof![
            Just(vec![]),
            Just(vec![
                r"\bmerci\b".to_string(),
                r"^(?!.*\bnot\b).*\bok\b".to_string()
            ])
        ],
    )
        .prop_map(|(t, tags, ro, pats)| FrameworkConfig {
            metacognition_confidence_threshold: t,
            metacognition_sensitive_tags: tags,
            read_only_tools: ro,
            metacognition_trivial_ack_patterns: pats,
            ..Default::default()
        })
}

/// A gate for `cfg`, its ack patterns compiled once per thread and list
/// (compiling them for every case was most of these tests' time).
fn gate(cfg: FrameworkConfig) -> Gate {
    thread_local! {
        static PATTERNS: std::cell::RefCell<critic_gate_core::gate::PatternCache> = Default::default();
    }
    PATTERNS.with(|p| Gate::new_cached(cfg, &mut p.borrow_mut()).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn flag_off_is_the_legacy_gate(rec in turn(), cfg in config()) {
        let gate = gate(FrameworkConfig { metacognition_selective_gate: false, ..cfg.clone() });
        let turn = Turn::parse(&rec.line).unwrap();
        // The expectation comes from the generated fields and the spec's
        // formulas, not from the evaluation under test.
        prop_assert_eq!(gate.evaluate(&turn).fires(), rec.legacy_fires(&cfg));
    }

    #[test]
    fn flag_on_never_skips_with_a_floor(line in turn_json(), cfg in config()) {
        let gate = gate(FrameworkConfig { metacognition_selective_gate: true, ..cfg });
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
    /// what it accepts as serde_json does (json::fast's one duty); what it
    /// skips, it checks as it reads.
    #[test]
    fn fast_reader_agrees_with_serde_json(v in json_value(), at in any::<usize>(), edit in 0usize..40) {
        use critic_gate_core::internals::{fast, Node};
        use serde::Deserialize;
        let text = v.to_string();
        for t in [text.clone(), mutate(&text, at, edit)] {
            // Skipping a value checks it as reading it does.
            let mut r = fast::Reader::new(&t);
            r.ws();
            let skipped = r.raw_value().is_ok() && {
                r.ws();
                r.at_end()
            };
            prop_assert_eq!(skipped, fast::parse(&t).is_ok(), "{:?}", t);
            prop_assert_eq!(fast::check(&t).is_ok(), fast::parse(&t).is_ok(), "{:?}", t);
            let by_serde = serde_json::from_str::<Node>(&t).is_ok();
            prop_assert_eq!(critic_gate_core::internals::holds(&t), by_serde, "{:?}", t);
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
        // The ids of the turn's source, one of them any value.
        let mut with_ids: serde_json::Value = serde_json::from_str(&line).unwrap();
        with_ids["trace_id"] = json!("4bf92f3577b34da6a3ce929d0e0e4736");
        with_ids["span_id"] = json!(12_345_678_901u64);
        with_ids[["trace_id", "span_id", "message_index"][at % 3]] = extra;
        for t in [line.clone(), with_extra.to_string(), with_ids.to_string(), mutate(&line, at, edit), mutate(&with_extra.to_string(), at, edit), mutate(&with_ids.to_string(), at, edit)] {
            let fast = Turn::parse(&t).map(|t| format!("{t:?}"));
            let reference = Turn::parse_with_serde_json(&t).map(|t| format!("{t:?}"));
            prop_assert_eq!(fast, reference, "{:?}", t);
        }
    }
}
