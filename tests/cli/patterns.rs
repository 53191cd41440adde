//! `critic-gate patterns`: the ack patterns, ready to paste.

use crate::util::*;

/// `patterns` prints the built-ins as a list to paste, and says which
/// built-ins a variant's own list leaves out (the mistake that silently
/// lost the Spanish, German, French and Portuguese skips).
#[test]
fn patterns_prints_the_builtins_and_names_the_ones_a_list_drops() {
    let o = run(&["patterns"], None);
    expect_code(&o, 0);
    let out = stdout(&o);
    for lang in ["# en", "# es", "# de", "# fr", "# pt"] {
        assert!(out.contains(lang), "{out}");
    }
    let d = Dir::new();
    // Pasted with one more pattern, the list is valid TOML and keeps them.
    let extended = d.write(
        "extended.toml",
        format!(
            "[variants.smart]\nmetacognition_selective_gate = true\n{}",
            out.replace("\n]\n", "\n    \"\\\\b(grazie|perfetto)\\\\b\",\n]\n")
        ),
    );
    let o = run(&["patterns", "--config", extended.to_str().unwrap()], None);
    expect_code(&o, 0);
    assert!(
        stdout(&o).contains("its own list of 6, every built-in included"),
        "{}",
        stdout(&o)
    );
    let dropped = d.write(
        "dropped.toml",
        "[variants.smart]\nmetacognition_selective_gate = true\nmetacognition_trivial_ack_patterns = [\"\\\\b(grazie)\\\\b\"]\n[variants.legacy]\nmetacognition_selective_gate = false\n",
    );
    let o = run(&["patterns", "--config", dropped.to_str().unwrap()], None);
    expect_code(&o, 0);
    let s = stdout(&o);
    assert!(
        s.contains("WITHOUT the built-in patterns for en, es, de, fr, pt"),
        "{s}"
    );
    assert!(s.contains("variant legacy: the legacy gate"), "{s}");
}
