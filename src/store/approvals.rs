//! The `approvals` table: one row per (proposal, approver). A proposal
//! (a fix, a day's reopening, a change of the policy or the settings, a
//! role grant, a held action) carries the number of
//! distinct approvers it needs; each approval is recorded here by
//! [`approve`], under the deciding statements' conditions, and the
//! proposal's own deciding statement executes it only once the rows
//! counted here reach its number.

use super::users::{decider_confirmed, independent_of};
use sqlx::{Any, AnyConnection, Executor};

/// What is approved: the table of its proposals and that table's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subject {
    Fix,
    Reopen,
    Policy,
    Settings,
    /// A deciding role an admin gave in the console, confirmed by admins.
    Grant,
    /// An action held until approved.
    Held,
}

impl Subject {
    pub fn name(self) -> &'static str {
        match self {
            Subject::Fix => "fix",
            Subject::Reopen => "reopen",
            Subject::Policy => "policy",
            Subject::Settings => "settings",
            Subject::Grant => "grant",
            Subject::Held => "held",
        }
    }

    fn table(self) -> (&'static str, &'static str) {
        match self {
            Subject::Fix => ("fix_proposals", "proposal_id"),
            Subject::Reopen => ("day_reopens", "reopen_id"),
            Subject::Policy => ("approval_policies", "policy_id"),
            Subject::Settings => ("config_versions", "id"),
            Subject::Grant => ("users", "role_grant_id"),
            Subject::Held => ("held_actions", "action_id"),
        }
    }

    /// The proposer's column, the condition that the row waits for
    /// approvals, the column every approval touches and the count needed.
    fn columns(self) -> (&'static str, &'static str, &'static str, &'static str) {
        match self {
            Subject::Settings => (
                "proposed_by_id",
                "status = 'PENDING'",
                "approval_count",
                "required_approvals",
            ),
            Subject::Grant => (
                "role_granted_by_id",
                "role <> 'operator' AND role_confirmed_at IS NULL",
                "role_confirmations",
                "role_confirmations_required",
            ),
            _ => (
                "proposer_id",
                "status = 'PENDING'",
                "approval_count",
                "required_approvals",
            ),
        }
    }

    /// What the proposal must be, besides pending, for anyone to approve
    /// it: a fix not stale, not expired, its ticket open; a grant never
    /// confirmed by its grantee. (`$1` the approver, `$3` now.)
    fn conditions(self) -> &'static str {
        match self {
            Subject::Fix => {
                "AND stale_reason IS NULL AND expires_at > $3 AND EXISTS (SELECT 1 FROM discrepancies d \
                   WHERE d.discrepancy_id = fix_proposals.discrepancy_id AND d.status <> 'CLOSED')"
            }
            Subject::Grant => "AND users.id <> $1",
            Subject::Reopen | Subject::Policy | Subject::Settings | Subject::Held => "",
        }
    }

    /// The condition on an approver (`who`, an id) beyond a confirmed
    /// deciding role: an admin for the policy, roles, users and tokens.
    fn approver(self, who: &str) -> String {
        let admin =
            format!("EXISTS (SELECT 1 FROM users aa WHERE aa.id = {who} AND aa.role = 'admin')");
        match self {
            Subject::Policy | Subject::Grant => admin,
            Subject::Held => {
                format!("(held_actions.action IN ('SINK_PAUSE', 'BULK_RESEND') OR {admin})")
            }
            Subject::Fix | Subject::Reopen | Subject::Settings => "1 = 1".into(),
        }
    }

    /// Whether an approver must not have vouched for the proposer. A
    /// grant's confirmer is only never its granter nor its grantee.
    fn independent(self, approver: &str) -> String {
        let (table, _) = self.table();
        match self {
            Subject::Grant => "1 = 1".into(),
            _ => independent_of(approver, &format!("{table}.{}", self.columns().0)),
        }
    }
}

/// The approvals of a proposal's row (`table.key`) that still count: each
/// approver still a confirmed decider, still independent of the proposer
/// (and, where only admins approve, still an admin) — one disabled,
/// demoted or who vouched for the proposer since no longer counts.
fn counted(subject: Subject) -> String {
    let (table, key) = subject.table();
    format!(
        "(SELECT COUNT(*) FROM approvals ap WHERE ap.subject = '{}' AND ap.subject_id = {table}.{key} \
           AND {} AND {} AND {})",
        subject.name(),
        decider_confirmed("ap.approver_id"),
        subject.independent("ap.approver_id"),
        subject.approver("ap.approver_id"),
    )
}

/// The condition, for a proposal's deciding statement, that the distinct
/// approvals of its row that still count reached the number it needs.
pub fn enough(subject: Subject) -> String {
    let table = subject.table().0;
    format!("{} >= {table}.{}", counted(subject), subject.columns().3)
}

/// An approver and what they said.
pub struct Approver<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub at: i64,
    pub comment: &'a str,
}

/// Where an approval stands once recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Count {
    pub approvals: i64,
    pub required: i64,
}

impl Count {
    pub fn reached(self) -> bool {
        self.approvals >= self.required
    }
}

/// Records `a`'s approval of proposal `id`, if it may be: the proposal is
/// pending (and meets its subject's conditions), `a` is not its proposer,
/// holds a confirmed deciding role, did not vouch for the proposer and has
/// not approved it already. None when refused. The first statement takes
/// the proposal's row (PostgreSQL locks it until commit), so two approvers
/// at once take turns: the second counts the first's row once it is
/// committed, and finds the proposal decided if the first executed it.
/// The same approver twice at once: the second breaks the unique key.
pub async fn approve(
    conn: &mut AnyConnection,
    subject: Subject,
    id: &str,
    a: &Approver<'_>,
) -> sqlx::Result<Option<Count>> {
    let (table, key) = subject.table();
    let (proposer, pending, counter, required) = subject.columns();
    let took = sqlx::query(&format!(
        "UPDATE {table} SET {counter} = {counter} + 1 \
         WHERE {key} = $2 AND {pending} AND {proposer} <> $1 AND {} AND {} AND {} {} \
           AND NOT EXISTS (SELECT 1 FROM approvals ap WHERE ap.subject = $4 AND ap.subject_id = $2 \
             AND ap.approver_id = $1)",
        decider_confirmed("$1"),
        subject.independent("$1"),
        subject.approver("$1"),
        subject.conditions(),
    ))
    .bind(a.id)
    .bind(id)
    .bind(a.at)
    .bind(subject.name())
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if took == 0 {
        return Ok(None);
    }
    sqlx::query(&format!(
        "INSERT INTO approvals (subject, subject_id, approver_id, approver_name, proposer_id, approved_at, \
           ordinal, comment) SELECT $1, $2, $3, $4, {proposer}, $5, {counter}, $6 FROM {table} WHERE {key} = $2"
    ))
    .bind(subject.name())
    .bind(id)
    .bind(a.id)
    .bind(a.name)
    .bind(a.at)
    .bind(a.comment)
    .execute(&mut *conn)
    .await?;
    let (approvals, required): (i64, i64) = sqlx::query_as(&format!(
        "SELECT {}, {required} FROM {table} WHERE {key} = $1",
        counted(subject)
    ))
    .bind(id)
    .fetch_one(&mut *conn)
    .await?;
    Ok(Some(Count {
        approvals,
        required,
    }))
}

/// Whether `approver` approved proposal `id` already.
pub async fn has_approved<'e>(
    e: impl Executor<'e, Database = Any>,
    subject: Subject,
    id: &str,
    approver: &str,
) -> sqlx::Result<bool> {
    let n: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM approvals WHERE subject = $1 AND subject_id = $2 AND approver_id = $3",
    )
    .bind(subject.name())
    .bind(id)
    .bind(approver)
    .fetch_one(e)
    .await?;
    Ok(n > 0)
}

/// Who approved proposal `id`, in order.
pub async fn names<'e>(
    e: impl Executor<'e, Database = Any>,
    subject: Subject,
    id: &str,
) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(
        "SELECT approver_name FROM approvals WHERE subject = $1 AND subject_id = $2 \
         ORDER BY ordinal",
    )
    .bind(subject.name())
    .bind(id)
    .fetch_all(e)
    .await
}

/// The SQL of a column listing who approved a row of `subject` (`key` the
/// row's id column, qualified), one name a line, for a list's SELECT.
pub fn names_column(subject: Subject, key: &str) -> String {
    format!(
        "(SELECT string_agg(ap.approver_name, '\n' ORDER BY ap.ordinal) \
           FROM approvals ap WHERE ap.subject = '{}' AND ap.subject_id = {key})",
        subject.name()
    )
}
