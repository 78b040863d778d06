//! What the webhook targets share: an input read as HTTP-like headers, a
//! blank line, and a body; a fixed "now"; a small seeded RSA key.
#![allow(dead_code)]

use axum::http::{HeaderMap, HeaderName, HeaderValue};

/// The clock every target verifies against (2026-11-30 00:00:00 UTC).
pub const NOW: i64 = 1_795_996_800;

/// `name: value` lines up to the first empty line are headers (lines that
/// are not a valid header are dropped); the rest is the body. Without an
/// empty line the whole input is the body.
pub fn split(data: &[u8]) -> (HeaderMap, &[u8]) {
    let mut headers = HeaderMap::new();
    let Some(at) = data.windows(2).position(|w| w == b"\n\n") else {
        return (headers, data);
    };
    for line in data[..at].split(|b| *b == b'\n') {
        let Some(colon) = line.iter().position(|b| *b == b':') else {
            continue;
        };
        let value = line[colon + 1..]
            .strip_prefix(b" ")
            .unwrap_or(&line[colon + 1..]);
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(&line[..colon]),
            HeaderValue::from_bytes(value),
        ) {
            headers.append(n, v);
        }
    }
    (headers, &data[at + 2..])
}

/// Of the inputs, those whose length is a multiple of this are signed
/// with the RSA key and verified (the others only parsed).
pub const SIGN_EVERY: usize = 8;

/// A 512-bit key from a fixed seed: far too small for anything real, but
/// signing with it is cheap enough to sign every fuzz input, and the
/// adapters check the signature the same way whatever the key's size.
pub fn rsa_key() -> rsa::RsaPrivateKey {
    use rand::SeedableRng;
    let mut rng = rand::rngs::StdRng::seed_from_u64(24);
    rsa::RsaPrivateKey::new(&mut rng, 512).expect("a key")
}

/// The key's public half as PEM, as the adapters' configs take it.
pub fn public_pem(key: &rsa::RsaPrivateKey) -> String {
    use rsa::pkcs8::EncodePublicKey;
    key.to_public_key()
        .to_public_key_pem(rsa::pkcs8::LineEnding::LF)
        .expect("PEM")
}

/// Reads a notification the way the engine does once it is believed:
/// whatever `parse` makes of it must describe itself.
pub fn parse_and_describe(
    provider: &dyn reckon::providers::Provider,
    headers: &HeaderMap,
    body: &[u8],
) {
    if let Ok(notification) = provider.parse(headers, body) {
        let _ = notification.facts();
    }
}
