//! The query root: reads, search, recommendations and review summaries.

use async_graphql::{Context, ID, Object};

use crate::domain::{self, DomainError};
use crate::graphql::enums::MoodGql;
use crate::graphql::errors::{Classified, GqlResult, catalog, domain_error, numeric, viewer};
use crate::graphql::inputs::{MovieFilter, MovieSort};
use crate::graphql::objects::{
    MovieGql, MoviePage, MovieReviewSummary, PersonGql, PersonPage, SearchResult, TvShowGql,
    TvShowPage, WatchlistItemGql, page_info,
};

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
        let movie_id = numeric("movieId", &movie_id)?;
        let summary = catalog(ctx)
            .summarize_reviews(movie_id)
            .await
            .classified()?;
        Ok(MovieReviewSummary(summary))
    }
}
