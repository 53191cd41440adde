//! `labels`: bring a shadow critic's verdicts back into the traffic. Each
//! verdict (a line of the verdicts file, keyed by `run_id` and `turn`)
//! that falls on a skip of production's gate the plan drew becomes that
//! turn's `sampled_label` (source `shadow`, with its inclusion probability and the
//! plan's id); every other line of the traffic is copied as it was read.
//! Duplicates, conflicting duplicates, verdicts on turns the plan did not
//! draw, unknown keys and failed calls are each counted and said, never
//! used silently. A verdict beside a failed call for the same turn is a
//! retry that came back (counted as such); two different verdicts are a
//! contradiction. The output depends on the traffic and the set of
//! verdicts only: the same file whatever order the verdicts come in.

use std::collections::BTreeMap;
use std::io::{BufRead, Read as _, Write as _};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::cmd::args::Flags;
use crate::cmd::{Config, Pass};
use crate::options::Values;
use crate::replay::design::Design;
use crate::Error;

/// The command's one line in `critic-gate --help`, and the first of its
/// own `--help`.
pub const ABOUT: &str = "Bring a shadow critic's verdicts on a plan's sample back into the \
     traffic, each as a label with its inclusion probability";

/// What `--help` adds after the options.
pub const HELP: &str = concat!(
    "Example:
  critic-gate labels traffic.jsonl --verdicts shadow/verdicts.jsonl --plan plan/plan.toml \\
    --config gate.toml --out labelled.jsonl

",
    super::args::done!(),
    "
Reference: docs/watching.md."
);

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Traffic files in critic-gate's format (import traces or
    /// transcripts first).
    #[arg(required = true)]
    pub files: Vec<String>,
    /// The verdicts: one JSON object a line, {"run_id", "turn", "verdict"}
    /// or {"run_id", "turn", "error"} for a failed call.
    #[arg(long)]
    pub verdicts: PathBuf,
    /// The plan the sample was drawn by (plan.toml).
    #[arg(long)]
    pub plan: PathBuf,
    /// Gate config: its production variant must have the plan's gate
    /// settings (default: symfonic's defaults).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The labelled traffic (a new file; --force replaces one).
    #[arg(long)]
    pub out: PathBuf,
    /// The declared options (`options::LABELS`).
    #[command(flatten)]
    pub flags: Flags<super::args::Labels>,
}

impl Args {
    /// The request these flags make.
    pub fn request(&self) -> Request {
        Request::of(
            self.files.clone(),
            self.verdicts.clone(),
            self.plan.clone(),
            self.config.clone().into(),
            self.out.clone(),
            &self.flags.values,
        )
    }
}

impl Request {
    /// The request the declared options (`options::LABELS`) make, from
    /// either front end.
    pub fn of(
        sources: Vec<String>,
        verdicts: PathBuf,
        plan: PathBuf,
        config: Config,
        out: PathBuf,
        v: &Values,
    ) -> Request {
        Request {
            sources,
            verdicts,
            plan,
            config,
            out,
            pass: Pass::of(v),
        }
    }
}

/// What to label.
#[derive(Clone, Debug)]
pub struct Request {
    pub sources: Vec<String>,
    pub verdicts: PathBuf,
    pub plan: PathBuf,
    pub config: Config,
    pub out: PathBuf,
    /// How the traffic is read, and whether `out` may be overwritten.
    pub pass: Pass,
}

/// What `labels` did, by count.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    pub turns: u64,
    pub rejected: u64,
    /// Verdict lines read.
    pub verdicts: u64,
    /// Turns given a label: a verdict, or a failed call.
    pub labelled: u64,
    pub failed: u64,
    /// Labels whose verdict came back after a failed call for the same
    /// turn (a retry).
    pub retried: u64,
    /// Lines repeating a key with the same record (used once).
    pub duplicates: u64,
    /// Keys whose lines disagree (none used).
    pub conflicting: u64,
    /// Verdicts on turns production's gate fired on, or the plan did not
    /// draw (not used).
    pub not_drawn: u64,
    /// Verdicts whose key no turn of the traffic has.
    pub unknown: u64,
}

/// The labelled traffic written, and what was said of it.
pub struct Labelled {
    pub counts: Counts,
    pub text: String,
}

/// One verdict line's record, as the label will hold it.
#[derive(Clone, Debug, PartialEq)]
struct Record {
    label: Value,
    failed: bool,
}

/// A key's records: one, or a conflict.
#[derive(Debug)]
struct Entry {
    record: Record,
    conflict: bool,
    used: bool,
    /// A failed call was read for the key: with a verdict, a retry.
    failed_before: bool,
}

impl Entry {
    /// Another line for the same key. A verdict beside failed calls is a
    /// retry that came back, whichever line comes first; of several failed
    /// calls the one whose label sorts first stands (so the order of the
    /// lines does not matter); two different verdicts are a conflict.
    /// Returns whether the line repeated the record already held.
    fn another(&mut self, record: Record) -> bool {
        if self.record == record {
            return true;
        }
        match (self.record.failed, record.failed) {
            (true, false) => {
                self.failed_before = true;
                self.record = record;
            }
            (false, true) => self.failed_before = true,
            (true, true) => {
                // The order of the lines must not matter: the label that
                // sorts first as text stands.
                let text = |r: &Record| r.label.to_string();
                if text(&record) < text(&self.record) {
                    self.record = record;
                }
            }
            (false, false) => self.conflict = true,
        }
        false
    }
}

type Key = (String, Option<u64>);

/// The verdicts by run id, then turn: a turn looks its own up by the run
/// id it holds, with no key built per line.
type Verdicts = BTreeMap<String, BTreeMap<Option<u64>, Entry>>;

/// Label the traffic.
pub fn run(r: &Request) -> crate::Result<Labelled> {
    let config = r.config.plan()?;
    let design = super::sample::design_of(&r.plan, &config)?;
    let member = super::sample::Member::new(&design, &config, &r.config)?;
    let mut counts = Counts::default();
    let mut verdicts = read_verdicts(&r.verdicts, &design, r.pass.max_line_bytes, &mut counts)?;
    if r.out.exists() && !r.pass.force {
        return Err(Error::Usage(crate::said![
            format!("{}: the file exists; give another ", r.out.display()),
            crate::vocab::Setting::Out,
            ", or ",
            crate::vocab::Setting::Force,
            " to replace it"
        ]));
    }
    let decoder = crate::import::Decoder::new(
        r.pass.from,
        config.deployment.clone(),
        r.sources.clone().into(),
        r.pass.max_line_bytes,
    );
    write(r, &design, &member, &decoder, &mut verdicts, &mut counts)?;
    let entries = || verdicts.values().flat_map(BTreeMap::values);
    counts.unknown = entries().filter(|e| !e.used && !e.conflict).count() as u64;
    counts.conflicting = entries().filter(|e| e.conflict).count() as u64;
    let text = said(&counts, &r.out);
    Ok(Labelled { counts, text })
}

/// The verdicts file, keyed; a line that is not a verdict stops it with
/// its line and reason, and so does a verdict of another plan.
fn read_verdicts(
    path: &Path,
    design: &Design,
    max_line_bytes: usize,
    counts: &mut Counts,
) -> crate::Result<Verdicts> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| {
        Error::Read(crate::Failure::caused(
            format!("{name}: cannot read the verdicts: {e}"),
            e,
        ))
    })?;
    let mut map = Verdicts::new();
    let mut reader = std::io::BufReader::new(file);
    let mut buf = Vec::new();
    let mut line = 0u64;
    loop {
        buf.clear();
        let n = (&mut reader)
            .take(max_line_bytes as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| Error::Read(crate::Failure::caused(format!("{name}: {e}"), e)))?;
        if n == 0 {
            break;
        }
        line += 1;
        // The reason keeps its settings as data: each front end spells them.
        let invalid = |reason: crate::options::Said| Error::InvalidLine {
            source: name.clone(),
            line,
            reason,
            skippable: false,
        };
        if buf.len() > max_line_bytes && !buf.ends_with(b"\n") {
            return Err(invalid(crate::said![
                format!("the line is longer than {max_line_bytes} bytes ("),
                crate::vocab::Setting::MaxLineBytes,
                ")"
            ]));
        }
        let text = std::str::from_utf8(&buf).map_err(|e| {
            invalid(format!("bytes are not UTF-8 (at byte {})", e.valid_up_to()).into())
        })?;
        if text.trim().is_empty() {
            continue;
        }
        counts.verdicts += 1;
        let ((run, turn), record) = verdict(text, design).map_err(|r| invalid(r.into()))?;
        match map.entry(run).or_default().entry(turn) {
            std::collections::btree_map::Entry::Vacant(v) => {
                let failed_before = record.failed;
                v.insert(Entry {
                    record,
                    conflict: false,
                    used: false,
                    failed_before,
                });
            }
            std::collections::btree_map::Entry::Occupied(mut e) => {
                counts.duplicates += u64::from(e.get_mut().another(record));
            }
        }
    }
    Ok(map)
}

/// One verdict line: its key and the label it gives.
fn verdict(text: &str, design: &Design) -> Result<(Key, Record), String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let o = v.as_object().ok_or("a verdict is a JSON object")?;
    let run_id = o
        .get("run_id")
        .and_then(Value::as_str)
        .ok_or("run_id is missing or not a string")?;
    let turn = match o.get("turn") {
        None | Some(Value::Null) => None,
        Some(t) => Some(
            t.as_u64()
                .ok_or("turn must be a whole number >= 0 or null")?,
        ),
    };
    if let Some(id) = o.get("plan_id").filter(|p| !p.is_null()) {
        if id.as_str() != Some(design.plan_id.as_str()) {
            return Err(format!(
                "the verdict names plan {id}, not this plan ({}): verdicts of another plan's sample cannot be labels of this one",
                design.plan_id
            ));
        }
    }
    let verdict = match o.get("verdict") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if ["approve", "revise", "refuse"].contains(&s.as_str()) => {
            Some(s.clone())
        }
        Some(other) => {
            return Err(format!(
                "verdict must be \"approve\", \"revise\" or \"refuse\", got {other}"
            ))
        }
    };
    let error = match o.get("error") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.chars().take(200).collect::<String>()),
        Some(other) => return Err(format!("error must be a string, got {other}")),
    };
    if verdict.is_some() == error.is_some() {
        return Err(
            "give either a verdict or an error (a failed call), not both or neither".into(),
        );
    }
    let mut label = serde_json::Map::new();
    label.insert("format".into(), json!(crate::read::turn::LABEL_FORMAT));
    label.insert("source".into(), json!("shadow"));
    label.insert("plan_id".into(), json!(design.plan_id));
    label.insert("probability".into(), Value::Null);
    match (&verdict, &error) {
        (Some(v), _) => label.insert("verdict".into(), json!(v)),
        (_, e) => label.insert("error".into(), json!(e)),
    };
    for k in ["tokens_in", "tokens_out"] {
        if let Some(x) = o.get(k).filter(|x| !x.is_null()) {
            let n = x
                .as_u64()
                .ok_or(format!("{k} must be a whole number >= 0"))?;
            label.insert(k.into(), json!(n));
        }
    }
    if let Some(x) = o.get("latency_ms").filter(|x| !x.is_null()) {
        let ms = x
            .as_f64()
            .filter(|m| (0.0..=crate::read::turn::MAX_LATENCY_MS).contains(m))
            .ok_or("latency_ms must be a number of ms from 0 to 86400000")?;
        label.insert("latency_ms".into(), json!(ms));
    }
    if let Some(x) = o.get("model").filter(|x| !x.is_null()) {
        let m = x.as_str().ok_or("model must be a string")?;
        label.insert(
            "model".into(),
            json!(m.chars().take(200).collect::<String>()),
        );
    }
    let record = Record {
        label: Value::Object(label),
        failed: error.is_some(),
    };
    Ok(((run_id.to_string(), turn), record))
}

/// The pass: the traffic copied to a temporary file, each drawn skip with
/// a verdict given its label, then moved into place.
fn write(
    r: &Request,
    design: &Design,
    member: &super::sample::Member,
    decoder: &crate::import::Decoder,
    verdicts: &mut Verdicts,
    counts: &mut Counts,
) -> crate::Result<()> {
    let fail = |e: std::io::Error| {
        Error::Write(crate::Failure::caused(
            format!("{}: {e}", r.out.display()),
            e,
        ))
    };
    let mut file =
        crate::report::WholeFile::create(&r.out, crate::report::beside(&r.out, "partial"))
            .map_err(fail)?;
    let w = file.writer();
    let mut problem: Option<Error> = None;
    let read = crate::cmd::mine::scan::each_line(
        &r.sources,
        r.pass.max_line_bytes,
        r.pass.skip_invalid,
        decoder,
        &mut |t, raw, (source, line)| {
            if problem.is_some() {
                return;
            }
            let Some(raw) = raw else {
                problem = Some(Error::Usage(
                    "labels copies traffic in critic-gate's format: convert traces or transcripts with `critic-gate import` first".into(),
                ));
                return;
            };
            let text = match labelled_line(t, raw, design, member, verdicts, counts) {
                Ok(text) => text,
                Err(reason) => {
                    problem = Some(Error::InvalidLine {
                        source: r.sources[source].clone(),
                        line,
                        reason: reason.into(),
                        skippable: false,
                    });
                    return;
                }
            };
            if let Err(e) = writeln!(w, "{text}") {
                problem = Some(Error::Write(crate::Failure::caused(
                    format!("{}: {e}", r.out.display()),
                    e,
                )));
            }
        },
        &|| r.pass.stop.stopped(),
    );
    let done = read.and_then(|read| match problem.take() {
        Some(e) => Err(e),
        None => Ok(read),
    });
    let read = done?;
    // A Ctrl-C after the last block: the file is not moved into place.
    r.pass.stop.check()?;
    counts.turns = read.turns;
    counts.rejected = read.rejected;
    file.finish().map_err(fail)
}

/// One line of the output: `raw`, with a label when a verdict falls on a
/// skip the plan drew. Err: the line holds a label already.
fn labelled_line<'a>(
    t: &crate::read::turn::Turn,
    raw: &'a str,
    design: &Design,
    member: &super::sample::Member,
    verdicts: &mut Verdicts,
    counts: &mut Counts,
) -> Result<std::borrow::Cow<'a, str>, String> {
    let Some(e) = verdicts
        .get_mut(&*t.run_id)
        .and_then(|turns| turns.get_mut(&t.turn))
    else {
        return Ok(raw.into());
    };
    if t.label.is_some() {
        return Err(
            "the turn holds a label already: label traffic that has none (the file `labels` read, not its output)".into(),
        );
    }
    e.used = true;
    if e.conflict {
        return Ok(raw.into());
    }
    let probability = match member.holds(t) {
        true => Some(design.place(t))
            .filter(|p| p.drawn)
            .map(|p| p.probability),
        // A reviewed fire the fidelity coin drew.
        false => (t.verdict().is_some() && design.fidelity_drawn(t)).then_some(design.fidelity),
    };
    let Some(probability) = probability else {
        counts.not_drawn += 1;
        return Ok(raw.into());
    };
    let mut label = e.record.label.clone();
    label["probability"] = json!(probability);
    counts.labelled += 1;
    counts.failed += u64::from(e.record.failed);
    counts.retried += u64::from(e.failed_before && !e.record.failed);
    let body = raw.trim_end();
    let open = body
        .strip_suffix('}')
        .ok_or("the line does not end its object")?;
    Ok(format!("{open},\"sampled_label\":{label}}}").into())
}

/// What `labels` prints.
fn said(c: &Counts, out: &Path) -> String {
    let mut s = format!(
        "labels: {} of {} verdicts became labels ({} failed calls among them{}): {}\n",
        c.labelled,
        c.verdicts,
        c.failed,
        match c.retried {
            0 => String::new(),
            n => format!("; {n} came back on a retry after a failed call"),
        },
        out.display()
    );
    let skipped = crate::said![
        "invalid traffic lines left out (",
        crate::vocab::Setting::SkipInvalid,
        ")"
    ]
    .to_string();
    let unused = [
        (c.duplicates, "repeated a verdict already read (used once)"),
        (
            c.conflicting,
            "keys had verdicts that disagree (none of them used)",
        ),
        (
            c.not_drawn,
            "fell on turns outside the plan's population or that its coin did not draw (not used)",
        ),
        (
            c.unknown,
            "name a run_id and turn the traffic does not hold (not used)",
        ),
        (c.rejected, skipped.as_str()),
    ];
    for (n, what) in unused.iter().filter(|(n, _)| *n > 0) {
        s.push_str(&format!("  {n} {what}\n"));
    }
    s
}
