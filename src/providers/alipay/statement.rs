//! Alipay's 业务明细 CSV: `#` lines around the table, a header, rows whose
//! ids may end in a tab, refunds as 退款 with negative amounts, and
//! `#交易合计：N笔` / `#退款合计：M笔` totals. Times are Beijing time.
//! Alipay hands it out in GBK; saved again from a spreadsheet it may be
//! UTF-8, with or without a byte-order mark — told from the first line
//! that is not ASCII, once. The other files of the download (the 汇总
//! summary, the 账务明细 account bill) are refused by name.

use crate::domain::{Fee, quote};
use crate::statement::csv::CsvFields;
use crate::statement::time::local_time;
use crate::statement::{
    BillFormat, Check, Chunk, Format, Progress, RowKind, RowRef, cny, fee, money, present,
};

/// Alipay's 业务明细 format.
pub const FORMAT: Format =
    Format::new("alipay 业务明细", "Alipay", "业务明细 bill", || {
        Box::new(AlipayBill::default())
    });

struct AlipayBill {
    /// GBK until the first line that is not ASCII says otherwise.
    encoding: &'static encoding_rs::Encoding,
    /// Header and summary read so far.
    progress: Progress,
    /// Where 服务费（元） is, once the header is read.
    fee: Option<usize>,
    payment_rows: i64,
    refund_rows: i64,
    checks: Vec<Check>,
    csv: CsvFields,
}

impl Default for AlipayBill {
    fn default() -> AlipayBill {
        AlipayBill {
            encoding: encoding_rs::GBK,
            progress: Progress::default(),
            fee: None,
            payment_rows: 0,
            refund_rows: 0,
            checks: Vec::new(),
            csv: CsvFields::default(),
        }
    }
}

/// What a comment line before the header says the file is, when it is
/// another file of Alipay's download than the 业务明细.
fn other_file(comment: &str) -> Option<String> {
    let what = if comment.starts_with("支付宝业务汇总查询") {
        "the 业务明细(汇总) summary file of Alipay's trade bill: upload the 业务明细 file beside it in the zip"
    } else if comment.starts_with("支付宝账务明细查询") {
        "Alipay's 账务明细 (the account's balance movements, bill_type=signcustomer), not orders: download the trade bill (bill_type=trade) and upload its 业务明细 file"
    } else {
        return None;
    };
    Some(format!("this is {what}"))
}

impl BillFormat for AlipayBill {
    fn encoding(&self) -> &'static encoding_rs::Encoding {
        self.encoding
    }

    fn detect_encoding(&mut self, raw_line: &[u8]) -> bool {
        if raw_line.starts_with(b"\xEF\xBB\xBF") {
            self.encoding = encoding_rs::UTF_8;
        } else if raw_line.is_ascii() {
            // The same in both: the next line may tell.
            return false;
        } else if std::str::from_utf8(raw_line).is_ok() {
            // Chinese in GBK is next to never valid UTF-8 (its second
            // bytes are mostly not UTF-8's continuation bytes).
            self.encoding = encoding_rs::UTF_8;
        }
        true
    }

    fn line(&mut self, text: &str, line_no: i64, out: &mut Chunk) -> Result<bool, String> {
        if let Some(comment) = text.strip_prefix('#') {
            if !self.progress.header
                && let Some(other) = other_file(comment.trim())
            {
                return Err(other);
            }
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
            if f(0) == "交易时间" {
                return Err(
                    "this is a WeChat Pay trade bill: upload it for a WeChat Pay provider".into(),
                );
            }
            if f(0) != "支付宝交易号" || split.len() < 25 {
                return Err(
                    "expected the Alipay 业务明细 header (支付宝交易号,商户订单号,业务类型,…): download the trade bill (bill_type=trade) and upload its 业务明细 file".into(),
                );
            }
            self.fee = split
                .iter()
                .position(|h| matches!(h.trim(), "服务费（元）" | "服务费(元)"));
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
        // Alipay writes the fee it takes as negative, the fee a refund gives
        // back as positive: turned round, to be the fee the merchant paid.
        let fee = match self.fee {
            Some(i) => fee(f(i), cny(), "服务费（元）")?.map(|m| Fee { e5: -m.e5, ..m }),
            None => None,
        };
        let occurred_at = local_time(f(5), 8).or_else(|| local_time(f(4), 8));
        let row = match f(2) {
            "交易" => {
                self.payment_rows += 1;
                RowRef {
                    reference: None,
                    line_no,
                    kind: RowKind::Payment,
                    provider_txn_id: present(f(0)),
                    payment_no: present(f(1)),
                    provider_refund_id: None,
                    refund_no: None,
                    money: amount,
                    status: "SUCCEEDED",
                    occurred_at,
                    fee,
                }
            }
            "退款" => {
                self.refund_rows += 1;
                RowRef {
                    reference: None,
                    line_no,
                    kind: RowKind::Refund,
                    provider_txn_id: present(f(0)),
                    payment_no: present(f(1)),
                    provider_refund_id: None,
                    refund_no: present(f(21)),
                    money: amount,
                    status: "SUCCEEDED",
                    occurred_at,
                    fee,
                }
            }
            other => return Err(format!("unknown 业务类型 {}", quote(other))),
        };
        out.push(row);
        Ok(true)
    }

    fn progress(&self) -> Progress {
        self.progress
    }

    /// The encoding told from the first lines (encoding_rs's `GBK` or
    /// `UTF-8`), once the header is read.
    fn kind(&self) -> Option<&'static str> {
        self.progress.header.then_some(self.encoding.name())
    }

    fn checks(&mut self) -> Vec<Check> {
        std::mem::take(&mut self.checks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statement::{fixture, kind_of, read_all};

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
        assert_eq!(rows[0].fee.map(|f| f.minor()), Some(53), "the fee taken");
        assert_eq!(
            rows[1].fee.map(|f| f.minor()),
            Some(-12),
            "the fee given back"
        );
        // A GBK file whose bytes are broken is refused as such.
        let mut broken = alipay_bytes();
        let at = broken.len() - 40;
        broken[at] = 0xff;
        let err = read_all(FORMAT, &broken).unwrap_err();
        assert!(err.reason.contains("not valid GBK"), "{err}");
    }

    /// The same export in GBK, in UTF-8 and in UTF-8 with a byte-order
    /// mark: the encoding told from its first lines, the same rows read.
    #[test]
    fn an_alipay_detail_in_gbk_or_utf8_with_or_without_bom_reads_alike() {
        let gbk = fixture("alipay_detail_gbk.csv");
        let utf8 = fixture("alipay_detail_utf8.csv");
        let bom = fixture("alipay_detail_utf8_bom.csv");
        assert!(std::str::from_utf8(&gbk).is_err() && bom.starts_with(b"\xEF\xBB\xBF"));
        let (rows, checks) = read_all(FORMAT, &gbk).unwrap();
        assert_eq!(rows.len(), 3);
        assert!(checks.iter().all(|c| c.stated == c.read), "{checks:?}");
        assert_eq!(rows[2].kind, RowKind::Refund);
        assert_eq!(rows[2].refund_no.as_deref(), Some("ALR-0001"));
        assert_eq!(rows[2].money.minor, 2000);
        for other in [&utf8, &bom] {
            assert_eq!(
                read_all(FORMAT, other).unwrap(),
                (rows.clone(), checks.clone())
            );
        }
        // A UTF-8 export whose header comes first (its `#` lines cut):
        // still told from the header's Chinese.
        let text = std::str::from_utf8(&utf8).unwrap();
        let cut = &text[text.find("支付宝交易号").unwrap()..];
        let mut from_header = read_all(FORMAT, cut.as_bytes()).unwrap().0;
        for r in &mut from_header {
            r.line_no += 4;
        }
        assert_eq!(from_header, rows);
        // The encoding told is the one recorded on the run.
        assert_eq!(kind_of(FORMAT, &gbk), Some("GBK"));
        assert_eq!(kind_of(FORMAT, &utf8), Some("UTF-8"));
        assert_eq!(kind_of(FORMAT, &bom), Some("UTF-8"));
    }

    #[test]
    fn the_other_files_of_an_alipay_download_are_refused_by_name() {
        for (first, named) in [
            ("#支付宝业务汇总查询", "业务明细(汇总) summary file"),
            ("#支付宝账务明细查询", "账务明细"),
            ("交易时间,公众账号ID,商户号", "WeChat Pay trade bill"),
            ("id,amount", "expected the Alipay 业务明细 header"),
        ] {
            let err = read_all(FORMAT, format!("{first}\n").as_bytes()).unwrap_err();
            assert_eq!(err.line, 1, "{err}");
            assert!(err.reason.contains(named), "{err}");
        }
    }
}
