//! The flags several commands share (`--from`, `--format`, what every
//! command that runs a replay takes) and the parsers that hold a flag's
//! value to the library's names before a request is built.

use clap::builder::TypedValueParser;

use crate::import::InputFormat;
use crate::replay::Format;

/// `--format`, for the commands that write tables as CSV or Parquet
/// (not `mine`, which writes CSV only).
#[derive(clap::Args, Debug)]
pub struct FormatArg {
    /// Write every table as csv, parquet (with the declared schema) or both.
    #[arg(long, default_value = Format::default().name(), value_parser = format())]
    pub format: Format,
}

/// What every command that runs a replay takes (`replay`, `sweep`,
/// `calibrate`, `mine`).
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The input's format: traffic (critic-gate's own), openai-chat
    /// (chat transcripts, one conversation a line) or otlp (symfonic's
    /// OpenTelemetry traces); see docs/import-formats.md.
    #[arg(long, default_value = "traffic", value_parser = from())]
    pub from: InputFormat,
    /// Worker threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Set invalid lines aside in rejects.jsonl instead of stopping.
    #[arg(long)]
    pub skip_invalid: bool,
    /// No progress bar and no summary on stderr.
    #[arg(long)]
    pub quiet: bool,
    /// Lines longer than this many bytes are invalid (read in constant
    /// memory, reported with their first 4 KiB).
    #[arg(long, value_name = "BYTES", default_value_t = crate::read::reader::DEFAULT_MAX_LINE_BYTES,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_line_bytes: usize,
    /// The run's name in the `run` column of every table and in
    /// summary.json, to tell runs apart when tables are joined or
    /// concatenated (default: the output folder's name).
    #[arg(long, value_name = "NAME", value_parser = label)]
    pub label: Option<String>,
    /// Write into --out even when it is a non-empty folder that holds no
    /// earlier critic-gate report.
    #[arg(long)]
    pub force: bool,
    /// A skip is risky when its matched ack covers less than this share of
    /// the draft (the summary's risky_* figures).
    #[arg(long, value_name = "SHARE", default_value_t = crate::replay::options::DEFAULT_MAX_ACK_SHARE, value_parser = ack_share)]
    pub max_ack_share: f64,
}

/// The flags of a command that reads traffic in one serial pass of its
/// own and writes a folder (`plan`, `sample`): declared once.
#[derive(clap::Args, Debug)]
pub struct PassArgs {
    /// The input's format: traffic, openai-chat or otlp.
    #[arg(long, default_value = "traffic", value_parser = from())]
    pub from: InputFormat,
    /// Count invalid lines instead of stopping.
    #[arg(long)]
    pub skip_invalid: bool,
    /// Lines longer than this many bytes are invalid.
    #[arg(long, value_name = "BYTES", default_value_t = crate::read::reader::DEFAULT_MAX_LINE_BYTES,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_line_bytes: usize,
    /// Write into --out even when it is a non-empty folder of no report.
    #[arg(long)]
    pub force: bool,
    /// Print nothing (the files say it all).
    #[arg(long)]
    pub quiet: bool,
}

impl RunArgs {
    /// How the commands read the traffic and name the run, from these flags.
    pub fn reading(&self) -> super::Reading {
        super::Reading {
            skip_invalid: self.skip_invalid,
            max_line_bytes: self.max_line_bytes,
            force: self.force,
            max_ack_share: self.max_ack_share,
            from: self.from,
            label: self.label.clone(),
        }
    }
}

/// A flag's value that is not one it takes: what to give, and what was
/// given (clap adds the flag).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadValue(String);

impl std::fmt::Display for BadValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadValue {}

/// A share in (0, 1].
fn ack_share(s: &str) -> Result<f64, BadValue> {
    match s.parse::<f64>() {
        Ok(x) if x > 0.0 && x <= 1.0 => Ok(x),
        _ => Err(BadValue(format!("give a share in (0, 1], got {s:?}"))),
    }
}

/// A share strictly between 0 and 1 (`--max-regression-rate`, `--delta`).
pub fn share(s: &str) -> Result<f64, BadValue> {
    match s.parse::<f64>() {
        Ok(x) if x > 0.0 && x < 1.0 => Ok(x),
        _ => Err(BadValue(format!(
            "give a number between 0 and 1 (exclusive), got {s:?}"
        ))),
    }
}

/// A share in [0, 1).
pub fn share_or_zero(s: &str) -> Result<f64, BadValue> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..1.0).contains(&x) => Ok(x),
        _ => Err(BadValue(format!(
            "give a number from 0 up to 1 (exclusive), got {s:?}"
        ))),
    }
}

/// `--format`: the library's names, parsed by the library.
pub fn format() -> impl TypedValueParser<Value = Format> {
    clap::builder::PossibleValuesParser::new(Format::NAMES).try_map(|s| s.parse::<Format>())
}

/// `--from`: the library's names, parsed by the library.
pub fn from() -> impl TypedValueParser<Value = InputFormat> {
    clap::builder::PossibleValuesParser::new(InputFormat::NAMES)
        .try_map(|s| s.parse::<InputFormat>())
}

/// `--label`: any text but the empty one (a run must be told apart).
pub fn label(s: &str) -> Result<String, BadValue> {
    match s {
        "" => Err(BadValue(
            "give a non-empty name (the run column of every table)".to_string(),
        )),
        s => Ok(s.to_string()),
    }
}

/// The exit codes of every command that decides nothing, for its help.
macro_rules! done {
    () => {
        "Exit codes: 0 done; 2 could not do it (an invalid line FILE:LINE, a bad config, an unreadable file, a refused output path)."
    };
}
pub(crate) use done;
