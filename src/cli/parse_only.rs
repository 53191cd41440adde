//! `critic-gate parse-only` (hidden): read and parse every line exactly as
//! `replay` does, evaluating nothing (the benchmark's baseline; see
//! `critic_gate::parse_only`).

use std::process::ExitCode;

use super::CliResult;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Traffic files, as for `replay`.
    #[arg(required = true)]
    pub files: Vec<String>,
    /// Worker threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
}

pub fn run(a: Args) -> CliResult {
    super::start_workers(a.threads)?;
    let threads = rayon::current_num_threads();
    let started = std::time::Instant::now();
    let p = critic_gate::parse_only(&a.files)?;
    let secs = started.elapsed().as_secs_f64();
    super::output::stdout(&format!(
        "parsed {} turns ({} invalid), {:.1} MB in {secs:.2}s: {:.0} turns/s, {:.1} MB/s on {threads} threads\n",
        p.turns,
        p.invalid,
        p.bytes as f64 / 1e6,
        p.turns as f64 / secs,
        p.bytes as f64 / 1e6 / secs
    ))?;
    Ok(ExitCode::SUCCESS)
}
