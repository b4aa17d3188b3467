//! The mutation root: sign-in, reviews, the watchlist, and the admin's movie and people edits.

use async_graphql::{Context, ID, Object};

use crate::domain::{self, DomainError};
use crate::graphql::enums::{DeletePersonError, WatchStatusGql};
use crate::graphql::errors::{Classified, GqlResult, catalog, domain_error, numeric, viewer};
use crate::graphql::inputs::{
    CreateMovieInput, CreatePersonInput, CreateReviewInput, LoginInput, RegisterInput,
    UpdateMovieInput, UpdatePersonInput, WatchlistSubjectInput, review_subject, watchlist_subject,
};
use crate::graphql::objects::{
    AuthResponse, DeleteMovieResult, DeletePersonResult, DeleteReviewResult, MovieGql, PersonGql,
    ReviewGql, UserGql, WatchlistItemGql,
};
use crate::store::PersonDeletion;

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
