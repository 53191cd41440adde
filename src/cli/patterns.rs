//! `critic-gate patterns`: the trivial-ack patterns each smart variant
//! matches, as a TOML list ready to paste (the built-ins without a config).

use std::path::PathBuf;
use std::process::ExitCode;

use super::CliResult;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print the list each variant of this config ends up with, and the
    /// built-ins a variant's own list leaves out.
    #[arg(long)]
    pub config: Option<PathBuf>,
}

pub fn run(a: Args) -> CliResult {
    let text = critic_gate::jobs::patterns::run(&critic_gate::jobs::patterns::Request {
        config: a.config,
    })?;
    super::output::stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}
