//! Fuzz target: critic_gate::fuzz::otlp (see src/fuzz.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| critic_gate::fuzz::otlp(data));
