//! Provider statements, read line by line (memory does not grow with the
//! file) into [`StatementRow`]s with exact money, and checked against the
//! summary figures the statement itself carries. A malformed line stops
//! the statement with its line number and the reason: a statement is all
//! or nothing.

use crate::domain::{Currency, Money, trimmed};
use std::io::BufRead;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKind {
    Payment,
    Refund,
}

impl RowKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RowKind::Payment => "payment",
            RowKind::Refund => "refund",
        }
    }
}

/// One line of a statement, in Reckon's words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatementRow {
    pub line_no: i64,
    pub kind: RowKind,
    pub provider_txn_id: Option<String>,
    pub payment_no: Option<String>,
    pub refund_no: Option<String>,
    pub provider_refund_id: Option<String>,
    /// Always positive: a refund row's amount is what was given back.
    pub money: Money,
    /// `SUCCEEDED` for money that moved; otherwise the provider's word.
    pub status: String,
    /// Microseconds UTC, when the statement says.
    pub occurred_at: Option<i64>,
}

/// A statement row borrowed from where it was read (a [`Chunk`], a line,
/// a [`StatementRow`]): what matching reads, without a string of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowRef<'a> {
    pub line_no: i64,
    pub kind: RowKind,
    pub provider_txn_id: Option<&'a str>,
    pub payment_no: Option<&'a str>,
    pub refund_no: Option<&'a str>,
    pub provider_refund_id: Option<&'a str>,
    pub money: Money,
    pub status: &'a str,
    pub occurred_at: Option<i64>,
}

impl RowRef<'_> {
    pub fn owned(&self) -> StatementRow {
        let own = |s: Option<&str>| s.map(str::to_owned);
        StatementRow {
            line_no: self.line_no,
            kind: self.kind,
            provider_txn_id: own(self.provider_txn_id),
            payment_no: own(self.payment_no),
            refund_no: own(self.refund_no),
            provider_refund_id: own(self.provider_refund_id),
            money: self.money,
            status: self.status.to_owned(),
            occurred_at: self.occurred_at,
        }
    }
}

impl StatementRow {
    pub fn borrowed(&self) -> RowRef<'_> {
        RowRef {
            line_no: self.line_no,
            kind: self.kind,
            provider_txn_id: self.provider_txn_id.as_deref(),
            payment_no: self.payment_no.as_deref(),
            refund_no: self.refund_no.as_deref(),
            provider_refund_id: self.provider_refund_id.as_deref(),
            money: self.money,
            status: &self.status,
            occurred_at: self.occurred_at,
        }
    }
}

/// Rows as a reader hands them over: their text back to back in one
/// buffer, filled, emptied and filled again with no allocation per row.
/// (Three strings a row, made on the reader's thread and freed on the
/// matcher's, were an eighth of the reader's time and a fifth of the
/// matcher's, by perf.)
#[derive(Debug, Default)]
pub struct Chunk {
    text: String,
    rows: Vec<Packed>,
}

/// A row of a [`Chunk`]: its strings as places in the chunk's text.
#[derive(Debug)]
struct Packed {
    line_no: i64,
    kind: RowKind,
    money: Money,
    occurred_at: Option<i64>,
    /// provider_txn_id, payment_no, refund_no, provider_refund_id, status:
    /// (start, end), `ABSENT` for none.
    spans: [(usize, usize); 5],
}

const ABSENT: (usize, usize) = (usize::MAX, 0);

impl Chunk {
    pub fn with_capacity(rows: usize) -> Chunk {
        Chunk {
            text: String::with_capacity(rows * 48),
            rows: Vec::with_capacity(rows),
        }
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Empty again, its room kept.
    pub fn clear(&mut self) {
        self.text.clear();
        self.rows.clear();
    }

    pub fn push(&mut self, row: RowRef<'_>) {
        let text = &mut self.text;
        let mut put = |s: Option<&str>| match s {
            Some(s) => {
                let start = text.len();
                text.push_str(s);
                (start, text.len())
            }
            None => ABSENT,
        };
        let spans = [
            put(row.provider_txn_id),
            put(row.payment_no),
            put(row.refund_no),
            put(row.provider_refund_id),
            put(Some(row.status)),
        ];
        self.rows.push(Packed {
            line_no: row.line_no,
            kind: row.kind,
            money: row.money,
            occurred_at: row.occurred_at,
            spans,
        });
    }

    /// Row `i` (panics past the end, as indexing does).
    pub fn get(&self, i: usize) -> RowRef<'_> {
        let p = &self.rows[i];
        let at = |k: usize| match p.spans[k] {
            ABSENT => None,
            (start, end) => Some(&self.text[start..end]),
        };
        RowRef {
            line_no: p.line_no,
            kind: p.kind,
            provider_txn_id: at(0),
            payment_no: at(1),
            refund_no: at(2),
            provider_refund_id: at(3),
            money: p.money,
            status: at(4).unwrap_or_default(),
            occurred_at: p.occurred_at,
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = RowRef<'_>> {
        (0..self.len()).map(|i| self.get(i))
    }
}

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
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct ParseError {
    pub line: u64,
    pub reason: String,
}

/// The statement formats Reckon reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The sandbox's own CSV.
    Sandbox,
    /// WeChat Pay trade bill, type ALL.
    WechatAll,
    /// Alipay 业务明细 CSV (GBK).
    AlipayDetail,
    /// Stripe's itemized payout reconciliation report
    /// (`payout_reconciliation.itemized.5`).
    StripeItemized,
}

impl Format {
    /// The format a provider kind's statements come in.
    pub fn of_kind(kind: &str) -> Option<Format> {
        match kind {
            "sandbox" => Some(Format::Sandbox),
            "wechatpay" => Some(Format::WechatAll),
            "alipay" => Some(Format::AlipayDetail),
            "stripe" => Some(Format::StripeItemized),
            _ => None,
        }
    }
}

/// Splits one CSV line (double quotes, `""` inside quotes).
pub fn split_csv(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', true) => quoted = false,
            ('"', false) if field.is_empty() => quoted = true,
            (',', false) => fields.push(std::mem::take(&mut field)),
            (c, _) => field.push(c),
        }
    }
    fields.push(field);
    fields
}

/// One sandbox statement line's nine fields (CSV or the pull API).
pub fn sandbox_row<S: AsRef<str>>(f: &[S], line_no: i64) -> Result<StatementRow, String> {
    sandbox_fields(
        f,
        line_no,
        &mut LastCurrency::default(),
        &mut LastDay::default(),
    )
    .map(|r| r.owned())
}

/// The currency of the row before, kept for a next row whose code is
/// spelled the same (a statement is mostly of one currency): no search of
/// the currency table per row, which was a twelfth of the reader's time.
#[derive(Default)]
struct LastCurrency(Option<([u8; 3], Currency)>);

impl LastCurrency {
    fn parse(&mut self, code: &str) -> Result<Currency, String> {
        let spelled = <[u8; 3]>::try_from(code.as_bytes()).ok();
        if let (Some((last, currency)), Some(spelled)) = (self.0, spelled)
            && last == spelled
        {
            return Ok(currency);
        }
        let currency = Currency::parse(code).map_err(|e| e.to_string())?;
        if let Some(spelled) = spelled {
            self.0 = Some((spelled, currency));
        }
        Ok(currency)
    }
}

/// The places of the commas and quotes in `line`, in order, found sixteen
/// bytes at a time (eight where SSE2 is not there). (A search per field,
/// short as the fields are, was a fifth of the parse: `memchr2_iter`
/// starts its vector search afresh for each one, 470 instructions a row by
/// callgrind.) Both are ASCII, so every place is a character boundary.
fn separators(line: &[u8]) -> Separators<'_> {
    Separators {
        line,
        next: 0,
        base: 0,
        marks: 0,
    }
}

struct Separators<'a> {
    line: &'a [u8],
    /// Where the next block starts.
    next: usize,
    /// Where the block of `marks` starts.
    base: usize,
    /// A bit for each byte of that block not yet given that is `,` or `"`
    /// (bit `k` for byte `k` with SSE2, bit `8k + 7` without).
    marks: u64,
}

#[cfg(target_arch = "x86_64")]
const BLOCK: usize = 16;
#[cfg(not(target_arch = "x86_64"))]
const BLOCK: usize = 8;

impl Iterator for Separators<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        while self.marks == 0 {
            let len = self.line.len();
            if self.next >= len {
                return None;
            }
            let left = len - self.next;
            self.marks = if left >= BLOCK {
                marks(self.line[self.next..][..BLOCK].try_into().expect("a block"))
            } else if len >= BLOCK {
                // The line's last block, read so that it ends with the line
                // (no copy); the bytes already seen shifted out.
                marks(self.line[len - BLOCK..].try_into().expect("a block"))
                    >> ((BLOCK - left) * BITS_PER_BYTE)
            } else {
                // A line shorter than a block, with zeros (neither a comma
                // nor a quote) after it.
                let mut block = [0u8; BLOCK];
                for (to, from) in block.iter_mut().zip(&self.line[self.next..]) {
                    *to = *from;
                }
                marks(&block)
            };
            self.base = self.next;
            self.next += BLOCK;
        }
        let at = self.base + self.marks.trailing_zeros() as usize / BITS_PER_BYTE;
        self.marks &= self.marks - 1;
        Some(at)
    }
}

#[cfg(target_arch = "x86_64")]
const BITS_PER_BYTE: usize = 1;
#[cfg(not(target_arch = "x86_64"))]
const BITS_PER_BYTE: usize = 8;

/// Bit `k` set where byte `k` of `block` is `,` or `"`.
#[cfg(target_arch = "x86_64")]
fn marks(block: &[u8; 16]) -> u64 {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    // SAFETY: SSE2, which these need, is part of every x86_64 processor
    // (Rust enables it for the target); the load reads the sixteen bytes
    // `block` borrows, and may be unaligned.
    unsafe {
        let v = _mm_loadu_si128(block.as_ptr().cast());
        let hits = _mm_or_si128(
            _mm_cmpeq_epi8(v, _mm_set1_epi8(b',' as i8)),
            _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8)),
        );
        u64::from(_mm_movemask_epi8(hits) as u16)
    }
}

/// Bit `8k + 7` set where byte `k` of `block` is `,` or `"`.
#[cfg(not(target_arch = "x86_64"))]
fn marks(block: &[u8; 8]) -> u64 {
    let word = u64::from_le_bytes(*block);
    byte_is(word, b',') | byte_is(word, b'"')
}

/// 0x80 in each byte of `word` that is `byte`, 0 in the others. Exact:
/// no carry crosses from one byte into the next (each sum is at most
/// 0x7f + 0x7f).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn byte_is(word: u64, byte: u8) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let x = word ^ (u64::from(byte) * 0x0101_0101_0101_0101);
    !(((x & LOW7) + LOW7) | x | LOW7)
}

/// The last timestamp's date (`YYYY-MM-DD`) and its days since
/// 1970-01-01: a statement's rows are of a day or two, so each date is
/// read and checked once, not once a row ([`utc_micros`]).
#[derive(Default)]
struct LastDay(Option<([u8; 10], i64)>);

/// [`sandbox_row`], borrowing its strings from the fields.
fn sandbox_fields<'f, S: AsRef<str>>(
    f: &'f [S],
    line_no: i64,
    currencies: &mut LastCurrency,
    days: &mut LastDay,
) -> Result<RowRef<'f>, String> {
    if f.len() != 9 {
        return Err(format!("expected 9 fields, found {}", f.len()));
    }
    let f = |i: usize| f[i].as_ref();
    let kind = match f(0) {
        "payment" => RowKind::Payment,
        "refund" => RowKind::Refund,
        other => return Err(format!("unknown kind {other:?}")),
    };
    let currency = currencies.parse(f(7))?;
    let money = money(f(6), currency)?;
    let occurred_at = match trimmed(f(8)) {
        "" => None,
        t => Some(match utc_micros(t, days) {
            Some(micros) => micros,
            None => t
                .parse::<jiff::Timestamp>()
                .map_err(|e| format!("occurred_at {t:?}: {e}"))?
                .as_microsecond(),
        }),
    };
    Ok(RowRef {
        line_no,
        kind,
        provider_txn_id: opt_ref(f(1)),
        payment_no: opt_ref(f(2)),
        provider_refund_id: opt_ref(f(3)),
        refund_no: opt_ref(f(4)),
        money,
        status: trimmed(f(5)),
        occurred_at,
    })
}

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
    Reader {
        format,
        reader,
        buf: Vec::new(),
        line: 0,
        state: State::default(),
        done: false,
        tolerance,
        skipped: 0,
        currency: LastCurrency::default(),
        days: LastDay::default(),
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

#[derive(Default)]
struct State {
    header: Option<Vec<String>>,
    rows: i64,
    payment_rows: i64,
    refund_rows: i64,
    /// Sums in minor units, as the format's summary states them.
    sum_a: i64,
    sum_b: i64,
    checks: Vec<Check>,
    /// WeChat: the summary header was seen; the next line is the summary.
    in_summary: bool,
    summary_seen: bool,
}

pub struct Reader<'r> {
    format: Format,
    reader: Box<dyn BufRead + Send + 'r>,
    buf: Vec<u8>,
    line: u64,
    state: State,
    done: bool,
    tolerance: u32,
    skipped: u32,
    currency: LastCurrency,
    days: LastDay,
}

/// What one line gave.
enum Line {
    Row,
    Skipped(ParseError),
    End(Vec<Check>),
}

impl Reader<'_> {
    /// Reads rows into `rows` — put there as they are made, not handed
    /// over one by one (moving each row out through an iterator cost an
    /// eighth of the parse: a million rows 260–271 → 229–233 ms) — until it holds `limit`, a malformed line is
    /// skipped under the accepted tolerance, or the statement ends. After
    /// the end or an error it reads nothing more: `End` with no checks.
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
    /// the file ends without a newline) is put together in `raw`.
    /// (Copying every line out was a fourteenth of the reader's time, by
    /// perf.)
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

    fn unreadable(&mut self, e: std::io::Error) -> ParseError {
        self.done = true;
        self.error(format!("cannot read: {e}"))
    }

    /// What one line gives: a row, a line skipped, or an error; `None`
    /// for a line with no row (blank, a header, a comment, a summary).
    fn line_of(&mut self, raw: &[u8], rows: &mut Chunk) -> Option<Result<Line, ParseError>> {
        self.line += 1;
        let text = match self.decode(raw) {
            Ok(t) => t,
            Err(reason) => {
                self.done = true;
                return Some(Err(self.error(reason)));
            }
        };
        // The line's end, found by bytes (character searches, this one and
        // the amount's point, were a thirtieth of the parse by callgrind);
        // both are ASCII, so what is left ends on a character boundary.
        let kept = text
            .bytes()
            .rposition(|b| b != b'\r' && b != b'\n')
            .map_or(0, |at| at + 1);
        let text = &text[..kept];
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        if trimmed(text).is_empty() {
            return None;
        }
        let pushed = |row: Option<StatementRow>, rows: &mut Chunk| match row {
            Some(row) => {
                rows.push(row.borrowed());
                true
            }
            None => false,
        };
        let result = match self.format {
            Format::Sandbox => self.sandbox(text, rows),
            Format::WechatAll => self.wechat(text).map(|r| pushed(r, rows)),
            Format::AlipayDetail => self.alipay(text).map(|r| pushed(r, rows)),
            Format::StripeItemized => self.stripe(text).map(|r| pushed(r, rows)),
        };
        match result {
            Ok(true) => Some(Ok(Line::Row)),
            Ok(false) => None,
            // A bad row line, within the accepted tolerance.
            Err(reason)
                if self.skipped < self.tolerance
                    && self.state.header.is_some()
                    && !self.state.summary_seen
                    && !self.state.in_summary =>
            {
                self.skipped += 1;
                Some(Ok(Line::Skipped(self.error(reason))))
            }
            Err(reason) => {
                self.done = true;
                Some(Err(self.error(reason)))
            }
        }
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.ffffff]Z` (RFC 3339 in UTC, at most
/// microseconds) → microseconds since the epoch, without jiff's general
/// parser: a statement has a million of them. Anything else — offsets,
/// finer fractions, leap seconds, other shapes, far years — is `None`, for
/// jiff to read or refuse.
fn utc_micros(t: &str, last: &mut LastDay) -> Option<i64> {
    let b = t.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[b.len() - 1] != b'Z'
    {
        return None;
    }
    let number = |digits: &[u8]| {
        digits.iter().try_fold(0i64, |n, d| {
            d.is_ascii_digit().then(|| n * 10 + i64::from(d - b'0'))
        })
    };
    let date: [u8; 10] = b[..10].try_into().ok()?;
    let days = match last.0 {
        Some((seen, days)) if seen == date => days,
        _ => {
            let days = days_since_epoch(number(&b[0..4])?, number(&b[5..7])?, number(&b[8..10])?)?;
            last.0 = Some((date, days));
            days
        }
    };
    let (hour, minute, second) = (
        number(&b[11..13])?,
        number(&b[14..16])?,
        number(&b[17..19])?,
    );
    let micros = match &b[19..b.len() - 1] {
        [] => 0,
        [b'.', digits @ ..] if (1..=6).contains(&digits.len()) => {
            number(digits)? * 10i64.pow(6 - digits.len() as u32)
        }
        _ => return None,
    };
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    Some((days * 86_400 + hour * 3_600 + minute * 60 + second) * 1_000_000 + micros)
}

/// Days since 1970-01-01 of a proleptic Gregorian date in years 1–9998;
/// `None` for a date that is not one.
fn days_since_epoch(year: i64, month: i64, day: i64) -> Option<i64> {
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days_in_month = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if !(1..=9998).contains(&year)
        || !(1..=12).contains(&month)
        || !(1..=days_in_month).contains(&day)
    {
        return None;
    }
    // Years counted from March, so the leap day ends one.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    Some(era * 146_097 + day_of_era - 719_468)
}

fn money(text: &str, currency: Currency) -> Result<Money, String> {
    let t = trimmed(text);
    let t = t.strip_prefix('-').unwrap_or(t);
    Money::parse_major(t, currency).map_err(|e| format!("amount {text:?}: {e}"))
}

/// A running total plus a row's amount, or why the line is refused.
fn add(sum: i64, minor: i64) -> Result<i64, String> {
    sum.checked_add(minor)
        .ok_or_else(|| "the amounts add up to more than a statement total can hold".into())
}

fn cny() -> Currency {
    Currency::parse("CNY").expect("CNY is known")
}

/// `yyyy-MM-dd HH:mm:ss` at a fixed offset (hours) → microseconds UTC.
fn local_time(text: &str, offset_hours: i8) -> Option<i64> {
    let dt: jiff::civil::DateTime = text.trim().replace(' ', "T").parse().ok()?;
    let zoned = dt
        .to_zoned(jiff::tz::TimeZone::fixed(jiff::tz::offset(offset_hours)))
        .ok()?;
    Some(zoned.timestamp().as_microsecond())
}

fn opt(s: &str) -> Option<String> {
    opt_ref(s).map(str::to_owned)
}

/// A field, trimmed; `None` when that leaves nothing.
fn opt_ref(s: &str) -> Option<&str> {
    let t = trimmed(s);
    (!t.is_empty()).then_some(t)
}

impl Reader<'_> {
    fn error(&self, reason: String) -> ParseError {
        ParseError {
            line: self.line,
            reason,
        }
    }

    fn decode<'b>(&self, raw: &'b [u8]) -> Result<std::borrow::Cow<'b, str>, String> {
        // UTF-8 after the first line (where a byte-order mark may say
        // otherwise) is only checked, not copied.
        if self.format != Format::AlipayDetail && self.line > 1 {
            // Most lines are ASCII, which a word-at-a-time check tells
            // quicker than UTF-8 validation (a sixteenth of the parse).
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
        let encoding = if self.format == Format::AlipayDetail {
            encoding_rs::GBK
        } else {
            encoding_rs::UTF_8
        };
        let (text, _, bad) = encoding.decode(raw);
        if bad {
            return Err(format!("not valid {}", encoding.name()));
        }
        Ok(text)
    }

    fn finish(&mut self) -> Result<Vec<Check>, ParseError> {
        let s = &mut self.state;
        if s.header.is_none() {
            return Err(self.error("no header line: not a statement of this kind".into()));
        }
        // Stripe's reports carry no totals of their own: nothing to check.
        if !s.summary_seen && self.format != Format::StripeItemized {
            return Err(self
                .error("no summary: the statement is incomplete (its totals are missing)".into()));
        }
        let skipped = i64::from(self.skipped);
        let mut checks = std::mem::take(&mut self.state.checks);
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

    fn check(&mut self, what: &str, stated: i64, read: i64) {
        self.state.checks.push(Check {
            what: what.into(),
            stated,
            read,
            waived: None,
        });
    }

    /// `kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at`,
    /// then `#summary,rows=N,total_minor=M`.
    fn sandbox(&mut self, text: &str, out: &mut Chunk) -> Result<bool, String> {
        const HEADER: &str =
            "kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at";
        if self.state.header.is_none() {
            if text.trim() != HEADER {
                return Err(format!("expected the header {HEADER}"));
            }
            self.state.header = Some(split_csv(text));
            return Ok(false);
        }
        if let Some(rest) = text.strip_prefix("#summary,") {
            let mut rows = None;
            let mut total = None;
            for part in rest.split(',') {
                match part.trim().split_once('=') {
                    Some(("rows", n)) => rows = n.parse::<i64>().ok(),
                    Some(("total_minor", n)) => total = n.parse::<i64>().ok(),
                    _ => return Err(format!("unreadable summary part {part:?}")),
                }
            }
            let (Some(rows), Some(total)) = (rows, total) else {
                return Err("the summary needs rows= and total_minor=".into());
            };
            let (read_rows, read_total) = (self.state.rows, self.state.sum_a);
            self.check("rows", rows, read_rows);
            self.check("total_minor", total, read_total);
            self.state.summary_seen = true;
            return Ok(false);
        }
        if self.state.summary_seen {
            return Err("a row after the summary".into());
        }
        // Quotes are rare in these files: split in place (no allocation
        // for a row) unless there are some. The commas — and a quote, if
        // any — are found in one pass over the line ([`separators`]).
        let mut fields = [""; 9];
        let mut n = 0;
        let mut from = 0;
        let mut quoted = false;
        for at in separators(text.as_bytes()) {
            if text.as_bytes()[at] == b'"' {
                quoted = true;
                break;
            }
            if let Some(field) = fields.get_mut(n) {
                // A comma is one byte of UTF-8: both ends are char
                // boundaries.
                *field = &text[from..at];
            }
            n += 1;
            from = at + 1;
        }
        let unquoted;
        let row = if quoted {
            unquoted = split_csv(text);
            sandbox_fields(
                &unquoted,
                self.line as i64,
                &mut self.currency,
                &mut self.days,
            )?
        } else {
            if let Some(field) = fields.get_mut(n) {
                *field = &text[from..];
            }
            n += 1;
            if n != 9 {
                return Err(format!("expected 9 fields, found {n}"));
            }
            sandbox_fields(
                &fields,
                self.line as i64,
                &mut self.currency,
                &mut self.days,
            )?
        };
        // Checked: a sum past i64 panicked with overflow checks and wrapped
        // without (where it could agree with a stated total).
        self.state.sum_a = add(self.state.sum_a, row.money.minor)?;
        out.push(row);
        self.state.rows += 1;
        Ok(true)
    }

    /// WeChat Pay's ALL bill: every field prefixed with a backtick; rows,
    /// then `总交易单数,…` and one summary row.
    fn wechat(&mut self, text: &str) -> Result<Option<StatementRow>, String> {
        // Every value starts with a backtick, and values are not quoted: a
        // comma inside one (a product name) is told apart from a separator
        // by the backtick that follows a separator.
        let f: Vec<String> = if let Some(rest) = text.trim_start().strip_prefix('`') {
            rest.split(",`").map(|v| v.trim().to_owned()).collect()
        } else {
            split_csv(text)
                .into_iter()
                .map(|v| v.trim().to_owned())
                .collect()
        };
        if self.state.header.is_none() {
            if f.first().map(String::as_str) != Some("交易时间") || f.len() < 27 {
                return Err("expected the WeChat Pay bill header (交易时间,公众账号ID,…)".into());
            }
            self.state.header = Some(f);
            return Ok(None);
        }
        if f.first().map(String::as_str) == Some("总交易单数") {
            self.state.in_summary = true;
            return Ok(None);
        }
        if self.state.in_summary {
            if f.len() < 3 {
                return Err("unreadable summary row".into());
            }
            let count: i64 = f[0]
                .parse()
                .map_err(|_| format!("总交易单数 {:?} is not a number", f[0]))?;
            let settled = money(&f[1], cny())?.minor;
            let refunded = money(&f[2], cny())?.minor;
            let (rows, a, b) = (self.state.rows, self.state.sum_a, self.state.sum_b);
            self.check("总交易单数 (rows)", count, rows);
            self.check("应结订单总金额 (minor)", settled, a);
            self.check("退款总金额 (minor)", refunded, b);
            self.state.in_summary = false;
            self.state.summary_seen = true;
            return Ok(None);
        }
        if self.state.summary_seen {
            return Err("a row after the summary".into());
        }
        if f.len() < 27 {
            return Err(format!("expected 27 fields, found {}", f.len()));
        }
        let currency = Currency::parse(if f[11].is_empty() { "CNY" } else { &f[11] })
            .map_err(|e| e.to_string())?;
        let settle = money(&f[12], currency)?;
        let refund_amount = if f[16].is_empty() {
            Money::new(0, currency)
        } else {
            money(&f[16], currency)?
        };
        // Checked, as the sandbox's: no sum that wraps.
        let sum_a = add(self.state.sum_a, settle.minor)?;
        self.state.sum_b = add(self.state.sum_b, refund_amount.minor)?;
        self.state.sum_a = sum_a;
        self.state.rows += 1;
        let occurred_at = local_time(&f[0], 8);
        let state = f[9].as_str();
        let row = if state == "REFUND" {
            StatementRow {
                line_no: self.line as i64,
                kind: RowKind::Refund,
                provider_txn_id: opt(&f[5]),
                payment_no: opt(&f[6]),
                provider_refund_id: opt(&f[14]),
                refund_no: opt(&f[15]),
                money: refund_amount,
                status: if f[19] == "SUCCESS" {
                    "SUCCEEDED".into()
                } else {
                    f[19].clone()
                },
                occurred_at,
            }
        } else {
            StatementRow {
                line_no: self.line as i64,
                kind: RowKind::Payment,
                provider_txn_id: opt(&f[5]),
                payment_no: opt(&f[6]),
                provider_refund_id: None,
                refund_no: None,
                // 订单金额: what the order cost, before vouchers.
                money: money(&f[24], currency)?,
                status: if state == "SUCCESS" {
                    "SUCCEEDED".into()
                } else {
                    state.to_owned()
                },
                occurred_at,
            }
        };
        Ok(Some(row))
    }

    /// Stripe's itemized payout reconciliation: a header naming the
    /// columns (read by name, so added columns do no harm), decimal major
    /// units, refunds negative; `charge` and `refund` rows are payments and
    /// refunds, the other categories (fees, payouts, adjustments) are not
    /// Reckon's business. Reckon's payment_no and refund_no come from the
    /// metadata columns Reckon sets (`payment_metadata[payment_no]`,
    /// `refund_metadata[refund_no]`) when the report includes them.
    fn stripe(&mut self, text: &str) -> Result<Option<StatementRow>, String> {
        let f = split_csv(text);
        let Some(header) = &self.state.header else {
            for needed in [
                "balance_transaction_id",
                "currency",
                "gross",
                "reporting_category",
                "payment_intent_id",
            ] {
                if !f.iter().any(|h| h == needed) {
                    return Err(format!(
                        "expected the Stripe itemized report header (missing {needed})"
                    ));
                }
            }
            self.state.header = Some(f);
            return Ok(None);
        };
        if f.len() != header.len() {
            return Err(format!(
                "expected {} fields, found {}",
                header.len(),
                f.len()
            ));
        }
        let get = |name: &str| -> String {
            header
                .iter()
                .position(|h| h == name)
                .map(|i| f[i].trim().to_owned())
                .unwrap_or_default()
        };
        let kind = match get("reporting_category").as_str() {
            "charge" => RowKind::Payment,
            "refund" => RowKind::Refund,
            _ => return Ok(None),
        };
        let currency =
            Currency::parse(&get("currency").to_ascii_uppercase()).map_err(|e| e.to_string())?;
        let money = money(&get("gross"), currency)?;
        let created = get("created_utc");
        let created = if created.is_empty() {
            get("created")
        } else {
            created
        };
        self.state.rows += 1;
        let is_refund = kind == RowKind::Refund;
        Ok(Some(StatementRow {
            line_no: self.line as i64,
            kind,
            provider_txn_id: opt(&get("payment_intent_id")),
            payment_no: opt(&get("payment_metadata[payment_no]")),
            refund_no: if is_refund {
                opt(&get("refund_metadata[refund_no]"))
            } else {
                None
            },
            provider_refund_id: if is_refund {
                opt(&get("source_id"))
            } else {
                None
            },
            money,
            status: "SUCCEEDED".into(),
            occurred_at: local_time(&created, 0),
        }))
    }

    /// Alipay 业务明细: `#` lines around the table, a header, rows whose
    /// ids may end in a tab, refunds as 退款 with negative amounts, and
    /// `#交易合计：N笔` / `#退款合计：M笔` totals.
    fn alipay(&mut self, text: &str) -> Result<Option<StatementRow>, String> {
        if let Some(comment) = text.strip_prefix('#') {
            let count = |prefix: &str| -> Option<i64> {
                let rest = comment.trim().strip_prefix(prefix)?;
                let rest = rest.trim_start_matches([':', '：']);
                let n: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
                n.parse().ok()
            };
            if let Some(n) = count("交易合计") {
                let read = self.state.payment_rows;
                self.check("交易合计 (payment rows)", n, read);
                self.state.summary_seen = true;
            } else if let Some(n) = count("退款合计") {
                let read = self.state.refund_rows;
                self.check("退款合计 (refund rows)", n, read);
            }
            return Ok(None);
        }
        let f: Vec<String> = split_csv(text)
            .into_iter()
            .map(|v| v.trim_matches(|c: char| c.is_whitespace()).to_owned())
            .collect();
        if self.state.header.is_none() {
            if f.first().map(String::as_str) != Some("支付宝交易号") || f.len() < 25 {
                return Err(
                    "expected the Alipay header (支付宝交易号,商户订单号,业务类型,…)".into(),
                );
            }
            self.state.header = Some(f);
            return Ok(None);
        }
        if self.state.summary_seen {
            return Err("a row after the totals".into());
        }
        if f.len() < 25 {
            return Err(format!("expected 25 fields, found {}", f.len()));
        }
        let amount = money(&f[11], cny())?;
        let occurred_at = local_time(&f[5], 8).or_else(|| local_time(&f[4], 8));
        let row = match f[2].as_str() {
            "交易" => {
                self.state.payment_rows += 1;
                StatementRow {
                    line_no: self.line as i64,
                    kind: RowKind::Payment,
                    provider_txn_id: opt(&f[0]),
                    payment_no: opt(&f[1]),
                    provider_refund_id: None,
                    refund_no: None,
                    money: amount,
                    status: "SUCCEEDED".into(),
                    occurred_at,
                }
            }
            "退款" => {
                self.state.refund_rows += 1;
                StatementRow {
                    line_no: self.line as i64,
                    kind: RowKind::Refund,
                    provider_txn_id: opt(&f[0]),
                    payment_no: opt(&f[1]),
                    provider_refund_id: None,
                    refund_no: opt(&f[21]),
                    money: amount,
                    status: "SUCCEEDED".into(),
                    occurred_at,
                }
            }
            other => return Err(format!("unknown 业务类型 {other:?}")),
        };
        self.state.rows += 1;
        Ok(Some(row))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators_are_every_comma_and_quote_in_order() {
        // Lines of every length up to 40 from a few bytes (commas, quotes,
        // letters, and a three-byte character), against a plain search.
        let alphabet: [&[u8]; 5] = [b",", b"\"", b"a", b"Z", "商".as_bytes()];
        let mut seed = 7u32;
        for len in 0..=40 {
            for _ in 0..50 {
                let mut line = Vec::new();
                while line.len() < len {
                    seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    line.extend_from_slice(alphabet[(seed >> 16) as usize % alphabet.len()]);
                }
                let expected: Vec<usize> = line
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| matches!(b, b',' | b'"'))
                    .map(|(i, _)| i)
                    .collect();
                assert_eq!(separators(&line).collect::<Vec<_>>(), expected, "{line:?}");
            }
        }
        assert_eq!(separators(b"").next(), None);
        assert_eq!(
            separators(b",,,,,,,,,").collect::<Vec<_>>(),
            (0..9).collect::<Vec<_>>()
        );
        // Bytes one off a comma or a quote (and bytes with the high bit
        // set) are not taken for one.
        let near: Vec<u8> = (0..=255u8).filter(|b| !matches!(b, b',' | b'"')).collect();
        assert_eq!(separators(&near).next(), None);
        // The word-at-a-time test (used where SSE2 is not), byte by byte.
        for b in 0..=255u8 {
            let word = u64::from_le_bytes([b, b',', 0, b'"', 0xff, b, 0x2d, 0x2b]);
            let expected = u64::from_le_bytes([
                if b == b',' { 0x80 } else { 0 },
                0x80,
                0,
                0,
                0,
                if b == b',' { 0x80 } else { 0 },
                0,
                0,
            ]);
            assert_eq!(byte_is(word, b','), expected, "{b}");
        }
    }

    fn all(format: Format, bytes: &[u8]) -> Result<(Vec<StatementRow>, Vec<Check>), ParseError> {
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

    /// The quick reading of a UTC time agrees with jiff's wherever it
    /// reads one, and leaves to jiff what it does not.
    #[test]
    fn utc_times_read_quickly_as_jiff_reads_them() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        let mut texts: Vec<String> = [
            "2024-02-29T12:00:00Z",
            "2023-02-29T12:00:00Z",
            "2000-02-29T00:00:00Z",
            "1900-02-29T00:00:00Z",
            "1969-12-31T23:59:59.999999Z",
            "1970-01-01T00:00:00Z",
            "2026-11-30T23:59:59.5Z",
            "2026-11-30T24:00:00Z",
            "2026-11-30T23:60:00Z",
            "2026-11-30T23:59:60Z",
            "2026-13-01T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-00-10T00:00:00Z",
            "2026-11-00T00:00:00Z",
            "2026-11-30T10:00:00.1234567Z",
            "2026-11-30T10:00:00.Z",
            "2026-11-30T10:00:00+08:00",
            "2026-11-30 10:00:00Z",
            "2026-11-30t10:00:00z",
            "0001-01-01T00:00:00Z",
            "9999-12-30T00:00:00Z",
            "20x6-11-30T10:00:00Z",
            "2026-1a-30T10:00:00Z",
        ]
        .map(String::from)
        .to_vec();
        for _ in 0..20_000 {
            let fraction = match next(4) {
                0 => String::new(),
                _ => format!(".{:0w$}", next(1_000_000), w = 1 + next(6) as usize),
            };
            texts.push(format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{fraction}Z",
                1 + next(9998),
                1 + next(12),
                1 + next(31),
                next(24),
                next(60),
                next(60)
            ));
        }
        // Each read alone, and all in turn with the last date kept (the
        // reader's way): the same answers.
        let mut quick = 0;
        let mut last = LastDay::default();
        for t in &texts {
            let jiff = t
                .parse::<jiff::Timestamp>()
                .ok()
                .map(|ts| ts.as_microsecond());
            let alone = utc_micros(t, &mut LastDay::default());
            assert_eq!(utc_micros(t, &mut last), alone, "{t}");
            if let Some(micros) = alone {
                quick += 1;
                assert_eq!(Some(micros), jiff, "{t}");
            }
        }
        assert!(quick > 15_000, "{quick} read quickly");
        let mut last = LastDay::default();
        for t in [
            "2026-11-30T10:00:00+08:00",
            "2026-11-30T10:00:00.1234567Z",
            "2023-02-29T12:00:00Z",
        ] {
            assert_eq!(utc_micros(t, &mut last), None, "{t}");
        }
        // A date kept from one row does not vouch for another row's time.
        assert_eq!(
            utc_micros("2026-11-30T23:59:59.5Z", &mut last),
            Some(1_796_083_199_500_000)
        );
        for t in [
            "2026-11-30T24:00:00Z",
            "2026-11-30T10:60:00Z",
            "2026-11-30T1x:00:00Z",
        ] {
            assert_eq!(utc_micros(t, &mut last), None, "{t}");
        }
        assert_eq!(
            utc_micros("2026-12-01T00:00:00Z", &mut last),
            Some(1_796_083_200_000_000)
        );
    }

    #[test]
    fn csv_lines_split_with_quotes() {
        assert_eq!(
            split_csv(r#"a,"b,c","d""e",,f"#),
            ["a", "b,c", "d\"e", "", "f"]
        );
    }

    const WECHAT: &str = "交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,应结订单金额,代金券金额,微信退款单号,商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,费率备注\n\
`2026-11-30 10:00:01,`wx01,`1900000001,`0,`,`4200001,`PAYA,`oUser,`NATIVE,`SUCCESS,`OTHERS,`CNY,`199.00,`0.00,`0,`0,`0.00,`0.00,`,`,`T恤, 白色,`,`1.19,`0.60%,`199.00,`0.00,`\n\
`2026-11-30 11:00:00,`wx01,`1900000001,`0,`,`4200001,`PAYA,`oUser,`NATIVE,`REFUND,`OTHERS,`CNY,`0.00,`0.00,`50300001,`RFDA,`50.00,`0.00,`ORIGINAL,`SUCCESS,`T恤,`,`-0.30,`0.60%,`0.00,`50.00,`\n\
总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额\n\
`2,`199.00,`50.00,`0.00,`0.89,`199.00,`50.00\n";

    #[test]
    fn a_wechat_bill_reads_backticked_fields_payments_refunds_and_its_summary() {
        let (rows, checks) = all(Format::WechatAll, WECHAT.as_bytes()).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].kind, RowKind::Payment);
        assert_eq!(rows[0].provider_txn_id.as_deref(), Some("4200001"));
        assert_eq!(rows[0].payment_no.as_deref(), Some("PAYA"));
        assert_eq!(rows[0].money.minor, 19900);
        assert_eq!(rows[0].status, "SUCCEEDED");
        assert_eq!(rows[1].kind, RowKind::Refund);
        assert_eq!(rows[1].refund_no.as_deref(), Some("RFDA"));
        assert_eq!(rows[1].money.minor, 5000);
        assert!(checks.iter().all(|c| c.stated == c.read), "{checks:?}");
        // A bill whose summary disagrees with its rows.
        let short = WECHAT.replace("`2,`199.00", "`3,`199.00");
        let (_, checks) = all(Format::WechatAll, short.as_bytes()).unwrap();
        assert!(checks.iter().any(|c| c.stated == 3 && c.read == 2));
        // Cut before the summary: incomplete.
        let cut: String = WECHAT.lines().take(3).map(|l| format!("{l}\n")).collect();
        let err = all(Format::WechatAll, cut.as_bytes()).unwrap_err();
        assert!(err.reason.contains("no summary"), "{err}");
        // A malformed amount names its line.
        let bad = WECHAT.replace("`199.00,`0.00,`0,`0", "`19x.00,`0.00,`0,`0");
        let err = all(Format::WechatAll, bad.as_bytes()).unwrap_err();
        assert_eq!(err.line, 2, "{err}");
    }

    fn alipay_bytes() -> Vec<u8> {
        let text = "#支付宝业务明细查询\n#账号：[20880000000000010156]\n#起始日期：[2026年11月30日 00:00:00]   终止日期：[2026年12月01日 00:00:00]\n#-----------------------------------------业务明细列表----------------------------------------\n\
支付宝交易号,商户订单号,业务类型,商品名称,创建时间,完成时间,门店编号,门店名称,操作员,终端号,对方账户,订单金额（元）,商家实收（元）,支付宝红包（元）,集分宝（元）,支付宝优惠（元）,商家优惠（元）,券核销金额（元）,券名称,商家红包消费金额（元）,卡消费金额（元）,退款批次号/请求号,服务费（元）,分润（元）,备注\n\
2026113022001\t,PAYB\t,交易,测试商品,2026-11-30 09:00:00,2026-11-30 09:00:05,,,,,张*(a***@x.com),88.88,88.88,0.00,0.00,0.00,0.00,0.00,,0.00,0.00,,-0.53,0.00,\n\
2026113022001\t,PAYB\t,退款,测试商品,2026-11-30 12:00:00,2026-11-30 12:00:01,,,,,张*(a***@x.com),-20.00,-20.00,0.00,0.00,0.00,0.00,0.00,,0.00,0.00,RFDB\t,0.12,0.00,\n\
#-----------------------------------------业务明细列表结束------------------------------------\n\
#交易合计：1笔，商家实收共88.88元，商家优惠共0.00元\n#退款合计：1笔，商家实收退款共-20.00元\n#导出时间：[2026年12月01日 09:00:00]\n";
        encoding_rs::GBK.encode(text).0.into_owned()
    }

    #[test]
    fn an_alipay_detail_reads_gbk_trailing_tabs_negative_refunds_and_totals() {
        let (rows, checks) = all(Format::AlipayDetail, &alipay_bytes()).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].provider_txn_id.as_deref(), Some("2026113022001"));
        assert_eq!(rows[0].payment_no.as_deref(), Some("PAYB"));
        assert_eq!(rows[0].money.minor, 8888);
        assert_eq!(rows[1].kind, RowKind::Refund);
        assert_eq!(
            rows[1].money.minor, 2000,
            "refunds are negative in the file"
        );
        assert_eq!(rows[1].refund_no.as_deref(), Some("RFDB"));
        assert_eq!(checks.len(), 2);
        assert!(checks.iter().all(|c| c.stated == c.read), "{checks:?}");
        // The same file as UTF-8 is not what Alipay sends.
        let utf8 = encoding_rs::GBK.decode(&alipay_bytes()).0.into_owned();
        assert!(all(Format::AlipayDetail, utf8.as_bytes()).is_err());
    }

    #[test]
    fn a_stripe_itemized_report_reads_charges_and_refunds_by_column_name() {
        let text = "automatic_payout_id,balance_transaction_id,created_utc,available_on_utc,currency,gross,fee,net,reporting_category,source_id,description,charge_id,payment_intent_id,payment_metadata[payment_no],refund_metadata[refund_no]\n\
po_1,txn_1,2026-11-30 10:00:00,2026-12-02 00:00:00,eur,42.00,1.47,40.53,charge,ch_1,\"Order, blue\",ch_1,pi_1,PAYS,\n\
po_1,txn_2,2026-11-30 12:00:00,2026-12-02 00:00:00,eur,-12.00,0.00,-12.00,refund,re_1,,ch_1,pi_1,,RFDS\n\
po_1,txn_3,2026-11-30 12:00:00,2026-12-02 00:00:00,eur,-1.47,0.00,-1.47,fee,,Stripe fee,,,,\n";
        let (rows, checks) = all(Format::StripeItemized, text.as_bytes()).unwrap();
        assert!(checks.is_empty(), "Stripe states no totals");
        assert_eq!(rows.len(), 2, "the fee row is not a payment");
        assert_eq!(rows[0].provider_txn_id.as_deref(), Some("pi_1"));
        assert_eq!(rows[0].payment_no.as_deref(), Some("PAYS"));
        assert_eq!(rows[0].money.minor, 4200);
        assert_eq!(rows[0].money.currency.code(), "EUR");
        assert_eq!(rows[1].kind, RowKind::Refund);
        assert_eq!(rows[1].money.minor, 1200);
        assert_eq!(rows[1].provider_refund_id.as_deref(), Some("re_1"));
        assert_eq!(rows[1].refund_no.as_deref(), Some("RFDS"));
        let bad = text.replace("42.00", "4x.00");
        assert_eq!(
            all(Format::StripeItemized, bad.as_bytes())
                .unwrap_err()
                .line,
            2
        );
    }

    /// Amounts whose sum passes i64 panicked (overflow checks) or wrapped;
    /// the line that passes it is refused. fuzz/corpus/statement_sandbox/
    /// crash-sum-overflow is the sandbox case.
    #[test]
    fn amounts_that_sum_past_i64_refuse_their_line() {
        let sandbox = "kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at\n\
payment,SBX1,PAY1,,,SUCCEEDED,92233720368547758.07,USD,2026-11-30T10:00:00Z\n\
payment,SBX2,PAY2,,,SUCCEEDED,0.01,USD,2026-11-30T10:00:00Z\n\
#summary,rows=2,total_minor=-9223372036854775808\n";
        let err = all(Format::Sandbox, sandbox.as_bytes()).unwrap_err();
        assert_eq!(err.line, 3, "{err}");
        assert!(err.reason.contains("add up"), "{err}");
        let big = "`92233720368547758.07,`0.00,`0,`0,`0.00";
        let wechat = WECHAT
            .replacen("`199.00,`0.00,`0,`0,`0.00", big, 1)
            .replacen("`0.00,`0.00,`50300001", "`0.01,`0.00,`50300001", 1);
        let err = all(Format::WechatAll, wechat.as_bytes()).unwrap_err();
        assert_eq!(err.line, 3, "{err}");
    }

    #[test]
    fn the_sandbox_csv_and_its_summary() {
        let text = "kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at\n\
payment,SBX1,PAY1,,,SUCCEEDED,10.00,USD,2026-11-30T10:00:00Z\n\
refund,SBX1,PAY1,SBXR1,RFD1,SUCCEEDED,2.50,USD,2026-11-30T11:00:00Z\n\
#summary,rows=2,total_minor=1250\n";
        let (rows, checks) = all(Format::Sandbox, text.as_bytes()).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].money.minor, 250);
        assert!(checks.iter().all(|c| c.stated == c.read));
        let err = all(Format::Sandbox, b"kind,txn_id\n").unwrap_err();
        assert_eq!(err.line, 1);
        // Fields split at every comma: empty ones kept (the last one too),
        // one too few or too many refused with the count found.
        let header =
            "kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at\n";
        let with = |line: &str| format!("{header}{line}\n#summary,rows=1,total_minor=100\n");
        let (rows, _) = all(
            Format::Sandbox,
            with("payment,,PAY2,,,SUCCEEDED,1.00,USD,").as_bytes(),
        )
        .unwrap();
        assert_eq!(rows[0].provider_txn_id, None);
        assert_eq!(rows[0].payment_no.as_deref(), Some("PAY2"));
        assert_eq!(rows[0].occurred_at, None);
        for (line, found) in [
            ("payment,SBX2,PAY2,,,SUCCEEDED,1.00,USD", 8),
            ("payment,SBX2,PAY2,,,SUCCEEDED,1.00,USD,,", 10),
            (
                "payment,SBX2,PAY2,,,SUCCEEDED,1.00,USD,2026-11-30T10:00:00Z,x,y",
                11,
            ),
        ] {
            let err = all(Format::Sandbox, with(line).as_bytes()).unwrap_err();
            assert_eq!(
                (err.line, err.reason),
                (2, format!("expected 9 fields, found {found}"))
            );
        }
        // A quote anywhere in the line: read as CSV, commas inside quotes
        // kept, fields counted after unquoting.
        let (rows, _) = all(
            Format::Sandbox,
            with("payment,\"SBX,3\",PAY3,,,SUCCEEDED,1.00,USD,\"2026-11-30T10:00:00Z\"").as_bytes(),
        )
        .unwrap();
        assert_eq!(rows[0].provider_txn_id.as_deref(), Some("SBX,3"));
        assert_eq!(rows[0].occurred_at, Some(1_796_032_800_000_000));
        let err = all(
            Format::Sandbox,
            with("payment,SBX3,PAY3,,,SUCCEEDED,1.00,USD,x,\"y,z\"").as_bytes(),
        )
        .unwrap_err();
        assert_eq!(err.reason, "expected 9 fields, found 10");
    }

    /// Lines are read where the input's buffer holds them whole, and put
    /// together where they run past its end or the file ends without a
    /// newline: the same rows, line numbers and checks either way, in
    /// chunks of any size.
    #[test]
    fn each_rows_currency_is_its_own_when_the_row_before_had_another() {
        // The reader keeps the last row's currency for a code spelled the
        // same: one spelled otherwise, or unknown, is parsed afresh.
        let header =
            "kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at\r\n";
        let lines = [
            "payment,SBX1,PAY1,,,SUCCEEDED,1.00,CNY,",
            "payment,SBX2,PAY2,,,SUCCEEDED,1.00,CNY,",
            "payment,SBX3,PAY3,,,SUCCEEDED,1,JPY,",
            "payment,SBX4,PAY4,,,SUCCEEDED,1.00,cny,",
            "payment,SBX5,PAY5,,,SUCCEEDED,1.000,KWD,",
            "payment,SBX6,PAY6,,,SUCCEEDED,1.00, USD ,",
        ];
        let text = format!(
            "{header}{}\r\n#summary,rows=6,total_minor=1401\r\n",
            lines.join("\r\n")
        );
        let (rows, checks) = all(Format::Sandbox, text.as_bytes()).unwrap();
        let read: Vec<(&str, i64)> = rows
            .iter()
            .map(|r| (r.money.currency.code(), r.money.minor))
            .collect();
        assert_eq!(
            read,
            [
                ("CNY", 100),
                ("CNY", 100),
                ("JPY", 1),
                ("CNY", 100),
                ("KWD", 1000),
                ("USD", 100)
            ]
        );
        assert!(checks.iter().all(|c| c.stated == c.read), "{checks:?}");
        let unknown = format!(
            "{header}{}\npayment,SBX7,PAY7,,,SUCCEEDED,1.00,CNX,\n",
            lines[0]
        );
        let err = all(Format::Sandbox, unknown.as_bytes()).unwrap_err();
        assert_eq!(err.line, 3, "{err:?}");
        assert!(err.reason.contains("CNX"), "{err:?}");
        // A line that is not UTF-8 is refused with its number.
        let mut bytes = format!("{header}{}\n", lines[0]).into_bytes();
        bytes.extend_from_slice(b"payment,SBX\xff8,PAY8,,,SUCCEEDED,1.00,CNY,\n");
        let err = all(Format::Sandbox, &bytes).unwrap_err();
        assert_eq!((err.line, err.reason.as_str()), (3, "not valid UTF-8"));
    }

    #[test]
    fn lines_across_the_buffer_read_as_lines_within_it() {
        let mut text = String::from(
            "kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at\r\n\n",
        );
        let mut total = 0;
        for i in 0..40 {
            let minor = 100 + i * 37;
            total += minor;
            text.push_str(&format!(
                "payment,SBX{i},PAY{},,,SUCCEEDED,{}.{:02},CNY,2026-11-30T10:00:{:02}Z\n",
                "x".repeat(i as usize % 9),
                minor / 100,
                minor % 100,
                i
            ));
        }
        text.push_str(&format!("#summary,rows=40,total_minor={total}"));
        let (whole, checks) = all(Format::Sandbox, text.as_bytes()).unwrap();
        assert_eq!(whole.len(), 40);
        assert_eq!(whole[39].line_no, 42);
        assert!(checks.iter().all(|c| c.stated == c.read) && checks.len() == 2);
        for (capacity, per_chunk) in [(1, 1), (7, 3), (64, 40), (100, 7), (4096, 5)] {
            let input = std::io::BufReader::with_capacity(capacity, text.as_bytes());
            let mut reader = read(Format::Sandbox, Box::new(input));
            let mut chunk = Chunk::default();
            let mut rows = Vec::new();
            let end = loop {
                let pause = reader.read_rows(&mut chunk, per_chunk).unwrap();
                rows.extend(chunk.iter().map(|r| r.owned()));
                chunk.clear();
                if let Pause::End(checks) = pause {
                    break checks;
                }
            };
            assert_eq!(rows, whole, "buffer of {capacity}");
            assert_eq!(end, checks, "buffer of {capacity}");
        }
    }
}
