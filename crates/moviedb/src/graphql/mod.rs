//! The GraphQL API (async-graphql): queries, mutations, input checks, and errors classified in
//! `extensions.classification` (NOT_FOUND, BAD_REQUEST, UNAUTHORIZED, FORBIDDEN,
//! INTERNAL_ERROR with a reference and no internals).

use async_graphql::Schema;

use crate::service::{Catalog, Viewer};

mod enums;
mod errors;
mod inputs;
mod mutation;
mod objects;
mod query;
mod subscription;

pub use mutation::MutationRoot;
pub use query::QueryRoot;
pub use subscription::SubscriptionRoot;

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
