//! A provider's word about one refund, whichever way it came: the call's
//! answer, a status query or a notification. `refunds::apply_refund_in`
//! moves a refund by it.

use super::Source;
use crate::domain::{
    Money, PaymentNo, ProviderName, ProviderRefundId, ProviderTxnId, RefundNo, RefundStatus,
};
use crate::providers::RefundNotice;

/// A provider's word about one refund, from any source.
#[derive(Clone, Debug)]
pub struct RefundOutcome {
    pub provider: ProviderName,
    pub refund_no: Option<RefundNo>,
    pub provider_refund_id: Option<ProviderRefundId>,
    pub payment_no: Option<PaymentNo>,
    pub payment_txn_id: Option<ProviderTxnId>,
    pub target: RefundStatus,
    pub money: Money,
    /// `money` is the payment's refunded total (Alipay), not this refund's.
    pub cumulative: bool,
    pub source: Source,
    pub evidence: String,
    pub trace_id: String,
    /// Why, for a failure.
    pub error: Option<String>,
}

impl RefundOutcome {
    pub fn of_notice(
        n: &RefundNotice,
        provider: &ProviderName,
        evidence: &str,
        trace_id: &str,
    ) -> Self {
        RefundOutcome {
            provider: provider.clone(),
            refund_no: n.refund_no.clone(),
            provider_refund_id: n.provider_refund_id.clone(),
            payment_no: n.payment_no.clone(),
            payment_txn_id: n.payment_txn_id.clone(),
            target: n.status,
            money: n.money,
            cumulative: n.cumulative,
            source: Source::Callback,
            evidence: evidence.to_owned(),
            trace_id: trace_id.to_owned(),
            error: None,
        }
    }
}
