//! How failures read in GraphQL: every error gets `extensions.classification`; internal ones
//! only a reference (through `backchannel::Incident`).

use async_graphql::{Context, ErrorExtensions, ID};

use crate::domain::DomainError;
use crate::service::{Catalog, ServiceError, Viewer};

pub(crate) fn classify(error: ServiceError) -> async_graphql::Error {
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

pub(crate) fn domain_error(error: DomainError) -> async_graphql::Error {
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

pub(crate) type GqlResult<T> = async_graphql::Result<T>;

pub(crate) trait Classified<T> {
    fn classified(self) -> GqlResult<T>;
}

impl<T, E: Into<ServiceError>> Classified<T> for Result<T, E> {
    fn classified(self) -> GqlResult<T> {
        self.map_err(|e| classify(e.into()))
    }
}

pub(crate) fn catalog<'a>(ctx: &Context<'a>) -> &'a Catalog {
    // The schema is always built with a catalog.
    ctx.data_unchecked::<Catalog>()
}

pub(crate) fn viewer<'a>(ctx: &Context<'a>) -> Option<&'a Viewer> {
    ctx.data_opt::<Viewer>()
}

/// An id argument, read by [`crate::domain::id_number`]: "Invalid value 'x' for <arg>" when it
/// is not a number.
pub(crate) fn numeric(arg: &str, id: &ID) -> GqlResult<i64> {
    crate::domain::id_number(id).ok_or_else(|| {
        domain_error(DomainError::invalid(
            arg,
            format!("Invalid value '{}' for {arg}", id.as_str()),
        ))
    })
}
