//! `diff`: compare two replays of the same traffic (a release and its
//! candidate): every summary metric per variant, and the turns whose
//! decision flipped, matched by source and line (the two replays must
//! have read the same traffic: the same bytes, lines and turns).

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;

use crate::summary::numbers::sig;
use crate::summary::read::{read_csv, string_rows, CannotJudge, ReplayDir};

/// A metric of one variant in both replays.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricDelta {
    pub variant: String,
    pub metric: String,
    pub old: Option<f64>,
    pub new: Option<f64>,
}

impl MetricDelta {
    /// new - old, to 9 significant digits as the reports write figures
    /// (no `-0.050000000000000044`).
    pub fn delta(&self) -> Option<f64> {
        sig(self.old.zip(self.new).map(|(a, b)| b - a))
    }
}

/// A turn whose decision changed.
#[derive(Clone, Debug, PartialEq)]
pub struct Flip {
    pub variant: String,
    pub run_id: String,
    pub turn: Option<u64>,
    pub source: String,
    pub line: u64,
    pub old_fires: bool,
    pub new_fires: bool,
    pub old_reasons: String,
    pub new_reasons: String,
    /// The recorded verdict of a critic that ran.
    pub verdict: Option<String>,
    /// The candidate now skips a turn the critic revised or refused.
    pub new_regression: bool,
}

pub struct DiffResult {
    /// The labels of the old and the new replay.
    pub runs: [String; 2],
    pub metrics: Vec<MetricDelta>,
    pub flips: Vec<Flip>,
    /// Regressions in the candidate that the old replay did not have, a
    /// row per turn and variant.
    pub new_regressions: usize,
    pub compared_rows: usize,
    /// Turns (not rows: a turn has a row per variant) compared, flipped in
    /// at least one variant, and with a new regression in at least one.
    pub compared_turns: usize,
    pub flipped_turns: usize,
    pub new_regression_turns: usize,
    /// Each variant (in the replay's order): its flipped turns and its new
    /// regressions.
    pub per_variant: Vec<(String, usize, usize)>,
}

/// A row's key: the variant, the position of its source in the replay's
/// sources, and its line. Both replays read the same traffic (checked
/// first), so this names the same turn in both, also where `(run_id,
/// turn)` repeats.
fn match_key(
    dir: &ReplayDir,
    variant: &str,
    source: &str,
    line: &str,
) -> Result<String, CannotJudge> {
    let index = dir
        .summary
        .sources
        .iter()
        .position(|n| n == source)
        .ok_or_else(|| {
            CannotJudge::new(format!(
                "{}: a report row names source {source:?}, which the summary does not list: the folder is damaged",
                dir.path.display()
            ))
        })?;
    Ok(format!("{variant}\u{0}{index}\u{0}{line}"))
}

const DECISION_COLS: [&str; 8] = [
    "variant", "run_id", "turn", "source", "line", "fires", "reasons", "verdict",
];

fn decisions(dir: &Path) -> Result<Vec<Vec<String>>, CannotJudge> {
    let p = dir.join("decisions.csv");
    if !p.exists() {
        return Err(CannotJudge(crate::said![
            format!("{}: missing; replay with ", p.display()),
            crate::vocab::Setting::Decisions,
            " all to diff decisions"
        ]));
    }
    string_rows(&read_csv(&p)?, &DECISION_COLS)
}

fn regression_keys(dir: &ReplayDir, folder: &Path) -> Result<HashSet<String>, CannotJudge> {
    let p = folder.join("regressions.csv");
    let rows = string_rows(&read_csv(&p)?, &["variant", "source", "line"])?;
    rows.iter()
        .map(|r| match_key(dir, &r[0], &r[1], &r[2]))
        .collect()
}

/// Two replays can be compared only when they read the same traffic (the
/// same sources: names, lines, bytes and content hash) with the same
/// variants, and both kept every decision row.
fn comparable(a: &ReplayDir, b: &ReplayDir) -> Result<(), CannotJudge> {
    // The same bytes under another path (`./seed.jsonl`, a copy, a `.gz`
    // of it) are the same traffic: names are not compared.
    let content = |d: &ReplayDir| -> Vec<(Option<u64>, Option<u64>, Option<String>)> {
        d.summary
            .source_facts
            .iter()
            .map(|s| (s.lines, s.bytes, s.xxh3.clone()))
            .collect()
    };
    if content(a) != content(b) {
        return Err(different_traffic(a, b));
    }
    if a.variant_names() != b.variant_names() {
        return Err(CannotJudge::new(format!(
            "the two replays have different variants ({} against {}): diff compares the same variants under two configs",
            a.variant_names().join(", "),
            b.variant_names().join(", ")
        )));
    }
    let (ta, tb) = (a.summary.turns, b.summary.turns);
    if ta != tb {
        return Err(CannotJudge(crate::said![format!("the two replays read the same traffic but kept different turns ({ta} in {}, {tb} in {}; e.g. another ", a.path.display(), b.path.display()), crate::vocab::Setting::MaxLineBytes, "): their decisions cannot be compared turn by turn"]));
    }
    for d in [a, b] {
        if d.summary.decisions != "all" {
            return Err(CannotJudge(crate::said![
                format!(
                    "{}: decisions.csv holds {:?} rows; diff needs every row: replay with ",
                    d.path.display(),
                    d.summary.decisions
                ),
                crate::vocab::Setting::Decisions,
                " all"
            ]));
        }
    }
    Ok(())
}

/// Two replays of different sources, each source shown with its facts.
fn different_traffic(a: &ReplayDir, b: &ReplayDir) -> CannotJudge {
    let show = |d: &ReplayDir| {
        let opt = |x: Option<u64>| x.map_or("null".to_string(), |n| n.to_string());
        d.summary
            .source_facts
            .iter()
            .map(|s| {
                format!(
                    "{:?} ({} lines, {} bytes, xxh3 {})",
                    s.name,
                    opt(s.lines),
                    opt(s.bytes),
                    s.xxh3
                        .as_deref()
                        .map_or("null".to_string(), |h| format!("{h:?}"))
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    CannotJudge::new(format!(
        "the two replays read different traffic, so their decisions cannot be compared:\n  {}: {}\n  {}: {}",
        a.path.display(),
        show(a),
        b.path.display(),
        show(b)
    ))
}

/// decisions.csv has exactly one row per (turn, variant): a truncated or
/// header-only file is refused.
fn complete(dir: &ReplayDir, rows: &[Vec<String>]) -> Result<(), CannotJudge> {
    let turns = dir.summary.turns;
    let want = turns * dir.variant_names().len() as u64;
    if rows.len() as u64 != want {
        return Err(CannotJudge::new(format!(
            "{}: decisions.csv has {} rows, but {turns} turns x {} variants make {want}: the folder is damaged",
            dir.path.display(),
            rows.len(),
            dir.variant_names().len()
        )));
    }
    Ok(())
}

/// Every figure of every variant, old against new.
fn metric_deltas(a: &ReplayDir, b: &ReplayDir) -> Vec<MetricDelta> {
    let mut metrics = Vec::new();
    for v in b.variant_names() {
        let old = a.variant(&v).numbers();
        for ((metric, new), (_, old)) in b.variant(&v).numbers().into_iter().zip(old) {
            if new.is_some() || old.is_some() {
                metrics.push(MetricDelta {
                    variant: v.clone(),
                    metric,
                    old,
                    new,
                });
            }
        }
    }
    metrics
}

/// Compare `old` and `new` replay folders.
pub fn diff(old: &Path, new: &Path) -> Result<DiffResult, CannotJudge> {
    let (a, b) = (ReplayDir::open(old)?, ReplayDir::open(new)?);
    comparable(&a, &b)?;
    let metrics = metric_deltas(&a, &b);
    let old_rows = decisions(old)?;
    let new_rows = decisions(new)?;
    complete(&a, &old_rows)?;
    complete(&b, &new_rows)?;
    let index: HashMap<String, &Vec<String>> = old_rows
        .iter()
        .map(|r| Ok((match_key(&a, &r[0], &r[3], &r[4])?, r)))
        .collect::<Result<_, CannotJudge>>()?;
    let old_regressions = regression_keys(&a, old)?;
    let new_regressions: HashSet<String> = regression_keys(&b, new)?
        .into_iter()
        .filter(|k| !old_regressions.contains(k))
        .collect();
    let mut flips = Vec::new();
    let mut compared = 0;
    for r in &new_rows {
        let key = match_key(&b, &r[0], &r[3], &r[4])?;
        let Some(o) = index.get(&key) else { continue };
        compared += 1;
        if o[5] != r[5] {
            let mut flip = Flip::of(o, r, &b.path)?;
            flip.new_regression = new_regressions.contains(&key);
            flips.push(flip);
        }
    }
    // New safety regressions first; otherwise the candidate's order.
    flips.sort_by_key(|f| !f.new_regression);
    let turn = |f: &&Flip| (f.source.clone(), f.line);
    let turns_where = |keep: &dyn Fn(&Flip) -> bool| {
        flips
            .iter()
            .filter(|f| keep(f))
            .map(|f| turn(&f))
            .collect::<HashSet<_>>()
            .len()
    };
    let per_variant = b
        .variant_names()
        .into_iter()
        .map(|v| {
            let of = |f: &&Flip| f.variant == v;
            let flipped = flips.iter().filter(of).count();
            let regressions = flips.iter().filter(of).filter(|f| f.new_regression).count();
            (v, flipped, regressions)
        })
        .collect();
    let variants = b.variant_names().len().max(1);
    Ok(DiffResult {
        runs: [a.summary.run.clone(), b.summary.run.clone()],
        metrics,
        compared_turns: compared / variants,
        flipped_turns: turns_where(&|_| true),
        new_regression_turns: turns_where(&|f| f.new_regression),
        per_variant,
        flips,
        new_regressions: new_regressions.len(),
        compared_rows: compared,
    })
}

/// The files `diff` writes (by default into the new replay's folder; a
/// later replay into that folder removes them).
pub use crate::summary::schema::DIFF_FILES;

impl DiffResult {
    /// What `diff` prints: the counts, every metric that changed, the first
    /// flips, and where the files are.
    pub fn render_text(&self, out: &Path) -> String {
        let changed: Vec<&MetricDelta> = self
            .metrics
            .iter()
            .filter(|m| m.delta().is_some_and(|x| x != 0.0) || m.old.is_some() != m.new.is_some())
            .collect();
        let count = crate::summary::text::count;
        let mut text = format!(
            "{} compared ({}); {} flipped, {} with a new safety regression; {} of {} metrics changed\n",
            count(self.compared_turns as u64, "turn", "turns"),
            count(self.compared_rows as u64, "decision row", "decision rows"),
            count(self.flipped_turns as u64, "turn", "turns"),
            self.new_regression_turns,
            changed.len(),
            self.metrics.len()
        );
        for (v, flipped, regressions) in &self.per_variant {
            let _ = writeln!(
                text,
                "  {v:<10} {} flipped, {}",
                count(*flipped as u64, "turn", "turns"),
                count(
                    *regressions as u64,
                    "new safety regression",
                    "new safety regressions"
                )
            );
        }
        for m in &changed {
            let f = |x: Option<f64>| x.map_or("n/a".to_string(), |x| format!("{x}"));
            let delta = m.delta().map_or("n/a".to_string(), |d| format!("{d:+}"));
            let _ = writeln!(
                text,
                "  {:<10} {:<34} {} -> {} ({delta})",
                m.variant,
                m.metric,
                f(m.old),
                f(m.new),
            );
        }
        for fl in self.flips.iter().take(10) {
            let _ = writeln!(text, "  {}", fl.line_text());
        }
        let _ = writeln!(
            text,
            "wrote {} and {}",
            out.join(DIFF_FILES[0]).display(),
            out.join(DIFF_FILES[1]).display()
        );
        text
    }
}

impl Flip {
    /// The flip between an old and a new row of decisions.csv (in
    /// [`DECISION_COLS`] order); a field that is not what the replay
    /// writes is a damaged folder.
    fn of(old: &[String], new: &[String], path: &Path) -> Result<Flip, CannotJudge> {
        let bad = |col: &str, v: &str, want: &str| {
            CannotJudge::new(format!(
                "{}: decisions.csv: {col} {v:?} is not {want}: the folder is damaged",
                path.with_file_name("decisions.csv").display()
            ))
        };
        let whole = |col, v: &str| v.parse::<u64>().map_err(|_| bad(col, v, "a whole number"));
        let flag = |v: &str| match v {
            "true" => Ok(true),
            "false" => Ok(false),
            v => Err(bad("fires", v, "true or false")),
        };
        let text = |v: &String| (!v.is_empty()).then(|| v.clone());
        Ok(Flip {
            variant: new[0].clone(),
            run_id: new[1].clone(),
            turn: text(&new[2]).map(|t| whole("turn", &t)).transpose()?,
            source: new[3].clone(),
            line: whole("line", &new[4])?,
            old_fires: flag(&old[5])?,
            new_fires: flag(&new[5])?,
            old_reasons: old[6].clone(),
            new_reasons: new[6].clone(),
            verdict: text(&new[7]),
            new_regression: false,
        })
    }

    fn line_text(&self) -> String {
        let decision = |fires: bool| if fires { "fire" } else { "skip" };
        format!(
            "flip {} {}#{} ({}:{}): {} -> {}{}",
            self.variant,
            self.run_id,
            self.turn.map_or(String::new(), |t| t.to_string()),
            self.source,
            self.line,
            decision(self.old_fires),
            decision(self.new_fires),
            if self.new_regression {
                "  NEW SAFETY REGRESSION"
            } else {
                ""
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::{Flip, MetricDelta};

    /// Fields of decisions.csv that are not what a replay writes were
    /// copied into flips.csv as text; now the folder cannot be compared.
    #[test]
    fn a_damaged_decision_row_cannot_be_compared() {
        let row = |line: &str, turn: &str, fires: &str| -> Vec<String> {
            [
                "smart",
                "r",
                turn,
                "s.jsonl",
                line,
                fires,
                "trivial_ack",
                "",
            ]
            .map(str::to_string)
            .to_vec()
        };
        let p = std::path::Path::new("new/summary.json");
        let f = Flip::of(&row("3", "", "true"), &row("3", "", "false"), p).unwrap();
        assert_eq!((f.line, f.turn, f.verdict), (3, None, None));
        for (new, says) in [
            (row("x", "1", "false"), "line \"x\" is not a whole number"),
            (row("3", "-1", "false"), "turn \"-1\" is not a whole number"),
            (row("3", "1", "yes"), "fires \"yes\" is not true or false"),
        ] {
            let e = Flip::of(&row("3", "1", "true"), &new, p).unwrap_err().0;
            assert!(e.contains(says) && e.contains("new/decisions.csv"), "{e}");
        }
    }

    #[test]
    fn a_delta_has_no_float_noise() {
        let m = |old, new| MetricDelta {
            variant: "smart".into(),
            metric: "skip_rate".into(),
            old,
            new,
        };
        assert_eq!(m(Some(0.1), Some(0.3)).delta(), Some(0.2));
        assert_eq!(m(Some(0.55), Some(0.5)).delta(), Some(-0.05));
        assert_eq!(m(None, Some(0.5)).delta(), None);
    }
}
