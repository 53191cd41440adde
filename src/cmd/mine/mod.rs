//! `mine`: the acks a smart variant's patterns miss (proposed patterns,
//! validated by a replay) and the skips that are more than an ack (risky
//! skips; with `stress`, how many survive added content).

mod engine;
pub mod phrases;
pub mod report;
pub mod scan;
pub mod stress;

pub use engine::*;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::cmd::args::{Flags, Mine as MineSet};
use crate::cmd::Reading;
use crate::options::{Setting, Values};
use crate::pipeline::Progress;

/// The command's one line in `critic-gate --help`, and the first of its
/// own `--help`.
pub const ABOUT: &str = "Mine the traffic both ways: acks the patterns miss (proposed patterns) \
     and skips that are more than an ack (risky skips)";

/// What `--help` adds after the options: examples, exit codes, the
/// reference.
pub const HELP: &str = concat!(
    "Example:
  critic-gate mine traffic.jsonl --config gate.toml --out reports/mine --stress

",
    crate::cmd::args::done!(),
    " Proposing nothing is a result (exit 0; mine says why).
Reference: docs/sweeps.md."
);

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
    /// The declared options (`options::MINE`).
    #[command(flatten)]
    pub flags: Flags<MineSet>,
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
    /// The request the declared options (`options::MINE`) make, from
    /// either front end: a rate or the variant's own bound, not both.
    pub fn of(
        sources: Vec<String>,
        out: PathBuf,
        config: crate::cmd::Config,
        v: &Values,
    ) -> crate::Result<Request> {
        let from_variant = v.switch(Setting::BudgetFromVariant);
        if from_variant && v.is_given(Setting::MaxRegressionRate) {
            return Err(crate::Error::usage(crate::said![
                "give ",
                Setting::MaxRegressionRate,
                " or ",
                Setting::BudgetFromVariant,
                ", not both"
            ]));
        }
        let declared = "declared with a default";
        Ok(Request {
            sources,
            out,
            config,
            variant: v.text(Setting::MinedVariant),
            min_support: v.count(Setting::MinSupport).expect(declared),
            min_labelled: v.count(Setting::MinLabelled).expect(declared),
            max_regression_rate: match from_variant {
                true => None,
                false => Some(v.share(Setting::MaxRegressionRate).expect(declared)),
            },
            assume_missing_at_random: v.switch(Setting::AssumeMissingAtRandom),
            stress: v.switch(Setting::Stress),
            reading: Reading::of(v),
        })
    }
}

/// What to mine.
#[derive(Clone, Debug)]
pub struct Request {
    /// Traffic files, read twice (regular files only).
    pub sources: Vec<String>,
    /// The folder for proposals, risky skips, mine.json and validation/.
    pub out: PathBuf,
    /// A gate config (symfonic's defaults, legacy and smart, by default).
    pub config: crate::cmd::Config,
    /// The smart variant to mine (None: the first with the flag on).
    pub variant: Option<String>,
    /// A phrase is proposed only when seen in at least this many turns.
    pub min_support: u64,
    /// A pattern is proposed only when its new skips hold this many labels.
    pub min_labelled: u64,
    /// The bound a pattern's new skips must stay within; None: the mined
    /// variant's own bound.
    pub max_regression_rate: Option<f64>,
    /// Test on the labels alone (else the worst case must pass too).
    pub assume_missing_at_random: bool,
    /// Also add short content to every skipped draft.
    pub stress: bool,
    pub reading: Reading,
}

/// A phrase is proposed only when seen in at least this many turns.
pub const MIN_SUPPORT: u64 = crate::options::DEFAULT_MIN_SUPPORT;
/// A pattern is proposed only when its new skips hold this many labels
/// (below 30, a 95% bound cannot go under 0.095 even without a regression).
pub const MIN_LABELLED: u64 = crate::options::DEFAULT_MIN_LABELLED;
/// The bound a pattern's new skips must stay within, by default.
pub const MAX_REGRESSION_RATE: f64 = crate::options::DEFAULT_MINE_MAX_REGRESSION_RATE;

impl Default for Request {
    /// `mine`'s defaults (no sources, no folder).
    fn default() -> Request {
        Request {
            sources: Vec::new(),
            out: PathBuf::new(),
            config: crate::cmd::Config::Defaults,
            variant: None,
            min_support: MIN_SUPPORT,
            min_labelled: MIN_LABELLED,
            max_regression_rate: Some(MAX_REGRESSION_RATE),
            assume_missing_at_random: false,
            stress: false,
            reading: Reading::default(),
        }
    }
}

/// The mining, written, and what `mine` prints.
pub struct MinedOut {
    pub mined: Mined,
    pub text: String,
}

/// Mine into the request's folder.
pub fn run(r: &Request, progress: &dyn Progress) -> crate::Result<MinedOut> {
    r.reading.validate()?;
    if r.min_support == 0 || r.min_labelled == 0 {
        return Err(crate::Error::Usage(crate::said![
            crate::options::Setting::MinSupport,
            " and ",
            crate::options::Setting::MinLabelled,
            ": give at least 1"
        ]));
    }
    if let Some(x) = r.max_regression_rate {
        crate::cmd::share(crate::options::Setting::MaxRegressionRate, x, false)?;
    }
    let o = MineOptions {
        sources: r.sources.clone(),
        plan: r.config.plan()?,
        variant: r.variant.clone(),
        min_support: r.min_support,
        min_labelled: r.min_labelled,
        max_regression_rate: r.max_regression_rate,
        assume_missing_at_random: r.assume_missing_at_random,
        max_ack_share: r.reading.max_ack_share,
        stress: r.stress,
        skip_invalid: r.reading.skip_invalid,
        max_line_bytes: r.reading.max_line_bytes,
        force: r.reading.force,
        label: r.reading.label.clone(),
        from: r.reading.from,
    };
    let mined = crate::report::or_remove_new(&r.out, || mine_into(&o, &r.out, progress))
        .map_err(|e| crate::cmd::in_config(e, r.config.file()))?;
    let text = render(&mined, &r.out);
    Ok(MinedOut { mined, text })
}

/// Mine `o` into `out`: `proposals.csv`, `proposals.toml`, `missed.csv`,
/// `risky_skips.csv`, `mine.json` and the `validation/` replay.
fn mine_into(o: &MineOptions, out: &Path, p: &dyn Progress) -> crate::Result<Mined> {
    let v = crate::cmd::mine::mined_variant(o)?;
    crate::read::reader::regular_files(&o.sources, "mine", "mining, then validating")?;
    crate::report::claim_job_dir(out, &o.sources, "mine", o.force)?;
    let scan = crate::cmd::mine::scan(o, v, &|| p.stopped())?;
    let cands = crate::cmd::mine::candidates(&scan, o.min_support);
    let validation = out.join("validation");
    let bundle_dir = out.join("validation-bundle");
    let decided = match cands.is_empty() {
        // No validation this run: an earlier run's replays must not stay.
        true => {
            remove_replay(&validation);
            remove_replay(&bundle_dir);
            (Vec::new(), None, None)
        }
        false => {
            let replay = crate::cmd::mine::validation_replay(o, v, &cands, &validation);
            let run = crate::pipeline::run(replay, &validation, p)?.summary.run;
            let (mut proposals, family) = crate::cmd::mine::proposals(o, &cands, &run);
            let bundle = bundle(o, v, &mut proposals, &run, &bundle_dir, p)?;
            (proposals, Some(family), bundle)
        }
    };
    let mined = crate::cmd::mine::summarise(o, v, &scan, decided);
    crate::cmd::mine::report::all(&mined, &scan, o, v, out)?;
    Ok(mined)
}

/// An earlier run's replay folder (ours: it has the marker), removed.
fn remove_replay(dir: &Path) {
    if dir.join(crate::report::MARKER).is_file() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The proposed patterns replayed together into `dir` and judged as one
/// bundle on their own new skips (None, and no folder, when none is
/// proposed). A failing bundle holds every pattern back.
fn bundle(
    o: &MineOptions,
    v: &crate::config::Variant,
    proposals: &mut [crate::cmd::mine::Proposal],
    run: &crate::summary::figures::RunSummary,
    dir: &Path,
    p: &dyn Progress,
) -> crate::Result<Option<crate::cmd::mine::BundleCheck>> {
    let proposed: Vec<&crate::cmd::mine::Proposal> =
        proposals.iter().filter(|x| x.proposed).collect();
    if proposed.is_empty() {
        remove_replay(dir);
        return Ok(None);
    }
    let replay = crate::cmd::mine::bundle_replay(o, v, &proposed, dir);
    let together = crate::pipeline::run(replay, dir, p)?.summary.run;
    let b = crate::cmd::mine::budget(o, &run.variants["mined"]);
    Ok(Some(crate::cmd::mine::check_bundle(
        proposals,
        &together.variants["bundle"],
        &b,
    )))
}

/// What mine prints: the proposals, the risky skips, the stress test.
fn render(m: &Mined, out: &Path) -> String {
    let mut s = String::new();
    if m.family
        .as_ref()
        .is_some_and(|f| f.assume_missing_at_random)
    {
        let _ = writeln!(s, "ASSUMED, not shown: the unlabelled new skips are missing at random ({}): each pattern is tested on its labels alone, not on its worst case (every unlabelled new skip a regression)", crate::vocab::Setting::AssumeMissingAtRandom.flag());
    }
    let _ = writeln!(
        s,
        "variant {}: {} turns, {} fire for want of an ack pattern",
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
    if let Some(b) = &m.bundle {
        let _ = writeln!(s, "  bundle: {}", b.why);
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
            "note: {} invalid lines set aside ({})",
            m.rejected,
            crate::vocab::Setting::SkipInvalid.flag()
        );
    }
    for n in &m.notes {
        let _ = writeln!(s, "note: {n}");
    }
    let _ = writeln!(s, "wrote {}", out.display());
    s
}
