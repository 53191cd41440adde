//! `calibrate`: the `[sweep]` variant that saves the most while its safety
//! regression rate stays within R with confidence 1 - delta, valid after
//! the choice (Learn then Test: the family fixed on a learn part, tested
//! on a calibration part, figures on a held-out part).

mod engine;
pub mod select;
#[cfg(test)]
pub(crate) mod simulation;

pub use engine::*;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::cmd::args::{Calibrate, Flags};
use crate::cmd::sweep;
use crate::options::{Setting, Values};
use crate::pipeline::Progress;
use crate::replay::design::{Design, Population};

/// The chance the choice's true rate exceeds R is at most this, by default.
pub const DELTA: f64 = crate::options::DEFAULT_DELTA;

/// The command's one line in `critic-gate --help`, and the first of its
/// own `--help`.
pub const ABOUT: &str = "Pick the sweep variant that saves the most with its safety regression \
     rate certified within R (valid after the choice)";

/// What `--help` adds after the options: examples, exit codes, the
/// reference.
pub const HELP: &str = concat!(
    "Example:
  critic-gate calibrate traffic.jsonl --config sweep.toml --max-regression-rate 0.02 --out reports/cal

",
    crate::cmd::args::done!(),
    " Certifying no variant is a result (exit 0, calibrated.toml keeps the baseline).
Reference: docs/sweeps.md (the guarantee, stated exactly)."
);

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Traffic files (JSON Lines; plain, .gz or .zst): read once per part.
    #[arg(required = true)]
    pub files: Vec<String>,
    /// Gate config with a [sweep] table (and the baseline).
    #[arg(long)]
    pub config: PathBuf,
    /// Folder for learn/, calibration/, held-out/, calibration.json and calibrated.toml.
    #[arg(long)]
    pub out: PathBuf,
    /// The safety regression rate to stay within (a share, e.g. 0.02).
    #[arg(long, value_name = "R", value_parser = crate::cmd::args::share)]
    pub max_regression_rate: f64,
    /// The declared options (`options::CALIBRATE`).
    #[command(flatten)]
    pub flags: Flags<Calibrate>,
}

impl Args {
    /// The request these flags make.
    pub fn request(&self) -> Request {
        Request::of(
            self.files.clone(),
            crate::cmd::Config::File(self.config.clone()),
            self.out.clone(),
            self.max_regression_rate,
            &self.flags.values,
        )
    }
}

impl Request {
    /// The request the declared options (`options::CALIBRATE`) make, from
    /// either front end, to certify within `max_regression_rate`.
    pub fn of(
        sources: Vec<String>,
        config: crate::cmd::Config,
        out: PathBuf,
        max_regression_rate: f64,
        v: &Values,
    ) -> Request {
        let declared = "declared with a default";
        Request {
            rule: Rule {
                max_regression_rate,
                delta: v.share(Setting::Delta).expect(declared),
                min_label_coverage: v.share(Setting::MinLabelCoverage).expect(declared),
                assume_missing_at_random: v.switch(Setting::AssumeMissingAtRandom),
            },
            procedure: v.name(Setting::Procedure).expect(declared),
            seed: v.count(Setting::Seed).expect(declared),
            held_out: !v.switch(Setting::NoHeldOut),
            plan: v.path(Setting::Plan),
            sweep: sweep::Request {
                sources,
                config,
                out,
                flags: v.clone(),
            },
        }
    }
}

/// What to calibrate: a sweep, the rule, the procedure and the split.
#[derive(Clone, Debug)]
pub struct Request {
    /// The sweep replayed on each part (its `out` is calibrate's folder).
    pub sweep: sweep::Request,
    pub rule: Rule,
    pub procedure: Procedure,
    /// Seed of the run_id hash that deals the runs into parts.
    pub seed: u64,
    /// Three parts (learn, calibration, held-out), or two without.
    pub held_out: bool,
    /// An audit plan whose shadow verdicts the traffic holds.
    pub plan: Option<PathBuf>,
}

/// The calibration, written, and what `calibrate` prints.
pub struct Calibrated {
    pub calibration: Calibration,
    pub text: String,
}

/// Calibrate into the sweep's folder.
pub fn run(r: &Request, progress: &dyn Progress) -> crate::Result<Calibrated> {
    crate::cmd::share(
        crate::options::Setting::MaxRegressionRate,
        r.rule.max_regression_rate,
        false,
    )?;
    crate::cmd::share(crate::options::Setting::Delta, r.rule.delta, false)?;
    crate::cmd::share(
        crate::options::Setting::MinLabelCoverage,
        r.rule.min_label_coverage,
        true,
    )?;
    let mut replay = r.sweep.options()?;
    if let Some(path) = &r.plan {
        replay.tallies.design = Some(audit_design(path, &replay.plan)?);
    }
    let o = CalibrateOptions {
        replay,
        rule: r.rule,
        procedure: r.procedure,
        seed: r.seed,
        held_out: r.held_out,
    };
    let calibration =
        crate::report::or_remove_new(&r.sweep.out, || calibrate_into(&o, &r.sweep.out, progress))
            .map_err(|e| crate::cmd::in_config(e, r.sweep.config.file()))?;
    let text = render(&calibration, &r.sweep.out);
    Ok(Calibrated { calibration, text })
}

/// The design of the audit plan at `path`, refused unless it audits a
/// variant of the sweep (a plan of production's skips measures a gate
/// after the switch: `monitor` and `replay --plan` read it).
fn audit_design(path: &Path, plan: &crate::config::Plan) -> crate::Result<Design> {
    let file = crate::cmd::sample::read_plan(path)?;
    match crate::cmd::sample::population_of(&file)? {
        Population::UnlabelledNewSkips => crate::cmd::sample::design_from(path, &file, plan),
        Population::ProductionSkips => Err(crate::Error::usage(format!(
            "{}: the plan samples production's skips; calibrate reads an audit of a candidate's unlabelled new skips (make one with `critic-gate plan --audit VARIANT`)",
            path.display()
        ))),
    }
}

/// Calibrate into `out`: `learn/`, `calibration/` and `held-out/` (each a
/// sweep's report folder), then `calibration.json` and `calibrated.toml`
/// (each whole or not at all).
fn calibrate_into(
    o: &CalibrateOptions,
    out: &Path,
    p: &dyn Progress,
) -> crate::Result<Calibration> {
    let sources = &o.replay.input.sources;
    crate::read::reader::regular_files(sources, "calibrate", "one pass per part")?;
    crate::report::claim_job_dir(out, sources, "calibrate", o.replay.outputs.force)?;
    let mut runs = Vec::new();
    for part in 0..crate::cmd::calibrate::parts(o) {
        let dir = out.join(crate::cmd::calibrate::PARTS[usize::from(part)]);
        let replay = crate::cmd::calibrate::part_replay(o, part);
        runs.push(Part::of(crate::pipeline::run(replay, &dir, p)?));
    }
    let c = crate::cmd::calibrate::conclude(o, &runs[0], &runs[1], runs.get(2));
    let json = serde_json::to_string_pretty(&c).expect("serializes") + "\n";
    crate::report::put(out, "calibration.json", json.as_bytes())?;
    let toml = crate::cmd::calibrate::calibrated_toml(&c, &o.replay.plan);
    crate::report::put(out, "calibrated.toml", toml.as_bytes())?;
    Ok(c)
}

/// The family in testing order, each member's figures on new skips.
fn family_lines(c: &Calibration, s: &mut String) {
    let bound = |u: Option<f64>| u.map_or("none".to_string(), |u| format!("{u:.4}"));
    let _ = writeln!(s, "family (fixed on the learn part, safest first):");
    for m in &c.selection.family {
        let by: Vec<&str> = m.certified_by.iter().map(|p| p.name()).collect();
        let cal = &m.calibration;
        let _ = writeln!(
            s,
            "  {:<28} learn bound {}  calibration: {:>4} of {:>6} labelled new skips ({} runs), bound {}, coverage {}, {} unlabelled ({} {}){}  certified by: {}",
            m.variant,
            bound(m.learn.upper_bound),
            cal.safety_regressions,
            cal.labelled_skips,
            cal.labelled_runs,
            bound(cal.upper_bound),
            bound(cal.label_coverage),
            cal.new_skips - cal.labelled_skips,
            match cal.two_phase {
                true => "audit's two-phase bound",
                false => "worst case",
            },
            bound(cal.worst_case_upper_bound),
            cal.design_effect
                .filter(|d| *d > crate::stats::DESIGN_EFFECT_WARNING)
                .map_or(String::new(), |d| format!(", design effect {d:.2} (runs as the unit)")),
            if by.is_empty() { "none".to_string() } else { by.join(", ") }
        );
    }
}

/// What calibrate prints: the family in testing order, each procedure's
/// choice, the held-out figures, and where the files are.
fn render(c: &Calibration, out: &Path) -> String {
    let held = c
        .turns
        .held_out
        .map_or("none".to_string(), |h| h.to_string());
    let mut s = format!(
        "turns: learn {}, calibration {}, held-out {held} (run_id hash, seed {}); savings: {}\n",
        c.turns.learn, c.turns.calibration, c.seed, c.savings_metric
    );
    let bound = |u: Option<f64>| u.map_or("none".to_string(), |u| format!("{u:.4}"));
    if c.assume_missing_at_random {
        let _ = writeln!(s, "ASSUMED: unlabelled new skips are missing at random ({}); the worst-case bounds below are what the labels alone support", crate::vocab::Setting::AssumeMissingAtRandom.flag());
    }
    family_lines(c, &mut s);
    let _ = writeln!(
        s,
        "left out on the learn part: {}",
        c.selection.left_out.len()
    );
    for o in &c.selection.procedures {
        let mark = if o.procedure == c.selection.procedure {
            "*"
        } else {
            " "
        };
        let chosen = o.chosen.as_deref().unwrap_or("none");
        let _ = writeln!(
            s,
            "{mark} {}: chooses {chosen} ({})",
            o.procedure.name(),
            o.stopped
        );
    }
    for n in &c.notes {
        let _ = writeln!(s, "note: {n}");
    }
    match (&c.selection.chosen, &c.held_out) {
        (Some(v), Some(h)) => {
            let usd = h
                .net_usd
                .map_or("no price".to_string(), |u| format!("{u:.2} USD"));
            let _ = writeln!(
                s,
                "chosen: {v}; on the held-out part: net {} calls ({} saved, {} added), net {usd}; {} regressions in {} labelled new skips (bound {}){}",
                h.net_calls,
                h.saved_calls,
                h.added_calls,
                h.safety_regressions,
                h.labelled_skips,
                bound(h.upper_bound),
                if h.verdict != "within R" { format!("; {}", h.note) } else { String::new() }
            );
        }
        (Some(v), None) => {
            let _ = writeln!(s, "chosen: {v}");
        }
        _ => {
            let _ = writeln!(s, "chosen: none, keep the baseline");
        }
    }
    let _ = writeln!(
        s,
        "wrote {} and {}",
        out.join("calibration.json").display(),
        out.join("calibrated.toml").display()
    );
    s
}
