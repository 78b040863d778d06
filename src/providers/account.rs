//! What every provider's folder implements for its configuration: the
//! kind it is ([`Kind`], one `KIND` per folder) and an account's settings
//! ([`Account`]); `accounts.rs` lists the kinds and builds the adapters.

use super::Provider;
use super::fees::FeeExpectation;
use crate::domain::ProviderName;
use std::sync::Arc;

/// What a provider kind is apart from any account: written once in its
/// folder as a `KIND`.
pub struct Kind {
    /// The `kind` its accounts are written with.
    pub name: &'static str,
    /// The zone its statement days are cut in (an IANA name); `None`:
    /// Reckon's day zone.
    pub statement_zone: Option<&'static str>,
    /// The hour of the next day, in that zone, from which a day's
    /// statement is expected to be there to pull.
    pub ready_hour: i8,
    /// Words (lowercase) in a bank entry's counterparty, remittance or
    /// reference that say the credit is one of its payouts.
    pub payout_names: &'static [&'static str],
    /// Its bill's format, as an uploaded file is told by it (a format
    /// whose times need a zone given one: only its header is asked about).
    pub bill_format: Option<fn() -> crate::statement::Format>,
}

/// One configured account's settings, as its kind's section reads them:
/// implemented in the provider's folder.
pub trait Account {
    fn kind(&self) -> &'static Kind;
    /// The route: `/webhooks/{name}`.
    fn name(&self) -> &str;
    /// A webhook that fails verification but names a payment makes Reckon
    /// ask the provider about that payment (the provider is the authority,
    /// never the unverified body).
    fn query_on_unverified(&self) -> bool;
    /// The fee the account is expected to charge, if one is set.
    fn fees(&self) -> Option<&FeeExpectation> {
        None
    }
    /// Why the secrets configured cannot work, if they cannot (the keys
    /// are read when the adapter is built).
    fn check(&self) -> Result<(), &'static str> {
        Ok(())
    }
    /// The adapter, named `name`, or why these settings do not make one.
    /// `day_zone` cuts the business days it pulls statements for.
    fn build(
        &self,
        name: ProviderName,
        day_zone: &jiff::tz::TimeZone,
    ) -> Result<Arc<dyn Provider>, String>;
}
