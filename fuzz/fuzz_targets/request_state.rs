//! Fuzz target: `backchannel::fuzzing::request_state`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| backchannel::fuzzing::request_state(data));
