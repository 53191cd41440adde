//! Fixed hashes: SipHash-1-3 under a fixed key for the keys of runs and
//! of the duplicate check's `(run_id, turn)` (stable across runs and
//! shards, which merge them), and an identity hasher for maps keyed by an
//! already-hashed `u64`.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hash, Hasher};

/// A set of already-hashed keys.
#[derive(Default)]
pub(super) struct Identity(u64);

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

pub(super) type KeySet = HashSet<u64, BuildHasherDefault<Identity>>;

/// A fixed key: keys must be the same in every process (shards' partial
/// results are merged by them), so it is no secret. SipHash with a known
/// key still leaves no way to craft a `run_id` whose key is another's
/// short of about 2^64 tries, where FNV-1a's collisions are found in a
/// minute (two runs of 16 hex digits each were one run).
const KEY: (u64, u64) = (0x6372_6974_6963_2d67, 0x6174_652f_7275_6e73);

fn keyed() -> siphasher::sip::SipHasher13 {
    siphasher::sip::SipHasher13::new_with_keys(KEY.0, KEY.1)
}

/// The duplicate check's key of `(run_id, turn)`.
pub(super) fn turn_key(run_id: &str, turn: u64) -> u64 {
    let mut h = keyed();
    run_id.hash(&mut h);
    turn.hash(&mut h);
    h.finish()
}

/// A run's key: runs are the sampling unit of the bounds. Two run ids
/// that share a 64-bit key would count as one run (only a wider bound),
/// which no traffic meets by chance below billions of runs.
pub(super) fn run_key(run_id: &str) -> u64 {
    let mut h = keyed();
    h.write(run_id.as_bytes());
    h.finish()
}
