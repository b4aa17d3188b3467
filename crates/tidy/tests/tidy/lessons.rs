//! The lessons' page (`docs/lessons.md`) and the tests it names: every test the page names
//! exists (a Rust test function, or a browser scenario under `crates/agent/tests/browser/`), and
//! every step test (`classNN_…`, or a scenario named "class NN …") is on the page.

use std::collections::BTreeSet;

use crate::{all_sources, assert_none, source, workspace};

fn page() -> String {
    std::fs::read_to_string(workspace().join("docs/lessons.md")).unwrap()
}

/// The Rust test functions of the workspace, by name.
pub(crate) fn test_functions() -> BTreeSet<String> {
    let pattern =
        regex_lite::Regex::new(r"(?m)^\s*(?:pub\s+)?(?:async\s+)?fn\s+([a-z0-9_]+)\s*\(").unwrap();
    all_sources()
        .iter()
        .flat_map(|path| {
            let text = source(path);
            pattern
                .captures_iter(&text)
                .map(|c| c[1].to_owned())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The browser scenarios' names.
pub(crate) fn scenarios() -> BTreeSet<String> {
    let pattern = regex_lite::Regex::new(r#"scenario\(\s*"([^"]+)""#).unwrap();
    let dir = workspace().join("crates/agent/tests/browser");
    let mut names = BTreeSet::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "mjs") {
            let text = std::fs::read_to_string(path).unwrap();
            names.extend(pattern.captures_iter(&text).map(|c| c[1].to_owned()));
        }
    }
    assert!(!names.is_empty(), "the browser scenarios are read");
    names
}

#[test]
fn every_test_the_lessons_page_names_exists() {
    let page = page();
    let functions = test_functions();
    let scenarios = scenarios();
    let rust =
        regex_lite::Regex::new(r"`(?:[a-z_-]+::)*([a-z][a-z0-9]*(?:_[a-z0-9]+){3,})`").unwrap();
    let browser = regex_lite::Regex::new(r#""(class 1\d [^"]+)""#).unwrap();
    let mut missing: Vec<String> = rust
        .captures_iter(&page)
        .map(|c| c[1].to_owned())
        .filter(|name| !functions.contains(name))
        .collect();
    missing.extend(
        browser
            .captures_iter(&page)
            .map(|c| c[1].to_owned())
            .filter(|name| !scenarios.contains(name)),
    );
    assert!(
        rust.captures_iter(&page).count() > 20,
        "the page's tests are read"
    );
    assert_none("tests docs/lessons.md names that do not exist", missing);
}

#[test]
fn every_step_test_is_on_the_lessons_page() {
    let page = page();
    let step = regex_lite::Regex::new(r"^class1\d_(verifying|try_it|check_it)_").unwrap();
    let mut missing: Vec<String> = test_functions()
        .into_iter()
        .filter(|name| name.starts_with("class1"))
        .filter(|name| !step.is_match(name) || !page.contains(&format!("{name}`")))
        .collect();
    missing.extend(
        scenarios()
            .into_iter()
            .filter(|name| name.starts_with("class 1"))
            .filter(|name| !page.contains(&format!("\"{name}\""))),
    );
    assert_none(
        "step tests (classNN_verifying_/try_it_/check_it_…) missing from docs/lessons.md, or misnamed",
        missing,
    );
}
