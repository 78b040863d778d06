#![no_main]
//! Stripe webhooks: `verify` on whatever headers and body come (it must
//! refuse, never panic), then the body signed with the endpoint secret so
//! that `verify` passes and `parse` reads it as it would a real event.

#[path = "common/mod.rs"]
mod common;

use axum::http::{HeaderMap, HeaderValue};
use hmac::{Hmac, Mac};
use libfuzzer_sys::fuzz_target;
use reckon::domain::ProviderName;
use reckon::providers::Provider;
use reckon::providers::stripe::Stripe;
use std::sync::LazyLock;

const SECRET: &str = "whsec_fuzz_endpoint_secret";

static STRIPE: LazyLock<Stripe> = LazyLock::new(|| {
    Stripe::new(
        ProviderName::parse("stripe").unwrap(),
        "http://127.0.0.1:9",
        vec!["whsec_older".into(), SECRET.into()],
        "sk_test_fuzz".into(),
        std::time::Duration::from_secs(1),
    )
});

fuzz_target!(|data: &[u8]| {
    let stripe = &*STRIPE;
    let (headers, body) = common::split(data);
    if stripe.verify(&headers, body, common::NOW).is_ok() {
        common::parse_and_describe(stripe, &headers, body);
    }

    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(format!("{}.", common::NOW).as_bytes());
    mac.update(body);
    let sig = hex::encode(mac.finalize().into_bytes());
    let mut signed = HeaderMap::new();
    let value = format!("t={},v1=00ff,v1={sig}", common::NOW);
    signed.insert("stripe-signature", HeaderValue::from_str(&value).unwrap());
    assert_eq!(stripe.verify(&signed, body, common::NOW), Ok(()));
    common::parse_and_describe(stripe, &signed, body);
});
