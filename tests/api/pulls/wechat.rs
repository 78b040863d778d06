//! WeChat Pay's bill API as tests/api/wechatpay.rs's server plays it:
//! `GET /v3/bill/tradebill` and `/v3/bill/fundflowbill` checked for the
//! merchant's signature and answered signed with the platform key
//! (`hash_type`, `hash_value` = SHA1 of the bill before gzip, BOM and all,
//! `download_url`), or `400 NO_STATEMENT_EXIST`; `GET /v3/billdownload/file`
//! checked for the merchant's signature and answered, unsigned, with the
//! gzipped bill.

use super::{
    assert_every_class, bank_credit, cli_pulls_once_ready, closed_body, payouts, pull_fails,
    resume_completes, resume_fails, settlement, settlement_tickets, tickets,
};
use crate::both_databases;
use crate::helpers::Backend;
use crate::wechatpay::{
    APIV3_KEY, Api, MCH_ID, SERIAL, Wechat, authorized, sign_error, signed, spawn, spawn_limited,
};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Uri};
use axum::response::{IntoResponse, Response};
use reckon::config::ProviderConfig;
use reckon::providers::CallError;
use secrecy::ExposeSecret;
use sha1::Digest;
use std::collections::BTreeMap;
use std::io::Write;

/// The bills WeChat Pay has made, and the faults it is to show next.
#[derive(Default)]
pub(crate) struct Desk {
    /// The server's own address, for the download_url.
    pub(crate) base: String,
    /// `ALL/{date}` or `BASIC/{date}` → the bill as WeChat Pay makes it.
    bills: BTreeMap<String, Vec<u8>>,
    /// The next this many applications stall past Reckon's timeout.
    slow: usize,
    /// The next this many answers are signed with a stranger's key.
    forge: usize,
    /// The next this many downloads answer 500.
    broken_downloads: usize,
    /// The hash_value names other bytes.
    wrong_hash: bool,
    /// Refusals come unsigned (as WeChat Pay's SDKs allow).
    unsigned_refusals: bool,
    /// Downloads answer these bytes as they are (a bomb, an overlong
    /// plain bill) instead of the bill gzipped.
    packed: Option<Vec<u8>>,
    pub(crate) downloads: usize,
}

pub(crate) fn routes() -> axum::Router<Api> {
    axum::Router::new()
        .route("/v3/bill/tradebill", axum::routing::get(trade_bill))
        .route("/v3/bill/fundflowbill", axum::routing::get(fund_flow_bill))
        .route("/v3/billdownload/file", axum::routing::get(download))
}

async fn trade_bill(
    State(api): State<Api>,
    Query(q): Query<BTreeMap<String, String>>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let wanted = q.get("bill_type").map(String::as_str) == Some("ALL");
    apply(api, &q, &uri, &headers, wanted.then_some("ALL")).await
}

async fn fund_flow_bill(
    State(api): State<Api>,
    Query(q): Query<BTreeMap<String, String>>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let wanted = q.get("account_type").map(String::as_str) == Some("BASIC");
    apply(api, &q, &uri, &headers, wanted.then_some("BASIC")).await
}

/// An application for a bill, answered signed.
async fn apply(
    api: Api,
    q: &BTreeMap<String, String>,
    uri: &Uri,
    headers: &HeaderMap,
    kind: Option<&str>,
) -> Response {
    if !authorized(&api, "GET", uri, headers, "") {
        return signed(&api, 401, sign_error());
    }
    let (Some(kind), Some(date), Some("GZIP")) = (
        kind,
        q.get("bill_date"),
        q.get("tar_type").map(String::as_str),
    ) else {
        return signed(
            &api,
            400,
            serde_json::json!({"code": "PARAM_ERROR", "message": "参数错误"}),
        );
    };
    let slow = take(&api, |d| &mut d.slow);
    if slow {
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    }
    let (bill, base, wrong) = {
        let desk = api.bills.lock().unwrap();
        let bill = desk.bills.get(&format!("{kind}/{date}")).cloned();
        (bill, desk.base.clone(), desk.wrong_hash)
    };
    let signer = if take(&api, |d| &mut d.forge) {
        Api {
            platform_key: rsa::RsaPrivateKey::new(&mut rand::rngs::OsRng, 1024).unwrap(),
            ..api.clone()
        }
    } else {
        api.clone()
    };
    let Some(mut bill) = bill else {
        let refusal =
            serde_json::json!({"code": "NO_STATEMENT_EXIST", "message": "账单文件不存在"});
        if api.bills.lock().unwrap().unsigned_refusals {
            return (axum::http::StatusCode::BAD_REQUEST, refusal.to_string()).into_response();
        }
        return signed(&signer, 400, refusal);
    };
    if wrong {
        bill.push(b'\n');
    }
    let hash = hex::encode(sha1::Sha1::digest(&bill)).to_ascii_uppercase();
    signed(
        &signer,
        200,
        serde_json::json!({
            "hash_type": "SHA1", "hash_value": hash,
            "download_url": format!("{base}/v3/billdownload/file?token={kind}-{date}&tartype=gzip"),
        }),
    )
}

/// Takes one of a fault's remaining count.
fn take(api: &Api, fault: impl FnOnce(&mut Desk) -> &mut usize) -> bool {
    let mut desk = api.bills.lock().unwrap();
    let n = fault(&mut desk);
    let due = *n > 0;
    *n = n.saturating_sub(1);
    due
}

/// The download: the merchant's signature checked, the answer unsigned.
async fn download(
    State(api): State<Api>,
    Query(q): Query<BTreeMap<String, String>>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    if !authorized(&api, "GET", &uri, &headers, "") {
        return signed(&api, 401, sign_error());
    }
    if take(&api, |d| &mut d.broken_downloads) {
        return (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "").into_response();
    }
    let token = q.get("token").cloned().unwrap_or_default();
    let mut desk = api.bills.lock().unwrap();
    desk.downloads += 1;
    if let Some(packed) = desk.packed.clone() {
        return ([("content-type", "application/x-gzip")], packed).into_response();
    }
    let Some(bill) = desk.bills.get(&token.replacen('-', "/", 1)) else {
        return (axum::http::StatusCode::BAD_REQUEST, "").into_response();
    };
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bill).unwrap();
    (
        [("content-type", "application/x-gzip")],
        gz.finish().unwrap(),
    )
        .into_response()
}

/// A row of an ALL trade bill.
struct Row<'a> {
    txn: &'a str,
    payment_no: &'a str,
    currency: &'a str,
    /// 订单金额 of a payment, 退款金额 of a refund.
    amount: &'a str,
    /// A refund's (微信退款单号, 商户退款单号).
    refund: Option<(&'a str, &'a str)>,
}

/// The ALL bill as WeChat Pay writes it: a BOM, CRLF, every value after a
/// backtick, the summary header and values last.
fn bill(date: &str, rows: &[Row]) -> Vec<u8> {
    let cents = |a: &str| -> i64 {
        let (major, minor) = a.split_once('.').unwrap();
        major.parse::<i64>().unwrap() * 100 + minor.parse::<i64>().unwrap()
    };
    let major = |c: i64| format!("{}.{:02}", c / 100, c % 100);
    let mut text = String::from(
        "\u{feff}交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,应结订单金额,代金券金额,微信退款单号,商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,费率备注\r\n",
    );
    // Each payment row's fee is 0.01, as its summary's 手续费总金额 states.
    let (mut settled, mut refunded, mut fees) = (0, 0, 0);
    for (i, r) in rows.iter().enumerate() {
        let at = format!("{date} 10:{:02}:00", i % 60);
        let line = match r.refund {
            None => {
                settled += cents(r.amount);
                fees += 1;
                format!(
                    "`{at},`wx01,`{MCH_ID},`0,`,`{},`{},`oUser,`NATIVE,`SUCCESS,`OTHERS,`{},`{},`0.00,`0,`0,`0.00,`0.00,`,`,`T恤, 白色,`,`0.01000,`0.60%,`{},`0.00,`",
                    r.txn, r.payment_no, r.currency, r.amount, r.amount
                )
            }
            Some((refund_id, refund_no)) => {
                refunded += cents(r.amount);
                format!(
                    "`{at},`wx01,`{MCH_ID},`0,`,`{},`{},`oUser,`NATIVE,`REFUND,`OTHERS,`{},`0.00,`0.00,`{refund_id},`{refund_no},`{},`0.00,`ORIGINAL,`SUCCESS,`T恤,`,`0.00000,`0.60%,`0.00,`{},`",
                    r.txn, r.payment_no, r.currency, r.amount, r.amount
                )
            }
        };
        text.push_str(&line);
        text.push_str("\r\n");
    }
    text.push_str("总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额\r\n");
    text.push_str(&format!(
        "`{},`{},`{},`0.00,`{},`{},`{}\r\n",
        rows.len(),
        major(settled),
        major(refunded),
        major(fees),
        major(settled),
        major(refunded)
    ));
    text.into_bytes()
}

impl Wechat {
    fn put_bill(&self, kind: &str, date: &str, bytes: Vec<u8>) {
        let mut desk = self.api.bills.lock().unwrap();
        desk.bills.insert(format!("{kind}/{date}"), bytes);
    }

    fn fault(&self, set: impl FnOnce(&mut Desk)) {
        set(&mut self.api.bills.lock().unwrap());
    }

    /// A payment paid by a sealed, signed notification; its transaction id.
    async fn paid(&self, order: &str, fen: i64) -> (String, String) {
        let p = self.app.register_payment("wechat", order, fen, "CNY").await;
        let id = format!("EV-{order}");
        let body = self.envelope(&id, &p, "SUCCESS", fen, APIV3_KEY);
        let nonce = format!("nonce-{order}");
        assert_eq!(
            self.post(&body, self.now(), &nonce, SERIAL, &self.key)
                .await
                .0,
            204
        );
        (p, format!("4200{id}"))
    }

    /// The provider's day now: China's, whatever the hour in UTC (between
    /// 16:00 and 24:00 UTC the dates differ).
    fn today(&self) -> String {
        jiff::Timestamp::from_microsecond(self.app.engine.now())
            .unwrap()
            .to_zoned(jiff::tz::TimeZone::get("Asia/Shanghai").unwrap())
            .strftime("%Y-%m-%d")
            .to_string()
    }

    /// A day with one payment: its bill.
    async fn one_paid_day(&self) -> (String, Vec<u8>) {
        let date = self.today();
        let (p, txn) = self.paid("WXP-1", 1999).await;
        let row = Row {
            txn: &txn,
            payment_no: &p,
            currency: "CNY",
            amount: "19.99",
            refund: None,
        };
        (date.clone(), bill(&date, &[row]))
    }
}

async fn a_pulled_wechat_bill_with_every_class_makes_exactly_its_tickets(b: Backend) {
    let w = spawn(b).await;
    let date = w.today();
    let (a, txn_a) = w.paid("WXA", 10000).await;
    // STATUS_LAG: paid at WeChat Pay, its notification lost.
    let lag = w.app.register_payment("wechat", "WXB", 2000, "CNY").await;
    w.api.orders.lock().unwrap().insert(
        lag.clone(),
        serde_json::json!({"out_trade_no": lag, "transaction_id": "4200LAG", "trade_state": "SUCCESS",
            "amount": {"total": 2000, "currency": "CNY"}}),
    );
    let (local_only, _) = w.paid("WXD", 3000).await;
    let (amount, txn_e) = w.paid("WXE", 1000).await;
    let (currency, txn_f) = w.paid("WXF", 1000).await;
    let (dup, txn_g) = w.paid("WXG", 500).await;
    let (one_to_many, _) = w.paid("WXH", 700).await;
    let pay = |txn, payment_no, currency, amount| Row {
        txn,
        payment_no,
        currency,
        amount,
        refund: None,
    };
    let rows = [
        pay(&txn_a, &a, "CNY", "100.00"),
        pay("4200LAG", &lag, "CNY", "20.00"),
        // The seed's drill 5: a bill row with no local payment.
        pay("4200NOTHERE", "PAYNOTHERE", "CNY", "12.34"),
        pay(&txn_e, &amount, "CNY", "9.00"),
        pay(&txn_f, &currency, "USD", "10.00"),
        pay(&txn_g, &dup, "CNY", "5.00"),
        pay(&txn_g, &dup, "CNY", "5.00"),
        pay("4200OTHER", &one_to_many, "CNY", "7.00"),
        // A refund made at WeChat Pay's dashboard, unknown to Reckon.
        Row {
            txn: &txn_a,
            payment_no: &a,
            currency: "CNY",
            amount: "1.00",
            refund: Some(("50300DASH", "DASHBOARD-1")),
        },
    ];
    w.put_bill("ALL", &date, bill(&date, &rows));
    let run = reckon::recon::pull_statement(&w.app.engine, "wechat", &date, "test")
        .await
        .unwrap();
    assert_eq!(run.status, "COMPLETED", "{run:?}");
    assert_eq!(run.source, "pull");
    assert_eq!(run.rows_read, 9);
    assert_eq!(
        run.file_name.as_deref(),
        Some(format!("wechatpay-{MCH_ID}-{date}-ALL.csv").as_str())
    );
    // The run says which bill it read, and the API's run says so too.
    assert_eq!(run.bill_type.as_deref(), Some("wechatpay trade bill (ALL)"));
    let token = w.app.api_token("desk").await;
    let shown = w.app.api_run(&token, &run.run_id).await;
    assert_eq!(shown["bill_type"], "wechatpay trade bill (ALL)", "{shown}");
    assert_every_class(&w.app, &run, true, &local_only, &lag).await;
    // Pulled again: the same bill, the same run.
    let again = reckon::recon::pull_statement(&w.app.engine, "wechat", &date, "test")
        .await
        .unwrap();
    assert_eq!(again.run_id, run.run_id);
}

/// No bill yet, then a download that breaks, then a slow answer: each
/// fails the run with nothing read, and resume completes it.
async fn a_wechat_pull_not_ready_broken_or_slow_fails_and_resume_completes(b: Backend) {
    let w = spawn(b).await;
    let (date, bill) = w.one_paid_day().await;
    let (run_id, error) = pull_fails(&w.app, "wechat", &date).await;
    assert!(error.starts_with("not ready:"), "{error}");
    assert!(error.contains("NO_STATEMENT_EXIST"), "{error}");
    // Unsigned, the refusal means the same: wait.
    w.fault(|d| d.unsigned_refusals = true);
    let error = resume_fails(&w.app, &run_id).await;
    assert!(error.starts_with("not ready:"), "{error}");
    w.put_bill("ALL", &date, bill);
    // The download breaks: applied for, not downloaded.
    w.fault(|d| d.broken_downloads = 1);
    let error = resume_fails(&w.app, &run_id).await;
    assert!(
        error.contains("500") && !error.starts_with("not ready"),
        "{error}"
    );
    // Too slow: the call times out, its result unknown.
    w.fault(|d| d.slow = 1);
    let error = resume_fails(&w.app, &run_id).await;
    assert!(error.contains(&CallError::Timeout.to_string()), "{error}");
    resume_completes(&w.app, &run_id).await;
    assert_eq!(w.api.bills.lock().unwrap().downloads, 1);
}

/// A bill whose digest is not the signed hash_value, or an application
/// answered with a forged signature: the run fails and reads no row.
async fn a_wechat_bill_with_a_wrong_hash_or_a_forged_answer_reads_no_row(b: Backend) {
    let w = spawn(b).await;
    let (date, bill) = w.one_paid_day().await;
    w.put_bill("ALL", &date, bill);
    w.fault(|d| d.wrong_hash = true);
    let (run_id, error) = pull_fails(&w.app, "wechat", &date).await;
    assert!(
        error.contains("SHA1") && error.contains("hash_value"),
        "{error}"
    );
    assert_eq!(
        w.api.bills.lock().unwrap().downloads,
        1,
        "downloaded, not read"
    );
    w.fault(|d| {
        d.wrong_hash = false;
        d.forge = 1;
    });
    let error = resume_fails(&w.app, &run_id).await;
    assert!(error.contains("not WeChat Pay's"), "{error}");
    assert_eq!(
        w.api.bills.lock().unwrap().downloads,
        1,
        "a forged answer is not followed"
    );
    resume_completes(&w.app, &run_id).await;
}

/// A gzip bomb (64 MiB of zeros in some 64 KiB) and a plain download
/// longer than the account's `max_bill_bytes` (1 MiB here): each is cut
/// at the limit and refused by name, the run FAILED with no row read and
/// no file kept; the bill itself then completes.
async fn a_wechat_bomb_or_an_overlong_download_is_refused_reading_nothing(b: Backend) {
    let limit = 1 << 20;
    let w = spawn_limited(b, Some(limit)).await;
    let (date, bill) = w.one_paid_day().await;
    w.put_bill("ALL", &date, bill);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    for _ in 0..64 {
        gz.write_all(&[0u8; 1 << 20]).unwrap();
    }
    let bomb = gz.finish().unwrap();
    assert!(bomb.len() < 1 << 20, "{} bytes on the wire", bomb.len());
    w.fault(|d| d.packed = Some(bomb));
    let (run_id, error) = pull_fails(&w.app, "wechat", &date).await;
    assert!(
        error.contains(&format!(
            "WeChat Pay's ALL bill for {date} gunzips to more than {limit} bytes"
        )) && error.contains("max_bill_bytes"),
        "{error}"
    );
    w.fault(|d| d.packed = Some(vec![b'x'; 2 << 20]));
    let error = resume_fails(&w.app, &run_id).await;
    assert!(
        error.contains(&format!(
            "WeChat Pay's ALL bill for {date} is longer than {limit} bytes"
        )),
        "{error}"
    );
    assert!(tickets(&w.app).await.is_empty());
    w.fault(|d| d.packed = None);
    resume_completes(&w.app, &run_id).await;
}

/// WeChat Pay's published ALL bill with 手续费 to five places (0.6% of
/// 19.99 is 0.11994) and 手续费总金额 their exact sum: the day reconciles,
/// its fees summed exactly and booked rounded once to the fen. A total the
/// rows do not add up to fails the run naming both figures, reading none.
async fn a_wechat_bill_with_fees_in_fractions_of_a_fen_reconciles_exactly(b: Backend) {
    let w = spawn(b).await;
    let date = w.today();
    let mut rows = Vec::new();
    for order in ["WXF1", "WXF2", "WXF3"] {
        rows.push(w.paid(order, 1999).await);
    }
    let rows: Vec<Row> = rows
        .iter()
        .map(|(p, txn)| Row {
            txn,
            payment_no: p,
            currency: "CNY",
            amount: "19.99",
            refund: None,
        })
        .collect();
    let plain = String::from_utf8(bill(&date, &rows)).unwrap();
    let exact = |total: &str| {
        let (body, summary) = plain.trim_end().rsplit_once("\r\n").unwrap();
        let body = body.replace("`0.01000,`0.60%", "`0.11994,`0.60%");
        let summary = summary.replace(",`0.03,", &format!(",`{total},"));
        format!("{body}\r\n{summary}\r\n").into_bytes()
    };
    w.put_bill("ALL", &date, exact("0.35981"));
    let error = reckon::recon::pull_statement(&w.app.engine, "wechat", &date, "test")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("手续费总金额: the statement says 0.35981 CNY, 0.35982 CNY read"),
        "{error}"
    );
    let (run_id, status): (String, String) =
        sqlx::query_as("SELECT run_id, status FROM recon_runs WHERE business_date = $1")
            .bind(&date)
            .fetch_one(&w.app.accounts.db.pool)
            .await
            .unwrap();
    assert_eq!(status, "FAILED");
    assert!(
        tickets(&w.app).await.is_empty(),
        "nothing of the day written"
    );
    w.put_bill("ALL", &date, exact("0.35982"));
    let run = reckon::recon::resume_run(&w.app.engine, &run_id)
        .await
        .unwrap();
    assert_eq!(
        (run.status.as_str(), run.rows_read),
        ("COMPLETED", 3),
        "{run:?}"
    );
    assert!(tickets(&w.app).await.is_empty());
    let figures: serde_json::Value =
        serde_json::from_str(run.figures_json.as_deref().unwrap()).unwrap();
    let cny = &figures["fees_and_net"]["currencies"]["CNY"];
    assert_eq!(cny["fees_e5"], 35_982, "{cny}");
    assert_eq!(cny["fees_minor"], 36, "booked once, rounded: {cny}");
    assert_eq!(cny["net_minor"], 3 * 1999 - 36, "{cny}");
}

/// The fund-flow bill of the basic account, through the same checks.
async fn the_wechat_fund_flow_bill_is_applied_for_downloaded_and_checked(b: Backend) {
    let w = spawn(b).await;
    let ProviderConfig::WechatPay(config) = &w.app.config.providers[0] else {
        unreachable!("the wechat account");
    };
    let wechat = reckon::providers::wechatpay::WechatPay::new(
        reckon::domain::ProviderName::parse("wechat").unwrap(),
        config,
    )
    .unwrap();
    let date = w.today();
    let fund = "\u{feff}记账时间,微信支付业务单号,资金流水单号,业务名称,业务类型,收支类型,收支金额（元）,账户结余（元）,资金变更提交申请人,备注,业务凭证号\r\n\
`2026-11-30 04:21:23,`50000305742018020103387128253,`1900009231201802015884652186,`退款,`退款,`支出,`0.02,`0.17,`system,`缺货,`REF4200000068201801293084726067\r\n\
资金流水总笔数,收入笔数,收入金额,支出笔数,支出金额\r\n`1.0,`0.0,`0.00,`1.0,`0.02\r\n";
    // NO_STATEMENT_EXIST: no bill, for want of a movement that day.
    let none = wechat.fund_flow_bill(&date).await.unwrap_err();
    assert!(matches!(none, CallError::NoStatement(_)), "{none:?}");
    w.put_bill("BASIC", &date, fund.as_bytes().to_vec());
    let file = wechat.fund_flow_bill(&date).await.unwrap();
    assert_eq!(
        std::fs::read(file.body.path()).unwrap(),
        fund.as_bytes(),
        "gunzipped, BOM kept"
    );
    assert_eq!(file.bill_type, "BASIC fund flow");
    w.fault(|d| d.wrong_hash = true);
    let err = wechat.fund_flow_bill(&date).await.unwrap_err();
    assert!(err.to_string().contains("SHA1"), "{err}");
    let err = wechat.fund_flow_bill("2026-13-01").await.unwrap_err();
    assert!(err.to_string().contains("YYYY-MM-DD"), "{err}");
    assert_eq!(
        w.api.bad_requests.load(std::sync::atomic::Ordering::SeqCst),
        0
    );
}

/// `reckon recon pull --provider wechat --date D` pulls the bill.
async fn reckon_recon_pull_pulls_a_wechat_bill(b: Backend) {
    let w = spawn(b).await;
    let (date, bill) = w.one_paid_day().await;
    let ProviderConfig::WechatPay(c) = &w.app.config.providers[0] else {
        unreachable!("the wechat account");
    };
    let section = format!(
        "[[providers]]\nkind = \"wechatpay\"\nname = \"wechat\"\nbase_url = \"{}\"\napi_key = \"{APIV3_KEY}\"\nmch_id = \"{MCH_ID}\"\ncert_serial = \"{}\"\nprivate_key = '''\n{}'''\n\n[providers.platform_keys]\n\"{SERIAL}\" = '''\n{}'''\n",
        c.base_url,
        c.cert_serial.as_deref().unwrap(),
        c.private_key.as_ref().unwrap().expose_secret(),
        c.platform_keys[SERIAL],
    );
    cli_pulls_once_ready(&w.app, &section, "wechat", &date, || {
        w.put_bill("ALL", &date, bill)
    })
    .await;
}

/// NO_STATEMENT_EXIST, signed, for a day Reckon has no business of its own
/// either and whose bill is overdue: an empty statement, the run COMPLETED
/// with no ticket. Before the bill is overdue, unsigned, or for a day with
/// a payment of Reckon's: not ready (a late bill, or trades WeChat Pay does
/// not list), asked again and alerted if it stays so.
async fn no_wechat_bill_for_a_day_without_trades_is_an_empty_day(b: Backend) {
    let w = spawn(b).await;
    let busy = w.today();
    w.paid("WXP-1", 1999).await;
    w.clock.advance_secs(86_400);
    let quiet = w.today();
    let (_, error) = pull_fails(&w.app, "wechat", &quiet).await;
    assert!(error.starts_with("not ready:"), "{error}");
    assert!(error.contains("before the bill is overdue"), "{error}");
    w.clock.advance_secs(2 * 86_400);
    w.fault(|d| d.unsigned_refusals = true);
    let (_, error) = pull_fails(&w.app, "wechat", &quiet).await;
    assert!(error.starts_with("not ready:"), "{error}");
    assert!(error.contains("NO_STATEMENT_EXIST"), "{error}");
    w.fault(|d| d.unsigned_refusals = false);
    let run = reckon::recon::pull_statement(&w.app.engine, "wechat", &quiet, "test")
        .await
        .unwrap();
    assert_eq!(
        (run.status.as_str(), run.rows_read),
        ("COMPLETED", 0),
        "{run:?}"
    );
    assert_eq!(
        run.bill_type.as_deref(),
        Some("none (no bill: no trade that day)")
    );
    let (_, error) = pull_fails(&w.app, "wechat", &busy).await;
    assert!(error.starts_with("not ready:"), "{error}");
    assert!(
        error.contains("Reckon has 1 payments or refunds"),
        "{error}"
    );
    assert!(tickets(&w.app).await.is_empty());
}

/// A fund-flow bill as WeChat Pay writes it (published layout: a BOM, CRLF,
/// every value after a backtick, the running 账户结余 from 1000.00, the
/// summary's counts and totals as the rows make them): each movement
/// (业务类型, 收支类型, fen, 资金流水单号).
fn fund_flow(date: &str, moves: &[(&str, &str, i64, &str)]) -> Vec<u8> {
    let yuan = |c: i64| format!("{}.{:02}", c / 100, c % 100);
    let mut text = String::from(
        "\u{feff}记账时间,微信支付业务单号,资金流水单号,业务名称,业务类型,收支类型,收支金额（元）,账户结余（元）,资金变更提交申请人,备注,业务凭证号\r\n",
    );
    let mut balance = 100_000;
    let (mut inn, mut inn_n, mut out, mut out_n) = (0, 0, 0, 0);
    for (i, (kind, direction, fen, flow)) in moves.iter().enumerate() {
        if *direction == "收入" {
            balance += fen;
            inn += fen;
            inn_n += 1;
        } else {
            balance -= fen;
            out += fen;
            out_n += 1;
        }
        let name = if *kind == "扣除交易手续费" {
            "交易"
        } else {
            kind
        };
        text.push_str(&format!(
            "`{date} 11:{:02}:00,`4200{i},`{flow},`{name},`{kind},`{direction},`{},`{},`{MCH_ID}API,`,`\r\n",
            i % 60,
            yuan(*fen),
            yuan(balance)
        ));
    }
    text.push_str("资金流水总笔数,收入笔数,收入金额,支出笔数,支出金额\r\n");
    text.push_str(&format!(
        "`{}.0,`{inn_n}.0,`{},`{out_n}.0,`{}\r\n",
        moves.len(),
        yuan(inn),
        yuan(out)
    ));
    text.into_bytes()
}

/// A day whose fund-flow bill agrees with its trade bill (19.99 in, its
/// 0.01 fee, 19.98 withdrawn): the pull settles it after the trade bill,
/// the day closes by itself with the balance side in its signed body, the
/// withdrawal is a payout, and the bank's credit of it matches.
async fn a_wechat_day_whose_fund_flow_agrees_closes_three_way(b: Backend) {
    let w = spawn(b).await;
    let (date, bill) = w.one_paid_day().await;
    w.put_bill("ALL", &date, bill);
    w.put_bill(
        "BASIC",
        &date,
        fund_flow(
            &date,
            &[
                ("交易", "收入", 1999, "F1"),
                ("扣除交易手续费", "支出", 1, "F2"),
                ("提现", "支出", 1998, "F3"),
            ],
        ),
    );
    let run = reckon::recon::pull_statement(&w.app.engine, "wechat", &date, "test")
        .await
        .unwrap();
    assert_eq!(run.status, "COMPLETED", "{run:?}");
    assert_eq!(settlement(&w.app, "wechat", &date).await.0, "AGREED");
    let body = closed_body(&w.app, "wechat", &date)
        .await
        .expect("the day closed three-way");
    let cny = &body["settlement"]["currencies"]["CNY"];
    assert_eq!(cny["trade"]["net_minor"], 1998, "{body}");
    assert_eq!(cny["balance"]["trade_net"], 1998, "{body}");
    assert_eq!(cny["balance"]["withdrawn"], 1998, "{body}");
    assert_eq!(cny["difference_minor"], 0, "{body}");
    assert!(settlement_tickets(&w.app).await.is_empty());
    assert_eq!(
        payouts(&w.app).await,
        [("F3".to_owned(), 1998, "PENDING".to_owned())]
    );
    bank_credit(&w.app, &date, "19.98", "F3", "财付通支付科技有限公司").await;
    assert_eq!(payouts(&w.app).await[0].2, "PAYOUT_MATCHED");
    // The console's close section shows the balance side beside the net.
    let desk = w.app.signed_in("olga", app::types::Role::Operator).await;
    let res = w
        .app
        .call_with(&desk, "closes/list", &[("day", &date)])
        .await;
    assert_eq!(res.status(), 200);
    let closes: serde_json::Value = res.json().await.unwrap();
    let day = closes
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["provider"] == "wechat")
        .unwrap();
    assert_eq!(day["state"], "CLOSED", "{day}");
    assert_eq!(day["settlement"]["state"], "AGREED", "{day}");
    let line = &day["settlement"]["lines"][0];
    assert_eq!(line["balance_net"], "19.98 CNY", "{day}");
    assert_eq!(line["withdrawn"], "19.98 CNY", "{day}");
    assert_eq!(line["difference"], "0.00 CNY", "{day}");
}

/// A fee the trade bill states and the balance never shows taken, then a
/// withdrawal the bank credits short: each a PAYOUT_AMOUNT_MISMATCH, the
/// first on the day, which stays open.
async fn a_wechat_fund_flow_missing_a_fee_or_a_short_withdrawal_opens_a_ticket(b: Backend) {
    let w = spawn(b).await;
    let (date, bill) = w.one_paid_day().await;
    w.put_bill("ALL", &date, bill);
    w.put_bill(
        "BASIC",
        &date,
        fund_flow(
            &date,
            &[("交易", "收入", 1999, "F1"), ("提现", "支出", 1999, "F3")],
        ),
    );
    reckon::recon::pull_statement(&w.app.engine, "wechat", &date, "test")
        .await
        .unwrap();
    assert_eq!(settlement(&w.app, "wechat", &date).await.0, "DIFFERS");
    assert_eq!(
        settlement_tickets(&w.app).await,
        [(
            "PAYOUT_AMOUNT_MISMATCH".to_owned(),
            "OPEN".to_owned(),
            Some(date.clone()),
            1998,
            1999
        )]
    );
    assert!(closed_body(&w.app, "wechat", &date).await.is_none());
    bank_credit(&w.app, &date, "19.00", "F3 wechat payout", "Tenpay").await;
    assert_eq!(payouts(&w.app).await[0].2, "PAYOUT_AMOUNT_MISMATCH");
    let bank: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM discrepancies WHERE source = 'bank' AND class = 'PAYOUT_AMOUNT_MISMATCH'",
    )
    .fetch_one(&w.app.accounts.db.pool)
    .await
    .unwrap();
    assert_eq!(bank, 1);
}

/// The schedule pulls the trade bill and asks for the fund-flow bill after
/// it; not there yet, the day waits (not closed) and is asked again once
/// its next try is due, then settles and closes.
async fn the_schedule_asks_for_the_fund_flow_bill_after_the_trade_bill(b: Backend) {
    let w = spawn(b).await;
    let (date, bill) = w.one_paid_day().await;
    w.put_bill("ALL", &date, bill);
    // A day and a half on: the day's bills are past their ready time.
    w.clock.advance_secs(36 * 3600);
    let engine = &w.app.engine;
    reckon::recon::scheduled_pulls(engine, engine.now())
        .await
        .unwrap();
    let (state, error) = settlement(&w.app, "wechat", &date).await;
    assert_eq!(state, "WAITING");
    assert!(error.contains("NO_STATEMENT_EXIST"), "{error}");
    assert!(closed_body(&w.app, "wechat", &date).await.is_none());
    w.put_bill(
        "BASIC",
        &date,
        fund_flow(
            &date,
            &[
                ("交易", "收入", 1999, "F1"),
                ("扣除交易手续费", "支出", 1, "F2"),
            ],
        ),
    );
    // Not due yet: not asked again.
    w.clock.advance_secs(60);
    reckon::recon::scheduled_pulls(engine, engine.now())
        .await
        .unwrap();
    assert_eq!(settlement(&w.app, "wechat", &date).await.0, "WAITING");
    w.clock.advance_secs(30 * 60);
    reckon::recon::scheduled_pulls(engine, engine.now())
        .await
        .unwrap();
    assert_eq!(settlement(&w.app, "wechat", &date).await.0, "AGREED");
    assert!(closed_body(&w.app, "wechat", &date).await.is_some());
}

/// A fund-flow bill whose summary disagrees with its rows is refused,
/// saying so, and nothing of it is kept: no payout, no ticket, no close.
async fn a_malformed_wechat_fund_flow_is_refused_keeping_nothing(b: Backend) {
    let w = spawn(b).await;
    let (date, bill) = w.one_paid_day().await;
    w.put_bill("ALL", &date, bill);
    let good = fund_flow(
        &date,
        &[
            ("交易", "收入", 1999, "F1"),
            ("扣除交易手续费", "支出", 1, "F2"),
            ("提现", "支出", 1998, "F3"),
        ],
    );
    let text = String::from_utf8(good).unwrap();
    let bad = text.replace("`2.0,`19.99", "`2.0,`20.99");
    assert_ne!(bad, text);
    w.put_bill("BASIC", &date, bad.into_bytes());
    reckon::recon::pull_statement(&w.app.engine, "wechat", &date, "test")
        .await
        .unwrap();
    let (state, error) = settlement(&w.app, "wechat", &date).await;
    assert_eq!(state, "REFUSED");
    assert!(error.contains("支出金额"), "{error}");
    let err = reckon::recon::settle_day(&w.app.engine, "wechat", &date)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("nothing of it was kept"), "{err}");
    assert!(payouts(&w.app).await.is_empty());
    assert!(settlement_tickets(&w.app).await.is_empty());
    assert!(closed_body(&w.app, "wechat", &date).await.is_none());
    // Asked through the API: refused the same, 422, still nothing kept.
    let token = w
        .app
        .api_token_with("settle", &[app::tokens::Scope::ReconWrite])
        .await;
    let settle = |token: String, date: String| {
        let app = &w.app;
        async move {
            let res = app
                .client
                .post(format!("{}/api/v1/recon/settlements", app.base))
                .bearer_auth(token)
                .json(&serde_json::json!({"provider": "wechat", "business_date": date}))
                .send()
                .await
                .unwrap();
            (
                res.status().as_u16(),
                res.json::<serde_json::Value>().await.unwrap(),
            )
        }
    };
    let (status, body) = settle(token.clone(), date.clone()).await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body.to_string().contains("nothing of it was kept"),
        "{body}"
    );
    assert!(payouts(&w.app).await.is_empty());
    // A token that may only read is refused.
    let reader = w
        .app
        .api_token_with("read", &[app::tokens::Scope::ReconRead])
        .await;
    assert_eq!(settle(reader, date.clone()).await.0, 403);
    // The good bill, once WeChat Pay has it: settled and closed.
    w.put_bill("BASIC", &date, text.into_bytes());
    let (status, body) = settle(token, date.clone()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "AGREED", "{body}");
    assert_eq!(body["provider"], "wechat", "{body}");
    assert!(
        body["figures"].is_object() || body["figures"].is_array(),
        "{body}"
    );
    assert!(closed_body(&w.app, "wechat", &date).await.is_some());
}

both_databases!(
    no_wechat_bill_for_a_day_without_trades_is_an_empty_day,
    a_pulled_wechat_bill_with_every_class_makes_exactly_its_tickets,
    a_wechat_pull_not_ready_broken_or_slow_fails_and_resume_completes,
    a_wechat_bill_with_a_wrong_hash_or_a_forged_answer_reads_no_row,
    the_wechat_fund_flow_bill_is_applied_for_downloaded_and_checked,
    reckon_recon_pull_pulls_a_wechat_bill,
    a_wechat_bomb_or_an_overlong_download_is_refused_reading_nothing,
    a_wechat_bill_with_fees_in_fractions_of_a_fen_reconciles_exactly,
    a_wechat_day_whose_fund_flow_agrees_closes_three_way,
    a_wechat_fund_flow_missing_a_fee_or_a_short_withdrawal_opens_a_ticket,
    a_malformed_wechat_fund_flow_is_refused_keeping_nothing,
    the_schedule_asks_for_the_fund_flow_bill_after_the_trade_bill,
);
