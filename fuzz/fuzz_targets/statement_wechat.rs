#![no_main]
//! The WeChat Pay trade bill reader (ALL, SUCCESS, REFUND) on arbitrary files.

#[path = "common/statement.rs"]
mod statement;

use libfuzzer_sys::fuzz_target;
use reckon::providers::wechatpay::statement::FORMAT;

fuzz_target!(|data: &[u8]| {
    statement::read_all(FORMAT, data);
});
