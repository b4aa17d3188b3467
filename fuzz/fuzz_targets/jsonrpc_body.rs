//! Fuzz target: `backchannel::fuzzing::jsonrpc_body`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| backchannel::fuzzing::jsonrpc_body(data));
