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

/// A name that is not one of the choices (`--format xml`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownName {
    /// Where the name was given (`--format`).
    pub flag: Setting,
    /// The name given.
    pub got: String,
    /// The names that are allowed.
    pub expected: &'static [&'static str],
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let choices = match self.expected {
            [] => String::new(),
            [one] => one.to_string(),
            [init @ .., last] => format!("{} or {last}", init.join(", ")),
        };
        write!(f, "{} {:?}: give {choices}", self.flag, self.got)
    }
}

impl std::error::Error for UnknownName {}

/// A setting of a request, as a message from below the commands names it.
/// Each front end spells it its own way: the command line as its flag
/// (`--group-by`, what [`fmt::Display`] writes, so messages and report
/// notes read as a CLI user typed them), the Python package as its keyword
/// (`group_by`, [`Setting::for_python`]). Code below the commands writes a
/// `Setting`, never a flag's text: a test holds it to that.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    Out,
    Partial,
    Force,
    GroupBy,
    ScopeColumns,
    SkipInvalid,
    MaxLineBytes,
    Decisions,
    Format,
    MaxAckShare,
    From,
    Mix,
    Procedure,
    Variant,
    Plan,
    Threads,
    Config,
    AssumeMissingAtRandom,
    MinSupport,
    MinLabelled,
    MaxRegressionRate,
    State,
    Merge,
    By,
    ReleaseAt,
    ReleaseField,
}

impl Setting {
    pub const ALL: [Setting; 26] = [
        Setting::Out,
        Setting::Partial,
        Setting::Force,
        Setting::GroupBy,
        Setting::ScopeColumns,
        Setting::SkipInvalid,
        Setting::MaxLineBytes,
        Setting::Decisions,
        Setting::Format,
        Setting::MaxAckShare,
        Setting::From,
        Setting::Mix,
        Setting::Procedure,
        Setting::Variant,
        Setting::Plan,
        Setting::Threads,
        Setting::Config,
        Setting::AssumeMissingAtRandom,
        Setting::MinSupport,
        Setting::MinLabelled,
        Setting::MaxRegressionRate,
        Setting::State,
        Setting::Merge,
        Setting::By,
        Setting::ReleaseAt,
        Setting::ReleaseField,
    ];

    /// The command line's flag.
    pub const fn flag(self) -> &'static str {
        match self {
            Setting::Out => "--out",
            Setting::Partial => "--partial",
            Setting::Force => "--force",
            Setting::GroupBy => "--group-by",
            Setting::ScopeColumns => "--scope-columns",
            Setting::SkipInvalid => "--skip-invalid",
            Setting::MaxLineBytes => "--max-line-bytes",
            Setting::Decisions => "--decisions",
            Setting::Format => "--format",
            Setting::MaxAckShare => "--max-ack-share",
            Setting::From => "--from",
            Setting::Mix => "--mix",
            Setting::Procedure => "--procedure",
            Setting::Variant => "--variant",
            Setting::Plan => "--plan",
            Setting::Threads => "--threads",
            Setting::Config => "--config",
            Setting::AssumeMissingAtRandom => "--assume-missing-at-random",
            Setting::MinSupport => "--min-support",
            Setting::MinLabelled => "--min-labelled",
            Setting::MaxRegressionRate => "--max-regression-rate",
            Setting::State => "--state",
            Setting::Merge => "--merge",
            Setting::By => "--by",
            Setting::ReleaseAt => "--release-at",
            Setting::ReleaseField => "--release-field",
        }
    }

    /// The Python package's name for it: the keyword argument, the flag's
    /// name with `_` (`from_` for `--from`, a Python keyword; `variants`
    /// for `--variant`, which takes a list), or for `--partial` the
    /// function that writes a partial result.
    pub fn keyword(self) -> String {
        match self {
            Setting::From => "from_".to_string(),
            Setting::Variant => "variants".to_string(),
            Setting::Partial => "replay_partial".to_string(),
            s => s.flag()[2..].replace('-', "_"),
        }
    }

    /// `message` as the Python package says it: each setting's flag as
    /// its keyword ([`respell`]).
    pub fn for_python(message: &str) -> String {
        respell(
            message,
            Setting::ALL.iter().map(|s| (s.flag(), s.keyword())),
        )
    }
}

/// `message` with each flag of `names` (`(flag, keyword)`) spelled as its
/// keyword, where the message names it: at the start or after a space or
/// `(`, and before the end, a space or `:,;.)`. A flag's text inside a
/// value the message quotes (`"--out"`), a path (`/tmp/a--out/b`) or a
/// dotted key (`scope.a.--from`) is the user's, and stays.
pub fn respell<F: AsRef<str>, K: AsRef<str>>(
    message: &str,
    names: impl Iterator<Item = (F, K)>,
) -> String {
    let names: Vec<(F, K)> = names.collect();
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    let mut before: Option<char> = None;
    while let Some(at) = rest.find("--") {
        out.push_str(&rest[..at]);
        let prev = rest[..at].chars().next_back().or(before);
        let tail = &rest[at..];
        let starts_a_word = prev.is_none_or(|c| c == ' ' || c == '(' || c == '\n');
        let named = names.iter().find(|(flag, _)| {
            tail.strip_prefix(flag.as_ref()).is_some_and(|after| {
                after.is_empty() || after.starts_with([' ', ':', ',', ';', '.', ')', '\n'])
            })
        });
        match named.filter(|_| starts_a_word) {
            Some((flag, keyword)) => {
                out.push_str(keyword.as_ref());
                rest = &tail[flag.as_ref().len()..];
            }
            None => {
                out.push_str("--");
                rest = &tail[2..];
            }
        }
        before = out.chars().next_back();
    }
    out.push_str(rest);
    out
}

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.flag())
    }
}

/// `got` as the one of `choices` whose name it is.
pub fn choose<T: Copy>(
    flag: Setting,
    got: &str,
    names: &'static [&'static str],
    choices: &[T],
) -> Result<T, UnknownName> {
    names
        .iter()
        .position(|n| *n == got)
        .map(|i| choices[i])
        .ok_or_else(|| UnknownName {
            flag,
            got: got.to_string(),
            expected: names,
        })
}

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
    fn an_unknown_name_lists_the_choices() {
        let e = choose(
            Setting::Format,
            "xml",
            &["csv", "parquet", "both"],
            &[1, 2, 3],
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "--format \"xml\": give csv, parquet or both");
        assert_eq!(
            choose(
                Setting::Format,
                "both",
                &["csv", "parquet", "both"],
                &[1, 2, 3]
            ),
            Ok(3)
        );
        let two = UnknownName {
            flag: Setting::Mix,
            got: "x".into(),
            expected: &["default", "multilingual"],
        };
        assert_eq!(two.to_string(), "--mix \"x\": give default or multilingual");
    }

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

    /// A message names settings as flags; Python's spelling is each
    /// setting's keyword, and nothing else changes.
    #[test]
    fn python_says_each_setting_as_its_keyword() {
        let m = format!(
            "{} \"x\": give a path; {} /tmp/a: not a folder (--quiet stays, --formats is no flag, {} is Python's from_)",
            Setting::GroupBy,
            Setting::Out,
            Setting::From
        );
        assert_eq!(
            Setting::for_python(&m),
            "group_by \"x\": give a path; out /tmp/a: not a folder (--quiet stays, --formats is no flag, from_ is Python's from_)"
        );
        // A flag's text in what the user gave stays theirs.
        let given = format!(
            "{} /tmp/my--out/x: not a folder; {} \"--force\": give all; key \"--out\"; scope.a.--from",
            Setting::Out,
            Setting::Decisions
        );
        assert_eq!(
            Setting::for_python(&given),
            "out /tmp/my--out/x: not a folder; decisions \"--force\": give all; key \"--out\"; scope.a.--from"
        );
        for s in Setting::ALL {
            assert!(s.flag().starts_with("--"), "{s:?}");
            assert_eq!(Setting::for_python(s.flag()), s.keyword());
            assert_eq!(
                Setting::for_python(&format!("({s})")),
                format!("({})", s.keyword())
            );
        }
    }
}
