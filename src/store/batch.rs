//! Where a group commit's multi-row statements run: sqlx's `Any` connection
//! (both databases), or on SQLite the intake writer's own connection
//! ([`Direct`], rusqlite on the writer's thread). One SQL text serves both;
//! the store functions that take `impl Statements` are written once.
//!
//! Why a second connection at all: through `Any` each statement crosses to
//! sqlx's SQLite worker thread and back (its rows one by one), and its
//! arguments and rows are converted twice: about half the single writer's
//! statement time went to that (BENCHMARKS.md, decisions).

use super::DbKind;
use rusqlite::types::{ToSqlOutput, ValueRef};
use std::future::Future;
use std::path::{Path, PathBuf};

/// One statement argument.
#[derive(Clone, Copy, Debug)]
pub enum Arg<'a> {
    Text(Option<&'a str>),
    Int(i64),
    Blob(&'a [u8]),
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(v: &'a str) -> Self {
        Arg::Text(Some(v))
    }
}

impl<'a> From<Option<&'a str>> for Arg<'a> {
    fn from(v: Option<&'a str>) -> Self {
        Arg::Text(v)
    }
}

impl From<i64> for Arg<'_> {
    fn from(v: i64) -> Self {
        Arg::Int(v)
    }
}

impl<'a> From<&'a [u8]> for Arg<'a> {
    fn from(v: &'a [u8]) -> Self {
        Arg::Blob(v)
    }
}

/// One value of a returned row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cell {
    Null,
    Int(i64),
    Text(String),
}

impl Cell {
    pub fn text(self) -> sqlx::Result<String> {
        match self {
            Cell::Text(t) => Ok(t),
            other => Err(sqlx::Error::Decode(
                format!("expected text, got {other:?}").into(),
            )),
        }
    }

    pub fn int(self) -> sqlx::Result<i64> {
        match self {
            Cell::Int(i) => Ok(i),
            other => Err(sqlx::Error::Decode(
                format!("expected an integer, got {other:?}").into(),
            )),
        }
    }
}

/// A connection the multi-row statements run on.
pub trait Statements {
    fn kind(&self) -> DbKind;

    /// Runs a statement; the rows it changed.
    fn execute(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
    ) -> impl Future<Output = sqlx::Result<u64>> + Send;

    /// Runs a statement; every row it returned.
    fn fetch(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
    ) -> impl Future<Output = sqlx::Result<Vec<Vec<Cell>>>> + Send;
}

/// `{head} VALUES (…), (…)` for `rows`: each row's `values`, then the SQL
/// `constants` (`, 'PENDING', 0`, or nothing), in chunks the statement cache
/// keeps ([`super::cached_chunks`]).
pub async fn insert_rows<T, const N: usize>(
    conn: &mut impl Statements,
    head: &str,
    constants: &str,
    rows: &[T],
    values: impl Fn(&T) -> [Arg<'_>; N],
) -> sqlx::Result<()> {
    for chunk in super::cached_chunks(rows, super::ROWS_PER_STATEMENT) {
        let sql = format!(
            "{head} VALUES {}",
            super::Marks::for_kind(conn.kind()).rows(chunk.len(), N, constants)
        );
        let args: Vec<Arg> = chunk.iter().flat_map(&values).collect();
        conn.execute(&sql, &args).await?;
    }
    Ok(())
}

type AnyQuery<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>;

impl<'q> Arg<'q> {
    /// Binds the value to sqlx's query, as its next parameter.
    pub fn bind(self, q: AnyQuery<'q>) -> AnyQuery<'q> {
        match self {
            Arg::Text(t) => q.bind(t),
            Arg::Int(i) => q.bind(i),
            Arg::Blob(b) => q.bind(b),
        }
    }
}

fn bind_all<'q>(sql: &'q str, args: &[Arg<'q>]) -> AnyQuery<'q> {
    args.iter().fold(sqlx::query(sql), |q, a| a.bind(q))
}

impl Statements for sqlx::AnyConnection {
    fn kind(&self) -> DbKind {
        DbKind::of(self)
    }

    async fn execute(&mut self, sql: &str, args: &[Arg<'_>]) -> sqlx::Result<u64> {
        Ok(bind_all(sql, args).execute(self).await?.rows_affected())
    }

    async fn fetch(&mut self, sql: &str, args: &[Arg<'_>]) -> sqlx::Result<Vec<Vec<Cell>>> {
        use sqlx::{Row, ValueRef as _};
        let rows = bind_all(sql, args).fetch_all(self).await?;
        rows.iter()
            .map(|row| {
                (0..row.len())
                    .map(|i| {
                        if row.try_get_raw(i)?.is_null() {
                            return Ok(Cell::Null);
                        }
                        // The statements here return integers and text only.
                        match row.try_get::<i64, _>(i) {
                            Ok(v) => Ok(Cell::Int(v)),
                            Err(_) => row.try_get::<String, _>(i).map(Cell::Text),
                        }
                    })
                    .collect()
            })
            .collect()
    }
}

/// The intake writer's own SQLite connection: the pool's settings, commits
/// that leave the log's sync to the caller (as `sync_log_yourself`), and a
/// statement cache large enough for every chunk size of every statement.
/// Opened at the first write, and again after a write that failed, in case
/// the connection is what broke.
pub struct Direct {
    path: PathBuf,
    open: Option<DirectTx>,
}

/// [`Direct`]'s connection, inside one of its write transactions.
pub struct DirectTx {
    conn: rusqlite::Connection,
}

/// The writer checkpoints the log itself once it passes this many pages
/// (about 16 MB), right after a commit, so its next transaction can start
/// the log over: under a steady stream of batches the background checkpoint
/// never catches up with the last commit, and the log grew without bound.
/// The commit that does it takes some milliseconds more (BENCHMARKS).
pub(crate) const DIRECT_CHECKPOINT_PAGES: u64 = 4000;

fn sqlite_error(e: rusqlite::Error) -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::other(e))
}

impl Direct {
    /// For the database file at `path` (which must exist, migrated).
    pub fn new(path: &Path) -> Direct {
        Direct {
            path: path.to_owned(),
            open: None,
        }
    }

    fn connect(path: &Path) -> sqlx::Result<DirectTx> {
        use rusqlite::OpenFlags;
        let conn = rusqlite::Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(sqlite_error)?;
        for pragma in super::SQLITE_SETTINGS
            .iter()
            .chain(&super::SYNC_LOG_YOURSELF)
        {
            conn.execute_batch(pragma).map_err(sqlite_error)?;
        }
        conn.execute_batch(&format!(
            "PRAGMA wal_autocheckpoint = {DIRECT_CHECKPOINT_PAGES}"
        ))
        .map_err(sqlite_error)?;
        conn.set_prepared_statement_cache_capacity(256);
        Ok(DirectTx { conn })
    }

    /// Runs `work` in one write transaction and commits it (the log not yet
    /// synced: the caller syncs it before telling anyone). On an error,
    /// nothing of it stays.
    pub fn write<T>(
        &mut self,
        work: impl AsyncFnOnce(&mut DirectTx) -> sqlx::Result<T>,
    ) -> sqlx::Result<T> {
        let tx = match &mut self.open {
            Some(tx) => tx,
            None => self.open.insert(Direct::connect(&self.path)?),
        };
        let written = tx.write(work);
        if written.is_err() {
            self.open = None;
        }
        written
    }
}

impl DirectTx {
    fn write<T>(
        &mut self,
        work: impl AsyncFnOnce(&mut DirectTx) -> sqlx::Result<T>,
    ) -> sqlx::Result<T> {
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(sqlite_error)?;
        let done = match at_once(work(self)) {
            Some(done) => done,
            None => Err(sqlx::Error::Protocol(
                "a statement on the direct connection waited".into(),
            )),
        };
        let end = if done.is_ok() { "COMMIT" } else { "ROLLBACK" };
        let t = std::time::Instant::now();
        let ended = self.conn.execute_batch(end);
        tracing::debug!(commit_us = t.elapsed().as_micros() as u64, "direct commit");
        if let Err(e) = ended {
            // A failed COMMIT leaves the transaction open: end it.
            let _ = self.conn.execute_batch("ROLLBACK");
            return Err(sqlite_error(e));
        }
        done
    }

    fn run<T>(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
        then: impl FnOnce(&mut rusqlite::CachedStatement<'_>) -> rusqlite::Result<T>,
    ) -> sqlx::Result<T> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(sqlite_error)?;
        for (i, a) in args.iter().enumerate() {
            stmt.raw_bind_parameter(i + 1, a).map_err(sqlite_error)?;
        }
        then(&mut stmt).map_err(sqlite_error)
    }
}

impl rusqlite::ToSql for Arg<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match *self {
            Arg::Text(Some(t)) => ValueRef::Text(t.as_bytes()),
            Arg::Text(None) => ValueRef::Null,
            Arg::Int(i) => ValueRef::Integer(i),
            Arg::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

impl Statements for DirectTx {
    fn kind(&self) -> DbKind {
        DbKind::Sqlite
    }

    async fn execute(&mut self, sql: &str, args: &[Arg<'_>]) -> sqlx::Result<u64> {
        self.run(sql, args, |stmt| stmt.raw_execute().map(|n| n as u64))
    }

    async fn fetch(&mut self, sql: &str, args: &[Arg<'_>]) -> sqlx::Result<Vec<Vec<Cell>>> {
        self.run(sql, args, |stmt| {
            let cols = stmt.column_count();
            let mut rows = stmt.raw_query();
            let mut out = Vec::new();
            while let Some(row) = rows.next()? {
                let mut cells = Vec::with_capacity(cols);
                for i in 0..cols {
                    cells.push(match row.get_ref(i)? {
                        ValueRef::Null => Cell::Null,
                        ValueRef::Integer(v) => Cell::Int(v),
                        ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
                        other => {
                            return Err(rusqlite::Error::InvalidColumnType(
                                i,
                                format!("{:?}", other.data_type()),
                                other.data_type(),
                            ));
                        }
                    });
                }
                out.push(cells);
            }
            Ok(out)
        })
    }
}

/// Runs `f` to its end in one poll, if it gets there: [`Direct`]'s
/// statements never wait, so work written against [`Statements`] does.
fn at_once<F: Future>(f: F) -> Option<F::Output> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match std::pin::pin!(f).poll(&mut cx) {
        std::task::Poll::Ready(v) => Some(v),
        std::task::Poll::Pending => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{Arg, Cell, Direct, Statements};
    use std::path::PathBuf;

    /// A SQLite file in a directory of its own, with `table` made through
    /// an `Any` connection, which stays open.
    async fn file_with(table: &str) -> (tempfile::TempDir, PathBuf, sqlx::AnyConnection) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let url = format!("sqlite://{}?mode=rwc", path.display());
        sqlx::any::install_default_drivers();
        let mut any = <sqlx::AnyConnection as sqlx::Connection>::connect(&url)
            .await
            .unwrap();
        any.execute(table, &[]).await.unwrap();
        (dir, path, any)
    }

    /// The same statement text returns the same rows on both connections,
    /// and a failed piece of work leaves nothing behind.
    #[tokio::test]
    async fn both_connections_run_one_text_and_a_failed_write_leaves_nothing() {
        let (_dir, path, mut any) =
            file_with("CREATE TABLE t (k TEXT PRIMARY KEY, n INTEGER, b BLOB)").await;
        let mut direct = Direct::new(&path);
        let n = direct
            .write(async |d| {
                d.execute(
                    "INSERT INTO t (k, n, b) VALUES (?, ?, ?), (?, ?, ?)",
                    &[
                        Arg::from("a"),
                        Arg::Int(1),
                        Arg::Blob(b"x"),
                        Arg::Text(Some("b")),
                        Arg::Int(2),
                        Arg::Blob(b""),
                    ],
                )
                .await
            })
            .unwrap();
        assert_eq!(n, 2);
        let failed = direct.write(async |d| {
            d.execute(
                "INSERT INTO t (k, n) VALUES (?, ?)",
                &["c".into(), 3.into()],
            )
            .await?;
            d.execute(
                "INSERT INTO t (k, n) VALUES (?, ?)",
                &["a".into(), 4.into()],
            )
            .await
        });
        assert!(failed.is_err(), "a duplicate key must fail the write");
        let sql = "SELECT k, n FROM t WHERE n >= ? ORDER BY k";
        let want = vec![
            vec![Cell::Text("a".into()), Cell::Int(1)],
            vec![Cell::Text("b".into()), Cell::Int(2)],
        ];
        assert_eq!(any.fetch(sql, &[Arg::Int(0)]).await.unwrap(), want);
        let read = direct
            .write(async |d| d.fetch(sql, &[Arg::Int(0)]).await)
            .unwrap();
        assert_eq!(read, want);
    }

    /// Write after write with no pause, beside another connection: the log
    /// stays near the writer's limit instead of growing with what was
    /// written, and every row is still there.
    #[tokio::test]
    async fn the_log_starts_over_under_a_steady_stream_of_writes() {
        let (_dir, path, mut any) = file_with("CREATE TABLE t (k TEXT PRIMARY KEY, b BLOB)").await;
        let wal = super::super::wal_of(&path);
        let blob = vec![7u8; 3000];
        let (writes, rows) = (3_000u32, 4u32);
        let mut largest = 0;
        let mut direct = Direct::new(&path);
        for w in 0..writes {
            direct
                .write(async |d| {
                    for r in 0..rows {
                        // Keys out of order, as payments' are.
                        let k = format!("{:08x}", (w * rows + r).wrapping_mul(2_654_435_761u32));
                        d.execute(
                            "INSERT INTO t (k, b) VALUES (?, ?)",
                            &[Arg::from(k.as_str()), Arg::Blob(&blob)],
                        )
                        .await?;
                    }
                    Ok(())
                })
                .unwrap();
            largest = largest.max(std::fs::metadata(&wal).unwrap().len());
        }
        let page = 4096 + 24;
        let written = u64::from(writes * rows) * blob.len() as u64;
        assert!(
            written > 2 * super::DIRECT_CHECKPOINT_PAGES * 4096,
            "the test must write more than twice the limit: {written} bytes"
        );
        assert!(
            largest < (super::DIRECT_CHECKPOINT_PAGES + 100) * page,
            "the log grew to {largest} bytes, past the writer's limit"
        );
        let n = any.fetch("SELECT count(*) FROM t", &[]).await.unwrap();
        assert_eq!(n, vec![vec![Cell::Int(i64::from(writes * rows))]]);
    }
}
