//! The `refunds` and `refund_ledger` tables, and the refund columns of
//! `payments` (refunded and reserved amounts). Every change is one guarded
//! UPDATE: the WHERE clause is the rule, so no read-then-write races.

use crate::domain::PaymentStatus::{self, Refunding};
use crate::domain::{Mover, RefundStatus};
use crate::store::payments;
use sqlx::{Any, AnyConnection, Executor};

/// The serde derives are for the engine, which keeps a refund it took as
/// JSON under the merchant's idempotency key and reads it back for a repeat.
#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize, serde::Deserialize)]
pub struct RefundRow {
    pub refund_no: String,
    pub payment_no: String,
    pub provider: String,
    pub amount_minor: i64,
    pub currency: String,
    pub status: String,
    pub provider_refund_id: Option<String>,
    pub reason: String,
    pub requested_by: String,
    pub version: i64,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub finished_at: Option<i64>,
}

const COLUMNS: &str = "refund_no, payment_no, provider, amount_minor, currency, status, provider_refund_id, \
     reason, requested_by, version, last_error, created_at, updated_at, finished_at";

pub async fn get<'e>(
    e: impl Executor<'e, Database = Any>,
    refund_no: &str,
) -> sqlx::Result<Option<RefundRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM refunds WHERE refund_no = $1"
    ))
    .bind(refund_no)
    .fetch_optional(e)
    .await
}

pub async fn by_provider_id<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    provider_refund_id: &str,
) -> sqlx::Result<Option<RefundRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM refunds WHERE provider = $1 AND provider_refund_id = $2"
    ))
    .bind(provider)
    .bind(provider_refund_id)
    .fetch_optional(e)
    .await
}

pub async fn of_payment<'e>(
    e: impl Executor<'e, Database = Any>,
    payment_no: &str,
) -> sqlx::Result<Vec<RefundRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM refunds WHERE payment_no = $1 ORDER BY created_at, refund_no"
    ))
    .bind(payment_no)
    .fetch_all(e)
    .await
}

pub struct NewRefund<'a> {
    pub refund_no: &'a str,
    pub payment_no: &'a str,
    pub provider: &'a str,
    pub amount_minor: i64,
    pub currency: &'a str,
    pub idem_scope: &'a str,
    pub idem_key: &'a str,
    pub reason: &'a str,
    pub requested_by: &'a str,
    pub now: i64,
}

pub async fn insert<'e>(
    e: impl Executor<'e, Database = Any>,
    r: &NewRefund<'_>,
) -> sqlx::Result<()> {
    sqlx::query(&format!(
        "INSERT INTO refunds (refund_no, payment_no, provider, amount_minor, currency, status, idem_scope, idem_key, \
           reason, requested_by, version, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, '{}', $6, $7, $8, $9, 0, $10, $10)",
        RefundStatus::Requested.as_str()
    ))
    .bind(r.refund_no)
    .bind(r.payment_no)
    .bind(r.provider)
    .bind(r.amount_minor)
    .bind(r.currency)
    .bind(r.idem_scope)
    .bind(r.idem_key)
    .bind(r.reason)
    .bind(r.requested_by)
    .bind(r.now)
    .execute(e)
    .await?;
    Ok(())
}

/// Reserves `amount` on a payment that can still give it back (the refund
/// ledger's moves to REFUNDING: SUCCEEDED or REFUNDING), same currency, and
/// `amount - refunded - reserved >= amount`. Moves it to REFUNDING.
/// Returns the status it had, or `None` when the guard refused.
pub async fn reserve<'e>(
    e: impl Executor<'e, Database = Any>,
    payment_no: &str,
    amount_minor: i64,
    currency: &str,
    now: i64,
) -> sqlx::Result<Option<PaymentStatus>> {
    let prev: Option<String> = sqlx::query_scalar(&format!(
        "UPDATE payments SET reserved_minor = reserved_minor + $2, prev_status = status, status = '{}', \
           version = version + 1, updated_at = $4 \
         WHERE payment_no = $1 AND status IN ({}) AND currency = $3 \
           AND {} \
           AND amount_minor - refunded_minor - reserved_minor >= $2 \
         RETURNING prev_status",
        Refunding.as_str(),
        payments::in_list(&PaymentStatus::predecessors(Refunding, Mover::Refund)),
        payments::NOT_HELD
    ))
    .bind(payment_no)
    .bind(amount_minor)
    .bind(currency)
    .bind(now)
    .fetch_optional(e)
    .await?;
    prev.map(payments::status).transpose()
}

/// Reserves the whole amount of a FAILED or CLOSED payment the provider
/// nevertheless took (PAID_AFTER_CLOSE), for an approved refund of it (the
/// late refund's moves to REFUNDING): binds the provider's transaction (the
/// refund call names it) and moves the payment to REFUNDING, so the refund
/// ledger settles it as any other (REFUNDED when the provider confirms).
/// `prev_status` keeps FAILED or CLOSED while the refund is in flight —
/// nothing else can reserve on it or move it meanwhile — and
/// [`settle_reservation`] goes back to it when the refund fails. Returns the
/// status it had, or `None` when the guard refused (moved, held, nothing
/// refunded before it, another transaction).
pub async fn reserve_late_success<'e>(
    e: impl Executor<'e, Database = Any>,
    payment_no: &str,
    provider_txn_id: Option<&str>,
    now: i64,
) -> sqlx::Result<Option<PaymentStatus>> {
    let prev: Option<String> = sqlx::query_scalar(&format!(
        "UPDATE payments SET reserved_minor = amount_minor, prev_status = status, status = '{}', \
           provider_txn_id = COALESCE(provider_txn_id, $2), version = version + 1, updated_at = $3 \
         WHERE payment_no = $1 AND status IN ({}) AND refunded_minor = 0 AND reserved_minor = 0 \
           AND {} \
           AND ($2 IS NULL OR provider_txn_id IS NULL OR provider_txn_id = $2) \
         RETURNING prev_status",
        Refunding.as_str(),
        payments::in_list(&PaymentStatus::predecessors(Refunding, Mover::LateRefund)),
        payments::NOT_HELD
    ))
    .bind(payment_no)
    .bind(provider_txn_id)
    .bind(now)
    .fetch_optional(e)
    .await?;
    prev.map(payments::status).transpose()
}

/// A payment's refund figures.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Balance {
    #[sqlx(try_from = "String")]
    pub status: PaymentStatus,
    pub amount_minor: i64,
    pub refunded_minor: i64,
    pub reserved_minor: i64,
    pub currency: String,
}

pub async fn balance<'e>(
    e: impl Executor<'e, Database = Any>,
    payment_no: &str,
) -> sqlx::Result<Option<Balance>> {
    sqlx::query_as(
        "SELECT status, amount_minor, refunded_minor, reserved_minor, currency FROM payments WHERE payment_no = $1",
    )
    .bind(payment_no)
    .fetch_optional(e)
    .await
}

/// Moves a refund to `to` from any state the table allows; sets the
/// provider's refund id when it was not known. Returns whether it moved.
pub async fn guarded_move<'e>(
    e: impl Executor<'e, Database = Any>,
    refund_no: &str,
    to: RefundStatus,
    provider_refund_id: Option<&str>,
    error: Option<&str>,
    now: i64,
) -> sqlx::Result<bool> {
    let from: Vec<String> = RefundStatus::predecessors(to)
        .iter()
        .map(|s| format!("'{}'", s.as_str()))
        .collect();
    if from.is_empty() {
        return Ok(false);
    }
    let done = sqlx::query(&format!(
        "UPDATE refunds SET status = $2, provider_refund_id = COALESCE(provider_refund_id, $3), \
           last_error = COALESCE($4, last_error), version = version + 1, updated_at = $5, \
           finished_at = COALESCE($6, finished_at) \
         WHERE refund_no = $1 AND status IN ({})",
        from.join(", ")
    ))
    .bind(refund_no)
    .bind(to.as_str())
    .bind(provider_refund_id)
    .bind(error)
    .bind(now)
    .bind(to.is_final().then_some(now))
    .execute(e)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Records the provider's id of a refund that has not moved (yet).
pub async fn set_provider_id<'e>(
    e: impl Executor<'e, Database = Any>,
    refund_no: &str,
    provider_refund_id: &str,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE refunds SET provider_refund_id = $2, updated_at = $3 WHERE refund_no = $1 AND provider_refund_id IS NULL",
    )
    .bind(refund_no)
    .bind(provider_refund_id)
    .bind(now)
    .execute(e)
    .await?;
    Ok(())
}

/// The payment side of a settled refund, in one guarded UPDATE. `refunded`:
/// the reservation becomes refunded; otherwise it is released. The status it
/// goes to is the table's ([`PaymentStatus::after_refund_settled`]): REFUNDED
/// once all is refunded, REFUNDING while other reservations remain, else
/// back to the status it began from when the table lets a late refund start
/// there (FAILED, CLOSED), or SUCCEEDED. Returns (from, to), or `None` when
/// the reservation is not there (never expected: the caller rolls back).
pub async fn settle_reservation(
    conn: &mut AnyConnection,
    payment_no: &str,
    amount_minor: i64,
    refunded: bool,
    now: i64,
) -> sqlx::Result<Option<(PaymentStatus, PaymentStatus)>> {
    let add = if refunded { "$2" } else { "0" };
    let back_to = payments::in_list(&PaymentStatus::predecessors(Refunding, Mover::LateRefund));
    let moved: Option<(String, String)> = sqlx::query_as(&format!(
        "UPDATE payments SET refunded_minor = refunded_minor + {add}, reserved_minor = reserved_minor - $2, \
           prev_status = status, \
           status = CASE WHEN refunded_minor + {add} >= amount_minor THEN '{refunded_word}' \
                         WHEN reserved_minor - $2 > 0 THEN '{refunding}' \
                         WHEN prev_status IN ({back_to}) THEN prev_status ELSE '{succeeded}' END, \
           version = version + 1, updated_at = $3 \
         WHERE payment_no = $1 AND status = '{refunding}' AND reserved_minor >= $2 \
         RETURNING prev_status, status",
        refunded_word = PaymentStatus::Refunded.as_str(),
        refunding = Refunding.as_str(),
        succeeded = PaymentStatus::Succeeded.as_str(),
    ))
    .bind(payment_no)
    .bind(amount_minor)
    .bind(now)
    .fetch_optional(&mut *conn)
    .await?;
    moved
        .map(|(from, to)| Ok((payments::status(from)?, payments::status(to)?)))
        .transpose()
}

pub struct LedgerEntry<'a> {
    pub refund_no: &'a str,
    pub payment_no: &'a str,
    pub amount_minor: i64,
    pub currency: &'a str,
    pub source: &'a str,
    pub evidence: &'a str,
    pub now: i64,
}

/// One ledger row per refund; false when it was already there.
pub async fn insert_ledger<'e>(
    e: impl Executor<'e, Database = Any>,
    l: &LedgerEntry<'_>,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "INSERT INTO refund_ledger (refund_no, payment_no, amount_minor, currency, source, evidence_ref, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (refund_no) DO NOTHING",
    )
    .bind(l.refund_no)
    .bind(l.payment_no)
    .bind(l.amount_minor)
    .bind(l.currency)
    .bind(l.source)
    .bind(l.evidence)
    .bind(l.now)
    .execute(e)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The payment a provider transaction belongs to.
pub async fn payment_of_txn<'e>(
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

// ---- The console ----------------------------------------------------

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct LedgerRow {
    pub refund_no: String,
    pub amount_minor: i64,
    pub currency: String,
    pub source: String,
    pub evidence_ref: String,
    pub created_at: i64,
}

/// The refund ledger of a payment, oldest first.
pub async fn ledger_of<'e>(
    e: impl Executor<'e, Database = Any>,
    payment_no: &str,
) -> sqlx::Result<Vec<LedgerRow>> {
    sqlx::query_as(
        "SELECT refund_no, amount_minor, currency, source, evidence_ref, created_at FROM refund_ledger \
         WHERE payment_no = $1 ORDER BY created_at",
    )
    .bind(payment_no)
    .fetch_all(e)
    .await
}
// ---- end of the console ---------------------------------------------
