//! The `[oidc]` section: sign-in through an OpenID Provider. File only,
//! but for the client secret, which `RECKON_OIDC_CLIENT_SECRET` may give
//! instead (secrets stay out of files where the host prefers).

use super::ConfigError;
use super::values::{Text, parse_bool, text};
use app::types::Role;
use secrecy::SecretString;
use serde::Deserialize;

/// The section as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcSection {
    issuer: String,
    client_id: String,
    client_secret: Option<SecretString>,
    /// The console's public address: the provider sends the browser back
    /// to `<public_url>/auth/oidc/callback`.
    public_url: String,
    scopes: Option<Vec<String>>,
    /// The button's name: "Sign in with <name>".
    name: Option<String>,
    /// The claim listing the user's groups or roles.
    role_claim: Option<String>,
    #[serde(default)]
    operator: Vec<String>,
    #[serde(default)]
    supervisor: Vec<String>,
    #[serde(default)]
    admin: Vec<String>,
    /// `false`/`off`: no password sign-in in the console.
    local_passwords: Option<Text>,
}

/// Sign-in through an OpenID Provider, checked.
#[derive(Clone, Debug)]
pub struct Oidc {
    pub issuer: String,
    pub client_id: String,
    pub client_secret: Option<SecretString>,
    /// `<public_url>/auth/oidc/callback`.
    pub redirect_url: String,
    /// Always with `openid`.
    pub scopes: Vec<String>,
    pub name: String,
    pub role_claim: String,
    /// The claim's values that give each role.
    pub operator: Vec<String>,
    pub supervisor: Vec<String>,
    pub admin: Vec<String>,
    /// Whether the console still takes passwords (default yes).
    pub local_passwords: bool,
}

pub const CALLBACK_PATH: &str = "/auth/oidc/callback";

impl Oidc {
    /// The role the claim's values give: the highest one matched; none
    /// when no value is mapped.
    pub fn role_for(&self, values: &[String]) -> Option<Role> {
        let has = |mapped: &[String]| values.iter().any(|v| mapped.contains(v));
        if has(&self.admin) {
            Some(Role::Admin)
        } else if has(&self.supervisor) {
            Some(Role::Supervisor)
        } else if has(&self.operator) {
            Some(Role::Operator)
        } else {
            None
        }
    }
}

pub(super) fn oidc(
    section: Option<OidcSection>,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<Option<Oidc>, ConfigError> {
    let Some(s) = section else { return Ok(None) };
    let invalid = |key: &'static str, value: &str, hint: &str| ConfigError::Invalid {
        key,
        value: value.to_owned(),
        hint: hint.to_owned(),
    };
    let url_ok = |u: &str| {
        (u.starts_with("https://") || u.starts_with("http://")) && u.len() > "https://".len()
    };
    if !url_ok(&s.issuer) {
        return Err(invalid(
            "oidc.issuer",
            &s.issuer,
            "expected the provider's issuer URL, such as https://login.example.com/realms/finance",
        ));
    }
    if !url_ok(&s.public_url) {
        return Err(invalid(
            "oidc.public_url",
            &s.public_url,
            "expected the console's public URL, such as https://reckon.example.com",
        ));
    }
    if s.client_id.trim().is_empty() {
        return Err(invalid(
            "oidc.client_id",
            "",
            "expected the client id the provider gave",
        ));
    }
    let client_secret = env("RECKON_OIDC_CLIENT_SECRET")
        .map(SecretString::from)
        .or(s.client_secret);
    let mut scopes = s
        .scopes
        .unwrap_or_else(|| ["openid", "profile", "email"].map(String::from).to_vec());
    if !scopes.iter().any(|s| s == "openid") {
        scopes.insert(0, "openid".into());
    }
    if s.operator.is_empty() && s.supervisor.is_empty() && s.admin.is_empty() {
        return Err(invalid(
            "oidc.role_claim",
            s.role_claim.as_deref().unwrap_or("groups"),
            "map at least one claim value to a role: operator = [\"…\"], supervisor = [\"…\"], admin = [\"…\"]",
        ));
    }
    let local_passwords = match text(s.local_passwords) {
        None => true,
        Some(v) => match v.trim().to_ascii_lowercase().as_str() {
            "on" => true,
            "off" => false,
            other => parse_bool("oidc.local_passwords", other)?,
        },
    };
    Ok(Some(Oidc {
        redirect_url: format!("{}{CALLBACK_PATH}", s.public_url.trim_end_matches('/')),
        issuer: s.issuer,
        client_id: s.client_id,
        client_secret,
        scopes,
        name: s.name.unwrap_or_else(|| "single sign-on".into()),
        role_claim: s.role_claim.unwrap_or_else(|| "groups".into()),
        operator: s.operator,
        supervisor: s.supervisor,
        admin: s.admin,
        local_passwords,
    }))
}
