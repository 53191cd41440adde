//! `check`: apply release budgets to a replay's output folder.
//!
//! The verdict is computed once, as a list of [`BudgetResult`]s; the printed
//! lines, the Markdown table and the exit code are all derived from that
//! list, so they cannot disagree.

use std::fmt::Write as _;
use std::path::Path;

use crate::config::CheckConfig;
use crate::report::markdown::{excerpt, TOP_REGRESSIONS};
use crate::report::read::{read_csv, string_rows};
pub use crate::report::read::{CannotJudge, ReplayDir};

/// How a budget compares its value with its limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    AtMost,
    AtLeast,
}

/// One budget applied to one variant.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetResult {
    pub variant: String,
    pub budget: &'static str,
    /// The summary metric it reads.
    pub metric: &'static str,
    pub value: f64,
    pub op: Op,
    pub limit: f64,
    pub pass: bool,
    /// Why the value was taken as it is (e.g. an undefined rate).
    pub note: Option<String>,
}

/// What a budget reads.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// A whole number >= 0.
    Count,
    /// A rate in [0, 1]; null (undefined) is taken as the value given,
    /// with the note given.
    Rate(f64, &'static str),
}

/// One budget of the config, before it is applied to a variant.
struct Budget {
    name: &'static str,
    metric: &'static str,
    kind: Kind,
    op: Op,
    limit: f64,
}

/// The per-variant budgets that are set, in report order. Every variant is
/// always held to `contract_violations <= 0`.
fn variant_budgets(b: &CheckConfig) -> Vec<Budget> {
    use Op::*;
    let budget = |name, metric, kind, op, limit: Option<f64>| {
        limit.map(|limit| Budget {
            name,
            metric,
            kind,
            op,
            limit,
        })
    };
    let no_turns = Kind::Rate(0.0, "no turns");
    [
        budget(
            "contract_violations",
            "contract_violations",
            Kind::Count,
            AtMost,
            Some(0.0),
        ),
        budget(
            "max_safety_regressions",
            "safety_regressions",
            Kind::Count,
            AtMost,
            b.max_safety_regressions.map(|n| n as f64),
        ),
        budget(
            "max_safety_regression_rate",
            "safety_regression_rate_upper95",
            Kind::Rate(
                1.0,
                "no labelled skips: nothing bounds the rate, taken as 1",
            ),
            AtMost,
            b.max_safety_regression_rate,
        ),
        budget(
            "min_skip_rate",
            "skip_rate",
            no_turns,
            AtLeast,
            b.min_skip_rate,
        ),
        budget(
            "max_added_call_rate",
            "added_call_rate",
            no_turns,
            AtMost,
            b.max_added_call_rate,
        ),
        budget(
            "min_label_coverage",
            "label_coverage",
            Kind::Rate(1.0, "no skips: every skip (none) is labelled"),
            AtLeast,
            b.min_label_coverage,
        ),
        budget(
            "min_turns",
            "turns",
            Kind::Count,
            AtLeast,
            b.min_turns.map(|n| n as f64),
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

impl Budget {
    /// Read this budget's metric (of `variant`, or of the whole replay)
    /// and judge it.
    fn apply(
        &self,
        dir: &ReplayDir,
        variant: Option<&str>,
    ) -> Result<(f64, Option<String>), CannotJudge> {
        Ok(match self.kind {
            Kind::Count => (dir.count(variant, self.metric)? as f64, None),
            Kind::Rate(undefined, why) => match dir.rate(variant, self.metric)? {
                Some(x) => (x, None),
                None => (undefined, Some(why.to_string())),
            },
        })
    }

    fn result(&self, name: &str, (value, note): (f64, Option<String>)) -> BudgetResult {
        let pass = match self.op {
            Op::AtMost => value <= self.limit,
            Op::AtLeast => value >= self.limit,
        };
        BudgetResult {
            variant: name.to_string(),
            budget: self.name,
            metric: self.metric,
            value,
            op: self.op,
            limit: self.limit,
            pass,
            note,
        }
    }
}

/// The variants to judge: those named, else every non-baseline one.
fn targets(dir: &ReplayDir, budgets: &CheckConfig) -> Result<Vec<String>, CannotJudge> {
    let names = dir.variant_names();
    let targets: Vec<String> = match &budgets.variant {
        Some(vs) if !vs.is_empty() => {
            if let Some(v) = vs.iter().find(|v| !names.contains(v)) {
                return Err(CannotJudge(format!(
                    "variant {v:?} is not in this replay; its variants are: {}",
                    names.join(", ")
                )));
            }
            vs.clone()
        }
        _ => names
            .iter()
            .filter(|n| Some(n.as_str()) != dir.baseline())
            .cloned()
            .collect(),
    };
    if targets.is_empty() {
        return Err(CannotJudge(
            "no variant to check: the replay has only its baseline (name one with --variant)"
                .into(),
        ));
    }
    Ok(targets)
}

/// A replay of no turns says nothing: it cannot pass.
fn something_to_judge(dir: &ReplayDir, targets: &[String]) -> Result<(), CannotJudge> {
    let turns = dir.count(None, "turns")?;
    if turns == 0 {
        let (lines, rejected) = (dir.count(None, "lines")?, dir.count(None, "rejected")?);
        return Err(CannotJudge(format!(
            "{}: nothing to judge: the replay has 0 turns ({lines} non-blank lines read, {rejected} rejected)",
            dir.path.display()
        )));
    }
    for v in targets {
        if dir.count(Some(v), "turns")? == 0 {
            return Err(CannotJudge(format!(
                "{}: nothing to judge: variant {v} has 0 turns",
                dir.path.display()
            )));
        }
    }
    Ok(())
}

/// Apply `budgets` to the variants named (default: every non-baseline one).
pub fn judge(dir: &ReplayDir, budgets: &CheckConfig) -> Result<Vec<BudgetResult>, CannotJudge> {
    let targets = targets(dir, budgets)?;
    something_to_judge(dir, &targets)?;
    let mut out = Vec::new();
    for v in &targets {
        for b in variant_budgets(budgets) {
            out.push(b.result(v, b.apply(dir, Some(v))?));
        }
    }
    if let Some(n) = budgets.max_rejected {
        let b = Budget {
            name: "max_rejected",
            metric: "rejected",
            kind: Kind::Count,
            op: Op::AtMost,
            limit: n as f64,
        };
        out.push(b.result("(all)", b.apply(dir, None)?));
    }
    if let Some(r) = budgets.min_production_agreement {
        out.push(production_budget(dir, r)?);
    }
    Ok(out)
}

/// `min_production_agreement`: a property of the baseline (does the replay
/// reproduce production?), judged once, not per variant.
fn production_budget(dir: &ReplayDir, limit: f64) -> Result<BudgetResult, CannotJudge> {
    let b = Budget {
        name: "min_production_agreement",
        metric: "production_agreement",
        kind: Kind::Rate(
            0.0,
            "no turn records what production did: nothing shows the replay reproduces it, taken as 0",
        ),
        op: Op::AtLeast,
        limit,
    };
    let base = dir.baseline().unwrap_or("baseline");
    Ok(b.result(base, b.apply(dir, None)?))
}

/// Every budget passed.
pub fn passed(results: &[BudgetResult]) -> bool {
    results.iter().all(|r| r.pass)
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x:.6}").trim_end_matches('0').to_string()
    }
}

fn op_str(op: Op) -> &'static str {
    match op {
        Op::AtMost => "<=",
        Op::AtLeast => ">=",
    }
}

/// One line per budget, then the verdict.
pub fn render_text(results: &[BudgetResult]) -> String {
    let mut s = String::new();
    for r in results {
        let _ = write!(
            s,
            "{}  {:<12} {:<28} value {:<12} limit {} {}",
            if r.pass { "PASS" } else { "FAIL" },
            r.variant,
            r.budget,
            fmt_num(r.value),
            op_str(r.op),
            fmt_num(r.limit)
        );
        if let Some(n) = &r.note {
            let _ = write!(s, "  ({n})");
        }
        s.push('\n');
    }
    let failed = results.iter().filter(|r| !r.pass).count();
    if failed == 0 {
        let _ = writeln!(s, "check passed: {} budgets", results.len());
    } else {
        let _ = writeln!(s, "check FAILED: {failed} of {} budgets", results.len());
    }
    s
}

/// A regression row for the Markdown report.
pub struct RegressionLine {
    pub variant: String,
    pub source: String,
    pub line: String,
    pub verdict: String,
    pub draft: String,
}

/// The first [`TOP_REGRESSIONS`] rows of the folder's regressions.csv
/// among the variants `results` judged, and how many there are in all.
pub fn regressions_judged(
    dir: &Path,
    results: &[BudgetResult],
) -> Result<(Vec<RegressionLine>, usize), CannotJudge> {
    let rows = string_rows(
        &read_csv(&dir.join("regressions.csv"))?,
        &["variant", "source", "line", "verdict", "draft"],
    )?;
    let judged: Vec<&str> = results.iter().map(|r| r.variant.as_str()).collect();
    let relevant: Vec<Vec<String>> = rows
        .into_iter()
        .filter(|r| judged.contains(&r[0].as_str()))
        .collect();
    let lines = relevant
        .iter()
        .take(TOP_REGRESSIONS)
        .map(|r| RegressionLine {
            variant: r[0].clone(),
            source: r[1].clone(),
            line: r[2].clone(),
            verdict: r[3].clone(),
            draft: r[4].clone(),
        })
        .collect();
    Ok((lines, relevant.len()))
}

/// The verdict as Markdown (for a pull-request comment or
/// `$GITHUB_STEP_SUMMARY`), with the first regressions.
pub fn render_markdown(
    results: &[BudgetResult],
    regressions: &[RegressionLine],
    total: usize,
) -> String {
    let mut s = String::new();
    let ok = passed(results);
    let _ = writeln!(
        s,
        "### critic-gate check: {}\n",
        if ok { "✅ passed" } else { "❌ failed" }
    );
    let _ = writeln!(s, "| | variant | budget | value | limit |");
    let _ = writeln!(s, "|---|---|---|---:|---:|");
    for r in results {
        let _ = writeln!(
            s,
            "| {} | `{}` | {} | {} | {} {} |",
            if r.pass { "✅" } else { "❌" },
            r.variant,
            r.budget,
            fmt_num(r.value),
            op_str(r.op).replace('<', "&lt;").replace('>', "&gt;"),
            fmt_num(r.limit)
        );
    }
    if total > 0 {
        let _ = writeln!(
            s,
            "\n**Safety regressions** ({total}; first {}):\n",
            regressions.len()
        );
        let _ = writeln!(s, "| variant | where | verdict | draft |");
        let _ = writeln!(s, "|---|---|---|---|");
        for g in regressions {
            let _ = writeln!(
                s,
                "| `{}` | {}:{} | {} | {} |",
                g.variant,
                g.source,
                g.line,
                g.verdict,
                excerpt(&g.draft, 80)
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dir(regressions: u64, upper: Option<f64>) -> ReplayDir {
        ReplayDir {
            path: "summary.json".into(),
            summary: json!({
                "baseline": "legacy", "rejected": 0, "turns": 10, "lines": 10, "variant_order": ["legacy", "smart"],
                "variants": {
                    "legacy": {"turns": 10, "contract_violations": 0, "safety_regressions": 0, "safety_regression_rate_upper95": null,
                               "skip_rate": 0.0, "added_call_rate": 0.0, "label_coverage": null},
                    "smart": {"turns": 10, "contract_violations": 0, "safety_regressions": regressions, "safety_regression_rate_upper95": upper,
                              "skip_rate": 0.5, "added_call_rate": 0.1, "label_coverage": 0.9},
                }
            }),
        }
    }

    /// A null, negative or fractional count, or a rate out of [0, 1], read
    /// as a pass before; now it cannot be judged, naming the key.
    #[test]
    fn impossible_values_cannot_be_judged() {
        let budgets = CheckConfig {
            max_safety_regressions: Some(0),
            max_safety_regression_rate: Some(0.5),
            ..Default::default()
        };
        for (key, bad) in [
            ("safety_regressions", json!(null)),
            ("safety_regressions", json!(-1)),
            ("safety_regressions", json!(0.5)),
            ("safety_regressions", json!("0")),
            ("contract_violations", json!(null)),
            ("contract_violations", json!(-1)),
            ("safety_regression_rate_upper95", json!(1.5)),
            ("safety_regression_rate_upper95", json!("0.1")),
            ("turns", json!(null)),
        ] {
            let mut d = dir(0, Some(0.1));
            d.summary["variants"]["smart"][key] = bad.clone();
            let e = judge(&d, &budgets).unwrap_err().0;
            assert!(
                e.contains(&format!("summary.json: variants.smart.{key} must be")),
                "{key} = {bad}: {e}"
            );
            let mut d = dir(0, Some(0.1));
            d.summary["variants"]["smart"]
                .as_object_mut()
                .unwrap()
                .remove(key);
            let e = judge(&d, &budgets).unwrap_err().0;
            assert!(e.contains("it is missing"), "{key} missing: {e}");
        }
    }

    #[test]
    fn a_replay_of_no_turns_cannot_pass() {
        let budgets = CheckConfig::default();
        let mut d = dir(0, None);
        d.summary["turns"] = json!(0);
        let e = judge(&d, &budgets).unwrap_err().0;
        assert!(
            e.contains("nothing to judge: the replay has 0 turns"),
            "{e}"
        );
        let mut d = dir(0, None);
        d.summary["variants"]["smart"]["turns"] = json!(0);
        let e = judge(&d, &budgets).unwrap_err().0;
        assert!(
            e.contains("nothing to judge: variant smart has 0 turns"),
            "{e}"
        );
        let budgets = CheckConfig {
            min_turns: Some(11),
            ..Default::default()
        };
        let r = judge(&dir(0, None), &budgets).unwrap();
        assert!(!passed(&r));
        assert_eq!(r.last().unwrap().budget, "min_turns");
    }

    #[test]
    fn verdict_text_and_markdown_agree_with_pass() {
        let budgets = CheckConfig {
            max_safety_regressions: Some(0),
            ..Default::default()
        };
        for (n, want) in [(0, true), (1, false)] {
            let r = judge(&dir(n, Some(0.01)), &budgets).unwrap();
            assert_eq!(passed(&r), want);
            let text = render_text(&r);
            assert_eq!(text.contains("check passed"), want, "{text}");
            assert_eq!(text.contains("FAIL "), !want, "{text}");
            let md = render_markdown(&r, &[], 0);
            assert_eq!(md.contains("✅ passed"), want);
        }
    }

    #[test]
    fn rate_budget_reads_the_upper_bound_and_undefined_is_one() {
        let budgets = CheckConfig {
            max_safety_regression_rate: Some(0.05),
            ..Default::default()
        };
        let r = judge(&dir(0, Some(0.001)), &budgets).unwrap();
        assert!(passed(&r));
        assert_eq!(r[1].metric, "safety_regression_rate_upper95");
        let r = judge(&dir(0, None), &budgets).unwrap();
        assert!(!passed(&r));
        assert!(r[1].note.is_some());
    }

    #[test]
    fn unknown_variant_cannot_be_judged() {
        let budgets = CheckConfig {
            variant: Some(vec!["nope".into()]),
            ..Default::default()
        };
        assert!(judge(&dir(0, None), &budgets).is_err());
    }
}
