//! The bank page's server function.

use crate::bank::BankView;
use crate::error::AppError;
use leptos::prelude::*;

#[cfg(feature = "ssr")]
use crate::ssr::{console, guard, respond};
#[cfg(feature = "ssr")]
use crate::types::Role;

/// The latest bank statements and payouts.
#[server(endpoint = "bank/view")]
pub async fn load_bank() -> Result<BankView, AppError> {
    respond(async {
        let desk = console()?;
        guard(Role::ALL).await?;
        desk.bank().await
    })
    .await
}
