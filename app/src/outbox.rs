//! The outbox's wire types: the list of messages with each
//! sink's delivery, a message's page with every attempt, resends and the
//! resend / recover jobs. Under `ssr` they are also the `/api/v1/outbox`
//! schemas.

use serde::{Deserialize, Serialize};

/// The outbox list's filter; `after` is the keyset cursor
/// (`created_at.message_id`). `from`/`to` are RFC 3339 times or
/// YYYY-MM-DD business days (`to` a day: through its end).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::IntoParams, utoipa::ToSchema))]
#[cfg_attr(feature = "ssr", into_params(parameter_in = Query))]
pub struct OutboxFilter {
    /// e.g. payment.succeeded
    #[cfg_attr(feature = "ssr", param(max_length = 64))]
    pub event_type: Option<String>,
    #[cfg_attr(feature = "ssr", param(max_length = 64))]
    pub sink: Option<String>,
    /// DELIVERED | PENDING | DEAD
    #[cfg_attr(feature = "ssr", param(max_length = 16))]
    pub status: Option<String>,
    /// The payment the message announces (its payment_no).
    #[cfg_attr(feature = "ssr", param(max_length = 64))]
    pub payment: Option<String>,
    #[cfg_attr(feature = "ssr", param(max_length = 40))]
    pub from: Option<String>,
    #[cfg_attr(feature = "ssr", param(max_length = 40))]
    pub to: Option<String>,
    #[cfg_attr(feature = "ssr", param(max_length = 128))]
    pub after: Option<String>,
}

crate::query_filter!(OutboxFilter {
    event_type,
    sink,
    status,
    payment,
    from,
    to,
    after
});

/// The statuses a delivery can have, as the filter names them.
pub const DELIVERY_STATUSES: [&str; 3] = ["DELIVERED", "PENDING", "DEAD"];

/// One sink's delivery of a message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct OutboxDelivery {
    pub sink: String,
    /// DELIVERED | PENDING (retrying once it has attempts) | DEAD
    pub status: String,
    pub attempts: i64,
    /// Microseconds since the epoch, UTC (the next try, when PENDING).
    pub next_attempt_at: i64,
    pub last_error: Option<String>,
    pub published_at: Option<i64>,
    /// Who queued it again last, and when.
    pub resent_by: Option<String>,
    pub resent_at: Option<i64>,
}

/// A message with its deliveries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct OutboxMessage {
    /// The `webhook-id` consumers deduplicate on; never changes.
    pub message_id: String,
    pub event_type: String,
    /// The payment the message announces.
    pub payment_no: String,
    /// Microseconds since the epoch, UTC.
    pub created_at: i64,
    #[cfg_attr(feature = "ssr", sqlx(skip))]
    pub deliveries: Vec<OutboxDelivery>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct OutboxPage {
    pub items: Vec<OutboxMessage>,
    /// The cursor of the next page (`after`), when there is one.
    pub next: Option<String>,
    /// The sinks deliveries name, for the filter.
    pub sinks: Vec<String>,
    /// Whether any sink or alert channel is configured: without one
    /// nothing can be sent or resent.
    pub sinks_configured: bool,
}

/// One delivery attempt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct OutboxAttempt {
    pub sink: String,
    /// Microseconds since the epoch, UTC.
    pub at: i64,
    /// The sink's HTTP status; none when nothing answered.
    pub status_code: Option<i64>,
    pub latency_us: i64,
    /// The answer's first bytes (at most 256).
    pub answer_head: String,
    /// None: delivered.
    pub error: Option<String>,
    /// RELAY | RESEND (after a person queued it again)
    pub origin: String,
}

/// A message's page: its payload and every attempt kept (the newest 50 per
/// sink).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct OutboxDetail {
    pub message: OutboxMessage,
    /// The JSON body every sink gets.
    pub payload: String,
    pub attempts: Vec<OutboxAttempt>,
    /// Whether any sink or alert channel is configured.
    pub sinks_configured: bool,
}

/// What a resend did, per sink.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Resent {
    pub message_id: String,
    /// Sinks whose delivery was queued again (due now, attempts 0).
    pub queued: Vec<String>,
    /// Sinks whose delivery was pending already: nothing to do.
    pub already_pending: Vec<String>,
}

/// A bulk resend or a recover, with its progress.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct OutboxJob {
    pub job_id: String,
    /// RESEND | RECOVER
    pub kind: String,
    /// The filter it was started with (JSON).
    pub params: String,
    pub requested_by: String,
    /// RUNNING | CANCELLING | DONE | CANCELLED | FAILED
    pub status: String,
    /// Deliveries it set out to queue.
    pub total: i64,
    /// Queued again.
    pub done: i64,
    /// Pending already when reached: nothing to do.
    pub skipped: i64,
    /// Not reached (yet, or ever, once cancelled).
    pub pending: i64,
    pub error: Option<String>,
    /// Microseconds since the epoch, UTC.
    pub started_at: i64,
    pub finished_at: Option<i64>,
}
