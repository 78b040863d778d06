//! The `recon_runs` and `recon_rows` tables: a reconciliation run from its
//! start to its end (COMPLETED, or FAILED with why — a pull keeping the
//! cursor it resumes from), its progress and figures; and the statement
//! rows kept behind it (every row of a pull, staged page by page; the rows
//! behind the tickets of a file's run).

use super::pipeline::{self, WriteOp};
use super::{Db, DbKind, ROWS_PER_STATEMENT};
use futures_util::Stream;
use sqlx::{Any, AnyPool, Executor, QueryBuilder};

/// A run. Serialized as the CLI prints it; the API answers with its own
/// type.
#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct RunRow {
    pub run_id: String,
    pub provider: String,
    pub business_date: String,
    pub source: String,
    pub file_name: Option<String>,
    pub file_hash: Option<String>,
    /// What the run read: the bill format, with the layout the file was
    /// (`wechatpay trade bill (REFUND)`), or the API a pull paged through.
    pub bill_type: Option<String>,
    pub status: String,
    pub rows_read: i64,
    pub summary_json: Option<String>,
    pub figures_json: Option<String>,
    pub error: Option<String>,
    pub started_by: String,
    pub started_at: i64,
    pub finished_at: Option<i64>,
    /// The version of the money-deciding settings the run used (None:
    /// a run from before versions).
    pub config_version: Option<i64>,
    /// Said of a run answered for a file sent again: the file was already
    /// reconciled for that day by this run, and nothing was read again.
    #[sqlx(skip)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

const RUN_COLUMNS: &str = "run_id, provider, business_date, source, file_hash, bill_type, status, rows_read, \
     figures_json, started_by, started_at, finished_at, config_version";

/// The most of a run's error that is kept (bytes): an error is written
/// cut to this, whatever built it.
pub const MAX_ERROR: usize = 2048;
/// The most of a statement file's name that is kept (bytes).
pub const MAX_FILE_NAME: usize = 255;

/// The columns a run's text that came from outside may have made large,
/// as every read of runs takes them: cut (an error, a file's name) or
/// left out (a summary past any a run writes now), so a run written
/// before these were bounded does not make every page that lists it large.
pub const BOUNDED_COLUMNS: &str = "\
    CASE WHEN LENGTH(error) > 2000 THEN SUBSTR(error, 1, 2000) || '…' ELSE error END AS error, \
    CASE WHEN LENGTH(file_name) > 255 THEN SUBSTR(file_name, 1, 250) || '…' ELSE file_name END AS file_name, \
    CASE WHEN LENGTH(summary_json) > 262144 THEN NULL ELSE summary_json END AS summary_json";

/// `text` as a run keeps it: at most `max` bytes.
fn bounded(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    crate::domain::clip(text, max)
}

pub async fn get<'e>(
    e: impl Executor<'e, Database = Any>,
    run_id: &str,
) -> sqlx::Result<Option<RunRow>> {
    sqlx::query_as(&format!(
        "SELECT {RUN_COLUMNS}, {BOUNDED_COLUMNS} FROM recon_runs WHERE run_id = $1"
    ))
    .bind(run_id)
    .fetch_optional(e)
    .await
}

/// The latest completed run of the statement file `hash` for that
/// provider and day.
pub async fn completed_of_file<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    date: &str,
    hash: &str,
) -> sqlx::Result<Option<RunRow>> {
    sqlx::query_as(&format!(
        "SELECT {RUN_COLUMNS}, {BOUNDED_COLUMNS} FROM recon_runs WHERE provider = $1 AND business_date = $2 AND file_hash = $3 \
         AND status = 'COMPLETED' ORDER BY started_at DESC LIMIT 1"
    ))
    .bind(provider)
    .bind(date)
    .bind(hash)
    .fetch_optional(e)
    .await
}

/// The completed runs of the business days `from..=to`, by day, provider
/// and start.
pub async fn completed_between<'e>(
    e: impl Executor<'e, Database = Any>,
    from: &str,
    to: &str,
) -> sqlx::Result<Vec<RunRow>> {
    sqlx::query_as(&format!(
        "SELECT {RUN_COLUMNS}, {BOUNDED_COLUMNS} FROM recon_runs WHERE status = 'COMPLETED' AND business_date >= $1 AND business_date <= $2 \
         ORDER BY business_date, provider, started_at"
    ))
    .bind(from)
    .bind(to)
    .fetch_all(e)
    .await
}

/// A provider's latest completed run: of its latest business day, the
/// last started.
pub async fn latest_completed<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
) -> sqlx::Result<Option<RunRow>> {
    sqlx::query_as(&format!(
        "SELECT {RUN_COLUMNS}, {BOUNDED_COLUMNS} FROM recon_runs WHERE status = 'COMPLETED' AND provider = $1 \
         ORDER BY business_date DESC, started_at DESC LIMIT 1"
    ))
    .bind(provider)
    .fetch_optional(e)
    .await
}

/// The latest pull of a provider's day: its run, status, and when it last
/// moved.
pub async fn latest_pull<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    date: &str,
) -> sqlx::Result<Option<(String, String, Option<i64>)>> {
    sqlx::query_as(
        "SELECT run_id, status, COALESCE(finished_at, updated_at, started_at) FROM recon_runs \
         WHERE provider = $1 AND business_date = $2 AND source = 'pull' ORDER BY started_at DESC LIMIT 1",
    )
    .bind(provider)
    .bind(date)
    .fetch_optional(e)
    .await
}

pub struct NewRun<'a> {
    pub run_id: &'a str,
    pub provider: &'a str,
    pub business_date: &'a str,
    /// upload | import | pull
    pub source: &'a str,
    pub file_name: Option<&'a str>,
    pub started_by: &'a str,
    pub now: i64,
    /// The version of the settings in force as it starts.
    pub config_version: Option<i64>,
}

/// A run starts RUNNING, reading.
pub async fn start<'e>(e: impl Executor<'e, Database = Any>, r: &NewRun<'_>) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO recon_runs (run_id, provider, business_date, source, file_name, status, \
           rows_read, started_by, started_at, phase, updated_at, config_version) \
         VALUES ($1, $2, $3, $4, $5, 'RUNNING', 0, $6, $7, 'reading', $7, $8)",
    )
    .bind(r.run_id)
    .bind(r.provider)
    .bind(r.business_date)
    .bind(r.source)
    .bind(
        r.file_name
            .map(|name| bounded(name, MAX_FILE_NAME).into_owned()),
    )
    .bind(r.started_by)
    .bind(r.now)
    .bind(r.config_version)
    .execute(e)
    .await?;
    Ok(())
}

/// Rows read so far, for whoever watches the run.
pub async fn progress<'e>(
    e: impl Executor<'e, Database = Any>,
    run_id: &str,
    rows_read: i64,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE recon_runs SET rows_read = $1, updated_at = $2 WHERE run_id = $3")
        .bind(rows_read)
        .bind(now)
        .bind(run_id)
        .execute(e)
        .await?;
    Ok(())
}

/// A file read to its end: how many rows, the file's hash, and which bill
/// it was.
pub async fn read_through<'e>(
    e: impl Executor<'e, Database = Any>,
    run_id: &str,
    rows_read: i64,
    file_hash: &str,
    bill_type: Option<&str>,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE recon_runs SET rows_read = $1, file_hash = $2, bill_type = $3, updated_at = $4 WHERE run_id = $5",
    )
    .bind(rows_read)
    .bind(file_hash)
    .bind(bill_type)
    .bind(now)
    .bind(run_id)
    .execute(e)
    .await?;
    Ok(())
}

/// A pull's file, named once it is fetched.
pub async fn name_file<'e>(
    e: impl Executor<'e, Database = Any>,
    run_id: &str,
    file_name: &str,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE recon_runs SET file_name = $1 WHERE run_id = $2")
        .bind(bounded(file_name, MAX_FILE_NAME).into_owned())
        .bind(run_id)
        .execute(e)
        .await?;
    Ok(())
}

/// What a run reads: a page-by-page pull's, named when it starts; a
/// file's refused part-way, once its format told it.
pub async fn set_bill_type<'e>(
    e: impl Executor<'e, Database = Any>,
    run_id: &str,
    bill_type: &str,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE recon_runs SET bill_type = $1 WHERE run_id = $2")
        .bind(bill_type)
        .bind(run_id)
        .execute(e)
        .await?;
    Ok(())
}

/// A run that turned out to repeat an earlier one leaves nothing behind.
pub async fn discard<'e>(e: impl Executor<'e, Database = Any>, run_id: &str) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM recon_runs WHERE run_id = $1")
        .bind(run_id)
        .execute(e)
        .await?;
    Ok(())
}

/// What the statement's own summary says, and the lines skipped (JSON).
pub async fn set_summary<'e>(
    e: impl Executor<'e, Database = Any>,
    run_id: &str,
    summary_json: &str,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE recon_runs SET summary_json = $1 WHERE run_id = $2")
        .bind(summary_json)
        .bind(run_id)
        .execute(e)
        .await?;
    Ok(())
}

/// The statement is read and agrees with itself: the run classifies.
pub async fn matching<'e>(
    e: impl Executor<'e, Database = Any>,
    run_id: &str,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE recon_runs SET phase = 'matching', updated_at = $1 WHERE run_id = $2")
        .bind(now)
        .bind(run_id)
        .execute(e)
        .await?;
    Ok(())
}

pub async fn complete<'e>(
    e: impl Executor<'e, Database = Any>,
    run_id: &str,
    figures_json: &str,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE recon_runs SET status = 'COMPLETED', figures_json = $1, error = NULL, finished_at = $2, \
           phase = 'done', updated_at = $2 WHERE run_id = $3",
    )
    .bind(figures_json)
    .bind(now)
    .bind(run_id)
    .execute(e)
    .await?;
    Ok(())
}

/// `fail`, only for a run still RUNNING: a storage error part-way says
/// why on the run, and never turns a run that completed into a failure.
pub async fn fail_if_running<'e>(
    e: impl Executor<'e, Database = Any>,
    run_id: &str,
    error: &str,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE recon_runs SET status = 'FAILED', error = $1, finished_at = $2, phase = 'done', updated_at = $2 \
         WHERE run_id = $3 AND status = 'RUNNING'",
    )
    .bind(bounded(error, MAX_ERROR).into_owned())
    .bind(now)
    .bind(run_id)
    .execute(e)
    .await?;
    Ok(())
}

pub async fn fail<'e>(
    e: impl Executor<'e, Database = Any>,
    run_id: &str,
    error: &str,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE recon_runs SET status = 'FAILED', error = $1, finished_at = $2, phase = 'done', updated_at = $2 \
         WHERE run_id = $3",
    )
    .bind(bounded(error, MAX_ERROR).into_owned())
    .bind(now)
    .bind(run_id)
    .execute(e)
    .await?;
    Ok(())
}

/// A pull RUNNING again, reading: one that FAILED, or one RUNNING that
/// made no progress since `stale_before` (its process stopped). False when
/// the run is neither.
pub async fn resume<'e>(
    e: impl Executor<'e, Database = Any>,
    run_id: &str,
    now: i64,
    stale_before: i64,
) -> sqlx::Result<bool> {
    let moved = sqlx::query(
        "UPDATE recon_runs SET status = 'RUNNING', error = NULL, finished_at = NULL, updated_at = $2, phase = 'reading' \
         WHERE run_id = $1 AND (status = 'FAILED' \
           OR (status = 'RUNNING' AND COALESCE(updated_at, started_at) < $3))",
    )
    .bind(run_id)
    .bind(now)
    .bind(stale_before)
    .execute(e)
    .await?;
    Ok(moved.rows_affected() == 1)
}

/// Where a pull stands: provider, business day, the cursor it goes on
/// from, rows staged so far.
pub async fn pull_state<'e>(
    e: impl Executor<'e, Database = Any>,
    run_id: &str,
) -> sqlx::Result<(String, String, Option<String>, i64)> {
    sqlx::query_as(
        "SELECT provider, business_date, cursor, rows_read FROM recon_runs WHERE run_id = $1",
    )
    .bind(run_id)
    .fetch_one(e)
    .await
}

/// The figures of a run (`None`: no such run), as read before
/// [`swap_figures`].
pub async fn figures<'e>(
    e: impl Executor<'e, Database = Any>,
    run_id: &str,
) -> sqlx::Result<Option<Option<String>>> {
    sqlx::query_scalar("SELECT figures_json FROM recon_runs WHERE run_id = $1")
        .bind(run_id)
        .fetch_optional(e)
        .await
}

/// Replaces a run's figures if they are still `read`: false when another
/// writer changed them meanwhile (read them again).
pub async fn swap_figures<'e>(
    e: impl Executor<'e, Database = Any>,
    run_id: &str,
    read: &str,
    figures_json: &str,
) -> sqlx::Result<bool> {
    let moved = sqlx::query(
        "UPDATE recon_runs SET figures_json = $1 WHERE run_id = $2 AND figures_json = $3",
    )
    .bind(figures_json)
    .bind(run_id)
    .bind(read)
    .execute(e)
    .await?;
    Ok(moved.rows_affected() == 1)
}

/// A statement row kept behind a run, borrowed from where it was read.
#[derive(Clone, Copy, Debug)]
pub struct StagedRow<'a> {
    pub line_no: i64,
    /// payment | refund
    pub kind: &'a str,
    pub provider_txn_id: Option<&'a str>,
    pub payment_no: Option<&'a str>,
    pub refund_no: Option<&'a str>,
    pub provider_refund_id: Option<&'a str>,
    pub amount_minor: i64,
    pub currency: &'a str,
    pub status: &'a str,
    pub occurred_at: Option<i64>,
    /// The provider's fee, in `currency`'s minor units.
    pub fee_minor: Option<i64>,
}

/// The multi-row INSERT of `rows` into `recon_rows`, with owned values (so
/// it can wait in a write pipeline). At most [`ROWS_PER_STATEMENT`] rows.
fn insert_rows(run_id: &str, rows: &[StagedRow<'_>]) -> QueryBuilder<'static, Any> {
    let own = |s: Option<&str>| s.map(str::to_owned);
    let mut q = QueryBuilder::new(
        "INSERT INTO recon_rows (run_id, line_no, kind, provider_txn_id, payment_no, refund_no, \
           provider_refund_id, amount_minor, currency, status, occurred_at, fee_minor) ",
    );
    q.push_values(rows, |mut b, r| {
        b.push_bind(run_id.to_owned())
            .push_bind(r.line_no)
            .push_bind(r.kind.to_owned())
            .push_bind(own(r.provider_txn_id))
            .push_bind(own(r.payment_no))
            .push_bind(own(r.refund_no))
            .push_bind(own(r.provider_refund_id))
            .push_bind(r.amount_minor)
            .push_bind(r.currency.to_owned())
            .push_bind(r.status.to_owned())
            .push_bind(r.occurred_at)
            .push_bind(r.fee_minor);
    });
    q
}

/// [`insert_rows`] as a step of a write pipeline.
pub fn keep_rows(kind: DbKind, run_id: &str, rows: &[StagedRow<'_>]) -> WriteOp {
    pipeline::built(kind, insert_rows(run_id, rows))
}

/// One page of a pull, in one transaction: its rows, and the cursor after
/// it with the rows staged so far — an interruption loses nothing and
/// repeats nothing.
pub async fn stage_page(
    db: &Db,
    run_id: &str,
    rows: &[StagedRow<'_>],
    next_cursor: Option<&str>,
    rows_read: i64,
    now: i64,
) -> sqlx::Result<()> {
    let mut tx = db.begin_write().await?;
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        super::execute_built(&mut *tx, db.kind, insert_rows(run_id, chunk)).await?;
    }
    sqlx::query(
        "UPDATE recon_runs SET cursor = $1, rows_read = $2, updated_at = $4 WHERE run_id = $3",
    )
    .bind(next_cursor)
    .bind(rows_read)
    .bind(run_id)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}

/// How many rows a run staged, and their amounts' sum.
pub async fn staged_totals<'e>(
    e: impl Executor<'e, Database = Any>,
    run_id: &str,
) -> sqlx::Result<(i64, i64)> {
    sqlx::query_as(
        "SELECT COUNT(*), CAST(COALESCE(SUM(amount_minor), 0) AS BIGINT) FROM recon_rows WHERE run_id = $1",
    )
    .bind(run_id)
    .fetch_one(e)
    .await
}

/// The currencies of a run's staged rows, at most two (one is the
/// currency of the statement's totals; two say there is none).
pub async fn staged_currencies<'e>(
    e: impl Executor<'e, Database = Any>,
    run_id: &str,
) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(
        "SELECT DISTINCT currency FROM recon_rows WHERE run_id = $1 ORDER BY currency LIMIT 2",
    )
    .bind(run_id)
    .fetch_all(e)
    .await
}

/// A staged row as read back.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Staged {
    pub line_no: i64,
    pub kind: String,
    pub provider_txn_id: Option<String>,
    pub payment_no: Option<String>,
    pub refund_no: Option<String>,
    pub provider_refund_id: Option<String>,
    pub amount_minor: i64,
    pub currency: String,
    pub status: String,
    pub occurred_at: Option<i64>,
    pub fee_minor: Option<i64>,
}

/// A run's staged rows, in line order, streamed.
pub fn staged_rows<'a>(
    pool: &'a AnyPool,
    run_id: &'a str,
) -> impl Stream<Item = sqlx::Result<Staged>> + Send + 'a {
    sqlx::query_as(
        "SELECT line_no, kind, provider_txn_id, payment_no, refund_no, provider_refund_id, amount_minor, \
           currency, status, occurred_at, fee_minor FROM recon_rows WHERE run_id = $1 ORDER BY line_no",
    )
    .bind(run_id)
    .fetch(pool)
}

/// Whether `provider`'s business day `date` has a completed run.
pub async fn has_completed<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    date: &str,
) -> sqlx::Result<bool> {
    let n: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM recon_runs WHERE provider = $1 AND business_date = $2 AND status = 'COMPLETED'",
    )
    .bind(provider)
    .bind(date)
    .fetch_one(e)
    .await?;
    Ok(n > 0)
}

/// Up to `limit` of a run's kept rows after line `after`, in line order: a
/// keyset chunk, so a long read holds no connection between chunks.
pub async fn rows_after<'e>(
    e: impl Executor<'e, Database = Any>,
    run_id: &str,
    after: i64,
    limit: i64,
) -> sqlx::Result<Vec<Staged>> {
    sqlx::query_as(
        "SELECT line_no, kind, provider_txn_id, payment_no, refund_no, provider_refund_id, amount_minor, \
           currency, status, occurred_at, fee_minor FROM recon_rows WHERE run_id = $1 AND line_no > $2 \
           ORDER BY line_no LIMIT $3",
    )
    .bind(run_id)
    .bind(after)
    .bind(limit)
    .fetch_all(e)
    .await
}
