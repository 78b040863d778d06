//! The sandbox's statement: its own CSV,
//! `kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at`
//! (and `,reference`: the merchant's order, when the header names it),
//! then `#summary,rows=N,total_minor=M`; the same nine fields a row in its
//! statement API. The recon bench reads a million of these rows: a row is
//! split in place, with no allocation.

use crate::domain::{quote, trimmed};
use crate::statement::csv::{CsvFields, separators};
use crate::statement::time::{LastDay, utc_micros};
use crate::statement::{
    BillFormat, Check, Chunk, Format, LastCurrency, Progress, RowKind, RowRef, SoleCurrency,
    StatementRow, add, money, present,
};

/// The sandbox's statement format.
pub const FORMAT: Format = Format::new("sandbox", "sandbox", "statement", || {
    Box::new(SandboxBill::default())
});

const HEADER: &str =
    "kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at";
/// A tenth column: the merchant's reference (a payment's order_no).
const REFERENCE: &str = ",reference";

#[derive(Default)]
struct SandboxBill {
    /// Header and summary read so far.
    progress: Progress,
    rows: i64,
    total: i64,
    checks: Vec<Check>,
    currency: LastCurrency,
    /// The currency of the summary's total, when the rows have one.
    sole: SoleCurrency,
    days: LastDay,
    csv: CsvFields,
    /// Fields a row has: 9, or 10 with the reference.
    width: usize,
}

/// One sandbox statement line's nine fields (CSV or the pull API).
pub fn row<S: AsRef<str>>(f: &[S], line_no: i64) -> Result<StatementRow, String> {
    fields(
        f,
        line_no,
        &mut LastCurrency::default(),
        &mut LastDay::default(),
    )
    .map(|r| r.owned())
}

/// [`row`], borrowing its strings from the fields.
fn fields<'f, S: AsRef<str>>(
    f: &'f [S],
    line_no: i64,
    currencies: &mut LastCurrency,
    days: &mut LastDay,
) -> Result<RowRef<'f>, String> {
    if f.len() != 9 && f.len() != 10 {
        return Err(format!("expected 9 fields, found {}", f.len()));
    }
    let reference = f.get(9).and_then(|r| present(r.as_ref()));
    let f = |i: usize| f[i].as_ref();
    let kind = match f(0) {
        "payment" => RowKind::Payment,
        "refund" => RowKind::Refund,
        other => return Err(format!("unknown kind {}", quote(other))),
    };
    let currency = currencies.parse(f(7))?;
    let money = money(f(6), currency)?;
    let occurred_at = match trimmed(f(8)) {
        "" => None,
        t => Some(match utc_micros(t, days) {
            Some(micros) => micros,
            None => t
                .parse::<jiff::Timestamp>()
                .map_err(|_| {
                    format!(
                        "occurred_at {} is not a time like 2026-11-30T10:00:00Z",
                        quote(t)
                    )
                })?
                .as_microsecond(),
        }),
    };
    Ok(RowRef {
        line_no,
        kind,
        provider_txn_id: present(f(1)),
        payment_no: present(f(2)),
        provider_refund_id: present(f(3)),
        refund_no: present(f(4)),
        money,
        status: trimmed(f(5)),
        occurred_at,
        fee: None,
        reference,
    })
}

impl BillFormat for SandboxBill {
    fn line(&mut self, text: &str, line_no: i64, out: &mut Chunk) -> Result<bool, String> {
        if !self.progress.header {
            self.width = match text.trim().strip_prefix(HEADER) {
                Some("") => 9,
                Some(REFERENCE) => 10,
                _ => return Err(format!("expected the header {HEADER}")),
            };
            self.progress.header = true;
            return Ok(false);
        }
        if let Some(rest) = text.strip_prefix("#summary,") {
            let mut rows = None;
            let mut total = None;
            for part in rest.split(',') {
                match part.trim().split_once('=') {
                    Some(("rows", n)) => rows = n.parse::<i64>().ok(),
                    Some(("total_minor", n)) => total = n.parse::<i64>().ok(),
                    _ => return Err(format!("unreadable summary part {}", quote(part))),
                }
            }
            let (Some(rows), Some(total)) = (rows, total) else {
                return Err("the summary needs rows= and total_minor=".into());
            };
            self.checks.push(Check::new("rows", rows, self.rows));
            self.checks.push(Check::money(
                "total_minor",
                total,
                self.total,
                self.sole.get(),
            ));
            self.progress.summary = true;
            return Ok(false);
        }
        if self.progress.summary {
            return Err("a row after the summary".into());
        }
        // Quotes are rare in these files: split in place (no allocation
        // for a row) unless there are some. The commas — and a quote, if
        // any — are found in one pass over the line ([`separators`]).
        let mut plain = [""; 10];
        let mut n = 0;
        let mut from = 0;
        let mut quoted = false;
        for at in separators(text.as_bytes()) {
            if text.as_bytes()[at] == b'"' {
                quoted = true;
                break;
            }
            if let Some(field) = plain.get_mut(n) {
                // A comma is one byte of UTF-8: both ends are char
                // boundaries.
                *field = &text[from..at];
            }
            n += 1;
            from = at + 1;
        }
        let width = self.width;
        let unquoted: [&str; 10];
        let row = if quoted {
            let split = self.csv.split(text);
            if split.len() != width {
                return Err(format!("expected {width} fields, found {}", split.len()));
            }
            unquoted = std::array::from_fn(|i| if i < width { split.get(i) } else { "" });
            fields(
                &unquoted[..width],
                line_no,
                &mut self.currency,
                &mut self.days,
            )?
        } else {
            if let Some(field) = plain.get_mut(n) {
                *field = &text[from..];
            }
            n += 1;
            if n != width {
                return Err(format!("expected {width} fields, found {n}"));
            }
            fields(&plain[..width], line_no, &mut self.currency, &mut self.days)?
        };
        // Checked: a sum past i64 panicked with overflow checks and wrapped
        // without (where it could agree with a stated total).
        self.total = add(self.total, row.money.minor)?;
        self.sole.saw(row.money.currency);
        out.push(row);
        self.rows += 1;
        Ok(true)
    }

    fn progress(&self) -> Progress {
        self.progress
    }

    fn checks(&mut self) -> Vec<Check> {
        std::mem::take(&mut self.checks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statement::{Pause, read, read_all};

    /// Amounts whose sum passes i64 panicked (overflow checks) or wrapped;
    /// the line that passes it is refused. fuzz/corpus/statement_sandbox/
    /// crash-sum-overflow is this case (the WeChat Pay bill's is with its
    /// format).
    #[test]
    fn amounts_that_sum_past_i64_refuse_their_line() {
        let sandbox = "kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at\n\
payment,SBX1,PAY1,,,SUCCEEDED,92233720368547758.07,USD,2026-11-30T10:00:00Z\n\
payment,SBX2,PAY2,,,SUCCEEDED,0.01,USD,2026-11-30T10:00:00Z\n\
#summary,rows=2,total_minor=-9223372036854775808\n";
        let err = read_all(FORMAT, sandbox.as_bytes()).unwrap_err();
        assert_eq!(err.line, 3, "{err}");
        assert!(err.reason.contains("add up"), "{err}");
    }

    #[test]
    fn a_reference_column_is_read_when_the_header_names_it() {
        let text = "kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at,reference\n\
payment,SBX1,,,,SUCCEEDED,10.00,USD,2026-11-30T10:00:00Z,ORDER-7\n\
payment,SBX2,PAY2,,,SUCCEEDED,1.00,USD,2026-11-30T10:00:00Z,\n\
#summary,rows=2,total_minor=1100\n";
        let (rows, _) = read_all(FORMAT, text.as_bytes()).unwrap();
        assert_eq!(rows[0].reference.as_deref(), Some("ORDER-7"));
        assert_eq!(rows[1].reference, None);
        // Nine fields under a header of ten: refused, as one too few.
        let short = text.replace(",ORDER-7", "");
        let err = read_all(FORMAT, short.as_bytes()).unwrap_err();
        assert_eq!(
            (err.line, err.reason.as_str()),
            (2, "expected 10 fields, found 9")
        );
        // Without the column, none.
        let plain = "kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at\n\
payment,SBX1,PAY1,,,SUCCEEDED,10.00,USD,2026-11-30T10:00:00Z\n\
#summary,rows=1,total_minor=1000\n";
        assert_eq!(
            read_all(FORMAT, plain.as_bytes()).unwrap().0[0].reference,
            None
        );
    }

    #[test]
    fn the_sandbox_csv_and_its_summary() {
        let text = "kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at\n\
payment,SBX1,PAY1,,,SUCCEEDED,10.00,USD,2026-11-30T10:00:00Z\n\
refund,SBX1,PAY1,SBXR1,RFD1,SUCCEEDED,2.50,USD,2026-11-30T11:00:00Z\n\
#summary,rows=2,total_minor=1250\n";
        let (rows, checks) = read_all(FORMAT, text.as_bytes()).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].money.minor, 250);
        assert!(checks.iter().all(|c| c.stated == c.read));
        let err = read_all(FORMAT, b"kind,txn_id\n").unwrap_err();
        assert_eq!(err.line, 1);
        // Fields split at every comma: empty ones kept (the last one too),
        // one too few or too many refused with the count found.
        let header =
            "kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at\n";
        let with = |line: &str| format!("{header}{line}\n#summary,rows=1,total_minor=100\n");
        let (rows, _) = read_all(
            FORMAT,
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
            let err = read_all(FORMAT, with(line).as_bytes()).unwrap_err();
            assert_eq!(
                (err.line, err.reason),
                (2, format!("expected 9 fields, found {found}"))
            );
        }
        // A quote anywhere in the line: read as CSV, commas inside quotes
        // kept, fields counted after unquoting.
        let (rows, _) = read_all(
            FORMAT,
            with("payment,\"SBX,3\",PAY3,,,SUCCEEDED,1.00,USD,\"2026-11-30T10:00:00Z\"").as_bytes(),
        )
        .unwrap();
        assert_eq!(rows[0].provider_txn_id.as_deref(), Some("SBX,3"));
        assert_eq!(rows[0].occurred_at, Some(1_796_032_800_000_000));
        let err = read_all(
            FORMAT,
            with("payment,SBX3,PAY3,,,SUCCEEDED,1.00,USD,x,\"y,z\"").as_bytes(),
        )
        .unwrap_err();
        assert_eq!(err.reason, "expected 9 fields, found 10");
    }

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
        let (rows, checks) = read_all(FORMAT, text.as_bytes()).unwrap();
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
        let err = read_all(FORMAT, unknown.as_bytes()).unwrap_err();
        assert_eq!(err.line, 3, "{err:?}");
        assert!(err.reason.contains("CNX"), "{err:?}");
        // A line that is not UTF-8 is refused with its number.
        let mut bytes = format!("{header}{}\n", lines[0]).into_bytes();
        bytes.extend_from_slice(b"payment,SBX\xff8,PAY8,,,SUCCEEDED,1.00,CNY,\n");
        let err = read_all(FORMAT, &bytes).unwrap_err();
        assert_eq!((err.line, err.reason.as_str()), (3, "not valid UTF-8"));
    }

    /// Lines are read where the input's buffer holds them whole, and put
    /// together where they run past its end or the file ends without a
    /// newline: the same rows, line numbers and checks either way, in
    /// chunks of any size.
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
        let (whole, checks) = read_all(FORMAT, text.as_bytes()).unwrap();
        assert_eq!(whole.len(), 40);
        assert_eq!(whole[39].line_no, 42);
        assert!(checks.iter().all(|c| c.stated == c.read) && checks.len() == 2);
        for (capacity, per_chunk) in [(1, 1), (7, 3), (64, 40), (100, 7), (4096, 5)] {
            let input = std::io::BufReader::with_capacity(capacity, text.as_bytes());
            let mut reader = read(FORMAT, Box::new(input));
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

    /// A line far longer than any bill's is refused by its number with a
    /// short quote of its start and its length, whether the input's buffer
    /// holds it whole or not, and is never held whole; under an accepted
    /// tolerance it is skipped like any malformed row, the lines after it
    /// read as they are. An id longer than any provider's is refused the
    /// same way.
    #[test]
    fn an_oversize_line_or_id_is_refused_with_a_short_quote() {
        use crate::statement::{MAX_ID, MAX_LINE, read_with};
        let header =
            "kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at\n";
        let good = "payment,SBX1,PAY1,,,SUCCEEDED,1.00,CNY,2026-11-30T10:00:00Z\n";
        let field = "商".repeat(5 * 1024 * 1024 / 3);
        let long = format!("payment,SBX2,{field},,,SUCCEEDED,1.00,CNY,\n");
        let text = format!("{header}{good}{long}{good}#summary,rows=3,total_minor=300\n");
        let refused = |err: crate::statement::ParseError| {
            assert_eq!(err.line, 3, "{err}");
            assert!(err.reason.len() < 600, "{} bytes", err.reason.len());
            let length = crate::domain::grouped(long.len());
            assert!(err.reason.contains(&format!("({length} bytes)")), "{err}");
            assert!(err.reason.contains("\"payment,SBX2,商商"), "{err}");
        };
        refused(read_all(FORMAT, text.as_bytes()).unwrap_err());
        for capacity in [1 << 16, 1000] {
            let input = std::io::BufReader::with_capacity(capacity, text.as_bytes());
            let mut reader = read(FORMAT, Box::new(input));
            let mut chunk = Chunk::default();
            let err = loop {
                match reader.read_rows(&mut chunk, 100) {
                    Ok(Pause::End(_)) => panic!("read through"),
                    Ok(_) => {}
                    Err(e) => break e,
                }
            };
            refused(err);
            assert_eq!(chunk.len(), 1, "the line before was read");
        }
        // A line of exactly the longest length is a line.
        let pad = MAX_LINE - "payment,SBX3,,,,SUCCEEDED,1.00,CNY,\n".len();
        let longest = format!("payment,SBX3,,,,{}SUCCEEDED,1.00,CNY,\n", " ".repeat(pad));
        assert_eq!(longest.len(), MAX_LINE);
        let ok = format!("{header}{longest}#summary,rows=1,total_minor=100\n");
        let input = std::io::BufReader::with_capacity(1 << 16, ok.as_bytes());
        let mut reader = read(FORMAT, Box::new(input));
        let mut chunk = Chunk::default();
        assert!(matches!(
            reader.read_rows(&mut chunk, 10),
            Ok(Pause::End(_))
        ));
        assert_eq!(chunk.len(), 1);
        // Skipped under a tolerance: the rows around it read.
        let input = std::io::BufReader::with_capacity(1000, text.as_bytes());
        let mut reader = read_with(FORMAT, Box::new(input), 1);
        let mut chunk = Chunk::default();
        let mut skipped = Vec::new();
        let checks = loop {
            match reader.read_rows(&mut chunk, 100).unwrap() {
                Pause::Skipped(e) => skipped.push(e),
                Pause::Full => {}
                Pause::End(checks) => break checks,
            }
        };
        assert_eq!(chunk.len(), 2);
        assert_eq!(chunk.get(1).line_no, 4);
        assert_eq!(skipped.len(), 1);
        refused(skipped.remove(0));
        assert_eq!(checks[0].read, checks[0].stated, "{checks:?}");
        // An id past any provider's, in a line of an ordinary length.
        let id = "x".repeat(MAX_ID + 1);
        let text = format!("{header}{good}payment,{id},PAY2,,,SUCCEEDED,1.00,CNY,\n");
        let err = read_all(FORMAT, text.as_bytes()).unwrap_err();
        assert_eq!(err.line, 3);
        assert!(err.reason.starts_with("provider_txn_id \"xxx"), "{err}");
        assert!(err.reason.contains("(257 bytes)"), "{err}");
        let mut reader = read_with(FORMAT, Box::new(std::io::Cursor::new(text)), 1);
        let mut chunk = Chunk::default();
        assert!(matches!(
            reader.read_rows(&mut chunk, 10),
            Ok(Pause::Skipped(_))
        ));
        assert_eq!(chunk.len(), 1, "the refused row taken out");
        assert_eq!(chunk.get(0).provider_txn_id, Some("SBX1"));
    }
}
