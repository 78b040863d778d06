//! Console sessions in the database, through tower-sessions' sqlx stores:
//! the SQLite store on SQLite, the PostgreSQL store on PostgreSQL. Each
//! store creates its own table at start (its schema differs per backend).

use crate::store;
use crate::store::{Db, DbKind};
use sqlx::postgres::PgPoolOptions;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use std::str::FromStr;
use std::time::Duration;
use tower_sessions::ExpiredDeletion;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, SessionStore};
use tower_sessions_sqlx_store::{PostgresStore, SqliteStore};

#[derive(Clone, Debug)]
pub enum Store {
    Sqlite(SqliteStore),
    Postgres(PostgresStore),
}

impl Store {
    /// Opens a pool of the concrete driver beside the `Any` pool and creates
    /// the session table if missing.
    pub async fn open(db: &Db, url: &str) -> Result<Store, store::Error> {
        let store = match db.kind {
            DbKind::Sqlite => {
                let options = SqliteConnectOptions::from_str(url)?
                    .journal_mode(SqliteJournalMode::Wal)
                    .synchronous(SqliteSynchronous::Full)
                    .busy_timeout(Duration::from_secs(5));
                let pool = SqlitePoolOptions::new()
                    .max_connections(4)
                    .connect_with(options)
                    .await?;
                let store = SqliteStore::new(pool);
                store.migrate().await?;
                Store::Sqlite(store)
            }
            DbKind::Postgres => {
                let pool = PgPoolOptions::new()
                    .max_connections(4)
                    .acquire_timeout(Duration::from_secs(5))
                    .connect(url)
                    .await?;
                let store = PostgresStore::new(pool);
                store.migrate().await?;
                Store::Postgres(store)
            }
        };
        Ok(store)
    }

    /// Deletes expired sessions every `period`, forever.
    pub async fn delete_expired_every(self, period: Duration) {
        let result = match self {
            Store::Sqlite(s) => s.continuously_delete_expired(period).await,
            Store::Postgres(s) => s.continuously_delete_expired(period).await,
        };
        if let Err(e) = result {
            tracing::error!(error = %e, "expired-session cleanup stopped");
        }
    }
}

#[async_trait::async_trait]
impl SessionStore for Store {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        match self {
            Store::Sqlite(s) => s.create(record).await,
            Store::Postgres(s) => s.create(record).await,
        }
    }
    async fn save(&self, record: &Record) -> session_store::Result<()> {
        match self {
            Store::Sqlite(s) => s.save(record).await,
            Store::Postgres(s) => s.save(record).await,
        }
    }
    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        match self {
            Store::Sqlite(s) => s.load(id).await,
            Store::Postgres(s) => s.load(id).await,
        }
    }
    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        match self {
            Store::Sqlite(s) => s.delete(id).await,
            Store::Postgres(s) => s.delete(id).await,
        }
    }
}
