//! Opening the service: a database file is seeded once and kept; a bad JWT secret is refused
//! with a message that does not repeat it.
#![allow(clippy::unwrap_used)]

use moviedb::app::{self, Config};

#[tokio::test]
async fn a_database_file_is_seeded_once_and_kept() {
    let dir = std::env::temp_dir().join(format!("moviedb-app-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = Config {
        database: Some(format!("sqlite://{}", dir.join("m.sqlite").display())),
        ..Config::default()
    };
    let first = app::open_catalog(&config).await.unwrap();
    let mara = moviedb::service::Viewer {
        username: "mara".into(),
        role: moviedb::domain::Role::User,
    };
    first
        .add_to_watchlist(Some(&mara), moviedb::domain::Subject::Movie(52), None)
        .await
        .unwrap();
    drop(first);
    let second = app::open_catalog(&config).await.unwrap();
    assert_eq!(second.store().all_movies().await.unwrap().len(), 67);
    assert_eq!(second.watchlist(Some(&mara)).await.unwrap().len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_bad_jwt_secret_is_refused_without_being_echoed() {
    let config = Config {
        database: Some("sqlite::memory:".into()),
        jwt_secret: Some("not-hex-and-secret".into()),
        ..Config::default()
    };
    assert!(!format!("{config:?}").contains("not-hex-and-secret"));
    let error = app::open_catalog(&config).await.unwrap_err().to_string();
    assert_eq!(
        error,
        "the JWT secret must be 64 hexadecimal characters (256 bits); the configured one is not"
    );
    let good = Config {
        jwt_secret: Some("0f".repeat(32)),
        ..config
    };
    let catalog = app::open_catalog(&good).await.unwrap();
    let token = catalog.login("user", "user123", None).await.unwrap().token;
    let same_key = moviedb::auth::TokenKeys::from_hex(&"0f".repeat(32)).unwrap();
    assert_eq!(
        same_key.verify(&token, chrono::Utc::now()).unwrap().sub,
        "user"
    );
}

/// Every command the documents show for moviedb (README.md, SECURITY.md, docs/; in a shell
/// block or inline) names a subcommand and flags the binary has.
#[test]
fn every_command_the_docs_show_for_moviedb_names_its_real_flags() {
    let (dir, exe) = (env!("CARGO_MANIFEST_DIR"), env!("CARGO_BIN_EXE_moviedb"));
    backchannel::testing::docs::assert_commands_hold(dir, "moviedb", exe, 6);
}
