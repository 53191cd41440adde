//! `merge`: the reports of one replay over every shard's files, from the
//! shards' partial results (`replay --partial`), byte for byte. The engine
//! is `crate::pipeline::merge`, whose typed request is `MergeOptions`.

use std::path::PathBuf;

use crate::cmd::args::{self, Flags};
use crate::options::{Setting, Values};
use crate::pipeline::MergeOptions;
use crate::summary::partial::PartialInput;

/// The command's one line in `critic-gate --help`, and the first of its
/// own `--help`.
pub const ABOUT: &str = "Merge shards' partial results (`replay --partial`) into the reports of \
     one replay over all their files";

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
    /// The declared options (`options::MERGE_OPTIONS`).
    #[command(flatten)]
    pub flags: Flags<args::Merge>,
}

/// What to merge, and where the reports go./// What to merge, and where the reports go.
pub struct Request {
    pub options: MergeOptions,
    pub out: PathBuf,
}

impl Args {
    /// The request these flags make.
    pub fn request(&self) -> Request {
        let inputs = self.partials.iter().cloned().map(PartialInput::File);
        Request::of(inputs.collect(), self.out.clone(), &self.flags.values)
    }
}

impl Request {
    /// The request the declared options (`options::MERGE_OPTIONS`) make,
    /// from either front end (the label defaults to the output folder's
    /// name).
    pub fn of(inputs: Vec<PartialInput>, out: PathBuf, v: &Values) -> Request {
        Request {
            options: MergeOptions {
                inputs,
                label: v
                    .text(Setting::Label)
                    .unwrap_or_else(|| crate::replay::options::default_label(&out)),
                format: v.name(Setting::Format).expect("declared with a default"),
                force: v.switch(Setting::Force),
            },
            out,
        }
    }
}

/// Merge the partial results into the request's folder: the one entry of
/// the command line and the Python package.
pub fn run(r: Request) -> crate::Result<crate::pipeline::Outcome> {
    crate::pipeline::merge(r.options, &r.out)
}
