//! `critic-gate parse-only` (hidden): read and parse every line exactly as
//! `replay` does, evaluating nothing. The benchmark's baseline: the cost of
//! reading and parsing JSON that any replay pays.

use std::process::ExitCode;

use critic_gate::reader::{self, Block, ReadError, Source};
use critic_gate::turn::Turn;

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
    let (rx, recycler) = reader::blocks_recycled(
        a.files.iter().map(|f| Source { name: f.clone() }).collect(),
        2 * threads + 2,
        reader::DEFAULT_MAX_LINE_BYTES,
    )
    .map_err(|e| e.0)?;
    let (mut turns, mut invalid, mut bytes) = (0u64, 0u64, 0u64);
    let started = std::time::Instant::now();
    // The same scheduling as `replay` (pipeline::run_into).
    critic_gate::ordered::map_in_order(
        rx,
        2 * threads + 2,
        |item: Result<Block, ReadError>| {
            item.map(|b| {
                let (mut ok, mut bad) = (0, 0);
                for (n, l) in reader::lines(&b) {
                    let l = critic_gate::replay::without_bom(n, l);
                    if critic_gate::replay::is_blank(l) {
                        continue;
                    }
                    match std::str::from_utf8(l).ok().map(Turn::parse) {
                        Some(Ok(_)) => ok += 1,
                        _ => bad += 1,
                    }
                }
                (b, ok, bad)
            })
        },
        |item| -> Result<(), String> {
            let (b, ok, bad) = item.map_err(|e| e.0)?;
            turns += ok;
            invalid += bad;
            bytes += b.bytes().len() as u64;
            recycler.give(b);
            Ok(())
        },
    )?;
    let secs = started.elapsed().as_secs_f64();
    super::output::stdout(&format!(
        "parsed {turns} turns ({invalid} invalid), {:.1} MB in {secs:.2}s: {:.0} turns/s, {:.1} MB/s on {threads} threads",
        bytes as f64 / 1e6,
        turns as f64 / secs,
        bytes as f64 / 1e6 / secs
    ))?;
    Ok(ExitCode::SUCCESS)
}
