//! Fuzz target: `backchannel_host::fuzzing::host_config`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| backchannel_host::fuzzing::host_config(data));
