//! The Settings page's server functions: supervisors and admins see the
//! settings that decide money and their versions; one proposes a change of
//! the console-editable ones, another approves or rejects it (the proposer
//! may withdraw their own). The server checks every value and audits each
//! step.

// A proposal is every editable value as a form field: the server function
// (and the client function the macro makes of it) takes each as an argument.
#![allow(clippy::too_many_arguments)]

use crate::error::AppError;
use crate::settings::SettingsView;
use leptos::prelude::*;

#[cfg(feature = "ssr")]
use crate::settings::EditableSettings;
#[cfg(feature = "ssr")]
use crate::ssr::{console, guard, respond};
#[cfg(feature = "ssr")]
use crate::types::Role;

#[cfg(feature = "ssr")]
const DECIDERS: &[Role] = &[Role::Supervisor, Role::Admin];

#[server(endpoint = "settings/view")]
pub async fn load_settings() -> Result<SettingsView, AppError> {
    respond(async {
        let desk = console()?;
        guard(DECIDERS).await?;
        desk.settings_view().await
    })
    .await
}

/// A proposed change: every editable value (as the page shows them) and a
/// reason; a matching rule left out stays as in force.
#[server(endpoint = "settings/propose")]
pub async fn propose_settings(
    sla_hours: String,
    cut_window_minutes: String,
    bank_window_days: String,
    statement_missing_hours: String,
    close_allow_open: String,
    reason: String,
    #[server(default)] match_keys: Option<String>,
    #[server(default)] match_window_hours: Option<String>,
    #[server(default)] amount_tolerance: Option<String>,
) -> Result<(), AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(DECIDERS).await?;
        let edits = EditableSettings {
            sla_hours,
            cut_window_minutes,
            bank_window_days,
            statement_missing_hours,
            close_allow_open,
            match_keys,
            match_window_hours,
            amount_tolerance,
        };
        desk.propose_settings(&caller.user, &edits, &reason).await
    })
    .await
}

/// `what`: approve | reject.
#[server(endpoint = "settings/decide")]
pub async fn decide_settings(id: String, what: String) -> Result<(), AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(DECIDERS).await?;
        let approve = match what.as_str() {
            "approve" => true,
            "reject" => false,
            other => {
                return Err(AppError::Invalid {
                    detail: format!("{other:?}: expected approve or reject"),
                });
            }
        };
        desk.decide_settings(&caller.user, &id, approve).await
    })
    .await
}
