//! The read side of triage: the filtered ticket list (keyset pages, most
//! severe then oldest first), a ticket with both sides and its payment's
//! timeline, proposals, and the audit log.

use crate::domain::{Currency, Money};
use crate::store::Db;
use app::filter::QueryFilter;
use app::tickets::{
    AuditEntry, AuditFilter, AuditPage, CallbackRef, FixKind, Note, PAGE_SIZE, Proposal, Side,
    TicketDetail, TicketFilter, TicketPage, TicketSummary, TimelineItem,
};
use sqlx::Row;
use sqlx::any::AnyRow;

/// A bound value of a query built from filters.
#[derive(Clone, Debug)]
pub(crate) enum Arg {
    S(String),
    I(i64),
}

pub(crate) fn bind_all<'q>(
    mut q: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    args: &'q [Arg],
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    for a in args {
        q = match a {
            Arg::S(s) => q.bind(s.as_str()),
            Arg::I(i) => q.bind(*i),
        };
    }
    q
}

/// "12.34 CNY" for minor units of a known currency, else the raw figures.
pub(crate) fn money_text(minor: Option<i64>, currency: Option<&str>) -> Option<String> {
    let minor = minor?;
    let currency = currency.unwrap_or("");
    Some(match Currency::parse(currency) {
        Ok(c) => format!("{} {}", Money::new(minor, c).major_string(), c.code()),
        Err(_) => format!("{minor} (minor units) {currency}"),
    })
}

pub(crate) const TICKET_COLUMNS: &str = "discrepancy_id, class, severity, severity_rank, status, provider, payment_no, \
     provider_txn_id, trace_id, local_amount_minor, local_currency, local_status, provider_amount_minor, \
     provider_currency, provider_status, details, found_at, closed_at, run_id, business_date, order_no, \
     statement_file, range_start, range_end, line_no, owner, actions, conclusion";

#[derive(Clone, Debug, sqlx::FromRow)]
pub(crate) struct TicketRow {
    pub discrepancy_id: String,
    pub class: String,
    pub severity: String,
    pub severity_rank: i64,
    pub status: String,
    pub provider: String,
    pub payment_no: Option<String>,
    pub provider_txn_id: Option<String>,
    pub trace_id: Option<String>,
    pub local_amount_minor: Option<i64>,
    pub local_currency: Option<String>,
    pub local_status: Option<String>,
    pub provider_amount_minor: Option<i64>,
    pub provider_currency: Option<String>,
    pub provider_status: Option<String>,
    pub details: String,
    pub found_at: i64,
    pub closed_at: Option<i64>,
    pub run_id: Option<String>,
    pub business_date: Option<String>,
    pub order_no: Option<String>,
    pub statement_file: Option<String>,
    pub range_start: Option<i64>,
    pub range_end: Option<i64>,
    pub line_no: Option<i64>,
    pub owner: Option<String>,
    pub actions: String,
    pub conclusion: Option<String>,
}

impl TicketRow {
    pub fn summary(&self) -> TicketSummary {
        TicketSummary {
            id: self.discrepancy_id.clone(),
            class: self.class.clone(),
            severity: self.severity.clone(),
            status: self.status.clone(),
            provider: self.provider.clone(),
            payment_no: self.payment_no.clone(),
            order_no: self.order_no.clone(),
            provider_txn_id: self.provider_txn_id.clone(),
            business_date: self.business_date.clone(),
            owner: self.owner.clone(),
            local_amount: money_text(self.local_amount_minor, self.local_currency.as_deref()),
            provider_amount: money_text(
                self.provider_amount_minor,
                self.provider_currency.as_deref(),
            ),
            found_at: self.found_at,
        }
    }

    pub fn reason(&self) -> String {
        serde_json::from_str::<serde_json::Value>(&self.details)
            .ok()
            .and_then(|v| v.get("reason").and_then(|r| r.as_str()).map(str::to_owned))
            .unwrap_or_else(|| self.details.clone())
    }
}

pub(crate) async fn ticket_row(
    e: impl sqlx::Executor<'_, Database = sqlx::Any>,
    id: &str,
) -> sqlx::Result<Option<TicketRow>> {
    sqlx::query_as(&format!(
        "SELECT {TICKET_COLUMNS} FROM discrepancies WHERE discrepancy_id = $1"
    ))
    .bind(id)
    .fetch_optional(e)
    .await
}

/// The WHERE clause of a filter (without the cursor), leaving out `skip`.
fn conditions(
    f: &TicketFilter,
    skip: Option<&str>,
    args: &mut Vec<Arg>,
    kind: crate::store::DbKind,
) -> String {
    let mut parts = vec!["1 = 1".to_owned()];
    if skip != Some("status") && f.status.as_deref() == Some("ACTIVE") {
        parts.push("status <> 'CLOSED'".into());
    }
    for (key, column) in [
        ("class", "class"),
        ("severity", "severity"),
        ("status", "status"),
        ("provider", "provider"),
        ("day", "business_date"),
        ("run", "run_id"),
    ] {
        if Some(key) == skip {
            continue;
        }
        if let Some(v) = f.get(key).filter(|v| !(key == "status" && *v == "ACTIVE")) {
            args.push(Arg::S(v.to_owned()));
            parts.push(format!("{column} = ${}", args.len()));
        }
    }
    match f.owner.as_deref() {
        Some("-") => parts.push("owner IS NULL".into()),
        Some(owner) => {
            args.push(Arg::S(owner.to_owned()));
            parts.push(format!("owner = ${}", args.len()));
        }
        None => {}
    }
    if let Some(q) = f.q.as_deref() {
        // An identifier as typed, whole or its beginning: payment_no, order
        // no or provider transaction id. Index ranges, not a scan.
        args.push(Arg::S(q.to_owned()));
        let lo = args.len();
        args.push(Arg::S(prefix_end(q)));
        let hi = args.len();
        // Byte order on both databases (PostgreSQL compares text by its
        // collation otherwise, which is not the order `prefix_end` assumes).
        let c = if kind == crate::store::DbKind::Postgres {
            " COLLATE \"C\""
        } else {
            ""
        };
        parts.push(format!(
            "((payment_no{c} >= ${lo} AND payment_no{c} < ${hi}) OR (order_no{c} >= ${lo} AND order_no{c} < ${hi}) \
              OR (provider_txn_id{c} >= ${lo} AND provider_txn_id{c} < ${hi}))"
        ));
    }
    parts.join(" AND ")
}

/// The smallest string above every string starting with `prefix` (in
/// byte order): its last character, incremented.
pub(crate) fn prefix_end(prefix: &str) -> String {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        if let Some(next) = char::from_u32(last as u32 + 1) {
            chars.push(next);
            return chars.into_iter().collect();
        }
    }
    "\u{10FFFF}".into()
}

/// The queue's keyset condition (most severe, then oldest) after a cursor.
fn queue_after((rank, found, id): (i64, i64, String), args: &mut Vec<Arg>) -> String {
    args.push(Arg::I(rank));
    let r = args.len();
    args.push(Arg::I(found));
    let fa = args.len();
    args.push(Arg::S(id));
    let i = args.len();
    format!(
        " AND (severity_rank < ${r} OR (severity_rank = ${r} AND (found_at > ${fa} \
           OR (found_at = ${fa} AND discrepancy_id > ${i}))))"
    )
}

/// `rank.found_at.id`, the position after which the next page starts.
fn parse_cursor(c: &str) -> Option<(i64, i64, String)> {
    let mut it = c.splitn(3, '.');
    let rank = it.next()?.parse().ok()?;
    let found = it.next()?.parse().ok()?;
    let id = it.next()?.to_owned();
    Some((rank, found, id))
}

pub async fn tickets(db: &Db, f: &TicketFilter) -> sqlx::Result<TicketPage> {
    let pool = &db.pool;
    let mut args = Vec::new();
    let mut cond = conditions(f, None, &mut args, db.kind);
    let count_args = args.clone();
    let count_cond = cond.clone();
    if let Some(c) = f.after.as_deref().and_then(parse_cursor) {
        cond.push_str(&queue_after(c, &mut args));
    }
    let sql = format!(
        "SELECT {TICKET_COLUMNS} FROM discrepancies WHERE {cond} \
         ORDER BY severity_rank DESC, found_at, discrepancy_id LIMIT {}",
        PAGE_SIZE + 1
    );
    let mut rows: Vec<TicketRow> = bind_all(sqlx::query(&sql), &args)
        .try_map(|row: AnyRow| <TicketRow as sqlx::FromRow<AnyRow>>::from_row(&row))
        .fetch_all(pool)
        .await?;
    let next = if rows.len() as i64 > PAGE_SIZE {
        rows.truncate(PAGE_SIZE as usize);
        rows.last()
            .map(|r| format!("{}.{}.{}", r.severity_rank, r.found_at, r.discrepancy_id))
    } else {
        None
    };
    let total: i64 = bind_all(
        sqlx::query(&format!(
            "SELECT COUNT(*) FROM discrepancies WHERE {count_cond}"
        )),
        &count_args,
    )
    .try_map(|row: AnyRow| row.try_get::<i64, _>(0))
    .fetch_one(pool)
    .await?;
    let grouped = |column: &'static str, key: &'static str| {
        let mut args = Vec::new();
        let cond = conditions(f, Some(key), &mut args, db.kind);
        async move {
            let sql = format!(
                "SELECT {column}, COUNT(*) FROM discrepancies WHERE {cond} GROUP BY {column} ORDER BY {column}"
            );
            bind_all(sqlx::query(&sql), &args)
                .try_map(|row: AnyRow| {
                    Ok((row.try_get::<String, _>(0)?, row.try_get::<i64, _>(1)?))
                })
                .fetch_all(pool)
                .await
        }
    };
    let by_status = grouped("status", "status").await?;
    let by_class = grouped("class", "class").await?;
    Ok(TicketPage {
        items: rows.iter().map(TicketRow::summary).collect(),
        next,
        total,
        by_status,
        by_class,
    })
}

/// Every ticket a filter matches, oldest-severest first, streamed as CSV
/// lines (header first) to `out`.
pub async fn export_csv(
    db: &Db,
    f: &TicketFilter,
    out: tokio::sync::mpsc::Sender<Result<String, std::io::Error>>,
) -> sqlx::Result<()> {
    let header = "ticket_id,class,severity,status,provider,business_date,payment_no,order_no,provider_txn_id,\
local_amount,local_status,provider_amount,provider_status,owner,found_at_utc,closed_at_utc,reason,conclusion\n";
    if out.send(Ok(header.to_owned())).await.is_err() {
        return Ok(());
    }
    // Keyset chunks: no connection is held while the client reads.
    let mut cursor: Option<(i64, i64, String)> = None;
    loop {
        let mut args = Vec::new();
        let mut cond = conditions(f, None, &mut args, db.kind);
        if let Some(c) = cursor.take() {
            cond.push_str(&queue_after(c, &mut args));
        }
        let sql = format!(
            "SELECT {TICKET_COLUMNS} FROM discrepancies WHERE {cond} \
             ORDER BY severity_rank DESC, found_at, discrepancy_id LIMIT {EXPORT_CHUNK}"
        );
        let chunk: Vec<TicketRow> = bind_all(sqlx::query(&sql), &args)
            .try_map(|row: AnyRow| <TicketRow as sqlx::FromRow<AnyRow>>::from_row(&row))
            .fetch_all(&db.pool)
            .await?;
        let Some(last) = chunk.last() else {
            return Ok(());
        };
        cursor = Some((
            last.severity_rank,
            last.found_at,
            last.discrepancy_id.clone(),
        ));
        let full = chunk.len() as i64 == EXPORT_CHUNK;
        for t in chunk {
            if out.send(Ok(csv_line(&t))).await.is_err() {
                return Ok(());
            }
        }
        if !full {
            return Ok(());
        }
    }
}

/// Rows per query of the CSV export.
const EXPORT_CHUNK: i64 = 1000;

fn csv_line(t: &TicketRow) -> String {
    let s = t.summary();
    let cells = [
        s.id,
        s.class,
        s.severity,
        s.status,
        s.provider,
        s.business_date.unwrap_or_default(),
        s.payment_no.unwrap_or_default(),
        s.order_no.unwrap_or_default(),
        s.provider_txn_id.unwrap_or_default(),
        s.local_amount.unwrap_or_default(),
        t.local_status.clone().unwrap_or_default(),
        s.provider_amount.unwrap_or_default(),
        t.provider_status.clone().unwrap_or_default(),
        s.owner.unwrap_or_default(),
        app::format::utc_minutes(t.found_at),
        t.closed_at
            .map(app::format::utc_minutes)
            .unwrap_or_default(),
        t.reason(),
        t.conclusion.clone().unwrap_or_default(),
    ];
    cells
        .iter()
        .map(|c| csv_cell(c))
        .collect::<Vec<_>>()
        .join(",")
        + "\n"
}

/// A CSV cell: quoted when needed, and a leading `=`, `+`, `-` or `@`
/// neutralised so a spreadsheet never runs it as a formula.
fn csv_cell(value: &str) -> String {
    let mut v = value.to_owned();
    if v.starts_with(['=', '+', '-', '@', '\t', '\r']) && v.parse::<f64>().is_err() {
        v.insert(0, '\'');
    }
    if v.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v
    }
}

/// Which fixes a ticket may get, from its class and the payment's state.
pub(crate) fn fixes_for(t: &TicketRow, payment: Option<&PaymentBrief>) -> Vec<FixKind> {
    let mut out = Vec::new();
    if t.status == "CLOSED" {
        return out;
    }
    let provider_paid = t.provider_status.as_deref() == Some("SUCCEEDED");
    let local_unpaid =
        payment.is_none_or(|p| matches!(p.status.as_str(), "CREATED" | "PENDING" | "FAILED"));
    match t.class.as_str() {
        "PROVIDER_ONLY" | "STATUS_LAG"
            if provider_paid && local_unpaid && t.payment_no.is_some() =>
        {
            out.push(FixKind::Backfill)
        }
        "LOCAL_ONLY"
            if payment.is_some_and(|p| {
                matches!(p.status.as_str(), "SUCCEEDED" | "CREATED" | "PENDING")
            }) =>
        {
            out.push(FixKind::ClosePayment)
        }
        "AMOUNT_MISMATCH"
            if payment.is_some()
                && t.provider_amount_minor.is_some_and(|a| a > 0)
                && t.provider_currency == t.local_currency =>
        {
            out.push(FixKind::AcceptAmount)
        }
        "ONE_TO_MANY" => out.push(FixKind::Merge),
        // Money taken for a payment Reckon closed or failed: two people
        // either take it (the order is paid) or give it back in full.
        "PAID_AFTER_CLOSE"
            if payment.is_some_and(|p| matches!(p.status.as_str(), "FAILED" | "CLOSED")) =>
        {
            out.extend([FixKind::AcceptPayment, FixKind::RefundPayment])
        }
        _ => {}
    }
    if payment.is_some_and(|p| p.hold_reason.is_some()) {
        out.push(FixKind::ReleaseHold);
    }
    out
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub(crate) struct PaymentBrief {
    pub payment_no: String,
    pub order_no: String,
    pub provider: String,
    pub provider_txn_id: Option<String>,
    pub amount_minor: i64,
    pub currency: String,
    pub status: String,
    pub version: i64,
    pub hold_reason: Option<String>,
    pub created_at: i64,
    pub paid_at: Option<i64>,
    pub refunded_minor: i64,
    pub reserved_minor: i64,
}

pub(crate) async fn payment_brief(
    e: impl sqlx::Executor<'_, Database = sqlx::Any>,
    payment_no: &str,
) -> sqlx::Result<Option<PaymentBrief>> {
    sqlx::query_as(&format!(
        "SELECT payment_no, order_no, provider, provider_txn_id, amount_minor, currency, status, version, \
           {}, created_at, paid_at, refunded_minor, reserved_minor FROM payments WHERE payment_no = $1",
        crate::store::payments::HOLD_REASON
    ))
    .bind(payment_no)
    .fetch_optional(e)
    .await
}

pub async fn ticket(db: &Db, id: &str, now: i64) -> sqlx::Result<Option<TicketDetail>> {
    let pool = &db.pool;
    let Some(t) = ticket_row(pool, id).await? else {
        return Ok(None);
    };
    let payment = match t.payment_no.as_deref() {
        Some(no) => payment_brief(pool, no).await?,
        None => None,
    };
    // The statement's side: the ticket's snapshot and, when the run kept
    // it, the row's own transaction id and time.
    let row: Option<(Option<String>, Option<String>, Option<i64>)> =
        match (t.run_id.as_deref(), t.line_no) {
            (Some(run), Some(line)) => {
                sqlx::query_as(
                    "SELECT provider_txn_id, payment_no, occurred_at FROM recon_rows WHERE run_id = $1 AND line_no = $2",
                )
                .bind(run)
                .bind(line)
                .fetch_optional(pool)
                .await?
            }
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
            status: Some(p.status.clone()),
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
        let paid = |s: Option<&str>| matches!(s, Some("SUCCEEDED" | "REFUNDING" | "REFUNDED"));
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
        timeline_of_payment(pool, no, &mut timeline, &mut callbacks).await?;
    }
    // What Reckon did by itself on this ticket.
    if let Ok(serde_json::Value::Array(actions)) = serde_json::from_str(&t.actions) {
        for a in actions {
            timeline.push(TimelineItem {
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
            });
        }
    }
    let notes: Vec<Note> = sqlx::query_as::<
        _,
        (
            String,
            String,
            String,
            Option<String>,
            Option<i64>,
            String,
            i64,
        ),
    >(
        "SELECT note_id, kind, body, file_name, file_size, author, at FROM ticket_notes \
         WHERE discrepancy_id = $1 ORDER BY at, note_id",
    )
    .bind(id)
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|(id, kind, body, file_name, file_size, author, at)| Note {
        id,
        kind,
        body,
        file_name,
        file_size,
        author,
        at,
    })
    .collect();
    // Proposals appear as themselves below, not again as their notes.
    for n in notes.iter().filter(|n| n.kind != "proposal") {
        timeline.push(TimelineItem {
            at: n.at,
            kind: "note".into(),
            title: format!("{} · {}", n.kind, n.author),
            detail: n.body.clone(),
        });
    }
    let proposals = proposals(db, "ALL", Some(id), now).await?;
    for p in &proposals {
        timeline.push(TimelineItem {
            at: p.proposed_at,
            kind: "proposal".into(),
            title: format!("{} proposed by {}", p.kind, p.proposer),
            detail: p.reason.clone(),
        });
        if let (Some(at), Some(by)) = (p.decided_at, p.decided_by.as_ref()) {
            timeline.push(TimelineItem {
                at,
                kind: "proposal".into(),
                title: format!("{} {} by {by}", p.kind, p.status),
                detail: p.decision_comment.clone().unwrap_or_default(),
            });
        }
    }
    timeline.sort_by_key(|t| t.at);
    let operators: Vec<String> = sqlx::query_scalar(
        "SELECT username FROM users WHERE disabled_at IS NULL AND role IN ('operator', 'supervisor') ORDER BY username",
    )
    .fetch_all(pool)
    .await?;
    // One live proposal at a time: while it waits, nothing else is offered.
    let waiting = proposals
        .iter()
        .any(|p| p.status == "PENDING" && !p.expired && p.stale_reason.is_none());
    let fixes = if waiting {
        Vec::new()
    } else {
        fixes_for(&t, payment.as_ref())
    };
    Ok(Some(TicketDetail {
        summary: t.summary(),
        reason: t.reason(),
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

/// id, callback_id, verify_result, processing_status, outcome, received_at, error
type CallbackLine = (
    String,
    String,
    String,
    String,
    Option<String>,
    i64,
    Option<String>,
);
/// message_id, event_type, created_at, sink, status, attempts, last_error
type OutboxLine = (
    String,
    String,
    i64,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<String>,
);

/// Callbacks, state changes, effects, outbox messages and deliveries,
/// refunds, provider calls and alerts of one payment.
async fn timeline_of_payment(
    pool: &sqlx::AnyPool,
    payment_no: &str,
    out: &mut Vec<TimelineItem>,
    callbacks: &mut Vec<CallbackRef>,
) -> sqlx::Result<()> {
    let item = |at: i64, kind: &str, title: String, detail: String| TimelineItem {
        at,
        kind: kind.into(),
        title,
        detail,
    };
    let rows: Vec<CallbackLine> = sqlx::query_as(
        "SELECT id, callback_id, verify_result, processing_status, outcome, received_at, error_message \
         FROM payment_callbacks WHERE payment_no = $1 ORDER BY received_at LIMIT 200",
    )
    .bind(payment_no)
    .fetch_all(pool)
    .await?;
    for (id, callback_id, verify, processing, outcome, at, error) in rows {
        out.push(item(
            at,
            "callback",
            format!("callback {callback_id}: {verify}, {processing}"),
            [outcome.clone(), error]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" — "),
        ));
        callbacks.push(CallbackRef {
            id,
            callback_id,
            verify_result: verify,
            processing_status: processing,
            outcome,
            received_at: at,
        });
    }
    let rows: Vec<(String, String, String, String, i64)> = sqlx::query_as(
        "SELECT from_status, to_status, source, evidence_ref, at FROM payment_status_history \
         WHERE payment_no = $1 ORDER BY at LIMIT 200",
    )
    .bind(payment_no)
    .fetch_all(pool)
    .await?;
    for (from, to, source, evidence, at) in rows {
        out.push(item(
            at,
            "history",
            format!("{from} → {to}"),
            format!("{source} · {evidence}"),
        ));
    }
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "SELECT effect_type, created_at FROM payment_effects WHERE payment_no = $1 ORDER BY created_at",
    )
    .bind(payment_no)
    .fetch_all(pool)
    .await?;
    for (effect, at) in rows {
        out.push(item(
            at,
            "effect",
            format!("effect {effect}"),
            String::new(),
        ));
    }
    let rows: Vec<OutboxLine> = sqlx::query_as(
        "SELECT e.message_id, e.event_type, e.created_at, d.sink, d.status, d.attempts, d.last_error \
         FROM outbox_events e LEFT JOIN outbox_deliveries d ON d.message_id = e.message_id \
         WHERE e.aggregate_id = $1 ORDER BY e.created_at LIMIT 200",
    )
    .bind(payment_no)
    .fetch_all(pool)
    .await?;
    for (id, event, at, sink, status, attempts, error) in rows {
        let delivery = match (sink, status) {
            (Some(sink), Some(status)) => format!(
                "{sink}: {status} after {} attempt(s){}",
                attempts.unwrap_or(0),
                error.map(|e| format!(" ({e})")).unwrap_or_default()
            ),
            _ => "no sink configured".into(),
        };
        out.push(item(
            at,
            "outbox",
            format!("outbox {event} ({id})"),
            delivery,
        ));
    }
    let rows: Vec<(String, i64, String, String, i64)> = sqlx::query_as(
        "SELECT refund_no, amount_minor, currency, status, created_at FROM refunds WHERE payment_no = $1 ORDER BY created_at",
    )
    .bind(payment_no)
    .fetch_all(pool)
    .await?;
    for (no, minor, currency, status, at) in rows {
        out.push(item(
            at,
            "refund",
            format!("refund {no}: {status}"),
            money_text(Some(minor), Some(&currency)).unwrap_or_default(),
        ));
    }
    let rows: Vec<(String, String, i64, Option<String>, i64)> = sqlx::query_as(
        "SELECT kind, status, attempts, last_error, updated_at FROM provider_tasks WHERE payment_no = $1 ORDER BY created_at",
    )
    .bind(payment_no)
    .fetch_all(pool)
    .await?;
    for (kind, status, attempts, error, at) in rows {
        out.push(item(
            at,
            "query",
            format!("provider {kind}: {status}"),
            format!(
                "{attempts} attempt(s){}",
                error
                    .map(|e| format!(", last error: {e}"))
                    .unwrap_or_default()
            ),
        ));
    }
    let rows: Vec<(String, String, String, i64)> = sqlx::query_as(
        "SELECT kind, severity, message, created_at FROM alerts WHERE payment_no = $1 ORDER BY created_at",
    )
    .bind(payment_no)
    .fetch_all(pool)
    .await?;
    for (kind, severity, message, at) in rows {
        out.push(item(
            at,
            "alert",
            format!("alert {kind} ({severity})"),
            message,
        ));
    }
    Ok(())
}

const PROPOSAL_COLUMNS: &str = "p.proposal_id, p.discrepancy_id, d.class, p.kind, p.payment_no, p.before_json, \
     p.after_json, p.reason, p.evidence, p.proposer_id, p.proposer_name, p.proposed_at, p.expires_at, p.status, \
     p.stale_reason, p.decided_by_name, p.decided_at, p.decision_comment, p.result";

fn proposal_of(row: &AnyRow, now: i64) -> sqlx::Result<Proposal> {
    let pretty = |s: String| {
        serde_json::from_str::<serde_json::Value>(&s)
            .ok()
            .and_then(|v| serde_json::to_string_pretty(&v).ok())
            .unwrap_or(s)
    };
    let kind: String = row.try_get("kind")?;
    let expires_at: i64 = row.try_get("expires_at")?;
    let status: String = row.try_get("status")?;
    Ok(Proposal {
        expired: status == "PENDING" && expires_at <= now,
        id: row.try_get("proposal_id")?,
        ticket_id: row.try_get("discrepancy_id")?,
        ticket_class: row.try_get("class")?,
        kind: kind
            .parse()
            .map_err(|e: String| sqlx::Error::Decode(e.into()))?,
        payment_no: row.try_get("payment_no")?,
        before: pretty(row.try_get("before_json")?),
        after: pretty(row.try_get("after_json")?),
        reason: row.try_get("reason")?,
        evidence: row.try_get("evidence")?,
        proposer_id: row.try_get("proposer_id")?,
        proposer: row.try_get("proposer_name")?,
        proposed_at: row.try_get("proposed_at")?,
        expires_at,
        status,
        stale_reason: row.try_get("stale_reason")?,
        decided_by: row.try_get("decided_by_name")?,
        decided_at: row.try_get("decided_at")?,
        decision_comment: row.try_get("decision_comment")?,
        result: row.try_get("result")?,
    })
}

/// `PENDING`: the approval queue, oldest first. Otherwise the most recent
/// 200 of any state (or every proposal of one ticket).
pub async fn proposals(
    db: &Db,
    status: &str,
    ticket: Option<&str>,
    now: i64,
) -> sqlx::Result<Vec<Proposal>> {
    let base = format!(
        "SELECT {PROPOSAL_COLUMNS} FROM fix_proposals p JOIN discrepancies d ON d.discrepancy_id = p.discrepancy_id"
    );
    let (sql, bind) = match (ticket, status) {
        (Some(t), _) => (
            format!("{base} WHERE p.discrepancy_id = $1 ORDER BY p.proposed_at"),
            Some(t.to_owned()),
        ),
        (None, "PENDING") => (
            format!("{base} WHERE p.status = 'PENDING' ORDER BY p.proposed_at LIMIT 500"),
            None,
        ),
        (None, _) => (
            format!("{base} ORDER BY p.proposed_at DESC LIMIT 200"),
            None,
        ),
    };
    let mut q = sqlx::query(&sql);
    if let Some(t) = bind {
        q = q.bind(t);
    }
    q.try_map(move |row: AnyRow| proposal_of(&row, now))
        .fetch_all(&db.pool)
        .await
}

pub(crate) async fn proposal(
    e: impl sqlx::Executor<'_, Database = sqlx::Any>,
    id: &str,
    now: i64,
) -> sqlx::Result<Option<Proposal>> {
    sqlx::query(&format!(
        "SELECT {PROPOSAL_COLUMNS} FROM fix_proposals p JOIN discrepancies d ON d.discrepancy_id = p.discrepancy_id \
         WHERE p.proposal_id = $1"
    ))
    .bind(id.to_owned())
    .try_map(move |row: AnyRow| proposal_of(&row, now))
    .fetch_optional(e)
    .await
}

/// Midnight UTC of a `YYYY-MM-DD`, in microseconds.
fn day_start(day: &str) -> Option<i64> {
    let date: jiff::civil::Date = day.trim().parse().ok()?;
    let ts = date.to_zoned(jiff::tz::TimeZone::UTC).ok()?.timestamp();
    Some(ts.as_microsecond())
}

pub async fn audit(db: &Db, f: &AuditFilter) -> sqlx::Result<AuditPage> {
    let mut args = Vec::new();
    let mut parts = vec!["1 = 1".to_owned()];
    let mut push = |args: &mut Vec<Arg>, sql: &str, a: Arg| {
        args.push(a);
        parts.push(sql.replace("$?", &format!("${}", args.len())));
    };
    if let Some(actor) = f.actor.as_deref().filter(|s| !s.trim().is_empty()) {
        push(&mut args, "actor = $?", Arg::S(actor.trim().to_owned()));
    }
    if let Some(action) = f.action.as_deref().filter(|s| !s.trim().is_empty()) {
        // `fix` matches every fix.* action.
        let a = action.trim();
        if a.contains('.') {
            push(&mut args, "action = $?", Arg::S(a.to_owned()));
        } else {
            push(&mut args, "action LIKE $?", Arg::S(format!("{a}.%")));
        }
    }
    if let Some(object) = f.object.as_deref().filter(|s| !s.trim().is_empty()) {
        let o = object.trim();
        match o.split_once(':') {
            Some((ty, id)) => {
                push(&mut args, "object_type = $?", Arg::S(ty.to_owned()));
                push(&mut args, "object_id = $?", Arg::S(id.to_owned()));
            }
            None => push(&mut args, "object_type = $?", Arg::S(o.to_owned())),
        }
    }
    if let Some(from) = f.from.as_deref().and_then(day_start) {
        push(&mut args, "at >= $?", Arg::I(from));
    }
    if let Some(to) = f.to.as_deref().and_then(day_start) {
        push(&mut args, "at < $?", Arg::I(to + 86_400_000_000));
    }
    if let Some(before) = f.before {
        push(&mut args, "seq < $?", Arg::I(before));
    }
    let sql = format!(
        "SELECT seq, at, actor, action, object_type, object_id, before_json, after_json, hash FROM audit_log \
         WHERE {} ORDER BY seq DESC LIMIT {}",
        parts.join(" AND "),
        PAGE_SIZE + 1
    );
    let mut items: Vec<AuditEntry> = bind_all(sqlx::query(&sql), &args)
        .try_map(|row: AnyRow| {
            Ok(AuditEntry {
                seq: row.try_get("seq")?,
                at: row.try_get("at")?,
                actor: row.try_get("actor")?,
                action: row.try_get("action")?,
                object_type: row.try_get("object_type")?,
                object_id: row.try_get("object_id")?,
                before: row.try_get("before_json")?,
                after: row.try_get("after_json")?,
                hash: row.try_get("hash")?,
            })
        })
        .fetch_all(&db.pool)
        .await?;
    let next = if items.len() as i64 > PAGE_SIZE {
        items.truncate(PAGE_SIZE as usize);
        items.last().map(|e| e.seq)
    } else {
        None
    };
    Ok(AuditPage { items, next })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_cells_are_quoted_and_formula_safe() {
        assert_eq!(csv_cell("plain"), "plain");
        assert_eq!(csv_cell("a,b"), "\"a,b\"");
        assert_eq!(csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_cell("=HYPERLINK(1)"), "'=HYPERLINK(1)");
        assert_eq!(csv_cell("-12.50"), "-12.50");
        assert_eq!(csv_cell("\t=1+1"), "'\t=1+1");
    }

    #[test]
    fn prefixes_end_where_the_next_begins() {
        assert_eq!(prefix_end("PAY0001"), "PAY0002");
        assert_eq!(prefix_end("pi_3"), "pi_4");
        assert!("PAY00019" < prefix_end("PAY0001").as_str());
        assert!("PAY0002" >= prefix_end("PAY0001").as_str());
    }

    #[test]
    fn cursors_parse_or_are_ignored() {
        assert_eq!(parse_cursor("3.17.abc-1"), Some((3, 17, "abc-1".into())));
        assert_eq!(parse_cursor("x.1.a"), None);
        assert_eq!(parse_cursor("3"), None);
    }
}
