//! Outbox sinks as the console shows them: each
//! sink's endpoint (its URL without credentials; secrets never leave the
//! server), what it wants, its schedule and state, and its deliveries by
//! state.

use serde::{Deserialize, Serialize};

/// One configured sink.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SinkRow {
    pub name: String,
    /// The URL with any user, password or query hidden.
    pub url: String,
    /// Exact event types or prefixes (`payment.*`); empty: every event.
    pub event_types: Vec<String>,
    /// Retry delays after each failed attempt, as written (`5s`, `2h`).
    pub schedule: Vec<String>,
    pub timeout_secs: u64,
    /// ACTIVE | PAUSED | FAILING (paused wins: it is not being tried).
    pub state: String,
    pub paused_at: Option<i64>,
    pub paused_by: Option<String>,
    pub pause_reason: Option<String>,
    /// Deliveries waiting for their first attempt.
    pub pending: i64,
    /// Deliveries that failed and wait for their next attempt.
    pub retrying: i64,
    pub dead: i64,
    /// Attempts failed in a row since the last delivery.
    pub consecutive_failures: i64,
    pub failing_since: Option<i64>,
    pub last_success_at: Option<i64>,
    pub last_failure_at: Option<i64>,
    pub last_error: Option<String>,
}

impl SinkRow {
    pub fn is_failing(&self) -> bool {
        self.state == "FAILING"
    }
}

/// A sink's "retry now": how many of its deliveries waiting for a later
/// retry were made due at once (0: nothing was waiting; nothing changed).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetriedNow {
    pub sink: String,
    pub made_due: i64,
}

impl RetriedNow {
    /// What was done, in words (the API's and the command line's).
    pub fn detail(&self) -> String {
        match self.made_due {
            0 => format!(
                "nothing was waiting for a retry at {}: nothing changed",
                self.sink
            ),
            1 => format!("1 delivery to {} is due now", self.sink),
            n => format!("{n} deliveries to {} are due now", self.sink),
        }
    }
}

/// A delay of microseconds as the schedule writes it: `5s`, `30m`, `10h`.
pub fn delay_text(us: i64) -> String {
    let secs = us / 1_000_000;
    if secs % 3600 == 0 {
        format!("{}h", secs / 3600)
    } else if secs % 60 == 0 {
        format!("{}m", secs / 60)
    } else {
        format!("{secs}s")
    }
}
