//! WeChat Pay's v3 trade bills (交易账单), told apart by their header and
//! read by column name: ALL (payments and refunds), SUCCESS (payments) and
//! REFUND (refunds). Every value is prefixed with a backtick; rows, then
//! `总交易单数,…` and one summary row (rows, settled total, refunded total).
//! Times are Beijing time. The fund-flow bill (资金账单) and the old v2
//! layouts are recognised and refused by name, saying what to download
//! instead.

use crate::domain::{Money, quote, trimmed};
use crate::statement::csv::CsvFields;
use crate::statement::time::local_time;
use crate::statement::{
    BillFormat, Check, Chunk, Format, LastCurrency, Progress, RowKind, RowRef, add, cny, fee,
    money, present,
};

/// WeChat Pay's trade bill format (types ALL, SUCCESS and REFUND).
pub const FORMAT: Format = Format::new("wechatpay trade bill", "WeChat Pay", "{kind} bill", || {
    Box::new(WechatBill::default())
});

/// What to download instead of a file Reckon does not read.
const DOWNLOAD: &str = "download the day's v3 trade bill instead (GET /v3/bill/tradebill with bill_type=ALL, or 交易账单 in the merchant platform)";

/// Which trade bill a file is, by its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BillType {
    /// Payments and refunds.
    All,
    /// Paid orders only: no refund columns.
    Success,
    /// Refunds only, with their own times (退款申请时间, 退款成功时间).
    Refund,
}

/// Where the columns Reckon reads are, in the header the file has.
#[derive(Clone, Copy, Debug)]
struct Columns {
    bill: BillType,
    width: usize,
    /// 交易时间, 微信订单号, 商户订单号, 交易状态, 货币种类, 应结订单金额, 订单金额.
    time: usize,
    txn: usize,
    payment_no: usize,
    state: usize,
    currency: usize,
    settled: usize,
    order_amount: usize,
    /// 微信退款单号, 商户退款单号, 退款金额, 退款状态 (ALL and REFUND).
    refund: Option<RefundColumns>,
    /// 退款成功时间 and 退款申请时间 (REFUND only).
    refunded_at: Option<usize>,
    asked_at: Option<usize>,
    /// 手续费.
    fee: Option<usize>,
}

#[derive(Clone, Copy, Debug)]
struct RefundColumns {
    id: usize,
    no: usize,
    amount: usize,
    status: usize,
}

/// The bill a header names, or why the file is refused: what it is and
/// what to download instead.
fn columns(header: &[&str]) -> Result<Columns, String> {
    let find = |name: &str| header.iter().position(|h| *h == name);
    match header.first().copied() {
        Some("交易时间") => {}
        Some("记账时间") => {
            return Err(format!(
                "this is WeChat Pay's fund-flow bill (资金账单): it lists the merchant account's balance movements, not orders, so Reckon cannot reconcile payments against it; {DOWNLOAD}"
            ));
        }
        Some(first) if first.starts_with("#支付宝") => {
            return Err(
                "this is an Alipay bill (业务明细): upload it for an Alipay provider".into(),
            );
        }
        _ => {
            return Err(format!(
                "not a WeChat Pay trade bill: its first line should be the header 交易时间,公众账号ID,…; {DOWNLOAD}"
            ));
        }
    }
    if find("应结订单金额").is_none() && find("总金额").is_some() {
        return Err(format!(
            "the old WeChat Pay bill layout ({} columns, 总金额 where the v3 bill has 应结订单金额): {DOWNLOAD}",
            header.len()
        ));
    }
    let need = |name: &str| {
        find(name).ok_or_else(|| {
            format!(
                "a WeChat Pay trade bill of a layout Reckon does not know ({} columns, none named {name}): {DOWNLOAD}",
                header.len()
            )
        })
    };
    let bill = if find("退款申请时间").is_some() {
        BillType::Refund
    } else if find("微信退款单号").is_some() {
        BillType::All
    } else {
        BillType::Success
    };
    let refund = match bill {
        BillType::Success => None,
        _ => Some(RefundColumns {
            id: need("微信退款单号")?,
            no: need("商户退款单号")?,
            amount: need("退款金额")?,
            status: need("退款状态")?,
        }),
    };
    Ok(Columns {
        bill,
        width: header.len(),
        time: need("交易时间")?,
        txn: need("微信订单号")?,
        payment_no: need("商户订单号")?,
        state: need("交易状态")?,
        currency: need("货币种类")?,
        settled: need("应结订单金额")?,
        order_amount: need("订单金额")?,
        refund,
        refunded_at: find("退款成功时间"),
        asked_at: find("退款申请时间"),
        fee: find("手续费"),
    })
}

#[derive(Default)]
struct WechatBill {
    /// Header and summary read so far.
    progress: Progress,
    columns: Option<Columns>,
    rows: i64,
    /// 应结订单金额 and 退款金额, summed in minor units.
    settled: i64,
    refunded: i64,
    /// 手续费 summed exactly at the bill's five places (1/100,000 yuan),
    /// and where the summary states its total (手续费总金额), once the
    /// summary's header is read.
    fees: i64,
    fee_total_at: Option<usize>,
    checks: Vec<Check>,
    currencies: LastCurrency,
    /// A line's fields as places in the line (or in `unquoted`), kept from
    /// line to line: no allocation per row.
    spans: Vec<(usize, usize)>,
    unquoted: String,
    csv: CsvFields,
}

/// A line's fields, borrowed.
struct Line<'a> {
    text: &'a str,
    spans: &'a [(usize, usize)],
}

impl<'a> Line<'a> {
    fn len(&self) -> usize {
        self.spans.len()
    }

    /// Field `i`, trimmed (panics past the end, as indexing does).
    fn get(&self, i: usize) -> &'a str {
        let (start, end) = self.spans[i];
        trimmed(&self.text[start..end])
    }
}

/// Splits a line. Every value starts with a backtick, and values are not
/// quoted: a comma inside one (a product name) is told apart from a
/// separator by the backtick that follows a separator. Header lines have
/// no backticks and are CSV.
fn split<'a>(
    text: &'a str,
    spans: &'a mut Vec<(usize, usize)>,
    unquoted: &'a mut String,
    csv: &mut CsvFields,
) -> Line<'a> {
    spans.clear();
    if let Some(rest) = text.trim_start().strip_prefix('`') {
        let base = text.len() - rest.len();
        let mut start = base;
        for (at, _) in rest.match_indices(",`") {
            spans.push((start, base + at));
            start = base + at + 2;
        }
        spans.push((start, text.len()));
        return Line { text, spans };
    }
    unquoted.clear();
    for field in csv.split(text).iter() {
        let start = unquoted.len();
        unquoted.push_str(field);
        spans.push((start, unquoted.len()));
    }
    Line {
        text: unquoted,
        spans,
    }
}

/// A count in the summary, which WeChat Pay may write as a decimal (`45.0`).
fn count(text: &str) -> Result<i64, String> {
    let whole = match text.split_once('.') {
        Some((whole, zeros)) if zeros.bytes().all(|b| b == b'0') => whole,
        Some(_) => text,
        None => text,
    };
    whole
        .parse()
        .map_err(|_| format!("总交易单数 {} is not a number", quote(text)))
}

impl BillFormat for WechatBill {
    fn line(&mut self, text: &str, line_no: i64, out: &mut Chunk) -> Result<bool, String> {
        let f = split(text, &mut self.spans, &mut self.unquoted, &mut self.csv);
        let Some(at) = self.columns else {
            let header: Vec<&str> = (0..f.len()).map(|i| f.get(i)).collect();
            self.columns = Some(columns(&header)?);
            self.progress.header = true;
            return Ok(false);
        };
        if f.get(0) == "总交易单数" {
            self.progress.in_summary = true;
            self.fee_total_at = (0..f.len()).find(|&i| f.get(i) == "手续费总金额");
            return Ok(false);
        }
        if self.progress.in_summary {
            if f.len() < 3 {
                return Err("unreadable summary row".into());
            }
            let count = count(f.get(0))?;
            let settled = money(f.get(1), cny())?.minor;
            let refunded = money(f.get(2), cny())?.minor;
            self.checks
                .push(Check::new("总交易单数 (rows)", count, self.rows));
            self.checks.push(Check::money(
                "应结订单总金额",
                settled,
                self.settled,
                Some(cny()),
            ));
            self.checks.push(Check::money(
                "退款总金额",
                refunded,
                self.refunded,
                Some(cny()),
            ));
            // The fees' total, where both the rows and the summary carry
            // them: a fee column cut or shifted shows here.
            if let (Some(_), Some(i)) = (at.fee, self.fee_total_at)
                && i < f.len()
            {
                let fees = fee(f.get(i), cny(), "手续费总金额")?.map_or(0, |m| m.e5);
                self.checks
                    .push(Check::fees("手续费总金额", fees, self.fees, cny()));
            }
            self.progress.in_summary = false;
            self.progress.summary = true;
            return Ok(false);
        }
        if self.progress.summary {
            return Err("a row after the summary".into());
        }
        // More fields than the header: a ",`" inside free text (商品名称,
        // 商户数据包) would shift every column after it, fee and amount too.
        if f.len() != at.width {
            return Err(format!("expected {} fields, found {}", at.width, f.len()));
        }
        let currency = match f.get(at.currency) {
            "" => cny(),
            code => self.currencies.parse(code)?,
        };
        let settle = money(f.get(at.settled), currency)?;
        let refund_amount = match at.refund {
            Some(r) if !f.get(r.amount).is_empty() => money(f.get(r.amount), currency)?,
            _ => Money::new(0, currency),
        };
        let fee = match at.fee {
            Some(i) => fee(f.get(i), currency, "手续费")?,
            None => None,
        };
        // Checked, as the sandbox's: no sum that wraps.
        let settled = add(self.settled, settle.minor)?;
        if let Some(fee) = fee {
            self.fees = add(self.fees, fee.e5)?;
        }
        self.refunded = add(self.refunded, refund_amount.minor)?;
        self.settled = settled;
        self.rows += 1;
        let state = f.get(at.state);
        let row = match at.refund {
            Some(r) if at.bill == BillType::Refund || state == "REFUND" => RowRef {
                reference: None,
                line_no,
                kind: RowKind::Refund,
                provider_txn_id: present(f.get(at.txn)),
                payment_no: present(f.get(at.payment_no)),
                provider_refund_id: present(f.get(r.id)),
                refund_no: present(f.get(r.no)),
                money: refund_amount,
                status: match f.get(r.status) {
                    "SUCCESS" => "SUCCEEDED",
                    other => other,
                },
                // A REFUND bill's 交易时间 is the payment's; the refund's
                // own time is 退款成功时间, or while it is processed the
                // time it was asked for.
                occurred_at: [at.refunded_at, at.asked_at, Some(at.time)]
                    .into_iter()
                    .flatten()
                    .find_map(|i| local_time(f.get(i), 8)),
                fee,
            },
            _ => RowRef {
                reference: None,
                line_no,
                kind: RowKind::Payment,
                provider_txn_id: present(f.get(at.txn)),
                payment_no: present(f.get(at.payment_no)),
                provider_refund_id: None,
                refund_no: None,
                // 订单金额: what the order cost, before vouchers.
                money: money(f.get(at.order_amount), currency)?,
                status: match state {
                    "SUCCESS" => "SUCCEEDED",
                    other => other,
                },
                occurred_at: local_time(f.get(at.time), 8),
                fee,
            },
        };
        out.push(row);
        Ok(true)
    }

    fn progress(&self) -> Progress {
        self.progress
    }

    fn kind(&self) -> Option<&'static str> {
        self.columns.map(|c| match c.bill {
            BillType::All => "ALL",
            BillType::Success => "SUCCESS",
            BillType::Refund => "REFUND",
        })
    }

    fn checks(&mut self) -> Vec<Check> {
        std::mem::take(&mut self.checks)
    }
}

#[cfg(test)]
mod tests;
