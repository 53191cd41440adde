//! Mergeable aggregates of a replay.
//!
//! Each block of input is tallied on its own (in parallel) and the block
//! tallies are merged in input order, so results are identical for any
//! thread count. Every number is an integer count or an integer sum
//! (latencies in nanoseconds, tokens per model), so merging is exact and
//! order-free; rates, dollars and percentiles are derived only at the end.

use std::collections::BTreeMap;

use crate::gate::Reason;
use crate::turn::Verdict;

/// Index of a verdict in the label dimension: none, approve, revise, refuse.
pub fn verdict_index(v: Option<Verdict>) -> usize {
    match v {
        None => 0,
        Some(Verdict::Approve) => 1,
        Some(Verdict::Revise) => 2,
        Some(Verdict::Refuse) => 3,
    }
}

pub const VERDICT_LABELS: [&str; 4] = ["none", "approve", "revise", "refuse"];

/// Decision counts of one variant over a set of turns, against the baseline.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub turns: u64,
    pub fires: u64,
    /// Baseline fires, variant skips.
    pub saved_calls: u64,
    /// Baseline skips, variant fires.
    pub added_calls: u64,
    /// Variant skips a turn whose recorded verdict is revise or refuse.
    pub safety_regressions: u64,
    /// Variant skips a turn with a recorded verdict.
    pub labelled_skips: u64,
    /// Recorded critic events of the saved turns.
    pub saved: Lite,
    /// Every recorded critic event in the segment (the basis of the
    /// `added_*_estimated` figures of `segments.csv`).
    pub events: Lite,
}

/// Integer sums of critic events, with dollars priced per event in
/// nano-USD (exact to merge).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lite {
    pub turns: u64,
    pub with_tokens: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub with_latency: u64,
    pub latency_ns: u64,
    pub nano_usd: u64,
    /// Events with tokens but no configured price.
    pub unpriced: u64,
}

/// One event as `Lite` sums.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EventFacts {
    pub tokens: Option<(u64, u64)>,
    pub latency_ms: Option<f64>,
    /// Dollars in nano-USD, None when tokens are known but unpriced.
    pub nano_usd: Option<u64>,
}

impl Lite {
    pub fn add(&mut self, e: &EventFacts) {
        self.turns += 1;
        if let Some((i, o)) = e.tokens {
            self.with_tokens += 1;
            self.tokens_in += i;
            self.tokens_out += o;
            match e.nano_usd {
                Some(n) => self.nano_usd += n,
                None => self.unpriced += 1,
            }
        }
        if let Some(l) = e.latency_ms {
            self.with_latency += 1;
            self.latency_ns += ms_to_ns(l);
        }
    }

    pub fn merge(&mut self, o: &Lite) {
        self.turns += o.turns;
        self.with_tokens += o.with_tokens;
        self.tokens_in += o.tokens_in;
        self.tokens_out += o.tokens_out;
        self.with_latency += o.with_latency;
        self.latency_ns += o.latency_ns;
        self.nano_usd += o.nano_usd;
        self.unpriced += o.unpriced;
    }

    /// Dollars, or None when any event with tokens is unpriced.
    pub fn usd(&self) -> Option<f64> {
        (self.unpriced == 0).then(|| self.nano_usd as f64 / 1e9)
    }
}

impl Counts {
    pub fn skips(&self) -> u64 {
        self.turns - self.fires
    }

    pub fn unverified_skips(&self) -> u64 {
        self.skips() - self.labelled_skips
    }

    pub fn merge(&mut self, o: &Counts) {
        self.turns += o.turns;
        self.fires += o.fires;
        self.saved_calls += o.saved_calls;
        self.added_calls += o.added_calls;
        self.safety_regressions += o.safety_regressions;
        self.labelled_skips += o.labelled_skips;
        self.saved.merge(&o.saved);
        self.events.merge(&o.events);
    }
}

/// Sums over recorded critic events (tokens per model, so dollars can be
/// priced exactly at the end).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventSums {
    /// Turns counted.
    pub turns: u64,
    /// Turns whose event has both token counts.
    pub with_tokens: u64,
    /// Turns whose event has a latency.
    pub with_latency: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub latency_ns: u64,
    /// Per critic model (`""`: the event names none): (tokens in, out).
    pub by_model: BTreeMap<String, (u64, u64)>,
}

/// Nanoseconds from milliseconds, rounded (exact integer sums).
pub fn ms_to_ns(ms: f64) -> u64 {
    (ms * 1e6).round() as u64
}

impl EventSums {
    pub fn add(
        &mut self,
        tokens: Option<(u64, u64)>,
        latency_ms: Option<f64>,
        model: Option<&str>,
    ) {
        self.turns += 1;
        if let Some((i, o)) = tokens {
            self.with_tokens += 1;
            self.tokens_in += i;
            self.tokens_out += o;
            let key = model.unwrap_or("");
            if !self.by_model.contains_key(key) {
                self.by_model.insert(key.to_string(), (0, 0));
            }
            let e = self.by_model.get_mut(key).expect("just inserted");
            e.0 += i;
            e.1 += o;
        }
        if let Some(l) = latency_ms {
            self.with_latency += 1;
            self.latency_ns += ms_to_ns(l);
        }
    }

    pub fn merge(&mut self, o: &EventSums) {
        self.turns += o.turns;
        self.with_tokens += o.with_tokens;
        self.with_latency += o.with_latency;
        self.tokens_in += o.tokens_in;
        self.tokens_out += o.tokens_out;
        self.latency_ns += o.latency_ns;
        for (m, (i, out)) in &o.by_model {
            let e = self.by_model.entry(m.clone()).or_default();
            e.0 += i;
            e.1 += out;
        }
    }
}

/// A latency histogram with 1 ms buckets (sparse, so merging is cheap).
/// Percentiles are reported at 1 ms resolution: the upper edge of a bucket.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Histogram {
    /// Bucket k (k >= 1) holds latencies in (k-1, k] ms; bucket 0 holds 0.
    pub buckets: BTreeMap<u64, u64>,
    pub count: u64,
}

impl Histogram {
    pub fn add(&mut self, ms: f64) {
        self.count += 1;
        let k = if ms <= 0.0 { 0 } else { ms.ceil() as u64 };
        *self.buckets.entry(k).or_default() += 1;
    }

    pub fn merge(&mut self, o: &Histogram) {
        self.count += o.count;
        for (k, v) in &o.buckets {
            *self.buckets.entry(*k).or_default() += v;
        }
    }

    /// The nearest-rank `q` quantile (0 < q <= 1) in ms; None when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (&k, &c) in &self.buckets {
            seen += c;
            if seen >= rank {
                return Some(k as f64);
            }
        }
        None
    }
}

/// Everything tallied for one variant.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VariantTally {
    pub counts: Counts,
    /// Flag-off variant decided differently from the legacy gate.
    pub contract_violations: u64,
    /// Hits per reason of the variant's active gate (index: `Reason as usize`).
    pub reason_hits: [u64; 13],
    /// Turns where this reason was the only one (the sole blocker of a skip).
    pub sole_blocker: [u64; 13],
    /// [baseline fires][variant fires][verdict index].
    pub matrix: [[[u64; 4]; 2]; 2],
    /// Recorded events of the turns this variant saves.
    pub saved: EventSums,
    /// Added turns per estimation segment (see `replay`), for `*_estimated`.
    pub added_by_segment: BTreeMap<String, u64>,
    /// Critic latency added to each turn under this variant (0 on skips).
    pub latency: Histogram,
}

impl VariantTally {
    pub fn merge(&mut self, o: &VariantTally) {
        self.counts.merge(&o.counts);
        self.contract_violations += o.contract_violations;
        for i in 0..13 {
            self.reason_hits[i] += o.reason_hits[i];
            self.sole_blocker[i] += o.sole_blocker[i];
        }
        for b in 0..2 {
            for v in 0..2 {
                for k in 0..4 {
                    self.matrix[b][v][k] += o.matrix[b][v][k];
                }
            }
        }
        self.saved.merge(&o.saved);
        for (k, v) in &o.added_by_segment {
            *self.added_by_segment.entry(k.clone()).or_default() += v;
        }
        self.latency.merge(&o.latency);
    }

    pub fn hits(&self, r: Reason) -> u64 {
        self.reason_hits[r as usize]
    }

    pub fn sole(&self, r: Reason) -> u64 {
        self.sole_blocker[r as usize]
    }
}

/// Counts per value of a grouping dimension, per variant.
pub type SegmentMap = BTreeMap<String, BTreeMap<String, Vec<Counts>>>;

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    #[test]
    fn event_sums_merge_exactly() {
        let mut a = EventSums::default();
        a.add(Some((10, 2)), Some(1.5), Some("m"));
        let mut b = EventSums::default();
        b.add(None, Some(0.25), None);
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
        assert_eq!(a.by_model.get("m"), Some(&(10, 2)));
    }
}
