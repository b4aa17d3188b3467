//! moviedb as two instances on one PostgreSQL database (`scripts/cluster up`): what one
//! instance learns, the other honours. Ignored in the ordinary run; `scripts/test-cluster`
//! starts the cluster and runs these with `--ignored`. `$CLUSTER_DIR` names its folder.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::time::Instant;

use moviedb::auth::TokenKeys;
use moviedb::domain::Role;
use serde_json::{Value, json};

use crate::common::{Client, Model, Person, Revision, call, structured};

struct Cluster {
    endpoints: HashMap<String, String>,
    keys: TokenKeys,
}

impl Cluster {
    fn open() -> Self {
        let (dir, endpoints) = backchannel::testing::cluster();
        let secret = std::fs::read_to_string(dir.join("jwt-secret")).unwrap();
        Cluster {
            endpoints,
            keys: TokenKeys::from_hex(secret.trim()).unwrap(),
        }
    }

    /// A token both instances accept (they share the JWT secret).
    fn token(&self, user: &str) -> String {
        self.keys.issue(user, Role::User, chrono::Utc::now())
    }

    fn url(&self, name: &str) -> &str {
        &self.endpoints[name]
    }
}

const MODEL_REPLY: &str = "SUMMARY: Reviewers call it tense and beautifully shot.\n\
                           THEMES: tension; craft";

async fn summarize(
    cluster: &Cluster,
    instance: &str,
    token: &str,
    wire: Revision,
    movie: &str,
) -> (Client, Value) {
    let client = Client::new(Model::Answers(MODEL_REPLY.into()), Person::Absent);
    let running = backchannel::testing::connect_http(
        client.clone(),
        cluster.url(instance),
        wire,
        Some(token),
    )
    .await;
    let result = running
        .call_tool(call("summarizeMovieReviews", json!({ "movieId": movie })))
        .await
        .unwrap();
    running.cancel().await.unwrap();
    (client, structured(&result))
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/test-cluster"]
async fn a_summary_written_through_one_instance_is_reused_by_the_other() {
    let cluster = Cluster::open();
    let token = cluster.token("mara");
    for (wire, movie) in Revision::ALL.into_iter().zip(["36", "14"]) {
        let (first, summary) = summarize(&cluster, "moviedb", &token, wire, movie).await;
        assert_eq!(first.sampling_count(), 1, "{wire:?}");
        assert_eq!(summary["source"], "CLIENT_MODEL");
        // Within the window, the other instance serves the same prose and asks no model.
        let (second, again) = summarize(&cluster, "moviedb-2", &token, wire, movie).await;
        assert_eq!(
            second.sampling_count(),
            0,
            "{wire:?}: the other instance asked again"
        );
        assert_eq!(again["summary"], summary["summary"]);
        assert_eq!(again["source"], "CLIENT_MODEL");
        // Another user's model output is never served from it.
        let (stranger, _) =
            summarize(&cluster, "moviedb-2", &cluster.token("dan"), wire, movie).await;
        assert_eq!(stranger.sampling_count(), 1, "{wire:?}");
    }
}

async fn ping(url: &str, token: &str) -> u16 {
    let answer = crate::common::raw_ping(url, Some(token)).send().await;
    answer.unwrap().status().as_u16()
}

#[tokio::test]
#[ignore = "needs a cluster: scripts/test-cluster"]
async fn sixty_calls_a_minute_hold_across_both_instances_together() {
    let cluster = Cluster::open();
    let token = cluster.token("noor");
    let started = Instant::now();
    let mut allowed = 0;
    let mut per_instance = [0; 2];
    let urls = [cluster.url("moviedb"), cluster.url("moviedb-2")];
    loop {
        let which = allowed % 2;
        let status = ping(urls[which], &token).await;
        if status == 429 {
            break;
        }
        assert_eq!(status, 200);
        allowed += 1;
        per_instance[which] += 1;
        assert!(allowed <= 1_000, "never limited");
    }
    // One bucket for both: about 60 in all (each instance alone would allow 60 more), plus at
    // most one per second that passed.
    let refilled = started.elapsed().as_secs() as usize + 1;
    assert!(
        (60..=60 + refilled).contains(&allowed),
        "{allowed} calls allowed in {refilled} s ({per_instance:?} per instance)"
    );
    // The other instance refuses too: the bucket is shared, not per instance.
    let other = urls[(allowed + 1) % 2];
    assert_eq!(ping(other, &token).await, 429);
}
