//! The `settlements` table: a provider's day's balance bill compared with
//! its trade run (`recon::settlement` is its only writer), one row per
//! provider and day, written again each time the day is settled.

use sqlx::{Any, Executor};

pub const WAITING: &str = "WAITING";
pub const REFUSED: &str = "REFUSED";
pub const AGREED: &str = "AGREED";
pub const DIFFERS: &str = "DIFFERS";

/// A day's settlement as stored.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow, serde::Serialize)]
pub struct SettlementRow {
    pub provider: String,
    pub business_date: String,
    /// WAITING | REFUSED | AGREED | DIFFERS
    pub state: String,
    /// The trade run compared with.
    pub run_id: Option<String>,
    pub bill_type: Option<String>,
    pub bill_sha256: Option<String>,
    pub movements: i64,
    /// Per currency: the trade's and the balance's figures and their
    /// difference.
    pub figures_json: Option<String>,
    pub error: Option<String>,
    pub tries: i64,
    pub next_try_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "provider, business_date, state, run_id, bill_type, bill_sha256, movements, \
     figures_json, error, tries, next_try_at, updated_at";

/// Writes the day's settlement, replacing the one before (its tries
/// counted on).
pub async fn put<'e>(
    e: impl Executor<'e, Database = Any>,
    row: &SettlementRow,
) -> sqlx::Result<()> {
    sqlx::query(&format!(
        "INSERT INTO settlements ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 1, $10, $11) \
         ON CONFLICT (provider, business_date) DO UPDATE SET state = $3, run_id = $4, \
           bill_type = $5, bill_sha256 = $6, movements = $7, figures_json = $8, error = $9, \
           tries = settlements.tries + 1, next_try_at = $10, updated_at = $11"
    ))
    .bind(&row.provider)
    .bind(&row.business_date)
    .bind(&row.state)
    .bind(&row.run_id)
    .bind(&row.bill_type)
    .bind(&row.bill_sha256)
    .bind(row.movements)
    .bind(&row.figures_json)
    .bind(&row.error)
    .bind(row.next_try_at)
    .bind(row.updated_at)
    .execute(e)
    .await?;
    Ok(())
}

/// The day's settlement, if one was tried.
pub async fn of_day<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    date: &str,
) -> sqlx::Result<Option<SettlementRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM settlements WHERE provider = $1 AND business_date = $2"
    ))
    .bind(provider)
    .bind(date)
    .fetch_optional(e)
    .await
}
