//! What every source file holds: a module comment, deprecation only where acknowledged, the
//! environment read only at the edges, revisions named only by `Revision`, documented public
//! items, tests only where a harness runs them.

use std::path::PathBuf;

use crate::{all_sources, assert_none, code_lines, rust_files, source, workspace};

#[test]
fn every_source_file_starts_with_a_module_comment() {
    let offenders = all_sources()
        .into_iter()
        .filter(|path| !source(path).starts_with("//!"))
        .map(|path| path.display().to_string())
        .collect();
    assert_none("files without a `//!` module comment first", offenders);
}

/// Where rmcp's deprecation of sampling, roots and logging may be acknowledged: once per crate
/// that speaks them for others.
/// Tests that play the client acknowledge it once per test binary.
const DEPRECATED_ALLOWED_IN: [&str; 9] = [
    "crates/backchannel/src/lib.rs",
    "crates/backchannel-host/src/lib.rs",
    "crates/conformance/src/lib.rs",
    "crates/mcp-gateway/src/lib.rs",
    "crates/backchannel/tests/it/main.rs",
    "crates/conformance/tests/it/main.rs",
    "crates/mcp-gateway/tests/it/main.rs",
    "crates/moviedb/tests/it/main.rs",
    "crates/orders/tests/it/main.rs",
];

#[test]
fn deprecation_is_acknowledged_only_where_listed() {
    let pattern = regex_lite::Regex::new(r"#!?\[\s*(allow|expect)\(\s*deprecated").unwrap();
    let offenders = all_sources()
        .into_iter()
        .filter(|path| !DEPRECATED_ALLOWED_IN.contains(&path.to_str().unwrap()))
        .filter(|path| pattern.is_match(&source(path)))
        .map(|path| path.display().to_string())
        .collect();
    assert_none(
        "allow/expect(deprecated) outside the listed files (use backchannel's own types)",
        offenders,
    );
}

/// Issue 74: revision checks came back as string compares (`protocol_version.as_str() <=
/// "2025-11-25"`) beside `Revision::has_sessions()`, the one question ARCHITECTURE.md names.
/// Outside `Revision`'s home and tests, no code names a protocol revision's date or rmcp's
/// `ProtocolVersion::V_*`: it asks `backchannel::Revision` (`of`, `has_sessions`, `date`).
#[test]
fn protocol_revisions_are_named_only_by_revision() {
    let pattern = regex_lite::Regex::new(
        r#"ProtocolVersion::V_|"(2024-11-05|2025-03-26|2025-06-18|2025-11-25|2026-07-28)""#,
    )
    .unwrap();
    let offenders = all_sources()
        .into_iter()
        .filter(|path| {
            let path = path.to_str().unwrap();
            path != "crates/backchannel/src/revision.rs"
                && path.contains("/src/")
                && !path.ends_with("/tests.rs")
                && !path.contains("/tests/")
        })
        .filter(|path| {
            let text = source(path);
            let before_tests = text.split("#[cfg(test)]").next().unwrap_or_default();
            code_lines(before_tests).any(|line| pattern.is_match(line))
        })
        .map(|path| path.display().to_string())
        .collect();
    assert_none(
        "protocol revisions named outside backchannel::Revision (ask it: of(), has_sessions(), date())",
        offenders,
    );
}

#[test]
fn the_environment_is_read_only_by_binaries_and_tests() {
    let pattern = regex_lite::Regex::new(r"env::(var|var_os|vars|vars_os)\s*\(").unwrap();
    let offenders = all_sources()
        .into_iter()
        .filter(|path| {
            let path = path.to_str().unwrap();
            !path.contains("/src/bin/")
                && !path.contains("/tests/")
                // The test kit reads UPDATE_SNAPSHOTS.
                && path != "crates/backchannel/src/testing/mod.rs"
        })
        .filter(|path| code_lines(&source(path)).any(|line| pattern.is_match(line)))
        .map(|path| path.display().to_string())
        .collect();
    assert_none(
        "environment variables read outside src/bin/ (put them into the crate's Config)",
        offenders,
    );
}

/// The published libraries hold every public item to a doc comment: `missing_docs` at warn
/// (or stricter) in each crate root, which the clippy step (`-D warnings`) and the rustdoc
/// step (`RUSTDOCFLAGS=-D warnings`) turn into errors; scripts/check-libraries relies on it.
#[test]
fn the_published_libraries_lint_undocumented_public_items() {
    let offenders = ["backchannel", "backchannel-host"]
        .into_iter()
        .filter(|name| {
            let root = source(&workspace().join("crates").join(name).join("src/lib.rs"));
            !code_lines(&root).any(|line| {
                [
                    "#![warn(missing_docs)]",
                    "#![deny(missing_docs)]",
                    "#![forbid(missing_docs)]",
                ]
                .contains(&line.trim())
            })
        })
        .map(str::to_owned)
        .collect();
    assert_none(
        "published libraries whose lib.rs does not say #![warn(missing_docs)]",
        offenders,
    );
}

/// Targets built without a test harness (`test = false`, `doctest = false` in their
/// Cargo.toml, which saves a link per target in every test run) hold no test that would then
/// silently never run: no `#[test]` in a binary or library without unit tests, no code block
/// in the doc comments of a library without doc tests.
#[test]
fn targets_without_a_test_harness_hold_no_tests() {
    let output = std::process::Command::new(env!("CARGO"))
        .current_dir(workspace())
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "cargo metadata failed");
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut checked = 0;
    let mut offenders = Vec::new();
    for target in metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|package| package["targets"].as_array().unwrap())
    {
        let kind = target["kind"][0].as_str().unwrap_or_default();
        let path = PathBuf::from(target["src_path"].as_str().unwrap());
        // A binary is its file; a library, every file under its root's folder but src/bin.
        let files = || match kind {
            "lib" => rust_files(path.parent().unwrap())
                .into_iter()
                .filter(|file| !file.components().any(|c| c.as_os_str() == "bin"))
                .collect(),
            _ => vec![path.clone()],
        };
        if target["test"] == false && matches!(kind, "lib" | "bin") {
            checked += 1;
            for file in files() {
                let text = source(&file);
                if code_lines(&text)
                    .any(|line| line.contains("#[test]") || line.contains("#[tokio::test"))
                {
                    offenders.push(format!("{} (test = false)", file.display()));
                }
            }
        }
        if target["doctest"] == false && kind == "lib" {
            checked += 1;
            for file in files() {
                let text = source(&file);
                if text.lines().any(|line| {
                    let line = line.trim_start();
                    (line.starts_with("///") || line.starts_with("//!")) && line.contains("```")
                }) {
                    offenders.push(format!("{} (doctest = false)", file.display()));
                }
            }
        }
    }
    assert!(
        checked >= 10,
        "the harness-less targets are read ({checked})"
    );
    assert_none(
        "tests in targets built without a test harness (set test/doctest back to true)",
        offenders,
    );
}

/// Every test `SECURITY.md` names as showing a promise (`crate: module::function`) is a
/// function of that crate, so the table cannot point at a test that was renamed or removed.
#[test]
fn every_test_security_md_names_exists() {
    let text = std::fs::read_to_string(crate::workspace().join("SECURITY.md")).unwrap();
    let crates = crate::crates();
    let mut offenders = Vec::new();
    let mut named = 0;
    for quoted in text.split('`').skip(1).step_by(2) {
        let Some((krate, path)) = quoted.split_once(": ") else {
            continue;
        };
        if !crates.iter().any(|name| name == krate) || !path.contains("::") {
            continue;
        }
        named += 1;
        let function = path.rsplit("::").next().unwrap_or_default();
        let root = crate::workspace().join("crates").join(krate);
        let defined = ["src", "tests"]
            .iter()
            .filter(|dir| root.join(dir).is_dir())
            .flat_map(|dir| crate::rust_files(&root.join(dir)))
            .any(|file| crate::source(&file).contains(&format!("fn {function}(")));
        if !defined {
            offenders.push(format!("{krate}: {path}"));
        }
    }
    assert!(
        named > 20,
        "SECURITY.md names {named} tests: is its format still `crate: path`?"
    );
    crate::assert_none("tests SECURITY.md names that do not exist", offenders);
}

/// Where a lock that takes the data of a panicked holder may be written: `backchannel::lock`,
/// which the host, the gateway, the desk and the servers use, and sql-pool's, which sits
/// beneath `backchannel` and cannot use it.
const POISON_TOLERANT_LOCKS_IN: [&str; 2] = [
    "crates/backchannel/src/util.rs",
    "crates/sql-pool/src/lib.rs",
];

#[test]
fn the_poison_tolerant_lock_is_written_once() {
    let pattern =
        regex_lite::Regex::new(r"fn \w+<T>\(\w+: &(std::sync::)?(Mutex|RwLock)<T>\)").unwrap();
    // The sample is cut in two so that this file is not an offender itself.
    let sample = [
        "pub fn lock<T>(mutex: &",
        "Mutex<T>) -> MutexGuard<'_, T> {",
    ]
    .concat();
    assert!(pattern.is_match(&sample));
    let offenders = all_sources()
        .into_iter()
        .filter(|path| !POISON_TOLERANT_LOCKS_IN.contains(&path.to_str().unwrap()))
        .filter(|path| code_lines(&source(path)).any(|line| pattern.is_match(line)))
        .map(|path| path.display().to_string())
        .collect();
    assert_none(
        "a second poison-tolerant lock (use backchannel::lock)",
        offenders,
    );
}

/// Every file a crate's `Cargo.toml` names for itself (`readme`, a target's `path`) exists: a
/// published crate's page and its targets do not point at a file that moved.
#[test]
fn the_files_a_manifest_names_exist() {
    let named = regex_lite::Regex::new(r#"(?m)^(readme|path)\s*=\s*"([^"]+)""#).unwrap();
    let mut checked = 0;
    let mut offenders = Vec::new();
    for name in crate::crates() {
        let dir = workspace().join("crates").join(&name);
        let manifest = source(&dir.join("Cargo.toml"));
        for found in named.captures_iter(&manifest) {
            checked += 1;
            if !dir.join(&found[2]).exists() {
                offenders.push(format!(
                    "crates/{name}/Cargo.toml: {} = {:?}",
                    &found[1], &found[2]
                ));
            }
        }
    }
    assert!(
        checked >= 3,
        "the reader finds the manifests' files ({checked})"
    );
    assert_none("files a Cargo.toml names that do not exist", offenders);
}
