//! PayPal's Settlement Report (`STL-yyyymmdd.sequence.version.CSV`, from
//! PayPal's SFTP reports), as its specification lays it out: every line a
//! CSV record whose first field says what it is — `RH` report header,
//! `FH` file header, `SH` section header, `CH` the section's column names,
//! `SB` one transaction, `SF` section footer (totals), `SC` the section's
//! record count, `RF` report footer, `RC` report record count, `FF`/`FC`
//! file footer and count. UTF-8 (a byte-order mark allowed), text fields
//! quoted.
//!
//! `SB` rows are read by the names `CH` gives (as Magento's PayPal module
//! reads them; PayPal writes `Transaction  Debit or Credit` with two
//! spaces, so names are compared with their spaces collapsed). Amounts are
//! unsigned, in hundredths of the currency's unit whatever the currency
//! ("100,00 yen and $100.00 USD are both represented as 10000"), their
//! direction in the `… Debit or Credit` column (`CR`/`DR`). Times are
//! `yyyy/mm/dd hh:mm:ss ±hhmm`.
//!
//! Transaction event codes: `T00xx` credits are payments received (the
//! Transaction ID is the capture's, `Custom Field` the order's custom_id:
//! Reckon's payment_no); `T1107` debits are refunds (the Transaction ID is
//! the refund's, `PayPal Reference ID` the refunded capture, `Custom
//! Field` the refund's custom_id: Reckon's refund_no). Other codes —
//! withdrawals to the bank (`T0400`), fees, holds, currency conversions,
//! disputes — are not payments or refunds. Each section's `SC` count is
//! held against the `SB` rows read.
//!
//! Sources: PayPal's "Settlement Report Specification" and "Transaction
//! event codes" pages (developer.paypal.com, reports); the column names as
//! Magento's PayPal module reads them (`Model/Report/Settlement.php`). The
//! fixture `paypal_settlement.csv` is written after that layout.

use crate::domain::{Currency, Fee, Money};
use crate::statement::csv::CsvFields;
use crate::statement::{BillFormat, Check, Chunk, Format, Progress, RowKind, RowRef, present};

/// PayPal's Settlement Report format.
pub const FORMAT: Format = Format::new("paypal settlement", "PayPal", "settlement report", || {
    Box::new(SettlementBill::default())
});

#[derive(Default)]
struct SettlementBill {
    csv: CsvFields,
    /// `RH` read.
    report: bool,
    /// The current section's columns, once its `CH` is read.
    columns: Option<Columns>,
    /// `SB` rows of the current section.
    section_rows: i64,
    sections: i64,
    footer: bool,
    checks: Vec<Check>,
}

#[derive(Clone, Copy)]
struct Columns {
    width: usize,
    txn: usize,
    code: usize,
    direction: usize,
    gross: usize,
    currency: usize,
    reference: Option<usize>,
    initiated: Option<usize>,
    completed: Option<usize>,
    fee_direction: Option<usize>,
    fee: Option<usize>,
    fee_currency: Option<usize>,
    custom: Option<usize>,
    invoice: Option<usize>,
}

/// A column name with its runs of spaces made one, for comparing.
fn squeezed(name: &str) -> String {
    name.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An amount in hundredths of `currency`'s unit, as minor units.
fn hundredths(text: &str, currency: Currency, column: &str) -> Result<i64, String> {
    let t = text.trim();
    let v: i64 = t
        .parse()
        .ok()
        .filter(|v: &i64| *v >= 0 && t.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| format!("{column} {t:?} is not an unsigned whole number"))?;
    match currency.exponent() {
        2 => Ok(v),
        e if e > 2 => v
            .checked_mul(10i64.pow(u32::from(e) - 2))
            .ok_or_else(|| format!("{column} {t:?} is too large")),
        e => {
            let per = 10i64.pow(u32::from(2 - e));
            if v % per != 0 {
                return Err(format!(
                    "{column} {t:?} has fractions of a {} unit",
                    currency.code()
                ));
            }
            Ok(v / per)
        }
    }
}

/// `2026/11/30 10:00:00 -0800` → microseconds UTC.
fn time(text: &str) -> Option<i64> {
    let mut parts = text.split_whitespace();
    let (date, clock, offset) = (parts.next()?, parts.next()?, parts.next()?);
    let dt: jiff::civil::DateTime = format!("{}T{clock}", date.replace('/', "-")).parse().ok()?;
    let (sign, digits) = match offset.as_bytes().first()? {
        b'+' => (1, &offset[1..]),
        b'-' => (-1, &offset[1..]),
        _ => return None,
    };
    let digits = digits.replace(':', "");
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs =
        sign * (digits[..2].parse::<i32>().ok()? * 3600 + digits[2..].parse::<i32>().ok()? * 60);
    let offset = jiff::tz::Offset::from_seconds(secs).ok()?;
    Some(
        dt.to_zoned(jiff::tz::TimeZone::fixed(offset))
            .ok()?
            .timestamp()
            .as_microsecond(),
    )
}

impl SettlementBill {
    fn header(&mut self, names: &[String]) -> Result<(), String> {
        let find = |name: &str| names.iter().position(|n| n.eq_ignore_ascii_case(name));
        let need =
            |name: &str| find(name).ok_or_else(|| format!("the CH record has no {name:?} column"));
        self.columns = Some(Columns {
            width: names.len(),
            txn: need("Transaction ID")?,
            code: need("Transaction Event Code")?,
            direction: need("Transaction Debit or Credit")?,
            gross: need("Gross Transaction Amount")?,
            currency: need("Gross Transaction Currency")?,
            reference: find("PayPal Reference ID"),
            initiated: find("Transaction Initiation Date"),
            completed: find("Transaction Completion Date"),
            fee_direction: find("Fee Debit or Credit"),
            fee: find("Fee Amount"),
            fee_currency: find("Fee Currency"),
            custom: find("Custom Field"),
            // The purchase unit's invoice_id, "the API caller-provided
            // external invoice number for this order" (Orders v2): the
            // merchant's order, apart from custom_id's payment_no.
            invoice: find("Invoice ID"),
        });
        self.section_rows = 0;
        Ok(())
    }
}

impl BillFormat for SettlementBill {
    fn line(&mut self, text: &str, line_no: i64, out: &mut Chunk) -> Result<bool, String> {
        let f = self.csv.split(text);
        let record = f.get(0).trim();
        if !self.report {
            if record != "RH" {
                return Err("expected a PayPal settlement report (an RH record first)".into());
            }
            self.report = true;
            return Ok(false);
        }
        if self.footer && !matches!(record, "RC" | "RT" | "FF" | "FC") {
            return Err(format!("a {record} record after the report footer (RF)"));
        }
        match record {
            "FH" | "SH" | "SF" | "FF" | "FC" | "RC" | "RT" => Ok(false),
            "CH" => {
                let names: Vec<String> = f.iter().skip(1).map(squeezed).collect();
                self.header(&names)?;
                Ok(false)
            }
            "SC" => {
                let stated: i64 =
                    f.get(1).trim().parse().map_err(|_| {
                        format!("the SC record's count {:?} is not a number", f.get(1))
                    })?;
                self.sections += 1;
                self.checks.push(Check::new(
                    &format!("section {} SB records", self.sections),
                    stated,
                    self.section_rows,
                ));
                self.columns = None;
                Ok(false)
            }
            "RF" => {
                if self.columns.is_some() {
                    return Err("the report footer (RF) before the section's count (SC)".into());
                }
                self.footer = true;
                Ok(false)
            }
            "SB" => {
                let Some(at) = self.columns else {
                    return Err("an SB record before its section's column names (CH)".into());
                };
                // CH names the fields after the record type.
                if f.len() != at.width + 1 {
                    return Err(format!(
                        "expected {} fields, found {}",
                        at.width + 1,
                        f.len()
                    ));
                }
                self.section_rows += 1;
                let get = |i: usize| f.get(i + 1).trim();
                let opt = |i: Option<usize>| i.map_or("", get);
                let code = get(at.code);
                let direction = get(at.direction);
                let kind = match (code, direction) {
                    (c, "CR") if c.starts_with("T00") => RowKind::Payment,
                    ("T1107", "DR") => RowKind::Refund,
                    _ => return Ok(false),
                };
                let currency = Currency::parse(get(at.currency)).map_err(|e| e.to_string())?;
                let gross = hundredths(get(at.gross), currency, "Gross Transaction Amount")?;
                let fee = match (opt(at.fee), opt(at.fee_currency)) {
                    ("", _) => None,
                    (amount, code) => {
                        let fee_currency = if code.is_empty() {
                            currency
                        } else {
                            Currency::parse(code).map_err(|e| e.to_string())?
                        };
                        if fee_currency != currency {
                            return Err(format!(
                                "the fee is in {}, the transaction in {}",
                                fee_currency.code(),
                                currency.code()
                            ));
                        }
                        let minor = hundredths(amount, currency, "Fee Amount")?;
                        // A fee debited is one the merchant paid; one
                        // credited (a refunded payment's fee) came back.
                        let signed = if opt(at.fee_direction) == "CR" {
                            -minor
                        } else {
                            minor
                        };
                        Some(Fee::of_money(Money::new(signed, currency)))
                    }
                };
                let when = match opt(at.completed) {
                    "" => opt(at.initiated),
                    t => t,
                };
                let occurred_at =
                    match when {
                        "" => None,
                        t => Some(time(t).ok_or_else(|| {
                            format!("time {t:?} is not yyyy/mm/dd hh:mm:ss ±hhmm")
                        })?),
                    };
                let txn = present(get(at.txn));
                let custom = present(opt(at.custom));
                let refund = kind == RowKind::Refund;
                out.push(RowRef {
                    line_no,
                    kind,
                    provider_txn_id: if refund {
                        present(opt(at.reference))
                    } else {
                        txn
                    },
                    payment_no: if refund { None } else { custom },
                    refund_no: if refund { custom } else { None },
                    provider_refund_id: if refund { txn } else { None },
                    money: Money::new(gross, currency),
                    status: "SUCCEEDED",
                    occurred_at,
                    fee,
                    reference: if refund {
                        None
                    } else {
                        present(opt(at.invoice))
                    },
                });
                Ok(true)
            }
            other => Err(format!("unknown record type {other:?}")),
        }
    }

    fn progress(&self) -> Progress {
        Progress {
            header: self.columns.is_some() || self.sections > 0,
            in_summary: self.footer,
            summary: self.footer,
        }
    }

    fn checks(&mut self) -> Vec<Check> {
        std::mem::take(&mut self.checks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statement::{fixture, read_all};

    #[test]
    fn a_settlement_report_reads_payments_and_refunds_and_checks_its_counts() {
        let (rows, checks) = read_all(FORMAT, &fixture("paypal_settlement.csv")).unwrap();
        assert_eq!(
            rows.len(),
            3,
            "the withdrawal and the fee row are not payments"
        );
        assert_eq!(rows[0].kind, RowKind::Payment);
        assert_eq!(
            rows[0].provider_txn_id.as_deref(),
            Some("2GG279541U471931P")
        );
        assert_eq!(rows[0].payment_no.as_deref(), Some("PP-SETTLE-1"));
        assert_eq!(rows[0].money.minor, 4200);
        assert_eq!(rows[0].money.currency.code(), "USD");
        assert_eq!(rows[0].fee.map(|f| f.minor()), Some(157));
        // 2026/11/30 10:00:00 -0800 is 18:00 UTC.
        assert_eq!(
            rows[0].occurred_at,
            Some(
                jiff::Timestamp::from_second(1_796_061_600)
                    .unwrap()
                    .as_microsecond()
            )
        );
        assert_eq!(rows[2].kind, RowKind::Refund);
        assert_eq!(
            rows[2].provider_refund_id.as_deref(),
            Some("1JU08902781691411")
        );
        assert_eq!(
            rows[2].provider_txn_id.as_deref(),
            Some("2GG279541U471931P")
        );
        assert_eq!(rows[2].refund_no.as_deref(), Some("RFDPAYPAL1"));
        assert_eq!(rows[2].money.minor, 1200);
        assert_eq!(checks.len(), 1);
        assert_eq!((checks[0].stated, checks[0].read), (5, 5));
    }

    /// The Invoice ID column (the purchase unit's invoice_id) is a payment's
    /// reference; a refund's is not read.
    #[test]
    fn the_invoice_id_is_a_payments_reference() {
        let text = String::from_utf8(fixture("paypal_settlement.csv")).unwrap();
        let (rows, _) = read_all(FORMAT, text.as_bytes()).unwrap();
        assert_eq!(rows[0].reference, None, "an empty Invoice ID");
        let with = text.replacen(
            "\"2GG279541U471931P\",\"\",",
            "\"2GG279541U471931P\",\"ORDER-7\",",
            1,
        );
        assert_ne!(with, text);
        let (rows, _) = read_all(FORMAT, with.as_bytes()).unwrap();
        assert_eq!(rows[0].reference.as_deref(), Some("ORDER-7"));
        assert_eq!(rows[0].payment_no.as_deref(), Some("PP-SETTLE-1"));
        assert_eq!(rows[2].reference, None);
    }

    /// An uploaded report is told as PayPal's by its first lines.
    #[test]
    fn an_upload_is_told_as_a_paypal_settlement_report() {
        let formats = crate::providers::bill_formats();
        let file = fixture("paypal_settlement.csv");
        let (format, _) = crate::statement::recognise(&formats, &file).unwrap();
        assert_eq!(format.describe(None), "PayPal settlement report");
    }

    #[test]
    fn amounts_are_hundredths_whatever_the_currency() {
        let jpy = Currency::parse("JPY").unwrap();
        assert_eq!(hundredths("10000", jpy, "x"), Ok(100));
        assert!(hundredths("10050", jpy, "x").is_err());
        assert!(hundredths("-5", Currency::parse("USD").unwrap(), "x").is_err());
        assert!(hundredths("1.5", Currency::parse("USD").unwrap(), "x").is_err());
    }

    #[test]
    fn a_file_that_is_not_a_settlement_report_is_refused_at_its_first_line() {
        let err = read_all(FORMAT, b"\"CH\",\"Transaction ID\"\n").unwrap_err();
        assert_eq!(err.line, 1);
        assert!(err.reason.contains("RH"), "{err}");
        let file = String::from_utf8(fixture("paypal_settlement.csv")).unwrap();
        let no_footer: String = file
            .lines()
            .filter(|l| !l.starts_with("\"RF\""))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(read_all(FORMAT, no_footer.as_bytes()).is_err());
    }
}
