//! Small display helpers shared by pages (no time-zone database in the
//! browser bundle: times are shown in UTC until the console learns zones).

/// `YYYY-MM-DD HH:MM` in UTC for microseconds since the epoch.
pub fn utc_minutes(micros: i64) -> String {
    let secs = micros.div_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}",
        rem / 3600,
        (rem % 3600) / 60
    )
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(utc_minutes(0), "1970-01-01 00:00");
        // 2026-11-30 00:40:50 UTC
        assert_eq!(utc_minutes(1_795_999_250_000_000), "2026-11-30 00:40");
        // 2000-02-29 23:59 UTC, a leap day
        assert_eq!(utc_minutes(951_868_740_000_000), "2000-02-29 23:59");
        assert_eq!(utc_minutes(-60_000_000), "1969-12-31 23:59");
    }
}
