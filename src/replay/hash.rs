//! Fixed, fast hashes: FNV-1a for the duplicate check's `(run_id, turn)`
//! keys (stable across runs), and an identity hasher for maps keyed by an
//! already-hashed `u64`.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hash, Hasher};

/// FNV-1a: a fixed, fast hash for the duplicate check (stable across runs).
#[derive(Default)]
pub struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf29ce484222325
        } else {
            self.0
        };
        for b in bytes {
            h ^= *b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
        self.0 = h;
    }
}

/// A set of already-hashed keys.
#[derive(Default)]
pub struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 keys")
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

pub type KeySet = HashSet<u64, BuildHasherDefault<Identity>>;

pub fn turn_key(run_id: &str, turn: u64) -> u64 {
    let mut h = Fnv::default();
    run_id.hash(&mut h);
    turn.hash(&mut h);
    h.finish()
}

/// A run's key (FNV-1a of its `run_id`): runs are the sampling unit of
/// the bounds. Two run ids that share a 64-bit hash count as one run,
/// which only widens a bound.
pub fn run_key(run_id: &str) -> u64 {
    let mut h = Fnv::default();
    h.write(run_id.as_bytes());
    h.finish()
}
