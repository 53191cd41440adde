//! `critic-gate mine`: the acks a smart variant's patterns miss (proposed
//! patterns, validated by a replay) and the skips that are more than an
//! ack (risky skips; with `--stress`, how many survive added content).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use critic_gate::{MineOptions, Mined};

use super::replay::RunArgs;
use super::{load_plan, CliResult};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Traffic files (JSON Lines; plain, .gz or .zst): read twice.
    #[arg(required = true)]
    pub files: Vec<String>,
    /// Folder for proposals.csv, proposals.toml, missed.csv,
    /// risky_skips.csv, mine.json and validation/.
    #[arg(long)]
    pub out: PathBuf,
    /// Gate config (default: symfonic's defaults, legacy and smart).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The smart variant to mine (default: the first with the flag on).
    #[arg(long)]
    pub variant: Option<String>,
    /// A phrase is proposed only when seen in at least this many turns.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    pub min_support: u64,
    /// A pattern is proposed only when its new skips hold at least this
    /// many labels (below 30, a 95% bound cannot go under 0.095 even
    /// without a regression).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    pub min_labelled: u64,
    /// A pattern is proposed only when its new skips' upper 95% bound is
    /// within this.
    #[arg(long, value_name = "R", value_parser = super::share, default_value_t = 0.05, conflicts_with = "budget_from_variant")]
    pub max_regression_rate: f64,
    /// Hold each pattern to the mined variant's own upper 95% bound instead
    /// (no riskier than its skips today; it takes many labels).
    #[arg(long)]
    pub budget_from_variant: bool,
    /// Also add short content to every skipped draft and count the skips that survive.
    #[arg(long)]
    pub stress: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

pub fn run(a: Args) -> CliResult {
    super::start_workers(a.run.threads)?;
    let o = MineOptions {
        sources: a.files.clone(),
        plan: load_plan(a.config.as_deref())?,
        variant: a.variant.clone(),
        min_support: a.min_support,
        min_labelled: a.min_labelled,
        max_regression_rate: (!a.budget_from_variant).then_some(a.max_regression_rate),
        max_ack_share: a.run.max_ack_share,
        stress: a.stress,
        skip_invalid: a.run.skip_invalid,
        max_line_bytes: a.run.max_line_bytes,
        force: a.run.force,
        label: a.run.label.clone(),
        from: a.run.from,
    };
    let m = critic_gate::mine(&o, &a.out, &())?;
    if !a.run.quiet {
        super::output::stdout(&render(&m, &a.out))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What mine prints: the proposals, the risky skips, the stress test.
fn render(m: &Mined, out: &std::path::Path) -> String {
    let mut s = format!(
        "variant {}: {} turns, {} fire for want of an ack pattern\n",
        m.variant, m.turns, m.missed_turns
    );
    for p in &m.proposals {
        let _ = writeln!(
            s,
            "  {} {:<6} {}  ({} new skips, {} new regressions in {} labelled: {})",
            if p.proposed { "proposed " } else { "held back" },
            p.language,
            p.pattern,
            p.new_skips,
            p.new_safety_regressions,
            p.new_labelled_skips,
            p.why
        );
    }
    let r = &m.risky;
    let _ = writeln!(
        s,
        "risky skips (ack share < {}): {} of {} skips, {} labelled, {} regressions",
        r.max_ack_share, r.risky_skips, r.skips, r.risky_labelled, r.risky_safety_regressions
    );
    if let Some(st) = &m.stress {
        let _ = writeln!(s, "stress: {} skipped drafts changed", st.tested_skips);
        for (name, claim, n) in &st.survived {
            let _ = writeln!(
                s,
                "  {name:<18} {n:>6} still skip{}",
                if *claim {
                    " (adds a claim: must be 0)"
                } else {
                    ""
                }
            );
        }
    }
    if m.rejected > 0 {
        let _ = writeln!(
            s,
            "note: {} invalid lines set aside (--skip-invalid)",
            m.rejected
        );
    }
    for n in &m.notes {
        let _ = writeln!(s, "note: {n}");
    }
    let _ = writeln!(s, "wrote {}", out.display());
    s
}
