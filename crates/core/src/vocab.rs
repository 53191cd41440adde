//! The errors every layer shares, typed: a field whose value is not
//! allowed, and a name that is not one of a list. Each module's own error
//! wraps them with its context (a config file, a flag).

use std::fmt;

/// A field whose value is not allowed: `field must be ..., got ...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// The field's full name (`deployment.fabrication_refuse_min_confidence`).
    pub field: String,
    /// What is wrong with the value, and what would be right.
    pub reason: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.field, self.reason)
    }
}

impl std::error::Error for FieldError {}

pub use crate::options::{choose, Setting, UnknownName};

/// The choice closest to `given` by edit distance (in code points), if
/// one is close enough to be a typo of it: within a third of its length,
/// and at least one edit.
pub fn closest<'a>(given: &str, choices: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (given.chars().count() / 3).max(1);
    nearest(given, choices, limit).map(|(c, _)| c)
}

/// The one choice within `edits` edits of `given` (the nearest; none when
/// two are equally near).
pub fn within<'a>(
    given: &str,
    choices: impl IntoIterator<Item = &'a str>,
    edits: usize,
) -> Option<&'a str> {
    nearest(given, choices, edits).and_then(|(c, unique)| unique.then_some(c))
}

/// The choice nearest `given` within `limit` edits (the first in order on
/// a tie), and whether no other is as near.
fn nearest<'a>(
    given: &str,
    choices: impl IntoIterator<Item = &'a str>,
    limit: usize,
) -> Option<(&'a str, bool)> {
    let n = given.chars().count();
    let mut best: Option<(usize, &'a str, bool)> = None;
    for c in choices {
        // The distance is at least the difference in length: most choices
        // are ruled out without computing it (this runs on every unknown
        // key of every turn).
        if n.abs_diff(c.chars().count()) > limit {
            continue;
        }
        let d = edit_distance(given, c);
        best = match best {
            _ if d > limit => best,
            Some((bd, bc, _)) if bd == d => Some((bd, bc, false)),
            Some(b) if b.0 < d => Some(b),
            _ => Some((d, c, true)),
        };
    }
    best.map(|(_, c, unique)| (c, unique))
}

/// Levenshtein distance between `a` and `b`, in code points.
/// Whether `a` is `b`, `b` with one character inserted, deleted or
/// replaced, or `b` with two neighbouring characters swapped.
pub fn one_edit_or_swap(a: &str, b: &str) -> bool {
    let (x, y): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if x.len() == y.len() {
        let diff: Vec<usize> = (0..x.len()).filter(|&i| x[i] != y[i]).collect();
        return match diff.as_slice() {
            [] | [_] => true,
            [i, j] => *j == i + 1 && x[*i] == y[*j] && x[*j] == y[*i],
            _ => false,
        };
    }
    x.len().abs_diff(y.len()) == 1 && edit_distance(a, b) == 1
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(here + 1);
            prev = here;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_is_a_typo_not_a_guess() {
        let keys = ["read_only_tools", "metacognition_sensitive_tags"];
        assert_eq!(closest("read_only_tool", keys), Some("read_only_tools"));
        assert_eq!(closest("raed_only_tools", keys), Some("read_only_tools"));
        assert_eq!(closest("colour", keys), None);
        assert_eq!(closest("read_only_tools", keys), Some("read_only_tools"));
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
    }
}
