//! Mergeable aggregates of a replay.
//!
//! Each block of input is tallied on its own (in parallel) and the block
//! tallies are merged in input order, so results are identical for any
//! thread count. Every number is an integer count or an integer sum
//! (latencies in nanoseconds, tokens per model), so merging is exact and
//! order-free; rates, dollars and percentiles are derived only at the end.

use std::collections::BTreeMap;

use crate::gate::Reason;
use crate::read::turn::{Turn, Verdict};

mod cost;
mod latency;

pub(crate) use cost::*;
pub(crate) use latency::*;

/// Index of a turn in the label dimension: no event (or an event without
/// a verdict), approve, revise, refuse, or an event where no critic ran.
pub(crate) fn label_index(turn: &Turn) -> usize {
    if turn.critic_not_run() {
        return NOT_RUN;
    }
    match turn.verdict() {
        None => 0,
        Some(Verdict::Approve) => 1,
        Some(Verdict::Revise) => 2,
        Some(Verdict::Refuse) => 3,
    }
}

/// The label index of an event where no critic ran.
pub(crate) const NOT_RUN: usize = 4;
/// Label indexes: 0 none, 1..=3 the verdicts, 4 [`NOT_RUN`].
pub(crate) const LABELS: usize = 5;

pub(crate) const VERDICT_LABELS: [&str; 4] = ["none", "approve", "revise", "refuse"];

/// How a variant's decision on a turn compares with what production did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// Production fired (a critic ran); the variant skips.
    ProductionFired = 0,
    /// Production skipped (an event where no critic ran); the variant fires.
    ProductionSkipped = 1,
}

/// Decision counts of one variant over a set of turns, against the baseline.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counts {
    pub turns: u64,
    pub fires: u64,
    /// Baseline fires, variant skips.
    pub saved_calls: u64,
    /// Baseline skips, variant fires.
    pub added_calls: u64,
    /// Variant skips a turn whose recorded verdict is revise or refuse.
    pub safety_regressions: u64,
    /// Of them, turns the baseline fires on: the regressions the switch
    /// would add (for the baseline itself, none).
    #[serde(default)]
    pub new_safety_regressions: u64,
    /// Variant skips a turn with a recorded verdict of a critic that ran.
    pub labelled_skips: u64,
    /// Variant skips, baseline fires: the turns whose risk a switch adds
    /// (the unit of every risk figure).
    #[serde(default)]
    pub new_skips: u64,
    /// Of them, with the verdict of a critic that ran.
    #[serde(default)]
    pub new_labelled_skips: u64,
    /// New skips without a label because the event says no critic ran
    /// (the gate skipped, or the critic call failed open: a 0-token
    /// approve).
    #[serde(default)]
    pub new_unlabelled_not_run: u64,
    /// New skips without a label because nothing was recorded (`critic`
    /// null or absent: unknown, as after an import of transcripts).
    #[serde(default)]
    pub new_unlabelled_no_event: u64,
    /// Turns whose recorded event says no critic ran (not labels).
    pub critic_not_run: u64,
    /// Fires on turns no critic can run on (an empty draft: symfonic
    /// reviews no empty reply): in `fires`, never a critic call.
    #[serde(default)]
    pub fires_without_critic: u64,
    /// Critic calls with nothing recorded of a critic (no event; in a
    /// trace, no critic span): where production ran this gate, probable
    /// critic failures (a critic call that raises leaves no span).
    #[serde(default)]
    pub critic_calls_unrecorded: u64,
    /// Critic calls whose recorded critic ran but left no verdict.
    #[serde(default)]
    pub critic_calls_without_verdict: u64,
    /// Turns whose recording says what production's gate did.
    pub production_known: u64,
    /// ... where production fired and the variant skips, the plan's coin
    /// not explaining the fire.
    pub production_fired_variant_skips: u64,
    /// ... where production's critic ran on a skip of its gate the plan's
    /// coin drew (the exploration gate: production's design, so the
    /// variant, skipping, agrees).
    #[serde(default)]
    pub production_explored: u64,
    /// ... where the variant fires on such a turn (in
    /// `production_skipped_variant_fires`: production's gate skipped it).
    #[serde(default)]
    pub production_explored_fires: u64,
    /// ... where production skipped and the variant fires.
    pub production_skipped_variant_fires: u64,
    /// Recorded critic events of the saved turns.
    pub saved: EventSums,
    /// Added calls by draft-length bucket ([`LENGTH_BUCKETS`]): each is
    /// estimated by its bucket's mean event ([`AddedCost`]).
    pub added_by_length: [u64; LENGTH_BUCKETS.len()],
    /// Skips whose matched ack covers less than `--max-ack-share` of the
    /// draft, of them labelled, and of those revised or refused.
    pub risky_skips: u64,
    pub risky_labelled_skips: u64,
    pub risky_safety_regressions: u64,
}

impl Counts {
    /// These counts with production's exploration fires taken as its
    /// gate's fires (a recording that is not an exploration gate's).
    pub fn uncredited(&self) -> Counts {
        Counts {
            production_fired_variant_skips: self.production_fired_variant_skips
                + self.production_explored,
            production_skipped_variant_fires: self.production_skipped_variant_fires
                - self.production_explored_fires,
            production_explored: 0,
            production_explored_fires: 0,
            ..self.clone()
        }
    }

    pub fn skips(&self) -> u64 {
        self.turns - self.fires
    }

    /// The critic calls the variant makes: its fires on which a critic
    /// can run.
    pub fn critic_calls(&self) -> u64 {
        self.fires - self.fires_without_critic
    }

    pub fn unverified_skips(&self) -> u64 {
        self.skips() - self.labelled_skips
    }

    /// New skips without a label: the critic ran but its verdict is not
    /// recorded (the causes the counts do not name).
    pub fn new_unlabelled_no_verdict(&self) -> u64 {
        self.new_skips
            - self.new_labelled_skips
            - self.new_unlabelled_not_run
            - self.new_unlabelled_no_event
    }

    /// Known turns where the variant decides as production did.
    pub fn production_agreeing(&self) -> u64 {
        self.production_known
            - self.production_fired_variant_skips
            - self.production_skipped_variant_fires
    }

    /// `self` less `o`, where `o` counts a part of `self`'s turns (exact:
    /// every field is an integer sum over turns).
    pub fn minus(&self, o: &Counts) -> Counts {
        Counts {
            turns: self.turns - o.turns,
            fires: self.fires - o.fires,
            saved_calls: self.saved_calls - o.saved_calls,
            added_calls: self.added_calls - o.added_calls,
            safety_regressions: self.safety_regressions - o.safety_regressions,
            new_safety_regressions: self.new_safety_regressions - o.new_safety_regressions,
            labelled_skips: self.labelled_skips - o.labelled_skips,
            new_skips: self.new_skips - o.new_skips,
            new_labelled_skips: self.new_labelled_skips - o.new_labelled_skips,
            new_unlabelled_not_run: self.new_unlabelled_not_run - o.new_unlabelled_not_run,
            new_unlabelled_no_event: self.new_unlabelled_no_event - o.new_unlabelled_no_event,
            critic_not_run: self.critic_not_run - o.critic_not_run,
            fires_without_critic: self.fires_without_critic - o.fires_without_critic,
            critic_calls_unrecorded: self.critic_calls_unrecorded - o.critic_calls_unrecorded,
            critic_calls_without_verdict: self.critic_calls_without_verdict
                - o.critic_calls_without_verdict,
            production_known: self.production_known - o.production_known,
            production_fired_variant_skips: self.production_fired_variant_skips
                - o.production_fired_variant_skips,
            production_explored: self.production_explored - o.production_explored,
            production_explored_fires: self.production_explored_fires - o.production_explored_fires,
            production_skipped_variant_fires: self.production_skipped_variant_fires
                - o.production_skipped_variant_fires,
            saved: self.saved.minus(&o.saved),
            added_by_length: std::array::from_fn(|b| {
                self.added_by_length[b] - o.added_by_length[b]
            }),
            risky_skips: self.risky_skips - o.risky_skips,
            risky_labelled_skips: self.risky_labelled_skips - o.risky_labelled_skips,
            risky_safety_regressions: self.risky_safety_regressions - o.risky_safety_regressions,
        }
    }

    pub fn merge(&mut self, o: &Counts) {
        // Every field named: a new count does not compile until merged
        // (one left out would read 0 on any run of more than one block).
        let Counts {
            turns,
            fires,
            saved_calls,
            added_calls,
            safety_regressions,
            new_safety_regressions,
            labelled_skips,
            new_skips,
            new_labelled_skips,
            new_unlabelled_not_run,
            new_unlabelled_no_event,
            critic_not_run,
            fires_without_critic,
            critic_calls_unrecorded,
            critic_calls_without_verdict,
            production_known,
            production_fired_variant_skips,
            production_explored,
            production_explored_fires,
            production_skipped_variant_fires,
            saved,
            added_by_length,
            risky_skips,
            risky_labelled_skips,
            risky_safety_regressions,
        } = o;
        self.turns += turns;
        self.fires += fires;
        self.saved_calls += saved_calls;
        self.added_calls += added_calls;
        self.safety_regressions += safety_regressions;
        self.new_safety_regressions += new_safety_regressions;
        self.labelled_skips += labelled_skips;
        self.new_skips += new_skips;
        self.new_labelled_skips += new_labelled_skips;
        self.new_unlabelled_not_run += new_unlabelled_not_run;
        self.new_unlabelled_no_event += new_unlabelled_no_event;
        self.critic_not_run += critic_not_run;
        self.fires_without_critic += fires_without_critic;
        self.critic_calls_unrecorded += critic_calls_unrecorded;
        self.critic_calls_without_verdict += critic_calls_without_verdict;
        self.production_known += production_known;
        self.production_fired_variant_skips += production_fired_variant_skips;
        self.production_explored += production_explored;
        self.production_explored_fires += production_explored_fires;
        self.production_skipped_variant_fires += production_skipped_variant_fires;
        self.risky_skips += risky_skips;
        self.risky_labelled_skips += risky_labelled_skips;
        self.risky_safety_regressions += risky_safety_regressions;
        // Most turns add no event: skip the wide sums then.
        if saved.turns > 0 {
            self.saved.merge(saved);
        }
        if *added_calls > 0 {
            for (a, b) in self.added_by_length.iter_mut().zip(added_by_length) {
                *a += b;
            }
        }
    }
}

/// Everything tallied for one variant.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct VariantTally {
    pub counts: Counts,
    /// Flag-off variant decided differently from the legacy gate.
    pub contract_violations: u64,
    /// Hits per reason of the variant's active gate (index: `Reason as usize`).
    pub reason_hits: [u64; 13],
    /// Turns where this reason was the only one (the sole blocker of a skip).
    pub sole_blocker: [u64; 13],
    /// [baseline fires][variant fires][label index].
    pub matrix: [[[u64; LABELS]; 2]; 2],
    /// Critic latency added to each user-facing turn (`call_site` turn)
    /// under this variant (0 on skips).
    pub latency: Histogram,
    /// User-facing fires without a recorded latency (not in `latency`).
    pub latency_unmeasured_fires: u64,
    /// User-facing fires with a recorded latency (in `latency`).
    pub latency_measured_fires: u64,
    /// `latency_unmeasured_fires` by draft-length bucket (their estimated
    /// latency is their bucket's mean, see [`AddedCost`]).
    pub unmeasured_fires_by_length: [u64; LENGTH_BUCKETS.len()],
    /// Disagreements with production by [`Mismatch`] and the first reason
    /// of the variant's decision (index: `Reason as usize`).
    pub mismatch_reasons: [[u64; 13]; 2],
    /// The new skips of each run, by the hash of its `run_id`: the run is
    /// the sampling unit of every bound ([`RunCounts`]).
    #[serde(default)]
    pub runs: BTreeMap<u64, RunCounts>,
}

/// One run's new skips, labelled ones and regressions among them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunCounts {
    pub new_skips: u64,
    pub labelled: u64,
    pub regressions: u64,
    /// Of the labelled ones, risky skips, and their regressions.
    #[serde(default)]
    pub risky_labelled: u64,
    #[serde(default)]
    pub risky_regressions: u64,
}

impl RunCounts {
    fn merge(&mut self, o: &RunCounts) {
        let RunCounts {
            new_skips,
            labelled,
            regressions,
            risky_labelled,
            risky_regressions,
        } = o;
        self.new_skips += new_skips;
        self.labelled += labelled;
        self.regressions += regressions;
        self.risky_labelled += risky_labelled;
        self.risky_regressions += risky_regressions;
    }
}

impl VariantTally {
    pub fn merge(&mut self, o: &VariantTally) {
        let VariantTally {
            counts,
            contract_violations,
            reason_hits,
            sole_blocker,
            matrix,
            latency,
            latency_unmeasured_fires,
            latency_measured_fires,
            unmeasured_fires_by_length,
            mismatch_reasons,
            runs,
        } = o;
        self.counts.merge(counts);
        self.contract_violations += contract_violations;
        let cells = |a: &mut [u64], b: &[u64]| a.iter_mut().zip(b).for_each(|(a, b)| *a += b);
        cells(&mut self.reason_hits, reason_hits);
        cells(&mut self.sole_blocker, sole_blocker);
        cells(
            self.mismatch_reasons.as_flattened_mut(),
            mismatch_reasons.as_flattened(),
        );
        cells(
            self.matrix.as_flattened_mut().as_flattened_mut(),
            matrix.as_flattened().as_flattened(),
        );
        for (k, r) in runs {
            self.runs.entry(*k).or_default().merge(r);
        }
        self.latency.merge(latency);
        self.latency_unmeasured_fires += latency_unmeasured_fires;
        self.latency_measured_fires += latency_measured_fires;
        for (a, b) in self
            .unmeasured_fires_by_length
            .iter_mut()
            .zip(unmeasured_fires_by_length)
        {
            *a += b;
        }
    }

    /// As [`VariantTally::latency_quantile`], with every user-facing fire
    /// that recorded no latency (every added call among them) drawn from
    /// its bucket's recorded latencies; None when no recorded event has a
    /// latency.
    pub fn latency_quantile_with_estimates(&self, q: f64, cost: &AddedCost) -> Option<f64> {
        self.latency_with_estimates(cost)?.quantile(q)
    }

    /// The latency distribution with every user-facing fire that recorded
    /// no latency spread over its bucket's recorded latencies (exactly:
    /// each counts 1/n at each of the bucket's n recorded values, so the
    /// tail of the calls a variant adds is the tail production had); None
    /// when a bucket has fires to estimate and nothing recorded a latency.
    pub fn latency_with_estimates(&self, cost: &AddedCost) -> Option<Mixture> {
        let mut h = self.latency.clone();
        h.settle();
        let mut m = Mixture::of(&h);
        for (b, &n) in self.unmeasured_fires_by_length.iter().enumerate() {
            if n > 0 {
                m.spread(n, cost.latency_pool(b)?);
            }
        }
        m.sort();
        Some(m)
    }

    /// The labelled new skips by run: what the run-level bound rests on.
    pub fn run_labels(&self) -> crate::stats::RunLabels {
        crate::stats::RunLabels::of(self.runs.values().map(|r| (r.labelled, r.regressions)))
    }

    /// The labelled risky new skips by run.
    pub fn run_risky(&self) -> crate::stats::RunLabels {
        crate::stats::RunLabels::of(
            self.runs
                .values()
                .map(|r| (r.risky_labelled, r.risky_regressions)),
        )
    }

    /// Every new skip by run, each unlabelled one counted a regression:
    /// the worst case the labels cannot rule out.
    pub fn run_worst_case(&self) -> crate::stats::RunLabels {
        crate::stats::RunLabels::of(
            self.runs
                .values()
                .map(|r| (r.new_skips, r.regressions + r.new_skips - r.labelled)),
        )
    }

    pub fn hits(&self, r: Reason) -> u64 {
        self.reason_hits[r as usize]
    }

    pub fn sole(&self, r: Reason) -> u64 {
        self.sole_blocker[r as usize]
    }

    /// The nearest-rank `q` quantile of the critic latency added to a
    /// user-facing turn; None when there are fires and none recorded a
    /// latency (the zeros of the skips alone would be a guess).
    pub fn latency_quantile(&self, q: f64) -> Option<f64> {
        if self.latency_unmeasured_fires > 0 && self.latency_measured_fires == 0 {
            return None;
        }
        self.latency.quantile(q)
    }

    /// The most common disagreement with production: its kind, the first
    /// reason of the variant's decision, and how many turns.
    pub fn top_mismatch(&self) -> Option<(Mismatch, Reason, u64)> {
        let mut best: Option<(Mismatch, Reason, u64)> = None;
        for m in [Mismatch::ProductionFired, Mismatch::ProductionSkipped] {
            for r in Reason::ALL {
                let n = self.mismatch_reasons[m as usize][r as usize];
                if n > 0 && best.is_none_or(|b| n > b.2) {
                    best = Some((m, r, n));
                }
            }
        }
        best
    }
}

/// Counts per value of a grouping dimension, per variant.
pub(crate) type SegmentMap = BTreeMap<String, BTreeMap<String, Vec<Counts>>>;

/// A cell of matrix.csv: the baseline's decision by the variant's,
/// declared once with its name and meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MatrixCell {
    BothFire,
    Saved,
    Added,
    BothSkip,
}

impl MatrixCell {
    /// Every cell, in matrix.csv's row order.
    pub(crate) const ALL: [MatrixCell; 4] = [
        MatrixCell::BothFire,
        MatrixCell::Saved,
        MatrixCell::Added,
        MatrixCell::BothSkip,
    ];

    /// The baseline's and the variant's decisions (fires?) of the cell.
    pub(crate) fn decisions(self) -> (bool, bool) {
        match self {
            MatrixCell::BothFire => (true, true),
            MatrixCell::Saved => (true, false),
            MatrixCell::Added => (false, true),
            MatrixCell::BothSkip => (false, false),
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            MatrixCell::BothFire => "both_fire",
            MatrixCell::Saved => "saved",
            MatrixCell::Added => "added",
            MatrixCell::BothSkip => "both_skip",
        }
    }

    pub(crate) fn meaning(self) -> &'static str {
        match self {
            MatrixCell::BothFire => "both gates fire: the critic runs either way",
            MatrixCell::Saved => "the baseline fires, the variant skips: a call saved; a revise or refuse from a critic that ran here is a regression the switch adds (safety_regressions_vs_baseline)",
            MatrixCell::Added => "the baseline skips, the variant fires: a call added",
            MatrixCell::BothSkip => "both gates skip; a revise or refuse from a critic that ran here is a safety regression of both",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_with_estimates_draw_fires_without_latency_from_their_bucket() {
        let mut v = VariantTally::default();
        for _ in 0..3 {
            v.latency.add(0.0); // three skips
        }
        v.latency.settle();
        v.latency_measured_fires = 0;
        // Three fires without a recorded latency, drafts of 1-20 code points.
        v.latency_unmeasured_fires = 3;
        v.unmeasured_fires_by_length[1] = 3;
        let mut buckets = [EventSums::default(); LENGTH_BUCKETS.len()];
        let mut latency: [Histogram; LENGTH_BUCKETS.len()] = Default::default();
        // Recorded events: 1-20 code points 15 at 1,500 and 15 at 2,500 ms
        // (mean 2,000, which no call took: a pool of 30); 21-80, one at
        // 500 ms.
        let recorded = std::iter::repeat_n([(1, 1500.0), (1, 2500.0)], 15).flatten();
        for (b, ms) in recorded.chain([(2, 500.0)]) {
            buckets[b].add(&EventFacts {
                tokens: None,
                latency_ms: Some(ms),
                nano_usd: None,
            });
            latency[b].add(ms);
        }
        let cost = AddedCost::new(&buckets, &latency);
        assert_eq!(v.latency.quantile(0.95), Some(0.0));
        // Weights: 0 ms 3, 1,500 ms 1.5, 2,500 ms 1.5: the tail is 2,500,
        // where the bucket mean said 2,000.
        assert_eq!(v.latency_quantile_with_estimates(0.95, &cost), Some(2500.0));
        assert_eq!(v.latency_quantile_with_estimates(0.50, &cost), Some(0.0));
        assert_eq!(v.latency_quantile_with_estimates(0.60, &cost), Some(1500.0));
        // A bucket without events, or with fewer than 30 (21-80: one),
        // draws from all 31: 500 once, 1,500 and 2,500 15 times each.
        for b in [4, 2] {
            v.unmeasured_fires_by_length = [0; LENGTH_BUCKETS.len()];
            v.unmeasured_fires_by_length[b] = 3;
            assert_eq!(v.latency_quantile_with_estimates(0.95, &cost), Some(2500.0));
            assert_eq!(v.latency_quantile_with_estimates(0.51, &cost), Some(500.0));
            assert_eq!(v.latency_quantile_with_estimates(0.60, &cost), Some(1500.0));
            assert_eq!(
                cost.pool_sizes(&v.unmeasured_fires_by_length),
                [(b, 31, false)]
            );
        }
        // Nothing recorded a latency: no estimate.
        let none = AddedCost::new(
            &[EventSums::default(); LENGTH_BUCKETS.len()],
            &Default::default(),
        );
        assert_eq!(v.latency_quantile_with_estimates(0.95, &none), None);
    }

    #[test]
    fn histogram_quantiles_are_nearest_rank() {
        let mut h = Histogram::default();
        for x in [0.0, 0.0, 10.2, 2000.0, 130_000.0] {
            h.add(x);
        }
        assert_eq!(h.quantile(0.4), Some(0.0));
        assert_eq!(h.quantile(0.5), Some(11.0));
        assert_eq!(h.quantile(0.8), Some(2000.0));
        assert_eq!(h.quantile(1.0), Some(130000.0));
        let mut a = Histogram::default();
        a.add(5.0);
        let mut b = Histogram::default();
        b.add(7.0);
        a.merge(&b);
        assert_eq!(a.quantile(1.0), Some(7.0));
        // Settled or not, merged in any grouping: the same buckets.
        let mut whole = Histogram::default();
        let mut parts = vec![Histogram::default(); 3];
        for (i, x) in [3.0, 0.0, 3.2, 9.0, 3.0, 0.5, 120.0, 9.0, 4.0]
            .into_iter()
            .enumerate()
        {
            whole.add(x);
            parts[i % 3].add(x);
        }
        parts[1].settle();
        let mut merged = Histogram::default();
        for p in &parts {
            merged.merge(p);
        }
        assert_eq!(merged.buckets(), whole.buckets());
        assert_eq!(
            whole.buckets(),
            vec![(0, 1), (1, 1), (3, 2), (4, 2), (9, 2), (120, 1)]
        );
        assert_eq!(merged.count, 9);
    }

    #[test]
    fn event_sums_merge_exactly_and_estimate_from_the_segment() {
        let ev = |tokens, latency_ms, nano_usd| EventFacts {
            tokens,
            latency_ms,
            nano_usd,
        };
        let mut a = EventSums::default();
        a.add(&ev(Some((10, 2)), Some(1.5), Some(300)));
        let mut b = EventSums::default();
        b.add(&ev(None, Some(0.25), None));
        a.merge(&b);
        assert_eq!(
            (
                a.turns,
                a.with_tokens,
                a.with_latency,
                a.tokens_in,
                a.latency_ns
            ),
            (2, 1, 2, 10, 1_750_000)
        );
        assert_eq!(a.usd(), Some(3e-7));
        let e = Estimate::of(2, &EventSums::default(), &a);
        assert_eq!((e.tokens_in, e.latency_ms), (Some(20.0), Some(1.75)));
        let mut unpriced = EventSums::default();
        unpriced.add(&ev(Some((1, 1)), None, None));
        assert_eq!(Estimate::of(1, &unpriced, &a).usd, None);
    }
}
