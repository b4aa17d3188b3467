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

/// The order service's domain has no wire shape: the tools and REST show `wire::OrderView`,
/// so a change of the domain types cannot change what clients read by accident.
#[test]
fn the_order_domain_has_no_serde() {
    let text = source(Path::new("crates/orders/src/domain.rs"));
    let offenders = code_lines(&text)
        .enumerate()
        .filter(|(_, line)| line.contains("serde") || line.contains("Serialize"))
        .map(|(number, line)| {
            format!(
                "crates/orders/src/domain.rs:{}: {}",
                number + 1,
                line.trim()
            )
        })
        .collect();
    assert_none(
        "serde in the order domain (the wire module owns the JSON)",
        offenders,
    );
}

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
fn scripts_start_servers_on_port_0_or_let_them_bind_their_own() {
    let picker =
        regex_lite::Regex::new(r"free_port|bind\(\(\s*.127\.0\.0\.1.,\s*0\s*\)\)").unwrap();
    let mut scripts: Vec<PathBuf> = std::fs::read_dir(workspace().join("scripts"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .collect();
    scripts.sort();
    assert!(
        scripts.len() > 10,
        "the scripts are read ({})",
        scripts.len()
    );
    let offenders = scripts
        .into_iter()
        .map(|path| format!("scripts/{}", path.file_name().unwrap().to_string_lossy()))
        .filter(|name| picker.is_match(&std::fs::read_to_string(workspace().join(name)).unwrap()))
        .collect();
    assert_none(
        "scripts that pick a free port and release it (use scripts/lib.sh or scripts/kit.py: start_server, on_a_port)",
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

/// The module a source file of a crate's `src/` is (`serve/mcp_route.rs` → `serve::mcp_route`,
/// `serve/mod.rs` → `serve`, `lib.rs` → the root, ``).
fn module_path(relative: &Path) -> String {
    let text = relative
        .with_extension("")
        .to_string_lossy()
        .replace('/', "::");
    let text = text.strip_suffix("::mod").unwrap_or(&text);
    if text == "lib" {
        String::new()
    } else {
        text.to_owned()
    }
}

/// The code of a file before its test module (`#[cfg(test)]` and what follows), comments
/// dropped, on one line.
fn code_before_tests(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    code_lines(text).collect::<Vec<_>>().join(" ")
}

/// `a::b` joined under `base` (`base::a::b`), without a leading `::` for the root.
fn join(base: &str, rest: &str) -> String {
    match (base.is_empty(), rest.is_empty()) {
        (true, _) => rest.to_owned(),
        (_, true) => base.to_owned(),
        _ => format!("{base}::{rest}"),
    }
}

/// The modules of one crate (every file of its `src/` but `src/bin/`) and, for each, the other
/// modules its code names: through `crate::`, `super::` and `self::` paths and `use` of its own
/// child modules (`pub use` lines are not edges). A name a module re-exports (`pub use x::Name`) counts as the module it comes
/// from, so `crate::Ctx` is an edge to `ctx`, not to the root.
fn crate_imports(name: &str) -> BTreeMap<String, BTreeSet<String>> {
    let src = workspace().join("crates").join(name).join("src");
    let files: Vec<(String, String)> = rust_files(&src)
        .into_iter()
        .filter(|file| !file.components().any(|c| c.as_os_str() == "bin"))
        .map(|file| {
            let relative = file
                .strip_prefix(format!("crates/{name}/src"))
                .unwrap()
                .to_owned();
            (module_path(&relative), code_before_tests(&source(&file)))
        })
        .collect();
    let modules: BTreeSet<String> = files.iter().map(|(m, _)| m.clone()).collect();
    // The longest module that `path` (absolute, without `crate::`) starts with, and what follows.
    let split = |path: &str| -> (String, String) {
        let parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
        for cut in (0..=parts.len()).rev() {
            let head = parts[..cut].join("::");
            if modules.contains(&head) {
                return (head, parts[cut..].join("::"));
            }
        }
        (String::new(), parts.join("::"))
    };
    // `pub use` re-exports: (module, name) → the path the name comes from.
    let reexport =
        regex_lite::Regex::new(r"pub(?:\([a-z]+\))? use ([\w:]+?)::(\{[^}]*\}|\w+)(?: as \w+)?;")
            .unwrap();
    let mut reexported: BTreeMap<(String, String), String> = BTreeMap::new();
    let absolute = |from: &str, path: &str| -> Option<String> {
        let mut base: Vec<&str> = from.split("::").filter(|p| !p.is_empty()).collect();
        let mut parts = path.split("::").peekable();
        match *parts.peek()? {
            "crate" => {
                parts.next();
                base.clear();
            }
            "self" => {
                parts.next();
            }
            "super" => {
                while parts.peek() == Some(&"super") {
                    parts.next();
                    base.pop();
                }
            }
            first if modules.contains(&join(from, first)) => {}
            _ => return None,
        }
        Some(join(
            &base.join("::"),
            &parts.collect::<Vec<_>>().join("::"),
        ))
    };
    for (module, code) in &files {
        for found in reexport.captures_iter(code) {
            let Some(path) = absolute(module, &found[1]) else {
                continue;
            };
            for item in found[2].trim_matches(|c| c == '{' || c == '}').split(',') {
                let item = item.trim().split(" as ").next().unwrap_or_default().trim();
                if !item.is_empty() && item != "self" && !item.contains('*') {
                    reexported.insert((module.clone(), item.to_owned()), join(&path, item));
                }
            }
        }
    }
    // Where `path` (absolute) leads: its module, following re-exports.
    let target = |path: &str| -> String {
        let mut path = path.to_owned();
        for _ in 0..8 {
            let (module, rest) = split(&path);
            let first = rest.split("::").next().unwrap_or_default().to_owned();
            match reexported.get(&(module.clone(), first.clone())) {
                Some(next) if next != &path => {
                    path = join(
                        next,
                        rest.strip_prefix(first.as_str())
                            .unwrap_or_default()
                            .trim_start_matches("::"),
                    );
                }
                _ => return module,
            }
        }
        split(&path).0
    };
    let named = regex_lite::Regex::new(
        r"\b((?:crate|super|self)(?:::\w+)+|(?:crate|super|self)::\{[^}]*\})",
    )
    .unwrap();
    let used =
        regex_lite::Regex::new(r"\buse ((?:\w+::)+)\{([^;]*)\};|\buse ((?:\w+::)+\w+)").unwrap();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, code) in &files {
        // A `pub use` is the module's face, not its code's need: names reached through it
        // resolve to their source above.
        let code = &reexport.replace_all(code, " ");
        let mut paths: Vec<String> = Vec::new();
        for found in used.captures_iter(code) {
            if let (Some(head), Some(items)) = (found.get(1), found.get(2)) {
                for item in items.as_str().split(',') {
                    let item = item.trim().split(" as ").next().unwrap_or_default();
                    paths.push(format!("{}{}", head.as_str(), item.trim_start_matches('{')));
                }
            } else if let Some(path) = found.get(3) {
                paths.push(path.as_str().to_owned());
            }
        }
        for found in named.captures_iter(code) {
            paths.push(found[1].to_owned());
        }
        // A crate root's child module named bare in its code (`forward::forward(…)`), not only
        // through `use`: a root with code is a module like any other, so its circles count.
        let roots_children = modules.iter().filter(|_| module.is_empty());
        for child in roots_children.filter(|m| !m.is_empty() && !m.contains("::")) {
            let bare = regex_lite::Regex::new(&format!(r"(?:^|[^:\w]){child}::\w")).unwrap();
            if bare.is_match(code) {
                paths.push(format!("self::{child}"));
            }
        }
        for path in paths {
            let path = path.trim_end_matches("::").replace(['{', '}', ' '], "");
            let Some(absolute) = absolute(module, &path) else {
                continue;
            };
            let to = target(&absolute);
            if &to != module {
                graph.entry(module.clone()).or_default().insert(to);
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
fn no_crate_has_modules_that_import_each_other_in_a_circle() {
    let mut circles = Vec::new();
    for name in crates() {
        let graph = crate_imports(&name);
        if let Some(cycle) = find_cycle(&graph) {
            let shown: Vec<&str> = cycle
                .iter()
                .map(|m| if m.is_empty() { "(root)" } else { m })
                .collect();
            circles.push(format!("{name}: {}", shown.join(" → ")));
        }
    }
    // The reader sees the imports that matter (so this test cannot pass by reading nothing):
    // a re-exported name counts as its own module, a nested module as itself.
    let backchannel = crate_imports("backchannel");
    assert!(backchannel["layer"].contains("ctx"), "{backchannel:?}");
    assert!(backchannel["ctx"].contains("call"), "{backchannel:?}");
    let moviedb = crate_imports("moviedb");
    assert!(
        moviedb["graphql::query"].contains("graphql::objects"),
        "{moviedb:?}"
    );
    assert!(moviedb["app"].contains("http"), "{moviedb:?}");
    assert_none(
        "modules that import each other in a circle (move what both need into a module of its own)",
        circles,
    );
}

#[test]
fn no_glob_imports_the_parent_outside_test_modules() {
    let offenders = all_sources()
        .into_iter()
        .filter(|path| !path.components().any(|c| c.as_os_str() == "tests"))
        // A module's tests in a file of their own (`foo/tests.rs`, declared `#[cfg(test)] mod
        // tests;`) are a test module.
        .filter(|path| path.file_name().is_none_or(|name| name != "tests.rs"))
        .filter(|path| {
            let text = source(path);
            let before_tests = text.split("#[cfg(test)]").next().unwrap_or_default();
            code_lines(before_tests).any(|line| line.trim() == "use super::*;")
        })
        .map(|path| path.display().to_string())
        .collect();
    assert_none(
        "`use super::*` outside a test module (name what the file uses)",
        offenders,
    );
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

/// Where a file is data, not code to read: the Movie Database's seed and the conformance
/// suite's fixtures.
const LONG_BY_NATURE: [&str; 2] = [
    "crates/moviedb/src/seed.rs",
    "crates/conformance/src/fixtures.rs",
];

/// The most lines a source file holds (ARCHITECTURE.md: a room one can hold in one's head).
const MAX_FILE_LINES: usize = 900;

/// The most lines one function takes.
const MAX_FUNCTION_LINES: usize = 100;

/// Every `src/` file of every crate.
fn library_and_binary_sources() -> Vec<PathBuf> {
    all_sources()
        .into_iter()
        .filter(|path| path.components().any(|c| c.as_os_str() == "src"))
        .collect()
}

#[test]
fn no_source_file_is_longer_than_a_room() {
    let sources = library_and_binary_sources();
    assert!(sources.len() > 100, "the reader finds the sources");
    let offenders = sources
        .into_iter()
        .filter(|path| !LONG_BY_NATURE.iter().any(|data| path.ends_with(data)))
        .filter_map(|path| {
            let lines = source(&path).lines().count();
            (lines > MAX_FILE_LINES).then(|| format!("{} ({lines} lines)", path.display()))
        })
        .collect();
    assert_none(
        &format!("source files over {MAX_FILE_LINES} lines (cut them into rooms)"),
        offenders,
    );
}

/// The functions of `text` (before its tests) and how many lines each takes, from its `fn`
/// line to the closing brace at its indentation.
fn function_lengths(text: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = text
        .lines()
        .take_while(|line| line.trim() != "#[cfg(test)]")
        .collect();
    let start = regex_lite::Regex::new(
        r"^(\s*)(?:pub(?:\([a-z]+\))? )?(?:const )?(?:async )?(?:unsafe )?fn (\w+)",
    )
    .unwrap();
    let mut found = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        let Some(head) = start.captures(lines[at]) else {
            at += 1;
            continue;
        };
        let indent = head[1].to_owned();
        let mut open = at;
        while open < lines.len() && !lines[open].trim_end().ends_with('{') {
            if lines[open].trim_end().ends_with(';') {
                break;
            }
            open += 1;
        }
        if open == lines.len() || !lines[open].trim_end().ends_with('{') {
            at = open + 1;
            continue;
        }
        let close = format!("{indent}}}");
        let end = (open + 1..lines.len())
            .find(|&line| lines[line].trim_end() == close)
            .unwrap_or(lines.len() - 1);
        found.push((head[2].to_owned(), end - at + 1));
        at = end + 1;
    }
    found
}

#[test]
fn the_function_reader_measures_functions() {
    let text = "fn a() {\n    x();\n}\n\n    pub async fn b(\n        y: u8,\n    ) -> u8 {\n        y\n    }\nfn c();\n";
    assert_eq!(
        function_lengths(text),
        [("a".to_owned(), 3), ("b".to_owned(), 5)]
    );
}

#[test]
fn no_function_is_longer_than_a_screenful_and_a_half() {
    let mut measured = 0;
    let offenders = library_and_binary_sources()
        .into_iter()
        .filter(|path| !LONG_BY_NATURE.iter().any(|data| path.ends_with(data)))
        .flat_map(|path| {
            let lengths = function_lengths(&source(&path));
            measured += lengths.len();
            lengths
                .into_iter()
                .filter(|(_, lines)| *lines > MAX_FUNCTION_LINES)
                .map(move |(name, lines)| format!("{}: {name} ({lines} lines)", path.display()))
        })
        .collect::<Vec<_>>();
    assert!(
        measured > 500,
        "the reader finds the functions ({measured})"
    );
    assert_none(
        &format!("functions over {MAX_FUNCTION_LINES} lines (give their parts names)"),
        offenders,
    );
}

#[test]
fn the_library_crate_roots_are_faces() {
    // A face: its docs, its modules, what it re-exports; no item of its own.
    let item = regex_lite::Regex::new(
        r"^(?:pub(?:\([a-z]+\))? )?(?:async )?(?:fn|struct|enum|impl|const|static|type|trait|union)\b|^macro_rules!",
    )
    .unwrap();
    for root in [
        "crates/backchannel/src/lib.rs",
        "crates/backchannel-host/src/lib.rs",
        "crates/mcp-gateway/src/lib.rs",
    ] {
        let text = source(Path::new(root));
        let items: Vec<&str> = code_lines(&text)
            .filter(|line| item.is_match(line))
            // The README's example, compiled with the doc tests, is the one exception.
            .filter(|line| line.trim() != "struct ReadmeExample;")
            .collect();
        assert!(
            text.contains("# Layout"),
            "{root} says what each module holds"
        );
        assert!(items.is_empty(), "{root} holds items of its own: {items:?}");
    }
}

#[test]
fn the_architecture_document_stays_short() {
    let architecture = std::fs::read_to_string(workspace().join("ARCHITECTURE.md")).unwrap();
    let lines = architecture.lines().count();
    assert!(
        lines < 350,
        "ARCHITECTURE.md has {lines} lines: keep it a map (numbers live in the code)"
    );
}
