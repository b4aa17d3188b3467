//! The movie tools through a real rmcp client, on 2025-11-25 and 2026-07-28 with the same tool
//! code: the three summary states, a model that answers, refuses or stalls, the summary cache,
//! the watch-status question and its fallbacks, duplicates, sign-in, and the tool-list
//! snapshot.
#![allow(clippy::unwrap_used)]

use crate::common::{Client, Db, Model, Person, Revision, call, structured, text_of};
use moviedb::domain::{Subject, WatchStatus};
use moviedb::mcp::{SIGN_IN_NEEDED, WATCH_STATUS_QUESTION};
use rmcp::model::CallToolResponse;
use serde_json::{Value, json};

const MODEL_REPLY: &str = "SUMMARY: Reviewers call it a patient, hopeful prison drama.\n\
                           THEMES: hope; friendship; narration";

async fn summarize(db: &Db, client: Client, wire: Revision, movie_id: &str) -> Value {
    let running = Db::connect(db.server(None), client, wire).await;
    let result = running
        .call_tool(call(
            "summarizeMovieReviews",
            json!({ "movieId": movie_id }),
        ))
        .await
        .unwrap();
    running.cancel().await.unwrap();
    assert_eq!(
        result.is_error,
        Some(false),
        "{wire:?}: {}",
        text_of(&result)
    );
    structured(&result)
}

#[tokio::test]
async fn a_movie_id_that_is_not_a_number_is_a_tool_error_naming_it() {
    for wire in Revision::ALL {
        let db = Db::new().await;
        let client = Client::new(Model::Answers(MODEL_REPLY.into()), Person::Absent);
        let running = Db::connect(db.server(None), client.clone(), wire).await;
        for bad in ["abc", "", "1.5"] {
            let result = running
                .call_tool(call("summarizeMovieReviews", json!({ "movieId": bad })))
                .await
                .unwrap();
            assert_eq!(result.is_error, Some(true), "{wire:?} {bad:?}");
            assert_eq!(
                text_of(&result),
                format!("Invalid value '{bad}' for movieId"),
                "{wire:?}"
            );
        }
        running.cancel().await.unwrap();
        assert_eq!(client.sampling_count(), 0, "{wire:?}: no model asked");
    }
}

/// MCP Inspector sends a movie id typed as `1` as the number 1: it is read as the id "1".
#[tokio::test]
async fn a_movie_id_sent_as_a_whole_number_is_read_as_its_text() {
    for wire in Revision::ALL {
        let db = Db::new().await;
        let server = db.server(None);
        let client = Client::new(Model::Absent, Person::Absent);
        let running = Db::connect(server.clone(), client, wire).await;
        let as_number = running
            .call_tool(call("summarizeMovieReviews", json!({ "movieId": 38 })))
            .await
            .unwrap();
        let as_text = running
            .call_tool(call("summarizeMovieReviews", json!({ "movieId": "38" })))
            .await
            .unwrap();
        assert_eq!(as_number.is_error, Some(false), "{}", text_of(&as_number));
        assert_eq!(structured(&as_number), structured(&as_text), "{wire:?}");
        let refused = running
            .call_tool(call("summarizeMovieReviews", json!({ "movieId": true })))
            .await;
        let said = match refused {
            Ok(result) => text_of(&result),
            Err(error) => error.to_string(),
        };
        assert!(
            said.contains("an id is a string such as \"1\", not true"),
            "{wire:?}: {said}"
        );
        running.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn class11_verifying_sampling_answered_as_the_model_and_the_three_summary_states() {
    for wire in Revision::ALL {
        let db = Db::new().await;
        let client = Client::new(Model::Answers(MODEL_REPLY.into()), Person::Absent);
        // Forrest Gump has no reviews.
        let s = summarize(&db, client.clone(), wire, "5").await;
        assert_eq!(s["reviewCount"], 0, "{wire:?}");
        assert!(s["summary"].is_null() && s["averageScore"].is_null());
        assert_eq!(s["themes"], json!([]));
        // An unknown movie is no movie without reviews: a clear tool error.
        let running = Db::connect(db.server(None), client.clone(), wire).await;
        let unknown = running
            .call_tool(call("summarizeMovieReviews", json!({ "movieId": "999" })))
            .await
            .unwrap();
        running.cancel().await.unwrap();
        assert_eq!(unknown.is_error, Some(true), "{wire:?}");
        assert!(
            text_of(&unknown).contains("There is no movie with id 999"),
            "{wire:?}: {}",
            text_of(&unknown)
        );
        // The Godfather has two: an average, no prose.
        let s = summarize(&db, client.clone(), wire, "2").await;
        assert_eq!(
            (s["reviewCount"].clone(), s["averageScore"].clone()),
            (json!(2), json!(9.5))
        );
        assert!(s["summary"].is_null());
        assert_eq!(
            client.sampling_count(),
            0,
            "{wire:?}: no model call below three reviews"
        );
        // Shawshank has eight: the client's model writes the prose.
        let s = summarize(&db, client.clone(), wire, "1").await;
        assert_eq!(
            s["summary"],
            "Reviewers call it a patient, hopeful prison drama."
        );
        assert_eq!(s["themes"], json!(["hope", "friendship", "narration"]));
        assert_eq!(s["averageScore"], json!(9.38));
        assert_eq!(s["source"], "CLIENT_MODEL");
        assert_eq!(client.sampling_count(), 1, "{wire:?}");
        let request = client.samplings.lock().unwrap()[0].clone();
        assert_eq!(
            request.system_prompt.as_deref(),
            Some("You summarize movie reviews into a few sentences and recurring themes.")
        );
        assert_eq!(request.max_tokens, 1024);
        let preferences = request
            .model_preferences
            .expect("model preferences are sent");
        assert_eq!(
            (
                preferences.speed_priority,
                preferences.cost_priority,
                preferences.intelligence_priority
            ),
            (Some(0.8), Some(0.7), Some(0.3))
        );
        let prompt = serde_json::to_string(&request.messages).unwrap();
        assert!(
            prompt.contains("SUMMARY:") && prompt.contains("- score 10:"),
            "{prompt}"
        );
    }
}

#[tokio::test]
async fn class10_verifying_progress_goes_loading_summarizing_done() {
    for wire in Revision::ALL {
        let db = Db::new().await;
        let client = Client::new(Model::Answers(MODEL_REPLY.into()), Person::Absent);
        summarize(&db, client.clone(), wire, "36").await;
        let progress = client.progress.lock().unwrap().clone();
        let steps: Vec<(f64, &str)> = progress
            .iter()
            .map(|(p, m)| (*p, m.as_deref().unwrap_or("")))
            .collect();
        assert_eq!(
            steps,
            vec![
                (0.0, "Loading reviews"),
                (0.4, "Summarizing"),
                (1.0, "Done")
            ],
            "{wire:?}"
        );
    }
}

#[tokio::test]
async fn class11_verifying_sampling_a_rejected_or_absent_model_gets_the_server_summary() {
    // rmcp's own client abandons a 2026-07-28 call when its sampling handler fails, so the
    // refusal on that revision is driven by hand below.
    let cases = [
        (Revision::V2025_11_25, Model::Refuses),
        (Revision::V2025_11_25, Model::Absent),
        (Revision::V2026_07_28, Model::Absent),
    ];
    for (wire, model) in cases {
        {
            let db = Db::new().await;
            let client = Client::new(model.clone(), Person::Absent);
            let s = summarize(&db, client.clone(), wire, "1").await;
            assert_eq!(
                s["summary"], "Reviewers respond favorably overall, averaging 9.4 out of 10.",
                "{wire:?} {model:?}"
            );
            assert_eq!(s["source"], "SERVER");
            assert_eq!(s["themes"].as_array().unwrap().len(), 5);
            let expected = usize::from(matches!(model, Model::Refuses));
            assert_eq!(client.sampling_count(), expected, "{wire:?} {model:?}");
        }
    }
}

#[tokio::test]
async fn a_refusal_on_2026_carries_its_error_and_gets_the_server_summary() {
    let db = Db::new().await;
    let client = Client::new(Model::Answers(MODEL_REPLY.into()), Person::Absent);
    let running = Db::connect(db.server(None), client, Revision::V2026_07_28).await;
    let args = json!({ "movieId": "14" });
    let CallToolResponse::InputRequired(round) = running
        .call_tool_once(call("summarizeMovieReviews", args.clone()))
        .await
        .unwrap()
    else {
        panic!("expected input_required");
    };
    let mut retry = call("summarizeMovieReviews", args);
    retry.request_state = round.request_state.clone();
    retry.input_responses = Some(
        [(
            "summary".to_owned(),
            json!({ "error": { "code": -1, "message": "the person said no" } }),
        )]
        .into(),
    );
    let CallToolResponse::Complete(result) = running.call_tool_once(retry).await.unwrap() else {
        panic!("expected a complete result");
    };
    running.cancel().await.unwrap();
    let s = structured(&result);
    assert_eq!(s["source"], "SERVER");
    assert_eq!(
        s["summary"],
        "Reviewers respond favorably overall, averaging 8.5 out of 10."
    );
}

#[tokio::test]
async fn class11_verifying_sampling_left_unanswered_times_out_into_the_server_summary() {
    for wire in Revision::ALL {
        let db = Db::new().await;
        let client = Client::new(Model::Stalls, Person::Absent);
        let started = tokio::time::Instant::now();
        // Once the model has been asked (every query before it ran in real time), the test
        // clock moves 21 s, just past the 20 s sampling timeout (the model stalls two minutes),
        // then runs in real time again for what follows (a database on the network must not
        // see its own timeouts jump).
        let skip_the_wait = async {
            client.asked.notified().await;
            tokio::time::pause();
            tokio::time::advance(std::time::Duration::from_secs(21)).await;
            tokio::time::resume();
        };
        let (s, ()) = tokio::join!(summarize(&db, client.clone(), wire, "36"), skip_the_wait);
        assert_eq!(s["source"], "SERVER", "{wire:?}");
        assert_eq!(
            s["summary"], "Reviewers respond favorably overall, averaging 8.3 out of 10.",
            "{wire:?}"
        );
        assert_eq!(client.sampling_count(), 1);
        // The 20 s wait passed on the test clock, not the wall clock.
        assert!(
            started.elapsed() >= std::time::Duration::from_secs(20),
            "{wire:?}"
        );
    }
}

#[tokio::test]
async fn class11_verifying_sampling_again_at_once_the_model_is_asked_once_in_60_s() {
    for wire in Revision::ALL {
        let db = Db::new().await;
        let server = db.server(Some("mara"));
        let client = Client::new(Model::Answers(MODEL_REPLY.into()), Person::Absent);
        let running = Db::connect(server.clone(), client.clone(), wire).await;
        for _ in 0..3 {
            let result = running
                .call_tool(call("summarizeMovieReviews", json!({ "movieId": "38" })))
                .await
                .unwrap();
            assert_eq!(structured(&result)["source"], "CLIENT_MODEL");
        }
        running.cancel().await.unwrap();
        // Another connection to the same server shares the cache.
        let other = Client::new(Model::Answers(MODEL_REPLY.into()), Person::Absent);
        summarize_on(&server, other.clone(), wire, "38").await;
        assert_eq!(client.sampling_count(), 1, "{wire:?}");
        assert_eq!(other.sampling_count(), 0, "{wire:?}");
        // A new review changes the key: the model is asked again.
        db.catalog
            .create_review(
                Some(&Db::viewer("noor")),
                Subject::Movie(38),
                6,
                Some("Dated now"),
            )
            .await
            .unwrap();
        summarize_on(&server, other.clone(), wire, "38").await;
        assert_eq!(other.sampling_count(), 1, "{wire:?}");
        // Anonymous callers cannot be told apart, so their model output is never kept.
        let anonymous = db.server(None);
        let stranger = Client::new(Model::Answers(MODEL_REPLY.into()), Person::Absent);
        summarize_on(&anonymous, stranger.clone(), wire, "38").await;
        summarize_on(&anonymous, stranger.clone(), wire, "38").await;
        assert_eq!(stranger.sampling_count(), 2, "{wire:?}");
    }
}

#[tokio::test]
async fn class11_verifying_sampling_after_sixty_seconds_the_dialog_opens_again() {
    for wire in Revision::ALL {
        let db = Db::new().await;
        let server = db.server_keeping_summaries_here(Some("mara"));
        let client = Client::new(Model::Answers(MODEL_REPLY.into()), Person::Absent);
        summarize_on(&server, client.clone(), wire, "38").await;
        // 59 s on the test clock: still kept (the queries run in real time around the jump).
        tokio::time::pause();
        tokio::time::advance(std::time::Duration::from_secs(59)).await;
        tokio::time::resume();
        let s = summarize_on(&server, client.clone(), wire, "38").await;
        assert_eq!(s["source"], "CLIENT_MODEL", "{wire:?}");
        assert_eq!(client.sampling_count(), 1, "{wire:?}");
        // Past the 60 s window: the model is asked again.
        tokio::time::pause();
        tokio::time::advance(std::time::Duration::from_secs(2)).await;
        tokio::time::resume();
        let s = summarize_on(&server, client.clone(), wire, "38").await;
        assert_eq!(s["source"], "CLIENT_MODEL", "{wire:?}");
        assert_eq!(client.sampling_count(), 2, "{wire:?}");
    }
}

#[tokio::test]
async fn class11_verifying_sampling_an_answer_that_ignores_the_format_gets_the_server_summary() {
    for wire in Revision::ALL {
        let db = Db::new().await;
        let anonymous = db.server(None);
        let chatty = Client::new(
            Model::Answers("Sure! People seem to like it a lot.".into()),
            Person::Absent,
        );
        let s = summarize_on(&anonymous, chatty.clone(), wire, "38").await;
        assert_eq!(s["source"], "SERVER", "{wire:?}: {s}");
        assert!(
            s["summary"].as_str().unwrap().starts_with("Reviewers "),
            "{s}"
        );
        assert_eq!(chatty.sampling_count(), 1, "{wire:?}");
        // Within the window nobody is asked again, anonymous callers included: another
        // anonymous client is given the same server summary.
        let willing = Client::new(Model::Answers(MODEL_REPLY.into()), Person::Absent);
        let again = summarize_on(&anonymous, willing.clone(), wire, "38").await;
        assert_eq!(again, s, "{wire:?}");
        assert_eq!(willing.sampling_count(), 0, "{wire:?}");
        // A signed-in caller is kept apart: their own model is asked.
        summarize_on(&db.server(Some("mara")), willing.clone(), wire, "38").await;
        assert_eq!(willing.sampling_count(), 1, "{wire:?}");
    }
}

async fn summarize_on(
    server: &moviedb::mcp::MovieServer,
    client: Client,
    wire: Revision,
    id: &str,
) -> Value {
    let running = Db::connect(server.clone(), client, wire).await;
    let result = running
        .call_tool(call("summarizeMovieReviews", json!({ "movieId": id })))
        .await
        .unwrap();
    running.cancel().await.unwrap();
    structured(&result).clone()
}

async fn add(
    db: &Db,
    person: Person,
    wire: Revision,
    args: Value,
) -> (rmcp::model::CallToolResult, Client) {
    let client = Client::new(Model::Absent, person);
    let running = Db::connect(db.server(Some("mara")), client.clone(), wire).await;
    let result = running
        .call_tool(call("addToWatchlist", args))
        .await
        .unwrap();
    running.cancel().await.unwrap();
    (result, client)
}

async fn status_of(db: &Db, user: &str, subject: Subject) -> Option<WatchStatus> {
    db.catalog
        .watchlist_entry_for(Some(&Db::viewer(user)), subject)
        .await
        .unwrap()
        .map(|item| item.status)
}

#[tokio::test]
async fn class11_verifying_elicitation_the_person_is_asked_and_an_accepted_watched_is_stored() {
    for wire in Revision::ALL {
        let db = Db::new().await;
        let (result, client) = add(
            &db,
            Person::Accepts(json!({ "status": "WATCHED" })),
            wire,
            json!({ "subject": { "movieId": "36" } }),
        )
        .await;
        assert_eq!(result.is_error, Some(false), "{}", text_of(&result));
        let body = structured(&result);
        assert_eq!(body["data"]["addToWatchlist"]["status"], "WATCHED");
        assert_eq!(
            body["data"]["addToWatchlist"]["content"]["title"],
            "Inception"
        );
        assert_eq!(body["errors"], json!([]));
        assert_eq!(
            status_of(&db, "mara", Subject::Movie(36)).await,
            Some(WatchStatus::Watched)
        );
        let questions = client.questions.lock().unwrap().clone();
        assert_eq!(questions.len(), 1, "{wire:?}");
        assert_eq!(questions[0].0, WATCH_STATUS_QUESTION);
        assert_eq!(
            questions[0].1["properties"]["status"]["enum"],
            json!(["WANT_TO_WATCH", "WATCHED"])
        );
    }
}

#[tokio::test]
async fn class11_verifying_elicitation_a_decline_falls_back_to_want_to_watch_and_still_adds() {
    let answers = [
        Person::Declines,
        Person::Cancels,
        Person::Absent,
        Person::Accepts(json!({})),
    ];
    for wire in Revision::ALL {
        for person in answers.clone() {
            let db = Db::new().await;
            let (result, client) = add(
                &db,
                person.clone(),
                wire,
                json!({ "subject": { "tvShowId": "1" } }),
            )
            .await;
            assert_eq!(
                result.is_error,
                Some(false),
                "{wire:?} {person:?}: {}",
                text_of(&result)
            );
            assert_eq!(
                status_of(&db, "mara", Subject::TvShow(1)).await,
                Some(WatchStatus::WantToWatch),
                "{wire:?} {person:?}"
            );
            let asked = client.questions.lock().unwrap().len();
            assert_eq!(
                asked,
                usize::from(!matches!(person, Person::Absent)),
                "{wire:?} {person:?}"
            );
        }
    }
}

#[tokio::test]
async fn class11_verifying_elicitation_no_answer_in_20_s_is_a_tool_error_and_adds_nothing() {
    for wire in Revision::ALL {
        let db = Db::new().await;
        let client = Client::new(Model::Absent, Person::Silent);
        let running = Db::connect(db.server(Some("mara")), client.clone(), wire).await;
        // Once the person has been asked, the test clock moves 21 s, just past the 20 s wait
        // (the silent person never answers), then runs in real time again.
        let skip_the_wait = async {
            client.asked.notified().await;
            tokio::time::pause();
            tokio::time::advance(std::time::Duration::from_secs(21)).await;
            tokio::time::resume();
        };
        let adding = running.call_tool(call(
            "addToWatchlist",
            json!({ "subject": { "movieId": "52" } }),
        ));
        let (result, ()) = tokio::join!(adding, skip_the_wait);
        let result = result.unwrap();
        running.cancel().await.unwrap();
        assert_eq!(result.is_error, Some(true), "{wire:?}");
        assert_eq!(
            text_of(&result),
            "No answer about the watch status within 20 s: nothing was added. Ask again, or \
             give the status (WATCHED or WANT_TO_WATCH) with the request.",
            "{wire:?}"
        );
        assert_eq!(
            status_of(&db, "mara", Subject::Movie(52)).await,
            None,
            "{wire:?}"
        );
    }
}

#[tokio::test]
async fn a_status_from_the_agent_is_used_without_asking() {
    for wire in Revision::ALL {
        let db = Db::new().await;
        let (result, client) = add(
            &db,
            Person::Accepts(json!({ "status": "WANT_TO_WATCH" })),
            wire,
            json!({ "subject": { "movieId": "52" }, "status": "WATCHED" }),
        )
        .await;
        assert_eq!(result.is_error, Some(false));
        assert!(client.questions.lock().unwrap().is_empty());
        assert_eq!(
            status_of(&db, "mara", Subject::Movie(52)).await,
            Some(WatchStatus::Watched)
        );
    }
}

#[tokio::test]
async fn class11_verifying_elicitation_the_same_title_again_reads_as_already_there() {
    for wire in Revision::ALL {
        let db = Db::new().await;
        // The seed has The Matrix WATCHED on user's list.
        let client = Client::new(
            Model::Absent,
            Person::Accepts(json!({ "status": "WANT_TO_WATCH" })),
        );
        let running = Db::connect(db.server(Some("user")), client.clone(), wire).await;
        let result = running
            .call_tool(call(
                "addToWatchlist",
                json!({ "subject": { "movieId": "38" } }),
            ))
            .await
            .unwrap();
        running.cancel().await.unwrap();
        assert_eq!(result.is_error, Some(true), "{wire:?}");
        assert_eq!(
            text_of(&result),
            "GraphQL operation failed: This movie is already in your watch list"
        );
        assert!(
            client.questions.lock().unwrap().is_empty(),
            "{wire:?}: nobody is asked about a title already on the list"
        );
        let errors = &structured(&result)["errors"];
        assert_eq!(errors[0]["classification"], "BAD_REQUEST");
        assert_eq!(errors[0]["path"], json!(["addToWatchlist"]));
        assert_eq!(
            status_of(&db, "user", Subject::Movie(38)).await,
            Some(WatchStatus::Watched)
        );
    }
}

#[tokio::test]
async fn bad_subjects_are_refused_before_any_question() {
    for wire in Revision::ALL {
        let db = Db::new().await;
        for (args, expected) in [
            (
                json!({ "subject": {} }),
                "Give exactly one of subject.movieId and subject.tvShowId.",
            ),
            (
                json!({ "subject": { "movieId": "1", "tvShowId": "1" } }),
                "Give exactly one of subject.movieId and subject.tvShowId.",
            ),
            (
                json!({ "subject": { "movieId": "4040" } }),
                "GraphQL operation failed: Movie not found with id: 4040",
            ),
            (
                json!({ "subject": { "movieId": "x1" } }),
                "GraphQL operation failed: Invalid value 'x1' for movieId",
            ),
        ] {
            let (result, client) = add(
                &db,
                Person::Accepts(json!({ "status": "WATCHED" })),
                wire,
                args.clone(),
            )
            .await;
            assert_eq!(result.is_error, Some(true), "{wire:?} {args}");
            assert_eq!(text_of(&result), expected, "{wire:?} {args}");
            assert!(
                client.questions.lock().unwrap().is_empty(),
                "{wire:?} {args}: nobody is asked about a title that cannot be added"
            );
        }
        let list = db.watchlist_of("mara").await;
        assert!(list.is_empty(), "{wire:?}: nothing was added");
    }
}

#[tokio::test]
async fn watch_list_tools_need_a_signed_in_user() {
    for wire in Revision::ALL {
        let db = Db::new().await;
        let client = Client::new(
            Model::Absent,
            Person::Accepts(json!({ "status": "WATCHED" })),
        );
        let running = Db::connect(db.server(None), client.clone(), wire).await;
        for (tool, args) in [
            ("addToWatchlist", json!({ "subject": { "movieId": "1" } })),
            ("stageRemoveFromWatchlist", json!({ "itemId": "1" })),
            ("confirmAction", json!({ "confirmationToken": "t" })),
        ] {
            let result = running.call_tool(call(tool, args)).await.unwrap();
            assert_eq!(result.is_error, Some(true), "{wire:?} {tool}");
            assert_eq!(text_of(&result), SIGN_IN_NEEDED);
        }
        running.cancel().await.unwrap();
        assert!(client.questions.lock().unwrap().is_empty());
    }
}

#[tokio::test]
async fn recommendations_come_through_the_tool_and_skip_what_was_watched() {
    for wire in Revision::ALL {
        let db = Db::new().await;
        let client = Client::new(Model::Absent, Person::Absent);
        let running = Db::connect(db.server(Some("user")), client, wire).await;
        let comfort = running
            .call_tool(call(
                "recommendMoviesForMood",
                json!({ "input": { "mood": "COMFORT", "excludeWatched": false } }),
            ))
            .await
            .unwrap();
        let movies = structured(&comfort)["movies"].as_array().unwrap().clone();
        assert_eq!(movies.len(), 10, "{wire:?}");
        assert_eq!(
            movies[0],
            json!({"id": "56", "title": "Casablanca", "releaseYear": 1942, "genre": "ROMANCE", "rating": 8.5})
        );
        let adventure = |exclude: bool| {
            call(
                "recommendMoviesForMood",
                json!({ "input": { "mood": "ADVENTURE", "excludeWatched": exclude } }),
            )
        };
        let titles = |v: &Value| -> Vec<String> {
            v["movies"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["title"].as_str().unwrap().to_owned())
                .collect()
        };
        let all = titles(&structured(
            &running.call_tool(adventure(false)).await.unwrap(),
        ));
        let unseen = titles(&structured(
            &running.call_tool(adventure(true)).await.unwrap(),
        ));
        assert!(all.contains(&"The Matrix".to_owned()), "{all:?}");
        assert!(!unseen.contains(&"The Matrix".to_owned()), "{unseen:?}");
        let bad = running
            .call_tool(call(
                "recommendMoviesForMood",
                json!({ "input": { "mood": "SLEEPY", "excludeWatched": false } }),
            ))
            .await;
        assert!(
            bad.is_err() || bad.unwrap().is_error == Some(true),
            "{wire:?}: an unknown mood is refused"
        );
        let ping = running
            .call_tool(call("ping", json!({ "name": "Ana" })))
            .await
            .unwrap();
        assert_eq!(text_of(&ping), "hello, Ana");
        running.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn the_tool_list_matches_its_snapshot() {
    let db = Db::new().await;
    let tools = serde_json::to_value(db.server(None).tool_list()).unwrap();
    crate::common::snapshot(
        "tools.json",
        &(serde_json::to_string_pretty(&tools).unwrap() + "\n"),
    );
    let names = backchannel::testing::names(&tools);
    assert_eq!(
        names,
        vec![
            "addToWatchlist",
            "confirmAction",
            "ping",
            "recommendMoviesForMood",
            "stageRemoveFromWatchlist",
            "summarizeMovieReviews"
        ]
    );
    // Descriptions come from the GraphQL schema where a field of the same name exists.
    let recommend = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "recommendMoviesForMood")
        .unwrap();
    assert!(
        recommend["description"]
            .as_str()
            .unwrap()
            .starts_with("Up to 10 movies that fit a mood")
    );
}

#[tokio::test]
async fn every_tool_call_leaves_one_audit_record() {
    let records = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = records.clone();
    let db = Db::new().await;
    let config = moviedb::mcp::McpConfig {
        fixed_user: Some(Db::viewer("mara")),
        audit: moviedb::mcp::AuditSink::new(move |r| sink.lock().unwrap().push(r.clone())),
        ..moviedb::mcp::McpConfig::default()
    };
    let server = moviedb::mcp::MovieServer::new(
        moviedb::graphql::schema(db.catalog.clone()),
        moviedb::mcp::MovieServer::layer_builder(&config)
            .build()
            .unwrap(),
        config,
    );
    for wire in Revision::ALL {
        let client = Client::new(
            Model::Absent,
            Person::Accepts(json!({ "status": "WATCHED" })),
        );
        let running = Db::connect(server.clone(), client, wire).await;
        running
            .call_tool(call("ping", json!({ "name": "a" })))
            .await
            .unwrap();
        let show = if wire == Revision::V2025_11_25 {
            "1"
        } else {
            "2"
        };
        running
            .call_tool(call(
                "addToWatchlist",
                json!({ "subject": { "tvShowId": show } }),
            ))
            .await
            .unwrap();
        running
            .call_tool(call(
                "confirmAction",
                json!({ "confirmationToken": "nope" }),
            ))
            .await
            .unwrap();
        running.cancel().await.unwrap();
    }
    let records = records.lock().unwrap().clone();
    let summary: Vec<String> = records
        .iter()
        .map(|r| {
            assert!(r.duration_ms >= 0.0);
            format!("{} {} {}", r.user, r.tool, r.outcome)
        })
        .collect();
    // On 2026-07-28 the question is a round of its own, so that call is two requests.
    assert_eq!(
        summary,
        vec![
            "mara ping ok",
            "mara addToWatchlist ok",
            "mara confirmAction error",
            "mara ping ok",
            "mara addToWatchlist input_required",
            "mara addToWatchlist ok",
            "mara confirmAction error",
        ]
    );
    let line = serde_json::to_value(&records[0]).unwrap();
    assert_eq!(line["tool"], "ping");
    assert!(line["durationMs"].is_number());
}

/// A client that declares sampling and answers every request with an empty result: a bug.
struct BrokenClient;

impl rmcp::Service<rmcp::RoleClient> for BrokenClient {
    async fn handle_request(
        &self,
        _request: rmcp::model::ServerRequest,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ClientResult, rmcp::ErrorData> {
        Ok(rmcp::model::ClientResult::empty(()))
    }

    async fn handle_notification(
        &self,
        _notification: rmcp::model::ServerNotification,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) -> Result<(), rmcp::ErrorData> {
        Ok(())
    }

    fn get_info(&self) -> rmcp::model::ClientInfo {
        let mut caps = rmcp::model::ClientCapabilities::default();
        caps.sampling = Some(Default::default());
        rmcp::model::ClientInfo::new(caps, rmcp::model::Implementation::new("broken", "1.0.0"))
    }
}

#[tokio::test]
async fn class11_verifying_sampling_a_broken_client_is_a_bug_the_caller_sees() {
    let db = Db::new().await;
    let running =
        backchannel::testing::connect(db.server(None), BrokenClient, Revision::V2025_11_25).await;
    let result = running
        .call_tool(call("summarizeMovieReviews", json!({ "movieId": "38" })))
        .await
        .unwrap();
    running.cancel().await.unwrap();
    assert_eq!(result.is_error, Some(true), "{}", text_of(&result));
    let said = text_of(&result);
    assert!(said.contains("bug in the client"), "{said}");
    assert!(said.contains("another kind of result"), "{said}");
}

/// The lessons' "20 s", pinned from below: an answer that comes at 19 s on the test clock is
/// still taken, for the watch status and for the summary (the tests above time out at 21 s).
#[tokio::test]
async fn class11_verifying_an_answer_at_19_s_is_still_taken_by_both_20_s_waits() {
    use std::time::Duration;
    for wire in Revision::ALL {
        let db = Db::new().await;
        let watched = json!({ "status": "WATCHED" });
        let client = Client::new(
            Model::AnswersAfter(
                Duration::from_secs(19),
                "SUMMARY: Late but in time.\nTHEMES: time".into(),
            ),
            Person::AcceptsAfter(Duration::from_secs(19), watched),
        );
        let at_19_s = || async {
            client.asked.notified().await;
            tokio::time::pause();
            tokio::time::advance(Duration::from_secs(19)).await;
            tokio::time::resume();
        };
        let running = Db::connect(db.server(Some("mara")), client.clone(), wire).await;
        let adding = running.call_tool(call(
            "addToWatchlist",
            json!({ "subject": { "movieId": "52" } }),
        ));
        let (result, ()) = tokio::join!(adding, at_19_s());
        let result = result.unwrap();
        running.cancel().await.unwrap();
        assert_eq!(
            result.is_error,
            Some(false),
            "{wire:?} {}",
            text_of(&result)
        );
        assert_eq!(
            status_of(&db, "mara", Subject::Movie(52)).await,
            Some(WatchStatus::Watched),
            "{wire:?}"
        );
        let (s, ()) = tokio::join!(summarize(&db, client.clone(), wire, "36"), at_19_s());
        assert_eq!(s["source"], "CLIENT_MODEL", "{wire:?} {s}");
        assert_eq!(s["summary"], "Late but in time.", "{wire:?}");
    }
}
