//! `match_groups` and `match_group_members`: grouped matches — on the bank
//! side several payouts that together are one credit, one payout paid as
//! several credits; on the payments side several payments that together
//! are one statement row, one payment captured as several rows — as the
//! matching pass or a run found them and people decided them. The only
//! writer of the two.

use sqlx::{Any, AnyConnection, Executor};

/// A group as found.
pub struct NewGroup<'a> {
    pub group_id: &'a str,
    /// N_TO_ONE | ONE_TO_N (bank), PAYMENTS_TO_ROW | ROWS_TO_PAYMENT (a run's)
    pub shape: &'a str,
    pub provider: &'a str,
    pub currency: &'a str,
    pub total_minor: i64,
    pub anchor: &'a str,
    pub members_key: &'a str,
    /// PROPOSED | AMBIGUOUS | TOO_MANY
    pub status: &'a str,
    pub ticket_id: Option<&'a str>,
    pub found_at: i64,
    /// The run's business day (the payments side's groups).
    pub business_date: Option<&'a str>,
}

/// One side of a group: the anchor or a member.
#[derive(Clone, Debug, Default, sqlx::FromRow, serde::Serialize)]
pub struct Member {
    /// ANCHOR | MEMBER
    pub role: String,
    /// PAYOUT | CREDIT | PAYMENT | ROW
    pub side: String,
    pub provider: Option<String>,
    pub payout_id: Option<String>,
    pub entry_id: Option<String>,
    pub amount_minor: i64,
    pub on_date: String,
    pub ticket_key: String,
    /// A PAYMENT side's payment.
    pub payment_no: Option<String>,
    /// A ROW side: the run that read it, its line and transaction.
    pub run_id: Option<String>,
    pub line_no: Option<i64>,
    pub provider_txn_id: Option<String>,
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct GroupRow {
    pub group_id: String,
    pub shape: String,
    pub provider: String,
    pub currency: String,
    pub total_minor: i64,
    pub anchor: String,
    pub status: String,
    pub ticket_id: Option<String>,
    pub proposal_id: Option<String>,
}

const GROUP_COLUMNS: &str =
    "group_id, shape, provider, currency, total_minor, anchor, status, ticket_id, proposal_id";

/// Records a group and its sides; `false` (nothing written) when the same
/// anchor and members were recorded before.
pub async fn insert(
    conn: &mut AnyConnection,
    g: &NewGroup<'_>,
    members: &[Member],
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "INSERT INTO match_groups (group_id, shape, provider, currency, total_minor, anchor, members_key, status, \
           ticket_id, found_at, business_date) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
         ON CONFLICT (anchor, members_key) DO NOTHING",
    )
    .bind(g.group_id)
    .bind(g.shape)
    .bind(g.provider)
    .bind(g.currency)
    .bind(g.total_minor)
    .bind(g.anchor)
    .bind(g.members_key)
    .bind(g.status)
    .bind(g.ticket_id)
    .bind(g.found_at)
    .bind(g.business_date)
    .execute(&mut *conn)
    .await?;
    if done.rows_affected() == 0 {
        return Ok(false);
    }
    for m in members {
        sqlx::query(
            "INSERT INTO match_group_members (group_id, role, side, provider, payout_id, entry_id, amount_minor, \
               on_date, ticket_key, payment_no, run_id, line_no, provider_txn_id) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        )
        .bind(g.group_id)
        .bind(&m.role)
        .bind(&m.side)
        .bind(&m.provider)
        .bind(&m.payout_id)
        .bind(&m.entry_id)
        .bind(m.amount_minor)
        .bind(&m.on_date)
        .bind(&m.ticket_key)
        .bind(&m.payment_no)
        .bind(&m.run_id)
        .bind(m.line_no)
        .bind(&m.provider_txn_id)
        .execute(&mut *conn)
        .await?;
    }
    Ok(true)
}

/// The ticket keys of every side of a group whose proposal waits for its
/// decision: those are not grouped again meanwhile.
pub async fn waiting_keys<'e>(e: impl Executor<'e, Database = Any>) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(
        "SELECT m.ticket_key FROM match_group_members m JOIN match_groups g ON g.group_id = m.group_id \
         JOIN fix_proposals p ON p.proposal_id = g.proposal_id \
         WHERE g.status = 'PROPOSED' AND p.status = 'PENDING'",
    )
    .fetch_all(e)
    .await
}

pub async fn set_proposal<'e>(
    e: impl Executor<'e, Database = Any>,
    group_id: &str,
    proposal_id: &str,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE match_groups SET proposal_id = $2 WHERE group_id = $1")
        .bind(group_id)
        .bind(proposal_id)
        .execute(e)
        .await?;
    Ok(())
}

/// The latest group proposed on ticket `ticket_id` (its anchor's), not
/// matched yet.
pub async fn proposed_on<'e>(
    e: impl Executor<'e, Database = Any>,
    ticket_id: &str,
) -> sqlx::Result<Option<GroupRow>> {
    sqlx::query_as(&format!(
        "SELECT {GROUP_COLUMNS} FROM match_groups WHERE ticket_id = $1 AND status = 'PROPOSED' \
         ORDER BY found_at DESC, group_id DESC LIMIT 1"
    ))
    .bind(ticket_id)
    .fetch_optional(e)
    .await
}

pub async fn get<'e>(
    e: impl Executor<'e, Database = Any>,
    group_id: &str,
) -> sqlx::Result<Option<GroupRow>> {
    sqlx::query_as(&format!(
        "SELECT {GROUP_COLUMNS} FROM match_groups WHERE group_id = $1"
    ))
    .bind(group_id)
    .fetch_optional(e)
    .await
}

/// A group's sides, the anchor first, then the members by day.
pub async fn members<'e>(
    e: impl Executor<'e, Database = Any>,
    group_id: &str,
) -> sqlx::Result<Vec<Member>> {
    sqlx::query_as(
        "SELECT role, side, provider, payout_id, entry_id, amount_minor, on_date, ticket_key, \
           payment_no, run_id, line_no, provider_txn_id FROM match_group_members WHERE group_id = $1 ORDER BY role, on_date, ticket_key",
    )
    .bind(group_id)
    .fetch_all(e)
    .await
}

/// The group approved: `false` when it was not waiting (decided already).
pub async fn set_matched(conn: &mut AnyConnection, group_id: &str, now: i64) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE match_groups SET status = 'MATCHED', decided_at = $2 WHERE group_id = $1 AND status = 'PROPOSED'",
    )
    .bind(group_id)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The proposals of the groups ticket `ticket_id` is a member of (not
/// their anchor: the anchor's ticket lists its proposal itself).
pub async fn proposals_of_member<'e>(
    e: impl Executor<'e, Database = Any>,
    ticket_id: &str,
) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(
        "SELECT g.proposal_id FROM match_groups g JOIN match_group_members m ON m.group_id = g.group_id \
         JOIN discrepancies d ON d.dedupe_key = m.ticket_key \
         WHERE d.discrepancy_id = $1 AND m.role = 'MEMBER' AND g.proposal_id IS NOT NULL \
         ORDER BY g.found_at",
    )
    .bind(ticket_id)
    .fetch_all(e)
    .await
}

/// What the approved groups of `provider`'s day `date` settled: the
/// transaction ids of their statement rows and their payments, which that
/// day's run (again) counts matched.
pub async fn approved_of_day<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    date: &str,
) -> sqlx::Result<(Vec<String>, Vec<String>)> {
    let sides: Vec<(String, Option<String>, Option<String>)> = sqlx::query_as(
        "SELECT m.side, m.payment_no, m.provider_txn_id FROM match_group_members m \
         JOIN match_groups g ON g.group_id = m.group_id \
         WHERE g.provider = $1 AND g.business_date = $2 AND g.status = 'MATCHED'",
    )
    .bind(provider)
    .bind(date)
    .fetch_all(e)
    .await?;
    let (mut txns, mut nos) = (Vec::new(), Vec::new());
    for (side, no, txn) in sides {
        match (side.as_str(), no, txn) {
            ("PAYMENT", Some(no), _) => nos.push(no),
            ("ROW", _, Some(txn)) => txns.push(txn),
            _ => {}
        }
    }
    Ok((txns, nos))
}
