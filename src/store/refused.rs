//! The `refused_callbacks` table: webhooks refused before storing, kept
//! with the reason and an excerpt, pruned to a number of rows per provider.

use super::Db;
use super::lists::{After, finish};
use app::refused::RefusedSummary;
use sqlx::{Any, Executor, QueryBuilder};

/// Bytes of a refused body kept.
pub const EXCERPT: usize = 4096;

pub struct Refused<'a> {
    pub provider: &'a str,
    pub kind: &'a str,
    pub reason: &'a str,
    pub headers_json: &'a str,
    pub body: &'a [u8],
    /// The body's full length (it may not have been read whole).
    pub body_len: i64,
    pub body_hash: &'a str,
    pub payment_no: Option<&'a str>,
    pub trace_id: &'a str,
    pub now: i64,
    /// The peer address the server saw.
    pub source_addr: Option<&'a str>,
    /// (kind, sentence), when the failure tells its likely cause.
    pub diagnosis: Option<(&'a str, &'a str)>,
}

pub async fn insert<'e>(e: impl Executor<'e, Database = Any>, r: &Refused<'_>) -> sqlx::Result<()> {
    let reason: String = r.reason.chars().take(500).collect();
    sqlx::query(
        "INSERT INTO refused_callbacks (id, provider, kind, reason, headers_json, body_excerpt, body_len, body_hash, payment_no, trace_id, received_at, \
           source_addr, diagnosis, diagnosis_detail) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
    )
    .bind(uuid::Uuid::now_v7().to_string())
    .bind(r.provider)
    .bind(r.kind)
    .bind(reason)
    .bind(r.headers_json)
    .bind(&r.body[..r.body.len().min(EXCERPT)])
    .bind(r.body_len)
    .bind(r.body_hash)
    .bind(r.payment_no)
    .bind(r.trace_id)
    .bind(r.now)
    .bind(r.source_addr)
    .bind(r.diagnosis.map(|d| d.0))
    .bind(r.diagnosis.map(|d| d.1))
    .execute(e)
    .await?;
    Ok(())
}

/// Keeps the newest `keep` rows of a provider.
pub async fn prune<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    keep: i64,
) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "DELETE FROM refused_callbacks WHERE provider = $1 AND id NOT IN \
         (SELECT id FROM refused_callbacks WHERE provider = $1 ORDER BY received_at DESC, id DESC LIMIT $2)",
    )
    .bind(provider)
    .bind(keep)
    .execute(e)
    .await?;
    Ok(done.rows_affected())
}

/// The columns of a refused webhook in a list (a [`RefusedSummary`]).
const LISTED: &str = "id, provider, kind, reason, body_len, payment_no, trace_id, \
     received_at, source_addr, diagnosis, diagnosis_detail";

/// A refused webhook with its headers and the body's first bytes.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Detail {
    #[sqlx(flatten)]
    pub listed: RefusedSummary,
    pub body_hash: String,
    pub headers_json: String,
    pub body_excerpt: Vec<u8>,
}

/// What the list filters by (each exact); received in [start, end).
#[derive(Debug, Default)]
pub struct Query<'a> {
    pub provider: Option<&'a str>,
    pub kind: Option<&'a str>,
    pub diagnosis: Option<&'a str>,
    pub received: Option<(i64, i64)>,
    pub after: Option<After>,
}

/// Newest first, `limit` rows after the cursor.
pub async fn list(db: &Db, q: &Query<'_>, limit: i64) -> sqlx::Result<Vec<RefusedSummary>> {
    let mut qb = QueryBuilder::<'static, Any>::new(format!(
        "SELECT {LISTED} FROM refused_callbacks WHERE 1 = 1"
    ));
    for (column, value) in [
        ("provider", q.provider),
        ("kind", q.kind),
        ("diagnosis", q.diagnosis),
    ] {
        if let Some(v) = value {
            qb.push(format!(" AND {column} = ")).push_bind(v.to_owned());
        }
    }
    if let Some((start, end)) = q.received {
        qb.push(" AND received_at >= ")
            .push_bind(start)
            .push(" AND received_at < ")
            .push_bind(end);
    }
    // A row value, so the (received_at, id) index seeks to the cursor.
    if let Some(a) = &q.after {
        qb.push(" AND (received_at, id) < (")
            .push_bind(a.at)
            .push(", ")
            .push_bind(a.key.clone())
            .push(")");
    }
    qb.push(format!(" ORDER BY received_at DESC, id DESC LIMIT {limit}"));
    let (sql, args) = finish(&mut qb, db.kind);
    sqlx::query_as_with(&sql, args).fetch_all(&db.pool).await
}

pub async fn detail<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
) -> sqlx::Result<Option<Detail>> {
    sqlx::query_as(&format!(
        "SELECT {LISTED}, body_hash, headers_json, body_excerpt FROM refused_callbacks WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(e)
    .await
}

/// Rows kept since `since`, per hour (`received_at` floored to the hour,
/// microseconds) and kind or diagnosis: (hour, kind, diagnosis, count).
pub async fn hourly<'e>(
    e: impl Executor<'e, Database = Any>,
    since: i64,
) -> sqlx::Result<Vec<(i64, String, Option<String>, i64)>> {
    sqlx::query_as(
        "SELECT received_at - received_at % 3600000000 AS hour, kind, diagnosis, COUNT(*) \
         FROM refused_callbacks WHERE received_at >= $1 \
         GROUP BY received_at - received_at % 3600000000, kind, diagnosis ORDER BY 1 DESC, 2, 3",
    )
    .bind(since)
    .fetch_all(e)
    .await
}

/// Rows kept since `since`, all providers.
pub async fn count_since<'e>(
    e: impl Executor<'e, Database = Any>,
    since: i64,
) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COUNT(*) FROM refused_callbacks WHERE received_at >= $1")
        .bind(since)
        .fetch_one(e)
        .await
}

/// The width of a tally bucket (microseconds).
pub const BUCKET_US: i64 = 10_000_000;

/// Counts `add` verification failures of `provider` at `now` and answers
/// how many there were in the `window_us` before it (to a bucket's width).
pub async fn tally(
    conn: &mut sqlx::AnyConnection,
    provider: &str,
    add: i64,
    now: i64,
    window_us: i64,
) -> sqlx::Result<i64> {
    sqlx::query(
        "INSERT INTO refused_tally (provider, bucket, failures) VALUES ($1, $2, $3) \
         ON CONFLICT (provider, bucket) DO UPDATE SET failures = refused_tally.failures + $3",
    )
    .bind(provider)
    .bind(now.div_euclid(BUCKET_US))
    .bind(add)
    .execute(&mut *conn)
    .await?;
    let since = (now - window_us).div_euclid(BUCKET_US);
    let n: Option<i64> = sqlx::query_scalar(
        "SELECT CAST(SUM(failures) AS BIGINT) FROM refused_tally WHERE provider = $1 AND bucket > $2",
    )
    .bind(provider)
    .bind(since)
    .fetch_one(&mut *conn)
    .await?;
    Ok(n.unwrap_or(0))
}

/// Tally buckets older than `before` deleted.
pub async fn prune_tally<'e>(
    e: impl Executor<'e, Database = Any>,
    before: i64,
) -> sqlx::Result<u64> {
    let done = sqlx::query("DELETE FROM refused_tally WHERE bucket < $1")
        .bind(before.div_euclid(BUCKET_US))
        .execute(e)
        .await?;
    Ok(done.rows_affected())
}

/// `provider` is over the threshold at `now`: the start of its spell — the
/// current one when it was last over within `window_us`, else a new one.
pub async fn spell<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    now: i64,
    window_us: i64,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "INSERT INTO refused_spells (provider, spell_start, last_over) VALUES ($1, $2, $2) \
         ON CONFLICT (provider) DO UPDATE SET \
           spell_start = CASE WHEN refused_spells.last_over < $2 - $3 THEN $2 \
                              ELSE refused_spells.spell_start END, \
           last_over = $2 \
         RETURNING spell_start",
    )
    .bind(provider)
    .bind(now)
    .bind(window_us)
    .fetch_one(e)
    .await
}
