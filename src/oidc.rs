//! The relying party of sign-in through an OpenID Provider, by
//! `openidconnect`: discovery (at start, and again on demand while the
//! provider was unreachable), the authorization request with state, nonce
//! and PKCE S256 — kept in `oidc_flows` for a few minutes, taken once —
//! and the callback: the code exchanged, the ID token verified by the
//! crate (signature against the provider's keys, issuer, audience, nonce,
//! expiry), its role claim mapped, and the accounts' sign-in.

use crate::accounts::{Accounts, Identity, SsoRefusal, internal};
use crate::config::Oidc;
use crate::store::oidc as flows;
use app::error::AppError;
use app::ssr::{Peer, SignedIn};
use openidconnect::core::{
    CoreAuthDisplay, CoreAuthPrompt, CoreErrorResponseType, CoreGenderClaim, CoreJsonWebKey,
    CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm, CoreProviderMetadata,
    CoreResponseType, CoreRevocableToken, CoreRevocationErrorResponse,
    CoreTokenIntrospectionResponse, CoreTokenType,
};
use openidconnect::{
    AdditionalClaims, AuthenticationFlow, AuthorizationCode, Client, ClientId, ClientSecret,
    CsrfToken, EmptyExtraTokenFields, EndpointMaybeSet, EndpointNotSet, EndpointSet, IdTokenFields,
    IssuerUrl, Nonce, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope,
    StandardErrorResponse, StandardTokenResponse, TokenResponse as _,
};
use secrecy::ExposeSecret;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use tokio::sync::OnceCell;

/// How long a sign-in may stay at the provider before its callback is
/// refused (microseconds).
pub const FLOW_TTL_US: i64 = 10 * 60 * 1_000_000;

/// The ID token's claims beyond the standard ones: the role claim is
/// one of them, named by the configuration.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct OtherClaims {
    #[serde(flatten)]
    rest: serde_json::Map<String, serde_json::Value>,
}
impl AdditionalClaims for OtherClaims {}

type Tokens = StandardTokenResponse<
    IdTokenFields<
        OtherClaims,
        EmptyExtraTokenFields,
        CoreGenderClaim,
        CoreJweContentEncryptionAlgorithm,
        CoreJwsSigningAlgorithm,
    >,
    CoreTokenType,
>;

type RpClient = Client<
    OtherClaims,
    CoreAuthDisplay,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJsonWebKey,
    CoreAuthPrompt,
    StandardErrorResponse<CoreErrorResponseType>,
    Tokens,
    CoreTokenIntrospectionResponse,
    CoreRevocableToken,
    CoreRevocationErrorResponse,
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// Why a callback gets no session. Each is shown on a page and audited.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The provider could not be reached (discovery, token endpoint).
    Unavailable(String),
    /// The provider answered with an error (`access_denied`, …).
    Provider { code: String },
    /// No flow of this state: never begun, already used, or another
    /// instance's database.
    UnknownState,
    /// The flow was begun in another browser.
    OtherBrowser,
    /// The flow is older than [`FLOW_TTL_US`].
    Expired,
    /// The code exchange or the ID token failed its checks.
    BadToken(String),
    /// No configured value in the role claim.
    Unmapped,
    /// The identity is verified but the accounts refuse it.
    Account(SsoRefusal),
}

impl Refusal {
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::Unavailable(_) => "provider_unavailable",
            Refusal::Provider { .. } => "provider_error",
            Refusal::UnknownState => "unknown_state",
            Refusal::OtherBrowser => "other_browser",
            Refusal::Expired => "expired",
            Refusal::BadToken(_) => "bad_token",
            Refusal::Unmapped => "no_role",
            Refusal::Account(r) => r.reason(),
        }
    }
}

/// The relying party: the settings, its HTTP client (no redirects
/// followed) and the provider's metadata once discovered.
pub struct Sso {
    pub settings: Oidc,
    http: reqwest::Client,
    client: OnceCell<Arc<RpClient>>,
}

/// What the start of a sign-in gives the browser: where to go, and the
/// cookie value that binds the callback to this browser.
pub struct Started {
    pub url: String,
    pub browser: String,
}

/// The callback's query.
#[derive(Debug, Default, Deserialize)]
pub struct Callback {
    pub code: Option<String>,
    pub state: Option<String>,
    pub error: Option<String>,
}

fn browser_hash(value: &str) -> String {
    hex::encode(Sha256::digest(value.as_bytes()))
}

impl Sso {
    pub fn new(settings: Oidc) -> Result<Sso, AppError> {
        let http = reqwest::Client::builder()
            // Following redirects would let the provider's answers send
            // this server elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(10))
            .build()
            .map_err(internal)?;
        Ok(Sso {
            settings,
            http,
            client: OnceCell::new(),
        })
    }

    /// The client from the provider's discovery document, fetched once;
    /// while the provider is unreachable each sign-in tries again.
    pub async fn client(&self) -> Result<Arc<RpClient>, Refusal> {
        self.client
            .get_or_try_init(|| async {
                let s = &self.settings;
                let issuer = IssuerUrl::new(s.issuer.clone())
                    .map_err(|e| Refusal::Unavailable(format!("issuer URL: {e}")))?;
                let metadata = CoreProviderMetadata::discover_async(issuer, &self.http)
                    .await
                    .map_err(|e| Refusal::Unavailable(error_chain(&e)))?;
                let redirect = RedirectUrl::new(s.redirect_url.clone())
                    .map_err(|e| Refusal::Unavailable(format!("redirect URL: {e}")))?;
                let client = RpClient::from_provider_metadata(
                    metadata,
                    ClientId::new(s.client_id.clone()),
                    s.client_secret
                        .as_ref()
                        .map(|c| ClientSecret::new(c.expose_secret().to_owned())),
                )
                .set_redirect_uri(redirect);
                tracing::info!(issuer = %s.issuer, "identity provider discovered");
                Ok(Arc::new(client))
            })
            .await
            .cloned()
    }

    /// Begins a sign-in: state, nonce and PKCE verifier kept, the URL of
    /// the provider's authorization endpoint and the browser's cookie.
    pub async fn start(&self, accounts: &Accounts) -> Result<Started, Refusal> {
        let client = self.client().await?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let scopes = self
            .settings
            .scopes
            .iter()
            .filter(|s| *s != "openid")
            .map(|s| Scope::new(s.clone()));
        let (url, state, nonce) = client
            .authorize_url(
                AuthenticationFlow::<CoreResponseType>::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .add_scopes(scopes)
            .set_pkce_challenge(challenge)
            .url();
        let browser = CsrfToken::new_random().secret().clone();
        let now = accounts.now();
        let pool = &accounts.db.pool;
        let db = |e: crate::store::Error| Refusal::Unavailable(internal(e).to_string());
        flows::purge_flows(pool, now - FLOW_TTL_US)
            .await
            .map_err(db)?;
        let flow = flows::Flow {
            state: state.secret().clone(),
            browser: browser_hash(&browser),
            nonce: nonce.secret().clone(),
            verifier: verifier.secret().clone(),
            created_at: now,
        };
        flows::insert_flow(pool, &flow).await.map_err(db)?;
        Ok(Started {
            url: url.to_string(),
            browser,
        })
    }

    /// The provider's answer: the flow taken (once), the code exchanged,
    /// the ID token verified, the role mapped, and the accounts' sign-in.
    /// A refusal is audited here.
    pub async fn finish(
        &self,
        accounts: &Accounts,
        query: &Callback,
        browser: Option<&str>,
        peer: &Peer,
    ) -> Result<Result<SignedIn, Refusal>, AppError> {
        let outcome = self.verify(accounts, query, browser).await?;
        let issuer = &self.settings.issuer;
        match outcome {
            Ok(identity) => Ok(accounts
                .sso_sign_in(&identity, peer)
                .await?
                .map_err(Refusal::Account)),
            Err((refusal, subject)) => {
                if let Refusal::BadToken(detail) | Refusal::Unavailable(detail) = &refusal {
                    tracing::warn!(%detail, "sign-in through the identity provider failed");
                }
                accounts
                    .sso_failed(refusal.reason(), subject.as_deref(), issuer, peer)
                    .await?;
                Ok(Err(refusal))
            }
        }
    }

    /// The verified identity, or why not (with the subject once verified).
    async fn verify(
        &self,
        accounts: &Accounts,
        query: &Callback,
        browser: Option<&str>,
    ) -> Result<Result<Identity, (Refusal, Option<String>)>, AppError> {
        let refused = |r: Refusal| Ok(Err((r, None)));
        // The flow is taken first, whatever the answer: a state is good once.
        let flow = match &query.state {
            Some(state) => flows::take_flow(&accounts.db.pool, state)
                .await
                .map_err(internal)?,
            None => None,
        };
        if let Some(code) = &query.error {
            return refused(Refusal::Provider {
                code: code.chars().take(64).collect(),
            });
        }
        let Some(flow) = flow else {
            return refused(Refusal::UnknownState);
        };
        if browser.map(browser_hash).as_deref() != Some(flow.browser.as_str()) {
            return refused(Refusal::OtherBrowser);
        }
        if accounts.now() - flow.created_at > FLOW_TTL_US {
            return refused(Refusal::Expired);
        }
        let Some(code) = &query.code else {
            return refused(Refusal::BadToken("no code in the answer".into()));
        };
        let client = match self.client().await {
            Ok(c) => c,
            Err(r) => return refused(r),
        };
        let request = match client.exchange_code(AuthorizationCode::new(code.clone())) {
            Ok(r) => r,
            Err(e) => return refused(Refusal::Unavailable(error_chain(&e))),
        };
        let token = match request
            .set_pkce_verifier(PkceCodeVerifier::new(flow.verifier))
            .request_async(&self.http)
            .await
        {
            Ok(t) => t,
            Err(e) => return refused(Refusal::BadToken(error_chain(&e))),
        };
        let Some(id_token) = token.id_token() else {
            return refused(Refusal::BadToken("no ID token in the answer".into()));
        };
        let claims = match id_token.claims(&client.id_token_verifier(), &Nonce::new(flow.nonce)) {
            Ok(c) => c,
            Err(e) => return refused(Refusal::BadToken(error_chain(&e))),
        };
        let subject = claims.subject().as_str().to_owned();
        let values = claim_values(
            claims
                .additional_claims()
                .rest
                .get(&self.settings.role_claim),
        );
        let Some(role) = self.settings.role_for(&values) else {
            return Ok(Err((Refusal::Unmapped, Some(subject))));
        };
        let email = claims.email().map(|e| e.as_str().to_owned());
        let preferred = claims.preferred_username().map(|u| u.as_str().to_owned());
        Ok(Ok(Identity {
            issuer: self.settings.issuer.clone(),
            subject,
            username: crate::accounts::username_from(preferred.as_deref(), email.as_deref()),
            role,
        }))
    }
}

/// A claim's values: a list of strings, or one string (some providers
/// send a single role as text).
fn claim_values(claim: Option<&serde_json::Value>) -> Vec<String> {
    match claim {
        Some(serde_json::Value::String(s)) => vec![s.clone()],
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// An error and its causes on one line.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::claim_values;
    use serde_json::json;

    #[test]
    fn a_claim_is_a_list_or_one_text() {
        assert_eq!(claim_values(Some(&json!(["a", 1, "b"]))), vec!["a", "b"]);
        assert_eq!(claim_values(Some(&json!("admin"))), vec!["admin"]);
        assert!(claim_values(Some(&json!({"x": 1}))).is_empty());
        assert!(claim_values(None).is_empty());
    }
}
