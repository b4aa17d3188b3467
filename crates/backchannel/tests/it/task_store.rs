//! The task store contract, run against every backend: memory, SQLite (a file), and PostgreSQL
//! when `$BACKCHANNEL_TEST_POSTGRES` names a server (`scripts/test-postgres` sets it; each run
//! gets a new database).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use backchannel::tasks::{MemoryTaskStore, SqlTaskStore, TaskRecord, TaskState, TaskStore};
use serde_json::json;

fn task(id: &str, lease_owner: &str, lease_until_ms: u64) -> TaskRecord {
    TaskRecord {
        id: id.into(),
        owner: "principal:ann".into(),
        tool: "recheck".into(),
        request: r#"{"arguments":{"n":1}}"#.into(),
        answers: "{}".into(),
        state: TaskState::Working,
        status_message: None,
        created_ms: 1_000,
        updated_ms: 1_000,
        ttl_ms: Some(60_000),
        poll_ms: 500,
        open: BTreeMap::new(),
        responses: BTreeMap::new(),
        outcome: None,
        cancel_requested: false,
        version: 0,
        lease_owner: lease_owner.into(),
        lease_until_ms,
    }
}

fn keys(pairs: &[(&str, serde_json::Value)]) -> BTreeMap<String, serde_json::Value> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

/// Every backend must pass this.
async fn contract(store: Arc<dyn TaskStore>) {
    let now = 2_000;
    store.create(task("t1", "a", 10_000)).await.unwrap();
    let got = store.get("t1", now).await.unwrap().unwrap();
    assert_eq!(got, task("t1", "a", 10_000), "a task reads back as stored");
    assert!(store.get("nope", now).await.unwrap().is_none());

    // Questions: input_required; only open keys are taken; the rest is ignored.
    let question = json!({"method": "elicitation/create", "params": {"message": "Sure?"}});
    assert!(
        store
            .ask(
                "t1",
                keys(&[("a", question.clone()), ("b", question.clone())]),
                now
            )
            .await
            .unwrap()
    );
    let asked = store.get("t1", now).await.unwrap().unwrap();
    assert_eq!(asked.state, TaskState::InputRequired);
    assert_eq!(asked.open.len(), 2);
    assert!(
        store
            .answer("t1", keys(&[("a", json!(1)), ("zzz", json!(2))]), now)
            .await
            .unwrap()
    );
    let partly = store.get("t1", now).await.unwrap().unwrap();
    assert_eq!(
        partly.state,
        TaskState::InputRequired,
        "one question is still open"
    );
    assert_eq!(partly.responses, keys(&[("a", json!(1))]));
    assert_eq!(partly.open.keys().collect::<Vec<_>>(), vec!["b"]);
    assert_eq!(partly.version, 1);
    store
        .answer("t1", keys(&[("b", json!(true))]), now)
        .await
        .unwrap();
    let answered = store.get("t1", now).await.unwrap().unwrap();
    assert_eq!(answered.state, TaskState::Working);
    assert_eq!(answered.responses.len(), 2);
    store
        .save_answers("t1", r#"{"round":1}"#.into(), now)
        .await
        .unwrap();
    assert_eq!(
        store.get("t1", now).await.unwrap().unwrap().answers,
        r#"{"round":1}"#
    );

    // Leases: renew returns what the owner holds, with its version.
    store.create(task("t2", "a", 10_000)).await.unwrap();
    store.create(task("t3", "b", 10_000)).await.unwrap();
    let mut held: Vec<_> = store
        .renew("a", 20_000)
        .await
        .unwrap()
        .into_iter()
        .map(|h| (h.id, h.version, h.cancel_requested))
        .collect();
    held.sort();
    assert_eq!(held, vec![("t1".into(), 2, false), ("t2".into(), 0, false)]);

    // Only another owner's expired lease is taken, and only once.
    let claimed = store.claim_expired("c", 15_000, 30_000).await.unwrap();
    assert_eq!(
        claimed.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
        vec!["t3"]
    );
    let again = store.claim_expired("d", 15_000, 30_000).await.unwrap();
    assert!(again.is_empty(), "a claimed task is not claimed twice");
    let t3 = store.get("t3", now).await.unwrap().unwrap();
    assert_eq!((t3.lease_owner.as_str(), t3.lease_until_ms), ("c", 30_000));
    assert_eq!(
        store.get("t1", now).await.unwrap().unwrap().lease_owner,
        "a"
    );

    // Steps: recorded by the holder only (the fence), first result kept; a question answered
    // already is not opened again (a resumed run asks it again).
    let record = |holder: &'static str, name: &'static str, value: &'static str| {
        store.record_step("t3", holder, name, value.into())
    };
    assert!(
        !record("a", "write", "1").await.unwrap(),
        "a stale holder records nothing"
    );
    assert!(record("c", "write", "1").await.unwrap());
    assert!(record("c", "write", "2").await.unwrap());
    assert!(record("c", "mail", "\"sent\"").await.unwrap());
    let steps = store.steps("t3").await.unwrap();
    assert_eq!(
        steps.into_iter().collect::<Vec<_>>(),
        vec![
            ("mail".to_owned(), "\"sent\"".to_owned()),
            ("write".to_owned(), "1".to_owned())
        ]
    );
    assert!(store.steps("t2").await.unwrap().is_empty());
    store
        .ask("t3", keys(&[("q", json!({}))]), now)
        .await
        .unwrap();
    store
        .answer("t3", keys(&[("q", json!("yes"))]), now)
        .await
        .unwrap();
    assert!(
        store
            .ask("t3", keys(&[("q", json!({}))]), now)
            .await
            .unwrap()
    );
    let t3 = store.get("t3", now).await.unwrap().unwrap();
    assert_eq!((t3.state, t3.open.len()), (TaskState::Working, 0));

    // Finish: only the holder, only once.
    let complete_by = |holder| {
        store.finish(
            "t1",
            holder,
            TaskState::Completed,
            Some(r#"{"x":1}"#.into()),
            now,
        )
    };
    assert!(!complete_by("b").await.unwrap());
    assert!(complete_by("a").await.unwrap());
    assert!(
        !store
            .record_step("t1", "a", "late", "0".into())
            .await
            .unwrap(),
        "a finished task records no step"
    );
    assert!(
        !store
            .finish("t1", "a", TaskState::Failed, None, now)
            .await
            .unwrap()
    );
    let done = store.get("t1", now).await.unwrap().unwrap();
    assert_eq!(
        (done.state, done.outcome),
        (TaskState::Completed, Some(r#"{"x":1}"#.into()))
    );
    assert!(
        !store
            .ask("t1", keys(&[("c", json!({}))]), now)
            .await
            .unwrap(),
        "a finished task asks nothing"
    );

    // Cancel: acknowledged for a finished task without changing it; marks a running one.
    assert!(store.cancel("t1", now).await.unwrap());
    assert_eq!(
        store.get("t1", now).await.unwrap().unwrap().state,
        TaskState::Completed
    );
    store
        .ask("t2", keys(&[("q", json!({}))]), now)
        .await
        .unwrap();
    assert!(store.cancel("t2", now).await.unwrap());
    let cancelled = store.get("t2", now).await.unwrap().unwrap();
    assert!(cancelled.cancel_requested && cancelled.open.is_empty());
    assert_eq!(cancelled.state, TaskState::Working);
    assert!(
        !store
            .ask("t2", keys(&[("r", json!({}))]), now)
            .await
            .unwrap()
    );
    let signals = store.renew("a", 40_000).await.unwrap();
    assert_eq!(signals.len(), 1);
    assert!(signals[0].cancel_requested);
    assert!(!store.cancel("nope", now).await.unwrap());

    // Expiry: invisible once its time to live passed, then removed by a sweep.
    assert!(store.get("t1", 61_000).await.unwrap().is_none());
    assert_eq!(store.sweep(61_000).await.unwrap(), 3);
    assert!(store.get("t3", now).await.unwrap().is_none());
    assert!(
        store.steps("t3").await.unwrap().is_empty(),
        "a removed task's steps go with it"
    );
}

#[tokio::test]
async fn the_memory_store_keeps_the_contract() {
    contract(Arc::new(MemoryTaskStore::new())).await;
}

#[tokio::test]
async fn the_sqlite_store_keeps_the_contract() {
    let dir = std::env::temp_dir().join(format!("bc-tasks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{}.sqlite", rand_name()));
    let url = format!("sqlite://{}", file.display());
    contract(Arc::new(SqlTaskStore::open(&url).await.unwrap())).await;
    // The table is there on a second open, with the tasks (none left after the sweep).
    let reopened = SqlTaskStore::open(&url).await.unwrap();
    assert!(reopened.get("t1", 0).await.unwrap().is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_postgres_store_keeps_the_contract() {
    let Some(server) = std::env::var("BACKCHANNEL_TEST_POSTGRES")
        .ok()
        .filter(|s| !s.is_empty())
    else {
        // The PostgreSQL pass (scripts/test-postgres) runs it.
        return;
    };
    let url = sql_pool::create_database(&server, "tasks").await.unwrap();
    contract(Arc::new(SqlTaskStore::open(&url).await.unwrap())).await;
}

fn rand_name() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{nanos:x}")
}
