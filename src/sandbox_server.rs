//! The sandbox provider itself: an HTTP API that creates, settles, queries
//! and closes payments and notifies a webhook URL, with chaos knobs to make
//! it misbehave the ways real providers do. Runs as `reckon sandbox` or
//! in-process for the demo and the tests; state is in memory. It is the
//! other side of `providers::sandbox` (whose wire types it shares), not an
//! adapter, so it lives outside `providers/`, which speaks no axum.

use crate::providers::sandbox::{PaymentData, RefundData};
use crate::providers::signing::Secret;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use http::StatusCode;
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How the sandbox misbehaves. Every knob defaults to "well-behaved".
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Chaos {
    /// Milliseconds from create to the final result.
    pub settle_ms: u64,
    /// Share of payments that fail instead of succeeding (0–1).
    pub fail_rate: f64,
    /// Each notification is sent this many times.
    pub duplicates: u32,
    /// After the final notification, send a stale PENDING one.
    pub reorder: bool,
    /// Extra delay before each notification, milliseconds.
    pub delay_ms: u64,
    /// Share of payments whose notifications are never sent (0–1).
    pub drop_rate: f64,
    /// Added to the amount in notifications (minor units): a lying channel.
    pub alter_amount_minor: i64,
    /// Delay before answering status queries, milliseconds.
    pub query_delay_ms: u64,
    /// Share of status queries answered 500 (0–1).
    pub query_error_rate: f64,
    /// Share of refunds that fail at the provider (0–1).
    pub refund_fail_rate: f64,
    /// Statement pages answer 500 from this page on (1-based): a pull that
    /// breaks mid-way.
    pub statement_fail_page: Option<u32>,
    /// Rows per statement page.
    pub statement_page_size: u32,
}

impl Default for Chaos {
    fn default() -> Self {
        Chaos {
            settle_ms: 300,
            fail_rate: 0.0,
            duplicates: 1,
            reorder: false,
            delay_ms: 0,
            drop_rate: 0.0,
            alter_amount_minor: 0,
            query_delay_ms: 0,
            query_error_rate: 0.0,
            refund_fail_rate: 0.0,
            statement_fail_page: None,
            statement_page_size: 100,
        }
    }
}

#[derive(Clone)]
pub struct SandboxServer {
    inner: Arc<Inner>,
}

struct Inner {
    payments: Mutex<HashMap<String, PaymentData>>,
    refunds: Mutex<HashMap<String, RefundData>>,
    /// When each payment or refund (by its number) settled, for statements.
    settled_at: Mutex<HashMap<String, jiff::Timestamp>>,
    chaos: Mutex<Chaos>,
    notify_url: Mutex<String>,
    secret: Secret,
    http: reqwest::Client,
}

#[derive(Deserialize)]
struct CreateBody {
    payment_no: String,
    amount: String,
    currency: String,
}

impl SandboxServer {
    pub fn new(notify_url: &str, secret: Secret, chaos: Chaos) -> SandboxServer {
        SandboxServer {
            inner: Arc::new(Inner {
                payments: Mutex::new(HashMap::new()),
                refunds: Mutex::new(HashMap::new()),
                settled_at: Mutex::new(HashMap::new()),
                chaos: Mutex::new(chaos),
                notify_url: Mutex::new(notify_url.to_owned()),
                secret,
                http: reqwest::Client::builder()
                    .timeout(Duration::from_secs(10))
                    .build()
                    .expect("an HTTP client"),
            }),
        }
    }

    pub fn set_chaos(&self, chaos: Chaos) {
        *self.inner.chaos.lock().unwrap() = chaos;
    }

    pub fn set_notify_url(&self, url: &str) {
        *self.inner.notify_url.lock().unwrap() = url.to_owned();
    }

    pub fn router(&self) -> Router {
        Router::new()
            .route("/v1/payments", post(create))
            .route("/v1/payments/{payment_no}", get(query))
            .route("/v1/payments/{payment_no}/close", post(close))
            .route("/v1/statements/{date}", get(statement))
            .route("/v1/refunds", post(create_refund))
            .route("/v1/refunds/{refund_no}", get(query_refund))
            .route("/v1/chaos", get(get_chaos).post(set_chaos))
            .with_state(self.clone())
    }

    /// Records a payment as the provider's own (tests and tools).
    pub fn put(&self, data: PaymentData) {
        self.mark_settled(&data.payment_no);
        self.inner
            .payments
            .lock()
            .unwrap()
            .insert(data.payment_no.clone(), data);
    }

    /// The provider's record of a payment settled at `at` (the demo's
    /// history: it shows in the statement of that day).
    pub fn put_settled(&self, data: PaymentData, at: jiff::Timestamp) {
        self.inner
            .settled_at
            .lock()
            .unwrap()
            .insert(data.payment_no.clone(), at);
        self.inner
            .payments
            .lock()
            .unwrap()
            .insert(data.payment_no.clone(), data);
    }

    /// Settles a pending payment now (tests and demo), then notifies.
    pub fn settle(&self, payment_no: &str, succeed: bool) {
        let data = {
            let mut map = self.inner.payments.lock().unwrap();
            let Some(p) = map.get_mut(payment_no) else {
                return;
            };
            if p.status != "PENDING" {
                return;
            }
            p.status = if succeed { "SUCCEEDED" } else { "FAILED" }.into();
            p.clone()
        };
        self.mark_settled(payment_no);
        self.notify(data);
    }

    fn mark_settled(&self, key: &str) {
        self.inner
            .settled_at
            .lock()
            .unwrap()
            .insert(key.to_owned(), jiff::Timestamp::now());
    }

    /// The sandbox's statement of a UTC day: payments that succeeded and
    /// refunds that succeeded, in a stable order.
    pub fn statement_rows(&self, date: &str) -> Vec<serde_json::Value> {
        let settled = self.inner.settled_at.lock().unwrap().clone();
        let on_day = |key: &str| {
            settled
                .get(key)
                .is_some_and(|t| t.strftime("%Y-%m-%d").to_string() == date)
        };
        let mut rows: Vec<(String, serde_json::Value)> = Vec::new();
        for p in self.inner.payments.lock().unwrap().values() {
            if p.status == "SUCCEEDED" && on_day(&p.payment_no) {
                rows.push((
                    format!("p{}", p.payment_no),
                    serde_json::json!({"kind": "payment", "txn_id": p.txn_id, "payment_no": p.payment_no,
                        "refund_id": "", "refund_no": "", "status": "SUCCEEDED", "amount": p.amount,
                        "currency": p.currency, "occurred_at": settled[&p.payment_no].to_string()}),
                ));
            }
        }
        for r in self.inner.refunds.lock().unwrap().values() {
            if r.status == "SUCCEEDED" && on_day(&r.refund_no) {
                rows.push((
                    format!("r{}", r.refund_no),
                    serde_json::json!({"kind": "refund", "txn_id": r.txn_id, "payment_no": r.payment_no,
                        "refund_id": r.refund_id, "refund_no": r.refund_no, "status": "SUCCEEDED",
                        "amount": r.amount, "currency": r.currency,
                        "occurred_at": settled[&r.refund_no].to_string()}),
                ));
            }
        }
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        rows.into_iter().map(|(_, v)| v).collect()
    }

    /// A refund as the sandbox holds it (tests).
    pub fn refund(&self, refund_no: &str) -> Option<RefundData> {
        self.inner.refunds.lock().unwrap().get(refund_no).cloned()
    }

    /// Settles a pending refund now (tests and demo), then notifies.
    pub fn settle_refund(&self, refund_no: &str, succeed: bool) {
        let data = {
            let mut map = self.inner.refunds.lock().unwrap();
            let Some(r) = map.get_mut(refund_no) else {
                return;
            };
            if r.status != "PENDING" {
                return;
            }
            r.status = if succeed { "SUCCEEDED" } else { "FAILED" }.into();
            r.clone()
        };
        self.mark_settled(refund_no);
        self.notify_refund(data);
    }

    /// Sends a refund notification with the same chaos as payments.
    pub fn notify_refund(&self, data: RefundData) {
        self.notify_with_chaos(data);
    }

    fn notify(&self, data: PaymentData) {
        self.notify_with_chaos(data);
    }

    /// One notification through the chaos knobs: dropped, its amount
    /// altered, followed by a stale PENDING copy, each sent N times after a
    /// delay.
    fn notify_with_chaos<T: Notice>(&self, data: T) {
        let chaos = self.inner.chaos.lock().unwrap().clone();
        if rand::thread_rng().gen_bool(chaos.drop_rate.clamp(0.0, 1.0)) {
            tracing::info!(kind = T::KIND, "sandbox drops the notification");
            return;
        }
        let mut sent = data;
        if chaos.alter_amount_minor != 0
            && let Ok(cur) = crate::domain::Currency::parse(sent.currency())
            && let Ok(m) = crate::domain::Money::parse_major(sent.amount_mut(), cur)
        {
            *sent.amount_mut() =
                crate::domain::Money::new(m.minor + chaos.alter_amount_minor, cur).major_string();
        }
        let mut messages = vec![sent.clone()];
        if chaos.reorder {
            let mut stale = sent;
            *stale.status_mut() = "PENDING".into();
            messages.push(stale);
        }
        let this = self.clone();
        tokio::spawn(async move {
            for mut message in messages {
                let id = format!("evt_{}", uuid::Uuid::new_v4().simple());
                let event_type =
                    format!("{}.{}", T::KIND, message.status_mut().to_ascii_lowercase());
                let body = serde_json::to_vec(&serde_json::json!({
                    "id": id, "type": event_type, "data": message,
                }))
                .expect("serializable");
                for _ in 0..chaos.duplicates.max(1) {
                    if chaos.delay_ms > 0 {
                        tokio::time::sleep(Duration::from_millis(chaos.delay_ms)).await;
                    }
                    this.send_raw(&id, &body).await;
                }
            }
        });
    }

    /// Posts one signed notification; like a real provider it tries again
    /// (three times, a second apart) until it gets a 2xx.
    async fn send_raw(&self, id: &str, body: &[u8]) {
        let url = self.inner.notify_url.lock().unwrap().clone();
        for attempt in 1..=3 {
            let ts = jiff::Timestamp::now().as_second();
            let res = self
                .inner
                .http
                .post(&url)
                .header("content-type", "application/json")
                .header("webhook-id", id)
                .header("webhook-timestamp", ts.to_string())
                .header("webhook-signature", self.inner.secret.sign(id, ts, body))
                .body(body.to_vec())
                .send()
                .await;
            match res {
                Ok(r) if r.status().is_success() => return,
                Ok(r) => {
                    tracing::debug!(status = %r.status(), attempt, "sandbox notification refused")
                }
                Err(e) => tracing::debug!(error = %e, attempt, "sandbox notification failed"),
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

/// What the sandbox notifies about: a payment or a refund.
trait Notice: Clone + Serialize + Send + 'static {
    const KIND: &'static str;
    fn amount_mut(&mut self) -> &mut String;
    fn currency(&self) -> &str;
    fn status_mut(&mut self) -> &mut String;
}

impl Notice for PaymentData {
    const KIND: &'static str = "payment";
    fn amount_mut(&mut self) -> &mut String {
        &mut self.amount
    }
    fn currency(&self) -> &str {
        &self.currency
    }
    fn status_mut(&mut self) -> &mut String {
        &mut self.status
    }
}

impl Notice for RefundData {
    const KIND: &'static str = "refund";
    fn amount_mut(&mut self) -> &mut String {
        &mut self.amount
    }
    fn currency(&self) -> &str {
        &self.currency
    }
    fn status_mut(&mut self) -> &mut String {
        &mut self.status
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(serde_json::json!({ "error": message }))).into_response()
}

async fn create(State(s): State<SandboxServer>, Json(body): Json<CreateBody>) -> Response {
    let Ok(cur) = crate::domain::Currency::parse(&body.currency) else {
        return error(StatusCode::BAD_REQUEST, "unknown currency");
    };
    if crate::domain::Money::parse_major(&body.amount, cur).is_err() {
        return error(StatusCode::BAD_REQUEST, "bad amount");
    }
    let data = {
        let mut map = s.inner.payments.lock().unwrap();
        if let Some(existing) = map.get(&body.payment_no) {
            // Creating twice is idempotent, as with real providers.
            existing.clone()
        } else {
            let data = PaymentData {
                payment_no: body.payment_no.clone(),
                txn_id: format!("SBX{}", uuid::Uuid::new_v4().simple()),
                status: "PENDING".into(),
                amount: body.amount,
                currency: cur.code().into(),
            };
            map.insert(body.payment_no.clone(), data.clone());
            let (settle_ms, fail_rate) = {
                let c = s.inner.chaos.lock().unwrap();
                (c.settle_ms, c.fail_rate)
            };
            let this = s.clone();
            let no = body.payment_no.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(settle_ms)).await;
                let succeed = !rand::thread_rng().gen_bool(fail_rate.clamp(0.0, 1.0));
                this.settle(&no, succeed);
            });
            data
        }
    };
    Json(data).into_response()
}

async fn query(State(s): State<SandboxServer>, Path(payment_no): Path<String>) -> Response {
    let (delay, error_rate) = {
        let c = s.inner.chaos.lock().unwrap();
        (c.query_delay_ms, c.query_error_rate)
    };
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    if rand::thread_rng().gen_bool(error_rate.clamp(0.0, 1.0)) {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "chaos: query failed");
    }
    match s.inner.payments.lock().unwrap().get(&payment_no) {
        Some(p) => Json(p.clone()).into_response(),
        None => error(StatusCode::NOT_FOUND, "no such payment"),
    }
}

async fn close(State(s): State<SandboxServer>, Path(payment_no): Path<String>) -> Response {
    let mut map = s.inner.payments.lock().unwrap();
    match map.get_mut(&payment_no) {
        None => error(StatusCode::NOT_FOUND, "no such payment"),
        Some(p) if p.status == "PENDING" || p.status == "CLOSED" => {
            p.status = "CLOSED".into();
            Json(p.clone()).into_response()
        }
        Some(p) => error(StatusCode::CONFLICT, &format!("payment is {}", p.status)),
    }
}

#[derive(Deserialize)]
struct RefundBody {
    refund_no: String,
    payment_no: String,
    amount: String,
    currency: String,
}

async fn create_refund(State(s): State<SandboxServer>, Json(body): Json<RefundBody>) -> Response {
    use crate::domain::{Currency, Money};
    let Ok(cur) = Currency::parse(&body.currency) else {
        return error(StatusCode::BAD_REQUEST, "unknown currency");
    };
    let Ok(amount) = Money::parse_major(&body.amount, cur) else {
        return error(StatusCode::BAD_REQUEST, "bad amount");
    };
    let payment = s
        .inner
        .payments
        .lock()
        .unwrap()
        .get(&body.payment_no)
        .cloned();
    let Some(payment) = payment else {
        return error(StatusCode::NOT_FOUND, "no such payment");
    };
    let data = {
        let mut refunds = s.inner.refunds.lock().unwrap();
        if let Some(existing) = refunds.get(&body.refund_no) {
            // Refunding twice with one refund_no is one refund.
            return Json(existing.clone()).into_response();
        }
        if payment.status != "SUCCEEDED" {
            return error(
                StatusCode::CONFLICT,
                &format!("payment is {}", payment.status),
            );
        }
        let paid = Money::parse_major(&payment.amount, cur).map_or(0, |m| m.minor);
        let taken: i64 = refunds
            .values()
            .filter(|r| r.payment_no == body.payment_no && r.status != "FAILED")
            .filter_map(|r| Money::parse_major(&r.amount, cur).ok())
            .map(|m| m.minor)
            .sum();
        if payment.currency != cur.code() || taken + amount.minor > paid {
            return error(StatusCode::CONFLICT, "refund exceeds the refundable amount");
        }
        let data = RefundData {
            refund_no: body.refund_no.clone(),
            refund_id: format!("SBXR{}", uuid::Uuid::new_v4().simple()),
            payment_no: body.payment_no.clone(),
            txn_id: payment.txn_id.clone(),
            status: "PENDING".into(),
            amount: amount.major_string(),
            currency: cur.code().into(),
        };
        refunds.insert(body.refund_no.clone(), data.clone());
        data
    };
    let (settle_ms, fail_rate) = {
        let c = s.inner.chaos.lock().unwrap();
        (c.settle_ms, c.refund_fail_rate)
    };
    let this = s.clone();
    let no = body.refund_no.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(settle_ms)).await;
        let succeed = !rand::thread_rng().gen_bool(fail_rate.clamp(0.0, 1.0));
        this.settle_refund(&no, succeed);
    });
    Json(data).into_response()
}

async fn query_refund(State(s): State<SandboxServer>, Path(refund_no): Path<String>) -> Response {
    let error_rate = s.inner.chaos.lock().unwrap().query_error_rate;
    if rand::thread_rng().gen_bool(error_rate.clamp(0.0, 1.0)) {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "chaos: query failed");
    }
    match s.inner.refunds.lock().unwrap().get(&refund_no) {
        Some(r) => Json(r.clone()).into_response(),
        None => error(StatusCode::NOT_FOUND, "no such refund"),
    }
}

#[derive(Deserialize)]
struct Page {
    cursor: Option<String>,
}

/// `GET /v1/statements/{date}?cursor=…`: one page of the day's statement;
/// `next_cursor` until the last page, which carries the summary.
async fn statement(
    State(s): State<SandboxServer>,
    Path(date): Path<String>,
    axum::extract::Query(page): axum::extract::Query<Page>,
) -> Response {
    if date.parse::<jiff::civil::Date>().is_err() {
        return error(StatusCode::BAD_REQUEST, "date must be YYYY-MM-DD");
    }
    let (size, fail_page) = {
        let c = s.inner.chaos.lock().unwrap();
        (c.statement_page_size.max(1) as usize, c.statement_fail_page)
    };
    let start: usize = match page.cursor.as_deref().map(str::parse) {
        None => 0,
        Some(Ok(n)) => n,
        Some(Err(_)) => return error(StatusCode::BAD_REQUEST, "bad cursor"),
    };
    let number = start / size + 1;
    if fail_page.is_some_and(|f| number as u32 >= f) {
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("chaos: statement page {number} failed"),
        );
    }
    let rows = s.statement_rows(&date);
    let end = (start + size).min(rows.len());
    let page_rows = rows.get(start..end).unwrap_or_default().to_vec();
    let last = end >= rows.len();
    let mut body = serde_json::json!({ "page": number, "rows": page_rows });
    if last {
        let total: i64 = rows
            .iter()
            .filter_map(|r| {
                let cur = crate::domain::Currency::parse(r["currency"].as_str()?).ok()?;
                crate::domain::Money::parse_major(r["amount"].as_str()?, cur).ok()
            })
            .map(|m| m.minor)
            .sum();
        body["summary"] = serde_json::json!({ "rows": rows.len(), "total_minor": total });
        body["next_cursor"] = serde_json::Value::Null;
    } else {
        body["next_cursor"] = end.to_string().into();
    }
    Json(body).into_response()
}

async fn get_chaos(State(s): State<SandboxServer>) -> Json<Chaos> {
    Json(s.inner.chaos.lock().unwrap().clone())
}

async fn set_chaos(State(s): State<SandboxServer>, Json(chaos): Json<Chaos>) -> Json<Chaos> {
    *s.inner.chaos.lock().unwrap() = chaos.clone();
    Json(chaos)
}
