//! Before a day's statement is pulled, the provider's own list of the day's
//! notifications it has not delivered (Stripe's `GET /v1/events` with
//! `delivery_success=false`) taken in through the same intake as webhooks,
//! so the run sees what the provider knew and never said. New ones raise a
//! warning: an endpoint that loses notifications needs looking at.

use super::run::day_range;
use super::schedule::statement_zone;
use crate::domain::{AlertKind, AlertSeverity};
use crate::engine::{Engine, Fetched};
use crate::store::alerts::{self, NewAlert};

/// What one day's sweep found.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Swept {
    /// Listed by the provider as not delivered.
    pub listed: usize,
    /// Of those, new to Reckon: stored and applied now.
    pub taken_in: usize,
    /// Received before all the same (delivered to Reckon, not elsewhere).
    pub known: usize,
    /// Not stored (unreadable, or the database could not take it).
    pub failed: usize,
}

/// The alert kind of notifications a provider had not delivered.
const EVENTS_UNDELIVERED: &str = AlertKind::EventsUndelivered.as_str();

/// Sweeps `date` of `provider`, if its API lists undelivered notifications
/// (`None` otherwise). A provider that cannot be asked now leaves the gaps
/// to the status queries and the statement; the pull goes on.
pub(super) async fn sweep_day(engine: &Engine, provider: &str, date: &str) -> Option<Swept> {
    let p = engine.providers.get(provider)?.clone();
    let undelivered = p.undelivered()?;
    let (start, end) = day_range(date, &statement_zone(engine, provider)).ok()?;
    let bodies = match undelivered
        .undelivered(start / 1_000_000, end / 1_000_000)
        .await
    {
        Ok(bodies) => bodies,
        Err(e) => {
            tracing::warn!(provider, date, error = %e, "undelivered notifications not listed; gaps are left to queries and the statement");
            return None;
        }
    };
    let mut swept = Swept {
        listed: bodies.len(),
        ..Swept::default()
    };
    for body in &bodies {
        match engine
            .take_in_fetched(&p, body, "undelivered events list")
            .await
        {
            Fetched::New => swept.taken_in += 1,
            Fetched::Known | Fetched::Ignored => swept.known += 1,
            Fetched::Unreadable(e) => {
                tracing::warn!(provider, date, error = %e, "an undelivered notification could not be read");
                swept.failed += 1;
            }
            Fetched::NotTaken(status) => {
                tracing::warn!(provider, date, %status, "an undelivered notification was not stored; the next sweep asks again");
                swept.failed += 1;
            }
        }
    }
    tracing::info!(
        provider,
        date,
        listed = swept.listed,
        taken_in = swept.taken_in,
        known = swept.known,
        failed = swept.failed,
        "undelivered notifications swept"
    );
    if swept.taken_in > 0 {
        let message = format!(
            "{provider} had not delivered {} notification(s) of {date} to Reckon; taken in from its API before the statement pull. Check the webhook endpoint's address, secret and recent deliveries at {provider}.",
            swept.taken_in
        );
        let alert = NewAlert {
            dedupe_key: &format!("{EVENTS_UNDELIVERED}:{provider}:{date}"),
            kind: AlertKind::EventsUndelivered,
            severity: AlertSeverity::Warning,
            payment_no: None,
            message: &message,
            trace_id: None,
            now: engine.now(),
        };
        if let Err(e) = alerts::raise_alert(&engine.db.pool, &alert).await {
            tracing::warn!(provider, date, error = %e, "the undelivered notifications' alert was not raised");
        }
    }
    Some(swept)
}
