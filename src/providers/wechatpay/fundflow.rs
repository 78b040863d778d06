//! WeChat Pay's fund-flow bill (资金账单, `GET /v3/bill/fundflowbill`,
//! account_type BASIC): every movement of the merchant's basic account on
//! the day. A header 记账时间,微信支付业务单号,资金流水单号,业务名称,业务类型,
//! 收支类型,收支金额（元）,账户结余（元）,资金变更提交申请人,备注,业务凭证号
//! (the parentheses full- or half-width), rows whose every value starts
//! with a backtick, then 资金流水总笔数,收入笔数,收入金额,支出笔数,支出金额 and
//! one row of those totals. Layout: tests/fixtures/bills/SOURCES.md.

use crate::domain::{Money, quote};
use crate::providers::balance::{BalanceBill, Movement, MovementKind, agree, count, day_of, yuan};

/// Where the columns Reckon reads are.
struct Columns {
    width: usize,
    time: usize,
    business: usize,
    flow: usize,
    kind: usize,
    direction: usize,
    amount: usize,
    balance: usize,
}

fn columns(header: &[&str]) -> Result<Columns, String> {
    if header.first() != Some(&"记账时间") {
        return Err(
            "not a WeChat Pay fund-flow bill: its first line should be the header 记账时间,微信支付业务单号,资金流水单号,…".into(),
        );
    }
    let find = |names: &[&str]| {
        header
            .iter()
            .position(|h| names.contains(h))
            .ok_or_else(|| {
                format!(
                    "a WeChat Pay fund-flow bill of a layout Reckon does not know ({} columns, none named {})",
                    header.len(),
                    names[0]
                )
            })
    };
    Ok(Columns {
        width: header.len(),
        time: find(&["记账时间"])?,
        business: find(&["微信支付业务单号"])?,
        flow: find(&["资金流水单号"])?,
        kind: find(&["业务类型"])?,
        direction: find(&["收支类型"])?,
        amount: find(&["收支金额（元）", "收支金额(元)"])?,
        balance: find(&["账户结余（元）", "账户结余(元)"])?,
    })
}

/// A line's values: backticked ones split at each `,` + backtick (a comma
/// inside a value is not followed by one), plain ones (the headers) at
/// each comma.
fn fields(line: &str) -> Vec<&str> {
    match line.strip_prefix('`') {
        Some(rest) => rest.split(",`").map(str::trim).collect(),
        None => line
            .split(',')
            .map(|f| f.trim().trim_matches('`'))
            .collect(),
    }
}

/// What a movement is, by its 业务类型.
fn kind_of(business_type: &str) -> MovementKind {
    match business_type {
        "交易" => MovementKind::PaymentIn,
        "退款" => MovementKind::RefundOut,
        "提现" => MovementKind::Withdrawal,
        t if t.contains("手续费") => MovementKind::Fee,
        _ => MovementKind::Other,
    }
}

/// Reads a whole fund-flow bill, or says why it is refused (with the line).
pub fn read(bytes: &[u8]) -> Result<BalanceBill, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        format!(
            "the fund-flow bill is not UTF-8 (at byte {})",
            e.valid_up_to()
        )
    })?;
    let text = text.trim_start_matches('\u{feff}');
    let mut at: Option<Columns> = None;
    let mut movements = Vec::new();
    let mut balances = Vec::new();
    let (mut income_n, mut income, mut expense_n, mut expense) = (0i64, 0i64, 0i64, 0i64);
    let mut in_summary = false;
    let mut stated = None;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i as i64 + 1;
        let line = raw.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let at_line = |e: String| format!("line {line_no}: {e}");
        let f = fields(line);
        if at.is_none() {
            at = Some(columns(&f).map_err(at_line)?);
            continue;
        }
        let Some(c) = at.as_ref() else { continue };
        if stated.is_some() {
            return Err(at_line("a line after the summary".into()));
        }
        if f.first() == Some(&"资金流水总笔数") {
            in_summary = true;
            continue;
        }
        if in_summary {
            if f.len() < 5 {
                return Err(at_line("an unreadable summary row".into()));
            }
            stated = Some([
                count(f[0], "资金流水总笔数").map_err(at_line)?,
                count(f[1], "收入笔数").map_err(at_line)?,
                yuan(f[2], "收入金额").map_err(at_line)?,
                count(f[3], "支出笔数").map_err(at_line)?,
                yuan(f[4], "支出金额").map_err(at_line)?,
            ]);
            continue;
        }
        if f.len() != c.width {
            return Err(at_line(format!(
                "expected {} fields, found {}",
                c.width,
                f.len()
            )));
        }
        let amount = yuan(f[c.amount], "收支金额").map_err(at_line)?;
        if amount < 0 {
            return Err(at_line(format!(
                "收支金额 {} is negative: the direction is 收支类型's",
                quote(f[c.amount])
            )));
        }
        let signed = match f[c.direction] {
            "收入" => {
                income_n += 1;
                income = crate::statement::add(income, amount).map_err(at_line)?;
                amount
            }
            "支出" => {
                expense_n += 1;
                expense = crate::statement::add(expense, amount).map_err(at_line)?;
                -amount
            }
            other => {
                return Err(at_line(format!(
                    "收支类型 {} is neither 收入 nor 支出",
                    quote(other)
                )));
            }
        };
        let balance = yuan(f[c.balance], "账户结余").map_err(at_line)?;
        balances.push((line_no, signed, balance));
        let flow_id = crate::statement::present(f[c.flow])
            .ok_or_else(|| at_line("no 资金流水单号".into()))?;
        movements.push(Movement {
            line_no,
            kind: kind_of(f[c.kind]),
            money: Money::new(signed, crate::statement::cny()),
            flow_id: flow_id.to_owned(),
            business_id: crate::statement::present(f[c.business]).map(str::to_owned),
            booked_on: day_of(f[c.time]).map_err(at_line)?,
            label: f[c.kind].to_owned(),
        });
    }
    if at.is_none() {
        return Err("the fund-flow bill is empty".into());
    }
    let Some([total_n, s_income_n, s_income, s_expense_n, s_expense]) = stated else {
        return Err(
            "the fund-flow bill has no summary (资金流水总笔数,…): it was cut, nothing was read"
                .into(),
        );
    };
    crate::providers::balance::running(&balances)?;
    agree("资金流水总笔数", total_n, movements.len() as i64, false)?;
    agree("收入笔数", s_income_n, income_n, false)?;
    agree("收入金额", s_income, income, true)?;
    agree("支出笔数", s_expense_n, expense_n, false)?;
    agree("支出金额", s_expense, expense, true)?;
    Ok(BalanceBill {
        bill_type: "BASIC fund flow".into(),
        movements,
        stated: vec![
            ("资金流水总笔数".into(), total_n),
            ("收入金额".into(), s_income),
            ("支出金额".into(), s_expense),
        ],
        sha256: hex::encode(<sha2::Sha256 as sha2::Digest>::digest(bytes)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statement::fixture;

    #[test]
    fn the_published_layout_reads_each_movement_and_its_totals() {
        let bill = read(&fixture("wechatpay_fundflow_day.csv")).unwrap();
        let kinds: Vec<MovementKind> = bill.movements.iter().map(|m| m.kind).collect();
        assert_eq!(
            kinds,
            [
                MovementKind::PaymentIn,
                MovementKind::Fee,
                MovementKind::RefundOut,
                MovementKind::PaymentIn,
                MovementKind::Fee,
                MovementKind::Withdrawal,
            ]
        );
        let s = bill.sums()["CNY"];
        assert_eq!(s.payments_in, 12_800 + 990);
        assert_eq!(s.fees, 77 + 6);
        // What the trade bill of the day nets: 137.90 - 28.00 - 0.66.
        assert_eq!(s.trade_net, 10_924);
        assert_eq!(s.refunds_out, 2_783);
        assert_eq!(s.withdrawn, 50_000);
        assert_eq!(bill.movements[5].flow_id, "1900000109202611300000000106");
        // The older one-row refund bill reads as well.
        let old = read(&fixture("wechatpay_fundflow.csv")).unwrap();
        assert_eq!(old.movements[0].kind, MovementKind::RefundOut);
    }

    #[test]
    fn a_bill_whose_totals_or_balances_disagree_is_refused() {
        let good = String::from_utf8(fixture("wechatpay_fundflow_day.csv")).unwrap();
        // A fee row dropped: the count, the expense total and the running
        // balance all tell.
        let cut: String = good
            .lines()
            .filter(|l| !l.contains("1900000109202611300000000102"))
            .map(|l| format!("{l}\n"))
            .collect();
        let err = read(cut.as_bytes()).unwrap_err();
        assert!(err.contains("balance"), "{err}");
        // No summary.
        let no_summary: String = good
            .lines()
            .take_while(|l| !l.starts_with("资金流水总笔数"))
            .map(|l| format!("{l}\n"))
            .collect();
        let err = read(no_summary.as_bytes()).unwrap_err();
        assert!(err.contains("no summary"), "{err}");
        // A summary stating another total.
        let wrong = good.replace("`4.0,`528.66", "`4.0,`529.66");
        assert_ne!(wrong, good);
        let err = read(wrong.as_bytes()).unwrap_err();
        assert!(err.contains("支出金额"), "{err}");
        // A malformed amount names its line.
        let bad = good.replacen("`128.00", "`12x.00", 1);
        let err = read(bad.as_bytes()).unwrap_err();
        assert!(err.starts_with("line 2:"), "{err}");
        // A trade bill is not a fund-flow bill.
        let err = read(&fixture("wechatpay_all.csv")).unwrap_err();
        assert!(err.contains("not a WeChat Pay fund-flow bill"), "{err}");
    }
}
