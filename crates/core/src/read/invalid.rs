//! Why a value of a line is invalid: the one error of the validators that
//! every reader of a turn shares (the line's own parser, the activation
//! log's, the provenance's).

use std::fmt;

/// Why a value of a line is invalid: the key, what it must be and what it
/// is, as the message says them (a [`TurnError`](super::turn::TurnError)
/// adds where in the line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid(pub String);

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Invalid {}

impl From<String> for Invalid {
    fn from(reason: String) -> Invalid {
        Invalid(reason)
    }
}

impl From<&str> for Invalid {
    fn from(reason: &str) -> Invalid {
        Invalid(reason.to_string())
    }
}
