//! The SLA pass: every open ticket past its class's hours raises one
//! `sla_overdue` alert, once. The worker runs it on the statement
//! schedule's beat; tests call it with a moved clock. Closing the ticket
//! resolves its alert (`store::tickets::move_ticket`).

use crate::domain::{AlertKind, AlertSeverity, Severity};
use crate::engine::Engine;
use crate::store;
use crate::store::alerts::{NewAlert, raise_alert};
use crate::store::tickets;
use serde_json::json;

/// Tickets read per query of a pass.
pub const SLA_PER_QUERY: i64 = 200;

/// The dedupe key of a ticket's SLA alert: the ticket closing resolves
/// the alert by it.
pub use crate::store::alerts::sla_key;

/// Raises the alert of every open ticket past its SLA at `now` that has
/// none yet; returns how many were raised. Each ticket is marked and its
/// alert raised in one transaction: the mark (a conditional UPDATE) and
/// the alert's dedupe key each keep a second instance or a second pass
/// from raising it again.
pub async fn raise_overdue(engine: &Engine, now: i64) -> store::Result<usize> {
    let settings = engine.settings();
    let sla = &settings.sla;
    let mut raised = 0;
    loop {
        let due = tickets::sla_due(&engine.db, sla, now, SLA_PER_QUERY).await?;
        for t in &due {
            // A ticket with a due time of its own (a dispute's evidence
            // due date) is overdue past it, whatever its class's hours.
            let (past, detail) = match t.sla_due_at {
                Some(due) => {
                    let when = jiff::Timestamp::from_microsecond(due)
                        .map_or_else(|_| due.to_string(), |t| t.to_string());
                    (
                        format!("its due time {when}"),
                        format!("open past its due time {when}; alert raised"),
                    )
                }
                None => {
                    let hours = sla.hours(&t.class);
                    (
                        format!("its SLA of {hours} h"),
                        format!("open past the {hours} h SLA of {}; alert raised", t.class),
                    )
                }
            };
            let message = format!(
                "{} ticket {} ({}) open past {past}",
                t.class, t.discrepancy_id, t.provider
            );
            let entry = json!({
                "action": "sla overdue",
                "at": now,
                "detail": detail,
            });
            let mut tx = engine.db.begin_write().await?;
            if tickets::mark_sla_alerted(&mut tx, &t.discrepancy_id, &entry, now).await? {
                let key = sla_key(&t.discrepancy_id);
                // A CRITICAL ticket left too long is money at risk now.
                let severity = if t.severity == Severity::Critical.as_str() {
                    AlertSeverity::High
                } else {
                    AlertSeverity::Warning
                };
                raise_alert(
                    &mut *tx,
                    &NewAlert {
                        dedupe_key: &key,
                        kind: AlertKind::SlaOverdue,
                        severity,
                        payment_no: t.payment_no.as_deref(),
                        message: &message,
                        trace_id: None,
                        now,
                    },
                )
                .await?;
                raised += 1;
            }
            tx.commit().await?;
        }
        if (due.len() as i64) < SLA_PER_QUERY {
            return Ok(raised);
        }
    }
}
