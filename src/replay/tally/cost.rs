//! What critic calls cost, and what the calls a variant adds would: the
//! integer sums of recorded events by draft-length bucket, and the one rule
//! that estimates an added call from them.

use super::latency::{ms_to_ns, Histogram};
use super::Counts;

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

/// A 128-bit sum as a report's 64-bit integer; None (reported absent, with
/// a note) when it does not fit.
pub(crate) fn reportable(sum: u128) -> Option<u64> {
    u64::try_from(sum).ok()
}
