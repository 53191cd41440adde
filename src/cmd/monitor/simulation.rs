//! Does the monitor keep its promises? Known-ground-truth traffic, 90
//! daily looks through the monitor's own figures (`looks::rows`):
//! production's skips in conversations of 1 to 12, where (clustered) half
//! the regressions come from conversations that derail (each of their
//! skips regresses at 0.5); one stratum at one probability, or two
//! strata at unequal ones (the large one sampled least); 3% of shadow
//! calls failing, or (informative failures) 40% of the calls on turns the
//! critic would revise and 3% elsewhere; the charts designed by `plan`'s
//! own sizing; the status on the worst-case bounds, or on the bounds that
//! assume failures missing at random where asked. Measured per setting:
//! - miscoverage: a look where the anytime upper bound is below the
//!   realised rate of the skips so far (or the lower above it): at most
//!   alpha, by construction;
//! - the status `above` (anytime lower bound above R) at any look, and
//!   `certified` (anytime upper bound within R) at any look; the status
//!   `certified` at a look where the realised rate is above R;
//! - the naive figures beside them: Clopper-Pearson on the cumulative
//!   labels, and on the last 7 days', looked at daily;
//! - the change alarm: the share of replicates it fires, the share before
//!   the change day, and each stratum's median delay against plan's
//!   prediction;
//! - with no regression at all, the median day the pooled anytime bound
//!   first certifies R, against plan's `days_to_certify_anytime`.
//!
//! `cargo test` runs 150 replicates a setting; `scripts/simulate-risk.sh`
//! (CRITIC_GATE_SIM_FULL) 2,000.

use std::collections::BTreeMap;

use super::looks::{rows, Decider, Status, Watch};
use super::state::{Period, State, Turns};
use crate::cmd::plan::sizing::{self, Goal, Volume};
use crate::replay::design::{StratumTally, Verdict};
use crate::stats::{clopper_pearson_lower, clopper_pearson_upper, SplitMix};

/// One stratum: skips a day and the inclusion probability.
#[derive(Clone, Copy, Debug)]
pub struct Stream {
    pub skips_per_day: u64,
    pub probability: f64,
}

/// A simulated deployment.
#[derive(Clone, Debug)]
pub struct Setting {
    pub strata: Vec<Stream>,
    /// The budget R.
    pub rate: f64,
    /// The true rate before and from `change_day`, as multiples of R.
    pub before: f64,
    pub after: f64,
    pub change_day: usize,
    pub clustered: bool,
    /// How regressions come beyond `clustered` (the assumptions the chart
    /// rests on, broken on purpose).
    pub model: Model,
    /// The chart as it was before schema 14: every label, designed on the
    /// calls (for comparison).
    pub per_label: bool,
    /// How shadow calls fail.
    pub failing: Failing,
    /// The status reads the bounds that assume failed calls missing at
    /// random (what monitor did before it held the worst case).
    pub assume_missing_at_random: bool,
}

/// How shadow calls fail.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Failing {
    /// At this share, whatever the verdict would be.
    Unrelated(f64),
    /// At `regression` on turns the critic would revise, `other` elsewhere.
    Informative { regression: f64, other: f64 },
}

impl Failing {
    fn share(self, regression: bool) -> f64 {
        match self {
            Failing::Unrelated(f) => f,
            Failing::Informative { regression: r, .. } if regression => r,
            Failing::Informative { other, .. } => other,
        }
    }
}

/// What breaks the chart's assumptions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// Conversations of one day, their rate unrelated to their size.
    Plain,
    /// A conversation's turns regress at 6.5 R / m (m its skips): short
    /// conversations regress more, long ones less; each turn
    /// independently, the skips' rate still R.
    ShortRegressMore,
    /// Conversations run over 3 days, one conversation id and one
    /// derailing state throughout.
    Spanning,
}

pub const DAYS: usize = 90;
const ALPHA: f64 = 0.05;
const FAILED: f64 = 0.03;
const FALSE_ALARM_DAYS: f64 = 365.0;

/// What the replicates showed, as shares of them (delays in days).
#[derive(Clone, Debug, Default)]
pub struct Measured {
    pub reps: usize,
    pub miscovered_upper: f64,
    pub miscovered_lower: f64,
    pub above: f64,
    pub certified: f64,
    /// The status `certified` at a look whose realised rate is above R.
    pub certified_above: f64,
    /// The status `certified` at some look.
    pub certified_status: f64,
    /// A look where the worst-case upper bound is below the realised rate.
    pub miscovered_worst: f64,
    pub naive_above: f64,
    pub naive_certified: f64,
    pub naive_window_above: f64,
    pub alarm: f64,
    pub alarm_before_change: f64,
    /// Per stratum: the median delay from the change day (None when it
    /// fired in fewer than half) and plan's prediction at the new rate.
    pub delays: Vec<(Option<f64>, Option<f64>)>,
    /// The median day (from 1) of the first look certified, among the
    /// replicates certified before any change (None when fewer than half
    /// were).
    pub certified_day: Option<f64>,
    /// Plan's prediction of that day on labels with no regression
    /// (`sizing::days_to_certify_anytime`).
    pub certify_predicted: Option<f64>,
    /// The chance the charts designed for it alarm within the days at R
    /// (the exact chain), their stated level.
    pub alarm_level: f64,
}

/// A stratum's day as plan's scan would see it: its skips in
/// conversations of 1 to 12, equally likely (as `replicate` draws them).
fn volume(i: usize, st: &Stream) -> Volume {
    Volume {
        stratum: format!("s{i}"),
        turns: st.skips_per_day,
        skips: st.skips_per_day,
        spread: (1..=12)
            .map(|m| (m, st.skips_per_day as f64 / 6.5 / 12.0))
            .collect(),
        ..Default::default()
    }
}

/// Of stratum `i`'s calls at probability `p`, the share the chart takes
/// (all, for the chart on every label).
fn chart_share(s: &Setting, i: usize, p: f64) -> f64 {
    match s.per_label {
        true => 1.0,
        false => volume(i, &s.strata[i]).chart_share(p),
    }
}

/// The watch plan would design for the setting, and its per-stratum
/// predicted delays at `after` x R.
fn design(s: &Setting) -> (Watch, Vec<Option<f64>>, Option<f64>) {
    let goal = Goal {
        rate: s.rate,
        confidence: 1.0 - ALPHA,
        window_days: 7.0,
    };
    let mut charts = BTreeMap::new();
    let mut predicted = Vec::new();
    for (i, st) in s.strata.iter().enumerate() {
        let v = volume(i, st);
        let mut z = sizing::size(&v, &goal, s.rate, 1.0);
        z.probability = st.probability;
        z.calls_per_day = st.probability * st.skips_per_day as f64;
        z.chart_labels_per_day = z.calls_per_day * chart_share(s, i, st.probability);
        sizing::detection(&mut z, s.rate, FALSE_ALARM_DAYS, s.strata.len());
        if let Some(c) = z.chart {
            charts.insert(format!("s{i}"), c);
        }
        predicted.push(match s.after {
            k if k >= 2.5 => z.days_detect_3r,
            _ => z.days_detect_2r,
        });
    }
    let w = Watch {
        rate: s.rate,
        alpha: ALPHA,
        charts,
        fidelity: false,
        false_alarm_days: FALSE_ALARM_DAYS,
        rise: sizing::ALARM_RISE,
        redesigned: false,
        decided_by: Decider::of(s.assume_missing_at_random),
    };
    let per_day: Vec<(f64, f64)> = s
        .strata
        .iter()
        .map(|st| (st.probability, st.skips_per_day as f64))
        .collect();
    let certify = sizing::pooled_certify_days(&per_day, s.rate, ALPHA);
    (w, predicted, certify)
}

/// Where a conversation's skips of a day go.
struct Drawn<'a> {
    t: &'a mut StratumTally,
    verdicts: &'a mut Vec<Verdict>,
    stratum: &'a str,
    probability: f64,
    failing: Failing,
}

impl Drawn<'_> {
    /// `m` skips of one conversation, each regressing at `q`, drawn by the
    /// coin, their calls failing as `failing` says; each verdict of the
    /// conversation `id` (None: each its own, from `fresh`). Returns the
    /// regressions.
    fn skips(
        &mut self,
        rng: &mut SplitMix,
        m: u64,
        q: f64,
        id: Option<u64>,
        fresh: &mut u64,
    ) -> u64 {
        let mut bad = 0;
        for _ in 0..m {
            let y = rng.next() < q;
            bad += u64::from(y);
            if rng.next() >= self.probability {
                continue;
            }
            self.t.drawn += 1;
            if rng.next() < self.failing.share(y) {
                self.t.failed += 1;
                continue;
            }
            self.t.shadow += 1;
            self.t.regressions += u64::from(y);
            let key = (rng.next() * 2f64.powi(53)) as u64;
            *fresh += 1;
            self.verdicts.push(Verdict {
                key,
                conversation: id.unwrap_or(*fresh),
                stratum: self.stratum.to_string(),
                regression: y,
            });
        }
        bad
    }
}

/// One replicate: the state of 90 days, and each day's realised
/// cumulative rate.
fn replicate(s: &Setting, rng: &mut SplitMix) -> (State, Vec<f64>) {
    let mut state = State::new("sim", None);
    let (mut all, mut bad) = (0u64, 0u64);
    let mut realised = Vec::new();
    // Spanning: each stratum's j-th conversation of a 3-day block is one
    // conversation, its derailing drawn on the block's first day.
    let span = if s.model == Model::Spanning { 3 } else { 1 };
    let mut derails: Vec<Vec<f64>> = vec![Vec::new(); s.strata.len()];
    let mut fresh = 0u64;
    for day in 0..DAYS {
        if day % span == 0 {
            derails.iter_mut().for_each(Vec::clear);
        }
        let k = if day < s.change_day {
            s.before
        } else {
            s.after
        };
        let r = k * s.rate;
        let mut p = Period::default();
        for (i, st) in s.strata.iter().enumerate() {
            let name = format!("s{i}");
            let mut t = StratumTally {
                probability: st.probability,
                skips: st.skips_per_day,
                ..Default::default()
            };
            let mut left = st.skips_per_day;
            let mut j = 0usize;
            while left > 0 {
                // A conversation's size as drawn (the last of the day cut to
                // the skips left): its rate follows the drawn size.
                let drawn = 1 + (rng.next() * 12.0) as u64;
                let m = drawn.min(left);
                left -= m;
                let mut q = match s.clustered {
                    true if rng.next() < r => 0.5,
                    true => 0.5 * r / (1.0 - r),
                    false => r,
                };
                match s.model {
                    Model::ShortRegressMore => q = (6.5 * r / drawn as f64).min(1.0),
                    Model::Spanning if j < derails[i].len() => q = derails[i][j],
                    Model::Spanning => derails[i].push(q),
                    Model::Plain => {}
                }
                fresh += 1;
                let conversation = match s.model {
                    Model::Spanning => ((day / span) as u64) << 32 | (i as u64) << 24 | j as u64,
                    _ => fresh,
                };
                j += 1;
                let mut d = Drawn {
                    t: &mut t,
                    verdicts: &mut p.verdicts,
                    stratum: &name,
                    probability: st.probability,
                    failing: s.failing,
                };
                // The old chart: every label its own observation.
                let id = (!s.per_label).then_some(conversation);
                bad += d.skips(rng, m, q, id, &mut fresh);
            }
            all += st.skips_per_day;
            let turns = Turns {
                turns: st.skips_per_day,
                fires: 0,
            };
            p.turns.insert(name.clone(), turns);
            p.design.strata.insert(name, t);
        }
        p.verdicts.sort();
        state
            .days
            .insert(format!("2026-{:02}-{:02}", 1 + day / 28, 1 + day % 28), p);
        realised.push(bad as f64 / all as f64);
    }
    (state, realised)
}

/// Run `reps` replicates of `s`.
pub fn simulate(s: &Setting, reps: usize, seed: u64) -> Measured {
    let (watch, predicted, certify_predicted) = design(s);
    let mut rng = SplitMix(seed);
    let mut m = Measured {
        reps,
        certify_predicted,
        ..Default::default()
    };
    let mut delays: Vec<Vec<u64>> = vec![Vec::new(); s.strata.len()];
    let mut certified_days: Vec<u64> = Vec::new();
    let share = |b: bool| f64::from(u8::from(b)) / reps as f64;
    for _ in 0..reps {
        let (state, realised) = replicate(s, &mut rng);
        let out = rows(&state, &super::period::Cut::Day, &watch);
        let pooled: Vec<_> = out.iter().filter(|x| x.stratum == "all").collect();
        let any = |f: &dyn Fn(usize) -> bool| (0..pooled.len()).any(f);
        m.miscovered_upper += share(any(&|d| {
            pooled[d].anytime_upper.is_some_and(|u| u < realised[d])
        }));
        m.miscovered_lower += share(any(&|d| {
            pooled[d].anytime_lower.is_some_and(|l| l > realised[d])
        }));
        m.above += share(any(&|d| pooled[d].status == Status::Above));
        m.certified += share(any(&|d| {
            pooled[d].anytime_upper.is_some_and(|u| u <= s.rate)
        }));
        m.certified_above += share(any(&|d| {
            pooled[d].status == Status::Certified && realised[d] > s.rate
        }));
        m.certified_status += share(any(&|d| pooled[d].status == Status::Certified));
        m.miscovered_worst += share(any(&|d| {
            pooled[d]
                .anytime_worst_case_upper
                .is_some_and(|u| u < realised[d])
        }));
        let first_cert = pooled
            .iter()
            .position(|x| x.anytime_upper.is_some_and(|u| u <= s.rate));
        certified_days.push(match first_cert {
            Some(d) if d < s.change_day => d as u64 + 1,
            _ => u64::MAX,
        });
        let first_alarm = pooled.iter().position(|x| x.alarm);
        m.alarm += share(first_alarm.is_some());
        m.alarm_before_change += share(first_alarm.is_some_and(|d| d < s.change_day));
        let (naive_above, naive_cert, window_above) = naive(&pooled, s.rate);
        m.naive_above += share(naive_above);
        m.naive_certified += share(naive_cert);
        m.naive_window_above += share(window_above);
        for (i, d) in delays.iter_mut().enumerate() {
            let name = format!("s{i}");
            let days: Vec<bool> = out
                .iter()
                .filter(|x| x.stratum == name)
                .map(|x| x.alarm)
                .collect();
            let at = days.iter().position(|a| *a);
            d.push(match at {
                Some(a) if a >= s.change_day => (a - s.change_day + 1) as u64,
                _ => u64::MAX,
            });
        }
    }
    finish(&mut m, delays, certified_days, predicted, s, &watch);
    m
}

/// The medians and the designed level, once the replicates are in.
fn finish(
    m: &mut Measured,
    delays: Vec<Vec<u64>>,
    mut certified_days: Vec<u64>,
    predicted: Vec<Option<f64>>,
    s: &Setting,
    watch: &Watch,
) {
    m.delays = delays
        .into_iter()
        .zip(predicted)
        .map(|(mut d, p)| {
            d.sort_unstable();
            let med = d[d.len() / 2];
            ((med != u64::MAX).then_some(med as f64), p)
        })
        .collect();
    certified_days.sort_unstable();
    m.certified_day = Some(certified_days[certified_days.len() / 2])
        .filter(|d| *d != u64::MAX)
        .map(|d| d as f64);
    m.alarm_level = 1.0
        - s.strata
            .iter()
            .enumerate()
            .map(|(i, st)| {
                // The chart's labels: one per conversation a day among
                // the draws whose call came back.
                let p = st.probability * (1.0 - s.failing.share(false));
                let labels =
                    (DAYS as f64 * st.skips_per_day as f64 * p * chart_share(s, i, p)) as u64;
                watch
                    .charts
                    .get(&format!("s{i}"))
                    .map_or(1.0, |c| 1.0 - c.alarm_within(s.rate, labels))
            })
            .product::<f64>();
}

/// The naive daily looks on the pooled labels: the cumulative two-sided
/// 95% Clopper-Pearson interval above R or within it, and the last 7
/// days' above R.
fn naive(pooled: &[&super::looks::Row], r: f64) -> (bool, bool, bool) {
    let (mut above, mut cert, mut window) = (false, false, false);
    for (d, x) in pooled.iter().enumerate() {
        let (n, k) = (x.cumulative_labelled, x.cumulative_regressions);
        above |= clopper_pearson_lower(k, n, ALPHA / 2.0).is_some_and(|l| l > r);
        cert |= clopper_pearson_upper(k, n, ALPHA / 2.0).is_some_and(|u| u <= r);
        let from = d.saturating_sub(6);
        let (wn, wk) = pooled[from..=d].iter().fold((0, 0), |(a, b), y| {
            (a + y.window.labelled, b + y.window.regressions)
        });
        window |= clopper_pearson_lower(wk, wn, ALPHA / 2.0).is_some_and(|l| l > r);
    }
    (above, cert, window)
}

/// One stratum of 4,000 skips a day at probability 1%.
fn one_probability() -> Vec<Stream> {
    vec![Stream {
        skips_per_day: 4_000,
        probability: 0.01,
    }]
}

/// Two strata at unequal probabilities: 4,000 skips a day at 0.5%, 250 at
/// 8%.
fn unequal() -> Vec<Stream> {
    vec![
        Stream {
            skips_per_day: 4_000,
            probability: 0.005,
        },
        Stream {
            skips_per_day: 250,
            probability: 0.08,
        },
    ]
}

/// The settings the repository holds the monitor to.
pub fn settings() -> Vec<(&'static str, Setting)> {
    let (one, two) = (one_probability(), unequal());
    let base = |strata: &Vec<Stream>, before, after, clustered| Setting {
        model: Model::Plain,
        per_label: false,
        failing: Failing::Unrelated(FAILED),
        assume_missing_at_random: true,
        strata: strata.clone(),
        rate: 0.02,
        before,
        after,
        change_day: 30,
        clustered,
    };
    vec![
        ("one probability, at R", base(&one, 1.0, 1.0, true)),
        ("unequal, at R", base(&two, 1.0, 1.0, true)),
        ("one probability, at 1.5R", base(&one, 1.5, 1.5, true)),
        ("unequal, at 1.5R", base(&two, 1.5, 1.5, true)),
        ("one probability, R/2 then 2R", base(&one, 0.5, 2.0, true)),
        ("one probability, R/2 then 3R", base(&one, 0.5, 3.0, true)),
        ("unequal, R/2 then 2R", base(&two, 0.5, 2.0, true)),
        ("unequal, R/2 then 3R", base(&two, 0.5, 3.0, true)),
        (
            "one probability, at R, independent turns",
            base(&one, 1.0, 1.0, false),
        ),
        ("one probability, no regression", base(&one, 0.0, 0.0, true)),
        ("unequal, no regression", base(&two, 0.0, 0.0, true)),
    ]
}

/// Shadow calls that fail more often on the turns the critic would
/// revise (40% there, `other` elsewhere), one probability or two, the
/// status on the worst case (the default) and on the bounds that assume
/// failures missing at random: at 1.3R (where a `certified` is wrong) and
/// at R/4 (where it is right, and the worst case pays for the failures).
pub fn failure_settings() -> Vec<(String, Setting)> {
    let (one, two) = (one_probability(), unequal());
    let mut out = Vec::new();
    for (strata, what) in [(&one, "one probability"), (&two, "unequal")] {
        // At 1.3R, R = 5%: about 5% of calls fail overall (as in #63).
        for (k, rate, other) in [(1.3, 0.05, 0.03), (0.25, 0.02, 0.03), (0.25, 0.02, 0.002)] {
            for mar in [false, true] {
                let s = Setting {
                    strata: strata.clone(),
                    rate,
                    before: k,
                    after: k,
                    change_day: 30,
                    clustered: true,
                    model: Model::Plain,
                    per_label: false,
                    failing: Failing::Informative {
                        regression: 0.4,
                        other,
                    },
                    assume_missing_at_random: mar,
                };
                let status = if mar {
                    "assumed missing at random"
                } else {
                    "worst case"
                };
                out.push((
                    format!("{what}, R {rate}, at {k}R, failing 40%/{other}, {status}"),
                    s,
                ));
            }
        }
    }
    out
}

/// The change alarm at a rate of exactly R, its assumptions broken on
/// purpose, against the chart before schema 14 (every label, designed on
/// the calls): one stratum of 250 skips a day at probability `p`.
pub fn assumption_settings() -> Vec<(String, Setting)> {
    let mut out = Vec::new();
    for p in [0.08, 0.3, 1.0] {
        for (what, clustered, model) in [
            ("derailing conversations", true, Model::Plain),
            (
                "short conversations regress more",
                false,
                Model::ShortRegressMore,
            ),
            ("derailing conversations over 3 days", true, Model::Spanning),
        ] {
            for per_label in [false, true] {
                let chart = if per_label {
                    "every label"
                } else {
                    "one a conversation-day"
                };
                let s = Setting {
                    strata: vec![Stream {
                        skips_per_day: 250,
                        probability: p,
                    }],
                    rate: 0.02,
                    before: 1.0,
                    after: 1.0,
                    change_day: 30,
                    clustered,
                    model,
                    per_label,
                    failing: Failing::Unrelated(FAILED),
                    assume_missing_at_random: true,
                };
                out.push((format!("p {p}, {what}, {chart}"), s));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test's run, from the environment: `full` (CRITIC_GATE_SIM_FULL,
    /// the script's replicate counts) and `only` (CRITIC_GATE_SIM_ONLY=TEXT
    /// runs the settings whose name holds it).
    struct Run {
        full: bool,
        reps: usize,
        only: String,
    }

    impl Run {
        /// 150 replicates a setting, or `full_reps` when full.
        fn from_env(full_reps: usize) -> Run {
            let full = std::env::var_os("CRITIC_GATE_SIM_FULL").is_some();
            Run {
                full,
                reps: if full { full_reps } else { 150 },
                only: std::env::var("CRITIC_GATE_SIM_ONLY").unwrap_or_default(),
            }
        }

        /// Three standard errors of a share at alpha over the replicates.
        fn slack(&self) -> f64 {
            3.0 * (ALPHA * (1.0 - ALPHA) / self.reps as f64).sqrt()
        }

        fn runs(&self, name: &str) -> bool {
            name.contains(self.only.as_str())
        }
    }

    /// The chart's false alarms at R where its assumptions hold (derailing
    /// conversations within a day) and where they do not, beside the
    /// chart on every label. Held: one label a conversation-day keeps the
    /// design under within-day clustering at every probability, where
    /// every label does not at 30% and 100% (the test that would fail on
    /// the old chart). The rest is measured and printed
    /// (docs/watching.md has the figures at 1,000 replicates).
    #[test]
    fn the_chart_s_assumptions() {
        let run = Run::from_env(1_000);
        let (full, reps) = (run.full, run.reps);
        for (i, (name, s)) in assumption_settings().into_iter().enumerate() {
            let held = s.model == Model::Plain && s.strata[0].probability >= 0.3;
            if (!full && !held) || !run.runs(&name) {
                continue;
            }
            let m = simulate(&s, reps, 900 + i as u64);
            let sd = (m.alarm_level * (1.0 - m.alarm_level) / reps as f64).sqrt();
            println!(
                "{name}: alarm {:.3} designed {:.3} (sd {sd:.3})",
                m.alarm, m.alarm_level
            );
            if held && !s.per_label {
                assert!(m.alarm <= m.alarm_level + 3.0 * sd, "{name}: {m:?}");
            }
            if held && s.per_label {
                assert!(m.alarm > m.alarm_level + 3.0 * sd, "{name}: {m:?}");
            }
        }
    }

    /// Failed calls that come on the turns the critic would revise: the
    /// status (worst case, the default) is `certified` at a look whose
    /// realised rate is above R in at most alpha of the runs (plus 3 sd);
    /// the status that assumes failures missing at random is not, with one
    /// probability (the test that fails on monitor before it held the
    /// worst case). At R/4
    /// the shares certified are printed (docs/watching.md has them at
    /// 2,000 replicates).
    #[test]
    fn the_status_holds_when_failures_are_informative() {
        let run = Run::from_env(2_000);
        let (reps, slack) = (run.reps, run.slack());
        for (i, (name, s)) in failure_settings().into_iter().enumerate() {
            // At R/4 nothing is held but the coverage: the script runs them.
            if !run.runs(&name) || (!run.full && s.before < 1.0) {
                continue;
            }
            let m = simulate(&s, reps, 700 + i as u64);
            println!(
                "{name}: certified while above R {:.4}, certified at some look {:.4}, worst-case upper below the realised rate {:.4}",
                m.certified_above, m.certified_status, m.miscovered_worst
            );
            assert!(m.miscovered_worst <= ALPHA + slack, "{name}: {m:?}");
            if s.before > 1.0 && !s.assume_missing_at_random {
                assert!(m.certified_above <= ALPHA + slack, "{name}: {m:?}");
            }
            // One probability shows it at 150 replicates (26.7%); two show
            // it less (8%: the small stratum's probability is high).
            if s.before > 1.0 && s.assume_missing_at_random && s.strata.len() == 1 {
                assert!(m.certified_above > ALPHA + slack, "{name}: {m:?}");
            }
        }
    }

    /// Each setting's promises, at 150 replicates (2,000 in the script):
    /// the anytime bounds miss the realised rate at any of 90 looks in at
    /// most alpha (plus 3 sd of the replicates' error); at R no `above`
    /// and the charts alarm no more than designed; at 1.5R no
    /// `certified`; after a step the charts' median delay within 25% of
    /// plan's prediction and an alarm before the step no more often than
    /// designed.
    #[test]
    fn the_monitor_keeps_its_promises() {
        let run = Run::from_env(2_000);
        let (reps, slack) = (run.reps, run.slack());
        for (i, (name, s)) in settings().into_iter().enumerate() {
            if !run.runs(name) {
                continue;
            }
            let m = simulate(&s, reps, 100 + i as u64);
            println!("{name}: {m:?}");
            assert!(m.miscovered_upper <= ALPHA + slack, "{name}: {m:?}");
            assert!(m.miscovered_lower <= ALPHA + slack, "{name}: {m:?}");
            if s.before == s.after && s.after <= 1.0 {
                assert!(m.above <= ALPHA + slack, "{name}: {m:?}");
                // One label per conversation a day: where conversations
                // derail (their labels regress together) the chart still
                // sees independent labels at the rate, as designed.
                let sd = 3.0 * (m.alarm_level * (1.0 - m.alarm_level) / reps as f64).sqrt();
                assert!(m.alarm <= m.alarm_level + sd, "{name}: {m:?}");
            }
            if s.before > 1.0 {
                assert!(m.certified <= ALPHA + slack, "{name}: {m:?}");
            }
            if s.after == 0.0 {
                let (got, want) = (m.certified_day.unwrap(), m.certify_predicted.unwrap());
                assert!(
                    (got - want).abs() <= 0.25 * want + 1.0,
                    "{name}: certified on day {got}, plan says {want}"
                );
            }
            if s.after > s.before {
                for (got, want) in &m.delays {
                    let (g, w) = (
                        got.expect("the alarm fires in most replicates"),
                        want.unwrap(),
                    );
                    assert!(
                        (g - w).abs() <= 0.25 * w + 1.0,
                        "{name}: median delay {g} days, plan says {w}"
                    );
                }
            }
        }
    }
}
