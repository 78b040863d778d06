//! The `alerts` table: raised at most once per dedupe key, so a repeated
//! cause does not repeat the alert; logged as raised.

use crate::domain::{AlertKind, AlertSeverity};
use sqlx::{Any, Executor};

pub struct NewAlert<'a> {
    pub dedupe_key: &'a str,
    pub kind: AlertKind,
    pub severity: AlertSeverity,
    pub payment_no: Option<&'a str>,
    pub message: &'a str,
    pub trace_id: Option<&'a str>,
    pub now: i64,
}

pub async fn raise_alert<'e>(
    e: impl Executor<'e, Database = Any>,
    a: &NewAlert<'_>,
) -> sqlx::Result<bool> {
    let sql = insert_alerts("($1, $2, $3, $4, $5, $6, $7, $8)");
    let raised = bind_alert(sqlx::query_scalar(&sql), a)
        .fetch_optional(e)
        .await?
        .is_some();
    if raised {
        log_raised(a);
    }
    Ok(raised)
}

/// The statement that raises the alerts of `values` (eight placeholders
/// each, in `bind_alert`'s order) unless raised before, returning the keys
/// raised now.
fn insert_alerts(values: &str) -> String {
    format!(
        "INSERT INTO alerts (alert_id, dedupe_key, kind, severity, payment_no, message, trace_id, created_at) \
         VALUES {values} ON CONFLICT (dedupe_key) DO NOTHING RETURNING dedupe_key"
    )
}

fn bind_alert<'q>(
    q: sqlx::query::QueryScalar<'q, Any, String, sqlx::any::AnyArguments<'q>>,
    a: &NewAlert<'q>,
) -> sqlx::query::QueryScalar<'q, Any, String, sqlx::any::AnyArguments<'q>> {
    q.bind(uuid::Uuid::now_v7().to_string())
        .bind(a.dedupe_key)
        .bind(a.kind.as_str())
        .bind(a.severity.as_str())
        .bind(a.payment_no)
        .bind(a.message)
        .bind(a.trace_id)
        .bind(a.now)
}

fn log_raised(a: &NewAlert<'_>) {
    tracing::warn!(
        kind = a.kind.as_str(),
        severity = a.severity.as_str(),
        payment_no = a.payment_no,
        "{}",
        a.message
    );
}

/// How many alerts raised in bulk under one count are logged one by one;
/// the rest of each call are logged as one line with their number. A
/// reconciliation that finds thousands of payments missing from a statement
/// writes a few lines, not thousands; every alert is in the console's list
/// either way.
pub const LOGGED_ONE_BY_ONE: usize = 20;

/// `raise_alert` for many, in multi-row statements. Each alert raised now
/// is logged as `raise_alert` logs it while `logged` (shared by the calls
/// of one run) is under [`LOGGED_ONE_BY_ONE`]; past it, one line per call
/// and kind says how many more were raised.
pub async fn raise_alerts(
    conn: &mut sqlx::AnyConnection,
    alerts: &[NewAlert<'_>],
    logged: &std::sync::atomic::AtomicUsize,
) -> sqlx::Result<()> {
    let mut unlogged: std::collections::BTreeMap<(&str, &str), usize> =
        std::collections::BTreeMap::new();
    for chunk in alerts.chunks(crate::store::ROWS_PER_STATEMENT) {
        let sql = insert_alerts(&crate::store::Marks::for_conn(conn).rows(chunk.len(), 8, ""));
        let mut q = sqlx::query_scalar::<_, String>(&sql);
        for a in chunk {
            q = bind_alert(q, a);
        }
        let raised: std::collections::HashSet<String> =
            q.fetch_all(&mut *conn).await?.into_iter().collect();
        for a in chunk.iter().filter(|a| raised.contains(a.dedupe_key)) {
            if logged.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < LOGGED_ONE_BY_ONE {
                log_raised(a);
            } else {
                *unlogged
                    .entry((a.kind.as_str(), a.severity.as_str()))
                    .or_default() += 1;
            }
        }
    }
    for ((kind, severity), count) in unlogged {
        tracing::warn!(
            kind,
            severity,
            count,
            "{count} more {kind} alerts raised, not logged one by one: the console lists every alert"
        );
    }
    Ok(())
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct AlertRow {
    pub alert_id: String,
    pub kind: String,
    pub severity: String,
    pub payment_no: Option<String>,
    pub message: String,
    pub created_at: i64,
}

pub async fn alerts_for<'e>(
    e: impl Executor<'e, Database = Any>,
    payment_no: &str,
) -> sqlx::Result<Vec<AlertRow>> {
    sqlx::query_as(
        "SELECT alert_id, kind, severity, payment_no, message, created_at FROM alerts WHERE payment_no = $1 ORDER BY created_at",
    )
    .bind(payment_no)
    .fetch_all(e)
    .await
}

/// Whether an alert of `dedupe_key` was raised (acknowledged or not).
pub async fn raised<'e>(
    e: impl Executor<'e, Database = Any>,
    dedupe_key: &str,
) -> sqlx::Result<bool> {
    let found: Option<String> =
        sqlx::query_scalar("SELECT alert_id FROM alerts WHERE dedupe_key = $1")
            .bind(dedupe_key)
            .fetch_optional(e)
            .await?;
    Ok(found.is_some())
}

// ---- The console: listing, acknowledging, resolving -------------------------

/// An alert as the console lists it, with what its links are read from:
/// its key and the ticket raised under the same key (if any).
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Listed {
    #[sqlx(flatten)]
    pub row: app::console::AlertRow,
    pub dedupe_key: String,
    pub ticket_id: Option<String>,
}

/// The columns of [`Listed`], over `alerts a LEFT JOIN discrepancies d`.
pub const LISTED_COLUMNS: &str = "a.alert_id AS id, a.dedupe_key, a.kind, a.severity, a.payment_no, a.message, \
     a.created_at, a.acknowledged_at, a.acknowledged_by, a.ack_comment, a.resolved_at, a.resolved_reason, \
     d.discrepancy_id AS ticket_id";

/// An alert neither acknowledged nor resolved (SQL, over `alerts` as `a`
/// or unaliased through `prefix`).
pub fn open_condition(prefix: &str) -> String {
    format!("{prefix}acknowledged_at IS NULL AND {prefix}resolved_at IS NULL")
}

/// How many alerts are open.
pub async fn open_count<'e>(e: impl Executor<'e, Database = Any>) -> sqlx::Result<i64> {
    sqlx::query_scalar(&format!(
        "SELECT COUNT(*) FROM alerts WHERE {}",
        open_condition("")
    ))
    .fetch_one(e)
    .await
}

/// The open alerts counted by kind, by kind's name.
pub async fn open_by_kind<'e>(
    e: impl Executor<'e, Database = Any>,
) -> sqlx::Result<Vec<(String, i64)>> {
    sqlx::query_as(&format!(
        "SELECT kind, COUNT(*) FROM alerts WHERE {} GROUP BY kind ORDER BY kind",
        open_condition("")
    ))
    .fetch_all(e)
    .await
}

/// Every kind of alert ever raised, by name.
pub async fn kinds<'e>(e: impl Executor<'e, Database = Any>) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar("SELECT DISTINCT kind FROM alerts ORDER BY kind")
        .fetch_all(e)
        .await
}

/// Acknowledges an open alert (neither acknowledged nor resolved);
/// returns whether it was open.
pub async fn acknowledge(
    conn: &mut sqlx::AnyConnection,
    alert_id: &str,
    by: &str,
    comment: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let done = sqlx::query(&format!(
        "UPDATE alerts SET acknowledged_at = $1, acknowledged_by = $2, ack_comment = $3 \
         WHERE alert_id = $4 AND {}",
        open_condition("")
    ))
    .bind(now)
    .bind(by)
    .bind(comment)
    .bind(alert_id)
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The dedupe key of a ticket's SLA alert.
pub fn sla_key(ticket_id: &str) -> String {
    format!("sla:{ticket_id}")
}

/// What a resolved alert says of why.
pub const TICKET_CLOSED: &str = "ticket closed";

/// Resolves the alerts whose cause was ticket `ticket_id`, if it is
/// CLOSED: its SLA alert and the alert raised under its own key. Returns
/// how many were resolved now.
pub async fn resolve_for_ticket(
    conn: &mut sqlx::AnyConnection,
    ticket_id: &str,
    now: i64,
) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "UPDATE alerts SET resolved_at = $1, resolved_reason = $2 \
         WHERE resolved_at IS NULL \
           AND dedupe_key IN ($3, (SELECT dedupe_key FROM discrepancies WHERE discrepancy_id = $4)) \
           AND EXISTS (SELECT 1 FROM discrepancies WHERE discrepancy_id = $4 AND status = 'CLOSED')",
    )
    .bind(now)
    .bind(TICKET_CLOSED)
    .bind(sla_key(ticket_id))
    .bind(ticket_id)
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected())
}

/// Lifts the resolution [`resolve_for_ticket`] gave the alerts of ticket
/// `ticket_id` once it is open again (a bulk close undone): its cause is
/// back, so they stand as they stood before, acknowledged or not.
pub async fn reopen_for_ticket(
    conn: &mut sqlx::AnyConnection,
    ticket_id: &str,
) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "UPDATE alerts SET resolved_at = NULL, resolved_reason = NULL \
         WHERE resolved_reason = $1 \
           AND dedupe_key IN ($2, (SELECT dedupe_key FROM discrepancies WHERE discrepancy_id = $3)) \
           AND EXISTS (SELECT 1 FROM discrepancies WHERE discrepancy_id = $3 AND status <> 'CLOSED')",
    )
    .bind(TICKET_CLOSED)
    .bind(sla_key(ticket_id))
    .bind(ticket_id)
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::layer::SubscriberExt;

    /// The messages of Reckon's events on this thread.
    struct Messages(Arc<Mutex<Vec<String>>>);

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Messages {
        fn on_event(
            &self,
            event: &tracing::Event<'_>,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            struct Message(String);
            impl tracing::field::Visit for Message {
                fn record_debug(
                    &mut self,
                    field: &tracing::field::Field,
                    value: &dyn std::fmt::Debug,
                ) {
                    if field.name() == "message" {
                        self.0 = format!("{value:?}");
                    }
                }
            }
            if event.metadata().target().starts_with("reckon") {
                let mut m = Message(String::new());
                event.record(&mut m);
                self.0.lock().unwrap().push(m.0);
            }
        }
    }

    #[tokio::test]
    async fn alerts_raised_in_bulk_are_logged_one_by_one_only_at_first() {
        let dir = tempfile::tempdir().unwrap();
        let url = crate::config::sqlite_url(&dir.path().join("t.db"));
        let db = crate::store::Db::connect(&url).await.unwrap();
        db.migrate().await.unwrap();
        let messages = Arc::new(Mutex::new(Vec::new()));
        let _on_this_thread = tracing::subscriber::set_default(
            tracing_subscriber::registry().with(Messages(messages.clone())),
        );
        let keys: Vec<String> = (0..LOGGED_ONE_BY_ONE + 5)
            .map(|i| format!("alert {i}"))
            .collect();
        fn alert(key: &str) -> NewAlert<'_> {
            NewAlert {
                dedupe_key: key,
                kind: AlertKind::LocalOnly,
                severity: AlertSeverity::Critical,
                payment_no: None,
                message: key,
                trace_id: None,
                now: 1,
            }
        }
        let alerts: Vec<NewAlert> = keys.iter().map(|k| alert(k)).collect();
        let logged = AtomicUsize::new(0);
        let mut conn = db.pool.acquire().await.unwrap();
        raise_alerts(&mut conn, &alerts, &logged).await.unwrap();
        let lines = std::mem::take(&mut *messages.lock().unwrap());
        assert_eq!(lines[..LOGGED_ONE_BY_ONE], keys[..LOGGED_ONE_BY_ONE]);
        assert_eq!(
            lines[LOGGED_ONE_BY_ONE..],
            [
                "5 more local_only alerts raised, not logged one by one: the console lists every alert"
            ]
        );
        // Raised before: not raised again, and nothing logged.
        raise_alerts(&mut conn, &alerts, &logged).await.unwrap();
        assert!(messages.lock().unwrap().is_empty());
        // A later call of the same run, past the count: one line.
        let more: Vec<NewAlert> = ["late 1", "late 2"].into_iter().map(alert).collect();
        raise_alerts(&mut conn, &more, &logged).await.unwrap();
        assert_eq!(
            *messages.lock().unwrap(),
            [
                "2 more local_only alerts raised, not logged one by one: the console lists every alert"
            ]
        );
        let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM alerts")
            .fetch_one(&mut *conn)
            .await
            .unwrap();
        assert_eq!(rows as usize, LOGGED_ONE_BY_ONE + 7);
    }
}
