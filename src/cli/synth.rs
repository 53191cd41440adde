//! `critic-gate synth`: write realistic synthetic traffic (the mix is
//! documented in the README and in `critic_gate::synth`).

use std::io::{BufWriter, Write};
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
    let name = a.out.display().to_string();
    let err = |e: std::io::Error| critic_gate::Error::Write(format!("{name}: {e}"));
    let mut sink: Box<dyn Write> = if name == "-" {
        Box::new(BufWriter::new(std::io::stdout().lock()))
    } else {
        let f = std::fs::File::create(&a.out).map_err(err)?;
        let w = BufWriter::with_capacity(1 << 20, f);
        if name.ends_with(".gz") {
            Box::new(flate2::write::GzEncoder::new(
                w,
                flate2::Compression::fast(),
            ))
        } else if name.ends_with(".zst") {
            Box::new(zstd::Encoder::new(w, 3).map_err(err)?.auto_finish())
        } else {
            Box::new(w)
        }
    };
    let written = match a.shape.as_str() {
        "openai-chat" => critic_gate::transcripts::write(a.turns, a.seed, a.mix, &mut sink),
        _ => critic_gate::synth::write_mix(a.turns, a.seed, a.mix, &mut sink),
    }
    .and_then(|_| sink.flush());
    drop(sink);
    match written {
        // `synth --out - | head`: a closed pipe ends the output quietly.
        Err(e) if name == "-" && e.kind() == std::io::ErrorKind::BrokenPipe => {
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Err(err(e)),
        Ok(()) => Ok(ExitCode::SUCCESS),
    }
}
