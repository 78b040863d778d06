//! The refused webhooks page's server functions: open to every role, like
//! the other lists (nothing here changes anything); a body unmasked only
//! to users with raw access.

use crate::console::RawView;
use crate::error::AppError;
use crate::refused::{RefusedDetail, RefusedFilter, RefusedPage};
use leptos::prelude::*;

#[cfg(feature = "ssr")]
use crate::filter::QueryFilter;
#[cfg(feature = "ssr")]
use crate::ssr::{console, guard, respond};
#[cfg(feature = "ssr")]
use crate::types::Role;

#[server(endpoint = "refused/list")]
pub async fn list_refused(
    #[server(default)] filter: RefusedFilter,
) -> Result<RefusedPage, AppError> {
    respond(async {
        let desk = console()?;
        guard(Role::ALL).await?;
        desk.refused(&filter.cleaned()).await
    })
    .await
}

#[server(endpoint = "refused/show")]
pub async fn show_refused(id: String) -> Result<RefusedDetail, AppError> {
    respond(async {
        let desk = console()?;
        guard(Role::ALL).await?;
        desk.refused_one(&id).await
    })
    .await
}

/// The refused webhook unmasked: users an admin gave raw access; each look
/// is audited.
#[server(endpoint = "refused/raw")]
pub async fn raw_refused(id: String) -> Result<RawView, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(Role::ALL).await?;
        desk.refused_raw(&caller.user, &id).await
    })
    .await
}
