//! One record in full: a stored callback (masked headers and body, what it
//! moved, its replays and redeliveries) and a payment (its history,
//! callbacks, effects, outbox messages and deliveries, refunds and ledger,
//! provider calls, tickets and amount adjustments), each part a line.

use super::lists::{callback_summary, payment_summary};
use super::{mask, money_text};
use crate::accounts::internal;
use crate::store::{Db, adjustments, audit, callbacks, outbox, payments, refunds, tasks, tickets};
use app::console::{CallbackDetail, CallbackProcessing, CallbackReplay, Line, PaymentView};
use app::error::AppError;

/// `local` writes an instant as the page shows it: in the business zone,
/// the zone named.
pub(super) async fn callback(
    db: &Db,
    id: &str,
    local: &(dyn Fn(i64) -> String + Sync),
) -> Result<CallbackDetail, AppError> {
    let pool = &db.pool;
    let row = callbacks::detail(pool, id)
        .await
        .map_err(internal)?
        .ok_or(AppError::NotFound)?;
    let summary = callback_summary(row.listed);
    let produced: Vec<String> = payments::moves_citing(pool, id)
        .await
        .map_err(internal)?
        .into_iter()
        .map(|(from, to, source, at)| format!("{} {from} → {to} ({source})", local(at)))
        .collect();
    let mut replays: Vec<CallbackReplay> = callbacks::replays(pool, id)
        .await
        .map_err(internal)?
        .into_iter()
        .map(|r| CallbackReplay {
            at: r.at,
            actor: r.actor,
            class: r.class,
            detail: r.detail,
            error: r.error,
            job: r.job,
        })
        .collect();
    if replays.is_empty() {
        // Replays made before each kept its own result: their audit entries.
        replays = audit::replays_of(pool, id)
            .await
            .map_err(internal)?
            .into_iter()
            .map(|(at, actor, after)| {
                let after = after
                    .as_deref()
                    .and_then(|a| serde_json::from_str::<serde_json::Value>(a).ok())
                    .unwrap_or_default();
                let text = |k: &str| after[k].as_str().unwrap_or_default().to_owned();
                CallbackReplay {
                    at,
                    actor,
                    class: text("class"),
                    detail: text("detail"),
                    error: None,
                    job: after["job"].as_str().map(str::to_owned),
                }
            })
            .collect();
    }
    let mut identical_redeliveries = 0;
    let mut redeliveries = Vec::new();
    for r in callbacks::redeliveries(pool, id).await.map_err(internal)? {
        // Its own bytes again: counted, never listed as other bytes.
        if r.payload_hash == row.payload_hash {
            identical_redeliveries += r.deliveries;
            continue;
        }
        let what = if r.same_facts {
            "same facts, new envelope"
        } else {
            "OTHER FACTS: conflict, not applied"
        };
        let times = if r.deliveries > 1 {
            format!(" · ×{}", r.deliveries)
        } else {
            String::new()
        };
        redeliveries.push(format!(
            "{} {what} · sha-256 {}{times}",
            local(r.received_at),
            &r.payload_hash[..r.payload_hash.len().min(16)]
        ));
    }
    let original = match row.original_status {
        Some(status) => CallbackProcessing {
            status,
            outcome: row.original_outcome,
            error: row.original_error,
            at: row.original_processed_at,
        },
        None => CallbackProcessing {
            status: summary.processing_status.clone(),
            outcome: summary.outcome.clone(),
            error: row.error_message.clone(),
            at: row.processed_at,
        },
    };
    Ok(CallbackDetail {
        facts: row.facts,
        original,
        identical_redeliveries,
        redeliveries,
        replayable: summary.verify_result == "VERIFIED",
        summary,
        headers: mask::headers(&row.headers_json),
        payload_bytes: row.payload.len() as i64,
        payload: mask::payload(&row.payload),
        payload_hash: row.payload_hash,
        error_message: row.error_message,
        next_retry_at: row.next_retry_at,
        processed_at: row.processed_at,
        refund_no: row.refund_no,
        produced,
        replays,
    })
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

/// `local` as for [`callback`].
pub(super) async fn payment(
    db: &Db,
    no: &str,
    local: &(dyn Fn(i64) -> String + Sync),
) -> Result<PaymentView, AppError> {
    let pool = &db.pool;
    let p = payments::brief(pool, no)
        .await
        .map_err(internal)?
        .ok_or(AppError::NotFound)?;
    let money =
        |minor: i64, currency: &str| money_text(Some(minor), Some(currency)).unwrap_or_default();
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
        .map(|c| callback_summary(c.listed))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_evidence_links_to_its_callback() {
        assert_eq!(
            evidence_link("01a22b26-dd5c-766d-923f-67f0359d4383").as_deref(),
            Some("/callbacks/01a22b26-dd5c-766d-923f-67f0359d4383")
        );
        assert_eq!(evidence_link("proposal 01a22b26-dd5c"), None);
    }
}
