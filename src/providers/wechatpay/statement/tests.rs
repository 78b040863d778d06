use super::*;
use crate::statement::{StatementRow, fixture, kind_of, read_all};

const WECHAT: &str = "交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,应结订单金额,代金券金额,微信退款单号,商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,费率备注\n\
`2026-11-30 10:00:01,`wx01,`1900000001,`0,`,`4200001,`PAYA,`oUser,`NATIVE,`SUCCESS,`OTHERS,`CNY,`199.00,`0.00,`0,`0,`0.00,`0.00,`,`,`T恤, 白色,`,`1.19,`0.60%,`199.00,`0.00,`\n\
`2026-11-30 11:00:00,`wx01,`1900000001,`0,`,`4200001,`PAYA,`oUser,`NATIVE,`REFUND,`OTHERS,`CNY,`0.00,`0.00,`50300001,`RFDA,`50.00,`0.00,`ORIGINAL,`SUCCESS,`T恤,`,`-0.30,`0.60%,`0.00,`50.00,`\n\
总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额\n\
`2,`199.00,`50.00,`0.00,`0.89,`199.00,`50.00\n";

fn refusal(bytes: &[u8]) -> String {
    let err = read_all(FORMAT, bytes).unwrap_err();
    assert_eq!(err.line, 1, "{err}");
    err.reason
}

fn fee(row: &StatementRow) -> Option<i64> {
    row.fee.map(|f| f.minor())
}

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

/// Amounts whose sum passes i64 are refused at the line that passes it,
/// as the sandbox's are.
#[test]
fn amounts_that_sum_past_i64_refuse_their_line() {
    let big = "`92233720368547758.07,`0.00,`0,`0,`0.00";
    let wechat = WECHAT
        .replacen("`199.00,`0.00,`0,`0,`0.00", big, 1)
        .replacen("`0.00,`0.00,`50300001", "`0.01,`0.00,`50300001", 1);
    let err = read_all(FORMAT, wechat.as_bytes()).unwrap_err();
    assert_eq!(err.line, 3, "{err}");
}

/// The ALL bill as the API hands it out: a byte-order mark, CRLF, a comma
/// in a product name, fees with five decimals, a count written `3.0`.
#[test]
fn an_all_bill_reads_payments_refunds_and_their_fees() {
    let (rows, checks) = read_all(FORMAT, &fixture("wechatpay_all.csv")).unwrap();
    assert_eq!(rows.len(), 3);
    assert!(checks.iter().all(|c| c.stated == c.read), "{checks:?}");
    assert_eq!(checks[0].stated, 3);
    let (pay, refund) = (&rows[0], &rows[1]);
    assert_eq!(pay.kind, RowKind::Payment);
    assert_eq!(pay.payment_no.as_deref(), Some("WXA-0001"));
    assert_eq!(pay.money.minor, 12800);
    assert_eq!(fee(pay), Some(77));
    assert_eq!(refund.kind, RowKind::Refund);
    assert_eq!(
        refund.provider_refund_id.as_deref(),
        Some("50300807172026113000000000201")
    );
    assert_eq!(refund.refund_no.as_deref(), Some("WXR-0001"));
    assert_eq!(refund.money.minor, 2800);
    assert_eq!(fee(refund), Some(-17), "a refund gives its fee back");
    assert_eq!(rows[2].payment_no.as_deref(), Some("WXA-0002"));
    // Beijing time.
    assert_eq!(
        pay.occurred_at,
        Some(
            jiff::Timestamp::from_second(1_796_001_302)
                .unwrap()
                .as_microsecond()
        )
    );
}

#[test]
fn a_success_bill_reads_its_payments_without_refund_columns() {
    let (rows, checks) = read_all(FORMAT, &fixture("wechatpay_success.csv")).unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r.kind == RowKind::Payment));
    assert_eq!(rows[1].money.minor, 990);
    assert_eq!(fee(&rows[1]), Some(6));
    assert!(checks.iter().all(|c| c.stated == c.read), "{checks:?}");
}

/// The REFUND bill has two more columns than ALL before its refund ids: read
/// by name, its refund id is not taken for an amount.
#[test]
fn a_refund_bill_reads_refunds_by_column_name_at_their_refund_time() {
    let (rows, checks) = read_all(FORMAT, &fixture("wechatpay_refund.csv")).unwrap();
    assert!(checks.iter().all(|c| c.stated == c.read), "{checks:?}");
    assert_eq!(rows.len(), 2);
    let r = &rows[0];
    assert_eq!(r.kind, RowKind::Refund);
    assert_eq!(
        r.provider_txn_id.as_deref(),
        Some("4200002601202611280000000077")
    );
    assert_eq!(r.payment_no.as_deref(), Some("WXA-0077"));
    assert_eq!(
        r.provider_refund_id.as_deref(),
        Some("50300807172026113000000000301")
    );
    assert_eq!(r.refund_no.as_deref(), Some("WXR-0077"));
    assert_eq!(r.money.minor, 3550);
    assert_eq!(r.status, "SUCCEEDED");
    assert_eq!(fee(r), Some(-21));
    // 退款成功时间 (2026-11-30 16:20:44 +08:00), not the payment's 交易时间.
    assert_eq!(
        r.occurred_at,
        Some(
            jiff::Timestamp::from_second(1_796_026_844)
                .unwrap()
                .as_microsecond()
        )
    );
    // Still processing: its own status, the time it was asked for.
    assert_eq!(rows[1].status, "PROCESSING");
    assert_eq!(
        rows[1].occurred_at,
        Some(
            jiff::Timestamp::from_second(1_796_054_341)
                .unwrap()
                .as_microsecond()
        )
    );
}

#[test]
fn the_fund_flow_bill_and_the_old_layout_are_refused_by_name() {
    let fund = refusal(&fixture("wechatpay_fundflow.csv"));
    assert!(fund.contains("fund-flow bill (资金账单)"), "{fund}");
    assert!(fund.contains("bill_type=ALL"), "{fund}");
    let old = refusal(&fixture("wechatpay_old_all.csv"));
    assert!(
        old.contains("old WeChat Pay bill layout (24 columns"),
        "{old}"
    );
    assert!(old.contains("/v3/bill/tradebill"), "{old}");
    // The old REFUND layout (26 columns) is as old.
    let old_refund = "交易时间,公众账号ID,商户号,子商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,总金额,代金券或立减优惠金额,退款申请时间,退款成功时间,微信退款单号,商户退款单号,退款金额,代金券或立减优惠退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率\n";
    let old = refusal(old_refund.as_bytes());
    assert!(
        old.contains("old WeChat Pay bill layout (26 columns"),
        "{old}"
    );
    let alipay = refusal("#支付宝业务明细查询\n".as_bytes());
    assert!(alipay.contains("an Alipay bill"), "{alipay}");
    let other = refusal(b"id,amount\n1,2\n");
    assert!(other.contains("not a WeChat Pay trade bill"), "{other}");
    // A trade bill without a column Reckon reads names it.
    let unknown = WECHAT.replacen("商户订单号", "订单号", 1);
    let unknown = refusal(unknown.as_bytes());
    assert!(unknown.contains("none named 商户订单号"), "{unknown}");
}

/// WeChat Pay states 手续费 and 手续费总金额 to five places (0.6% of 19.99
/// is 0.11994): read exactly, summed exactly against the summary's total,
/// which still catches a row that does not add up; a sixth place is
/// refused naming its column.
#[test]
fn fees_with_fractions_of_a_fen_are_read_exactly_against_their_total() {
    let bill = WECHAT
        .replacen("`1.19,", "`1.19494,", 1)
        .replacen("`-0.30,", "`-0.30000,", 1)
        .replacen("`0.89,", "`0.89494,", 1);
    let (rows, checks) = read_all(FORMAT, bill.as_bytes()).unwrap();
    assert_eq!(rows[0].fee.map(|f| f.e5), Some(119_494));
    assert_eq!(fee(&rows[0]), Some(119), "1.19494 is 1.19 in fen");
    let fees = checks.iter().find(|c| c.what == "手续费总金额").unwrap();
    assert_eq!((fees.stated, fees.read), (89_494, 89_494), "{checks:?}");
    assert_eq!(fees.shown(fees.read), "0.89494 CNY");
    let off = bill.replacen("`0.89494,", "`0.89490,", 1);
    let (_, checks) = read_all(FORMAT, off.as_bytes()).unwrap();
    let fees = checks.iter().find(|c| c.what == "手续费总金额").unwrap();
    assert_eq!((fees.stated, fees.read), (89_490, 89_494));
    let finer = WECHAT.replacen("`1.19,", "`1.194941,", 1);
    let err = read_all(FORMAT, finer.as_bytes()).unwrap_err();
    assert_eq!(err.line, 2, "{err}");
    assert!(err.reason.contains("手续费"), "{err}");
}

#[test]
fn each_trade_bill_says_which_it_is() {
    for (file, kind) in [
        ("wechatpay_all.csv", "ALL"),
        ("wechatpay_success.csv", "SUCCESS"),
        ("wechatpay_refund.csv", "REFUND"),
    ] {
        assert_eq!(kind_of(FORMAT, &fixture(file)), Some(kind), "{file}");
    }
    assert_eq!(
        FORMAT.bill_type(Some("REFUND")),
        "wechatpay trade bill (REFUND)"
    );
}
