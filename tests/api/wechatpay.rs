//! WeChat Pay v3 notifications built at test time the documented way,
//! independently of the adapter: a platform key made here signs
//! "{timestamp}\n{nonce}\n{body}\n", and the transaction is sealed with
//! AEAD_AES_256_GCM under the APIv3 key. Each on SQLite and PostgreSQL.

use crate::both_databases;
use crate::helpers::{Backend, TestApp, spawn_app_with};
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine as _;
use reckon::config::ProviderConfig;
use reckon::engine::ManualClock;
use reckon::startup::Options;
use rsa::RsaPrivateKey;
use rsa::pkcs1v15::SigningKey;
use rsa::pkcs8::EncodePublicKey;
use rsa::signature::{SignatureEncoding, Signer};
use sha2::Sha256;
use std::sync::Arc;

const APIV3_KEY: &str = "0123456789abcdef0123456789ABCDEF";
const SERIAL: &str = "5157F09EFDC096DE15EBE81A47057A72";

struct Wechat {
    app: TestApp,
    key: RsaPrivateKey,
}

async fn spawn(b: Backend) -> Wechat {
    let key = RsaPrivateKey::new(&mut rand::rngs::OsRng, 2048).unwrap();
    let pem = key
        .to_public_key()
        .to_public_key_pem(rsa::pkcs8::LineEnding::LF)
        .unwrap();
    let app = spawn_app_with(
        b,
        |c| {
            c.providers = vec![ProviderConfig {
                name: "wechat".into(),
                kind: "wechatpay".into(),
                api_key: Some(APIV3_KEY.into()),
                platform_keys: [(SERIAL.to_string(), pem)].into_iter().collect(),
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
    Wechat { app, key }
}

impl Wechat {
    fn envelope(&self, id: &str, payment_no: &str, state: &str, total: i64, key: &str) -> String {
        let transaction = serde_json::json!({
            "mchid": "1900000001", "appid": "wx0000000000000001", "out_trade_no": payment_no,
            "transaction_id": format!("4200{id}"), "trade_state": state, "trade_type": "NATIVE",
            "amount": { "total": total, "payer_total": total, "currency": "CNY", "payer_currency": "CNY" }
        })
        .to_string();
        let nonce = "fdasflkja484";
        let sealed = Aes256Gcm::new_from_slice(key.as_bytes())
            .unwrap()
            .encrypt(
                Nonce::from_slice(nonce.as_bytes()),
                Payload {
                    msg: transaction.as_bytes(),
                    aad: b"transaction",
                },
            )
            .unwrap();
        serde_json::json!({
            "id": id, "create_time": "2026-11-30T10:00:00+08:00", "resource_type": "encrypt-resource",
            "event_type": "TRANSACTION.SUCCESS", "summary": "支付成功",
            "resource": { "original_type": "transaction", "algorithm": "AEAD_AES_256_GCM",
                          "ciphertext": base64::engine::general_purpose::STANDARD.encode(sealed),
                          "associated_data": "transaction", "nonce": nonce }
        })
        .to_string()
    }

    async fn post(
        &self,
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
            .post(format!("{}/webhooks/wechat", self.app.base))
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

    fn now(&self) -> i64 {
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

both_databases!(
    a_sealed_and_signed_wechat_notification_is_applied_once,
    forged_replayed_or_undecryptable_wechat_notifications_are_refused,
);
