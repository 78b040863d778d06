#![no_main]
//! The Alipay 业务明细 (GBK) reader on arbitrary files.

#[path = "common/statement.rs"]
mod statement;

use libfuzzer_sys::fuzz_target;
use reckon::providers::alipay::statement::FORMAT;

fuzz_target!(|data: &[u8]| {
    statement::read_all(FORMAT, data);
});
