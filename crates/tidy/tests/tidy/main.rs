//! Tidy: the workspace's boundaries, checked by reading its files (the rust-analyzer pattern,
//! which keeps tidy in `xtask`). Each rule names the files that break it, so a failure says
//! what to fix. `cargo test -p tidy`; the crate has no code of its own.
#![allow(clippy::unwrap_used)]

mod architecture;
mod boundaries;
mod docs;
mod files;
mod imports;
mod lessons;
mod scripts;
mod sizes;

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Every `.rs` file under `dir`, as paths relative to the workspace.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path.strip_prefix(workspace()).unwrap().to_path_buf());
            }
        }
    }
    found.sort();
    found
}

fn crates() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(workspace().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn source(path: &Path) -> String {
    std::fs::read_to_string(workspace().join(path)).unwrap()
}

/// The lines that are code: comments (line and doc) dropped.
fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(|line| match line.find("//") {
        Some(at) => &line[..at],
        None => line,
    })
}

fn all_sources() -> Vec<PathBuf> {
    crates()
        .iter()
        .flat_map(|name| {
            let root = workspace().join("crates").join(name);
            let mut files = rust_files(&root.join("src"));
            if root.join("tests").is_dir() {
                files.extend(rust_files(&root.join("tests")));
            }
            files
        })
        .collect()
}

fn assert_none(rule: &str, offenders: Vec<String>) {
    assert!(
        offenders.is_empty(),
        "{rule}:\n  {}",
        offenders.join("\n  ")
    );
}
