//! Alerts as the console shows them (newest first, keyset pages, each
//! with links to the pages it is about), and acknowledging them, one or
//! many, each audited.

use super::{Desk, invalid, page};
use crate::accounts::{TxError, internal, retrying};
use crate::domain::AlertKind;
use crate::store::lists::{self as store_lists, After, AlertQuery, AlertState};
use crate::store::{alerts, audit};
use app::console::{Acknowledged, AlertFilter, AlertLink, AlertPage, AlertRow};
use app::error::AppError;
use app::tickets::PAGE_SIZE;
use app::types::User;
use serde_json::json;

/// Most alerts one bulk acknowledgement takes (a page is 50).
pub const ACK_LIMIT: usize = 200;

#[async_trait::async_trait]
impl app::ssr::Alerts for Desk {
    /// Alerts newest first, a page at a time, with the kinds to filter by.
    async fn alerts(&self, f: &AlertFilter) -> Result<AlertPage, AppError> {
        let state = match f.state.as_deref() {
            None => None,
            Some("open") => Some(AlertState::Open),
            Some("acknowledged") => Some(AlertState::Acknowledged),
            Some("resolved") => Some(AlertState::Resolved),
            Some(other) => {
                return Err(invalid(format!(
                    "an alert's state is open, acknowledged or resolved, not {other:?}"
                )));
            }
        };
        let query = AlertQuery {
            kind: f.kind.as_deref(),
            severity: f.severity.as_deref(),
            state,
            after: After::parse(f.after.as_deref()),
        };
        let db = &self.engine.db;
        let rows = store_lists::alerts(db, &query, PAGE_SIZE + 1)
            .await
            .map_err(internal)?;
        let items = rows.into_iter().map(alert_row).collect();
        let (items, next) = page(items, |a: &AlertRow| format!("{}.{}", a.created_at, a.id));
        Ok(AlertPage {
            items,
            next,
            kinds: alerts::kinds(&db.pool).await.map_err(internal)?,
            open: alerts::open_count(&db.pool).await.map_err(internal)?,
        })
    }

    /// Acknowledges an open alert with a comment, audited in the same
    /// transaction.
    async fn acknowledge_alert(
        &self,
        actor: &User,
        id: &str,
        comment: &str,
    ) -> Result<(), AppError> {
        let engine = &self.engine;
        let comment = crate::triage::required(comment, "comment")?;
        retrying(|| async {
            let now = engine.now();
            let mut tx = engine.db.begin_write().await?;
            if !alerts::acknowledge(&mut tx, id, &actor.username, comment, now).await? {
                return Err(TxError::App(AppError::NotFound));
            }
            audit::append(
                &mut tx,
                &engine.db.audit,
                &audit::Entry {
                    actor: actor.username.clone(),
                    action: "alert.acknowledge",
                    object_type: "alert",
                    object_id: id.to_owned(),
                    before: Some(json!({ "acknowledged": false })),
                    after: Some(json!({ "acknowledged": true, "comment": comment })),
                },
                now,
            )
            .await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    /// Acknowledges the alerts `ids` with one comment in one transaction,
    /// each audited as if acknowledged alone; those no longer open are
    /// named and left as they were.
    async fn acknowledge_alerts(
        &self,
        actor: &User,
        ids: &[String],
        comment: &str,
    ) -> Result<Acknowledged, AppError> {
        let engine = &self.engine;
        let comment = crate::triage::required(comment, "comment")?;
        let mut unique: Vec<&str> = Vec::new();
        for id in ids.iter().map(|i| i.trim()).filter(|i| !i.is_empty()) {
            if !unique.contains(&id) {
                unique.push(id);
            }
        }
        if unique.is_empty() {
            return Err(invalid("tick at least one alert to acknowledge"));
        }
        if unique.len() > ACK_LIMIT {
            return Err(invalid(format!(
                "at most {ACK_LIMIT} alerts are acknowledged at once; {} were ticked",
                unique.len()
            )));
        }
        retrying(|| async {
            let now = engine.now();
            let mut tx = engine.db.begin_write().await?;
            let mut done = Acknowledged::default();
            for id in &unique {
                if !alerts::acknowledge(&mut tx, id, &actor.username, comment, now).await? {
                    done.skipped.push((*id).to_owned());
                    continue;
                }
                audit::append(
                    &mut tx,
                    &engine.db.audit,
                    &audit::Entry {
                        actor: actor.username.clone(),
                        action: "alert.acknowledge",
                        object_type: "alert",
                        object_id: (*id).to_owned(),
                        before: Some(json!({ "acknowledged": false })),
                        after: Some(json!({ "acknowledged": true, "comment": comment })),
                    },
                    now,
                )
                .await?;
                done.acknowledged.push((*id).to_owned());
            }
            tx.commit().await?;
            Ok(done)
        })
        .await
    }
}

/// An alert as listed: its state and links read from the row.
fn alert_row(a: alerts::Listed) -> AlertRow {
    let state = if a.row.resolved_at.is_some() {
        "resolved"
    } else if a.row.acknowledged_at.is_some() {
        "acknowledged"
    } else {
        "open"
    };
    AlertRow {
        links: alert_links(&a.row.kind, &a.dedupe_key, a.ticket_id.as_deref()),
        state: state.to_owned(),
        ..a.row
    }
}

/// The pages an alert is about, read from its kind and dedupe key (each
/// kind's key names its subject: `sla:<ticket>`, `sink_failing:<sink>:<since>`,
/// `outbox_dead:<message>:<sink>`, `callback_dead:<callback row>`,
/// `statement_missing:<provider>:<day>`, …) and the ticket raised under the
/// same key.
fn alert_links(kind: &str, key: &str, ticket: Option<&str>) -> Vec<AlertLink> {
    let link = |what: &str, label: &str, href: String| AlertLink {
        what: what.to_owned(),
        label: label.to_owned(),
        href,
    };
    let encoded = app::tickets::encode;
    let mut out = Vec::new();
    let kind = kind.parse::<AlertKind>().ok();
    let ticket = ticket.or_else(|| {
        (kind == Some(AlertKind::SlaOverdue))
            .then(|| key.strip_prefix("sla:"))
            .flatten()
    });
    if let Some(t) = ticket {
        out.push(link("ticket", t, format!("/tickets/{}", encoded(t))));
    }
    let rest = key.split_once(':').map(|(_, rest)| rest);
    match (kind, rest) {
        (Some(AlertKind::SinkFailing), Some(rest)) => {
            let sink = rest.rsplit_once(':').map_or(rest, |(sink, _)| sink);
            out.push(link("sink", sink, "/sinks".to_owned()));
        }
        (Some(AlertKind::OutboxDead), Some(rest)) => {
            let (message, sink) = rest.split_once(':').unwrap_or((rest, ""));
            out.push(link(
                "outbox",
                message,
                format!("/outbox/{}", encoded(message)),
            ));
            if !sink.is_empty() {
                out.push(link("sink", sink, "/sinks".to_owned()));
            }
        }
        (Some(AlertKind::CallbackDead), Some(id)) => {
            out.push(link("callback", id, format!("/callbacks/{}", encoded(id))));
        }
        (Some(AlertKind::StatementMissing | AlertKind::StatementPullFailed), Some(rest)) => {
            let (provider, day) = rest.split_once(':').unwrap_or((rest, ""));
            // The runs page shows each provider's pulls and missing days.
            out.push(link(
                "run",
                &format!("{provider} {day}"),
                "/runs".to_owned(),
            ));
        }
        (Some(AlertKind::WebhooksRefusedSpike), Some(rest)) => {
            let provider = rest.split_once(':').map_or(rest, |(p, _)| p);
            out.push(link(
                "refused",
                provider,
                format!("/refused?provider={}", encoded(provider)),
            ));
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alerts_link_to_what_they_are_about() {
        let hrefs = |kind: &str, key: &str, ticket: Option<&str>| -> Vec<(String, String)> {
            alert_links(kind, key, ticket)
                .into_iter()
                .map(|l| (l.what, l.href))
                .collect()
        };
        let pair = |w: &str, h: &str| (w.to_owned(), h.to_owned());
        assert_eq!(
            hrefs("sla_overdue", "sla:T1", None),
            [pair("ticket", "/tickets/T1")]
        );
        assert_eq!(
            hrefs("local_only", "PAY1", Some("T2")),
            [pair("ticket", "/tickets/T2")]
        );
        assert_eq!(
            hrefs("sink_failing", "sink_failing:erp:a:17", None),
            [pair("sink", "/sinks")]
        );
        assert_eq!(
            hrefs("outbox_dead", "outbox_dead:M1:erp", None),
            [pair("outbox", "/outbox/M1"), pair("sink", "/sinks")]
        );
        assert_eq!(
            hrefs("callback_dead", "callback_dead:C9", None),
            [pair("callback", "/callbacks/C9")]
        );
        assert_eq!(
            hrefs(
                "statement_missing",
                "statement_missing:sandbox:2026-03-01",
                None
            ),
            [pair("run", "/runs")]
        );
        assert!(hrefs("out_of_order", "out_of_order:P:X:Y", None).is_empty());
    }
}
