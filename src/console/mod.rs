//! The console's backend: `Desk`, which implements each area of
//! `app::ssr::Console` in that area's file — the dashboard ([`dashboard`],
//! with [`ageing`], [`closes`] and [`bank`]), tickets and triage
//! ([`tickets`], [`bulk`], the CSV [`export`]), callbacks and their
//! replays ([`callbacks`]), payments ([`payments`]), reconciliation runs
//! ([`runs`]), alerts ([`alerts`]), the audit log ([`audit_log`]), the
//! outbox and its sinks ([`outbox`], [`sinks`]) and refused webhooks
//! ([`refused`]), secrets masked ([`mask`]). What its pages do is handed
//! to its owners (`crate::triage`, `crate::outbox`, `crate::recon`). It
//! holds no SQL: that is `store`'s.

mod ageing;
mod alerts;
mod audit_log;
mod bank;
mod bulk;
mod callbacks;
mod closes;
mod dashboard;
mod export;
pub mod mask;
pub mod outbox;
mod payments;
mod policy;
mod refused;
pub mod run_export;
mod runs;
mod settings;
pub mod sinks;
mod tickets;
mod tokens;

pub use bulk::bulk_job;
pub(crate) use export::csv_cell;
pub use export::export_csv;
pub use tickets::evidence_file;

use crate::accounts::retrying;
use crate::domain::{Currency, Money};
use crate::engine::Engine;
use crate::store::audit;
use app::error::AppError;

/// The console's one backend object, placed in Leptos context.
#[derive(Clone)]
pub struct Desk {
    pub engine: Engine,
}

impl Desk {
    pub fn new(engine: Engine) -> Desk {
        Desk { engine }
    }

    fn now(&self) -> i64 {
        self.engine.now()
    }

    fn tz(&self) -> &jiff::tz::TimeZone {
        // The business zone is the host's alone: no version changes it.
        &self.engine.live.host().timezone
    }

    /// The business day `day` (YYYY-MM-DD) as [start, end) microseconds.
    fn range(&self, day: &str) -> Result<(i64, i64), AppError> {
        crate::recon::day_range(day, self.tz()).map_err(invalid)
    }

    /// `YYYY-MM-DD HH:MM Zone`: an instant in the business time zone,
    /// the zone named.
    fn local_minutes(&self, micros: i64) -> String {
        let at = jiff::Timestamp::from_microsecond(micros)
            .unwrap_or_default()
            .to_zoned(self.tz().clone());
        let zone = match self.tz().iana_name() {
            Some(name) => name.to_owned(),
            None => at.strftime("UTC%:z").to_string(),
        };
        format!("{} {zone}", at.strftime("%Y-%m-%d %H:%M"))
    }

    /// The configured providers, by name.
    fn providers(&self) -> Vec<String> {
        let mut names: Vec<String> = self.engine.providers.names().map(str::to_owned).collect();
        names.sort();
        names
    }
}

/// Input the caller must correct.
pub(crate) fn invalid(detail: impl Into<String>) -> AppError {
    AppError::Invalid {
        detail: detail.into(),
    }
}

/// "1,234.56 CNY" for minor units of a known currency, else the raw figures.
pub(crate) fn money_text(minor: Option<i64>, currency: Option<&str>) -> Option<String> {
    let minor = minor?;
    let currency = currency.unwrap_or("");
    Some(match Currency::parse(currency) {
        Ok(c) => Money::new(minor, c).shown(),
        Err(_) => format!("{minor} (minor units) {currency}"),
    })
}

/// "1234.56 CNY": [`money_text`] without the grouping, for a file a
/// program reads (the CSV export).
pub(crate) fn money_plain(minor: Option<i64>, currency: Option<&str>) -> Option<String> {
    let minor = minor?;
    let currency = currency.unwrap_or("");
    Some(match Currency::parse(currency) {
        Ok(c) => Money::new(minor, c).to_string(),
        Err(_) => format!("{minor} (minor units) {currency}"),
    })
}

/// The first `PAGE_SIZE` of `items` read one past the page, and the cursor
/// of the next page (from the last item kept) if there is one.
fn page<T, C>(mut items: Vec<T>, cursor: impl Fn(&T) -> C) -> (Vec<T>, Option<C>) {
    let size = app::tickets::PAGE_SIZE as usize;
    if items.len() > size {
        items.truncate(size);
        let next = items.last().map(cursor);
        (items, next)
    } else {
        (items, None)
    }
}

/// Years of offsets a page gets around now: the times the console shows.
const ZONE_YEARS_BACK: i64 = 10;
const ZONE_YEARS_AHEAD: i64 = 5;

/// `tz` as the browser gets it: its name and its offsets from some years
/// before `now` to some after (a fixed zone: one offset).
pub(crate) fn zone_of(tz: &jiff::tz::TimeZone, now: i64) -> app::format::Zone {
    const YEAR_US: i64 = 366 * 86_400 * 1_000_000;
    let at = |micros: i64| {
        jiff::Timestamp::from_microsecond(micros).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
    };
    let (from, to) = (
        at(now.saturating_sub(ZONE_YEARS_BACK * YEAR_US)),
        at(now.saturating_add(ZONE_YEARS_AHEAD * YEAR_US)),
    );
    let mut offsets = vec![(from.as_microsecond(), tz.to_offset(from).seconds())];
    offsets.extend(
        tz.following(from)
            .take_while(|t| t.timestamp() <= to)
            .map(|t| (t.timestamp().as_microsecond(), t.offset().seconds())),
    );
    let name = match tz.iana_name() {
        Some(name) => name.to_owned(),
        None => match tz.to_offset(from).seconds() {
            0 => String::new(),
            _ => format!("UTC{}", tz.to_offset(from)),
        },
    };
    app::format::Zone { name, offsets }
}

/// One audit entry in its own transaction.
async fn audit_one(
    engine: &Engine,
    actor: &str,
    action: &'static str,
    (object_type, object_id): (&'static str, &str),
    after: serde_json::Value,
) -> Result<(), AppError> {
    let entry = audit::Entry {
        actor: actor.to_owned(),
        action,
        object_type,
        object_id: object_id.to_owned(),
        before: None,
        after: Some(after),
    };
    retrying(|| async { Ok(audit::record(&engine.db, &entry, engine.now()).await?) }).await
}

#[cfg(test)]
mod tests {
    use super::zone_of;

    #[test]
    fn a_zone_reaches_the_browser_as_its_offsets() {
        // 2026-12-04 09:05 UTC
        let now = 1_796_375_130_000_000;
        let shanghai = zone_of(&jiff::tz::TimeZone::get("Asia/Shanghai").unwrap(), now);
        assert_eq!(shanghai.named(now), "2026-12-04 17:05 Asia/Shanghai");
        assert_eq!(shanghai.offsets.len(), 1, "no changes in those years");
        let london = zone_of(&jiff::tz::TimeZone::get("Europe/London").unwrap(), now);
        assert_eq!(london.named(now), "2026-12-04 09:05 Europe/London");
        // 2026-07-01 12:00 UTC: summer time.
        assert_eq!(london.minutes(1_782_907_200_000_000), "2026-07-01 13:00");
        let utc = zone_of(&jiff::tz::TimeZone::UTC, now);
        assert_eq!(utc.named(now), "2026-12-04 09:05 UTC");
        let fixed = zone_of(&jiff::tz::TimeZone::fixed(jiff::tz::offset(8)), now);
        assert_eq!(fixed.named(now), "2026-12-04 17:05 UTC+08");
    }
}
