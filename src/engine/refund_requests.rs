//! What merchants ask about refunds through the API: request one (the
//! amount reserved on the payment, the refund and its provider task written
//! in one transaction under the merchant's idempotency key), and read one.
//! The refund's life after that is [`super::refunds`]'.

use super::Engine;
use super::Source;
use super::merchant::{MerchantError, Refused, RefusedKind, again, keep, take_key};
use crate::domain::{Mover, PaymentNo, PaymentStatus, RefundNo};
use crate::store;
use crate::store::{payments, refunds, tasks};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The body of `POST /api/v1/payments/{payment_no}/refunds`.
#[derive(Clone, Debug, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateRefund {
    /// Minor units of the payment's currency.
    #[schema(example = 3000, minimum = 1)]
    pub amount_minor: i64,
    /// Optional; when given it must be the payment's.
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z]{3}$")]
    pub currency: Option<String>,
    /// Required, at most 256 characters.
    #[schema(example = "damaged", min_length = 1, max_length = 256)]
    pub reason: String,
}

/// A refund with its payment's balance: the answer kept under the
/// merchant's idempotency key (as JSON) and read back for a repeat.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RefundDetail {
    #[serde(flatten)]
    pub refund: refunds::RefundRow,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payment: Option<RefundBalance>,
}

/// A payment's refund figures, in minor units of its currency.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RefundBalance {
    pub status: String,
    pub amount_minor: i64,
    pub refunded_minor: i64,
    pub reserved_minor: i64,
    /// `amount_minor - refunded_minor - reserved_minor`.
    pub refundable_minor: i64,
}

/// A refund with the payment's figures.
fn refund_detail(r: refunds::RefundRow, balance: Option<refunds::Balance>) -> RefundDetail {
    RefundDetail {
        refund: r,
        payment: balance.map(|b| RefundBalance {
            status: b.status.as_str().to_owned(),
            amount_minor: b.amount_minor,
            refunded_minor: b.refunded_minor,
            reserved_minor: b.reserved_minor,
            refundable_minor: b.amount_minor - b.refunded_minor - b.reserved_minor,
        }),
    }
}

impl RefundDetail {
    /// The answer as [`Engine::request_refund`] gives and keeps it.
    pub fn from_kept(kept: serde_json::Value) -> Result<RefundDetail, MerchantError> {
        serde_json::from_value(kept).map_err(|e| MerchantError::Store(store::undecodable(e)))
    }
}

impl Engine {
    /// Reserves the amount and records the refund (REQUESTED) with its task
    /// in one transaction, under the merchant's idempotency key; the
    /// provider is called later by the task worker. Every repeat of the key
    /// gets the same answer: the refund as requested, or the same refusal.
    pub async fn request_refund(
        &self,
        scope: &str,
        key: &str,
        payment_no: &str,
        req: &CreateRefund,
    ) -> Result<serde_json::Value, MerchantError> {
        let payment_no =
            PaymentNo::parse(payment_no).map_err(|e| MerchantError::Invalid(e.to_string()))?;
        if req.amount_minor <= 0 {
            return Err(MerchantError::Invalid(
                "amount_minor must be positive".into(),
            ));
        }
        let reason = req.reason.trim();
        if reason.is_empty() || reason.chars().count() > 256 || reason.contains('\0') {
            // PostgreSQL's text cannot hold a NUL: refused here, not a 500.
            return Err(MerchantError::Invalid(
                "reason is required, at most 256 characters, without NUL".into(),
            ));
        }
        let request_hash = hex::encode(Sha256::digest(
            format!(
                "{payment_no}\n{}",
                serde_json::to_string(req).unwrap_or_default()
            )
            .as_bytes(),
        ));
        let idem_scope = format!("refund:{scope}");
        let now = self.now();
        let mut tx = self.db.begin_write().await?;
        if let Some(stored) = take_key(&mut tx, &idem_scope, key, &request_hash, now).await? {
            tx.commit().await?;
            return again(&stored, &request_hash);
        }
        let answer = self
            .reserve_refund(&mut tx, &payment_no, req, reason, scope, key, now)
            .await?;
        keep(&mut tx, &idem_scope, key, &answer).await?;
        tx.commit().await?;
        self.metrics.refund(if answer.is_ok() {
            "requested"
        } else {
            "rejected"
        });
        if answer.is_ok() {
            self.wake.notify_one();
        }
        answer.map_err(MerchantError::Refused)
    }

    #[allow(clippy::too_many_arguments)]
    async fn reserve_refund(
        &self,
        conn: &mut store::Conn,
        payment_no: &PaymentNo,
        req: &CreateRefund,
        reason: &str,
        scope: &str,
        key: &str,
        now: i64,
    ) -> Result<Result<serde_json::Value, Refused>, MerchantError> {
        let refuse = |kind: RefusedKind, message: String, figures: Refused| {
            Ok(Err(Refused {
                kind,
                error: message,
                ..figures
            }))
        };
        let none = Refused::default;
        let Some(p) = payments::get(&mut *conn, payment_no.as_str()).await? else {
            return refuse(
                RefusedKind::NoSuchPayment,
                format!("no payment {payment_no}"),
                none(),
            );
        };
        if let Some(c) = &req.currency
            && !c.eq_ignore_ascii_case(&p.currency)
        {
            return refuse(
                RefusedKind::Unacceptable,
                format!("payment {payment_no} is in {}, not {c}", p.currency),
                Refused {
                    currency: Some(p.currency.clone()),
                    ..none()
                },
            );
        }
        if let Some(reason) = &p.hold_reason {
            return refuse(
                RefusedKind::StateForbids,
                format!(
                    "payment {payment_no} is held by reconciliation ({reason}); a person must release it first"
                ),
                Refused {
                    hold_reason: Some(reason.clone()),
                    ..none()
                },
            );
        }
        if self.providers.get(&p.provider).is_none() {
            return refuse(
                RefusedKind::Unacceptable,
                format!("provider {} is not configured", p.provider),
                none(),
            );
        }
        let Some(prev) = refunds::reserve(
            &mut *conn,
            payment_no.as_str(),
            req.amount_minor,
            &p.currency,
            now,
        )
        .await?
        else {
            let b = refunds::balance(&mut *conn, payment_no.as_str())
                .await?
                .ok_or_else(store::not_found)?;
            let (status, currency) = (b.status, b.currency);
            let refundable = b.amount_minor - b.refunded_minor - b.reserved_minor;
            let figures = Refused {
                payment_status: Some(status.as_str().to_owned()),
                refundable_minor: Some(refundable),
                currency: Some(currency.clone()),
                ..none()
            };
            if !status.may_move(PaymentStatus::Refunding, Mover::Refund) {
                return refuse(
                    RefusedKind::StateForbids,
                    format!(
                        "payment {payment_no} is {status}; only a SUCCEEDED payment can be refunded"
                    ),
                    figures,
                );
            }
            return refuse(
                RefusedKind::StateForbids,
                format!(
                    "a refund of {} exceeds what is refundable on payment {payment_no}: {refundable} {currency} (minor units)",
                    req.amount_minor
                ),
                figures,
            );
        };
        let refund_no = format!("RFD{}", uuid::Uuid::now_v7().simple()).to_ascii_uppercase();
        refunds::insert(
            &mut *conn,
            &refunds::NewRefund {
                refund_no: &refund_no,
                payment_no: payment_no.as_str(),
                provider: &p.provider,
                amount_minor: req.amount_minor,
                currency: &p.currency,
                idem_scope: &format!("refund:{scope}"),
                idem_key: key,
                reason,
                requested_by: scope,
                now,
            },
        )
        .await?;
        if prev != PaymentStatus::Refunding {
            payments::insert_history_many(
                &mut *conn,
                &[payments::HistoryEntry {
                    payment_no: payment_no.as_str(),
                    from: prev,
                    to: PaymentStatus::Refunding,
                    source: Source::Merchant.as_str(),
                    evidence: &refund_no,
                    trace_id: &refund_no,
                    at: now,
                }],
            )
            .await?;
        }
        tasks::schedule_refund(
            &mut *conn,
            tasks::REFUND,
            payment_no.as_str(),
            &refund_no,
            now,
            now,
        )
        .await?;
        let row = refunds::get(&mut *conn, &refund_no)
            .await?
            .ok_or_else(|| MerchantError::Invalid("refund vanished".into()))?;
        let balance = refunds::balance(&mut *conn, payment_no.as_str()).await?;
        Ok(Ok(
            serde_json::to_value(refund_detail(row, balance)).unwrap_or_default()
        ))
    }

    pub async fn refund_detail(&self, refund_no: &str) -> Result<RefundDetail, MerchantError> {
        RefundNo::parse(refund_no).map_err(|_| MerchantError::NotFound(refund_no.into()))?;
        let pool = &self.db.pool;
        let r = refunds::get(pool, refund_no)
            .await?
            .ok_or_else(|| MerchantError::NotFound(refund_no.into()))?;
        let balance = refunds::balance(pool, &r.payment_no).await?;
        Ok(refund_detail(r, balance))
    }
}
