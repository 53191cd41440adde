//! `charts/`: the SVG charts `report.md` embeds, one function per chart,
//! each drawn from the typed tallies the tables are built from (plotters,
//! SVG backend only: text stays text, no fonts or system libraries).

use std::io::Write;
use std::ops::Range;

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::export::{Export, ReplayReport, WriteFailure};
use crate::gate::Reason;
use crate::replay::tally::{Counts, Histogram, Mixture};

/// Values a bar chart shows at most (the most frequent).
pub(crate) const MAX_BARS: usize = 12;

/// Colours of the variants, in plan order (cycled past the last).
const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
];

fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Every chart's legend: framed, on a light background, at `at`.
fn legend<'a, 'b: 'a>(
    chart: &mut Chart<'a, 'b>,
    at: SeriesLabelPosition,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    chart
        .configure_series_labels()
        .position(at)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
}

fn draw_error<E: std::fmt::Debug>(file: &str) -> impl Fn(E) -> WriteFailure + '_ {
    move |e| WriteFailure::Chart(format!("{file}: {e:?}"))
}

/// Grouped bars: one group per category, one bar per series, with the
/// category names under the axis and a legend.
struct Bars<'a> {
    file: &'a str,
    title: String,
    y_desc: &'a str,
    categories: Vec<String>,
    /// (series name, one value per category; None draws no bar).
    series: Vec<(String, Vec<Option<f64>>)>,
    y_max: f64,
}

impl Bars<'_> {
    fn svg(&self) -> Result<String, WriteFailure> {
        let e = draw_error(self.file);
        let mut svg = String::new();
        {
            // Wide enough for every category's name.
            let width = (90 * self.categories.len() as u32 + 120).max(900);
            let root = SVGBackend::with_string(&mut svg, (width, 520)).into_drawing_area();
            root.fill(&WHITE).map_err(&e)?;
            let n = self.categories.len().max(1) as f64;
            // Headroom above the tallest possible bar holds the legend, so
            // it never covers a bar.
            let top = self.y_max * (1.12 + 0.06 * self.series.len() as f64);
            let y_max = self.y_max;
            let mut chart = ChartBuilder::on(&root)
                .caption(&self.title, ("sans-serif", 20))
                .margin(20)
                .x_label_area_size(48)
                .y_label_area_size(60)
                .build_cartesian_2d(0f64..n, 0f64..top)
                .map_err(&e)?;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_labels(0)
                .y_desc(self.y_desc)
                .y_label_formatter(&|y| match *y <= y_max + 1e-9 {
                    true => format!("{y:.0}"),
                    false => String::new(),
                })
                .draw()
                .map_err(&e)?;
            self.draw_bars(&mut chart).map_err(&e)?;
            self.draw_values(&mut chart).map_err(&e)?;
            for (j, name) in self.categories.iter().enumerate() {
                let (x, y) = chart.backend_coord(&(j as f64 + 0.5, 0.0));
                let style = ("sans-serif", 12).into_text_style(&root).pos(
                    plotters::style::text_anchor::Pos::new(
                        plotters::style::text_anchor::HPos::Center,
                        plotters::style::text_anchor::VPos::Top,
                    ),
                );
                // A name of two lines (`reason` over `variant`).
                for (k, line) in name.lines().enumerate() {
                    let at = (x, y + 8 + 15 * k as i32);
                    root.draw(&Text::new(line.to_string(), at, style.clone()))
                        .map_err(&e)?;
                }
            }
            legend(&mut chart, SeriesLabelPosition::UpperRight).map_err(&e)?;
            root.present().map_err(&e)?;
        }
        Ok(svg)
    }

    /// Each bar's value above it (`0%` for a bar of zero height), or
    /// `n/a` where the series has no value: no data never looks like 0.
    fn draw_values(&self, chart: &mut Chart) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
        let style = ("sans-serif", 10).into_font().color(&BLACK).pos(
            plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Center,
                plotters::style::text_anchor::VPos::Bottom,
            ),
        );
        for (i, (_, values)) in self.series.iter().enumerate() {
            let labels = values.iter().enumerate().map(|(j, v)| {
                let (x0, w) = self.bar_at(i, j);
                let x = x0 + w / 2.0;
                let text = v.map_or("n/a".to_string(), |v| format!("{v:.0}%"));
                Text::new(text, (x, v.unwrap_or(0.0)), style.clone())
            });
            chart.draw_series(labels)?;
        }
        Ok(())
    }

    /// Where series `i`'s bar of category `j` starts, and its width.
    fn bar_at(&self, i: usize, j: usize) -> (f64, f64) {
        let w = 0.8 / self.series.len().max(1) as f64;
        (j as f64 + 0.1 + i as f64 * w, w * 0.95)
    }

    fn draw_bars(&self, chart: &mut Chart) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
        for (i, (name, values)) in self.series.iter().enumerate() {
            let c = colour(i);
            let bars = values.iter().enumerate().filter_map(|(j, v)| {
                let (x0, w) = self.bar_at(i, j);
                v.map(|v| Rectangle::new([(x0, 0.0), (x0 + w, v)], c.filled()))
            });
            chart
                .draw_series(bars)?
                .label(name.clone())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
        }
        Ok(())
    }
}

/// Skip rate (%) of each variant per value of `dim` (the values with the
/// most turns, at most [`MAX_BARS`]).
pub(crate) fn skip_rate_by(
    r: &ReplayReport,
    dim: &str,
    file: &str,
) -> Result<String, WriteFailure> {
    let values = r.totals.segments.get(dim);
    let mut rows: Vec<(&String, &Vec<Counts>)> =
        values.map(|v| v.iter().collect()).unwrap_or_default();
    let all = rows.len();
    rows.sort_by_key(|(v, c)| (std::cmp::Reverse(c[r.plan.baseline].turns), (*v).clone()));
    rows.truncate(MAX_BARS);
    let series = r
        .plan
        .variants
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let rates = rows
                .iter()
                .map(|(_, c)| {
                    (c[i].turns > 0).then(|| 100.0 * c[i].skips() as f64 / c[i].turns as f64)
                })
                .collect();
            (v.name.clone(), rates)
        })
        .collect();
    let shown = if all > rows.len() {
        format!(" ({} most frequent of {all})", rows.len())
    } else {
        String::new()
    };
    Bars {
        file,
        title: format!("Skip rate by {dim}{shown}"),
        y_desc: "skip rate (%)",
        // Each value with its turns: a rate over 3 turns reads as one.
        categories: rows
            .iter()
            .map(|(v, c)| format!("{v}\nn={}", c[r.plan.baseline].turns))
            .collect(),
        series,
        y_max: 100.0,
    }
    .svg()
}

/// Per variant and reason of its gate: how often the reason holds, and how
/// often it alone blocks a skip (% of turns).
pub(crate) fn floors(r: &ReplayReport, file: &str) -> Result<String, WriteFailure> {
    let mut categories = Vec::new();
    let (mut hits, mut sole) = (Vec::new(), Vec::new());
    for (i, v) in r.plan.variants.iter().enumerate() {
        let t = &r.totals.variants[i];
        let turns = t.counts.turns.max(1) as f64;
        let reasons: &[Reason] = match v.config.metacognition_selective_gate {
            true => &Reason::SMART_BLOCKERS,
            false => &Reason::LEGACY_BLOCKERS,
        };
        for &re in reasons.iter().filter(|&&re| t.hits(re) > 0) {
            categories.push(format!("{}\n{}", re.name(), v.name));
            hits.push(Some(100.0 * t.hits(re) as f64 / turns));
            sole.push(Some(100.0 * t.sole(re) as f64 / turns));
        }
    }
    Bars {
        file,
        title:
            "Why the gates fire: each reason's share of turns, and where it alone blocked a skip"
                .into(),
        y_desc: "share of turns (%)",
        categories,
        series: vec![("holds".into(), hits), ("sole blocker".into(), sole)],
        y_max: 100.0,
    }
    .svg()
}

/// A distribution with estimates as CDF steps: (ms, cumulative %).
fn mixture_cdf(m: &Mixture) -> Vec<(f64, f64)> {
    let mut out = vec![(0.0, 0.0)];
    let mut before = 0.0;
    for (ms, share) in m.steps() {
        out.push((ms as f64, 100.0 * before));
        out.push((ms as f64, 100.0 * share));
        before = share;
    }
    out
}

/// A histogram as CDF steps: (ms, cumulative %).
fn cdf(h: &Histogram) -> Vec<(f64, f64)> {
    let total = h.count.max(1) as f64;
    let mut seen = 0;
    let mut out = vec![(0.0, 0.0)];
    for (ms, n) in h.buckets() {
        let y = 100.0 * seen as f64 / total;
        seen += n;
        out.push((ms as f64, y));
        out.push((ms as f64, 100.0 * seen as f64 / total));
    }
    out
}

/// One line of a CDF chart: its name, steps, whether dashed, and colour.
type CdfLine = (String, Vec<(f64, f64)>, bool, usize);

/// The critic latency added to a user-facing turn, per variant: recorded
/// fires (solid) and with added calls at their estimates (dashed).
pub(crate) fn latency_cdf(r: &ReplayReport, file: &str) -> Result<String, WriteFailure> {
    let (_, deployment_of) = r.plan.deployments();
    let lines: Vec<CdfLine> = r
        .plan
        .variants
        .iter()
        .enumerate()
        .flat_map(|(i, v)| {
            let t = &r.totals.variants[i];
            let recorded =
                (t.latency.count > 0).then(|| (v.name.clone(), cdf(&t.latency), false, i));
            let estimated = t
                .latency_with_estimates(&r.totals.added_cost(deployment_of[i]))
                .filter(|_| t.latency_unmeasured_fires > 0)
                .map(|m| {
                    (
                        format!("{} with estimates", v.name),
                        mixture_cdf(&m),
                        true,
                        i,
                    )
                });
            recorded.into_iter().chain(estimated)
        })
        .collect();
    let x_max = lines
        .iter()
        .flat_map(|l| l.1.iter().map(|p| p.0))
        .fold(1.0f64, f64::max);
    cdf_svg(file, &lines, 0.0..x_max * 1.05)
}

fn cdf_svg(file: &str, lines: &[CdfLine], x: Range<f64>) -> Result<String, WriteFailure> {
    let e = draw_error(file);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 520)).into_drawing_area();
        root.fill(&WHITE).map_err(&e)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Critic latency added to a turn (cumulative)",
                ("sans-serif", 20),
            )
            .margin(20)
            .x_label_area_size(50)
            .y_label_area_size(60)
            .build_cartesian_2d(x, 0f64..100f64)
            .map_err(&e)?;
        chart
            .configure_mesh()
            .x_desc("critic latency (ms; 0 on a skip)")
            .y_desc("turns at or below (%)")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()
            .map_err(&e)?;
        for (name, points, dashed, i) in lines {
            let c = colour(*i);
            let style = c.stroke_width(if *dashed { 1 } else { 2 });
            let series = match dashed {
                false => chart.draw_series(LineSeries::new(points.clone(), style)),
                true => chart.draw_series(DashedLineSeries::new(points.clone(), 6, 4, style)),
            };
            series
                .map_err(&e)?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2))
                });
        }
        legend(&mut chart, SeriesLabelPosition::LowerRight).map_err(&e)?;
        root.present().map_err(&e)?;
    }
    Ok(svg)
}

/// One chart file of `charts/`.
pub(crate) struct ChartSvg {
    pub file: &'static str,
    pub draw: fn(&ReplayReport, &str) -> Result<String, WriteFailure>,
}

impl Export for ChartSvg {
    fn file_name(&self) -> &'static str {
        self.file
    }

    fn write(&self, r: &ReplayReport, out: &mut dyn Write) -> Result<(), WriteFailure> {
        let svg = (self.draw)(r, self.file)?;
        out.write_all(svg.as_bytes()).map_err(WriteFailure::from)
    }
}

/// Every chart, with the title report.md gives it.
pub(crate) const CHARTS: [(ChartSvg, &str); 4] = [
    (
        ChartSvg {
            file: "charts/skip_rate_by_language.svg",
            draw: |r, f| skip_rate_by(r, "language", f),
        },
        "Skip rate by language",
    ),
    (
        ChartSvg {
            file: "charts/skip_rate_by_intent.svg",
            draw: |r, f| skip_rate_by(r, "intent", f),
        },
        "Skip rate by intent",
    ),
    (
        ChartSvg {
            file: "charts/critic_latency_cdf.svg",
            draw: latency_cdf,
        },
        "Critic latency per turn",
    ),
    (
        ChartSvg {
            file: "charts/floors.svg",
            draw: floors,
        },
        "Floors and sole blockers",
    ),
];
