//! BAI2 (the Bank Administration Institute's Cash Management Balance
//! Reporting format, version 2), read by hand: the `bai2` crate drops the
//! control totals this reader must check and answers with fixed strings
//! naming no record. A file is `01` (file) → `02` (group) → `03` (account)
//! → `16` (transaction)… → `49` → `98` → `99`, with `88` continuing the
//! record before it. Every account, group and file trailer's control total
//! and record count is checked; a file that does not agree is refused.

use super::{BankEntry, Direction, ParsedStatement};
use crate::domain::{Currency, Money, quote};
use jiff::civil::Date;

/// A record with its continuations: its code, the line it starts on, and
/// its fields with the physical line (0 = the record's own) each came from.
struct Record {
    code: String,
    line: usize,
    fields: Vec<(usize, String)>,
    /// Physical lines: the record and its `88`s.
    physical: i64,
}

impl Record {
    fn field(&self, at: usize) -> &str {
        self.fields.get(at).map_or("", |(_, f)| f.trim())
    }
}

/// The file's records, each `88` folded into the record it continues.
fn records(text: &str) -> Result<Vec<Record>, String> {
    let mut out: Vec<Record> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim_end_matches(['\r', '\u{1a}']).trim_end();
        if line.trim().is_empty() {
            continue;
        }
        // A record ends at `/`; a 16's text runs to the end of the line.
        let body = line.strip_suffix('/').unwrap_or(line);
        let mut parts = body.split(',');
        let code = parts.next().unwrap_or("").trim().to_owned();
        if code == "88" {
            let Some(rec) = out.last_mut() else {
                return Err(format!(
                    "line {n}: a continuation (88) with no record before it"
                ));
            };
            let part = rec.physical as usize;
            rec.fields.extend(parts.map(|p| (part, p.to_owned())));
            rec.physical += 1;
            continue;
        }
        if !matches!(
            code.as_str(),
            "01" | "02" | "03" | "16" | "49" | "98" | "99"
        ) {
            return Err(format!(
                "line {n}: {} is not a BAI2 record (record codes 01, 02, 03, 16, 88, 49, 98, 99)",
                quote(line)
            ));
        }
        out.push(Record {
            code,
            line: n,
            fields: parts.map(|p| (0, p.to_owned())).collect(),
            physical: 1,
        });
    }
    Ok(out)
}

/// `YYMMDD`, SWIFT-style two-digit years taken as 1980–2079.
fn date6(s: &str) -> Option<Date> {
    if s.len() != 6 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let yy: i16 = s[..2].parse().ok()?;
    let year = if yy >= 80 { 1900 + yy } else { 2000 + yy };
    Date::new(year, s[2..4].parse().ok()?, s[4..].parse().ok()?).ok()
}

/// An amount in the currency's smallest unit, an optional sign before
/// it; blank is "not reported".
fn amount(s: &str, signed: bool) -> Result<Option<i64>, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    let (negative, digits) = match s.as_bytes()[0] {
        b'-' if signed => (true, &s[1..]),
        b'+' if signed => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "amount {} is not a whole number of the currency's smallest unit (1000 is 10.00)",
            quote(s)
        ));
    }
    let v: i64 = digits
        .parse()
        .map_err(|_| format!("amount {} is out of range", quote(s)))?;
    Ok(Some(if negative { -v } else { v }))
}

/// How many fields follow a funds type code, and a value date if it is
/// `V`: `0`, `1`, `2`, `Z` or blank none; `V` a date and a time; `S`
/// three amounts; `D` a count and that many day/amount pairs.
fn funds(fields: &[&str]) -> Result<(usize, Option<Date>), String> {
    match fields.first().map(|f| f.trim()).unwrap_or("") {
        "" | "0" | "1" | "2" | "Z" => Ok((1, None)),
        "V" => {
            let date = fields.get(1).map_or("", |d| d.trim());
            let date = date6(date).ok_or_else(|| {
                format!("funds type V's value date {} is not YYMMDD", quote(date))
            })?;
            Ok((3, Some(date)))
        }
        "S" => Ok((4, None)),
        "D" => {
            let n = fields.get(1).map_or("", |d| d.trim());
            let n: usize = n.parse().map_err(|_| {
                format!(
                    "funds type D's number of distributions {} is not a number",
                    quote(n)
                )
            })?;
            Ok((2 + 2 * n, None))
        }
        other => Err(format!(
            "funds type {} is none of 0, 1, 2, V, S, D, Z",
            quote(other)
        )),
    }
}

/// Sums a control total, refusing an overflow.
fn add(total: &mut i64, v: i64) -> Result<(), String> {
    *total = total
        .checked_add(v)
        .ok_or("the amounts overflow a control total")?;
    Ok(())
}

/// A trailer's control total and count, checked against what was read.
fn check(
    rec: &Record,
    what: &str,
    total: i64,
    counts: &[(&str, i64, usize)],
) -> Result<(), String> {
    let said = amount(rec.field(0), true)
        .map_err(|e| format!("line {}: {what}'s control total: {e}", rec.line))?;
    if said != Some(total) {
        return Err(format!(
            "line {}: the {what}'s control total says {}, but its amounts sum to {total}: the file does not add up",
            rec.line,
            quote(rec.field(0))
        ));
    }
    for &(name, count, at) in counts {
        let said = rec.field(at);
        if said.parse::<i64>().ok() != Some(count) {
            return Err(format!(
                "line {}: the {what} says {} {name}, but it holds {count}",
                rec.line,
                quote(said)
            ));
        }
    }
    Ok(())
}

/// Reads a BAI2 file: every detail (`16`) of every account, its control
/// totals checked. Anything unreadable refuses the whole file, naming the
/// line.
pub fn parse(bytes: &[u8]) -> Result<ParsedStatement, String> {
    let text = match std::str::from_utf8(bytes) {
        Ok(s) => s.trim_start_matches('\u{feff}').to_owned(),
        Err(_) => bytes.iter().map(|&b| char::from(b)).collect(),
    };
    let recs = records(&text)?;
    let mut out = ParsedStatement {
        format: "bai2",
        ..ParsedStatement::default()
    };
    let Some(first) = recs.first().filter(|r| r.code == "01") else {
        return Err("the file does not start with a file header (01): not a BAI2 file".into());
    };
    let version = first.field(7);
    if version != "2" {
        return Err(format!(
            "line {}: the file header's version is {}, not 2: not a BAI2 file",
            first.line,
            quote(version)
        ));
    }
    out.bank_ref = Some(first.field(4).to_owned()).filter(|r| !r.is_empty());
    let (mut file_total, mut file_groups, mut file_records) = (0i64, 0usize, first.physical);
    // The open group: its as-of date, currency, whether its entries count,
    // its total, accounts and records.
    struct Group {
        as_of: Date,
        currency: Option<Currency>,
        taken: bool,
        total: i64,
        accounts: usize,
        records: i64,
    }
    struct Account {
        number: String,
        currency: Currency,
        total: i64,
        records: i64,
        line: usize,
    }
    let mut group: Option<Group> = None;
    let mut account: Option<Account> = None;
    let mut ended = false;
    for rec in &recs[1..] {
        let n = rec.line;
        if ended {
            return Err(format!(
                "line {n}: record {} after the file trailer (99)",
                rec.code
            ));
        }
        let out_of_place =
            |inside: &str| format!("line {n}: record {} is out of place ({inside})", rec.code);
        match rec.code.as_str() {
            "02" => {
                if group.is_some() {
                    return Err(out_of_place("the group before it has no trailer (98)"));
                }
                let as_of = date6(rec.field(3)).ok_or_else(|| {
                    format!(
                        "line {n}: the group's as-of date {} is not YYMMDD",
                        quote(rec.field(3))
                    )
                })?;
                let currency = match rec.field(5) {
                    "" => None,
                    c => Some(Currency::parse(c).map_err(|e| format!("line {n}: {e}"))?),
                };
                let taken = match rec.field(2) {
                    "1" | "3" => true,
                    // Test data only: read and checked, never imported.
                    "4" => false,
                    "2" => {
                        return Err(format!(
                            "line {n}: the group deletes data sent before (status 2); Reckon keeps each statement as imported, so it cannot be applied"
                        ));
                    }
                    other => {
                        return Err(format!(
                            "line {n}: group status {} is none of 1 (update), 2 (deletion), 3 (correction), 4 (test only)",
                            quote(other)
                        ));
                    }
                };
                group = Some(Group {
                    as_of,
                    currency,
                    taken,
                    total: 0,
                    accounts: 0,
                    records: rec.physical,
                });
            }
            "03" => {
                let Some(g) = group.as_mut() else {
                    return Err(out_of_place("outside a group (02)"));
                };
                if account.is_some() {
                    return Err(out_of_place("the account before it has no trailer (49)"));
                }
                let number = rec.field(0).to_owned();
                if number.is_empty() {
                    return Err(format!("line {n}: the account (03) has no account number"));
                }
                // The group's currency, else US dollars (the format's
                // default).
                let currency = match rec.field(1) {
                    "" => g
                        .currency
                        .unwrap_or(Currency::parse("USD").map_err(|e| e.to_string())?),
                    c => Currency::parse(c).map_err(|e| format!("line {n}: {e}"))?,
                };
                let mut total = 0;
                let fields: Vec<&str> = rec
                    .fields
                    .get(2..)
                    .unwrap_or(&[])
                    .iter()
                    .map(|(_, f)| f.as_str())
                    .collect();
                let mut at = 0;
                while at < fields.len() {
                    let rest = &fields[at..];
                    // A last group of empty fields is only the delimiters.
                    if rest.iter().all(|f| f.trim().is_empty()) {
                        break;
                    }
                    let code = rest[0].trim();
                    if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_digit()) {
                        return Err(format!(
                            "line {n}: account {}: type code {} is not three digits",
                            quote(&number),
                            quote(code)
                        ));
                    }
                    if let Some(v) = amount(rest.get(1).copied().unwrap_or(""), true)
                        .map_err(|e| format!("line {n}: account {}: {e}", quote(&number)))?
                    {
                        add(&mut total, v)?;
                    }
                    let (len, _) = funds(rest.get(3..).unwrap_or(&[]))
                        .map_err(|e| format!("line {n}: account {}: {e}", quote(&number)))?;
                    at += 3 + len;
                }
                if out.account.is_none() {
                    out.account = Some(number.clone());
                }
                g.accounts += 1;
                account = Some(Account {
                    number,
                    currency,
                    total,
                    records: rec.physical,
                    line: n,
                });
            }
            "16" => {
                let (Some(g), Some(a)) = (group.as_ref(), account.as_mut()) else {
                    return Err(out_of_place("outside an account (03)"));
                };
                a.records += rec.physical;
                let fields: Vec<&str> = rec.fields.iter().map(|(_, f)| f.as_str()).collect();
                let code = rec.field(0);
                let direction = match code.parse::<u16>() {
                    Ok(100..=399) if code.len() == 3 => Direction::Credit,
                    Ok(400..=699) if code.len() == 3 => Direction::Debit,
                    _ => {
                        return Err(format!(
                            "line {n}: transaction type code {} is neither a credit (100–399) nor a debit (400–699)",
                            quote(code)
                        ));
                    }
                };
                let minor = amount(rec.field(1), false)
                    .map_err(|e| format!("line {n}: {e}"))?
                    .ok_or_else(|| format!("line {n}: the transaction (16) has no amount"))?;
                add(&mut a.total, minor)?;
                let (len, value_on) =
                    funds(fields.get(2..).unwrap_or(&[])).map_err(|e| format!("line {n}: {e}"))?;
                let refs = 2 + len;
                if fields.len() < refs + 2 {
                    return Err(format!(
                        "line {n}: the transaction (16) ends before its bank and customer references"
                    ));
                }
                let present = |s: &str| {
                    let s = s.trim();
                    (!s.is_empty()).then(|| s.to_owned())
                };
                // The text is the rest, commas and all; a continuation
                // (88) adds a line to it.
                let mut text: Vec<String> = Vec::new();
                for (part, f) in &rec.fields[refs + 2..] {
                    match text.get_mut(*part) {
                        Some(t) => {
                            t.push(',');
                            t.push_str(f);
                        }
                        None => {
                            text.resize(*part, String::new());
                            text.push(f.clone());
                        }
                    }
                }
                let text = text
                    .iter()
                    .map(|t| t.trim())
                    .filter(|t| !t.is_empty())
                    .collect::<Vec<_>>()
                    .join(" ");
                if !g.taken {
                    out.skipped += 1;
                    continue;
                }
                out.entries.push(BankEntry {
                    line_no: out.entries.len() as i64 + 1,
                    booked_on: g.as_of.to_string(),
                    value_on: value_on.map(|d| d.to_string()),
                    money: Money::new(minor, a.currency),
                    direction,
                    reversal: false,
                    bank_ref: present(fields[refs]),
                    end_to_end_id: present(fields[refs + 1]),
                    remittance: present(&text),
                    counterparty: None,
                });
            }
            "49" => {
                let (Some(g), Some(a)) = (group.as_mut(), account.take()) else {
                    return Err(out_of_place("no account (03) is open"));
                };
                let records = a.records + rec.physical;
                check(
                    rec,
                    &format!("account {} (line {})", quote(&a.number), a.line),
                    a.total,
                    &[("records", records, 1)],
                )?;
                add(&mut g.total, a.total)?;
                g.records += records;
            }
            "98" => {
                if account.is_some() {
                    return Err(out_of_place("the account before it has no trailer (49)"));
                }
                let Some(g) = group.take() else {
                    return Err(out_of_place("no group (02) is open"));
                };
                let records = g.records + rec.physical;
                check(
                    rec,
                    "group",
                    g.total,
                    &[("accounts", g.accounts as i64, 1), ("records", records, 2)],
                )?;
                add(&mut file_total, g.total)?;
                file_groups += 1;
                file_records += records;
            }
            "99" => {
                if group.is_some() {
                    return Err(out_of_place("the group before it has no trailer (98)"));
                }
                check(
                    rec,
                    "file",
                    file_total,
                    &[
                        ("groups", file_groups as i64, 1),
                        ("records", file_records + rec.physical, 2),
                    ],
                )?;
                ended = true;
            }
            _ => return Err(out_of_place("a second file header")),
        }
    }
    if !ended {
        return Err(
            "the file ends before its trailer (99): cut short, or not all of it was sent".into(),
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bank::fixtures::{fixture, text};

    #[test]
    fn the_specifications_example_reads_with_its_totals_checked() {
        let s = parse(&fixture("bai2_spec_example.txt")).unwrap();
        assert_eq!(s.format, "bai2");
        assert_eq!(s.account.as_deref(), Some("0123456789"));
        assert_eq!(s.bank_ref.as_deref(), Some("1"));
        assert_eq!(s.entries.len(), 4);
        let e = &s.entries[0];
        assert_eq!((e.money.minor, e.money.currency.code()), (450_000, "USD"));
        assert_eq!(e.direction, Direction::Credit);
        assert_eq!(e.booked_on, "2004-06-20");
        let lockbox = &s.entries[1];
        assert_eq!(lockbox.remittance.as_deref(), Some("LOCK BOX NO.68751"));
        let letter = &s.entries[2];
        assert_eq!(letter.value_on.as_deref(), Some("2004-06-22"));
        assert_eq!(letter.bank_ref.as_deref(), Some("SP4738"));
        assert_eq!(letter.end_to_end_id.as_deref(), Some("YRC065321"));
        assert_eq!(
            letter.remittance.as_deref(),
            Some("PROCEEDS OF LETTER OF CREDIT FROM THE ARAMCO OIL CO")
        );
        let s = parse(&fixture("bai2_spec_section3.txt")).unwrap();
        assert_eq!(s.entries.len(), 1);
        assert_eq!(s.entries[0].bank_ref.as_deref(), Some("DD1620"));
        assert_eq!(s.entries[0].remittance.as_deref(), Some("DEALER PAYMENTS"));
    }

    #[test]
    fn a_banks_sample_reads_credits_and_debits_in_its_currency() {
        let s = parse(&fixture("bai2_cad_sample.txt")).unwrap();
        assert_eq!(s.entries.len(), 17);
        let e = &s.entries[0];
        assert_eq!((e.money.minor, e.money.currency.code()), (2_500, "CAD"));
        assert_eq!(e.direction, Direction::Debit);
        assert_eq!(e.value_on.as_deref(), Some("2006-03-16"));
        assert_eq!(e.booked_on, "2006-03-17");
        assert_eq!(e.remittance.as_deref(), Some("RETURNED CHEQUE"));
        assert_eq!(s.entries[3].direction, Direction::Credit);
        let credits: i64 = s
            .entries
            .iter()
            .filter(|e| e.direction == Direction::Credit)
            .map(|e| e.money.minor)
            .sum();
        assert_eq!(credits, 208_500 + 111_500);
    }

    #[test]
    fn a_file_whose_totals_disagree_or_that_is_broken_is_refused() {
        let good = text("bai2_spec_example.txt");
        let err = parse(good.replace("49,9150000,4/", "49,9150001,4/").as_bytes()).unwrap_err();
        assert!(
            err.starts_with("line 6: the account \"0123456789\" (line 3)'s control total says \"9150001\", but its amounts sum to 9150000"),
            "{err}"
        );
        let err = parse(good.replace("16,115,450000,", "16,115,450001,").as_bytes()).unwrap_err();
        assert!(
            err.contains("line 6") && err.contains("does not add up"),
            "{err}"
        );
        let err = parse(
            good.replace("98,13150000,2,11/", "98,13150000,2,12/")
                .as_bytes(),
        )
        .unwrap_err();
        assert!(
            err.contains("the group says \"12\" records, but it holds 11"),
            "{err}"
        );
        let err = parse(
            good.replace("99,345450000,4,31/", "99,345450000,3,31/")
                .as_bytes(),
        )
        .unwrap_err();
        assert!(err.contains("groups"), "{err}");
        let err = parse(
            good.replace("99,345450000,4,31/", "99,345450001,4,31/")
                .as_bytes(),
        )
        .unwrap_err();
        assert!(err.contains("file's control total"), "{err}");
        let cut = &good[..good.find("98,180000000").unwrap()];
        let err = parse(cut.as_bytes()).unwrap_err();
        assert!(err.contains("ends before its trailer"), "{err}");
        let err = parse(good.replace("16,195,", "16,995,").as_bytes()).unwrap_err();
        assert!(err.contains("type code \"995\""), "{err}");
        let err = parse(
            good.replace("16,195,10000000,", "16,195,100000.00,")
                .as_bytes(),
        )
        .unwrap_err();
        assert!(err.contains("amount \"100000.00\""), "{err}");
        let err = parse(good.replacen(",1,040620,", ",2,040620,", 1).as_bytes()).unwrap_err();
        assert!(err.contains("deletes data"), "{err}");
        let err = parse(good.replacen("2/\n02", "3/\n02", 1).as_bytes()).unwrap_err();
        assert!(err.contains("version is \"3\""), "{err}");
        assert!(
            parse(b"date,amount\n")
                .unwrap_err()
                .contains("is not a BAI2 record")
        );
    }

    #[test]
    fn a_test_only_group_is_checked_but_not_imported() {
        let good = text("bai2_spec_example.txt");
        let s = parse(good.replacen(",1,040620,", ",4,040620,", 1).as_bytes()).unwrap();
        assert_eq!((s.entries.len(), s.skipped), (2, 2));
    }
}
