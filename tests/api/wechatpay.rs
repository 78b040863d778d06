//! WeChat Pay v3 notifications built at test time the documented way,
//! independently of the adapter: a platform key made here signs
//! "{timestamp}\n{nonce}\n{body}\n", and the transaction is sealed with
//! AEAD_AES_256_GCM under the APIv3 key. A local server speaks the v3
//! query API: it checks the `WECHATPAY2-SHA256-RSA2048` Authorization with
//! the merchant's public key and signs its answers with the platform key.
//! Each on SQLite and PostgreSQL.

use crate::both_databases;
use crate::helpers::{Backend, TestApp, spawn_app_with};
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine as _;
use reckon::config::ProviderConfig;
use reckon::context::ManualClock;
use reckon::providers::wechatpay::WechatPayConfig;
use reckon::startup::Options;
use rsa::RsaPrivateKey;
use rsa::pkcs1v15::SigningKey;
use rsa::pkcs1v15::{Signature, VerifyingKey};
use rsa::pkcs8::{EncodePrivateKey, EncodePublicKey};
use rsa::signature::{SignatureEncoding, Signer, Verifier};
use sha2::Sha256;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

pub(crate) const APIV3_KEY: &str = "0123456789abcdef0123456789ABCDEF";
pub(crate) const SERIAL: &str = "5157F09EFDC096DE15EBE81A47057A72";
pub(crate) const MCH_ID: &str = "1900000001";
const MERCHANT_SERIAL: &str = "3775B6A45ACD588826D15E583A95F5DD";

pub(crate) struct Wechat {
    pub(crate) app: TestApp,
    /// The platform key: signs notifications and API answers.
    pub(crate) key: RsaPrivateKey,
    pub(crate) clock: Arc<ManualClock>,
    pub(crate) api: Api,
}

/// The v3 order query, as WeChat Pay answers it.
#[derive(Clone)]
pub(crate) struct Api {
    pub(crate) platform_key: RsaPrivateKey,
    pub(crate) merchant_key: VerifyingKey<Sha256>,
    /// out_trade_no → the transaction JSON.
    pub(crate) orders: Arc<Mutex<BTreeMap<String, serde_json::Value>>>,
    /// The bill API's days and faults (tests/api/pulls/wechat.rs).
    pub(crate) bills: Arc<Mutex<crate::pulls::wechat::Desk>>,
    /// out_refund_no → the refund JSON.
    pub(crate) refunds: Arc<Mutex<BTreeMap<String, serde_json::Value>>>,
    pub(crate) stall: Arc<AtomicUsize>,
    pub(crate) calls: Arc<AtomicUsize>,
    pub(crate) bad_requests: Arc<AtomicUsize>,
}

/// `WECHATPAY2-SHA256-RSA2048 k="v",…` → its fields.
fn authorization_fields(header: &str) -> Option<BTreeMap<String, String>> {
    let rest = header.strip_prefix("WECHATPAY2-SHA256-RSA2048 ")?;
    rest.split(',')
        .map(|kv| {
            let (k, v) = kv.split_once('=')?;
            Some((k.trim().to_owned(), v.trim().trim_matches('"').to_owned()))
        })
        .collect()
}

/// Whether the request's Authorization is the merchant's signature of
/// "{method}\n{path?query}\n{timestamp}\n{nonce}\n{body}\n".
pub(crate) fn authorized(
    api: &Api,
    method: &str,
    uri: &axum::http::Uri,
    headers: &axum::http::HeaderMap,
    body: &str,
) -> bool {
    let path_and_query = uri.path_and_query().unwrap().as_str().to_owned();
    let good = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(authorization_fields)
        .is_some_and(|f| {
            let message = format!(
                "{method}\n{path_and_query}\n{}\n{}\n{body}\n",
                f["timestamp"], f["nonce_str"]
            );
            let sig = base64::engine::general_purpose::STANDARD
                .decode(&f["signature"])
                .ok()
                .and_then(|b| Signature::try_from(b.as_slice()).ok());
            f["mchid"] == MCH_ID
                && f["serial_no"] == MERCHANT_SERIAL
                && sig.is_some_and(|s| api.merchant_key.verify(message.as_bytes(), &s).is_ok())
        });
    if !good {
        api.bad_requests.fetch_add(1, Ordering::SeqCst);
    }
    good
}

/// An answer signed with the platform key, as WeChat Pay signs them.
pub(crate) fn signed(api: &Api, status: u16, body: serde_json::Value) -> axum::response::Response {
    use axum::response::IntoResponse;
    let body = body.to_string();
    let ts = jiff::Timestamp::now().as_second();
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    let signature = SigningKey::<Sha256>::new(api.platform_key.clone())
        .sign(format!("{ts}\n{nonce}\n{body}\n").as_bytes());
    (
        axum::http::StatusCode::from_u16(status).unwrap(),
        [
            ("content-type", "application/json".to_owned()),
            ("wechatpay-timestamp", ts.to_string()),
            ("wechatpay-nonce", nonce),
            ("wechatpay-serial", SERIAL.to_owned()),
            (
                "wechatpay-signature",
                base64::engine::general_purpose::STANDARD.encode(signature.to_bytes()),
            ),
        ],
        body,
    )
        .into_response()
}

pub(crate) fn sign_error() -> serde_json::Value {
    serde_json::json!({"code": "SIGN_ERROR", "message": "签名错误"})
}

async fn query_order(
    axum::extract::State(api): axum::extract::State<Api>,
    axum::extract::Path(no): axum::extract::Path<String>,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    if !authorized(&api, "GET", &uri, &headers, "")
        || uri.query() != Some(&format!("mchid={MCH_ID}"))
    {
        return signed(&api, 401, sign_error());
    }
    api.calls.fetch_add(1, Ordering::SeqCst);
    if api
        .stall
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
    {
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    }
    let found = api.orders.lock().unwrap().get(&no).cloned();
    match found {
        Some(t) => signed(&api, 200, t),
        None => signed(
            &api,
            404,
            serde_json::json!({"code": "ORDER_NOT_EXIST", "message": "订单不存在"}),
        ),
    }
}

/// `POST /v3/refund/domestic/refunds`, idempotent on out_refund_no.
async fn create_refund(
    axum::extract::State(api): axum::extract::State<Api>,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
    body: String,
) -> axum::response::Response {
    if !authorized(&api, "POST", &uri, &headers, &body) {
        return signed(&api, 401, sign_error());
    }
    api.calls.fetch_add(1, Ordering::SeqCst);
    let req: serde_json::Value = serde_json::from_str(&body).unwrap();
    let no = req["out_refund_no"].as_str().unwrap().to_owned();
    let order = api
        .orders
        .lock()
        .unwrap()
        .get(req["out_trade_no"].as_str().unwrap())
        .cloned();
    let Some(order) = order else {
        return signed(
            &api,
            404,
            serde_json::json!({"code": "RESOURCE_NOT_EXISTS", "message": "订单不存在"}),
        );
    };
    if req["amount"]["total"] != order["amount"]["total"] {
        return signed(
            &api,
            400,
            serde_json::json!({"code": "PARAM_ERROR", "message": "订单金额不一致"}),
        );
    }
    let mut refunds = api.refunds.lock().unwrap();
    let refund = refunds.entry(no.clone()).or_insert_with(|| serde_json::json!({
        "refund_id": format!("50300{}", refund_id_suffix()), "out_refund_no": no,
        "transaction_id": order["transaction_id"], "out_trade_no": order["out_trade_no"],
        "channel": "ORIGINAL", "user_received_account": "支付用户零钱", "status": "PROCESSING",
        "create_time": "2026-11-30T12:00:00+08:00",
        "amount": {"total": order["amount"]["total"], "refund": req["amount"]["refund"],
                   "payer_total": order["amount"]["total"], "payer_refund": req["amount"]["refund"],
                   "currency": "CNY"}
    }));
    signed(&api, 200, refund.clone())
}

fn refund_id_suffix() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_owned()
}

async fn query_refund(
    axum::extract::State(api): axum::extract::State<Api>,
    axum::extract::Path(no): axum::extract::Path<String>,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    if !authorized(&api, "GET", &uri, &headers, "") {
        return signed(&api, 401, sign_error());
    }
    api.calls.fetch_add(1, Ordering::SeqCst);
    let found = api.refunds.lock().unwrap().get(&no).cloned();
    match found {
        Some(r) => signed(&api, 200, r),
        None => signed(
            &api,
            404,
            serde_json::json!({"code": "RESOURCE_NOT_EXISTS", "message": "退款单不存在"}),
        ),
    }
}

/// A notification envelope whose resource is sealed the documented way:
/// AEAD_AES_256_GCM under the APIv3 key, 12-byte nonce, associated data.
fn sealed(
    id: &str,
    event_type: &str,
    original_type: &str,
    resource: &serde_json::Value,
    key: &str,
) -> String {
    sealed_with(id, event_type, original_type, resource, key, "fdasflkja484")
}

/// Sealed under a resource nonce of the caller's (WeChat Pay seals each
/// delivery anew).
fn sealed_with(
    id: &str,
    event_type: &str,
    original_type: &str,
    resource: &serde_json::Value,
    key: &str,
    nonce: &str,
) -> String {
    let ciphertext = Aes256Gcm::new_from_slice(key.as_bytes())
        .unwrap()
        .encrypt(
            Nonce::from_slice(nonce.as_bytes()),
            Payload {
                msg: resource.to_string().as_bytes(),
                aad: original_type.as_bytes(),
            },
        )
        .unwrap();
    serde_json::json!({
        "id": id, "create_time": "2026-11-30T10:00:00+08:00", "resource_type": "encrypt-resource",
        "event_type": event_type, "summary": "通知",
        "resource": { "original_type": original_type, "algorithm": "AEAD_AES_256_GCM",
                      "ciphertext": base64::engine::general_purpose::STANDARD.encode(ciphertext),
                      "associated_data": original_type, "nonce": nonce }
    })
    .to_string()
}

pub(crate) async fn spawn(b: Backend) -> Wechat {
    spawn_limited(b, None).await
}

/// [`spawn`], the account taking bills of at most `max_bill_bytes`.
pub(crate) async fn spawn_limited(b: Backend, max_bill_bytes: Option<u64>) -> Wechat {
    let key = RsaPrivateKey::new(&mut rand::rngs::OsRng, 2048).unwrap();
    let pem = key
        .to_public_key()
        .to_public_key_pem(rsa::pkcs8::LineEnding::LF)
        .unwrap();
    let merchant = RsaPrivateKey::new(&mut rand::rngs::OsRng, 2048).unwrap();
    let api = Api {
        platform_key: key.clone(),
        merchant_key: VerifyingKey::new(merchant.to_public_key()),
        orders: Arc::default(),
        refunds: Arc::default(),
        stall: Arc::default(),
        calls: Arc::default(),
        bad_requests: Arc::default(),
        bills: Arc::default(),
    };
    let router = crate::pulls::wechat::routes()
        .route(
            "/v3/pay/transactions/out-trade-no/{no}",
            axum::routing::get(query_order),
        )
        .route(
            "/v3/refund/domestic/refunds",
            axum::routing::post(create_refund),
        )
        .route(
            "/v3/refund/domestic/refunds/{no}",
            axum::routing::get(query_refund),
        )
        .with_state(api.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    api.bills.lock().unwrap().base = base.clone();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let clock = Arc::new(ManualClock::default());
    let app = spawn_app_with(
        b,
        |c| {
            c.providers = vec![ProviderConfig::WechatPay(WechatPayConfig {
                name: "wechat".into(),
                api_key: APIV3_KEY.into(),
                platform_keys: [(SERIAL.to_string(), pem)].into_iter().collect(),
                base_url: base,
                mch_id: Some(MCH_ID.into()),
                cert_serial: Some(MERCHANT_SERIAL.into()),
                private_key: Some(
                    merchant
                        .to_pkcs8_pem(rsa::pkcs8::LineEnding::LF)
                        .unwrap()
                        .to_string()
                        .into(),
                ),
                timeout_ms: Some(400),
                max_bill_bytes,
                ..WechatPayConfig::default()
            })];
        },
        Options {
            demo: false,
            clock: clock.clone(),
            workers: false,
            ..Options::default()
        },
    )
    .await;
    Wechat {
        app,
        key,
        clock,
        api,
    }
}

impl Wechat {
    pub(crate) fn envelope(
        &self,
        id: &str,
        payment_no: &str,
        state: &str,
        total: i64,
        key: &str,
    ) -> String {
        let transaction = serde_json::json!({
            "mchid": "1900000001", "appid": "wx0000000000000001", "out_trade_no": payment_no,
            "transaction_id": format!("4200{id}"), "trade_state": state, "trade_type": "NATIVE",
            "amount": { "total": total, "payer_total": total, "currency": "CNY", "payer_currency": "CNY" }
        });
        sealed(id, "TRANSACTION.SUCCESS", "transaction", &transaction, key)
    }

    /// The same transaction notification sealed under another resource
    /// nonce, as a WeChat Pay redelivery is.
    fn resealed(&self, id: &str, payment_no: &str, total: i64, nonce: &str) -> String {
        let transaction = serde_json::json!({
            "mchid": "1900000001", "appid": "wx0000000000000001", "out_trade_no": payment_no,
            "transaction_id": format!("4200{id}"), "trade_state": "SUCCESS", "trade_type": "NATIVE",
            "amount": { "total": total, "payer_total": total, "currency": "CNY", "payer_currency": "CNY" }
        });
        sealed_with(
            id,
            "TRANSACTION.SUCCESS",
            "transaction",
            &transaction,
            APIV3_KEY,
            nonce,
        )
    }

    /// A REFUND.* notification as WeChat Pay sends it.
    fn refund_envelope(&self, id: &str, refund: &serde_json::Value, status: &str) -> String {
        let resource = serde_json::json!({
            "mchid": MCH_ID, "out_trade_no": refund["out_trade_no"], "transaction_id": refund["transaction_id"],
            "out_refund_no": refund["out_refund_no"], "refund_id": refund["refund_id"],
            "refund_status": status, "success_time": "2026-11-30T12:05:00+08:00",
            "user_received_account": "支付用户零钱",
            "amount": { "total": refund["amount"]["total"], "refund": refund["amount"]["refund"],
                        "payer_total": refund["amount"]["total"], "payer_refund": refund["amount"]["refund"] }
        });
        sealed(
            id,
            &format!("REFUND.{status}"),
            "refund",
            &resource,
            APIV3_KEY,
        )
    }

    pub(crate) async fn post(
        &self,
        body: &str,
        ts: i64,
        nonce: &str,
        serial: &str,
        key: &RsaPrivateKey,
    ) -> (u16, String) {
        self.post_to(&self.app.base, body, ts, nonce, serial, key)
            .await
    }

    /// Signed and sent to the server at `base`.
    async fn post_to(
        &self,
        base: &str,
        body: &str,
        ts: i64,
        nonce: &str,
        serial: &str,
        key: &RsaPrivateKey,
    ) -> (u16, String) {
        let message = format!("{ts}\n{nonce}\n{body}\n");
        let signature = SigningKey::<Sha256>::new(key.clone()).sign(message.as_bytes());
        let res = self
            .app
            .client
            .post(format!("{base}/webhooks/wechat"))
            .header("content-type", "application/json")
            .header("wechatpay-timestamp", ts.to_string())
            .header("wechatpay-nonce", nonce)
            .header("wechatpay-serial", serial)
            .header(
                "wechatpay-signature",
                base64::engine::general_purpose::STANDARD.encode(signature.to_bytes()),
            )
            .body(body.to_owned())
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), res.text().await.unwrap())
    }

    pub(crate) fn now(&self) -> i64 {
        self.app.engine.now() / 1_000_000
    }
}

async fn a_sealed_and_signed_wechat_notification_is_applied_once(b: Backend) {
    let w = spawn(b).await;
    let p = w.app.register_payment("wechat", "WX-1", 199, "CNY").await;
    let body = w.envelope("EV-1", &p, "SUCCESS", 199, APIV3_KEY);
    let now = w.now();
    assert_eq!(w.post(&body, now, "nonce-1", SERIAL, &w.key).await.0, 204);
    // WeChat's own retry: same notification, new nonce — a duplicate.
    assert_eq!(w.post(&body, now, "nonce-2", SERIAL, &w.key).await.0, 204);
    assert_eq!(w.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
}

async fn forged_replayed_or_undecryptable_wechat_notifications_are_refused(b: Backend) {
    let w = spawn(b).await;
    let p = w.app.register_payment("wechat", "WX-2", 199, "CNY").await;
    let body = w.envelope("EV-2", &p, "SUCCESS", 199, APIV3_KEY);
    let now = w.now();
    let other = RsaPrivateKey::new(&mut rand::rngs::OsRng, 2048).unwrap();
    let fail = |(status, text): (u16, String)| {
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["code"], "FAIL", "{text}");
        status
    };
    assert_eq!(
        fail(w.post(&body, now, "n-a", SERIAL, &other).await),
        401,
        "wrong key"
    );
    assert_eq!(
        fail(w.post(&body, now, "n-b", "UNKNOWNSERIAL", &w.key).await),
        401,
        "unknown serial"
    );
    assert_eq!(
        fail(w.post(&body, now - 301, "n-c", SERIAL, &w.key).await),
        401,
        "stale"
    );
    let tampered = body.replace("EV-2", "EV-3");
    let res = {
        // Signed over the original body, sent with another.
        let message = format!("{now}\n{}\n{body}\n", "n-d");
        let signature = SigningKey::<Sha256>::new(w.key.clone()).sign(message.as_bytes());
        w.app
            .client
            .post(format!("{}/webhooks/wechat", w.app.base))
            .header("content-type", "application/json")
            .header("wechatpay-timestamp", now.to_string())
            .header("wechatpay-nonce", "n-d")
            .header("wechatpay-serial", SERIAL)
            .header(
                "wechatpay-signature",
                base64::engine::general_purpose::STANDARD.encode(signature.to_bytes()),
            )
            .body(tampered)
            .send()
            .await
            .unwrap()
    };
    assert_eq!(res.status(), 401, "tampered body");
    // Sealed with another APIv3 key: signed fine, does not decrypt.
    let sealed_wrong = w.envelope(
        "EV-4",
        &p,
        "SUCCESS",
        199,
        "ffffffffffffffffffffffffffffffff",
    );
    assert_eq!(
        fail(w.post(&sealed_wrong, now, "n-e", SERIAL, &w.key).await),
        400
    );
    assert_eq!(w.app.payment_state(&p).await, ("CREATED".to_string(), 0));
    // A good one, then the very same headers again: a replayed nonce.
    assert_eq!(w.post(&body, now, "n-f", SERIAL, &w.key).await.0, 204);
    assert_eq!(
        fail(w.post(&body, now, "n-f", SERIAL, &w.key).await),
        401,
        "replayed nonce"
    );
    assert_eq!(w.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
}

async fn a_missing_wechat_notification_is_found_by_the_order_query_after_a_timeout(b: Backend) {
    let w = spawn(b).await;
    let p = w.app.register_payment("wechat", "WX-Q", 2599, "CNY").await;
    let engine = w.app.engine.clone();
    let run = || async {
        reckon::workers::run_provider_tasks(&engine, engine.now())
            .await
            .unwrap()
    };
    assert_eq!(run().await, 1, "the create task schedules a query");
    // Not known to WeChat Pay yet.
    w.clock.advance_secs(61);
    assert_eq!(run().await, 1);
    assert_eq!(w.app.payment_state(&p).await, ("CREATED".to_string(), 0));
    // Paid, but the answer stalls past the timeout: still unknown.
    w.api.orders.lock().unwrap().insert(
        p.clone(),
        serde_json::json!({
            "appid": "wx0000000000000001", "mchid": MCH_ID, "out_trade_no": p,
            "transaction_id": "4200002026113012345", "trade_type": "NATIVE",
            "trade_state": "SUCCESS", "trade_state_desc": "支付成功", "bank_type": "OTHERS",
            "success_time": "2026-11-30T10:00:00+08:00", "payer": {"openid": "o1"},
            "amount": {"total": 2599, "payer_total": 2599, "currency": "CNY", "payer_currency": "CNY"}
        }),
    );
    w.api.stall.store(1, Ordering::SeqCst);
    w.clock.advance_secs(5 * 60 + 1);
    assert_eq!(run().await, 1);
    assert_eq!(
        w.app.payment_state(&p).await,
        ("CREATED".to_string(), 0),
        "a timeout is no result"
    );
    // The next query converges.
    w.clock.advance_secs(30 * 60 + 1);
    assert_eq!(run().await, 1);
    assert_eq!(w.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
    assert_eq!(w.api.calls.load(Ordering::SeqCst), 3);
    assert_eq!(w.api.bad_requests.load(Ordering::SeqCst), 0);
    // The notification arriving late is a duplicate in effect: no second one.
    let body = w.envelope("002026113012345", &p, "SUCCESS", 2599, APIV3_KEY);
    assert_eq!(w.post(&body, w.now(), "n-q", SERIAL, &w.key).await.0, 204);
    assert_eq!(w.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
}

async fn wechat_refunds_are_requested_notified_and_queried(b: Backend) {
    let w = spawn(b).await;
    let pool = &w.app.accounts.db.pool;
    let engine = w.app.engine.clone();
    let p = w.app.register_payment("wechat", "WX-R", 2599, "CNY").await;
    let body = w.envelope("77001", &p, "SUCCESS", 2599, APIV3_KEY);
    assert_eq!(w.post(&body, w.now(), "n-pay", SERIAL, &w.key).await.0, 204);
    w.api.orders.lock().unwrap().insert(
        p.clone(),
        serde_json::json!({"out_trade_no": p, "transaction_id": "420077001", "trade_state": "SUCCESS",
            "amount": {"total": 2599, "payer_total": 2599, "currency": "CNY", "payer_currency": "CNY"}}),
    );
    let refund = |key: &'static str, minor: i64| {
        let engine = engine.clone();
        let p = p.clone();
        async move {
            let req = reckon::engine::CreateRefund {
                amount_minor: minor,
                currency: None,
                reason: "商品已售完".into(),
            };
            let requested = engine.request_refund("test", key, &p, &req).await;
            let body = requested.expect("the refund is requested");
            body["refund_no"].as_str().unwrap().to_owned()
        }
    };
    let row = |no: String| async move {
        sqlx::query_as::<_, (String, Option<String>)>(
            "SELECT status, provider_refund_id FROM refunds WHERE refund_no = $1",
        )
        .bind(no)
        .fetch_one(pool)
        .await
        .unwrap()
    };
    let figures = || async {
        sqlx::query_as::<_, (String, i64, i64)>(
            "SELECT status, refunded_minor, reserved_minor FROM payments WHERE payment_no = $1",
        )
        .bind(&p)
        .fetch_one(pool)
        .await
        .unwrap()
    };

    let first = refund("wr-1", 1000).await;
    reckon::workers::run_provider_tasks(&engine, engine.now())
        .await
        .unwrap();
    let at_wechat = w.api.refunds.lock().unwrap()[&first].clone();
    assert_eq!(at_wechat["amount"]["refund"], 1000);
    assert_eq!(at_wechat["amount"]["total"], 2599);
    let (status, refund_id) = row(first.clone()).await;
    assert_eq!(status, "PENDING", "PROCESSING at WeChat Pay");
    assert_eq!(refund_id.as_deref(), at_wechat["refund_id"].as_str());
    // ABNORMAL is not final; SUCCESS is, once, however often it comes.
    let abnormal = w.refund_envelope("RF-1", &at_wechat, "ABNORMAL");
    assert_eq!(
        w.post(&abnormal, w.now(), "n-r1", SERIAL, &w.key).await.0,
        204
    );
    assert_eq!(row(first.clone()).await.0, "PENDING");
    let success = w.refund_envelope("RF-2", &at_wechat, "SUCCESS");
    assert_eq!(
        w.post(&success, w.now(), "n-r2", SERIAL, &w.key).await.0,
        204
    );
    assert_eq!(
        w.post(&success, w.now(), "n-r3", SERIAL, &w.key).await.0,
        204
    );
    assert_eq!(row(first).await.0, "SUCCEEDED");
    assert_eq!(figures().await, ("SUCCEEDED".to_string(), 1000, 0));

    // The second is closed at WeChat Pay; no notification: the query finds it.
    let second = refund("wr-2", 1599).await;
    reckon::workers::run_provider_tasks(&engine, engine.now())
        .await
        .unwrap();
    assert_eq!(figures().await, ("REFUNDING".to_string(), 1000, 1599));
    w.api.refunds.lock().unwrap().get_mut(&second).unwrap()["status"] = "CLOSED".into();
    w.clock.advance_secs(61);
    reckon::workers::run_provider_tasks(&engine, engine.now())
        .await
        .unwrap();
    assert_eq!(row(second).await.0, "FAILED");
    assert_eq!(
        figures().await,
        ("SUCCEEDED".to_string(), 1000, 0),
        "the reservation is released"
    );
    let ledger: i64 = crate::reads::ledger_entries(pool).await;
    assert_eq!(ledger, 1);
    assert_eq!(w.api.bad_requests.load(Ordering::SeqCst), 0);
}

async fn a_wechat_redelivery_sealed_anew_is_a_duplicate_and_other_facts_a_conflict(b: Backend) {
    let w = spawn(b).await;
    let p = w.app.register_payment("wechat", "WX-RD", 880, "CNY").await;
    let now = w.now();
    let first = w.resealed("EV-RD", &p, 880, "aaaaaaaaaaaa");
    assert_eq!(w.post(&first, now, "rd-1", SERIAL, &w.key).await.0, 204);
    // WeChat Pay's retry: the same transaction sealed under a new nonce,
    // signed anew — other bytes, the same facts.
    let again = w.resealed("EV-RD", &p, 880, "bbbbbbbbbbbb");
    assert_ne!(first, again);
    assert_eq!(w.post(&again, now, "rd-2", SERIAL, &w.key).await.0, 204);
    assert_eq!(w.post(&again, now, "rd-3", SERIAL, &w.key).await.0, 204);
    assert_eq!(w.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
    assert_eq!(w.app.alert_count("callback_conflict").await, 0);
    assert_eq!(
        w.app.redeliveries("wechat", "EV-RD").await,
        (2, 1, 0),
        "two duplicates counted; the new bytes kept once"
    );
    // The same id with another amount is a conflict, never applied.
    let other = w.resealed("EV-RD", &p, 990, "cccccccccccc");
    assert_eq!(w.post(&other, now, "rd-4", SERIAL, &w.key).await.0, 204);
    assert_eq!(w.app.alert_count("callback_conflict").await, 1);
    assert_eq!(w.app.redeliveries("wechat", "EV-RD").await, (2, 2, 1));
    assert_eq!(w.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
}

async fn a_replayed_wechat_nonce_is_refused_after_a_restart_and_by_a_second_instance(b: Backend) {
    let mut w = spawn(b).await;
    let p = w.app.register_payment("wechat", "WX-NC", 150, "CNY").await;
    let body = w.envelope("EV-NC", &p, "SUCCESS", 150, APIV3_KEY);
    let now = w.now();
    assert_eq!(w.post(&body, now, "nonce-nc", SERIAL, &w.key).await.0, 204);
    let refused = |(status, text): (u16, String)| {
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["code"], "FAIL", "{text}");
        status
    };
    // Another instance on the same database has never seen it itself.
    let second = w.app.second_instance().await;
    assert_eq!(
        refused(
            w.post_to(&second, &body, now, "nonce-nc", SERIAL, &w.key)
                .await
        ),
        401,
        "replayed to a second instance"
    );
    w.app.restart().await;
    assert_eq!(
        refused(w.post(&body, now, "nonce-nc", SERIAL, &w.key).await),
        401,
        "replayed after a restart"
    );
    // A fresh nonce is a redelivery, a duplicate: accepted.
    assert_eq!(w.post(&body, now, "nonce-nc2", SERIAL, &w.key).await.0, 204);
    // Past the window the nonce is free again (the timestamp then decides).
    w.clock.advance_secs(601);
    let later = w.now();
    assert_eq!(
        w.post(&body, later, "nonce-nc", SERIAL, &w.key).await.0,
        204
    );
    assert_eq!(w.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
}

async fn wechat_refusals_before_reading_are_answered_in_wechat_protocol(b: Backend) {
    let w = spawn(b).await;
    for (content_type, body, want) in [
        ("text/plain", "{}".to_string(), 415),
        ("application/json", "x".repeat(70 * 1024), 413),
    ] {
        let res = w.app.post_webhook("wechat", content_type, body).await;
        assert_eq!(res.status(), want);
        let v: serde_json::Value = res.json().await.unwrap();
        assert_eq!(v["code"], "FAIL", "{v}");
        assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
    }
}

both_databases!(
    a_wechat_redelivery_sealed_anew_is_a_duplicate_and_other_facts_a_conflict,
    a_replayed_wechat_nonce_is_refused_after_a_restart_and_by_a_second_instance,
    wechat_refusals_before_reading_are_answered_in_wechat_protocol,
    wechat_refunds_are_requested_notified_and_queried,
    a_missing_wechat_notification_is_found_by_the_order_query_after_a_timeout,
    a_sealed_and_signed_wechat_notification_is_applied_once,
    forged_replayed_or_undecryptable_wechat_notifications_are_refused,
);
