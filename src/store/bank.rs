//! The bank side's tables: `bank_statements` and their `bank_entries`
//! (written once per file, by the SHA-256 of its bytes), and `payouts` as
//! the providers' statements report them, with the state matching gives
//! each. The only writer of the three.

use super::audit::{self, Entry};
use super::audit_keys::Keys;
use sqlx::{Any, AnyConnection, Executor};

/// An imported statement as listed. Serialized as the CLI prints an
/// import; the API answers with its own type.
#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct StatementRow {
    pub statement_id: String,
    pub sha256: String,
    pub format: String,
    pub file_name: Option<String>,
    pub account: Option<String>,
    pub bank_ref: Option<String>,
    pub entries: i64,
    pub credits: i64,
    pub imported_by: String,
    pub imported_at: i64,
}

/// An entry to write.
pub struct NewEntry<'a> {
    pub line_no: i64,
    pub booked_on: &'a str,
    pub value_on: Option<&'a str>,
    pub amount_minor: i64,
    pub currency: &'a str,
    pub direction: &'a str,
    pub bank_ref: Option<&'a str>,
    pub end_to_end_id: Option<&'a str>,
    pub remittance: Option<&'a str>,
    pub counterparty: Option<&'a str>,
    pub provider_kind: Option<&'a str>,
    pub state: &'a str,
}

const STATEMENT_COLUMNS: &str = "statement_id, sha256, format, file_name, account, bank_ref, entries, credits, imported_by, imported_at";

pub async fn statement_by_hash<'e>(
    e: impl Executor<'e, Database = Any>,
    sha256: &str,
) -> sqlx::Result<Option<StatementRow>> {
    sqlx::query_as(&format!(
        "SELECT {STATEMENT_COLUMNS} FROM bank_statements WHERE sha256 = $1"
    ))
    .bind(sha256)
    .fetch_optional(e)
    .await
}

/// The statement, its entries and its audit entry, inside the caller's
/// write transaction; `false` (nothing written) when a statement with the
/// same hash is already there.
pub async fn insert_statement(
    tx: &mut AnyConnection,
    keys: &Keys,
    s: &StatementRow,
    entries: &[NewEntry<'_>],
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "INSERT INTO bank_statements (statement_id, sha256, format, file_name, account, bank_ref, entries, credits, imported_by, imported_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (sha256) DO NOTHING",
    )
    .bind(&s.statement_id)
    .bind(&s.sha256)
    .bind(&s.format)
    .bind(&s.file_name)
    .bind(&s.account)
    .bind(&s.bank_ref)
    .bind(s.entries)
    .bind(s.credits)
    .bind(&s.imported_by)
    .bind(s.imported_at)
    .execute(&mut *tx)
    .await?;
    if done.rows_affected() == 0 {
        return Ok(false);
    }
    for e in entries {
        sqlx::query(
            "INSERT INTO bank_entries (entry_id, statement_id, line_no, booked_on, value_on, amount_minor, currency, direction, \
               bank_ref, end_to_end_id, remittance, counterparty, provider_kind, state) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
        )
        .bind(format!("{}:{}", s.statement_id, e.line_no))
        .bind(&s.statement_id)
        .bind(e.line_no)
        .bind(e.booked_on)
        .bind(e.value_on)
        .bind(e.amount_minor)
        .bind(e.currency)
        .bind(e.direction)
        .bind(e.bank_ref)
        .bind(e.end_to_end_id)
        .bind(e.remittance)
        .bind(e.counterparty)
        .bind(e.provider_kind)
        .bind(e.state)
        .execute(&mut *tx)
        .await?;
    }
    audit::append(
        tx,
        keys,
        &Entry {
            actor: s.imported_by.clone(),
            action: "bank.statement.import",
            object_type: "bank_statement",
            object_id: s.statement_id.clone(),
            before: None,
            after: Some(serde_json::json!({
                "sha256": s.sha256, "format": s.format, "file_name": s.file_name,
                "account": s.account, "entries": s.entries, "credits": s.credits,
            })),
        },
        s.imported_at,
    )
    .await?;
    Ok(true)
}

pub async fn statements<'e>(
    e: impl Executor<'e, Database = Any>,
    limit: i64,
) -> sqlx::Result<Vec<StatementRow>> {
    sqlx::query_as(&format!(
        "SELECT {STATEMENT_COLUMNS} FROM bank_statements ORDER BY imported_at DESC, statement_id DESC LIMIT $1"
    ))
    .bind(limit)
    .fetch_all(e)
    .await
}

/// A bank entry as matching and the console read it.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct EntryRow {
    pub entry_id: String,
    pub statement_id: String,
    pub line_no: i64,
    pub booked_on: String,
    pub amount_minor: i64,
    pub currency: String,
    pub direction: String,
    pub bank_ref: Option<String>,
    pub end_to_end_id: Option<String>,
    pub remittance: Option<String>,
    pub counterparty: Option<String>,
    pub provider_kind: Option<String>,
    pub state: String,
}

const ENTRY_COLUMNS: &str = "entry_id, statement_id, line_no, booked_on, amount_minor, currency, direction, bank_ref, \
     end_to_end_id, remittance, counterparty, provider_kind, state";

/// The providers' credits not yet matched (BANK_ONLY ones too: a payout
/// seen late may still claim them).
pub async fn open_credits<'e>(e: impl Executor<'e, Database = Any>) -> sqlx::Result<Vec<EntryRow>> {
    sqlx::query_as(&format!(
        "SELECT {ENTRY_COLUMNS} FROM bank_entries WHERE state IN ('UNMATCHED', 'BANK_ONLY') \
         ORDER BY booked_on, entry_id"
    ))
    .fetch_all(e)
    .await
}

pub async fn entries_of<'e>(
    e: impl Executor<'e, Database = Any>,
    statement_id: &str,
) -> sqlx::Result<Vec<EntryRow>> {
    sqlx::query_as(&format!(
        "SELECT {ENTRY_COLUMNS} FROM bank_entries WHERE statement_id = $1 ORDER BY line_no"
    ))
    .bind(statement_id)
    .fetch_all(e)
    .await
}

/// Serializes matching passes on PostgreSQL, for the rest of `conn`'s
/// transaction (SQLite's `BEGIN IMMEDIATE` already does): two instances'
/// passes would otherwise read the same open rows and each settle a payout
/// with the same credit.
pub async fn lock_matching(conn: &mut AnyConnection, kind: super::DbKind) -> sqlx::Result<()> {
    if kind == super::DbKind::Postgres {
        sqlx::query("SELECT pg_advisory_xact_lock(727461)")
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

pub async fn set_entry_state<'e>(
    e: impl Executor<'e, Database = Any>,
    entry_id: &str,
    state: &str,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE bank_entries SET state = $2 WHERE entry_id = $1")
        .bind(entry_id)
        .bind(state)
        .execute(e)
        .await?;
    Ok(())
}

/// A payout as a provider's statement reported it.
pub struct NewPayout<'a> {
    pub provider: &'a str,
    pub payout_id: &'a str,
    pub kind: &'a str,
    pub amount_minor: i64,
    pub currency: &'a str,
    pub arrival_on: &'a str,
    pub descriptor: Option<&'a str>,
    pub status: &'a str,
    pub run_id: Option<&'a str>,
    /// PENDING, or NOT_SENT for a payout the provider failed or cancelled.
    pub state: &'a str,
    /// Whether the provider can list the transactions it settles.
    pub automatic: bool,
    pub now: i64,
}

/// Records a payout, or refreshes what the provider says of one already
/// recorded (a page read twice, a payout failing later); a decided state
/// is kept, but a payout that failed or was cancelled is no longer
/// expected at the bank, even once late (missing is a verdict a person
/// concludes).
pub async fn upsert_payout<'e>(
    e: impl Executor<'e, Database = Any>,
    p: &NewPayout<'_>,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO payouts (provider, payout_id, provider_kind, amount_minor, currency, arrival_on, descriptor, status, \
           run_id, seen_at, state, automatic, net_state) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
         ON CONFLICT (provider, payout_id) DO UPDATE SET status = excluded.status, \
           state = CASE WHEN excluded.state = 'NOT_SENT' AND payouts.state IN ('PENDING', 'PAYOUT_LATE') \
             THEN 'NOT_SENT' ELSE payouts.state END",
    )
    .bind(p.provider)
    .bind(p.payout_id)
    .bind(p.kind)
    .bind(p.amount_minor)
    .bind(p.currency)
    .bind(p.arrival_on)
    .bind(p.descriptor)
    .bind(p.status)
    .bind(p.run_id)
    .bind(p.now)
    .bind(p.state)
    .bind(i32::from(p.automatic))
    .bind(if p.automatic { "UNCHECKED" } else { "NOT_DERIVABLE" })
    .execute(e)
    .await?;
    Ok(())
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct PayoutRow {
    pub provider: String,
    pub payout_id: String,
    pub provider_kind: String,
    pub amount_minor: i64,
    pub currency: String,
    pub arrival_on: String,
    pub descriptor: Option<String>,
    pub status: String,
    pub state: String,
    pub entry_id: Option<String>,
    pub decided_at: Option<i64>,
    pub net_state: String,
    pub settled_net_minor: Option<i64>,
}

const PAYOUT_COLUMNS: &str = "provider, payout_id, provider_kind, amount_minor, currency, arrival_on, descriptor, status, \
     state, entry_id, decided_at, net_state, settled_net_minor";

/// The provider account whose payouts of `kind` were seen last, to name
/// a bank-only credit's ticket by the account the console filters on.
pub async fn account_of_kind<'e>(
    e: impl Executor<'e, Database = Any>,
    kind: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(
        "SELECT provider FROM payouts WHERE provider_kind = $1 ORDER BY seen_at DESC, provider LIMIT 1",
    )
    .bind(kind)
    .fetch_optional(e)
    .await
}

/// Payouts whose settled net is still to be asked for, oldest first.
pub async fn unchecked_payouts<'e>(
    e: impl Executor<'e, Database = Any>,
    limit: i64,
) -> sqlx::Result<Vec<PayoutRow>> {
    sqlx::query_as(&format!(
        "SELECT {PAYOUT_COLUMNS} FROM payouts WHERE net_state = 'UNCHECKED' ORDER BY seen_at, payout_id LIMIT $1"
    ))
    .bind(limit)
    .fetch_all(e)
    .await
}

/// Records what the provider said a payout settles: `true` when this call
/// decided it (a second instance asking at once decides nothing).
pub async fn set_net<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    payout_id: &str,
    net_state: &str,
    net: Option<i64>,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE payouts SET net_state = $3, settled_net_minor = $4 \
         WHERE provider = $1 AND payout_id = $2 AND net_state = 'UNCHECKED'",
    )
    .bind(provider)
    .bind(payout_id)
    .bind(net_state)
    .bind(net)
    .execute(e)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Payouts still waiting for their credit (PAYOUT_LATE and PAYOUT_MISSING
/// ones too: the credit may come late).
pub async fn open_payouts<'e>(
    e: impl Executor<'e, Database = Any>,
) -> sqlx::Result<Vec<PayoutRow>> {
    sqlx::query_as(&format!(
        "SELECT {PAYOUT_COLUMNS} FROM payouts WHERE state IN ('PENDING', 'PAYOUT_LATE', 'PAYOUT_MISSING') \
         ORDER BY arrival_on, provider, payout_id"
    ))
    .fetch_all(e)
    .await
}

pub async fn payouts<'e>(
    e: impl Executor<'e, Database = Any>,
    limit: i64,
) -> sqlx::Result<Vec<PayoutRow>> {
    sqlx::query_as(&format!(
        "SELECT {PAYOUT_COLUMNS} FROM payouts ORDER BY arrival_on DESC, provider, payout_id LIMIT $1"
    ))
    .bind(limit)
    .fetch_all(e)
    .await
}

pub async fn set_payout_state<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    payout_id: &str,
    state: &str,
    entry_id: Option<&str>,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE payouts SET state = $3, entry_id = COALESCE($4, entry_id), decided_at = $5 \
         WHERE provider = $1 AND payout_id = $2",
    )
    .bind(provider)
    .bind(payout_id)
    .bind(state)
    .bind(entry_id)
    .bind(now)
    .execute(e)
    .await?;
    Ok(())
}

/// A payout as expected cash reads it: where it started (the business
/// day of the run whose statement reported it, or when it was first seen)
/// and, once credited, the day the bank booked the credit.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct PayoutCash {
    pub provider: String,
    pub payout_id: String,
    pub amount_minor: i64,
    pub currency: String,
    pub arrival_on: String,
    pub state: String,
    pub seen_at: i64,
    pub run_date: Option<String>,
    pub credited_on: Option<String>,
}

/// The payouts expected cash needs on a day: those arriving or credited
/// on or after `since`, and every one still waiting for its credit
/// (failed and cancelled ones never reach the bank: left out).
pub async fn payouts_for_cash<'e>(
    e: impl Executor<'e, Database = Any>,
    since: &str,
) -> sqlx::Result<Vec<PayoutCash>> {
    sqlx::query_as(
        "SELECT p.provider, p.payout_id, p.amount_minor, p.currency, p.arrival_on, p.state, p.seen_at, \
           r.business_date AS run_date, b.booked_on AS credited_on \
         FROM payouts p LEFT JOIN recon_runs r ON r.run_id = p.run_id \
           LEFT JOIN bank_entries b ON b.entry_id = p.entry_id \
         WHERE p.state <> 'NOT_SENT' AND (p.arrival_on >= $1 OR b.booked_on >= $1 \
           OR p.state IN ('PENDING', 'PAYOUT_LATE', 'PAYOUT_MISSING')) \
         ORDER BY p.arrival_on, p.provider, p.payout_id",
    )
    .bind(since)
    .fetch_all(e)
    .await
}

/// The providers' bank credits booked on each day in [from, to]: (day,
/// the account of the payout each paid or none, the provider kind the
/// credit names, currency, total minor).
pub async fn credits_by_day<'e>(
    e: impl Executor<'e, Database = Any>,
    from: &str,
    to: &str,
) -> sqlx::Result<Vec<(String, Option<String>, String, String, i64)>> {
    sqlx::query_as(
        "SELECT b.booked_on, p.provider, b.provider_kind, b.currency, CAST(SUM(b.amount_minor) AS BIGINT) \
         FROM bank_entries b LEFT JOIN payouts p ON p.entry_id = b.entry_id \
         WHERE b.direction = 'CRDT' AND b.provider_kind IS NOT NULL AND b.state <> 'OUT_OF_SCOPE' \
           AND b.booked_on >= $1 AND b.booked_on <= $2 \
         GROUP BY b.booked_on, p.provider, b.provider_kind, b.currency \
         ORDER BY b.booked_on, b.provider_kind, b.currency",
    )
    .bind(from)
    .bind(to)
    .fetch_all(e)
    .await
}

/// Matched payouts arriving on each day in [from, to], per provider and
/// currency: (day, provider, currency, count, total minor).
pub async fn settled_by_day<'e>(
    e: impl Executor<'e, Database = Any>,
    from: &str,
    to: &str,
) -> sqlx::Result<Vec<(String, String, String, i64, i64)>> {
    sqlx::query_as(
        "SELECT arrival_on, provider, currency, COUNT(*), CAST(SUM(amount_minor) AS BIGINT) FROM payouts \
         WHERE state = 'PAYOUT_MATCHED' AND arrival_on >= $1 AND arrival_on <= $2 \
         GROUP BY arrival_on, provider, currency ORDER BY arrival_on, provider, currency",
    )
    .bind(from)
    .bind(to)
    .fetch_all(e)
    .await
}

// ---- The console's bank page -------------------------------------------

/// The latest imported statements, as the console's bank page lists them.
pub async fn statement_lines<'e>(
    e: impl Executor<'e, Database = Any>,
    limit: i64,
) -> sqlx::Result<Vec<app::bank::BankStatementLine>> {
    sqlx::query_as(&format!(
        "SELECT {STATEMENT_COLUMNS} FROM bank_statements ORDER BY imported_at DESC, statement_id DESC LIMIT $1"
    ))
    .bind(limit)
    .fetch_all(e)
    .await
}

/// A payout as the console's bank page lists it, with the minor units its
/// amount is shown from.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct PayoutListed {
    #[sqlx(flatten)]
    pub line: app::bank::PayoutLine,
    pub amount_minor: i64,
}

/// The latest payouts, as [`payouts`] orders them.
pub async fn payout_lines<'e>(
    e: impl Executor<'e, Database = Any>,
    limit: i64,
) -> sqlx::Result<Vec<PayoutListed>> {
    sqlx::query_as(
        "SELECT provider, payout_id, amount_minor, currency, arrival_on, state, status FROM payouts \
         ORDER BY arrival_on DESC, provider, payout_id LIMIT $1",
    )
    .bind(limit)
    .fetch_all(e)
    .await
}

// ---- Grouped matches -----------------------------------------------------

/// A payout settled as a member of approved group `group_id` (by credit
/// `entry_id` when one credit settles it): `false` when it is no longer
/// waiting for a credit (matched meanwhile), and nothing is written.
pub async fn settle_in_group(
    conn: &mut AnyConnection,
    provider: &str,
    payout_id: &str,
    entry_id: Option<&str>,
    group_id: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE payouts SET state = 'PAYOUT_MATCHED', entry_id = $3, group_id = $4, decided_at = $5 \
         WHERE provider = $1 AND payout_id = $2 AND state IN ('PENDING', 'PAYOUT_MISSING')",
    )
    .bind(provider)
    .bind(payout_id)
    .bind(entry_id)
    .bind(group_id)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A credit matched as a side of approved group `group_id`: `false` when it
/// was matched meanwhile, and nothing is written.
pub async fn match_entry_in_group(
    conn: &mut AnyConnection,
    entry_id: &str,
    group_id: &str,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE bank_entries SET state = 'MATCHED', group_id = $2 \
         WHERE entry_id = $1 AND state IN ('UNMATCHED', 'BANK_ONLY')",
    )
    .bind(entry_id)
    .bind(group_id)
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// One payout, as matching reads it.
pub async fn payout<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    payout_id: &str,
) -> sqlx::Result<Option<PayoutRow>> {
    sqlx::query_as(&format!(
        "SELECT {PAYOUT_COLUMNS} FROM payouts WHERE provider = $1 AND payout_id = $2"
    ))
    .bind(provider)
    .bind(payout_id)
    .fetch_optional(e)
    .await
}

/// One bank entry.
pub async fn entry<'e>(
    e: impl Executor<'e, Database = Any>,
    entry_id: &str,
) -> sqlx::Result<Option<EntryRow>> {
    sqlx::query_as(&format!(
        "SELECT {ENTRY_COLUMNS} FROM bank_entries WHERE entry_id = $1"
    ))
    .bind(entry_id)
    .fetch_optional(e)
    .await
}
