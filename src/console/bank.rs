//! The bank side as the console shows it: the day's money settled to the
//! bank on the dashboard, and the bank page's statements and payouts.

use super::Desk;
use crate::accounts::internal;
use crate::domain::{Currency, Money};
use crate::engine::Engine;
use crate::store::bank as store;
use app::bank::{BankStatementLine, BankView, PayoutLine, SettledRow};
use app::error::AppError;

/// How many statements and payouts the bank page lists.
const LISTED: i64 = 200;

/// `9048.00`, or the minor units where the currency is unknown.
fn major(minor: i64, currency: &str) -> String {
    Currency::parse(currency)
        .map(|c| Money::new(minor, c).major_string())
        .unwrap_or_else(|_| minor.to_string())
}

/// Payouts matched to the bank arriving on `day`, per provider and
/// currency (of one provider, when given).
pub(super) async fn settled_on(
    engine: &Engine,
    day: &str,
    provider: Option<&str>,
) -> crate::store::Result<Vec<SettledRow>> {
    let rows = store::settled_by_day(&engine.db.pool, day, day).await?;
    Ok(rows
        .into_iter()
        .filter(|(_, p, ..)| provider.is_none_or(|want| want == p))
        .map(|(_, provider, currency, payouts, total)| SettledRow {
            amount: major(total, &currency),
            provider,
            currency,
            payouts,
        })
        .collect())
}

#[async_trait::async_trait]
impl app::ssr::Bank for Desk {
    async fn bank(&self) -> Result<BankView, AppError> {
        let pool = &self.engine.db.pool;
        let statements = store::statements(pool, LISTED)
            .await
            .map_err(internal)?
            .into_iter()
            .map(|s| BankStatementLine {
                statement_id: s.statement_id,
                imported_at: s.imported_at,
                imported_by: s.imported_by,
                format: s.format,
                file_name: s.file_name,
                account: s.account,
                entries: s.entries,
                credits: s.credits,
            })
            .collect();
        let payouts = store::payouts(pool, LISTED)
            .await
            .map_err(internal)?
            .into_iter()
            .map(|p| PayoutLine {
                amount: major(p.amount_minor, &p.currency),
                provider: p.provider,
                payout_id: p.payout_id,
                currency: p.currency,
                arrival_on: p.arrival_on,
                state: p.state,
                status: p.status,
            })
            .collect();
        Ok(BankView {
            statements,
            payouts,
        })
    }
}
