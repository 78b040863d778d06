//! Fees and net against a real server, on SQLite and PostgreSQL: a WeChat
//! Pay trade bill of several rows uploaded through the API gives the day's
//! gross, refunds, fees and net in the run's figures (and the console's
//! close section), its 手续费总金额 checked against the rows; with an
//! expected rate configured, a fee beyond the tolerance is one FEE_MISMATCH
//! ticket and a fee within it none.

use crate::both_databases;
use crate::engine_helpers::{EngineApp, spawn_engine_app_with};
use crate::helpers::Backend;
use reckon::config::ProviderConfig;
use reckon::providers::fees::FeeExpectation;
use reckon::providers::wechatpay::WechatPayConfig;
use rsa::pkcs8::EncodePublicKey;

const HEADER: &str = "交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,应结订单金额,代金券金额,微信退款单号,商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,费率备注";
const SUMMARY: &str =
    "总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额";

/// A row of the bill: a payment (`refund` None) or a refund of one; amounts
/// and fees in fen.
struct Row {
    txn: &'static str,
    no: &'static str,
    minor: i64,
    fee: i64,
    refund: Option<(&'static str, &'static str)>,
}

fn yuan(minor: i64) -> String {
    let sign = if minor < 0 { "-" } else { "" };
    format!("{sign}{}.{:02}", minor.abs() / 100, minor.abs() % 100)
}

/// A WeChat Pay ALL trade bill of `rows` whose summary agrees with them,
/// but for its fee total, which is `fee_total` when given.
fn bill(date: &str, rows: &[Row], fee_total: Option<i64>) -> Vec<u8> {
    let mut text = format!("{HEADER}\n");
    let (mut settled, mut refunded, mut fees) = (0, 0, 0);
    for r in rows {
        let (state, settle, rid, rno, ramt, rtype, rstatus, order) = match r.refund {
            None => ("SUCCESS", r.minor, "0", "0", 0, "", "", r.minor),
            Some((id, no)) => ("REFUND", 0, id, no, r.minor, "ORIGINAL", "SUCCESS", 0),
        };
        settled += settle;
        refunded += ramt;
        fees += r.fee;
        text.push_str(&format!(
            "`{date} 12:00:00,`wx01,`1900000001,`0,`,`{},`{},`oUser,`NATIVE,`{state},`OTHERS,`CNY,`{},`0.00,`{rid},`{rno},`{},`0.00,`{rtype},`{rstatus},`goods,`,`{},`0.60%,`{},`{},`\n",
            r.txn,
            r.no,
            yuan(settle),
            yuan(ramt),
            yuan(r.fee),
            yuan(order),
            yuan(ramt),
        ));
    }
    text.push_str(&format!(
        "{SUMMARY}\n`{},`{},`{},`0.00,`{},`{},`{}\n",
        rows.len(),
        yuan(settled),
        yuan(refunded),
        yuan(fee_total.unwrap_or(fees)),
        yuan(settled),
        yuan(refunded),
    ));
    text.into_bytes()
}

/// The sandbox's app with a WeChat Pay account (notifications only: an
/// upload needs no API), expecting `fees` if given.
async fn spawn(b: Backend, fees: Option<FeeExpectation>) -> EngineApp {
    let key = rsa::RsaPrivateKey::new(&mut rand::rngs::OsRng, 2048).unwrap();
    let pem = key
        .to_public_key()
        .to_public_key_pem(rsa::pkcs8::LineEnding::LF)
        .unwrap();
    spawn_engine_app_with(b, move |c| {
        c.providers.push(ProviderConfig::WechatPay(WechatPayConfig {
            name: "wechat".into(),
            api_key: "0123456789abcdef0123456789ABCDEF".into(),
            platform_keys: [("5157F09EFDC096DE15EBE81A47057A72".to_string(), pem)]
                .into_iter()
                .collect(),
            fees,
            ..WechatPayConfig::default()
        }));
    })
    .await
}

fn figures(run: &serde_json::Value) -> serde_json::Value {
    serde_json::from_str(run["figures_json"].as_str().unwrap()).unwrap()
}

async fn fee_tickets(app: &EngineApp) -> Vec<(String, String, Option<String>)> {
    sqlx::query_as(
        "SELECT severity, status, provider_txn_id FROM discrepancies WHERE class = 'FEE_MISMATCH' ORDER BY provider_txn_id",
    )
    .fetch_all(app.pool())
    .await
    .unwrap()
}

/// Three payments and a refund: gross, refunds, fees and net of the day, in
/// the run's figures, the days API and the console; a bill whose fee total
/// disagrees with its rows is refused, naming it.
async fn a_days_fee_figures_are_gross_refunds_fees_and_net(b: Backend) {
    let app = spawn(b, None).await;
    let token = app.token().await;
    let (date, _) = app.today();
    let rows = [
        Row {
            txn: "4200000001",
            no: "FEE-1",
            minor: 19_900,
            fee: 119,
            refund: None,
        },
        Row {
            txn: "4200000002",
            no: "FEE-2",
            minor: 10_000,
            fee: 60,
            refund: None,
        },
        Row {
            txn: "4200000003",
            no: "FEE-3",
            minor: 5_050,
            fee: 30,
            refund: None,
        },
        Row {
            txn: "4200000001",
            no: "FEE-1",
            minor: 5_000,
            fee: -30,
            refund: Some(("50300001", "RF-1")),
        },
    ];
    // A fee total the rows do not add up to: refused, the run says why.
    let wrong = ("bill.csv", bill(&date, &rows, Some(180)));
    let (status, refused) = app.upload_bill(&token, "wechat", &date, wrong).await;
    assert_eq!(status, 422, "{refused}");
    assert!(
        refused["error"].as_str().unwrap().contains("手续费总金额"),
        "{refused}"
    );

    let (status, run) = app
        .upload_bill(
            &token,
            "wechat",
            &date,
            ("bill.csv", bill(&date, &rows, None)),
        )
        .await;
    assert_eq!(status, 201, "{run}");
    assert_eq!(run["status"], "COMPLETED", "{run}");
    let summary: serde_json::Value =
        serde_json::from_str(run["summary_json"].as_str().unwrap()).unwrap();
    let fee_check = summary["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["what"].as_str().unwrap().contains("手续费总金额"))
        .cloned()
        .unwrap_or_else(|| panic!("the fee total is checked: {summary}"));
    // Fees are summed at the bill's five places (1/100,000 yuan).
    assert_eq!(
        (fee_check["stated"].clone(), fee_check["read"].clone()),
        (179_000.into(), 179_000.into())
    );
    assert_eq!(fee_check["fee_units"], true, "{fee_check}");

    let f = figures(&run);
    let cny = &f["fees_and_net"]["currencies"]["CNY"];
    assert_eq!(cny["payments"], 3, "{f}");
    assert_eq!(cny["gross_minor"], 34_950, "{f}");
    assert_eq!(cny["refunds"], 1, "{f}");
    assert_eq!(cny["refunds_minor"], 5_000, "{f}");
    assert_eq!(cny["fees_minor"], 119 + 60 + 30 - 30, "{f}");
    assert_eq!(cny["net_minor"], 34_950 - 5_000 - 179, "{f}");
    assert_eq!(
        f["fees_and_net"]["fee_mismatches"], 0,
        "no rate configured: {f}"
    );
    assert!(fee_tickets(&app).await.is_empty());

    // The same figures through the days API.
    let days: serde_json::Value = app
        .app
        .client
        .get(format!(
            "{}/api/v1/recon/days?from={date}&to={date}",
            app.app.base
        ))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let day = days["days"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["provider"] == "wechat")
        .unwrap();
    assert_eq!(
        day["figures"]["fees_and_net"]["currencies"]["CNY"]["net_minor"], 29_771,
        "{day}"
    );

    // And on the console's close section, formatted.
    let desk = crate::schedule::signed_in(&app).await;
    let res = app
        .app
        .call_with(&desk, "closes/list", &[("day", &date)])
        .await;
    assert_eq!(res.status(), 200);
    let closes: serde_json::Value = res.json().await.unwrap();
    let wechat = closes
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["provider"] == "wechat")
        .unwrap();
    let money = &wechat["money"][0];
    assert_eq!(money["gross"], "349.50 CNY", "{wechat}");
    assert_eq!(money["refunds"], "50.00 CNY", "{wechat}");
    assert_eq!(money["fees"], "1.79 CNY", "{wechat}");
    assert_eq!(money["net"], "297.71 CNY", "{wechat}");
}

/// At 0.6% with a tolerance of 1 fen: a fee 1 fen off is rounding, a fee
/// of 0.80 on 50.00 (0.30 expected) is one MEDIUM FEE_MISMATCH ticket, a
/// fee too low one LOW ticket; refunds are not checked.
async fn a_fee_beyond_the_tolerance_opens_fee_mismatch_and_one_within_none(b: Backend) {
    let expect = FeeExpectation {
        rate: "0.6%".into(),
        fixed_minor: 0,
        tolerance_minor: 1,
    };
    let app = spawn(b, Some(expect)).await;
    let token = app.token().await;
    let (date, _) = app.today();
    let rows = [
        Row {
            txn: "4200000011",
            no: "FM-1",
            minor: 19_900,
            fee: 119,
            refund: None,
        },
        Row {
            txn: "4200000012",
            no: "FM-2",
            minor: 10_000,
            fee: 61,
            refund: None,
        },
        Row {
            txn: "4200000013",
            no: "FM-3",
            minor: 5_000,
            fee: 80,
            refund: None,
        },
        Row {
            txn: "4200000014",
            no: "FM-4",
            minor: 10_000,
            fee: 10,
            refund: None,
        },
        Row {
            txn: "4200000011",
            no: "FM-1",
            minor: 19_900,
            fee: 0,
            refund: Some(("50300011", "RF-11")),
        },
    ];
    let (status, run) = app
        .upload_bill(
            &token,
            "wechat",
            &date,
            ("bill.csv", bill(&date, &rows, None)),
        )
        .await;
    assert_eq!(status, 201, "{run}");
    assert_eq!(run["status"], "COMPLETED", "{run}");
    let f = figures(&run);
    assert_eq!(f["fees_and_net"]["fee_mismatches"], 2, "{f}");
    assert_eq!(f["fees_and_net"]["expected_rate"], "0.6%", "{f}");
    assert_eq!(
        fee_tickets(&app).await,
        vec![
            (
                "MEDIUM".to_string(),
                "OPEN".to_string(),
                Some("4200000013".to_string())
            ),
            (
                "LOW".to_string(),
                "OPEN".to_string(),
                Some("4200000014".to_string())
            ),
        ]
    );
    let reason: String = sqlx::query_scalar(
        "SELECT details FROM discrepancies WHERE class = 'FEE_MISMATCH' AND provider_txn_id = '4200000013'",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert!(
        reason.contains("0.80 CNY") && reason.contains("0.30 CNY"),
        "{reason}"
    );
    // The same bill again is the same run, saying so: no second ticket.
    let (status, again) = app
        .upload_bill(
            &token,
            "wechat",
            &date,
            ("bill.csv", bill(&date, &rows, None)),
        )
        .await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["run_id"], run["run_id"]);
    assert_eq!(fee_tickets(&app).await.len(), 2);
}

both_databases!(
    a_days_fee_figures_are_gross_refunds_fees_and_net,
    a_fee_beyond_the_tolerance_opens_fee_mismatch_and_one_within_none,
);
