//! Standard output and error without panics.
//!
//! A closed pipe (`critic-gate check DIR | head -1`) ends the output
//! quietly, as in ripgrep, and the command's exit code stays what it
//! decided (for `check`, its verdict). Any other write error on stdout (a
//! full disk) is an error naming the stream (exit 2). Writes to a closed or
//! full stderr are dropped: there is nowhere left to say anything.

use std::io::{ErrorKind, IsTerminal, Write};

/// Write `text` to standard output.
pub fn stdout(text: &str) -> Result<(), critic_gate::Error> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(critic_gate::Error::Write(
            format!("cannot write to standard output: {e}").into(),
        )),
    }
}

/// Write `text` to standard error, if it can be written.
pub fn stderr(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}

/// Say that the command is waiting for standard input when that is a
/// terminal: a `-` (or no file) typed by hand would otherwise look like a
/// hang.
pub fn waiting_for_stdin<S: AsRef<str>>(sources: &[S]) {
    if sources.iter().any(|s| s.as_ref() == "-") && std::io::stdin().is_terminal() {
        stderr("critic-gate: reading standard input, which is a terminal: type or paste JSON lines, then Ctrl-D (or give a file instead of -)\n");
    }
}
