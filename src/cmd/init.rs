//! `init`: a commented starter config (legacy against smart, every gate key
//! at symfonic's default, the built-in ack patterns spelled out, prices,
//! budgets and the `[deployment]` table), written from the declarations so
//! it never drifts from what the tool reads.

use crate::cmd::args::{self, Flags};
use crate::options::{Setting, Values};
use std::fmt::Write as _;
use std::path::PathBuf;

use crate::budgets::BUDGETS;
use crate::config::FrameworkConfig;
use crate::gate::BUILTIN_ACK_PATTERNS;

/// The command's one line in `critic-gate --help`, and the first of its
/// own `--help`.
pub const ABOUT: &str = "Write a commented starter config (legacy against smart)";

/// What `--help` adds after the options: examples, exit codes, the
/// reference.
pub const HELP: &str = concat!(
    "Examples:
  critic-gate init                 # writes critic-gate.toml
  critic-gate init - | less        # prints it

",
    super::args::done!(),
    "
Reference: docs/config.md."
);

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The config file to write (`-`: standard output).
    #[arg(default_value = "critic-gate.toml")]
    pub file: PathBuf,
    /// The declared options (`options::INIT`).
    #[command(flatten)]
    pub flags: Flags<args::Init>,
}

impl Args {
    /// The request these flags make (`-`: standard output).
    pub fn request(&self) -> Request {
        let out = (self.file.as_os_str() != "-").then(|| self.file.clone());
        Request::of(out, &self.flags.values)
    }
}

impl Request {
    /// The request the declared options (`options::INIT`) make, from
    /// either front end (None: standard output).
    pub fn of(out: Option<PathBuf>, v: &Values) -> Request {
        Request {
            out,
            force: v.switch(Setting::Force),
        }
    }
}

/// Where the starter config goes.
#[derive(Clone, Debug)]
pub struct Request {
    /// The file to write (None: standard output).
    pub out: Option<PathBuf>,
    /// Replace an existing file.
    pub force: bool,
}

/// The budgets the starter config sets (the others are commented out).
const ACTIVE_BUDGETS: [(&str, &str); 2] = [
    ("max_safety_regressions", "0"),
    ("max_safety_regression_rate", "0.01"),
];

/// A string as a TOML basic string (JSON's escapes are TOML's).
pub fn toml_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// Patterns as a TOML array, one per line, each built-in one with its
/// language.
pub fn patterns_array(patterns: &[impl AsRef<str>]) -> String {
    let mut s = String::from("[\n");
    for p in patterns.iter().map(AsRef::as_ref) {
        let lang = crate::gate::builtin_language(p).map_or(String::new(), |l| format!("  # {l}"));
        let _ = writeln!(s, "    {},{lang}", toml_string(p));
    }
    s.push(']');
    s
}

/// A TOML key: bare when it can be, quoted otherwise.
pub fn toml_key(k: &str) -> String {
    let bare = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match bare {
        true => k.to_string(),
        false => toml_string(k),
    }
}

/// Each line of `text` commented out.
fn commented(text: &str) -> String {
    text.lines()
        .map(|l| format!("# {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The starter config's text.
pub fn starter_config() -> String {
    let d = FrameworkConfig::default();
    let mut s = String::new();
    let _ = write!(
        s,
        r#"# critic-gate config, written by `critic-gate init`. Every key is optional;
# the values shown are symfonic's defaults. Reference: docs/config.md.

# --- The gate: symfonic's FrameworkConfig keys, shared by every variant ---
# Legacy gate: the critic runs when graph confidence is below this (0..1).
metacognition_confidence_threshold = {threshold}
# Tags that count as a sensitive hit (both gates always run the critic then).
metacognition_sensitive_tags = []
# Tools that only read: a call to any other tool is a mutating action, a
# hard floor of the smart gate.
read_only_tools = []

# --- The variants: every one is evaluated on every turn, in one pass ---
# The baseline is what the others (the candidates) are measured against,
# usually what production runs today.
baseline = "legacy"
# The gate that produced the traffic (default: the baseline). Once it is the
# smart gate, its skips never reached the critic: their risk is unknown until
# a critic sample of them is labelled (docs/watching.md).
# production = "smart"

[variants.legacy]
metacognition_selective_gate = false

[variants.smart]
metacognition_selective_gate = true
# The smart gate skips a draft as a trivial ack only when one of these Python
# regexes matches its lowered, stripped text. Absent or empty, the list is
# symfonic's five built-ins (below); a list you set REPLACES them: keep the
# five (en, es, de, fr, pt) and add yours after them, or the acks they cover
# are no longer skipped. `critic-gate patterns --config FILE` prints the
# list each variant ends up with.
{patterns}

# --- Prices, for the dollar figures (absent, never 0, without them) ---
[cost]
# The model of critic events that name none.
default_model = "claude-opus"

[cost.models.claude-opus]
usd_per_mtok_in = 15.0
usd_per_mtok_out = 75.0

# --- Release budgets for `critic-gate check` (its flags override these) ---
[check]
"#,
        threshold = d.metacognition_confidence_threshold,
        patterns = commented(&format!(
            "metacognition_trivial_ack_patterns = {}",
            patterns_array(&BUILTIN_ACK_PATTERNS)
        )),
    );
    check_table(&mut s);
    s.push_str(DEPLOYMENT);
    s
}

/// Every budget with its help: the starter's on, the rest commented out.
fn check_table(s: &mut String) {
    for b in &BUDGETS {
        let _ = writeln!(s, "# {}", b.help);
        match ACTIVE_BUDGETS.iter().find(|(k, _)| *k == b.key) {
            Some((k, v)) => {
                let _ = writeln!(s, "{k} = {v}");
            }
            None => {
                let _ = writeln!(s, "# {} = ...", b.key);
            }
        }
    }
    s.push_str("# Judge max_safety_regression_rate on the labels alone, not on its worst case\n# too: only if labels are missing for reasons unrelated to the verdict\n# assume_missing_at_random = false\n");
}

/// The `[deployment]` table at symfonic's defaults.
const DEPLOYMENT: &str = r#"
# --- How production was configured: what `import` and `replay --from`
# derive the intent verdict and fabrication findings with (docs/import-formats.md) ---
[deployment]
intent_filter_mode = "off"           # off | observe | enforce
tool_routing_mode = "off"            # off | observe | enforce (a verdict exists if either is on)
fabrication_check_mode = "off"       # off | observe | revise | refuse
fabrication_refuse_min_confidence = 0.8
activation_log_mode = "always"       # always | complex | never: the footer stripped from drafts
identifier_keys = []                 # the domain's, for the fabrication check ("order_id")
history = "none"                     # "conversation" when run() got earlier turns' tool calls
# [deployment.tool_trigger_keywords]
# get_order_status = ["order", "shipping"]
"#;

/// What `init` did.
pub struct Written {
    /// The config's text (what went to standard output when no file was
    /// named).
    pub text: String,
    /// The file written, if any.
    pub out: Option<PathBuf>,
}

impl Written {
    /// What the command line prints: the config itself when no file was
    /// named, else the file written and the next step.
    pub fn said(&self) -> String {
        match &self.out {
            None => self.text.clone(),
            Some(p) => format!(
                "wrote {}: legacy against smart, symfonic's defaults; edit it, then\n  critic-gate replay TRAFFIC --config {} --out reports/first\n",
                p.display(),
                shell_word(&p.display().to_string())
            ),
        }
    }
}

/// `s` as one word of a POSIX shell command line (quoted when it must be).
fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/-+=:,@".contains(c));
    match plain {
        true => s.to_string(),
        false => format!("'{}'", s.replace('\'', "'\\''")),
    }
}

/// Write the starter config (never over an existing file unless `force`).
pub fn run(r: &Request) -> crate::Result<Written> {
    let text = starter_config();
    if let Some(path) = &r.out {
        let usage = |why: crate::options::Said| {
            crate::Error::usage(crate::said![format!("{}: ", path.display()), why])
        };
        if path.extension().is_some_and(|e| e == "json") {
            return Err(usage(
                "init writes TOML, and a name ending .json is read as JSON: give a name ending .toml"
                    .into(),
            ));
        }
        if path.is_dir() {
            return Err(usage("is a folder: give a file name".into()));
        }
        if path.exists() && !r.force {
            return Err(usage(crate::said![
                "exists; give another file name, or ",
                crate::vocab::Setting::Force,
                " to replace it"
            ]));
        }
        // Whole or not at all: a full disk leaves the old file as it was.
        let (dir, name) = match (path.parent(), path.file_name()) {
            (Some(d), Some(n)) => (d, n.to_string_lossy()),
            _ => return Err(usage("give a file name".into())),
        };
        let dir = if dir.as_os_str().is_empty() {
            std::path::Path::new(".")
        } else {
            dir
        };
        crate::report::put(dir, &name, text.as_bytes())?;
    }
    Ok(Written {
        text,
        out: r.out.clone(),
    })
}
