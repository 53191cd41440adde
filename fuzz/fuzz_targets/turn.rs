//! Fuzz target: critic_gate_core::fuzz::turn (see crates/core/src/fuzz.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| critic_gate_core::fuzz::turn(data));
