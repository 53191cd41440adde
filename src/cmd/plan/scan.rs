//! `plan`'s pass over the traffic: every turn through production's gate,
//! tallying its skips (with their labels) per stratum, the days the
//! traffic spans, what a recorded critic call costs, and how the skips
//! gather in conversations. Memory is bounded by design: at most
//! [`MAX_STRATA`] strata (the rest are one `(other)` row, counted), two
//! dates, a few sums and at most [`MAX_SPREAD`] conversation-days.

use std::collections::BTreeMap;

use super::sizing::Volume;
use crate::cmd::sample::Member;
use crate::config::CostConfig;
use crate::read::turn::{Turn, Verdict};
pub use crate::replay::design::Strata;
use crate::replay::segments::OTHER;

/// Distinct strata a plan keeps; the turns of any other value are one
/// `(other)` stratum, and the plan says how many values it holds.
pub const MAX_STRATA: usize = 1_000;

/// What the pass found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Traffic {
    pub turns: u64,
    pub rejected: u64,
    /// Per stratum, in value order.
    pub strata: BTreeMap<String, Volume>,
    /// Values folded into `(other)` past [`MAX_STRATA`] (turns).
    pub folded_turns: u64,
    /// The first and last instant of a recorded `ts` (seconds since
    /// 1970-01-01T00:00:00Z).
    pub first_ts: Option<i64>,
    pub last_ts: Option<i64>,
    /// Turns without a `ts` (they count in the volumes, not in the span).
    pub without_ts: u64,
    /// Production's fires with a critic verdict (what a fidelity sample
    /// draws from).
    pub reviewed_fires: u64,
    /// Recorded critic calls that ran with a price, and their dollars in
    /// nano-dollars: on turns of the sampled population (production's
    /// skips: the calls a shadow critic will make are like these), and on
    /// every turn (the fallback where none of those ran).
    pub priced_calls: u64,
    pub priced_nano_usd: u128,
    pub priced_skip_calls: u64,
    pub priced_skip_nano_usd: u128,
    /// Skips per conversation a day, sampled; [`Traffic::settle`] moves
    /// them into the strata's volumes.
    pub spread: Spread,
    /// Production's fires against the recording (is the config
    /// production's? `crate::replay::probe`).
    pub probe: crate::replay::probe::ProbeTally,
}

/// The most conversation-days (of all strata) the scan keeps to learn how
/// skips gather in conversations.
pub const MAX_SPREAD: usize = 1 << 16;

/// Production's skips per conversation a day, per stratum, from a sample
/// of conversation-days by hash (adaptive distinct sampling): a
/// (stratum, run, day) is kept when its hash is at most `below`, which
/// halves whenever more than [`MAX_SPREAD`] are kept. Each is then kept
/// with probability (below + 1) / 2^64 whatever the traffic's order, all
/// of its skips with it, so the kept ones weighed by its inverse estimate
/// every stratum's spread without bias (exactly, while nothing was
/// dropped).
#[derive(Clone, Debug, PartialEq)]
pub struct Spread {
    below: u64,
    /// By the key's hash: the stratum's name hash and the skips counted.
    kept: std::collections::HashMap<u64, (u64, u64)>,
    /// Skips without a day, by the stratum's name hash: each taken as a
    /// conversation-day of its own (its conversation's skips on other days
    /// cannot be told apart; monitor refuses traffic without `ts`).
    undated: std::collections::HashMap<u64, u64>,
}

impl Default for Spread {
    fn default() -> Spread {
        Spread {
            below: u64::MAX,
            kept: Default::default(),
            undated: Default::default(),
        }
    }
}

impl Spread {
    /// One skip of `run` on `day` (None: no `ts`, a conversation-day of its
    /// own) in
    /// the stratum `name`.
    fn add(&mut self, name: &str, run: &str, day: Option<i64>) {
        let stratum = xxhash_rust::xxh3::xxh3_64(name.as_bytes());
        let Some(day) = day.map(|d| d as u64) else {
            *self.undated.entry(stratum).or_default() += 1;
            return;
        };
        let key = xxhash_rust::xxh3::xxh3_64_with_seed(run.as_bytes(), stratum ^ day);
        if key > self.below {
            return;
        }
        self.kept.entry(key).or_insert((stratum, 0)).1 += 1;
        while self.kept.len() > MAX_SPREAD {
            self.below /= 2;
            let below = self.below;
            self.kept.retain(|k, _| *k <= below);
        }
    }

    /// Stratum `name`'s spread: (skips in a conversation-day, estimated
    /// conversation-days with that many), by skips.
    fn of(&self, name: &str) -> Vec<(u64, f64)> {
        let stratum = xxhash_rust::xxh3::xxh3_64(name.as_bytes());
        let weight = 2f64.powi(64) / (self.below as f64 + 1.0);
        let mut by: BTreeMap<u64, f64> = BTreeMap::new();
        for (s, m) in self.kept.values() {
            if *s == stratum {
                *by.entry(*m).or_default() += weight;
            }
        }
        if let Some(n) = self.undated.get(&stratum) {
            *by.entry(1).or_default() += *n as f64;
        }
        by.into_iter().collect()
    }
}

impl Traffic {
    /// Days the traffic spans: the time elapsed from its first recorded
    /// `ts` to its last, in days (a two-week file with a few lines past
    /// midnight is 14 days and a little, not 15; a slice from a Monday
    /// morning to a Thursday night is 4 days less a morning, not 5). None
    /// without a `ts`, or where they span under [`MIN_SPAN_SECONDS`]: no
    /// volume a day can be read from them.
    pub fn days(&self) -> Option<f64> {
        let span = self.last_ts? - self.first_ts?;
        (span >= MIN_SPAN_SECONDS).then(|| span as f64 / 86_400.0)
    }

    /// The price of a shadow call: the mean dollars of the recorded
    /// critic calls on turns of the sampled population (a skip's call is
    /// on a short acknowledgement; every call's mean, fires included, was
    /// 41% above it where 85% of turns are skips), else of every recorded
    /// call, said; None without a price.
    pub fn usd_per_call(&self) -> Option<Price> {
        let mean = |usd: u128, n: u64| usd as f64 / n as f64 / 1e9;
        match (self.priced_skip_calls, self.priced_calls) {
            (0, 0) => None,
            (0, n) => Some(Price {
                usd: mean(self.priced_nano_usd, n),
                on_skips: false,
            }),
            (n, _) => Some(Price {
                usd: mean(self.priced_skip_nano_usd, n),
                on_skips: true,
            }),
        }
    }

    /// Each stratum's spread, from the conversation-days kept: once the
    /// pass is over.
    pub fn settle(&mut self) {
        for (name, v) in self.strata.iter_mut() {
            v.spread = self.spread.of(name);
        }
    }

    /// One turn: its day, its stratum's counts under production's gate,
    /// and the cost of its recorded critic call.
    pub fn add(&mut self, t: &Turn, member: &Member, strata: &Strata, cost: &CostConfig) {
        let at = t.ts.as_deref().and_then(crate::read::rfc3339::unix_seconds);
        match at {
            Some(s) => {
                self.first_ts = Some(self.first_ts.map_or(s, |f| f.min(s)));
                self.last_ts = Some(self.last_ts.map_or(s, |l| l.max(s)));
            }
            None => self.without_ts += 1,
        }
        // The conversation-day of a skip: its UTC day.
        let day = at.map(|s| s.div_euclid(86_400));
        let priced = t.review().and_then(|c| {
            let tokens = (c.tokens_in.unwrap_or(0), c.tokens_out.unwrap_or(0));
            (c.tokens_in.is_some() || c.tokens_out.is_some())
                .then(|| cost.nano_usd(tokens, c.model.as_deref()).ok())
                .flatten()
        });
        if let Some(n) = priced {
            self.priced_calls += 1;
            self.priced_nano_usd += u128::from(n);
        }
        let mut name = strata.of(t);
        // A stratum's name is copied once, when it is first seen.
        if !self.strata.contains_key(&name) {
            if self.strata.len() >= MAX_STRATA {
                name = OTHER.to_string();
                self.folded_turns += 1;
            }
            let stratum = name.clone();
            self.strata.entry(name.clone()).or_insert_with(|| Volume {
                stratum,
                ..Volume::default()
            });
        }
        let v = self.strata.get_mut(&name).expect("inserted above");
        v.turns += 1;
        let (sampled, prior) = member.classify_probed(t, Some(&mut self.probe));
        v.skips += u64::from(sampled);
        if let Some(n) = priced.filter(|_| sampled) {
            self.priced_skip_calls += 1;
            self.priced_skip_nano_usd += u128::from(n);
        }
        if sampled {
            self.spread.add(&name, &t.run_id, day);
        }
        self.reviewed_fires += u64::from(!sampled && t.verdict().is_some());
        if let Some(verdict) = prior {
            v.labelled += 1;
            v.regressions += u64::from(matches!(verdict, Verdict::Revise | Verdict::Refuse));
        }
    }
}

pub use crate::read::rfc3339::day_number;

/// What a shadow call is priced at.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Price {
    pub usd: f64,
    /// From calls on turns of the sampled population; else from every
    /// recorded call (none ran on those turns).
    pub on_skips: bool,
}

impl Price {
    /// Where the price comes from, for a sentence.
    pub fn basis(&self) -> &'static str {
        match self.on_skips {
            true => "the recorded mean of the critic calls on production's skips",
            false => "the recorded mean of every critic call (none ran on production's skips; a skip's call is likely cheaper)",
        }
    }
}

/// The shortest span of recorded `ts` a volume a day is read from: an
/// hour (a few turns at one moment say nothing of a day).
pub const MIN_SPAN_SECONDS: i64 = 3_600;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::segments::NONE;

    /// A conversation-day is one entry, however its skips come; below
    /// the bound the spread is exact, above it an unbiased estimate from
    /// a sample by hash that the traffic's order does not change.
    #[test]
    fn the_spread_is_exact_below_its_bound_and_estimated_above() {
        let mut s = Spread::default();
        for (stratum, run, day) in [
            ("a", "r1", Some(1)),
            ("a", "r2", Some(1)),
            ("a", "r1", Some(1)),
            ("b", "r1", Some(1)),
            ("a", "r1", Some(2)),
            ("a", "r1", Some(1)),
            ("a", "r2", Some(1)),
            ("a", "r3", None),
            ("a", "r3", None),
        ] {
            s.add(stratum, run, day);
        }
        // r1 on day 2, and r3's two skips without a day, each its own.
        assert_eq!(s.of("a"), vec![(1, 3.0), (2, 1.0), (3, 1.0)]);
        assert_eq!(s.of("b"), vec![(1, 1.0)]);
        assert_eq!(s.of("c"), vec![]);
        // 240,000 conversation-days of 1 to 4 skips, 60,000 of each size:
        // once conversation by conversation, once interleaved.
        let n = 240_000u64;
        let size = |c: u64| 1 + c % 4;
        let (mut whole, mut mixed) = (Spread::default(), Spread::default());
        for c in 0..n {
            for _ in 0..size(c) {
                whole.add("a", &format!("r{c}"), Some(3));
            }
        }
        for round in 0..4 {
            for c in (0..n).filter(|c| size(*c) > round) {
                mixed.add("a", &format!("r{c}"), Some(3));
            }
        }
        assert!(whole.kept.len() <= MAX_SPREAD && whole.below < u64::MAX);
        assert_eq!(whole.of("a"), mixed.of("a"));
        for (m, count) in whole.of("a") {
            // A share q of 240,000 kept: sd of a count sqrt(60,000 / q).
            let q = (whole.below as f64 + 1.0) / 2f64.powi(64);
            let sd = (60_000.0 / q).sqrt();
            assert!(
                (count - 60_000.0).abs() < 4.0 * sd,
                "{m}: {count} (sd {sd})"
            );
        }
    }

    #[test]
    fn days_count_from_the_epoch() {
        assert_eq!(day_number("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(day_number("2026-12-03T15:00:00+01:00"), Some(20_790));
        assert_eq!(day_number("2024-03-01"), Some(19_783));
        assert_eq!(day_number("2024-02-29"), Some(19_782));
        assert_eq!(day_number("2024-13-01"), None);
        assert_eq!(day_number("yesterday"), None);
    }

    #[test]
    fn strata_keys_are_dimensions_or_scope_paths() {
        assert_eq!(Strata::parse(Some("language")), Ok(Strata::Language));
        assert_eq!(
            Strata::parse(Some("scope.user.tier")),
            Ok(Strata::Scope(vec!["user".into(), "tier".into()]))
        );
        assert!(Strata::parse(Some("scope.")).is_err());
        assert!(Strata::parse(Some("critic.model")).is_err());
        let t =
            Turn::parse(r#"{"run_id":"r","scope":{"user":{"tier":"gold"}},"draft":"x"}"#).unwrap();
        assert_eq!(
            Strata::parse(Some("scope.user.tier")).unwrap().of(&t),
            "gold"
        );
        assert_eq!(Strata::parse(Some("scope.team")).unwrap().of(&t), NONE);
        assert_eq!(Strata::Language.of(&t), NONE);
        // Review of #64: de, de-AT and de-DE were three strata.
        let lang = |l: &str| {
            let line = format!(r#"{{"run_id":"r","language":"{l}","draft":"x"}}"#);
            let t = Turn::parse(&line).unwrap();
            (Strata::Language.of(&t), Strata::LanguageTag.of(&t))
        };
        assert_eq!(lang("de"), ("de".into(), "de".into()));
        assert_eq!(lang("de-AT"), ("de".into(), "de-AT".into()));
        assert_eq!(lang("DE_de"), ("de".into(), "DE_de".into()));
        assert_eq!(Strata::parse(Some("language-tag")), Ok(Strata::LanguageTag));
    }
}
