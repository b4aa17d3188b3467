//! The `order-service` command line as a person meets it: each command offers its own flags,
//! and an error names what to change (the path, the flag) once.
#![allow(clippy::unwrap_used)]

use std::process::Command;

fn order_service(args: &[&str]) -> (bool, String, String) {
    backchannel::testing::output(
        Command::new(env!("CARGO_BIN_EXE_order-service"))
            .args(args)
            .env_remove("RUST_BACKTRACE")
            .env_remove("ORDER_SERVICE_STATE_KEYS"),
    )
}

#[test]
fn reset_offers_only_the_database() {
    let (ok, help, _) = order_service(&["reset", "--help"]);
    assert!(ok);
    assert!(help.contains("--database"), "{help}");
    for serve_only in [
        "--carrier-latency-ms",
        "--no-order-cache",
        "--state-keys",
        "--task-lease-ms",
    ] {
        assert!(
            !help.contains(serve_only),
            "reset offers {serve_only}: {help}"
        );
    }
    let (ok, _, stderr) = order_service(&["reset", "--carrier-latency-ms", "5"]);
    assert!(!ok);
    assert!(stderr.contains("unexpected argument"), "{stderr}");
}

#[test]
fn a_database_that_cannot_be_opened_is_named_with_its_reason_once() {
    let dir = std::env::temp_dir().join(format!("orders-missing-{}", std::process::id()));
    let url = format!("sqlite://{}/orders.sqlite", dir.display());
    for command in ["reset", "stdio"] {
        let (ok, _, stderr) = order_service(&[command, "--database", &url]);
        assert!(!ok, "{command}");
        let expected = format!(
            "Error: cannot open the order database {}/orders.sqlite: its folder {} does not exist",
            dir.display(),
            dir.display()
        );
        assert!(stderr.contains(&expected), "{command}: {stderr}");
        assert_eq!(stderr.matches("does not exist").count(), 1, "{stderr}");
        assert!(!dir.exists(), "nothing was created");
    }
}

#[test]
fn a_taken_port_names_the_flag_that_sets_it() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (ok, _, stderr) =
        order_service(&["serve", "--listen", &addr, "--database", "sqlite::memory:"]);
    assert!(!ok);
    assert!(
        stderr.contains(&format!(
            "cannot listen on {addr}; choose another address with --listen"
        )),
        "{stderr}"
    );
}

/// Issue 71 (information): `--resource` was silently ignored without sign-in, so an operator
/// could believe tokens were checked for it.
#[test]
fn a_resource_without_a_sign_in_is_refused_rather_than_ignored() {
    let (ok, _, stderr) = order_service(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--database",
        "sqlite::memory:",
        "--resource",
        "https://orders.example/mcp",
    ]);
    assert!(!ok);
    assert!(
        stderr.contains("without --token-file or --oauth-issuer no token is asked for"),
        "{stderr}"
    );
}

/// Every command the documents show for order-service (README.md, SECURITY.md, docs/; in a shell
/// block or inline) names a subcommand and flags the binary has.
#[test]
fn every_command_the_docs_show_for_order_service_names_its_real_flags() {
    let (dir, exe) = (
        env!("CARGO_MANIFEST_DIR"),
        env!("CARGO_BIN_EXE_order-service"),
    );
    backchannel::testing::docs::assert_commands_hold(dir, "order-service", exe, 12);
}
