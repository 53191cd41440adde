//! Where each of a turn's signals came from: recorded by production,
//! derived by critic-gate (from what was recorded, as symfonic derives it),
//! or unknown (absent, and filled in as the traffic format says).
//!
//! A line may say so itself (`provenance`, as `critic-gate import` writes
//! it). Otherwise the draft, tool calls, intent verdict and findings are
//! `recorded` (an absent list or verdict is the format's "none"), the
//! confidence and the sensitive hit are `recorded` when present, `derived`
//! when computed from the activation log and `unknown` without either, and
//! the critic is `recorded` when an event is present, else `unknown`.

use crate::read::json::Node;

/// One signal's origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Origin {
    Recorded,
    Derived,
    Unknown,
}

impl Origin {
    pub const ALL: [Origin; 3] = [Origin::Recorded, Origin::Derived, Origin::Unknown];

    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Recorded => "recorded",
            Origin::Derived => "derived",
            Origin::Unknown => "unknown",
        }
    }

    fn parse(s: &str) -> Option<Origin> {
        Origin::ALL.into_iter().find(|o| o.as_str() == s)
    }
}

/// The signals a provenance speaks of, in the order of every report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Signal {
    Draft,
    ToolCalls,
    Intent,
    Findings,
    Confidence,
    Sensitive,
    Critic,
}

impl Signal {
    pub const ALL: [Signal; 7] = [
        Signal::Draft,
        Signal::ToolCalls,
        Signal::Intent,
        Signal::Findings,
        Signal::Confidence,
        Signal::Sensitive,
        Signal::Critic,
    ];

    /// The name in `provenance`, `summary.json` and (with `_from`) the
    /// columns of `decisions.csv`.
    pub fn as_str(self) -> &'static str {
        match self {
            Signal::Draft => "draft",
            Signal::ToolCalls => "tool_calls",
            Signal::Intent => "intent",
            Signal::Findings => "findings",
            Signal::Confidence => "confidence",
            Signal::Sensitive => "sensitive",
            Signal::Critic => "critic",
        }
    }

    fn parse(s: &str) -> Option<Signal> {
        Signal::ALL.into_iter().find(|o| o.as_str() == s)
    }
}

/// A turn's origin per signal (index: [`Signal`] as usize).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Signals(pub [Origin; 7]);

impl Signals {
    pub fn get(&self, s: Signal) -> Origin {
        self.0[s as usize]
    }
}

/// `provenance` as a line records it: each named signal's origin (the
/// others are worked out from the line's fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recorded(pub [Option<Origin>; 7]);

impl Recorded {
    /// Read `provenance`: null, or an object of signal name to origin.
    pub(crate) fn from_node(v: Node) -> Result<Recorded, super::invalid::Invalid> {
        let entries = match v {
            Node::Null => return Ok(Recorded::default()),
            Node::Map(m) => m,
            other => {
                return Err(format!(
                    "provenance must be an object such as {{\"intent\": \"derived\"}}, got {}",
                    other.describe()
                )
                .into())
            }
        };
        let mut out = Recorded::default();
        for (key, value) in entries {
            let signal = Signal::parse(&key).ok_or_else(|| {
                format!(
                    "provenance.{key}: not a signal (give {})",
                    names(Signal::ALL.iter().map(|s| s.as_str()))
                )
            })?;
            let origin = match &value {
                Node::Str(s) => Origin::parse(s),
                _ => None,
            }
            .ok_or_else(|| {
                format!(
                    "provenance.{key} must be {}, got {}",
                    names(Origin::ALL.iter().map(|o| o.as_str())),
                    value.describe()
                )
            })?;
            out.0[signal as usize] = Some(origin);
        }
        Ok(out)
    }
}

fn names<'a>(it: impl Iterator<Item = &'a str>) -> String {
    it.map(|s| format!("\"{s}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_provenance_names_known_signals_and_origins() {
        fn node(s: &str) -> Node<'_> {
            serde_json::from_str(s).unwrap()
        }
        let r = Recorded::from_node(node(r#"{"intent": "derived", "critic": "unknown"}"#)).unwrap();
        assert_eq!(r.0[Signal::Intent as usize], Some(Origin::Derived));
        assert_eq!(r.0[Signal::Critic as usize], Some(Origin::Unknown));
        assert_eq!(r.0[Signal::Draft as usize], None);
        let e = Recorded::from_node(node(r#"{"mood": "derived"}"#))
            .unwrap_err()
            .0;
        assert!(e.contains("provenance.mood: not a signal"), "{e}");
        let e = Recorded::from_node(node(r#"{"intent": "guessed"}"#))
            .unwrap_err()
            .0;
        assert!(
            e.contains("must be \"recorded\", \"derived\", \"unknown\", got \"guessed\""),
            "{e}"
        );
        assert!(Recorded::from_node(node("[]")).is_err());
    }
}
