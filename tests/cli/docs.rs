//! The documents: every link stays inside the repository, and the CI
//! guide documents every budget.

use crate::util::*;

/// No document a user reads points outside the repository (the shared
/// specs a clone does not have), and every relative link resolves.
#[test]
fn no_document_points_outside_the_repository() {
    let mut files = vec![root().join("README.md")];
    for dir in ["docs", "tests/conformance", "crates/core/tests/conformance"] {
        if let Ok(rd) = std::fs::read_dir(root().join(dir)) {
            files.extend(
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "md")),
            );
        }
    }
    let sources = walk(&root().join("src"))
        .into_iter()
        .chain(walk(&root().join("crates/core/src")));
    files.extend(sources);
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, line) in text.lines().enumerate() {
            if line.contains("../shared")
                || line.contains("shared/spec")
                || line.contains("shared/conformance")
            {
                bad.push(format!("{}:{}: {line}", f.display(), i + 1));
            }
        }
        if f.extension().is_some_and(|x| x == "md") {
            for link in markdown_links(&text) {
                let target = link.split('#').next().unwrap_or_default();
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let p = f.parent().unwrap().join(target);
                let inside = std::fs::canonicalize(&p)
                    .map(|c| c.starts_with(std::fs::canonicalize(root()).unwrap()))
                    .unwrap_or(false);
                if !inside {
                    bad.push(format!(
                        "{}: link {link} does not resolve inside the repository",
                        f.display()
                    ));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// docs/ci.md's budget table, written for people, names every budget
/// `check` has (the declaration is `budgets::BUDGETS`): a new budget
/// cannot go undocumented.
#[test]
fn the_ci_guide_documents_every_budget() {
    let doc = std::fs::read_to_string(root().join("docs/ci.md")).unwrap();
    for b in critic_gate::budgets::BUDGETS {
        assert!(
            doc.contains(&format!("| `--{} ", b.long)),
            "docs/ci.md has no row for --{}",
            b.long
        );
    }
}
