//! What a reconciliation reads of tables other modules write: one
//! provider's payments and refunds of a business day, the payments and
//! refunds a statement's rows name, and what a STATUS_LAG repair needs of a
//! payment (its provider and transaction, its stored verified callbacks).
//! On SQLite the long reads run on a read-only connection of their own
//! ([`super::scan`]), whose small page cache they cannot swell.

use super::DbKind;
use super::scan::{Bind, ReadOnly};
use futures_util::Stream;
use sqlx::{Any, AnyPool, Executor, QueryBuilder};

/// One provider's payments of one business day `[$2, $3)`: paid that day,
/// or never paid and made that day — two statements, each one range of
/// the `payments_day` index (`(provider, paid_at, created_at)`), so a run
/// reads the day, not the provider's history. (As one statement with
/// `OR`, SQLite kept every rowid of the first range in a set to test the
/// second's against, and the read took longer. The two never share a
/// payment: `paid_at` is set or not.)
pub const DAY_PAYMENTS: [&str; 2] = [
    "SELECT payment_no, provider_txn_id, amount_minor, currency, status FROM payments \
     WHERE provider = $1 AND paid_at >= $2 AND paid_at < $3",
    "SELECT payment_no, provider_txn_id, amount_minor, currency, status FROM payments \
     WHERE provider = $1 AND paid_at IS NULL AND created_at >= $2 AND created_at < $3",
];

/// The refunds of one provider that succeeded on one business day, by the
/// `refunds_day` index.
pub const DAY_REFUNDS: &str = "SELECT refund_no, payment_no, amount_minor, currency, status, finished_at FROM refunds \
     WHERE provider = $1 AND status = 'SUCCEEDED' AND finished_at >= $2 AND finished_at < $3";

/// How many payments and refunds of one provider a business day has in
/// Reckon: paid or finished that day, or made that day and not (yet) paid
/// or finished — what [`DAY_PAYMENTS`] reads, and the refunds beside them.
pub async fn count_business_of_day<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    (start, end): (i64, i64),
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT (SELECT COUNT(*) FROM payments WHERE provider = $1 AND paid_at >= $2 AND paid_at < $3) \
              + (SELECT COUNT(*) FROM payments WHERE provider = $1 AND paid_at IS NULL \
                   AND created_at >= $2 AND created_at < $3) \
              + (SELECT COUNT(*) FROM refunds WHERE provider = $1 AND finished_at >= $2 AND finished_at < $3) \
              + (SELECT COUNT(*) FROM refunds WHERE provider = $1 AND finished_at IS NULL \
                   AND created_at >= $2 AND created_at < $3)",
    )
    .bind(provider)
    .bind(start)
    .bind(end)
    .fetch_one(e)
    .await
}

/// `provider`'s payments paid in `[from, to)` (a few minutes at a day's
/// cut, by the `payments_day` index): payment_no and when it was paid.
pub async fn paid_between<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    (from, to): (i64, i64),
) -> sqlx::Result<Vec<(String, i64)>> {
    sqlx::query_as(
        "SELECT payment_no, paid_at FROM payments WHERE provider = $1 AND paid_at >= $2 AND paid_at < $3",
    )
    .bind(provider)
    .bind(from)
    .bind(to)
    .fetch_all(e)
    .await
}

/// Keys looked up per `IN (…)` list.
pub const KEYS_PER_STATEMENT: usize = 128;

/// A payment of the day, borrowed from the row being read.
pub struct DayPayment<'r> {
    pub payment_no: &'r str,
    pub provider_txn_id: Option<&'r str>,
    pub amount_minor: i64,
    pub currency: &'r str,
    pub status: &'r str,
}

/// The day's payments of `provider` paid or made in `[from, to)`, on a
/// read-only SQLite connection, each handed to `each`. Blocking.
pub fn day_payments_on(
    conn: &ReadOnly,
    provider: &str,
    (from, to): (i64, i64),
    mut each: impl FnMut(DayPayment<'_>),
) -> Result<(), String> {
    let binds = [Bind::Text(provider), Bind::Int(from), Bind::Int(to)];
    for sql in DAY_PAYMENTS {
        conn.each_row(sql, &binds, |r| {
            each(DayPayment {
                payment_no: r.text(0).unwrap_or_default(),
                provider_txn_id: r.text(1),
                amount_minor: r.int(2).unwrap_or_default(),
                currency: r.text(3).unwrap_or_default(),
                status: r.text(4).unwrap_or_default(),
            })
        })?;
    }
    Ok(())
}

/// A payment of the day as the pool reads it: payment_no, transaction id,
/// amount, currency, status.
pub type DayPaymentRow = (String, Option<String>, i64, String, String);

/// [`day_payments_on`] through the pool (PostgreSQL), streamed: the
/// payments paid that day, then those made that day and not paid.
pub fn day_payments<'a>(
    pool: &'a AnyPool,
    provider: &'a str,
    (from, to): (i64, i64),
) -> impl Stream<Item = sqlx::Result<DayPaymentRow>> + Send + 'a {
    use futures_util::StreamExt;
    let [paid, unpaid] = DAY_PAYMENTS;
    let read = move |sql: &'static str| {
        sqlx::query_as(sql)
            .bind(provider)
            .bind(from)
            .bind(to)
            .fetch(pool)
    };
    read(paid).chain(read(unpaid))
}

/// Which identifier of a payment a lookup is by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PaymentKey {
    PaymentNo,
    ProviderTxnId,
}

impl PaymentKey {
    fn column(self) -> &'static str {
        match self {
            PaymentKey::PaymentNo => "payment_no",
            PaymentKey::ProviderTxnId => "provider_txn_id",
        }
    }
}

/// A payment a statement row names, whichever provider's it is: the
/// caller checks (with `provider =` beside the list SQLite walks the
/// provider's whole index).
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct NamedPayment {
    pub payment_no: String,
    pub order_no: Option<String>,
    pub amount_minor: i64,
    pub currency: String,
    pub status: String,
    pub provider_txn_id: Option<String>,
    pub created_at: i64,
    pub provider: String,
    pub paid_at: Option<i64>,
}

const NAMED_COLUMNS: &str = "payment_no, order_no, amount_minor, currency, status, provider_txn_id, created_at, provider, paid_at";

/// The payments whose `key` is one of `keys`, on a read-only SQLite
/// connection, each handed to `each`. Blocking.
pub fn payments_by_on(
    conn: &ReadOnly,
    key: PaymentKey,
    keys: &[String],
    mut each: impl FnMut(NamedPayment),
) -> Result<(), String> {
    for chunk in keys.chunks(KEYS_PER_STATEMENT) {
        let list: Vec<String> = (1..=chunk.len()).map(|k| format!("${k}")).collect();
        let sql = format!(
            "SELECT {NAMED_COLUMNS} FROM payments WHERE {} IN ({})",
            key.column(),
            list.join(", ")
        );
        let binds: Vec<Bind> = chunk.iter().map(|k| Bind::Text(k)).collect();
        conn.each_row(&sql, &binds, |r| {
            let text = |i| r.text(i).map(str::to_owned);
            each(NamedPayment {
                payment_no: text(0).unwrap_or_default(),
                order_no: text(1),
                amount_minor: r.int(2).unwrap_or_default(),
                currency: text(3).unwrap_or_default(),
                status: text(4).unwrap_or_default(),
                provider_txn_id: text(5),
                created_at: r.int(6).unwrap_or_default(),
                provider: text(7).unwrap_or_default(),
                paid_at: r.int(8),
            })
        })?;
    }
    Ok(())
}

/// `SELECT {columns} FROM {table} WHERE {column} IN (…keys…){tail}`.
fn in_list(
    columns: &str,
    table: &str,
    column: &str,
    keys: &[&str],
    tail: &str,
) -> QueryBuilder<'static, Any> {
    let mut q = QueryBuilder::new(format!("SELECT {columns} FROM {table} WHERE {column} IN ("));
    let mut list = q.separated(", ");
    for key in keys {
        list.push_bind((*key).to_owned());
    }
    q.push(")").push(tail);
    q
}

/// [`payments_by_on`] through the pool.
pub async fn payments_by(
    pool: &AnyPool,
    kind: DbKind,
    key: PaymentKey,
    keys: &[&str],
) -> sqlx::Result<Vec<NamedPayment>> {
    let mut out = Vec::new();
    for chunk in keys.chunks(KEYS_PER_STATEMENT) {
        let q = in_list(NAMED_COLUMNS, "payments", key.column(), chunk, "");
        out.extend(super::fetch_all_built(pool, kind, q).await?);
    }
    Ok(out)
}

/// A refund as reconciliation compares it with a statement's.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Refund {
    pub refund_no: String,
    pub payment_no: String,
    pub amount_minor: i64,
    pub currency: String,
    pub status: String,
    /// When it succeeded or failed (the business day of a succeeded one).
    pub finished_at: Option<i64>,
}

/// The refunds numbered `nos`, whatever their state.
pub async fn refunds_by_no(
    pool: &AnyPool,
    kind: DbKind,
    nos: &[&str],
) -> sqlx::Result<Vec<Refund>> {
    let mut out = Vec::new();
    for chunk in nos.chunks(KEYS_PER_STATEMENT) {
        let q = in_list(
            "refund_no, payment_no, amount_minor, currency, status, finished_at",
            "refunds",
            "refund_no",
            chunk,
            "",
        );
        out.extend(super::fetch_all_built(pool, kind, q).await?);
    }
    Ok(out)
}

/// [`DAY_REFUNDS`]: `provider`'s refunds that succeeded in `[from, to)`.
pub async fn day_refunds<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    (from, to): (i64, i64),
) -> sqlx::Result<Vec<Refund>> {
    sqlx::query_as(DAY_REFUNDS)
        .bind(provider)
        .bind(from)
        .bind(to)
        .fetch_all(e)
        .await
}

/// What a repair needs of a payment: the transaction it is bound to, if
/// any, and its provider.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Bound {
    pub payment_no: String,
    pub provider_txn_id: Option<String>,
    pub provider: String,
}

/// The payments numbered `nos` (a worker's batch: one statement).
pub async fn bound_payments(
    pool: &AnyPool,
    kind: DbKind,
    nos: &[&str],
) -> sqlx::Result<Vec<Bound>> {
    let q = in_list(
        "payment_no, provider_txn_id, provider",
        "payments",
        "payment_no",
        nos,
        "",
    );
    super::fetch_all_built(pool, kind, q).await
}

/// A verified callback kept for a payment, as a repair replays it.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct StoredCallback {
    pub payment_no: String,
    pub id: String,
    pub headers_json: String,
    pub payload: Vec<u8>,
    pub trace_id: String,
    pub provider: String,
}

/// The verified payment callbacks stored for the payments `nos` (a
/// worker's batch: one statement), by payment, oldest first.
pub async fn verified_callbacks(
    pool: &AnyPool,
    kind: DbKind,
    nos: &[&str],
) -> sqlx::Result<Vec<StoredCallback>> {
    let q = in_list(
        "payment_no, id, headers_json, payload, trace_id, provider",
        "payment_callbacks",
        "payment_no",
        nos,
        " AND verify_result = 'VERIFIED' AND refund_no IS NULL ORDER BY payment_no, received_at",
    );
    super::fetch_all_built(pool, kind, q).await
}
