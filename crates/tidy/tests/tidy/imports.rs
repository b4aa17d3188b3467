//! Imports run one way: no circle of modules inside a crate, crate roots included, and no
//! glob import of a parent outside test modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::{all_sources, assert_none, code_lines, crates, rust_files, source, workspace};

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
