//! What a replay is asked to do: the sources, the plan, and which rows and
//! dimensions to keep.

use crate::config::Plan;

pub use crate::options::{DecisionsMode, Format, DEFAULT_MAX_ACK_SHARE};

/// What a replay was asked to do, by concern: what it reads, under which
/// plan, what it tallies, and what it writes. The engine (`Replayer`) takes
/// the first three and the rows' label; only the writers see `outputs`.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    /// The request's declared options, given or at their defaults
    /// (`crate::options`): the fields below are read from them, and an
    /// option newly declared is read here until it earns a field.
    pub flags: crate::options::Values,
    pub input: Input,
    pub plan: Plan,
    pub tallies: Tallies,
    pub outputs: Outputs,
}

/// What a replay reads, and how strictly.
#[derive(Clone, Debug)]
pub struct Input {
    pub sources: Vec<String>,
    /// The bytes of the one source, already in memory (the Python shard
    /// API); None: every source is read by its name.
    pub source_bytes: Option<std::sync::Arc<[u8]>>,
    /// The input's format (`--from`).
    pub from: crate::import::InputFormat,
    /// Set invalid lines aside instead of stopping (`--skip-invalid`).
    pub skip_invalid: bool,
    /// Longer lines are invalid (`--max-line-bytes`).
    pub max_line_bytes: usize,
    /// Only the turns of one part of the runs (`calibrate`).
    pub split: Option<Split>,
}

/// What a replay counts, beyond the summary's figures.
#[derive(Clone, Debug)]
pub struct Tallies {
    /// Extra grouping dimensions: dotted paths into the turn (`scope.channel`).
    pub group_by: Vec<String>,
    /// The scope keys made columns of decisions.csv and regressions.csv
    /// (`--scope-columns`); None: those of the input's first turns.
    pub scope_columns: Option<Vec<String>>,
    /// Tally the per-value and per-turn tables (segments, skips,
    /// regressions: a sweep of hundreds of variants leaves them out).
    pub detail: bool,
    /// A skip is risky when its matched ack covers less than this share of
    /// the draft (`--max-ack-share`, default [`DEFAULT_MAX_ACK_SHARE`]).
    pub max_ack_share: f64,
    /// Which decision rows are kept (`--decisions`).
    pub decisions: DecisionsMode,
    /// A plan's design (`--plan`): production's skips are tallied against
    /// its sample.
    pub design: Option<super::design::Design>,
}

/// What a replay writes.
#[derive(Clone, Debug)]
pub struct Outputs {
    /// The run's name, the `run` column of every table (`--label`;
    /// the command line defaults it to the output folder's name).
    pub label: String,
    /// CSV, Parquet or both, for every table.
    pub format: Format,
    /// Write into a non-empty folder that holds no earlier report.
    pub force: bool,
    /// Also write the sweep's files (frontier.csv, frontier.svg).
    pub frontier: bool,
    /// Notes on the plan (a sweep's axes not multiplied), in summary.json.
    pub notes: Vec<String>,
}

impl ReplayOptions {
    /// The one output choice the engine needs: the label of the rows it
    /// renders as it replays (decisions.csv's `run` column).
    pub fn rows_label(&self) -> &str {
        &self.outputs.label
    }

    /// A replay of `sources` under `plan` with every option at its
    /// command-line default: stop at the first invalid line, every
    /// decision row, CSV, scope columns found from the first turns.
    pub fn new(sources: Vec<String>, plan: Plan, label: String) -> ReplayOptions {
        ReplayOptions {
            flags: crate::options::Values::defaults(crate::options::REPLAY),
            input: Input {
                sources,
                source_bytes: None,
                from: crate::import::InputFormat::Traffic,
                skip_invalid: false,
                max_line_bytes: crate::read::reader::DEFAULT_MAX_LINE_BYTES,
                split: None,
            },
            plan,
            tallies: Tallies {
                group_by: Vec::new(),
                scope_columns: None,
                detail: true,
                max_ack_share: DEFAULT_MAX_ACK_SHARE,
                decisions: DecisionsMode::All,
                design: None,
            },
            outputs: Outputs {
                label,
                format: Format::Csv,
                force: false,
                frontier: false,
                notes: Vec::new(),
            },
        }
    }
}

/// One part of the traffic, by a seeded hash of `run_id`: every turn of a
/// run falls in the same part, and the parts do not depend on the order
/// or the files the runs come in (`calibrate`: learn, calibration and,
/// unless left out, held-out).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Split {
    pub seed: u64,
    /// How many parts the runs are dealt into (2 or 3).
    pub parts: u8,
    /// Which of them this replay reads (0-based).
    pub part: u8,
}

impl Split {
    /// Whether the run falls in this part.
    pub fn keeps(&self, run_id: &str) -> bool {
        let h = xxhash_rust::xxh3::xxh3_64_with_seed(run_id.as_bytes(), self.seed);
        h % u64::from(self.parts.max(1)) == u64::from(self.part)
    }
}

/// The output folder's name: what a run is called unless `--label` says
/// (`.` and `..` are named by the folder they stand for; `run` when it has
/// no name).
pub fn default_label(out: &std::path::Path) -> String {
    let named = |p: &std::path::Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    named(out)
        .or_else(|| std::fs::canonicalize(out).ok().as_deref().and_then(named))
        .unwrap_or_else(|| "run".to_string())
}
