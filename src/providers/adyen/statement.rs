//! Adyen's Settlement details report (`settlement_detail_report_batch_N.csv`,
//! reporting docs "Settlement details report" and its structure page): a
//! header naming the columns (read by name: Adyen adds columns by account
//! setting and moved some in its 2023 report migration), then one line per
//! journal entry, amounts in major units, each in its own column of debit
//! or credit. `Settled` lines are payments (Gross Credit in the Gross
//! Currency); `Refunded` lines are refunds (Gross Debit), the refund being
//! the line's `Modification Reference` and Reckon's refund_no its
//! `Modification Merchant Reference` (the `reference` Reckon sent). A
//! payment is Adyen's `Psp Reference`, Reckon's payment_no its
//! `Merchant Reference`. The fee of a line is its `Commission`, `Markup`,
//! `Scheme Fees` and `Interchange` (in the net currency) when the line has
//! them, else what the gross and net differ by when both are in one
//! currency. Other types — Fee, MerchantPayout, Chargeback,
//! DepositCorrection, … — are not payments or refunds. The report states
//! no totals of its own.
//!
//! Times: `Creation Date` on the clocks of the line's `TimeZone`, a short
//! name (CET, CEST, BST, …); a name that stands for one fixed offset is
//! read as that offset, another only in the zone the caller gives (the
//! account's time zone setting), and without one it is refused.

use crate::domain::{Currency, Fee};
use crate::providers::PayoutSeen;
use crate::statement::csv::CsvFields;
use crate::statement::time::{local_time, zoned_time};
use crate::statement::{
    BillFormat, Check, Chunk, Format, LastCurrency, Progress, RowKind, RowRef, money, present,
};

/// Adyen's Settlement details report format.
pub const FORMAT: Format = Format::new(
    "adyen settlement details",
    "Adyen",
    "Settlement details report",
    || Box::new(AdyenBill::default()),
);

#[derive(Default)]
struct AdyenBill {
    header: Option<(usize, Columns)>,
    zone: Option<jiff::tz::TimeZone>,
    csv: CsvFields,
    currency: LastCurrency,
}

#[derive(Clone, Copy)]
struct Columns {
    psp: usize,
    merchant_ref: Option<usize>,
    created: usize,
    zone: Option<usize>,
    kind: usize,
    modification: Option<usize>,
    modification_ref: Option<usize>,
    gross_currency: usize,
    gross_debit: usize,
    gross_credit: usize,
    net_currency: Option<usize>,
    net_debit: Option<usize>,
    net_credit: Option<usize>,
    fees: [Option<usize>; 4],
}

/// The short zone names that stand for one offset (hours), as Adyen
/// writes `TimeZone`.
const FIXED: [(&str, i8); 10] = [
    ("UTC", 0),
    ("GMT", 0),
    ("WET", 0),
    ("WEST", 1),
    ("BST", 1),
    ("CET", 1),
    ("CEST", 2),
    ("EET", 2),
    ("EEST", 3),
    ("MSK", 3),
];

impl BillFormat for AdyenBill {
    fn times_in(&mut self, zone: &jiff::tz::TimeZone) {
        self.zone = Some(zone.clone());
    }

    fn line(&mut self, text: &str, line_no: i64, out: &mut Chunk) -> Result<bool, String> {
        let f = self.csv.split(text);
        let Some((width, at)) = self.header else {
            let find = |name: &str| f.iter().position(|h| h.trim() == name);
            let need = |name: &str| {
                find(name).ok_or_else(|| {
                    format!("expected the Adyen Settlement details report header (missing {name})")
                })
            };
            let columns = Columns {
                psp: need("Psp Reference")?,
                merchant_ref: find("Merchant Reference"),
                created: need("Creation Date")?,
                zone: find("TimeZone"),
                kind: need("Type")?,
                modification: find("Modification Reference"),
                modification_ref: find("Modification Merchant Reference"),
                gross_currency: need("Gross Currency")?,
                gross_debit: need("Gross Debit (GC)")?,
                gross_credit: need("Gross Credit (GC)")?,
                net_currency: find("Net Currency"),
                net_debit: find("Net Debit (NC)"),
                net_credit: find("Net Credit (NC)"),
                fees: [
                    find("Commission (NC)"),
                    find("Markup (NC)"),
                    find("Scheme Fees (NC)"),
                    find("Interchange (NC)"),
                ],
            };
            self.header = Some((f.len(), columns));
            return Ok(false);
        };
        if f.len() != width {
            return Err(format!("expected {width} fields, found {}", f.len()));
        }
        let get = |column: usize| f.get(column).trim();
        let opt = |column: Option<usize>| column.map_or("", get);
        let (kind, gross, net) = match get(at.kind) {
            "Settled" => (RowKind::Payment, get(at.gross_credit), opt(at.net_credit)),
            "Refunded" => (RowKind::Refund, get(at.gross_debit), opt(at.net_debit)),
            _ => return Ok(false),
        };
        let currency = self.currency.parse(get(at.gross_currency))?;
        let money = money(gross, currency)?;
        let fee = line_fee(&f, at, currency, money, net)?;
        let created = get(at.created);
        let zone_name = opt(at.zone);
        let occurred_at = match FIXED.iter().find(|(name, _)| *name == zone_name) {
            Some((_, hours)) => local_time(created, *hours),
            None => match &self.zone {
                Some(zone) => zoned_time(created, zone),
                None => {
                    return Err(format!(
                        "TimeZone {zone_name:?} is not a fixed offset Reckon knows: set the account's report_time_zone (its time zone setting) to read it"
                    ));
                }
            },
        };
        if occurred_at.is_none() {
            return Err(format!(
                "Creation Date {created:?} is not YYYY-MM-DD HH:MM:SS"
            ));
        }
        let is_refund = kind == RowKind::Refund;
        out.push(RowRef {
            reference: None,
            line_no,
            kind,
            provider_txn_id: present(get(at.psp)),
            payment_no: present(opt(at.merchant_ref)),
            refund_no: if is_refund {
                present(opt(at.modification_ref))
            } else {
                None
            },
            provider_refund_id: if is_refund {
                present(opt(at.modification))
            } else {
                None
            },
            money,
            status: "SUCCEEDED",
            occurred_at,
            fee,
        });
        Ok(true)
    }

    fn progress(&self) -> Progress {
        Progress {
            header: self.header.is_some(),
            in_summary: false,
            summary: false,
        }
    }

    fn has_summary(&self) -> bool {
        false
    }

    fn checks(&mut self) -> Vec<Check> {
        Vec::new()
    }
}

/// The line's fee, positive for what the merchant paid: its fee
/// columns when it has them (in the net currency: only when that is
/// the gross currency), else gross less net (a payment) or net less
/// gross (a refund, whose net debit includes the fee).
fn line_fee(
    f: &crate::statement::csv::Fields<'_>,
    at: Columns,
    currency: Currency,
    money: crate::domain::Money,
    net: &str,
) -> Result<Option<Fee>, String> {
    let get = |column: Option<usize>| column.map_or("", |i| f.get(i).trim());
    let net_currency = get(at.net_currency);
    if !net_currency.is_empty() && net_currency != currency.code() {
        // Converted at the line's exchange rate: not a fee of the
        // gross amount's currency.
        return Ok(None);
    }
    let mut stated: Option<i64> = None;
    for (column, name) in at.fees.iter().zip([
        "Commission (NC)",
        "Markup (NC)",
        "Scheme Fees (NC)",
        "Interchange (NC)",
    ]) {
        if let Some(part) = crate::statement::fee(get(*column), currency, name)? {
            stated = Some(crate::statement::add(stated.unwrap_or(0), part.e5)?);
        }
    }
    if let Some(e5) = stated {
        return Ok(Some(Fee { e5, currency }));
    }
    if net.is_empty() {
        return Ok(None);
    }
    let net = crate::statement::money(net, currency)?;
    let minor = money.minor.abs_diff(net.minor);
    let minor = i64::try_from(minor).map_err(|_| "the fee is too large".to_string())?;
    Ok(Some(Fee::of_money(crate::domain::Money::new(
        minor, currency,
    ))))
}

/// The report's `MerchantPayout` lines: what Adyen pays out to the bank
/// for the batch (its Net Debit, in the Net Currency), named by its
/// `Modification Reference` (else its batch), expected at the bank from
/// the day of its `Creation Date` (the bank window takes the days after).
pub fn payouts(reader: impl std::io::BufRead) -> Result<Vec<PayoutSeen>, String> {
    let mut csv = CsvFields::default();
    let mut columns: Option<[Option<usize>; 6]> = None;
    let mut out = Vec::new();
    for (n, line) in reader.lines().enumerate() {
        let line = line.map_err(|e| format!("line {}: {e}", n + 1))?;
        let line = line.trim_start_matches('\u{feff}');
        if line.trim().is_empty() {
            continue;
        }
        let f = csv.split(line);
        let Some([kind, reference, batch, created, currency, debit]) = columns else {
            let find = |name: &str| f.iter().position(|h| h.trim() == name);
            columns = Some([
                find("Type"),
                find("Modification Reference"),
                find("Batch Number"),
                find("Creation Date"),
                find("Net Currency"),
                find("Net Debit (NC)"),
            ]);
            continue;
        };
        let get = |column: Option<usize>| column.map_or("", |i| f.get(i).trim());
        if get(kind) != "MerchantPayout" {
            continue;
        }
        let at = |why: String| format!("line {}: {why}", n + 1);
        let currency = Currency::parse(get(currency)).map_err(|e| at(e.to_string()))?;
        let money = money(get(debit), currency).map_err(at)?;
        let payout_id = match (get(reference), get(batch)) {
            ("", "") => {
                return Err(at(
                    "a MerchantPayout line names no reference or batch".into()
                ));
            }
            ("", batch) => format!("batch {batch}"),
            (reference, _) => reference.to_owned(),
        };
        let arrival_on = get(created)
            .split(' ')
            .next()
            .filter(|d| d.parse::<jiff::civil::Date>().is_ok())
            .ok_or_else(|| at(format!("Creation Date {:?} is not a day", get(created))))?;
        out.push(PayoutSeen {
            kind: "adyen",
            payout_id,
            money,
            arrival_on: arrival_on.to_owned(),
            descriptor: None,
            status: "paid".into(),
            automatic: false,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statement::read_all;

    /// The header and the Settled line of Adyen's documentation sample, a
    /// Refunded line and the fee and payout lines a batch ends with.
    const REPORT: &str = "Company Account,Merchant Account,Psp Reference,Merchant Reference,Payment Method,Creation Date,TimeZone,Type,Modification Reference,Gross Currency,Gross Debit (GC),Gross Credit (GC),Exchange Rate,Net Currency,Net Debit (NC),Net Credit (NC),Commission (NC),Markup (NC),Scheme Fees (NC),Interchange (NC),Payment Method Variant,Modification Merchant Reference,Batch Number\n\
TestCompany,TestMerchant,1813702551707653,3vpzf7,visa,2013-06-03 11:26:49,CET,Settled,1713702551795048,GBP,,5.00,1,GBP,,4.88,,0.04,0.01,0.07,visaclassic,,4\n\
TestCompany,TestMerchant,1813702551707653,3vpzf7,visa,2013-06-04 09:00:00,CEST,Refunded,8813702551700001,GBP,2.00,,1,GBP,2.02,,,0.02,,,visaclassic,RFD-1,4\n\
TestCompany,TestMerchant,,,,2013-06-11 04:55:40,BST,Fee,Transaction Fees June 2013,GBP,,,,GBP,0.10,,,,,,,,4\n\
TestCompany,TestMerchant,,,,2013-06-11 04:55:40,BST,MerchantPayout,TX1234,GBP,,,,GBP,2.76,,,,,,,,4\n";

    #[test]
    fn settled_and_refunded_lines_are_payments_and_refunds() {
        let (rows, checks) = read_all(FORMAT, REPORT.as_bytes()).unwrap();
        assert!(checks.is_empty());
        assert_eq!(rows.len(), 2, "fees and payouts are not payments");
        let p = &rows[0];
        assert_eq!(p.kind, RowKind::Payment);
        assert_eq!(p.provider_txn_id.as_deref(), Some("1813702551707653"));
        assert_eq!(p.payment_no.as_deref(), Some("3vpzf7"));
        assert_eq!((p.money.minor, p.money.currency.code()), (500, "GBP"));
        assert_eq!(p.fee.map(|f| f.minor()), Some(12), "0.04 + 0.01 + 0.07");
        // 2013-06-03 11:26:49 CET (+01:00) is 10:26:49 UTC.
        assert_eq!(
            p.occurred_at,
            Some(
                jiff::Timestamp::from_second(1_370_255_209)
                    .unwrap()
                    .as_microsecond()
            )
        );
        let r = &rows[1];
        assert_eq!(r.kind, RowKind::Refund);
        assert_eq!(r.money.minor, 200);
        assert_eq!(r.provider_refund_id.as_deref(), Some("8813702551700001"));
        assert_eq!(r.refund_no.as_deref(), Some("RFD-1"));
        assert_eq!(r.fee.map(|f| f.minor()), Some(2));
    }

    #[test]
    fn merchant_payout_lines_are_the_payouts_to_the_bank() {
        let seen = payouts(REPORT.as_bytes()).unwrap();
        assert_eq!(seen.len(), 1);
        let p = &seen[0];
        assert_eq!((p.kind, p.payout_id.as_str()), ("adyen", "TX1234"));
        assert_eq!((p.money.minor, p.money.currency.code()), (276, "GBP"));
        assert_eq!(p.arrival_on, "2013-06-11");
        let unnamed = REPORT.replace(",MerchantPayout,TX1234,", ",MerchantPayout,,");
        assert_eq!(payouts(unnamed.as_bytes()).unwrap()[0].payout_id, "batch 4");
        let bad = REPORT.replace(",GBP,2.76,", ",GBP,2.7x,");
        assert!(payouts(bad.as_bytes()).unwrap_err().starts_with("line 5:"));
    }

    #[test]
    fn the_report_is_told_by_its_header() {
        let formats = crate::providers::bill_formats();
        let (format, kind) = crate::statement::recognise(&formats, REPORT.as_bytes()).unwrap();
        assert_eq!(format.describe(kind), "Adyen Settlement details report");
    }

    #[test]
    fn a_zone_name_of_no_fixed_offset_needs_the_accounts_zone() {
        let text = REPORT.replace(",CET,Settled", ",PST,Settled");
        let err = read_all(FORMAT, text.as_bytes()).unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.reason.contains("report_time_zone"), "{err}");
        let zone = jiff::tz::TimeZone::get("America/Los_Angeles").unwrap();
        let (rows, _) = read_all(FORMAT.in_zone(zone), text.as_bytes()).unwrap();
        // 11:26:49 PDT (-07:00) is 18:26:49 UTC.
        assert_eq!(
            rows[0].occurred_at,
            Some(
                jiff::Timestamp::from_second(1_370_284_009)
                    .unwrap()
                    .as_microsecond()
            )
        );
    }

    #[test]
    fn the_fee_is_gross_less_net_without_fee_columns_and_none_across_currencies() {
        let text = "Psp Reference,Merchant Reference,Creation Date,TimeZone,Type,Gross Currency,Gross Debit (GC),Gross Credit (GC),Net Currency,Net Debit (NC),Net Credit (NC)\n\
1,P1,2026-11-30 10:00:00,UTC,Settled,EUR,,10.00,EUR,,9.71\n\
2,P2,2026-11-30 10:00:00,UTC,Settled,USD,,10.00,EUR,,9.10\n";
        let (rows, _) = read_all(FORMAT, text.as_bytes()).unwrap();
        assert_eq!(rows[0].fee.map(|f| f.minor()), Some(29));
        assert_eq!(rows[1].fee, None);
        let bad = text.replace("10.00,EUR", "1x.00,EUR");
        assert_eq!(read_all(FORMAT, bad.as_bytes()).unwrap_err().line, 2);
        assert!(read_all(FORMAT, b"Psp Reference,Type\n").is_err());
    }
}
