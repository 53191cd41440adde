//! `[deployment]`: how the production deployment that wrote the traffic was
//! configured (symfonic's own setting names and defaults). Imported traffic
//! (`--from openai-chat`, `--from otlp`) is derived as that deployment
//! derived it; the variants being compared do not change it.

use serde::{Deserialize, Serialize};

/// `intent_filter_mode` and `tool_routing_mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StageMode {
    #[default]
    Off,
    Observe,
    Enforce,
}

/// `fabrication_check_mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FabricationMode {
    #[default]
    Off,
    Observe,
    Revise,
    Refuse,
}

/// `activation_log_mode`: when symfonic strips the activation footer from
/// a reply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActivationLogMode {
    #[default]
    Always,
    Complex,
    Never,
}

/// `history`: what the deployment passed to `run()`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum History {
    /// Only the user's message: a turn's tool calls are its own run's.
    #[default]
    None,
    /// The conversation so far: symfonic counts every tool call in it.
    Conversation,
}

/// The `[deployment]` table, with symfonic's defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Deployment {
    pub intent_filter_mode: StageMode,
    pub tool_routing_mode: StageMode,
    pub fabrication_check_mode: FabricationMode,
    pub fabrication_refuse_min_confidence: f64,
    pub activation_log_mode: ActivationLogMode,
    pub identifier_keys: Vec<String>,
    /// Tool name to trigger keywords, in the order written (the classifier
    /// reads them in order).
    #[serde(with = "keywords")]
    pub tool_trigger_keywords: Vec<(String, Vec<String>)>,
    pub history: History,
}

impl Default for Deployment {
    fn default() -> Deployment {
        Deployment {
            intent_filter_mode: StageMode::Off,
            tool_routing_mode: StageMode::Off,
            fabrication_check_mode: FabricationMode::Off,
            fabrication_refuse_min_confidence: 0.8,
            activation_log_mode: ActivationLogMode::Always,
            identifier_keys: Vec::new(),
            tool_trigger_keywords: Vec::new(),
            history: History::None,
        }
    }
}

impl Deployment {
    /// The table's keys, as a config spells them (a test holds them to the
    /// struct's fields).
    pub const KEYS: [&'static str; 8] = [
        "intent_filter_mode",
        "tool_routing_mode",
        "fabrication_check_mode",
        "fabrication_refuse_min_confidence",
        "activation_log_mode",
        "identifier_keys",
        "tool_trigger_keywords",
        "history",
    ];

    /// Whether symfonic computes an intent verdict at all
    /// (`agent/triage/wiring.py`: either stage not `off`).
    pub fn intent_on(&self) -> bool {
        self.intent_filter_mode != StageMode::Off || self.tool_routing_mode != StageMode::Off
    }

    /// Checks what serde cannot.
    pub fn validate(&self) -> Result<(), crate::vocab::FieldError> {
        let t = self.fabrication_refuse_min_confidence;
        if !(0.0..=1.0).contains(&t) {
            return Err(crate::vocab::FieldError {
                field: "deployment.fabrication_refuse_min_confidence".into(),
                reason: format!("must be in [0, 1] (a finding's confidence is), got {t}"),
            });
        }
        Ok(())
    }
}

/// `tool_trigger_keywords` as a table of lists, order kept.
mod keywords {
    pub(super) fn serialize<S: serde::Serializer>(
        v: &[(String, Vec<String>)],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_map(v.iter().map(|(k, v)| (k, v)))
    }

    pub(super) fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<(String, Vec<String>)>, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Vec<(String, Vec<String>)>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a table of tool name to keyword list")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out: Vec<(String, Vec<String>)> = Vec::new();
                while let Some((k, v)) = m.next_entry::<String, Vec<String>>()? {
                    if out.iter().any(|(e, _)| *e == k) {
                        return Err(serde::de::Error::custom(format!(
                            "tool {k:?} is given twice"
                        )));
                    }
                    out.push((k, v));
                }
                Ok(out)
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use crate::deployment::Deployment;

    #[test]
    fn the_keys_are_the_tables() {
        let t = toml::Value::try_from(Deployment::default()).unwrap();
        let mut keys: Vec<&str> = t.as_table().unwrap().keys().map(String::as_str).collect();
        let mut want = Deployment::KEYS.to_vec();
        keys.sort_unstable();
        want.sort_unstable();
        assert_eq!(keys, want);
    }
}
