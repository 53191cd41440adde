//! The `critic-gate` binary: a thin layer over the library. Each command's
//! flags, help and request live in `critic_gate::cmd::<name>`; `src/cli/`
//! parses them, runs the request and prints.
//!
//! Exit codes: 0 success (for `check`: every budget passes); 1 a `check` or
//! `diff` budget failed; 2 the tool could not do its job (bad input, bad
//! config, unreadable files).

mod cli;

use std::process::ExitCode;

use clap::Parser;

/// The binary's allocator, not the library's (the Python module keeps its
/// host's): see Cargo.toml for why.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => code,
        Err(e) => {
            cli::output::stderr(&format!("critic-gate: {e}\n"));
            match (&e, cli::signalled()) {
                // Stopped by a signal: exit as the shell reports one.
                (critic_gate::Error::Interrupted, Some(sig)) => ExitCode::from(128 + sig),
                _ => ExitCode::from(e.exit_code()),
            }
        }
    }
}
