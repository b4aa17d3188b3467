//! The GraphQL API through the in-process schema: the SDL snapshot, the description lint,
//! moods, summaries, sign-in, watch lists, admin mutations, and bad input that gets a
//! classified error and changes nothing.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use crate::common::Db;
use moviedb::graphql::{self, MovieSchema};
use serde_json::{Value, json};

struct Api {
    db: Db,
    schema: MovieSchema,
}

impl Api {
    async fn new() -> Self {
        let db = Db::new().await;
        let schema = graphql::schema(db.catalog.clone());
        Self { db, schema }
    }

    async fn run(&self, query: &str, variables: Value, viewer: Option<&str>) -> Value {
        let request = async_graphql::Request::new(query)
            .variables(async_graphql::Variables::from_json(variables));
        let response = graphql::execute(&self.schema, request, viewer.map(Db::viewer)).await;
        serde_json::to_value(&response).unwrap()
    }

    async fn ok(&self, query: &str, variables: Value, viewer: Option<&str>) -> Value {
        let body = self.run(query, variables, viewer).await;
        assert!(body.get("errors").is_none(), "{body}");
        body["data"].clone()
    }

    /// The first error's message and classification.
    async fn fails(
        &self,
        query: &str,
        variables: Value,
        viewer: Option<&str>,
    ) -> (String, String, Value) {
        let body = self.run(query, variables, viewer).await;
        let error = &body["errors"][0];
        assert!(error.is_object(), "expected an error: {body}");
        (
            error["message"].as_str().unwrap().to_owned(),
            error["extensions"]["classification"]
                .as_str()
                .unwrap()
                .to_owned(),
            error["extensions"].clone(),
        )
    }

    async fn watchlist(&self, user: &str) -> Value {
        self.ok(
            "{ watchlist { id status content { title } } }",
            json!({}),
            Some(user),
        )
        .await["watchlist"]
            .clone()
    }
}

#[tokio::test]
async fn the_sdl_matches_its_snapshot() {
    let api = Api::new().await;
    let sdl = api.schema.sdl();
    crate::common::snapshot("schema.graphql", &sdl);
    assert!(sdl.contains("input WatchlistSubjectInput @oneOf"), "{sdl}");
    assert!(sdl.contains("interface Content"));
    assert!(sdl.contains("union SearchResult = Movie | Person | TvShow"));
}

#[tokio::test]
async fn every_field_of_every_object_and_interface_is_described() {
    let api = Api::new().await;
    let data = api
        .ok(
            "{ __schema { types { name kind fields(includeDeprecated: true) { name description } } } }",
            json!({}),
            None,
        )
        .await;
    let mut undocumented = Vec::new();
    for t in data["__schema"]["types"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        if name.starts_with("__") || !matches!(t["kind"].as_str(), Some("OBJECT" | "INTERFACE")) {
            continue;
        }
        for f in t["fields"].as_array().unwrap() {
            if f["description"]
                .as_str()
                .is_none_or(|d| d.trim().is_empty())
            {
                undocumented.push(format!("{name}.{}", f["name"].as_str().unwrap()));
            }
        }
    }
    assert!(
        undocumented.is_empty(),
        "fields without a description: {undocumented:?}"
    );
}

const MOODS: [&str; 6] = [
    "COMFORT",
    "ADVENTURE",
    "ROMANCE",
    "HORROR",
    "THOUGHTFUL",
    "COMEDY",
];

#[tokio::test]
async fn all_six_moods_give_pairwise_different_lists_within_their_genres() {
    let api = Api::new().await;
    let mut lists: Vec<(String, Vec<String>)> = Vec::new();
    for mood in MOODS {
        let data = api
            .ok(
                "query($m: Mood!) { recommendMoviesForMood(mood: $m) { id genre averageRating runtime } }",
                json!({ "m": mood }),
                None,
            )
            .await;
        let movies = data["recommendMoviesForMood"].as_array().unwrap();
        assert!(!movies.is_empty() && movies.len() <= 10, "{mood}");
        let profile = mood.parse::<moviedb::domain::Mood>().unwrap().profile();
        for m in movies {
            let genre: moviedb::domain::Genre = m["genre"].as_str().unwrap().parse().unwrap();
            assert!(profile.genres.contains(&genre), "{mood}: {m}");
            assert!(
                m["averageRating"].as_f64().unwrap() >= profile.min_rating,
                "{mood}: {m}"
            );
        }
        let ratings: Vec<f64> = movies
            .iter()
            .map(|m| m["averageRating"].as_f64().unwrap())
            .collect();
        assert!(
            ratings.windows(2).all(|w| w[0] >= w[1]),
            "{mood}: best rated first"
        );
        lists.push((
            mood.into(),
            movies
                .iter()
                .map(|m| m["id"].as_str().unwrap().to_owned())
                .collect(),
        ));
    }
    for (i, (a, la)) in lists.iter().enumerate() {
        for (b, lb) in &lists[i + 1..] {
            assert_ne!(la, lb, "{a} and {b} recommend the same list");
        }
    }
    let comfort = &lists[0].1;
    assert_eq!(
        comfort,
        &["56", "58", "16", "15", "57", "18", "14", "19", "59", "17"]
    );
    // With excludeWatched, an anonymous caller gets the same list.
    let anonymous = api
        .ok(
            "{ recommendMoviesForMood(mood: THOUGHTFUL, excludeWatched: true) { id } }",
            json!({}),
            None,
        )
        .await;
    let ids: Vec<&str> = anonymous["recommendMoviesForMood"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        lists[4].1.iter().map(String::as_str).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn the_summary_field_has_three_states_and_not_found() {
    let api = Api::new().await;
    let q = "query($id: ID!) { summarizeMovieReviews(movieId: $id) { movieId reviewCount summary themes averageScore } }";
    let none = api.ok(q, json!({ "id": "5" }), None).await["summarizeMovieReviews"].clone();
    assert_eq!(
        none,
        json!({"movieId": "5", "reviewCount": 0, "summary": null, "themes": [], "averageScore": null})
    );
    let two = api.ok(q, json!({ "id": "2" }), None).await["summarizeMovieReviews"].clone();
    assert_eq!(
        (two["summary"].clone(), two["averageScore"].clone()),
        (json!(null), json!(9.5))
    );
    let many = api.ok(q, json!({ "id": "1" }), None).await["summarizeMovieReviews"].clone();
    assert_eq!(
        many["summary"],
        "Reviewers respond favorably overall, averaging 9.4 out of 10."
    );
    assert_eq!(
        many["themes"],
        json!(["hope", "hour", "slow", "narration", "earns"])
    );
    assert_eq!(many["averageScore"], json!(9.38));
    let (message, class, ext) = api.fails(q, json!({ "id": "999" }), None).await;
    assert_eq!(
        (message.as_str(), class.as_str()),
        ("Movie not found with id: 999", "NOT_FOUND")
    );
    assert_eq!(ext["entityType"], "Movie");
}

#[tokio::test]
async fn movies_filter_sort_and_page() {
    let api = Api::new().await;
    let data = api
        .ok(
            r#"{ movies(filter: {genre: HORROR, minRating: 8}, sort: {field: RATING, order: DESC}, size: 2, page: 1) {
                content { title averageRating } totalElements totalPages currentPage size isFirst isLast hasNext hasPrevious } }"#,
            json!({}),
            None,
        )
        .await;
    let page = &data["movies"];
    // Alien and Psycho (8.5, ids 52 and 53) fill page 0.
    assert_eq!(page["totalElements"], 3);
    assert_eq!(page["totalPages"], 2);
    assert_eq!(
        page["content"],
        json!([{"title": "The Shining", "averageRating": 8.4}])
    );
    assert_eq!(
        (
            page["isFirst"].clone(),
            page["isLast"].clone(),
            page["hasNext"].clone(),
            page["hasPrevious"].clone()
        ),
        (json!(false), json!(true), json!(false), json!(true))
    );
    let search = api
        .ok(
            r#"{ search(query: "godfather") { __typename ... on Movie { title } } }"#,
            json!({}),
            None,
        )
        .await;
    assert_eq!(search["search"].as_array().unwrap().len(), 3);
    let by_ids = api
        .run(
            r#"{ moviesByIds(ids: ["1", "998", "2", "999"]) { id } }"#,
            json!({}),
            None,
        )
        .await;
    assert_eq!(
        by_ids["data"]["moviesByIds"],
        json!([{"id": "1"}, {"id": "2"}])
    );
    assert_eq!(
        by_ids["errors"][0]["message"],
        "Movies not found: [998, 999]"
    );
    assert_eq!(
        by_ids["errors"][0]["extensions"]["classification"],
        "NOT_FOUND"
    );
    let show = api
        .ok(
            r#"{ tvShow(id: "1") { title episodes { title } creators { name } } }"#,
            json!({}),
            None,
        )
        .await;
    assert_eq!(show["tvShow"]["episodes"].as_array().unwrap().len(), 22);
    assert_eq!(show["tvShow"]["creators"][0]["name"], "David Crane");
    assert_eq!(
        api.ok(r#"{ movie(id: "4040") { title } }"#, json!({}), None)
            .await["movie"],
        json!(null)
    );
}

#[tokio::test]
async fn bad_input_gets_a_classified_error_and_changes_nothing() {
    let api = Api::new().await;
    let cases: &[(&str, Option<&str>, &str, &str)] = &[
        (
            r#"{ movie(id: "abc") { title } }"#,
            None,
            "Invalid value 'abc' for id",
            "BAD_REQUEST",
        ),
        (
            "{ movies(size: 101) { totalElements } }",
            None,
            "size must be between 1 and 100 (got 101)",
            "BAD_REQUEST",
        ),
        (
            "{ movies(filter: {minYear: 1700}) { totalElements } }",
            None,
            "minYear must be between 1888 and 2100 (got 1700)",
            "BAD_REQUEST",
        ),
        (
            r#"mutation { createReview(input: {subject: {movieId: "5"}, score: 11}) { id } }"#,
            Some("mara"),
            "score must be between 1 and 10 (got 11)",
            "BAD_REQUEST",
        ),
        (
            r#"mutation { createReview(input: {subject: {movieId: "4040"}, score: 5}) { id } }"#,
            Some("mara"),
            "Movie not found with id: 4040",
            "NOT_FOUND",
        ),
        (
            r#"mutation { createReview(input: {subject: {movieId: "1"}, score: 5}) { id } }"#,
            Some("admin"),
            "You have already reviewed this title.",
            "BAD_REQUEST",
        ),
        (
            r#"mutation { createReview(input: {subject: {movieId: "5"}, score: 5}) { id } }"#,
            None,
            "You need to be signed in for this. Sign in with the login mutation and send the token as 'Authorization: Bearer <token>'.",
            "UNAUTHORIZED",
        ),
        (
            "{ watchlist { id } }",
            None,
            "You need to be signed in for this. Sign in with the login mutation and send the token as 'Authorization: Bearer <token>'.",
            "UNAUTHORIZED",
        ),
        (
            r#"mutation { setWatchStatus(itemId: "x", status: WATCHED) }"#,
            Some("user"),
            "itemId must be a numeric ID",
            "BAD_REQUEST",
        ),
        // Item 1 is admin's: to anyone else it does not exist.
        (
            r#"mutation { removeFromWatchlist(itemId: "1") }"#,
            Some("user"),
            "WatchlistItem not found with id: 1",
            "NOT_FOUND",
        ),
        (
            r#"mutation { addToWatchlist(subject: {movieId: "1", tvShowId: "1"}) { id } }"#,
            Some("mara"),
            "",
            "BAD_REQUEST",
        ),
        (
            r#"mutation { addToWatchlist(subject: {movieId: "38"}) { id } }"#,
            Some("user"),
            "This movie is already in your watch list",
            "BAD_REQUEST",
        ),
        (
            r#"mutation { addToWatchlist(subject: {tvShowId: "2"}) { id } }"#,
            Some("user"),
            "This show is already in your watch list",
            "BAD_REQUEST",
        ),
        (
            r#"mutation { addToWatchlist(subject: {movieId: "1"}) { id } }"#,
            Some("ghost"),
            "Entity AppUser not found for username: ghost",
            "NOT_FOUND",
        ),
        (
            r#"mutation { createMovie(input: {title: "", releaseYear: 2000, genre: DRAMA}) { id } }"#,
            Some("admin"),
            "title must be between 1 and 200 characters (got 0)",
            "BAD_REQUEST",
        ),
        (
            r#"mutation { createMovie(input: {title: "X", releaseYear: 2000, genre: DRAMA}) { id } }"#,
            Some("mara"),
            "Only an admin may change the catalogue.",
            "FORBIDDEN",
        ),
        (
            r#"mutation { updateMovie(input: {id: "1", runtime: 0}) { id } }"#,
            Some("admin"),
            "runtime must be between 1 and 600 (got 0)",
            "BAD_REQUEST",
        ),
        (
            r#"mutation { register(input: {username: "ab", email: "ab@example.com", password: "secret1"}) { token } }"#,
            None,
            "username must be between 3 and 50 characters (got 2)",
            "BAD_REQUEST",
        ),
        (
            r#"mutation { register(input: {username: "newbie", email: "not-an-email", password: "secret1"}) { token } }"#,
            None,
            "email must be a well-formed email address",
            "BAD_REQUEST",
        ),
        (
            r#"mutation { register(input: {username: "newbie", email: "n@example.com", password: "123"}) { token } }"#,
            None,
            "password must be between 6 and 100 characters (got 3)",
            "BAD_REQUEST",
        ),
        (
            r#"mutation { register(input: {username: "mara", email: "m2@example.com", password: "secret1"}) { token } }"#,
            None,
            "That username is already taken.",
            "BAD_REQUEST",
        ),
        (
            r#"mutation { login(input: {username: "mara", password: "wrong"}) { token } }"#,
            None,
            "Invalid credentials",
            "BAD_REQUEST",
        ),
        (
            r#"mutation { login(input: {username: "nobody", password: "password"}) { token } }"#,
            None,
            "Invalid credentials",
            "BAD_REQUEST",
        ),
        (
            "{ movies(filter: {genre: JAZZ}) { totalElements } }",
            None,
            "",
            "BAD_REQUEST",
        ),
    ];
    let before_user = api.watchlist("user").await;
    let before_shawshank = api
        .ok(r#"{ movie(id: "1") { reviewCount } }"#, json!({}), None)
        .await;
    for (query, viewer, message, class) in cases {
        let (got, got_class, _) = api.fails(query, json!({}), *viewer).await;
        if !message.is_empty() {
            assert_eq!(&got, message, "{query}");
        }
        assert_eq!(&got_class, class, "{query}: {got}");
    }
    assert_eq!(api.watchlist("user").await, before_user);
    assert!(api.watchlist("mara").await.as_array().unwrap().is_empty());
    assert_eq!(
        api.ok(r#"{ movie(id: "1") { reviewCount } }"#, json!({}), None)
            .await,
        before_shawshank
    );
    assert_eq!(
        api.ok(r#"{ movie(id: "1") { runtime } }"#, json!({}), None)
            .await["movie"]["runtime"],
        142
    );
    let login = api
        .run(
            r#"mutation { login(input: {username: "mara", password: "wrong"}) { token } }"#,
            json!({}),
            None,
        )
        .await;
    assert_eq!(login["errors"][0]["extensions"]["field"], "credentials");
    let wildcard = api
        .ok(
            r#"{ movies(filter: {titleContains: "%"}) { totalElements } }"#,
            json!({}),
            None,
        )
        .await;
    assert_eq!(
        wildcard["movies"]["totalElements"], 0,
        "LIKE wildcards are taken literally"
    );
    let movies = api
        .ok("{ movies { totalElements } }", json!({}), None)
        .await;
    assert_eq!(movies["movies"]["totalElements"], 67);
}

#[tokio::test]
async fn sign_in_register_and_the_watch_list_round_trip() {
    let api = Api::new().await;
    let login = api
        .ok(r#"mutation { login(input: {username: "user", password: "user123"}) { token user { username email role } } }"#, json!({}), None)
        .await;
    assert_eq!(
        login["login"]["user"],
        json!({"username": "user", "email": "user@moviedb.com", "role": "USER"})
    );
    let token = login["login"]["token"].as_str().unwrap();
    let claims = api
        .db
        .catalog
        .keys()
        .verify(token, chrono::Utc::now())
        .unwrap();
    assert_eq!(
        (claims.sub.as_str(), claims.exp - claims.iat),
        ("user", 86_400)
    );
    let registered = api
        .ok(r#"mutation { register(input: {username: "newbie", email: "newbie@example.com", password: "secret1"}) { token user { username role } } }"#, json!({}), None)
        .await;
    assert_eq!(
        registered["register"]["user"],
        json!({"username": "newbie", "role": "USER"})
    );
    let again = api
        .ok(
            r#"mutation { login(input: {username: "newbie", password: "secret1"}) { token } }"#,
            json!({}),
            None,
        )
        .await;
    assert!(again["login"]["token"].as_str().unwrap().len() > 20);

    let list = api.watchlist("user").await;
    let titles: BTreeSet<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["content"]["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        BTreeSet::from(["The Matrix", "The Shawshank Redemption", "Seinfeld"])
    );
    let added = api
        .ok(r#"mutation { addToWatchlist(subject: {tvShowId: "3"}, status: WATCHED) { id status content { __typename title } } }"#, json!({}), Some("newbie"))
        .await;
    assert_eq!(
        added["addToWatchlist"]["content"],
        json!({"__typename": "TvShow", "title": "Game of Thrones"})
    );
    let id = added["addToWatchlist"]["id"].as_str().unwrap().to_owned();
    let set = api
        .ok(
            "mutation($id: ID!) { setWatchStatus(itemId: $id, status: WANT_TO_WATCH) }",
            json!({"id": id}),
            Some("newbie"),
        )
        .await;
    assert_eq!(set["setWatchStatus"], true);
    assert_eq!(api.watchlist("newbie").await[0]["status"], "WANT_TO_WATCH");
    let removed = api
        .ok(
            "mutation($id: ID!) { removeFromWatchlist(itemId: $id) }",
            json!({"id": id}),
            Some("newbie"),
        )
        .await;
    assert_eq!(removed["removeFromWatchlist"], true);
    assert!(api.watchlist("newbie").await.as_array().unwrap().is_empty());
    // Emails are private: another user's reads as null, an admin sees it.
    let q = r#"{ movie(id: "36") { reviews { user { username email } } } }"#;
    let as_mara = api.ok(q, json!({}), Some("mara")).await;
    let reviewers = as_mara["movie"]["reviews"].as_array().unwrap();
    assert!(
        reviewers
            .iter()
            .all(|r| r["user"]["username"] == "mara" || r["user"]["email"].is_null())
    );
    let as_admin = api.ok(q, json!({}), Some("admin")).await;
    assert!(
        as_admin["movie"]["reviews"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["user"]["email"].is_string())
    );
}

#[tokio::test]
async fn reviews_and_admin_mutations() {
    let api = Api::new().await;
    let created = api
        .ok(r#"mutation { createReview(input: {subject: {movieId: "5"}, score: 8, comment: "Run, Forrest!"}) { id score movie { title } } }"#, json!({}), Some("mara"))
        .await;
    assert_eq!(created["createReview"]["movie"]["title"], "Forrest Gump");
    let id = created["createReview"]["id"].as_str().unwrap().to_owned();
    let (message, class, _) = api
        .fails(
            "mutation($id: ID!) { deleteReview(id: $id) { success } }",
            json!({"id": id}),
            Some("dan"),
        )
        .await;
    assert_eq!(
        (message.as_str(), class.as_str()),
        (
            "Only the review's author or an admin may delete it.",
            "FORBIDDEN"
        )
    );
    let deleted = api
        .ok(
            "mutation($id: ID!) { deleteReview(id: $id) { success deletedId } }",
            json!({"id": id}),
            Some("mara"),
        )
        .await;
    assert_eq!(
        deleted["deleteReview"],
        json!({"success": true, "deletedId": id})
    );

    let movie = api
        .ok(r#"mutation { createMovie(input: {title: "Paddington 2", releaseYear: 2017, genre: COMEDY, rating: 7.8, runtime: 103}) { id title } }"#, json!({}), Some("admin"))
        .await;
    assert_eq!(movie["createMovie"]["id"], "68");
    let updated = api
        .ok(r#"mutation { updateMovie(input: {id: "68", plot: "A bear in London."}) { title runtime plot } }"#, json!({}), Some("admin"))
        .await;
    assert_eq!(
        updated["updateMovie"],
        json!({"title": "Paddington 2", "runtime": 103, "plot": "A bear in London."})
    );
    let gone = api
        .ok(
            r#"mutation { deleteMovie(id: "68") { success message deletedId } }"#,
            json!({}),
            Some("admin"),
        )
        .await;
    assert_eq!(gone["deleteMovie"]["success"], true);
    let person = api
        .ok(
            r#"mutation { createPerson(input: {name: "Paul King", birthYear: 1978, countryCode: "GB"}) { id } }"#,
            json!({}),
            Some("admin"),
        )
        .await;
    let person_id = person["createPerson"]["id"].as_str().unwrap().to_owned();
    let renamed = api
        .ok(
            "mutation($id: ID!) { updatePerson(input: {id: $id, biography: \"Director of bears.\"}) { name birthYear biography countryCode } }",
            json!({ "id": person_id }),
            Some("admin"),
        )
        .await;
    assert_eq!(
        renamed["updatePerson"],
        json!({"name": "Paul King", "birthYear": 1978, "biography": "Director of bears.", "countryCode": "GB"})
    );
    let (message, class, _) = api
        .fails(
            r#"mutation { createPerson(input: {name: "X", countryCode: "gb"}) { id } }"#,
            json!({}),
            Some("admin"),
        )
        .await;
    assert_eq!(
        (message.as_str(), class.as_str()),
        (
            "countryCode must be an ISO 3166-1 alpha-2 code such as US or FR",
            "BAD_REQUEST"
        )
    );
    let found = api
        .ok(
            r#"{ searchPeople(name: "king") { name } }"#,
            json!({}),
            None,
        )
        .await;
    assert_eq!(found["searchPeople"], json!([{"name": "Paul King"}]));
    let linked = api
        .ok(
            r#"mutation { deletePerson(id: "1") { success error } }"#,
            json!({}),
            Some("admin"),
        )
        .await;
    assert_eq!(
        linked["deletePerson"],
        json!({"success": false, "error": "LINKED_TO_MOVIE"})
    );
    let forced = api
        .ok(
            r#"mutation { deletePerson(id: "1", force: true) { success deletedId } }"#,
            json!({}),
            Some("admin"),
        )
        .await;
    assert_eq!(
        forced["deletePerson"],
        json!({"success": true, "deletedId": "1"})
    );
    let directors = api
        .ok(
            r#"{ movie(id: "1") { directors { name } } }"#,
            json!({}),
            None,
        )
        .await;
    assert_eq!(directors["movie"]["directors"], json!([]));
}

#[tokio::test]
async fn a_server_failure_reads_as_internal_error_with_a_reference_and_no_internals() {
    let dir = std::env::temp_dir().join(format!("moviedb-test-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}", dir.join("db.sqlite").display());
    let store = moviedb::store::Store::open(&url).await.unwrap();
    // Break one row behind the API's back: a genre the schema does not know.
    let raw = sqlx::SqlitePool::connect(&url).await.unwrap();
    sqlx::query("UPDATE movies SET genre = 'OPERETTA' WHERE id = 7")
        .execute(&raw)
        .await
        .unwrap();
    raw.close().await;
    let catalog = moviedb::service::Catalog::new(store, moviedb::auth::TokenKeys::random());
    let schema = graphql::schema(catalog);
    let request = async_graphql::Request::new(r#"{ movie(id: "7") { title } }"#);
    let body = serde_json::to_value(graphql::execute(&schema, request, None).await).unwrap();
    let error = &body["errors"][0];
    assert_eq!(error["extensions"]["classification"], "INTERNAL_ERROR");
    let message = error["message"].as_str().unwrap();
    let reference = error["extensions"]["reference"].as_str().unwrap();
    assert_eq!(
        message,
        format!("An unexpected error occurred. Reference: {reference}")
    );
    assert_eq!(reference.len(), 32, "{reference}");
    assert!(
        reference.chars().all(|c| c.is_ascii_hexdigit()),
        "{reference}"
    );
    assert!(!body.to_string().contains("OPERETTA"), "{body}");
    // Other movies still read.
    let request = async_graphql::Request::new(r#"{ movie(id: "8") { title } }"#);
    let body = serde_json::to_value(graphql::execute(&schema, request, None).await).unwrap();
    assert_eq!(body["data"]["movie"]["title"], "Die Hard 2");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn recommendations_follow_catalogue_changes() {
    let api = Api::new().await;
    let q = "{ recommendMoviesForMood(mood: COMEDY) { title } }";
    let titles = |v: Value| -> Vec<String> {
        v["recommendMoviesForMood"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["title"].as_str().unwrap().to_owned())
            .collect()
    };
    let before = titles(api.ok(q, json!({}), None).await);
    assert_eq!(before.len(), 7);
    api.ok(
        r#"mutation { createMovie(input: {title: "Paddington 2", releaseYear: 2017, genre: COMEDY, rating: 9.9}) { id } }"#,
        json!({}),
        Some("admin"),
    )
    .await;
    let added = titles(api.ok(q, json!({}), None).await);
    assert_eq!(added[0], "Paddington 2");
    api.ok(
        r#"mutation { updateMovie(input: {id: "68", rating: 1.0}) { id } }"#,
        json!({}),
        Some("admin"),
    )
    .await;
    let lowered = titles(api.ok(q, json!({}), None).await);
    assert_eq!(
        lowered.last().unwrap(),
        "The Hangover",
        "a 1.0 falls below COMEDY's floor"
    );
    assert_eq!(lowered, before);
    api.ok(
        r#"mutation { deleteMovie(id: "14") { success } }"#,
        json!({}),
        Some("admin"),
    )
    .await;
    let without = titles(api.ok(q, json!({}), None).await);
    assert!(
        !without.contains(&"Groundhog Day".to_owned()),
        "{without:?}"
    );
}
