//! `calibrate`: the `[sweep]` variant that saves the most while its safety
//! regression rate stays within R with confidence 1 - delta, valid after
//! the choice (Learn then Test: the family fixed on a learn part, tested
//! on a calibration part, figures on a held-out part).

use std::fmt::Write as _;
use std::path::Path;

use super::sweep;
use crate::calibrate::{CalibrateOptions, Calibration};
use crate::calibrate::{Procedure, Rule};
use crate::pipeline::Progress;

/// The chance the choice's true rate exceeds R is at most this, by default.
pub const DELTA: f64 = 0.05;

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
}

/// The calibration, written, and what `calibrate` prints.
pub struct Calibrated {
    pub calibration: Calibration,
    pub text: String,
}

/// Calibrate into the sweep's folder.
pub fn run(r: &Request, progress: &dyn Progress) -> crate::Result<Calibrated> {
    super::share("max_regression_rate", r.rule.max_regression_rate, false)?;
    super::share("delta", r.rule.delta, false)?;
    super::share("min_label_coverage", r.rule.min_label_coverage, true)?;
    let o = CalibrateOptions {
        replay: r.sweep.options()?,
        rule: r.rule,
        procedure: r.procedure,
        seed: r.seed,
        held_out: r.held_out,
    };
    let calibration =
        crate::report::or_remove_new(&r.sweep.out, || calibrate_into(&o, &r.sweep.out, progress))
            .map_err(|e| super::in_config(e, Some(&r.sweep.config)))?;
    let text = render(&calibration, &r.sweep.out);
    Ok(Calibrated { calibration, text })
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
    for part in 0..crate::calibrate::parts(o) {
        let dir = out.join(crate::calibrate::PARTS[usize::from(part)]);
        let replay = crate::calibrate::part_replay(o, part);
        runs.push(crate::pipeline::run(replay, &dir, p)?.summary.run);
    }
    let c = crate::calibrate::conclude(o, &runs[0], &runs[1], runs.get(2));
    let json = serde_json::to_string_pretty(&c).expect("serializes") + "\n";
    crate::report::put(out, "calibration.json", json.as_bytes())?;
    let toml = crate::calibrate::calibrated_toml(&c, &o.replay.plan);
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
            "  {:<28} learn bound {}  calibration: {:>4} of {:>6} labelled new skips ({} runs), bound {}, coverage {}, {} unlabelled (worst case {}){}  certified by: {}",
            m.variant,
            bound(m.learn.upper_bound),
            cal.safety_regressions,
            cal.labelled_skips,
            cal.labelled_runs,
            bound(cal.upper_bound),
            bound(cal.label_coverage),
            cal.new_skips - cal.labelled_skips,
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
        let _ = writeln!(s, "ASSUMED: unlabelled new skips are missing at random (--assume-missing-at-random); the worst-case bounds below are what the labels alone support");
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
