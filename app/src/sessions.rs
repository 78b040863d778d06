//! Console sessions as their owner and an admin see them: where each was
//! signed in from, when it began and was last seen.

use serde::{Deserialize, Serialize};

/// One live session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct SessionRow {
    pub id: String,
    /// The address it signed in from.
    pub address: String,
    /// The browser's description of itself at sign-in.
    pub user_agent: String,
    /// Microseconds since the epoch, UTC.
    pub created_at: i64,
    /// Last seen, to about a minute.
    pub last_seen_at: i64,
    /// The session this list was asked from.
    #[cfg_attr(feature = "ssr", sqlx(skip))]
    pub current: bool,
}

/// A user's live sessions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionList {
    pub user_id: String,
    pub username: String,
    /// The viewer's own sessions (else an admin's view of another user's).
    pub own: bool,
    pub items: Vec<SessionRow>,
}
