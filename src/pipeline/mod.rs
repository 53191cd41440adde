//! The replay pipeline, end to end: read -> evaluate -> aggregate ->
//! tabulate -> write. The binary only adds flags and a progress bar.

use std::path::Path;

use crate::config::Plan;
use crate::read::reader::{self, Block, ReadError};
use std::sync::mpsc::Receiver;

use crate::replay::scope_columns::{SCAN_BLOCKS, SCAN_TURNS};
use crate::replay::{
    cap_segments, BlockResult, DuplicateCheck, Regression, ReplayOptions, Replayer, Totals,
};
use crate::report::summary::{self, RunFacts, SourceFacts, Summary};
use crate::report::{self, ReplayReport, Staging, Streams};
use crate::Error;

mod console;
mod parse_only;

pub use parse_only::{parse_only, Parsed};

/// Values a dimension may keep in `segments.csv` before the rest is folded
/// into `(other)`.
pub const SEGMENT_LIMIT: usize = 1000;

/// What a finished replay tells its caller.
pub struct Outcome {
    pub plan: Plan,
    pub sources: Vec<String>,
    pub totals: Totals,
    pub summary: Summary,
    pub regressions: Vec<Regression>,
    pub segments_cut: std::collections::BTreeMap<String, usize>,
}

/// Progress: input bytes consumed so far (compressed bytes for compressed
/// files) and turns evaluated.
pub trait Progress {
    fn update(&self, bytes: u64, turns: u64);
}

impl Progress for () {
    fn update(&self, _: u64, _: u64) {}
}

/// Replay `opts` and write the reports into `out`. On any error nothing is
/// written (an earlier report in `out` is left as it was).
pub fn run(opts: ReplayOptions, out: &Path, progress: &dyn Progress) -> crate::Result<Outcome> {
    report::check_out_dir(out, &opts.sources, opts.force)?;
    let mut replayer = Replayer::new(opts)?;
    let staging = Staging::create(out)?;
    match run_into(&mut replayer, &staging, progress) {
        Ok(outcome) => {
            staging.commit(report::report_files())?;
            Ok(outcome)
        }
        Err(e) => {
            staging.abandon();
            Err(e)
        }
    }
}

fn run_into(
    replayer: &mut Replayer,
    staging: &Staging,
    progress: &dyn Progress,
) -> crate::Result<Outcome> {
    let threads = rayon::current_num_threads();
    let (rx, recycler) = reader::blocks_recycled(
        replayer.sources(),
        2 * threads + 2,
        replayer.opts.max_line_bytes,
    )?;
    let first = leading_blocks(replayer, &rx);
    let replayer = &*replayer;
    let opts = &replayer.opts;
    let mut streams = Streams::open(staging, opts, &replayer.scope_columns)?;
    let mut merged = Merged::new(replayer);
    // Blocks are evaluated on the pool as they arrive and merged here in
    // input order, so merging and writing overlap evaluation.
    crate::replay::ordered::map_in_order(
        None,
        first.into_iter().chain(rx),
        2 * threads + 2,
        |item: Result<Block, ReadError>| item.map(|block| (replayer.process(&block), block)),
        |item| -> crate::Result<()> {
            let (res, block) = item?;
            strict(opts, &res)?;
            streams.write(&res)?;
            merged.absorb(res, &block);
            progress.update(merged.consumed(&block), merged.totals.turns);
            recycler.give(block);
            Ok(())
        },
    )?;
    streams.finish()?;
    merged.report(replayer, staging)
}

/// Unless `--scope-columns` named them, the scope columns come from the
/// input's first turns: its first blocks are read (up to
/// [`SCAN_TURNS`] lines or [`SCAN_BLOCKS`] blocks, whichever comes first,
/// so the header depends on the input only) and handed back to be
/// replayed first.
fn leading_blocks(
    replayer: &mut Replayer,
    rx: &Receiver<Result<Block, ReadError>>,
) -> Vec<Result<Block, ReadError>> {
    let mut first = Vec::new();
    if replayer.opts.scope_columns.is_some() {
        return first;
    }
    let mut lines = 0;
    while lines < SCAN_TURNS && first.len() < SCAN_BLOCKS {
        let Ok(item) = rx.recv() else { break };
        let failed = item.is_err();
        if let Ok(b) = &item {
            lines += memchr::memchr_iter(b'\n', b.bytes()).count();
        }
        first.push(item);
        if failed {
            break;
        }
    }
    let ok: Vec<&Block> = first.iter().filter_map(|b| b.as_ref().ok()).collect();
    replayer.find_scope_columns(&ok);
    first
}

/// In strict mode (no `--skip-invalid`) the first invalid line stops the
/// run.
fn strict(opts: &ReplayOptions, res: &BlockResult) -> crate::Result<()> {
    match res.rejects.first() {
        Some(r) if !opts.skip_invalid => Err(Error::InvalidLine {
            source: opts.sources[r.source].clone(),
            line: r.line,
            reason: r.reason.clone(),
        }),
        _ => Ok(()),
    }
}

/// The blocks merged so far, in input order.
struct Merged {
    totals: Totals,
    dups: DuplicateCheck,
    regressions: Vec<Regression>,
    sources: Vec<SourceFacts>,
    /// Each source's size on disk, for progress (0 for standard input).
    sizes: Vec<u64>,
}

impl Merged {
    fn new(replayer: &Replayer) -> Merged {
        let names = &replayer.opts.sources;
        Merged {
            totals: replayer.empty_totals(),
            dups: DuplicateCheck::default(),
            regressions: Vec::new(),
            sources: names
                .iter()
                .map(|s| SourceFacts {
                    name: s.clone(),
                    end: None,
                })
                .collect(),
            sizes: names.iter().map(|s| file_size(s)).collect(),
        }
    }

    fn absorb(&mut self, res: BlockResult, block: &Block) {
        self.totals.merge(&res.totals);
        self.dups.check(&res.keys, &mut self.totals.warnings);
        self.regressions.extend(res.regressions);
        if let Some(end) = block.end {
            self.sources[block.source].end = Some(end);
        }
    }

    /// Input bytes consumed up to the end of `block`.
    fn consumed(&self, block: &Block) -> u64 {
        self.sizes[..block.source].iter().sum::<u64>() + block.consumed
    }

    /// Cap the segments, summarise, and write every exported report.
    fn report(mut self, replayer: &Replayer, staging: &Staging) -> crate::Result<Outcome> {
        let opts = &replayer.opts;
        let segments_cut =
            cap_segments(&mut self.totals.segments, SEGMENT_LIMIT, opts.plan.baseline);
        let run = RunFacts {
            label: opts.label.clone(),
            sources: self.sources,
            decisions: opts.decisions.name(),
            scope_columns: replayer.scope_columns.keys().to_vec(),
            notes: opts
                .notes
                .iter()
                .cloned()
                .chain(replayer.scope_columns.note())
                .collect(),
        };
        let summary = summary::summarize(&opts.plan, &self.totals, &run, &segments_cut);
        let r = ReplayReport {
            label: &opts.label,
            plan: &opts.plan,
            totals: &self.totals,
            summary: &summary,
            regressions: &self.regressions,
            sources: &opts.sources,
            scope_keys: replayer.scope_columns.keys(),
        };
        let exports = report::exports(opts.detail, opts.frontier);
        report::write_all(&r, staging, &exports, opts.format)?;
        Ok(Outcome {
            plan: opts.plan.clone(),
            sources: opts.sources.clone(),
            totals: self.totals,
            summary,
            regressions: self.regressions,
            segments_cut,
        })
    }
}

fn file_size(source: &str) -> u64 {
    match source {
        "-" => 0,
        path => std::fs::metadata(path).map_or(0, |m| m.len()),
    }
}
