//! Fuzz target: a bearer token, as moviedb checks it.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| moviedb::auth::check_token(data));
