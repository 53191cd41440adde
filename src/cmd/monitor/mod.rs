//! `monitor`: watch a deployed gate period by period. It reads traffic
//! labelled by a plan's sample (`labels`, or the exploration gate), cuts
//! it into days, weeks or releases, and per period, stratum and pooled
//! says what the sample shows of production's skips: the estimate, the
//! period's own bound, a bound on everything so far that holds however
//! often it is looked at, a change alarm, and a status. `--state` keeps
//! the counts so a daily run reads only the new day; shards' states merge.

pub mod looks;
pub mod period;
pub mod simulation;
pub mod state;
mod write;

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::cmd::args::Flags;
use crate::cmd::{Config, Pass};
use crate::options::{Setting, Values};
use crate::replay::design::{Design, Population, Strata};
use crate::replay::options::Format;
use crate::summary::text::one_line;
use crate::Error;
use looks::{Decider, Row, Status, Watch};
use period::Cut;
use state::{Period, State};

/// The command's one line in `critic-gate --help`, and the first of its
/// own `--help`.
pub const ABOUT: &str = "Watch a deployed gate period by period: the sample's estimate, bounds \
     valid at every look, a change alarm and a status";

/// What `--help` adds after the options.
pub const HELP: &str = "Examples:
  critic-gate monitor labelled.jsonl --plan plan/plan.toml --config gate.toml --out watch
  critic-gate monitor today.jsonl --plan plan/plan.toml --config gate.toml --state watch.state --out watch --force
  critic-gate monitor --merge eu.state --merge us.state --state all.state --plan plan/plan.toml --out watch

Exit codes: 0 within the budget (or too few labels to tell); 1 a change alarm, or the rate above the budget; 2 the tool could not do its job (nothing written).
Reference: docs/watching.md.";

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Labelled traffic files in critic-gate's format (what `labels`
    /// writes, or an exploration gate's recording).
    pub files: Vec<String>,
    /// The plan the sample was drawn by (plan.toml).
    #[arg(long)]
    pub plan: PathBuf,
    /// Gate config: its production variant must have the plan's gate
    /// settings (default: symfonic's defaults).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Folder for monitor.csv, monitor.md and monitor.svg.
    #[arg(long)]
    pub out: PathBuf,
    /// The declared options (`options::MONITOR`).
    #[command(flatten)]
    pub flags: Flags<super::args::Monitor>,
}

impl Args {
    /// The request these flags make.
    pub fn request(&self) -> Request {
        Request::of(
            self.files.clone(),
            self.plan.clone(),
            self.config.clone().into(),
            self.out.clone(),
            &self.flags.values,
        )
    }
}

impl Request {
    /// The request the declared options (`options::MONITOR`) make, from
    /// either front end.
    pub fn of(
        sources: Vec<String>,
        plan: PathBuf,
        config: Config,
        out: PathBuf,
        v: &Values,
    ) -> Request {
        let declared = "declared with a default";
        Request {
            sources,
            plan,
            config,
            out,
            by: v.name(Setting::By).expect(declared),
            release_at: v.list(Setting::ReleaseAt).unwrap_or_default(),
            release_field: v.text(Setting::ReleaseField),
            timezone: v.text(Setting::Timezone).expect(declared),
            state: v.path(Setting::State),
            merge: v.paths(Setting::Merge).unwrap_or_default(),
            format: v.name(Setting::Format).expect(declared),
            max_fidelity_gap: v.share(Setting::MaxFidelityGap).expect(declared),
            false_alarm_every: v.number(Setting::FalseAlarmEvery),
            alarm_rise: v.number(Setting::AlarmRise),
            assume_missing_at_random: crate::cmd::assumed(v),
            pass: Pass::of(v),
        }
    }
}

/// What to watch.
#[derive(Clone, Debug)]
pub struct Request {
    pub sources: Vec<String>,
    pub plan: PathBuf,
    pub config: Config,
    pub out: PathBuf,
    pub by: String,
    pub release_at: Vec<String>,
    pub release_field: Option<String>,
    /// The offset whose calendar days the periods are: `UTC` or
    /// `+HH:MM` / `-HH:MM`.
    pub timezone: String,
    pub state: Option<PathBuf>,
    pub merge: Vec<PathBuf>,
    pub format: Format,
    pub max_fidelity_gap: f64,
    /// The change alarm redesigned (None: as the plan designed it).
    pub false_alarm_every: Option<f64>,
    pub alarm_rise: Option<f64>,
    /// The status reads the bounds that take failed calls as missing at
    /// random (None: as the config's `[monitor]` says, else not).
    pub assume_missing_at_random: Option<bool>,
    /// How the traffic is read, and whether `out` may be overwritten.
    pub pass: Pass,
}

/// What `monitor` found.
pub struct Watched {
    pub rows: Vec<Row>,
    /// The pooled row of the last period.
    pub last: Option<Row>,
    /// True when the pooled status is an alarm or above the budget.
    pub failed: bool,
    pub text: String,
    /// What the run found wrong with the traffic or the config (also in
    /// `text` and monitor.md).
    pub warnings: Vec<String>,
}

/// Refuse a run with nothing to read: no traffic, no shard and no state
/// that exists.
fn something_to_read(r: &Request) -> crate::Result<()> {
    if !(r.sources.is_empty() && r.merge.is_empty()) {
        return Ok(());
    }
    match &r.state {
        None => Err(Error::Usage(crate::said![
            "give labelled traffic files, shards' states to ",
            crate::vocab::Setting::Merge,
            ", or a ",
            crate::vocab::Setting::State,
            " to report"
        ])),
        Some(p) if !p.exists() => Err(Error::usage(format!(
            "{}: no such state, and no traffic or shard to count into it",
            p.display()
        ))),
        Some(_) => Ok(()),
    }
}

/// Watch.
pub fn run(r: &Request) -> crate::Result<Watched> {
    let usage = |m: crate::options::Said| Error::Usage(m);
    let text = |m: String| Error::usage(m);
    something_to_read(r)?;
    let config = r.config.plan()?;
    let plan = super::sample::read_plan(&r.plan)?;
    let design = super::sample::design_from(&r.plan, &plan, &config)?;
    if design.population != Population::ProductionSkips {
        return Err(usage(crate::said![format!("{}: an audit plan samples a candidate's new skips before the switch; monitor watches production's skips after it (read an audit with replay ", r.plan.display()), crate::vocab::Setting::Plan, ")"]));
    }
    let field = release_field(r.release_field.as_deref()).map_err(text)?;
    let name = r.release_field.as_deref();
    let cut = Cut::parse(&r.by, &r.release_at, field.is_some()).map_err(usage)?;
    let assumed = r
        .assume_missing_at_random
        .or(config.monitor.assume_missing_at_random);
    let decider = Decider::of(assumed.unwrap_or(false));
    let watch = watch_of(&plan, r.false_alarm_every, r.alarm_rise, decider)?;
    crate::cmd::share(
        crate::options::Setting::MaxFidelityGap,
        r.max_fidelity_gap,
        false,
    )?;
    // Held until the state is written: two runs on one state would lose a
    // day.
    let _lock = r.state.as_deref().map(write::Lock::take).transpose()?;
    let mut state = match &r.state {
        Some(p) if p.exists() => State::read(p, &design, name)?,
        _ => State::new(&design.plan_id, name),
    };
    for m in &r.merge {
        let shard = State::read(m, &design, name)?;
        state.merge(shard, m)?;
    }
    let mut rejected = 0;
    let mut warnings = Vec::new();
    if !r.sources.is_empty() {
        let (new, skipped, differs) = count(r, &design, &config, field.as_ref())?;
        rejected = skipped;
        warnings.extend(differs);
        state.extend(new, &r.sources.join(", "))?;
    }
    warnings.extend(unkeyed(&state, &design));
    // A Ctrl-C while counting: the state is not advanced, nothing written.
    r.pass.stop.check()?;
    let rows = looks::rows(&state, &cut, &watch);
    let last = rows.iter().rev().find(|x| x.stratum == "all").cloned();
    // The state is written whole before the files and moved into place
    // after them: a failure of either leaves the state as it was.
    let pending = r
        .state
        .as_deref()
        .map(|p| write::state(p, &state))
        .transpose()?;
    write::all(r, &rows, &watch, &plan, &warnings)?;
    if let Some(f) = pending {
        f.finish().map_err(|e| {
            Error::Write(crate::Failure::caused(
                format!("the monitor's state: {e}"),
                e,
            ))
        })?;
    }
    let failed = last
        .as_ref()
        .is_some_and(|x| matches!(x.status, Status::Alarm | Status::Above));
    let text = said(last.as_ref(), &watch, r, rejected, &warnings);
    Ok(Watched {
        rows,
        last,
        failed,
        text,
        warnings,
    })
}

/// What the state's days say of production's fires without `turn_id`
/// (`crate::summary::build::unkeyed_fires`).
fn unkeyed(state: &State, design: &Design) -> Option<String> {
    let mut keyed = crate::replay::design::Keyed::default();
    for p in state.days.values() {
        keyed.merge(&p.design.keyed);
    }
    crate::summary::build::unkeyed_fires(&design.variant, &keyed)
}

/// The release field's path into the scope, or why it is none.
fn release_field(f: Option<&str>) -> Result<Option<Strata>, String> {
    match f.map(|f| Strata::parse(Some(f))) {
        None => Ok(None),
        Some(Ok(s @ Strata::Scope(_))) => Ok(Some(s)),
        Some(_) => Err(format!(
            "release field {:?}: give a path into the turns' scope (scope.app_version)",
            f.unwrap_or_default()
        )),
    }
}

/// What the looks need of plan.toml, with the change alarm redesigned
/// where `days` or `rise` is given, the status decided by `decided_by`.
fn watch_of(
    plan: &super::plan::write::PlanFile,
    days: Option<f64>,
    rise: Option<f64>,
    decided_by: Decider,
) -> crate::Result<Watch> {
    let redesign = days.is_some() || rise.is_some();
    let days = days.unwrap_or(plan.false_alarm_every_days);
    let rise = rise.unwrap_or(plan.alarm_rise);
    if !(rise > 1.0 && rise * plan.rate < 1.0) {
        return Err(Error::usage(crate::said![
            Setting::AlarmRise,
            format!(" {rise}: give K above 1 with K x R ({}) below 1", plan.rate)
        ]));
    }
    let with_calls = plan
        .stratum
        .iter()
        .filter(|s| s.expected_calls_per_day > 0.0)
        .count();
    let mut charts = BTreeMap::new();
    for s in &plan.stratum {
        let chart = match (redesign, s.alarm_up, s.alarm_h) {
            (true, _, _) => crate::cusum::Cusum::for_arl(
                plan.rate,
                rise * plan.rate,
                days * with_calls as f64
                    * s.expected_chart_labels_per_day
                        .unwrap_or(s.expected_calls_per_day),
            ),
            (false, Some(up), Some(h)) if up > 0 && h > 0 && h <= crate::cusum::MAX_H => {
                Some(crate::cusum::Cusum { up, h })
            }
            (false, None, None) => None,
            (false, up, h) => {
                return Err(Error::usage(format!(
                    "the plan's stratum {:?} has a change alarm of {up:?} units up and threshold {h:?}: not one plan writes",
                    s.value
                )))
            }
        };
        if let Some(c) = chart {
            charts.insert(s.value.clone(), c);
        }
    }
    Ok(Watch {
        rate: plan.rate,
        alpha: 1.0 - plan.confidence,
        charts,
        fidelity: plan.fidelity_probability > 0.0,
        false_alarm_days: days,
        rise,
        redesigned: redesign,
        decided_by,
    })
}

/// The traffic's periods, counted.
fn count(
    r: &Request,
    design: &Design,
    config: &crate::config::Plan,
    field: Option<&Strata>,
) -> crate::Result<(State, u64, Option<String>)> {
    let offset = period::offset_of(&r.timezone).map_err(Error::Usage)?;
    let member = super::sample::Member::new(design, config, &r.config)?;
    let decoder = crate::import::Decoder::new(
        r.pass.from,
        config.deployment.clone(),
        r.sources.clone().into(),
        r.pass.max_line_bytes,
    );
    let mut state = State::new(&design.plan_id, r.release_field.as_deref());
    for name in r.sources.iter().filter(|n| *n != "-") {
        let (bytes, h) = crate::summary::manifest::digest(std::path::Path::new(name))
            .map_err(|e| Error::Read(crate::Failure::caused(format!("{name}: {e}"), e)))?;
        if let Some(first) = state
            .sources
            .insert(format!("{h:016x}:{bytes}"), name.clone())
        {
            return Err(Error::usage(format!(
                "{name}: the traffic file is given twice (as {first} too): a file is counted once"
            )));
        }
    }
    let mut problem: Option<Error> = None;
    let mut undated = 0u64;
    let mut probe = crate::replay::probe::ProbeTally::default();
    let read = crate::cmd::mine::scan::each_line(
        &r.sources,
        r.pass.max_line_bytes,
        r.pass.skip_invalid,
        &decoder,
        &mut |t, _, (source, line)| {
            if problem.is_some() {
                return;
            }
            let name = match period::slot_of(t, field, offset) {
                Ok(n) => n,
                Err(_) if r.pass.skip_invalid => {
                    undated += 1;
                    return;
                }
                Err(reason) => {
                    problem = Some(Error::InvalidLine {
                        source: r.sources[source].clone(),
                        line,
                        reason: crate::said![reason, ": monitor counts production's skips by day"],
                        skippable: false,
                    });
                    return;
                }
            };
            let p = state
                .days
                .entry(name)
                .or_insert_with(|| Period::new(design));
            let skipped = member.classify_probed(t, Some(&mut probe)).0;
            let (stratum, _) = design.stratum_of(&design.strata.of(t));
            let c = p.turns.entry(stratum).or_default();
            c.turns += 1;
            c.fires += u64::from(!skipped);
            if let Some(v) = p.design.add(design, t, skipped) {
                p.verdicts.push(v);
            }
        },
        &|| r.pass.stop.stopped(),
    )?;
    if let Some(e) = problem {
        return Err(e);
    }
    for p in state.days.values_mut() {
        p.verdicts.sort();
    }
    matches_plan(r, &state)?;
    let differs = member.config_differs(&probe);
    Ok((state, read.rejected + undated, differs))
}

/// Refuse traffic the plan did not sample: labels of another plan and none
/// of this one's.
fn matches_plan(r: &Request, s: &State) -> crate::Result<()> {
    let (ours, others) = s.days.values().fold((0, 0), |(a, b), p| {
        let labelled: u64 = p
            .design
            .strata
            .values()
            .map(|x| x.labelled() + x.failed)
            .sum();
        (a + labelled, b + p.design.other_plan)
    });
    if ours == 0 && others > 0 {
        return Err(Error::usage(format!(
            "{}: its {others} sampled labels are all of another plan than {} ({}): give the plan the sample was drawn by",
            r.sources.join(", "),
            r.plan.display(),
            s.plan_id
        )));
    }
    Ok(())
}

/// What `monitor` prints: the pooled status at the last look, then any
/// warning, note or lines left out.
fn said(
    last: Option<&Row>,
    w: &Watch,
    req: &Request,
    rejected: u64,
    warnings: &[String],
) -> String {
    let out = &req.out;
    let Some(x) = last else {
        return format!("monitor: no period counted yet: {}\n", out.display());
    };
    let r = crate::summary::numbers::sig(Some(w.rate)).unwrap_or(w.rate);
    let mut text = format!(
        "monitor: {}: {} ({} labels so far): {}\n",
        one_line(&x.period),
        status_words(x, r, w.alpha),
        x.cumulative_labelled,
        out.display()
    );
    if let Some(w) = fidelity_warning(x, req.max_fidelity_gap) {
        text.push_str(&format!("WARNING: {w}\n"));
    }
    if let Some(note) = x.withheld {
        text.push_str(&format!("NOTE: {note}\n"));
    }
    for w in warnings {
        text.push_str(&format!("WARNING: {w}\n"));
    }
    if rejected > 0 {
        text.push_str(
            &crate::said![
                format!("  {rejected} invalid traffic lines left out ("),
                crate::vocab::Setting::SkipInvalid,
                ")\n"
            ]
            .to_string(),
        );
    }
    text
}

/// A status in words, as monitor.md and stdout say it: which bound
/// decided, and under an assumption, that it was assumed.
pub fn status_words(x: &Row, r: f64, alpha: f64) -> String {
    let pct = percent;
    let conf = format!("{}%", ((1.0 - alpha) * 100.0).round());
    let (upper, lower) = (x.decided_by.upper(x), x.decided_by.lower(x));
    let bound = match x.decided_by {
        Decider::WorstCase => format!("anytime worst-case bound, {conf}: every drawn skip without a verdict counted against it"),
        Decider::MissingAtRandom => format!("anytime bound, {conf}; ASSUMED: failed shadow calls are missing at random, unrelated to their verdicts"),
    };
    let words = match x.status {
        Status::Certified => format!(
            "certified <= {r} since {}: production's skips so far regress at most {} ({bound})",
            one_line(&x.since),
            pct(upper)
        ),
        Status::Above => format!(
            "above {r} since {}: production's skips so far regress at least {} ({bound})",
            one_line(&x.since),
            pct(lower)
        ),
        Status::Alarm => format!(
            "change alarm since {}{}",
            one_line(&x.since),
            x.change_began
                .as_ref()
                .map_or(String::new(), |b| format!(" (the rise most likely began {})", one_line(b)))
        ),
        Status::TooFewLabels => format!(
            "too few labels to tell{}",
            match (x.labels_needed, x.decided_by, x.cumulative_failed) {
                (Some(n), Decider::WorstCase, f) if f > 0 => format!(
                    ": about {n} more at the current estimate, if no more shadow calls fail ({f} failed so far count as regressions in the worst case: answer them again to need fewer)"
                ),
                (Some(n), _, _) => format!(": about {n} more at the current estimate"),
                (None, Decider::WorstCase, f)
                    if f > 0 && x.cumulative_estimate.is_some_and(|e| e < r) =>
                    format!(
                    " ({f} failed shadow calls count as regressions in the worst case, which decides: answer them again, or assume they are missing at random)"
                ),
                (None, _, _) => " (no estimate below the budget yet)".to_string(),
            }
        ),
    };
    match x.decided_by {
        Decider::MissingAtRandom if x.status != Status::Alarm => format!("ASSUMED: {words}"),
        _ => words,
    }
}

/// A share as a percentage to three significant digits (`unknown` when
/// there is none).
pub fn percent(v: Option<f64>) -> String {
    match v {
        None => "unknown".into(),
        Some(v) if v <= 0.0 => "0%".into(),
        Some(v) => {
            let x = v * 100.0;
            let decimals = (2 - x.log10().floor() as i32).clamp(0, 6) as usize;
            format!("{x:.decimals$}%")
        }
    }
}

/// The warning the fidelity sample gives, when the shadow critic
/// disagrees with production's on more than `gap` of its reviewed fires
/// (the anytime lower bound above it): its verdicts on the skips may not
/// be the ones production's critic would give.
pub fn fidelity_warning(x: &Row, gap: f64) -> Option<String> {
    let f = x.fidelity?;
    let lower = f.lower.filter(|l| *l > gap)?;
    Some(format!(
        "the shadow critic disagrees with production's on {} of {} fires both reviewed; on all production's reviewed fires at least {} (anytime bound), above {}: its verdicts on the skips may not be the ones production's critic would give (it sees less context offline)",
        percent(f.disagreement),
        f.cumulative_pairs,
        percent(Some(lower)),
        percent(Some(gap))
    ))
}
