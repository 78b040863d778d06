//! The payment domain's words, parsed once at the boundary: identifiers,
//! money, and the payment state machine. Nothing here touches I/O.

mod ids;
mod money;
mod status;

pub use ids::{CallbackId, IdError, OrderNo, PaymentNo, ProviderName, ProviderTxnId};
pub use money::{Currency, Money, MoneyError};
pub use status::PaymentStatus;
