//! Work on a stream of blocks on the rayon pool, results in input order.
//!
//! Workers take blocks as they arrive (no batches, so no worker waits for
//! the slowest block of a batch) while the calling thread consumes the
//! results, in input order, as soon as each is next: merging and writing
//! overlap evaluation. Order is restored by sequence number, so what the
//! consumer sees does not depend on scheduling; a window bounds how far
//! workers may run ahead of the consumer, so memory stays bounded.

use std::collections::BTreeMap;
use std::sync::mpsc::sync_channel;
use std::sync::{Condvar, Mutex};

use rayon::iter::{ParallelBridge, ParallelIterator};

/// A thread could not be started: the operating system's refusal.
#[derive(Debug)]
pub struct SpawnFailed(pub std::io::Error);

impl std::fmt::Display for SpawnFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot start a worker thread: {}", self.0)
    }
}

impl std::error::Error for SpawnFailed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// How far (in items) workers may run ahead of the consumer.
struct Window {
    consumed: Mutex<(usize, bool)>,
    moved: Condvar,
}

impl Window {
    /// Wait until item `seq` may start; false when the consumer stopped.
    fn admit(&self, seq: usize, width: usize) -> bool {
        let mut g = self.consumed.lock().unwrap_or_else(|e| e.into_inner());
        while !g.1 && seq >= g.0 + width {
            g = self.moved.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        !g.1
    }

    fn advance(&self, consumed: usize, stopped: bool) {
        let mut g = self.consumed.lock().unwrap_or_else(|e| e.into_inner());
        *g = (consumed, stopped);
        self.moved.notify_all();
    }
}

/// Map every item of `input` with `work` on `pool` (the global rayon pool
/// when None) and hand the results to `consume` in input order. At most `width` items are in
/// flight or waiting. Stops at the first error of `consume`, which it
/// returns (the items not yet started are never started). A thread that
/// cannot be started is an error, never a panic.
pub(crate) fn map_in_order<T, R, E>(
    pool: Option<&rayon::ThreadPool>,
    input: impl IntoIterator<Item = T, IntoIter: Send>,
    width: usize,
    work: impl Fn(T) -> R + Sync,
    mut consume: impl FnMut(R) -> Result<(), E>,
) -> Result<(), E>
where
    T: Send,
    R: Send,
    E: From<SpawnFailed>,
{
    let input = input.into_iter();
    let width = width.max(1);
    let window = Window {
        consumed: Mutex::new((0, false)),
        moved: Condvar::new(),
    };
    let (tx, rx) = sync_channel::<(usize, R)>(width);
    std::thread::scope(|s| {
        let (window, work) = (&window, &work);
        let feeder = std::thread::Builder::new().name("feeder".into());
        let feed = move || {
            input
                .enumerate()
                .take_while(|(seq, _)| window.admit(*seq, width))
                .par_bridge()
                .for_each_with(tx, |tx, (seq, item)| {
                    // A send fails only once the consumer has stopped.
                    let _ = tx.send((seq, work(item)));
                });
        };
        // The feeder is not a pool thread: it enters `pool` explicitly, or
        // the bridge would run on the global pool.
        let spawned = feeder.spawn_scoped(s, move || match pool {
            Some(p) => p.install(feed),
            None => feed(),
        });
        if let Err(e) = spawned {
            return Err(E::from(SpawnFailed(e)));
        }
        let mut next = 0;
        let mut held = BTreeMap::new();
        let mut result = Ok(());
        'recv: for (seq, r) in rx.iter() {
            held.insert(seq, r);
            while let Some(r) = held.remove(&next) {
                next += 1;
                if let Err(e) = consume(r) {
                    result = Err(e);
                    break 'recv;
                }
            }
            window.advance(next, false);
        }
        // Release waiting workers and fail their sends, then let the
        // scope join them.
        window.advance(next, result.is_err());
        drop(rx);
        result
    })
}

impl From<SpawnFailed> for crate::Error {
    fn from(e: SpawnFailed) -> crate::Error {
        crate::Error::System(crate::Failure::caused(e.to_string(), e.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::Receiver;

    fn feed(n: usize) -> Receiver<usize> {
        let (tx, rx) = sync_channel(4);
        std::thread::spawn(move || {
            for i in 0..n {
                if tx.send(i).is_err() {
                    return;
                }
            }
        });
        rx
    }

    #[test]
    fn results_come_in_input_order() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let mut seen = Vec::new();
        map_in_order(
            Some(&pool),
            feed(500),
            4,
            |i| {
                // Uneven work, so workers finish out of order.
                std::thread::sleep(std::time::Duration::from_micros((i % 7) as u64 * 50));
                // On the given pool, not the global one.
                (i * 2, rayon::current_num_threads())
            },
            |r| {
                seen.push(r);
                Ok::<(), crate::Error>(())
            },
        )
        .unwrap();
        assert_eq!(seen, (0..500).map(|i| (i * 2, 3)).collect::<Vec<_>>());
    }

    #[test]
    fn the_first_error_stops_the_work() {
        let started = std::sync::atomic::AtomicUsize::new(0);
        let r = map_in_order(
            None,
            feed(10_000),
            4,
            |i| {
                started.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                i
            },
            |i| {
                if i == 20 {
                    Err(crate::Error::usage(format!("item {i}")))
                } else {
                    Ok(())
                }
            },
        );
        assert_eq!(r, Err(crate::Error::usage("item 20".to_string())));
        // Only the window past the failing item was started.
        assert!(started.load(std::sync::atomic::Ordering::Relaxed) < 100);
    }
}
