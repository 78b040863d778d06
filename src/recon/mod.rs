//! Reconciliation, the third witness: a provider's statement for one
//! business day is read (checked against its own summary) and streamed
//! against the day's local payments held in memory ([`matching`]); every
//! statement row and every local payment and refund of that day is put in
//! exactly one class of DESIGN.md's table. A file's run keeps the rows
//! behind its tickets in `recon_rows` (the file itself, known by its hash,
//! holds the rest); a pull keeps every row, page by page, so an
//! interrupted pull resumes from its cursor. Classes other
//! than MATCHED become tickets (`discrepancies`), one per cause, updated —
//! never duplicated or reopened — by a re-run. STATUS_LAG is repaired by
//! itself (a stored verified callback replayed, or a status query, through
//! `engine::apply`); nothing automatic changes an amount or a currency.

mod matching;
pub mod statement;

use crate::domain::{PaymentNo, PaymentStatus, ProviderTxnId};
use crate::engine::{Applied, Engine, Source};
use crate::providers::Notification;
use crate::providers::Provider;
use crate::store::alerts;
use futures_util::{StreamExt, TryStreamExt};
use matching::{ByKey, DayPayments, Early, Matcher, Pay, paid};
use serde_json::json;
use sha2::{Digest, Sha256};
use sqlx::Row;
use statement::{Format, Pause, StatementRow};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Statement rows handed from the reading thread to the matcher at once,
/// and chunks read ahead of the matcher (while the day's payments load).
const ROWS_PER_CHUNK: usize = 4_096;
const CHUNKS_AHEAD: usize = 8;
/// The run's progress (rows read) is written about this often.
const PROGRESS_EVERY: i64 = 64 * ROWS_PER_CHUNK as i64;
/// Payments or refunds looked up per `IN (…)` list.
const LOOKUPS_PER_STATEMENT: usize = 128;
/// STATUS_LAG repairs tried at once (each its own `apply`; a provider's
/// status query may wait on the network).
const REPAIRS_AT_ONCE: usize = 8;
/// New exceptions that have their payments looked up while the statement
/// is still read.
const EARLY_LOOKUPS: usize = 2_048;
/// Tickets per multi-row upsert (24 values each).
const TICKETS_PER_STATEMENT: usize = 128;
/// A RUNNING run without progress for this long was left by a stopped
/// process (microseconds): an hour.
const STALE_US: i64 = 3600 * 1_000_000;
/// One provider's payments of one business day `[$2, $3)`: paid that day,
/// or never paid and made that day — two statements, each one range of
/// the `payments_day` index (`(provider, paid_at, created_at)`), so a run
/// reads the day, not the provider's history. (As one statement with
/// `OR`, SQLite kept every rowid of the first range in a set to test the
/// second's against: a quarter of the read, 0.36–0.44 against 0.27–0.30 s
/// for a million payments in the sqlite3 shell. The two never share a
/// payment: `paid_at` is set or not.)
pub const DAY_PAYMENTS: [&str; 2] = [
    "SELECT payment_no, provider_txn_id, amount_minor, currency, status FROM payments \
     WHERE provider = $1 AND paid_at >= $2 AND paid_at < $3",
    "SELECT payment_no, provider_txn_id, amount_minor, currency, status FROM payments \
     WHERE provider = $1 AND paid_at IS NULL AND created_at >= $2 AND created_at < $3",
];

/// The refunds of one provider that succeeded on one business day, by the
/// `refunds_day` index.
pub const DAY_REFUNDS: &str = "SELECT refund_no, payment_no, amount_minor, currency, status FROM refunds \
     WHERE provider = $1 AND status = 'SUCCEEDED' AND finished_at >= $2 AND finished_at < $3";

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
    fn into_reader(self) -> std::io::Result<Box<dyn std::io::BufRead + Send>> {
        Ok(match self {
            Input::Bytes(b) => Box::new(std::io::Cursor::new(b)),
            Input::File(p) => Box::new(std::io::BufReader::with_capacity(
                1 << 16,
                std::fs::File::open(p)?,
            )),
        })
    }

    pub fn hash(&self) -> std::io::Result<String> {
        let mut h = StatementHash::default();
        let mut r: Box<dyn std::io::BufRead + Send + '_> = match self {
            Input::Bytes(b) => Box::new(std::io::Cursor::new(b.as_slice())),
            Input::File(p) => Box::new(std::io::BufReader::with_capacity(
                1 << 20,
                std::fs::File::open(p)?,
            )),
        };
        loop {
            let buf = r.fill_buf()?;
            if buf.is_empty() {
                break;
            }
            h.update(buf);
            let n = buf.len();
            r.consume(n);
        }
        Ok(h.finish())
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
    /// The input's [`StatementHash`] when the caller already has it (the
    /// console hashes an upload as it arrives); otherwise it is computed.
    pub hash: Option<String>,
}

/// What makes a statement file the same file: the SHA-256 of its bytes,
/// in lowercase hex. Fed piece by piece (as an upload arrives, or as a
/// file is read).
#[derive(Default)]
pub struct StatementHash(Sha256);

impl StatementHash {
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    pub fn finish(self) -> String {
        hex::encode(self.0.finalize())
    }
}

/// A finished (or refused) run, as the API and CLI report it.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, sqlx::FromRow, utoipa::ToSchema)]
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

/// One provider's business day: its latest completed run's figures.
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema)]
pub struct ReconDay {
    pub business_date: String,
    pub provider: String,
    pub run_id: String,
    /// Counts of the run (`statement_rows`, `matched`, `pending`,
    /// `repaired`, `classes`, …) with `to_process` and `unknown` (open
    /// discrepancies) added.
    #[schema(value_type = Object)]
    pub figures: serde_json::Value,
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

/// The multi-row INSERT of statement rows into `recon_rows`, with owned
/// values (so it can wait in a write pipeline).
fn rows_statement<R: std::borrow::Borrow<StatementRow>>(
    kind: crate::store::DbKind,
    run_id: &str,
    chunk: &[R],
) -> sqlx::Result<(String, sqlx::any::AnyArguments<'static>)> {
    let sql = format!(
        "INSERT INTO recon_rows (run_id, line_no, kind, provider_txn_id, payment_no, refund_no, \
           provider_refund_id, amount_minor, currency, status, occurred_at) VALUES {}",
        crate::store::Marks::for_kind(kind).rows(chunk.len(), 11, "")
    );
    let mut args = Args::with_capacity(chunk.len() * 11);
    for r in chunk {
        let r = r.borrow();
        args.add(run_id.to_owned())?;
        args.add(r.line_no)?;
        args.add(r.kind.as_str())?;
        args.add(r.provider_txn_id.clone())?;
        args.add(r.payment_no.clone())?;
        args.add(r.refund_no.clone())?;
        args.add(r.provider_refund_id.clone())?;
        args.add(r.money.minor)?;
        args.add(r.money.currency.code())?;
        args.add(r.status.clone())?;
        args.add(r.occurred_at)?;
    }
    Ok((sql, args.0))
}

/// Statement rows of a run, in the caller's transaction.
async fn insert_rows_in<R: std::borrow::Borrow<StatementRow>>(
    conn: &mut sqlx::AnyConnection,
    run_id: &str,
    chunk: &[R],
) -> sqlx::Result<()> {
    if chunk.is_empty() {
        return Ok(());
    }
    let kind = crate::store::DbKind::of(conn);
    let (sql, args) = rows_statement(kind, run_id, chunk)?;
    sqlx::query_with(&sql, args).execute(&mut *conn).await?;
    Ok(())
}

/// Owned statement values, added one by one.
struct Args(sqlx::any::AnyArguments<'static>);

impl Args {
    fn with_capacity(n: usize) -> Args {
        let mut a = sqlx::any::AnyArguments::default();
        sqlx::Arguments::reserve(&mut a, n, 0);
        Args(a)
    }

    fn add<T>(&mut self, value: T) -> sqlx::Result<()>
    where
        T: sqlx::Encode<'static, sqlx::Any> + sqlx::Type<sqlx::Any> + 'static,
    {
        sqlx::Arguments::add(&mut self.0, value).map_err(sqlx::Error::Encode)
    }
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

/// Why a run's write could not send its next step.
enum Unsent {
    /// A step could not be built, or what it needed could not be read.
    Failed(ReconError),
    /// The pipeline stopped: its own error says why.
    Stopped,
}

impl From<crate::store::pipeline::Stopped> for Unsent {
    fn from(_: crate::store::pipeline::Stopped) -> Unsent {
        Unsent::Stopped
    }
}

impl From<sqlx::Error> for Unsent {
    fn from(e: sqlx::Error) -> Unsent {
        Unsent::Failed(e.into())
    }
}

/// What every ticket of a run carries: the run, its provider, business day
/// (and that day's range), and file.
#[derive(Clone, Copy)]
struct RunOf<'a> {
    run_id: &'a str,
    provider: &'a str,
    date: &'a str,
    file: Option<&'a str>,
    range: (i64, i64),
    /// The run's alerts logged one by one so far
    /// ([`alerts::raise_alerts`]).
    alerts_logged: &'a std::sync::Arc<std::sync::atomic::AtomicUsize>,
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
    /// How long the run's phases took: reading (and matching, as the rows
    /// arrive) the statement from the start of the run, classifying what
    /// did not plainly match, writing what was found.
    millis: BTreeMap<&'static str, u64>,
}

/// A statement read through: its hash, rows, own figures and the lines
/// skipped under the accepted tolerance.
struct Read {
    hash: String,
    rows: i64,
    checks: Vec<statement::Check>,
    skipped: Vec<statement::ParseError>,
}

/// Hashes a statement (unless its hash is known), then reads it on the
/// calling thread, handing its rows to `rows` in chunks. Blocking: runs in
/// `spawn_blocking`. (Hashing first, in a pass of its own, overlaps it with
/// the loading of the day's payments, during which the rows could only
/// wait.)
fn read_statement(
    format: Format,
    input: Input,
    tolerance: u32,
    known_hash: Option<String>,
    rows: tokio::sync::mpsc::Sender<statement::Chunk>,
    spare: std::sync::mpsc::Receiver<statement::Chunk>,
) -> Result<Read, ReconError> {
    let unreadable =
        |e: std::io::Error| ReconError::Invalid(format!("cannot read the statement: {e}"));
    let hash = match known_hash {
        Some(hash) => hash,
        None => input.hash().map_err(unreadable)?,
    };
    let mut read = Read {
        hash,
        rows: 0,
        checks: Vec::new(),
        skipped: Vec::new(),
    };
    let reader = input.into_reader().map_err(unreadable)?;
    let mut statement = statement::read_with(format, reader, tolerance);
    let mut chunk = statement::Chunk::with_capacity(ROWS_PER_CHUNK);
    loop {
        let before = chunk.len();
        let pause = statement
            .read_rows(&mut chunk, ROWS_PER_CHUNK)
            .map_err(|e| ReconError::Refused(e.to_string()))?;
        read.rows += (chunk.len() - before) as i64;
        match pause {
            Pause::Full => {
                // The matched chunks come back empty to be filled again
                // (a fresh one each time cost page faults).
                let next = spare
                    .try_recv()
                    .unwrap_or_else(|_| statement::Chunk::with_capacity(ROWS_PER_CHUNK));
                let full = std::mem::replace(&mut chunk, next);
                if rows.blocking_send(full).is_err() {
                    return Err(ReconError::Invalid("the run stopped reading".into()));
                }
            }
            Pause::Skipped(e) => read.skipped.push(e),
            Pause::End(checks) => {
                read.checks = checks;
                break;
            }
        }
    }
    if !chunk.is_empty() && rows.blocking_send(chunk).is_err() {
        return Err(ReconError::Invalid("the run stopped reading".into()));
    }
    Ok(read)
}

/// A payment as `payments_by` reads it.
type FoundPay = (
    String,
    Option<String>,
    i64,
    String,
    String,
    Option<String>,
    i64,
    String,
);

fn payments_by_sql(column: &str, list: &[String]) -> String {
    format!(
        "SELECT payment_no, order_no, amount_minor, currency, status, provider_txn_id, created_at, provider \
         FROM payments WHERE {column} IN ({})",
        list.join(", ")
    )
}

/// A payment found by `column`, keyed by it, if it is `provider`'s.
fn add_found(out: &mut ByKey, column: &str, provider: &str, f: FoundPay) {
    let (no, order, amount, currency, status, txn, created, p) = f;
    if p != provider {
        return;
    }
    let key = if column == "payment_no" {
        no.clone()
    } else {
        txn.clone().unwrap_or_default()
    };
    out.entry(key).or_insert(Pay {
        no,
        order,
        amount,
        currency,
        status,
        txn,
        created: Some(created),
    });
}

/// `Engine::payments_by` on SQLite, on a read-only connection of its own.
/// Blocking.
fn payments_by_sqlite(
    path: &std::path::Path,
    column: &'static str,
    provider: &str,
    keys: &[String],
) -> Result<ByKey, String> {
    let mut out = hashbrown::HashMap::new();
    let conn = crate::store::scan::ReadOnly::open(path)?;
    payments_by_on(&conn, column, provider, keys, &mut out)?;
    Ok(out)
}

/// The early lookups of a statement being read (SQLite): each batch of
/// keys `asks` brings, on one read-only connection, until the asking
/// stops; the payments found by transaction id and by payment_no.
/// Blocking.
fn early_lookups(
    path: &std::path::Path,
    provider: &str,
    asks: std::sync::mpsc::Receiver<(Vec<String>, Vec<String>)>,
) -> Result<(ByKey, ByKey), String> {
    let conn = crate::store::scan::ReadOnly::open(path)?;
    let (mut by_txn, mut by_no) = Default::default();
    for (txns, nos) in asks {
        payments_by_on(&conn, "provider_txn_id", provider, &txns, &mut by_txn)?;
        payments_by_on(&conn, "payment_no", provider, &nos, &mut by_no)?;
    }
    Ok((by_txn, by_no))
}

/// [`payments_by_sqlite`] on an open connection, into `out`.
fn payments_by_on(
    conn: &crate::store::scan::ReadOnly,
    column: &'static str,
    provider: &str,
    keys: &[String],
    out: &mut ByKey,
) -> Result<(), String> {
    use crate::store::scan::Bind;
    for chunk in keys.chunks(LOOKUPS_PER_STATEMENT) {
        let list: Vec<String> = (1..=chunk.len()).map(|k| format!("${k}")).collect();
        let binds: Vec<Bind> = chunk.iter().map(|k| Bind::Text(k)).collect();
        conn.each_row(&payments_by_sql(column, &list), &binds, |r| {
            let text = |i| r.text(i).map(str::to_owned);
            add_found(
                out,
                column,
                provider,
                (
                    text(0).unwrap_or_default(),
                    text(1),
                    r.int(2).unwrap_or_default(),
                    text(3).unwrap_or_default(),
                    text(4).unwrap_or_default(),
                    text(5),
                    r.int(6).unwrap_or_default(),
                    text(7).unwrap_or_default(),
                ),
            )
        })?;
    }
    Ok(())
}

/// The keys the exceptions `from` name for classification: the
/// transaction ids of rows not among the day's payments, and every
/// payment_no.
fn exception_keys(from: &[(StatementRow, Option<u32>)]) -> (Vec<&str>, Vec<&str>) {
    let txns = from
        .iter()
        .filter(|(_, slot)| slot.is_none())
        .filter_map(|(r, _)| r.provider_txn_id.as_deref())
        .collect();
    let nos = from
        .iter()
        .filter_map(|(r, _)| r.payment_no.as_deref())
        .collect();
    (txns, nos)
}

/// What one exception row is: its class and, unless it matched, its
/// ticket's particulars.
struct Verdict {
    class: &'static str,
    severity: &'static str,
    key: String,
    payment_no: Option<String>,
    order_no: Option<String>,
    local: Option<(i64, String, String)>,
    reason: String,
    /// A STATUS_LAG the engine may repair (the payment can still move).
    repairable: bool,
}

/// Classifies a payment row that did not plainly match: `t` is the payment
/// its transaction id names, `n` the one its payment_no names, `copies`
/// how often its transaction is listed.
fn verdict(row: &StatementRow, t: Option<&Pay>, n: Option<&Pay>, copies: i64) -> Verdict {
    let txn = row.provider_txn_id.as_deref();
    let key = txn
        .or(row.payment_no.as_deref())
        .map_or_else(|| format!("line-{}", row.line_no), str::to_owned);
    let ticket = |class, pay: Option<&Pay>, reason: String| Verdict {
        class,
        severity: "HIGH",
        key: key.clone(),
        payment_no: pay.map(|p| p.no.clone()),
        order_no: pay.and_then(|p| p.order.clone()),
        local: None,
        reason,
        repairable: false,
    };
    if copies > 1 {
        return Verdict {
            order_no: None,
            ..ticket(
                "DUPLICATE",
                t.or(n),
                format!(
                    "transaction {} appears {copies} times in the statement",
                    txn.unwrap_or("-")
                ),
            )
        };
    }
    // A payment found by payment_no only is the row's if made near it.
    let near = |n: &Pay| match (n.created, row.occurred_at) {
        (Some(c), Some(o)) => (o - c).abs() <= MATCH_WINDOW_US,
        (Some(_), None) => true,
        _ => false,
    };
    let pay = match (t, n) {
        (Some(t), Some(n)) if n.no != t.no => {
            return ticket(
                "ONE_TO_MANY",
                Some(t),
                format!(
                    "transaction {} belongs to payment {}, the statement names {}",
                    txn.unwrap_or("-"),
                    t.no,
                    n.no
                ),
            );
        }
        (Some(t), _) => t,
        (None, Some(n)) if near(n) => {
            if n.txn.as_deref().is_some_and(|bound| Some(bound) != txn) {
                return ticket(
                    "ONE_TO_MANY",
                    Some(n),
                    format!(
                        "payment {} is bound to transaction {}, the statement says {}",
                        n.no,
                        n.txn.as_deref().unwrap_or("-"),
                        txn.unwrap_or("-")
                    ),
                );
            }
            n
        }
        _ => {
            return Verdict {
                payment_no: row.payment_no.clone(),
                ..ticket(
                    "PROVIDER_ONLY",
                    None,
                    "the provider reports a payment Reckon does not have".into(),
                )
            };
        }
    };
    let (amount, currency, status) = (
        row.money.minor,
        row.money.currency.code(),
        row.status.as_str(),
    );
    let l_status = pay.status.as_str();
    let (class, severity, reason, repairable) = if pay.currency != currency {
        (
            "CURRENCY_MISMATCH",
            "HIGH",
            format!("statement {currency}, local {}", pay.currency),
            false,
        )
    } else if pay.amount != amount {
        (
            "AMOUNT_MISMATCH",
            "HIGH",
            format!("statement {amount}, local {} (minor units)", pay.amount),
            false,
        )
    } else if status != "SUCCEEDED" {
        if paid(l_status) {
            (
                "LOCAL_ONLY",
                "CRITICAL",
                format!("the provider says {status}, Reckon has it {l_status}"),
                false,
            )
        } else {
            ("MATCHED", "", String::new(), false)
        }
    } else if paid(l_status) {
        ("MATCHED", "", String::new(), false)
    } else if matches!(l_status, "CREATED" | "PENDING") {
        (
            "STATUS_LAG",
            "MEDIUM",
            format!("paid at the provider, {l_status} here"),
            true,
        )
    } else {
        (
            "STATUS_LAG",
            "HIGH",
            format!(
                "paid at the provider, {l_status} here: the state machine cannot follow; a person decides"
            ),
            false,
        )
    };
    Verdict {
        class,
        severity,
        key: pay.no.clone(),
        payment_no: Some(pay.no.clone()),
        order_no: pay.order.clone(),
        local: Some((pay.amount, pay.currency.clone(), pay.status.clone())),
        reason,
        repairable,
    }
}

impl Engine {
    pub async fn run(&self, run_id: &str) -> sqlx::Result<Option<RunRow>> {
        // Run ids are visible ASCII (`new_run_id`); anything else names no
        // run, and PostgreSQL would refuse a NUL in it as an error.
        if run_id.is_empty() || run_id.len() > 64 || !run_id.bytes().all(|b| b.is_ascii_graphic()) {
            return Ok(None);
        }
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
    ///
    /// The file is hashed, then read, on a thread of its own, handing its
    /// rows over in chunks, while the day's local payments are read; each
    /// row is matched as it arrives. Nothing but the run is written until
    /// the whole statement was read and its own figures agree; a file
    /// already reconciled for the day leaves no run behind.
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
        let range =
            day_range(imp.business_date, &self.settings.timezone).map_err(ReconError::Invalid)?;
        if let Input::File(path) = &imp.input
            && let Err(e) = std::fs::File::open(path)
        {
            return Err(ReconError::Invalid(format!(
                "cannot read the statement: {e}"
            )));
        }
        let input = imp.input;
        let pool = &self.db.pool;
        let run_id = imp.run_id.clone().unwrap_or_else(new_run_id);
        let now = self.now();
        sqlx::query(
            "INSERT INTO recon_runs (run_id, provider, business_date, source, file_name, status, \
               rows_read, started_by, started_at, phase, updated_at) \
             VALUES ($1, $2, $3, $4, $5, 'RUNNING', 0, $6, $7, 'reading', $7)",
        )
        .bind(&run_id)
        .bind(imp.provider)
        .bind(imp.business_date)
        .bind(imp.source)
        .bind(imp.file_name)
        .bind(imp.started_by)
        .bind(now)
        .execute(pool)
        .await?;
        let started = std::time::Instant::now();
        let (sender, mut chunks) = tokio::sync::mpsc::channel::<statement::Chunk>(CHUNKS_AHEAD);
        let tolerance = imp.accept_bad_lines;
        let known_hash = imp.hash;
        let (spare, spares) = std::sync::mpsc::channel();
        let reading = tokio::task::spawn_blocking(move || {
            read_statement(format, input, tolerance, known_hash, sender, spares)
        });
        let day = match self.day_payments(imp.provider, range).await {
            Ok(day) => day,
            Err(e) => {
                drop(chunks);
                let _ = reading.await;
                self.fail_run(&run_id, &e.to_string()).await?;
                return Err(e);
            }
        };
        tracing::debug!(
            run_id,
            payments = day.len(),
            millis = started.elapsed().as_millis() as u64,
            "the day's payments read"
        );
        let mut matcher = Matcher::new(day);
        matcher.started = Some(started);
        let mut received = 0i64;
        // While the reader sets the pace, the payments the exceptions name
        // are asked for on a core of their own (SQLite), a batch at a time,
        // in order, all on one connection (not one opened per batch, each
        // reading the schema and filling a page cache of its own).
        let mut asked = 0;
        let (ask, asks) = std::sync::mpsc::channel::<(Vec<String>, Vec<String>)>();
        let early = self.db.sqlite_path.clone().map(|path| {
            let provider = imp.provider.to_owned();
            tokio::task::spawn_blocking(move || early_lookups(&path, &provider, asks))
        });
        while let Some(mut chunk) = chunks.recv().await {
            received += chunk.len() as i64;
            matcher.feed_chunk(&mut chunk);
            // Back to the reader, empty (it may have stopped: no matter).
            let _ = spare.send(chunk);
            if early.is_some() && matcher.exceptions.len() - asked >= EARLY_LOOKUPS {
                let (txns, nos) = exception_keys(&matcher.exceptions[asked..]);
                let owned = |keys: Vec<&str>| -> Vec<String> {
                    keys.into_iter().map(str::to_owned).collect()
                };
                // (A lookup that stopped asks for nothing more: its
                // answers will not count.)
                let _ = ask.send((owned(txns), owned(nos)));
                asked = matcher.exceptions.len();
            }
            // Progress for whoever watches the run (the reader, not this
            // loop, sets the pace: the write costs the run nothing).
            // Best effort: a progress figure that could not be written
            // stops nothing.
            if received % PROGRESS_EVERY == 0 {
                let _ = sqlx::query(
                    "UPDATE recon_runs SET rows_read = $1, updated_at = $2 WHERE run_id = $3",
                )
                .bind(received)
                .bind(self.now())
                .bind(&run_id)
                .execute(pool)
                .await;
            }
            if let Err(e) = matcher.within_bounds() {
                drop(chunks);
                let _ = reading.await;
                self.fail_run(&run_id, &e.to_string()).await?;
                return Err(e);
            }
        }
        // What was asked early counts only if every batch was answered
        // (else it is all asked again).
        drop(ask);
        if let Some(Ok(Ok((by_txn, by_no)))) = match early {
            Some(lookups) => Some(lookups.await),
            None => None,
        } {
            matcher.early = Early {
                looked_up: asked,
                by_txn,
                by_no,
            };
        }
        let read = match reading.await {
            Ok(read) => read,
            Err(e) => Err(ReconError::Refused(format!(
                "reading the statement stopped: {e}"
            ))),
        };
        tracing::debug!(
            run_id,
            millis = started.elapsed().as_millis() as u64,
            "statement read and matched"
        );
        // What the read freed (rows dropped on another thread than the one
        // that made them, the lookups' scratch) given back before
        // classifying, where the peak is: 233–239 → 214–233 MiB, three
        // runs each.
        crate::release_freed_memory();
        let read = match read {
            Ok(read) => read,
            Err(e) => {
                self.fail_run(&run_id, &e.to_string()).await?;
                return Err(e);
            }
        };
        // The same file, already reconciled for that day: that run, and
        // nothing of this one.
        if let Some(run) = self
            .earlier_run(imp.provider, imp.business_date, &read.hash)
            .await?
        {
            sqlx::query("DELETE FROM recon_runs WHERE run_id = $1")
                .bind(&run_id)
                .execute(pool)
                .await?;
            return Ok(run);
        }
        sqlx::query(
            "UPDATE recon_runs SET rows_read = $1, file_hash = $2, updated_at = $3 WHERE run_id = $4",
        )
        .bind(read.rows)
        .bind(&read.hash)
        .bind(self.now())
        .bind(&run_id)
        .execute(pool)
        .await?;
        self.finish_run(
            &run_id,
            imp.provider,
            imp.business_date,
            imp.file_name,
            &read.checks,
            &read.skipped,
            Some(matcher),
        )
        .await
    }

    /// The statement is all read: its own figures must agree, then the day
    /// is reconciled and the run completed. `matched` is the statement
    /// already streamed against the day (a file); without it (a pull) the
    /// rows staged page by page are.
    #[allow(clippy::too_many_arguments)]
    async fn finish_run(
        &self,
        run_id: &str,
        provider: &str,
        date: &str,
        file: Option<&str>,
        checks: &[statement::Check],
        skipped: &[statement::ParseError],
        matched: Option<Matcher>,
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
        let keep_rows = matched.is_some();
        let figures = match matched {
            Some(m) => Ok(m),
            None => self.match_staged(run_id, provider, date).await,
        };
        let figures = match figures {
            Ok(m) => {
                self.reconcile(run_id, provider, date, file, m, keep_rows)
                    .await
            }
            Err(e) => Err(e),
        };
        let figures = match figures {
            Ok(figures) => figures,
            Err(e) => {
                // Not left RUNNING: the run says why it stopped (a storage
                // error may keep it from saying so; then it goes stale).
                let _ = self.fail_run(run_id, &e.to_string()).await;
                return Err(e);
            }
        };
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
        self.finish_run(run_id, &provider, &date, None, &checks, &[], None)
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

    /// The business day's local payments of `provider`: paid that day, or
    /// created that day and not paid. On SQLite read straight through the
    /// C API on a connection of their own ([`crate::store::scan`]: sqlx
    /// took 8.1 s for a million rows, this 0.2 s); on PostgreSQL streamed.
    async fn day_payments(
        &self,
        provider: &str,
        (start, end): (i64, i64),
    ) -> Result<DayPayments, ReconError> {
        let bad = |e: String| ReconError::Invalid(format!("the day's payments: {e}"));
        if let Some(path) = self.db.sqlite_path.clone() {
            use crate::store::scan::{Bind, ReadOnly};
            let store = |e: String| ReconError::Store(sqlx::Error::Io(std::io::Error::other(e)));
            let joined = |e: tokio::task::JoinError| bad(e.to_string());
            // The day in two halves, each read on a thread of its own (by
            // `payments_day`: only the day's payments are read): while the
            // payments load, the statement's reader can only run a few
            // chunks ahead, and a core would sit idle.
            let middle = start + (end - start) / 2;
            let part = |from: i64, to: i64| {
                let (path, provider) = (path.clone(), provider.to_owned());
                tokio::task::spawn_blocking(move || {
                    let mut day = DayPayments::default();
                    let mut refused = None;
                    let binds = [Bind::Text(&provider), Bind::Int(from), Bind::Int(to)];
                    let db = ReadOnly::open(&path).map_err(store)?;
                    for sql in DAY_PAYMENTS {
                        db.each_row(sql, &binds, |r| {
                            if refused.is_none()
                                && let Err(e) = day.push(
                                    r.text(0).unwrap_or_default(),
                                    r.text(1),
                                    r.int(2).unwrap_or_default(),
                                    r.text(3).unwrap_or_default(),
                                    r.text(4).unwrap_or_default(),
                                )
                            {
                                refused = Some(e);
                            }
                        })
                        .map_err(store)?;
                    }
                    match refused {
                        Some(e) => Err(bad(e)),
                        None => Ok(day),
                    }
                })
            };
            let (head, tail) = tokio::join!(part(start, middle), part(middle, end));
            let (mut day, tail) = (head.map_err(joined)??, tail.map_err(joined)??);
            return tokio::task::spawn_blocking(move || {
                day.append(tail).map_err(bad)?;
                day.index();
                Ok(day)
            })
            .await
            .map_err(joined)?;
        }
        let mut day = DayPayments::default();
        for sql in DAY_PAYMENTS {
            let mut rows = sqlx::query(sql)
                .bind(provider)
                .bind(start)
                .bind(end)
                .fetch(&self.db.pool);
            while let Some(r) = rows.try_next().await? {
                day.push(
                    &r.try_get::<String, _>(0)?,
                    r.try_get::<Option<String>, _>(1)?.as_deref(),
                    r.try_get(2)?,
                    &r.try_get::<String, _>(3)?,
                    &r.try_get::<String, _>(4)?,
                )
                .map_err(bad)?;
            }
        }
        day.index();
        Ok(day)
    }

    /// A pull's staged rows streamed against the day's payments.
    async fn match_staged(
        &self,
        run_id: &str,
        provider: &str,
        date: &str,
    ) -> Result<Matcher, ReconError> {
        let range = day_range(date, &self.settings.timezone).map_err(ReconError::Invalid)?;
        let mut matcher = Matcher::new(self.day_payments(provider, range).await?);
        let mut rows = sqlx::query(
            "SELECT line_no, kind, provider_txn_id, payment_no, refund_no, provider_refund_id, amount_minor, \
               currency, status, occurred_at FROM recon_rows WHERE run_id = $1 ORDER BY line_no",
        )
        .bind(run_id)
        .fetch(&self.db.pool);
        while let Some(r) = rows.try_next().await? {
            let currency: String = r.try_get("currency")?;
            let currency = crate::domain::Currency::parse(&currency)
                .map_err(|e| ReconError::Invalid(e.to_string()))?;
            let row = StatementRow {
                line_no: r.try_get("line_no")?,
                kind: if r.try_get::<String, _>("kind")? == "refund" {
                    statement::RowKind::Refund
                } else {
                    statement::RowKind::Payment
                },
                provider_txn_id: r.try_get("provider_txn_id")?,
                payment_no: r.try_get("payment_no")?,
                refund_no: r.try_get("refund_no")?,
                provider_refund_id: r.try_get("provider_refund_id")?,
                money: crate::domain::Money::new(r.try_get("amount_minor")?, currency),
                status: r.try_get("status")?,
                occurred_at: r.try_get("occurred_at")?,
            };
            matcher.feed(row.borrowed());
            matcher.within_bounds()?;
        }
        Ok(matcher)
    }

    /// Payments of `provider` whose `column` (payment_no or
    /// provider_txn_id) is one of `keys`, by that value. (The provider is
    /// checked here, not in SQL: with `provider =` beside the list SQLite
    /// walks the provider's whole index.) On SQLite read on a connection of
    /// their own, whose small page cache the lookups cannot swell.
    async fn payments_by(
        &self,
        column: &'static str,
        provider: &str,
        keys: &[&str],
    ) -> Result<ByKey, ReconError> {
        if let Some(path) = self.db.sqlite_path.clone() {
            let keys: Vec<String> = keys.iter().map(|k| (*k).to_owned()).collect();
            let provider = provider.to_owned();
            return tokio::task::spawn_blocking(move || {
                payments_by_sqlite(&path, column, &provider, &keys)
            })
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r)
            .map_err(|e| ReconError::Store(sqlx::Error::Io(std::io::Error::other(e))));
        }
        let mut out = hashbrown::HashMap::new();
        for chunk in keys.chunks(LOOKUPS_PER_STATEMENT) {
            let mut marks = crate::store::Marks::for_kind(self.db.kind);
            let list: Vec<String> = chunk.iter().map(|_| marks.mark()).collect();
            let sql = payments_by_sql(column, &list);
            let mut q = sqlx::query_as::<_, FoundPay>(&sql);
            for key in chunk {
                q = q.bind(*key);
            }
            for found in q.fetch_all(&self.db.pool).await? {
                add_found(&mut out, column, provider, found);
            }
        }
        Ok(out)
    }

    /// Classifies every row and every local payment and refund of the day,
    /// writes the tickets (and, for a file, the rows behind them), queues
    /// the STATUS_LAG repairs for the worker, returns the figures.
    async fn reconcile(
        &self,
        run_id: &str,
        provider: &str,
        date: &str,
        file: Option<&str>,
        matched: Matcher,
        keep_rows: bool,
    ) -> Result<Figures, ReconError> {
        let (start, end) = day_range(date, &self.settings.timezone).map_err(ReconError::Invalid)?;
        let phase = std::time::Instant::now();
        let Matcher {
            day,
            exceptions,
            refunds,
            payment_rows,
            started,
            early,
            ..
        } = matched;
        let mut figures = Figures::default();
        let millis = |since: std::time::Instant| since.elapsed().as_millis() as u64;
        if let Some(started) = started {
            figures.millis.insert("read_and_match", millis(started));
        }
        // Sized for the exceptions (most of them are tickets): a finding is
        // some 300 bytes, and each doubling of 30,000 of them moved them all
        // into fresh pages.
        let mut found: Vec<Found> = Vec::with_capacity(exceptions.len());
        let mut lagging: Vec<String> = Vec::new();

        // What the database says about the payments the exceptions name:
        // by transaction id (those not among the day's), by payment_no.
        let (mut unknown, mut named) = exception_keys(&exceptions);
        unknown.sort_unstable();
        let copies: hashbrown::HashMap<&str, i64> = unknown
            .chunk_by(|a, b| a == b)
            .map(|c| (c[0], c.len() as i64))
            .collect();
        unknown.dedup();
        named.sort_unstable();
        named.dedup();
        // Those not asked while the statement was read.
        let (asked_txns, asked_nos) = exception_keys(&exceptions[..early.looked_up]);
        let (asked_txns, asked_nos): (hashbrown::HashSet<&str>, hashbrown::HashSet<&str>) = (
            asked_txns.into_iter().collect(),
            asked_nos.into_iter().collect(),
        );
        let txns_left: Vec<&str> = unknown
            .iter()
            .copied()
            .filter(|t| !asked_txns.contains(t))
            .collect();
        let nos_left: Vec<&str> = named
            .iter()
            .copied()
            .filter(|n| !asked_nos.contains(n))
            .collect();
        let mut by_txn = early.by_txn;
        by_txn.extend(
            self.payments_by("provider_txn_id", provider, &txns_left)
                .await?,
        );
        let mut by_no = early.by_no;
        by_no.extend(self.payments_by("payment_no", provider, &nos_left).await?);

        // The exceptions, one by one, in statement order. A row of a
        // transaction listed more than once among the day's payments is
        // left for its payment's DUPLICATE ticket below.
        let mut last_duplicate: hashbrown::HashMap<u32, &StatementRow> = hashbrown::HashMap::new();
        for (row, slot) in &exceptions {
            let ours;
            let (t, copies) = match slot {
                Some(i) if day.rows(*i) > 1 => {
                    if row.line_no == day.last_line(*i) {
                        last_duplicate.insert(*i, row);
                    }
                    continue;
                }
                Some(i) => {
                    ours = day.pay(*i);
                    (Some(&ours), 1)
                }
                None => {
                    let txn = row.provider_txn_id.as_deref();
                    (
                        txn.and_then(|t| by_txn.get(t)),
                        txn.and_then(|t| copies.get(t).copied()).unwrap_or(1),
                    )
                }
            };
            let n = row.payment_no.as_deref().and_then(|no| by_no.get(no));
            let v = verdict(row, t, n, copies);
            figures.statement_rows += 1;
            *figures.classes.entry(v.class).or_default() += 1;
            if v.class == "MATCHED" {
                figures.matched += 1;
                continue;
            }
            if v.repairable
                && let Some(no) = &v.payment_no
            {
                lagging.push(no.clone());
            }
            // The other payment a ONE_TO_MANY involves.
            let also = match (t, n) {
                (Some(t), Some(n)) if t.no != n.no => Some(n.no.clone()),
                _ => None,
            };
            let hold = if v.class == "LOCAL_ONLY" || v.class == "ONE_TO_MANY" {
                v.payment_no.iter().cloned().chain(also).collect()
            } else {
                Vec::new()
            };
            found.push(Found {
                class: v.class,
                severity: v.severity,
                key: v.key,
                payment_no: v.payment_no,
                order_no: v.order_no,
                txn: row.provider_txn_id.clone(),
                line_no: Some(row.line_no),
                local: v.local,
                provider_side: Some((
                    row.money.minor,
                    row.money.currency.code().to_owned(),
                    row.status.clone(),
                )),
                reason: v.reason,
                hold,
            });
        }

        // The day's payments: listed more than once (DUPLICATE, every row),
        // plainly matched, or not listed at all.
        let named: hashbrown::HashSet<&str> = named.into_iter().collect();
        // Counted here and added once: a map entry per payment (comparing
        // class names) was a fifth of classifying a million (perf).
        let (mut plainly, mut unlisted_matched) = (0i64, 0i64);
        for i in day.indexes() {
            let rows = i64::from(day.rows(i));
            if rows > 1 {
                figures.statement_rows += rows;
                *figures.classes.entry("DUPLICATE").or_default() += rows;
                let pay = day.pay(i);
                let side = match last_duplicate.get(&i) {
                    Some(r) => (
                        r.money.minor,
                        r.money.currency.code().to_owned(),
                        r.status.clone(),
                    ),
                    None => (pay.amount, pay.currency.clone(), "SUCCEEDED".to_owned()),
                };
                let txn = pay.txn.clone().unwrap_or_default();
                found.push(Found {
                    class: "DUPLICATE",
                    severity: "HIGH",
                    key: txn.clone(),
                    payment_no: Some(pay.no),
                    order_no: None,
                    txn: pay.txn,
                    line_no: Some(day.last_line(i)),
                    local: None,
                    provider_side: Some(side),
                    reason: format!("transaction {txn} appears {rows} times in the statement"),
                    hold: Vec::new(),
                });
            } else if rows == 1 {
                if !day.had_exception(i) {
                    plainly += 1;
                }
            } else if !named.contains(day.no_of(i)) {
                figures.local_without_row += 1;
                let status = day.status_of(i);
                if paid(status) {
                    *figures.classes.entry("LOCAL_ONLY").or_default() += 1;
                    let pay = day.pay(i);
                    found.push(Found {
                        class: "LOCAL_ONLY",
                        severity: "CRITICAL",
                        key: pay.no.clone(),
                        payment_no: Some(pay.no.clone()),
                        order_no: pay.order,
                        txn: pay.txn,
                        line_no: None,
                        reason: format!(
                            "{} here, absent from the provider's statement",
                            pay.status
                        ),
                        local: Some((pay.amount, pay.currency, pay.status)),
                        provider_side: None,
                        hold: vec![pay.no],
                    });
                } else {
                    unlisted_matched += 1;
                    if matches!(status, "CREATED" | "PENDING") {
                        figures.pending += 1;
                    }
                }
            }
        }
        figures.statement_rows += plainly;
        figures.matched += plainly + unlisted_matched;
        if plainly + unlisted_matched > 0 {
            *figures.classes.entry("MATCHED").or_default() += plainly + unlisted_matched;
        }
        debug_assert_eq!(
            figures.statement_rows, payment_rows,
            "every payment row in exactly one class"
        );
        // The day's payments are not handed back to the system: since
        // SQLite allocates through mimalloc too, the write's page cache
        // reuses them (the write 0.57 → 0.46–0.50 s, two runs each; peak
        // RSS 164–173 → 191–224 MiB).
        drop(day);
        tracing::debug!(
            run_id,
            millis = phase.elapsed().as_millis() as u64,
            "payments classified"
        );

        // Refund rows against the refund ledger, both ways.
        self.classify_refunds(provider, (start, end), &refunds, &mut figures, &mut found)
            .await?;
        // The order of each ticket's payment, where the finding did not
        // carry it (the day's payments are held without theirs): from the
        // payments the rows named, else looked up — while the tickets that
        // need no lookup are being written. Findings of one ticket stay
        // together, in the order they were found (the last one found is
        // the ticket's).
        for f in &mut found {
            if f.order_no.is_none()
                && let Some(p) = f.payment_no.as_deref().and_then(|no| by_no.get(no))
            {
                f.order_no = p.order.clone();
            }
        }
        drop((by_no, by_txn));
        let waits: hashbrown::HashSet<(&str, &str)> = found
            .iter()
            .filter(|f| f.order_no.is_none() && f.payment_no.is_some())
            .map(|f| (f.class, f.key.as_str()))
            .collect();
        let flags: Vec<bool> = found
            .iter()
            .map(|f| waits.contains(&(f.class, f.key.as_str())))
            .collect();
        drop(waits);
        let to_wait = flags.iter().filter(|&&wait| wait).count();
        let (mut waiting, mut ready) = (
            Vec::with_capacity(to_wait),
            Vec::with_capacity(found.len() - to_wait),
        );
        for (f, wait) in found.into_iter().zip(flags) {
            if wait {
                waiting.push(f);
            } else {
                ready.push(f);
            }
        }
        let mut unordered: Vec<String> = waiting
            .iter()
            .filter(|f| f.order_no.is_none())
            .filter_map(|f| f.payment_no.clone())
            .collect();
        unordered.sort_unstable();
        unordered.dedup();
        figures.millis.insert("classify", millis(phase));
        // What the run found: its tickets (with their holds and alerts),
        // committed about 5,000 at a time (a fifth of a second each, so
        // callbacks never wait long behind a run); then, in the last
        // commit, a file's rows behind them (a pull staged all of its rows)
        // and the STATUS_LAG repairs queued for the worker (each may wait on
        // the provider's answer; none changes what this run found).
        // Each statement is built here while the database runs the ones
        // before it (`store::pipeline`), all on the pipeline's one
        // connection: each of the pool's keeps a page cache of up to
        // 64 MiB, and a run's writes would fill one per commit (the peak
        // RSS went from 208 to 249 MiB with two).
        let phase = std::time::Instant::now();
        // In the order of their keys: the indexes of `discrepancies` keyed
        // by an identifier (the ticket's key, its payment, its transaction)
        // then fill their pages in order instead of splitting pages all
        // over (the tickets' statements 0.35 → 0.24 s for 30,000). A
        // stable sort: a ticket found twice keeps its last finding. By
        // cached keys: (key, place) pairs are sorted and each finding is
        // then moved about once; sorting the findings themselves (some 300
        // bytes each) moved each of them log n times through a scratch
        // buffer of fresh pages (30,000 in a test program: 19–62 → 11–12 ms).
        let by_key = |f: &Found| (f.class, f.key.clone());
        ready.sort_by_cached_key(by_key);
        waiting.sort_by_cached_key(by_key);
        let kind = self.db.kind;
        let alerts_logged = std::sync::Arc::default();
        let run = RunOf {
            run_id,
            provider,
            date,
            file,
            range: (start, end),
            alerts_logged: &alerts_logged,
        };
        let pipe = crate::store::pipeline::Pipeline::start(&self.db).await?;
        let sent = async {
            let mut batches = 0;
            let nos: Vec<&str> = unordered.iter().map(String::as_str).collect();
            let (sent, orders) = tokio::join!(
                self.send_tickets(&pipe, &run, &mut batches, &ready),
                self.payments_by("payment_no", provider, &nos)
            );
            sent?;
            drop(ready);
            let orders = orders.map_err(Unsent::Failed)?;
            for f in &mut waiting {
                if f.order_no.is_none()
                    && let Some(p) = f.payment_no.as_deref().and_then(|no| orders.get(no))
                {
                    f.order_no = p.order.clone();
                }
            }
            drop(orders);
            self.send_tickets(&pipe, &run, &mut batches, &waiting)
                .await?;
            drop(waiting);
            if keep_rows {
                let rows: Vec<&StatementRow> = exceptions
                    .iter()
                    .map(|(r, _)| r)
                    .chain(refunds.iter())
                    .collect();
                for chunk in rows.chunks(crate::store::ROWS_PER_STATEMENT) {
                    let (sql, args) = rows_statement(kind, run_id, chunk)?;
                    pipe.send(crate::store::pipeline::statement(sql, args))
                        .await?;
                }
            }
            let nos = lagging.clone();
            let now = self.now();
            pipe.send(crate::store::pipeline::op(move |conn| {
                Box::pin(async move {
                    let nos: Vec<&str> = nos.iter().map(String::as_str).collect();
                    crate::store::tasks::schedule_many(
                        conn,
                        crate::store::tasks::RECON_REPAIR,
                        &nos,
                        now,
                        now,
                    )
                    .await
                })
            }))
            .await?;
            Ok::<(), Unsent>(())
        }
        .await;
        match sent {
            Ok(()) => pipe.finish().await?,
            // Dropped unfinished: nothing since the last commit is kept.
            Err(Unsent::Failed(e)) => return Err(e),
            // The pipeline's own error says why it stopped.
            Err(Unsent::Stopped) => {
                return Err(pipe
                    .finish()
                    .await
                    .err()
                    .unwrap_or(sqlx::Error::WorkerCrashed)
                    .into());
            }
        }
        if !lagging.is_empty() {
            self.wake.notify_one();
        }
        figures.millis.insert("write", millis(phase));
        tracing::debug!(run_id, millis = millis(phase), "tickets written");
        figures.pending += lagging.len() as i64;
        figures.unknown = self.open_tickets_of_day(provider, date).await?;
        Ok(figures)
    }

    /// How many of the day's tickets are open. On SQLite counted on a
    /// read-only connection of its own with SQLite's small default page
    /// cache ([`crate::store::scan`]): counting on a pool connection left
    /// the tickets' pages in its 64 MiB cache, 14 MiB more at the run's
    /// peak.
    async fn open_tickets_of_day(&self, provider: &str, date: &str) -> sqlx::Result<i64> {
        const OPEN: &str = "SELECT COUNT(*) FROM discrepancies \
             WHERE provider = $1 AND business_date = $2 AND status <> 'CLOSED'";
        let Some(path) = self.db.sqlite_path.clone() else {
            return sqlx::query_scalar(OPEN)
                .bind(provider)
                .bind(date)
                .fetch_one(&self.db.pool)
                .await;
        };
        let (provider, date) = (provider.to_owned(), date.to_owned());
        tokio::task::spawn_blocking(move || {
            use crate::store::scan::{Bind, each_row};
            let mut open = 0;
            each_row(
                &path,
                OPEN,
                &[Bind::Text(&provider), Bind::Text(&date)],
                |r| {
                    open = r.int(0).unwrap_or_default();
                },
            )
            .map(|_| open)
        })
        .await
        .map_err(|e| e.to_string())
        .and_then(|counted| counted)
        .map_err(|e| sqlx::Error::Io(std::io::Error::other(e)))
    }

    /// The statement's refund rows against the refund ledger, and the
    /// day's refunds the statement does not list.
    async fn classify_refunds(
        &self,
        provider: &str,
        (start, end): (i64, i64),
        rows: &[StatementRow],
        figures: &mut Figures,
        found: &mut Vec<Found>,
    ) -> sqlx::Result<()> {
        let mut nos: Vec<&str> = rows.iter().filter_map(|r| r.refund_no.as_deref()).collect();
        nos.sort_unstable();
        nos.dedup();
        let mut ledger: hashbrown::HashMap<String, (String, i64, String, String)> =
            hashbrown::HashMap::new();
        for chunk in nos.chunks(LOOKUPS_PER_STATEMENT) {
            let mut marks = crate::store::Marks::for_kind(self.db.kind);
            let list: Vec<String> = chunk.iter().map(|_| marks.mark()).collect();
            let sql = format!(
                "SELECT refund_no, payment_no, amount_minor, currency, status FROM refunds WHERE refund_no IN ({})",
                list.join(", ")
            );
            let mut q = sqlx::query_as::<_, (String, String, i64, String, String)>(&sql);
            for no in chunk {
                q = q.bind(*no);
            }
            for (no, payment_no, amount, currency, status) in q.fetch_all(&self.db.pool).await? {
                ledger.insert(no, (payment_no, amount, currency, status));
            }
        }
        for row in rows {
            figures.statement_rows += 1;
            let (amount, currency) = (row.money.minor, row.money.currency.code());
            let f = row.refund_no.as_deref().and_then(|no| ledger.get(no));
            let reason = match f {
                None => Some("a refund in the statement Reckon did not request".to_string()),
                Some((_, f_amount, f_currency, _))
                    if f_currency.as_str() != currency || *f_amount != amount =>
                {
                    Some(format!(
                        "statement {amount} {currency}, ledger {f_amount} {f_currency}"
                    ))
                }
                Some((_, _, _, s)) if s == "SUCCEEDED" => None,
                Some((_, _, _, s)) => Some(format!(
                    "refunded at the provider, {s} here (its notification is missing)"
                )),
            };
            let Some(reason) = reason else {
                *figures.classes.entry("MATCHED").or_default() += 1;
                figures.matched += 1;
                continue;
            };
            *figures.classes.entry("REFUND_MISMATCH").or_default() += 1;
            found.push(Found {
                class: "REFUND_MISMATCH",
                severity: "HIGH",
                key: row
                    .refund_no
                    .clone()
                    .unwrap_or_else(|| format!("line-{}", row.line_no)),
                payment_no: f.map(|f| f.0.clone()).or(row.payment_no.clone()),
                order_no: None,
                txn: row.provider_txn_id.clone(),
                line_no: Some(row.line_no),
                local: f.map(|(_, a, c, s)| (*a, c.clone(), s.clone())),
                provider_side: Some((amount, currency.to_owned(), "REFUNDED".into())),
                reason,
                hold: Vec::new(),
            });
        }
        let listed: hashbrown::HashSet<&str> = nos.into_iter().collect();
        let day: Vec<(String, String, i64, String, String)> = sqlx::query_as(DAY_REFUNDS)
            .bind(provider)
            .bind(start)
            .bind(end)
            .fetch_all(&self.db.pool)
            .await?;
        for (no, payment_no, amount, currency, status) in day {
            if listed.contains(no.as_str()) {
                continue;
            }
            figures.local_without_row += 1;
            *figures.classes.entry("REFUND_MISMATCH").or_default() += 1;
            found.push(Found {
                class: "REFUND_MISMATCH",
                severity: "HIGH",
                reason: format!("refund {no} succeeded here, absent from the provider's statement"),
                key: no,
                payment_no: Some(payment_no),
                order_no: None,
                txn: None,
                line_no: None,
                local: Some((amount, currency, status)),
                provider_side: None,
                hold: Vec::new(),
            });
        }
        Ok(())
    }

    /// Findings' tickets, holds and alerts, built here and sent to the
    /// run's write pipeline, about 1,000 at a time; every fifth such batch
    /// of the run (`batches` counts them) commits first.
    async fn send_tickets(
        &self,
        pipe: &crate::store::pipeline::Pipeline,
        run: &RunOf<'_>,
        batches: &mut usize,
        found: &[Found],
    ) -> Result<(), Unsent> {
        for batch in found.chunks(TICKETS_PER_STATEMENT * 8) {
            if *batches > 0 && (*batches).is_multiple_of(5) {
                pipe.commit().await?;
            }
            *batches += 1;
            self.send_batch(pipe, run, batch).await?;
        }
        Ok(())
    }

    /// One batch of [`Engine::send_tickets`]: opens each ticket once per
    /// cause; a re-run updates open ones and leaves closed ones closed.
    /// LOCAL_ONLY also holds its payment and raises a critical alert.
    async fn send_batch(
        &self,
        pipe: &crate::store::pipeline::Pipeline,
        run: &RunOf<'_>,
        found: &[Found],
    ) -> Result<(), Unsent> {
        use crate::store::pipeline::{op, statement};
        let RunOf {
            run_id,
            provider,
            date,
            file,
            range: (start, end),
            alerts_logged,
        } = *run;
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
        let last: hashbrown::HashMap<&str, usize> = keyed
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
        for chunk in rows.chunks(TICKETS_PER_STATEMENT) {
            let mut marks = crate::store::Marks::for_kind(self.db.kind);
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
            let mut args = Args::with_capacity(chunk.len() * 24);
            for (key, f) in chunk {
                args.add(uuid::Uuid::now_v7().to_string())?;
                args.add(key.clone())?;
                args.add(f.class)?;
                args.add(f.severity)?;
                args.add(provider.to_owned())?;
                args.add(f.payment_no.clone())?;
                args.add(f.txn.clone())?;
                args.add(f.local.as_ref().map(|l| l.0))?;
                args.add(f.local.as_ref().map(|l| l.1.clone()))?;
                args.add(f.local.as_ref().map(|l| l.2.clone()))?;
                args.add(f.provider_side.as_ref().map(|p| p.0))?;
                args.add(f.provider_side.as_ref().map(|p| p.1.clone()))?;
                args.add(f.provider_side.as_ref().map(|p| p.2.clone()))?;
                args.add(json!({ "reason": f.reason }).to_string())?;
                args.add(now)?;
                args.add(run_id.to_owned())?;
                args.add(date.to_owned())?;
                args.add(f.order_no.clone())?;
                args.add(file.map(str::to_owned))?;
                args.add(start)?;
                args.add(end)?;
                args.add(f.line_no)?;
                args.add(now)?;
                args.add(f.severity)?;
            }
            pipe.send(statement(sql, args.0)).await?;
        }
        // What some findings do besides their ticket: holds (one statement
        // per reason and chunk) and a critical alert for each LOCAL_ONLY.
        let mut holds: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut alerts: Vec<(String, Option<String>, String)> = Vec::new();
        for (key, f) in &keyed {
            if !f.hold.is_empty() {
                holds
                    .entry(format!("{} in {provider}'s statement of {date}", f.class))
                    .or_default()
                    .extend(f.hold.iter().cloned());
            }
            if f.class == "LOCAL_ONLY" {
                alerts.push((
                    key.clone(),
                    f.payment_no.clone(),
                    format!(
                        "payment {} is {} here but absent from {provider}'s statement of {date}: hold fulfilment",
                        f.payment_no.as_deref().unwrap_or("-"),
                        f.local.as_ref().map(|l| l.2.as_str()).unwrap_or("-")
                    ),
                ));
            }
        }
        if holds.is_empty() && alerts.is_empty() {
            return Ok(());
        }
        let alerts_logged = alerts_logged.clone();
        pipe.send(op(move |conn| {
            Box::pin(async move {
                for (reason, payment_nos) in &holds {
                    let nos: Vec<&str> = payment_nos.iter().map(String::as_str).collect();
                    crate::store::payments::hold_many(conn, &nos, reason, now).await?;
                }
                let alerts: Vec<alerts::NewAlert> = alerts
                    .iter()
                    .map(|(key, payment_no, message)| alerts::NewAlert {
                        dedupe_key: key,
                        kind: "local_only",
                        severity: "critical",
                        payment_no: payment_no.as_deref(),
                        message,
                        trace_id: None,
                        now,
                    })
                    .collect();
                alerts::raise_alerts(conn, &alerts, &alerts_logged).await
            })
        }))
        .await?;
        Ok(())
    }

    /// STATUS_LAG repairs a run queued (`recon_repair` tasks), as the
    /// worker leases them: each payment's stored verified callback
    /// replayed, else the provider asked, through `apply`, a few at a time.
    /// What was done goes on the payment's open STATUS_LAG ticket, which
    /// closes when the payment is paid, and a repair counts in its run's
    /// figures; tickets, figures and tasks in one commit.
    pub(crate) async fn run_repair_tasks(
        &self,
        due: &[&crate::store::tasks::TaskRow],
        now: i64,
    ) -> sqlx::Result<()> {
        if due.is_empty() {
            return Ok(());
        }
        // What each needs, read for all at once: the payment's provider and
        // bound transaction, and its stored verified callbacks, oldest first.
        let mut marks = crate::store::Marks::for_kind(self.db.kind);
        let list: Vec<String> = due.iter().map(|_| marks.mark()).collect();
        let list = list.join(", ");
        let sql = format!(
            "SELECT payment_no, provider_txn_id, provider FROM payments WHERE payment_no IN ({list})"
        );
        let mut q = sqlx::query_as::<_, (String, Option<String>, String)>(&sql);
        for task in due {
            q = q.bind(task.payment_no.as_str());
        }
        let known: hashbrown::HashMap<String, (Option<String>, String)> = q
            .fetch_all(&self.db.pool)
            .await?
            .into_iter()
            .map(|(payment_no, txn, provider)| (payment_no, (txn, provider)))
            .collect();
        let sql = format!(
            "SELECT payment_no, id, headers_json, payload, trace_id, provider FROM payment_callbacks \
             WHERE payment_no IN ({list}) AND verify_result = 'VERIFIED' AND refund_no IS NULL \
             ORDER BY payment_no, received_at"
        );
        let mut q = sqlx::query_as::<_, (String, String, String, Vec<u8>, String, String)>(&sql);
        for task in due {
            q = q.bind(task.payment_no.as_str());
        }
        let mut stored: hashbrown::HashMap<String, Vec<StoredCallback>> = hashbrown::HashMap::new();
        for (payment_no, id, headers_json, payload, trace_id, provider) in
            q.fetch_all(&self.db.pool).await?
        {
            if known.get(&payment_no).is_none_or(|(_, p)| *p != provider) {
                continue;
            }
            stored.entry(payment_no).or_default().push(StoredCallback {
                id,
                headers_json,
                payload,
                trace_id,
            });
        }
        let mut notes: hashbrown::HashMap<&str, &str> = hashbrown::HashMap::new();
        let mut tries = Vec::new();
        for task in due {
            let no = task.payment_no.as_str();
            match known.get(no) {
                None => {
                    notes.insert(&task.task_id, "payment missing");
                }
                Some((txn, provider)) => match self.providers.get(provider).cloned() {
                    None => {
                        notes.insert(&task.task_id, "provider not configured");
                    }
                    Some(p) => tries.push(self.repair_one(
                        p,
                        no.to_owned(),
                        txn.clone(),
                        stored.remove(no).unwrap_or_default(),
                    )),
                },
            }
        }
        let tried: Vec<(String, Vec<serde_json::Value>, bool)> = futures_util::stream::iter(tries)
            .buffered(REPAIRS_AT_ONCE)
            .try_collect::<Vec<_>>()
            .await?;
        // What was done, on the tickets and the runs' figures.
        let mut tx = self.db.begin_write().await?;
        let mut by_run: BTreeMap<String, i64> = BTreeMap::new();
        let mut fixed_nos = hashbrown::HashSet::new();
        for (payment_no, actions, fixed) in &tried {
            let entries = actions
                .iter()
                .map(|a| a.to_string())
                .collect::<Vec<_>>()
                .join(",");
            let actions_now = format!(
                "CASE WHEN $4 = '' THEN actions ELSE {} END",
                crate::store::tickets::appended_actions("$4")
            );
            // By the payment's index: `class || ''` keeps SQLite from
            // walking every STATUS_LAG ticket by the class's index instead.
            let tickets: Vec<(String, Option<String>)> = sqlx::query_as(&format!(
                "UPDATE discrepancies SET updated_at = $1, actions = {actions_now}, \
                   status = CASE WHEN $2 = 1 THEN 'CLOSED' ELSE status END, \
                   conclusion = CASE WHEN $2 = 1 THEN 'auto-repaired through engine::apply' ELSE conclusion END, \
                   closed_at = CASE WHEN $2 = 1 THEN $1 ELSE closed_at END \
                 WHERE payment_no = $3 AND class || '' = 'STATUS_LAG' AND source = 'recon' AND status <> 'CLOSED' \
                 RETURNING discrepancy_id, run_id"
            ))
            .bind(self.now())
            .bind(i64::from(*fixed))
            .bind(payment_no)
            .bind(entries)
            .fetch_all(&mut *tx)
            .await?;
            if *fixed {
                fixed_nos.insert(payment_no.as_str());
                for (ticket, run) in &tickets {
                    crate::store::proposals::supersede_pending(&mut tx, ticket, "auto-repaired")
                        .await?;
                    if let Some(run) = run {
                        *by_run.entry(run.clone()).or_default() += 1;
                    }
                }
            }
        }
        for (run, repaired) in by_run {
            // Guarded on the figures read: another worker's repairs to the
            // same run (PostgreSQL, two instances) are read again, not lost.
            loop {
                let figures: Option<Option<String>> =
                    sqlx::query_scalar("SELECT figures_json FROM recon_runs WHERE run_id = $1")
                        .bind(&run)
                        .fetch_optional(&mut *tx)
                        .await?;
                let Some(Some(figures)) = figures else {
                    break;
                };
                let mut f: serde_json::Value = serde_json::from_str(&figures).unwrap_or_default();
                f["repaired"] = (f["repaired"].as_i64().unwrap_or(0) + repaired).into();
                f["pending"] = (f["pending"].as_i64().unwrap_or(0) - repaired)
                    .max(0)
                    .into();
                let moved = sqlx::query(
                    "UPDATE recon_runs SET figures_json = $1 WHERE run_id = $2 AND figures_json = $3",
                )
                .bind(f.to_string())
                .bind(&run)
                .bind(&figures)
                .execute(&mut *tx)
                .await?;
                if moved.rows_affected() == 1 {
                    break;
                }
            }
        }
        for task in due {
            let note = notes.get(task.task_id.as_str()).copied().or(
                if fixed_nos.contains(task.payment_no.as_str()) {
                    None
                } else {
                    Some("not repaired: the ticket waits for a person")
                },
            );
            crate::store::tasks::close(&mut *tx, &task.task_id, "DONE", note, now).await?;
        }
        tx.commit().await
    }

    /// One lagging payment (bound to `txn`, if at all): its stored
    /// verified callback replayed, else the provider asked, through
    /// `apply`. What was done, and whether the payment is now paid.
    async fn repair_one(
        &self,
        provider: Arc<dyn Provider>,
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
                    let o = crate::engine::view_outcome(
                        view,
                        no.clone(),
                        provider.name(),
                        Source::ReconRepair,
                        "reconciliation: STATUS_LAG repair",
                    );
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
        // Paid now — by this repair, or meanwhile by a status query or a
        // callback of another lane: either way the lag is gone.
        let fixed = matches!(
            applied,
            Some(
                Applied::Moved {
                    to: PaymentStatus::Succeeded,
                    ..
                } | Applied::Duplicate {
                    status: PaymentStatus::Succeeded
                        | PaymentStatus::Refunding
                        | PaymentStatus::Refunded,
                }
            )
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
            &self.db.audit,
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
    pub async fn recon_days(&self, from: &str, to: &str) -> sqlx::Result<Vec<ReconDay>> {
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
            days.push(ReconDay {
                business_date: date,
                provider,
                run_id: run.run_id,
                figures,
            });
        }
        Ok(days)
    }
}
