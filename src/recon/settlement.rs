//! The balance side of a day, for a provider that keeps the merchant's
//! money in an account before the bank (WeChat Pay, Alipay): the day's
//! balance bill fetched after its trade bill is reconciled, and per
//! currency the trade run's gross − fees − refunds compared with what the
//! day's payments, fees and refunds moved the balance by. A difference is
//! a PAYOUT_AMOUNT_MISMATCH ticket on the day (what reaches the bank is not
//! what the trades net); the withdrawals (提现) are payouts seen, which the
//! bank side matches against bank credits as it does Stripe's payouts. So
//! the day's close is three-way: trade bill, balance, bank.

use super::run::ReconError;
use crate::domain::{Class, Currency, Money, Severity};
use crate::engine::Engine;
use crate::providers::balance::{BalanceBill, MovementKind};
use crate::providers::{CallError, PayoutSeen};
use crate::store::recon_runs::{self, RunRow};
use crate::store::settlements::{self, AGREED, DIFFERS, REFUSED, SettlementRow, WAITING};
use crate::store::tickets::{NewDiscrepancy, open_discrepancy, place_on_day};
use serde_json::{Value, json};

/// How long a balance bill not there yet (or refused) waits before the
/// schedule asks again.
const RETRY_US: i64 = 30 * 60 * 1_000_000;

/// Whether `provider` has a balance side Reckon settles.
pub fn has_balance(engine: &Engine, provider: &str) -> bool {
    engine
        .providers
        .get(provider)
        .is_some_and(|p| p.balance().is_some())
}

/// The day's latest completed run of `provider`.
async fn trade_run(
    engine: &Engine,
    provider: &str,
    date: &str,
) -> crate::store::Result<Option<RunRow>> {
    Ok(recon_runs::completed_between(&engine.db.pool, date, date)
        .await?
        .into_iter()
        .rfind(|r| r.provider == provider))
}

/// The trade run's figures per currency: (gross, refunds, fees, net).
fn trade_figures(run: &RunRow) -> Vec<(String, [i64; 4])> {
    let figures: Value = run
        .figures_json
        .as_deref()
        .and_then(|f| serde_json::from_str(f).ok())
        .unwrap_or_default();
    figures["fees_and_net"]["currencies"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(code, s)| {
                    let v = |k: &str| s[k].as_i64().unwrap_or(0);
                    (
                        code.clone(),
                        [
                            v("gross_minor"),
                            v("refunds_minor"),
                            v("fees_minor"),
                            v("net_minor"),
                        ],
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Fetches the day's balance bill and settles the day against its trade
/// run (see the module). A bill not there yet leaves the day WAITING; a
/// bill that does not read, or whose own totals disagree, is refused with
/// the reason and nothing of it kept (no payout, no ticket). Settled again,
/// a day's row is written again; its tickets and payouts are opened and
/// recorded once.
pub async fn settle_day(
    engine: &Engine,
    provider: &str,
    date: &str,
) -> Result<SettlementRow, ReconError> {
    let p = engine
        .providers
        .get(provider)
        .cloned()
        .ok_or_else(|| ReconError::Invalid(format!("provider {provider} is not configured")))?;
    let Some(balance) = p.balance() else {
        return Err(ReconError::Invalid(format!(
            "provider {provider} has no balance bill Reckon fetches"
        )));
    };
    let Some(run) = trade_run(engine, provider, date).await? else {
        return Err(ReconError::Invalid(format!(
            "{provider}'s day {date} has no completed run: reconcile its trade bill first"
        )));
    };
    let now = engine.now();
    let mut row = SettlementRow {
        provider: provider.to_owned(),
        business_date: date.to_owned(),
        state: WAITING.into(),
        run_id: Some(run.run_id.clone()),
        bill_type: None,
        bill_sha256: None,
        movements: 0,
        figures_json: None,
        error: None,
        tries: 0,
        next_try_at: now + RETRY_US,
        updated_at: now,
    };
    let trade = trade_figures(&run);
    let bill = match balance.balance_bill(date).await {
        Ok(bill) => bill,
        // The provider made no balance bill for the day: nothing moved,
        // which agrees with a trade day that moved nothing either.
        Err(CallError::NoStatement(why)) if trade.iter().all(|(_, f)| f == &[0; 4]) => {
            tracing::info!(provider, date, %why, "no balance bill and no trade: settled empty");
            BalanceBill::default()
        }
        Err(e @ CallError::Refused(_)) => {
            row.state = REFUSED.into();
            row.error = Some(e.to_string());
            settlements::put(&engine.db.pool, &row).await?;
            return Err(ReconError::Refused(format!(
                "{provider}'s balance bill for {date}: {e}; nothing of it was kept"
            )));
        }
        Err(e) => {
            row.error = Some(e.to_string());
            settlements::put(&engine.db.pool, &row).await?;
            return Ok(row);
        }
    };
    if let Some(m) = bill.movements.iter().find(|m| m.booked_on != date) {
        let error = format!(
            "{provider}'s balance bill for {date}: line {} is booked on {}: not the day's bill; nothing of it was kept",
            m.line_no, m.booked_on
        );
        row.state = REFUSED.into();
        row.error = Some(error.clone());
        settlements::put(&engine.db.pool, &row).await?;
        return Err(ReconError::Refused(error));
    }
    let balance_sums = bill.sums();
    let mut currencies: Vec<String> = trade.iter().map(|(c, _)| c.clone()).collect();
    currencies.extend(balance_sums.keys().map(|c| (*c).to_owned()));
    currencies.sort();
    currencies.dedup();
    let mut figures = serde_json::Map::new();
    let mut differs = Vec::new();
    for code in &currencies {
        let [gross, refunds, fees, net] = trade
            .iter()
            .find(|(c, _)| c == code)
            .map_or([0; 4], |(_, f)| *f);
        let b = balance_sums.get(code.as_str()).copied().unwrap_or_default();
        let difference = b.trade_net - net;
        figures.insert(
            code.clone(),
            json!({
                "trade": { "gross_minor": gross, "refunds_minor": refunds, "fees_minor": fees, "net_minor": net },
                "balance": b,
                "difference_minor": difference,
            }),
        );
        if difference != 0 {
            differs.push((code.clone(), net, b.trade_net, difference));
        }
    }
    let kind = balance.kind();
    let payouts: Vec<PayoutSeen> = bill
        .movements
        .iter()
        .filter(|m| m.kind == MovementKind::Withdrawal && m.money.minor < 0)
        .map(|m| PayoutSeen {
            kind,
            payout_id: m.flow_id.clone(),
            money: Money::new(-m.money.minor, m.money.currency),
            arrival_on: m.booked_on.clone(),
            descriptor: None,
            status: "paid".into(),
            automatic: false,
        })
        .collect();
    crate::bank::payouts_seen(engine, provider, Some(&run.run_id), &payouts).await?;
    let mut tx = engine.db.begin_write().await?;
    for (code, trade_net, balance_net, difference) in &differs {
        let shown = |minor: i64| {
            Currency::parse(code).map_or_else(
                |_| format!("{minor} {code} (minor units)"),
                |c| Money::new(minor, c).shown(),
            )
        };
        let details = format!(
            "the trade bill of {date} nets {} (gross − fees − refunds), the balance bill's payments, fees and refunds moved the balance by {}: {} {} ({})",
            shown(*trade_net),
            shown(*balance_net),
            shown(difference.abs()),
            if *difference < 0 {
                "short on the balance"
            } else {
                "more on the balance"
            },
            bill.bill_type,
        );
        let key = format!("settlement:{provider}:{date}:{code}");
        open_discrepancy(
            &mut *tx,
            &NewDiscrepancy {
                dedupe_key: &key,
                class: Class::PayoutAmountMismatch,
                severity: Severity::High,
                provider,
                payment_no: None,
                provider_txn_id: None,
                trace_id: None,
                local: Some((*trade_net, code.as_str(), "TRADE_NET")),
                provider_side: Some((*balance_net, code.as_str(), "BALANCE_NET")),
                source: "settlement",
                details: &details,
                now,
            },
        )
        .await?;
        place_on_day(&mut *tx, &key, &run.run_id, date).await?;
    }
    row.state = if differs.is_empty() { AGREED } else { DIFFERS }.into();
    row.bill_type = Some(bill.bill_type.clone()).filter(|t| !t.is_empty());
    row.bill_sha256 = Some(bill.sha256.clone()).filter(|h| !h.is_empty());
    row.movements = bill.movements.len() as i64;
    row.figures_json = Some(Value::Object(figures).to_string());
    row.next_try_at = 0;
    settlements::put(&mut *tx, &row).await?;
    tx.commit().await?;
    tracing::info!(provider, date, state = %row.state, movements = row.movements, "day settled against its balance bill");
    if let Err(e) = super::close::auto_close(engine, provider, date).await {
        tracing::warn!(provider, date, error = %e, "the day could not be closed after its settlement");
    }
    Ok(settlements::of_day(&engine.db.pool, provider, date)
        .await?
        .unwrap_or(row))
}

/// After a trade pull: the balance side too, its failure logged (the
/// schedule asks again), never the trade pull's.
pub(super) async fn after_pull(engine: &Engine, provider: &str, date: &str) {
    if !has_balance(engine, provider) {
        return;
    }
    match settle_day(engine, provider, date).await {
        Ok(row) if row.state == WAITING => {
            tracing::info!(provider, date, error = ?row.error, "balance bill not ready; asked again later");
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(provider, date, error = %e, "the day's balance bill was refused"),
    }
}

/// A day whose trade pull is done and whose balance side is not settled
/// yet (or was refused, or waits) is settled again when its next try is
/// due.
pub(super) async fn settle_if_due(
    engine: &Engine,
    provider: &str,
    date: &str,
    now: i64,
) -> crate::store::Result<()> {
    if !has_balance(engine, provider) {
        return Ok(());
    }
    let due = match settlements::of_day(&engine.db.pool, provider, date).await? {
        None => true,
        Some(s) => matches!(s.state.as_str(), "WAITING" | "REFUSED") && s.next_try_at <= now,
    };
    if due {
        after_pull(engine, provider, date).await;
    }
    Ok(())
}

/// The day's settlement as the close records it, if the provider has a
/// balance side and the day was settled.
pub(super) async fn for_close(
    engine: &Engine,
    provider: &str,
    date: &str,
) -> crate::store::Result<Option<Value>> {
    let Some(s) = settlements::of_day(&engine.db.pool, provider, date).await? else {
        return Ok(None);
    };
    if !matches!(s.state.as_str(), "AGREED" | "DIFFERS") {
        return Ok(None);
    }
    Ok(Some(json!({
        "state": s.state,
        "bill_type": s.bill_type,
        "bill_sha256": s.bill_sha256,
        "movements": s.movements,
        "run_id": s.run_id,
        "currencies": s.figures_json.as_deref().and_then(|f| serde_json::from_str::<Value>(f).ok()),
    })))
}
