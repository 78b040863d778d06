//! WeChat Pay's trade bill, type ALL: every field prefixed with a
//! backtick; rows, then `总交易单数,…` and one summary row (rows, settled
//! total, refunded total). Times are Beijing time; a REFUND row is a
//! refund, the others payments at their 订单金额.

use crate::domain::{Currency, Money};
use crate::statement::csv::CsvFields;
use crate::statement::time::local_time;
use crate::statement::{
    BillFormat, Check, Chunk, Format, Progress, RowKind, RowRef, add, cny, money, present,
};

/// WeChat Pay's trade bill format (type ALL).
pub const FORMAT: Format = Format::new("wechatpay ALL", || Box::new(WechatBill::default()));

#[derive(Default)]
struct WechatBill {
    /// Header and summary read so far.
    progress: Progress,
    rows: i64,
    /// 应结订单金额 and 退款金额, summed in minor units.
    settled: i64,
    refunded: i64,
    checks: Vec<Check>,
    csv: CsvFields,
}

impl BillFormat for WechatBill {
    fn line(&mut self, text: &str, line_no: i64, out: &mut Chunk) -> Result<bool, String> {
        // Every value starts with a backtick, and values are not quoted: a
        // comma inside one (a product name) is told apart from a separator
        // by the backtick that follows a separator.
        let f: Vec<&str> = if let Some(rest) = text.trim_start().strip_prefix('`') {
            rest.split(",`").map(str::trim).collect()
        } else {
            self.csv.split(text).iter().map(str::trim).collect()
        };
        if !self.progress.header {
            if f.first().copied() != Some("交易时间") || f.len() < 27 {
                return Err("expected the WeChat Pay bill header (交易时间,公众账号ID,…)".into());
            }
            self.progress.header = true;
            return Ok(false);
        }
        if f.first().copied() == Some("总交易单数") {
            self.progress.in_summary = true;
            return Ok(false);
        }
        if self.progress.in_summary {
            if f.len() < 3 {
                return Err("unreadable summary row".into());
            }
            let count: i64 = f[0]
                .parse()
                .map_err(|_| format!("总交易单数 {:?} is not a number", f[0]))?;
            let settled = money(f[1], cny())?.minor;
            let refunded = money(f[2], cny())?.minor;
            self.checks
                .push(Check::new("总交易单数 (rows)", count, self.rows));
            self.checks
                .push(Check::new("应结订单总金额 (minor)", settled, self.settled));
            self.checks
                .push(Check::new("退款总金额 (minor)", refunded, self.refunded));
            self.progress.in_summary = false;
            self.progress.summary = true;
            return Ok(false);
        }
        if self.progress.summary {
            return Err("a row after the summary".into());
        }
        if f.len() < 27 {
            return Err(format!("expected 27 fields, found {}", f.len()));
        }
        let currency = Currency::parse(if f[11].is_empty() { "CNY" } else { f[11] })
            .map_err(|e| e.to_string())?;
        let settle = money(f[12], currency)?;
        let refund_amount = if f[16].is_empty() {
            Money::new(0, currency)
        } else {
            money(f[16], currency)?
        };
        // Checked, as the sandbox's: no sum that wraps.
        let settled = add(self.settled, settle.minor)?;
        self.refunded = add(self.refunded, refund_amount.minor)?;
        self.settled = settled;
        self.rows += 1;
        let occurred_at = local_time(f[0], 8);
        let state = f[9];
        let row = if state == "REFUND" {
            RowRef {
                line_no,
                kind: RowKind::Refund,
                provider_txn_id: present(f[5]),
                payment_no: present(f[6]),
                provider_refund_id: present(f[14]),
                refund_no: present(f[15]),
                money: refund_amount,
                status: if f[19] == "SUCCESS" {
                    "SUCCEEDED"
                } else {
                    f[19]
                },
                occurred_at,
            }
        } else {
            RowRef {
                line_no,
                kind: RowKind::Payment,
                provider_txn_id: present(f[5]),
                payment_no: present(f[6]),
                provider_refund_id: None,
                refund_no: None,
                // 订单金额: what the order cost, before vouchers.
                money: money(f[24], currency)?,
                status: if state == "SUCCESS" {
                    "SUCCEEDED"
                } else {
                    state
                },
                occurred_at,
            }
        };
        out.push(row);
        Ok(true)
    }

    fn progress(&self) -> Progress {
        self.progress
    }

    fn checks(&mut self) -> Vec<Check> {
        std::mem::take(&mut self.checks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statement::read_all;

    const WECHAT: &str = "交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,应结订单金额,代金券金额,微信退款单号,商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,费率备注\n\
`2026-11-30 10:00:01,`wx01,`1900000001,`0,`,`4200001,`PAYA,`oUser,`NATIVE,`SUCCESS,`OTHERS,`CNY,`199.00,`0.00,`0,`0,`0.00,`0.00,`,`,`T恤, 白色,`,`1.19,`0.60%,`199.00,`0.00,`\n\
`2026-11-30 11:00:00,`wx01,`1900000001,`0,`,`4200001,`PAYA,`oUser,`NATIVE,`REFUND,`OTHERS,`CNY,`0.00,`0.00,`50300001,`RFDA,`50.00,`0.00,`ORIGINAL,`SUCCESS,`T恤,`,`-0.30,`0.60%,`0.00,`50.00,`\n\
总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额\n\
`2,`199.00,`50.00,`0.00,`0.89,`199.00,`50.00\n";

    #[test]
    fn a_wechat_bill_reads_backticked_fields_payments_refunds_and_its_summary() {
        let (rows, checks) = read_all(FORMAT, WECHAT.as_bytes()).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].kind, RowKind::Payment);
        assert_eq!(rows[0].provider_txn_id.as_deref(), Some("4200001"));
        assert_eq!(rows[0].payment_no.as_deref(), Some("PAYA"));
        assert_eq!(rows[0].money.minor, 19900);
        assert_eq!(rows[0].status, "SUCCEEDED");
        assert_eq!(rows[1].kind, RowKind::Refund);
        assert_eq!(rows[1].refund_no.as_deref(), Some("RFDA"));
        assert_eq!(rows[1].money.minor, 5000);
        assert!(checks.iter().all(|c| c.stated == c.read), "{checks:?}");
        // A bill whose summary disagrees with its rows.
        let short = WECHAT.replace("`2,`199.00", "`3,`199.00");
        let (_, checks) = read_all(FORMAT, short.as_bytes()).unwrap();
        assert!(checks.iter().any(|c| c.stated == 3 && c.read == 2));
        // Cut before the summary: incomplete.
        let cut: String = WECHAT.lines().take(3).map(|l| format!("{l}\n")).collect();
        let err = read_all(FORMAT, cut.as_bytes()).unwrap_err();
        assert!(err.reason.contains("no summary"), "{err}");
        // A malformed amount names its line.
        let bad = WECHAT.replace("`199.00,`0.00,`0,`0", "`19x.00,`0.00,`0,`0");
        let err = read_all(FORMAT, bad.as_bytes()).unwrap_err();
        assert_eq!(err.line, 2, "{err}");
    }

    /// Amounts whose sum passes i64 are refused at the line that passes
    /// it, as the sandbox's are.
    #[test]
    fn amounts_that_sum_past_i64_refuse_their_line() {
        let big = "`92233720368547758.07,`0.00,`0,`0,`0.00";
        let wechat = WECHAT
            .replacen("`199.00,`0.00,`0,`0,`0.00", big, 1)
            .replacen("`0.00,`0.00,`50300001", "`0.01,`0.00,`50300001", 1);
        let err = read_all(FORMAT, wechat.as_bytes()).unwrap_err();
        assert_eq!(err.line, 3, "{err}");
    }
}
