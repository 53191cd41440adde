//! `check`: a replay's folder judged against release budgets. The budgets
//! are the request's own over the config's `[check]` table; with none at
//! all the job cannot judge, rather than pass a replay it judged nothing
//! on.

mod engine;
#[cfg(test)]
mod simulation;

pub use engine::*;

use std::path::PathBuf;

use crate::budgets::{Limit, BUDGETS};
use crate::cmd::args::{self, Flags};
use crate::config::{CheckConfig, ConfigError, ConfigErrorKind, ConfigFile};
use crate::options::{Setting, Values};
use crate::vocab::FieldError;
use crate::Error;

/// The command's one line in `critic-gate --help`, and the first of its
/// own `--help`.
pub const ABOUT: &str = "Apply release budgets to a replay's reports (exit 0 pass, 1 fail, 2 \
     cannot judge)";

/// What `--help` adds after the options: examples, exit codes, the
/// reference.
pub const HELP: &str = "\
Examples:
  critic-gate check reports/first --max-safety-regressions 0 --min-turns 1000
  critic-gate check reports/first --config gate.toml --markdown verdict.md   # budgets from [check]

Exit codes: 0 every budget passes; 1 a budget fails; 2 cannot judge (no budget given, a folder that is not a replay's or is damaged).
Reference: docs/ci.md.";

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("missing").args(["assume-missing-at-random", "no-assume-missing-at-random"])))]
pub struct Args {
    /// The output folder of a `replay`.
    pub dir: PathBuf,
    /// Config whose `[check]` table gives budgets (flags override it).
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub budgets: Budgets,
    /// The declared options (`options::CHECK`).
    #[command(flatten)]
    pub flags: Flags<args::Check>,
}

/// One flag per declared budget (`crate::budgets::BUDGETS`), its
/// help and value from the declaration.
#[derive(Debug, Default)]
pub struct Budgets(pub CheckConfig);

impl clap::FromArgMatches for Budgets {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut b = Budgets::default();
        b.update_from_arg_matches(m)?;
        Ok(b)
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        for d in &BUDGETS {
            let a = match d.limit {
                Limit::Count => m.get_one::<u64>(d.key).copied().map(Amount::Count),
                Limit::Rate => m.get_one::<f64>(d.key).copied().map(Amount::Rate),
            };
            if let Some(a) = a {
                self.0.limits.insert(d.budget, a);
            }
        }
        Ok(())
    }
}

impl clap::Args for Budgets {
    fn augment_args(mut cmd: clap::Command) -> clap::Command {
        for d in &BUDGETS {
            let arg = clap::Arg::new(d.key).long(d.long).help(d.help);
            cmd = cmd.arg(match d.limit {
                Limit::Count => arg.value_name("N").value_parser(clap::value_parser!(u64)),
                Limit::Rate => arg.value_name("R").value_parser(clap::value_parser!(f64)),
            });
        }
        cmd
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl Args {
    /// The request these flags make.
    pub fn request(&self) -> Request {
        Request::of(
            self.dir.clone(),
            self.config.clone(),
            self.budgets.0.clone(),
            &self.flags.values,
        )
    }
}

impl Request {
    /// The request the declared options (`options::CHECK`) make, with the
    /// budgets given directly, from either front end.
    pub fn of(dir: PathBuf, config: Option<PathBuf>, budgets: CheckConfig, v: &Values) -> Request {
        Request {
            dir,
            config,
            budgets: CheckConfig {
                variant: v.list(Setting::Variant).filter(|v| !v.is_empty()),
                assume_missing_at_random: crate::cmd::assumed(v),
                ..budgets
            },
            markdown: v.path(Setting::Markdown),
        }
    }
}

/// What to judge, and against what.
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// A replay's output folder.
    pub dir: PathBuf,
    /// A config whose `[check]` table gives budgets.
    pub config: Option<PathBuf>,
    /// Budgets given directly (flags, keyword arguments): each over the
    /// config's value; `variant` names the variants to judge.
    pub budgets: CheckConfig,
    /// Also append the verdict as Markdown to this file.
    pub markdown: Option<PathBuf>,
}

/// The verdict.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// Every budget applied to every judged variant.
    pub results: Vec<BudgetResult>,
    /// Whether every budget passed (exit 0; else 1).
    pub passed: bool,
    /// What `check` prints.
    pub text: String,
}

/// The budgets that apply: each of the request's over the config's
/// `[check]` value, every limit checked and named where it came from.
pub fn budgets(r: &Request) -> crate::Result<CheckConfig> {
    let config = match &r.config {
        Some(p) => ConfigFile::load(p)?.check.unwrap_or_default(),
        None => CheckConfig::default(),
    };
    let mut over = r.budgets.over(&config);
    for (b, a) in over.limits.iter_mut() {
        *a = b
            .limit(*a)
            .map_err(|e| match (&r.config, r.budgets.get(*b)) {
                // A bad value in the file is the config's error; one given
                // directly is the request's.
                (Some(c), None) => Error::Config(
                    ConfigError {
                        file: None,
                        line: None,
                        kind: ConfigErrorKind::Field(FieldError {
                            field: format!("[check] {}", b.key()),
                            reason: e.reason,
                        }),
                    }
                    .in_file(Some(c)),
                ),
                _ => Error::usage(crate::said![*b, format!(" {}", e.reason)]),
            })?;
    }
    if !over.any_budget() {
        // Only the contract check would run: a pass would read as a
        // release verdict that judged nothing.
        return Err(Error::CannotJudge(crate::said![
            format!("{}: no budget was given, so there is nothing to judge; give at least one (for example ", r.dir.display()),
            crate::budgets::Budget::MaxSafetyRegressionRate,
            " 0.02 ",
            crate::budgets::Budget::MinSkipRate,
            " 0.1) or a [check] table in ",
            crate::vocab::Setting::Config
        ]));
    }
    Ok(over)
}

/// A config that names production judges only a folder replayed with that
/// production: the figures a budget reads (which variant's skips are
/// production's, whose risk is unknown) were worked out for the folder's.
fn same_production(r: &Request, dir: &ReplayDir) -> crate::Result<()> {
    let Some(p) = &r.config else {
        return Ok(());
    };
    let named = ConfigFile::load(p)?.production;
    let run = &dir.summary;
    match named {
        Some(n) if n != run.production => Err(Error::cannot_judge(format!(
            "{}: replayed with `{}` as production, but {} names `{n}`: its figures are of another production; replay with this config, or check with the one it was replayed with",
            r.dir.display(),
            run.production,
            p.display()
        ))),
        _ => Ok(()),
    }
}

/// Judge the folder; the Markdown, if asked for, is written first, so a
/// verdict is never printed that a failed write then contradicts.
pub fn run(r: &Request) -> crate::Result<Verdict> {
    let over = budgets(r)?;
    let dir = ReplayDir::open(&r.dir)?;
    same_production(r, &dir)?;
    rows_agree(&r.dir, &dir)?;
    decisions_agree(&r.dir, &dir)?;
    let results = judge(&dir, &over)?;
    if let Some(md) = &r.markdown {
        let listed = regressions_judged(&r.dir, &results)?;
        let text = render_markdown(
            &results,
            listed
                .as_ref()
                .map(|(lines, total, counted)| (lines.as_slice(), *total, *counted)),
            over.says_assumed(),
        );
        // Append, so it can be pointed at $GITHUB_STEP_SUMMARY.
        use std::io::Write;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(md)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .map_err(|e| {
                Error::Write(crate::Failure::caused(format!("{}: {e}", md.display()), e))
            })?;
    }
    Ok(Verdict {
        passed: passed(&results),
        text: render_text(&results, over.says_assumed()),
        results,
    })
}
