//! The day's statement as Stripe's balance transactions
//! (`GET /v1/balance_transactions`, `expand[]=data.source`): a list Reckon
//! pages through with a real cursor, each row carrying the Charge, Refund or
//! Dispute behind it — chosen over the Reporting API because it needs no
//! report run to poll, works with test keys, and fits the page-by-page pull.
//!
//! By `reporting_category` (which, unlike `type`, tells a dispute from other
//! adjustments): `charge` is a payment, keyed by the Charge's PaymentIntent
//! (what Reckon's Stripe payments carry) and the `payment_no` Stripe copies
//! from the intent's metadata; `refund` is a refund with Reckon's
//! `refund_no` and `payment_no` from the Refund's metadata; `dispute` (money
//! taken back by the card network) is a refund row with the dispute's id and
//! status `DISPUTED`, `dispute_reversal` (the funds given back) one with
//! status `DISPUTE_REVERSED`: reconciliation matches both to the dispute
//! its notifications told of, and opens a DISPUTE ticket for one it never
//! heard of. Everything else — `fee`, `payout`, `refund_failure`, transfers,
//! other adjustments — moves no payment of Reckon's and is skipped. A
//! charge's fee is the row's `fee` (minor units, `net = amount - fee`).

use crate::domain::{Currency, Money, quote};
use crate::providers::PayoutSeen;
use crate::statement::{RowKind, StatementRow};
use serde::Deserialize;
use std::collections::HashMap;

/// A dispute's funds taken from the balance, and given back: rows
/// reconciliation matches to the dispute its notifications told of.
pub use crate::statement::{DISPUTE_REVERSED, DISPUTED};

/// The most Stripe lists in one page.
pub(super) const PAGE_LIMIT: &str = "100";

/// A page of `GET /v1/balance_transactions` (`object: "list"`).
#[derive(Deserialize)]
pub(super) struct List {
    pub data: Vec<BalanceTransaction>,
    pub has_more: bool,
}

/// The fields of a balance transaction Reckon reads.
#[derive(Deserialize)]
pub(super) struct BalanceTransaction {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub reporting_category: Option<String>,
    /// Signed, in the account's currency's smallest unit.
    pub amount: i64,
    pub currency: String,
    /// Unix seconds.
    pub created: i64,
    /// Unix seconds: when the funds become available (a payout's stands
    /// in for its arrival date when its source is not expanded).
    #[serde(default)]
    pub available_on: Option<i64>,
    /// Stripe's fee on this transaction, in the account's currency's
    /// smallest unit.
    #[serde(default)]
    pub fee: i64,
    /// `amount - fee`.
    #[serde(default)]
    pub net: i64,
    /// An id, or with `expand[]=data.source` the object itself; read only
    /// for the rows Reckon keeps, so an unusual source elsewhere harms
    /// nothing.
    #[serde(default)]
    pub source: serde_json::Value,
}

/// The Charge, Refund or Dispute behind a row, as far as Reckon reads it.
#[derive(Deserialize, Default)]
struct Source {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    amount: Option<i64>,
    #[serde(default)]
    amount_captured: Option<i64>,
    #[serde(default)]
    currency: Option<String>,
    #[serde(default)]
    payment_intent: serde_json::Value,
    #[serde(default)]
    charge: serde_json::Value,
    #[serde(default)]
    metadata: HashMap<String, String>,
}

/// The Payout behind a `payout` or `payout_reversal` row (Stripe's
/// payout object: `po_…`, `amount`, `currency`, `arrival_date`,
/// `statement_descriptor`, `status`).
#[derive(Deserialize, Default)]
struct PayoutSource {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    amount: Option<i64>,
    #[serde(default)]
    currency: Option<String>,
    #[serde(default)]
    arrival_date: Option<i64>,
    #[serde(default)]
    statement_descriptor: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    automatic: Option<bool>,
}

/// An expandable field's id: the string, or the expanded object's `id`.
fn id_of(v: &serde_json::Value) -> Option<String> {
    v.as_str()
        .or_else(|| v["id"].as_str())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

impl BalanceTransaction {
    /// `reporting_category`, or the `type` it stands for when absent.
    fn category(&self) -> &str {
        match self.reporting_category.as_deref() {
            Some(c) => c,
            None => match self.kind.as_str() {
                "payment" => "charge",
                "payment_refund" => "refund",
                other => other,
            },
        }
    }

    /// The statement row this transaction is, or `None` when it is not
    /// Reckon's business (see the module notes).
    pub fn row(&self, line_no: i64) -> Result<Option<StatementRow>, String> {
        let (kind, status) = match self.category() {
            "charge" => (RowKind::Payment, "SUCCEEDED"),
            "refund" => (RowKind::Refund, "SUCCEEDED"),
            "dispute" => (RowKind::Refund, DISPUTED),
            "dispute_reversal" => (RowKind::Refund, DISPUTE_REVERSED),
            _ => return Ok(None),
        };
        let source: Source = match &self.source {
            serde_json::Value::Object(_) => serde_json::from_value(self.source.clone())
                .map_err(|e| format!("{}: unreadable source: {e}", self.id))?,
            other => Source {
                id: id_of(other),
                ..Source::default()
            },
        };
        // The PaymentIntent names Reckon's payment; a charge made without
        // one (not Reckon's) is named by itself.
        let txn = id_of(&source.payment_intent).or_else(|| match kind {
            RowKind::Payment => source.id.clone(),
            RowKind::Refund => id_of(&source.charge),
        });
        let meta = |key: &str| source.metadata.get(key).filter(|v| !v.is_empty()).cloned();
        let is_refund = status == "SUCCEEDED" && kind == RowKind::Refund;
        let money = self.money(&source, kind)?;
        // A fee is kept in the row's currency only: a converted charge's
        // fee is in the account's, which the row does not carry.
        let fee = (kind == RowKind::Payment
            && money.currency.code().eq_ignore_ascii_case(&self.currency))
        .then(|| crate::domain::Fee::of_money(Money::new(self.fee, money.currency)));
        Ok(Some(StatementRow {
            reference: None,
            line_no,
            kind,
            provider_txn_id: txn,
            payment_no: meta("payment_no"),
            refund_no: if is_refund { meta("refund_no") } else { None },
            provider_refund_id: (kind == RowKind::Refund)
                .then(|| source.id.clone())
                .flatten(),
            money,
            fee,
            status: status.to_owned(),
            occurred_at: Some(self.created.saturating_mul(1_000_000)),
        }))
    }

    /// The payout this transaction is (`payout`), or the payout it takes
    /// back (`payout_reversal`: a failed or cancelled payout's funds
    /// returned, the payout then `failed` or `canceled`); `None` for any
    /// other row. Read from the expanded payout, or, when Stripe gave only
    /// its id, from the transaction itself (the amount it took from the
    /// balance, the day the funds were due).
    pub fn payout(&self) -> Result<Option<PayoutSeen>, String> {
        let reversal = match self.category() {
            "payout" => false,
            "payout_reversal" => true,
            _ => return Ok(None),
        };
        let source: PayoutSource = match &self.source {
            serde_json::Value::Object(_) => serde_json::from_value(self.source.clone())
                .map_err(|e| format!("{}: unreadable payout: {e}", self.id))?,
            other => PayoutSource {
                id: id_of(other),
                ..PayoutSource::default()
            },
        };
        let Some(payout_id) = source.id else {
            return Err(format!("{}: a payout row without its payout", self.id));
        };
        let code = source.currency.as_deref().unwrap_or(&self.currency);
        let currency = Currency::parse(code).map_err(|e| format!("{}: {e}", self.id))?;
        let amount = source.amount.unwrap_or(self.amount.saturating_abs());
        let arrival = source
            .arrival_date
            .or(self.available_on)
            .unwrap_or(self.created);
        // Stripe's arrival_date is the bank day, given as its midnight UTC.
        let arrival_on = jiff::Timestamp::from_second(arrival)
            .map_err(|e| format!("{}: arrival_date {arrival}: {e}", self.id))?
            .to_zoned(jiff::tz::TimeZone::UTC)
            .date()
            .to_string();
        let status = match (source.status, reversal) {
            (Some(s), _) => s,
            (None, true) => "failed".to_owned(),
            (None, false) => "paid".to_owned(),
        };
        Ok(Some(PayoutSeen {
            kind: super::KIND.name,
            payout_id,
            money: Money::new(amount, currency),
            arrival_on,
            descriptor: source.statement_descriptor.filter(|d| !d.trim().is_empty()),
            status,
            automatic: source.automatic.unwrap_or(false),
        }))
    }

    /// What the customer paid or got back, in the currency Reckon's payment
    /// has: the balance transaction's own figure, unless Stripe converted it
    /// into the account's currency — then the source's.
    fn money(&self, source: &Source, kind: RowKind) -> Result<Money, String> {
        let presented = match (&source.currency, kind) {
            (Some(c), RowKind::Payment) if !c.eq_ignore_ascii_case(&self.currency) => {
                source.amount_captured.or(source.amount).map(|a| (a, c))
            }
            (Some(c), RowKind::Refund) if !c.eq_ignore_ascii_case(&self.currency) => {
                source.amount.map(|a| (a, c))
            }
            _ => None,
        };
        let (amount, code) = presented.unwrap_or((self.amount, &self.currency));
        let currency = Currency::parse(code).map_err(|e| format!("{}: {e}", self.id))?;
        Ok(Money::new(amount.saturating_abs(), currency))
    }
}

/// Where a pull stands between pages: the last transaction listed (Stripe's
/// `starting_after`) and the rows and amount handed over so far, which the
/// last page states so the run can hold them against what it staged.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Cursor {
    pub after: Option<String>,
    pub rows: i64,
    pub total_minor: i64,
}

impl Cursor {
    /// `txn_…;rows=N;total_minor=M`.
    pub fn parse(text: &str) -> Result<Cursor, String> {
        let bad = || {
            format!(
                "{} is not a Stripe pull cursor (txn_…;rows=N;total_minor=M)",
                quote(text)
            )
        };
        let mut parts = text.split(';');
        let after = parts.next().filter(|a| !a.is_empty()).ok_or_else(bad)?;
        let mut figure = |name: &str| -> Result<i64, String> {
            parts
                .next()
                .and_then(|p| p.strip_prefix(name)?.strip_prefix('='))
                .and_then(|n| n.parse().ok())
                .ok_or_else(bad)
        };
        Ok(Cursor {
            after: Some(after.to_owned()),
            rows: figure("rows")?,
            total_minor: figure("total_minor")?,
        })
    }

    pub fn text(&self) -> Option<String> {
        let after = self.after.as_deref()?;
        Some(format!(
            "{after};rows={};total_minor={}",
            self.rows, self.total_minor
        ))
    }
}

/// The business day `date` in `zone` as Stripe's `created` bounds:
/// [start, end) in Unix seconds — the day recon reconciles.
pub(super) fn day_bounds(date: &str, zone: &jiff::tz::TimeZone) -> Result<(i64, i64), String> {
    let day: jiff::civil::Date = date
        .parse()
        .map_err(|_| format!("business date {} is not YYYY-MM-DD", quote(date)))?;
    let start = |d: jiff::civil::Date| -> Result<i64, String> {
        Ok(d.to_zoned(zone.clone())
            .map_err(|e| e.to_string())?
            .timestamp()
            .as_second())
    };
    Ok((
        start(day)?,
        start(day.tomorrow().map_err(|e| e.to_string())?)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn txn(value: serde_json::Value) -> BalanceTransaction {
        serde_json::from_value(value).unwrap()
    }

    /// Stripe-mock's fixture, then the same with its source expanded.
    #[test]
    fn each_category_is_read_as_what_it_is() {
        let fixture = txn(
            json!({"amount":100,"available_on":1234567890,"balance_type":"payments",
            "created":1234567890,"currency":"usd","description":"My First Test Charge (created for API docs)",
            "exchange_rate":null,"fee":0,"fee_details":[],"id":"txn_1PgaxNB7WZ01zgkWEV3TLf40","net":100,
            "object":"balance_transaction","reporting_category":"charge",
            "source":"ch_1PgafuB7WZ01zgkWXYmPNZs8","status":"available","type":"charge"}),
        );
        let row = fixture.row(1).unwrap().unwrap();
        assert_eq!(row.kind, RowKind::Payment);
        assert_eq!(
            row.provider_txn_id.as_deref(),
            Some("ch_1PgafuB7WZ01zgkWXYmPNZs8")
        );
        assert_eq!((row.money.minor, row.money.currency.code()), (100, "USD"));
        assert_eq!(row.occurred_at, Some(1_234_567_890_000_000));

        let charge = txn(
            json!({"id":"txn_2","type":"charge","reporting_category":"charge",
            "amount":4200,"fee":152,"net":4048,"currency":"eur","created":1,
            "source":{"id":"ch_2","object":"charge","amount":4200,"amount_captured":4200,"currency":"eur",
              "payment_intent":"pi_2","metadata":{"payment_no":"PAY2"}}}),
        );
        let row = charge.row(1).unwrap().unwrap();
        assert_eq!(row.provider_txn_id.as_deref(), Some("pi_2"));
        assert_eq!(row.payment_no.as_deref(), Some("PAY2"));
        assert_eq!(row.provider_refund_id, None);

        let refund = txn(
            json!({"id":"txn_3","type":"refund","reporting_category":"refund",
            "amount":-1200,"fee":0,"net":-1200,"currency":"eur","created":1,
            "source":{"id":"re_3","object":"refund","amount":1200,"currency":"eur","charge":"ch_2",
              "payment_intent":"pi_2","status":"succeeded",
              "metadata":{"refund_no":"RF3","payment_no":"PAY2"}}}),
        );
        let row = refund.row(1).unwrap().unwrap();
        assert_eq!(row.kind, RowKind::Refund);
        assert_eq!(row.money.minor, 1200, "refund rows are positive");
        assert_eq!(row.refund_no.as_deref(), Some("RF3"));
        assert_eq!(row.provider_refund_id.as_deref(), Some("re_3"));

        let dispute = txn(
            json!({"id":"txn_4","type":"adjustment","reporting_category":"dispute",
            "amount":-4200,"fee":1500,"net":-5700,"currency":"eur","created":1,
            "source":{"id":"dp_4","object":"dispute","amount":4200,"currency":"eur","charge":"ch_2",
              "payment_intent":"pi_2","metadata":{},"status":"needs_response"}}),
        );
        let row = dispute.row(1).unwrap().unwrap();
        assert_eq!(
            (row.kind, row.status.as_str()),
            (RowKind::Refund, "DISPUTED")
        );
        assert_eq!(row.provider_refund_id.as_deref(), Some("dp_4"));
        assert_eq!(row.provider_txn_id.as_deref(), Some("pi_2"));
        assert_eq!(row.refund_no, None);
        // The funds given back are a row of the dispute too.
        let reversal = txn(
            json!({"id":"txn_6","type":"adjustment","reporting_category":"dispute_reversal",
            "amount":4200,"fee":-1500,"net":5700,"currency":"eur","created":1,
            "source":{"id":"dp_4","object":"dispute","amount":4200,"currency":"eur","charge":"ch_2",
              "payment_intent":"pi_2"}}),
        );
        let row = reversal.row(1).unwrap().unwrap();
        assert_eq!(row.status, DISPUTE_REVERSED);
        assert_eq!(row.provider_refund_id.as_deref(), Some("dp_4"));

        for (kind, category, source) in [
            ("stripe_fee", "fee", json!("fee_1")),
            (
                "payout",
                "payout",
                json!({"id":"po_1","object":"payout","amount":9000}),
            ),
            ("refund_failure", "refund_failure", json!("re_3")),
        ] {
            let t = txn(
                json!({"id":"txn_5","type":kind,"reporting_category":category,
                "amount":-1,"fee":0,"net":-1,"currency":"eur","created":1,"source":source}),
            );
            assert_eq!(t.row(1).unwrap(), None, "{category}");
        }
    }

    /// A payout row gives its payout (expanded or not); a reversal marks it
    /// failed; a charge is no payout.
    #[test]
    fn a_payout_row_reads_as_the_payout() {
        let t = txn(
            json!({"id":"txn_po","type":"payout","reporting_category":"payout",
            "amount":-904800,"fee":0,"net":-904800,"currency":"eur","created":1796200000,
            "available_on":1796200000,
            "source":{"id":"po_1","object":"payout","amount":904800,"currency":"eur",
              "arrival_date":1796256000,"statement_descriptor":"RECKON DEMO","status":"in_transit",
              "automatic":true,"method":"standard","type":"bank_account"}}),
        );
        let p = t.payout().unwrap().unwrap();
        assert_eq!(p.payout_id, "po_1");
        assert_eq!((p.money.minor, p.money.currency.code()), (904_800, "EUR"));
        assert_eq!(p.arrival_on, "2026-12-03");
        assert_eq!(p.descriptor.as_deref(), Some("RECKON DEMO"));
        assert_eq!(p.status, "in_transit");
        assert_eq!(t.row(1).unwrap(), None, "a payout moves no payment");
        let bare = txn(
            json!({"id":"txn_pr","type":"payout_failure","reporting_category":"payout_reversal",
            "amount":5000,"fee":0,"net":5000,"currency":"eur","created":1796200000,"source":"po_2"}),
        );
        let p = bare.payout().unwrap().unwrap();
        assert_eq!(
            (p.payout_id.as_str(), p.money.minor, p.status.as_str()),
            ("po_2", 5000, "failed")
        );
        let charge = txn(
            json!({"id":"txn_c","type":"charge","reporting_category":"charge",
            "amount":100,"fee":0,"net":100,"currency":"eur","created":1,"source":"ch_1"}),
        );
        assert_eq!(charge.payout().unwrap(), None);
    }

    /// A charge presented in EUR and settled in USD is Reckon's EUR payment.
    #[test]
    fn a_converted_charge_keeps_the_currency_the_customer_paid_in() {
        let t = txn(
            json!({"id":"txn_6","type":"charge","reporting_category":"charge",
            "amount":1085,"fee":61,"net":1024,"currency":"usd","exchange_rate":1.085,"created":1,
            "source":{"id":"ch_6","object":"charge","amount":1000,"amount_captured":1000,"currency":"eur",
              "payment_intent":"pi_6","metadata":{}}}),
        );
        let row = t.row(1).unwrap().unwrap();
        assert_eq!((row.money.minor, row.money.currency.code()), (1000, "EUR"));
    }

    #[test]
    fn cursors_read_back_what_they_wrote_and_refuse_anything_else() {
        let c = Cursor {
            after: Some("txn_9".into()),
            rows: 3,
            total_minor: 5400,
        };
        let text = c.text().unwrap();
        assert_eq!(text, "txn_9;rows=3;total_minor=5400");
        assert_eq!(Cursor::parse(&text).unwrap(), c);
        for bad in ["", "4", "txn_9;rows=x;total_minor=1", "txn_9;rows=1"] {
            assert!(Cursor::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Cursor::default().text(), None);
    }

    #[test]
    fn a_day_is_cut_in_the_zone_recon_reconciles_in() {
        let shanghai = jiff::tz::TimeZone::get("Asia/Shanghai").unwrap();
        // 2026-12-01 00:00 +08:00 is 2026-11-30 16:00 UTC.
        assert_eq!(
            day_bounds("2026-12-01", &shanghai).unwrap(),
            (1_796_054_400, 1_796_140_800)
        );
        assert!(day_bounds("01/12/2026", &shanghai).is_err());
    }
}
