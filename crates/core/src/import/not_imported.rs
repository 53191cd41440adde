//! Why a record cannot be imported: the one error of every reader and
//! converter of the import, which a reject (or an invalid line) says.

/// Why a record cannot be imported (a transcript's message, a span, a
/// turn that cannot be converted): what is wrong, as the reject says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotImported(pub crate::options::Said);

impl std::fmt::Display for NotImported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::error::Error for NotImported {}

impl From<String> for NotImported {
    fn from(reason: String) -> NotImported {
        NotImported(reason.into())
    }
}

impl From<&str> for NotImported {
    fn from(reason: &str) -> NotImported {
        NotImported(reason.into())
    }
}

/// A turn's value that the reader refuses, said as the import's reason.
impl From<crate::read::turn::Invalid> for NotImported {
    fn from(e: crate::read::turn::Invalid) -> NotImported {
        NotImported(e.0.into())
    }
}
