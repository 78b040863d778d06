//! How old the open tickets are, and how a day changed the queue: reads of
//! `discrepancies` (written by [`super::tickets`]) for the dashboard, each
//! a range of an index of migration 0025 — open tickets by their partial
//! index, a day's found and closed tickets by `found_at` and `closed_at`.

use super::Db;
use super::lists::finish;
use crate::domain::Sla;
use app::ageing::{AgeBucket, DayChange};
use sqlx::{Any, QueryBuilder};

const HOUR_US: i64 = 3_600_000_000;

/// ` CASE class WHEN … THEN … ELSE … END`: the latest `found_at` at which a
/// ticket of its class is past its SLA at `now`.
pub(super) fn overdue_cut(qb: &mut QueryBuilder<'static, Any>, sla: &Sla, now: i64) {
    let (listed, others) = sla.listed();
    qb.push(" CASE class");
    for (class, hours) in listed {
        qb.push(" WHEN ")
            .push_bind(class.to_owned())
            .push(" THEN ")
            .push_bind(now - hours * HOUR_US);
    }
    qb.push(" ELSE ")
        .push_bind(now - others * HOUR_US)
        .push(" END");
}

/// One class's open tickets per age bucket, and those past its SLA.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct ClassAges {
    pub class: String,
    pub up_to_1: i64,
    pub up_to_7: i64,
    pub up_to_30: i64,
    pub over_30: i64,
    pub overdue: i64,
}

/// The open tickets (of `provider`, or all) per class, by age at `now`.
pub async fn open_by_class(
    db: &Db,
    provider: Option<&str>,
    now: i64,
    sla: &Sla,
) -> sqlx::Result<Vec<ClassAges>> {
    let mut qb: QueryBuilder<'static, Any> = QueryBuilder::new("SELECT class");
    for (bucket, name) in AgeBucket::ALL
        .into_iter()
        .zip(["up_to_1", "up_to_7", "up_to_30", "over_30"])
    {
        let (after, upto) = bucket.found_between(now);
        qb.push(", COUNT(CASE WHEN 1 = 1");
        if let Some(a) = after {
            qb.push(" AND found_at > ").push_bind(a);
        }
        if let Some(u) = upto {
            qb.push(" AND found_at <= ").push_bind(u);
        }
        qb.push(format!(" THEN 1 END) AS {name}"));
    }
    // A ticket with a due time of its own (a dispute's evidence due date)
    // is held to it, not to its class's hours.
    qb.push(", COUNT(CASE WHEN (sla_due_at IS NULL AND found_at <=");
    overdue_cut(&mut qb, sla, now);
    qb.push(") OR sla_due_at <= ")
        .push_bind(now)
        .push(" THEN 1 END) AS overdue FROM discrepancies WHERE status <> 'CLOSED'");
    if let Some(p) = provider {
        qb.push(" AND provider = ").push_bind(p.to_owned());
    }
    qb.push(" GROUP BY class ORDER BY class");
    let (sql, args) = finish(&mut qb, db.kind);
    sqlx::query_as_with(&sql, args).fetch_all(&db.pool).await
}

/// The change of the day [start, end) (microseconds), for `provider` or
/// all: tickets found in it, open at its end though found before it, and
/// closed in it (the caller names the day). "Open at its end" is open
/// now, or closed since its end: each a small range (the open tickets'
/// index, `closed_at`), never a walk of every ticket found before the day.
pub async fn day_change(
    db: &Db,
    provider: Option<&str>,
    (start, end): (i64, i64),
) -> sqlx::Result<DayChange> {
    let p = if provider.is_some() {
        " AND provider = $3"
    } else {
        ""
    };
    let sql = format!(
        "SELECT \
           (SELECT COUNT(*) FROM discrepancies WHERE found_at >= $1 AND found_at < $2{p}) AS \"new\", \
           (SELECT COUNT(*) FROM discrepancies WHERE status <> 'CLOSED' AND found_at < $1{p}) \
           + (SELECT COUNT(*) FROM discrepancies WHERE closed_at >= $2 AND found_at < $1{p}) AS persisting, \
           (SELECT COUNT(*) FROM discrepancies WHERE closed_at >= $1 AND closed_at < $2{p}) AS resolved"
    );
    let mut q = sqlx::query_as::<_, DayChange>(&sql).bind(start).bind(end);
    if let Some(p) = provider {
        q = q.bind(p.to_owned());
    }
    q.fetch_one(&db.pool).await
}
