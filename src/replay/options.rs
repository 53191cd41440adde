//! What a replay is asked to do: the sources, the plan, and which rows and
//! dimensions to keep.

use crate::config::Plan;
use crate::vocab::{choose, UnknownName};

/// Which decision rows to keep.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DecisionsMode {
    /// Every (turn, variant).
    #[default]
    All,
    /// Only rows where the variant decides differently from the baseline.
    Changed,
    /// None (summary reports only).
    None,
}

impl DecisionsMode {
    /// Every mode, in the order `--help` lists them: the one table the
    /// names, the parser and the flag's values come from.
    pub const ALL: [DecisionsMode; 3] = [
        DecisionsMode::All,
        DecisionsMode::Changed,
        DecisionsMode::None,
    ];

    /// The names `--decisions` takes, in the order of [`DecisionsMode::ALL`].
    pub const NAMES: [&'static str; 3] = {
        let mut names = [""; 3];
        let mut i = 0;
        while i < names.len() {
            names[i] = DecisionsMode::ALL[i].name();
            i += 1;
        }
        names
    };

    /// The name `--decisions` takes (recorded in summary.json).
    pub const fn name(self) -> &'static str {
        match self {
            DecisionsMode::All => "all",
            DecisionsMode::Changed => "changed",
            DecisionsMode::None => "none",
        }
    }

    /// Whether the rows hold every new skip (a new skip is a changed
    /// decision), so the summary's figures can be worked out from them.
    pub const fn keeps_new_skips(self) -> bool {
        match self {
            DecisionsMode::All | DecisionsMode::Changed => true,
            DecisionsMode::None => false,
        }
    }
}

impl serde::Serialize for DecisionsMode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for DecisionsMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl std::str::FromStr for DecisionsMode {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<DecisionsMode, UnknownName> {
        choose(
            crate::vocab::Setting::Decisions,
            s,
            &DecisionsMode::NAMES,
            &DecisionsMode::ALL,
        )
    }
}

/// The files each report table is written as (`--format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    #[default]
    Csv,
    Parquet,
    Both,
}

impl Format {
    /// Every format, in the order `--help` lists them: the one table the
    /// names, the parser and the flag's values come from.
    pub const ALL: [Format; 3] = [Format::Csv, Format::Parquet, Format::Both];

    /// The names `--format` takes, in the order of [`Format::ALL`].
    pub const NAMES: [&'static str; 3] = {
        let mut names = [""; 3];
        let mut i = 0;
        while i < names.len() {
            names[i] = Format::ALL[i].name();
            i += 1;
        }
        names
    };

    pub const fn name(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Parquet => "parquet",
            Format::Both => "both",
        }
    }

    /// Whether the tables are written as CSV.
    pub const fn csv(self) -> bool {
        match self {
            Format::Csv | Format::Both => true,
            Format::Parquet => false,
        }
    }

    /// Whether the tables are written as Parquet.
    pub const fn parquet(self) -> bool {
        match self {
            Format::Parquet | Format::Both => true,
            Format::Csv => false,
        }
    }
}

impl std::str::FromStr for Format {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Format, UnknownName> {
        choose(
            crate::vocab::Setting::Format,
            s,
            &Format::NAMES,
            &Format::ALL,
        )
    }
}

/// What a replay was asked to do, by concern: what it reads, under which
/// plan, what it tallies, and what it writes. The engine (`Replayer`) takes
/// the first three and the rows' label; only the writers see `outputs`.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
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

/// `--max-ack-share`'s default.
pub const DEFAULT_MAX_ACK_SHARE: f64 = 0.5;

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

#[cfg(test)]
mod names {
    use crate::replay::options::{DecisionsMode, Format};

    /// Each table's names parse back to their own value, and no two share
    /// a name (the tables `--decisions` and `--format` come from).
    #[test]
    fn every_name_parses_back_to_its_value() {
        for (m, n) in DecisionsMode::ALL.iter().zip(DecisionsMode::NAMES) {
            assert_eq!(n.parse::<DecisionsMode>().ok(), Some(*m));
        }
        for (f, n) in Format::ALL.iter().zip(Format::NAMES) {
            assert_eq!(n.parse::<Format>().ok(), Some(*f));
        }
        let mut all: Vec<&str> = DecisionsMode::NAMES.to_vec();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), DecisionsMode::ALL.len());
        assert!(Format::ALL.iter().all(|f| f.csv() || f.parquet()));
        assert_eq!(DecisionsMode::default().name(), "all");
    }
}
