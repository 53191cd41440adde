//! The replay pipeline, end to end: read -> evaluate -> aggregate ->
//! tabulate -> write. The binary only adds flags and a progress bar.

use std::path::Path;

use crate::reader::{self, Block, ReadError};
use crate::replay::{
    cap_segments, DecisionsMode, DuplicateCheck, Regression, ReplayOptions, Replayer, Totals,
};
use crate::report::markdown::ReportMd;
use crate::report::summary::{RunFacts, SourceFacts};
use crate::report::{
    self, decisions, summary, Export, FloorsCsv, MatrixCsv, RegressionsCsv, RejectsWriter,
    ReplayReport, RowsWriter, SegmentsCsv, Staging, Summary, SummaryCsv, SummaryJson,
};
use crate::Error;

/// Values a dimension may keep in `segments.csv` before the rest is folded
/// into `(other)`.
pub const SEGMENT_LIMIT: usize = 1000;

/// What a finished replay tells its caller.
pub struct Outcome {
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
    let replayer = Replayer::new(opts)?;
    let staging = Staging::create(out)?;
    match run_into(&replayer, &staging, progress) {
        Ok(outcome) => {
            staging.commit()?;
            Ok(outcome)
        }
        Err(e) => {
            staging.abandon();
            Err(e)
        }
    }
}

fn run_into(
    replayer: &Replayer,
    staging: &Staging,
    progress: &dyn Progress,
) -> crate::Result<Outcome> {
    let opts = &replayer.opts;
    let sources = &opts.sources;
    let sizes: Vec<u64> = sources
        .iter()
        .map(|s| {
            if s == "-" {
                0
            } else {
                std::fs::metadata(s).map(|m| m.len()).unwrap_or(0)
            }
        })
        .collect();
    let mut decisions = match opts.decisions {
        DecisionsMode::None => None,
        _ => Some(RowsWriter::new(
            staging.file("decisions.csv")?,
            decisions::HEADER,
        )?),
    };
    let mut mismatches =
        RowsWriter::new(staging.file("mismatches.csv")?, decisions::MISMATCH_HEADER)?;
    let mut rejects = if opts.skip_invalid {
        Some(RejectsWriter::new(staging.file("rejects.jsonl")?, sources))
    } else {
        None
    };
    let threads = rayon::current_num_threads();
    let (rx, recycler) =
        reader::blocks_recycled(replayer.sources(), 2 * threads + 2, opts.max_line_bytes)?;
    let mut totals = replayer.empty_totals();
    let mut dups = DuplicateCheck::default();
    let mut regressions = Vec::new();
    let mut facts: Vec<SourceFacts> = sources
        .iter()
        .map(|s| SourceFacts {
            name: s.clone(),
            end: None,
        })
        .collect();
    // Blocks are evaluated on the pool as they arrive and merged here in
    // input order, so merging and writing overlap evaluation.
    crate::ordered::map_in_order(
        rx,
        2 * threads + 2,
        |item: Result<Block, ReadError>| {
            item.map(|block| {
                let res = replayer.process(&block);
                (block, res)
            })
        },
        |item| -> crate::Result<()> {
            let (block, res) = item?;
            if !opts.skip_invalid {
                if let Some(r) = res.rejects.first() {
                    return Err(Error::InvalidLine {
                        source: sources[r.source].clone(),
                        line: r.line,
                        reason: r.reason.clone(),
                    });
                }
            }
            totals.merge(&res.totals);
            dups.check(&res.keys, &mut totals.warnings);
            if let Some(d) = decisions.as_mut() {
                d.write(&res.decisions_csv)?;
            }
            mismatches.write(&res.mismatches_csv)?;
            if let Some(w) = rejects.as_mut() {
                w.write(&res.rejects)?;
            }
            regressions.extend(res.regressions);
            if let Some(end) = block.end {
                facts[block.source].end = Some(end);
            }
            let done: u64 = sizes[..block.source].iter().sum::<u64>() + block.consumed;
            progress.update(done, totals.turns);
            recycler.give(block);
            Ok(())
        },
    )?;
    if let Some(d) = decisions {
        d.finish()?;
    }
    mismatches.finish()?;
    if let Some(w) = rejects {
        w.finish()?;
    }
    let segments_cut = cap_segments(&mut totals.segments, SEGMENT_LIMIT, opts.plan.baseline);
    let run = RunFacts {
        sources: facts,
        decisions: opts.decisions.name(),
    };
    let summary = summary::summarize(&opts.plan, &totals, &run, &segments_cut);
    let r = ReplayReport {
        plan: &opts.plan,
        totals: &totals,
        summary: &summary,
        regressions: &regressions,
        sources,
    };
    let exports: [&dyn Export; 7] = [
        &SummaryCsv,
        &SummaryJson,
        &FloorsCsv,
        &SegmentsCsv,
        &RegressionsCsv,
        &MatrixCsv,
        &ReportMd,
    ];
    report::write_all(&r, staging, &exports)?;
    Ok(Outcome {
        totals,
        summary,
        regressions,
        segments_cut,
    })
}
