//! The options of the commands that run a replay, declared once: each
//! one's [`Setting`] (which yields the command line's flag and the Python
//! keyword), the kind of value and its range, its default and its help
//! line ([`Decl`]), and the sets of them each command takes ([`REPLAY`],
//! [`SWEEP`], [`RUN`]). Every setting a message names is a [`Setting`]; the
//! other commands' options are not declared here yet. The
//! command line's arguments, the Python package's keyword reader and its
//! typed stubs are all made from these declarations, so an option added
//! here reaches both front ends, with the same default and the same
//! refusal, and an engine reads it from the request's [`Values`].
//!
//! This is the bottom of the crate: the names the values take (input
//! formats, decision modes, table formats) are declared here too, and the
//! rest of the crate reads them.

use std::fmt;
use std::path::PathBuf;

/// Declares the settings: each one's variant and its flag.
macro_rules! settings {
    ($($(#[$doc:meta])* $v:ident = $flag:literal,)*) => {
        /// A setting of a request, as a message from below the commands
        /// names it: a part of a [`Said`], which each front end spells its
        /// own way, the command line as its flag (`--group-by`), the Python
        /// package as its keyword (`group_by`, [`Setting::keyword`]). It has
        /// no `Display`: a message holds it as data ([`said!`](crate::said)),
        /// and a file's text names its flag ([`Setting::flag`]). Code below
        /// the commands writes a `Setting`, never a flag's text: a test
        /// holds it to that.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Setting {
            $($(#[$doc])* $v,)*
        }

        impl Setting {
            /// Every setting, in the order declared.
            pub const ALL: &'static [Setting] = &[$(Setting::$v,)*];

            /// The command line's flag.
            pub const fn flag(self) -> &'static str {
                match self {
                    $(Setting::$v => $flag,)*
                }
            }
        }
    };
}

settings! {
    Out = "--out",
    Partial = "--partial",
    Force = "--force",
    GroupBy = "--group-by",
    ScopeColumns = "--scope-columns",
    SkipInvalid = "--skip-invalid",
    MaxLineBytes = "--max-line-bytes",
    Decisions = "--decisions",
    Format = "--format",
    MaxAckShare = "--max-ack-share",
    From = "--from",
    Mix = "--mix",
    Procedure = "--procedure",
    Variant = "--variant",
    Plan = "--plan",
    Threads = "--threads",
    Config = "--config",
    AssumeMissingAtRandom = "--assume-missing-at-random",
    MinSupport = "--min-support",
    MinLabelled = "--min-labelled",
    MaxRegressionRate = "--max-regression-rate",
    State = "--state",
    Merge = "--merge",
    By = "--by",
    ReleaseAt = "--release-at",
    ReleaseField = "--release-field",
    Timezone = "--timezone",
    Quiet = "--quiet",
    Label = "--label",
    Confidence = "--confidence",
    FidelityShare = "--fidelity-share",
    MaxSkipRegressionRate = "--max-skip-regression-rate",
    Delta = "--delta",
    MinLabelCoverage = "--min-label-coverage",
    MaxFidelityGap = "--max-fidelity-gap",
    /// `mine`'s one variant (`variant` in Python), where `check` takes a
    /// list (`variants`).
    MinedVariant = "--variant",
    MaxCallsPerDay = "--max-calls-per-day",
    MaxHarmfulPer1k = "--max-harmful-per-1k",
    Salt = "--salt",
    Audit = "--audit",
    LegacyProduction = "--legacy-production",
    Days = "--days",
    Window = "--window",
    Strata = "--strata",
    FalseAlarmEvery = "--false-alarm-every",
    AlarmRise = "--alarm-rise",
    Seed = "--seed",
    /// `calibrate`'s `--no-held-out`, which Python says as what it turns
    /// off (`held_out=False`).
    NoHeldOut = "--no-held-out",
    BudgetFromVariant = "--budget-from-variant",
    Stress = "--stress",
    Shape = "--shape",
    Json = "--json",
    FailOnNewRegressions = "--fail-on-new-regressions",
    Markdown = "--markdown",
    NoAssumeMissingAtRandom = "--no-assume-missing-at-random",
}

impl Setting {
    /// The Python package's name for it: the keyword argument, the flag's
    /// name with `_` (`from_` for `--from`, a Python keyword; `variants`
    /// for `--variant`, which takes a list), or for `--partial` the
    /// function that writes a partial result.
    pub fn keyword(self) -> String {
        match self {
            Setting::From => "from_".to_string(),
            Setting::Variant => "variants".to_string(),
            Setting::Partial => "replay_partial".to_string(),
            // Python takes a number of days (or the flag's `7d`).
            Setting::Window => "window_days".to_string(),
            Setting::FalseAlarmEvery => "false_alarm_every_days".to_string(),
            Setting::NoHeldOut => "held_out".to_string(),
            s => s.flag()[2..].replace('-', "_"),
        }
    }

    /// The setting whose Python keyword is `keyword`.
    pub fn of_keyword(keyword: &str) -> Option<Setting> {
        Setting::ALL
            .iter()
            .copied()
            .find(|s| s.keyword() == keyword)
    }
}

/// A name that is not one of the choices (`--format xml`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownName {
    /// Where the name was given (`--format`).
    pub flag: Setting,
    /// The name given.
    pub got: String,
    /// The names that are allowed.
    pub expected: &'static [&'static str],
}

impl UnknownName {
    /// What follows the setting in the message: `"xml": give csv, parquet
    /// or both`.
    pub fn rest(&self) -> String {
        format!(" {:?}: give {}", self.got, one_of(self.expected))
    }
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.flag.flag(), self.rest())
    }
}

impl std::error::Error for UnknownName {}

/// `a, b or c`.
fn one_of(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// `got` as the one of `choices` whose name it is.
pub fn choose<T: Copy>(
    flag: Setting,
    got: &str,
    names: &'static [&'static str],
    choices: &[T],
) -> Result<T, UnknownName> {
    names
        .iter()
        .position(|n| *n == got)
        .map(|i| choices[i])
        .ok_or_else(|| UnknownName {
            flag,
            got: got.to_string(),
            expected: names,
        })
}

/// Declares an enum of named values: each variant, its name and its doc;
/// the one table the names, the parser and a flag's values come from.
macro_rules! names {
    (@help $help:literal) => { $help };
    (@help) => { "" };
    ($(#[$doc:meta])* $name:ident by $setting:ident { $($(#[$vdoc:meta])* $v:ident = $n:literal $(: $help:literal)?,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $v,)*
        }

        impl $name {
            /// Every value, in the order `--help` lists them.
            pub const ALL: &'static [$name] = &[$($name::$v,)*];

            /// The names, in the order of `ALL`.
            pub const NAMES: &'static [&'static str] = &[$($n,)*];

            /// What each does, in the order of `ALL` (empty where the
            /// flag's help says it).
            pub const HELP: &'static [&'static str] = &[$(names!(@help $($help)?),)*];

            /// The value's name, as the flag takes it.
            pub const fn name(self) -> &'static str {
                match self {
                    $($name::$v => $n,)*
                }
            }
        }

        impl std::str::FromStr for $name {
            type Err = UnknownName;

            fn from_str(s: &str) -> Result<$name, UnknownName> {
                choose(Setting::$setting, s, $name::NAMES, $name::ALL)
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                String::deserialize(d)?
                    .parse()
                    .map_err(serde::de::Error::custom)
            }
        }
    };
}

names! {
    /// What the tool reads (`--from`).
    InputFormat by From {
        /// The traffic format (the default).
        #[default]
        Traffic = "traffic",
        /// OpenAI-style chat transcripts, one conversation a line.
        OpenaiChat = "openai-chat",
        /// symfonic's OpenTelemetry traces as OTLP/JSON.
        Otlp = "otlp",
    }
}

names! {
    /// Which decision rows to keep (`--decisions`).
    DecisionsMode by Decisions {
        /// Every (turn, variant).
        #[default]
        All = "all",
        /// Only rows where the variant decides differently from the baseline.
        Changed = "changed",
        /// None (summary reports only).
        None = "none",
    }
}

names! {
    /// The files each report table is written as (`--format`).
    Format by Format {
        #[default]
        Csv = "csv",
        Parquet = "parquet",
        Both = "both",
    }
}

names! {
    /// Which traffic `synth` writes (`--mix`).
    Mix by Mix {
        /// Mostly English and ASCII.
        #[default]
        Default = "default",
        /// About half the drafts not ASCII: more languages and scripts,
        /// and accented names in answers.
        Multilingual = "multilingual",
    }
}

names! {
    /// What `synth` writes (`--shape`).
    Shape by Shape {
        /// critic-gate's traffic format.
        #[default]
        Traffic = "traffic",
        /// The same runs as chat transcripts, one conversation a line.
        OpenaiChat = "openai-chat",
    }
}

names! {
    /// How `calibrate` tests its family on the calibration part
    /// (`--procedure`).
    Procedure by Procedure {
        /// In the learn part's order, each at level delta, up to the first
        /// failure.
        #[default]
        FixedSequence = "fixed-sequence": "The learn part's order, each at delta, up to the first failure",
        /// Holm's step-down: the k-th smallest p-value at delta / (m - k + 1).
        Holm = "holm": "Holm's step-down over the family's p-values",
        /// Each at delta / m.
        Bonferroni = "bonferroni": "Each member at delta / m",
    }
}

impl DecisionsMode {
    /// Whether the rows hold every new skip (a new skip is a changed
    /// decision), so the summary's figures can be worked out from them.
    pub const fn keeps_new_skips(self) -> bool {
        match self {
            DecisionsMode::All | DecisionsMode::Changed => true,
            DecisionsMode::None => false,
        }
    }
}

impl Format {
    /// Whether the tables are written as CSV.
    pub const fn csv(self) -> bool {
        match self {
            Format::Csv | Format::Both => true,
            Format::Parquet => false,
        }
    }

    /// Whether the tables are written as Parquet.
    pub const fn parquet(self) -> bool {
        match self {
            Format::Parquet | Format::Both => true,
            Format::Csv => false,
        }
    }
}

/// The kind of value an option takes, with its range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// On when given (`--force`; `force=True`).
    Switch,
    /// A whole number, `min` or more.
    Count { min: u64 },
    /// A share of 1: above 0 (or from 0, with `zero`) and below 1 (or up
    /// to 1, with `one`).
    Share { zero: bool, one: bool },
    /// One of these names.
    Name(&'static [&'static str]),
    /// One of these names, each with what it does (`--procedure`).
    Described(&'static [&'static str], &'static [&'static str]),
    /// Off when given (`--no-held-out`); Python names what it turns off,
    /// on by default (`held_out=False` gives it).
    Without,
    /// Any text but the empty one.
    Text,
    /// A text the command checks itself, the empty one included: its
    /// refusal names the values it takes (`--strata`: the keys; `--audit`:
    /// the config's variants), where "give a non-empty text" would not.
    Key,
    /// A file's or a folder's path.
    Path,
    /// Names, one each time the flag is given (`--group-by`; a list).
    Repeated,
    /// Names, comma-separated (`--scope-columns a,b`; a list), where an
    /// empty one names none.
    Keys,
    /// A number, any (the command holds it to its range, and says why).
    Number,
    /// Days (`7d`) or weeks (`2w`), up to ten years; from Python, a
    /// number of days too.
    Days,
    /// Paths, one each time the flag is given (`--merge`; a list).
    Paths,
}

/// An option's default, as the declaration gives it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Preset {
    /// None: the option is absent unless given (a switch is off).
    Absent,
    Count(u64),
    Share(f64),
    Name(&'static str),
    /// The flag's text, as `--help` shows it (`7d`), read as any given.
    Text(&'static str),
    /// Absent unless given, and then the config decides: a switch whose
    /// opposite is a flag too (`--assume-missing-at-random`, over
    /// `[check]`'s key), which Python takes as True, False or None.
    Config,
}

/// One option, declared once: what each front end makes of it.
#[derive(Debug, PartialEq)]
pub struct Decl {
    pub setting: Setting,
    pub kind: Kind,
    pub default: Preset,
    /// The value's name in `--help` (`SHARE`); by default the flag's, in
    /// capitals.
    pub value_name: Option<&'static str>,
    /// The help line (`--help`, and the Python stub's comment).
    pub help: &'static str,
    /// Whether the Python package takes it (`--quiet` is the terminal's).
    pub python: bool,
}

/// A value an option was given (or its default).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Switch(bool),
    Count(u64),
    Share(f64),
    Name(&'static str),
    Text(String),
    Path(PathBuf),
    List(Vec<String>),
    /// A number, or a number of days.
    Number(f64),
    Paths(Vec<PathBuf>),
}

/// A value as a front end hands it over before it is checked: a Python
/// object's, or a flag's text.
#[derive(Clone, Debug, PartialEq)]
pub enum Given {
    Bool(bool),
    Int(i128),
    /// A whole number beyond `i128`, as its digits.
    Huge(String),
    Float(f64),
    Text(String),
    List(Vec<String>),
}

/// An option's value refused, as data: the setting, and what follows it
/// in the message (` "xml": give csv, parquet or both`, `: give a share
/// in (0, 1], got 2`). Each front end spells the setting its own way.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    pub setting: Setting,
    pub rest: String,
    /// Whether the value was of the wrong type (a text where a number
    /// goes: Python's `TypeError`), not out of range.
    pub wrong_type: bool,
}

impl Refusal {
    /// The message, with the setting spelled by `spell`.
    pub fn render(&self, spell: impl Fn(Setting) -> String) -> String {
        format!("{}{}", spell(self.setting), self.rest)
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.setting.flag(), self.rest)
    }
}

impl std::error::Error for Refusal {}

/// A message that names settings as data: text, and the settings (and
/// budgets) it names, in order. Each front end spells them its own way:
/// [`fmt::Display`] writes the command line's flags (`--group-by`), as do
/// the files a run writes; [`Said::python`] the Python package's keywords
/// (`group_by`). No front end rewrites a message's text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Said(Vec<Piece>);

/// A part of a [`Said`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    Setting(Setting),
    /// A name declared elsewhere with a flag and a keyword of its own (a
    /// release budget: `--max-safety-regressions`, `max_safety_regressions`).
    Named {
        long: &'static str,
        keyword: &'static str,
    },
}

impl Said {
    /// The message from its parts (what [`said!`](crate::said) makes).
    pub fn of(parts: Vec<Said>) -> Said {
        let mut out = Said::default();
        for p in parts {
            for piece in p.0 {
                out.push(piece);
            }
        }
        out
    }

    /// A name declared elsewhere with a flag (`--{long}`) and a keyword.
    pub fn named(long: &'static str, keyword: &'static str) -> Said {
        Said(vec![Piece::Named { long, keyword }])
    }

    /// A part that is text only.
    pub fn text(t: impl Into<String>) -> Said {
        Said(vec![Piece::Text(t.into())])
    }

    /// `piece` added at the end (text joins the text before it).
    pub fn push(&mut self, piece: Piece) {
        match (self.0.last_mut(), piece) {
            (Some(Piece::Text(t)), Piece::Text(more)) => t.push_str(&more),
            (_, Piece::Text(more)) if more.is_empty() => {}
            (_, p) => self.0.push(p),
        }
    }

    /// The message with each setting spelled by `setting` and each other
    /// name by `named` (given its flag's name and its keyword).
    pub fn render(
        &self,
        setting: impl Fn(Setting) -> String,
        named: impl Fn(&str, &str) -> String,
    ) -> String {
        let mut out = String::new();
        for p in &self.0 {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Setting(s) => out.push_str(&setting(*s)),
                Piece::Named { long, keyword } => out.push_str(&named(long, keyword)),
            }
        }
        out
    }

    /// The message as the Python package says it: each setting and name as
    /// its keyword.
    pub fn python(&self) -> String {
        self.render(Setting::keyword, |_, k| k.to_string())
    }

    /// Whether the message, as the command line says it, holds `text`.
    pub fn contains(&self, text: &str) -> bool {
        self.to_string().contains(text)
    }

    /// The settings and names it holds (for a test: that a message names a
    /// setting as data, not as text).
    pub fn pieces(&self) -> &[Piece] {
        &self.0
    }
}

impl fmt::Display for Said {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(|s| s.flag().to_string(), |l, _| format!("--{l}")))
    }
}

/// In a file (a partial result's rejects) a message is its text, as the
/// command line says it.
impl serde::Serialize for Said {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Said {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Said::text)
    }
}

impl From<String> for Said {
    fn from(t: String) -> Said {
        Said::text(t)
    }
}

impl From<&str> for Said {
    fn from(t: &str) -> Said {
        Said::text(t)
    }
}

impl From<UnknownName> for Said {
    fn from(u: UnknownName) -> Said {
        Said(vec![Piece::Setting(u.flag), Piece::Text(u.rest())])
    }
}

impl From<Refusal> for Said {
    fn from(r: Refusal) -> Said {
        Said(vec![Piece::Setting(r.setting), Piece::Text(r.rest)])
    }
}

/// One part of a [`said!`](crate::said) message, as it is given: a
/// [`Setting`] (or another name with a flag and a keyword: [`AsName`]) is
/// kept as data, anything else is its text.
pub struct Part<'a, T: ?Sized>(pub &'a T);

/// A part kept as a name (picked before [`AsText`] where both apply: the
/// method is found on the part itself before its reference).
pub trait AsName {
    fn said(&self) -> Said;
}

/// A part written as text.
pub trait AsText {
    fn said(&self) -> Said;
}

impl AsName for Part<'_, Setting> {
    fn said(&self) -> Said {
        Said(vec![Piece::Setting(*self.0)])
    }
}

impl AsName for Part<'_, Said> {
    fn said(&self) -> Said {
        self.0.clone()
    }
}

/// A borrowed message (a field matched by reference) is spliced in too,
/// not written as its text: a `Said` displays, and without this a
/// reference would take the text path.
impl AsName for Part<'_, &Said> {
    fn said(&self) -> Said {
        (*self.0).clone()
    }
}

impl AsName for Part<'_, &Setting> {
    fn said(&self) -> Said {
        Said(vec![Piece::Setting(**self.0)])
    }
}

impl<T: fmt::Display + ?Sized> AsText for &Part<'_, T> {
    fn said(&self) -> Said {
        Said::text(self.0.to_string())
    }
}

/// A message that names settings as data: `said!["replay: give ",
/// Setting::Out, " or ", Setting::Partial]`. Each part is a [`Setting`], a
/// [`Said`] or another name ([`AsName`]), kept as it is, or anything that
/// displays, kept as its text.
#[macro_export]
macro_rules! said {
    ($($part:expr),* $(,)?) => {{
        #[allow(unused_imports)]
        use $crate::options::{AsName as _, AsText as _};
        $crate::options::Said::of(vec![$((&$crate::options::Part(&$part)).said()),*])
    }};
}

/// A keyword no option of the command has: what was given, and the
/// keywords it takes (the nearest first when one is a typo of it).
#[derive(Clone, Debug, PartialEq)]
pub struct Unknown {
    pub given: String,
    pub known: Vec<String>,
}

impl fmt::Display for Unknown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown option {:?}; the options are {}",
            self.given,
            self.known.join(", ")
        )
    }
}

impl Decl {
    /// The flag's text as the option's value (the command line's; a
    /// switch, a count and the lists are parsed by the front end's own
    /// parser). The error is what follows the flag in the message.
    pub fn parse(&'static self, text: &str) -> Result<Value, String> {
        let given = match self.kind {
            Kind::Share { .. } => match text.parse::<f64>() {
                Ok(x) => Given::Float(x),
                Err(_) => return Err(self.share_reason(&format!("{text:?}"))),
            },
            Kind::Number => match text.parse::<f64>() {
                Ok(x) => Given::Float(x),
                Err(_) => return Err(format!("give a number, got {text:?}")),
            },
            Kind::Count { .. } => match text.parse::<i128>() {
                Ok(n) => Given::Int(n),
                Err(_) if text.bytes().all(|b| b.is_ascii_digit()) && !text.is_empty() => {
                    return Err(format!(
                        "give a whole number up to {}, got {text:?}",
                        u64::MAX
                    ))
                }
                Err(_) => return Err(format!("give a whole number, got {text:?}")),
            },
            _ => Given::Text(text.to_string()),
        };
        self.check(given).map_err(|r| match self.kind {
            Kind::Share { .. } => self.share_reason(&format!("{text:?}")),
            _ => r.rest.trim_start_matches([' ', ':']).to_string(),
        })
    }

    /// `given` checked against the declaration: the value, or why not.
    pub fn check(&'static self, given: Given) -> Result<Value, Refusal> {
        let refuse = |rest: String, wrong_type: bool| Refusal {
            setting: self.setting,
            rest,
            wrong_type,
        };
        let kind = |what: &str| refuse(format!(": give {what}, got {}", shown(&given)), true);
        match (self.kind, &given) {
            (Kind::Switch, Given::Bool(b)) => Ok(Value::Switch(*b)),
            (Kind::Without, Given::Bool(b)) => Ok(Value::Switch(!*b)),
            (Kind::Switch | Kind::Without, _) => Err(kind("True or False")),
            (Kind::Count { min }, Given::Int(n)) => match u64::try_from(*n) {
                Ok(n) if n >= min => Ok(Value::Count(n)),
                Err(_) if *n > 0 => Err(refuse(
                    format!(": give a whole number up to {}, got {n}", u64::MAX),
                    false,
                )),
                _ if min == 0 => Err(refuse(format!(": give a whole number, got {n}"), false)),
                _ => Err(refuse(format!(": give at least {min}, got {n}"), false)),
            },
            (Kind::Count { .. }, Given::Huge(digits)) if !digits.starts_with('-') => Err(refuse(
                format!(": give a whole number up to {}, got {digits}", u64::MAX),
                false,
            )),
            (Kind::Count { min }, Given::Huge(digits)) => Err(refuse(
                format!(": give at least {min}, got {digits}"),
                false,
            )),
            (Kind::Count { .. }, _) => Err(kind("a whole number")),
            (Kind::Share { zero, one }, Given::Int(_) | Given::Float(_)) => {
                let x = match given {
                    Given::Int(n) => n as f64,
                    Given::Float(x) => x,
                    _ => unreachable!("matched above"),
                };
                match share_holds(zero, one, x) {
                    true => Ok(Value::Share(x)),
                    false => Err(refuse(
                        format!(": {}", self.share_reason(&x.to_string())),
                        false,
                    )),
                }
            }
            (Kind::Share { .. }, Given::Huge(digits)) => {
                Err(refuse(format!(": {}", self.share_reason(digits)), false))
            }
            (Kind::Share { .. }, _) => Err(kind("a number")),
            (Kind::Name(names) | Kind::Described(names, _), Given::Text(t)) => {
                match names.iter().find(|n| **n == t) {
                    Some(n) => Ok(Value::Name(n)),
                    None => Err(refuse(
                        UnknownName {
                            flag: self.setting,
                            got: t.clone(),
                            expected: names,
                        }
                        .rest(),
                        false,
                    )),
                }
            }
            (Kind::Name(names) | Kind::Described(names, _), _) => {
                Err(kind(&format!("one of {}", one_of(names))))
            }
            (Kind::Repeated | Kind::Keys, Given::List(l)) => Ok(Value::List(l.clone())),
            // One text where a list is asked (a str passes for a list of
            // them in Python's types): say what each item is.
            (Kind::Repeated, _) => Err(kind(&format!("a list, one {} each", self.value_name()))),
            (Kind::Keys, _) => Err(kind("a list of names")),
            (Kind::Text | Kind::Key | Kind::Path | Kind::Number | Kind::Days | Kind::Paths, _) => {
                self.check_more(given)
            }
        }
    }

    /// [`Decl::check`] for a text, a path, a number, days and paths.
    fn check_more(&'static self, given: Given) -> Result<Value, Refusal> {
        let refuse = |rest: String, wrong_type: bool| Refusal {
            setting: self.setting,
            rest,
            wrong_type,
        };
        let kind = |what: &str| refuse(format!(": give {what}, got {}", shown(&given)), true);
        // A whole number past 128 bits is still a number (10**40 from
        // Python): the range, not the type, refuses it.
        let number = match &given {
            Given::Int(n) => Some(*n as f64),
            Given::Float(x) => Some(*x),
            Given::Huge(digits) => digits.parse::<f64>().ok(),
            _ => None,
        };
        match (self.kind, &given, number) {
            (Kind::Text, Given::Text(t), _) if t.is_empty() => Err(refuse(
                format!(": give a non-empty {}", self.help_noun()),
                false,
            )),
            (Kind::Text | Kind::Key, Given::Text(t), _) => Ok(Value::Text(t.clone())),
            (Kind::Text | Kind::Key, ..) => Err(kind("a text")),
            (Kind::Path, Given::Text(t), _) if t.is_empty() => {
                Err(refuse(": give a path".to_string(), false))
            }
            (Kind::Path, Given::Text(t), _) => Ok(Value::Path(PathBuf::from(t))),
            (Kind::Path, ..) => Err(kind("a path")),
            (Kind::Number, _, Some(x)) => Ok(Value::Number(x)),
            (Kind::Number, _, None) => Err(kind("a number")),
            (Kind::Days, Given::Text(t), _) => days(t)
                .map(Value::Number)
                .map_err(|r| refuse(format!(": {r}"), false)),
            (Kind::Days, _, Some(x)) => days(&format!("{x}d"))
                .map(Value::Number)
                .map_err(|_| refuse(format!(": {}", days_reason(&x.to_string())), false)),
            (Kind::Days, _, None) => Err(kind("a number of days, or a text such as \"2w\"")),
            (Kind::Paths, Given::List(l), _) if l.iter().any(String::is_empty) => {
                Err(refuse(": give a path".to_string(), false))
            }
            (Kind::Paths, Given::List(l), _) => {
                Ok(Value::Paths(l.iter().map(PathBuf::from).collect()))
            }
            (Kind::Paths, _, _) => Err(kind("a list of paths")),
            (kind, ..) => unreachable!("{kind:?} is checked by Decl::check"),
        }
    }

    /// What a share must be: `give a share in (0, 1], got 2`.
    fn share_reason(&self, got: &str) -> String {
        match self.kind {
            Kind::Share { zero, one } => share_reason(zero, one, got),
            _ => share_reason(false, false, got),
        }
    }

    /// What a text option names (`name (the run column of every table)`).
    fn help_noun(&self) -> &'static str {
        match self.setting {
            Setting::Label => "name (the run column of every table)",
            Setting::Salt => "salt",
            _ => "text",
        }
    }

    /// The default as a value (None: absent, or a switch that is off).
    pub fn default_value(&'static self) -> Option<Value> {
        match self.default {
            Preset::Absent | Preset::Config => None,
            Preset::Count(n) => Some(Value::Count(n)),
            Preset::Share(x) => Some(Value::Share(x)),
            Preset::Name(n) => Some(Value::Name(n)),
            // A declaration's own default holds (a test checks each).
            Preset::Text(t) => self.parse(t).ok(),
        }
    }

    /// The default as `--help` shows it (`[default: 0.5]`).
    pub fn default_text(&self) -> Option<String> {
        match self.default {
            Preset::Absent | Preset::Config => None,
            Preset::Count(n) => Some(n.to_string()),
            Preset::Share(x) => Some(x.to_string()),
            Preset::Name(n) | Preset::Text(n) => Some(n.to_string()),
        }
    }

    /// The value's name in `--help`.
    pub fn value_name(&self) -> String {
        self.value_name
            .map(str::to_string)
            .unwrap_or_else(|| self.setting.flag()[2..].replace('-', "_").to_uppercase())
    }
}

/// Whether `x` is a share: above 0 (or from 0, with `zero`) and below 1
/// (or up to 1, with `one`). The one rule for every share a command takes,
/// declared or not (`cmd::share`, the clap parsers of `--delta`, ...).
pub fn share_holds(zero: bool, one: bool, x: f64) -> bool {
    (x > 0.0 || (zero && x == 0.0)) && (x < 1.0 || (one && x == 1.0))
}

/// What a share must be, and what was given: `give a share in (0, 1], got
/// 2`.
pub fn share_reason(zero: bool, one: bool, got: &str) -> String {
    match (zero, one) {
        (false, true) => format!("give a share in (0, 1], got {got}"),
        (true, _) => format!("give a number from 0 up to 1 (exclusive), got {got}"),
        (false, false) => format!("give a number between 0 and 1 (exclusive), got {got}"),
    }
}

/// Days (`7d`), weeks (`2w`) or a bare number of days, as days: above 0
/// and at most ten years.
pub fn days(text: &str) -> Result<f64, String> {
    let (n, unit) = match text.strip_suffix('d') {
        Some(n) => (n, 1.0),
        None => match text.strip_suffix('w') {
            Some(n) => (n, 7.0),
            None => (text, 1.0),
        },
    };
    match n.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 && x * unit <= 3660.0 => Ok(x * unit),
        _ => Err(days_reason(&format!("{text:?}"))),
    }
}

/// What a number of days must be.
fn days_reason(got: &str) -> String {
    format!("give days (7d) or weeks (2w), at most 10 years; got {got}")
}

/// A given value as a message shows it.
fn shown(g: &Given) -> String {
    match g {
        Given::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        Given::Int(n) => n.to_string(),
        Given::Huge(digits) => digits.clone(),
        Given::Float(x) => x.to_string(),
        Given::Text(t) => format!("{t:?}"),
        Given::List(l) => format!("{l:?}"),
    }
}

/// The options of one request, checked: each given value, and the
/// declarations' defaults for the rest. Read by setting, by the type its
/// kind declares (asking for another is a bug, which the declarations'
/// own test rules out).
#[derive(Clone, Debug)]
pub struct Values {
    decls: &'static [&'static Decl],
    given: Vec<(Setting, Value)>,
}

impl Values {
    /// Every option of `decls` at its default.
    pub fn defaults(decls: &'static [&'static Decl]) -> Values {
        Values {
            decls,
            given: Vec::new(),
        }
    }

    /// The values given by keyword (a Python caller's), each checked
    /// against its declaration; a keyword of no option of `decls` is
    /// unknown.
    pub fn read(
        decls: &'static [&'static Decl],
        given: Vec<(String, Given)>,
    ) -> Result<Values, KeywordError> {
        let mut v = Values::defaults(decls);
        for (keyword, g) in given {
            let Some(d) = decls
                .iter()
                .find(|d| d.python && d.setting.keyword() == keyword)
            else {
                let known: Vec<String> = decls
                    .iter()
                    .filter(|d| d.python)
                    .map(|d| d.setting.keyword())
                    .collect();
                return Err(KeywordError::Unknown(Unknown {
                    given: keyword,
                    known,
                }));
            };
            let value = d.check(g).map_err(KeywordError::Refused)?;
            v.set(d.setting, value);
        }
        Ok(v)
    }

    /// `s` given as `value` (replacing what it was given before).
    pub fn set(&mut self, s: Setting, value: Value) {
        self.given.retain(|(g, _)| *g != s);
        self.given.push((s, value));
    }

    /// The value of `s`: given, else its default; None also when this
    /// command does not take it (an engine shared by several commands
    /// reads an option only one of them declares).
    pub fn get(&self, s: Setting) -> Option<Value> {
        let d = self.decls.iter().find(|d| d.setting == s)?;
        self.given
            .iter()
            .find(|(g, _)| *g == s)
            .map(|(_, v)| v.clone())
            .or_else(|| d.default_value())
    }

    /// Whether `s` was given (by a flag or a keyword), not defaulted.
    pub fn is_given(&self, s: Setting) -> bool {
        self.given.iter().any(|(g, _)| *g == s)
    }

    /// A switch: whether it is on.
    pub fn switch(&self, s: Setting) -> bool {
        match self.get(s) {
            Some(Value::Switch(b)) => b,
            None => false,
            v => panic!("{s:?} is a switch, holds {v:?}"),
        }
    }

    /// A count, if given or defaulted.
    pub fn count(&self, s: Setting) -> Option<u64> {
        match self.get(s) {
            Some(Value::Count(n)) => Some(n),
            None => None,
            v => panic!("{s:?} is a count, holds {v:?}"),
        }
    }

    /// A share, if given or defaulted.
    pub fn share(&self, s: Setting) -> Option<f64> {
        match self.get(s) {
            Some(Value::Share(x)) => Some(x),
            None => None,
            v => panic!("{s:?} is a share, holds {v:?}"),
        }
    }

    /// A name, if given or defaulted, as the value it names (a `T` whose
    /// names are not the declaration's is a bug, as any other wrong type).
    pub fn name<T: std::str::FromStr>(&self, s: Setting) -> Option<T> {
        match self.get(s) {
            Some(Value::Name(n)) => Some(
                n.parse()
                    .unwrap_or_else(|_| panic!("{s:?}'s name {n:?} is not one of this type")),
            ),
            None => None,
            v => panic!("{s:?} is a name, holds {v:?}"),
        }
    }

    /// A text, if given.
    pub fn text(&self, s: Setting) -> Option<String> {
        match self.get(s) {
            Some(Value::Text(t)) => Some(t),
            None => None,
            v => panic!("{s:?} is a text, holds {v:?}"),
        }
    }

    /// A path, if given.
    pub fn path(&self, s: Setting) -> Option<PathBuf> {
        match self.get(s) {
            Some(Value::Path(p)) => Some(p),
            None => None,
            v => panic!("{s:?} is a path, holds {v:?}"),
        }
    }

    /// A list, if given.
    pub fn list(&self, s: Setting) -> Option<Vec<String>> {
        match self.get(s) {
            Some(Value::List(l)) => Some(l),
            None => None,
            v => panic!("{s:?} is a list, holds {v:?}"),
        }
    }

    /// A number (or a number of days), if given or defaulted.
    pub fn number(&self, s: Setting) -> Option<f64> {
        match self.get(s) {
            Some(Value::Number(x)) => Some(x),
            None => None,
            v => panic!("{s:?} is a number, holds {v:?}"),
        }
    }

    /// Paths, if given.
    pub fn paths(&self, s: Setting) -> Option<Vec<PathBuf>> {
        match self.get(s) {
            Some(Value::Paths(p)) => Some(p),
            None => None,
            v => panic!("{s:?} is a list of paths, holds {v:?}"),
        }
    }

    /// The declarations these values are of.
    pub fn decls(&self) -> &'static [&'static Decl] {
        self.decls
    }

    /// The values of the options not in `except`, given or defaulted, by
    /// keyword, as JSON: what a partial result records, so that shards
    /// must agree on an option and a merge replays with it.
    pub fn record(
        &self,
        except: &[Setting],
    ) -> std::collections::BTreeMap<String, serde_json::Value> {
        use serde_json::Value as J;
        let json = |v: Value| match v {
            Value::Switch(b) => J::from(b),
            Value::Count(n) => J::from(n),
            Value::Share(x) => J::from(x),
            Value::Name(n) => J::from(n),
            Value::Text(t) => J::from(t),
            Value::Path(p) => J::from(p.to_string_lossy().into_owned()),
            Value::List(l) => J::from(l),
            Value::Number(x) => J::from(x),
            Value::Paths(p) => J::from(
                p.iter()
                    .map(|p| p.to_string_lossy().into_owned())
                    .collect::<Vec<_>>(),
            ),
        };
        self.decls
            .iter()
            .filter(|d| d.python && !except.contains(&d.setting))
            .filter_map(|d| {
                let v = match (d.kind, self.get(d.setting)) {
                    // Recorded as its keyword says it (held_out).
                    (Kind::Without, v) => Value::Switch(v != Some(Value::Switch(true))),
                    (_, v) => v?,
                };
                Some((d.setting.keyword(), json(v)))
            })
            .collect()
    }

    /// `decls` at their defaults, with what [`Values::record`] recorded read
    /// back; None when a recorded value is not one of them.
    pub fn restore(
        decls: &'static [&'static Decl],
        recorded: &std::collections::BTreeMap<String, serde_json::Value>,
    ) -> Option<Values> {
        use serde_json::Value as J;
        let given = recorded.iter().map(|(k, v)| {
            let g = match v {
                J::Bool(b) => Given::Bool(*b),
                J::Number(n) if n.is_u64() || n.is_i64() => Given::Int(
                    n.as_i64()
                        .map_or(n.as_u64().map_or(0, i128::from), i128::from),
                ),
                J::Number(n) => Given::Float(n.as_f64()?),
                J::String(s) => Given::Text(s.clone()),
                J::Array(a) => Given::List(
                    a.iter()
                        .map(|x| x.as_str().map(str::to_string))
                        .collect::<Option<_>>()?,
                ),
                _ => return None,
            };
            Some((k.clone(), g))
        });
        Values::read(decls, given.collect::<Option<_>>()?).ok()
    }
}

/// Why keyword options could not be read.
#[derive(Clone, Debug, PartialEq)]
pub enum KeywordError {
    Unknown(Unknown),
    Refused(Refusal),
}

/// `--max-line-bytes`'s default: longer lines are invalid.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 << 20;

/// `--max-ack-share`'s default.
pub const DEFAULT_MAX_ACK_SHARE: f64 = 0.5;

/// `calibrate --delta`'s default: the chance its choice's rate exceeds R.
pub const DEFAULT_DELTA: f64 = 0.05;

/// `calibrate --min-label-coverage`'s default.
pub const DEFAULT_MIN_LABEL_COVERAGE: f64 = 0.5;

/// `mine --min-support`'s default.
pub const DEFAULT_MIN_SUPPORT: u64 = 5;

/// `mine --min-labelled`'s default.
pub const DEFAULT_MIN_LABELLED: u64 = 30;

/// `mine --max-regression-rate`'s default.
pub const DEFAULT_MINE_MAX_REGRESSION_RATE: f64 = 0.05;

/// Declares options: `NAME: Setting, Kind, Default, value name, python,
/// "help"` (help as `--help` shows it: no final period).
macro_rules! declare {
    ($($(#[$doc:meta])* $name:ident: $setting:ident, $kind:expr, $default:expr, $value:expr, $python:expr, $help:expr;)*) => {
        $(
            $(#[$doc])*
            pub static $name: Decl = Decl {
                setting: Setting::$setting,
                kind: $kind,
                default: $default,
                value_name: $value,
                help: $help,
                python: $python,
            };
        )*
        /// Every declared option.
        pub static DECLARED: &[&Decl] = &[$(&$name,)*];
    };
}

declare! {
    FROM: From, Kind::Name(InputFormat::NAMES), Preset::Name("traffic"), None, true,
        "The input's format: traffic (critic-gate's own), openai-chat (chat transcripts, one conversation a line) or otlp (symfonic's OpenTelemetry traces); see docs/import-formats.md";
    /// Its range is the machine's (1 to 4 per core): the command checks it.
    THREADS: Threads, Kind::Count { min: 0 }, Preset::Absent, None, true,
        "Worker threads (default: one per core)";
    SKIP_INVALID: SkipInvalid, Kind::Switch, Preset::Absent, None, true,
        "Set invalid lines aside in rejects.jsonl instead of stopping";
    QUIET: Quiet, Kind::Switch, Preset::Absent, None, false,
        "No progress bar and no summary on stderr";
    MAX_LINE_BYTES: MaxLineBytes, Kind::Count { min: 1 }, Preset::Count(DEFAULT_MAX_LINE_BYTES as u64), Some("BYTES"), true,
        "Lines longer than this many bytes are invalid (read in constant memory, reported with their first 4 KiB)";
    LABEL: Label, Kind::Text, Preset::Absent, Some("NAME"), true,
        "The run's name in the `run` column of every table and in summary.json, to tell runs apart when tables are joined or concatenated (default: the output folder's name)";
    FORCE: Force, Kind::Switch, Preset::Absent, None, true,
        "Write into --out even when it is a non-empty folder that holds no earlier critic-gate report";
    MAX_ACK_SHARE: MaxAckShare, Kind::Share { zero: false, one: true }, Preset::Share(DEFAULT_MAX_ACK_SHARE), Some("SHARE"), true,
        "A skip is risky when its matched ack covers less than this share of the draft (the summary's risky_* figures)";
    FORMAT: Format, Kind::Name(Format::NAMES), Preset::Name("csv"), None, true,
        "Write every table as csv, parquet (with the declared schema) or both";
    DECISIONS: Decisions, Kind::Name(DecisionsMode::NAMES), Preset::Name("all"), None, true,
        "Which rows decisions.csv keeps: all (every turn and variant), changed (where a variant decides differently from the baseline) or none";
    GROUP_BY: GroupBy, Kind::Repeated, Preset::Absent, Some("KEY"), true,
        "Extra grouping dimension for segments.csv: a dotted path into the turn (e.g. `critic.model`, `scope.user.tier`). Repeatable";
    SCOPE_COLUMNS: ScopeColumns, Kind::Keys, Preset::Absent, Some("KEYS"), true,
        "Scope keys to make columns of decisions.csv and regressions.csv (`tenant` -> `scope_tenant`), comma-separated; an empty value makes none. Default: the keys of the first 10,000 turns (at most 16, in order of first appearance). Name them to get the same header in every run";
    PLAN: Plan, Kind::Path, Preset::Absent, Some("PLAN"), true,
        "A plan (plan.toml, from `critic-gate plan`): production's skips are measured against its critic sample (the traffic's shadow labels and production's own reviews of the turns it draws)";

    // `calibrate`'s own.
    DELTA: Delta, Kind::Share { zero: false, one: false }, Preset::Share(DEFAULT_DELTA), None, true,
        "The chance the choice's true rate exceeds R is at most this";
    SEED: Seed, Kind::Count { min: 0 }, Preset::Count(0), None, true,
        "Seed of the run_id hash that deals the runs into parts";
    PROCEDURE: Procedure, Kind::Described(Procedure::NAMES, Procedure::HELP), Preset::Name("fixed-sequence"), None, true,
        "How the family is tested on the calibration part (calibration.json gives what each would certify)";
    MIN_LABEL_COVERAGE: MinLabelCoverage, Kind::Share { zero: true, one: false }, Preset::Share(DEFAULT_MIN_LABEL_COVERAGE), Some("SHARE"), true,
        "A variant whose labelled new skips are fewer than this share of its new skips (on the learn or the calibration part) cannot be certified";
    CALIBRATE_ASSUME_MISSING_AT_RANDOM: AssumeMissingAtRandom, Kind::Switch, Preset::Absent, None, true,
        "Certify on the labels alone, taking the unlabelled new skips to be missing at random. Without it a variant whose worst-case bound (every unlabelled new skip a regression) is above R is not certified: a critic that fails on hard turns leaves their labels out. calibrated.toml's first line says it was assumed";
    NO_HELD_OUT: NoHeldOut, Kind::Without, Preset::Absent, None, true,
        "Deal the runs into learn and calibration parts only (more labels for each; no held-out figures)";
    CALIBRATE_PLAN: Plan, Kind::Path, Preset::Absent, Some("PLAN_TOML"), true,
        "An audit plan (`plan --audit VARIANT`) whose shadow verdicts the traffic holds (`labels`): a variant's unlabelled new skips the audit covers are bounded from its sample (two-phase) instead of each counted a regression";

    // `mine`'s own.
    MINED_VARIANT: MinedVariant, Kind::Key, Preset::Absent, None, true,
        "The smart variant to mine (default: the first with the flag on)";
    MIN_SUPPORT: MinSupport, Kind::Count { min: 1 }, Preset::Count(DEFAULT_MIN_SUPPORT), None, true,
        "A phrase is proposed only when seen in at least this many turns";
    MIN_LABELLED: MinLabelled, Kind::Count { min: 1 }, Preset::Count(DEFAULT_MIN_LABELLED), None, true,
        "A pattern is proposed only when its new skips hold at least this many labels (below 30, a 95% bound cannot go under 0.095 even without a regression)";
    MINE_MAX_REGRESSION_RATE: MaxRegressionRate, Kind::Share { zero: false, one: false }, Preset::Share(DEFAULT_MINE_MAX_REGRESSION_RATE), Some("R"), true,
        "A pattern is proposed only when its new skips' upper 95% bound is within this";
    BUDGET_FROM_VARIANT: BudgetFromVariant, Kind::Switch, Preset::Absent, None, true,
        "Hold each pattern to the mined variant's own upper 95% bound instead (no riskier than its skips today; it takes many labels)";
    MINE_ASSUME_MISSING_AT_RANDOM: AssumeMissingAtRandom, Kind::Switch, Preset::Absent, None, true,
        "Test each pattern's and the bundle's bound on its labels alone: assume the unlabelled new skips are missing at random (the output says so). Without it, their worst case (every unlabelled new skip a regression) must be within the budget too";
    STRESS: Stress, Kind::Switch, Preset::Absent, None, true,
        "Also add short content to every skipped draft and count the skips that survive";

    // `merge`'s own.
    MERGE_LABEL: Label, Kind::Text, Preset::Absent, Some("NAME"), true,
        "The run's name in the `run` column of every table (default: the output folder's name)";
    MERGE_QUIET: Quiet, Kind::Switch, Preset::Absent, None, false,
        "No summary on stderr";

    // `import`'s own.
    IMPORT_SKIP_INVALID: SkipInvalid, Kind::Switch, Preset::Absent, None, true,
        "Set what cannot be converted aside in OUT's .rejects.jsonl instead of stopping";
    IMPORT_MAX_LINE_BYTES: MaxLineBytes, Kind::Count { min: 1 }, Preset::Count(DEFAULT_MAX_LINE_BYTES as u64), Some("BYTES"), true,
        "Input lines longer than this many bytes are invalid";
    IMPORT_QUIET: Quiet, Kind::Switch, Preset::Absent, None, false,
        "Print nothing on success";

    // `explain`'s own.
    JSON: Json, Kind::Switch, Preset::Absent, None, false,
        "Print JSON instead of the readable trace";
    EXPLAIN_FROM: From, Kind::Name(InputFormat::NAMES), Preset::Name("traffic"), None, true,
        "The input's format: traffic, openai-chat (each turn of each conversation is explained) or otlp (each run of the trace); the config's [deployment] table says how to derive them";

    // `synth`'s own.
    SYNTH_SEED: Seed, Kind::Count { min: 0 }, Preset::Count(1), None, true,
        "Random seed (same seed, same traffic)";
    MIX: Mix, Kind::Name(Mix::NAMES), Preset::Name("default"), None, true,
        "The traffic mix: default (mostly English), or multilingual (about half the drafts not ASCII)";
    SHAPE: Shape, Kind::Name(Shape::NAMES), Preset::Name("traffic"), None, true,
        "What to write: traffic (critic-gate's format) or openai-chat (the same runs as chat transcripts, one conversation a line, for `--from openai-chat`)";

    // `diff`'s own.
    FAIL_ON_NEW_REGRESSIONS: FailOnNewRegressions, Kind::Switch, Preset::Absent, None, true,
        "Exit 1 when the candidate has safety regressions the old replay did not";

    // `init`'s own.
    INIT_FORCE: Force, Kind::Switch, Preset::Absent, None, true,
        "Replace the file if it exists";

    // `check`'s own (its budgets are `budgets::BUDGETS`).
    CHECK_VARIANT: Variant, Kind::Repeated, Preset::Absent, Some("NAME"), true,
        "The variant(s) to check (default: every non-baseline variant, and a smart-gate production whose skips no critic reviewed)";
    MARKDOWN: Markdown, Kind::Path, Preset::Absent, Some("FILE"), true,
        "Also write the verdict as Markdown to FILE (e.g. $GITHUB_STEP_SUMMARY)";
    CHECK_ASSUME_MISSING_AT_RANDOM: AssumeMissingAtRandom, Kind::Switch, Preset::Config, None, true,
        "Judge a rate budget on the labels alone: assume the unlabelled new skips are missing at random (the output says so first). Without it --max-safety-regression-rate also holds the worst case (every unlabelled new skip a regression) to R, unless --max-worst-case-regression-rate sets its own limit";
    /// Python says both as `assume_missing_at_random` (True, False, or
    /// None: the config's).
    NO_ASSUME_MISSING_AT_RANDOM: NoAssumeMissingAtRandom, Kind::Switch, Preset::Absent, None, false,
        "Hold the worst case even where the config's `[check]` table says assume_missing_at_random = true";

    // What a command that reads its traffic in one serial pass of its own
    // takes (`plan`, `sample`, `labels`, `monitor`): [`PASS`].
    PASS_SKIP_INVALID: SkipInvalid, Kind::Switch, Preset::Absent, None, true,
        "Count invalid lines instead of stopping";
    PASS_MAX_LINE_BYTES: MaxLineBytes, Kind::Count { min: 1 }, Preset::Count(DEFAULT_MAX_LINE_BYTES as u64), Some("BYTES"), true,
        "Lines longer than this many bytes are invalid";
    PASS_QUIET: Quiet, Kind::Switch, Preset::Absent, None, false,
        "Print nothing (the files say it all)";

    // `plan`'s own.
    MAX_SKIP_REGRESSION_RATE: MaxSkipRegressionRate, Kind::Share { zero: false, one: false }, Preset::Absent, Some("R"), true,
        "Size the sample to certify that the regression rate of production's skips is at most R";
    MAX_HARMFUL_PER_1K: MaxHarmfulPer1k, Kind::Number, Preset::Absent, Some("H"), true,
        "Size it to certify at most H harmful skips per 1,000 turns (turned into a rate on the skips by the traffic's skip share)";
    CONFIDENCE: Confidence, Kind::Share { zero: false, one: false }, Preset::Share(0.95), None, true,
        "The bound's confidence";
    WINDOW: Window, Kind::Days, Preset::Text("7d"), None, true,
        "The window the labels are collected in: days (`7d`) or weeks (`2w`)";
    STRATA: Strata, Kind::Key, Preset::Absent, Some("KEY"), true,
        "A probability per stratum: language (its primary subtag: de for de-AT), language-tag (as recorded), intent, call_site or a path into the scope (scope.tenant)";
    MAX_CALLS_PER_DAY: MaxCallsPerDay, Kind::Number, Preset::Absent, Some("N"), true,
        "At most this many shadow critic calls a day";
    SALT: Salt, Kind::Text, Preset::Absent, Some("S"), true,
        "The coin's salt (default: a fresh random one, recorded in plan.toml)";
    DAYS: Days, Kind::Number, Preset::Absent, Some("N"), true,
        "The days the traffic covers, where its turns record no `ts`";
    AUDIT: Audit, Kind::Key, Preset::Absent, Some("VARIANT"), true,
        "Before the switch: sample this candidate's new skips that the recording left without a label (the critic failed, or nothing was recorded), for a two-phase bound on its new-skip rate";
    FALSE_ALARM_EVERY: FalseAlarmEvery, Kind::Days, Preset::Text("365d"), Some("DAYS"), true,
        "How rarely the change alarm (a CUSUM for a doubling of R) may fire when the rate is R: its average run length, in days (`365d`) or weeks; the detection delays are predicted for it";
    LEGACY_PRODUCTION: LegacyProduction, Kind::Switch, Preset::Absent, None, true,
        "Sample production's skips although its gate (the config's `production`) is the legacy gate; without it plan refuses, since after the switch production runs the smart gate and the config should name it";
    FIDELITY_SHARE: FidelityShare, Kind::Share { zero: true, one: false }, Preset::Share(0.0), Some("F"), true,
        "Also send this share of production's reviewed fires to the shadow critic: `monitor` measures how far its verdicts agree with production's critic there (0: none)";

    // `labels`' own: it copies lines of traffic, and its --out is a file.
    LABELS_FROM: From, Kind::Name(&["traffic"]), Preset::Name("traffic"), None, true,
        "The input's format: traffic only (convert traces or transcripts with `critic-gate import` first)";
    LABELS_FORCE: Force, Kind::Switch, Preset::Absent, None, true,
        "Replace --out when the file exists";

    // `sample`'s own.
    SAMPLE_THREADS: Threads, Kind::Count { min: 0 }, Preset::Absent, None, true,
        "Worker threads (default: one per core); the requests are the same with any number";

    // `monitor`'s own.
    BY: By, Kind::Name(&["day", "week", "release"]), Preset::Name("day"), None, true,
        "The periods: day or week (of each turn's ts), or release (with --release-at)";
    RELEASE_AT: ReleaseAt, Kind::Repeated, Preset::Absent, Some("DATE"), true,
        "A release's first day (YYYY-MM-DD), once per release (--by release)";
    RELEASE_FIELD: ReleaseField, Kind::Key, Preset::Absent, Some("PATH"), true,
        "The field naming each turn's release, a path into its scope (scope.app_version), for --by release; a state keeps it";
    TIMEZONE: Timezone, Kind::Key, Preset::Text("UTC"), Some("TZ"), true,
        "The days are the calendar days of this offset: UTC (the default) or +HH:MM / -HH:MM; each turn's ts is taken to its instant, so a file rotated at UTC midnight is one day whatever offsets its ts record";
    STATE: State, Kind::Path, Preset::Absent, Some("FILE"), true,
        "The counts so far: read when the file exists, the traffic's periods added (a period counted already is refused), written back";
    MERGE: Merge, Kind::Paths, Preset::Absent, Some("FILE"), true,
        "A shard's state to merge in (repeat for each shard)";
    MONITOR_FALSE_ALARM_EVERY: FalseAlarmEvery, Kind::Days, Preset::Absent, Some("DAYS"), true,
        "Redesign the change alarm to fire about once in this many days (or weeks: 52w) at a rate of exactly R, over all strata; default: as the plan designed it (its detection delays hold only then)";
    ALARM_RISE: AlarmRise, Kind::Number, Preset::Absent, Some("K"), true,
        "Redesign the change alarm for a rise of the rate to K x R (above 1); default: the plan's (2)";
    MAX_FIDELITY_GAP: MaxFidelityGap, Kind::Share { zero: false, one: false }, Preset::Share(0.05), Some("SHARE"), true,
        "Warn when the shadow critic disagrees with production's on more than this share of production's reviewed fires (the plan's fidelity sample; its anytime lower bound above it)";
    MONITOR_ASSUME_MISSING_AT_RANDOM: AssumeMissingAtRandom, Kind::Switch, Preset::Config, None, true,
        "Decide the status on the bounds that take a failed shadow call as unrelated to its verdict (the status line then says ASSUMED). Without it the status holds the worst case: every drawn skip without a verdict a regression (anytime_worst_case_upper95), which a critic that fails on hard turns cannot flatter";
    /// Python says both as `assume_missing_at_random` (True, False, or
    /// None: the config's).
    MONITOR_NO_ASSUME_MISSING_AT_RANDOM: NoAssumeMissingAtRandom, Kind::Switch, Preset::Absent, None, false,
        "Hold the worst case even where the config's `[monitor]` table says assume_missing_at_random = true";
}

/// A set of options: its own, then what every command that runs a replay
/// takes ([`RUN`]), in the order `--help` lists them.
macro_rules! run_set {
    ($($own:ident),*) => {
        &[$(&$own,)* &FROM, &THREADS, &SKIP_INVALID, &QUIET, &MAX_LINE_BYTES, &LABEL, &FORCE, &MAX_ACK_SHARE]
    };
}

/// What every command that runs a replay takes (`replay`, `sweep`,
/// `calibrate`, `mine`).
pub static RUN: &[&Decl] = run_set!();

/// `sweep`'s and `calibrate`'s: the tables' format, then [`RUN`].
pub static SWEEP: &[&Decl] = run_set!(FORMAT);

/// `calibrate`'s: its test's levers and its audit plan, then [`SWEEP`].
pub static CALIBRATE: &[&Decl] = run_set!(
    DELTA,
    SEED,
    PROCEDURE,
    MIN_LABEL_COVERAGE,
    CALIBRATE_ASSUME_MISSING_AT_RANDOM,
    NO_HELD_OUT,
    CALIBRATE_PLAN,
    FORMAT
);

/// `mine`'s: the variant, the thresholds and the budget, then [`RUN`].
pub static MINE: &[&Decl] = run_set!(
    MINED_VARIANT,
    MIN_SUPPORT,
    MIN_LABELLED,
    MINE_MAX_REGRESSION_RATE,
    BUDGET_FROM_VARIANT,
    MINE_ASSUME_MISSING_AT_RANDOM,
    STRESS
);

/// `replay`'s: which rows and dimensions it keeps, its plan, the tables'
/// format, then [`RUN`].
pub static REPLAY: &[&Decl] = run_set!(DECISIONS, GROUP_BY, SCOPE_COLUMNS, PLAN, FORMAT);

/// A set of options: its own, then what every command that reads its
/// traffic in one serial pass of its own takes ([`PASS`]).
macro_rules! pass_set {
    ($($own:ident),*) => {
        &[$(&$own,)* &FROM, &PASS_SKIP_INVALID, &PASS_MAX_LINE_BYTES, &FORCE, &PASS_QUIET]
    };
}

/// What every command that reads its traffic in one serial pass of its
/// own takes (`plan`, `sample`, `labels`, `monitor`).
pub static PASS: &[&Decl] = pass_set!();

/// `plan`'s: the bound it is sized for and the design's levers, then
/// [`PASS`].
pub static PLAN_OPTIONS: &[&Decl] = pass_set!(
    MAX_SKIP_REGRESSION_RATE,
    MAX_HARMFUL_PER_1K,
    CONFIDENCE,
    WINDOW,
    STRATA,
    MAX_CALLS_PER_DAY,
    SALT,
    DAYS,
    AUDIT,
    FALSE_ALARM_EVERY,
    FIDELITY_SHARE,
    LEGACY_PRODUCTION
);

/// `sample`'s: its worker threads, then [`PASS`].
pub static SAMPLE: &[&Decl] = pass_set!(SAMPLE_THREADS);

/// `merge`'s: the run's label, the tables' format, `--force`, `--quiet`.
pub static MERGE_OPTIONS: &[&Decl] = &[&MERGE_LABEL, &FORMAT, &FORCE, &MERGE_QUIET];

/// `import`'s (its `--from` is its own, and required).
pub static IMPORT: &[&Decl] = &[
    &IMPORT_SKIP_INVALID,
    &IMPORT_MAX_LINE_BYTES,
    &THREADS,
    &IMPORT_QUIET,
];

/// `explain`'s.
pub static EXPLAIN: &[&Decl] = &[&JSON, &EXPLAIN_FROM];

/// `synth`'s (its `--turns` and `--out` are its own, and required).
pub static SYNTH: &[&Decl] = &[&SYNTH_SEED, &MIX, &SHAPE];

/// `diff`'s.
pub static DIFF: &[&Decl] = &[&FAIL_ON_NEW_REGRESSIONS];

/// `init`'s.
pub static INIT: &[&Decl] = &[&INIT_FORCE];

/// `check`'s, beside its budgets.
pub static CHECK: &[&Decl] = &[
    &CHECK_VARIANT,
    &MARKDOWN,
    &CHECK_ASSUME_MISSING_AT_RANDOM,
    &NO_ASSUME_MISSING_AT_RANDOM,
];

/// `labels`': [`PASS`], where `--from` takes traffic only and `--force`
/// replaces the file `--out` names.
pub static LABELS: &[&Decl] = &[
    &LABELS_FROM,
    &PASS_SKIP_INVALID,
    &PASS_MAX_LINE_BYTES,
    &LABELS_FORCE,
    &PASS_QUIET,
];

/// `monitor`'s: the periods, the state, the alarm's redesign, the
/// fidelity warning and the tables' format, then [`PASS`].
pub static MONITOR: &[&Decl] = pass_set!(
    BY,
    RELEASE_AT,
    RELEASE_FIELD,
    TIMEZONE,
    STATE,
    MERGE,
    MONITOR_FALSE_ALARM_EVERY,
    ALARM_RISE,
    MAX_FIDELITY_GAP,
    MONITOR_ASSUME_MISSING_AT_RANDOM,
    MONITOR_NO_ASSUME_MISSING_AT_RANDOM,
    FORMAT
);

/// A named set of options, as the Python stubs name it.
#[derive(Debug)]
pub struct OptionSet {
    /// The stub's class is `{name}Flags`.
    pub name: &'static str,
    /// A command whose `--help` lists every option of the set, with its
    /// default.
    pub command: &'static str,
    /// Whose options they are (the class's docstring).
    pub whose: &'static str,
    pub decls: &'static [&'static Decl],
}

/// Every set of options.
pub static SETS: &[OptionSet] = &[
    OptionSet {
        name: "Run",
        command: "mine",
        whose: "every command that runs a replay",
        decls: RUN,
    },
    OptionSet {
        name: "Sweep",
        command: "sweep",
        whose: "sweep",
        decls: SWEEP,
    },
    OptionSet {
        name: "Calibrate",
        command: "calibrate",
        whose: "calibrate",
        decls: CALIBRATE,
    },
    OptionSet {
        name: "Mine",
        command: "mine",
        whose: "mine",
        decls: MINE,
    },
    OptionSet {
        name: "Replay",
        command: "replay",
        whose: "replay",
        decls: REPLAY,
    },
    OptionSet {
        name: "Pass",
        command: "plan",
        whose: "every command that reads its traffic in one pass",
        decls: PASS,
    },
    OptionSet {
        name: "Plan",
        command: "plan",
        whose: "plan",
        decls: PLAN_OPTIONS,
    },
    OptionSet {
        name: "Sample",
        command: "sample",
        whose: "sample",
        decls: SAMPLE,
    },
    OptionSet {
        name: "Labels",
        command: "labels",
        whose: "labels",
        decls: LABELS,
    },
    OptionSet {
        name: "Monitor",
        command: "monitor",
        whose: "monitor",
        decls: MONITOR,
    },
    OptionSet {
        name: "Merge",
        command: "merge",
        whose: "merge",
        decls: MERGE_OPTIONS,
    },
    OptionSet {
        name: "Import",
        command: "import",
        whose: "import",
        decls: IMPORT,
    },
    OptionSet {
        name: "Explain",
        command: "explain",
        whose: "explain",
        decls: EXPLAIN,
    },
    OptionSet {
        name: "Synth",
        command: "synth",
        whose: "synth",
        decls: SYNTH,
    },
    OptionSet {
        name: "Diff",
        command: "diff",
        whose: "diff",
        decls: DIFF,
    },
    OptionSet {
        name: "Init",
        command: "init",
        whose: "init",
        decls: INIT,
    },
    OptionSet {
        name: "Check",
        command: "check",
        whose: "check",
        decls: CHECK,
    },
];

#[cfg(test)]
mod tests {
    use crate::options::*;

    /// Each declaration's default is of its kind and in its range, each
    /// set names a setting once, and every set ends with [`RUN`].
    #[test]
    fn every_declaration_holds_its_own_default() {
        for d in DECLARED {
            if let Some(v) = d.default_value() {
                let given = match &v {
                    Value::Count(n) => Given::Int((*n).into()),
                    Value::Share(x) => Given::Float(*x),
                    Value::Name(n) => Given::Text(n.to_string()),
                    Value::Number(_) => Given::Text(d.default_text().unwrap()),
                    Value::Text(t) => Given::Text(t.clone()),
                    other => panic!("{:?}: a default of {other:?}", d.setting),
                };
                assert_eq!(d.check(given), Ok(v.clone()), "{:?}", d.setting);
                assert_eq!(
                    d.parse(&d.default_text().unwrap()),
                    Ok(v),
                    "{:?}",
                    d.setting
                );
            }
            assert!(
                !d.help.ends_with('.'),
                "{:?}: clap drops the final period",
                d.setting
            );
        }
        for OptionSet {
            name, decls: set, ..
        } in SETS
        {
            let mut s: Vec<Setting> = set.iter().map(|d| d.setting).collect();
            s.sort();
            s.dedup();
            assert_eq!(s.len(), set.len(), "{name} names a setting twice");
        }
    }

    /// The same value is refused the same way from a flag's text and from
    /// a Python object, and a wrong type is told apart.
    #[test]
    fn a_value_is_refused_alike_from_either_front_end() {
        assert_eq!(
            MAX_ACK_SHARE.parse("2"),
            Err("give a share in (0, 1], got \"2\"".to_string())
        );
        let r = MAX_ACK_SHARE.check(Given::Float(2.0)).unwrap_err();
        assert_eq!(
            r.to_string(),
            "--max-ack-share: give a share in (0, 1], got 2"
        );
        assert_eq!(
            r.render(Setting::keyword),
            "max_ack_share: give a share in (0, 1], got 2"
        );
        assert!(!r.wrong_type);
        let r = FROM.check(Given::Text("csv".into())).unwrap_err();
        assert_eq!(
            r.render(Setting::keyword),
            "from_ \"csv\": give traffic, openai-chat or otlp"
        );
        assert_eq!(
            FROM.parse("csv"),
            Err("\"csv\": give traffic, openai-chat or otlp".into())
        );
        assert!(
            MAX_LINE_BYTES
                .check(Given::Text("9".into()))
                .unwrap_err()
                .wrong_type
        );
        assert_eq!(
            MAX_LINE_BYTES.check(Given::Int(0)).unwrap_err().to_string(),
            "--max-line-bytes: give at least 1, got 0"
        );
        assert_eq!(
            LABEL.parse(""),
            Err("give a non-empty name (the run column of every table)".into())
        );
        assert_eq!(MAX_ACK_SHARE.check(Given::Int(1)), Ok(Value::Share(1.0)));
        assert!(SKIP_INVALID.check(Given::Int(1)).unwrap_err().wrong_type);
    }

    /// Days, numbers and paths read alike from the flag's text and from a
    /// Python value: `2w` is 14 days, from either; out of range is
    /// refused the same way.
    #[test]
    fn days_numbers_and_paths_are_read_alike() {
        assert_eq!(WINDOW.parse("2w"), Ok(Value::Number(14.0)));
        assert_eq!(
            WINDOW.check(Given::Text("2w".into())),
            Ok(Value::Number(14.0))
        );
        assert_eq!(WINDOW.check(Given::Int(14)), Ok(Value::Number(14.0)));
        assert_eq!(WINDOW.default_value(), Some(Value::Number(7.0)));
        assert_eq!(
            FALSE_ALARM_EVERY.default_value(),
            Some(Value::Number(365.0))
        );
        assert_eq!(MONITOR_FALSE_ALARM_EVERY.default_value(), None);
        for bad in ["0d", "-1", "11000d", "NaN", "2x"] {
            let text = WINDOW.parse(bad).unwrap_err();
            assert!(
                text.starts_with("give days (7d) or weeks (2w)"),
                "{bad}: {text}"
            );
        }
        let r = WINDOW.check(Given::Float(0.0)).unwrap_err();
        assert_eq!(
            r.render(Setting::keyword),
            "window_days: give days (7d) or weeks (2w), at most 10 years; got 0"
        );
        assert!(!r.wrong_type);
        assert!(WINDOW.check(Given::Bool(true)).unwrap_err().wrong_type);
        assert_eq!(MAX_CALLS_PER_DAY.parse("200"), Ok(Value::Number(200.0)));
        assert_eq!(
            MAX_CALLS_PER_DAY.check(Given::Int(200)),
            Ok(Value::Number(200.0))
        );
        assert_eq!(
            MAX_CALLS_PER_DAY.parse("lots"),
            Err("give a number, got \"lots\"".into())
        );
        assert!(
            MAX_CALLS_PER_DAY
                .check(Given::Text("200".into()))
                .unwrap_err()
                .wrong_type
        );
        assert_eq!(
            MERGE.check(Given::List(vec!["a.state".into()])),
            Ok(Value::Paths(vec![PathBuf::from("a.state")]))
        );
        assert!(MERGE.check(Given::List(vec![String::new()])).is_err());
        let mut v = Values::defaults(MONITOR);
        assert_eq!(v.paths(Setting::Merge), None);
        v.set(Setting::Merge, Value::Paths(vec!["b".into()]));
        let back = Values::restore(MONITOR, &v.record(&[])).expect("reads back");
        assert_eq!(back.paths(Setting::Merge), Some(vec![PathBuf::from("b")]));
        assert_eq!(back.number(Setting::FalseAlarmEvery), None);
        assert_eq!(
            Values::defaults(PLAN_OPTIONS).number(Setting::Window),
            Some(7.0)
        );
    }

    /// Keywords are read by declaration: an unknown one is named with
    /// those the command takes; a terminal-only option is not one.
    #[test]
    fn keywords_are_read_by_declaration() {
        let v = Values::read(
            REPLAY,
            vec![
                ("max_ack_share".into(), Given::Float(0.25)),
                ("decisions".into(), Given::Text("none".into())),
                ("group_by".into(), Given::List(vec!["critic.model".into()])),
            ],
        )
        .unwrap();
        assert_eq!(v.share(Setting::MaxAckShare), Some(0.25));
        assert_eq!(
            v.name::<DecisionsMode>(Setting::Decisions),
            Some(DecisionsMode::None)
        );
        assert_eq!(
            v.count(Setting::MaxLineBytes),
            Some(DEFAULT_MAX_LINE_BYTES as u64)
        );
        assert_eq!(
            v.list(Setting::GroupBy),
            Some(vec!["critic.model".to_string()])
        );
        assert_eq!(v.list(Setting::ScopeColumns), None);
        assert!(!v.switch(Setting::Force));
        let Err(KeywordError::Unknown(u)) =
            Values::read(RUN, vec![("quiet".into(), Given::Bool(true))])
        else {
            panic!("quiet is the terminal's");
        };
        assert!(u.known.contains(&"from_".to_string()) && !u.known.contains(&"quiet".to_string()));
    }

    /// A message holds its settings as data: the command line shows each
    /// as its flag, Python as its keyword, and the text around them (a
    /// path or a value that happens to hold a flag's text) is the user's.
    #[test]
    fn a_message_names_settings_as_data() {
        let inner = crate::said![Setting::Force, " replaces it"];
        let m = crate::said![
            Setting::GroupBy,
            " \"--out\": give a path; ",
            Setting::Out,
            format!(" {}: not a folder, or ", "/tmp/a--out/b"),
            inner,
            "; ",
            Said::named("max-safety-regressions", "max_safety_regressions"),
        ];
        assert_eq!(
            m.to_string(),
            "--group-by \"--out\": give a path; --out /tmp/a--out/b: not a folder, or --force replaces it; --max-safety-regressions"
        );
        assert_eq!(
            m.python(),
            "group_by \"--out\": give a path; out /tmp/a--out/b: not a folder, or force replaces it; max_safety_regressions"
        );
        let settings: Vec<&Piece> = m
            .pieces()
            .iter()
            .filter(|p| !matches!(p, Piece::Text(_)))
            .collect();
        assert_eq!(settings.len(), 4, "{m:?}");
        // A message borrowed (as a matched field is) keeps its settings.
        let borrowed = &m;
        let setting = &Setting::Threads;
        let again = crate::said!["at ", borrowed, " and ", setting];
        assert_eq!(again.pieces().len(), m.pieces().len() + 3, "{again:?}");
        assert!(again
            .python()
            .ends_with("max_safety_regressions and threads"));
        let u: Said = "xml".parse::<Format>().unwrap_err().into();
        assert_eq!(u.python(), "format \"xml\": give csv, parquet or both");
        let from: Said = FROM.check(Given::Text("csv".into())).unwrap_err().into();
        assert_eq!(
            from.python(),
            "from_ \"csv\": give traffic, openai-chat or otlp"
        );
        assert_eq!(
            from.to_string(),
            "--from \"csv\": give traffic, openai-chat or otlp"
        );
    }

    /// What a partial result records of its options reads back as they
    /// were, and an option left at its default is recorded too.
    #[test]
    fn recorded_options_read_back() {
        let mut v = Values::defaults(REPLAY);
        v.set(Setting::MaxAckShare, Value::Share(0.25));
        v.set(Setting::GroupBy, Value::List(vec!["critic.model".into()]));
        let rec = v.record(&[Setting::Label]);
        assert_eq!(rec["max_ack_share"], serde_json::json!(0.25));
        assert_eq!(
            rec["max_line_bytes"],
            serde_json::json!(DEFAULT_MAX_LINE_BYTES)
        );
        assert!(!rec.contains_key("label") && !rec.contains_key("quiet"));
        let back = Values::restore(REPLAY, &rec).expect("reads back");
        assert_eq!(back.record(&[Setting::Label]), rec);
        assert_eq!(back.share(Setting::MaxAckShare), Some(0.25));
        let mut bad = rec.clone();
        bad.insert("max_ack_share".into(), serde_json::json!(2.0));
        assert!(Values::restore(REPLAY, &bad).is_none());
    }

    /// Each name table parses its names back, and no two share a name.
    #[test]
    fn every_name_parses_back_to_its_value() {
        for (m, n) in DecisionsMode::ALL.iter().zip(DecisionsMode::NAMES) {
            assert_eq!(n.parse::<DecisionsMode>().ok(), Some(*m));
        }
        for (f, n) in Format::ALL.iter().zip(Format::NAMES) {
            assert_eq!(n.parse::<Format>().ok(), Some(*f));
        }
        for (f, n) in InputFormat::ALL.iter().zip(InputFormat::NAMES) {
            assert_eq!(n.parse::<InputFormat>().ok(), Some(*f));
        }
        assert!(Format::ALL.iter().all(|f| f.csv() || f.parquet()));
        assert_eq!(DecisionsMode::default().name(), "all");
        let e = "xml".parse::<Format>().unwrap_err();
        assert_eq!(e.to_string(), "--format \"xml\": give csv, parquet or both");
    }
}
