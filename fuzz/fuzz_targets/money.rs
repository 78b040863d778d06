#![no_main]
//! Money and currency parsing: `Currency::parse`, `Money::parse_major` and
//! what prints a parsed amount back (it must read back the same).

use libfuzzer_sys::fuzz_target;
use reckon::domain::{Currency, Money};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The first line names the currency, the rest is the amount.
    let (code, amount) = text.split_once('\n').unwrap_or(("CNY", text));
    let Ok(currency) = Currency::parse(code) else {
        return;
    };
    assert_eq!(currency.code().len(), 3);
    if let Ok(money) = Money::parse_major(amount, currency) {
        let shown = money.major_string();
        let again = Money::parse_major(&shown, currency).expect("a printed amount parses");
        assert_eq!(again, money, "{amount:?} printed as {shown:?}");
        let _ = money.to_string();
        let _ = money.positive();
    }
});
