//! Fuzz target: a client model's answer, as `summarizeMovieReviews` reads it.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| moviedb::summary::check_model_reply(data));
