//! The second factor (TOTP, RFC 6238, with recovery codes) as the console
//! sees it: a sign-in half done, a user's state, an enrolment begun.

use serde::{Deserialize, Serialize};

/// A sign-in whose password was right and whose second step is not done:
/// kept in the server's session record (never in the browser), it reaches
/// nothing but the second step's server functions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    pub user_id: String,
    /// No second factor yet, and the role needs one: enrol first.
    pub enrol: bool,
    /// When the password was right (microseconds, the server's clock).
    pub since: i64,
}

/// What the second step's page shows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecondStep {
    pub username: String,
    pub enrol: bool,
}

/// A user's own second factor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MfaStatus {
    pub enrolled: bool,
    /// Their role signs in only with one.
    pub required: bool,
    pub recovery_left: i64,
}

/// A new secret to add to an authenticator app, until confirmed with a code.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Enrolment {
    /// Base32, as typed into an app by hand.
    pub secret: String,
    /// The `otpauth://totp/…` address a QR code carries.
    pub uri: String,
    /// The address as a QR code: an SVG image as a `data:` address.
    pub qr: String,
}

/// A user's own second-factor page: their state, and a new secret to
/// enrol with when they have none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MfaPage {
    pub status: MfaStatus,
    pub enrolment: Option<Enrolment>,
}
