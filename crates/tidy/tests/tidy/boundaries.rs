//! Which code may know what: the domains no protocol, HTTP, SQL or schema crate, the order
//! domain no serde, the agent library not the order service, the host not the server's HTTP
//! edge, moviedb writing through its catalogue.

use std::path::Path;

use crate::{assert_none, code_lines, rust_files, source, workspace};

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

/// Issue 74: the host took `backchannel` with its default features, so every host built the
/// server's HTTP edge (axum and the 2025-11-25 sessions). It takes the vocabulary only.
#[test]
fn the_host_does_not_build_the_servers_http_edge() {
    let has_axum = |tree: &str| tree.lines().any(|l| l.starts_with("axum v"));
    for features in [&[][..], &["--features", "oauth"][..]] {
        let host = normal_dependencies("backchannel-host", features);
        assert!(!has_axum(&host), "backchannel-host {features:?}:\n{host}");
    }
    // The check sees axum where it is: the server's `http` feature, on by default.
    assert!(has_axum(&normal_dependencies("backchannel", &[])));
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
