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
    /// ... where production fired and the variant skips.
    pub production_fired_variant_skips: u64,
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

/// Below this many recorded latencies a draft-length bucket's pool is too
/// small to draw a tail from: its added calls are drawn from every
/// turn's recorded latencies instead.
pub(crate) const MIN_LATENCY_POOL: u64 = 30;

/// Draft-length buckets in code points, in order: the values of the
/// `draft_length` segment, and the basis of added-call estimates.
pub(crate) const LENGTH_BUCKETS: [&str; 6] = ["0", "1-20", "21-80", "81-160", "161-500", "501+"];

/// The index in [`LENGTH_BUCKETS`] of a draft of `chars` code points.
pub(crate) fn length_bucket_index(chars: u64) -> usize {
    match chars {
        0 => 0,
        1..=20 => 1,
        21..=80 => 2,
        81..=160 => 3,
        161..=500 => 4,
        _ => 5,
    }
}

/// Integer sums of critic events, with dollars priced per event in
/// nano-USD (exact to merge). Each event's values are bounded at
/// validation ([`crate::read::turn::MAX_TOKENS`], [`crate::read::turn::MAX_LATENCY_MS`],
/// [`crate::config::MAX_USD_PER_MTOK`]) and summed in 128 bits, so no sum
/// wraps; a sum too large for a report's 64-bit column is reported absent
/// ([`reportable`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EventSums {
    pub turns: u64,
    pub with_tokens: u64,
    pub tokens_in: u128,
    pub tokens_out: u128,
    pub with_latency: u64,
    pub latency_ns: u128,
    pub nano_usd: u128,
    /// Events with tokens but no configured price.
    pub unpriced: u64,
}

/// One event as `EventSums` sums.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EventFacts {
    pub tokens: Option<(u64, u64)>,
    pub latency_ms: Option<f64>,
    /// Dollars in nano-USD, None when tokens are known but unpriced.
    pub nano_usd: Option<u64>,
}

impl EventSums {
    pub fn add(&mut self, e: &EventFacts) {
        self.turns += 1;
        if let Some((i, o)) = e.tokens {
            self.with_tokens += 1;
            self.tokens_in += u128::from(i);
            self.tokens_out += u128::from(o);
            match e.nano_usd {
                Some(n) => self.nano_usd += u128::from(n),
                None => self.unpriced += 1,
            }
        }
        if let Some(l) = e.latency_ms {
            self.with_latency += 1;
            self.latency_ns += u128::from(ms_to_ns(l));
        }
    }

    /// `self` less `o`, where `o` is a part of `self`.
    pub fn minus(&self, o: &EventSums) -> EventSums {
        EventSums {
            turns: self.turns - o.turns,
            with_tokens: self.with_tokens - o.with_tokens,
            tokens_in: self.tokens_in - o.tokens_in,
            tokens_out: self.tokens_out - o.tokens_out,
            with_latency: self.with_latency - o.with_latency,
            latency_ns: self.latency_ns - o.latency_ns,
            nano_usd: self.nano_usd - o.nano_usd,
            unpriced: self.unpriced - o.unpriced,
        }
    }

    pub fn merge(&mut self, o: &EventSums) {
        // Every field named: a new one does not compile until merged.
        let EventSums {
            turns,
            with_tokens,
            tokens_in,
            tokens_out,
            with_latency,
            latency_ns,
            nano_usd,
            unpriced,
        } = o;
        self.turns += turns;
        self.with_tokens += with_tokens;
        self.tokens_in += tokens_in;
        self.tokens_out += tokens_out;
        self.with_latency += with_latency;
        self.latency_ns += latency_ns;
        self.nano_usd += nano_usd;
        self.unpriced += unpriced;
    }

    /// Dollars, or None when any event with tokens is unpriced, or when
    /// there are events and none recorded tokens (a 0 would be a guess).
    pub fn usd(&self) -> Option<f64> {
        (self.unpriced == 0 && self.tokens_measured()).then(|| self.nano_usd as f64 / 1e9)
    }

    /// Token sums mean something: no events, or some with token counts.
    pub fn tokens_measured(&self) -> bool {
        self.turns == 0 || self.with_tokens > 0
    }

    /// Latency sums mean something: no events, or some with a latency.
    pub fn latency_measured(&self) -> bool {
        self.turns == 0 || self.with_latency > 0
    }

    /// Summed tokens (in, out), or None when none was recorded.
    pub fn tokens(&self) -> (Option<u64>, Option<u64>) {
        match self.tokens_measured() {
            true => (reportable(self.tokens_in), reportable(self.tokens_out)),
            false => (None, None),
        }
    }

    /// Summed latency in ms, or None when none was recorded.
    pub fn latency_ms(&self) -> Option<f64> {
        self.latency_measured()
            .then(|| self.latency_ns as f64 / 1e6)
    }
}

/// The one rule for added calls (no critic ran on them): each is estimated
/// by the mean recorded event of its draft-length bucket, figure by
/// figure, else of all turns. Every table applies it to its own counts per
/// bucket, so any dimension's rows add up to the summary.
#[derive(Clone, Debug)]
pub struct AddedCost {
    buckets: [EventSums; LENGTH_BUCKETS.len()],
    overall: EventSums,
    /// The recorded latencies by bucket, and of all turns: an added call's
    /// latency is drawn from its bucket's distribution, not its mean.
    latency: [Histogram; LENGTH_BUCKETS.len()],
    latency_overall: Histogram,
}

impl AddedCost {
    /// From the run's recorded events (and their latencies) by
    /// draft-length bucket.
    pub fn new(
        buckets: &[EventSums; LENGTH_BUCKETS.len()],
        latency: &[Histogram; LENGTH_BUCKETS.len()],
    ) -> AddedCost {
        let mut overall = EventSums::default();
        for b in buckets {
            overall.merge(b);
        }
        let mut latency = latency.clone();
        let mut latency_overall = Histogram::default();
        for h in &mut latency {
            h.settle();
            latency_overall.merge(h);
        }
        AddedCost {
            buckets: *buckets,
            overall,
            latency,
            latency_overall,
        }
    }

    /// The recorded latencies an added call of bucket `b` is drawn from:
    /// its bucket's when it holds at least [`MIN_LATENCY_POOL`], else all
    /// turns' (a tail drawn from a handful of values is one of them); None
    /// when none recorded one.
    pub fn latency_pool(&self, b: usize) -> Option<&Histogram> {
        match self.latency[b].count >= MIN_LATENCY_POOL {
            true => Some(&self.latency[b]),
            false => Some(&self.latency_overall).filter(|h| h.count > 0),
        }
    }

    /// Each bucket's pool size (0 where its fires need none).
    pub fn pool_sizes(
        &self,
        fires_by_length: &[u64; LENGTH_BUCKETS.len()],
    ) -> Vec<(usize, u64, bool)> {
        (0..LENGTH_BUCKETS.len())
            .filter(|&b| fires_by_length[b] > 0)
            .map(|b| {
                let own = self.latency[b].count >= MIN_LATENCY_POOL;
                let n = self.latency_pool(b).map_or(0, |h| h.count);
                (b, n, own)
            })
            .collect()
    }

    /// The estimate of `c`'s added calls (0 when it has none).
    pub fn estimate(&self, c: &Counts) -> Estimate {
        let mut est = Estimate::zero();
        for (b, &n) in c.added_by_length.iter().enumerate() {
            if n > 0 {
                est = est.plus(&Estimate::of(n, &self.buckets[b], &self.overall));
            }
        }
        est
    }

    /// The estimated latency of a call in bucket `b`: its bucket's mean
    /// recorded latency when it has at least [`MIN_LATENCY_POOL`], else all
    /// turns'; None when none recorded one.
    pub fn latency_ms(&self, b: usize) -> Option<f64> {
        let e = match self.buckets[b].with_latency >= MIN_LATENCY_POOL {
            false => &self.overall,
            true => &self.buckets[b],
        };
        (e.with_latency > 0).then(|| e.latency_ns as f64 / 1e6 / e.with_latency as f64)
    }

    /// Whether any recorded event has token counts.
    pub fn tokens_measured(&self) -> bool {
        self.overall.with_tokens > 0
    }
}

/// Critic cost estimated for calls where no critic ran.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Estimate {
    pub tokens_in: Option<f64>,
    pub tokens_out: Option<f64>,
    pub latency_ms: Option<f64>,
    pub usd: Option<f64>,
}

impl Estimate {
    /// Nothing added: every figure 0.
    pub fn zero() -> Estimate {
        Estimate {
            tokens_in: Some(0.0),
            tokens_out: Some(0.0),
            latency_ms: Some(0.0),
            usd: Some(0.0),
        }
    }

    /// `n` calls, each the mean recorded event of `local` (its bucket),
    /// figure by figure, or of `overall` where `local` measured none.
    pub fn of(n: u64, local: &EventSums, overall: &EventSums) -> Estimate {
        let n = n as f64;
        let pick = |k: fn(&EventSums) -> u64| if k(local) > 0 { local } else { overall };
        let per = |sum: f64, k: u64| (k > 0).then(|| n * sum / k as f64);
        // A latency from fewer than MIN_LATENCY_POOL values is every
        // turn's, as the percentiles' pool.
        let l = match local.with_latency >= MIN_LATENCY_POOL {
            true => local,
            false => overall,
        };
        let t = pick(|e| e.with_tokens);
        Estimate {
            tokens_in: per(t.tokens_in as f64, t.with_tokens),
            tokens_out: per(t.tokens_out as f64, t.with_tokens),
            latency_ms: per(l.latency_ns as f64 / 1e6, l.with_latency),
            usd: t.usd().and_then(|u| per(u, t.with_tokens)),
        }
    }

    /// Sum of two estimates (absent if either is).
    pub fn plus(&self, o: &Estimate) -> Estimate {
        let add = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a + b);
        Estimate {
            tokens_in: add(self.tokens_in, o.tokens_in),
            tokens_out: add(self.tokens_out, o.tokens_out),
            latency_ms: add(self.latency_ms, o.latency_ms),
            usd: add(self.usd, o.usd),
        }
    }
}

impl Counts {
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

/// A 128-bit sum as a report's 64-bit integer; None (reported absent, with
/// a note) when it does not fit.
pub(crate) fn reportable(sum: u128) -> Option<u64> {
    u64::try_from(sum).ok()
}

/// Nanoseconds from milliseconds, rounded (exact integer sums).
pub(crate) fn ms_to_ns(ms: f64) -> u64 {
    (ms * 1e6).round() as u64
}

/// A latency histogram with 1 ms buckets (sparse, so merging is cheap).
/// Percentiles are reported at 1 ms resolution: the upper edge of a bucket.
///
/// Adding is a push (a tree insert per turn and variant was a visible share
/// of a replay); [`Histogram::settle`] folds the pushed buckets in, sorted,
/// once per block, and merging walks two sorted lists.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Histogram {
    /// (bucket, count) sorted by bucket, counts > 0. Bucket k (k >= 1)
    /// holds latencies in (k-1, k] ms; bucket 0 holds 0.
    buckets: Vec<(u64, u64)>,
    /// Buckets added since the last settle, but bucket 0 (a skip adds no
    /// latency: most of a sweep's variants skip often), counted apart.
    pending: Vec<u64>,
    pending_zeros: u64,
    pub count: u64,
}

impl Histogram {
    pub fn add(&mut self, ms: f64) {
        self.count += 1;
        match Histogram::bucket(ms) {
            0 => self.pending_zeros += 1,
            k => self.pending.push(k),
        }
    }

    /// The bucket of a latency: whole ms, rounded up.
    fn bucket(ms: f64) -> u64 {
        if ms <= 0.0 {
            0
        } else {
            ms.ceil() as u64
        }
    }

    /// Fold the added latencies into the sorted buckets.
    pub fn settle(&mut self) {
        if self.pending.is_empty() && self.pending_zeros == 0 {
            return;
        }
        self.pending.sort_unstable();
        // Bucket 0 comes first: the runs stay sorted.
        let mut runs: Vec<(u64, u64)> = Vec::new();
        if self.pending_zeros > 0 {
            runs.push((0, std::mem::take(&mut self.pending_zeros)));
        }
        for &k in &self.pending {
            match runs.last_mut() {
                Some((last, c)) if *last == k => *c += 1,
                _ => runs.push((k, 1)),
            }
        }
        self.pending.clear();
        self.fold(&runs);
    }

    /// Add sorted (bucket, count) runs to the buckets.
    fn fold(&mut self, runs: &[(u64, u64)]) {
        let mut i = 0;
        let mut fresh = Vec::new();
        for &(k, c) in runs {
            while i < self.buckets.len() && self.buckets[i].0 < k {
                i += 1;
            }
            match self.buckets.get_mut(i) {
                Some((b, n)) if *b == k => *n += c,
                _ => fresh.push((k, c)),
            }
        }
        if !fresh.is_empty() {
            self.buckets.extend(fresh);
            // Two sorted runs: the stable sort merges them in linear time.
            self.buckets.sort_by_key(|b| b.0);
        }
    }

    pub fn merge(&mut self, o: &Histogram) {
        let Histogram {
            buckets,
            pending,
            pending_zeros,
            count,
        } = o;
        self.settle();
        self.count += count;
        self.fold(buckets);
        if !pending.is_empty() || *pending_zeros > 0 {
            self.pending.extend_from_slice(pending);
            self.pending_zeros += pending_zeros;
            self.settle();
        }
    }

    /// The buckets, in order (settled first).
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        let mut h = self.clone();
        h.settle();
        h.buckets
    }

    /// The nearest-rank `q` quantile (0 < q <= 1) in ms; None when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (k, c) in self.buckets() {
            seen += c;
            if seen >= rank {
                return Some(k as f64);
            }
        }
        None
    }
}

/// A latency distribution with weights that need not be whole: recorded
/// latencies count 1 each, an estimated call 1/n at each of its pool's n
/// recorded values.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mixture {
    /// (bucket, weight), sorted by bucket after [`Mixture::sort`].
    bins: Vec<(u64, f64)>,
    total: f64,
    /// Every weight is whole: quantiles are the histogram's own.
    whole: Option<Histogram>,
}

impl Mixture {
    fn of(h: &Histogram) -> Mixture {
        Mixture {
            bins: h
                .buckets()
                .into_iter()
                .map(|(k, c)| (k, c as f64))
                .collect(),
            total: h.count as f64,
            whole: Some(h.clone()),
        }
    }

    /// `n` calls spread over `pool`'s recorded values.
    fn spread(&mut self, n: u64, pool: &Histogram) {
        let per = n as f64 / pool.count as f64;
        self.bins
            .extend(pool.buckets().into_iter().map(|(k, c)| (k, c as f64 * per)));
        self.total += n as f64;
        self.whole = None;
    }

    fn sort(&mut self) {
        self.bins.sort_by_key(|b| b.0);
    }

    /// The `q` quantile: the least value whose cumulative weight reaches
    /// q of the total (nearest rank when every weight is whole); None when
    /// empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if let Some(h) = &self.whole {
            return h.quantile(q);
        }
        if self.total <= 0.0 {
            return None;
        }
        // A relative slack for the sums' rounding, far below one call.
        let target = q * self.total * (1.0 - 1e-12);
        let mut seen = 0.0;
        for &(k, w) in &self.bins {
            seen += w;
            if seen >= target {
                return Some(k as f64);
            }
        }
        self.bins.last().map(|b| b.0 as f64)
    }

    /// (value, cumulative share in [0, 1]) at each value.
    pub fn steps(&self) -> Vec<(u64, f64)> {
        let mut out: Vec<(u64, f64)> = Vec::new();
        let mut seen = 0.0;
        for &(k, w) in &self.bins {
            seen += w;
            let share = seen / self.total.max(f64::MIN_POSITIVE);
            match out.last_mut() {
                Some(last) if last.0 == k => last.1 = share,
                _ => out.push((k, share)),
            }
        }
        out
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
