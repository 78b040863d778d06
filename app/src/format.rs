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

/// `MM-DD HH:MM` in UTC: a list's short time (the whole in its title).
pub fn utc_short(micros: i64) -> String {
    let whole = utc_minutes(micros);
    match whole.split_once('-') {
        Some((_, rest)) => rest.to_owned(),
        None => whole,
    }
}

/// `head…tail` of an id longer than `head + tail + 1` characters (the
/// whole id goes in the element's title), else the id.
pub fn short_id(id: &str, head: usize, tail: usize) -> String {
    let chars: Vec<char> = id.chars().collect();
    if chars.len() <= head + tail + 1 {
        return id.to_owned();
    }
    let (h, t) = (&chars[..head], &chars[chars.len() - tail..]);
    format!(
        "{}…{}",
        h.iter().collect::<String>(),
        t.iter().collect::<String>()
    )
}

/// An amount as the server writes it ("1234.50 CNY") split into the
/// figure and its currency, so a column aligns the figures on the right
/// with the currency beside each; text of another shape is all figure.
pub fn amount_parts(text: &str) -> (&str, &str) {
    match text.rsplit_once(' ') {
        Some((figure, currency))
            if currency.len() == 3 && currency.chars().all(|c| c.is_ascii_uppercase()) =>
        {
            (figure, currency)
        }
        _ => (text, ""),
    }
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
    fn long_ids_keep_their_ends() {
        assert_eq!(short_id("PAY123", 6, 4), "PAY123");
        assert_eq!(
            short_id("0193a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b", 8, 4),
            "0193a1b2…4a5b"
        );
        assert_eq!(short_id("支付单号一二三四五六七", 2, 2), "支付…六七");
        assert_eq!(amount_parts("66.60 CNY"), ("66.60", "CNY"));
        assert_eq!(
            amount_parts("12 (minor units) XYZ1"),
            ("12 (minor units) XYZ1", "")
        );
    }

    #[test]
    fn formats_known_instants() {
        assert_eq!(utc_minutes(0), "1970-01-01 00:00");
        // 2026-11-30 00:40:50 UTC
        assert_eq!(utc_minutes(1_795_999_250_000_000), "2026-11-30 00:40");
        // 2000-02-29 23:59 UTC, a leap day
        assert_eq!(utc_minutes(951_868_740_000_000), "2000-02-29 23:59");
        assert_eq!(utc_minutes(-60_000_000), "1969-12-31 23:59");
        assert_eq!(utc_short(1_795_999_250_000_000), "11-30 00:40");
    }
}
