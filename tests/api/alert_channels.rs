//! Alert channels end to end: alerts raised in the database, routed by the
//! dispatcher pass into the outbox, delivered by the relay to a webhook
//! receiver (its signature checked here from the Standard Webhooks
//! specification), a Slack-compatible receiver and a real SMTP server
//! (aiosmtpd, started by the test) — grouped, retried, held through quiet
//! hours. The engine's workers are stopped and the clock is moved by hand.

use crate::engine_helpers::serve;
use crate::helpers::{Backend, TestApp, spawn_app_with};
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use base64::Engine as _;
use reckon::context::ManualClock;
use reckon::engine::Engine;
use reckon::startup::Options;
use reckon::store::alerts::{NewAlert, raise_alert};
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// A receiver on 127.0.0.1 that records each request's Standard-Webhooks
/// headers and body, and answers 500 to the next `fail_next` requests.
#[derive(Clone, Default)]
struct Receiver {
    seen: Arc<Mutex<Vec<Request>>>,
    failures_left: Arc<AtomicUsize>,
}

#[derive(Clone, Debug)]
struct Request {
    id: Option<String>,
    timestamp: Option<String>,
    signature: Option<String>,
    body: String,
}

impl Request {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap()
    }
}

impl Receiver {
    async fn start() -> (Receiver, String) {
        let r = Receiver::default();
        let url = serve(
            Router::new()
                .route("/{*path}", post(record))
                .with_state(r.clone()),
        )
        .await;
        (r, url)
    }
    fn fail_next(&self, n: usize) {
        self.failures_left.store(n, Ordering::SeqCst);
    }
    fn seen(&self) -> Vec<Request> {
        self.seen.lock().unwrap().clone()
    }
}

async fn record(State(r): State<Receiver>, headers: HeaderMap, body: String) -> StatusCode {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    r.seen.lock().unwrap().push(Request {
        id: header("webhook-id"),
        timestamp: header("webhook-timestamp"),
        signature: header("webhook-signature"),
        body,
    });
    let left = r.failures_left.load(Ordering::SeqCst);
    if left > 0 {
        r.failures_left.store(left - 1, Ordering::SeqCst);
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::OK
    }
}

/// The Standard Webhooks check, written from the specification: HMAC-SHA256
/// keyed with the base64 after `whsec_`, over `{id}.{timestamp}.{body}`,
/// compared with each space-separated `v1,<base64>` of the header.
fn signature_verifies(r: &Request, whsec: &str) -> bool {
    use hmac::{Hmac, Mac};
    let b64 = base64::engine::general_purpose::STANDARD;
    let key = b64.decode(whsec.strip_prefix("whsec_").unwrap()).unwrap();
    let (Some(id), Some(ts), Some(sig)) = (&r.id, &r.timestamp, &r.signature) else {
        return false;
    };
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{id}.{ts}.{}", r.body).as_bytes());
    let expected = format!("v1,{}", b64.encode(mac.finalize().into_bytes()));
    sig.split(' ').any(|s| s == expected)
}

/// aiosmtpd's Mailbox handler on a free port of 127.0.0.1, writing each
/// message it receives (with `X-RcptTo`) into a maildir. Stopped on drop.
struct Smtpd {
    child: std::process::Child,
    port: u16,
    maildir: tempfile::TempDir,
}

impl Smtpd {
    async fn start() -> Smtpd {
        let python = std::env::var("RECKON_TEST_AIOSMTPD").unwrap_or_else(|_| {
            panic!(
                "RECKON_TEST_AIOSMTPD is not set: the alert-channel tests need a Python with \
                 aiosmtpd for their local SMTP server. Run the suite with `.ci/test`, or: \
                 `bash -c 'source .ci/lib.sh; ensure_aiosmtpd'` and then \
                 `export RECKON_TEST_AIOSMTPD=$PWD/target/aiosmtpd/bin/python`"
            )
        });
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let maildir = tempfile::tempdir().unwrap();
        let child = std::process::Command::new(&python)
            .args(["-m", "aiosmtpd", "-n", "-l"])
            .arg(format!("127.0.0.1:{port}"))
            .args(["-c", "aiosmtpd.handlers.Mailbox"])
            .arg(maildir.path().join("mail"))
            .spawn()
            .unwrap_or_else(|e| panic!("{python} could not start aiosmtpd: {e}"));
        let mut smtpd = Smtpd {
            child,
            port,
            maildir,
        };
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return smtpd;
            }
            if let Some(status) = smtpd.child.try_wait().unwrap() {
                panic!("aiosmtpd ({python}) exited at start: {status}");
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("aiosmtpd did not listen on 127.0.0.1:{port} within 10 s");
    }

    /// The messages received: (headers as lowercase name and value, body).
    fn messages(&self) -> Vec<(Vec<(String, String)>, String)> {
        let new = self.maildir.path().join("mail").join("new");
        let Ok(entries) = std::fs::read_dir(new) else {
            return Vec::new();
        };
        entries
            .map(|e| {
                let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
                let text = text.replace("\r\n", "\n");
                let (head, body) = text.split_once("\n\n").unwrap();
                // Unfolded headers; the body with quoted-printable soft
                // breaks joined.
                let mut headers: Vec<(String, String)> = Vec::new();
                for line in head.lines() {
                    if line.starts_with([' ', '\t']) {
                        headers.last_mut().unwrap().1.push_str(line);
                    } else if let Some((k, v)) = line.split_once(':') {
                        headers.push((k.to_ascii_lowercase(), v.trim().to_owned()));
                    }
                }
                (headers, body.replace("=\n", ""))
            })
            .collect()
    }
}

impl Drop for Smtpd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct AlertApp {
    app: TestApp,
    clock: Arc<ManualClock>,
}

impl AlertApp {
    /// A server with `channels` (the `[[alert_channels]]` TOML), its
    /// workers stopped and its clock at `now` (microseconds).
    async fn start(backend: Backend, channels: &str, now: i64) -> AlertApp {
        let config = reckon::config::Config::from_toml(channels, |_| None).unwrap();
        let clock = Arc::new(ManualClock::default());
        clock.set(now);
        let app = spawn_app_with(
            backend,
            |c| c.alert_channels = config.alert_channels,
            Options {
                demo: false,
                clock: clock.clone(),
                workers: false,
                ..Options::default()
            },
        )
        .await;
        AlertApp { app, clock }
    }

    fn engine(&self) -> &Engine {
        &self.app.engine
    }

    async fn raise(&self, key: &str, kind: &str, severity: &str, message: &str) {
        let raised = raise_alert(
            &self.engine().db.pool,
            &NewAlert {
                dedupe_key: key,
                kind: kind.parse().unwrap(),
                severity: severity.parse().unwrap(),
                payment_no: None,
                message,
                trace_id: None,
                now: self.engine().now(),
            },
        )
        .await
        .unwrap();
        assert!(raised);
    }

    async fn route(&self) -> usize {
        reckon::alerting::route_alerts(self.engine(), self.engine().now())
            .await
            .unwrap()
    }

    async fn relay(&self) -> usize {
        let http = reqwest::Client::new();
        reckon::outbox::relay_outbox(self.engine(), &http, self.engine().now())
            .await
            .unwrap()
    }

    /// (sink, status, attempts) of every delivery, by sink and message.
    async fn deliveries(&self) -> Vec<(String, String, i64)> {
        sqlx::query_as(
            "SELECT sink, status, CAST(attempts AS BIGINT) FROM outbox_deliveries ORDER BY sink, message_id",
        )
        .fetch_all(&self.engine().db.pool)
        .await
        .unwrap()
    }
}

fn at(rfc3339: &str) -> i64 {
    rfc3339.parse::<jiff::Timestamp>().unwrap().as_microsecond()
}

async fn an_alert_reaches_a_webhook_a_slack_receiver_and_an_smtp_server(b: Backend) {
    let (hook, hook_url) = Receiver::start().await;
    let (slack, slack_url) = Receiver::start().await;
    let smtpd = Smtpd::start().await;
    let channels = format!(
        r#"
[[alert_channels]]
name = "ops-hook"
kind = "webhook"
url = "{hook_url}/alerts"
secret = "{WHSEC}"

[[alert_channels]]
name = "finance-slack"
kind = "slack"
url = "{slack_url}/services/T0/B0/secret"

[[alert_channels]]
name = "finance-mail"
kind = "email"
host = "127.0.0.1"
port = {port}
tls = "plain"
from = "Reckon <reckon@example.com>"
to = ["finance@example.com", "oncall@example.com"]
min_severity = "high"
"#,
        port = smtpd.port
    );
    let app = AlertApp::start(b, &channels, at("2026-12-02T10:00:00Z")).await;
    let missing = "statement of stripe-eu for 2026-12-01 missing 6 h past its ready time";
    app.raise("missing:1", "statement_missing", "high", missing)
        .await;
    // Below the mail channel's minimum: webhook and Slack only.
    app.raise(
        "ooo:1",
        "out_of_order",
        "warning",
        "P-7 <b> SUCCEEDED after REFUNDED",
    )
    .await;
    assert_eq!(app.route().await, 5);
    assert_eq!(app.route().await, 0, "each alert is routed once");
    assert_eq!(app.relay().await, 5);

    let hooks = hook.seen();
    assert_eq!(hooks.len(), 2);
    for r in &hooks {
        assert!(signature_verifies(r, WHSEC), "{r:?}");
        assert!(!signature_verifies(
            r,
            "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
        ));
    }
    let kinds: Vec<Value> = hooks.iter().map(|r| r.json()["kind"].clone()).collect();
    assert!(kinds.contains(&"statement_missing".into()) && kinds.contains(&"out_of_order".into()));
    let first = hooks
        .iter()
        .map(Request::json)
        .find(|j| j["kind"] == "statement_missing")
        .unwrap();
    assert_eq!(first["type"], "alert.notification");
    assert_eq!(first["count"], 1);
    assert_eq!(first["digest"], false);
    assert_eq!(first["alerts"][0]["message"], missing);

    let slacks = slack.seen();
    assert_eq!(slacks.len(), 2);
    for r in &slacks {
        let j = r.json();
        assert!(j["text"].as_str().is_some_and(|t| !t.is_empty()), "{j}");
        let types: Vec<&str> = j["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["header", "section", "context"]);
        assert_eq!(j["blocks"][0]["text"]["type"], "plain_text");
        assert_eq!(j["blocks"][1]["text"]["type"], "mrkdwn");
    }
    assert!(
        slacks
            .iter()
            .any(|r| r.body.contains("P-7 &lt;b&gt; SUCCEEDED"))
    );

    let mails = smtpd.messages();
    assert_eq!(mails.len(), 1, "only the high alert is mailed");
    let (headers, body) = &mails[0];
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("no {name} in {headers:?}"))
    };
    assert_eq!(
        header("subject"),
        format!("Reckon alert [HIGH] statement_missing: {missing}")
    );
    assert_eq!(header("x-mailfrom"), "reckon@example.com");
    assert_eq!(
        header("x-rcptto"),
        "finance@example.com, oncall@example.com"
    );
    assert!(
        header("to").contains("finance@example.com") && header("to").contains("oncall@example.com")
    );
    assert!(header("from").contains("reckon@example.com"));
    assert!(body.contains(missing), "{body}");
    assert!(body.contains("alert channel finance-mail"), "{body}");

    let deliveries = app.deliveries().await;
    assert_eq!(deliveries.len(), 5);
    assert!(
        deliveries
            .iter()
            .all(|(_, s, n)| s == "DELIVERED" && *n == 1),
        "{deliveries:?}"
    );
    assert_eq!(app.relay().await, 0, "nothing is sent twice");
}

async fn thirty_alerts_of_a_kind_in_the_window_make_one_digest_after_the_first(b: Backend) {
    let (hook, hook_url) = Receiver::start().await;
    let channels = format!(
        "[[alert_channels]]\nname = \"ops-hook\"\nkind = \"webhook\"\nurl = \"{hook_url}/a\"\nsecret = \"{WHSEC}\"\ngroup_minutes = 15\n"
    );
    let app = AlertApp::start(b, &channels, at("2026-12-02T10:00:00Z")).await;
    for i in 0..30 {
        app.raise(
            &format!("sla:{i}"),
            "sla_overdue",
            "high",
            &format!("ticket T-{i} is past its SLA"),
        )
        .await;
        if i < 2 {
            app.raise(
                &format!("dead:{i}"),
                "outbox_dead",
                "high",
                &format!("message {i} dead"),
            )
            .await;
        }
        app.clock.advance_secs(10);
    }
    // Two instances' passes at once: each alert is routed by one of them.
    let (one, two) = tokio::join!(app.route(), app.route());
    assert_eq!(one + two, 2, "the first of each kind goes at once");
    assert_eq!(app.relay().await, 2);
    app.clock.advance_secs(9 * 60);
    assert_eq!(app.route().await, 0, "the window is still open");
    // 15 minutes after the first messages: one digest per kind.
    app.clock.advance_secs(6 * 60);
    assert_eq!(app.route().await, 2);
    assert_eq!(app.route().await, 0);
    assert_eq!(app.relay().await, 2);

    let seen: Vec<Value> = hook.seen().iter().map(Request::json).collect();
    assert_eq!(seen.len(), 4);
    let of = |kind: &str| -> Vec<&Value> { seen.iter().filter(|j| j["kind"] == kind).collect() };
    let sla = of("sla_overdue");
    assert_eq!(sla.len(), 2);
    assert_eq!(
        (sla[0]["count"].as_u64(), sla[0]["digest"].as_bool()),
        (Some(1), Some(false))
    );
    assert_eq!(sla[0]["alerts"][0]["message"], "ticket T-0 is past its SLA");
    assert_eq!(
        (sla[1]["count"].as_u64(), sla[1]["digest"].as_bool()),
        (Some(29), Some(true))
    );
    assert_eq!(sla[1]["alerts"].as_array().unwrap().len(), 5);
    assert_eq!(sla[1]["alerts"][0]["message"], "ticket T-1 is past its SLA");
    let dead = of("outbox_dead");
    assert_eq!(dead.len(), 2);
    assert_eq!(
        (
            dead[1]["count"].as_u64(),
            dead[1]["alerts"][0]["message"].as_str()
        ),
        (Some(1), Some("message 1 dead"))
    );

    // The digest opened the next window: a new alert of the kind waits
    // for its end, then goes alone as that window's digest.
    app.raise(
        "sla:late",
        "sla_overdue",
        "high",
        "ticket T-99 is past its SLA",
    )
    .await;
    assert_eq!(app.route().await, 0);
    app.clock.advance_secs(15 * 60);
    assert_eq!(app.route().await, 1);
    assert_eq!(app.relay().await, 1);
    let last = hook.seen().last().unwrap().json();
    assert_eq!(
        (last["count"].as_u64(), last["kind"].as_str()),
        (Some(1), Some("sla_overdue"))
    );
    let routes: Vec<(String, i64)> =
        sqlx::query_as("SELECT status, COUNT(*) FROM alert_routes GROUP BY status")
            .fetch_all(&app.engine().db.pool)
            .await
            .unwrap();
    assert_eq!(routes, [("SENT".to_string(), 33)]);
}

async fn a_failing_channel_is_retried_and_gets_the_message_once_more_with_the_same_id(b: Backend) {
    let (hook, hook_url) = Receiver::start().await;
    let (slack, slack_url) = Receiver::start().await;
    let channels = format!(
        "[[alert_channels]]\nname = \"ops-hook\"\nkind = \"webhook\"\nurl = \"{hook_url}/a\"\nsecret = \"{WHSEC}\"\n\n\
         [[alert_channels]]\nname = \"ops-slack\"\nkind = \"slack\"\nurl = \"{slack_url}/s\"\n"
    );
    let app = AlertApp::start(b, &channels, at("2026-12-02T10:00:00Z")).await;
    hook.fail_next(1);
    slack.fail_next(1);
    app.raise(
        "dead:1",
        "outbox_dead",
        "high",
        "message m1 to fulfilment dead-lettered",
    )
    .await;
    assert_eq!(app.route().await, 2);
    assert_eq!(app.relay().await, 2);
    let failed = app.deliveries().await;
    assert!(
        failed.iter().all(|(_, s, n)| s == "PENDING" && *n == 1),
        "{failed:?}"
    );
    assert_eq!(app.relay().await, 0, "not due before its retry");
    app.clock.advance_secs(3600);
    assert_eq!(app.relay().await, 2);
    app.clock.advance_secs(24 * 3600);
    assert_eq!(app.relay().await, 0, "delivered once after the retry");
    let hooks = hook.seen();
    assert_eq!(hooks.len(), 2);
    assert!(hooks[0].id.is_some());
    assert_eq!(hooks[0].id, hooks[1].id, "the same message id");
    assert_eq!(hooks[0].body, hooks[1].body);
    assert!(signature_verifies(&hooks[1], WHSEC));
    let slacks = slack.seen();
    assert_eq!(slacks.len(), 2);
    assert_eq!(slacks[0].body, slacks[1].body, "the same message");
    let delivered = app.deliveries().await;
    assert!(
        delivered
            .iter()
            .all(|(_, s, n)| s == "DELIVERED" && *n == 2),
        "{delivered:?}"
    );
}

async fn quiet_hours_hold_a_high_alert_until_they_end_and_a_critical_one_goes_at_once(b: Backend) {
    let (hook, hook_url) = Receiver::start().await;
    let channels = format!(
        "[[alert_channels]]\nname = \"night\"\nkind = \"webhook\"\nurl = \"{hook_url}/a\"\nsecret = \"{WHSEC}\"\n\
         quiet_hours = \"22:00-07:00\"\nquiet_zone = \"Europe/Berlin\"\n"
    );
    // 23:30 in Berlin.
    let app = AlertApp::start(b, &channels, at("2026-12-02T22:30:00Z")).await;
    app.raise("sla:1", "sla_overdue", "high", "ticket T-1 is past its SLA")
        .await;
    for i in 0..3 {
        let key = format!("conflict:{i}");
        app.raise(
            &key,
            "callback_conflict",
            "critical",
            &format!("callback evt_{i} conflicts"),
        )
        .await;
    }
    assert_eq!(
        app.route().await,
        1,
        "the critical alerts go at once, as one message"
    );
    assert_eq!(app.relay().await, 1);
    let critical = hook.seen()[0].json();
    assert_eq!(
        (critical["kind"].as_str(), critical["count"].as_u64()),
        (Some("callback_conflict"), Some(3))
    );
    // 06:59 in Berlin: still quiet.
    app.clock.set(at("2026-12-03T05:59:00Z"));
    assert_eq!(app.route().await, 0);
    assert_eq!(app.relay().await, 0);
    // 07:00: the held alert goes.
    app.clock.set(at("2026-12-03T06:00:00Z"));
    assert_eq!(app.route().await, 1);
    assert_eq!(app.relay().await, 1);
    let seen = hook.seen();
    assert_eq!(seen.len(), 2);
    let held = seen[1].json();
    assert_eq!(
        (
            held["kind"].as_str(),
            held["count"].as_u64(),
            held["alerts"][0]["raised_at"].as_str()
        ),
        (Some("sla_overdue"), Some(1), Some("2026-12-02T22:30:00Z"))
    );
}

async fn a_channels_own_dead_message_is_told_on_the_other_channels_only(b: Backend) {
    let (hook, hook_url) = Receiver::start().await;
    let (slack, slack_url) = Receiver::start().await;
    let channels = format!(
        "[[alert_channels]]\nname = \"ops-hook\"\nkind = \"webhook\"\nurl = \"{hook_url}/a\"\nsecret = \"{WHSEC}\"\n\n\
         [[alert_channels]]\nname = \"ops-slack\"\nkind = \"slack\"\nurl = \"{slack_url}/s\"\n"
    );
    let app = AlertApp::start(b, &channels, at("2026-12-02T10:00:00Z")).await;
    hook.fail_next(1000);
    app.raise(
        "missing:1",
        "statement_missing",
        "high",
        "statement missing",
    )
    .await;
    assert_eq!(app.route().await, 2);
    // The webhook channel down through its whole schedule: DEAD.
    for _ in 0..20 {
        app.relay().await;
        app.clock.advance_secs(2 * 3600);
    }
    assert_eq!(hook.seen().len(), 12);
    assert_eq!(app.app.alert_count("outbox_dead").await, 1);
    // Told on Slack; not on the dead channel, where it would die again.
    assert_eq!(app.route().await, 1);
    assert_eq!(app.relay().await, 1);
    let told = slack.seen().last().unwrap().body.clone();
    assert!(
        told.contains("outbox_dead") && told.contains("ops-hook"),
        "{told}"
    );
    assert_eq!(hook.seen().len(), 12);
    assert_eq!(app.relay().await, 0);
}

crate::both_databases!(
    an_alert_reaches_a_webhook_a_slack_receiver_and_an_smtp_server,
    thirty_alerts_of_a_kind_in_the_window_make_one_digest_after_the_first,
    a_failing_channel_is_retried_and_gets_the_message_once_more_with_the_same_id,
    quiet_hours_hold_a_high_alert_until_they_end_and_a_critical_one_goes_at_once,
    a_channels_own_dead_message_is_told_on_the_other_channels_only,
);
