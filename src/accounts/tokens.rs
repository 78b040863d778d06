//! Merchant API tokens: made with an owner, scopes and an expiry, checked
//! on every API call, listed and revoked — each change with its audit
//! entry, for the console and the command line alike.

use super::{Accounts, Actor, TxError, internal, retrying};
use crate::auth;
use crate::policy::TOKEN_CREATE;
use crate::policy::held;
use crate::store::{self, audit, now_micros, tokens, users};
use app::error::AppError;
use app::tokens::{CreatedToken, MAX_EXPIRY_DAYS, Scope, TokenRow};
use serde_json::json;

/// A token's last use is written at most this often (microseconds): a
/// busy integration's every call would otherwise be a write.
const TOUCH_EVERY_US: i64 = 60 * 1_000_000;

const DAY_US: i64 = 24 * 3600 * 1_000_000;

/// A token that may be used: what the API knows of its caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiToken {
    pub id: String,
    pub name: String,
    /// The owner's user id; none for a token made before owners.
    pub owner_id: Option<String>,
    /// None: a token made before scopes, which may do everything.
    pub scopes: Option<Vec<Scope>>,
}

impl ApiToken {
    pub fn allows(&self, scope: Scope) -> bool {
        self.scopes.as_ref().is_none_or(|s| s.contains(&scope))
    }

    /// The token as the audit log names it: `token:<name>`, never a bare
    /// name that could be read as a user's.
    pub fn actor(&self) -> String {
        format!("token:{}", self.name)
    }

    /// The token as the proposer of an action held for approval: no
    /// console user, so nobody can have vouched for it.
    pub fn proposer(&self) -> crate::policy::held::Proposer {
        crate::policy::held::Proposer {
            id: format!("token:{}", self.id),
            name: self.actor(),
        }
    }
}

/// What a bearer token turned out to be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenCheck {
    Valid(ApiToken),
    Unknown,
    Revoked,
    Expired,
    /// Its owner is disabled: the token stops with them.
    OwnerDisabled,
}

/// A token to make.
#[derive(Clone, Debug)]
pub struct TokenRequest {
    pub name: String,
    /// At least one.
    pub scopes: Vec<Scope>,
    /// None: it never expires.
    pub expires_days: Option<u32>,
    /// The user answerable for it.
    pub owner_id: Option<String>,
}

fn invalid(detail: impl Into<String>) -> AppError {
    AppError::Invalid {
        detail: detail.into(),
    }
}

impl Accounts {
    /// A new merchant API token; the token itself is returned once and only
    /// its hash is kept.
    pub async fn create_token(
        &self,
        actor: &Actor,
        req: &TokenRequest,
    ) -> Result<CreatedToken, AppError> {
        let name = req.name.trim();
        if name.is_empty() || name.chars().count() > 64 || name.chars().any(char::is_control) {
            return Err(invalid(
                "a token name is 1–64 characters, none of them control characters",
            ));
        }
        if req.scopes.is_empty() {
            return Err(invalid(format!(
                "a token needs at least one scope: {}",
                Scope::names()
            )));
        }
        if let Some(days) = req.expires_days
            && !(1..=MAX_EXPIRY_DAYS).contains(&days)
        {
            return Err(invalid(format!(
                "a token expires in 1 to {MAX_EXPIRY_DAYS} days, or never"
            )));
        }
        let mut scopes = req.scopes.clone();
        scopes.sort();
        scopes.dedup();
        let new = auth::new_api_token();
        let id = uuid::Uuid::now_v7().to_string();
        // A console admin's token that can write waits for approval when
        // the policy says so: the secret is shown now and works once the
        // token exists. The host's never waits.
        if let Some(by_id) = actor.user_id.as_deref()
            && scopes.iter().any(|s| s.as_str().ends_with(":write"))
            && let Some(need) = held::needed(&self.db, TOKEN_CREATE, None).await?
        {
            if let Some(owner_id) = &req.owner_id {
                let owner = users::by_id(&self.db.pool, owner_id)
                    .await
                    .map_err(internal)?
                    .ok_or_else(|| invalid("the token's owner does not exist"))?;
                if owner.disabled {
                    return Err(invalid(format!(
                        "the token's owner `{}` is disabled",
                        owner.username
                    )));
                }
            }
            let by = held::Proposer {
                id: by_id.to_owned(),
                name: actor.name.clone(),
            };
            let params = held::Params::TokenCreate {
                token_id: id.clone(),
                name: name.to_owned(),
                hash: new.hash.clone(),
                prefix: new.prefix.clone(),
                owner_id: req.owner_id.clone(),
                scopes: scopes.clone(),
                expires_at: req
                    .expires_days
                    .map(|d| now_micros() + i64::from(d) * DAY_US),
            };
            let summary = format!(
                "create token {name} with {}",
                scopes
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            let held = held::hold(&self.db, &by, name, &summary, "new token", &params, need).await;
            let AppError::Held { action_id, .. } = held else {
                return Err(held);
            };
            return Ok(CreatedToken {
                name: name.to_owned(),
                prefix: new.prefix,
                token: new.token,
                held_action: Some(action_id),
            });
        }
        retrying(|| async {
            let now = now_micros();
            let expires_at = req.expires_days.map(|d| now + i64::from(d) * DAY_US);
            let mut tx = self.db.begin_write().await?;
            let owner = match &req.owner_id {
                Some(owner_id) => {
                    let owner = users::by_id(&mut *tx, owner_id)
                        .await?
                        .ok_or_else(|| invalid("the token's owner does not exist"))?;
                    if owner.disabled {
                        return Err(TxError::App(invalid(format!(
                            "the token's owner `{}` is disabled",
                            owner.username
                        ))));
                    }
                    Some(owner)
                }
                None => None,
            };
            let row = tokens::NewToken {
                id: &id,
                name,
                hash: &new.hash,
                prefix: &new.prefix,
                created_by: &actor.name,
                owner_id: owner.as_ref().map(|o| o.id.as_str()),
                scopes: &scopes,
                expires_at,
                now,
            };
            match tokens::insert(&mut *tx, &row).await {
                Err(e) if store::is_unique_violation(&e) => {
                    return Err(TxError::App(invalid(format!(
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
                after: Some(json!({
                    "name": name,
                    "prefix": new.prefix,
                    "scopes": scopes,
                    "expires_at": expires_at,
                    "owner": owner.as_ref().map(|o| &o.username),
                })),
            };
            audit::append(&mut tx, &self.db.audit, &entry, now).await?;
            tx.commit().await?;
            tracing::info!(actor = %actor.name, token = %name, "API token created");
            Ok(())
        })
        .await?;
        Ok(CreatedToken {
            name: name.to_owned(),
            prefix: new.prefix,
            token: new.token,
            held_action: None,
        })
    }

    /// What the bearer token is; a usable one is marked used (at most once
    /// a minute).
    pub async fn authenticate_token(&self, token: &str) -> Result<TokenCheck, AppError> {
        let pool = &self.db.pool;
        let Some(found) = tokens::find(pool, &auth::token_hash(token))
            .await
            .map_err(internal)?
        else {
            return Ok(TokenCheck::Unknown);
        };
        let now = now_micros();
        if found.revoked_at.is_some() {
            return Ok(TokenCheck::Revoked);
        }
        if found.expires_at.is_some_and(|at| at <= now) {
            return Ok(TokenCheck::Expired);
        }
        if found.owner_disabled {
            return Ok(TokenCheck::OwnerDisabled);
        }
        let since = now - TOUCH_EVERY_US;
        if found.last_used_at.is_none_or(|at| at < since)
            && let Err(e) = tokens::touch(pool, &found.id, now, since).await
        {
            // The call goes on: its last use is a note, not a condition.
            tracing::warn!(token = %found.name, error = %e, "token's last use not recorded");
        }
        Ok(TokenCheck::Valid(ApiToken {
            id: found.id,
            name: found.name,
            owner_id: found.owner_id,
            scopes: found.scopes,
        }))
    }

    /// Every token, revoked ones too, newest first.
    pub async fn list_tokens(&self) -> Result<Vec<TokenRow>, AppError> {
        tokens::list(&self.db.pool).await.map_err(internal)
    }

    pub async fn token_by_name(&self, name: &str) -> Result<TokenRow, AppError> {
        tokens::by_name(&self.db.pool, name.trim())
            .await
            .map_err(internal)?
            .ok_or(AppError::NotFound)
    }

    /// Revokes the token: from the next call on it is refused. Revoking a
    /// revoked token is refused, saying when it was.
    pub async fn revoke_token(&self, actor: &Actor, id: &str) -> Result<TokenRow, AppError> {
        retrying(|| async {
            let now = now_micros();
            let mut tx = self.db.begin_write().await?;
            let token = tokens::by_id(&mut *tx, id)
                .await?
                .ok_or(AppError::NotFound)?;
            if tokens::revoke(&mut *tx, id, now).await? == 0 {
                return Err(TxError::App(AppError::Refused {
                    detail: format!("the token `{}` is already revoked", token.name),
                }));
            }
            let entry = audit::Entry {
                actor: actor.name.clone(),
                action: "token.revoke",
                object_type: "api_token",
                object_id: id.to_owned(),
                before: Some(json!({ "name": token.name, "revoked_at": null })),
                after: Some(json!({ "name": token.name, "revoked_at": now })),
            };
            audit::append(&mut tx, &self.db.audit, &entry, now).await?;
            tx.commit().await?;
            tracing::info!(actor = %actor.name, token = %token.name, "API token revoked");
            Ok(TokenRow {
                revoked_at: Some(now),
                ..token
            })
        })
        .await
    }

    /// At start: each unrevoked token made before scopes, named in a
    /// warning — it may still do everything until it is replaced.
    pub async fn warn_unscoped_tokens(&self) -> Result<(), AppError> {
        let names = tokens::unscoped(&self.db.pool).await.map_err(internal)?;
        if !names.is_empty() {
            tracing::warn!(
                tokens = %names.join(", "),
                "API tokens without scopes may call every /api/v1 route: replace each with a \
                 scoped token (`reckon token create --scope …`) and revoke it (`reckon token revoke NAME`)"
            );
        }
        Ok(())
    }
}
