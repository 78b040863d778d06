//! The one error type of every server function. It crosses the wire as JSON
//! and is shown to people through the catalogue, never as raw text.

use serde::{Deserialize, Serialize};
use server_fn::codec::JsonEncoding;
use server_fn::error::{FromServerFnError, ServerFnErrorErr};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum AppError {
    #[error("not signed in")]
    Unauthenticated,
    #[error("your role may not do this")]
    Forbidden,
    #[error("wrong username or password")]
    BadCredentials,
    #[error("too many failed sign-ins; try again in {minutes} minutes")]
    Throttled { minutes: u64 },
    #[error("too many sign-ins at once; try again in {seconds} seconds")]
    Busy { seconds: u64 },
    #[error("invalid username")]
    InvalidUsername,
    #[error("password too short (at least {min} characters)")]
    WeakPassword { min: usize },
    #[error("username already taken")]
    UsernameTaken,
    #[error("the last active admin cannot lose the admin role or be disabled")]
    LastAdmin,
    #[error("you cannot disable or demote yourself")]
    NotOnYourself,
    #[error("not found")]
    NotFound,
    #[error("{field} is required")]
    Required { field: String },
    #[error("the proposer of a fix cannot decide it")]
    OwnProposal,
    #[error("the proposal has expired")]
    ProposalExpired,
    #[error("the proposal was already decided")]
    ProposalDecided,
    #[error("you approved this proposal already: another approver is needed")]
    AlreadyApproved,
    #[error("the payment changed since the proposal: {reason}")]
    ProposalStale { reason: String },
    #[error("the ticket is closed")]
    TicketClosed,
    #[error("the ticket already has a proposal waiting for approval")]
    AlreadyProposed,
    #[error("this fix does not apply to this ticket: {detail}")]
    FixNotApplicable { detail: String },
    /// What was sent cannot be used as it is (too long, empty, not a day,
    /// not an amount, an unknown choice): the caller's to correct.
    #[error("the request is not valid: {detail}")]
    Invalid { detail: String },
    #[error("the file is larger than {max_kib} KiB")]
    FileTooLarge { max_kib: u64 },
    #[error("only a callback whose signature verified may be replayed")]
    NotReplayable,
    #[error("the engine refused: {detail}")]
    Refused { detail: String },
    #[error("undo is offered for {minutes} minutes after a bulk close ends; that time has passed")]
    UndoExpired { minutes: u64 },
    #[error("the provider could not be asked: {detail}")]
    ProviderUnavailable { detail: String },
    /// The caller's role was granted by an admin in the console and no
    /// second admin has confirmed it: it decides nothing yet.
    #[error("your role waits for a second admin's confirmation")]
    GrantPending,
    /// The decider vouched for the proposer: `link` is `created` (their
    /// account), `granted` or `confirmed` (their current role).
    #[error("you {link} the account or role of {proposer}, who proposed this")]
    NotIndependent { proposer: String, link: String },
    #[error("a grant is confirmed by an admin who is neither its granter nor its grantee")]
    OwnGrant,
    /// Not done yet: the approval policy holds the action until others
    /// approve it on the Approvals page. A 409, so that every caller —
    /// the console's server functions too — reads it as not done.
    #[error("held for approval: action {action_id} needs {required} approval(s) before it runs")]
    Held { action_id: String, required: i64 },
    #[error("no grant of this role is waiting for confirmation")]
    NoGrantPending,
    /// A second factor's code that is wrong, or was already used.
    #[error("wrong or already used code")]
    WrongCode,
    /// An admin's own second factor is reset by another admin or the host.
    #[error("you cannot reset your own second factor")]
    OwnSecondFactor,
    /// The console takes no passwords: sign-in is through the identity
    /// provider only.
    #[error("password sign-in is turned off: sign in through the identity provider")]
    PasswordsOff,
    #[error("internal error (trace {trace_id})")]
    Internal { trace_id: String },
    #[error("request failed: {0}")]
    Transport(String),
}

impl FromServerFnError for AppError {
    type Encoder = JsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        AppError::Transport(value.to_string())
    }
}

impl AppError {
    /// The HTTP status a direct caller of a server function sees.
    pub fn status(&self) -> u16 {
        match self {
            AppError::Unauthenticated | AppError::BadCredentials | AppError::WrongCode => 401,
            AppError::Forbidden | AppError::NotOnYourself | AppError::OwnSecondFactor => 403,
            AppError::Throttled { .. } => 429,
            AppError::Busy { .. } => 503,
            AppError::InvalidUsername | AppError::WeakPassword { .. } | AppError::Transport(_) => {
                400
            }
            AppError::Required { .. }
            | AppError::FixNotApplicable { .. }
            | AppError::Invalid { .. } => 400,
            AppError::OwnProposal
            | AppError::GrantPending
            | AppError::NotIndependent { .. }
            | AppError::OwnGrant => 403,
            AppError::NoGrantPending => 409,
            AppError::PasswordsOff => 403,
            AppError::FileTooLarge { .. } => 413,
            AppError::ProviderUnavailable { .. } => 502,
            AppError::UsernameTaken
            | AppError::LastAdmin
            | AppError::ProposalExpired
            | AppError::ProposalDecided
            | AppError::AlreadyApproved
            | AppError::ProposalStale { .. }
            | AppError::TicketClosed
            | AppError::AlreadyProposed
            | AppError::NotReplayable
            | AppError::Refused { .. }
            | AppError::Held { .. }
            | AppError::UndoExpired { .. } => 409,
            AppError::NotFound => 404,
            AppError::Internal { .. } => 500,
        }
    }

    /// Seconds to send as `Retry-After`, for refusals that pass with time.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            AppError::Throttled { minutes } => Some(minutes * 60),
            AppError::Busy { seconds } => Some(*seconds),
            _ => None,
        }
    }
}
