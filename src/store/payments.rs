//! The `payments`, `payment_effects` and `payment_status_history` tables.

use crate::domain::PaymentStatus::{self, Closed, Created, Failed, Succeeded};
use crate::store::batch::{Arg, Cell, Statements, insert_rows};
use sqlx::{Any, Executor};

/// The serde derives are for the engine, which keeps a payment it made as
/// JSON under the merchant's idempotency key and reads it back for a repeat.
#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize, serde::Deserialize)]
pub struct PaymentRow {
    pub payment_no: String,
    pub order_no: String,
    pub attempt_no: i64,
    pub provider: String,
    pub provider_txn_id: Option<String>,
    pub amount_minor: i64,
    pub currency: String,
    #[sqlx(try_from = "String")]
    pub status: PaymentStatus,
    pub version: i64,
    pub description: Option<String>,
    pub created_by: String,
    pub awaiting_recon: i64,
    pub refunded_minor: i64,
    pub reserved_minor: i64,
    pub hold_reason: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "payment_no, order_no, attempt_no, provider, provider_txn_id, amount_minor, \
     currency, status, version, description, created_by, awaiting_recon, refunded_minor, reserved_minor, \
     created_at, updated_at";

/// Statuses as an SQL list (`'SUCCEEDED', 'REFUNDING'`): the table's own
/// words, never input, written as literals.
pub fn in_list(statuses: &[PaymentStatus]) -> String {
    statuses
        .iter()
        .map(|s| format!("'{}'", s.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The paid statuses ([`PaymentStatus::is_paid`]) as an SQL list.
pub fn paid_list() -> String {
    let paid: Vec<PaymentStatus> = PaymentStatus::ALL
        .into_iter()
        .filter(|s| s.is_paid())
        .collect();
    in_list(&paid)
}

/// A status read back as text: an unknown word is a decode error.
pub fn status(s: String) -> sqlx::Result<PaymentStatus> {
    PaymentStatus::try_from(s).map_err(|e| sqlx::Error::Decode(e.into()))
}

/// A query over `payments`: the payment's hold reason, NULL when it is not
/// held (holds are rows of `payment_holds`).
pub const HOLD_REASON: &str = "(SELECT h.reason FROM payment_holds h WHERE h.payment_no = payments.payment_no) AS hold_reason";

/// A condition on a row of `payments`: it is not held. (A statement that
/// moves a payment tests it in its own WHERE, not in a read before.)
pub const NOT_HELD: &str =
    "NOT EXISTS (SELECT 1 FROM payment_holds h WHERE h.payment_no = payments.payment_no)";

pub async fn get<'e>(
    e: impl Executor<'e, Database = Any>,
    payment_no: &str,
) -> sqlx::Result<Option<PaymentRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS}, {HOLD_REASON} FROM payments WHERE payment_no = $1"
    ))
    .bind(payment_no)
    .fetch_optional(e)
    .await
}

pub struct NewPayment<'a> {
    pub payment_no: &'a str,
    pub order_no: &'a str,
    pub attempt_no: i64,
    pub provider: &'a str,
    pub amount_minor: i64,
    pub currency: &'a str,
    pub description: Option<&'a str>,
    pub created_by: &'a str,
    pub now: i64,
}

pub async fn insert<'e>(
    e: impl Executor<'e, Database = Any>,
    p: &NewPayment<'_>,
) -> sqlx::Result<()> {
    sqlx::query(&format!(
        "INSERT INTO payments (payment_no, order_no, attempt_no, provider, provider_txn_id, amount_minor, \
         currency, status, version, description, created_by, awaiting_recon, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, NULL, $5, $6, '{}', 0, $7, $8, 0, $9, $9)",
        Created.as_str()
    ))
    .bind(p.payment_no)
    .bind(p.order_no)
    .bind(p.attempt_no)
    .bind(p.provider)
    .bind(p.amount_minor)
    .bind(p.currency)
    .bind(p.description)
    .bind(p.created_by)
    .bind(p.now)
    .execute(e)
    .await?;
    Ok(())
}

/// For a new attempt of an order: the next attempt number, and how many
/// attempts are still live (neither FAILED nor CLOSED).
pub async fn attempts_of<'e>(
    e: impl Executor<'e, Database = Any>,
    order_no: &str,
) -> sqlx::Result<(i64, i64)> {
    let (max, live): (Option<i64>, Option<i64>) = sqlx::query_as(&format!(
        "SELECT MAX(attempt_no), SUM(CASE WHEN status IN ({}) THEN 0 ELSE 1 END) \
         FROM payments WHERE order_no = $1",
        in_list(&[Failed, Closed])
    ))
    .bind(order_no)
    .fetch_one(e)
    .await?;
    Ok((max.unwrap_or(0) + 1, live.unwrap_or(0)))
}

/// Another attempt of the order that is paid (SUCCEEDED, or refunding or
/// refunded after it), if any: accepting a late success of one attempt
/// would pay the order twice.
pub async fn paid_attempt_of<'e>(
    e: impl Executor<'e, Database = Any>,
    order_no: &str,
    except_payment_no: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(&format!(
        "SELECT payment_no FROM payments WHERE order_no = $1 AND payment_no <> $2 \
           AND status IN ({}) ORDER BY attempt_no LIMIT 1",
        paid_list()
    ))
    .bind(order_no)
    .bind(except_payment_no)
    .fetch_optional(e)
    .await
}

/// What a guarded move changed.
#[derive(Debug, sqlx::FromRow)]
pub struct Moved {
    #[sqlx(try_from = "String")]
    pub prev_status: PaymentStatus,
    pub order_no: String,
    pub version: i64,
}

pub struct Move<'a> {
    pub payment_no: &'a str,
    pub provider: &'a str,
    pub provider_txn_id: Option<&'a str>,
    pub target: PaymentStatus,
    pub amount_minor: i64,
    pub currency: &'a str,
    /// When it was paid, if not now (only [`guarded_move`] reads it).
    pub paid_at: Option<i64>,
}

/// The one statement that changes a payment's status: it succeeds only from
/// an allowed predecessor and only when provider, amount, currency and
/// transaction id agree; it binds the transaction id when none was known.
/// A move to SUCCEEDED stamps `paid_at` once: the move's own time if given
/// (`m.paid_at`), else now.
pub async fn guarded_move<'e>(
    e: impl Executor<'e, Database = Any>,
    m: &Move<'_>,
    predecessors: &[PaymentStatus],
    now: i64,
) -> sqlx::Result<Option<Moved>> {
    let allowed = in_list(predecessors);
    let succeeded = Succeeded.as_str();
    let sql = format!(
        "UPDATE payments SET prev_status = status, status = $1, \
           provider_txn_id = COALESCE(provider_txn_id, $2), version = version + 1, updated_at = $3, \
           paid_at = CASE WHEN $1 = '{succeeded}' THEN COALESCE(paid_at, $8, $3) ELSE paid_at END \
         WHERE payment_no = $4 AND status IN ({allowed}) AND provider = $5 \
           AND amount_minor = $6 AND currency = $7 \
           AND {NOT_HELD} \
           AND ($2 IS NULL OR provider_txn_id IS NULL OR provider_txn_id = $2) \
         RETURNING prev_status, order_no, version"
    );
    sqlx::query_as(&sql)
        .bind(m.target.as_str())
        .bind(m.provider_txn_id)
        .bind(now)
        .bind(m.payment_no)
        .bind(m.provider)
        .bind(m.amount_minor)
        .bind(m.currency)
        .bind(m.paid_at)
        .fetch_optional(e)
        .await
}

pub async fn set_awaiting_recon<'e>(
    e: impl Executor<'e, Database = Any>,
    payment_no: &str,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE payments SET awaiting_recon = 1, updated_at = $1 WHERE payment_no = $2")
        .bind(now)
        .bind(payment_no)
        .execute(e)
        .await?;
    Ok(())
}

/// Holds payments (reconciliation found them LOCAL_ONLY or ONE_TO_MANY),
/// all for the same reason: no status change, no outbox delivery, no
/// refund until released. Payments already held keep their first reason.
/// A hold is a row of `payment_holds`; the payment's own row is not
/// touched (a run's thousands of holds were as many pages of `payments`
/// rewritten), so its version does not move: a fix proposed before a hold
/// is refused at approval by the hold itself
/// ([`crate::triage::fixes`] compares the hold it saw).
pub async fn hold_many(
    conn: &mut sqlx::AnyConnection,
    payment_nos: &[&str],
    reason: &str,
    now: i64,
) -> sqlx::Result<()> {
    for chunk in payment_nos.chunks(crate::store::ROWS_PER_STATEMENT) {
        let mut marks = crate::store::Marks::for_conn(conn);
        let (reason_mark, now_mark) = (marks.mark(), marks.mark());
        let list: Vec<String> = chunk.iter().map(|_| marks.mark()).collect();
        // Only payments there are; `WHERE true` lets SQLite read the
        // ON CONFLICT as the upsert's, not as part of a join.
        let sql = format!(
            "INSERT INTO payment_holds (payment_no, reason, held_at) \
             SELECT payment_no, {reason_mark}, {now_mark} FROM payments WHERE payment_no IN ({}) AND true \
             ON CONFLICT (payment_no) DO NOTHING",
            list.join(", ")
        );
        let mut q = sqlx::query(&sql).bind(reason).bind(now);
        for payment_no in chunk {
            q = q.bind(*payment_no);
        }
        q.execute(&mut *conn).await?;
    }
    Ok(())
}

/// Releases a hold inside the caller's transaction; returns the reason it
/// had, or `None` when the payment was not held. The payment's version
/// moves: a release is a decision about it.
pub async fn release(
    conn: &mut sqlx::AnyConnection,
    payment_no: &str,
    now: i64,
) -> sqlx::Result<Option<String>> {
    let reason: Option<String> =
        sqlx::query_scalar("DELETE FROM payment_holds WHERE payment_no = $1 RETURNING reason")
            .bind(payment_no)
            .fetch_optional(&mut *conn)
            .await?;
    if reason.is_some() {
        sqlx::query(
            "UPDATE payments SET updated_at = $1, version = version + 1 WHERE payment_no = $2",
        )
        .bind(now)
        .bind(payment_no)
        .execute(&mut *conn)
        .await?;
    }
    Ok(reason)
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct EffectRow {
    pub effect_type: String,
    pub created_at: i64,
}

pub async fn effects<'e>(
    e: impl Executor<'e, Database = Any>,
    payment_no: &str,
) -> sqlx::Result<Vec<EffectRow>> {
    sqlx::query_as("SELECT effect_type, created_at FROM payment_effects WHERE payment_no = $1 ORDER BY created_at")
        .bind(payment_no)
        .fetch_all(e)
        .await
}

pub struct HistoryEntry<'a> {
    pub payment_no: &'a str,
    pub from: PaymentStatus,
    pub to: PaymentStatus,
    pub source: &'a str,
    pub evidence: &'a str,
    pub trace_id: &'a str,
    pub at: i64,
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct HistoryRow {
    #[sqlx(try_from = "String")]
    pub from_status: PaymentStatus,
    #[sqlx(try_from = "String")]
    pub to_status: PaymentStatus,
    pub source: String,
    pub evidence_ref: String,
    pub trace_id: String,
    pub at: i64,
}

pub async fn history<'e>(
    e: impl Executor<'e, Database = Any>,
    payment_no: &str,
) -> sqlx::Result<Vec<HistoryRow>> {
    sqlx::query_as(
        "SELECT from_status, to_status, source, evidence_ref, trace_id, at FROM payment_status_history \
         WHERE payment_no = $1 ORDER BY at, id",
    )
    .bind(payment_no)
    .fetch_all(e)
    .await
}

#[derive(Debug)]
pub struct MovedRow {
    pub payment_no: String,
    pub prev_status: PaymentStatus,
    pub order_no: String,
    pub version: i64,
}

/// [`guarded_move`] for many payments with the same target in one
/// statement: the same conditions, row by row. Returns the rows that moved.
/// The caller gives each payment at most once. (`status || ''` keeps
/// SQLite from driving the join through the status index — without
/// statistics it would scan every CREATED payment per batch — so it walks
/// the batch and looks payments up by key.)
pub async fn guarded_move_many(
    conn: &mut impl Statements,
    target: PaymentStatus,
    moves: &[Move<'_>],
    predecessors: &[PaymentStatus],
    now: i64,
) -> sqlx::Result<Vec<MovedRow>> {
    let mut moved = Vec::new();
    if predecessors.is_empty() {
        return Ok(moved);
    }
    for chunk in crate::store::cached_chunks(moves, MOVES_PER_STATEMENT) {
        moved.extend(move_chunk(&mut *conn, target, chunk, predecessors, now).await?);
    }
    Ok(moved)
}

/// Payments moved by one statement. SQLite 3.46, without table statistics,
/// walks the batch and looks each payment up by key only while the batch
/// has fewer than about 206 rows; above that it scans the whole table
/// (seen with EXPLAIN QUERY PLAN).
const MOVES_PER_STATEMENT: usize = 128;

async fn move_chunk(
    conn: &mut impl Statements,
    target: PaymentStatus,
    moves: &[Move<'_>],
    predecessors: &[PaymentStatus],
    now: i64,
) -> sqlx::Result<Vec<MovedRow>> {
    let allowed = in_list(predecessors);
    let mut marks = crate::store::Marks::for_kind(conn.kind());
    let rows: Vec<String> = (0..moves.len())
        .map(|_| {
            format!(
                "({}, {}, {}, CAST({} AS BIGINT), {})",
                marks.mark(),
                marks.mark(),
                marks.mark(),
                marks.mark(),
                marks.mark()
            )
        })
        .collect();
    let updated_at = marks.mark();
    let paid_at = if target == PaymentStatus::Succeeded {
        format!("COALESCE(payments.paid_at, {})", marks.mark())
    } else {
        "payments.paid_at".to_owned()
    };
    let sql = format!(
        "WITH v(payment_no, provider, txn, amount, currency) AS (VALUES {}) \
         UPDATE payments SET prev_status = status, status = '{}', \
           provider_txn_id = COALESCE(payments.provider_txn_id, v.txn), version = payments.version + 1, \
           updated_at = {updated_at}, paid_at = {paid_at} \
         FROM v WHERE payments.payment_no = v.payment_no AND (payments.status || '') IN ({allowed}) \
           AND payments.provider = v.provider AND payments.amount_minor = v.amount \
           AND payments.currency = v.currency \
           AND {NOT_HELD} \
           AND (v.txn IS NULL OR payments.provider_txn_id IS NULL OR payments.provider_txn_id = v.txn) \
         RETURNING payments.payment_no, payments.prev_status, payments.order_no, payments.version",
        rows.join(", "),
        target.as_str(),
    );
    let mut args: Vec<Arg> = Vec::with_capacity(moves.len() * 5 + 2);
    for m in moves {
        args.extend::<[Arg; 5]>([
            m.payment_no.into(),
            m.provider.into(),
            m.provider_txn_id.into(),
            m.amount_minor.into(),
            m.currency.into(),
        ]);
    }
    args.push(now.into());
    if target == PaymentStatus::Succeeded {
        args.push(now.into());
    }
    conn.fetch(&sql, &args)
        .await?
        .into_iter()
        .map(|row| {
            let [payment_no, prev_status, order_no, version] = <[Cell; 4]>::try_from(row)
                .map_err(|_| sqlx::Error::Decode("a moved row has four columns".into()))?;
            Ok(MovedRow {
                payment_no: payment_no.text()?,
                prev_status: status(prev_status.text()?)?,
                order_no: order_no.text()?,
                version: version.int()?,
            })
        })
        .collect()
}

/// Many effects: (payment_no, effect_type).
pub async fn insert_effects(
    conn: &mut impl Statements,
    effects: &[(&str, &str)],
    now: i64,
) -> sqlx::Result<()> {
    let rows: Vec<(String, &str, &str)> = effects
        .iter()
        .map(|&(payment_no, effect_type)| {
            (uuid::Uuid::now_v7().to_string(), payment_no, effect_type)
        })
        .collect();
    insert_rows(
        conn,
        "INSERT INTO payment_effects (effect_id, payment_no, effect_type, created_at)",
        "",
        &rows,
        |(id, payment_no, effect_type)| {
            [
                id.as_str().into(),
                (*payment_no).into(),
                (*effect_type).into(),
                now.into(),
            ]
        },
    )
    .await
}

pub async fn insert_history_many(
    conn: &mut impl Statements,
    entries: &[HistoryEntry<'_>],
) -> sqlx::Result<()> {
    let rows: Vec<(String, &HistoryEntry)> = entries
        .iter()
        .map(|h| (uuid::Uuid::now_v7().to_string(), h))
        .collect();
    insert_rows(
        conn,
        "INSERT INTO payment_status_history (id, payment_no, from_status, to_status, source, evidence_ref, trace_id, at)",
        "",
        &rows,
        |(id, h)| {
            [
                id.as_str().into(),
                h.payment_no.into(),
                h.from.as_str().into(),
                h.to.as_str().into(),
                h.source.into(),
                h.evidence.into(),
                h.trace_id.into(),
                h.at.into(),
            ]
        },
    )
    .await
}

// ---- Triage and the console -----------------------------------------
// A payment as the console lists and shows it and as a fix sees it; the
// fixes' own reads and writes of a payment.

/// The columns of a [`PaymentBrief`] (with the hold reason).
pub const BRIEF_COLUMNS: &str = "payment_no, order_no, provider, provider_txn_id, amount_minor, currency, status, version, \
     created_at, paid_at, refunded_minor, reserved_minor";

/// A payment as lists show it and as a fix proposal records it.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct PaymentBrief {
    pub payment_no: String,
    pub order_no: String,
    pub provider: String,
    pub provider_txn_id: Option<String>,
    pub amount_minor: i64,
    pub currency: String,
    #[sqlx(try_from = "String")]
    pub status: PaymentStatus,
    pub version: i64,
    pub hold_reason: Option<String>,
    pub created_at: i64,
    pub paid_at: Option<i64>,
    pub refunded_minor: i64,
    pub reserved_minor: i64,
}

pub async fn brief<'e>(
    e: impl Executor<'e, Database = Any>,
    payment_no: &str,
) -> sqlx::Result<Option<PaymentBrief>> {
    sqlx::query_as(&format!(
        "SELECT {BRIEF_COLUMNS}, {HOLD_REASON} FROM payments WHERE payment_no = $1"
    ))
    .bind(payment_no)
    .fetch_optional(e)
    .await
}

/// The payment a provider's transaction id is bound to.
pub async fn bound_to<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    provider_txn_id: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(
        "SELECT payment_no FROM payments WHERE provider = $1 AND provider_txn_id = $2",
    )
    .bind(provider)
    .bind(provider_txn_id)
    .fetch_optional(e)
    .await
}

/// A paid attempt of the order (SUCCEEDED, or refunding or refunded after
/// it), if any.
pub async fn paid_of_order<'e>(
    e: impl Executor<'e, Database = Any>,
    order_no: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(&format!(
        "SELECT payment_no FROM payments WHERE order_no = $1 \
           AND status IN ({}) LIMIT 1",
        paid_list()
    ))
    .bind(order_no)
    .fetch_optional(e)
    .await
}

/// Locks the payment (PostgreSQL) for the rest of the transaction if it is
/// still at `version` with the hold `held` (`None`: not held) — as a
/// proposal saw it. Returns whether it is.
pub async fn lock_as_seen(
    conn: &mut sqlx::AnyConnection,
    payment_no: &str,
    version: i64,
    held: Option<&str>,
) -> sqlx::Result<bool> {
    let same = sqlx::query(
        "UPDATE payments SET version = version WHERE payment_no = $1 AND version = $2 \
           AND (SELECT reason FROM payment_holds WHERE payment_no = $1) IS NOT DISTINCT FROM $3",
    )
    .bind(payment_no)
    .bind(version)
    .bind(held)
    .execute(&mut *conn)
    .await?;
    Ok(same.rows_affected() == 1)
}

/// The payment's version and hold reason now.
pub async fn version_and_hold<'e>(
    e: impl Executor<'e, Database = Any>,
    payment_no: &str,
) -> sqlx::Result<Option<(i64, Option<String>)>> {
    sqlx::query_as(&format!(
        "SELECT version, {HOLD_REASON} FROM payments WHERE payment_no = $1"
    ))
    .bind(payment_no)
    .fetch_optional(e)
    .await
}

/// The accepted amount, if the payment is still at `version`; returns
/// whether it was.
pub async fn set_amount(
    conn: &mut sqlx::AnyConnection,
    payment_no: &str,
    version: i64,
    amount_minor: i64,
    now: i64,
) -> sqlx::Result<bool> {
    let changed = sqlx::query(
        "UPDATE payments SET amount_minor = $1, version = version + 1, updated_at = $2 \
         WHERE payment_no = $3 AND version = $4",
    )
    .bind(amount_minor)
    .bind(now)
    .bind(payment_no)
    .bind(version)
    .execute(&mut *conn)
    .await?;
    Ok(changed.rows_affected() == 1)
}

/// The moves a piece of evidence (a stored callback) made: from, to,
/// source, at.
pub async fn moves_citing<'e>(
    e: impl Executor<'e, Database = Any>,
    evidence_ref: &str,
) -> sqlx::Result<Vec<(String, String, String, i64)>> {
    sqlx::query_as(
        "SELECT from_status, to_status, source, at FROM payment_status_history WHERE evidence_ref = $1 ORDER BY at",
    )
    .bind(evidence_ref)
    .fetch_all(e)
    .await
}

/// The newest `limit` paid, unheld payments of `provider`: number, amount,
/// currency, transaction id.
pub async fn latest_paid<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    limit: i64,
) -> sqlx::Result<Vec<(String, i64, String, Option<String>)>> {
    sqlx::query_as(&format!(
        "SELECT payment_no, amount_minor, currency, provider_txn_id FROM payments \
         WHERE provider = $1 AND status = '{}' AND {NOT_HELD} \
         ORDER BY created_at DESC LIMIT {limit}",
        Succeeded.as_str()
    ))
    .bind(provider)
    .fetch_all(e)
    .await
}

/// How many payments `created_by` wrote with this description.
pub async fn count_written<'e>(
    e: impl Executor<'e, Database = Any>,
    created_by: &str,
    description: &str,
) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COUNT(*) FROM payments WHERE created_by = $1 AND description = $2")
        .bind(created_by)
        .bind(description)
        .fetch_one(e)
        .await
}
// ---- end of triage and the console ----------------------------------
