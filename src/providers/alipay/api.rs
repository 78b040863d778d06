//! Alipay's gateway as Reckon calls it: `alipay.trade.query`,
//! `alipay.trade.refund`, `alipay.trade.fastpay.refund.query` and
//! `alipay.data.dataservice.bill.downloadurl.query`, each request signed
//! RSA2 with the app's private key (every non-empty parameter but `sign`),
//! each answer believed only when its `{method}_response` text verifies
//! with Alipay's public key. The bill's download itself is a plain GET of
//! the URL that verified answer named.

use super::{Alipay, status_of};
use crate::domain::{Currency, Money, PaymentNo, ProviderTxnId, RefundStatus};
use crate::providers::balance::BalanceBill;
use crate::providers::spool::Spooled;
use crate::providers::{CallError, ProviderView, RefundRequest, RefundView, StatementFile};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use rsa::pkcs1v15::Signature;
use rsa::signature::{SignatureEncoding, Signer, Verifier};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::BTreeMap;

#[derive(Deserialize)]
struct QueriedTrade {
    out_trade_no: String,
    trade_no: Option<String>,
    trade_status: String,
    total_amount: String,
}

impl Alipay {
    /// Calls a gateway method; returns the verified `{method}_response`
    /// object once its `code` says success.
    async fn call(
        &self,
        method: &str,
        biz_content: serde_json::Value,
    ) -> Result<serde_json::Value, CallError> {
        let Some((gateway, signer)) = &self.gateway else {
            return Err(CallError::Refused(format!(
                "{} has no gateway and private key configured",
                self.name
            )));
        };
        let beijing =
            jiff::Timestamp::now().to_zoned(jiff::tz::TimeZone::fixed(jiff::tz::offset(8)));
        let mut params: BTreeMap<String, String> = [
            ("app_id", self.app_id.clone()),
            ("method", method.to_owned()),
            ("format", "JSON".to_owned()),
            ("charset", "utf-8".to_owned()),
            ("sign_type", "RSA2".to_owned()),
            (
                "timestamp",
                beijing.strftime("%Y-%m-%d %H:%M:%S").to_string(),
            ),
            ("version", "1.0".to_owned()),
            ("biz_content", biz_content.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        // Requests sign every non-empty parameter but `sign` (notifications
        // also leave out `sign_type`).
        let content = params
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("&");
        params.insert(
            "sign".into(),
            B64.encode(signer.sign(content.as_bytes()).to_bytes()),
        );
        let res = self
            .http
            .post(gateway)
            .form(&params)
            .send()
            .await
            .map_err(crate::providers::wire::call_error)?;
        let status = res.status();
        let bytes = crate::providers::wire::answer(res).await?;
        if !status.is_success() {
            return Err(CallError::Network(format!("the gateway answered {status}")));
        }
        let key = format!("{}_response", method.replace('.', "_"));
        let envelope: BTreeMap<String, &RawValue> = serde_json::from_slice(&bytes)
            .map_err(|e| CallError::Network(format!("unreadable answer: {e}")))?;
        let raw = envelope
            .get(&key)
            .ok_or_else(|| CallError::Network(format!("the answer has no {key}")))?;
        let answer: serde_json::Value = serde_json::from_str(raw.get())
            .map_err(|e| CallError::Network(format!("unreadable answer: {e}")))?;
        let code = answer["code"].as_str().unwrap_or_default();
        // Alipay signs every answer it produces; gateway-level refusals
        // (bad signature, missing parameters) may come unsigned.
        let sign = envelope
            .get("sign")
            .and_then(|s| serde_json::from_str::<String>(s.get()).ok());
        let signed = sign.is_some();
        match sign {
            Some(sign) => {
                let signature = B64
                    .decode(sign.trim())
                    .ok()
                    .and_then(|b| Signature::try_from(b.as_slice()).ok())
                    .ok_or_else(|| CallError::Refused("the answer's sign is malformed".into()))?;
                self.key
                    .verify(raw.get().as_bytes(), &signature)
                    .map_err(|_| {
                        CallError::Refused("the answer's signature does not verify".into())
                    })?;
            }
            None if code == "10000" => {
                return Err(CallError::Refused("the answer is not signed".into()));
            }
            None => {}
        }
        if code == "10000" {
            return Ok(answer);
        }
        let sub_code = answer["sub_code"].as_str().unwrap_or_default();
        if sub_code == "ACQ.TRADE_NOT_EXIST" {
            return Err(CallError::NotFound);
        }
        // The gateway says isp.bill_not_exist; the documentation names
        // BILL_NOT_EXIST and NO_BILL_DATA (no business that day).
        // Believed only signed, since it can end a day; unsigned, it only
        // makes the pull wait.
        if matches!(
            sub_code,
            "isp.bill_not_exist" | "BILL_NOT_EXIST" | "NO_BILL_DATA"
        ) {
            if !signed {
                return Err(CallError::NotReady(format!(
                    "Alipay has no bill yet ({code} {sub_code}, unsigned)"
                )));
            }
            return Err(CallError::NoStatement(format!(
                "Alipay has no bill yet ({code} {sub_code}: {})",
                answer["sub_msg"].as_str().unwrap_or_default()
            )));
        }
        if code == "20000"
            || matches!(
                sub_code,
                "ACQ.SYSTEM_ERROR" | "SYSTEM_RATE_LIMIT" | "USER_RATE_LIMIT"
            )
        {
            return Err(CallError::Network(format!(
                "Alipay is unavailable ({sub_code})"
            )));
        }
        Err(CallError::Refused(format!(
            "{code} {sub_code}: {}",
            answer["sub_msg"]
                .as_str()
                .or(answer["msg"].as_str())
                .unwrap_or_default()
        )))
    }

    pub(super) async fn trade_query(
        &self,
        payment_no: &PaymentNo,
        txn: Option<&ProviderTxnId>,
    ) -> Result<ProviderView, CallError> {
        let mut biz = serde_json::json!({ "out_trade_no": payment_no.as_str() });
        if let Some(t) = txn {
            biz["trade_no"] = t.as_str().into();
        }
        let answer = self.call("alipay.trade.query", biz).await?;
        let trade: QueriedTrade = serde_json::from_value(answer)
            .map_err(|e| CallError::Refused(format!("unreadable trade: {e}")))?;
        if trade.out_trade_no != payment_no.as_str() {
            return Err(CallError::Refused(format!(
                "asked about {payment_no}, told about {}",
                trade.out_trade_no
            )));
        }
        let status = status_of(&trade.trade_status).ok_or_else(|| {
            CallError::Refused(format!("unknown trade_status {}", trade.trade_status))
        })?;
        let cny = Currency::parse("CNY").expect("CNY is known");
        Ok(ProviderView {
            provider_txn_id: trade
                .trade_no
                .as_deref()
                .filter(|t| !t.is_empty())
                .map(ProviderTxnId::parse)
                .transpose()
                .map_err(|e| CallError::Refused(e.to_string()))?,
            status,
            money: Money::parse_major(&trade.total_amount, cny)
                .map_err(|e| CallError::Refused(format!("total_amount: {e}")))?,
        })
    }

    pub(super) async fn trade_refund(
        &self,
        req: &RefundRequest<'_>,
    ) -> Result<RefundView, CallError> {
        let mut biz = serde_json::json!({
            "out_trade_no": req.payment_no.as_str(),
            "refund_amount": req.money.major_string(),
            "out_request_no": req.refund_no.as_str(),
            "refund_reason": req.reason.chars().take(256).collect::<String>(),
        });
        if let Some(t) = req.payment_txn {
            biz["trade_no"] = t.as_str().into();
        }
        let answer = self.call("alipay.trade.refund", biz).await?;
        // fund_change = Y: the money moved now. Otherwise (a repeat of an
        // earlier request, say) the refund query says how it stands.
        let status = if answer["fund_change"] == "Y" {
            RefundStatus::Succeeded
        } else {
            RefundStatus::Pending
        };
        Ok(RefundView {
            provider_refund_id: None,
            status,
            money: req.money,
        })
    }

    pub(super) async fn refund_query(
        &self,
        req: &RefundRequest<'_>,
    ) -> Result<RefundView, CallError> {
        let mut biz = serde_json::json!({
            "out_trade_no": req.payment_no.as_str(),
            "out_request_no": req.refund_no.as_str(),
        });
        if let Some(t) = req.payment_txn {
            biz["trade_no"] = t.as_str().into();
        }
        let answer = self.call("alipay.trade.fastpay.refund.query", biz).await?;
        // An empty answer: Alipay has no such refund request.
        let Some(amount) = answer["refund_amount"].as_str().filter(|a| !a.is_empty()) else {
            return Err(CallError::NotFound);
        };
        if answer["out_request_no"]
            .as_str()
            .is_some_and(|n| n != req.refund_no.as_str())
        {
            return Err(CallError::Refused("told about another refund".into()));
        }
        let cny = Currency::parse("CNY").expect("CNY is known");
        Ok(RefundView {
            provider_refund_id: None,
            status: if answer["refund_status"] == "REFUND_SUCCESS" {
                RefundStatus::Succeeded
            } else {
                RefundStatus::Pending
            },
            money: Money::parse_major(amount, cny)
                .map_err(|e| CallError::Refused(format!("refund_amount: {e}")))?,
        })
    }

    /// The trade bill (业务明细) of `date`: its download URL asked for,
    /// the zip fetched, the detail checked against its 汇总.
    pub(super) async fn trade_bill(&self, date: &str) -> Result<StatementFile, CallError> {
        let zip = self.bill_zip(date, "trade").await?;
        let limit = self.max_bill_bytes;
        let (name, body) = tokio::task::spawn_blocking(move || super::bill::detail_of(&zip, limit))
            .await
            .map_err(|e| CallError::Refused(format!("unzipping the bill stopped: {e}")))??;
        Ok(StatementFile {
            name,
            bill_type: "trade".into(),
            body,
        })
    }

    /// The account's 账务明细 of `date` (bill_type=signcustomer): the zip
    /// fetched as the trade bill's is, its 账务明细 read and checked.
    pub(super) async fn account_bill(&self, date: &str) -> Result<BalanceBill, CallError> {
        let zip = self.bill_zip(date, "signcustomer").await?;
        let limit = self.max_bill_bytes;
        tokio::task::spawn_blocking(move || {
            let (name, body) = super::bill::account_detail_of(&zip, limit)?;
            let bytes = std::fs::read(body.path())
                .map_err(|e| CallError::Refused(format!("{name} could not be read back: {e}")))?;
            super::account_log::read(&bytes)
                .map_err(|why| CallError::Refused(format!("Alipay's 账务明细 {name}: {why}")))
        })
        .await
        .map_err(|e| CallError::Refused(format!("unzipping the bill stopped: {e}")))?
    }

    /// A bill zip of `date`: its download URL asked for (a signed, verified
    /// answer), the zip fetched within `max_bill_bytes`.
    async fn bill_zip(&self, date: &str, bill_type: &str) -> Result<Spooled, CallError> {
        if date
            .parse::<jiff::civil::Date>()
            .map_or(true, |d| d.to_string() != date)
        {
            return Err(CallError::Refused(format!(
                "bill date {date:?} is not YYYY-MM-DD"
            )));
        }
        let answer = self
            .call(
                "alipay.data.dataservice.bill.downloadurl.query",
                // secure: an https link (the download itself is not signed).
                serde_json::json!({ "bill_type": bill_type, "bill_date": date, "secure": "true" }),
            )
            .await?;
        let Some(url) = answer["bill_download_url"]
            .as_str()
            .filter(|u| !u.is_empty())
        else {
            return Err(CallError::Refused(
                "the answer names no bill_download_url".into(),
            ));
        };
        let what = format!("Alipay's {bill_type} bill for {date}");
        let limit = self.max_bill_bytes;
        let (status, zip) =
            crate::providers::wire::download(self.http.get(url), limit, &what).await?;
        if !status.is_success() {
            return Err(CallError::Refused(format!(
                "the bill download answered {status} (a bill_download_url lasts 30 s: resume asks again)"
            )));
        }
        Ok(zip)
    }
}
