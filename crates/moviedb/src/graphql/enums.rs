//! The GraphQL enums, each the mirror of a domain enum.

use async_graphql::Enum;

use crate::domain;

/// A movie's or show's genre.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "domain::Genre", name = "Genre")]
pub(crate) enum GenreGql {
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
pub(crate) enum MoodGql {
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
pub(crate) enum WatchStatusGql {
    /// Not seen yet (the default).
    WantToWatch,
    /// Already seen.
    Watched,
}

/// An account's role.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "domain::Role", name = "Role")]
pub(crate) enum RoleGql {
    /// A regular account.
    User,
    /// An administrator.
    Admin,
}

/// The field a movie page is sorted by.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "domain::MovieSortField", name = "MovieSortField")]
pub(crate) enum MovieSortFieldGql {
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
pub(crate) enum SortOrderGql {
    /// Ascending.
    Asc,
    /// Descending.
    Desc,
}

/// Why a person could not be deleted.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
pub(crate) enum DeletePersonError {
    /// The person is credited on a movie.
    LinkedToMovie,
    /// The person is credited on a TV show.
    LinkedToTvShow,
}
