//! The `users` table.

use app::types::{Lang, Role, User};
use sqlx::{Any, Executor};

const COLUMNS: &str = "id, username, role, lang, disabled_at, created_at";

#[derive(sqlx::FromRow)]
struct Row {
    id: String,
    username: String,
    role: String,
    lang: Option<String>,
    disabled_at: Option<i64>,
    created_at: i64,
}

impl TryFrom<Row> for User {
    type Error = sqlx::Error;
    fn try_from(r: Row) -> Result<User, sqlx::Error> {
        Ok(User {
            role: r
                .role
                .parse()
                .map_err(|e: String| sqlx::Error::Decode(e.into()))?,
            lang: r.lang.and_then(|l| l.parse::<Lang>().ok()),
            disabled: r.disabled_at.is_some(),
            id: r.id,
            username: r.username,
            created_at: r.created_at,
        })
    }
}

pub async fn count<'e>(e: impl Executor<'e, Database = Any>) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COUNT(*) FROM users")
        .fetch_one(e)
        .await
}

pub async fn by_id<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
) -> sqlx::Result<Option<User>> {
    sqlx::query_as::<_, Row>(&format!("SELECT {COLUMNS} FROM users WHERE id = $1"))
        .bind(id)
        .fetch_optional(e)
        .await?
        .map(User::try_from)
        .transpose()
}

/// The user and their password hash, for signing in.
pub async fn credentials<'e>(
    e: impl Executor<'e, Database = Any>,
    username: &str,
) -> sqlx::Result<Option<(User, String)>> {
    #[derive(sqlx::FromRow)]
    struct WithHash {
        #[sqlx(flatten)]
        row: Row,
        password_hash: String,
    }
    sqlx::query_as::<_, WithHash>(&format!(
        "SELECT {COLUMNS}, password_hash FROM users WHERE username = $1"
    ))
    .bind(username)
    .fetch_optional(e)
    .await?
    .map(|w| Ok((User::try_from(w.row)?, w.password_hash)))
    .transpose()
}

pub async fn list<'e>(e: impl Executor<'e, Database = Any>) -> sqlx::Result<Vec<User>> {
    sqlx::query_as::<_, Row>(&format!("SELECT {COLUMNS} FROM users ORDER BY username"))
        .fetch_all(e)
        .await?
        .into_iter()
        .map(User::try_from)
        .collect()
}

pub struct NewUser<'a> {
    pub id: &'a str,
    pub username: &'a str,
    pub role: Role,
    pub password_hash: &'a str,
    pub now: i64,
}

pub async fn insert<'e>(e: impl Executor<'e, Database = Any>, u: &NewUser<'_>) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO users (id, username, password_hash, role, lang, disabled_at, created_at, updated_at, password_changed_at) \
         VALUES ($1, $2, $3, $4, NULL, NULL, $5, $5, $5)",
    )
    .bind(u.id)
    .bind(u.username)
    .bind(u.password_hash)
    .bind(u.role.as_str())
    .bind(u.now)
    .execute(e)
    .await?;
    Ok(())
}

/// Some other admin stays active: the condition that keeps the console
/// administrable, checked inside the same statement that changes a user.
const ANOTHER_ACTIVE_ADMIN: &str = "(SELECT COUNT(*) FROM users o WHERE o.role = 'admin' \
     AND o.disabled_at IS NULL AND o.id <> users.id) > 0";

/// Changes the role unless that would leave no active admin. Rows changed.
pub async fn update_role<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
    role: Role,
    now: i64,
) -> sqlx::Result<u64> {
    let sql = format!(
        "UPDATE users SET role = $1, updated_at = $2 WHERE id = $3 \
         AND ($1 = 'admin' OR role <> 'admin' OR disabled_at IS NOT NULL OR {ANOTHER_ACTIVE_ADMIN})"
    );
    Ok(sqlx::query(&sql)
        .bind(role.as_str())
        .bind(now)
        .bind(id)
        .execute(e)
        .await?
        .rows_affected())
}

pub async fn update_password<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
    password_hash: &str,
    now: i64,
) -> sqlx::Result<u64> {
    Ok(sqlx::query(
        "UPDATE users SET password_hash = $1, password_changed_at = $2, updated_at = $2 WHERE id = $3",
    )
    .bind(password_hash)
    .bind(now)
    .bind(id)
    .execute(e)
    .await?
    .rows_affected())
}

/// Disables an enabled user unless it is the last active admin. Rows changed.
pub async fn disable<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
    now: i64,
) -> sqlx::Result<u64> {
    let sql = format!(
        "UPDATE users SET disabled_at = $1, updated_at = $1 WHERE id = $2 \
         AND disabled_at IS NULL AND (role <> 'admin' OR {ANOTHER_ACTIVE_ADMIN})"
    );
    Ok(sqlx::query(&sql)
        .bind(now)
        .bind(id)
        .execute(e)
        .await?
        .rows_affected())
}

pub async fn enable<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
    now: i64,
) -> sqlx::Result<u64> {
    Ok(
        sqlx::query("UPDATE users SET disabled_at = NULL, updated_at = $1 WHERE id = $2 AND disabled_at IS NOT NULL")
            .bind(now)
            .bind(id)
            .execute(e)
            .await?
            .rows_affected(),
    )
}

pub async fn update_lang<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
    lang: Lang,
) -> sqlx::Result<u64> {
    Ok(sqlx::query("UPDATE users SET lang = $1 WHERE id = $2")
        .bind(lang.as_str())
        .bind(id)
        .execute(e)
        .await?
        .rows_affected())
}

// ---- Triage ---------------------------------------------------------

/// The user `username` if it is enabled and may own tickets (operator or
/// supervisor).
pub async fn worker<'e>(
    e: impl Executor<'e, Database = Any>,
    username: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(
        "SELECT username FROM users WHERE username = $1 AND disabled_at IS NULL \
           AND role IN ('operator', 'supervisor')",
    )
    .bind(username)
    .fetch_optional(e)
    .await
}

/// Every enabled user who may own tickets, by name.
pub async fn workers<'e>(e: impl Executor<'e, Database = Any>) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(
        "SELECT username FROM users WHERE disabled_at IS NULL AND role IN ('operator', 'supervisor') ORDER BY username",
    )
    .fetch_all(e)
    .await
}
// ---- end of triage --------------------------------------------------
