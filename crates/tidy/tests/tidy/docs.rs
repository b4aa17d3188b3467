//! The documents' commands: every shell block README.md and `docs/*.md` show is followed by a
//! paragraph that starts `Run by:` and names, in backticks, what runs it — a Rust test, a
//! browser scenario, or a script of the repository (run by the test command) — and each name
//! exists. A command nobody runs can go stale unseen; one named here fails with what runs it.

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
