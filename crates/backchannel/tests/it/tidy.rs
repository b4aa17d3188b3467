//! Tidy: the workspace's boundaries, checked by reading its files (the rust-analyzer pattern).
//! Each rule names the files that break it, so a failure says what to fix.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
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
const DEPRECATED_ALLOWED_IN: [&str; 7] = [
    "crates/backchannel/src/lib.rs",
    "crates/backchannel-host/src/lib.rs",
    "crates/conformance/src/lib.rs",
    "crates/backchannel/tests/it/main.rs",
    "crates/conformance/tests/it/main.rs",
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

/// The modules that hold rules and data, free of protocol, HTTP, SQL and schema crates.
const DOMAIN_MODULES: [&str; 13] = [
    "crates/orders/src/domain.rs",
    "crates/orders/src/messages.rs",
    "crates/orders/src/seed.rs",
    "crates/orders/src/service.rs",
    "crates/moviedb/src/domain.rs",
    "crates/moviedb/src/limits.rs",
    "crates/moviedb/src/seed.rs",
    "crates/moviedb/src/service.rs",
    "crates/moviedb/src/summary.rs",
    "crates/agent/src/messages.rs",
    "crates/agent/src/notes.rs",
    "crates/agent/src/render.rs",
    "crates/agent/src/rules.rs",
];

#[test]
fn domain_modules_know_no_protocol_http_sql_or_schema_crate() {
    let pattern =
        regex_lite::Regex::new(r"\b(rmcp|axum|sqlx|async_graphql|schemars|hyper)\b").unwrap();
    let mut offenders = Vec::new();
    for module in DOMAIN_MODULES {
        let text = source(Path::new(module));
        for (number, line) in code_lines(&text).enumerate() {
            if let Some(found) = pattern.find(line) {
                offenders.push(format!("{module}:{}: {}", number + 1, found.as_str()));
            }
        }
    }
    assert_none("domain modules naming an outer crate", offenders);
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

fn normal_dependencies(package: &str, features: &[&str]) -> String {
    let output = std::process::Command::new(env!("CARGO"))
        .current_dir(workspace())
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
            "-p",
        ])
        .arg(package)
        .args(features)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn the_agent_library_does_not_depend_on_the_order_service() {
    let is_orders = |tree: &str| tree.lines().any(|l| l.starts_with("orders v"));
    let library = normal_dependencies("agent", &["--no-default-features"]);
    assert!(!is_orders(&library), "agent without features:\n{library}");
    // The check sees `orders` where it is: the demo feature brings it, for the binary.
    let with_demo = normal_dependencies("agent", &[]);
    assert!(is_orders(&with_demo), "agent with the demo:\n{with_demo}");
}

/// Which top-level module of `backchannel` each file belongs to (`serve/gate.rs` → `serve`).
fn module_of(relative: &Path) -> String {
    let mut parts = relative.components();
    let first = parts.next().unwrap().as_os_str().to_string_lossy();
    first.trim_end_matches(".rs").to_owned()
}

/// The top-level modules each module of `backchannel` names through `crate::`, with the names
/// `lib.rs` re-exports resolved to the module they come from.
fn backchannel_imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = workspace().join("crates/backchannel/src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let mut modules = BTreeSet::new();
    let declared = regex_lite::Regex::new(r"(?m)^\s*(?:pub )?mod (\w+);").unwrap();
    for found in declared.captures_iter(&lib) {
        modules.insert(found[1].to_owned());
    }
    // `pub use module::{A, B};` at the root: `crate::A` means `module`.
    let mut reexported: BTreeMap<String, String> = BTreeMap::new();
    let reexport = regex_lite::Regex::new(r"pub use (\w+)::\{?([^;]*?)\}?;").unwrap();
    for found in reexport.captures_iter(&lib.replace('\n', " ")) {
        if modules.contains(&found[1]) {
            for name in found[2].split(',') {
                let name = name.trim().rsplit(' ').next().unwrap_or_default();
                reexported.insert(name.to_owned(), found[1].to_owned());
            }
        }
    }
    let path = regex_lite::Regex::new(r"crate::(\{[^}]*\}|\w+)").unwrap();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(&src) {
        let relative = file.strip_prefix("crates/backchannel/src").unwrap();
        if relative == Path::new("lib.rs") {
            continue;
        }
        let from = module_of(relative);
        let text = source(&file);
        let code: String = code_lines(&text).collect::<Vec<_>>().join(" ");
        for found in path.captures_iter(&code) {
            let named = found[1].trim_start_matches('{').trim_end_matches('}');
            for item in named.split(',') {
                let head = item.trim().split("::").next().unwrap_or_default().trim();
                let target = if modules.contains(head) {
                    head.to_owned()
                } else if let Some(module) = reexported.get(head) {
                    module.clone()
                } else {
                    continue;
                };
                if target != from {
                    graph.entry(from.clone()).or_default().insert(target);
                }
            }
        }
    }
    graph
}

/// A cycle in `graph`, if there is one, as the path that closes it.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, to) in [
        ("ctx", "layer"),
        ("layer", "sessions"),
        ("sessions", "util"),
    ] {
        graph.entry(from.into()).or_default().insert(to.into());
    }
    assert_eq!(find_cycle(&graph), None);
    graph
        .entry("sessions".into())
        .or_default()
        .insert("ctx".into());
    assert_eq!(
        find_cycle(&graph).unwrap(),
        ["ctx", "layer", "sessions", "ctx"]
    );
}

#[test]
fn backchannel_modules_import_each_other_without_a_cycle() {
    let graph = backchannel_imports();
    // The reader sees the imports that matter (so this test cannot pass by reading nothing).
    assert!(graph["layer"].contains("ctx"), "{graph:?}");
    assert!(graph["ctx"].contains("call"), "{graph:?}");
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "backchannel's modules import each other in a circle: {}\n(move what both need into a module of its own)",
            cycle.join(" → ")
        );
    }
}

#[test]
fn moviedb_writes_only_through_the_catalogue() {
    // `Store` has no write methods; `Writes` is built in one place, the catalogue, which
    // forgets cached movie lists on every movie write.
    let offenders = rust_files(&workspace().join("crates/moviedb"))
        .into_iter()
        .filter(|path| {
            !path.ends_with("src/service.rs") && !path.starts_with("crates/moviedb/src/store")
        })
        .filter(|path| code_lines(&source(path)).any(|line| line.contains("Writes::new")))
        .map(|path| path.display().to_string())
        .collect();
    assert_none(
        "moviedb store writes built outside the catalogue",
        offenders,
    );
}
