//! ARCHITECTURE.md stays short and true: every file it names exists, every crate has its
//! section.

use std::collections::BTreeSet;

use crate::{assert_none, crates, workspace};

/// Every file of the repository (not build output, installed tools or `.git`), relative.
fn repository_files() -> Vec<String> {
    let skip = ["target", "node_modules", ".git", "results", "data"];
    let mut found = Vec::new();
    let mut stack = vec![workspace()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !skip.contains(&name.as_str()) {
                    stack.push(path);
                }
            } else {
                let relative = path.strip_prefix(workspace()).unwrap();
                found.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    found
}

#[test]
fn every_file_architecture_names_exists() {
    let architecture = std::fs::read_to_string(workspace().join("ARCHITECTURE.md")).unwrap();
    let named = regex_lite::Regex::new(r"`([\w./-]+\.(?:rs|md|toml|mjs|cfg|py|sql))`").unwrap();
    let files = repository_files();
    let mut checked = 0;
    let offenders = named
        .captures_iter(&architecture)
        .map(|found| found[1].trim_start_matches("./").to_owned())
        .filter(|name| {
            checked += 1;
            !files
                .iter()
                .any(|file| file == name || file.ends_with(&format!("/{name}")))
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert!(
        checked > 40,
        "the reader finds the files ARCHITECTURE.md names ({checked})"
    );
    assert_none(
        "files ARCHITECTURE.md names that do not exist (renamed? update the document)",
        offenders,
    );
}

#[test]
fn every_crate_has_its_architecture_section() {
    let architecture = std::fs::read_to_string(workspace().join("ARCHITECTURE.md")).unwrap();
    let headings: Vec<&str> = architecture
        .lines()
        .filter(|l| l.starts_with("## "))
        .collect();
    let offenders = crates()
        .into_iter()
        .filter(|name| !headings.iter().any(|h| h.contains(&format!("`{name}`"))))
        .collect();
    assert_none(
        "crates without a `## `name`` section in ARCHITECTURE.md",
        offenders,
    );
}

#[test]
fn the_architecture_document_stays_short() {
    let architecture = std::fs::read_to_string(workspace().join("ARCHITECTURE.md")).unwrap();
    let lines = architecture.lines().count();
    assert!(
        lines <= 300,
        "ARCHITECTURE.md has {lines} lines: keep it a map (numbers live in the code)"
    );
    let long: Vec<String> = architecture
        .lines()
        .enumerate()
        // A table's row cannot wrap.
        .filter(|(_, line)| !line.starts_with('|') && line.chars().count() > 120)
        .map(|(n, line)| format!("line {}: {} characters", n + 1, line.chars().count()))
        .collect();
    assert_none(
        "ARCHITECTURE.md lines over 120 characters (tables aside)",
        long,
    );
}

/// Every test the wire table of ARCHITECTURE.md (its last column) names is a test function of
/// the workspace: the checklist of an rmcp upgrade points at tests that run.
#[test]
fn every_test_the_wire_table_names_exists() {
    let architecture = std::fs::read_to_string(workspace().join("ARCHITECTURE.md")).unwrap();
    let table = architecture
        .split("**The wire we own.**")
        .nth(1)
        .expect("ARCHITECTURE.md has its wire table")
        .split("\n\n")
        .nth(1)
        .expect("the table follows its paragraph");
    let named: Vec<&str> = table
        .lines()
        .skip(2)
        .filter_map(|row| row.trim_end_matches('|').rsplit('|').next())
        .map(|cell| cell.trim().trim_matches('`'))
        .collect();
    assert!(
        named.len() >= 5,
        "the reader finds the table's tests ({named:?})"
    );
    let sources: String = crate::all_sources()
        .iter()
        .map(|path| crate::source(path))
        .collect();
    let offenders = named
        .into_iter()
        .filter(|test| !sources.contains(&format!("fn {test}(")))
        .map(str::to_owned)
        .collect();
    assert_none(
        "tests the wire table of ARCHITECTURE.md names that do not exist",
        offenders,
    );
}
