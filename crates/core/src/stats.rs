//! Small statistics: the exact Clopper-Pearson bound.

/// ln Γ(x) for x > 0 (Lanczos, g = 7; relative error below 1e-13).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Continued fraction for the incomplete beta (Numerical Recipes' betacf).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let tiny = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < tiny {
        d = tiny;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..10_000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < tiny {
            d = tiny;
        }
        c = 1.0 + aa / c;
        if c.abs() < tiny {
            c = tiny;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < tiny {
            d = tiny;
        }
        c = 1.0 + aa / c;
        if c.abs() < tiny {
            c = tiny;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The Stirling-series remainder of ln Γ(x) for x >= 10: ln Γ(x) less
/// (x - 1/2) ln x - x + ln √(2π) (six terms; below 1e-16 from x = 10).
fn ln_gamma_correction(x: f64) -> f64 {
    let x2 = 1.0 / (x * x);
    (1.0 / 12.0
        - x2 * (1.0 / 360.0
            - x2 * (1.0 / 1260.0
                - x2 * (1.0 / 1680.0 - x2 * (1.0 / 1188.0 - x2 * (691.0 / 360_360.0))))))
        / x
}

/// ln B(a, b), without the cancellation of ln Γ(a + b) - ln Γ(b) when one
/// argument is large (R's `lbeta`): at a billion labels ln Γ loses six
/// digits, and a bound computed from it fell below the true bound.
fn ln_beta(a: f64, b: f64) -> f64 {
    let (p, q) = if a < b { (a, b) } else { (b, a) };
    let half_ln_2pi = 0.918_938_533_204_672_8;
    if p >= 10.0 {
        let corr = ln_gamma_correction(p) + ln_gamma_correction(q) - ln_gamma_correction(p + q);
        -0.5 * q.ln()
            + half_ln_2pi
            + corr
            + (p - 0.5) * (p / (p + q)).ln()
            + q * (-p / (p + q)).ln_1p()
    } else if q >= 10.0 {
        let corr = ln_gamma_correction(q) - ln_gamma_correction(p + q);
        ln_gamma(p) + corr + p - p * (p + q).ln() + (q - 0.5) * (-p / (p + q)).ln_1p()
    } else {
        ln_gamma(p) + ln_gamma(q) - ln_gamma(p + q)
    }
}

/// The regularized incomplete beta function I_x(a, b).
pub fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = -ln_beta(a, b) + a * x.ln() + b * (-x).ln_1p();
    let front = ln_front.exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

/// Up to this many successes the binomial sum is added up term by term
/// (the continued fraction loses digits when n is in the billions).
const DIRECT_SUM_MAX_K: u64 = 1_000;

/// P(X <= k) as the sum of its k + 1 terms, each from the one before
/// (t_j = t_{j-1} (n - j + 1) / j p / (1 - p)), in logarithms so that none
/// underflows, added from the largest.
fn binom_cdf_direct(k: u64, n: u64, p: f64) -> f64 {
    if p <= 0.0 {
        return 1.0;
    }
    if p >= 1.0 {
        return 0.0;
    }
    let odds = p.ln() - (-p).ln_1p();
    let mut ln_t = n as f64 * (-p).ln_1p();
    let mut terms = Vec::with_capacity(k as usize + 1);
    terms.push(ln_t);
    for j in 1..=k {
        ln_t += ((n - j + 1) as f64 / j as f64).ln() + odds;
        terms.push(ln_t);
    }
    let top = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = terms.iter().map(|t| (t - top).exp()).sum();
    (top + sum.ln()).exp().min(1.0)
}

/// P(X <= k) for X ~ Binomial(n, p).
pub fn binom_cdf(k: u64, n: u64, p: f64) -> f64 {
    if k >= n {
        return 1.0;
    }
    if k <= DIRECT_SUM_MAX_K {
        return binom_cdf_direct(k, n, p);
    }
    // P(X <= k) = I_{1-p}(n - k, k + 1) = 1 - I_p(k + 1, n - k): p itself,
    // not 1 - p, which keeps only the first digits of a small p.
    1.0 - inc_beta(k as f64 + 1.0, (n - k) as f64, p)
}

/// The exact one-sided upper confidence bound (Clopper-Pearson) for a
/// proportion with `k` successes in `n` trials: the p at which seeing `k` or
/// fewer has probability `alpha`. None when n = 0.
pub fn clopper_pearson_upper(k: u64, n: u64, alpha: f64) -> Option<f64> {
    if n == 0 {
        return None;
    }
    if k >= n {
        return Some(1.0);
    }
    if k == 0 {
        // Closed form: (1 - p)^n = alpha, without 1 - (something near 1).
        return Some(-(alpha.ln() / n as f64).exp_m1());
    }
    let (mut lo, mut hi) = (k as f64 / n as f64, 1.0);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if binom_cdf(k, n, mid) > alpha {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(0.5 * (lo + hi))
}

/// The exact one-sided lower confidence bound (Clopper-Pearson) for a
/// proportion with `k` successes in `n` trials: the p at which seeing `k` or
/// more has probability `alpha` (0 when k = 0). None when n = 0.
pub fn clopper_pearson_lower(k: u64, n: u64, alpha: f64) -> Option<f64> {
    if n == 0 {
        return None;
    }
    if k == 0 {
        return Some(0.0);
    }
    // P(X >= k) = 1 - P(X <= k - 1) rises with p.
    let (mut lo, mut hi) = (0.0, k as f64 / n as f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if 1.0 - binom_cdf(k - 1, n, mid) < alpha {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(0.5 * (lo + hi))
}

/// The fewest labelled skips that could certify rate `r` at confidence
/// 1 - `delta`: with no regression at all, the bound is 1 - delta^(1/n).
/// None past 2^53, where a double no longer counts exactly.
pub fn labels_needed(r: f64, delta: f64) -> Option<u64> {
    if r >= 1.0 {
        return Some(0);
    }
    // ln_1p: ln(1 - r) loses r entirely below about 1e-16.
    let n = (delta.ln() / (-r).ln_1p()).ceil().max(1.0);
    (n.is_finite() && n <= (1u64 << 53) as f64).then_some(n as u64)
}

/// The labelled skips from which on the bound at confidence 1 - `delta`
/// comes out at or below `r` with probability at least `power`, when the
/// true rate is `true_rate` (below `r`). The power rises in a saw-tooth
/// (one more label can push k* below the next whole number), so this is
/// the start of the first run of counts, stepped by a thousandth of
/// themselves ("about"), over which the power holds for a quarter more
/// labels; it is past the best case of [`labels_needed`]. None when
/// `true_rate` is not below `r`, or past ten million labels.
///
/// The bound is at or below `r` exactly when the regressions seen are at
/// most k*, the largest k with `binom_cdf(k, n, r) <= delta`; so the power
/// at n is `binom_cdf(k*, n, true_rate)`.
pub fn labels_for_power(r: f64, true_rate: f64, delta: f64, power: f64) -> Option<u64> {
    const MAX: u64 = 10_000_000;
    if !(0.0..r).contains(&true_rate) || r >= 1.0 {
        return None;
    }
    let mut n = labels_needed(r, delta)?;
    // k* + 1 (0 while even no regression certifies); it never falls as n
    // grows.
    let mut fits = 0u64;
    let mut held_from: Option<u64> = None;
    while n <= MAX {
        while fits < n && binom_cdf(fits, n, r) <= delta {
            fits += 1;
        }
        let holds = fits > 0 && binom_cdf(fits - 1, n, true_rate) >= power;
        held_from = match (holds, held_from) {
            (false, _) => None,
            (true, None) => Some(n),
            (true, Some(s)) if n >= s + s / 4 => return Some(s),
            (true, s) => s,
        };
        n += (n / 1000).max(1);
    }
    None
}

/// The runs like these (Kish's effective runs being `kish_share` of the
/// runs) from which on the certificate's bound comes out at or below `r`
/// with about 80% chance at a true rate of `true_rate`: a run counts at
/// most one trial, so [`labels_for_power`] effective runs, over the share
/// of runs they are. A simulation of typical traffic holds it
/// (`the_runs_hint_holds_and_the_power_price_is_measured`). None as
/// [`labels_for_power`], or without a share.
pub fn runs_hint(r: f64, true_rate: f64, kish_share: f64) -> Option<u64> {
    let effective = labels_for_power(r, true_rate, 0.05, 0.8)?;
    (kish_share > 0.0 && kish_share <= 1.0).then(|| (effective as f64 / kish_share).ceil() as u64)
}

/// The upper bound (Clopper-Pearson's beta form) for `x` successes in `n`
/// trials, both real: the p with I_p(x + 1, n - x) = 1 - `alpha`. For
/// whole numbers it is [`clopper_pearson_upper`]; the run-level bound
/// uses it on effective counts. None when n is not positive.
pub fn clopper_pearson_upper_real(x: f64, n: f64, alpha: f64) -> Option<f64> {
    if n.is_nan() || n <= 0.0 {
        return None;
    }
    if x >= n {
        return Some(1.0);
    }
    if x <= 0.0 {
        return Some(-(alpha.ln() / n).exp_m1());
    }
    let (mut lo, mut hi) = (x / n, 1.0);
    // 80 halvings of at most 1: far below the 9 digits reported.
    for _ in 0..80 {
        let mid = 0.5 * (lo + hi);
        // P(X >= x + 1) at mid, below 1 - alpha: the bound is higher.
        if inc_beta(x + 1.0, n - x, mid) < 1.0 - alpha {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(0.5 * (lo + hi))
}

/// The lower bound for real `x` of real `n` (as
/// [`clopper_pearson_upper_real`]): the p with I_p(x, n - x + 1) =
/// `alpha`; 0 when x is 0.
pub fn clopper_pearson_lower_real(x: f64, n: f64, alpha: f64) -> f64 {
    if x <= 0.0 || n <= 0.0 {
        return 0.0;
    }
    let x = x.min(n);
    let (mut lo, mut hi) = (0.0, x / n);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        // P(X >= x) at mid, below alpha: the bound is higher.
        if inc_beta(x, n - x + 1.0, mid) < alpha {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The one-sided quantile t with P(T <= t) = 1 - `alpha` of Student's t
/// with `df` degrees of freedom (df >= 1, alpha in (0, 0.5]).
pub fn t_quantile(df: f64, alpha: f64) -> f64 {
    // Past a million degrees of freedom t is the normal quantile to 6
    // digits, and the beta form loses digits.
    let df = df.min(1e6);
    let upper_tail = |t: f64| 0.5 * inc_beta(df / 2.0, 0.5, df / (df + t * t));
    let (mut lo, mut hi) = (0.0, 1.0);
    while upper_tail(hi) > alpha && hi < 1e12 {
        hi *= 2.0;
    }
    // 64 halvings of at most 1e12: below 1e-7, past the digits used.
    for _ in 0..64 {
        let mid = 0.5 * (lo + hi);
        if upper_tail(mid) > alpha {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Above this design effect a per-turn bound would be optimistic, and
/// the reports say the verdicts cluster by run.
pub const DESIGN_EFFECT_WARNING: f64 = 1.5;

/// Below this many runs with a regression the design effect estimated
/// from them is itself too uncertain (a reviewer's simulation: 8% non-
/// coverage with about 9 such runs of unequal sizes): the bound takes the
/// design effect of perfectly alike runs instead, when larger.
pub const MIN_REGRESSED_RUNS: u64 = 10;

/// Labels grouped by run (a conversation): what a bound needs when the
/// verdicts of one run's turns are alike. Built from each run's own count
/// of labels (n_i) and of regressions (k_i).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RunLabels {
    /// Runs with at least one label.
    pub runs: u64,
    /// Labels (the sum of n_i).
    pub labels: u64,
    /// Regressions (the sum of k_i).
    pub regressions: u64,
    /// The design effect the bound uses (at least 1): the ratio
    /// estimator's variance over runs (linearised, m / (m - 1) sum (k_i -
    /// p n_i)^2 / n^2) over the binomial variance p (1 - p) / n; with
    /// fewer than [`MIN_REGRESSED_RUNS`] runs holding a regression, at
    /// least that of perfectly alike runs (n / [`RunLabels::effective_runs`]);
    /// 1 with one label a run. None where it is undefined (no regression,
    /// all regressions, or fewer than 2 runs).
    pub design_effect: Option<f64>,
    /// Kish's effective number of runs, (sum n_i)^2 / sum n_i^2: as many
    /// equal runs as these are worth when every run's labels agree (m for
    /// runs of one size, n for one label a run).
    pub effective_runs: f64,
}

impl RunLabels {
    /// From each run's (labels, regressions), in any order (the sums are
    /// exact integers, then the squares of exact differences are added in
    /// floating point).
    pub fn of(per_run: impl Iterator<Item = (u64, u64)> + Clone) -> RunLabels {
        let (mut runs, mut n, mut k, mut regressed, mut sq) = (0u64, 0u64, 0u64, 0u64, 0u128);
        for (ni, ki) in per_run.clone().filter(|(ni, _)| *ni > 0) {
            runs += 1;
            n += ni;
            k += ki;
            regressed += u64::from(ki > 0);
            sq += u128::from(ni) * u128::from(ni);
        }
        let mut out = RunLabels {
            runs,
            labels: n,
            regressions: k,
            design_effect: None,
            effective_runs: match sq {
                0 => 0.0,
                _ => (n as f64) * (n as f64) / sq as f64,
            },
        };
        if runs < 2 || k == 0 || k == n {
            return out;
        }
        if runs == n {
            // One label a run: nothing inside a run to be alike, and the
            // binomial variance is exact.
            out.design_effect = Some(1.0);
            return out;
        }
        // sum (k_i - (k/n) n_i)^2 = S / n^2 with S = sum (n k_i - k n_i)^2.
        let s: f64 = per_run
            .filter(|(ni, _)| *ni > 0)
            .map(|(ni, ki)| {
                let d = i128::from(n) * i128::from(ki) - i128::from(k) * i128::from(ni);
                (d as f64) * (d as f64)
            })
            .sum();
        let (m, nf, kf) = (runs as f64, n as f64, k as f64);
        // v = m/(m-1) S/n^4 against p(1-p)/n = k(n-k)/n^3.
        let mut deff = (m / (m - 1.0) * s / (nf * kf * (nf - kf))).max(1.0);
        if regressed < MIN_REGRESSED_RUNS {
            deff = deff.max(nf / out.effective_runs);
        }
        out.design_effect = Some(deff);
        out
    }

    /// `n` labels, `k` of them regressions, each label its own run: what
    /// [`RunLabels::of`] gives for one label a run, without the runs.
    pub fn independent(n: u64, k: u64) -> RunLabels {
        RunLabels {
            runs: n,
            labels: n,
            regressions: k,
            design_effect: (n >= 2 && k > 0 && k < n).then_some(1.0),
            effective_runs: n as f64,
        }
    }

    /// Labels as if independent: n over the design effect (n when it is
    /// undefined).
    pub fn effective_labels(&self) -> f64 {
        self.labels as f64 / self.design_effect.unwrap_or(1.0)
    }

    /// The same labels with each run worth at most one trial: the design
    /// effect raised to at least n / Kish's effective runs, so the
    /// effective labels never exceed the effective runs. What a
    /// certificate rests on (see [`certificate_upper`]).
    pub fn one_trial_a_run(&self) -> RunLabels {
        let mut l = *self;
        if let Some(d) = l.design_effect.filter(|_| l.effective_runs > 0.0) {
            l.design_effect = Some(d.max(l.labels as f64 / l.effective_runs));
        }
        l
    }

    /// Kish's effective runs below this share of the runs: a few runs hold
    /// most of the labels, and a rare long run can carry the rate (the
    /// review's heavy-tailed sizes fell below about 30%).
    pub fn few_runs_hold_most(&self) -> bool {
        self.runs >= 2 && self.effective_runs < FEW_RUNS_HOLD_MOST * self.runs as f64
    }
}

/// The share of runs under which Kish's effective runs say that a few runs
/// hold most of the labels ([`RunLabels::few_runs_hold_most`]).
pub const FEW_RUNS_HOLD_MOST: f64 = 0.3;

/// The run-level upper bound at 1 - `alpha` on the rate of regressions per
/// label, when runs are independent and the turns of one run need not be
/// (Korn and Graubard's Clopper-Pearson interval for clustered samples,
/// Survey Methodology 24 (1998) 193-201): the exact bound on effective
/// counts, n_eff = n / deff, cut further by (t_{n-1} / t_{m-1})^2 for the
/// m runs the variance rests on, with p = k / n kept.
///
/// Where the data cannot estimate the design effect it does not assume
/// independence: with no regression the bound is the exact one with each
/// run one trial (valid whatever the correlation inside a run: a run with
/// rate q has no regression with probability at least 1 - q), with
/// regressions in a single run it is 1. None without labels.
pub fn run_level_upper(l: &RunLabels, alpha: f64) -> Option<f64> {
    let (n, k) = (l.labels, l.regressions);
    if n == 0 {
        return None;
    }
    if k == 0 {
        return clopper_pearson_upper_real(0.0, l.effective_runs, alpha);
    }
    if l.runs < 2 || k >= n {
        return Some(1.0);
    }
    if l.runs == n && l.design_effect == Some(1.0) {
        // Independent labels: the exact bound itself.
        return clopper_pearson_upper(k, n, alpha);
    }
    let p = k as f64 / n as f64;
    let mut n_eff = l.effective_labels();
    // t's one-sided quantile is for alpha below 0.5.
    if n > 1 && alpha < 0.5 {
        let ratio = t_quantile((n - 1) as f64, alpha) / t_quantile((l.runs - 1) as f64, alpha);
        n_eff *= (ratio * ratio).min(1.0);
    }
    clopper_pearson_upper_real(p * n_eff, n_eff, alpha)
}

/// The bound a certificate rests on: [`run_level_upper`] with each run
/// worth at most one trial ([`RunLabels::one_trial_a_run`]). Korn and
/// Graubard's estimated design effect can fall far below the truth when a
/// few rare long runs hold the regressions (the review's heavy-tailed
/// sizes: 55-91% coverage); a run counted at most once restored the
/// coverage in every such case but one, at about 12% more runs at R =
/// 0.05. `check`'s budgets, calibrate's and mine's tests use it; the
/// published `safety_regression_rate_upper95` stays Korn and Graubard's.
pub fn certificate_upper(l: &RunLabels, alpha: f64) -> Option<f64> {
    run_level_upper(&l.one_trial_a_run(), alpha)
}

/// Whether [`certificate_upper`] at 1 - `alpha` is at most `r`, without
/// the bound's search where the exact test says it at once (no
/// regression; independent labels: the binomial tail at `r`).
pub fn run_level_passes(l: &RunLabels, r: f64, alpha: f64) -> bool {
    let l = &l.one_trial_a_run();
    let (n, k) = (l.labels, l.regressions);
    if n == 0 {
        return false;
    }
    if k == 0 {
        return no_regression_chance(l, r) <= alpha;
    }
    if l.runs == n && l.design_effect == Some(1.0) {
        return binom_cdf(k, n, r) <= alpha;
    }
    certificate_upper(l, alpha).is_some_and(|u| u <= r)
}

/// (1 - r)^m with m Kish's effective runs: the chance of no regression
/// at rate r when runs are alike, which the bound without regressions
/// inverts.
fn no_regression_chance(l: &RunLabels, r: f64) -> f64 {
    (l.effective_runs * (-r).ln_1p()).exp()
}

/// The p-value of "the rate is `r` or more" that matches
/// [`certificate_upper`]: the least alpha at which the bound is at most
/// `r` (1 without labels or when no alpha below 1 gets it there).
pub fn run_level_p_value(l: &RunLabels, r: f64) -> f64 {
    let l = &l.one_trial_a_run();
    if l.labels == 0 {
        return 1.0;
    }
    // The exact tests' own p-values where the bound is theirs.
    if l.regressions == 0 {
        return no_regression_chance(l, r);
    }
    if l.runs == l.labels && l.design_effect == Some(1.0) {
        return binom_cdf(l.regressions, l.labels, r);
    }
    let at = |a: f64| run_level_upper(l, a).is_some_and(|u| u <= r);
    if !at(0.999_999) {
        return 1.0;
    }
    // The bound falls as alpha rises: bisect on ln alpha.
    let (mut lo, mut hi) = ((1e-300f64).ln(), (0.999_999f64).ln());
    if at(lo.exp()) {
        return lo.exp();
    }
    // 60 halvings of ln alpha's range (about 690): within 1e-15.
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if at(mid.exp()) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi.exp()
}

/// ln C(n, k), k <= n: -ln(n + 1) - ln B(n - k + 1, k + 1), through the
/// accurate ln-beta (three ln-gamma values of about 2 * 10^10 each lose
/// the digits that matter at a billion).
fn ln_choose(n: u64, k: u64) -> f64 {
    if k == 0 || k == n {
        return 0.0;
    }
    -((n as f64) + 1.0).ln() - ln_beta((n - k) as f64 + 1.0, k as f64 + 1.0)
}

/// P(X <= x) for X ~ Hypergeometric: `draws` taken without replacement
/// from `population` items of which `marked` are marked, X the marked
/// ones drawn.
pub fn hypergeom_cdf(x: u64, population: u64, marked: u64, draws: u64) -> f64 {
    ln_hypergeom_cdf(x, population, marked, draws)
        .exp()
        .min(1.0)
}

/// ln P(X <= x) of [`hypergeom_cdf`], kept in logs: a product of such
/// probabilities across groups (`crate::pooled`) stays exact where each
/// is near 1.
pub fn ln_hypergeom_cdf(x: u64, population: u64, marked: u64, draws: u64) -> f64 {
    let lo = (draws + marked).saturating_sub(population);
    let hi = draws.min(marked);
    if x >= hi {
        return 0.0;
    }
    if x < lo {
        return f64::NEG_INFINITY;
    }
    let terms: Vec<f64> = (lo..=x)
        .map(|k| ln_hypergeom_pmf(k, population, marked, draws))
        .collect();
    let top = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = terms.iter().map(|t| (t - top).exp()).sum();
    (top + sum.ln()).min(0.0)
}

/// ln P(X = x) for the hypergeometric of [`hypergeom_cdf`]; x within the
/// support (x <= marked, draws - x <= population - marked).
pub fn ln_hypergeom_pmf(x: u64, population: u64, marked: u64, draws: u64) -> f64 {
    ln_choose(marked, x) + ln_choose(population - marked, draws - x) - ln_choose(population, draws)
}

/// The exact one-sided upper confidence bound on how many of `population`
/// items are marked, from a simple random sample without replacement of
/// `draws` holding `x` marked: the most marked items with which seeing `x`
/// or fewer has probability above `alpha`. Whatever the true count m,
/// P(bound < m) <= alpha. None without a draw, or when `x > draws` or
/// `draws > population`.
pub fn hypergeom_upper(x: u64, draws: u64, population: u64, alpha: f64) -> Option<u64> {
    if draws == 0 || x > draws || draws > population {
        return None;
    }
    // At most the marked items the sample allows: x seen, the unseen rest.
    let (mut lo, mut hi) = (x, population - (draws - x));
    if hypergeom_cdf(x, population, hi, draws) > alpha {
        return Some(hi);
    }
    // cdf(lo) = 1 > alpha >= cdf(hi); the cdf falls as m rises.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if hypergeom_cdf(x, population, mid, draws) > alpha {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo)
}

/// splitmix64: the seeded generator of the simulations that hold the
/// bounds' guarantees (in the crates' tests and `tests/cli`), one in the
/// repository so every simulation draws alike.
#[derive(Clone, Debug)]
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next draw, uniform in (0, 1]: a logarithm of it never sees 0.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (((z ^ (z >> 31)) >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Binomial(n, p) exactly, by geometric gaps between successes
    /// (about n p draws instead of n).
    pub fn binomial(&mut self, n: u64, p: f64) -> u64 {
        if p <= 0.0 {
            return 0;
        }
        let ln_q = (-p).ln_1p();
        let (mut k, mut at) = (0, 0u64);
        loop {
            let gap = (self.next().ln() / ln_q).floor();
            if gap >= (n - at) as f64 {
                return k;
            }
            at += gap as u64 + 1;
            k += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run counts at most one trial in a certificate: 30 runs, 20 of 25
    /// labels and 10 of 1 label, a regression in each of 12 long runs.
    /// Korn and Graubard's design effect from those runs counts more
    /// effective labels than there are effective runs; the certificate's
    /// counts exactly Kish's runs, and its bound is the higher.
    #[test]
    fn a_certificate_counts_each_run_at_most_once() {
        let per: Vec<(u64, u64)> = (0..30)
            .map(|i| match i {
                0..=11 => (25, 1),
                12..=19 => (25, 0),
                _ => (1, 0),
            })
            .collect();
        let l = RunLabels::of(per.iter().copied());
        let c = l.one_trial_a_run();
        assert!(l.effective_labels() > l.effective_runs, "{l:?}");
        assert!(
            (c.effective_labels() - l.effective_runs).abs() < 1e-9,
            "{c:?}"
        );
        assert!(certificate_upper(&l, 0.05).unwrap() > run_level_upper(&l, 0.05).unwrap());
        // Nothing changes where a run is one label, or without regressions.
        let one = RunLabels::independent(100, 3);
        assert_eq!(one.one_trial_a_run(), one);
        let none = RunLabels::of([(25u64, 0u64), (1, 0)].into_iter());
        assert_eq!(certificate_upper(&none, 0.05), run_level_upper(&none, 0.05));
        assert!(l.few_runs_hold_most() == (l.effective_runs < 0.3 * 30.0));
    }

    /// The power figure: the issue's own example (80% power for a true
    /// 0.01 at R = 0.02 takes about 1,030 labels), the exact search it
    /// steps through, and a simulation of the bound at that many labels.
    #[test]
    fn labels_for_power_is_the_count_that_reaches_the_power() {
        let n = labels_for_power(0.02, 0.01, 0.05, 0.8).unwrap();
        assert!((1030..=1120).contains(&n), "{n}");
        // Exactly, label by label: the power first reaches 0.8 at 969 but
        // falls below it again up to 1,090; from 1,091 on it holds.
        let power = |n: u64| {
            let k = (0..n)
                .take_while(|&k| binom_cdf(k, n, 0.02) <= 0.05)
                .count() as u64;
            if k > 0 {
                binom_cdf(k - 1, n, 0.01)
            } else {
                0.0
            }
        };
        let exact = (59..2000)
            .find(|&m| (m..m + m / 4).all(|j| power(j) >= 0.8))
            .unwrap();
        assert_eq!(exact, 1091);
        assert!(n >= exact && n <= exact + exact / 500 + 1, "{n} vs {exact}");
        assert!(power(969) >= 0.8 && power(1090) < 0.8);
        // Simulated: the bound at n labels falls at or below R in about
        // 80% of draws at the true rate (xorshift, fixed seed).
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut uniform = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        let draws = 4000;
        let hits = (0..draws)
            .filter(|_| {
                let k = (0..n).filter(|_| uniform() < 0.01).count() as u64;
                clopper_pearson_upper(k, n, 0.05).unwrap() <= 0.02
            })
            .count();
        let share = hits as f64 / draws as f64;
        // Within 3.5 standard errors of the exact power, which is >= 0.8.
        assert!(
            (share - power(n)).abs() < 0.02 && share > 0.78,
            "{share} vs {}",
            power(n)
        );
        assert_eq!(labels_for_power(0.02, 0.02, 0.05, 0.8), None);
    }

    /// Student's t quantiles (R's qt(0.95, df)), the real-valued bound
    /// at whole counts, and the run-level bound where each run holds one
    /// label: all three are the plain exact bound.
    #[test]
    fn run_level_bound_reduces_to_the_exact_one_for_independent_labels() {
        for (df, want) in [(1.0, 6.313752), (10.0, 1.812461), (1e9, 1.644854)] {
            let t = t_quantile(df, 0.05);
            assert!((t - want).abs() < 1e-5, "t({df}) = {t}");
        }
        for (k, n) in [(0u64, 50u64), (1, 10), (5, 100), (10, 1000), (3, 3)] {
            let cp = clopper_pearson_upper(k, n, 0.05).unwrap();
            let real = clopper_pearson_upper_real(k as f64, n as f64, 0.05).unwrap();
            assert!((cp - real).abs() < 1e-9, "{k}/{n}: {cp} vs {real}");
            let per_run = (0..n).map(|i| (1u64, u64::from(i < k)));
            let l = RunLabels::of(per_run);
            assert_eq!((l.runs, l.labels, l.regressions), (n, n, k));
            assert_eq!(l, RunLabels::independent(n, k));
            // One label a run: nothing to be alike.
            if k > 0 && k < n {
                assert_eq!(l.design_effect, Some(1.0));
            }
            let u = run_level_upper(&l, 0.05).unwrap();
            assert_eq!(u, cp, "{k}/{n}");
            let lo = clopper_pearson_lower(k, n, 0.05).unwrap();
            assert!((clopper_pearson_lower_real(k as f64, n as f64, 0.05) - lo).abs() < 1e-9);
            assert!(run_level_passes(&l, u + 1e-9, 0.05) && !run_level_passes(&l, u - 1e-6, 0.05));
            if u < 1.0 {
                let p = run_level_p_value(&l, u + 1e-9);
                assert!(p <= 0.05 + 1e-6 && p > 0.04, "{k}/{n}: p {p}");
            }
        }
    }

    /// Verdicts alike within a run: 200 runs of 30 labels, 20 runs with
    /// every label a regression. The design effect is about 1 + (30 - 1)
    /// = 30 (the intra-run correlation is 1), and the bound rests on the
    /// runs, not on the 6,000 labels.
    #[test]
    fn alike_runs_raise_the_design_effect() {
        let per_run = (0..200u64).map(|i| (30u64, if i < 20 { 30 } else { 0 }));
        let l = RunLabels::of(per_run);
        let d = l.design_effect.unwrap();
        assert!((d - 30.0).abs() < 0.5, "{d}");
        let u = run_level_upper(&l, 0.05).unwrap();
        // 20 of 200 runs: the exact bound on runs is about 0.14.
        let runs = clopper_pearson_upper(20, 200, 0.05).unwrap();
        assert!((u - runs).abs() < 0.01, "{u} vs {runs}");
        assert!(u > clopper_pearson_upper(600, 6000, 0.05).unwrap() + 0.02);
        // No regression: each run one trial.
        let none = RunLabels::of((0..200u64).map(|_| (30u64, 0u64)));
        assert_eq!(
            run_level_upper(&none, 0.05),
            clopper_pearson_upper(0, 200, 0.05)
        );
    }

    #[test]
    fn zero_of_3000_is_about_0_000998() {
        let u = clopper_pearson_upper(0, 3000, 0.05).unwrap();
        assert!((u - 0.000998).abs() < 1e-6, "{u}");
    }

    #[test]
    fn known_values() {
        // Reference values: bisection on the exact binomial sum (Python, math.comb).
        let cases = [
            (1, 10, 0.394163302),
            (5, 100, 0.102253378),
            (3, 3, 1.0),
            (10, 1000, 0.016903175),
        ];
        for (k, n, want) in cases {
            let got = clopper_pearson_upper(k, n, 0.05).unwrap();
            assert!((got - want).abs() < 1e-6, "{k}/{n}: {got} vs {want}");
        }
        assert_eq!(clopper_pearson_upper(0, 0, 0.05), None);
    }

    #[test]
    fn binomial_cdf_matches_direct_sum() {
        let (n, p) = (20u64, 0.3f64);
        let mut direct = 0.0;
        let mut c = 1.0f64;
        for k in 0..=5u64 {
            if k > 0 {
                c = c * (n - k + 1) as f64 / k as f64;
            }
            direct += c * p.powi(k as i32) * (1.0 - p).powi((n - k) as i32);
        }
        assert!((binom_cdf(5, n, p) - direct).abs() < 1e-12);
    }

    /// The hypergeometric cdf sums to what counting subsets gives.
    #[test]
    fn hypergeom_cdf_counts_subsets() {
        // 10 items, 4 marked, 5 drawn: P(X <= 1) = (C(4,0)C(6,5) +
        // C(4,1)C(6,4)) / C(10,5) = (6 + 60) / 252.
        let p = hypergeom_cdf(1, 10, 4, 5);
        assert!((p - 66.0 / 252.0).abs() < 1e-12, "{p}");
        assert_eq!(hypergeom_cdf(4, 10, 4, 5), 1.0);
        assert_eq!(
            hypergeom_cdf(0, 10, 8, 5),
            0.0,
            "at least 3 marked are drawn"
        );
    }

    /// The bound covers every true count: for each population, draw size
    /// and marked count, the probability that the bound falls below the
    /// truth, summed exactly over the outcomes, is at most alpha.
    #[test]
    fn hypergeom_upper_covers_every_truth_exactly() {
        for population in [1u64, 7, 30, 61] {
            for draws in [1, population / 3 + 1, population] {
                for m in 0..=population {
                    let miss: f64 = (0..=draws.min(m))
                        .filter(|&x| hypergeom_upper(x, draws, population, 0.05).unwrap() < m)
                        .map(|x| {
                            hypergeom_cdf(x, population, m, draws)
                                - x.checked_sub(1)
                                    .map_or(0.0, |y| hypergeom_cdf(y, population, m, draws))
                        })
                        .sum();
                    assert!(
                        miss <= 0.05 + 1e-9,
                        "N {population} n {draws} m {m}: {miss}"
                    );
                }
            }
        }
    }

    /// Review of #45: ln C(n, k) from three ln-gamma values lost digits at
    /// a billion skips, and the bound came out below the exact one (15,433,730
    /// against 15,433,732 regressions for 3 in 500 of 10^9: a published rate
    /// below the true bound). The exact values, by big-integer arithmetic.
    #[test]
    fn hypergeom_upper_keeps_its_digits_at_a_billion() {
        let n = 1_000_000_000;
        assert_eq!(hypergeom_upper(3, 500, n, 0.05), Some(15_433_732));
        assert_eq!(hypergeom_upper(10, 2_000, n, 0.05), Some(8_466_344));
    }

    /// With a population far larger than the sample, the bound on the
    /// share is Clopper-Pearson's (sampling without replacement becomes
    /// sampling with it), and a census bounds the count exactly.
    #[test]
    fn hypergeom_upper_meets_clopper_pearson_and_the_census() {
        let n = 10_000_000;
        let u = hypergeom_upper(3, 500, n, 0.05).unwrap() as f64 / n as f64;
        let cp = clopper_pearson_upper(3, 500, 0.05).unwrap();
        assert!((u - cp).abs() / cp < 0.002, "{u} against {cp}");
        assert_eq!(hypergeom_upper(7, 40, 40, 0.05), Some(7));
        assert_eq!(hypergeom_upper(0, 0, 40, 0.05), None);
    }
}
