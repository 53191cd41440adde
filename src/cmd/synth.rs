//! `synth`: realistic synthetic traffic (the mix is documented in
//! `crate::synth`), as traffic lines or as the same runs in chat
//! transcripts; `.gz` and `.zst` names are compressed.

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use crate::cmd::args::{self, Flags};
use crate::options::{Setting, Shape, Values};
use crate::synth::Mix;
use crate::Error;

/// The command's one line in `critic-gate --help`, and the first of its
/// own `--help`.
pub const ABOUT: &str = "Generate realistic synthetic traffic";

/// What `--help` adds after the options: examples, exit codes, the
/// reference.
pub const HELP: &str = concat!(
    "Example:
  critic-gate synth --turns 100000 --seed 7 --out synthetic.jsonl.zst

",
    super::args::done!(),
    "
Reference: docs/datasets.md (the mixes)."
);

#[derive(clap::Args, Debug)]
pub struct Args {
    /// How many turns to write.
    #[arg(long)]
    pub turns: u64,
    /// Output file (`.gz` or `.zst` compress); `-` is standard output.
    #[arg(long)]
    pub out: PathBuf,
    /// The declared options (`options::SYNTH`).
    #[command(flatten)]
    pub flags: Flags<args::Synth>,
}

impl Args {
    /// The request these flags make.
    pub fn request(&self) -> Request {
        Request::of(self.turns, self.out.clone(), &self.flags.values)
    }
}

impl Request {
    /// The request the declared options (`options::SYNTH`) make, from
    /// either front end.
    pub fn of(turns: u64, out: PathBuf, v: &Values) -> Request {
        let declared = "declared with a default";
        Request {
            turns,
            seed: v.count(Setting::Seed).expect(declared),
            mix: v.name(Setting::Mix).expect(declared),
            transcripts: v.name::<Shape>(Setting::Shape).expect(declared) == Shape::OpenaiChat,
            out,
        }
    }
}

/// What to write.
#[derive(Clone, Debug)]
pub struct Request {
    pub turns: u64,
    /// The same seed writes the same traffic.
    pub seed: u64,
    pub mix: Mix,
    /// Chat transcripts (`--shape openai-chat`) instead of traffic lines.
    pub transcripts: bool,
    /// The file (`-`: standard output).
    pub out: PathBuf,
}

/// Write the traffic. A closed standard output (`synth --out - | head`)
/// ends it quietly.
pub fn run(r: &Request) -> crate::Result<()> {
    let name = r.out.display().to_string();
    let err = |e: std::io::Error| Error::Write(crate::Failure::caused(format!("{name}: {e}"), e));
    let mut sink: Box<dyn Write> = if name == "-" {
        Box::new(BufWriter::new(std::io::stdout().lock()))
    } else {
        let f = std::fs::File::create(&r.out).map_err(err)?;
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
    let written = match r.transcripts {
        true => crate::transcripts::write(r.turns, r.seed, r.mix, &mut sink),
        false => crate::synth::write_mix(r.turns, r.seed, r.mix, &mut sink),
    }
    .and_then(|_| sink.flush());
    drop(sink);
    match written {
        Err(e) if name == "-" && e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(err(e)),
        Ok(()) => Ok(()),
    }
}
