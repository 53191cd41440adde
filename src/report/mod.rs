//! Reports: tabulate the merged tallies as polars DataFrames and write them.
//!
//! Each report file is one [`Export`] (a name and a writer). Files are
//! written into a staging folder inside the output folder and moved into
//! place only when the whole replay succeeded, so a failed run never leaves
//! a half-written or partial report.

pub(crate) mod charts;
pub(crate) mod export;
pub(crate) mod frontier;
pub(crate) mod markdown;
mod staging;
mod streams;
mod tables;

pub use staging::abandon_in_progress_and_exit;
pub(crate) use staging::{
    beside, check_out_dir, claim_job_dir, create_new_file, or_remove_new, put, track_temp,
    untrack_temp, Staging, WholeFile, MARKER,
};
pub(crate) use streams::Streams;

pub(crate) use export::{write_all, Export, ReplayReport};
pub(crate) use streams::STREAMED_FILES;
use tables::{FloorsCsv, MatrixCsv, SchemaJson, SegmentsCsv, SkipsCsv, SummaryCsv, SummaryJson};

/// The report files written from the merged tallies, in writing order.
pub(crate) const EXPORTS: [&dyn Export; 12] = [
    &SummaryCsv,
    &SummaryJson,
    &FloorsCsv,
    &SegmentsCsv,
    &MatrixCsv,
    &SkipsCsv,
    &charts::CHARTS[0].0,
    &charts::CHARTS[1].0,
    &charts::CHARTS[2].0,
    &charts::CHARTS[3].0,
    &markdown::ReportMd,
    &SchemaJson,
];

/// The files `sweep` writes beside the replay's.
pub(crate) const SWEEP_EXPORTS: [&dyn Export; 2] = [&frontier::FrontierCsv, &frontier::FrontierSvg];

/// The per-value and per-turn files a sweep leaves out (hundreds of
/// variants): segments, skips, regressions, and report.md (which lists
/// the regressions).
pub(crate) const DETAIL_FILES: [&str; 8] = [
    "segments.csv",
    "skips.csv",
    "regressions.csv",
    "report.md",
    charts::CHARTS[0].0.file,
    charts::CHARTS[1].0.file,
    charts::CHARTS[2].0.file,
    charts::CHARTS[3].0.file,
];

/// The report files a run writes from its tallies.
pub(crate) fn exports(detail: bool, frontier: bool) -> Vec<&'static dyn Export> {
    EXPORTS
        .iter()
        .copied()
        .filter(|e| detail || !DETAIL_FILES.contains(&e.file_name()))
        .chain(SWEEP_EXPORTS.iter().copied().filter(|_| frontier))
        .collect()
}

pub(crate) use crate::summary::schema::DIFF_FILES;

/// Every report file that may sit in a replay folder: the replay's own
/// (streamed and exported) and `diff`'s. A new replay removes those it did
/// not write, so no file of an earlier run outlives it.
pub(crate) fn report_files() -> impl Iterator<Item = String> {
    let replay = STREAMED_FILES
        .into_iter()
        .chain(EXPORTS.iter().chain(&SWEEP_EXPORTS).map(|e| e.file_name()));
    // Every CSV table may also have been written as Parquet.
    let parquet = replay
        .clone()
        .filter(|f| f.ends_with(".csv"))
        .map(export::parquet_name);
    replay.chain(DIFF_FILES).map(str::to_string).chain(parquet)
}
