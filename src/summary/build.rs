//! The per-variant summary: decision counts against the baseline, label
//! coverage with its exact bound, and critic cost saved and added. Derived
//! only from the merged tallies.

use super::metrics::ratio_of;
use std::collections::BTreeMap;

use crate::config::{FrameworkConfig, Plan};
use crate::gate::Reason;
use crate::read::provenance::{Origin, Signal};
use crate::replay::tally::{reportable, AddedCost, Estimate, Mismatch, VariantTally};
use crate::replay::Totals;
use crate::stats::{certificate_upper, clopper_pearson_upper, run_level_upper, RunLabels};

use super::figures::{RunSummary, SourceSummary, VariantSummary, WarningSummary};
use super::numbers::{ms, sig, sig_up, signed_ms, usd};

/// How many unpriced models the note names, and how long each may be:
/// the names come from traffic.
const UNPRICED_NAMED: usize = 10;
const UNPRICED_NAME_CHARS: usize = 64;

/// Record (once) that some models have no price: each name quoted as JSON
/// (a newline or an escape sequence in a recorded model is shown, never
/// printed), cut, and at most [`UNPRICED_NAMED`] of them.
fn note_unpriced(notes: &mut Vec<String>, models: &[String], more_seen: bool) {
    let named: Vec<String> = models
        .iter()
        .take(UNPRICED_NAMED)
        .map(|m| {
            let short: String = m.chars().take(UNPRICED_NAME_CHARS).collect();
            let cut = if short.len() < m.len() { "…" } else { "" };
            serde_json::to_string(&short).expect("a string serialises") + cut
        })
        .collect();
    let more = match (models.len().saturating_sub(UNPRICED_NAMED), more_seen) {
        (0, false) => String::new(),
        (n, false) => format!(" and {n} more"),
        (_, true) => " and more".to_string(),
    };
    let n = format!(
        "no price for critic model(s) {}{more}: a dollar figure that includes any of their calls is not reported (figures without them are)",
        named.join(", ")
    );
    if !notes.contains(&n) {
        notes.push(n);
    }
}

/// Dimensions whose later new values were counted under `(other)` while
/// the replay ran (a dimension's 100,000 values, or the cells of every
/// dimension together): their rows in segments.csv are not each value's.
fn note_segments_capped(totals: &Totals, notes: &mut Vec<String>) {
    if totals.segments_capped.is_empty() {
        return;
    }
    let dims: Vec<String> = totals
        .segments_capped
        .keys()
        .take(5)
        .map(|d| super::text::one_line(d).into_owned())
        .collect();
    let more = match totals.segments_capped.len().saturating_sub(5) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    notes.push(format!(
        "segments: past {} distinct values of a dimension, or {} segment cells (values times variants) of every dimension together, later new values are counted under (other), so some rows of segments.csv hold several values: {}{more}",
        crate::replay::segments::MAX_TRACKED_VALUES,
        crate::replay::segments::MAX_SEGMENT_CELLS,
        dims.join(", ")
    ));
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
    /// The baseline's tallies (for shares of its calls).
    base: &'a VariantTally,
    index: usize,
    plan: &'a Plan,
}

/// One variant's figures, step by step.
fn variant_summary(view: &VariantView, totals: &Totals, notes: &mut Vec<String>) -> VariantSummary {
    // The events bucketed by the lengths of its own deployment's drafts.
    let cost = totals.added_cost(view.plan.deployments().1[view.index]);
    let est = estimate_added(view.index, totals, &cost, notes);
    note_unmeasured(view.name, view.v, notes);
    let mut s = VariantSummary::default();
    // The figures declared a count of the tally, then the rest.
    s.set_counts(&view.v.counts);
    decision_fields(view, &mut s);
    safety_fields(view.v, &mut s);
    if let Some(d) = totals.design.as_ref() {
        design_fields(d, view, totals.turns, &mut s, notes);
    }
    cost_fields(view.v, &est, &mut s);
    latency_and_production_fields(view.v, &cost, &mut s);
    // The rates declared a count over a count, from the counts.
    s.set_ratios();
    s
}

/// Who the variant is, and how often it fires, skips, saves and adds.
fn decision_fields(view: &VariantView, s: &mut VariantSummary) {
    let c = &view.v.counts;
    let cfg = &view.plan.variants[view.index].config;
    s.variant = view.name.to_string();
    s.baseline = view.index == view.plan.baseline;
    s.production = view.index == view.plan.production();
    s.selective_gate = cfg.metacognition_selective_gate;
    s.lines = view.lines;
    s.rejected = view.rejected;
    s.skips = c.skips();
    s.net_calls = c.saved_calls as i64 - c.added_calls as i64;
    s.critic_calls = c.critic_calls();
    let base_calls = view.base.counts.critic_calls();
    s.saved_call_share = match s.baseline {
        true => None,
        false => ratio_of(Some(c.saved_calls), base_calls),
    };
}

/// Regressions, labels and their bounds: the risk figures on the new
/// skips (runs as the sampling unit), the all-skip ones beside them.
fn safety_fields(v: &VariantTally, s: &mut VariantSummary) {
    let c = &v.counts;
    s.new_unlabelled_no_verdict = c.new_unlabelled_no_verdict();
    run_figures(v.run_labels(), v.run_worst_case(), s);
    s.all_skips_unlabelled = c.unverified_skips();
    if s.production {
        s.production_skips = Some(c.skips());
        s.production_skips_unlabelled = Some(c.unverified_skips());
    }
    s.all_skips_regression_rate_upper95 = sig_up(clopper_pearson_upper(
        c.safety_regressions,
        c.labelled_skips,
        0.05,
    ));
    s.contract_violations = v.contract_violations;
}

/// The figures of production's critic sample (a replay with a plan).
fn sample_fields(f: &crate::replay::design::SampleFigures, s: &mut VariantSummary) {
    s.sampled_skips = Some(f.sampled);
    s.sampled_labelled = Some(f.labelled);
    s.sampled_labelled_shadow = Some(f.labelled_shadow);
    s.sampled_labelled_production = Some(f.labelled_production);
    s.sampled_failed = Some(f.failed);
    s.sampled_unreviewed = Some(f.unreviewed);
    s.production_fires_without_turn_id = Some(f.keyed.unkeyed_fires);
    s.skip_regression_rate_estimate = sig(f.estimate);
    s.skip_regression_rate_upper95 = sig_up(f.upper);
    s.skip_regression_rate_worst_case_upper95 = sig_up(f.worst);
    s.harmful_skips_per_1k_turns_upper95 = sig_up(f.harmful_per_1k_upper);
    s.skip_bound_method = f.method.map(|m| m.as_str().to_string());
}

/// The figures of a plan's sample on this variant's row: production's
/// skips on production's variant; an audit's on each variant whose
/// unlabelled new skips it bounds (the audited one, and any other with a
/// draw among its own), with the two-phase bound. Where an audit gives the
/// audited variant no bound, a note says why and the row has none.
fn design_fields(
    d: &crate::replay::design::DesignTally,
    view: &VariantView,
    turns: u64,
    s: &mut VariantSummary,
    notes: &mut Vec<String>,
) {
    let audited = d.variant == view.name;
    if d.population == crate::replay::design::Population::ProductionSkips {
        if audited {
            let f = d.figures(turns, 0.05);
            sample_fields(&f, s);
            note_shared_coins(view.name, &f, notes);
            notes.extend(unkeyed_fires(view.name, &f.keyed));
        }
        return;
    }
    let Some(two) = audit_of(d, view.name, &view.v.counts) else {
        if audited {
            note_unbounded_audit(view.name, &d.figures(turns, 0.05), notes);
        }
        return;
    };
    let f = two.sample.figures(turns, 0.05);
    sample_fields(&f, s);
    two_phase_fields(&two, turns, s);
}

/// Why an audit bounds none of the audited variant's unlabelled new skips.
fn note_unbounded_audit(
    variant: &str,
    f: &crate::replay::design::SampleFigures,
    notes: &mut Vec<String>,
) {
    if f.run_keyed > 0 || f.shared_keys > 0 {
        note_shared_coins(variant, f, notes);
        return;
    }
    notes.push(format!(
        "variant {variant}: the audit gives no two-phase bound on this traffic: {} of its {} unlabelled new skips were drawn, {} of them labelled (a shadow verdict or a failed call); its worst case stands",
        f.sampled,
        f.production_skips,
        f.labelled + f.failed
    ));
}

/// An audit's two-phase parts on a variant's new skips, where its sample
/// gives them a bound (a draw among them, each with its own coin): what
/// the summary publishes at 95% and calibrate tests at its own levels.
/// None elsewhere: the variant's worst case stands, as without a plan.
pub(crate) fn audit_of(
    d: &crate::replay::design::DesignTally,
    variant: &str,
    c: &crate::replay::tally::Counts,
) -> Option<crate::replay::design::TwoPhase> {
    let two = d.two_phase(variant, c)?;
    let drew = two.sample.strata.values().any(|s| s.drawn > 0);
    (drew && two.upper(0.05, true).is_some()).then_some(two)
}

/// A two-phase bound on the variant's new skips (an audit plan): the
/// labelled new skips' regressions counted as they are, plus the sample's
/// bound on those among the unlabelled ones it covers (and any it does
/// not cover, each a regression), over every new skip; and the same with
/// the sample's worst case. A bound on this traffic's new skips, whatever
/// made labels missing.
fn two_phase_fields(two: &crate::replay::design::TwoPhase, turns: u64, s: &mut VariantSummary) {
    s.new_skip_regression_rate_two_phase_upper95 = sig_up(two.upper(0.05, false));
    s.new_skip_regression_rate_two_phase_worst_case_upper95 = sig_up(two.upper(0.05, true));
    // Harm on the audited row is of every new skip: the labelled ones'
    // regressions as counted plus the bound on the unlabelled.
    s.harmful_skips_per_1k_turns_upper95 = sig_up(
        two.upper_count(0.05, false)
            .filter(|_| turns > 0)
            .map(|m| m as f64 * 1000.0 / turns as f64),
    );
}

/// What a summary (and monitor) says of production's fires on its gate's
/// skips that record no `turn_id`: the plan's coin cannot match them to
/// the exploration gate's draws. Said only where they are no more than an
/// exploration gate draws there: more is a gate that reviewed them (a
/// legacy recording), whose reviews no coin drew.
pub(crate) fn unkeyed_fires(variant: &str, k: &crate::replay::design::Keyed) -> Option<String> {
    let n = k.unkeyed_fires;
    let (turns, record) = match n {
        0 => return None,
        _ if k.reviews_unkeyed() => return None,
        1 => ("turn", "records"),
        _ => ("turns", "record"),
    };
    Some(format!(
        "variant {variant}: production's critic ran on {n} {turns} its gate skips that {record} no turn_id: the exploration gate draws by symfonic's run id, so without turn_id the plan's coin cannot tell its draws (one the fallback key draws matches by chance; the others read as disagreements with production, and their verdicts are left out of the sample); record turn_id (symfonic's run id)"
    ))
}

/// Why a sample with labels has no bound: skips that share a coin.
fn note_shared_coins(
    variant: &str,
    f: &crate::replay::design::SampleFigures,
    notes: &mut Vec<String>,
) {
    if f.run_keyed == 0 && f.shared_keys == 0 {
        return;
    }
    notes.push(format!(
        "variant {variant}: the plan's sample has no bound: {} of the sampled population's skips have no turn_id and no turn (the coin's key is the run's id, so a run's skips are drawn together), and {} draws share a key with an earlier one (duplicated lines or reused ids); the bound needs a coin per turn: record turn_id or turn",
        f.run_keyed, f.shared_keys
    ));
}

/// The figures of the run-level bound, from the labelled new skips by run
/// and every new skip by run (each unlabelled one a regression: the worst
/// case). One function for the replay and for `check`, which works them
/// out again from a folder's decision rows.
pub(crate) fn run_figures(labels: RunLabels, worst: RunLabels, s: &mut VariantSummary) {
    let labels = published(labels);
    let worst = published(worst);
    s.safety_regression_rate_upper95 = sig_up(run_level_upper(&labels, 0.05));
    s.safety_regression_rate_certificate_upper95 = sig_up(certificate_upper(&labels, 0.05));
    s.safety_regression_rate_worst_case_upper95 = sig_up(certificate_upper(&worst, 0.05));
    s.labelled_runs = labels.runs;
    s.effective_runs = (labels.labels > 0).then_some(labels.effective_runs);
    s.design_effect = labels.design_effect;
    s.effective_labels = (labels.labels > 0)
        .then(|| labels.effective_labels())
        .and_then(|e| sig(Some(e)));
    s.new_skip_runs = worst.runs;
    s.worst_case_design_effect = worst.design_effect;
    s.worst_case_effective_runs = (worst.labels > 0).then_some(worst.effective_runs);
}

/// The run-level figures with the design effect rounded as the summary
/// publishes it, so every bound can be worked out again from the summary
/// (`check` and `calibrate` do).
pub(crate) fn published(mut l: RunLabels) -> RunLabels {
    l.design_effect = sig(l.design_effect);
    l.effective_runs = sig(Some(l.effective_runs)).unwrap_or(0.0);
    l
}

/// Saved and added tokens, dollars and latency, and the net per 1k turns.
fn cost_fields(v: &VariantTally, est: &Estimate, s: &mut VariantSummary) {
    let c = &v.counts;
    let saved = &c.saved;
    let saved_usd = saved.usd();
    let saved_latency_ms = saved.latency_ms();
    let net_usd = saved_usd.zip(est.usd).map(|(s, a)| s - a);
    (s.saved_tokens_in, s.saved_tokens_out) = saved.tokens();
    s.saved_usd = usd(saved_usd);
    s.saved_latency_ms = ms(saved_latency_ms);
    s.saved_calls_without_tokens = saved.turns - saved.with_tokens;
    s.saved_calls_without_latency = saved.turns - saved.with_latency;
    s.added_tokens_in_estimated = sig(est.tokens_in);
    s.added_tokens_out_estimated = sig(est.tokens_out);
    s.added_usd_estimated = usd(est.usd);
    s.added_latency_ms_estimated = ms(est.latency_ms);
    s.net_usd = usd(net_usd);
    s.net_latency_ms = signed_ms(saved_latency_ms.zip(est.latency_ms).map(|(s, a)| s - a));
    s.saved_calls_per_1k_turns = sig(per_1k(c.saved_calls as f64, c.turns));
    s.added_calls_per_1k_turns = sig(per_1k(c.added_calls as f64, c.turns));
    s.net_calls_per_1k_turns = sig(per_1k(c.saved_calls as f64 - c.added_calls as f64, c.turns));
    s.net_usd_per_1k_turns = usd(net_usd.and_then(|u| per_1k(u, c.turns)));
}

/// Latency percentiles of user-facing turns, and agreement with
/// production.
fn latency_and_production_fields(v: &VariantTally, cost: &AddedCost, s: &mut VariantSummary) {
    let c = &v.counts;
    let with_estimates = |q| ms(v.latency_quantile_with_estimates(q, cost));
    s.critic_latency_p50_ms = ms(v.latency_quantile(0.50));
    s.critic_latency_p95_ms = ms(v.latency_quantile(0.95));
    s.critic_latency_p99_ms = ms(v.latency_quantile(0.99));
    s.critic_latency_p50_ms_with_estimates = with_estimates(0.50);
    s.critic_latency_p95_ms_with_estimates = with_estimates(0.95);
    s.critic_latency_p99_ms_with_estimates = with_estimates(0.99);
    s.latency_estimate_pool = cost
        .pool_sizes(&v.unmeasured_fires_by_length)
        .iter()
        .map(|p| p.1)
        .min()
        .filter(|n| *n > 0);
    s.latency_unmeasured_fires = v.latency_unmeasured_fires;
    s.production_agreement = ratio_of(Some(c.production_agreeing()), c.production_known);
    // A flag-off gate makes no ack skip: its risky figures are null.
    let smart = s.selective_gate;
    s.risky_skips = smart.then_some(c.risky_skips);
    s.risky_labelled_skips = smart.then_some(c.risky_labelled_skips);
    s.risky_safety_regressions = smart.then_some(c.risky_safety_regressions);
    s.risky_regression_rate_upper95 = sig_up(run_level_upper(&published(v.run_risky()), 0.05));
}

/// The whole summary: the figures of summary.json (every variant's in
/// plan order) and the production finding.
pub struct Summary {
    pub run: RunSummary,
    pub production: ProductionAgreement,
}

/// `provenance` of summary.json: per signal, turns by origin.
fn provenance(totals: &Totals) -> BTreeMap<String, BTreeMap<String, u64>> {
    Signal::ALL
        .iter()
        .map(|s| {
            let by_origin = Origin::ALL
                .iter()
                .map(|o| {
                    (
                        o.as_str().to_string(),
                        totals.provenance[*s as usize][*o as usize],
                    )
                })
                .collect();
            (s.as_str().to_string(), by_origin)
        })
        .collect()
}

/// What a replay takes for a signal no record holds, and what follows.
fn unknown_effect(s: Signal, plan: &Plan) -> String {
    let b = &plan.variants[plan.baseline];
    match s {
        Signal::Draft => "the draft replayed is empty or cut (a skip of it is no evidence for the full reply)".into(),
        Signal::ToolCalls => "taken as no tool call (a turn that did call a mutating tool loses that floor)".into(),
        Signal::Intent => "taken as no verdict (a turn whose verdict was ambiguous loses that floor)".into(),
        Signal::Findings => "taken as none (a turn with findings loses the fabrication floor)".into(),
        // The smart gate does not read confidence: only a flag-off variant
        // turns the cold start into fires.
        Signal::Confidence if b.config.metacognition_selective_gate => "taken as symfonic's cold start 0.5; the baseline's smart gate does not read confidence, but a variant with the legacy gate (flag off) fires on every such turn whose threshold is above 0.5".to_string(),
        Signal::Confidence => format!(
            "taken as symfonic's cold start 0.5, so a legacy gate fires on every such turn whose threshold is above 0.5 (the baseline {}'s is {})",
            b.name, b.config.metacognition_confidence_threshold
        ),
        Signal::Sensitive => "taken as no sensitive hit (a turn with one loses the sensitive floor)".into(),
        Signal::Critic => "production's gate unknown: not a label, and left out of production agreement".into(),
    }
}

/// Below this median, recorded critic latencies are not a model call's: an
/// Opus critic round-trip takes seconds; a test harness or a stubbed
/// critic answers in milliseconds.
const HARNESS_LATENCY_MS: f64 = 100.0;

/// A note when the recorded critic latencies are too short for a model
/// call: the latency figures then describe the recording, not production.
fn note_harness_latency(totals: &Totals, notes: &mut Vec<String>) {
    let mut all = crate::replay::tally::Histogram::default();
    for h in &totals.latency_by_length {
        all.merge(h);
    }
    if let Some(median) = all.quantile(0.5).filter(|m| *m < HARNESS_LATENCY_MS) {
        notes.push(format!(
            "recorded critic latencies are too short for a model call: median {median} ms over {} calls, where a critic model's round-trip takes seconds (a test harness or a stubbed critic?); the latency figures describe the recording, not a production critic",
            all.count
        ));
    }
}

/// A note per signal some turns lack, with what the replay took it as;
/// production agreement shows how far those assumptions hold.
/// Which variants run with a deployment of their own, and its keys: their
/// figures are of the turns as that deployment derived them.
fn note_own_deployments(plan: &Plan, notes: &mut Vec<String>) {
    for v in &plan.variants {
        if let Some(keys) = v
            .deployment
            .as_ref()
            .and_then(|d| d.differences(&plan.deployment))
        {
            notes.push(format!(
                "variant {} runs with a deployment of its own, {keys} over [deployment]: its figures are of the turns as that deployment derived them",
                v.name
            ));
        }
    }
}

fn note_provenance(plan: &Plan, totals: &Totals, notes: &mut Vec<String>) {
    for s in Signal::ALL {
        let n = totals.provenance[s as usize][Origin::Unknown as usize];
        if n > 0 {
            notes.push(format!(
                "{} unknown on {n} of {} turns: {}",
                s.as_str(),
                totals.turns,
                unknown_effect(s, plan)
            ));
        }
    }
    for (what, n) in &totals.import_counts {
        let what_it_is = match what.as_str() {
            "runs_without_root" => "runs of the trace have spans but no root span (symfonic.run): not replayed",
            "stream_runs" => "runs of the trace were streamed (stream, stream_typed: no critic, no fabrication check): not turns",
            "root_spans_left_out" => "root spans repeat a run id already seen: each run's first root is used",
            "critic_spans_left_out" => "critic spans are of runs with more than one: a run's turn is its last critic call",
            "foreign_spans" => "spans of other instrumentation (not symfonic.*) were left out",
            "critic_answers_unparsed" => "critic answers are not a JSON object with a known verdict: read as approve, as production read them (the critic ran; its verdict says nothing)",
            "runs_with_error" => "runs ended in an error (the root span's status is ERROR): the reply, and the critic call, may never have been made",
            "repeated_spans" => "spans were sent again (same traceId and spanId: an exporter's retry) and counted once",
            "unreadable_critic_tokens" => "critic spans write a token count that is not a whole number: those tokens are unknown, not 0",
            "unknown_symfonic_spans" => "symfonic spans are of kinds this version does not read (kept with their runs, unused)",
            _ => continue,
        };
        notes.push(format!("{n} {what_it_is}"));
    }
    let derived = totals.provenance[Signal::Findings as usize][Origin::Derived as usize];
    if derived > 0
        && plan.deployment.fabrication_check_mode != crate::deployment::FabricationMode::Off
    {
        notes.push(format!(
            "findings derived on {derived} turns without the hydrated context (no recording holds it): an identifier grounded only there is a finding here that production did not have"
        ));
    }
}

/// `warnings` of summary.json: each kind's count and first lines.
fn warnings(totals: &Totals, run: &RunFacts) -> BTreeMap<String, WarningSummary> {
    totals
        .warnings
        .0
        .iter()
        .map(|(k, (n, ex))| {
            let first = ex
                .iter()
                .map(|(s, l)| format!("{}:{l}", run.sources[*s].name))
                .collect();
            (k.name().to_string(), WarningSummary { count: *n, first })
        })
        .collect()
}

/// The labels a variant's bound needs before [`note_turns_as_runs`]
/// reads one label a run as a sign.
const TURNS_AS_RUNS_MIN_LABELS: u64 = 10;

/// Each labelled run of a variant holds one label while the turns carry
/// fewer sessions than there are such runs: `run_id` probably names a turn
/// (symfonic's run id: one `run()` a user turn), and the bounds, which
/// take runs as the sampling unit, treat the correlated turns of one
/// conversation as independent (on strongly clustered traffic the bound
/// then covered 67.7%, against 96.3% with conversation ids).
fn note_turns_as_runs(plan: &Plan, totals: &Totals, notes: &mut Vec<String>) {
    let dim = crate::replay::segments::scope_dimension("session");
    let Some(sessions) = totals.segments.get(&dim) else {
        return;
    };
    let sessions = sessions.len() as u64;
    for (v, t) in plan.variants.iter().zip(&totals.variants) {
        let l = t.run_labels();
        if l.labels >= TURNS_AS_RUNS_MIN_LABELS && l.runs == l.labels && sessions < l.runs {
            notes.push(format!(
                "every labelled run of {} holds one label, while its turns carry scope.session ({sessions} sessions over those {} runs): if run_id names a turn rather than its conversation, the bounds count a conversation's correlated turns as independent and read too low; write the conversation (the session) as run_id and the turn's own id as turn_id, as the import of a trace does",
                v.name, l.runs
            ));
        }
    }
}

/// Every variant's figures, in plan order.
fn variant_summaries(plan: &Plan, totals: &Totals, notes: &mut Vec<String>) -> Vec<VariantSummary> {
    plan.variants
        .iter()
        .enumerate()
        .map(|(index, v)| {
            let view = VariantView {
                name: &v.name,
                lines: totals.nonblank_lines,
                rejected: totals.rejected,
                v: &totals.variants[index],
                base: &totals.variants[plan.baseline],
                index,
                plan,
            };
            variant_summary(&view, totals, notes)
        })
        .collect()
}

/// Keys that look like the format's, named.
fn note_misnamed(totals: &Totals, notes: &mut Vec<String>) {
    if totals.misnamed_keys.is_empty() {
        return;
    }
    let named: Vec<String> = totals
        .misnamed_keys
        .iter()
        .map(|(k, m)| format!("`{k}` (the format's `{m}`?)"))
        .collect();
    let more = match totals.misnamed_more {
        true => format!(" and more (the first {} by name)", named.len()),
        false => String::new(),
    };
    notes.push(format!(
        "keys the format does not define look like ones it does, so what they were meant to record is absent: {}{more}; rename them (the misnamed_field warning gives their first lines)",
        named.join(", ")
    ));
}

/// Build the summary from the merged totals.
pub(crate) fn summarize(
    plan: &Plan,
    totals: &Totals,
    run: &RunFacts,
    segments_cut: &BTreeMap<String, usize>,
) -> Summary {
    let mut notes = run.notes.clone();
    note_misnamed(totals, &mut notes);
    if !totals.unpriced_models.is_empty() {
        let models: Vec<String> = totals.unpriced_models.iter().cloned().collect();
        note_unpriced(&mut notes, &models, totals.unpriced_more);
    }
    note_segments_capped(totals, &mut notes);
    note_provenance(plan, totals, &mut notes);
    note_own_deployments(plan, &mut notes);
    note_harness_latency(totals, &mut notes);
    note_turns_as_runs(plan, totals, &mut notes);
    let uncredited;
    let totals = match not_exploring(plan, totals) {
        Some(n) => {
            notes.push(n);
            uncredited = uncredit(totals);
            &uncredited
        }
        None => totals,
    };
    let variants = variant_summaries(plan, totals, &mut notes);
    let production = production_vs_baseline(plan, totals);
    if let Some(n) = &production.note {
        notes.push(n.clone());
    }
    notes.extend(config_differs(plan, &totals.probe));
    let fits_equally = fits_equally(plan, totals);
    notes.extend(note_fits_equally(plan, totals, &fits_equally));
    notes.extend(note_unreviewed_skips(plan, &variants[plan.production()]));
    let run = RunSummary {
        schema_version: super::metrics::SCHEMA_VERSION,
        run: run.label.clone(),
        turns: totals.turns,
        rejected: totals.rejected,
        lines: totals.nonblank_lines,
        unknown_fields: totals.unknown_fields,
        warnings: warnings(totals, run),
        baseline: plan.variants[plan.baseline].name.clone(),
        production: plan.variants[plan.production()].name.clone(),
        production_fits_equally: fits_equally,
        sources: run.sources.iter().map(|s| s.name.clone()).collect(),
        source_facts: run.sources.iter().map(SourceFacts::summary).collect(),
        decisions: run.decisions.to_string(),
        scope_columns: run.scope_columns.clone(),
        variant_order: plan.variants.iter().map(|v| v.name.clone()).collect(),
        variants: variants
            .into_iter()
            .map(|v| (v.variant.clone(), v))
            .collect(),
        fabrication_kinds: totals.fabrication_kinds.clone(),
        segments_truncated: segments_cut
            .iter()
            .map(|(k, n)| (k.clone(), *n as u64))
            .collect(),
        production_known: production.known,
        production_agreement: production.agreement,
        production_fired_baseline_skips: production.fired_baseline_skips,
        production_skipped_baseline_fires: production.skipped_baseline_fires,
        provenance: provenance(totals),
        input_counts: totals.import_counts.clone(),
        notes,
    };
    Summary { run, production }
}

/// What a replay read of one source (see [`crate::read::reader::SourceEnd`]).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct SourceFacts {
    pub name: String,
    /// None until the source was read to its end.
    pub end: Option<crate::read::reader::SourceEnd>,
}

impl SourceFacts {
    fn summary(&self) -> SourceSummary {
        let e = self.end.as_ref();
        SourceSummary {
            name: self.name.clone(),
            lines: e.map(|e| e.lines),
            bytes: e.map(|e| e.bytes),
            xxh3: e.map(|e| format!("{:016x}", e.xxh3)),
        }
    }
}

/// Facts of the run that are not tallies.
pub(crate) struct RunFacts {
    /// The run's label (`--label`).
    pub label: String,
    pub sources: Vec<SourceFacts>,
    /// `--decisions`: which rows decisions.csv holds.
    pub decisions: &'static str,
    /// The scope keys made columns.
    pub scope_columns: Vec<String>,
    /// Notes on the plan, first among the summary's notes.
    pub notes: Vec<String>,
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

/// The variants other than production's whose decisions fit the
/// recorded critic events as well as production's: as many agreeing turns
/// of as many known (every variant replays the same turns).
fn fits_equally(plan: &Plan, totals: &Totals) -> Vec<String> {
    let p = &totals.variants[plan.production()].counts;
    if p.production_known == 0 {
        return Vec::new();
    }
    plan.variants
        .iter()
        .zip(&totals.variants)
        .enumerate()
        .filter(|(i, (_, t))| {
            *i != plan.production() && t.counts.production_agreeing() == p.production_agreeing()
        })
        .map(|(_, (v, _))| v.name.clone())
        .collect()
}

/// Where the recording cannot tell production's gate from another's.
fn note_fits_equally(plan: &Plan, totals: &Totals, others: &[String]) -> Option<String> {
    let c = &totals.variants[plan.production()].counts;
    let names: Vec<String> = others.iter().map(|n| format!("`{n}`")).collect();
    (!others.is_empty()).then(|| format!(
        "the recorded critic events fit {} as well as `{}`, the gate named as production's ({} of {} turns each): this traffic cannot tell which gate production ran, so check that `{}` is the one it ran (the config's `production`)",
        names.join(", "),
        plan.variants[plan.production()].name,
        c.production_agreeing(),
        c.production_known,
        plan.variants[plan.production()].name,
    ))
}

/// What production's critic sample says of its skips (a replay with a
/// plan): None without one.
pub(crate) fn sample_sentence(v: &crate::summary::figures::VariantSummary) -> Option<String> {
    let drawn = v.sampled_skips?;
    let share = |x: Option<f64>| x.map_or("unknown".to_string(), |x| format!("{:.2}%", x * 100.0));
    let labelled = v.sampled_labelled.unwrap_or(0);
    let mut s = format!(
        "the plan's critic sample drew {} of {}: {} labelled ({} by a shadow critic, {} by production's own), {} failed, {} not back",
        drawn,
        match v.production {
            true => format!("production's {} skips", v.production_skips.unwrap_or(0)),
            false => format!(
                "`{}`'s {} unlabelled new skips",
                v.variant,
                v.new_skips.saturating_sub(v.new_labelled_skips)
            ),
        },
        labelled,
        v.sampled_labelled_shadow.unwrap_or(0),
        v.sampled_labelled_production.unwrap_or(0),
        v.sampled_failed.unwrap_or(0),
        v.sampled_unreviewed.unwrap_or(0),
    );
    match v.skip_regression_rate_upper95 {
        Some(u) => s.push_str(&format!(
            "; their regression rate estimated {}, at most {} (95%, {}), at most {} counting every draw without a verdict a regression",
            share(v.skip_regression_rate_estimate),
            share(Some(u)),
            v.skip_bound_method.as_deref().unwrap_or("?"),
            share(v.skip_regression_rate_worst_case_upper95),
        )),
        None if labelled > 0 => s.push_str("; no bound (see the notes)"),
        None => s.push_str("; no labelled draw yet, so nothing bounds their regression rate"),
    }
    Some(s)
}

/// What a summary says of a smart-gate production's skips that no critic
/// reviewed: their risk is unknown, and no replay of this traffic can
/// tell it (the text [`crate::summary::text::unreviewed_skips`] writes).
fn note_unreviewed_skips(plan: &Plan, p: &VariantSummary) -> Option<String> {
    let sample = sample_sentence(p);
    let n = match p.unreviewed_production_skips() {
        Some(n) => n,
        None => return sample,
    };
    let said = super::text::unreviewed_skips(&plan.variants[plan.production()].name, n);
    Some(match sample {
        Some(s) => format!("{said}; {s}"),
        None => said,
    })
}

/// Why the plan's draws are not read as exploration fires, where they
/// were counted so but production also fired on most of the skips the
/// coin did not draw: it reviewed them (a legacy recording's reviews).
fn not_exploring(plan: &Plan, totals: &Totals) -> Option<String> {
    let d = totals.design.as_ref()?;
    let explored = totals.variants[plan.production()]
        .counts
        .production_explored;
    (d.population == crate::replay::design::Population::ProductionSkips
        && explored > 0
        && d.keyed.reviews_undrawn())
    .then(|| format!(
        "production's critic ran on {} of the {} skips of its gate the plan's coin did not draw: it reviewed them (a legacy recording?), so its {explored} reviews of the drawn ones are not read as an exploration gate's: production agreement counts them as production's fires",
        d.keyed.undrawn_fires, d.keyed.undrawn_skips
    ))
}

/// The totals with production's exploration fires taken as its gate's
/// fires, on every variant.
fn uncredit(totals: &Totals) -> Totals {
    let mut t = totals.clone();
    for v in t.variants.iter_mut() {
        v.counts = v.counts.uncredited();
    }
    t
}

/// The warning that production's config is probably not the one given:
/// its variant fires, beyond what failed calls explain, on turns with no
/// critic event (`crate::replay::probe`).
pub(crate) fn config_differs(plan: &Plan, t: &crate::replay::probe::ProbeTally) -> Option<String> {
    let v = &plan.variants[plan.production()];
    let names = crate::replay::probe::setting_names(&v.config);
    crate::replay::probe::finding(&names, t).map(|f| f.said(&v.name))
}

fn production_vs_baseline(plan: &Plan, totals: &Totals) -> ProductionAgreement {
    let b = &totals.variants[plan.production()];
    let c = &b.counts;
    let base = &plan.variants[plan.production()];
    let most_common = b.top_mismatch().map(|(m, r, n)| {
        let turns = if n == 1 { "turn" } else { "turns" };
        format!("{n} {turns}: {}", mismatch_hint(m, r, &base.config))
    });
    let note = most_common.as_ref().map(|hint| {
        format!(
            "`{}`, the gate named as production's, decides as production did on only {} of {} turns whose recording says what production did: its config probably differs from production's. Most common disagreement: {hint} (every one is in mismatches.csv)",
            base.name,
            c.production_agreeing(),
            c.production_known,
        )
    });
    ProductionAgreement {
        known: c.production_known,
        agreement: ratio_of(Some(c.production_agreeing()), c.production_known),
        fired_baseline_skips: c.production_fired_variant_skips,
        skipped_baseline_fires: c.production_skipped_variant_fires,
        most_common,
        note,
    }
}

/// What a kind of disagreement with production suggests about production's
/// config: the first reason of the baseline's decision names the setting.
pub(crate) fn mismatch_hint(m: Mismatch, r: Reason, cfg: &FrameworkConfig) -> String {
    let t = cfg.metacognition_confidence_threshold;
    match (m, r) {
        (Mismatch::ProductionFired, Reason::Confident) => format!(
            "production fired at confidence >= {t} with no sensitive hit: was the threshold higher, or were other sensitive tags set?"
        ),
        (Mismatch::ProductionFired, Reason::TrivialAck) => "production fired on drafts the baseline skips as trivial acks: was the selective gate off, were the ack patterns or read-only tools different, or (for imported traffic) did production count earlier turns' tool calls, which [deployment] history = \"conversation\" reads?".to_string(),
        (Mismatch::ProductionFired, _) => format!(
            "production fired where the baseline skips ({}): was production's gate config different?",
            r.name()
        ),
        (Mismatch::ProductionSkipped, Reason::LowConfidence) => format!(
            "production skipped at confidence < {t}: was the threshold lower, or the selective gate on?"
        ),
        (Mismatch::ProductionSkipped, Reason::SensitiveHit | Reason::Sensitive) => "production skipped turns with a sensitive hit: were production's sensitive tags different?".to_string(),
        (Mismatch::ProductionSkipped, Reason::MutatingTool) => "production skipped turns with a tool call the baseline counts as mutating: was read_only_tools longer, or (for imported traffic) are earlier turns' calls counted that production did not pass ([deployment] history)?".to_string(),
        (Mismatch::ProductionSkipped, Reason::NoAckPattern) => "production skipped drafts no ack pattern of the baseline matches: were metacognition_trivial_ack_patterns different?".to_string(),
        (Mismatch::ProductionSkipped, _) => format!(
            "production skipped turns the baseline fires on ({}): was production's gate config different?",
            r.name()
        ),
    }
}

/// A variant's risk figures from its runs' (new skips, labelled, regressions),
/// every skip a new one and each turn a skip, as a replay tallies them:
/// what the simulations judge.
#[cfg(test)]
pub(crate) fn of_runs(name: &str, runs: &[(u64, u64, u64)]) -> VariantSummary {
    let new_skips: u64 = runs.iter().map(|r| r.0).sum();
    let labelled: u64 = runs.iter().map(|r| r.1).sum();
    let mut s = VariantSummary {
        variant: name.into(),
        turns: new_skips,
        lines: new_skips,
        skips: new_skips,
        new_skips,
        new_labelled_skips: labelled,
        new_unlabelled_critic_not_run: new_skips - labelled,
        safety_regressions: runs.iter().map(|r| r.2).sum(),
        label_coverage: super::metrics::ratio_of(Some(labelled), new_skips),
        selective_gate: true,
        ..Default::default()
    };
    run_figures(
        RunLabels::of(runs.iter().map(|r| (r.1, r.2))),
        RunLabels::of(runs.iter().map(|r| (r.0, r.2 + r.0 - r.1))),
        &mut s,
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::tally::VariantTally;

    /// An imported trace replayed with the wrong `history` disagrees with
    /// production through tool calls: the hint names the setting.
    #[test]
    fn tool_call_disagreements_name_history() {
        let cfg = FrameworkConfig::default();
        for (m, r) in [
            (Mismatch::ProductionFired, Reason::TrivialAck),
            (Mismatch::ProductionSkipped, Reason::MutatingTool),
        ] {
            assert!(mismatch_hint(m, r, &cfg).contains("history"), "{m:?} {r:?}");
        }
    }

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
            scope_columns: vec![],
            notes: vec![],
        };
        let s = summarize(&plan, &totals, &run, &BTreeMap::new());
        let v = &s.run.variants["smart"];
        assert_eq!(v.saved_tokens_in, None, "{v:?}");
        assert_eq!(v.saved_tokens_out, Some(7));
        assert!(
            s.run
                .notes
                .iter()
                .any(|n| n == "variant smart: saved_tokens_in exceeds 18446744073709551615 and is not reported"),
            "{:?}",
            s.run.notes
        );
    }
}
