//! Tickets as the console reads them: the filtered queue (keyset pages,
//! most severe then oldest first, with counts by status and class), one
//! ticket with both sides, its payment's timeline, its notes and
//! proposals, and the fixes it may get; and what the ticket page does,
//! handed to triage.

use super::{Desk, money_text};
use crate::accounts::internal;
use crate::domain::{Sla, TicketStatus};
use crate::store;
use crate::store::lists::{self, QueueAfter};
use crate::store::tickets::TicketRow;
use crate::store::{
    Db, alerts, callbacks, match_groups, outbox, payments, proposals, refunds, tasks, tickets,
};
use crate::triage;
use app::ageing::AgeBucket;
use app::error::AppError;
use app::tickets::{
    ActionResult, CallbackRef, FixRequest, Neighbours, PAGE_SIZE, Proposal, ProposalComment, Side,
    TicketDetail, TicketFilter, TicketPage, TicketSummary, TimelineItem,
};
use app::types::User;

/// A ticket as lists show it.
pub(crate) fn summary(t: &TicketRow) -> TicketSummary {
    TicketSummary {
        id: t.discrepancy_id.clone(),
        class: t.class.clone(),
        severity: t.severity.clone(),
        status: t.status.clone(),
        provider: t.provider.clone(),
        payment_no: t.payment_no.clone(),
        order_no: t.order_no.clone(),
        provider_txn_id: t.provider_txn_id.clone(),
        business_date: t.business_date.clone(),
        owner: t.owner.clone(),
        local_amount: money_text(t.local_amount_minor, t.local_currency.as_deref()),
        provider_amount: money_text(t.provider_amount_minor, t.provider_currency.as_deref()),
        found_at: t.found_at,
        age_days: None,
        sla_due_at: None,
        overdue: false,
    }
}

/// A ticket as lists show it, with its age and SLA at `now` when open.
pub(crate) fn aged_summary(t: &TicketRow, now: i64, sla: &Sla) -> TicketSummary {
    let mut s = summary(t);
    if t.status != TicketStatus::Closed.as_str() {
        let due = t.due_at(sla);
        s.age_days = Some(app::ageing::age_days(t.found_at, now));
        s.sla_due_at = Some(due);
        s.overdue = now >= due;
    }
    s
}

/// A dispute's history as the ticket shows it: each event at the
/// provider's time (one older than what was known marked so), and the
/// money it moved so far.
async fn dispute_items(
    pool: &store::Pool,
    d: &crate::store::disputes::DisputeRow,
) -> store::Result<Vec<TimelineItem>> {
    let events = crate::store::disputes::events(pool, &d.provider, &d.dispute_id).await?;
    let moved = crate::store::disputes::moved(pool, &d.provider, &d.dispute_id).await?;
    let money = |minor| money_text(Some(minor), Some(&d.currency)).unwrap_or_default();
    let mut items: Vec<TimelineItem> = events
        .iter()
        .map(|e| TimelineItem {
            at: e.event_at,
            kind: "dispute".into(),
            title: format!("dispute {} · {}", d.dispute_id, e.event_type),
            detail: format!(
                "{} ({}){}",
                e.status,
                e.provider_status,
                if e.applied == 1 {
                    ""
                } else {
                    " — older than what was known: not applied"
                }
            ),
        })
        .collect();
    items.push(TimelineItem {
        at: d.updated_at,
        kind: "dispute".into(),
        title: format!("dispute {} · now {}", d.dispute_id, d.status),
        detail: format!(
            "disputed {}; withdrawn {}, reinstated {}, dispute fees {}{}",
            money(d.amount_minor),
            money(moved.withdrawn_minor),
            money(moved.reinstated_minor),
            money(moved.fee_minor),
            d.evidence_due_at
                .and_then(|due| jiff::Timestamp::from_microsecond(due).ok())
                .map(|due| format!("; evidence due {due}"))
                .unwrap_or_default()
        ),
    });
    Ok(items)
}

/// Why the ticket was opened: its details' `reason`, or the details.
pub(crate) fn reason(t: &TicketRow) -> String {
    serde_json::from_str::<serde_json::Value>(&t.details)
        .ok()
        .and_then(|v| v.get("reason").and_then(|r| r.as_str()).map(str::to_owned))
        .unwrap_or_else(|| t.details.clone())
}

/// An age filter must be one of the buckets: a typo is an error, not an
/// empty list.
fn check_age(f: &TicketFilter) -> Result<(), AppError> {
    match f.age.as_deref() {
        Some(age) if AgeBucket::parse(age).is_none() => Err(super::invalid(format!(
            "age {age:?}: expected one of 0-1, 2-7, 8-30, 31+ (days)"
        ))),
        _ => Ok(()),
    }
}

#[async_trait::async_trait]
impl app::ssr::Tickets for Desk {
    async fn tickets(&self, f: &TicketFilter) -> Result<TicketPage, AppError> {
        check_age(f)?;
        list_page(&self.engine.db, f, self.now(), &self.engine.settings().sla)
            .await
            .map_err(internal)
    }

    async fn ticket(&self, id: &str) -> Result<TicketDetail, AppError> {
        detail(&self.engine.db, id, self.now(), &self.engine.settings().sla)
            .await
            .map_err(internal)?
            .ok_or(AppError::NotFound)
    }

    /// The tickets before and after `id` in the queue `f` lists. The
    /// ticket itself need not match `f` any more (closed from the queue of
    /// open ones): its place is its (severity, found, id) either way.
    async fn ticket_neighbours(&self, id: &str, f: &TicketFilter) -> Result<Neighbours, AppError> {
        let (db, now) = (&self.engine.db, self.now());
        check_age(f)?;
        let t = tickets::ticket(&db.pool, id)
            .await
            .map_err(internal)?
            .ok_or(AppError::NotFound)?;
        let at = QueueAfter::of(&t);
        let next = lists::tickets(db, f, Some(&at), 1, now)
            .await
            .map_err(internal)?
            .into_iter()
            .next()
            .map(|t| t.discrepancy_id);
        let previous = lists::ticket_before(db, f, &at, now)
            .await
            .map_err(internal)?;
        Ok(Neighbours { previous, next })
    }

    async fn proposals(&self, status: &str) -> Result<Vec<Proposal>, AppError> {
        let pool = &self.engine.db.pool;
        let mut list = proposals::list(pool, status, None, self.now())
            .await
            .map_err(internal)?;
        // The queue's cards show what was said; the recent list does not.
        if status == "PENDING" {
            with_comments(pool, &mut list).await.map_err(internal)?;
        }
        Ok(list)
    }
}

/// The ticket page's actions, each handed to triage, which audits it.
#[async_trait::async_trait]
impl app::ssr::Triage for Desk {
    async fn assign(&self, actor: &User, id: &str, owner: &str) -> Result<(), AppError> {
        triage::assign(&self.engine, actor, id, owner).await
    }

    async fn comment(&self, actor: &User, id: &str, text: &str) -> Result<(), AppError> {
        triage::comment(&self.engine, actor, id, text).await
    }

    async fn comment_proposal(
        &self,
        actor: &User,
        proposal_id: &str,
        text: &str,
    ) -> Result<ProposalComment, AppError> {
        triage::comment_proposal(&self.engine, actor, proposal_id, text).await
    }

    async fn add_evidence(
        &self,
        actor: &User,
        id: &str,
        kind: &str,
        text: &str,
    ) -> Result<(), AppError> {
        triage::add_evidence(&self.engine, actor, id, kind, text).await
    }

    async fn conclude(&self, actor: &User, id: &str, conclusion: &str) -> Result<(), AppError> {
        triage::conclude(&self.engine, actor, id, conclusion).await
    }

    async fn requery(&self, actor: &User, id: &str) -> Result<ActionResult, AppError> {
        triage::requery(&self.engine, actor, id).await
    }

    async fn replay(
        &self,
        actor: &User,
        id: &str,
        callback_row: &str,
    ) -> Result<ActionResult, AppError> {
        triage::replay(&self.engine, actor, id, callback_row).await
    }

    async fn propose(&self, actor: &User, fix: &FixRequest) -> Result<String, AppError> {
        triage::fixes::propose(&self.engine, actor, fix).await
    }

    async fn approve(
        &self,
        actor: &User,
        proposal_id: &str,
        comment: &str,
    ) -> Result<ActionResult, AppError> {
        triage::fixes::approve(&self.engine, actor, proposal_id, comment).await
    }

    async fn reject(&self, actor: &User, proposal_id: &str, comment: &str) -> Result<(), AppError> {
        triage::fixes::reject(&self.engine, actor, proposal_id, comment).await
    }
}

async fn list_page(db: &Db, f: &TicketFilter, now: i64, sla: &Sla) -> store::Result<TicketPage> {
    let after = f.after.as_deref().and_then(QueueAfter::parse);
    let mut rows = lists::tickets(db, f, after.as_ref(), PAGE_SIZE + 1, now).await?;
    let next = if rows.len() as i64 > PAGE_SIZE {
        rows.truncate(PAGE_SIZE as usize);
        rows.last().map(|r| QueueAfter::of(r).cursor())
    } else {
        None
    };
    let total = lists::ticket_count(db, f, now).await?;
    let by_status = lists::tickets_by(db, f, "status", now).await?;
    let by_class = lists::tickets_by(db, f, "class", now).await?;
    Ok(TicketPage {
        items: rows.iter().map(|t| aged_summary(t, now, sla)).collect(),
        next,
        total,
        by_status,
        by_class,
    })
}

async fn detail(db: &Db, id: &str, now: i64, sla: &Sla) -> store::Result<Option<TicketDetail>> {
    let pool = &db.pool;
    let Some(t) = tickets::ticket(pool, id).await? else {
        return Ok(None);
    };
    let payment = match t.payment_no.as_deref() {
        Some(no) => payments::brief(pool, no).await?,
        None => None,
    };
    // The statement's side: the ticket's snapshot and, when the run kept
    // it, the row's own transaction id and time.
    let row = match (t.run_id.as_deref(), t.line_no) {
        (Some(run), Some(line)) => tickets::statement_line(pool, run, line).await?,
        _ => None,
    };
    let provider = Side {
        present: t.provider_amount_minor.is_some() || t.provider_status.is_some(),
        amount: money_text(t.provider_amount_minor, t.provider_currency.as_deref()),
        currency: t.provider_currency.clone(),
        status: t.provider_status.clone(),
        txn: row
            .as_ref()
            .and_then(|r| r.0.clone())
            .or(t.provider_txn_id.clone()),
        payment_no: row.as_ref().and_then(|r| r.1.clone()),
        at: row.as_ref().and_then(|r| r.2),
    };
    let local = match &payment {
        Some(p) => Side {
            present: true,
            amount: money_text(Some(p.amount_minor), Some(&p.currency)),
            currency: Some(p.currency.clone()),
            status: Some(p.status.as_str().to_owned()),
            txn: p.provider_txn_id.clone(),
            payment_no: Some(p.payment_no.clone()),
            at: p.paid_at.or(Some(p.created_at)),
        },
        None => Side::default(),
    };
    let mut differing = Vec::new();
    if local.present && provider.present {
        if payment.as_ref().map(|p| p.amount_minor) != t.provider_amount_minor {
            differing.push("amount".to_owned());
        }
        if local.currency != provider.currency {
            differing.push("currency".to_owned());
        }
        let paid = |s: Option<&str>| {
            s.and_then(|s| s.parse::<crate::domain::PaymentStatus>().ok())
                .is_some_and(|s| s.is_paid())
        };
        if paid(local.status.as_deref()) != paid(provider.status.as_deref()) {
            differing.push("status".to_owned());
        }
        if provider.txn.is_some() && local.txn != provider.txn {
            differing.push("txn".to_owned());
        }
    }
    let mut timeline = Vec::new();
    let mut callbacks = Vec::new();
    if let Some(no) = t.payment_no.as_deref() {
        timeline_of_payment(db, no, &mut timeline, &mut callbacks).await?;
    }
    timeline.extend(actions_of(&t));
    if let Some(d) = crate::store::disputes::of_ticket(pool, id).await? {
        timeline.extend(dispute_items(pool, &d).await?);
    }
    let notes = tickets::notes_of(pool, id).await?;
    // Proposals appear as themselves below, not again as their notes.
    for n in notes.iter().filter(|n| n.kind != "proposal") {
        timeline.push(TimelineItem {
            at: n.at,
            kind: "note".into(),
            title: format!("{} · {}", n.kind, n.author),
            detail: n.body.clone(),
        });
    }
    let mut proposals = proposals::list(pool, "ALL", Some(id), now).await?;
    // A grouped match is decided on its anchor's ticket; each member's
    // ticket shows the same proposal.
    for of_group in match_groups::proposals_of_member(pool, id).await? {
        if let Some(p) = proposals::get(pool, &of_group, now).await? {
            proposals.push(p);
        }
    }
    with_comments(pool, &mut proposals).await?;
    timeline.extend(proposals.iter().flat_map(proposal_items));
    timeline.sort_by_key(|t| t.at);
    let operators = crate::store::users::workers(pool).await?;
    // One live proposal at a time: while it waits, nothing else is offered.
    let waiting = proposals
        .iter()
        .any(|p| p.status == "PENDING" && !p.expired && p.stale_reason.is_none());
    let mut fixes = if waiting {
        Vec::new()
    } else {
        crate::triage::fixes::fixes_for(&t, payment.as_ref())
    };
    // A group found for this ticket whose proposal was rejected or expired
    // may be proposed again by a person.
    if !waiting
        && t.ticket_status() != Some(crate::domain::TicketStatus::Closed)
        && match_groups::proposed_on(pool, id).await?.is_some()
    {
        fixes.push(app::tickets::FixKind::GroupMatch);
    }
    Ok(Some(TicketDetail {
        summary: aged_summary(&t, now, sla),
        reason: reason(&t),
        run_id: t.run_id.clone(),
        statement_file: t.statement_file.clone(),
        range: t.range_start.zip(t.range_end),
        line_no: t.line_no,
        trace_id: t.trace_id.clone(),
        conclusion: t.conclusion.clone(),
        closed_at: t.closed_at,
        local,
        provider,
        differing,
        hold_reason: payment.as_ref().and_then(|p| p.hold_reason.clone()),
        timeline,
        notes,
        proposals,
        callbacks,
        fixes,
        operators,
    }))
}

/// What Reckon did by itself on the ticket (its `actions`).
fn actions_of(t: &TicketRow) -> Vec<TimelineItem> {
    let Ok(serde_json::Value::Array(actions)) = serde_json::from_str(&t.actions) else {
        return Vec::new();
    };
    actions
        .into_iter()
        .map(|a| TimelineItem {
            at: a.get("at").and_then(|v| v.as_i64()).unwrap_or(t.found_at),
            kind: "action".into(),
            title: a
                .get("action")
                .and_then(|v| v.as_str())
                .unwrap_or("action")
                .to_owned(),
            detail: [a.get("result"), a.get("detail"), a.get("by")]
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str())
                .collect::<Vec<_>>()
                .join(" — "),
        })
        .collect()
}

/// A proposal, and its decision if it has one.
fn proposal_items(p: &Proposal) -> Vec<TimelineItem> {
    let mut items = vec![TimelineItem {
        at: p.proposed_at,
        kind: "proposal".into(),
        title: format!("{} proposed by {}", p.kind, p.proposer),
        detail: p.reason.clone(),
    }];
    if let (Some(at), Some(by)) = (p.decided_at, p.decided_by.as_ref()) {
        items.push(TimelineItem {
            at,
            kind: "proposal".into(),
            title: format!("{} {} by {by}", p.kind, p.status),
            detail: p.decision_comment.clone().unwrap_or_default(),
        });
    }
    items
}

/// A timeline shows this many callbacks, moves and outbox messages at most.
const TIMELINE_LIMIT: usize = 200;

/// Callbacks, state changes, effects, outbox messages and deliveries,
/// refunds, provider calls and alerts of one payment.
async fn timeline_of_payment(
    db: &Db,
    payment_no: &str,
    out: &mut Vec<TimelineItem>,
    refs: &mut Vec<CallbackRef>,
) -> store::Result<()> {
    let pool = &db.pool;
    let item = |at: i64, kind: &str, title: String, detail: String| TimelineItem {
        at,
        kind: kind.into(),
        title,
        detail,
    };
    for row in callbacks::of_payment(pool, payment_no).await? {
        let (c, error) = (row.listed, row.error_message);
        out.push(item(
            c.received_at,
            "callback",
            format!(
                "callback {}: {}, {}",
                c.callback_id, c.verify_result, c.processing_status
            ),
            [c.outcome.clone(), error]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" — "),
        ));
        refs.push(CallbackRef {
            id: c.id,
            callback_id: c.callback_id,
            verify_result: c.verify_result,
            processing_status: c.processing_status,
            outcome: c.outcome,
            received_at: c.received_at,
        });
    }
    for h in payments::history(pool, payment_no)
        .await?
        .into_iter()
        .take(TIMELINE_LIMIT)
    {
        out.push(item(
            h.at,
            "history",
            format!("{} → {}", h.from_status, h.to_status),
            format!("{} · {}", h.source, h.evidence_ref),
        ));
    }
    for e in payments::effects(pool, payment_no).await? {
        out.push(item(
            e.created_at,
            "effect",
            format!("effect {}", e.effect_type),
            String::new(),
        ));
    }
    for m in outbox::deliveries_of(pool, payment_no)
        .await?
        .into_iter()
        .take(TIMELINE_LIMIT)
    {
        let delivery = match (m.sink, m.status) {
            (Some(sink), Some(status)) => format!(
                "{sink}: {status} after {} attempt(s){}",
                m.attempts.unwrap_or(0),
                m.last_error.map(|e| format!(" ({e})")).unwrap_or_default()
            ),
            _ => "no sink configured".into(),
        };
        out.push(item(
            m.created_at,
            "outbox",
            format!("outbox {} ({})", m.event_type, m.message_id),
            delivery,
        ));
    }
    for r in refunds::of_payment(pool, payment_no).await? {
        out.push(item(
            r.created_at,
            "refund",
            format!("refund {}: {}", r.refund_no, r.status),
            money_text(Some(r.amount_minor), Some(&r.currency)).unwrap_or_default(),
        ));
    }
    for t in tasks::of_payment(pool, payment_no).await? {
        out.push(item(
            t.updated_at,
            "query",
            format!("provider {}: {}", t.kind, t.status),
            format!(
                "{} attempt(s){}",
                t.attempts,
                t.last_error
                    .map(|e| format!(", last error: {e}"))
                    .unwrap_or_default()
            ),
        ));
    }
    for a in alerts::alerts_for(pool, payment_no).await? {
        out.push(item(
            a.created_at,
            "alert",
            format!("alert {} ({})", a.kind, a.severity),
            a.message,
        ));
    }
    Ok(())
}

/// Fills in the comments of each proposal.
async fn with_comments(pool: &store::Pool, list: &mut [Proposal]) -> store::Result<()> {
    for p in list.iter_mut() {
        p.comments = crate::store::audit::proposal_comments(pool, &p.id)
            .await?
            .into_iter()
            .map(|(at, author, after)| {
                let text = after
                    .as_deref()
                    .and_then(|a| serde_json::from_str::<serde_json::Value>(a).ok())
                    .and_then(|v| v["comment"].as_str().map(str::to_owned))
                    .unwrap_or_default();
                ProposalComment { at, author, text }
            })
            .collect();
    }
    Ok(())
}

/// An evidence file's name and bytes.
pub async fn evidence_file(db: &Db, note_id: &str) -> Result<(String, Vec<u8>), AppError> {
    match tickets::evidence_file(&db.pool, note_id)
        .await
        .map_err(internal)?
    {
        Some((Some(name), Some(bytes))) => Ok((name, bytes)),
        _ => Err(AppError::NotFound),
    }
}
