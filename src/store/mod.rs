//! Storage: one `sqlx::AnyPool` over SQLite (the embedded default) or
//! PostgreSQL, the embedded migrations, and the SQL of each table in its own
//! module. SQL lives here and nowhere else; one text serves both backends.

pub mod adjustments;
pub mod ageing;
pub mod alert_dispatch;
pub mod alerts;
pub mod approvals;
pub mod audit;
pub mod audit_keys;
pub mod bank;
pub mod batch;
pub mod bulk;
pub mod callbacks;
pub mod closes;
pub mod config_versions;
pub mod disputes;
mod error;
pub mod gauges;
pub mod held_actions;
pub mod idempotency;
pub mod leader;
pub mod lists;
pub mod match_groups;
pub mod nonces;
pub mod oidc;
pub mod outbox;
pub mod outbox_ops;
pub mod payments;
pub mod pipeline;
pub mod policy;
pub mod proposals;
pub mod recon_edges;
pub mod recon_reads;
pub mod recon_runs;
pub mod refunds;
pub mod refused;
pub mod replay_jobs;
pub mod report_pushes;
pub mod scan;
pub mod settlements;
pub mod sinks;
pub mod statement_files;
pub mod statement_pulls;
pub mod tasks;
pub mod throttle;
pub mod tickets;
pub mod tokens;
pub mod user_mfa;
pub mod user_sessions;
pub mod users;

pub use error::{
    Conn, Error, Pool, PooledConn, Result, ResultExt, Tx, inconsistent, io,
    is_cancelled_for_conflict, is_not_found, is_retryable, is_unique_violation, not_found,
    savepoint, undecodable, unencodable, worker_stopped,
};

use crate::config::redact_url;
use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::migrate::Migrator;
use sqlx::{AnyPool, Executor};
use std::path::PathBuf;
use std::time::Duration;

pub static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DbKind {
    Sqlite,
    Postgres,
}

impl DbKind {
    /// The kind of database a connection talks to.
    pub fn of(conn: &sqlx::AnyConnection) -> DbKind {
        if conn.backend_name() == "SQLite" {
            DbKind::Sqlite
        } else {
            DbKind::Postgres
        }
    }
}

#[derive(Clone, Debug)]
pub struct Db {
    pub pool: AnyPool,
    pub kind: DbKind,
    /// The database file, for SQLite.
    pub sqlite_path: Option<PathBuf>,
    /// The file's (device, inode) when opened: the open connections keep
    /// that file, so a file deleted or replaced underneath is not "ready"
    /// even when a new connection has created an empty one in its place.
    sqlite_identity: Option<(u64, u64)>,
    /// The URL without its password.
    pub display_url: String,
    /// SQLite: stops the checkpointer when the last handle goes.
    _checkpointer: Option<std::sync::Arc<Checkpointer>>,
    /// The keys the audit chain is signed with (loaded beside the database,
    /// never stored in it).
    pub audit: std::sync::Arc<audit_keys::Keys>,
    /// SQLite's one writer, taken in turn (first come, first served) by the
    /// intake writer and the outbox relay, so neither waits in SQLite's
    /// busy handler, whose sleeps grow to 100 ms.
    gate: std::sync::Arc<tokio::sync::Mutex<()>>,
}

/// Every SQLite connection's settings: WAL for concurrent readers, FULL so
/// a commit survives power loss, a wait instead of SQLITE_BUSY, and a 64 MiB
/// page cache so a group commit's batch does not spill mid-transaction.
/// Checkpoints are the checkpointer's, not a commit's.
pub(crate) const SQLITE_SETTINGS: [&str; 6] = [
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = FULL",
    "PRAGMA busy_timeout = 5000",
    "PRAGMA foreign_keys = ON",
    "PRAGMA cache_size = -65536",
    "PRAGMA wal_autocheckpoint = 0",
];

/// How often SQLite's write-ahead log is copied back into the database.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(500);

/// SQLite's write-ahead log is copied back into the database file by a
/// task of its own, every [`CHECKPOINT_EVERY`], not by whichever commit
/// happens to take the log past 1,000 pages (SQLite's default): that commit
/// then also wrote every page of the log into the database and synced it —
/// a stall for a reconciliation's last commit, and for any callback that
/// drew it. A passive checkpoint waits for no one: readers
/// and the writer go on meanwhile. It never catches up with a writer that
/// never pauses, so the intake writer checkpoints its own log past a limit
/// (`batch::DIRECT_CHECKPOINT_PAGES`). Dropped with the last `Db` handle.
#[derive(Debug)]
struct Checkpointer {
    stop: tokio::sync::watch::Sender<bool>,
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

impl Checkpointer {
    fn start(pool: AnyPool) -> Checkpointer {
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(CHECKPOINT_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            // A failure is logged when it starts, not twice a second.
            let mut failing = false;
            loop {
                tokio::select! {
                    _ = stopped.changed() => break,
                    _ = pool.close_event() => break,
                    _ = tick.tick() => {}
                }
                // (busy, frames in the log, frames copied back)
                match sqlx::query_as::<_, (i64, i64, i64)>("PRAGMA wal_checkpoint(PASSIVE)")
                    .fetch_one(&pool)
                    .await
                {
                    Ok((_, log, copied)) => {
                        if std::mem::take(&mut failing) {
                            tracing::info!("write-ahead log checkpoints work again");
                        }
                        tracing::trace!(log, copied, "write-ahead log checkpointed");
                    }
                    Err(e) if !failing => {
                        failing = true;
                        tracing::warn!(error = %e, "write-ahead log checkpoint failed");
                    }
                    Err(_) => {}
                }
            }
        });
        Checkpointer { stop }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error(
        "cannot open the database at {url}: {cause}. Check DATABASE_URL (and that the server is running and reachable)"
    )]
    Unreachable { url: String, cause: String },
    #[error("cannot apply migrations to {url}: {cause}")]
    Migrate { url: String, cause: String },
}

impl Db {
    pub async fn connect(url: &str) -> Result<Db, ConnectError> {
        crate::memory::init();
        install_default_drivers();
        let kind = if url.starts_with("sqlite:") {
            DbKind::Sqlite
        } else {
            DbKind::Postgres
        };
        let display_url = redact_url(url);
        let options = AnyPoolOptions::new()
            .max_connections(match kind {
                DbKind::Sqlite => 8,
                DbKind::Postgres => 16,
            })
            .acquire_timeout(Duration::from_secs(5))
            // An embedded SQLite connection cannot have been closed by a
            // server: testing it at each acquire is a round trip to its
            // worker thread for nothing.
            .test_before_acquire(kind == DbKind::Postgres)
            .after_connect(move |conn, _meta| {
                Box::pin(async move {
                    if kind == DbKind::Sqlite {
                        for pragma in SQLITE_SETTINGS {
                            conn.execute(pragma).await?;
                        }
                    }
                    Ok(())
                })
            });
        let pool = options
            .connect(url)
            .await
            .map_err(|e| ConnectError::Unreachable {
                url: display_url.clone(),
                cause: one_line(&e.to_string()),
            })?;
        let sqlite_path = crate::config::sqlite_path(url);
        Ok(Db {
            _checkpointer: (kind == DbKind::Sqlite)
                .then(|| std::sync::Arc::new(Checkpointer::start(pool.clone()))),
            pool,
            kind,
            sqlite_identity: sqlite_path.as_deref().and_then(file_identity),
            sqlite_path,
            display_url,
            audit: std::sync::Arc::new(audit_keys::Keys::none()),
            gate: Default::default(),
        })
    }

    pub async fn migrate(&self) -> Result<(), ConnectError> {
        MIGRATOR
            .run(&self.pool)
            .await
            .map_err(|e| ConnectError::Migrate {
                url: self.display_url.clone(),
                cause: one_line(&e.to_string()),
            })
    }

    /// A turn at SQLite's writer, held until dropped; nothing on
    /// PostgreSQL, whose writers do not exclude each other.
    pub async fn write_turn(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        match self.kind {
            DbKind::Sqlite => Some(self.gate.lock().await),
            DbKind::Postgres => None,
        }
    }

    /// A transaction that will write. On SQLite it takes the write lock at
    /// once (`BEGIN IMMEDIATE`, waiting up to the busy timeout) so a read
    /// inside it can never be invalidated by another writer; PostgreSQL
    /// needs nothing special.
    pub async fn begin_write(&self) -> Result<Tx<'static>> {
        match self.kind {
            DbKind::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await,
            DbKind::Postgres => self.pool.begin().await,
        }
    }

    /// The statement that opens a write transaction: on SQLite `BEGIN
    /// IMMEDIATE`, which takes the write lock at once (waiting for it under
    /// the busy timeout) instead of failing at the first write.
    pub fn begin_sql(&self) -> &'static str {
        match self.kind {
            DbKind::Sqlite => "BEGIN IMMEDIATE",
            DbKind::Postgres => "BEGIN",
        }
    }

    /// `begin_write` on a connection the caller holds.
    pub async fn begin_write_on<'c>(&self, conn: &'c mut Conn) -> Result<Tx<'c>> {
        sqlx::Connection::begin_with(conn, self.begin_sql()).await
    }

    /// `FOR UPDATE SKIP LOCKED` where it exists (PostgreSQL), so two
    /// instances never lease the same row; SQLite serializes writers anyway.
    pub fn skip_locked(&self) -> &'static str {
        match self.kind {
            DbKind::Sqlite => "",
            DbKind::Postgres => " FOR UPDATE SKIP LOCKED",
        }
    }

    /// Ready means: the database answers, its file (SQLite) is still there,
    /// and every embedded migration is applied.
    pub async fn readiness(&self) -> Result<(), String> {
        if let Some(path) = &self.sqlite_path {
            if !path.exists() {
                return Err(format!("database file {} is gone", path.display()));
            }
            if self.sqlite_identity.is_some() && file_identity(path) != self.sqlite_identity {
                return Err(format!(
                    "database file {} was deleted or replaced while open",
                    path.display()
                ));
            }
        }
        let query =
            sqlx::query_scalar::<_, Option<i64>>("SELECT MAX(version) FROM _sqlx_migrations")
                .fetch_one(&self.pool);
        let applied = tokio::time::timeout(Duration::from_secs(3), query)
            .await
            .map_err(|_| "database did not answer within 3 s".to_string())?
            .map_err(|e| format!("database query failed: {}", one_line(&e.to_string())))?
            .unwrap_or(0);
        let expected = MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0);
        if applied < expected {
            return Err(format!(
                "migrations behind: applied {applied}, expected {expected}; run `reckon migrate`"
            ));
        }
        Ok(())
    }
}

#[cfg(unix)]
fn file_identity(path: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn file_identity(_path: &std::path::Path) -> Option<(u64, u64)> {
    None
}

/// Microseconds since the epoch, UTC: the one time format of every table.
pub fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or_default()
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Rows per multi-row statement: one statement per table for a whole
/// intake batch (PostgreSQL takes 65,535 parameters, SQLite 32,766).
pub const ROWS_PER_STATEMENT: usize = 256;

/// The SQLite database's main file as SQLite opened it (symlinks and URL
/// escapes resolved); `None` in memory or when it cannot say.
pub async fn main_file(db: &Db) -> Option<PathBuf> {
    let rows: Vec<(i64, String, String)> = sqlx::query_as("PRAGMA database_list")
        .fetch_all(&db.pool)
        .await
        .ok()?;
    rows.into_iter()
        .find(|(_, name, _)| name == "main")
        .map(|(_, _, file)| file)
        .filter(|file| !file.is_empty())
        .map(PathBuf::from)
}

/// A SQLite connection whose commits write the log and return, the caller
/// syncing it ([`sync_wal`]) before it tells anyone; a savepoint's journal
/// of every page it changes kept in memory, not spilled to a temporary file
/// past 64 KiB. Such a connection must never go back to the pool so.
pub async fn sync_log_yourself(conn: &mut sqlx::AnyConnection) -> sqlx::Result<()> {
    for pragma in SYNC_LOG_YOURSELF {
        conn.execute(pragma).await?;
    }
    Ok(())
}

/// The settings of [`sync_log_yourself`], over [`SQLITE_SETTINGS`].
pub(crate) const SYNC_LOG_YOURSELF: [&str; 2] =
    ["PRAGMA synchronous = NORMAL", "PRAGMA temp_store = MEMORY"];

/// SQLite's write-ahead log beside the database file `db`.
pub fn wal_of(db: &std::path::Path) -> PathBuf {
    let mut p = db.as_os_str().to_owned();
    p.push("-wal");
    p.into()
}

/// Waits, off the async threads, until `wal` is on disk (`fdatasync`): the
/// sync a `synchronous = FULL` commit makes, for connections that commit
/// with NORMAL and sync the log themselves. Opened for writing, which some
/// systems require of a file they sync.
pub async fn sync_wal(wal: PathBuf) -> std::io::Result<()> {
    tokio::task::spawn_blocking(move || {
        std::fs::OpenOptions::new()
            .write(true)
            .open(&wal)?
            .sync_data()
    })
    .await
    .map_err(std::io::Error::other)?
}

/// `rows` in multi-row statements a connection's statement cache keeps:
/// chunks of at most `max` rows, each a power of two (85 rows: 64, 16, 4,
/// 1). A batch's own size in one statement would be a new text, prepared
/// anew, for nearly every batch; each row costs SQLite several
/// microseconds to prepare, more than to run.
pub fn cached_chunks<T>(rows: &[T], max: usize) -> impl Iterator<Item = &[T]> {
    debug_assert!(max > 0);
    let mut rest = rows;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let len = rest.len().min(max);
        // The largest power of two not above `len`.
        let take = 1usize << (usize::BITS - 1 - len.leading_zeros());
        let (chunk, tail) = rest.split_at(take);
        rest = tail;
        Some(chunk)
    })
}

/// The placeholders of one statement, numbered in the order they appear
/// in its text. PostgreSQL gets `$1, $2, …`; SQLite gets anonymous `?`:
/// sqlx finds each *named* SQLite parameter by walking the statement's
/// parameter list, so binding `$n` costs grow with the square of the
/// parameters, while `?` binds
/// in order at no cost (a whole batch in one statement). So a statement
/// built with `Marks` binds its values exactly in text order, each
/// placeholder once.
pub struct Marks {
    anonymous: bool,
    n: usize,
}

impl Marks {
    pub fn for_conn(conn: &sqlx::AnyConnection) -> Marks {
        Marks::for_kind(DbKind::of(conn))
    }

    /// For a statement sent through the pool of a database of this kind.
    pub fn for_kind(kind: DbKind) -> Marks {
        Marks {
            anonymous: kind == DbKind::Sqlite,
            n: 0,
        }
    }

    /// The next placeholder.
    pub fn mark(&mut self) -> String {
        self.n += 1;
        if self.anonymous {
            "?".to_owned()
        } else {
            format!("${}", self.n)
        }
    }

    /// `…, …`: `n` placeholders, for an `IN (…)` list.
    pub fn list(&mut self, n: usize) -> String {
        (0..n).map(|_| self.mark()).collect::<Vec<_>>().join(", ")
    }

    /// `(…), (…)`: `rows` rows of `cols` placeholders each; `tail`
    /// (constants) ends each row.
    pub fn rows(&mut self, rows: usize, cols: usize, tail: &str) -> String {
        let mut out = String::with_capacity(rows * (cols * 6 + tail.len() + 4));
        for r in 0..rows {
            if r > 0 {
                out.push_str(", ");
            }
            out.push('(');
            for c in 0..cols {
                if c > 0 {
                    out.push_str(", ");
                }
                out.push_str(&self.mark());
            }
            out.push_str(tail);
            out.push(')');
        }
        out
    }
}

/// Runs a statement built with `sqlx::QueryBuilder<Any>` on a database of
/// `kind`. The builder writes `?` for every value (sqlx issue #3000),
/// which SQLite binds in order at no cost (see [`Marks`]) and PostgreSQL
/// does not read: there each `?` outside a quoted literal becomes
/// `$1, $2, …` in order.
pub async fn execute_built<'e>(
    e: impl Executor<'e, Database = sqlx::Any>,
    kind: DbKind,
    mut q: sqlx::QueryBuilder<'static, sqlx::Any>,
) -> sqlx::Result<sqlx::any::AnyQueryResult> {
    if kind == DbKind::Sqlite {
        return q.build().execute(e).await;
    }
    let sql = numbered(q.sql());
    let args = sqlx::Execute::take_arguments(&mut q.build())
        .map_err(sqlx::Error::Encode)?
        .unwrap_or_default();
    sqlx::query_with(&sql, args).execute(e).await
}

/// [`execute_built`] for a query, its rows as `T`.
pub async fn fetch_all_built<'e, T>(
    e: impl Executor<'e, Database = sqlx::Any>,
    kind: DbKind,
    mut q: sqlx::QueryBuilder<'static, sqlx::Any>,
) -> sqlx::Result<Vec<T>>
where
    T: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin,
{
    if kind == DbKind::Sqlite {
        return q.build_query_as().fetch_all(e).await;
    }
    let sql = numbered(q.sql());
    let args = sqlx::Execute::take_arguments(&mut q.build())
        .map_err(sqlx::Error::Encode)?
        .unwrap_or_default();
    sqlx::query_as_with(&sql, args).fetch_all(e).await
}

/// `?` placeholders as `$1, $2, …`, in order, outside quoted literals
/// and names.
pub(crate) fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + sql.len() / 8);
    let (mut n, mut quote) = (0, None);
    for c in sql.chars() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '?') => {
                n += 1;
                out.push('$');
                out.push_str(&n.to_string());
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

/// A SQLite database in memory behind one connection (each connection has
/// a memory database of its own), for the store's own unit tests.
#[cfg(test)]
pub(crate) async fn memory_pool() -> AnyPool {
    sqlx::any::install_default_drivers();
    sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect("sqlite::memory:")
        .await
        .unwrap()
}

#[cfg(test)]
mod built_tests {
    use super::{DbKind, execute_built, fetch_all_built, numbered};

    #[test]
    fn postgres_gets_numbered_placeholders_outside_literals() {
        assert_eq!(
            numbered("SELECT ?, '?', 'it''s ?', ? WHERE a IN (?, ?)"),
            "SELECT $1, '?', 'it''s ?', $2 WHERE a IN ($3, $4)"
        );
    }

    #[test]
    fn names_in_double_quotes_keep_their_question_marks() {
        assert_eq!(
            numbered("a = ? AND b <> 'x?' AND c COLLATE \"C?\" >= ? OR d = ?"),
            "a = $1 AND b <> 'x?' AND c COLLATE \"C?\" >= $2 OR d = $3"
        );
        assert_eq!(
            numbered("status = 'it''s' AND x = ?"),
            "status = 'it''s' AND x = $1"
        );
    }

    #[tokio::test]
    async fn a_built_statement_binds_its_values_in_order() {
        let pool = super::memory_pool().await;
        sqlx::query("CREATE TABLE t (a BIGINT, b TEXT, c TEXT)")
            .execute(&pool)
            .await
            .unwrap();
        let mut q = sqlx::QueryBuilder::new("INSERT INTO t (a, b, c) ");
        q.push_values([(1i64, "x"), (2, "y")], |mut b, (n, s)| {
            b.push_bind(n).push("'lit?'").push_bind(s.to_owned());
        });
        assert_eq!(
            q.sql(),
            "INSERT INTO t (a, b, c) VALUES (?, 'lit?', ?), (?, 'lit?', ?)"
        );
        let done = execute_built(&pool, DbKind::Sqlite, q).await.unwrap();
        assert_eq!(done.rows_affected(), 2);
        let mut q = sqlx::QueryBuilder::new("SELECT a, b, c FROM t WHERE c IN (");
        q.push_bind("y".to_owned()).push(") ORDER BY a");
        let rows: Vec<(i64, String, String)> =
            fetch_all_built(&pool, DbKind::Sqlite, q).await.unwrap();
        assert_eq!(rows, [(2, "lit?".into(), "y".into())]);
    }
}

#[cfg(test)]
mod marks_tests {
    use super::Marks;

    #[test]
    fn numbered_for_postgres_anonymous_for_sqlite() {
        let mut pg = Marks {
            anonymous: false,
            n: 0,
        };
        assert_eq!(pg.mark(), "$1");
        assert_eq!(pg.rows(2, 2, ", 0"), "($2, $3, 0), ($4, $5, 0)");
        let mut lite = Marks {
            anonymous: true,
            n: 0,
        };
        assert_eq!(lite.rows(2, 2, ""), "(?, ?), (?, ?)");
        assert_eq!(lite.mark(), "?");
    }
}

#[cfg(test)]
mod chunk_tests {
    use super::cached_chunks;

    #[test]
    fn cached_chunks_are_powers_of_two_up_to_the_max() {
        let rows: Vec<u32> = (0..85).collect();
        let sizes: Vec<usize> = cached_chunks(&rows, 256).map(<[u32]>::len).collect();
        assert_eq!(sizes, [64, 16, 4, 1]);
        let rows: Vec<u32> = (0..300).collect();
        let chunks: Vec<&[u32]> = cached_chunks(&rows, 128).collect();
        let sizes: Vec<usize> = chunks.iter().map(|c| c.len()).collect();
        assert_eq!(sizes, [128, 128, 32, 8, 4]);
        assert_eq!(chunks.concat(), rows);
        assert_eq!(cached_chunks::<u32>(&[], 256).count(), 0);
    }
}
