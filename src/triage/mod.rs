//! Triage: what finance staff do with discrepancy tickets — assign,
//! comment, attach evidence, conclude, run the low-risk actions (re-query,
//! replay) ([`actions`]), and propose the fixes a second person must
//! approve ([`fixes`]). Every change is one transaction holding the change
//! and its audit entry; every move of a ticket's status is
//! `store::tickets::move_ticket`. What the console reads of tickets is
//! `crate::console`'s.

mod actions;
pub mod bulk;
pub mod fixes;
pub mod sla;

pub use actions::{
    Reopened, add_evidence, add_file, assign, comment, comment_proposal, conclude, reopen, replay,
    requery,
};
pub use fixes::PROPOSAL_TTL_US;

use crate::accounts::internal;
use crate::engine::ActionError;
use crate::store::audit;
use app::error::AppError;
use app::types::User;

/// Longest comment, conclusion, reason or evidence text.
pub const TEXT_LIMIT: usize = 4000;

/// A required, bounded piece of text, trimmed.
pub(crate) fn required<'a>(value: &'a str, field: &str) -> Result<&'a str, AppError> {
    let v = value.trim();
    if v.is_empty() {
        return Err(AppError::Required {
            field: field.into(),
        });
    }
    if v.chars().count() > TEXT_LIMIT {
        return Err(AppError::Invalid {
            detail: format!("{field} is longer than {TEXT_LIMIT} characters"),
        });
    }
    Ok(v)
}

/// How a replay or re-query that did not happen reads in the console.
pub(crate) fn action_error(e: ActionError) -> AppError {
    match e {
        ActionError::NotFound => AppError::NotFound,
        ActionError::NotVerified(_) => AppError::NotReplayable,
        ActionError::Provider(detail) => AppError::ProviderUnavailable { detail },
        ActionError::Db(e) => internal(e),
        other => AppError::Refused {
            detail: other.to_string(),
        },
    }
}

/// The audit entry of something `actor` did to an object.
fn entry(
    actor: &User,
    action: &'static str,
    (object_type, object_id): (&'static str, &str),
    before: Option<serde_json::Value>,
    after: serde_json::Value,
) -> audit::Entry {
    audit::Entry {
        actor: actor.username.clone(),
        action,
        object_type,
        object_id: object_id.to_owned(),
        before,
        after: Some(after),
    }
}
