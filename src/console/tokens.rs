//! The API tokens page: the accounts room's tokens, made and revoked by
//! an admin, each audited with the admin's name.

use super::Desk;
use crate::accounts::{Accounts, Actor, TokenRequest};
use app::error::AppError;
use app::tokens::{CreatedToken, Scope, TokenRow};
use app::types::User;

impl Desk {
    fn accounts(&self) -> Accounts {
        Accounts::new(self.engine.db.clone(), self.engine.metrics.clone())
    }
}

#[async_trait::async_trait]
impl app::ssr::ApiTokens for Desk {
    async fn api_tokens(&self) -> Result<Vec<TokenRow>, AppError> {
        self.accounts().list_tokens().await
    }

    async fn create_api_token(
        &self,
        actor: &User,
        name: &str,
        scopes: &[Scope],
        expires_days: Option<u32>,
    ) -> Result<CreatedToken, AppError> {
        let req = TokenRequest {
            name: name.to_owned(),
            scopes: scopes.to_vec(),
            expires_days,
            owner_id: Some(actor.id.clone()),
        };
        self.accounts()
            .create_token(&Actor::user(actor), &req)
            .await
    }

    async fn revoke_api_token(&self, actor: &User, id: &str) -> Result<(), AppError> {
        self.accounts()
            .revoke_token(&Actor::user(actor), id)
            .await
            .map(|_| ())
    }
}
