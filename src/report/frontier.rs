//! `frontier.csv` and `frontier.svg` (written by `sweep`): every variant's
//! savings against its risk, and the variants no other one beats on both,
//! from the summary's typed figures.
//!
//! "Saves" is net USD per 1,000 turns when every variant has a dollar
//! figure (prices configured, tokens recorded), else net calls per 1,000
//! turns; the file says which. Risk is expected new harmful skips per
//! 1,000 turns (the run-level upper 95% bound of the rate on the
//! variant's new skips, the turns it skips that the baseline fires on,
//! times their share of turns), not the rate alone: a rate over labelled
//! skips falls when a variant skips many more approved or unlabelled
//! turns, which would reward dilution. A variant with new skips but no
//! labelled one has no bound: nothing shows its rate is below 1, so it is
//! taken as 1; one without new skips adds no harm. A variant whose label coverage is below
//! [`MIN_LABEL_COVERAGE`] is drawn but never on the frontier.

use std::io::Write;

use polars_core::prelude::DataFrame;

use super::export::{typed_frame, Col, Export, ReplayReport, WriteFailure};
use crate::config::FrameworkConfig;
use crate::grid::Key;
use crate::summary::figures::{RunSummary, VariantSummary};
pub(crate) use crate::summary::frontier::*;
use crate::summary::numbers::{sig, sig_up};

/// A list setting as JSON text (`[]` for ack patterns is the built-in set).
fn list(l: &[String]) -> String {
    serde_json::to_string(l).expect("strings serialize")
}

/// The gate settings of one variant as the frontier's columns: each key
/// that can change its gate's decisions, others empty.
fn settings(c: &FrameworkConfig) -> [(Key, Option<String>); 3] {
    let on = c.metacognition_selective_gate;
    let when = |k: Key, v: String| (k, k.applies(on).then_some(v));
    [
        when(Key::SensitiveTags, list(&c.metacognition_sensitive_tags)),
        when(Key::ReadOnlyTools, list(&c.read_only_tools)),
        when(
            Key::AckPatterns,
            list(&c.metacognition_trivial_ack_patterns),
        ),
    ]
}

/// Each variant's threshold, empty where its gate (flag on) does not
/// look at it.
fn thresholds(configs: &[&FrameworkConfig]) -> Col {
    Col::F64(
        configs
            .iter()
            .map(|c| {
                (!c.metacognition_selective_gate).then_some(c.metacognition_confidence_threshold)
            })
            .collect(),
    )
}

/// Each variant's deployment keys where they differ from `[deployment]`
/// (JSON), empty where it runs with `[deployment]`.
fn deployments(r: &ReplayReport) -> Col {
    Col::Str(
        r.plan
            .variants
            .iter()
            .map(|v| v.deployment.as_ref()?.differences(&r.plan.deployment))
            .collect(),
    )
}

/// `frontier.csv`: one row per variant (config order).
pub(crate) struct FrontierCsv;

impl Export for FrontierCsv {
    fn file_name(&self) -> &'static str {
        "frontier.csv"
    }

    fn table(&self, r: &ReplayReport) -> Option<Result<DataFrame, WriteFailure>> {
        Some(self.frame(r))
    }
}

impl FrontierCsv {
    fn frame(&self, r: &ReplayReport) -> Result<DataFrame, WriteFailure> {
        let vs: Vec<&VariantSummary> = r.summary.run.ordered().collect();
        let metric = savings_metric(&vs);
        let pts = points(&vs, metric);
        let configs: Vec<&FrameworkConfig> = r.plan.variants.iter().map(|v| &v.config).collect();
        let str_col =
            |f: &dyn Fn(usize) -> Option<String>| Col::Str((0..vs.len()).map(f).collect());
        let u = |f: fn(&VariantSummary) -> u64| Col::U64(vs.iter().map(|v| f(v)).collect());
        let x = |f: fn(&VariantSummary) -> Option<f64>| Col::F64(vs.iter().map(|v| f(v)).collect());
        let setting = |k: usize| str_col(&|i| settings(configs[i])[k].1.clone());
        let cols = vec![
            ("variant", str_col(&|i| Some(vs[i].variant.clone()))),
            (
                "baseline",
                Col::Bool(vs.iter().map(|v| v.baseline).collect()),
            ),
            (
                "selective_gate",
                Col::Bool(vs.iter().map(|v| v.selective_gate).collect()),
            ),
            ("confidence_threshold", thresholds(&configs)),
            ("sensitive_tags", setting(0)),
            ("read_only_tools", setting(1)),
            ("trivial_ack_patterns", setting(2)),
            ("deployment", deployments(r)),
            (
                "savings_metric",
                str_col(&|_| Some(metric.name().to_string())),
            ),
            ("savings", Col::F64(pts.iter().map(|p| p.savings).collect())),
            ("skip_rate", x(|v| v.skip_rate)),
            ("saved_calls", u(|v| v.saved_calls)),
            ("added_calls", u(|v| v.added_calls)),
            ("net_calls_per_1k_turns", x(|v| v.net_calls_per_1k_turns)),
            ("net_usd_per_1k_turns", x(|v| v.net_usd_per_1k_turns)),
            ("safety_regressions", u(|v| v.safety_regressions)),
            ("new_skips", u(|v| v.new_skips)),
            (
                "new_skip_rate",
                x(|v| sig((v.turns > 0).then(|| v.new_skips as f64 / v.turns as f64))),
            ),
            ("new_labelled_skips", u(|v| v.new_labelled_skips)),
            (
                "safety_regression_rate_upper95",
                x(|v| v.safety_regression_rate_upper95),
            ),
            ("label_coverage", x(|v| v.label_coverage)),
            ("harmful_skips_per_1k_turns", x(harmful_per_1k)),
            (
                "harmful_skips_per_1k_turns_upper95",
                Col::F64(pts.iter().map(|p| sig_up(Some(p.labels_bound))).collect()),
            ),
            (
                "safety_regression_rate_worst_case_upper95",
                x(|v| v.safety_regression_rate_worst_case_upper95),
            ),
            (
                "harmful_skips_per_1k_turns_worst_case_upper95",
                Col::F64(pts.iter().map(|p| sig_up(Some(p.bound))).collect()),
            ),
            (
                "below_coverage_floor",
                Col::Bool(pts.iter().map(|p| !p.covered).collect()),
            ),
            ("production_agreement", x(|v| v.production_agreement)),
            (
                "on_frontier",
                Col::Bool(pts.iter().map(|p| p.on_frontier).collect()),
            ),
        ];
        typed_frame(self.file_name(), r, cols)
    }
}

/// `frontier.svg`: savings (x) against the bound (y), one point per
/// variant, the frontier as a line, the baseline marked.
pub(crate) struct FrontierSvg;

/// The frontier's colour (a test finds its line by it).
pub(crate) const FRONTIER_RGB: (u8, u8, u8) = (214, 39, 40);

impl Export for FrontierSvg {
    fn file_name(&self) -> &'static str {
        "frontier.svg"
    }

    fn write(&self, r: &ReplayReport, out: &mut dyn Write) -> Result<(), WriteFailure> {
        let svg = frontier_svg(&r.summary.run)?;
        out.write_all(svg.as_bytes()).map_err(WriteFailure::from)
    }
}

/// The chart's points: (savings, bound in %, variant), with savings.
struct Plotted<'a> {
    all: Vec<(f64, f64, &'a VariantSummary)>,
    frontier: Vec<(f64, f64, &'a VariantSummary)>,
    metric: Savings,
}

fn plotted(run: &RunSummary) -> Plotted<'_> {
    let vs: Vec<&VariantSummary> = run.ordered().collect();
    let metric = savings_metric(&vs);
    let pts = points(&vs, metric);
    let all: Vec<(f64, f64, &VariantSummary, bool)> = vs
        .iter()
        .zip(&pts)
        .filter_map(|(v, p)| p.savings.map(|s| (s, p.bound, *v, p.on_frontier)))
        .collect();
    let mut frontier: Vec<_> = all
        .iter()
        .filter(|p| p.3)
        .map(|p| (p.0, p.1, p.2))
        .collect();
    frontier.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    Plotted {
        all: all.into_iter().map(|p| (p.0, p.1, p.2)).collect(),
        frontier,
        metric,
    }
}

/// The axes' ranges, with a margin, never empty.
fn ranges(p: &Plotted) -> (std::ops::Range<f64>, std::ops::Range<f64>) {
    let (mut lo, mut hi) = (0f64, 0f64);
    for (x, _, _) in &p.all {
        lo = lo.min(*x);
        hi = hi.max(*x);
    }
    // Room on the right for the frontier's names.
    let span = (hi - lo).max(1e-3);
    let top = p.all.iter().map(|q| q.1).fold(1.0f64, f64::max);
    (lo - span * 0.06..hi + span * 0.3, 0.0..top * 1.1)
}

/// One name per frontier point; variants at the same point are counted
/// (`sel=off/thr=0.5 (+1 more)`), not written over each other.
fn labels(frontier: &[(f64, f64, &VariantSummary)]) -> Vec<(f64, f64, String)> {
    let mut out: Vec<(f64, f64, String, usize)> = Vec::new();
    for (x, y, v) in frontier {
        match out.iter_mut().find(|o| o.0 == *x && o.1 == *y) {
            Some(o) => o.3 += 1,
            None => out.push((*x, *y, v.variant.clone(), 0)),
        }
    }
    out.into_iter()
        .map(|(x, y, name, more)| match more {
            0 => (x, y, name),
            n => (x, y, format!("{name} (+{n} more)")),
        })
        .collect()
}

fn frontier_svg(run: &RunSummary) -> Result<String, WriteFailure> {
    use plotters::prelude::*;
    let p = plotted(run);
    let (xr, yr) = ranges(&p);
    let red = RGBColor(FRONTIER_RGB.0, FRONTIER_RGB.1, FRONTIER_RGB.2);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 600)).into_drawing_area();
        let e = |e: DrawingAreaErrorKind<std::io::Error>| {
            WriteFailure::Chart(format!("frontier.svg: {e:?}"))
        };
        root.fill(&WHITE).map_err(e)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "{} variants: savings against risk ({})",
                    p.all.len(),
                    match p.frontier.len() {
                        0 => "no variant is on the frontier",
                        1 => "one variant is the frontier, in red",
                        _ => "frontier in red",
                    }
                ),
                ("sans-serif", 20),
            )
            .margin(20)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(xr, yr)
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc(p.metric.unit())
            .y_desc("new harmful skips per 1,000 turns (upper 95% bound)")
            .draw()
            .map_err(e)?;
        let blue = RGBColor(31, 119, 180);
        chart
            .draw_series(
                p.all
                    .iter()
                    .map(|(x, y, _)| Circle::new((*x, *y), 4, blue.filled())),
            )
            .map_err(e)?;
        let line: Vec<(f64, f64)> = p.frontier.iter().map(|(x, y, _)| (*x, *y)).collect();
        chart
            .draw_series(LineSeries::new(line, red.stroke_width(2)))
            .map_err(e)?;
        // The frontier's points themselves: one point draws no line.
        chart
            .draw_series(
                p.frontier
                    .iter()
                    .map(|(x, y, _)| Circle::new((*x, *y), 5, red.filled())),
            )
            .map_err(e)?;
        chart
            .draw_series(
                labels(&p.frontier)
                    .into_iter()
                    .map(|(x, y, name)| Text::new(format!(" {name}"), (x, y), ("sans-serif", 12))),
            )
            .map_err(e)?;
        chart
            .draw_series(p.all.iter().filter(|q| q.2.baseline).map(|(x, y, v)| {
                EmptyElement::at((*x, *y))
                    + TriangleMarker::new((0, 0), 9, BLACK.filled())
                    + Text::new(
                        format!("  baseline {}", v.variant),
                        (0, 12),
                        ("sans-serif", 12),
                    )
            }))
            .map_err(e)?;
        root.present().map_err(e)?;
    }
    Ok(svg)
}

/// Expected new harmful skips per 1,000 turns at the rate's point
/// estimate: 0 without new skips, empty with new skips but no labels.
fn harmful_per_1k(v: &VariantSummary) -> Option<f64> {
    match v.new_skips {
        0 => Some(0.0),
        _ => sig(v.safety_regression_rate.map(|r| per_1k(r, v))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(net_calls: f64, upper: Option<f64>) -> VariantSummary {
        VariantSummary {
            net_calls_per_1k_turns: Some(net_calls),
            safety_regression_rate_upper95: upper,
            safety_regression_rate_worst_case_upper95: upper,
            turns: 1000,
            skip_rate: Some(0.5),
            new_skips: 500,
            ..Default::default()
        }
    }

    /// Found by review (#33): production's critic runs only where its
    /// gate fires, so the baseline's own skips have no labels; its point
    /// was drawn at a bound of 1 on all its skips (146 harmful skips per
    /// 1,000 turns against a true 21). It adds no new skip, so no new
    /// harm; a candidate's risk is on its new skips.
    #[test]
    fn the_baseline_adds_no_new_harm() {
        let base = VariantSummary {
            baseline: true,
            turns: 1000,
            skip_rate: Some(0.4),
            new_skips: 0,
            net_calls_per_1k_turns: Some(0.0),
            ..Default::default()
        };
        let cand = VariantSummary {
            turns: 1000,
            skip_rate: Some(0.5),
            new_skips: 100,
            safety_regression_rate_upper95: Some(0.04),
            safety_regression_rate_worst_case_upper95: Some(0.04),
            label_coverage: Some(1.0),
            net_calls_per_1k_turns: Some(100.0),
            ..Default::default()
        };
        let pts = points(&[&base, &cand], Savings::NetCalls);
        assert_eq!(pts[0].bound, 0.0);
        assert!((pts[1].bound - 4.0).abs() < 1e-9, "{}", pts[1].bound);
        assert!(pts[0].on_frontier && pts[1].on_frontier);
    }

    /// Found by review: with the rate alone as risk, a flag-off variant
    /// skipping 94.5% of turns was the only frontier point (its approved
    /// skips diluted the rate). Per 1,000 turns, the smart gate's fewer
    /// skips are the smaller risk; a thinly labelled variant is never on it.
    #[test]
    fn the_frontier_does_not_reward_dilution_or_thin_labels() {
        let dilute = VariantSummary {
            turns: 1000,
            new_skips: 945,
            skip_rate: Some(0.945),
            safety_regression_rate_upper95: Some(0.02),
            safety_regression_rate_worst_case_upper95: Some(0.02),
            net_calls_per_1k_turns: Some(900.0),
            label_coverage: Some(0.8),
            ..Default::default()
        };
        let smart = VariantSummary {
            turns: 1000,
            new_skips: 100,
            skip_rate: Some(0.10),
            safety_regression_rate_upper95: Some(0.05),
            safety_regression_rate_worst_case_upper95: Some(0.05),
            net_calls_per_1k_turns: Some(100.0),
            label_coverage: Some(0.9),
            ..Default::default()
        };
        let thin = VariantSummary {
            turns: 1000,
            new_skips: 50,
            skip_rate: Some(0.05),
            safety_regression_rate_upper95: Some(0.001),
            safety_regression_rate_worst_case_upper95: Some(0.001),
            net_calls_per_1k_turns: Some(950.0),
            label_coverage: Some(0.02),
            ..Default::default()
        };
        let vs = [&dilute, &smart, &thin];
        let pts = points(&vs, Savings::NetCalls);
        assert!((pts[0].bound - 18.9).abs() < 1e-9 && (pts[1].bound - 5.0).abs() < 1e-9);
        assert_eq!(
            pts.iter().map(|p| p.on_frontier).collect::<Vec<_>>(),
            [true, true, false]
        );
        // The rate alone would have put smart (0.05) behind dilute (0.02).
        assert!(smart.safety_regression_rate_upper95 > dilute.safety_regression_rate_upper95);
    }

    /// Found by review (#44): a candidate whose critic fails on the turns
    /// it would revise was drawn at a quarter of its true harm (6.4 against
    /// 27.2 per 1,000 turns): its labels look safe. Its point is drawn at
    /// its worst case (every unlabelled new skip a regression), so it does
    /// not beat a well-labelled candidate that saves a little less.
    #[test]
    fn the_frontier_draws_no_variant_below_its_worst_case() {
        let failing = VariantSummary {
            turns: 1000,
            new_skips: 200,
            safety_regression_rate_upper95: Some(0.032),
            safety_regression_rate_worst_case_upper95: Some(0.2),
            net_calls_per_1k_turns: Some(200.0),
            label_coverage: Some(0.85),
            ..Default::default()
        };
        let labelled = VariantSummary {
            turns: 1000,
            new_skips: 190,
            safety_regression_rate_upper95: Some(0.04),
            safety_regression_rate_worst_case_upper95: Some(0.04),
            net_calls_per_1k_turns: Some(190.0),
            label_coverage: Some(1.0),
            ..Default::default()
        };
        let pts = points(&[&failing, &labelled], Savings::NetCalls);
        assert!((pts[0].bound - 40.0).abs() < 1e-9, "{}", pts[0].bound);
        assert!((pts[0].labels_bound - 6.4).abs() < 1e-9);
        assert!(pts[1].on_frontier && pts[0].on_frontier);
        assert!(pts[0].bound > pts[1].bound);
    }

    /// A hand-made case: b and d are beaten, the rest are not.
    #[test]
    fn the_frontier_is_what_no_other_variant_beats_on_both() {
        let vs = [
            v(10.0, Some(0.05)), // a: on it
            v(8.0, Some(0.06)),  // b: a saves more at a lower bound
            v(20.0, Some(0.20)), // c: saves most
            v(10.0, Some(0.07)), // d: a saves as much at a lower bound
            v(0.0, Some(0.0)),   // e: the safest
            v(30.0, None),       // f: saves most of all, bound taken as 1
            v(5.0, Some(0.0)),   // g: as safe as e, saves more: e is beaten
        ];
        let refs: Vec<&VariantSummary> = vs.iter().collect();
        assert_eq!(savings_metric(&refs), Savings::NetCalls);
        let on: Vec<bool> = points(&refs, Savings::NetCalls)
            .iter()
            .map(|p| p.on_frontier)
            .collect();
        assert_eq!(on, [true, false, true, false, false, true, true]);
    }
}
