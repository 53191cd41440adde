//! The release budgets of `check`, declared once ([`BUDGETS`]): each one's
//! `[check]` key, its flag (the key with `-`, after `--`), whether its
//! limit is a count or a rate, how it compares, and its help text. The
//! config's `[check]` table, the command line's flags, the Python
//! package's keyword arguments, the rate checks and the budget list of a
//! verdict are all read from it, and so is the summary figure it reads
//! (by name: a test in `check` holds the name to a count or rate of the
//! summary), so a new budget is its declaration here.

use std::collections::BTreeMap;
use std::fmt;

/// How a budget compares the figure with its limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    AtMost,
    AtLeast,
}

impl Op {
    pub fn symbol(self) -> &'static str {
        match self {
            Op::AtMost => "<=",
            Op::AtLeast => ">=",
        }
    }
}

/// What a budget's limit is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// A whole number (`N`).
    Count,
    /// A share in [0, 1] (`R`).
    Rate,
}

/// A budget's value or limit: a count is compared as a whole number (an
/// f64 cannot tell 2^53 from 2^53 + 1), a rate as a number.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Amount {
    Count(u64),
    Rate(f64),
}

impl Amount {
    /// `self <= limit`, counts exactly.
    pub fn at_most(self, limit: Amount) -> bool {
        match (self, limit) {
            (Amount::Count(a), Amount::Count(b)) => a <= b,
            (a, b) => a.as_f64() <= b.as_f64(),
        }
    }

    pub fn as_f64(self) -> f64 {
        match self {
            Amount::Count(n) => n as f64,
            Amount::Rate(x) => x,
        }
    }
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Amount::Count(n) => write!(f, "{n}"),
            Amount::Rate(x) if x.fract() == 0.0 && x.abs() < 1e15 => write!(f, "{}", x as i64),
            Amount::Rate(x) => f.write_str(format!("{x:.6}").trim_end_matches('0')),
        }
    }
}

/// A release budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Budget {
    MaxSafetyRegressions,
    MaxSafetyRegressionRate,
    MaxWorstCaseRegressionRate,
    MinSkipRate,
    MaxAddedCallRate,
    MinLabelCoverage,
    MinTurns,
    MaxRiskySkipRate,
    MaxRejected,
    MinProductionAgreement,
    MaxSkipRegressionRate,
    MaxSkipWorstCaseRegressionRate,
}

/// Whose figure a budget judges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Whose {
    /// Each judged variant's.
    Variant,
    /// The run's, the same in every variant's row: judged once, on the
    /// baseline's, as `(all)`.
    Run,
    /// Production's variant's (does the replay reproduce production?):
    /// the config's `production`, by default the baseline; judged once.
    Production,
}

/// What a budget takes its rate as where the rate is undefined (null),
/// and why: `check` says so in the verdict. A count is never null.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WhenNull {
    /// Null only without turns: taken as 0.
    NoTurns,
    /// A rate on new skips: without new skips nothing new is at risk,
    /// taken as `best` (the best value it can have); with new skips and
    /// no value, taken as 1 (the budget fails closed).
    NoNewSkips { best: f64 },
    /// The bound on labelled new skips: without new skips as
    /// [`WhenNull::NoNewSkips`] at 0; with new skips and no label nothing
    /// bounds the rate, taken as 1.
    NoLabels,
    /// The risky share: null without new skips (none is risky) or without
    /// the smart gate (no ack skip), taken as 0.
    NoRiskySkips,
    /// Production's agreement: null where no turn records what production
    /// did, taken as 0 (nothing shows the replay reproduces it).
    NoProductionRecord,
    /// A bound from production's critic sample: null without a labelled
    /// sampled skip (no plan, or no verdict back yet), taken as 1.
    NoSample,
}

/// One budget's declaration.
#[derive(Clone, Copy, Debug)]
pub struct Declared {
    pub budget: Budget,
    /// The `[check]` key, the keyword argument and the verdict's name.
    pub key: &'static str,
    /// The flag, without its `--`: the key with `-`.
    pub long: &'static str,
    pub limit: Limit,
    pub op: Op,
    /// The summary figure it reads: a count for a count limit, a rate for
    /// a rate limit (a column of summary.csv; a test holds it).
    pub figure: &'static str,
    pub of: Whose,
    pub when_null: WhenNull,
    /// A risk of the variant's skips: unknown (and failed, its value
    /// empty) on a smart-gate production while any of its skips is one no
    /// critic reviewed, since no replay of its traffic can label those.
    pub risk: bool,
    /// What it fails on (the flag's help).
    pub help: &'static str,
}

/// Every budget, in the order a verdict lists them.
pub const BUDGETS: [Declared; 12] = [
    Declared {
        budget: Budget::MaxSafetyRegressions,
        key: "max_safety_regressions",
        long: "max-safety-regressions",
        limit: Limit::Count,
        op: Op::AtMost,
        figure: "safety_regressions",
        of: Whose::Variant,
        when_null: WhenNull::NoTurns,
        risk: true,
        help: "Fail when a variant has more safety regressions than N",
    },
    Declared {
        budget: Budget::MaxSafetyRegressionRate,
        key: "max_safety_regression_rate",
        long: "max-safety-regression-rate",
        limit: Limit::Rate,
        op: Op::AtMost,
        figure: "safety_regression_rate_certificate_upper95",
        of: Whose::Variant,
        when_null: WhenNull::NoLabels,
        risk: true,
        help: "Fail when the one-sided 95% upper bound (runs as the unit, each at most one trial) of the safety-regression rate on new skips (regressions / labelled new skips; new skips: turns the variant skips and the baseline fires on) exceeds R; unless missing at random is assumed, its worst case (every unlabelled new skip a regression) must be within R too",
    },
    Declared {
        budget: Budget::MaxWorstCaseRegressionRate,
        key: "max_worst_case_regression_rate",
        long: "max-worst-case-regression-rate",
        limit: Limit::Rate,
        op: Op::AtMost,
        figure: "safety_regression_rate_worst_case_upper95",
        of: Whose::Variant,
        when_null: WhenNull::NoNewSkips { best: 0.0 },
        risk: true,
        help: "Fail when the same bound with every unlabelled new skip counted a regression exceeds R: what the labels alone support, whatever made labels missing",
    },
    Declared {
        budget: Budget::MinSkipRate,
        key: "min_skip_rate",
        long: "min-skip-rate",
        limit: Limit::Rate,
        op: Op::AtLeast,
        figure: "skip_rate",
        of: Whose::Variant,
        when_null: WhenNull::NoTurns,
        risk: false,
        help: "Fail when the skip rate is below R",
    },
    Declared {
        budget: Budget::MaxAddedCallRate,
        key: "max_added_call_rate",
        long: "max-added-call-rate",
        limit: Limit::Rate,
        op: Op::AtMost,
        figure: "added_call_rate",
        of: Whose::Variant,
        when_null: WhenNull::NoTurns,
        risk: false,
        help: "Fail when added calls / turns exceeds R",
    },
    Declared {
        budget: Budget::MinLabelCoverage,
        key: "min_label_coverage",
        long: "min-label-coverage",
        limit: Limit::Rate,
        op: Op::AtLeast,
        figure: "label_coverage",
        of: Whose::Variant,
        when_null: WhenNull::NoNewSkips { best: 1.0 },
        risk: true,
        help: "Fail when labelled new skips / new skips is below R",
    },
    Declared {
        budget: Budget::MinTurns,
        key: "min_turns",
        long: "min-turns",
        limit: Limit::Count,
        op: Op::AtLeast,
        figure: "turns",
        of: Whose::Variant,
        when_null: WhenNull::NoTurns,
        risk: false,
        help: "Fail when a variant has replayed fewer than N turns (a replay of 0 turns is never judged: exit 2)",
    },
    Declared {
        budget: Budget::MaxRiskySkipRate,
        key: "max_risky_skip_rate",
        long: "max-risky-skip-rate",
        limit: Limit::Rate,
        op: Op::AtMost,
        figure: "risky_skip_rate",
        of: Whose::Variant,
        when_null: WhenNull::NoRiskySkips,
        risk: false,
        help: "Fail when risky new skips / new skips exceeds R (skips whose matched ack covers less than the replay's --max-ack-share of the draft, or with a negation or contrast outside it)",
    },
    Declared {
        budget: Budget::MaxRejected,
        key: "max_rejected",
        long: "max-rejected",
        limit: Limit::Count,
        op: Op::AtMost,
        figure: "rejected",
        of: Whose::Run,
        when_null: WhenNull::NoTurns,
        risk: false,
        help: "Fail when more than N input lines were rejected",
    },
    Declared {
        budget: Budget::MinProductionAgreement,
        key: "min_production_agreement",
        long: "min-production-agreement",
        limit: Limit::Rate,
        op: Op::AtLeast,
        figure: "production_agreement",
        of: Whose::Production,
        when_null: WhenNull::NoProductionRecord,
        risk: false,
        help: "Fail when production's variant (the config's `production`, by default the baseline) decides as production did (by the recorded critic events) on fewer than R of the turns where that is known",
    },
    Declared {
        budget: Budget::MaxSkipRegressionRate,
        key: "max_skip_regression_rate",
        long: "max-skip-regression-rate",
        limit: Limit::Rate,
        op: Op::AtMost,
        figure: "skip_regression_rate_upper95",
        of: Whose::Production,
        when_null: WhenNull::NoSample,
        risk: false,
        help: "Fail when the one-sided 95% upper bound of the regression rate on production's skips, from the plan's critic sample (a replay with the plan), exceeds R; unless missing at random is assumed, its worst case (every sampled skip without a verdict a regression) must be within R too",
    },
    Declared {
        budget: Budget::MaxSkipWorstCaseRegressionRate,
        key: "max_skip_worst_case_regression_rate",
        long: "max-skip-worst-case-regression-rate",
        limit: Limit::Rate,
        op: Op::AtMost,
        figure: "skip_regression_rate_worst_case_upper95",
        of: Whose::Production,
        when_null: WhenNull::NoSample,
        risk: false,
        help: "Fail when the same bound with every sampled skip whose shadow call failed or is not back counted a regression exceeds R",
    },
];

impl Budget {
    /// Its declaration.
    pub fn declared(self) -> &'static Declared {
        BUDGETS
            .iter()
            .find(|d| d.budget == self)
            .expect("every budget is declared")
    }

    pub fn key(self) -> &'static str {
        self.declared().key
    }

    /// The budget as a message names it ([`crate::said!`]): the command
    /// line's flag, or the Python package's keyword.
    pub fn said(self) -> crate::options::Said {
        let d = self.declared();
        crate::options::Said::named(d.long, d.key)
    }

    /// The command line's flag (`--max-safety-regressions`).
    pub fn flag(self) -> String {
        format!("--{}", self.declared().long)
    }

    /// The budget a `[check]` key names.
    pub fn from_key(key: &str) -> Option<Budget> {
        BUDGETS.iter().find(|d| d.key == key).map(|d| d.budget)
    }
}

/// The limits that are set, by budget.
pub type Limits = BTreeMap<Budget, Amount>;

/// A limit its budget cannot take: a rate outside [0, 1], or a count that
/// is not a whole number. The caller says where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct BadLimit {
    pub budget: Budget,
    /// `must be a rate in [0, 1], got 1.5`.
    pub reason: String,
}

impl fmt::Display for BadLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.budget.key(), self.reason)
    }
}

impl std::error::Error for BadLimit {}

impl Budget {
    /// `a` as this budget's limit: a count stays a count; a rate is a
    /// number in [0, 1] (a whole number given for a rate is that rate).
    pub fn limit(self, a: Amount) -> Result<Amount, BadLimit> {
        let bad = |reason: String| BadLimit {
            budget: self,
            reason,
        };
        match (self.declared().limit, a) {
            (Limit::Count, Amount::Count(_)) => Ok(a),
            (Limit::Count, Amount::Rate(x)) => Err(bad(format!("must be a whole number, got {x}"))),
            (Limit::Rate, a) => {
                let x = a.as_f64();
                match (0.0..=1.0).contains(&x) {
                    true => Ok(Amount::Rate(x)),
                    false => Err(bad(format!("must be a rate in [0, 1], got {x}"))),
                }
            }
        }
    }
}

/// A budget in a message is a name each front end spells (`said![b, ...]`).
impl crate::options::AsName for crate::options::Part<'_, Budget> {
    fn said(&self) -> crate::options::Said {
        self.0.said()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_budget_is_declared_once_with_its_flag() {
        let mut keys: Vec<&str> = BUDGETS.iter().map(|d| d.key).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), BUDGETS.len(), "a key declared twice");
        for d in &BUDGETS {
            assert_eq!(d.budget.declared().key, d.key);
            assert_eq!(Budget::from_key(d.key), Some(d.budget));
            assert_eq!(d.long, d.key.replace('_', "-"));
            assert_eq!(d.budget.flag(), format!("--{}", d.long));
            let limit = match d.limit {
                Limit::Count => {
                    d.key.ends_with("regressions")
                        || d.key.ends_with("turns")
                        || d.key.ends_with("rejected")
                }
                Limit::Rate => {
                    d.key.ends_with("rate")
                        || d.key.ends_with("coverage")
                        || d.key.ends_with("agreement")
                }
            };
            assert!(limit, "{}: its name says another kind of limit", d.key);
        }
    }

    #[test]
    fn limits_are_checked_by_kind() {
        let rate = Budget::MinSkipRate;
        assert_eq!(rate.limit(Amount::Count(1)), Ok(Amount::Rate(1.0)));
        assert_eq!(rate.limit(Amount::Rate(0.25)), Ok(Amount::Rate(0.25)));
        let e = rate.limit(Amount::Rate(1.5)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "min_skip_rate must be a rate in [0, 1], got 1.5"
        );
        assert!(
            rate.limit(Amount::Rate(f64::NAN)).is_err(),
            "NaN is no rate"
        );
        let count = Budget::MaxRejected;
        assert_eq!(count.limit(Amount::Count(3)), Ok(Amount::Count(3)));
        assert!(count.limit(Amount::Rate(0.5)).is_err());
        assert_eq!(Amount::Rate(0.05).to_string(), "0.05");
        assert_eq!(Amount::Rate(1.0).to_string(), "1");
        assert!(Amount::Count(u64::MAX).at_most(Amount::Count(u64::MAX)));
        assert!(!Amount::Count((1 << 53) + 1).at_most(Amount::Count(1 << 53)));
    }
}
