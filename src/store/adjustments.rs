//! The `payment_adjustments` table: an accepted provider amount. The
//! original stays on record here; the payment carries the accepted one.

use sqlx::{Any, AnyConnection, Executor};

pub struct NewAdjustment<'a> {
    pub payment_no: &'a str,
    pub proposal_id: &'a str,
    pub before_minor: i64,
    pub after_minor: i64,
    pub currency: &'a str,
    pub at: i64,
}

pub async fn insert(conn: &mut AnyConnection, a: &NewAdjustment<'_>) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO payment_adjustments (adjustment_id, payment_no, proposal_id, before_minor, after_minor, \
           difference_minor, currency, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(uuid::Uuid::now_v7().to_string())
    .bind(a.payment_no)
    .bind(a.proposal_id)
    .bind(a.before_minor)
    .bind(a.after_minor)
    .bind(a.after_minor - a.before_minor)
    .bind(a.currency)
    .bind(a.at)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct AdjustmentRow {
    pub before_minor: i64,
    pub after_minor: i64,
    pub difference_minor: i64,
    pub currency: String,
    pub proposal_id: String,
    pub at: i64,
}

pub async fn of_payment<'e>(
    e: impl Executor<'e, Database = Any>,
    payment_no: &str,
) -> sqlx::Result<Vec<AdjustmentRow>> {
    sqlx::query_as(
        "SELECT before_minor, after_minor, difference_minor, currency, proposal_id, at FROM payment_adjustments \
         WHERE payment_no = $1 ORDER BY at",
    )
    .bind(payment_no)
    .fetch_all(e)
    .await
}
