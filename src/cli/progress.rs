//! What a replay shows while it runs and says when it ends: the progress
//! bar (on a terminal, unless quiet), the summary on stderr, and the
//! staging folder removed on SIGINT or SIGTERM. Process-level things the
//! library leaves to its caller (the Python package shows none of them).

use std::io::IsTerminal;
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use critic_gate::{Outcome, Progress};

use super::CliResult;

/// SIGINT and SIGTERM remove the run's staging folder and exit 130 / 143
/// (128 + the signal), as a shell reports them.
#[cfg(unix)]
pub(super) fn clean_up_on_signals() -> Result<(), critic_gate::Error> {
    use signal_hook::consts::signal::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]).map_err(|e| {
        critic_gate::Error::System(critic_gate::Failure::caused(
            format!("cannot watch for signals: {e}"),
            e,
        ))
    })?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                critic_gate::abandon_in_progress_and_exit(128 + sig);
            }
        })
        .map(drop)
        .map_err(|e| {
            critic_gate::Error::System(critic_gate::Failure::caused(
                format!("cannot start the signal thread: {e}"),
                e,
            ))
        })
}

#[cfg(not(unix))]
pub(super) fn clean_up_on_signals() -> Result<(), critic_gate::Error> {
    Ok(())
}

/// The signal that stopped a command's pass (0: none).
pub(super) static SIGNALLED: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// For the commands that read their traffic in a pass of their own
/// (`plan`, `sample`, `labels`, `monitor`): SIGINT or SIGTERM sets the
/// returned stop, so the pass ends at its next block with nothing written
/// and no state advanced (then exit 130 / 143); a second signal ends the
/// process at once, its temporary files removed.
#[cfg(unix)]
pub(super) fn stop_on_signals() -> Result<critic_gate::cmd::Stop, critic_gate::Error> {
    use signal_hook::consts::signal::{SIGINT, SIGTERM};
    use std::sync::atomic::{AtomicBool, Ordering};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]).map_err(|e| {
        critic_gate::Error::System(critic_gate::Failure::caused(
            format!("cannot watch for signals: {e}"),
            e,
        ))
    })?;
    let flag = std::sync::Arc::new(AtomicBool::new(false));
    let set = flag.clone();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                if set.swap(true, Ordering::SeqCst) {
                    critic_gate::abandon_in_progress_and_exit(128 + sig);
                }
                SIGNALLED.store(sig, Ordering::SeqCst);
            }
        })
        .map(drop)
        .map_err(|e| {
            critic_gate::Error::System(critic_gate::Failure::caused(
                format!("cannot start the signal thread: {e}"),
                e,
            ))
        })?;
    Ok(critic_gate::cmd::Stop::of(flag))
}

#[cfg(not(unix))]
pub(super) fn stop_on_signals() -> Result<critic_gate::cmd::Stop, critic_gate::Error> {
    Ok(critic_gate::cmd::Stop::default())
}

struct Bar(ProgressBar);

impl Progress for Bar {
    fn update(&self, bytes: u64, turns: u64) {
        self.0.set_position(bytes);
        let secs = self.0.elapsed().as_secs_f64().max(1e-9);
        self.0
            .set_message(format!("{turns} turns, {:.0} turns/s", turns as f64 / secs));
    }
}

/// Run a replay of `sources` with a progress bar (unless quiet or not a
/// terminal) and, done, its summary on stderr naming what was `written`.
pub fn run_with_progress(
    sources: &[String],
    written: &[String],
    quiet: bool,
    replay: impl FnOnce(&dyn Progress) -> critic_gate::Result<Outcome>,
) -> CliResult {
    clean_up_on_signals()?;
    super::output::waiting_for_stdin(sources);
    let total: u64 = sources
        .iter()
        .map(|f| {
            if f == "-" {
                0
            } else {
                std::fs::metadata(f).map(|m| m.len()).unwrap_or(0)
            }
        })
        .sum();
    let show = !quiet && std::io::stderr().is_terminal();
    let bar = if show {
        let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        b.set_style(
            ProgressStyle::with_template("{bar:30} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} ETA {eta} {msg}")
                .unwrap(),
        );
        b
    } else {
        ProgressBar::hidden()
    };
    let started = std::time::Instant::now();
    let outcome = replay(&Bar(bar.clone()));
    bar.finish_and_clear();
    let outcome = outcome?;
    if quiet {
        return Ok(ExitCode::SUCCESS);
    }
    let msg = outcome.console(started.elapsed().as_secs_f64(), written);
    super::output::stderr(&msg);
    Ok(ExitCode::SUCCESS)
}
