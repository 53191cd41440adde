//! `monitor`'s files: monitor.csv and/or monitor.parquet (declared in the
//! schema), monitor.md (a daily post: the status first, then the pooled
//! rows) and monitor.svg (the estimate and both bounds over the periods,
//! with R and the alarms marked); and the state, written whole.

use std::fmt::Write as _;

use plotters::prelude::*;

use super::looks::{Decider, Row, Watch};
use super::state::State;
use super::Request;
use crate::cmd::plan::write::PlanFile;
use crate::report::export::{declared_frame, write_csv, write_parquet, Col, WriteFailure};
use crate::summary::numbers::sig;
use crate::summary::text::md_text;
use crate::Error;

/// Claim the folder and write the files.
pub(super) fn all(
    r: &Request,
    rows: &[Row],
    w: &Watch,
    plan: &PlanFile,
    warnings: &[String],
) -> crate::Result<()> {
    let mut inputs = r.sources.clone();
    inputs.extend(
        r.state
            .iter()
            .chain(&r.merge)
            .map(|p| p.display().to_string()),
    );
    crate::report::claim_job_dir(&r.out, &inputs, "monitor", r.pass.force)?;
    let file = "monitor.csv";
    let fail = |e: WriteFailure| Error::Write(crate::Failure::caused(format!("{file}: {e}"), e));
    let declared = crate::summary::schema::table(file).columns_for(&[]);
    let mut df = declared_frame(file, &declared, columns(rows)).map_err(fail)?;
    if r.format.csv() {
        let mut bytes = Vec::new();
        write_csv(&mut df, &mut bytes, true).map_err(fail)?;
        crate::report::put(&r.out, file, &bytes)?;
    }
    if r.format.parquet() {
        let mut bytes = Vec::new();
        write_parquet(&mut df, &mut bytes).map_err(fail)?;
        crate::report::put(&r.out, "monitor.parquet", &bytes)?;
    }
    let md = markdown(rows, w, plan, r.max_fidelity_gap, warnings);
    crate::report::put(&r.out, "monitor.md", md.as_bytes())?;
    let svg = chart(rows, w)
        .map_err(|e| Error::Write(crate::Failure::caused(format!("monitor.svg: {e}"), e)))?;
    crate::report::put(&r.out, "monitor.svg", svg.as_bytes())
}

/// The state written whole beside its file, to be moved into place
/// ([`crate::report::WholeFile::finish`]) once the other files are.
pub(super) fn state(path: &std::path::Path, s: &State) -> crate::Result<crate::report::WholeFile> {
    let fail = |e: std::io::Error| {
        Error::Write(crate::Failure::caused(
            format!("{}: {e}", path.display()),
            e,
        ))
    };
    let tmp = crate::report::beside(path, "partial");
    let mut file = crate::report::WholeFile::create(path, tmp).map_err(fail)?;
    std::io::Write::write_all(file.writer(), s.text().as_bytes()).map_err(fail)?;
    Ok(file)
}

/// A state's lock: a file beside it, made new, removed when dropped.
pub(super) struct Lock(std::path::PathBuf);

impl Lock {
    pub(super) fn take(state: &std::path::Path) -> crate::Result<Lock> {
        let path = crate::report::beside(state, "lock");
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(_) => Ok(Lock(path)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(Error::usage(format!(
                "{}: another monitor is updating this state (or one stopped without removing {}: remove it if none runs)",
                state.display(),
                path.display()
            ))),
            Err(e) => Err(Error::Write(crate::Failure::caused(
                format!("{}: cannot lock the state: {e}", state.display()),
                e,
            ))),
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// monitor.csv's columns, as declared.
fn columns(rows: &[Row]) -> Vec<(&'static str, Col)> {
    let s = |f: &dyn Fn(&Row) -> Option<String>| Col::Str(rows.iter().map(f).collect());
    let u = |f: &dyn Fn(&Row) -> u64| Col::U64(rows.iter().map(f).collect());
    let ou = |f: &dyn Fn(&Row) -> Option<u64>| Col::OptU64(rows.iter().map(f).collect());
    let x = |f: &dyn Fn(&Row) -> Option<f64>| Col::F64(rows.iter().map(|r| sig(f(r))).collect());
    let pooled = |r: &Row, v: u64| (r.stratum == "all").then_some(v);
    vec![
        ("period", s(&|r| Some(r.period.clone()))),
        ("stratum", s(&|r| Some(r.stratum.clone()))),
        ("turns", u(&|r| r.turns)),
        ("fires", u(&|r| r.fires)),
        ("skips", u(&|r| r.window.production_skips)),
        ("sampled", u(&|r| r.window.sampled)),
        ("labelled", u(&|r| r.window.labelled)),
        ("labelled_shadow", u(&|r| r.window.labelled_shadow)),
        ("labelled_production", u(&|r| r.window.labelled_production)),
        ("failed", u(&|r| r.window.failed)),
        ("regressions", u(&|r| r.window.regressions)),
        ("unplanned", ou(&|r| pooled(r, r.window.unplanned))),
        ("other_plan", ou(&|r| pooled(r, r.window.other_plan))),
        ("estimate", x(&|r| r.window.estimate)),
        ("harmful_per_1k_estimate", x(&|r| r.harmful_per_1k_estimate)),
        ("window_upper95", x(&|r| r.window.upper)),
        ("worst_case_upper95", x(&|r| r.window.worst)),
        ("cumulative_skips", u(&|r| r.cumulative_skips)),
        ("cumulative_labelled", u(&|r| r.cumulative_labelled)),
        ("cumulative_regressions", u(&|r| r.cumulative_regressions)),
        ("cumulative_failed", u(&|r| r.cumulative_failed)),
        ("cumulative_estimate", x(&|r| r.cumulative_estimate)),
        ("anytime_upper95", x(&|r| r.anytime_upper)),
        ("anytime_lower95", x(&|r| r.anytime_lower)),
        (
            "anytime_worst_case_upper95",
            x(&|r| r.anytime_worst_case_upper),
        ),
        (
            "anytime_worst_case_lower95",
            x(&|r| r.anytime_worst_case_lower),
        ),
        ("cusum", x(&|r| r.cusum)),
        ("alarm", Col::Bool(rows.iter().map(|r| r.alarm).collect())),
        ("change_began", s(&|r| r.change_began.clone())),
        ("status", s(&|r| Some(r.status.name().to_string()))),
        ("decided_by", s(&|r| Some(r.decided_by.name().to_string()))),
        ("since", s(&|r| Some(r.since.clone()))),
        ("labels_needed", ou(&|r| r.labels_needed)),
        ("fidelity_pairs", ou(&|r| r.fidelity.map(|f| f.pairs))),
        (
            "fidelity_disagreement",
            x(&|r| r.fidelity.and_then(|f| f.disagreement)),
        ),
        (
            "fidelity_disagreement_lower95",
            x(&|r| r.fidelity.and_then(|f| f.lower)),
        ),
        (
            "fidelity_disagreement_upper95",
            x(&|r| r.fidelity.and_then(|f| f.upper)),
        ),
    ]
}

/// monitor.md: the status, what the bounds promise, then the pooled rows
/// (newest first) and the strata at the last look.
fn markdown(rows: &[Row], w: &Watch, plan: &PlanFile, gap: f64, warnings: &[String]) -> String {
    let r = sig(Some(w.rate)).unwrap_or(w.rate);
    let mut s = String::from("# critic-gate monitor\n\n");
    let pooled: Vec<&Row> = rows.iter().filter(|x| x.stratum == "all").collect();
    let Some(last) = pooled.last() else {
        s.push_str("No period counted yet.\n");
        return s;
    };
    let _ = writeln!(
        s,
        "**{}: {}.**\n",
        md_text(&last.period),
        md_text(&super::status_words(last, r, w.alpha))
    );
    notes(&mut s, last, gap, warnings);
    let _ = writeln!(
        s,
        "Plan `{}`: production's skips (gate of `{}`) regress at most {r}, at {}% confidence. The anytime bounds hold at every look at once, on the skips counted so far (their realised rate, not future traffic's); the window bound holds for one look at its period alone. The change alarm is a CUSUM per stratum on one label per conversation a day, for a rise to {}R, designed to false-alarm about once in {} days at R across the strata{}.\n",
        md_text(&plan.plan_id),
        md_text(&plan.production),
        ((1.0 - w.alpha) * 100.0).round(),
        w.rise,
        w.false_alarm_days,
        match w.redesigned {
            true => " (redesigned here: the plan's detection delays are for its own design)",
            false => "",
        }
    );
    s.push_str(which_bounds(w.decided_by));
    let d = w.decided_by;
    let (upper, lower) = (|x: &Row| d.upper(x), |x: &Row| d.lower(x));
    s.push_str("| period | skips | labelled | failed | regressions | estimate | window upper | window worst case | anytime upper | anytime lower | alarm | status |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    let pct = |v: Option<f64>| match v {
        None => "—".to_string(),
        v => super::percent(v),
    };
    for x in pooled.iter().rev() {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            md_text(&x.period),
            x.window.production_skips,
            x.window.labelled,
            x.window.failed,
            x.window.regressions,
            pct(x.window.estimate),
            pct(x.window.upper),
            pct(x.window.worst),
            pct(upper(x)),
            pct(lower(x)),
            if x.alarm { "yes" } else { "" },
            x.status.name()
        );
    }
    let strata: Vec<&Row> = rows
        .iter()
        .filter(|x| x.period == last.period && x.stratum != "all")
        .collect();
    if strata.len() > 1 {
        s.push_str("\nBy stratum at the last look (each its own bound: pointers, not decisions):\n\n| stratum | labelled so far | anytime upper | alarm | status |\n|---|---|---|---|---|\n");
        for x in strata {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} |",
                md_text(&x.stratum),
                x.cumulative_labelled,
                pct(upper(x)),
                if x.alarm { "yes" } else { "" },
                x.status.name()
            );
        }
    }
    s
}

/// monitor.md's note and warnings under its status line.
fn notes(s: &mut String, last: &Row, gap: f64, warnings: &[String]) {
    if let Some(note) = last.withheld {
        let _ = writeln!(s, "**Note:** {}.\n", md_text(note));
    }
    let fidelity = super::fidelity_warning(last, gap);
    for warning in fidelity.iter().chain(warnings) {
        let _ = writeln!(s, "**Warning:** {}.\n", md_text(warning));
    }
}

/// monitor.md's words on the bounds the status reads.
fn which_bounds(d: Decider) -> &'static str {
    match d {
        Decider::WorstCase => "The status reads the worst-case bounds: every drawn skip whose shadow call failed or has not come back counted a regression (upper) and an approval (lower), so it holds however calls fail. The bounds that take failed calls as unrelated to their verdicts are in monitor.csv (`anytime_upper95`, `anytime_lower95`).\n\n",
        Decider::MissingAtRandom => "**ASSUMED:** the status reads the bounds that take a failed shadow call as unrelated to its verdict (missing at random), as asked. If the critic fails more often on the turns it would revise, the rate is higher than they say; the worst-case bounds (monitor.csv's `anytime_worst_case_upper95`, `anytime_worst_case_lower95`) hold without the assumption.\n\n",
    }
}

/// A line of the chart: its name, points and colour.
type Series = (&'static str, Vec<(f64, f64)>, RGBColor);

/// monitor.svg: the pooled rows over the periods.
fn chart(rows: &[Row], w: &Watch) -> Result<String, std::io::Error> {
    let pooled: Vec<&Row> = rows.iter().filter(|x| x.stratum == "all").collect();
    let err = |e: String| std::io::Error::other(e);
    let n = pooled.len().max(1) as f64;
    let top = pooled
        .iter()
        .flat_map(|x| {
            [
                x.anytime_worst_case_upper,
                x.anytime_upper,
                x.window.estimate,
                x.cumulative_estimate,
            ]
        })
        .flatten()
        .fold(w.rate * 2.0, f64::max)
        .min(1.0);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 520)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let mut c = ChartBuilder::on(&root)
            .caption("Regression rate of production's skips", ("sans-serif", 20))
            .margin(20)
            .x_label_area_size(50)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..n, 0f64..top * 100.0)
            .map_err(|e| err(e.to_string()))?;
        let names: Vec<String> = pooled.iter().map(|x| x.period.clone()).collect();
        c.configure_mesh()
            .x_desc("period")
            .y_desc("regression rate (%)")
            .x_label_formatter(&|x| names.get(*x as usize).cloned().unwrap_or_default())
            .draw()
            .map_err(|e| err(e.to_string()))?;
        let line = |f: &dyn Fn(&Row) -> Option<f64>| -> Vec<(f64, f64)> {
            pooled
                .iter()
                .enumerate()
                .filter_map(|(i, x)| f(x).map(|v| (i as f64 + 0.5, (v * 100.0).min(top * 100.0))))
                .collect()
        };
        let d = w.decided_by;
        let names = match d {
            Decider::WorstCase => (
                "anytime worst-case upper bound",
                "anytime worst-case lower bound",
            ),
            Decider::MissingAtRandom => (
                "anytime upper bound (ASSUMED)",
                "anytime lower bound (ASSUMED)",
            ),
        };
        let series: [Series; 4] = [
            ("estimate so far", line(&|x| x.cumulative_estimate), BLUE),
            (names.0, line(&|x| d.upper(x)), RED),
            (names.1, line(&|x| d.lower(x)), MAGENTA),
            (
                "period's own upper bound",
                line(&|x| x.window.upper),
                RGBColor(150, 150, 150),
            ),
        ];
        for (name, points, colour) in series {
            c.draw_series(LineSeries::new(points, colour.stroke_width(2)))
                .map_err(|e| err(e.to_string()))?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour));
        }
        marks(&mut c, &pooled, w.rate, n).map_err(|e| err(e.to_string()))?;
        root.present().map_err(|e| err(e.to_string()))?;
    }
    Ok(svg)
}

type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// The budget's line, the alarms and the legend.
fn marks<'a, 'b: 'a>(
    c: &mut Chart<'a, 'b>,
    pooled: &[&Row],
    rate: f64,
    n: f64,
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<std::io::Error>| e.to_string();
    c.draw_series(DashedLineSeries::new(
        vec![(0.0, rate * 100.0), (n, rate * 100.0)],
        6,
        4,
        BLACK.stroke_width(1),
    ))
    .map_err(err)?
    .label("budget R")
    .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK));
    let alarms: Vec<(f64, f64)> = pooled
        .iter()
        .enumerate()
        .filter(|(_, x)| x.alarm)
        .map(|(i, _)| (i as f64 + 0.5, 0.0))
        .collect();
    c.draw_series(
        alarms
            .into_iter()
            .map(|p| TriangleMarker::new(p, 8, RED.filled())),
    )
    .map_err(err)?
    .label("change alarm")
    .legend(|(x, y)| TriangleMarker::new((x + 10, y), 6, RED.filled()));
    c.configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()
        .map_err(err)?;
    Ok(())
}
