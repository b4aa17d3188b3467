//! The scripts' kit: servers on port 0, one installer, one Python JSON-RPC client.

use crate::{assert_none, workspace};

/// The scripts (`scripts/NAME`), sorted; checked to be found.
fn scripts() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(workspace().join("scripts"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .map(|path| format!("scripts/{}", path.file_name().unwrap().to_string_lossy()))
        .collect();
    names.sort();
    assert!(names.len() > 10, "the scripts are read ({})", names.len());
    names
}

/// The scripts other than `except` whose text matches `pattern`.
fn scripts_matching(pattern: &str, except: &str) -> Vec<String> {
    let pattern = regex_lite::Regex::new(pattern).unwrap();
    scripts()
        .into_iter()
        .filter(|name| name != except)
        .filter(|name| pattern.is_match(&std::fs::read_to_string(workspace().join(name)).unwrap()))
        .collect()
}

#[test]
fn scripts_start_servers_on_port_0_or_let_them_bind_their_own() {
    assert_none(
        "scripts that pick a free port and release it (use scripts/lib.sh or scripts/kit.py: start_server, on_a_port)",
        scripts_matching(r"free_port|bind\(\(\s*.127\.0\.0\.1.,\s*0\s*\)\)", ""),
    );
}

#[test]
fn scripts_install_packages_only_through_the_kit() {
    assert_none(
        "scripts that run apt-get themselves (use scripts/lib.sh: need, install_package)",
        scripts_matching(r"\bapt-get\s+(update|install)", "scripts/lib.sh"),
    );
}

#[test]
fn python_scripts_speak_mcp_over_http_only_through_the_kit() {
    assert_none(
        "Python scripts with a keep-alive MCP client of their own (use scripts/kit.py: Connection)",
        scripts_matching(r"asyncio\.open_connection|readuntil\(", "scripts/kit.py"),
    );
}
