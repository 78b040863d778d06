//! The policy page: the approval policy in force, the change waiting, and
//! admins' proposals and decisions, handed to `policy::changes`, which
//! records and audits them.

use super::Desk;
use crate::accounts::internal;
use crate::policy::changes;
use app::error::AppError;
use app::policy::{HeldAction, PolicyPage};
use app::types::User;

#[async_trait::async_trait]
impl app::ssr::Policies for Desk {
    async fn policy_page(&self) -> Result<PolicyPage, AppError> {
        changes::page(&self.engine.db).await.map_err(internal)
    }

    async fn propose_policy(
        &self,
        actor: &User,
        text: &str,
        reason: &str,
    ) -> Result<String, AppError> {
        changes::propose(&self.engine.db, actor, text, reason, self.now()).await
    }

    async fn decide_policy(
        &self,
        actor: &User,
        id: &str,
        approve: bool,
        comment: &str,
    ) -> Result<String, AppError> {
        let (db, now) = (&self.engine.db, self.now());
        if approve {
            changes::approve(db, actor, id, comment, now).await
        } else {
            changes::reject(db, actor, id, comment, now)
                .await
                .map(|()| "rejected".to_owned())
        }
    }

    async fn held_actions(&self) -> Result<Vec<HeldAction>, AppError> {
        crate::policy::held::list(&self.engine.db).await
    }

    async fn decide_held(
        &self,
        actor: &User,
        id: &str,
        approve: bool,
        comment: &str,
    ) -> Result<String, AppError> {
        let ctx = self.engine.context();
        if approve {
            crate::policy::held::approve(ctx, actor, id, comment).await
        } else {
            crate::policy::held::reject(ctx, actor, id, comment)
                .await
                .map(|()| "rejected".to_owned())
        }
    }
}
