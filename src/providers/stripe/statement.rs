//! Stripe's itemized reports (`balance_change_from_activity.itemized.*`,
//! `payout_reconciliation.itemized.*`): a header naming the columns (read
//! by name, so added or missing optional columns do no harm), decimal
//! major units, refunds negative; `charge` and `refund` rows are payments
//! and refunds, the other categories (fees, payouts, adjustments) are not
//! Reckon's business. Reckon's payment_no and refund_no come from the
//! metadata columns Reckon sets (`payment_metadata[payment_no]`,
//! `refund_metadata[refund_no]`) when the report includes them. The report
//! states no totals of its own.
//!
//! Times: `created_utc` when the report has it. `created` alone is on the
//! clocks of the time zone the report was run in, which the file does not
//! state: it is read only in the zone the caller gives
//! ([`Format::in_zone`], from the `timezone` the report was run with), and
//! without one such a report is refused rather than read as UTC.

use crate::domain::Currency;
use crate::statement::csv::CsvFields;
use crate::statement::time::{local_time, zoned_time};
use crate::statement::{
    BillFormat, Check, Chunk, Format, Progress, RowKind, RowRef, fee, money, present,
};

/// Stripe's itemized report format.
pub const FORMAT: Format = Format::new("stripe itemized", "Stripe", "itemized report", || {
    Box::new(StripeBill::default())
});

#[derive(Default)]
struct StripeBill {
    /// Once the header is read: how many fields a line has, and where the
    /// columns Reckon reads are.
    header: Option<(usize, Columns)>,
    /// The zone of `created`, as the caller gives it.
    zone: Option<jiff::tz::TimeZone>,
    csv: CsvFields,
}

/// Where each column Reckon reads is (the first of that name), if there.
#[derive(Clone, Copy)]
struct Columns {
    category: Option<usize>,
    currency: Option<usize>,
    gross: Option<usize>,
    fee: Option<usize>,
    created_utc: Option<usize>,
    created: Option<usize>,
    intent: Option<usize>,
    charge: Option<usize>,
    payment_no: Option<usize>,
    refund_no: Option<usize>,
    source: Option<usize>,
}

impl BillFormat for StripeBill {
    fn times_in(&mut self, zone: &jiff::tz::TimeZone) {
        self.zone = Some(zone.clone());
    }

    fn line(&mut self, text: &str, line_no: i64, out: &mut Chunk) -> Result<bool, String> {
        let f = self.csv.split(text);
        let Some((width, at)) = self.header else {
            for needed in [
                "balance_transaction_id",
                "currency",
                "gross",
                "reporting_category",
            ] {
                if !f.iter().any(|h| h == needed) {
                    return Err(format!(
                        "expected the Stripe itemized report header (missing {needed})"
                    ));
                }
            }
            let find = |name: &str| f.iter().position(|h| h == name);
            let columns = Columns {
                category: find("reporting_category"),
                currency: find("currency"),
                gross: find("gross"),
                fee: find("fee"),
                created_utc: find("created_utc"),
                created: find("created"),
                intent: find("payment_intent_id"),
                charge: find("charge_id"),
                payment_no: find("payment_metadata[payment_no]"),
                refund_no: find("refund_metadata[refund_no]"),
                source: find("source_id"),
            };
            if columns.created_utc.is_none() && columns.created.is_some() && self.zone.is_none() {
                return Err("this Stripe report has its times only as `created`, on the clocks of the time zone it was run in, which the file does not state: run the report with the `created_utc` column, or read it with the report's time zone".into());
            }
            self.header = Some((f.len(), columns));
            return Ok(false);
        };
        if f.len() != width {
            return Err(format!("expected {width} fields, found {}", f.len()));
        }
        let get = |column: Option<usize>| column.map_or("", |i| f.get(i).trim());
        let kind = match get(at.category) {
            "charge" => RowKind::Payment,
            "refund" => RowKind::Refund,
            _ => return Ok(false),
        };
        // Stripe writes currencies in lowercase; a refusal names the code
        // in uppercase.
        let code = get(at.currency);
        let currency = Currency::parse(code)
            .or_else(|_| Currency::parse(&code.to_ascii_uppercase()))
            .map_err(|e| e.to_string())?;
        let money = money(get(at.gross), currency)?;
        let fee = fee(get(at.fee), currency, "fee")?;
        let occurred_at = match (get(at.created_utc), &self.zone) {
            ("", Some(zone)) => zoned_time(get(at.created), zone),
            (utc, _) => local_time(utc, 0),
        };
        let is_refund = kind == RowKind::Refund;
        // Reckon knows a Stripe payment by its payment intent. A report
        // without `payment_intent_id` gives the charge (`charge_id`, or a
        // charge row's `source_id`) instead: such a row still matches its
        // payment by `payment_metadata[payment_no]` when the report has
        // it, but by the transaction id it matches nothing, and without
        // the payment_no it is a provider-only row — unless whoever
        // fetched the report resolved each charge's payment intent.
        let txn = [
            at.intent,
            at.charge,
            (!is_refund).then_some(at.source).flatten(),
        ]
        .into_iter()
        .find_map(|column| present(get(column)));
        out.push(RowRef {
            reference: None,
            line_no,
            kind,
            provider_txn_id: txn,
            payment_no: present(get(at.payment_no)),
            refund_no: if is_refund {
                present(get(at.refund_no))
            } else {
                None
            },
            provider_refund_id: if is_refund {
                present(get(at.source))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statement::{fixture, read_all};

    #[test]
    fn a_stripe_itemized_report_reads_charges_and_refunds_by_column_name() {
        let text = "automatic_payout_id,balance_transaction_id,created_utc,available_on_utc,currency,gross,fee,net,reporting_category,source_id,description,charge_id,payment_intent_id,payment_metadata[payment_no],refund_metadata[refund_no]\n\
po_1,txn_1,2026-11-30 10:00:00,2026-12-02 00:00:00,eur,42.00,1.47,40.53,charge,ch_1,\"Order, blue\",ch_1,pi_1,PAYS,\n\
po_1,txn_2,2026-11-30 12:00:00,2026-12-02 00:00:00,eur,-12.00,0.00,-12.00,refund,re_1,,ch_1,pi_1,,RFDS\n\
po_1,txn_3,2026-11-30 12:00:00,2026-12-02 00:00:00,eur,-1.47,0.00,-1.47,fee,,Stripe fee,,,,\n";
        let (rows, checks) = read_all(FORMAT, text.as_bytes()).unwrap();
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
        assert_eq!(rows[0].fee.map(|f| f.minor()), Some(147));
        let bad = text.replace("42.00", "4x.00");
        assert_eq!(read_all(FORMAT, bad.as_bytes()).unwrap_err().line, 2);
    }

    /// A report with default columns, no `payment_intent_id`: the charge
    /// stands in for the transaction, the refund keeps its own id.
    #[test]
    fn a_report_without_payment_intents_falls_back_to_the_charge() {
        let (rows, _) = read_all(FORMAT, &fixture("stripe_itemized_default.csv")).unwrap();
        assert_eq!(rows.len(), 2, "the dispute is not a payment or a refund");
        assert_eq!(rows[0].provider_txn_id.as_deref(), Some("ch_3QaB01"));
        assert_eq!(rows[0].fee.map(|f| f.minor()), Some(152));
        assert_eq!(rows[0].money.minor, 4200);
        assert_eq!(rows[1].kind, RowKind::Refund);
        assert_eq!(
            rows[1].provider_txn_id, None,
            "a refund's source is the refund"
        );
        assert_eq!(rows[1].provider_refund_id.as_deref(), Some("re_3QaB02"));
        assert_eq!(
            rows[0].occurred_at,
            Some(
                jiff::Timestamp::from_second(1_796_025_605)
                    .unwrap()
                    .as_microsecond()
            )
        );
    }

    /// `created` alone is read in the report's zone when the caller gives
    /// it, and refused, not taken for UTC, when it does not.
    #[test]
    fn created_is_read_in_the_zone_given_and_refused_without_one() {
        let file = fixture("stripe_itemized_created_local.csv");
        let err = read_all(FORMAT, &file).unwrap_err();
        assert_eq!(err.line, 1);
        assert!(err.reason.contains("created_utc"), "{err}");
        let zone = jiff::tz::TimeZone::get("America/Los_Angeles").unwrap();
        let (rows, _) = read_all(FORMAT.in_zone(zone), &file).unwrap();
        // 2026-11-30 23:30 in Los Angeles (PST, UTC-8) is 07:30 the next day.
        assert_eq!(
            rows[0].occurred_at,
            Some(
                jiff::Timestamp::from_second(1_796_110_200)
                    .unwrap()
                    .as_microsecond()
            )
        );
        assert_eq!(rows[0].provider_txn_id.as_deref(), Some("ch_3QaC01"));
        assert_eq!(rows[0].payment_no.as_deref(), Some("STR-PAY-1"));
        assert_eq!(rows[1].provider_txn_id.as_deref(), Some("ch_3QaC01"));
    }
}
