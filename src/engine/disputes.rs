//! A provider's dispute (chargeback, inquiry), taken in as refunds are:
//! the verified notification stored and applied in one transaction, so a
//! dispute is recorded exactly once with its callback. A dispute moves no
//! payment — the payment stays as paid as it was; what moves is the
//! dispute's own state, its balance movements and its DISPUTE ticket.
//!
//! Events are ordered by the provider's time of them (and, in the same
//! instant, by the dispute's life: inquiry, open, evidence submitted, an
//! end): an older event arriving after a newer one is kept in the
//! dispute's history but moves nothing back. Money moved is counted once
//! per the provider's id of the movement, whatever order or how often it
//! is told.

use super::intake::Heard;
use super::{Engine, retry_delay};
use crate::domain::{Class, DisputeStatus, Severity, TicketStatus};
use crate::providers::{Answer, DisputeNotice, Provider};
use crate::store;
use crate::store::audit::{self, Entry};
use crate::store::disputes::{self, DisputeRow, EventRow, NewMovement};
use crate::store::{callbacks, payments, tickets};
use http::HeaderMap;
use serde_json::json;

/// The dedupe key of the ticket a notified dispute opens.
pub fn ticket_key(provider: &str, dispute_id: &str) -> String {
    format!("{}:{provider}:{dispute_id}", Class::Dispute.as_str())
}

fn time_text(micros: i64) -> String {
    jiff::Timestamp::from_microsecond(micros).map_or_else(|_| micros.to_string(), |t| t.to_string())
}

/// What applying a dispute notice did, for the callback's outcome.
#[derive(Debug, PartialEq, Eq)]
pub enum DisputeApplied {
    /// It moved the dispute (or opened it).
    Moved,
    /// Older than what was known: kept in the history only.
    Older,
}

impl DisputeApplied {
    pub fn class(&self) -> &'static str {
        match self {
            DisputeApplied::Moved => "dispute",
            DisputeApplied::Older => "dispute_older",
        }
    }
}

/// Applies a verified dispute notice in the caller's transaction.
pub(super) async fn apply_dispute_in(
    conn: &mut store::Conn,
    keys: &store::audit_keys::Keys,
    provider: &str,
    n: &DisputeNotice,
    callback_row: &str,
    trace_id: &str,
    now: i64,
) -> store::Result<DisputeApplied> {
    // The payment it concerns: the one the provider echoes, else the one
    // its transaction is bound to.
    let txn = n.payment_txn_id.as_ref().map(|t| t.as_str());
    let payment_no = match (&n.payment_no, txn) {
        (Some(no), _) => Some(no.as_str().to_owned()),
        (None, Some(txn)) => payments::bound_to(&mut *conn, provider, txn).await?,
        (None, None) => None,
    };
    let known = disputes::get(&mut *conn, provider, &n.dispute_id).await?;
    let newer = known
        .as_ref()
        .is_none_or(|d| (n.event_at, n.status.rank()) > (d.last_event_at, d.status_rank));
    let mut d = known.clone().unwrap_or_else(|| DisputeRow {
        provider: provider.to_owned(),
        dispute_id: n.dispute_id.clone(),
        payment_no: None,
        provider_txn_id: None,
        amount_minor: n.money.minor,
        currency: n.money.currency.code().to_owned(),
        reason: None,
        status: n.status.as_str().to_owned(),
        provider_status: n.provider_status.clone(),
        status_rank: n.status.rank(),
        evidence_due_at: None,
        last_event_at: n.event_at,
        opened_at: n.event_at,
        closed_at: None,
        ticket_id: None,
        updated_at: now,
    });
    d.opened_at = d.opened_at.min(n.event_at);
    d.payment_no = d.payment_no.or(payment_no);
    d.provider_txn_id = d.provider_txn_id.or(txn.map(str::to_owned));
    if newer {
        d.amount_minor = n.money.minor;
        d.currency = n.money.currency.code().to_owned();
        d.reason = n.reason.clone().or(d.reason);
        d.status = n.status.as_str().to_owned();
        d.provider_status = n.provider_status.clone();
        d.status_rank = n.status.rank();
        d.evidence_due_at = n.evidence_due_at.or(d.evidence_due_at);
        d.last_event_at = n.event_at;
        d.closed_at = n.status.is_final().then_some(n.event_at);
    } else {
        // An older event still fills in what nothing newer said.
        d.reason = d.reason.or(n.reason.clone());
        d.evidence_due_at = d.evidence_due_at.or(n.evidence_due_at);
    }
    d.updated_at = now;
    let status: DisputeStatus = d.status.parse().map_err(store::undecodable)?;

    for m in &n.movements {
        disputes::add_movement(
            conn,
            &NewMovement {
                provider,
                movement_id: &m.id,
                dispute_id: &n.dispute_id,
                kind: if m.reinstated {
                    disputes::REINSTATED
                } else {
                    disputes::WITHDRAWN
                },
                amount_minor: m.money.minor,
                fee_minor: m.fee_minor,
                currency: m.money.currency.code(),
                moved_at: m.at,
            },
        )
        .await?;
    }

    // Its ticket: the one it has, one a run opened from the balance before
    // any notification, or a new one.
    let ticket_id = match d.ticket_id.clone() {
        Some(id) => id,
        None => match tickets::open_recon_dispute(&mut *conn, provider, &n.dispute_id).await? {
            Some(id) => id,
            None => open_ticket(conn, &d, n, trace_id, now).await?,
        },
    };
    d.ticket_id = Some(ticket_id.clone());
    disputes::put(conn, &d).await?;
    disputes::add_event(
        conn,
        provider,
        &n.dispute_id,
        &EventRow {
            callback_row: callback_row.to_owned(),
            event_type: n.event_type.clone(),
            status: n.status.as_str().to_owned(),
            provider_status: n.provider_status.clone(),
            event_at: n.event_at,
            applied: i64::from(newer),
            received_at: now,
        },
    )
    .await?;

    // A decided dispute moving on (an appeal, a second chargeback): its
    // closed ticket is a person's again, concluded anew if this decides it.
    let was = known.as_ref().map(|k| k.status.as_str());
    let decided = was.is_some_and(|w| w.parse().is_ok_and(DisputeStatus::is_final));
    if newer && decided && was != Some(&d.status) {
        reopen_ticket(
            conn,
            keys,
            &ticket_id,
            was.unwrap_or(""),
            &d,
            callback_row,
            now,
        )
        .await?;
    }

    // The ticket is due when the answer is (its detail shows the
    // dispute's events from `dispute_events`).
    if tickets::status_of(&mut *conn, &ticket_id).await?.as_deref()
        != Some(TicketStatus::Closed.as_str())
    {
        tickets::set_due(&mut *conn, &ticket_id, d.evidence_due_at).await?;
    }
    if newer && status.is_final() {
        let moved = disputes::moved(&mut *conn, provider, &n.dispute_id).await?;
        let conclusion = format!(
            "dispute {} {} at {}: {} withdrawn, {} reinstated, {} in dispute fees ({})",
            n.dispute_id,
            status,
            provider,
            moved.withdrawn_minor,
            moved.reinstated_minor,
            moved.fee_minor,
            d.currency
        );
        let closing = json!({ "action": "dispute decided", "at": now, "detail": conclusion });
        if tickets::close_with(conn, &ticket_id, &closing, &conclusion, now).await? {
            let audited = Entry {
                actor: format!("provider:{provider}"),
                action: "ticket.close",
                object_type: "ticket",
                object_id: ticket_id.clone(),
                before: Some(
                    json!({ "status": "open", "dispute_status": known.map(|k| k.status) }),
                ),
                after: Some(json!({
                    "status": TicketStatus::Closed.as_str(),
                    "dispute_id": n.dispute_id,
                    "dispute_status": status.as_str(),
                    "callback": callback_row,
                    "conclusion": conclusion,
                })),
            };
            audit::append(conn, keys, &audited, now).await?;
        }
    }
    Ok(if newer {
        DisputeApplied::Moved
    } else {
        DisputeApplied::Older
    })
}

/// Moves a dispute's closed ticket back IN_PROGRESS (its conclusion
/// cleared), with a note and a `ticket.reopen` audit entry.
async fn reopen_ticket(
    conn: &mut store::Conn,
    keys: &store::audit_keys::Keys,
    ticket_id: &str,
    was: &str,
    d: &DisputeRow,
    callback_row: &str,
    now: i64,
) -> store::Result<()> {
    let back = tickets::Move::new(TicketStatus::InProgress, &[TicketStatus::Closed], now);
    if tickets::move_ticket(conn, ticket_id, &back).await? == 0 {
        return Ok(());
    }
    let actor = format!("provider:{}", d.provider);
    let body = format!(
        "reopened: dispute {} was {was}, {} now says {} ({})",
        d.dispute_id, d.provider, d.status, d.provider_status
    );
    tickets::insert_note(conn, ticket_id, "reopen", &body, None, &actor, now).await?;
    let entry = Entry {
        actor,
        action: "ticket.reopen",
        object_type: "ticket",
        object_id: ticket_id.to_owned(),
        before: Some(json!({ "status": TicketStatus::Closed.as_str(), "dispute_status": was })),
        after: Some(json!({
            "status": TicketStatus::InProgress.as_str(),
            "dispute_id": d.dispute_id,
            "dispute_status": d.status,
            "callback": callback_row,
        })),
    };
    audit::append(conn, keys, &entry, now).await?;
    Ok(())
}

/// A new DISPUTE ticket: HIGH — the provider has taken (or will take) the
/// money back and only an answer by the evidence due date can keep it, a
/// deadline the ticket's SLA follows; not CRITICAL, as Reckon's own records
/// are not wrong and no goods ship on it.
async fn open_ticket(
    conn: &mut store::Conn,
    d: &DisputeRow,
    n: &DisputeNotice,
    trace_id: &str,
    now: i64,
) -> store::Result<String> {
    let local = match d.payment_no.as_deref() {
        Some(no) => payments::brief(&mut *conn, no).await?,
        None => None,
    };
    let reason = format!(
        "dispute {} opened at {} over {}{}{}",
        n.dispute_id,
        d.provider,
        n.money.shown(),
        n.reason
            .as_deref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default(),
        n.evidence_due_at
            .map(|due| format!("; evidence due {}", time_text(due)))
            .unwrap_or_default(),
    );
    let details = json!({
        "reason": reason,
        "dispute_id": n.dispute_id,
        "notified": true,
    })
    .to_string();
    let key = ticket_key(&d.provider, &n.dispute_id);
    let status = n.status.as_str();
    tickets::open_discrepancy(
        &mut *conn,
        &tickets::NewDiscrepancy {
            dedupe_key: &key,
            class: Class::Dispute,
            severity: Severity::High,
            provider: &d.provider,
            payment_no: d.payment_no.as_deref(),
            provider_txn_id: d.provider_txn_id.as_deref(),
            trace_id: Some(trace_id),
            local: local
                .as_ref()
                .map(|p| (p.amount_minor, p.currency.as_str(), p.status.as_str())),
            provider_side: Some((n.money.minor, n.money.currency.code(), status)),
            source: "callback",
            details: &details,
            now,
        },
    )
    .await?;
    let (id, _) = tickets::by_key(&mut *conn, &key)
        .await?
        .ok_or_else(store::not_found)?;
    Ok(id)
}

impl Engine {
    /// Stores a verified dispute notification (insert-if-absent on the
    /// same key as every callback) and applies it.
    pub(super) async fn receive_dispute(
        &self,
        provider: &dyn Provider,
        headers: &HeaderMap,
        body: &[u8],
        n: &DisputeNotice,
        facts: &str,
        trace_id: &str,
    ) -> Answer {
        let id = uuid::Uuid::now_v7().to_string();
        let name = provider.name().as_str();
        let (audit, now, row_id) = (&self.db.audit, self.now(), id.as_str());
        let heard = Heard {
            kind: "dispute",
            id: &id,
            received_at: now,
            provider,
            headers,
            body,
            callback_id: n.callback_id.as_str(),
            payment_no: n.payment_no.as_ref().map(|p| p.as_str()),
            payment_txn_id: n.payment_txn_id.as_ref().map(|t| t.as_str()),
            provider_status: &n.provider_status,
            facts,
            trace_id,
        };
        let (answer, _) = self
            .store_and_apply(
                &heard,
                async |c: &mut store::Conn, row: &callbacks::NewCallback<'_>| {
                    callbacks::insert_if_absent(c, row).await
                },
                async |c: &mut store::Conn| {
                    apply_dispute_in(c, audit, name, n, row_id, trace_id, now).await
                },
                |a| a.class(),
            )
            .await;
        answer
    }

    /// A stored dispute notification, applied again by the retry worker.
    pub(super) async fn process_dispute(
        &self,
        id: &str,
        provider: &str,
        n: &DisputeNotice,
        trace_id: &str,
    ) {
        let result = async {
            let now = self.now();
            let mut tx = self.db.begin_write().await?;
            let applied =
                apply_dispute_in(&mut tx, &self.db.audit, provider, n, id, trace_id, now).await?;
            callbacks::succeeded(&mut *tx, id, applied.class(), now).await?;
            tx.commit().await?;
            Ok::<_, store::Error>(())
        }
        .await;
        if let Err(e) = result {
            let now = self.now();
            let error = format!("apply failed: {e}");
            let tries = callbacks::retry_count(&self.db.pool, id).await.unwrap_or(0) + 1;
            let next =
                (tries < self.settings().callback_max_tries).then(|| now + retry_delay(tries));
            if let Err(e) = callbacks::failed(&self.db.pool, id, &error, next, now).await {
                tracing::error!(error = %e, "could not record the dispute notification's processing");
            }
        }
    }
}
