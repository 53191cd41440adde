//! `critic-gate derive`: the intent verdict and fabrication findings
//! symfonic-core 9.12.0 computes for each line of inputs (user message,
//! draft, tool calls, the deployment's identifier keys and tool trigger
//! keywords, hydrated context), one JSON line out per line in: how an
//! adopter checks what symfonic would derive for a domain, and how the
//! port is held to upstream.

use std::process::ExitCode;

use super::CliResult;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// JSON Lines of inputs (plain, .gz or .zst; `-` is standard input):
    /// `{"user_message", "draft", "tool_calls", "identifier_keys",
    /// "tool_trigger_keywords", "hydrated_context", "intent_on"}`.
    pub file: String,
    /// Benchmark: time the derivations alone (every line read first) and
    /// print `TURNS SECONDS FINDINGS`.
    #[arg(long, hide = true)]
    pub time: bool,
}

pub fn run(a: Args) -> CliResult {
    let name = if a.file == "-" { "<stdin>" } else { &a.file };
    let bytes = critic_gate::explain::read_input(&a.file)?;
    let text = critic_gate::explain::utf8_text(name, &bytes)?;
    // A byte-order mark at the start of the file is skipped, as replay does.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if a.time {
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let (n, secs, findings) = critic_gate::derive::time_derivations(&lines)
            .map_err(|e| critic_gate::Error::Read(format!("{name}: {e}")))?;
        super::output::stdout(&format!("{n} {secs:.3} {findings}\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = String::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v = critic_gate::derive::derive_line(line)
            .map_err(|e| critic_gate::Error::Read(format!("{name}:{}: {e}", n + 1)))?;
        out.push_str(&v.to_string());
        out.push('\n');
    }
    super::output::stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}
