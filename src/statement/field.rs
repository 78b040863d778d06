//! Reading a statement's fields: amounts exactly, currencies, ids that may
//! be absent, and totals that must not wrap.

use crate::domain::{Currency, Fee, Money, quote, trimmed};

/// The currency of the row before, kept for a next row whose code is
/// spelled the same (a statement is mostly of one currency): no search of
/// the currency table per row, which was a noticeable share of the
/// reader's time.
#[derive(Default)]
pub struct LastCurrency(Option<([u8; 3], Currency)>);

impl LastCurrency {
    pub fn parse(&mut self, code: &str) -> Result<Currency, String> {
        let spelled = <[u8; 3]>::try_from(code.as_bytes()).ok();
        if let (Some((last, currency)), Some(spelled)) = (self.0, spelled)
            && last == spelled
        {
            return Ok(currency);
        }
        let currency = Currency::parse(code).map_err(|e| e.to_string())?;
        if let Some(spelled) = spelled {
            self.0 = Some((spelled, currency));
        }
        Ok(currency)
    }
}

/// The one currency a statement's rows are in, if they are all in one:
/// the currency of its totals.
#[derive(Default)]
pub struct SoleCurrency {
    first: Option<Currency>,
    mixed: bool,
}

impl SoleCurrency {
    pub fn saw(&mut self, currency: Currency) {
        match self.first {
            None => self.first = Some(currency),
            Some(first) if first != currency => self.mixed = true,
            Some(_) => {}
        }
    }

    pub fn get(&self) -> Option<Currency> {
        self.first.filter(|_| !self.mixed)
    }
}

/// An amount in major units; a leading minus is dropped (a refund row's
/// amount is what was given back).
pub fn money(text: &str, currency: Currency) -> Result<Money, String> {
    let t = trimmed(text);
    let t = t.strip_prefix('-').unwrap_or(t);
    Money::parse_major(t, currency).map_err(|e| format!("amount {}: {e}", quote(text)))
}

/// A fee column's value, its sign kept (`column` names it in a refusal);
/// `None` for an empty field. Exact, as amounts are, to the five places a
/// statement states a fee in (fractions of the minor unit kept, never
/// rounded); more places are refused.
pub fn fee(text: &str, currency: Currency, column: &str) -> Result<Option<Fee>, String> {
    let t = trimmed(text);
    if t.is_empty() {
        return Ok(None);
    }
    Fee::parse_major(t, currency)
        .map(Some)
        .map_err(|e| format!("{column} {}: {e}", quote(text)))
}

/// A running total plus a row's amount, or why the line is refused.
pub fn add(sum: i64, minor: i64) -> Result<i64, String> {
    sum.checked_add(minor)
        .ok_or_else(|| "the amounts add up to more than a statement total can hold".into())
}

pub fn cny() -> Currency {
    Currency::parse("CNY").expect("CNY is known")
}

/// A field, trimmed; `None` when that leaves nothing.
pub fn present(s: &str) -> Option<&str> {
    let t = trimmed(s);
    (!t.is_empty()).then_some(t)
}
