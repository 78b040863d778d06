#![no_main]
//! The AlipayDetail statement reader on arbitrary files.

#[path = "common/statement.rs"]
mod statement;

use libfuzzer_sys::fuzz_target;
use reckon::recon::statement::Format;

fuzz_target!(|data: &[u8]| {
    let format = Format::of_kind("alipay").expect("a known kind");
    assert_eq!(format, Format::AlipayDetail);
    statement::read_all(format, data);
});
