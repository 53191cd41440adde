//! The table reports: summary, floors, segments, regressions, matrix.

use std::io::Write;

use polars_core::prelude::DataFrame;

use super::export::{typed_frame, Col, Export, ReplayReport, WriteFailure};
use crate::gate::Reason;
use crate::replay::skips::{self, SkipTally};
use crate::replay::tally::{AddedCost, Counts, Estimate, LENGTH_BUCKETS, NOT_RUN, VERDICT_LABELS};
use crate::replay::MatrixCell;
use crate::replay::DRAFT_LENGTH;
use crate::summary::numbers::{ms, sig, usd};
use crate::summary::schema;

/// `summary.csv`: one row per variant, every metric a column.
pub(super) struct SummaryCsv;

impl Export for SummaryCsv {
    fn file_name(&self) -> &'static str {
        "summary.csv"
    }

    fn table(&self, r: &ReplayReport) -> Option<Result<DataFrame, WriteFailure>> {
        Some(self.frame(r))
    }
}

impl SummaryCsv {
    /// Each column, in the schema's order, from the variants' figures.
    fn frame(&self, r: &ReplayReport) -> Result<DataFrame, WriteFailure> {
        let rows: Vec<_> = r.summary.run.ordered().map(|v| v.to_map()).collect();
        let table = schema::table(self.file_name());
        let cols = table.columns[1..]
            .iter()
            .map(|c| Ok((c.name, Col::from_json(c, rows.iter().map(|m| &m[c.name]))?)))
            .collect::<Result<Vec<_>, WriteFailure>>()?;
        typed_frame(self.file_name(), r, cols)
    }
}

/// `summary.json`: run facts and `variants.<name>.<metric>`.
pub(super) struct SummaryJson;

impl Export for SummaryJson {
    fn file_name(&self) -> &'static str {
        "summary.json"
    }

    fn write(&self, r: &ReplayReport, out: &mut dyn Write) -> Result<(), WriteFailure> {
        let s =
            serde_json::to_string_pretty(&r.summary.run.to_json()).map_err(WriteFailure::from)?;
        writeln!(out, "{s}").map_err(WriteFailure::from)
    }
}

/// `floors.csv`: per variant and reason of its active gate: hits, share of
/// turns, and the turns where it alone blocked a skip.
pub(super) struct FloorsCsv;

impl Export for FloorsCsv {
    fn file_name(&self) -> &'static str {
        "floors.csv"
    }

    fn table(&self, r: &ReplayReport) -> Option<Result<DataFrame, WriteFailure>> {
        Some(self.frame(r))
    }
}

impl FloorsCsv {
    fn frame(&self, r: &ReplayReport) -> Result<DataFrame, WriteFailure> {
        let (mut variant, mut gate, mut reason, mut floor) = (vec![], vec![], vec![], vec![]);
        let (mut hits, mut share, mut sole) = (vec![], vec![], vec![]);
        for (i, v) in r.plan.variants.iter().enumerate() {
            let t = &r.totals.variants[i];
            let smart = v.config.metacognition_selective_gate;
            let reasons: &[Reason] = if smart {
                &Reason::SMART_BLOCKERS
            } else {
                &Reason::LEGACY_BLOCKERS
            };
            for &re in reasons {
                variant.push(Some(v.name.clone()));
                gate.push(Some(if smart { "smart" } else { "legacy" }.to_string()));
                reason.push(Some(re.name().to_string()));
                floor.push(re.is_floor());
                hits.push(t.hits(re));
                share.push(sig(
                    (t.counts.turns > 0).then(|| t.hits(re) as f64 / t.counts.turns as f64)
                ));
                sole.push(t.sole(re));
            }
        }
        let df = typed_frame(
            self.file_name(),
            r,
            vec![
                ("variant", Col::Str(variant)),
                ("gate", Col::Str(gate)),
                ("reason", Col::Str(reason)),
                ("hard_floor", Col::Bool(floor)),
                ("hits", Col::U64(hits)),
                ("share_of_turns", Col::F64(share)),
                ("sole_blocker", Col::U64(sole)),
            ],
        )?;
        Ok(df)
    }
}

/// `segments.csv`: decisions per value of each grouping dimension.
pub(super) struct SegmentsCsv;

impl Export for SegmentsCsv {
    fn file_name(&self) -> &'static str {
        "segments.csv"
    }

    fn table(&self, r: &ReplayReport) -> Option<Result<DataFrame, WriteFailure>> {
        Some(self.frame(r))
    }
}

impl SegmentsCsv {
    fn frame(&self, r: &ReplayReport) -> Result<DataFrame, WriteFailure> {
        let mut rows = SegmentRows {
            priced: r.totals.unpriced_models.is_empty(),
            ..SegmentRows::default()
        };
        let (_, deployment_of) = r.plan.deployments();
        for (i, v) in r.plan.variants.iter().enumerate() {
            let cost = r.totals.added_cost(deployment_of[i]);
            for (d, values) in &r.totals.segments {
                // A value only other variants' deployments derive has no
                // turn of this variant's: no row, as in its own replay.
                for (val, counts, order) in in_natural_order(d, values) {
                    if counts[i].turns == 0 {
                        continue;
                    }
                    rows.push([&v.name, d, val], order, &counts[i], &cost);
                }
            }
        }
        rows.frame(r)
    }
}

/// A dimension's values with their place in its natural order: the
/// draft-length buckets from 0 up (then any other value); other
/// dimensions in the order of their values, without a place.
fn in_natural_order<'m>(
    dim: &str,
    values: &'m std::collections::BTreeMap<String, Vec<Counts>>,
) -> Vec<(&'m String, &'m Vec<Counts>, Option<u64>)> {
    let mut rows: Vec<_> = values
        .iter()
        .map(|(v, c)| {
            let order = (dim == DRAFT_LENGTH)
                .then(|| LENGTH_BUCKETS.iter().position(|b| b == v))
                .flatten()
                .map(|p| p as u64);
            (v, c, order)
        })
        .collect();
    rows.sort_by_key(|(_, _, order)| order.unwrap_or(u64::MAX));
    rows
}

/// The columns of segments.csv, row by row.
#[derive(Default)]
struct SegmentRows {
    /// Every critic model has a price (else no row reports dollars, as
    /// the summary does not).
    priced: bool,
    keys: [Vec<Option<String>>; 3],
    order: Vec<Option<u64>>,
    counts: Vec<Counts>,
    /// Per row: the added calls' estimate.
    added: Vec<Estimate>,
}

impl SegmentRows {
    /// A row: variant, dimension and value, and its counts (its added
    /// calls estimated by the run's one rule, so rows add up).
    fn push(&mut self, keys: [&String; 3], order: Option<u64>, c: &Counts, cost: &AddedCost) {
        self.order.push(order);
        for (col, k) in self.keys.iter_mut().zip(keys) {
            col.push(Some(k.clone()));
        }
        self.added.push(cost.estimate(c));
        self.counts.push(c.clone());
    }

    fn frame(self, r: &ReplayReport) -> Result<polars_core::prelude::DataFrame, WriteFailure> {
        let c = &self.counts;
        let u = |f: fn(&Counts) -> u64| Col::U64(c.iter().map(f).collect());
        let rate = |f: fn(&Counts) -> (u64, u64)| {
            Col::F64(
                c.iter()
                    .map(f)
                    .map(|(n, d)| sig((d > 0).then(|| n as f64 / d as f64)))
                    .collect(),
            )
        };
        let [variant, dim, value] = self.keys.clone();
        let mut cols = vec![
            ("variant", Col::Str(variant)),
            ("dimension", Col::Str(dim)),
            ("value", Col::Str(value)),
            ("value_order", Col::OptU64(self.order.clone())),
            ("turns", u(|c| c.turns)),
            ("fires", u(|c| c.fires)),
            ("skips", u(Counts::skips)),
            ("fire_rate", rate(|c| (c.fires, c.turns))),
            ("skip_rate", rate(|c| (c.skips(), c.turns))),
            ("saved_calls", u(|c| c.saved_calls)),
            ("added_calls", u(|c| c.added_calls)),
            ("safety_regressions", u(|c| c.new_safety_regressions)),
            ("new_skips", u(|c| c.new_skips)),
            ("new_labelled_skips", u(|c| c.new_labelled_skips)),
            ("critic_not_run", u(|c| c.critic_not_run)),
            ("production_known", u(|c| c.production_known)),
            (
                "production_agreement",
                rate(|c| (c.production_agreeing(), c.production_known)),
            ),
            (
                "production_fired_variant_skips",
                u(|c| c.production_fired_variant_skips),
            ),
            (
                "production_skipped_variant_fires",
                u(|c| c.production_skipped_variant_fires),
            ),
        ];
        cols.extend(self.cost_cols());
        typed_frame("segments.csv", r, cols)
    }

    /// The saved and added cost columns.
    fn cost_cols(&self) -> Vec<(&'static str, Col)> {
        let c = &self.counts;
        let u = |f: fn(&Counts) -> u64| Col::U64(c.iter().map(f).collect());
        let est = |f: fn(&Estimate) -> Option<f64>| {
            Col::F64(self.added.iter().map(|e| sig(f(e))).collect())
        };
        vec![
            (
                "saved_tokens_in",
                Col::OptU64(c.iter().map(|c| c.saved.tokens().0).collect()),
            ),
            (
                "saved_tokens_out",
                Col::OptU64(c.iter().map(|c| c.saved.tokens().1).collect()),
            ),
            (
                "saved_latency_ms",
                Col::OptU64(c.iter().map(|c| ms(c.saved.latency_ms())).collect()),
            ),
            (
                "saved_usd",
                Col::F64(
                    c.iter()
                        .map(|c| usd(c.saved.usd()).filter(|_| self.priced))
                        .collect(),
                ),
            ),
            (
                "saved_calls_without_tokens",
                u(|c| c.saved.turns - c.saved.with_tokens),
            ),
            (
                "saved_calls_without_latency",
                u(|c| c.saved.turns - c.saved.with_latency),
            ),
            ("added_tokens_in_estimated", est(|e| e.tokens_in)),
            ("added_tokens_out_estimated", est(|e| e.tokens_out)),
            (
                "added_latency_ms_estimated",
                Col::OptU64(self.added.iter().map(|e| ms(e.latency_ms)).collect()),
            ),
            (
                "added_usd_estimated",
                Col::F64(self.added.iter().map(|e| usd(e.usd)).collect()),
            ),
        ]
    }
}

/// `matrix.csv`: per variant, baseline fire/skip by variant fire/skip, each
/// cell split by recorded verdict.
pub(super) struct MatrixCsv;

impl Export for MatrixCsv {
    fn file_name(&self) -> &'static str {
        "matrix.csv"
    }

    fn table(&self, r: &ReplayReport) -> Option<Result<DataFrame, WriteFailure>> {
        Some(self.frame(r))
    }
}

impl MatrixCsv {
    fn frame(&self, r: &ReplayReport) -> Result<DataFrame, WriteFailure> {
        let (mut variant, mut base, mut dec, mut cell) = (vec![], vec![], vec![], vec![]);
        let (mut turns, mut labelled, mut unlabelled, mut not_run) =
            (vec![], vec![], vec![], vec![]);
        let mut by_verdict: [Vec<u64>; 3] = Default::default();
        for (i, v) in r.plan.variants.iter().enumerate() {
            let m = &r.totals.variants[i].matrix;
            for c in MatrixCell::ALL {
                let (b, f) = c.decisions();
                let counts = m[b as usize][f as usize];
                variant.push(Some(v.name.clone()));
                base.push(Some(if b { "fire" } else { "skip" }.to_string()));
                dec.push(Some(if f { "fire" } else { "skip" }.to_string()));
                cell.push(Some(c.name().to_string()));
                turns.push(counts.iter().sum::<u64>());
                // No label: no event, an event without a verdict, or
                // an event where no critic ran.
                unlabelled.push(counts[0] + counts[NOT_RUN]);
                labelled.push(counts[1..NOT_RUN].iter().sum::<u64>());
                not_run.push(counts[NOT_RUN]);
                for k in 0..3 {
                    by_verdict[k].push(counts[k + 1]);
                }
            }
        }
        let [approve, revise, refuse] = by_verdict;
        let df = typed_frame(
            self.file_name(),
            r,
            vec![
                ("variant", Col::Str(variant)),
                ("baseline_decision", Col::Str(base)),
                ("variant_decision", Col::Str(dec)),
                ("cell", Col::Str(cell)),
                ("turns", Col::U64(turns)),
                ("labelled", Col::U64(labelled)),
                ("unlabelled", Col::U64(unlabelled)),
                ("critic_not_run", Col::U64(not_run)),
                (VERDICT_LABELS[1], Col::U64(approve)),
                (VERDICT_LABELS[2], Col::U64(revise)),
                (VERDICT_LABELS[3], Col::U64(refuse)),
            ],
        )?;
        Ok(df)
    }
}

/// `schema.json`: the data dictionary of every CSV report (see
/// [`crate::summary::schema`]).
pub(super) struct SchemaJson;

impl Export for SchemaJson {
    fn file_name(&self) -> &'static str {
        "schema.json"
    }

    fn write(&self, r: &ReplayReport, out: &mut dyn Write) -> Result<(), WriteFailure> {
        let text = serde_json::to_string_pretty(&crate::summary::schema::to_json(r.scope_keys))
            .map_err(WriteFailure::from)?;
        writeln!(out, "{text}").map_err(WriteFailure::from)
    }
}

/// `skips.csv`: per variant, the drafts it skips where the baseline fired
/// (its saved calls), most skipped first: the top [`TOP_SKIPS`] and one
/// `(other)` row with the rest, so the rows add up to `saved_calls`.
pub(super) struct SkipsCsv;

/// Drafts listed per variant in skips.csv.
pub(super) const TOP_SKIPS: usize = 1000;

impl Export for SkipsCsv {
    fn file_name(&self) -> &'static str {
        "skips.csv"
    }

    fn table(&self, r: &ReplayReport) -> Option<Result<DataFrame, WriteFailure>> {
        Some(self.frame(r))
    }
}

impl SkipsCsv {
    fn frame(&self, r: &ReplayReport) -> Result<DataFrame, WriteFailure> {
        let mut rows: Vec<(String, String, SkipTally)> = Vec::new();
        for (i, v) in r.plan.variants.iter().enumerate() {
            for (draft, t) in skips::top(&r.totals.skips[i], TOP_SKIPS) {
                rows.push((v.name.clone(), draft, t));
            }
        }
        let s = |f: &dyn Fn(&(String, String, SkipTally)) -> String| {
            Col::Str(rows.iter().map(|x| Some(f(x))).collect())
        };
        let u = |f: &dyn Fn(&SkipTally) -> u64| Col::U64(rows.iter().map(|x| f(&x.2)).collect());
        let df = typed_frame(
            self.file_name(),
            r,
            vec![
                ("variant", s(&|x| x.0.clone())),
                ("draft", s(&|x| x.1.clone())),
                ("saved_calls", u(&|t| t.count)),
                ("languages", s(&|x| languages(&x.2))),
                ("labelled", u(&|t| t.labelled())),
                ("approve", u(&|t| t.verdicts[0])),
                ("revise", u(&|t| t.verdicts[1])),
                ("refuse", u(&|t| t.verdicts[2])),
                (
                    "saved_usd",
                    Col::F64(
                        rows.iter()
                            .map(|x| priced(r, usd(x.2.saved.usd())))
                            .collect(),
                    ),
                ),
            ],
        )?;
        Ok(df)
    }
}

/// `en:12;es:3`: languages by count, then name.
fn languages(t: &SkipTally) -> String {
    let mut l: Vec<(&String, &u64)> = t.languages.iter().collect();
    l.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
    l.iter()
        .map(|(k, n)| format!("{k}:{n}"))
        .collect::<Vec<_>>()
        .join(";")
}

/// Dollars of a row, absent when the run has an unpriced model (as in the
/// summary, whose note says so): a row must not report what its total
/// cannot.
fn priced(r: &ReplayReport, usd: Option<f64>) -> Option<f64> {
    usd.filter(|_| r.totals.unpriced_models.is_empty())
}
