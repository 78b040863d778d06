//! The `discrepancies` table (tickets): opened at most once per dedupe key,
//! so a repeated cause does not repeat the ticket.

use super::alerts::{NewAlert, raise_alert};
use crate::domain::{Class, Severity};
use sqlx::{Any, Executor};

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
