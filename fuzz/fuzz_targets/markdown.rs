//! Fuzz target: critic_gate::fuzz::markdown (see src/fuzz.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    critic_gate::fuzz::markdown(data);
});
