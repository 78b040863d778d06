//! The `discrepancies` table (tickets): opened at most once per dedupe key,
//! so a repeated cause does not repeat the ticket.

use super::alerts::{NewAlert, raise_alert};
use super::pipeline::{self, WriteOp};
use super::{Db, DbKind};
use crate::domain::{Class, Severity, TicketStatus};
use sqlx::{Any, AnyConnection, Executor, QueryBuilder};

pub struct NewDiscrepancy<'a> {
    pub dedupe_key: &'a str,
    pub class: Class,
    pub severity: Severity,
    pub provider: &'a str,
    pub payment_no: Option<&'a str>,
    pub provider_txn_id: Option<&'a str>,
    pub trace_id: Option<&'a str>,
    pub local: Option<(i64, &'a str, &'a str)>,
    pub provider_side: Option<(i64, &'a str, &'a str)>,
    pub source: &'a str,
    pub details: &'a str,
    pub now: i64,
}

pub async fn open_discrepancy<'e>(
    e: impl Executor<'e, Database = Any>,
    d: &NewDiscrepancy<'_>,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "INSERT INTO discrepancies (discrepancy_id, dedupe_key, class, severity, status, provider, payment_no, \
           provider_txn_id, trace_id, local_amount_minor, local_currency, local_status, provider_amount_minor, \
           provider_currency, provider_status, source, details, found_at, severity_rank) \
         VALUES ($1, $2, $3, $4, 'OPEN', $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) \
         ON CONFLICT (dedupe_key) DO NOTHING",
    )
    .bind(uuid::Uuid::now_v7().to_string())
    .bind(d.dedupe_key)
    .bind(d.class.as_str())
    .bind(d.severity.as_str())
    .bind(d.provider)
    .bind(d.payment_no)
    .bind(d.provider_txn_id)
    .bind(d.trace_id)
    .bind(d.local.map(|l| l.0))
    .bind(d.local.map(|l| l.1))
    .bind(d.local.map(|l| l.2))
    .bind(d.provider_side.map(|p| p.0))
    .bind(d.provider_side.map(|p| p.1))
    .bind(d.provider_side.map(|p| p.2))
    .bind(d.source)
    .bind(d.details)
    .bind(d.now)
    .bind(d.severity.rank())
    .execute(e)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A discrepancy and its critical alert under the same dedupe key, as a
/// conflict the engine refuses to settle opens them: once per set of facts.
pub async fn open_with_alert(
    conn: &mut sqlx::AnyConnection,
    d: &NewDiscrepancy<'_>,
    alert_kind: crate::domain::AlertKind,
    message: &str,
) -> sqlx::Result<()> {
    open_discrepancy(&mut *conn, d).await?;
    raise_alert(
        &mut *conn,
        &NewAlert {
            dedupe_key: d.dedupe_key,
            kind: alert_kind,
            severity: crate::domain::AlertSeverity::Critical,
            payment_no: d.payment_no,
            message,
            trace_id: d.trace_id,
            now: d.now,
        },
    )
    .await?;
    Ok(())
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct DiscrepancyRow {
    pub discrepancy_id: String,
    pub class: String,
    pub severity: String,
    pub status: String,
    pub payment_no: Option<String>,
    pub details: String,
}

pub async fn discrepancies_for<'e>(
    e: impl Executor<'e, Database = Any>,
    payment_no: &str,
) -> sqlx::Result<Vec<DiscrepancyRow>> {
    sqlx::query_as(
        "SELECT discrepancy_id, class, severity, status, payment_no, details FROM discrepancies \
         WHERE payment_no = $1 ORDER BY found_at",
    )
    .bind(payment_no)
    .fetch_all(e)
    .await
}

// ---------------------------------------------------------------------------
// Triage and the console: a ticket as the console reads it, its one
// status-changing statement (`move_ticket`), its notes and actions.
// ---------------------------------------------------------------------------

pub const TICKET_COLUMNS: &str = "discrepancy_id, class, severity, severity_rank, status, provider, payment_no, \
     provider_txn_id, trace_id, local_amount_minor, local_currency, local_status, provider_amount_minor, \
     provider_currency, provider_status, details, found_at, closed_at, run_id, business_date, order_no, \
     statement_file, range_start, range_end, line_no, owner, actions, conclusion, sla_due_at";

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct TicketRow {
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
    /// Its own due time (a dispute's evidence due date), over its class's
    /// SLA hours.
    pub sla_due_at: Option<i64>,
}

impl TicketRow {
    /// When it becomes overdue: its own due time, or found_at plus its
    /// class's hours.
    pub fn due_at(&self, sla: &crate::domain::Sla) -> i64 {
        self.sla_due_at
            .unwrap_or_else(|| sla.due_at(&self.class, self.found_at))
    }
    /// Its class, when it is one of the domain's words.
    pub fn ticket_class(&self) -> Option<crate::domain::Class> {
        self.class.parse().ok()
    }

    /// Its status, when it is one of the domain's words.
    pub fn ticket_status(&self) -> Option<TicketStatus> {
        self.status.parse().ok()
    }
}

pub async fn ticket<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
) -> sqlx::Result<Option<TicketRow>> {
    sqlx::query_as(&format!(
        "SELECT {TICKET_COLUMNS} FROM discrepancies WHERE discrepancy_id = $1"
    ))
    .bind(id)
    .fetch_optional(e)
    .await
}

/// The ticket opened under `dedupe_key` and its status, if there is one.
pub async fn by_key<'e>(
    e: impl Executor<'e, Database = Any>,
    dedupe_key: &str,
) -> sqlx::Result<Option<(String, String)>> {
    sqlx::query_as("SELECT discrepancy_id, status FROM discrepancies WHERE dedupe_key = $1")
        .bind(dedupe_key)
        .fetch_optional(e)
        .await
}

/// The ticket's status, if there is such a ticket.
pub async fn status_of<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT status FROM discrepancies WHERE discrepancy_id = $1")
        .bind(id)
        .fetch_optional(e)
        .await
}

/// The ticket's payment (if it names one) and status.
pub async fn payment_of<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
) -> sqlx::Result<Option<(Option<String>, String)>> {
    sqlx::query_as("SELECT payment_no, status FROM discrepancies WHERE discrepancy_id = $1")
        .bind(id)
        .fetch_optional(e)
        .await
}

/// The owner of a ticket that is not closed (`Some(None)`: nobody yet);
/// `None` when it is closed or there is no such ticket.
pub async fn owner_if_open<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
) -> sqlx::Result<Option<Option<String>>> {
    sqlx::query_scalar(
        "SELECT owner FROM discrepancies WHERE discrepancy_id = $1 AND status <> 'CLOSED'",
    )
    .bind(id)
    .fetch_optional(e)
    .await
}

/// A ticket's move to `to`. Every change of a ticket's status is one of
/// these, in its caller's transaction.
pub struct Move<'a> {
    pub to: TicketStatus,
    /// The states it moves from: each one a predecessor of `to`
    /// ([`TicketStatus::predecessors`]).
    pub from: &'a [TicketStatus],
    /// States the ticket may be in and stay in, the row still written
    /// (`updated_at`, the owner): a note on a ticket awaiting approval
    /// leaves it awaiting.
    pub stay: &'a [TicketStatus],
    pub now: i64,
    /// The new owner, if the move assigns the ticket.
    pub owner: Option<&'a str>,
    /// Closing: the conclusion written with `closed_at`.
    pub conclusion: Option<&'a str>,
    /// Only when this holds as well.
    pub only_if: Option<Only>,
}

/// A further condition of a move, tested in its own statement.
#[derive(Clone, Copy, Debug)]
pub enum Only {
    /// A STATUS_LAG ticket whose payment is paid now: the lag is over.
    LagResolved,
}

impl<'a> Move<'a> {
    pub fn new(to: TicketStatus, from: &'a [TicketStatus], now: i64) -> Move<'a> {
        Move {
            to,
            from,
            stay: &[],
            now,
            owner: None,
            conclusion: None,
            only_if: None,
        }
    }
}

/// Moves ticket `id` as `m` says; returns the rows changed (0: it was in
/// none of the states `m` moves from or lets stay, or `only_if` did not
/// hold). The states are the domain's words, never input.
pub async fn move_ticket(conn: &mut AnyConnection, id: &str, m: &Move<'_>) -> sqlx::Result<u64> {
    let words = |states: &mut dyn Iterator<Item = &TicketStatus>| {
        states
            .map(|s| format!("'{}'", s.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    assert!(
        m.from.iter().all(|f| f.may_go_to(m.to)),
        "a ticket cannot go from {:?} to {}",
        m.from,
        m.to
    );
    let to = m.to.as_str();
    let status = if m.stay.is_empty() {
        format!("'{to}'")
    } else {
        format!(
            "CASE WHEN status IN ({}) THEN '{to}' ELSE status END",
            words(&mut m.from.iter())
        )
    };
    // $1 now, $2 the ticket, then the owner and the conclusion if any.
    let mut sets = format!("status = {status}, updated_at = $1");
    let mut n = 2;
    if m.owner.is_some() {
        n += 1;
        sets.push_str(&format!(", owner = ${n}"));
    }
    if m.conclusion.is_some() {
        n += 1;
        sets.push_str(&format!(", conclusion = ${n}, closed_at = $1"));
    }
    // Reopened, a ticket is no longer concluded: its conclusion stays in
    // its notes and the audit log, and the day's closed count drops it.
    if m.from.contains(&TicketStatus::Closed) {
        sets.push_str(", conclusion = NULL, closed_at = NULL");
    }
    let only = match m.only_if {
        None => String::new(),
        Some(Only::LagResolved) => format!(
            " AND class = '{}' AND EXISTS (SELECT 1 FROM payments p WHERE p.payment_no = discrepancies.payment_no \
               AND p.status IN ({}))",
            crate::domain::Class::StatusLag.as_str(),
            crate::store::payments::paid_list()
        ),
    };
    let sql = format!(
        "UPDATE discrepancies SET {sets} WHERE discrepancy_id = $2 AND status IN ({}){only}",
        words(&mut m.from.iter().chain(m.stay))
    );
    let mut q = sqlx::query(&sql).bind(m.now).bind(id);
    if let Some(owner) = m.owner {
        q = q.bind(owner);
    }
    if let Some(conclusion) = m.conclusion {
        q = q.bind(conclusion);
    }
    let moved = q.execute(&mut *conn).await?.rows_affected();
    // A closed ticket is no longer a cause: its alerts are resolved with it.
    if moved > 0 && m.to == TicketStatus::Closed {
        super::alerts::resolve_for_ticket(conn, id, m.now).await?;
    }
    // Reopened, it is a cause again: so are the alerts its close resolved.
    if moved > 0 && m.from.contains(&TicketStatus::Closed) && m.to != TicketStatus::Closed {
        super::alerts::reopen_for_ticket(conn, id).await?;
    }
    Ok(moved)
}

/// The order a backfilled payment was created for, on its ticket.
pub async fn set_order_no(conn: &mut AnyConnection, id: &str, order_no: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE discrepancies SET order_no = $1 WHERE discrepancy_id = $2")
        .bind(order_no)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// The ticket's `actions` with `entries` (a placeholder for one or more
/// JSON values joined by commas) added. `actions` is a JSON array kept as
/// text: its closing bracket is stripped and the entries added (with a
/// comma unless it was empty).
pub fn appended_actions(entries: &str) -> String {
    format!(
        "CASE WHEN actions = '[]' OR actions = '' THEN '[' || {entries} || ']' \
         ELSE SUBSTR(actions, 1, LENGTH(actions) - 1) || ',' || {entries} || ']' END"
    )
}

/// Appends to the ticket's `actions` with one statement, so two writers
/// never lose each other's entry (no read-modify-write).
pub async fn append_action(
    conn: &mut AnyConnection,
    id: &str,
    entry: &serde_json::Value,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(&format!(
        "UPDATE discrepancies SET updated_at = $1, actions = {} WHERE discrepancy_id = $3",
        appended_actions("$2")
    ))
    .bind(now)
    .bind(entry.to_string())
    .bind(id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// A note row (`ticket_notes`), inside the caller's transaction. `file`:
/// name, content type and bytes of an evidence file.
pub async fn insert_note(
    conn: &mut AnyConnection,
    id: &str,
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
    .bind(id)
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

/// A ticket's notes, oldest first.
pub async fn notes_of<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
) -> sqlx::Result<Vec<app::tickets::Note>> {
    sqlx::query_as(
        "SELECT note_id AS id, kind, body, file_name, file_size, author, at FROM ticket_notes \
         WHERE discrepancy_id = $1 ORDER BY at, note_id",
    )
    .bind(id)
    .fetch_all(e)
    .await
}

/// An evidence file's name and bytes.
pub async fn evidence_file<'e>(
    e: impl Executor<'e, Database = Any>,
    note_id: &str,
) -> sqlx::Result<Option<(Option<String>, Option<Vec<u8>>)>> {
    sqlx::query_as(
        "SELECT file_name, file_bytes FROM ticket_notes WHERE note_id = $1 AND kind = 'evidence_file'",
    )
    .bind(note_id)
    .fetch_optional(e)
    .await
}

/// A payment's tickets as its page lists them.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct OfPayment {
    pub discrepancy_id: String,
    pub class: String,
    pub severity: String,
    pub status: String,
    pub found_at: i64,
}

pub async fn of_payment<'e>(
    e: impl Executor<'e, Database = Any>,
    payment_no: &str,
) -> sqlx::Result<Vec<OfPayment>> {
    sqlx::query_as(
        "SELECT discrepancy_id, class, severity, status, found_at FROM discrepancies WHERE payment_no = $1 ORDER BY found_at",
    )
    .bind(payment_no)
    .fetch_all(e)
    .await
}

/// The statement line a ticket came from, as its run kept it (`recon_rows`,
/// written by reconciliation): transaction id, payment_no, time.
pub async fn statement_line<'e>(
    e: impl Executor<'e, Database = Any>,
    run_id: &str,
    line_no: i64,
) -> sqlx::Result<Option<(Option<String>, Option<String>, Option<i64>)>> {
    sqlx::query_as(
        "SELECT provider_txn_id, payment_no, occurred_at FROM recon_rows WHERE run_id = $1 AND line_no = $2",
    )
    .bind(run_id)
    .bind(line_no)
    .fetch_optional(e)
    .await
}

// ---------------------------------------------------------------------------
// Opened and updated by reconciliation: a run's tickets (one per cause), the
// repairs recorded on them, and the count of a day's open ones.
// ---------------------------------------------------------------------------

/// What every ticket of one reconciliation run carries.
pub struct FromRun<'a> {
    pub run_id: &'a str,
    pub provider: &'a str,
    pub business_date: &'a str,
    pub statement_file: Option<&'a str>,
    /// The business day, [start, end) microseconds UTC.
    pub range: (i64, i64),
    pub now: i64,
}

/// One ticket a run found, under its dedupe key.
pub struct RunTicket<'a> {
    pub dedupe_key: &'a str,
    pub class: Class,
    pub severity: Severity,
    pub payment_no: Option<&'a str>,
    pub provider_txn_id: Option<&'a str>,
    pub local: Option<(i64, &'a str, &'a str)>,
    pub provider_side: Option<(i64, &'a str, &'a str)>,
    pub details: &'a str,
    pub order_no: Option<&'a str>,
    pub line_no: Option<i64>,
}

/// Tickets per multi-row upsert (24 values each).
pub const RUN_TICKETS_PER_STATEMENT: usize = 128;

/// A run's tickets, as a step of its write pipeline (built now, with owned
/// values): each opened once per cause; one still open is updated (its
/// run, both sides, details, file and line), a closed one left closed.
/// Each dedupe key at most once: PostgreSQL refuses to touch a row twice
/// in one statement.
pub fn upsert_from_run(kind: DbKind, run: &FromRun<'_>, tickets: &[RunTicket<'_>]) -> WriteOp {
    let own = |s: Option<&str>| s.map(str::to_owned);
    let mut q = QueryBuilder::new(
        "INSERT INTO discrepancies (discrepancy_id, dedupe_key, class, severity, status, provider, payment_no, \
           provider_txn_id, local_amount_minor, local_currency, local_status, provider_amount_minor, \
           provider_currency, provider_status, source, details, found_at, run_id, business_date, order_no, \
           statement_file, range_start, range_end, line_no, updated_at, severity_rank) ",
    );
    q.push_values(tickets, |mut b, t| {
        let side = |s: Option<(i64, &str, &str)>| {
            (
                s.map(|s| s.0),
                s.map(|s| s.1.to_owned()),
                s.map(|s| s.2.to_owned()),
            )
        };
        let (local_amount, local_currency, local_status) = side(t.local);
        let (provider_amount, provider_currency, provider_status) = side(t.provider_side);
        b.push_bind(uuid::Uuid::now_v7().to_string())
            .push_bind(t.dedupe_key.to_owned())
            .push_bind(t.class.as_str())
            .push_bind(t.severity.as_str())
            .push("'OPEN'")
            .push_bind(run.provider.to_owned())
            .push_bind(own(t.payment_no))
            .push_bind(own(t.provider_txn_id))
            .push_bind(local_amount)
            .push_bind(local_currency)
            .push_bind(local_status)
            .push_bind(provider_amount)
            .push_bind(provider_currency)
            .push_bind(provider_status)
            .push("'recon'")
            .push_bind(t.details.to_owned())
            .push_bind(run.now)
            .push_bind(run.run_id.to_owned())
            .push_bind(run.business_date.to_owned())
            .push_bind(own(t.order_no))
            .push_bind(own(run.statement_file))
            .push_bind(run.range.0)
            .push_bind(run.range.1)
            .push_bind(t.line_no)
            .push_bind(run.now)
            .push_bind(t.severity.rank());
    });
    q.push(
        " ON CONFLICT (dedupe_key) DO UPDATE SET run_id = excluded.run_id, \
           local_amount_minor = excluded.local_amount_minor, local_currency = excluded.local_currency, \
           local_status = excluded.local_status, provider_amount_minor = excluded.provider_amount_minor, \
           provider_currency = excluded.provider_currency, provider_status = excluded.provider_status, \
           details = excluded.details, statement_file = excluded.statement_file, line_no = excluded.line_no, \
           updated_at = excluded.updated_at \
         WHERE discrepancies.status <> 'CLOSED'",
    );
    pipeline::built(kind, q)
}

/// What a STATUS_LAG repair did (`entries`: comma-separated JSON actions,
/// empty for none), on the payment's open STATUS_LAG tickets of
/// reconciliation; `fixed` closes them as auto-repaired, each through
/// [`move_ticket`]. The tickets touched, with their runs.
pub async fn record_repair(
    conn: &mut AnyConnection,
    payment_no: &str,
    entries: &str,
    fixed: bool,
    now: i64,
) -> sqlx::Result<Vec<(String, Option<String>)>> {
    let actions_now = format!(
        "CASE WHEN $2 = '' THEN actions ELSE {} END",
        appended_actions("$2")
    );
    // By the payment's index: `class || ''` keeps SQLite from walking
    // every STATUS_LAG ticket by the class's index instead.
    let touched: Vec<(String, Option<String>)> = sqlx::query_as(&format!(
        "UPDATE discrepancies SET updated_at = $1, actions = {actions_now} \
         WHERE payment_no = $3 AND class || '' = '{}' AND source = 'recon' AND status <> '{}' \
         RETURNING discrepancy_id, run_id",
        Class::StatusLag.as_str(),
        TicketStatus::Closed.as_str(),
    ))
    .bind(now)
    .bind(entries)
    .bind(payment_no)
    .fetch_all(&mut *conn)
    .await?;
    if fixed {
        let from = TicketStatus::predecessors(TicketStatus::Closed);
        let close = Move {
            conclusion: Some(
                "auto-repaired: the provider reported the payment paid and Reckon recorded it",
            ),
            ..Move::new(TicketStatus::Closed, &from, now)
        };
        for (id, _) in &touched {
            move_ticket(conn, id, &close).await?;
        }
    }
    Ok(touched)
}

const OPEN_OF_DAY: &str = "SELECT COUNT(*) FROM discrepancies \
     WHERE provider = $1 AND business_date = $2 AND status <> 'CLOSED'";

/// How many of a provider's tickets of a business day are open.
pub async fn count_open_of_day<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    date: &str,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(OPEN_OF_DAY)
        .bind(provider)
        .bind(date)
        .fetch_one(e)
        .await
}

/// A provider's tickets of a business day, as the dashboard accounts for
/// what its figures do not say: the closed ones, the DUPLICATE ones (each
/// one for several rows), the open FEE_MISMATCH ones (on rows that
/// matched), the open STATUS_LAG ones whose repair is queued. `closed`
/// leaves FEE_MISMATCH out: its row is matched, whatever became of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct DayTickets {
    pub closed: i64,
    pub duplicates: i64,
    pub fee_open: i64,
    pub awaiting_repair: i64,
}

pub async fn day_tickets<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    date: &str,
) -> sqlx::Result<DayTickets> {
    let closed = TicketStatus::Closed.as_str();
    let sum = |when: String| {
        format!("CAST(COALESCE(SUM(CASE WHEN {when} THEN 1 ELSE 0 END), 0) AS BIGINT)")
    };
    sqlx::query_as(&format!(
        "SELECT {} AS closed, {} AS duplicates, {} AS fee_open, {} AS awaiting_repair \
         FROM discrepancies WHERE provider = $1 AND business_date = $2",
        sum(format!(
            "status = '{closed}' AND class <> '{}'",
            Class::FeeMismatch.as_str()
        )),
        sum(format!("class = '{}'", Class::Duplicate.as_str())),
        sum(format!(
            "class = '{}' AND status <> '{closed}'",
            Class::FeeMismatch.as_str()
        )),
        sum(format!(
            "class = '{}' AND status <> '{closed}' AND EXISTS (SELECT 1 FROM provider_tasks t \
               WHERE t.payment_no = discrepancies.payment_no AND t.kind = '{}' AND t.status = 'PENDING')",
            Class::StatusLag.as_str(),
            super::tasks::RECON_REPAIR
        )),
    ))
    .bind(provider)
    .bind(date)
    .fetch_one(e)
    .await
}

/// The amount of a provider's open tickets of a business day, per
/// currency, in minor units: ours where we have it, else the provider's.
pub async fn open_amounts_of_day<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    date: &str,
) -> sqlx::Result<Vec<(String, i64)>> {
    sqlx::query_as(
        "SELECT COALESCE(local_currency, provider_currency) AS currency, \
           CAST(SUM(COALESCE(local_amount_minor, provider_amount_minor)) AS BIGINT) AS amount \
         FROM discrepancies WHERE provider = $1 AND business_date = $2 AND status <> 'CLOSED' \
           AND COALESCE(local_currency, provider_currency) IS NOT NULL \
         GROUP BY COALESCE(local_currency, provider_currency) ORDER BY 1",
    )
    .bind(provider)
    .bind(date)
    .fetch_all(e)
    .await
}

/// [`count_open_of_day`], on SQLite counted on a read-only connection of
/// its own with SQLite's small default page cache ([`super::scan`]):
/// counting on a pool connection left the tickets' pages in its 64 MiB
/// cache, more memory at a run's peak.
pub async fn count_open_of_day_apart(db: &Db, provider: &str, date: &str) -> sqlx::Result<i64> {
    let Some(path) = db.sqlite_path.clone() else {
        return count_open_of_day(&db.pool, provider, date).await;
    };
    let (provider, date) = (provider.to_owned(), date.to_owned());
    tokio::task::spawn_blocking(move || {
        use super::scan::{Bind, each_row};
        let mut open = 0;
        each_row(
            &path,
            OPEN_OF_DAY,
            &[Bind::Text(&provider), Bind::Text(&date)],
            |r| {
                open = r.int(0).unwrap_or_default();
            },
        )
        .map(|_| open)
    })
    .await
    .map_err(|e| e.to_string())
    .and_then(|counted| counted)
    .map_err(|e| sqlx::Error::Io(std::io::Error::other(e)))
}

// ---------------------------------------------------------------------------
// The SLA: open tickets past their class's hours, each marked
// once by the statement that raises its alert.
// ---------------------------------------------------------------------------

/// An open ticket past its SLA whose alert is not raised yet.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct SlaDue {
    pub discrepancy_id: String,
    pub class: String,
    pub severity: String,
    pub provider: String,
    pub payment_no: Option<String>,
    pub found_at: i64,
    /// Its own due time, when it has one.
    pub sla_due_at: Option<i64>,
}

/// Up to `limit` open tickets past their SLA at `now` and not alerted,
/// oldest first: a range of the partial index `discrepancies_sla_due`
/// (bounded by the shortest SLA), each row then held to its own class's;
/// and those with a due time of their own past it, by the partial index
/// `discrepancies_sla_override`.
pub async fn sla_due(
    db: &Db,
    sla: &crate::domain::Sla,
    now: i64,
    limit: i64,
) -> sqlx::Result<Vec<SlaDue>> {
    let mut qb: QueryBuilder<'static, Any> = QueryBuilder::new(
        "SELECT discrepancy_id, class, severity, provider, payment_no, found_at, sla_due_at FROM discrepancies \
         WHERE status <> 'CLOSED' AND sla_alerted_at IS NULL AND sla_due_at IS NULL AND found_at <= ",
    );
    qb.push_bind(now - sla.shortest_hours() * 3_600_000_000)
        .push(" AND found_at <=");
    super::ageing::overdue_cut(&mut qb, sla, now);
    qb.push(format!(" ORDER BY found_at, discrepancy_id LIMIT {limit}"));
    let (sql, args) = super::lists::finish(&mut qb, db.kind);
    let mut due: Vec<SlaDue> = sqlx::query_as_with(&sql, args).fetch_all(&db.pool).await?;
    let own: Vec<SlaDue> = sqlx::query_as(&format!(
        "SELECT discrepancy_id, class, severity, provider, payment_no, found_at, sla_due_at FROM discrepancies \
         WHERE sla_due_at IS NOT NULL AND status <> 'CLOSED' AND sla_alerted_at IS NULL AND sla_due_at <= $1 \
         ORDER BY sla_due_at, discrepancy_id LIMIT {limit}"
    ))
    .bind(now)
    .fetch_all(&db.pool)
    .await?;
    due.extend(own);
    Ok(due)
}

/// Gives the ticket under `dedupe_key` its own due time (`None`: its
/// class's SLA again).
pub async fn set_due<'e>(
    e: impl Executor<'e, Database = Any>,
    discrepancy_id: &str,
    due_at: Option<i64>,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE discrepancies SET sla_due_at = $1 WHERE discrepancy_id = $2")
        .bind(due_at)
        .bind(discrepancy_id)
        .execute(e)
        .await?;
    Ok(())
}

/// An open DISPUTE ticket a run opened for a dispute `id` of `provider`
/// its balance listed before any notification of it (its key ends in
/// `:DISPUTE:{id}`).
pub async fn open_recon_dispute<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    id: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(
        "SELECT discrepancy_id FROM discrepancies WHERE provider = $1 AND class = $2 \
           AND status <> 'CLOSED' AND dedupe_key LIKE $3 ORDER BY found_at LIMIT 1",
    )
    .bind(provider)
    .bind(Class::Dispute.as_str())
    .bind(format!(
        "recon:{provider}:%:{}:{id}",
        Class::Dispute.as_str()
    ))
    .fetch_optional(e)
    .await
}

/// Marks an open ticket's SLA alert as raised at `now`, its `entry` added
/// to the ticket's actions; false when it was marked before (by another
/// instance) or has closed since it was read.
pub async fn mark_sla_alerted(
    conn: &mut AnyConnection,
    id: &str,
    entry: &serde_json::Value,
    now: i64,
) -> sqlx::Result<bool> {
    let done = sqlx::query(&format!(
        "UPDATE discrepancies SET sla_alerted_at = $1, actions = {} \
         WHERE discrepancy_id = $3 AND sla_alerted_at IS NULL AND status <> 'CLOSED'",
        appended_actions("$2")
    ))
    .bind(now)
    .bind(entry.to_string())
    .bind(id)
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Of the reconciliation tickets under `keys`, the open ones no statement
/// row stands behind (a payment or refund absent from its statement):
/// their ids.
pub async fn open_absent(
    conn: &mut AnyConnection,
    kind: DbKind,
    keys: &[&str],
) -> sqlx::Result<Vec<String>> {
    let mut out = Vec::new();
    for chunk in keys.chunks(super::recon_reads::KEYS_PER_STATEMENT) {
        let mut q =
            QueryBuilder::new("SELECT discrepancy_id FROM discrepancies WHERE dedupe_key IN (");
        let mut list = q.separated(", ");
        for key in chunk {
            list.push_bind((*key).to_owned());
        }
        q.push(") AND source = 'recon' AND status <> 'CLOSED' AND provider_status IS NULL");
        let ids: Vec<(String,)> = super::fetch_all_built(&mut *conn, kind, q).await?;
        out.extend(ids.into_iter().map(|(id,)| id));
    }
    Ok(out)
}

/// Which of `keys` are CLOSED tickets: causes decided already (by two
/// people's fix, a conclusion, a neighbouring statement), which a re-run
/// finding them again neither reopens nor holds a payment for.
pub async fn closed_among(
    conn: &mut AnyConnection,
    kind: DbKind,
    keys: &[&str],
) -> sqlx::Result<hashbrown::HashSet<String>> {
    let mut out = hashbrown::HashSet::new();
    for chunk in keys.chunks(super::recon_reads::KEYS_PER_STATEMENT) {
        let mut q = QueryBuilder::new("SELECT dedupe_key FROM discrepancies WHERE dedupe_key IN (");
        let mut list = q.separated(", ");
        for key in chunk {
            list.push_bind((*key).to_owned());
        }
        q.push(format!(
            ") AND status = '{}'",
            TicketStatus::Closed.as_str()
        ));
        let keys: Vec<(String,)> = super::fetch_all_built(&mut *conn, kind, q).await?;
        out.extend(keys.into_iter().map(|(key,)| key));
    }
    Ok(out)
}

/// Ticket `id` closed through [`move_ticket`] with `conclusion` and
/// `entry` on its actions, its waiting proposals superseded; whether it
/// was closed now.
pub async fn close_with(
    conn: &mut AnyConnection,
    id: &str,
    entry: &serde_json::Value,
    conclusion: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let from = TicketStatus::predecessors(TicketStatus::Closed);
    let close = Move {
        conclusion: Some(conclusion),
        ..Move::new(TicketStatus::Closed, &from, now)
    };
    if move_ticket(conn, id, &close).await? == 0 {
        return Ok(false);
    }
    append_action(conn, id, entry, now).await?;
    super::proposals::supersede_pending(conn, id, conclusion).await?;
    Ok(true)
}

/// The id of the ticket opened under `dedupe_key`, if it is not closed.
pub async fn open_by_key<'e>(
    e: impl Executor<'e, Database = Any>,
    dedupe_key: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(
        "SELECT discrepancy_id FROM discrepancies WHERE dedupe_key = $1 AND status <> 'CLOSED'",
    )
    .bind(dedupe_key)
    .fetch_optional(e)
    .await
}

/// Puts a ticket opened outside a run (`open_discrepancy`) on a business
/// day and the run it was found against, so the day's close counts it.
pub async fn place_on_day<'e>(
    e: impl Executor<'e, Database = Any>,
    dedupe_key: &str,
    run_id: &str,
    business_date: &str,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE discrepancies SET run_id = $2, business_date = $3 \
         WHERE dedupe_key = $1 AND business_date IS NULL",
    )
    .bind(dedupe_key)
    .bind(run_id)
    .bind(business_date)
    .execute(e)
    .await?;
    Ok(())
}

/// A ticket as a run's results name it.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct RunResultTicket {
    pub discrepancy_id: String,
    pub class: String,
    pub severity: String,
    pub status: String,
    pub line_no: Option<i64>,
    pub payment_no: Option<String>,
    pub provider_txn_id: Option<String>,
    pub local_amount_minor: Option<i64>,
    pub local_currency: Option<String>,
    pub local_status: Option<String>,
}

const RESULT_TICKET_COLUMNS: &str = "discrepancy_id, class, severity, status, line_no, payment_no, \
     provider_txn_id, local_amount_minor, local_currency, local_status";

/// The tickets run `run_id` left on its statement lines `from..=to`, by
/// line, most severe first (index `discrepancies_run_line`).
pub async fn of_run_lines<'e>(
    e: impl Executor<'e, Database = Any>,
    run_id: &str,
    from: i64,
    to: i64,
) -> sqlx::Result<Vec<RunResultTicket>> {
    sqlx::query_as(&format!(
        "SELECT {RESULT_TICKET_COLUMNS} FROM discrepancies WHERE run_id = $1 AND line_no >= $2 AND line_no <= $3 \
         ORDER BY line_no, severity_rank DESC, discrepancy_id"
    ))
    .bind(run_id)
    .bind(from)
    .bind(to)
    .fetch_all(e)
    .await
}

/// Up to `limit` of the tickets run `run_id` left on no statement line (a
/// payment or refund Reckon has and the statement lacks), after the ticket
/// `after`, by id.
pub async fn of_run_lineless<'e>(
    e: impl Executor<'e, Database = Any>,
    run_id: &str,
    after: &str,
    limit: i64,
) -> sqlx::Result<Vec<RunResultTicket>> {
    sqlx::query_as(&format!(
        "SELECT {RESULT_TICKET_COLUMNS} FROM discrepancies WHERE run_id = $1 AND line_no IS NULL \
         AND discrepancy_id > $2 ORDER BY discrepancy_id LIMIT $3"
    ))
    .bind(run_id)
    .bind(after)
    .bind(limit)
    .fetch_all(e)
    .await
}
