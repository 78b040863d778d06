//! Reports a provider said are ready (Adyen's REPORT_AVAILABLE, recorded by
//! the webhook intake in `report_pushes`): each fetched through the
//! provider's [`Reports`](crate::providers::Reports) capability — only from
//! the account's report host, written to a temporary file under its
//! `max_bill_bytes` — and imported as an uploaded file is
//! ([`import_statement`]), for the business day before the one the report
//! was made on in the provider's statement zone (a settlement report is
//! made after its batch closes, a daily report the morning after its day);
//! the payouts it states are recorded for the bank side.
//! A fetch or import that fails is tried again with backoff; a push of a
//! provider no longer configured ends with why.

use super::import::Import;
use super::read::Input;
use super::run::ReconError;
use super::schedule::statement_zone;
use super::{RunRow, import_statement};
use crate::engine::Engine;
use crate::store::report_pushes::{self, PushRow};

/// Pushes fetched in one pass.
const PER_PASS: i64 = 20;
/// A fetch's lease: longer than a download and its import take.
const LEASE_US: i64 = 3600 * 1_000_000;
/// The first retry after this long, doubled each try up to [`RETRY_MAX_US`].
const RETRY_US: i64 = 300 * 1_000_000;
const RETRY_MAX_US: i64 = 6 * 3600 * 1_000_000;

/// One pass at `now`: the due pushes fetched and imported; how many were
/// tried.
pub async fn fetch_pushed_reports(engine: &Engine, now: i64) -> crate::store::Result<usize> {
    let pool = &engine.db.pool;
    let mut tried = 0;
    for push in report_pushes::due(pool, now, PER_PASS).await? {
        if !report_pushes::take(pool, &push.provider, &push.file_name, now, now + LEASE_US).await? {
            continue;
        }
        tried += 1;
        let (run_id, error, next_at) = match fetch_one(engine, &push).await {
            Ok(run) => (Some(run.run_id), None, None),
            Err(Ending::Again(e)) => {
                let wait = RETRY_US
                    .saturating_mul(1 << push.tries.clamp(0, 10))
                    .min(RETRY_MAX_US);
                tracing::warn!(provider = %push.provider, file = %push.file_name, error = %e, "pushed report not imported; tried again later");
                (None, Some(e), Some(engine.now() + wait))
            }
            Err(Ending::Never(e)) => {
                tracing::error!(provider = %push.provider, file = %push.file_name, error = %e, "pushed report not imported");
                (None, Some(e), None)
            }
        };
        report_pushes::tried(
            pool,
            &push.provider,
            &push.file_name,
            run_id.as_deref(),
            error.as_deref(),
            next_at,
        )
        .await?;
    }
    Ok(tried)
}

/// Why a push was not imported: worth another try, or never.
enum Ending {
    Again(String),
    Never(String),
}

/// The business day a report made at `made_at` is of: the day before, in
/// `zone`.
pub fn report_day(made_at: i64, zone: &jiff::tz::TimeZone) -> Option<String> {
    let at = jiff::Timestamp::from_microsecond(made_at).ok()?;
    Some(
        at.to_zoned(zone.clone())
            .date()
            .yesterday()
            .ok()?
            .to_string(),
    )
}

async fn fetch_one(engine: &Engine, push: &PushRow) -> Result<RunRow, Ending> {
    let Some(provider) = engine.providers.get(&push.provider).cloned() else {
        return Err(Ending::Never(format!(
            "provider {} is not configured",
            push.provider
        )));
    };
    let Some(reports) = provider.reports() else {
        return Err(Ending::Never(format!(
            "provider {} fetches no pushed reports",
            push.provider
        )));
    };
    let zone = statement_zone(engine, &push.provider);
    let date = report_day(push.made_at.unwrap_or(push.received_at), &zone)
        .ok_or_else(|| Ending::Never("the report's time is not a day".into()))?;
    let announced = crate::providers::ReportPush {
        file_name: push.file_name.clone(),
        url: push.url.clone(),
        made_at: push.made_at,
    };
    let file = reports.fetch(&announced).await.map_err(|e| match e {
        crate::providers::CallError::Refused(why) => Ending::Never(why),
        e => Ending::Again(e.to_string()),
    })?;
    let started_by = format!("{} report push", push.provider);
    let imported = import_statement(
        engine,
        Import {
            provider: &push.provider,
            business_date: &date,
            source: "import",
            file_name: Some(&file.name),
            input: Input::File(file.body.path().to_owned()),
            started_by: &started_by,
            accept_bad_lines: 0,
            run_id: None,
            hash: None,
        },
    )
    .await;
    let run = imported.map_err(|e| match e {
        // A read refused, or a day closed, stays so until a person acts.
        ReconError::Refused(why) | ReconError::Invalid(why) => Ending::Never(why),
        e => Ending::Again(e.to_string()),
    })?;
    // The bank side's hook, as a pull's pages have it.
    let payouts = reports.payouts(&file).map_err(Ending::Never)?;
    crate::bank::payouts_seen(engine, &push.provider, Some(&run.run_id), &payouts)
        .await
        .map_err(|e| Ending::Again(e.to_string()))?;
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::report_day;

    #[test]
    fn a_report_is_of_the_day_before_it_was_made_in_the_zone() {
        // 2018-04-18T10:03:08+02:00 (Adyen's REPORT_AVAILABLE example).
        let made = 1_524_038_588_000_000;
        let utc = jiff::tz::TimeZone::UTC;
        assert_eq!(report_day(made, &utc).as_deref(), Some("2018-04-17"));
        // 01:30 in Amsterdam is the evening before in New York.
        let early = 1_524_007_800_000_000; // 2018-04-17T23:30:00Z
        let ny = jiff::tz::TimeZone::get("America/New_York").unwrap();
        assert_eq!(report_day(early, &ny).as_deref(), Some("2018-04-16"));
        assert_eq!(report_day(early, &utc).as_deref(), Some("2018-04-16"));
    }
}
