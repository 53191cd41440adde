//! The change alarm on a stream of labels: a Bernoulli CUSUM for a rise of
//! a regression rate from `p0` (the budget R) to `p1` (k R), in whole
//! units so that what `plan` predicts is exactly what a monitor runs.
//!
//! Each label moves the score S (from 0): a regression adds `up` units, any
//! other verdict takes one away (S never goes below 0); the alarm is S >=
//! `h`. `up` is the log-likelihood ratio of a regression over that of a
//! non-regression, ln(p1 / p0) / -ln((1 - p1) / (1 - p0)), rounded to a
//! whole number (at least 1). A whole-unit score makes its run length an
//! exact Markov chain on the states 0..h: its mean (the average run
//! length, ARL) solves a banded linear system, and its distribution (the
//! median delay) comes from stepping the chain, both without simulation.

/// A Bernoulli CUSUM in whole units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cusum {
    /// Units a regression adds (a non-regression takes 1 away).
    pub up: u64,
    /// The alarm threshold, in units.
    pub h: u64,
}

/// The longest average run length a chart is designed for, in labels.
pub const MAX_ARL: f64 = 1e8;

/// The most units a threshold may have: beyond it the chain (and a
/// monitor's state) would be too large to be worth it.
pub const MAX_H: u64 = 1 << 22;

impl Cusum {
    /// The units a regression adds for a rise from `p0` to `p1` (0 < p0 <
    /// p1 < 1): None outside that.
    pub fn units(p0: f64, p1: f64) -> Option<u64> {
        if !(0.0 < p0 && p0 < p1 && p1 < 1.0) {
            return None;
        }
        let up = (p1 / p0).ln();
        let down = -((1.0 - p1) / (1.0 - p0)).ln();
        Some(((up / down).round() as u64).max(1))
    }

    /// The next score after one label.
    pub fn step(&self, s: u64, regression: bool) -> u64 {
        match regression {
            true => s + self.up,
            false => s.saturating_sub(1),
        }
    }

    pub fn alarms(&self, s: u64) -> bool {
        s >= self.h
    }

    /// The chart for a rise from `p0` to `p1` whose average run length at
    /// `p0` (labels until a false alarm) is at least `arl0`: the smallest
    /// such threshold. None when p0, p1 are not 0 < p0 < p1 < 1 or no
    /// threshold up to [`MAX_H`] reaches it.
    pub fn for_arl(p0: f64, p1: f64, arl0: f64) -> Option<Cusum> {
        // Past 10^8 labels the doubles of the solve lose the run length's
        // digits (and no plan watches that long).
        if !(arl0 > 0.0 && arl0 <= MAX_ARL) {
            return None;
        }
        let up = Cusum::units(p0, p1)?;
        let arl = |h: u64| Cusum { up, h }.arl(p0);
        // The ARL rises with h: double, then bisect.
        let mut hi = 1u64;
        while arl(hi)? < arl0 {
            hi = hi.checked_mul(2).filter(|&h| h <= MAX_H)?;
        }
        let mut lo = hi / 2;
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            match arl(mid)? >= arl0 {
                true => hi = mid,
                false => lo = mid,
            }
        }
        Some(Cusum { up, h: hi })
    }

    /// The average run length from S = 0 at a true rate `p`: the expected
    /// labels until the alarm. With x_i the ARL from state i (0 <= i < h),
    /// x_i = 1 + p x_{i+up} + (1 - p) x_{max(i-1, 0)}, x_j = 0 for j >= h:
    /// a system with one band below the diagonal and `up` above, solved by
    /// elimination without pivoting (I - Q is an M-matrix). None when it
    /// does not converge (p = 0: no alarm ever).
    pub fn arl(&self, p: f64) -> Option<f64> {
        if p <= 0.0 || self.h > MAX_H {
            return None;
        }
        let h = self.h as usize;
        let up = self.up as usize;
        let q = 1.0 - p;
        // Row i: a[i][i - 1] = -q (i > 0), a[i][i] = 1 (1 - q at i = 0),
        // a[i][i + up] = -p (when i + up < h); rhs 1. The band right of
        // the diagonal, 0..=up, for each row.
        let mut band: Vec<Vec<f64>> = (0..h)
            .map(|i| {
                let mut r = vec![0.0; up + 1];
                r[0] = if i == 0 { 1.0 - q } else { 1.0 };
                if i + up < h {
                    r[up] -= p;
                }
                r
            })
            .collect();
        let mut rhs = vec![1.0; h];
        // Eliminate the one entry below the diagonal, row by row.
        for i in 1..h {
            let pivot = band[i - 1][0];
            if pivot.abs() < 1e-300 {
                return None;
            }
            let l = -q / pivot;
            let (prev, cur) = band.split_at_mut(i);
            let (prev, cur) = (&prev[i - 1], &mut cur[0]);
            // Row i - 1's entries at columns i - 1 + k land at column
            // i + (k - 1) of row i.
            for k in 1..=up {
                cur[k - 1] -= l * prev[k];
            }
            rhs[i] -= l * rhs[i - 1];
        }
        let mut x = vec![0.0; h];
        for i in (0..h).rev() {
            let mut s = rhs[i];
            for k in 1..=up.min(h - 1 - i) {
                s -= band[i][k] * x[i + k];
            }
            x[i] = s / band[i][0];
        }
        x[0].is_finite().then_some(x[0])
    }

    /// The median run length from S = 0 at a true rate `p`: the fewest
    /// labels by which the alarm has come with probability at least 1/2,
    /// by stepping the chain's distribution. None past `max_labels`.
    pub fn median_run_length(&self, p: f64, max_labels: u64) -> Option<u64> {
        let mut t = 0;
        let mut chain = Chain::new(self);
        while t < max_labels {
            t += 1;
            if chain.step(self, p) >= 0.5 {
                return Some(t);
            }
        }
        None
    }

    /// The probability that the alarm comes within `labels` labels from S =
    /// 0 at a true rate `p` (the chain stepped exactly).
    pub fn alarm_within(&self, p: f64, labels: u64) -> f64 {
        let mut chain = Chain::new(self);
        let mut alarmed = 0.0;
        for _ in 0..labels {
            alarmed = chain.step(self, p);
        }
        alarmed
    }
}

/// The chart's score distribution over 0..h, and the mass alarmed.
struct Chain {
    dist: Vec<f64>,
    next: Vec<f64>,
    alarmed: f64,
}

impl Chain {
    fn new(c: &Cusum) -> Chain {
        let mut dist = vec![0.0f64; c.h as usize];
        dist[0] = 1.0;
        Chain {
            next: vec![0.0; dist.len()],
            dist,
            alarmed: 0.0,
        }
    }

    /// One label at rate `p`; the probability alarmed by now.
    fn step(&mut self, c: &Cusum, p: f64) -> f64 {
        let (h, up) = (c.h as usize, c.up as usize);
        self.next.iter_mut().for_each(|x| *x = 0.0);
        for (i, &m) in self.dist.iter().enumerate() {
            if m == 0.0 {
                continue;
            }
            match i + up < h {
                true => self.next[i + up] += m * p,
                false => self.alarmed += m * p,
            }
            self.next[i.saturating_sub(1)] += m * (1.0 - p);
        }
        std::mem::swap(&mut self.dist, &mut self.next);
        self.alarmed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::SplitMix;

    /// The run length of the chart on simulated labels.
    fn simulate(c: &Cusum, p: f64, rng: &mut SplitMix) -> u64 {
        let (mut s, mut t) = (0u64, 0u64);
        loop {
            t += 1;
            s = c.step(s, rng.next() < p);
            if c.alarms(s) {
                return t;
            }
        }
    }

    /// The chain's ARL and median are what simulated labels give (within
    /// their sampling error), at the budget and at two and three times it.
    #[test]
    fn the_chain_predicts_the_simulated_run_lengths() {
        let (p0, p1) = (0.01, 0.02);
        let c = Cusum::for_arl(p0, p1, 5_000.0).unwrap();
        assert_eq!(c.up, 68, "ln 2 / -ln(0.98 / 0.99) = 68.3");
        assert!(c.arl(p0).unwrap() >= 5_000.0);
        assert!(
            Cusum { h: c.h - 1, ..c }.arl(p0).unwrap() < 5_000.0,
            "the smallest threshold"
        );
        let mut rng = SplitMix(7);
        for (p, reps) in [(p0, 400), (2.0 * p0, 2_000), (3.0 * p0, 2_000)] {
            let mut runs: Vec<u64> = (0..reps).map(|_| simulate(&c, p, &mut rng)).collect();
            runs.sort_unstable();
            let mean = runs.iter().sum::<u64>() as f64 / reps as f64;
            let arl = c.arl(p).unwrap();
            // The run length is near-geometric at p0: its sd is about its
            // mean, so 400 runs hold the mean within about 15% (3 sd).
            assert!(
                (mean - arl).abs() / arl < 0.15,
                "p {p}: simulated {mean}, chain {arl}"
            );
            if p > p0 {
                let median = c.median_run_length(p, 1_000_000).unwrap() as f64;
                let sim = runs[reps / 2] as f64;
                assert!(
                    (median - sim).abs() / median < 0.05,
                    "p {p}: simulated {sim}, chain {median}"
                );
            }
        }
    }

    /// The elimination agrees with a plain dense solve on a small chart.
    #[test]
    fn the_banded_solve_is_the_dense_one() {
        let c = Cusum { up: 3, h: 7 };
        let p = 0.2;
        let n = 7;
        let mut a = vec![vec![0.0f64; n + 1]; n];
        for (i, row) in a.iter_mut().enumerate() {
            row[i] += 1.0;
            row[i.saturating_sub(1)] -= 1.0 - p;
            if i + 3 < n {
                row[i + 3] -= p;
            }
            row[n] = 1.0;
        }
        // Gauss-Jordan with partial pivoting.
        for col in 0..n {
            let piv = (col..n)
                .max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))
                .unwrap();
            a.swap(col, piv);
            for r in 0..n {
                if r != col {
                    let f = a[r][col] / a[col][col];
                    let pivot_row = a[col].clone();
                    for (x, y) in a[r].iter_mut().zip(&pivot_row) {
                        *x -= f * y;
                    }
                }
            }
        }
        let dense = a[0][n] / a[0][0];
        let banded = c.arl(p).unwrap();
        assert!(
            (dense - banded).abs() < 1e-9 * dense,
            "{dense} against {banded}"
        );
    }

    #[test]
    fn a_chart_needs_a_rise() {
        assert_eq!(Cusum::units(0.02, 0.01), None);
        assert_eq!(Cusum::units(0.0, 0.01), None);
        assert_eq!(Cusum::for_arl(0.5, 1.0, 10.0), None);
    }
}
