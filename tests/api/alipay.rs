//! Alipay notifications signed at test time with a key made here, following
//! Alipay's documented steps independently of the adapter (sort, drop sign,
//! sign_type and empty values, join, SHA256withRSA over the text in the
//! form's charset). Each on SQLite and PostgreSQL.

use crate::both_databases;
use crate::helpers::{Backend, TestApp, spawn_app_with};
use base64::Engine as _;
use reckon::config::ProviderConfig;
use reckon::engine::ManualClock;
use reckon::startup::Options;
use rsa::RsaPrivateKey;
use rsa::pkcs1v15::SigningKey;
use rsa::pkcs8::EncodePublicKey;
use rsa::signature::{SignatureEncoding, Signer};
use sha2::Sha256;
use std::collections::BTreeMap;
use std::sync::Arc;

const APP_ID: &str = "2021000000000001";
const SELLER_ID: &str = "2088000000000001";

struct AlipayApp {
    app: TestApp,
    key: RsaPrivateKey,
}

async fn spawn(b: Backend) -> AlipayApp {
    let key = RsaPrivateKey::new(&mut rand::rngs::OsRng, 2048).unwrap();
    let der = key.to_public_key().to_public_key_der().unwrap();
    let public_key = base64::engine::general_purpose::STANDARD.encode(der.as_bytes());
    let app = spawn_app_with(
        b,
        |c| {
            c.providers = vec![ProviderConfig {
                name: "alipay".into(),
                kind: "alipay".into(),
                app_id: Some(APP_ID.into()),
                seller_id: Some(SELLER_ID.into()),
                public_key: Some(public_key),
                ..ProviderConfig::default()
            }];
        },
        Options {
            demo: false,
            clock: Arc::new(ManualClock::default()),
            workers: false,
        },
    )
    .await;
    AlipayApp { app, key }
}

impl AlipayApp {
    /// A notification's fields, `notify_time` `age_secs` in the past.
    fn fields(
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
    fn form(&self, mut fields: BTreeMap<String, String>, key: &RsaPrivateKey) -> Vec<u8> {
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

    async fn post(&self, form: Vec<u8>) -> (u16, String) {
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

both_databases!(
    a_signed_alipay_notification_is_answered_success_and_applied_once,
    forged_stale_or_foreign_alipay_notifications_are_refused,
);
