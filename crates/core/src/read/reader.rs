//! Streaming input: plain, gzip or zstd JSON Lines files, or standard input,
//! cut into blocks of whole lines so memory does not grow with the input.
//!
//! Compression is recognised by its magic bytes (so a misnamed file still
//! reads), and blocks carry the number of their first line, so every later
//! stage can name `FILE:LINE`.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread;

use crate::read::turn::Turn;

/// Target size of a block (whole lines are kept together).
pub const BLOCK_BYTES: usize = 1 << 20;

/// One input, as named on the command line (`-` is standard input), or
/// bytes already in memory under a name (the Python shard API).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    pub name: String,
    pub bytes: Option<std::sync::Arc<[u8]>>,
}

impl Source {
    /// A file (or `-`) named on the command line.
    pub fn named(name: &str) -> Source {
        Source {
            name: name.to_string(),
            bytes: None,
        }
    }
}

/// A run of whole lines from one source.
#[derive(Debug)]
pub struct Block {
    /// Index into the list of sources.
    pub source: usize,
    /// 1-based number of the first line in `data`.
    pub first_line: u64,
    /// The buffer; its first `len` bytes are the block's lines, each ending
    /// in `\n` except possibly the last of the source. (The buffer stays at
    /// its full, initialised length so that reusing it costs no zeroing.)
    data: Vec<u8>,
    len: usize,
    /// Bytes of the (possibly compressed) source consumed so far.
    pub consumed: u64,
    /// `Some(bytes)`: the block is one line longer than the limit, of that
    /// many bytes (without its line end); its data is the line's first
    /// [`OVERLONG_PREFIX`] bytes.
    pub overlong: Option<u64>,
    /// On the last block of a source (maybe empty): what was read.
    pub end: Option<SourceEnd>,
    /// A block converted from another input format (`--from`): the input
    /// line each of its lines came from, and the input's lines that could
    /// not be converted.
    pub imported: Option<Box<Imported>>,
}

/// A turn converted from another format and handed on as values: the
/// replay reads it without a traffic line being written and parsed again
/// (that round trip was a third of a `--from` replay's work).
pub trait Converted: Send + Sync + std::fmt::Debug {
    /// The turn as [`Turn::parse`] reads [`Converted::line`].
    fn turn(&self) -> &Turn<'static>;
    /// The turn as the replay's `deployment`th deployment derives it (0:
    /// `[deployment]`, the turn itself; then the variants' own, in the
    /// order `Plan::deployments` lists them).
    fn under(&self, deployment: usize) -> &Turn<'static>;
    /// The traffic line the turn stands for (what `import` writes).
    fn line(&self) -> String;
}

/// What a converted block knows of the input it came from.
#[derive(Debug, Default)]
pub struct Imported {
    /// Per line of the block (or per turn of `turns`), the input line its
    /// record started on.
    pub lines: Vec<u64>,
    /// The block's turns as values, when the block holds no lines (see
    /// [`Block::values`]).
    pub turns: Vec<Box<dyn Converted>>,
    /// Input lines that could not be converted, in order.
    pub failed: Vec<Failed>,
    /// What the conversion counted (a trace's runs, spans left out, ...).
    pub counts: std::collections::BTreeMap<&'static str, u64>,
    /// A trace's runs and sessions (`import::otlp::TraceKeys`): a merge
    /// of shards refuses two that share one.
    pub trace_keys: Vec<String>,
}

/// An input line that could not be converted.
#[derive(Clone, Debug)]
pub struct Failed {
    pub line: u64,
    pub reason: crate::options::Said,
    pub raw: Vec<u8>,
}

/// What was read of one source: its lines (blank ones included), its bytes
/// (decompressed) and their XXH3-64 hash, every byte counted (also those
/// of lines past the limit), so two replays can tell they read the same
/// traffic. Hashed on the reader thread, off the workers' path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SourceEnd {
    pub lines: u64,
    pub bytes: u64,
    pub xxh3: u64,
}

impl Block {
    /// A block of converted lines (each ending in `\n`) standing for the
    /// input block `from` (its source, progress and end).
    pub fn converted(from: &Block, data: Vec<u8>, imported: Imported) -> Block {
        Block {
            source: from.source,
            first_line: from.first_line,
            len: data.len(),
            data,
            consumed: from.consumed,
            overlong: None,
            end: from.end,
            imported: Some(Box::new(imported)),
        }
    }

    /// A converted block of a source gathered whole (`--from otlp`).
    pub fn gathered(
        source: usize,
        data: Vec<u8>,
        imported: Imported,
        consumed: u64,
        end: Option<SourceEnd>,
    ) -> Block {
        Block {
            source,
            first_line: imported.lines.first().copied().unwrap_or(1),
            len: data.len(),
            data,
            consumed,
            overlong: None,
            end,
            imported: Some(Box::new(imported)),
        }
    }

    /// A block of converted turns held as values (no lines) standing for
    /// the input block `from`.
    pub fn values(from: &Block, imported: Imported) -> Block {
        Block::converted(from, Vec::new(), imported)
    }

    /// The turns the block holds as values, with the input line of each
    /// (none for a block of lines).
    pub fn turns(&self) -> impl Iterator<Item = (u64, &dyn Converted)> {
        let i = self.imported.as_deref();
        let turns = i.map_or(&[][..], |i| &i.turns[..]);
        let lines = i.map_or(&[][..], |i| &i.lines[..]);
        lines.iter().copied().zip(turns.iter().map(|t| t.as_ref()))
    }

    /// Hand back the buffer (to be reused for reading).
    pub fn into_buffer(self) -> Vec<u8> {
        self.data
    }

    /// The block's bytes: whole lines.
    pub fn bytes(&self) -> &[u8] {
        &self.data[..self.len]
    }
}

/// An input that could not be read: the message (the file, what failed
/// and why) and the operating system's error it failed with, kept whole
/// for a caller that acts on it (a Python caller's `__cause__`).
#[derive(Debug)]
pub struct ReadError {
    pub message: String,
    pub cause: Option<io::Error>,
}

impl ReadError {
    /// `message`, saying `e` after a colon, with `e` kept.
    pub fn caused(message: String, e: io::Error) -> ReadError {
        ReadError {
            message: format!("{message}: {e}"),
            cause: Some(e),
        }
    }
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Counts bytes read from the underlying (compressed) stream.
struct Counting<R> {
    inner: R,
    count: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

type Counter = std::sync::Arc<std::sync::atomic::AtomicU64>;

/// Open `source` (a file, `-` for stdin, or bytes in memory), decompressing
/// gzip or zstd by magic bytes.
/// For commands that read their input twice (`calibrate`, `mine`): every
/// source must be a regular file, since a pipe, a FIFO or standard input
/// would be empty (or block) the second time.
pub fn regular_files(sources: &[String], job: &str, passes: &str) -> Result<(), NotAFile> {
    for s in sources {
        let ok = s != "-" && std::fs::metadata(s).is_ok_and(|m| m.is_file());
        if !ok && (s == "-" || std::path::Path::new(s).exists()) {
            return Err(NotAFile {
                source: s.clone(),
                job: job.to_string(),
                passes: passes.to_string(),
            });
        }
    }
    Ok(())
}

/// A source a command must read more than once that is not a regular file:
/// the request cannot be carried out as given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotAFile {
    /// The source as given (`-` for standard input).
    pub source: String,
    /// The command (`calibrate`).
    pub job: String,
    /// Why it reads twice (`one pass per part`).
    pub passes: String,
}

impl std::fmt::Display for NotAFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = if self.source == "-" {
            "standard input"
        } else {
            "not a regular file (a pipe, a FIFO or a device)"
        };
        write!(
            f,
            "{}: {what}: {} reads the traffic more than once ({}), so each input must be a regular file; write it to a file first",
            self.source, self.job, self.passes
        )
    }
}

impl std::error::Error for NotAFile {}

pub fn open(source: &Source) -> Result<(Box<dyn Read + Send>, Counter), ReadError> {
    let count: Counter = Default::default();
    let name = source.name.as_str();
    let raw: Box<dyn Read + Send> = if let Some(bytes) = &source.bytes {
        Box::new(io::Cursor::new(bytes.clone()))
    } else if name == "-" {
        Box::new(io::stdin())
    } else {
        let f = File::open(Path::new(name))
            .map_err(|e| ReadError::caused(format!("{name}: cannot open"), e))?;
        Box::new(f)
    };
    let mut r = BufReader::with_capacity(
        1 << 16,
        Counting {
            inner: raw,
            count: count.clone(),
        },
    );
    let magic = {
        use std::io::BufRead;
        r.fill_buf()
            .map_err(|e| ReadError::caused(format!("{name}: cannot read"), e))?
            .get(..4)
            .map(|m| m.to_vec())
    };
    let reader: Box<dyn Read + Send> = match magic.as_deref() {
        Some([0x1f, 0x8b, ..]) => Box::new(flate2::read::MultiGzDecoder::new(r)),
        Some([0x28, 0xb5, 0x2f, 0xfd]) => Box::new(
            zstd::Decoder::with_buffer(r)
                .map_err(|e| ReadError::caused(format!("{name}: cannot start zstd"), e))?,
        ),
        _ => Box::new(r),
    };
    Ok((reader, count))
}

/// Buffers of finished blocks, handed back to the reader for reuse: a fresh
/// 1 MB buffer per block cost page faults and zeroing on every block.
#[derive(Clone)]
pub struct Recycler(SyncSender<Vec<u8>>);

impl Recycler {
    /// Give a block's buffer back (dropped if the reader has enough).
    pub fn give(&self, block: Block) {
        let _ = self.0.try_send(block.data);
    }
}

/// Reads every source in order on a background thread; yields blocks (at
/// most `depth` in flight) or the first read error.
#[cfg(test)]
fn blocks(
    sources: Vec<Source>,
    depth: usize,
) -> Result<Receiver<Result<Block, ReadError>>, ReadError> {
    Ok(blocks_recycled(sources, depth, DEFAULT_MAX_LINE_BYTES)?.0)
}

/// Reads every source in order on a background thread, yielding blocks
/// (at most `depth` in flight) or the first read error. The [`Recycler`]
/// takes back the buffers of finished blocks; a line longer than
/// `max_line_bytes` comes as an [`Block::overlong`] block holding its first
/// [`OVERLONG_PREFIX`] bytes.
pub fn blocks_recycled(
    sources: Vec<Source>,
    depth: usize,
    max_line_bytes: usize,
) -> Result<(Receiver<Result<Block, ReadError>>, Recycler), ReadError> {
    let (tx, rx) = sync_channel(depth);
    let (give, spare) = sync_channel::<Vec<u8>>(2 * depth + 2);
    let reader = thread::Builder::new().name("reader".into());
    reader
        .spawn(move || {
            for (i, s) in sources.iter().enumerate() {
                let mut r = SourceReader {
                    index: i,
                    source: s,
                    tx: &tx,
                    spare: &spare,
                    max_line_bytes,
                    line: 1,
                    carry: Vec::new(),
                    hash: xxhash_rust::xxh3::Xxh3Default::new(),
                    bytes: 0,
                };
                if r.run().is_err() {
                    return;
                }
            }
        })
        .map_err(|e| ReadError::caused("cannot start the reader thread".into(), e))?;
    Ok((rx, Recycler(give)))
}

/// The longest line read by default (`--max-line-bytes`).
pub use crate::options::DEFAULT_MAX_LINE_BYTES;
/// How much of a line longer than the limit is kept (for `rejects.jsonl`).
pub const OVERLONG_PREFIX: usize = 4096;

/// Why a line of `bytes` bytes is refused under `--max-line-bytes max`:
/// the words every pass that reads traffic line by line uses.
pub fn overlong_reason(bytes: u64, max: usize) -> crate::options::Said {
    crate::said![
        format!("the line is {bytes} bytes, longer than "),
        crate::options::Setting::MaxLineBytes,
        format!(" {max}")
    ]
}

/// The reading of one source into blocks.
struct SourceReader<'a> {
    index: usize,
    source: &'a Source,
    tx: &'a SyncSender<Result<Block, ReadError>>,
    spare: &'a Receiver<Vec<u8>>,
    max_line_bytes: usize,
    /// The number of the next line to send.
    line: u64,
    /// The start of a line whose end is not read yet (never a `\n`).
    carry: Vec<u8>,
    /// Every byte read, hashed as it is read.
    hash: xxhash_rust::xxh3::Xxh3Default,
    bytes: u64,
}

/// The reading stopped: the consumer is gone, or an error was sent.
struct Stop;

impl SourceReader<'_> {
    fn run(&mut self) -> Result<(), Stop> {
        let (mut r, count) = open(self.source).map_err(|e| self.fail(e))?;
        loop {
            let (buf, len, eof) = self.fill_block(&mut r)?;
            let Some((buf, len)) = buf.map(|b| (b, len)) else {
                // The block ended in a line past the limit: skip it.
                self.skip_overlong(&mut r, len, &count)?;
                continue;
            };
            self.send(buf, len, eof, &count)?;
            if eof {
                return Ok(());
            }
        }
    }

    /// Read a block: whole lines up to the last line end of at least
    /// BLOCK_BYTES new bytes (the rest is carried over), or to the end of
    /// the source. `None` (with the bytes held) when a line grew past the
    /// limit before its end; the carry then holds its first bytes.
    fn fill_block(&mut self, r: &mut impl Read) -> Result<(Option<Vec<u8>>, usize, bool), Stop> {
        // A reused buffer keeps its length: only new bytes are ever zeroed.
        let mut buf = self.spare.try_recv().unwrap_or_default();
        if buf.len() < self.carry.len() {
            buf.resize(self.carry.len(), 0);
        }
        buf[..self.carry.len()].copy_from_slice(&self.carry);
        let mut len = self.carry.len();
        self.carry.clear();
        // Bytes before `searched` hold no line end: each pass searches only
        // new ones (searching the whole of a long line each time was
        // quadratic).
        let mut searched = 0;
        loop {
            let eof = self.fill(r, &mut buf, &mut len)?;
            if eof {
                return Ok((Some(buf), len, true));
            }
            if let Some(k) = memchr::memrchr(b'\n', &buf[searched..len]) {
                let end = searched + k + 1;
                self.carry.extend_from_slice(&buf[end..len]);
                return Ok((Some(buf), end, false));
            }
            searched = len;
            if len > self.max_line_bytes {
                self.carry
                    .extend_from_slice(&buf[..OVERLONG_PREFIX.min(len)]);
                return Ok((None, len, false));
            }
        }
    }

    /// Read up to BLOCK_BYTES more bytes into `buf` after `len`; true at the
    /// end of the source.
    fn fill(
        &mut self,
        r: &mut impl Read,
        buf: &mut Vec<u8>,
        len: &mut usize,
    ) -> Result<bool, Stop> {
        let want = *len + BLOCK_BYTES;
        if buf.len() < want {
            buf.resize(want, 0);
        }
        while *len < want {
            match r.read(&mut buf[*len..want]) {
                Ok(0) => return Ok(true),
                Ok(n) => {
                    self.hash.update(&buf[*len..*len + n]);
                    self.bytes += n as u64;
                    *len += n
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // The whole lines read so far: those sent, and those
                    // in the block being filled.
                    let whole =
                        self.line - 1 + memchr::memchr_iter(b'\n', &buf[..*len]).count() as u64;
                    return Err(self.fail(ReadError::caused(
                        format!("{}: read error after line {whole}", self.source.name),
                        e,
                    )));
                }
            }
        }
        Ok(false)
    }

    /// Skip the rest of a line past the limit (`read` bytes of it read so
    /// far, its prefix in the carry) in a small buffer, and send its prefix
    /// as an overlong block; what follows its end is carried over.
    fn skip_overlong(
        &mut self,
        r: &mut impl Read,
        read: usize,
        count: &Counter,
    ) -> Result<(), Stop> {
        let prefix = std::mem::take(&mut self.carry);
        let mut total = read as u64;
        let mut scratch = Vec::new();
        loop {
            let mut len = 0;
            let eof = self.fill(r, &mut scratch, &mut len)?;
            // What follows the line end (maybe many lines) is carried over.
            if let Some(k) = memchr::memchr(b'\n', &scratch[..len]) {
                total += k as u64;
                self.carry.extend_from_slice(&scratch[k + 1..len]);
                break;
            }
            total += len as u64;
            if eof {
                break;
            }
        }
        let block = Block {
            source: self.index,
            first_line: self.line,
            len: prefix.len(),
            data: prefix,
            consumed: count.load(std::sync::atomic::Ordering::Relaxed),
            overlong: Some(total),
            end: None,
            imported: None,
        };
        self.line += 1;
        self.tx.send(Ok(block)).map_err(|_| Stop)?;
        // At the end of the source, the next fill_block finds it so.
        Ok(())
    }

    /// Send the block of `buf[..len]` and count its lines; the last block
    /// of the source (sent even when empty) says what was read.
    fn send(&mut self, buf: Vec<u8>, len: usize, eof: bool, count: &Counter) -> Result<(), Stop> {
        let bytes = &buf[..len];
        let lines = memchr::memchr_iter(b'\n', bytes).count() as u64
            + u64::from(eof && bytes.last().is_some_and(|&b| b != b'\n'));
        let first_line = self.line;
        self.line += lines;
        if len > 0 || eof {
            let block = Block {
                source: self.index,
                first_line,
                data: buf,
                len,
                consumed: count.load(std::sync::atomic::Ordering::Relaxed),
                overlong: None,
                end: eof.then(|| SourceEnd {
                    lines: self.line - 1,
                    bytes: self.bytes,
                    xxh3: self.hash.digest(),
                }),
                imported: None,
            };
            self.tx.send(Ok(block)).map_err(|_| Stop)?;
        }
        Ok(())
    }

    fn fail(&self, e: ReadError) -> Stop {
        let _ = self.tx.send(Err(e));
        Stop
    }
}

/// A blank line is skipped: JSON whitespace only (space, tab, CR). Any
/// other byte (a form feed, a vertical tab) makes a line, which is then
/// invalid JSON.
pub fn is_blank(raw: &[u8]) -> bool {
    raw.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
}

/// Line 1 without a UTF-8 byte-order mark (skipped, as most JSON Lines
/// readers do).
pub fn without_bom(line: u64, raw: &[u8]) -> &[u8] {
    match line {
        1 => raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw),
        _ => raw,
    }
}

/// Iterate the lines of a block: (line number, bytes without `\n`/`\r\n`).
pub fn lines(block: &Block) -> impl Iterator<Item = (u64, &[u8])> {
    let data = block.bytes();
    let data = data.strip_suffix(b"\n").unwrap_or(data);
    // memchr finds each newline with SIMD (a byte-wise split costs about
    // a tenth of a parse on 1 KB lines).
    let mut start = 0;
    let mut next = block.first_line;
    // An empty block (the end of a source) has no line at all.
    let last = (!block.bytes().is_empty()).then_some(data.len());
    let ends = memchr::memchr_iter(b'\n', data).chain(last);
    let map = block.imported.as_ref().map(|i| &i.lines[..]);
    let mut index = 0;
    ends.map(move |end| {
        let l = &data[start..end];
        start = end + 1;
        next += 1;
        let line = map.map_or(next - 1, |m| m[index]);
        index += 1;
        (line, l.strip_suffix(b"\r").unwrap_or(l))
    })
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause.as_ref().map(|e| e as _)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn collect(path: &str) -> Vec<(u64, String)> {
        let rx = blocks(vec![Source::named(path)], 2).unwrap();
        let mut out = Vec::new();
        for b in rx {
            let b = b.unwrap();
            for (n, l) in lines(&b) {
                out.push((n, String::from_utf8_lossy(l).into_owned()));
            }
        }
        out
    }

    #[test]
    fn reads_plain_gzip_and_zstd_with_line_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let text = "a\n\nb\r\nc";
        let plain = dir.path().join("t.jsonl");
        std::fs::write(&plain, text).unwrap();
        let gz = dir.path().join("t.jsonl.gz");
        let mut e = flate2::write::GzEncoder::new(
            File::create(&gz).unwrap(),
            flate2::Compression::default(),
        );
        e.write_all(text.as_bytes()).unwrap();
        e.finish().unwrap();
        let zst = dir.path().join("t.jsonl.zst");
        std::fs::write(&zst, zstd::encode_all(text.as_bytes(), 3).unwrap()).unwrap();
        let want = vec![
            (1, "a".to_string()),
            (2, "".to_string()),
            (3, "b".to_string()),
            (4, "c".to_string()),
        ];
        for p in [plain, gz, zst] {
            assert_eq!(collect(p.to_str().unwrap()), want, "{}", p.display());
        }
    }

    #[test]
    fn long_inputs_split_on_line_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.jsonl");
        let line = "x".repeat(1000);
        let text: String = (0..3000).map(|_| format!("{line}\n")).collect();
        std::fs::write(&p, text).unwrap();
        let got = collect(p.to_str().unwrap());
        assert_eq!(got.len(), 3000);
        assert!(got
            .iter()
            .enumerate()
            .all(|(i, (n, l))| *n == i as u64 + 1 && l.len() == 1000));
    }

    #[test]
    fn lines_longer_than_a_block_stay_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("long.jsonl");
        let long = "y".repeat(2 * BLOCK_BYTES + 123);
        std::fs::write(&p, format!("a\n{long}\nb\n{long}")).unwrap();
        let got = collect(p.to_str().unwrap());
        let want = vec![
            (1, "a".to_string()),
            (2, long.clone()),
            (3, "b".to_string()),
            (4, long),
        ];
        assert!(got == want, "lines differ");
    }

    /// (line, text or `overlong <bytes>: <prefix length>`), read with a
    /// limit of `max` bytes a line.
    fn collect_capped(path: &str, max: usize) -> Vec<(u64, String)> {
        let (rx, _) = blocks_recycled(vec![Source::named(path)], 2, max).unwrap();
        let mut out = Vec::new();
        for b in rx {
            let b = b.unwrap();
            match b.overlong {
                Some(n) => out.push((b.first_line, format!("overlong {n}: {}", b.bytes().len()))),
                None => {
                    for (n, l) in lines(&b) {
                        out.push((n, String::from_utf8_lossy(l).into_owned()));
                    }
                }
            }
        }
        out
    }

    /// A 1 GB line took 47 s (a newline search over the whole line on
    /// every read) and held the whole line: a line past the limit is
    /// skipped in constant memory, its first bytes kept, and the lines
    /// after it keep their numbers.
    #[test]
    fn a_line_past_the_limit_comes_as_its_prefix_and_reading_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("long.jsonl");
        let long = "y".repeat(5 * BLOCK_BYTES + 7);
        let mid = "z".repeat(BLOCK_BYTES / 2);
        std::fs::write(&p, format!("a\n{long}\nb\nc\n{mid}\n{long}")).unwrap();
        let got = collect_capped(p.to_str().unwrap(), 2 * BLOCK_BYTES);
        let want = vec![
            (1, "a".to_string()),
            (2, format!("overlong {}: {OVERLONG_PREFIX}", long.len())),
            (3, "b".to_string()),
            (4, "c".to_string()),
            (5, mid),
            (6, format!("overlong {}: {OVERLONG_PREFIX}", long.len())),
        ];
        assert!(
            got == want,
            "{:?}",
            got.iter().map(|(n, l)| (n, l.len())).collect::<Vec<_>>()
        );
        // Ending in a line end changes nothing.
        std::fs::write(&p, format!("{long}\n")).unwrap();
        let got = collect_capped(p.to_str().unwrap(), BLOCK_BYTES);
        assert_eq!(
            got,
            vec![(1, format!("overlong {}: {OVERLONG_PREFIX}", long.len()))]
        );
    }

    #[test]
    fn missing_file_is_an_error_naming_it() {
        let rx = blocks(vec![Source::named("/nonexistent/x.jsonl")], 1).unwrap();
        let e = rx.recv().unwrap().unwrap_err();
        assert!(e.message.starts_with("/nonexistent/x.jsonl: cannot open"));
        assert_eq!(e.cause.map(|c| c.kind()), Some(io::ErrorKind::NotFound));
    }
}
