#![no_main]
//! Standard Webhooks with a mapping: `verify` on arbitrary headers and
//! body, then the body signed with the secret and read through a mapping
//! that differs from the default (major amounts, a refund prefix, other
//! pointers), so `parse` and the mapping's reading are reached.

#[path = "common/mod.rs"]
mod common;

use axum::http::{HeaderMap, HeaderValue};
use libfuzzer_sys::fuzz_target;
use reckon::domain::ProviderName;
use reckon::providers::Provider;
use reckon::providers::signing::Secret;
use reckon::providers::standard::{Mapping, StandardWebhooks};
use std::sync::LazyLock;

const SECRET: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";

static PROVIDERS: LazyLock<[StandardWebhooks; 2]> = LazyLock::new(|| {
    let secret = Secret::parse(SECRET).unwrap();
    let mut mapping = Mapping {
        payment_no: "/order/no".into(),
        txn_id: "/order/txn".into(),
        status: "/order/state".into(),
        amount: "/order/total".into(),
        amount_format: "major".into(),
        currency: "/order/ccy".into(),
        event_type: "/kind".into(),
        refund_events: "refund".into(),
        refund_no: "/order/refund".into(),
        payment_txn_id: "/order/paid_txn".into(),
        ..Mapping::default()
    };
    mapping.statuses.insert("PAID".into(), "SUCCEEDED".into());
    mapping
        .refund_statuses
        .insert("DONE".into(), "SUCCEEDED".into());
    let name = |n| ProviderName::parse(n).unwrap();
    [
        StandardWebhooks::new(name("std"), vec![secret.clone()], Mapping::default()),
        StandardWebhooks::new(name("mapped"), vec![secret], mapping),
    ]
});

fuzz_target!(|data: &[u8]| {
    let (headers, body) = common::split(data);
    let secret = Secret::parse(SECRET).unwrap();
    let sig = secret.sign("msg_fuzz", common::NOW, body);
    let mut signed = HeaderMap::new();
    signed.insert("webhook-id", HeaderValue::from_static("msg_fuzz"));
    signed.insert("webhook-timestamp", HeaderValue::from(common::NOW));
    signed.insert(
        "webhook-signature",
        HeaderValue::from_str(&format!("v1,AAAA v1,!! {sig}")).unwrap(),
    );
    for p in PROVIDERS.iter() {
        if p.verify(&headers, body, common::NOW).is_ok() {
            common::parse_and_describe(p, &headers, body);
        }
        assert_eq!(p.verify(&signed, body, common::NOW), Ok(()));
        common::parse_and_describe(p, &signed, body);
    }
});
