//! The money-deciding settings as evidence: versioned in the database, the
//! version in force adopted by every instance, and console changes under
//! the two-person rule.
//!
//! Precedence. At start the host's settings (file and environment) are
//! compared with the version in force: the same document, nothing is
//! written; the host's own values changed since the host's last version (or
//! no version yet), a new version from the host is recorded and adopted;
//! otherwise the version in force is a console change the host has not
//! overridden since, and it stays in force (its console-editable values
//! laid over the host's). So a console change lasts until the host's own
//! money settings change; then the host's values win, all of them.

use crate::config::Settings;
use crate::config::evidence::{self, Edits};
use crate::context::Context;
use crate::store::approvals::{self, Approver, Subject};
use crate::store::config_versions::{self, VersionRow};
use crate::store::{self, ResultExt, audit};
use serde_json::{Value, json};

/// Who records the host's versions in the audit log: whoever edits the
/// host's file already holds the database.
pub const HOST: &str = "host";

/// The audit log's object type of a version.
const OBJECT: &str = "config_version";

#[derive(Debug, thiserror::Error)]
pub enum VersionError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Busy(String),
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// Compares the host's settings with the version in force, records a new
/// host version when the host's own values changed, and adopts the version
/// in force. Returns its number.
pub async fn at_start(ctx: &Context) -> Result<i64, VersionError> {
    let host = ctx.live.host().clone();
    let doc = evidence::document(&host);
    let digest = evidence::digest(&doc);
    // Two instances starting at once take the same number: one is refused
    // by the key and finds the other's version on its next look.
    for _ in 0..3 {
        let pool = &ctx.db.pool;
        let in_force = config_versions::in_force(pool).await?;
        if let Some(v) = &in_force
            && v.digest == digest
        {
            adopt(ctx, v)?;
            return Ok(v.version.unwrap_or_default());
        }
        let last_host = config_versions::last_of_host(pool).await?;
        if let (Some(v), Some(h)) = (&in_force, &last_host)
            && (h.digest == digest
                || h.digest == evidence::digest(&evidence::as_recorded(&doc, &body(h))))
        {
            // The host's values are those of its last version: the console
            // change made since stays in force.
            adopt(ctx, v)?;
            return Ok(v.version.unwrap_or_default());
        }
        let now = ctx.now();
        let id = new_id();
        let mut tx = ctx.db.begin_write().await?;
        let body = evidence::canonical_text(&doc);
        let number = match config_versions::record_host(&mut tx, &id, &digest, &body, now).await {
            Err(e) if store::is_unique_violation(&e) => continue,
            n => n?,
        };
        // The first version is the baseline, kept with its source and time
        // in its own row; each one after it is a change, and audited.
        if in_force.is_some() {
            audit::append(
                &mut tx,
                &ctx.db.audit,
                &audit::Entry {
                    actor: HOST.to_owned(),
                    action: "config.version.host",
                    object_type: OBJECT,
                    object_id: number.to_string(),
                    before: in_force.as_ref().map(
                        |v| json!({ "version": v.version, "digest": v.digest, "source": v.source }),
                    ),
                    after: Some(json!({
                        "version": number,
                        "digest": digest,
                        "changes": changes_json(in_force.as_ref(), &doc),
                    })),
                },
                now,
            )
            .await?;
        }
        tx.commit().await?;
        tracing::info!(
            version = number,
            digest,
            "settings recorded as a new version from the host"
        );
        ctx.live.adopt((*host).clone(), number);
        return Ok(number);
    }
    Err(VersionError::Busy(
        "the settings' versions kept changing while this instance started: start it again".into(),
    ))
}

/// A command on the host (a run, a close, a release) works under the
/// version in force, as the servers do; it records none of its own, so a
/// shell with other settings than the servers' cannot change theirs. Only
/// on a database with no version yet is the host's recorded.
pub async fn for_command(ctx: &Context) -> Result<i64, VersionError> {
    match config_versions::in_force(&ctx.db.pool).await? {
        Some(v) => {
            adopt(ctx, &v)?;
            Ok(v.version.unwrap_or_default())
        }
        None => at_start(ctx).await,
    }
}

/// Adopts the version in force if another instance (or a decision on
/// this one) made a newer one: each instance looks at its minute beat.
pub async fn follow(ctx: &Context) -> Result<(), VersionError> {
    let Some(v) = config_versions::in_force(&ctx.db.pool).await? else {
        return Ok(());
    };
    // Only ever forward: a look that read the version before a decision
    // here committed a newer one must not put the older back.
    if v.version > ctx.config_version() {
        adopt(ctx, &v)?;
        tracing::info!(version = v.version, "settings of another version adopted");
    }
    Ok(())
}

/// Puts a version's settings in force in this process.
fn adopt(ctx: &Context, v: &VersionRow) -> Result<(), VersionError> {
    let doc = body(v);
    let settings = evidence::apply_document(ctx.live.host(), &doc)
        .map_err(|e| VersionError::Invalid(format!("version {:?}: {e}", v.version)))?;
    ctx.live.adopt(settings, v.version.unwrap_or_default());
    Ok(())
}

fn body(v: &VersionRow) -> Value {
    serde_json::from_str(&v.body_json).unwrap_or_default()
}

fn new_id() -> String {
    format!("CFG{}", uuid::Uuid::now_v7().simple()).to_ascii_uppercase()
}

fn changes_json(before: Option<&VersionRow>, after: &Value) -> Value {
    let before = before.map(body).unwrap_or_default();
    evidence::diff(&before, after)
        .into_iter()
        .map(|c| json!({ "setting": c.path, "before": c.before, "after": c.after }))
        .collect()
}

/// The settings in force now as the console-editable text.
pub fn edits_in_force(ctx: &Context) -> Edits {
    Edits::of(&evidence::document(&ctx.settings()))
}

/// One person proposes new values of the console-editable settings, with a
/// reason. Each value is checked as the host's variable is; a bad one is
/// refused naming it and nothing is stored.
pub async fn propose(
    engine: &crate::engine::Engine,
    edits: &Edits,
    reason: &str,
    by_id: &str,
    by_name: &str,
) -> Result<VersionRow, VersionError> {
    let ctx = engine.context();
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(VersionError::Invalid(
            "a reason is required to change the settings".into(),
        ));
    }
    let base: std::sync::Arc<Settings> = ctx.settings();
    let Some(base_version) = ctx.config_version() else {
        return Err(VersionError::Busy(
            "no version of the settings is recorded yet".into(),
        ));
    };
    let names: Vec<String> = base.pulls.days.keys().cloned().collect();
    let checked = edits
        .check(|n| names.iter().any(|m| m == n))
        .map_err(|e| VersionError::Invalid(e.to_string()))?;
    let before = evidence::document(&base);
    let doc = evidence::document(&checked.apply(&base));
    let changes = evidence::diff(&before, &doc);
    if changes.is_empty() {
        return Err(VersionError::Invalid(
            "nothing to change: the values proposed are those in force".into(),
        ));
    }
    // A change of the matching rules shows what it would do before anyone
    // approves it: each provider's latest statement under both rule sets.
    let preview = match changes.iter().any(|c| c.path.starts_with("matching.")) {
        true => Some(preview_of(engine, &checked.apply(&base).matching).await?),
        false => None,
    };
    let now = ctx.now();
    let mut tx = ctx.db.begin_write().await?;
    // The count it needs is fixed now, under the approval policy in force.
    let (_, policy) = crate::policy::changes::in_force(&mut tx).await?;
    let row = VersionRow {
        required_approvals: policy.required(crate::policy::SETTINGS_CHANGE, None),
        id: new_id(),
        version: None,
        status: "PENDING".into(),
        source: "console".into(),
        digest: evidence::digest(&doc),
        body_json: evidence::canonical_text(&doc),
        base_version: Some(base_version),
        reason: Some(reason.to_owned()),
        proposed_by_id: Some(by_id.to_owned()),
        proposed_by: by_name.to_owned(),
        approved_by_id: None,
        approved_by: None,
        created_at: now,
        decided_at: None,
        activated_at: None,
        preview_json: preview.as_ref().map(Value::to_string),
    };
    config_versions::propose(&mut tx, &row)
        .await
        .on_unique_violation(|| {
            VersionError::Busy(
                "a change of the settings is already waiting for a decision: decide it first"
                    .into(),
            )
        })?;
    audit::append(
        &mut tx,
        &ctx.db.audit,
        &audit::Entry {
            actor: by_name.to_owned(),
            action: "config.version.propose",
            object_type: OBJECT,
            object_id: row.id.clone(),
            before: Some(json!({ "version": base_version })),
            after: Some(json!({
                "reason": reason,
                "digest": row.digest,
                "required_approvals": row.required_approvals,
                "changes": changes
                    .iter()
                    .map(|c| json!({ "setting": c.path, "before": c.before, "after": c.after }))
                    .collect::<Vec<_>>(),
                "preview": preview,
            })),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(row)
}

/// The proposed matching rules' preview, as the proposal keeps it.
async fn preview_of(
    engine: &crate::engine::Engine,
    rules: &crate::config::MatchRules,
) -> Result<Value, VersionError> {
    let previews = crate::recon::preview_rules(engine, rules)
        .await
        .map_err(|e| match e {
            crate::recon::ReconError::Store(e) => VersionError::Store(e),
            other => VersionError::Invalid(format!("the change could not be previewed: {other}")),
        })?;
    Ok(serde_json::to_value(previews).unwrap_or_default())
}

/// Another person approves (the proposal becomes the next version, in
/// force at once here and at the other instances' next beat) or rejects
/// it; the proposer may withdraw their own. The proposer never approves,
/// nor someone whose role is a pending grant or who vouched for the
/// proposer (the approving statement's conditions).
pub async fn decide(
    ctx: &Context,
    id: &str,
    approve: bool,
    by_id: &str,
    by_name: &str,
) -> Result<Option<i64>, VersionError> {
    let now = ctx.now();
    let mut tx = ctx.db.begin_write().await?;
    let Some(p) = config_versions::pending(&mut *tx)
        .await?
        .filter(|p| p.id == id)
    else {
        return Err(VersionError::Invalid(format!(
            "no change of the settings {id} is waiting for a decision"
        )));
    };
    let mut tally = None;
    let number = if approve {
        if p.proposed_by_id.as_deref() == Some(by_id) {
            return Err(VersionError::Invalid(
                "who proposed a change of the settings cannot approve it: another supervisor or admin does"
                    .into(),
            ));
        }
        let approver = Approver {
            id: by_id,
            name: by_name,
            at: now,
            comment: "",
        };
        const TWICE: &str = "you approved this change already: it waits for another approver";
        let count = match approvals::approve(&mut tx, Subject::Settings, id, &approver).await {
            Err(e) if store::is_unique_violation(&e) => {
                return Err(VersionError::Busy(TWICE.into()));
            }
            other => other?,
        };
        let Some(count) = count else {
            return Err(VersionError::Busy(
                if approvals::has_approved(&mut *tx, Subject::Settings, id, by_id).await? {
                    TWICE.into()
                } else {
                    "not yours to approve: your role is waiting for a second admin's confirmation, or you created the proposer's account or granted their role".into()
                },
            ));
        };
        tally = Some(count);
        if !count.reached() {
            None
        } else {
            let approved = config_versions::approve(&mut tx, id, by_id, by_name, now).await;
            let Some(n) = (match approved {
                Err(e) if store::is_unique_violation(&e) => None,
                n => n?,
            }) else {
                let in_force = config_versions::in_force(&mut *tx)
                    .await?
                    .and_then(|v| v.version);
                return Err(VersionError::Busy(if in_force != p.base_version {
                    format!(
                        "the settings changed since this was proposed (version {} is in force, it changed version {}): reject it and propose again",
                        in_force.unwrap_or_default(),
                        p.base_version.unwrap_or_default()
                    )
                } else {
                    "not yours to approve: your role is waiting for a second admin's confirmation, or you created the proposer's account or granted their role".into()
                }));
            };
            Some(n)
        }
    } else {
        if config_versions::reject(&mut tx, id, by_id, by_name, now).await? == 0 {
            return Err(VersionError::Busy(
                "the proposal was decided meanwhile, or is not yours to reject".into(),
            ));
        }
        None
    };
    audit::append(
        &mut tx,
        &ctx.db.audit,
        &audit::Entry {
            actor: by_name.to_owned(),
            action: if approve {
                "config.version.approve"
            } else {
                "config.version.reject"
            },
            object_type: OBJECT,
            object_id: id.to_owned(),
            before: Some(json!({ "version": p.base_version, "proposed_by": p.proposed_by })),
            after: Some(json!({
                "version": number,
                "digest": p.digest,
                "approvals": tally.map(|c: approvals::Count| c.approvals),
                "required_approvals": p.required_approvals,
            })),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    if number.is_some() {
        follow(ctx).await?;
    }
    Ok(number)
}

/// What a version (or a proposal) changed: against the version before it
/// (a proposal: against the version it changes), setting by setting.
pub async fn changes_of(
    ctx: &Context,
    v: &VersionRow,
) -> Result<Vec<evidence::Change>, VersionError> {
    let before = match v.version {
        Some(n) => n - 1,
        None => v.base_version.unwrap_or_default(),
    };
    // The first version changed nothing: it is where the record begins.
    Ok(
        match config_versions::by_number(&ctx.db.pool, before).await? {
            Some(b) => evidence::diff(&body(&b), &body(v)),
            None => Vec::new(),
        },
    )
}
