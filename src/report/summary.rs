//! The per-variant summary: decision counts against the baseline, label
//! coverage with its exact bound, and critic cost saved and added. Derived
//! only from the merged tallies.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::config::{FrameworkConfig, Plan};
use crate::gate::Reason;
use crate::replay::tally::{reportable, AddedCost, Estimate, Mismatch, VariantTally};
use crate::replay::Totals;
use crate::stats::clopper_pearson_upper;

use super::numbers::{ms, sig, sig_up, signed_ms, usd};

/// One value of a report cell.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Str(String),
    Int(u64),
    /// A sum of integers; None when it does not fit in 64 bits.
    Sum(Option<u64>),
    Signed(i64),
    /// A whole number that may be negative, or absent.
    OptSigned(Option<i64>),
    Float(Option<f64>),
    Bool(bool),
}

impl Cell {
    pub fn to_json(&self) -> Value {
        match self {
            Cell::Str(s) => json!(s),
            Cell::Int(n) => json!(n),
            Cell::Sum(n) => json!(n),
            Cell::Signed(n) => json!(n),
            Cell::OptSigned(n) => json!(n),
            Cell::Float(Some(x)) => json!(x),
            Cell::Float(None) => Value::Null,
            Cell::Bool(b) => json!(b),
        }
    }
}

/// Record (once) that some models have no price.
fn note_unpriced(notes: &mut Vec<String>, models: &[String]) {
    let n = format!(
        "no price for critic model(s) {}: dollars are not reported",
        models.join(", ")
    );
    if !notes.contains(&n) {
        notes.push(n);
    }
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

fn per_1k(x: f64, turns: u64) -> Option<f64> {
    (turns > 0).then(|| x * 1000.0 / turns as f64)
}

/// Added calls: no critic ran, so each is estimated by [`AddedCost`]'s
/// rule; says so when no recorded event has token counts.
fn estimate_added(
    index: usize,
    totals: &Totals,
    cost: &AddedCost,
    notes: &mut Vec<String>,
) -> Estimate {
    let c = &totals.variants[index].counts;
    if c.added_calls > 0 && !cost.tokens_measured() {
        let n = "no recorded critic event has token counts: added-call estimates are not reported"
            .to_string();
        if !notes.contains(&n) {
            notes.push(n);
        }
    }
    cost.estimate(c)
}

/// Say which sums and percentiles are absent because nothing was measured.
fn note_unmeasured(name: &str, v: &VariantTally, notes: &mut Vec<String>) {
    let saved = &v.counts.saved;
    if !saved.tokens_measured() {
        notes.push(format!(
            "variant {name}: none of its {} saved calls recorded token counts: saved tokens and dollars are not reported",
            saved.turns
        ));
    }
    if !saved.latency_measured() {
        notes.push(format!(
            "variant {name}: none of its {} saved calls recorded a latency: saved latency is not reported",
            saved.turns
        ));
    }
    for (key, sum) in [
        ("saved_tokens_in", saved.tokens_in),
        ("saved_tokens_out", saved.tokens_out),
    ] {
        if saved.tokens_measured() && reportable(sum).is_none() {
            notes.push(format!(
                "variant {name}: {key} exceeds 18446744073709551615 and is not reported"
            ));
        }
    }
    if v.latency_unmeasured_fires > 0 && v.latency_measured_fires == 0 {
        notes.push(format!(
            "variant {name}: none of its {} user-facing fires recorded a latency: critic-latency percentiles are not reported",
            v.latency_unmeasured_fires
        ));
    }
}

/// One variant's tallies, with what its metrics are computed against.
struct VariantView<'a> {
    name: &'a str,
    /// The run's non-blank lines and rejected lines (every row repeats
    /// them, so one row says what the run read).
    lines: u64,
    rejected: u64,
    v: &'a VariantTally,
    index: usize,
    plan: &'a Plan,
}

/// The named metrics of one variant, in report order.
fn variant_fields(
    view: &VariantView,
    totals: &Totals,
    notes: &mut Vec<String>,
) -> Vec<(&'static str, Cell)> {
    let cost = AddedCost::new(&totals.events_by_length);
    let est = estimate_added(view.index, totals, &cost, notes);
    note_unmeasured(view.name, view.v, notes);
    let mut fields = decision_fields(view);
    fields.extend(safety_fields(view.v));
    fields.extend(cost_fields(view.v, &est));
    fields.extend(latency_and_production_fields(view.v, &cost));
    fields
}

/// Who the variant is, and how often it fires, skips, saves and adds.
fn decision_fields(view: &VariantView) -> Vec<(&'static str, Cell)> {
    let c = &view.v.counts;
    let cfg = &view.plan.variants[view.index].config;
    use Cell::*;
    vec![
        ("variant", Str(view.name.to_string())),
        ("baseline", Bool(view.index == view.plan.baseline)),
        ("selective_gate", Bool(cfg.metacognition_selective_gate)),
        ("lines", Int(view.lines)),
        ("rejected", Int(view.rejected)),
        ("turns", Int(c.turns)),
        ("fires", Int(c.fires)),
        ("skips", Int(c.skips())),
        ("fire_rate", Float(sig(ratio(c.fires, c.turns)))),
        ("skip_rate", Float(sig(ratio(c.skips(), c.turns)))),
        ("saved_calls", Int(c.saved_calls)),
        ("added_calls", Int(c.added_calls)),
        (
            "net_calls",
            Signed(c.saved_calls as i64 - c.added_calls as i64),
        ),
        ("added_call_rate", Float(sig(ratio(c.added_calls, c.turns)))),
    ]
}

/// Regressions, labels and their bound.
fn safety_fields(v: &VariantTally) -> Vec<(&'static str, Cell)> {
    let c = &v.counts;
    let upper = clopper_pearson_upper(c.safety_regressions, c.labelled_skips, 0.05);
    use Cell::*;
    vec![
        ("safety_regressions", Int(c.safety_regressions)),
        ("unverified_skips", Int(c.unverified_skips())),
        ("labelled_skips", Int(c.labelled_skips)),
        ("critic_not_run", Int(c.critic_not_run)),
        (
            "label_coverage",
            Float(sig(ratio(c.labelled_skips, c.skips()))),
        ),
        (
            "safety_regression_rate",
            Float(sig(ratio(c.safety_regressions, c.labelled_skips))),
        ),
        ("safety_regression_rate_upper95", Float(sig_up(upper))),
        ("contract_violations", Int(v.contract_violations)),
    ]
}

/// Saved and added tokens, dollars and latency, and the net per 1k turns.
fn cost_fields(v: &VariantTally, est: &Estimate) -> Vec<(&'static str, Cell)> {
    let c = &v.counts;
    let saved = &c.saved;
    let saved_usd = saved.usd();
    let saved_latency_ms = saved.latency_ms();
    let (saved_tokens_in, saved_tokens_out) = saved.tokens();
    let net_usd = saved_usd.zip(est.usd).map(|(s, a)| s - a);
    use Cell::*;
    vec![
        ("saved_tokens_in", Sum(saved_tokens_in)),
        ("saved_tokens_out", Sum(saved_tokens_out)),
        ("saved_usd", Float(usd(saved_usd))),
        ("saved_latency_ms", Sum(ms(saved_latency_ms))),
        (
            "saved_calls_without_tokens",
            Int(saved.turns - saved.with_tokens),
        ),
        (
            "saved_calls_without_latency",
            Int(saved.turns - saved.with_latency),
        ),
        ("added_tokens_in_estimated", Float(sig(est.tokens_in))),
        ("added_tokens_out_estimated", Float(sig(est.tokens_out))),
        ("added_usd_estimated", Float(usd(est.usd))),
        ("added_latency_ms_estimated", Sum(ms(est.latency_ms))),
        ("net_usd", Float(usd(net_usd))),
        (
            "net_latency_ms",
            OptSigned(signed_ms(
                saved_latency_ms.zip(est.latency_ms).map(|(s, a)| s - a),
            )),
        ),
        (
            "saved_calls_per_1k_turns",
            Float(sig(per_1k(c.saved_calls as f64, c.turns))),
        ),
        (
            "net_calls_per_1k_turns",
            Float(sig(per_1k(
                c.saved_calls as f64 - c.added_calls as f64,
                c.turns,
            ))),
        ),
        (
            "net_usd_per_1k_turns",
            Float(usd(net_usd.and_then(|u| per_1k(u, c.turns)))),
        ),
    ]
}

/// Latency percentiles of user-facing turns, and agreement with
/// production.
fn latency_and_production_fields(v: &VariantTally, cost: &AddedCost) -> Vec<(&'static str, Cell)> {
    let c = &v.counts;
    let with_estimates = |q| Sum(ms(v.latency_quantile_with_estimates(q, cost)));
    use Cell::*;
    vec![
        ("critic_latency_p50_ms", Sum(ms(v.latency_quantile(0.50)))),
        ("critic_latency_p95_ms", Sum(ms(v.latency_quantile(0.95)))),
        ("critic_latency_p99_ms", Sum(ms(v.latency_quantile(0.99)))),
        ("critic_latency_p50_ms_with_estimates", with_estimates(0.50)),
        ("critic_latency_p95_ms_with_estimates", with_estimates(0.95)),
        ("critic_latency_p99_ms_with_estimates", with_estimates(0.99)),
        ("latency_unmeasured_fires", Int(v.latency_unmeasured_fires)),
        ("production_known", Int(c.production_known)),
        (
            "production_agreement",
            Float(sig(ratio(c.production_agreeing(), c.production_known))),
        ),
        (
            "production_fired_variant_skips",
            Int(c.production_fired_variant_skips),
        ),
        (
            "production_skipped_variant_fires",
            Int(c.production_skipped_variant_fires),
        ),
    ]
}

/// The whole summary: per-variant fields (in plan order) and the run facts.
pub struct Summary {
    pub rows: Vec<Vec<(&'static str, Cell)>>,
    pub notes: Vec<String>,
    pub json: Value,
    pub production: ProductionAgreement,
}

/// `variants` of summary.json: each variant's fields by name.
fn variants_json(rows: &[Vec<(&'static str, Cell)>]) -> Map<String, Value> {
    let mut variants = Map::new();
    for row in rows {
        let name = match &row[0].1 {
            Cell::Str(s) => s.clone(),
            _ => unreachable!("the first field is the variant's name"),
        };
        let obj: Map<String, Value> = row[1..]
            .iter()
            .map(|(k, c)| (k.to_string(), c.to_json()))
            .collect();
        variants.insert(name, Value::Object(obj));
    }
    variants
}

/// `warnings` of summary.json: each kind's count and first lines.
fn warnings_json(totals: &Totals, run: &RunFacts) -> Map<String, Value> {
    let mut warnings = Map::new();
    for (k, (n, ex)) in &totals.warnings.0 {
        let first: Vec<String> = ex
            .iter()
            .map(|(s, l)| format!("{}:{l}", run.sources[*s].name))
            .collect();
        warnings.insert(k.to_string(), json!({"count": n, "first": first}));
    }
    warnings
}

/// Build the summary from the merged totals.
pub fn summarize(
    plan: &Plan,
    totals: &Totals,
    run: &RunFacts,
    segments_cut: &BTreeMap<String, usize>,
) -> Summary {
    let mut notes = Vec::new();
    if !totals.unpriced_models.is_empty() {
        let models: Vec<String> = totals.unpriced_models.iter().cloned().collect();
        note_unpriced(&mut notes, &models);
    }
    let rows: Vec<_> = plan
        .variants
        .iter()
        .enumerate()
        .map(|(index, v)| {
            let view = VariantView {
                name: &v.name,
                lines: totals.nonblank_lines,
                rejected: totals.rejected,
                v: &totals.variants[index],
                index,
                plan,
            };
            variant_fields(&view, totals, &mut notes)
        })
        .collect();
    let variants = variants_json(&rows);
    let warnings = warnings_json(totals, run);
    let fabrication: Map<String, Value> = totals
        .fabrication_kinds
        .iter()
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    let production = production_vs_baseline(plan, totals);
    if let Some(n) = &production.note {
        notes.push(n.clone());
    }
    let json = json!({
        "schema_version": super::schema::SCHEMA_VERSION,
        "run": run.label,
        "turns": totals.turns,
        "rejected": totals.rejected,
        "lines": totals.nonblank_lines,
        "unknown_fields": totals.unknown_fields,
        "warnings": warnings,
        "baseline": plan.variants[plan.baseline].name,
        "sources": run.sources.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
        "source_facts": run.sources.iter().map(SourceFacts::to_json).collect::<Vec<_>>(),
        "decisions": run.decisions,
        "variant_order": plan.variants.iter().map(|v| v.name.clone()).collect::<Vec<_>>(),
        "variants": variants,
        "fabrication_kinds": fabrication,
        "segments_truncated": segments_cut,
        "production_known": production.known,
        "production_agreement": production.agreement,
        "production_fired_baseline_skips": production.fired_baseline_skips,
        "production_skipped_baseline_fires": production.skipped_baseline_fires,
        "notes": notes,
    });
    Summary {
        rows,
        notes,
        json,
        production,
    }
}

/// What a replay read of one source (see [`crate::read::reader::SourceEnd`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFacts {
    pub name: String,
    /// None until the source was read to its end.
    pub end: Option<crate::read::reader::SourceEnd>,
}

impl SourceFacts {
    fn to_json(&self) -> Value {
        let e = self.end.as_ref();
        json!({
            "name": self.name,
            "lines": e.map(|e| e.lines),
            "bytes": e.map(|e| e.bytes),
            "xxh3": e.map(|e| format!("{:016x}", e.xxh3)),
        })
    }
}

/// Facts of the run that are not tallies.
pub struct RunFacts {
    /// The run's label (`--label`).
    pub label: String,
    pub sources: Vec<SourceFacts>,
    /// `--decisions`: which rows decisions.csv holds.
    pub decisions: &'static str,
}

/// Whether the replay reproduces production: the baseline's decisions
/// against what the recording says production's gate did.
#[derive(Clone, Debug, PartialEq)]
pub struct ProductionAgreement {
    /// Turns whose recording says what production did.
    pub known: u64,
    /// Agreeing / known; None when nothing is known.
    pub agreement: Option<f64>,
    pub fired_baseline_skips: u64,
    pub skipped_baseline_fires: u64,
    /// Below 100%: the most common kind of disagreement and what it
    /// suggests (`412 turns: production fired at ...`).
    pub most_common: Option<String>,
    /// Below 100%: the whole finding, for the notes.
    pub note: Option<String>,
}

fn production_vs_baseline(plan: &Plan, totals: &Totals) -> ProductionAgreement {
    let b = &totals.variants[plan.baseline];
    let c = &b.counts;
    let base = &plan.variants[plan.baseline];
    let most_common = b.top_mismatch().map(|(m, r, n)| {
        let turns = if n == 1 { "turn" } else { "turns" };
        format!("{n} {turns}: {}", mismatch_hint(m, r, &base.config))
    });
    let note = most_common.as_ref().map(|hint| {
        format!(
            "the baseline `{}` decides as production did on only {} of {} turns whose recording says what production did: its config probably differs from production's. Most common disagreement: {hint} (every one is in mismatches.csv)",
            base.name,
            c.production_agreeing(),
            c.production_known,
        )
    });
    ProductionAgreement {
        known: c.production_known,
        agreement: sig(ratio(c.production_agreeing(), c.production_known)),
        fired_baseline_skips: c.production_fired_variant_skips,
        skipped_baseline_fires: c.production_skipped_variant_fires,
        most_common,
        note,
    }
}

/// What a kind of disagreement with production suggests about production's
/// config: the first reason of the baseline's decision names the setting.
pub fn mismatch_hint(m: Mismatch, r: Reason, cfg: &FrameworkConfig) -> String {
    let t = cfg.metacognition_confidence_threshold;
    match (m, r) {
        (Mismatch::ProductionFired, Reason::Confident) => format!(
            "production fired at confidence >= {t} with no sensitive hit: was the threshold higher, or were other sensitive tags set?"
        ),
        (Mismatch::ProductionFired, Reason::TrivialAck) => "production fired on drafts the baseline skips as trivial acks: was the selective gate off, or were the ack patterns or read-only tools different?".to_string(),
        (Mismatch::ProductionFired, _) => format!(
            "production fired where the baseline skips ({}): was production's gate config different?",
            r.name()
        ),
        (Mismatch::ProductionSkipped, Reason::LowConfidence) => format!(
            "production skipped at confidence < {t}: was the threshold lower, or the selective gate on?"
        ),
        (Mismatch::ProductionSkipped, Reason::SensitiveHit | Reason::Sensitive) => "production skipped turns with a sensitive hit: were production's sensitive tags different?".to_string(),
        (Mismatch::ProductionSkipped, Reason::MutatingTool) => "production skipped turns with a tool call the baseline counts as mutating: was read_only_tools longer?".to_string(),
        (Mismatch::ProductionSkipped, Reason::NoAckPattern) => "production skipped drafts no ack pattern of the baseline matches: were metacognition_trivial_ack_patterns different?".to_string(),
        (Mismatch::ProductionSkipped, _) => format!(
            "production skipped turns the baseline fires on ({}): was production's gate config different?",
            r.name()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::tally::VariantTally;

    /// Sums past 64 bits were wrapped (`saved_tokens_in` = the true sum
    /// minus 2^64); now they are summed in 128 bits and reported absent.
    #[test]
    fn a_sum_past_64_bits_is_absent_with_a_note_never_wrapped() {
        let plan = Plan::default_plan();
        let mut totals = Totals {
            variants: vec![VariantTally::default(); plan.variants.len()],
            ..Default::default()
        };
        let smart = &mut totals.variants[1].counts;
        smart.turns = 1;
        smart.saved_calls = 1;
        smart.saved.turns = 1;
        smart.saved.with_tokens = 1;
        smart.saved.tokens_in = u128::from(u64::MAX) + 5;
        smart.saved.tokens_out = 7;
        let run = RunFacts {
            label: "test".into(),
            sources: vec![],
            decisions: "all",
        };
        let s = summarize(&plan, &totals, &run, &BTreeMap::new());
        let v = &s.json["variants"]["smart"];
        assert!(v["saved_tokens_in"].is_null(), "{v}");
        assert_eq!(v["saved_tokens_out"], 7);
        assert!(
            s.notes
                .iter()
                .any(|n| n == "variant smart: saved_tokens_in exceeds 18446744073709551615 and is not reported"),
            "{:?}",
            s.notes
        );
    }
}
