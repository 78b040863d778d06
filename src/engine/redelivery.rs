//! A callback id delivered again: the same facts (a duplicate, counted and
//! its bytes kept once) or other facts (a conflict, alerted critical; the
//! first is kept). Intake's group commit and its one-by-one path both ask.

use crate::domain::{AlertKind, AlertSeverity};
use crate::store;
use crate::store::{alerts, callbacks};

/// A delivery of a callback id, as far as telling repeats apart needs.
pub(super) struct Delivery<'a> {
    pub payload: &'a [u8],
    pub payload_hash: &'a str,
    pub facts: &'a str,
    pub trace_id: &'a str,
}

/// What a callback id seen before turned out to be.
pub(super) enum Seen {
    /// The same facts: a duplicate of this stored callback.
    Same(Box<callbacks::CallbackRow>),
    /// Other facts: a conflict, alerted; the first is kept.
    Other,
}

/// A callback id seen before: a duplicate when its facts are the stored
/// callback's (providers redeliver with a new timestamp, signature or
/// encryption nonce: bytes are not facts), else a conflict (critical
/// alert; the first callback is kept). Either way the delivery is counted
/// and its bytes kept once. Callbacks stored before facts were recorded
/// are compared by their bytes.
pub(super) async fn repeat_of(
    conn: &mut store::Conn,
    provider: &str,
    callback_id: &str,
    d: &Delivery<'_>,
    now: i64,
) -> store::Result<Seen> {
    let Some(first) = callbacks::by_callback_id(&mut *conn, provider, callback_id).await? else {
        // The insert met a row that is not there now: never expected.
        return Err(store::not_found());
    };
    let same = match &first.facts {
        Some(facts) => facts == d.facts,
        None => first.payload_hash == d.payload_hash,
    };
    callbacks::redelivered(
        &mut *conn,
        &first.id,
        d.payload,
        d.payload_hash,
        same,
        d.trace_id,
        now,
    )
    .await?;
    if same {
        return Ok(Seen::Same(Box::new(first)));
    }
    let message = format!(
        "callback {callback_id} from {provider} arrived again with different facts ({}); the first one ({}) is kept",
        d.facts,
        first
            .facts
            .as_deref()
            .unwrap_or("stored before facts were recorded")
    );
    alerts::raise_alert(
        &mut *conn,
        &alerts::NewAlert {
            dedupe_key: &format!(
                "callback_conflict:{provider}:{callback_id}:{}",
                d.payload_hash
            ),
            kind: AlertKind::CallbackConflict,
            severity: AlertSeverity::Critical,
            payment_no: first.payment_no.as_deref(),
            message: &message,
            trace_id: Some(d.trace_id),
            now,
        },
    )
    .await?;
    Ok(Seen::Other)
}
