//! A sweep's grid: the product of the `[sweep]` axes as variants, named by
//! their values (`sel=on/ro=search_docs+get_order/ack=builtin+1`,
//! `sel=off/thr=0.55`; a value with no short spelling by its place,
//! `#2`). An axis that cannot change a decision of a variant's
//! gate is not multiplied there: the threshold only matters with the
//! selective gate off, read-only tools and ack patterns only with it on
//! (see the spec's "The decision"); the sensitive tags matter to both.
//! Deployment keys (`[sweep.deployment]`) change what imported traffic is
//! derived as: the draft, the intent verdict, the findings and the calls,
//! which only the smart gate reads, so they multiply its variants alone.

use crate::config::{ConfigError, ConfigFile, FrameworkConfig, Plan, SweepTable, Variant};
use crate::deployment::{Deployment, DeploymentLayer};

/// The most variants a grid may make.
pub const MAX_VARIANTS: usize = 1000;

/// A gate key a sweep can vary, in the order names and columns list them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    SelectiveGate,
    Threshold,
    SensitiveTags,
    ReadOnlyTools,
    AckPatterns,
    /// A deployment key, by its place in [`Deployment::KEYS`].
    Deployment(usize),
}

/// The deployment keys as a sweep names them (`[sweep.deployment]`, in
/// [`Deployment::KEYS`] order).
const DEPLOYMENT_NAMES: [&str; 8] = [
    "deployment.intent_filter_mode",
    "deployment.tool_routing_mode",
    "deployment.fabrication_check_mode",
    "deployment.fabrication_refuse_min_confidence",
    "deployment.activation_log_mode",
    "deployment.identifier_keys",
    "deployment.tool_trigger_keywords",
    "deployment.history",
];

/// Their short names in variant names.
const DEPLOYMENT_SHORT: [&str; 8] = [
    "intent", "routing", "fab", "refuse", "actlog", "ids", "kw", "history",
];

impl Key {
    pub const ALL: [Key; 5] = [
        Key::SelectiveGate,
        Key::Threshold,
        Key::SensitiveTags,
        Key::ReadOnlyTools,
        Key::AckPatterns,
    ];

    /// The config key.
    pub fn name(self) -> &'static str {
        match self {
            Key::SelectiveGate => "metacognition_selective_gate",
            Key::Threshold => "metacognition_confidence_threshold",
            Key::SensitiveTags => "metacognition_sensitive_tags",
            Key::ReadOnlyTools => "read_only_tools",
            Key::AckPatterns => "metacognition_trivial_ack_patterns",
            Key::Deployment(i) => DEPLOYMENT_NAMES[i],
        }
    }

    /// Its short name in variant names.
    pub fn short(self) -> &'static str {
        match self {
            Key::SelectiveGate => "sel",
            Key::Threshold => "thr",
            Key::SensitiveTags => "tags",
            Key::ReadOnlyTools => "ro",
            Key::AckPatterns => "ack",
            Key::Deployment(i) => DEPLOYMENT_SHORT[i],
        }
    }

    /// Whether the key can change a decision of the gate with the
    /// selective flag `on`.
    pub fn applies(self, on: bool) -> bool {
        match self {
            Key::SelectiveGate | Key::SensitiveTags => true,
            Key::Threshold => !on,
            Key::ReadOnlyTools | Key::AckPatterns | Key::Deployment(_) => on,
        }
    }

    /// Why the key is not multiplied under the flag `on`.
    fn why_not(self, on: bool) -> &'static str {
        match (self, on) {
            (Key::Threshold, true) => "the smart gate does not look at confidence",
            _ => "the legacy gate looks only at confidence and sensitive hits",
        }
    }
}

/// One value of an axis.
#[derive(Clone, Debug, PartialEq)]
pub enum Setting {
    Flag(bool),
    Number(f64),
    List(Vec<String>),
    /// A deployment key's value: a layer that sets it alone.
    Deployment(DeploymentLayer),
}

impl Setting {
    /// The value as the config spells it.
    fn describe(&self) -> String {
        match self {
            Setting::Flag(b) => b.to_string(),
            Setting::Number(x) => x.to_string(),
            Setting::List(l) => serde_json::to_string(l).expect("strings serialize"),
            Setting::Deployment(l) => layer_value(l).to_string(),
        }
    }

    /// The value as a variant name shows it (None: no short spelling).
    fn label(&self, key: Key) -> Option<String> {
        const SHORT: usize = 40;
        let plain = |s: &str| {
            s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
        };
        match (key, self) {
            (_, Setting::Flag(b)) => Some(if *b { "on" } else { "off" }.to_string()),
            (_, Setting::Number(x)) => Some(x.to_string()),
            // Regexes have no short spelling: named by what they add to
            // symfonic's built-ins.
            (Key::AckPatterns, Setting::List(l)) => {
                let builtins = crate::config::BUILTIN_ACK_PATTERNS;
                let extends =
                    l.len() >= builtins.len() && l.iter().zip(builtins).all(|(a, b)| a == b);
                Some(match (l.is_empty(), extends) {
                    (true, _) => "builtin".to_string(),
                    (false, true) => format!("builtin+{}", l.len() - builtins.len()),
                    (false, false) => format!("{}-patterns", l.len()),
                })
            }
            (_, Setting::Deployment(l)) => match layer_value(l) {
                serde_json::Value::String(s) => Some(s),
                serde_json::Value::Number(x) => Some(x.to_string()),
                serde_json::Value::Array(a) => {
                    let l: Option<Vec<String>> =
                        a.iter().map(|x| x.as_str().map(str::to_string)).collect();
                    Setting::List(l?).label(key)
                }
                _ => None,
            },
            (_, Setting::List(l)) if l.is_empty() => Some("none".to_string()),
            (_, Setting::List(l)) => {
                let s = l.join("+");
                (s.len() <= SHORT && l.iter().all(|x| !x.is_empty() && plain(x))).then_some(s)
            }
        }
    }

    fn apply(&self, key: Key, c: &mut FrameworkConfig, d: &mut Deployment) {
        match (key, self) {
            (Key::Deployment(_), Setting::Deployment(l)) => *d = l.apply(d),
            (Key::SelectiveGate, Setting::Flag(b)) => c.metacognition_selective_gate = *b,
            (Key::Threshold, Setting::Number(x)) => c.metacognition_confidence_threshold = *x,
            (Key::SensitiveTags, Setting::List(l)) => c.metacognition_sensitive_tags = l.clone(),
            (Key::ReadOnlyTools, Setting::List(l)) => c.read_only_tools = l.clone(),
            (Key::AckPatterns, Setting::List(l)) => {
                c.metacognition_trivial_ack_patterns = l.clone()
            }
            (k, s) => unreachable!("axis {} holds {s:?}", k.name()),
        }
    }
}

/// The one value a sweep's deployment layer sets, as JSON.
fn layer_value(l: &DeploymentLayer) -> serde_json::Value {
    let v = serde_json::to_value(l).expect("a layer serializes");
    v.as_object()
        .and_then(|m| m.values().next().cloned())
        .unwrap_or_default()
}

/// One swept key with its values, in the order written.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    pub key: Key,
    pub values: Vec<Setting>,
}

impl Axis {
    /// Each value's part of a variant name: `thr=0.55`; by its place
    /// (`ack=#2`, from 1) when a value has no short spelling or two
    /// values would read the same.
    pub fn labels(&self) -> Vec<String> {
        let short: Option<Vec<String>> = self.values.iter().map(|v| v.label(self.key)).collect();
        let distinct = |l: &Vec<String>| {
            let mut seen = std::collections::BTreeSet::new();
            l.iter().all(|x| seen.insert(x))
        };
        let labels = match short {
            Some(l) if distinct(&l) => l,
            _ => (1..=self.values.len()).map(|i| format!("#{i}")).collect(),
        };
        labels
            .into_iter()
            .map(|l| format!("{}={l}", self.key.short()))
            .collect()
    }
}

/// The variants of a sweep, and what was not multiplied (and why).
#[derive(Clone, Debug, PartialEq)]
pub struct Grid {
    pub axes: Vec<Axis>,
    pub variants: Vec<Variant>,
    pub notes: Vec<String>,
}

/// The axes `[sweep]` names, in [`Key::ALL`] order; each must hold at
/// least one value and no value twice.
fn axes(t: &SweepTable) -> Result<Vec<Axis>, ConfigError> {
    let lists = |v: &Option<Vec<Vec<String>>>| {
        v.as_ref()
            .map(|v| v.iter().cloned().map(Setting::List).collect::<Vec<_>>())
    };
    let found = [
        t.metacognition_selective_gate
            .as_ref()
            .map(|v| v.iter().map(|b| Setting::Flag(*b)).collect::<Vec<_>>()),
        t.metacognition_confidence_threshold
            .as_ref()
            .map(|v| v.iter().map(|x| Setting::Number(*x)).collect()),
        lists(&t.metacognition_sensitive_tags),
        lists(&t.read_only_tools),
        lists(&t.metacognition_trivial_ack_patterns),
    ];
    let gate = Key::ALL.into_iter().zip(found);
    let deployment = t.deployment.iter().flat_map(|d| d.axes()).map(|(k, v)| {
        let i = Deployment::KEYS.iter().position(|e| *e == k);
        let values = v.into_iter().map(Setting::Deployment).collect();
        (Key::Deployment(i.expect("a deployment key")), Some(values))
    });
    let mut out = Vec::new();
    for (key, values) in gate.chain(deployment) {
        let Some(values) = values else { continue };
        if values.is_empty() {
            return Err(ConfigError::value(format!(
                "[sweep] {}: give at least one value, or leave the key out",
                key.name()
            )));
        }
        if values.len() > MAX_VARIANTS {
            return Err(ConfigError::value(format!(
                "[sweep] {}: {} values; a grid holds at most {MAX_VARIANTS} variants",
                key.name(),
                values.len()
            )));
        }
        if let Some(i) = (1..values.len()).find(|&i| values[..i].contains(&values[i])) {
            return Err(ConfigError::value(format!(
                "[sweep] {}: the value {} is listed twice",
                key.name(),
                values[i].describe()
            )));
        }
        out.push(Axis { key, values });
    }
    if out.is_empty() {
        return Err(ConfigError::value(
            "[sweep] names no key: give gate keys with lists of values, e.g. metacognition_confidence_threshold = [0.5, 0.6, 0.7], or deployment keys in [sweep.deployment], e.g. intent_filter_mode = [\"observe\", \"off\"]",
        ));
    }
    Ok(out)
}

/// The selective flag's values: the swept ones (with their name part),
/// else the shared setting alone.
fn flag_values(axes: &[Axis], shared: &FrameworkConfig) -> Vec<(Option<String>, bool)> {
    match axes.iter().find(|a| a.key == Key::SelectiveGate) {
        Some(a) => a
            .values
            .iter()
            .zip(a.labels())
            .map(|(v, l)| (Some(l), matches!(v, Setting::Flag(true))))
            .collect(),
        None => vec![(None, shared.metacognition_selective_gate)],
    }
}

/// The variants under one value of the flag: the product of the axes that
/// apply, in [`Key::ALL`] order and then the deployment's, the last axis
/// varying fastest. A variant's deployment is kept only where it differs
/// from `base`.
fn under_flag(
    axes: &[Axis],
    (shared, base): (&FrameworkConfig, &Deployment),
    (at, on): (Option<&str>, bool),
) -> Vec<Variant> {
    let mut config = shared.clone();
    config.metacognition_selective_gate = on;
    let first = Variant {
        name: at.unwrap_or_default().to_string(),
        config,
        deployment: None,
    };
    let mut out = vec![first];
    for axis in axes
        .iter()
        .filter(|a| a.key != Key::SelectiveGate && a.key.applies(on))
    {
        let labels = axis.labels();
        out = out
            .iter()
            .flat_map(|v| {
                axis.values.iter().zip(&labels).map(move |(s, part)| {
                    let mut config = v.config.clone();
                    let mut d = v.deployment.clone().unwrap_or_else(|| base.clone());
                    s.apply(axis.key, &mut config, &mut d);
                    let name = match v.name.is_empty() {
                        true => part.clone(),
                        false => format!("{}/{part}", v.name),
                    };
                    let deployment = (d != *base).then_some(d);
                    Variant {
                        name,
                        config,
                        deployment,
                    }
                })
            })
            .collect();
    }
    out
}

/// How many variants the grid makes (before any is built).
fn count(axes: &[Axis], flags: &[(Option<String>, bool)]) -> usize {
    flags
        .iter()
        .map(|&(_, on)| {
            axes.iter()
                .filter(|a| a.key != Key::SelectiveGate && a.key.applies(on))
                .fold(1usize, |n, a| n.saturating_mul(a.values.len()))
        })
        .fold(0usize, usize::saturating_add)
}

/// What is not multiplied, once per key and flag value.
fn notes(axes: &[Axis], flags: &[(Option<String>, bool)]) -> Vec<String> {
    let mut notes = Vec::new();
    for &(_, on) in flags {
        for a in axes.iter().filter(|a| !a.key.applies(on)) {
            notes.push(format!(
                "{} is not multiplied with metacognition_selective_gate = {on}: {}",
                a.key.name(),
                a.key.why_not(on)
            ));
        }
    }
    notes
}

impl Grid {
    /// The grid of `[sweep]` over the shared settings and the deployment
    /// `base` (`[deployment]`).
    pub fn new(
        t: &SweepTable,
        shared: &FrameworkConfig,
        base: &Deployment,
    ) -> Result<Grid, ConfigError> {
        let axes = axes(t)?;
        let flags = flag_values(&axes, shared);
        let deployment_axis = axes.iter().find(|a| matches!(a.key, Key::Deployment(_)));
        if let (Some(a), false) = (deployment_axis, flags.iter().any(|f| f.1)) {
            return Err(ConfigError::value(format!(
                "[sweep] {} varies the smart gate's variants only (the legacy gate reads nothing a deployment derives), and this sweep has none: add metacognition_selective_gate = [true] to [sweep], or set it at the top level",
                a.key.name()
            )));
        }
        let n = count(&axes, &flags);
        if n > MAX_VARIANTS {
            return Err(ConfigError::value(format!(
                "[sweep] makes {n} variants; at most {MAX_VARIANTS} are evaluated in one pass: drop values, or split the sweep into several configs"
            )));
        }
        let mut variants: Vec<Variant> = flags
            .iter()
            .flat_map(|(at, on)| under_flag(&axes, (shared, base), (at.as_deref(), *on)))
            .collect();
        for v in &mut variants {
            if v.name.is_empty() {
                v.name = "sweep".into();
            }
            v.config
                .validate()
                .map_err(|e| ConfigError::value(format!("[sweep] variant {}: {e}", v.name)))?;
            if let Some(d) = &v.deployment {
                d.validate()
                    .map_err(|e| ConfigError::value(format!("[sweep] variant {}: {e}", v.name)))?;
            }
        }
        Ok(Grid {
            notes: notes(&axes, &flags),
            axes,
            variants,
        })
    }
}

/// A sweep's plan: the config's variants (its baseline among them) and
/// then the grid's, with what the grid did not multiply.
pub fn sweep_plan(file: &ConfigFile) -> Result<(Plan, Vec<String>), ConfigError> {
    sweep_plan_of(file).map_err(|e| file.locate(e))
}

fn sweep_plan_of(file: &ConfigFile) -> Result<(Plan, Vec<String>), ConfigError> {
    let Some(table) = &file.sweep else {
        return Err(ConfigError::value(
            "the config has no [sweep] table: add one with gate keys and lists of values, e.g.\n[sweep]\nmetacognition_selective_gate = [false, true]\nmetacognition_confidence_threshold = [0.5, 0.6, 0.7]",
        ));
    };
    let mut plan = file.plan()?;
    let grid = Grid::new(table, &file.shared_config(), &plan.deployment)?;
    if let Some(v) = grid
        .variants
        .iter()
        .find(|v| plan.variants.iter().any(|p| p.name == v.name))
    {
        return Err(ConfigError::value(format!(
            "[variants] already has a variant named {:?}, a name the sweep gives: rename it",
            v.name
        )));
    }
    if plan.variants.len() + grid.variants.len() > MAX_VARIANTS {
        return Err(ConfigError::value(format!(
            "[sweep] and [variants] make {} variants; at most {MAX_VARIANTS} are evaluated in one pass",
            plan.variants.len() + grid.variants.len()
        )));
    }
    let mut notes = grid.notes;
    for v in grid.variants {
        match plan.variants.iter().find(|p| same_variant(p, &v)) {
            Some(p) => notes.push(format!(
                "sweep variant {} is the same gate as {} (sensitive tags and read-only tools are sets; a key the gate does not look at is no difference): left out",
                v.name, p.name
            )),
            None => plan.variants.push(v),
        }
    }
    plan.check_deployments()?;
    Ok((plan, notes))
}

/// Whether two variants decide every turn alike: the same gate, and with
/// the smart gate, the same deployment (the legacy gate reads nothing a
/// deployment derives).
fn same_variant(a: &Variant, b: &Variant) -> bool {
    same_gate(&a.config, &b.config)
        && (!a.config.metacognition_selective_gate || a.deployment == b.deployment)
}

/// Whether two configs decide every turn alike, with the same reasons:
/// tags and read-only tools are compared as sets (symfonic looks them up),
/// and only the keys the gate looks at are compared (the threshold with
/// the flag off, read-only tools and ack patterns with it on). Ack
/// patterns stay a list: which one matches first names the matched text.
pub fn same_gate(a: &FrameworkConfig, b: &FrameworkConfig) -> bool {
    fn set(v: &[String]) -> std::collections::BTreeSet<&String> {
        v.iter().collect()
    }
    let on = a.metacognition_selective_gate;
    on == b.metacognition_selective_gate
        && set(&a.metacognition_sensitive_tags) == set(&b.metacognition_sensitive_tags)
        && (on || a.metacognition_confidence_threshold == b.metacognition_confidence_threshold)
        && (!on
            || (set(&a.read_only_tools) == set(&b.read_only_tools)
                && a.metacognition_trivial_ack_patterns == b.metacognition_trivial_ack_patterns))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A grid point that is a [variants] entry's gate, or an earlier point's
    /// with the tags in another order, is left out with a note.
    #[test]
    fn equivalent_variants_are_evaluated_once() {
        let file = ConfigFile::parse(
            r#"
            metacognition_sensitive_tags = ["pii"]
            [variants.prod]
            metacognition_selective_gate = false
            [sweep]
            metacognition_confidence_threshold = [0.5, 0.6]
            metacognition_sensitive_tags = [["pii", "card"], ["card", "pii"], ["pii"], ["pii", "pii"]]
            "#,
            std::path::Path::new("sweep.toml"),
        )
        .unwrap();
        let (plan, notes) = sweep_plan(&file).unwrap();
        let names: Vec<&str> = plan.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "prod",
                "thr=0.5/tags=pii+card",
                "thr=0.5/tags=pii",
                "thr=0.6/tags=pii+card"
            ],
            "{notes:?}"
        );
        let left: Vec<&String> = notes.iter().filter(|n| n.contains("left out")).collect();
        assert_eq!(left.len(), 5, "{left:?}");
        assert!(left
            .iter()
            .any(|n| n.contains("thr=0.6/tags=pii is the same gate as prod")));
        assert!(!same_gate(
            &FrameworkConfig {
                metacognition_selective_gate: true,
                ..Default::default()
            },
            &FrameworkConfig::default()
        ));
    }

    /// Deployment axes multiply the smart gate's variants only, are named
    /// by their values (a keyword table by its place), keep a deployment
    /// only where it differs from [deployment], and a point of another
    /// deployment is not "the same gate" as a variant with the same keys.
    #[test]
    fn deployment_axes_make_variants_of_their_own_deployment() {
        let file = ConfigFile::parse(
            r#"
            [variants.prod]
            metacognition_selective_gate = false
            [variants.smart]
            metacognition_selective_gate = true
            [deployment]
            intent_filter_mode = "observe"
            [sweep]
            metacognition_selective_gate = [false, true]
            [sweep.deployment]
            intent_filter_mode = ["observe", "off"]
            history = ["none", "conversation"]
            tool_trigger_keywords = [{}, {search = ["find"]}]
            "#,
            std::path::Path::new("sweep.toml"),
        )
        .unwrap();
        let (plan, notes) = sweep_plan(&file).unwrap();
        let names: Vec<&str> = plan.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names.len(), 2 + 7, "{names:?} {notes:?}");
        assert_eq!(names[2], "sel=on/intent=observe/kw=#1/history=conversation");
        assert_eq!(names[8], "sel=on/intent=off/kw=#2/history=conversation");
        // The legacy point is prod's gate; the smart point of [deployment]'s
        // own values is smart's.
        assert!(
            notes
                .iter()
                .any(|n| n.contains("sel=off is the same gate as prod")),
            "{notes:?}"
        );
        assert!(notes
            .iter()
            .any(|n| n
                .contains("sel=on/intent=observe/kw=#1/history=none is the same gate as smart")));
        assert!(notes.iter().any(|n| n.contains(
            "deployment.history is not multiplied with metacognition_selective_gate = false"
        )));
        let off = &plan.variants[8];
        let d = off.deployment.as_ref().unwrap();
        assert_eq!(d.intent_filter_mode, crate::deployment::StageMode::Off);
        assert_eq!(d.history, crate::deployment::History::Conversation);
        assert_eq!(
            d.tool_trigger_keywords,
            [("search".to_string(), vec!["find".to_string()])]
        );
        let (distinct, of) = plan.deployments();
        assert_eq!(distinct.len(), 8);
        assert_eq!(of[..3], [0, 0, 1]);
    }

    /// A deployment axis with no smart gate to multiply is refused, as
    /// are more distinct deployments than one pass derives, and values
    /// listed twice.
    #[test]
    fn deployment_axes_that_cannot_be_swept_are_refused() {
        let legacy_only: SweepTable =
            toml::from_str("[deployment]\nhistory = [\"none\", \"conversation\"]").unwrap();
        let e = Grid::new(
            &legacy_only,
            &FrameworkConfig::default(),
            &Deployment::default(),
        );
        assert!(e
            .unwrap_err()
            .to_string()
            .contains("add metacognition_selective_gate = [true]"));
        let many = ConfigFile::parse(
            "[sweep]\nmetacognition_selective_gate = [true]\n[sweep.deployment]\nfabrication_refuse_min_confidence = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]\nhistory = [\"none\", \"conversation\"]\n",
            std::path::Path::new("many.toml"),
        )
        .unwrap();
        let e = sweep_plan(&many).unwrap_err().to_string();
        assert!(
            e.contains("run with 18 distinct deployments") && e.contains("at most 16"),
            "{e}"
        );
        // Values listed twice, and a deployment axis alone, as for gate keys.
        let twice: SweepTable = toml::from_str(
            "metacognition_selective_gate = [true]\n[deployment]\nhistory = [\"none\", \"none\"]",
        )
        .unwrap();
        let e = Grid::new(&twice, &FrameworkConfig::default(), &Deployment::default());
        assert!(e
            .unwrap_err()
            .to_string()
            .contains("deployment.history: the value \"none\" is listed twice"));
    }

    /// Values are named by what they are; a value with no short spelling,
    /// or two that would read the same, by their place in the axis.
    #[test]
    fn variants_are_named_by_their_values() {
        let names = |text: &str| -> Vec<String> {
            grid(text)
                .unwrap()
                .variants
                .into_iter()
                .map(|v| v.name)
                .collect()
        };
        let builtins: Vec<String> = crate::config::BUILTIN_ACK_PATTERNS
            .iter()
            .map(|p| format!("{p:?}"))
            .collect();
        let extended = format!("[{}, \"x\"]", builtins.join(", "));
        assert_eq!(
            names(&format!(
                "metacognition_selective_gate = [true]\nmetacognition_trivial_ack_patterns = [[], {extended}]"
            )),
            ["sel=on/ack=builtin", "sel=on/ack=builtin+1"]
        );
        // Two lists of one pattern each read the same: by place.
        assert_eq!(
            names("metacognition_selective_gate = [true]\nmetacognition_trivial_ack_patterns = [[\"a\"], [\"b\"]]"),
            ["sel=on/ack=#1", "sel=on/ack=#2"]
        );
        // A name that is not plain text (a space, a slash): by place.
        assert_eq!(
            names("metacognition_sensitive_tags = [[\"pii\"], [\"a b\"]]"),
            ["tags=#1", "tags=#2"]
        );
        assert_eq!(
            names("metacognition_sensitive_tags = [[], [\"pii\", \"phi\"]]"),
            ["tags=none", "tags=pii+phi"]
        );
    }

    fn grid(toml_text: &str) -> Result<Grid, ConfigError> {
        let t: SweepTable = toml::from_str(toml_text).unwrap();
        Grid::new(&t, &FrameworkConfig::default(), &Deployment::default())
    }

    /// The issue's example: thresholds multiply only the legacy gate,
    /// read-only tools and ack patterns only the smart gate.
    #[test]
    fn axes_multiply_only_where_they_can_change_a_decision() {
        let g = grid(
            r#"
            metacognition_selective_gate = [false, true]
            metacognition_confidence_threshold = [0.5, 0.55, 0.6, 0.65, 0.7]
            read_only_tools = [[], ["search_docs", "get_order"], ["search_docs", "get_order", "list_items"]]
            metacognition_trivial_ack_patterns = [[], ["\\b(grazie|perfetto)\\b"]]
            "#,
        )
        .unwrap();
        let names: Vec<&str> = g.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names.len(), 5 + 3 * 2);
        assert_eq!(
            &names[..6],
            [
                "sel=off/thr=0.5",
                "sel=off/thr=0.55",
                "sel=off/thr=0.6",
                "sel=off/thr=0.65",
                "sel=off/thr=0.7",
                "sel=on/ro=none/ack=builtin"
            ]
        );
        assert_eq!(
            names[10],
            "sel=on/ro=search_docs+get_order+list_items/ack=1-patterns"
        );
        let v = &g.variants[10].config;
        assert!(v.metacognition_selective_gate);
        assert_eq!(v.read_only_tools.len(), 3);
        assert_eq!(
            v.metacognition_trivial_ack_patterns,
            vec!["\\b(grazie|perfetto)\\b"]
        );
        assert_eq!(
            g.variants[3].config.metacognition_confidence_threshold,
            0.65
        );
        assert_eq!(g.notes.len(), 3, "{:?}", g.notes);
        assert!(g.notes[0].starts_with(
            "read_only_tools is not multiplied with metacognition_selective_gate = false"
        ));
        assert!(g.notes[2].contains("the smart gate does not look at confidence"));
    }

    #[test]
    fn bad_grids_are_refused_with_the_reason() {
        let e = grid("metacognition_confidence_threshold = []")
            .unwrap_err()
            .to_string();
        assert!(e.contains("give at least one value"), "{e}");
        let e = grid("metacognition_confidence_threshold = [0.5, 0.5]")
            .unwrap_err()
            .to_string();
        assert!(e.contains("the value 0.5 is listed twice"), "{e}");
        let e = grid("").unwrap_err().to_string();
        assert!(e.contains("names no key"), "{e}");
        let e = grid("metacognition_confidence_threshold = [1.5]")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "[sweep] variant thr=1.5: metacognition_confidence_threshold must be in [0, 1]"
            ),
            "{e}"
        );
        let many: Vec<String> = (0..40).map(|i| format!("[\"t{i}\"]")).collect();
        let e = grid(&format!(
            "metacognition_confidence_threshold = [{}]\nmetacognition_sensitive_tags = [{}]",
            (0..30)
                .map(|i| format!("0.{i:02}"))
                .collect::<Vec<_>>()
                .join(", "),
            many.join(", ")
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("makes 1200 variants; at most 1000"), "{e}");
    }
}
