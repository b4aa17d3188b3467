//! The workspace's tidy rules live in this crate's tests (`tests/tidy/`), which read the
//! repository's files: `cargo test -p tidy`. The library is empty; it exists so the rules
//! build once, apart from the crates they judge, as rust-analyzer keeps its tidy in `xtask`.
