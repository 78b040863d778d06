//! RSA keys as providers and merchants hand them out (Alipay, WeChat Pay).

/// An RSA public key as providers hand them out: PEM, or bare base64 DER.
pub(crate) fn rsa_public_key(text: &str) -> Result<rsa::RsaPublicKey, String> {
    use base64::Engine;
    use rsa::pkcs8::DecodePublicKey;
    if text.contains("-----BEGIN") {
        rsa::RsaPublicKey::from_public_key_pem(text).map_err(|e| e.to_string())
    } else {
        let der = base64::engine::general_purpose::STANDARD
            .decode(text.split_whitespace().collect::<String>())
            .map_err(|_| "neither PEM nor base64".to_string())?;
        rsa::RsaPublicKey::from_public_key_der(&der).map_err(|e| e.to_string())
    }
}

/// An RSA private key as merchants keep them: PKCS#8 or PKCS#1, PEM or
/// bare base64 DER.
pub(crate) fn rsa_private_key(text: &str) -> Result<rsa::RsaPrivateKey, String> {
    use base64::Engine;
    use rsa::pkcs1::DecodeRsaPrivateKey;
    use rsa::pkcs8::DecodePrivateKey;
    if text.contains("-----BEGIN RSA PRIVATE KEY") {
        rsa::RsaPrivateKey::from_pkcs1_pem(text).map_err(|e| e.to_string())
    } else if text.contains("-----BEGIN") {
        rsa::RsaPrivateKey::from_pkcs8_pem(text).map_err(|e| e.to_string())
    } else {
        let der = base64::engine::general_purpose::STANDARD
            .decode(text.split_whitespace().collect::<String>())
            .map_err(|_| "neither PEM nor base64".to_string())?;
        rsa::RsaPrivateKey::from_pkcs8_der(&der)
            .or_else(|_| rsa::RsaPrivateKey::from_pkcs1_der(&der))
            .map_err(|e| e.to_string())
    }
}
