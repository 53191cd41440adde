//! The Python package's typed keywords, generated from the option
//! declarations (`crate::options`): `python/critic_gate/_flags.py` holds a
//! `TypedDict` per set of options, which the package's functions take as
//! `**flags: Unpack[...]`, so a type checker holds a call to the same
//! names, types and choices as the command line's flags. A test writes it
//! (`CRITIC_GATE_BLESS=1`) and fails when it differs.

use std::fmt::Write as _;

use crate::options::{Decl, Kind, Preset, Setting, SETS};

/// The settings each Python function takes as parameters of its own: the
/// run's label (by default the folder's name, or `run` in memory) and the
/// tables' format (by default `both`, since the DataFrames are read from
/// Parquet).
pub const OWN_PARAMETERS: [Setting; 2] = [Setting::Label, Setting::Format];

/// The file's text.
pub fn python_flags() -> String {
    let mut out = String::from(
        "\"\"\"The keyword options of critic-gate's commands, as a type checker reads\n\
         them: generated from the option declarations (the same ones the command\n\
         line's flags come from). Do not edit: `CRITIC_GATE_BLESS=1 cargo test\n\
         --release --lib python_flags` writes it.\"\"\"\n\n\
         from __future__ import annotations\n\n\
         import os\n\
         from typing import Literal, Optional, Sequence, TypedDict, Union\n\n\
         PathLike = Union[str, \"os.PathLike[str]\"]\n",
    );
    // A set whose keywords are an earlier set's is that class again.
    let mut written: Vec<(&str, String)> = Vec::new();
    for (name, decls) in SETS {
        let mut body = String::new();
        for d in decls
            .iter()
            .filter(|d| d.python && !OWN_PARAMETERS.contains(&d.setting))
        {
            let _ = write!(
                body,
                "\n    {}: Optional[{}]\n    \"\"\"{}{}.\"\"\"\n",
                d.setting.keyword(),
                python_type(d),
                d.help.replace('\\', "\\\\"),
                default_said(d)
            );
        }
        // A set that ends with an earlier one's keywords extends its class.
        let base = written
            .iter()
            .filter(|(_, b)| body.ends_with(b.as_str()))
            .max_by_key(|(_, b)| b.len());
        let (parent, own) = match base {
            Some((same, b)) if *b == body => {
                let _ = write!(out, "\n\n{name}Flags = {same}Flags\n");
                written.push((name, body));
                continue;
            }
            Some((earlier, b)) => (format!("{earlier}Flags"), &body[..body.len() - b.len()]),
            None => ("TypedDict".to_string(), body.as_str()),
        };
        let _ = write!(
            out,
            "\n\nclass {name}Flags({parent}, total=False):\n    \"\"\"The options of a {} (None, or left out: its default).\"\"\"\n{own}",
            name.to_lowercase()
        );
        written.push((name, body));
    }
    out.push_str(
        "\n\n# Each keyword's default, as the command line's --help gives it (None:\n# none, or the command works it out).\nDEFAULTS: dict[str, object] = {\n",
    );
    let mut seen = Vec::new();
    for d in SETS.iter().flat_map(|(_, decls)| decls.iter()) {
        if d.python && !OWN_PARAMETERS.contains(&d.setting) && !seen.contains(&d.setting) {
            seen.push(d.setting);
            let _ = writeln!(out, "    {:?}: {},", d.setting.keyword(), python_default(d));
        }
    }
    out.push_str("}\n");
    out
}

/// The Python type a declaration's value takes.
fn python_type(d: &Decl) -> String {
    match d.kind {
        Kind::Switch => "bool".into(),
        Kind::Count { .. } => "int".into(),
        Kind::Share { .. } => "float".into(),
        Kind::Name(names) => {
            let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
            format!("Literal[{}]", quoted.join(", "))
        }
        Kind::Text => "str".into(),
        Kind::Path => "PathLike".into(),
        Kind::Repeated | Kind::Keys => "Sequence[str]".into(),
    }
}

/// ` [default: 0.5]`, as `--help` says it.
fn default_said(d: &Decl) -> String {
    d.default_text()
        .map(|t| format!(" [default: {t}]"))
        .unwrap_or_default()
}

/// The default as a Python literal.
fn python_default(d: &Decl) -> String {
    match d.default {
        Preset::Absent if d.kind == Kind::Switch => "False".into(),
        Preset::Absent => "None".into(),
        Preset::Count(n) => n.to_string(),
        Preset::Share(x) => format!("{x:?}"),
        Preset::Name(n) => format!("{n:?}"),
    }
}

#[cfg(test)]
mod tests {
    use crate::cmd::stubs::python_flags;

    /// The committed stub is the declarations' (regenerate it with
    /// `CRITIC_GATE_BLESS=1`).
    #[test]
    fn python_flags_are_generated_from_the_declarations() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("python/critic_gate/_flags.py");
        let want = python_flags();
        if std::env::var_os("CRITIC_GATE_BLESS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let got = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            got == want,
            "python/critic_gate/_flags.py differs from the option declarations; regenerate it with CRITIC_GATE_BLESS=1 cargo test --release --lib python_flags"
        );
        assert!(want.contains("class ReplayFlags(SweepFlags, total=False):"));
        assert!(want.contains("    max_ack_share: Optional[float]\n"));
        assert!(!want.contains("    quiet:"), "the terminal's own");
    }
}
