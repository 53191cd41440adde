//! `explain`: how each variant's gate decides one turn, and why. The turn
//! is inline JSON, a file, or standard input; a file may hold JSON Lines
//! (each turn is explained), or transcripts and traces (`from`).

use crate::cmd::args::{self, Flags};
use crate::options::{Setting, Values};
use std::borrow::Cow;
use std::path::PathBuf;

use crate::explain::{render_json, render_text, Seen};
use crate::import::InputFormat;
use crate::read::turn::Turn;
use crate::Error;

/// The command's one line in `critic-gate --help`, and the first of its
/// own `--help`.
pub const ABOUT: &str = "Explain how each gate decides one turn, and why";

/// What `--help` adds after the options: examples, exit codes, the
/// reference.
pub const HELP: &str = concat!(
    "Examples:
  critic-gate explain '{\"run_id\":\"r\",\"draft\":\"Got it, thanks!\"}'
  critic-gate explain turn.json --config gate.toml --json

",
    super::args::done!(),
    "
Reference: docs/gate-semantics.md."
);

// Its docs are the flags' help, where `[deployment]` names a config table.
#[allow(rustdoc::broken_intra_doc_links)]
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The turn: inline JSON (`{"run_id":...}`), a file of one turn or of
    /// JSON Lines, or `-` / nothing for standard input.
    pub turn: Option<String>,
    /// Gate config (TOML, or JSON if it ends in .json). Default: symfonic's
    /// defaults, explained as `legacy` (flag off) and `smart` (flag on).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The declared options (`options::EXPLAIN`).
    #[command(flatten)]
    pub flags: Flags<args::Explain>,
}

impl Args {
    /// The request these flags make.
    pub fn request(&self) -> Request {
        let turn = match self.turn.as_deref() {
            // Inline JSON: an object, or anything else JSON starts with that
            // a file name would not (`[]` is an invalid turn, not a path).
            Some(s) if s.trim_start().starts_with(['{', '[']) => Turns::Text {
                name: "argument".into(),
                text: s.to_string(),
            },
            None | Some("-") => Turns::Stdin,
            Some(path) => Turns::File(path.into()),
        };
        Request::of(turn, self.config.clone(), &self.flags.values)
    }
}

impl Request {
    /// The request the declared options (`options::EXPLAIN`) make, from
    /// either front end.
    pub fn of(turn: Turns, config: Option<PathBuf>, v: &Values) -> Request {
        Request {
            turn,
            config,
            json: v.switch(Setting::Json),
            from: v.name(Setting::From).expect("declared with a default"),
        }
    }
}

/// Where the turns to explain are.
#[derive(Clone, Debug)]
pub enum Turns {
    /// Given as text (`name` names it in messages): inline JSON on the
    /// command line, a turn from Python.
    Text {
        name: String,
        text: String,
    },
    File(PathBuf),
    Stdin,
}

/// What to explain, under which config.
#[derive(Clone, Debug)]
pub struct Request {
    pub turn: Turns,
    /// A gate config (None: symfonic's defaults as `legacy` and `smart`).
    pub config: Option<PathBuf>,
    /// One JSON object per turn instead of the readable trace.
    pub json: bool,
    pub from: InputFormat,
}

/// The explanation of every turn given, as `explain` prints it.
pub fn run(r: &Request) -> crate::Result<String> {
    let plan = super::load_plan(r.config.as_deref())?;
    let gates =
        crate::explain::gates(&plan).map_err(|e| super::in_config(e, r.config.as_deref()))?;
    match r.from {
        InputFormat::Traffic => plan
            .derived_once()
            .map_err(|e| super::in_config(e.into(), r.config.as_deref()))?,
        InputFormat::OpenaiChat | InputFormat::Otlp => {}
    }
    let (source, bytes) = match &r.turn {
        Turns::Text { name, text } => (name.clone(), text.as_bytes().to_vec()),
        Turns::Stdin => ("<stdin>".to_string(), crate::explain::read_input("-")?),
        Turns::File(path) => {
            let name = path.display().to_string();
            let bytes = crate::explain::read_input(&name)?;
            (name, bytes)
        }
    };
    let text = crate::explain::utf8_text(&source, &bytes)?;
    // The turns as each deployment the variants run with derives them.
    let (deployments, of) = plan.deployments();
    let each = deployments
        .iter()
        .map(|d| turn_lines(text, &source, r.from, d))
        .collect::<crate::Result<Vec<_>>>()?;
    let lines = &each[0];
    if lines.is_empty() {
        return Err(Error::Read(format!("{source}: no turn given").into()));
    }
    if let Some(other) = each.iter().find(|l| l.len() != lines.len()) {
        return Err(Error::Read(
            format!(
                "{source}: the variants' deployments make {} and {} turns of it: explain each deployment alone",
                lines.len(),
                other.len()
            )
            .into(),
        ));
    }
    let mut out = String::new();
    for (i, (n, _)) in lines.iter().enumerate() {
        let turns = each
            .iter()
            .map(|l| Turn::parse(&l[i].1).map_err(|e| invalid(&source, *n as u64, e.to_string())))
            .collect::<crate::Result<Vec<_>>>()?;
        let seen: Vec<Seen> = gates
            .iter()
            .zip(&of)
            .map(|((v, g), &k)| Seen::new(v, g, &turns[k], &plan))
            .collect();
        if r.json {
            out.push_str(&render_json(&turns[0], &seen).to_string());
            out.push('\n');
        } else {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&render_text(&turns[0], &seen));
        }
    }
    Ok(out)
}

/// An input line `explain` cannot take (there is nothing to set aside).
fn invalid(source: &str, line: u64, reason: impl Into<crate::options::Said>) -> Error {
    Error::InvalidLine {
        source: source.to_string(),
        line,
        reason: reason.into(),
        skippable: false,
    }
}

/// The traffic lines of `text` with their line numbers: as they are, or
/// converted from transcripts or traces under `deployment`.
fn turn_lines<'a>(
    text: &'a str,
    source: &str,
    from: InputFormat,
    deployment: &crate::deployment::Deployment,
) -> crate::Result<Vec<(usize, Cow<'a, str>)>> {
    match from {
        InputFormat::Traffic => {
            let lines = crate::explain::turn_lines(text);
            return Ok(lines.into_iter().map(|(n, l)| (n, l.into())).collect());
        }
        InputFormat::OpenaiChat | InputFormat::Otlp => {}
    }
    let decoder = crate::import::Decoder::new(
        from,
        deployment.clone(),
        vec![source.to_string()].into(),
        crate::read::reader::DEFAULT_MAX_LINE_BYTES,
    );
    let lines = crate::import::convert_text(text, source, &decoder)
        .map_err(|(n, e)| invalid(source, n, e.0))?;
    Ok(lines
        .into_iter()
        .map(|(n, l)| (n as usize, l.into()))
        .collect())
}
