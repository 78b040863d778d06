//! What `/metrics` reports of the database's state at each scrape: open
//! alerts by kind, open and overdue tickets, DEAD callbacks. Read at the
//! scrape (not kept by a beat) so every instance reports the same figures,
//! not only the one that ran the last pass.

use sqlx::{Any, Executor, Row};

/// Counts of what needs a person now.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Gauges {
    /// Unresolved and unacknowledged alerts, by kind.
    pub alerts_open: Vec<(String, i64)>,
    /// Tickets not closed, by severity.
    pub tickets_open: Vec<(String, i64)>,
    /// Open tickets whose SLA has passed (their `sla_overdue` alert raised).
    pub tickets_overdue: i64,
    /// Callbacks given up (DEAD) and not yet replayed.
    pub callbacks_dead: i64,
}

pub async fn read<'e, E>(e: E) -> sqlx::Result<Gauges>
where
    E: Executor<'e, Database = Any> + Copy,
{
    let alerts_open = sqlx::query(
        "SELECT kind, COUNT(*) FROM alerts WHERE acknowledged_at IS NULL AND resolved_at IS NULL GROUP BY kind",
    )
    .fetch_all(e)
    .await?
    .iter()
    .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
    .collect::<sqlx::Result<_>>()?;
    let tickets_open = sqlx::query(
        "SELECT severity, COUNT(*) FROM discrepancies WHERE status <> 'CLOSED' GROUP BY severity",
    )
    .fetch_all(e)
    .await?
    .iter()
    .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
    .collect::<sqlx::Result<_>>()?;
    let tickets_overdue = sqlx::query_scalar(
        "SELECT COUNT(*) FROM discrepancies WHERE status <> 'CLOSED' AND sla_alerted_at IS NOT NULL",
    )
    .fetch_one(e)
    .await?;
    let callbacks_dead = sqlx::query_scalar(
        "SELECT COUNT(*) FROM payment_callbacks WHERE processing_status = 'DEAD'",
    )
    .fetch_one(e)
    .await?;
    Ok(Gauges {
        alerts_open,
        tickets_open,
        tickets_overdue,
        callbacks_dead,
    })
}
