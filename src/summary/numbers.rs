//! How figures are written: dollars as decimals of at most 6 places,
//! milliseconds as whole numbers (the latency tallies have 1 ms
//! resolution), and other real numbers (rates, means) with at most 9
//! significant digits, so no figure carries binary float noise
//! (`-0.047249999999999986`). The sums behind them are exact integers; this
//! is only their last step to text, the same for CSV and JSON.

/// Dollars, to the nearest millionth, and to at most 15 significant
/// digits (what a double holds exactly as decimal text): past $1e9 the
/// millionths go first, never into float noise.
pub(crate) fn usd(x: Option<f64>) -> Option<f64> {
    x.map(|x| {
        if !x.is_finite() {
            return x;
        }
        let whole_digits = if x.abs() >= 1.0 {
            x.abs().log10().floor() as i64 + 1
        } else {
            1
        };
        let text = match whole_digits {
            16.. => format!("{x:.14e}"),
            _ => format!("{x:.*}", (15 - whole_digits).clamp(0, 6) as usize),
        };
        text.parse::<f64>().map_or(x, |r| r + 0.0)
    })
}

/// Milliseconds (>= 0), to the nearest whole one.
pub(crate) fn ms(x: Option<f64>) -> Option<u64> {
    x.map(|x| x.round().max(0.0) as u64)
}

/// Milliseconds that may be negative (a net figure), to the nearest.
pub(crate) fn signed_ms(x: Option<f64>) -> Option<i64> {
    x.map(|x| x.round() as i64)
}

/// A real number with at most 9 significant digits.
pub(crate) fn sig(x: Option<f64>) -> Option<f64> {
    x.map(|x| {
        if x == 0.0 || !x.is_finite() {
            return x + 0.0;
        }
        // Through decimal text: the nearest double to the 9-digit decimal,
        // whose shortest form is that decimal.
        format!("{x:.8e}").parse::<f64>().map_or(x, |r| r + 0.0)
    })
}

/// As [`sig`], rounded up: an upper bound stays an upper bound (a budget
/// is never passed by rounding).
pub(crate) fn sig_up(x: Option<f64>) -> Option<f64> {
    x.map(|x| {
        let r = sig(Some(x)).unwrap_or(x);
        if r >= x || !x.is_finite() {
            return r;
        }
        let text = format!("{x:.8e}");
        let exp: i32 = text
            .split('e')
            .nth(1)
            .and_then(|e| e.parse().ok())
            .unwrap_or(0);
        sig(Some(r + 10f64.powi(exp - 8))).unwrap_or(x)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_float_noise() {
        assert_eq!(usd(Some(-0.047249999999999986)), Some(-0.04725));
        assert_eq!(usd(Some(-1.9687499999999993)), Some(-1.96875));
        assert_eq!(usd(Some(-0.0000001)), Some(0.0), "no negative zero");
        assert_eq!(sig(Some(0.8333333333333334)), Some(0.833333333));
        assert_eq!(sig(Some(2.0 / 3.0 * 1e-7)), Some(6.66666667e-8));
        assert_eq!(sig(Some(1234567890123.0)), Some(1234567890000.0));
        assert_eq!(ms(Some(2499.5)), Some(2500));
        assert_eq!(sig_up(Some(0.39416329061)), Some(0.394163291));
        assert_eq!(sig_up(Some(0.5)), Some(0.5));
        assert_eq!(sig_up(Some(0.1234567891)), Some(0.123456790));
        assert_eq!(signed_ms(Some(-0.4)), Some(0));
        // Past $1e9, 6 decimals would take more digits than a double
        // holds: the text carried 17 (1234567890123.4568).
        for x in [
            1234567890123.4567,
            98_765_432_109.876_54,
            1e18 / 7.0,
            0.1 + 0.2,
        ] {
            let s = usd(Some(x)).unwrap().to_string();
            let digits = s.trim_start_matches(['-', '0', '.']).replace('.', "");
            assert!(digits.trim_end_matches('0').len() <= 15, "{s}");
            assert!(
                (usd(Some(x)).unwrap() - x).abs() <= 5e-7_f64.max(x.abs() * 1e-14),
                "{s}"
            );
        }
        for x in [0.1 + 0.2, 1.0 / 3.0, 123.456789012345] {
            let s = sig(Some(x)).unwrap().to_string();
            let digits = s.trim_start_matches(['-', '0', '.']).replace('.', "");
            assert!(digits.len() <= 9, "{s}");
        }
    }

    /// References (mpmath, as f64) from `scripts/clopper_pearson_reference.py`
    /// (mpmath, 50 digits): the bound, and the bound as reports round it
    /// up to 9 significant digits, is never below the true one. Before, the
    /// closed form for k = 0 gave 2.99573222e-9 at n = 10^9 (true:
    /// 2.9957322691e-9), and ln Γ lost digits for k > 0.
    #[test]
    fn bounds_hold_past_a_billion_labels() {
        let cases: [(u64, u64, f64); 10] = [
            (0, 1_000_000_000, 2.995732269066785e-09),
            (0, 1_000_000_000_000, 2.995732273549504e-12),
            (1, 1_000_000_000, 4.743864509510385e-09),
            (3, 1_000_000_000, 7.753656509503616e-09),
            (10, 1_000_000_000, 1.6962219176674556e-08),
            (5, 10_000_000, 1.0513032010805324e-06),
            (0, 20_000, 0.00014977539622296288),
            (2, 2_000_000_000, 3.147896807555316e-09),
            (1500, 1_000_000_000, 1.56528951704021e-06),
            (5000, 10_000_000_000, 5.117886049241306e-07),
        ];
        for (k, n, want) in cases {
            let got = crate::stats::clopper_pearson_upper(k, n, 0.05).unwrap();
            assert!(
                ((got - want) / want).abs() < 1e-9,
                "{k}/{n}: {got:e} vs {want:e}"
            );
            let reported = sig_up(Some(got)).unwrap();
            assert!(
                reported >= want,
                "{k}/{n}: reported {reported:e} < {want:e}"
            );
        }
    }
}
