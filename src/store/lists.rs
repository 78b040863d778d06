//! The console's keyset lists with their optional filters: tickets (most
//! severe, then oldest first), callbacks, payments and reconciliation runs
//! (newest first), the audit log. Each is one statement assembled by
//! `sqlx::QueryBuilder` from the filters given; a page is read one row past
//! its size, so the caller knows whether another follows.

use super::tickets::{TICKET_COLUMNS, TicketRow};
use super::{Db, DbKind};
use app::console::{PaymentSummary, RunSummary};
use app::filter::QueryFilter;
use app::tickets::{AuditEntry, TicketFilter};
use sqlx::any::AnyArguments;
use sqlx::{Any, Execute, QueryBuilder};

type Builder = QueryBuilder<'static, Any>;

/// The statement `qb` built, with the placeholders its database reads, and
/// its values. `QueryBuilder<Any>` writes `?` for every value (the `Any`
/// driver knows no other); SQLite reads that, PostgreSQL reads `$1…$n`, so
/// there they are numbered in the order they appear.
pub(super) fn finish(qb: &mut Builder, kind: DbKind) -> (String, AnyArguments<'_>) {
    let mut query = qb.build();
    let args = query.take_arguments().ok().flatten().unwrap_or_default();
    let sql = match kind {
        DbKind::Sqlite => query.sql().to_owned(),
        DbKind::Postgres => super::numbered(query.sql()),
    };
    (sql, args)
}

/// A newest-first list's position: the time and key of the last row of
/// the page before (`time.key`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct After {
    pub at: i64,
    pub key: String,
}

impl After {
    /// `None` for anything that is not a cursor: the first page again.
    pub fn parse(cursor: Option<&str>) -> Option<After> {
        let (at, key) = cursor?.split_once('.')?;
        Some(After {
            at: at.parse().ok()?,
            key: key.to_owned(),
        })
    }
}

/// ` AND (time, key) < (at, key)`: the rows after the cursor, newest
/// first. A row value, each value bound once: the index on (time, key)
/// seeks to it (`time < ? OR (time = ? AND …)` with two values SQLite
/// cannot tell are one, and scans).
fn newest_first_after(qb: &mut Builder, after: Option<&After>, time: &str, key: &str) {
    if let Some(a) = after {
        qb.push(format!(" AND ({time}, {key}) < ("))
            .push_bind(a.at)
            .push(", ")
            .push_bind(a.key.clone())
            .push(")");
    }
}

/// ` AND column = value`
fn equals(qb: &mut Builder, column: &str, value: Option<&str>) {
    if let Some(v) = value {
        qb.push(format!(" AND {column} = ")).push_bind(v.to_owned());
    }
}

/// The ticket queue's position: `rank.found_at.id` of the last row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueAfter {
    pub rank: i64,
    pub found_at: i64,
    pub id: String,
}

impl QueueAfter {
    pub fn parse(cursor: &str) -> Option<QueueAfter> {
        let mut it = cursor.splitn(3, '.');
        Some(QueueAfter {
            rank: it.next()?.parse().ok()?,
            found_at: it.next()?.parse().ok()?,
            id: it.next()?.to_owned(),
        })
    }

    pub fn of(t: &TicketRow) -> QueueAfter {
        QueueAfter {
            rank: t.severity_rank,
            found_at: t.found_at,
            id: t.discrepancy_id.clone(),
        }
    }

    pub fn cursor(&self) -> String {
        format!("{}.{}.{}", self.rank, self.found_at, self.id)
    }
}

/// The WHERE of a ticket filter (without the cursor), leaving out `skip`;
/// `now` places the age buckets.
fn ticket_conditions(
    qb: &mut Builder,
    f: &TicketFilter,
    skip: Option<&str>,
    kind: DbKind,
    now: i64,
) {
    qb.push(" WHERE 1 = 1");
    if let Some(age) = f.age.as_deref() {
        age_condition(qb, age, now);
    }
    if skip != Some("status") && f.status.as_deref() == Some("ACTIVE") {
        qb.push(" AND status <> 'CLOSED'");
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
        equals(
            qb,
            column,
            f.get(key).filter(|v| !(key == "status" && *v == "ACTIVE")),
        );
    }
    match f.owner.as_deref() {
        Some("-") => {
            qb.push(" AND owner IS NULL");
        }
        owner => equals(qb, "owner", owner),
    }
    if let Some(q) = f.q.as_deref() {
        // An identifier as typed, whole or its beginning: payment_no, order
        // no or provider transaction id. Index ranges, not a scan. Byte
        // order on both databases (PostgreSQL compares text by its
        // collation otherwise, which is not the order `prefix_end` assumes).
        let c = if kind == DbKind::Postgres {
            " COLLATE \"C\""
        } else {
            ""
        };
        let end = prefix_end(q);
        qb.push(" AND (");
        for (n, column) in ["payment_no", "order_no", "provider_txn_id"]
            .into_iter()
            .enumerate()
        {
            if n > 0 {
                qb.push(" OR ");
            }
            qb.push(format!("({column}{c} >= "))
                .push_bind(q.to_owned())
                .push(format!(" AND {column}{c} < "))
                .push_bind(end.clone())
                .push(")");
        }
        qb.push(")");
    }
}

/// Open tickets of one age bucket: a range of `found_at`. A word that is
/// no bucket matches nothing (the console refuses it before).
fn age_condition(qb: &mut Builder, age: &str, now: i64) {
    let Some(bucket) = app::ageing::AgeBucket::parse(age) else {
        qb.push(" AND 1 = 0");
        return;
    };
    qb.push(" AND status <> 'CLOSED'");
    let (after, upto) = bucket.found_between(now);
    if let Some(a) = after {
        qb.push(" AND found_at > ").push_bind(a);
    }
    if let Some(u) = upto {
        qb.push(" AND found_at <= ").push_bind(u);
    }
}

/// The smallest string above every string starting with `prefix` (in
/// byte order): its last character, incremented.
pub fn prefix_end(prefix: &str) -> String {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        if let Some(next) = char::from_u32(last as u32 + 1) {
            chars.push(next);
            return chars.into_iter().collect();
        }
    }
    "\u{10FFFF}".into()
}

/// Up to `limit` tickets the filter matches, most severe then oldest, after
/// `after`.
pub async fn tickets(
    db: &Db,
    f: &TicketFilter,
    after: Option<&QueueAfter>,
    limit: i64,
    now: i64,
) -> sqlx::Result<Vec<TicketRow>> {
    let mut qb = Builder::new(format!("SELECT {TICKET_COLUMNS} FROM discrepancies"));
    ticket_conditions(&mut qb, f, None, db.kind, now);
    if let Some(a) = after {
        // The first term is implied by the rest; it gives the queue's index
        // its range (the rank bound twice is two values to SQLite).
        qb.push(" AND severity_rank <= ")
            .push_bind(a.rank)
            .push(" AND (severity_rank < ")
            .push_bind(a.rank)
            .push(" OR (severity_rank = ")
            .push_bind(a.rank)
            .push(" AND (found_at > ")
            .push_bind(a.found_at)
            .push(" OR (found_at = ")
            .push_bind(a.found_at)
            .push(" AND discrepancy_id > ")
            .push_bind(a.id.clone())
            .push("))))");
    }
    qb.push(format!(
        " ORDER BY severity_rank DESC, found_at, discrepancy_id LIMIT {limit}"
    ));
    let (sql, args) = finish(&mut qb, db.kind);
    sqlx::query_as_with(&sql, args).fetch_all(&db.pool).await
}

/// The ticket just before `at` in the filter's queue (most severe, then
/// oldest first), for the ticket page's "previous": the queue walked
/// backwards from `at` by the same index, one row.
pub async fn ticket_before(
    db: &Db,
    f: &TicketFilter,
    at: &QueueAfter,
    now: i64,
) -> sqlx::Result<Option<String>> {
    let mut qb = Builder::new("SELECT discrepancy_id FROM discrepancies");
    ticket_conditions(&mut qb, f, None, db.kind, now);
    qb.push(" AND severity_rank >= ")
        .push_bind(at.rank)
        .push(" AND (severity_rank > ")
        .push_bind(at.rank)
        .push(" OR (severity_rank = ")
        .push_bind(at.rank)
        .push(" AND (found_at < ")
        .push_bind(at.found_at)
        .push(" OR (found_at = ")
        .push_bind(at.found_at)
        .push(" AND discrepancy_id < ")
        .push_bind(at.id.clone())
        .push("))))")
        .push(" ORDER BY severity_rank, found_at DESC, discrepancy_id DESC LIMIT 1");
    let (sql, args) = finish(&mut qb, db.kind);
    sqlx::query_scalar_with(&sql, args)
        .fetch_optional(&db.pool)
        .await
}

/// How many tickets the filter matches.
pub async fn ticket_count(db: &Db, f: &TicketFilter, now: i64) -> sqlx::Result<i64> {
    let mut qb = Builder::new("SELECT COUNT(*) FROM discrepancies");
    ticket_conditions(&mut qb, f, None, db.kind, now);
    let (sql, args) = finish(&mut qb, db.kind);
    sqlx::query_scalar_with(&sql, args)
        .fetch_one(&db.pool)
        .await
}

/// The tickets the filter would match without its own `column` condition,
/// counted by that column (`status` or `class`).
pub async fn tickets_by(
    db: &Db,
    f: &TicketFilter,
    column: &'static str,
    now: i64,
) -> sqlx::Result<Vec<(String, i64)>> {
    debug_assert!(matches!(column, "status" | "class"));
    let mut qb = Builder::new(format!("SELECT {column}, COUNT(*) FROM discrepancies"));
    ticket_conditions(&mut qb, f, Some(column), db.kind, now);
    qb.push(format!(" GROUP BY {column} ORDER BY {column}"));
    let (sql, args) = finish(&mut qb, db.kind);
    sqlx::query_as_with(&sql, args).fetch_all(&db.pool).await
}

/// What the callbacks list filters by.
#[derive(Debug, Default)]
pub struct CallbackQuery<'a> {
    /// payment_no, provider txn id, callback id, trace id or row id (exact)
    pub q: Option<&'a str>,
    pub status: Option<&'a str>,
    pub provider: Option<&'a str>,
    /// Received in [start, end).
    pub received: Option<(i64, i64)>,
    pub after: Option<After>,
}

pub async fn callbacks(
    db: &Db,
    f: &CallbackQuery<'_>,
    limit: i64,
) -> sqlx::Result<Vec<app::console::CallbackSummary>> {
    let mut qb = Builder::new(format!(
        "SELECT {} FROM payment_callbacks WHERE 1 = 1",
        super::callbacks::LISTED_COLUMNS
    ));
    if let Some(q) = f.q {
        qb.push(" AND (");
        for (n, column) in [
            "payment_no",
            "provider_txn_id",
            "callback_id",
            "trace_id",
            "id",
        ]
        .into_iter()
        .enumerate()
        {
            if n > 0 {
                qb.push(" OR ");
            }
            qb.push(format!("{column} = ")).push_bind(q.to_owned());
        }
        qb.push(")");
    }
    equals(&mut qb, "processing_status", f.status);
    equals(&mut qb, "provider", f.provider);
    if let Some((start, end)) = f.received {
        qb.push(" AND received_at >= ")
            .push_bind(start)
            .push(" AND received_at < ")
            .push_bind(end);
    }
    newest_first_after(&mut qb, f.after.as_ref(), "received_at", "id");
    qb.push(format!(" ORDER BY received_at DESC, id DESC LIMIT {limit}"));
    let (sql, args) = finish(&mut qb, db.kind);
    sqlx::query_as_with(&sql, args).fetch_all(&db.pool).await
}

/// What the payments list filters by.
#[derive(Debug, Default)]
pub struct PaymentQuery<'a> {
    /// payment_no, order no or provider txn id (exact)
    pub q: Option<&'a str>,
    pub status: Option<&'a str>,
    pub provider: Option<&'a str>,
    pub amount_minor: Option<i64>,
    /// Created in [start, end).
    pub created: Option<(i64, i64)>,
    pub after: Option<After>,
}

/// A payment as its list shows it, with what its amount and hold are
/// shown from.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct PaymentListed {
    #[sqlx(flatten)]
    pub summary: PaymentSummary,
    pub amount_minor: i64,
    pub currency: String,
    pub hold_reason: Option<String>,
}

pub async fn payments(
    db: &Db,
    f: &PaymentQuery<'_>,
    limit: i64,
) -> sqlx::Result<Vec<PaymentListed>> {
    let mut qb = Builder::new(format!(
        "SELECT payment_no, order_no, provider, provider_txn_id, amount_minor, currency, status, \
           created_at, paid_at, {} FROM payments WHERE 1 = 1",
        super::payments::HOLD_REASON
    ));
    if let Some(q) = f.q {
        qb.push(" AND (payment_no = ")
            .push_bind(q.to_owned())
            .push(" OR order_no = ")
            .push_bind(q.to_owned())
            .push(" OR provider_txn_id = ")
            .push_bind(q.to_owned())
            .push(")");
    }
    equals(&mut qb, "status", f.status);
    equals(&mut qb, "provider", f.provider);
    if let Some(minor) = f.amount_minor {
        qb.push(" AND amount_minor = ").push_bind(minor);
    }
    if let Some((start, end)) = f.created {
        qb.push(" AND created_at >= ")
            .push_bind(start)
            .push(" AND created_at < ")
            .push_bind(end);
    }
    newest_first_after(&mut qb, f.after.as_ref(), "created_at", "payment_no");
    qb.push(format!(
        " ORDER BY created_at DESC, payment_no DESC LIMIT {limit}"
    ));
    let (sql, args) = finish(&mut qb, db.kind);
    sqlx::query_as_with(&sql, args).fetch_all(&db.pool).await
}

/// A reconciliation run as its list shows it (`recon_runs`, written by
/// reconciliation), with what its classes and checks are read from.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct RunListed {
    #[sqlx(flatten)]
    pub summary: RunSummary,
    pub figures_json: Option<String>,
    pub summary_json: Option<String>,
    /// The statement file is kept (`statement_files`).
    pub file_kept: i64,
}

pub async fn runs(db: &Db, after: Option<&After>, limit: i64) -> sqlx::Result<Vec<RunListed>> {
    // The text a run's statement or caller may have made large is read
    // bounded, as every read of runs reads it.
    let mut qb = Builder::new(format!(
        "SELECT run_id AS id, provider, business_date, source, status, phase, cursor, rows_read, figures_json, \
           started_by, started_at, finished_at, file_hash, bill_type, config_version, {}, \
           CAST(CASE WHEN EXISTS (SELECT 1 FROM statement_files f WHERE f.run_id = recon_runs.run_id) THEN 1 ELSE 0 END AS BIGINT) AS file_kept \
         FROM recon_runs WHERE 1 = 1",
        super::recon_runs::BOUNDED_COLUMNS
    ));
    newest_first_after(&mut qb, after, "started_at", "run_id");
    qb.push(format!(
        " ORDER BY started_at DESC, run_id DESC LIMIT {limit}"
    ));
    let (sql, args) = finish(&mut qb, db.kind);
    sqlx::query_as_with(&sql, args).fetch_all(&db.pool).await
}

/// The alerts' filters: each given one must hold.
pub struct AlertQuery<'a> {
    pub kind: Option<&'a str>,
    pub severity: Option<&'a str>,
    pub state: Option<AlertState>,
    pub after: Option<After>,
}

/// Where an alert stands: open (neither acknowledged nor resolved), or
/// acknowledged by a person, or resolved because its cause has gone (it
/// may have been acknowledged before).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlertState {
    Open,
    Acknowledged,
    Resolved,
}

/// Alerts newest first, each with the ticket raised under its key.
pub async fn alerts(
    db: &Db,
    f: &AlertQuery<'_>,
    limit: i64,
) -> sqlx::Result<Vec<super::alerts::Listed>> {
    let mut qb = Builder::new(format!(
        "SELECT {} FROM alerts a LEFT JOIN discrepancies d ON d.dedupe_key = a.dedupe_key WHERE 1 = 1",
        super::alerts::LISTED_COLUMNS
    ));
    equals(&mut qb, "a.kind", f.kind);
    equals(&mut qb, "a.severity", f.severity);
    match f.state {
        Some(AlertState::Open) => {
            qb.push(format!(" AND {}", super::alerts::open_condition("a.")));
        }
        Some(AlertState::Acknowledged) => {
            qb.push(" AND a.acknowledged_at IS NOT NULL");
        }
        Some(AlertState::Resolved) => {
            qb.push(" AND a.resolved_at IS NOT NULL");
        }
        None => {}
    }
    newest_first_after(&mut qb, f.after.as_ref(), "a.created_at", "a.alert_id");
    qb.push(format!(
        " ORDER BY a.created_at DESC, a.alert_id DESC LIMIT {limit}"
    ));
    let (sql, args) = finish(&mut qb, db.kind);
    sqlx::query_as_with(&sql, args).fetch_all(&db.pool).await
}

/// The status of one run (`None`: no such run), for the runs page to
/// resume it.
pub async fn run_status(db: &Db, run_id: &str) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT status FROM recon_runs WHERE run_id = $1")
        .bind(run_id)
        .fetch_optional(&db.pool)
        .await
}

/// What the audit log is filtered by (each optional).
#[derive(Debug, Default)]
pub struct AuditQuery<'a> {
    pub actor: Option<&'a str>,
    /// One action, or a family of them (`fix` for every `fix.*`).
    pub action: Option<&'a str>,
    pub object_type: Option<&'a str>,
    pub object_id: Option<&'a str>,
    /// At or after, and before (microseconds).
    pub from: Option<i64>,
    pub to: Option<i64>,
    /// Entries before this sequence number.
    pub before: Option<i64>,
}

/// Newest first, without their links.
pub async fn audit(db: &Db, f: &AuditQuery<'_>, limit: i64) -> sqlx::Result<Vec<AuditEntry>> {
    let mut qb = Builder::new(
        "SELECT seq, at, actor, action, object_type, object_id, before_json AS before, after_json AS after, hash FROM audit_log \
         WHERE 1 = 1",
    );
    equals(&mut qb, "actor", f.actor);
    if let Some(a) = f.action {
        if a.contains('.') {
            equals(&mut qb, "action", Some(a));
        } else {
            qb.push(" AND action LIKE ").push_bind(format!("{a}.%"));
        }
    }
    equals(&mut qb, "object_type", f.object_type);
    equals(&mut qb, "object_id", f.object_id);
    for (condition, value) in [
        (" AND at >= ", f.from),
        (" AND at < ", f.to),
        (" AND seq < ", f.before),
    ] {
        if let Some(v) = value {
            qb.push(condition).push_bind(v);
        }
    }
    qb.push(format!(" ORDER BY seq DESC LIMIT {limit}"));
    let (sql, args) = finish(&mut qb, db.kind);
    sqlx::query_as_with(&sql, args).fetch_all(&db.pool).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_end_where_the_next_begins() {
        assert_eq!(prefix_end("PAY0001"), "PAY0002");
        assert_eq!(prefix_end("pi_3"), "pi_4");
        assert!("PAY00019" < prefix_end("PAY0001").as_str());
        assert!("PAY0002" >= prefix_end("PAY0001").as_str());
    }

    #[test]
    fn cursors_parse_or_are_ignored() {
        assert_eq!(
            QueueAfter::parse("3.17.abc-1"),
            Some(QueueAfter {
                rank: 3,
                found_at: 17,
                id: "abc-1".into()
            })
        );
        assert_eq!(QueueAfter::parse("x.1.a"), None);
        assert_eq!(QueueAfter::parse("3"), None);
        assert_eq!(After::parse(Some("x.y")), None);
        assert_eq!(
            After::parse(Some("12.PAY1")),
            Some(After {
                at: 12,
                key: "PAY1".into()
            })
        );
    }
}
