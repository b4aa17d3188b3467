//! Fuzz target: `backchannel::fuzzing::host_config`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| backchannel::fuzzing::host_config(data));
