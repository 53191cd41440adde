//! `plan`: size a critic sample of production's skips for a bound on
//! their regression rate. It replays production's gate over recorded
//! traffic for the volumes per day and stratum, takes a prior from the
//! labels the traffic has (traffic recorded under the legacy gate labels
//! exactly these turns), and writes the inclusion probability of each
//! stratum with the salt of the one coin that draws the sample
//! (`crate::coin`): plan.toml for the tools, plan.md and plan.csv for
//! people.

pub mod scan;
mod simulation;
pub mod sizing;
pub mod write;

use crate::options::Setting;
use std::path::PathBuf;

use crate::cmd::args::Flags;
use crate::cmd::{Config, Pass};
use crate::import::InputFormat;
use crate::options::Values;
use crate::replay::design::Population;
use crate::replay::segments::OTHER;
use crate::summary::numbers::sig;
use sizing::{Goal, Sized, Volume};

/// The command's one line in `critic-gate --help`, and the first of its
/// own `--help`.
pub const ABOUT: &str = "Size a critic sample of production's skips for a bound on their \
     regression rate: a probability per stratum and the coin's salt";

/// What `--help` adds after the options: examples, exit codes, the
/// reference.
pub const HELP: &str = concat!(
    "Examples:
  critic-gate plan traffic.jsonl --config gate.toml --max-skip-regression-rate 0.01 --out plan
  critic-gate plan traffic.jsonl --config gate.toml --max-harmful-per-1k 0.5 --strata language --window 14d --max-calls-per-day 200 --out plan

",
    super::args::done!(),
    " A budget the call cap cannot meet exits 2 with the best rate it can, and writes nothing.
Reference: docs/watching.md."
);

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("budget").required(true).args(["max-skip-regression-rate", "max-harmful-per-1k"])))]
pub struct Args {
    /// Traffic files (JSON Lines; plain, .gz or .zst; or transcripts or
    /// traces, with --from).
    #[arg(required = true)]
    pub files: Vec<String>,
    /// Folder for plan.toml, plan.md and plan.csv.
    #[arg(long)]
    pub out: PathBuf,
    /// Gate config; its `production` (by default the baseline) is the gate
    /// whose skips are sampled.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The declared options (`options::PLAN_OPTIONS`).
    #[command(flatten)]
    pub flags: Flags<super::args::Plan>,
}

impl Args {
    /// The request these flags make.
    pub fn request(&self) -> crate::Result<Request> {
        Request::of(
            self.files.clone(),
            self.out.clone(),
            self.config.clone().into(),
            &self.flags.values,
        )
    }
}

impl Request {
    /// The request the declared options (`options::PLAN_OPTIONS`) make,
    /// from either front end: one of the two budgets, or a usage error.
    pub fn of(
        sources: Vec<String>,
        out: PathBuf,
        config: Config,
        v: &Values,
    ) -> crate::Result<Request> {
        let budget = match (
            v.share(Setting::MaxSkipRegressionRate),
            v.number(Setting::MaxHarmfulPer1k),
        ) {
            (Some(r), None) => Budget::Rate(r),
            (None, Some(h)) => Budget::HarmfulPer1k(h),
            _ => {
                return Err(crate::Error::usage(crate::said![
                    "give ",
                    Setting::MaxSkipRegressionRate,
                    " or ",
                    Setting::MaxHarmfulPer1k,
                    " (one of them)"
                ]))
            }
        };
        let declared = "a declared option with a default";
        Ok(Request {
            sources,
            out,
            config,
            budget,
            confidence: v.share(Setting::Confidence).expect(declared),
            window_days: v.number(Setting::Window).expect(declared),
            strata: v.text(Setting::Strata),
            max_calls_per_day: v.number(Setting::MaxCallsPerDay),
            salt: v.text(Setting::Salt),
            days: v.number(Setting::Days),
            false_alarm_days: v.number(Setting::FalseAlarmEvery).expect(declared),
            fidelity_share: v.share(Setting::FidelityShare).expect(declared),
            audit: v.text(Setting::Audit),
            legacy_production: v.switch(Setting::LegacyProduction),
            pass: Pass::of(v),
        })
    }
}

/// The bound a plan is sized for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Budget {
    /// The regression rate of production's skips at most R.
    Rate(f64),
    /// At most H harmful skips per 1,000 turns.
    HarmfulPer1k(f64),
}

/// What to plan.
#[derive(Clone, Debug)]
pub struct Request {
    pub sources: Vec<String>,
    pub out: PathBuf,
    pub config: Config,
    pub budget: Budget,
    pub confidence: f64,
    pub window_days: f64,
    /// The change alarm's average run length at R, in days.
    pub false_alarm_days: f64,
    /// The probability a fire of production's with a verdict is also
    /// sent to the shadow critic (0: no fidelity sample).
    pub fidelity_share: f64,
    /// A candidate whose unlabelled new skips are sampled (None:
    /// production's skips).
    pub audit: Option<String>,
    /// Sample a legacy gate's skips as production's (refused otherwise).
    pub legacy_production: bool,
    pub strata: Option<String>,
    pub max_calls_per_day: Option<f64>,
    /// None: a fresh random salt.
    pub salt: Option<String>,
    /// The days the traffic covers, where it records no `ts`.
    pub days: Option<f64>,
    /// How the traffic is read, and whether `out` may be overwritten.
    pub pass: Pass,
}

/// A plan made: what was read, the design per stratum and pooled, and the
/// text `plan` prints.
pub struct Planned {
    pub traffic: scan::Traffic,
    pub rate: f64,
    pub days: f64,
    pub strata: Vec<Sized>,
    pub pooled: Sized,
    /// plan.toml, as written.
    pub file: write::PlanFile,
    pub text: String,
    /// What the plan cannot keep of its promise (strata that will not
    /// certify in time) and what the pass found wrong with the config:
    /// also in `text`.
    pub caveats: Vec<String>,
}

/// Plan into the request's folder.
pub fn run(r: &Request) -> crate::Result<Planned> {
    let usage = |m: String| crate::Error::Usage(m.into());
    crate::cmd::share(Setting::Confidence, r.confidence, false)?;
    if let Some(n) = r.max_calls_per_day.filter(|n| !(n.is_finite() && *n > 0.0)) {
        return Err(crate::Error::usage(crate::said![
            Setting::MaxCallsPerDay,
            format!(": give a number above 0, got {n}")
        ]));
    }
    let strata = scan::Strata::parse(r.strata.as_deref()).map_err(usage)?;
    crate::cmd::share(Setting::FidelityShare, r.fidelity_share, true)?;
    if r.fidelity_share > 0.0 && r.audit.is_some() {
        return Err(crate::Error::usage(crate::said![Setting::FidelityShare, " goes with a plan of production's skips, not an audit: an audit's recording has production's critic on every fire already"]));
    }
    let plan = r.config.plan()?;
    let prod = &plan.variants[plan.production()];
    let (population, sampled) = sampled_of(r, &plan)?;
    let member = crate::cmd::sample::Member::of(population, sampled, &plan, &r.config)?;
    crate::report::check_out_dir(&r.out, &r.sources, r.pass.force)?;
    let traffic = read_traffic(r, &plan, &member, &strata)?;
    let designed = design(r, &traffic)?;
    let salt = match &r.salt {
        Some(s) if !s.is_empty() => s.clone(),
        Some(_) => {
            return Err(crate::Error::usage(crate::said![
                Setting::Salt,
                ": give a non-empty salt"
            ]))
        }
        None => crate::coin::fresh_salt().map_err(usage)?,
    };
    let warnings: Vec<String> = member.config_differs(&traffic.probe).into_iter().collect();
    let made = write::Made {
        request: r,
        production: prod,
        sampled,
        baseline: (population == Population::UnlabelledNewSkips)
            .then(|| &plan.variants[plan.baseline]),
        population,
        strata_key: strata.name(),
        salt,
        designed: &designed,
        traffic: &traffic,
        deployment: match r.pass.from {
            InputFormat::Traffic => None,
            InputFormat::OpenaiChat | InputFormat::Otlp => Some(plan.deployment.clone()),
        },
        warnings: &warnings,
    };
    // A Ctrl-C while it was sizing: nothing is written.
    r.pass.stop.check()?;
    let file = crate::report::or_remove_new(&r.out, || write::all(&made))?;
    let text = write::summary_text(&made, &file.plan_id);
    let caveats = write::exceptions(&designed, r.window_days)
        .into_iter()
        .chain(warnings)
        .collect();
    Ok(Planned {
        traffic,
        rate: designed.rate,
        days: designed.days,
        strata: designed.strata,
        pooled: designed.pooled,
        file,
        text,
        caveats,
    })
}

/// The pass over the traffic: production's skips per stratum, and what
/// else the plan is sized from.
fn read_traffic(
    r: &Request,
    plan: &crate::config::Plan,
    member: &crate::cmd::sample::Member,
    strata: &scan::Strata,
) -> crate::Result<scan::Traffic> {
    let decoder = crate::import::Decoder::new(
        r.pass.from,
        plan.deployment.clone(),
        r.sources.clone().into(),
        r.pass.max_line_bytes,
    );
    let mut traffic = scan::Traffic::default();
    let read = crate::cmd::mine::scan::each_line(
        &r.sources,
        r.pass.max_line_bytes,
        r.pass.skip_invalid,
        &decoder,
        &mut |t, _, _| traffic.add(t, member, strata, &plan.cost),
        &|| r.pass.stop.stopped(),
    )?;
    (traffic.turns, traffic.rejected) = (read.turns, read.rejected);
    traffic.settle();
    Ok(traffic)
}

/// What the plan samples: production's skips, or (`audit`) a candidate's
/// unlabelled new skips.
fn sampled_of<'a>(
    r: &Request,
    plan: &'a crate::config::Plan,
) -> crate::Result<(Population, &'a crate::config::Variant)> {
    let Some(name) = &r.audit else {
        let production = &plan.variants[plan.production()];
        if !production.config.metacognition_selective_gate && !r.legacy_production {
            return Err(crate::Error::usage(crate::said![
                format!(
                    "{}production's gate, variant {}, is the legacy gate (`production` in the config names it; where it is not set, the baseline): after the switch production runs the smart gate, so set `production` to the variant it runs, or give ",
                    r.config.file().map_or(String::new(), |f| format!("{}: ", f.display())),
                    production.name,
                ),
                Setting::LegacyProduction,
                " to sample a legacy gate's skips"
            ]));
        }
        return Ok((Population::ProductionSkips, production));
    };
    let i = plan
        .variants
        .iter()
        .position(|v| &v.name == name)
        .ok_or_else(|| {
            let names: Vec<String> = plan
                .variants
                .iter()
                .map(|v| format!("`{}`", v.name))
                .collect();
            crate::Error::usage(crate::said![
                Setting::Audit,
                format!(
                    ": the config has no variant {name:?} (it has {})",
                    names.join(", ")
                )
            ])
        })?;
    if i == plan.baseline {
        return Err(crate::Error::usage(crate::said![
            Setting::Audit,
            format!(
                ": `{name}` is the baseline, which has no new skips to audit; name a candidate"
            )
        ]));
    }
    Ok((Population::UnlabelledNewSkips, &plan.variants[i]))
}

/// The design: the rate, the days the volumes are over, every stratum
/// sized, and the pooled row.
pub struct Designed {
    pub rate: f64,
    pub days: f64,
    pub goal: Goal,
    pub strata: Vec<Sized>,
    pub pooled: Sized,
    /// Strata folded into `(other)`: too small for a promise of their own.
    pub folded: Vec<String>,
}

/// Size every stratum; refuse a plan the traffic or the call cap cannot
/// carry, saying the best it can.
fn design(r: &Request, traffic: &scan::Traffic) -> crate::Result<Designed> {
    let usage = |m: String| crate::Error::Usage(m.into());
    let days = days_of(r, traffic)?;
    let mut all = Volume {
        stratum: "(all)".into(),
        ..Volume::default()
    };
    let vols: Vec<Volume> = traffic.strata.values().cloned().collect();
    vols.iter().for_each(|v| all.add(v));
    if all.skips == 0 {
        let what = match &r.audit {
            Some(v) => format!("`{v}` has no unlabelled new skip (a turn it skips that the baseline fires on, without a critic's verdict) among"),
            None => "production's gate skips none of".to_string(),
        };
        return Err(usage(format!(
            "{what} the {} turns: there is nothing to sample",
            traffic.turns
        )));
    }
    let rate = rate_of(r.budget, &all)?;
    let goal = Goal {
        rate,
        confidence: r.confidence,
        window_days: r.window_days,
    };
    let (vols, folded) = fold_small(vols, &goal, days);
    let calls = sizing::calls_per_day(&vols, &goal, days, rate);
    if let Some(cap) = r.max_calls_per_day.filter(|c| calls > *c) {
        let best = sizing::best_rate_under(&vols, &goal, days, cap);
        return Err(crate::Error::usage(crate::said![
            format!(
                "a rate of {} on production's skips takes about {calls:.1} shadow critic calls a day to certify within {} days, above ",
                sig(Some(rate)).unwrap_or(rate),
                r.window_days
            ),
            Setting::MaxCallsPerDay,
            format!(
                " {cap}; {}",
                best.map_or("no rate below 1 fits that cap".into(), |b| format!("the best rate it can certify there is {b}"))
            )
        ]));
    }
    if sizing::size(&all, &goal, rate, days).labels_zero.is_none() {
        return Err(usage(format!(
            "a rate of {} takes more than 2^53 labels to certify: give a larger budget",
            sig(Some(rate)).unwrap_or(rate)
        )));
    }
    let mut strata: Vec<Sized> = vols
        .iter()
        .map(|v| sizing::size(v, &goal, rate, days))
        .collect();
    floor_unseen(&mut strata);
    let charts = strata.iter().filter(|s| s.calls_per_day > 0.0).count();
    let alpha = 1.0 - r.confidence;
    for s in &mut strata {
        sizing::detection(s, rate, r.false_alarm_days, charts);
        s.days_certify_anytime =
            sizing::days_to_certify_anytime(&[(s.probability, s.skips_per_day)], rate, alpha);
    }
    let mut pooled = pooled(&all, &strata, &goal, days);
    pooled.days_certify_anytime = pooled_certify_days(&strata, rate, alpha);
    Ok(Designed {
        rate,
        days,
        goal,
        strata,
        pooled,
        folded,
    })
}

/// Strata too small for a promise of their own (fewer skips in the window
/// than the labels that certify R with no regression: reviewed whole,
/// they still cannot) folded into one `(other)` stratum, where their
/// skips pool (with any values folded there already); the names folded.
/// A value the plan never saw is then drawn at `(other)`'s probability,
/// not at the highest of the strata's. Nothing is folded where one
/// stratum alone would be.
fn fold_small(vols: Vec<Volume>, goal: &Goal, days: f64) -> (Vec<Volume>, Vec<String>) {
    let Some(need) = crate::stats::labels_needed(goal.rate, 1.0 - goal.confidence) else {
        return (vols, Vec::new());
    };
    let small =
        |v: &Volume| v.stratum != OTHER && (v.skips as f64 / days * goal.window_days) < need as f64;
    if vols.iter().filter(|v| small(v)).count() < 2 {
        return (vols, Vec::new());
    }
    let (small, mut kept): (Vec<Volume>, Vec<Volume>) = vols.into_iter().partition(small);
    let folded: Vec<String> = small.iter().map(|v| v.stratum.clone()).collect();
    let at = match kept.iter().position(|v| v.stratum == OTHER) {
        Some(i) => i,
        None => {
            kept.push(Volume {
                stratum: OTHER.to_string(),
                ..Volume::default()
            });
            kept.len() - 1
        }
    };
    for v in &small {
        kept[at].add(v);
    }
    kept.sort_by(|a, b| a.stratum.cmp(&b.stratum));
    (kept, folded)
}

/// The rate on production's skips the budget asks for: R itself, or H
/// harmful skips per 1,000 turns as a rate on the skips of `all`.
fn rate_of(budget: Budget, all: &Volume) -> crate::Result<f64> {
    Ok(match budget {
        Budget::Rate(x) => crate::cmd::share(Setting::MaxSkipRegressionRate, x, false)?,
        Budget::HarmfulPer1k(h) if h.is_finite() && h > 0.0 => {
            let x = sig(Some(h * all.turns as f64 / (1000.0 * all.skips as f64))).unwrap_or(0.0);
            match x < 1.0 {
                true => x,
                false => return Err(crate::Error::usage(crate::said![
                    Setting::MaxHarmfulPer1k,
                    format!(" {h}: production skips {} of {} turns, so even every skip harmful is within it; give a smaller H", all.skips, all.turns)
                ])),
            }
        }
        Budget::HarmfulPer1k(h) => {
            return Err(crate::Error::usage(crate::said![
                Setting::MaxHarmfulPer1k,
                format!(": give a number above 0, got {h}")
            ]))
        }
    })
}

/// The pooled row's days to certify at every look (`sizing::pooled_certify_days`).
fn pooled_certify_days(strata: &[Sized], rate: f64, alpha: f64) -> Option<f64> {
    let per_day: Vec<(f64, f64)> = strata
        .iter()
        .map(|s| (s.probability, s.skips_per_day))
        .collect();
    sizing::pooled_certify_days(&per_day, rate, alpha)
}

/// The days the volumes are over: `days` when given, else the span of
/// the recorded `ts` (the time elapsed, first to last). Traffic
/// where only some turns record a `ts` is refused without `days`: its
/// turns without one would count in the volumes but not in the days (a
/// day of `ts` among four weeks read as four weeks a day).
fn days_of(r: &Request, traffic: &scan::Traffic) -> crate::Result<f64> {
    let usage = |m: crate::options::Said| crate::Error::Usage(m);
    match (r.days, traffic.days()) {
        (Some(d), _) if d.is_finite() && d > 0.0 => Ok(d),
        (Some(d), _) => Err(usage(crate::said![
            Setting::Days,
            format!(": give a number above 0, got {d}")
        ])),
        (None, Some(_)) if traffic.without_ts > 0 => Err(usage(crate::said![
            format!(
                "{} of {} turns record no ts, so the days they cover are unknown: give the days the whole traffic covers (",
                traffic.without_ts, traffic.turns
            ),
            Setting::Days,
            ")"
        ])),
        (None, Some(d)) => Ok(d),
        (None, None) if traffic.first_ts.is_some() => Err(usage(crate::said![
            "the recorded ts span under an hour from the first to the last, too short to read volumes a day from: give the days the traffic covers (",
            Setting::Days,
            ")"
        ])),
        (None, None) => Err(usage(crate::said![
            "no turn records a ts, so the volumes a day are unknown: give the days the traffic covers (",
            Setting::Days,
            ")"
        ])),
    }
}

/// A stratum with no skips in this traffic has no volume to size for, but
/// its skips on new days must not go unsampled (no estimate holds where a
/// skip can have probability 0): it takes the highest probability of the
/// others, as does any value the plan has not seen (plan.toml's
/// `default_probability`).
fn floor_unseen(strata: &mut [Sized]) {
    let top = default_probability(strata);
    for s in strata.iter_mut().filter(|s| s.volume.skips == 0) {
        s.probability = top;
    }
}

/// The probability of a value the plan has not seen: the highest of its
/// strata's.
pub fn default_probability(strata: &[Sized]) -> f64 {
    strata.iter().map(|s| s.probability).fold(0.0, f64::max)
}

/// The pooled row: the strata's volumes and calls summed. Its labels and
/// days are left empty where there are several strata: a bound on the
/// pooled rate from strata drawn at unequal probabilities is a design-based
/// one (weighted), not the per-stratum count; with one stratum it is that
/// stratum's.
fn pooled(all: &Volume, strata: &[Sized], goal: &Goal, days: f64) -> Sized {
    if let [one] = strata {
        return Sized {
            volume: all.clone(),
            ..one.clone()
        };
    }
    let mut p = sizing::size(all, goal, goal.rate, days);
    p.calls_per_day = strata.iter().map(|s| s.calls_per_day).sum();
    p.chart_labels_per_day = strata.iter().map(|s| s.chart_labels_per_day).sum();
    p.probability = match p.skips_per_day > 0.0 {
        true => (p.calls_per_day / p.skips_per_day).min(1.0),
        false => 0.0,
    };
    (p.labels_zero, p.labels_power, p.days_zero, p.days_power) = (None, None, None, None);
    (p.days_detect_2r, p.days_detect_3r, p.chart) = (None, None, None);
    p
}
