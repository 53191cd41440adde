//! The figures of every look, derived from a monitor's state: per period
//! and stratum (and pooled, `all`), the period's own counts, estimate and
//! fixed-window bounds (as a replay with the plan gives them), the bounds
//! on everything counted so far that hold at every look at once
//! (`crate::anytime`), the change alarm (`crate::cusum`, each stratum's
//! chart as the plan designed it) and the status they make.
//!
//! The pooled anytime bounds test the pooled count jointly across the
//! plan's inclusion probabilities (`crate::anytime::joint_upper`, one
//! martingale for all of them, at alpha). A stratum's row is its own
//! bound at alpha: the rows of strata are pointers, the pooled row is what
//! the status and the exit code read.
//!
//! The status reads the worst-case bounds (a drawn skip without a verdict
//! a regression for the upper bound, an approval for the lower), which
//! hold however shadow calls fail; the bounds that take a failed call as
//! unrelated to its verdict decide only where the user assumes it
//! (`Watch::decided_by`), and the row says which decided.

use std::collections::BTreeMap;

use super::period::Cut;
use super::state::{Period, State};
use crate::cusum::Cusum;
use crate::replay::design::{by_probability, Fidelity, Group, SampleFigures, StratumTally};

/// What the looks need of the plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Watch {
    /// R: the budget on the regression rate of production's skips.
    pub rate: f64,
    pub alpha: f64,
    /// Each stratum's chart, as plan.toml designed it.
    pub charts: BTreeMap<String, Cusum>,
    /// The plan draws a fidelity sample.
    pub fidelity: bool,
    /// The change alarm's design: about one false alarm in this many days
    /// at R over all strata, for a rise to `rise` x R; `redesigned` when
    /// monitor was asked for another design than the plan's.
    pub false_alarm_days: f64,
    pub rise: f64,
    pub redesigned: bool,
    /// Which bounds decide a row's status.
    pub decided_by: Decider,
}

/// Which pair of anytime bounds a status reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decider {
    /// Every drawn skip without a verdict a regression (upper) or an
    /// approval (lower): holds however calls fail.
    WorstCase,
    /// A failed call taken as unrelated to its verdict: asked for.
    MissingAtRandom,
}

impl Decider {
    /// The worst case, unless failed calls are assumed missing at random.
    pub fn of(assume_missing_at_random: bool) -> Decider {
        match assume_missing_at_random {
            true => Decider::MissingAtRandom,
            false => Decider::WorstCase,
        }
    }

    /// The upper bound this decider reads on `x`.
    pub fn upper(self, x: &Row) -> Option<f64> {
        match self {
            Decider::WorstCase => x.anytime_worst_case_upper,
            Decider::MissingAtRandom => x.anytime_upper,
        }
    }

    /// The lower bound this decider reads on `x`.
    pub fn lower(self, x: &Row) -> Option<f64> {
        match self {
            Decider::WorstCase => x.anytime_worst_case_lower,
            Decider::MissingAtRandom => x.anytime_lower,
        }
    }

    /// As monitor.csv's `decided_by` says it.
    pub fn name(self) -> &'static str {
        match self {
            Decider::WorstCase => "worst_case",
            Decider::MissingAtRandom => "missing_at_random",
        }
    }
}

/// A row's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The anytime bound is within R.
    Certified,
    /// The anytime lower bound is above R.
    Above,
    /// The change alarm has fired.
    Alarm,
    TooFewLabels,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Certified => "certified",
            Status::Above => "above",
            Status::Alarm => "alarm",
            Status::TooFewLabels => "too_few_labels",
        }
    }
}

/// One row of monitor.csv.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub period: String,
    pub stratum: String,
    pub turns: u64,
    pub fires: u64,
    /// The period's own sample.
    pub window: SampleFigures,
    pub harmful_per_1k_estimate: Option<f64>,
    /// Everything counted up to this period.
    pub cumulative_skips: u64,
    pub cumulative_labelled: u64,
    pub cumulative_regressions: u64,
    /// Drawn skips so far whose shadow call failed.
    pub cumulative_failed: u64,
    pub cumulative_estimate: Option<f64>,
    pub anytime_upper: Option<f64>,
    pub anytime_lower: Option<f64>,
    pub anytime_worst_case_upper: Option<f64>,
    /// The lower bound with every drawn skip without a verdict an
    /// approval, at the full probability.
    pub anytime_worst_case_lower: Option<f64>,
    /// Which bounds the status read.
    pub decided_by: Decider,
    /// The chart's score at the period's end (pooled: the highest share of
    /// its threshold any stratum's chart reached, as a share).
    pub cusum: Option<f64>,
    pub alarm: bool,
    /// The period the alarmed chart's rise most likely began.
    pub change_began: Option<String>,
    pub status: Status,
    /// The period the status has held since.
    pub since: String,
    /// More labels that would certify R at the current estimate.
    pub labels_needed: Option<u64>,
    /// The fidelity sample (pooled rows of a plan that draws one): the
    /// period's pairs, and over all periods so far the share where the
    /// shadow critic and production's disagree, with anytime bounds on
    /// that share among all production's reviewed fires.
    pub fidelity: Option<FidelityFigures>,
    /// Why the bounds so far are withheld, if they are.
    pub withheld: Option<&'static str>,
}

/// Why the anytime bounds are withheld where skips share a coin.
pub const SHARED_COIN: &str = "the bounds so far are withheld: skips share a coin (turns without turn_id or turn, keyed by their run alone, or the same turn twice), so the draws are not each skip's own";

/// What the fidelity sample shows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FidelityFigures {
    pub pairs: u64,
    pub cumulative_pairs: u64,
    pub disagreement: Option<f64>,
    pub lower: Option<f64>,
    pub upper: Option<f64>,
}

impl FidelityFigures {
    /// From the period's tally and the cumulative one, at `alpha`.
    fn of(window: &Fidelity, all: &Fidelity, alpha: f64) -> FidelityFigures {
        let n = all.fires;
        let p = match all.drawn {
            0 => all.probability,
            d => all.probability * all.pairs as f64 / d as f64,
        };
        let known = all.pairs > 0 && n > 0;
        let rate = |c: Option<u64>| c.filter(|_| known).map(|c| c as f64 / n as f64);
        FidelityFigures {
            pairs: window.pairs,
            cumulative_pairs: all.pairs,
            disagreement: (all.pairs > 0).then(|| all.disagreements as f64 / all.pairs as f64),
            lower: rate(crate::anytime::lower(all.disagreements, n, p, alpha)),
            upper: rate(crate::anytime::upper(all.disagreements, n, p, alpha)),
        }
    }
}

/// A chart running over the periods.
#[derive(Clone, Debug)]
struct Running {
    chart: Cusum,
    score: u64,
    /// The period of the first label after the score was last 0.
    began: Option<String>,
    alarmed: Option<(String, Option<String>)>,
}

impl Running {
    fn step(&mut self, period: &str, regression: bool) {
        if self.score == 0 {
            self.began = Some(period.to_string());
        }
        self.score = self.chart.step(self.score, regression);
        if self.alarmed.is_none() && self.chart.alarms(self.score) {
            self.alarmed = Some((period.to_string(), self.began.clone()));
        }
    }
}

/// Every row: per period, its strata (by name) then `all`.
pub fn rows(state: &State, cut: &Cut, watch: &Watch) -> Vec<Row> {
    let mut charts: BTreeMap<String, Running> = watch
        .charts
        .iter()
        .map(|(s, c)| {
            let r = Running {
                chart: *c,
                score: 0,
                began: None,
                alarmed: None,
            };
            (s.clone(), r)
        })
        .collect();
    let mut cumulative: BTreeMap<String, StratumTally> = BTreeMap::new();
    let mut fidelity = Fidelity::default();
    let mut shared = 0u64;
    let mut out: Vec<Row> = Vec::new();
    let periods = state.periods(cut);
    let last = periods.last().map(|p| p.0.clone());
    for (name, p) in &periods {
        let is_last = last.as_ref() == Some(name);
        for v in &p.chart {
            if let Some(c) = charts.get_mut(&v.stratum) {
                c.step(name, v.regression);
            }
        }
        for (s, t) in &p.design.strata {
            cumulative.entry(s.clone()).or_default().add(t);
        }
        fidelity.merge(&p.design.fidelity);
        shared += p.design.run_keyed + p.design.shared_keys;
        let mut strata: Vec<&String> = p.turns.keys().chain(cumulative.keys()).collect();
        strata.sort();
        strata.dedup();
        // A plan without strata has one, `all`: the pooled row is it.
        strata.retain(|s| s.as_str() != "all");
        for s in strata {
            let only = |m: &BTreeMap<String, StratumTally>| {
                m.iter()
                    .filter(|(k, _)| *k == s)
                    .map(|(k, v)| (k.clone(), *v))
                    .collect()
            };
            let look = Look {
                period: name,
                stratum: s,
                p,
                window: only(&p.design.strata),
                cumulative: only(&cumulative),
                charts: charts.get(s).into_iter().collect(),
                last: is_last,
                shared,
            };
            out.push(look.row(watch, previous(&out, s)));
        }
        let look = Look {
            period: name,
            stratum: "all",
            p,
            window: p.design.strata.clone(),
            cumulative: cumulative.clone(),
            charts: charts.values().collect(),
            last: is_last,
            shared,
        };
        let mut row = look.row(watch, previous(&out, "all"));
        row.fidelity = watch
            .fidelity
            .then(|| FidelityFigures::of(&p.design.fidelity, &fidelity, watch.alpha));
        out.push(row);
    }
    out
}

/// The row of `stratum` at the look before.
fn previous<'a>(rows: &'a [Row], stratum: &str) -> Option<&'a Row> {
    rows.iter().rev().find(|r| r.stratum == stratum)
}

/// One row's inputs.
struct Look<'a> {
    period: &'a str,
    stratum: &'a str,
    p: &'a Period,
    window: BTreeMap<String, StratumTally>,
    cumulative: BTreeMap<String, StratumTally>,
    charts: Vec<&'a Running>,
    /// The last period: the one a daily post is about.
    last: bool,
    /// Skips so far that share a coin (keyed by run alone, or repeated).
    shared: u64,
}

impl Look<'_> {
    fn row(&self, watch: &Watch, before: Option<&Row>) -> Row {
        let (turns, fires) = self
            .p
            .turns
            .iter()
            .filter(|(k, _)| self.stratum == "all" || k.as_str() == self.stratum)
            .fold((0, 0), |(t, f), (_, x)| (t + x.turns, f + x.fires));
        let mut window = self
            .p
            .design
            .with_strata(self.window.clone())
            .figures(turns, watch.alpha);
        if self.stratum != "all" {
            (window.other_plan, window.unplanned) = (0, 0);
        }
        let sum = |f: fn(&StratumTally) -> u64| self.cumulative.values().map(f).sum::<u64>();
        let cum_skips = sum(|s| s.skips);
        let groups = by_probability(&self.cumulative);
        let level = watch.alpha;
        let (b, estimate) = self.so_far(&groups, level, cum_skips);
        let decider = watch.decided_by;
        let (lower, upper) = match decider {
            Decider::WorstCase => (b.worst_lower, b.worst_upper),
            Decider::MissingAtRandom => (b.lower, b.upper),
        };
        if let Some(e) = window.estimate.as_mut() {
            *e = e.min(1.0);
        }
        let alarmed = self.charts.iter().filter_map(|c| c.alarmed.clone()).min();
        let status = match (&alarmed, lower, upper) {
            (Some(_), _, _) => Status::Alarm,
            (None, Some(l), _) if l > watch.rate => Status::Above,
            (None, _, Some(u)) if u <= watch.rate => Status::Certified,
            _ => Status::TooFewLabels,
        };
        let since = match (status, before) {
            (Status::Alarm, _) => alarmed.as_ref().map_or(self.period, |a| &a.0).to_string(),
            (s, Some(b)) if b.status == s => b.since.clone(),
            _ => self.period.to_string(),
        };
        let labels_needed = (self.last && status == Status::TooFewLabels)
            .then(|| labels_needed(&groups, level, watch.rate, estimate, decider))
            .flatten();
        Row {
            period: self.period.to_string(),
            stratum: self.stratum.to_string(),
            turns,
            fires,
            harmful_per_1k_estimate: window
                .estimate
                .filter(|_| turns > 0)
                .map(|e| e * window.production_skips as f64 * 1000.0 / turns as f64),
            window,
            cumulative_skips: cum_skips,
            cumulative_labelled: sum(|s| s.labelled()),
            cumulative_regressions: sum(|s| s.regressions),
            cumulative_failed: sum(|s| s.failed),
            cumulative_estimate: estimate,
            anytime_upper: b.upper,
            anytime_lower: b.lower,
            anytime_worst_case_upper: b.worst_upper,
            anytime_worst_case_lower: b.worst_lower,
            decided_by: decider,
            cusum: self
                .charts
                .iter()
                .map(|c| c.score as f64 / c.chart.h as f64)
                .reduce(f64::max),
            alarm: alarmed.is_some(),
            change_began: alarmed.and_then(|a| a.1),
            status,
            since,
            labels_needed,
            fidelity: None,
            withheld: (self.shared > 0).then_some(SHARED_COIN),
        }
    }
}

/// The anytime bounds on the skips so far, as rates.
struct Bounds {
    upper: Option<f64>,
    lower: Option<f64>,
    worst_upper: Option<f64>,
    worst_lower: Option<f64>,
}

impl Look<'_> {
    /// The anytime bounds and the estimate on the `skips` so far, as
    /// rates; the bounds withheld where skips share a coin. A few draws at
    /// a small probability can weigh above every skip: the estimate is at
    /// most 1.
    fn so_far(&self, groups: &[Group], level: f64, skips: u64) -> (Bounds, Option<f64>) {
        let rate = |c: Option<u64>| c.filter(|_| skips > 0).map(|c| c as f64 / skips as f64);
        let bound = |side| match self.shared {
            0 => rate(anytime(groups, level, side)),
            _ => None,
        };
        let estimate = crate::replay::design::horvitz_thompson(groups)
            .filter(|_| skips > 0)
            .map(|t| (t / skips as f64).min(1.0));
        let b = Bounds {
            upper: bound(Side::Upper),
            lower: bound(Side::Lower),
            worst_upper: bound(Side::WorstUpper),
            worst_lower: bound(Side::WorstLower),
        };
        (b, estimate)
    }
}

/// Which anytime bound.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Upper,
    Lower,
    /// Every drawn skip without a verdict a regression.
    WorstUpper,
    /// Every drawn skip without a verdict an approval, at the full
    /// probability: the labelled regressions are at most the drawn ones.
    WorstLower,
}

impl Side {
    fn lower(self) -> bool {
        matches!(self, Side::Lower | Side::WorstLower)
    }
}

/// The anytime bound on the regressions among the groups' skips, tested
/// jointly at `level`. A group drawn at probability 0, or that drew skips
/// and got no verdict, may be all regressions (upper) and holds at least
/// its labelled ones (lower): it is added whole, or as its labelled
/// regressions, outside the joint bound. Failed calls are taken as
/// unrelated to the verdict: the group's probability times labelled over
/// drawn.
fn anytime(groups: &[Group], level: f64, side: Side) -> Option<u64> {
    let mut fixed = 0u64;
    let mut streams = Vec::new();
    for g in groups {
        let (a, p) = match side {
            Side::WorstUpper => (g.regressions + (g.drawn - g.labelled), g.probability),
            Side::WorstLower => (g.regressions, g.probability),
            _ if g.drawn == 0 => (0, g.probability),
            // A drawn skip whose call failed is taken as never drawn (its
            // failure unrelated to its verdict): the probability times the
            // share of draws that came back or are still to come. One
            // whose verdict is still to come may regress: the upper bound
            // counts it a regression, the lower does not.
            _ => {
                let pending = g.drawn - g.labelled - g.failed.min(g.drawn - g.labelled);
                let kept = (g.drawn - g.failed.min(g.drawn)) as f64 / g.drawn as f64;
                let a = match side {
                    Side::Upper => g.regressions + pending,
                    _ => g.regressions,
                };
                (a, g.probability * kept)
            }
        };
        let unknown = g.probability <= 0.0 || (g.drawn > 0 && g.labelled == 0) || a > g.population;
        match (side.lower(), unknown) {
            (true, true) => fixed += g.regressions.min(g.population),
            (false, true) => fixed += g.population,
            (_, false) => streams.push(crate::anytime::Stream {
                drawn_regressions: a,
                skips: g.population,
                p,
            }),
        }
    }
    let joint = match (streams.is_empty(), side.lower()) {
        (true, _) => 0,
        (false, true) => crate::anytime::joint_lower(&streams, level)?,
        (false, false) => crate::anytime::joint_upper(&streams, level)?,
    };
    Some(fixed + joint)
}

/// The most labels a status waits for before saying it cannot tell.
const MAX_LABELS_NEEDED: u64 = 10_000_000;

/// The labels still needed to certify R: more of the same traffic (each
/// group's skips and labels in their proportions so far), every further
/// draw answered (the failed calls so far stay as they are: in the worst
/// case each a regression), with regressions at the current estimate,
/// until the deciding anytime bound is within R. None without an
/// estimate, at an estimate at or above R, or past ten million labels.
fn labels_needed(
    groups: &[Group],
    level: f64,
    rate: f64,
    estimate: Option<f64>,
    decider: Decider,
) -> Option<u64> {
    let side = match decider {
        Decider::WorstCase => Side::WorstUpper,
        Decider::MissingAtRandom => Side::Upper,
    };
    let e = estimate.filter(|e| *e < rate)?;
    let skips: u64 = groups.iter().map(|g| g.population).sum();
    let labelled: u64 = groups.iter().map(|g| g.labelled).sum();
    if skips == 0 || labelled == 0 {
        return None;
    }
    let within = |k: f64| {
        let more: Vec<Group> = groups
            .iter()
            .map(|g| {
                // The further draws all answered: the failed calls so far
                // stay (in the worst case, regressions), none are added.
                let scale = |x: u64| (x as f64 * k).round() as u64;
                let added = scale(g.labelled);
                Group {
                    population: g.population + scale(g.population),
                    drawn: g.drawn + added,
                    labelled: g.labelled + added,
                    regressions: g.regressions + (e * added as f64).round() as u64,
                    ..*g
                }
            })
            .collect();
        let total: u64 = more.iter().map(|g| g.population).sum();
        anytime(&more, level, side).is_some_and(|u| u as f64 / total as f64 <= rate)
    };
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while !within(hi) {
        (lo, hi) = (hi, hi * 2.0);
        if hi * labelled as f64 > MAX_LABELS_NEEDED as f64 {
            return None;
        }
    }
    for _ in 0..30 {
        let mid = 0.5 * (lo + hi);
        match within(mid) {
            true => hi = mid,
            false => lo = mid,
        }
    }
    Some((hi * labelled as f64).ceil() as u64)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::cmd::monitor::looks::{rows, Decider, Watch};
    use crate::cmd::monitor::period::Cut;
    use crate::cmd::monitor::state::{Period, State};
    use crate::cusum::Cusum;
    use crate::replay::design::Verdict;

    /// Under the chart, a conversation is one label a day: the one of its
    /// lowest key. Four regressions of one derailing conversation and an
    /// approval of another step the chart twice (+3, -1), not five times;
    /// the next day the conversation counts again. Which of its verdicts
    /// is kept follows the key, not the verdict.
    #[test]
    fn a_conversation_is_one_label_a_day_to_the_chart() {
        let v = |key, conversation, regression| Verdict {
            key,
            conversation,
            stratum: "s".into(),
            regression,
        };
        let mut state = State::new("p", None);
        let day = |verdicts: Vec<Verdict>| Period {
            turns: BTreeMap::from([("s".to_string(), Default::default())]),
            verdicts,
            ..Default::default()
        };
        state.days.insert(
            "2026-01-01".into(),
            day(vec![
                v(1, 7, true),
                v(2, 7, true),
                v(3, 8, false),
                v(4, 7, true),
                v(5, 7, true),
            ]),
        );
        state.days.insert(
            "2026-01-02".into(),
            day(vec![v(6, 8, false), v(9, 7, true), v(10, 7, false)]),
        );
        // The same conversation whose lowest key approves: one step down.
        state.days.insert(
            "2026-01-03".into(),
            day(vec![v(11, 7, false), v(12, 7, true), v(13, 7, true)]),
        );
        let watch = Watch {
            rate: 0.1,
            alpha: 0.05,
            charts: BTreeMap::from([("s".to_string(), Cusum { up: 3, h: 100 })]),
            fidelity: false,
            false_alarm_days: 365.0,
            rise: 2.0,
            redesigned: false,
            decided_by: Decider::WorstCase,
        };
        let scores: Vec<f64> = rows(&state, &Cut::Day, &watch)
            .iter()
            .filter(|r| r.stratum == "s")
            .map(|r| r.cusum.unwrap() * 100.0)
            .collect();
        assert_eq!(scores.len(), 3);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(scores[0], 2.0), "{scores:?}");
        assert!(close(scores[1], 4.0), "{scores:?}");
        assert!(close(scores[2], 3.0), "{scores:?}");
        // By week, the same: the chart steps day by day.
        let week: Vec<f64> = rows(&state, &Cut::Week, &watch)
            .iter()
            .filter(|r| r.stratum == "s")
            .map(|r| r.cusum.unwrap() * 100.0)
            .collect();
        assert!(close(week[week.len() - 1], 3.0), "{week:?}");
    }
}

#[cfg(test)]
mod needed {
    use super::*;

    /// Review of #64: with 10 of 500 draws failed (2%, above R = 1%) and
    /// an estimate of 0.2%, the worst case's projection failed as many
    /// calls again at every step and never certified, so monitor said "no
    /// estimate below the budget yet". With the further draws answered it
    /// gives a count, larger than without the failures, and larger than
    /// under the assumption of calls missing at random.
    #[test]
    fn failed_calls_so_far_leave_a_count_of_labels() {
        let g = |failed: u64| Group {
            probability: 0.05,
            population: 10_000,
            drawn: 500,
            labelled: 500 - failed,
            regressions: 1,
            failed,
        };
        let needed = |failed: u64, d: Decider| {
            let e = crate::replay::design::horvitz_thompson(&[g(failed)]).map(|t| t / 10_000.0);
            labels_needed(&[g(failed)], 0.05, 0.01, e, d)
        };
        let clean = needed(0, Decider::WorstCase).unwrap();
        let worst = needed(10, Decider::WorstCase).expect("a count after failed calls");
        assert!(worst > clean, "{worst} against {clean}");
        let mar = needed(10, Decider::MissingAtRandom).unwrap();
        assert!(mar < worst, "{mar} against {worst}");
    }
}
