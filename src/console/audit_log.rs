//! The audit log as the console shows it: newest first, filtered by
//! actor, action (or a family of them), object and business days, each
//! entry linked to its object's page.

use super::{Desk, page};
use crate::accounts::internal;
use crate::store;
use crate::store::Db;
use crate::store::lists::{self as store_lists, AuditQuery};
use app::error::AppError;
use app::tickets::{AuditEntry, AuditFilter, AuditPage, PAGE_SIZE};

#[async_trait::async_trait]
impl app::ssr::AuditLog for Desk {
    async fn audit(&self, filter: &AuditFilter) -> Result<AuditPage, AppError> {
        // From and To are business days, as every day the console names.
        let day = |d: &Option<String>| -> Result<Option<(i64, i64)>, AppError> {
            match d.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
                Some(d) => self.range(d).map(Some),
                None => Ok(None),
            }
        };
        let days = (
            day(&filter.from)?.map(|(start, _)| start),
            day(&filter.to)?.map(|(_, end)| end),
        );
        read(&self.engine.db, filter, days).await.map_err(internal)
    }
}

/// The audit log, newest first. `action` without a dot (`fix`) matches
/// its whole family (`fix.*`); `object` is `type` or `type:id`; `days` are
/// the From and To days' bounds in the business zone ([from, to)).
async fn read(
    db: &Db,
    f: &AuditFilter,
    days: (Option<i64>, Option<i64>),
) -> store::Result<AuditPage> {
    let given = |v: &Option<String>| {
        v.as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let (actor, action, object) = (given(&f.actor), given(&f.action), given(&f.object));
    let (object_type, object_id) = match object.as_deref().map(|o| o.split_once(':')) {
        Some(Some((ty, id))) => (Some(ty), Some(id)),
        Some(None) => (object.as_deref(), None),
        None => (None, None),
    };
    let query = AuditQuery {
        actor: actor.as_deref(),
        action: action.as_deref(),
        object_type,
        object_id,
        from: days.0,
        to: days.1,
        before: f.before,
    };
    let mut items = store_lists::audit(db, &query, PAGE_SIZE + 1).await?;
    for e in &mut items {
        e.link = object_link(db, &e.object_type, &e.object_id).await?;
    }
    let (items, next) = page(items, |e: &AuditEntry| e.seq);
    Ok(AuditPage { items, next })
}

/// The console page of an audit entry's object, where it has one: a
/// proposal's is its ticket's.
async fn object_link(db: &Db, object_type: &str, id: &str) -> store::Result<Option<String>> {
    let id_part = app::tickets::encode(id);
    Ok(match object_type {
        "ticket" => Some(format!("/tickets/{id_part}")),
        "payment" => Some(format!("/payments/{id_part}")),
        "callback" => Some(format!("/callbacks/{id_part}")),
        "run" => Some(format!("/runs?run={id_part}")),
        "outbox_message" => Some(format!("/outbox/{id_part}")),
        "user" | "api_token" => Some("/users".to_owned()),
        "alert" => Some("/alerts".to_owned()),
        "sink" => Some("/sinks".to_owned()),
        "proposal" => match crate::store::proposals::ticket_of(&db.pool, id).await {
            Ok(ticket) => Some(format!("/tickets/{}", app::tickets::encode(&ticket))),
            Err(e) if store::is_not_found(&e) => None,
            Err(e) => return Err(e),
        },
        _ => None,
    })
}
