//! Reading provider statements (bills) line by line — memory does not grow
//! with the file — into [`StatementRow`]s with exact money, checked against
//! the summary figures the statement itself carries. A malformed line stops
//! the statement with its line number and the reason: a statement is all or
//! nothing.
//!
//! This module knows no provider and no database. A provider's bill format
//! lives in the provider's folder and plugs in as a [`BillFormat`]; the
//! [`Reader`] here reads and decodes the lines, numbers them, applies the
//! tolerance the operator accepted and holds the summary's figures against
//! the rows. Arrows point one way: providers → statement → domain.

mod chunk;
pub mod csv;
mod field;
mod reader;
mod row;
pub mod time;

pub use chunk::Chunk;
pub use field::{LastCurrency, SoleCurrency, add, cny, fee, money, present};
pub use reader::{MAX_ID, MAX_LINE, Pause, Reader, read, read_with};
pub use row::{RowKind, RowRef, StatementRow};

/// A refund-kind row's status for a dispute's funds taken from the
/// balance (a chargeback), and for the funds given back (a dispute won):
/// matched to the dispute, never to a refund.
pub const DISPUTED: &str = "DISPUTED";
pub const DISPUTE_REVERSED: &str = "DISPUTE_REVERSED";

/// A figure the statement states about itself, and what was read.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Check {
    pub what: String,
    pub stated: i64,
    pub read: i64,
    /// Why this figure was not held against the rows: the operator
    /// accepted skipping malformed lines, whose amounts are unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waived: Option<String>,
    /// The figures are minor units of this currency (a total of amounts
    /// all in it); none for a count, or a total over several currencies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub currency: Option<crate::domain::Currency>,
    /// The figures are in 1/100,000 of the currency's major unit, not its
    /// minor units: fees summed at the precision the statement states
    /// them ([`crate::domain::Fee`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub fee_units: bool,
}

impl Check {
    pub fn new(what: &str, stated: i64, read: i64) -> Check {
        Check {
            what: what.into(),
            stated,
            read,
            waived: None,
            currency: None,
            fee_units: false,
        }
    }

    /// A total of fees in `currency`, exact at five places.
    pub fn fees(what: &str, stated: i64, read: i64, currency: crate::domain::Currency) -> Check {
        Check {
            currency: Some(currency),
            fee_units: true,
            ..Check::new(what, stated, read)
        }
    }

    /// A total of amounts, in minor units of `currency` when all were in it.
    pub fn money(
        what: &str,
        stated: i64,
        read: i64,
        currency: Option<crate::domain::Currency>,
    ) -> Check {
        Check {
            currency,
            ..Check::new(what, stated, read)
        }
    }

    /// The figure's name as a person reads it: `total`, not the file's
    /// `total_minor` (the unit shows in the figure itself).
    pub fn label(what: &str) -> &str {
        what.strip_suffix("_minor").unwrap_or(what)
    }

    /// A figure as a person reads it: an amount in major units with its
    /// currency, a count as it is.
    pub fn shown(&self, figure: i64) -> String {
        match self.currency {
            Some(c) if self.fee_units => crate::domain::Fee {
                e5: figure,
                currency: c,
            }
            .shown(),
            Some(c) => crate::domain::Money::new(figure, c).shown(),
            None => figure.to_string(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct ParseError {
    pub line: u64,
    pub reason: String,
}

/// One provider's bill format, as the [`Reader`] drives it: the format
/// recognises its header, reads a line into a row and keeps the figures
/// its summary states; the reader does the rest. Called once a line, never
/// once a byte.
pub trait BillFormat: Send {
    /// How the file's bytes are encoded.
    fn encoding(&self) -> &'static encoding_rs::Encoding {
        encoding_rs::UTF_8
    }
    /// For a format whose files come in more than one encoding: shown
    /// each line's bytes before they are decoded until it answers `true`,
    /// having decided [`BillFormat::encoding`] — once, from the first
    /// lines, not line by line.
    fn detect_encoding(&mut self, _raw_line: &[u8]) -> bool {
        true
    }
    /// The time zone the caller says the file's wall-clock times are in,
    /// for a format whose files do not say it themselves (a Stripe report
    /// run in a time zone of the merchant's choosing).
    fn times_in(&mut self, _zone: &jiff::tz::TimeZone) {}
    /// One line that is not blank, without its end or a byte-order mark:
    /// `Ok(true)` once it put a row into `out`, `Ok(false)` for a line with
    /// no row (a header, a comment, a summary), or why it is refused.
    fn line(&mut self, text: &str, line_no: i64, out: &mut Chunk) -> Result<bool, String>;
    /// Where the reading stands.
    fn progress(&self) -> Progress;
    /// Which of the format's layouts the file is (WeChat Pay's `REFUND`
    /// trade bill, Alipay's `GBK` export), once the first lines told it:
    /// asked once, at the end, for the run to record what it read.
    fn kind(&self) -> Option<&'static str> {
        None
    }
    /// Whether the file carries a summary of its own (Stripe's reports
    /// carry no totals: nothing to check, nothing missing).
    fn has_summary(&self) -> bool {
        true
    }
    /// At the end of the file: the summary's figures against the rows.
    fn checks(&mut self) -> Vec<Check>;
}

/// Where a bill's reading stands, as its format tells the [`Reader`]: a
/// malformed line may be skipped under the tolerance only between the
/// header and the summary, and a file must end with both read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    pub header: bool,
    /// The summary has begun (WeChat Pay's: its header line was read).
    pub in_summary: bool,
    pub summary: bool,
}

/// A bill format by name, and how to start reading a file of it: what a
/// provider hands reconciliation, which passes it to [`read`].
#[derive(Clone)]
pub struct Format {
    name: &'static str,
    /// Whose bill it is, as people name the provider (`WeChat Pay`).
    whose: &'static str,
    /// What the bill is called after whose it is, `{kind}` standing for
    /// the layout the file turned out to be (`{kind} bill`).
    called: &'static str,
    start: fn() -> Box<dyn BillFormat>,
    /// Where the caller knows it: the zone of the file's wall-clock times.
    zone: Option<jiff::tz::TimeZone>,
}

impl Format {
    /// `whose` and `called` name the bill to a person: see
    /// [`Format::describe`].
    pub const fn new(
        name: &'static str,
        whose: &'static str,
        called: &'static str,
        start: fn() -> Box<dyn BillFormat>,
    ) -> Format {
        Format {
            name,
            whose,
            called,
            start,
            zone: None,
        }
    }

    /// The same format, its files' wall-clock times read in `zone` where
    /// a file does not state its own (see [`BillFormat::times_in`]).
    pub fn in_zone(mut self, zone: jiff::tz::TimeZone) -> Format {
        self.zone = Some(zone);
        self
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Whose bill it is, as people name the provider (`WeChat Pay`).
    pub fn whose(&self) -> &'static str {
        self.whose
    }

    /// The bill as a person names it, with the layout the file turned out
    /// to be when the format tells layouts apart: `WeChat Pay ALL bill`.
    pub fn describe(&self, kind: Option<&str>) -> String {
        let called = match kind {
            Some(kind) => self.called.replace("{kind}", kind),
            None => self.called.replace("{kind} ", ""),
        };
        format!("{} {called}", self.whose)
    }

    /// What a run records it read: the format's name, with the layout the
    /// file turned out to be when the format tells layouts apart.
    pub fn bill_type(&self, kind: Option<&str>) -> String {
        match kind {
            Some(kind) => format!("{} ({kind})", self.name),
            None => self.name.to_owned(),
        }
    }

    fn start(&self) -> Box<dyn BillFormat> {
        let mut bill = (self.start)();
        if let Some(zone) = &self.zone {
            bill.times_in(zone);
        }
        bill
    }
}

impl std::fmt::Debug for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// Formats are told apart by name (one name, one format).
impl PartialEq for Format {
    fn eq(&self, other: &Format) -> bool {
        self.name == other.name
    }
}

impl Eq for Format {}

/// Which of `formats` a file is, told by its first lines (`head`, the
/// file's start; only its whole lines are read): the first format whose
/// header they have, and the layout the format found the file to be.
/// `None` when none knows it.
pub fn recognise<'f>(
    formats: &'f [Format],
    head: &[u8],
) -> Option<(&'f Format, Option<&'static str>)> {
    let whole = &head[..memchr::memrchr(b'\n', head)? + 1];
    formats.iter().find_map(|format| {
        let mut reader = read(format.clone(), Box::new(std::io::Cursor::new(whole)));
        let mut chunk = Chunk::default();
        loop {
            let going = matches!(
                reader.read_rows(&mut chunk, 1),
                Ok(Pause::Full | Pause::Skipped(_))
            );
            chunk.clear();
            if reader.header_read() {
                return Some((format, reader.kind()));
            }
            if !going {
                return None;
            }
        }
    })
}

/// A whole file read through `format` one row at a time, as the tests of
/// each format read it: its rows and checks, or the first error (a skipped
/// line included).
#[cfg(test)]
pub(crate) fn read_all(
    format: Format,
    bytes: &[u8],
) -> Result<(Vec<StatementRow>, Vec<Check>), ParseError> {
    let mut reader = read(format, Box::new(std::io::Cursor::new(bytes.to_vec())));
    let mut chunk = Chunk::default();
    let mut rows = Vec::new();
    loop {
        let pause = reader.read_rows(&mut chunk, 1)?;
        rows.extend(chunk.iter().map(|r| r.owned()));
        chunk.clear();
        match pause {
            Pause::Full => {}
            Pause::Skipped(e) => return Err(e),
            Pause::End(checks) => return Ok((rows, checks)),
        }
    }
}

/// The layout a whole file read through `format` turned out to be
/// ([`BillFormat::kind`]).
#[cfg(test)]
pub(crate) fn kind_of(format: Format, bytes: &[u8]) -> Option<&'static str> {
    let mut reader = read(format, Box::new(std::io::Cursor::new(bytes.to_vec())));
    let mut chunk = Chunk::default();
    while let Ok(Pause::Full | Pause::Skipped(_)) = reader.read_rows(&mut chunk, 1 << 16) {
        chunk.clear();
    }
    reader.kind()
}

/// A bill from `tests/fixtures/bills/`, as the tests of each format read it.
#[cfg(test)]
pub(crate) fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/bills/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}
