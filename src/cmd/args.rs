//! The flags several commands share: the declared options as clap
//! arguments ([`Flags`]), the flags of a one-pass command, and the parsers
//! that hold a flag's value to the library's names before a request is
//! built.

use std::marker::PhantomData;

use clap::builder::TypedValueParser;

use crate::import::InputFormat;
use crate::options::{self, Decl, Kind, Setting, Value, Values};
use crate::replay::Format;

/// A command's declared options as clap arguments: each from its
/// declaration (`crate::options`), in the order of its set, read back
/// into the request's [`Values`]. The same declarations make the Python
/// package's keywords, so the two cannot drift apart.
pub struct Flags<S: Set> {
    pub values: Values,
    set: PhantomData<S>,
}

/// A set of declared options, as a type clap can flatten.
pub trait Set: 'static {
    const DECLS: &'static [&'static Decl];
}

/// `replay`'s options.
#[derive(Debug)]
pub struct Replay;
impl Set for Replay {
    const DECLS: &'static [&'static Decl] = options::REPLAY;
}

/// `sweep`'s options.
#[derive(Debug)]
pub struct Sweep;
impl Set for Sweep {
    const DECLS: &'static [&'static Decl] = options::SWEEP;
}

/// `calibrate`'s options.
#[derive(Debug)]
pub struct Calibrate;
impl Set for Calibrate {
    const DECLS: &'static [&'static Decl] = options::CALIBRATE;
}

/// `mine`'s options.
#[derive(Debug)]
pub struct Mine;
impl Set for Mine {
    const DECLS: &'static [&'static Decl] = options::MINE;
}

/// `merge`'s options.
#[derive(Debug)]
pub struct Merge;
impl Set for Merge {
    const DECLS: &'static [&'static Decl] = options::MERGE_OPTIONS;
}

/// `import`'s options.
#[derive(Debug)]
pub struct Import;
impl Set for Import {
    const DECLS: &'static [&'static Decl] = options::IMPORT;
}

/// `explain`'s options.
#[derive(Debug)]
pub struct Explain;
impl Set for Explain {
    const DECLS: &'static [&'static Decl] = options::EXPLAIN;
}

/// `synth`'s options.
#[derive(Debug)]
pub struct Synth;
impl Set for Synth {
    const DECLS: &'static [&'static Decl] = options::SYNTH;
}

/// `diff`'s options.
#[derive(Debug)]
pub struct Diff;
impl Set for Diff {
    const DECLS: &'static [&'static Decl] = options::DIFF;
}

/// `init`'s options.
#[derive(Debug)]
pub struct Init;
impl Set for Init {
    const DECLS: &'static [&'static Decl] = options::INIT;
}

/// `check`'s options.
#[derive(Debug)]
pub struct Check;
impl Set for Check {
    const DECLS: &'static [&'static Decl] = options::CHECK;
}

/// `plan`'s options.
#[derive(Debug)]
pub struct Plan;
impl Set for Plan {
    const DECLS: &'static [&'static Decl] = options::PLAN_OPTIONS;
}

/// `sample`'s options.
#[derive(Debug)]
pub struct Sample;
impl Set for Sample {
    const DECLS: &'static [&'static Decl] = options::SAMPLE;
}

/// `labels`' options.
#[derive(Debug)]
pub struct Labels;
impl Set for Labels {
    const DECLS: &'static [&'static Decl] = options::LABELS;
}

/// `monitor`'s options.
#[derive(Debug)]
pub struct Monitor;
impl Set for Monitor {
    const DECLS: &'static [&'static Decl] = options::MONITOR;
}

impl<S: Set> std::fmt::Debug for Flags<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.values.fmt(f)
    }
}

impl<S: Set> Flags<S> {
    /// The worker threads asked for (`--threads`).
    pub fn threads(&self) -> Option<usize> {
        self.values.count(Setting::Threads).map(|n| n as usize)
    }

    /// Whether the terminal is to stay quiet (`--quiet`).
    pub fn quiet(&self) -> bool {
        self.values.switch(Setting::Quiet)
    }
}

/// The clap argument a declaration makes.
fn arg(d: &'static Decl) -> clap::Arg {
    use clap::builder::PossibleValuesParser;
    use clap::ArgAction;
    let id = &d.setting.flag()[2..];
    let a = clap::Arg::new(id).long(id).help(d.help);
    let a = match d.kind {
        Kind::Switch | Kind::Without => return a.action(ArgAction::SetTrue),
        Kind::Name(names) => a.value_parser(
            PossibleValuesParser::new(names).try_map(move |s| d.parse(&s).map_err(BadValue)),
        ),
        Kind::Described(names, help) => a.value_parser(
            PossibleValuesParser::new(
                names
                    .iter()
                    .zip(help)
                    .map(|(n, h)| clap::builder::PossibleValue::new(n).help(h)),
            )
            .try_map(move |s| d.parse(&s).map_err(BadValue)),
        ),
        Kind::Repeated => a.action(ArgAction::Append),
        Kind::Keys => a
            .action(ArgAction::Append)
            .value_delimiter(',')
            .num_args(0..),
        Kind::Path => a.value_parser(clap::builder::PathBufValueParser::new().map(Value::Path)),
        Kind::Paths => a
            .action(ArgAction::Append)
            .value_parser(clap::builder::PathBufValueParser::new()),
        Kind::Count { .. }
        | Kind::Share { .. }
        | Kind::Text
        | Kind::Key
        | Kind::Number
        | Kind::Days => a.value_parser(move |s: &str| d.parse(s).map_err(BadValue)),
    };
    let a = a.value_name(d.value_name());
    match d.default_text() {
        Some(t) => a.default_value(t),
        None => a,
    }
}

impl<S: Set> clap::FromArgMatches for Flags<S> {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut values = Values::defaults(S::DECLS);
        for d in S::DECLS {
            let id = &d.setting.flag()[2..];
            // A default is the declaration's: only what was given is set,
            // so a request can tell the two apart (`Values::is_given`).
            if m.value_source(id) != Some(clap::parser::ValueSource::CommandLine) {
                continue;
            }
            let v = match d.kind {
                Kind::Switch | Kind::Without => m.get_flag(id).then_some(Value::Switch(true)),
                Kind::Repeated | Kind::Keys => m
                    .get_many::<String>(id)
                    .map(|v| Value::List(v.cloned().collect())),
                Kind::Paths => m
                    .get_many::<std::path::PathBuf>(id)
                    .map(|v| Value::Paths(v.cloned().collect())),
                _ => m.get_one::<Value>(id).cloned(),
            };
            if let Some(v) = v {
                values.set(d.setting, v);
            }
        }
        Ok(Flags {
            values,
            set: PhantomData,
        })
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl<S: Set> clap::Args for Flags<S> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        S::DECLS.iter().fold(cmd, |c, d| c.arg(arg(d)))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

/// A flag's value that is not one it takes: what to give, and what was
/// given (clap adds the flag).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadValue(String);

impl std::fmt::Display for BadValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadValue {}

/// A share strictly between 0 and 1 (`--max-regression-rate`, `--delta`).
pub fn share(s: &str) -> Result<f64, BadValue> {
    share_of(s, false)
}

/// A share in [0, 1).
pub fn share_or_zero(s: &str) -> Result<f64, BadValue> {
    share_of(s, true)
}

/// A flag's text as a share below 1, by the declarations' one rule.
fn share_of(s: &str, zero: bool) -> Result<f64, BadValue> {
    match s.parse::<f64>() {
        Ok(x) if options::share_holds(zero, false, x) => Ok(x),
        _ => Err(BadValue(options::share_reason(
            zero,
            false,
            &format!("{s:?}"),
        ))),
    }
}

/// `--format`: the library's names, parsed by the library.
pub fn format() -> impl TypedValueParser<Value = Format> {
    clap::builder::PossibleValuesParser::new(Format::NAMES).try_map(|s| s.parse::<Format>())
}

/// `--from`: the library's names, parsed by the library.
pub fn from() -> impl TypedValueParser<Value = InputFormat> {
    clap::builder::PossibleValuesParser::new(InputFormat::NAMES)
        .try_map(|s| s.parse::<InputFormat>())
}

/// `--label`: any text but the empty one (a run must be told apart).
pub fn label(s: &str) -> Result<String, BadValue> {
    match s {
        "" => Err(BadValue(
            "give a non-empty name (the run column of every table)".to_string(),
        )),
        s => Ok(s.to_string()),
    }
}

/// The exit codes of every command that decides nothing, for its help.
macro_rules! done {
    () => {
        "Exit codes: 0 done; 2 could not do it (an invalid line FILE:LINE, a bad config, an unreadable file, a refused output path)."
    };
}
pub(crate) use done;
