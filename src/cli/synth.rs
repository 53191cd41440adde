//! `critic-gate synth`: write realistic synthetic traffic (the mix is
//! documented in docs/datasets.md and in `critic_gate::synth`).

use std::path::PathBuf;
use std::process::ExitCode;

use critic_gate::synth::Mix;

use super::CliResult;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// How many turns to write.
    #[arg(long)]
    pub turns: u64,
    /// Random seed (same seed, same traffic).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output file (`.gz` or `.zst` compress); `-` is standard output.
    #[arg(long)]
    pub out: PathBuf,
    /// The traffic mix: default (mostly English), or multilingual (about
    /// half the drafts not ASCII).
    #[arg(long, default_value = "default", value_parser = mix())]
    pub mix: Mix,
    /// What to write: traffic (critic-gate's format) or openai-chat (the
    /// same runs as chat transcripts, one conversation a line, for
    /// `--from openai-chat`).
    #[arg(long, default_value = "traffic", value_parser = ["traffic", "openai-chat"])]
    pub shape: String,
}

fn mix() -> impl clap::builder::TypedValueParser<Value = Mix> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Mix::NAMES).try_map(|s| s.parse::<Mix>())
}

pub fn run(a: Args) -> CliResult {
    let request = critic_gate::jobs::synth::Request {
        turns: a.turns,
        seed: a.seed,
        mix: a.mix,
        transcripts: a.shape == "openai-chat",
        out: a.out,
    };
    critic_gate::jobs::synth::run(&request)?;
    Ok(ExitCode::SUCCESS)
}
