//! Standard-Webhooks signatures (HMAC-SHA256 over `{id}.{timestamp}.{body}`,
//! keyed with the base64 secret after `whsec_`), used by the sandbox and by
//! the outbox relay for its own messages.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// What a configured `whsec_…` secret must be, for a refusal's hint.
pub const WHSEC_HINT: &str = "expected whsec_ followed by base64 of at least 16 bytes";

/// A `whsec_…` secret, decoded. Its bytes never print.
#[derive(Clone)]
pub struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl Secret {
    pub fn parse(text: &str) -> Result<Secret, String> {
        let b64 = text.strip_prefix("whsec_").unwrap_or(text);
        let bytes = B64
            .decode(b64)
            .map_err(|_| "a webhook secret is whsec_ followed by base64".to_string())?;
        if bytes.len() < 16 {
            return Err("a webhook secret needs at least 16 bytes".into());
        }
        Ok(Secret(bytes))
    }

    pub fn random() -> Secret {
        use rand::RngCore;
        let mut bytes = vec![0u8; 24];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        Secret(bytes)
    }

    pub fn to_whsec(&self) -> String {
        format!("whsec_{}", B64.encode(&self.0))
    }

    fn mac(&self, id: &str, timestamp: &str, body: &[u8]) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.as_bytes());
        mac.update(b".");
        mac.update(body);
        mac
    }

    /// `v1,<base64>` for the `webhook-signature` header.
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        let tag = self
            .mac(id, &timestamp.to_string(), body)
            .finalize()
            .into_bytes();
        format!("v1,{}", B64.encode(tag))
    }

    /// True if any space-separated `v1,<base64>` entry matches, compared in
    /// constant time.
    pub fn verify(&self, id: &str, timestamp: &str, body: &[u8], header: &str) -> bool {
        header.split(' ').any(|entry| {
            let Some(sig) = entry.strip_prefix("v1,") else {
                return false;
            };
            let Ok(bytes) = B64.decode(sig) else {
                return false;
            };
            self.mac(id, timestamp, body).verify_slice(&bytes).is_ok()
        })
    }
}

/// Verifies Standard-Webhooks headers (`webhook-id`, `webhook-timestamp`,
/// `webhook-signature`) against the raw body: the timestamp within
/// `tolerance_secs` of now in either direction, then any `v1` entry.
pub fn verify_headers(
    secret: &Secret,
    headers: &http::HeaderMap,
    body: &[u8],
    now_secs: i64,
    tolerance_secs: i64,
) -> Result<(), super::VerifyError> {
    use super::VerifyError;
    let header = |name| super::wire::header(headers, name);
    let id = header("webhook-id")?;
    let ts_text = header("webhook-timestamp")?;
    let signature = header("webhook-signature")?;
    let ts: i64 = ts_text
        .parse()
        .map_err(|_| VerifyError::MalformedHeader("webhook-timestamp is not a number".into()))?;
    // abs_diff: `now - ts` overflowed for a timestamp near i64::MIN (a
    // panic found writing the fuzz targets).
    if now_secs.abs_diff(ts) > tolerance_secs.unsigned_abs() {
        return Err(VerifyError::StaleTimestamp { tolerance_secs });
    }
    if secret.verify(id, ts_text, body, signature) {
        Ok(())
    } else {
        Err(VerifyError::BadSignature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Standard Webhooks specification's published example.
    #[test]
    fn the_specifications_vector_verifies() {
        let secret = Secret::parse("whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD").unwrap();
        let body = br#"{"email":"test@example.com","username":"test_user"}"#;
        let sig = secret.sign("msg_27UH4WbU6Z5A5EzD8u03UvzRbpk", 1649367553, body);
        assert_eq!(sig, "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=");
        assert!(secret.verify(
            "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
            "1649367553",
            body,
            &format!("v0,xx {sig}")
        ));
        let mut tampered = body.to_vec();
        tampered[3] ^= 1;
        assert!(!secret.verify(
            "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
            "1649367553",
            &tampered,
            &sig
        ));
        assert!(!secret.verify("msg_other", "1649367553", body, &sig));
    }

    /// A `webhook-timestamp` near i64::MIN overflowed `now - ts`
    /// (fuzz/corpus/standard/crash-min-timestamp): it is stale.
    #[test]
    fn a_timestamp_at_the_ends_of_i64_is_stale_not_a_panic() {
        let secret = Secret::parse("whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD").unwrap();
        for ts in [i64::MIN, i64::MIN + 1, -9_223_372_035_058_779_008, i64::MAX] {
            let mut headers = http::HeaderMap::new();
            headers.insert("webhook-id", "msg_1".parse().unwrap());
            headers.insert("webhook-timestamp", ts.to_string().parse().unwrap());
            headers.insert("webhook-signature", "v1,AA==".parse().unwrap());
            assert_eq!(
                verify_headers(&secret, &headers, b"{}", 1_795_996_800, 300),
                Err(super::super::VerifyError::StaleTimestamp {
                    tolerance_secs: 300
                }),
                "{ts}"
            );
        }
    }

    #[test]
    fn secrets_parse_and_hide() {
        assert!(Secret::parse("whsec_notbase64!!").is_err());
        assert!(Secret::parse("whsec_c2hvcnQ=").is_err());
        let s = Secret::random();
        assert_eq!(Secret::parse(&s.to_whsec()).unwrap().0, s.0);
        assert_eq!(format!("{s:?}"), "Secret(***)");
    }
}
