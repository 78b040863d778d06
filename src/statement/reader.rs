//! The reader every bill format plugs into: lines read where the input's
//! buffer holds them, decoded, numbered and handed to the format; malformed
//! row lines skipped under the tolerance the operator accepted; at the end,
//! the summary's figures held against the rows.

use super::{BillFormat, Check, Chunk, Format, ParseError};
use crate::domain::trimmed;
use std::io::BufRead;

/// Reads a statement ([`Reader::read_rows`]), refusing it at its first
/// malformed line.
pub fn read<'r>(format: Format, reader: Box<dyn BufRead + Send + 'r>) -> Reader<'r> {
    read_with(format, reader, 0)
}

/// [`read`], skipping up to `tolerance` malformed row lines (each reported
/// as `Pause::Skipped`) — a tolerance the operator accepts explicitly. With
/// lines skipped, row counts are checked as rows read + lines skipped and
/// amount totals cannot be checked (the check says why).
pub fn read_with<'r>(
    format: Format,
    reader: Box<dyn BufRead + Send + 'r>,
    tolerance: u32,
) -> Reader<'r> {
    let bill = format.start();
    Reader {
        utf8: bill.encoding() == encoding_rs::UTF_8,
        encoding_known: false,
        bill,
        reader,
        buf: Vec::new(),
        line: 0,
        done: false,
        tolerance,
        skipped: 0,
    }
}

/// Why [`Reader::read_rows`] returned.
#[derive(Debug)]
pub enum Pause {
    /// The rows asked for are in.
    Full,
    /// A malformed line skipped under the accepted tolerance.
    Skipped(ParseError),
    /// The statement ended: the checks of its summary.
    End(Vec<Check>),
}

pub struct Reader<'r> {
    bill: Box<dyn BillFormat>,
    /// The format's lines are UTF-8 (not Alipay's GBK).
    utf8: bool,
    /// The format has decided its encoding ([`BillFormat::detect_encoding`]).
    encoding_known: bool,
    reader: Box<dyn BufRead + Send + 'r>,
    buf: Vec<u8>,
    line: u64,
    done: bool,
    tolerance: u32,
    skipped: u32,
}

/// What one line gave.
enum Line {
    Row,
    Skipped(ParseError),
    End(Vec<Check>),
}

impl Reader<'_> {
    /// Reads rows into `rows` — put there as they are made, not handed
    /// over one by one (moving each row out through an iterator cost a
    /// measurable share of the parse) — until it holds `limit`, a malformed
    /// line is skipped under the accepted tolerance, or the statement ends.
    /// After the end or an error it reads nothing more: `End` with no
    /// checks.
    pub fn read_rows(&mut self, rows: &mut Chunk, limit: usize) -> Result<Pause, ParseError> {
        // The input and one line buffer for the whole file, lent out for
        // the call (`Empty` in its place allocates nothing).
        let mut reader: Box<dyn BufRead + Send + '_> =
            std::mem::replace(&mut self.reader, Box::new(std::io::empty()));
        let mut raw = std::mem::take(&mut self.buf);
        let result = loop {
            if rows.len() >= limit {
                break Ok(Pause::Full);
            }
            if self.done {
                break Ok(Pause::End(Vec::new()));
            }
            match self.next_line(&mut *reader, &mut raw, rows) {
                Ok(Line::Row) => {}
                Ok(Line::Skipped(e)) => break Ok(Pause::Skipped(e)),
                Ok(Line::End(checks)) => break Ok(Pause::End(checks)),
                Err(e) => break Err(e),
            }
        };
        self.reader = reader;
        self.buf = raw;
        result
    }

    /// The next line's row, if it has one. A line whole in the input's
    /// buffer is read there; one that is not (it runs past the buffer, or
    /// the file ends without a newline) is put together in `raw` (copying
    /// every line out was a measurable share of the reader's time).
    fn next_line(
        &mut self,
        reader: &mut (dyn BufRead + Send + '_),
        raw: &mut Vec<u8>,
        rows: &mut Chunk,
    ) -> Result<Line, ParseError> {
        loop {
            let buf = match reader.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.unreadable(e)),
            };
            let outcome = match memchr::memchr(b'\n', buf) {
                Some(end) => {
                    let outcome = self.line_of(&buf[..=end], rows);
                    reader.consume(end + 1);
                    outcome
                }
                None => {
                    raw.clear();
                    match reader.read_until(b'\n', raw) {
                        Ok(0) => {
                            self.done = true;
                            return self.finish().map(Line::End);
                        }
                        Ok(_) => self.line_of(raw, rows),
                        Err(e) => return Err(self.unreadable(e)),
                    }
                }
            };
            if let Some(result) = outcome {
                return result;
            }
        }
    }

    /// The layout the format found the file to be ([`BillFormat::kind`]).
    pub fn kind(&self) -> Option<&'static str> {
        self.bill.kind()
    }

    fn unreadable(&mut self, e: std::io::Error) -> ParseError {
        self.done = true;
        self.error(format!("cannot read: {e}"))
    }

    /// What one line gives: a row, a line skipped, or an error; `None`
    /// for a line with no row (blank, a header, a comment, a summary).
    fn line_of(&mut self, raw: &[u8], rows: &mut Chunk) -> Option<Result<Line, ParseError>> {
        self.line += 1;
        if !self.encoding_known {
            self.encoding_known = self.bill.detect_encoding(raw);
            self.utf8 = self.bill.encoding() == encoding_rs::UTF_8;
        }
        let text = match self.decode(raw) {
            Ok(t) => t,
            Err(reason) => {
                self.done = true;
                return Some(Err(self.error(reason)));
            }
        };
        // The line's end, found by bytes (character searches, this one and
        // the amount's point, were a measurable share of the parse); both
        // are ASCII, so what is left ends on a character boundary.
        let kept = text
            .bytes()
            .rposition(|b| b != b'\r' && b != b'\n')
            .map_or(0, |at| at + 1);
        let text = &text[..kept];
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        if trimmed(text).is_empty() {
            return None;
        }
        match self.bill.line(text, self.line as i64, rows) {
            Ok(true) => Some(Ok(Line::Row)),
            Ok(false) => None,
            // A bad row line, within the accepted tolerance.
            Err(reason) if self.skipped < self.tolerance && self.in_rows() => {
                self.skipped += 1;
                Some(Ok(Line::Skipped(self.error(reason))))
            }
            Err(reason) => {
                self.done = true;
                Some(Err(self.error(reason)))
            }
        }
    }

    /// Between the header and the summary: where a malformed line is a
    /// row's, which the tolerance may skip.
    fn in_rows(&self) -> bool {
        let p = self.bill.progress();
        p.header && !p.summary && !p.in_summary
    }

    fn error(&self, reason: String) -> ParseError {
        ParseError {
            line: self.line,
            reason,
        }
    }

    fn decode<'b>(&self, raw: &'b [u8]) -> Result<std::borrow::Cow<'b, str>, String> {
        // UTF-8 after the first line (where a byte-order mark may say
        // otherwise) is only checked, not copied.
        if self.utf8 && self.line > 1 {
            // Most lines are ASCII, which a word-at-a-time check tells
            // quicker than UTF-8 validation.
            if raw.is_ascii() {
                // SAFETY: ASCII bytes are valid UTF-8.
                return Ok(std::borrow::Cow::Borrowed(unsafe {
                    std::str::from_utf8_unchecked(raw)
                }));
            }
            return std::str::from_utf8(raw)
                .map(std::borrow::Cow::Borrowed)
                .map_err(|_| "not valid UTF-8".to_string());
        }
        let encoding = self.bill.encoding();
        let (text, _, bad) = encoding.decode(raw);
        if bad {
            return Err(format!("not valid {}", encoding.name()));
        }
        Ok(text)
    }

    fn finish(&mut self) -> Result<Vec<Check>, ParseError> {
        let progress = self.bill.progress();
        if !progress.header {
            return Err(self.error("no header line: not a statement of this kind".into()));
        }
        if !progress.summary && self.bill.has_summary() {
            return Err(self
                .error("no summary: the statement is incomplete (its totals are missing)".into()));
        }
        let skipped = i64::from(self.skipped);
        let mut checks = self.bill.checks();
        if skipped > 0 {
            for c in &mut checks {
                if c.what.contains("rows") {
                    // The skipped lines were rows of some kind.
                    if c.stated >= c.read && c.stated <= c.read + skipped {
                        c.read = c.stated;
                    }
                    c.waived = Some(format!(
                        "{skipped} malformed line(s) skipped by the accepted tolerance count as rows"
                    ));
                } else {
                    c.waived = Some(format!(
                        "not checked: {skipped} malformed line(s) skipped by the accepted tolerance"
                    ));
                }
            }
        }
        Ok(checks)
    }
}
