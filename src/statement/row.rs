//! A statement row in Reckon's words: owned ([`StatementRow`]) or borrowed
//! from where it was read ([`RowRef`]).

use crate::domain::Money;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKind {
    Payment,
    Refund,
}

impl RowKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RowKind::Payment => "payment",
            RowKind::Refund => "refund",
        }
    }
}

/// One line of a statement, in Reckon's words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatementRow {
    pub line_no: i64,
    pub kind: RowKind,
    pub provider_txn_id: Option<String>,
    pub payment_no: Option<String>,
    pub refund_no: Option<String>,
    pub provider_refund_id: Option<String>,
    /// Always positive: a refund row's amount is what was given back.
    pub money: Money,
    /// `SUCCEEDED` for money that moved; otherwise the provider's word.
    pub status: String,
    /// Microseconds UTC, when the statement says.
    pub occurred_at: Option<i64>,
    /// The provider's fee on this row, in the row's currency, when the
    /// statement has a fee column: positive for a fee the merchant paid,
    /// negative for one given back (a refunded payment's fee); exact at the
    /// statement's precision (WeChat Pay's five places).
    pub fee: Option<crate::domain::Fee>,
    /// The merchant's own reference of the payment, when the statement
    /// states one apart from the payment_no (PayPal's Invoice ID): what
    /// the `reference` key finds a payment's order by.
    pub reference: Option<String>,
}

/// A statement row borrowed from where it was read (a [`Chunk`], a line,
/// a [`StatementRow`]): what matching reads, without a string of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowRef<'a> {
    pub line_no: i64,
    pub kind: RowKind,
    pub provider_txn_id: Option<&'a str>,
    pub payment_no: Option<&'a str>,
    pub refund_no: Option<&'a str>,
    pub provider_refund_id: Option<&'a str>,
    pub money: Money,
    pub status: &'a str,
    pub occurred_at: Option<i64>,
    pub fee: Option<crate::domain::Fee>,
    pub reference: Option<&'a str>,
}

impl RowRef<'_> {
    pub fn owned(&self) -> StatementRow {
        let own = |s: Option<&str>| s.map(str::to_owned);
        StatementRow {
            line_no: self.line_no,
            kind: self.kind,
            provider_txn_id: own(self.provider_txn_id),
            payment_no: own(self.payment_no),
            refund_no: own(self.refund_no),
            provider_refund_id: own(self.provider_refund_id),
            money: self.money,
            status: self.status.to_owned(),
            occurred_at: self.occurred_at,
            fee: self.fee,
            reference: own(self.reference),
        }
    }
}

impl StatementRow {
    pub fn borrowed(&self) -> RowRef<'_> {
        RowRef {
            line_no: self.line_no,
            kind: self.kind,
            provider_txn_id: self.provider_txn_id.as_deref(),
            payment_no: self.payment_no.as_deref(),
            refund_no: self.refund_no.as_deref(),
            provider_refund_id: self.provider_refund_id.as_deref(),
            money: self.money,
            status: &self.status,
            occurred_at: self.occurred_at,
            fee: self.fee,
            reference: self.reference.as_deref(),
        }
    }
}
