//! Fuzz target: `backchannel::fuzzing::input_response`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| backchannel::fuzzing::input_response(data));
