//! A long write whose statements are built on one thread while the
//! database runs the previous ones on another.
//!
//! A reconciliation writes tens of thousands of tickets. Built and run in
//! turn, the database waits while each statement is put together (its SQL,
//! 24 values per ticket) and the builder waits while the database runs it.
//! Here the caller builds and sends; a task of its own runs what was sent,
//! in order, in a transaction on one connection, committing where the
//! caller asks.
//!
//! Nothing is committed that the caller did not ask for: dropping a
//! pipeline without [`Pipeline::finish`] rolls back whatever was sent since
//! the last [`Pipeline::commit`].

use futures_util::future::BoxFuture;
use sqlx::AnyConnection;
use tokio::sync::mpsc;

use super::Db;

/// One step of the write, run on the pipeline's connection inside its
/// open transaction.
pub type WriteOp =
    Box<dyn for<'c> FnOnce(&'c mut AnyConnection) -> BoxFuture<'c, sqlx::Result<()>> + Send>;

/// Statements waiting to run: enough to keep the database busy while the
/// next is built, few enough that a failed write stops the builder soon.
const QUEUED: usize = 8;

enum Step {
    Run(WriteOp),
    Commit,
    Finish,
}

pub struct Pipeline {
    steps: mpsc::Sender<Step>,
    runner: tokio::task::JoinHandle<sqlx::Result<()>>,
}

/// A step from a closure, with the lifetimes a `WriteOp` needs.
pub fn op<F>(f: F) -> WriteOp
where
    F: for<'c> FnOnce(&'c mut AnyConnection) -> BoxFuture<'c, sqlx::Result<()>> + Send + 'static,
{
    Box::new(f)
}

/// A step that runs one statement, built with owned values.
pub fn statement(sql: String, args: sqlx::any::AnyArguments<'static>) -> WriteOp {
    op(move |conn| {
        Box::pin(async move {
            sqlx::query_with(&sql, args).execute(&mut *conn).await?;
            Ok(())
        })
    })
}

/// A step that runs a statement built with `sqlx::QueryBuilder<Any>`
/// (text and owned values, put together now) on a database of `kind`.
pub fn built(kind: super::DbKind, q: sqlx::QueryBuilder<'static, sqlx::Any>) -> WriteOp {
    op(move |conn| {
        Box::pin(async move {
            super::execute_built(&mut *conn, kind, q).await?;
            Ok(())
        })
    })
}

impl Pipeline {
    /// Takes a connection of the pool and opens the first transaction
    /// (`BEGIN IMMEDIATE` on SQLite: the write lock from the start).
    pub async fn start(db: &Db) -> sqlx::Result<Pipeline> {
        let mut conn = Held {
            conn: db.pool.acquire().await?,
            open: false,
            settings: false,
        };
        let (steps, mut queue) = mpsc::channel::<Step>(QUEUED);
        let begin = db.begin_sql();
        // SQLite keeps an undo copy of every page a multi-row statement
        // changes (the statement journal, one statement's worth at a time)
        // — in memory here, not in a temporary file. Put back before the
        // connection returns to the pool.
        // Its commits do not wait for the disk (`synchronous = NORMAL`):
        // `finish` makes the write-ahead log durable once, at the end (the
        // log is written in order, so that covers every commit before it;
        // so does any later commit of another connection, which waits for
        // the disk). A write cut off by a power loss half-way is a write
        // that did not finish either way.
        let wal = match (db.kind, &db.sqlite_path) {
            (super::DbKind::Sqlite, Some(path)) => {
                conn.settings = true;
                super::sync_log_yourself(&mut conn.conn).await?;
                Some(super::wal_of(path))
            }
            _ => None,
        };
        // The first transaction opens before `start` returns, so a busy
        // database is the caller's error, not a later one.
        conn.begin(begin).await?;
        let runner = tokio::spawn(async move {
            let result = async {
                while let Some(step) = queue.recv().await {
                    match step {
                        Step::Run(f) => f(&mut conn.conn).await?,
                        Step::Commit => {
                            conn.end("COMMIT").await?;
                            conn.begin(begin).await?;
                        }
                        Step::Finish => {
                            conn.end("COMMIT").await?;
                            return match wal {
                                Some(wal) => sync(wal).await,
                                None => Ok(()),
                            };
                        }
                    }
                }
                // The pipeline was dropped without `finish`.
                Ok::<(), sqlx::Error>(())
            }
            .await;
            if conn.open {
                // Whatever was sent since the last commit is not kept.
                let _ = conn.end("ROLLBACK").await;
            }
            conn.restore_settings().await;
            result
        });
        Ok(Pipeline { steps, runner })
    }

    /// Queues a step; waits only while [`QUEUED`] steps are waiting.
    /// An error means the pipeline stopped: [`Pipeline::finish`] says why.
    pub async fn send(&self, op: WriteOp) -> Result<(), Stopped> {
        self.steps.send(Step::Run(op)).await.map_err(|_| Stopped)
    }

    /// Commits what was sent so far and opens the next transaction.
    pub async fn commit(&self) -> Result<(), Stopped> {
        self.steps.send(Step::Commit).await.map_err(|_| Stopped)
    }

    /// Runs what is left, commits, and returns the connection to the pool;
    /// the first error of any step otherwise (then nothing since the last
    /// commit is kept).
    pub async fn finish(self) -> sqlx::Result<()> {
        // A pipeline that stopped has its error in the runner's result.
        let _ = self.steps.send(Step::Finish).await;
        drop(self.steps);
        match self.runner.await {
            Ok(result) => result,
            Err(e) => Err(sqlx::Error::WorkerCrashed).inspect_err(|_| {
                tracing::error!(error = %e, "write pipeline's task failed");
            }),
        }
    }
}

/// Waits until the write-ahead log at `wal` is on disk, as a commit with
/// `synchronous = FULL` does. (Had a checkpoint emptied it meanwhile, the
/// pages are in the database file, which the checkpoint synced first.)
async fn sync(wal: std::path::PathBuf) -> sqlx::Result<()> {
    match super::sync_wal(wal).await {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other.map_err(sqlx::Error::Io),
    }
}

/// The pipeline's connection, whether a transaction is open on it, and
/// whether its settings (statement journal in memory, commits that do not
/// wait for the disk) are still the pipeline's. Dropped with a transaction
/// open — a rollback that failed, a step that panicked, the task cancelled
/// — it is closed rather than returned to the pool (on SQLite it would hold
/// the write lock for good); so it is with its settings not put back.
struct Held {
    conn: sqlx::pool::PoolConnection<sqlx::Any>,
    open: bool,
    settings: bool,
}

impl Held {
    async fn begin(&mut self, sql: &'static str) -> sqlx::Result<()> {
        sqlx::Executor::execute(&mut *self.conn, sql).await?;
        self.open = true;
        Ok(())
    }

    /// The statement journal back to SQLite's default and commits that
    /// wait for the disk again, as the pool's connections are, outside a
    /// transaction; if that fails the connection will be closed.
    async fn restore_settings(&mut self) {
        if self.settings
            && !self.open
            && sqlx::Executor::execute(&mut *self.conn, "PRAGMA temp_store = DEFAULT")
                .await
                .is_ok()
            && sqlx::Executor::execute(&mut *self.conn, "PRAGMA synchronous = FULL")
                .await
                .is_ok()
        {
            self.settings = false;
        }
    }

    /// COMMIT or ROLLBACK; the transaction is still open if it failed.
    async fn end(&mut self, sql: &'static str) -> sqlx::Result<()> {
        sqlx::Executor::execute(&mut *self.conn, sql).await?;
        self.open = false;
        Ok(())
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.open || self.settings {
            self.conn.close_on_drop();
        }
    }
}

/// The pipeline's task has stopped (a step failed); [`Pipeline::finish`]
/// returns the error.
#[derive(Debug)]
pub struct Stopped;
