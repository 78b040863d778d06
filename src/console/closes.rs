//! The dashboard's close section: each configured provider's money of the
//! day (gross, refunds, fees, net, from its latest run's figures) and its
//! close; and the supervisors' actions on it, handed to reconciliation
//! (`recon::close`), which records and audits them.

use super::{Desk, invalid, money_text};
use crate::accounts::{decision_refusal, internal};
use crate::recon::{self, ReconError};
use crate::store::recon_runs;
use app::console::{
    CloseInfo, DayClose, DayDisputes, DayMoney, DaySettlement, ReopenInfo, SettlementLine,
};
use app::error::AppError;
use app::types::User;

fn app_error(e: ReconError) -> AppError {
    match e {
        ReconError::Invalid(detail) => AppError::Invalid { detail },
        ReconError::Busy(detail) | ReconError::Refused(detail) => AppError::Refused { detail },
        ReconError::Store(e) => internal(e),
    }
}

/// The day's balance side, for a provider that has one: its state, and
/// per currency the balance's net, what went to the bank and the
/// difference from the statement's net.
async fn settlement_of(
    engine: &crate::engine::Engine,
    provider: &str,
    day: &str,
) -> Result<Option<DaySettlement>, AppError> {
    if engine
        .providers
        .get(provider)
        .is_none_or(|p| p.balance().is_none())
    {
        return Ok(None);
    }
    let Some(s) = crate::store::settlements::of_day(&engine.db.pool, provider, day)
        .await
        .map_err(internal)?
    else {
        return Ok(Some(DaySettlement {
            state: "WAITING".into(),
            lines: Vec::new(),
            error: None,
        }));
    };
    let figures: serde_json::Value = s
        .figures_json
        .as_deref()
        .and_then(|f| serde_json::from_str(f).ok())
        .unwrap_or_default();
    let lines = figures
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(currency, f)| {
                    let text = |v: &serde_json::Value| {
                        money_text(v.as_i64(), Some(currency)).unwrap_or_default()
                    };
                    SettlementLine {
                        currency: currency.clone(),
                        balance_net: text(&f["balance"]["trade_net"]),
                        withdrawn: text(&f["balance"]["withdrawn"]),
                        difference: text(&f["difference_minor"]),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Some(DaySettlement {
        state: s.state,
        lines,
        error: s.error,
    }))
}

#[async_trait::async_trait]
impl app::ssr::DayCloses for Desk {
    /// Each configured provider's day: money and close.
    async fn day_closes(&self, day: &str) -> Result<Vec<DayClose>, AppError> {
        day.parse::<jiff::civil::Date>()
            .map_err(|_| invalid(format!("{day:?} is not YYYY-MM-DD")))?;
        let runs = recon_runs::completed_between(&self.engine.db.pool, day, day)
            .await
            .map_err(internal)?;
        let mut out = Vec::new();
        for provider in self.providers() {
            // The latest completed run's figures (runs come oldest first).
            let latest = runs.iter().rev().find(|r| r.provider == provider);
            let figures: serde_json::Value = latest
                .and_then(|r| r.figures_json.as_deref())
                .and_then(|f| serde_json::from_str(f).ok())
                .unwrap_or_default();
            let net = &figures["fees_and_net"];
            let money = net["currencies"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(currency, s)| {
                            let text = |k: &str| {
                                money_text(s[k].as_i64(), Some(currency)).unwrap_or_default()
                            };
                            DayMoney {
                                currency: currency.clone(),
                                gross: text("gross_minor"),
                                refunds: text("refunds_minor"),
                                // A statement without a fee column states none.
                                fees: if s["fees_minor"].as_i64() == Some(0)
                                    && s["rows_without_fee"].as_i64().unwrap_or(0) > 0
                                {
                                    "—".to_owned()
                                } else {
                                    text("fees_minor")
                                },
                                net: text("net_minor"),
                            }
                        })
                        .collect()
                })
                .unwrap_or_default();
            let (close, reopen) = recon::day_close(&self.engine, &provider, day)
                .await
                .map_err(internal)?;
            let settlement = settlement_of(&self.engine, &provider, day).await?;
            let disputes = recon::disputes_of_day(&self.engine, &provider, day)
                .await
                .map_err(internal)?
                .into_iter()
                .map(|d| {
                    let text =
                        |minor| money_text(Some(minor), Some(&d.currency)).unwrap_or_default();
                    DayDisputes {
                        withdrawn: text(d.withdrawn_minor),
                        reinstated: text(d.reinstated_minor),
                        fees: text(d.fees_minor),
                        open_count: d.open_count,
                        open_amount: text(d.open_minor),
                        currency: d.currency,
                    }
                })
                .collect();
            out.push(DayClose {
                business_date: day.to_owned(),
                has_run: latest.is_some(),
                money,
                fee_mismatches: net["fee_mismatches"].as_i64().unwrap_or(0),
                state: close
                    .as_ref()
                    .map_or_else(|| "OPEN".to_owned(), |c| c.state.clone()),
                close: close.map(|c| CloseInfo {
                    seq: c.seq,
                    how: c.how,
                    closed_by: c.closed_by,
                    reason: c.reason,
                    closed_at: c.closed_at,
                    hash: c.hash,
                    reopened_by: c.reopened_by,
                    reopened_at: c.reopened_at,
                    config_version: c.config_version,
                }),
                reopen: reopen.map(|r| ReopenInfo {
                    proposer_id: r.proposer_id,
                    proposer: r.proposer_name,
                    reason: r.reason,
                    proposed_at: r.proposed_at,
                    required: r.required_approvals,
                    approved_by: r
                        .approved_by
                        .map(|s| s.lines().map(str::to_owned).collect())
                        .unwrap_or_default(),
                }),
                settlement,
                disputes,
                provider,
            });
        }
        Ok(out)
    }

    /// A supervisor's action on a day's close.
    async fn day_close_action(
        &self,
        actor: &User,
        action: &str,
        provider: &str,
        day: &str,
        reason: &str,
    ) -> Result<(), AppError> {
        let engine = &self.engine;
        if !engine.providers.names().any(|n| n == provider) {
            return Err(invalid(format!("provider {provider} is not configured")));
        }
        day.parse::<jiff::civil::Date>()
            .map_err(|_| invalid(format!("{day:?} is not YYYY-MM-DD")))?;
        let required = |r: &str| {
            if r.trim().is_empty() {
                Err(AppError::Required {
                    field: "reason".into(),
                })
            } else {
                Ok(())
            }
        };
        match action {
            "close" => {
                required(reason)?;
                recon::close_by_supervisor(engine, provider, day, &actor.username, reason)
                    .await
                    .map(drop)
            }
            "propose_reopen" => {
                required(reason)?;
                recon::propose_reopen(engine, provider, day, &actor.id, &actor.username, reason)
                    .await
                    .map(drop)
            }
            "approve_reopen" | "reject_reopen" => {
                let (_, pending) = recon::day_close(engine, provider, day)
                    .await
                    .map_err(internal)?;
                if pending.as_ref().is_some_and(|p| p.proposer_id == actor.id) {
                    return Err(AppError::OwnProposal);
                }
                let approve = action == "approve_reopen";
                let decided = recon::decide_reopen(
                    engine,
                    provider,
                    day,
                    &actor.id,
                    &actor.username,
                    approve,
                )
                .await;
                // The deciding statement refused: say why, if it was who decides.
                if let (Err(ReconError::Busy(_)), Some(p)) = (&decided, &pending)
                    && let Some(why) =
                        decision_refusal(&engine.db.pool, &actor.id, &p.proposer_id).await?
                {
                    return Err(why);
                }
                decided
            }
            other => return Err(invalid(format!("unknown action {other:?}"))),
        }
        .map_err(app_error)
    }
}
