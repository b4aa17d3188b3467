//! The GraphQL API (async-graphql): queries, mutations, input checks, and errors classified in
//! `extensions.classification` (NOT_FOUND, BAD_REQUEST, UNAUTHORIZED, FORBIDDEN,
//! INTERNAL_ERROR with a reference and no internals).

use async_graphql::{
    Context, Enum, ErrorExtensions, ID, InputObject, Interface, Object, OneofObject, Schema,
    SimpleObject, Subscription, Union,
};
use chrono::{DateTime, Utc};

use crate::domain::{self, DomainError, Subject};
use crate::service::{Catalog, ServiceError, Viewer};
use crate::store::PersonDeletion;
use crate::summary::ReviewSummary;

/// The schema type.
pub type MovieSchema = Schema<QueryRoot, MutationRoot, SubscriptionRoot>;

/// Deepest query accepted.
pub const MAX_DEPTH: usize = 15;

/// Build the schema over `catalog`. Per-request data: an optional [`Viewer`].
pub fn schema(catalog: Catalog) -> MovieSchema {
    Schema::build(QueryRoot, MutationRoot, SubscriptionRoot)
        .data(catalog)
        .limit_depth(MAX_DEPTH)
        .limit_complexity(MAX_COMPLEXITY)
        .finish()
}

/// The most fields (each alias counted) one operation may select.
pub const MAX_COMPLEXITY: usize = 1_000;

/// The most aliases one document may use.
pub const MAX_ALIASES: usize = 30;

/// The longest query text accepted, in bytes.
pub const MAX_QUERY_BYTES: usize = 32 * 1024;

/// The largest response sent, in bytes of JSON.
pub const MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// Why a query was refused before it ran: too long, or too many aliases. Counted over the
/// parsed document (fragments included once each).
pub fn check_query_size(query: &str) -> Result<(), String> {
    use async_graphql::parser::types::{ExecutableDocument, Selection, SelectionSet};
    if query.len() > MAX_QUERY_BYTES {
        return Err(format!(
            "The query is {} bytes long; at most {MAX_QUERY_BYTES} are accepted.",
            query.len()
        ));
    }
    fn aliases(set: &SelectionSet) -> usize {
        set.items
            .iter()
            .map(|item| match &item.node {
                Selection::Field(field) => {
                    usize::from(field.node.alias.is_some())
                        + aliases(&field.node.selection_set.node)
                }
                Selection::InlineFragment(fragment) => aliases(&fragment.node.selection_set.node),
                Selection::FragmentSpread(_) => 0,
            })
            .sum()
    }
    // A document that does not parse is left to the executor, which says why.
    let Ok(document): Result<ExecutableDocument, _> = async_graphql::parser::parse_query(query)
    else {
        return Ok(());
    };
    let mut count: usize = document
        .fragments
        .values()
        .map(|fragment| aliases(&fragment.node.selection_set.node))
        .sum();
    for (_, operation) in document.operations.iter() {
        count += aliases(&operation.node.selection_set.node);
    }
    if count > MAX_ALIASES {
        return Err(format!(
            "The query uses {count} aliases; at most {MAX_ALIASES} are allowed."
        ));
    }
    Ok(())
}

/// The descriptions of the query and mutation fields, by field name, read from the schema's
/// SDL with the GraphQL parser.
pub fn root_field_descriptions(schema: &MovieSchema) -> std::collections::HashMap<String, String> {
    use async_graphql::parser::types::{TypeKind, TypeSystemDefinition};
    let Ok(document) = async_graphql::parser::parse_schema(schema.sdl()) else {
        return Default::default();
    };
    let mut descriptions = std::collections::HashMap::new();
    for definition in document.definitions {
        let TypeSystemDefinition::Type(ty) = definition else {
            continue;
        };
        let ty = ty.node;
        let root = matches!(ty.name.node.as_str(), "QueryRoot" | "MutationRoot");
        let TypeKind::Object(object) = ty.kind else {
            continue;
        };
        if !root {
            continue;
        }
        for field in object.fields {
            if let Some(description) = field.node.description {
                descriptions.insert(field.node.name.node.to_string(), description.node);
            }
        }
    }
    descriptions
}

/// Run one request as `viewer` (if any). Errors the parser or validator raised get the
/// BAD_REQUEST classification like every other caller error.
pub async fn execute(
    schema: &MovieSchema,
    request: async_graphql::Request,
    viewer: Option<Viewer>,
) -> async_graphql::Response {
    let request = match viewer {
        Some(viewer) => request.data(viewer),
        None => request,
    };
    let mut response = schema.execute(request).await;
    for error in &mut response.errors {
        let classified = error
            .extensions
            .as_ref()
            .is_some_and(|e| e.get("classification").is_some());
        if !classified {
            error
                .extensions
                .get_or_insert_with(Default::default)
                .set("classification", "BAD_REQUEST");
        }
    }
    response
}

fn classify(error: ServiceError) -> async_graphql::Error {
    match error {
        ServiceError::Domain(domain) => domain_error(domain),
        ServiceError::Internal(internal) => {
            let incident = backchannel::Incident::record("GraphQL request failed", &internal);
            async_graphql::Error::new(incident.message()).extend_with(|_, e| {
                e.set("classification", "INTERNAL_ERROR");
                e.set("reference", incident.reference());
            })
        }
    }
}

fn domain_error(error: DomainError) -> async_graphql::Error {
    let message = error.to_string();
    match error {
        DomainError::NotFound { entity, .. } => {
            async_graphql::Error::new(message).extend_with(|_, e| {
                e.set("classification", "NOT_FOUND");
                e.set("entityType", entity);
            })
        }
        DomainError::BadRequest { field, .. } => {
            async_graphql::Error::new(message).extend_with(|_, e| {
                e.set("classification", "BAD_REQUEST");
                if let Some(field) = &field {
                    e.set("field", field.as_str());
                }
            })
        }
        DomainError::Unauthorized(_) => async_graphql::Error::new(message)
            .extend_with(|_, e| e.set("classification", "UNAUTHORIZED")),
        DomainError::Forbidden(_) => async_graphql::Error::new(message)
            .extend_with(|_, e| e.set("classification", "FORBIDDEN")),
        DomainError::Throttled {
            retry_after_secs, ..
        } => async_graphql::Error::new(message).extend_with(|_, e| {
            e.set("classification", "TOO_MANY_REQUESTS");
            e.set("retryAfterSeconds", retry_after_secs);
        }),
    }
}

type GqlResult<T> = async_graphql::Result<T>;

trait Classified<T> {
    fn classified(self) -> GqlResult<T>;
}

impl<T, E: Into<ServiceError>> Classified<T> for Result<T, E> {
    fn classified(self) -> GqlResult<T> {
        self.map_err(|e| classify(e.into()))
    }
}

fn catalog<'a>(ctx: &Context<'a>) -> &'a Catalog {
    // The schema is always built with a catalog.
    ctx.data_unchecked::<Catalog>()
}

fn viewer<'a>(ctx: &Context<'a>) -> Option<&'a Viewer> {
    ctx.data_opt::<Viewer>()
}

/// An id argument that must be a number: "Invalid value 'x' for <arg>" otherwise.
fn numeric(arg: &str, id: &ID) -> GqlResult<i64> {
    id.trim().parse::<i64>().map_err(|_| {
        domain_error(DomainError::invalid(
            arg,
            format!("Invalid value '{}' for {arg}", id.as_str()),
        ))
    })
}

// ---- enums ----

/// A movie's or show's genre.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "domain::Genre", name = "Genre")]
enum GenreGql {
    Action,
    Comedy,
    Crime,
    Drama,
    Fantasy,
    Horror,
    Mystery,
    Romance,
    Scifi,
    Thriller,
    War,
    Western,
}

/// What the viewer feels like watching.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "domain::Mood", name = "Mood")]
enum MoodGql {
    /// Warm, familiar, easy to watch: comedies, romances and shorter fantasies.
    Comfort,
    /// Big journeys: action, fantasy, science fiction and westerns.
    Adventure,
    /// Love stories and heartfelt drama.
    Romance,
    /// Fear and suspense: horror, thrillers and mysteries.
    Horror,
    /// Films to think about: drama, science fiction, war, mystery and crime, rated 7.5+.
    Thoughtful,
    /// Laughs: comedies only.
    Comedy,
}

/// Where a title stands on a watch list.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "domain::WatchStatus", name = "WatchStatus")]
enum WatchStatusGql {
    /// Not seen yet (the default).
    WantToWatch,
    /// Already seen.
    Watched,
}

/// An account's role.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "domain::Role", name = "Role")]
enum RoleGql {
    /// A regular account.
    User,
    /// An administrator.
    Admin,
}

/// The field a movie page is sorted by.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "domain::MovieSortField", name = "MovieSortField")]
enum MovieSortFieldGql {
    /// Title, case-insensitive.
    Title,
    /// Release year.
    ReleaseYear,
    /// Average rating.
    Rating,
    /// Runtime.
    Runtime,
}

/// Sort direction.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "domain::SortOrder", name = "SortOrder")]
enum SortOrderGql {
    /// Ascending.
    Asc,
    /// Descending.
    Desc,
}

/// Why a person could not be deleted.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
enum DeletePersonError {
    /// The person is credited on a movie.
    LinkedToMovie,
    /// The person is credited on a TV show.
    LinkedToTvShow,
}

// ---- objects ----

/// A movie.
#[derive(Clone, Debug)]
pub struct MovieGql(domain::Movie);

#[Object(name = "Movie")]
impl MovieGql {
    /// The movie's id.
    async fn id(&self) -> ID {
        ID(self.0.id.to_string())
    }
    /// The title.
    async fn title(&self) -> String {
        self.0.title.clone()
    }
    /// Year of release.
    async fn release_year(&self) -> i32 {
        self.0.release_year
    }
    /// Genre.
    async fn genre(&self) -> GenreGql {
        self.0.genre.into()
    }
    /// Average rating from 0 to 10.
    async fn average_rating(&self) -> Option<f64> {
        self.0.rating
    }
    /// Average rating from 0 to 10.
    #[graphql(deprecation = "Use averageRating.")]
    async fn rating(&self) -> Option<f64> {
        self.0.rating
    }
    /// Runtime in minutes, if known.
    async fn runtime(&self) -> Option<i32> {
        self.0.runtime
    }
    /// What the movie is about.
    async fn plot(&self) -> Option<String> {
        self.0.plot.clone()
    }
    /// Poster image URL, if known.
    async fn poster_url(&self) -> Option<String> {
        self.0.poster_url.clone()
    }
    /// The Movie Database (TMDB) id.
    async fn tmdb_id(&self) -> Option<ID> {
        self.0.tmdb_id.map(|id| ID(id.to_string()))
    }
    /// Who directed it.
    async fn directors(&self, ctx: &Context<'_>) -> GqlResult<Vec<PersonGql>> {
        let people = catalog(ctx)
            .store()
            .directors(self.0.id)
            .await
            .classified()?;
        Ok(people.into_iter().map(PersonGql).collect())
    }
    /// Who plays whom, in billing order.
    async fn cast(&self, ctx: &Context<'_>) -> GqlResult<Vec<CastCredit>> {
        let credits = catalog(ctx)
            .store()
            .movie_cast(self.0.id)
            .await
            .classified()?;
        Ok(credits.into_iter().map(CastCredit).collect())
    }
    /// Reviews, oldest first.
    async fn reviews(&self, ctx: &Context<'_>) -> GqlResult<Vec<ReviewGql>> {
        let reviews = catalog(ctx)
            .store()
            .reviews(Subject::Movie(self.0.id))
            .await
            .classified()?;
        Ok(reviews.into_iter().map(ReviewGql).collect())
    }
    /// How many reviews there are.
    async fn review_count(&self, ctx: &Context<'_>) -> GqlResult<i32> {
        let reviews = catalog(ctx)
            .store()
            .reviews(Subject::Movie(self.0.id))
            .await
            .classified()?;
        Ok(reviews.len() as i32)
    }
}

/// A TV show.
#[derive(Clone, Debug)]
pub struct TvShowGql(domain::TvShow);

#[Object(name = "TvShow")]
impl TvShowGql {
    /// The show's id.
    async fn id(&self) -> ID {
        ID(self.0.id.to_string())
    }
    /// The title.
    async fn title(&self) -> String {
        self.0.title.clone()
    }
    /// Genre.
    async fn genre(&self) -> GenreGql {
        self.0.genre.into()
    }
    /// Average rating from 0 to 10.
    async fn average_rating(&self) -> Option<f64> {
        self.0.rating
    }
    /// Average rating from 0 to 10.
    #[graphql(deprecation = "Use averageRating.")]
    async fn rating(&self) -> Option<f64> {
        self.0.rating
    }
    /// Poster image URL, if known.
    async fn poster_url(&self) -> Option<String> {
        self.0.poster_url.clone()
    }
    /// The Movie Database (TMDB) id.
    async fn tmdb_id(&self) -> Option<ID> {
        self.0.tmdb_id.map(|id| ID(id.to_string()))
    }
    /// First year on air.
    async fn start_year(&self) -> i32 {
        self.0.start_year
    }
    /// Last year on air; null while still airing.
    async fn end_year(&self) -> Option<i32> {
        self.0.end_year
    }
    /// Number of seasons.
    async fn seasons(&self) -> i32 {
        self.0.seasons
    }
    /// What the show is about.
    async fn plot(&self) -> Option<String> {
        self.0.plot.clone()
    }
    /// Who created it.
    async fn creators(&self, ctx: &Context<'_>) -> GqlResult<Vec<PersonGql>> {
        let people = catalog(ctx)
            .store()
            .creators(self.0.id)
            .await
            .classified()?;
        Ok(people.into_iter().map(PersonGql).collect())
    }
    /// Who plays whom.
    async fn cast(&self, ctx: &Context<'_>) -> GqlResult<Vec<CastCredit>> {
        let credits = catalog(ctx)
            .store()
            .show_cast(self.0.id)
            .await
            .classified()?;
        Ok(credits.into_iter().map(CastCredit).collect())
    }
    /// Episodes by season and number.
    async fn episodes(&self, ctx: &Context<'_>) -> GqlResult<Vec<EpisodeGql>> {
        let episodes = catalog(ctx)
            .store()
            .episodes(self.0.id)
            .await
            .classified()?;
        Ok(episodes.into_iter().map(EpisodeGql).collect())
    }
    /// Reviews, oldest first.
    async fn reviews(&self, ctx: &Context<'_>) -> GqlResult<Vec<ReviewGql>> {
        let reviews = catalog(ctx)
            .store()
            .reviews(Subject::TvShow(self.0.id))
            .await
            .classified()?;
        Ok(reviews.into_iter().map(ReviewGql).collect())
    }
}

/// A movie or a TV show.
#[derive(Interface)]
#[graphql(
    name = "Content",
    field(name = "title", ty = "String", desc = "The title."),
    field(name = "genre", ty = "GenreGql", desc = "Genre."),
    field(
        name = "average_rating",
        ty = "Option<f64>",
        desc = "Average rating from 0 to 10."
    ),
    field(
        name = "poster_url",
        ty = "Option<String>",
        desc = "Poster image URL, if known."
    )
)]
enum Content {
    /// A movie.
    Movie(MovieGql),
    /// A TV show.
    TvShow(TvShowGql),
}

/// One episode of a TV show.
struct EpisodeGql(domain::Episode);

#[Object(name = "Episode")]
impl EpisodeGql {
    /// The episode's id.
    async fn id(&self) -> ID {
        ID(self.0.id.to_string())
    }
    /// Season number, from 1.
    async fn season_number(&self) -> i32 {
        self.0.season_number
    }
    /// Number within the season, from 1.
    async fn episode_number(&self) -> i32 {
        self.0.episode_number
    }
    /// The title.
    async fn title(&self) -> String {
        self.0.title.clone()
    }
    /// What happens.
    async fn overview(&self) -> Option<String> {
        self.0.overview.clone()
    }
    /// Runtime in minutes.
    async fn runtime(&self) -> Option<i32> {
        self.0.runtime
    }
    /// Year first aired.
    async fn air_year(&self) -> Option<i32> {
        self.0.air_year
    }
}

/// A person in front of or behind the camera.
#[derive(Clone, Debug)]
pub struct PersonGql(domain::Person);

#[Object(name = "Person")]
impl PersonGql {
    /// The person's id.
    async fn id(&self) -> ID {
        ID(self.0.id.to_string())
    }
    /// Name.
    async fn name(&self) -> String {
        self.0.name.clone()
    }
    /// Year of birth.
    async fn birth_year(&self) -> Option<i32> {
        self.0.birth_year
    }
    /// One-line biography.
    async fn biography(&self) -> Option<String> {
        self.0.biography.clone()
    }
    /// Portrait URL.
    async fn photo_url(&self) -> Option<String> {
        self.0.photo_url.clone()
    }
    /// ISO 3166-1 alpha-2 country code.
    async fn country_code(&self) -> Option<String> {
        self.0.country_code.clone()
    }
    /// Movies this person directed, oldest first.
    async fn directed_movies(&self, ctx: &Context<'_>) -> GqlResult<Vec<MovieGql>> {
        let movies = catalog(ctx)
            .store()
            .directed_movies(self.0.id)
            .await
            .classified()?;
        Ok(movies.into_iter().map(MovieGql).collect())
    }
    /// Movies this person acted in, with the character, oldest first.
    async fn movie_cast_credits(&self, ctx: &Context<'_>) -> GqlResult<Vec<PersonMovieCredit>> {
        let credits = catalog(ctx)
            .store()
            .acted_movies(self.0.id)
            .await
            .classified()?;
        Ok(credits
            .into_iter()
            .map(|(movie, character)| PersonMovieCredit {
                movie: MovieGql(movie),
                character_name: character,
            })
            .collect())
    }
}

/// A role someone played in a movie or show.
struct CastCredit(domain::Credit);

#[Object]
impl CastCredit {
    /// Who played it.
    async fn person(&self) -> PersonGql {
        PersonGql(self.0.person.clone())
    }
    /// The character's name.
    async fn character_name(&self) -> Option<String> {
        self.0.character_name.clone()
    }
}

/// A movie a person acted in.
#[derive(SimpleObject)]
struct PersonMovieCredit {
    /// The movie.
    movie: MovieGql,
    /// The character they played.
    character_name: Option<String>,
}

/// A user's review of a title.
struct ReviewGql(domain::Review);

#[Object(name = "Review")]
impl ReviewGql {
    /// The review's id.
    async fn id(&self) -> ID {
        ID(self.0.id.to_string())
    }
    /// Score from 1 to 10.
    async fn score(&self) -> i32 {
        self.0.score
    }
    /// The reviewer's words.
    async fn comment(&self) -> Option<String> {
        self.0.comment.clone()
    }
    /// When it was written.
    async fn created_at(&self) -> DateTime<Utc> {
        self.0.created_at
    }
    /// Who wrote it.
    async fn user(&self, ctx: &Context<'_>) -> GqlResult<Option<UserGql>> {
        let user = catalog(ctx)
            .store()
            .user(self.0.user_id)
            .await
            .classified()?;
        Ok(user.map(|u| UserGql(u, false)))
    }
    /// The movie reviewed, if it is a movie review.
    async fn movie(&self, ctx: &Context<'_>) -> GqlResult<Option<MovieGql>> {
        match self.0.subject {
            Subject::Movie(id) => Ok(catalog(ctx)
                .store()
                .movie(id)
                .await
                .classified()?
                .map(MovieGql)),
            Subject::TvShow(_) => Ok(None),
        }
    }
    /// The show reviewed, if it is a show review.
    async fn tv_show(&self, ctx: &Context<'_>) -> GqlResult<Option<TvShowGql>> {
        match self.0.subject {
            Subject::TvShow(id) => Ok(catalog(ctx)
                .store()
                .tv_show(id)
                .await
                .classified()?
                .map(TvShowGql)),
            Subject::Movie(_) => Ok(None),
        }
    }
}

/// An account; `self_view` when it is the account that just signed in.
struct UserGql(domain::User, bool);

#[Object(name = "User")]
impl UserGql {
    /// The account's id.
    async fn id(&self) -> ID {
        ID(self.0.id.to_string())
    }
    /// The name used to sign in.
    async fn username(&self) -> String {
        self.0.username.clone()
    }
    /// Email address; shown only to the account itself and to admins.
    async fn email(&self, ctx: &Context<'_>) -> Option<String> {
        let allowed = self.1
            || viewer(ctx)
                .is_some_and(|v| v.username == self.0.username || v.role == domain::Role::Admin);
        allowed.then(|| self.0.email.clone())
    }
    /// Role.
    async fn role(&self) -> RoleGql {
        self.0.role.into()
    }
}

/// One entry of the signed-in user's watch list.
struct WatchlistItemGql(domain::WatchlistItem);

#[Object(name = "WatchlistItem")]
impl WatchlistItemGql {
    /// The entry's id.
    async fn id(&self) -> ID {
        ID(self.0.id.to_string())
    }
    /// The movie or show.
    async fn content(&self, ctx: &Context<'_>) -> GqlResult<Content> {
        let store = catalog(ctx).store();
        let content = match self.0.subject {
            Subject::Movie(id) => store
                .movie(id)
                .await
                .classified()?
                .map(|m| Content::Movie(MovieGql(m))),
            Subject::TvShow(id) => store
                .tv_show(id)
                .await
                .classified()?
                .map(|s| Content::TvShow(TvShowGql(s))),
        };
        content.ok_or_else(|| {
            classify(ServiceError::Domain(DomainError::not_found(
                "Content", self.0.id,
            )))
        })
    }
    /// Watched or not yet.
    async fn status(&self) -> WatchStatusGql {
        self.0.status.into()
    }
}

/// A movie's review summary.
struct MovieReviewSummary(ReviewSummary);

#[Object]
impl MovieReviewSummary {
    /// The movie.
    async fn movie_id(&self) -> ID {
        ID(self.0.movie_id.clone())
    }
    /// How many reviews it has.
    async fn review_count(&self) -> i32 {
        self.0.review_count as i32
    }
    /// A few sentences on what reviewers think; null below three reviews.
    async fn summary(&self) -> Option<String> {
        self.0.summary.clone()
    }
    /// Recurring themes; empty without a summary.
    async fn themes(&self) -> Vec<String> {
        self.0.themes.clone()
    }
    /// Mean score; null without reviews.
    async fn average_score(&self) -> Option<f64> {
        self.0.average_score
    }
}

/// One result of a search.
#[derive(Union)]
enum SearchResult {
    /// A movie.
    Movie(MovieGql),
    /// A person.
    Person(PersonGql),
    /// A TV show.
    TvShow(TvShowGql),
}

/// Paging facts shared by every page type.
#[derive(SimpleObject)]
struct PageInfo {
    /// Matches over all pages.
    total_elements: i64,
    /// Number of pages.
    total_pages: i64,
    /// This page, from 0.
    current_page: i64,
    /// Page size asked for.
    size: i64,
}

fn page_info(total: i64, page: domain::PageRequest) -> PageInfo {
    PageInfo {
        total_elements: total,
        total_pages: (total + page.size - 1) / page.size,
        current_page: page.page,
        size: page.size,
    }
}

/// One page of movies.
#[derive(SimpleObject)]
struct MoviePage {
    /// The movies on this page.
    content: Vec<MovieGql>,
    #[graphql(flatten)]
    info: PageInfo,
    /// Whether this is the first page.
    is_first: bool,
    /// Whether this is the last page.
    is_last: bool,
    /// Whether a later page exists.
    has_next: bool,
    /// Whether an earlier page exists.
    has_previous: bool,
}

/// One page of people.
#[derive(SimpleObject)]
struct PersonPage {
    /// The people on this page.
    content: Vec<PersonGql>,
    #[graphql(flatten)]
    info: PageInfo,
}

/// One page of TV shows.
#[derive(SimpleObject)]
struct TvShowPage {
    /// The shows on this page.
    content: Vec<TvShowGql>,
    #[graphql(flatten)]
    info: PageInfo,
}

/// A signed-in session.
#[derive(SimpleObject)]
struct AuthResponse {
    /// Bearer token, valid for 24 hours; send it as `Authorization: Bearer <token>`.
    token: String,
    /// The account.
    user: UserGql,
}

/// The outcome of deleting a movie.
#[derive(SimpleObject)]
struct DeleteMovieResult {
    /// Whether a movie was deleted.
    success: bool,
    /// What happened.
    message: String,
    /// The deleted movie's id.
    deleted_id: Option<ID>,
}

/// The outcome of deleting a person.
#[derive(SimpleObject)]
struct DeletePersonResult {
    /// Whether the person was deleted.
    success: bool,
    /// Why not, when they are still credited.
    error: Option<DeletePersonError>,
    /// The deleted person's id.
    deleted_id: Option<ID>,
}

/// The outcome of deleting a review.
#[derive(SimpleObject)]
struct DeleteReviewResult {
    /// Whether the review was deleted.
    success: bool,
    /// The deleted review's id.
    deleted_id: Option<ID>,
}

// ---- inputs ----

/// Filters on a movie listing; omitted fields match everything.
#[derive(InputObject, Default)]
struct MovieFilter {
    /// Only this genre.
    genre: Option<GenreGql>,
    /// Rating at least (0–10).
    min_rating: Option<f64>,
    /// Rating at most (0–10).
    max_rating: Option<f64>,
    /// Released in or after (1888–2100).
    min_year: Option<i32>,
    /// Released in or before (1888–2100).
    max_year: Option<i32>,
    /// Runtime at least, in minutes; movies of unknown runtime are left out.
    min_runtime: Option<i32>,
    /// Runtime at most, in minutes; movies of unknown runtime are left out.
    max_runtime: Option<i32>,
    /// Title contains this text, case-insensitive.
    title_contains: Option<String>,
}

/// How to sort a movie listing.
#[derive(InputObject)]
struct MovieSort {
    /// Field to sort by.
    field: MovieSortFieldGql,
    /// Direction (ascending by default).
    #[graphql(default_with = "SortOrderGql::Asc")]
    order: SortOrderGql,
}

/// Credentials.
#[derive(InputObject)]
struct LoginInput {
    /// Username.
    username: String,
    /// Password.
    password: String,
}

/// A new account.
#[derive(InputObject)]
struct RegisterInput {
    /// 3–50 characters: letters, digits, '.', '_' and '-'.
    username: String,
    /// Email address, at most 120 characters.
    email: String,
    /// 6–100 characters.
    password: String,
}

/// Exactly one of a movie or a show, for a review.
#[derive(OneofObject)]
enum ReviewSubjectInput {
    /// A movie's id.
    MovieId(ID),
    /// A TV show's id.
    TvShowId(ID),
}

/// Exactly one of a movie or a show, for a watch-list entry.
#[derive(OneofObject)]
enum WatchlistSubjectInput {
    /// A movie's id.
    MovieId(ID),
    /// A TV show's id.
    TvShowId(ID),
}

fn review_subject(subject: &ReviewSubjectInput) -> GqlResult<Subject> {
    Ok(match subject {
        ReviewSubjectInput::MovieId(id) => Subject::Movie(numeric("movieId", id)?),
        ReviewSubjectInput::TvShowId(id) => Subject::TvShow(numeric("tvShowId", id)?),
    })
}

fn watchlist_subject(subject: &WatchlistSubjectInput) -> GqlResult<Subject> {
    Ok(match subject {
        WatchlistSubjectInput::MovieId(id) => Subject::Movie(numeric("movieId", id)?),
        WatchlistSubjectInput::TvShowId(id) => Subject::TvShow(numeric("tvShowId", id)?),
    })
}

/// A new review.
#[derive(InputObject)]
struct CreateReviewInput {
    /// What is reviewed.
    subject: ReviewSubjectInput,
    /// Score from 1 to 10.
    score: i32,
    /// The reviewer's words, at most 2000 characters.
    comment: Option<String>,
}

/// A new movie.
#[derive(InputObject)]
struct CreateMovieInput {
    /// Title, 1–200 characters.
    title: String,
    /// Year of release, 1888–2100.
    release_year: i32,
    /// Genre.
    genre: GenreGql,
    /// Rating from 0 to 10.
    rating: Option<f64>,
    /// Runtime in minutes, 1–600.
    runtime: Option<i32>,
    /// Plot, at most 2000 characters.
    plot: Option<String>,
    /// Poster URL, at most 500 characters.
    poster_url: Option<String>,
    /// TMDB id.
    tmdb_id: Option<i64>,
}

/// Changes to a movie; omitted fields stay as they are.
#[derive(InputObject)]
struct UpdateMovieInput {
    /// The movie to change.
    id: ID,
    /// Title, 1–200 characters.
    title: Option<String>,
    /// Year of release, 1888–2100.
    release_year: Option<i32>,
    /// Genre.
    genre: Option<GenreGql>,
    /// Rating from 0 to 10.
    rating: Option<f64>,
    /// Runtime in minutes, 1–600.
    runtime: Option<i32>,
    /// Plot, at most 2000 characters.
    plot: Option<String>,
    /// Poster URL, at most 500 characters.
    poster_url: Option<String>,
    /// TMDB id.
    tmdb_id: Option<i64>,
}

/// A new person.
#[derive(InputObject)]
struct CreatePersonInput {
    /// Name, 1–200 characters.
    name: String,
    /// Year of birth, 1800–2100.
    birth_year: Option<i32>,
    /// One-line biography, at most 2000 characters.
    biography: Option<String>,
    /// Portrait URL, at most 500 characters.
    photo_url: Option<String>,
    /// ISO 3166-1 alpha-2 country code, such as US.
    country_code: Option<String>,
}

/// Changes to a person; omitted fields stay as they are.
#[derive(InputObject)]
struct UpdatePersonInput {
    /// The person to change.
    id: ID,
    /// Name, 1–200 characters.
    name: Option<String>,
    /// Year of birth, 1800–2100.
    birth_year: Option<i32>,
    /// One-line biography, at most 2000 characters.
    biography: Option<String>,
    /// Portrait URL, at most 500 characters.
    photo_url: Option<String>,
    /// ISO 3166-1 alpha-2 country code, such as US.
    country_code: Option<String>,
}

// ---- roots ----

/// Read operations.
#[derive(Debug)]
pub struct QueryRoot;

#[Object]
impl QueryRoot {
    /// One movie by id; null when there is no such movie.
    async fn movie(&self, ctx: &Context<'_>, id: ID) -> GqlResult<Option<MovieGql>> {
        let id = numeric("id", &id)?;
        Ok(catalog(ctx).movie(id).await.classified()?.map(MovieGql))
    }

    /// Every movie at once.
    #[graphql(deprecation = "Unbounded; use movies with paging.")]
    async fn movies_all(&self, ctx: &Context<'_>) -> GqlResult<Vec<MovieGql>> {
        let movies = catalog(ctx).store().all_movies().await.classified()?;
        Ok(movies.into_iter().map(MovieGql).collect())
    }

    /// Movies, filtered, sorted (by title unless told) and paged (size 1–100).
    async fn movies(
        &self,
        ctx: &Context<'_>,
        filter: Option<MovieFilter>,
        #[graphql(default = 0)] page: i64,
        #[graphql(default = 10)] size: i64,
        sort: Option<MovieSort>,
    ) -> GqlResult<MoviePage> {
        let page = domain::PageRequest::new(page, size, 100).map_err(domain_error)?;
        let f = filter.unwrap_or_default();
        let filter = domain::MovieFilter {
            genre: f.genre.map(Into::into),
            min_rating: f.min_rating,
            max_rating: f.max_rating,
            min_year: f.min_year,
            max_year: f.max_year,
            min_runtime: f.min_runtime,
            max_runtime: f.max_runtime,
            title_contains: f.title_contains,
        };
        filter.validate().map_err(domain_error)?;
        let sort = sort.map(|s| (s.field.into(), s.order.into()));
        let (movies, total) = catalog(ctx)
            .store()
            .movies_page(&filter, page, sort)
            .await
            .classified()?;
        let info = page_info(total, page);
        let last_page = (info.total_pages - 1).max(0);
        Ok(MoviePage {
            content: movies.into_iter().map(MovieGql).collect(),
            is_first: page.page == 0,
            is_last: page.page >= last_page,
            has_next: page.page < last_page,
            has_previous: page.page > 0,
            info,
        })
    }

    /// The movies with these ids that exist; missing ones are named in a NOT_FOUND error
    /// next to the data.
    async fn movies_by_ids(&self, ctx: &Context<'_>, ids: Vec<ID>) -> GqlResult<Vec<MovieGql>> {
        let wanted = ids
            .iter()
            .map(|id| numeric("ids", id))
            .collect::<GqlResult<Vec<_>>>()?;
        let movies = catalog(ctx)
            .store()
            .movies_by_ids(&wanted)
            .await
            .classified()?;
        let missing: Vec<i64> = wanted
            .iter()
            .filter(|id| !movies.iter().any(|m| m.id == **id))
            .copied()
            .collect();
        if !missing.is_empty() {
            let error = DomainError::NotFound {
                entity: "Movie",
                message: format!("Movies not found: {missing:?}"),
            };
            ctx.add_error(domain_error(error).into_server_error(ctx.item.pos));
        }
        Ok(movies.into_iter().map(MovieGql).collect())
    }

    /// People by id, paged (size 1–100, 20 by default).
    async fn people(
        &self,
        ctx: &Context<'_>,
        #[graphql(default = 0)] page: i64,
        #[graphql(default = 20)] size: i64,
    ) -> GqlResult<PersonPage> {
        let page = domain::PageRequest::new(page, size, 100).map_err(domain_error)?;
        let (people, total) = catalog(ctx).store().people_page(page).await.classified()?;
        Ok(PersonPage {
            content: people.into_iter().map(PersonGql).collect(),
            info: page_info(total, page),
        })
    }

    /// One person by id; null when there is no such person.
    async fn person(&self, ctx: &Context<'_>, id: ID) -> GqlResult<Option<PersonGql>> {
        let id = numeric("id", &id)?;
        Ok(catalog(ctx)
            .store()
            .person(id)
            .await
            .classified()?
            .map(PersonGql))
    }

    /// Movies, people and shows whose title or name contains the text (at most 10 of each).
    async fn search(&self, ctx: &Context<'_>, query: String) -> GqlResult<Vec<SearchResult>> {
        let text = query.trim();
        domain::check_length("query", text, 1, 200).map_err(domain_error)?;
        let store = catalog(ctx).store();
        let mut results: Vec<SearchResult> = Vec::new();
        for m in store.search_movies(text, 10).await.classified()? {
            results.push(SearchResult::Movie(MovieGql(m)));
        }
        for p in store.search_people(text, 10).await.classified()? {
            results.push(SearchResult::Person(PersonGql(p)));
        }
        for s in store.search_shows(text, 10).await.classified()? {
            results.push(SearchResult::TvShow(TvShowGql(s)));
        }
        Ok(results)
    }

    /// Movies whose title contains the text (at most 20).
    #[graphql(deprecation = "Use search, or movies with filter.titleContains.")]
    async fn search_movies(&self, ctx: &Context<'_>, title: String) -> GqlResult<Vec<MovieGql>> {
        domain::check_length("title", title.trim(), 1, 200).map_err(domain_error)?;
        let movies = catalog(ctx)
            .store()
            .search_movies(title.trim(), 20)
            .await
            .classified()?;
        Ok(movies.into_iter().map(MovieGql).collect())
    }

    /// People whose name contains the text (at most 20).
    #[graphql(deprecation = "Use search.")]
    async fn search_people(&self, ctx: &Context<'_>, name: String) -> GqlResult<Vec<PersonGql>> {
        domain::check_length("name", name.trim(), 1, 200).map_err(domain_error)?;
        let people = catalog(ctx)
            .store()
            .search_people(name.trim(), 20)
            .await
            .classified()?;
        Ok(people.into_iter().map(PersonGql).collect())
    }

    /// One TV show by id; null when there is no such show.
    async fn tv_show(&self, ctx: &Context<'_>, id: ID) -> GqlResult<Option<TvShowGql>> {
        let id = numeric("id", &id)?;
        Ok(catalog(ctx)
            .store()
            .tv_show(id)
            .await
            .classified()?
            .map(TvShowGql))
    }

    /// TV shows by id, paged (size 1–100, 10 by default).
    async fn tv_shows(
        &self,
        ctx: &Context<'_>,
        #[graphql(default = 0)] page: i64,
        #[graphql(default = 10)] size: i64,
    ) -> GqlResult<TvShowPage> {
        let page = domain::PageRequest::new(page, size, 100).map_err(domain_error)?;
        let (shows, total) = catalog(ctx)
            .store()
            .tv_shows_page(page)
            .await
            .classified()?;
        Ok(TvShowPage {
            content: shows.into_iter().map(TvShowGql).collect(),
            info: page_info(total, page),
        })
    }

    /// The signed-in user's watch list, oldest entry first. Needs sign-in.
    async fn watchlist(&self, ctx: &Context<'_>) -> GqlResult<Vec<WatchlistItemGql>> {
        let items = catalog(ctx).watchlist(viewer(ctx)).await.classified()?;
        Ok(items.into_iter().map(WatchlistItemGql).collect())
    }

    /// Up to 10 movies that fit a mood, best rated first (ties broken by id, so the list is
    /// stable). With excludeWatched, a signed-in caller's WATCHED movies are left out; for an
    /// anonymous caller it changes nothing. Map the person's words to the closest mood.
    async fn recommend_movies_for_mood(
        &self,
        ctx: &Context<'_>,
        mood: MoodGql,
        #[graphql(default = false)] exclude_watched: bool,
    ) -> GqlResult<Vec<MovieGql>> {
        let movies = catalog(ctx)
            .recommend(mood.into(), exclude_watched, viewer(ctx))
            .await
            .classified()?;
        Ok(movies.into_iter().map(MovieGql).collect())
    }

    /// What reviewers say about one movie. Call it once the person has picked a movie. With
    /// no reviews, summary and averageScore are null; with one or two, only the average is
    /// given; from three on, a short summary and recurring themes too. A null summary means
    /// there are not enough reviews yet.
    async fn summarize_movie_reviews(
        &self,
        ctx: &Context<'_>,
        movie_id: ID,
    ) -> GqlResult<MovieReviewSummary> {
        let summary = catalog(ctx)
            .summarize_reviews(movie_id.as_str())
            .await
            .classified()?;
        Ok(MovieReviewSummary(summary))
    }
}

/// A review just written.
#[derive(SimpleObject)]
struct ReviewNotification {
    /// The review.
    review: ReviewGql,
    /// The movie reviewed, if a movie.
    movie_id: Option<ID>,
    /// The show reviewed, if a show.
    tv_show_id: Option<ID>,
    /// The title reviewed.
    title: String,
}

/// Live events, over WebSocket (graphql-transport-ws or graphql-ws) on `/graphql`.
#[derive(Debug)]
pub struct SubscriptionRoot;

#[Subscription]
impl SubscriptionRoot {
    /// Each review as it is written; give movieId or tvShowId to follow one title.
    async fn review_added(
        &self,
        ctx: &Context<'_>,
        movie_id: Option<ID>,
        tv_show_id: Option<ID>,
    ) -> async_graphql::Result<impl futures::Stream<Item = ReviewNotification> + use<>> {
        use futures::StreamExt;
        let movie = movie_id
            .as_ref()
            .map(|id| numeric("movieId", id))
            .transpose()?;
        let show = tv_show_id
            .as_ref()
            .map(|id| numeric("tvShowId", id))
            .transpose()?;
        let catalog = catalog(ctx).clone();
        let receiver = catalog.subscribe_reviews();
        let reviews = futures::stream::unfold(receiver, |mut receiver| async move {
            loop {
                match receiver.recv().await {
                    Ok(review) => return Some((review, receiver)),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(skipped)) => {
                        tracing::warn!(skipped, "a review subscription fell behind");
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                }
            }
        });
        Ok(reviews
            .filter(move |review| {
                let wanted = match review.subject {
                    Subject::Movie(id) => show.is_none() && movie.is_none_or(|m| m == id),
                    Subject::TvShow(id) => movie.is_none() && show.is_none_or(|s| s == id),
                };
                std::future::ready(wanted)
            })
            .then(move |review| {
                let store = catalog.store().clone();
                async move {
                    let (movie_id, tv_show_id, title) = match review.subject {
                        Subject::Movie(id) => (
                            Some(ID(id.to_string())),
                            None,
                            store.movie(id).await.ok().flatten().map(|m| m.title),
                        ),
                        Subject::TvShow(id) => (
                            None,
                            Some(ID(id.to_string())),
                            store.tv_show(id).await.ok().flatten().map(|s| s.title),
                        ),
                    };
                    ReviewNotification {
                        review: ReviewGql(review),
                        movie_id,
                        tv_show_id,
                        title: title.unwrap_or_default(),
                    }
                }
            }))
    }
}

/// Write operations.
#[derive(Debug)]
pub struct MutationRoot;

#[Object]
impl MutationRoot {
    /// Sign in; returns a bearer token valid for 24 hours.
    async fn login(&self, ctx: &Context<'_>, input: LoginInput) -> GqlResult<AuthResponse> {
        let address = ctx.data_opt::<crate::service::ClientAddress>().map(|a| a.0);
        let signed = catalog(ctx)
            .login(&input.username, &input.password, address)
            .await
            .classified()?;
        Ok(AuthResponse {
            token: signed.token,
            user: UserGql(signed.user, true),
        })
    }

    /// Create a USER account and sign it in.
    async fn register(&self, ctx: &Context<'_>, input: RegisterInput) -> GqlResult<AuthResponse> {
        let address = ctx.data_opt::<crate::service::ClientAddress>().map(|a| a.0);
        let signed = catalog(ctx)
            .register(&input.username, &input.email, &input.password, address)
            .await
            .classified()?;
        Ok(AuthResponse {
            token: signed.token,
            user: UserGql(signed.user, true),
        })
    }

    /// Review a movie or show, once per title. Needs sign-in.
    async fn create_review(
        &self,
        ctx: &Context<'_>,
        input: CreateReviewInput,
    ) -> GqlResult<ReviewGql> {
        let subject = review_subject(&input.subject)?;
        let review = catalog(ctx)
            .create_review(viewer(ctx), subject, input.score, input.comment.as_deref())
            .await
            .classified()?;
        Ok(ReviewGql(review))
    }

    /// Delete a review: its author or an admin.
    async fn delete_review(&self, ctx: &Context<'_>, id: ID) -> GqlResult<DeleteReviewResult> {
        let review_id = numeric("id", &id)?;
        catalog(ctx)
            .delete_review(viewer(ctx), review_id)
            .await
            .classified()?;
        Ok(DeleteReviewResult {
            success: true,
            deleted_id: Some(id),
        })
    }

    /// Put one movie or show on the signed-in user's watch list. Give exactly one of movieId
    /// and tvShowId. The status defaults to WANT_TO_WATCH. An "already in your watch list"
    /// error means the title is already there: treat the add as done.
    async fn add_to_watchlist(
        &self,
        ctx: &Context<'_>,
        subject: WatchlistSubjectInput,
        status: Option<WatchStatusGql>,
    ) -> GqlResult<WatchlistItemGql> {
        let subject = watchlist_subject(&subject)?;
        let item = catalog(ctx)
            .add_to_watchlist(viewer(ctx), subject, status.map(Into::into))
            .await
            .classified()?;
        Ok(WatchlistItemGql(item))
    }

    /// Mark a watch-list entry as watched or not yet. Needs sign-in.
    async fn set_watch_status(
        &self,
        ctx: &Context<'_>,
        item_id: ID,
        status: WatchStatusGql,
    ) -> GqlResult<bool> {
        catalog(ctx)
            .set_watch_status(viewer(ctx), item_id.as_str(), status.into())
            .await
            .classified()
    }

    /// Remove an entry from the signed-in user's watch list.
    async fn remove_from_watchlist(&self, ctx: &Context<'_>, item_id: ID) -> GqlResult<bool> {
        catalog(ctx)
            .remove_from_watchlist(viewer(ctx), item_id.as_str())
            .await
            .classified()
    }

    /// Add a movie (admin).
    async fn create_movie(
        &self,
        ctx: &Context<'_>,
        input: CreateMovieInput,
    ) -> GqlResult<MovieGql> {
        let input = domain::MovieInput {
            title: Some(input.title),
            release_year: Some(input.release_year),
            genre: Some(input.genre.into()),
            rating: input.rating,
            runtime: input.runtime,
            plot: input.plot,
            poster_url: input.poster_url,
            tmdb_id: input.tmdb_id,
        };
        let movie = catalog(ctx)
            .create_movie(viewer(ctx), &input)
            .await
            .classified()?;
        Ok(MovieGql(movie))
    }

    /// Change a movie (admin); omitted fields stay as they are.
    async fn update_movie(
        &self,
        ctx: &Context<'_>,
        input: UpdateMovieInput,
    ) -> GqlResult<MovieGql> {
        let id = numeric("id", &input.id)?;
        let changes = domain::MovieInput {
            title: input.title,
            release_year: input.release_year,
            genre: input.genre.map(Into::into),
            rating: input.rating,
            runtime: input.runtime,
            plot: input.plot,
            poster_url: input.poster_url,
            tmdb_id: input.tmdb_id,
        };
        let movie = catalog(ctx)
            .update_movie(viewer(ctx), id, &changes)
            .await
            .classified()?;
        Ok(MovieGql(movie))
    }

    /// Delete a movie with its reviews and watch-list entries (admin).
    async fn delete_movie(&self, ctx: &Context<'_>, id: ID) -> GqlResult<DeleteMovieResult> {
        let movie_id = numeric("id", &id)?;
        let deleted = catalog(ctx)
            .delete_movie(viewer(ctx), movie_id)
            .await
            .classified()?;
        Ok(DeleteMovieResult {
            success: deleted,
            message: if deleted {
                format!("Movie {movie_id} deleted.")
            } else {
                format!("No movie with id {movie_id}; nothing was deleted.")
            },
            deleted_id: deleted.then_some(id),
        })
    }

    /// Add a person (admin).
    async fn create_person(
        &self,
        ctx: &Context<'_>,
        input: CreatePersonInput,
    ) -> GqlResult<PersonGql> {
        let input = domain::PersonInput {
            name: Some(input.name),
            birth_year: input.birth_year,
            biography: input.biography,
            photo_url: input.photo_url,
            country_code: input.country_code,
        };
        let person = catalog(ctx)
            .create_person(viewer(ctx), &input)
            .await
            .classified()?;
        Ok(PersonGql(person))
    }

    /// Change a person (admin); omitted fields stay as they are.
    async fn update_person(
        &self,
        ctx: &Context<'_>,
        input: UpdatePersonInput,
    ) -> GqlResult<PersonGql> {
        let id = numeric("id", &input.id)?;
        let changes = domain::PersonInput {
            name: input.name,
            birth_year: input.birth_year,
            biography: input.biography,
            photo_url: input.photo_url,
            country_code: input.country_code,
        };
        let person = catalog(ctx)
            .update_person(viewer(ctx), id, &changes)
            .await
            .classified()?;
        Ok(PersonGql(person))
    }

    /// Delete a person (admin). A credited person is refused with a structured error unless
    /// force is true, which removes their credits first.
    async fn delete_person(
        &self,
        ctx: &Context<'_>,
        id: ID,
        #[graphql(default = false)] force: bool,
    ) -> GqlResult<DeletePersonResult> {
        let person_id = numeric("id", &id)?;
        let outcome = catalog(ctx)
            .delete_person(viewer(ctx), person_id, force)
            .await
            .classified()?;
        Ok(match outcome {
            PersonDeletion::Deleted => DeletePersonResult {
                success: true,
                error: None,
                deleted_id: Some(id),
            },
            PersonDeletion::NotFound => {
                return Err(domain_error(DomainError::not_found("Person", person_id)));
            }
            PersonDeletion::LinkedToMovie => DeletePersonResult {
                success: false,
                error: Some(DeletePersonError::LinkedToMovie),
                deleted_id: None,
            },
            PersonDeletion::LinkedToTvShow => DeletePersonResult {
                success: false,
                error: Some(DeletePersonError::LinkedToTvShow),
                deleted_id: None,
            },
        })
    }
}
