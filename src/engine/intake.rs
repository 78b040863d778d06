//! Callback intake, in DESIGN.md's order: verify, store the raw callback
//! (insert-if-absent), then `apply`. Once stored, Reckon owns it: only a
//! failure to store is answered with "try again".

use super::{Applied, Engine, Outcome, Source};
use crate::domain::ProviderName;
use crate::providers::{Answer, Notification, Provider};
use crate::store::{callbacks, incidents};
use axum::http::HeaderMap;
use axum::response::Response;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Instant;

/// Headers kept with the raw callback (for re-parsing and the console);
/// signatures are kept too, they are not secrets.
fn headers_json(headers: &HeaderMap) -> String {
    let map: serde_json::Map<String, serde_json::Value> = headers
        .iter()
        .filter(|(k, _)| k.as_str() != "cookie" && k.as_str() != "authorization")
        .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.into())))
        .collect();
    serde_json::Value::Object(map).to_string()
}

impl Engine {
    /// Handles one verified-or-not webhook for `provider`; the answer is in
    /// the provider's protocol. `content_type` and size were checked before
    /// the body was read.
    #[tracing::instrument(skip_all, fields(provider = %provider.name(), trace_id = tracing::field::Empty))]
    pub async fn receive(
        &self,
        provider: &Arc<dyn Provider>,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Response {
        let started = Instant::now();
        let trace_id = uuid::Uuid::new_v4().simple().to_string();
        tracing::Span::current().record("trace_id", trace_id.as_str());
        self.metrics.callback("received");
        let now = self.now();

        if let Err(e) = provider.verify(headers, body, now / 1_000_000) {
            tracing::warn!(reason = %e, "callback refused: verification failed");
            self.metrics.callback("failed");
            return provider.answer(&Answer::Unverified(e));
        }
        let notice = match provider.parse(headers, body) {
            Ok(Notification::Payment(n)) => n,
            Ok(Notification::Ignored { event_type, .. }) => {
                tracing::info!(%event_type, "callback acknowledged: not a payment event");
                return provider.answer(&Answer::Accepted);
            }
            Err(e) => {
                tracing::warn!(reason = %e, "callback refused: unreadable");
                self.metrics.callback("failed");
                return provider.answer(&Answer::Malformed(e));
            }
        };

        let id = uuid::Uuid::now_v7().to_string();
        let hash = hex::encode(Sha256::digest(body));
        let row = callbacks::NewCallback {
            id: &id,
            callback_id: notice.callback_id.as_str(),
            provider: provider.name().as_str(),
            payment_no: Some(notice.payment_no.as_str()),
            provider_txn_id: notice.provider_txn_id.as_ref().map(|t| t.as_str()),
            callback_status: &notice.provider_status,
            headers_json: &headers_json(headers),
            payload: body,
            payload_hash: &hash,
            verify_result: "VERIFIED",
            trace_id: &trace_id,
            received_at: now,
        };
        let stored = match callbacks::insert_if_absent(&self.db.pool, &row).await {
            Ok(stored) => stored,
            Err(e) => {
                tracing::error!(error = %e, "callback could not be stored");
                self.metrics.callback("failed");
                return provider.answer(&Answer::RetryLater);
            }
        };
        if !stored {
            return self
                .repeated(provider, notice.callback_id.as_str(), &hash, &trace_id)
                .await;
        }

        let answer = match callbacks::claim(&self.db.pool, &id, now + 30_000_000).await {
            Ok(true) => match self
                .process(
                    &id,
                    &notice_outcome(&notice, provider.name(), &id, &trace_id),
                )
                .await
            {
                Some(Applied::UnknownPayment) => Answer::UnknownPayment,
                _ => Answer::Accepted,
            },
            // Stored: the retry worker will finish it.
            _ => Answer::Accepted,
        };
        self.metrics
            .callback_duration(started.elapsed().as_secs_f64());
        provider.answer(&answer)
    }

    /// Same callback id again: identical → a duplicate; different → a
    /// conflict, recorded and alerted, the first payload kept.
    async fn repeated(
        &self,
        provider: &Arc<dyn Provider>,
        callback_id: &str,
        hash: &str,
        trace_id: &str,
    ) -> Response {
        let existing =
            callbacks::by_callback_id(&self.db.pool, provider.name().as_str(), callback_id).await;
        match existing {
            Ok(Some(first)) if first.payload_hash == hash => {
                self.metrics.callback("duplicate");
                tracing::info!(callback_id, "duplicate callback: no effect");
            }
            Ok(Some(first)) => {
                self.metrics.callback("conflict");
                let message = format!(
                    "callback {callback_id} from {} arrived again with a different payload; the first one is kept",
                    provider.name()
                );
                let alert = incidents::NewAlert {
                    dedupe_key: &format!(
                        "callback_conflict:{}:{callback_id}:{hash}",
                        provider.name()
                    ),
                    kind: "callback_conflict",
                    severity: "critical",
                    payment_no: first.payment_no.as_deref(),
                    message: &message,
                    trace_id: Some(trace_id),
                    now: self.now(),
                };
                if let Err(e) = incidents::raise_alert(&self.db.pool, &alert).await {
                    tracing::error!(error = %e, "could not record a callback conflict");
                    return provider.answer(&Answer::RetryLater);
                }
            }
            Ok(None) | Err(_) => return provider.answer(&Answer::RetryLater),
        }
        provider.answer(&Answer::Accepted)
    }

    /// Applies a stored callback and records how it went; failures are
    /// scheduled for retry (2^n minutes, at most 64) and go DEAD after
    /// `callback_max_tries`.
    pub(super) async fn process(&self, id: &str, outcome: &Outcome) -> Option<Applied> {
        let result = self.apply(outcome).await;
        let now = self.now();
        let outcome_text = match &result {
            Ok(Applied::UnknownPayment) => Err("unknown payment".to_string()),
            Ok(applied) => Ok(applied.class()),
            Err(e) => Err(format!("apply failed: {e}")),
        };
        let recorded = match outcome_text {
            Ok(class) => {
                self.metrics.callback("success");
                callbacks::succeeded(&self.db.pool, id, class, now).await
            }
            Err(error) => self.callback_failed(id, &error, outcome, now).await,
        };
        if let Err(e) = recorded {
            tracing::error!(error = %e, "could not record the callback's processing");
        }
        result.ok()
    }

    async fn callback_failed(
        &self,
        id: &str,
        error: &str,
        outcome: &Outcome,
        now: i64,
    ) -> sqlx::Result<()> {
        self.metrics.callback("failed");
        let tries = callbacks::retry_count(&self.db.pool, id).await? + 1;
        let next = (tries < self.settings.callback_max_tries).then(|| now + retry_delay(tries));
        callbacks::failed(&self.db.pool, id, error, next, now).await?;
        if next.is_none() {
            self.metrics.callback("dead");
            incidents::raise_alert(
                &self.db.pool,
                &incidents::NewAlert {
                    dedupe_key: &format!("callback_dead:{id}"),
                    kind: "callback_dead",
                    severity: "high",
                    payment_no: Some(outcome.payment_no.as_str()),
                    message: &format!("callback {id} is DEAD after {tries} tries: {error}"),
                    trace_id: Some(&outcome.trace_id),
                    now,
                },
            )
            .await?;
        }
        Ok(())
    }
}

/// 2^n minutes after the n-th failure, at most 64 minutes.
pub fn retry_delay(failures: i64) -> i64 {
    let minutes = 1i64 << failures.clamp(0, 6);
    minutes * 60_000_000
}

pub(super) fn notice_outcome(
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
    }
}

#[cfg(test)]
mod tests {
    use super::retry_delay;

    #[test]
    fn retries_back_off_to_an_hour() {
        let minutes: Vec<i64> = (1..=10).map(|n| retry_delay(n) / 60_000_000).collect();
        assert_eq!(minutes, [2, 4, 8, 16, 32, 64, 64, 64, 64, 64]);
    }
}
