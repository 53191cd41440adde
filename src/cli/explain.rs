//! `critic-gate explain`: show how each gate decides one turn, and why.
//!
//! The turn is a JSON argument, a file, or standard input. A file or stdin
//! may also hold JSON Lines: each turn is explained in turn (with `--json`,
//! one JSON object per line).

use std::path::PathBuf;
use std::process::ExitCode;

use critic_gate::explain::{render_json, render_text};
use critic_gate::gate::Gate;
use critic_gate::{Turn, Variant};

use super::{load_plan, CliResult};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The turn: inline JSON (`{"run_id":...}`), a file of one turn or of
    /// JSON Lines, or `-` / nothing for standard input.
    pub turn: Option<String>,
    /// Gate config (TOML, or JSON if it ends in .json). Default: symfonic's
    /// defaults, explained as `legacy` (flag off) and `smart` (flag on).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Print JSON instead of the readable trace.
    #[arg(long)]
    pub json: bool,
    /// The input's format: traffic, openai-chat (each turn of each
    /// conversation is explained) or otlp (each run of the trace); the
    /// config's [deployment] table says how to derive them.
    #[arg(long, default_value = "traffic", value_parser = super::replay::from())]
    pub from: critic_gate::import::InputFormat,
}

pub fn run(a: Args) -> CliResult {
    let plan = load_plan(a.config.as_deref())?;
    let gates = critic_gate::explain::gates(&plan)?;
    let pairs: Vec<(&Variant, &Gate)> = gates.iter().map(|(v, g)| (v, g)).collect();
    let (source, text) = match a.turn.as_deref() {
        // Inline JSON: an object, or anything else JSON starts with that a
        // file name would not (`[]` is an invalid turn, not a path).
        Some(s) if s.trim_start().starts_with(['{', '[']) => {
            ("argument".to_string(), s.as_bytes().to_vec())
        }
        None | Some("-") => (
            "<stdin>".to_string(),
            critic_gate::explain::read_input("-")?,
        ),
        Some(path) => (path.to_string(), critic_gate::explain::read_input(path)?),
    };
    let text = critic_gate::explain::utf8_text(&source, &text)?;
    let lines: Vec<(usize, std::borrow::Cow<str>)> = match a.from {
        critic_gate::import::InputFormat::Traffic => critic_gate::explain::turn_lines(text)
            .into_iter()
            .map(|(n, l)| (n, l.into()))
            .collect(),
        from => {
            let decoder = critic_gate::import::Decoder {
                format: from,
                deployment: plan.deployment.clone(),
                names: vec![source.clone()].into(),
                max_line_bytes: critic_gate::DEFAULT_MAX_LINE_BYTES,
            };
            critic_gate::import::convert_text(text, &source, &decoder)
                .map_err(|(n, e)| critic_gate::Error::Read(format!("{source}:{n}: {e}")))?
                .into_iter()
                .map(|(n, l)| (n as usize, l.into()))
                .collect()
        }
    };
    if lines.is_empty() {
        return Err(critic_gate::Error::Read(format!("{source}: no turn given")));
    }
    let mut out = String::new();
    for (n, line) in &lines {
        let turn = Turn::parse(line)
            .map_err(|e| critic_gate::Error::Read(format!("{source}:{n}: {e}")))?;
        if a.json {
            out.push_str(&render_json(&turn, &pairs).to_string());
            out.push('\n');
        } else {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&render_text(&turn, &pairs));
        }
    }
    super::output::stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}
