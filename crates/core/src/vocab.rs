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
    pub flag: &'static str,
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

/// `got` as the one of `choices` whose name it is.
pub fn choose<T: Copy>(
    flag: &'static str,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_name_lists_the_choices() {
        let e = choose("--format", "xml", &["csv", "parquet", "both"], &[1, 2, 3]).unwrap_err();
        assert_eq!(e.to_string(), "--format \"xml\": give csv, parquet or both");
        assert_eq!(
            choose("--format", "both", &["csv", "parquet", "both"], &[1, 2, 3]),
            Ok(3)
        );
        let two = UnknownName {
            flag: "--mix",
            got: "x".into(),
            expected: &["default", "multilingual"],
        };
        assert_eq!(two.to_string(), "--mix \"x\": give default or multilingual");
    }
}
