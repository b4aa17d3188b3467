//! The commands the documentation shows for one of the workspace's binaries, checked against
//! the binary itself: every subcommand and flag a command in README.md, SECURITY.md or
//! `docs/*.md` names (in a shell block, or written inline in the prose) must be one its
//! `--help` lists. A renamed flag then fails the binary's own test, naming the place that still
//! shows the old one.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A command shown for a binary: where, and the words after the binary's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    /// `FILE:LINE`.
    pub place: String,
    /// The arguments as written (placeholders such as `URL` included).
    pub words: Vec<String>,
}

/// The repository's documents: README.md, SECURITY.md and every `docs/*.md`.
fn documents(repo: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = ["README.md", "SECURITY.md"]
        .iter()
        .map(|name| repo.join(name))
        .filter(|path| path.exists())
        .collect();
    if let Ok(entries) = std::fs::read_dir(repo.join("docs")) {
        let mut docs: Vec<PathBuf> = entries
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
            .collect();
        docs.sort();
        found.extend(docs);
    }
    found
}

/// The code a line of a document shows: its inline spans, or the whole line inside a shell
/// block (a `\` at its end joins the next one; a `#` comment is dropped).
fn code_of(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut in_shell: Option<bool> = None;
    let mut pending: Option<(usize, String)> = None;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if let Some(info) = line.trim_start().strip_prefix("```") {
            in_shell = match in_shell {
                Some(_) => None,
                None => Some(matches!(info.trim(), "sh" | "bash" | "shell")),
            };
            continue;
        }
        match in_shell {
            Some(true) => {
                let code = line.split(" #").next().unwrap_or_default();
                let code = if code.trim_start().starts_with('#') {
                    ""
                } else {
                    code
                };
                let (start, mut joined) = pending.take().unwrap_or((number, String::new()));
                match code.trim_end().strip_suffix('\\') {
                    Some(head) => {
                        joined.push_str(head);
                        joined.push(' ');
                        pending = Some((start, joined));
                    }
                    None => {
                        joined.push_str(code);
                        found.push((start, joined));
                    }
                }
            }
            Some(false) => {}
            None => {
                let spans = line.split('`').skip(1).step_by(2);
                found.extend(spans.map(|span| (number, span.to_owned())));
            }
        }
    }
    found
}

/// The words after `bin` in one shell command, if it runs `bin` (by name or path, or through
/// `cargo run … --bin BIN -- …`), after any `NAME=value` settings before it.
fn words_for(command: &str, bin: &str) -> Option<Vec<String>> {
    let mut tokens = command
        .split_whitespace()
        .skip_while(|token| token.contains('=') && !token.starts_with('-'))
        .peekable();
    let first = *tokens.peek()?;
    let words: Vec<&str> = if first == "cargo" {
        let all: Vec<&str> = tokens.collect();
        let runs_bin = all.windows(2).any(|pair| pair == ["--bin", bin]);
        if !runs_bin || all.get(1) != Some(&"run") {
            return None;
        }
        match all.iter().position(|token| *token == "--") {
            Some(at) => all[at + 1..].to_vec(),
            None => Vec::new(),
        }
    } else if first.rsplit('/').next() == Some(bin) {
        tokens.skip(1).collect()
    } else {
        return None;
    };
    let words = words
        .into_iter()
        .take_while(|word| !matches!(*word, "…" | "..."))
        .map(str::to_owned)
        .collect();
    Some(words)
}

/// Every command for `bin` the documents of `repo` show.
pub fn commands_for(repo: &Path, bin: &str) -> Vec<Shown> {
    let mut shown = Vec::new();
    for path in documents(repo) {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let name = path
            .strip_prefix(repo)
            .unwrap_or(&path)
            .display()
            .to_string();
        for (line, code) in code_of(&text) {
            for command in code.split("&&").flat_map(|part| part.split(" | ")) {
                if let Some(words) = words_for(command, bin) {
                    let place = format!("{name}:{line}");
                    shown.push(Shown { place, words });
                }
            }
        }
    }
    shown
}

/// What `exe` prints for `--help` after `words` (a subcommand, or none); `None` if it refuses.
fn help(exe: &Path, words: &[&str]) -> Option<String> {
    let output = Command::new(exe).args(words).arg("--help").output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Whether `help` lists the flag `flag` (`--name`, not only a longer one it begins).
fn lists(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(at, _)| {
        let after = help[at + flag.len()..].chars().next();
        !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
    })
}

/// Check every command the documents of `repo` show for `bin` against the binary at `exe`:
/// how many were checked, and what does not hold (`FILE:LINE: why`).
pub fn check_commands(repo: &Path, bin: &str, exe: &Path) -> (usize, Vec<String>) {
    let shown = commands_for(repo, bin);
    let top = help(exe, &[]).unwrap_or_default();
    let mut wrong = Vec::new();
    for Shown { place, words } in &shown {
        // The words before the first flag: a subcommand (`web|cli`: either), its own
        // subcommand, a positional argument.
        let leading: Vec<&str> = words
            .iter()
            .map(String::as_str)
            .take_while(|word| !word.starts_with('-'))
            .collect();
        let helps: Vec<(String, Option<String>)> = match leading.split_first() {
            None => vec![(bin.to_owned(), Some(top.clone()))],
            Some((first, rest)) => first
                .split('|')
                .map(|sub| {
                    let mut path = vec![sub];
                    path.extend_from_slice(rest);
                    // The deepest of them the binary has help for.
                    let found = (1..=path.len())
                        .rev()
                        .find_map(|depth| help(exe, &path[..depth]));
                    (format!("{bin} {sub}"), found)
                })
                .collect(),
        };
        for (what, help) in helps {
            let Some(help) = help else {
                wrong.push(format!("{place}: `{what}` is no command of {bin}"));
                continue;
            };
            for word in words.iter().filter(|word| word.starts_with("--")) {
                let flag = word.split('=').next().unwrap_or(word);
                if flag != "--" && !lists(&help, flag) {
                    wrong.push(format!("{place}: `{what}` has no flag {flag}"));
                }
            }
        }
    }
    (shown.len(), wrong)
}

/// The repository's root, from a crate's manifest folder (`crates/NAME`).
pub fn repo_of(manifest_dir: &str) -> PathBuf {
    Path::new(manifest_dir)
        .ancestors()
        .nth(2)
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Panic unless at least `at_least` commands for `bin` are shown in the documents of the
/// repository around `manifest_dir` (a crate's `CARGO_MANIFEST_DIR`), and each holds for the
/// binary at `exe` (its `CARGO_BIN_EXE_…`).
pub fn assert_commands_hold(manifest_dir: &str, bin: &str, exe: &str, at_least: usize) {
    let (checked, wrong) = check_commands(&repo_of(manifest_dir), bin, Path::new(exe));
    assert!(
        checked >= at_least,
        "{checked} commands for {bin} found in the documents, expected at least {at_least}"
    );
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_found_inline_in_blocks_and_through_cargo_run() {
        let text = "Run `order-service serve --listen ADDR` or `order-service reset`.\n\
                    Not `order-services x` nor `cargo run -p orders`.\n\
                    ```sh\n\
                    RUST_LOG=debug target/debug/order-service serve \\\n    --metrics # comment\n\
                    # order-service stdio\n\
                    cargo run --release -p orders --bin order-service -- stdio --database URL\n\
                    ```\n";
        let found: Vec<(usize, Vec<String>)> = code_of(text)
            .into_iter()
            .filter_map(|(line, code)| words_for(&code, "order-service").map(|w| (line, w)))
            .collect();
        let words = |s: &str| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            found,
            vec![
                (1, words("serve --listen ADDR")),
                (1, words("reset")),
                (4, words("serve --metrics")),
                (7, words("stdio --database URL")),
            ]
        );
    }

    #[test]
    fn a_flag_is_listed_only_whole() {
        let help = "  --listen <ADDR>  where\n  --metrics-port <N>\n";
        assert!(lists(help, "--listen"));
        assert!(!lists(help, "--metrics"));
        assert!(!lists(help, "--list"));
    }
}
