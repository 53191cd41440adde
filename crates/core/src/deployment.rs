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

/// `tool_trigger_keywords`: tool name to trigger keywords, in order.
pub type ToolKeywords = Vec<(String, Vec<String>)>;

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

    /// The keys whose value differs from `base`'s, with this one's value,
    /// as a JSON object's text in [`Deployment::KEYS`] order (keywords in
    /// their order); None when none does.
    pub fn differences(&self, base: &Deployment) -> Option<String> {
        self.over(base)
            .map(|l| serde_json::to_string(&l).expect("a layer serializes"))
    }

    /// The layer that makes this deployment of `base` (the keys that
    /// differ); None when none does.
    pub fn over(&self, base: &Deployment) -> Option<DeploymentLayer> {
        fn when<T: PartialEq + Clone>(mine: &T, theirs: &T) -> Option<T> {
            (mine != theirs).then(|| mine.clone())
        }
        let layer = DeploymentLayer {
            intent_filter_mode: when(&self.intent_filter_mode, &base.intent_filter_mode),
            tool_routing_mode: when(&self.tool_routing_mode, &base.tool_routing_mode),
            fabrication_check_mode: when(
                &self.fabrication_check_mode,
                &base.fabrication_check_mode,
            ),
            fabrication_refuse_min_confidence: when(
                &self.fabrication_refuse_min_confidence,
                &base.fabrication_refuse_min_confidence,
            ),
            activation_log_mode: when(&self.activation_log_mode, &base.activation_log_mode),
            identifier_keys: when(&self.identifier_keys, &base.identifier_keys),
            tool_trigger_keywords: when(&self.tool_trigger_keywords, &base.tool_trigger_keywords),
            history: when(&self.history, &base.history),
        };
        (layer != DeploymentLayer::default()).then_some(layer)
    }

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

/// Some deployment keys over a base deployment: a variant's own
/// `[variants.NAME.deployment]`, or one value of a `[sweep.deployment]`
/// axis. Imported traffic is derived once more for each distinct
/// deployment a variant runs with.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeploymentLayer {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intent_filter_mode: Option<StageMode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_routing_mode: Option<StageMode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fabrication_check_mode: Option<FabricationMode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fabrication_refuse_min_confidence: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activation_log_mode: Option<ActivationLogMode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identifier_keys: Option<Vec<String>>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "keywords::serialize_some",
        deserialize_with = "keywords::deserialize_some"
    )]
    pub tool_trigger_keywords: Option<ToolKeywords>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history: Option<History>,
}

impl DeploymentLayer {
    /// `base` with the keys this layer sets.
    pub fn apply(&self, base: &Deployment) -> Deployment {
        let mut d = base.clone();
        let DeploymentLayer {
            intent_filter_mode,
            tool_routing_mode,
            fabrication_check_mode,
            fabrication_refuse_min_confidence,
            activation_log_mode,
            identifier_keys,
            tool_trigger_keywords,
            history,
        } = self;
        d.intent_filter_mode = intent_filter_mode.unwrap_or(d.intent_filter_mode);
        d.tool_routing_mode = tool_routing_mode.unwrap_or(d.tool_routing_mode);
        d.fabrication_check_mode = fabrication_check_mode.unwrap_or(d.fabrication_check_mode);
        d.fabrication_refuse_min_confidence =
            fabrication_refuse_min_confidence.unwrap_or(d.fabrication_refuse_min_confidence);
        d.activation_log_mode = activation_log_mode.unwrap_or(d.activation_log_mode);
        if let Some(k) = identifier_keys {
            d.identifier_keys = k.clone();
        }
        if let Some(k) = tool_trigger_keywords {
            d.tool_trigger_keywords = k.clone();
        }
        d.history = history.unwrap_or(d.history);
        d
    }
}

/// `[sweep.deployment]`: deployment keys, each with the values to try.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeploymentAxes {
    pub intent_filter_mode: Option<Vec<StageMode>>,
    pub tool_routing_mode: Option<Vec<StageMode>>,
    pub fabrication_check_mode: Option<Vec<FabricationMode>>,
    pub fabrication_refuse_min_confidence: Option<Vec<f64>>,
    pub activation_log_mode: Option<Vec<ActivationLogMode>>,
    pub identifier_keys: Option<Vec<Vec<String>>>,
    pub tool_trigger_keywords: Option<Vec<Keywords>>,
    pub history: Option<Vec<History>>,
}

/// One `tool_trigger_keywords` value of a sweep: a table, order kept.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Keywords(#[serde(with = "keywords")] pub ToolKeywords);

impl From<Keywords> for ToolKeywords {
    fn from(k: Keywords) -> ToolKeywords {
        k.0
    }
}

impl DeploymentAxes {
    /// Each axis written, in [`Deployment::KEYS`] order, as its key and
    /// its values, each a layer setting that key alone.
    pub fn axes(&self) -> Vec<(&'static str, Vec<DeploymentLayer>)> {
        // Each field's values, each a layer setting that field alone (a
        // test holds the list to the table's keys).
        macro_rules! layers {
            ($($field:ident),*) => {
                [$(self.$field.as_ref().map(|v| {
                    v.iter()
                        .cloned()
                        .map(|x| DeploymentLayer {
                            $field: Some(x.into()),
                            ..DeploymentLayer::default()
                        })
                        .collect::<Vec<_>>()
                })),*]
            };
        }
        let found = layers!(
            intent_filter_mode,
            tool_routing_mode,
            fabrication_check_mode,
            fabrication_refuse_min_confidence,
            activation_log_mode,
            identifier_keys,
            tool_trigger_keywords,
            history
        );
        Deployment::KEYS
            .into_iter()
            .zip(found)
            .filter_map(|(k, v)| Some((k, v?)))
            .collect()
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

    /// An optional table (a layer's), order kept.
    pub(super) fn serialize_some<S: serde::Serializer>(
        v: &Option<crate::deployment::ToolKeywords>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => serialize(v, s),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize_some<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Option<crate::deployment::ToolKeywords>, D::Error> {
        deserialize(d).map(Some)
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
    use crate::deployment::{Deployment, DeploymentAxes, DeploymentLayer};

    /// What differs from a base deployment, in the table's order, keywords
    /// in theirs; nothing when nothing does.
    #[test]
    fn differences_name_only_what_differs() {
        let base = Deployment::default();
        assert_eq!(base.differences(&base), None);
        let mut d = base.clone();
        d.history = crate::deployment::History::Conversation;
        d.tool_trigger_keywords = vec![
            ("search".into(), vec!["find".into()]),
            ("book".into(), vec!["reserve".into()]),
        ];
        assert_eq!(
            d.differences(&base).unwrap(),
            r#"{"tool_trigger_keywords":{"search":["find"],"book":["reserve"]},"history":"conversation"}"#
        );
    }

    /// A layer and a sweep's axes name every key of the table, and a
    /// layer of every key set is the deployment it sets.
    #[test]
    fn layers_and_axes_have_the_tables_keys() {
        let d: Deployment = toml::from_str(
            "intent_filter_mode = \"observe\"\ntool_routing_mode = \"enforce\"\nfabrication_check_mode = \"refuse\"\nfabrication_refuse_min_confidence = 0.5\nactivation_log_mode = \"never\"\nidentifier_keys = [\"order_id\"]\nhistory = \"conversation\"\n[tool_trigger_keywords]\nsearch = [\"find\"]\nbook = [\"reserve\"]\n",
        )
        .unwrap();
        let text = toml::to_string(&d).unwrap();
        let layer: DeploymentLayer = toml::from_str(&text).unwrap();
        assert_eq!(layer.apply(&Deployment::default()), d);
        let t = toml::Value::try_from(&layer).unwrap();
        assert_eq!(t.as_table().unwrap().len(), Deployment::KEYS.len());
        // Keywords keep their order through a layer.
        assert_eq!(layer.tool_trigger_keywords.unwrap()[0].0, "search");
        let axes_text: String = text
            .lines()
            .map(|l| match l.split_once(" = ") {
                Some((k, v))
                    if !l.starts_with('[')
                        && !d.tool_trigger_keywords.iter().any(|(t, _)| t == k) =>
                {
                    format!("{k} = [{v}]\n")
                }
                _ => String::new(),
            })
            .collect::<String>()
            + "tool_trigger_keywords = [{search = [\"find\"], book = [\"reserve\"]}, {}]\n";
        let axes: DeploymentAxes = toml::from_str(&axes_text).unwrap();
        let found = axes.axes();
        let keys: Vec<&str> = found.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, Deployment::KEYS.to_vec());
        let all = found
            .iter()
            .fold(Deployment::default(), |d, (_, v)| v[0].apply(&d));
        assert_eq!(all, d);
        assert_eq!(found[6].1.len(), 2);
    }

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
