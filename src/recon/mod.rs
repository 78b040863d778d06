//! Reconciliation, the third witness: a provider's statement for one
//! business day is read (streamed into `recon_rows`, checked against its own
//! summary), then every statement row and every local payment and refund of
//! that day is put in exactly one class of DESIGN.md's table. Classes other
//! than MATCHED become tickets (`discrepancies`), one per cause, updated —
//! never duplicated or reopened — by a re-run. STATUS_LAG is repaired by
//! itself (a stored verified callback replayed, or a status query, through
//! `engine::apply`); nothing automatic changes an amount or a currency.

pub mod statement;

use crate::domain::{PaymentNo, PaymentStatus, ProviderTxnId};
use crate::engine::{Applied, Engine, Outcome, Source};
use crate::providers::Notification;
use crate::providers::Provider;
use crate::store::incidents;
use futures_util::{StreamExt, TryStreamExt};
use serde_json::json;
use sha2::{Digest, Sha256};
use sqlx::Row;
use statement::{Format, Item, StatementRow};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Statement rows staged per commit (with the run's progress).
const STAGE_BATCH: usize = 20_000;
/// Findings held before their tickets are written, while classifying.
const ROW_BATCH: usize = 5_000;
/// STATUS_LAG repairs: payments tried at once (each its own `apply`; a
/// provider's status query may wait on the network), and tickets updated
/// per commit.
const REPAIRS_AT_ONCE: usize = 8;
const REPAIRS_PER_COMMIT: usize = 256;
/// Tickets per multi-row upsert (24 values each).
const TICKETS_PER_STATEMENT: usize = 128;
/// A RUNNING run without progress for this long was left by a stopped
/// process (microseconds): an hour.
const STALE_US: i64 = 3600 * 1_000_000;
/// A statement row found by payment_no must be this close to the payment's
/// creation (microseconds): three days.
const MATCH_WINDOW_US: i64 = 3 * 24 * 3600 * 1_000_000;

#[derive(Debug, thiserror::Error)]
pub enum ReconError {
    #[error("{0}")]
    Invalid(String),
    /// The statement was read and refused; the run is FAILED with this.
    #[error("statement refused: {0}")]
    Refused(String),
    #[error("storage error: {0}")]
    Store(#[from] sqlx::Error),
}

/// Where a statement comes from.
pub enum Input {
    Bytes(Vec<u8>),
    File(std::path::PathBuf),
}

impl Input {
    fn open(&self) -> std::io::Result<Box<dyn std::io::BufRead + Send>> {
        Ok(match self {
            Input::Bytes(b) => Box::new(std::io::Cursor::new(b.clone())),
            Input::File(p) => Box::new(std::io::BufReader::new(std::fs::File::open(p)?)),
        })
    }

    pub fn hash(&self) -> std::io::Result<String> {
        let mut h = Sha256::new();
        let mut r = self.open()?;
        loop {
            let buf = r.fill_buf()?;
            if buf.is_empty() {
                break;
            }
            h.update(buf);
            let n = buf.len();
            r.consume(n);
        }
        Ok(hex::encode(h.finalize()))
    }
}

pub struct Import<'a> {
    pub provider: &'a str,
    /// YYYY-MM-DD, a business day in the configured time zone.
    pub business_date: &'a str,
    /// upload | import | pull
    pub source: &'a str,
    pub file_name: Option<&'a str>,
    pub input: Input,
    pub started_by: &'a str,
    /// Malformed lines the operator accepts to skip (0: none — one bad
    /// line refuses the statement).
    pub accept_bad_lines: u32,
    /// The new run's id when the caller chose it (the console names the
    /// run it is about to show before the import starts).
    pub run_id: Option<String>,
}

/// A finished (or refused) run, as the API and CLI report it.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, sqlx::FromRow)]
pub struct RunRow {
    pub run_id: String,
    pub provider: String,
    pub business_date: String,
    pub source: String,
    pub file_name: Option<String>,
    pub file_hash: Option<String>,
    pub status: String,
    pub rows_read: i64,
    pub summary_json: Option<String>,
    pub figures_json: Option<String>,
    pub error: Option<String>,
    pub started_by: String,
    pub started_at: i64,
    pub finished_at: Option<i64>,
}

const RUN_COLUMNS: &str = "run_id, provider, business_date, source, file_name, file_hash, status, rows_read, \
     summary_json, figures_json, error, started_by, started_at, finished_at";

/// A new run's id.
pub fn new_run_id() -> String {
    format!("RUN{}", uuid::Uuid::now_v7().simple()).to_ascii_uppercase()
}

/// The business day `date` in `tz` as [start, end) microseconds UTC.
pub fn day_range(date: &str, tz: &jiff::tz::TimeZone) -> Result<(i64, i64), String> {
    let d: jiff::civil::Date = date
        .parse()
        .map_err(|_| format!("business date {date:?} is not YYYY-MM-DD"))?;
    let start = d
        .to_zoned(tz.clone())
        .map_err(|e| e.to_string())?
        .timestamp()
        .as_microsecond();
    let next = d.tomorrow().map_err(|e| e.to_string())?;
    let end = next
        .to_zoned(tz.clone())
        .map_err(|e| e.to_string())?
        .timestamp()
        .as_microsecond();
    Ok((start, end))
}

/// Statement rows of a run, in the caller's transaction.
async fn insert_rows_in(
    conn: &mut sqlx::AnyConnection,
    run_id: &str,
    chunk: &[StatementRow],
) -> sqlx::Result<()> {
    if chunk.is_empty() {
        return Ok(());
    }
    let sql = format!(
        "INSERT INTO recon_rows (run_id, line_no, kind, provider_txn_id, payment_no, refund_no, \
           provider_refund_id, amount_minor, currency, status, occurred_at) VALUES {}",
        crate::store::Marks::for_conn(conn).rows(chunk.len(), 11, "")
    );
    let mut q = sqlx::query(&sql);
    for r in chunk {
        q = q
            .bind(run_id)
            .bind(r.line_no)
            .bind(r.kind.as_str())
            .bind(r.provider_txn_id.as_deref())
            .bind(r.payment_no.as_deref())
            .bind(r.refund_no.as_deref())
            .bind(r.provider_refund_id.as_deref())
            .bind(r.money.minor)
            .bind(r.money.currency.code())
            .bind(r.status.as_str())
            .bind(r.occurred_at);
    }
    q.execute(&mut *conn).await?;
    Ok(())
}

/// A verified callback kept for a payment, as a repair replays it.
struct StoredCallback {
    id: String,
    headers_json: String,
    payload: Vec<u8>,
    trace_id: String,
}

/// A ticket found by a run.
struct Found {
    class: &'static str,
    severity: &'static str,
    key: String,
    payment_no: Option<String>,
    order_no: Option<String>,
    txn: Option<String>,
    line_no: Option<i64>,
    local: Option<(i64, String, String)>,
    provider_side: Option<(i64, String, String)>,
    reason: String,
    /// Payments to hold until a person decides.
    hold: Vec<String>,
}

/// Counts by class and the day's figures.
#[derive(Default, serde::Serialize)]
struct Figures {
    statement_rows: i64,
    local_without_row: i64,
    classes: BTreeMap<&'static str, i64>,
    matched: i64,
    pending: i64,
    repaired: i64,
    unknown: i64,
}

fn paid(status: &str) -> bool {
    matches!(status, "SUCCEEDED" | "REFUNDING" | "REFUNDED")
}

impl Engine {
    pub async fn run(&self, run_id: &str) -> sqlx::Result<Option<RunRow>> {
        sqlx::query_as(&format!(
            "SELECT {RUN_COLUMNS} FROM recon_runs WHERE run_id = $1"
        ))
        .bind(run_id)
        .fetch_optional(&self.db.pool)
        .await
    }

    /// The completed run of the same statement file (by hash) for that
    /// provider and day, if there is one.
    pub async fn earlier_run(
        &self,
        provider: &str,
        date: &str,
        hash: &str,
    ) -> sqlx::Result<Option<RunRow>> {
        sqlx::query_as(&format!(
            "SELECT {RUN_COLUMNS} FROM recon_runs WHERE provider = $1 AND business_date = $2 AND file_hash = $3 \
             AND status = 'COMPLETED' ORDER BY started_at DESC LIMIT 1"
        ))
        .bind(provider)
        .bind(date)
        .bind(hash)
        .fetch_optional(&self.db.pool)
        .await
    }

    /// Reads a statement into a run and reconciles the day. A statement
    /// already reconciled for that day (same file hash) is recognised and
    /// its run returned unchanged.
    pub async fn import_statement(&self, imp: Import<'_>) -> Result<RunRow, ReconError> {
        let provider = self.providers.get(imp.provider).cloned().ok_or_else(|| {
            ReconError::Invalid(format!("provider {} is not configured", imp.provider))
        })?;
        let format = provider.statement_format().ok_or_else(|| {
            ReconError::Invalid(format!(
                "provider {} has no statement format Reckon reads",
                imp.provider
            ))
        })?;
        day_range(imp.business_date, &self.settings.timezone).map_err(ReconError::Invalid)?;
        let hash = imp
            .input
            .hash()
            .map_err(|e| ReconError::Invalid(format!("cannot read the statement: {e}")))?;
        let pool = &self.db.pool;
        let earlier = self
            .earlier_run(imp.provider, imp.business_date, &hash)
            .await?;
        if let Some(run) = earlier {
            return Ok(run);
        }
        let run_id = imp.run_id.clone().unwrap_or_else(new_run_id);
        let now = self.now();
        sqlx::query(
            "INSERT INTO recon_runs (run_id, provider, business_date, source, file_name, file_hash, status, \
               rows_read, started_by, started_at, phase, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, 'RUNNING', 0, $7, $8, 'reading', $8)",
        )
        .bind(&run_id)
        .bind(imp.provider)
        .bind(imp.business_date)
        .bind(imp.source)
        .bind(imp.file_name)
        .bind(&hash)
        .bind(imp.started_by)
        .bind(now)
        .execute(pool)
        .await?;
        let read_started = std::time::Instant::now();
        let read = self
            .read_rows(&run_id, format, &imp.input, imp.accept_bad_lines)
            .await;
        tracing::debug!(
            run_id,
            millis = read_started.elapsed().as_millis() as u64,
            "statement staged"
        );
        let (checks, skipped) = match read {
            Ok((rows, checks, skipped)) => {
                sqlx::query("UPDATE recon_runs SET rows_read = $1 WHERE run_id = $2")
                    .bind(rows)
                    .bind(&run_id)
                    .execute(pool)
                    .await?;
                (checks, skipped)
            }
            Err(e) => {
                let error = e.to_string();
                self.fail_run(&run_id, &error).await?;
                return Err(ReconError::Refused(error));
            }
        };
        self.finish_run(
            &run_id,
            imp.provider,
            imp.business_date,
            imp.file_name,
            &checks,
            &skipped,
        )
        .await
    }

    /// The statement is all read: its own figures must agree, then the day
    /// is reconciled and the run completed.
    async fn finish_run(
        &self,
        run_id: &str,
        provider: &str,
        date: &str,
        file: Option<&str>,
        checks: &[statement::Check],
        skipped: &[statement::ParseError],
    ) -> Result<RunRow, ReconError> {
        let pool = &self.db.pool;
        let off: Vec<String> = checks
            .iter()
            .filter(|c| c.stated != c.read && c.waived.is_none())
            .map(|c| {
                format!(
                    "{}: the statement says {}, {} read",
                    c.what, c.stated, c.read
                )
            })
            .collect();
        let skipped: Vec<serde_json::Value> = skipped
            .iter()
            .map(|e| json!({ "line": e.line, "reason": e.reason }))
            .collect();
        let summary = json!({ "checks": checks, "skipped": skipped });
        sqlx::query("UPDATE recon_runs SET summary_json = $1 WHERE run_id = $2")
            .bind(summary.to_string())
            .bind(run_id)
            .execute(pool)
            .await?;
        if !off.is_empty() {
            let error = format!("incomplete statement — {}", off.join("; "));
            self.fail_run(run_id, &error).await?;
            return Err(ReconError::Refused(error));
        }
        sqlx::query("UPDATE recon_runs SET phase = 'matching', updated_at = $1 WHERE run_id = $2")
            .bind(self.now())
            .bind(run_id)
            .execute(pool)
            .await?;
        let figures = self.reconcile(run_id, provider, date, file).await?;
        sqlx::query(
            "UPDATE recon_runs SET status = 'COMPLETED', figures_json = $1, error = NULL, finished_at = $2, \
               phase = 'done', updated_at = $2 WHERE run_id = $3",
        )
        .bind(serde_json::to_string(&figures).unwrap_or_default())
        .bind(self.now())
        .bind(run_id)
        .execute(pool)
        .await?;
        Ok(self.run(run_id).await?.expect("the run was just written"))
    }

    /// Pulls the day's statement page by page through the provider's API.
    /// Each page's rows and the cursor after it are written in one
    /// transaction, so an interruption loses nothing and repeats nothing:
    /// the run FAILS with the cursor kept, and [`Engine::resume_run`] goes
    /// on from there.
    pub async fn pull_statement(
        &self,
        provider: &str,
        date: &str,
        started_by: &str,
    ) -> Result<RunRow, ReconError> {
        let p = self
            .providers
            .get(provider)
            .ok_or_else(|| ReconError::Invalid(format!("provider {provider} is not configured")))?;
        if !p.pulls_statements() {
            return Err(ReconError::Invalid(format!(
                "provider {provider} has no statement API; upload or import its file"
            )));
        }
        day_range(date, &self.settings.timezone).map_err(ReconError::Invalid)?;
        let run_id = format!("RUN{}", uuid::Uuid::now_v7().simple()).to_ascii_uppercase();
        sqlx::query(
            "INSERT INTO recon_runs (run_id, provider, business_date, source, status, rows_read, started_by, started_at, \
               phase, updated_at) VALUES ($1, $2, $3, 'pull', 'RUNNING', 0, $4, $5, 'reading', $5)",
        )
        .bind(&run_id)
        .bind(provider)
        .bind(date)
        .bind(started_by)
        .bind(self.now())
        .execute(&self.db.pool)
        .await?;
        self.continue_pull(&run_id).await
    }

    /// Goes on with a pull that failed, from its saved cursor.
    pub async fn resume_run(&self, run_id: &str) -> Result<RunRow, ReconError> {
        let run = self
            .run(run_id)
            .await?
            .ok_or_else(|| ReconError::Invalid(format!("no run {run_id}")))?;
        if run.source != "pull" || !matches!(run.status.as_str(), "FAILED" | "RUNNING") {
            return Err(ReconError::Invalid(format!(
                "run {run_id} is a {} run, {}: only a failed pull resumes",
                run.source, run.status
            )));
        }
        // FAILED, or RUNNING without progress for an hour (its process
        // stopped mid-pull).
        let now = self.now();
        let moved = sqlx::query(
            "UPDATE recon_runs SET status = 'RUNNING', error = NULL, finished_at = NULL, updated_at = $2, phase = 'reading' \
             WHERE run_id = $1 AND (status = 'FAILED' \
               OR (status = 'RUNNING' AND COALESCE(updated_at, started_at) < $3))",
        )
        .bind(run_id)
        .bind(now)
        .bind(now - STALE_US)
        .execute(&self.db.pool)
        .await?;
        if moved.rows_affected() != 1 {
            return Err(ReconError::Invalid(format!(
                "run {run_id} is running (it made progress within the hour)"
            )));
        }
        self.continue_pull(run_id).await
    }

    async fn continue_pull(&self, run_id: &str) -> Result<RunRow, ReconError> {
        let pool = &self.db.pool;
        let (provider, date, mut cursor, mut rows_read): (String, String, Option<String>, i64) =
            sqlx::query_as("SELECT provider, business_date, cursor, rows_read FROM recon_runs WHERE run_id = $1")
                .bind(run_id)
                .fetch_one(pool)
                .await?;
        let Some(p) = self.providers.get(&provider).cloned() else {
            return Err(ReconError::Invalid(format!(
                "provider {provider} is not configured"
            )));
        };
        let mut pages = 0;
        let summary = loop {
            let page = match p.statement_page(&date, cursor.as_deref()).await {
                Ok(page) => page,
                Err(e) => {
                    let error = format!(
                        "run {run_id}: pull interrupted after {rows_read} rows ({pages} pages this time): {e}; resume continues from the saved cursor"
                    );
                    self.fail_run(run_id, &error).await?;
                    return Err(ReconError::Refused(error));
                }
            };
            pages += 1;
            let mut rows = page.rows;
            for (i, r) in rows.iter_mut().enumerate() {
                r.line_no = rows_read + i as i64 + 1;
            }
            let mut tx = self.db.begin_write().await?;
            for chunk in rows.chunks(crate::store::ROWS_PER_STATEMENT) {
                insert_rows_in(&mut tx, run_id, chunk).await?;
            }
            rows_read += rows.len() as i64;
            sqlx::query(
                "UPDATE recon_runs SET cursor = $1, rows_read = $2, updated_at = $4 WHERE run_id = $3",
            )
                .bind(page.next_cursor.as_deref())
                .bind(rows_read)
                .bind(run_id)
                .bind(self.now())
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break page.summary.unwrap_or_default(),
            }
        };
        let (count, total): (i64, i64) = sqlx::query_as(
            "SELECT COUNT(*), CAST(COALESCE(SUM(amount_minor), 0) AS BIGINT) FROM recon_rows WHERE run_id = $1",
        )
        .bind(run_id)
        .fetch_one(pool)
        .await?;
        let checks: Vec<statement::Check> = summary
            .into_iter()
            .map(|(what, stated)| statement::Check {
                read: if what == "rows" { count } else { total },
                what,
                stated,
                waived: None,
            })
            .collect();
        if checks.is_empty() {
            let error = "the statement's last page carries no summary".to_string();
            self.fail_run(run_id, &error).await?;
            return Err(ReconError::Refused(error));
        }
        self.finish_run(run_id, &provider, &date, None, &checks, &[])
            .await
    }

    async fn fail_run(&self, run_id: &str, error: &str) -> sqlx::Result<()> {
        sqlx::query(
            "UPDATE recon_runs SET status = 'FAILED', error = $1, finished_at = $2, phase = 'done', updated_at = $2 \
             WHERE run_id = $3",
        )
            .bind(error)
            .bind(self.now())
            .bind(run_id)
            .execute(&self.db.pool)
            .await?;
        Ok(())
    }

    /// Streams the statement into `recon_rows` in batches; returns the rows
    /// read and the summary checks.
    async fn read_rows(
        &self,
        run_id: &str,
        format: Format,
        input: &Input,
        tolerance: u32,
    ) -> Result<(i64, Vec<statement::Check>, Vec<statement::ParseError>), ReconError> {
        let reader = input
            .open()
            .map_err(|e| ReconError::Invalid(format!("cannot read the statement: {e}")))?;
        let mut items = statement::read_with(format, reader, tolerance);
        let mut skipped = Vec::new();
        let mut batch: Vec<StatementRow> = Vec::with_capacity(STAGE_BATCH);
        let mut rows = 0i64;
        let mut checks = Vec::new();
        loop {
            // Parsing is synchronous; a batch at a time between writes.
            let mut ended = false;
            while batch.len() < STAGE_BATCH {
                match items.next() {
                    Some(Ok(Item::Row(r))) => batch.push(r),
                    Some(Ok(Item::Skipped(e))) => skipped.push(e),
                    Some(Ok(Item::End(c))) => {
                        checks = c;
                        ended = true;
                        break;
                    }
                    Some(Err(e)) => return Err(ReconError::Refused(e.to_string())),
                    None => {
                        ended = true;
                        break;
                    }
                }
            }
            rows += batch.len() as i64;
            self.insert_rows(run_id, &batch, rows).await?;
            batch.clear();
            if ended {
                return Ok((rows, checks, skipped));
            }
        }
    }

    /// A batch of statement rows, and the run's progress (`read` rows so
    /// far, for whoever watches it), in one commit.
    async fn insert_rows(
        &self,
        run_id: &str,
        rows: &[StatementRow],
        read: i64,
    ) -> sqlx::Result<()> {
        let mut tx = self.db.begin_write().await?;
        for chunk in rows.chunks(crate::store::ROWS_PER_STATEMENT) {
            insert_rows_in(&mut tx, run_id, chunk).await?;
        }
        sqlx::query("UPDATE recon_runs SET rows_read = $1, updated_at = $2 WHERE run_id = $3")
            .bind(read)
            .bind(self.now())
            .bind(run_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await
    }

    /// Classifies every row and every local payment and refund of the day,
    /// writes the tickets, repairs STATUS_LAG, returns the figures.
    async fn reconcile(
        &self,
        run_id: &str,
        provider: &str,
        date: &str,
        file: Option<&str>,
    ) -> Result<Figures, ReconError> {
        let (start, end) = day_range(date, &self.settings.timezone).map_err(ReconError::Invalid)?;
        let pool = &self.db.pool;
        let mut figures = Figures::default();
        let mut found: Vec<Found> = Vec::new();
        let mut lagging: Vec<(String, String)> = Vec::new();
        let phase = std::time::Instant::now();

        // Transaction ids the statement lists more than once: one pass,
        // held in memory (as many as there are duplicates, not rows).
        let duplicated: std::collections::HashMap<String, i64> = sqlx::query_as(
            "SELECT provider_txn_id, COUNT(*) FROM recon_rows WHERE run_id = $1 AND kind = 'payment' \
             AND provider_txn_id IS NOT NULL GROUP BY provider_txn_id HAVING COUNT(*) > 1",
        )
        .bind(run_id)
        .fetch_all(&mut *self.db.acquire_for_scan().await?)
        .await?
        .into_iter()
        .collect();
        tracing::debug!(
            run_id,
            millis = phase.elapsed().as_millis() as u64,
            "duplicates counted"
        );
        // Statement payment rows, each with the payment its transaction id
        // names and the one its payment_no names. Rows that plainly match
        // (found by transaction id, same amount and currency, paid on both
        // sides, listed once) are only counted here, in the database; the
        // rest come to be classified one by one. Only the transaction id's
        // payment is joined for every row; the payment the row's payment_no
        // names is looked up (by subqueries, which run only for rows that
        // pass the filter) for the rows that come out.
        const JOINS: &str = "FROM recon_rows r \
             LEFT JOIN payments t ON t.provider = $2 AND t.provider_txn_id = r.provider_txn_id";
        const PLAIN_MATCH: &str = "t.payment_no IS NOT NULL AND (r.payment_no IS NULL OR r.payment_no = t.payment_no) \
             AND t.currency = r.currency AND t.amount_minor = r.amount_minor AND r.status = 'SUCCEEDED' \
             AND t.status IN ('SUCCEEDED', 'REFUNDING', 'REFUNDED') \
             AND NOT EXISTS (SELECT 1 FROM recon_rows d WHERE d.run_id = r.run_id AND d.kind = 'payment' \
               AND d.provider_txn_id = r.provider_txn_id AND d.line_no <> r.line_no)";
        // All payment rows; those not streamed below matched plainly.
        let payment_rows: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM recon_rows WHERE run_id = $1 AND kind = 'payment'",
        )
        .bind(run_id)
        .fetch_one(&mut *self.db.acquire_for_scan().await?)
        .await?;
        tracing::debug!(
            run_id,
            millis = phase.elapsed().as_millis() as u64,
            "payment rows counted"
        );
        let mut streamed = 0i64;
        let named = |column: &str| {
            format!(
                "(SELECT n.{column} FROM payments n WHERE n.provider = $2 AND n.payment_no = r.payment_no) AS n_{column}"
            )
        };
        let sql = format!(
            "SELECT r.line_no, r.provider_txn_id, r.payment_no, r.amount_minor, r.currency, r.status, r.occurred_at, \
               t.payment_no AS t_no, t.order_no AS t_order, t.amount_minor AS t_amount, t.currency AS t_currency, \
               t.status AS t_status, \
               (SELECT n.payment_no FROM payments n WHERE n.provider = $2 AND n.payment_no = r.payment_no) AS n_no, \
               {}, {}, {}, {}, {}, {} \
             {JOINS} WHERE r.run_id = $1 AND r.kind = 'payment' AND NOT ({PLAIN_MATCH}) ORDER BY r.line_no",
            named("order_no"),
            named("amount_minor"),
            named("currency"),
            named("status"),
            named("provider_txn_id"),
            named("created_at"),
        );
        let mut reader = self.db.acquire_for_scan().await?;
        let mut stream = sqlx::query(&sql)
            .bind(run_id)
            .bind(provider)
            .fetch(&mut *reader);
        while let Some(row) = stream.try_next().await? {
            streamed += 1;
            figures.statement_rows += 1;
            let line: i64 = row.try_get("line_no")?;
            let txn: Option<String> = row.try_get("provider_txn_id")?;
            let row_no: Option<String> = row.try_get("payment_no")?;
            let amount: i64 = row.try_get("amount_minor")?;
            let currency: String = row.try_get("currency")?;
            let status: String = row.try_get("status")?;
            let occurred: Option<i64> = row.try_get("occurred_at")?;
            let copies = txn
                .as_ref()
                .and_then(|t| duplicated.get(t))
                .copied()
                .unwrap_or(1);
            let t_no: Option<String> = row.try_get("t_no")?;
            let n_no: Option<String> = row.try_get("n_no")?;
            let n_created: Option<i64> = row.try_get("n_created_at")?;
            let n_txn: Option<String> = row.try_get("n_provider_txn_id")?;
            let n_in_window = match (n_created, occurred) {
                (Some(c), Some(o)) => (o - c).abs() <= MATCH_WINDOW_US,
                (Some(_), None) => true,
                _ => false,
            };
            let side = Some((amount, currency.clone(), status.clone()));
            // The other payment a ONE_TO_MANY involves.
            let also: Option<String> = match (&t_no, &n_no) {
                (Some(t), Some(n)) if t != n => Some(n.clone()),
                _ => None,
            };
            let mut ticket = |class: &'static str,
                              severity: &'static str,
                              key: String,
                              pno: Option<String>,
                              order: Option<String>,
                              local: Option<(i64, String, String)>,
                              reason: String| {
                let hold = if class == "LOCAL_ONLY" || class == "ONE_TO_MANY" {
                    pno.iter().cloned().chain(also.clone()).collect()
                } else {
                    Vec::new()
                };
                found.push(Found {
                    class,
                    severity,
                    key,
                    payment_no: pno,
                    order_no: order,
                    txn: txn.clone(),
                    line_no: Some(line),
                    local,
                    provider_side: side.clone(),
                    hold,
                    reason,
                });
            };
            let txn_key = txn
                .clone()
                .or(row_no.clone())
                .unwrap_or_else(|| format!("line-{line}"));
            if copies > 1 {
                *figures.classes.entry("DUPLICATE").or_default() += 1;
                ticket(
                    "DUPLICATE",
                    "HIGH",
                    txn_key,
                    t_no.clone().or(n_no.clone()),
                    None,
                    None,
                    format!(
                        "transaction {} appears {copies} times in the statement",
                        txn.as_deref().unwrap_or("-")
                    ),
                );
                continue;
            }
            // Which local payment the row is about.
            let (pno, order, l_amount, l_currency, l_status) = if let Some(t) = &t_no {
                if n_no.as_ref().is_some_and(|n| n != t) {
                    *figures.classes.entry("ONE_TO_MANY").or_default() += 1;
                    ticket(
                        "ONE_TO_MANY",
                        "HIGH",
                        txn_key,
                        Some(t.clone()),
                        row.try_get("t_order")?,
                        None,
                        format!(
                            "transaction {} belongs to payment {t}, the statement names {}",
                            txn.as_deref().unwrap_or("-"),
                            n_no.as_deref().unwrap_or("-")
                        ),
                    );
                    continue;
                }
                (
                    t.clone(),
                    row.try_get::<Option<String>, _>("t_order")?,
                    row.try_get::<Option<i64>, _>("t_amount")?,
                    row.try_get::<Option<String>, _>("t_currency")?,
                    row.try_get::<Option<String>, _>("t_status")?,
                )
            } else if let Some(n) = n_no.as_ref().filter(|_| n_in_window) {
                if n_txn
                    .as_ref()
                    .is_some_and(|bound| Some(bound) != txn.as_ref())
                {
                    *figures.classes.entry("ONE_TO_MANY").or_default() += 1;
                    ticket(
                        "ONE_TO_MANY",
                        "HIGH",
                        txn_key,
                        Some(n.clone()),
                        row.try_get("n_order_no")?,
                        None,
                        format!(
                            "payment {n} is bound to transaction {}, the statement says {}",
                            n_txn.as_deref().unwrap_or("-"),
                            txn.as_deref().unwrap_or("-")
                        ),
                    );
                    continue;
                }
                (
                    n.clone(),
                    row.try_get("n_order_no")?,
                    row.try_get("n_amount_minor")?,
                    row.try_get("n_currency")?,
                    row.try_get("n_status")?,
                )
            } else {
                *figures.classes.entry("PROVIDER_ONLY").or_default() += 1;
                ticket(
                    "PROVIDER_ONLY",
                    "HIGH",
                    txn_key,
                    row_no.clone(),
                    None,
                    None,
                    "the provider reports a payment Reckon does not have".into(),
                );
                continue;
            };
            let (l_amount, l_currency, l_status) = (
                l_amount.unwrap_or_default(),
                l_currency.unwrap_or_default(),
                l_status.unwrap_or_default(),
            );
            let local = Some((l_amount, l_currency.clone(), l_status.clone()));
            let key = pno.clone();
            let (class, severity, reason) = if l_currency != currency {
                (
                    "CURRENCY_MISMATCH",
                    "HIGH",
                    format!("statement {currency}, local {l_currency}"),
                )
            } else if l_amount != amount {
                (
                    "AMOUNT_MISMATCH",
                    "HIGH",
                    format!("statement {amount}, local {l_amount} (minor units)"),
                )
            } else if status != "SUCCEEDED" {
                if paid(&l_status) {
                    (
                        "LOCAL_ONLY",
                        "CRITICAL",
                        format!("the provider says {status}, Reckon has it {l_status}"),
                    )
                } else {
                    ("MATCHED", "", String::new())
                }
            } else if paid(&l_status) {
                ("MATCHED", "", String::new())
            } else if matches!(l_status.as_str(), "CREATED" | "PENDING") {
                lagging.push((pno.clone(), txn.clone().unwrap_or_default()));
                (
                    "STATUS_LAG",
                    "MEDIUM",
                    format!("paid at the provider, {l_status} here"),
                )
            } else {
                (
                    "STATUS_LAG",
                    "HIGH",
                    format!(
                        "paid at the provider, {l_status} here: the state machine cannot follow; a person decides"
                    ),
                )
            };
            *figures.classes.entry(class).or_default() += 1;
            if class == "MATCHED" {
                figures.matched += 1;
            } else {
                ticket(class, severity, key, Some(pno), order, local, reason);
            }
            if found.len() >= ROW_BATCH {
                self.write_tickets(run_id, provider, date, file, (start, end), &found)
                    .await?;
                found.clear();
            }
        }
        drop(stream);
        let plain = payment_rows - streamed;
        figures.statement_rows += plain;
        figures.matched += plain;
        *figures.classes.entry("MATCHED").or_default() += plain;
        tracing::debug!(
            run_id,
            millis = phase.elapsed().as_millis() as u64,
            "statement rows classified"
        );
        let phase = std::time::Instant::now();
        // Local payments of the day the statement does not mention.
        let sql = "SELECT p.payment_no, p.order_no, p.amount_minor, p.currency, p.status, p.provider_txn_id FROM payments p \
             WHERE p.provider = $2 \
               AND ((p.paid_at >= $3 AND p.paid_at < $4) OR (p.paid_at IS NULL AND p.created_at >= $3 AND p.created_at < $4)) \
               AND NOT EXISTS (SELECT 1 FROM recon_rows r WHERE r.run_id = $1 AND r.kind = 'payment' AND r.provider_txn_id = p.provider_txn_id) \
               AND NOT EXISTS (SELECT 1 FROM recon_rows r WHERE r.run_id = $1 AND r.kind = 'payment' AND r.payment_no = p.payment_no) \
             ORDER BY p.payment_no";
        drop(reader);
        let mut reader = self.db.acquire_for_scan().await?;
        let mut stream = sqlx::query(sql)
            .bind(run_id)
            .bind(provider)
            .bind(start)
            .bind(end)
            .fetch(&mut *reader);
        while let Some(row) = stream.try_next().await? {
            figures.local_without_row += 1;
            let pno: String = row.try_get("payment_no")?;
            let status: String = row.try_get("status")?;
            if paid(&status) {
                *figures.classes.entry("LOCAL_ONLY").or_default() += 1;
                found.push(Found {
                    class: "LOCAL_ONLY",
                    severity: "CRITICAL",
                    key: pno.clone(),
                    payment_no: Some(pno.clone()),
                    order_no: row.try_get("order_no")?,
                    txn: row.try_get("provider_txn_id")?,
                    line_no: None,
                    local: Some((
                        row.try_get("amount_minor")?,
                        row.try_get("currency")?,
                        status.clone(),
                    )),
                    provider_side: None,
                    reason: format!("{status} here, absent from the provider's statement"),
                    hold: vec![pno.clone()],
                });
            } else {
                *figures.classes.entry("MATCHED").or_default() += 1;
                figures.matched += 1;
                if matches!(status.as_str(), "CREATED" | "PENDING") {
                    figures.pending += 1;
                }
            }
            if found.len() >= ROW_BATCH {
                self.write_tickets(run_id, provider, date, file, (start, end), &found)
                    .await?;
                found.clear();
            }
        }
        drop(stream);

        tracing::debug!(
            run_id,
            millis = phase.elapsed().as_millis() as u64,
            "local payments classified"
        );
        let phase = std::time::Instant::now();
        // Refund rows against the refund ledger, both ways.
        let sql = "SELECT r.line_no, r.refund_no, r.provider_refund_id, r.payment_no, r.provider_txn_id, r.amount_minor, r.currency, \
               f.refund_no AS f_no, f.amount_minor AS f_amount, f.currency AS f_currency, f.status AS f_status, f.payment_no AS f_payment \
             FROM recon_rows r LEFT JOIN refunds f ON f.refund_no = r.refund_no \
             WHERE r.run_id = $1 AND r.kind = 'refund' ORDER BY r.line_no";
        let mut stream = sqlx::query(sql).bind(run_id).fetch(pool);
        while let Some(row) = stream.try_next().await? {
            figures.statement_rows += 1;
            let line: i64 = row.try_get("line_no")?;
            let amount: i64 = row.try_get("amount_minor")?;
            let currency: String = row.try_get("currency")?;
            let refund_no: Option<String> = row.try_get("refund_no")?;
            let f_no: Option<String> = row.try_get("f_no")?;
            let f_amount: Option<i64> = row.try_get("f_amount")?;
            let f_currency: Option<String> = row.try_get("f_currency")?;
            let f_status: Option<String> = row.try_get("f_status")?;
            let reason = match (&f_no, f_status.as_deref()) {
                (None, _) => Some("a refund in the statement Reckon did not request".to_string()),
                _ if f_currency.as_deref() != Some(currency.as_str())
                    || f_amount != Some(amount) =>
                {
                    Some(format!(
                        "statement {amount} {currency}, ledger {} {}",
                        f_amount.unwrap_or_default(),
                        f_currency.as_deref().unwrap_or("-")
                    ))
                }
                (_, Some("SUCCEEDED")) => None,
                (_, Some(s)) => Some(format!(
                    "refunded at the provider, {s} here (its notification is missing)"
                )),
                _ => None,
            };
            match reason {
                None => {
                    *figures.classes.entry("MATCHED").or_default() += 1;
                    figures.matched += 1;
                }
                Some(reason) => {
                    *figures.classes.entry("REFUND_MISMATCH").or_default() += 1;
                    found.push(Found {
                        class: "REFUND_MISMATCH",
                        severity: "HIGH",
                        key: refund_no.clone().unwrap_or_else(|| format!("line-{line}")),
                        payment_no: row
                            .try_get::<Option<String>, _>("f_payment")?
                            .or(row.try_get("payment_no")?),
                        order_no: None,
                        txn: row.try_get("provider_txn_id")?,
                        line_no: Some(line),
                        local: f_no.as_ref().map(|_| {
                            (
                                f_amount.unwrap_or_default(),
                                f_currency.clone().unwrap_or_default(),
                                f_status.clone().unwrap_or_default(),
                            )
                        }),
                        provider_side: Some((amount, currency.clone(), "REFUNDED".into())),
                        reason,
                        hold: Vec::new(),
                    });
                }
            }
        }
        drop(stream);
        let sql = "SELECT f.refund_no, f.payment_no, f.amount_minor, f.currency, f.status FROM refunds f \
             WHERE f.provider = $2 AND f.status = 'SUCCEEDED' AND f.finished_at >= $3 AND f.finished_at < $4 \
               AND NOT EXISTS (SELECT 1 FROM recon_rows r WHERE r.run_id = $1 AND r.kind = 'refund' AND r.refund_no = f.refund_no)";
        let mut stream = sqlx::query(sql)
            .bind(run_id)
            .bind(provider)
            .bind(start)
            .bind(end)
            .fetch(pool);
        while let Some(row) = stream.try_next().await? {
            figures.local_without_row += 1;
            *figures.classes.entry("REFUND_MISMATCH").or_default() += 1;
            let no: String = row.try_get("refund_no")?;
            found.push(Found {
                class: "REFUND_MISMATCH",
                severity: "HIGH",
                key: no.clone(),
                payment_no: row.try_get("payment_no")?,
                order_no: None,
                txn: None,
                line_no: None,
                local: Some((
                    row.try_get("amount_minor")?,
                    row.try_get("currency")?,
                    row.try_get("status")?,
                )),
                provider_side: None,
                reason: format!("refund {no} succeeded here, absent from the provider's statement"),
                hold: Vec::new(),
            });
        }
        drop(stream);
        self.write_tickets(run_id, provider, date, file, (start, end), &found)
            .await?;

        tracing::debug!(
            run_id,
            millis = phase.elapsed().as_millis() as u64,
            "refunds classified, tickets written"
        );
        let phase = std::time::Instant::now();
        figures.repaired = self.repair_lagging(provider, date, &lagging).await?;
        tracing::debug!(
            run_id,
            millis = phase.elapsed().as_millis() as u64,
            "STATUS_LAG repaired"
        );
        figures.pending += lagging.len() as i64 - figures.repaired;
        figures.unknown = sqlx::query_scalar(
            "SELECT COUNT(*) FROM discrepancies WHERE provider = $1 AND business_date = $2 AND status <> 'CLOSED'",
        )
        .bind(provider)
        .bind(date)
        .fetch_one(pool)
        .await?;
        Ok(figures)
    }

    /// Opens each ticket once per cause; a re-run updates open ones and
    /// leaves closed ones closed. LOCAL_ONLY also raises a critical alert.
    #[allow(clippy::too_many_arguments)]
    async fn write_tickets(
        &self,
        run_id: &str,
        provider: &str,
        date: &str,
        file: Option<&str>,
        (start, end): (i64, i64),
        found: &[Found],
    ) -> sqlx::Result<()> {
        if found.is_empty() {
            return Ok(());
        }
        let now = self.now();
        let keyed: Vec<(String, &Found)> = found
            .iter()
            .map(|f| (format!("recon:{provider}:{date}:{}:{}", f.class, f.key), f))
            .collect();
        // One row per ticket and statement: a key found twice (a
        // transaction listed twice) keeps its last finding, as a second
        // upsert would have — PostgreSQL refuses to touch a row twice in
        // one statement.
        let last: std::collections::HashMap<&str, usize> = keyed
            .iter()
            .enumerate()
            .map(|(i, (key, _))| (key.as_str(), i))
            .collect();
        let rows: Vec<&(String, &Found)> = keyed
            .iter()
            .enumerate()
            .filter(|(i, (key, _))| last[key.as_str()] == *i)
            .map(|(_, row)| row)
            .collect();
        let mut tx = self.db.begin_write().await?;
        for chunk in rows.chunks(TICKETS_PER_STATEMENT) {
            let mut marks = crate::store::Marks::for_conn(&tx);
            let values: Vec<String> = chunk
                .iter()
                .map(|_| {
                    // Four values, 'OPEN', nine, 'recon', ten, the severity
                    // again for its rank: the columns' order below.
                    let m: Vec<String> = (0..24).map(|_| marks.mark()).collect();
                    format!(
                        "({}, 'OPEN', {}, 'recon', {}, \
                         CASE {} WHEN 'CRITICAL' THEN 4 WHEN 'HIGH' THEN 3 WHEN 'MEDIUM' THEN 2 ELSE 1 END)",
                        m[..4].join(", "),
                        m[4..13].join(", "),
                        m[13..23].join(", "),
                        m[23]
                    )
                })
                .collect();
            let sql = format!(
                "INSERT INTO discrepancies (discrepancy_id, dedupe_key, class, severity, status, provider, payment_no, \
                   provider_txn_id, local_amount_minor, local_currency, local_status, provider_amount_minor, \
                   provider_currency, provider_status, source, details, found_at, run_id, business_date, order_no, \
                   statement_file, range_start, range_end, line_no, updated_at, severity_rank) \
                 VALUES {} \
                 ON CONFLICT (dedupe_key) DO UPDATE SET run_id = excluded.run_id, \
                   local_amount_minor = excluded.local_amount_minor, local_currency = excluded.local_currency, \
                   local_status = excluded.local_status, provider_amount_minor = excluded.provider_amount_minor, \
                   provider_currency = excluded.provider_currency, provider_status = excluded.provider_status, \
                   details = excluded.details, statement_file = excluded.statement_file, line_no = excluded.line_no, \
                   updated_at = excluded.updated_at \
                 WHERE discrepancies.status <> 'CLOSED'",
                values.join(", ")
            );
            let mut q = sqlx::query(&sql);
            for (key, f) in chunk {
                q = q
                    .bind(uuid::Uuid::now_v7().to_string())
                    .bind(key.as_str())
                    .bind(f.class)
                    .bind(f.severity)
                    .bind(provider)
                    .bind(f.payment_no.as_deref())
                    .bind(f.txn.as_deref())
                    .bind(f.local.as_ref().map(|l| l.0))
                    .bind(f.local.as_ref().map(|l| l.1.as_str()))
                    .bind(f.local.as_ref().map(|l| l.2.as_str()))
                    .bind(f.provider_side.as_ref().map(|p| p.0))
                    .bind(f.provider_side.as_ref().map(|p| p.1.as_str()))
                    .bind(f.provider_side.as_ref().map(|p| p.2.as_str()))
                    .bind(json!({ "reason": f.reason }).to_string())
                    .bind(now)
                    .bind(run_id)
                    .bind(date)
                    .bind(f.order_no.as_deref())
                    .bind(file)
                    .bind(start)
                    .bind(end)
                    .bind(f.line_no)
                    .bind(now)
                    .bind(f.severity);
            }
            q.execute(&mut *tx).await?;
        }
        // What some findings do besides their ticket: holds (one statement
        // per reason and chunk) and a critical alert for each LOCAL_ONLY.
        let mut holds: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        let mut alerts: Vec<(&str, Option<&str>, String)> = Vec::new();
        for (key, f) in &keyed {
            if !f.hold.is_empty() {
                holds
                    .entry(format!("{} in {provider}'s statement of {date}", f.class))
                    .or_default()
                    .extend(f.hold.iter().map(String::as_str));
            }
            if f.class == "LOCAL_ONLY" {
                alerts.push((
                    key.as_str(),
                    f.payment_no.as_deref(),
                    format!(
                        "payment {} is {} here but absent from {provider}'s statement of {date}: hold fulfilment",
                        f.payment_no.as_deref().unwrap_or("-"),
                        f.local.as_ref().map(|l| l.2.as_str()).unwrap_or("-")
                    ),
                ));
            }
        }
        for (reason, payment_nos) in &holds {
            crate::store::payments::hold_many(&mut tx, payment_nos, reason, now).await?;
        }
        let alerts: Vec<incidents::NewAlert> = alerts
            .iter()
            .map(|(key, payment_no, message)| incidents::NewAlert {
                dedupe_key: key,
                kind: "local_only",
                severity: "critical",
                payment_no: *payment_no,
                message,
                trace_id: None,
                now,
            })
            .collect();
        incidents::raise_alerts(&mut tx, &alerts).await?;
        tx.commit().await
    }

    /// STATUS_LAG: replay the payment's stored verified callback, else ask
    /// the provider; through `apply`, recorded on the ticket, which closes
    /// when the payment is paid. Returns how many were repaired.
    async fn repair_lagging(
        &self,
        provider_name: &str,
        date: &str,
        lagging: &[(String, String)],
    ) -> sqlx::Result<i64> {
        let Some(provider) = self.providers.get(provider_name).cloned() else {
            return Ok(0);
        };
        let mut repaired = 0;
        for chunk in lagging.chunks(REPAIRS_PER_COMMIT) {
            // Each payment on its own (a replay or a question to the
            // provider, through `apply`), a few at a time...
            // What each needs, read for the whole chunk: the payment's bound
            // transaction, and its stored verified callbacks, oldest first.
            // (The provider is checked here, not in SQL: with `provider =`
            // beside the list SQLite walks the provider's whole index.)
            let mut marks = crate::store::Marks::for_kind(self.db.kind);
            let list: Vec<String> = chunk.iter().map(|_| marks.mark()).collect();
            let list = list.join(", ");
            let sql = format!(
                "SELECT payment_no, provider_txn_id, provider FROM payments WHERE payment_no IN ({list})"
            );
            let mut q = sqlx::query_as::<_, (String, Option<String>, String)>(&sql);
            for (payment_no, _) in chunk {
                q = q.bind(payment_no.as_str());
            }
            let known: std::collections::HashMap<String, Option<String>> = q
                .fetch_all(&self.db.pool)
                .await?
                .into_iter()
                .filter(|(_, _, provider)| provider == provider_name)
                .map(|(payment_no, txn, _)| (payment_no, txn))
                .collect();
            let sql = format!(
                "SELECT payment_no, id, headers_json, payload, trace_id, provider FROM payment_callbacks \
                 WHERE payment_no IN ({list}) AND verify_result = 'VERIFIED' AND refund_no IS NULL \
                 ORDER BY payment_no, received_at"
            );
            let mut q =
                sqlx::query_as::<_, (String, String, String, Vec<u8>, String, String)>(&sql);
            for (payment_no, _) in chunk {
                q = q.bind(payment_no.as_str());
            }
            let mut stored: std::collections::HashMap<String, Vec<StoredCallback>> =
                std::collections::HashMap::new();
            for (payment_no, id, headers_json, payload, trace_id, provider) in
                q.fetch_all(&self.db.pool).await?
            {
                if provider != provider_name {
                    continue;
                }
                stored.entry(payment_no).or_default().push(StoredCallback {
                    id,
                    headers_json,
                    payload,
                    trace_id,
                });
            }
            let tries: Vec<_> = chunk
                .iter()
                .filter_map(|(payment_no, _)| {
                    let txn = known.get(payment_no)?.clone();
                    let stored = stored.remove(payment_no).unwrap_or_default();
                    Some(self.repair_one(&provider, date, payment_no.clone(), txn, stored))
                })
                .collect();
            let tried: Vec<(String, Vec<serde_json::Value>, bool)> =
                futures_util::stream::iter(tries)
                    .buffered(REPAIRS_AT_ONCE)
                    .try_collect::<Vec<_>>()
                    .await?;
            // ...then what was done, on the tickets: one commit per chunk.
            let mut tx = self.db.begin_write().await?;
            for (payment_no, actions, fixed) in tried {
                let key = format!("recon:{provider_name}:{date}:STATUS_LAG:{payment_no}");
                let now = self.now();
                // What was done, on the open ticket, closing it when fixed.
                let entries = actions
                    .iter()
                    .map(|a| a.to_string())
                    .collect::<Vec<_>>()
                    .join(",");
                let actions_now = format!(
                    "CASE WHEN $4 = '' THEN actions ELSE {} END",
                    crate::triage::appended_actions("$4")
                );
                let ticket: Option<String> = sqlx::query_scalar(&format!(
                    "UPDATE discrepancies SET updated_at = $1, actions = {actions_now}, \
                       status = CASE WHEN $2 = 1 THEN 'CLOSED' ELSE status END, \
                       conclusion = CASE WHEN $2 = 1 THEN 'auto-repaired through engine::apply' ELSE conclusion END, \
                       closed_at = CASE WHEN $2 = 1 THEN $1 ELSE closed_at END \
                     WHERE dedupe_key = $3 AND status <> 'CLOSED' RETURNING discrepancy_id"
                ))
                .bind(now)
                .bind(i64::from(fixed))
                .bind(&key)
                .bind(entries)
                .fetch_optional(&mut *tx)
                .await?;
                if let (true, Some(ticket)) = (fixed, &ticket) {
                    crate::triage::supersede_pending(&mut tx, ticket, "auto-repaired").await?;
                }
                if fixed {
                    repaired += 1;
                }
            }
            tx.commit().await?;
        }
        Ok(repaired)
    }

    /// One lagging payment (bound to `txn`, if at all): its stored
    /// verified callback replayed, else the provider asked, through
    /// `apply`. What was done, and whether the payment is now paid.
    async fn repair_one(
        &self,
        provider: &Arc<dyn Provider>,
        date: &str,
        payment_no: String,
        txn: Option<String>,
        stored: Vec<StoredCallback>,
    ) -> sqlx::Result<(String, Vec<serde_json::Value>, bool)> {
        let Ok(no) = PaymentNo::parse(&payment_no) else {
            return Ok((payment_no, Vec::new(), false));
        };
        let mut actions = Vec::new();
        let mut applied = None;
        // 1. A stored verified callback that did not get through.
        for StoredCallback {
            id,
            headers_json,
            payload,
            trace_id,
        } in stored
        {
            let headers = crate::engine::headers_from_json(&headers_json);
            if let Ok(Notification::Payment(n)) = provider.parse(&headers, &payload)
                && n.status == PaymentStatus::Succeeded
            {
                let mut o = crate::engine::notice_outcome(&n, provider.name(), &id, &trace_id);
                o.source = Source::ReconRepair;
                let a = self.apply(&o).await?;
                actions.push(json!({"action": "replayed stored callback", "callback": id, "result": a.class(), "at": self.now()}));
                applied = Some(a);
                break;
            }
        }
        // 2. Else the provider, asked now.
        if applied.is_none() {
            let txn = txn.as_deref().and_then(|t| ProviderTxnId::parse(t).ok());
            match provider.query_payment(&no, txn.as_ref()).await {
                Ok(view) => {
                    let o = Outcome {
                        payment_no: no.clone(),
                        provider: provider.name().clone(),
                        provider_txn_id: view.provider_txn_id,
                        target: view.status.unwrap_or(PaymentStatus::Pending),
                        money: view.money,
                        source: Source::ReconRepair,
                        evidence: format!("recon {date}"),
                        trace_id: uuid::Uuid::new_v4().simple().to_string(),
                    };
                    let a = self.apply(&o).await?;
                    actions.push(
                        json!({"action": "status query", "result": a.class(), "at": self.now()}),
                    );
                    applied = Some(a);
                }
                Err(e) => actions.push(
                    json!({"action": "status query", "result": e.to_string(), "at": self.now()}),
                ),
            }
        }
        let fixed = matches!(
            applied,
            Some(Applied::Moved {
                to: PaymentStatus::Succeeded,
                ..
            })
        );
        Ok((payment_no, actions, fixed))
    }

    /// A person's decision on a held payment: the hold is lifted (audited
    /// with their note); its held outbox messages go out again.
    pub async fn release_hold(
        &self,
        actor: &str,
        payment_no: &str,
        note: &str,
    ) -> Result<String, ReconError> {
        if note.trim().is_empty() {
            return Err(ReconError::Invalid("a note saying why is required".into()));
        }
        let now = self.now();
        let mut tx = self.db.begin_write().await?;
        let Some(reason) = crate::store::payments::release(&mut tx, payment_no, now).await? else {
            return Err(ReconError::Invalid(format!(
                "payment {payment_no} is not held"
            )));
        };
        crate::store::audit::append(
            &mut tx,
            &crate::store::audit::Entry {
                actor: actor.to_owned(),
                action: "payment.release_hold",
                object_type: "payment",
                object_id: payment_no.to_owned(),
                before: Some(json!({ "hold_reason": reason })),
                after: Some(json!({ "hold_reason": null, "note": note.trim() })),
            },
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(reason)
    }

    /// The daily schedule: once a business day is over (plus two hours, for
    /// the provider's statement to be ready), pull yesterday's statement
    /// from every provider with a statement API; a failed pull is resumed
    /// every ten minutes. Returns how many runs it started or resumed.
    pub async fn scheduled_pulls(&self, now: i64) -> sqlx::Result<usize> {
        let tz = &self.settings.timezone;
        let Ok(ts) = jiff::Timestamp::from_microsecond(now) else {
            return Ok(0);
        };
        let local = ts.to_zoned(tz.clone());
        if local.hour() < 2 {
            return Ok(0);
        }
        let Ok(yesterday) = local.date().yesterday() else {
            return Ok(0);
        };
        let date = yesterday.to_string();
        let mut started = 0;
        for name in self
            .providers
            .names()
            .map(str::to_owned)
            .collect::<Vec<_>>()
        {
            let Some(p) = self.providers.get(&name) else {
                continue;
            };
            if !p.pulls_statements() {
                continue;
            }
            let latest: Option<(String, String, Option<i64>)> = sqlx::query_as(
                "SELECT run_id, status, COALESCE(finished_at, updated_at, started_at) FROM recon_runs \
                 WHERE provider = $1 AND business_date = $2 AND source = 'pull' ORDER BY started_at DESC LIMIT 1",
            )
            .bind(&name)
            .bind(&date)
            .fetch_optional(&self.db.pool)
            .await?;
            let result = match latest {
                None => Some(self.pull_statement(&name, &date, "schedule").await),
                Some((run_id, status, last))
                    if (status == "FAILED" && last.unwrap_or(0) < now - 600_000_000)
                        || (status == "RUNNING" && last.unwrap_or(0) < now - STALE_US) =>
                {
                    Some(self.resume_run(&run_id).await)
                }
                _ => None,
            };
            match result {
                None => {}
                Some(Ok(run)) => {
                    started += 1;
                    tracing::info!(provider = %name, %date, run_id = %run.run_id, "scheduled statement pull completed");
                }
                Some(Err(e)) => {
                    started += 1;
                    tracing::warn!(provider = %name, %date, error = %e, "scheduled statement pull failed; resumed later");
                }
            }
        }
        Ok(started)
    }

    /// Per business day and provider: the latest completed run's figures,
    /// with the tickets still open now.
    pub async fn recon_days(&self, from: &str, to: &str) -> sqlx::Result<Vec<serde_json::Value>> {
        let runs: Vec<RunRow> = sqlx::query_as(&format!(
            "SELECT {RUN_COLUMNS} FROM recon_runs WHERE status = 'COMPLETED' AND business_date >= $1 AND business_date <= $2 \
             ORDER BY business_date, provider, started_at"
        ))
        .bind(from)
        .bind(to)
        .fetch_all(&self.db.pool)
        .await?;
        let mut latest: BTreeMap<(String, String), RunRow> = BTreeMap::new();
        for r in runs {
            latest.insert((r.business_date.clone(), r.provider.clone()), r);
        }
        let mut days = Vec::new();
        for ((date, provider), run) in latest {
            let open: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM discrepancies WHERE provider = $1 AND business_date = $2 AND status <> 'CLOSED'",
            )
            .bind(&provider)
            .bind(&date)
            .fetch_one(&self.db.pool)
            .await?;
            let mut figures: serde_json::Value = run
                .figures_json
                .as_deref()
                .and_then(|f| serde_json::from_str(f).ok())
                .unwrap_or_default();
            let to_process = figures["statement_rows"].as_i64().unwrap_or(0)
                + figures["local_without_row"].as_i64().unwrap_or(0);
            figures["to_process"] = to_process.into();
            figures["unknown"] = open.into();
            days.push(json!({
                "business_date": date,
                "provider": provider,
                "run_id": run.run_id,
                "figures": figures,
            }));
        }
        Ok(days)
    }
}
