//! The payment domain's words, parsed once at the boundary: identifiers,
//! money, and the payment state machine. Nothing here touches I/O.

mod ids;
mod money;
mod refund;
mod status;

pub use ids::{
    CallbackId, IdError, OrderNo, PaymentNo, ProviderName, ProviderRefundId, ProviderTxnId,
    RefundNo,
};
pub use money::{Currency, Money, MoneyError, trimmed};
pub use refund::RefundStatus;
pub use status::PaymentStatus;
