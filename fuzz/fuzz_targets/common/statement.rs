//! Drives a statement reader over a whole input the way a reconciliation
//! run does: rows in chunks, skipped lines under a tolerance, to the end.

use reckon::statement::{Chunk, Format, Pause, read_with};

/// The first byte picks the tolerance (0–3 skipped lines) and the chunk
/// size (1–16 rows); the rest is the statement file.
pub fn read_all(format: Format, data: &[u8]) {
    let Some((&knobs, file)) = data.split_first() else {
        return;
    };
    let tolerance = u32::from(knobs & 3);
    let limit = usize::from(knobs >> 4) + 1;
    let mut reader = read_with(format, Box::new(std::io::Cursor::new(file)), tolerance);
    let mut chunk = Chunk::default();
    let mut skipped = 0;
    // Each call reads at least one line until the end, so a file of n lines
    // needs at most n + 1 calls; more is a reader that does not advance.
    for _ in 0..=file.len() + 1 {
        chunk.clear();
        match reader.read_rows(&mut chunk, limit) {
            Ok(Pause::Full) => assert!(chunk.len() >= limit),
            Ok(Pause::Skipped(_)) => {
                skipped += 1;
                assert!(skipped <= tolerance, "more lines skipped than tolerated");
            }
            Ok(Pause::End(checks)) => {
                for c in &checks {
                    let _ = (&c.what, c.stated, c.read);
                }
                return;
            }
            Err(_) => return,
        }
        for row in chunk.iter() {
            let _ = row.owned();
        }
    }
    panic!(
        "the reader did not reach the end of a {}-byte file",
        file.len()
    );
}
