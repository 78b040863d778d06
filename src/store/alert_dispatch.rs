//! Routing alerts to their channels (migration 0031): the alerts not yet
//! routed, leased so two instances never route one twice; `alert_routes`,
//! each alert's fate per channel (sent at once or held for a digest); and
//! `alert_windows`, each (channel, kind)'s grouping window. The messages
//! themselves are outbox rows (`store::outbox`), delivered by the relay.

use sqlx::{Any, Executor};

/// An alert to route, as raised.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct RoutedAlert {
    pub alert_id: String,
    pub dedupe_key: String,
    pub kind: String,
    pub severity: String,
    pub payment_no: Option<String>,
    pub message: String,
    pub created_at: i64,
}

/// True when an alert waits to be routed (a read: an idle pass writes
/// nothing).
pub async fn any_unrouted<'e>(
    e: impl Executor<'e, Database = Any>,
    now: i64,
) -> sqlx::Result<bool> {
    let found: Option<i64> = sqlx::query_scalar(
        "SELECT 1 FROM alerts WHERE routed_at IS NULL \
           AND (route_lease_until IS NULL OR route_lease_until <= $1) LIMIT 1",
    )
    .bind(now)
    .fetch_optional(e)
    .await?;
    Ok(found.is_some())
}

/// Leases up to `limit` unrouted alerts, oldest first, until `lease_until`.
pub async fn lease_unrouted<'e>(
    e: impl Executor<'e, Database = Any>,
    now: i64,
    lease_until: i64,
    limit: i64,
    skip_locked: &str,
) -> sqlx::Result<Vec<RoutedAlert>> {
    let sql = format!(
        "UPDATE alerts SET route_lease_until = $1 \
         WHERE alert_id IN (SELECT alert_id FROM alerts WHERE routed_at IS NULL \
             AND (route_lease_until IS NULL OR route_lease_until <= $2) \
             ORDER BY created_at, alert_id LIMIT $3{skip_locked}) \
         RETURNING alert_id, dedupe_key, kind, severity, payment_no, message, created_at"
    );
    let mut rows: Vec<RoutedAlert> = sqlx::query_as(&sql)
        .bind(lease_until)
        .bind(now)
        .bind(limit)
        .fetch_all(e)
        .await?;
    // RETURNING keeps no order: the first of a kind must go first.
    rows.sort_by(|a, b| (a.created_at, &a.alert_id).cmp(&(b.created_at, &b.alert_id)));
    Ok(rows)
}

/// Marks an alert routed; false when another pass routed it first (the
/// caller then writes nothing).
pub async fn mark_routed(
    conn: &mut sqlx::AnyConnection,
    alert_id: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE alerts SET routed_at = $1, route_lease_until = NULL \
         WHERE alert_id = $2 AND routed_at IS NULL",
    )
    .bind(now)
    .bind(alert_id)
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Every unrouted alert marked routed at once: there is no channel.
pub async fn mark_all_routed<'e>(
    e: impl Executor<'e, Database = Any>,
    now: i64,
) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "UPDATE alerts SET routed_at = $1, route_lease_until = NULL WHERE routed_at IS NULL",
    )
    .bind(now)
    .execute(e)
    .await?;
    Ok(done.rows_affected())
}

/// Opens the (channel, kind) window from `now` to `until` unless one is
/// open at `now`; true when this call opened it (its alert goes at once).
/// One statement, so two passes racing cannot both open it.
pub async fn open_window(
    conn: &mut sqlx::AnyConnection,
    channel: &str,
    kind: &str,
    now: i64,
    until: i64,
) -> sqlx::Result<bool> {
    let opened: Option<String> = sqlx::query_scalar(
        "INSERT INTO alert_windows (channel, kind, open_from, open_until) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (channel, kind) DO UPDATE SET open_from = excluded.open_from, open_until = excluded.open_until \
         WHERE alert_windows.open_until <= excluded.open_from \
         RETURNING channel",
    )
    .bind(channel)
    .bind(kind)
    .bind(now)
    .bind(until)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(opened.is_some())
}

/// Sets the (channel, kind) window, open or not: after a digest.
pub async fn set_window(
    conn: &mut sqlx::AnyConnection,
    channel: &str,
    kind: &str,
    from: i64,
    until: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO alert_windows (channel, kind, open_from, open_until) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (channel, kind) DO UPDATE SET open_from = excluded.open_from, open_until = excluded.open_until",
    )
    .bind(channel)
    .bind(kind)
    .bind(from)
    .bind(until)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// When the (channel, kind) window closes (None: never opened).
pub async fn window_until<'e>(
    e: impl Executor<'e, Database = Any>,
    channel: &str,
    kind: &str,
) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar("SELECT open_until FROM alert_windows WHERE channel = $1 AND kind = $2")
        .bind(channel)
        .bind(kind)
        .fetch_optional(e)
        .await
}

/// An alert's route to a channel: SENT with its message, or HELD.
pub async fn insert_route(
    conn: &mut sqlx::AnyConnection,
    alert: &RoutedAlert,
    channel: &str,
    message_id: Option<&str>,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO alert_routes (alert_id, channel, kind, status, message_id, routed_at, sent_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(&alert.alert_id)
    .bind(channel)
    .bind(&alert.kind)
    .bind(if message_id.is_some() { "SENT" } else { "HELD" })
    .bind(message_id)
    .bind(now)
    .bind(message_id.map(|_| now))
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// The (channel, kind) pairs with held alerts.
pub async fn held_groups<'e>(
    e: impl Executor<'e, Database = Any>,
) -> sqlx::Result<Vec<(String, String)>> {
    sqlx::query_as(
        "SELECT DISTINCT channel, kind FROM alert_routes WHERE status = 'HELD' ORDER BY channel, kind",
    )
    .fetch_all(e)
    .await
}

/// Claims the held alerts of (channel, kind) for `message_id`; the alerts
/// claimed, oldest first (none when another pass claimed them first).
pub async fn claim_held(
    conn: &mut sqlx::AnyConnection,
    channel: &str,
    kind: &str,
    message_id: &str,
    now: i64,
) -> sqlx::Result<Vec<RoutedAlert>> {
    sqlx::query(
        "UPDATE alert_routes SET status = 'SENT', message_id = $1, sent_at = $2 \
         WHERE channel = $3 AND kind = $4 AND status = 'HELD'",
    )
    .bind(message_id)
    .bind(now)
    .bind(channel)
    .bind(kind)
    .execute(&mut *conn)
    .await?;
    sqlx::query_as(
        "SELECT a.alert_id, a.dedupe_key, a.kind, a.severity, a.payment_no, a.message, a.created_at \
         FROM alert_routes r JOIN alerts a ON a.alert_id = r.alert_id \
         WHERE r.message_id = $1 AND r.channel = $2 ORDER BY a.created_at, a.alert_id",
    )
    .bind(message_id)
    .bind(channel)
    .fetch_all(&mut *conn)
    .await
}
