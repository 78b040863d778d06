//! A person's actions on one ticket: assign it, comment, attach evidence
//! (text, a reference or a small file), conclude it, re-query its payment
//! at the provider or replay one of its stored callbacks; reopen a ticket a
//! bulk close closed, when that close is undone. Working on an OPEN ticket
//! takes it IN_PROGRESS; each action is one transaction with its note and
//! audit entry.

use super::{action_error, entry, required};
use crate::accounts::{TxError, internal, retrying};
use crate::domain::TicketStatus::{self, AwaitingApproval, Closed, InProgress, Open};
use crate::engine::Engine;
use crate::store::tickets::{self, Move, Only, insert_note, move_ticket};
use crate::store::{audit, callbacks, proposals, users};
use app::error::AppError;
use app::tickets::{ActionResult, ProposalComment};
use app::types::User;
use serde_json::json;

/// Why a ticket could not be worked on: closed, or not there.
async fn closed_or_missing(engine: &Engine, id: &str) -> AppError {
    match tickets::status_of(&engine.db.pool, id).await {
        Ok(Some(_)) => AppError::TicketClosed,
        Ok(None) => AppError::NotFound,
        Err(e) => internal(e),
    }
}

/// A ticket's note of `kind` (an OPEN ticket becomes IN_PROGRESS; one
/// awaiting approval stays so) with its audit entry, in one transaction.
#[allow(clippy::too_many_arguments)]
async fn note(
    engine: &Engine,
    actor: &User,
    id: &str,
    kind: &str,
    body: &str,
    file: Option<(&str, &str, &[u8])>,
    action: &'static str,
    after: serde_json::Value,
) -> Result<(), AppError> {
    retrying(|| async {
        let now = engine.now();
        let mut tx = engine.db.begin_write().await?;
        let taken_up = Move {
            stay: &[InProgress, AwaitingApproval],
            ..Move::new(InProgress, &[Open], now)
        };
        if move_ticket(&mut tx, id, &taken_up).await? == 0 {
            return Err(TxError::App(closed_or_missing(engine, id).await));
        }
        insert_note(&mut tx, id, kind, body, file, &actor.username, now).await?;
        let entry = entry(actor, action, ("ticket", id), None, after.clone());
        audit::append(&mut tx, &engine.db.audit, &entry, now).await?;
        tx.commit().await?;
        Ok(())
    })
    .await
}

pub async fn comment(engine: &Engine, actor: &User, id: &str, text: &str) -> Result<(), AppError> {
    let text = required(text, "comment")?;
    let after = json!({ "comment": text });
    note(
        engine,
        actor,
        id,
        "comment",
        text,
        None,
        "ticket.comment",
        after,
    )
    .await
}

/// A comment on a proposal without deciding it: a note on its ticket and
/// an audit entry on the proposal, in one transaction.
pub async fn comment_proposal(
    engine: &Engine,
    actor: &User,
    proposal: &str,
    text: &str,
) -> Result<ProposalComment, AppError> {
    let text = required(text, "comment")?;
    let Some(p) = proposals::get(&engine.db.pool, proposal, engine.now())
        .await
        .map_err(internal)?
    else {
        return Err(AppError::NotFound);
    };
    let at = retrying(|| async {
        let now = engine.now();
        let mut tx = engine.db.begin_write().await?;
        let taken_up = Move {
            stay: &[InProgress, AwaitingApproval],
            ..Move::new(InProgress, &[Open], now)
        };
        if move_ticket(&mut tx, &p.ticket_id, &taken_up).await? == 0 {
            return Err(TxError::App(closed_or_missing(engine, &p.ticket_id).await));
        }
        let body = format!("on the proposed {}: {text}", p.kind.as_str());
        insert_note(
            &mut tx,
            &p.ticket_id,
            "comment",
            &body,
            None,
            &actor.username,
            now,
        )
        .await?;
        let after = json!({ "comment": text, "ticket": p.ticket_id });
        let entry = entry(
            actor,
            "proposal.comment",
            ("proposal", proposal),
            None,
            after,
        );
        audit::append(&mut tx, &engine.db.audit, &entry, now).await?;
        tx.commit().await?;
        Ok(now)
    })
    .await?;
    Ok(ProposalComment {
        at,
        author: actor.username.clone(),
        text: text.to_owned(),
    })
}

/// `kind`: text or reference.
pub async fn add_evidence(
    engine: &Engine,
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
    let after = json!({ kind: text });
    note(
        engine,
        actor,
        id,
        kind,
        text,
        None,
        "ticket.evidence",
        after,
    )
    .await
}

/// A small file attached as evidence, kept in the database.
pub async fn add_file(
    engine: &Engine,
    actor: &User,
    id: &str,
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
    let file = Some((name, content_type, bytes));
    let after = json!({ "file": name, "bytes": bytes.len(), "sha256": hash });
    note(
        engine,
        actor,
        id,
        "evidence_file",
        name,
        file,
        "ticket.evidence",
        after,
    )
    .await
}

/// Gives the ticket to an active operator or supervisor.
pub async fn assign(engine: &Engine, actor: &User, id: &str, owner: &str) -> Result<(), AppError> {
    let owner = required(owner, "owner")?;
    let worker = users::worker(&engine.db.pool, owner)
        .await
        .map_err(internal)?;
    if worker.is_none() {
        return Err(AppError::Invalid {
            detail: format!("{owner} is not an active operator or supervisor"),
        });
    }
    retrying(|| async {
        let now = engine.now();
        let mut tx = engine.db.begin_write().await?;
        let Some(before) = tickets::owner_if_open(&mut *tx, id).await? else {
            return Err(TxError::App(closed_or_missing(engine, id).await));
        };
        // Read open in this transaction: the assignment itself asks no
        // more of the ticket's state.
        let assigned = Move {
            stay: &[InProgress, AwaitingApproval, Closed],
            owner: Some(owner),
            ..Move::new(InProgress, &[Open], now)
        };
        move_ticket(&mut tx, id, &assigned).await?;
        let body = format!("→ {owner}");
        insert_note(&mut tx, id, "assign", &body, None, &actor.username, now).await?;
        let entry = entry(
            actor,
            "ticket.assign",
            ("ticket", id),
            Some(json!({ "owner": before })),
            json!({ "owner": owner }),
        );
        audit::append(&mut tx, &engine.db.audit, &entry, now).await?;
        tx.commit().await?;
        Ok(())
    })
    .await
}

/// Closes the ticket with a person's conclusion; its waiting proposals go
/// with it. Not while a proposal can still be approved.
pub async fn conclude(
    engine: &Engine,
    actor: &User,
    id: &str,
    conclusion: &str,
) -> Result<(), AppError> {
    let conclusion = required(conclusion, "conclusion")?;
    retrying(|| async {
        let now = engine.now();
        let mut tx = engine.db.begin_write().await?;
        let status = tickets::status_of(&mut *tx, id).await?;
        match status.as_deref().map(str::parse) {
            None => return Err(TxError::App(AppError::NotFound)),
            Some(Ok(Closed)) => return Err(TxError::App(AppError::TicketClosed)),
            Some(_) => {}
        }
        // A proposal that can still be approved waits for its decision;
        // an expired or stale one does not hold the ticket.
        if proposals::live_count(&mut *tx, id, now).await? > 0 {
            return Err(TxError::App(AppError::AlreadyProposed));
        }
        let from = TicketStatus::predecessors(Closed);
        let closed = Move {
            conclusion: Some(conclusion),
            ..Move::new(Closed, &from, now)
        };
        if move_ticket(&mut tx, id, &closed).await? == 0 {
            return Err(TxError::App(AppError::TicketClosed));
        }
        let why = "the ticket was closed with a conclusion";
        proposals::supersede_pending(&mut tx, id, why).await?;
        insert_note(
            &mut tx,
            id,
            "conclusion",
            conclusion,
            None,
            &actor.username,
            now,
        )
        .await?;
        let entry = entry(
            actor,
            "ticket.close",
            ("ticket", id),
            Some(json!({ "status": status })),
            json!({ "status": Closed.as_str(), "conclusion": conclusion }),
        );
        audit::append(&mut tx, &engine.db.audit, &entry, now).await?;
        tx.commit().await?;
        Ok(())
    })
    .await
}

/// Whether an undo reopened a ticket, or why not.
pub enum Reopened {
    Yes,
    /// Left as it is: no longer closed, or closed since by something else.
    No(String),
}

/// Reopens a ticket bulk close `job` closed with `conclusion`: back
/// IN_PROGRESS (the state machine's one move out of CLOSED), its
/// conclusion cleared, a note and a `ticket.reopen` audit entry. A ticket
/// no longer closed with that conclusion is left as it is. Proposals the
/// close superseded stay superseded: a fix is proposed afresh.
pub async fn reopen(
    engine: &Engine,
    actor: &User,
    id: &str,
    job: &str,
    conclusion: &str,
) -> Result<Reopened, AppError> {
    retrying(|| async {
        let now = engine.now();
        let mut tx = engine.db.begin_write().await?;
        let Some(t) = tickets::ticket(&mut *tx, id).await? else {
            return Err(TxError::App(AppError::NotFound));
        };
        if t.ticket_status() != Some(Closed) {
            return Ok(Reopened::No(format!(
                "no longer closed (it is {})",
                t.status
            )));
        }
        if t.conclusion.as_deref() != Some(conclusion) {
            return Ok(Reopened::No(
                "closed since with another conclusion".to_owned(),
            ));
        }
        if move_ticket(&mut tx, id, &Move::new(InProgress, &[Closed], now)).await? == 0 {
            return Ok(Reopened::No("no longer closed".to_owned()));
        }
        let body = format!("reopened: bulk close {job} undone");
        insert_note(&mut tx, id, "reopen", &body, None, &actor.username, now).await?;
        let entry = entry(
            actor,
            "ticket.reopen",
            ("ticket", id),
            Some(json!({ "status": Closed.as_str(), "conclusion": conclusion })),
            json!({ "status": InProgress.as_str(), "undoes": job }),
        );
        audit::append(&mut tx, &engine.db.audit, &entry, now).await?;
        tx.commit().await?;
        Ok(Reopened::Yes)
    })
    .await
}

/// The payment the ticket names, if the ticket is open.
async fn ticket_payment(engine: &Engine, id: &str) -> Result<Option<String>, AppError> {
    match tickets::payment_of(&engine.db.pool, id)
        .await
        .map_err(internal)?
    {
        None => Err(AppError::NotFound),
        Some((_, status)) if status.parse() == Ok(Closed) => Err(AppError::TicketClosed),
        Some((payment_no, _)) => Ok(payment_no),
    }
}

/// Asks the provider about the ticket's payment now; `apply` takes the
/// answer.
pub async fn requery(engine: &Engine, actor: &User, id: &str) -> Result<ActionResult, AppError> {
    let payment_no =
        ticket_payment(engine, id)
            .await?
            .ok_or_else(|| AppError::FixNotApplicable {
                detail: "the ticket names no payment Reckon has".into(),
            })?;
    let out = engine
        .requery_payment(&payment_no)
        .await
        .map_err(action_error)?;
    let result = ActionResult {
        class: out.class.into(),
        detail: out.detail,
    };
    record_action(engine, actor, id, "ticket.requery", "re-query", &result).await?;
    Ok(result)
}

/// Replays one of the stored callbacks of the ticket's payment.
pub async fn replay(
    engine: &Engine,
    actor: &User,
    id: &str,
    callback_row: &str,
) -> Result<ActionResult, AppError> {
    let payment_no = ticket_payment(engine, id).await?;
    let belongs = callbacks::of_payment_by_id(&engine.db.pool, callback_row, payment_no.as_deref())
        .await
        .map_err(internal)?;
    if belongs.is_none() {
        return Err(AppError::NotFound);
    }
    let out = engine
        .replay_callback(callback_row, &actor.username, None)
        .await
        .map_err(action_error)?;
    let result = ActionResult {
        class: out.class.into(),
        detail: out.detail,
    };
    let what = format!("replay of callback {callback_row}");
    record_action(engine, actor, id, "callback.replay", &what, &result).await?;
    Ok(result)
}

/// Records a low-risk action on the ticket; a STATUS_LAG ticket whose
/// payment is now paid closes (the lag is over).
async fn record_action(
    engine: &Engine,
    actor: &User,
    id: &str,
    action: &'static str,
    what: &str,
    result: &ActionResult,
) -> Result<(), AppError> {
    retrying(|| async {
        let now = engine.now();
        let mut tx = engine.db.begin_write().await?;
        let done = json!({ "action": what, "result": result.class, "detail": result.detail, "by": actor.username, "at": now });
        tickets::append_action(&mut tx, id, &done, now).await?;
        let from = TicketStatus::predecessors(Closed);
        let conclusion = format!("lag resolved: the payment is recorded as paid ({what})");
        let lag_over = Move {
            conclusion: Some(&conclusion),
            only_if: Some(Only::LagResolved),
            ..Move::new(Closed, &from, now)
        };
        if move_ticket(&mut tx, id, &lag_over).await? == 1 {
            proposals::supersede_pending(&mut tx, id, "the lag resolved itself").await?;
        }
        let body = format!("{what}: {} — {}", result.class, result.detail);
        insert_note(&mut tx, id, "action", &body, None, &actor.username, now).await?;
        let entry = entry(actor, action, ("ticket", id), None, done.clone());
        audit::append(&mut tx, &engine.db.audit, &entry, now).await?;
        tx.commit().await?;
        Ok(())
    })
    .await
}
