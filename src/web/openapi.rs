//! The OpenAPI 3.1 document of the merchant and reconciliation API, served
//! at `GET /api/v1/openapi.json`. It is made from the handlers' own
//! `utoipa::path` attributes and the types they answer with (the API's
//! own, [`super::api_types`], never the store's rows); the answers
//! every operation can get from the layers around it (401, 408, 413, 500)
//! are added here once.

use super::api_error::ApiError;
use super::bearer::{Need, need};
use super::{bank, bulk, merchant, outbox, recon, refused, sinks};
use axum::http::header;
use axum::response::IntoResponse;
use std::sync::LazyLock;
use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Reckon merchant and reconciliation API",
        description = "Payments, refunds and statement reconciliation. Every call but this \
            document's needs an API token (`reckon token create`, or the console's tokens page) \
            as `Authorization: Bearer …`, and each operation one scope of the token's, named in \
            its `security` (the `bearer` scheme lists them all). Every error answer is an \
            `Error`: `{\"error\": \"…\"}`."
    ),
    paths(
        document,
        merchant::whoami,
        merchant::create,
        merchant::show,
        merchant::close,
        merchant::refund,
        merchant::show_refund,
        recon::upload,
        recon::show,
        recon::days,
        recon::pull,
        recon::settle,
        recon::resume,
        recon::file,
        recon::results_csv,
        recon::results_parquet,
        recon::preview,
        recon::preview_run,
        bank::upload,
        bank::statements,
        bank::payouts,
        bank::run_match,
        bank::expected,
        recon::close_report,
        recon::verify_close,
        recon::disputes,
        bulk::show_job,
        outbox::list,
        outbox::show,
        outbox::resend,
        outbox::bulk_resend,
        outbox::recover,
        outbox::show_job,
        outbox::cancel_job,
        sinks::list,
        sinks::pause,
        sinks::resume,
        sinks::retry,
        refused::list,
        refused::show,
    ),
    components(schemas(ApiError)),
    modifiers(&Shared),
    tags(
        (name = "merchant", description = "Payments and refunds"),
        (name = "reconciliation", description = "Providers' statements against the ledger"),
        (name = "bank", description = "The bank's statements against the providers' payouts"),
        (name = "bulk", description = "Bulk ticket work's jobs, read (started and decided in the console)"),
        (name = "outbox", description = "Messages to the sinks: every delivery and attempt, resend, recover"),
        (name = "sinks", description = "Outbox sinks: their state, pause, resume and retry now"),
        (name = "webhooks", description = "Providers' webhooks Reckon refused, with a diagnosis where the failure tells one"),
    )
)]
pub struct ApiDoc;

/// The document's route (no token needed).
pub fn router() -> axum::Router<super::AppState> {
    axum::Router::new().route("/api/v1/openapi.json", axum::routing::get(document))
}

/// The document, rendered once.
static DOCUMENT: LazyLock<String> = LazyLock::new(|| {
    ApiDoc::openapi()
        .to_pretty_json()
        .expect("the document serializes")
});

/// `GET /api/v1/openapi.json`: this document (no token needed).
#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "merchant", security(()),
    responses((status = 200, description = "This OpenAPI 3.1 document", body = Object)))]
pub async fn document() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        DOCUMENT.as_str(),
    )
}

/// The bearer scheme with every scope, each operation's scope (from
/// [`super::bearer::ROUTES`]), and the answers the layers give any
/// operation: 401 and 403 (the token extractor), 408 (the timeout), 413
/// (the body limit, for posts) and 500.
struct Shared;

/// The bearer scheme's description: what a token is and every scope.
fn scheme_description() -> String {
    let mut text = String::from(
        "An API token made by an admin (`reckon token create --name N --scope S[,S…]`, or the \
         console's tokens page), sent as `Authorization: Bearer …`. A token has an owner, an \
         optional expiry and scopes; each operation needs one scope, named in its `security`. \
         No token, or one that is unknown, revoked, expired or whose owner is disabled: 401. \
         A token without the operation's scope: 403, naming it. Tokens made before scopes may \
         use every scope. The scopes:\n",
    );
    for scope in app::tokens::Scope::ALL {
        text.push_str(&format!(
            "\n- `{scope}`: {}",
            scope.describe(app::types::Lang::En)
        ));
    }
    text
}

impl utoipa::Modify for Shared {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(scheme_description()))
                    .build(),
            ),
        );
        openapi.security = Some(vec![SecurityRequirement::new(
            "bearer",
            Vec::<String>::new(),
        )]);
        for (path, item) in openapi.paths.paths.iter_mut() {
            let operations = [(&mut item.get, "get"), (&mut item.post, "post")];
            for (operation, method) in operations {
                let posts = method == "post";
                let Some(operation) = operation.as_mut() else {
                    continue;
                };
                // `security(())` in the path: open to anyone.
                let open = operation.security.is_some();
                let mut add = |status: &str, description: &str| {
                    operation
                        .responses
                        .responses
                        .entry(status.to_owned())
                        .or_insert_with(|| error_response(description));
                };
                if !open {
                    add("401", "No valid API token");
                }
                add("408", "The request took too long and was dropped");
                if posts {
                    add("413", "The request body is too large");
                }
                add("500", "Reckon failed (storage); nothing was changed");
                if open {
                    continue;
                }
                let scopes: Vec<String> = match need(method, path) {
                    Some(Need::Scope(scope)) => {
                        operation
                            .responses
                            .responses
                            .entry("403".to_owned())
                            .or_insert_with(|| {
                                error_response(&format!("The token lacks the scope {scope}"))
                            });
                        vec![scope.as_str().to_owned()]
                    }
                    Some(Need::Token) | None => Vec::new(),
                };
                operation.security = Some(vec![SecurityRequirement::new("bearer", scopes)]);
            }
        }
    }
}

fn error_response(description: &str) -> RefOr<Response> {
    RefOr::T(
        ResponseBuilder::new()
            .description(description)
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("Error")))
                    .build(),
            )
            .build(),
    )
}
