//! The fee a provider account is expected to charge (`[providers.fees]` in
//! an account's section): a rate of the payment's amount plus a fixed part,
//! and how far a statement row's fee may stray from it before
//! reconciliation opens a FEE_MISMATCH ticket.

use serde::Deserialize;

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeeExpectation {
    /// A percentage with up to four decimals: `"0.6%"` (WeChat Pay's usual
    /// rate), `"0.38%"`, `"2.9%"`.
    pub rate: String,
    /// A fixed part per payment, in the currency's minor units (Stripe's
    /// 30 cents: `30`); 0 when absent.
    #[serde(default)]
    pub fixed_minor: i64,
    /// The difference (minor units) still taken as rounding; 1 when absent.
    #[serde(default = "one")]
    pub tolerance_minor: i64,
}

fn one() -> i64 {
    1
}

/// Parts per million of a percentage: exact (no float), so a rate reads
/// the same on every machine.
const PPM_PER_PERCENT: i64 = 10_000;

impl FeeExpectation {
    /// The rate in parts per million (`"0.6%"` → 6000), or why it is not a
    /// rate.
    pub fn rate_ppm(&self) -> Result<i64, String> {
        let bad = || {
            format!(
                "fee rate {:?} is not a percentage such as \"0.6%\" (at most four decimals, below 100%)",
                self.rate
            )
        };
        let text = self.rate.trim().strip_suffix('%').ok_or_else(bad)?.trim();
        let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
        if whole.is_empty()
            || frac.len() > 4
            || !whole.bytes().all(|b| b.is_ascii_digit())
            || !frac.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(bad());
        }
        let whole: i64 = whole.parse().map_err(|_| bad())?;
        let frac: i64 = format!("{frac:0<4}").parse().map_err(|_| bad())?;
        let ppm = whole * PPM_PER_PERCENT + frac * (PPM_PER_PERCENT / 10_000);
        if whole >= 100 {
            return Err(bad());
        }
        Ok(ppm)
    }

    /// Why these settings cannot work, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        self.rate_ppm()?;
        if self.fixed_minor < 0 || self.tolerance_minor < 0 {
            return Err("fees.fixed_minor and fees.tolerance_minor are never negative".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(text: &str) -> Result<i64, String> {
        FeeExpectation {
            rate: text.into(),
            ..Default::default()
        }
        .rate_ppm()
    }

    #[test]
    fn rates_read_exactly() {
        assert_eq!(rate("0.6%"), Ok(6_000));
        assert_eq!(rate("0.38%"), Ok(3_800));
        assert_eq!(rate("2.9 %"), Ok(29_000));
        assert_eq!(rate("0.0125%"), Ok(125));
        assert_eq!(rate("1%"), Ok(10_000));
        for bad in ["0.6", "-1%", "0.00001%", "abc%", "100%", ".5%", "%"] {
            assert!(rate(bad).is_err(), "{bad}");
        }
    }
}
