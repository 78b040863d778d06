#![no_main]
//! Identifier parsing: every kind of id either refuses the text or holds
//! exactly it (visible ASCII, within its bound), and says so the same way
//! through serde.

use libfuzzer_sys::fuzz_target;
use reckon::domain::{
    CallbackId, PaymentNo, ProviderName, ProviderRefundId, ProviderTxnId, RefundNo,
};

macro_rules! check {
    ($ty:ty, $text:expr) => {{
        let text: &str = $text;
        let parsed = <$ty>::parse(text);
        if let Ok(id) = &parsed {
            assert_eq!(id.as_str(), text);
            assert!(!text.is_empty() && text.bytes().all(|b| b.is_ascii_graphic()));
            let json = serde_json::to_string(id).unwrap();
            assert_eq!(&serde_json::from_str::<$ty>(&json).unwrap(), id);
            let _ = id.to_string();
        } else if let Err(e) = &parsed {
            let _ = e.to_string();
        }
        let from_json = serde_json::from_value::<$ty>(serde_json::Value::String(text.into()));
        assert_eq!(from_json.is_ok(), parsed.is_ok());
    }};
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    check!(PaymentNo, text);
    check!(RefundNo, text);
    check!(CallbackId, text);
    check!(ProviderTxnId, text);
    check!(ProviderRefundId, text);
    check!(ProviderName, text);
});
