//! The summary's figures, declared once: every field of [`VariantSummary`]
//! (a row of summary.csv, an object of summary.json's `variants`) with
//! its type, unit and meaning, in one list. The `figures!` macro makes
//! both the struct and its columns ([`VARIANT_COLUMNS`]) from it, so
//! summary.csv, summary.json, schema.json, docs/reports.md and `diff`'s
//! metrics all follow the list: a new figure is its line here and its
//! computation in `build.rs` (then raise [`SCHEMA_VERSION`] below).

/// The version of the report folders this build writes and reads (in
/// `schema.json` and `summary.json`): `check` and `diff` refuse folders of
/// another version. A figure added or changed here raises it.
pub const SCHEMA_VERSION: u64 = 18;

/// What each schema version changed in meaning (docs/reports.md prints
/// it), newest first: a reader of an older folder learns what differs.
pub(crate) const SCHEMA_CHANGES: &[(u64, &str)] = &[
    (
        17,
        "with a plan, a fire of production's that the plan's coin explains (a drawn skip of its gate, matched by turn_id: the exploration gate) agrees with production's variant: new `production_explored` (in production_known, never in production_fired_variant_skips), and `production_agreement` counts them as agreeing; new `production_fires_without_turn_id` (production's fires on its gate's skips without turn_id, which no coin here can match); where production also fired on most of the skips the coin did not draw, `production_agreement` is empty with a note",
    ),
    (
        16,
        "`monitor`'s status and exit code read the worst-case anytime bounds (every drawn skip whose shadow call failed or has not come back a regression for the upper bound, an approval for the lower) unless failed calls are assumed missing at random (`--assume-missing-at-random`, `[monitor] assume_missing_at_random`); monitor.csv gains `cumulative_failed`, `anytime_worst_case_lower95` and `decided_by` (which bounds the status read)",
    ),
    (
        15,
        "a variant may run with a deployment of its own (`[variants.NAME.deployment]`, or a `[sweep.deployment]` axis): imported traffic is derived once per distinct deployment, and each variant's figures are those of a replay under its deployment; `summary.json`'s `input_counts` gains `derivations` (turns derived, once per deployment each); `frontier.csv` gains `deployment` (the keys a variant's deployment changes, as a JSON object; empty for `[deployment]`'s)",
    ),
    (
        14,
        "`monitor`'s change alarm takes one label per conversation a day (of a conversation's verdicts that day, the one of the lowest coin key), so that a conversation derailing within a day is one observation: the chart holds its design whatever the clustering within a conversation-day, where a turn's chance to regress does not depend on its conversation's size (docs/watching.md says where it does not hold); plan.csv gains `chart_labels_per_day` (plan.toml: `expected_chart_labels_per_day`), learnt from how the traffic's skips gather in conversations, and `days_to_detect_2r`/`days_to_detect_3r` are predicted on those labels; a monitor state of format 1 is refused (its verdicts do not name their conversation): start a new one",
    ),
    (
        13,
        "an audit plan's two-phase figures (`new_skip_regression_rate_two_phase_upper95` and its worst case, with the `sampled_*` counts and the bounds on the covered skips) are on every variant whose unlabelled new skips the audit covers in part, not only the audited one: those it does not cover count a regression each; `check` holds the two-phase worst case (each failed shadow call a regression) in place of the worst case a rate budget implies, where it held the two-phase bound; `calibrate --plan` reads an audit the same way; `skip_regression_rate_estimate` is held to at most 1 (in a small window one drawn regression's weight can pass the skips)",
    ),
    (
        12,
        "a replay with a plan measures production's skips from the plan's critic sample: new `sampled_skips`, `sampled_labelled` (by source: `sampled_labelled_shadow`, `sampled_labelled_production`), `sampled_failed`, `sampled_unreviewed`, `skip_regression_rate_estimate` (Horvitz-Thompson), `skip_regression_rate_upper95` (valid for the design, `skip_bound_method`), `skip_regression_rate_worst_case_upper95` and `harmful_skips_per_1k_turns_upper95`, on the production variant; `check` gains max_skip_regression_rate; the traffic format gains `sampled_label` (a shadow verdict with its inclusion probability and plan); plan.csv gains `days_to_detect_2r` and `days_to_detect_3r` (plan.toml: `false_alarm_every_days`, `alarm_rise`); an audit plan (`plan --audit`) samples a candidate's unlabelled new skips, and its verdicts give `new_skip_regression_rate_two_phase_upper95` (and its worst case), which `check` holds in place of the worst case max_safety_regression_rate implies",
    ),
    (
        11,
        "the gate that produced the traffic is named apart from the baseline (the config's `production`, by default the baseline): new `production` (true on its variant), `production_skips` and `production_skips_unlabelled` (its skips, and those no critic that ran reviewed: unknown risk, never 0), and summary.json's `production` and `production_fits_equally`; production agreement is the production variant's (`production_fired_baseline_skips` and `production_skipped_baseline_fires` are its disagreements); `check` judges a smart-gate production by default and fails each risk budget on it while any of its skips is unreviewed, with the value empty",
    ),
    (
        10,
        "new `safety_regression_rate_certificate_upper95`: the bound with each run worth at most one trial, which `check`'s max_safety_regression_rate now reads (calibrate and mine test on it too); `safety_regression_rate_upper95` stays Korn and Graubard's, the descriptive figure; `safety_regression_rate_worst_case_upper95` counts each run at most one trial as well; `check` holds a rate budget's worst case too unless missing at random is assumed; the frontier gains worst-case columns; a language past 64 bytes or with a control character is left out and counted in the new `label_unreadable` warning, `fabrication_kinds` tallies a kind symfonic's check does not make as `(other)`, and the unpriced-model note names at most the first ten models by name, each cut at 64 characters",
    ),
    (
        9,
        "decisions.csv and mismatches.csv say where each turn is in its source: `trace_id` and `span_id` (a traced turn's), `message_index` (a transcript's), after `turn`; the traffic format gains the three keys, which `import` writes, and `turn_id` (a value these keys cannot hold is left out and counted in the new `source_id_unreadable` warning, never a refusal); a trace's turns are counted by conversation: `run_id` is the run's session (`TENANT/SESSION`), symfonic's run id is `turn_id`, so `labelled_runs`, `design_effect` and the bounds on traces count conversations where they counted turns; a draft's acks count as one, the longest, in `risky_skips` and `ack_share` (stacked different acks lifted news past --max-ack-share)",
    ),
    (
        8,
        "regressions.csv says what each row is to the budgets (`kind`: `new_skip`, which the regression budgets count; `shared_skip` and `production_disagreement`, which they do not); new `critic_calls_unrecorded` and `critic_calls_without_verdict`, the critic calls without a label by cause (on the baseline, probable critic failures)",
    ),
    (
        7,
        "every risk figure is on the variant's new skips (turns it skips that the baseline fires on), not on all its skips: `safety_regressions`, `label_coverage`, `safety_regression_rate` and its bound, and so `check`'s budgets, the frontier's risk axis and calibrate's family; the bound takes runs as the sampling unit (`safety_regression_rate_upper95` is run-level, with `design_effect`, `effective_labels` and `labelled_runs`); new `new_skips`, the unlabelled new skips by cause and `safety_regression_rate_worst_case_upper95`; the all-skip figures are renamed `all_skips_*` (`labelled_skips` is `all_skips_labelled`, `unverified_skips` `all_skips_unlabelled`), and `safety_regressions_vs_baseline` is gone (it is `safety_regressions` now)",
    ),
    (
    6,
    "`saved_calls` and `added_calls` count only turns a critic can run on (symfonic reviews no empty reply: a fire on an empty draft is no critic call); new `fires_without_critic`, `critic_calls` and `saved_call_share` (the share of the baseline's critic calls saved, beside `skip_rate`, a share of turns)",
    ),
];

/// A column's type, as analysts' tools read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Type {
    /// A whole number >= 0.
    U64,
    /// A whole number that may be negative.
    I64,
    /// A real number.
    F64,
    Str,
    /// `true` / `false`.
    Bool,
}

impl Type {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Type::U64 => "u64",
            Type::I64 => "i64",
            Type::F64 => "f64",
            Type::Str => "string",
            Type::Bool => "bool",
        }
    }
}

/// One column of a report table.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Column {
    pub name: &'static str,
    pub ty: Type,
    /// What one unit is (`turns`, `USD`, `ms`, `share` for a ratio in
    /// [0, 1]); empty for names and labels.
    pub unit: &'static str,
    /// May be empty (null): only where the value is undefined.
    pub nullable: bool,
    pub meaning: &'static str,
}

/// The schema type of a field's Rust type, and whether it may be null.
pub(crate) trait Columnar {
    const TYPE: Type;
    const NULLABLE: bool = false;
}

impl Columnar for u64 {
    const TYPE: Type = Type::U64;
}

impl Columnar for i64 {
    const TYPE: Type = Type::I64;
}

impl Columnar for f64 {
    const TYPE: Type = Type::F64;
}

impl Columnar for bool {
    const TYPE: Type = Type::Bool;
}

impl Columnar for String {
    const TYPE: Type = Type::Str;
}

impl<T: Columnar> Columnar for Option<T> {
    const TYPE: Type = T::TYPE;
    const NULLABLE: bool = true;
}

pub(crate) const fn col(
    name: &'static str,
    ty: Type,
    unit: &'static str,
    meaning: &'static str,
) -> Column {
    Column {
        name,
        ty,
        unit,
        nullable: false,
        meaning,
    }
}

/// A column that is empty where its value is undefined.
pub(crate) const fn opt(
    name: &'static str,
    ty: Type,
    unit: &'static str,
    meaning: &'static str,
) -> Column {
    Column {
        name,
        ty,
        unit,
        nullable: true,
        meaning,
    }
}

use Type::*;

/// Columns summary.csv and segments.csv share (the figures of a set of
/// turns under one variant).
pub(crate) const DECISION: [Column; 7] = [
    col("turns", U64, "turns", "turns replayed"),
    col(
        "fires",
        U64,
        "turns",
        "turns where the variant's gate fires",
    ),
    col("skips", U64, "turns", "turns where it skips"),
    opt(
        "fire_rate",
        F64,
        "share",
        "fires / turns; empty without turns",
    ),
    opt(
        "skip_rate",
        F64,
        "share",
        "skips / turns; empty without turns",
    ),
    col(
        "saved_calls",
        U64,
        "calls",
        "turns where the baseline fires and the variant skips, of those a critic can run on (a non-empty draft): critic calls the switch saves",
    ),
    col(
        "added_calls",
        U64,
        "calls",
        "turns where the baseline skips and the variant fires, of those a critic can run on (a non-empty draft): critic calls the switch adds",
    ),
];

/// A rate declared as one count over another (`fire_rate: Option<f64> =
/// fires / turns`): the replay sets it from its counts
/// ([`VariantSummary::set_ratios`]) and `check` holds it to them, and to
/// null exactly where it is undefined, with no other edit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ratio {
    pub name: &'static str,
    pub numerator: &'static str,
    pub denominator: &'static str,
}

/// One declared ratio of a variant: its value and its counts (the
/// numerator None where that count is null, as the risky counts of a
/// legacy gate are).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RatioValue {
    pub ratio: Ratio,
    pub value: Option<f64>,
    pub numerator: Option<u64>,
    pub denominator: u64,
}

/// A declared ratio's value: the numerator over the denominator to 9
/// significant digits, null where the denominator is 0 or the numerator
/// null.
pub(crate) fn ratio_of(numerator: Option<u64>, denominator: u64) -> Option<f64> {
    super::numbers::sig(
        numerator
            .filter(|_| denominator > 0)
            .map(|n| n as f64 / denominator as f64),
    )
}

impl RatioValue {
    /// What its counts give.
    pub fn of_counts(&self) -> Option<f64> {
        ratio_of(self.numerator, self.denominator)
    }
}

/// A count a ratio is made of: a whole number, or one that may be null.
pub(crate) trait Counted {
    fn counted(&self) -> Option<u64>;
}

impl Counted for u64 {
    fn counted(&self) -> Option<u64> {
        Some(*self)
    }
}

impl Counted for Option<u64> {
    fn counted(&self) -> Option<u64> {
        *self
    }
}

/// A figure as a budget reads it: a count, or a rate (None where it is
/// undefined).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Reading {
    Count(u64),
    Rate(Option<f64>),
}

/// The figures a budget can read: the whole-number counts and the rates
/// (a test refuses a budget on any other figure).
pub(crate) trait Readable {
    fn reading(&self) -> Option<Reading> {
        None
    }
}

impl Readable for u64 {
    fn reading(&self) -> Option<Reading> {
        Some(Reading::Count(*self))
    }
}

impl Readable for Option<f64> {
    fn reading(&self) -> Option<Reading> {
        Some(Reading::Rate(*self))
    }
}

impl Readable for bool {}
impl Readable for i64 {}
impl Readable for Option<u64> {}
impl Readable for Option<i64> {}
impl Readable for Option<String> {}

/// One declaration's derivation, by its form (a helper of `figures!`):
/// `= counts.FIELD` is a count of the tally, `= NUM / DEN` a ratio.
macro_rules! derived {
    (count $s:ident $c:ident $name:ident; counts . $f:ident) => {
        $s.$name = $c.$f;
    };
    (count $s:ident $c:ident $name:ident; $num:ident / $den:ident) => {};
    (ratio $s:ident $name:ident; counts . $f:ident) => {};
    (ratio $s:ident $name:ident; $num:ident / $den:ident) => {
        $s.$name = ratio_of(Counted::counted(&$s.$num), $s.$den);
    };
    (declared $name:ident; counts . $f:ident) => {
        None
    };
    (declared $name:ident; $num:ident / $den:ident) => {
        Some(Ratio {
            name: stringify!($name),
            numerator: stringify!($num),
            denominator: stringify!($den),
        })
    };
    (value $s:ident $name:ident; counts . $f:ident) => {
        None
    };
    (value $s:ident $name:ident; $num:ident / $den:ident) => {
        Some(($s.$name, Counted::counted(&$s.$num), $s.$den))
    };
}

/// The struct of the figures and their columns, from one list of
/// `name: RustType, unit, meaning;` (an `Option` is a nullable column). A
/// figure that is a count of the tally says which after its type (`=
/// counts.FIELD`), a rate of two counts which (`= NUMERATOR /
/// DENOMINATOR`): that is all it takes for the replay to compute either
/// and for `check` to hold the rate to its counts.
macro_rules! figures {
    ($( $(#[$doc:meta])* $name:ident : $t:ty $(= $a:ident $op:tt $b:ident)?, $unit:expr, $meaning:expr; )*) => {
        /// One variant's figures against the baseline (the unit and
        /// meaning of each are in [`VARIANT_COLUMNS`]). Options are null
        /// where the figure is undefined.
        #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct VariantSummary {
            /// The key of `variants` in summary.json, not repeated inside it.
            #[serde(skip)]
            pub variant: String,
            $( $(#[$doc])* pub $name: $t, )*
        }

        /// summary.csv's columns after `run` and `variant`, in order.
        pub(crate) const VARIANT_COLUMNS: &[Column] = &[$(
            Column {
                name: stringify!($name),
                ty: <$t as Columnar>::TYPE,
                unit: $unit,
                nullable: <$t as Columnar>::NULLABLE,
                meaning: $meaning,
            },
        )*];

        /// The rates declared as a count over a count, in column order.
        pub(crate) fn ratios_declared() -> impl Iterator<Item = Ratio> {
            let declared = [$($(derived!(declared $name; $a $op $b),)?)*];
            declared.into_iter().flatten()
        }

        impl VariantSummary {
            /// Every declared ratio with its value and counts, in
            /// [`ratios_declared`]' order.
            pub fn ratios(&self) -> Vec<RatioValue> {
                let values = [$($(derived!(value self $name; $a $op $b),)?)*];
                ratios_declared()
                    .zip(values.into_iter().flatten())
                    .map(|(ratio, (value, numerator, denominator))| RatioValue {
                        ratio,
                        value,
                        numerator,
                        denominator,
                    })
                    .collect()
            }

            /// Set every figure declared a count of the tally from it.
            pub fn set_counts(&mut self, c: &crate::replay::tally::Counts) {
                $($(derived!(count self c $name; $a $op $b);)?)*
            }

            /// Set every declared ratio from its counts (once they are
            /// set): null where the denominator is 0 or the numerator null.
            pub fn set_ratios(&mut self) {
                $($(derived!(ratio self $name; $a $op $b);)?)*
            }

            /// The figure called `name`, as a budget reads it: None for a
            /// name that is no count or rate.
            pub fn reading(&self, name: &str) -> Option<Reading> {
                match name {
                    $( stringify!($name) => Readable::reading(&self.$name), )*
                    _ => None,
                }
            }
        }
    };
}

figures! {
    baseline: bool, "",
        "whether this variant is the baseline the others are compared with";
    selective_gate: bool, "",
        "metacognition_selective_gate: true for the smart gate, false for the legacy gate";
    production: bool, "",
        "whether this variant's gate produced the traffic (the config's `production`, by default the baseline): the turns it skipped never reached production's critic";
    lines: u64, "lines",
        "non-blank lines the run read (turns + rejected), the same on every row";
    rejected: u64, "lines",
        "invalid lines set aside (--skip-invalid), the same on every row";
    turns: u64 = counts.turns, DECISION[0].unit, DECISION[0].meaning;
    fires: u64 = counts.fires, DECISION[1].unit, DECISION[1].meaning;
    skips: u64, DECISION[2].unit, DECISION[2].meaning;
    fire_rate: Option<f64> = fires / turns, DECISION[3].unit, DECISION[3].meaning;
    skip_rate: Option<f64> = skips / turns, DECISION[4].unit, DECISION[4].meaning;
    saved_calls: u64 = counts.saved_calls, DECISION[5].unit, DECISION[5].meaning;
    added_calls: u64 = counts.added_calls, DECISION[6].unit, DECISION[6].meaning;
    net_calls: i64, "calls",
        "saved_calls - added_calls";
    added_call_rate: Option<f64> = added_calls / turns, "share",
        "added_calls / turns";
    fires_without_critic: u64 = counts.fires_without_critic, "turns",
        "fires on turns no critic can run on (an empty draft: symfonic reviews no empty reply); in fires, never a critic call";
    critic_calls: u64, "calls",
        "fires - fires_without_critic: the critic calls the variant makes";
    critic_calls_unrecorded: u64 = counts.critic_calls_unrecorded, "calls",
        "critic calls with nothing recorded of a critic (no critic event; in a trace, no critic span): where production ran this gate (the baseline, as a rule), probable critic failures, since a critic call that raises leaves no span; else a recording that lost the event";
    critic_calls_without_verdict: u64 = counts.critic_calls_without_verdict, "calls",
        "critic calls whose recorded critic ran but left no verdict (an answer not captured or cut)";
    saved_call_share: Option<f64>, "share",
        "saved_calls / the baseline's critic_calls: the share of the baseline's critic calls a switch saves (skip_rate is a share of turns); empty for the baseline and when the baseline makes no call";
    new_skips: u64 = counts.new_skips, "turns",
        "skips of turns the baseline fires on: the turns whose risk a switch adds, the unit of every risk figure below (0 for the baseline: it adds no new harm)";
    new_labelled_skips: u64 = counts.new_labelled_skips, "turns",
        "new skips with the verdict of a critic that ran";
    new_unlabelled_critic_not_run: u64 = counts.new_unlabelled_not_run, "turns",
        "new skips without a label because the event says no critic ran: the gate skipped or the critic call failed open (a 0-token approve); a critic that fails on hard turns leaves exactly these";
    new_unlabelled_no_event: u64 = counts.new_unlabelled_no_event, "turns",
        "new skips without a label because nothing was recorded (critic null or absent; unknown, as after an import of transcripts)";
    new_unlabelled_no_verdict: u64, "turns",
        "new skips whose critic ran but recorded no verdict";
    label_coverage: Option<f64> = new_labelled_skips / new_skips, "share",
        "new_labelled_skips / new_skips; empty without new skips";
    safety_regressions: u64 = counts.new_safety_regressions, "turns",
        "new skips the critic (that ran) revised or refused: the regressions a switch from the baseline adds (0 for the baseline)";
    safety_regression_rate: Option<f64> = safety_regressions / new_labelled_skips, "share",
        "safety_regressions / new_labelled_skips";
    safety_regression_rate_upper95: Option<f64>, "share",
        "a descriptive upper bound of the rate with runs as the sampling unit (Korn-Graubard: the exact Clopper-Pearson bound on new_labelled_skips / design_effect labels, cut by (t(n-1)/t(runs-1))^2; with no regression, the exact bound with each run one trial); empty without labelled new skips. Not a 95% guarantee: where a run's length says nothing of its risk it covered the true rate in 85-100% of simulated replicates, where long runs are riskier and sizes heavy-tailed about half; safety_regression_rate_certificate_upper95 is the bound report.md prints and check holds. It assumes the labels are missing at random";
    safety_regression_rate_certificate_upper95: Option<f64>, "share",
        "the bound a pass rests on (`check`'s max_safety_regression_rate, calibrate's and mine's tests): safety_regression_rate_upper95 with each run worth at most one trial (the design effect at least new_labelled_skips / effective_runs), so a few rare long runs cannot make the estimated design effect optimistic; it assumes run length says nothing about risk. Empty without labelled new skips";
    safety_regression_rate_worst_case_upper95: Option<f64>, "share",
        "the certificate's bound (each run at most one trial) with every unlabelled new skip counted a regression: what the labels alone support, whatever made them missing; empty without new skips";
    labelled_runs: u64, "runs",
        "runs with a labelled new skip: the units the bound's variance rests on";
    effective_runs: Option<f64>, "runs",
        "Kish's effective number of those runs, (sum n_i)^2 / sum n_i^2 over their labelled new skips n_i: as many equal runs as they are worth when a run's verdicts all agree; with no regression the bound is the exact one on this many runs. Empty without labelled new skips";
    design_effect: Option<f64>, "ratio",
        "the variance of the rate with runs as the unit over the binomial variance (at least 1): how much the verdicts of one run are alike; with regressions in fewer than 10 runs, at least new_labelled_skips / effective_runs (runs whose verdicts all agree: the estimate from so few runs is itself unsure); the bound counts new_labelled_skips / design_effect labels; above 1.5 a per-turn bound would be optimistic. Empty without a regression, when all are regressions, or with fewer than 2 runs";
    effective_labels: Option<f64>, "turns",
        "new_labelled_skips / design_effect (new_labelled_skips where it is empty): as many independent labels as the bound is worth";
    new_skip_runs: u64, "runs",
        "runs with a new skip: the units of the worst-case bound";
    worst_case_design_effect: Option<f64>, "ratio",
        "design_effect of the worst case (every unlabelled new skip a regression)";
    worst_case_effective_runs: Option<f64>, "runs",
        "effective_runs of the worst case (over every new skip)";
    production_skips: Option<u64>, "turns",
        "on the variant whose gate produced the traffic (`production`), its skips: turns production's critic never reviewed unless something else sent them to it; empty on the other variants";
    production_skips_unlabelled: Option<u64>, "turns",
        "of production_skips, those without the verdict of a critic that ran: replaying more of this traffic can never label them, so their risk is unknown (on a smart-gate production `check` fails every risk budget on it); only a critic sample of production's skips can measure it. Empty on the other variants";
    sampled_skips: Option<u64>, "turns",
        "with a plan (replay's plan), of production_skips those the plan's coin draws for review; with an audit plan, of the audited variant's unlabelled new skips those drawn, and on another variant's row those drawn among its unlabelled new skips the audit covers; empty without a plan and on the other variants";
    sampled_labelled: Option<u64>, "turns",
        "of sampled_skips, those with a verdict: sampled_labelled_shadow plus sampled_labelled_production";
    sampled_labelled_shadow: Option<u64>, "turns",
        "labelled by a shadow critic outside production (the traffic's `sampled_label`, source shadow, of this plan)";
    sampled_labelled_production: Option<u64>, "turns",
        "labelled by production's own critic (the exploration gate's fires; on legacy-gate traffic its reviews)";
    sampled_failed: Option<u64>, "turns",
        "of sampled_skips, those whose shadow call failed (a sampled_label with an error)";
    sampled_unreviewed: Option<u64>, "turns",
        "of sampled_skips, those with neither a verdict nor a failed call (not yet reviewed)";
    production_fires_without_turn_id: Option<u64>, "turns",
        "with a plan of production's skips, production's fires on turns its gate skips that record no turn_id: if production ran the exploration gate, it drew them by symfonic's run id, so the plan's coin cannot match them to its draws (they read as disagreements, and their verdicts stay out of the sample); record turn_id. On a recording of a gate that reviewed those turns (a legacy recording) they are its reviews. 0 when every such turn has one";
    skip_regression_rate_estimate: Option<f64>, "share",
        "the Horvitz-Thompson estimate of the regression rate on production's skips: each labelled regression weighted by 1 / its inclusion probability (times drawn over labelled at that probability), over production_skips, held to at most 1 (one drawn regression's weight can pass a small window's skips); empty where a stratum with skips has probability 0 or none of its drawn skips is labelled";
    skip_regression_rate_upper95: Option<f64>, "share",
        "one-sided 95% upper bound of the regression rate on production's skips (those of this traffic), valid for the design (with an audit plan: of the unlabelled new skips the audit covers on this row): with one inclusion probability the exact hypergeometric bound on the labelled draws; with several, each probability's exact bound at 5% / their number, summed (skip_bound_method); a stratum at probability 0 or with no label counts all its skips; it assumes failed and unreviewed draws are unrelated to the verdict; empty with no label. `check`'s max_skip_regression_rate reads it";
    skip_regression_rate_worst_case_upper95: Option<f64>, "share",
        "skip_regression_rate_upper95 with every sampled skip without a verdict (failed or unreviewed) counted a regression: it holds however failures relate to verdicts";
    harmful_skips_per_1k_turns_upper95: Option<f64>, "per 1,000 turns",
        "the regressions the 95% bound allows among production's skips, per 1,000 turns of the traffic (on a row with an audit's two-phase bound: among its new skips, the labelled ones' regressions plus the bound on the unlabelled the audit covers plus each it does not cover)";
    skip_bound_method: Option<String>, "",
        "how skip_regression_rate_upper95 was made: `hypergeometric` (one inclusion probability: exact) or `hypergeometric_joint` (several: the pooled count tested jointly, valid for the design)";
    new_skip_regression_rate_two_phase_upper95: Option<f64>, "share",
        "with an audit plan (a sample of one variant's unlabelled new skips, reviewed by a shadow critic), on that variant and on every other with a draw among its unlabelled new skips the audit covers (the audited variant skips them too): the one-sided 95% bound on the regression rate of this traffic's new skips: the labelled new skips' regressions as counted, plus the sample's bound (skip_regression_rate_upper95's count) on the unlabelled ones the audit covers, plus each unlabelled one it does not cover (a skip the audited variant fires on) counted a regression, over new_skips. It makes no assumption on why the recorded labels are missing (the sample is drawn by design; failed shadow calls are taken as unrelated to the verdict, see the worst case); it bounds this traffic's new skips, not a long-run rate";
    new_skip_regression_rate_two_phase_worst_case_upper95: Option<f64>, "share",
        "the same with every drawn unlabelled new skip whose shadow call failed or is not back counted a regression: no assumption on why any label is missing. Where present, `check` holds it in place of the worst case max_safety_regression_rate implies, and `calibrate --plan` tests it (at its own level) in place of each member's worst case";
    all_skips_labelled: u64 = counts.labelled_skips, "turns",
        "all skips (new or not) with the verdict of a critic that ran; secondary";
    all_skips_unlabelled: u64, "turns",
        "all skips without the verdict of a critic that ran; secondary";
    critic_not_run: u64 = counts.critic_not_run, "turns",
        "turns whose event says no critic ran (ran: false, or 0 tokens in and out)";
    all_skips_label_coverage: Option<f64> = all_skips_labelled / skips, "share",
        "all_skips_labelled / skips; secondary";
    all_skips_safety_regressions: u64 = counts.safety_regressions, "turns",
        "all skips (new or not) the critic revised or refused; for the baseline these are production disagreements (turns it skips where production's critic ran and intervened), not a risk of a switch; secondary";
    all_skips_regression_rate: Option<f64> = all_skips_safety_regressions / all_skips_labelled, "share",
        "all_skips_safety_regressions / all_skips_labelled; secondary";
    all_skips_regression_rate_upper95: Option<f64>, "share",
        "one-sided 95% Clopper-Pearson bound of all_skips_regression_rate, turns as the unit; secondary";
    contract_violations: u64, "turns",
        "turns where a flag-off variant differs from an independent legacy evaluation; must be 0";
    saved_tokens_in: Option<u64>, "tokens",
        "input tokens of the saved turns' recorded events; empty when none recorded tokens or the sum exceeds 64 bits";
    saved_tokens_out: Option<u64>, "tokens",
        "output tokens of the saved turns' recorded events (as saved_tokens_in)";
    saved_usd: Option<f64>, "USD",
        "dollars of the saved turns' recorded events, priced per event's model; empty without prices or tokens";
    saved_latency_ms: Option<u64>, "ms",
        "critic latency of the saved turns' recorded events; empty when none recorded one";
    saved_calls_without_tokens: u64, "calls",
        "saved calls whose event has no token counts (left out of the token and dollar sums)";
    saved_calls_without_latency: u64, "calls",
        "saved calls whose event has no latency (left out of saved_latency_ms)";
    added_tokens_in_estimated: Option<f64>, "tokens",
        "added turns' input tokens: each added turn is estimated by the mean recorded event of its draft-length bucket, figure by figure, else of all turns; 0 without added turns";
    added_tokens_out_estimated: Option<f64>, "tokens",
        "added turns' output tokens, estimated as added_tokens_in_estimated";
    added_usd_estimated: Option<f64>, "USD",
        "added turns' dollars, estimated as added_tokens_in_estimated";
    added_latency_ms_estimated: Option<u64>, "ms",
        "added turns' critic latency, estimated as added_tokens_in_estimated";
    net_usd: Option<f64>, "USD",
        "saved_usd - added_usd_estimated";
    net_latency_ms: Option<i64>, "ms",
        "saved_latency_ms - added_latency_ms_estimated";
    saved_calls_per_1k_turns: Option<f64>, "calls",
        "saved_calls per 1,000 turns";
    added_calls_per_1k_turns: Option<f64>, "calls",
        "added_calls per 1,000 turns: the critic calls the variant adds where the baseline skips";
    net_calls_per_1k_turns: Option<f64>, "calls",
        "net_calls per 1,000 turns";
    net_usd_per_1k_turns: Option<f64>, "USD",
        "net_usd per 1,000 turns";
    critic_latency_p50_ms: Option<u64>, "ms",
        "median critic latency added to a user-facing turn: 0 on a skip, the recorded latency on a fire (nearest rank, 1 ms resolution)";
    critic_latency_p95_ms: Option<u64>, "ms",
        "95th percentile, as critic_latency_p50_ms";
    critic_latency_p99_ms: Option<u64>, "ms",
        "99th percentile, as critic_latency_p50_ms";
    critic_latency_p50_ms_with_estimates: Option<u64>, "ms",
        "as critic_latency_p50_ms, with every user-facing fire that recorded no latency (each added call among them) drawn from the recorded latencies of its draft-length bucket, else of all turns (exactly: 1/n of the call at each of the n recorded values)";
    critic_latency_p95_ms_with_estimates: Option<u64>, "ms",
        "95th percentile, as critic_latency_p50_ms_with_estimates";
    critic_latency_p99_ms_with_estimates: Option<u64>, "ms",
        "99th percentile, as critic_latency_p50_ms_with_estimates";
    latency_estimate_pool: Option<u64>, "values",
        "the fewest recorded latencies any fire of the estimates was drawn from: its draft-length bucket's when they are at least 30, else every turn's (a tail drawn from a handful of values is one of them); below 30 the percentiles with estimates rest on too few values, and report.md says so; empty without such fires or recorded latencies";
    latency_unmeasured_fires: u64, "turns",
        "user-facing fires without a recorded latency, left out of the percentiles";
    production_known: u64 = counts.production_known, "turns",
        "turns whose recording says what production's gate did";
    production_agreement: Option<f64>, "share",
        "of production_known, the share where the variant decides as production did";
    production_fired_variant_skips: u64 = counts.production_fired_variant_skips, "turns",
        "production fired, the variant skips (a fire the plan's coin explains is not one: see production_explored)";
    production_explored: u64 = counts.production_explored, "turns",
        "with a plan (replay's plan), turns production's critic reviewed because the plan's coin drew them from its gate's skips (the exploration gate), matched by turn_id: production's gate skipped them, so a variant that skips them agrees (they are in production_known, never in production_fired_variant_skips)";
    production_skipped_variant_fires: u64 = counts.production_skipped_variant_fires, "turns",
        "production skipped, the variant fires";
    /// The risky figures are null for a variant without the smart gate:
    /// none of its skips is an ack skip, so there is nothing to judge.
    risky_skips: Option<u64>, "turns",
        "smart-gate new skips (turns the baseline fires on) whose acks (every match of every pattern, counted as one ack: the longest, so neither a repeated ack nor a stack of different ones outweighs the rest) cover less than --max-ack-share (default 0.5) of the letters and digits of the lowered, stripped draft, function and courtesy words left out, or with a negation or contrast outside the acks (not, n't, but, though, cannot, ...: the share is then 0); empty for a variant without the smart gate";
    risky_skip_rate: Option<f64> = risky_skips / new_skips, "share",
        "risky_skips / new_skips; empty without new skips or without the smart gate";
    risky_labelled_skips: Option<u64>, "turns",
        "risky skips with the verdict of a critic that ran; empty without the smart gate";
    risky_safety_regressions: Option<u64>, "turns",
        "risky skips the critic revised or refused; empty without the smart gate";
    risky_regression_rate_upper95: Option<f64>, "share",
        "one-sided 95% upper bound of risky_safety_regressions / risky_labelled_skips, runs as the sampling unit (as safety_regression_rate_upper95)";
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The decision figures are the columns segments.csv shares, by name
    /// and by type.
    #[test]
    fn the_decision_figures_are_the_shared_columns() {
        for d in &DECISION {
            let c = VARIANT_COLUMNS.iter().find(|c| c.name == d.name).unwrap();
            assert_eq!(
                (c.ty, c.nullable, c.unit, c.meaning),
                (d.ty, d.nullable, d.unit, d.meaning),
                "{}",
                d.name
            );
        }
    }

    /// Every field is a column of its declared type (serde writes the
    /// fields in this order, which summary.csv keeps).
    #[test]
    fn every_field_is_a_column() {
        let v = serde_json::to_value(VariantSummary::default()).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        let mut names: Vec<&str> = VARIANT_COLUMNS.iter().map(|c| c.name).collect();
        names.sort();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(sorted, names);
    }
}
