//! The payment domain's words, parsed once at the boundary: identifiers,
//! money, the payment state machine, a discrepancy ticket's class,
//! severity and states, an alert's kind and severity. Nothing here touches
//! I/O.

mod alert;
mod discrepancy;
pub mod grouping;
mod ids;
mod money;
mod quote;
mod refund;
mod sla;
mod status;

pub use alert::{AlertKind, AlertSeverity};
pub use discrepancy::{Class, DisputeStatus, Severity, TicketStatus};
pub use ids::{
    CallbackId, IdError, OrderNo, PaymentNo, ProviderName, ProviderRefundId, ProviderTxnId,
    RefundNo,
};
pub use money::{Currency, Fee, Money, MoneyError, trimmed};
pub use quote::{QUOTED_CHARS, clip, grouped, quote, quote_start};
pub use refund::RefundStatus;
pub use sla::{MAX_SLA_HOURS, Sla};
pub use status::{Mover, PaymentStatus};
