//! The one coin that decides whether a turn is in a plan's critic sample,
//! the same inside symfonic (the exploration gate), offline (`sample`,
//! `labels`, a replay with a plan) and on every machine, shard and thread
//! count: the top 53 bits of SHA-256(salt, 0x00, the turn's key), read as
//! a number u in [0, 2^53), draw the turn at probability p when
//! u < p * 2^53 (u / 2^53 < p, both sides exact in a double).
//!
//! Nested across rates: a turn drawn at p is drawn at every p' > p, so a
//! plan that raises a stratum's probability keeps every turn it drew.
//! The key is symfonic's run id (one `run()` is one user turn:
//! `CriticGateContext.run_id`, the traffic's `turn_id`), or, for traffic
//! that records none, `run_id`, 0x1F and the turn's number in decimal.

use sha2::{Digest, Sha256};

/// 2^53: the coin's resolution, and where a double stops counting exactly.
const TWO_53: f64 = 9_007_199_254_740_992.0;

/// The coin's value for `key` under `salt`: the top 53 bits of
/// SHA-256(salt ‖ 0x00 ‖ key), in [0, 2^53).
pub fn value(salt: &str, key: &[u8]) -> u64 {
    let mut h = Sha256::new();
    h.update(salt.as_bytes());
    h.update([0u8]);
    h.update(key);
    let d = h.finalize();
    let top = u64::from_be_bytes(d[..8].try_into().expect("SHA-256 has 32 bytes"));
    top >> 11
}

/// Whether the turn with `key` is drawn at probability `p` (p <= 0: never;
/// p >= 1: always).
pub fn drawn(salt: &str, key: &[u8], p: f64) -> bool {
    (value(salt, key) as f64) < p * TWO_53
}

/// A turn's key: `turn_id` (symfonic's run id), else `run_id` ‖ 0x1F ‖
/// the turn's number, else `run_id` alone (every turn of the run then
/// shares one draw).
pub fn key(turn_id: Option<&str>, run_id: &str, turn: Option<u64>) -> Vec<u8> {
    match (turn_id, turn) {
        (Some(id), _) => id.as_bytes().to_vec(),
        (None, Some(t)) => format!("{run_id}\u{1f}{t}").into_bytes(),
        (None, None) => run_id.as_bytes().to_vec(),
    }
}

/// A fresh salt: 16 bytes from the operating system, as 32 hex digits.
pub fn fresh_salt() -> Result<String, String> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b)
        .map_err(|e| format!("no randomness from the system for a salt: {e}"))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value is SHA-256's first 53 bits, as Python computes it:
    /// `int.from_bytes(hashlib.sha256(b"s\0k").digest()[:8], "big") >> 11`.
    #[test]
    fn the_value_is_the_top_53_bits_of_sha256() {
        assert_eq!(value("s", b"k"), 4_710_612_841_107_640);
        assert_eq!(
            value("0123abcd", &key(None, "conv", Some(3))),
            5_474_888_329_711_863
        );
        assert_ne!(value("s", b"k"), value("t", b"k"));
        // The separator keeps ("ab", "c") and ("a", "bc") apart.
        assert_ne!(value("ab", b"c"), value("a", b"bc"));
    }

    /// Nested: whatever is drawn at p is drawn at every larger p, and the
    /// ends are never and always.
    #[test]
    fn draws_are_nested_across_rates() {
        let ps = [0.0, 1e-9, 0.001, 0.01, 0.1, 0.37, 0.5, 0.99, 1.0];
        for i in 0..20_000u64 {
            let k = key(None, "run", Some(i));
            let at: Vec<bool> = ps.iter().map(|p| drawn("salt", &k, *p)).collect();
            assert!(!at[0] && at[ps.len() - 1]);
            assert!(at.windows(2).all(|w| w[0] <= w[1]), "{i}: {at:?}");
        }
    }

    /// The share drawn is the probability, within a binomial 99.9% band,
    /// on keys of every shape (ids, runs and turns, unicode).
    #[test]
    fn the_share_drawn_is_the_probability() {
        let n = 200_000u64;
        for p in [0.003, 0.05, 0.5] {
            let drawn_n = (0..n)
                .filter(|i| {
                    let k = match i % 3 {
                        0 => key(Some(&format!("9f{i:08x}")), "c", None),
                        1 => key(None, &format!("conv-{}", i / 7), Some(i % 7)),
                        _ => key(None, &format!("会話{i}"), None),
                    };
                    drawn("0123abcd", &k, p)
                })
                .count() as f64;
            let sd = (n as f64 * p * (1.0 - p)).sqrt();
            assert!(
                (drawn_n - n as f64 * p).abs() < 3.3 * sd,
                "p {p}: {drawn_n} of {n}"
            );
        }
    }

    #[test]
    fn keys_prefer_symfonic_s_run_id() {
        assert_eq!(key(Some("r-1"), "conv", Some(3)), b"r-1");
        assert_eq!(key(None, "conv", Some(3)), b"conv\x1f3");
        assert_eq!(key(None, "conv", None), b"conv");
        let s = fresh_salt().unwrap();
        assert_eq!(s.len(), 32);
        assert_ne!(s, fresh_salt().unwrap());
    }
}
