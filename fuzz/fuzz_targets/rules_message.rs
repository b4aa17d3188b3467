//! Fuzz target: a chat message, as the desk's rules planner reads it.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent::rules::check_message(data));
