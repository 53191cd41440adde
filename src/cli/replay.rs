//! `critic-gate replay`: evaluate every variant on recorded traffic and
//! write the reports (decisions, summary, floors, segments, regressions,
//! matrix, report.md) into a folder.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use critic_gate::pipeline::{self, Progress};
use critic_gate::replay::{DecisionsMode, ReplayOptions, WARNING_KINDS};
use critic_gate::report::markdown::pct;

use super::{load_plan, CliResult};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Traffic files (JSON Lines; plain, .gz or .zst); `-` is standard input.
    #[arg(required = true)]
    pub files: Vec<String>,
    /// Folder for the reports (created if needed).
    #[arg(long)]
    pub out: PathBuf,
    /// Gate config with the variants to compare (TOML, or JSON).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Worker threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Set invalid lines aside in rejects.jsonl instead of stopping.
    #[arg(long)]
    pub skip_invalid: bool,
    /// No progress bar and no summary on stderr.
    #[arg(long)]
    pub quiet: bool,
    /// Which rows decisions.csv keeps.
    #[arg(long, value_enum, default_value = "all")]
    pub decisions: DecisionsMode,
    /// Extra grouping dimension for segments.csv: a dotted path into the
    /// turn (e.g. `scope.channel`, `critic.model`). Repeatable.
    #[arg(long = "group-by", value_name = "KEY")]
    pub group_by: Vec<String>,
    /// Write into --out even when it is a non-empty folder that holds no
    /// earlier critic-gate report.
    #[arg(long)]
    pub force: bool,
    /// Lines longer than this many bytes are invalid (read in constant
    /// memory, reported with their first 4 KiB).
    #[arg(long, value_name = "BYTES", default_value_t = critic_gate::reader::DEFAULT_MAX_LINE_BYTES,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_line_bytes: usize,
}

/// SIGINT and SIGTERM remove the run's staging folder and exit 130 / 143
/// (128 + the signal), as a shell reports them.
#[cfg(unix)]
fn clean_up_on_signals() -> Result<(), String> {
    use signal_hook::consts::signal::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .map_err(|e| format!("cannot watch for signals: {e}"))?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                critic_gate::report::abandon_in_progress_and_exit(128 + sig);
            }
        })
        .map(drop)
        .map_err(|e| format!("cannot start the signal thread: {e}"))
}

#[cfg(not(unix))]
fn clean_up_on_signals() -> Result<(), String> {
    Ok(())
}

struct Bar(ProgressBar);

impl Progress for Bar {
    fn update(&self, bytes: u64, turns: u64) {
        self.0.set_position(bytes);
        let secs = self.0.elapsed().as_secs_f64().max(1e-9);
        self.0
            .set_message(format!("{turns} turns, {:.0} turns/s", turns as f64 / secs));
    }
}

pub fn run(a: Args) -> CliResult {
    super::start_workers(a.threads)?;
    critic_gate::replay::validate_group_by(&a.group_by)?;
    let plan = load_plan(a.config.as_deref())?;
    let opts = ReplayOptions {
        sources: a.files.clone(),
        plan,
        skip_invalid: a.skip_invalid,
        decisions: a.decisions,
        group_by: a.group_by.clone(),
        force: a.force,
        max_line_bytes: a.max_line_bytes,
    };
    clean_up_on_signals()?;
    let total: u64 = a
        .files
        .iter()
        .map(|f| {
            if f == "-" {
                0
            } else {
                std::fs::metadata(f).map(|m| m.len()).unwrap_or(0)
            }
        })
        .sum();
    let show = !a.quiet && std::io::stderr().is_terminal();
    let bar = if show {
        let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        b.set_style(
            ProgressStyle::with_template("{bar:30} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} ETA {eta} {msg}")
                .unwrap(),
        );
        b
    } else {
        ProgressBar::hidden()
    };
    let started = std::time::Instant::now();
    let outcome = pipeline::run(opts.clone(), &a.out, &Bar(bar.clone()));
    bar.finish_and_clear();
    let outcome = outcome?;
    if a.quiet {
        return Ok(ExitCode::SUCCESS);
    }
    let t = &outcome.totals;
    let secs = started.elapsed().as_secs_f64();
    let mut msg = format!(
        "critic-gate: {} turns, {} rejected ({} lines) in {secs:.2}s\n",
        t.turns, t.rejected, t.nonblank_lines
    );
    for kind in WARNING_KINDS {
        if let Some((n, ex)) = t.warnings.0.get(kind) {
            let at: Vec<String> = ex
                .iter()
                .map(|(s, l)| format!("{}:{l}", opts.sources[*s]))
                .collect();
            msg.push_str(&format!(
                "warning: {n} × {kind} (first at {})\n",
                at.join(", ")
            ));
        }
    }
    for (dim, n) in &outcome.segments_cut {
        msg.push_str(&format!(
            "note: segments.csv keeps the {} largest of {n} values of {dim}; the rest are in (other)\n",
            pipeline::SEGMENT_LIMIT
        ));
    }
    let base = &opts.plan.variants[opts.plan.baseline].name;
    for (i, v) in opts.plan.variants.iter().enumerate() {
        let c = &t.variants[i].counts;
        let skip = (c.turns > 0).then(|| c.skips() as f64 / c.turns as f64);
        let vs = if i == opts.plan.baseline {
            " (baseline)".to_string()
        } else {
            format!(" vs {base}")
        };
        msg.push_str(&format!(
            "  {:<12} skip rate {:>6}  saved calls {:>7}  added calls {:>7}  safety regressions {}{vs}\n",
            v.name,
            pct(skip),
            c.saved_calls,
            c.added_calls,
            c.safety_regressions
        ));
        if t.variants[i].contract_violations > 0 {
            msg.push_str(&format!(
                "  CONTRACT VIOLATION: {} turns where flag-off variant {} differs from the legacy gate\n",
                t.variants[i].contract_violations, v.name
            ));
        }
    }
    let p = &outcome.summary.production;
    if p.known > 0 {
        msg.push_str(&format!(
            "  production   agreement {:>6} of {} turns whose recording says what production did (baseline {base})\n",
            pct(p.agreement),
            p.known
        ));
    }
    for n in &outcome.summary.notes {
        msg.push_str(&format!("note: {n}\n"));
    }
    msg.push_str(&format!("reports: {}\n", a.out.display()));
    super::output::stderr(&msg);
    Ok(ExitCode::SUCCESS)
}
