//! What merchants ask of the engine through the API: create a payment
//! (idempotently), read it, close it.

use super::{Applied, Engine, Outcome, Source};
use crate::domain::{
    Currency, Money, OrderNo, PaymentNo, PaymentStatus, ProviderName, ProviderTxnId,
};
use crate::providers::CallError;
use crate::store::{alerts, idempotency, outbox, payments, refunds, tasks, tickets};
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
    #[error("order {0} already has a live payment attempt")]
    LiveAttempt(String),
    #[error("no payment {0}")]
    NotFound(String),
    #[error("payment {payment_no} is {status} and cannot be closed")]
    NotClosable { payment_no: String, status: String },
    #[error("the provider could not be reached ({0}); the payment is unchanged, try again")]
    ProviderUnknown(String),
    #[error("the provider refused: {0}")]
    ProviderRefused(String),
    #[error("storage error: {0}")]
    Store(#[from] sqlx::Error),
}

/// A payment as the API returns it. The values are the store's rows as
/// JSON; `value_type` names those rows for the OpenAPI document.
#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PaymentDetail {
    #[schema(value_type = payments::PaymentRow)]
    pub payment: serde_json::Value,
    #[schema(value_type = Vec<payments::EffectRow>)]
    pub effects: Vec<serde_json::Value>,
    #[schema(value_type = Vec<payments::HistoryRow>)]
    pub history: Vec<serde_json::Value>,
    #[schema(value_type = Vec<outbox::EventRow>)]
    pub outbox: Vec<serde_json::Value>,
    #[schema(value_type = Vec<alerts::AlertRow>)]
    pub alerts: Vec<serde_json::Value>,
    #[schema(value_type = Vec<tickets::DiscrepancyRow>)]
    pub discrepancies: Vec<serde_json::Value>,
    #[schema(value_type = Vec<refunds::RefundRow>)]
    pub refunds: Vec<serde_json::Value>,
}

fn json_of<T: Serialize>(v: T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or_default()
}

impl Engine {
    /// Creates the payment (CREATED) and its create task in one transaction
    /// under the merchant's idempotency key; the provider is called later,
    /// by the task worker. Returns the HTTP status and body to send — the
    /// same ones for every repeat of the key.
    pub async fn create_payment(
        &self,
        scope: &str,
        key: &str,
        req: &CreatePayment,
    ) -> Result<(u16, serde_json::Value), MerchantError> {
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
        if !idempotency::take(&mut *tx, scope, key, &request_hash, now).await? {
            let stored = idempotency::stored(&mut *tx, scope, key)
                .await?
                .ok_or_else(|| MerchantError::Invalid("idempotency key vanished".into()))?;
            tx.commit().await?;
            if stored.request_hash != request_hash {
                return Err(MerchantError::KeyReused);
            }
            let body = serde_json::from_str(&stored.response_body).unwrap_or_default();
            return Ok((stored.response_status as u16, body));
        }
        let (attempt_no, live) = payments::attempts_of(&mut *tx, order_no.as_str()).await?;
        let (status, body) = if live > 0 {
            (
                409,
                serde_json::json!({ "error": MerchantError::LiveAttempt(order_no.to_string()).to_string() }),
            )
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
            let row = payments::get(&mut *tx, &payment_no).await?;
            (201, json_of(row))
        };
        idempotency::answer(&mut *tx, scope, key, i64::from(status), &body.to_string()).await?;
        tx.commit().await?;
        self.wake.notify_one();
        Ok((status, body))
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
            payment: json_of(payment),
            effects: payments::effects(pool, payment_no)
                .await?
                .into_iter()
                .map(json_of)
                .collect(),
            history: payments::history(pool, payment_no)
                .await?
                .into_iter()
                .map(json_of)
                .collect(),
            outbox: outbox::events_of(pool, payment_no)
                .await?
                .into_iter()
                .map(json_of)
                .collect(),
            alerts: alerts::alerts_for(pool, payment_no)
                .await?
                .into_iter()
                .map(json_of)
                .collect(),
            discrepancies: tickets::discrepancies_for(pool, payment_no)
                .await?
                .into_iter()
                .map(json_of)
                .collect(),
            refunds: refunds::of_payment(pool, payment_no)
                .await?
                .into_iter()
                .map(json_of)
                .collect(),
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
        let status: PaymentStatus = p.status.parse().map_err(MerchantError::Invalid)?;
        if !matches!(status, PaymentStatus::Created | PaymentStatus::Pending) {
            return Err(MerchantError::NotClosable {
                payment_no: p.payment_no,
                status: p.status,
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
        match provider.close_payment(&no, txn.as_ref()).await {
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
        };
        Ok(self.apply(&outcome).await?)
    }
}
