//! A partial result: everything one shard's replay needs to be merged
//! with others into the reports of one replay over all the shards' files.
//!
//! One zstd stream (with a content checksum) holding, after a magic line,
//! a version and the tallies' shape ([`tallies_shape`]), a sequence of
//! frames `tag (1 byte), length (u64 LE),
//! payload`:
//!
//! | tag | payload                                                         |
//! |-----|-----------------------------------------------------------------|
//! | `H` | the header (JSON): what must agree between shards ([`Spec`]), the shard's label, sources and scope columns |
//! | `D` | rows of decisions.csv, as the replay formatted them (one frame per block) |
//! | `M` | rows of mismatches.csv                                          |
//! | `G` | rows of regressions.csv                                         |
//! | `R` | rejected lines (JSON), with shard-local source indexes          |
//! | `K` | the duplicate check's keys: (hash u64, source u32, line u64) LE, so the merge repeats the check over every shard in order |
//! | `S` | the tallies (JSON): totals before any cap, regressions, sources |
//! | `E` | the end (a file cut short has none)                             |
//!
//! Everything is exact: tallies are integers, rows are the bytes one replay
//! writes, and the caps (segments past [`crate::pipeline::SEGMENT_LIMIT`],
//! warnings' first lines) are applied at the merge.

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::config::Plan;
use crate::options::{Said, Setting};
use crate::replay::scope_columns::{Scan, ScopeColumns};
use crate::replay::{
    BlockResult, DecisionsMode, Format, Regression, Reject, ReplayOptions, Tallies, Totals,
};
use crate::summary::build::SourceFacts;
use crate::Error;

/// The first bytes of a partial result (after decompression).
const MAGIC: &[u8] = b"critic-gate partial result\n";
/// The version of the frames and their payloads; a merge refuses others.
/// 2: the tallies know whether the scope dimensions overflowed, the scan
/// lists at most so many keys. 4: the header carries the tallies' shape.
/// 5: a regression says whether the baseline fires on its turn. 6: the
/// decision and mismatch rows carry the turn's trace, span and message.
/// 8: the spec carries the declared options it does not name (`flags`).
pub(crate) const VERSION: u32 = 8;

/// A hash of the tallies' shape: every path of [`Totals`]' JSON (each map
/// and list holding one of everything), with each leaf's JSON type. A
/// partial result carries the tallies as JSON (`S`), so a build that
/// counts something more, less or under another name must not merge
/// another's partial (it would read the count as 0): the header carries
/// this hash and a merge refuses a partial of another. It is computed,
/// not kept by hand, so a new count needs no edit here.
pub(crate) fn tallies_shape() -> u64 {
    static SHAPE: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SHAPE.get_or_init(|| xxhash_rust::xxh3::xxh3_64(shape_text().as_bytes()))
}

/// The largest whole number of the tallies. A merge adds each count to
/// the same count of the other shards, so while the shards' largest,
/// added, stay within 2^64 - 1 no sum can wrap; past it a merge refuses
/// rather than report a wrapped count (a real replay's largest count, the
/// critic latency summed in nanoseconds, is about 4e17 at 100 million
/// turns).
pub(crate) fn largest_count(totals: &Totals) -> u64 {
    fn largest(v: &serde_json::Value) -> u64 {
        match v {
            serde_json::Value::Number(n) => n.as_u64().unwrap_or(0),
            serde_json::Value::Array(a) => a.iter().map(largest).max().unwrap_or(0),
            serde_json::Value::Object(o) => o.values().map(largest).max().unwrap_or(0),
            _ => 0,
        }
    }
    let Ok(mut v) = serde_json::to_value(totals) else {
        return u64::MAX;
    };
    // A plan's drawn keys are hashes (any u64), not counts: two shards'
    // would pass 2^64 - 1 and refuse every merge of a replay with a plan.
    if let Some(d) = v.get_mut("design").and_then(|d| d.as_object_mut()) {
        d.remove("keys");
    }
    largest(&v)
}

/// The paths [`tallies_shape`] hashes, one per line.
fn shape_text() -> String {
    let json = serde_json::to_value(full_totals()).expect("the totals serialize");
    let mut paths = std::collections::BTreeSet::new();
    shape(&json, "", &mut paths);
    paths.into_iter().collect::<Vec<_>>().join("\n")
}

/// Every path of `v`'s structure, with each array's length (fixed
/// arrays are the format's shape) and each leaf's JSON type.
fn shape(v: &serde_json::Value, at: &str, out: &mut std::collections::BTreeSet<String>) {
    use serde_json::Value;
    match v {
        Value::Object(m) => m
            .iter()
            .for_each(|(k, x)| shape(x, &format!("{at}.{k}"), out)),
        Value::Array(a) => {
            out.insert(format!("{at}[{}]", a.len()));
            if let Some(x) = a.first() {
                shape(x, &format!("{at}[]"), out);
            }
        }
        leaf => {
            let kind = match leaf {
                Value::Bool(_) => "bool",
                Value::Number(_) => "number",
                Value::String(_) => "string",
                _ => "null",
            };
            out.insert(format!("{at}: {kind}"));
        }
    }
}

/// Totals with one of everything a map or list can hold, so every nested
/// count is in the JSON.
fn full_totals() -> Totals {
    use crate::replay::skips::SkipTally;
    use crate::replay::tally::{Counts, RunCounts};
    use std::collections::BTreeMap;
    let mut t = Totals::new(1);
    t.variants[0].runs.insert(1, RunCounts::default());
    // A histogram with a settled bucket and a pending one, so the shape
    // reaches their elements.
    for h in [&mut t.variants[0].latency, &mut t.latency_by_length[0]] {
        h.add(1.0);
        h.settle();
        h.add(2.0);
    }
    t.segments.insert(
        "dimension".into(),
        BTreeMap::from([("value".into(), vec![Counts::default()])]),
    );
    t.segment_order
        .insert("dimension".into(), vec!["value".into()]);
    t.segments_capped.insert("dimension".into(), 1);
    let mut skip = SkipTally::default();
    skip.languages.insert("en".into(), 1);
    t.skips[0].insert("ok".into(), skip);
    t.warnings
        .add(crate::replay::WarningKind::DuplicateTurn, 0, 1);
    t.unpriced_models.insert("model".into());
    t.note_misnamed("intent", "intent_verdict");
    t.fabrication_kinds.insert("kind".into(), 1);
    t.import_counts.insert("runs".into(), 1);
    t.trace_keys.insert("run".into());
    t
}

/// Frame tags.
pub(crate) mod tag {
    pub(crate) const HEADER: u8 = b'H';
    pub(crate) const DECISIONS: u8 = b'D';
    pub(crate) const MISMATCHES: u8 = b'M';
    pub(crate) const REGRESSIONS: u8 = b'G';
    pub(crate) const REJECTS: u8 = b'R';
    pub(crate) const KEYS: u8 = b'K';
    pub(crate) const STATE: u8 = b'S';
    pub(crate) const END: u8 = b'E';
}

/// What every shard of one merge must have been replayed with: everything
/// a figure depends on but the sources, the label and the file format.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Spec {
    pub plan: Plan,
    pub skip_invalid: bool,
    pub decisions: DecisionsMode,
    pub group_by: Vec<String>,
    pub max_line_bytes: usize,
    pub scope_columns: Option<Vec<String>>,
    pub frontier: bool,
    pub detail: bool,
    pub notes: Vec<String>,
    pub split: Option<crate::replay::options::Split>,
    pub max_ack_share: f64,
    #[serde(default)]
    pub design: Option<crate::replay::design::Design>,
    /// The declared options the fields above do not name (an option
    /// declared since, which an engine reads from `ReplayOptions::flags`),
    /// by keyword: shards must agree on them, and the merge replays with
    /// them.
    #[serde(default)]
    pub flags: std::collections::BTreeMap<String, serde_json::Value>,
}

/// The options the spec names field by field, or that no figure depends
/// on (the tables' format, the label, the threads, the terminal).
const NAMED: [Setting; 13] = [
    Setting::From,
    Setting::Threads,
    Setting::SkipInvalid,
    Setting::Quiet,
    Setting::MaxLineBytes,
    Setting::Label,
    Setting::Force,
    Setting::MaxAckShare,
    Setting::Format,
    Setting::Decisions,
    Setting::GroupBy,
    Setting::ScopeColumns,
    Setting::Plan,
];

impl Spec {
    pub(crate) fn of(o: &ReplayOptions) -> Spec {
        Spec {
            plan: o.plan.clone(),
            skip_invalid: o.input.skip_invalid,
            decisions: o.tallies.decisions,
            group_by: o.tallies.group_by.clone(),
            max_line_bytes: o.input.max_line_bytes,
            scope_columns: o.tallies.scope_columns.clone(),
            frontier: o.outputs.frontier,
            detail: o.tallies.detail,
            notes: o.outputs.notes.clone(),
            split: o.input.split,
            max_ack_share: o.tallies.max_ack_share,
            design: o.tallies.design.clone(),
            flags: o.flags.record(&NAMED),
        }
    }

    /// The options of a replay over `sources` with this spec.
    pub(crate) fn options(
        &self,
        sources: Vec<String>,
        label: String,
        format: Format,
    ) -> ReplayOptions {
        let mut o = ReplayOptions::new(sources, self.plan.clone(), label);
        o.input.skip_invalid = self.skip_invalid;
        o.input.max_line_bytes = self.max_line_bytes;
        o.input.split = self.split;
        o.tallies = Tallies {
            group_by: self.group_by.clone(),
            scope_columns: self.scope_columns.clone(),
            detail: self.detail,
            max_ack_share: self.max_ack_share,
            decisions: self.decisions,
            design: self.design.clone(),
        };
        o.outputs.format = format;
        o.outputs.frontier = self.frontier;
        o.outputs.notes = self.notes.clone();
        // The merge refused a spec whose options do not read back
        // (`Spec::flags_read_back`), and a partial result of another version.
        if let Some(flags) = self.flags_read_back() {
            o.flags = flags;
        }
        o
    }

    /// The declared options the spec records, read back; None when one is
    /// not an option of this build or not a value it takes (a damaged
    /// partial result).
    pub(crate) fn flags_read_back(&self) -> Option<crate::options::Values> {
        crate::options::Values::restore(crate::options::REPLAY, &self.flags)
    }

    /// What differs from `o`, first difference first, in the words of the
    /// config file and the command line (each setting as data, which the
    /// front end spells); None when they agree.
    pub(crate) fn difference(&self, o: &Spec) -> Option<Said> {
        let (a, b) = (&self.plan, &o.plan);
        let names = |p: &Plan| {
            p.variants
                .iter()
                .map(|v| v.name.clone())
                .collect::<Vec<_>>()
        };
        if names(a) != names(b) {
            return Some(format!("variants {:?} against {:?}", names(a), names(b)).into());
        }
        if let Some((x, _)) = a
            .variants
            .iter()
            .zip(&b.variants)
            .find(|(x, y)| x.config != y.config)
        {
            return Some(format!("the gate settings of variant {:?}", x.name).into());
        }
        if let Some((x, _)) = a
            .variants
            .iter()
            .zip(&b.variants)
            .find(|(x, y)| x.deployment != y.deployment)
        {
            return Some(
                format!(
                    "the deployment variant {:?} runs with ([variants.{}.deployment])",
                    x.name, x.name
                )
                .into(),
            );
        }
        self.plan_difference(o)
            .or_else(|| self.option_difference(o))
    }

    /// The first of the plan's tables that differs.
    fn plan_difference(&self, o: &Spec) -> Option<Said> {
        let (a, b) = (&self.plan, &o.plan);
        let differs = [
            (a.baseline != b.baseline, "the baseline"),
            (
                a.production() != b.production(),
                "production (the gate that produced the traffic)",
            ),
            (a.cost != b.cost, "the prices ([cost])"),
            (a.check != b.check, "the budgets ([check])"),
            (
                a.deployment != b.deployment,
                "the deployment ([deployment])",
            ),
        ];
        differs
            .iter()
            .find(|(d, _)| *d)
            .map(|(_, what)| (*what).into())
    }

    /// The first option that differs, as its setting.
    fn option_difference(&self, o: &Spec) -> Option<Said> {
        let differs = [
            (self.skip_invalid != o.skip_invalid, Setting::SkipInvalid),
            (self.decisions != o.decisions, Setting::Decisions),
            (self.group_by != o.group_by, Setting::GroupBy),
            (
                self.max_line_bytes != o.max_line_bytes,
                Setting::MaxLineBytes,
            ),
            (self.scope_columns != o.scope_columns, Setting::ScopeColumns),
            (self.max_ack_share != o.max_ack_share, Setting::MaxAckShare),
            (self.design != o.design, Setting::Plan),
        ];
        if let Some((_, s)) = differs.iter().find(|(d, _)| *d) {
            return Some(crate::said![*s]);
        }
        let keys = self.flags.keys().chain(o.flags.keys());
        if let Some(k) = keys
            .into_iter()
            .find(|k| self.flags.get(*k) != o.flags.get(*k))
        {
            return Some(match Setting::of_keyword(k) {
                Some(s) => crate::said![s],
                None => k.as_str().into(),
            });
        }
        let command = (self.frontier, self.detail, &self.notes, self.split)
            != (o.frontier, o.detail, &o.notes, o.split);
        command.then(|| "the command (replay, sweep or calibrate)".into())
    }

    /// A short hash of the spec, to name it in messages.
    pub(crate) fn fingerprint(&self) -> String {
        let json = serde_json::to_vec(self).expect("a spec serialises");
        format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&json))
    }
}

/// The header frame.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Header {
    /// The tool's version that wrote the partial result.
    pub tool: String,
    pub spec: Spec,
    /// The label the shard's rows carry (the merge puts its own).
    pub label: String,
    pub sources: Vec<String>,
    /// The scope columns of the shard's rows, and the scan they were
    /// found by (empty when `--scope-columns` named them).
    pub scope: ScopeColumns,
    pub scan: Scan,
}

/// The tallies frame: what the shard's reports are made from, before any
/// cap.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct State {
    pub totals: Totals,
    pub regressions: Vec<Regression>,
    pub sources: Vec<SourceFacts>,
}

/// The tallies frame as written (borrowed from the run).
#[derive(Serialize)]
pub(crate) struct StateRef<'a> {
    pub totals: &'a Totals,
    pub regressions: &'a [Regression],
    pub sources: &'a [SourceFacts],
}

/// Writes a partial result as the replay runs.
pub(crate) struct PartialWriter<W: Write> {
    enc: zstd::Encoder<'static, W>,
    name: String,
    /// Reused for the binary keys of each block.
    keys: Vec<u8>,
}

impl<W: Write> PartialWriter<W> {
    /// Start the stream into `sink`; `name` names it in errors.
    pub(crate) fn new(sink: W, name: String) -> crate::Result<PartialWriter<W>> {
        let fail =
            |e: std::io::Error| Error::Write(crate::Failure::caused(format!("{name}: {e}"), e));
        // Level 1: the rows compress about 10x at several hundred MB/s, so
        // writing keeps up with the replay.
        let mut enc = zstd::Encoder::new(sink, 1).map_err(fail)?;
        enc.include_checksum(true).map_err(fail)?;
        enc.write_all(MAGIC).map_err(fail)?;
        enc.write_all(&VERSION.to_le_bytes()).map_err(fail)?;
        enc.write_all(&tallies_shape().to_le_bytes())
            .map_err(fail)?;
        Ok(PartialWriter {
            enc,
            name,
            keys: Vec::new(),
        })
    }

    fn frame(&mut self, tag: u8, payload: &[u8]) -> crate::Result<()> {
        let mut head = [0u8; 9];
        head[0] = tag;
        head[1..].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        self.enc
            .write_all(&head)
            .and_then(|()| self.enc.write_all(payload))
            .map_err(|e| Error::Write(crate::Failure::caused(format!("{}: {e}", self.name), e)))
    }

    fn json(&mut self, tag: u8, value: &impl Serialize) -> crate::Result<()> {
        let bytes = serde_json::to_vec(value)
            .map_err(|e| Error::Write(crate::Failure::caused(e.to_string(), e)))?;
        self.frame(tag, &bytes)
    }

    pub(crate) fn header(&mut self, h: &Header) -> crate::Result<()> {
        self.json(tag::HEADER, h)
    }

    /// One block's rows, rejects and keys, in input order.
    pub(crate) fn block(&mut self, res: &BlockResult) -> crate::Result<()> {
        for (t, rows) in [
            (tag::DECISIONS, &res.decisions_csv),
            (tag::MISMATCHES, &res.mismatches_csv),
            (tag::REGRESSIONS, &res.regressions_csv),
        ] {
            if !rows.is_empty() {
                self.frame(t, rows)?;
            }
        }
        if !res.rejects.is_empty() {
            self.json(tag::REJECTS, &res.rejects)?;
        }
        if !res.keys.is_empty() {
            let mut keys = std::mem::take(&mut self.keys);
            keys.clear();
            for &(k, source, line) in &res.keys {
                keys.extend_from_slice(&k.to_le_bytes());
                keys.extend_from_slice(&(source as u32).to_le_bytes());
                keys.extend_from_slice(&line.to_le_bytes());
            }
            self.frame(tag::KEYS, &keys)?;
            self.keys = keys;
        }
        Ok(())
    }

    /// The tallies and the end.
    pub(crate) fn state(&mut self, state: &StateRef) -> crate::Result<()> {
        self.json(tag::STATE, state)?;
        self.frame(tag::END, &[])
    }

    /// Close the stream and hand back the sink.
    pub(crate) fn finish(self) -> crate::Result<W> {
        let name = self.name;
        self.enc
            .finish()
            .map_err(|e| Error::Write(crate::Failure::caused(format!("{name}: {e}"), e)))
    }

    /// The sink of a run that failed, to be removed (None if even the
    /// stream's end could not be written).
    pub(crate) fn abandon(self) -> Option<W> {
        self.enc.finish().ok()
    }
}

/// Whether `r` starts as a partial result (of any version) does.
pub(crate) fn is_partial(r: impl Read) -> bool {
    let Ok(mut dec) = zstd::Decoder::new(r) else {
        return false;
    };
    let mut magic = vec![0u8; MAGIC.len()];
    dec.read_exact(&mut magic).is_ok() && magic == MAGIC
}

/// Where a partial result is read from.
#[derive(Clone, Debug)]
pub enum PartialInput {
    File(PathBuf),
    Memory { name: String, bytes: Arc<[u8]> },
}

impl PartialInput {
    pub fn name(&self) -> String {
        match self {
            PartialInput::File(p) => p.display().to_string(),
            PartialInput::Memory { name, .. } => name.clone(),
        }
    }
}

/// Reads a partial result frame by frame.
pub(crate) struct PartialReader {
    pub name: String,
    dec: zstd::Decoder<'static, BufReader<Box<dyn Read + Send>>>,
}

/// One decoded frame.
pub(crate) enum Frame {
    Header(Box<Header>),
    Decisions(Vec<u8>),
    Mismatches(Vec<u8>),
    Regressions(Vec<u8>),
    Rejects(Vec<Reject>),
    /// (hash, shard-local source, line) of each numbered turn.
    Keys(Vec<(u64, usize, u64)>),
    State(Box<State>),
    End,
}

/// Frames longer than this are damage, not data (a block's rows are a few
/// MB; the tallies at most a few hundred).
const MAX_FRAME: u64 = 1 << 30;

impl PartialReader {
    pub(crate) fn open(input: &PartialInput) -> crate::Result<PartialReader> {
        let name = input.name();
        let raw: Box<dyn Read + Send> = match input {
            PartialInput::File(p) => Box::new(File::open(p).map_err(|e| {
                Error::Read(crate::Failure::caused(
                    format!("{name}: cannot open: {e}"),
                    e,
                ))
            })?),
            PartialInput::Memory { bytes, .. } => Box::new(std::io::Cursor::new(bytes.clone())),
        };
        let dec = zstd::Decoder::new(raw).map_err(|e| damaged(&name, &e.to_string()))?;
        let mut r = PartialReader { name, dec };
        let mut magic = vec![0u8; MAGIC.len() + 4];
        r.dec
            .read_exact(&mut magic)
            .map_err(|_| damaged(&r.name, "not a critic-gate partial result"))?;
        if &magic[..MAGIC.len()] != MAGIC {
            return Err(damaged(&r.name, "not a critic-gate partial result"));
        }
        let version = u32::from_le_bytes(magic[MAGIC.len()..].try_into().expect("4 bytes"));
        if version != VERSION {
            return Err(Error::Read(format!(
                "{}: a partial result of version {version}; this critic-gate ({}) reads version {VERSION}: replay the shard again with this version",
                r.name,
                env!("CARGO_PKG_VERSION")
            ).into()));
        }
        let mut shape = [0u8; 8];
        r.dec
            .read_exact(&mut shape)
            .map_err(|_| damaged(&r.name, "cut short in its header"))?;
        let shape = u64::from_le_bytes(shape);
        if shape != tallies_shape() {
            return Err(Error::Read(format!(
                "{}: a partial result whose tallies have another shape ({shape:#018x}; this build's are {:#018x}): it was written by another build of critic-gate {}, which counts other things; replay the shard again with this build",
                r.name,
                tallies_shape(),
                env!("CARGO_PKG_VERSION")
            ).into()));
        }
        Ok(r)
    }

    /// The tallies of `input`, read before its rows are merged: the rows'
    /// frames are passed over (decompressed, never held), so a merge knows
    /// how many rows a shard may bring before it writes one.
    pub(crate) fn tallies_of(input: &PartialInput) -> crate::Result<Box<State>> {
        let mut r = PartialReader::open(input)?;
        loop {
            let mut head = [0u8; 9];
            r.dec
                .read_exact(&mut head)
                .map_err(|e| damaged(&r.name, &format!("cut short ({e})")))?;
            let len = u64::from_le_bytes(head[1..].try_into().expect("8 bytes"));
            match head[0] {
                tag::STATE => {
                    let mut payload = Vec::new();
                    (&mut r.dec)
                        .take(len.min(MAX_FRAME))
                        .read_to_end(&mut payload)
                        .map_err(|e| damaged(&r.name, &format!("cut short ({e})")))?;
                    return match r.decode(tag::STATE, payload)? {
                        Frame::State(s) => Ok(s),
                        _ => unreachable!("a state frame decodes as one"),
                    };
                }
                tag::END => return Err(damaged(&r.name, "it has no tallies")),
                _ => {
                    let skipped = std::io::copy(&mut (&mut r.dec).take(len), &mut std::io::sink())
                        .map_err(|e| damaged(&r.name, &format!("cut short ({e})")))?;
                    if skipped != len {
                        return Err(damaged(&r.name, "cut short in a frame"));
                    }
                }
            }
        }
    }

    /// The next frame; a stream that ends before [`Frame::End`] is damaged.
    pub(crate) fn next(&mut self) -> crate::Result<Frame> {
        let mut head = [0u8; 9];
        self.dec
            .read_exact(&mut head)
            .map_err(|e| damaged(&self.name, &format!("cut short ({e})")))?;
        let len = u64::from_le_bytes(head[1..].try_into().expect("8 bytes"));
        if len > MAX_FRAME {
            return Err(damaged(&self.name, &format!("a frame of {len} bytes")));
        }
        // Grown as the bytes come, not allocated at the length the frame
        // claims: a frame that lies about its length costs what it holds.
        let mut payload = Vec::new();
        (&mut self.dec)
            .take(len)
            .read_to_end(&mut payload)
            .map_err(|e| damaged(&self.name, &format!("cut short ({e})")))?;
        if payload.len() as u64 != len {
            return Err(damaged(&self.name, "cut short in a frame"));
        }
        self.decode(head[0], payload)
    }

    fn decode(&self, t: u8, payload: Vec<u8>) -> crate::Result<Frame> {
        let json = |what: &str| damaged(&self.name, &format!("its {what} do not read"));
        Ok(match t {
            tag::HEADER => {
                Frame::Header(serde_json::from_slice(&payload).map_err(|_| json("header"))?)
            }
            tag::DECISIONS => Frame::Decisions(payload),
            tag::MISMATCHES => Frame::Mismatches(payload),
            tag::REGRESSIONS => Frame::Regressions(payload),
            tag::REJECTS => {
                Frame::Rejects(serde_json::from_slice(&payload).map_err(|_| json("rejects"))?)
            }
            tag::KEYS => Frame::Keys(keys(&payload).ok_or_else(|| json("keys"))?),
            tag::STATE => {
                Frame::State(serde_json::from_slice(&payload).map_err(|_| json("tallies"))?)
            }
            tag::END => Frame::End,
            other => {
                return Err(damaged(
                    &self.name,
                    &format!("an unknown frame {other:#04x}"),
                ))
            }
        })
    }

    /// After [`Frame::End`]: the stream must end there, checksum intact.
    pub(crate) fn expect_end(&mut self) -> crate::Result<()> {
        let mut rest = Vec::new();
        self.dec
            .read_to_end(&mut rest)
            .map_err(|e| damaged(&self.name, &e.to_string()))?;
        match rest.is_empty() {
            true => Ok(()),
            false => Err(damaged(&self.name, "bytes after its end")),
        }
    }
}

fn keys(payload: &[u8]) -> Option<Vec<(u64, usize, u64)>> {
    if !payload.len().is_multiple_of(20) {
        return None;
    }
    Some(
        payload
            .chunks_exact(20)
            .map(|c| {
                let k = u64::from_le_bytes(c[..8].try_into().expect("8"));
                let s = u32::from_le_bytes(c[8..12].try_into().expect("4")) as usize;
                let l = u64::from_le_bytes(c[12..].try_into().expect("8"));
                (k, s, l)
            })
            .collect(),
    )
}

fn damaged(name: &str, why: &str) -> Error {
    Error::Read(
        crate::said![
            format!("{name}: damaged partial result: {why}; replay the shard again with "),
            crate::vocab::Setting::Partial
        ]
        .into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape covers the counts nested in maps and lists (a count of a
    /// run's, a segment's, a skip's), not only the top-level ones.
    #[test]
    fn the_shape_reaches_every_nested_tally() {
        let text = shape_text();
        for path in [
            ".variants[].counts.turns: number",
            ".variants[].runs.1",
            ".segments.dimension.value[].turns: number",
            ".skips[].ok.languages.en: number",
            ".variants[].latency.buckets[][]",
            ".variants[].latency.pending[]",
        ] {
            assert!(
                text.lines().any(|l| l.starts_with(path)),
                "{path} not in\n{text}"
            );
        }
        assert_eq!(tallies_shape(), tallies_shape());
    }

    /// A partial result whose header carries another tallies' shape (a
    /// build that counts another set of things) is refused, naming both.
    #[test]
    fn a_partial_of_another_tallies_shape_is_refused() {
        let mut bytes = Vec::new();
        let w = PartialWriter::new(&mut bytes, "a.partial".into()).unwrap();
        w.enc.finish().unwrap();
        let mut raw = zstd::decode_all(&bytes[..]).unwrap();
        let at = MAGIC.len() + 4;
        assert_eq!(raw[at..at + 8], tallies_shape().to_le_bytes());
        raw[at] ^= 1;
        let input = PartialInput::Memory {
            name: "a.partial".into(),
            bytes: Arc::from(zstd::encode_all(&raw[..], 1).unwrap()),
        };
        let Err(e) = PartialReader::open(&input) else {
            panic!("a partial of another shape was read")
        };
        let e = e.to_string();
        assert!(
            e.contains("another shape") && e.contains(&format!("{:#018x}", tallies_shape())),
            "{e}"
        );
    }
}
