//! A user's own password change: the current password proves it is them
//! (a wrong one counts towards the username's lock-out, as a failed
//! sign-in does), and the change ends every session of theirs.

use super::{Accounts, Actor, TRIED_CHARS, clip, internal};
use crate::auth;
use crate::store::{audit, throttle, users};
use app::error::AppError;
use app::ssr::Peer;
use app::types::User;
use serde_json::json;

impl Accounts {
    pub async fn change_own_password(
        &self,
        user: &User,
        current: &str,
        password: &str,
        peer: &Peer,
    ) -> Result<(), AppError> {
        auth::check_password_rules(password)?;
        if password == current {
            return Err(AppError::Invalid {
                detail: "the new password is the current one".into(),
            });
        }
        let pool = &self.db.pool;
        let key = format!("user:{}", user.username);
        let attempt = uuid::Uuid::new_v4().simple().to_string();
        if let Some(lock) =
            throttle::reserve(pool, &key, self.now(), self.user_throttle(), &attempt)
                .await
                .map_err(internal)?
        {
            if lock.started {
                self.record_lock(
                    "username",
                    &clip(&user.username, TRIED_CHARS),
                    lock.until,
                    peer,
                )
                .await?;
            }
            let left = (lock.until - self.now()).max(0) as u64;
            return Err(AppError::Throttled {
                minutes: left.div_ceil(60_000_000).max(1),
            });
        }
        let hash = users::credentials(pool, &user.username)
            .await
            .map_err(internal)?
            .map(|(_, hash)| hash);
        let ok = match auth::verify_password(current.to_owned(), hash).await {
            Ok(ok) => ok,
            Err(other) => {
                // Not checked, so not a failure.
                throttle::release(pool, &key).await.map_err(internal)?;
                return Err(other);
            }
        };
        if !ok {
            self.record(audit::Entry {
                actor: user.username.clone(),
                action: "user.password_change_failed",
                object_type: "user",
                object_id: user.id.clone(),
                before: None,
                after: Some(json!({
                    "address": peer.addr.to_string(),
                    "agent": clip(&peer.agent, super::AGENT_CHARS),
                })),
            })
            .await?;
            return Err(AppError::Invalid {
                detail: "the current password is wrong".into(),
            });
        }
        throttle::clear(pool, &key).await.map_err(internal)?;
        self.reset_password(&Actor::user(user), &user.id, password)
            .await
    }
}
