//! Small display helpers shared by pages: money in major units, times in
//! the business time zone. The browser bundle carries no currency or
//! time-zone database: the currencies' exponents are listed here (the
//! server's `domain::Currency` is checked against them by a test), and a
//! zone arrives from the server as its offsets ([`Zone`]).

use serde::{Deserialize, Serialize};

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

/// ISO 4217 codes Reckon knows, with their minor-unit exponents: the one
/// table, shared by the server's money and the console's formatting.
pub const CURRENCY_EXPONENTS: &[(&str, u8)] = &[
    ("AED", 2),
    ("ARS", 2),
    ("AUD", 2),
    ("BHD", 3),
    ("BRL", 2),
    ("CAD", 2),
    ("CHF", 2),
    ("CLP", 0),
    ("CNY", 2),
    ("COP", 2),
    ("CZK", 2),
    ("DKK", 2),
    ("EGP", 2),
    ("EUR", 2),
    ("GBP", 2),
    ("HKD", 2),
    ("HUF", 2),
    ("IDR", 2),
    ("ILS", 2),
    ("INR", 2),
    ("IQD", 3),
    ("ISK", 0),
    ("JOD", 3),
    ("JPY", 0),
    ("KRW", 0),
    ("KWD", 3),
    ("LYD", 3),
    ("MOP", 2),
    ("MXN", 2),
    ("MYR", 2),
    ("NOK", 2),
    ("NZD", 2),
    ("OMR", 3),
    ("PHP", 2),
    ("PKR", 2),
    ("PLN", 2),
    ("QAR", 2),
    ("RON", 2),
    ("RUB", 2),
    ("SAR", 2),
    ("SEK", 2),
    ("SGD", 2),
    ("THB", 2),
    ("TND", 3),
    ("TRY", 2),
    ("TWD", 2),
    ("UAH", 2),
    ("UGX", 0),
    ("USD", 2),
    ("VND", 0),
    ("XAF", 0),
    ("XOF", 0),
    ("ZAR", 2),
];

/// The minor-unit exponent of a currency the console knows.
pub fn exponent(code: &str) -> Option<u8> {
    CURRENCY_EXPONENTS
        .binary_search_by(|(c, _)| (*c).cmp(code))
        .ok()
        .map(|at| CURRENCY_EXPONENTS[at].1)
}

/// Minor units in major units with the thousands grouped:
/// `(9989884, 2)` → `99,898.84`, `(-5, 2)` → `-0.05`, `(1500, 0)` → `1,500`.
/// Exact for every `i64` (no floating point, no overflow).
pub fn major(minor: i64, exponent: u8) -> String {
    let digits = minor.unsigned_abs().to_string();
    let exp = usize::from(exponent);
    // At least one digit before the point: 5 at exponent 2 is 0.05.
    let digits = format!("{digits:0>width$}", width = exp + 1);
    let (whole, fraction) = digits.split_at(digits.len() - exp);
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 2);
    if minor < 0 {
        out.push('-');
    }
    for (i, d) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(d);
    }
    if !fraction.is_empty() {
        out.push('.');
        out.push_str(fraction);
    }
    out
}

/// Minor units of `currency` as people read them: `99,898.84 CNY`; of a
/// currency the console does not know, the figure as it is, said so.
pub fn money(minor: i64, currency: &str) -> String {
    match exponent(currency) {
        Some(exp) => format!("{} {currency}", major(minor, exp)),
        None => format!("{minor} (minor units) {currency}"),
    }
}

/// A callback's business facts (`payment|PAY1|T1|SUCCEEDED|1500|CNY|-`)
/// as a person reads them: `payment · PAY1 · T1 · SUCCEEDED · 15.00 CNY`
/// — each amount beside its currency in major units, the empty fields
/// left out.
pub fn facts_text(facts: &str) -> String {
    let fields: Vec<&str> = facts.split('|').collect();
    let mut out: Vec<String> = Vec::with_capacity(fields.len());
    let mut i = 0;
    while i < fields.len() {
        let (field, next) = (fields[i], fields.get(i + 1).copied());
        match (field.parse::<i64>(), next.filter(|c| exponent(c).is_some())) {
            (Ok(minor), Some(currency)) => {
                out.push(money(minor, currency));
                i += 2;
            }
            _ => {
                if !field.is_empty() && field != "-" {
                    out.push(field.to_owned());
                }
                i += 1;
            }
        }
    }
    out.join(" · ")
}

/// A time zone as the browser gets it from the server: its name and its
/// offsets from UTC over the years the console shows, so a time reads the
/// same in the page the server rendered and in the hydrated one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Zone {
    /// The IANA name (`Asia/Shanghai`); empty for UTC.
    pub name: String,
    /// `(from, seconds)`: from that instant (microseconds since the epoch)
    /// on, local time is `seconds` ahead of UTC. Sorted; the first holds
    /// before its instant too. Empty: UTC.
    pub offsets: Vec<(i64, i32)>,
}

impl Zone {
    /// The zone's name, `UTC` for UTC.
    pub fn name(&self) -> &str {
        if self.name.is_empty() {
            "UTC"
        } else {
            &self.name
        }
    }

    /// Seconds local time is ahead of UTC at `micros`.
    pub fn offset_at(&self, micros: i64) -> i32 {
        let after = self.offsets.partition_point(|(from, _)| *from <= micros);
        self.offsets
            .get(after.saturating_sub(1))
            .map_or(0, |(_, secs)| *secs)
    }

    /// `YYYY-MM-DD HH:MM` local, for a column whose header names the zone.
    pub fn minutes(&self, micros: i64) -> String {
        let shifted = micros.saturating_add(i64::from(self.offset_at(micros)) * 1_000_000);
        utc_minutes(shifted)
    }

    /// `MM-DD HH:MM` local: a list's short time.
    pub fn short(&self, micros: i64) -> String {
        let whole = self.minutes(micros);
        match whole.split_once('-') {
            Some((_, rest)) => rest.to_owned(),
            None => whole,
        }
    }

    /// `YYYY-MM-DD HH:MM Asia/Shanghai`: a time standing alone.
    pub fn named(&self, micros: i64) -> String {
        format!("{} {}", self.minutes(micros), self.name())
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
    fn money_reads_in_major_units_grouped() {
        assert_eq!(major(9_989_884, 2), "99,898.84");
        assert_eq!(money(9_989_884, "CNY"), "99,898.84 CNY");
        assert_eq!(money(1500, "CNY"), "15.00 CNY");
        // Exponent 0: no point.
        assert_eq!(money(1_234_567, "JPY"), "1,234,567 JPY");
        assert_eq!(money(0, "JPY"), "0 JPY");
        assert_eq!(money(999, "KRW"), "999 KRW");
        // Exponent 3.
        assert_eq!(money(1_234_567, "KWD"), "1,234.567 KWD");
        assert_eq!(money(5, "BHD"), "0.005 BHD");
        // Negatives, and less than one major unit.
        assert_eq!(money(-5, "CNY"), "-0.05 CNY");
        assert_eq!(money(-123_456, "USD"), "-1,234.56 USD");
        assert_eq!(money(-1000, "JPY"), "-1,000 JPY");
        assert_eq!(major(0, 2), "0.00");
        assert_eq!(major(100_000, 2), "1,000.00");
        assert_eq!(major(99_999, 2), "999.99");
        // The ends of i64, exact.
        assert_eq!(major(i64::MAX, 2), "92,233,720,368,547,758.07");
        assert_eq!(major(i64::MIN, 2), "-92,233,720,368,547,758.08");
        assert_eq!(major(i64::MIN, 0), "-9,223,372,036,854,775,808");
        assert_eq!(major(i64::MAX, 3), "9,223,372,036,854,775.807");
        // A currency the console does not know keeps its figure, said so.
        assert_eq!(money(1234, "XYZ"), "1234 (minor units) XYZ");
        assert_eq!(exponent("CNY"), Some(2));
        assert_eq!(exponent("cny"), None);
        assert!(
            CURRENCY_EXPONENTS.windows(2).all(|w| w[0].0 < w[1].0),
            "sorted, for the binary search"
        );
    }

    #[test]
    fn facts_read_with_their_amounts() {
        assert_eq!(
            facts_text("payment|PAY1|SBX-1|SUCCEEDED|1500|CNY|-"),
            "payment · PAY1 · SBX-1 · SUCCEEDED · 15.00 CNY"
        );
        assert_eq!(
            facts_text("refund|R1|-|PAY1|-|SUCCEEDED|123456|JPY|false"),
            "refund · R1 · PAY1 · SUCCEEDED · 123,456 JPY · false"
        );
        // A figure beside no currency stays as it is.
        assert_eq!(facts_text("x|1500|XYZ"), "x · 1500 · XYZ");
    }

    #[test]
    fn times_read_in_the_zone() {
        // 2026-12-04 09:05:30 UTC
        let at = 1_796_375_130_000_000;
        let utc = Zone::default();
        assert_eq!(utc.named(at), "2026-12-04 09:05 UTC");
        let shanghai = Zone {
            name: "Asia/Shanghai".into(),
            offsets: vec![(0, 8 * 3600)],
        };
        assert_eq!(shanghai.named(at), "2026-12-04 17:05 Asia/Shanghai");
        assert_eq!(shanghai.short(at), "12-04 17:05");
        // Before the first offset's instant, the first holds.
        assert_eq!(shanghai.minutes(-3_600_000_000), "1970-01-01 07:00");
        // Across a change of offset: each side its own.
        let hour = 3_600_000_000;
        let london = Zone {
            name: "Europe/London".into(),
            offsets: vec![(0, 0), (10 * hour, 3600), (20 * hour, 0)],
        };
        assert_eq!(london.minutes(10 * hour - 1), "1970-01-01 09:59");
        assert_eq!(london.minutes(10 * hour), "1970-01-01 11:00");
        assert_eq!(london.minutes(20 * hour), "1970-01-01 20:00");
        // Far ends do not overflow.
        let _ = shanghai.minutes(i64::MAX);
        let _ = shanghai.minutes(i64::MIN);
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
