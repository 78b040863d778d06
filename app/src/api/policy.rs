//! The approval policy's server functions: supervisors and admins read it;
//! admins propose a change and decide another admin's (the database refuses
//! the proposer and counts distinct approvers). Every change is audited.

use crate::error::AppError;
use crate::policy::{HeldAction, PolicyPage};
use leptos::prelude::*;

#[cfg(feature = "ssr")]
use crate::ssr::{console, guard, respond};
#[cfg(feature = "ssr")]
use crate::types::Role;

#[server(endpoint = "policy/show")]
pub async fn show_policy() -> Result<PolicyPage, AppError> {
    respond(async {
        let desk = console()?;
        guard(&[Role::Supervisor, Role::Admin]).await?;
        desk.policy_page().await
    })
    .await
}

/// `text`: one rule a line, `ACTION N` or `ACTION N above AMOUNT CURRENCY`.
#[server(endpoint = "policy/propose")]
pub async fn propose_policy(text: String, reason: String) -> Result<String, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(&[Role::Admin]).await?;
        desk.propose_policy(&caller.user, &text, &reason).await
    })
    .await
}

/// `what`: approve or reject the change `id`.
#[server(endpoint = "policy/decide")]
pub async fn decide_policy(
    id: String,
    what: String,
    #[server(default)] comment: String,
) -> Result<String, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(&[Role::Admin]).await?;
        let approve = match what.as_str() {
            "approve" => true,
            "reject" => false,
            other => {
                return Err(AppError::Invalid {
                    detail: format!("unknown decision {other:?}: approve or reject"),
                });
            }
        };
        desk.decide_policy(&caller.user, &id, approve, &comment)
            .await
    })
    .await
}

/// The actions the approval policy holds (a sink's pause, a large bulk
/// resend, a user's creation, a token that can write), pending first.
#[server(endpoint = "held/list")]
pub async fn held_actions() -> Result<Vec<HeldAction>, AppError> {
    respond(async {
        let desk = console()?;
        guard(&[Role::Supervisor, Role::Admin]).await?;
        desk.held_actions().await
    })
    .await
}

/// `what`: approve or reject held action `id`. Who may approve is the
/// database's to say: never the proposer; an admin for users and tokens.
#[server(endpoint = "held/decide")]
pub async fn decide_held(
    id: String,
    what: String,
    #[server(default)] comment: String,
) -> Result<String, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(&[Role::Supervisor, Role::Admin]).await?;
        let approve = match what.as_str() {
            "approve" => true,
            "reject" => false,
            other => {
                return Err(AppError::Invalid {
                    detail: format!("unknown decision {other:?}: approve or reject"),
                });
            }
        };
        desk.decide_held(&caller.user, &id, approve, &comment).await
    })
    .await
}
