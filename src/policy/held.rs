//! Actions held until approved. By default a sink's pause, a bulk resend,
//! a user's creation and a token that can write run at once; when the
//! approval policy in force asks approvers for one (a bulk resend: above a
//! number of deliveries), it is held instead: recorded with what it will
//! do, and done — as its proposer, in the transaction of the last approval
//! it needs — once that many others approved it. The proposer may
//! withdraw it; anyone who could approve it may reject it. A new user's
//! password hash or a new token's hash waits in the held row and is
//! cleared when the action is decided.

use super::changes::{Pending, in_force, why_not};
use super::{BULK_RESEND, SINK_PAUSE, TOKEN_CREATE, USER_CREATE};
use crate::accounts::{TxError, internal, retrying};
use crate::context::Context;
use crate::store::approvals::{self, Approver, Subject};
use crate::store::held_actions::{self, HeldRow};
use crate::store::{self, Db, audit, tokens, users};
use app::error::AppError;
use app::outbox::OutboxFilter;
use app::policy::HeldAction;
use app::tokens::Scope;
use app::types::{Role, User};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Who proposes: a console user, or an API token (`token:<id>`, named
/// `token:<name>`), which nobody can have vouched for.
#[derive(Clone, Debug)]
pub struct Proposer {
    pub id: String,
    pub name: String,
}

impl Proposer {
    pub fn user(u: &User) -> Proposer {
        Proposer {
            id: u.id.clone(),
            name: u.username.clone(),
        }
    }
}

/// What a held action does when it runs.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Params {
    SinkPause {
        sink: String,
        reason: String,
    },
    BulkResend {
        filter: OutboxFilter,
        deliveries: i64,
    },
    UserCreate {
        user_id: String,
        username: String,
        role: Role,
        password_hash: String,
    },
    TokenCreate {
        token_id: String,
        name: String,
        hash: String,
        prefix: String,
        owner_id: Option<String>,
        scopes: Vec<Scope>,
        expires_at: Option<i64>,
    },
}

impl Params {
    fn action(&self) -> &'static str {
        match self {
            Params::SinkPause { .. } => SINK_PAUSE,
            Params::BulkResend { .. } => BULK_RESEND,
            Params::UserCreate { .. } => USER_CREATE,
            Params::TokenCreate { .. } => TOKEN_CREATE,
        }
    }

    /// As kept once decided: no secret's hash.
    fn without_secrets(&self) -> String {
        let mut p = self.clone();
        match &mut p {
            Params::UserCreate { password_hash, .. } => password_hash.clear(),
            Params::TokenCreate { hash, .. } => hash.clear(),
            Params::SinkPause { .. } | Params::BulkResend { .. } => {}
        }
        serde_json::to_string(&p).unwrap_or_default()
    }
}

/// Whether the policy in force holds `action` (`amount`: a bulk resend's
/// deliveries), and if so under which version and for how many approvers.
pub async fn needed(
    db: &Db,
    action: &str,
    amount: Option<(i64, &str)>,
) -> Result<Option<(i64, i64)>, AppError> {
    let mut conn = db.pool.acquire().await.map_err(internal)?;
    let (version, policy) = in_force(&mut conn).await.map_err(internal)?;
    let n = policy.required(action, amount);
    Ok((n > 0).then_some((version, n)))
}

/// Holds an action: records it and its audit entry. The answer to give
/// the caller is the `Held` refusal naming it.
pub async fn hold(
    db: &Db,
    by: &Proposer,
    object_id: &str,
    summary: &str,
    reason: &str,
    params: &Params,
    (policy_version, required): (i64, i64),
) -> AppError {
    let row = HeldRow {
        action_id: format!("HA{}", uuid::Uuid::now_v7().simple()).to_ascii_uppercase(),
        action: params.action().to_owned(),
        object_id: object_id.to_owned(),
        summary: summary.to_owned(),
        reason: reason.to_owned(),
        params_json: serde_json::to_string(params).unwrap_or_default(),
        status: "PENDING".into(),
        proposer_id: by.id.clone(),
        proposer_name: by.name.clone(),
        proposed_at: store::now_micros(),
        required_approvals: required,
        policy_version,
        decided_by_name: None,
        decided_at: None,
        outcome: None,
        approved_by: None,
    };
    let held = retrying(|| async {
        let mut tx = db.begin_write().await?;
        match held_actions::insert(&mut tx, &row).await {
            Err(e) if store::is_unique_violation(&e) => {
                return Err(TxError::App(AppError::Refused {
                    detail: format!(
                        "{} on {object_id} is already waiting for approval: decide that one first",
                        row.action
                    ),
                }));
            }
            other => other?,
        }
        let entry = audit::Entry {
            actor: by.name.clone(),
            action: "held.propose",
            object_type: "held_action",
            object_id: row.action_id.clone(),
            before: None,
            after: Some(json!({
                "action": row.action,
                "object": object_id,
                "summary": summary,
                "reason": reason,
                "required_approvals": required,
                "policy_version": policy_version,
            })),
        };
        audit::append(&mut tx, &db.audit, &entry, row.proposed_at).await?;
        tx.commit().await?;
        Ok(())
    })
    .await;
    match held {
        Ok(()) => AppError::Held {
            action_id: row.action_id,
            required,
        },
        Err(e) => e,
    }
}

fn view(r: HeldRow) -> HeldAction {
    HeldAction {
        id: r.action_id,
        action: r.action,
        summary: r.summary,
        reason: r.reason,
        status: r.status,
        proposer: r.proposer_name,
        proposer_id: r.proposer_id,
        proposed_at: r.proposed_at,
        required: r.required_approvals,
        approved_by: r
            .approved_by
            .map(|s| s.lines().map(str::to_owned).collect())
            .unwrap_or_default(),
        decided_by: r.decided_by_name,
        decided_at: r.decided_at,
        outcome: r.outcome,
    }
}

/// The pending held actions and the 20 latest decided.
pub async fn list(db: &Db) -> Result<Vec<HeldAction>, AppError> {
    Ok(held_actions::listed(&db.pool, 20)
        .await
        .map_err(internal)?
        .into_iter()
        .map(view)
        .collect())
}

/// What ran, to say and to record.
struct Ran {
    outcome: String,
    job: Option<String>,
}

/// Does held action `row` as its proposer, in the last approval's
/// transaction. A refusal (the sink paused meanwhile, the username taken)
/// rolls the approval back with it.
async fn execute(
    tx: &mut store::Tx<'_>,
    ctx: &Context,
    row: &HeldRow,
    params: &Params,
    items: &[(String, String)],
    approved_by: &[String],
    now: i64,
) -> Result<Ran, TxError> {
    let actor = row.proposer_name.as_str();
    let refused = |detail: String| TxError::App(AppError::Refused { detail });
    match params {
        Params::SinkPause { sink, reason } => {
            if !store::sinks::set_paused(tx, sink, Some((actor, reason)), now).await? {
                return Err(refused(format!("sink {sink} is already paused")));
            }
            let entry = audit::Entry {
                actor: actor.to_owned(),
                action: "sink.pause",
                object_type: "sink",
                object_id: sink.clone(),
                before: Some(json!({ "paused": false })),
                after: Some(json!({
                    "paused": true, "reason": reason,
                    "held_action": row.action_id, "approved_by": approved_by,
                })),
            };
            audit::append(tx, &ctx.db.audit, &entry, now).await?;
            Ok(Ran {
                outcome: format!("sink {sink} paused"),
                job: None,
            })
        }
        Params::BulkResend { filter, .. } => {
            let job_id = crate::outbox::jobs::new_job_id();
            let params = serde_json::to_value(filter).unwrap_or_default();
            crate::outbox::jobs::write_job(
                tx,
                ctx,
                actor,
                "RESEND",
                &job_id,
                &params,
                items,
                Some(approved_by),
                now,
            )
            .await?;
            Ok(Ran {
                outcome: format!("job {job_id}: {} deliveries", items.len()),
                job: Some(job_id),
            })
        }
        Params::UserCreate {
            user_id,
            username,
            role,
            password_hash,
        } => {
            let new = users::NewUser {
                id: user_id,
                username,
                role: *role,
                password_hash,
                now,
                by: users::By {
                    id: Some(&row.proposer_id),
                    name: actor,
                },
            };
            match users::insert(&mut **tx, &new).await {
                Err(e) if store::is_unique_violation(&e) => {
                    return Err(TxError::App(AppError::UsernameTaken));
                }
                other => other?,
            }
            crate::accounts::open_grant(tx, user_id).await?;
            let entry = audit::Entry {
                actor: actor.to_owned(),
                action: "user.create",
                object_type: "user",
                object_id: user_id.clone(),
                before: None,
                after: Some(json!({
                    "username": username, "role": role,
                    "held_action": row.action_id, "approved_by": approved_by,
                })),
            };
            audit::append(tx, &ctx.db.audit, &entry, now).await?;
            Ok(Ran {
                outcome: format!("user {username} created"),
                job: None,
            })
        }
        Params::TokenCreate {
            token_id,
            name,
            hash,
            prefix,
            owner_id,
            scopes,
            expires_at,
        } => {
            let new = tokens::NewToken {
                id: token_id,
                name,
                hash,
                prefix,
                created_by: actor,
                owner_id: owner_id.as_deref(),
                scopes,
                expires_at: *expires_at,
                now,
            };
            match tokens::insert(&mut **tx, &new).await {
                Err(e) if store::is_unique_violation(&e) => {
                    return Err(refused(format!("a token named `{name}` already exists")));
                }
                other => other?,
            }
            let entry = audit::Entry {
                actor: actor.to_owned(),
                action: "token.create",
                object_type: "api_token",
                object_id: token_id.clone(),
                before: None,
                after: Some(json!({
                    "name": name, "owner_id": owner_id,
                    "scopes": scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
                    "expires_at": expires_at,
                    "held_action": row.action_id, "approved_by": approved_by,
                })),
            };
            audit::append(tx, &ctx.db.audit, &entry, now).await?;
            Ok(Ran {
                outcome: format!("token {name} created"),
                job: None,
            })
        }
    }
}

/// `actor` approves held action `id`; at the last approval it needs it
/// runs. The answer says where it stands.
pub async fn approve(
    ctx: &Context,
    actor: &User,
    id: &str,
    comment: &str,
) -> Result<String, AppError> {
    let db = &ctx.db;
    let row = held_actions::by_id(&db.pool, id)
        .await
        .map_err(internal)?
        .ok_or(AppError::NotFound)?;
    let params: Params = serde_json::from_str(&row.params_json).map_err(internal)?;
    // What a resend queues is read when it is let run, as a resend
    // started by hand reads it.
    let items = match &params {
        Params::BulkResend { filter, .. } if row.status == "PENDING" => {
            let q = crate::outbox::jobs::query(ctx, filter)?;
            store::outbox_ops::resendable(db, &q)
                .await
                .map_err(internal)?
        }
        _ => Vec::new(),
    };
    let said = retrying(|| async {
        let now = ctx.now();
        let mut tx = db.begin_write().await?;
        let approver = Approver {
            id: &actor.id,
            name: &actor.username,
            at: now,
            comment,
        };
        let count = match approvals::approve(&mut tx, Subject::Held, id, &approver).await {
            Ok(Some(c)) => c,
            Ok(None) => return Ok(None),
            Err(e) if store::is_unique_violation(&e) => {
                return Err(TxError::App(AppError::AlreadyApproved));
            }
            Err(e) => return Err(e.into()),
        };
        let ran = if count.reached() {
            if held_actions::mark_done(&mut tx, id, &actor.username, now).await? == 0 {
                return Err(TxError::App(AppError::ProposalDecided));
            }
            let names = approvals::names(&mut *tx, Subject::Held, id).await?;
            let ran = execute(&mut tx, ctx, &row, &params, &items, &names, now).await?;
            held_actions::set_outcome(&mut tx, id, &ran.outcome, &params.without_secrets()).await?;
            Some(ran)
        } else {
            None
        };
        let entry = audit::Entry {
            actor: actor.username.clone(),
            action: "held.approve",
            object_type: "held_action",
            object_id: id.to_owned(),
            before: Some(json!({ "action": row.action, "status": "PENDING" })),
            after: Some(json!({
                "approvals": count.approvals,
                "required_approvals": count.required,
                "status": if ran.is_some() { "DONE" } else { "PENDING" },
                "outcome": ran.as_ref().map(|r| r.outcome.clone()),
                "comment": comment,
            })),
        };
        audit::append(&mut tx, &db.audit, &entry, now).await?;
        tx.commit().await?;
        Ok(Some(match ran {
            Some(r) => (r.outcome, r.job),
            None => (
                format!("{} of {} approvals", count.approvals, count.required),
                None,
            ),
        }))
    })
    .await?;
    let Some((said, job)) = said else {
        return Err(refusal(db, actor, &row).await);
    };
    if let Some(job_id) = job {
        crate::outbox::jobs::run_job(ctx, &job_id, crate::outbox::jobs::Run::Background).await?;
    }
    Ok(said)
}

/// `actor` rejects held action `id` (the proposer: withdraws it).
pub async fn reject(ctx: &Context, actor: &User, id: &str, comment: &str) -> Result<(), AppError> {
    let db = &ctx.db;
    let row = held_actions::by_id(&db.pool, id)
        .await
        .map_err(internal)?
        .ok_or(AppError::NotFound)?;
    let params: Params = serde_json::from_str(&row.params_json).map_err(internal)?;
    let done = retrying(|| async {
        let now = ctx.now();
        let mut tx = db.begin_write().await?;
        let cleared = params.without_secrets();
        if held_actions::reject(&mut tx, id, &actor.id, &actor.username, now, &cleared).await? == 0
        {
            return Ok(false);
        }
        let withdrawn = row.proposer_id == actor.id;
        let entry = audit::Entry {
            actor: actor.username.clone(),
            action: if withdrawn {
                "held.withdraw"
            } else {
                "held.reject"
            },
            object_type: "held_action",
            object_id: id.to_owned(),
            before: Some(json!({ "action": row.action, "status": "PENDING" })),
            after: Some(json!({
                "status": if withdrawn { "WITHDRAWN" } else { "REJECTED" },
                "comment": comment,
            })),
        };
        audit::append(&mut tx, &db.audit, &entry, now).await?;
        tx.commit().await?;
        Ok(true)
    })
    .await?;
    if done {
        Ok(())
    } else {
        Err(refusal(db, actor, &row).await)
    }
}

/// Why a deciding statement on held action `row` matched nothing.
async fn refusal(db: &Db, actor: &User, row: &HeldRow) -> AppError {
    let status = match held_actions::by_id(&db.pool, &row.action_id).await {
        Err(e) => return internal(e),
        Ok(None) => return AppError::NotFound,
        Ok(Some(r)) => r.status,
    };
    let pending = Pending {
        subject: Subject::Held,
        id: &row.action_id,
        proposer: &row.proposer_id,
        status: &status,
        admins_only: [USER_CREATE, TOKEN_CREATE].contains(&row.action.as_str()),
    };
    why_not(db, actor, &pending).await
}
