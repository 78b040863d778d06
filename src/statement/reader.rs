//! The reader every bill format plugs into: lines read where the input's
//! buffer holds them, decoded, numbered and handed to the format; malformed
//! row lines skipped under the tolerance the operator accepted; at the end,
//! the summary's figures held against the rows.

use super::{BillFormat, Check, Chunk, Format, ParseError};
use crate::domain::{clip, grouped, quote, quote_start, trimmed};
use std::io::BufRead;

/// The longest line a statement may have, its end included: far past any
/// real bill's (a WeChat Pay row is some 500 bytes), so a longer one is
/// refused — read through to its end, never held whole.
pub const MAX_LINE: usize = 64 * 1024;
/// The longest id or status a row may carry: no provider's is near it
/// (Reckon's own ids are at most 128), and the rows behind a run's tickets
/// are kept.
pub const MAX_ID: usize = 256;
/// A refusal's reason, cut to this many bytes whatever built it.
const MAX_REASON: usize = 1024;

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

/// A line put together in the line buffer.
enum Taken {
    /// The whole line, its end included (none at the file's end).
    Line,
    /// A line longer than [`MAX_LINE`]: its length, its start kept.
    TooLong(usize),
    /// The file ended.
    End,
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
    /// every line out was a measurable share of the reader's time), up to
    /// [`MAX_LINE`] bytes of it.
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
                Some(end) if end < MAX_LINE => {
                    let outcome = self.line_of(&buf[..=end], rows);
                    reader.consume(end + 1);
                    outcome
                }
                _ => match take_line(reader, raw) {
                    Ok(Taken::End) => {
                        self.done = true;
                        return self.finish().map(Line::End);
                    }
                    Ok(Taken::Line) => self.line_of(raw, rows),
                    Ok(Taken::TooLong(len)) => Some(self.too_long(raw, len)),
                    Err(e) => return Err(self.unreadable(e)),
                },
            };
            if let Some(result) = outcome {
                return result;
            }
        }
    }

    /// A line longer than [`MAX_LINE`], `len` bytes, of which `start` was
    /// kept: refused, quoting its start.
    fn too_long(&mut self, start: &[u8], len: usize) -> Result<Line, ParseError> {
        self.line += 1;
        // Enough bytes for the quote's characters in any encoding.
        let start = &start[..start.len().min(4 * crate::domain::QUOTED_CHARS)];
        let (text, _) = self.bill.encoding().decode_without_bom_handling(start);
        let reason = format!(
            "a line of {} bytes, longer than any statement's ({} at most): {}",
            grouped(len),
            grouped(MAX_LINE),
            quote_start(&text, len)
        );
        self.refuse(reason)
    }

    /// A line refused: skipped when it is a row's and the accepted
    /// tolerance allows another, otherwise the end of the reading.
    fn refuse(&mut self, reason: String) -> Result<Line, ParseError> {
        if self.skipped < self.tolerance && self.in_rows() {
            self.skipped += 1;
            Ok(Line::Skipped(self.error(reason)))
        } else {
            self.done = true;
            Err(self.error(reason))
        }
    }

    /// The layout the format found the file to be ([`BillFormat::kind`]).
    pub fn kind(&self) -> Option<&'static str> {
        self.bill.kind()
    }

    /// Whether the format has read the file's header: the file is of
    /// this format.
    pub fn header_read(&self) -> bool {
        self.bill.progress().header
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
            Ok(true) => match rows.last_too_long(MAX_ID) {
                None => Some(Ok(Line::Row)),
                Some((name, field)) => {
                    let reason = format!(
                        "{name} {} is longer than any provider's ({MAX_ID} bytes at most)",
                        quote(field)
                    );
                    rows.pop();
                    Some(self.refuse(reason))
                }
            },
            Ok(false) => None,
            Err(reason) => Some(self.refuse(reason)),
        }
    }

    /// Between the header and the summary: where a malformed line is a
    /// row's, which the tolerance may skip.
    fn in_rows(&self) -> bool {
        let p = self.bill.progress();
        p.header && !p.summary && !p.in_summary
    }

    fn error(&self, reason: String) -> ParseError {
        let reason = match clip(&reason, MAX_REASON) {
            std::borrow::Cow::Borrowed(_) => reason,
            clipped => clipped.into_owned(),
        };
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

/// The next line into `raw`, its end included, piece by piece from the
/// input's buffer: at most [`MAX_LINE`] bytes of it are kept, and a longer
/// line is read through to its end (its start kept), so a line of any
/// length costs no more memory than that.
fn take_line(reader: &mut (dyn BufRead + Send + '_), raw: &mut Vec<u8>) -> std::io::Result<Taken> {
    raw.clear();
    let mut len = 0;
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let (piece, ended) = match memchr::memchr(b'\n', buf) {
            Some(end) => (end + 1, true),
            None => (buf.len(), false),
        };
        if piece == 0 {
            // The file ended (with no newline after its last line).
            break;
        }
        let room = MAX_LINE.saturating_sub(raw.len());
        raw.extend_from_slice(&buf[..piece.min(room)]);
        len += piece;
        reader.consume(piece);
        if ended {
            break;
        }
    }
    Ok(match len {
        0 => Taken::End,
        len if len > MAX_LINE => Taken::TooLong(len),
        _ => Taken::Line,
    })
}
