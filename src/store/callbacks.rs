//! The `payment_callbacks` table: every verified notification, raw, kept
//! before anything acts on it.

use crate::store::batch::{Arg, Cell, Statements};
use app::console::{CallbackReplay, CallbackSummary};
use sqlx::{Any, Executor};

pub struct NewCallback<'a> {
    pub id: &'a str,
    pub callback_id: &'a str,
    pub provider: &'a str,
    pub payment_no: Option<&'a str>,
    pub provider_txn_id: Option<&'a str>,
    pub callback_status: &'a str,
    pub headers_json: &'a str,
    pub payload: &'a [u8],
    pub payload_hash: &'a str,
    pub verify_result: &'a str,
    pub trace_id: &'a str,
    pub received_at: i64,
    /// The notification's business facts (`Notification::facts`).
    pub facts: &'a str,
}

/// Inserts unless (provider, callback_id) is already stored. True if stored now.
pub async fn insert_if_absent<'e>(
    e: impl Executor<'e, Database = Any>,
    c: &NewCallback<'_>,
) -> sqlx::Result<bool> {
    insert_refund_callback(e, c, None).await
}

/// A refund notification: stored like a payment callback (same dedup key),
/// naming the refund it reports (a payment callback names none). True if
/// stored now.
pub async fn insert_refund_callback<'e>(
    e: impl Executor<'e, Database = Any>,
    c: &NewCallback<'_>,
    refund_no: Option<&str>,
) -> sqlx::Result<bool> {
    let insert = sqlx::query(
        "INSERT INTO payment_callbacks (id, callback_id, provider, payment_no, provider_txn_id, callback_status, \
           headers_json, payload, payload_hash, verify_result, trace_id, received_at, facts, processing_status, retry_count, refund_no) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 'PROCESSING', 0, $14) \
         ON CONFLICT (provider, callback_id) DO NOTHING",
    );
    let insert = new_values(c).into_iter().fold(insert, |q, v| v.bind(q));
    let done = insert.bind(refund_no).execute(e).await?;
    Ok(done.rows_affected() == 1)
}

/// The thirteen values of a new callback, in column order (id …
/// received_at, facts).
fn new_values<'a>(c: &NewCallback<'a>) -> [Arg<'a>; 13] {
    [
        c.id.into(),
        c.callback_id.into(),
        c.provider.into(),
        c.payment_no.into(),
        c.provider_txn_id.into(),
        c.callback_status.into(),
        c.headers_json.into(),
        c.payload.into(),
        c.payload_hash.into(),
        c.verify_result.into(),
        c.trace_id.into(),
        c.received_at.into(),
        c.facts.into(),
    ]
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct CallbackRow {
    pub id: String,
    pub callback_id: String,
    pub provider: String,
    pub payment_no: Option<String>,
    pub headers_json: String,
    pub payload: Vec<u8>,
    pub payload_hash: String,
    pub processing_status: String,
    pub outcome: Option<String>,
    pub retry_count: i64,
    pub trace_id: String,
    pub error_message: Option<String>,
    pub facts: Option<String>,
}

const COLUMNS: &str = "id, callback_id, provider, payment_no, headers_json, payload, payload_hash, \
     processing_status, outcome, retry_count, trace_id, error_message, facts";

pub async fn by_callback_id<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    callback_id: &str,
) -> sqlx::Result<Option<CallbackRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM payment_callbacks WHERE provider = $1 AND callback_id = $2"
    ))
    .bind(provider)
    .bind(callback_id)
    .fetch_optional(e)
    .await
}

pub async fn succeeded<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
    outcome: &str,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE payment_callbacks SET processing_status = 'SUCCESS', outcome = $1, processed_at = $2, \
           lease_until = NULL, next_retry_at = NULL, error_message = NULL WHERE id = $3",
    )
    .bind(outcome)
    .bind(now)
    .bind(id)
    .execute(e)
    .await?;
    Ok(())
}

/// One more failed try: FAILED with the next retry time, or DEAD.
pub async fn failed<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
    error: &str,
    next_retry_at: Option<i64>,
    now: i64,
) -> sqlx::Result<()> {
    let status = if next_retry_at.is_some() {
        "FAILED"
    } else {
        "DEAD"
    };
    sqlx::query(
        "UPDATE payment_callbacks SET processing_status = $1, retry_count = retry_count + 1, \
           next_retry_at = $2, error_message = $3, processed_at = $4, lease_until = NULL, \
           outcome = $6 WHERE id = $5",
    )
    .bind(status)
    .bind(next_retry_at)
    .bind(error)
    .bind(now)
    .bind(id)
    // What the try found: an unknown payment is an outcome (its
    // redeliveries are answered alike); a failed apply has none.
    .bind((error == UNKNOWN_PAYMENT).then_some("unknown_payment"))
    .execute(e)
    .await?;
    Ok(())
}

/// What processing a callback found when it names no payment Reckon has.
pub const UNKNOWN_PAYMENT: &str = "unknown payment";

/// A redelivery of the stored callback `row_id`: its bytes kept once per
/// distinct payload (a provider's new envelope), with whether its facts
/// were the stored ones; counted as a duplicate when they were.
pub async fn redelivered(
    conn: &mut sqlx::AnyConnection,
    row_id: &str,
    payload: &[u8],
    payload_hash: &str,
    same_facts: bool,
    trace_id: &str,
    now: i64,
) -> sqlx::Result<()> {
    if same_facts {
        sqlx::query("UPDATE payment_callbacks SET duplicates = duplicates + 1 WHERE id = $1")
            .bind(row_id)
            .execute(&mut *conn)
            .await?;
    }
    sqlx::query(
        "INSERT INTO callback_redeliveries (callback_row_id, payload_hash, payload, same_facts, trace_id, received_at) \
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (callback_row_id, payload_hash) \
         DO UPDATE SET deliveries = callback_redeliveries.deliveries + 1",
    )
    .bind(row_id)
    .bind(payload_hash)
    .bind(payload)
    .bind(i32::from(same_facts))
    .bind(trace_id)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// One distinct body a stored callback was redelivered with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redelivery {
    /// When this body first came again.
    pub received_at: i64,
    pub payload_hash: String,
    pub same_facts: bool,
    /// How many times it came.
    pub deliveries: i64,
}

/// A stored callback's redeliveries, one per distinct body, oldest first
/// (the callback's own bytes included, when they came again).
pub async fn redeliveries<'e>(
    e: impl Executor<'e, Database = Any>,
    row_id: &str,
) -> sqlx::Result<Vec<Redelivery>> {
    let rows: Vec<(i64, String, i32, i64)> = sqlx::query_as(
        "SELECT received_at, payload_hash, same_facts, CAST(deliveries AS BIGINT) FROM callback_redeliveries \
         WHERE callback_row_id = $1 ORDER BY received_at, payload_hash",
    )
    .bind(row_id)
    .fetch_all(e)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(received_at, payload_hash, same, deliveries)| Redelivery {
            received_at,
            payload_hash,
            same_facts: same != 0,
            deliveries,
        })
        .collect())
}

/// Keeps the callback's processing as it stands (status, outcome, error,
/// time) as its original, unless an earlier replay kept it already.
pub async fn keep_original<'e>(e: impl Executor<'e, Database = Any>, id: &str) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE payment_callbacks SET original_status = processing_status, original_outcome = outcome, \
           original_error = error_message, original_processed_at = processed_at \
         WHERE id = $1 AND original_status IS NULL",
    )
    .bind(id)
    .execute(e)
    .await?;
    Ok(())
}

/// The error the callback's processing last met, if any.
pub async fn error_of<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
) -> sqlx::Result<Option<String>> {
    let found: Option<Option<String>> =
        sqlx::query_scalar("SELECT error_message FROM payment_callbacks WHERE id = $1")
            .bind(id)
            .fetch_optional(e)
            .await?;
    Ok(found.flatten())
}

/// One replay of a stored callback, as it went.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Replay {
    pub at: i64,
    pub actor: String,
    pub class: String,
    pub detail: String,
    pub error: Option<String>,
    pub job: Option<String>,
}

/// Records one replay's own result beside the callback's original outcome.
pub async fn record_replay<'e>(
    e: impl Executor<'e, Database = Any>,
    callback_row: &str,
    r: &Replay,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO callback_replays (id, callback_row_id, at, actor, class, detail, error, job) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(uuid::Uuid::now_v7().to_string())
    .bind(callback_row)
    .bind(r.at)
    .bind(&r.actor)
    .bind(&r.class)
    .bind(&r.detail)
    .bind(&r.error)
    .bind(&r.job)
    .execute(e)
    .await?;
    Ok(())
}

/// A stored callback's replays, oldest first.
pub async fn replays<'e>(
    e: impl Executor<'e, Database = Any>,
    callback_row: &str,
) -> sqlx::Result<Vec<CallbackReplay>> {
    sqlx::query_as(
        "SELECT at, actor, class, detail, error, job FROM callback_replays \
         WHERE callback_row_id = $1 ORDER BY at, id",
    )
    .bind(callback_row)
    .fetch_all(e)
    .await
}

/// Leases callbacks due for another try: FAILED ones whose time has come,
/// and ones left RECEIVED or PROCESSING by a stopped process (lease expired,
/// or received more than `stale_before` ago without a lease).
pub async fn lease_due<'e>(
    e: impl Executor<'e, Database = Any>,
    now: i64,
    stale_before: i64,
    lease_until: i64,
    limit: i64,
    skip_locked: &str,
) -> sqlx::Result<Vec<CallbackRow>> {
    let sql = format!(
        "UPDATE payment_callbacks SET processing_status = 'PROCESSING', lease_until = $1 \
         WHERE id IN (SELECT id FROM payment_callbacks \
             WHERE (processing_status = 'FAILED' AND next_retry_at <= $2) \
                OR (processing_status = 'PROCESSING' AND lease_until <= $2) \
                OR (processing_status = 'RECEIVED' AND received_at <= $3) \
             ORDER BY received_at LIMIT $4{skip_locked}) \
         RETURNING {COLUMNS}"
    );
    sqlx::query_as(&sql)
        .bind(lease_until)
        .bind(now)
        .bind(stale_before)
        .bind(limit)
        .fetch_all(e)
        .await
}

/// True when [`lease_due`] would find something: a read, so the retry
/// lane with nothing to do never waits for SQLite's write lock.
pub async fn any_due<'e>(
    e: impl Executor<'e, Database = Any>,
    now: i64,
    stale_before: i64,
) -> sqlx::Result<bool> {
    let found: Option<i64> = sqlx::query_scalar(
        "SELECT 1 FROM payment_callbacks \
         WHERE (processing_status = 'FAILED' AND next_retry_at <= $1) \
            OR (processing_status = 'PROCESSING' AND lease_until <= $1) \
            OR (processing_status = 'RECEIVED' AND received_at <= $2) \
         LIMIT 1",
    )
    .bind(now)
    .bind(stale_before)
    .fetch_optional(e)
    .await?;
    Ok(found.is_some())
}

pub async fn retry_count<'e>(e: impl Executor<'e, Database = Any>, id: &str) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT retry_count FROM payment_callbacks WHERE id = $1")
        .bind(id)
        .fetch_one(e)
        .await
}

/// Many callbacks, already in their final state — processed, outcome
/// `applied` — for the group commit, which applies them in the same
/// transaction (any that did not simply move is taken back, [`take_back`];
/// if applying fails, the insert rolls back with it). Returns the ids
/// actually inserted: the others were already stored under their
/// (provider, callback_id).
pub async fn insert_many_applied(
    conn: &mut impl Statements,
    rows: &[NewCallback<'_>],
) -> sqlx::Result<Vec<String>> {
    let mut ids = Vec::with_capacity(rows.len());
    for chunk in crate::store::cached_chunks(rows, crate::store::ROWS_PER_STATEMENT) {
        let sql = format!(
            "INSERT INTO payment_callbacks (id, callback_id, provider, payment_no, provider_txn_id, callback_status, \
               headers_json, payload, payload_hash, verify_result, trace_id, received_at, facts, processed_at, \
               processing_status, outcome, retry_count) \
             VALUES {} ON CONFLICT (provider, callback_id) DO NOTHING",
            crate::store::Marks::for_kind(conn.kind()).rows(
                chunk.len(),
                14,
                ", 'SUCCESS', 'applied', 0"
            )
        );
        let mut args: Vec<Arg> = Vec::with_capacity(chunk.len() * 14);
        for c in chunk {
            args.extend(new_values(c));
            // processed_at
            args.push(c.received_at.into());
        }
        let inserted = conn.execute(&sql, &args).await? as usize;
        if inserted == chunk.len() {
            ids.extend(chunk.iter().map(|c| c.id.to_owned()));
            continue;
        }
        // Some were stored before: which of ours are there now? (Rare: a
        // provider's resend that arrived in the same batch as its twin was
        // already left to the one-by-one path.)
        let sql = format!(
            "SELECT id FROM payment_callbacks WHERE id IN ({})",
            crate::store::Marks::for_kind(conn.kind()).list(chunk.len())
        );
        let args: Vec<Arg> = chunk.iter().map(|c| c.id.into()).collect();
        for row in conn.fetch(&sql, &args).await? {
            ids.extend(row.into_iter().next().map(Cell::text).transpose()?);
        }
    }
    Ok(ids)
}

/// Takes back callbacks stored in this transaction by
/// [`insert_many_applied`] that did not apply as stored there, for the
/// one-by-one path to store and classify.
pub async fn take_back(conn: &mut impl Statements, ids: &[&str]) -> sqlx::Result<()> {
    for chunk in crate::store::cached_chunks(ids, crate::store::ROWS_PER_STATEMENT) {
        let sql = format!(
            "DELETE FROM payment_callbacks WHERE id IN ({})",
            crate::store::Marks::for_kind(conn.kind()).list(chunk.len())
        );
        let args: Vec<Arg> = chunk.iter().map(|&id| id.into()).collect();
        conn.execute(&sql, &args).await?;
    }
    Ok(())
}

// ---- Triage and the console -----------------------------------------
// A stored callback as a replay and the console's pages read it.

/// provider, payment_no, verify_result, headers_json, payload, trace_id
pub type StoredCallback = (String, Option<String>, String, String, Vec<u8>, String);

/// What a replay needs of a stored callback.
pub async fn stored<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
) -> sqlx::Result<Option<StoredCallback>> {
    sqlx::query_as(
        "SELECT provider, payment_no, verify_result, headers_json, payload, trace_id \
             FROM payment_callbacks WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(e)
    .await
}

/// How the callback's processing went (`outcome`), as last recorded.
pub async fn outcome_of<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT outcome FROM payment_callbacks WHERE id = $1")
        .bind(id)
        .fetch_one(e)
        .await
}

/// The callback row `id` if it is about payment `payment_no`.
pub async fn of_payment_by_id<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
    payment_no: Option<&str>,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT id FROM payment_callbacks WHERE id = $1 AND payment_no = $2")
        .bind(id)
        .bind(payment_no)
        .fetch_optional(e)
        .await
}

/// DEAD callbacks of `provider` received in [from, to).
pub async fn dead_count<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    (from, to): (i64, i64),
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM payment_callbacks WHERE provider = $1 AND processing_status = 'DEAD' \
           AND received_at >= $2 AND received_at < $3",
    )
    .bind(provider)
    .bind(from)
    .bind(to)
    .fetch_one(e)
    .await
}

/// The DEAD callbacks of `provider` received in [from, to), in order.
pub async fn dead_ids<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    (from, to): (i64, i64),
) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(
        "SELECT id FROM payment_callbacks WHERE provider = $1 AND processing_status = 'DEAD' \
           AND received_at >= $2 AND received_at < $3 ORDER BY received_at, id",
    )
    .bind(provider)
    .bind(from)
    .bind(to)
    .fetch_all(e)
    .await
}

/// The columns of a callback in a list (a [`CallbackSummary`]).
pub const LISTED_COLUMNS: &str = "id, callback_id, provider, payment_no, provider_txn_id, callback_status, verify_result, \
     processing_status, outcome, retry_count, duplicates, trace_id, received_at";

/// A callback with all it stored.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Detail {
    #[sqlx(flatten)]
    pub listed: CallbackSummary,
    pub headers_json: String,
    pub payload: Vec<u8>,
    pub payload_hash: String,
    pub error_message: Option<String>,
    pub next_retry_at: Option<i64>,
    pub processed_at: Option<i64>,
    pub refund_no: Option<String>,
    pub facts: Option<String>,
    /// Its processing before its first replay (none until replayed).
    pub original_status: Option<String>,
    pub original_outcome: Option<String>,
    pub original_error: Option<String>,
    pub original_processed_at: Option<i64>,
}

pub async fn detail<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
) -> sqlx::Result<Option<Detail>> {
    sqlx::query_as(&format!(
        "SELECT {LISTED_COLUMNS}, headers_json, payload, payload_hash, error_message, next_retry_at, \
           processed_at, refund_no, facts, original_status, original_outcome, original_error, \
           original_processed_at FROM payment_callbacks WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(e)
    .await
}

/// A payment's callback with the error its processing met.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct OfPayment {
    #[sqlx(flatten)]
    pub listed: CallbackSummary,
    pub error_message: Option<String>,
}

/// The first 200 callbacks about a payment, in the order they came.
pub async fn of_payment<'e>(
    e: impl Executor<'e, Database = Any>,
    payment_no: &str,
) -> sqlx::Result<Vec<OfPayment>> {
    sqlx::query_as(&format!(
        "SELECT {LISTED_COLUMNS}, error_message FROM payment_callbacks WHERE payment_no = $1 \
         ORDER BY received_at LIMIT 200"
    ))
    .bind(payment_no)
    .fetch_all(e)
    .await
}

/// A day's callbacks: received, duplicates, failed, DEAD, processed.
#[derive(Clone, Debug, Default, sqlx::FromRow)]
pub struct Figures {
    pub received: i64,
    pub duplicates: i64,
    pub failed: i64,
    pub dead: i64,
    pub processed: i64,
}

/// `received_at` in [start, end), and of `provider` if one is named.
fn received_in(
    qb: &mut sqlx::QueryBuilder<'static, Any>,
    (start, end): (i64, i64),
    provider: Option<&str>,
) {
    qb.push(" WHERE received_at >= ")
        .push_bind(start)
        .push(" AND received_at < ")
        .push_bind(end);
    if let Some(p) = provider {
        qb.push(" AND provider = ").push_bind(p.to_owned());
    }
}

pub async fn figures(
    db: &super::Db,
    range: (i64, i64),
    provider: Option<&str>,
) -> sqlx::Result<Figures> {
    let mut qb = sqlx::QueryBuilder::new(
        "SELECT COUNT(*) AS received, \
           CAST(COALESCE(SUM(duplicates), 0) + COALESCE(SUM(CASE WHEN outcome = 'duplicate' THEN 1 ELSE 0 END), 0) AS BIGINT) AS duplicates, \
           CAST(COALESCE(SUM(CASE WHEN processing_status = 'FAILED' THEN 1 ELSE 0 END), 0) AS BIGINT) AS failed, \
           CAST(COALESCE(SUM(CASE WHEN processing_status = 'DEAD' THEN 1 ELSE 0 END), 0) AS BIGINT) AS dead, \
           CAST(COALESCE(SUM(CASE WHEN processed_at IS NOT NULL THEN 1 ELSE 0 END), 0) AS BIGINT) AS processed \
         FROM payment_callbacks",
    );
    received_in(&mut qb, range, provider);
    let (sql, args) = super::lists::finish(&mut qb, db.kind);
    sqlx::query_as_with(&sql, args).fetch_one(&db.pool).await
}

/// The `offset`-th shortest time from receipt to processed (microseconds)
/// among the processed callbacks of [start, end) (and `provider`).
pub async fn processing_time_at(
    db: &super::Db,
    range: (i64, i64),
    provider: Option<&str>,
    offset: i64,
) -> sqlx::Result<Option<i64>> {
    let mut qb =
        sqlx::QueryBuilder::new("SELECT processed_at - received_at FROM payment_callbacks");
    received_in(&mut qb, range, provider);
    qb.push(format!(
        " AND processed_at IS NOT NULL ORDER BY processed_at - received_at LIMIT 1 OFFSET {offset}"
    ));
    let (sql, args) = super::lists::finish(&mut qb, db.kind);
    sqlx::query_scalar_with(&sql, args)
        .fetch_optional(&db.pool)
        .await
}
// ---- end of triage and the console ----------------------------------
