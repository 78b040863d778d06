//! An approved fix carried out inside the approving transaction: the
//! approval's audit entry; the payment as the proposal saw it, or the fix
//! is stale; the fix itself, one function per kind, every status move
//! through `engine::apply` (source = manual fix); what it did on the
//! proposal and in the audit log; the ticket closed with the conclusion.

use super::{NotExecuted, changed_since, entry, hold_seen};
use crate::domain::TicketStatus::{self, Closed};
use crate::domain::{
    Class, Currency, Money, PaymentNo, PaymentStatus, ProviderName, ProviderTxnId,
};
use crate::engine::{
    AmountChange, Applied, Engine, Outcome, Source, apply_in, change_amount_in, describe,
    refund_late_success_in,
};
use crate::store::Conn;
use crate::store::payments::{self, PaymentBrief};
use crate::store::tickets::{self, Move, Only, insert_note, move_ticket};
use crate::store::{audit, bank, match_groups, proposals};
use app::tickets::{ActionResult, FixKind, Proposal};
use app::types::User;
use serde_json::{Value, json};
use std::sync::Arc;

/// The fix being carried out: what it intends, and what it did so far.
struct Fix<'a> {
    engine: &'a Engine,
    p: &'a Proposal,
    actor: &'a User,
    /// The payment's version the proposal saw (none: it creates it).
    version: Option<i64>,
    before: Value,
    after: Value,
    sinks: Arc<Vec<crate::store::sinks::Route>>,
    evidence: String,
    trace_id: String,
    now: i64,
    done: Vec<String>,
}

impl Fix<'_> {
    /// The proposal's payment.
    fn payment_no(&self) -> String {
        self.p.payment_no.clone().unwrap_or_default()
    }

    /// The outcome that takes payment `b` to `target` with `minor`.
    fn outcome(
        &self,
        b: &PaymentBrief,
        target: PaymentStatus,
        minor: i64,
    ) -> Result<Outcome, NotExecuted> {
        let failed = |e: String| NotExecuted::Failed(e);
        let currency = Currency::parse(&b.currency).map_err(|e| failed(e.to_string()))?;
        Ok(Outcome {
            payment_no: PaymentNo::parse(&b.payment_no).map_err(|e| failed(e.to_string()))?,
            provider: ProviderName::parse(&b.provider).map_err(|e| failed(e.to_string()))?,
            provider_txn_id: b
                .provider_txn_id
                .as_deref()
                .and_then(|t| ProviderTxnId::parse(t).ok()),
            target,
            money: Money::new(minor, currency),
            source: Source::ManualFix,
            evidence: self.evidence.clone(),
            trace_id: self.trace_id.clone(),
            paid_at: None,
        })
    }

    /// When the proposal says the money was taken (`None`: now).
    fn paid_at(&self) -> Option<i64> {
        self.after["paid_at"].as_i64()
    }

    /// `o` through `apply`; the fix fails unless the payment moved.
    async fn apply(&self, tx: &mut Conn, o: &Outcome) -> Result<String, NotExecuted> {
        match apply_in(tx, self.engine.db.kind, &self.sinks, o, self.now).await? {
            a @ Applied::Moved { .. } => Ok(describe(&a)),
            other => Err(NotExecuted::Failed(describe(&other))),
        }
    }
}

/// The payment `no`, which a fix needs there.
async fn brief(tx: &mut Conn, no: &str) -> Result<PaymentBrief, NotExecuted> {
    payments::brief(tx, no)
        .await?
        .ok_or_else(|| NotExecuted::Failed("payment missing".into()))
}

/// The approval's audit entry, the fix itself, the ticket closed: all in
/// the approving transaction.
pub(super) async fn execute(
    engine: &Engine,
    tx: &mut Conn,
    actor: &User,
    p: &Proposal,
    comment: &str,
    now: i64,
) -> Result<ActionResult, NotExecuted> {
    let approved = entry(
        actor,
        "fix.approve",
        ("proposal", &p.id),
        Some(json!({ "status": "PENDING", "proposer": p.proposer })),
        json!({ "status": "APPROVED", "comment": comment }),
    );
    audit::append(tx, &engine.db.audit, &approved, now).await?;
    let (version, before, after) = proposals::intent(&mut *tx, &p.id).await?;
    let json = |t: &str| serde_json::from_str(t).unwrap_or(Value::Null);
    let mut fix = Fix {
        engine,
        p,
        actor,
        version,
        before: json(&before),
        after: json(&after),
        sinks: engine.sink_names(),
        evidence: format!("proposal {}", p.id),
        trace_id: uuid::Uuid::new_v4().simple().to_string(),
        now,
        done: Vec::new(),
    };
    unchanged_since_proposed(tx, &fix).await?;
    match p.kind {
        FixKind::Backfill => backfill(tx, &mut fix).await?,
        FixKind::ClosePayment => close_payment(tx, &mut fix).await?,
        FixKind::AcceptAmount => accept_amount(tx, &mut fix).await?,
        FixKind::Merge => merge(tx, &mut fix).await?,
        FixKind::ReleaseHold => release_hold(tx, &mut fix).await?,
        FixKind::AcceptPayment => accept_payment(tx, &mut fix).await?,
        FixKind::RefundPayment => refund_payment(tx, &mut fix).await?,
        FixKind::GroupMatch => group_match(tx, &mut fix).await?,
    }
    lags_over(tx, &mut fix).await?;
    let summary = fix.done.join("; ");
    proposals::set_result(tx, &p.id, &summary).await?;
    let object = match (&p.payment_no, p.kind) {
        (None, FixKind::GroupMatch) => (
            "match_group",
            fix.after["group"].as_str().unwrap_or_default(),
        ),
        (no, _) => ("payment", no.as_deref().unwrap_or_default()),
    };
    let executed = entry(
        actor,
        "fix.execute",
        object,
        serde_json::from_str(&p.before).ok(),
        json!({ "proposal": p.id, "kind": p.kind, "intended": fix.after, "done": fix.done }),
    );
    audit::append(tx, &engine.db.audit, &executed, now).await?;
    let conclusion = format!(
        "{} executed ({}); approved by {}: {comment}",
        p.kind, summary, actor.username
    );
    // The approval found the ticket open in this transaction: it closes
    // whatever it is now.
    let from = TicketStatus::predecessors(Closed);
    let closed = Move {
        stay: &[Closed],
        conclusion: Some(&conclusion),
        ..Move::new(Closed, &from, now)
    };
    move_ticket(tx, &p.ticket_id, &closed).await?;
    insert_note(
        tx,
        &p.ticket_id,
        "conclusion",
        &conclusion,
        None,
        &actor.username,
        now,
    )
    .await?;
    let ticket_closed = entry(
        actor,
        "ticket.close",
        ("ticket", &p.ticket_id),
        Some(json!({ "status": TicketStatus::AwaitingApproval.as_str() })),
        json!({ "status": Closed.as_str(), "conclusion": conclusion }),
    );
    audit::append(tx, &engine.db.audit, &ticket_closed, now).await?;
    Ok(ActionResult {
        class: "executed".into(),
        detail: summary,
    })
}

/// The payment's other STATUS_LAG tickets, once the fix left it paid: the
/// provider said paid and now Reckon says so too — closed as a replay or a
/// re-query closes them, their waiting proposals superseded.
async fn lags_over(tx: &mut Conn, fix: &mut Fix<'_>) -> Result<(), NotExecuted> {
    let Some(no) = fix.p.payment_no.as_deref() else {
        return Ok(());
    };
    let (p, now) = (fix.p, fix.now);
    let conclusion = format!(
        "lag resolved: the payment is recorded as paid ({} of proposal {} on ticket {})",
        p.kind, p.id, p.ticket_id
    );
    let from = TicketStatus::predecessors(Closed);
    for other in tickets::of_payment(&mut *tx, no).await? {
        if other.discrepancy_id == p.ticket_id
            || other.class != Class::StatusLag.as_str()
            || other.status == Closed.as_str()
        {
            continue;
        }
        let over = Move {
            conclusion: Some(&conclusion),
            only_if: Some(Only::LagResolved),
            ..Move::new(Closed, &from, now)
        };
        if move_ticket(tx, &other.discrepancy_id, &over).await? == 0 {
            continue;
        }
        let id = other.discrepancy_id.as_str();
        proposals::supersede_pending(tx, id, "the lag was resolved by another ticket's fix")
            .await?;
        insert_note(
            tx,
            id,
            "conclusion",
            &conclusion,
            None,
            &fix.actor.username,
            now,
        )
        .await?;
        let closed = entry(
            fix.actor,
            "ticket.close",
            ("ticket", id),
            Some(json!({ "status": other.status })),
            json!({ "status": Closed.as_str(), "conclusion": conclusion }),
        );
        audit::append(tx, &fix.engine.db.audit, &closed, now).await?;
        fix.done.push(format!(
            "STATUS_LAG ticket {id} closed: the payment is paid"
        ));
    }
    Ok(())
}

/// The payment as it was proposed, or refuse: a conditional statement that
/// also locks the row (PostgreSQL) for the rest of the transaction. Its
/// version and its hold (a row of its own, which does not move the
/// version) as the proposal saw them.
async fn unchanged_since_proposed(tx: &mut Conn, fix: &Fix<'_>) -> Result<(), NotExecuted> {
    let Some(no) = &fix.p.payment_no else {
        return Ok(());
    };
    match fix.version {
        Some(v) => {
            let held_then = hold_seen(&fix.before, no);
            if payments::lock_as_seen(tx, no, v, held_then).await? {
                return Ok(());
            }
            let current = payments::version_and_hold(&mut *tx, no).await?;
            Err(NotExecuted::Stale(match current {
                Some((n, held)) => changed_since(no, (n, held.as_deref()), (v, held_then))
                    .unwrap_or_else(|| format!("payment {no} changed since the proposal")),
                None => format!("payment {no} no longer exists"),
            }))
        }
        None if payments::get(&mut *tx, no).await?.is_some() => Err(NotExecuted::Stale(format!(
            "payment {no} exists now; the proposal was to create it"
        ))),
        None => Ok(()),
    }
}

/// The statement's payment made paid: created first if Reckon lacks it
/// (for the order the proposal named), then SUCCEEDED — through PENDING
/// from FAILED, two steps the state machine allows, each through apply.
async fn backfill(tx: &mut Conn, fix: &mut Fix<'_>) -> Result<(), NotExecuted> {
    let (p, after) = (fix.p, &fix.after);
    let no = fix.payment_no();
    let minor = after["amount_minor"].as_i64().unwrap_or_default();
    let currency = after["currency"].as_str().unwrap_or_default().to_owned();
    let txn = after["provider_txn_id"].as_str().map(str::to_owned);
    let ticket = tickets::ticket(&mut *tx, &p.ticket_id)
        .await?
        .ok_or_else(|| NotExecuted::Failed("ticket vanished".into()))?;
    let paid_at = fix.paid_at();
    if fix.version.is_none() {
        let order_no = after["order_no"].as_str().unwrap_or_default().to_owned();
        let (attempt_no, _) = payments::attempts_of(&mut *tx, &order_no).await?;
        payments::insert(
            &mut *tx,
            &payments::NewPayment {
                payment_no: &no,
                order_no: &order_no,
                attempt_no,
                provider: &ticket.provider,
                amount_minor: minor,
                currency: &currency,
                description: Some("backfilled from the provider's statement"),
                created_by: &format!("fix:{}", p.id),
                // Made as of when it was paid, not after: the day it was
                // paid on is the day it belongs to.
                now: paid_at.map_or(fix.now, |at| at.min(fix.now)),
            },
        )
        .await?;
        tickets::set_order_no(tx, &p.ticket_id, &order_no).await?;
        fix.done
            .push(format!("created payment {no} for order {order_no}"));
    }
    let b = brief(tx, &no).await?;
    let with_txn = |mut o: Outcome| {
        o.provider_txn_id = txn.as_deref().and_then(|t| ProviderTxnId::parse(t).ok());
        o.paid_at = paid_at;
        o
    };
    if b.status == PaymentStatus::Failed {
        let o = with_txn(fix.outcome(&b, PaymentStatus::Pending, minor)?);
        let moved = fix.apply(tx, &o).await?;
        fix.done.push(moved);
    }
    let o = with_txn(fix.outcome(&b, PaymentStatus::Succeeded, minor)?);
    let moved = fix.apply(tx, &o).await?;
    fix.done.push(moved);
    Ok(())
}

/// The payment's hold released and the payment CLOSED.
async fn close_payment(tx: &mut Conn, fix: &mut Fix<'_>) -> Result<(), NotExecuted> {
    let no = fix.payment_no();
    if let Some(reason) = payments::release(tx, &no, fix.now).await? {
        fix.done.push(format!("hold released ({reason})"));
    }
    let b = brief(tx, &no).await?;
    let o = fix.outcome(&b, PaymentStatus::Closed, b.amount_minor)?;
    let moved = fix.apply(tx, &o).await?;
    fix.done.push(moved);
    Ok(())
}

/// The provider's amount made final (and the payment paid, if the provider
/// says so and it was not yet).
async fn accept_amount(tx: &mut Conn, fix: &mut Fix<'_>) -> Result<(), NotExecuted> {
    let b = brief(tx, &fix.payment_no()).await?;
    let accepted = fix.after["amount_minor"].as_i64().unwrap_or_default();
    adjust_amount(tx, fix, &b, accepted).await?;
    fix.done.push(format!(
        "amount {} → {} {} (difference {}) recorded",
        b.amount_minor,
        accepted,
        b.currency,
        accepted - b.amount_minor
    ));
    if fix.after["status"] == PaymentStatus::Succeeded.as_str()
        && matches!(b.status, PaymentStatus::Created | PaymentStatus::Pending)
    {
        let mut o = fix.outcome(&b, PaymentStatus::Succeeded, accepted)?;
        o.paid_at = fix.paid_at();
        let moved = fix.apply(tx, &o).await?;
        fix.done.push(moved);
    }
    Ok(())
}

/// The kept payment's hold released; every other one, as the proposal saw
/// it, released and CLOSED.
async fn merge(tx: &mut Conn, fix: &mut Fix<'_>) -> Result<(), NotExecuted> {
    let keep = fix.after["keep"].as_str().unwrap_or_default().to_owned();
    if let Some(reason) = payments::release(tx, &keep, fix.now).await? {
        fix.done.push(format!("{keep}: hold released ({reason})"));
    }
    for c in fix.after["close"].as_array().cloned().unwrap_or_default() {
        let no = c["payment_no"].as_str().unwrap_or_default();
        let v = c["version"].as_i64();
        let b = payments::brief(&mut *tx, no)
            .await?
            .ok_or_else(|| NotExecuted::Failed(format!("payment {no} missing")))?;
        let Some(v) = v else {
            return Err(NotExecuted::Stale(format!(
                "payment {no}: the proposal recorded no version of it"
            )));
        };
        if let Some(why) = changed_since(
            no,
            (b.version, b.hold_reason.as_deref()),
            (v, hold_seen(&fix.before, no)),
        ) {
            return Err(NotExecuted::Stale(why));
        }
        if let Some(reason) = payments::release(tx, no, fix.now).await? {
            fix.done.push(format!("{no}: hold released ({reason})"));
        }
        if b.status != PaymentStatus::Closed {
            let o = fix.outcome(&b, PaymentStatus::Closed, b.amount_minor)?;
            let moved = fix.apply(tx, &o).await?;
            fix.done.push(format!("{no}: {moved}"));
        }
    }
    Ok(())
}

/// The group recorded: each payout settled (by the one credit of an N:1),
/// each credit matched, all under the group's id — or nothing, when any of
/// them was matched meanwhile. Every member's ticket closes with the
/// proposal's own.
async fn group_match(tx: &mut Conn, fix: &mut Fix<'_>) -> Result<(), NotExecuted> {
    let failed = |why: String| NotExecuted::Failed(why);
    let group = fix.after["group"].as_str().unwrap_or_default().to_owned();
    if fix.after["shape"] == "PAYMENTS_TO_ROW" {
        if !match_groups::set_matched(tx, &group, fix.now).await? {
            return Err(failed(format!("group {group} was decided already")));
        }
        payments_to_row(tx, fix).await?;
        return close_members(tx, fix, &group).await;
    }
    // Serialized with the bank's matching pass, which would otherwise
    // settle a member by another credit at the same moment.
    bank::lock_matching(tx, fix.engine.db.kind).await?;
    if !match_groups::set_matched(tx, &group, fix.now).await? {
        return Err(failed(format!("group {group} was decided already")));
    }
    let list = |key: &str| fix.after[key].as_array().cloned().unwrap_or_default();
    let (payouts, credits) = (list("payouts"), list("credits"));
    let entry_of = |c: &Value| c["entry_id"].as_str().unwrap_or_default().to_owned();
    // An N:1's payouts are each settled by its one credit.
    let by = (credits.len() == 1).then(|| entry_of(&credits[0]));
    for p in &payouts {
        let (provider, id) = (
            p["provider"].as_str().unwrap_or_default(),
            p["payout_id"].as_str().unwrap_or_default(),
        );
        if !bank::settle_in_group(tx, provider, id, by.as_deref(), &group, fix.now).await? {
            return Err(failed(format!(
                "payout {id} is no longer waiting for a credit: the group no longer holds"
            )));
        }
    }
    for c in &credits {
        if !bank::match_entry_in_group(tx, &entry_of(c), &group).await? {
            return Err(failed(format!(
                "the bank credit {} is matched already: the group no longer holds",
                c["ref"].as_str().unwrap_or_default()
            )));
        }
    }
    fix.done.push(format!(
        "group {group}: {} payout(s) settled by {} bank credit(s)",
        payouts.len(),
        credits.len()
    ));
    close_members(tx, fix, &group).await
}

/// Each payment of a combined row not yet paid made SUCCEEDED through
/// apply (source manual fix, paid when the row says), each one's hold
/// released — or nothing, when any of them moved meanwhile.
async fn payments_to_row(tx: &mut Conn, fix: &mut Fix<'_>) -> Result<(), NotExecuted> {
    let members = fix.after["payments"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for m in &members {
        let no = m["payment_no"].as_str().unwrap_or_default();
        let b = brief(tx, no).await?;
        if let Some(reason) = payments::release(tx, no, fix.now).await? {
            fix.done.push(format!("{no}: hold released ({reason})"));
        }
        if m["pay"].as_bool() == Some(true) {
            if !matches!(b.status, PaymentStatus::Created | PaymentStatus::Pending) {
                return Err(NotExecuted::Stale(format!(
                    "payment {no} is {} now: the group no longer holds",
                    b.status
                )));
            }
            let mut o = fix.outcome(&b, PaymentStatus::Succeeded, b.amount_minor)?;
            o.paid_at = m["paid_at"].as_i64();
            let moved = fix.apply(tx, &o).await?;
            fix.done.push(format!("{no}: {moved}"));
        } else if b.status != PaymentStatus::Succeeded {
            return Err(NotExecuted::Stale(format!(
                "payment {no} is {} now: the group no longer holds",
                b.status
            )));
        }
    }
    fix.done.push(format!(
        "group {}: {} payment(s) matched to one statement row",
        fix.after["group"].as_str().unwrap_or_default(),
        members.len()
    ));
    Ok(())
}

/// Every member's ticket closed with the proposal's own.
async fn close_members(tx: &mut Conn, fix: &mut Fix<'_>, group: &str) -> Result<(), NotExecuted> {
    let (p, now) = (fix.p, fix.now);
    let conclusion = format!(
        "matched in group {group} ({} of proposal {} on ticket {})",
        p.kind, p.id, p.ticket_id
    );
    let from = TicketStatus::predecessors(Closed);
    for m in match_groups::members(&mut *tx, group).await? {
        let Some((id, status)) = tickets::by_key(&mut *tx, &m.ticket_key).await? else {
            continue;
        };
        if id == p.ticket_id || status == Closed.as_str() {
            continue;
        }
        let closed = Move {
            conclusion: Some(&conclusion),
            ..Move::new(Closed, &from, now)
        };
        if move_ticket(tx, &id, &closed).await? == 0 {
            continue;
        }
        proposals::supersede_pending(tx, &id, "matched in a group").await?;
        insert_note(
            tx,
            &id,
            "conclusion",
            &conclusion,
            None,
            &fix.actor.username,
            now,
        )
        .await?;
        let entry = entry(
            fix.actor,
            "ticket.close",
            ("ticket", &id),
            Some(json!({ "status": status })),
            json!({ "status": Closed.as_str(), "conclusion": conclusion }),
        );
        audit::append(tx, &fix.engine.db.audit, &entry, now).await?;
        fix.done.push(format!("ticket {id} closed"));
    }
    Ok(())
}

async fn release_hold(tx: &mut Conn, fix: &mut Fix<'_>) -> Result<(), NotExecuted> {
    let no = fix.payment_no();
    match payments::release(tx, &no, fix.now).await? {
        Some(reason) => fix.done.push(format!("hold released ({reason})")),
        None => return Err(NotExecuted::Failed(format!("payment {no} is not held"))),
    }
    Ok(())
}

/// FAILED or CLOSED → SUCCEEDED in one apply: a manual fix is the only
/// source allowed that move (`manual_fix_predecessors`).
async fn accept_payment(tx: &mut Conn, fix: &mut Fix<'_>) -> Result<(), NotExecuted> {
    let no = fix.payment_no();
    let b = brief(tx, &no).await?;
    // Another attempt may have been paid since the proposal.
    if let Some(paid) = payments::paid_attempt_of(&mut *tx, &b.order_no, &no).await? {
        return Err(NotExecuted::Failed(format!(
            "order {} is paid by {paid} now: accepting {no} would pay it twice",
            b.order_no
        )));
    }
    let mut o = fix.outcome(&b, PaymentStatus::Succeeded, b.amount_minor)?;
    if let Some(txn) = fix.after["provider_txn_id"].as_str() {
        o.provider_txn_id = ProviderTxnId::parse(txn).ok();
    }
    o.paid_at = fix.paid_at();
    let moved = fix.apply(tx, &o).await?;
    fix.done.push(moved);
    Ok(())
}

/// Refunded as any refund is (reservation, provider task, ledger) rather
/// than flipped: the provider holds the money, so only its confirmation
/// may say it is given back.
async fn refund_payment(tx: &mut Conn, fix: &mut Fix<'_>) -> Result<(), NotExecuted> {
    let no = fix.payment_no();
    let payment = payments::get(&mut *tx, &no)
        .await?
        .ok_or_else(|| NotExecuted::Failed("payment missing".into()))?;
    if fix.engine.providers.get(&payment.provider).is_none() {
        // Nobody would ask for the money back: the refund would wait forever.
        return Err(NotExecuted::Failed(format!(
            "provider {} is not configured",
            payment.provider
        )));
    }
    let txn = fix.after["provider_txn_id"].as_str();
    let Some((refund_no, prev)) =
        refund_late_success_in(tx, &payment, txn, &fix.p.id, &fix.trace_id, fix.now).await?
    else {
        return Err(NotExecuted::Failed(format!(
            "payment {no} is {} (held: {}); only a FAILED or CLOSED payment with nothing refunded can refund its late success",
            payment.status,
            payment.hold_reason.as_deref().unwrap_or("no")
        )));
    };
    fix.done.push(format!(
        "refund {refund_no} of {} {} requested from the provider; payment {prev} → REFUNDING",
        payment.amount_minor, payment.currency
    ));
    Ok(())
}

/// The provider's amount made final, by the engine.
async fn adjust_amount(
    tx: &mut Conn,
    fix: &Fix<'_>,
    b: &PaymentBrief,
    accepted: i64,
) -> Result<(), NotExecuted> {
    let change = AmountChange {
        payment: b,
        accepted_minor: accepted,
        proposal_id: &fix.p.id,
        approved_by: &fix.actor.username,
    };
    if !change_amount_in(tx, &fix.sinks, &change, fix.now).await? {
        return Err(NotExecuted::Stale(format!(
            "payment {} changed",
            b.payment_no
        )));
    }
    Ok(())
}
