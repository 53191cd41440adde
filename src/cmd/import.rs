//! `import`: chat transcripts or OTLP traces written as traffic lines, so
//! a conversion can be inspected, diffed and kept; each signal marked
//! recorded, derived or unknown.

use crate::cmd::args::{self, Flags};
use crate::options::{Setting, Values};
use std::path::PathBuf;

use crate::import::InputFormat;
use crate::pipeline::{ImportOptions, ImportOutcome};

/// The command's one line in `critic-gate --help`, and the first of its
/// own `--help`.
pub const ABOUT: &str = "Convert chat transcripts or symfonic's OpenTelemetry traces into the \
     traffic format (what replay --from reads them as)";

/// What `--help` adds after the options: examples, exit codes, the
/// reference.
pub const HELP: &str = concat!(
    "Example:
  critic-gate import transcripts.jsonl --from openai-chat --config gate.toml --out traffic.jsonl

",
    super::args::done!(),
    "
Reference: docs/import-formats.md, docs/importing.md."
);

// Its docs are the flags' help, where `[deployment]` names a config table.
#[allow(rustdoc::broken_intra_doc_links)]
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Transcript or trace files (plain, .gz or .zst); `-` is standard input.
    #[arg(required = true)]
    pub files: Vec<String>,
    /// The input's format: openai-chat or otlp (see docs/import-formats.md).
    #[arg(long, value_parser = super::args::from())]
    pub from: crate::import::InputFormat,
    /// The traffic file to write (JSON Lines); replaced only when every
    /// input was read.
    #[arg(long)]
    pub out: PathBuf,
    /// Config whose [deployment] table says how production was configured
    /// (only that table is read here).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The declared options (`options::IMPORT`).
    #[command(flatten)]
    pub flags: Flags<args::Import>,
}

impl Args {
    /// The request these flags make.
    pub fn request(&self) -> Request {
        Request::of(
            self.files.clone(),
            self.from,
            self.config.clone(),
            self.out.clone(),
            &self.flags.values,
        )
    }
}

impl Request {
    /// The request the declared options (`options::IMPORT`) make, from
    /// either front end (the worker threads are the caller's to start).
    pub fn of(
        sources: Vec<String>,
        from: InputFormat,
        config: Option<PathBuf>,
        out: PathBuf,
        v: &Values,
    ) -> Request {
        Request {
            sources,
            from,
            config,
            out,
            skip_invalid: v.switch(Setting::SkipInvalid),
            max_line_bytes: v
                .count(Setting::MaxLineBytes)
                .expect("declared with a default") as usize,
        }
    }
}

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
