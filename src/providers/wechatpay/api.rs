//! WeChat Pay's API v3 as Reckon calls it: the order query by
//! out_trade_no, domestic refunds (out_refund_no = Reckon's refund_no,
//! idempotent at WeChat Pay) and their query, and the day's bills. Each
//! request is signed `WECHATPAY2-SHA256-RSA2048` with the merchant key; an
//! answer is believed only once its `Wechatpay-*` headers verify like a
//! notification's — all but a bill's download, which WeChat Pay does not
//! sign: the bill is believed once its SHA1 is the `hash_value` of the
//! signed answer that named it.

use super::{Api, Transaction, WechatPay, WxRefund, trade_state};
use crate::domain::{PaymentNo, ProviderTxnId};
use crate::providers::spool::{self, SpoolError, Spooled};
use crate::providers::{CallError, ProviderView, RefundRequest, RefundView, StatementFile};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use http::StatusCode;
use rsa::signature::{SignatureEncoding, Signer};
use serde::Deserialize;
use std::io::Read;

/// WeChat Pay's answer to a bill application: where the bill is (for 30
/// seconds) and the digest of the bill as it is before gzip.
#[derive(Deserialize)]
struct BillAnswer {
    hash_type: String,
    hash_value: String,
    download_url: String,
}

/// A refusal's body: `{"code": …, "message": …}`.
fn refusal(body: &[u8]) -> (String, String) {
    let error: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let text = |k: &str| error[k].as_str().unwrap_or_default().to_owned();
    (text("code"), text("message"))
}

/// The Authorization of a request: the merchant key's signature of
/// "{method}\n{path?query}\n{timestamp}\n{nonce}\n{body}\n".
fn authorization(
    api: &Api,
    method: &reqwest::Method,
    path_and_query: &str,
    body: &str,
    now: i64,
) -> String {
    let nonce = uuid::Uuid::new_v4()
        .simple()
        .to_string()
        .to_ascii_uppercase();
    let message = format!("{method}\n{path_and_query}\n{now}\n{nonce}\n{body}\n");
    let signature = B64.encode(api.key.sign(message.as_bytes()).to_bytes());
    format!(
        "WECHATPAY2-SHA256-RSA2048 mchid=\"{}\",nonce_str=\"{nonce}\",signature=\"{signature}\",timestamp=\"{now}\",serial_no=\"{}\"",
        api.mch_id, api.cert_serial
    )
}

/// The bill as WeChat Pay made it: gunzipped (asked for GZIP; a plain
/// answer is taken as it is) into a file of its own, at most `limit`
/// bytes, and checked against the digest of the signed answer, BOM and
/// all, before anything reads a row. `what` names the bill in a refusal.
fn unpack_bill(
    packed: Spooled,
    answer: &BillAnswer,
    limit: u64,
    what: &str,
) -> Result<Spooled, CallError> {
    use sha1::Digest;
    if !answer.hash_type.eq_ignore_ascii_case("SHA1") {
        return Err(CallError::Refused(format!(
            "the bill's hash_type is {:?}; Reckon checks SHA1 only",
            answer.hash_type
        )));
    }
    let unreadable = |e: std::io::Error| CallError::Refused(format!("{what}: {e}"));
    let mut sha1 = sha1::Sha1::new();
    let gzipped = packed.head(2).map_err(unreadable)? == [0x1f, 0x8b];
    let bill = if gzipped {
        let gz = flate2::read::GzDecoder::new(packed.open().map_err(unreadable)?);
        spool::write(gz, limit, |b| sha1.update(b)).map_err(|e| match e {
            SpoolError::TooLong => CallError::Refused(format!(
                "{what} gunzips to more than {limit} bytes, the most this account takes \
                 (max_bill_bytes): refused as a decompression bomb"
            )),
            SpoolError::Read(e) => CallError::Refused(format!("{what} does not gunzip: {e}")),
            SpoolError::Write(e) => {
                CallError::Refused(format!("{what} could not be written down: {e}"))
            }
        })?
    } else {
        let mut file = packed.open().map_err(unreadable)?;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = file.read(&mut buf).map_err(unreadable)?;
            if n == 0 {
                break;
            }
            sha1.update(&buf[..n]);
        }
        packed
    };
    let digest = hex::encode(sha1.finalize());
    if !digest.eq_ignore_ascii_case(answer.hash_value.trim()) {
        return Err(CallError::Refused(format!(
            "the downloaded bill's SHA1 is {digest}, WeChat Pay's hash_value says {}: \
             the download is damaged or not the bill applied for; nothing was read",
            answer.hash_value
        )));
    }
    Ok(bill)
}

impl WechatPay {
    /// A refund API answer: the refund, or why not.
    fn refund_answer(status: StatusCode, body: &[u8]) -> Result<RefundView, CallError> {
        if !status.is_success() {
            let error: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
            let code = error["code"].as_str().unwrap_or_default();
            if status == StatusCode::NOT_FOUND || code == "RESOURCE_NOT_EXISTS" {
                return Err(CallError::NotFound);
            }
            return Err(CallError::Refused(format!(
                "{status} {code}: {}",
                error["message"].as_str().unwrap_or_default()
            )));
        }
        serde_json::from_slice::<WxRefund>(body)
            .map_err(|e| CallError::Refused(format!("unreadable refund: {e}")))?
            .view()
            .map_err(CallError::Refused)
    }

    /// A signed call of the API; the answer's status and verified body.
    async fn request(
        &self,
        method: reqwest::Method,
        path_and_query: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<(StatusCode, Vec<u8>), CallError> {
        let (status, body, _) = self.signed_call(method, path_and_query, body, true).await?;
        Ok((status, body))
    }

    /// A signed call; its answer verified when it succeeded, and a refusal
    /// too if `verify_refusals` (otherwise a refusal's signature is only
    /// reported: whether it verified).
    async fn signed_call(
        &self,
        method: reqwest::Method,
        path_and_query: &str,
        body: Option<&serde_json::Value>,
        verify_refusals: bool,
    ) -> Result<(StatusCode, Vec<u8>, bool), CallError> {
        let Some(api) = &self.api else {
            return Err(CallError::Refused(format!(
                "{} has no API credentials configured",
                self.name
            )));
        };
        let now = jiff::Timestamp::now().as_second();
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let authorization = authorization(api, &method, path_and_query, &body, now);
        let mut call = self
            .http
            .request(method.clone(), format!("{}{path_and_query}", api.base_url));
        if method != reqwest::Method::GET {
            call = call.header("content-type", "application/json").body(body);
        }
        let res = call
            .header("authorization", authorization)
            .header("accept", "application/json")
            .header("user-agent", concat!("reckon/", env!("CARGO_PKG_VERSION")))
            .send()
            .await
            .map_err(crate::providers::wire::call_error)?;
        let status = res.status();
        let headers = res.headers().clone();
        let body = crate::providers::wire::answer(res).await?;
        if status.is_server_error() {
            return Err(CallError::Network(format!("WeChat Pay answered {status}")));
        }
        let verified = if status.is_success() || verify_refusals {
            // An answer that does not verify is nobody's word: unknown.
            self.verify_signed(&headers, &body, now)
                .map_err(|e| CallError::Network(format!("the answer is not WeChat Pay's: {e}")))?;
            true
        } else {
            self.verify_signed(&headers, &body, now).is_ok()
        };
        Ok((status, body, verified))
    }

    pub(super) async fn domestic_refund(
        &self,
        req: &RefundRequest<'_>,
    ) -> Result<RefundView, CallError> {
        let mut body = serde_json::json!({
            "out_trade_no": req.payment_no.as_str(),
            "out_refund_no": req.refund_no.as_str(),
            "reason": req.reason.chars().take(80).collect::<String>(),
            "amount": {
                "refund": req.money.minor,
                "total": req.payment_total.minor,
                "currency": req.money.currency.code(),
            },
        });
        if let Some(t) = req.payment_txn {
            body["transaction_id"] = t.as_str().into();
        }
        let (status, answer) = self
            .request(
                reqwest::Method::POST,
                "/v3/refund/domestic/refunds",
                Some(&body),
            )
            .await?;
        Self::refund_answer(status, &answer)
    }

    pub(super) async fn refund_query(
        &self,
        req: &RefundRequest<'_>,
    ) -> Result<RefundView, CallError> {
        let path = format!(
            "/v3/refund/domestic/refunds/{}",
            percent_encoding::utf8_percent_encode(
                req.refund_no.as_str(),
                percent_encoding::NON_ALPHANUMERIC
            )
        );
        let (status, answer) = self.request(reqwest::Method::GET, &path, None).await?;
        Self::refund_answer(status, &answer)
    }

    pub(super) async fn order_query(
        &self,
        payment_no: &PaymentNo,
        _txn: Option<&ProviderTxnId>,
    ) -> Result<ProviderView, CallError> {
        let mch_id = self.api.as_ref().map(|a| a.mch_id.as_str()).unwrap_or("");
        let path = format!(
            "/v3/pay/transactions/out-trade-no/{}?mchid={}",
            percent_encoding::utf8_percent_encode(
                payment_no.as_str(),
                percent_encoding::NON_ALPHANUMERIC
            ),
            percent_encoding::utf8_percent_encode(mch_id, percent_encoding::NON_ALPHANUMERIC),
        );
        let (status, body) = self.request(reqwest::Method::GET, &path, None).await?;
        if !status.is_success() {
            let error: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let code = error["code"].as_str().unwrap_or_default();
            if status == StatusCode::NOT_FOUND || code == "ORDER_NOT_EXIST" {
                return Err(CallError::NotFound);
            }
            return Err(CallError::Refused(format!(
                "{status} {code}: {}",
                error["message"].as_str().unwrap_or_default()
            )));
        }
        let t: Transaction = serde_json::from_slice(&body)
            .map_err(|e| CallError::Refused(format!("unreadable transaction: {e}")))?;
        if t.out_trade_no != payment_no.as_str() {
            return Err(CallError::Refused(format!(
                "asked about {payment_no}, told about {}",
                t.out_trade_no
            )));
        }
        let status = trade_state(&t.trade_state)
            .ok_or_else(|| CallError::Refused(format!("unknown trade_state {}", t.trade_state)))?;
        Ok(ProviderView {
            provider_txn_id: t.txn().map_err(CallError::Refused)?,
            status,
            money: t.money().map_err(CallError::Refused)?,
        })
    }

    /// The trade bill (type ALL) of `date`, the bill Reckon reconciles.
    pub(super) async fn trade_bill(&self, date: &str) -> Result<StatementFile, CallError> {
        let date = bill_date(date)?;
        self.bill(
            &format!("/v3/bill/tradebill?bill_date={date}&bill_type=ALL&tar_type=GZIP"),
            "ALL",
            date,
        )
        .await
    }

    /// The fund-flow bill of the basic account for `date`: every movement
    /// of the merchant's balance (fees and settlements among them).
    pub async fn fund_flow_bill(&self, date: &str) -> Result<StatementFile, CallError> {
        let date = bill_date(date)?;
        self.bill(
            &format!("/v3/bill/fundflowbill?bill_date={date}&account_type=BASIC&tar_type=GZIP"),
            "BASIC fund flow",
            date,
        )
        .await
    }

    /// Applies for a bill (a signed, verified answer naming its
    /// `download_url` and digest), downloads it with the merchant's
    /// signature (the download is not signed back), unpacks and checks it.
    async fn bill(
        &self,
        path_and_query: &str,
        bill_type: &str,
        date: &str,
    ) -> Result<StatementFile, CallError> {
        // Only the answer acted on must be WeChat Pay's word; a refusal
        // (which its SDKs do not verify either) only makes the pull wait.
        let (status, body, verified) = self
            .signed_call(reqwest::Method::GET, path_and_query, None, false)
            .await?;
        if !status.is_success() {
            let (code, message) = refusal(&body);
            // NO_STATEMENT_EXIST: no trade that day, so no bill — believed
            // only signed, since it can end a day; STATEMENT_CREATING: being
            // made, ask again later.
            if code == "NO_STATEMENT_EXIST" && verified {
                return Err(CallError::NoStatement(format!(
                    "WeChat Pay has no {bill_type} bill for {date} ({code}: {message})"
                )));
            }
            if matches!(code.as_str(), "NO_STATEMENT_EXIST" | "STATEMENT_CREATING") {
                return Err(CallError::NotReady(format!(
                    "WeChat Pay has no {bill_type} bill for {date} yet ({code}: {message})"
                )));
            }
            if code == "SYSTEM_ERROR" {
                return Err(CallError::Network(format!(
                    "WeChat Pay is unavailable ({code}: {message})"
                )));
            }
            return Err(CallError::Refused(format!(
                "the {bill_type} bill for {date}: {status} {code}: {message}"
            )));
        }
        let answer: BillAnswer = serde_json::from_slice(&body)
            .map_err(|e| CallError::Refused(format!("unreadable bill answer: {e}")))?;
        let what = format!("WeChat Pay's {bill_type} bill for {date}");
        let packed = self.download(&answer.download_url, &what).await?;
        let limit = self.max_bill_bytes;
        let bill = tokio::task::spawn_blocking(move || unpack_bill(packed, &answer, limit, &what))
            .await
            .map_err(|e| CallError::Refused(format!("unpacking the bill stopped: {e}")))??;
        let mch_id = self.api.as_ref().map_or("", |a| a.mch_id.as_str());
        Ok(StatementFile {
            name: format!(
                "wechatpay-{mch_id}-{date}-{}.csv",
                bill_type.replace(' ', "-")
            ),
            bill_type: bill_type.to_owned(),
            body: bill,
        })
    }

    /// GETs a bill's `download_url`, signed like any request over its path
    /// and query; only from WeChat Pay (the merchant's signature goes
    /// nowhere else).
    async fn download(&self, url: &str, what: &str) -> Result<Spooled, CallError> {
        let Some(api) = &self.api else {
            return Err(CallError::Refused(format!(
                "{} has no API credentials configured",
                self.name
            )));
        };
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| CallError::Refused(format!("the download_url {url:?}: {e}")))?;
        // The configured API's host, or WeChat Pay's own over https (the
        // API also answers on backup hosts such as api2.mch.weixin.qq.com).
        let wechat_host = parsed.scheme() == "https"
            && parsed
                .host_str()
                .is_some_and(|h| h == "weixin.qq.com" || h.ends_with(".weixin.qq.com"));
        if !(wechat_host || url.starts_with(&format!("{}/", api.base_url))) {
            return Err(CallError::Refused(format!(
                "the download_url {url:?} is neither on the API's host {} nor WeChat Pay's",
                api.base_url
            )));
        }
        let path_and_query = match parsed.query() {
            Some(q) => format!("{}?{q}", parsed.path()),
            None => parsed.path().to_owned(),
        };
        let now = jiff::Timestamp::now().as_second();
        let authorization = authorization(api, &reqwest::Method::GET, &path_and_query, "", now);
        let call = self
            .http
            .get(url)
            .header("authorization", authorization)
            .header("accept", "*/*")
            .header("user-agent", concat!("reckon/", env!("CARGO_PKG_VERSION")));
        let (status, body) =
            crate::providers::wire::download(call, self.max_bill_bytes, what).await?;
        if !status.is_success() {
            let (code, message) = refusal(&body.head(64 * 1024).unwrap_or_default());
            return Err(CallError::Refused(format!(
                "the bill download answered {status} {code}: {message} (a download_url lasts 30 s: resume applies again)"
            )));
        }
        Ok(body)
    }
}

/// A bill's day as WeChat Pay takes it: `YYYY-MM-DD`, nothing else in
/// the query.
fn bill_date(date: &str) -> Result<&str, CallError> {
    date.parse::<jiff::civil::Date>()
        .ok()
        .filter(|d| d.to_string() == date)
        .map(|_| date)
        .ok_or_else(|| CallError::Refused(format!("bill date {date:?} is not YYYY-MM-DD")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha1::Digest;
    use std::io::Write;

    fn answer(hash_type: &str, hash_value: String) -> BillAnswer {
        BillAnswer {
            hash_type: hash_type.into(),
            hash_value,
            download_url: String::new(),
        }
    }

    fn unpack(packed: &[u8], answer: &BillAnswer, limit: u64) -> Result<Vec<u8>, CallError> {
        let packed = spool::of_bytes(packed).unwrap();
        unpack_bill(packed, answer, limit, "the bill").map(|b| std::fs::read(b.path()).unwrap())
    }

    /// The digest is of the bill before gzip, its byte-order mark included.
    #[test]
    fn a_bill_is_gunzipped_and_checked_against_the_digest_of_its_plain_bytes() {
        let bill = "\u{feff}交易时间,公众账号ID\r\n`2026-11-30 10:00:00,`wx01\r\n".as_bytes();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(bill).unwrap();
        let packed = gz.finish().unwrap();
        let plain = hex::encode(sha1::Sha1::digest(bill)).to_ascii_uppercase();
        let limit = spool::MAX_BILL_BYTES;
        assert_eq!(
            unpack(&packed, &answer("SHA1", plain.clone()), limit).unwrap(),
            bill
        );
        assert_eq!(
            unpack(bill, &answer("SHA1", plain.clone()), limit).unwrap(),
            bill
        );
        let of_packed = hex::encode(sha1::Sha1::digest(&packed));
        assert!(unpack(&packed, &answer("SHA1", of_packed), limit).is_err());
        assert!(unpack(&packed, &answer("MD5", plain.clone()), limit).is_err());
        let half = &packed[..packed.len() / 2];
        assert!(unpack(half, &answer("SHA1", String::new()), limit).is_err());
        // One byte past the limit is a bomb; the limit itself is a bill.
        let n = bill.len() as u64;
        assert_eq!(
            unpack(&packed, &answer("SHA1", plain.clone()), n).unwrap(),
            bill
        );
        let err = unpack(&packed, &answer("SHA1", plain), n - 1).unwrap_err();
        let err = err.to_string();
        assert!(
            err.contains(&format!("gunzips to more than {} bytes", n - 1))
                && err.contains("the bill"),
            "{err}"
        );
    }

    #[test]
    fn a_bill_date_is_a_calendar_day_and_nothing_else() {
        assert_eq!(bill_date("2026-11-30").unwrap(), "2026-11-30");
        for bad in ["2026-11-31", "2026-11-30&bill_type=REFUND", "20261130", ""] {
            assert!(bill_date(bad).is_err(), "{bad}");
        }
    }
}
