//! The table reports: summary, floors, segments, regressions, matrix.

use std::io::Write;

use super::export::{frame, write_csv, Col, Export, ReplayReport};
use super::summary::Cell;
use crate::gate::Reason;
use crate::replay::matrix_cell;
use crate::replay::tally::{Estimate, Lite, NOT_RUN, VERDICT_LABELS};

/// `summary.csv`: one row per variant, every metric a column.
pub struct SummaryCsv;

impl Export for SummaryCsv {
    fn file_name(&self) -> &'static str {
        "summary.csv"
    }

    fn write(&self, r: &ReplayReport, out: &mut dyn Write) -> Result<(), String> {
        let rows = &r.summary.rows;
        let names: Vec<&'static str> = rows[0].iter().map(|(k, _)| *k).collect();
        let cols = names
            .iter()
            .enumerate()
            .map(|(j, name)| {
                let col = match &rows[0][j].1 {
                    Cell::Str(_) => Col::Str(
                        rows.iter()
                            .map(|row| match &row[j].1 {
                                Cell::Str(s) => Some(s.clone()),
                                _ => None,
                            })
                            .collect(),
                    ),
                    Cell::Int(_) => Col::U64(
                        rows.iter()
                            .map(|row| match row[j].1 {
                                Cell::Int(n) => n,
                                _ => 0,
                            })
                            .collect(),
                    ),
                    Cell::Sum(_) => Col::OptU64(
                        rows.iter()
                            .map(|row| match row[j].1 {
                                Cell::Sum(n) => n,
                                _ => None,
                            })
                            .collect(),
                    ),
                    Cell::Signed(_) => Col::I64(
                        rows.iter()
                            .map(|row| match row[j].1 {
                                Cell::Signed(n) => n,
                                _ => 0,
                            })
                            .collect(),
                    ),
                    Cell::Float(_) => Col::F64(
                        rows.iter()
                            .map(|row| match row[j].1 {
                                Cell::Float(x) => x,
                                _ => None,
                            })
                            .collect(),
                    ),
                    Cell::Bool(_) => Col::Bool(
                        rows.iter()
                            .map(|row| matches!(row[j].1, Cell::Bool(true)))
                            .collect(),
                    ),
                };
                (*name, col)
            })
            .collect();
        write_csv(&mut frame(cols)?, out, true)
    }
}

/// `summary.json`: run facts and `variants.<name>.<metric>`.
pub struct SummaryJson;

impl Export for SummaryJson {
    fn file_name(&self) -> &'static str {
        "summary.json"
    }

    fn write(&self, r: &ReplayReport, out: &mut dyn Write) -> Result<(), String> {
        let s = serde_json::to_string_pretty(&r.summary.json).map_err(|e| e.to_string())?;
        writeln!(out, "{s}").map_err(|e| e.to_string())
    }
}

/// `floors.csv`: per variant and reason of its active gate: hits, share of
/// turns, and the turns where it alone blocked a skip.
pub struct FloorsCsv;

impl Export for FloorsCsv {
    fn file_name(&self) -> &'static str {
        "floors.csv"
    }

    fn write(&self, r: &ReplayReport, out: &mut dyn Write) -> Result<(), String> {
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
                share.push((t.counts.turns > 0).then(|| t.hits(re) as f64 / t.counts.turns as f64));
                sole.push(t.sole(re));
            }
        }
        let mut df = frame(vec![
            ("variant", Col::Str(variant)),
            ("gate", Col::Str(gate)),
            ("reason", Col::Str(reason)),
            ("hard_floor", Col::Bool(floor)),
            ("hits", Col::U64(hits)),
            ("share_of_turns", Col::F64(share)),
            ("sole_blocker", Col::U64(sole)),
        ])?;
        write_csv(&mut df, out, true)
    }
}

/// `segments.csv`: decisions per value of each grouping dimension.
pub struct SegmentsCsv;

impl Export for SegmentsCsv {
    fn file_name(&self) -> &'static str {
        "segments.csv"
    }

    fn write(&self, r: &ReplayReport, out: &mut dyn Write) -> Result<(), String> {
        // Every recorded event, per variant (the same events; kept per
        // variant like every other count), for segments without their own.
        let overall: Vec<Lite> = (0..r.plan.variants.len())
            .map(|i| {
                let mut all = Lite::default();
                if let Some(values) = r.totals.segments.get("draft_length") {
                    for counts in values.values() {
                        all.merge(&counts[i].events);
                    }
                }
                all
            })
            .collect();
        let (mut variant, mut dim, mut value) = (vec![], vec![], vec![]);
        let (mut turns, mut fires, mut skips, mut fire_rate, mut skip_rate) =
            (vec![], vec![], vec![], vec![], vec![]);
        let (mut saved, mut added, mut regress, mut labelled) = (vec![], vec![], vec![], vec![]);
        let (mut not_run, mut known, mut agreement, mut p_fired, mut p_skipped) =
            (vec![], vec![], vec![], vec![], vec![]);
        let (mut s_in, mut s_out, mut s_lat, mut s_usd, mut s_unmeasured) =
            (vec![], vec![], vec![], vec![], vec![]);
        let (mut a_in, mut a_out, mut a_lat, mut a_usd) = (vec![], vec![], vec![], vec![]);
        for (i, v) in r.plan.variants.iter().enumerate() {
            for (d, values) in &r.totals.segments {
                for (val, counts) in values {
                    let c = &counts[i];
                    variant.push(Some(v.name.clone()));
                    dim.push(Some(d.clone()));
                    value.push(Some(val.clone()));
                    turns.push(c.turns);
                    fires.push(c.fires);
                    skips.push(c.skips());
                    fire_rate.push((c.turns > 0).then(|| c.fires as f64 / c.turns as f64));
                    skip_rate.push((c.turns > 0).then(|| c.skips() as f64 / c.turns as f64));
                    saved.push(c.saved_calls);
                    added.push(c.added_calls);
                    regress.push(c.safety_regressions);
                    labelled.push(c.labelled_skips);
                    not_run.push(c.critic_not_run);
                    known.push(c.production_known);
                    agreement.push(
                        (c.production_known > 0)
                            .then(|| c.production_agreeing() as f64 / c.production_known as f64),
                    );
                    p_fired.push(c.production_fired_variant_skips);
                    p_skipped.push(c.production_skipped_variant_fires);
                    let (tin, tout) = c.saved.tokens();
                    s_in.push(tin);
                    s_out.push(tout);
                    s_lat.push(c.saved.latency_ms());
                    s_usd.push(c.saved.usd());
                    s_unmeasured.push(c.saved.turns - c.saved.with_tokens);
                    // Added calls: no critic ran, so each is estimated by the
                    // mean recorded event of this segment, else of all turns.
                    let e = Estimate::of(c.added_calls, &c.events, &overall[i]);
                    a_in.push(e.tokens_in);
                    a_out.push(e.tokens_out);
                    a_lat.push(e.latency_ms);
                    a_usd.push(e.usd);
                }
            }
        }
        let mut df = frame(vec![
            ("variant", Col::Str(variant)),
            ("dimension", Col::Str(dim)),
            ("value", Col::Str(value)),
            ("turns", Col::U64(turns)),
            ("fires", Col::U64(fires)),
            ("skips", Col::U64(skips)),
            ("fire_rate", Col::F64(fire_rate)),
            ("skip_rate", Col::F64(skip_rate)),
            ("saved_calls", Col::U64(saved)),
            ("added_calls", Col::U64(added)),
            ("safety_regressions", Col::U64(regress)),
            ("labelled_skips", Col::U64(labelled)),
            ("critic_not_run", Col::U64(not_run)),
            ("production_known", Col::U64(known)),
            ("production_agreement", Col::F64(agreement)),
            ("production_fired_variant_skips", Col::U64(p_fired)),
            ("production_skipped_variant_fires", Col::U64(p_skipped)),
            ("saved_tokens_in", Col::OptU64(s_in)),
            ("saved_tokens_out", Col::OptU64(s_out)),
            ("saved_latency_ms", Col::F64(s_lat)),
            ("saved_usd", Col::F64(s_usd)),
            ("saved_unmeasured_tokens", Col::U64(s_unmeasured)),
            ("added_tokens_in_estimated", Col::F64(a_in)),
            ("added_tokens_out_estimated", Col::F64(a_out)),
            ("added_latency_ms_estimated", Col::F64(a_lat)),
            ("added_usd_estimated", Col::F64(a_usd)),
        ])?;
        write_csv(&mut df, out, true)
    }
}

/// `regressions.csv`: every skip of a turn the critic revised or refused.
pub struct RegressionsCsv;

impl Export for RegressionsCsv {
    fn file_name(&self) -> &'static str {
        "regressions.csv"
    }

    fn write(&self, r: &ReplayReport, out: &mut dyn Write) -> Result<(), String> {
        let g = r.regressions;
        let s = |f: &dyn Fn(&crate::replay::Regression) -> Option<String>| {
            Col::Str(g.iter().map(f).collect())
        };
        let mut df = frame(vec![
            ("source", s(&|x| Some(r.sources[x.source].clone()))),
            ("line", Col::U64(g.iter().map(|x| x.line).collect())),
            ("run_id", s(&|x| Some(x.run_id.clone()))),
            ("turn", s(&|x| x.turn.map(|t| t.to_string()))),
            (
                "variant",
                s(&|x| Some(r.plan.variants[x.variant].name.clone())),
            ),
            ("verdict", s(&|x| Some(x.verdict.as_str().to_string()))),
            ("draft", s(&|x| Some(x.draft.clone()))),
            ("revised_draft", s(&|x| x.revised_draft.clone())),
            ("refusal_message", s(&|x| x.refusal_message.clone())),
            ("skip_reason", s(&|x| Some(x.reasons.to_string()))),
        ])?;
        write_csv(&mut df, out, true)
    }
}

/// `matrix.csv`: per variant, baseline fire/skip by variant fire/skip, each
/// cell split by recorded verdict.
pub struct MatrixCsv;

impl Export for MatrixCsv {
    fn file_name(&self) -> &'static str {
        "matrix.csv"
    }

    fn write(&self, r: &ReplayReport, out: &mut dyn Write) -> Result<(), String> {
        let (mut variant, mut base, mut dec, mut cell) = (vec![], vec![], vec![], vec![]);
        let (mut turns, mut labelled, mut unlabelled, mut not_run) =
            (vec![], vec![], vec![], vec![]);
        let mut by_verdict: [Vec<u64>; 3] = Default::default();
        for (i, v) in r.plan.variants.iter().enumerate() {
            let m = &r.totals.variants[i].matrix;
            for b in [true, false] {
                for f in [true, false] {
                    let counts = m[b as usize][f as usize];
                    variant.push(Some(v.name.clone()));
                    base.push(Some(if b { "fire" } else { "skip" }.to_string()));
                    dec.push(Some(if f { "fire" } else { "skip" }.to_string()));
                    cell.push(Some(matrix_cell(b, f).to_string()));
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
        }
        let [approve, revise, refuse] = by_verdict;
        let mut df = frame(vec![
            ("variant", Col::Str(variant)),
            ("baseline", Col::Str(base)),
            ("decision", Col::Str(dec)),
            ("cell", Col::Str(cell)),
            ("turns", Col::U64(turns)),
            ("labelled", Col::U64(labelled)),
            ("unlabelled", Col::U64(unlabelled)),
            ("critic_not_run", Col::U64(not_run)),
            (VERDICT_LABELS[1], Col::U64(approve)),
            (VERDICT_LABELS[2], Col::U64(revise)),
            (VERDICT_LABELS[3], Col::U64(refuse)),
        ])?;
        write_csv(&mut df, out, true)
    }
}
