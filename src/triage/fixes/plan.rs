//! What a fix will do, worked out when it is proposed: the payment it
//! touches and the version it saw, before and after as JSON — or why it
//! does not apply to this ticket now.

use super::{brief_json, fixes_for, not_applicable};
use crate::accounts::TxError;
use crate::domain::PaymentStatus::{Closed, Created, Pending, Refunding, Succeeded};
use crate::domain::{Class, OrderNo, PaymentNo, ProviderTxnId};
use crate::store;
use crate::store::Conn;
use crate::store::payments::{self, PaymentBrief};
use crate::store::tickets::{self, TicketRow};
use crate::store::{bank, match_groups};
use app::error::AppError;
use app::tickets::{FixKind, FixRequest};
use serde_json::{Value, json};

/// What the fix will do.
pub(super) struct Plan {
    pub payment_no: Option<String>,
    pub version: Option<i64>,
    pub before: Value,
    pub after: Value,
}

/// The payments a ONE_TO_MANY ticket involves: the one bound to the
/// transaction, and the one the statement row names.
async fn involved(conn: &mut Conn, t: &TicketRow) -> store::Result<Vec<PaymentBrief>> {
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

/// Why the statement's ids cannot name a payment Reckon would create or
/// bind, if they cannot: checked as the merchant's ids are, so a backfill
/// never writes a payment under an id no other way in would take.
pub(super) fn unusable_ids(t: &TicketRow) -> Option<String> {
    if let Some(no) = &t.payment_no
        && let Err(e) = PaymentNo::parse(no)
    {
        return Some(format!("the statement's payment_no cannot be used: {e}"));
    }
    if let Some(txn) = &t.provider_txn_id
        && let Err(e) = ProviderTxnId::parse(txn)
    {
        return Some(format!(
            "the statement's transaction id cannot be used: {e}"
        ));
    }
    None
}

/// The moment a payment paid by a fix was paid, from what `t` says of the
/// statement: the row's own time (as its run kept it in `recon_rows`),
/// within the ticket's business day. `None`: nothing known, paid now.
async fn statement_paid_at(conn: &mut Conn, t: &TicketRow, now: i64) -> store::Result<Option<i64>> {
    let occurred = match (&t.run_id, t.line_no) {
        (Some(run), Some(line)) => tickets::statement_line(&mut *conn, run, line)
            .await?
            .and_then(|(_, _, at)| at),
        _ => None,
    };
    Ok(paid_within(occurred, t.range_start.zip(t.range_end), now))
}

/// The row's time `occurred` (or, without one, the middle of the day) kept
/// inside the business day `[start, end)` whose statement lists the row —
/// a row booked past the cut still belongs to the day that lists it: there
/// the next run looks for it — and never later than `now`.
pub(super) fn paid_within(occurred: Option<i64>, day: Option<(i64, i64)>, now: i64) -> Option<i64> {
    let Some((start, end)) = day.filter(|(start, end)| start < end) else {
        return occurred.map(|at| at.min(now));
    };
    let at = occurred.unwrap_or(start + (end - start) / 2).min(now);
    Some(at.clamp(start, end - 1))
}

/// When the money of a late success was taken: as a statement listed the
/// payment paid (a STATUS_LAG ticket of its run), else when the provider's
/// success first reached Reckon (its first PAID_AFTER_CLOSE ticket).
async fn late_success_paid_at(
    conn: &mut Conn,
    payment_no: &str,
    now: i64,
) -> store::Result<Option<i64>> {
    let all = tickets::of_payment(&mut *conn, payment_no).await?;
    for lag in all.iter().filter(|o| o.class == Class::StatusLag.as_str()) {
        if let Some(t) = tickets::ticket(&mut *conn, &lag.discrepancy_id).await?
            && t.line_no.is_some()
            && let Some(at) = statement_paid_at(conn, &t, now).await?
        {
            return Ok(Some(at));
        }
    }
    Ok(all
        .iter()
        .filter(|o| o.class == Class::PaidAfterClose.as_str())
        .map(|o| o.found_at.min(now))
        .min())
}

pub(super) async fn plan(
    conn: &mut Conn,
    t: &TicketRow,
    fix: &FixRequest,
    now: i64,
) -> Result<Plan, TxError> {
    if fix.kind == FixKind::Backfill
        && let Some(why) = unusable_ids(t)
    {
        return Err(TxError::App(not_applicable(why)));
    }
    if fix.kind == FixKind::GroupMatch {
        return group_match(conn, t, now).await;
    }
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
                None => {
                    let given = fix.order_no.as_deref().ok_or_else(|| AppError::Required {
                        field: "order_no".into(),
                    })?;
                    let order = OrderNo::parse(given).map_err(|e| AppError::Invalid {
                        detail: e.to_string(),
                    })?;
                    String::from(order)
                }
            };
            if payment.is_none()
                && let Some(paid) = payments::paid_of_order(&mut *conn, &order_no).await?
            {
                return Err(TxError::App(not_applicable(format!(
                    "order {order_no} is already paid by {paid}"
                ))));
            }
            // Paid when the statement says, and never before Reckon had
            // the payment; a payment created now is made as of then.
            let paid_at = statement_paid_at(conn, t, now)
                .await?
                .map(|at| payment.as_ref().map_or(at, |p| at.max(p.created_at)));
            plan(json!({
                "payment_no": t.payment_no,
                "order_no": order_no,
                "create": payment.is_none(),
                "status": Succeeded,
                "amount_minor": minor,
                "currency": currency,
                "provider_txn_id": t.provider_txn_id,
                "paid_at": paid_at,
            }))
        }
        FixKind::ClosePayment => plan(json!({ "status": Closed, "hold_reason": null })),
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
            let pay = t.provider_status.as_deref() == Some(Succeeded.as_str())
                && matches!(p.status, Created | Pending);
            let paid_at = if pay {
                statement_paid_at(conn, t, now)
                    .await?
                    .map(|at| at.max(p.created_at))
            } else {
                None
            };
            plan(json!({
                "amount_minor": accepted,
                "difference_minor": accepted - p.amount_minor,
                "currency": p.currency,
                "status": if pay { Succeeded } else { p.status },
                "paid_at": paid_at,
            }))
        }
        FixKind::Merge => merge(conn, t, fix).await?,
        FixKind::GroupMatch => unreachable!("planned above"),
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
                let paid_at = late_success_paid_at(conn, &p.payment_no, now)
                    .await?
                    .map(|at| at.max(p.created_at));
                plan(json!({
                    "status": Succeeded,
                    "provider_txn_id": txn,
                    "effect": "ORDER_PAID",
                    "paid_at": paid_at,
                }))
            } else {
                plan(json!({
                    "status": Refunding,
                    "then": "REFUNDED when the provider confirms the refund",
                    "refund_minor": p.amount_minor,
                    "currency": p.currency,
                    "provider_txn_id": txn,
                }))
            }
        }
    })
}

/// A group the matching pass found on this ticket (its anchor's): the
/// payouts and credits as they are now, each still waiting for its match,
/// and what approval records — every payout settled, every credit matched.
async fn group_match(conn: &mut Conn, t: &TicketRow, now: i64) -> Result<Plan, TxError> {
    let Some(g) = match_groups::proposed_on(&mut *conn, &t.discrepancy_id).await? else {
        return Err(TxError::App(not_applicable(
            "no grouped match was found for this ticket",
        )));
    };
    let members = match_groups::members(&mut *conn, &g.group_id).await?;
    if g.shape == "PAYMENTS_TO_ROW" {
        return payments_to_row(conn, t, &g, &members, now).await;
    }
    let mut before = (Vec::new(), Vec::new());
    let mut after = (Vec::new(), Vec::new());
    for m in &members {
        let side = match m.side.as_str() {
            "PAYOUT" => {
                let (provider, id) = (
                    m.provider.clone().unwrap_or_default(),
                    m.payout_id.clone().unwrap_or_default(),
                );
                let state = bank::payout(&mut *conn, &provider, &id)
                    .await?
                    .map(|p| p.state)
                    .unwrap_or_else(|| "absent".into());
                if !matches!(state.as_str(), "PENDING" | "PAYOUT_MISSING") {
                    return Err(TxError::App(not_applicable(format!(
                        "payout {id} is {state} now: the group no longer holds"
                    ))));
                }
                let member = json!({ "payout_id": id, "provider": provider, "amount_minor": m.amount_minor,
                    "currency": g.currency, "day": m.on_date });
                before
                    .0
                    .push(json!({ "payout_id": member["payout_id"], "state": state }));
                after.0.push(member);
                continue;
            }
            _ => m.entry_id.clone().unwrap_or_default(),
        };
        let Some(e) = bank::entry(&mut *conn, &side).await? else {
            return Err(TxError::App(not_applicable(format!(
                "bank entry {side} is gone"
            ))));
        };
        if !matches!(e.state.as_str(), "UNMATCHED" | "BANK_ONLY") {
            return Err(TxError::App(not_applicable(format!(
                "the bank credit of statement line {} is {} now: the group no longer holds",
                e.line_no, e.state
            ))));
        }
        let reference = e
            .end_to_end_id
            .clone()
            .or(e.bank_ref.clone())
            .unwrap_or_else(|| format!("line {}", e.line_no));
        before.1.push(json!({ "ref": reference, "state": e.state }));
        after.1.push(
            json!({ "entry_id": e.entry_id, "ref": reference, "amount_minor": m.amount_minor,
            "currency": g.currency, "day": m.on_date }),
        );
    }
    Ok(Plan {
        payment_no: None,
        version: None,
        before: json!({ "payouts": before.0, "credits": before.1, "currency": g.currency }),
        after: json!({
            "group": g.group_id,
            "shape": g.shape,
            "payouts": after.0,
            "credits": after.1,
            "amount_minor": g.total_minor,
            "currency": g.currency,
            "state": "PAYOUT_MATCHED",
        }),
    })
}

/// Several payments that together are one statement row (the row of
/// ticket `t`): each still waiting for its money (made SUCCEEDED as of the
/// row's time) or paid here without a row of its own (left as it is), none
/// bound to another transaction; approval also releases their holds.
async fn payments_to_row(
    conn: &mut Conn,
    t: &TicketRow,
    g: &match_groups::GroupRow,
    members: &[match_groups::Member],
    now: i64,
) -> Result<Plan, TxError> {
    let row = members.iter().find(|m| m.role == "ANCHOR");
    let txn = row.and_then(|m| m.provider_txn_id.clone());
    let at = statement_paid_at(conn, t, now).await?;
    let (mut before, mut after) = (Vec::new(), Vec::new());
    for m in members.iter().filter(|m| m.side == "PAYMENT") {
        let no = m.payment_no.clone().unwrap_or_default();
        let Some(p) = payments::brief(&mut *conn, &no).await? else {
            return Err(TxError::App(not_applicable(format!(
                "payment {no} is gone"
            ))));
        };
        let pay = matches!(p.status, Created | Pending);
        if !pay && p.status != Succeeded {
            return Err(TxError::App(not_applicable(format!(
                "payment {no} is {} now: the group no longer holds",
                p.status
            ))));
        }
        if p.provider_txn_id.is_some() && p.provider_txn_id != txn {
            return Err(TxError::App(not_applicable(format!(
                "payment {no} is bound to another transaction now: the group no longer holds"
            ))));
        }
        if p.amount_minor != m.amount_minor || p.currency != g.currency {
            return Err(TxError::App(not_applicable(format!(
                "payment {no} is of another amount now: the group no longer holds"
            ))));
        }
        before.push(
            json!({ "payment_no": no, "status": p.status, "amount_minor": p.amount_minor,
            "currency": p.currency, "hold_reason": p.hold_reason }),
        );
        after.push(
            json!({ "payment_no": no, "amount_minor": p.amount_minor, "currency": p.currency,
            "status": Succeeded, "pay": pay, "paid_at": at.map(|at| at.max(p.created_at)) }),
        );
    }
    Ok(Plan {
        payment_no: None,
        version: None,
        before: json!({ "payments": before, "currency": g.currency }),
        after: json!({
            "group": g.group_id,
            "shape": g.shape,
            "payments": after,
            "row": row.map(|m| json!({ "run_id": m.run_id, "line_no": m.line_no,
                "provider_txn_id": m.provider_txn_id, "day": m.on_date })),
            "amount_minor": g.total_minor,
            "currency": g.currency,
            "holds_released": true,
        }),
    })
}

/// A merge keeps one payment (the one the transaction is bound to, or the
/// one asked for) and closes the others, none of them paid.
async fn merge(conn: &mut Conn, t: &TicketRow, fix: &FixRequest) -> Result<Plan, TxError> {
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
    if let Some(paid) = close.iter().find(|p| p.status.is_paid()) {
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

#[cfg(test)]
mod tests {
    use super::paid_within;

    const H: i64 = 3600 * 1_000_000;

    #[test]
    fn a_fix_pays_within_the_day_whose_statement_lists_the_row() {
        let day = Some((100 * H, 124 * H));
        let later = 200 * H;
        assert_eq!(paid_within(Some(110 * H), day, later), Some(110 * H));
        // No time on the row: the middle of the day.
        assert_eq!(paid_within(None, day, later), Some(112 * H));
        // Booked across a cut: kept inside the day that lists it.
        assert_eq!(paid_within(Some(99 * H), day, later), Some(100 * H));
        assert_eq!(paid_within(Some(130 * H), day, later), Some(124 * H - 1));
        // Never later than now.
        assert_eq!(paid_within(None, day, 105 * H), Some(105 * H));
        // No business day known: the row's time, or nothing (paid now).
        assert_eq!(paid_within(Some(7), None, later), Some(7));
        assert_eq!(paid_within(None, None, later), None);
    }
}
