//! The `alerts` and `discrepancies` tables. Both are opened at most once per
//! dedupe key, so a repeated cause does not repeat the ticket.

use sqlx::{Any, Executor};

pub struct NewAlert<'a> {
    pub dedupe_key: &'a str,
    pub kind: &'a str,
    pub severity: &'a str,
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
        .bind(a.kind)
        .bind(a.severity)
        .bind(a.payment_no)
        .bind(a.message)
        .bind(a.trace_id)
        .bind(a.now)
}

fn log_raised(a: &NewAlert<'_>) {
    tracing::warn!(
        kind = a.kind,
        severity = a.severity,
        payment_no = a.payment_no,
        "{}",
        a.message
    );
}

/// `raise_alert` for many, in multi-row statements; each alert raised now
/// is logged as `raise_alert` logs it.
pub async fn raise_alerts(
    conn: &mut sqlx::AnyConnection,
    alerts: &[NewAlert<'_>],
) -> sqlx::Result<()> {
    for chunk in alerts.chunks(crate::store::ROWS_PER_STATEMENT) {
        let sql = insert_alerts(&crate::store::Marks::for_conn(conn).rows(chunk.len(), 8, ""));
        let mut q = sqlx::query_scalar::<_, String>(&sql);
        for a in chunk {
            q = bind_alert(q, a);
        }
        let raised: std::collections::HashSet<String> =
            q.fetch_all(&mut *conn).await?.into_iter().collect();
        for a in chunk.iter().filter(|a| raised.contains(a.dedupe_key)) {
            log_raised(a);
        }
    }
    Ok(())
}

#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
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

pub struct NewDiscrepancy<'a> {
    pub dedupe_key: &'a str,
    pub class: &'a str,
    pub severity: &'a str,
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
         VALUES ($1, $2, $3, $4, 'OPEN', $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
           CASE $4 WHEN 'CRITICAL' THEN 4 WHEN 'HIGH' THEN 3 WHEN 'MEDIUM' THEN 2 ELSE 1 END) \
         ON CONFLICT (dedupe_key) DO NOTHING",
    )
    .bind(uuid::Uuid::now_v7().to_string())
    .bind(d.dedupe_key)
    .bind(d.class)
    .bind(d.severity)
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

#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
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
