//! The shape of the code, checked: the module graph runs one way (the
//! drawing is ARCHITECTURE.md's layer table, held equal to `TIERS`), read from every `crate::` and `super::` path in
//! `src/` and `crates/core/src/`; the bottom layers are exactly the core
//! crate's modules; and functions stay short steps.

use std::collections::BTreeSet;
use std::path::Path;

/// Top-level modules in tiers, bottom first; each tier is a row of
/// ARCHITECTURE.md's layer table, a list of steps in order (`→` there). A
/// module may use the modules of lower tiers and of earlier steps of its
/// own tier (and itself). The first two tiers are the core crate
/// (`crates/core`), which the compiler keeps from reaching up; this crate
/// re-exports them under the same names.
const TIERS: &[&[&[&str]]] = &[
    &[
        &["options"],
        &["stats", "vocab", "coin", "cusum", "anytime"],
        &["pooled"],
        &["deployment", "budgets"],
        &["config"],
        &["grid"],
    ],
    &[&["read"], &["gate"], &["derive"], &["import"]],
    &[&["error"]],
    &[&["replay"], &["summary"], &["report"]],
    &[&["pipeline", "explain", "synth"], &["transcripts"]],
    &[&["cmd"]],
    &[&["fuzz", "layers", "lib"]],
];

/// The steps of every tier, bottom first: the order the graph must run in.
fn steps() -> impl Iterator<Item = &'static [&'static str]> {
    TIERS.iter().flat_map(|t| t.iter().copied())
}

/// The core crate's top-level modules (`crates/core/src`), besides `lib`
/// and `fuzz`.
const CORE: &[&str] = &[
    "options",
    "stats",
    "vocab",
    "coin",
    "cusum",
    "anytime",
    "pooled",
    "deployment",
    "budgets",
    "config",
    "grid",
    "read",
    "gate",
    "derive",
    "import",
];

/// Inside these modules, the order their files may use each other in; the
/// folder's `mod.rs` comes last (a file may not reach into its parent).
const INNER: &[(&str, &[&str])] = &[
    (
        "read",
        &[
            "invalid",
            "json",
            "activation",
            "rfc3339",
            "provenance",
            "turn",
            "reader",
        ],
    ),
    ("gate", &["pyre", "claims", "neutral", "reasons"]),
    (
        "derive",
        &[
            "pytext",
            "intent",
            "scan",
            "fabrication",
            "reflection",
            "suffix",
            "draft",
        ],
    ),
    (
        "import",
        &[
            "not_imported",
            "pyliteral",
            "raw",
            "openai",
            "otlp",
            "decode",
        ],
    ),
    (
        "replay",
        &[
            "hash",
            "ordered",
            "tally",
            "segments",
            "design",
            "probe",
            "options",
            "scope_columns",
            "skips",
            "totals",
            "rows",
            "step",
        ],
    ),
    (
        "summary",
        &[
            "parquet", "numbers", "metrics", "text", "manifest", "schema", "figures", "build",
            "frontier", "read", "partial",
        ],
    ),
    (
        "report",
        &[
            "staging", "export", "streams", "tables", "frontier", "charts", "markdown",
        ],
    ),
];

fn layer(top: &str) -> usize {
    steps()
        .position(|l| l.contains(&top))
        .unwrap_or_else(|| panic!("module {top} is in no layer: add it to TIERS and lib.rs"))
}

/// A file's module path (`gate/pyre/mod.rs` is `[gate, pyre]`).
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// Every `crate::a::b` (and `super::b`) path in `text` as `(a, b)`, with
/// comments and the unit tests at the end of the file left out.
/// `use crate::{a, b}` groups are opened.
fn paths(text: &str, module: &[String]) -> Vec<(String, Option<String>)> {
    let text = without_unit_tests(text);
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let parent = &module[..module.len().saturating_sub(1)];
    let mut out = Vec::new();
    for (prefix, base) in [("crate::", &[][..]), ("super::", parent)] {
        for (i, _) in code.match_indices(prefix) {
            if code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
                continue; // `super::super::`, or a path's inner `crate::`
            }
            let rest = &code[i + prefix.len()..];
            // `crate::said!`: a macro the root re-exports, not a module.
            let path_end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'));
            if path_end.is_some_and(|e| rest[e..].starts_with('!')) {
                continue;
            }
            let names = match segments(rest).as_slice() {
                [open] if open == "{" => group(rest),
                [] => vec![],
                segs => vec![segs.join("::")],
            };
            for n in names {
                let full: Vec<String> = base
                    .iter()
                    .cloned()
                    .chain(n.split("::").map(str::to_string))
                    .collect();
                if let Some(top) = full.first() {
                    out.push((top.clone(), full.get(1).cloned()));
                }
            }
        }
    }
    out
}

/// `text` without its `#[cfg(test)] mod tests { ... }` block (unit tests
/// may reach anywhere): rustfmt closes it with the first `}` at the start
/// of a line. Code after the block is kept.
fn without_unit_tests(text: &str) -> String {
    let mut out = String::new();
    let mut in_tests = false;
    let mut lines = text.lines().peekable();
    while let Some(l) = lines.next() {
        if l == "#[cfg(test)]" && lines.peek() == Some(&"mod tests {") {
            in_tests = true;
        } else if in_tests && l == "}" {
            in_tests = false;
        } else if !in_tests {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

fn segments(rest: &str) -> Vec<String> {
    if rest.starts_with('{') {
        return vec!["{".into()];
    }
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(rest.len());
    rest[..end]
        .split("::")
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn group(rest: &str) -> Vec<String> {
    let inner = &rest[1..rest.find('}').unwrap_or(rest.len())];
    inner
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn rs_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every edge that runs back up, as `file -> crate::path`.
fn violations(src: &Path) -> BTreeSet<String> {
    let mut files = Vec::new();
    rs_files(src, &mut files);
    let mut bad = BTreeSet::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap();
        if rel.starts_with("cli") || rel == Path::new("main.rs") || rel == Path::new("layers.rs") {
            continue; // the binary (uses the library's root only), and this test's own examples
        }
        let module = module_path(rel);
        let (top, child) = (module[0].clone(), module.get(1).cloned());
        let text = std::fs::read_to_string(&f).unwrap();
        for (to_top, to_child) in paths(&text, &module) {
            if matches!(to_top.as_str(), "Error" | "Failure" | "Result") {
                continue; // the root's re-exports of `error`
            }
            if !edge_allowed(&top, child.as_deref(), &to_top, to_child.as_deref()) {
                bad.insert(format!(
                    "{} -> crate::{to_top}{}",
                    rel.display(),
                    to_child.map(|c| format!("::{c}")).unwrap_or_default()
                ));
            }
        }
    }
    bad
}

fn edge_allowed(top: &str, child: Option<&str>, to_top: &str, to_child: Option<&str>) -> bool {
    if top != to_top {
        return layer(to_top) < layer(top);
    }
    let Some(order) = INNER.iter().find(|(m, _)| *m == top).map(|(_, o)| *o) else {
        return true;
    };
    let rank = |c: Option<&str>| c.and_then(|c| order.iter().position(|o| *o == c));
    match (rank(child), rank(to_child)) {
        // A file reaching a file: only one listed before it.
        (Some(a), Some(b)) => b < a || a == b,
        // A listed file reaching its parent's own items.
        (Some(_), None) => false,
        _ => true,
    }
}

/// The two source trees: this crate's and the core's.
fn source_trees() -> [std::path::PathBuf; 2] {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    [root.join("src"), root.join("crates/core/src")]
}

#[test]
fn module_graph_runs_one_way() {
    let bad: BTreeSet<String> = source_trees().iter().flat_map(|s| violations(s)).collect();
    assert!(
        bad.is_empty(),
        "edges running back up:\n{}",
        bad.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// The core is the bottom of the drawing: its modules are those of
/// `CORE`, each below every module of this crate (`error`, which wraps
/// the core's errors, included).
#[test]
fn the_core_crate_is_the_bottom_layers() {
    let [_, core] = source_trees();
    let mut found: Vec<String> = std::fs::read_dir(&core)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .filter(|m| m != "lib" && m != "fuzz")
        .collect();
    found.sort();
    let mut want: Vec<String> = CORE.iter().map(|m| m.to_string()).collect();
    want.sort();
    assert_eq!(found, want, "crates/core/src's modules and CORE differ");
    let top_core = CORE.iter().map(|m| layer(m)).max().unwrap();
    let [main, _] = source_trees();
    for e in std::fs::read_dir(&main).unwrap() {
        let p = e.unwrap().path();
        let m = p.file_stem().unwrap().to_string_lossy().into_owned();
        if !["main", "cli", "lib", "layers", "fuzz"].contains(&m.as_str()) {
            assert!(layer(&m) > top_core, "src/{m} sits among the core's layers");
        }
    }
}

/// ARCHITECTURE.md's layer table is `TIERS` drawn: a row per tier, its
/// modules in order. It is the drawing readers see (the lib.rs files point
/// to it), and `TIERS` is that drawing as the test holds the code to it,
/// so the two cannot drift apart.
#[test]
fn the_architecture_map_draws_these_layers() {
    let [main, _] = source_trees();
    let map = std::fs::read_to_string(main.join("../ARCHITECTURE.md")).unwrap();
    let known: Vec<&str> = steps().flatten().copied().collect();
    let mut drawn: Vec<Vec<Vec<&str>>> = Vec::new();
    for row in map
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| layer"))
    {
        let Some(modules) = row.split(" | ").nth(1) else {
            continue;
        };
        // The row's steps (`a`, `b` → `c`), each the modules it names.
        let tier: Vec<Vec<&str>> = modules
            .split(" → ")
            .map(|step| {
                step.split('`')
                    .skip(1)
                    .step_by(2)
                    .map(|n| n.trim_end_matches('/'))
                    .filter(|n| known.contains(n))
                    .collect::<Vec<_>>()
            })
            .filter(|s| !s.is_empty())
            .collect();
        if !tier.is_empty() {
            drawn.push(tier);
        }
    }
    // The top tier (the fuzz bodies, this test, the root) is not a row of
    // the map.
    let want: Vec<Vec<Vec<&str>>> = TIERS[..TIERS.len() - 1]
        .iter()
        .map(|t| t.iter().map(|s| s.to_vec()).collect())
        .collect();
    assert_eq!(
        drawn, want,
        "ARCHITECTURE.md's layer table and TIERS differ"
    );
}

#[test]
fn the_check_sees_an_edge_back_up() {
    assert!(!edge_allowed("read", Some("turn"), "gate", None));
    assert!(!edge_allowed("replay", Some("segments"), "replay", None));
    assert!(!edge_allowed("read", Some("json"), "read", Some("turn")));
    assert!(edge_allowed("read", Some("turn"), "read", Some("json")));
    assert!(edge_allowed("report", None, "replay", Some("tally")));
    let text = "use crate::{read::turn::Turn, gate};\nlet x = super::NONE; // crate::report\n";
    let p = paths(text, &["replay".to_string(), "segments".to_string()]);
    assert_eq!(
        p,
        vec![
            ("read".to_string(), Some("turn".to_string())),
            ("gate".to_string(), None),
            ("replay".to_string(), Some("NONE".to_string())),
        ]
    );
}

/// Longest a function may be, in lines from `fn` to its closing brace.
const MAX_FN_LINES: usize = 80;

/// Every function longer than [`MAX_FN_LINES`], as `file:line name (n
/// lines)`. A function ends at the first line that closes at its own
/// indentation (rustfmt's layout).
fn long_functions(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rs_files(src, &mut files);
    files.sort();
    let mut long = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            let code = l.trim_start();
            let indent = l.len() - code.len();
            let Some(name) = fn_name(code) else { continue };
            let close = format!("{}}}", " ".repeat(indent));
            let end = lines[i..]
                .iter()
                .position(|x| x.starts_with(&close) && x[indent..].starts_with('}'))
                .map_or(0, |e| e + 1);
            if end > MAX_FN_LINES {
                long.push(format!("{}:{} {name} ({end} lines)", f.display(), i + 1));
            }
        }
    }
    long
}

/// The name of the function a line declares, if it does (a body follows).
fn fn_name(code: &str) -> Option<&str> {
    let rest = [
        "pub fn ",
        "pub(crate) fn ",
        "pub(super) fn ",
        "fn ",
        "const fn ",
        "pub const fn ",
    ]
    .iter()
    .find_map(|p| code.strip_prefix(p))?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    Some(&rest[..end])
}

#[test]
fn functions_are_short_steps() {
    let long: Vec<String> = source_trees()
        .iter()
        .flat_map(|s| long_functions(s))
        .collect();
    assert!(
        long.is_empty(),
        "functions longer than {MAX_FN_LINES} lines:\n{}",
        long.join("\n")
    );
}

/// The replay engine takes what it reads, its plan and what it tallies:
/// no file of `replay/` but the options' own reaches `outputs` (the
/// format, the folder's force, the frontier files, the notes).
#[test]
fn the_engine_sees_no_output_choice() {
    let [src, _] = source_trees();
    let mut files = Vec::new();
    rs_files(&src.join("replay"), &mut files);
    assert!(files.len() > 5, "{files:?}");
    for f in files.iter().filter(|f| !f.ends_with("options.rs")) {
        let text = without_unit_tests(&std::fs::read_to_string(f).unwrap());
        assert!(
            !text.contains(".outputs"),
            "{} reads the outputs",
            f.display()
        );
    }
}

/// Files below the commands whose text may spell a flag, and why: it is
/// reference text for the command line, not a message of a request.
const FLAGS_SPELLED: &[(&str, &str)] = &[
    (
        "summary/schema.rs",
        "the columns' meanings, printed as docs/reports.md",
    ),
    ("summary/metrics.rs", "the figures' meanings, as schema.rs"),
    (
        "budgets.rs",
        "each budget's flag help (the declaration of its flag)",
    ),
    ("options.rs", "the settings' flags and their help, declared"),
];

/// Lines below the commands that may spell a flag, by the text that does,
/// and why.
const FLAG_LINES_SPELLED: &[(&str, &str)] = &[
    (
        "`critic-gate replay --out` may replace its report files",
        "the marker file a report folder holds, written for a person at the command line",
    ),
    (
        "`critic-gate patterns --config FILE` prints the",
        "the starter config's comments: command lines to type",
    ),
    (
        "# --- How production was configured: what `import` and `replay --from`",
        "the starter config's comments: command lines to type",
    ),
    (
        "critic-gate replay TRAFFIC --config {} --out reports/first",
        "`init`'s next step: a command line to type",
    ),
    (
        "\"assume_missing_at_random\"",
        "the [check] table's key in a config file, its own name",
    ),
    (
        "Budget::Rate(x) => (\"max_skip_regression_rate\", x),",
        "plan.toml's key for the budget, the file's own name",
    ),
    (
        "Budget::HarmfulPer1k(h) => (\"max_harmful_per_1k\", h),",
        "plan.toml's key for the budget, the file's own name",
    ),
    (
        "`critic-gate plan --audit VARIANT`",
        "a command line to type, in calibrate's refusal of a plan that is no audit",
    ),
];

/// The keywords a line's string literals say as a message names a setting:
/// at the start of the text (`max_ack_share: give ...`), or after `give`,
/// `with`, `or`, `and` or `(`.
fn keywords_said<'a>(code: &'a str, keywords: &'a [String]) -> impl Iterator<Item = &'a str> + 'a {
    let texts: Vec<&str> = code.split('"').skip(1).step_by(2).collect();
    keywords
        .iter()
        .filter(move |k| {
            texts.iter().any(|t| {
                let named = |rest: &str| {
                    rest.strip_prefix(k.as_str()).is_some_and(|after| {
                        after.is_empty() || after.starts_with([':', ' ', '=', ','])
                    })
                };
                named(t)
                    || ["give ", "with ", "or ", "(", "and "]
                        .iter()
                        .any(|w| t.match_indices(w).any(|(i, _)| named(&t[i + w.len()..])))
            })
        })
        .map(String::as_str)
}

/// Code below the front ends (the commands' engines and messages in
/// `cmd/` included) names a setting ([`crate::vocab::Setting`]), never a
/// flag's text: each front end spells it (the command line as its flag,
/// Python as its keyword), so a Python caller is never told about a
/// `--group-by` they did not type. A command's `--help` text and clap
/// attributes are the command line's own.
#[test]
fn no_message_below_the_commands_spells_a_flag() {
    let flags: Vec<&str> = crate::vocab::Setting::ALL
        .iter()
        .map(|s| s.flag())
        .collect();
    // Python's keywords of more than one word (`max_ack_share`): a one-word
    // keyword (`out`, `force`) is also an English word.
    let keywords: Vec<String> = crate::vocab::Setting::ALL
        .iter()
        .map(|s| s.keyword())
        .filter(|k| k.contains('_') && !k.ends_with('_'))
        .collect();
    let mut found = Vec::new();
    for tree in source_trees() {
        let mut files = Vec::new();
        rs_files(&tree, &mut files);
        for f in files {
            let rel = f
                .strip_prefix(&tree)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let above = ["cli/", "main.rs", "layers.rs"];
            let exempt = FLAGS_SPELLED.iter().any(|(file, _)| rel == *file);
            if above.iter().any(|a| rel.starts_with(a)) || exempt {
                continue;
            }
            let text = without_unit_tests(&std::fs::read_to_string(&f).unwrap());
            // A command's `--help` text (`HELP`, `ABOUT`) and its clap attributes
            // are the command line's own: they spell its flags.
            let mut in_help = false;
            for (n, line) in text.lines().enumerate() {
                let t = line.trim();
                if t.contains("const HELP: &str") || t.contains("const ABOUT: &str") {
                    in_help = true;
                }
                if in_help {
                    in_help = !(t == ");" || t.ends_with("\";"));
                    continue;
                }
                if t.starts_with("#[arg(") || t.starts_with("#[command(") {
                    continue;
                }
                let code = line.split("//").next().unwrap_or("");
                if FLAG_LINES_SPELLED
                    .iter()
                    .any(|(text, _)| code.contains(text))
                {
                    continue;
                }
                for flag in &flags {
                    let spelled = code.match_indices(flag).any(|(i, _)| {
                        !code[i + flag.len()..]
                            .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
                    });
                    if spelled {
                        found.push(format!("{rel}:{}: {flag}", n + 1));
                    }
                }
                found.extend(
                    keywords_said(code, &keywords).map(|k| format!("{rel}:{}: {k}", n + 1)),
                );
            }
        }
    }
    assert!(
        found.is_empty(),
        "name the setting (crate::vocab::Setting), not its flag:\n{}",
        found.join("\n")
    );
}
