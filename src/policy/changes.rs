//! Changing the policy: an admin proposes a new version as text; it needs
//! the approvers the version in force sets for POLICY_CHANGE — admins other
//! than the proposer, with a confirmed grant, who did not vouch for the
//! proposer —, and becomes the version in force once they are all in. A
//! proposal already made keeps the count it was given under the old one.

use super::{POLICY_CHANGE, Policy, actions};
use crate::accounts::{TxError, decision_refusal, internal, retrying};
use crate::store::approvals::{self, Approver, Subject};
use crate::store::policy::{self as store_policy, NewPolicy, PolicyRow};
use crate::store::{self, Db, audit};
use app::error::AppError;
use app::policy::{PolicyPage, PolicyVersion};
use app::types::{Role, User};
use serde_json::json;

/// The policy in force and its version (0: the built-in default), read in
/// the caller's transaction so a proposal gets the count of the version
/// it was proposed under.
pub async fn in_force(conn: &mut store::Conn) -> store::Result<(i64, Policy)> {
    match store_policy::active(&mut *conn).await? {
        None => Ok((0, Policy::default())),
        Some(row) => {
            let policy = Policy::from_body(&row.body_json)
                .map_err(|e| store::Error::Decode(format!("approval policy: {e}").into()))?;
            Ok((row.version.unwrap_or(0), policy))
        }
    }
}

/// The number of the version in force (0: the built-in default), for a
/// record that says which policy it was made under.
pub async fn version_in_force(db: &Db) -> store::Result<i64> {
    let mut conn = db.pool.acquire().await?;
    Ok(in_force(&mut conn).await?.0)
}

fn entry(actor: &User, action: &'static str, id: &str, after: serde_json::Value) -> audit::Entry {
    audit::Entry {
        actor: actor.username.clone(),
        action,
        object_type: "policy",
        object_id: id.to_owned(),
        before: None,
        after: Some(after),
    }
}

/// An admin proposes `text` as the next version; its id.
pub async fn propose(
    db: &Db,
    actor: &User,
    text: &str,
    reason: &str,
    now: i64,
) -> Result<String, AppError> {
    if actor.role != Role::Admin {
        return Err(AppError::Forbidden);
    }
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(AppError::Required {
            field: "reason".into(),
        });
    }
    let policy = Policy::parse(text).map_err(|detail| AppError::Invalid { detail })?;
    retrying(|| async {
        let mut tx = db.begin_write().await?;
        let (version, current) = in_force(&mut tx).await?;
        if current == policy {
            return Err(TxError::App(AppError::Invalid {
                detail: format!(
                    "this is the policy in force (version {version}): nothing to change"
                ),
            }));
        }
        let id = format!("POL{}", uuid::Uuid::now_v7().simple()).to_ascii_uppercase();
        let required = current.required(POLICY_CHANGE, None);
        let (body, digest) = (policy.body(), policy.digest());
        let row = NewPolicy {
            id: &id,
            body_json: &body,
            digest: &digest,
            reason,
            proposer_id: &actor.id,
            proposer_name: &actor.username,
            proposed_at: now,
            required,
        };
        if let Err(e) = store_policy::insert(&mut tx, &row).await {
            if store::is_unique_violation(&e) {
                return Err(TxError::App(AppError::Refused {
                    detail: "a policy change is already waiting for approval: it is decided first"
                        .into(),
                }));
            }
            return Err(e.into());
        }
        let after = json!({
            "status": "PENDING",
            "in_force": version,
            "digest": digest,
            "rules": text_of(&policy),
            "reason": reason,
            "required_approvals": required,
        });
        audit::append(
            &mut tx,
            &db.audit,
            &entry(actor, "policy.propose", &id, after),
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(id)
    })
    .await
}

fn text_of(p: &Policy) -> Vec<String> {
    p.text().lines().map(str::to_owned).collect()
}

/// An admin approves change `id`; the change is in force once the count
/// it needs is reached. The answer says where it stands.
pub async fn approve(
    db: &Db,
    actor: &User,
    id: &str,
    comment: &str,
    now: i64,
) -> Result<String, AppError> {
    let outcome = retrying(|| async {
        let mut tx = db.begin_write().await?;
        let approver = Approver {
            id: &actor.id,
            name: &actor.username,
            at: now,
            comment,
        };
        let count = match approvals::approve(&mut tx, Subject::Policy, id, &approver).await {
            Ok(Some(c)) => c,
            Ok(None) => return Ok(None),
            Err(e) if store::is_unique_violation(&e) => {
                return Err(TxError::App(AppError::AlreadyApproved));
            }
            Err(e) => return Err(e.into()),
        };
        let version = if count.reached() {
            let Some(v) = store_policy::activate(&mut tx, id, &actor.username, now).await? else {
                return Err(TxError::App(AppError::ProposalDecided));
            };
            Some(v)
        } else {
            None
        };
        let after = json!({
            "approvals": count.approvals,
            "required_approvals": count.required,
            "version": version,
            "status": if version.is_some() { "ACTIVE" } else { "PENDING" },
            "comment": comment,
        });
        audit::append(
            &mut tx,
            &db.audit,
            &entry(actor, "policy.approve", id, after),
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(Some(match version {
            Some(v) => format!("version {v} is in force"),
            None => format!("{} of {} approvals", count.approvals, count.required),
        }))
    })
    .await?;
    match outcome {
        Some(said) => Ok(said),
        None => Err(refusal(db, actor, id).await),
    }
}

/// An admin who may decide change `id` rejects it.
pub async fn reject(
    db: &Db,
    actor: &User,
    id: &str,
    comment: &str,
    now: i64,
) -> Result<(), AppError> {
    let done = retrying(|| async {
        let mut tx = db.begin_write().await?;
        if !store_policy::reject(&mut tx, id, &actor.id, &actor.username, now).await? {
            return Ok(false);
        }
        let after = json!({ "status": "REJECTED", "comment": comment });
        audit::append(
            &mut tx,
            &db.audit,
            &entry(actor, "policy.reject", id, after),
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(true)
    })
    .await?;
    if done {
        Ok(())
    } else {
        Err(refusal(db, actor, id).await)
    }
}

/// Why a deciding statement on change `id` matched nothing.
async fn refusal(db: &Db, actor: &User, id: &str) -> AppError {
    match store_policy::proposer_of(&db.pool, id).await {
        Err(e) => internal(e),
        Ok(None) => AppError::NotFound,
        Ok(Some((proposer, status))) => {
            let pending = Pending {
                subject: Subject::Policy,
                id,
                proposer: &proposer,
                status: &status,
                admins_only: true,
            };
            why_not(db, actor, &pending).await
        }
    }
}

/// A proposal a deciding statement matched nothing on, as read after.
pub(super) struct Pending<'a> {
    pub subject: Subject,
    pub id: &'a str,
    pub proposer: &'a str,
    pub status: &'a str,
    /// Only admins decide it.
    pub admins_only: bool,
}

/// Why `actor` may not decide `p`, in the order a person would want to
/// hear it: their own, decided, not their role, approved already, or not
/// independent of the proposer.
pub(super) async fn why_not(db: &Db, actor: &User, p: &Pending<'_>) -> AppError {
    if p.proposer == actor.id {
        return AppError::OwnProposal;
    }
    if p.status != "PENDING" {
        return AppError::ProposalDecided;
    }
    if p.admins_only && actor.role != Role::Admin {
        return AppError::Forbidden;
    }
    match approvals::has_approved(&db.pool, p.subject, p.id, &actor.id).await {
        Err(e) => return internal(e),
        Ok(true) => return AppError::AlreadyApproved,
        Ok(false) => {}
    }
    match decision_refusal(&db.pool, &actor.id, p.proposer).await {
        Err(e) => e,
        Ok(Some(why)) => why,
        Ok(None) => AppError::ProposalDecided,
    }
}

fn version_of(row: PolicyRow) -> PolicyVersion {
    let text = Policy::from_body(&row.body_json)
        .map(|p| p.text())
        .unwrap_or_else(|e| format!("# unreadable: {e}"));
    PolicyVersion {
        id: row.policy_id,
        version: row.version.unwrap_or(0),
        digest: row.digest,
        text,
        reason: row.reason,
        status: row.status,
        proposer: row.proposer_name,
        proposer_id: row.proposer_id,
        proposed_at: row.proposed_at,
        required: row.required_approvals,
        approved_by: row
            .approved_by
            .map(|s| s.lines().map(str::to_owned).collect())
            .unwrap_or_default(),
        decided_by: row.decided_by_name,
        active_from: row.active_from,
    }
}

/// The built-in default as a version.
fn default_version() -> PolicyVersion {
    let p = Policy::default();
    PolicyVersion {
        id: String::new(),
        version: 0,
        digest: p.digest(),
        text: p.text(),
        reason: "built in: one approver besides the proposer for every action".into(),
        status: "ACTIVE".into(),
        proposer: "reckon".into(),
        required: 1,
        ..PolicyVersion::default()
    }
}

/// The policy page: the version in force, the change waiting, the past.
pub async fn page(db: &Db) -> store::Result<PolicyPage> {
    let pool = &db.pool;
    Ok(PolicyPage {
        active: store_policy::active(pool)
            .await?
            .map_or_else(default_version, version_of),
        pending: store_policy::pending(pool).await?.map(version_of),
        history: store_policy::history(pool)
            .await?
            .into_iter()
            .map(version_of)
            .collect(),
        actions: actions().into_iter().map(str::to_owned).collect(),
    })
}
