//! The answers of `/api/v1`: the public contract, each made from the
//! store's row (or the engine's result) by a `From`, so renaming a column
//! changes no answer. Their schema names are the document's since the
//! first release (`as`), and their doc comments are its descriptions: a
//! type without one has no description there.

use crate::engine;
use crate::store::{alerts, bank, disputes, outbox, payments, recon_runs, refunds, tickets};
use serde::Serialize;
use utoipa::ToSchema;

// A payment, as created, read and closed.
#[derive(Serialize, ToSchema)]
#[schema(as = PaymentRow)]
pub struct Payment {
    pub payment_no: String,
    pub order_no: String,
    pub attempt_no: i64,
    pub provider: String,
    pub provider_txn_id: Option<String>,
    pub amount_minor: i64,
    pub currency: String,
    pub status: String,
    pub version: i64,
    pub description: Option<String>,
    pub created_by: String,
    pub awaiting_recon: i64,
    pub refunded_minor: i64,
    pub reserved_minor: i64,
    pub hold_reason: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl From<payments::PaymentRow> for Payment {
    fn from(p: payments::PaymentRow) -> Payment {
        Payment {
            payment_no: p.payment_no,
            order_no: p.order_no,
            attempt_no: p.attempt_no,
            provider: p.provider,
            provider_txn_id: p.provider_txn_id,
            amount_minor: p.amount_minor,
            currency: p.currency,
            status: p.status.as_str().to_owned(),
            version: p.version,
            description: p.description,
            created_by: p.created_by,
            awaiting_recon: p.awaiting_recon,
            refunded_minor: p.refunded_minor,
            reserved_minor: p.reserved_minor,
            hold_reason: p.hold_reason,
            created_at: p.created_at,
            updated_at: p.updated_at,
        }
    }
}

// A downstream effect a payment had (at most one of each type).
#[derive(Serialize, ToSchema)]
#[schema(as = EffectRow)]
pub struct Effect {
    pub effect_type: String,
    pub created_at: i64,
}

impl From<payments::EffectRow> for Effect {
    fn from(e: payments::EffectRow) -> Effect {
        Effect {
            effect_type: e.effect_type,
            created_at: e.created_at,
        }
    }
}

// One move of a payment's status, with what moved it.
#[derive(Serialize, ToSchema)]
#[schema(as = HistoryRow)]
pub struct StatusChange {
    pub from_status: String,
    pub to_status: String,
    pub source: String,
    pub evidence_ref: String,
    pub trace_id: String,
    pub at: i64,
}

impl From<payments::HistoryRow> for StatusChange {
    fn from(h: payments::HistoryRow) -> StatusChange {
        StatusChange {
            from_status: h.from_status.as_str().to_owned(),
            to_status: h.to_status.as_str().to_owned(),
            source: h.source,
            evidence_ref: h.evidence_ref,
            trace_id: h.trace_id,
            at: h.at,
        }
    }
}

// A message the outbox holds about a payment.
#[derive(Serialize, ToSchema)]
#[schema(as = EventRow)]
pub struct OutboxEvent {
    pub message_id: String,
    pub aggregate_id: String,
    pub event_type: String,
    pub payload: String,
    pub created_at: i64,
}

impl From<outbox::EventRow> for OutboxEvent {
    fn from(e: outbox::EventRow) -> OutboxEvent {
        OutboxEvent {
            message_id: e.message_id,
            aggregate_id: e.aggregate_id,
            event_type: e.event_type,
            payload: e.payload,
            created_at: e.created_at,
        }
    }
}

// An alert raised about a payment.
#[derive(Serialize, ToSchema)]
#[schema(as = AlertRow)]
pub struct Alert {
    pub alert_id: String,
    pub kind: String,
    pub severity: String,
    pub payment_no: Option<String>,
    pub message: String,
    pub created_at: i64,
}

impl From<alerts::AlertRow> for Alert {
    fn from(a: alerts::AlertRow) -> Alert {
        Alert {
            alert_id: a.alert_id,
            kind: a.kind,
            severity: a.severity,
            payment_no: a.payment_no,
            message: a.message,
            created_at: a.created_at,
        }
    }
}

// A discrepancy ticket opened about a payment.
#[derive(Serialize, ToSchema)]
#[schema(as = DiscrepancyRow)]
pub struct Discrepancy {
    pub discrepancy_id: String,
    pub class: String,
    pub severity: String,
    pub status: String,
    pub payment_no: Option<String>,
    pub details: String,
}

impl From<tickets::DiscrepancyRow> for Discrepancy {
    fn from(d: tickets::DiscrepancyRow) -> Discrepancy {
        Discrepancy {
            discrepancy_id: d.discrepancy_id,
            class: d.class,
            severity: d.severity,
            status: d.status,
            payment_no: d.payment_no,
            details: d.details,
        }
    }
}

// A refund, on its own or among its payment's.
#[derive(Serialize, ToSchema)]
#[schema(as = RefundRow)]
pub struct Refund {
    pub refund_no: String,
    pub payment_no: String,
    pub provider: String,
    pub amount_minor: i64,
    pub currency: String,
    pub status: String,
    pub provider_refund_id: Option<String>,
    pub reason: String,
    pub requested_by: String,
    pub version: i64,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub finished_at: Option<i64>,
}

impl From<refunds::RefundRow> for Refund {
    fn from(r: refunds::RefundRow) -> Refund {
        Refund {
            refund_no: r.refund_no,
            payment_no: r.payment_no,
            provider: r.provider,
            amount_minor: r.amount_minor,
            currency: r.currency,
            status: r.status,
            provider_refund_id: r.provider_refund_id,
            reason: r.reason,
            requested_by: r.requested_by,
            version: r.version,
            last_error: r.last_error,
            created_at: r.created_at,
            updated_at: r.updated_at,
            finished_at: r.finished_at,
        }
    }
}

/// A payment as the API returns it. The values are the store's rows as
/// JSON; `value_type` names those rows for the OpenAPI document.
#[derive(Serialize, ToSchema)]
pub struct PaymentDetail {
    // Values, not the types: each part's keys have always come out in
    // name order.
    #[schema(value_type = Payment)]
    pub payment: serde_json::Value,
    #[schema(value_type = Vec<Effect>)]
    pub effects: Vec<serde_json::Value>,
    #[schema(value_type = Vec<StatusChange>)]
    pub history: Vec<serde_json::Value>,
    #[schema(value_type = Vec<OutboxEvent>)]
    pub outbox: Vec<serde_json::Value>,
    #[schema(value_type = Vec<Alert>)]
    pub alerts: Vec<serde_json::Value>,
    #[schema(value_type = Vec<Discrepancy>)]
    pub discrepancies: Vec<serde_json::Value>,
    #[schema(value_type = Vec<Refund>)]
    pub refunds: Vec<serde_json::Value>,
}

impl From<engine::PaymentDetail> for PaymentDetail {
    fn from(d: engine::PaymentDetail) -> PaymentDetail {
        PaymentDetail {
            payment: json_of::<Payment>(d.payment),
            effects: d.effects.into_iter().map(json_of::<Effect>).collect(),
            history: d.history.into_iter().map(json_of::<StatusChange>).collect(),
            outbox: d.outbox.into_iter().map(json_of::<OutboxEvent>).collect(),
            alerts: d.alerts.into_iter().map(json_of::<Alert>).collect(),
            discrepancies: d
                .discrepancies
                .into_iter()
                .map(json_of::<Discrepancy>)
                .collect(),
            refunds: d.refunds.into_iter().map(json_of::<Refund>).collect(),
        }
    }
}

/// `row` as the API type `T` shows it, as a JSON value (keys in name order).
pub fn json_of<T: Serialize>(row: impl Into<T>) -> serde_json::Value {
    serde_json::to_value(row.into()).unwrap_or_default()
}

/// A refund as the API returns it: its row and, beside it, its payment's
/// balance.
#[derive(Serialize, ToSchema)]
pub struct RefundDetail {
    #[serde(flatten)]
    pub refund: Refund,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payment: Option<RefundBalance>,
}

impl From<engine::RefundDetail> for RefundDetail {
    fn from(d: engine::RefundDetail) -> RefundDetail {
        RefundDetail {
            refund: d.refund.into(),
            payment: d.payment.map(Into::into),
        }
    }
}

/// A payment's refund figures, in minor units of its currency.
#[derive(Serialize, ToSchema)]
pub struct RefundBalance {
    pub status: String,
    pub amount_minor: i64,
    pub refunded_minor: i64,
    pub reserved_minor: i64,
    /// `amount_minor - refunded_minor - reserved_minor`.
    pub refundable_minor: i64,
}

impl From<engine::RefundBalance> for RefundBalance {
    fn from(b: engine::RefundBalance) -> RefundBalance {
        RefundBalance {
            status: b.status,
            amount_minor: b.amount_minor,
            refunded_minor: b.refunded_minor,
            reserved_minor: b.reserved_minor,
            refundable_minor: b.refundable_minor,
        }
    }
}

/// A day's settlement: the provider's balance bill against its trade run.
#[derive(Serialize, ToSchema)]
pub struct Settlement {
    pub provider: String,
    pub business_date: String,
    /// WAITING | REFUSED | AGREED | DIFFERS
    pub state: String,
    /// The trade run compared with.
    pub run_id: Option<String>,
    pub bill_type: Option<String>,
    /// The balance bill's SHA-256, hex.
    pub bill_sha256: Option<String>,
    /// Balance movements read.
    pub movements: i64,
    /// Per currency: the trade's and the balance's figures and their
    /// difference.
    #[schema(value_type = Option<Object>)]
    pub figures: Option<serde_json::Value>,
    pub error: Option<String>,
}

impl From<crate::store::settlements::SettlementRow> for Settlement {
    fn from(r: crate::store::settlements::SettlementRow) -> Self {
        Settlement {
            figures: r
                .figures_json
                .as_deref()
                .and_then(|f| serde_json::from_str(f).ok()),
            provider: r.provider,
            business_date: r.business_date,
            state: r.state,
            run_id: r.run_id,
            bill_type: r.bill_type,
            bill_sha256: r.bill_sha256,
            movements: r.movements,
            error: r.error,
        }
    }
}

/// A run, as the API and CLI report it.
#[derive(Serialize, ToSchema)]
#[schema(as = RunRow)]
pub struct Run {
    pub run_id: String,
    pub provider: String,
    pub business_date: String,
    pub source: String,
    pub file_name: Option<String>,
    pub file_hash: Option<String>,
    /// What the run read: the bill format, with the layout the file was
    /// (`wechatpay trade bill (REFUND)`), or the API a pull paged through.
    pub bill_type: Option<String>,
    pub status: String,
    pub rows_read: i64,
    pub summary_json: Option<String>,
    pub figures_json: Option<String>,
    pub error: Option<String>,
    pub started_by: String,
    pub started_at: i64,
    pub finished_at: Option<i64>,
    /// The version of the money-deciding settings the run used (absent
    /// for a run from before versions).
    pub config_version: Option<i64>,
    /// Said of a run answered for a file sent again: the file was already
    /// reconciled for that day by this run, and nothing was read again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl From<recon_runs::RunRow> for Run {
    fn from(r: recon_runs::RunRow) -> Run {
        Run {
            run_id: r.run_id,
            provider: r.provider,
            business_date: r.business_date,
            source: r.source,
            file_name: r.file_name,
            file_hash: r.file_hash,
            bill_type: r.bill_type,
            status: r.status,
            rows_read: r.rows_read,
            summary_json: r.summary_json,
            figures_json: r.figures_json,
            error: r.error,
            started_by: r.started_by,
            started_at: r.started_at,
            finished_at: r.finished_at,
            config_version: r.config_version,
            note: r.note,
        }
    }
}

/// An imported statement as listed.
#[derive(Serialize, ToSchema)]
#[schema(as = StatementRow)]
pub struct BankStatement {
    pub statement_id: String,
    pub sha256: String,
    pub format: String,
    pub file_name: Option<String>,
    pub account: Option<String>,
    pub bank_ref: Option<String>,
    pub entries: i64,
    pub credits: i64,
    pub imported_by: String,
    pub imported_at: i64,
}

impl From<bank::StatementRow> for BankStatement {
    fn from(s: bank::StatementRow) -> BankStatement {
        BankStatement {
            statement_id: s.statement_id,
            sha256: s.sha256,
            format: s.format,
            file_name: s.file_name,
            account: s.account,
            bank_ref: s.bank_ref,
            entries: s.entries,
            credits: s.credits,
            imported_by: s.imported_by,
            imported_at: s.imported_at,
        }
    }
}

/// What an import did.
#[derive(Serialize, ToSchema)]
pub struct Imported {
    pub statement: BankStatement,
    /// `true` when the same file had been imported before: nothing changed.
    pub duplicate: bool,
    /// What the matching pass after it decided.
    pub matching: crate::bank::MatchFigures,
}

impl From<crate::bank::Imported> for Imported {
    fn from(i: crate::bank::Imported) -> Imported {
        Imported {
            statement: i.statement.into(),
            duplicate: i.duplicate,
            matching: i.matching,
        }
    }
}

// A provider's payout and the state matching gave it.
#[derive(Serialize, ToSchema)]
#[schema(as = PayoutRow)]
pub struct Payout {
    pub provider: String,
    pub payout_id: String,
    pub provider_kind: String,
    pub amount_minor: i64,
    pub currency: String,
    pub arrival_on: String,
    pub descriptor: Option<String>,
    pub status: String,
    pub state: String,
    pub entry_id: Option<String>,
    pub decided_at: Option<i64>,
    pub net_state: String,
    pub settled_net_minor: Option<i64>,
}

impl From<bank::PayoutRow> for Payout {
    fn from(p: bank::PayoutRow) -> Payout {
        Payout {
            provider: p.provider,
            payout_id: p.payout_id,
            provider_kind: p.provider_kind,
            amount_minor: p.amount_minor,
            currency: p.currency,
            arrival_on: p.arrival_on,
            descriptor: p.descriptor,
            status: p.status,
            state: p.state,
            entry_id: p.entry_id,
            decided_at: p.decided_at,
            net_state: p.net_state,
            settled_net_minor: p.settled_net_minor,
        }
    }
}

/// A provider's dispute (chargeback, inquiry): where it stands (INQUIRY,
/// OPEN, EVIDENCE_SUBMITTED, WON, LOST, INQUIRY_CLOSED), when the answer
/// is due, and the money it took from and gave back to the provider
/// balance with the provider's dispute fees (net), in minor units. Times
/// are microseconds UTC.
#[derive(Serialize, ToSchema)]
pub struct Dispute {
    pub provider: String,
    pub dispute_id: String,
    pub payment_no: Option<String>,
    pub provider_txn_id: Option<String>,
    pub amount_minor: i64,
    pub currency: String,
    pub reason: Option<String>,
    pub status: String,
    pub provider_status: String,
    pub evidence_due_at: Option<i64>,
    pub withdrawn_minor: i64,
    pub reinstated_minor: i64,
    pub fee_minor: i64,
    pub opened_at: i64,
    pub closed_at: Option<i64>,
    pub last_event_at: i64,
    /// The DISPUTE ticket that follows it.
    pub ticket_id: Option<String>,
}

impl From<disputes::Listed> for Dispute {
    fn from(l: disputes::Listed) -> Dispute {
        let d = l.dispute;
        Dispute {
            provider: d.provider,
            dispute_id: d.dispute_id,
            payment_no: d.payment_no,
            provider_txn_id: d.provider_txn_id,
            amount_minor: d.amount_minor,
            currency: d.currency,
            reason: d.reason,
            status: d.status,
            provider_status: d.provider_status,
            evidence_due_at: d.evidence_due_at,
            withdrawn_minor: l.withdrawn_minor,
            reinstated_minor: l.reinstated_minor,
            fee_minor: l.fee_minor,
            opened_at: d.opened_at,
            closed_at: d.closed_at,
            last_event_at: d.last_event_at,
            ticket_id: d.ticket_id,
        }
    }
}
