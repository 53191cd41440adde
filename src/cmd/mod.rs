//! The commands, one module per command, shared by the command line and
//! the Python package. Each reads top-down: what `--help` adds (`HELP`),
//! its flags (clap `Args`) and the `Request` they make, `run`, and an
//! outcome that carries what the command prints. `src/cli/` parses the
//! flags, runs the request and prints; `python/` builds the same requests
//! from keyword arguments, so a command behaves the same either way (the
//! same checks, errors and files).
//!
//! The engines stay where they are (`pipeline` for replays, `calibrate`,
//! `mine`, `check`, `diff`); a command adds what a user asks in its terms:
//! reading the config, merging budgets, naming the outputs, the text.

pub mod args;
pub mod calibrate;
pub mod check;
pub mod derive;
pub mod diff;
pub mod explain;
pub mod import;
pub mod init;
pub mod labels;
pub mod merge;
pub mod mine;
pub mod monitor;
pub mod patterns;
pub mod plan;
pub mod replay;
pub mod sample;
pub mod stubs;
pub mod sweep;
pub mod synth;

use std::path::{Path, PathBuf};

use crate::config::{ConfigFile, Plan};
use crate::options::{self, Given, Setting, Values};
use crate::replay::ReplayOptions;

/// How a job reads its traffic and names its run: the flags `replay`,
/// `sweep`, `calibrate` and `mine` share.
#[derive(Clone, Debug)]
pub struct Reading {
    /// Set invalid lines aside (`--skip-invalid`) instead of stopping.
    pub skip_invalid: bool,
    /// Longer lines are invalid (`--max-line-bytes`).
    pub max_line_bytes: usize,
    /// Write into a non-empty folder that holds no earlier report.
    pub force: bool,
    /// A skip is risky below this ack share (`--max-ack-share`).
    pub max_ack_share: f64,
    /// The input's format (`--from`).
    pub from: crate::import::InputFormat,
    /// The run's label (default: the output folder's name).
    pub label: Option<String>,
}

impl Default for Reading {
    /// Every choice at its declared default.
    fn default() -> Reading {
        Reading::of(&Values::defaults(options::RUN))
    }
}

/// How a command that reads its traffic in one serial pass of its own
/// (`plan`, `sample`, `labels`, `monitor`) reads it, and whether it may
/// write over `--out`: the options of [`options::PASS`].
#[derive(Clone, Debug)]
pub struct Pass {
    /// The input's format (`--from`).
    pub from: crate::import::InputFormat,
    /// Count invalid lines (`--skip-invalid`) instead of stopping.
    pub skip_invalid: bool,
    /// Longer lines are invalid (`--max-line-bytes`).
    pub max_line_bytes: usize,
    /// Write over what `--out` holds (`--force`).
    pub force: bool,
    /// Set by a Ctrl-C: the pass ends with `Error::Interrupted` at its
    /// next block, before the command writes anything.
    pub stop: Stop,
}

/// A run's stop flag, set from outside the run: the command line's
/// SIGINT or SIGTERM, a Python caller's KeyboardInterrupt. None set it
/// by default.
#[derive(Clone, Debug, Default)]
pub struct Stop(Option<std::sync::Arc<std::sync::atomic::AtomicBool>>);

impl Stop {
    /// A stop set when `flag` is.
    pub fn of(flag: std::sync::Arc<std::sync::atomic::AtomicBool>) -> Stop {
        Stop(Some(flag))
    }

    pub fn stopped(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// `Error::Interrupted` once the flag is set: what a command asks
    /// before it writes.
    pub fn check(&self) -> crate::Result<()> {
        match self.stopped() {
            true => Err(crate::Error::Interrupted),
            false => Ok(()),
        }
    }
}

impl Pass {
    /// The pass a command's declared options ask for.
    pub fn of(v: &Values) -> Pass {
        let declared = "declared with a default";
        Pass {
            from: v.name(Setting::From).expect(declared),
            skip_invalid: v.switch(Setting::SkipInvalid),
            max_line_bytes: v.count(Setting::MaxLineBytes).expect(declared) as usize,
            force: v.switch(Setting::Force),
            stop: Stop::default(),
        }
    }
}

impl Default for Pass {
    /// Every option at its declared default.
    fn default() -> Pass {
        Pass::of(&Values::defaults(options::PASS))
    }
}

/// The most worker threads a run may ask for, per core: more only adds
/// contention, and a typo (`--threads 100000`) must not start thousands
/// of threads.
pub const THREADS_PER_CORE: usize = 4;

/// `n` worker threads, when 1 to [`THREADS_PER_CORE`] per core of this
/// machine; else a usage error naming the setting, for each front end to
/// spell.
pub fn threads(n: usize) -> crate::Result<usize> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let max = THREADS_PER_CORE * cores;
    match n {
        1.. if n <= max => Ok(n),
        _ => Err(crate::Error::Usage(crate::said![crate::vocab::Setting::Threads, format!(" {n}: give 1 to {max} ({THREADS_PER_CORE} per core on this machine's {cores} cores)")])),
    }
}

/// A pool of `n` worker threads ([`threads`]) for one run: what a Python
/// caller's `threads=` runs on (the command line sizes the global pool).
pub fn worker_pool(n: usize) -> crate::Result<rayon::ThreadPool> {
    let n = threads(n)?;
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build()
        .map_err(|e| {
            crate::Error::System(crate::Failure::caused(
                crate::said![
                    crate::vocab::Setting::Threads,
                    format!(" {n}: cannot start the worker threads: {e}")
                ],
                e,
            ))
        })
}

/// `--assume-missing-at-random` and `--no-assume-missing-at-random` (as
/// `check` and `monitor` take them) read as one answer: assume, do not,
/// or None (the config's table decides).
pub fn assumed(v: &crate::options::Values) -> Option<bool> {
    match (
        v.switch(Setting::AssumeMissingAtRandom),
        v.switch(Setting::NoAssumeMissingAtRandom),
    ) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    }
}

/// `x` when it is in (0, 1), or [0, 1) with `zero`; else a usage error
/// naming `name`. Every job checks its own request, whoever built it.
pub fn share(name: Setting, x: f64, zero: bool) -> crate::Result<f64> {
    match options::share_holds(zero, false, x) {
        true => Ok(x),
        false => Err(crate::Error::usage(crate::said![
            name,
            format!(": {}", options::share_reason(zero, false, &x.to_string()))
        ])),
    }
}

impl Reading {
    /// How the declared options `v` (a set that holds [`options::RUN`])
    /// read the traffic and name the run.
    pub fn of(v: &Values) -> Reading {
        let declared = "declared with a default";
        Reading {
            skip_invalid: v.switch(Setting::SkipInvalid),
            max_line_bytes: v.count(Setting::MaxLineBytes).expect(declared) as usize,
            force: v.switch(Setting::Force),
            max_ack_share: v.share(Setting::MaxAckShare).expect(declared),
            from: v.name(Setting::From).expect(declared),
            label: v.text(Setting::Label),
        }
    }

    /// The choices a reading job can carry out: each held to its
    /// declaration, whoever built the request.
    pub fn validate(&self) -> crate::Result<()> {
        let checks = [
            (&options::MAX_ACK_SHARE, Given::Float(self.max_ack_share)),
            (
                &options::MAX_LINE_BYTES,
                Given::Int(self.max_line_bytes as i128),
            ),
        ];
        let label = self
            .label
            .clone()
            .map(|l| (&options::LABEL, Given::Text(l)));
        for (d, given) in checks.into_iter().chain(label) {
            d.check(given).map_err(|r| crate::Error::Usage(r.into()))?;
        }
        Ok(())
    }

    /// A replay of `sources` under `plan` into `out`, with these choices
    /// and every other option at its default.
    pub fn options(&self, sources: Vec<String>, plan: Plan, out: &Path) -> ReplayOptions {
        let label = self
            .label
            .clone()
            .unwrap_or_else(|| crate::replay::options::default_label(out));
        self.apply(ReplayOptions::new(sources, plan, label))
    }

    /// `o` with these choices (its label kept).
    pub fn apply(&self, mut o: ReplayOptions) -> ReplayOptions {
        o.input.skip_invalid = self.skip_invalid;
        o.input.max_line_bytes = self.max_line_bytes;
        o.input.from = self.from;
        o.outputs.force = self.force;
        o.tallies.max_ack_share = self.max_ack_share;
        o
    }
}

/// A config error raised once the plan was read (an ack pattern that does
/// not compile when its variant's gate is built) named with the config
/// file, as every other config error is: the boundary that knows the path
/// wraps it.
pub fn in_config(e: crate::Error, config: Option<&Path>) -> crate::Error {
    match (e, config) {
        // Read again only on this error path, to find the value's line.
        (crate::Error::Config(c), Some(p)) => crate::Error::Config(
            crate::config::ConfigFile::load(p)
                .map(|f| f.locate(c.clone()))
                .unwrap_or_else(|_| c.in_file(Some(p))),
        ),
        (e, _) => e,
    }
}

/// The plan of a config file; symfonic's defaults (legacy and smart)
/// without one.
pub fn load_plan(config: Option<&Path>) -> crate::Result<Plan> {
    match config {
        None => Ok(Plan::default_plan()),
        Some(p) => Ok(ConfigFile::load(p).and_then(|c| c.plan())?),
    }
}

/// Where a replay's gate config comes from.
#[derive(Clone, Debug, Default)]
pub enum Config {
    /// symfonic's defaults, as `legacy` and `smart`.
    #[default]
    Defaults,
    /// A config file (TOML, or JSON when its name ends in `.json`).
    File(PathBuf),
    /// A config's TOML text (the Python shard API ships text to workers
    /// that may not see the driver's files).
    Text(String),
}

impl Config {
    /// The file, when the config is one (to name it in an error).
    pub fn file(&self) -> Option<&Path> {
        match self {
            Config::File(p) => Some(p),
            _ => None,
        }
    }

    /// The plan the config makes.
    pub fn plan(&self) -> crate::Result<Plan> {
        match self {
            Config::Defaults => Ok(Plan::default_plan()),
            _ => Ok(self.read()?.plan()?),
        }
    }

    /// A config given as JSON (a Python caller's dict) as the TOML text of
    /// a file holding it.
    pub fn toml_of_json(json: &str) -> crate::Result<String> {
        let bad = |why: String| {
            crate::Error::Config(crate::config::ConfigError::value(format!(
                "config (a dict): {why}"
            )))
        };
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| bad(e.to_string()))?;
        match toml::Value::try_from(value) {
            Ok(toml::Value::Table(t)) => toml::to_string(&t).map_err(|e| bad(e.to_string())),
            Ok(_) => Err(bad("give a table (a dict of keys)".into())),
            Err(e) => Err(bad(format!(
                "{e} (TOML has no null: leave a key out for its default)"
            ))),
        }
    }

    /// The config as read (its `[sweep]` table included); symfonic's
    /// defaults are an empty config.
    pub fn read(&self) -> crate::Result<ConfigFile> {
        Ok(match self {
            Config::Defaults => ConfigFile::parse("", Path::new("config.toml"))?,
            Config::File(p) => ConfigFile::load(p)?,
            Config::Text(t) => ConfigFile::parse(t, Path::new("config.toml"))?,
        })
    }
}

impl From<Option<PathBuf>> for Config {
    fn from(file: Option<PathBuf>) -> Config {
        file.map_or(Config::Defaults, Config::File)
    }
}
