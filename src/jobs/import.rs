//! `import`: chat transcripts or OTLP traces written as traffic lines, so
//! a conversion can be inspected, diffed and kept; each signal marked
//! recorded, derived or unknown.

use std::path::PathBuf;

use crate::import::InputFormat;
use crate::pipeline::{ImportOptions, ImportOutcome};

/// What to import, and where.
#[derive(Clone, Debug)]
pub struct Request {
    pub sources: Vec<String>,
    pub from: InputFormat,
    /// A config whose `[deployment]` table says how to derive the signals.
    pub config: Option<PathBuf>,
    /// The traffic file written (JSON Lines).
    pub out: PathBuf,
    pub skip_invalid: bool,
    pub max_line_bytes: usize,
}

/// The import, written, and what `import` says on stderr.
pub struct Imported {
    pub outcome: ImportOutcome,
    pub text: String,
}

/// Import the sources into the request's file.
pub fn run(r: &Request) -> crate::Result<Imported> {
    let plan = super::load_plan(r.config.as_deref())?;
    let o = ImportOptions {
        sources: r.sources.clone(),
        from: r.from,
        deployment: plan.deployment,
        out: r.out.clone(),
        skip_invalid: r.skip_invalid,
        max_line_bytes: r.max_line_bytes,
    };
    let outcome = crate::pipeline::import(&o)?;
    let mut text = format!(
        "imported {} into {}",
        crate::summary::text::count(outcome.turns, "turn", "turns"),
        r.out.display()
    );
    if let Some(rejects) = &outcome.rejects {
        text.push_str(&format!(
            "; {} records set aside in {}",
            outcome.rejected,
            rejects.display()
        ));
    }
    for (k, n) in &outcome.counts {
        text.push_str(&format!("\n  {k}: {n}"));
    }
    text.push('\n');
    Ok(Imported { outcome, text })
}
