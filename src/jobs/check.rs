//! `check`: a replay's folder judged against release budgets. The budgets
//! are the request's own over the config's `[check]` table; with none at
//! all the job cannot judge, rather than pass a replay it judged nothing
//! on.

use std::path::PathBuf;

use crate::check::{judge, passed, regressions_judged, render_markdown, render_text};
use crate::check::{BudgetResult, ReplayDir};
use crate::config::{CheckConfig, ConfigError, ConfigErrorKind, ConfigFile};
use crate::vocab::FieldError;
use crate::Error;

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
                _ => Error::Usage(format!("{} {}", b.flag(), e.reason)),
            })?;
    }
    if !over.any_budget() {
        // Only the contract check would run: a pass would read as a
        // release verdict that judged nothing.
        return Err(Error::CannotJudge(format!(
            "{}: no budget was given, so there is nothing to judge; give at least one (for example --max-safety-regression-rate 0.02 --min-skip-rate 0.1) or a [check] table in --config",
            r.dir.display()
        )));
    }
    Ok(over)
}

/// Judge the folder; the Markdown, if asked for, is written first, so a
/// verdict is never printed that a failed write then contradicts.
pub fn run(r: &Request) -> crate::Result<Verdict> {
    let over = budgets(r)?;
    let dir = ReplayDir::open(&r.dir)?;
    crate::check::rows_agree(&r.dir, &dir)?;
    let results = judge(&dir, &over)?;
    if let Some(md) = &r.markdown {
        let listed = regressions_judged(&r.dir, &results)?;
        let text = render_markdown(
            &results,
            listed
                .as_ref()
                .map(|(lines, total)| (lines.as_slice(), *total)),
        );
        // Append, so it can be pointed at $GITHUB_STEP_SUMMARY.
        use std::io::Write;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(md)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .map_err(|e| Error::Write(format!("{}: {e}", md.display())))?;
    }
    Ok(Verdict {
        passed: passed(&results),
        text: render_text(&results),
        results,
    })
}
