//! Rooms one can hold in one's head: files and functions of bounded length, library roots
//! that are faces.

use std::path::{Path, PathBuf};

use crate::{all_sources, assert_none, code_lines, source};

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

/// A library root with a `# Layout` section (a face) names every module it declares there, so
/// the map a reader starts from does not drift from the code.
#[test]
fn a_faces_layout_names_every_module() {
    let declared = regex_lite::Regex::new(r"(?m)^\s*(?:pub(?:\([a-z]+\))? )?mod (\w+);").unwrap();
    let mut faces = 0;
    let mut offenders = Vec::new();
    for name in crate::crates() {
        let root = PathBuf::from(format!("crates/{name}/src/lib.rs"));
        let text = source(&root);
        let Some((_, layout)) = text.split_once("# Layout") else {
            continue;
        };
        faces += 1;
        let layout: String = layout
            .lines()
            .skip(1)
            .take_while(|line| line.starts_with("//!"))
            .collect::<Vec<_>>()
            .join(" ");
        for module in declared.captures_iter(&text) {
            let module = &module[1];
            let named = [format!("`{module}`"), format!("[`{module}`]")];
            if !named.iter().any(|name| layout.contains(name.as_str())) {
                offenders.push(format!("{}: `{module}`", root.display()));
            }
        }
    }
    assert!(faces >= 3, "the reader finds the faces ({faces})");
    assert_none("modules a face's layout does not name", offenders);
}
