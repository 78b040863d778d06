//! Building and running the server: storage first (so a bad database ends
//! the start with one clear line), then the router, then the listener.

use crate::accounts::Accounts;
use crate::config::Config;
use crate::store::Db;
use crate::web::{self, AppState, metrics::Metrics, sessions};
use anyhow::Context;
use leptos::config::{Env, LeptosOptions};
use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;
use tokio::net::TcpListener;

pub struct Application {
    listener: TcpListener,
    router: axum::Router,
    addr: SocketAddr,
    pub accounts: Accounts,
    session_store: sessions::Store,
}

impl Application {
    /// Opens (and migrates) the database and binds the listen address. Port
    /// 0 picks a free port; [`Application::addr`] tells which.
    pub async fn build(config: &Config) -> anyhow::Result<Application> {
        let db = open_database(config).await?;
        let session_store = sessions::Store::open(&db, &config.database_url)
            .await
            .context("cannot prepare the session store")?;
        let metrics = Metrics::new();
        let accounts = Accounts::new(db, metrics.clone());
        let leptos_options = LeptosOptions::builder()
            .output_name("reckon")
            .site_root(config.site_dir.display().to_string())
            .site_pkg_dir("pkg")
            .env(Env::PROD)
            .site_addr(config.listen)
            .build();
        let state = AppState {
            leptos_options,
            accounts: accounts.clone(),
            metrics,
        };
        let router = web::router(state, session_store.clone(), config.cookie_secure);
        let listener = TcpListener::bind(config.listen).await.with_context(|| {
            format!(
                "cannot listen on {}; set RECKON_LISTEN to a free address",
                config.listen
            )
        })?;
        let addr = listener.local_addr()?;
        Ok(Application {
            listener,
            router,
            addr,
            accounts,
            session_store,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until `shutdown` resolves, then finishes requests in flight.
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let cleanup = tokio::spawn(
            self.session_store
                .clone()
                .delete_expired_every(Duration::from_secs(600)),
        );
        let service = self
            .router
            .into_make_service_with_connect_info::<SocketAddr>();
        let served = axum::serve(self.listener, service)
            .with_graceful_shutdown(shutdown)
            .await;
        cleanup.abort();
        served.context("server stopped with an error")
    }
}

/// Opens the database named by the configuration and applies migrations.
/// For SQLite the data directory is created (and checked writable) first.
pub async fn open_database(config: &Config) -> anyhow::Result<Db> {
    if let Some(path) = config.sqlite_path() {
        prepare_sqlite_dir(&path)?;
    }
    let db = Db::connect(&config.database_url).await?;
    db.migrate().await?;
    Ok(db)
}

fn prepare_sqlite_dir(db_file: &Path) -> anyhow::Result<()> {
    let dir = match db_file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let hint = "set RECKON_DATA_DIR (or DATABASE_URL) to a writable directory";
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create data directory {}; {hint}", dir.display()))?;
    // Creating the directory can succeed where writing in it does not.
    let probe = dir.join(format!(".reckon-write-check-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .with_context(|| format!("data directory {} is not writable; {hint}", dir.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down");
}
