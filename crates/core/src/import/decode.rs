//! How every command reads its input, whatever its format: a [`Decoder`]
//! turns a block of transcript lines into a block of converted turns (on
//! the worker that replays it), and [`gather`] turns a trace, source by
//! source, into blocks of converted turns (on a thread of its own).
//! Converted turns are values ([`ConvertedTurn`]): the replay reads them
//! as they are, and `import` writes each as a traffic line ([`lines`]).
//! Converted blocks keep the input's line numbers and say which lines
//! could not be read.

use super::not_imported::NotImported;
use std::collections::BTreeMap;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

use rayon::prelude::*;

use super::openai;
use super::otlp::Gathering;
use super::raw::{convert, traffic_line, ConvertedTurn, InputFormat, RawTurn};
use crate::deployment::{Deployment, History};
use crate::read::reader::{self, Block, Converted, Failed, Imported, ReadError, BLOCK_BYTES};

/// The input's format, the deployment it came from, and its sources'
/// names (a transcript's default run id is `FILE:LINE`).
#[derive(Clone, Debug)]
pub struct Decoder {
    pub format: InputFormat,
    pub deployment: Deployment,
    /// Further deployments some variants run with, distinct: each turn is
    /// derived under each as well, once, and carries those turns
    /// ([`crate::read::reader::Converted::under`]).
    pub alternates: Arc<[Deployment]>,
    pub names: Arc<[String]>,
    /// Longer input lines are invalid (`--max-line-bytes`).
    pub max_line_bytes: usize,
}

/// A block's non-blank lines, a byte-order mark at the start of a source
/// skipped, as for traffic.
fn records(block: &Block) -> impl Iterator<Item = (u64, &[u8])> {
    reader::lines(block)
        .map(|(line, raw)| (line, reader::without_bom(line, raw)))
        .filter(|(_, raw)| !reader::is_blank(raw))
}

impl Decoder {
    /// A decoder of one deployment.
    pub fn new(
        format: InputFormat,
        deployment: Deployment,
        names: Arc<[String]>,
        max_line_bytes: usize,
    ) -> Decoder {
        Decoder {
            format,
            deployment,
            alternates: Arc::from([]),
            names,
            max_line_bytes,
        }
    }

    /// How many times each turn is derived: once per deployment.
    fn deployments(&self) -> u64 {
        1 + self.alternates.len() as u64
    }

    /// The histories the alternates pass that `[deployment]` does not,
    /// distinct (a record's turns are made again with each).
    fn other_histories(&self) -> Vec<History> {
        let mut out: Vec<History> = Vec::new();
        for d in self.alternates.iter() {
            if d.history != self.deployment.history && !out.contains(&d.history) {
                out.push(d.history);
            }
        }
        out
    }

    /// A turn derived under every deployment: `[deployment]`'s, carrying
    /// the alternates'. `again` holds the turn made with each of
    /// [`Decoder::other_histories`]. A turn one deployment cannot derive
    /// is refused for every variant (so that all compare the same turns),
    /// with the deployment named.
    fn derive_every(
        &self,
        t: RawTurn,
        again: &[RawTurn],
        others: &[History],
    ) -> Result<ConvertedTurn, crate::import::not_imported::NotImported> {
        if self.alternates.is_empty() {
            return convert(t, &self.deployment);
        }
        let alternates = self
            .alternates
            .iter()
            .map(|d| {
                let raw = match others.iter().position(|h| *h == d.history) {
                    Some(i) => again[i].clone(),
                    None => t.clone(),
                };
                convert(raw, d).map_err(|e| self.under(d, e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(convert(t, &self.deployment)?.with_others(alternates))
    }

    /// Why a further deployment `d` could not derive a turn, with the keys
    /// that make it a variant's own.
    fn under(&self, d: &Deployment, e: NotImported) -> NotImported {
        let keys = d.differences(&self.deployment).unwrap_or_default();
        NotImported::from(format!(
            "a variant's own deployment {keys} cannot derive it (a record is refused for every variant, so that all compare the same turns): {}",
            e.0
        ))
    }

    /// A chat record's turns, each derived under every deployment.
    fn chat_turns(
        &self,
        text: &str,
        name: &str,
        line: u64,
    ) -> Result<Vec<ConvertedTurn>, NotImported> {
        let turns = openai::turns(text, name, line, self.deployment.history)?;
        let others = self.other_histories();
        let again = others
            .iter()
            .map(|&h| {
                let d = self.alternates.iter().find(|d| d.history == h);
                openai::turns(text, name, line, h)
                    .map_err(|e| self.under(d.expect("an alternate's history"), e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if again.iter().any(|a| a.len() != turns.len()) {
            return Err(NotImported(
                "the deployments' histories make different turns of this record".into(),
            ));
        }
        let mut again: Vec<_> = again.into_iter().map(Vec::into_iter).collect();
        turns
            .into_iter()
            .map(|t| {
                let n = t.turn;
                // The same turn made with each other history (as many
                // turns each, checked above).
                let at: Vec<RawTurn> = again.iter_mut().filter_map(Iterator::next).collect();
                self.derive_every(t, &at, &others)
                    .map_err(|e| NotImported(crate::said![format!("turn {n}: "), e.0]))
            })
            .collect()
    }

    /// The block's turns converted (held as values), or None when it is
    /// traffic already (or a line past `--max-line-bytes`, refused as it
    /// is).
    pub fn convert(&self, block: &Block) -> Option<Block> {
        match self.format {
            InputFormat::OpenaiChat => (block.imported.is_none() && block.overlong.is_none())
                .then(|| self.chat_block(block)),
            // Traffic is read as it is; a trace's blocks come converted
            // from `gather`.
            InputFormat::Traffic | InputFormat::Otlp => None,
        }
    }

    fn chat_block(&self, block: &Block) -> Block {
        let mut imported = Imported::default();
        let name = self.names.get(block.source).map_or("-", String::as_str);
        for (line, raw) in records(block) {
            if raw.len() > self.max_line_bytes {
                imported.failed.push(too_long(line, raw.len() as u64, raw));
                continue;
            }
            let converted = std::str::from_utf8(raw)
                .map_err(|e| {
                    NotImported::from(format!("bytes are not UTF-8 (at byte {})", e.valid_up_to()))
                })
                .and_then(|text| self.chat_turns(text, name, line));
            match converted {
                Ok(turns) => {
                    for t in turns {
                        imported.turns.push(Box::new(t));
                        imported.lines.push(line);
                    }
                }
                Err(reason) => imported.failed.push(Failed {
                    line,
                    reason: reason.0,
                    raw: raw.to_vec(),
                }),
            }
        }
        // Every turn of the block, derived under each deployment.
        let derived = imported.turns.len() as u64 * self.deployments();
        if derived > 0 {
            imported.counts.insert("derivations", derived);
        }
        Block::values(block, imported)
    }
}

/// A record's turns converted; Err names the turn that the traffic format
/// refuses.
fn converted(turns: Vec<RawTurn>, d: &Deployment) -> Result<Vec<ConvertedTurn>, NotImported> {
    turns
        .into_iter()
        .map(|t| {
            let n = t.turn;
            convert(t, d).map_err(|e| NotImported(crate::said![format!("turn {n}: "), e.0]))
        })
        .collect()
}

/// A converted block as traffic lines (what `import` writes), on the
/// worker that converted it; None for a block of the input's own lines.
pub fn lines(block: &Block) -> Option<Block> {
    let i = block.imported.as_deref()?;
    let mut data = Vec::new();
    for (_, t) in block.turns() {
        data.extend_from_slice(t.line().as_bytes());
        data.push(b'\n');
    }
    let imported = Imported {
        lines: i.lines.clone(),
        turns: Vec::new(),
        failed: i.failed.clone(),
        counts: i.counts.clone(),
        trace_keys: i.trace_keys.clone(),
    };
    Some(Block::converted(block, data, imported))
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
        // Lines as read: transcripts are converted where they are used.
        InputFormat::Traffic | InputFormat::OpenaiChat => Ok((rx, recycler)),
    }
}

/// Blocks of traffic lines from blocks of OTLP documents. A run's spans may
/// be on any line of any source (the Collector rotates its files), so
/// every source is gathered before any run becomes a turn; then each
/// source's turns (those whose root span it holds) are sent as its blocks,
/// the last carrying its end. Read errors pass through.
pub fn gather(
    raw: Receiver<Result<Block, ReadError>>,
    decoder: Decoder,
    depth: usize,
) -> Result<Receiver<Result<Block, ReadError>>, ReadError> {
    let (tx, rx) = sync_channel(depth);
    // Its own workers (parsing documents, converting turns): the replay's
    // wait on this thread's blocks, so work on theirs would wait for
    // itself.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(rayon::current_num_threads())
        .thread_name(|i| format!("derive-{i}"))
        .build()
        .map_err(|e| ReadError {
            message: format!("cannot start the threads deriving the trace: {e}"),
            cause: None,
        })?;
    std::thread::Builder::new()
        .name("gather".into())
        .spawn(move || {
            let mut source = Source::default();
            let mut all = All::default();
            // Documents parsed, gathered while the next are parsed.
            let mut pending = None;
            for item in raw {
                let block = match item {
                    Ok(b) => b,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                source.add(&block, decoder.max_line_bytes);
                if block.end.is_some() {
                    pool.install(|| {
                        all.gathering.settle(pending.take());
                        std::mem::take(&mut source).into(&block, &mut all)
                    });
                } else if let Some(docs) = source.ready() {
                    // Parsed while the next blocks are read, not all at
                    // the source's end (the cores were idle while a
                    // source was read, and it was held whole in memory).
                    pending = Some(
                        pool.install(|| all.gathering.overlap(pending.take(), docs, block.source)),
                    );
                }
            }
            let _ = pool.install(|| all.send(&decoder, &tx));
        })
        .map_err(|e| ReadError::caused("cannot start the thread gathering the trace".into(), e))?;
    Ok(rx)
}

/// Every source's documents, gathered.
#[derive(Default)]
struct All {
    gathering: Gathering,
    /// Per source, in order: its index, what was read of it, and the lines
    /// that could not be read.
    ends: Vec<(usize, u64, Option<reader::SourceEnd>, Vec<Failed>)>,
}

impl All {
    /// Turn the runs into turns, derive them, and send each source's.
    fn send(self, d: &Decoder, tx: &SyncSender<Result<Block, ReadError>>) -> Result<(), ()> {
        let others = d.other_histories();
        let (turns, failed, mut counts, mut keys) =
            self.gathering.turns(d.deployment.history, &others);
        let mut converted: Vec<(usize, u64, Result<ConvertedTurn, NotImported>)> = turns
            .into_par_iter()
            .map(|(source, line, t, again)| {
                // symfonic's run, which names one turn of a conversation.
                let run = t.turn_id.clone().unwrap_or_else(|| t.run_id.to_string());
                let c = d
                    .derive_every(t, &again, &others)
                    .map_err(|e| NotImported(crate::said![format!("run {run}: "), e.0]));
                (source, line, c)
            })
            .collect();
        let derived = converted.iter().filter(|(_, _, c)| c.is_ok()).count() as u64;
        if derived > 0 {
            *counts.entry("derivations").or_default() += derived * d.deployments();
        }
        for (source, consumed, end, mut read_failures) in self.ends {
            read_failures.extend(
                failed
                    .iter()
                    .filter(|(s, _)| *s == source)
                    .map(|(_, f)| f.clone()),
            );
            read_failures.sort_by_key(|f| f.line);
            let (mine, rest): (Vec<_>, Vec<_>) =
                converted.into_iter().partition(|(s, _, _)| *s == source);
            converted = rest;
            let mine = mine.into_iter().map(|(_, line, c)| (line, c)).collect();
            let end = Ends {
                source,
                consumed,
                end,
            };
            let gathered = (std::mem::take(&mut counts), std::mem::take(&mut keys));
            send_blocks(&end, mine, read_failures, gathered, tx)?;
        }
        Ok(())
    }
}

/// One source's lines so far: each line's text, or why it cannot be read.
#[derive(Default)]
struct Source {
    lines: Vec<(u64, Result<String, Failed>)>,
    failed: Vec<Failed>,
    /// Whether the source's first line is a lone `{` (it may then hold
    /// pretty-printed documents); None before its first line.
    opens_pretty: Option<bool>,
    /// A pretty-printed source's lines held so far, each counted with
    /// [`LINE_COST`] (they are kept until its end), against
    /// [`PRETTY_BUDGET_LINES`] times the line limit.
    held: usize,
    /// Past that budget: the rest of the source is refused (one reject).
    overflowed: bool,
}

/// What keeping one line of a pretty-printed source costs besides its
/// bytes (its string and its place in the list): a source of short lines
/// took 60 times its size.
pub const LINE_COST: usize = 96;

/// A pretty-printed source may hold this many times `--max-line-bytes`
/// (its lines counted with [`LINE_COST`]), and at least
/// [`PRETTY_BUDGET_FLOOR`]: it is kept whole until its end.
pub const PRETTY_BUDGET_LINES: usize = 4;
/// The least a pretty-printed source may hold (64 MiB), whatever the line
/// limit.
pub const PRETTY_BUDGET_FLOOR: usize = 64 << 20;

/// How much a line of JSON opens (`{`, `[`) less what it closes, outside
/// strings (which cannot span lines).
fn nesting(line: &str) -> i64 {
    let (mut depth, mut in_string, mut escaped) = (0i64, false, false);
    for b in line.bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth -= 1,
            _ => {}
        }
    }
    depth
}

/// A line that is a lone `{` at the margin: a pretty-printed document's
/// first.
fn opens(l: &Result<String, Failed>) -> bool {
    l.as_ref().is_ok_and(|t| t.trim_end() == "{")
}

impl Source {
    fn add(&mut self, block: &Block, max_line_bytes: usize) {
        if let Some(bytes) = block.overlong {
            let f = too_long(block.first_line, bytes, block.bytes());
            self.push(block.first_line, Err(f));
            return;
        }
        for (line, raw) in records(block) {
            if self.overflowed {
                continue;
            }
            if self.over_budget(line, raw, max_line_bytes) {
                continue;
            }
            if raw.len() > max_line_bytes {
                self.push(line, Err(too_long(line, raw.len() as u64, raw)));
                continue;
            }
            let text = std::str::from_utf8(raw)
                .map(str::to_string)
                .map_err(|e| Failed {
                    line,
                    reason: format!("bytes are not UTF-8 (at byte {})", e.valid_up_to()).into(),
                    raw: raw.to_vec(),
                });
            self.push(line, text);
        }
    }

    /// Whether `raw` takes a pretty-printed source past its budget: then
    /// its rest is refused, with one reject saying why (its first 4 KiB
    /// kept), and no later line is held.
    fn over_budget(&mut self, line: u64, raw: &[u8], max_line_bytes: usize) -> bool {
        if self.opens_pretty == Some(false) {
            return false;
        }
        self.held = self.held.saturating_add(raw.len() + LINE_COST);
        let budget = max_line_bytes
            .saturating_mul(PRETTY_BUDGET_LINES)
            .max(PRETTY_BUDGET_FLOOR);
        if self.held <= budget || self.opens_pretty.is_none() {
            return false;
        }
        self.overflowed = true;
        self.failed.push(Failed {
            line,
            reason: crate::said![
                format!("a pretty-printed source holds more than {budget} bytes from its start to this line ({PRETTY_BUDGET_LINES} times "),
                crate::options::Setting::MaxLineBytes,
                format!(", at least 64 MiB, each line counted with {LINE_COST} bytes of keeping it), and is held whole until its end: the rest of it is not read; write it one document a line (jq -c .) to read it whole")
            ],
            raw: raw[..raw.len().min(4096)].to_vec(),
        });
        true
    }

    /// One line of the source, in order.
    fn push(&mut self, line: u64, text: Result<String, Failed>) {
        if self.opens_pretty.is_none() {
            self.opens_pretty = Some(opens(&text));
        }
        self.lines.push((line, text));
    }

    /// The documents of the lines read so far, when the source holds one
    /// a line (each line then is one whole).
    fn ready(&mut self) -> Option<Vec<(u64, String)>> {
        (self.opens_pretty == Some(false)).then(|| self.documents())
    }

    /// The source's documents: one a line, or pretty-printed documents one
    /// after another when the first line is a lone `{` (each then runs to
    /// the next lone `{` at the margin when indented, and to the line that
    /// closes it at indent 0). A line that cannot be read refuses its line, or
    /// the whole pretty-printed document holding it.
    fn documents(&mut self) -> Vec<(u64, String)> {
        let lines = std::mem::take(&mut self.lines);
        // Lines of a source of one document a line may be handed over
        // before its end ([`Source::ready`]); a pretty-printed source's
        // lines are all here.
        if !(self.opens_pretty == Some(true) && lines.len() > 1) {
            let mut docs = Vec::new();
            for (n, l) in lines {
                match l {
                    Ok(t) => docs.push((n, t)),
                    Err(f) => self.failed.push(f),
                }
            }
            return docs;
        }
        let mut docs = Vec::new();
        let mut i = 0;
        while i < lines.len() {
            // (A line that cannot be read is taken as balanced; the
            // document holding it is refused.)
            if lines[i].1.as_ref().is_ok_and(|t| t.trim().is_empty()) {
                i += 1;
                continue;
            }
            let start = i;
            i += 1;
            // Indented (the usual), a document ends where the next `{` at
            // the margin opens, which also recovers from a document cut
            // short; at indent 0 every nested object opens at the margin,
            // so it ends at the line that closes it.
            let indented = lines
                .get(i)
                .and_then(|(_, l)| l.as_deref().ok())
                .is_some_and(|t| t.starts_with([' ', '\t']));
            if indented {
                while i < lines.len() && !opens(&lines[i].1) {
                    i += 1;
                }
            } else {
                let mut depth = lines[start].1.as_deref().map_or(0, nesting);
                while i < lines.len() && depth > 0 {
                    depth += lines[i].1.as_deref().map_or(0, nesting);
                    i += 1;
                }
            }
            let doc = &lines[start..i];
            let first = doc[0].0;
            match doc.iter().find_map(|(_, l)| l.as_ref().err()) {
                Some(f) => self.failed.push(Failed {
                    line: first,
                    reason: crate::said![
                        format!(
                            "the pretty-printed document starting on line {first}: line {}: ",
                            f.line
                        ),
                        f.reason
                    ],
                    raw: f.raw.clone(),
                }),
                None => {
                    let text: Vec<&str> =
                        doc.iter().filter_map(|(_, l)| l.as_deref().ok()).collect();
                    docs.push((first, text.join("\n")));
                }
            }
        }
        docs
    }

    /// Hand the source's documents to the gathering (parsed on every core
    /// of the current pool), and keep its end.
    fn into(mut self, end: &Block, all: &mut All) {
        let docs = self.documents();
        all.gathering.documents(docs, end.source);
        all.ends
            .push((end.source, end.consumed, end.end, self.failed));
    }
}

/// The reject of a line past `--max-line-bytes` (its first 4 KiB kept).
fn too_long(line: u64, bytes: u64, raw: &[u8]) -> Failed {
    Failed {
        line,
        reason: crate::said![
            format!("the line is {bytes} bytes, longer than "),
            crate::options::Setting::MaxLineBytes
        ],
        raw: raw[..raw.len().min(reader::OVERLONG_PREFIX)].to_vec(),
    }
}

/// Where a source's converted blocks stand: its index, what was read of it.
struct Ends {
    source: usize,
    consumed: u64,
    end: Option<reader::SourceEnd>,
}

/// Send the converted turns in blocks of about [`BLOCK_BYTES`] of text;
/// the first carries the failures, counts and trace keys, the last the
/// source's end.
fn send_blocks(
    end: &Ends,
    turns: Vec<(u64, Result<ConvertedTurn, NotImported>)>,
    failed: Vec<Failed>,
    (counts, trace_keys): (BTreeMap<&'static str, u64>, Vec<String>),
    tx: &SyncSender<Result<Block, ReadError>>,
) -> Result<(), ()> {
    let mut imported = Imported {
        failed,
        counts,
        trace_keys,
        ..Default::default()
    };
    let mut bytes = 0;
    let mut turn_failures = Vec::new();
    for (line, c) in turns {
        match c {
            Ok(t) => {
                bytes += t.text_bytes();
                imported.turns.push(Box::new(t));
                imported.lines.push(line);
            }
            Err(reason) => turn_failures.push(Failed {
                line,
                reason: reason.0,
                raw: Vec::new(),
            }),
        }
        if bytes >= BLOCK_BYTES {
            bytes = 0;
            let block = Block::gathered(
                end.source,
                Vec::new(),
                std::mem::take(&mut imported),
                end.consumed,
                None,
            );
            tx.send(Ok(block)).map_err(|_| ())?;
        }
    }
    imported.failed.extend(turn_failures);
    let block = Block::gathered(end.source, Vec::new(), imported, end.consumed, end.end);
    tx.send(Ok(block)).map_err(|_| ())
}

/// Convert a whole text in memory (`explain --from`): the traffic lines
/// with the input line each came from, or the first input line that could
/// not be converted, with the reason.
pub fn convert_text(
    text: &str,
    name: &str,
    decoder: &Decoder,
) -> Result<Vec<(u64, String)>, (u64, NotImported)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    match decoder.format {
        InputFormat::Traffic => {
            for (n, line) in text.lines().enumerate() {
                if !reader::is_blank(line.as_bytes()) {
                    out.push((n as u64 + 1, line.to_string()));
                }
            }
        }
        InputFormat::OpenaiChat => {
            for (n, line) in text.lines().enumerate() {
                let n = n as u64 + 1;
                if reader::is_blank(line.as_bytes()) {
                    continue;
                }
                let turns =
                    openai::turns(line, name, n, decoder.deployment.history).map_err(|e| (n, e))?;
                for t in converted(turns, &decoder.deployment).map_err(|e| (n, e))? {
                    out.push((n, t.line()));
                }
            }
        }
        InputFormat::Otlp => {
            let mut source = Source::default();
            for (n, line) in text.lines().enumerate() {
                if !reader::is_blank(line.as_bytes()) {
                    source.push(n as u64 + 1, Ok(line.to_string()));
                }
            }
            let mut g = Gathering::default();
            for (line, doc) in source.documents() {
                g.document(&doc, 0, line);
            }
            if let Some(f) = source.failed.into_iter().next() {
                return Err((f.line, NotImported(f.reason)));
            }
            let (turns, failed, _, _) = g.turns(decoder.deployment.history, &[]);
            if let Some((_, f)) = failed.into_iter().next() {
                return Err((f.line, NotImported(f.reason)));
            }
            for (_, line, t, _) in turns {
                out.push((
                    line,
                    traffic_line(t, &decoder.deployment).map_err(|e| (line, e))?,
                ));
            }
        }
    }
    Ok(out)
}
