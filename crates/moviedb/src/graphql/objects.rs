//! The GraphQL object types: movies, shows, episodes, people, reviews, users, watchlist items,
//! pages and mutation results, each a thin wrapper over its domain value.

use async_graphql::{Context, ID, Interface, Object, SimpleObject, Union};
use chrono::{DateTime, Utc};

use crate::domain::{self, DomainError, Subject};
use crate::graphql::enums::{DeletePersonError, GenreGql, RoleGql, WatchStatusGql};
use crate::graphql::errors::{Classified, GqlResult, catalog, classify, viewer};
use crate::service::ServiceError;
use crate::summary::ReviewSummary;

/// A movie.
#[derive(Clone, Debug)]
pub(crate) struct MovieGql(pub(crate) domain::Movie);

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
pub(crate) struct TvShowGql(pub(crate) domain::TvShow);

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
pub(crate) enum Content {
    /// A movie.
    Movie(MovieGql),
    /// A TV show.
    TvShow(TvShowGql),
}

/// One episode of a TV show.
pub(crate) struct EpisodeGql(pub(crate) domain::Episode);

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
pub(crate) struct PersonGql(pub(crate) domain::Person);

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
pub(crate) struct CastCredit(pub(crate) domain::Credit);

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
pub(crate) struct PersonMovieCredit {
    /// The movie.
    pub(crate) movie: MovieGql,
    /// The character they played.
    pub(crate) character_name: Option<String>,
}

/// A user's review of a title.
pub(crate) struct ReviewGql(pub(crate) domain::Review);

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
pub(crate) struct UserGql(pub(crate) domain::User, pub(crate) bool);

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
pub(crate) struct WatchlistItemGql(pub(crate) domain::WatchlistItem);

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
pub(crate) struct MovieReviewSummary(pub(crate) ReviewSummary);

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
pub(crate) enum SearchResult {
    /// A movie.
    Movie(MovieGql),
    /// A person.
    Person(PersonGql),
    /// A TV show.
    TvShow(TvShowGql),
}

/// Paging facts shared by every page type.
#[derive(SimpleObject)]
pub(crate) struct PageInfo {
    /// Matches over all pages.
    pub(crate) total_elements: i64,
    /// Number of pages.
    pub(crate) total_pages: i64,
    /// This page, from 0.
    pub(crate) current_page: i64,
    /// Page size asked for.
    pub(crate) size: i64,
}

pub(crate) fn page_info(total: i64, page: domain::PageRequest) -> PageInfo {
    PageInfo {
        total_elements: total,
        total_pages: (total + page.size - 1) / page.size,
        current_page: page.page,
        size: page.size,
    }
}

/// One page of movies.
#[derive(SimpleObject)]
pub(crate) struct MoviePage {
    /// The movies on this page.
    pub(crate) content: Vec<MovieGql>,
    #[graphql(flatten)]
    pub(crate) info: PageInfo,
    /// Whether this is the first page.
    pub(crate) is_first: bool,
    /// Whether this is the last page.
    pub(crate) is_last: bool,
    /// Whether a later page exists.
    pub(crate) has_next: bool,
    /// Whether an earlier page exists.
    pub(crate) has_previous: bool,
}

/// One page of people.
#[derive(SimpleObject)]
pub(crate) struct PersonPage {
    /// The people on this page.
    pub(crate) content: Vec<PersonGql>,
    #[graphql(flatten)]
    pub(crate) info: PageInfo,
}

/// One page of TV shows.
#[derive(SimpleObject)]
pub(crate) struct TvShowPage {
    /// The shows on this page.
    pub(crate) content: Vec<TvShowGql>,
    #[graphql(flatten)]
    pub(crate) info: PageInfo,
}

/// A signed-in session.
#[derive(SimpleObject)]
pub(crate) struct AuthResponse {
    /// Bearer token, valid for 24 hours; send it as `Authorization: Bearer <token>`.
    pub(crate) token: String,
    /// The account.
    pub(crate) user: UserGql,
}

/// The outcome of deleting a movie.
#[derive(SimpleObject)]
pub(crate) struct DeleteMovieResult {
    /// Whether a movie was deleted.
    pub(crate) success: bool,
    /// What happened.
    pub(crate) message: String,
    /// The deleted movie's id.
    pub(crate) deleted_id: Option<ID>,
}

/// The outcome of deleting a person.
#[derive(SimpleObject)]
pub(crate) struct DeletePersonResult {
    /// Whether the person was deleted.
    pub(crate) success: bool,
    /// Why not, when they are still credited.
    pub(crate) error: Option<DeletePersonError>,
    /// The deleted person's id.
    pub(crate) deleted_id: Option<ID>,
}

/// The outcome of deleting a review.
#[derive(SimpleObject)]
pub(crate) struct DeleteReviewResult {
    /// Whether the review was deleted.
    pub(crate) success: bool,
    /// The deleted review's id.
    pub(crate) deleted_id: Option<ID>,
}
