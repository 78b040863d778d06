//! The `outbox_events` and `outbox_deliveries` tables: messages written in
//! the same transaction as the change they announce, delivered later.

use crate::store::batch::{Statements, insert_rows};
use crate::store::{DbKind, fetch_all_built};
use sqlx::{Any, AnyConnection, Executor, QueryBuilder};

pub struct NewEvent<'a> {
    pub message_id: &'a str,
    pub aggregate_type: &'a str,
    pub aggregate_id: &'a str,
    pub event_type: &'a str,
    pub payload: &'a str,
    pub now: i64,
}

/// Whose deliveries a relay lane takes: one sink's (or alert channel's), or
/// those of every sink no longer configured.
#[derive(Clone, Copy, Debug)]
pub enum SinkFilter<'a> {
    One(&'a str),
    NoneOf(&'a [String]),
}

impl SinkFilter<'_> {
    fn push(&self, qb: &mut QueryBuilder<'static, Any>, column: &str) {
        match *self {
            SinkFilter::One(name) => {
                qb.push(format!("{column} = ")).push_bind(name.to_owned());
            }
            SinkFilter::NoneOf([]) => {
                qb.push(format!("{column} IS NOT NULL"));
            }
            SinkFilter::NoneOf(names) => {
                qb.push(format!("{column} NOT IN ("));
                let mut list = qb.separated(", ");
                for n in names {
                    list.push_bind(n.clone());
                }
                qb.push(")");
            }
        }
    }
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct DueDelivery {
    pub message_id: String,
    pub sink: String,
    pub attempts: i64,
    /// The lease this pass holds: its outcome is written only while the
    /// row still carries it (not after a resend, nor another instance's
    /// lease once this one ran out).
    pub lease_until: i64,
    pub next_attempt_at: i64,
    /// Who queued it again, if a person did: its attempts are RESEND ones.
    pub resent_by: Option<String>,
}

/// What a lane may lease: deliveries PENDING, unleased, not held, their
/// sink not paused, and none of their payment's earlier messages to the
/// same sink still PENDING (so a payment's messages arrive in the order
/// they were written); due by `now`, or, for a probe of a sink that is
/// down, whatever is next in line.
fn leasable(qb: &mut QueryBuilder<'static, Any>, sinks: SinkFilter<'_>, now: i64, probe: bool) {
    qb.push(
        "SELECT d.message_id FROM outbox_deliveries d JOIN outbox_events ev ON ev.message_id = d.message_id \
         WHERE d.status = 'PENDING' AND ",
    );
    sinks.push(qb, "d.sink");
    if !probe {
        qb.push(" AND d.next_attempt_at <= ").push_bind(now);
    }
    qb.push(" AND (d.lease_until IS NULL OR d.lease_until <= ")
        .push_bind(now)
        .push(
            ") AND NOT EXISTS (SELECT 1 FROM payment_holds h WHERE h.payment_no = ev.aggregate_id) \
             AND NOT EXISTS (SELECT 1 FROM sink_state ss WHERE ss.sink = d.sink AND ss.paused_at IS NOT NULL) \
             AND NOT EXISTS (SELECT 1 FROM outbox_events e1 JOIN outbox_deliveries d1 ON d1.message_id = e1.message_id \
               WHERE e1.aggregate_id = ev.aggregate_id AND d1.sink = d.sink AND d1.status = 'PENDING' \
                 AND (e1.created_at < ev.created_at OR (e1.created_at = ev.created_at AND e1.message_id < ev.message_id)))",
        );
}

/// Up to `limit` deliveries a lane may send now (see [`leasable`]),
/// leased until `lease_until`, oldest due first. `probe`: one sink that is
/// down is tried with whatever is next, due or not.
pub async fn lease(
    conn: &mut AnyConnection,
    sinks: SinkFilter<'_>,
    now: i64,
    lease_until: i64,
    limit: i64,
    probe: bool,
) -> sqlx::Result<Vec<DueDelivery>> {
    let kind = DbKind::of(conn);
    let mut qb = QueryBuilder::new("UPDATE outbox_deliveries SET lease_until = ");
    qb.push_bind(lease_until).push(" WHERE ");
    sinks.push(&mut qb, "sink");
    qb.push(" AND message_id IN (");
    leasable(&mut qb, sinks, now, probe);
    qb.push(" ORDER BY d.next_attempt_at LIMIT ")
        .push_bind(limit);
    if kind == DbKind::Postgres {
        qb.push(" FOR UPDATE OF d SKIP LOCKED");
    }
    qb.push(") RETURNING message_id, sink, attempts, lease_until, next_attempt_at, resent_by");
    let mut due: Vec<DueDelivery> = fetch_all_built(&mut *conn, kind, qb).await?;
    due.sort_by_key(|d| d.next_attempt_at);
    Ok(due)
}

/// True when [`lease`] would find something due: a read, so a lane with
/// nothing to send never waits for SQLite's write lock.
pub async fn any_due(
    e: impl Executor<'_, Database = Any>,
    kind: DbKind,
    sinks: SinkFilter<'_>,
    now: i64,
) -> sqlx::Result<bool> {
    let mut qb = QueryBuilder::new("");
    leasable(&mut qb, sinks, now, false);
    qb.push(" LIMIT 1");
    let found: Vec<(String,)> = fetch_all_built(e, kind, qb).await?;
    Ok(!found.is_empty())
}

/// The events of `ids`, in one statement.
pub async fn events(
    e: impl Executor<'_, Database = Any>,
    kind: DbKind,
    ids: &[&str],
) -> sqlx::Result<Vec<EventRow>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut qb = QueryBuilder::new(
        "SELECT message_id, aggregate_id, event_type, payload, created_at FROM outbox_events WHERE message_id IN (",
    );
    let mut list = qb.separated(", ");
    for id in ids {
        list.push_bind((*id).to_owned());
    }
    qb.push(")");
    fetch_all_built(e, kind, qb).await
}

/// What became of one leased delivery's attempt.
pub enum Outcome<'a> {
    Delivered,
    /// Failed: tried again at `next_at`, or DEAD when `None`.
    Failed {
        error: &'a str,
        next_at: Option<i64>,
    },
    /// A probe of a sink that is down failed on a message not yet due: it
    /// keeps its place and its schedule.
    ProbeFailed {
        error: &'a str,
    },
}

/// Writes a lane's outcomes of one lease: the delivered in one statement,
/// each failure by its own. Only rows still under `lease_until` change (a
/// resend's fresh start is never undone by a late outcome). Returns, in
/// order, whether each outcome stood.
pub async fn record(
    conn: &mut AnyConnection,
    sink: &str,
    lease_until: i64,
    now: i64,
    outcomes: &[(&str, Outcome<'_>)],
) -> sqlx::Result<Vec<bool>> {
    let delivered: Vec<&str> = outcomes
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Delivered))
        .map(|(id, _)| *id)
        .collect();
    let kind = DbKind::of(conn);
    let mut stood = std::collections::HashSet::new();
    for chunk in delivered.chunks(500) {
        let mut qb = QueryBuilder::new(
            "UPDATE outbox_deliveries SET status = 'DELIVERED', attempts = attempts + 1, published_at = ",
        );
        qb.push_bind(now)
            .push(", lease_until = NULL, last_error = NULL WHERE sink = ")
            .push_bind(sink.to_owned())
            .push(" AND lease_until = ")
            .push_bind(lease_until)
            .push(" AND message_id IN (");
        let mut list = qb.separated(", ");
        for id in chunk {
            list.push_bind((*id).to_owned());
        }
        qb.push(") RETURNING message_id");
        let ids: Vec<(String,)> = fetch_all_built(&mut *conn, kind, qb).await?;
        stood.extend(ids.into_iter().map(|(id,)| id));
    }
    let mut result = Vec::with_capacity(outcomes.len());
    for (id, outcome) in outcomes {
        let (status, counted, next_at, error) = match outcome {
            Outcome::Delivered => {
                result.push(stood.contains(*id));
                continue;
            }
            Outcome::Failed { error, next_at } => (
                if next_at.is_some() { "PENDING" } else { "DEAD" },
                1i64,
                *next_at,
                error,
            ),
            Outcome::ProbeFailed { error } => ("PENDING", 0i64, None, error),
        };
        let current = sqlx::query(
            "UPDATE outbox_deliveries SET status = $1, attempts = attempts + $2, \
               next_attempt_at = COALESCE($3, next_attempt_at), lease_until = NULL, last_error = $4 \
             WHERE message_id = $5 AND sink = $6 AND lease_until = $7",
        )
        .bind(status)
        .bind(counted)
        .bind(next_at)
        .bind(*error)
        .bind(*id)
        .bind(sink)
        .bind(lease_until)
        .execute(&mut *conn)
        .await?
        .rows_affected()
            == 1;
        result.push(current);
    }
    Ok(result)
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct EventRow {
    pub message_id: String,
    pub aggregate_id: String,
    pub event_type: String,
    pub payload: String,
    pub created_at: i64,
}

pub async fn event<'e>(
    e: impl Executor<'e, Database = Any>,
    message_id: &str,
) -> sqlx::Result<Option<EventRow>> {
    sqlx::query_as(
        "SELECT message_id, aggregate_id, event_type, payload, created_at FROM outbox_events WHERE message_id = $1",
    )
    .bind(message_id)
    .fetch_optional(e)
    .await
}

pub async fn events_of<'e>(
    e: impl Executor<'e, Database = Any>,
    aggregate_id: &str,
) -> sqlx::Result<Vec<EventRow>> {
    sqlx::query_as(
        "SELECT message_id, aggregate_id, event_type, payload, created_at FROM outbox_events \
         WHERE aggregate_id = $1 ORDER BY created_at, message_id",
    )
    .bind(aggregate_id)
    .fetch_all(e)
    .await
}

/// Age of the oldest undelivered message, for the lag gauge.
pub async fn oldest_pending<'e>(e: impl Executor<'e, Database = Any>) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar(
        "SELECT MIN(ev.created_at) FROM outbox_deliveries d JOIN outbox_events ev ON ev.message_id = d.message_id \
         WHERE d.status = 'PENDING'",
    )
    .fetch_one(e)
    .await
}

/// Many events, each with a delivery row per sink that wants its event
/// type, by multi-row statements.
pub async fn insert_events_many(
    conn: &mut impl Statements,
    events: &[NewEvent<'_>],
    sinks: &[super::sinks::Route],
) -> sqlx::Result<()> {
    insert_rows(
        &mut *conn,
        "INSERT INTO outbox_events (message_id, aggregate_type, aggregate_id, event_type, payload, available_at, created_at)",
        "",
        events,
        |ev| {
            [
                ev.message_id.into(),
                ev.aggregate_type.into(),
                ev.aggregate_id.into(),
                ev.event_type.into(),
                ev.payload.into(),
                ev.now.into(),
                ev.now.into(),
            ]
        },
    )
    .await?;
    for sink in sinks {
        let wanted: Vec<&NewEvent> = events
            .iter()
            .filter(|ev| sink.wants(ev.event_type))
            .collect();
        insert_rows(
            &mut *conn,
            "INSERT INTO outbox_deliveries (message_id, sink, next_attempt_at, status, attempts)",
            ", 'PENDING', 0",
            &wanted,
            |ev| {
                [
                    ev.message_id.into(),
                    sink.name.as_str().into(),
                    ev.now.into(),
                ]
            },
        )
        .await?;
    }
    Ok(())
}

// ---- The console ----------------------------------------------------

/// A payment's outbox message with one of its deliveries (none when no
/// sink is configured).
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct EventDelivery {
    pub message_id: String,
    pub event_type: String,
    pub created_at: i64,
    pub sink: Option<String>,
    pub status: Option<String>,
    pub attempts: Option<i64>,
    pub last_error: Option<String>,
    pub published_at: Option<i64>,
}

pub async fn deliveries_of<'e>(
    e: impl Executor<'e, Database = Any>,
    aggregate_id: &str,
) -> sqlx::Result<Vec<EventDelivery>> {
    sqlx::query_as(
        "SELECT e.message_id, e.event_type, e.created_at, d.sink, d.status, d.attempts, d.last_error, d.published_at \
         FROM outbox_events e LEFT JOIN outbox_deliveries d ON d.message_id = e.message_id \
         WHERE e.aggregate_id = $1 ORDER BY e.created_at",
    )
    .bind(aggregate_id)
    .fetch_all(e)
    .await
}
// ---- end of the console ---------------------------------------------
