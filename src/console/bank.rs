//! The bank side as the console shows it: the day's money settled to the
//! bank on the dashboard, and the bank page's statements, payouts and
//! expected cash.

use super::Desk;
use crate::accounts::internal;
use crate::domain::{Currency, Money};
use crate::engine::Engine;
use crate::store::bank as store;
use app::bank::{BankView, CashLine, DelayLine, PayoutLine, SettledRow};
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
        let statements = store::statement_lines(pool, LISTED)
            .await
            .map_err(internal)?;
        let payouts = store::payout_lines(pool, LISTED)
            .await
            .map_err(internal)?
            .into_iter()
            .map(|p| PayoutLine {
                amount: major(p.amount_minor, &p.line.currency),
                ..p.line
            })
            .collect();
        let expected = crate::bank::cash::expected_cash(&self.engine, None, None)
            .await
            .map_err(internal)?;
        let cash = expected
            .days
            .into_iter()
            .map(|d| CashLine {
                ahead: d.day >= expected.today,
                announced: major(d.announced_minor, &d.currency),
                settled: major(d.settled_minor, &d.currency),
                expected: major(d.expected_minor, &d.currency),
                arrived: major(d.arrived_minor, &d.currency),
                day: d.day,
                provider: d.provider,
                payouts: d.payouts,
                settled_days: d.settled_days,
                currency: d.currency,
            })
            .collect();
        let delays = expected
            .delays
            .into_iter()
            .map(|d| DelayLine {
                provider: d.provider,
                currency: d.currency,
                samples: d.samples,
                median_days: d.median_days,
                late_after_days: d.late_after_days,
            })
            .collect();
        Ok(BankView {
            statements,
            payouts,
            cash,
            delays,
        })
    }
}
