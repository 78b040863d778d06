//! Money: integer minor units and an ISO 4217 currency. Provider decimal
//! strings are parsed digit by digit, never through floating point.

use super::quote;
use serde::{Deserialize, Serialize};
use std::fmt;

/// ISO 4217 codes Reckon accepts, with their minor-unit exponents: the
/// console's table, so a figure reads with the digits it was kept in.
const CURRENCIES: &[(&str, u8)] = app::format::CURRENCY_EXPONENTS;

/// A three-letter code as one number: the codes' order is their keys'.
const fn code_key(c: [u8; 3]) -> u32 {
    (c[0] as u32) << 16 | (c[1] as u32) << 8 | c[2] as u32
}

/// [`CURRENCIES`]' codes as keys, in the same (sorted) order.
const CODE_KEYS: [u32; CURRENCIES.len()] = {
    let mut keys = [0; CURRENCIES.len()];
    let mut i = 0;
    while i < CURRENCIES.len() {
        let c = CURRENCIES[i].0.as_bytes();
        keys[i] = code_key([c[0], c[1], c[2]]);
        i += 1;
    }
    keys
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Currency {
    code: &'static str,
    exponent: u8,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoneyError {
    #[error("unknown currency {0}: expected an ISO 4217 code such as CNY or USD")]
    UnknownCurrency(String),
    #[error("amount {0} is not a decimal number like 199.00")]
    NotDecimal(String),
    #[error("amount {amount} has more decimals than {currency} allows ({exponent})")]
    TooPrecise {
        amount: String,
        currency: &'static str,
        exponent: u8,
    },
    #[error("amount {0} is out of range")]
    Overflow(String),
    #[error("amount must be positive, got {0}")]
    NotPositive(i64),
}

/// `s` without the whitespace around it, as `str::trim`, answered at
/// once when both ends are plainly not whitespace (printable ASCII): a
/// statement trims some ten fields on each of its million rows.
pub fn trimmed(s: &str) -> &str {
    let plain = |b: Option<&u8>| b.is_some_and(u8::is_ascii_graphic);
    let b = s.as_bytes();
    if plain(b.first()) && plain(b.last()) {
        s
    } else {
        s.trim()
    }
}

impl Currency {
    /// Case-insensitive: `cny` is CNY. (Called for every statement row:
    /// no allocation, a binary search of the codes as numbers.)
    pub fn parse(code: &str) -> Result<Currency, MoneyError> {
        let unknown = || MoneyError::UnknownCurrency(quote(code).to_string());
        let &[a, b, c] = trimmed(code).as_bytes() else {
            return Err(unknown());
        };
        let key = code_key([a, b, c].map(|x| x.to_ascii_uppercase()));
        CODE_KEYS
            .binary_search(&key)
            .map(|at| {
                let (code, exponent) = CURRENCIES[at];
                Currency { code, exponent }
            })
            .map_err(|_| unknown())
    }

    pub fn code(&self) -> &'static str {
        self.code
    }

    pub fn exponent(&self) -> u8 {
        self.exponent
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code)
    }
}

impl Serialize for Currency {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.code)
    }
}

impl<'de> Deserialize<'de> for Currency {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Currency::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// A provider's fee exact at the precision its statement states it: in
/// 1/100,000 of the currency's major unit (WeChat Pay writes 手续费 to five
/// places: 0.6% of 19.99 CNY is 0.11994). Summed exactly, and rounded to
/// the minor unit only where money is booked ([`Fee::minor`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fee {
    pub e5: i64,
    pub currency: Currency,
}

impl Fee {
    /// The places a fee is carried to.
    pub const DECIMALS: u8 = 5;

    /// `"0.11994"` CNY → 11994; up to five decimals, a sign allowed.
    pub fn parse_major(amount: &str, currency: Currency) -> Result<Fee, MoneyError> {
        let finer = Currency {
            code: currency.code,
            exponent: Self::DECIMALS,
        };
        Money::parse_major(amount, finer).map(|m| Fee {
            e5: m.minor,
            currency,
        })
    }

    /// A fee stated in the currency's minor units (Stripe's, Alipay's).
    pub fn of_money(m: Money) -> Fee {
        let scale = 10i64.pow(u32::from(
            Self::DECIMALS.saturating_sub(m.currency.exponent),
        ));
        Fee {
            e5: m.minor.saturating_mul(scale),
            currency: m.currency,
        }
    }

    /// `e5` of `currency` in its minor units, rounded half away from zero:
    /// the one rounding, made where a fee is booked.
    pub fn minor_of(e5: i64, currency: Currency) -> i64 {
        let scale = 10i64.pow(u32::from(Self::DECIMALS.saturating_sub(currency.exponent)));
        let whole = e5 / scale;
        let rest = e5 % scale;
        if rest.abs() * 2 >= scale {
            whole + rest.signum()
        } else {
            whole
        }
    }

    /// This fee in the minor unit, rounded half away from zero.
    pub fn minor(self) -> i64 {
        Fee::minor_of(self.e5, self.currency)
    }

    /// Whether it is a whole number of minor units.
    pub fn is_whole(self) -> bool {
        Fee::of_money(Money::new(self.minor(), self.currency)).e5 == self.e5
    }

    /// `"0.11994 CNY"`, or as [`Money::shown`] when the fee is whole.
    pub fn shown(self) -> String {
        if self.is_whole() {
            return Money::new(self.minor(), self.currency).shown();
        }
        format!(
            "{} {}",
            app::format::major(self.e5, Self::DECIMALS),
            self.currency.code
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Money {
    pub minor: i64,
    pub currency: Currency,
}

impl Money {
    pub fn new(minor: i64, currency: Currency) -> Money {
        Money { minor, currency }
    }

    /// `"199.00"` CNY → 19900. A sign is allowed; more decimals than the
    /// currency has are refused unless they are zeros (`"1.500"` USD is 150).
    pub fn parse_major(amount: &str, currency: Currency) -> Result<Money, MoneyError> {
        let text = trimmed(amount);
        let not_decimal = || MoneyError::NotDecimal(quote(text).to_string());
        // By bytes, in one pass for the point (a statement has an amount a
        // row; a string search for the point, then another, costs twice).
        let (negative, digits) = match text.as_bytes().first() {
            Some(b'-') => (true, &text.as_bytes()[1..]),
            Some(b'+') => (false, &text.as_bytes()[1..]),
            _ => (false, text.as_bytes()),
        };
        let (whole, frac, pointed) = match digits.iter().position(|&b| b == b'.') {
            Some(at) => (&digits[..at], &digits[at + 1..], true),
            None => (digits, &digits[..0], false),
        };
        if whole.is_empty() && frac.is_empty()
            || !whole.iter().all(u8::is_ascii_digit)
            || !frac.iter().all(u8::is_ascii_digit)
            || (pointed && frac.is_empty())
        {
            return Err(not_decimal());
        }
        let exp = usize::from(currency.exponent);
        let (kept, dropped) = frac.split_at(frac.len().min(exp));
        if dropped.iter().any(|&b| b != b'0') {
            return Err(MoneyError::TooPrecise {
                amount: quote(text).to_string(),
                currency: currency.code,
                exponent: currency.exponent,
            });
        }
        let overflow = || MoneyError::Overflow(quote(text).to_string());
        let mut minor: i64 = 0;
        for &b in whole.iter().chain(kept) {
            minor = minor
                .checked_mul(10)
                .and_then(|m| m.checked_add(i64::from(b - b'0')))
                .ok_or_else(overflow)?;
        }
        for _ in kept.len()..exp {
            minor = minor.checked_mul(10).ok_or_else(overflow)?;
        }
        Ok(Money {
            minor: if negative { -minor } else { minor },
            currency,
        })
    }

    /// 19900 CNY → `"199.00"`.
    pub fn major_string(&self) -> String {
        let exp = u32::from(self.currency.exponent);
        let sign = if self.minor < 0 { "-" } else { "" };
        let abs = self.minor.unsigned_abs();
        if exp == 0 {
            return format!("{sign}{abs}");
        }
        let scale = 10u64.pow(exp);
        format!(
            "{sign}{}.{:0width$}",
            abs / scale,
            abs % scale,
            width = exp as usize
        )
    }

    /// 9989884 CNY → `"99,898.84 CNY"`: for a person to read (a ticket's
    /// reason, a run's checks), never for a wire or a file.
    pub fn shown(&self) -> String {
        app::format::money(self.minor, self.currency.code())
    }

    pub fn positive(self) -> Result<Money, MoneyError> {
        if self.minor > 0 {
            Ok(self)
        } else {
            Err(MoneyError::NotPositive(self.minor))
        }
    }
}

impl fmt::Display for Money {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.major_string(), self.currency)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trimmed_is_trim() {
        for s in [
            "",
            " ",
            "a",
            "CNY",
            " CNY",
            "CNY\t",
            "\u{3000}1.00",
            "1.00\u{3000}",
            "中文",
            " 中 ",
            "a b",
            "\r\n",
            "x\u{a0}",
        ] {
            assert_eq!(trimmed(s), s.trim(), "{s:?}");
        }
    }

    fn cur(c: &str) -> Currency {
        Currency::parse(c).unwrap()
    }

    #[test]
    fn decimal_strings_become_exact_minor_units() {
        let cases = [
            ("199.00", "CNY", 19900),
            ("199", "CNY", 19900),
            ("0.01", "CNY", 1),
            ("0.1", "USD", 10),
            ("1.500", "USD", 150),
            ("-12.34", "EUR", -1234),
            ("1000", "JPY", 1000),
            ("1.234", "KWD", 1234),
            (".5", "USD", 50),
            ("+7.25", "USD", 725),
            (" 3.10 ", "USD", 310),
            ("92233720368547758.07", "USD", i64::MAX),
        ];
        for (text, c, minor) in cases {
            assert_eq!(
                Money::parse_major(text, cur(c)).unwrap().minor,
                minor,
                "{text} {c}"
            );
        }
    }

    #[test]
    fn imprecise_or_malformed_amounts_are_refused() {
        assert!(matches!(
            Money::parse_major("0.001", cur("CNY")),
            Err(MoneyError::TooPrecise { .. })
        ));
        assert!(matches!(
            Money::parse_major("1.5", cur("JPY")),
            Err(MoneyError::TooPrecise { .. })
        ));
        for bad in [
            "", "abc", "1,00", "1.", "1e3", "--1", "+-1", "-+1", "1.2.3", " ", "-", "+", ".",
            "1 .5",
        ] {
            assert!(Money::parse_major(bad, cur("USD")).is_err(), "{bad:?}");
        }
        assert!(matches!(
            Money::parse_major("92233720368547758.08", cur("USD")),
            Err(MoneyError::Overflow(_))
        ));
    }

    #[test]
    fn minor_units_print_back_exactly() {
        assert_eq!(Money::new(19900, cur("CNY")).major_string(), "199.00");
        assert_eq!(Money::new(-5, cur("USD")).major_string(), "-0.05");
        assert_eq!(Money::new(1234, cur("BHD")).major_string(), "1.234");
        assert_eq!(Money::new(1000, cur("JPY")).to_string(), "1000 JPY");
        assert_eq!(Money::new(9_989_884, cur("CNY")).shown(), "99,898.84 CNY");
        assert_eq!(Money::new(-1_234_567, cur("KWD")).shown(), "-1,234.567 KWD");
    }

    #[test]
    fn currencies_are_iso_codes() {
        assert_eq!(cur("cny").code(), "CNY");
        assert_eq!(cur("JPY").exponent(), 0);
        assert!(Currency::parse("XYZ").is_err());
        assert!(Currency::parse("").is_err());
        assert!(Currency::parse("CNYY").is_err());
        assert_eq!(cur(" usd ").code(), "USD");
        // The search needs the table sorted, each code three capitals.
        assert!(CURRENCIES.windows(2).all(|w| w[0].0 < w[1].0));
        for (code, _) in CURRENCIES {
            assert_eq!(cur(code).code(), *code);
            assert_eq!(cur(&code.to_lowercase()).code(), *code);
            assert!(code.len() == 3 && code.bytes().all(|b| b.is_ascii_uppercase()));
        }
    }

    /// A fee is exact to five places and rounds half away from zero only
    /// when asked for minor units; a whole one reads as money does.
    #[test]
    fn a_fee_keeps_five_places_and_rounds_half_away_from_zero() {
        let cny = cur("CNY");
        let fee = Fee::parse_major("0.11994", cny).unwrap();
        assert_eq!((fee.e5, fee.minor(), fee.is_whole()), (11_994, 12, false));
        assert_eq!(fee.shown(), "0.11994 CNY");
        assert_eq!(Fee::parse_major("-0.00500", cny).unwrap().minor(), -1);
        assert_eq!(Fee::parse_major("0.00499", cny).unwrap().minor(), 0);
        assert_eq!(
            Fee::parse_major("1.19000", cny).unwrap().shown(),
            "1.19 CNY"
        );
        assert!(Fee::parse_major("0.119941", cny).is_err());
        let jpy = Fee::of_money(Money::new(150, cur("JPY")));
        assert_eq!((jpy.e5, jpy.minor()), (15_000_000, 150));
        assert_eq!(Fee::minor_of(-149_500, cny), -150);
    }
}
