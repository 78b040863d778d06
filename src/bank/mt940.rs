//! SWIFT MT940 (Customer Statement Message), read by hand: the `mt940`
//! crate refuses any character outside SWIFT's set unless transliterated
//! (losing a payout id's `_` and a payer's umlauts) and its errors name no
//! line. A file holds one or more statements (`:20:` to `:62F:`/`:62M:`),
//! optionally in a SWIFT envelope or with a bank's header lines before
//! them; each statement's opening balance plus its entries must be its
//! closing balance, and a statement continued (`:62M:` → `:60M:`) must
//! open where the previous one closed, or the whole file is refused.

use super::{BankEntry, Direction, ParsedStatement};
use crate::domain::{Currency, Money, quote};
use jiff::civil::Date;

/// One field: its tag, the line it starts on, its lines.
struct Field {
    tag: String,
    line: usize,
    lines: Vec<String>,
}

impl Field {
    fn first(&self) -> &str {
        self.lines.first().map_or("", |l| l.trim_end())
    }
}

/// `:20:` … the tag of a line that starts a field, and the rest.
fn tag_of(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix(':')?;
    let end = rest.find(':')?;
    let tag = &rest[..end];
    let ok = (2..=3).contains(&tag.len())
        && tag.as_bytes()[..2].iter().all(u8::is_ascii_digit)
        && tag.as_bytes()[2..].iter().all(u8::is_ascii_uppercase);
    ok.then(|| (tag, &rest[end + 1..]))
}

/// The file's text: UTF-8, or else ISO 8859-1 as most European banks
/// write it (every byte is a character there).
fn text_of(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.trim_start_matches('\u{feff}').to_owned(),
        Err(_) => bytes.iter().map(|&b| char::from(b)).collect(),
    }
}

/// The fields of each statement in the file, in order. Lines before the
/// first `:20:` (a bank's header, a SWIFT envelope's `{1:…}{2:…}{4:`) and
/// the separators between statements (`-`, `-}`) are not part of any.
fn statements(text: &str) -> Result<Vec<Vec<Field>>, String> {
    let mut out: Vec<Vec<Field>> = Vec::new();
    // Whether a non-field line may follow: it continues a :61: or :86:.
    let mut open = false;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim_end_matches(['\r', '\u{1a}']);
        if let Some((tag, rest)) = tag_of(line) {
            if tag == "20" {
                out.push(Vec::new());
            }
            let Some(statement) = out.last_mut() else {
                // A bank's own line before the first statement (":940:").
                continue;
            };
            statement.push(Field {
                tag: tag.to_owned(),
                line: n,
                lines: vec![rest.to_owned()],
            });
            open = matches!(tag, "61" | "86");
            continue;
        }
        let trimmed = line.trim();
        let separator = trimmed == "-" || trimmed.starts_with("-}") || trimmed.starts_with('{');
        if separator {
            open = false;
            continue;
        }
        if open && let Some(field) = out.last_mut().and_then(|s| s.last_mut()) {
            field.lines.push(line.to_owned());
            continue;
        }
        if trimmed.is_empty() {
            continue;
        }
        let closed = out
            .last()
            .and_then(|s| s.last())
            .is_none_or(|f| matches!(f.tag.as_str(), "62F" | "62M" | "64" | "65"));
        if !closed {
            return Err(format!(
                "line {n}: {} continues the field :{}: which has one line",
                quote(trimmed),
                out.last().and_then(|s| s.last()).map_or("", |f| &f.tag)
            ));
        }
        // Text between statements (a bank's header of the next one).
    }
    if out.is_empty() {
        return Err(
            "no :20: field: not an MT940 statement (fields :20:, :25:, :28C:, :60F:, :61:, :62F:)"
                .into(),
        );
    }
    Ok(out)
}

/// `YYMMDD` as a date; SWIFT's two-digit years are taken as 1980–2079.
fn date6(s: &str) -> Option<Date> {
    if s.len() != 6 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let yy: i16 = s[..2].parse().ok()?;
    let year = if yy >= 80 { 1900 + yy } else { 2000 + yy };
    Date::new(year, s[2..4].parse().ok()?, s[4..].parse().ok()?).ok()
}

/// An MT940 amount, `1234,56` (a comma, never a point, decimals optional).
fn amount(s: &str, currency: Currency) -> Result<Money, String> {
    let bad = || format!("amount {} is not an MT940 amount like 1234,56", quote(s));
    if s.is_empty()
        || s.len() > 15
        || s.bytes().filter(|&b| b == b',').count() != 1
        || !s.bytes().all(|b| b.is_ascii_digit() || b == b',')
    {
        return Err(bad());
    }
    let dotted = s.replace(',', ".");
    let dotted = dotted.strip_suffix('.').unwrap_or(&dotted);
    let dotted = if dotted.starts_with('.') {
        format!("0{dotted}")
    } else {
        dotted.to_owned()
    };
    Money::parse_major(&dotted, currency).map_err(|e| format!("amount {}: {e}", quote(s)))
}

/// A balance, `C261203EUR25000,00`: signed minor units, its date, its
/// currency.
struct Balance {
    minor: i64,
    currency: Currency,
}

fn balance(f: &Field) -> Result<Balance, String> {
    let v = f.first().trim();
    let bad = |why: &str| {
        format!(
            "line {}: :{}: {} {why} (expected D or C, YYMMDD, currency, amount: C261203EUR1000,00)",
            f.line,
            f.tag,
            quote(v)
        )
    };
    let sign = match v.as_bytes().first() {
        Some(b'C') => 1,
        Some(b'D') => -1,
        _ => return Err(bad("has no D/C mark")),
    };
    v.get(1..7)
        .and_then(date6)
        .ok_or_else(|| bad("has no valid date"))?;
    let code = v.get(7..10).ok_or_else(|| bad("has no currency"))?;
    let currency = Currency::parse(code).map_err(|e| bad(&e.to_string()))?;
    let money = amount(v.get(10..).unwrap_or(""), currency).map_err(|e| bad(&e))?;
    Ok(Balance {
        minor: sign * money.minor,
        currency,
    })
}

/// A statement line's fields as `:61:` gives them.
struct Line61 {
    value_on: Date,
    booked_on: Date,
    direction: Direction,
    reversal: bool,
    minor: i64,
    customer_ref: Option<String>,
    bank_ref: Option<String>,
    details: Option<String>,
}

/// The entry date's year: the one that puts `MMDD` nearest the value date
/// (a December value date booked in January is next year's).
fn entry_date(value: Date, mmdd: &str) -> Option<Date> {
    let (m, d): (i8, i8) = (mmdd[..2].parse().ok()?, mmdd[2..].parse().ok()?);
    [value.year() - 1, value.year(), value.year() + 1]
        .into_iter()
        .filter_map(|y| Date::new(y, m, d).ok())
        .min_by_key(|c| (*c - value).get_days().abs())
}

/// `:61:` — value date `YYMMDD`, entry date `MMDD` (optional), mark `C`,
/// `D`, `RC` or `RD`, the currency's third letter (optional), amount,
/// transaction type (`N`/`F`/`S` and three characters), the owner's
/// reference, `//` the bank's reference; a second line of details.
fn line61(f: &Field, currency: Currency) -> Result<Line61, String> {
    let v = f.first();
    let bad = |why: String| format!("line {}: :61: {} {why}", f.line, quote(v));
    let b = v.as_bytes();
    let value_on = v
        .get(..6)
        .and_then(date6)
        .ok_or_else(|| bad("has no valid value date (YYMMDD)".into()))?;
    let mut at = 6;
    let mut booked_on = value_on;
    if b.get(6).is_some_and(u8::is_ascii_digit) {
        booked_on = v
            .get(6..10)
            .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|s| entry_date(value_on, s))
            .ok_or_else(|| bad("has no valid entry date (MMDD)".into()))?;
        at = 10;
    }
    let (direction, reversal, len) = match v.get(at..at + 2) {
        Some("RC") => (Direction::Debit, true, 2),
        Some("RD") => (Direction::Credit, true, 2),
        _ => match b.get(at) {
            Some(b'C') => (Direction::Credit, false, 1),
            Some(b'D') => (Direction::Debit, false, 1),
            _ => return Err(bad("has no debit/credit mark (C, D, RC or RD)".into())),
        },
    };
    at += len;
    if b.get(at).is_some_and(u8::is_ascii_alphabetic) {
        at += 1; // the funds code, the currency's third letter
    }
    let end = at
        + b[at..]
            .iter()
            // A point is no MT940 decimal mark, but read it to quote it.
            .position(|b| !(b.is_ascii_digit() || *b == b',' || *b == b'.'))
            .unwrap_or(b.len() - at);
    let money = amount(&v[at..end], currency).map_err(bad)?;
    let kind = v
        .get(end..end + 4)
        .filter(|t| {
            matches!(t.as_bytes()[0], b'N' | b'F' | b'S')
                && t[1..].bytes().all(|b| b.is_ascii_alphanumeric())
        })
        .ok_or_else(|| {
            bad("has no transaction type after the amount (N, F or S and three characters, e.g. NTRF)".into())
        })?;
    let refs = &v[end + kind.len()..];
    let (customer, bank) = match refs.split_once("//") {
        Some((c, b)) => (c, Some(b)),
        None => (refs, None),
    };
    let present = |s: &str| {
        let s = s.trim();
        (!s.is_empty() && s != "NONREF").then(|| s.to_owned())
    };
    if customer.trim().is_empty() {
        return Err(bad(
            "has no reference for the account owner (NONREF when none)".into(),
        ));
    }
    let details = f.lines[1..]
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    Ok(Line61 {
        value_on,
        booked_on,
        direction,
        reversal,
        minor: money.minor,
        customer_ref: present(customer),
        bank_ref: bank.and_then(present),
        details: (!details.is_empty()).then_some(details),
    })
}

/// What a `:86:` says: the text to keep, and, when structured, the other
/// party's name and the end-to-end reference.
#[derive(Debug, Default, PartialEq, Eq)]
struct Info {
    text: Option<String>,
    counterparty: Option<String>,
    end_to_end: Option<String>,
}

/// The SEPA purpose keywords a German `?2x` purpose is split by.
const SEPA_KEYS: [&str; 12] = [
    "EREF+", "KREF+", "MREF+", "CRED+", "DEBT+", "COAM+", "OAMT+", "SVWZ+", "ABWA+", "ABWE+",
    "PURP+", "BREF+",
];

/// The value after a SEPA keyword, up to the next keyword.
fn sepa_value(purpose: &str, key: &str) -> Option<String> {
    let from = purpose.find(key)? + key.len();
    let rest = &purpose[from..];
    let end = SEPA_KEYS
        .iter()
        .filter_map(|k| rest.find(k))
        .min()
        .unwrap_or(rest.len());
    let v = rest[..end].trim();
    (!v.is_empty() && v != "NOTPROVIDED").then(|| v.to_owned())
}

/// The codes of the `/CODE/value` form Dutch and other banks use.
const SLASH_CODES: [&str; 16] = [
    "TRTP", "EREF", "REMI", "NAME", "ORDP", "BENM", "IBAN", "BIC", "CSID", "MARF", "PURP", "ISDT",
    "RTRN", "CNTP", "ADDR", "ULTD",
];

fn info86(lines: &[String]) -> Info {
    let lines: Vec<&str> = lines.iter().map(|l| l.trim_end()).collect();
    let whole: String = lines.concat();
    let nonempty = |s: String| {
        let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
        (!s.is_empty()).then_some(s)
    };
    let b = whole.as_bytes();
    // German structured form: a three-digit business code, then ?NN
    // subfields (lines wrap anywhere, so they are joined without a space).
    if b.len() > 3 && b[..3].iter().all(u8::is_ascii_digit) && b[3] == b'?' {
        let mut sub: Vec<(u8, String)> = Vec::new();
        let mut rest = &whole[3..];
        while let Some(body) = rest.strip_prefix('?') {
            let key = body.get(..2).and_then(|k| k.parse::<u8>().ok());
            let Some(key) = key else { break };
            let body = &body[2..];
            let end = body.find('?').unwrap_or(body.len());
            sub.push((key, body[..end].to_owned()));
            rest = &body[end..];
        }
        let join = |keys: &dyn Fn(u8) -> bool| {
            sub.iter()
                .filter(|(k, _)| keys(*k))
                .map(|(_, v)| v.as_str())
                .collect::<String>()
        };
        let purpose = join(&|k| (20..=29).contains(&k) || (60..=63).contains(&k));
        let posting = join(&|k| k == 0);
        // The remittance is the SVWZ+ text where the purpose is split
        // into keywords, the whole purpose where it is not.
        let remittance = sepa_value(&purpose, "SVWZ+").unwrap_or_else(|| purpose.clone());
        return Info {
            end_to_end: sepa_value(&purpose, "EREF+"),
            counterparty: nonempty(join(&|k| k == 32 || k == 33)),
            text: nonempty(format!("{posting} {remittance}")),
        };
    }
    // `/CODE/value/CODE/value`: split at the known codes only, since a
    // value may hold a slash of its own.
    if whole.starts_with('/')
        && SLASH_CODES
            .iter()
            .any(|c| whole.starts_with(&format!("/{c}/")))
    {
        let mut marks: Vec<(usize, &str)> = SLASH_CODES
            .iter()
            .flat_map(|c| {
                let pat = format!("/{c}/");
                whole
                    .match_indices(&pat)
                    .map(|(at, _)| (at, *c))
                    .collect::<Vec<_>>()
            })
            .collect();
        marks.sort();
        let value = |code: &str| {
            marks
                .iter()
                .enumerate()
                .find(|(_, (_, c))| *c == code)
                .map(|(i, (at, c))| {
                    let from = at + c.len() + 2;
                    let to = marks.get(i + 1).map_or(whole.len(), |(next, _)| *next);
                    whole[from..to.max(from)]
                        .trim_matches('/')
                        .trim()
                        .to_owned()
                })
        };
        let remittance = value("REMI").map(|r| {
            // `/REMI/USTD//text/`: the unstructured text itself.
            r.strip_prefix("USTD//").unwrap_or(&r).to_owned()
        });
        return Info {
            end_to_end: value("EREF").filter(|e| !e.is_empty() && e != "NOTPROVIDED"),
            counterparty: value("NAME").and_then(nonempty),
            text: nonempty(remittance.unwrap_or_else(|| whole.clone())),
        };
    }
    Info {
        text: nonempty(lines.join(" ")),
        ..Info::default()
    }
}

/// Reads an MT940 file: every entry of every statement, each statement's
/// balances checked. Anything unreadable refuses the whole file, naming
/// the line.
pub fn parse(bytes: &[u8]) -> Result<ParsedStatement, String> {
    let text = text_of(bytes);
    let mut out = ParsedStatement {
        format: "mt940",
        ..ParsedStatement::default()
    };
    // The previous statement's account and closing balance, to check a
    // statement opens where the one before it closed.
    let mut previous: Option<(String, Balance)> = None;
    for (s_at, fields) in statements(&text)?.iter().enumerate() {
        let s_no = s_at + 1;
        let at = |f: &Field| format!("statement {s_no} line {}", f.line);
        // The order a statement's fields come in: the next field's tag
        // must be one of these.
        let mut allowed: &[&str] = &["20"];
        let (mut reference, mut account, mut number) = (None, None, None);
        let (mut opening, mut closing): (Option<Balance>, Option<Balance>) = (None, None);
        let mut first_line = 0;
        // Each entry with the lines of the :86: fields that follow it.
        let mut lines: Vec<(Line61, Vec<String>)> = Vec::new();
        for f in fields {
            if !allowed.contains(&f.tag.as_str()) {
                let known = [
                    "20", "21", "25", "28", "28C", "60F", "60M", "61", "86", "62F", "62M", "64",
                    "65",
                ];
                return Err(if known.contains(&f.tag.as_str()) {
                    format!(
                        "{}: field :{}: is out of place (expected {})",
                        at(f),
                        f.tag,
                        allowed
                            .iter()
                            .map(|t| format!(":{t}:"))
                            .collect::<Vec<_>>()
                            .join(" or ")
                    )
                } else {
                    format!(
                        "{}: field :{}: is not part of an MT940 statement",
                        at(f),
                        f.tag
                    )
                });
            }
            match f.tag.as_str() {
                "20" => {
                    reference = Some(f.first().trim().to_owned());
                    first_line = f.line;
                    allowed = &["21", "25"];
                }
                "21" => allowed = &["25"],
                "25" => {
                    account = Some(f.first().trim().to_owned());
                    allowed = &["28C", "28"];
                }
                "28" | "28C" => {
                    number = Some(f.first().trim().to_owned());
                    allowed = &["60F", "60M"];
                }
                "60F" | "60M" => {
                    opening = Some(balance(f).map_err(|e| format!("statement {s_no} {e}"))?);
                    allowed = &["61", "86", "62F", "62M"];
                }
                "61" => {
                    // The order above puts a :60F: before any :61:.
                    let Some(currency) = opening.as_ref().map(|b| b.currency) else {
                        continue;
                    };
                    let l = line61(f, currency).map_err(|e| format!("statement {s_no} {e}"))?;
                    lines.push((l, Vec::new()));
                    allowed = &["61", "86", "62F", "62M"];
                }
                "86" => {
                    // After a :61: it describes that entry; before any,
                    // the account (left aside).
                    if closing.is_none()
                        && let Some((_, info)) = lines.last_mut()
                    {
                        info.extend(f.lines.iter().cloned());
                    }
                    if closing.is_none() {
                        allowed = &["61", "86", "62F", "62M"];
                    }
                }
                "62F" | "62M" => {
                    closing = Some(balance(f).map_err(|e| format!("statement {s_no} {e}"))?);
                    allowed = &["64", "65", "86"];
                }
                "64" | "65" => {
                    balance(f).map_err(|e| format!("statement {s_no} {e}"))?;
                    allowed = &["65", "86"];
                }
                _ => {}
            }
        }
        let (Some(opening), Some(closing), Some(account)) = (opening, closing, account) else {
            return Err(format!(
                "statement {s_no} (line {first_line}) ends before its {}: a statement has :20:, :25:, :28C:, :60F: and :62F:",
                if allowed.contains(&"25") {
                    ":25: account"
                } else if allowed.contains(&"60F") {
                    ":60F: opening balance"
                } else {
                    ":62F: closing balance"
                }
            ));
        };
        let number = number.unwrap_or_default();
        let named = format!(
            "statement {s_no} (:20: {}, :28C: {})",
            quote(reference.as_deref().unwrap_or("")),
            quote(&number)
        );
        if closing.currency != opening.currency {
            return Err(format!(
                "{named}: it opens in {} and closes in {}",
                opening.currency, closing.currency
            ));
        }
        let shown = |minor: i64| Money::new(minor, opening.currency).shown();
        if let Some((prev_account, prev)) = &previous
            && *prev_account == account
            && prev.currency == opening.currency
            && prev.minor != opening.minor
        {
            return Err(format!(
                "{named} opens at {} but the statement before it closed at {}: a statement is missing or altered",
                shown(opening.minor),
                shown(prev.minor)
            ));
        }
        let moved = lines.iter().try_fold(0i64, |sum, (l, _)| {
            let signed = match l.direction {
                Direction::Credit => l.minor,
                Direction::Debit => -l.minor,
            };
            sum.checked_add(signed)
        });
        let Some(moved) = moved.and_then(|m| m.checked_add(opening.minor)) else {
            return Err(format!("{named}: its amounts overflow"));
        };
        if moved != closing.minor {
            return Err(format!(
                "{named}: the opening balance {} and its {} entries make {}, but its closing balance says {}: the statement does not add up",
                shown(opening.minor),
                lines.len(),
                shown(moved),
                shown(closing.minor)
            ));
        }
        if out.account.is_none() {
            out.account = Some(account.clone());
            out.bank_ref = reference.clone().filter(|r| !r.is_empty());
        }
        for (l, info) in lines {
            let info = info86(&info);
            let remittance = [info.text, l.details]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" ");
            out.entries.push(BankEntry {
                line_no: out.entries.len() as i64 + 1,
                booked_on: l.booked_on.to_string(),
                value_on: Some(l.value_on.to_string()),
                money: Money::new(l.minor, opening.currency),
                direction: l.direction,
                reversal: l.reversal,
                bank_ref: l.bank_ref,
                end_to_end_id: info.end_to_end.or(l.customer_ref),
                remittance: (!remittance.is_empty()).then_some(remittance),
                counterparty: info.counterparty,
            });
        }
        previous = Some((account, closing));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bank::fixtures::{fixture, text};

    fn signed(e: &BankEntry) -> i64 {
        match e.direction {
            Direction::Credit => e.money.minor,
            Direction::Debit => -e.money.minor,
        }
    }

    #[test]
    fn danske_banks_published_example_reads_its_fifteen_statements() {
        let s = parse(&fixture("mt940_danske_dk.sta")).unwrap();
        assert_eq!(s.format, "mt940");
        assert_eq!(s.account.as_deref(), Some("DABADKKK/1234567890"));
        assert_eq!(s.bank_ref.as_deref(), Some("3996-1234567890"));
        assert_eq!(s.entries.len(), 89);
        let first = &s.entries[0];
        assert_eq!(first.direction, Direction::Debit);
        assert_eq!(
            (first.money.minor, first.money.currency.code()),
            (82_941_978, "DKK")
        );
        assert_eq!(first.value_on.as_deref(), Some("2009-09-29"));
        assert_eq!(first.booked_on, "2009-09-29");
        assert_eq!(first.end_to_end_id.as_deref(), Some("Dansken"));
        // Value date 1 October, booked 30 September.
        let fees = &s.entries[1];
        assert_eq!(
            (fees.value_on.as_deref(), fees.booked_on.as_str()),
            (Some("2009-10-01"), "2009-09-30")
        );
        assert_eq!(fees.bank_ref.as_deref(), Some("nota"));
        assert_eq!(fees.remittance.as_deref(), Some("Gebyrer ifolge nota"));
        // The first opening balance plus every entry is the last closing one.
        let moved: i64 = s.entries.iter().map(signed).sum();
        assert_eq!(247_892_670 + moved, 385_137_947);
        let multi = s
            .entries
            .iter()
            .find(|e| {
                e.remittance
                    .as_deref()
                    .is_some_and(|r| r.starts_with("DBT.Testkunde V/TESTKUNDE"))
            })
            .unwrap();
        assert_eq!(
            multi.remittance.as_deref(),
            Some("DBT.Testkunde V/TESTKUNDE HOLMENS KANAL 2-12 1192 KOBENHAVN H")
        );
    }

    #[test]
    fn other_published_examples_read_with_their_structured_details() {
        let fi = parse(&fixture("mt940_danske_fi.sta")).unwrap();
        assert_eq!(fi.entries.len(), 6);
        assert_eq!(fi.entries[0].money.minor, 23);
        assert_eq!(fi.entries[0].direction, Direction::Credit);
        let rabo = parse(&fixture("mt940_rabobank.sta")).unwrap();
        assert_eq!(rabo.account.as_deref(), Some("NL71RABO0123456789"));
        assert_eq!(rabo.entries.len(), 4);
        let e = &rabo.entries[0];
        assert_eq!(e.money.minor, 2_500);
        assert_eq!(
            e.end_to_end_id.as_deref(),
            Some("01-01-2013 12:00 0030000987654321")
        );
        assert_eq!(e.counterparty.as_deref(), Some("CONTRA ACCOUNT HOLDER"));
        let e = &rabo.entries[1];
        assert_eq!(
            e.remittance.as_deref(),
            Some("Reference 201301234 P001234567")
        );
        assert_eq!(e.counterparty.as_deref(), Some("JOHN DOE"));
    }

    #[test]
    fn german_structured_details_give_the_reference_name_and_text() {
        let s = parse(&fixture("mt940_stripe.sta")).unwrap();
        assert_eq!(s.entries.len(), 6);
        let e = &s.entries[0];
        assert_eq!(e.end_to_end_id.as_deref(), Some("po_1QaPAYOUTmatched"));
        assert_eq!(
            e.counterparty.as_deref(),
            Some("STRIPE PAYMENTS EUROPE LTD")
        );
        assert_eq!(
            e.remittance.as_deref(),
            Some("SEPA-GUTSCHRIFT STRIPE RECKON DEMO")
        );
        assert_eq!(e.bank_ref.as_deref(), Some("20261203-0001"));
        assert_eq!(e.booked_on, "2026-12-03");
        let e = &s.entries[1];
        assert_eq!(
            e.end_to_end_id, None,
            "NOTPROVIDED and NONREF are no reference"
        );
        assert_eq!(
            e.remittance.as_deref(),
            Some("SEPA-GUTSCHRIFT STRIPE PAYOUT po_1QaPAYOUTshort")
        );
        let e = &s.entries[3];
        assert_eq!(e.remittance.as_deref(), Some("STRIPE ADJUSTMENT"));
        assert_eq!(
            e.counterparty.as_deref(),
            Some("STRIPE PAYMENTS EUROPE LTD")
        );
        let e = &s.entries[4];
        assert_eq!(
            (e.money.minor, e.end_to_end_id.as_deref()),
            (12_000, Some("INV-2026-118"))
        );
        assert_eq!(s.entries[5].direction, Direction::Debit);
    }

    #[test]
    fn a_statement_that_does_not_add_up_or_is_broken_is_refused() {
        let good = text("mt940_danske_fi.sta");
        let off = good.replace(":62F:C090930EUR53126,94", ":62F:C090930EUR53126,95");
        let err = parse(off.as_bytes()).unwrap_err();
        assert!(
            err.contains("does not add up") && err.contains("53,126.95"),
            "{err}"
        );
        let err = parse(good.replace("DR390,40NMSC", "DR390.40NMSC").as_bytes()).unwrap_err();
        assert!(err.starts_with("statement 1 line 19: :61:"), "{err}");
        let err = parse(good.replace(":62F:", ":62X:").as_bytes()).unwrap_err();
        assert!(
            err.contains(":62X: is not part of an MT940 statement"),
            "{err}"
        );
        let cut = &good[..good.find(":62F:").unwrap()];
        let err = parse(cut.as_bytes()).unwrap_err();
        assert!(
            err.contains("ends before its :62F: closing balance"),
            "{err}"
        );
        let err = parse(good.replace(":28C:", ":28D:").as_bytes()).unwrap_err();
        assert!(err.contains("statement 1 line"), "{err}");
        assert!(
            parse(b"date,amount\n")
                .unwrap_err()
                .contains("no :20: field")
        );
        // A continued statement that does not open where the last closed.
        let dk = text("mt940_danske_dk.sta")
            .replace(":60M:C091016DKK2040421,62", ":60M:C091016DKK2040421,63");
        let err = parse(dk.as_bytes()).unwrap_err();
        assert!(err.contains("statement before it closed at"), "{err}");
    }

    #[test]
    fn a_latin1_file_keeps_its_umlauts() {
        let mut file = b":20:X\n:25:ACC\n:28C:1/1\n:60F:C261203EUR0,\n:61:261203C5,00NTRFNONREF\n:86:166?00GUTSCHRIFT?20SVWZ+Miete?32M".to_vec();
        file.push(0xFC); // ü in ISO 8859-1
        file.extend_from_slice(b"ller\n:62F:C261203EUR5,\n");
        let s = parse(&file).unwrap();
        assert_eq!(s.entries[0].counterparty.as_deref(), Some("M\u{fc}ller"));
    }

    #[test]
    fn a_reversal_and_a_january_booking_of_a_december_value() {
        let file = ":20:X\n:25:ACC\n:28C:1/1\n:60F:C261231EUR100,00\n:61:2612310102RD10,00NTRFNONREF\n:61:261231RC5,00NTRFREF1\n:62F:C270102EUR105,00\n";
        let s = parse(file.as_bytes()).unwrap();
        assert_eq!(s.entries[0].booked_on, "2027-01-02");
        assert!(s.entries[0].reversal && s.entries[0].direction == Direction::Credit);
        assert!(s.entries[1].reversal && s.entries[1].direction == Direction::Debit);
    }
}
