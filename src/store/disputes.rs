//! The `disputes` family (`disputes`, `dispute_events`,
//! `dispute_movements`): a provider's dispute as a lifecycle, each verified
//! event of it, and the money it moved on the provider's balance. Written
//! only by the engine's dispute intake (`engine::disputes`), in the
//! transaction that stores the callback.

use sqlx::{Any, AnyConnection, Executor, QueryBuilder};

/// A dispute as stored.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow, serde::Serialize)]
pub struct DisputeRow {
    pub provider: String,
    pub dispute_id: String,
    pub payment_no: Option<String>,
    pub provider_txn_id: Option<String>,
    pub amount_minor: i64,
    pub currency: String,
    pub reason: Option<String>,
    /// `domain::DisputeStatus`'s words.
    pub status: String,
    pub provider_status: String,
    pub status_rank: i64,
    pub evidence_due_at: Option<i64>,
    pub last_event_at: i64,
    pub opened_at: i64,
    pub closed_at: Option<i64>,
    pub ticket_id: Option<String>,
    pub updated_at: i64,
}

const COLUMNS: &str = "provider, dispute_id, payment_no, provider_txn_id, amount_minor, currency, reason, \
     status, provider_status, status_rank, evidence_due_at, last_event_at, opened_at, closed_at, ticket_id, updated_at";

pub async fn get<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    dispute_id: &str,
) -> sqlx::Result<Option<DisputeRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM disputes WHERE provider = $1 AND dispute_id = $2"
    ))
    .bind(provider)
    .bind(dispute_id)
    .fetch_optional(e)
    .await
}

/// The dispute a ticket follows, if any.
pub async fn of_ticket<'e>(
    e: impl Executor<'e, Database = Any>,
    ticket_id: &str,
) -> sqlx::Result<Option<DisputeRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM disputes WHERE ticket_id = $1"
    ))
    .bind(ticket_id)
    .fetch_optional(e)
    .await
}

/// Writes the dispute as `d` has it: a new one inserted, a known one's
/// state replaced (the caller decided it moves forward).
pub async fn put(conn: &mut AnyConnection, d: &DisputeRow) -> sqlx::Result<()> {
    sqlx::query(&format!(
        "INSERT INTO disputes ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) \
         ON CONFLICT (provider, dispute_id) DO UPDATE SET payment_no = $3, provider_txn_id = $4, \
           amount_minor = $5, currency = $6, reason = $7, status = $8, provider_status = $9, \
           status_rank = $10, evidence_due_at = $11, last_event_at = $12, opened_at = $13, closed_at = $14, \
           ticket_id = $15, updated_at = $16"
    ))
    .bind(&d.provider)
    .bind(&d.dispute_id)
    .bind(&d.payment_no)
    .bind(&d.provider_txn_id)
    .bind(d.amount_minor)
    .bind(&d.currency)
    .bind(&d.reason)
    .bind(&d.status)
    .bind(&d.provider_status)
    .bind(d.status_rank)
    .bind(d.evidence_due_at)
    .bind(d.last_event_at)
    .bind(d.opened_at)
    .bind(d.closed_at)
    .bind(&d.ticket_id)
    .bind(d.updated_at)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// One event of a dispute as it was read.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct EventRow {
    pub callback_row: String,
    pub event_type: String,
    pub status: String,
    pub provider_status: String,
    pub event_at: i64,
    /// 1 when it moved the dispute; 0 for one older than what was known.
    pub applied: i64,
    pub received_at: i64,
}

pub async fn add_event(
    conn: &mut AnyConnection,
    provider: &str,
    dispute_id: &str,
    ev: &EventRow,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO dispute_events (provider, dispute_id, callback_row, event_type, status, provider_status, \
           event_at, applied, received_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
         ON CONFLICT (provider, callback_row) DO NOTHING",
    )
    .bind(provider)
    .bind(dispute_id)
    .bind(&ev.callback_row)
    .bind(&ev.event_type)
    .bind(&ev.status)
    .bind(&ev.provider_status)
    .bind(ev.event_at)
    .bind(ev.applied)
    .bind(ev.received_at)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// A dispute's events in the provider's order.
pub async fn events<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    dispute_id: &str,
) -> sqlx::Result<Vec<EventRow>> {
    sqlx::query_as(
        "SELECT callback_row, event_type, status, provider_status, event_at, applied, received_at \
         FROM dispute_events WHERE provider = $1 AND dispute_id = $2 ORDER BY event_at, received_at",
    )
    .bind(provider)
    .bind(dispute_id)
    .fetch_all(e)
    .await
}

pub const WITHDRAWN: &str = "WITHDRAWN";
pub const REINSTATED: &str = "REINSTATED";

/// Money a dispute moved, once per the provider's id of it.
pub struct NewMovement<'a> {
    pub provider: &'a str,
    pub movement_id: &'a str,
    pub dispute_id: &'a str,
    /// WITHDRAWN | REINSTATED
    pub kind: &'static str,
    pub amount_minor: i64,
    pub fee_minor: i64,
    pub currency: &'a str,
    pub moved_at: i64,
}

/// True when the movement is new.
pub async fn add_movement(conn: &mut AnyConnection, m: &NewMovement<'_>) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "INSERT INTO dispute_movements (provider, movement_id, dispute_id, kind, amount_minor, fee_minor, \
           currency, moved_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
         ON CONFLICT (provider, movement_id) DO NOTHING",
    )
    .bind(m.provider)
    .bind(m.movement_id)
    .bind(m.dispute_id)
    .bind(m.kind)
    .bind(m.amount_minor)
    .bind(m.fee_minor)
    .bind(m.currency)
    .bind(m.moved_at)
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// What a dispute moved in all: withdrawn, reinstated, fees (net). (Sums
/// are cast: PostgreSQL's SUM of BIGINT is NUMERIC, which the `Any`
/// driver does not read.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, sqlx::FromRow, serde::Serialize)]
pub struct Moved {
    pub withdrawn_minor: i64,
    pub reinstated_minor: i64,
    pub fee_minor: i64,
}

pub async fn moved<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    dispute_id: &str,
) -> sqlx::Result<Moved> {
    sqlx::query_as(&format!(
        "SELECT CAST(COALESCE(SUM(CASE WHEN kind = '{WITHDRAWN}' THEN amount_minor ELSE 0 END), 0) AS BIGINT) AS withdrawn_minor, \
           CAST(COALESCE(SUM(CASE WHEN kind = '{REINSTATED}' THEN amount_minor ELSE 0 END), 0) AS BIGINT) AS reinstated_minor, \
           CAST(COALESCE(SUM(fee_minor), 0) AS BIGINT) AS fee_minor \
         FROM dispute_movements WHERE provider = $1 AND dispute_id = $2"
    ))
    .bind(provider)
    .bind(dispute_id)
    .fetch_one(e)
    .await
}

/// Of `ids`, the disputes of `provider` Reckon has had a notification of.
pub async fn known<'e>(
    e: impl Executor<'e, Database = Any>,
    kind: super::DbKind,
    provider: &str,
    ids: &[&str],
) -> sqlx::Result<Vec<String>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut q: QueryBuilder<'static, Any> =
        QueryBuilder::new("SELECT dispute_id FROM disputes WHERE provider = ");
    q.push_bind(provider.to_owned())
        .push(" AND dispute_id IN (");
    let mut list = q.separated(", ");
    for id in ids {
        list.push_bind((*id).to_owned());
    }
    q.push(")");
    let (sql, args) = super::lists::finish(&mut q, kind);
    let rows: Vec<(String,)> = sqlx::query_as_with(&sql, args).fetch_all(e).await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

/// A day's dispute money for one currency, as the daily close states it.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, sqlx::FromRow, serde::Serialize, serde::Deserialize,
)]
pub struct DayFigures {
    pub currency: String,
    /// Taken from the balance by disputes in the day.
    pub withdrawn_minor: i64,
    /// Given back by disputes won in the day.
    pub reinstated_minor: i64,
    /// The providers' dispute fees booked in the day (net of fees given back).
    pub fees_minor: i64,
    /// Disputes open at the day's end (opened before it, not decided by it).
    pub open_count: i64,
    pub open_minor: i64,
}

/// The dispute money of `provider`'s day [start, end) per currency.
pub async fn day_figures<'e, E>(
    e: E,
    provider: &str,
    (start, end): (i64, i64),
) -> sqlx::Result<Vec<DayFigures>>
where
    E: Executor<'e, Database = Any> + Copy,
{
    let moved: Vec<(String, i64, i64, i64)> = sqlx::query_as(&format!(
        "SELECT currency, \
           CAST(COALESCE(SUM(CASE WHEN kind = '{WITHDRAWN}' THEN amount_minor ELSE 0 END), 0) AS BIGINT), \
           CAST(COALESCE(SUM(CASE WHEN kind = '{REINSTATED}' THEN amount_minor ELSE 0 END), 0) AS BIGINT), \
           CAST(COALESCE(SUM(fee_minor), 0) AS BIGINT) \
         FROM dispute_movements WHERE provider = $1 AND moved_at >= $2 AND moved_at < $3 \
         GROUP BY currency"
    ))
    .bind(provider)
    .bind(start)
    .bind(end)
    .fetch_all(e)
    .await?;
    let open: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT currency, COUNT(*), CAST(COALESCE(SUM(amount_minor), 0) AS BIGINT) FROM disputes \
         WHERE provider = $1 AND opened_at < $2 AND (closed_at IS NULL OR closed_at >= $2) \
         GROUP BY currency",
    )
    .bind(provider)
    .bind(end)
    .fetch_all(e)
    .await?;
    let mut out: std::collections::BTreeMap<String, DayFigures> = Default::default();
    for (currency, withdrawn, reinstated, fees) in moved {
        let f = out.entry(currency.clone()).or_default();
        f.currency = currency;
        (f.withdrawn_minor, f.reinstated_minor, f.fees_minor) = (withdrawn, reinstated, fees);
    }
    for (currency, count, minor) in open {
        let f = out.entry(currency.clone()).or_default();
        f.currency = currency;
        (f.open_count, f.open_minor) = (count, minor);
    }
    Ok(out.into_values().collect())
}

/// A dispute as lists show it: its row and what it moved.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct Listed {
    #[sqlx(flatten)]
    pub dispute: DisputeRow,
    pub withdrawn_minor: i64,
    pub reinstated_minor: i64,
    pub fee_minor: i64,
}

/// The most a list answers.
pub const LIST_LIMIT: i64 = 500;

/// Disputes (of `provider`, in `status`, or all), newest opened first, at
/// most [`LIST_LIMIT`].
pub async fn list<'e>(
    e: impl Executor<'e, Database = Any>,
    kind: super::DbKind,
    provider: Option<&str>,
    status: Option<&str>,
) -> sqlx::Result<Vec<Listed>> {
    let sum = |what: &str| {
        format!(
            "(SELECT CAST(COALESCE(SUM({what}), 0) AS BIGINT) FROM dispute_movements m \
             WHERE m.provider = d.provider AND m.dispute_id = d.dispute_id)"
        )
    };
    let columns: Vec<String> = COLUMNS.split(", ").map(|c| format!("d.{c}")).collect();
    let mut q: QueryBuilder<'static, Any> = QueryBuilder::new(format!(
        "SELECT {}, {} AS withdrawn_minor, {} AS reinstated_minor, {} AS fee_minor FROM disputes d WHERE 1 = 1",
        columns.join(", "),
        sum(&format!(
            "CASE WHEN m.kind = '{WITHDRAWN}' THEN m.amount_minor ELSE 0 END"
        )),
        sum(&format!(
            "CASE WHEN m.kind = '{REINSTATED}' THEN m.amount_minor ELSE 0 END"
        )),
        sum("m.fee_minor"),
    ));
    if let Some(p) = provider {
        q.push(" AND d.provider = ").push_bind(p.to_owned());
    }
    if let Some(s) = status {
        q.push(" AND d.status = ").push_bind(s.to_owned());
    }
    q.push(format!(
        " ORDER BY d.opened_at DESC, d.dispute_id LIMIT {LIST_LIMIT}"
    ));
    let (sql, args) = super::lists::finish(&mut q, kind);
    sqlx::query_as_with(&sql, args).fetch_all(e).await
}
