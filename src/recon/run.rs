//! What every part of a run shares, and nothing that reads or writes: the
//! run itself (its id, provider, business day and that day's range, file),
//! a ticket it finds, the error it stops with, the day's range in a zone, a
//! new run's id.
//! The parts import these from here, so none of them reaches back into
//! the entry points of `recon/mod.rs`.

use crate::domain::{Class, Severity, quote};

/// A RUNNING run without progress for this long was left by a stopped
/// process (microseconds): an hour.
pub(super) const STALE_US: i64 = 3600 * 1_000_000;

#[derive(Debug, thiserror::Error)]
pub enum ReconError {
    #[error("{0}")]
    Invalid(String),
    /// The statement was read and refused; the run is FAILED with this.
    #[error("statement refused: {0}")]
    Refused(String),
    /// Another pull of the same provider's day holds its lease; nothing
    /// was started.
    #[error("{0}")]
    Busy(String),
    #[error("storage error: {0}")]
    Store(#[from] crate::store::Error),
}

/// A new run's id.
pub fn new_run_id() -> String {
    format!("RUN{}", uuid::Uuid::now_v7().simple()).to_ascii_uppercase()
}

/// The business day `date` in `tz` as [start, end) microseconds UTC.
pub fn day_range(date: &str, tz: &jiff::tz::TimeZone) -> Result<(i64, i64), String> {
    let d: jiff::civil::Date = date
        .parse()
        .map_err(|_| format!("business date {} is not YYYY-MM-DD", quote(date)))?;
    let start = d
        .to_zoned(tz.clone())
        .map_err(|e| e.to_string())?
        .timestamp()
        .as_microsecond();
    let next = d.tomorrow().map_err(|e| e.to_string())?;
    let end = next
        .to_zoned(tz.clone())
        .map_err(|e| e.to_string())?
        .timestamp()
        .as_microsecond();
    Ok((start, end))
}

/// What every ticket of a run carries: the run, its provider, business day
/// (and that day's range), and file.
#[derive(Clone, Copy)]
pub(super) struct Run<'a> {
    pub run_id: &'a str,
    pub provider: &'a str,
    pub date: &'a str,
    pub file: Option<&'a str>,
    pub range: (i64, i64),
}

/// A ticket found by a run.
pub(super) struct Found {
    pub class: Class,
    pub severity: Severity,
    pub key: String,
    pub payment_no: Option<String>,
    pub order_no: Option<String>,
    pub txn: Option<String>,
    pub line_no: Option<i64>,
    /// Amount, currency and status, as Reckon has them.
    pub local: Option<(i64, String, String)>,
    /// The same, as the provider's statement has them.
    pub provider_side: Option<(i64, String, String)>,
    pub reason: String,
    /// Payments to hold until a person decides.
    pub hold: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3600 * 1_000_000;

    #[test]
    fn a_business_day_is_cut_in_its_own_zone() {
        let shanghai = jiff::tz::TimeZone::get("Asia/Shanghai").unwrap();
        let (start, end) = day_range("2026-11-30", &shanghai).unwrap();
        let utc_start: jiff::Timestamp = "2026-11-29T16:00:00Z".parse().unwrap();
        assert_eq!(start, utc_start.as_microsecond());
        assert_eq!(end - start, 24 * HOUR);
        // The day the clocks go back is 25 hours long where they do.
        let berlin = jiff::tz::TimeZone::get("Europe/Berlin").unwrap();
        let (start, end) = day_range("2026-10-25", &berlin).unwrap();
        assert_eq!(end - start, 25 * HOUR);
    }

    #[test]
    fn a_day_that_is_not_one_is_refused_by_its_text() {
        let utc = jiff::tz::TimeZone::UTC;
        assert_eq!(
            day_range("2026-02-30", &utc).unwrap_err(),
            "business date \"2026-02-30\" is not YYYY-MM-DD"
        );
        assert!(day_range("30.11.2026", &utc).is_err());
    }

    #[test]
    fn run_ids_are_visible_ascii_and_distinct() {
        let (a, b) = (new_run_id(), new_run_id());
        assert_ne!(a, b);
        assert!(a.starts_with("RUN") && a.bytes().all(|c| c.is_ascii_graphic()));
        assert!(a.len() <= 64);
    }
}
