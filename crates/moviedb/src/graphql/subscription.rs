//! The subscription root: new reviews as they are written.

use async_graphql::{Context, ID, SimpleObject, Subscription};

use crate::domain::Subject;
use crate::graphql::errors::{catalog, numeric};
use crate::graphql::objects::ReviewGql;

/// A review just written.
#[derive(SimpleObject)]
pub(crate) struct ReviewNotification {
    /// The review.
    pub(crate) review: ReviewGql,
    /// The movie reviewed, if a movie.
    pub(crate) movie_id: Option<ID>,
    /// The show reviewed, if a show.
    pub(crate) tv_show_id: Option<ID>,
    /// The title reviewed.
    pub(crate) title: String,
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
