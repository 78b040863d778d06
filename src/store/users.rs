//! The `users` table.

use app::types::{Grant, Lang, Role, User};
use sqlx::{Any, Executor};

const COLUMNS: &str = "id, username, role, lang, disabled_at, created_at, \
     created_by_id, created_by, role_granted_by_id, role_granted_by, role_granted_at, \
     role_confirmed_by, role_confirmed_at, view_raw_at, role_grant_id, role_confirmations, \
     role_confirmations_required";

#[derive(sqlx::FromRow)]
struct Row {
    id: String,
    username: String,
    role: String,
    lang: Option<String>,
    disabled_at: Option<i64>,
    created_at: i64,
    created_by_id: Option<String>,
    created_by: Option<String>,
    role_granted_by_id: Option<String>,
    role_granted_by: Option<String>,
    role_granted_at: Option<i64>,
    role_confirmed_by: Option<String>,
    role_confirmed_at: Option<i64>,
    view_raw_at: Option<i64>,
    role_grant_id: Option<String>,
    role_confirmations: i64,
    role_confirmations_required: i64,
}

impl TryFrom<Row> for User {
    type Error = sqlx::Error;
    fn try_from(r: Row) -> Result<User, sqlx::Error> {
        let role: Role = r
            .role
            .parse()
            .map_err(|e: String| sqlx::Error::Decode(e.into()))?;
        Ok(User {
            // The same test as `PENDING` below, which the deciding
            // statements use.
            grant: Grant {
                pending: role.decides() && r.role_confirmed_at.is_none(),
                created_by: r.created_by,
                created_by_id: r.created_by_id,
                granted_by: r.role_granted_by,
                granted_by_id: r.role_granted_by_id,
                granted_at: r.role_granted_at,
                confirmed_by: r.role_confirmed_by,
                confirmed_at: r.role_confirmed_at,
                grant_id: r.role_grant_id,
                confirmations: r.role_confirmations,
                confirmations_required: r.role_confirmations_required,
            },
            role,
            lang: r.lang.and_then(|l| l.parse::<Lang>().ok()),
            disabled: r.disabled_at.is_some(),
            view_raw: r.view_raw_at.is_some(),
            id: r.id,
            username: r.username,
            created_at: r.created_at,
            mfa: false,
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

/// Who makes an account or grants a role: a console user (`id`), or the
/// server's host (no `id`: the command line, the demo), whose grant counts
/// as confirmed at once — whoever is at the host holds the database anyway.
#[derive(Clone, Copy, Debug)]
pub struct By<'a> {
    pub id: Option<&'a str>,
    pub name: &'a str,
}

impl By<'_> {
    /// A grant's confirmation as written with it: the host's, or none yet.
    fn confirmation(&self, now: i64) -> (Option<&str>, Option<i64>) {
        match self.id {
            None => (Some(self.name), Some(now)),
            Some(_) => (None, None),
        }
    }
}

pub struct NewUser<'a> {
    pub id: &'a str,
    pub username: &'a str,
    pub role: Role,
    pub password_hash: &'a str,
    pub now: i64,
    /// Who creates it, and so grants its first role.
    pub by: By<'a>,
}

pub async fn insert<'e>(e: impl Executor<'e, Database = Any>, u: &NewUser<'_>) -> sqlx::Result<()> {
    let (confirmed_by, confirmed_at) = u.by.confirmation(u.now);
    sqlx::query(
        "INSERT INTO users (id, username, password_hash, role, lang, disabled_at, created_at, updated_at, password_changed_at, \
           created_by_id, created_by, role_granted_by_id, role_granted_by, role_granted_at, role_confirmed_by, role_confirmed_at) \
         VALUES ($1, $2, $3, $4, NULL, NULL, $5, $5, $5, $6, $7, $6, $7, $5, $8, $9)",
    )
    .bind(u.id)
    .bind(u.username)
    .bind(u.password_hash)
    .bind(u.role.as_str())
    .bind(u.now)
    .bind(u.by.id)
    .bind(u.by.name)
    .bind(confirmed_by)
    .bind(confirmed_at)
    .execute(e)
    .await?;
    Ok(())
}

/// Some other admin stays active: the condition that keeps the console
/// administrable, checked inside the same statement that changes a user.
const ANOTHER_ACTIVE_ADMIN: &str = "(SELECT COUNT(*) FROM users o WHERE o.role = 'admin' \
     AND o.disabled_at IS NULL AND o.id <> users.id) > 0";

/// Changes the role unless that would leave no active admin. Rows changed.
/// `grant`: who grants it (recorded; the host's grant confirmed, a console
/// user's pending); `None` leaves the grant as it is, and changes nothing
/// unless the role already is `role`.
pub async fn update_role<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
    role: Role,
    now: i64,
    grant: Option<By<'_>>,
) -> sqlx::Result<u64> {
    let Some(by) = grant else {
        return Ok(
            sqlx::query("UPDATE users SET updated_at = $1 WHERE id = $2 AND role = $3")
                .bind(now)
                .bind(id)
                .bind(role.as_str())
                .execute(e)
                .await?
                .rows_affected(),
        );
    };
    let (confirmed_by, confirmed_at) = by.confirmation(now);
    let sql = format!(
        "UPDATE users SET role = $1, updated_at = $2, role_granted_by_id = $4, role_granted_by = $5, \
           role_granted_at = $2, role_confirmed_by_id = NULL, role_confirmed_by = $6, role_confirmed_at = $7 \
         WHERE id = $3 \
         AND ($1 = 'admin' OR role <> 'admin' OR disabled_at IS NOT NULL OR {ANOTHER_ACTIVE_ADMIN})"
    );
    Ok(sqlx::query(&sql)
        .bind(role.as_str())
        .bind(now)
        .bind(id)
        .bind(by.id)
        .bind(by.name)
        .bind(confirmed_by)
        .bind(confirmed_at)
        .execute(e)
        .await?
        .rows_affected())
}

/// A role that can decide and that no second admin has confirmed yet (the
/// same test as `Grant::pending`).
const PENDING: &str = "(role <> 'operator' AND role_confirmed_at IS NULL)";

/// Whether user `id`'s role is a pending grant.
pub async fn grant_pending<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
) -> sqlx::Result<bool> {
    let n: i64 = sqlx::query_scalar(&format!(
        "SELECT COUNT(*) FROM users WHERE id = $1 AND {PENDING}"
    ))
    .bind(id)
    .fetch_one(e)
    .await?;
    Ok(n > 0)
}

/// Gives user `id`'s pending console grant (if any) a fresh id and the
/// number of admins' confirmations the approval policy asks now; the
/// confirmations of an earlier grant never count for it. Rows changed.
pub async fn open_grant<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
    required: i64,
) -> sqlx::Result<u64> {
    Ok(sqlx::query(&format!(
        "UPDATE users SET role_grant_id = $1, role_confirmations = 0, role_confirmations_required = $2 \
         WHERE id = $3 AND {PENDING}"
    ))
    .bind(uuid::Uuid::now_v7().to_string())
    .bind(required.max(1))
    .bind(id)
    .execute(e)
    .await?
    .rows_affected())
}

/// Confirms user `id`'s pending grant of `role` by admin `by_id`, once
/// the confirmations that still count (`approvals`, subject grant) reach
/// the number it needs: one conditional statement — never by its grantee
/// nor its granter, only by an enabled admin whose own role is confirmed.
/// Rows changed.
pub async fn confirm_grant<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
    role: Role,
    by_id: &str,
    by_name: &str,
    now: i64,
) -> sqlx::Result<u64> {
    let sql = format!(
        "UPDATE users SET role_confirmed_by_id = $1, role_confirmed_by = $2, role_confirmed_at = $3, updated_at = $3 \
         WHERE id = $4 AND role = $5 AND {PENDING} \
           AND id <> $1 AND role_granted_by_id IS NOT NULL AND role_granted_by_id <> $1 \
           AND EXISTS (SELECT 1 FROM users a WHERE a.id = $1 AND a.role = 'admin' \
             AND a.disabled_at IS NULL AND a.role_confirmed_at IS NOT NULL) \
           AND {}",
        super::approvals::enough(super::approvals::Subject::Grant)
    );
    Ok(sqlx::query(&sql)
        .bind(by_id)
        .bind(by_name)
        .bind(now)
        .bind(id)
        .bind(role.as_str())
        .execute(e)
        .await?
        .rows_affected())
}

/// Withdraws user `id`'s pending grant of `role`, by an admin other than
/// its grantee: the user is an operator again (a role that decides
/// nothing), that role granted by the revoker. Never the last active
/// admin's. Rows changed.
pub async fn revoke_grant<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
    role: Role,
    by_id: &str,
    by_name: &str,
    now: i64,
) -> sqlx::Result<u64> {
    let sql = format!(
        "UPDATE users SET role = 'operator', updated_at = $1, role_granted_by_id = $2, role_granted_by = $3, \
           role_granted_at = $1, role_confirmed_by_id = NULL, role_confirmed_by = NULL, role_confirmed_at = NULL \
         WHERE id = $4 AND role = $5 AND {PENDING} AND id <> $2 \
           AND (role <> 'admin' OR disabled_at IS NOT NULL OR {ANOTHER_ACTIVE_ADMIN})"
    );
    Ok(sqlx::query(&sql)
        .bind(now)
        .bind(by_id)
        .bind(by_name)
        .bind(id)
        .bind(role.as_str())
        .execute(e)
        .await?
        .rows_affected())
}

/// After an admin set user `id`'s password, the admin holds the account:
/// a deciding role becomes a pending grant of theirs again, for a second
/// admin to confirm. Rows changed (0: an operator, nothing to confirm).
pub async fn regrant_after_reset<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
    by_id: &str,
    by_name: &str,
    now: i64,
) -> sqlx::Result<u64> {
    Ok(sqlx::query(
        "UPDATE users SET role_granted_by_id = $1, role_granted_by = $2, role_granted_at = $3, \
           role_confirmed_by_id = NULL, role_confirmed_by = NULL, role_confirmed_at = NULL \
         WHERE id = $4 AND role <> 'operator'",
    )
    .bind(by_id)
    .bind(by_name)
    .bind(now)
    .bind(id)
    .execute(e)
    .await?
    .rows_affected())
}

/// The condition, for a deciding statement, that the user whose id is
/// bound as `decider` may decide at all: enabled, and their role is not a
/// pending grant.
pub fn decider_confirmed(decider: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM users du WHERE du.id = {decider} AND du.disabled_at IS NULL \
           AND du.role <> 'operator' AND du.role_confirmed_at IS NOT NULL)"
    )
}

/// The condition, for a deciding statement, that `decider` (a bound id)
/// did not vouch for the proposer (the column `proposer`): did not create
/// their account, nor grant or confirm their current role. A proposer
/// who is no console user (the command line) matches no row.
pub fn independent_of(decider: &str, proposer: &str) -> String {
    format!(
        "NOT EXISTS (SELECT 1 FROM users pu WHERE pu.id = {proposer} \
           AND ({decider} = pu.created_by_id OR {decider} = pu.role_granted_by_id \
             OR {decider} = pu.role_confirmed_by_id))"
    )
}

/// How `decider` vouched for user `proposer`, if they did — `created`
/// their account, `granted` or `confirmed` their current role —, with the
/// proposer's username.
pub async fn vouched_for<'e>(
    e: impl Executor<'e, Database = Any>,
    decider: &str,
    proposer: &str,
) -> sqlx::Result<Option<(String, String)>> {
    sqlx::query_as(
        "SELECT username, CASE WHEN created_by_id = $1 THEN 'created' \
           WHEN role_granted_by_id = $1 THEN 'granted' ELSE 'confirmed' END \
         FROM users WHERE id = $2 \
           AND ($1 = created_by_id OR $1 = role_granted_by_id OR $1 = role_confirmed_by_id)",
    )
    .bind(decider)
    .bind(proposer)
    .fetch_optional(e)
    .await
}

/// Gives (`by` some admin's name) or takes away (`None`) a user's raw
/// access; 0 when the user does not exist or already is so.
pub async fn set_view_raw<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
    by: Option<&str>,
    now: i64,
) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "UPDATE users SET view_raw_at = CASE WHEN $2 IS NULL THEN NULL ELSE $3 END, \
                view_raw_by = $2, updated_at = $3 \
         WHERE id = $1 AND (view_raw_at IS NULL) = ($2 IS NOT NULL)",
    )
    .bind(id)
    .bind(by)
    .bind(now)
    .execute(e)
    .await?;
    Ok(done.rows_affected())
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
