//! The certificate a PayPal webhook names in `PAYPAL-CERT-URL`, checked as
//! PayPal's Java SDK checks it (`Event.validateReceivedEvent`,
//! `SSLUtil.validateCertificateChain`): fetched only from under PayPal's
//! own certificate path (`cert_urls`, a URL anywhere else is refused
//! before any request), chained up to one of the configured roots, each
//! certificate on the way within its validity, the signing one's subject
//! CN `messageverificationcerts…` ending `.paypal.com`. A certificate that
//! passed is kept by its URL, so a webhook costs a fetch only the first
//! time its certificate is seen; its validity is checked at every use.

use rsa::pkcs1v15::{Signature, VerifyingKey};
use rsa::pkcs8::DecodePublicKey;
use rsa::signature::Verifier;
use sha2::{Sha256, Sha384, Sha512};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use x509_cert::Certificate;
use x509_cert::der::{Encode, oid::ObjectIdentifier};

/// PayPal's certificate URLs, live and sandbox: where a signing
/// certificate may come from unless the account says otherwise.
pub const PAYPAL_CERT_URLS: [&str; 4] = [
    "https://api.paypal.com/v1/notifications/certs/",
    "https://api-m.paypal.com/v1/notifications/certs/",
    "https://api.sandbox.paypal.com/v1/notifications/certs/",
    "https://api-m.sandbox.paypal.com/v1/notifications/certs/",
];

/// The longest certificate file read (a chain is a few kilobytes).
const MAX_CERT_BYTES: usize = 64 << 10;
/// Certificates kept at most; past it the cache starts again.
const MAX_CACHED: usize = 64;

const SHA256_WITH_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.11");
const SHA384_WITH_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.12");
const SHA512_WITH_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.13");

/// A signing certificate that passed: its key and when it stops being good.
#[derive(Clone)]
pub(super) struct Signer {
    pub key: VerifyingKey<Sha256>,
    /// Seconds (Unix) of the validity of the whole chain.
    not_before: i64,
    not_after: i64,
}

impl Signer {
    pub fn valid_at(&self, now_secs: i64) -> bool {
        (self.not_before..=self.not_after).contains(&now_secs)
    }
}

pub(super) struct Certs {
    /// URL prefixes a certificate may be fetched from.
    allowed: Vec<reqwest::Url>,
    roots: Vec<Certificate>,
    cache: Mutex<HashMap<String, Arc<Signer>>>,
    http: reqwest::Client,
}

impl Certs {
    pub fn new(
        allowed: &[String],
        roots_pem: &str,
        http: reqwest::Client,
    ) -> Result<Certs, String> {
        let allowed = allowed
            .iter()
            .map(|u| {
                let url = reqwest::Url::parse(u).map_err(|e| format!("cert_urls {u:?}: {e}"))?;
                if !u.ends_with('/') {
                    return Err(format!("cert_urls {u:?} must end with '/'"));
                }
                Ok(url)
            })
            .collect::<Result<Vec<_>, String>>()?;
        let roots = Certificate::load_pem_chain(roots_pem.as_bytes())
            .map_err(|e| format!("cert_roots is not PEM certificates: {e}"))?;
        if roots.is_empty() {
            return Err("cert_roots holds no certificate".into());
        }
        Ok(Certs {
            allowed,
            roots,
            cache: Mutex::new(HashMap::new()),
            http,
        })
    }

    /// Whether `url` is under one of the allowed prefixes: same scheme,
    /// host and port, its path below the prefix's, no credentials, query
    /// or fragment to smuggle another host in.
    pub fn allowed(&self, url: &str) -> Result<reqwest::Url, String> {
        let parsed = reqwest::Url::parse(url).map_err(|e| format!("not a URL ({e})"))?;
        if !parsed.username().is_empty()
            || parsed.password().is_some()
            || parsed.query().is_some()
            || parsed.fragment().is_some()
        {
            return Err(format!("{url} is not a plain certificate URL"));
        }
        let under = self.allowed.iter().any(|a| {
            a.scheme() == parsed.scheme()
                && a.host_str() == parsed.host_str()
                && a.port_or_known_default() == parsed.port_or_known_default()
                && parsed.path().starts_with(a.path())
                && !parsed.path().contains("/../")
        });
        if under {
            Ok(parsed)
        } else {
            Err(format!(
                "{url} is not under PayPal's certificate URLs (cert_urls): not fetched"
            ))
        }
    }

    /// The signer cached for `url`, if it was fetched and passed before.
    pub fn cached(&self, url: &str) -> Option<Arc<Signer>> {
        self.cache.lock().expect("cert cache").get(url).cloned()
    }

    /// The signer at `url`: cached, or fetched and checked.
    pub async fn signer(&self, url: &str, now_secs: i64) -> Result<Arc<Signer>, FetchError> {
        let parsed = self.allowed(url).map_err(FetchError::Refused)?;
        if let Some(s) = self.cached(url) {
            return Ok(s);
        }
        let res = self
            .http
            .get(parsed)
            .send()
            .await
            .map_err(|e| FetchError::Unavailable(e.without_url().to_string()))?;
        let status = res.status();
        if !status.is_success() {
            return Err(FetchError::Unavailable(format!(
                "fetching it answered {status}"
            )));
        }
        let body = crate::providers::wire::answer(res)
            .await
            .map_err(|e| FetchError::Unavailable(e.to_string()))?;
        if body.len() > MAX_CERT_BYTES {
            return Err(FetchError::Refused(format!(
                "the certificate file is longer than {MAX_CERT_BYTES} bytes"
            )));
        }
        let signer =
            Arc::new(check_chain(&body, &self.roots, now_secs).map_err(FetchError::Refused)?);
        let mut cache = self.cache.lock().expect("cert cache");
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(url.to_owned(), signer.clone());
        Ok(signer)
    }
}

/// Why no signer came from a certificate URL.
#[derive(Debug)]
pub(super) enum FetchError {
    /// Not PayPal's, or not a certificate PayPal signs with.
    Refused(String),
    /// Could not be fetched now (PayPal redelivers the webhook later).
    Unavailable(String),
}

/// The certificates of a PEM file, the first the signing one, checked up
/// to one of `roots` at `now_secs`.
pub(super) fn check_chain(
    pem: &[u8],
    roots: &[Certificate],
    now_secs: i64,
) -> Result<Signer, String> {
    let chain = Certificate::load_pem_chain(pem)
        .map_err(|e| format!("the certificate file is not PEM certificates: {e}"))?;
    let leaf = chain
        .first()
        .ok_or("the certificate file holds no certificate")?;
    let subject = leaf.tbs_certificate.subject.to_string();
    // As the Java SDK: one CN=messageverificationcerts….paypal.com.
    let paypal_cn = subject.split(',').any(|rdn| {
        let rdn = rdn.trim();
        rdn.starts_with("CN=messageverificationcerts") && rdn.ends_with(".paypal.com")
    });
    if !paypal_cn {
        return Err(format!(
            "the certificate's subject ({subject}) is not PayPal's message verification certificate"
        ));
    }
    let mut not_before = i64::MIN;
    let mut not_after = i64::MAX;
    let mut current = leaf;
    // Each step goes one issuer up; a chain longer than the file is a loop.
    for _ in 0..=chain.len() {
        let (from, to) = validity(current);
        not_before = not_before.max(from);
        not_after = not_after.min(to);
        let issuer = &current.tbs_certificate.issuer;
        if let Some(root) = roots
            .iter()
            .find(|r| &r.tbs_certificate.subject == issuer && signed_by(current, r).is_ok())
        {
            let (from, to) = validity(root);
            not_before = not_before.max(from);
            not_after = not_after.min(to);
            let signer = Signer {
                key: VerifyingKey::new(public_key(leaf)?),
                not_before,
                not_after,
            };
            if !signer.valid_at(now_secs) {
                return Err(
                    "the certificate (or one it chains to) is expired or not yet valid".into(),
                );
            }
            return Ok(signer);
        }
        let Some(next) = chain[1..].iter().find(|c| {
            &c.tbs_certificate.subject == issuer && is_ca(c) && signed_by(current, c).is_ok()
        }) else {
            return Err(format!(
                "the certificate does not chain to a configured root (cert_roots): no issuer {issuer}"
            ));
        };
        current = next;
    }
    Err("the certificate chain loops".into())
}

/// (not before, not after) in Unix seconds.
fn validity(cert: &Certificate) -> (i64, i64) {
    let v = &cert.tbs_certificate.validity;
    let secs = |t: &x509_cert::time::Time| {
        i64::try_from(t.to_unix_duration().as_secs()).unwrap_or(i64::MAX)
    };
    (secs(&v.not_before), secs(&v.not_after))
}

/// An intermediate must say it is a CA (basicConstraints cA).
fn is_ca(cert: &Certificate) -> bool {
    use x509_cert::ext::pkix::BasicConstraints;
    matches!(
        cert.tbs_certificate.get::<BasicConstraints>(),
        Ok(Some((_, BasicConstraints { ca: true, .. })))
    )
}

fn public_key(cert: &Certificate) -> Result<rsa::RsaPublicKey, String> {
    let der = cert
        .tbs_certificate
        .subject_public_key_info
        .to_der()
        .map_err(|e| e.to_string())?;
    rsa::RsaPublicKey::from_public_key_der(&der)
        .map_err(|e| format!("the certificate's key is not an RSA key: {e}"))
}

/// Whether `issuer`'s key made `cert`'s signature (RSA PKCS#1 v1.5).
fn signed_by(cert: &Certificate, issuer: &Certificate) -> Result<(), String> {
    let key = public_key(issuer)?;
    let tbs = cert.tbs_certificate.to_der().map_err(|e| e.to_string())?;
    let sig = Signature::try_from(cert.signature.raw_bytes()).map_err(|e| e.to_string())?;
    let alg = cert.signature_algorithm.oid;
    let ok = if alg == SHA256_WITH_RSA {
        VerifyingKey::<Sha256>::new(key).verify(&tbs, &sig).is_ok()
    } else if alg == SHA384_WITH_RSA {
        VerifyingKey::<Sha384>::new(key).verify(&tbs, &sig).is_ok()
    } else if alg == SHA512_WITH_RSA {
        VerifyingKey::<Sha512>::new(key).verify(&tbs, &sig).is_ok()
    } else {
        return Err(format!("unsupported certificate signature algorithm {alg}"));
    };
    if ok {
        Ok(())
    } else {
        Err("bad certificate signature".into())
    }
}
