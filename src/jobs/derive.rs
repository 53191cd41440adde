//! `derive`: the intent verdict and fabrication findings symfonic-core
//! 9.12.0 computes for each line of inputs, one JSON line out per line in;
//! or, timed, the derivations alone (the benchmark against upstream).

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
            .map_err(|e| crate::Error::Read(format!("{name}: {e}")))?;
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
            reason: e.to_string(),
            skippable: false,
        })?;
        out.push_str(&v.to_string());
        out.push('\n');
    }
    Ok(out)
}
