//! The library's one error type. Every kind is the tool failing to do its
//! job, so every kind exits 2: exit 1 is reserved for a verdict (a budget
//! that failed), which is a result, not an error.

use std::fmt;
use std::sync::Arc;

use crate::options::{Said, Setting};

/// Why the library could not do what it was asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// An invalid input line (`FILE:LINE: reason`): in strict mode, or in
    /// a command that reads one turn or case at a time (`explain`,
    /// `derive`), where nothing can be set aside.
    InvalidLine {
        source: String,
        line: u64,
        reason: Said,
        /// Whether `--skip-invalid` would set it aside (the message says so).
        skippable: bool,
    },
    /// An input that could not be read (a missing file, a broken stream).
    Read(Failure),
    /// An invalid config: a key, a value or a pattern, with its file and
    /// what kind of fault it is.
    Config(crate::config::ConfigError),
    /// A request that cannot be carried out as given (an output folder
    /// that holds an input, a `--group-by` that repeats a dimension).
    Usage(Said),
    /// A report that could not be written (the path and why).
    Write(Failure),
    /// A report folder that cannot be judged or compared.
    CannotJudge(Said),
    /// The operating system refused (a thread that cannot be started),
    /// with its error.
    System(Failure),
    /// The caller asked the run to stop (a Python caller's Ctrl-C, seen
    /// through `Progress::stopped`): nothing was written.
    Interrupted,
}

impl Error {
    /// The process exit code for this error: always 2 ("could not do its
    /// job"), as documented for every command.
    pub fn exit_code(&self) -> u8 {
        2
    }
}

impl Error {
    /// The message, naming settings as data: the command line shows it
    /// (`Display`) with each setting as its flag, the Python package
    /// (`Said::python`) as its keyword.
    pub fn said(&self) -> Said {
        match self {
            Error::InvalidLine {
                source,
                line,
                reason,
                skippable: true,
            } => crate::said![
                format!("{source}:{line}: "),
                reason,
                "\n(no report was written; fix the line, or rerun with ",
                Setting::SkipInvalid,
                " to set invalid lines aside in rejects.jsonl)"
            ],
            Error::InvalidLine {
                source,
                line,
                reason,
                skippable: false,
            } => crate::said![format!("{source}:{line}: "), reason],
            Error::Config(e) => e.said(),
            Error::Read(m) | Error::Write(m) | Error::System(m) => m.message.clone(),
            Error::Usage(m) | Error::CannotJudge(m) => m.clone(),
            Error::Interrupted => "interrupted: the run stopped, and nothing was written".into(),
        }
    }

    /// A usage error: a request that cannot be carried out as given.
    pub fn usage(message: impl Into<Said>) -> Error {
        Error::Usage(message.into())
    }

    /// A report folder that cannot be judged or compared.
    pub fn cannot_judge(message: impl Into<Said>) -> Error {
        Error::CannotJudge(message.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.said())
    }
}

/// The error underneath: the I/O (or other) error a read or write failed
/// with, the config's.
impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Read(f) | Error::Write(f) | Error::System(f) => f.cause(),
            Error::Config(e) => Some(e),
            _ => None,
        }
    }
}

/// A read or a write that failed: the message (the file, what failed and
/// why, as the tool says it) and, when there is one, the error it failed
/// with, kept whole for a caller that acts on it (an `io::Error`'s kind,
/// its OS error number).
#[derive(Clone, Debug)]
pub struct Failure {
    message: Said,
    cause: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl Failure {
    /// A failure the message says all of.
    pub fn new(message: impl Into<Said>) -> Failure {
        Failure {
            message: message.into(),
            cause: None,
        }
    }

    /// A failure and the error it failed with (which the message names).
    pub fn caused(
        message: impl Into<Said>,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> Failure {
        Failure {
            message: message.into(),
            cause: Some(Arc::new(cause)),
        }
    }

    /// The error it failed with, if any.
    pub fn cause(&self) -> Option<&(dyn std::error::Error + 'static)> {
        let c: &(dyn std::error::Error + Send + Sync + 'static) = self.cause.as_deref()?;
        Some(c)
    }

    /// The I/O error it failed with, if that is what it was.
    pub fn io(&self) -> Option<&std::io::Error> {
        self.cause.as_deref()?.downcast_ref()
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure::new(message)
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Failure {
        Failure::new(message)
    }
}

impl From<Said> for Failure {
    fn from(message: Said) -> Failure {
        Failure::new(message)
    }
}

/// Failures are equal when they say the same (the error underneath is
/// what the message already names).
impl PartialEq for Failure {
    fn eq(&self, other: &Failure) -> bool {
        self.message == other.message
    }
}

impl Eq for Failure {}

impl From<crate::config::ConfigError> for Error {
    fn from(e: crate::config::ConfigError) -> Error {
        Error::Config(e)
    }
}

impl From<crate::read::reader::ReadError> for Error {
    fn from(e: crate::read::reader::ReadError) -> Error {
        Error::Read(match e.cause {
            Some(io) => Failure::caused(e.message, io),
            None => Failure::new(e.message),
        })
    }
}

impl From<crate::read::reader::NotAFile> for Error {
    fn from(e: crate::read::reader::NotAFile) -> Error {
        Error::Usage(e.to_string().into())
    }
}

pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_exits_2_and_an_invalid_line_names_file_and_line() {
        let e = Error::InvalidLine {
            source: "t.jsonl".into(),
            line: 17,
            reason: "confidence must be a number in [0, 1], got \"high\"".into(),
            skippable: true,
        };
        assert!(e.to_string().starts_with("t.jsonl:17: confidence must be"));
        assert!(e.to_string().contains("--skip-invalid"));
        let kinds = [
            e,
            Error::Read("r".into()),
            Error::Config(crate::config::ConfigError::value("c")),
            Error::usage("u"),
            Error::Write("w".into()),
            Error::cannot_judge("j"),
            Error::System("s".into()),
        ];
        assert!(kinds.iter().all(|k| k.exit_code() == 2));
    }

    /// A write that failed keeps the I/O error it failed with (a caller
    /// can tell a full disk from a missing folder), and says what it said.
    #[test]
    fn a_failed_write_keeps_its_io_error() {
        let dir = std::env::temp_dir().join(format!("cg-no-such-{}", std::process::id()));
        let e = crate::report::put(&dir.join("x"), "f.csv", b"a").unwrap_err();
        let Error::Write(f) = &e else { panic!("{e:?}") };
        assert_eq!(
            f.io().map(std::io::Error::kind),
            Some(std::io::ErrorKind::NotFound)
        );
        let source = std::error::Error::source(&e).expect("the I/O error underneath");
        assert!(source.downcast_ref::<std::io::Error>().is_some());
        assert!(e.to_string().contains("f.csv"), "{e}");
    }
}
