//! The signals symfonic derives from what a transcript holds, ported
//! exactly from symfonic-core 9.12.0, so that traffic recorded without them
//! (an OpenTelemetry trace, an OpenAI-style transcript) can be replayed:
//! the intent verdict (`IntentClassifier.classify`, [`intent`]) and the
//! fabrication findings (`detect_fabrication`, [`fabrication`]), and what
//! a critic's raw answer means (`_parse_reflection_output`,
//! [`reflection`]). The
//! Python text rules they rest on (NFC with CPython's Unicode, `repr`) are
//! in [`pytext`].

pub mod draft;
pub mod fabrication;
pub mod intent;
pub mod pytext;
pub mod reflection;
mod scan;
mod suffix;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// One line of `critic-gate derive`: what a deployment computes the two
/// signals from (the shape of the upstream derive cases; other fields,
/// such as a case's `expect`, are ignored).
#[derive(Deserialize)]
struct Case<'a> {
    #[serde(default)]
    user_message: String,
    draft: String,
    #[serde(default, borrow)]
    tool_calls: Vec<&'a RawValue>,
    #[serde(default)]
    identifier_keys: Vec<String>,
    #[serde(default, borrow)]
    tool_trigger_keywords: Option<&'a RawValue>,
    #[serde(default)]
    hydrated_context: String,
    /// Whether the deployment computes an intent verdict at all
    /// (`intent_filter_mode` or `tool_routing_mode` not `off`).
    #[serde(default = "yes")]
    intent_on: bool,
}

fn yes() -> bool {
    true
}

/// A line of `derive` input that is not a case: why (the caller adds the
/// file and line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseError(pub String);

impl std::fmt::Display for CaseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CaseError {}

impl From<pytext::HoldsNanLiteral> for CaseError {
    fn from(e: pytext::HoldsNanLiteral) -> CaseError {
        CaseError(e.to_string())
    }
}

/// The domain's `tool_trigger_keywords` in the order written.
fn keywords(raw: Option<&RawValue>) -> Result<Vec<(String, Vec<String>)>, CaseError> {
    let Some(raw) = raw.filter(|r| r.get() != "null") else {
        return Ok(Vec::new());
    };
    let entries = crate::read::turn::object_entries(raw.get()).ok_or_else(|| {
        CaseError("tool_trigger_keywords must be an object of tool name to keyword list".into())
    })?;
    entries
        .into_iter()
        .map(|(tool, kws)| {
            let kws: Vec<String> = serde_json::from_str(kws.get()).map_err(|_| {
                CaseError(format!(
                    "tool_trigger_keywords.{tool} must be a list of strings"
                ))
            })?;
            Ok((tool.into_owned(), kws))
        })
        .collect()
}

/// A domain's `tool_trigger_keywords`, in order.
type Keywords = Vec<(String, Vec<String>)>;

/// A derive line as Python's `json.loads` reads it, in the JSON the
/// reader takes: the literals `NaN`, `Infinity` and `-Infinity` outside
/// strings become numbers ([`fabrication::py_repr`] prints them as `nan`,
/// `inf` and `-inf`), and a repeated key keeps its first place and last
/// value. A line that is not an object says so.
fn python_json(line: &str) -> Result<String, CaseError> {
    let text = pytext::nonfinite_as_numbers(line)?;
    // One JSON value and nothing after it (`json.loads` says "Extra data"),
    // nested no deeper than the traffic format takes.
    serde_json::from_str::<serde::de::IgnoredAny>(&text)
        .map_err(|e| CaseError(format!("not JSON: {e}")))?;
    if pytext::json_depth(&text) > fabrication::MAX_GROUNDING_DEPTH {
        return Err(CaseError(format!(
            "the case nests deeper than {} arrays and objects",
            fabrication::MAX_GROUNDING_DEPTH
        )));
    }
    let entries = crate::read::turn::object_entries(&text).ok_or_else(|| {
        CaseError(match serde_json::from_str::<serde::de::IgnoredAny>(&text) {
            Ok(_) => {
                "a derive case must be a JSON object (with \"draft\" and the other inputs)".into()
            }
            Err(e) => format!("not JSON: {e}"),
        })
    })?;
    let mut out = String::with_capacity(text.len());
    out.push('{');
    for (i, (k, v)) in entries.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&serde_json::to_string(k.as_ref()).expect("a string serialises"));
        out.push(':');
        out.push_str(v.get());
    }
    out.push('}');
    Ok(out)
}

/// A case read from [`python_json`]'s text.
fn parse_case(text: &str) -> Result<(Case<'_>, Keywords), CaseError> {
    let case: Case = serde_json::from_str(text).map_err(|e| CaseError(e.to_string()))?;
    if let Some(i) = case
        .tool_calls
        .iter()
        .position(|c| !c.get().starts_with('{'))
    {
        return Err(CaseError(format!("tool_calls[{i}] must be an object")));
    }
    let kw = keywords(case.tool_trigger_keywords)?;
    Ok((case, kw))
}

/// A finding search that could not be finished, as a line's reason.
fn unsearched(e: fabrication::Unsearched) -> CaseError {
    CaseError(format!("{e}: its findings are unknown"))
}

/// The derivation benchmark (`derive --time`): every line read first, then
/// `classify` and `detect_fabrication` timed alone on each, on this thread,
/// as `scripts/bench_derive.py upstream` times symfonic's. Returns the
/// turns, the seconds and the findings.
pub fn time_derivations(lines: &[&str]) -> Result<(usize, f64, usize), CaseError> {
    let texts: Vec<String> = lines
        .iter()
        .map(|l| python_json(l))
        .collect::<Result<_, CaseError>>()?;
    let cases: Vec<(Case, Keywords)> = texts
        .iter()
        .map(|t| parse_case(t))
        .collect::<Result<_, CaseError>>()?;
    let calls: Vec<Vec<&str>> = cases
        .iter()
        .map(|(c, _)| json_texts(&c.tool_calls))
        .collect();
    let start = std::time::Instant::now();
    let mut findings = 0;
    for ((case, kw), calls) in cases.iter().zip(&calls) {
        let intent = intent::classify(&case.user_message, kw);
        findings += fabrication::detect(&fabrication::Inputs {
            draft: &case.draft,
            tool_calls: fabrication::ToolCalls::Written(calls),
            hydrated_context: &case.hydrated_context,
            user_message: &case.user_message,
            identifier_keys: &case.identifier_keys,
            intent: Some(&intent),
        })
        .map_err(unsearched)?
        .len();
    }
    Ok((cases.len(), start.elapsed().as_secs_f64(), findings))
}

/// Raw values' JSON texts.
fn json_texts<'a>(raw: &[&'a RawValue]) -> Vec<&'a str> {
    raw.iter().map(|r| r.get()).collect()
}

/// `critic-gate derive` of one line: `{"intent": verdict | null,
/// "findings": [...]}` as symfonic-core 9.12.0 computes them (the verdict
/// unrounded, each finding as its event payload).
pub fn derive_line(line: &str) -> Result<Value, CaseError> {
    let text = python_json(line)?;
    let (case, keywords) = parse_case(&text)?;
    let intent = case
        .intent_on
        .then(|| intent::classify(&case.user_message, &keywords));
    let findings = fabrication::detect(&fabrication::Inputs {
        draft: &case.draft,
        tool_calls: fabrication::ToolCalls::Written(&json_texts(&case.tool_calls)),
        hydrated_context: &case.hydrated_context,
        user_message: &case.user_message,
        identifier_keys: &case.identifier_keys,
        intent: intent.as_ref(),
    })
    .map_err(unsearched)?;
    Ok(json!({"intent": intent, "findings": findings}))
}
