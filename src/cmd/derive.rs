//! `derive`: the intent verdict and fabrication findings symfonic-core
//! 9.12.0 computes for each line of inputs, one JSON line out per line in;
//! or, timed, the derivations alone (the benchmark against upstream).

/// The command's one line in `critic-gate --help`, and the first of its
/// own `--help`.
pub const ABOUT: &str = "The intent verdict and fabrication findings symfonic computes for each \
     line of inputs (user message, draft, tool calls, the domain)";

/// What `--help` adds after the options: examples, exit codes, the
/// reference.
pub const HELP: &str = concat!(
    "Example:
  echo '{\"user_message\": \"send the report\", \"draft\": \"I sent it.\"}' | critic-gate derive -

",
    super::args::done!(),
    "
Reference: docs/importing.md."
);

#[derive(clap::Args, Debug)]
pub struct Args {
    /// JSON Lines of inputs (plain, .gz or .zst; `-` is standard input):
    /// `{"user_message", "draft", "tool_calls", "identifier_keys",
    /// "tool_trigger_keywords", "hydrated_context", "intent_on"}`.
    pub file: String,
    /// Benchmark: time the derivations alone (every line read first) and
    /// print `TURNS SECONDS FINDINGS`.
    #[arg(long, hide = true)]
    pub time: bool,
}

impl Args {
    /// The request these flags make.
    pub fn request(&self) -> Request {
        Request {
            file: self.file.clone(),
            time: self.time,
        }
    }
}

/// What to derive.
#[derive(Clone, Debug)]
pub struct Request {
    /// JSON Lines of inputs (plain, .gz or .zst; `-` is standard input).
    pub file: String,
    /// Time the derivations alone instead (`TURNS SECONDS FINDINGS`).
    pub time: bool,
}

/// What `derive` prints.
pub fn run(r: &Request) -> crate::Result<String> {
    let name = if r.file == "-" { "<stdin>" } else { &r.file };
    let bytes = crate::explain::read_input(&r.file)?;
    let text = crate::explain::utf8_text(name, &bytes)?;
    // A byte-order mark at the start of the file is skipped, as replay does.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if r.time {
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let (n, secs, findings) = crate::derive::time_derivations(&lines)
            .map_err(|e| crate::Error::Read(crate::Failure::caused(format!("{name}: {e}"), e)))?;
        return Ok(format!("{n} {secs:.3} {findings}\n"));
    }
    let mut out = String::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v = crate::derive::derive_line(line).map_err(|e| crate::Error::InvalidLine {
            source: name.to_string(),
            line: n as u64 + 1,
            reason: e.to_string().into(),
            skippable: false,
        })?;
        out.push_str(&v.to_string());
        out.push('\n');
    }
    Ok(out)
}
