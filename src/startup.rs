//! Building and running the server: storage first (so a bad database ends
//! the start with one clear line), then the router, then the listener.

use crate::accounts::Accounts;
use crate::config::Config;
use crate::config::{Pulls, Settings, Sink, StatementDay};
use crate::context::{Clock, SystemClock};
use crate::demo::Demo;
use crate::engine::Engine;
use crate::metrics::Metrics;
use crate::providers::signing::Secret;
use crate::providers::{Provider, Providers};
use crate::store::Db;
use crate::web::{self, AppState, sessions};
use anyhow::Context;
use leptos::config::{Env, LeptosOptions};
use secrecy::ExposeSecret;
use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

pub struct Application {
    listener: TcpListener,
    router: axum::Router,
    addr: SocketAddr,
    pub accounts: Accounts,
    pub engine: Engine,
    /// The demo with its in-process sandbox, if running.
    demo: Option<Demo>,
    /// Whether to start the workers (the demo starts them after its history).
    workers: bool,
    demo_recon_after: Duration,
    session_store: sessions::Store,
    limits: web::listener::Limits,
    metrics: Metrics,
}

/// How to build beyond the configuration.
#[derive(Clone)]
pub struct Options {
    /// Run the sandbox in-process (at `/sandbox`) when none is configured,
    /// and feed it demo payments.
    pub demo: bool,
    pub clock: Arc<dyn Clock>,
    /// Start the engine's workers with the server (tests may tick by hand).
    pub workers: bool,
    /// How long the demo runs before reconciling its first day.
    pub demo_recon_after: Duration,
    /// Times console sessions and sign-in locks: apart from `clock`, so a
    /// test can move the engine's time by days without ending its
    /// sessions, or age its sessions without moving the engine.
    pub session_clock: Arc<dyn Clock>,
    /// The console's files built into the binary (a test gives a fixture).
    pub embedded: web::assets::Embedded,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            demo: false,
            clock: Arc::new(SystemClock),
            workers: true,
            demo_recon_after: Duration::from_secs(60),
            session_clock: Arc::new(SystemClock),
            embedded: web::assets::Embedded::built(),
        }
    }
}

impl Application {
    /// Opens (and migrates) the database and binds the listen address. Port
    /// 0 picks a free port; [`Application::addr`] tells which.
    pub async fn build(config: &Config) -> anyhow::Result<Application> {
        Self::build_with(config, Options::default()).await
    }

    pub async fn build_with(config: &Config, options: Options) -> anyhow::Result<Application> {
        let fd_limit = web::listener::raise_fd_limit();
        let limits = web::listener::Limits {
            max_connections: web::listener::connection_cap(config.limits.max_connections, fd_limit),
            ..config.limits
        };
        if limits.max_connections < config.limits.max_connections {
            tracing::warn!(
                configured = config.limits.max_connections,
                max_connections = limits.max_connections,
                fd_limit,
                "the open-file limit allows fewer connections than configured"
            );
        }
        let db = open_database(config).await?;
        let session_store = sessions::Store::open(&db, &config.database_url)
            .await
            .context("cannot prepare the session store")?;
        let listener = TcpListener::bind(config.listen).await.with_context(|| {
            format!(
                "cannot listen on {}; set RECKON_LISTEN to a free address",
                config.listen
            )
        })?;
        let addr = listener.local_addr()?;
        let metrics = Metrics::new();
        let mut sign_in = config.sign_in;
        // The demo prints passwords to sign in with at once: a second factor
        // would stop its visitors at the door, unless one was asked for.
        if options.demo && !sign_in.mfa.given {
            sign_in.mfa = crate::config::MfaRoles::default();
            tracing::info!(
                "demo: no role needs a second factor (set RECKON_MFA_ROLES to require one)"
            );
        }
        let mut accounts = Accounts::new(db.clone(), metrics.clone())
            .with_sign_in(sign_in, options.session_clock.clone());
        let sso = match &config.oidc {
            Some(settings) => {
                accounts.ways = app::types::SignInWays {
                    passwords: settings.local_passwords,
                    provider: Some(settings.name.clone()),
                };
                let sso = Arc::new(crate::oidc::Sso::new(settings.clone())?);
                // Discovered now if the provider answers; else at the first
                // sign-in, which says plainly that it is unreachable.
                if let Err(e) = sso.client().await {
                    tracing::warn!(issuer = %settings.issuer, error = ?e, "the identity provider could not be discovered at start; sign-in through it will try again");
                }
                Some(sso)
            }
            None => None,
        };
        // Tokens from before scopes still work: named here until replaced.
        accounts.warn_unscoped_tokens().await?;

        let mut providers = providers_of(config)?;
        let mut extra = axum::Router::new();
        let mut demo = None;
        if options.demo && !config.providers.iter().any(|p| p.name() == "sandbox") {
            let d = Demo::beside(addr);
            extra = extra.nest("/sandbox", d.router());
            providers.push(d.provider());
            demo = Some(d);
        }
        let settings = settings_of(config)?;
        let engine = Engine::new(
            db,
            Providers::new(providers),
            metrics.clone(),
            options.clock.clone(),
            settings,
        );
        // The money-deciding settings: the host's recorded as a version
        // when they changed, or the console's version still in force.
        crate::config_versions::at_start(&engine)
            .await
            .context("cannot record the settings' version")?;
        // The page names its assets by their fingerprint, so browsers may
        // cache them for good (`web::assets`).
        let site = web::assets::Site::choose(
            config.site_dir.as_deref(),
            options.embedded.clone(),
            crate::config::site_beside_binary(),
        );
        let pkg = match site.fingerprint() {
            Some(fingerprint) => format!("pkg/{fingerprint}"),
            None => {
                tracing::warn!(
                    site = ?site,
                    "the console's compiled files are neither built into this binary nor in \
                     the site folder: pages go out without their script and style. Build \
                     the release binary after the site (.ci/start), or name a built site \
                     in RECKON_SITE_DIR"
                );
                "pkg".to_owned()
            }
        };
        let leptos_options = LeptosOptions::builder()
            .output_name("reckon")
            .site_root(site.root().display().to_string())
            .site_pkg_dir(pkg)
            .env(Env::PROD)
            .site_addr(config.listen)
            .build();
        let state = AppState {
            leptos_options,
            accounts: accounts.clone(),
            metrics: metrics.clone(),
            engine: engine.clone(),
            sso,
            site,
        };
        let router = web::router(state, session_store.clone(), config.cookie_secure, extra).layer(
            axum::middleware::from_fn_with_state(
                Arc::new(config.trusted_proxies.clone()),
                web::proxy::real_peer,
            ),
        );
        if options.workers {
            tokio::spawn(crate::audit_anchor::run(
                engine.db.clone(),
                crate::audit_anchor::path(&config.data_dir),
            ));
        }
        // The demo writes its history first (the daily pull must find it).
        if options.workers && demo.is_none() {
            crate::workers::spawn(&engine);
        }
        Ok(Application {
            listener,
            router,
            addr,
            accounts,
            engine,
            workers: options.workers,
            demo_recon_after: options.demo_recon_after,
            demo,
            session_store,
            limits,
            metrics,
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
        let checkpoints = tokio::spawn(log_audit_checkpoints(self.accounts.db.clone()));
        if let Some(demo) = self.demo.clone() {
            demo.start(&self.engine, self.workers, self.demo_recon_after);
        }
        let served = web::listener::serve(
            self.listener,
            self.router,
            self.limits,
            self.metrics,
            shutdown,
        )
        .await;
        cleanup.abort();
        checkpoints.abort();
        served.context("server stopped with an error")
    }
}

/// The audit chain's signed head in the log at start and then daily, so an
/// operator's log store keeps checkpoints the database cannot change.
async fn log_audit_checkpoints(db: Db) {
    let mut every = tokio::time::interval(Duration::from_secs(24 * 3600));
    loop {
        every.tick().await;
        match crate::store::audit::checkpoint(&db.pool, &db.audit).await {
            Ok(cp) => {
                tracing::info!(checkpoint = %cp.line(), "audit checkpoint: keep this line outside the database")
            }
            Err(e) => tracing::warn!(error = %e, "audit checkpoint not made"),
        }
    }
}

/// The configured provider accounts, built from their settings.
pub fn providers_of(config: &Config) -> anyhow::Result<Vec<Arc<dyn Provider>>> {
    let zone = jiff::tz::TimeZone::get(&config.timezone)
        .map_err(|e| anyhow::anyhow!("RECKON_TIMEZONE {}: {e}", config.timezone))?;
    // A pull's day bounds are cut where reconciliation cuts that account's
    // day (RECKON_PULL_TIMES may move it off the business zone).
    let pulls = pulls_of(config, &zone)?;
    config
        .providers
        .iter()
        .map(|p| {
            let day_zone = pulls.days.get(p.name()).map_or(&zone, |d| &d.zone);
            crate::providers::build(p, day_zone).map_err(|e| anyhow::anyhow!(e))
        })
        .collect()
}

/// The engine's settings from the configuration.
pub fn settings_of(config: &Config) -> anyhow::Result<Settings> {
    let outbox_secret = match &config.outbox_secret {
        Some(s) => Secret::parse(s.expose_secret())
            .map_err(|e| anyhow::anyhow!("RECKON_OUTBOX_SECRET: {e}"))?,
        None => Secret::random(),
    };
    let timezone = jiff::tz::TimeZone::get(&config.timezone)
        .map_err(|e| anyhow::anyhow!("RECKON_TIMEZONE {}: {e}", config.timezone))?;
    Ok(Settings {
        pulls: pulls_of(config, &timezone)?,
        closing: crate::config::Closing {
            fees: config
                .providers
                .iter()
                .filter_map(|p| Some((p.name().to_owned(), p.fees()?.clone())))
                .collect(),
            allow_open: config.close_allow_open,
            auto: config.close_auto,
        },
        sla: config.sla.clone(),
        matching: config.matching.clone(),
        channels: config.alert_channels.clone(),
        refused_spike: config.refused_spike,
        query_schedule: config.query_schedule.clone(),
        refused_keep: config.refused_keep,
        callback_max_tries: config.callback_max_tries,
        calls_per_account: config.calls_per_account,
        timezone,
        query_on_unverified: config
            .providers
            .iter()
            .filter(|p| p.query_on_unverified())
            .map(|p| p.name().to_owned())
            .collect(),
        sinks: sinks_of(config, &outbox_secret)?,
        outbox_secret,
        outbox_max_attempts: config.sinks.max_attempts.unwrap_or(12),
        sink_failing: crate::config::Failing {
            attempts: config.sinks.failing_attempts,
            after_us: config.sinks.failing_minutes * 60_000_000,
        },
        ..Settings::default()
    })
}

/// The file's `[[sinks]]`, then `RECKON_OUTBOX_SINKS`'s —
/// those signed with `RECKON_OUTBOX_SECRET`, every event type, on the
/// default schedule unless `RECKON_OUTBOX_MAX_ATTEMPTS` keeps the old one.
fn sinks_of(config: &Config, outbox_secret: &Secret) -> anyhow::Result<Vec<Sink>> {
    let parse = |name: &str, s: &secrecy::SecretString| {
        Secret::parse(s.expose_secret()).map_err(|e| anyhow::anyhow!("sink {name}: {e}"))
    };
    let mut sinks = Vec::new();
    for s in &config.sinks.named {
        let mut secrets = vec![match &s.secret {
            Some(secret) => parse(&s.name, secret)?,
            None => outbox_secret.clone(),
        }];
        if let Some(previous) = &s.previous_secret {
            secrets.push(parse(&s.name, previous)?);
        }
        sinks.push(Sink {
            name: s.name.clone(),
            url: s.url.clone(),
            event_types: s.event_types.clone(),
            secrets,
            timeout: s.timeout,
            schedule: s.schedule.clone(),
            in_flight: s.in_flight.unwrap_or(config.sinks.in_flight),
        });
    }
    let schedule = match config.sinks.max_attempts {
        Some(n) => crate::config::legacy_schedule(n),
        None => crate::config::parse_schedule(crate::config::DEFAULT_SINK_SCHEDULE)
            .expect("the default schedule parses"),
    };
    for (name, url) in &config.outbox_sinks {
        sinks.push(Sink {
            name: name.clone(),
            url: url.clone(),
            event_types: Vec::new(),
            secrets: vec![outbox_secret.clone()],
            timeout: crate::config::DEFAULT_SINK_TIMEOUT,
            schedule: schedule.clone(),
            in_flight: config.sinks.in_flight,
        });
    }
    Ok(sinks)
}

/// Each account's statement day and ready hour — its kind's default
/// (WeChat Pay and Alipay cut their bills in China time, ready after about
/// 10:00 and 09:00 there; the others in the business zone, from 02:00),
/// or `RECKON_PULL_TIMES`' — with the catch-up, alert and retention
/// settings.
fn pulls_of(config: &Config, timezone: &jiff::tz::TimeZone) -> anyhow::Result<Pulls> {
    let mut days = std::collections::BTreeMap::new();
    for p in &config.providers {
        let kind = p.account().kind();
        let zone = match kind.statement_zone {
            Some(zone) => {
                jiff::tz::TimeZone::get(zone).map_err(|e| anyhow::anyhow!("{zone}: {e}"))?
            }
            None => timezone.clone(),
        };
        let ready_hour = kind.ready_hour;
        days.insert(p.name().to_owned(), StatementDay { zone, ready_hour });
    }
    for t in &config.pull_times {
        let zone = jiff::tz::TimeZone::get(&t.zone)
            .map_err(|e| anyhow::anyhow!("RECKON_PULL_TIMES {}: {e}", t.zone))?;
        days.insert(
            t.provider.clone(),
            StatementDay {
                zone,
                ready_hour: t.ready_hour,
            },
        );
    }
    Ok(Pulls {
        days,
        catch_up_days: config.pull_catch_up_days,
        missing_after_us: config.statement_missing_hours * 3600 * 1_000_000,
        keep_files_days: config.statement_keep_days,
        bank_window_days: config.bank_window_days,
        cut_window_us: config.cut_window.minutes * 60 * 1_000_000,
        cut_windows: config
            .cut_window
            .per_provider
            .iter()
            .map(|(name, minutes)| (name.clone(), minutes * 60 * 1_000_000))
            .collect(),
    })
}

/// The engine alone — database, providers, settings, no listener and no
/// workers — for command-line work beside (or without) a running server.
pub async fn engine_of(config: &Config) -> anyhow::Result<Engine> {
    let db = open_database(config).await?;
    let engine = Engine::new(
        db,
        Providers::new(providers_of(config)?),
        Metrics::new(),
        Arc::new(crate::context::SystemClock),
        settings_of(config)?,
    );
    // A command that runs or closes a day works under the version in
    // force and records it, as the server does.
    crate::config_versions::for_command(&engine)
        .await
        .context("cannot record the settings' version")?;
    Ok(engine)
}

/// Opens the database named by the configuration and applies migrations.
/// For SQLite the data directory is created (and checked writable) first.
pub async fn open_database(config: &Config) -> anyhow::Result<Db> {
    if let Some(path) = config.sqlite_path() {
        prepare_sqlite_dir(&path)?;
    }
    let mut db = Db::connect(&config.database_url).await?;
    db.migrate().await?;
    let next_seq = crate::store::audit::next_seq(&db.pool).await?;
    let keys = crate::store::audit_keys::Keys::load(&config.data_dir, next_seq, |k| {
        std::env::var(k).ok().filter(|v| !v.is_empty())
    })
    .context("cannot load the audit key")?;
    db.audit = Arc::new(keys);
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
