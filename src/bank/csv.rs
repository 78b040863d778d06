//! A bank's plain CSV export, read through a column mapping: which header
//! names the booking date, the amount, the currency, the reference, the
//! counterparty and (optionally) credit or debit. Without a direction
//! column the amount's sign says it (negative is money out). The default
//! mapping is the columns' own names: `date,amount,currency,reference,
//! counterparty,direction`; a bank's own export is read with a mapping
//! such as `date=Buchungstag;amount=Betrag;direction=Soll/Haben`.

use super::{BankEntry, Direction, ParsedStatement};
use crate::domain::{Currency, Money, quote};
use crate::statement::csv::split_owned;

/// Which header each field is read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Columns {
    pub date: String,
    pub amount: String,
    pub currency: String,
    pub reference: String,
    pub counterparty: String,
    /// `None`: the amount's sign gives the direction.
    pub direction: Option<String>,
}

impl Default for Columns {
    fn default() -> Columns {
        Columns {
            date: "date".into(),
            amount: "amount".into(),
            currency: "currency".into(),
            reference: "reference".into(),
            counterparty: "counterparty".into(),
            direction: Some("direction".into()),
        }
    }
}

impl Columns {
    /// `field=Header;field=Header…` over the defaults; `direction=` (empty)
    /// reads the direction from the amount's sign.
    pub fn parse(text: &str) -> Result<Columns, String> {
        let mut c = Columns::default();
        for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((field, header)) = part.split_once('=') else {
                return Err(format!(
                    "{} in the CSV mapping is not field=Header (fields: date, amount, currency, reference, counterparty, direction)",
                    quote(part)
                ));
            };
            let header = header.trim().to_owned();
            match field.trim() {
                "date" => c.date = header,
                "amount" => c.amount = header,
                "currency" => c.currency = header,
                "reference" => c.reference = header,
                "counterparty" => c.counterparty = header,
                "direction" => c.direction = (!header.is_empty()).then_some(header),
                other => {
                    return Err(format!(
                        "unknown field {} in the CSV mapping (fields: date, amount, currency, reference, counterparty, direction)",
                        quote(other)
                    ));
                }
            }
        }
        Ok(c)
    }
}

/// The words a direction column may hold, in English, ISO 20022 and the
/// German Soll/Haben most such exports use.
fn direction_of(word: &str) -> Option<Direction> {
    match word.trim().to_ascii_uppercase().as_str() {
        "C" | "CR" | "CRDT" | "CREDIT" | "H" | "HABEN" | "IN" => Some(Direction::Credit),
        "D" | "DR" | "DBIT" | "DEBIT" | "S" | "SOLL" | "OUT" => Some(Direction::Debit),
        _ => None,
    }
}

/// Reads the CSV: a header line, then one entry a line. Any line that
/// cannot be read refuses the file, naming the line.
pub fn parse(bytes: &[u8], columns: &Columns) -> Result<ParsedStatement, String> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| format!("the CSV is not UTF-8 text: {e}"))?
        .trim_start_matches('\u{feff}');
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((_, header)) = lines.next() else {
        return Err("the CSV is empty".into());
    };
    let header = split_owned(header);
    let find = |name: &str| -> Result<usize, String> {
        header
            .iter()
            .position(|h| h.trim() == name)
            .ok_or_else(|| {
                format!(
                    "the CSV has no column {} (its header: {}); give the mapping, e.g. date=Booking date;amount=Amount",
                    quote(name),
                    quote(&header.join(", "))
                )
            })
    };
    let at_date = find(&columns.date)?;
    let at_amount = find(&columns.amount)?;
    let at_currency = find(&columns.currency)?;
    let at_reference = find(&columns.reference)?;
    let at_counterparty = find(&columns.counterparty)?;
    let at_direction = columns.direction.as_deref().map(find).transpose()?;
    let mut out = ParsedStatement {
        format: "csv",
        ..ParsedStatement::default()
    };
    for (i, line) in lines {
        let n = i + 1;
        let f = split_owned(line);
        if f.len() != header.len() {
            return Err(format!(
                "line {n}: {} fields, the header has {}",
                f.len(),
                header.len()
            ));
        }
        let get = |at: usize| f[at].trim();
        let booked_on = get(at_date)
            .parse::<jiff::civil::Date>()
            .map_err(|_| format!("line {n}: date {} is not YYYY-MM-DD", quote(get(at_date))))?
            .to_string();
        let currency =
            Currency::parse(get(at_currency)).map_err(|e| format!("line {n}: currency: {e}"))?;
        let money = Money::parse_major(get(at_amount), currency)
            .map_err(|e| format!("line {n}: amount: {e}"))?;
        let direction = match at_direction {
            Some(at) => {
                if money.minor < 0 {
                    return Err(format!(
                        "line {n}: amount {} is negative while the direction column gives the direction",
                        quote(get(at_amount))
                    ));
                }
                direction_of(get(at)).ok_or_else(|| {
                    format!(
                        "line {n}: {} is neither credit nor debit (C/D, CRDT/DBIT, H/S)",
                        quote(get(at))
                    )
                })?
            }
            None if money.minor < 0 => Direction::Debit,
            None => Direction::Credit,
        };
        let present = |at: usize| Some(get(at).to_owned()).filter(|s| !s.is_empty());
        out.entries.push(BankEntry {
            line_no: n as i64,
            booked_on,
            value_on: None,
            money: Money::new(money.minor.abs(), currency),
            direction,
            reversal: false,
            bank_ref: None,
            end_to_end_id: None,
            remittance: present(at_reference),
            counterparty: present(at_counterparty),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_csv_is_read_through_its_mapping() {
        let file = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/bank/bank_statement.csv"),
        )
        .unwrap();
        let columns = Columns::parse(
            "date=Buchungstag; amount=Betrag; currency=Waehrung; reference=Verwendungszweck; counterparty=Auftraggeber; direction=Soll/Haben",
        )
        .unwrap();
        let s = parse(&file, &columns).unwrap();
        assert_eq!(s.entries.len(), 6);
        assert_eq!(s.entries[0].money.minor, 904_800);
        assert_eq!(s.entries[0].line_no, 2);
        assert_eq!(
            s.entries[4].remittance.as_deref(),
            Some("Rechnung 2026-118, Danke")
        );
        assert_eq!(s.entries[5].direction, Direction::Debit);
        let err = parse(&file, &Columns::default()).unwrap_err();
        assert!(err.contains("no column \"date\""), "{err}");
        let broken = String::from_utf8(file).unwrap().replace("4990.00", "49,90");
        let err = parse(broken.as_bytes(), &columns).unwrap_err();
        assert!(err.starts_with("line 3:"), "{err}");
    }

    #[test]
    fn without_a_direction_column_the_sign_decides() {
        let text = "date,amount,currency,reference,counterparty\n2026-12-03,-12.00,EUR,fee,Bank\n2026-12-03,15.00,EUR,po_1,Stripe\n";
        let s = parse(text.as_bytes(), &Columns::parse("direction=").unwrap()).unwrap();
        assert_eq!(s.entries[0].direction, Direction::Debit);
        assert_eq!(s.entries[0].money.minor, 1200);
        assert_eq!(s.entries[1].direction, Direction::Credit);
        assert!(Columns::parse("colour=Red").is_err());
        assert!(Columns::parse("date").is_err());
    }
}
