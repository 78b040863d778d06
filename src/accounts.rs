//! Users and tokens: the operations the console and the CLI share. Each
//! change is one transaction holding the change and its audit entry.

use crate::auth;
use crate::config::SignIn;
use crate::context::{Clock, SystemClock};
use crate::metrics::Metrics;
use crate::policy::held;
use crate::store::approvals::{self, Subject};
use crate::store::user_sessions::{self, Lifespan};
use crate::store::{self, Db, audit, now_micros, throttle, users};
use app::error::AppError;
use app::mfa::{Enrolment, MfaStatus, Pending};
use app::sessions::{SessionList, SessionRow};
use app::ssr::{Live, LoginOutcome, Peer, SignedIn};
use app::types::{Lang, Role, User};
use serde_json::json;
use std::future::Future;
use std::sync::Arc;

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
/// A console grant of a deciding role just made waits for as many
/// admins' confirmations as the approval policy in force asks.
pub(crate) async fn open_grant(tx: &mut store::Tx<'_>, user_id: &str) -> Result<(), TxError> {
    let (_, policy) = crate::policy::changes::in_force(tx).await?;
    users::open_grant(
        &mut **tx,
        user_id,
        policy.required(crate::policy::ROLE_GRANT, None),
    )
    .await?;
    Ok(())
}

async fn may_grant(tx: &mut store::Tx<'_>, actor: &Actor, role: Role) -> Result<(), TxError> {
    if let Some(id) = &actor.user_id
        && role.decides()
        && users::grant_pending(&mut **tx, id).await?
    {
        return Err(TxError::App(AppError::GrantPending));
    }
    Ok(())
}

/// Sign-in throttling counts failures per username and per address in
/// this window; the lock's length and the username's limit are settings.
const THROTTLE_WINDOW_US: i64 = 15 * 60 * 1_000_000;
/// Failed sign-ins from one address before it is locked.
const ADDR_MAX_FAILURES: i64 = 20;
/// A session's last-seen time moves at most this often, so reading pages
/// does not become a write per request.
const TOUCH_EVERY_US: i64 = 60 * 1_000_000;
/// The User-Agent kept of a sign-in, and the username kept of a failed
/// one, at most (characters).
const AGENT_CHARS: usize = 256;
const TRIED_CHARS: usize = 64;
/// The actor of what no signed-in user did: a failed sign-in, a lock.
const ANONYMOUS: &str = "anonymous";

/// Why sessions end, as the register and the audit log name it.
pub mod end_reason {
    /// Ended by a person: its user, or an admin (console or command line).
    pub const ENDED: &str = "ended";
    pub const PASSWORD: &str = "password";
    pub const ROLE: &str = "role";
    pub const DISABLED: &str = "disabled";
    /// A second factor reset by another admin.
    pub const MFA_RESET: &str = "mfa_reset";
    pub const SIGNED_OUT: &str = "signed_out";
}

#[derive(Clone)]
pub struct Accounts {
    pub db: Db,
    pub metrics: Metrics,
    /// Sessions' idle timeout and lifetime, the sign-in lock-out.
    pub sign_in: SignIn,
    /// Whether passwords are taken, and the identity provider's button.
    pub ways: app::types::SignInWays,
    clock: Arc<dyn Clock>,
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
        Accounts {
            db,
            metrics,
            sign_in: SignIn::default(),
            ways: Default::default(),
            clock: Arc::new(SystemClock),
        }
    }

    /// The same, with these session and lock-out settings, timed by `clock`
    /// (a test's clock moves sessions past their idle timeout without
    /// waiting).
    pub fn with_sign_in(self, sign_in: SignIn, clock: Arc<dyn Clock>) -> Accounts {
        Accounts {
            sign_in,
            clock,
            ..self
        }
    }

    /// Now, by this server's clock: sessions and sign-in locks are timed by it.
    pub fn now(&self) -> i64 {
        self.clock.now_micros()
    }

    fn lifespan(&self) -> Lifespan {
        Lifespan {
            idle_us: self.sign_in.idle_us,
            lifetime_us: self.sign_in.lifetime_us,
        }
    }

    fn user_throttle(&self) -> throttle::Policy {
        throttle::Policy {
            max_failures: self.sign_in.max_failures,
            window_us: THROTTLE_WINDOW_US,
            lock_us: self.sign_in.lock_out_us,
        }
    }

    fn addr_throttle(&self) -> throttle::Policy {
        throttle::Policy {
            max_failures: ADDR_MAX_FAILURES,
            window_us: THROTTLE_WINDOW_US,
            lock_us: self.sign_in.lock_out_us,
        }
    }

    pub async fn user(&self, id: &str) -> Result<Option<User>, AppError> {
        users::by_id(&self.db.pool, id).await.map_err(internal)
    }

    pub async fn has_users(&self) -> Result<bool, AppError> {
        Ok(users::count(&self.db.pool).await.map_err(internal)? > 0)
    }

    pub async fn list_users(&self) -> Result<Vec<User>, AppError> {
        let list = users::list(&self.db.pool).await.map_err(internal)?;
        self.mark_enrolled(list).await
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
    /// clears the username's count, gives the address its attempt back and
    /// opens a session in the register. A wrong one is audited with the
    /// name tried, the address and the browser; so is the start of a lock
    /// (the attempts it refuses are only counted).
    pub async fn login(
        &self,
        username: &str,
        password: &str,
        peer: &Peer,
    ) -> Result<LoginOutcome, AppError> {
        if !self.ways.passwords {
            self.metrics.login("passwords_off");
            return Err(AppError::PasswordsOff);
        }
        let name = username.trim().to_ascii_lowercase();
        let addr = peer.addr;
        let (user_key, addr_key) = self.reserve_attempt(&name, peer).await?;
        let pool = &self.db.pool;

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
                throttle::release(pool, &addr_key).await.map_err(internal)?;
                self.after_password(user, peer, &user_key).await
            }
            other => {
                let why = match other {
                    None => "unknown_user",
                    Some(_) if !password_ok => "wrong_password",
                    Some(_) => "disabled",
                };
                self.metrics.login("bad_credentials");
                tracing::warn!(username = %name, %addr, "sign-in failed");
                self.login_failed(&name, peer, why).await?;
                Err(AppError::BadCredentials)
            }
        }
    }

    /// Counts a sign-in attempt (a password or a second factor) against the
    /// username and the address before it is checked, so concurrent
    /// attempts cannot all slip under the limit; a lock refuses it, and the
    /// start of a lock is audited. The two throttle keys.
    async fn reserve_attempt(&self, name: &str, peer: &Peer) -> Result<(String, String), AppError> {
        let now = self.now();
        let addr = peer.addr;
        let user_key = format!("user:{name}");
        let addr_key = format!("addr:{addr}");
        let attempt = uuid::Uuid::new_v4().simple().to_string();
        let pool = &self.db.pool;
        let refused = |until: i64| {
            self.metrics.login("throttled");
            // Another attempt may have set the lock after `now` was read.
            let left = (until - self.now()).max(0) as u64;
            let minutes = left.div_ceil(60_000_000).max(1);
            tracing::warn!(username = %name, %addr, minutes, "sign-in refused: throttled");
            AppError::Throttled { minutes }
        };
        if let Some(lock) = throttle::reserve(pool, &user_key, now, self.user_throttle(), &attempt)
            .await
            .map_err(internal)?
        {
            if lock.started {
                self.record_lock("username", &clip(name, TRIED_CHARS), lock.until, peer)
                    .await?;
            }
            return Err(refused(lock.until));
        }
        if let Some(lock) = throttle::reserve(pool, &addr_key, now, self.addr_throttle(), &attempt)
            .await
            .map_err(internal)?
        {
            throttle::release(pool, &user_key).await.map_err(internal)?;
            if lock.started {
                self.record_lock("address", &addr.to_string(), lock.until, peer)
                    .await?;
            }
            return Err(refused(lock.until));
        }
        Ok((user_key, addr_key))
    }

    /// Opens a session in the register for `user`, signed in from `peer`,
    /// with its `user.login` entry in the same transaction; its id.
    pub async fn open_session(&self, user: &User, peer: &Peer) -> Result<String, AppError> {
        self.open_session_as(user, peer, None, None).await
    }

    /// The same, noting the second factor given (`totp`, `recovery`, or
    /// `enrolled` for one set up during this sign-in) in the entry.
    pub async fn open_session_with(
        &self,
        user: &User,
        peer: &Peer,
        factor: Option<&str>,
    ) -> Result<String, AppError> {
        self.open_session_as(user, peer, factor, None).await
    }

    /// The same, naming how the user proved who they are (`via`: the
    /// identity provider) in the entry.
    pub async fn open_session_via(
        &self,
        user: &User,
        peer: &Peer,
        via: Option<&str>,
    ) -> Result<String, AppError> {
        self.open_session_as(user, peer, None, via).await
    }

    async fn open_session_as(
        &self,
        user: &User,
        peer: &Peer,
        factor: Option<&str>,
        via: Option<&str>,
    ) -> Result<String, AppError> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let address = peer.addr.to_string();
        let agent = clip(&peer.agent, AGENT_CHARS);
        retrying(|| async {
            let now = self.now();
            let mut tx = self.db.begin_write().await?;
            let row = user_sessions::NewSession {
                id: &id,
                user_id: &user.id,
                address: &address,
                user_agent: &agent,
                now,
            };
            user_sessions::insert(&mut *tx, &row).await?;
            let entry = audit::Entry {
                actor: user.username.clone(),
                action: "user.login",
                object_type: "user",
                object_id: user.id.clone(),
                before: None,
                after: Some({
                    let mut after = json!({ "address": address, "agent": agent, "session": id });
                    if let Some(factor) = factor {
                        after["second_factor"] = json!(factor);
                    }
                    if let Some(via) = via {
                        after["via"] = json!(via);
                    }
                    after
                }),
            };
            audit::append(&mut tx, &self.db.audit, &entry, now).await?;
            tx.commit().await?;
            Ok(())
        })
        .await?;
        Ok(id)
    }

    /// The start of a sign-in lock, by username or by address.
    async fn record_lock(
        &self,
        by: &'static str,
        key: &str,
        until: i64,
        peer: &Peer,
    ) -> Result<(), AppError> {
        tracing::warn!(by, key, "sign-in locked after repeated failures");
        self.record(audit::Entry {
            actor: ANONYMOUS.into(),
            action: "user.locked",
            object_type: by,
            object_id: key.to_owned(),
            before: None,
            after: Some(json!({
                by: key,
                "locked_until": until,
                "address": peer.addr.to_string(),
                "agent": clip(&peer.agent, AGENT_CHARS),
            })),
        })
        .await
    }

    /// An audit entry in a transaction of its own.
    pub(crate) async fn record(&self, entry: audit::Entry) -> Result<(), AppError> {
        retrying(|| async { Ok(audit::record(&self.db, &entry, self.now()).await?) }).await
    }

    /// Signing out: the audit entry, and the register's session ended with it.
    pub async fn logout(&self, user: &User, session_id: Option<&str>) -> Result<(), AppError> {
        retrying(|| async {
            let now = self.now();
            let mut tx = self.db.begin_write().await?;
            if let Some(id) = session_id {
                user_sessions::end_one(
                    &mut *tx,
                    id,
                    now,
                    self.lifespan(),
                    end_reason::SIGNED_OUT,
                    &user.username,
                )
                .await?;
            }
            let entry = audit::Entry {
                actor: user.username.clone(),
                action: "user.logout",
                object_type: "user",
                object_id: user.id.clone(),
                before: None,
                after: session_id.map(|id| json!({ "session": id })),
            };
            audit::append(&mut tx, &self.db.audit, &entry, now).await?;
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
        let username = auth::new_username(username)?;
        auth::check_password_rules(password)?;
        let hash = auth::hash_password(password.to_owned()).await?;
        let id = uuid::Uuid::now_v7().to_string();
        // A console admin's new user waits for approval when the policy
        // says so; the host's never does.
        if let Some(by_id) = actor.user_id.as_deref()
            && let Some(need) = held::needed(&self.db, crate::policy::USER_CREATE, None).await?
        {
            // Only what the admin could do now is held.
            retrying(|| async {
                let mut tx = self.db.begin_write().await?;
                may_grant(&mut tx, actor, role).await?;
                Ok::<_, TxError>(())
            })
            .await?;
            let by = held::Proposer {
                id: by_id.to_owned(),
                name: actor.name.clone(),
            };
            let params = held::Params::UserCreate {
                user_id: id,
                username: username.clone(),
                role,
                password_hash: hash,
            };
            let summary = format!("create user {username} as {role}");
            let reason = "new user";
            return Err(
                held::hold(&self.db, &by, &username, &summary, reason, &params, need).await,
            );
        }
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
            open_grant(&mut tx, &id).await?;
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
            open_grant(&mut tx, user_id).await?;
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
            if before.role != role {
                self.end_sessions_in(&mut tx, actor, user_id, end_reason::ROLE)
                    .await?;
            }
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
            let refused = |why| Err(TxError::App(why));
            let approver = approvals::Approver {
                id: actor_id,
                name: &actor.name,
                at: now,
                comment: "",
            };
            let grant_id = user.grant.grant_id.clone().unwrap_or_default();
            let count = if user.grant.pending && user.role == role {
                match approvals::approve(&mut tx, Subject::Grant, &grant_id, &approver).await {
                    Err(e) if store::is_unique_violation(&e) => {
                        return refused(AppError::AlreadyApproved);
                    }
                    other => other?,
                }
            } else {
                None
            };
            let confirmed = match count {
                Some(c) if c.reached() => {
                    users::confirm_grant(&mut *tx, user_id, role, actor_id, &actor.name, now).await?
                        > 0
                }
                Some(_) => false,
                None => {
                    let why = if !user.grant.pending || user.role != role {
                        AppError::NoGrantPending
                    } else if user.id == actor_id
                        || user.grant.granted_by_id.as_deref() == Some(actor_id)
                    {
                        AppError::OwnGrant
                    } else if users::grant_pending(&mut *tx, actor_id).await? {
                        AppError::GrantPending
                    } else if approvals::has_approved(&mut *tx, Subject::Grant, &grant_id, actor_id)
                        .await?
                    {
                        AppError::AlreadyApproved
                    } else {
                        AppError::Forbidden
                    };
                    return refused(why);
                }
            };
            let count = count.unwrap_or(approvals::Count {
                approvals: 0,
                required: 1,
            });
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
                after: Some(json!({
                    "role": role,
                    "confirmed_by": actor.name,
                    "confirmations": count.approvals,
                    "confirmations_required": count.required,
                    "pending": !confirmed,
                })),
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
                open_grant(&mut tx, user_id).await?;
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
            self.end_sessions_in(&mut tx, actor, user_id, end_reason::PASSWORD)
                .await?;
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
            // Enabling again brings no session back: they ended here.
            if disabled {
                self.end_sessions_in(&mut tx, actor, user_id, end_reason::DISABLED)
                    .await?;
            }
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    /// An admin gives another user raw access (stored callbacks and refused
    /// webhooks unmasked) or takes it away; never their own.
    pub async fn set_view_raw(
        &self,
        actor: &Actor,
        user_id: &str,
        allow: bool,
    ) -> Result<(), AppError> {
        if actor.user_id.as_deref() == Some(user_id) {
            return Err(AppError::NotOnYourself);
        }
        retrying(|| async {
            let now = now_micros();
            let mut tx = self.db.begin_write().await?;
            let by = allow.then_some(actor.name.as_str());
            if users::set_view_raw(&mut *tx, user_id, by, now).await? == 0 {
                users::by_id(&mut *tx, user_id)
                    .await?
                    .ok_or(AppError::NotFound)?;
                return Ok(()); // already so: nothing to record
            }
            let entry = audit::Entry {
                actor: actor.name.clone(),
                action: "user.view_raw",
                object_type: "user",
                object_id: user_id.to_owned(),
                before: Some(json!({ "view_raw": !allow })),
                after: Some(json!({ "view_raw": allow })),
            };
            audit::append(&mut tx, &self.db.audit, &entry, now).await?;
            tx.commit().await?;
            Ok(())
        })
        .await
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

// ---- Console sessions ------------------------------------------------

impl Accounts {
    /// The enabled user of a live session. A session found dead by time is
    /// closed in the register with when and why it died; a live one's
    /// last-seen time moves when it is a minute old.
    pub async fn session_user(&self, session_id: &str) -> Result<Option<Live>, AppError> {
        let pool = &self.db.pool;
        let now = self.now();
        let span = self.lifespan();
        let found = user_sessions::find(pool, session_id)
            .await
            .map_err(internal)?;
        let Some(found) = found.filter(|f| f.ended_at.is_none()) else {
            return Ok(None);
        };
        if let Some(why) = span.expired(found.created_at, found.last_seen_at, now) {
            user_sessions::close_dead(pool, session_id, now, span)
                .await
                .map_err(internal)?;
            tracing::info!(user_id = %found.user_id, why, "a console session ran out");
            return Ok(None);
        }
        let user = users::by_id(pool, &found.user_id)
            .await
            .map_err(internal)?
            .filter(|u| !u.disabled);
        let Some(user) = user else { return Ok(None) };
        let mut touched = None;
        if now - found.last_seen_at >= TOUCH_EVERY_US
            && user_sessions::touch(pool, session_id, now, now - TOUCH_EVERY_US)
                .await
                .map_err(internal)?
                > 0
        {
            touched = Some(now);
        }
        Ok(Some(Live { user, touched }))
    }

    /// A user's live sessions, the most recently seen first.
    pub async fn sessions_of(&self, user_id: &str) -> Result<(User, Vec<SessionRow>), AppError> {
        let pool = &self.db.pool;
        let user = users::by_id(pool, user_id)
            .await
            .map_err(internal)?
            .ok_or(AppError::NotFound)?;
        let rows = user_sessions::live_of(pool, user_id, self.now(), self.lifespan())
            .await
            .map_err(internal)?;
        Ok((user, rows))
    }

    /// Ends one live session, with its `session.end` entry. `owner`: the
    /// only user whose session may be ended (anyone else's is not found).
    /// A session already over is left as it is.
    pub async fn end_session(
        &self,
        actor: &Actor,
        session_id: &str,
        owner: Option<&str>,
    ) -> Result<(), AppError> {
        retrying(|| async {
            let now = self.now();
            let mut tx = self.db.begin_write().await?;
            let found = user_sessions::find(&mut *tx, session_id)
                .await?
                .filter(|f| owner.is_none_or(|o| o == f.user_id))
                .ok_or(AppError::NotFound)?;
            let ended = user_sessions::end_one(
                &mut *tx,
                session_id,
                now,
                self.lifespan(),
                end_reason::ENDED,
                &actor.name,
            )
            .await?;
            if ended == 0 {
                return Ok(());
            }
            let entry = session_end(actor, session_id, &found.user_id, end_reason::ENDED);
            audit::append(&mut tx, &self.db.audit, &entry, now).await?;
            tx.commit().await?;
            tracing::info!(actor = %actor.name, user_id = %found.user_id, "a console session ended");
            Ok(())
        })
        .await
    }

    /// Ends every live session of a user; how many.
    pub async fn end_sessions(&self, actor: &Actor, user_id: &str) -> Result<u64, AppError> {
        let ended = retrying(|| async {
            let mut tx = self.db.begin_write().await?;
            users::by_id(&mut *tx, user_id)
                .await?
                .ok_or(AppError::NotFound)?;
            let ended = self
                .end_sessions_in(&mut tx, actor, user_id, end_reason::ENDED)
                .await?;
            tx.commit().await?;
            Ok(ended)
        })
        .await?;
        tracing::info!(actor = %actor.name, %user_id, ended, "a user's console sessions ended");
        Ok(ended as u64)
    }

    /// Ends every live session of `user_id` inside the caller's transaction,
    /// each with its `session.end` entry: a password, role or second-factor
    /// change, or a disable, takes effect in every browser at once. How many.
    pub(crate) async fn end_sessions_in(
        &self,
        tx: &mut store::Conn,
        actor: &Actor,
        user_id: &str,
        reason: &'static str,
    ) -> store::Result<usize> {
        let now = self.now();
        let ended =
            user_sessions::end_all_of(tx, user_id, now, self.lifespan(), reason, &actor.name)
                .await?;
        for id in &ended {
            let entry = session_end(actor, id, user_id, reason);
            audit::append(tx, &self.db.audit, &entry, now).await?;
        }
        Ok(ended.len())
    }
}

/// The audit entry of a session ended by `actor`.
fn session_end(actor: &Actor, session_id: &str, user_id: &str, reason: &str) -> audit::Entry {
    audit::Entry {
        actor: actor.name.clone(),
        action: "session.end",
        object_type: "session",
        object_id: session_id.to_owned(),
        before: None,
        after: Some(json!({ "user_id": user_id, "reason": reason })),
    }
}

/// At most `max` characters of `text`.
fn clip(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// Whose sessions a console user may see and end: their own, and an
/// admin anyone's.
fn may_manage_sessions(actor: &User, user_id: &str) -> bool {
    actor.role == Role::Admin || actor.id == user_id
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
    async fn login(
        &self,
        username: &str,
        password: &str,
        peer: &Peer,
    ) -> Result<LoginOutcome, AppError> {
        Accounts::login(self, username, password, peer).await
    }
    async fn logout(&self, user: &User, session_id: Option<&str>) -> Result<(), AppError> {
        Accounts::logout(self, user, session_id).await
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
    async fn set_view_raw(&self, actor: &User, user_id: &str, allow: bool) -> Result<(), AppError> {
        Accounts::set_view_raw(self, &Actor::user(actor), user_id, allow).await
    }
    async fn change_password(
        &self,
        user: &User,
        current: &str,
        password: &str,
        peer: &Peer,
    ) -> Result<(), AppError> {
        Accounts::change_own_password(self, user, current, password, peer).await
    }
    // Console sessions.
    async fn session_user(&self, session_id: &str) -> Result<Option<Live>, AppError> {
        Accounts::session_user(self, session_id).await
    }
    async fn sessions(&self, actor: &User, user_id: &str) -> Result<SessionList, AppError> {
        if !may_manage_sessions(actor, user_id) {
            return Err(AppError::Forbidden);
        }
        let (user, items) = self.sessions_of(user_id).await?;
        Ok(SessionList {
            own: user.id == actor.id,
            user_id: user.id,
            username: user.username,
            items,
        })
    }
    async fn end_session(&self, actor: &User, session_id: &str) -> Result<(), AppError> {
        let owner = (actor.role != Role::Admin).then_some(actor.id.as_str());
        Accounts::end_session(self, &Actor::user(actor), session_id, owner).await
    }
    async fn end_sessions(&self, actor: &User, user_id: &str) -> Result<u64, AppError> {
        if !may_manage_sessions(actor, user_id) {
            return Err(AppError::Forbidden);
        }
        Accounts::end_sessions(self, &Actor::user(actor), user_id).await
    }
    // The second factor.
    async fn pending_user(&self, pending: &Pending) -> Result<User, AppError> {
        Accounts::pending_user(self, pending).await
    }
    async fn second_factor(
        &self,
        pending: &Pending,
        code: &str,
        peer: &Peer,
    ) -> Result<SignedIn, AppError> {
        Accounts::second_factor(self, pending, code, peer).await
    }
    async fn enrolled_sign_in(&self, pending: &Pending, peer: &Peer) -> Result<SignedIn, AppError> {
        Accounts::enrolled_sign_in(self, pending, peer).await
    }
    async fn mfa_status(&self, user: &User) -> Result<MfaStatus, AppError> {
        Accounts::mfa_status(self, user).await
    }
    async fn mfa_begin(&self, user: &User) -> Result<Enrolment, AppError> {
        Accounts::mfa_begin(self, user).await
    }
    async fn mfa_confirm(&self, user: &User, code: &str) -> Result<Vec<String>, AppError> {
        Accounts::mfa_confirm(self, user, code).await
    }
    async fn mfa_recovery_codes(
        &self,
        user: &User,
        code: &str,
        peer: &Peer,
    ) -> Result<Vec<String>, AppError> {
        Accounts::mfa_recovery_codes(self, user, code, peer).await
    }
    async fn mfa_reset(&self, actor: &User, user_id: &str) -> Result<(), AppError> {
        Accounts::mfa_reset(self, &Actor::user(actor), user_id).await
    }
    fn sign_in_ways(&self) -> app::types::SignInWays {
        self.ways.clone()
    }
}

mod mfa;
mod oidc;
mod password;
mod tokens;
pub use oidc::{Identity, SsoRefusal, username_from};
pub use tokens::{ApiToken, TokenCheck, TokenRequest};
