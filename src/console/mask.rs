//! What the console may show of a stored callback: headers and body with
//! secrets (signatures, keys, tokens, ciphertext) and personal data (names,
//! e-mail, phone, buyer and payer ids, cards, addresses, IPs) masked. A
//! key is sensitive when one of its words (split on anything but letters
//! and digits) is in the list; everything under a sensitive key is masked.
//! Values are read too, whatever their key: a card number (Luhn), an
//! e-mail address, a phone number or an IP address inside any text is
//! masked where it stands (`values`). A body cut short (a refused
//! webhook's first 4 KiB) is masked token by token, as far as it goes.

const SENSITIVE: &[&str] = &[
    "sign",
    "sig",
    "signature",
    "forwarded",
    "secret",
    "token",
    "password",
    "passwd",
    "key",
    "ciphertext",
    "authorization",
    "cookie",
    "email",
    "phone",
    "mobile",
    "tel",
    "name",
    "buyer",
    "openid",
    "payer",
    "card",
    "address",
    "ip",
    "account",
    "logon",
    "cert",
    "iban",
    "bank",
    "birthday",
    "idcard",
];

/// Words of a key: split on anything but letters and digits, and between
/// a lowercase letter and an uppercase one (`customerEmail`).
fn words(key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if !c.is_ascii_alphanumeric() {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        word.push(c.to_ascii_lowercase());
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

pub fn is_sensitive(key: &str) -> bool {
    let words = words(key);
    words.iter().any(|w| SENSITIVE.contains(&w.as_str()))
        // Run-together names: firstname, cardnumber, accesstoken, …
        || words.iter().any(|w| {
            w.len() > 5 && ["name", "email", "token", "card", "secret", "password", "phone"]
                .iter()
                .any(|s| w.contains(s))
        })
}

/// Keeps the first and last two characters of a long value, nothing of a
/// short one.
pub fn mask_value(v: &str) -> String {
    let chars: Vec<char> = v.chars().collect();
    if chars.len() <= 8 {
        "****".into()
    } else {
        let head: String = chars[..2].iter().collect();
        let tail: String = chars[chars.len() - 2..].iter().collect();
        format!("{head}****{tail}")
    }
}

fn mask_all(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::String(s) => *s = mask_value(s),
        serde_json::Value::Number(_) | serde_json::Value::Bool(_) => {
            *v = serde_json::Value::String("****".into())
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(mask_all),
        serde_json::Value::Object(o) => o.values_mut().for_each(mask_all),
        serde_json::Value::Null => {}
    }
}

fn mask_json(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(o) => {
            for (k, val) in o.iter_mut() {
                if is_sensitive(k) {
                    mask_all(val);
                } else {
                    mask_json(val);
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(mask_json),
        serde_json::Value::String(s) => {
            if let Some(masked) = values::mask(s) {
                *s = masked;
            }
        }
        serde_json::Value::Number(n) => {
            // A card number sent as a JSON number.
            let digits = n.to_string();
            if values::is_card_number(&digits) {
                *v = serde_json::Value::String(values::mask_card(&digits));
            }
        }
        _ => {}
    }
}

/// Stored headers (a JSON object of name → value) as pairs, masked.
/// Headers as stored, for raw access: nothing masked.
pub fn raw_headers(json: &str) -> Vec<(String, String)> {
    let map: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(json).unwrap_or_default();
    map.into_iter()
        .map(|(k, v)| {
            let text = v
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| v.to_string());
            (k, text)
        })
        .collect()
}

/// A body as stored, for raw access: JSON laid out, other text as it is,
/// bytes that are not UTF-8 shown replaced.
pub fn raw_payload(bytes: &[u8]) -> String {
    match serde_json::from_slice::<serde_json::Value>(bytes) {
        Ok(v) => serde_json::to_string_pretty(&v).unwrap_or_default(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

pub fn headers(json: &str) -> Vec<(String, String)> {
    raw_headers(json)
        .into_iter()
        .map(|(k, text)| {
            let shown = if is_sensitive(&k) {
                mask_value(&text)
            } else {
                values::mask(&text).unwrap_or(text)
            };
            (k, shown)
        })
        .collect()
}

/// A raw body as text a person may read: JSON pretty-printed, form data
/// one field per line, both masked; JSON cut short masked as far as it
/// goes; anything else is not shown.
pub fn payload(bytes: &[u8]) -> String {
    if let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(bytes) {
        mask_json(&mut v);
        return serde_json::to_string_pretty(&v).unwrap_or_default();
    }
    if let Some(text) = std::str::from_utf8(bytes)
        .ok()
        .or_else(|| utf8_prefix(bytes))
        && matches!(text.trim_start().chars().next(), Some('{' | '['))
    {
        return lenient::mask(text);
    }
    if let Ok(text) = std::str::from_utf8(bytes)
        && text.contains('=')
        && !text.trim_start().starts_with('<')
    {
        return form_urlencoded::parse(text.trim().as_bytes())
            .map(|(k, v)| {
                let shown = if is_sensitive(&k) {
                    mask_value(&v)
                } else {
                    values::mask(&v).unwrap_or_else(|| v.into_owned())
                };
                format!("{k}={shown}")
            })
            .collect::<Vec<_>>()
            .join("\n");
    }
    format!(
        "[{} bytes not shown: neither JSON nor form data]",
        bytes.len()
    )
}

/// The valid UTF-8 start of bytes cut in the middle of a character.
fn utf8_prefix(bytes: &[u8]) -> Option<&str> {
    let valid = std::str::from_utf8(bytes).err()?.valid_up_to();
    // Only a cut at the very end: anything else is not text.
    (bytes.len() - valid < 4).then(|| std::str::from_utf8(&bytes[..valid]).ok())?
}

mod lenient;
mod values;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_and_personal_data_are_masked_everywhere() {
        let body = br#"{"id":"evt_1","type":"payment_intent.succeeded","data":{"object":{"id":"pi_123",
            "amount":6660,"receipt_email":"wang.li@example.com","billing_details":{"name":"Wang Li","phone":"+8613800138000"},
            "payment_method_details":{"card":{"last4":"4242","exp_year":2030}},"client_ip":"203.0.113.9"}},
            "resource":{"ciphertext":"c2VjcmV0IGJ5dGVzIGhlcmU=","nonce":"abc"}}"#;
        let shown = payload(body);
        for leaked in [
            "wang.li@example.com",
            "Wang Li",
            "+8613800138000",
            "4242",
            "203.0.113.9",
            "c2VjcmV0IGJ5dGVzIGhlcmU=",
        ] {
            assert!(!shown.contains(leaked), "{leaked} leaked:\n{shown}");
        }
        for kept in ["pi_123", "6660", "payment_intent.succeeded", "evt_1"] {
            assert!(shown.contains(kept), "{kept} lost:\n{shown}");
        }
        assert!(shown.contains("wa****om"));
    }

    #[test]
    fn form_bodies_and_headers_are_masked() {
        let form = b"out_trade_no=PAY1&trade_no=2026113022001&buyer_logon_id=158****1234%40qq.com&buyer_id=2088102177846880&sign=abcdefghijklmnopqrstuvwxyz&sign_type=RSA2&total_amount=66.60";
        let shown = payload(form);
        assert!(shown.contains("out_trade_no=PAY1"));
        assert!(shown.contains("total_amount=66.60"));
        assert!(!shown.contains("2088102177846880"));
        assert!(!shown.contains("abcdefghijklmnopqrstuvwxyz"));
        assert!(
            shown.contains("sign_type=****"),
            "the word `sign` makes it sensitive: {shown}"
        );
        let h = headers(
            r#"{"webhook-signature":"v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=","content-type":"application/json"}"#,
        );
        assert_eq!(h[0].1, "application/json");
        assert_eq!(h[1].1, "v1****4=");
        assert_eq!(
            payload(b"\x00\x01binary"),
            "[8 bytes not shown: neither JSON nor form data]"
        );
    }

    #[test]
    fn ordinary_keys_are_not_sensitive() {
        for key in [
            "payment_no",
            "description",
            "trade_status",
            "amount",
            "currency",
            "notify_id",
        ] {
            assert!(!is_sensitive(key), "{key}");
        }
        for key in [
            "buyer_logon_id",
            "Wechatpay-Signature",
            "receipt_email",
            "payer_client_ip",
        ] {
            assert!(is_sensitive(key), "{key}");
        }
    }
}
