//! The documents' commands: every shell block README.md and `docs/*.md` show is followed by a
//! paragraph that starts `Run by:` and names, in backticks, what runs it — a Rust test, a
//! browser scenario, or a script of the repository (run by the test command) — and each name
//! exists. A command nobody runs can go stale unseen; one named here fails with what runs it.
//! Every command of the documents, in a block or inline, names packages, targets and scripts
//! that exist, and a command of one of our binaries is checked against the binary by a test
//! of its package.

use std::collections::BTreeSet;

use crate::lessons::{scenarios, test_functions};
use crate::{assert_none, workspace};

/// The documents whose commands are checked.
fn documents() -> Vec<String> {
    let mut found = vec!["README.md".to_owned()];
    for entry in std::fs::read_dir(workspace().join("docs")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            found.push(format!("docs/{name}"));
        }
    }
    found.sort();
    found
}

/// Each shell block of `text` (its first line's number) and the paragraph after it.
fn shell_blocks(text: &str) -> Vec<(usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        let info = lines[at].trim_start().strip_prefix("```");
        let Some(info) = info else {
            at += 1;
            continue;
        };
        let shell = matches!(info.trim(), "sh" | "bash" | "shell" | "console");
        let close = (at + 1..lines.len())
            .find(|&line| lines[line].trim_start().starts_with("```"))
            .unwrap_or(lines.len());
        if shell {
            let after: Vec<&str> = lines[(close + 1).min(lines.len())..]
                .iter()
                .skip_while(|line| line.trim().is_empty())
                .take_while(|line| !line.trim().is_empty())
                .copied()
                .collect();
            found.push((at + 1, after.join(" ")));
        }
        at = close + 1;
    }
    found
}

/// Whether a code span names a test (`snake_case`, perhaps after `module::`) or a file.
fn runner_like(name: &str) -> bool {
    let test = name.contains('_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == ':');
    test || name.contains('/')
}

#[test]
fn the_block_reader_finds_shell_blocks_and_what_follows() {
    let text = "a\n```bash\nx\n```\n\nRun by: `t`.\nmore\n\n```rust\ny\n```\n```sh\nz\n```\n";
    assert_eq!(
        shell_blocks(text),
        [(2, "Run by: `t`. more".to_owned()), (12, String::new())]
    );
}

#[test]
fn every_command_the_docs_show_names_what_runs_it() {
    let tests = test_functions();
    let scenarios = scenarios();
    let named = regex_lite::Regex::new(r"`([^`]+)`").unwrap();
    let mut blocks = 0;
    let mut offenders = Vec::new();
    for document in documents() {
        let text = std::fs::read_to_string(workspace().join(&document)).unwrap();
        for (line, after) in shell_blocks(&text) {
            blocks += 1;
            let Some(runners) = after.strip_prefix("Run by:") else {
                offenders.push(format!(
                    "{document}:{line}: no `Run by:` paragraph after it"
                ));
                continue;
            };
            // What names a runner: a test (`snake_case`, perhaps after `module::`), a file (a
            // path with `/`), or a browser scenario by its whole name; other code spans (a flag,
            // a command) are words.
            let names: BTreeSet<&str> = named
                .captures_iter(runners)
                .map(|c| c.get(1).unwrap().as_str())
                .filter(|name| runner_like(name) || scenarios.contains(*name))
                .collect();
            if names.is_empty() {
                offenders.push(format!(
                    "{document}:{line}: `Run by:` names no test, scenario or file"
                ));
            }
            for name in names {
                let test = name.rsplit("::").next().unwrap_or(name);
                let exists = tests.contains(test)
                    || scenarios.contains(name)
                    || workspace().join(name).is_file();
                if !exists {
                    offenders.push(format!(
                        "{document}:{line}: `{name}` is no test, scenario or file"
                    ));
                }
            }
        }
    }
    assert!(
        blocks >= 8,
        "the reader finds the documents' shell blocks ({blocks})"
    );
    assert_none(
        "shell blocks in the documents without what runs them (add a `Run by:` paragraph)",
        offenders,
    );
}

/// The code the documents show, line by line: inline spans, and the lines of shell blocks.
fn code_lines(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut in_block: Option<bool> = None;
    for (index, line) in text.lines().enumerate() {
        if let Some(info) = line.trim_start().strip_prefix("```") {
            in_block = match in_block {
                Some(_) => None,
                None => Some(matches!(info.trim(), "sh" | "bash" | "shell" | "console")),
            };
            continue;
        }
        match in_block {
            Some(true) => found.push((index + 1, line.to_owned())),
            Some(false) => {}
            None => found.extend(
                line.split('`')
                    .skip(1)
                    .step_by(2)
                    .map(|span| (index + 1, span.to_owned())),
            ),
        }
    }
    found
}

/// The workspace's packages: name → folder.
fn packages() -> std::collections::BTreeMap<String, std::path::PathBuf> {
    let mut found = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(workspace().join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        let name = manifest
            .lines()
            .find_map(|line| line.strip_prefix("name = \""))
            .and_then(|rest| rest.strip_suffix('"'));
        if let Some(name) = name {
            found.insert(name.to_owned(), dir);
        }
    }
    found
}

/// The binaries of the workspace (`src/bin/NAME.rs`).
fn binaries() -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for dir in packages().values() {
        let Ok(entries) = std::fs::read_dir(dir.join("src/bin")) else {
            continue;
        };
        for entry in entries {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            if let Some(bin) = name.strip_suffix(".rs") {
                found.insert(bin.to_owned());
            }
        }
    }
    found
}

/// What a command of the documents names that must exist: `cargo … -p PACKAGE` with its
/// `--bin`/`--example`, a script of `scripts/`, and a command of one of the workspace's
/// binaries, which a test of its package must check against the binary
/// (`backchannel::testing::docs::assert_commands_hold`).
#[test]
fn every_package_target_script_and_binary_the_docs_name_exists_and_is_checked() {
    let packages = packages();
    let binaries = binaries();
    let mut checked_binaries = BTreeSet::new();
    let calls = regex_lite::Regex::new(r#"assert_commands_hold\([^,]+,\s*"([^"]+)""#).unwrap();
    for dir in packages.values() {
        let Ok(entries) = std::fs::read_dir(dir.join("tests/it")) else {
            continue;
        };
        for entry in entries {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap_or_default();
            for found in calls.captures_iter(&text) {
                checked_binaries.insert(found[1].to_owned());
            }
        }
    }
    let mut commands = 0;
    let mut offenders = Vec::new();
    let mut names = vec!["SECURITY.md".to_owned()];
    names.extend(documents());
    for document in names {
        let text = std::fs::read_to_string(workspace().join(&document)).unwrap();
        for (line, code) in code_lines(&text) {
            let words: Vec<&str> = code.split_whitespace().collect();
            let place = format!("{document}:{line}");
            for (at, word) in words.iter().enumerate() {
                let next = words.get(at + 1).copied().unwrap_or_default();
                let script = word
                    .strip_prefix("scripts/")
                    .map(|script| script.trim_end_matches([',', '.', ')', ';']));
                if let Some(script) = script.filter(|s| !s.is_empty() && !s.contains('*')) {
                    commands += 1;
                    if !workspace().join("scripts").join(script).exists() {
                        offenders.push(format!("{place}: no script scripts/{script}"));
                    }
                }
                if *word == "cargo" && matches!(next, "run" | "build" | "test" | "install") {
                    commands += 1;
                    // A placeholder (`-p CRATE`) names nothing to check.
                    let flag = |name: &str| {
                        let at = words.iter().position(|w| *w == name)?;
                        let value = words.get(at + 1).copied()?;
                        (!value.chars().all(|c| c.is_ascii_uppercase())).then_some(value)
                    };
                    let Some(package) = flag("-p") else { continue };
                    let Some(dir) = packages.get(package) else {
                        offenders.push(format!("{place}: no package {package}"));
                        continue;
                    };
                    if let Some(bin) = flag("--bin")
                        && !dir.join("src/bin").join(format!("{bin}.rs")).is_file()
                    {
                        offenders.push(format!("{place}: {package} has no binary {bin}"));
                    }
                    if let Some(example) = flag("--example")
                        && !dir.join("examples").join(format!("{example}.rs")).is_file()
                    {
                        offenders.push(format!("{place}: {package} has no example {example}"));
                    }
                }
            }
            let first = words
                .iter()
                .find(|word| !word.contains('='))
                .map(|word| word.rsplit('/').next().unwrap_or(word));
            let binary = first.filter(|first| binaries.contains(*first));
            if let Some(binary) = binary.filter(|_| words.len() > 1) {
                commands += 1;
                if !checked_binaries.contains(binary) {
                    offenders.push(format!(
                        "{place}: `{binary}` commands are checked by no test \
                         (assert_commands_hold in its package's tests)"
                    ));
                }
            }
        }
    }
    assert!(
        commands >= 40,
        "the reader finds the documents' commands ({commands})"
    );
    assert_none(
        "commands in the documents that name what does not exist, or that nothing checks",
        offenders,
    );
}
