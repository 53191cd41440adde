//! How every command reads its input, whatever its format: a [`Decoder`]
//! turns a block of transcript lines into a block of traffic lines (on the
//! worker that replays it), and [`gather`] turns a trace, source by source,
//! into blocks of traffic lines (on a thread of its own). Converted blocks
//! keep the input's line numbers and say which lines could not be read.

use std::collections::BTreeMap;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

use rayon::prelude::*;

use super::openai;
use super::otlp::Gathering;
use super::raw::{traffic_line, InputFormat, RawTurn};
use crate::deployment::Deployment;
use crate::read::reader::{self, Block, Failed, Imported, ReadError, BLOCK_BYTES};

/// The input's format, the deployment it came from, and its sources'
/// names (a transcript's default run id is `FILE:LINE`).
#[derive(Clone, Debug, Default)]
pub struct Decoder {
    pub format: InputFormat,
    pub deployment: Deployment,
    pub names: Arc<[String]>,
}

/// A UTF-8 byte-order mark, skipped at the start of a source.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A block's non-blank lines (JSON white space only is blank, as in
/// traffic), a byte-order mark at the start of a source skipped.
fn records(block: &Block) -> impl Iterator<Item = (u64, &[u8])> {
    reader::lines(block)
        .map(|(line, raw)| match line {
            1 => (line, raw.strip_prefix(BOM).unwrap_or(raw)),
            _ => (line, raw),
        })
        .filter(|(_, raw)| !raw.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')))
}

impl Decoder {
    /// The block converted into traffic lines, or None when it is traffic
    /// already (or a line past `--max-line-bytes`, refused as it is).
    pub fn convert(&self, block: &Block) -> Option<Block> {
        let raw = self.format == InputFormat::OpenaiChat
            && block.imported.is_none()
            && block.overlong.is_none();
        raw.then(|| self.chat_block(block))
    }

    fn chat_block(&self, block: &Block) -> Block {
        let mut data = Vec::with_capacity(block.bytes().len() + block.bytes().len() / 2);
        let mut imported = Imported::default();
        let name = self.names.get(block.source).map_or("-", String::as_str);
        for (line, raw) in records(block) {
            let converted = std::str::from_utf8(raw)
                .map_err(|e| format!("bytes are not UTF-8 (at byte {})", e.valid_up_to()))
                .and_then(|text| openai::turns(text, name, line, self.deployment.history))
                .and_then(|turns| lines_of(&turns, &self.deployment));
            match converted {
                Ok(lines) => {
                    for l in lines {
                        data.extend_from_slice(l.as_bytes());
                        data.push(b'\n');
                        imported.lines.push(line);
                    }
                }
                Err(reason) => imported.failed.push(Failed {
                    line,
                    reason,
                    raw: raw.to_vec(),
                }),
            }
        }
        Block::converted(block, data, imported)
    }
}

/// The traffic lines of a record's turns; Err names the turn that the
/// traffic format refuses.
fn lines_of(turns: &[RawTurn], d: &Deployment) -> Result<Vec<String>, String> {
    turns
        .iter()
        .map(|t| traffic_line(t, d).map_err(|e| format!("turn {}: {e}", t.turn)))
        .collect()
}

/// Read `sources` as `decoder` says: blocks of traffic or transcript
/// lines as the reader reads them (transcripts are converted by
/// [`Decoder::convert`] where they are used), or, for a trace, the blocks
/// [`gather`] makes.
pub fn open(
    sources: Vec<reader::Source>,
    depth: usize,
    max_line_bytes: usize,
    decoder: &Decoder,
) -> Result<(Receiver<Result<Block, ReadError>>, reader::Recycler), ReadError> {
    let (rx, recycler) = reader::blocks_recycled(sources, depth, max_line_bytes)?;
    match decoder.format {
        InputFormat::Otlp => Ok((gather(rx, decoder.clone(), depth)?, recycler)),
        _ => Ok((rx, recycler)),
    }
}

/// Blocks of traffic lines from blocks of OTLP documents, each source
/// gathered whole (a run's spans may be on any of its lines); read errors
/// pass through.
pub fn gather(
    raw: Receiver<Result<Block, ReadError>>,
    decoder: Decoder,
    depth: usize,
) -> Result<Receiver<Result<Block, ReadError>>, ReadError> {
    let (tx, rx) = sync_channel(depth);
    // Its own workers: the replay's wait on this thread's blocks, so a
    // derivation on theirs would wait for itself.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(rayon::current_num_threads())
        .thread_name(|i| format!("derive-{i}"))
        .build()
        .map_err(|e| ReadError(format!("cannot start the threads deriving the trace: {e}")))?;
    std::thread::Builder::new()
        .name("gather".into())
        .spawn(move || {
            let mut source = Source::default();
            for item in raw {
                let block = match item {
                    Ok(b) => b,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                source.add(&block);
                if block.end.is_some() {
                    let done = std::mem::take(&mut source);
                    if pool.install(|| done.finish(&block, &decoder, &tx)).is_err() {
                        return;
                    }
                }
            }
        })
        .map_err(|e| ReadError(format!("cannot start the thread gathering the trace: {e}")))?;
    Ok(rx)
}

/// One source's lines so far.
#[derive(Default)]
struct Source {
    lines: Vec<(u64, String)>,
    failed: Vec<Failed>,
}

impl Source {
    fn add(&mut self, block: &Block) {
        if let Some(bytes) = block.overlong {
            self.failed.push(Failed {
                line: block.first_line,
                reason: format!("the line is {bytes} bytes, longer than --max-line-bytes"),
                raw: block.bytes().to_vec(),
            });
            return;
        }
        for (line, raw) in records(block) {
            match std::str::from_utf8(raw) {
                Ok(t) => self.lines.push((line, t.to_string())),
                Err(e) => self.failed.push(Failed {
                    line,
                    reason: format!("bytes are not UTF-8 (at byte {})", e.valid_up_to()),
                    raw: raw.to_vec(),
                }),
            }
        }
    }

    /// The source's documents: one a line, or the whole source when it is
    /// one pretty-printed document.
    fn documents(&mut self) -> Vec<(u64, String)> {
        let lines = std::mem::take(&mut self.lines);
        // A first line that is not a whole JSON value opens a pretty-printed
        // document, when the whole source is one.
        let opens_one = lines.len() > 1
            && serde_json::from_str::<serde::de::IgnoredAny>(&lines[0].1)
                .is_err_and(|e| e.is_eof());
        if opens_one {
            let whole = lines
                .iter()
                .map(|(_, l)| l.as_str())
                .collect::<Vec<_>>()
                .join("\n");
            if serde_json::from_str::<serde::de::IgnoredAny>(&whole).is_ok() {
                return vec![(lines[0].0, whole)];
            }
        }
        lines
    }

    /// Gather the source's runs into turns, derive them, and send them as
    /// blocks (the last one carrying `end`'s facts).
    fn finish(
        mut self,
        end: &Block,
        d: &Decoder,
        tx: &SyncSender<Result<Block, ReadError>>,
    ) -> Result<(), ()> {
        let mut g = Gathering::default();
        for (line, text) in self.documents() {
            g.document(&text, line);
        }
        let (turns, failed, counts) = g.turns(d.deployment.history);
        self.failed.extend(failed);
        self.failed.sort_by_key(|f| f.line);
        let lines: Vec<(u64, Result<String, String>)> = turns
            .par_iter()
            .map(|(line, t)| (*line, traffic_line(t, &d.deployment)))
            .collect();
        send_blocks(end, lines, self.failed, counts, tx)
    }
}

/// Send the converted lines in blocks of about [`BLOCK_BYTES`]; the first
/// carries the failures and counts, the last the source's end.
fn send_blocks(
    end: &Block,
    lines: Vec<(u64, Result<String, String>)>,
    failed: Vec<Failed>,
    counts: BTreeMap<&'static str, u64>,
    tx: &SyncSender<Result<Block, ReadError>>,
) -> Result<(), ()> {
    let mut imported = Imported {
        failed,
        counts,
        ..Default::default()
    };
    let mut data = Vec::new();
    let mut turn_failures = Vec::new();
    for (line, l) in lines {
        match l {
            Ok(text) => {
                data.extend_from_slice(text.as_bytes());
                data.push(b'\n');
                imported.lines.push(line);
            }
            Err(reason) => turn_failures.push(Failed {
                line,
                reason,
                raw: Vec::new(),
            }),
        }
        if data.len() >= BLOCK_BYTES {
            let block = Block::gathered(
                end.source,
                std::mem::take(&mut data),
                std::mem::take(&mut imported),
                end.consumed,
                None,
            );
            tx.send(Ok(block)).map_err(|_| ())?;
        }
    }
    imported.failed.extend(turn_failures);
    let block = Block::gathered(end.source, data, imported, end.consumed, end.end);
    tx.send(Ok(block)).map_err(|_| ())
}

/// Convert a whole text in memory (`explain --from`): the traffic lines
/// with the input line each came from, or the first input line that could
/// not be converted, with the reason.
pub fn convert_text(
    text: &str,
    name: &str,
    decoder: &Decoder,
) -> Result<Vec<(u64, String)>, (u64, String)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    match decoder.format {
        InputFormat::Traffic => {
            for (n, line) in text.lines().enumerate() {
                if !line.trim().is_empty() {
                    out.push((n as u64 + 1, line.to_string()));
                }
            }
        }
        InputFormat::OpenaiChat => {
            for (n, line) in text.lines().enumerate() {
                let n = n as u64 + 1;
                if line.trim().is_empty() {
                    continue;
                }
                let turns =
                    openai::turns(line, name, n, decoder.deployment.history).map_err(|e| (n, e))?;
                for l in lines_of(&turns, &decoder.deployment).map_err(|e| (n, e))? {
                    out.push((n, l));
                }
            }
        }
        InputFormat::Otlp => {
            let mut source = Source::default();
            for (n, line) in text.lines().enumerate() {
                if !line.trim().is_empty() {
                    source.lines.push((n as u64 + 1, line.to_string()));
                }
            }
            let mut g = Gathering::default();
            for (line, doc) in source.documents() {
                g.document(&doc, line);
            }
            let (turns, failed, _) = g.turns(decoder.deployment.history);
            if let Some(f) = failed.into_iter().next() {
                return Err((f.line, f.reason));
            }
            for (line, t) in turns {
                out.push((
                    line,
                    traffic_line(&t, &decoder.deployment).map_err(|e| (line, e))?,
                ));
            }
        }
    }
    Ok(out)
}
