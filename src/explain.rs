//! `explain`: one turn's decisions under each variant, with the trace a
//! person can read, or the same as JSON.

use serde_json::{json, Value};

use crate::config::{Plan, Variant};
use crate::gate::{Evaluation, Gate, PatternCheck, Reason, SensitiveSource};
use crate::read::turn::Turn;

fn quote(s: &str, max: usize) -> String {
    let short: String = s.chars().take(max).collect();
    let ell = if s.chars().count() > max { "…" } else { "" };
    format!("{}{ell}", serde_json::to_string(&short).unwrap())
}

fn decision_word(fires: bool) -> &'static str {
    if fires {
        "FIRES"
    } else {
        "SKIPS"
    }
}

fn confidence_line(e: &Evaluation, t: &Turn) -> String {
    let source = if e.confidence_recorded {
        "recorded"
    } else if t.activation_log.is_some() {
        "computed from the activation log"
    } else {
        "cold start: no confidence and no activation log"
    };
    format!("{} ({source})", e.confidence)
}

/// Why the legacy gate fires or skips.
fn legacy_trace(e: &Evaluation, turn: &Turn, out: &mut String) {
    let legacy = if e.legacy_fires() { "fires" } else { "skips" };
    let cmp = if e.low_confidence { "<" } else { ">=" };
    out.push_str(&format!(
        "  legacy {legacy}: confidence {} {cmp} threshold {}",
        confidence_line(e, turn),
        e.threshold
    ));
    match (e.sensitive_hit, e.sensitive_source) {
        (Some(tag), src) => out.push_str(&format!(
            "; sensitive hit {} ({})\n",
            quote(tag, 40),
            if src == SensitiveSource::Recorded {
                "recorded"
            } else {
                "from the activation log"
            }
        )),
        (None, _) => out.push_str("; no sensitive hit\n"),
    }
}

/// The ack pattern that matched a draft, and the text it matched.
pub struct AckMatch {
    /// Its place in the variant's list (from 0), and the list's length.
    pub index: usize,
    pub of: usize,
    pub pattern: String,
    /// The built-in pattern's language, when the pattern is one of
    /// symfonic's built-ins (in the built-in list or spelled out in a
    /// variant's own).
    pub builtin: Option<&'static str>,
    pub matched: String,
}

impl AckMatch {
    /// `built-in, en` or `the variant's own`.
    fn whose(&self) -> String {
        match self.builtin {
            Some(lang) => format!("built-in, {lang}"),
            None => "the variant's own".to_string(),
        }
    }
}

/// Which of `gate`'s patterns matches `draft` first, and what it matched.
pub fn ack_match(gate: &Gate, draft: &str) -> Option<AckMatch> {
    let f = crate::gate::DraftFeatures::of(draft);
    let lowered = f.lowered();
    let (index, (a, b)) = gate.first_ack_match(lowered)?;
    let patterns = crate::gate::ack_patterns(gate.config());
    Some(AckMatch {
        index,
        of: patterns.len(),
        pattern: patterns[index].clone(),
        builtin: crate::gate::builtin_language(&patterns[index]),
        matched: lowered.get(a..b).unwrap_or_default().to_string(),
    })
}

/// Why the smart gate fires or skips: its floors, then the ack check.
fn smart_trace(e: &Evaluation, gate: &Gate, draft: &str, out: &mut String) {
    let smart = if e.smart_fires() { "fires" } else { "skips" };
    out.push_str(&format!("  smart {smart}: {}\n", e.smart_reasons()));
    let floors: Vec<&str> = e.floors.iter().map(Reason::name).collect();
    out.push_str(&format!(
        "    floors: {}\n",
        if floors.is_empty() {
            "none".to_string()
        } else {
            floors.join(", ")
        }
    ));
    for r in e.floors.iter() {
        out.push_str(&format!("      {}: {}\n", r.name(), r.describe()));
    }
    let a = &e.ack;
    let pattern = match a.pattern {
        PatternCheck::Matched => match ack_match(gate, draft) {
            Some(m) => format!(
                "ack pattern {} of {} ({}) matches {} in the lowered draft",
                m.index + 1,
                m.of,
                m.whose(),
                quote(&m.matched, 60)
            ),
            None => "an ack pattern matches".to_string(),
        },
        PatternCheck::NoMatch => "no ack pattern matches".to_string(),
        PatternCheck::NotChecked => {
            "patterns not run (they cannot change the decision)".to_string()
        }
        PatternCheck::Aborted => "a pattern hit the backtracking limit".to_string(),
    };
    out.push_str(&format!(
        "    ack check: {}; {}; {}; {pattern} => {}\n",
        if a.empty { "empty draft" } else { "not empty" },
        if a.too_long {
            "longer than 160 code points"
        } else {
            "at most 160 code points"
        },
        if a.claims { "has claims" } else { "no claims" },
        if a.is_trivial() {
            "trivial ack"
        } else {
            "not a trivial ack"
        },
    ));
}

/// The human-readable explanation (`turn`: as `[deployment]` derived it).
pub fn render_text(turn: &Turn, variants: &[Seen]) -> String {
    let mut out = String::new();
    let draft_len = turn.draft.chars().count();
    out.push_str(&format!(
        "turn {}{}: draft {} ({draft_len} code points)\n",
        turn.run_id,
        turn.turn.map(|n| format!("#{n}")).unwrap_or_default(),
        quote(&turn.draft, 80)
    ));
    for (key, meant) in turn.misnamed.iter().flat_map(|m| m.iter()) {
        out.push_str(&format!(
            "note: key {key:?} is not the format's and is ignored: did you mean {meant:?}?\n"
        ));
    }
    for s in variants {
        let (v, gate, turn) = (s.variant, s.gate, s.turn);
        let e = gate.evaluate(turn);
        let kind = if e.selective {
            "smart gate"
        } else {
            "legacy gate"
        };
        out.push_str(&format!(
            "\n{} ({kind}): {}\n",
            v.name,
            decision_word(e.fires())
        ));
        if let Some(d) = &s.deployment {
            out.push_str(&format!(
                "  its own deployment: {}; draft {}\n",
                serde_json::to_string(d).expect("a layer serializes"),
                quote(&turn.draft, 80)
            ));
        }
        if e.selective {
            smart_trace(&e, gate, &turn.draft, &mut out);
        } else {
            legacy_trace(&e, turn, &mut out);
        }
        out.push_str(&format!(
            "  decision: {} because {}\n",
            decision_word(e.fires()),
            e.reasons()
                .iter()
                .map(Reason::describe)
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    out
}

/// One variant's evaluation as JSON (the fields of the conformance cases,
/// plus the trace).
pub fn evaluation_json(name: &str, e: &Evaluation, m: Option<&AckMatch>) -> Value {
    let pattern = match e.ack.pattern {
        PatternCheck::Matched => "matched",
        PatternCheck::NoMatch => "no_match",
        PatternCheck::NotChecked => "not_checked",
        PatternCheck::Aborted => "aborted",
    };
    json!({
        "variant": name,
        "selective_gate": e.selective,
        "fires": e.fires(),
        "reasons": e.reasons().iter().map(Reason::name).collect::<Vec<_>>(),
        "legacy_fires": e.legacy_fires(),
        "legacy_reasons": e.legacy_reasons().iter().map(Reason::name).collect::<Vec<_>>(),
        "smart_fires": e.smart_fires(),
        "smart_reasons": e.smart_reasons().iter().map(Reason::name).collect::<Vec<_>>(),
        "hard_fire": e.hard_fire(),
        "floors": e.floors.iter().map(Reason::name).collect::<Vec<_>>(),
        "draft_has_claims": e.draft_has_claims(),
        "draft_is_trivial_ack": e.draft_is_trivial_ack(),
        "took_tool_action": e.took_tool_action(),
        "confidence": e.confidence,
        "confidence_recorded": e.confidence_recorded,
        "threshold": e.threshold,
        "sensitive_hit": e.sensitive_hit,
        "ack": {
            "empty": e.ack.empty,
            "too_long": e.ack.too_long,
            "claims": e.ack.claims,
            "pattern": pattern,
            // Which pattern matched first, and the lowered text it matched.
            "match": m.map(|m| json!({
                "index": m.index,
                "pattern": m.pattern,
                "builtin": m.builtin.is_some(),
                "text": m.matched,
            })),
        },
    })
}

/// Each variant of `plan` with its compiled gate.
pub fn gates(plan: &Plan) -> crate::Result<Vec<(Variant, Gate)>> {
    let gates = crate::replay::compile_gates(plan)?;
    Ok(plan.variants.iter().cloned().zip(gates).collect())
}

/// The JSON explanation of the turn in `text` (one JSON object) under
/// every variant of `plan`; `source` names the turn in errors.
pub fn explain_json(text: &str, source: &str, plan: &Plan) -> crate::Result<Value> {
    plan.derived_once()?;
    let gates = gates(plan)?;
    let turn = Turn::parse(text.trim()).map_err(|e| crate::Error::InvalidLine {
        source: source.to_string(),
        line: 1,
        reason: e.to_string().into(),
        skippable: false,
    })?;
    let seen: Vec<Seen> = gates
        .iter()
        .map(|(v, g)| Seen::new(v, g, &turn, plan))
        .collect();
    Ok(render_json(&turn, &seen))
}

/// A variant, its gate, and the turn as its deployment derived it.
pub struct Seen<'a, 't> {
    pub variant: &'a Variant,
    pub gate: &'a Gate,
    pub turn: &'a Turn<'t>,
    /// The keys its own deployment changes, when it has one.
    pub deployment: Option<crate::deployment::DeploymentLayer>,
}

impl<'a, 't> Seen<'a, 't> {
    pub fn new(variant: &'a Variant, gate: &'a Gate, turn: &'a Turn<'t>, plan: &Plan) -> Self {
        let deployment = variant
            .deployment
            .as_ref()
            .and_then(|d| d.over(&plan.deployment));
        Seen {
            variant,
            gate,
            turn,
            deployment,
        }
    }
}

/// The JSON explanation of one turn (`turn`: as `[deployment]` derived
/// it).
pub fn render_json(turn: &Turn, variants: &[Seen]) -> Value {
    json!({
        "run_id": turn.run_id,
        "turn": turn.turn,
        "draft_code_points": turn.draft.chars().count(),
        "variants": variants
            .iter()
            .map(|s| {
                let e = s.gate.evaluate(s.turn);
                let m = (e.ack.pattern == PatternCheck::Matched)
                    .then(|| ack_match(s.gate, &s.turn.draft))
                    .flatten();
                let mut j = evaluation_json(&s.variant.name, &e, m.as_ref());
                if let Some(d) = &s.deployment {
                    j["deployment"] = serde_json::to_value(d).expect("a layer serializes");
                    j["draft_code_points"] = s.turn.draft.chars().count().into();
                }
                j
            })
            .collect::<Vec<_>>(),
    })
}

/// The bytes of `path` (`-`: standard input), plain, gzip or zstd as
/// replay reads them.
pub fn read_input(path: &str) -> crate::Result<Vec<u8>> {
    use std::io::Read;
    let (mut r, _) = crate::read::reader::open(&crate::read::reader::Source::named(path))
        .map_err(crate::Error::from)?;
    let mut bytes = Vec::new();
    r.read_to_end(&mut bytes).map_err(|e| {
        let name = if path == "-" { "<stdin>" } else { path };
        crate::Error::Read(crate::Failure::caused(
            format!("{name}: cannot read the turn: {e}"),
            e,
        ))
    })?;
    Ok(bytes)
}

/// The text of `bytes`, or the line (and byte) where it stops being UTF-8.
pub fn utf8_text<'a>(source: &str, bytes: &'a [u8]) -> crate::Result<&'a str> {
    std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        let line = 1 + memchr::memchr_iter(b'\n', &bytes[..at]).count();
        let start = bytes[..at]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        crate::Error::Read(
            format!(
                "{source}:{line}: bytes are not UTF-8 (at byte {} of the line)",
                at - start
            )
            .into(),
        )
    })
}

/// The turns of an input: one JSON value (possibly pretty-printed), or
/// JSON Lines, numbered by line; a leading byte-order mark is skipped, as
/// replay does.
pub fn turn_lines(text: &str) -> Vec<(usize, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let whole = text.trim();
    if serde_json::from_str::<serde_json::Value>(whole).is_ok() {
        return vec![(1, whole)];
    }
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty())
        .collect()
}
