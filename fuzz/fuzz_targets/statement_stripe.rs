#![no_main]
//! The Stripe itemized report reader on arbitrary files.

#[path = "common/statement.rs"]
mod statement;

use libfuzzer_sys::fuzz_target;
use reckon::providers::stripe::statement::FORMAT;

fuzz_target!(|data: &[u8]| {
    statement::read_all(FORMAT, data);
});
