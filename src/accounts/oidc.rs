//! Sign-in through an identity provider, on the accounts' side: the user
//! the provider's (issuer, subject) is bound to, found or created with the
//! role its claims map to, that role kept in step at every sign-in, and a
//! session opened in the same register as a password's.
//!
//! A role the provider's claims give is granted by the host: the mapping
//! is the host's configuration, and membership of the mapped groups is
//! managed in the provider, so it counts as confirmed at once, like a
//! grant made with `reckon user add` — never pending a second admin.

use super::{
    AGENT_CHARS, ANONYMOUS, Accounts, Actor, TxError, clip, end_reason, grant_note, retrying,
};
use crate::auth;
use crate::store::{self, audit, oidc as identities, users};
use app::error::AppError;
use app::ssr::{Peer, SignedIn};
use app::types::{Role, User};
use serde_json::json;

/// The password hash of an account made for an identity provider: no
/// argon2 text, so no password ever matches it.
const NO_PASSWORD: &str = "!sso";

/// Who the provider says signed in: its verified (issuer, subject), the
/// name it suggests for a new account, and the role its claims map to.
#[derive(Clone, Debug)]
pub struct Identity {
    pub issuer: String,
    pub subject: String,
    pub username: Option<String>,
    pub role: Role,
}

impl Identity {
    /// The actor of what the provider's word does here (an account made, a
    /// role changed): the host's configuration, named by the issuer.
    pub fn actor(&self) -> Actor {
        Actor {
            user_id: None,
            name: format!("oidc:{}", self.issuer),
        }
    }
}

/// Why a verified identity gets no session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SsoRefusal {
    /// The bound user is disabled.
    Disabled,
    /// A new account's name is another account's.
    NameTaken(String),
    /// The provider gave no usable name for a new account.
    NoName,
    /// The claims take admin from the last active admin.
    LastAdmin,
}

impl SsoRefusal {
    pub fn reason(&self) -> &'static str {
        match self {
            SsoRefusal::Disabled => "disabled",
            SsoRefusal::NameTaken(_) => "username_taken",
            SsoRefusal::NoName => "no_username",
            SsoRefusal::LastAdmin => "last_admin",
        }
    }
}

/// A new account's name from the provider's suggestion: the
/// `preferred_username`, else the e-mail address's local part.
pub fn username_from(preferred: Option<&str>, email: Option<&str>) -> Option<String> {
    let candidates = [
        preferred.map(str::to_owned),
        email.and_then(|e| e.split('@').next()).map(str::to_owned),
    ];
    candidates
        .into_iter()
        .flatten()
        .find_map(|c| auth::parse_username(&c.trim().to_ascii_lowercase()).ok())
}

impl Accounts {
    /// Signs in the provider's verified `who` from `peer`: its user found
    /// by (issuer, subject) — or created with the mapped role —, refused
    /// when disabled, its role changed to the mapped one when it differs
    /// (audited, and its other sessions ended as any role change ends
    /// them), then a session opened.
    pub async fn sso_sign_in(
        &self,
        who: &Identity,
        peer: &Peer,
    ) -> Result<Result<SignedIn, SsoRefusal>, AppError> {
        let actor = who.actor();
        let found = retrying(|| async {
            let now = self.now();
            let mut tx = self.db.begin_write().await?;
            let user = match identities::user_of(&mut *tx, &who.issuer, &who.subject).await? {
                Some(id) => {
                    let user = users::by_id(&mut *tx, &id)
                        .await?
                        .ok_or(AppError::NotFound)?;
                    if user.disabled {
                        return Ok(Err(SsoRefusal::Disabled));
                    }
                    if user.role != who.role {
                        if users::update_role(&mut *tx, &id, who.role, now, Some(actor.by()))
                            .await?
                            == 0
                        {
                            return Ok(Err(SsoRefusal::LastAdmin));
                        }
                        let entry = audit::Entry {
                            actor: actor.name.clone(),
                            action: "user.role",
                            object_type: "user",
                            object_id: id.clone(),
                            before: Some(json!({ "role": user.role })),
                            after: Some(grant_note(
                                &actor,
                                who.role,
                                json!({ "role": who.role, "subject": who.subject }),
                            )),
                        };
                        audit::append(&mut tx, &self.db.audit, &entry, now).await?;
                        self.end_sessions_in(&mut tx, &actor, &id, end_reason::ROLE)
                            .await?;
                    }
                    identities::touch(&mut *tx, &who.issuer, &who.subject, now).await?;
                    users::by_id(&mut *tx, &id)
                        .await?
                        .ok_or(AppError::NotFound)?
                }
                None => {
                    let Some(name) = who.username.clone() else {
                        return Ok(Err(SsoRefusal::NoName));
                    };
                    match self
                        .insert_bound(&mut tx, &actor, &name, who.role, who, now)
                        .await
                    {
                        Err(TxError::App(AppError::UsernameTaken)) => {
                            return Ok(Err(SsoRefusal::NameTaken(name)));
                        }
                        other => other?,
                    }
                }
            };
            tx.commit().await?;
            Ok(Ok(user))
        })
        .await?;
        let user = match found {
            Ok(user) => user,
            Err(refusal) => {
                self.sso_failed(refusal.reason(), Some(&who.subject), &who.issuer, peer)
                    .await?;
                return Ok(Err(refusal));
            }
        };
        let session_id = self
            .open_session_via(&user, peer, Some(&actor.name))
            .await?;
        self.metrics.login("success");
        tracing::info!(username = %user.username, addr = %peer.addr, issuer = %who.issuer, "signed in through the identity provider");
        Ok(Ok(SignedIn { user, session_id }))
    }

    /// A user made on the host and bound to the provider's `subject` at
    /// `issuer` (no password: they sign in through the provider only).
    pub async fn create_sso_user(
        &self,
        actor: &Actor,
        username: &str,
        role: Role,
        issuer: &str,
        subject: &str,
    ) -> Result<User, AppError> {
        let username = auth::parse_username(username)?;
        let who = Identity {
            issuer: issuer.to_owned(),
            subject: subject.to_owned(),
            username: Some(username.clone()),
            role,
        };
        retrying(|| async {
            let now = self.now();
            let mut tx = self.db.begin_write().await?;
            let user = self
                .insert_bound(&mut tx, actor, &username, role, &who, now)
                .await?;
            tx.commit().await?;
            Ok(user)
        })
        .await
    }

    /// Binds the existing user `user_id` to the provider's `subject` at
    /// `issuer` (the host's word, audited); its role then follows the
    /// claims at each sign-in.
    pub async fn bind_identity(
        &self,
        actor: &Actor,
        user_id: &str,
        issuer: &str,
        subject: &str,
    ) -> Result<(), AppError> {
        retrying(|| async {
            let now = self.now();
            let mut tx = self.db.begin_write().await?;
            match identities::bind(&mut *tx, issuer, subject, user_id, now).await {
                Err(e) if store::is_unique_violation(&e) => {
                    return Err(TxError::App(AppError::Refused {
                        detail: "this subject, or another subject of this provider, is bound to the user already".into(),
                    }));
                }
                other => other?,
            }
            let entry = audit::Entry {
                actor: actor.name.clone(),
                action: "user.identity.bind",
                object_type: "user",
                object_id: user_id.to_owned(),
                before: None,
                after: Some(json!({ "issuer": issuer, "subject": subject })),
            };
            audit::append(&mut tx, &self.db.audit, &entry, now).await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    /// A new user `name` with `role`, bound to `who`, with its
    /// `user.create` entry, inside the caller's transaction.
    async fn insert_bound(
        &self,
        tx: &mut store::Tx<'_>,
        actor: &Actor,
        name: &str,
        role: Role,
        who: &Identity,
        now: i64,
    ) -> Result<User, TxError> {
        let id = uuid::Uuid::now_v7().to_string();
        let new = users::NewUser {
            id: &id,
            username: name,
            role,
            password_hash: NO_PASSWORD,
            now,
            by: actor.by(),
        };
        match users::insert(&mut **tx, &new).await {
            Err(e) if store::is_unique_violation(&e) => {
                return Err(TxError::App(AppError::UsernameTaken));
            }
            other => other?,
        }
        match identities::bind(&mut **tx, &who.issuer, &who.subject, &id, now).await {
            Err(e) if store::is_unique_violation(&e) => {
                return Err(TxError::App(AppError::Refused {
                    detail: "this identity is bound to another user already".into(),
                }));
            }
            other => other?,
        }
        let entry = audit::Entry {
            actor: actor.name.clone(),
            action: "user.create",
            object_type: "user",
            object_id: id.clone(),
            before: None,
            after: Some(grant_note(
                actor,
                role,
                json!({
                    "username": name,
                    "role": role,
                    "issuer": who.issuer,
                    "subject": who.subject,
                }),
            )),
        };
        audit::append(tx, &self.db.audit, &entry, now).await?;
        tracing::info!(actor = %actor.name, username = %name, %role, "user created for an identity provider's sign-in");
        Ok(users::by_id(&mut **tx, &id)
            .await?
            .ok_or(AppError::NotFound)?)
    }

    /// A sign-in through the provider that got no session: audited as a
    /// failed sign-in with why, the subject when it was verified, and the
    /// address and browser.
    pub async fn sso_failed(
        &self,
        reason: &str,
        subject: Option<&str>,
        issuer: &str,
        peer: &Peer,
    ) -> Result<(), AppError> {
        self.metrics.login("bad_credentials");
        tracing::warn!(reason, addr = %peer.addr, issuer, "sign-in through the identity provider refused");
        self.record(audit::Entry {
            actor: ANONYMOUS.into(),
            action: "user.login_failed",
            object_type: "identity",
            object_id: subject.map(|s| clip(s, 128)).unwrap_or_default(),
            before: None,
            after: Some(json!({
                "via": format!("oidc:{issuer}"),
                "subject": subject.map(|s| clip(s, 128)),
                "address": peer.addr.to_string(),
                "agent": clip(&peer.agent, AGENT_CHARS),
                "reason": reason,
            })),
        })
        .await
    }
}
