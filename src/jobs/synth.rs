//! `synth`: realistic synthetic traffic (the mix is documented in
//! `crate::synth`), as traffic lines or as the same runs in chat
//! transcripts; `.gz` and `.zst` names are compressed.

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use crate::synth::Mix;
use crate::Error;

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
    let err = |e: std::io::Error| Error::Write(format!("{name}: {e}"));
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
