//! Types that cross the wire between the server and the browser.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// What a console user may do. Checked on the server by `ssr::guard`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Operator,
    Supervisor,
    Admin,
}

impl Role {
    pub const ALL: &'static [Role] = &[Role::Operator, Role::Supervisor, Role::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Operator => "operator",
            Role::Supervisor => "supervisor",
            Role::Admin => "admin",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "operator" => Ok(Role::Operator),
            "supervisor" => Ok(Role::Supervisor),
            "admin" => Ok(Role::Admin),
            other => Err(format!(
                "unknown role `{other}`: expected operator, supervisor or admin"
            )),
        }
    }
}

/// The console's languages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    #[default]
    En,
    Zh,
}

impl Lang {
    pub fn as_str(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh",
        }
    }

    /// The HTML `lang` attribute value.
    pub fn html_tag(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh-CN",
        }
    }

    pub fn other(self) -> Lang {
        match self {
            Lang::En => Lang::Zh,
            Lang::Zh => Lang::En,
        }
    }

    /// Picks the first supported language of an `Accept-Language` header,
    /// honouring q-values; English when nothing matches.
    pub fn from_accept_language(header: &str) -> Lang {
        let mut best: Option<(f32, Lang)> = None;
        for part in header.split(',') {
            let mut pieces = part.trim().split(';');
            let tag = pieces.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = pieces
                .find_map(|p| p.trim().strip_prefix("q=").map(str::to_owned))
                .and_then(|q| q.parse::<f32>().ok())
                .unwrap_or(1.0);
            let lang = if tag.starts_with("zh") {
                Some(Lang::Zh)
            } else if tag.starts_with("en") {
                Some(Lang::En)
            } else {
                None
            };
            if let Some(lang) = lang
                && q > 0.0
                && best.is_none_or(|(bq, _)| q > bq)
            {
                best = Some((q, lang));
            }
        }
        best.map(|(_, l)| l).unwrap_or_default()
    }
}

impl FromStr for Lang {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "en" => Ok(Lang::En),
            "zh" => Ok(Lang::Zh),
            other => Err(format!("unknown language `{other}`: expected en or zh")),
        }
    }
}

/// A console user as the console shows it. Never carries the password hash.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    pub id: String,
    pub username: String,
    pub role: Role,
    pub lang: Option<Lang>,
    pub disabled: bool,
    /// Microseconds since the epoch, UTC.
    pub created_at: i64,
    /// Who made the account and who granted and confirmed its role.
    #[serde(default)]
    pub grant: Grant,
    /// May see stored callbacks and refused webhooks unmasked (each time
    /// audited); granted by an admin other than the user.
    #[serde(default)]
    pub view_raw: bool,
    /// Signs in with a second factor (filled in on the users page's list).
    #[serde(default)]
    pub mfa: bool,
}

/// Who made an account and who gave it its current role: names as the
/// audit log writes them (a username; `cli` or `demo` for the server's
/// host), ids for console users.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    pub created_by: Option<String>,
    pub created_by_id: Option<String>,
    pub granted_by: Option<String>,
    pub granted_by_id: Option<String>,
    pub granted_at: Option<i64>,
    pub confirmed_by: Option<String>,
    pub confirmed_at: Option<i64>,
    /// The console grant's own id, and how many admins have confirmed it
    /// of the number the approval policy asked when it was made.
    pub grant_id: Option<String>,
    pub confirmations: i64,
    pub confirmations_required: i64,
    /// A role that can decide (supervisor, admin), granted by an admin in
    /// the console and not yet confirmed by a second one: until then it
    /// decides nothing — fixes, bulk proposals, reopenings, grants.
    pub pending: bool,
}

impl Role {
    /// Whether the role decides what others propose or grant (and so
    /// needs a second admin's confirmation when granted in the console).
    pub fn decides(self) -> bool {
        self != Role::Operator
    }
}

/// Who is looking at the console, and in which language.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    pub user: Option<User>,
    pub lang: Lang,
    /// True while the database holds no user at all: the login page then
    /// says which command creates the first admin.
    pub needs_first_admin: bool,
    /// The business time zone: times are shown in it.
    #[serde(default)]
    pub zone: crate::format::Zone,
    /// How one may sign in: with a password, through an identity provider.
    #[serde(default)]
    pub sign_in: SignInWays,
}

/// The login page's ways in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignInWays {
    /// The password form is shown and taken.
    pub passwords: bool,
    /// The identity provider's name, for its "Sign in with …" button.
    pub provider: Option<String>,
}

impl Default for SignInWays {
    fn default() -> Self {
        SignInWays {
            passwords: true,
            provider: None,
        }
    }
}

impl SessionInfo {
    pub fn role(&self) -> Option<Role> {
        self.user.as_ref().map(|u| u.role)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_language_prefers_highest_q() {
        assert_eq!(
            Lang::from_accept_language("zh-CN,zh;q=0.9,en;q=0.8"),
            Lang::Zh
        );
        assert_eq!(
            Lang::from_accept_language("en-US,en;q=0.9,zh;q=0.8"),
            Lang::En
        );
        assert_eq!(Lang::from_accept_language("fr;q=1, zh-TW;q=0.5"), Lang::Zh);
        assert_eq!(Lang::from_accept_language("de, fr"), Lang::En);
        assert_eq!(Lang::from_accept_language(""), Lang::En);
        assert_eq!(Lang::from_accept_language("zh;q=0, en;q=0.1"), Lang::En);
    }

    #[test]
    fn roles_round_trip_through_strings() {
        for role in Role::ALL {
            assert_eq!(role.as_str().parse::<Role>().unwrap(), *role);
        }
        assert!("root".parse::<Role>().is_err());
    }
}
