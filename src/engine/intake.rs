//! Callback intake, in DESIGN.md's order: verify, then store the raw
//! callback (insert-if-absent) and `apply` it — in one group commit (see
//! `ingest`). Once stored, Reckon owns it: only a failure to store is
//! answered with "try again". Failed processing is retried by a worker.

use super::ingest::{Incoming, Ingested};
use super::redelivery::{Delivery, Seen, repeat_of};
use super::refunds::{RefundOutcome, apply_refund_in};
use super::{Applied, Engine, Outcome, Source, retry_delay};
use crate::domain::{AlertKind, AlertSeverity, ProviderName};
use crate::providers::{Answer, Notification, Provider, RefundNotice, Reply, VerifyError};
use crate::store;
use crate::store::{alerts, callbacks, nonces, payments, refused, report_pushes, tasks};
use http::HeaderMap;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Instant;

/// Headers kept with the raw callback (for re-parsing and the console);
/// signatures are kept too, they are not secrets.
pub(crate) fn headers_json(headers: &HeaderMap) -> String {
    let map: serde_json::Map<String, serde_json::Value> = headers
        .iter()
        .filter(|(k, _)| k.as_str() != "cookie" && k.as_str() != "authorization")
        .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.into())))
        .collect();
    serde_json::Value::Object(map).to_string()
}

/// The header a notification fetched from its provider's API carries in
/// its stored headers: what was asked, where a webhook has its signature.
pub const FETCHED_HEADER: &str = "x-reckon-fetched";

/// What became of a notification fetched from its provider's API.
#[derive(Debug, PartialEq, Eq)]
pub enum Fetched {
    /// Reckon had not received it: stored and applied now.
    New,
    /// Received before (as a webhook, or by an earlier sweep).
    Known,
    /// Not a payment or refund notification Reckon reads.
    Ignored,
    Unreadable(String),
    /// Not stored: the answer's status a webhook would have had (a
    /// database that could not store it).
    NotTaken(http::StatusCode),
}

impl Engine {
    /// Handles one verified-or-not webhook for `provider`; the reply is in
    /// the provider's protocol, for the web layer to send. `content_type` and size were checked before
    /// the body was read.
    #[tracing::instrument(skip_all, fields(provider = %provider.name(), trace_id = tracing::field::Empty))]
    pub async fn receive(
        &self,
        provider: &Arc<dyn Provider>,
        headers: &HeaderMap,
        body: &[u8],
        source: Option<&str>,
    ) -> Reply {
        let started = Instant::now();
        // Time-ordered: its index on the callbacks grows at one end, where a
        // random id put a randomly placed page into every batch's commit.
        let trace_id = uuid::Uuid::now_v7().simple().to_string();
        tracing::Span::current().record("trace_id", trace_id.as_str());
        self.metrics.callback("received");
        let now = self.now();

        // Signed and fresh, then not a replay of a request already received.
        let verify = match provider.verify_by_call() {
            Some(by_call) => by_call.verify(headers, body, now / 1_000_000).await,
            None => provider.verify(headers, body, now / 1_000_000),
        };
        let verify_failed = verify.is_err();
        let verified = match verify {
            Ok(()) => match self.replayed(provider.as_ref(), headers, now).await {
                Some(replay) => Err(replay),
                None => Ok(()),
            },
            Err(e) => Err(e),
        };
        if let Err(e) = verified {
            tracing::warn!(reason = %e, "callback refused: verification failed");
            self.metrics.callback("failed");
            // What the body claims is not believed; at most it makes
            // Reckon ask the provider, who is the authority.
            let claimed = self
                .settings()
                .query_on_unverified
                .contains(provider.name().as_str())
                .then(|| match provider.parse(headers, body) {
                    Ok(Notification::Payment(n)) => Some(n.payment_no.as_str().to_owned()),
                    _ => None,
                })
                .flatten();
            let refusal = Refusal {
                provider: provider.as_ref(),
                kind: "unverified",
                reason: &e.to_string(),
                headers,
                body,
                body_len: body.len() as i64,
                claimed_payment: claimed.as_deref(),
                trace_id: &trace_id,
                source,
                verify_error: verify_failed.then_some(&e),
            };
            self.refuse(&refusal).await;
            return provider.answer(&Answer::Unverified(e));
        }
        self.take_in(provider, headers, body, source, trace_id, started)
            .await
    }

    /// A notification its provider's own API handed over, in the answer to
    /// an authenticated call as a status query's is: taken in as a verified
    /// webhook is, its headers saying where it came from (`fetched`).
    #[tracing::instrument(skip_all, fields(provider = %provider.name(), trace_id = tracing::field::Empty))]
    pub async fn take_in_fetched(
        &self,
        provider: &Arc<dyn Provider>,
        body: &[u8],
        fetched: &str,
    ) -> Fetched {
        let started = Instant::now();
        let trace_id = uuid::Uuid::now_v7().simple().to_string();
        tracing::Span::current().record("trace_id", trace_id.as_str());
        self.metrics.callback("received");
        let mut headers = HeaderMap::new();
        if let Ok(v) = http::HeaderValue::from_str(fetched) {
            headers.insert(FETCHED_HEADER, v);
        }
        let callback_id = match provider.parse(&headers, body) {
            Ok(Notification::Payment(n)) => n.callback_id.as_str().to_owned(),
            Ok(Notification::Refund(n)) => n.callback_id.as_str().to_owned(),
            Ok(Notification::Dispute(n)) => n.callback_id.as_str().to_owned(),
            Ok(Notification::Ignored { .. }) => return Fetched::Ignored,
            Err(e) => return Fetched::Unreadable(e),
        };
        let stored = || async {
            callbacks::by_callback_id(&self.db.pool, provider.name().as_str(), &callback_id)
                .await
                .map(|row| row.is_some())
        };
        let before = stored().await;
        let reply = self
            .take_in(provider, &headers, body, None, trace_id, started)
            .await;
        match (before, stored().await) {
            (Ok(true), _) => Fetched::Known,
            (_, Ok(true)) => Fetched::New,
            _ => Fetched::NotTaken(reply.status),
        }
    }

    /// A verified notification parsed and stored, its outcome applied; the
    /// provider's answer.
    async fn take_in(
        &self,
        provider: &Arc<dyn Provider>,
        headers: &HeaderMap,
        body: &[u8],
        source: Option<&str>,
        trace_id: String,
        started: Instant,
    ) -> Reply {
        let parsed = provider.parse(headers, body);
        let facts = parsed.as_ref().map(Notification::facts).unwrap_or_default();
        let notice = match parsed {
            Ok(Notification::Payment(n)) => n,
            Ok(Notification::Refund(n)) => {
                let answer = self
                    .receive_refund(provider.as_ref(), headers, body, &n, &facts, &trace_id)
                    .await;
                self.metrics
                    .callback_duration(started.elapsed().as_secs_f64());
                return provider.answer(&answer);
            }
            Ok(Notification::Dispute(n)) => {
                let answer = self
                    .receive_dispute(provider.as_ref(), headers, body, &n, &facts, &trace_id)
                    .await;
                self.metrics
                    .callback_duration(started.elapsed().as_secs_f64());
                return provider.answer(&answer);
            }
            Ok(Notification::Ignored { event_type, .. }) => {
                // A report made ready: recorded for the statement beat to
                // fetch; only a failure to record it asks for it again.
                if let Some(push) = provider.reports().and_then(|r| r.pushed(body)) {
                    let name = provider.name().as_str();
                    return match report_pushes::record(&self.db.pool, name, &push, self.now()).await
                    {
                        Ok(new) => {
                            tracing::info!(file = %push.file_name, new, "report push recorded");
                            provider.answer(&Answer::Accepted)
                        }
                        Err(e) => {
                            tracing::error!(error = %e, "report push could not be stored");
                            provider.answer(&Answer::RetryLater)
                        }
                    };
                }
                tracing::info!(%event_type, "callback acknowledged: not a payment event");
                return provider.answer(&Answer::Accepted);
            }
            Err(e) => {
                tracing::warn!(reason = %e, "callback refused: unreadable");
                self.metrics.callback("failed");
                let refusal = Refusal {
                    provider: provider.as_ref(),
                    kind: "malformed",
                    reason: &e,
                    headers,
                    body,
                    body_len: body.len() as i64,
                    claimed_payment: None,
                    trace_id: &trace_id,
                    source,
                    verify_error: None,
                };
                self.refuse(&refusal).await;
                return provider.answer(&Answer::Malformed(e));
            }
        };

        let id = uuid::Uuid::now_v7().to_string();
        let incoming = Incoming {
            outcome: notice_outcome(&notice, provider.name(), &id, &trace_id),
            id,
            callback_id: notice.callback_id.as_str().to_owned(),
            provider: provider.name().as_str().to_owned(),
            provider_txn_id: notice
                .provider_txn_id
                .as_ref()
                .map(|t| t.as_str().to_owned()),
            callback_status: notice.provider_status.clone(),
            headers_json: headers_json(headers),
            payload: body.to_vec(),
            payload_hash: hex::encode(Sha256::digest(body)),
            trace_id,
            facts,
            declined: notice.declined.clone(),
        };
        let answer = match self.ingest(incoming).await {
            Ok(Ingested::New(applied)) => {
                self.metrics.applied(applied.class());
                if matches!(applied, Applied::UnknownPayment) {
                    self.metrics.callback("failed");
                    Answer::UnknownPayment
                } else {
                    self.metrics.callback("success");
                    // A moved payment has outbox messages to send; no other
                    // lane has new work from it.
                    if matches!(applied, Applied::Moved { .. }) {
                        self.wake.outbox.notify_one();
                    }
                    Answer::Accepted
                }
            }
            Ok(Ingested::Duplicate) => {
                self.metrics.callback("duplicate");
                tracing::info!("duplicate callback: no effect");
                Answer::Accepted
            }
            Ok(Ingested::StillUnknown) => {
                // Every delivery of it is answered as the first was, so the
                // provider keeps redelivering (a second channel beside the
                // retry worker) until one applies.
                self.metrics.callback("duplicate");
                tracing::info!("redelivery for a payment still unknown");
                Answer::UnknownPayment
            }
            Ok(Ingested::Conflicting) => {
                self.metrics.callback("conflict");
                Answer::Accepted
            }
            Err(e) => {
                tracing::error!(error = %e, "callback could not be stored");
                self.metrics.callback("failed");
                Answer::RetryLater
            }
        };
        self.metrics
            .callback_duration(started.elapsed().as_secs_f64());
        provider.answer(&answer)
    }

    /// A verified request whose replay nonce was seen within its window
    /// (by this instance or another, before a restart or after): refused.
    /// A database that cannot answer refuses it too — "try again" is safe,
    /// a replay let through is not.
    async fn replayed(
        &self,
        provider: &dyn Provider,
        headers: &HeaderMap,
        now: i64,
    ) -> Option<VerifyError> {
        let nonce = provider.replay_nonce(headers)?;
        let name = provider.name().as_str();
        let expires = now + provider.nonce_window_secs() * 1_000_000;
        match nonces::claim(&self.db.pool, name, nonce, now, expires).await {
            Ok(true) => {
                // Expired nonces go now and then, not on every request.
                if rand::random::<u8>() == 0
                    && let Err(e) = nonces::prune(&self.db.pool, now).await
                {
                    tracing::warn!(error = %e, "could not prune webhook nonces");
                }
                None
            }
            Ok(false) => Some(VerifyError::MalformedHeader(
                "repeated nonce: a replay of a request already received".into(),
            )),
            Err(e) => {
                tracing::error!(error = %e, "replay nonce not checked: database error");
                Some(VerifyError::MalformedHeader(
                    "replay nonce could not be checked; send again".into(),
                ))
            }
        }
    }

    /// Records a refused webhook for audit, within the storage bounds, and
    /// — when the provider is set up for it — asks the provider about the
    /// payment an unverified body names. Never fails the answer.
    pub async fn refuse(&self, r: &Refusal<'_>) {
        self.metrics.refused(r.kind);
        let now = self.now();
        // Counted before the rate bound: a flood is what the count is for.
        if r.verify_error.is_some() {
            self.count_failure(r.provider.name().as_str(), now).await;
        }
        let admitted = {
            let mut gate = self.refused_gate.lock().unwrap_or_else(|e| e.into_inner());
            let minute = now.div_euclid(60_000_000);
            if gate.0 != minute {
                *gate = (minute, 0);
            }
            gate.1 += 1;
            (gate.1 <= self.settings().refused_per_minute).then_some(gate.1)
        };
        let Some(nth) = admitted else {
            return;
        };
        let name = r.provider.name().as_str();
        // Diagnosed only when kept: the comparison with stored callbacks
        // reads the database, which a flood must not multiply.
        let diagnosis = match r.verify_error {
            Some(e) => self.diagnose(r.provider, r.headers, r.body, e, now).await,
            None => None,
        };
        let stored = refused::insert(
            &self.db.pool,
            &refused::Refused {
                provider: name,
                kind: r.kind,
                reason: r.reason,
                headers_json: &headers_json(r.headers),
                body: r.body,
                body_len: r.body_len,
                body_hash: &hex::encode(Sha256::digest(r.body)),
                payment_no: r.claimed_payment,
                trace_id: r.trace_id,
                now,
                source_addr: r.source,
                diagnosis: diagnosis.as_ref().map(|d| (d.kind, d.detail.as_str())),
            },
        )
        .await;
        if let Err(e) = stored {
            tracing::warn!(error = %e, "could not record a refused callback");
            return;
        }
        if nth % 8 == 0
            && let Err(e) = refused::prune(&self.db.pool, name, self.settings().refused_keep).await
        {
            tracing::warn!(error = %e, "could not prune refused callbacks");
        }
        if let Some(payment_no) = r.claimed_payment
            && r.provider.queries().is_some()
            && let Err(e) = self.query_claimed(name, payment_no, now).await
        {
            tracing::warn!(error = %e, "could not schedule a status query");
        }
    }

    async fn query_claimed(&self, provider: &str, payment_no: &str, now: i64) -> store::Result<()> {
        let Some(p) = payments::get(&self.db.pool, payment_no).await? else {
            return Ok(());
        };
        if p.provider != provider || p.status.is_settled() {
            return Ok(());
        }
        if tasks::query_soon(&self.db.pool, payment_no, now, 60_000_000).await? {
            tracing::info!(%payment_no, "an unverified webhook named this payment: asking the provider");
            self.wake.notify_one();
        }
        Ok(())
    }

    /// Applies a stored callback and records how it went; failures are
    /// scheduled for retry (2^n minutes, at most 64) and go DEAD after
    /// `callback_max_tries`.
    pub(super) async fn process(&self, id: &str, outcome: &Outcome) -> Option<Applied> {
        let result = self.apply(outcome).await;
        let now = self.now();
        let outcome_text = match &result {
            Ok(Applied::UnknownPayment) => Err(callbacks::UNKNOWN_PAYMENT.to_string()),
            Ok(applied) => Ok(applied.class()),
            Err(e) => Err(format!("apply failed: {e}")),
        };
        let recorded = match outcome_text {
            Ok(class) => {
                self.metrics.callback("success");
                callbacks::succeeded(&self.db.pool, id, class, now).await
            }
            Err(error) => {
                let payment_no = Some(outcome.payment_no.as_str());
                self.callback_failed(id, &error, payment_no, &outcome.trace_id, now)
                    .await
            }
        };
        if let Err(e) = recorded {
            tracing::error!(error = %e, "could not record the callback's processing");
        }
        result.ok()
    }

    /// Stores a verified refund notification (insert-if-absent on the same
    /// key as payment callbacks, keyed by its refund too) and applies it.
    async fn receive_refund(
        &self,
        provider: &dyn Provider,
        headers: &HeaderMap,
        body: &[u8],
        n: &RefundNotice,
        facts: &str,
        trace_id: &str,
    ) -> Answer {
        let id = uuid::Uuid::now_v7().to_string();
        let outcome = RefundOutcome::of_notice(n, provider.name(), &id, trace_id);
        let (sinks, outcome, now) = (&self.sink_names, &outcome, self.now());
        let heard = Heard {
            kind: "refund",
            id: &id,
            received_at: now,
            provider,
            headers,
            body,
            callback_id: n.callback_id.as_str(),
            payment_no: n.payment_no.as_ref().map(|p| p.as_str()),
            payment_txn_id: n.payment_txn_id.as_ref().map(|t| t.as_str()),
            provider_status: &n.provider_status,
            facts,
            trace_id,
        };
        let refund_no = n.refund_no.as_ref().map(|r| r.as_str());
        let (answer, taken) = self
            .store_and_apply(
                &heard,
                async |c: &mut store::Conn, row: &callbacks::NewCallback<'_>| {
                    callbacks::insert_refund_callback(c, row, refund_no).await
                },
                async |c: &mut store::Conn| apply_refund_in(c, sinks, outcome, now).await,
                |a| a.class(),
            )
            .await;
        match taken {
            Taken::Applied(applied) => self.count_refund(&applied),
            Taken::Repeat => self.metrics.refund("duplicate"),
            Taken::Other => {}
        }
        answer
    }

    /// A stored refund notification, applied again by the retry worker.
    pub(super) async fn process_refund(&self, id: &str, outcome: &RefundOutcome) {
        let now = self.now();
        let recorded = match self.apply_refund(outcome).await {
            Ok(applied) => {
                self.metrics.callback("success");
                callbacks::succeeded(&self.db.pool, id, applied.class(), now).await
            }
            Err(e) => {
                let payment_no = outcome.payment_no.as_ref().map(|p| p.as_str());
                let error = format!("apply failed: {e}");
                self.callback_failed(id, &error, payment_no, &outcome.trace_id, now)
                    .await
            }
        };
        if let Err(e) = recorded {
            tracing::error!(error = %e, "could not record the refund notification's processing");
        }
    }

    async fn callback_failed(
        &self,
        id: &str,
        error: &str,
        payment_no: Option<&str>,
        trace_id: &str,
        now: i64,
    ) -> store::Result<()> {
        self.metrics.callback("failed");
        let tries = callbacks::retry_count(&self.db.pool, id).await? + 1;
        let next = (tries < self.settings().callback_max_tries).then(|| now + retry_delay(tries));
        callbacks::failed(&self.db.pool, id, error, next, now).await?;
        if next.is_none() {
            self.metrics.callback("dead");
            alerts::raise_alert(
                &self.db.pool,
                &alerts::NewAlert {
                    dedupe_key: &format!("callback_dead:{id}"),
                    kind: AlertKind::CallbackDead,
                    severity: AlertSeverity::High,
                    payment_no,
                    message: &format!("callback {id} is DEAD after {tries} tries: {error}"),
                    trace_id: Some(trace_id),
                    now,
                },
            )
            .await?;
        }
        Ok(())
    }
}

/// A webhook refused before storing.
pub struct Refusal<'a> {
    pub provider: &'a dyn Provider,
    /// unverified | malformed | content_type | too_large
    pub kind: &'static str,
    pub reason: &'a str,
    pub headers: &'a HeaderMap,
    /// What was read of the body (nothing when it was too large).
    pub body: &'a [u8],
    pub body_len: i64,
    pub claimed_payment: Option<&'a str>,
    pub trace_id: &'a str,
    /// The peer address the server saw.
    pub source: Option<&'a str>,
    /// Why the provider's verification failed, when it did (not for a
    /// replayed nonce): counted towards the provider's spike alert and
    /// diagnosed.
    pub verify_error: Option<&'a VerifyError>,
}

pub fn notice_outcome(
    n: &crate::providers::PaymentNotice,
    provider: &ProviderName,
    evidence: &str,
    trace_id: &str,
) -> Outcome {
    Outcome {
        payment_no: n.payment_no.clone(),
        provider: provider.clone(),
        provider_txn_id: n.provider_txn_id.clone(),
        target: n.status,
        money: n.money,
        source: Source::Callback,
        evidence: evidence.to_owned(),
        trace_id: trace_id.to_owned(),
        paid_at: None,
    }
}

/// A provider's answer to a status query as an outcome (no result yet
/// counts as PENDING), traced anew.
pub fn view_outcome(
    view: crate::providers::ProviderView,
    payment_no: crate::domain::PaymentNo,
    provider: &ProviderName,
    source: Source,
    evidence: &str,
) -> Outcome {
    Outcome {
        payment_no,
        provider: provider.clone(),
        provider_txn_id: view.provider_txn_id,
        target: view.status.unwrap_or(crate::domain::PaymentStatus::Pending),
        money: view.money,
        source,
        evidence: evidence.to_owned(),
        trace_id: uuid::Uuid::new_v4().simple().to_string(),
        paid_at: None,
    }
}

/// Marks a stored callback by what applying it (in a savepoint, already
/// kept or rolled back) came to: SUCCEEDED with the outcome's class, or
/// FAILED with the error, to be tried again.
pub(super) async fn mark_applied<A, E: std::fmt::Display>(
    tx: &mut store::Tx<'_>,
    id: &str,
    applied: Result<A, E>,
    class: impl Fn(&A) -> &'static str,
    now: i64,
) -> store::Result<Result<A, String>> {
    match applied {
        Ok(a) => {
            callbacks::succeeded(&mut **tx, id, class(&a), now).await?;
            Ok(Ok(a))
        }
        Err(e) => {
            let error = format!("apply failed: {e}");
            callbacks::failed(&mut **tx, id, &error, Some(now + retry_delay(1)), now).await?;
            Ok(Err(error))
        }
    }
}

/// What a verified refund or dispute notification is stored as: the
/// parts its callback row keeps beside the raw request.
pub(super) struct Heard<'a> {
    /// The kind, for the log: "refund", "dispute".
    pub kind: &'static str,
    /// The callback row's id.
    pub id: &'a str,
    pub received_at: i64,
    pub provider: &'a dyn Provider,
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
    pub callback_id: &'a str,
    pub payment_no: Option<&'a str>,
    pub payment_txn_id: Option<&'a str>,
    pub provider_status: &'a str,
    pub facts: &'a str,
    pub trace_id: &'a str,
}

/// What storing and applying a notification came to, for its kind's own
/// counting; the answer is already decided.
pub(super) enum Taken<A> {
    Applied(A),
    Repeat,
    Other,
}

impl Engine {
    /// Stores a verified notification with `insert` (false: its key is
    /// there already) and applies it with `apply` in a savepoint of the same
    /// transaction; a failed apply leaves the callback FAILED for the retry
    /// worker.
    pub(super) async fn store_and_apply<A>(
        &self,
        h: &Heard<'_>,
        insert: impl AsyncFnOnce(&mut store::Conn, &callbacks::NewCallback<'_>) -> store::Result<bool>,
        apply: impl AsyncFnOnce(&mut store::Conn) -> store::Result<A>,
        class: impl Fn(&A) -> &'static str,
    ) -> (Answer, Taken<A>) {
        let (id, now, what) = (h.id, h.received_at, h.kind);
        let stored = async {
            let mut tx = self.db.begin_write().await?;
            let row = callbacks::NewCallback {
                id,
                callback_id: h.callback_id,
                provider: h.provider.name().as_str(),
                payment_no: h.payment_no,
                provider_txn_id: h.payment_txn_id,
                callback_status: h.provider_status,
                headers_json: &headers_json(h.headers),
                payload: h.body,
                payload_hash: &hex::encode(Sha256::digest(h.body)),
                verify_result: "VERIFIED",
                trace_id: h.trace_id,
                received_at: now,
                facts: h.facts,
            };
            if !insert(&mut tx, &row).await? {
                let delivery = Delivery {
                    payload: h.body,
                    payload_hash: row.payload_hash,
                    facts: h.facts,
                    trace_id: h.trace_id,
                };
                let seen =
                    repeat_of(&mut tx, row.provider, row.callback_id, &delivery, now).await?;
                tx.commit().await?;
                return Ok::<_, store::Error>(Err(seen));
            }
            let mut sp = store::savepoint(&mut tx).await?;
            let applied = apply(&mut sp).await;
            match &applied {
                Ok(_) => sp.commit().await?,
                Err(_) => sp.rollback().await?,
            }
            let applied = mark_applied(&mut tx, id, applied, class, now).await?;
            tx.commit().await?;
            Ok(Ok(applied))
        }
        .await;
        match stored {
            Ok(Ok(Ok(applied))) => {
                self.metrics.callback("success");
                (Answer::Accepted, Taken::Applied(applied))
            }
            Ok(Ok(Err(error))) => {
                tracing::warn!(%error, "{what} notification stored; applying it failed, retried later");
                self.metrics.callback("failed");
                (Answer::Accepted, Taken::Other)
            }
            Ok(Err(Seen::Same(_))) => {
                self.metrics.callback("duplicate");
                (Answer::Accepted, Taken::Repeat)
            }
            Ok(Err(Seen::Other)) => {
                self.metrics.callback("conflict");
                (Answer::Accepted, Taken::Other)
            }
            Err(e) => {
                tracing::error!(error = %e, "{what} notification could not be stored");
                self.metrics.callback("failed");
                (Answer::RetryLater, Taken::Other)
            }
        }
    }
}
