//! What a fix will do, worked out when it is proposed: the payment it
//! touches and the version it saw, before and after as JSON — or why it
//! does not apply to this ticket now.

use super::{brief_json, fixes_for, not_applicable};
use crate::accounts::TxError;
use crate::store::payments::{self, PaymentBrief};
use crate::store::tickets::{self, TicketRow};
use app::error::AppError;
use app::tickets::{FixKind, FixRequest};
use serde_json::{Value, json};
use sqlx::AnyConnection;

/// What the fix will do.
pub(super) struct Plan {
    pub payment_no: Option<String>,
    pub version: Option<i64>,
    pub before: Value,
    pub after: Value,
}

/// The payments a ONE_TO_MANY ticket involves: the one bound to the
/// transaction, and the one the statement row names.
async fn involved(conn: &mut AnyConnection, t: &TicketRow) -> sqlx::Result<Vec<PaymentBrief>> {
    let mut nos: Vec<String> = t.payment_no.iter().cloned().collect();
    if let Some(txn) = &t.provider_txn_id
        && let Some(bound) = payments::bound_to(&mut *conn, &t.provider, txn).await?
    {
        nos.push(bound);
    }
    if let (Some(run), Some(line)) = (&t.run_id, t.line_no)
        && let Some((_, Some(named), _)) = tickets::statement_line(&mut *conn, run, line).await?
    {
        nos.push(named);
    }
    nos.sort();
    nos.dedup();
    let mut out = Vec::new();
    for no in nos {
        if let Some(p) = payments::brief(&mut *conn, &no).await? {
            out.push(p);
        }
    }
    Ok(out)
}

pub(super) async fn plan(
    conn: &mut AnyConnection,
    t: &TicketRow,
    fix: &FixRequest,
) -> Result<Plan, TxError> {
    let payment = match t.payment_no.as_deref() {
        Some(no) => payments::brief(&mut *conn, no).await?,
        None => None,
    };
    if !fixes_for(t, payment.as_ref()).contains(&fix.kind) {
        return Err(TxError::App(not_applicable(format!(
            "{} does not apply to a {} ticket with the payment {}",
            fix.kind,
            t.class,
            payment
                .as_ref()
                .map(|p| p.status.as_str())
                .unwrap_or("absent")
        ))));
    }
    let version = payment.as_ref().map(|p| p.version);
    let before = payment.as_ref().map(brief_json).unwrap_or(Value::Null);
    let plan = |after: Value| Plan {
        payment_no: t.payment_no.clone(),
        version,
        before: before.clone(),
        after,
    };
    Ok(match fix.kind {
        FixKind::Backfill => {
            let (Some(minor), Some(currency)) = (t.provider_amount_minor, &t.provider_currency)
            else {
                return Err(TxError::App(not_applicable(
                    "the statement side has no amount to backfill",
                )));
            };
            let order_no = match &payment {
                Some(p) => p.order_no.clone(),
                None => fix.order_no.clone().ok_or_else(|| AppError::Required {
                    field: "order_no".into(),
                })?,
            };
            if payment.is_none()
                && let Some(paid) = payments::paid_of_order(&mut *conn, &order_no).await?
            {
                return Err(TxError::App(not_applicable(format!(
                    "order {order_no} is already paid by {paid}"
                ))));
            }
            plan(json!({
                "payment_no": t.payment_no,
                "order_no": order_no,
                "create": payment.is_none(),
                "status": "SUCCEEDED",
                "amount_minor": minor,
                "currency": currency,
                "provider_txn_id": t.provider_txn_id,
            }))
        }
        FixKind::ClosePayment => plan(json!({ "status": "CLOSED", "hold_reason": null })),
        FixKind::AcceptAmount => {
            let p = payment
                .as_ref()
                .ok_or_else(|| not_applicable("no payment"))?;
            let accepted = t.provider_amount_minor.unwrap_or_default();
            if p.refunded_minor + p.reserved_minor > accepted {
                return Err(TxError::App(not_applicable(
                    "more is refunded or reserved than the provider's amount",
                )));
            }
            let pay = t.provider_status.as_deref() == Some("SUCCEEDED")
                && matches!(p.status.as_str(), "CREATED" | "PENDING");
            plan(json!({
                "amount_minor": accepted,
                "difference_minor": accepted - p.amount_minor,
                "currency": p.currency,
                "status": if pay { "SUCCEEDED" } else { p.status.as_str() },
            }))
        }
        FixKind::Merge => merge(conn, t, fix).await?,
        FixKind::ReleaseHold => plan(json!({ "hold_reason": null })),
        FixKind::AcceptPayment | FixKind::RefundPayment => {
            let p = payment
                .as_ref()
                .ok_or_else(|| not_applicable("no payment"))?;
            let txn = t
                .provider_txn_id
                .clone()
                .or_else(|| p.provider_txn_id.clone());
            if fix.kind == FixKind::AcceptPayment {
                if let Some(paid) =
                    payments::paid_attempt_of(&mut *conn, &p.order_no, &p.payment_no).await?
                {
                    return Err(TxError::App(not_applicable(format!(
                        "order {} is already paid by {paid}: accepting this payment would pay it twice (refund it instead)",
                        p.order_no
                    ))));
                }
                plan(json!({
                    "status": "SUCCEEDED",
                    "provider_txn_id": txn,
                    "effect": "ORDER_PAID",
                }))
            } else {
                plan(json!({
                    "status": "REFUNDING",
                    "then": "REFUNDED when the provider confirms the refund",
                    "refund_minor": p.amount_minor,
                    "currency": p.currency,
                    "provider_txn_id": txn,
                }))
            }
        }
    })
}

/// A merge keeps one payment (the one the transaction is bound to, or the
/// one asked for) and closes the others, none of them paid.
async fn merge(conn: &mut AnyConnection, t: &TicketRow, fix: &FixRequest) -> Result<Plan, TxError> {
    let all = involved(conn, t).await?;
    if all.len() < 2 {
        return Err(TxError::App(not_applicable(
            "fewer than two payments share this transaction now",
        )));
    }
    let keep = fix
        .keep
        .clone()
        .or_else(|| {
            all.iter()
                .find(|p| p.provider_txn_id == t.provider_txn_id)
                .map(|p| p.payment_no.clone())
        })
        .unwrap_or_else(|| all[0].payment_no.clone());
    if !all.iter().any(|p| p.payment_no == keep) {
        return Err(TxError::App(not_applicable(format!(
            "{keep} is not one of the payments involved"
        ))));
    }
    if let Some(bound) = all.iter().find(|p| p.provider_txn_id == t.provider_txn_id)
        && bound.payment_no != keep
    {
        return Err(TxError::App(not_applicable(format!(
            "the transaction is bound to {}: that payment is the one kept",
            bound.payment_no
        ))));
    }
    let close: Vec<&PaymentBrief> = all.iter().filter(|p| p.payment_no != keep).collect();
    if let Some(paid) = close
        .iter()
        .find(|p| matches!(p.status.as_str(), "SUCCEEDED" | "REFUNDING" | "REFUNDED"))
    {
        return Err(TxError::App(not_applicable(format!(
            "{} is paid: a merge never closes a paid payment (refund it instead)",
            paid.payment_no
        ))));
    }
    Ok(Plan {
        payment_no: Some(keep.clone()),
        version: all.iter().find(|p| p.payment_no == keep).map(|p| p.version),
        before: json!({ "payments": all.iter().map(brief_json).collect::<Vec<_>>() }),
        after: json!({
            "keep": keep,
            "close": close.iter().map(|p| json!({ "payment_no": p.payment_no, "version": p.version })).collect::<Vec<_>>(),
            "holds_released": true,
        }),
    })
}
