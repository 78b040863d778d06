//! What a refused webhook tells: the likely cause of a verification failure
//! (the provider's own reading of its headers, then whether Reckon has seen
//! this event or these bytes verified before), and the count of failures per
//! provider that raises one `webhooks_refused_spike` alert per spell.

use super::Engine;
use crate::domain::{AlertKind, AlertSeverity};
use crate::providers::{Diagnosis, Notification, Provider, VerifyError};
use crate::store;
use crate::store::{alerts, callbacks, refused};
use http::HeaderMap;
use sha2::{Digest, Sha256};

/// The alert kind of a provider's verification failures past the threshold.
pub const WEBHOOKS_REFUSED_SPIKE: &str = AlertKind::WebhooksRefusedSpike.as_str();

impl Engine {
    /// The diagnosis of a webhook that failed `provider.verify` with `e`.
    pub(super) async fn diagnose(
        &self,
        provider: &dyn Provider,
        headers: &HeaderMap,
        body: &[u8],
        e: &VerifyError,
        now: i64,
    ) -> Option<Diagnosis> {
        if let Some(d) = provider.diagnose(headers, body, now / 1_000_000) {
            return Some(d);
        }
        if !matches!(e, VerifyError::BadSignature) {
            return None;
        }
        match self.seen_verified(provider, headers, body).await {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %e, "refused webhook not compared with stored callbacks");
                None
            }
        }
    }

    /// A body whose signature fails, against the verified deliveries of the
    /// event it names: the same bytes (the body is intact, the signature
    /// header is not the one made for it) or other bytes (the body changed
    /// after it was signed).
    async fn seen_verified(
        &self,
        provider: &dyn Provider,
        headers: &HeaderMap,
        body: &[u8],
    ) -> store::Result<Option<Diagnosis>> {
        let callback_id = match provider.parse(headers, body) {
            Ok(Notification::Payment(n)) => n.callback_id,
            Ok(Notification::Refund(n)) => n.callback_id,
            Ok(Notification::Dispute(n)) => n.callback_id,
            Ok(Notification::Ignored { callback_id, .. }) => callback_id,
            Err(_) => return Ok(None),
        };
        let pool = &self.db.pool;
        let name = provider.name().as_str();
        let Some(row) = callbacks::by_callback_id(pool, name, callback_id.as_str()).await? else {
            return Ok(None);
        };
        let hash = hex::encode(Sha256::digest(body));
        let mut verified = vec![row.payload_hash.clone()];
        verified.extend(
            callbacks::redeliveries(pool, &row.id)
                .await?
                .into_iter()
                .map(|r| r.payload_hash),
        );
        let event = callback_id.as_str();
        Ok(Some(if verified.contains(&hash) {
            Diagnosis {
                kind: "body_seen_verified",
                detail: format!(
                    "the same body (sha256 {}…) arrived verified before as {event}: the body is \
                     intact, its signature header is not the one made for it — a replay with a \
                     changed signature, or a header rewritten on the way",
                    &hash[..12]
                ),
            }
        } else {
            Diagnosis {
                kind: "body_changed",
                detail: format!(
                    "body changed in transit: {event} arrived verified before with other bytes \
                     (sha256 {}…, now {}…) — a proxy rewriting the body, or tampering",
                    &row.payload_hash[..12.min(row.payload_hash.len())],
                    &hash[..12]
                ),
            }
        }))
    }

    /// Counts a verification failure of `provider`; past the threshold,
    /// raises the spike alert once for the spell. Never fails the answer.
    ///
    /// A flood of bad signatures must not become a flood of writes: failures
    /// are added up here and written at most once a second per provider —
    /// at once only when they may just have crossed the threshold and this
    /// instance has not alerted the spell yet.
    pub(super) async fn count_failure(&self, provider: &str, now: i64) {
        let spike = self.settings().refused_spike;
        let add = {
            let mut tallies = self
                .refused_tally
                .0
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let t = tallies.entry(provider.to_owned()).or_default();
            t.unflushed += 1;
            let may_cross = t.last_count + t.unflushed > spike.failures && now >= t.alerted_until;
            if !may_cross && now - t.flushed_at < FLUSH_US {
                return;
            }
            t.flushed_at = now;
            std::mem::take(&mut t.unflushed)
        };
        match self.flush_failures(provider, add, now).await {
            Ok((count, alerted)) => {
                let mut tallies = self
                    .refused_tally
                    .0
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                let t = tallies.entry(provider.to_owned()).or_default();
                t.last_count = count;
                if alerted {
                    t.alerted_until = now + spike.window_us;
                }
            }
            Err(e) => tracing::warn!(error = %e, "refused webhooks not counted"),
        }
    }

    /// Adds `add` failures at `now`: the window's count, and whether it is
    /// over the threshold (the spell's alert raised, or raised before).
    async fn flush_failures(
        &self,
        provider: &str,
        add: i64,
        now: i64,
    ) -> store::Result<(i64, bool)> {
        let spike = self.settings().refused_spike;
        let mut conn = self.db.pool.acquire().await?;
        let count = refused::tally(&mut conn, provider, add, now, spike.window_us).await?;
        if rand::random::<u8>() == 0 {
            refused::prune_tally(&mut *conn, now - 86_400_000_000).await?;
        }
        if count <= spike.failures {
            return Ok((count, false));
        }
        let start = refused::spell(&mut *conn, provider, now, spike.window_us).await?;
        let minutes = spike.window_us / 60_000_000;
        let message = format!(
            "{count} webhooks of {provider} failed verification in {minutes} minutes (more than \
             {}): most likely a signing secret rotated on one side only (or a clock off, or a new \
             platform key). See /refused?provider={provider} for each one's diagnosis",
            spike.failures
        );
        alerts::raise_alert(
            &mut *conn,
            &alerts::NewAlert {
                dedupe_key: &format!("{WEBHOOKS_REFUSED_SPIKE}:{provider}:{start}"),
                kind: AlertKind::WebhooksRefusedSpike,
                severity: AlertSeverity::High,
                payment_no: None,
                message: &message,
                trace_id: None,
                now,
            },
        )
        .await?;
        Ok((count, true))
    }
}

/// How often a provider's failures counted in memory are written.
const FLUSH_US: i64 = 1_000_000;

/// Per provider: failures not written yet, when they last were, the
/// window's count then, and until when this instance knows the spell alerted.
#[derive(Default)]
pub(super) struct Tallies(std::sync::Mutex<std::collections::HashMap<String, Tally>>);

#[derive(Default)]
struct Tally {
    unflushed: i64,
    flushed_at: i64,
    last_count: i64,
    alerted_until: i64,
}
