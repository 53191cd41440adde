//! The Python package's typed keywords, generated from the option
//! declarations (`crate::options`): `python/critic_gate/_flags.py` holds a
//! `TypedDict` per set of options, which the package's functions take as
//! `**flags: Unpack[...]`, so a type checker holds a call to the same
//! names, types and choices as the command line's flags. A test writes it
//! (`CRITIC_GATE_BLESS=1`) and fails when it differs.

use std::fmt::Write as _;

use crate::options::{Decl, Kind, OptionSet, Preset, Setting, Value, SETS};

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
    for OptionSet {
        name, whose, decls, ..
    } in SETS
    {
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
                python_help(d).replace('\\', "\\\\"),
                default_said(d)
            );
        }
        // A set that ends with an earlier one's keywords extends its class.
        // The longest such, and of those the first written.
        let base = written
            .iter()
            .rev()
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
            "\n\nclass {name}Flags({parent}, total=False):\n    \"\"\"The options of {whose} (None, or left out: its default).\"\"\"\n{own}"
        );
        written.push((name, body));
    }
    out.push_str(
        "\n\n# Each class's keywords' defaults, as the --help of the command named\n# gives them (None: none, or the command works it out; days as a number).\nDEFAULTS: dict[str, tuple[str, dict[str, object]]] = {\n",
    );
    for OptionSet {
        name,
        command,
        decls,
        ..
    } in SETS
    {
        let _ = writeln!(out, "    {name:?}: ({command:?}, {{");
        for d in decls
            .iter()
            .filter(|d| d.python && !OWN_PARAMETERS.contains(&d.setting))
        {
            let _ = writeln!(
                out,
                "        {:?}: {},",
                d.setting.keyword(),
                python_default(d)
            );
        }
        out.push_str("    }),\n");
    }
    out.push_str("}\n");
    out
}

/// The Python type a declaration's value takes.
fn python_type(d: &Decl) -> String {
    match d.kind {
        Kind::Switch | Kind::Without => "bool".into(),
        Kind::Count { .. } => "int".into(),
        Kind::Share { .. } => "float".into(),
        Kind::Name(names) | Kind::Described(names, _) => {
            let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
            format!("Literal[{}]", quoted.join(", "))
        }
        Kind::Text | Kind::Key => "str".into(),
        Kind::Path => "PathLike".into(),
        Kind::Repeated | Kind::Keys => "Sequence[str]".into(),
        Kind::Number => "float".into(),
        Kind::Days => "Union[float, str]".into(),
        Kind::Paths => "Sequence[PathLike]".into(),
    }
}

/// The help line as Python reads it: a switch Python says inverted
/// (`held_out`) is described by what False does.
fn python_help(d: &Decl) -> String {
    match d.kind {
        Kind::Without => {
            let mut c = d.help.chars();
            let first = c
                .next()
                .map(|f| f.to_lowercase().to_string())
                .unwrap_or_default();
            format!("False: {first}{}", c.as_str())
        }
        _ if d.default == Preset::Config => format!(
            "{}. True or False; None (left out): as the config says",
            d.help
        ),
        _ => d.help.to_string(),
    }
}

/// ` [default: 0.5]`, as `--help` says it.
fn default_said(d: &Decl) -> String {
    if d.kind == Kind::Without {
        return " [default: True]".to_string();
    }
    d.default_text()
        .map(|t| format!(" [default: {t}]"))
        .unwrap_or_default()
}

/// The default as a Python literal.
fn python_default(d: &'static Decl) -> String {
    match d.default {
        Preset::Absent if d.kind == Kind::Switch => "False".into(),
        // What it turns off is on unless given.
        Preset::Absent if d.kind == Kind::Without => "True".into(),
        Preset::Absent | Preset::Config => "None".into(),
        Preset::Count(n) => n.to_string(),
        Preset::Share(x) => format!("{x:?}"),
        Preset::Name(n) => format!("{n:?}"),
        Preset::Text(t) => match d.default_value() {
            Some(Value::Number(x)) => format!("{x:?}"),
            Some(Value::Text(_)) => format!("{t:?}"),
            v => unreachable!("{:?}: a default of {v:?}", d.setting),
        },
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
        assert!(want.contains("class ReplayFlags(RunFlags, total=False):"));
        assert!(want.contains("class PlanFlags(PassFlags, total=False):"));
        assert!(want.contains("    held_out: Optional[bool]\n    \"\"\"False: deal"));
        assert!(want.contains("    max_ack_share: Optional[float]\n"));
        assert!(!want.contains("    quiet:"), "the terminal's own");
    }
}
