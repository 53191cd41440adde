//! Configuration: symfonic's `FrameworkConfig` gate keys, and the replay
//! config file that names the variants to compare (TOML or JSON).
//!
//! Unknown keys are refused everywhere, so a typo such as `read_only_tool`
//! is an error naming the key and the valid ones instead of a silently
//! ignored setting.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::budgets::{Amount, Budget, Limit, Limits, BUDGETS};

/// The gate keys of symfonic's `FrameworkConfig`, with its defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FrameworkConfig {
    pub metacognition_confidence_threshold: f64,
    pub metacognition_sensitive_tags: Vec<String>,
    pub metacognition_selective_gate: bool,
    pub metacognition_trivial_ack_patterns: Vec<String>,
    pub read_only_tools: Vec<String>,
}

impl Default for FrameworkConfig {
    fn default() -> Self {
        FrameworkConfig {
            metacognition_confidence_threshold: 0.6,
            metacognition_sensitive_tags: Vec::new(),
            metacognition_selective_gate: false,
            metacognition_trivial_ack_patterns: Vec::new(),
            read_only_tools: Vec::new(),
        }
    }
}

/// The same keys, each optional: a layer over the shared settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrameworkLayer {
    pub metacognition_confidence_threshold: Option<f64>,
    pub metacognition_sensitive_tags: Option<Vec<String>>,
    pub metacognition_selective_gate: Option<bool>,
    pub metacognition_trivial_ack_patterns: Option<Vec<String>>,
    pub read_only_tools: Option<Vec<String>>,
    /// `[variants.NAME.deployment]`: the variant runs as production would
    /// with these deployment keys changed (imported traffic only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment: Option<crate::deployment::DeploymentLayer>,
}

impl FrameworkLayer {
    pub fn apply(&self, base: &FrameworkConfig) -> FrameworkConfig {
        let mut c = base.clone();
        if let Some(v) = self.metacognition_confidence_threshold {
            c.metacognition_confidence_threshold = v;
        }
        if let Some(v) = &self.metacognition_sensitive_tags {
            c.metacognition_sensitive_tags = v.clone();
        }
        if let Some(v) = self.metacognition_selective_gate {
            c.metacognition_selective_gate = v;
        }
        if let Some(v) = &self.metacognition_trivial_ack_patterns {
            c.metacognition_trivial_ack_patterns = v.clone();
        }
        if let Some(v) = &self.read_only_tools {
            c.read_only_tools = v.clone();
        }
        c
    }
}

/// Prices of one critic model, in USD per million tokens.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    pub usd_per_mtok_in: f64,
    pub usd_per_mtok_out: f64,
}

/// The highest price a model may have, in USD per million tokens: with
/// at most [`crate::read::turn::MAX_TOKENS`] tokens an event, an event's price in
/// nano-USD always fits in 64 bits.
pub const MAX_USD_PER_MTOK: f64 = 1e6;

/// `[cost]`: how to price recorded critic tokens.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostConfig {
    pub default_model: Option<String>,
    #[serde(default)]
    pub models: BTreeMap<String, ModelPrice>,
}

/// `[check]`: release budgets (see `critic-gate check`), each declared in
/// [`crate::budgets::BUDGETS`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckConfig {
    /// The limits that are set, by budget.
    pub limits: Limits,
    /// The variants to judge (None: every non-baseline one).
    pub variant: Option<Vec<String>>,
    /// `assume_missing_at_random`: a rate budget judges the labels alone,
    /// not its worst case too (None: not said, which is false).
    pub assume_missing_at_random: Option<bool>,
}

impl CheckConfig {
    /// These budgets.
    pub fn with(limits: &[(Budget, Amount)]) -> CheckConfig {
        CheckConfig {
            limits: limits.iter().copied().collect(),
            ..CheckConfig::default()
        }
    }

    /// The limit of `b`, if set.
    pub fn get(&self, b: Budget) -> Option<Amount> {
        self.limits.get(&b).copied()
    }

    /// Whether the unlabelled new skips are assumed missing at random.
    pub fn missing_at_random(&self) -> bool {
        self.assume_missing_at_random == Some(true)
    }

    /// Whether the assumption changes the verdict, and so is said first:
    /// assumed, with a rate budget whose worst case it drops.
    pub fn says_assumed(&self) -> bool {
        self.missing_at_random() && self.get(Budget::MaxSafetyRegressionRate).is_some()
    }

    /// Whether any budget is set (`variant` only says which variants).
    pub fn any_budget(&self) -> bool {
        !self.limits.is_empty()
    }

    /// These budgets over `under`'s: each limit set here wins, the others
    /// are `under`'s; likewise the variants.
    pub fn over(&self, under: &CheckConfig) -> CheckConfig {
        let mut limits = under.limits.clone();
        limits.extend(self.limits.iter().map(|(b, a)| (*b, *a)));
        CheckConfig {
            limits,
            variant: match &self.variant {
                Some(v) if !v.is_empty() => Some(v.clone()),
                _ => under.variant.clone(),
            },
            assume_missing_at_random: self
                .assume_missing_at_random
                .or(under.assume_missing_at_random),
        }
    }
}

impl Serialize for CheckConfig {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        for (b, a) in &self.limits {
            match a {
                Amount::Count(n) => m.serialize_entry(b.key(), n)?,
                Amount::Rate(x) => m.serialize_entry(b.key(), x)?,
            }
        }
        if let Some(m_a_r) = self.assume_missing_at_random {
            m.serialize_entry("assume_missing_at_random", &m_a_r)?;
        }
        if let Some(v) = &self.variant {
            m.serialize_entry("variant", v)?;
        }
        m.end()
    }
}

/// The keys `[check]` takes: every budget's, then `variant` and
/// `assume_missing_at_random`. Made from the declarations, so a new
/// budget is a key here without another edit.
const CHECK_KEYS: [&str; BUDGETS.len() + 2] = {
    let mut keys = ["variant"; BUDGETS.len() + 2];
    keys[BUDGETS.len() + 1] = "assume_missing_at_random";
    let mut i = 0;
    while i < BUDGETS.len() {
        keys[i] = BUDGETS[i].key;
        i += 1;
    }
    keys
};

/// A count's limit: "expected a whole number >= 0", not "expected u64".
struct Whole(u64);

impl<'de> Deserialize<'de> for Whole {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct W;
        impl Visitor<'_> for W {
            type Value = Whole;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a whole number >= 0")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Whole, E> {
                Ok(Whole(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Whole, E> {
                u64::try_from(v)
                    .map(Whole)
                    .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
            }
        }
        d.deserialize_any(W)
    }
}

/// A rate's limit: any number (its range is checked with the budget).
struct Real(f64);

impl<'de> Deserialize<'de> for Real {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct R;
        impl Visitor<'_> for R {
            type Value = Real;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Real, E> {
                Ok(Real(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Real, E> {
                Ok(Real(v as f64))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Real, E> {
                Ok(Real(v as f64))
            }
        }
        d.deserialize_any(R)
    }
}

/// A `[check]` key: a budget, or the variant the budgets apply to.
enum CheckKey {
    Budget(Budget),
    Variant,
    AssumeMissingAtRandom,
}

impl<'de> Deserialize<'de> for CheckKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct K;
        impl<'de> Visitor<'de> for K {
            type Value = CheckKey;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a release budget's key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<CheckKey, E> {
                match v {
                    "variant" => Ok(CheckKey::Variant),
                    "assume_missing_at_random" => Ok(CheckKey::AssumeMissingAtRandom),
                    _ => Budget::from_key(v)
                        .map(CheckKey::Budget)
                        .ok_or_else(|| E::unknown_field(v, &CHECK_KEYS)),
                }
            }
        }
        d.deserialize_identifier(K)
    }
}

impl<'de> Deserialize<'de> for CheckConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CheckConfig;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a table of release budgets")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<CheckConfig, A::Error> {
                let mut c = CheckConfig::default();
                // The key and the value are refused by their own
                // deserializers, so the parser's message points at their
                // line (a wrapped error would point at `[check]`).
                while let Some(k) = m.next_key::<CheckKey>()? {
                    let b = match k {
                        CheckKey::Variant => {
                            c.variant = Some(m.next_value()?);
                            continue;
                        }
                        CheckKey::AssumeMissingAtRandom => {
                            c.assume_missing_at_random = Some(m.next_value()?);
                            continue;
                        }
                        CheckKey::Budget(b) => b,
                    };
                    let a = match b.declared().limit {
                        Limit::Count => Amount::Count(m.next_value::<Whole>()?.0),
                        Limit::Rate => Amount::Rate(m.next_value::<Real>()?.0),
                    };
                    if c.limits.insert(b, a).is_some() {
                        return Err(de::Error::custom(format!("{} is given twice", b.key())));
                    }
                }
                Ok(c)
            }
        }
        d.deserialize_map(V)
    }
}

/// A map that keeps the order its keys were written in.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ordered<T>(pub Vec<(String, T)>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Ordered<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Ordered<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a table of variants")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Ordered<T>, A::Error> {
                let mut out: Vec<(String, T)> = Vec::new();
                while let Some((k, v)) = m.next_entry::<String, T>()? {
                    if out.iter().any(|(e, _)| *e == k) {
                        return Err(de::Error::custom(format!("variant {k:?} is defined twice")));
                    }
                    out.push((k, v));
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// `[monitor]`: how `monitor` judges production's skips.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MonitorConfig {
    /// `assume_missing_at_random`: the status reads the bounds that take a
    /// failed shadow call as unrelated to its verdict, not the worst case
    /// (None: not said, which is false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assume_missing_at_random: Option<bool>,
}

impl MonitorConfig {
    fn is_unset(&self) -> bool {
        self == &MonitorConfig::default()
    }
}

/// The config file of `replay`, `explain` and `check`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub baseline: Option<String>,
    /// The variant whose gate produced the traffic (default: the
    /// baseline): the turns it skipped never reached production's critic.
    pub production: Option<String>,
    pub metacognition_confidence_threshold: Option<f64>,
    pub metacognition_sensitive_tags: Option<Vec<String>>,
    pub metacognition_selective_gate: Option<bool>,
    pub metacognition_trivial_ack_patterns: Option<Vec<String>>,
    pub read_only_tools: Option<Vec<String>>,
    pub variants: Option<Ordered<FrameworkLayer>>,
    pub cost: Option<CostConfig>,
    pub check: Option<CheckConfig>,
    pub monitor: Option<MonitorConfig>,
    /// Axes of gate settings for `sweep` and `calibrate` (see
    /// `crate::grid`); `replay` does not read it.
    pub sweep: Option<SweepTable>,
    /// `[deployment]`: the production deployment's settings, for imported
    /// traffic.
    pub deployment: Option<crate::deployment::Deployment>,
    /// The file it was read from (errors name it).
    #[serde(skip)]
    pub path: Option<std::path::PathBuf>,
    /// Its TOML text (errors about a value find its line in it).
    #[serde(skip)]
    pub text: Option<String>,
}

/// `[sweep]`: gate keys, each with the values to try.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepTable {
    pub metacognition_selective_gate: Option<Vec<bool>>,
    pub metacognition_confidence_threshold: Option<Vec<f64>>,
    pub metacognition_sensitive_tags: Option<Vec<Vec<String>>>,
    pub read_only_tools: Option<Vec<Vec<String>>>,
    pub metacognition_trivial_ack_patterns: Option<Vec<Vec<String>>>,
    /// `[sweep.deployment]`: deployment keys to vary (imported traffic
    /// only).
    pub deployment: Option<crate::deployment::DeploymentAxes>,
}

/// A named gate config to evaluate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    pub name: String,
    pub config: FrameworkConfig,
    /// The deployment it runs with when not the plan's `[deployment]`
    /// (imported traffic is derived with it); None: the plan's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment: Option<crate::deployment::Deployment>,
}

impl Variant {
    /// `[variants.NAME.deployment]` with the keys this variant's
    /// deployment changes from `base`, as TOML; empty when it runs with
    /// `base`. (A config written for it must carry them: they are part of
    /// what was measured.)
    pub fn deployment_toml(&self, name: &str, base: &crate::deployment::Deployment) -> String {
        let Some(layer) = self.deployment.as_ref().and_then(|d| d.over(base)) else {
            return String::new();
        };
        let table = std::collections::BTreeMap::from([(
            "variants",
            std::collections::BTreeMap::from([(
                name,
                std::collections::BTreeMap::from([("deployment", layer)]),
            )]),
        )]);
        let body = toml::to_string(&table).expect("a layer serializes");
        format!("# a deployment setting, not a gate's: production must run with it too\n{body}")
    }
}

/// The most distinct deployments one pass derives (each holds its own
/// derivation of the turns in memory).
pub const MAX_DEPLOYMENTS: usize = 16;

/// Everything a config file says, resolved and validated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub variants: Vec<Variant>,
    /// Index into `variants`.
    pub baseline: usize,
    /// Index into `variants` of the gate that produced the traffic; None:
    /// the baseline (what a config without `production` says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub production: Option<usize>,
    pub cost: CostConfig,
    pub check: CheckConfig,
    /// `[monitor]`.
    #[serde(default, skip_serializing_if = "MonitorConfig::is_unset")]
    pub monitor: MonitorConfig,
    /// How the production deployment was configured (`[deployment]`):
    /// what imported traffic is derived with.
    #[serde(default)]
    pub deployment: crate::deployment::Deployment,
}

/// A config that cannot be used: which file, what kind of problem, what
/// is wrong and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The config file, when the config came from one.
    pub file: Option<String>,
    /// The line of the file the error is about, when it could be found
    /// (syntax errors carry theirs in the parser's message).
    pub line: Option<usize>,
    pub kind: ConfigErrorKind,
}

/// What is wrong with a config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigErrorKind {
    /// The file cannot be read.
    Unreadable(String),
    /// Not a config: TOML or JSON syntax, an unknown key, a value of the
    /// wrong type (the parser's message, with the line).
    Syntax(String),
    /// A field whose value is not allowed.
    Field(crate::vocab::FieldError),
    /// A value the plan refuses (a variant, a baseline, a price, a pattern,
    /// a sweep axis), with the reason (which may name a setting).
    Value(crate::options::Said),
}

impl ConfigError {
    /// A value the plan refuses.
    pub fn value(message: impl Into<crate::options::Said>) -> ConfigError {
        ConfigError {
            file: None,
            line: None,
            kind: ConfigErrorKind::Value(message.into()),
        }
    }

    /// The error, naming `file` (unless it already names one).
    pub fn in_file(mut self, file: Option<&Path>) -> ConfigError {
        if self.file.is_none() {
            self.file = file.map(|f| f.display().to_string());
        }
        self
    }
}

impl ConfigError {
    /// The message, naming settings as data.
    pub fn said(&self) -> crate::options::Said {
        let at = match (&self.file, self.line) {
            (Some(file), Some(line)) => format!("{file}:{line}: "),
            (Some(file), None) => format!("{file}: "),
            _ => String::new(),
        };
        let what: crate::options::Said = match &self.kind {
            ConfigErrorKind::Unreadable(m) => format!("cannot read config: {m}").into(),
            ConfigErrorKind::Syntax(m) => m.as_str().into(),
            ConfigErrorKind::Value(m) => m.clone(),
            ConfigErrorKind::Field(e) => e.to_string().into(),
        };
        crate::said![at, what]
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.said())
    }
}

impl std::error::Error for ConfigError {}

impl CostConfig {
    /// Every price is a number from 0 to [`MAX_USD_PER_MTOK`].
    fn check_prices(&self) -> Result<(), ConfigError> {
        for (model, p) in &self.models {
            for (k, x) in [
                ("usd_per_mtok_in", p.usd_per_mtok_in),
                ("usd_per_mtok_out", p.usd_per_mtok_out),
            ] {
                if !(x.is_finite() && (0.0..=MAX_USD_PER_MTOK).contains(&x)) {
                    return Err(ConfigError::value(format!(
                        "cost.models.{model}.{k} must be a number from 0 to {MAX_USD_PER_MTOK} (USD per million tokens), got {x}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// A recorded event's dollars in nano-USD (tokens x USD per million
    /// tokens x 1e3), priced by its model or the default model; Err names
    /// the model that has no price.
    pub fn nano_usd<'m>(
        &'m self,
        (tin, tout): (u64, u64),
        model: Option<&'m str>,
    ) -> Result<u64, &'m str> {
        let name = model
            .filter(|m| !m.is_empty())
            .or(self.default_model.as_deref());
        let p = name
            .and_then(|n| self.models.get(n))
            .ok_or_else(|| name.unwrap_or("(no model and no cost.default_model)"))?;
        Ok(
            (tin as f64 * p.usd_per_mtok_in * 1e3 + tout as f64 * p.usd_per_mtok_out * 1e3).round()
                as u64,
        )
    }
}

impl FrameworkConfig {
    /// Checks what serde cannot: the threshold's range. (Patterns are checked
    /// when a [`crate::gate::Gate`] compiles them.)
    pub fn validate(&self) -> Result<(), ConfigError> {
        let t = self.metacognition_confidence_threshold;
        if !(0.0..=1.0).contains(&t) {
            return Err(ConfigError::value(format!(
                "metacognition_confidence_threshold must be in [0, 1] (confidence is), got {t}"
            )));
        }
        Ok(())
    }
}

/// symfonic's built-in trivial-ack patterns (matched against the lowered,
/// stripped draft under `re.IGNORECASE`).
pub const BUILTIN_ACK_PATTERNS: [&str; 5] = [
    r"\b(ok|okay|got it|sure|done|thanks|thank you|will do|sounds good|understood|noted|on it|alright|great|perfect|no problem|you'?re welcome|acknowledged|confirmed|scheduling that|i'?ll do that|i'?ll handle)\b",
    r"\b(vale|de acuerdo|entendido|listo|gracias|claro|perfecto|hecho|sin problema|por supuesto)\b",
    r"\b(ok|alles klar|verstanden|erledigt|danke|gern|kein problem|in ordnung|natürlich)\b",
    r"\b(d'accord|compris|entendu|merci|parfait|bien sûr|pas de problème|c'est fait|avec plaisir)\b",
    r"\b(ok|certo|entendido|feito|obrigad[oa]|claro|perfeito|sem problema|com certeza)\b",
];

/// The languages of [`BUILTIN_ACK_PATTERNS`], in order.
pub const BUILTIN_ACK_LANGUAGES: [&str; 5] = ["en", "es", "de", "fr", "pt"];

/// The language of `pattern` when it is one of the built-ins.
pub fn builtin_language(pattern: &str) -> Option<&'static str> {
    BUILTIN_ACK_PATTERNS
        .iter()
        .position(|b| *b == pattern)
        .map(|i| BUILTIN_ACK_LANGUAGES[i])
}

/// The keys a value error may be about; the first one a message contains
/// is the one it is about, so the words that may also stand in a message's
/// prose (`baseline`, `history`) come last.
const VALUE_KEYS: [&str; 13] = [
    "fabrication_refuse_min_confidence",
    "metacognition_trivial_ack_patterns",
    "metacognition_confidence_threshold",
    "metacognition_sensitive_tags",
    "metacognition_selective_gate",
    "usd_per_mtok_out",
    "usd_per_mtok_in",
    "identifier_keys",
    "read_only_tools",
    "default_model",
    "baseline",
    "history",
    "production",
];

/// The line (from 1) of the TOML `text` that sets the key a value error's
/// `message` is about, in the table it names (`variant NAME:` for
/// `[variants.NAME]`, `[sweep]`, `deployment.`, `cost.models.NAME.`), or
/// at the top level. None when it cannot be told.
fn line_of(text: &str, message: &str) -> Option<usize> {
    let key = VALUE_KEYS.iter().find(|k| message.contains(*k))?;
    let table = if let Some(rest) = message.strip_prefix("variant ") {
        Some(format!("variants.{}", rest.split(':').next()?.trim()))
    } else if message.starts_with("[sweep]") {
        Some("sweep".to_string())
    } else if message.starts_with("deployment.") {
        Some("deployment".to_string())
    } else if let Some(rest) = message.strip_prefix("cost.models.") {
        Some(format!(
            "cost.models.{}",
            rest.split(&format!(".{key}")).next()?
        ))
    } else if *key == "default_model" {
        Some("cost".to_string())
    } else {
        None
    };
    // A variant inherits the top-level keys: the value may be set there.
    setting_line(text, table.as_deref(), key).or_else(|| {
        table
            .as_deref()
            .is_some_and(|t| t.starts_with("variants."))
            .then(|| setting_line(text, None, key))
            .flatten()
    })
}

/// The line (from 1) that sets `key` in `table` (None: the top level).
fn setting_line(text: &str, table: Option<&str>, key: &str) -> Option<usize> {
    let mut current: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if let Some(h) = l.strip_prefix('[').and_then(|h| h.split(']').next()) {
            current = Some(h.trim().replace(['"', '\'', ' '], ""));
            continue;
        }
        let sets = l
            .strip_prefix(key)
            .is_some_and(|r| r.trim_start().starts_with('='));
        if sets && current.as_deref() == table {
            return Some(i + 1);
        }
    }
    None
}

/// A parser's "unknown field `x`, expected one of `a`, `b`" with "did you
/// mean" when one of the names is close to the unknown one.
fn with_suggestion(message: String) -> String {
    let Some(at) = message.find("unknown field `") else {
        return message;
    };
    let rest = &message[at + "unknown field `".len()..];
    let Some((given, choices)) = rest.split_once('`') else {
        return message;
    };
    // The choices are the backticked names after "expected".
    let names = choices.split('`').skip(1).step_by(2);
    let deployment = crate::deployment::Deployment::KEYS;
    if deployment.contains(&given) && !names.clone().any(|n| deployment.contains(&n)) {
        return format!(
            "{message}\n`{given}` is a deployment setting (how production ran, which imported traffic is derived as): it goes in the [deployment] table, or for one variant in [variants.NAME.deployment] (for a sweep, [sweep.deployment] with a list of values), not in a variant's gate keys or at the top level"
        );
    }
    match crate::vocab::closest(given, names) {
        Some(c) => format!("{message}\ndid you mean `{c}`?"),
        None => message,
    }
}

impl ConfigFile {
    /// Parse TOML, or JSON when `path` ends in `.json`.
    pub fn parse(text: &str, path: &Path) -> Result<ConfigFile, ConfigError> {
        let syntax = |m: String| ConfigError {
            file: Some(path.display().to_string()),
            line: None,
            kind: ConfigErrorKind::Syntax(m),
        };
        let mut file: ConfigFile = if path.extension().is_some_and(|e| e == "json") {
            serde_json::from_str(text).map_err(|e| syntax(with_suggestion(e.to_string())))?
        } else {
            toml::from_str(text)
                .map_err(|e| syntax(with_suggestion(e.to_string().trim_end().to_string())))?
        };
        file.path = Some(path.to_path_buf());
        file.text = Some(text.to_string());
        Ok(file)
    }

    pub fn load(path: &Path) -> Result<ConfigFile, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: Some(path.display().to_string()),
            line: None,
            kind: ConfigErrorKind::Unreadable(e.to_string()),
        })?;
        ConfigFile::parse(&text, path)
    }

    /// The settings every variant starts from (the top-level keys over
    /// symfonic's defaults).
    pub fn shared_config(&self) -> FrameworkConfig {
        self.shared().apply(&FrameworkConfig::default())
    }

    fn shared(&self) -> FrameworkLayer {
        FrameworkLayer {
            metacognition_confidence_threshold: self.metacognition_confidence_threshold,
            metacognition_sensitive_tags: self.metacognition_sensitive_tags.clone(),
            metacognition_selective_gate: self.metacognition_selective_gate,
            metacognition_trivial_ack_patterns: self.metacognition_trivial_ack_patterns.clone(),
            read_only_tools: self.read_only_tools.clone(),
            deployment: None,
        }
    }

    /// Resolve variants (default: `legacy` with the flag off and `smart` with
    /// it on) and the baseline (`baseline`, else the first variant written).
    pub fn plan(&self) -> Result<Plan, ConfigError> {
        self.resolve().map_err(|e| self.locate(e))
    }

    /// `e` with this file's name and, when the key it is about can be
    /// found in the text, its line.
    pub fn locate(&self, mut e: ConfigError) -> ConfigError {
        if e.line.is_none() {
            if let Some(text) = &self.text {
                e.line = match &e.kind {
                    ConfigErrorKind::Value(m) => line_of(text, &m.to_string()),
                    ConfigErrorKind::Field(f) => line_of(text, &f.to_string()),
                    _ => None,
                };
            }
        }
        e.in_file(self.path.as_deref())
    }

    /// The baseline's index (`baseline`, else the first variant written)
    /// and production's (`production`; None: the baseline), each a
    /// variant's name.
    fn roles(&self, variants: &[Variant]) -> Result<(usize, Option<usize>), ConfigError> {
        let baseline = match &self.baseline {
            Some(b) => variants.iter().position(|v| &v.name == b).ok_or_else(|| {
                let names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
                ConfigError::value(format!(
                    "baseline {b:?} is not a variant; the variants are: {}",
                    names.join(", ")
                ))
            })?,
            // The first variant as written (TOML and JSON keep the order).
            None => 0,
        };
        let production = match &self.production {
            Some(p) => Some(variants.iter().position(|v| &v.name == p).ok_or_else(|| {
                let names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
                ConfigError::value(format!(
                    "production {p:?} is not a variant; name the variant whose gate produced the traffic, one of: {}",
                    names.join(", ")
                ))
            })?),
            None => None,
        };
        Ok((baseline, production))
    }

    /// The variants over the shared settings and `[deployment]` (`base`),
    /// each checked: `legacy` and `smart` without `[variants]`.
    fn variants_over(
        &self,
        shared: FrameworkConfig,
        base: &crate::deployment::Deployment,
    ) -> Result<Vec<Variant>, ConfigError> {
        let variants: Vec<Variant> = match &self.variants {
            Some(Ordered(vs)) if !vs.is_empty() => vs
                .iter()
                .map(|(name, layer)| Variant {
                    name: name.clone(),
                    config: layer.apply(&shared),
                    deployment: layer
                        .deployment
                        .as_ref()
                        .map(|l| l.apply(base))
                        .filter(|d| d != base),
                })
                .collect(),
            Some(_) => {
                return Err(ConfigError::value(
                    "[variants] is empty: name at least one variant",
                ))
            }
            None => vec![
                Variant {
                    name: "legacy".into(),
                    config: FrameworkConfig {
                        metacognition_selective_gate: false,
                        ..shared.clone()
                    },
                    deployment: None,
                },
                Variant {
                    name: "smart".into(),
                    config: FrameworkConfig {
                        metacognition_selective_gate: true,
                        ..shared
                    },
                    deployment: None,
                },
            ],
        };
        for v in &variants {
            if v.name.is_empty() || v.name.contains([',', '"', '\n', ';']) {
                return Err(ConfigError::value(crate::said![
                    format!("variant name {:?} is not usable in reports: a comma, a quote, a semicolon or a line break would split its CSV cell or a ", v.name),
                    crate::options::Setting::Variant,
                    " list; drop them (letters, digits, '-', '_', '.' and '/' always work)"
                ]));
            }
            v.config
                .validate()
                .map_err(|e| ConfigError::value(format!("variant {}: {e}", v.name)))?;
            if let Some(d) = &v.deployment {
                d.validate()
                    .map_err(|e| ConfigError::value(format!("variant {}: {e}", v.name)))?;
            }
        }
        Ok(variants)
    }

    fn resolve(&self) -> Result<Plan, ConfigError> {
        let shared = self.shared().apply(&FrameworkConfig::default());
        // A top-level value is the config's, not a variant's: named as such.
        shared.validate()?;
        let base = self.deployment.clone().unwrap_or_default();
        let variants = self.variants_over(shared, &base)?;
        let (baseline, production) = self.roles(&variants)?;
        let p = &variants[production.unwrap_or(baseline)];
        if p.deployment.is_some() {
            return Err(ConfigError::value(format!(
                "variant {} is production (the variant named by `production`, else the baseline), and [deployment] is how production ran: it cannot run with a deployment of its own; move its deployment keys to [deployment], or name another variant production",
                p.name
            )));
        }
        let cost = self.cost.clone().unwrap_or_default();
        cost.check_prices()?;
        let deployment = base;
        deployment.validate().map_err(|e| ConfigError {
            file: None,
            line: None,
            kind: ConfigErrorKind::Field(e),
        })?;
        let plan = Plan {
            variants,
            baseline,
            production,
            cost,
            check: self.check.clone().unwrap_or_default(),
            monitor: self.monitor.clone().unwrap_or_default(),
            deployment,
        };
        plan.check_deployments()?;
        Ok(plan)
    }
}

impl Plan {
    /// The deployment variant `i` runs with: its own, else `[deployment]`.
    pub fn deployment_of(&self, i: usize) -> &crate::deployment::Deployment {
        self.variants[i]
            .deployment
            .as_ref()
            .unwrap_or(&self.deployment)
    }

    /// The distinct deployments the variants run with, `[deployment]`
    /// first and the others in the order variants first name them; and
    /// each variant's place in that list.
    pub fn deployments(&self) -> (Vec<crate::deployment::Deployment>, Vec<usize>) {
        let mut distinct = vec![self.deployment.clone()];
        let mut of = Vec::with_capacity(self.variants.len());
        for i in 0..self.variants.len() {
            let d = self.deployment_of(i);
            let k = match distinct.iter().position(|e| e == d) {
                Some(k) => k,
                None => {
                    distinct.push(d.clone());
                    distinct.len() - 1
                }
            };
            of.push(k);
        }
        (distinct, of)
    }

    /// Refuses more than [`MAX_DEPLOYMENTS`] distinct deployments.
    pub fn check_deployments(&self) -> Result<(), ConfigError> {
        let n = self.deployments().0.len();
        if n <= MAX_DEPLOYMENTS {
            return Ok(());
        }
        Err(ConfigError::value(format!(
            "the variants run with {n} distinct deployments ([deployment], [variants.NAME.deployment] and [sweep.deployment]); at most {MAX_DEPLOYMENTS} are derived in one pass (each holds its own derivation of the turns in memory): drop values, or split the sweep into several configs"
        )))
    }

    /// Refuses a plan whose variants run with deployments of their own
    /// when the input is traffic lines, which carry their derivations.
    pub fn derived_once(&self) -> Result<(), ConfigError> {
        match self.variants.iter().find(|v| v.deployment.is_some()) {
            None => Ok(()),
            Some(v) => Err(ConfigError::value(crate::said![
                format!("variant {} runs with a deployment of its own, which only imported traffic is derived with: traffic lines carry their derivations already; read the transcripts or the trace they came from (", v.name),
                crate::options::Setting::From,
                " openai-chat or otlp), or drop its deployment keys"
            ])),
        }
    }

    /// Refuses, as a command that derives each turn once (`what`), a
    /// config that gives one of variants `which` a deployment of its own.
    pub fn one_deployment(&self, which: &[usize], what: &str) -> Result<(), ConfigError> {
        match which.iter().find(|&&i| self.variants[i].deployment.is_some()) {
            None => Ok(()),
            Some(&i) => Err(ConfigError::value(format!(
                "variant {} runs with a deployment of its own ([variants.{}.deployment] or [sweep.deployment]); {what} derives each turn with [deployment] alone: give that variant's deployment keys in [deployment] instead, or compare deployments with replay or sweep",
                self.variants[i].name, self.variants[i].name
            ))),
        }
    }

    /// The variant whose gate produced the traffic: `production`, else
    /// the baseline.
    pub fn production(&self) -> usize {
        self.production.unwrap_or(self.baseline)
    }

    /// The plan with no config file: symfonic's defaults, legacy vs smart.
    pub fn default_plan() -> Plan {
        ConfigFile::default().plan().expect("defaults are valid")
    }

    /// Why a plan read back from elsewhere (a shard's partial result,
    /// which anyone may hand a merge) is not one a config could make: no
    /// variant, a baseline past them, a name repeated or unusable, or a
    /// value a config would refuse.
    pub fn validate(&self) -> Result<(), String> {
        if self.variants.is_empty()
            || self.baseline >= self.variants.len()
            || self.production() >= self.variants.len()
        {
            return Err(format!(
                "its plan has {} variants, baseline {} and production {}",
                self.variants.len(),
                self.baseline,
                self.production()
            ));
        }
        let mut names = std::collections::BTreeSet::new();
        for v in &self.variants {
            if v.name.is_empty() || v.name.contains([',', '"', '\n', ';']) || !names.insert(&v.name)
            {
                return Err(format!(
                    "its plan's variant name {:?} is unusable or repeated",
                    v.name
                ));
            }
            v.config
                .validate()
                .map_err(|e| format!("its plan's variant {:?}: {e}", v.name))?;
            if let Some(d) = &v.deployment {
                d.validate()
                    .map_err(|e| format!("its plan's variant {:?}: {e}", v.name))?;
            }
        }
        self.cost.check_prices().map_err(|e| e.to_string())?;
        self.check_deployments().map_err(|e| e.to_string())?;
        self.deployment.validate().map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(toml: &str) -> Result<Plan, ConfigError> {
        ConfigFile::parse(toml, Path::new("gate.toml"))?.plan()
    }

    #[test]
    fn defaults_are_symfonics() {
        let p = Plan::default_plan();
        assert_eq!(p.variants.len(), 2);
        assert_eq!(p.variants[0].name, "legacy");
        assert!(!p.variants[0].config.metacognition_selective_gate);
        assert!(p.variants[1].config.metacognition_selective_gate);
        assert_eq!(p.variants[1].config.metacognition_confidence_threshold, 0.6);
        assert_eq!(p.baseline, 0);
    }

    #[test]
    fn typo_names_the_key_and_the_valid_ones() {
        let e = plan("read_only_tool = [\"x\"]").unwrap_err().to_string();
        assert!(e.contains("read_only_tool"), "{e}");
        assert!(e.contains("read_only_tools"), "{e}");
        let e = plan("[variants.a]\nread_only_tool = []")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `read_only_tool`"), "{e}");
        assert!(e.ends_with("did you mean `read_only_tools`?"), "{e}");
        // A value error names the line that set the value, in its table.
        let text = "read_only_tools = []\n\n[variants.a]\nmetacognition_selective_gate = true\n[variants.b]\nmetacognition_confidence_threshold = 1.5\n";
        let e = plan(text).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "gate.toml:6: variant b: metacognition_confidence_threshold must be in [0, 1]"
            ),
            "{e}"
        );
        let e = plan("metacognition_confidence_threshold = 2\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("gate.toml:1: metacognition_confidence_threshold"),
            "{e}"
        );
        let e = plan("[cost.models.\"o-1.5\"]\nusd_per_mtok_in = -1\nusd_per_mtok_out = 1\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("gate.toml:2: cost.models.o-1.5.usd_per_mtok_in"),
            "{e}"
        );
        let e = plan("[check]\nmax_safety_regresions = 0")
            .unwrap_err()
            .to_string();
        assert!(e.ends_with("did you mean `max_safety_regressions`?"), "{e}");
        // A [check] key or value is pointed at on its own line.
        let e = plan("[check]\n# budgets\nmax_safety_regresions = 0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("at line 3"), "{e}");
        let e = plan("[check]\nmax_safety_regressions = 0\nmin_turns = \"20\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("at line 3") && e.contains("expected a whole number >= 0"),
            "{e}"
        );
        let e = plan("[check]\nmin_turns = -1\n").unwrap_err().to_string();
        assert!(e.contains("expected a whole number >= 0"), "{e}");
        let p = plan("[check]\nmin_turns = 7\nmin_skip_rate = 1\n").unwrap();
        assert_eq!(p.check.limits.len(), 2);
        // Nothing close: no guess.
        let e = plan("colour = 1").unwrap_err().to_string();
        assert!(!e.contains("did you mean"), "{e}");
    }

    /// The table a config writer gives a variant's own deployment reads
    /// back as that deployment (keywords nested, in order); none for a
    /// variant of [deployment].
    #[test]
    fn a_variant_s_deployment_table_reads_back_as_its_deployment() {
        let base = "[deployment]\nintent_filter_mode = \"observe\"\n";
        let p = plan(&format!("{base}[variants.prod]\n[variants.x]\nmetacognition_selective_gate = true\n[variants.x.deployment]\nintent_filter_mode = \"off\"\nhistory = \"conversation\"\n[variants.x.deployment.tool_trigger_keywords]\nsearch = [\"find\"]\nbook = [\"reserve\"]\n")).unwrap();
        let x = &p.variants[1];
        assert_eq!(p.variants[0].deployment_toml("y", &p.deployment), "");
        let written = format!(
            "{base}[variants.prod]\n[variants.y]\n{}{}",
            toml::to_string(&x.config).unwrap(),
            x.deployment_toml("y", &p.deployment)
        );
        let back = plan(&written).unwrap();
        assert_eq!(back.variants[1].deployment, x.deployment, "{written}");
        assert_eq!(
            back.variants[1]
                .deployment
                .as_ref()
                .unwrap()
                .tool_trigger_keywords[0]
                .0,
            "search"
        );
    }

    /// A deployment setting in a variant (or at the top level) is told
    /// where it goes; in [deployment] it is read.
    #[test]
    fn a_deployment_key_elsewhere_says_where_it_goes() {
        for text in [
            "[variants.a]\nintent_filter_mode = \"off\"\n",
            "history = \"conversation\"\n",
        ] {
            let e = plan(text).unwrap_err().to_string();
            assert!(e.contains("goes in the [deployment] table"), "{e}");
            assert!(!e.contains("did you mean"), "{e}");
        }
        let p = plan("[deployment]\nintent_filter_mode = \"observe\"\n").unwrap();
        assert!(p.deployment.intent_on());
        let e = plan("[deployment]\nintent_filter_mod = \"observe\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.ends_with("did you mean `intent_filter_mode`?"), "{e}");
    }

    #[test]
    fn threshold_out_of_range_is_refused() {
        let e = plan("metacognition_confidence_threshold = 1.5")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("metacognition_confidence_threshold must be in [0, 1]"),
            "{e}"
        );
    }

    #[test]
    fn variants_keep_their_order_and_share_top_level_keys() {
        let p = plan(
            "read_only_tools = [\"search_docs\"]\nbaseline = \"old\"\n[variants.new]\nmetacognition_selective_gate = true\n[variants.old]\n",
        )
        .unwrap();
        assert_eq!(p.variants[0].name, "new");
        assert_eq!(p.variants[1].name, "old");
        assert_eq!(p.baseline, 1);
        assert_eq!(
            p.variants[1].config.read_only_tools,
            vec!["search_docs".to_string()]
        );
        assert!(plan("baseline = \"nope\"")
            .unwrap_err()
            .to_string()
            .contains("not a variant"));
    }

    /// #45: `production` names the gate that produced the traffic, the
    /// baseline unless it is set; a name that is no variant is refused on
    /// its line.
    #[test]
    fn production_names_a_variant_and_defaults_to_the_baseline() {
        let p = plan("baseline = \"legacy\"\n").unwrap();
        assert_eq!((p.production, p.production()), (None, 0));
        let p = plan("baseline = \"legacy\"\nproduction = \"smart\"\n").unwrap();
        assert_eq!((p.baseline, p.production()), (0, 1));
        let e = plan("baseline = \"legacy\"\nproduction = \"smrt\"\n").unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
        assert!(
            e.to_string()
                .contains("production \"smrt\" is not a variant"),
            "{e}"
        );
        let mut bad = plan("").unwrap();
        bad.production = Some(2);
        assert!(bad.validate().is_err());
    }

    /// Names out of alphabetical order, so a sorted map cannot pass.
    #[test]
    fn the_first_written_variant_is_the_default_baseline() {
        let p = plan(
            "[variants.zeta]\n[variants.legacy]\n[variants.alpha]\nmetacognition_selective_gate = true\n",
        )
        .unwrap();
        let names: Vec<&str> = p.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["zeta", "legacy", "alpha"]);
        assert_eq!(p.baseline, 0);
        let c = ConfigFile::parse(
            r#"{"variants": {"zeta": {}, "alpha": {}}}"#,
            Path::new("c.json"),
        )
        .unwrap();
        assert_eq!(c.plan().unwrap().variants[0].name, "zeta");
    }

    #[test]
    fn json_configs_work_too() {
        let c = ConfigFile::parse(
            r#"{"metacognition_selective_gate": true}"#,
            Path::new("c.json"),
        )
        .unwrap();
        assert_eq!(c.metacognition_selective_gate, Some(true));
        assert!(ConfigFile::parse(r#"{"bogus": 1}"#, Path::new("c.json")).is_err());
    }
}
