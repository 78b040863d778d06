//! A WeChat Pay trade bill pulled and reconciled end to end: N payments of
//! one China business day on SQLite, and a local WeChat Pay v3 bill API in
//! this process (the merchant's signature checked, the application's
//! answer signed with the platform key, `download_url` → the gzipped ALL
//! bill, `hash_type: SHA1`), pulled by `recon::pull_statement` in rounds,
//! each on a fresh copy of the same database; in turn with each pull, the
//! same bill gunzipped and imported from a file (`recon::import_statement`),
//! the fastest honest reference: same statement, same schema, same run.
//! 0.5% each of AMOUNT_MISMATCH, PROVIDER_ONLY and LOCAL_ONLY, the rest
//! matching; every run is checked for exactly those counts. Writes its
//! figures into BENCHMARKS.md.
//!
//!     cargo bench --bench pull                        # 100,000 rows, 3 rounds
//!     RECKON_BENCH_ROWS=10000 RECKON_BENCH_ROUNDS=1 cargo bench --bench pull

mod support;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use reckon::config::{LogFormat, ProviderConfig, sqlite_url};
use reckon::providers::signing::Secret;
use reckon::providers::wechatpay::WechatPayConfig;
use rsa::RsaPrivateKey;
use rsa::pkcs1v15::{Signature, SigningKey, VerifyingKey};
use rsa::pkcs8::{EncodePrivateKey, EncodePublicKey};
use rsa::signature::{SignatureEncoding, Signer, Verifier};
use sha1::Digest;
use sha2::Sha256;
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;
use std::time::Instant;
use support::{
    Local, config, discard, insert_payments, median, peak_rss_mib, restore, settle, write_section,
};

const PROVIDER: &str = "wechat";
const DATE: &str = "2026-11-30";
const MCH_ID: &str = "1900000109";
/// The platform key's serial, and the merchant certificate's.
const SERIAL: &str = "5157F09EFDC096DE15EBE81A47057A72";
const MERCHANT_SERIAL: &str = "3775B6A45ACD588826D15E583A95F5DD";
const APIV3_KEY: &str = "0123456789abcdef0123456789ABCDEF";

/// The case of payment `i`: 0.5% of each class, the rest matched.
fn case(i: usize) -> &'static str {
    match i % 200 {
        0 => "PROVIDER_ONLY",
        1 => "LOCAL_ONLY",
        2 => "AMOUNT_MISMATCH",
        _ => "MATCHED",
    }
}

/// WeChat Pay's bill API for one day's ALL bill.
struct BillApi {
    platform: SigningKey<Sha256>,
    merchant: VerifyingKey<Sha256>,
    base: String,
    /// The bill gzipped, as `download_url` hands it out.
    gzipped: axum::body::Bytes,
    /// SHA1 of the bill before gzip, upper-case hex.
    sha1: String,
}

impl BillApi {
    /// An answer signed over "{timestamp}\n{nonce}\n{body}\n" with the
    /// platform key, as WeChat Pay signs every v3 answer.
    fn signed(&self, status: StatusCode, body: serde_json::Value) -> Response {
        let body = body.to_string();
        let ts = jiff::Timestamp::now().as_second();
        let nonce = uuid::Uuid::new_v4().simple().to_string();
        let signature = self
            .platform
            .sign(format!("{ts}\n{nonce}\n{body}\n").as_bytes());
        let headers = [
            ("content-type", "application/json".to_owned()),
            ("wechatpay-timestamp", ts.to_string()),
            ("wechatpay-nonce", nonce),
            ("wechatpay-serial", SERIAL.to_owned()),
            (
                "wechatpay-signature",
                base64::engine::general_purpose::STANDARD.encode(signature.to_bytes()),
            ),
        ];
        (status, headers, body).into_response()
    }

    /// Whether a GET carries the merchant's `WECHATPAY2-SHA256-RSA2048`
    /// signature of "GET\n{path?query}\n{timestamp}\n{nonce}\n\n".
    fn authorized(&self, uri: &Uri, headers: &HeaderMap) -> bool {
        let Some(fields) = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|h| h.strip_prefix("WECHATPAY2-SHA256-RSA2048 "))
            .map(|rest| {
                rest.split(',')
                    .filter_map(|kv| kv.split_once('='))
                    .map(|(k, v)| (k.trim(), v.trim().trim_matches('"')))
                    .collect::<BTreeMap<_, _>>()
            })
        else {
            return false;
        };
        let field = |k: &str| fields.get(k).copied().unwrap_or_default();
        let message = format!(
            "GET\n{}\n{}\n{}\n\n",
            uri.path_and_query().map_or("", |p| p.as_str()),
            field("timestamp"),
            field("nonce_str")
        );
        let signature = base64::engine::general_purpose::STANDARD
            .decode(field("signature"))
            .ok()
            .and_then(|b| Signature::try_from(b.as_slice()).ok());
        field("mchid") == MCH_ID
            && field("serial_no") == MERCHANT_SERIAL
            && signature.is_some_and(|s| self.merchant.verify(message.as_bytes(), &s).is_ok())
    }

    fn refused(&self, status: StatusCode, code: &str) -> Response {
        self.signed(status, serde_json::json!({"code": code, "message": code}))
    }
}

/// `GET /v3/bill/tradebill`: the day's ALL bill applied for.
async fn trade_bill(
    State(api): State<Arc<BillApi>>,
    Query(q): Query<BTreeMap<String, String>>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    if !api.authorized(&uri, &headers) {
        return api.refused(StatusCode::UNAUTHORIZED, "SIGN_ERROR");
    }
    let asked = |k: &str| q.get(k).map(String::as_str);
    if (asked("bill_type"), asked("tar_type")) != (Some("ALL"), Some("GZIP")) {
        return api.refused(StatusCode::BAD_REQUEST, "PARAM_ERROR");
    }
    if asked("bill_date") != Some(DATE) {
        return api.refused(StatusCode::BAD_REQUEST, "NO_STATEMENT_EXIST");
    }
    api.signed(
        StatusCode::OK,
        serde_json::json!({
            "hash_type": "SHA1",
            "hash_value": api.sha1,
            "download_url": format!("{}/v3/billdownload/file?token=ALL-{DATE}&tartype=gzip", api.base),
        }),
    )
}

/// `GET /v3/billdownload/file`: the gzipped bill, unsigned.
async fn download(State(api): State<Arc<BillApi>>, uri: Uri, headers: HeaderMap) -> Response {
    if !api.authorized(&uri, &headers) {
        return api.refused(StatusCode::UNAUTHORIZED, "SIGN_ERROR");
    }
    (
        [("content-type", "application/x-gzip")],
        api.gzipped.clone(),
    )
        .into_response()
}

/// "12.34" of 1234 fen.
fn yuan(fen: i64) -> String {
    format!("{}.{:02}", fen / 100, fen % 100)
}

/// The ALL trade bill as WeChat Pay writes it (a BOM, CRLF, every value
/// after a backtick, the summary last; times in China time, a fee in
/// whole fen written to five places), and the day's local payments.
/// Also the bill's rows.
fn day(n: usize, day_start: i64, china: &jiff::tz::TimeZone) -> (Vec<u8>, Vec<Local>, i64) {
    let mut bill = Vec::with_capacity(n * 300);
    bill.extend_from_slice(
        "\u{feff}交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,应结订单金额,代金券金额,微信退款单号,商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,费率备注\r\n"
            .as_bytes(),
    );
    let mut payments = Vec::with_capacity(n);
    let (mut rows, mut settled, mut fees) = (0i64, 0i64, 0i64);
    for i in 0..n {
        let c = case(i);
        let no = format!("WXP{i:09}");
        let txn = format!("4200002601{}{i:010}", DATE.replace('-', ""));
        let minor = 100 + (i as i64 % 9_900);
        // Made through the China day in order; paid two seconds later.
        let created = day_start + i as i64 * (86_000_000_000 / n as i64);
        let paid = created + 2_000_000;
        if c != "PROVIDER_ONLY" {
            payments.push((
                no.clone(),
                txn.clone(),
                minor,
                "CNY",
                "SUCCEEDED",
                created,
                Some(paid),
            ));
        }
        if c == "LOCAL_ONLY" {
            continue;
        }
        let amount = if c == "AMOUNT_MISMATCH" {
            minor + 1
        } else {
            minor
        };
        let fee = (amount * 6 + 500) / 1000;
        let at = jiff::Timestamp::from_microsecond(paid)
            .unwrap()
            .to_zoned(china.clone())
            .strftime("%Y-%m-%d %H:%M:%S");
        let a = yuan(amount);
        let payer = openid(i);
        write!(
            bill,
            "`{at},`wx6f1e0c2a9b3d4e5f,`{MCH_ID},`0,`,`{txn},`{no},`{payer},`JSAPI,`SUCCESS,`CMB_DEBIT,`CNY,`{a},`0.00,`0,`0,`0.00,`0.00,`,`,`帆布包, 米色,`,`{}000,`0.60%,`{a},`0.00,`\r\n",
            yuan(fee)
        )
        .unwrap();
        rows += 1;
        settled += amount;
        fees += fee;
    }
    bill.extend_from_slice(
        "总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额\r\n".as_bytes(),
    );
    let s = yuan(settled);
    write!(
        bill,
        "`{rows}.0,`{s},`0.00,`0.00,`{}000,`{s},`0.00\r\n",
        yuan(fees)
    )
    .unwrap();
    (bill, payments, rows)
}

/// A payer's openid: 28 characters that differ from row to row, as a
/// day's payers do (they decide how well the bill gzips).
fn openid(i: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut x = (i as u64 / 3 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut id = String::from("oUpF");
    for _ in 0..24 {
        x ^= x >> 29;
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        id.push(ALPHABET[(x >> 58) as usize] as char);
    }
    id
}

/// The classes a run of the first `n` payments must find.
fn expected(n: usize) -> serde_json::Value {
    let mut counts: BTreeMap<&str, i64> = BTreeMap::new();
    for i in 0..n {
        *counts.entry(case(i)).or_default() += 1;
    }
    serde_json::json!(counts)
}

/// What one run took: wall seconds, its phases from the run's figures
/// (reading and matching, classifying, writing), its peak RSS and where
/// the RSS stood just before it.
#[derive(Clone, Copy)]
struct Timed {
    secs: f64,
    read: f64,
    classify: f64,
    write: f64,
    before: f64,
    rss: f64,
}

impl Timed {
    /// Reading, matching, classifying and writing: the run after its file.
    fn reconcile(&self) -> f64 {
        self.read + self.classify + self.write
    }
}

/// Runs `go` on a fresh engine over a fresh copy of the seeded database,
/// timed, with the peak RSS counted from just before it; checks the run
/// COMPLETED with `rows` rows read and exactly the `classes` expected.
/// Each run has a file of its own: one copied over the file of the run
/// before once failed with "disk I/O error".
async fn timed<F, Fut>(
    config: &reckon::config::Config,
    (pristine, db): (&std::path::Path, std::path::PathBuf),
    rows: i64,
    classes: &serde_json::Value,
    go: F,
) -> (Timed, reckon::engine::Engine)
where
    F: FnOnce(reckon::engine::Engine) -> Fut,
    Fut: Future<Output = (reckon::recon::RunRow, reckon::engine::Engine)>,
{
    restore(pristine, &db);
    let mut config = config.clone();
    config.database_url = sqlite_url(&db).into();
    let engine = reckon::startup::engine_of(&config).await.unwrap();
    // What the round before freed, handed back before counting.
    // SAFETY: `mi_collect` takes no pointers and has no preconditions.
    unsafe { libmimalloc_sys::mi_collect(true) };
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = peak_rss_mib();
    let started = Instant::now();
    let (run, engine) = go(engine).await;
    let secs = started.elapsed().as_secs_f64();
    let rss = peak_rss_mib();
    assert_eq!(run.status, "COMPLETED", "{run:?}");
    assert_eq!(run.rows_read, rows, "{run:?}");
    let figures: serde_json::Value =
        serde_json::from_str(run.figures_json.as_deref().unwrap()).unwrap();
    assert_eq!(&figures["classes"], classes, "{figures}");
    let phase = |name: &str| figures["millis"][name].as_f64().unwrap_or(0.0) / 1000.0;
    let t = Timed {
        secs,
        read: phase("read_and_match"),
        classify: phase("classify"),
        write: phase("write"),
        before,
        rss,
    };
    (t, engine)
}

/// One round: the pull, the fetch alone, the import of the same file.
struct Round {
    pull: Timed,
    fetch: f64,
    import: Timed,
}

fn main() {
    let n: usize = std::env::var("RECKON_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
        .max(200);
    let rounds: usize = std::env::var("RECKON_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let china = jiff::tz::TimeZone::get("Asia/Shanghai").unwrap();
    let day_start = DATE
        .parse::<jiff::civil::Date>()
        .unwrap()
        .to_zoned(china.clone())
        .unwrap()
        .timestamp()
        .as_microsecond();
    rt.block_on(async {
        reckon::telemetry::init(LogFormat::Pretty);
        let started = Instant::now();
        let platform = RsaPrivateKey::new(&mut rand::rngs::OsRng, 2048).unwrap();
        let merchant = RsaPrivateKey::new(&mut rand::rngs::OsRng, 2048).unwrap();

        // The bill: written out for the import, gzipped for the server,
        // and not kept in memory as it is.
        let (bill, payments, bill_rows) = day(n, day_start, &china);
        let bill_path = dir.path().join("bill.csv");
        std::fs::write(&bill_path, &bill).unwrap();
        let sha1 = hex::encode_upper(sha1::Sha1::digest(&bill));
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&bill).unwrap();
        let gzipped = gz.finish().unwrap();
        let (bill_mib, gz_mib) = (mib(bill.len()), mib(gzipped.len()));
        drop(bill);

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let api = Arc::new(BillApi {
            platform: SigningKey::new(platform.clone()),
            merchant: VerifyingKey::new(merchant.to_public_key()),
            base: base.clone(),
            gzipped: gzipped.into(),
            sha1,
        });
        let router = axum::Router::new()
            .route("/v3/bill/tradebill", axum::routing::get(trade_bill))
            .route("/v3/billdownload/file", axum::routing::get(download))
            .with_state(api);
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });

        let mut config = config(dir.path(), &Secret::random());
        config.providers = vec![ProviderConfig::WechatPay(WechatPayConfig {
            name: PROVIDER.into(),
            base_url: base,
            api_key: APIV3_KEY.into(),
            platform_keys: [(
                SERIAL.to_string(),
                platform
                    .to_public_key()
                    .to_public_key_pem(rsa::pkcs8::LineEnding::LF)
                    .unwrap(),
            )]
            .into_iter()
            .collect(),
            mch_id: Some(MCH_ID.into()),
            cert_serial: Some(MERCHANT_SERIAL.into()),
            private_key: Some(
                merchant
                    .to_pkcs8_pem(rsa::pkcs8::LineEnding::LF)
                    .unwrap()
                    .to_string()
                    .into(),
            ),
            timeout_ms: Some(60_000),
            ..WechatPayConfig::default()
        })];

        // The day's payments, then the database settled and set aside:
        // every run starts from a copy of it.
        let engine = reckon::startup::engine_of(&config).await.unwrap();
        for batch in payments.chunks(500) {
            insert_payments(&engine, PROVIDER, batch).await;
        }
        engine.db.pool.close().await;
        drop((engine, payments));
        let db_path = dir.path().join("reckon.db");
        let pristine = dir.path().join("pristine.db");
        settle(&db_path).await;
        std::fs::rename(&db_path, &pristine).unwrap();
        let generated = started.elapsed().as_secs_f64();
        println!(
            "generated {n} payments and a {bill_rows}-row bill ({bill_mib:.1} MiB, {gz_mib:.1} MiB gzipped) in {generated:.1} s"
        );

        let classes = expected(n);
        let run_db = |round: usize, what: &str| dir.path().join(format!("{what}-{round}.db"));
        let file_name = format!("wechatpay-{MCH_ID}-{DATE}-ALL.csv");
        let mut done: Vec<Round> = Vec::with_capacity(rounds);
        for round in 1..=rounds {
            let (pull, engine) = timed(&config, (&pristine, run_db(round, "pull")), bill_rows, &classes, |engine| async move {
                let run = reckon::recon::pull_statement(&engine, PROVIDER, DATE, "bench")
                    .await
                    .unwrap();
                (run, engine)
            })
            .await;
            // The same fetch alone, outside a run: apply, download,
            // gunzip, SHA1.
            let started = Instant::now();
            let provider = engine.providers.get(PROVIDER).unwrap().clone();
            let Some(reckon::providers::Statements::Files(bills)) = provider.statements() else {
                panic!("{PROVIDER} pulls bill files");
            };
            let file = bills.statement_file(DATE).await.unwrap();
            let fetch = started.elapsed().as_secs_f64();
            assert_eq!(file.body.len(), std::fs::metadata(&bill_path).unwrap().len());
            drop(file);
            engine.db.pool.close().await;
            drop(engine);
            discard(&run_db(round, "pull"));

            let path = bill_path.clone();
            let name = file_name.as_str();
            let (import, engine) = timed(&config, (&pristine, run_db(round, "import")), bill_rows, &classes, |engine| async move {
                let run = reckon::recon::import_statement(
                    &engine,
                    reckon::recon::Import {
                        provider: PROVIDER,
                        business_date: DATE,
                        source: "import",
                        file_name: Some(name),
                        input: reckon::recon::Input::File(path),
                        started_by: "bench",
                        accept_bad_lines: 0,
                        run_id: None,
                        hash: None,
                    },
                )
                .await
                .unwrap();
                (run, engine)
            })
            .await;
            engine.db.pool.close().await;
            drop(engine);
            discard(&run_db(round, "import"));
            println!(
                "round {round} of {rounds}: pull {:.2} s (fetch alone {fetch:.2} s, reconcile {:.2} s), {:.0} MiB; \
                 import {:.2} s (reconcile {:.2} s), {:.0} MiB; pull / import {:.2}×",
                pull.secs,
                pull.reconcile(),
                pull.rss,
                import.secs,
                import.reconcile(),
                import.rss,
                pull.secs / import.secs
            );
            done.push(Round { pull, fetch, import });
        }
        println!("classes: {classes}");

        let med = |f: &dyn Fn(&Round) -> f64| {
            let mut v: Vec<f64> = done.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            median(&v)
        };
        let pull = med(&|r| r.pull.secs);
        let fetch = med(&|r| r.fetch);
        let rest = med(&|r| r.pull.secs - r.pull.reconcile());
        let reconcile = med(&|r| r.pull.reconcile());
        let pull_rss = med(&|r| r.pull.rss);
        let pull_before = med(&|r| r.pull.before);
        let import = med(&|r| r.import.secs);
        let import_reconcile = med(&|r| r.import.reconcile());
        let import_rss = med(&|r| r.import.rss);
        let pull_growth = med(&|r| r.pull.rss - r.pull.before);
        let import_growth = med(&|r| r.import.rss - r.import.before);
        let ratio = med(&|r| r.pull.secs / r.import.secs);
        let cpu = std::thread::available_parallelism().map(|p| p.get()).unwrap_or(0);
        let report = format!(
            "## Current: bill pull\n\n\
             Measured {today} on this machine ({cpu} cores), SQLite, {rounds} round(s) in one run: \
             `RECKON_BENCH_ROWS={n} RECKON_BENCH_ROUNDS={rounds} cargo bench --bench pull`.\n\
             {n} WeChat Pay payments of the China day {DATE} and their ALL trade bill of {bill_rows} rows \
             ({bill_mib:.1} MiB; {gz_mib:.1} MiB gzipped, held by the bill API in the same process), 0.5% each of \
             AMOUNT_MISMATCH, PROVIDER_ONLY and LOCAL_ONLY, the rest matching. Each round pulls the day through \
             the local v3 bill API (signed application and answer, gzipped download, SHA1) on a fresh copy of the \
             database, then imports the same bill, gunzipped, from a file on another fresh copy. Each figure is the \
             median of its own over the rounds (so the parts need not add up to the whole):\n\n\
             | what | figure |\n|---|---|\n\
             | pull: apply, download, gunzip, check SHA1, read, match, write the tickets, keep the file | **{pull:.2} s** |\n\
             | of which: reading, matching, classifying, writing (the run's own phases) | {reconcile:.2} s |\n\
             | of which: the rest — the fetch, starting and finishing the run, keeping the file | {rest:.2} s |\n\
             | (the fetch alone, outside a run: apply, download, gunzip, SHA1) | {fetch:.2} s |\n\
             | import of the same bill from a file (`recon import`), the reference | {import:.2} s (reconcile {import_reconcile:.2} s) |\n\
             | pull / import | {ratio:.2}× |\n\
             | peak RSS while pulling (the whole process, bill API included; {pull_before:.0} MiB just before) | {pull_rss:.0} MiB |\n\
             | peak RSS while importing | {import_rss:.0} MiB |\n\
             | peak RSS over where it stood just before: pull, import | {pull_growth:.0} MiB, {import_growth:.0} MiB |\n\
             | (setup, not timed: RSA keys, the bill, inserting the payments) | {generated:.1} s |\n\n\
             {}",
            rounds_table(&done),
            today = jiff::Timestamp::now().strftime("%Y-%m-%d"),
        );
        println!("{report}");
        write_section("## Current: bill pull", &report);
    });
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Every round's figures.
fn rounds_table(done: &[Round]) -> String {
    let mut out = String::from(
        "| round | pull | reconcile | rest | fetch alone | pull RSS (before) | import | import reconcile | import RSS (before) | pull / import |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (i, r) in done.iter().enumerate() {
        out.push_str(&format!(
            "| {} | {:.2} s | {:.2} s | {:.2} s | {:.2} s | {:.0} MiB ({:.0}) | {:.2} s | {:.2} s | {:.0} MiB ({:.0}) | {:.2}× |\n",
            i + 1,
            r.pull.secs,
            r.pull.reconcile(),
            r.pull.secs - r.pull.reconcile(),
            r.fetch,
            r.pull.rss,
            r.pull.before,
            r.import.secs,
            r.import.reconcile(),
            r.import.rss,
            r.import.before,
            r.pull.secs / r.import.secs
        ));
    }
    out
}
