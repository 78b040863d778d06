//! The store's own names for the database's types, and what its errors
//! mean: the rest of Reckon names these, never the driver's, and asks the
//! store whether an error is a unique-key refusal or a lost race instead of
//! reading database error codes itself.

/// A storage error: its text is what an operator reads.
pub type Error = sqlx::Error;

/// A storage result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// One connection to the database, whichever backend it is.
pub type Conn = sqlx::AnyConnection;

/// A connection held from the pool until dropped (given back) or closed.
pub type PooledConn = sqlx::pool::PoolConnection<sqlx::Any>;

/// The pool of connections.
pub type Pool = sqlx::AnyPool;

/// A transaction, or a savepoint inside one; rolled back when dropped
/// uncommitted. Derefs to [`Conn`].
pub type Tx<'c> = sqlx::Transaction<'c, sqlx::Any>;

/// A savepoint on `conn` (a transaction when it is in none): what is
/// written through it can be rolled back alone.
pub async fn savepoint(conn: &mut Conn) -> Result<Tx<'_>> {
    sqlx::Connection::begin(conn).await
}

/// A unique key refused the row: it, or one with the same key, is there.
pub fn is_unique_violation(err: &Error) -> bool {
    matches!(err, sqlx::Error::Database(db) if db.is_unique_violation())
}

/// A race another attempt may win: a unique-key collision, SQLite's busy
/// writer lock or stale snapshot, PostgreSQL's serialization failure or
/// deadlock.
pub fn is_retryable(err: &Error) -> bool {
    match err {
        sqlx::Error::Database(db) => {
            db.is_unique_violation()
                || matches!(db.code().as_deref(), Some("5" | "517" | "40001" | "40P01"))
        }
        _ => false,
    }
}

/// PostgreSQL cancelled the transaction for a conflict with another
/// writer (a deadlock or a serialization failure): written again, it goes
/// through.
pub fn is_cancelled_for_conflict(err: &Error) -> bool {
    matches!(err, sqlx::Error::Database(d) if matches!(d.code().as_deref(), Some("40P01" | "40001")))
}

/// A query for exactly one row found none.
pub fn is_not_found(err: &Error) -> bool {
    matches!(err, sqlx::Error::RowNotFound)
}

/// The error of a row that should be there and is not.
pub fn not_found() -> Error {
    sqlx::Error::RowNotFound
}

/// A stored value that cannot be read as what it should be.
pub fn undecodable(reason: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Error {
    sqlx::Error::Decode(reason.into())
}

/// A value that cannot be written as a column's text.
pub fn unencodable(reason: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Error {
    sqlx::Error::Encode(reason.into())
}

/// Rows that contradict each other (one refers to another that is not
/// there).
pub fn inconsistent(reason: String) -> Error {
    sqlx::Error::Protocol(reason)
}

/// A failure to reach the data, with its cause.
pub fn io(cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Error {
    sqlx::Error::Io(std::io::Error::other(cause))
}

/// The worker that wrote for the caller stopped without saying why.
pub fn worker_stopped() -> Error {
    sqlx::Error::WorkerCrashed
}

/// What a caller makes of a storage error, in the manner of a constraint
/// mapping: the refusal it stands for instead of the database's words.
pub trait ResultExt<T> {
    /// `f`'s error when a unique key refused the write; any other error
    /// as it is.
    fn on_unique_violation<E: From<Error>>(self, f: impl FnOnce() -> E) -> Result<T, E>;
}

impl<T> ResultExt<T> for Result<T> {
    fn on_unique_violation<E: From<Error>>(self, f: impl FnOnce() -> E) -> Result<T, E> {
        self.map_err(|e| {
            if is_unique_violation(&e) {
                f()
            } else {
                e.into()
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_unique_refusal_is_recognised_and_mapped() {
        let pool = crate::store::memory_pool().await;
        sqlx::query("CREATE TABLE t (k TEXT PRIMARY KEY)")
            .execute(&pool)
            .await
            .unwrap();
        let insert = || sqlx::query("INSERT INTO t (k) VALUES ('a')").execute(&pool);
        insert().await.unwrap();
        let err = insert().await.unwrap_err();
        assert!(is_unique_violation(&err) && is_retryable(&err));
        assert!(!is_cancelled_for_conflict(&err) && !is_not_found(&err));
        #[derive(Debug, PartialEq)]
        enum Refusal {
            Taken,
            Db(String),
        }
        impl From<Error> for Refusal {
            fn from(e: Error) -> Self {
                Refusal::Db(e.to_string())
            }
        }
        let mapped = insert()
            .await
            .map(|_| ())
            .on_unique_violation(|| Refusal::Taken);
        assert_eq!(mapped, Err(Refusal::Taken));
        let other = sqlx::query("INSERT INTO missing (k) VALUES ('a')")
            .execute(&pool)
            .await
            .map(|_| ())
            .on_unique_violation(|| Refusal::Taken);
        assert!(matches!(other, Err(Refusal::Db(_))));
        assert!(is_not_found(&not_found()));
    }
}
