//! `patterns`: the trivial-ack patterns each smart variant matches drafts
//! against, as a TOML list ready to paste. A variant that sets
//! `metacognition_trivial_ack_patterns` replaces the built-ins, so a list
//! that means to extend them must spell them out; this says which
//! built-ins a variant's own list leaves out.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::init::patterns_array;
use crate::gate::{ack_patterns, BUILTIN_ACK_LANGUAGES, BUILTIN_ACK_PATTERNS};

/// The command's one line in `critic-gate --help`, and the first of its
/// own `--help`.
pub const ABOUT: &str = "Print the trivial-ack patterns (the built-ins, or each variant's), \
     ready to paste and extend";

/// What `--help` adds after the options: examples, exit codes, the
/// reference.
pub const HELP: &str = concat!(
    "Examples:
  critic-gate patterns                        # the built-ins, ready to paste
  critic-gate patterns --config gate.toml     # what each variant matches

",
    super::args::done!(),
    "
Reference: docs/gate-semantics.md, docs/config.md."
);

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print the list each variant of this config ends up with, and the
    /// built-ins a variant's own list leaves out.
    #[arg(long)]
    pub config: Option<PathBuf>,
}

impl Args {
    /// The request these flags make.
    pub fn request(&self) -> Request {
        Request {
            config: self.config.clone(),
        }
    }
}

/// Whose patterns to print.
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// The config (None: the built-ins alone).
    pub config: Option<PathBuf>,
}

/// The built-ins, with how to extend them.
fn builtins() -> String {
    format!(
        "# symfonic's built-in trivial-ack patterns: Python regexes, searched in the\n\
         # lowered, stripped draft. Setting metacognition_trivial_ack_patterns\n\
         # replaces them all: paste this list into the variant and add yours after it.\n\
         metacognition_trivial_ack_patterns = {}\n",
        patterns_array(&BUILTIN_ACK_PATTERNS)
    )
}

/// The text `patterns` prints.
pub fn run(r: &Request) -> crate::Result<String> {
    let Some(path) = &r.config else {
        return Ok(builtins());
    };
    let plan = super::load_plan(Some(path))?;
    // A list to paste must compile, as the replay would have it.
    crate::explain::gates(&plan).map_err(|e| super::in_config(e, Some(path)))?;
    let mut s = String::new();
    for v in &plan.variants {
        let c = &v.config;
        if !c.metacognition_selective_gate {
            let _ = writeln!(
                s,
                "# variant {}: the legacy gate, which matches no ack patterns\n",
                v.name
            );
            continue;
        }
        let list = ack_patterns(c);
        let missing: Vec<&str> = BUILTIN_ACK_PATTERNS
            .iter()
            .zip(BUILTIN_ACK_LANGUAGES)
            .filter(|(b, _)| !list.iter().any(|p| p == *b))
            .map(|(_, l)| l)
            .collect();
        let whose = match (c.metacognition_trivial_ack_patterns.is_empty(), missing.len()) {
            (true, _) => "symfonic's built-ins".to_string(),
            (false, 0) => format!("its own list of {}, every built-in included", list.len()),
            (false, _) => format!(
                "its own list of {}, WITHOUT the built-in patterns for {}: drafts only they match are no longer skipped",
                list.len(),
                missing.join(", ")
            ),
        };
        let _ = writeln!(
            s,
            "# variant {}: {whose}\n[variants.{}]\nmetacognition_trivial_ack_patterns = {}\n",
            v.name,
            super::init::toml_key(&v.name),
            patterns_array(&list)
        );
    }
    Ok(s)
}
