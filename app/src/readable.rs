//! The console's JSON as a person reads it: a fix proposal as a sentence
//! and a table of the fields it changes, an audit entry's before and after
//! pretty-printed — amounts in major units with their currency, times in
//! the business zone. What is stored stays as it is; only its reading
//! changes.

use crate::format::{Zone, exponent, money};
use crate::i18n::tr;
use crate::tickets::FixKind;
use crate::types::Lang;
use serde_json::{Map, Value};

/// The currency of a JSON object, if it names one the console knows.
fn currency_of(object: &Map<String, Value>) -> Option<&str> {
    object
        .get("currency")
        .and_then(Value::as_str)
        .filter(|c| exponent(c).is_some())
}

/// A field holding microseconds since the epoch (`paid_at`, `occurred_at`).
fn is_time(key: &str) -> bool {
    key.ends_with("_at")
}

/// `value` with each `*_minor` integer of an object that names its
/// currency shown in major units under the name without `_minor`
/// (`"amount": "15.00 CNY"`), and each `*_at` integer as a time in `zone`.
fn readable_value(value: &Value, zone: &Zone) -> Value {
    match value {
        Value::Object(object) => {
            let currency = currency_of(object);
            let mut out = Map::new();
            for (key, v) in object {
                match (key.strip_suffix("_minor"), v.as_i64(), currency) {
                    (Some(name), Some(minor), Some(code)) => {
                        out.insert(name.to_owned(), Value::String(money(minor, code)));
                    }
                    _ if is_time(key) && v.is_i64() => {
                        let at = v.as_i64().unwrap_or_default();
                        out.insert(key.clone(), Value::String(zone.named(at)));
                    }
                    _ => {
                        out.insert(key.clone(), readable_value(v, zone));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| readable_value(v, zone)).collect())
        }
        other => other.clone(),
    }
}

/// JSON text pretty-printed as a person reads it (see [`readable_value`]);
/// text that is not JSON, as it is.
pub fn readable_json(text: &str, zone: &Zone) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(v) => serde_json::to_string_pretty(&readable_value(&v, zone))
            .unwrap_or_else(|_| text.to_owned()),
        Err(_) => text.to_owned(),
    }
}

/// One field a proposal changes: before → after, and by how much.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldRow {
    /// The field as stored (`amount_minor`).
    pub key: String,
    /// Its name for a person.
    pub label: String,
    pub before: String,
    pub after: String,
    /// An amount's signed change (`+1.00 CNY`), else "unchanged" or empty.
    pub difference: String,
    pub changed: bool,
}

/// A field's name in `lang`; one the console has no word for, as stored.
fn label(key: &str, lang: Lang) -> String {
    let known = match key {
        "payment_no" => Some(("Payment", "支付单")),
        "order_no" => Some(("Order", "订单")),
        "create" => Some(("Created by the fix", "由修复创建")),
        "status" => Some(("Status", "状态")),
        "amount_minor" => Some(("Amount", "金额")),
        "refund_minor" => Some(("Refund", "退款金额")),
        "currency" => Some(("Currency", "币种")),
        "provider_txn_id" => Some(("Provider txn id", "渠道流水号")),
        "hold_reason" => Some(("Hold", "冻结原因")),
        "paid_at" => Some(("Paid at", "支付时间")),
        "effect" => Some(("Effect", "下游效果")),
        "then" => Some(("Then", "随后")),
        "keep" => Some(("Kept", "保留")),
        "close" => Some(("Closed", "关闭")),
        "payments" => Some(("Payments", "支付单")),
        "holds_released" => Some(("Holds released", "解除冻结")),
        "version" => Some(("Version", "版本")),
        "group" => Some(("Group", "匹配组")),
        "shape" => Some(("Shape", "形式")),
        "payouts" => Some(("Payouts", "出款")),
        "credits" => Some(("Bank credits", "银行入账")),
        "row" => Some(("Statement row", "对账单行")),
        _ => None,
    };
    match known {
        Some((en, zh)) => tr(lang, en, zh).to_owned(),
        None => key.to_owned(),
    }
}

/// A field's value for a person: an amount in major units, a time in the
/// zone, a payment of a list by its number and state.
fn value_text(
    key: &str,
    v: Option<&Value>,
    currency: Option<&str>,
    zone: &Zone,
    lang: Lang,
) -> String {
    let Some(v) = v else {
        return "—".into();
    };
    match v {
        Value::Null => "—".into(),
        Value::Bool(b) => tr(
            lang,
            if *b { "yes" } else { "no" },
            if *b { "是" } else { "否" },
        )
        .into(),
        Value::Number(n) => match (n.as_i64(), currency) {
            (Some(minor), Some(code)) if key.ends_with("_minor") => money(minor, code),
            (Some(at), _) if is_time(key) => zone.named(at),
            _ => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::Object(o) => {
                    let mut parts: Vec<String> = Vec::new();
                    // A payment by its number; a payout or a bank credit of
                    // a group by its id or reference, its day and state.
                    for k in ["payment_no", "payout_id", "ref", "day", "status", "state"] {
                        if let Some(v) = o.get(k).and_then(Value::as_str) {
                            parts.push(v.to_owned());
                        }
                    }
                    if let (Some(minor), Some(code)) = (
                        o.get("amount_minor").and_then(Value::as_i64),
                        currency_of(o),
                    ) {
                        parts.push(money(minor, code));
                    }
                    parts.join(" ")
                }
                other => value_text(key, Some(other), currency, zone, lang),
            })
            .collect::<Vec<_>>()
            .join(", "),
        Value::Object(_) => v.to_string(),
    }
}

/// The order fields are listed in; others follow as stored.
const FIELD_ORDER: &[&str] = &[
    "payment_no",
    "order_no",
    "create",
    "status",
    "amount_minor",
    "refund_minor",
    "currency",
    "provider_txn_id",
    "hold_reason",
    "paid_at",
    "effect",
    "then",
    "keep",
    "close",
    "payments",
    "holds_released",
    "payouts",
    "credits",
    "row",
    "group",
    "shape",
];

/// The fields a proposal changes, from its before and after (either may be
/// `null`: a payment to create has no before). Fields only the before has
/// (what the fix leaves alone, the version it saw) are not listed; an
/// after's `difference_minor` is the amount's difference, not a row.
pub fn proposal_rows(before: &Value, after: &Value, zone: &Zone, lang: Lang) -> Vec<FieldRow> {
    let empty = Map::new();
    let (b, a) = (
        before.as_object().unwrap_or(&empty),
        after.as_object().unwrap_or(&empty),
    );
    let mut keys: Vec<&str> = a
        .keys()
        .map(String::as_str)
        .filter(|k| *k != "difference_minor")
        .collect();
    keys.sort_by_key(|k| {
        FIELD_ORDER
            .iter()
            .position(|o| o == k)
            .unwrap_or(usize::MAX)
    });
    let (b_cur, a_cur) = (currency_of(b), currency_of(a).or(currency_of(b)));
    keys.into_iter()
        .map(|key| {
            let (bv, av) = (b.get(key), a.get(key));
            let changed = bv != av;
            let difference = match (
                key.ends_with("_minor"),
                bv.and_then(Value::as_i64),
                av.and_then(Value::as_i64),
                a_cur,
            ) {
                (true, Some(was), Some(will), Some(code)) if b_cur.is_none_or(|c| c == code) => {
                    let diff = a
                        .get("difference_minor")
                        .and_then(Value::as_i64)
                        .unwrap_or(will.saturating_sub(was));
                    let sign = if diff > 0 { "+" } else { "" };
                    format!("{sign}{}", money(diff, code))
                }
                _ if !changed => tr(lang, "unchanged", "不变").to_owned(),
                _ => String::new(),
            };
            FieldRow {
                key: key.to_owned(),
                label: label(key, lang),
                before: value_text(key, bv, b_cur, zone, lang),
                after: value_text(key, av, a_cur, zone, lang),
                difference,
                changed,
            }
        })
        .collect()
}

/// What a proposal will do, in one sentence a supervisor can decide on.
pub fn proposal_sentence(
    kind: FixKind,
    payment_no: Option<&str>,
    before: &Value,
    after: &Value,
    lang: Lang,
) -> String {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    let amount = |v: &Value, key: &str| match (
        v.get(key).and_then(Value::as_i64),
        v.get("currency").and_then(Value::as_str),
    ) {
        (Some(minor), Some(code)) => money(minor, code),
        _ => "—".into(),
    };
    let no = payment_no
        .map(str::to_owned)
        .or_else(|| text(after, "payment_no"))
        .unwrap_or_else(|| "—".into());
    let order = text(after, "order_no")
        .or_else(|| text(before, "order_no"))
        .unwrap_or_else(|| "—".into());
    let status = text(before, "status").unwrap_or_else(|| "—".into());
    let zh = lang == Lang::Zh;
    match kind {
        FixKind::Backfill => {
            let paid = amount(after, "amount_minor");
            let create = after
                .get("create")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            match (create, zh) {
                (true, false) => format!(
                    "Backfill payment {no}: create it for order {order} and mark it paid {paid} as the statement says"
                ),
                (true, true) => {
                    format!("补单 {no}：为订单 {order} 创建支付单，并按账单标记为已支付 {paid}")
                }
                (false, false) => format!(
                    "Backfill payment {no} of order {order}: mark it paid {paid} as the statement says (it is {status} now)"
                ),
                (false, true) => {
                    format!("补单 {no}（订单 {order}）：按账单标记为已支付 {paid}（当前 {status}）")
                }
            }
        }
        FixKind::ClosePayment => {
            let was = amount(before, "amount_minor");
            if zh {
                format!("关闭支付单 {no}（{was}，当前 {status}）：渠道账单中没有这笔交易")
            } else {
                format!(
                    "Close payment {no} ({was}, {status} now): the provider's statement does not have it"
                )
            }
        }
        FixKind::AcceptAmount => {
            let (was, will) = (
                amount(before, "amount_minor"),
                amount(after, "amount_minor"),
            );
            let diff = match (
                after.get("difference_minor").and_then(Value::as_i64),
                after.get("currency").and_then(Value::as_str),
            ) {
                (Some(d), Some(code)) => {
                    format!("{}{}", if d > 0 { "+" } else { "" }, money(d, code))
                }
                _ => "—".into(),
            };
            let pays =
                text(after, "status").as_deref() == Some("SUCCEEDED") && status != "SUCCEEDED";
            match (pays, zh) {
                (false, false) => format!(
                    "Accept the provider's amount for payment {no}: {was} becomes {will} ({diff})"
                ),
                (true, false) => format!(
                    "Accept the provider's amount for payment {no}: {was} becomes {will} ({diff}), and mark it paid as the statement says"
                ),
                (false, true) => {
                    format!("采用渠道金额：支付单 {no} 由 {was} 改为 {will}（{diff}）")
                }
                (true, true) => format!(
                    "采用渠道金额：支付单 {no} 由 {was} 改为 {will}（{diff}），并按账单标记为已支付"
                ),
            }
        }
        FixKind::Merge => {
            let keep = text(after, "keep").unwrap_or_else(|| no.clone());
            let close = after
                .get("close")
                .and_then(Value::as_array)
                .map(|all| {
                    all.iter()
                        .filter_map(|c| c.get("payment_no").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default();
            if zh {
                format!("合并同一笔渠道交易的支付单：保留 {keep}，关闭 {close}")
            } else {
                format!("Merge the payments of one transaction: keep {keep}, close {close}")
            }
        }
        FixKind::ReleaseHold => {
            let hold = text(before, "hold_reason").unwrap_or_else(|| "—".into());
            if zh {
                format!("解除支付单 {no} 的冻结（{hold}）")
            } else {
                format!("Release the hold on payment {no} ({hold})")
            }
        }
        FixKind::AcceptPayment => {
            let paid = amount(before, "amount_minor");
            if zh {
                format!("接受支付单 {no} 的迟到成功：标记为已支付 {paid}，订单 {order} 随之支付")
            } else {
                format!(
                    "Accept the late success of payment {no}: mark it paid {paid} and pay order {order}"
                )
            }
        }
        FixKind::GroupMatch => {
            let list = |key: &str, id: &str| {
                after
                    .get(key)
                    .and_then(Value::as_array)
                    .map(|all| {
                        all.iter()
                            .map(|m| {
                                let name = text(m, id).unwrap_or_default();
                                let day = text(m, "day").unwrap_or_default();
                                format!("{name} {} ({day})", amount(m, "amount_minor"))
                            })
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default()
            };
            let sum = amount(after, "amount_minor");
            if text(after, "shape").as_deref() == Some("PAYMENTS_TO_ROW") {
                let payments = after
                    .get("payments")
                    .and_then(Value::as_array)
                    .map(|all| {
                        all.iter()
                            .map(|m| {
                                let no = text(m, "payment_no").unwrap_or_default();
                                format!("{no} {}", amount(m, "amount_minor"))
                            })
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default();
                let txn = after
                    .get("row")
                    .and_then(|r| text(r, "provider_txn_id"))
                    .unwrap_or_default();
                return if zh {
                    format!(
                        "合单匹配：支付单 {payments} 合计 {sum}，对应对账单行 {txn}；未支付的标记为已支付，解除冻结，各成员工单一并关闭"
                    )
                } else {
                    format!(
                        "Match payments {payments}, together {sum}, to the statement row {txn}: those not yet paid are paid, their holds released, and every member's ticket closes"
                    )
                };
            }
            let (payouts, credits) = (list("payouts", "payout_id"), list("credits", "ref"));
            match (text(after, "shape").as_deref() == Some("ONE_TO_N"), zh) {
                (false, false) => format!(
                    "Match payouts {payouts}, together {sum}, to the bank credit {credits}: the payouts are settled and every member's ticket closes"
                ),
                (false, true) => format!(
                    "合并匹配：出款 {payouts} 合计 {sum}，对应银行入账 {credits}；出款核销，各成员工单一并关闭"
                ),
                (true, false) => format!(
                    "Match payout {payouts} to the bank credits {credits}, together {sum}: the payout is settled and every member's ticket closes"
                ),
                (true, true) => format!(
                    "合并匹配：出款 {payouts} 对应银行入账 {credits}，合计 {sum}；出款核销，各成员工单一并关闭"
                ),
            }
        }
        FixKind::RefundPayment => {
            let refund = amount(after, "refund_minor");
            if zh {
                format!("全额退回支付单 {no}：退款 {refund}，订单 {order} 保持未支付")
            } else {
                format!(
                    "Refund payment {no} in full: {refund} goes back, order {order} stays unpaid"
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shanghai() -> Zone {
        Zone {
            name: "Asia/Shanghai".into(),
            offsets: vec![(0, 8 * 3600)],
        }
    }

    #[test]
    fn a_backfill_reads_as_a_sentence_and_its_fields() {
        // 2026-12-04 09:05 UTC
        let paid_at = 1_796_375_130_000_000_i64;
        let after = json!({
            "payment_no": "PAY1", "order_no": "O1", "create": true, "status": "SUCCEEDED",
            "amount_minor": 19989, "currency": "CNY", "provider_txn_id": "T1", "paid_at": paid_at,
        });
        assert_eq!(
            proposal_sentence(
                FixKind::Backfill,
                Some("PAY1"),
                &Value::Null,
                &after,
                Lang::En
            ),
            "Backfill payment PAY1: create it for order O1 and mark it paid 199.89 CNY as the statement says"
        );
        assert_eq!(
            proposal_sentence(
                FixKind::Backfill,
                Some("PAY1"),
                &Value::Null,
                &after,
                Lang::Zh
            ),
            "补单 PAY1：为订单 O1 创建支付单，并按账单标记为已支付 199.89 CNY"
        );
        let rows = proposal_rows(&Value::Null, &after, &shanghai(), Lang::En);
        let keys: Vec<&str> = rows.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "payment_no",
                "order_no",
                "create",
                "status",
                "amount_minor",
                "currency",
                "provider_txn_id",
                "paid_at"
            ]
        );
        let amount = &rows[4];
        assert_eq!(
            (
                amount.label.as_str(),
                amount.before.as_str(),
                amount.after.as_str()
            ),
            ("Amount", "—", "199.89 CNY")
        );
        assert_eq!(rows[7].after, "2026-12-04 17:05 Asia/Shanghai");
        assert!(rows.iter().all(|r| r.changed));
    }

    #[test]
    fn an_accepted_amount_shows_its_difference() {
        let before = json!({
            "payment_no": "PAY2", "order_no": "O2", "status": "SUCCEEDED", "amount_minor": 1500,
            "currency": "CNY", "provider_txn_id": "T2", "hold_reason": null, "version": 3,
        });
        let after = json!({
            "amount_minor": 1400, "difference_minor": -100, "currency": "CNY",
            "status": "SUCCEEDED", "paid_at": null,
        });
        assert_eq!(
            proposal_sentence(
                FixKind::AcceptAmount,
                Some("PAY2"),
                &before,
                &after,
                Lang::En
            ),
            "Accept the provider's amount for payment PAY2: 15.00 CNY becomes 14.00 CNY (-1.00 CNY)"
        );
        let rows = proposal_rows(&before, &after, &Zone::default(), Lang::Zh);
        let amount = rows.iter().find(|r| r.key == "amount_minor").unwrap();
        assert_eq!(
            (
                amount.label.as_str(),
                amount.before.as_str(),
                amount.after.as_str(),
                amount.difference.as_str()
            ),
            ("金额", "15.00 CNY", "14.00 CNY", "-1.00 CNY")
        );
        let status = rows.iter().find(|r| r.key == "status").unwrap();
        assert_eq!(
            (status.changed, status.difference.as_str()),
            (false, "不变")
        );
        assert!(
            rows.iter()
                .all(|r| r.key != "difference_minor" && r.key != "version")
        );
    }

    #[test]
    fn a_merge_names_the_payments() {
        let before = json!({ "payments": [
            { "payment_no": "PAY3", "status": "SUCCEEDED", "amount_minor": 123456, "currency": "JPY" },
            { "payment_no": "PAY4", "status": "PENDING", "amount_minor": 123456, "currency": "JPY" },
        ]});
        let after = json!({ "keep": "PAY3", "close": [{ "payment_no": "PAY4", "version": 1 }], "holds_released": true });
        assert_eq!(
            proposal_sentence(FixKind::Merge, Some("PAY3"), &before, &after, Lang::En),
            "Merge the payments of one transaction: keep PAY3, close PAY4"
        );
        let rows = proposal_rows(&before, &after, &Zone::default(), Lang::En);
        assert_eq!(
            rows.iter().map(|r| r.key.as_str()).collect::<Vec<_>>(),
            ["keep", "close", "holds_released"]
        );
        assert_eq!(rows[1].after, "PAY4");
        assert_eq!(rows[2].after, "yes");
    }

    #[test]
    fn audit_json_reads_in_major_units_and_the_zone() {
        let text = r#"{"amount_minor":123456,"currency":"CNY","paid_at":1796375130000000,"status":"SUCCEEDED","payments":[{"amount_minor":5,"currency":"KWD"}]}"#;
        let shown = readable_json(text, &shanghai());
        let v: Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(v["amount"], "1,234.56 CNY");
        assert_eq!(v["paid_at"], "2026-12-04 17:05 Asia/Shanghai");
        assert_eq!(v["payments"][0]["amount"], "0.005 KWD");
        assert_eq!(v["status"], "SUCCEEDED");
        assert!(shown.contains('\n'), "pretty-printed: {shown}");
        // An object without a currency keeps its minor units as they are.
        let v: Value =
            serde_json::from_str(&readable_json(r#"{"refund_minor":9}"#, &Zone::default()))
                .unwrap();
        assert_eq!(v["refund_minor"], 9);
        assert_eq!(readable_json("not json", &Zone::default()), "not json");
    }

    #[test]
    fn a_combined_row_reads_as_its_payments_and_the_row() {
        let pay = |no: &str, minor: i64| json!({ "payment_no": no, "amount_minor": minor, "currency": "CNY", "pay": true });
        let after = json!({
            "group": "G1", "shape": "PAYMENTS_TO_ROW", "amount_minor": 10_000, "currency": "CNY",
            "payments": [pay("PAYA", 6_000), pay("PAYB", 4_000)],
            "row": { "run_id": "RUN1", "line_no": 2, "provider_txn_id": "4200001", "day": "2026-12-05" },
        });
        assert_eq!(
            proposal_sentence(FixKind::GroupMatch, None, &Value::Null, &after, Lang::En),
            "Match payments PAYA 60.00 CNY, PAYB 40.00 CNY, together 100.00 CNY, to the statement row 4200001: those not yet paid are paid, their holds released, and every member's ticket closes"
        );
    }

    #[test]
    fn a_group_match_reads_as_its_members_and_sum() {
        let member = |id: &str, minor: i64| json!({ "payout_id": id, "amount_minor": minor, "currency": "EUR", "day": "2026-12-03" });
        let after = json!({
            "group": "G1", "shape": "N_TO_ONE", "amount_minor": 900_000, "currency": "EUR",
            "payouts": [member("po_A", 300_000), member("po_B", 600_000)],
            "credits": [{ "ref": "E2E-1", "amount_minor": 900_000, "currency": "EUR", "day": "2026-12-03" }],
        });
        let sentence = proposal_sentence(FixKind::GroupMatch, None, &Value::Null, &after, Lang::En);
        assert_eq!(
            sentence,
            "Match payouts po_A 3,000.00 EUR (2026-12-03), po_B 6,000.00 EUR (2026-12-03), together 9,000.00 EUR, \
             to the bank credit E2E-1 9,000.00 EUR (2026-12-03): the payouts are settled and every member's ticket closes"
        );
        let rows = proposal_rows(&Value::Null, &after, &shanghai(), Lang::En);
        let payouts = rows.iter().find(|r| r.key == "payouts").unwrap();
        assert_eq!(
            payouts.after,
            "po_A 2026-12-03 3,000.00 EUR, po_B 2026-12-03 6,000.00 EUR"
        );
        assert_eq!(rows[0].key, "amount_minor", "the sum first");
    }
}
