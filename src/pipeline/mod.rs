//! The replay pipeline, end to end: read -> evaluate -> aggregate ->
//! tabulate -> write. The binary only adds flags and a progress bar.

use std::path::Path;

use crate::config::Plan;
use crate::read::reader::{self, Block, ReadError};
use std::sync::mpsc::Receiver;

use crate::replay::scope_columns::{Scan, ScopeColumns, SCAN_BLOCKS, SCAN_TURNS};
use crate::replay::{
    add_absent_scope_rows, cap_segments, BlockResult, DuplicateCheck, Regression, ReplayOptions,
    Replayer, Totals, MAX_SCOPE_DIMENSIONS,
};
use crate::report::{self, ReplayReport, Staging, Streams};
use crate::summary::build::{RunFacts, SourceFacts, Summary};
use crate::Error;

mod console;
mod import;
mod merge;
mod parse_only;
pub(crate) mod partial;

use crate::summary::partial::{Header, Spec, StateRef};
pub use import::{import, ImportOptions, ImportOutcome};
pub(crate) use merge::replay_rows;
pub use merge::{merge, MergeOptions};
use partial::PartialTarget;

pub use parse_only::{parse_only, Parsed};

/// Values a dimension may keep in `segments.csv` before the rest is folded
/// into `(other)`.
pub(crate) const SEGMENT_LIMIT: usize = 1000;

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
    /// Whether the caller asked the run to stop: checked after each block,
    /// the run then ends with `Error::Interrupted` and writes nothing (a
    /// Python caller's Ctrl-C; the CLI's signals end the process instead).
    fn stopped(&self) -> bool {
        false
    }
    /// The worker pool the replay evaluates its blocks on (a Python
    /// caller's `threads=`); None: the global pool (the command line's
    /// `--threads`).
    fn pool(&self) -> Option<&rayon::ThreadPool> {
        None
    }
}

impl Progress for () {
    fn update(&self, _: u64, _: u64) {}
}

/// The source among `sources` that `path` is (by any path to it: a
/// link, `..`), if any: a file a run writes must never be one it reads.
pub(crate) fn input_at<'a>(path: &Path, sources: &'a [String]) -> Option<&'a str> {
    let target = std::fs::canonicalize(path).ok()?;
    sources
        .iter()
        .find(|s| std::fs::canonicalize(s).is_ok_and(|p| p == target))
        .map(String::as_str)
}

/// Replay `opts` and write the reports into `out`. On any error nothing is
/// written (an earlier report in `out` is left as it was).
pub(crate) fn run(
    opts: ReplayOptions,
    out: &Path,
    progress: &dyn Progress,
) -> crate::Result<Outcome> {
    let targets = Targets {
        out: Some(out),
        partial: None,
    };
    run_to(opts, targets, progress).map(|(outcome, _)| outcome)
}

/// Where a replay's results go: a report folder, a partial result for
/// `merge`, or both.
pub struct Targets<'a> {
    pub out: Option<&'a Path>,
    pub partial: Option<PartialTarget>,
}

impl Targets<'_> {
    /// What the run writes, as the summary on stderr names it.
    pub fn written(&self) -> Vec<String> {
        let out = self.out.map(|o| format!("reports: {}", o.display()));
        let partial = match &self.partial {
            Some(PartialTarget::File(path)) => Some(format!("partial result: {}", path.display())),
            _ => None,
        };
        out.into_iter().chain(partial).collect()
    }
}

/// Replay `opts` into `targets`; the partial result's bytes come back when
/// its sink is memory. On any error nothing is written.
pub(crate) fn run_to(
    opts: ReplayOptions,
    targets: Targets,
    progress: &dyn Progress,
) -> crate::Result<(Outcome, Vec<u8>)> {
    if let Some(e) = targets
        .partial
        .as_ref()
        .and_then(|t| t.refusal(&opts.input.sources, targets.out))
    {
        return Err(e);
    }
    if let Some(out) = targets.out {
        report::check_out_dir(out, &opts.input.sources, opts.outputs.force)?;
    }
    // The input is read and scanned for scope columns while the gates
    // compile (each takes tens of ms before any block can be replayed).
    let input = Input::start(&opts)?;
    let mut replayer = Replayer::new(&opts)?;
    let staging = targets.out.map(Staging::create).transpose()?;
    let sources = &opts.input.sources;
    let out = targets.out;
    let sink = |t: PartialTarget| t.open(sources, out).and_then(partial::writer);
    let partial = match targets.partial.map(sink).transpose() {
        Ok(p) => p,
        Err(e) => {
            if let Some(s) = staging {
                s.abandon();
            }
            return Err(e);
        }
    };
    let mut run = Run { staging, partial };
    let input = input
        .join()
        .map_err(|_| Error::System("the thread reading the input's first blocks failed".into()));
    let replayed = input.and_then(|input| {
        replayer.use_scan(input.scan.clone());
        run.replay(&replayer, &opts, input, progress)
    });
    // A stop asked for while the reports were written still leaves
    // nothing: the last look before anything is moved into place.
    let replayed = replayed.and_then(|done| match progress.stopped() {
        true => Err(Error::Interrupted),
        false => Ok(done),
    });
    match replayed {
        Ok(done) => done.commit(run),
        Err(e) => {
            run.abandon();
            Err(e)
        }
    }
}

/// The outputs of a run in progress.
struct Run {
    staging: Option<Staging>,
    partial: Option<partial::Writer>,
}

/// A run whose every file is written, ready to be moved into place.
struct Done(Outcome);

impl Done {
    fn commit(self, run: Run) -> crate::Result<(Outcome, Vec<u8>)> {
        let bytes = match run.partial {
            Some(p) => match partial::finish(p) {
                Ok(b) => b,
                Err(e) => {
                    if let Some(s) = run.staging {
                        s.abandon();
                    }
                    return Err(e);
                }
            },
            None => Vec::new(),
        };
        if let Some(s) = run.staging {
            s.commit(report::report_files())?;
        }
        Ok((self.0, bytes))
    }
}

impl Run {
    fn abandon(self) {
        if let Some(s) = self.staging {
            s.abandon();
        }
        if let Some(p) = self.partial {
            partial::discard(p);
        }
    }

    fn replay(
        &mut self,
        replayer: &Replayer,
        opts: &ReplayOptions,
        input: Input,
        progress: &dyn Progress,
    ) -> crate::Result<Done> {
        let threads = rayon::current_num_threads();
        let Input {
            rx,
            recycler,
            first,
            ..
        } = input;
        if let Some(p) = self.partial.as_mut() {
            p.header(&header(replayer, opts))?;
        }
        let mut streams = Streams::open(self.staging.as_ref(), opts, &replayer.scope_columns)?;
        let mut merged = Merged::new(&opts.input.sources, opts.plan.variants.len());
        let partial = &mut self.partial;
        // Blocks are evaluated on the pool as they arrive and merged here in
        // input order, so merging and writing overlap evaluation.
        crate::replay::ordered::map_in_order(
            progress.pool(),
            first.into_iter().chain(rx),
            2 * threads + 2,
            |item: Result<Block, ReadError>| item.map(|block| (replayer.process(&block), block)),
            |item| -> crate::Result<()> {
                let (res, block) = item?;
                strict(opts, &res)?;
                streams.write(&res)?;
                if let Some(p) = partial.as_mut() {
                    p.block(&res)?;
                }
                merged.absorb(res, &block);
                progress.update(merged.consumed(&block), merged.totals.turns);
                recycler.give(block);
                match progress.stopped() {
                    true => Err(crate::Error::Interrupted),
                    false => Ok(()),
                }
            },
        )?;
        streams.finish()?;
        if let Some(p) = self.partial.as_mut() {
            p.state(&merged.state())?;
        }
        let facts = ReportFacts {
            opts,
            scope: &replayer.scope_columns,
            notes: Vec::new(),
            from_partials: false,
        };
        merged.report(&facts, self.staging.as_ref()).map(Done)
    }
}

/// The header of a run's partial result.
fn header(replayer: &Replayer, opts: &ReplayOptions) -> Header {
    let spec = Spec::of(opts);
    Header {
        tool: env!("CARGO_PKG_VERSION").to_string(),
        spec,
        label: opts.outputs.label.clone(),
        sources: opts.input.sources.clone(),
        scope: replayer.scope_columns.clone(),
        scan: replayer.scan.clone(),
    }
}

/// The input being read: its leading blocks, read (and scanned for the
/// default scope columns) on a thread of their own, then the rest.
struct Input {
    rx: Receiver<Result<Block, ReadError>>,
    recycler: reader::Recycler,
    first: Vec<Result<Block, ReadError>>,
    /// What the scope-column scan saw (None when `--scope-columns` named
    /// the columns).
    scan: Option<Scan>,
}

impl Input {
    /// Start reading `opts.input.sources`, and the leading blocks' scan.
    fn start(opts: &ReplayOptions) -> crate::Result<std::thread::JoinHandle<Input>> {
        let threads = rayon::current_num_threads();
        let decoder = Replayer::decoder_of(opts);
        let (rx, recycler) = crate::import::open(
            Replayer::sources_of(opts),
            2 * threads + 2,
            opts.input.max_line_bytes,
            &decoder,
        )?;
        let scan = opts.tallies.scope_columns.is_none();
        let max_line_bytes = opts.input.max_line_bytes;
        std::thread::Builder::new()
            .name("scan".into())
            .spawn(move || {
                // The leading blocks are converted here, for the scan (and
                // not again when replayed), on every core: up to 10,000
                // conversations, which the replay waits for.
                let first = if scan {
                    use rayon::prelude::*;
                    leading_blocks(&rx)
                        .into_par_iter()
                        .map(|b| b.map(|b| decoder.convert(&b).unwrap_or(b)))
                        .collect()
                } else {
                    Vec::new()
                };
                let ok: Vec<&Block> = first.iter().filter_map(|b| b.as_ref().ok()).collect();
                Input {
                    scan: scan.then(|| Scan::of(&ok, max_line_bytes)),
                    rx,
                    recycler,
                    first,
                }
            })
            .map_err(|e| {
                Error::System(crate::Failure::caused(
                    format!("cannot start the scan thread: {e}"),
                    e,
                ))
            })
    }
}

/// Unless `--scope-columns` named them, the scope columns come from the
/// input's first turns: its first blocks are read (up to [`SCAN_TURNS`]
/// lines or [`SCAN_BLOCKS`] blocks, whichever comes first, so the header
/// depends on the input only) and handed back to be replayed first.
fn leading_blocks(rx: &Receiver<Result<Block, ReadError>>) -> Vec<Result<Block, ReadError>> {
    let mut first = Vec::new();
    let mut lines = 0;
    while lines < SCAN_TURNS && first.len() < SCAN_BLOCKS {
        let Ok(item) = rx.recv() else { break };
        let failed = item.is_err();
        if let Ok(b) = &item {
            // A trace's blocks hold converted turns, each one line.
            lines += memchr::memchr_iter(b'\n', b.bytes()).count() + b.turns().count();
        }
        first.push(item);
        if failed {
            break;
        }
    }
    first
}

/// In strict mode (no `--skip-invalid`) the first invalid line stops the
/// run.
fn strict(opts: &ReplayOptions, res: &BlockResult) -> crate::Result<()> {
    match res.rejects.first() {
        Some(r) if !opts.input.skip_invalid => Err(Error::InvalidLine {
            source: opts.input.sources[r.source].clone(),
            line: r.line,
            reason: r.reason.clone(),
            // A line of another format is read with --from, not set aside
            // (its reason says so).
            skippable: crate::import::InputFormat::recognise(&r.raw).is_none(),
        }),
        _ => Ok(()),
    }
}

/// The blocks merged so far, in input order (or, in `merge`, the shards).
pub(crate) struct Merged {
    totals: Totals,
    dups: DuplicateCheck,
    regressions: Vec<Regression>,
    sources: Vec<SourceFacts>,
    /// Each source's size on disk, for progress (0 for standard input).
    sizes: Vec<u64>,
}

/// What the reports need besides the tallies.
pub(crate) struct ReportFacts<'a> {
    opts: &'a ReplayOptions,
    scope: &'a ScopeColumns,
    /// Notes of the job (e.g. a merge's), after the run's own.
    notes: Vec<String>,
    /// Whether the tallies came from partial results (which anyone may
    /// hand a merge), not from this process's own replay.
    from_partials: bool,
}

impl Merged {
    fn new(names: &[String], variants: usize) -> Merged {
        Merged {
            totals: Totals::new(variants),
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
        // Every part named: a new one does not compile until it is
        // folded here (or said to be written elsewhere).
        let BlockResult {
            totals,
            // Rows the streams wrote already.
            decisions_csv: _,
            mismatches_csv: _,
            regressions_csv: _,
            rejects: _,
            regressions,
            keys,
        } = res;
        self.totals.merge(&totals);
        self.dups.check(&keys, &mut self.totals.warnings);
        self.keep_regressions(regressions);
        if let Some(end) = block.end {
            self.sources[block.source].end = Some(end);
        }
    }

    /// The first [`crate::replay::TOP_REGRESSIONS`] regressions in input
    /// order (the rest are rows of regressions.csv only).
    fn keep_regressions(&mut self, more: Vec<Regression>) {
        let room = crate::replay::TOP_REGRESSIONS.saturating_sub(self.regressions.len());
        self.regressions.extend(more.into_iter().take(room));
    }

    /// Input bytes consumed up to the end of `block`.
    fn consumed(&self, block: &Block) -> u64 {
        self.sizes[..block.source].iter().sum::<u64>() + block.consumed
    }

    /// The tallies as a partial result keeps them (before any cap).
    fn state(&self) -> StateRef<'_> {
        StateRef {
            totals: &self.totals,
            regressions: &self.regressions,
            sources: &self.sources,
        }
    }

    /// Cap the segments, summarise, and write every exported report (when
    /// there is a folder to write them in).
    fn report(mut self, f: &ReportFacts, staging: Option<&Staging>) -> crate::Result<Outcome> {
        let opts = f.opts;
        add_absent_scope_rows(&mut self.totals.segments, &self.totals.variants);
        let segments_cut =
            cap_segments(&mut self.totals.segments, SEGMENT_LIMIT, opts.plan.baseline);
        let overflow = self.totals.scope_overflow.then(|| {
            format!(
                "the traffic has more than {MAX_SCOPE_DIMENSIONS} distinct scope keys: they are not segment dimensions (segments.csv has no scope rows, which could not be capped in an order a merge of shards would repeat); each turn's scope is in decisions.csv"
            )
        });
        let run = RunFacts {
            label: opts.outputs.label.clone(),
            sources: self.sources,
            decisions: opts.tallies.decisions.name(),
            scope_columns: f.scope.keys().to_vec(),
            notes: opts
                .outputs
                .notes
                .iter()
                .cloned()
                .chain(f.scope.notes())
                .chain(overflow)
                .chain(f.notes.iter().cloned())
                .collect(),
        };
        let summary =
            crate::summary::build::summarize(&opts.plan, &self.totals, &run, &segments_cut);
        held_to_checks(&summary.run, f.from_partials)?;
        if let Some(staging) = staging {
            let r = ReplayReport {
                label: &opts.outputs.label,
                plan: &opts.plan,
                totals: &self.totals,
                summary: &summary,
                regressions: &self.regressions,
                sources: &opts.input.sources,
                scope_keys: f.scope.keys(),
            };
            let exports = report::exports(opts.tallies.detail, opts.outputs.frontier);
            report::write_all(&r, staging, &exports, opts.outputs.format)?;
        }
        Ok(Outcome {
            plan: opts.plan.clone(),
            sources: opts.input.sources.clone(),
            totals: self.totals,
            summary,
            regressions: self.regressions,
            segments_cut,
        })
    }
}

/// A summary held to `check`'s own rules before anything is written:
/// merged tallies come from files anyone may hand a merge, and no report
/// should be one `check` then calls damaged.
fn held_to_checks(
    run: &crate::summary::figures::RunSummary,
    from_partials: bool,
) -> crate::Result<()> {
    if let Err(e) = crate::summary::figures::RunSummary::from_json(run.to_json()) {
        return Err(match from_partials {
            true => Error::Read(
                crate::said![format!("damaged partial result: the merged tallies do not add up ({e}); nothing was written; replay the shards again with "), crate::vocab::Setting::Partial]
                .into(),
            ),
            false => Error::System(
                format!("the replay's own tallies do not add up ({e}): this is a bug of critic-gate; please report it").into(),
            ),
        });
    }
    Ok(())
}

fn file_size(source: &str) -> u64 {
    match source {
        "-" => 0,
        path => std::fs::metadata(path).map_or(0, |m| m.len()),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Asks to stop only at its second look: after the one block, while
    /// the reports are written.
    struct StopLate(AtomicUsize);

    impl super::Progress for StopLate {
        fn update(&self, _: u64, _: u64) {}
        fn stopped(&self) -> bool {
            self.0.fetch_add(1, Ordering::Relaxed) >= 1
        }
    }

    /// A stop asked for after the last block (a Python caller's Ctrl-C
    /// while the reports are written) still leaves nothing: the run ends
    /// interrupted and the folder is never made.
    #[test]
    fn a_stop_after_the_last_block_writes_nothing() {
        let dir = std::env::temp_dir().join(format!("cg-stop-late-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let traffic = dir.join("t.jsonl");
        std::fs::write(
            &traffic,
            "{\"run_id\":\"r\",\"turn\":1,\"draft\":\"Got it, thanks!\"}\n",
        )
        .unwrap();
        let out = dir.join("out");
        let request = crate::cmd::replay::Request {
            sources: vec![traffic.to_string_lossy().into_owned()],
            config: crate::cmd::Config::Defaults,
            out: Some(out.clone()),
            partial: None,
            source_bytes: None,
            flags: crate::options::Values::defaults(crate::options::REPLAY),
        };
        let stop = StopLate(AtomicUsize::new(0));
        let got = crate::cmd::replay::run(&request, &stop);
        assert!(
            matches!(got, Err(crate::Error::Interrupted)),
            "{:?}",
            got.err()
        );
        assert_eq!(
            stop.0.load(Ordering::Relaxed),
            2,
            "one look per block, one before the move"
        );
        assert!(!out.exists());
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(
            left,
            vec![std::ffi::OsString::from("t.jsonl")],
            "nothing staged is left"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
