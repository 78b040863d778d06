//! Alipay's 业务明细 CSV, in GBK: `#` lines around the table, a header,
//! rows whose ids may end in a tab, refunds as 退款 with negative amounts,
//! and `#交易合计：N笔` / `#退款合计：M笔` totals. Times are Beijing time.

use crate::statement::csv::CsvFields;
use crate::statement::time::local_time;
use crate::statement::{
    BillFormat, Check, Chunk, Format, Progress, RowKind, RowRef, cny, money, present,
};

/// Alipay's 业务明细 format.
pub const FORMAT: Format = Format::new("alipay 业务明细", || Box::new(AlipayBill::default()));

#[derive(Default)]
struct AlipayBill {
    /// Header and summary read so far.
    progress: Progress,
    payment_rows: i64,
    refund_rows: i64,
    checks: Vec<Check>,
    csv: CsvFields,
}

impl BillFormat for AlipayBill {
    fn encoding(&self) -> &'static encoding_rs::Encoding {
        encoding_rs::GBK
    }

    fn line(&mut self, text: &str, line_no: i64, out: &mut Chunk) -> Result<bool, String> {
        if let Some(comment) = text.strip_prefix('#') {
            let count = |prefix: &str| -> Option<i64> {
                let rest = comment.trim().strip_prefix(prefix)?;
                let rest = rest.trim_start_matches([':', '：']);
                let n: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
                n.parse().ok()
            };
            if let Some(n) = count("交易合计") {
                self.checks
                    .push(Check::new("交易合计 (payment rows)", n, self.payment_rows));
                self.progress.summary = true;
            } else if let Some(n) = count("退款合计") {
                self.checks
                    .push(Check::new("退款合计 (refund rows)", n, self.refund_rows));
            }
            return Ok(false);
        }
        let split = self.csv.split(text);
        let f = |i: usize| split.get(i).trim();
        if !self.progress.header {
            if f(0) != "支付宝交易号" || split.len() < 25 {
                return Err(
                    "expected the Alipay header (支付宝交易号,商户订单号,业务类型,…)".into(),
                );
            }
            self.progress.header = true;
            return Ok(false);
        }
        if self.progress.summary {
            return Err("a row after the totals".into());
        }
        if split.len() < 25 {
            return Err(format!("expected 25 fields, found {}", split.len()));
        }
        let amount = money(f(11), cny())?;
        let occurred_at = local_time(f(5), 8).or_else(|| local_time(f(4), 8));
        let row = match f(2) {
            "交易" => {
                self.payment_rows += 1;
                RowRef {
                    line_no,
                    kind: RowKind::Payment,
                    provider_txn_id: present(f(0)),
                    payment_no: present(f(1)),
                    provider_refund_id: None,
                    refund_no: None,
                    money: amount,
                    status: "SUCCEEDED",
                    occurred_at,
                }
            }
            "退款" => {
                self.refund_rows += 1;
                RowRef {
                    line_no,
                    kind: RowKind::Refund,
                    provider_txn_id: present(f(0)),
                    payment_no: present(f(1)),
                    provider_refund_id: None,
                    refund_no: present(f(21)),
                    money: amount,
                    status: "SUCCEEDED",
                    occurred_at,
                }
            }
            other => return Err(format!("unknown 业务类型 {other:?}")),
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

    fn alipay_bytes() -> Vec<u8> {
        let text = "#支付宝业务明细查询\n#账号：[20880000000000010156]\n#起始日期：[2026年11月30日 00:00:00]   终止日期：[2026年12月01日 00:00:00]\n#-----------------------------------------业务明细列表----------------------------------------\n\
支付宝交易号,商户订单号,业务类型,商品名称,创建时间,完成时间,门店编号,门店名称,操作员,终端号,对方账户,订单金额（元）,商家实收（元）,支付宝红包（元）,集分宝（元）,支付宝优惠（元）,商家优惠（元）,券核销金额（元）,券名称,商家红包消费金额（元）,卡消费金额（元）,退款批次号/请求号,服务费（元）,分润（元）,备注\n\
2026113022001\t,PAYB\t,交易,测试商品,2026-11-30 09:00:00,2026-11-30 09:00:05,,,,,张*(a***@x.com),88.88,88.88,0.00,0.00,0.00,0.00,0.00,,0.00,0.00,,-0.53,0.00,\n\
2026113022001\t,PAYB\t,退款,测试商品,2026-11-30 12:00:00,2026-11-30 12:00:01,,,,,张*(a***@x.com),-20.00,-20.00,0.00,0.00,0.00,0.00,0.00,,0.00,0.00,RFDB\t,0.12,0.00,\n\
#-----------------------------------------业务明细列表结束------------------------------------\n\
#交易合计：1笔，商家实收共88.88元，商家优惠共0.00元\n#退款合计：1笔，商家实收退款共-20.00元\n#导出时间：[2026年12月01日 09:00:00]\n";
        encoding_rs::GBK.encode(text).0.into_owned()
    }

    #[test]
    fn an_alipay_detail_reads_gbk_trailing_tabs_negative_refunds_and_totals() {
        let (rows, checks) = read_all(FORMAT, &alipay_bytes()).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].provider_txn_id.as_deref(), Some("2026113022001"));
        assert_eq!(rows[0].payment_no.as_deref(), Some("PAYB"));
        assert_eq!(rows[0].money.minor, 8888);
        assert_eq!(rows[1].kind, RowKind::Refund);
        assert_eq!(
            rows[1].money.minor, 2000,
            "refunds are negative in the file"
        );
        assert_eq!(rows[1].refund_no.as_deref(), Some("RFDB"));
        assert_eq!(checks.len(), 2);
        assert!(checks.iter().all(|c| c.stated == c.read), "{checks:?}");
        // The same file as UTF-8 is not what Alipay sends.
        let utf8 = encoding_rs::GBK.decode(&alipay_bytes()).0.into_owned();
        assert!(read_all(FORMAT, utf8.as_bytes()).is_err());
    }
}
