//! `plan`'s files: plan.toml (what `sample`, `labels` and the exploration
//! gate read: the salt, each stratum's probability, the gate settings and
//! fingerprints), plan.csv (declared in the schema) and plan.md; each
//! written whole or not at all.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::sizing::Sized;
use super::{Budget, Designed, Request};
use crate::config::{FrameworkConfig, Variant};
use crate::report::export::{declared_frame, write_csv, Col, WriteFailure};
use crate::summary::numbers::sig;
use crate::summary::text::md_text;
use crate::Error;

/// The version of plan.toml this build writes and reads.
pub const PLAN_FORMAT: u64 = 3;

/// How the sample is sized, as plan.toml and plan.md say.
pub const METHOD: &str = "per stratum, the labels for an exact one-sided Clopper-Pearson bound within the rate with 80% power at the prior (the traffic's labelled skips), else with no regression, drawn over the window: probability = labels / (skips a day x window days), at most 1";

/// plan.toml.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanFile {
    pub format: u64,
    /// XXH3-64 of this file's text without this line, 16 hex digits.
    pub plan_id: String,
    pub salt: String,
    /// The variant whose gate produced the traffic.
    pub production: String,
    /// What is sampled: `production_skips` (production's skips, after the
    /// switch) or `unlabelled_new_skips` (an audit: `variant`'s new skips
    /// the recording left without a label, before the switch).
    pub population: String,
    /// The variant whose decisions make the population (`gate`'s).
    pub variant: String,
    /// `max_skip_regression_rate` or `max_harmful_per_1k`, as given.
    pub budget: String,
    pub budget_value: f64,
    /// The rate on production's skips the sample is sized for.
    pub rate: f64,
    pub confidence: f64,
    pub window_days: f64,
    pub method: String,
    /// The `--strata` key (`all` for one stratum).
    pub strata: String,
    pub expected_calls_per_day: f64,
    /// The probability of a value no stratum names (the highest of the
    /// strata's): no skip goes unsampled.
    pub default_probability: f64,
    /// Where `window`'s volumes a day came from: `ts` (the recorded span)
    /// or `given` (`days`).
    pub days_from: String,
    pub days: f64,
    /// The traffic the plan was made on (recorded, not required later).
    pub traffic: Vec<Source>,
    /// The change alarm's design: a Bernoulli CUSUM for a rise of the rate
    /// to `alarm_rise` x `rate`, its average run length at `rate` this many
    /// days (what `plan`'s detection delays are predicted for).
    pub false_alarm_every_days: f64,
    pub alarm_rise: f64,
    /// The probability a fire of production's with a critic verdict is
    /// also drawn for the shadow critic (the fidelity sample; 0: none),
    /// and the calls a day that makes.
    pub fidelity_probability: f64,
    pub fidelity_calls_per_day: f64,
    /// The sampled variant's gate settings: a plan is refused for other
    /// ones.
    pub gate: FrameworkConfig,
    /// An audit's baseline gate (its new skips are against it).
    pub baseline_gate: Option<FrameworkConfig>,
    /// The `[deployment]` imported traffic was derived with (absent for a
    /// plan made on traffic lines, which carry their derivations): its
    /// strata and population are of the turns as it derived them, so a
    /// config with another is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment: Option<crate::deployment::Deployment>,
    pub stratum: Vec<Stratum>,
}

/// One traffic file of the plan's making.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    pub name: String,
    /// Size and XXH3-64, where the file could be read again (not `-`).
    pub bytes: Option<u64>,
    pub xxh3: Option<String>,
}

/// One stratum's probability.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stratum {
    pub value: String,
    pub probability: f64,
    pub expected_calls_per_day: f64,
    /// Of them, the labels a day the change alarm takes: one per
    /// conversation a day (absent in a plan of schema 13 or before, whose
    /// chart was designed on every label: `expected_calls_per_day` then).
    #[serde(default)]
    pub expected_chart_labels_per_day: Option<f64>,
    /// The stratum's change alarm (`monitor` runs it): a Bernoulli CUSUM
    /// on its labels (one per conversation a day), a regression adding
    /// `alarm_up` units and any other verdict taking one away, alarmed at
    /// `alarm_h`; absent where the stratum has no calls.
    pub alarm_up: Option<u64>,
    pub alarm_h: Option<u64>,
}

/// Everything the files are written from.
pub struct Made<'a> {
    pub request: &'a Request,
    pub production: &'a Variant,
    /// The sampled variant (production's, or the audited one) and, for an
    /// audit, the baseline its new skips are against.
    pub sampled: &'a Variant,
    pub baseline: Option<&'a Variant>,
    pub population: crate::replay::design::Population,
    pub strata_key: String,
    pub salt: String,
    pub designed: &'a Designed,
    pub traffic: &'a super::scan::Traffic,
    /// The deployment imported input was derived with (None: traffic).
    pub deployment: Option<crate::deployment::Deployment>,
    /// What the pass found wrong with the config (production's is
    /// probably another).
    pub warnings: &'a [String],
}

/// Claim the folder and write the three files; plan.toml as written.
pub fn all(m: &Made) -> crate::Result<PlanFile> {
    let out = &m.request.out;
    crate::report::claim_job_dir(out, &m.request.sources, "plan", m.request.pass.force)?;
    let (file, toml) = plan_toml(m)?;
    crate::report::put(out, "plan.csv", &plan_csv(m)?)?;
    crate::report::put(out, "plan.md", plan_md(m, &file.plan_id).as_bytes())?;
    crate::report::put(out, "plan.toml", toml.as_bytes())?;
    Ok(file)
}

/// plan.toml and its text: the id is the XXH3-64 of the text written
/// with an empty id.
fn plan_toml(m: &Made) -> crate::Result<(PlanFile, String)> {
    let r = m.request;
    let (budget, budget_value) = match r.budget {
        Budget::Rate(x) => ("max_skip_regression_rate", x),
        Budget::HarmfulPer1k(h) => ("max_harmful_per_1k", h),
    };
    let traffic = r
        .sources
        .iter()
        .map(|name| {
            let d = (name != "-")
                .then(|| crate::summary::manifest::digest(std::path::Path::new(name)).ok())
                .flatten();
            Source {
                name: name.clone(),
                bytes: d.map(|d| d.0),
                xxh3: d.map(|d| format!("{:016x}", d.1)),
            }
        })
        .collect();
    let mut file = PlanFile {
        format: PLAN_FORMAT,
        plan_id: String::new(),
        salt: m.salt.clone(),
        production: m.production.name.clone(),
        population: m.population.name().into(),
        variant: m.sampled.name.clone(),
        budget: budget.into(),
        budget_value,
        rate: m.designed.rate,
        confidence: r.confidence,
        window_days: r.window_days,
        method: METHOD.into(),
        strata: m.strata_key.clone(),
        expected_calls_per_day: sig(Some(m.designed.pooled.calls_per_day)).unwrap_or(0.0),
        default_probability: super::default_probability(&m.designed.strata),
        days_from: match r.days {
            Some(_) => "given".into(),
            None => "ts".into(),
        },
        days: m.designed.days,
        traffic,
        false_alarm_every_days: r.false_alarm_days,
        alarm_rise: super::sizing::ALARM_RISE,
        fidelity_probability: r.fidelity_share,
        fidelity_calls_per_day: sig(Some(
            r.fidelity_share * m.traffic.reviewed_fires as f64 / m.designed.days,
        ))
        .unwrap_or(0.0),
        gate: m.sampled.config.clone(),
        baseline_gate: m.baseline.map(|b| b.config.clone()),
        deployment: m.deployment.clone(),
        stratum: m
            .designed
            .strata
            .iter()
            .map(|s| Stratum {
                value: s.volume.stratum.clone(),
                probability: s.probability,
                expected_calls_per_day: sig(Some(s.calls_per_day)).unwrap_or(0.0),
                expected_chart_labels_per_day: sig(Some(s.chart_labels_per_day)),
                alarm_up: s.chart.map(|c| c.up),
                alarm_h: s.chart.map(|c| c.h),
            })
            .collect(),
    };
    let text = |f: &PlanFile| {
        toml::to_string(f).map_err(|e| Error::usage(format!("plan.toml cannot be written: {e}")))
    };
    file.plan_id = format!(
        "{:016x}",
        xxhash_rust::xxh3::xxh3_64(text(&file)?.as_bytes())
    );
    let head = "# critic-gate plan: which of production's skips a critic reviews, and why.\n# Written by `critic-gate plan`; read by `sample`, `labels` and the exploration\n# gate. Edit nothing: plan_id is the hash of the rest.\n";
    let written = format!("{head}{}", text(&file)?);
    Ok((file, written))
}

/// plan.csv: one row per stratum, then the pooled row.
fn plan_csv(m: &Made) -> crate::Result<Vec<u8>> {
    let file = "plan.csv";
    let usd = m.traffic.usd_per_call();
    let rows: Vec<&Sized> = m
        .designed
        .strata
        .iter()
        .chain([&m.designed.pooled])
        .collect();
    let s = |f: &dyn Fn(&Sized) -> Option<String>| Col::Str(rows.iter().map(|x| f(x)).collect());
    let u = |f: &dyn Fn(&Sized) -> u64| Col::U64(rows.iter().map(|x| f(x)).collect());
    let ou = |f: &dyn Fn(&Sized) -> Option<u64>| Col::OptU64(rows.iter().map(|x| f(x)).collect());
    let x = |f: &dyn Fn(&Sized) -> Option<f64>| Col::F64(rows.iter().map(|x| sig(f(x))).collect());
    let cols = vec![
        ("stratum", s(&|r| Some(r.volume.stratum.clone()))),
        ("turns", u(&|r| r.volume.turns)),
        ("skips", u(&|r| r.volume.skips)),
        ("skips_per_day", x(&|r| Some(r.skips_per_day))),
        ("labelled", u(&|r| r.volume.labelled)),
        ("regressions", u(&|r| r.volume.regressions)),
        ("prior", x(&|r| r.volume.prior())),
        ("labels_to_certify", ou(&|r| r.labels_zero)),
        ("labels_for_power", ou(&|r| r.labels_power)),
        ("probability", x(&|r| Some(r.probability))),
        ("calls_per_day", x(&|r| Some(r.calls_per_day))),
        ("chart_labels_per_day", x(&|r| Some(r.chart_labels_per_day))),
        ("usd_per_day", x(&|r| usd.map(|c| c.usd * r.calls_per_day))),
        ("days_to_certify", x(&|r| r.days_zero)),
        ("days_for_power", x(&|r| r.days_power)),
        ("days_to_certify_anytime", x(&|r| r.days_certify_anytime)),
        ("days_to_detect_2r", x(&|r| r.days_detect_2r)),
        ("days_to_detect_3r", x(&|r| r.days_detect_3r)),
    ];
    let fail = |e: WriteFailure| Error::Write(crate::Failure::caused(format!("{file}: {e}"), e));
    let declared = crate::summary::schema::table(file).columns_for(&[]);
    let mut df = declared_frame(file, &declared, cols).map_err(fail)?;
    let mut bytes = Vec::new();
    write_csv(&mut df, &mut bytes, true).map_err(fail)?;
    Ok(bytes)
}

/// What a design cannot keep of its promise, stratum by stratum: those
/// that need longer than the window with every skip reviewed, those
/// whose prior is at or above the rate, and those with no skip in the
/// traffic (sampled at the highest probability). Empty when each stratum
/// with skips certifies within the window at its target.
pub fn exceptions(d: &Designed, window: f64) -> Vec<String> {
    let mut out = Vec::new();
    if !d.folded.is_empty() {
        let shown: Vec<String> = d
            .folded
            .iter()
            .take(8)
            .map(|s| crate::summary::text::one_line(s).into_owned())
            .collect();
        let more = match d.folded.len() > shown.len() {
            true => format!(" and {} more", d.folded.len() - shown.len()),
            false => String::new(),
        };
        out.push(format!(
            "{} strata too small for a promise of their own (fewer skips in the window than the labels that certify the rate with no regression) are one `(other)` stratum, with any value the plan has not seen: {}{more}",
            d.folded.len(),
            shown.join(", ")
        ));
    }
    for s in &d.strata {
        // A traffic value: one line, whatever it holds.
        let name = crate::summary::text::one_line(&s.volume.stratum);
        let days = s.days_power.or(s.days_zero);
        match s.volume.prior() {
            _ if s.volume.skips == 0 => out.push(format!(
                "{name}: no skip in this traffic, sampled at the highest probability ({})",
                s.probability
            )),
            Some(p) if p >= d.rate => out.push(format!(
                "{name}: its prior ({:.4}, from {} regressions in {} labels) is at or above the rate, so the sample is not expected to certify it (sized for the zero-regression count)",
                p, s.volume.regressions, s.volume.labelled
            )),
            _ => {}
        }
        if let Some(t) = days.filter(|t| *t > window * (1.0 + 1e-9)) {
            out.push(format!(
                "{name}: too few skips for the window: every skip is reviewed and its labels take about {t:.1} days"
            ));
        }
    }
    out
}

/// A number of days, or `n/a`.
fn days(x: Option<f64>) -> String {
    x.map_or("n/a".into(), |d| format!("{d:.1}"))
}

/// A count, or `n/a`.
fn n(x: Option<u64>) -> String {
    x.map_or("n/a".into(), |n| n.to_string())
}

/// plan.md: the design first, then each stratum, then what it rests on.
fn plan_md(m: &Made, id: &str) -> String {
    let d = m.designed;
    let p = &d.pooled;
    let usd = m.traffic.usd_per_call();
    let mut s = String::new();
    let _ = writeln!(s, "# critic-gate plan `{id}`\n");
    let _ = writeln!(
        s,
        "A critic sample of {}, sized to certify their regression rate at most **{}** at {}% confidence within **{} days** in each stratum: about **{:.1} shadow critic calls a day** ({:.2}% of its {:.1} a day){}.\n",
        md_text(&m.population.words(&m.sampled.name)),
        sig(Some(d.rate)).unwrap_or(d.rate),
        m.request.confidence * 100.0,
        m.request.window_days,
        p.calls_per_day,
        100.0 * p.probability,
        p.skips_per_day,
        usd.map_or(" (dollars not reported: no recorded critic call has a price)".into(), |c| format!(", about ${:.2} a day at ${:.4} a call ({})", c.usd * p.calls_per_day, c.usd, c.basis())),
    );
    let late = exceptions(d, m.request.window_days);
    if !late.is_empty() {
        let _ = writeln!(s, "**Not every stratum keeps that promise:**\n");
        for e in &late {
            let _ = writeln!(s, "- {}", md_text(e));
        }
        s.push('\n');
    }
    let _ = writeln!(s, "| stratum | skips a day | prior | probability | calls a day | labels to certify (80% power) | days to certify (80% power) | days to detect 2R (3R) |");
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for (i, r) in d.strata.iter().chain([p]).enumerate() {
        let prior = match r.volume.labelled {
            0 => "none".to_string(),
            l => format!(
                "{} of {l} ({:.4})",
                r.volume.regressions,
                r.volume.prior().unwrap_or(1.0)
            ),
        };
        let name = match i == d.strata.len() {
            true => "**all**".to_string(),
            false => md_text(&r.volume.stratum),
        };
        let _ = writeln!(
            s,
            "| {name} | {:.1} | {prior} | {:.6} | {:.2} | {} ({}) | {} ({}) | {} ({}) |",
            r.skips_per_day,
            r.probability,
            r.calls_per_day,
            n(r.labels_zero),
            n(r.labels_power),
            days(r.days_zero),
            days(r.days_power),
            days(r.days_detect_2r),
            days(r.days_detect_3r),
        );
    }
    let _ = writeln!(s, "\n`labels to certify`: labelled skips with which, none a regression, the exact one-sided bound is within the rate; `80% power`: those from which on the bound comes out within it with 80% chance at the stratum's prior, the 50% upper bound of the regressions among its labelled skips in this traffic (in traffic recorded under the legacy gate, the critic reviewed most of the turns the smart gate skips). A stratum's probability collects its labels within the window, at most every skip. The 80% is each stratum's own: that every one of k strata certifies is less likely (about 0.8^k when they are alike). The pooled row sums the calls; with several strata its labels and days are left out, as a bound on the pooled rate from strata drawn at unequal probabilities is a weighted, design-based one. The bound a sample gives is on the rate of the period it was drawn from, whatever the correlation of skips within a conversation.");
    notes(&mut s, m);
    s
}

/// What the plan rests on, and what it does not yet say.
fn notes(s: &mut String, m: &Made) {
    let t = m.traffic;
    let _ = writeln!(s, "\n## What it rests on\n");
    for w in m.warnings {
        let _ = writeln!(s, "- **Warning:** {}.", crate::summary::text::md_text(w));
    }
    let _ = writeln!(
        s,
        "- {} turns read ({} rejected) over {} days ({}); method: {METHOD}.",
        t.turns,
        t.rejected,
        m.designed.days,
        match (m.request.days, t.days()) {
            (Some(_), Some(span)) => format!("given; the recorded ts span {span:.2} days"),
            (Some(_), None) => "given".to_string(),
            _ => "the time elapsed from the first recorded ts to the last".to_string(),
        }
    );
    if t.without_ts > 0 {
        let _ = writeln!(
            s,
            "- {} turns record no `ts`: counted in the volumes, not in the days.",
            t.without_ts
        );
    }
    if t.folded_turns > 0 {
        let _ = writeln!(
            s,
            "- {} turns of strata past the first {} values are one `(other)` stratum.",
            t.folded_turns,
            super::scan::MAX_STRATA
        );
    }
    if let Budget::HarmfulPer1k(h) = m.request.budget {
        let _ = writeln!(
            s,
            "- At most {h} harmful skips per 1,000 turns is a rate of {} on production's skips at this traffic's skip share.",
            m.designed.rate
        );
    }
    let _ = writeln!(s, "- Days to detect: the median days a change alarm on the stratum's labels takes to fire once its rate has risen to 2R (3R), from a calm start: a Bernoulli CUSUM for a doubling of R, in whole units, whose average run length at R is {} days of labels (false_alarm_every_days); the run length is that of the chart's exact Markov chain. With several strata the pooled row leaves them out.", m.request.false_alarm_days);
}

/// What `plan` prints.
pub fn summary_text(m: &Made, id: &str) -> String {
    let p = &m.designed.pooled;
    let late = exceptions(m.designed, m.request.window_days);
    let strata = match m.designed.strata.len() {
        1 => String::new(),
        k => format!(" in each of {k} strata"),
    };
    let mut s = format!(
        "plan {id}: about {:.1} shadow critic calls a day ({:.2}% of {:.1} a day of {}) are sized to certify a regression rate at most {}{strata} within {} days\n",
        p.calls_per_day,
        100.0 * p.probability,
        p.skips_per_day,
        m.population.words(&m.sampled.name),
        sig(Some(m.designed.rate)).unwrap_or(m.designed.rate),
        m.request.window_days,
    );
    if !late.is_empty() {
        s.push_str(&format!(
            "but not every stratum keeps that promise ({}):\n",
            late.len()
        ));
        for e in late.iter().take(10) {
            s.push_str(&format!("  {e}\n"));
        }
    }
    if m.request.fidelity_share > 0.0 {
        s.push_str(&format!(
            "and about {:.1} a day of production's reviewed fires ({}) for the fidelity check\n",
            m.request.fidelity_share * m.traffic.reviewed_fires as f64 / m.designed.days,
            sig(Some(m.request.fidelity_share)).unwrap_or(0.0)
        ));
    }
    for w in m.warnings {
        s.push_str(&format!("WARNING: {w}\n"));
    }
    s.push_str(&format!(
        "plan: {}\n",
        m.request.out.join("plan.toml").display()
    ));
    s
}
