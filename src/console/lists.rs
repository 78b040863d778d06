//! The console's lists beside the ticket queue: callbacks, payments and
//! reconciliation runs (newest first, keyset pages), alerts, and the audit
//! log. A filter's day is a business day in the configured time zone; a
//! cursor that is not one is ignored (the first page again).

use super::{Desk, invalid, money_text, page};
use crate::accounts::internal;
use crate::domain::AlertKind;
use crate::statement::Check;
use crate::store;
use crate::store::alerts;
use crate::store::lists::{
    self as store_lists, After, AlertQuery, AlertState, AuditQuery, CallbackQuery, PaymentQuery,
};
use crate::store::payments::PaymentBrief;
use crate::store::{Db, callbacks};
use app::console::{
    AlertFilter, AlertLink, AlertPage, AlertRow, CallbackFilter, CallbackPage, CallbackSummary,
    PaymentFilter, PaymentPage, PaymentSummary, PullSchedule, RunPage, RunSummary, SummaryCheck,
};
use app::error::AppError;
use app::tickets::{AuditEntry, AuditFilter, AuditPage, PAGE_SIZE};

pub(super) fn callback_summary(c: callbacks::Listed) -> CallbackSummary {
    CallbackSummary {
        id: c.id,
        callback_id: c.callback_id,
        provider: c.provider,
        payment_no: c.payment_no,
        provider_txn_id: c.provider_txn_id,
        callback_status: c.callback_status,
        verify_result: c.verify_result,
        processing_status: c.processing_status,
        outcome: c.outcome,
        retry_count: c.retry_count,
        duplicates: c.duplicates,
        trace_id: c.trace_id,
        received_at: c.received_at,
    }
}

pub(super) fn payment_summary(p: &PaymentBrief) -> PaymentSummary {
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

impl Desk {
    pub async fn callback_page(&self, f: &CallbackFilter) -> Result<CallbackPage, AppError> {
        let query = CallbackQuery {
            q: f.q.as_deref(),
            status: f.status.as_deref(),
            provider: f.provider.as_deref(),
            received: f.day.as_deref().map(|d| self.range(d)).transpose()?,
            after: After::parse(f.after.as_deref()),
        };
        let rows = store_lists::callbacks(&self.engine.db, &query, PAGE_SIZE + 1)
            .await
            .map_err(internal)?;
        let items = rows.into_iter().map(callback_summary).collect();
        let (items, next) = page(items, |c: &CallbackSummary| {
            format!("{}.{}", c.received_at, c.id)
        });
        Ok(CallbackPage { items, next })
    }

    pub async fn payment_page(&self, f: &PaymentFilter) -> Result<PaymentPage, AppError> {
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
        let items = rows.iter().map(payment_summary).collect();
        let (items, next) = page(items, |p: &PaymentSummary| {
            format!("{}.{}", p.created_at, p.payment_no)
        });
        Ok(PaymentPage { items, next })
    }

    pub async fn run_page(&self, after: Option<&str>) -> Result<RunPage, AppError> {
        let rows = store_lists::runs(&self.engine.db, After::parse(after).as_ref(), PAGE_SIZE + 1)
            .await
            .map_err(internal)?;
        let items = rows
            .into_iter()
            .map(|r| {
                let classes: Vec<(String, i64)> = r
                    .figures_json
                    .as_deref()
                    .and_then(|f| serde_json::from_str::<serde_json::Value>(f).ok())
                    .and_then(|v| {
                        v["classes"].as_object().map(|o| {
                            o.iter()
                                .map(|(k, v)| (k.clone(), v.as_i64().unwrap_or(0)))
                                .collect()
                        })
                    })
                    .unwrap_or_default();
                RunSummary {
                    id: r.run_id,
                    provider: r.provider,
                    business_date: r.business_date,
                    source: r.source,
                    file_name: r.file_name,
                    status: r.status,
                    phase: r.phase,
                    cursor: r.cursor,
                    rows_read: r.rows_read,
                    classes,
                    error: r.error,
                    started_by: r.started_by,
                    started_at: r.started_at,
                    finished_at: r.finished_at,
                    checks: summary_checks(r.summary_json.as_deref()),
                    file_hash: r.file_hash,
                    bill_type: r.bill_type,
                    file_kept: r.file_kept == 1,
                }
            })
            .collect();
        let (items, next) = page(items, |r: &RunSummary| format!("{}.{}", r.started_at, r.id));
        let providers = self
            .providers()
            .into_iter()
            .filter(|p| {
                self.engine
                    .providers
                    .get(p)
                    .is_some_and(|p| p.statement_format().is_some())
            })
            .collect();
        let schedules = crate::recon::schedules(&self.engine, self.now())
            .await
            .map_err(internal)?
            .into_iter()
            .map(|s| PullSchedule {
                provider: s.provider,
                zone: s.zone,
                ready_hour: s.ready_hour,
                last_at: s.last_at,
                last_run: s.last_run_id,
                last_error: s.last_error,
                next_at: s.next_at,
                missing: s.missing,
            })
            .collect();
        Ok(RunPage {
            items,
            next,
            providers,
            schedules,
        })
    }
}

/// The statement's own figures of a run's summary, each with whether it
/// holds.
fn summary_checks(summary_json: Option<&str>) -> Vec<SummaryCheck> {
    let summary: serde_json::Value = summary_json
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default();
    summary["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let (stated, read) = (
                c["stated"].as_i64().unwrap_or(0),
                c["read"].as_i64().unwrap_or(0),
            );
            let what = c["what"].as_str().unwrap_or_default();
            let currency = c["currency"].as_str();
            let shown = |figure: i64| match currency {
                Some(code) => app::format::money(figure, code),
                None => figure.to_string(),
            };
            SummaryCheck {
                what: what.to_owned(),
                label: Check::label(what).to_owned(),
                stated,
                read,
                stated_text: shown(stated),
                read_text: shown(read),
                holds: stated == read || !c["waived"].is_null(),
            }
        })
        .collect()
}

impl Desk {
    /// Alerts newest first, a page at a time, with the kinds to filter by.
    pub async fn alert_page(&self, f: &AlertFilter) -> Result<AlertPage, AppError> {
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
}

fn alert_row(a: alerts::Listed) -> AlertRow {
    let state = if a.resolved_at.is_some() {
        "resolved"
    } else if a.acknowledged_at.is_some() {
        "acknowledged"
    } else {
        "open"
    };
    AlertRow {
        links: alert_links(&a.kind, &a.dedupe_key, a.ticket_id.as_deref()),
        id: a.alert_id,
        kind: a.kind,
        severity: a.severity,
        payment_no: a.payment_no,
        message: a.message,
        created_at: a.created_at,
        state: state.to_owned(),
        acknowledged_at: a.acknowledged_at,
        acknowledged_by: a.acknowledged_by,
        ack_comment: a.ack_comment,
        resolved_at: a.resolved_at,
        resolved_reason: a.resolved_reason,
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

/// Midnight UTC of a `YYYY-MM-DD`, in microseconds.
/// The audit log, newest first. `action` without a dot (`fix`) matches
/// its whole family (`fix.*`); `object` is `type` or `type:id`; `days` are
/// the From and To days' bounds in the business zone ([from, to)).
pub(super) async fn audit(
    db: &Db,
    f: &AuditFilter,
    days: (Option<i64>, Option<i64>),
) -> store::Result<AuditPage> {
    let given = |v: &Option<String>| {
        v.as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let (actor, action, object) = (given(&f.actor), given(&f.action), given(&f.object));
    let (object_type, object_id) = match object.as_deref().map(|o| o.split_once(':')) {
        Some(Some((ty, id))) => (Some(ty), Some(id)),
        Some(None) => (object.as_deref(), None),
        None => (None, None),
    };
    let query = AuditQuery {
        actor: actor.as_deref(),
        action: action.as_deref(),
        object_type,
        object_id,
        from: days.0,
        to: days.1,
        before: f.before,
    };
    let rows = store_lists::audit(db, &query, PAGE_SIZE + 1).await?;
    let mut items: Vec<AuditEntry> = Vec::with_capacity(rows.len());
    for e in rows {
        let link = object_link(db, &e.object_type, &e.object_id).await?;
        items.push(AuditEntry {
            seq: e.seq,
            at: e.at,
            actor: e.actor,
            action: e.action,
            object_type: e.object_type,
            object_id: e.object_id,
            before: e.before_json,
            after: e.after_json,
            hash: e.hash,
            link,
        });
    }
    let (items, next) = page(items, |e: &AuditEntry| e.seq);
    Ok(AuditPage { items, next })
}

/// The console page of an audit entry's object, where it has one: a
/// proposal's is its ticket's.
async fn object_link(db: &Db, object_type: &str, id: &str) -> store::Result<Option<String>> {
    let id_part = app::tickets::encode(id);
    Ok(match object_type {
        "ticket" => Some(format!("/tickets/{id_part}")),
        "payment" => Some(format!("/payments/{id_part}")),
        "callback" => Some(format!("/callbacks/{id_part}")),
        "run" => Some(format!("/runs?run={id_part}")),
        "outbox_message" => Some(format!("/outbox/{id_part}")),
        "user" | "api_token" => Some("/users".to_owned()),
        "alert" => Some("/alerts".to_owned()),
        "sink" => Some("/sinks".to_owned()),
        "proposal" => match crate::store::proposals::ticket_of(&db.pool, id).await {
            Ok(ticket) => Some(format!("/tickets/{}", app::tickets::encode(&ticket))),
            Err(e) if store::is_not_found(&e) => None,
            Err(e) => return Err(e),
        },
        _ => None,
    })
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
