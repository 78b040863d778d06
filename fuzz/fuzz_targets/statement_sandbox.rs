#![no_main]
//! The Sandbox statement reader on arbitrary files.

#[path = "common/statement.rs"]
mod statement;

use libfuzzer_sys::fuzz_target;
use reckon::recon::statement::{Format, sandbox_row, split_csv};

fuzz_target!(|data: &[u8]| {
    let format = Format::of_kind("sandbox").expect("a known kind");
    assert_eq!(format, Format::Sandbox);
    statement::read_all(format, data);
    // The pull API hands the same nine fields to `sandbox_row`.
    if let Ok(text) = std::str::from_utf8(data) {
        for (n, line) in text.lines().enumerate() {
            let fields = split_csv(line);
            let _ = sandbox_row(&fields, n as i64 + 1);
        }
    }
});
