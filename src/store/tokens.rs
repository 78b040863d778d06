//! The `api_tokens` table: merchant API tokens, stored as SHA-256 only,
//! each with its owner, scopes and expiry.

use app::tokens::{Scope, TokenRow};
use sqlx::{Any, Executor};

pub struct NewToken<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub hash: &'a str,
    pub prefix: &'a str,
    pub created_by: &'a str,
    pub owner_id: Option<&'a str>,
    pub scopes: &'a [Scope],
    pub expires_at: Option<i64>,
    pub now: i64,
}

/// Scopes as the column holds them: names separated by spaces.
fn scopes_text(scopes: &[Scope]) -> String {
    scopes
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The column read back; a name this build does not know grants nothing.
fn scopes_of(text: Option<String>) -> Option<Vec<Scope>> {
    text.map(|t| {
        t.split_whitespace()
            .filter_map(|s| s.parse().ok())
            .collect()
    })
}

pub async fn insert<'e>(
    e: impl Executor<'e, Database = Any>,
    t: &NewToken<'_>,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO api_tokens (id, name, token_hash, token_prefix, created_at, created_by, \
         owner_id, scopes, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(t.id)
    .bind(t.name)
    .bind(t.hash)
    .bind(t.prefix)
    .bind(t.now)
    .bind(t.created_by)
    .bind(t.owner_id)
    .bind(scopes_text(t.scopes))
    .bind(t.expires_at)
    .execute(e)
    .await?;
    Ok(())
}

/// A token found by its hash, with what decides whether it may be used.
#[derive(Debug)]
pub struct Found {
    pub id: String,
    pub name: String,
    pub owner_id: Option<String>,
    /// None: a token from before scopes (every scope).
    pub scopes: Option<Vec<Scope>>,
    pub expires_at: Option<i64>,
    pub revoked_at: Option<i64>,
    pub last_used_at: Option<i64>,
    /// The owner is disabled, or no longer there.
    pub owner_disabled: bool,
}

pub async fn find<'e>(
    e: impl Executor<'e, Database = Any>,
    hash: &str,
) -> sqlx::Result<Option<Found>> {
    #[derive(sqlx::FromRow)]
    struct Row {
        id: String,
        name: String,
        owner_id: Option<String>,
        scopes: Option<String>,
        expires_at: Option<i64>,
        revoked_at: Option<i64>,
        last_used_at: Option<i64>,
        owner_found: Option<String>,
        owner_disabled_at: Option<i64>,
    }
    let row = sqlx::query_as::<_, Row>(
        "SELECT t.id, t.name, t.owner_id, t.scopes, t.expires_at, t.revoked_at, t.last_used_at, \
         u.id AS owner_found, u.disabled_at AS owner_disabled_at \
         FROM api_tokens t LEFT JOIN users u ON u.id = t.owner_id WHERE t.token_hash = $1",
    )
    .bind(hash)
    .fetch_optional(e)
    .await?;
    Ok(row.map(|r| Found {
        owner_disabled: r.owner_id.is_some()
            && (r.owner_found.is_none() || r.owner_disabled_at.is_some()),
        id: r.id,
        name: r.name,
        owner_id: r.owner_id,
        scopes: scopes_of(r.scopes),
        expires_at: r.expires_at,
        revoked_at: r.revoked_at,
        last_used_at: r.last_used_at,
    }))
}

/// Marks the token used at `now` unless it was marked at `since` or
/// later: one write per token per interval, not one per call.
pub async fn touch<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
    now: i64,
    since: i64,
) -> sqlx::Result<u64> {
    Ok(sqlx::query(
        "UPDATE api_tokens SET last_used_at = $1 \
         WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $3)",
    )
    .bind(now)
    .bind(id)
    .bind(since)
    .execute(e)
    .await?
    .rows_affected())
}

const ROW_SELECT: &str = "SELECT t.id, t.name, t.token_prefix, u.username AS owner, t.scopes, \
     t.created_at, t.created_by, t.expires_at, t.last_used_at, t.revoked_at \
     FROM api_tokens t LEFT JOIN users u ON u.id = t.owner_id";

#[derive(sqlx::FromRow)]
struct ListRow {
    id: String,
    name: String,
    token_prefix: String,
    owner: Option<String>,
    scopes: Option<String>,
    created_at: i64,
    created_by: String,
    expires_at: Option<i64>,
    last_used_at: Option<i64>,
    revoked_at: Option<i64>,
}

impl From<ListRow> for TokenRow {
    fn from(r: ListRow) -> TokenRow {
        TokenRow {
            id: r.id,
            name: r.name,
            prefix: r.token_prefix,
            owner: r.owner,
            scopes: scopes_of(r.scopes),
            created_at: r.created_at,
            created_by: r.created_by,
            expires_at: r.expires_at,
            last_used_at: r.last_used_at,
            revoked_at: r.revoked_at,
        }
    }
}

/// Every token, revoked ones too, newest first.
pub async fn list<'e>(e: impl Executor<'e, Database = Any>) -> sqlx::Result<Vec<TokenRow>> {
    Ok(
        sqlx::query_as::<_, ListRow>(&format!("{ROW_SELECT} ORDER BY t.created_at DESC, t.name"))
            .fetch_all(e)
            .await?
            .into_iter()
            .map(TokenRow::from)
            .collect(),
    )
}

pub async fn by_id<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
) -> sqlx::Result<Option<TokenRow>> {
    Ok(
        sqlx::query_as::<_, ListRow>(&format!("{ROW_SELECT} WHERE t.id = $1"))
            .bind(id)
            .fetch_optional(e)
            .await?
            .map(TokenRow::from),
    )
}

pub async fn by_name<'e>(
    e: impl Executor<'e, Database = Any>,
    name: &str,
) -> sqlx::Result<Option<TokenRow>> {
    Ok(
        sqlx::query_as::<_, ListRow>(&format!("{ROW_SELECT} WHERE t.name = $1"))
            .bind(name)
            .fetch_optional(e)
            .await?
            .map(TokenRow::from),
    )
}

/// Revokes the token unless it is already; 1 when this revoked it.
pub async fn revoke<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
    now: i64,
) -> sqlx::Result<u64> {
    Ok(
        sqlx::query("UPDATE api_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
            .bind(now)
            .bind(id)
            .execute(e)
            .await?
            .rows_affected(),
    )
}

/// The names of the unrevoked tokens made before scopes, which may do
/// everything.
pub async fn unscoped<'e>(e: impl Executor<'e, Database = Any>) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(
        "SELECT name FROM api_tokens WHERE scopes IS NULL AND revoked_at IS NULL ORDER BY name",
    )
    .fetch_all(e)
    .await
}
