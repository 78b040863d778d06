#![no_main]
//! The StripeItemized statement reader on arbitrary files.

#[path = "common/statement.rs"]
mod statement;

use libfuzzer_sys::fuzz_target;
use reckon::recon::statement::Format;

fuzz_target!(|data: &[u8]| {
    let format = Format::of_kind("stripe").expect("a known kind");
    assert_eq!(format, Format::StripeItemized);
    statement::read_all(format, data);
});
