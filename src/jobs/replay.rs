//! `replay`: every variant of a config replayed over the traffic into a
//! report folder, a partial result (a shard of a larger replay), or both.

use std::path::{Path, PathBuf};

use super::Reading;
use crate::pipeline::partial::PartialTarget;
use crate::pipeline::{Outcome, Progress, Targets};
use crate::replay::{DecisionsMode, Format, ReplayOptions};

/// What to replay, and where the results go.
#[derive(Clone, Debug)]
pub struct Request {
    /// Traffic files (`-` is standard input).
    pub sources: Vec<String>,
    /// A gate config (None: symfonic's defaults as `legacy` and `smart`).
    pub config: Option<PathBuf>,
    /// The report folder (None: a partial result only).
    pub out: Option<PathBuf>,
    /// The partial result's file, for a later `merge`.
    pub partial: Option<PathBuf>,
    pub format: Format,
    pub decisions: DecisionsMode,
    /// Extra grouping dimensions (`scope.channel`).
    pub group_by: Vec<String>,
    /// The scope keys made columns (Some of no key: none; None: those of
    /// the first turns).
    pub scope_columns: Option<Vec<String>>,
    pub reading: Reading,
}

impl Request {
    /// The replay's options; its label is `reading.label`, else the name
    /// of the folder (or of the partial result's file without extension).
    pub fn options(&self) -> crate::Result<ReplayOptions> {
        self.reading.validate()?;
        crate::replay::validate_group_by(&self.group_by)?;
        let plan = super::load_plan(self.config.as_deref())?;
        let named = match (&self.out, &self.partial) {
            (Some(out), _) => out.clone(),
            (None, Some(p)) => p.with_extension(""),
            (None, None) => {
                return Err(crate::Error::Usage(
                    "replay: give a report folder (--out) or a partial result (--partial)".into(),
                ))
            }
        };
        let mut o = self.reading.options(self.sources.clone(), plan, &named);
        o.tallies.decisions = self.decisions;
        o.tallies.group_by = self.group_by.clone();
        // A scope-column name that is empty names no key.
        o.tallies.scope_columns = self
            .scope_columns
            .as_ref()
            .map(|ks| ks.iter().filter(|k| !k.is_empty()).cloned().collect());
        o.outputs.format = self.format;
        Ok(o)
    }

    /// Where the results go.
    pub fn targets(&self) -> Targets<'_> {
        Targets {
            out: self.out.as_deref(),
            partial: self
                .partial
                .as_deref()
                .map(|p: &Path| PartialTarget::File(p.to_path_buf())),
        }
    }
}

/// Run the replay.
pub fn run(r: &Request, progress: &dyn Progress) -> crate::Result<Outcome> {
    crate::pipeline::run_to(r.options()?, r.targets(), progress)
        .map(|(o, _)| o)
        .map_err(|e| super::in_config(e, r.config.as_deref()))
}
