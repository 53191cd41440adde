//! `critic-gate import`: convert chat transcripts or symfonic's traces
//! into the traffic format, derived as the deployment derived them, into
//! one file that `replay` reads as it is.

use std::path::PathBuf;
use std::process::ExitCode;

use super::CliResult;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Transcript or trace files (plain, .gz or .zst); `-` is standard input.
    #[arg(required = true)]
    pub files: Vec<String>,
    /// The input's format: openai-chat or otlp (see docs/import-formats.md).
    #[arg(long, value_parser = super::replay::from())]
    pub from: critic_gate::import::InputFormat,
    /// The traffic file to write (JSON Lines); replaced only when every
    /// input was read.
    #[arg(long)]
    pub out: PathBuf,
    /// Config whose [deployment] table says how production was configured
    /// (only that table is read here).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Set what cannot be converted aside in OUT's .rejects.jsonl instead
    /// of stopping.
    #[arg(long)]
    pub skip_invalid: bool,
    /// Input lines longer than this many bytes are invalid.
    #[arg(long, value_name = "BYTES", default_value_t = critic_gate::DEFAULT_MAX_LINE_BYTES,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_line_bytes: usize,
    /// Worker threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Print nothing on success.
    #[arg(long)]
    pub quiet: bool,
}

pub fn run(a: Args) -> CliResult {
    super::start_workers(a.threads)?;
    let request = critic_gate::jobs::import::Request {
        sources: a.files,
        from: a.from,
        config: a.config,
        out: a.out,
        skip_invalid: a.skip_invalid,
        max_line_bytes: a.max_line_bytes,
    };
    super::output::waiting_for_stdin(&request.sources);
    let imported = critic_gate::jobs::import::run(&request)?;
    if !a.quiet {
        super::output::stderr(&imported.text);
    }
    Ok(ExitCode::SUCCESS)
}
