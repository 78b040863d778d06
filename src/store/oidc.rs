//! The `user_identities` and `oidc_flows` tables: who a provider's
//! (issuer, subject) is here, and the sign-ins sent to the provider.

use sqlx::{Any, Executor};

/// A sign-in sent to the provider, as kept until its callback.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Flow {
    pub state: String,
    pub browser: String,
    pub nonce: String,
    pub verifier: String,
    pub created_at: i64,
}

pub async fn insert_flow<'e>(e: impl Executor<'e, Database = Any>, f: &Flow) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO oidc_flows (state, browser, nonce, verifier, created_at) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(&f.state)
    .bind(&f.browser)
    .bind(&f.nonce)
    .bind(&f.verifier)
    .bind(f.created_at)
    .execute(e)
    .await?;
    Ok(())
}

/// Takes the flow of `state` out: a second callback with it finds nothing.
pub async fn take_flow<'e>(
    e: impl Executor<'e, Database = Any>,
    state: &str,
) -> sqlx::Result<Option<Flow>> {
    sqlx::query_as(
        "DELETE FROM oidc_flows WHERE state = $1 \
         RETURNING state, browser, nonce, verifier, created_at",
    )
    .bind(state)
    .fetch_optional(e)
    .await
}

/// Forgets the flows begun before `before` (never come back).
pub async fn purge_flows<'e>(
    e: impl Executor<'e, Database = Any>,
    before: i64,
) -> sqlx::Result<u64> {
    Ok(sqlx::query("DELETE FROM oidc_flows WHERE created_at < $1")
        .bind(before)
        .execute(e)
        .await?
        .rows_affected())
}

/// The user bound to the provider's (issuer, subject), if any.
pub async fn user_of<'e>(
    e: impl Executor<'e, Database = Any>,
    issuer: &str,
    subject: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT user_id FROM user_identities WHERE issuer = $1 AND subject = $2")
        .bind(issuer)
        .bind(subject)
        .fetch_optional(e)
        .await
}

pub async fn bind<'e>(
    e: impl Executor<'e, Database = Any>,
    issuer: &str,
    subject: &str,
    user_id: &str,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO user_identities (issuer, subject, user_id, created_at) VALUES ($1, $2, $3, $4)",
    )
    .bind(issuer)
    .bind(subject)
    .bind(user_id)
    .bind(now)
    .execute(e)
    .await?;
    Ok(())
}

pub async fn touch<'e>(
    e: impl Executor<'e, Database = Any>,
    issuer: &str,
    subject: &str,
    now: i64,
) -> sqlx::Result<u64> {
    Ok(sqlx::query(
        "UPDATE user_identities SET last_login_at = $3 WHERE issuer = $1 AND subject = $2",
    )
    .bind(issuer)
    .bind(subject)
    .bind(now)
    .execute(e)
    .await?
    .rows_affected())
}
