//! `check`: apply release budgets to a replay's output folder.
//!
//! The verdict is computed once, as a list of [`BudgetResult`]s; the printed
//! lines, the Markdown table and the exit code are all derived from that
//! list, so they cannot disagree.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use crate::config::CheckConfig;
use crate::report::markdown::excerpt;

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

/// Why a verdict cannot be given (exit 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CannotJudge(pub String);

/// A replay's summary, read back.
pub struct ReplayDir {
    pub summary: Value,
}

impl ReplayDir {
    pub fn open(dir: &Path) -> Result<ReplayDir, CannotJudge> {
        let p = dir.join("summary.json");
        let text = std::fs::read_to_string(&p).map_err(|e| {
            CannotJudge(format!(
                "{}: cannot read ({e}); is {} the --out folder of a replay?",
                p.display(),
                dir.display()
            ))
        })?;
        let summary: Value = serde_json::from_str(&text)
            .map_err(|e| CannotJudge(format!("{}: not a critic-gate summary: {e}", p.display())))?;
        if !summary["variants"].is_object() {
            return Err(CannotJudge(format!(
                "{}: no variants in the summary",
                p.display()
            )));
        }
        Ok(ReplayDir { summary })
    }

    pub fn variant_names(&self) -> Vec<String> {
        match self.summary["variant_order"].as_array() {
            Some(a) => a
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            None => self.summary["variants"]
                .as_object()
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default(),
        }
    }

    pub fn baseline(&self) -> Option<&str> {
        self.summary["baseline"].as_str()
    }
}

fn num(v: &Value) -> Option<f64> {
    v.as_f64()
}

/// Apply `budgets` to the variants named (default: every non-baseline one).
pub fn judge(dir: &ReplayDir, budgets: &CheckConfig) -> Result<Vec<BudgetResult>, CannotJudge> {
    let names = dir.variant_names();
    let targets: Vec<String> = match &budgets.variant {
        Some(vs) if !vs.is_empty() => {
            for v in vs {
                if !names.contains(v) {
                    return Err(CannotJudge(format!(
                        "variant {v:?} is not in this replay; its variants are: {}",
                        names.join(", ")
                    )));
                }
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
    let mut out = Vec::new();
    for v in &targets {
        let m = &dir.summary["variants"][v];
        let mut push =
            |budget, metric, value: Option<f64>, undefined: (f64, &str), op, limit: f64| {
                let (value, note) = match value {
                    Some(x) => (x, None),
                    None => (undefined.0, Some(undefined.1.to_string())),
                };
                let pass = match op {
                    Op::AtMost => value <= limit,
                    Op::AtLeast => value >= limit,
                };
                out.push(BudgetResult {
                    variant: v.clone(),
                    budget,
                    metric,
                    value,
                    op,
                    limit,
                    pass,
                    note,
                });
            };
        let get = |k: &str| -> Result<Option<f64>, CannotJudge> {
            match &m[k] {
                Value::Null if m.get(k).is_some() => Ok(None),
                Value::Number(n) => Ok(n.as_f64()),
                _ => Err(CannotJudge(format!("summary.json has no variants.{v}.{k}"))),
            }
        };
        push(
            "contract_violations",
            "contract_violations",
            get("contract_violations")?,
            (0.0, ""),
            Op::AtMost,
            0.0,
        );
        if let Some(n) = budgets.max_safety_regressions {
            push(
                "max_safety_regressions",
                "safety_regressions",
                get("safety_regressions")?,
                (0.0, ""),
                Op::AtMost,
                n as f64,
            );
        }
        if let Some(r) = budgets.max_safety_regression_rate {
            push(
                "max_safety_regression_rate",
                "safety_regression_rate_upper95",
                get("safety_regression_rate_upper95")?,
                (
                    1.0,
                    "no labelled skips: nothing bounds the rate, taken as 1",
                ),
                Op::AtMost,
                r,
            );
        }
        if let Some(r) = budgets.min_skip_rate {
            push(
                "min_skip_rate",
                "skip_rate",
                get("skip_rate")?,
                (0.0, "no turns"),
                Op::AtLeast,
                r,
            );
        }
        if let Some(r) = budgets.max_added_call_rate {
            push(
                "max_added_call_rate",
                "added_call_rate",
                get("added_call_rate")?,
                (0.0, "no turns"),
                Op::AtMost,
                r,
            );
        }
        if let Some(r) = budgets.min_label_coverage {
            push(
                "min_label_coverage",
                "label_coverage",
                get("label_coverage")?,
                (1.0, "no skips: every skip (none) is labelled"),
                Op::AtLeast,
                r,
            );
        }
        if let Some(n) = budgets.max_rejected {
            let rejected = num(&dir.summary["rejected"])
                .ok_or_else(|| CannotJudge("summary.json has no rejected".into()))?;
            push(
                "max_rejected",
                "rejected",
                Some(rejected),
                (0.0, ""),
                Op::AtMost,
                n as f64,
            );
        }
    }
    if let Some(r) = budgets.min_production_agreement {
        out.push(production_budget(dir, r)?);
    }
    Ok(out)
}

/// `min_production_agreement`: a property of the baseline (does the replay
/// reproduce production?), judged once, not per variant.
fn production_budget(dir: &ReplayDir, limit: f64) -> Result<BudgetResult, CannotJudge> {
    let key = "production_agreement";
    let (value, note) = match dir.summary.get(key) {
        Some(Value::Number(n)) => (n.as_f64().unwrap_or(f64::NAN), None),
        Some(Value::Null) => (
            0.0,
            Some("no turn records what production did: nothing shows the replay reproduces it, taken as 0".to_string()),
        ),
        _ => {
            return Err(CannotJudge(format!(
                "summary.json has no {key}: replay the traffic again with this version of critic-gate"
            )))
        }
    };
    Ok(BudgetResult {
        variant: dir.baseline().unwrap_or("baseline").to_string(),
        budget: "min_production_agreement",
        metric: key,
        value,
        op: Op::AtLeast,
        limit,
        pass: value >= limit,
        note,
    })
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
            summary: json!({
                "baseline": "legacy", "rejected": 0, "variant_order": ["legacy", "smart"],
                "variants": {
                    "legacy": {"contract_violations": 0, "safety_regressions": 0, "safety_regression_rate_upper95": null,
                               "skip_rate": 0.0, "added_call_rate": 0.0, "label_coverage": null},
                    "smart": {"contract_violations": 0, "safety_regressions": regressions, "safety_regression_rate_upper95": upper,
                              "skip_rate": 0.5, "added_call_rate": 0.1, "label_coverage": 0.9},
                }
            }),
        }
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
