//! What a reconciliation reads of tables other modules write: one
//! provider's payments and refunds of a business day, the payments and
//! refunds a statement's rows name, and what a STATUS_LAG repair needs of a
//! payment (its provider and transaction, its stored verified callbacks).
//! On SQLite the long reads run on a read-only connection of their own
//! ([`super::scan`]), whose small page cache they cannot swell.

use super::DbKind;
use super::scan::{Bind, ReadOnly};
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

/// `provider`'s payments paid in `[from, to)` (minutes at a day's cut, by
/// the `payments_day` index): payment_no, transaction id, when it was paid.
const PAID_BETWEEN: &str = "SELECT payment_no, provider_txn_id, paid_at FROM payments \
     WHERE provider = $1 AND paid_at >= $2 AND paid_at < $3";

/// [`PAID_BETWEEN`] through the pool.
pub async fn paid_between<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    (from, to): (i64, i64),
) -> sqlx::Result<Vec<(String, Option<String>, i64)>> {
    sqlx::query_as(PAID_BETWEEN)
        .bind(provider)
        .bind(from)
        .bind(to)
        .fetch_all(e)
        .await
}

/// [`PAID_BETWEEN`] on a read-only SQLite connection, each row handed to
/// `each` (payment_no, transaction id, paid at). Blocking.
pub fn paid_between_on(
    conn: &ReadOnly,
    provider: &str,
    (from, to): (i64, i64),
    mut each: impl FnMut(&str, Option<&str>, i64),
) -> Result<(), String> {
    let binds = [Bind::Text(provider), Bind::Int(from), Bind::Int(to)];
    conn.each_row(PAID_BETWEEN, &binds, |r| {
        each(
            r.text(0).unwrap_or_default(),
            r.text(1),
            r.int(2).unwrap_or_default(),
        )
    })?;
    Ok(())
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

/// [`DAY_PAYMENTS`] on PostgreSQL, `provider`'s payments paid or made in
/// `[from, to)`, each handed to `each`: by `COPY … TO STDOUT` in binary on a
/// connection of its own, opened with the pool's options (a million rows
/// row by row through `Any` took seconds: each value is boxed, each row a
/// message to decode).
pub async fn day_payments_copy(
    pool: &AnyPool,
    provider: &str,
    (from, to): (i64, i64),
    mut each: impl FnMut(DayPayment<'_>),
) -> sqlx::Result<()> {
    use futures_util::TryStreamExt;
    use sqlx::Connection;
    let options = sqlx::postgres::PgConnectOptions::try_from(&*pool.connect_options())?;
    let mut conn = sqlx::postgres::PgConnection::connect_with(&options).await?;
    // COPY takes no parameters: the provider goes in as a quoted literal
    // (standard strings: only its quotes are doubled), the range as numbers.
    let provider = format!("'{}'", provider.replace('\'', "''"));
    for sql in DAY_PAYMENTS {
        let select = sql
            .replace("$1", &provider)
            .replace("$2", &from.to_string())
            .replace("$3", &to.to_string());
        let copy = format!("COPY ({select}) TO STDOUT (FORMAT binary)");
        let mut rows = CopyBinary::default();
        let mut stream = conn.copy_out_raw(&copy).await?;
        while let Some(bytes) = stream.try_next().await? {
            rows.feed(&bytes, &mut each)
                .map_err(sqlx::Error::Protocol)?;
        }
        drop(stream);
        if !rows.ended() {
            return Err(sqlx::Error::Protocol(
                "COPY of the day's payments ended without its trailer".into(),
            ));
        }
    }
    conn.close().await
}

/// PostgreSQL's binary COPY format, read as its messages arrive (one a
/// row, but a row may span two): the header, then per row a field count
/// and each field's length (-1: NULL) and bytes, then a count of -1.
#[derive(Default)]
struct CopyBinary {
    /// Bytes of a row not yet whole.
    pending: Vec<u8>,
    header: bool,
    ended: bool,
}

const COPY_SIGNATURE: &[u8] = b"PGCOPY\n\xff\r\n\0";

impl CopyBinary {
    fn ended(&self) -> bool {
        self.ended
    }

    fn feed(&mut self, bytes: &[u8], each: &mut impl FnMut(DayPayment<'_>)) -> Result<(), String> {
        if self.pending.is_empty() {
            let used = self.rows(bytes, each)?;
            self.pending.extend_from_slice(&bytes[used..]);
        } else {
            let mut pending = std::mem::take(&mut self.pending);
            pending.extend_from_slice(bytes);
            let used = self.rows(&pending, each)?;
            pending.drain(..used);
            self.pending = pending;
        }
        Ok(())
    }

    /// Reads the whole rows at the start of `b`; how many bytes they took.
    fn rows(&mut self, b: &[u8], each: &mut impl FnMut(DayPayment<'_>)) -> Result<usize, String> {
        let mut at = 0;
        if !self.header {
            let fixed = COPY_SIGNATURE.len() + 8;
            if b.len() < fixed {
                return Ok(0);
            }
            if &b[..COPY_SIGNATURE.len()] != COPY_SIGNATURE {
                return Err("COPY's binary header is not PostgreSQL's".into());
            }
            let extension = be_i32(&b[fixed - 4..]).max(0) as usize;
            if b.len() < fixed + extension {
                return Ok(0);
            }
            at = fixed + extension;
            self.header = true;
        }
        while !self.ended && b.len() >= at + 2 {
            let count = i16::from_be_bytes([b[at], b[at + 1]]);
            if count == -1 {
                self.ended = true;
                return Ok(at + 2);
            }
            if count != 5 {
                return Err(format!("COPY sent a row of {count} fields, not 5"));
            }
            let mut fields: [Option<&[u8]>; 5] = [None; 5];
            let mut p = at + 2;
            let mut whole = true;
            for field in &mut fields {
                if b.len() < p + 4 {
                    whole = false;
                    break;
                }
                let len = be_i32(&b[p..]);
                p += 4;
                if len < 0 {
                    continue;
                }
                let len = len as usize;
                if b.len() < p + len {
                    whole = false;
                    break;
                }
                *field = Some(&b[p..p + len]);
                p += len;
            }
            if !whole {
                break;
            }
            let text = copy_text;
            let amount = match fields[2] {
                Some(v) if v.len() == 8 => i64::from_be_bytes(v.try_into().expect("8 bytes")),
                Some(v) if v.len() == 4 => i64::from(be_i32(v)),
                _ => return Err("COPY sent an amount that is not an integer".into()),
            };
            each(DayPayment {
                payment_no: text(fields[0])?.unwrap_or_default(),
                provider_txn_id: text(fields[1])?,
                amount_minor: amount,
                currency: text(fields[3])?.unwrap_or_default(),
                status: text(fields[4])?.unwrap_or_default(),
            });
            at = p;
        }
        Ok(at)
    }
}

fn copy_text(f: Option<&[u8]>) -> Result<Option<&str>, String> {
    f.map(|t| {
        std::str::from_utf8(t).map_err(|e| format!("COPY sent a text that is not UTF-8: {e}"))
    })
    .transpose()
}

fn be_i32(b: &[u8]) -> i32 {
    i32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Which identifier of a payment a lookup is by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PaymentKey {
    PaymentNo,
    ProviderTxnId,
    /// The merchant's order (the `reference` key): every attempt of it.
    OrderNo,
}

impl PaymentKey {
    fn column(self) -> &'static str {
        match self {
            PaymentKey::PaymentNo => "payment_no",
            PaymentKey::ProviderTxnId => "provider_txn_id",
            PaymentKey::OrderNo => "order_no",
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

#[cfg(test)]
mod tests {
    use super::*;

    fn text(b: &mut Vec<u8>, t: Option<&str>) {
        match t {
            Some(t) => {
                b.extend_from_slice(&(t.len() as i32).to_be_bytes());
                b.extend_from_slice(t.as_bytes());
            }
            None => b.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }

    /// A binary COPY of `rows` as PostgreSQL sends it: header (with an
    /// extension area), rows, trailer.
    fn copy_of(rows: &[(&str, Option<&str>, i64, &str, &str)]) -> Vec<u8> {
        let mut b = COPY_SIGNATURE.to_vec();
        b.extend_from_slice(&0i32.to_be_bytes());
        b.extend_from_slice(&3i32.to_be_bytes());
        b.extend_from_slice(b"ext");
        for (no, txn, amount, currency, status) in rows {
            b.extend_from_slice(&5i16.to_be_bytes());
            text(&mut b, Some(no));
            text(&mut b, *txn);
            b.extend_from_slice(&8i32.to_be_bytes());
            b.extend_from_slice(&amount.to_be_bytes());
            text(&mut b, Some(currency));
            text(&mut b, Some(status));
        }
        b.extend_from_slice(&(-1i16).to_be_bytes());
        b
    }

    #[test]
    fn a_binary_copy_is_read_however_its_messages_split_it() {
        let rows = [
            ("P1", Some("T1"), 100, "CNY", "SUCCEEDED"),
            ("P2", None, 1 << 40, "USD", "PENDING"),
            ("P3\t\\", Some("T\u{e9}3"), 7, "EUR", "CREATED"),
        ];
        let bytes = copy_of(&rows);
        for size in [1, 2, 3, 7, 19, 64, bytes.len()] {
            let mut copy = CopyBinary::default();
            let mut got = Vec::new();
            for part in bytes.chunks(size) {
                copy.feed(part, &mut |p: DayPayment<'_>| {
                    got.push((
                        p.payment_no.to_owned(),
                        p.provider_txn_id.map(str::to_owned),
                        p.amount_minor,
                        p.currency.to_owned(),
                        p.status.to_owned(),
                    ))
                })
                .unwrap();
            }
            assert!(copy.ended(), "split by {size}");
            let want: Vec<_> = rows
                .iter()
                .map(|(n, t, a, c, s)| {
                    (
                        n.to_string(),
                        t.map(str::to_owned),
                        *a,
                        c.to_string(),
                        s.to_string(),
                    )
                })
                .collect();
            assert_eq!(got, want, "split by {size}");
        }
    }

    #[test]
    fn a_copy_that_is_not_the_day_s_payments_is_refused() {
        let mut copy = CopyBinary::default();
        let e = copy.feed(b"PGCOPY\n\xff\r\n\x01\0\0\0\0\0\0\0\0", &mut |_| {});
        assert!(e.is_err_and(|e| e.contains("header")));
        let mut bytes = copy_of(&[]);
        let trailer = bytes.len() - 2;
        bytes[trailer..].copy_from_slice(&4i16.to_be_bytes());
        let mut copy = CopyBinary::default();
        let e = copy.feed(&bytes, &mut |_| {});
        assert!(
            e.is_err_and(|e| e.contains("4 fields")),
            "a row of four fields"
        );
    }
}
