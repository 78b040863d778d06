//! What merchants ask of the engine through the API: create a payment
//! (idempotently), read it, close it; the answers kept under a merchant's
//! idempotency key ([`Refused`] for a refusal), which every repeat gets
//! again. Refunds are asked for in [`super::refund_requests`].

use super::{Applied, Engine, Outcome, Source};
use crate::domain::{
    Currency, Money, OrderNo, PaymentNo, PaymentStatus, ProviderName, ProviderTxnId,
};
use crate::providers::CallError;
use crate::store;
use crate::store::idempotency::{self, Stored};
use crate::store::{alerts, outbox, payments, refunds, tasks, tickets};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The body of `POST /api/v1/payments`.
#[derive(Clone, Debug, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreatePayment {
    /// The merchant's order; one live payment attempt per order.
    #[schema(
        example = "ORD-1",
        min_length = 1,
        max_length = 64,
        pattern = "^[!-~]+$"
    )]
    pub order_no: String,
    /// A configured provider's name (e.g. `alipay`, `wechatpay`, `stripe`).
    #[schema(example = "sandbox", pattern = "^[a-z0-9][a-z0-9-]{0,31}$")]
    pub provider: String,
    /// Minor units (fen, cents): 19900 is 199.00 CNY.
    #[schema(example = 19900, minimum = 1)]
    pub amount_minor: i64,
    /// ISO 4217 code.
    #[schema(example = "CNY", pattern = "^[A-Za-z]{3}$")]
    pub currency: String,
    /// At most 256 characters.
    #[serde(default)]
    #[schema(max_length = 256)]
    pub description: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum MerchantError {
    #[error("{0}")]
    Invalid(String),
    #[error("this Idempotency-Key was used with a different request")]
    KeyReused,
    /// The request was taken and refused; the refusal is its answer.
    #[error("{}", .0.error)]
    Refused(Refused),
    #[error("no payment {0}")]
    NotFound(String),
    #[error("payment {payment_no} is {status} and cannot be closed")]
    NotClosable { payment_no: String, status: String },
    #[error("the provider could not be reached ({0}); the payment is unchanged, try again")]
    ProviderUnknown(String),
    #[error("the provider refused: {0}")]
    ProviderRefused(String),
    #[error("storage error: {0}")]
    Store(#[from] store::Error),
}

/// A merchant's request refused for what it asks, not for how it is
/// written: kept under its idempotency key as its answer (`error` and the
/// figures that explain it), given again to every repeat.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refused {
    #[serde(skip)]
    pub kind: RefusedKind,
    /// Why, for a person to read.
    pub error: String,
    /// The payment's currency, when a refund named another.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    /// Why reconciliation holds the payment, when that refused a refund.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hold_reason: Option<String>,
    /// The payment's status, when it refused a refund.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payment_status: Option<String>,
    /// What is left to refund (minor units), when a refund asked for more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refundable_minor: Option<i64>,
}

impl Refused {
    pub fn new(kind: RefusedKind, error: impl Into<String>) -> Refused {
        Refused {
            kind,
            error: error.into(),
            ..Refused::default()
        }
    }
}

/// What kind of refusal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RefusedKind {
    /// The payment named does not exist.
    NoSuchPayment,
    /// The order's or the payment's state does not allow it now (a live
    /// attempt, a hold, nothing left to refund).
    #[default]
    StateForbids,
    /// It cannot be taken as asked (another currency, a provider that is
    /// not configured).
    Unacceptable,
}

/// `idempotency_keys` keeps each answer as the HTTP status the API gave
/// it and its body (its schema since the first release): these are the
/// statuses of what was made and of each kind of refusal.
const KEPT_MADE: i64 = 201;

impl RefusedKind {
    pub const ALL: [RefusedKind; 3] = [
        RefusedKind::NoSuchPayment,
        RefusedKind::StateForbids,
        RefusedKind::Unacceptable,
    ];

    /// The status an answer of this kind is kept with.
    pub const fn kept_status(self) -> i64 {
        match self {
            RefusedKind::NoSuchPayment => 404,
            RefusedKind::StateForbids => 409,
            RefusedKind::Unacceptable => 422,
        }
    }

    fn of_kept(status: i64) -> Option<RefusedKind> {
        Self::ALL.into_iter().find(|k| k.kept_status() == status)
    }
}

/// Takes the merchant's key for a request hashing to `request_hash`, inside
/// the caller's transaction. `Some` when the key was taken before: its
/// answer (the caller commits, then serves it with [`again`]).
pub(super) async fn take_key(
    conn: &mut store::Conn,
    scope: &str,
    key: &str,
    request_hash: &str,
    now: i64,
) -> Result<Option<Stored>, MerchantError> {
    if idempotency::take(&mut *conn, scope, key, request_hash, now).await? {
        return Ok(None);
    }
    let stored = idempotency::stored(&mut *conn, scope, key)
        .await?
        .ok_or_else(|| MerchantError::Invalid("idempotency key vanished".into()))?;
    Ok(Some(stored))
}

/// The answer a key got, for a repeat of the request: what was made, or
/// the refusal. A key used with another request is refused.
pub(super) fn again<T: DeserializeOwned>(
    stored: &Stored,
    request_hash: &str,
) -> Result<T, MerchantError> {
    if stored.request_hash != request_hash {
        return Err(MerchantError::KeyReused);
    }
    let unreadable = |e: serde_json::Error| MerchantError::Store(store::undecodable(e));
    match RefusedKind::of_kept(stored.response_status) {
        Some(kind) => {
            let refused: Refused =
                serde_json::from_str(&stored.response_body).map_err(unreadable)?;
            Err(MerchantError::Refused(Refused { kind, ..refused }))
        }
        None => serde_json::from_str(&stored.response_body).map_err(unreadable),
    }
}

/// Keeps the answer under the key, in the caller's transaction.
pub(super) async fn keep<T: Serialize>(
    conn: &mut store::Conn,
    scope: &str,
    key: &str,
    answer: &Result<T, Refused>,
) -> store::Result<()> {
    let (status, body) = match answer {
        Ok(made) => (KEPT_MADE, json_of(made)),
        Err(refused) => (refused.kind.kept_status(), json_of(refused)),
    };
    idempotency::answer(&mut *conn, scope, key, status, &body.to_string()).await
}

/// A payment with what is known of it: its effects, status history,
/// outbox events, alerts, discrepancies and refunds.
#[derive(Clone, Debug)]
pub struct PaymentDetail {
    pub payment: payments::PaymentRow,
    pub effects: Vec<payments::EffectRow>,
    pub history: Vec<payments::HistoryRow>,
    pub outbox: Vec<outbox::EventRow>,
    pub alerts: Vec<alerts::AlertRow>,
    pub discrepancies: Vec<tickets::DiscrepancyRow>,
    pub refunds: Vec<refunds::RefundRow>,
}

fn json_of<T: Serialize>(v: T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or_default()
}

impl Engine {
    /// Creates the payment (CREATED) and its create task in one transaction
    /// under the merchant's idempotency key; the provider is called later,
    /// by the task worker. Every repeat of the key gets the same answer:
    /// the payment as created, or the same refusal.
    pub async fn create_payment(
        &self,
        scope: &str,
        key: &str,
        req: &CreatePayment,
    ) -> Result<payments::PaymentRow, MerchantError> {
        let order_no =
            OrderNo::parse(&req.order_no).map_err(|e| MerchantError::Invalid(e.to_string()))?;
        let provider = ProviderName::parse(&req.provider)
            .map_err(|e| MerchantError::Invalid(e.to_string()))?;
        if self.providers.get(provider.as_str()).is_none() {
            return Err(MerchantError::Invalid(format!(
                "provider {provider} is not configured (configured: {})",
                self.providers.names().collect::<Vec<_>>().join(", ")
            )));
        }
        let currency =
            Currency::parse(&req.currency).map_err(|e| MerchantError::Invalid(e.to_string()))?;
        let money = Money::new(req.amount_minor, currency)
            .positive()
            .map_err(|e| MerchantError::Invalid(e.to_string()))?;
        if let Some(d) = &req.description
            && (d.chars().count() > 256 || d.contains('\0'))
        {
            // PostgreSQL's text cannot hold a NUL: refused here, not a 500.
            return Err(MerchantError::Invalid(
                "description is at most 256 characters, without NUL".into(),
            ));
        }
        let request_hash = hex::encode(Sha256::digest(serde_json::to_vec(req).unwrap_or_default()));

        let now = self.now();
        let mut tx = self.db.begin_write().await?;
        if let Some(stored) = take_key(&mut tx, scope, key, &request_hash, now).await? {
            tx.commit().await?;
            return again(&stored, &request_hash);
        }
        let (attempt_no, live) = payments::attempts_of(&mut *tx, order_no.as_str()).await?;
        let answer = if live > 0 {
            Err(Refused::new(
                RefusedKind::StateForbids,
                format!("order {order_no} already has a live payment attempt"),
            ))
        } else {
            let payment_no = format!("PAY{}", uuid::Uuid::now_v7().simple()).to_ascii_uppercase();
            payments::insert(
                &mut *tx,
                &payments::NewPayment {
                    payment_no: &payment_no,
                    order_no: order_no.as_str(),
                    attempt_no,
                    provider: provider.as_str(),
                    amount_minor: money.minor,
                    currency: currency.code(),
                    description: req.description.as_deref(),
                    created_by: scope,
                    now,
                },
            )
            .await?;
            tasks::schedule(&mut *tx, tasks::CREATE, &payment_no, now, now).await?;
            payments::get(&mut *tx, &payment_no)
                .await?
                .ok_or_else(|| MerchantError::Invalid("payment vanished".into()))
                .map(Ok)?
        };
        keep(&mut tx, scope, key, &answer).await?;
        tx.commit().await?;
        self.wake.notify_one();
        answer.map_err(MerchantError::Refused)
    }

    pub async fn payment_detail(&self, payment_no: &str) -> Result<PaymentDetail, MerchantError> {
        // Not a payment number: no such payment (and not a NUL that
        // PostgreSQL would refuse as an error).
        PaymentNo::parse(payment_no).map_err(|_| MerchantError::NotFound(payment_no.into()))?;
        let pool = &self.db.pool;
        let payment = payments::get(pool, payment_no)
            .await?
            .ok_or_else(|| MerchantError::NotFound(payment_no.into()))?;
        Ok(PaymentDetail {
            payment,
            effects: payments::effects(pool, payment_no).await?,
            history: payments::history(pool, payment_no).await?,
            outbox: outbox::events_of(pool, payment_no).await?,
            alerts: alerts::alerts_for(pool, payment_no).await?,
            discrepancies: tickets::discrepancies_for(pool, payment_no).await?,
            refunds: refunds::of_payment(pool, payment_no).await?,
        })
    }

    /// Closes a payment that has no result: the provider closes it first
    /// (outside any transaction), then `apply` records it.
    pub async fn close_payment(&self, payment_no: &str) -> Result<Applied, MerchantError> {
        PaymentNo::parse(payment_no).map_err(|_| MerchantError::NotFound(payment_no.into()))?;
        let pool = &self.db.pool;
        let p = payments::get(pool, payment_no)
            .await?
            .ok_or_else(|| MerchantError::NotFound(payment_no.into()))?;
        if !matches!(p.status, PaymentStatus::Created | PaymentStatus::Pending) {
            return Err(MerchantError::NotClosable {
                payment_no: p.payment_no,
                status: p.status.as_str().to_owned(),
            });
        }
        let (Some(provider), Ok(no), Ok(currency)) = (
            self.providers.get(&p.provider).cloned(),
            PaymentNo::parse(&p.payment_no),
            Currency::parse(&p.currency),
        ) else {
            return Err(MerchantError::Invalid(format!(
                "provider {} is not configured",
                p.provider
            )));
        };
        let txn = p
            .provider_txn_id
            .as_deref()
            .and_then(|t| ProviderTxnId::parse(t).ok());
        let closed = match provider.payments() {
            Some(payments) => payments.close_payment(&no, txn.as_ref()).await,
            None => Err(CallError::Refused(format!(
                "{} cannot close payments through Reckon",
                provider.name()
            ))),
        };
        match closed {
            // Never reached the provider: nothing there to close.
            Ok(()) | Err(CallError::NotFound) => {}
            Err(CallError::Refused(r)) => return Err(MerchantError::ProviderRefused(r)),
            Err(e) => return Err(MerchantError::ProviderUnknown(e.to_string())),
        }
        let outcome = Outcome {
            payment_no: no,
            provider: provider.name().clone(),
            provider_txn_id: None,
            target: PaymentStatus::Closed,
            money: Money::new(p.amount_minor, currency),
            source: Source::Merchant,
            evidence: "merchant close".into(),
            trace_id: uuid::Uuid::new_v4().simple().to_string(),
            paid_at: None,
        };
        Ok(self.apply(&outcome).await?)
    }
}
