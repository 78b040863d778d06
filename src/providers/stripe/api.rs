//! Stripe's API as Reckon calls it: PaymentIntents created (one per
//! payment_no: the Idempotency-Key, and the metadata that names Reckon's
//! payment), read by id or searched by that metadata, and canceled; Refunds
//! created (Idempotency-Key = refund_no) and read by id or listed for the
//! intent. The day's balance transactions, page by page, for the statement
//! pull. A 404 is "not known"; a 5xx, a 429, a timeout or a broken
//! connection an unknown result; a 401/403 a refusal naming the key.

use super::balance::{self, Cursor, List};
use super::{Intent, Stripe, StripeRefund};
use crate::domain::{PaymentNo, ProviderTxnId};
use crate::providers::{
    CallError, CreateRequest, ProviderView, RefundRequest, RefundView, StatementPage,
};
use http::StatusCode;

impl Stripe {
    async fn call(&self, req: reqwest::RequestBuilder) -> Result<serde_json::Value, CallError> {
        let text = self.call_text(req).await?;
        serde_json::from_str(&text)
            .map_err(|e| CallError::Network(format!("unreadable answer: {e}")))
    }

    /// A successful answer's text, as Stripe sent it.
    async fn call_text(&self, req: reqwest::RequestBuilder) -> Result<String, CallError> {
        let res = req
            .bearer_auth(&self.api_key)
            .send()
            .await
            .map_err(crate::providers::wire::call_error)?;
        let status = res.status();
        if status == StatusCode::NOT_FOUND {
            return Err(CallError::NotFound);
        }
        if status.is_server_error() {
            return Err(CallError::Network(format!("Stripe answered {status}")));
        }
        // Stripe did nothing and says so: asking again later is safe.
        if status == StatusCode::TOO_MANY_REQUESTS {
            return Err(CallError::Network(format!(
                "Stripe answered {status} (rate limited): try again later"
            )));
        }
        let text =
            String::from_utf8_lossy(&crate::providers::wire::answer(res).await?).into_owned();
        if !status.is_success() {
            let body = serde_json::from_str::<serde_json::Value>(&text);
            let message = body
                .as_ref()
                .ok()
                .and_then(|b| b["error"]["message"].as_str())
                .unwrap_or("refused")
                .to_owned();
            if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
                return Err(CallError::Refused(format!(
                    "Stripe refused the api_key of provider {} ({status}: {message}); set api_key to a secret or restricted key (sk_…/rk_…) of this account that may read what is asked",
                    self.name
                )));
            }
            return Err(CallError::Refused(format!("{status}: {message}")));
        }
        Ok(text)
    }

    /// One page of the day's balance transactions (see `balance`): the
    /// first without a cursor, the others `starting_after` the last listed.
    pub(super) async fn balance_page(
        &self,
        date: &str,
        cursor: Option<&str>,
    ) -> Result<StatementPage, CallError> {
        let (gte, lt) = balance::day_bounds(date, &self.day_zone).map_err(CallError::Refused)?;
        let mut at = match cursor {
            Some(c) => Cursor::parse(c).map_err(CallError::Refused)?,
            None => Cursor::default(),
        };
        let mut query = vec![
            ("created[gte]", gte.to_string()),
            ("created[lt]", lt.to_string()),
            ("limit", balance::PAGE_LIMIT.to_owned()),
            ("expand[]", "data.source".to_owned()),
        ];
        if let Some(after) = &at.after {
            query.push(("starting_after", after.clone()));
        }
        let body = self
            .call(
                self.http
                    .get(format!("{}/v1/balance_transactions", self.base_url))
                    .query(&query),
            )
            .await?;
        let list: List = serde_json::from_value(body)
            .map_err(|e| CallError::Refused(format!("not a list of balance transactions: {e}")))?;
        let mut rows = Vec::new();
        let mut payouts = Vec::new();
        for t in &list.data {
            // A row outside the day would be reconciled on the wrong day.
            if !(gte..lt).contains(&t.created) {
                return Err(CallError::Refused(format!(
                    "Stripe listed {} created at {}, outside {date} [{gte}, {lt})",
                    t.id, t.created
                )));
            }
            if let Some(payout) = t
                .payout()
                .map_err(|e| CallError::Refused(format!("balance transaction {e}")))?
            {
                payouts.push(payout);
            }
            if let Some(row) = t
                .row(rows.len() as i64 + 1)
                .map_err(|e| CallError::Refused(format!("balance transaction {e}")))?
            {
                at.rows += 1;
                at.total_minor += row.money.minor;
                rows.push(row);
            }
        }
        // A list that does not move on past its cursor would be pulled
        // forever, its rows counted again each time.
        let last = list.data.last().map(|t| t.id.clone());
        if list.has_more && (last.is_none() || last == at.after) {
            return Err(CallError::Refused(format!(
                "Stripe's list of balance transactions did not move on past {}",
                at.after.as_deref().unwrap_or("its first page")
            )));
        }
        if last.is_some() {
            at.after = last;
        }
        let (next_cursor, summary) = if list.has_more {
            (at.text(), None)
        } else {
            // Stripe's list states no totals: what the pages handed over,
            // held against what the run staged from them.
            let stated = vec![
                ("rows".to_owned(), at.rows),
                ("total_minor".to_owned(), at.total_minor),
            ];
            (None, Some(stated))
        };
        Ok(StatementPage {
            rows,
            next_cursor,
            summary,
            payouts,
        })
    }

    /// The net of the balance transactions an automatic payout settles:
    /// `GET /v1/balance_transactions?payout=po_…`, every page, the payout's
    /// own transaction left out (Stripe lists it too).
    pub(super) async fn settled_by(&self, payout_id: &str) -> Result<i64, CallError> {
        let mut after: Option<String> = None;
        let mut net = 0i64;
        loop {
            let mut query = vec![
                ("payout", payout_id.to_owned()),
                ("limit", balance::PAGE_LIMIT.to_owned()),
            ];
            if let Some(a) = &after {
                query.push(("starting_after", a.clone()));
            }
            let body = self
                .call(
                    self.http
                        .get(format!("{}/v1/balance_transactions", self.base_url))
                        .query(&query),
                )
                .await?;
            let list: List = serde_json::from_value(body).map_err(|e| {
                CallError::Refused(format!("not a list of balance transactions: {e}"))
            })?;
            for t in &list.data {
                if t.kind != "payout" {
                    net = net.saturating_add(t.net);
                }
            }
            let last = list.data.last().map(|t| t.id.clone());
            if !list.has_more {
                return Ok(net);
            }
            if last.is_none() || last == after {
                return Err(CallError::Refused(format!(
                    "Stripe's list of the transactions of {payout_id} did not move on"
                )));
            }
            after = last;
        }
    }

    pub(super) fn refund_view(value: serde_json::Value) -> Result<RefundView, CallError> {
        serde_json::from_value::<StripeRefund>(value)
            .map_err(|e| CallError::Refused(format!("not a Refund: {e}")))?
            .view()
            .map_err(CallError::Refused)
    }

    pub(super) fn intent_view(value: serde_json::Value) -> Result<ProviderView, CallError> {
        serde_json::from_value::<Intent>(value)
            .map_err(|e| CallError::Refused(format!("not a PaymentIntent: {e}")))?
            .view()
            .map_err(CallError::Refused)
    }

    pub(super) async fn create_intent(
        &self,
        req: &CreateRequest<'_>,
    ) -> Result<ProviderView, CallError> {
        let mut form = vec![
            ("amount", req.money.minor.to_string()),
            ("currency", req.money.currency.code().to_ascii_lowercase()),
            ("metadata[payment_no]", req.payment_no.to_string()),
        ];
        if let Some(d) = req.description {
            form.push(("description", d.to_owned()));
        }
        let body = self
            .call(
                self.http
                    .post(format!("{}/v1/payment_intents", self.base_url))
                    // Creating twice with one key is one intent.
                    .header("Idempotency-Key", req.payment_no.as_str())
                    .form(&form),
            )
            .await?;
        Self::intent_view(body)
    }

    pub(super) async fn retrieve_intent(
        &self,
        payment_no: &PaymentNo,
        txn: Option<&ProviderTxnId>,
    ) -> Result<ProviderView, CallError> {
        let body = match txn {
            Some(id) => {
                self.call(
                    self.http
                        .get(format!("{}/v1/payment_intents/{id}", self.base_url)),
                )
                .await?
            }
            None => {
                let query = format!("metadata['payment_no']:'{payment_no}'");
                let found = self
                    .call(
                        self.http
                            .get(format!("{}/v1/payment_intents/search", self.base_url))
                            .query(&[("query", query)]),
                    )
                    .await?;
                found["data"].get(0).cloned().ok_or(CallError::NotFound)?
            }
        };
        Self::intent_view(body)
    }

    pub(super) async fn create_refund(
        &self,
        req: &RefundRequest<'_>,
    ) -> Result<RefundView, CallError> {
        let intent = match req.payment_txn {
            Some(id) => id.clone(),
            None => self
                .retrieve_intent(req.payment_no, None)
                .await?
                .provider_txn_id
                .ok_or(CallError::NotFound)?,
        };
        let form = [
            ("payment_intent", intent.to_string()),
            ("amount", req.money.minor.to_string()),
            ("metadata[refund_no]", req.refund_no.to_string()),
            ("metadata[payment_no]", req.payment_no.to_string()),
            ("metadata[reason]", req.reason.chars().take(400).collect()),
        ];
        let body = self
            .call(
                self.http
                    .post(format!("{}/v1/refunds", self.base_url))
                    // Asking twice with one key is one refund.
                    .header("Idempotency-Key", req.refund_no.as_str())
                    .form(&form),
            )
            .await?;
        Self::refund_view(body)
    }

    pub(super) async fn retrieve_refund(
        &self,
        req: &RefundRequest<'_>,
    ) -> Result<RefundView, CallError> {
        if let Some(id) = req.provider_refund_id {
            let body = self
                .call(self.http.get(format!("{}/v1/refunds/{id}", self.base_url)))
                .await?;
            return Self::refund_view(body);
        }
        let Some(intent) = req.payment_txn else {
            return Err(CallError::NotFound);
        };
        let list = self
            .call(
                self.http
                    .get(format!("{}/v1/refunds", self.base_url))
                    .query(&[("payment_intent", intent.as_str()), ("limit", "100")]),
            )
            .await?;
        let found = list["data"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["metadata"]["refund_no"] == req.refund_no.as_str())
            .cloned()
            .ok_or(CallError::NotFound)?;
        Self::refund_view(found)
    }

    pub(super) async fn cancel_intent(
        &self,
        payment_no: &PaymentNo,
        txn: Option<&ProviderTxnId>,
    ) -> Result<(), CallError> {
        let id = match txn {
            Some(id) => id.clone(),
            None => self
                .retrieve_intent(payment_no, None)
                .await?
                .provider_txn_id
                .ok_or(CallError::NotFound)?,
        };
        self.call(
            self.http
                .post(format!("{}/v1/payment_intents/{id}/cancel", self.base_url)),
        )
        .await
        .map(|_| ())
    }
}

/// The events Reckon reads (`Stripe::parse`), asked for by name: `types[]`
/// takes up to 20.
const UNDELIVERED_TYPES: [&str; 15] = [
    "payment_intent.succeeded",
    "payment_intent.processing",
    "payment_intent.requires_action",
    "payment_intent.amount_capturable_updated",
    "payment_intent.partially_funded",
    "payment_intent.payment_failed",
    "payment_intent.canceled",
    "refund.created",
    "refund.updated",
    "refund.failed",
    "charge.dispute.created",
    "charge.dispute.updated",
    "charge.dispute.closed",
    "charge.dispute.funds_withdrawn",
    "charge.dispute.funds_reinstated",
];
/// A page of `GET /v1/events`, each event's bytes as Stripe sent them: the
/// callback keeps what the provider said, not a re-serialization.
#[derive(serde::Deserialize)]
struct EventList<'a> {
    #[serde(borrow)]
    data: Vec<&'a serde_json::value::RawValue>,
    has_more: bool,
}

#[derive(serde::Deserialize)]
struct EventId {
    id: String,
}

/// Stripe's largest page.
const EVENTS_PAGE: &str = "100";
/// A day with more undelivered events than this is a broken endpoint, not a
/// gap: the rest are left to the status queries and the statement.
const EVENTS_MAX_PAGES: usize = 50;

impl Stripe {
    /// `GET /v1/events?delivery_success=false`: the events of the window
    /// still pending or failed at some webhook endpoint, newest first, page
    /// by page (`starting_after` the last listed), each as its webhook
    /// carries it.
    pub(super) async fn undelivered_events(
        &self,
        from: i64,
        to: i64,
    ) -> Result<Vec<Vec<u8>>, CallError> {
        let mut events = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..EVENTS_MAX_PAGES {
            let mut query = vec![
                ("delivery_success", "false".to_owned()),
                ("created[gte]", from.to_string()),
                ("created[lt]", to.to_string()),
                ("limit", EVENTS_PAGE.to_owned()),
            ];
            query.extend(
                UNDELIVERED_TYPES
                    .iter()
                    .map(|t| ("types[]", (*t).to_owned())),
            );
            if let Some(a) = &after {
                query.push(("starting_after", a.clone()));
            }
            let text = self
                .call_text(
                    self.http
                        .get(format!("{}/v1/events", self.base_url))
                        .query(&query),
                )
                .await?;
            let list: EventList = serde_json::from_str(&text)
                .map_err(|e| CallError::Refused(format!("not a list of events: {e}")))?;
            let mut last = None;
            for event in &list.data {
                let id: EventId = serde_json::from_str(event.get())
                    .map_err(|e| CallError::Refused(format!("an event without an id: {e}")))?;
                last = Some(id.id);
                events.push(event.get().as_bytes().to_vec());
            }
            let has_more = list.has_more;
            // A list that does not move on past its cursor would be asked
            // for forever.
            if !has_more {
                return Ok(events);
            }
            if last.is_none() || last == after {
                return Err(CallError::Refused(format!(
                    "Stripe's list of events did not move on past {}",
                    after.as_deref().unwrap_or("its first page")
                )));
            }
            after = last;
        }
        tracing::warn!(
            provider = %self.name,
            listed = events.len(),
            "more undelivered events than one sweep reads; the rest are left to queries and the statement"
        );
        Ok(events)
    }
}
