//! `sample`: draw a plan's shadow sample from recorded traffic. Every turn
//! goes through production's gate (the plan's, held to the config's); each
//! skip is drawn by the one coin (`crate::coin`) at its stratum's
//! probability and, when drawn, written to requests.jsonl for a critic to
//! review; sample.json says per stratum how many were drawn against the
//! expected, with a binomial 99.9% band. Turns are drawn on the worker
//! pool and written in input order: the same requests in the same order
//! on every machine, shard layout and number of threads.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::cmd::args::Flags;
use crate::cmd::plan::scan::Strata;
use crate::cmd::plan::write::{PlanFile, PLAN_FORMAT};
use crate::cmd::{Config, Pass};
use crate::options::Values;
use crate::read::turn::Turn;
use crate::replay::design::{Design, Population};
use crate::Error;

/// The command's one line in `critic-gate --help`, and the first of its
/// own `--help`.
pub const ABOUT: &str = "Draw a plan's shadow sample of production's skips from recorded \
     traffic: requests.jsonl for a critic to review, and sample.json";

/// What `--help` adds after the options: examples, exit codes, the
/// reference.
pub const HELP: &str = concat!(
    "Example:
  critic-gate sample traffic.jsonl --plan plan/plan.toml --config gate.toml --out shadow

",
    super::args::done!(),
    "
Reference: docs/watching.md."
);

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Traffic files (JSON Lines; plain, .gz or .zst; or transcripts or
    /// traces, with --from).
    #[arg(required = true)]
    pub files: Vec<String>,
    /// The plan (plan.toml, written by `critic-gate plan`).
    #[arg(long)]
    pub plan: PathBuf,
    /// Gate config: its production variant must have the plan's gate
    /// settings (default: symfonic's defaults).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Folder for requests.jsonl and sample.json.
    #[arg(long)]
    pub out: PathBuf,
    /// The declared options (`options::SAMPLE`).
    #[command(flatten)]
    pub flags: Flags<super::args::Sample>,
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
    /// The request the declared options (`options::SAMPLE`) make, from
    /// either front end (the worker threads are the caller's to start).
    pub fn of(
        sources: Vec<String>,
        plan: PathBuf,
        config: Config,
        out: PathBuf,
        v: &Values,
    ) -> Request {
        Request {
            sources,
            plan,
            config,
            out,
            pass: Pass::of(v),
        }
    }
}

/// What to sample.
#[derive(Clone, Debug)]
pub struct Request {
    pub sources: Vec<String>,
    pub plan: PathBuf,
    pub config: Config,
    pub out: PathBuf,
    /// How the traffic is read, and whether `out` may be overwritten.
    pub pass: Pass,
}

/// Read a plan.toml, refusing one this build cannot use or one edited
/// after it was written (its id is the hash of the rest).
pub fn read_plan(path: &Path) -> crate::Result<PlanFile> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::Read(crate::Failure::caused(
            format!("{name}: cannot read the plan: {e}"),
            e,
        ))
    })?;
    plan_of(&name, &text, PlanText::Toml)
}

/// How a plan's text is written: plan.toml, or the same as JSON (what the
/// Python package's `plan()` returns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanText {
    Toml,
    Json,
}

/// A plan from its text (`name` for messages), held to what `plan`
/// writes: its format, its id the hash of the rest, its strata and its
/// probabilities.
pub fn plan_of(name: &str, text: &str, how: PlanText) -> crate::Result<PlanFile> {
    let bad = |m: String| Error::usage(format!("{name}: {m}"));
    let value = match how {
        PlanText::Toml => toml::from_str::<serde_json::Value>(text).map_err(|e| e.to_string()),
        PlanText::Json => serde_json::from_str(text).map_err(|e| e.to_string()),
    }
    .map_err(|e| bad(format!("not a plan.toml critic-gate plan writes: {e}")))?;
    // The format first: a plan of another build's format is refused as
    // such, not as a file with missing or unknown fields.
    let format = value.get("format").and_then(serde_json::Value::as_u64);
    match format {
        Some(PLAN_FORMAT) => {}
        Some(f) => {
            return Err(bad(format!(
                "plan format {f} is not this build's ({PLAN_FORMAT}); make the plan again with this build"
            )))
        }
        None => {
            return Err(bad(
                "not a plan.toml critic-gate plan writes: no whole-number format".into(),
            ))
        }
    }
    let plan: PlanFile = match how {
        PlanText::Toml => toml::from_str(text).map_err(|e| e.to_string()),
        PlanText::Json => serde_json::from_value(value).map_err(|e| e.to_string()),
    }
    .map_err(|e| bad(format!("not a plan.toml critic-gate plan writes: {e}")))?;
    let body = PlanFile {
        plan_id: String::new(),
        ..plan.clone()
    };
    let id = toml::to_string(&body)
        .map(|t| format!("{:016x}", xxhash_rust::xxh3::xxh3_64(t.as_bytes())))
        .map_err(|e| bad(e.to_string()))?;
    if id != plan.plan_id {
        return Err(bad(format!(
            "plan_id {} is not the hash of the plan ({id}): the file was edited after `critic-gate plan` wrote it; make the plan again",
            plan.plan_id
        )));
    }
    Strata::parse(Some(plan.strata.as_str()).filter(|s| *s != "all")).map_err(bad)?;
    if !(0.0..=1.0).contains(&plan.default_probability) {
        return Err(bad(format!(
            "default_probability {} is not in [0, 1]",
            plan.default_probability
        )));
    }
    if let Some(s) = plan
        .stratum
        .iter()
        .find(|s| !(0.0..=1.0).contains(&s.probability))
    {
        return Err(bad(format!(
            "stratum {:?} has probability {}, not in [0, 1]",
            s.value, s.probability
        )));
    }
    Ok(plan)
}

/// The gate settings where `plan` and the config's production differ,
/// named (empty when they agree).
pub fn gate_differences(
    plan: &crate::config::FrameworkConfig,
    config: &crate::config::FrameworkConfig,
) -> Vec<String> {
    let (a, b) = (json!(plan), json!(config));
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return vec!["the gate settings".into()];
    };
    a.keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| {
            format!(
                "{k}: the plan's {} against the config's {}",
                a.get(k).unwrap_or(&json!(null)),
                b.get(k).unwrap_or(&json!(null))
            )
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The population a plan.toml names.
pub(crate) fn population_of(plan: &PlanFile) -> crate::Result<Population> {
    match plan.population.as_str() {
        "production_skips" => Ok(Population::ProductionSkips),
        "unlabelled_new_skips" => Ok(Population::UnlabelledNewSkips),
        other => Err(Error::usage(format!(
            "the plan's population {other:?} is none this build samples (production_skips, unlabelled_new_skips)"
        ))),
    }
}

/// The config's variant whose decisions make the plan's population, held
/// to the plan's gate settings (and, for an audit, the baseline's too).
fn sampled_variant<'a>(
    path: &Path,
    plan: &PlanFile,
    config: &'a crate::config::Plan,
) -> crate::Result<&'a crate::config::Variant> {
    let refuse = |m: String| Error::usage(format!("{}: {m}", path.display()));
    let v = match population_of(plan)? {
        Population::ProductionSkips => &config.variants[config.production()],
        Population::UnlabelledNewSkips => config
            .variants
            .iter()
            .find(|v| v.name == plan.variant)
            .ok_or_else(|| {
            refuse(format!(
                "the plan audits variant `{}`, which the config does not have",
                plan.variant
            ))
        })?,
    };
    if let Some(made) = plan
        .deployment
        .as_ref()
        .filter(|d| **d != config.deployment)
    {
        let theirs = made.differences(&config.deployment);
        return Err(refuse(format!(
            "the plan was made on traffic derived with another [deployment] than the config's (the plan's differs in {}): its strata and population are of the turns as that deployment derived them; use the plan's [deployment], or make a plan for this one",
            theirs.unwrap_or_default()
        )));
    }
    let diff = gate_differences(&plan.gate, &v.config);
    if !diff.is_empty() {
        return Err(refuse(format!(
            "the plan was made for other gate settings than the config's `{}`: {}; make a plan for the gate {}",
            v.name,
            diff.join("; "),
            match plan.population.as_str() {
                "production_skips" => "production runs",
                _ => "it audits",
            }
        )));
    }
    if let Some(b) = &plan.baseline_gate {
        let base = &config.variants[config.baseline];
        let diff = gate_differences(b, &base.config);
        if !diff.is_empty() {
            return Err(refuse(format!(
                "the plan's new skips are against another baseline than the config's `{}`: {}",
                base.name,
                diff.join("; ")
            )));
        }
    }
    Ok(v)
}

/// Which turns are in a plan's population: the sampled variant's gate
/// and, for an audit, the baseline's.
pub struct Member {
    pub population: Population,
    /// The population in words (`production's skips`).
    pub words: String,
    gate: crate::gate::Gate,
    baseline: Option<crate::gate::Gate>,
    /// Settings tried on production's fires without a critic event (a
    /// plan of production's skips only).
    probe: Option<crate::replay::probe::Probe>,
    /// The sampled variant's name.
    variant: String,
}

impl Member {
    pub fn new(
        design: &Design,
        config: &crate::config::Plan,
        file: &Config,
    ) -> crate::Result<Member> {
        let v = config
            .variants
            .iter()
            .find(|v| v.name == design.variant)
            .expect("the design's variant is the config's (design_of)");
        Member::of(design.population, v, config, file)
    }

    /// The population of `v`'s decisions (against the config's baseline
    /// for an audit).
    pub fn of(
        population: Population,
        v: &crate::config::Variant,
        config: &crate::config::Plan,
        file: &Config,
    ) -> crate::Result<Member> {
        let compile = |c: &crate::config::FrameworkConfig| {
            crate::gate::Gate::new(c.clone())
                .map_err(|e| crate::cmd::in_config(e.into(), file.file()))
        };
        let index = |name: &str| config.variants.iter().position(|u| u.name == name);
        // An audit compares the candidate with the baseline; production's
        // skips are production's decisions alone.
        let baseline = (population == Population::UnlabelledNewSkips).then_some(config.baseline);
        let evaluated: Vec<usize> = [index(&v.name), baseline].into_iter().flatten().collect();
        config
            .one_deployment(&evaluated, "sampling (plan, sample, labels and monitor)")
            .map_err(|e| crate::cmd::in_config(e.into(), file.file()))?;
        let baseline = match population {
            Population::ProductionSkips => None,
            Population::UnlabelledNewSkips => {
                Some(compile(&config.variants[config.baseline].config)?)
            }
        };
        let gate = compile(&v.config)?;
        let probe = match population {
            Population::ProductionSkips => Some(
                crate::replay::probe::Probe::of(&gate)
                    .map_err(|e| crate::cmd::in_config(e.into(), file.file()))?,
            ),
            Population::UnlabelledNewSkips => None,
        };
        Ok(Member {
            population,
            words: population.words(&v.name),
            gate,
            baseline,
            probe,
            variant: v.name.clone(),
        })
    }

    /// Whether the turn is in the population, and the verdict it has if it
    /// gives the prior (a labelled skip of production's, or a labelled
    /// new skip of the audited variant's).
    pub fn classify(&self, t: &Turn) -> (bool, Option<crate::read::turn::Verdict>) {
        self.classify_probed(t, None)
    }

    /// [`Member::classify`], counting a fire of production's in `probe`
    /// (`crate::replay::probe`: is the config production's?).
    pub fn classify_probed(
        &self,
        t: &Turn,
        probe: Option<&mut crate::replay::probe::ProbeTally>,
    ) -> (bool, Option<crate::read::turn::Verdict>) {
        let eval = self.gate.evaluate(t);
        if let (Some(p), Some(tally)) = (&self.probe, probe) {
            p.add_evaluated(tally, t, &eval);
        }
        if eval.fires() {
            return (false, None);
        }
        let base_fires = self.baseline.as_ref().is_none_or(|b| b.evaluate(t).fires());
        let verdict = t.verdict();
        let member = self.population.holds(true, base_fires, verdict.is_some());
        let prior = match self.population {
            Population::ProductionSkips => verdict,
            Population::UnlabelledNewSkips => verdict.filter(|_| base_fires),
        };
        (member, prior)
    }

    pub fn holds(&self, t: &Turn) -> bool {
        self.classify(t).0
    }

    /// The warning that production's config is probably not the one
    /// given, from what [`Member::classify_probed`] counted.
    pub fn config_differs(&self, tally: &crate::replay::probe::ProbeTally) -> Option<String> {
        let probe = self.probe.as_ref()?;
        probe.finding(tally).map(|f| f.said(&self.variant))
    }
}

/// The design of the plan at `path`, refused when the config's variant
/// it samples has other gate settings than the plan's.
pub fn design_of(path: &Path, config: &crate::config::Plan) -> crate::Result<Design> {
    design_from(path, &read_plan(path)?, config)
}

/// [`design_of`] for a plan read already (from `path`, for messages).
pub fn design_from(
    path: &Path,
    plan: &PlanFile,
    config: &crate::config::Plan,
) -> crate::Result<Design> {
    let v = sampled_variant(path, plan, config)?;
    let strata =
        Strata::parse(Some(plan.strata.as_str()).filter(|s| *s != "all")).map_err(Error::usage)?;
    Ok(Design {
        plan_id: plan.plan_id.clone(),
        salt: plan.salt.clone(),
        population: population_of(plan)?,
        variant: v.name.clone(),
        strata,
        probability: plan
            .stratum
            .iter()
            .map(|s| (s.value.clone(), s.probability))
            .collect(),
        default_probability: plan.default_probability,
        fidelity: plan.fidelity_probability,
    })
}

/// One stratum's draw.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Drawn {
    /// Production's skips of the stratum.
    pub skips: u64,
    pub sampled: u64,
    /// The plan's probability; None for a value the plan does not name
    /// (unplanned: never drawn).
    pub probability: Option<f64>,
}

/// What `sample` did, and what it prints.
pub struct Sampled {
    pub turns: u64,
    pub rejected: u64,
    pub strata: BTreeMap<String, Drawn>,
    pub text: String,
}

/// Draw the plan's sample into the request's folder.
/// The turns are placed on `pool` (a Python caller's `threads=`), else
/// on the process's workers; the requests are the same either way.
pub fn run(r: &Request, pool: Option<&rayon::ThreadPool>) -> crate::Result<Sampled> {
    let plan = read_plan(&r.plan)?;
    let config = r.config.plan()?;
    let design = design_from(&r.plan, &plan, &config)?;
    let member = Member::new(&design, &config, &r.config)?;
    let decoder = crate::import::Decoder::new(
        r.pass.from,
        config.deployment.clone(),
        r.sources.clone().into(),
        r.pass.max_line_bytes,
    );
    crate::report::or_remove_new(&r.out, || {
        crate::report::claim_job_dir(&r.out, &r.sources, "sample", r.pass.force)?;
        draw(r, &plan, &design, &member, (&decoder, pool))
    })
}

/// The pass: requests.jsonl streamed to a temporary name and moved into
/// place once whole, then sample.json.
fn draw(
    r: &Request,
    plan: &PlanFile,
    design: &Design,
    member: &Member,
    (decoder, pool): (&crate::import::Decoder, Option<&rayon::ThreadPool>),
) -> crate::Result<Sampled> {
    let path = r.out.join("requests.jsonl");
    let fail = |e: std::io::Error| {
        Error::Write(crate::Failure::caused(
            format!("{}: {e}", path.display()),
            e,
        ))
    };
    let mut file = crate::report::WholeFile::create(&path, r.out.join(".requests.jsonl.partial"))
        .map_err(fail)?;
    let w = file.writer();
    let mut drawn: BTreeMap<String, Drawn> = BTreeMap::new();
    let mut fidelity = Drawn {
        probability: Some(design.fidelity),
        ..Drawn::default()
    };
    // Each turn is placed and its request written out on a worker; the
    // counts and the file take them in input order.
    let work = |t: &Turn, raw: Option<&str>| Kept::of(t, raw, plan, design, member);
    let mut keep = |k: Kept| -> crate::Result<()> {
        r.pass.stop.check()?;
        let (d, request) = match k {
            Kept::Fire { request } => (&mut fidelity, request),
            Kept::Skip {
                value,
                probability,
                request,
            } => {
                let d = drawn.entry(value).or_default();
                d.probability = Some(probability);
                (d, request)
            }
        };
        d.skips += 1;
        if let Some(q) = request {
            d.sampled += 1;
            writeln!(w, "{q}").map_err(fail)?;
        }
        Ok(())
    };
    let read = crate::cmd::mine::scan::each_turn_mapped(
        &r.sources,
        r.pass.max_line_bytes,
        r.pass.skip_invalid,
        decoder,
        pool,
        &work,
        &mut keep,
    )?;
    r.pass.stop.check()?;
    file.finish().map_err(fail)?;
    let mut summary = sample_json(plan, &drawn, read.turns);
    if design.fidelity > 0.0 {
        summary["fidelity"] = json!({"reviewed_fires": fidelity.skips, "probability": design.fidelity,
                                     "sampled": fidelity.sampled});
    }
    crate::report::put(&r.out, "sample.json", format!("{summary:#}\n").as_bytes())?;
    let mut text = said(&drawn, &r.out, &member.words);
    if design.fidelity > 0.0 {
        text.push_str(&format!(
            "sample: {} of {} of production's reviewed fires drawn for the fidelity check (stratum {FIDELITY})\n",
            fidelity.sampled, fidelity.skips
        ));
    }
    Ok(Sampled {
        turns: read.turns,
        rejected: read.rejected,
        strata: drawn,
        text,
    })
}

/// What the pass keeps of a turn: a reviewed fire (the fidelity sample's
/// population) or a skip, with its request when the coin drew it.
enum Kept {
    Fire {
        request: Option<String>,
    },
    Skip {
        value: String,
        probability: f64,
        request: Option<String>,
    },
}

impl Kept {
    /// What the pass keeps of `t`: nothing when it is neither a skip of
    /// the population nor a reviewed fire the fidelity sample counts.
    fn of(
        t: &Turn,
        raw: Option<&str>,
        plan: &PlanFile,
        design: &Design,
        member: &Member,
    ) -> Option<Kept> {
        if !member.holds(t) {
            // A reviewed fire: in the fidelity sample when drawn.
            return (design.fidelity > 0.0 && t.verdict().is_some()).then(|| Kept::Fire {
                request: design
                    .fidelity_drawn(t)
                    .then(|| request(t, raw, plan, FIDELITY, design.fidelity).to_string()),
            });
        }
        // The replay's draw: a value the plan folded into `(other)` takes
        // that stratum's probability, one it has not seen the plan's
        // default (the highest of its strata's).
        let at = design.place(t);
        let request = at
            .drawn
            .then(|| request(t, raw, plan, &at.value, at.probability).to_string());
        Some(Kept::Skip {
            value: at.value,
            probability: at.probability,
            request,
        })
    }
}

/// The stratum a fidelity request names: a fire of production's, drawn
/// to compare the shadow critic with production's.
pub const FIDELITY: &str = "(fidelity)";

/// One request: where the turn is, what a critic reviews, and its draw.
/// The signals symfonic's critic reads (`MetacognitiveMiddleware.evaluate`:
/// the activation log for the sensitive hit and the procedural rules'
/// query) or its gate reads, copied from the line as recorded.
pub const RECORDED: [&str; 5] = [
    "activation_log",
    "sensitive_hit",
    "tool_calls_this_turn",
    "fabrication_findings",
    "intent_verdict",
];

fn request(
    t: &Turn,
    raw: Option<&str>,
    plan: &PlanFile,
    stratum: &str,
    p: f64,
) -> serde_json::Value {
    let names: Vec<String> = t
        .tool_calls
        .iter()
        .map(|c| match c {
            crate::read::turn::ToolCall::Named(n) => n.clone(),
            _ => String::new(),
        })
        .collect();
    let scope = t
        .scope
        .as_deref()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(s).ok());
    json!({
        "plan_id": plan.plan_id,
        "run_id": &*t.run_id,
        "turn": t.turn,
        "turn_id": t.turn_id.as_deref(),
        "ts": t.ts.as_deref(),
        "stratum": stratum,
        "probability": p,
        "draft": &*t.draft,
        "tool_calls": names,
        "language": t.language.as_deref(),
        "intent": t.intent_label(),
        "scope": scope,
        "recorded": recorded(raw),
    })
}

/// The line's [`RECORDED`] keys as they are (an object; empty for a turn
/// converted from a trace or transcript, which has no line).
fn recorded(raw: Option<&str>) -> serde_json::Value {
    let line = raw.and_then(|r| serde_json::from_str::<serde_json::Value>(r).ok());
    let kept = RECORDED.iter().filter_map(|k| {
        let v = line.as_ref()?.get(*k)?;
        Some((k.to_string(), v.clone()))
    });
    serde_json::Value::Object(kept.collect())
}

/// The band a binomial(n, p) count falls in with 99.9% probability: the
/// 0.05% and 99.95% quantiles.
pub fn band(n: u64, p: f64) -> (u64, u64) {
    let q = |target: f64| {
        let (mut lo, mut hi) = (0u64, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if crate::stats::binom_cdf(mid, n, p) >= target {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    };
    match p {
        p if p <= 0.0 => (0, 0),
        p if p >= 1.0 => (n, n),
        _ => (q(0.0005), q(0.9995)),
    }
}

/// sample.json: per stratum, the skips, the drawn, the expected and the
/// band; unplanned values (probability none) named apart.
fn sample_json(plan: &PlanFile, drawn: &BTreeMap<String, Drawn>, turns: u64) -> serde_json::Value {
    let strata: serde_json::Map<String, serde_json::Value> = drawn
        .iter()
        .map(|(k, d)| {
            let v = match d.probability {
                Some(p) => {
                    let (lo, hi) = band(d.skips, p);
                    json!({"skips": d.skips, "probability": p, "sampled": d.sampled,
                           "expected": crate::summary::numbers::sig(Some(d.skips as f64 * p)),
                           "band_99_9": [lo, hi], "within_band": (lo..=hi).contains(&d.sampled),
                           "monitored": p > 0.0})
                }
                None => json!({"skips": d.skips, "probability": null, "sampled": 0,
                               "expected": null, "band_99_9": null, "within_band": null,
                               "monitored": false}),
            };
            (k.clone(), v)
        })
        .collect();
    let unmonitored: Vec<&String> = drawn
        .iter()
        .filter(|(_, d)| d.skips > 0 && d.probability.is_none_or(|p| p <= 0.0))
        .map(|(k, _)| k)
        .collect();
    json!({
        "plan_id": plan.plan_id,
        "turns": turns,
        "skips": drawn.values().map(|d| d.skips).sum::<u64>(),
        "sampled": drawn.values().map(|d| d.sampled).sum::<u64>(),
        "strata": strata,
        "unmonitored": unmonitored,
    })
}

/// What `sample` prints.
fn said(drawn: &BTreeMap<String, Drawn>, out: &Path, population: &str) -> String {
    let skips: u64 = drawn.values().map(|d| d.skips).sum();
    let sampled: u64 = drawn.values().map(|d| d.sampled).sum();
    let unmonitored: Vec<std::borrow::Cow<str>> = drawn
        .iter()
        .filter(|(_, d)| d.skips > 0 && d.probability.is_none_or(|p| p <= 0.0))
        .map(|(k, _)| crate::summary::text::one_line(k))
        .take(10)
        .collect();
    let mut s = format!(
        "sample: {sampled} of {skips} of {population} drawn for review: {}\n",
        out.join("requests.jsonl").display()
    );
    if !unmonitored.is_empty() {
        s.push_str(&format!(
            "UNMONITORED: skips of {} have no probability in the plan (a value it was not made with, or probability 0): none of them is drawn; make the plan again on recent traffic\n",
            unmonitored.join(", ")
        ));
    }
    s
}
