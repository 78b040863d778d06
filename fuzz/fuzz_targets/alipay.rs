#![no_main]
//! Alipay notifications (form bodies in UTF-8 or GBK, by their `charset`):
//! `verify` on the body as it comes, then the same form signed with the
//! test key (its `sign` and `sign_type` appended) so the checks after the
//! signature (app_id, notify_time) run; `parse` reads both.

#[path = "common/mod.rs"]
mod common;

use base64::Engine;
use libfuzzer_sys::fuzz_target;
use reckon::domain::ProviderName;
use reckon::providers::Provider;
use reckon::providers::alipay::{Alipay, AlipayConfig, decode_form, signed_content};
use rsa::pkcs1v15::SigningKey;
use rsa::signature::{SignatureEncoding, Signer};
use std::sync::LazyLock;

static KEYS: LazyLock<(Alipay, SigningKey<sha2::Sha256>)> = LazyLock::new(|| {
    let key = common::rsa_key();
    let alipay = Alipay::new(
        ProviderName::parse("alipay").unwrap(),
        &AlipayConfig {
            name: "alipay".into(),
            app_id: "2021000000000001".into(),
            public_key: common::public_pem(&key),
            timeout_ms: Some(1000),
            ..AlipayConfig::default()
        },
    )
    .unwrap();
    (alipay, SigningKey::new(key))
});

fuzz_target!(|data: &[u8]| {
    let (alipay, signer) = &*KEYS;
    let headers = axum::http::HeaderMap::new();
    if alipay.verify(&headers, data, common::NOW).is_ok() {
        common::parse_and_describe(alipay, &headers, data);
    }
    let _ = alipay.parse(&headers, data);

    // One input in SIGN_EVERY is signed: RSA costs milliseconds here, and
    // `parse` above already read the body as it would a believed one.
    if data.len() % common::SIGN_EVERY != 0 {
        return;
    }
    let Ok((fields, encoding)) = decode_form(data) else {
        return;
    };
    let content = signed_content(&fields);
    let (content, _, _) = encoding.encode(&content);
    let sign = base64::engine::general_purpose::STANDARD.encode(signer.sign(&content).to_bytes());
    let mut form = data.to_vec();
    form.extend_from_slice(b"&sign_type=RSA2&sign=");
    form.extend(sign.bytes().flat_map(|b| match b {
        b'+' => b"%2B".to_vec(),
        b'/' => b"%2F".to_vec(),
        b'=' => b"%3D".to_vec(),
        b => vec![b],
    }));
    if alipay.verify(&headers, &form, common::NOW).is_ok() {
        common::parse_and_describe(alipay, &headers, &form);
    }
});
