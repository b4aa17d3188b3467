//! The desk's database (`agent::store`) on SQLite, and on PostgreSQL when
//! `$AGENT_TEST_POSTGRES` names a server: the same statements on both.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agent::store::{DeskStore, StoredSession, Wait};

/// A store on a database of its own: a new SQLite file, or, when `$AGENT_TEST_POSTGRES` names a
/// PostgreSQL server (`scripts/test-postgres` runs these tests a second time that way), a new
/// database created on it for this test alone.
async fn fresh() -> DeskStore {
    fresh_at().await.0
}

/// [`fresh`], with the database's URL.
async fn fresh_at() -> (DeskStore, String) {
    let url = match std::env::var("AGENT_TEST_POSTGRES") {
        Ok(server) if !server.is_empty() => sql_pool::create_database(&server, "desk")
            .await
            .expect("a database of its own on the test server"),
        _ => {
            static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("desk-store-{}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("a folder for the test databases");
            let file = dir.join(format!("{n}.sqlite"));
            let _ = std::fs::remove_file(&file);
            format!("sqlite://{}", file.display())
        }
    };
    let store = DeskStore::open(&url)
        .await
        .expect("the desk's database opens");
    assert_eq!(store.is_shared(), sql_pool::is_postgres(&url));
    (store, url)
}

#[tokio::test]
async fn an_ended_session_goes_with_its_conversations() {
    let store = fresh().await;
    let now = SystemTime::now();
    for (digest, until) in [
        ("old", now - Duration::from_secs(1)),
        ("live", now + Duration::from_secs(60)),
    ] {
        let session = StoredSession {
            digest: digest.into(),
            person: "ana".into(),
            until,
        };
        store.save_session(&session).await.unwrap();
        store
            .save_conversation(&format!("c-{digest}"), digest, 64)
            .await
            .unwrap();
    }
    let sessions = store.sessions(now).await.unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].digest, "live");
    assert_eq!(
        store.conversations().await.unwrap(),
        vec![("c-live".to_owned(), "live".to_owned())]
    );
    store.forget_session("live").await.unwrap();
    assert!(store.sessions(now).await.unwrap().is_empty());
    assert!(store.conversations().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_session_keeps_its_newest_conversations() {
    let store = fresh().await;
    for n in 0..5 {
        store
            .save_conversation(&format!("c{n}"), "s", 3)
            .await
            .unwrap();
    }
    store.save_conversation("other", "t", 3).await.unwrap();
    let kept: Vec<String> = store
        .conversations()
        .await
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(kept, ["c2", "c3", "c4", "other"]);
}

#[tokio::test]
async fn a_wait_is_kept_once_and_forgotten_when_its_task_ends() {
    let store = fresh().await;
    let asked = UNIX_EPOCH + Duration::from_secs(1_000);
    let wait = Wait {
        server: "orders".into(),
        task_id: "t1".into(),
        conversation: "c1".into(),
        owner: "ana".into(),
        asked,
        until: asked + Duration::from_secs(60),
        desk: None,
    };
    store.save_wait(&wait).await.unwrap();
    let later = Wait {
        until: asked + Duration::from_secs(600),
        ..wait.clone()
    };
    store.save_wait(&later).await.unwrap();
    assert_eq!(store.waits().await.unwrap(), vec![wait]);
    store.forget_wait("orders", "t1").await.unwrap();
    assert!(store.waits().await.unwrap().is_empty());
}

/// A task whose desk's lease ran out is an orphan, and of two desks claiming it one wins; a
/// task of a live desk is not.
#[tokio::test]
async fn a_task_whose_desk_stopped_is_taken_over_once() {
    let store = fresh().await;
    let now = SystemTime::now();
    store
        .desk_alive("dead", now - Duration::from_secs(1))
        .await
        .unwrap();
    store
        .desk_alive("live", now + Duration::from_secs(6))
        .await
        .unwrap();
    for (task, desk) in [("t-dead", "dead"), ("t-live", "live")] {
        let wait = Wait {
            server: "orders".into(),
            task_id: task.into(),
            conversation: "c1".into(),
            owner: "ana".into(),
            asked: now,
            until: now + Duration::from_secs(60),
            desk: Some(desk.into()),
        };
        store.save_wait(&wait).await.unwrap();
    }
    assert_eq!(store.live_desks(now).await.unwrap(), ["live"]);
    let orphans = store.orphan_waits(now).await.unwrap();
    assert_eq!(orphans.len(), 1, "{orphans:?}");
    assert_eq!(orphans[0].task_id, "t-dead");
    assert!(store.claim_wait(&orphans[0], "live").await.unwrap());
    assert!(!store.claim_wait(&orphans[0], "other").await.unwrap());
    assert!(store.orphan_waits(now).await.unwrap().is_empty());
    let desks: Vec<Option<String>> = store
        .waits()
        .await
        .unwrap()
        .into_iter()
        .map(|w| w.desk)
        .collect();
    assert_eq!(desks, [Some("live".to_owned()), Some("live".to_owned())]);
}

/// A conversation's turns are kept for whichever desk takes its next message (the newest
/// `keep`), and go with its session.
#[tokio::test]
async fn a_conversation_s_turns_are_kept_and_go_with_its_session() {
    let store = fresh().await;
    let now = SystemTime::now();
    let session = StoredSession {
        digest: "s".into(),
        person: "ana".into(),
        until: now + Duration::from_secs(60),
    };
    store.save_session(&session).await.unwrap();
    store.save_conversation("c1", "s", 64).await.unwrap();
    for n in 0..4 {
        let (asked, answered) = (format!("q{n}"), format!("a{n}"));
        store.save_turn("c1", (&asked, &answered), 3).await.unwrap();
    }
    let turns = store.turns("c1").await.unwrap();
    let asked: Vec<&str> = turns.iter().map(|(q, _)| q.as_str()).collect();
    assert_eq!(asked, ["q1", "q2", "q3"]);
    let of = store
        .session_of_conversation("c1", now)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(of.person, "ana");
    assert!(
        store
            .session_of_conversation("other", now)
            .await
            .unwrap()
            .is_none()
    );
    let (kept, conversations) = store.session("s", now).await.unwrap().unwrap();
    assert_eq!(
        (kept.digest, kept.person),
        ("s".to_owned(), "ana".to_owned())
    );
    assert_eq!(conversations, ["c1"]);
    store.forget_session("s").await.unwrap();
    assert!(store.turns("c1").await.unwrap().is_empty());
    assert!(store.session("s", now).await.unwrap().is_none());
}

/// `support-agent people add --database URL`: the person is kept by name and Argon2id hash (the
/// password never), a second add sets the password, and on PostgreSQL the desks of that
/// database let them sign in (a SQLite desk's people are its people file).
#[tokio::test]
async fn people_kept_in_the_database_sign_in_with_their_password() {
    let (store, url) = fresh_at().await;
    agent::app::add_person_to_database(&url, "ana", "first-password")
        .await
        .unwrap();
    agent::app::add_person_to_database(&url, "ana", "ana-password")
        .await
        .unwrap();
    let refused = agent::app::add_person_to_database(&url, "not a name", "ana-password").await;
    assert!(refused.is_err());
    let kept = store.people().await.unwrap();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0].0, "ana");
    assert!(kept[0].1.starts_with("$argon2id$") && !kept[0].1.contains("ana-password"));
    let people = agent::people::People::from_database(kept).unwrap().unwrap();
    let here = std::net::IpAddr::from([127, 0, 0, 1]);
    assert_eq!(
        people.sign_in("ana", "ana-password", here).await.unwrap(),
        "ana"
    );
    assert!(people.sign_in("ana", "first-password", here).await.is_err());
    let read = agent::app::people_in_database(&url).await.unwrap();
    assert_eq!(
        read.map(|people| people.len()),
        sql_pool::is_postgres(&url).then_some(1)
    );
}

/// A row that is not a person (a hand-written one) is refused with what is wrong, not served.
#[tokio::test]
async fn a_kept_row_that_is_not_a_person_is_refused() {
    let store = fresh().await;
    store.save_person("ana", "plain text").await.unwrap();
    let error = agent::people::People::from_database(store.people().await.unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("\"ana\"") && error.contains("not a PHC hash"),
        "{error}"
    );
}
