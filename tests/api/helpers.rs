//! Spawning a real server on 127.0.0.1 (port 0) over a fresh database: a
//! SQLite file in a temporary directory, or a new database on the
//! PostgreSQL server named by RECKON_TEST_PG (the test script starts one).

use app::types::{Role, User};
use reckon::accounts::Actor;
use reckon::config::{Config, LogFormat, sqlite_url};
use reckon::startup::Options;
use reckon::{Application, accounts::Accounts};
use reqwest::header::{HeaderMap, HeaderValue};
use std::path::{Path, PathBuf};
use tempfile::TempDir;
use tokio::task::JoinHandle;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

pub struct TestApp {
    pub base: String,
    pub config: Config,
    pub options: Options,
    pub engine: reckon::engine::Engine,
    pub client: reqwest::Client,
    pub accounts: Accounts,
    /// Holds the SQLite file (and removes it when the test ends).
    pub _dir: TempDir,
    server: Option<JoinHandle<()>>,
}

/// A PostgreSQL URL for a brand-new database, or a loud failure: the
/// PostgreSQL half of the suite must never pass by being skipped.
pub async fn fresh_postgres_url() -> String {
    use sqlx::Connection;
    let admin = std::env::var("RECKON_TEST_PG").expect(
        "RECKON_TEST_PG is not set: run the suite with `.ci/test`, which starts PostgreSQL 15, \
         or point it at a server: postgres://USER@127.0.0.1:PORT/postgres",
    );
    let name = format!("t_{}", uuid::Uuid::new_v4().simple());
    let mut conn = sqlx::PgConnection::connect(&admin)
        .await
        .expect("connect to the test PostgreSQL server");
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut conn)
        .await
        .expect("create a test database");
    let base = admin.rsplit_once('/').expect("a URL with a database").0;
    format!("{base}/{name}")
}

pub async fn test_config(backend: Backend, dir: &Path) -> Config {
    let database_url = match backend {
        Backend::Sqlite => sqlite_url(&dir.join("data").join("reckon.db")),
        Backend::Postgres => fresh_postgres_url().await,
    };
    Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        database_url: database_url.into(),
        data_dir: dir.join("data"),
        timezone: "UTC".into(),
        log_format: LogFormat::Pretty,
        site_dir: Some(PathBuf::from("target/site")),
        cookie_secure: false,
        providers: Vec::new(),
        outbox_sinks: Vec::new(),
        outbox_secret: None,
        query_schedule: reckon::config::parse_schedule(reckon::config::DEFAULT_QUERY_SCHEDULE)
            .unwrap(),
        refused_keep: 10_000,
        callback_max_tries: 10,
        calls_per_account: 4,
        limits: Default::default(),
        pull_times: Vec::new(),
        pull_catch_up_days: 7,
        statement_missing_hours: 6,
        statement_keep_days: 400,
        bank_window_days: 3,
        close_allow_open: Some(reckon::domain::Severity::Low),
        close_auto: true,
        sla: Default::default(),
        // No cut window unless a test asks for one: the tests' days are
        // today's, and a payment paid near midnight would wait in transit.
        cut_window: reckon::config::CutWindow {
            minutes: 0,
            per_provider: Vec::new(),
        },
        matching: Default::default(),
        sinks: Default::default(),
        alert_channels: Vec::new(),
        refused_spike: Default::default(),
        sign_in: Default::default(),
        oidc: None,
        trusted_proxies: Vec::new(),
    }
}

pub async fn spawn_app(backend: Backend) -> TestApp {
    spawn_app_with(backend, |_| {}, Options::default()).await
}

/// A server whose configuration the test adjusts first.
pub async fn spawn_app_with(
    backend: Backend,
    adjust: impl FnOnce(&mut Config),
    options: Options,
) -> TestApp {
    reckon::telemetry::init(LogFormat::Pretty);
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(backend, dir.path()).await;
    adjust(&mut config);
    let (base, accounts, engine, server) = launch(&config, &options).await;
    TestApp {
        base,
        accounts,
        engine,
        config,
        options,
        client: client(),
        _dir: dir,
        server: Some(server),
    }
}

async fn launch(
    config: &Config,
    options: &Options,
) -> (String, Accounts, reckon::engine::Engine, JoinHandle<()>) {
    let app = Application::build_with(config, options.clone())
        .await
        .expect("server builds");
    let base = format!("http://{}", app.addr());
    let accounts = app.accounts.clone();
    let engine = app.engine.clone();
    let server = tokio::spawn(async move {
        app.run_until(std::future::pending()).await.unwrap();
    });
    (base, accounts, engine, server)
}

/// A browser-like client: keeps cookies, follows no redirects, and sends the
/// console's Origin (set per request by the helpers below).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        // A hung request fails the test instead of hanging the suite.
        .timeout(std::time::Duration::from_secs(45))
        .build()
        .unwrap()
}

/// A counter's value in the server's metrics text (`series` with its
/// labels, e.g. `reckon_login_attempts_total{outcome="busy"}`); 0 when absent.
pub fn metric(metrics: &reckon::metrics::Metrics, series: &str) -> u64 {
    let needle = format!("{series} ");
    metrics
        .render()
        .lines()
        .find_map(|l| l.strip_prefix(needle.as_str()))
        .map_or(0, |n| n.trim().parse().unwrap())
}

impl TestApp {
    /// Stops the server abruptly (as a crash would) and starts a new one on
    /// the same database; in-memory state is gone, the database stays.
    pub async fn restart(&mut self) {
        if let Some(server) = self.server.take() {
            server.abort();
            let _ = server.await;
        }
        let (base, accounts, engine, server) = launch(&self.config, &self.options).await;
        self.base = base;
        self.accounts = accounts;
        self.engine = engine;
        self.server = Some(server);
    }

    /// A second server on the same database (as a second instance behind
    /// a load balancer would be): its base URL; it runs until the test ends.
    pub async fn second_instance(&self) -> String {
        let (base, _, _, server) = launch(&self.config, &self.options).await;
        // Detached: it stops with the test's runtime.
        drop(server);
        base
    }

    /// The same, for a test that drives the second instance's engine
    /// itself (its workers, like this one's, as the options say).
    pub async fn second_engine(&self) -> reckon::engine::Engine {
        let (_, _, engine, server) = launch(&self.config, &self.options).await;
        drop(server);
        engine
    }

    pub fn origin(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("origin", HeaderValue::from_str(&self.base).unwrap());
        h
    }

    pub async fn add_user(&self, username: &str, role: Role, password: &str) -> User {
        self.accounts
            .create_user(&Actor::cli(), username, role, password)
            .await
            .unwrap()
    }

    /// An API token with every scope, made as `reckon token create --scope
    /// all` makes it.
    pub async fn api_token(&self, name: &str) -> String {
        self.api_token_with(name, &app::tokens::Scope::ALL).await
    }

    pub async fn api_token_with(&self, name: &str, scopes: &[app::tokens::Scope]) -> String {
        let req = reckon::accounts::TokenRequest {
            name: name.to_owned(),
            scopes: scopes.to_vec(),
            expires_days: None,
            owner_id: None,
        };
        self.accounts
            .create_token(&Actor::cli(), &req)
            .await
            .unwrap()
            .token
    }

    /// Calls a server function the way the hydrated console does.
    pub async fn call(&self, endpoint: &str, form: &[(&str, &str)]) -> reqwest::Response {
        self.call_with(&self.client, endpoint, form).await
    }

    /// `GET /api/v1/recon/runs/{run_id}`'s answer.
    pub async fn api_run(&self, token: &str, run_id: &str) -> serde_json::Value {
        self.client
            .get(format!("{}/api/v1/recon/runs/{run_id}", self.base))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// A browser signed in as `name`, a user made on the server's host
    /// with `role` (its grant confirmed at once, vouching for no one).
    pub async fn signed_in(&self, name: &str, role: Role) -> reqwest::Client {
        const PASSWORD: &str = "correct horse battery";
        self.add_user(name, role, PASSWORD).await;
        let browser = client();
        let res = self
            .call_with(
                &browser,
                "login",
                &[("username", name), ("password", PASSWORD)],
            )
            .await;
        assert_eq!(res.status(), 200, "{name} signs in");
        browser
    }

    pub async fn call_with(
        &self,
        client: &reqwest::Client,
        endpoint: &str,
        form: &[(&str, &str)],
    ) -> reqwest::Response {
        client
            .post(format!("{}/api/{endpoint}", self.base))
            .headers(self.origin())
            .form(form)
            .send()
            .await
            .unwrap()
    }

    pub async fn login(&self, username: &str, password: &str) -> reqwest::Response {
        self.call("login", &[("username", username), ("password", password)])
            .await
    }

    pub async fn session_user(&self) -> Option<User> {
        let res = self.call("session", &[]).await;
        assert_eq!(res.status(), 200);
        let info: app::types::SessionInfo = res.json().await.unwrap();
        info.user
    }

    /// A page or resource, asked for the way a browser asks.
    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(format!("{}{path}", self.base))
            .header("accept", "text/html,application/xhtml+xml,*/*;q=0.8")
            .send()
            .await
            .unwrap()
    }

    /// Registers a CREATED payment through the engine, as the merchant API
    /// does; returns its payment_no.
    pub async fn register_payment(
        &self,
        provider: &str,
        order: &str,
        amount_minor: i64,
        currency: &str,
    ) -> String {
        let req = reckon::engine::CreatePayment {
            order_no: order.into(),
            provider: provider.into(),
            amount_minor,
            currency: currency.into(),
            description: None,
        };
        let created = self.engine.create_payment("test", order, &req).await;
        created.expect("the payment is created").payment_no
    }

    /// A payment's status and how many effects it has.
    pub async fn payment_state(&self, payment_no: &str) -> (String, i64) {
        let pool = &self.accounts.db.pool;
        let status: String = crate::reads::payment_status(pool, payment_no).await;
        let effects: i64 = crate::reads::effects_of(pool, payment_no).await;
        (status, effects)
    }

    /// A stored callback's redelivery figures: (duplicates counted,
    /// distinct redeliveries kept, of those with other facts).
    pub async fn redeliveries(&self, provider: &str, callback_id: &str) -> (i64, i64, i64) {
        let pool = &self.accounts.db.pool;
        let (id, duplicates): (String, i64) = sqlx::query_as(
            "SELECT id, CAST(duplicates AS BIGINT) FROM payment_callbacks WHERE provider = $1 AND callback_id = $2",
        )
        .bind(provider)
        .bind(callback_id)
        .fetch_one(pool)
        .await
        .unwrap();
        let (kept, other): (i64, i64) = sqlx::query_as(
            "SELECT COUNT(*), CAST(COALESCE(SUM(1 - same_facts), 0) AS BIGINT) FROM callback_redeliveries \
             WHERE callback_row_id = $1",
        )
        .bind(&id)
        .fetch_one(pool)
        .await
        .unwrap();
        (duplicates, kept, other)
    }

    /// A raw POST to a provider's webhook route, unsigned.
    pub async fn post_webhook(
        &self,
        provider: &str,
        content_type: &str,
        body: String,
    ) -> reqwest::Response {
        self.client
            .post(format!("{}/webhooks/{provider}", self.base))
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap()
    }

    /// How many alerts of `kind` were raised.
    pub async fn alert_count(&self, kind: &str) -> i64 {
        sqlx::query_scalar("SELECT COUNT(*) FROM alerts WHERE kind = $1")
            .bind(kind)
            .fetch_one(&self.accounts.db.pool)
            .await
            .unwrap()
    }

    /// Runs the real `reckon` binary against this app's database.
    pub fn cli(&self, args: &[&str], stdin: Option<&str>) -> std::process::Output {
        run_cli(&self.config, args, stdin)
    }
}

pub fn run_cli(config: &Config, args: &[&str], stdin: Option<&str>) -> std::process::Output {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_reckon"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", &config.database_url)
        .env("RECKON_DATA_DIR", &config.data_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        // A command refused before it reads (a usage error) closes its
        // stdin: the write may fail, and the exit status tells the story.
        let _ = input.write_all(text.as_bytes());
    }
    drop(input);
    child.wait_with_output().unwrap()
}

/// Declares each test once per database: `mod sqlite` and `mod postgres`.
#[macro_export]
macro_rules! both_databases {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::helpers::Backend::Sqlite).await
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::helpers::Backend::Postgres).await
                }
            )*
        }
    };
}
