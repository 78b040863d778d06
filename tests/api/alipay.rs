//! Alipay notifications signed at test time with a key made here, following
//! Alipay's documented steps independently of the adapter (sort, drop sign,
//! sign_type and empty values, join, SHA256withRSA over the text in the
//! form's charset). A local gateway speaks `alipay.trade.query` the way
//! Alipay documents it: it checks the request's RSA2 signature with the
//! app's public key and signs the `alipay_trade_query_response` text of its
//! answer with Alipay's key. Each on SQLite and PostgreSQL.

use crate::both_databases;
use crate::helpers::{Backend, TestApp, spawn_app_with};
use base64::Engine as _;
use reckon::config::ProviderConfig;
use reckon::context::ManualClock;
use reckon::providers::alipay::AlipayConfig;
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

pub(crate) const APP_ID: &str = "2021000000000001";
const SELLER_ID: &str = "2088000000000001";

pub(crate) struct AlipayApp {
    pub(crate) app: TestApp,
    /// Alipay's key: signs notifications and gateway answers.
    pub(crate) key: RsaPrivateKey,
    pub(crate) clock: Arc<ManualClock>,
    pub(crate) gateway: Gateway,
}

/// out_trade_no → (trade_status, total_amount, trade_no).
pub(crate) type Trades = Arc<Mutex<BTreeMap<String, (String, String, String)>>>;

/// `alipay.trade.query` as Alipay's gateway answers it.
#[derive(Clone)]
pub(crate) struct Gateway {
    pub(crate) alipay_key: RsaPrivateKey,
    /// The app's public key, to check request signatures.
    pub(crate) app_key: VerifyingKey<Sha256>,
    pub(crate) trades: Trades,
    /// The next this many calls stall past Reckon's timeout.
    pub(crate) stall: Arc<AtomicUsize>,
    /// The next this many answers are signed with a stranger's key.
    pub(crate) forge: Arc<AtomicUsize>,
    /// out_request_no → (out_trade_no, refund_amount).
    pub(crate) refunds: Arc<Mutex<BTreeMap<String, (String, String)>>>,
    /// Whether alipay.trade.refund moves the money at once (fund_change).
    pub(crate) fund_change: Arc<std::sync::atomic::AtomicBool>,
    /// Well-signed requests seen, and badly signed ones.
    pub(crate) calls: Arc<AtomicUsize>,
    pub(crate) bad_requests: Arc<AtomicUsize>,
    /// The bill API's days and faults (tests/api/pulls/alipay.rs).
    pub(crate) bills: Arc<Mutex<crate::pulls::alipay::Desk>>,
}

async fn gateway(
    axum::extract::State(g): axum::extract::State<Gateway>,
    axum::Form(params): axum::Form<BTreeMap<String, String>>,
) -> String {
    // Alipay's request rule: every non-empty parameter but `sign`, sorted.
    let content: Vec<String> = params
        .iter()
        .filter(|(k, v)| *k != "sign" && !v.is_empty())
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let good = params
        .get("sign")
        .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
        .and_then(|b| Signature::try_from(b.as_slice()).ok())
        .is_some_and(|sig| g.app_key.verify(content.join("&").as_bytes(), &sig).is_ok());
    let method = params.get("method").cloned().unwrap_or_default();
    let known = [
        "alipay.trade.query",
        "alipay.trade.refund",
        "alipay.trade.fastpay.refund.query",
        "alipay.data.dataservice.bill.downloadurl.query",
    ];
    let inner = if !good
        || params.get("app_id").map(String::as_str) != Some(APP_ID)
        || !known.contains(&method.as_str())
        || params.get("sign_type").map(String::as_str) != Some("RSA2")
    {
        g.bad_requests.fetch_add(1, Ordering::SeqCst);
        serde_json::json!({"code": "40002", "msg": "Invalid Arguments",
            "sub_code": "isv.invalid-signature", "sub_msg": "验签出错"})
    } else {
        g.calls.fetch_add(1, Ordering::SeqCst);
        if g.stall
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        }
        let biz: serde_json::Value = serde_json::from_str(&params["biz_content"]).unwrap();
        if method == "alipay.data.dataservice.bill.downloadurl.query" {
            return sign_answer(&g, &method, crate::pulls::alipay::bill_answer(&g, &biz));
        }
        let no = biz["out_trade_no"].as_str().unwrap().to_owned();
        let trade = g.trades.lock().unwrap().get(&no).cloned();
        if method == "alipay.trade.refund" {
            let request_no = biz["out_request_no"].as_str().unwrap().to_owned();
            let amount = biz["refund_amount"].as_str().unwrap().to_owned();
            let mut refunds = g.refunds.lock().unwrap();
            let repeat = refunds.contains_key(&request_no);
            refunds.insert(request_no, (no.clone(), amount));
            let total: f64 = refunds
                .values()
                .filter(|(t, _)| *t == no)
                .map(|(_, a)| a.parse::<f64>().unwrap())
                .sum();
            let change = if repeat || !g.fund_change.load(Ordering::SeqCst) {
                "N"
            } else {
                "Y"
            };
            serde_json::json!({"code": "10000", "msg": "Success", "out_trade_no": no,
                "trade_no": trade.map(|t| t.2), "buyer_logon_id": "159****5620",
                "fund_change": change, "refund_fee": format!("{total:.2}")})
        } else if method == "alipay.trade.fastpay.refund.query" {
            let request_no = biz["out_request_no"].as_str().unwrap().to_owned();
            match g.refunds.lock().unwrap().get(&request_no) {
                Some((_, amount)) => serde_json::json!({"code": "10000", "msg": "Success",
                    "out_trade_no": no, "out_request_no": request_no, "refund_amount": amount,
                    "total_amount": trade.map(|t| t.1), "refund_status": "REFUND_SUCCESS"}),
                None => serde_json::json!({"code": "10000", "msg": "Success"}),
            }
        } else {
            match trade {
                Some((status, total, trade_no)) => serde_json::json!({
                "code": "10000", "msg": "Success", "trade_no": trade_no, "out_trade_no": no,
                "buyer_logon_id": "159****5620", "trade_status": status,
                "total_amount": total, "buyer_pay_amount": "0.00"}),
                None => serde_json::json!({"code": "40004", "msg": "Business Failed",
                "sub_code": "ACQ.TRADE_NOT_EXIST", "sub_msg": "交易不存在"}),
            }
        }
    };
    sign_answer(&g, &method, inner)
}

/// `{"{method}_response": inner, "sign": …}`, signed with Alipay's key (or,
/// while `forge` lasts, a stranger's).
fn sign_answer(g: &Gateway, method: &str, inner: serde_json::Value) -> String {
    let inner = inner.to_string();
    let signer = if g
        .forge
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
    {
        RsaPrivateKey::new(&mut rand::rngs::OsRng, 1024).unwrap()
    } else {
        g.alipay_key.clone()
    };
    let sign = SigningKey::<Sha256>::new(signer).sign(inner.as_bytes());
    let key = format!("{}_response", method.replace('.', "_"));
    format!(
        r#"{{"{key}":{inner},"sign":"{}"}}"#,
        base64::engine::general_purpose::STANDARD.encode(sign.to_bytes())
    )
}

pub(crate) async fn spawn(b: Backend) -> AlipayApp {
    spawn_limited(b, None).await
}

/// [`spawn`], the account taking bills of at most `max_bill_bytes`.
pub(crate) async fn spawn_limited(b: Backend, max_bill_bytes: Option<u64>) -> AlipayApp {
    let key = RsaPrivateKey::new(&mut rand::rngs::OsRng, 2048).unwrap();
    let der = key.to_public_key().to_public_key_der().unwrap();
    let public_key = base64::engine::general_purpose::STANDARD.encode(der.as_bytes());
    let app_key = RsaPrivateKey::new(&mut rand::rngs::OsRng, 2048).unwrap();
    let gw = Gateway {
        alipay_key: key.clone(),
        app_key: VerifyingKey::new(app_key.to_public_key()),
        trades: Arc::default(),
        refunds: Arc::default(),
        fund_change: Arc::new(true.into()),
        stall: Arc::default(),
        forge: Arc::default(),
        calls: Arc::default(),
        bad_requests: Arc::default(),
        bills: Arc::default(),
    };
    let router = crate::pulls::alipay::routes()
        .route("/gateway.do", axum::routing::post(gateway))
        .with_state(gw.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    gw.bills.lock().unwrap().base = format!("http://{}", listener.local_addr().unwrap());
    let base = format!("http://{}/gateway.do", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let clock = Arc::new(ManualClock::default());
    let app = spawn_app_with(
        b,
        |c| {
            c.providers = vec![ProviderConfig::Alipay(AlipayConfig {
                name: "alipay".into(),
                base_url: base,
                app_id: APP_ID.into(),
                seller_id: Some(SELLER_ID.into()),
                public_key,
                private_key: Some(
                    app_key
                        .to_pkcs8_pem(rsa::pkcs8::LineEnding::LF)
                        .unwrap()
                        .to_string()
                        .into(),
                ),
                timeout_ms: Some(400),
                query_on_unverified: true,
                fees: None,
                max_bill_bytes,
            })];
            c.refused_keep = 5;
        },
        Options {
            demo: false,
            clock: clock.clone(),
            workers: false,
            ..Options::default()
        },
    )
    .await;
    AlipayApp {
        app,
        key,
        clock,
        gateway: gw,
    }
}

impl AlipayApp {
    /// A notification's fields, `notify_time` `age_secs` in the past.
    pub(crate) fn fields(
        &self,
        notify_id: &str,
        payment_no: &str,
        amount: &str,
        age_secs: i64,
    ) -> BTreeMap<String, String> {
        let sent =
            jiff::Timestamp::from_second(self.app.engine.now() / 1_000_000 - age_secs).unwrap();
        let beijing = sent.to_zoned(jiff::tz::TimeZone::fixed(jiff::tz::offset(8)));
        [
            ("notify_id", notify_id.to_owned()),
            (
                "notify_time",
                beijing.strftime("%Y-%m-%d %H:%M:%S").to_string(),
            ),
            ("notify_type", "trade_status_sync".to_owned()),
            ("app_id", APP_ID.to_owned()),
            ("seller_id", SELLER_ID.to_owned()),
            ("out_trade_no", payment_no.to_owned()),
            ("trade_no", format!("2026{notify_id}")),
            ("trade_status", "TRADE_SUCCESS".to_owned()),
            ("total_amount", amount.to_owned()),
            ("subject", "支付测试 订单".to_owned()),
            ("body", String::new()),
            ("charset", "utf-8".to_owned()),
            ("sign_type", "RSA2".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }

    /// Signs per Alipay's documentation and encodes the form in its charset.
    pub(crate) fn form(
        &self,
        mut fields: BTreeMap<String, String>,
        key: &RsaPrivateKey,
    ) -> Vec<u8> {
        let encoding = encoding_rs::Encoding::for_label(fields["charset"].as_bytes()).unwrap();
        let content: Vec<String> = fields
            .iter()
            .filter(|(k, v)| *k != "sign" && *k != "sign_type" && !v.is_empty())
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let text = content.join("&");
        let (bytes, _, _) = encoding.encode(&text);
        let signature = SigningKey::<Sha256>::new(key.clone()).sign(&bytes);
        fields.insert(
            "sign".into(),
            base64::engine::general_purpose::STANDARD.encode(signature.to_bytes()),
        );
        let enc = |s: &str| {
            let (b, _, _) = encoding.encode(s);
            percent_encoding::percent_encode(&b, percent_encoding::NON_ALPHANUMERIC).to_string()
        };
        fields
            .iter()
            .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
            .collect::<Vec<_>>()
            .join("&")
            .into_bytes()
    }

    pub(crate) async fn post(&self, form: Vec<u8>) -> (u16, String) {
        let res = self
            .app
            .client
            .post(format!("{}/webhooks/alipay", self.app.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), res.text().await.unwrap())
    }
}

async fn a_signed_alipay_notification_is_answered_success_and_applied_once(b: Backend) {
    let a = spawn(b).await;
    let p = a.app.register_payment("alipay", "AL-1", 12345, "CNY").await;
    let ok = a.form(a.fields("n1", &p, "123.45", 0), &a.key);
    assert_eq!(a.post(ok.clone()).await, (200, "success".to_string()));
    assert_eq!(
        a.post(ok).await,
        (200, "success".to_string()),
        "a repeat is a duplicate"
    );
    assert_eq!(a.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));

    // GBK, as Alipay sends when the merchant chose it.
    let q = a.app.register_payment("alipay", "AL-2", 12345, "CNY").await;
    let mut gbk = a.fields("n2", &q, "123.45", 0);
    gbk.insert("charset".into(), "gbk".into());
    assert_eq!(a.post(a.form(gbk, &a.key)).await.0, 200);
    assert_eq!(a.app.payment_state(&q).await, ("SUCCEEDED".to_string(), 1));
}

async fn forged_stale_or_foreign_alipay_notifications_are_refused(b: Backend) {
    let a = spawn(b).await;
    let p = a.app.register_payment("alipay", "AL-3", 12345, "CNY").await;
    // Tampered after signing.
    let signed = String::from_utf8(a.form(a.fields("n3", &p, "123.45", 0), &a.key)).unwrap();
    let tampered = signed.replace("total%5Famount=123%2E45", "total%5Famount=1%2E45");
    assert_ne!(signed, tampered);
    assert_eq!(
        a.post(tampered.into_bytes()).await,
        (400, "fail".to_string())
    );
    // Signed by another key.
    let other = RsaPrivateKey::new(&mut rand::rngs::OsRng, 2048).unwrap();
    assert_eq!(
        a.post(a.form(a.fields("n4", &p, "123.45", 0), &other))
            .await
            .0,
        400
    );
    // Properly signed, but for another app.
    let mut foreign = a.fields("n5", &p, "123.45", 0);
    foreign.insert("app_id".into(), "2021999999999999".into());
    assert_eq!(a.post(a.form(foreign, &a.key)).await.0, 400);
    // Replayed past Alipay's 25 h retry window.
    assert_eq!(
        a.post(a.form(a.fields("n6", &p, "123.45", 27 * 3600), &a.key))
            .await
            .0,
        400
    );
    // Wrong content type, and a body that is not a form at all.
    let res = a
        .app
        .client
        .post(format!("{}/webhooks/alipay", a.app.base))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 415);
    assert_eq!(a.post(b"sign_type=RSA2&sign=%%%".to_vec()).await.0, 400);
    assert_eq!(a.app.payment_state(&p).await, ("CREATED".to_string(), 0));
}

async fn a_missing_alipay_notification_is_found_by_trade_query_after_a_timeout(b: Backend) {
    let a = spawn(b).await;
    let p = a.app.register_payment("alipay", "AL-Q", 8888, "CNY").await;
    let engine = a.app.engine.clone();
    let run = || async {
        reckon::workers::run_provider_tasks(&engine, engine.now())
            .await
            .unwrap()
    };
    // The create task: Alipay payments are created by the merchant's app,
    // so Reckon only schedules a query for when no notification comes.
    assert_eq!(run().await, 1);
    assert_eq!(a.gateway.calls.load(Ordering::SeqCst), 0);

    // First query: the gateway does not know the trade yet.
    a.clock.advance_secs(61);
    assert_eq!(run().await, 1);
    assert_eq!(a.app.payment_state(&p).await, ("CREATED".to_string(), 0));

    // Second: the buyer has the QR code open; then a stalled answer.
    a.gateway.trades.lock().unwrap().insert(
        p.clone(),
        (
            "WAIT_BUYER_PAY".into(),
            "88.88".into(),
            "2026113022001".into(),
        ),
    );
    a.clock.advance_secs(5 * 60 + 1);
    assert_eq!(run().await, 1);
    assert_eq!(a.app.payment_state(&p).await, ("PENDING".to_string(), 0));
    a.gateway.trades.lock().unwrap().get_mut(&p).unwrap().0 = "TRADE_SUCCESS".into();
    a.gateway.stall.store(1, Ordering::SeqCst);
    a.clock.advance_secs(30 * 60 + 1);
    assert_eq!(run().await, 1);
    assert_eq!(
        a.app.payment_state(&p).await,
        ("PENDING".to_string(), 0),
        "a timeout is no result"
    );
    // An answer signed by someone else is not Alipay's word.
    a.gateway.forge.store(1, Ordering::SeqCst);
    a.clock.advance_secs(120 * 60 + 1);
    assert_eq!(run().await, 1);
    assert_eq!(a.app.payment_state(&p).await, ("PENDING".to_string(), 0));
    // The last scheduled query converges.
    a.clock.advance_secs(720 * 60 + 1);
    assert_eq!(run().await, 1);
    assert_eq!(a.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
    let txn: Option<String> = crate::reads::payment_txn(&a.app.accounts.db.pool, &p).await;
    assert_eq!(txn.as_deref(), Some("2026113022001"));
    assert_eq!(a.gateway.calls.load(Ordering::SeqCst), 5);
    assert_eq!(
        a.gateway.bad_requests.load(Ordering::SeqCst),
        0,
        "every request was signed the way Alipay checks"
    );
    // Settled: nothing left to ask.
    a.clock.advance_secs(24 * 3600);
    assert_eq!(run().await, 0);
}

async fn refused_notifications_are_kept_with_their_reason_bounded_and_make_reckon_ask_alipay(
    b: Backend,
) {
    let a = spawn(b).await;
    let pool = &a.app.accounts.db.pool;
    let p = a.app.register_payment("alipay", "AL-R", 500, "CNY").await;
    let engine = a.app.engine.clone();
    assert_eq!(
        reckon::workers::run_provider_tasks(&engine, engine.now())
            .await
            .unwrap(),
        1
    );
    a.gateway.trades.lock().unwrap().insert(
        p.clone(),
        ("TRADE_SUCCESS".into(), "5.00".into(), "2026R".into()),
    );

    // Signed by a stranger: refused, recorded, and — since this account is
    // set to — Alipay itself is asked about the payment it names.
    let stranger = RsaPrivateKey::new(&mut rand::rngs::OsRng, 1024).unwrap();
    let forged = a.form(a.fields("forged-1", &p, "5.00", 0), &stranger);
    assert_eq!(a.post(forged.clone()).await, (400, "fail".to_string()));
    let (kind, reason, claimed, len): (String, String, Option<String>, i64) = sqlx::query_as(
        "SELECT kind, reason, payment_no, body_len FROM refused_callbacks WHERE provider = 'alipay'",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(kind, "unverified");
    assert_eq!(reason, "no signature matches");
    assert_eq!(claimed.as_deref(), Some(p.as_str()));
    assert_eq!(len, forged.len() as i64);
    assert_eq!(a.app.payment_state(&p).await, ("CREATED".to_string(), 0));
    // The query is due now, not in a minute; its answer is what counts.
    assert_eq!(
        reckon::workers::run_provider_tasks(&engine, engine.now())
            .await
            .unwrap(),
        1
    );
    assert_eq!(a.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
    assert_eq!(a.gateway.calls.load(Ordering::SeqCst), 1);

    // A flood of garbage: every one refused, the table stays bounded
    // (5 kept, pruned every 8 inserts).
    for i in 0..30 {
        let (status, _) = a
            .post(format!("garbage={i}&sign_type=RSA2").into_bytes())
            .await;
        assert_eq!(status, 400);
    }
    let kept: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM refused_callbacks WHERE provider = 'alipay'")
            .fetch_one(pool)
            .await
            .unwrap();
    assert!((5..=5 + 8).contains(&kept), "kept {kept}");
    let newest: String = sqlx::query_scalar(
        "SELECT reason FROM refused_callbacks ORDER BY received_at DESC, id DESC LIMIT 1",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(newest, "missing header sign");
    let metrics = a
        .app
        .client
        .get(format!("{}/metrics", a.app.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("callback_refused_total{reason=\"unverified\"} 31"),
        "{metrics}"
    );
}

async fn alipay_refunds_are_requested_queried_and_notified_with_the_running_total(b: Backend) {
    let a = spawn(b).await;
    let pool = &a.app.accounts.db.pool;
    let engine = a.app.engine.clone();
    let p = a.app.register_payment("alipay", "AL-F", 12345, "CNY").await;
    let mut paid = a.fields("n-pay", &p, "123.45", 0);
    paid.insert("trade_no".into(), "2026PAY".into());
    assert_eq!(a.post(a.form(paid, &a.key)).await.0, 200);
    a.gateway.trades.lock().unwrap().insert(
        p.clone(),
        ("TRADE_SUCCESS".into(), "123.45".into(), "2026PAY".into()),
    );
    let refund = |key: &'static str, minor: i64| {
        let engine = engine.clone();
        let p = p.clone();
        async move {
            let req = reckon::engine::CreateRefund {
                amount_minor: minor,
                currency: Some("CNY".into()),
                reason: "退货".into(),
            };
            let requested = engine.request_refund("test", key, &p, &req).await;
            let body = requested.expect("the refund is requested");
            body["refund_no"].as_str().unwrap().to_owned()
        }
    };
    let status_of = |no: String| async move { crate::reads::refund_status(pool, &no).await };
    let figures = || async {
        sqlx::query_as::<_, (i64, i64)>(
            "SELECT refunded_minor, reserved_minor FROM payments WHERE payment_no = $1",
        )
        .bind(&p)
        .fetch_one(pool)
        .await
        .unwrap()
    };
    // A: alipay.trade.refund moves the money at once (fund_change Y).
    let first = refund("af-1", 3000).await;
    reckon::workers::run_provider_tasks(&engine, engine.now())
        .await
        .unwrap();
    assert_eq!(status_of(first.clone()).await, "SUCCEEDED");
    assert_eq!(figures().await, (3000, 0));
    // Alipay's notification of it afterwards: refund_fee is the running total.
    let notice = |id: &str, out_biz_no: &str, refund_fee: &str| {
        let mut f = a.fields(id, &p, "123.45", 0);
        f.insert("trade_no".into(), "2026PAY".into());
        f.insert("refund_fee".into(), refund_fee.into());
        f.insert("out_biz_no".into(), out_biz_no.into());
        f.insert("gmt_refund".into(), "2026-11-30 12:00:00.000".into());
        a.form(f, &a.key)
    };
    assert_eq!(
        a.post(notice("n-r1", &first, "30.00")).await,
        (200, "success".to_string())
    );
    assert_eq!(figures().await, (3000, 0), "already counted");

    // B: the answer does not confirm the money moved; pending.
    a.gateway.fund_change.store(false, Ordering::SeqCst);
    let second = refund("af-2", 2000).await;
    reckon::workers::run_provider_tasks(&engine, engine.now())
        .await
        .unwrap();
    assert_eq!(status_of(second.clone()).await, "PENDING");
    // A running total that cannot be (more than was ever asked): refused.
    assert_eq!(a.post(notice("n-r2", &second, "60.00")).await.0, 200);
    assert_eq!(status_of(second.clone()).await, "PENDING");
    let classes: Vec<String> = crate::reads::classes_of(pool, &p).await;
    assert_eq!(classes, ["REFUND_MISMATCH"]);
    // The right one: 30.00 + 20.00.
    assert_eq!(a.post(notice("n-r3", &second, "50.00")).await.0, 200);
    assert_eq!(status_of(second).await, "SUCCEEDED");
    assert_eq!(figures().await, (5000, 0));

    // C: no notification comes; the refund query confirms it.
    let third = refund("af-3", 1000).await;
    reckon::workers::run_provider_tasks(&engine, engine.now())
        .await
        .unwrap();
    assert_eq!(status_of(third.clone()).await, "PENDING");
    a.clock.advance_secs(61);
    reckon::workers::run_provider_tasks(&engine, engine.now())
        .await
        .unwrap();
    assert_eq!(status_of(third).await, "SUCCEEDED");
    assert_eq!(figures().await, (6000, 0));
    let ledger: i64 = crate::reads::ledger_entries_of(pool, &p).await;
    assert_eq!(ledger, 3);
    assert_eq!(a.gateway.bad_requests.load(Ordering::SeqCst), 0);
}

async fn an_alipay_redelivery_with_a_new_notify_time_is_a_duplicate_and_other_facts_a_conflict(
    b: Backend,
) {
    let a = spawn(b).await;
    let p = a.app.register_payment("alipay", "AL-RD", 5000, "CNY").await;
    let first = a.form(a.fields("n-rd", &p, "50.00", 120), &a.key);
    assert_eq!(a.post(first.clone()).await, (200, "success".to_string()));
    // Alipay's retry: the same notify_id, a new notify_time, signed anew.
    let again = a.form(a.fields("n-rd", &p, "50.00", 0), &a.key);
    assert_ne!(first, again);
    assert_eq!(a.post(again).await, (200, "success".to_string()));
    assert_eq!(a.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
    assert_eq!(a.app.alert_count("callback_conflict").await, 0);
    assert_eq!(a.app.redeliveries("alipay", "n-rd").await, (1, 1, 0));
    // The same notify_id with another amount: a conflict, never applied.
    let other = a.form(a.fields("n-rd", &p, "5.00", 0), &a.key);
    assert_eq!(a.post(other).await, (200, "success".to_string()));
    assert_eq!(a.app.alert_count("callback_conflict").await, 1);
    assert_eq!(a.app.redeliveries("alipay", "n-rd").await, (1, 2, 1));
    assert_eq!(a.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
}

async fn every_delivery_for_an_unknown_payment_is_answered_alike_until_it_applies(b: Backend) {
    let a = spawn(b).await;
    let pool = &a.app.accounts.db.pool;
    let no = "PAYLATECREATE0001";
    let stored = || async {
        sqlx::query_as::<_, (String, Option<String>)>(
            "SELECT processing_status, outcome FROM payment_callbacks WHERE callback_id = 'n-late'",
        )
        .fetch_one(pool)
        .await
        .unwrap()
    };
    for age in [30, 20, 10] {
        let form = a.form(a.fields("n-late", no, "12.00", age), &a.key);
        assert_eq!(
            a.post(form).await,
            (404, "fail".to_string()),
            "every delivery, not only the first"
        );
        assert_eq!(
            stored().await,
            ("FAILED".to_string(), Some("unknown_payment".to_string()))
        );
    }
    // The merchant's create lands late; the provider's next delivery applies.
    reckon::store::payments::insert(
        pool,
        &reckon::store::payments::NewPayment {
            payment_no: no,
            order_no: "AL-LATE",
            attempt_no: 1,
            provider: "alipay",
            amount_minor: 1200,
            currency: "CNY",
            description: None,
            created_by: "test",
            now: a.app.engine.now(),
        },
    )
    .await
    .unwrap();
    let form = a.form(a.fields("n-late", no, "12.00", 0), &a.key);
    assert_eq!(a.post(form.clone()).await, (200, "success".to_string()));
    assert_eq!(a.app.payment_state(no).await, ("SUCCEEDED".to_string(), 1));
    assert_eq!(
        stored().await,
        ("SUCCESS".to_string(), Some("applied".to_string()))
    );
    assert_eq!(a.post(form).await, (200, "success".to_string()));
    assert_eq!(a.app.payment_state(no).await, ("SUCCEEDED".to_string(), 1));
}

async fn alipay_refusals_before_reading_are_answered_fail(b: Backend) {
    let a = spawn(b).await;
    for (content_type, body, want) in [
        ("application/json", "{}".to_string(), 415),
        (
            "application/x-www-form-urlencoded",
            "a=".to_string() + &"x".repeat(70 * 1024),
            413,
        ),
    ] {
        let res = a.app.post_webhook("alipay", content_type, body).await;
        assert_eq!(res.status(), want);
        assert_eq!(res.text().await.unwrap(), "fail");
    }
}

both_databases!(
    an_alipay_redelivery_with_a_new_notify_time_is_a_duplicate_and_other_facts_a_conflict,
    every_delivery_for_an_unknown_payment_is_answered_alike_until_it_applies,
    alipay_refusals_before_reading_are_answered_fail,
    alipay_refunds_are_requested_queried_and_notified_with_the_running_total,
    refused_notifications_are_kept_with_their_reason_bounded_and_make_reckon_ask_alipay,
    a_signed_alipay_notification_is_answered_success_and_applied_once,
    forged_stale_or_foreign_alipay_notifications_are_refused,
    a_missing_alipay_notification_is_found_by_trade_query_after_a_timeout,
);
