//! `critic-gate init`: write a commented starter config (legacy against
//! smart, the built-in ack patterns spelled out, prices, budgets and the
//! `[deployment]` table).

use std::path::PathBuf;
use std::process::ExitCode;

use super::CliResult;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The config file to write (`-`: standard output).
    #[arg(default_value = "critic-gate.toml")]
    pub file: PathBuf,
    /// Replace the file if it exists.
    #[arg(long)]
    pub force: bool,
}

pub fn run(a: Args) -> CliResult {
    let stdout = a.file.as_os_str() == "-";
    let request = critic_gate::jobs::init::Request {
        out: (!stdout).then_some(a.file),
        force: a.force,
    };
    let w = critic_gate::jobs::init::run(&request)?;
    match &w.out {
        None => super::output::stdout(&w.text)?,
        Some(p) => super::output::stdout(&format!(
            "wrote {}: legacy against smart, symfonic's defaults; edit it, then\n  critic-gate replay TRAFFIC --config {} --out reports/first\n",
            p.display(),
            shell_word(&p.display().to_string())
        ))?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `s` as one word of a POSIX shell command line (quoted when it must be).
fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/-+=:,@".contains(c));
    match plain {
        true => s.to_string(),
        false => format!("'{}'", s.replace('\'', "'\\''")),
    }
}
