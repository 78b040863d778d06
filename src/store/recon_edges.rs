//! The `recon_edges` table: payments and refunds finished within the cut
//! window of their business day's start or end, as the runs of that day
//! and of its neighbours found them — IN_TRANSIT, ARRIVED (a neighbour's
//! statement carried it) or MISSING. Only reconciliation writes it; every
//! read is of a few rows (one day's edges), never a day's payments.

use super::DbKind;
use sqlx::{Any, AnyConnection, Executor, QueryBuilder};

pub const IN_TRANSIT: &str = "IN_TRANSIT";
pub const ARRIVED: &str = "ARRIVED";
pub const MISSING: &str = "MISSING";

/// One row of `recon_edges`.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct EdgeRow {
    pub kind: String,
    pub number: String,
    pub local_date: String,
    pub expected_date: String,
    pub state: String,
    pub arrived_date: Option<String>,
    pub arrived_run: Option<String>,
}

const COLUMNS: &str = "kind, number, local_date, expected_date, state, arrived_date, arrived_run";

/// The edge rows of `provider`'s own records of business day `date`.
pub async fn of_day<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    date: &str,
) -> sqlx::Result<Vec<EdgeRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM recon_edges WHERE provider = $1 AND local_date = $2"
    ))
    .bind(provider)
    .bind(date)
    .fetch_all(e)
    .await
}

/// The neighbours' records the statement of `date` is expected to carry:
/// those in transit to it, and those it carried before (a later statement
/// of the day without them takes that back).
pub async fn expected_in<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    date: &str,
) -> sqlx::Result<Vec<EdgeRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM recon_edges WHERE provider = $1 AND expected_date = $2 \
           AND local_date <> $2 AND (state = '{IN_TRANSIT}' OR (state = '{ARRIVED}' AND arrived_date = $2))"
    ))
    .bind(provider)
    .bind(date)
    .fetch_all(e)
    .await
}

/// Every record of `provider` in transit now (the partial index
/// `recon_edges_in_transit` holds only these).
pub async fn in_transit<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
) -> sqlx::Result<Vec<EdgeRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM recon_edges WHERE provider = $1 AND state = '{IN_TRANSIT}' \
         ORDER BY expected_date"
    ))
    .bind(provider)
    .fetch_all(e)
    .await
}

/// How many of `provider`'s records of `date` are in transit now.
pub async fn count_in_transit<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    date: &str,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(&format!(
        "SELECT COUNT(*) FROM recon_edges WHERE provider = $1 AND local_date = $2 AND state = '{IN_TRANSIT}'"
    ))
    .bind(provider)
    .bind(date)
    .fetch_one(e)
    .await
}

/// How many of `provider`'s records of `date` a neighbouring day's
/// statement carried (ARRIVED), whenever it did.
pub async fn count_arrived<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    date: &str,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(&format!(
        "SELECT COUNT(*) FROM recon_edges WHERE provider = $1 AND local_date = $2 AND state = '{ARRIVED}'"
    ))
    .bind(provider)
    .bind(date)
    .fetch_one(e)
    .await
}

/// A record's state as a run decides it.
pub struct Mark<'a> {
    pub kind: &'a str,
    pub number: &'a str,
    pub local_date: &'a str,
    pub expected_date: &'a str,
}

/// Rows per multi-row upsert (6 values each).
const MARKS_PER_STATEMENT: usize = 256;

/// Records marked `state` by run `run_id`, a multi-row upsert per 256:
/// IN_TRANSIT leaves one a neighbour's statement already carried as it is
/// (that run may have come first); ARRIVED — carried by the statement of
/// its `expected_date` — and MISSING replace whatever was there.
pub async fn mark(
    conn: &mut AnyConnection,
    kind: DbKind,
    provider: &str,
    state: &'static str,
    marks: &[Mark<'_>],
    run_id: &str,
    now: i64,
) -> sqlx::Result<()> {
    let unless = if state == IN_TRANSIT {
        format!(" WHERE recon_edges.state <> '{ARRIVED}'")
    } else {
        String::new()
    };
    for chunk in marks.chunks(MARKS_PER_STATEMENT) {
        let mut q = QueryBuilder::new(
            "INSERT INTO recon_edges (provider, kind, number, local_date, expected_date, state, arrived_date, \
               arrived_run, run_id, updated_at) ",
        );
        q.push_values(chunk, |mut b, m| {
            let arrived = state == ARRIVED;
            b.push_bind(provider.to_owned())
                .push_bind(m.kind.to_owned())
                .push_bind(m.number.to_owned())
                .push_bind(m.local_date.to_owned())
                .push_bind(m.expected_date.to_owned())
                .push_bind(state.to_owned())
                .push_bind(arrived.then(|| m.expected_date.to_owned()))
                .push_bind(arrived.then(|| run_id.to_owned()))
                .push_bind(run_id.to_owned())
                .push_bind(now);
        });
        q.push(format!(
            " ON CONFLICT (provider, kind, number) DO UPDATE SET local_date = excluded.local_date, \
               expected_date = excluded.expected_date, state = excluded.state, \
               arrived_date = excluded.arrived_date, arrived_run = excluded.arrived_run, \
               run_id = excluded.run_id, updated_at = excluded.updated_at{unless}"
        ));
        super::execute_built(&mut *conn, kind, q).await?;
    }
    Ok(())
}

/// A record its own day's statement now carries (or that is no longer
/// finished): no longer at the edge. An arrival elsewhere is kept.
pub async fn forget(
    conn: &mut AnyConnection,
    provider: &str,
    kind: &str,
    number: &str,
) -> sqlx::Result<()> {
    sqlx::query(&format!(
        "DELETE FROM recon_edges WHERE provider = $1 AND kind = $2 AND number = $3 AND state <> '{ARRIVED}'"
    ))
    .bind(provider)
    .bind(kind)
    .bind(number)
    .execute(&mut *conn)
    .await?;
    Ok(())
}
