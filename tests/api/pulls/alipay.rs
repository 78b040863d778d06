//! Alipay's bill API as tests/api/alipay.rs's gateway plays it:
//! `alipay.data.dataservice.bill.downloadurl.query` checked for the app's
//! RSA2 signature and answered signed with Alipay's key (a
//! `bill_download_url`, or `40004 isp.bill_not_exist`); the URL answers a
//! zip of the 业务明细 and its 汇总, both GBK.

use super::{
    assert_every_class, bank_credit, cli_pulls_once_ready, closed_body, payouts, pull_fails,
    resume_completes, resume_fails, settlement, settlement_tickets,
};
use crate::alipay::{APP_ID, AlipayApp, Gateway, spawn, spawn_limited};
use crate::both_databases;
use crate::helpers::Backend;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use reckon::config::ProviderConfig;
use reckon::providers::CallError;
use secrecy::ExposeSecret;
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::Ordering;

const PID: &str = "20880000000000010156";

/// The bills Alipay has made, and the faults it is to show next.
#[derive(Default)]
pub(crate) struct Desk {
    /// The server's own address, for the bill_download_url.
    pub(crate) base: String,
    /// date → (业务明细, 汇总), as Alipay writes them (GBK).
    bills: BTreeMap<String, (Vec<u8>, Vec<u8>)>,
    /// date → the 账务明细 (bill_type=signcustomer), as Alipay writes it.
    accounts: BTreeMap<String, Vec<u8>>,
    /// The next this many downloads answer 500.
    broken_downloads: usize,
    downloads: usize,
    /// Downloads answer these bytes as they are (a bomb, too many
    /// entries, an overlong download) instead of the day's zip.
    packed: Option<Vec<u8>>,
}

pub(crate) fn routes() -> axum::Router<Gateway> {
    axum::Router::new().route("/downloadBillFile.resource", axum::routing::get(download))
}

/// The `…_response` of a bill's download URL query.
pub(crate) fn bill_answer(g: &Gateway, biz: &serde_json::Value) -> serde_json::Value {
    let date = biz["bill_date"].as_str().unwrap_or_default();
    let desk = g.bills.lock().unwrap();
    let compact = date.replace('-', "");
    if biz["bill_type"] == "signcustomer" && desk.accounts.contains_key(date) {
        return serde_json::json!({"code": "10000", "msg": "Success",
            "bill_download_url": format!("{}/downloadBillFile.resource?bizType=signcustomer&userId={PID}&fileType=csv.zip&bizDates={compact}&downloadFileName={PID}_{compact}.csv.zip&fileId=acct-{date}", desk.base)});
    }
    if biz["bill_type"] != "trade" || !desk.bills.contains_key(date) {
        return serde_json::json!({"code": "40004", "msg": "Business Failed",
            "sub_code": "isp.bill_not_exist", "sub_msg": "账单不存在"});
    }
    serde_json::json!({"code": "10000", "msg": "Success",
        "bill_download_url": format!("{}/downloadBillFile.resource?bizType=trade&userId={PID}&fileType=csv.zip&bizDates={compact}&downloadFileName={PID}_{compact}.csv.zip&fileId={date}", desk.base)})
}

/// The zip, fetched with a plain GET.
async fn download(State(g): State<Gateway>, Query(q): Query<BTreeMap<String, String>>) -> Response {
    let mut desk = g.bills.lock().unwrap();
    if desk.broken_downloads > 0 {
        desk.broken_downloads -= 1;
        return (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "").into_response();
    }
    desk.downloads += 1;
    if let Some(packed) = desk.packed.clone() {
        return ([("content-type", "application/oct-stream")], packed).into_response();
    }
    let date = q.get("fileId").cloned().unwrap_or_default();
    if let Some(day) = date.strip_prefix("acct-") {
        let Some(account) = desk.accounts.get(day) else {
            return (axum::http::StatusCode::NOT_FOUND, "").into_response();
        };
        let compact = day.replace('-', "");
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        zip.start_file(format!("{PID}_{compact}_账务明细.csv"), options)
            .unwrap();
        zip.write_all(account).unwrap();
        zip.start_file(format!("{PID}_{compact}_账务明细(汇总).csv"), options)
            .unwrap();
        zip.write_all(&encoding_rs::GBK.encode("#支付宝账务汇总查询\r\n").0)
            .unwrap();
        let bytes = zip.finish().unwrap().into_inner();
        return ([("content-type", "application/oct-stream")], bytes).into_response();
    }
    let Some((detail, summary)) = desk.bills.get(&date) else {
        return (axum::http::StatusCode::NOT_FOUND, "").into_response();
    };
    let bytes = bill_zip(&date, detail, summary);
    ([("content-type", "application/oct-stream")], bytes).into_response()
}

/// The trade bill's zip as Alipay serves it (and its portal downloads it).
fn bill_zip(date: &str, detail: &[u8], summary: &[u8]) -> Vec<u8> {
    let compact = date.replace('-', "");
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file(format!("{PID}_{compact}_业务明细.csv"), options)
        .unwrap();
    zip.write_all(detail).unwrap();
    zip.start_file(format!("{PID}_{compact}_业务明细(汇总).csv"), options)
        .unwrap();
    zip.write_all(summary).unwrap();
    zip.finish().unwrap().into_inner()
}

/// A 业务明细 row: 支付宝交易号, 商户订单号, 交易 or 退款, 订单金额 (negative
/// for a refund), 退款批次号/请求号.
struct Row<'a>(&'a str, &'a str, &'a str, &'a str, &'a str);

/// The 业务明细 and its 汇总 as Alipay writes them: GBK, `#` lines around
/// the tables, ids ending in a tab; the 汇总's 合计 as `summary` says
/// (trades, refunds, 商家实收) or, without it, as the detail adds up.
fn bill(date: &str, rows: &[Row], summary: Option<(i64, i64, &str)>) -> (Vec<u8>, Vec<u8>) {
    let cents = |a: &str| -> i64 {
        let (sign, a) = a.strip_prefix('-').map_or((1, a), |a| (-1, a));
        let (major, minor) = a.split_once('.').unwrap();
        sign * (major.parse::<i64>().unwrap() * 100 + minor.parse::<i64>().unwrap())
    };
    let yuan = |c: i64| {
        format!(
            "{}{}.{:02}",
            if c < 0 { "-" } else { "" },
            c.abs() / 100,
            c.abs() % 100
        )
    };
    let mut detail = format!(
        "#支付宝业务明细查询\r\n#账号：[{PID}]\r\n#起始日期：[{date} 00:00:00]   终止日期：[{date} 23:59:59]\r\n#-----------------------------------------业务明细列表----------------------------------------\r\n\
支付宝交易号,商户订单号,业务类型,商品名称,创建时间,完成时间,门店编号,门店名称,操作员,终端号,对方账户,订单金额（元）,商家实收（元）,支付宝红包（元）,集分宝（元）,支付宝优惠（元）,商家优惠（元）,券核销金额（元）,券名称,商家红包消费金额（元）,卡消费金额（元）,退款批次号/请求号,服务费（元）,分润（元）,备注\r\n"
    );
    let (mut trades, mut refunds, mut paid, mut returned) = (0, 0, 0, 0);
    for Row(txn, no, kind, amount, refund_no) in rows {
        if *kind == "交易" {
            trades += 1;
            paid += cents(amount);
        } else {
            refunds += 1;
            returned += cents(amount);
        }
        detail.push_str(&format!(
            "{txn}\t,{no}\t,{kind}\t,测试商品,{date} 09:00:00,{date} 09:00:05,\t,\t,\t,\t,张*(a***@x.com)\t,{amount},{amount},0.00,0.00,0.00,0.00,0.00,,0.00\t,0.00,{refund_no}\t,0.00,0.00,\r\n"
        ));
    }
    detail.push_str(&format!(
        "#-----------------------------------------业务明细列表结束------------------------------------\r\n\
#交易合计：{trades}笔，商家实收共{}元，商家优惠共0.00元\r\n#退款合计：{refunds}笔，商家实收退款共{}元，商家优惠退款共0.00元\r\n#导出时间：[{date} 09:30:00]\r\n",
        yuan(paid),
        yuan(returned)
    ));
    let net = yuan(paid + returned);
    let (t, r, m) = summary.unwrap_or((trades, refunds, &net));
    let total = format!(
        "#支付宝业务汇总查询\r\n#账号：[{PID}]\r\n#起始日期：[{date} 00:00:00]   终止日期：[{date} 23:59:59]\r\n#-----------------------------------------业务汇总列表----------------------------------------\r\n\
门店编号,门店名称,交易订单总笔数,退款订单总笔数,订单金额（元）,商家实收（元）,支付宝优惠（元）,商家优惠（元）,卡消费金额（元）,服务费（元）,分润（元）,实收净额（元）\r\n\
\t,\t,{t},{r},{m},{m},0.00,0.00,0.00,0.00,0.00,{m}\r\n\
合计,,{t},{r},{m},{m},0.00,0.00,0.00,0.00,0.00,{m}\r\n\
#----------------------------------------业务汇总列表结束-------------------------------------\r\n#导出时间：[{date} 09:30:00]\r\n"
    );
    let gbk = |s: &str| encoding_rs::GBK.encode(s).0.into_owned();
    (gbk(&detail), gbk(&total))
}

/// The 账务明细 as Alipay writes it (published layout: GBK, `#` lines
/// around the table, ids ending in a tab, the newest movement first, the
/// running 账户余额 from 500.00, the #支出合计 and #收入合计 as the rows make
/// them): each movement (业务类型, fen signed, 账务流水号), oldest first.
fn account_log(date: &str, moves: &[(&str, i64, &str)]) -> Vec<u8> {
    let yuan = |c: i64| {
        format!(
            "{}{}.{:02}",
            if c < 0 { "-" } else { "" },
            c.abs() / 100,
            c.abs() % 100
        )
    };
    let mut balance = 50_000;
    let (mut inn, mut inn_n, mut out, mut out_n) = (0, 0, 0, 0);
    let mut rows = Vec::new();
    for (i, (kind, fen, flow)) in moves.iter().enumerate() {
        balance += fen;
        let (income, expense) = if *fen > 0 {
            inn += fen;
            inn_n += 1;
            (yuan(*fen), "0.00".to_owned())
        } else {
            out -= fen;
            out_n += 1;
            ("0.00".to_owned(), yuan(*fen))
        };
        rows.push(format!(
            "{flow}\t,2026113020004001110000000{i}\t,ALP-1\t,测试商品\t,{date} 12:{:02}:00,张*(a***@x.com)\t,{income},{expense},{},支付宝,{kind},\r\n",
            i % 60,
            yuan(balance)
        ));
    }
    rows.reverse();
    let text = format!(
        "#支付宝账务明细查询\r\n#账号：[{PID}]\r\n#起始日期：[{date} 00:00:00]   终止日期：[{date} 23:59:59]\r\n#-----------------------------------------账务明细列表----------------------------------------\r\n\
账务流水号,业务流水号,商户订单号,商品名称,发生时间,对方账号,收入金额（+元）,支出金额（-元）,账户余额（元）,交易渠道,业务类型,备注\r\n\
{}#-----------------------------------------账务明细列表结束------------------------------------\r\n\
#支出合计：{out_n}笔，共{}元\r\n#收入合计：{inn_n}笔，共{}元\r\n#导出时间：[{date} 09:30:00]\r\n",
        rows.concat(),
        yuan(-out),
        yuan(inn)
    );
    encoding_rs::GBK.encode(&text).0.into_owned()
}

impl AlipayApp {
    fn put_account_log(&self, date: &str, bytes: Vec<u8>) {
        self.gateway
            .bills
            .lock()
            .unwrap()
            .accounts
            .insert(date.to_owned(), bytes);
    }

    /// A day with one payment of 19.99 whose 服务费 is 0.12: its bill.
    async fn one_paid_day_with_a_fee(&self) -> (String, (Vec<u8>, Vec<u8>)) {
        let (date, detail, summary) = self.one_paid_day().await;
        let text = encoding_rs::GBK.decode(&detail).0.into_owned();
        let with_fee = text.replacen("\t,0.00,0.00,\r\n", "\t,-0.12,0.00,\r\n", 1);
        assert_ne!(with_fee, text);
        let detail = encoding_rs::GBK.encode(&with_fee).0.into_owned();
        (date, (detail, summary))
    }

    fn put_bill(&self, date: &str, files: (Vec<u8>, Vec<u8>)) {
        self.gateway
            .bills
            .lock()
            .unwrap()
            .bills
            .insert(date.to_owned(), files);
    }

    /// A payment paid by a signed notification; its trade_no.
    async fn paid(&self, order: &str, fen: i64) -> (String, String) {
        let p = self.app.register_payment("alipay", order, fen, "CNY").await;
        let id = format!("N{order}");
        let major = format!("{}.{:02}", fen / 100, fen % 100);
        let form = self.form(self.fields(&id, &p, &major, 0), &self.key);
        assert_eq!(self.post(form).await, (200, "success".to_string()));
        (p, format!("2026{id}"))
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
    async fn one_paid_day(&self) -> (String, Vec<u8>, Vec<u8>) {
        let date = self.today();
        let (p, txn) = self.paid("ALP-1", 1999).await;
        let (detail, summary) = bill(&date, &[Row(&txn, &p, "交易", "19.99", "")], None);
        (date, detail, summary)
    }
}

async fn a_pulled_alipay_bill_with_every_class_makes_exactly_its_tickets(b: Backend) {
    let a = spawn(b).await;
    let date = a.today();
    let (pa, txn_a) = a.paid("ALA", 10000).await;
    // STATUS_LAG: paid at Alipay, its notification lost.
    let lag = a.app.register_payment("alipay", "ALB", 2000, "CNY").await;
    a.gateway.trades.lock().unwrap().insert(
        lag.clone(),
        ("TRADE_SUCCESS".into(), "20.00".into(), "2026LAG".into()),
    );
    let (local_only, _) = a.paid("ALD", 3000).await;
    let (amount, txn_e) = a.paid("ALE", 1000).await;
    let (dup, txn_g) = a.paid("ALG", 500).await;
    let (one_to_many, _) = a.paid("ALH", 700).await;
    let rows = [
        Row(&txn_a, &pa, "交易", "100.00", ""),
        Row("2026LAG", &lag, "交易", "20.00", ""),
        // The seed's drill 5: a bill row with no local payment.
        Row("2026NOTHERE", "PAYNOTHERE", "交易", "12.34", ""),
        Row(&txn_e, &amount, "交易", "9.00", ""),
        Row(&txn_g, &dup, "交易", "5.00", ""),
        Row(&txn_g, &dup, "交易", "5.00", ""),
        Row("2026OTHER", &one_to_many, "交易", "7.00", ""),
        // A refund made at Alipay's dashboard, unknown to Reckon.
        Row(&txn_a, &pa, "退款", "-1.00", "DASHBOARD-1"),
    ];
    a.put_bill(&date, bill(&date, &rows, None));
    let run = reckon::recon::pull_statement(&a.app.engine, "alipay", &date, "test")
        .await
        .unwrap();
    assert_eq!(run.status, "COMPLETED", "{run:?}");
    assert_eq!((run.source.as_str(), run.rows_read), ("pull", 8));
    let compact = date.replace('-', "");
    assert_eq!(
        run.file_name.as_deref(),
        Some(format!("{PID}_{compact}_业务明细.csv").as_str())
    );
    // An Alipay bill is all CNY: no currency to mismatch.
    assert_every_class(&a.app, &run, false, &local_only, &lag).await;
}

/// No bill yet, then a download that breaks, then a slow answer: each
/// fails the run with nothing read, and resume completes it.
async fn an_alipay_pull_not_ready_broken_or_slow_fails_and_resume_completes(b: Backend) {
    let a = spawn(b).await;
    let (date, detail, summary) = a.one_paid_day().await;
    let (run_id, error) = pull_fails(&a.app, "alipay", &date).await;
    assert!(error.starts_with("not ready:"), "{error}");
    assert!(error.contains("isp.bill_not_exist"), "{error}");
    a.put_bill(&date, (detail, summary));
    // The download breaks: asked for, not downloaded.
    a.gateway.bills.lock().unwrap().broken_downloads = 1;
    let error = resume_fails(&a.app, &run_id).await;
    assert!(
        error.contains("500") && !error.starts_with("not ready"),
        "{error}"
    );
    // Too slow: the call times out, its result unknown.
    a.gateway.stall.store(1, Ordering::SeqCst);
    let error = resume_fails(&a.app, &run_id).await;
    assert!(error.contains(&CallError::Timeout.to_string()), "{error}");
    resume_completes(&a.app, &run_id).await;
    assert_eq!(a.gateway.bills.lock().unwrap().downloads, 1);
}

/// A 汇总 that disagrees with its 业务明细, or a forged answer: the run
/// fails and reads no row.
async fn an_alipay_bill_off_its_summary_or_a_forged_answer_reads_no_row(b: Backend) {
    let a = spawn(b).await;
    let date = a.today();
    let (p, txn) = a.paid("ALP-2", 1999).await;
    let rows = [Row(&txn, &p, "交易", "19.99", "")];
    a.put_bill(&date, bill(&date, &rows, Some((2, 0, "39.98"))));
    let (run_id, error) = pull_fails(&a.app, "alipay", &date).await;
    assert!(
        error.contains("汇总") && error.contains("2 trades"),
        "{error}"
    );
    // The amount alone off.
    a.put_bill(&date, bill(&date, &rows, Some((1, 0, "19.98"))));
    let error = resume_fails(&a.app, &run_id).await;
    assert!(error.contains("1998 fen"), "{error}");
    a.put_bill(&date, bill(&date, &rows, None));
    a.gateway.forge.store(1, Ordering::SeqCst);
    let error = resume_fails(&a.app, &run_id).await;
    assert!(error.contains("signature does not verify"), "{error}");
    assert_eq!(
        a.gateway.bills.lock().unwrap().downloads,
        2,
        "a forged answer is not followed"
    );
    resume_completes(&a.app, &run_id).await;
}

/// A zip of the named entries, deflated.
fn zip_of(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in entries {
        zip.start_file(name.as_str(), options).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

/// A zip whose every entry claims to unpack to `size` bytes: the
/// uncompressed size of its local headers and central directory rewritten.
fn lying_about_size(mut zip: Vec<u8>, size: u32) -> Vec<u8> {
    for (signature, at) in [(b"PK\x03\x04", 22), (b"PK\x01\x02", 24)] {
        let starts: Vec<usize> = zip
            .windows(4)
            .enumerate()
            .filter(|(_, w)| w == signature)
            .map(|(i, _)| i)
            .collect();
        for i in starts {
            zip[i + at..i + at + 4].copy_from_slice(&size.to_le_bytes());
        }
    }
    zip
}

/// With `max_bill_bytes` at 1 MiB: a zip whose entry unpacks to 64 MiB
/// (declared so, or declared small), a zip of more entries than a bill
/// has, and a download longer than the limit are each refused by name,
/// the run FAILED with no row read and no file kept; the bill then
/// completes.
async fn alipay_bombs_and_overlong_downloads_are_refused_reading_nothing(b: Backend) {
    let limit = 1 << 20;
    let a = spawn_limited(b, Some(limit)).await;
    let (date, detail, summary) = a.one_paid_day().await;
    a.put_bill(&date, (detail, summary.clone()));
    let compact = date.replace('-', "");
    let detail_name = format!("{PID}_{compact}_业务明细.csv");
    let summary_name = format!("{PID}_{compact}_业务明细(汇总).csv");
    let zeros = vec![b'0'; 64 << 20];
    let bomb = zip_of(&[
        (detail_name.clone(), zeros.clone()),
        (summary_name.clone(), summary.clone()),
    ]);
    assert!(bomb.len() < 1 << 20, "{} bytes on the wire", bomb.len());
    let pack = |bytes: Vec<u8>| a.gateway.bills.lock().unwrap().packed = Some(bytes);
    pack(bomb.clone());
    let (run_id, error) = pull_fails(&a.app, "alipay", &date).await;
    assert!(
        error.contains("业务明细.csv")
            && error.contains(&format!(
                "declares {} bytes, past the {limit} bytes",
                64 << 20
            )),
        "{error}"
    );
    // The same entry claiming 1,000 bytes: cut where its claim ends.
    pack(lying_about_size(bomb, 1000));
    let error = resume_fails(&a.app, &run_id).await;
    assert!(
        error.contains("unpacks to more than the 1000 bytes it declares"),
        "{error}"
    );
    let many: Vec<(String, Vec<u8>)> = (0..1000)
        .map(|i| (format!("{i}.csv"), Vec::new()))
        .collect();
    pack(zip_of(&many));
    let error = resume_fails(&a.app, &run_id).await;
    assert!(error.contains("declares 1000 entries"), "{error}");
    pack(vec![b'P'; 2 << 20]);
    let error = resume_fails(&a.app, &run_id).await;
    assert!(
        error.contains(&format!(
            "Alipay's trade bill for {date} is longer than {limit} bytes"
        )),
        "{error}"
    );
    a.gateway.bills.lock().unwrap().packed = None;
    resume_completes(&a.app, &run_id).await;
}

/// `reckon recon pull --provider alipay --date D` pulls the bill.
async fn reckon_recon_pull_pulls_an_alipay_bill(b: Backend) {
    let a = spawn(b).await;
    let (date, detail, summary) = a.one_paid_day().await;
    let ProviderConfig::Alipay(c) = &a.app.config.providers[0] else {
        unreachable!("the alipay account");
    };
    let section = format!(
        "[[providers]]\nkind = \"alipay\"\nname = \"alipay\"\nbase_url = \"{}\"\napp_id = \"{APP_ID}\"\npublic_key = \"{}\"\nprivate_key = '''\n{}'''\n",
        c.base_url,
        c.public_key,
        c.private_key.as_ref().unwrap().expose_secret(),
    );
    cli_pulls_once_ready(&a.app, &section, "alipay", &date, || {
        a.put_bill(&date, (detail, summary))
    })
    .await;
}

/// A day whose 账务明细 agrees with its trade bill (19.99 in, its 0.12
/// 服务费, 18.87 withdrawn): settled after the trade bill, closed by
/// itself with the balance side in its signed body; the withdrawal is a
/// payout the bank's credit matches.
async fn an_alipay_day_whose_account_log_agrees_closes_three_way(b: Backend) {
    let a = spawn(b).await;
    let (date, files) = a.one_paid_day_with_a_fee().await;
    a.put_bill(&date, files);
    a.put_account_log(
        &date,
        account_log(
            &date,
            &[
                ("在线支付", 1999, "2026113000000001"),
                ("收费", -12, "2026113000000002"),
                ("提现", -1887, "2026113000000003"),
            ],
        ),
    );
    let run = reckon::recon::pull_statement(&a.app.engine, "alipay", &date, "test")
        .await
        .unwrap();
    assert_eq!(run.status, "COMPLETED", "{run:?}");
    assert_eq!(settlement(&a.app, "alipay", &date).await.0, "AGREED");
    let body = closed_body(&a.app, "alipay", &date)
        .await
        .expect("the day closed three-way");
    let cny = &body["settlement"]["currencies"]["CNY"];
    assert_eq!(cny["trade"]["fees_minor"], 12, "{body}");
    assert_eq!(cny["trade"]["net_minor"], 1987, "{body}");
    assert_eq!(cny["balance"]["fees"], 12, "{body}");
    assert_eq!(cny["balance"]["withdrawn"], 1887, "{body}");
    assert_eq!(body["settlement"]["bill_type"], "signcustomer", "{body}");
    assert!(settlement_tickets(&a.app).await.is_empty());
    bank_credit(
        &a.app,
        &date,
        "18.87",
        "支付宝提现",
        "支付宝（中国）网络技术有限公司",
    )
    .await;
    assert_eq!(
        payouts(&a.app).await,
        [(
            "2026113000000003".to_owned(),
            1887,
            "PAYOUT_MATCHED".to_owned()
        )]
    );
}

/// The 服务费 the trade bill states, never taken from the balance: a
/// PAYOUT_AMOUNT_MISMATCH on the day, which stays open; a withdrawal the
/// bank credits short: another, on the bank side.
async fn an_alipay_account_log_missing_a_fee_or_a_short_withdrawal_opens_a_ticket(b: Backend) {
    let a = spawn(b).await;
    let (date, files) = a.one_paid_day_with_a_fee().await;
    a.put_bill(&date, files);
    a.put_account_log(
        &date,
        account_log(
            &date,
            &[
                ("在线支付", 1999, "2026113000000001"),
                ("提现", -1999, "2026113000000003"),
            ],
        ),
    );
    reckon::recon::pull_statement(&a.app.engine, "alipay", &date, "test")
        .await
        .unwrap();
    assert_eq!(settlement(&a.app, "alipay", &date).await.0, "DIFFERS");
    assert_eq!(
        settlement_tickets(&a.app).await,
        [(
            "PAYOUT_AMOUNT_MISMATCH".to_owned(),
            "OPEN".to_owned(),
            Some(date.clone()),
            1987,
            1999
        )]
    );
    assert!(closed_body(&a.app, "alipay", &date).await.is_none());
    bank_credit(&a.app, &date, "19.00", "2026113000000003", "支付宝").await;
    assert_eq!(payouts(&a.app).await[0].2, "PAYOUT_AMOUNT_MISMATCH");
}

/// A 账务明细 cut before its totals, then one whose balances do not
/// follow: refused, saying why, nothing of it kept.
async fn a_malformed_alipay_account_log_is_refused_keeping_nothing(b: Backend) {
    let a = spawn(b).await;
    let (date, files) = a.one_paid_day_with_a_fee().await;
    a.put_bill(&date, files);
    let good = account_log(
        &date,
        &[
            ("在线支付", 1999, "2026113000000001"),
            ("收费", -12, "2026113000000002"),
            ("提现", -1887, "2026113000000003"),
        ],
    );
    let text = encoding_rs::GBK.decode(&good).0.into_owned();
    let cut: String = text
        .lines()
        .take_while(|l| !l.starts_with("#支出合计"))
        .map(|l| format!("{l}\r\n"))
        .collect();
    a.put_account_log(&date, encoding_rs::GBK.encode(&cut).0.into_owned());
    reckon::recon::pull_statement(&a.app.engine, "alipay", &date, "test")
        .await
        .unwrap();
    let (state, error) = settlement(&a.app, "alipay", &date).await;
    assert_eq!(state, "REFUSED");
    assert!(error.contains("it was cut"), "{error}");
    let shifted = text.replace(",519.87,", ",519.97,");
    assert_ne!(shifted, text);
    a.put_account_log(&date, encoding_rs::GBK.encode(&shifted).0.into_owned());
    let err = reckon::recon::settle_day(&a.app.engine, "alipay", &date)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("balance"), "{err}");
    assert!(payouts(&a.app).await.is_empty());
    assert!(settlement_tickets(&a.app).await.is_empty());
    assert!(closed_body(&a.app, "alipay", &date).await.is_none());
}

/// The bill zip as Alipay's portal downloads it, uploaded as it is: the
/// 业务明细 is read once its 汇总 agrees; a zip whose 汇总 disagrees is
/// refused in the pull's words and starts no run.
async fn an_alipay_bill_zip_uploaded_as_downloaded_is_read_after_its_summary(b: Backend) {
    let a = spawn(b).await;
    let (date, detail, summary) = a.one_paid_day().await;
    let token = a.app.api_token("finance").await;
    let upload = |bytes: Vec<u8>| {
        let form = reqwest::multipart::Form::new()
            .text("provider", "alipay")
            .text("business_date", date.clone())
            .part(
                "file",
                reqwest::multipart::Part::bytes(bytes).file_name("bill.zip"),
            );
        a.app
            .client
            .post(format!("{}/api/v1/recon/runs", a.app.base))
            .bearer_auth(&token)
            .multipart(form)
            .send()
    };
    let (p, txn) = a.paid("ALP-U2", 500).await;
    let rows = [Row(&txn, &p, "交易", "5.00", "")];
    let (off, off_summary) = bill(&date, &rows, Some((2, 0, "10.00")));
    let res = upload(bill_zip(&date, &off, &off_summary)).await.unwrap();
    assert_eq!(res.status(), 400);
    let answer: serde_json::Value = res.json().await.unwrap();
    let error = answer["error"].as_str().unwrap();
    assert!(
        error.starts_with("\"bill.zip\": the Alipay bill zip: the summary")
            && error.contains("incomplete"),
        "{error}"
    );
    let res = upload(bill_zip(&date, &detail, &summary)).await.unwrap();
    assert_eq!(res.status(), 201);
    let run: serde_json::Value = res.json().await.unwrap();
    assert_eq!(
        (run["status"].as_str(), run["rows_read"].as_i64()),
        (Some("COMPLETED"), Some(1)),
        "{run}"
    );
    let compact = date.replace('-', "");
    assert_eq!(
        run["file_name"],
        format!("{PID}_{compact}_业务明细.csv"),
        "{run}"
    );
}

both_databases!(
    a_pulled_alipay_bill_with_every_class_makes_exactly_its_tickets,
    an_alipay_pull_not_ready_broken_or_slow_fails_and_resume_completes,
    an_alipay_bill_off_its_summary_or_a_forged_answer_reads_no_row,
    reckon_recon_pull_pulls_an_alipay_bill,
    alipay_bombs_and_overlong_downloads_are_refused_reading_nothing,
    an_alipay_day_whose_account_log_agrees_closes_three_way,
    an_alipay_account_log_missing_a_fee_or_a_short_withdrawal_opens_a_ticket,
    a_malformed_alipay_account_log_is_refused_keeping_nothing,
    an_alipay_bill_zip_uploaded_as_downloaded_is_read_after_its_summary,
);
