#![no_main]
//! WeChat Pay v3 notifications: `verify` on arbitrary headers and body;
//! then the input's body sealed as a notification's resource with
//! AEAD_AES_256_GCM under the APIv3 key, wrapped in an envelope whose event
//! type the first byte picks, and signed with the platform key — so
//! verification passes and decryption and the resource's reading run
//! (signed for one input in `SIGN_EVERY`: RSA is slow).

#[path = "common/mod.rs"]
mod common;

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use axum::http::{HeaderMap, HeaderValue};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use libfuzzer_sys::fuzz_target;
use reckon::domain::ProviderName;
use reckon::providers::Provider;
use reckon::providers::wechatpay::{WechatPay, WechatPayConfig};
use rsa::pkcs1v15::SigningKey;
use rsa::signature::{SignatureEncoding, Signer};
use std::collections::BTreeMap;
use std::sync::LazyLock;

const APIV3_KEY: &str = "0123456789abcdef0123456789ABCDEF";
const SERIAL: &str = "5157F09EFDC096DE15EBE81A47057A72";
const NONCE: &str = "fuzznonce012";

static KEYS: LazyLock<(WechatPay, SigningKey<sha2::Sha256>)> = LazyLock::new(|| {
    let key = common::rsa_key();
    let wechat = WechatPay::new(
        ProviderName::parse("wechat").unwrap(),
        &WechatPayConfig {
            name: "wechat".into(),
            platform_keys: BTreeMap::from([(SERIAL.to_owned(), common::public_pem(&key))]),
            api_key: APIV3_KEY.into(),
            timeout_ms: Some(1000),
            ..WechatPayConfig::default()
        },
    )
    .unwrap();
    (wechat, SigningKey::new(key))
});

const EVENTS: [&str; 4] = [
    "TRANSACTION.SUCCESS",
    "REFUND.SUCCESS",
    "REFUND.ABNORMAL",
    "COUPON.USE",
];

fuzz_target!(|data: &[u8]| {
    let (wechat, signer) = &*KEYS;
    let (headers, body) = common::split(data);
    if wechat.verify(&headers, body, common::NOW).is_ok() {
        common::parse_and_describe(wechat, &headers, body);
    }
    let _ = wechat.parse(&headers, body);

    let Some((&pick, plaintext)) = body.split_first() else {
        return;
    };
    let aad = if pick & 0x80 == 0 { "transaction" } else { "" };
    let cipher = Aes256Gcm::new_from_slice(APIV3_KEY.as_bytes()).unwrap();
    let sealed = cipher
        .encrypt(
            Nonce::from_slice(NONCE.as_bytes()),
            Payload {
                msg: plaintext,
                aad: aad.as_bytes(),
            },
        )
        .unwrap();
    let envelope = serde_json::json!({
        "id": "EV-2026113000001",
        "create_time": "2026-11-30T08:00:00+08:00",
        "resource_type": "encrypt-resource",
        "event_type": EVENTS[usize::from(pick) % EVENTS.len()],
        "summary": "fuzz",
        "resource": {
            "original_type": "transaction",
            "algorithm": "AEAD_AES_256_GCM",
            "ciphertext": B64.encode(sealed),
            "associated_data": aad,
            "nonce": NONCE,
        },
    })
    .to_string();
    // Signing costs milliseconds (RSA, instrumented), so every input is
    // decrypted and read but only one in SIGN_EVERY is signed and verified:
    // `parse` reads the same body either way, once the engine believes it.
    common::parse_and_describe(wechat, &HeaderMap::new(), envelope.as_bytes());
    if plaintext.len() % common::SIGN_EVERY != 0 {
        return;
    }
    let message = format!("{}\n{NONCE}\n{envelope}\n", common::NOW);
    let signature = B64.encode(signer.sign(message.as_bytes()).to_bytes());
    let mut signed = HeaderMap::new();
    signed.insert("wechatpay-timestamp", HeaderValue::from(common::NOW));
    signed.insert("wechatpay-nonce", HeaderValue::from_static(NONCE));
    signed.insert("wechatpay-serial", HeaderValue::from_static(SERIAL));
    signed.insert(
        "wechatpay-signature",
        HeaderValue::from_str(&signature).unwrap(),
    );
    assert_eq!(
        wechat.verify(&signed, envelope.as_bytes(), common::NOW),
        Ok(())
    );
    common::parse_and_describe(wechat, &signed, envelope.as_bytes());
});
