//! Payments as the console shows them: the list (newest first, keyset
//! pages) and one payment's record (its history, callbacks, effects,
//! outbox messages and deliveries, refunds and ledger, provider calls,
//! tickets and amount adjustments), each part a line.

use super::{Desk, invalid, money_text, page};
use crate::accounts::internal;
use crate::store::lists::{self as store_lists, After, PaymentQuery};
use crate::store::payments::PaymentBrief;
use crate::store::{adjustments, callbacks, outbox, payments, refunds, tasks, tickets};
use app::console::{Line, PaymentFilter, PaymentPage, PaymentSummary, PaymentView};
use app::error::AppError;
use app::tickets::PAGE_SIZE;

/// A payment's record's summary, from the row the engine reads.
fn payment_summary(p: &PaymentBrief) -> PaymentSummary {
    PaymentSummary {
        payment_no: p.payment_no.clone(),
        order_no: p.order_no.clone(),
        provider: p.provider.clone(),
        provider_txn_id: p.provider_txn_id.clone(),
        amount: money_text(Some(p.amount_minor), Some(&p.currency)).unwrap_or_default(),
        status: p.status.as_str().to_owned(),
        held: p.hold_reason.is_some(),
        created_at: p.created_at,
        paid_at: p.paid_at,
    }
}

#[async_trait::async_trait]
impl app::ssr::Payments for Desk {
    async fn payments(&self, f: &PaymentFilter) -> Result<PaymentPage, AppError> {
        let amount_minor = match &f.amount {
            Some(a) => Some(parse_major(a).ok_or_else(|| invalid("an amount is like 66.60"))?),
            None => None,
        };
        let query = PaymentQuery {
            q: f.q.as_deref(),
            status: f.status.as_deref(),
            provider: f.provider.as_deref(),
            amount_minor,
            created: f.day.as_deref().map(|d| self.range(d)).transpose()?,
            after: After::parse(f.after.as_deref()),
        };
        let rows = store_lists::payments(&self.engine.db, &query, PAGE_SIZE + 1)
            .await
            .map_err(internal)?;
        let items = rows
            .into_iter()
            .map(|p| PaymentSummary {
                amount: money_text(Some(p.amount_minor), Some(&p.currency)).unwrap_or_default(),
                held: p.hold_reason.is_some(),
                ..p.summary
            })
            .collect();
        let (items, next) = page(items, |p: &PaymentSummary| {
            format!("{}.{}", p.created_at, p.payment_no)
        });
        Ok(PaymentPage { items, next })
    }

    async fn payment(&self, no: &str) -> Result<PaymentView, AppError> {
        let db = &self.engine.db;
        let local = |at| self.local_minutes(at);
        let pool = &db.pool;
        let p = payments::brief(pool, no)
            .await
            .map_err(internal)?
            .ok_or(AppError::NotFound)?;
        let money = |minor: i64, currency: &str| {
            money_text(Some(minor), Some(currency)).unwrap_or_default()
        };
        let history = payments::history(pool, no)
            .await
            .map_err(internal)?
            .into_iter()
            .map(|h| {
                line(
                    h.at,
                    format!("{} → {}", h.from_status, h.to_status),
                    format!("{} · {} · trace {}", h.source, h.evidence_ref, h.trace_id),
                    evidence_link(&h.evidence_ref),
                )
            })
            .collect();
        let callbacks = callbacks::of_payment(pool, no)
            .await
            .map_err(internal)?
            .into_iter()
            .map(|c| c.listed)
            .collect();
        let effects = payments::effects(pool, no)
            .await
            .map_err(internal)?
            .into_iter()
            .map(|e| line(e.created_at, e.effect_type, "", None))
            .collect();
        let outbox = outbox::deliveries_of(pool, no)
            .await
            .map_err(internal)?
            .into_iter()
            .map(|m| {
                let detail = match m.sink {
                    Some(sink) => format!(
                        "{sink}: {} after {} attempt(s){}{}",
                        m.status.unwrap_or_default(),
                        m.attempts.unwrap_or(0),
                        m.published_at
                            .map(|p| format!(", delivered {}", local(p)))
                            .unwrap_or_default(),
                        m.last_error
                            .map(|e| format!(", last error: {e}"))
                            .unwrap_or_default()
                    ),
                    None => "no sink configured".into(),
                };
                let link = Some(format!("/outbox/{}", m.message_id));
                line(
                    m.created_at,
                    format!("{} ({})", m.event_type, m.message_id),
                    detail,
                    link,
                )
            })
            .collect();
        let refund_lines = refunds::of_payment(pool, no)
            .await
            .map_err(internal)?
            .into_iter()
            .map(|r| {
                line(
                    r.created_at,
                    format!("{} {}", r.refund_no, r.status),
                    format!(
                        "{}{}{}",
                        money(r.amount_minor, &r.currency),
                        r.provider_refund_id
                            .map(|p| format!(" · provider {p}"))
                            .unwrap_or_default(),
                        r.last_error.map(|e| format!(" · {e}")).unwrap_or_default()
                    ),
                    None,
                )
            })
            .collect();
        let ledger = refunds::ledger_of(pool, no)
            .await
            .map_err(internal)?
            .into_iter()
            .map(|l| {
                line(
                    l.created_at,
                    l.refund_no,
                    format!(
                        "{} · {} · {}",
                        money(l.amount_minor, &l.currency),
                        l.source,
                        l.evidence_ref
                    ),
                    None,
                )
            })
            .collect();
        let queries = tasks::of_payment(pool, no)
            .await
            .map_err(internal)?
            .into_iter()
            .map(|t| {
                line(
                    t.updated_at,
                    format!("{} {}", t.kind, t.status),
                    format!(
                        "{} attempt(s){}",
                        t.attempts,
                        t.last_error
                            .map(|e| format!(", last error: {e}"))
                            .unwrap_or_default()
                    ),
                    None,
                )
            })
            .collect();
        let discrepancies = tickets::of_payment(pool, no)
            .await
            .map_err(internal)?
            .into_iter()
            .map(|t| {
                line(
                    t.found_at,
                    format!("{} ({})", t.class, t.severity),
                    t.status,
                    Some(format!("/tickets/{}", t.discrepancy_id)),
                )
            })
            .collect();
        let adjustments = adjustments::of_payment(pool, no)
            .await
            .map_err(internal)?
            .into_iter()
            .map(|a| {
                line(
                    a.at,
                    format!(
                        "{} → {}",
                        money(a.before_minor, &a.currency),
                        money(a.after_minor, &a.currency)
                    ),
                    format!("proposal {}", a.proposal_id),
                    None,
                )
            })
            .collect();
        Ok(PaymentView {
            summary: payment_summary(&p),
            hold_reason: p.hold_reason.clone(),
            refunded: money(p.refunded_minor, &p.currency),
            version: p.version,
            history,
            callbacks,
            effects,
            outbox,
            refunds: refund_lines,
            ledger,
            queries,
            discrepancies,
            adjustments,
        })
    }
}

fn line(at: i64, what: impl Into<String>, detail: impl Into<String>, link: Option<String>) -> Line {
    Line {
        at,
        what: what.into(),
        detail: detail.into(),
        link,
    }
}

/// A link for a history row's evidence: a stored callback, or a proposal.
fn evidence_link(evidence: &str) -> Option<String> {
    if evidence.len() == 36 && evidence.chars().filter(|c| *c == '-').count() == 4 {
        Some(format!("/callbacks/{evidence}"))
    } else {
        None
    }
}

/// An amount typed in major units (`66.6`, `66.60`, `66`) as minor units
/// of a two-decimal currency.
fn parse_major(text: &str) -> Option<i64> {
    let t = text.trim();
    let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
    if whole.is_empty() || frac.len() > 2 || !whole.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    if !frac.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let frac = format!("{frac:0<2}");
    whole
        .parse::<i64>()
        .ok()?
        .checked_mul(100)?
        .checked_add(frac.parse::<i64>().ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_typed_in_major_units() {
        assert_eq!(parse_major("66.60"), Some(6660));
        assert_eq!(parse_major("66.6"), Some(6660));
        assert_eq!(parse_major("66"), Some(6600));
        assert_eq!(parse_major("0.05"), Some(5));
        assert_eq!(parse_major("6.666"), None);
        assert_eq!(parse_major("-1"), None);
        assert_eq!(parse_major("1e3"), None);
        assert_eq!(parse_major("99999999999999999999"), None);
        assert_eq!(parse_major("92233720368547758.08"), None);
    }

    #[test]
    fn history_evidence_links_to_its_callback() {
        assert_eq!(
            evidence_link("01a22b26-dd5c-766d-923f-67f0359d4383").as_deref(),
            Some("/callbacks/01a22b26-dd5c-766d-923f-67f0359d4383")
        );
        assert_eq!(evidence_link("proposal 01a22b26-dd5c"), None);
    }
}
