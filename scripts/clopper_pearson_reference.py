#!/usr/bin/env python3
"""Print exact one-sided 95% Clopper-Pearson upper bounds for large n, to
50 digits (mpmath: the bound is the p at which P(X <= k) = alpha, found by
bisection on the binomial sum). `stats::tests::bounds_hold_past_a_billion_labels`
holds critic-gate's bound to be at least each of these (an upper bound
must not fall below the true one) and within 1e-9 of it, relatively."""
import mpmath

mpmath.mp.dps = 50
ALPHA = mpmath.mpf("0.05")


def cdf(k, n, p):
    return sum(mpmath.binomial(n, j) * p**j * (1 - p) ** (n - j) for j in range(k + 1))


def upper(k, n):
    if k == 0:
        return 1 - ALPHA ** (mpmath.mpf(1) / n)
    lo, hi = mpmath.mpf(k) / n, mpmath.mpf(1)
    for _ in range(200):
        mid = (lo + hi) / 2
        if cdf(k, n, mid) > ALPHA:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


for k, n in [(0, 10**9), (0, 10**12), (1, 10**9), (3, 10**9), (10, 10**9),
             (5, 10**7), (0, 20_000), (2, 2 * 10**9), (1500, 10**9), (5000, 10**10)]:
    print(f"({k}, {n}, {mpmath.nstr(upper(k, n), 20)}),")
