//! The core crate's integration tests, one binary: the gate and the
//! derivations against symfonic-core 9.12.0's own answers, the gate
//! contract as properties, and the committed fuzz corpus replayed.

mod conformance;
mod fuzz_corpus;
mod properties;
