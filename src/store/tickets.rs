//! The `discrepancies` table (tickets): opened at most once per dedupe key,
//! so a repeated cause does not repeat the ticket.

use super::alerts::{NewAlert, raise_alert};
use super::pipeline::{self, WriteOp};
use super::{Db, DbKind};
use crate::domain::{Class, Severity};
use sqlx::{Any, Executor, QueryBuilder};

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
    alert_kind: &str,
    message: &str,
) -> sqlx::Result<()> {
    open_discrepancy(&mut *conn, d).await?;
    raise_alert(
        &mut *conn,
        &NewAlert {
            dedupe_key: d.dedupe_key,
            kind: alert_kind,
            severity: "critical",
            payment_no: d.payment_no,
            message,
            trace_id: d.trace_id,
            now: d.now,
        },
    )
    .await?;
    Ok(())
}

#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize, utoipa::ToSchema)]
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

/// What a STATUS_LAG repair did (`entries`: comma-separated JSON actions,
/// empty for none), on the payment's open STATUS_LAG tickets of
/// reconciliation; `fixed` closes them as auto-repaired. The tickets
/// touched, with their runs.
pub async fn record_repair(
    conn: &mut sqlx::AnyConnection,
    payment_no: &str,
    entries: &str,
    fixed: bool,
    now: i64,
) -> sqlx::Result<Vec<(String, Option<String>)>> {
    let actions_now = format!(
        "CASE WHEN $4 = '' THEN actions ELSE {} END",
        appended_actions("$4")
    );
    // By the payment's index: `class || ''` keeps SQLite from walking
    // every STATUS_LAG ticket by the class's index instead.
    sqlx::query_as(&format!(
        "UPDATE discrepancies SET updated_at = $1, actions = {actions_now}, \
           status = CASE WHEN $2 = 1 THEN 'CLOSED' ELSE status END, \
           conclusion = CASE WHEN $2 = 1 THEN 'auto-repaired through engine::apply' ELSE conclusion END, \
           closed_at = CASE WHEN $2 = 1 THEN $1 ELSE closed_at END \
         WHERE payment_no = $3 AND class || '' = 'STATUS_LAG' AND source = 'recon' AND status <> 'CLOSED' \
         RETURNING discrepancy_id, run_id"
    ))
    .bind(now)
    .bind(i64::from(fixed))
    .bind(payment_no)
    .bind(entries)
    .fetch_all(&mut *conn)
    .await
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
