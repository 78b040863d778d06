//! Statement times: the quick reading of UTC timestamps (a statement has a
//! million of them) and local wall-clock times at a fixed offset.

/// The last timestamp's date (`YYYY-MM-DD`) and its days since
/// 1970-01-01: a statement's rows are of a day or two, so each date is
/// read and checked once, not once a row ([`utc_micros`]).
#[derive(Default)]
pub struct LastDay(Option<([u8; 10], i64)>);

/// `YYYY-MM-DDTHH:MM:SS[.ffffff]Z` (RFC 3339 in UTC, at most
/// microseconds) → microseconds since the epoch, without jiff's general
/// parser: a statement has a million of them. Anything else — offsets,
/// finer fractions, leap seconds, other shapes, far years — is `None`, for
/// jiff to read or refuse.
pub fn utc_micros(t: &str, last: &mut LastDay) -> Option<i64> {
    let b = t.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[b.len() - 1] != b'Z'
    {
        return None;
    }
    let number = |digits: &[u8]| {
        digits.iter().try_fold(0i64, |n, d| {
            d.is_ascii_digit().then(|| n * 10 + i64::from(d - b'0'))
        })
    };
    let date: [u8; 10] = b[..10].try_into().ok()?;
    let days = match last.0 {
        Some((seen, days)) if seen == date => days,
        _ => {
            let days = days_since_epoch(number(&b[0..4])?, number(&b[5..7])?, number(&b[8..10])?)?;
            last.0 = Some((date, days));
            days
        }
    };
    let (hour, minute, second) = (
        number(&b[11..13])?,
        number(&b[14..16])?,
        number(&b[17..19])?,
    );
    let micros = match &b[19..b.len() - 1] {
        [] => 0,
        [b'.', digits @ ..] if (1..=6).contains(&digits.len()) => {
            number(digits)? * 10i64.pow(6 - digits.len() as u32)
        }
        _ => return None,
    };
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    Some((days * 86_400 + hour * 3_600 + minute * 60 + second) * 1_000_000 + micros)
}

/// Days since 1970-01-01 of a proleptic Gregorian date in years 1–9998;
/// `None` for a date that is not one.
fn days_since_epoch(year: i64, month: i64, day: i64) -> Option<i64> {
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days_in_month = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if !(1..=9998).contains(&year)
        || !(1..=12).contains(&month)
        || !(1..=days_in_month).contains(&day)
    {
        return None;
    }
    // Years counted from March, so the leap day ends one.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    Some(era * 146_097 + day_of_era - 719_468)
}

/// `yyyy-MM-dd HH:mm:ss` at a fixed offset (hours) → microseconds UTC.
pub fn local_time(text: &str, offset_hours: i8) -> Option<i64> {
    zoned_time(
        text,
        &jiff::tz::TimeZone::fixed(jiff::tz::offset(offset_hours)),
    )
}

/// `yyyy-MM-dd HH:mm:ss` on the wall clocks of `zone` → microseconds UTC
/// (at a change of clocks, jiff's "compatible" choice: a time that comes
/// twice is taken the first time, one that is skipped after the change).
pub fn zoned_time(text: &str, zone: &jiff::tz::TimeZone) -> Option<i64> {
    let dt: jiff::civil::DateTime = text.trim().replace(' ', "T").parse().ok()?;
    Some(dt.to_zoned(zone.clone()).ok()?.timestamp().as_microsecond())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quick reading of a UTC time agrees with jiff's wherever it
    /// reads one, and leaves to jiff what it does not.
    #[test]
    fn utc_times_read_quickly_as_jiff_reads_them() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        let mut texts: Vec<String> = [
            "2024-02-29T12:00:00Z",
            "2023-02-29T12:00:00Z",
            "2000-02-29T00:00:00Z",
            "1900-02-29T00:00:00Z",
            "1969-12-31T23:59:59.999999Z",
            "1970-01-01T00:00:00Z",
            "2026-11-30T23:59:59.5Z",
            "2026-11-30T24:00:00Z",
            "2026-11-30T23:60:00Z",
            "2026-11-30T23:59:60Z",
            "2026-13-01T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-00-10T00:00:00Z",
            "2026-11-00T00:00:00Z",
            "2026-11-30T10:00:00.1234567Z",
            "2026-11-30T10:00:00.Z",
            "2026-11-30T10:00:00+08:00",
            "2026-11-30 10:00:00Z",
            "2026-11-30t10:00:00z",
            "0001-01-01T00:00:00Z",
            "9999-12-30T00:00:00Z",
            "20x6-11-30T10:00:00Z",
            "2026-1a-30T10:00:00Z",
        ]
        .map(String::from)
        .to_vec();
        for _ in 0..20_000 {
            let fraction = match next(4) {
                0 => String::new(),
                _ => format!(".{:0w$}", next(1_000_000), w = 1 + next(6) as usize),
            };
            texts.push(format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{fraction}Z",
                1 + next(9998),
                1 + next(12),
                1 + next(31),
                next(24),
                next(60),
                next(60)
            ));
        }
        // Each read alone, and all in turn with the last date kept (the
        // reader's way): the same answers.
        let mut quick = 0;
        let mut last = LastDay::default();
        for t in &texts {
            let jiff = t
                .parse::<jiff::Timestamp>()
                .ok()
                .map(|ts| ts.as_microsecond());
            let alone = utc_micros(t, &mut LastDay::default());
            assert_eq!(utc_micros(t, &mut last), alone, "{t}");
            if let Some(micros) = alone {
                quick += 1;
                assert_eq!(Some(micros), jiff, "{t}");
            }
        }
        assert!(quick > 15_000, "{quick} read quickly");
        let mut last = LastDay::default();
        for t in [
            "2026-11-30T10:00:00+08:00",
            "2026-11-30T10:00:00.1234567Z",
            "2023-02-29T12:00:00Z",
        ] {
            assert_eq!(utc_micros(t, &mut last), None, "{t}");
        }
        // A date kept from one row does not vouch for another row's time.
        assert_eq!(
            utc_micros("2026-11-30T23:59:59.5Z", &mut last),
            Some(1_796_083_199_500_000)
        );
        for t in [
            "2026-11-30T24:00:00Z",
            "2026-11-30T10:60:00Z",
            "2026-11-30T1x:00:00Z",
        ] {
            assert_eq!(utc_micros(t, &mut last), None, "{t}");
        }
        assert_eq!(
            utc_micros("2026-12-01T00:00:00Z", &mut last),
            Some(1_796_083_200_000_000)
        );
    }
}
