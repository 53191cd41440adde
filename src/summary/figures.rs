//! The summary's figures as typed values: one [`VariantSummary`] per
//! variant (a row of `summary.csv`, an object of `summary.json`'s
//! `variants`) inside the [`RunSummary`] that is `summary.json`. The replay
//! builds them; `check`, `diff` and `report.md` read their fields, so no
//! metric is looked up by a string key. [`VariantSummary`] and its columns
//! are declared together, once, in `metrics.rs`; this file reads, checks
//! and writes them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::metrics::{Column, VARIANT_COLUMNS};
use super::numbers::{sig, sig_up};
use crate::stats::{certificate_upper, clopper_pearson_upper, run_level_upper, RunLabels};

pub(crate) use super::metrics::VariantSummary;

/// The nullable figures `check` cannot hold to the summary's own counts,
/// and why: everything else that may be null has a rule above (null
/// exactly where undefined, or recomputed from its counts), and
/// `every_nullable_figure_has_a_tamper_rule` fails on a new figure that
/// has neither a rule nor a line here.
#[cfg(test)]
const NOT_RECOMPUTED: &[(&str, &str)] = &[
    (
        "new_skip_regression_rate_two_phase_upper95",
        "from the audit sample's per-stratum counts: held to [0, 1] and within its worst case",
    ),
    (
        "new_skip_regression_rate_two_phase_worst_case_upper95",
        "from the audit sample's per-stratum counts: present exactly with the audit's sample counts",
    ),
    (
        "skip_regression_rate_estimate",
        "from per-stratum counts of the plan's sample, which the summary does not hold: held to [0, 1], null exactly without a sample",
    ),
    (
        "skip_regression_rate_upper95",
        "from per-stratum counts of the plan's sample: held to [0, 1] and within its worst case",
    ),
    (
        "skip_regression_rate_worst_case_upper95",
        "from per-stratum counts of the plan's sample: held to [0, 1]",
    ),
    (
        "harmful_skips_per_1k_turns_upper95",
        "from per-stratum counts of the plan's sample: null exactly where the bound is",
    ),
    (
        "skip_bound_method",
        "one of the two methods' names, present exactly with the bound",
    ),
    (
        "saved_call_share",
        "a share of the baseline's critic calls, on another row: held to [0, 1]",
    ),
    (
        "design_effect",
        "an input of the run-level bound: at least 1",
    ),
    (
        "worst_case_design_effect",
        "an input of the worst-case bound: at least 1",
    ),
    (
        "saved_tokens_in",
        "a sum of recorded events, which the summary does not hold",
    ),
    ("saved_tokens_out", "a sum of recorded events"),
    ("saved_usd", "a sum of recorded events"),
    ("saved_latency_ms", "a sum of recorded events"),
    (
        "added_tokens_in_estimated",
        "an estimate from the events by draft length",
    ),
    (
        "added_tokens_out_estimated",
        "an estimate from the events by draft length",
    ),
    (
        "added_usd_estimated",
        "an estimate from the events by draft length",
    ),
    (
        "added_latency_ms_estimated",
        "an estimate from the events by draft length",
    ),
    (
        "net_usd",
        "saved_usd - added_usd_estimated, each rounded on its own",
    ),
    (
        "net_latency_ms",
        "saved_latency_ms - added_latency_ms_estimated",
    ),
    ("net_usd_per_1k_turns", "dollars, rounded on their own"),
    (
        "critic_latency_p50_ms",
        "a percentile of recorded latencies",
    ),
    (
        "critic_latency_p95_ms",
        "a percentile of recorded latencies",
    ),
    (
        "critic_latency_p99_ms",
        "a percentile of recorded latencies",
    ),
    (
        "critic_latency_p50_ms_with_estimates",
        "a percentile of recorded and drawn latencies",
    ),
    (
        "critic_latency_p95_ms_with_estimates",
        "a percentile of recorded and drawn latencies",
    ),
    (
        "critic_latency_p99_ms_with_estimates",
        "a percentile of recorded and drawn latencies",
    ),
    (
        "latency_estimate_pool",
        "how many recorded latencies the estimates drew from",
    ),
];

/// Each `X_per_1k_turns` figure whose `X` is a count, with `X`: the
/// figures `check` recomputes from their counts.
fn per_1k_of_counts() -> impl Iterator<Item = (&'static str, &'static str)> {
    use super::metrics::Type;
    VARIANT_COLUMNS.iter().filter_map(|c| {
        let base = c.name.strip_suffix("_per_1k_turns")?;
        let counted = VARIANT_COLUMNS
            .iter()
            .any(|b| b.name == base && matches!(b.ty, Type::U64 | Type::I64));
        counted.then_some((c.name, base))
    })
}

/// One consistency check of a variant's figures.
type Check = fn(&VariantSummary) -> Result<(), BadSummary>;

impl VariantSummary {
    /// Every figure with its column name, in the order of
    /// `summary.json` (names sorted): what `diff` compares. Booleans are
    /// 0 or 1.
    pub fn numbers(&self) -> Vec<(String, Option<f64>)> {
        let Ok(Value::Object(m)) = serde_json::to_value(self) else {
            unreachable!("a VariantSummary serializes to an object")
        };
        m.into_iter()
            .map(|(k, v)| {
                let x = match v {
                    Value::Bool(b) => Some(f64::from(u8::from(b))),
                    other => other.as_f64(),
                };
                (k, x)
            })
            .collect()
    }

    /// The figures hold together: fires and skips make the turns, a
    /// regression is a labelled skip, and a rate is null exactly where
    /// its denominator is 0 (a damaged folder must not read as "no
    /// turns" and be judged).
    fn consistent(&self) -> Result<(), BadSummary> {
        Self::CHECKS.iter().try_for_each(|check| check(self))
    }

    /// Every check a variant's figures pass, in the order they are tried:
    /// one list, so a new check is one line here.
    const CHECKS: [Check; 9] = [
        Self::turns_are_fires_and_skips,
        Self::calls_are_fires,
        Self::net_is_saved_less_added,
        Self::parts_within_wholes,
        Self::unlabelled_add_up,
        Self::nulls_where_undefined,
        Self::sample_holds_together,
        Self::two_phase_holds_together,
        Self::rates_are_their_counts,
    ];

    fn turns_are_fires_and_skips(&self) -> Result<(), BadSummary> {
        if self.fires.checked_add(self.skips) != Some(self.turns) {
            return Err(BadSummary::Inconsistent(format!(
                "variants.{}: fires ({}) + skips ({}) must be turns ({})",
                self.variant, self.fires, self.skips, self.turns
            )));
        }
        Ok(())
    }

    fn net_is_saved_less_added(&self) -> Result<(), BadSummary> {
        if i128::from(self.saved_calls) - i128::from(self.added_calls) != i128::from(self.net_calls)
        {
            return Err(BadSummary::Inconsistent(format!(
                "variants.{}: net_calls ({}) must be saved_calls ({}) - added_calls ({})",
                self.variant, self.net_calls, self.saved_calls, self.added_calls
            )));
        }
        Ok(())
    }

    fn parts_within_wholes(&self) -> Result<(), BadSummary> {
        for (a, an, b, bn) in self.parts_of_wholes() {
            if a > b {
                return Err(BadSummary::Inconsistent(format!(
                    "variants.{}: {an} ({a}) must be at most {bn} ({b})",
                    self.variant
                )));
            }
        }
        Ok(())
    }

    /// Counts that are parts of others: (part, its name, whole, its name).
    fn parts_of_wholes(&self) -> Vec<(u64, &'static str, u64, &'static str)> {
        vec![
            (self.saved_calls, "saved_calls", self.skips, "skips"),
            (self.added_calls, "added_calls", self.fires, "fires"),
            (
                self.fires_without_critic,
                "fires_without_critic",
                self.fires,
                "fires",
            ),
            (
                self.all_skips_labelled,
                "all_skips_labelled",
                self.skips,
                "skips",
            ),
            (
                self.all_skips_safety_regressions,
                "all_skips_safety_regressions",
                self.all_skips_labelled,
                "all_skips_labelled",
            ),
            (self.new_skips, "new_skips", self.skips, "skips"),
            (
                self.new_labelled_skips,
                "new_labelled_skips",
                self.new_skips,
                "new_skips",
            ),
            (
                self.new_labelled_skips,
                "new_labelled_skips",
                self.all_skips_labelled,
                "all_skips_labelled",
            ),
            (
                self.safety_regressions,
                "safety_regressions",
                self.new_labelled_skips,
                "new_labelled_skips",
            ),
            (
                self.safety_regressions,
                "safety_regressions",
                self.all_skips_safety_regressions,
                "all_skips_safety_regressions",
            ),
            (
                self.labelled_runs,
                "labelled_runs",
                self.new_labelled_skips,
                "new_labelled_skips",
            ),
            (
                self.labelled_runs,
                "labelled_runs",
                self.new_skip_runs,
                "new_skip_runs",
            ),
            (
                self.new_skip_runs,
                "new_skip_runs",
                self.new_skips,
                "new_skips",
            ),
        ]
        .into_iter()
        .chain(self.risky_parts())
        .collect()
    }

    /// The risky counts' parts and wholes.
    fn risky_parts(&self) -> Vec<(u64, &'static str, u64, &'static str)> {
        vec![
            (
                self.risky_skips.unwrap_or(0),
                "risky_skips",
                self.new_skips,
                "new_skips",
            ),
            (
                self.risky_labelled_skips.unwrap_or(0),
                "risky_labelled_skips",
                self.new_labelled_skips,
                "new_labelled_skips",
            ),
            (
                self.risky_safety_regressions.unwrap_or(0),
                "risky_safety_regressions",
                self.safety_regressions,
                "safety_regressions",
            ),
            (
                self.risky_labelled_skips.unwrap_or(0),
                "risky_labelled_skips",
                self.risky_skips.unwrap_or(0),
                "risky_skips",
            ),
            (
                self.risky_safety_regressions.unwrap_or(0),
                "risky_safety_regressions",
                self.risky_labelled_skips.unwrap_or(0),
                "risky_labelled_skips",
            ),
        ]
    }

    /// The unlabelled new skips by cause are every unlabelled new skip,
    /// and a design effect is at least 1.
    fn unlabelled_add_up(&self) -> Result<(), BadSummary> {
        let name = &self.variant;
        let causes = [
            self.new_unlabelled_critic_not_run,
            self.new_unlabelled_no_event,
            self.new_unlabelled_no_verdict,
        ]
        .iter()
        .try_fold(0u64, |a, b| a.checked_add(*b));
        let unlabelled = self.new_skips.checked_sub(self.new_labelled_skips);
        if causes != unlabelled {
            return Err(BadSummary::Inconsistent(format!(
                "variants.{name}: new_unlabelled_critic_not_run + new_unlabelled_no_event + new_unlabelled_no_verdict must be new_skips ({}) - new_labelled_skips ({})",
                self.new_skips, self.new_labelled_skips
            )));
        }
        for (key, d) in [
            ("design_effect", self.design_effect),
            ("worst_case_design_effect", self.worst_case_design_effect),
        ] {
            // NaN is not at least 1 either.
            if d.is_some_and(|d| d.is_nan() || d < 1.0) {
                return Err(BadSummary::Inconsistent(format!(
                    "variants.{name}.{key} must be at least 1"
                )));
            }
        }
        Ok(())
    }

    /// The critic calls are the fires a critic can run on, and the share
    /// of the baseline's calls saved is a share.
    fn calls_are_fires(&self) -> Result<(), BadSummary> {
        let name = &self.variant;
        if self.fires.checked_sub(self.fires_without_critic) != Some(self.critic_calls) {
            return Err(BadSummary::Inconsistent(format!(
                "variants.{name}: critic_calls ({}) must be fires ({}) - fires_without_critic ({})",
                self.critic_calls, self.fires, self.fires_without_critic
            )));
        }
        if self
            .saved_call_share
            .is_some_and(|x| !(0.0..=1.0).contains(&x))
        {
            return Err(BadSummary::Inconsistent(format!(
                "variants.{name}: saved_call_share must be in [0, 1]"
            )));
        }
        Ok(())
    }

    /// Each rate not declared a ratio (a bound, an effective number,
    /// production's agreement) with its denominator's name and value.
    fn rates_and_denominators(&self) -> Vec<(&'static str, Option<f64>, &'static str, u64)> {
        vec![
            (
                "safety_regression_rate_upper95",
                self.safety_regression_rate_upper95,
                "new_labelled_skips",
                self.new_labelled_skips,
            ),
            (
                "safety_regression_rate_certificate_upper95",
                self.safety_regression_rate_certificate_upper95,
                "new_labelled_skips",
                self.new_labelled_skips,
            ),
            (
                "effective_labels",
                self.effective_labels,
                "new_labelled_skips",
                self.new_labelled_skips,
            ),
            (
                "effective_runs",
                self.effective_runs,
                "new_labelled_skips",
                self.new_labelled_skips,
            ),
            (
                "worst_case_effective_runs",
                self.worst_case_effective_runs,
                "new_skips",
                self.new_skips,
            ),
            (
                "safety_regression_rate_worst_case_upper95",
                self.safety_regression_rate_worst_case_upper95,
                "new_skips",
                self.new_skips,
            ),
            (
                "all_skips_regression_rate_upper95",
                self.all_skips_regression_rate_upper95,
                "all_skips_labelled",
                self.all_skips_labelled,
            ),
            (
                "production_agreement",
                self.production_agreement,
                "production_known",
                self.production_known,
            ),
            (
                "risky_regression_rate_upper95",
                self.risky_regression_rate_upper95,
                "risky_labelled_skips",
                self.risky_labelled_skips.unwrap_or(0),
            ),
        ]
    }

    /// The skips of a smart-gate production that no critic reviewed, when
    /// there are any: every risk of its skips is unknown while they are
    /// (`check` fails its risk budgets, report.md says unknown). A legacy
    /// production's skips (confident turns with no sensitive tag) are the
    /// reference every risk figure is measured against, as symfonic's
    /// design accepts them.
    pub fn unreviewed_production_skips(&self) -> Option<u64> {
        self.production_skips_unlabelled
            .filter(|n| *n > 0 && self.production && self.selective_gate)
    }

    /// The production counts: set exactly on the production variant, to
    /// its skips and its skips without a label.
    fn production_counts(&self) -> [(&'static str, Option<u64>, Option<u64>); 2] {
        let on = |x: Option<u64>| x.filter(|_| self.production);
        [
            (
                "production_skips",
                self.production_skips,
                on(Some(self.skips)),
            ),
            (
                "production_skips_unlabelled",
                self.production_skips_unlabelled,
                on(self.skips.checked_sub(self.all_skips_labelled)),
            ),
        ]
    }

    /// The counts of the plan's sample: null except on production's
    /// variant in a replay with a plan.
    fn sample_counts(&self) -> [(&'static str, Option<u64>); 7] {
        [
            ("sampled_skips", self.sampled_skips),
            ("sampled_labelled", self.sampled_labelled),
            ("sampled_labelled_shadow", self.sampled_labelled_shadow),
            (
                "sampled_labelled_production",
                self.sampled_labelled_production,
            ),
            ("sampled_failed", self.sampled_failed),
            ("sampled_unreviewed", self.sampled_unreviewed),
            (
                "production_fires_without_turn_id",
                self.production_fires_without_turn_id,
            ),
        ]
    }

    /// The sample's figures hold together: all counts or none (none off
    /// production's variant), the labelled by source add up, the drawn
    /// are the labelled, failed and unreviewed and at most production's
    /// skips, each bound a share within its worst case and present with
    /// its method.
    fn sample_holds_together(&self) -> Result<(), BadSummary> {
        let name = &self.variant;
        let bad = |why: String| Err(BadSummary::Inconsistent(format!("variants.{name}: {why}")));
        let counts = self.sample_counts();
        let present = counts.iter().filter(|(_, c)| c.is_some()).count();
        if present == 0 {
            let figures = [
                self.skip_regression_rate_estimate,
                self.skip_regression_rate_upper95,
                self.skip_regression_rate_worst_case_upper95,
                self.harmful_skips_per_1k_turns_upper95,
            ];
            let two_phase = [
                self.new_skip_regression_rate_two_phase_upper95,
                self.new_skip_regression_rate_two_phase_worst_case_upper95,
            ];
            if figures.iter().chain(&two_phase).any(Option::is_some)
                || self.skip_bound_method.is_some()
            {
                return bad("the sample's bounds are present without its counts".into());
            }
            return Ok(());
        }
        let [drawn, labelled, shadow, prod, failed, unreviewed, unkeyed] =
            counts.map(|(_, c)| c.unwrap_or(0));
        let population = self.sampled_population();
        if present != counts.len() || population.is_none() {
            return bad("the sample's counts are all present, on production's variant or (with the two-phase figures) on an audited candidate".into());
        }
        let sum = |xs: &[u64]| xs.iter().try_fold(0u64, |a, &x| a.checked_add(x));
        if sum(&[shadow, prod]) != Some(labelled)
            || sum(&[labelled, failed, unreviewed]) != Some(drawn)
            || population.is_none_or(|n| drawn > n || unkeyed > n)
        {
            return bad(format!(
                "sampled_labelled ({labelled}) must be shadow ({shadow}) + production ({prod}), and sampled_skips ({drawn}) labelled + failed ({failed}) + unreviewed ({unreviewed}), at most production_skips"
            ));
        }
        let share = |x: Option<f64>| x.is_none_or(|x| (0.0..=1.0).contains(&x));
        let (u, w) = (
            self.skip_regression_rate_upper95,
            self.skip_regression_rate_worst_case_upper95,
        );
        let methods = ["hypergeometric", "hypergeometric_joint"];
        if !share(u)
            || !share(w)
            || !share(self.skip_regression_rate_estimate)
            || u.zip(w).is_some_and(|(u, w)| u > w)
            || u.is_some()
                != self
                    .skip_bound_method
                    .as_deref()
                    .is_some_and(|m| methods.contains(&m))
            || u.is_some() != self.harmful_skips_per_1k_turns_upper95.is_some()
            || (u.is_some() && labelled == 0)
        {
            return bad("the sample's bounds must be shares, the bound within its worst case, and present (with its method and harmful_skips_per_1k_turns_upper95) only with a labelled draw".into());
        }
        Ok(())
    }

    /// The population a sample's counts are of: a variant's unlabelled
    /// new skips where an audit's two-phase figures are (production's
    /// variant included), production's skips on production's variant
    /// otherwise; None on any other row.
    fn sampled_population(&self) -> Option<u64> {
        let audit = self
            .new_skip_regression_rate_two_phase_worst_case_upper95
            .is_some();
        match (self.production, audit) {
            (_, true) => self.new_skips.checked_sub(self.new_labelled_skips),
            (true, false) => self.production_skips,
            (false, false) => None,
        }
    }

    /// The two-phase bounds are shares, within their worst case, and
    /// present with the sample's bound.
    fn two_phase_holds_together(&self) -> Result<(), BadSummary> {
        let share = |x: Option<f64>| x.is_none_or(|x| (0.0..=1.0).contains(&x));
        let (t, w) = (
            self.new_skip_regression_rate_two_phase_upper95,
            self.new_skip_regression_rate_two_phase_worst_case_upper95,
        );
        if !share(t)
            || !share(w)
            || t.zip(w).is_some_and(|(t, w)| t > w)
            || (t.is_some() && self.skip_regression_rate_upper95.is_none())
        {
            return Err(BadSummary::Inconsistent(format!(
                "variants.{}: the two-phase bounds must be shares, within their worst case, and present only with the sample's bound",
                self.variant
            )));
        }
        Ok(())
    }

    /// The risky counts: null exactly for a variant without the smart gate.
    fn risky_counts(&self) -> [(&'static str, Option<u64>); 3] {
        [
            ("risky_skips", self.risky_skips),
            ("risky_labelled_skips", self.risky_labelled_skips),
            ("risky_safety_regressions", self.risky_safety_regressions),
        ]
    }

    /// A rate is null exactly where it is undefined: a declared ratio
    /// where its denominator is 0 or its numerator null, any other rate
    /// where its denominator is 0.
    fn nulls_where_undefined(&self) -> Result<(), BadSummary> {
        let name = &self.variant;
        let rates = self.rates_and_denominators();
        if self
            .risky_counts()
            .iter()
            .any(|(_, c)| c.is_some() != self.selective_gate)
        {
            return Err(BadSummary::Inconsistent(format!(
                "variants.{name}: the risky counts are null exactly for a variant without the smart gate (selective_gate is {})",
                self.selective_gate
            )));
        }
        for (field, got, want) in self.production_counts() {
            if got != want {
                let show = |x: Option<u64>| x.map_or("null".to_string(), |x| x.to_string());
                return Err(BadSummary::Inconsistent(format!(
                    "variants.{name}.{field} is {}, but must be {} (production is {}, skips {}, all_skips_labelled {})",
                    show(got),
                    show(want),
                    self.production,
                    self.skips,
                    self.all_skips_labelled
                )));
            }
        }
        for r in self.ratios() {
            if r.value.is_none() != (r.numerator.is_none() || r.denominator == 0) {
                let x = r.value.map_or("null".to_string(), |x| x.to_string());
                let why = match r.numerator {
                    None => format!("{} is null", r.ratio.numerator),
                    Some(_) => format!("{} is {}", r.ratio.denominator, r.denominator),
                };
                return Err(BadSummary::Inconsistent(format!(
                    "variants.{name}.{} is {x}, but {why}: a rate is null exactly where it is undefined",
                    r.ratio.name
                )));
            }
        }
        for (rate, x, of, n) in rates {
            if x.is_none() != (n == 0) {
                let x = x.map_or("null".to_string(), |x| x.to_string());
                return Err(BadSummary::Inconsistent(format!(
                    "variants.{name}.{rate} is {x}, but {of} is {n}: a rate is null exactly where it is undefined"
                )));
            }
        }
        Ok(())
    }

    /// Each rate, the share its counts give, and what that share is.
    fn rates_and_their_counts(
        &self,
        agreeing: u64,
    ) -> Vec<(&'static str, Option<f64>, Option<f64>, &'static str)> {
        let share = |a: u64, b: u64| super::metrics::ratio_of(Some(a), b);
        vec![
            (
                "effective_labels",
                self.effective_labels,
                sig((self.new_labelled_skips > 0)
                    .then(|| self.new_labelled_skips as f64 / self.design_effect.unwrap_or(1.0))),
                "new_labelled_skips / design_effect",
            ),
            (
                "production_agreement",
                self.production_agreement,
                share(agreeing, self.production_known),
                "agreeing / production_known",
            ),
        ]
    }

    /// Each rate and bound is what its counts give (as the replay wrote
    /// it): a hand-edited rate would pass a budget its counts fail.
    fn rates_are_their_counts(&self) -> Result<(), BadSummary> {
        let name = &self.variant;
        let disagreeing = self
            .production_fired_variant_skips
            .checked_add(self.production_skipped_variant_fires)
            .filter(|&d| d <= self.production_known)
            .ok_or_else(|| {
                BadSummary::Inconsistent(format!(
                    "variants.{name}: production_fired_variant_skips ({}) + production_skipped_variant_fires ({}) must be at most production_known ({})",
                    self.production_fired_variant_skips,
                    self.production_skipped_variant_fires,
                    self.production_known
                ))
            })?;
        let agreeing = self.production_known - disagreeing;
        if self.production_explored > agreeing {
            return Err(BadSummary::Inconsistent(format!(
                "variants.{name}: production_explored ({}) must be at most the agreeing turns ({agreeing})",
                self.production_explored
            )));
        }
        for r in self.ratios() {
            if let (Some(g), Some(w)) = (r.value, r.of_counts()) {
                if (g - w).abs() > 1e-9 {
                    return Err(BadSummary::Inconsistent(format!(
                        "variants.{name}.{} is {g}, but {} / {} is {w}",
                        r.ratio.name, r.ratio.numerator, r.ratio.denominator
                    )));
                }
            }
        }
        let checks = self.rates_and_their_counts(agreeing);
        for (rate, got, want, what) in checks {
            if let (Some(g), Some(w)) = (got, want) {
                if (g - w).abs() > 1e-9 {
                    return Err(BadSummary::Inconsistent(format!(
                        "variants.{name}.{rate} is {g}, but {what} is {w}"
                    )));
                }
            }
        }
        self.per_1k_are_their_counts()?;
        self.bounds_are_their_counts()
    }

    /// Each `X_per_1k_turns` whose `X` is a count is `X` per 1,000 turns:
    /// every such figure of the declaration, checked alike (dollars are
    /// rounded on their own, so `net_usd_per_1k_turns` is left out).
    fn per_1k_are_their_counts(&self) -> Result<(), BadSummary> {
        let name = &self.variant;
        let m = self.to_map();
        if self.turns == 0 {
            return Ok(());
        }
        for (figure, base) in per_1k_of_counts() {
            let (Some(g), Some(n)) = (m[figure].as_f64(), m.get(base).and_then(Value::as_f64))
            else {
                continue;
            };
            let w = n * 1000.0 / self.turns as f64;
            // Both are written to 9 significant digits.
            if (g - w).abs() > 1e-8 * w.abs().max(1.0) {
                return Err(BadSummary::Inconsistent(format!(
                    "variants.{name}.{figure} is {g}, but {base} per 1,000 turns is {w}"
                )));
            }
        }
        Ok(())
    }

    /// Each bound, the bound its counts give, and those counts.
    #[allow(clippy::type_complexity)]
    fn bounds(&self) -> [(&'static str, Option<f64>, Option<f64>, (u64, u64)); 4] {
        let cp = |k: u64, n: u64| sig_up(clopper_pearson_upper(k, n, 0.05));
        let unlabelled = self.new_skips - self.new_labelled_skips;
        let labels = RunLabels {
            runs: self.labelled_runs,
            labels: self.new_labelled_skips,
            regressions: self.safety_regressions,
            design_effect: self.design_effect,
            effective_runs: self.effective_runs.unwrap_or(0.0),
        };
        let worst = RunLabels {
            runs: self.new_skip_runs,
            labels: self.new_skips,
            regressions: self.safety_regressions + unlabelled,
            design_effect: self.worst_case_design_effect,
            effective_runs: self.worst_case_effective_runs.unwrap_or(0.0),
        };
        [
            (
                "safety_regression_rate_upper95",
                self.safety_regression_rate_upper95,
                sig_up(run_level_upper(&labels, 0.05)),
                (self.safety_regressions, self.new_labelled_skips),
            ),
            (
                "safety_regression_rate_certificate_upper95",
                self.safety_regression_rate_certificate_upper95,
                sig_up(certificate_upper(&labels, 0.05)),
                (self.safety_regressions, self.new_labelled_skips),
            ),
            (
                "safety_regression_rate_worst_case_upper95",
                self.safety_regression_rate_worst_case_upper95,
                sig_up(certificate_upper(&worst, 0.05)),
                (worst.regressions, self.new_skips),
            ),
            (
                "all_skips_regression_rate_upper95",
                self.all_skips_regression_rate_upper95,
                cp(self.all_skips_safety_regressions, self.all_skips_labelled),
                (self.all_skips_safety_regressions, self.all_skips_labelled),
            ),
        ]
    }

    /// Each upper bound is what its counts give: the run-level bounds from
    /// the runs, labels, regressions and design effect the summary
    /// publishes, the per-turn ones Clopper-Pearson's.
    fn bounds_are_their_counts(&self) -> Result<(), BadSummary> {
        let name = &self.variant;
        let cp = |k: u64, n: u64| sig_up(clopper_pearson_upper(k, n, 0.05));
        // The risky bound is run-level on runs the summary does not
        // publish: never below the exact bound of its counts, never above 1.
        let (rk, rn) = (
            self.risky_safety_regressions.unwrap_or(0),
            self.risky_labelled_skips.unwrap_or(0),
        );
        if let (Some(g), Some(w)) = (self.risky_regression_rate_upper95, cp(rk, rn)) {
            if g < w - 1e-9 || g > 1.0 {
                return Err(BadSummary::Inconsistent(format!(
                    "variants.{name}.risky_regression_rate_upper95 is {g}, but a run-level bound from {rk} of {rn} is at least {w} and at most 1"
                )));
            }
        }
        for (key, got, want, (k, n)) in self.bounds() {
            if let (Some(g), Some(w)) = (got, want) {
                if (g - w).abs() > 1e-9 {
                    return Err(BadSummary::Inconsistent(format!(
                        "variants.{name}.{key} is {g}, but its bound from {k} of {n} is {w}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// The fields as one JSON object keyed by column name (the writer of
    /// `summary.csv` takes its columns from it in the schema's order).
    pub fn to_map(&self) -> Map<String, Value> {
        let Ok(Value::Object(mut m)) = serde_json::to_value(self) else {
            unreachable!("a VariantSummary serializes to an object")
        };
        m.insert("variant".into(), Value::String(self.variant.clone()));
        m
    }
}

/// One kind of warning: how often, and where first.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WarningSummary {
    pub count: u64,
    /// `source:line` of the first occurrences.
    pub first: Vec<String>,
}

/// What a replay read of one source; the counts are null when the source
/// was not read to its end.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceSummary {
    pub name: String,
    pub lines: Option<u64>,
    pub bytes: Option<u64>,
    /// The content hash, 16 hex digits.
    pub xxh3: Option<String>,
}

/// `summary.json`: the run's facts and every variant's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSummary {
    pub schema_version: u64,
    /// `--label`.
    pub run: String,
    pub turns: u64,
    pub rejected: u64,
    pub lines: u64,
    pub unknown_fields: u64,
    pub warnings: BTreeMap<String, WarningSummary>,
    /// The baseline variant's name.
    pub baseline: String,
    /// The name of the variant whose gate produced the traffic (the
    /// config's `production`, by default the baseline).
    pub production: String,
    /// The other variants whose decisions fit the recorded critic events
    /// exactly as well as production's does (as many agreeing of as many
    /// known turns): the traffic cannot tell their gates from
    /// production's. Empty when nothing is known.
    pub production_fits_equally: Vec<String>,
    pub sources: Vec<String>,
    pub source_facts: Vec<SourceSummary>,
    /// `--decisions`: which rows decisions.csv holds.
    pub decisions: String,
    /// The scope keys made columns of decisions.csv and regressions.csv
    /// (`scope_KEY`).
    pub scope_columns: Vec<String>,
    pub variant_order: Vec<String>,
    pub variants: BTreeMap<String, VariantSummary>,
    pub fabrication_kinds: BTreeMap<String, u64>,
    pub segments_truncated: BTreeMap<String, u64>,
    pub production_known: u64,
    pub production_agreement: Option<f64>,
    pub production_fired_baseline_skips: u64,
    pub production_skipped_baseline_fires: u64,
    /// Per signal (draft, tool_calls, intent, findings, confidence,
    /// sensitive, critic), how many turns had it recorded, derived or
    /// unknown.
    pub provenance: BTreeMap<String, BTreeMap<String, u64>>,
    /// What converting the input counted (`--from otlp`: runs, stream runs,
    /// spans of other instrumentation left out); empty for traffic.
    pub input_counts: BTreeMap<String, u64>,
    pub notes: Vec<String>,
}

/// A summary.json this version cannot judge, by kind; each says the key,
/// what it must be and what it is (the reader adds the file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BadSummary {
    /// A variant's figure of another type than summary.csv's schema
    /// declares, or missing.
    Schema(String),
    /// JSON that is not a summary's shape (an unknown key, a wrong type
    /// outside the figures), at its path.
    Shape(String),
    /// Figures that do not hold together: a hand-edited or damaged
    /// summary (a rate that is not its counts, parts above their whole).
    Inconsistent(String),
}

impl BadSummary {
    /// What it says.
    pub fn message(&self) -> &str {
        match self {
            BadSummary::Schema(m) | BadSummary::Shape(m) | BadSummary::Inconsistent(m) => m,
        }
    }
}

impl std::fmt::Display for BadSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for BadSummary {}

impl RunSummary {
    /// When the figures of a legacy gate (flag off) rest on the cold
    /// start that the replay assumes where no record gives the confidence:
    /// the turns without one, and those variants' names.
    pub fn assumed_confidence(&self) -> Option<(u64, Vec<&str>)> {
        let unknown = self
            .provenance
            .get("confidence")
            .and_then(|o| o.get("unknown"))
            .copied()
            .filter(|n| *n > 0)?;
        let legacy: Vec<&str> = self
            .ordered()
            .filter(|v| !v.selective_gate)
            .map(|v| v.variant.as_str())
            .collect();
        (!legacy.is_empty()).then_some((unknown, legacy))
    }

    /// The sentence that says so, for the bottom line (`name` writes a
    /// variant's name for the medium).
    pub fn assumed_confidence_sentence(&self, name: &dyn Fn(&str) -> String) -> Option<String> {
        let (n, legacy) = self.assumed_confidence()?;
        let names: Vec<String> = legacy.iter().map(|v| name(v)).collect();
        Some(format!(
            "These figures rest on an assumed confidence: {n} of {} turns record none, so the replay takes symfonic's cold start, 0.5, and the legacy gate (flag off) of {} fires on each of them. A deployment with memory runs at a higher confidence, where the legacy gate skips: there, what switching saves and the new skips it risks are smaller than shown. Recording the confidence (or the activation log) removes the assumption.",
            self.turns,
            names.join(", ")
        ))
    }

    /// The variants in config order.
    pub fn ordered(&self) -> impl Iterator<Item = &VariantSummary> {
        self.variant_order
            .iter()
            .filter_map(|v| self.variants.get(v))
    }

    /// summary.json's value (object keys sorted, as every report writes
    /// them).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("a RunSummary serializes")
    }

    /// Read summary.json's value: each variant's figures are first held
    /// to the schema of `summary.csv` (a message names the key, what it
    /// must be and what it is), then the whole is read with serde.
    pub fn from_json(v: Value) -> Result<RunSummary, BadSummary> {
        Self::read_json(v)
    }

    fn read_json(v: Value) -> Result<RunSummary, BadSummary> {
        if let Some(vars) = v.get("variants").and_then(Value::as_object) {
            for (name, fields) in vars {
                fits_schema(name, fields)?;
            }
        }
        let mut s: RunSummary = serde_path_to_error::deserialize(v).map_err(|e| {
            let path = e.path().to_string();
            BadSummary::Shape(format!("{path}: {}", e.into_inner()))
        })?;
        for (name, v) in s.variants.iter_mut() {
            v.variant = name.clone();
            v.consistent()?;
        }
        s.consistent()?;
        Ok(s)
    }

    /// Exactly the baseline says it is one, and has no count against
    /// itself.
    fn one_baseline(&self) -> Result<(), BadSummary> {
        if let Some((name, v)) = self
            .variants
            .iter()
            .find(|(name, v)| v.baseline != (**name == self.baseline))
        {
            return Err(BadSummary::Inconsistent(format!(
                "variants.{name}.baseline is {}, but the baseline is {:?}",
                v.baseline, self.baseline
            )));
        }
        match self
            .variants
            .iter()
            .find(|(_, v)| v.baseline && v.new_skips > 0)
        {
            Some((name, _)) => Err(BadSummary::Inconsistent(format!(
                "variants.{name}: the baseline has no new skips (new_skips is 0): it skips nothing it fires on"
            ))),
            None => Ok(()),
        }
    }

    /// Exactly the production variant says it is one, and it alone has
    /// the production counts; the run's agreement figures are its own.
    fn one_production(&self) -> Result<(), BadSummary> {
        if let Some((name, v)) = self
            .variants
            .iter()
            .find(|(name, v)| v.production != (**name == self.production))
        {
            return Err(BadSummary::Inconsistent(format!(
                "variants.{name}.production is {}, but the production variant is {:?}",
                v.production, self.production
            )));
        }
        if let Some(v) = self
            .production_fits_equally
            .iter()
            .find(|v| !self.variants.contains_key(*v) || **v == self.production)
        {
            return Err(BadSummary::Inconsistent(format!(
                "production_fits_equally must name other variants than production; got {v:?}"
            )));
        }
        let p = &self.variants[&self.production];
        for (field, run, own) in [
            (
                "production_known",
                self.production_known,
                p.production_known,
            ),
            (
                "production_fired_baseline_skips",
                self.production_fired_baseline_skips,
                p.production_fired_variant_skips,
            ),
            (
                "production_skipped_baseline_fires",
                self.production_skipped_baseline_fires,
                p.production_skipped_variant_fires,
            ),
        ] {
            if run != own {
                return Err(BadSummary::Inconsistent(format!(
                    "{field} is {run}, but the production variant's figure is {own}"
                )));
            }
        }
        if self.production_agreement != p.production_agreement {
            return Err(BadSummary::Inconsistent(format!(
                "production_agreement is {:?}, but the production variant's is {:?}",
                self.production_agreement, p.production_agreement
            )));
        }
        Ok(())
    }

    /// The variant order names exactly the variants, the baseline among
    /// them.
    fn consistent(&self) -> Result<(), BadSummary> {
        let mut order = self.variant_order.clone();
        order.sort();
        let keys: Vec<String> = self.variants.keys().cloned().collect();
        if self.variants.is_empty() || order != keys {
            return Err(BadSummary::Inconsistent(format!(
                "variants must be an object with at least one variant, named by variant_order; got variants {keys:?} and variant_order {:?}",
                self.variant_order
            )));
        }
        if !self.variants.contains_key(&self.baseline) {
            return Err(BadSummary::Inconsistent(format!(
                "baseline must name a variant; got {:?}",
                self.baseline
            )));
        }
        if self.turns.checked_add(self.rejected) != Some(self.lines) {
            return Err(BadSummary::Inconsistent(format!(
                "turns ({}) + rejected ({}) must be lines ({})",
                self.turns, self.rejected, self.lines
            )));
        }
        // Every variant replays the same turns, and the baseline's
        // agreement with production is the run's.
        for (name, v) in &self.variants {
            for (field, run, own) in [
                ("turns", self.turns, v.turns),
                ("rejected", self.rejected, v.rejected),
                ("lines", self.lines, v.lines),
            ] {
                if run != own {
                    return Err(BadSummary::Inconsistent(format!(
                        "variants.{name}.{field} is {own}, but the run's {field} is {run}"
                    )));
                }
            }
        }
        if !self.variants.contains_key(&self.production) {
            return Err(BadSummary::Inconsistent(format!(
                "production must name a variant; got {:?}",
                self.production
            )));
        }
        self.one_baseline()?;
        self.one_production()
    }
}

/// One variant's object against the declared columns of `summary.csv`.
fn fits_schema(name: &str, fields: &Value) -> Result<(), BadSummary> {
    let Some(obj) = fields.as_object() else {
        return Err(BadSummary::Schema(format!(
            "variants.{name} must be an object, got {}",
            crate::read::json::describe(fields)
        )));
    };
    for c in VARIANT_COLUMNS {
        let got = obj.get(c.name);
        if !got.is_some_and(|v| fits(c, v)) {
            let got = got.map_or("it is missing".to_string(), |v| {
                format!("got {}", crate::read::json::describe(v))
            });
            return Err(BadSummary::Schema(format!(
                "variants.{name}.{} must be {}, {got}",
                c.name,
                want(c)
            )));
        }
    }
    Ok(())
}

/// Whether a JSON value is one the column may hold.
fn fits(c: &Column, v: &Value) -> bool {
    use super::metrics::Type::*;
    match (c.ty, v) {
        (_, Value::Null) => c.nullable,
        (U64, v) => v.as_u64().is_some(),
        (I64, v) => v.as_i64().is_some(),
        (F64, Value::Number(n)) if c.unit == "share" => {
            n.as_f64().is_some_and(|x| (0.0..=1.0).contains(&x))
        }
        (F64, v) => v.as_f64().is_some(),
        (Str, v) => v.is_string(),
        (Bool, v) => v.is_boolean(),
    }
}

/// What a column's values must be, in words.
fn want(c: &Column) -> String {
    use super::metrics::Type::*;
    let kind = match c.ty {
        U64 => "a whole number >= 0",
        I64 => "a whole number",
        F64 if c.unit == "share" => "a rate in [0, 1]",
        F64 => "a number",
        Str => "a string",
        Bool => "true or false",
    };
    if c.nullable {
        format!("{kind} or null")
    } else {
        kind.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::metrics::ratios_declared;

    /// Every figure that may be null has a tamper rule (null exactly
    /// where undefined, or recomputed from its counts) or says in
    /// NOT_RECOMPUTED why it has none; every share has a value rule. A
    /// rate added without one would pass a hand-edited summary.json.
    #[test]
    fn every_nullable_figure_has_a_tamper_rule() {
        let v = VariantSummary::default();
        let mut ruled: BTreeMap<&str, &str> = BTreeMap::new();
        for (name, ..) in v.rates_and_denominators() {
            ruled.insert(name, "null where undefined");
        }
        for r in ratios_declared() {
            ruled.insert(r.name, "null where undefined");
        }
        for (name, _) in v.risky_counts() {
            ruled.insert(name, "null without the smart gate");
        }
        for (name, ..) in v.production_counts() {
            ruled.insert(name, "null except on the production variant");
        }
        for (name, _) in v.sample_counts() {
            ruled.insert(name, "null except on the production variant with a plan");
        }
        let valued: Vec<&str> = v
            .rates_and_their_counts(0)
            .iter()
            .map(|r| r.0)
            .chain(v.bounds().iter().map(|b| b.0))
            .chain(["risky_regression_rate_upper95"])
            .chain(per_1k_of_counts().map(|(figure, _)| figure))
            .chain(ratios_declared().map(|r| r.name))
            .collect();
        for name in &valued {
            ruled.insert(name, "recomputed");
        }
        let exempt: BTreeMap<&str, &str> = NOT_RECOMPUTED.iter().copied().collect();
        let mut missing = Vec::new();
        for c in VARIANT_COLUMNS {
            let share = c.unit == "share";
            let needs = c.nullable || share;
            let has = match share {
                true => valued.contains(&c.name),
                false => ruled.contains_key(c.name),
            };
            if needs && !has && !exempt.contains_key(c.name) {
                missing.push(c.name);
            }
            if exempt.contains_key(c.name) && has {
                missing.push(c.name); // exempt and ruled: the line is stale
            }
        }
        let figures: Vec<&str> = VARIANT_COLUMNS.iter().map(|c| c.name).collect();
        let unknown: Vec<&&str> = exempt.keys().filter(|k| !figures.contains(k)).collect();
        assert!(
            missing.is_empty() && unknown.is_empty(),
            "figures without a tamper rule (or exempt and ruled): {missing:?}; NOT_RECOMPUTED names no figure: {unknown:?}"
        );
    }

    /// The struct's fields are the schema's columns of summary.csv (after
    /// `run`; the writer takes them in the schema's order): a field added
    /// to one and not the other fails.
    #[test]
    fn fields_are_the_summary_columns() {
        let v = VariantSummary::default();
        let mut fields: Vec<String> = v.to_map().keys().cloned().collect();
        let mut cols: Vec<String> = crate::summary::schema::table("summary.csv")
            .columns
            .iter()
            .skip(1)
            .map(|c| c.name.to_string())
            .collect();
        fields.sort();
        cols.sort();
        assert_eq!(fields, cols);
    }

    /// A summary this version cannot judge says which kind of fault it
    /// has: a figure against its schema, JSON of another shape, or figures
    /// that do not hold together.
    #[test]
    fn a_bad_summary_says_its_kind() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/seed/summary.json");
        let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let mut schema = v.clone();
        schema["variants"]["smart"]["turns"] = serde_json::json!("many");
        let mut shape = v.clone();
        shape["surprise"] = serde_json::json!(1);
        let mut edited = v.clone();
        edited["variants"]["smart"]["fires"] = serde_json::json!(0);
        match RunSummary::from_json(schema) {
            Err(BadSummary::Schema(m)) => {
                assert!(m.contains("variants.smart.turns must be"), "{m}")
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(RunSummary::from_json(shape), Err(BadSummary::Shape(m)) if m.contains("surprise"))
        );
        match RunSummary::from_json(edited) {
            Err(BadSummary::Inconsistent(m)) => assert!(m.contains("fires (0) + skips"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    /// A hand-edited sample figure is a damaged summary: a bound above its
    /// worst case, a bound without its method, counts that do not add up,
    /// sample counts off production's variant or bounds without counts.
    #[test]
    fn the_samples_figures_hold_together() {
        let good = VariantSummary {
            variant: "smart".into(),
            production: true,
            production_skips: Some(100),
            sampled_skips: Some(10),
            sampled_labelled: Some(8),
            sampled_labelled_shadow: Some(6),
            sampled_labelled_production: Some(2),
            sampled_failed: Some(1),
            sampled_unreviewed: Some(1),
            production_fires_without_turn_id: Some(0),
            skip_regression_rate_estimate: Some(0.01),
            skip_regression_rate_upper95: Some(0.05),
            skip_regression_rate_worst_case_upper95: Some(0.2),
            harmful_skips_per_1k_turns_upper95: Some(1.0),
            skip_bound_method: Some("hypergeometric".into()),
            ..Default::default()
        };
        assert!(good.sample_holds_together().is_ok());
        let edits: [fn(&mut VariantSummary); 7] = [
            |v| v.skip_regression_rate_upper95 = Some(0.3),
            |v| v.production_fires_without_turn_id = Some(101),
            |v| v.skip_bound_method = None,
            |v| v.sampled_labelled = Some(9),
            |v| v.production = false,
            |v| v.harmful_skips_per_1k_turns_upper95 = None,
            |v| {
                v.sampled_skips = None;
                v.sampled_labelled = None;
                v.sampled_labelled_shadow = None;
                v.sampled_labelled_production = None;
                v.sampled_failed = None;
                v.sampled_unreviewed = None;
                v.production_fires_without_turn_id = None;
            },
        ];
        for (i, edit) in edits.iter().enumerate() {
            let mut v = good.clone();
            edit(&mut v);
            assert!(
                matches!(v.sample_holds_together(), Err(BadSummary::Inconsistent(_))),
                "edit {i} passed"
            );
        }
    }

    /// A per-1k figure that is not its count per 1,000 turns is a damaged
    /// summary, for every such figure declared.
    #[test]
    fn per_1k_figures_are_held_to_their_counts() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/seed/summary.json");
        let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert!(RunSummary::from_json(v.clone()).is_ok());
        let per_1k: Vec<&str> = VARIANT_COLUMNS
            .iter()
            .map(|c| c.name)
            .filter(|n| n.ends_with("_calls_per_1k_turns"))
            .collect();
        assert!(per_1k.len() >= 2, "{per_1k:?}");
        for key in per_1k {
            let mut bad = v.clone();
            let x = bad["variants"]["smart"][key].as_f64().unwrap();
            bad["variants"]["smart"][key] = serde_json::json!(x + 1.0);
            let Err(BadSummary::Inconsistent(e)) = RunSummary::from_json(bad) else {
                panic!("{key} edited by hand is not refused as inconsistent")
            };
            assert!(
                e.contains(&format!("variants.smart.{key} is")) && e.contains("per 1,000 turns is"),
                "{e}"
            );
        }
    }
}
