//! `merge`: the reports of one replay over every shard's files, from the
//! shards' partial results (`replay --partial`), byte for byte. The engine
//! is `crate::pipeline::merge`, whose typed request is `MergeOptions`.

use std::path::PathBuf;

use crate::pipeline::MergeOptions;
use crate::replay::Format;
use crate::summary::partial::PartialInput;

/// What `--help` adds after the options: examples, exit codes, the
/// reference.
pub const HELP: &str = concat!(
    "Example:
  critic-gate merge shards/*.partial --out reports/2026-11

",
    super::args::done!(),
    "
Reference: docs/shards-python-ray.md."
);

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Partial results, in the order of their shards' files.
    #[arg(required = true, value_name = "PARTIAL")]
    pub partials: Vec<PathBuf>,
    /// Folder for the reports (created if needed).
    #[arg(long)]
    pub out: PathBuf,
    /// The run's name in the `run` column of every table (default: the
    /// output folder's name).
    #[arg(long, value_name = "NAME", value_parser = super::args::label)]
    pub label: Option<String>,
    /// Write every table as csv, parquet (with the declared schema) or both.
    #[arg(long, default_value = Format::default().name(), value_parser = super::args::format())]
    pub format: Format,
    /// Write into --out even when it is a non-empty folder that holds no
    /// earlier critic-gate report.
    #[arg(long)]
    pub force: bool,
    /// No summary on stderr.
    #[arg(long)]
    pub quiet: bool,
}

impl Args {
    /// The merge these flags ask for (the label defaults to the output
    /// folder's name).
    pub fn options(&self) -> MergeOptions {
        MergeOptions {
            inputs: self
                .partials
                .iter()
                .cloned()
                .map(PartialInput::File)
                .collect(),
            label: self
                .label
                .clone()
                .unwrap_or_else(|| crate::replay::options::default_label(&self.out)),
            format: self.format,
            force: self.force,
        }
    }
}

/// What to merge, and where the reports go.
pub struct Request {
    pub options: MergeOptions,
    pub out: PathBuf,
}

impl Args {
    /// The request these flags make.
    pub fn request(&self) -> Request {
        Request {
            options: self.options(),
            out: self.out.clone(),
        }
    }
}

/// Merge the partial results into the request's folder: the one entry of
/// the command line and the Python package.
pub fn run(r: Request) -> crate::Result<crate::pipeline::Outcome> {
    crate::pipeline::merge(r.options, &r.out)
}
