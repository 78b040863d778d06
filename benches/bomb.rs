//! A decompression bomb and an endless download fed to a running server:
//! `reckon serve` runs as its own process on a SQLite file with one WeChat
//! Pay account, whose v3 bill API this process plays (the merchant's
//! signature checked, the application's answer signed with the platform
//! key). Each case asks the server for a pull over `POST
//! /api/v1/recon/pulls`, the server applies for the bill and downloads it,
//! and this process reads the server's peak RSS (VmHWM of
//! `/proc/<pid>/status`) before and after:
//!
//! - `gzip`: a gzipped bill of N GiB of zeros (about N MiB on the wire);
//! - `plain`: a bill that is not gzipped, N GiB of zeros streamed.
//!
//! Each must be refused (the run FAILED, the limit named) with the
//! server's peak RSS a little above idle.
//!
//!     cargo bench --bench bomb                         # a 10 GiB bomb
//!     RECKON_BENCH_BOMB_GIB=2 cargo bench --profile dev --bench bomb
//!
//! - `RECKON_BENCH_BOMB_GIB`: what the gzip bomb unpacks to (10)
//! - `RECKON_BENCH_PLAIN_GIB`: the plain download's length (2: a build
//!   that holds a download in memory holds all of it, twice)
//! - `RECKON_BENCH_CASES`: `gzip`, `plain` or both (`gzip,plain`)
//! - `RECKON_BENCH_SERVER=PATH`: another build's binary (two builds
//!   compared on one machine)

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use futures_util::StreamExt;
use rsa::RsaPrivateKey;
use rsa::pkcs1v15::{Signature, SigningKey, VerifyingKey};
use rsa::pkcs8::{EncodePrivateKey, EncodePublicKey};
use rsa::signature::{SignatureEncoding, Signer, Verifier};
use sha2::Sha256;
use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const MCH_ID: &str = "1900000109";
const SERIAL: &str = "5157F09EFDC096DE15EBE81A47057A72";
const MERCHANT_SERIAL: &str = "3775B6A45ACD588826D15E583A95F5DD";
const APIV3_KEY: &str = "0123456789abcdef0123456789ABCDEF";

/// What the bill API hands out for the one day it has a bill of.
#[derive(Clone)]
enum Bill {
    Gzip(axum::body::Bytes),
    /// Zeros, not gzipped, this many MiB.
    Plain(u64),
}

/// WeChat Pay's bill API with a bill for one day only (the server's own
/// scheduled pulls of other days are told it is being made).
struct BillApi {
    platform: SigningKey<Sha256>,
    merchant: VerifyingKey<Sha256>,
    base: String,
    bill: std::sync::Mutex<Option<(String, Bill)>>,
}

impl BillApi {
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

    /// The merchant's `WECHATPAY2-SHA256-RSA2048` signature of a GET.
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
            && signature.is_some_and(|s| self.merchant.verify(message.as_bytes(), &s).is_ok())
    }
}

async fn trade_bill(
    State(api): State<Arc<BillApi>>,
    Query(q): Query<BTreeMap<String, String>>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    if !api.authorized(&uri, &headers) {
        return api.signed(
            StatusCode::UNAUTHORIZED,
            serde_json::json!({"code": "SIGN_ERROR"}),
        );
    }
    let date = q.get("bill_date").cloned().unwrap_or_default();
    if api
        .bill
        .lock()
        .unwrap()
        .as_ref()
        .is_none_or(|(day, _)| *day != date)
    {
        return api.signed(
            StatusCode::BAD_REQUEST,
            serde_json::json!({"code": "STATEMENT_CREATING", "message": "not yet"}),
        );
    }
    api.signed(
        StatusCode::OK,
        serde_json::json!({
            "hash_type": "SHA1",
            "hash_value": "0000000000000000000000000000000000000000",
            "download_url": format!("{}/v3/billdownload/file?token=ALL-{date}&tartype=gzip", api.base),
        }),
    )
}

async fn download(State(api): State<Arc<BillApi>>, uri: Uri, headers: HeaderMap) -> Response {
    if !api.authorized(&uri, &headers) {
        return api.signed(
            StatusCode::UNAUTHORIZED,
            serde_json::json!({"code": "SIGN_ERROR"}),
        );
    }
    let bill = api.bill.lock().unwrap().clone().map(|(_, bill)| bill);
    match bill {
        Some(Bill::Gzip(gzip)) => ([("content-type", "application/x-gzip")], gzip).into_response(),
        // Zeros, 1 MiB at a time, as long as the reader reads.
        Some(Bill::Plain(mib)) => {
            let chunk = axum::body::Bytes::from(vec![0u8; 1 << 20]);
            let zeros = futures_util::stream::repeat(chunk)
                .take(mib as usize)
                .map(Ok::<_, std::io::Error>);
            (
                [("content-type", "text/csv")],
                axum::body::Body::from_stream(zeros),
            )
                .into_response()
        }
        None => (StatusCode::NOT_FOUND, "").into_response(),
    }
}

/// `gib` GiB of zeros, gzipped.
fn gzip_bomb(gib: u64) -> Vec<u8> {
    let zeros = vec![0u8; 1 << 20];
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    for _ in 0..gib * 1024 {
        gz.write_all(&zeros).unwrap();
    }
    gz.finish().unwrap()
}

fn peak_rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn main() {
    let gib: u64 = std::env::var("RECKON_BENCH_BOMB_GIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let plain_gib: u64 = std::env::var("RECKON_BENCH_PLAIN_GIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let cases = std::env::var("RECKON_BENCH_CASES").unwrap_or_else(|_| "gzip,plain".into());
    let bin = std::env::var("RECKON_BENCH_SERVER")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_reckon").to_owned());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    rt.block_on(async {
        let platform = RsaPrivateKey::new(&mut rand::rngs::OsRng, 2048).unwrap();
        let merchant = RsaPrivateKey::new(&mut rand::rngs::OsRng, 2048).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let api = Arc::new(BillApi {
            platform: SigningKey::new(platform.clone()),
            merchant: VerifyingKey::new(merchant.to_public_key()),
            base: base.clone(),
            bill: std::sync::Mutex::new(None),
        });
        let router = axum::Router::new()
            .route("/v3/bill/tradebill", axum::routing::get(trade_bill))
            .route("/v3/billdownload/file", axum::routing::get(download))
            .with_state(api.clone());
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });

        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config = dir.path().join("reckon.toml");
        let text = format!(
            "listen = \"127.0.0.1:{port}\"\ndatabase_url = \"sqlite://{}?mode=rwc\"\ndata_dir = \"{}\"\n\
             [[providers]]\nkind = \"wechatpay\"\nname = \"wechat\"\nbase_url = \"{base}\"\n\
             api_key = \"{APIV3_KEY}\"\nmch_id = \"{MCH_ID}\"\ncert_serial = \"{MERCHANT_SERIAL}\"\n\
             timeout_ms = 120000\nprivate_key = '''\n{}'''\n\n[providers.platform_keys]\n\"{SERIAL}\" = '''\n{}'''\n",
            dir.path().join("reckon.db").display(),
            dir.path().display(),
            merchant
                .to_pkcs8_pem(rsa::pkcs8::LineEnding::LF)
                .unwrap()
                .as_str(),
            platform
                .to_public_key()
                .to_public_key_pem(rsa::pkcs8::LineEnding::LF)
                .unwrap(),
        );
        std::fs::write(&config, text).unwrap();
        let token = Command::new(&bin)
            .args(["token", "create", "--name", "bench", "--scope", "all"])
            .env("RECKON_CONFIG", &config)
            .stderr(Stdio::inherit())
            .output()
            .unwrap();
        assert!(token.status.success(), "reckon token create failed");
        let token = String::from_utf8(token.stdout).unwrap().trim().to_owned();
        let log = std::fs::File::create(dir.path().join("server.log")).unwrap();
        let mut child = Command::new(&bin)
            .arg("serve")
            .env("RECKON_CONFIG", &config)
            .env("RUST_LOG", "warn")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        let deadline = Instant::now() + Duration::from_secs(120);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "reckon serve did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(900))
            .build()
            .unwrap();
        println!("server {bin} (pid {pid}), idle: peak RSS {:.0} MiB", peak_rss_mib(pid));
        for (day, case) in cases.split(',').enumerate() {
            // A day of its own per case, before the scheduled pulls' days.
            let date = (jiff::civil::date(2026, 10, 31) - jiff::Span::new().days(day as i64)).to_string();
            let what = match case {
                "gzip" => {
                    let started = Instant::now();
                    let bomb = tokio::task::spawn_blocking(move || gzip_bomb(gib))
                        .await
                        .unwrap();
                    let what = format!(
                        "a gzip bomb, {:.1} MiB → {gib} GiB (made in {:.0} s)",
                        bomb.len() as f64 / 1048576.0,
                        started.elapsed().as_secs_f64()
                    );
                    *api.bill.lock().unwrap() = Some((date.clone(), Bill::Gzip(bomb.into())));
                    what
                }
                "plain" => {
                    *api.bill.lock().unwrap() = Some((date.clone(), Bill::Plain(plain_gib * 1024)));
                    format!("a plain download of {plain_gib} GiB")
                }
                other => panic!("unknown case {other}"),
            };
            let before = peak_rss_mib(pid);
            let started = Instant::now();
            let answer = client
                .post(format!("http://127.0.0.1:{port}/api/v1/recon/pulls"))
                .bearer_auth(&token)
                .json(&serde_json::json!({"provider": "wechat", "business_date": date}))
                .send()
                .await
                .unwrap();
            let status = answer.status();
            let body = answer.text().await.unwrap_or_default();
            println!(
                "{what}: answered {status} in {:.1} s: {}\n  server peak RSS {before:.0} MiB before → {:.0} MiB after",
                started.elapsed().as_secs_f64(),
                body.chars().take(400).collect::<String>(),
                peak_rss_mib(pid)
            );
        }
        unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        let _ = child.wait();
    });
}
