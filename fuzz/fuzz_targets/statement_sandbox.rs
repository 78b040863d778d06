#![no_main]
//! The sandbox statement reader on arbitrary files.

#[path = "common/statement.rs"]
mod statement;

use libfuzzer_sys::fuzz_target;
use reckon::providers::sandbox::statement::{FORMAT, row};
use reckon::statement::csv::CsvFields;

fuzz_target!(|data: &[u8]| {
    statement::read_all(FORMAT, data);
    // The pull API hands the same nine fields to `row`.
    if let Ok(text) = std::str::from_utf8(data) {
        let mut csv = CsvFields::new();
        for (n, line) in text.lines().enumerate() {
            let fields: Vec<&str> = csv.split(line).iter().collect();
            let _ = row(&fields, n as i64 + 1);
        }
    }
});
