//! Alipay's 账务明细 (`alipay.data.dataservice.bill.downloadurl.query` with
//! bill_type=signcustomer): every movement of the merchant's Alipay
//! account on the day. `#支付宝账务明细查询`, `#账号：[…]`, the dates and a
//! `#----账务明细列表----` line, a header (账务流水号,业务流水号,商户订单号,
//! 商品名称,发生时间,对方账号,收入金额（+元）,支出金额（-元）,账户余额（元）,
//! 交易渠道,业务类型,备注 — later exports add columns such as 业务描述), rows
//! whose ids may end in a tab, newest first, then `#支出合计：N笔，共X元` and
//! `#收入合计：N笔，共Y元`. GBK as Alipay hands it out; UTF-8 when saved
//! again. Layout: tests/fixtures/bills/SOURCES.md.

use crate::domain::{Money, quote};
use crate::providers::balance::{
    BalanceBill, Movement, MovementKind, agree, day_of, running, yuan,
};

struct Columns {
    flow: usize,
    business: usize,
    time: usize,
    income: usize,
    expense: usize,
    balance: usize,
    kind: usize,
}

fn columns(header: &[String]) -> Result<Columns, String> {
    let find = |names: &[&str]| {
        header
            .iter()
            .position(|h| names.contains(&h.trim()))
            .ok_or_else(|| {
                format!(
                    "an Alipay 账务明细 of a layout Reckon does not know ({} columns, none named {})",
                    header.len(),
                    names[0]
                )
            })
    };
    Ok(Columns {
        flow: find(&["账务流水号"])?,
        business: find(&["业务流水号"])?,
        time: find(&["发生时间"])?,
        income: find(&["收入金额（+元）", "收入金额(+元)", "收入金额"])?,
        expense: find(&["支出金额（-元）", "支出金额(-元)", "支出金额"])?,
        balance: find(&["账户余额（元）", "账户余额(元)", "账户余额"])?,
        kind: find(&["业务类型"])?,
    })
}

/// What a movement is, by its 业务类型.
fn kind_of(business_type: &str) -> MovementKind {
    match business_type {
        "在线支付" | "交易付款" | "交易收款" | "交易" => MovementKind::PaymentIn,
        "交易退款" | "退款" => MovementKind::RefundOut,
        "收费" | "服务费" => MovementKind::Fee,
        "提现" => MovementKind::Withdrawal,
        _ => MovementKind::Other,
    }
}

/// `#支出合计：3笔，共-528.66元` → (3, 52866): the count before 笔 and the
/// amount after 共, its sign dropped (支出 is written either way).
fn total(rest: &str, what: &str) -> Result<(i64, i64), String> {
    let rest = rest.trim_start_matches([':', '：']);
    let refused = || format!("the {what} line {} does not read", quote(rest));
    let (n, after) = rest.split_once('笔').ok_or_else(refused)?;
    let amount = after
        .split_once('共')
        .and_then(|(_, a)| a.split_once('元'))
        .map(|(a, _)| a)
        .ok_or_else(refused)?;
    let n: i64 = n.trim().parse().map_err(|_| refused())?;
    Ok((n, yuan(amount, what)?.abs()))
}

/// The text of the bill: UTF-8 (with or without a byte-order mark) when it
/// is valid UTF-8, GBK otherwise (Alipay's own encoding; Chinese in GBK is
/// next to never valid UTF-8).
fn decode(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.trim_start_matches('\u{feff}').to_owned(),
        Err(_) => encoding_rs::GBK.decode(bytes).0.into_owned(),
    }
}

/// Reads a whole 账务明细, or says why it is refused (with the line).
pub fn read(bytes: &[u8]) -> Result<BalanceBill, String> {
    let text = decode(bytes);
    let mut titled = false;
    let mut at: Option<Columns> = None;
    let mut movements = Vec::new();
    let mut balances = Vec::new();
    let (mut income_n, mut income, mut expense_n, mut expense) = (0i64, 0i64, 0i64, 0i64);
    let (mut stated_income, mut stated_expense) = (None, None);
    for (i, raw) in text.lines().enumerate() {
        let line_no = i as i64 + 1;
        let line = raw.trim_end_matches('\r');
        if line.trim().trim_matches(',').is_empty() {
            continue;
        }
        let at_line = |e: String| format!("line {line_no}: {e}");
        if let Some(comment) = line.strip_prefix('#') {
            // A spreadsheet saving the file pads every line with commas.
            let comment = comment.trim().trim_end_matches(',').trim();
            if !titled {
                if comment.starts_with("支付宝账务明细查询") {
                    titled = true;
                    continue;
                }
                return Err(at_line(if comment.starts_with("支付宝业务明细查询") {
                    "this is Alipay's trade bill (业务明细), not its 账务明细: download the bill with bill_type=signcustomer".into()
                } else {
                    "not an Alipay 账务明细: its first line should be #支付宝账务明细查询".into()
                }));
            }
            if let Some(rest) = comment.strip_prefix("支出合计") {
                stated_expense = Some(total(rest, "支出合计").map_err(at_line)?);
            } else if let Some(rest) = comment.strip_prefix("收入合计") {
                stated_income = Some(total(rest, "收入合计").map_err(at_line)?);
            }
            continue;
        }
        if !titled {
            return Err(at_line(
                "not an Alipay 账务明细: its first line should be #支付宝账务明细查询".into(),
            ));
        }
        let f = crate::statement::csv::split_owned(line);
        if at.is_none() {
            at = Some(columns(&f).map_err(at_line)?);
            continue;
        }
        let Some(c) = at.as_ref() else { continue };
        if stated_income.is_some() || stated_expense.is_some() {
            return Err(at_line("a row after the totals".into()));
        }
        let field = |i: usize| f.get(i).map_or("", |v| v.trim());
        let width = [
            c.flow, c.business, c.time, c.income, c.expense, c.balance, c.kind,
        ]
        .into_iter()
        .max()
        .unwrap_or(0);
        if f.len() <= width {
            return Err(at_line(format!(
                "expected at least {} fields, found {}",
                width + 1,
                f.len()
            )));
        }
        let amount = |i: usize, what: &str| match field(i) {
            "" => Ok(0),
            v => yuan(v, what).map(i64::abs),
        };
        let inward = amount(c.income, "收入金额").map_err(at_line)?;
        let outward = amount(c.expense, "支出金额").map_err(at_line)?;
        if inward != 0 && outward != 0 {
            return Err(at_line("both 收入金额 and 支出金额 are stated".into()));
        }
        if inward != 0 {
            income_n += 1;
            income = crate::statement::add(income, inward).map_err(at_line)?;
        } else {
            expense_n += 1;
            expense = crate::statement::add(expense, outward).map_err(at_line)?;
        }
        let signed = inward - outward;
        let balance = yuan(field(c.balance), "账户余额").map_err(at_line)?;
        balances.push((line_no, signed, balance));
        let flow_id = crate::statement::present(field(c.flow))
            .ok_or_else(|| at_line("no 账务流水号".into()))?;
        movements.push(Movement {
            line_no,
            kind: kind_of(field(c.kind)),
            money: Money::new(signed, crate::statement::cny()),
            flow_id: flow_id.to_owned(),
            business_id: crate::statement::present(field(c.business)).map(str::to_owned),
            booked_on: day_of(field(c.time)).map_err(at_line)?,
            label: field(c.kind).to_owned(),
        });
    }
    if at.is_none() {
        return Err("the 账务明细 has no header (账务流水号,业务流水号,…)".into());
    }
    let (Some((s_income_n, s_income)), Some((s_expense_n, s_expense))) =
        (stated_income, stated_expense)
    else {
        return Err(
            "the 账务明细 has no #收入合计 and #支出合计 lines: it was cut, nothing was read"
                .into(),
        );
    };
    running(&balances)?;
    agree("收入合计 (rows)", s_income_n, income_n, false)?;
    agree("收入合计", s_income, income, true)?;
    agree("支出合计 (rows)", s_expense_n, expense_n, false)?;
    agree("支出合计", s_expense, expense, true)?;
    Ok(BalanceBill {
        bill_type: "signcustomer".into(),
        movements,
        stated: vec![
            ("收入合计".into(), s_income),
            ("支出合计".into(), s_expense),
        ],
        sha256: hex::encode(<sha2::Sha256 as sha2::Digest>::digest(bytes)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statement::fixture;

    #[test]
    fn the_published_layout_reads_in_gbk_newest_first_with_its_totals() {
        let bill = read(&fixture("alipay_account_gbk.csv")).unwrap();
        let kinds: Vec<MovementKind> = bill.movements.iter().map(|m| m.kind).collect();
        assert_eq!(
            kinds,
            [
                MovementKind::Withdrawal,
                MovementKind::Fee,
                MovementKind::RefundOut,
                MovementKind::Fee,
                MovementKind::PaymentIn,
                MovementKind::Fee,
                MovementKind::PaymentIn,
            ]
        );
        let s = bill.sums()["CNY"];
        assert_eq!(s.payments_in, 8_800 + 4_500);
        assert_eq!(s.fees, 53 + 27 - 12);
        assert_eq!(s.refunds_out, 2_000);
        // What the day's 业务明细 nets: 133.00 - 20.00 - 0.68.
        assert_eq!(s.trade_net, 11_232);
        assert_eq!((s.withdrawn, s.withdrawals), (30_000, 1));
        assert_eq!(bill.movements[0].flow_id, "20261130000000000107");
        assert_eq!(bill.movements[0].booked_on, "2026-11-30");
    }

    #[test]
    fn a_trade_bill_a_cut_bill_and_wrong_totals_are_refused() {
        let good = decode(&fixture("alipay_account_gbk.csv"));
        let err = read(&fixture("alipay_detail_gbk.csv")).unwrap_err();
        assert!(err.contains("bill_type=signcustomer"), "{err}");
        let cut: String = good
            .lines()
            .take_while(|l| !l.starts_with("#支出合计"))
            .map(|l| format!("{l}\n"))
            .collect();
        let err = read(cut.as_bytes()).unwrap_err();
        assert!(err.contains("it was cut"), "{err}");
        let wrong = good.replace("共133.12元", "共134.12元");
        assert_ne!(wrong, good);
        let err = read(wrong.as_bytes()).unwrap_err();
        assert!(err.contains("收入合计"), "{err}");
        // A fee row dropped: the balances no longer follow.
        let dropped: String = good
            .lines()
            .filter(|l| !l.starts_with("20261130000000000102"))
            .map(|l| format!("{l}\n"))
            .collect();
        let err = read(dropped.as_bytes()).unwrap_err();
        assert!(err.contains("balance"), "{err}");
    }
}
