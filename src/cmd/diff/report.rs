//! `diff`'s two files: flips.csv and metrics_diff.csv, as the schema
//! declares them.

use std::path::Path;

use polars_core::prelude::DataFrame;

use crate::cmd::diff::{DiffResult, Flip, MetricDelta, DIFF_FILES};
use crate::report::export::{declared_frame, labelled, write_csv, Col, WriteFailure};

/// A table of `diff` with its two labels first, as the schema declares.
fn diff_frame(
    file: &str,
    runs: [&str; 2],
    cols: Vec<(&str, Col)>,
) -> Result<DataFrame, WriteFailure> {
    let declared = crate::summary::schema::table(file).columns_for(&[]);
    let cols = labelled(&[("run", runs[1]), ("old_run", runs[0])], cols);
    declared_frame(file, &declared, cols)
}

/// `flips.csv`.
pub fn flips_frame(flips: &[Flip], runs: [&str; 2]) -> Result<DataFrame, WriteFailure> {
    let s = |f: &dyn Fn(&Flip) -> String| Col::Str(flips.iter().map(|x| Some(f(x))).collect());
    let cols = vec![
        ("variant", s(&|f| f.variant.clone())),
        ("run_id", s(&|f| f.run_id.clone())),
        ("turn", Col::OptU64(flips.iter().map(|f| f.turn).collect())),
        ("source", s(&|f| f.source.clone())),
        ("line", Col::U64(flips.iter().map(|f| f.line).collect())),
        (
            "old_fires",
            Col::Bool(flips.iter().map(|f| f.old_fires).collect()),
        ),
        (
            "new_fires",
            Col::Bool(flips.iter().map(|f| f.new_fires).collect()),
        ),
        ("old_reasons", s(&|f| f.old_reasons.clone())),
        ("new_reasons", s(&|f| f.new_reasons.clone())),
        (
            "verdict",
            Col::Str(flips.iter().map(|f| f.verdict.clone()).collect()),
        ),
        (
            "new_safety_regression",
            Col::Bool(flips.iter().map(|f| f.new_regression).collect()),
        ),
    ];
    diff_frame("flips.csv", runs, cols)
}

/// `metrics_diff.csv`.
pub fn metrics_frame(m: &[MetricDelta], runs: [&str; 2]) -> Result<DataFrame, WriteFailure> {
    let cols = vec![
        (
            "variant",
            Col::Str(m.iter().map(|x| Some(x.variant.clone())).collect()),
        ),
        (
            "metric",
            Col::Str(m.iter().map(|x| Some(x.metric.clone())).collect()),
        ),
        ("old", Col::F64(m.iter().map(|x| x.old).collect())),
        ("new", Col::F64(m.iter().map(|x| x.new).collect())),
        (
            "delta",
            Col::F64(m.iter().map(MetricDelta::delta).collect()),
        ),
    ];
    diff_frame("metrics_diff.csv", runs, cols)
}

/// Write `d`'s flips.csv and metrics_diff.csv into `out` (created if
/// needed): each to a new temporary file beside it, then renamed over the
/// name, so a link planted at the name is replaced, never followed (the
/// files were opened with `File::create`, which truncated a link's
/// target wherever it pointed).
pub fn write(d: &DiffResult, out: &Path) -> crate::Result<()> {
    let written = |p: &Path, e: &dyn std::fmt::Display| {
        crate::Error::Write(format!("{}: {e}", p.display()).into())
    };
    std::fs::create_dir_all(out).map_err(|e| written(out, &e))?;
    let runs = [d.runs[0].as_str(), d.runs[1].as_str()];
    let frames = [flips_frame(&d.flips, runs), metrics_frame(&d.metrics, runs)];
    for (name, df) in DIFF_FILES.into_iter().zip(frames) {
        let p = out.join(name);
        let mut df = df.map_err(|e| written(&p, &e))?;
        let tmp = out.join(format!(".{name}.{}.tmp", std::process::id()));
        let mut f = crate::report::create_new_file(&tmp).map_err(|e| written(&tmp, &e))?;
        crate::report::track_temp(&tmp);
        let done = write_csv(&mut df, &mut f, true)
            .map_err(|e| written(&p, &e))
            .and_then(|_| std::fs::rename(&tmp, &p).map_err(|e| written(&p, &e)));
        if done.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        crate::report::untrack_temp(&tmp);
        done?;
    }
    Ok(())
}
