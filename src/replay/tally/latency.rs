//! Latencies: a sparse 1 ms histogram that merges exactly, and the
//! weighted mixture percentiles with estimated calls are read from.

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
    pub(super) fn of(h: &Histogram) -> Mixture {
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
    pub(super) fn spread(&mut self, n: u64, pool: &Histogram) {
        let per = n as f64 / pool.count as f64;
        self.bins
            .extend(pool.buckets().into_iter().map(|(k, c)| (k, c as f64 * per)));
        self.total += n as f64;
        self.whole = None;
    }

    pub(super) fn sort(&mut self) {
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
