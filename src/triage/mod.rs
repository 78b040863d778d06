//! Triage: what finance staff do with discrepancy tickets — list and
//! filter them, read both sides and the payment's timeline, assign,
//! comment, attach evidence, conclude, run the low-risk actions (re-query,
//! replay), and propose the fixes a second person must approve
//! ([`fixes`]). Every change is one transaction holding the change and its
//! audit entry.

mod fixes;
pub mod mask;
mod ops;
mod reading;

pub use fixes::PROPOSAL_TTL_US;
pub use reading::export_csv;

use crate::accounts::{TxError, internal, retrying};
use crate::engine::{ActionError, Engine};
use crate::store::audit;
use app::console::{
    AlertRow, CallbackDetail, CallbackFilter, CallbackPage, Dashboard, PaymentFilter, PaymentPage,
    PaymentView, ReplayJob, RunPage,
};
use app::error::AppError;
use app::ssr::Console;
use app::tickets::{
    ActionResult, AuditFilter, AuditPage, FixRequest, Proposal, TicketDetail, TicketFilter,
    TicketPage,
};
use app::types::User;
use serde_json::json;

/// Longest comment, conclusion, reason or evidence text.
pub const TEXT_LIMIT: usize = 4000;

#[derive(Clone)]
pub struct Desk {
    pub engine: Engine,
}

/// A required, bounded piece of text, trimmed.
fn required<'a>(value: &'a str, field: &str) -> Result<&'a str, AppError> {
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

fn action_error(e: ActionError) -> AppError {
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

impl Desk {
    pub fn new(engine: Engine) -> Desk {
        Desk { engine }
    }

    fn now(&self) -> i64 {
        self.engine.now()
    }

    /// Adds a note to an open ticket (an OPEN one becomes IN_PROGRESS) with
    /// its audit entry, in one transaction.
    #[allow(clippy::too_many_arguments)]
    async fn note(
        &self,
        actor: &User,
        ticket_id: &str,
        kind: &str,
        body: &str,
        file: Option<(&str, &str, &[u8])>,
        action: &'static str,
        after: serde_json::Value,
    ) -> Result<(), AppError> {
        retrying(|| async {
            let now = self.now();
            let mut tx = self.engine.db.begin_write().await?;
            let moved = sqlx::query(
                "UPDATE discrepancies SET status = CASE WHEN status = 'OPEN' THEN 'IN_PROGRESS' ELSE status END, \
                   updated_at = $1 WHERE discrepancy_id = $2 AND status <> 'CLOSED'",
            )
            .bind(now)
            .bind(ticket_id)
            .execute(&mut *tx)
            .await?;
            if moved.rows_affected() == 0 {
                return Err(TxError::App(self.closed_or_missing(ticket_id).await));
            }
            insert_note(&mut tx, ticket_id, kind, body, file, &actor.username, now).await?;
            audit::append(
                &mut tx,
                &self.engine.db.audit,
                &audit::Entry {
                    actor: actor.username.clone(),
                    action,
                    object_type: "ticket",
                    object_id: ticket_id.to_owned(),
                    before: None,
                    after: Some(after.clone()),
                },
                now,
            )
            .await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    async fn closed_or_missing(&self, ticket_id: &str) -> AppError {
        match sqlx::query_scalar::<_, String>(
            "SELECT status FROM discrepancies WHERE discrepancy_id = $1",
        )
        .bind(ticket_id)
        .fetch_optional(&self.engine.db.pool)
        .await
        {
            Ok(Some(_)) => AppError::TicketClosed,
            Ok(None) => AppError::NotFound,
            Err(e) => internal(e),
        }
    }

    /// A small file attached as evidence, kept in the database.
    pub async fn add_file(
        &self,
        actor: &User,
        ticket_id: &str,
        name: &str,
        content_type: &str,
        bytes: &[u8],
    ) -> Result<(), AppError> {
        if bytes.len() > app::tickets::EVIDENCE_FILE_LIMIT {
            return Err(AppError::FileTooLarge {
                max_kib: (app::tickets::EVIDENCE_FILE_LIMIT / 1024) as u64,
            });
        }
        let name = required(name, "file name")?;
        let hash = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(bytes));
        self.note(
            actor,
            ticket_id,
            "evidence_file",
            name,
            Some((name, content_type, bytes)),
            "ticket.evidence",
            json!({ "file": name, "bytes": bytes.len(), "sha256": hash }),
        )
        .await
    }

    /// An evidence file's name and bytes.
    pub async fn file(&self, note_id: &str) -> Result<(String, Vec<u8>), AppError> {
        let row: Option<(Option<String>, Option<Vec<u8>>)> = sqlx::query_as(
            "SELECT file_name, file_bytes FROM ticket_notes WHERE note_id = $1 AND kind = 'evidence_file'",
        )
        .bind(note_id)
        .fetch_optional(&self.engine.db.pool)
        .await
        .map_err(internal)?;
        match row {
            Some((Some(name), Some(bytes))) => Ok((name, bytes)),
            _ => Err(AppError::NotFound),
        }
    }

    /// Records a low-risk action on the ticket; a STATUS_LAG ticket whose
    /// payment is now paid closes (the lag is over).
    async fn record_action(
        &self,
        actor: &User,
        ticket_id: &str,
        action: &'static str,
        what: &str,
        result: &ActionResult,
    ) -> Result<(), AppError> {
        retrying(|| async {
            let now = self.now();
            let mut tx = self.engine.db.begin_write().await?;
            let entry = json!({ "action": what, "result": result.class, "detail": result.detail, "by": actor.username, "at": now });
            append_action(&mut tx, ticket_id, &entry, now).await?;
            let closed = sqlx::query(
                "UPDATE discrepancies SET status = 'CLOSED', closed_at = $1, updated_at = $1, \
                   conclusion = 'lag resolved through engine::apply (' || $2 || ')' \
                 WHERE discrepancy_id = $3 AND class = 'STATUS_LAG' AND status <> 'CLOSED' \
                   AND EXISTS (SELECT 1 FROM payments p WHERE p.payment_no = discrepancies.payment_no \
                     AND p.status IN ('SUCCEEDED', 'REFUNDING', 'REFUNDED'))",
            )
            .bind(now)
            .bind(what)
            .bind(ticket_id)
            .execute(&mut *tx)
            .await?;
            if closed.rows_affected() == 1 {
                supersede_pending(&mut tx, ticket_id, "the lag resolved itself").await?;
            }
            insert_note(
                &mut tx,
                ticket_id,
                "action",
                &format!("{what}: {} — {}", result.class, result.detail),
                None,
                &actor.username,
                now,
            )
            .await?;
            audit::append(
                &mut tx,
                &self.engine.db.audit,
                &audit::Entry {
                    actor: actor.username.clone(),
                    action,
                    object_type: "ticket",
                    object_id: ticket_id.to_owned(),
                    before: None,
                    after: Some(entry.clone()),
                },
                now,
            )
            .await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    async fn ticket_payment(&self, ticket_id: &str) -> Result<Option<String>, AppError> {
        let row: Option<(Option<String>, String)> = sqlx::query_as(
            "SELECT payment_no, status FROM discrepancies WHERE discrepancy_id = $1",
        )
        .bind(ticket_id)
        .fetch_optional(&self.engine.db.pool)
        .await
        .map_err(internal)?;
        match row {
            None => Err(AppError::NotFound),
            Some((_, status)) if status == "CLOSED" => Err(AppError::TicketClosed),
            Some((payment_no, _)) => Ok(payment_no),
        }
    }
}

/// A ticket that closes takes its waiting proposals with it: none can be
/// approved afterwards.
pub async fn supersede_pending(
    conn: &mut sqlx::AnyConnection,
    ticket_id: &str,
    why: &str,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE fix_proposals SET status = 'SUPERSEDED', result = $1 WHERE discrepancy_id = $2 AND status = 'PENDING'",
    )
    .bind(why)
    .bind(ticket_id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// A note row, inside the caller's transaction.
pub(crate) async fn insert_note(
    conn: &mut sqlx::AnyConnection,
    ticket_id: &str,
    kind: &str,
    body: &str,
    file: Option<(&str, &str, &[u8])>,
    author: &str,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO ticket_notes (note_id, discrepancy_id, kind, body, file_name, content_type, file_bytes, file_size, author, at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(uuid::Uuid::now_v7().to_string())
    .bind(ticket_id)
    .bind(kind)
    .bind(body)
    .bind(file.map(|f| f.0))
    .bind(file.map(|f| f.1))
    .bind(file.map(|f| f.2.to_vec()))
    .bind(file.map(|f| f.2.len() as i64))
    .bind(author)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Appends to the ticket's `actions` with one statement, so two writers
/// never lose each other's entry (no read-modify-write).
pub async fn append_action(
    conn: &mut sqlx::AnyConnection,
    ticket_id: &str,
    entry: &serde_json::Value,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(&format!(
        "UPDATE discrepancies SET updated_at = $1, actions = {} WHERE discrepancy_id = $3",
        appended_actions("$2")
    ))
    .bind(now)
    .bind(entry.to_string())
    .bind(ticket_id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// The ticket's `actions` with `entries` (a placeholder for one or more
/// JSON values joined by commas) added. `actions` is a JSON array kept as
/// text: its closing bracket is stripped and the entries added (with a
/// comma unless it was empty).
pub(crate) fn appended_actions(entries: &str) -> String {
    format!(
        "CASE WHEN actions = '[]' OR actions = '' THEN '[' || {entries} || ']' \
         ELSE SUBSTR(actions, 1, LENGTH(actions) - 1) || ',' || {entries} || ']' END"
    )
}

#[async_trait::async_trait]
impl Console for Desk {
    async fn tickets(&self, filter: &TicketFilter) -> Result<TicketPage, AppError> {
        reading::tickets(&self.engine.db, filter)
            .await
            .map_err(internal)
    }

    async fn ticket(&self, id: &str) -> Result<TicketDetail, AppError> {
        reading::ticket(&self.engine.db, id, self.now())
            .await
            .map_err(internal)?
            .ok_or(AppError::NotFound)
    }

    async fn assign(&self, actor: &User, id: &str, owner: &str) -> Result<(), AppError> {
        let owner = required(owner, "owner")?;
        let ok: Option<String> = sqlx::query_scalar(
            "SELECT username FROM users WHERE username = $1 AND disabled_at IS NULL \
               AND role IN ('operator', 'supervisor')",
        )
        .bind(owner)
        .fetch_optional(&self.engine.db.pool)
        .await
        .map_err(internal)?;
        if ok.is_none() {
            return Err(AppError::Invalid {
                detail: format!("{owner} is not an active operator or supervisor"),
            });
        }
        retrying(|| async {
            let now = self.now();
            let mut tx = self.engine.db.begin_write().await?;
            let before: Option<Option<String>> = sqlx::query_scalar(
                "SELECT owner FROM discrepancies WHERE discrepancy_id = $1 AND status <> 'CLOSED'",
            )
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(before) = before else {
                return Err(TxError::App(self.closed_or_missing(id).await));
            };
            sqlx::query(
                "UPDATE discrepancies SET owner = $1, updated_at = $2, \
                   status = CASE WHEN status = 'OPEN' THEN 'IN_PROGRESS' ELSE status END \
                 WHERE discrepancy_id = $3",
            )
            .bind(owner)
            .bind(now)
            .bind(id)
            .execute(&mut *tx)
            .await?;
            insert_note(
                &mut tx,
                id,
                "assign",
                &format!("→ {owner}"),
                None,
                &actor.username,
                now,
            )
            .await?;
            audit::append(
                &mut tx,
                &self.engine.db.audit,
                &audit::Entry {
                    actor: actor.username.clone(),
                    action: "ticket.assign",
                    object_type: "ticket",
                    object_id: id.to_owned(),
                    before: Some(json!({ "owner": before })),
                    after: Some(json!({ "owner": owner })),
                },
                now,
            )
            .await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    async fn comment(&self, actor: &User, id: &str, text: &str) -> Result<(), AppError> {
        let text = required(text, "comment")?;
        self.note(
            actor,
            id,
            "comment",
            text,
            None,
            "ticket.comment",
            json!({ "comment": text }),
        )
        .await
    }

    async fn add_evidence(
        &self,
        actor: &User,
        id: &str,
        kind: &str,
        text: &str,
    ) -> Result<(), AppError> {
        let text = required(text, "evidence")?;
        let kind = match kind {
            "text" => "evidence_text",
            "reference" => "evidence_ref",
            other => {
                return Err(AppError::Invalid {
                    detail: format!("unknown evidence kind `{other}` (text or reference)"),
                });
            }
        };
        self.note(
            actor,
            id,
            kind,
            text,
            None,
            "ticket.evidence",
            json!({ kind: text }),
        )
        .await
    }

    async fn conclude(&self, actor: &User, id: &str, conclusion: &str) -> Result<(), AppError> {
        let conclusion = required(conclusion, "conclusion")?;
        retrying(|| async {
            let now = self.now();
            let mut tx = self.engine.db.begin_write().await?;
            let status: Option<String> =
                sqlx::query_scalar("SELECT status FROM discrepancies WHERE discrepancy_id = $1")
                    .bind(id)
                    .fetch_optional(&mut *tx)
                    .await?;
            match status.as_deref() {
                None => return Err(TxError::App(AppError::NotFound)),
                Some("CLOSED") => return Err(TxError::App(AppError::TicketClosed)),
                Some(_) => {}
            }
            // A proposal that can still be approved waits for its decision;
            // an expired or stale one does not hold the ticket.
            let live: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM fix_proposals WHERE discrepancy_id = $1 AND status = 'PENDING' \
                   AND stale_reason IS NULL AND expires_at > $2",
            )
            .bind(id)
            .bind(now)
            .fetch_one(&mut *tx)
            .await?;
            if live > 0 {
                return Err(TxError::App(AppError::AlreadyProposed));
            }
            let closed = sqlx::query(
                "UPDATE discrepancies SET status = 'CLOSED', conclusion = $1, closed_at = $2, updated_at = $2 \
                 WHERE discrepancy_id = $3 AND status <> 'CLOSED'",
            )
            .bind(conclusion)
            .bind(now)
            .bind(id)
            .execute(&mut *tx)
            .await?;
            if closed.rows_affected() == 0 {
                return Err(TxError::App(AppError::TicketClosed));
            }
            supersede_pending(&mut tx, id, "the ticket was closed with a conclusion").await?;
            insert_note(&mut tx, id, "conclusion", conclusion, None, &actor.username, now).await?;
            audit::append(
                &mut tx,
                &self.engine.db.audit,
                &audit::Entry {
                    actor: actor.username.clone(),
                    action: "ticket.close",
                    object_type: "ticket",
                    object_id: id.to_owned(),
                    before: Some(json!({ "status": status })),
                    after: Some(json!({ "status": "CLOSED", "conclusion": conclusion })),
                },
                now,
            )
            .await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    async fn requery(&self, actor: &User, id: &str) -> Result<ActionResult, AppError> {
        let payment_no =
            self.ticket_payment(id)
                .await?
                .ok_or_else(|| AppError::FixNotApplicable {
                    detail: "the ticket names no payment Reckon has".into(),
                })?;
        let out = self
            .engine
            .requery_payment(&payment_no)
            .await
            .map_err(action_error)?;
        let result = ActionResult {
            class: out.class.into(),
            detail: out.detail,
        };
        self.record_action(actor, id, "ticket.requery", "re-query", &result)
            .await?;
        Ok(result)
    }

    async fn replay(
        &self,
        actor: &User,
        id: &str,
        callback_row: &str,
    ) -> Result<ActionResult, AppError> {
        let payment_no = self.ticket_payment(id).await?;
        let belongs: Option<String> = sqlx::query_scalar(
            "SELECT id FROM payment_callbacks WHERE id = $1 AND payment_no = $2",
        )
        .bind(callback_row)
        .bind(payment_no.as_deref())
        .fetch_optional(&self.engine.db.pool)
        .await
        .map_err(internal)?;
        if belongs.is_none() {
            return Err(AppError::NotFound);
        }
        let out = self
            .engine
            .replay_callback(callback_row)
            .await
            .map_err(action_error)?;
        let result = ActionResult {
            class: out.class.into(),
            detail: out.detail,
        };
        self.record_action(
            actor,
            id,
            "callback.replay",
            &format!("replay of callback {callback_row}"),
            &result,
        )
        .await?;
        Ok(result)
    }

    async fn propose(&self, actor: &User, fix: &FixRequest) -> Result<String, AppError> {
        fixes::propose(self, actor, fix).await
    }

    async fn proposals(&self, status: &str) -> Result<Vec<Proposal>, AppError> {
        reading::proposals(&self.engine.db, status, None, self.now())
            .await
            .map_err(internal)
    }

    async fn approve(
        &self,
        actor: &User,
        proposal_id: &str,
        comment: &str,
    ) -> Result<ActionResult, AppError> {
        fixes::approve(self, actor, proposal_id, comment).await
    }

    async fn reject(&self, actor: &User, proposal_id: &str, comment: &str) -> Result<(), AppError> {
        fixes::reject(self, actor, proposal_id, comment).await
    }

    async fn audit(&self, filter: &AuditFilter) -> Result<AuditPage, AppError> {
        reading::audit(&self.engine.db, filter)
            .await
            .map_err(internal)
    }

    async fn dashboard(
        &self,
        day: Option<&str>,
        provider: Option<&str>,
    ) -> Result<Dashboard, AppError> {
        self.dashboard_of(day, provider).await
    }

    async fn callbacks(&self, filter: &CallbackFilter) -> Result<CallbackPage, AppError> {
        self.callback_page(filter).await
    }

    async fn callback(&self, id: &str) -> Result<CallbackDetail, AppError> {
        self.callback_detail(id).await
    }

    async fn replay_callback(&self, actor: &User, id: &str) -> Result<ActionResult, AppError> {
        self.replay_one(&actor.username, id, None).await
    }

    async fn start_bulk_replay(
        &self,
        actor: &User,
        provider: &str,
        from: &str,
        to: &str,
    ) -> Result<String, AppError> {
        self.start_replay_job(actor, provider, from, to).await
    }

    async fn replay_jobs(&self) -> Result<Vec<ReplayJob>, AppError> {
        self.replay_jobs_list(None).await
    }

    async fn payments(&self, filter: &PaymentFilter) -> Result<PaymentPage, AppError> {
        self.payment_page(filter).await
    }

    async fn payment(&self, payment_no: &str) -> Result<PaymentView, AppError> {
        self.payment_view(payment_no).await
    }

    async fn runs(&self, after: Option<&str>) -> Result<RunPage, AppError> {
        self.run_page(after).await
    }

    async fn resume_run(&self, actor: &User, id: &str) -> Result<(), AppError> {
        self.resume(actor, id).await
    }

    async fn alerts(&self, open_only: bool) -> Result<Vec<AlertRow>, AppError> {
        self.alert_rows(open_only, 200).await.map_err(internal)
    }

    async fn acknowledge_alert(
        &self,
        actor: &User,
        id: &str,
        comment: &str,
    ) -> Result<(), AppError> {
        self.ack(actor, id, comment).await
    }
}
