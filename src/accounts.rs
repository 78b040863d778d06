//! Users and tokens: the operations the console and the CLI share. Each
//! change is one transaction holding the change and its audit entry.

use crate::auth;
use crate::metrics::Metrics;
use crate::store::{self, Db, audit, now_micros, throttle, tokens, users};
use app::error::AppError;
use app::types::{Lang, Role, User};
use serde_json::json;
use std::future::Future;
use std::net::IpAddr;

/// Who does something: a console user, or the command line.
#[derive(Clone, Debug)]
pub struct Actor {
    pub user_id: Option<String>,
    pub name: String,
}

impl Actor {
    pub fn cli() -> Actor {
        Actor {
            user_id: None,
            name: "cli".into(),
        }
    }
    pub fn user(user: &User) -> Actor {
        Actor {
            user_id: Some(user.id.clone()),
            name: user.username.clone(),
        }
    }
    /// As the author of an account or a grant: a console user's grant of a
    /// deciding role waits for a second admin, the host's does not.
    fn by(&self) -> users::By<'_> {
        users::By {
            id: self.user_id.as_deref(),
            name: &self.name,
        }
    }
}

/// What the audit entry of a grant of `role` by `actor` says of it: pending
/// until a second admin confirms it, or confirmed at once by the host.
fn grant_note(actor: &Actor, role: Role, mut after: serde_json::Value) -> serde_json::Value {
    if role.decides() {
        match &actor.user_id {
            Some(_) => after["pending"] = json!(true),
            None => after["confirmed_by"] = json!(actor.name),
        }
    }
    after
}

/// An admin whose own grant is pending gives no one a deciding role: else
/// one admin could make a second "admin" and confirm its grants.
async fn may_grant(tx: &mut store::Tx<'_>, actor: &Actor, role: Role) -> Result<(), TxError> {
    if let Some(id) = &actor.user_id
        && role.decides()
        && users::grant_pending(&mut **tx, id).await?
    {
        return Err(TxError::App(AppError::GrantPending));
    }
    Ok(())
}

/// Sign-in throttling: per username and per address.
pub const USER_THROTTLE: throttle::Policy = throttle::Policy {
    max_failures: 5,
    window_us: 15 * 60 * 1_000_000,
    lock_us: 15 * 60 * 1_000_000,
};
pub const ADDR_THROTTLE: throttle::Policy = throttle::Policy {
    max_failures: 20,
    window_us: 15 * 60 * 1_000_000,
    lock_us: 15 * 60 * 1_000_000,
};

#[derive(Clone)]
pub struct Accounts {
    pub db: Db,
    pub metrics: Metrics,
}

/// A transaction's failure: a refusal to report, or a database error (a
/// primary-key race on the audit chain is retried).
pub(crate) enum TxError {
    App(AppError),
    Db(store::Error),
}

impl From<store::Error> for TxError {
    fn from(e: store::Error) -> Self {
        TxError::Db(e)
    }
}

impl From<AppError> for TxError {
    fn from(e: AppError) -> Self {
        TxError::App(e)
    }
}

pub(crate) fn internal(err: impl std::fmt::Display) -> AppError {
    let trace_id = uuid::Uuid::new_v4().simple().to_string();
    tracing::error!(%trace_id, error = %err, "database operation failed");
    AppError::Internal { trace_id }
}

/// Runs `op` (one transaction) again when it lost a race (for the next audit
/// sequence number, or a busy SQLite writer lock); at most five times.
pub(crate) async fn retrying<T, F, Fut>(mut op: F) -> Result<T, AppError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, TxError>>,
{
    let mut attempt = 0;
    loop {
        attempt += 1;
        match op().await {
            Ok(v) => return Ok(v),
            Err(TxError::App(e)) => return Err(e),
            Err(TxError::Db(e)) if store::is_retryable(&e) && attempt < 5 => continue,
            Err(TxError::Db(e)) => return Err(internal(e)),
        }
    }
}

impl Accounts {
    pub fn new(db: Db, metrics: Metrics) -> Accounts {
        Accounts { db, metrics }
    }

    pub async fn user(&self, id: &str) -> Result<Option<User>, AppError> {
        users::by_id(&self.db.pool, id).await.map_err(internal)
    }

    pub async fn has_users(&self) -> Result<bool, AppError> {
        Ok(users::count(&self.db.pool).await.map_err(internal)? > 0)
    }

    pub async fn list_users(&self) -> Result<Vec<User>, AppError> {
        users::list(&self.db.pool).await.map_err(internal)
    }

    pub async fn by_username(&self, username: &str) -> Result<User, AppError> {
        let name = auth::parse_username(username)?;
        users::credentials(&self.db.pool, &name)
            .await
            .map_err(internal)?
            .map(|(u, _)| u)
            .ok_or(AppError::NotFound)
    }

    /// The attempt is counted against the username and the address before
    /// the password is checked (so concurrent attempts cannot all slip under
    /// the limit), then argon2 runs behind the hash gate. A right password
    /// clears the username's count and gives the address its attempt back.
    pub async fn login(
        &self,
        username: &str,
        password: &str,
        addr: IpAddr,
    ) -> Result<User, AppError> {
        let now = now_micros();
        let name = username.trim().to_ascii_lowercase();
        let user_key = format!("user:{name}");
        let addr_key = format!("addr:{addr}");
        let pool = &self.db.pool;
        let refused = |until: i64| {
            self.metrics.login("throttled");
            // Another attempt may have set the lock after `now` was read.
            let left = (until - now_micros()).max(0) as u64;
            let minutes = left.div_ceil(60_000_000).max(1);
            tracing::warn!(username = %name, %addr, minutes, "sign-in refused: throttled");
            AppError::Throttled { minutes }
        };
        if let Some(until) = throttle::reserve(pool, &user_key, now, USER_THROTTLE)
            .await
            .map_err(internal)?
        {
            return Err(refused(until));
        }
        if let Some(until) = throttle::reserve(pool, &addr_key, now, ADDR_THROTTLE)
            .await
            .map_err(internal)?
        {
            throttle::release(pool, &user_key).await.map_err(internal)?;
            return Err(refused(until));
        }

        let found = match auth::parse_username(&name) {
            Ok(valid) => users::credentials(pool, &valid).await.map_err(internal)?,
            Err(_) => None,
        };
        let (user, hash) = match found {
            Some((u, h)) => (Some(u), Some(h)),
            None => (None, None),
        };
        let password_ok = match auth::verify_password(password.to_owned(), hash).await {
            Ok(ok) => ok,
            Err(busy @ AppError::Busy { .. }) => {
                // Not checked, so not a failure: both attempts go back.
                throttle::release(pool, &user_key).await.map_err(internal)?;
                throttle::release(pool, &addr_key).await.map_err(internal)?;
                self.metrics.login("busy");
                tracing::warn!(username = %name, %addr, "sign-in refused: password checks busy");
                return Err(busy);
            }
            Err(other) => return Err(other),
        };
        match user {
            Some(user) if password_ok && !user.disabled => {
                throttle::clear(pool, &user_key).await.map_err(internal)?;
                throttle::release(pool, &addr_key).await.map_err(internal)?;
                self.audited(&Actor::user(&user), "user.login", &user.id, None, None)
                    .await?;
                self.metrics.login("success");
                tracing::info!(username = %user.username, %addr, "signed in");
                Ok(user)
            }
            _ => {
                self.metrics.login("bad_credentials");
                tracing::warn!(username = %name, %addr, "sign-in failed");
                Err(AppError::BadCredentials)
            }
        }
    }

    pub async fn logout(&self, user: &User) -> Result<(), AppError> {
        self.audited(&Actor::user(user), "user.logout", &user.id, None, None)
            .await
    }

    /// An audit entry on its own, for events that change no row.
    async fn audited(
        &self,
        actor: &Actor,
        action: &'static str,
        user_id: &str,
        before: Option<serde_json::Value>,
        after: Option<serde_json::Value>,
    ) -> Result<(), AppError> {
        let entry = audit::Entry {
            actor: actor.name.clone(),
            action,
            object_type: "user",
            object_id: user_id.to_owned(),
            before,
            after,
        };
        retrying(|| async {
            let mut tx = self.db.begin_write().await?;
            audit::append(&mut tx, &self.db.audit, &entry, now_micros()).await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    pub async fn set_lang(&self, user: &User, lang: Lang) -> Result<(), AppError> {
        users::update_lang(&self.db.pool, &user.id, lang)
            .await
            .map_err(internal)?;
        Ok(())
    }

    pub async fn create_user(
        &self,
        actor: &Actor,
        username: &str,
        role: Role,
        password: &str,
    ) -> Result<User, AppError> {
        let username = auth::parse_username(username)?;
        auth::check_password_rules(password)?;
        let hash = auth::hash_password(password.to_owned()).await?;
        let id = uuid::Uuid::now_v7().to_string();
        retrying(|| async {
            let now = now_micros();
            let mut tx = self.db.begin_write().await?;
            may_grant(&mut tx, actor, role).await?;
            let new = users::NewUser {
                id: &id,
                username: &username,
                role,
                password_hash: &hash,
                now,
                by: actor.by(),
            };
            match users::insert(&mut *tx, &new).await {
                Err(e) if store::is_unique_violation(&e) => {
                    return Err(TxError::App(AppError::UsernameTaken));
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
                    json!({ "username": username, "role": role }),
                )),
            };
            audit::append(&mut tx, &self.db.audit, &entry, now).await?;
            let user = users::by_id(&mut *tx, &id)
                .await?
                .ok_or(AppError::NotFound)?;
            tx.commit().await?;
            tracing::info!(actor = %actor.name, username = %username, %role, "user created");
            Ok(user)
        })
        .await
    }

    pub async fn set_role(&self, actor: &Actor, user_id: &str, role: Role) -> Result<(), AppError> {
        if actor.user_id.as_deref() == Some(user_id) {
            return Err(AppError::NotOnYourself);
        }
        retrying(|| async {
            let now = now_micros();
            let mut tx = self.db.begin_write().await?;
            let before = users::by_id(&mut *tx, user_id)
                .await?
                .ok_or(AppError::NotFound)?;
            may_grant(&mut tx, actor, role).await?;
            // The same role again from the console grants nothing anew (a
            // confirmed grant stays confirmed); from the host it confirms.
            let unchanged = before.role == role && actor.user_id.is_some();
            let grant = (!unchanged).then(|| actor.by());
            if users::update_role(&mut *tx, user_id, role, now, grant).await? == 0 {
                return Err(TxError::App(if unchanged {
                    AppError::Refused {
                        detail: "the role changed meanwhile; look again".into(),
                    }
                } else {
                    AppError::LastAdmin
                }));
            }
            let after = json!({ "role": role });
            let entry = audit::Entry {
                actor: actor.name.clone(),
                action: "user.role",
                object_type: "user",
                object_id: user_id.to_owned(),
                before: Some(json!({ "role": before.role })),
                after: Some(if unchanged {
                    after
                } else {
                    grant_note(actor, role, after)
                }),
            };
            audit::append(&mut tx, &self.db.audit, &entry, now).await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    /// A second admin confirms user `user_id`'s pending grant of `role`
    /// (the role the admin saw): from then on it decides. Never the
    /// grantee, the granter, or an admin whose own grant is pending — the
    /// statement itself says so.
    pub async fn confirm_grant(
        &self,
        actor: &Actor,
        user_id: &str,
        role: Role,
    ) -> Result<(), AppError> {
        let Some(actor_id) = actor.user_id.as_deref() else {
            return Err(AppError::Forbidden);
        };
        retrying(|| async {
            let now = now_micros();
            let mut tx = self.db.begin_write().await?;
            let user = users::by_id(&mut *tx, user_id)
                .await?
                .ok_or(AppError::NotFound)?;
            if users::confirm_grant(&mut *tx, user_id, role, actor_id, &actor.name, now).await? == 0 {
                let why = if !user.grant.pending || user.role != role {
                    AppError::NoGrantPending
                } else if user.id == actor_id || user.grant.granted_by_id.as_deref() == Some(actor_id)
                {
                    AppError::OwnGrant
                } else if users::grant_pending(&mut *tx, actor_id).await? {
                    AppError::GrantPending
                } else {
                    AppError::Forbidden
                };
                return Err(TxError::App(why));
            }
            let entry = audit::Entry {
                actor: actor.name.clone(),
                action: "user.grant.confirm",
                object_type: "user",
                object_id: user_id.to_owned(),
                before: Some(json!({
                    "role": role,
                    "granted_by": user.grant.granted_by,
                    "pending": true,
                })),
                after: Some(json!({ "role": role, "confirmed_by": actor.name })),
            };
            audit::append(&mut tx, &self.db.audit, &entry, now).await?;
            tx.commit().await?;
            tracing::info!(actor = %actor.name, user = %user.username, %role, "role grant confirmed");
            Ok(())
        })
        .await
    }

    /// An admin other than the grantee withdraws user `user_id`'s pending
    /// grant of `role`: the user is an operator again.
    pub async fn revoke_grant(
        &self,
        actor: &Actor,
        user_id: &str,
        role: Role,
    ) -> Result<(), AppError> {
        let Some(actor_id) = actor.user_id.as_deref() else {
            return Err(AppError::Forbidden);
        };
        if actor_id == user_id {
            return Err(AppError::NotOnYourself);
        }
        retrying(|| async {
            let now = now_micros();
            let mut tx = self.db.begin_write().await?;
            let user = users::by_id(&mut *tx, user_id)
                .await?
                .ok_or(AppError::NotFound)?;
            if users::revoke_grant(&mut *tx, user_id, role, actor_id, &actor.name, now).await? == 0
            {
                return Err(TxError::App(if !user.grant.pending || user.role != role {
                    AppError::NoGrantPending
                } else {
                    AppError::LastAdmin
                }));
            }
            let entry = audit::Entry {
                actor: actor.name.clone(),
                action: "user.grant.revoke",
                object_type: "user",
                object_id: user_id.to_owned(),
                before: Some(json!({
                    "role": role,
                    "granted_by": user.grant.granted_by,
                    "pending": true,
                })),
                after: Some(json!({ "role": Role::Operator })),
            };
            audit::append(&mut tx, &self.db.audit, &entry, now).await?;
            tx.commit().await?;
            tracing::info!(actor = %actor.name, user = %user.username, %role, "role grant revoked");
            Ok(())
        })
        .await
    }

    pub async fn reset_password(
        &self,
        actor: &Actor,
        user_id: &str,
        password: &str,
    ) -> Result<(), AppError> {
        auth::check_password_rules(password)?;
        let hash = auth::hash_password(password.to_owned()).await?;
        retrying(|| async {
            let now = now_micros();
            let mut tx = self.db.begin_write().await?;
            if users::update_password(&mut *tx, user_id, &hash, now).await? == 0 {
                return Err(TxError::App(AppError::NotFound));
            }
            let mut after = json!({ "password_changed_at": now });
            // Whoever sets another's password can sign in as them: one
            // admin could otherwise borrow a confirmed supervisor.
            if let Some(by) = actor.user_id.as_deref().filter(|by| *by != user_id)
                && users::regrant_after_reset(&mut *tx, user_id, by, &actor.name, now).await? > 0
            {
                after["pending"] = json!(true);
            }
            let entry = audit::Entry {
                actor: actor.name.clone(),
                action: "user.password",
                object_type: "user",
                object_id: user_id.to_owned(),
                before: None,
                after: Some(after),
            };
            audit::append(&mut tx, &self.db.audit, &entry, now).await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    pub async fn set_disabled(
        &self,
        actor: &Actor,
        user_id: &str,
        disabled: bool,
    ) -> Result<(), AppError> {
        if disabled && actor.user_id.as_deref() == Some(user_id) {
            return Err(AppError::NotOnYourself);
        }
        retrying(|| async {
            let now = now_micros();
            let mut tx = self.db.begin_write().await?;
            let changed = if disabled {
                users::disable(&mut *tx, user_id, now).await?
            } else {
                users::enable(&mut *tx, user_id, now).await?
            };
            if changed == 0 {
                // Nothing changed: say why, from the row as it is now.
                let user = users::by_id(&mut *tx, user_id)
                    .await?
                    .ok_or(AppError::NotFound)?;
                if user.disabled == disabled {
                    return Ok(()); // already so: nothing to record
                }
                return Err(TxError::App(AppError::LastAdmin));
            }
            let entry = audit::Entry {
                actor: actor.name.clone(),
                action: if disabled {
                    "user.disable"
                } else {
                    "user.enable"
                },
                object_type: "user",
                object_id: user_id.to_owned(),
                before: Some(json!({ "disabled": !disabled })),
                after: Some(json!({ "disabled": disabled })),
            };
            audit::append(&mut tx, &self.db.audit, &entry, now).await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    /// A new merchant API token; the token itself is returned once and only
    /// its hash is kept.
    pub async fn create_token(&self, actor: &Actor, name: &str) -> Result<String, AppError> {
        let name = name.trim();
        if name.is_empty() || name.len() > 64 {
            return Err(AppError::Transport(
                "a token name is 1–64 characters".into(),
            ));
        }
        let new = auth::new_api_token();
        let id = uuid::Uuid::now_v7().to_string();
        retrying(|| async {
            let now = now_micros();
            let mut tx = self.db.begin_write().await?;
            let row = tokens::NewToken {
                id: &id,
                name,
                hash: &new.hash,
                prefix: &new.prefix,
                created_by: &actor.name,
                now,
            };
            match tokens::insert(&mut *tx, &row).await {
                Err(e) if store::is_unique_violation(&e) => {
                    return Err(TxError::App(AppError::Transport(format!(
                        "a token named `{name}` already exists"
                    ))));
                }
                other => other?,
            }
            let entry = audit::Entry {
                actor: actor.name.clone(),
                action: "token.create",
                object_type: "api_token",
                object_id: id.clone(),
                before: None,
                after: Some(json!({ "name": name, "prefix": new.prefix })),
            };
            audit::append(&mut tx, &self.db.audit, &entry, now).await?;
            tx.commit().await?;
            Ok(())
        })
        .await?;
        Ok(new.token)
    }

    /// The token's name when the bearer token is valid.
    pub async fn authenticate_token(&self, token: &str) -> Result<Option<String>, AppError> {
        tokens::authenticate(&self.db.pool, &auth::token_hash(token), now_micros())
            .await
            .map_err(internal)
    }

    /// Demo mode: the user exists with this role and a fresh password, which
    /// is returned to print.
    pub async fn ensure_demo_user(&self, username: &str, role: Role) -> Result<String, AppError> {
        let password = auth::random_password();
        let actor = Actor {
            user_id: None,
            name: "demo".into(),
        };
        match self.create_user(&actor, username, role, &password).await {
            Ok(_) => {}
            Err(AppError::UsernameTaken) => {
                let user = self.by_username(username).await?;
                self.reset_password(&actor, &user.id, &password).await?;
                if user.role != role {
                    self.set_role(&actor, &user.id, role).await?;
                }
                if user.disabled {
                    self.set_disabled(&actor, &user.id, false).await?;
                }
            }
            Err(e) => return Err(e),
        }
        Ok(password)
    }
}

/// Why user `decider` may not decide what user `proposer` proposed, if
/// they may not: it is their own; their role is a pending grant; they
/// created the proposer's account or granted or confirmed its role. The
/// deciding statements refuse all of it themselves; this says why.
pub(crate) async fn decision_refusal(
    pool: &store::Pool,
    decider: &str,
    proposer: &str,
) -> Result<Option<AppError>, AppError> {
    if decider == proposer {
        return Ok(Some(AppError::OwnProposal));
    }
    if users::grant_pending(pool, decider)
        .await
        .map_err(internal)?
    {
        return Ok(Some(AppError::GrantPending));
    }
    Ok(users::vouched_for(pool, decider, proposer)
        .await
        .map_err(internal)?
        .map(|(proposer, link)| AppError::NotIndependent { proposer, link }))
}

#[async_trait::async_trait]
impl app::ssr::Backend for Accounts {
    async fn user(&self, id: &str) -> Result<Option<User>, AppError> {
        Accounts::user(self, id).await
    }
    async fn has_users(&self) -> Result<bool, AppError> {
        Accounts::has_users(self).await
    }
    async fn login(&self, username: &str, password: &str, addr: IpAddr) -> Result<User, AppError> {
        Accounts::login(self, username, password, addr).await
    }
    async fn logout(&self, user: &User) -> Result<(), AppError> {
        Accounts::logout(self, user).await
    }
    async fn set_lang(&self, user: &User, lang: Lang) -> Result<(), AppError> {
        Accounts::set_lang(self, user, lang).await
    }
    async fn list_users(&self) -> Result<Vec<User>, AppError> {
        Accounts::list_users(self).await
    }
    async fn create_user(
        &self,
        actor: &User,
        username: &str,
        role: Role,
        password: &str,
    ) -> Result<User, AppError> {
        Accounts::create_user(self, &Actor::user(actor), username, role, password).await
    }
    async fn set_role(&self, actor: &User, user_id: &str, role: Role) -> Result<(), AppError> {
        Accounts::set_role(self, &Actor::user(actor), user_id, role).await
    }
    async fn confirm_grant(&self, actor: &User, user_id: &str, role: Role) -> Result<(), AppError> {
        Accounts::confirm_grant(self, &Actor::user(actor), user_id, role).await
    }
    async fn revoke_grant(&self, actor: &User, user_id: &str, role: Role) -> Result<(), AppError> {
        Accounts::revoke_grant(self, &Actor::user(actor), user_id, role).await
    }
    async fn reset_password(
        &self,
        actor: &User,
        user_id: &str,
        password: &str,
    ) -> Result<(), AppError> {
        Accounts::reset_password(self, &Actor::user(actor), user_id, password).await
    }
    async fn set_disabled(
        &self,
        actor: &User,
        user_id: &str,
        disabled: bool,
    ) -> Result<(), AppError> {
        Accounts::set_disabled(self, &Actor::user(actor), user_id, disabled).await
    }
}
