//! Every class of DESIGN.md's table, decided from made-up rows and
//! payments: no database, no statement file.

use super::*;
use crate::domain::{Currency, Money};
use crate::statement::RowKind;

const DAY: i64 = 24 * 3600 * 1_000_000;
const T0: i64 = 1_790_000_000_000_000;

fn row(line: i64, txn: Option<&str>, no: Option<&str>, minor: i64, currency: &str) -> StatementRow {
    StatementRow {
        reference: None,
        line_no: line,
        kind: RowKind::Payment,
        provider_txn_id: txn.map(Into::into),
        payment_no: no.map(Into::into),
        refund_no: None,
        provider_refund_id: None,
        money: Money::new(minor, Currency::parse(currency).unwrap()),
        status: "SUCCEEDED".into(),
        occurred_at: Some(T0),
        fee: None,
    }
}

fn refund_row(line: i64, refund_no: &str, minor: i64) -> StatementRow {
    StatementRow {
        reference: None,
        kind: RowKind::Refund,
        refund_no: Some(refund_no.into()),
        payment_no: Some("P1".into()),
        ..row(line, Some("T1"), None, minor, "CNY")
    }
}

fn pay(no: &str, txn: Option<&str>, amount: i64, status: &str) -> Pay {
    Pay {
        no: no.into(),
        order: Some(format!("ORDER-{no}")),
        amount,
        currency: "CNY".into(),
        status: status.into(),
        txn: txn.map(Into::into),
        created: Some(T0),
        paid: None,
    }
}

/// A day with no cut window: nothing is near its edges.
fn no_edges() -> Edges {
    Edges::new(("p", "n"), (T0, T0 + DAY), 0, (false, false))
}

fn ticket(v: Verdict) -> Ticket {
    match v {
        Verdict::Ticket(t) => t,
        Verdict::Matched => panic!("matched, not a ticket"),
    }
}

fn class_of(v: Verdict) -> (Class, Severity) {
    let t = ticket(v);
    (t.class, t.severity)
}

#[test]
fn a_row_that_agrees_with_its_payment_matches() {
    let p = pay("P1", Some("T1"), 100, "SUCCEEDED");
    let r = row(2, Some("T1"), Some("P1"), 100, "CNY");
    assert!(matches!(
        verdict(&r, Some(&p), Some(&p), 1),
        Verdict::Matched
    ));
    // Refunded since: the money arrived all the same.
    let p = pay("P1", Some("T1"), 100, "REFUNDED");
    assert!(matches!(verdict(&r, Some(&p), None, 1), Verdict::Matched));
    // Neither side says the money moved.
    let p = pay("P1", Some("T1"), 100, "CLOSED");
    let r = StatementRow {
        reference: None,
        status: "CLOSED".into(),
        ..r
    };
    assert!(matches!(verdict(&r, Some(&p), None, 1), Verdict::Matched));
}

#[test]
fn a_row_naming_no_payment_of_ours_is_provider_only() {
    let r = row(2, Some("T9"), Some("P9"), 100, "CNY");
    let t = ticket(verdict(&r, None, None, 1));
    assert_eq!((t.class, t.severity), (Class::ProviderOnly, Severity::High));
    assert_eq!(t.key, "T9");
    assert_eq!(t.payment_no.as_deref(), Some("P9"));
    assert_eq!(t.order_no, None);
    // Without a transaction id, the payment_no is the key; without either,
    // the line.
    let r = row(3, None, Some("P9"), 100, "CNY");
    assert_eq!(ticket(verdict(&r, None, None, 1)).key, "P9");
    let r = row(4, None, None, 100, "CNY");
    assert_eq!(ticket(verdict(&r, None, None, 1)).key, "line-4");
}

#[test]
fn a_payment_found_by_payment_no_only_is_the_rows_within_three_days() {
    let r = |at: Option<i64>| StatementRow {
        reference: None,
        occurred_at: at,
        ..row(2, Some("T1"), Some("P1"), 100, "CNY")
    };
    let p = Pay {
        txn: None,
        ..pay("P1", None, 100, "SUCCEEDED")
    };
    for at in [T0, T0 + 3 * DAY, T0 - 3 * DAY] {
        assert!(
            matches!(verdict(&r(Some(at)), None, Some(&p), 1), Verdict::Matched),
            "{at}"
        );
    }
    // A row that says no time is taken as near.
    assert!(matches!(
        verdict(&r(None), None, Some(&p), 1),
        Verdict::Matched
    ));
    for at in [T0 + 3 * DAY + 1, T0 - 3 * DAY - 1] {
        let (class, _) = class_of(verdict(&r(Some(at)), None, Some(&p), 1));
        assert_eq!(class, Class::ProviderOnly, "{at}");
    }
    // A payment whose creation is unknown is never near.
    let unknown = Pay {
        created: None,
        ..p.clone()
    };
    let (class, _) = class_of(verdict(&r(Some(T0)), None, Some(&unknown), 1));
    assert_eq!(class, Class::ProviderOnly);
    // Near, and the rest of the rules apply to it.
    let lagging = Pay {
        status: "PENDING".into(),
        ..p
    };
    let t = ticket(verdict(&r(Some(T0 + DAY)), None, Some(&lagging), 1));
    assert_eq!(
        (t.class, t.payment_no.as_deref()),
        (Class::StatusLag, Some("P1"))
    );
}

#[test]
fn a_transaction_listed_twice_is_a_duplicate() {
    let p = pay("P1", Some("T1"), 100, "SUCCEEDED");
    let r = row(2, Some("T1"), None, 100, "CNY");
    let t = ticket(verdict(&r, Some(&p), None, 2));
    assert_eq!((t.class, t.severity), (Class::Duplicate, Severity::High));
    assert_eq!(t.reason, "transaction T1 appears 2 times in the statement");
    assert_eq!(
        (t.key.as_str(), t.payment_no.as_deref()),
        ("T1", Some("P1"))
    );
    assert_eq!(
        t.order_no, None,
        "the ticket reads its order from the payment"
    );
    // Found by payment_no only, the payment is still named.
    let t = ticket(verdict(&r, None, Some(&p), 3));
    assert_eq!(
        (t.class, t.payment_no.as_deref()),
        (Class::Duplicate, Some("P1"))
    );
}

#[test]
fn one_transaction_for_two_payments_is_one_to_many_either_way() {
    // The transaction is one payment's, the payment_no another's.
    let t1 = pay("P1", Some("T1"), 100, "SUCCEEDED");
    let p2 = pay("P2", Some("T2"), 100, "SUCCEEDED");
    let r = row(2, Some("T1"), Some("P2"), 100, "CNY");
    let t = ticket(verdict(&r, Some(&t1), Some(&p2), 1));
    assert_eq!((t.class, t.severity), (Class::OneToMany, Severity::High));
    assert_eq!(t.payment_no.as_deref(), Some("P1"));
    assert_eq!(t.order_no.as_deref(), Some("ORDER-P1"));
    assert_eq!(
        t.reason,
        "transaction T1 belongs to payment P1, the statement names P2"
    );
    // The payment_no names a payment bound to another transaction.
    let r = row(3, Some("T3"), Some("P2"), 100, "CNY");
    let t = ticket(verdict(&r, None, Some(&p2), 1));
    assert_eq!(t.class, Class::OneToMany);
    assert_eq!(t.payment_no.as_deref(), Some("P2"));
    assert_eq!(
        t.reason,
        "payment P2 is bound to transaction T2, the statement says T3"
    );
}

#[test]
fn amounts_and_currencies_that_differ_are_mismatches_currency_first() {
    let p = pay("P1", Some("T1"), 100, "SUCCEEDED");
    let r = row(2, Some("T1"), None, 101, "CNY");
    let t = ticket(verdict(&r, Some(&p), None, 1));
    assert_eq!(
        (t.class, t.severity),
        (Class::AmountMismatch, Severity::High)
    );
    assert_eq!(t.reason, "statement 1.01 CNY, local 1.00 CNY");
    assert_eq!(t.local, Some((100, "CNY".into(), "SUCCEEDED".into())));
    assert!(!t.repairable);
    let r = row(2, Some("T1"), None, 101, "USD");
    let t = ticket(verdict(&r, Some(&p), None, 1));
    assert_eq!(
        (t.class, t.severity),
        (Class::CurrencyMismatch, Severity::High)
    );
    assert_eq!(t.reason, "statement USD, local CNY");
}

#[test]
fn paid_here_and_not_at_the_provider_is_local_only() {
    let p = pay("P1", Some("T1"), 100, "SUCCEEDED");
    let r = StatementRow {
        reference: None,
        status: "CLOSED".into(),
        ..row(2, Some("T1"), None, 100, "CNY")
    };
    let t = ticket(verdict(&r, Some(&p), None, 1));
    assert_eq!(
        (t.class, t.severity),
        (Class::LocalOnly, Severity::Critical)
    );
    assert_eq!(
        t.reason,
        "the provider says CLOSED, Reckon has it SUCCEEDED"
    );
}

#[test]
fn paid_at_the_provider_and_not_here_is_status_lag_repairable_while_it_can_move() {
    let r = row(2, Some("T1"), None, 100, "CNY");
    for status in ["CREATED", "PENDING"] {
        let p = pay("P1", Some("T1"), 100, status);
        let t = ticket(verdict(&r, Some(&p), None, 1));
        assert_eq!(
            (t.class, t.severity),
            (Class::StatusLag, Severity::Medium),
            "{status}"
        );
        assert!(t.repairable);
        assert_eq!(t.reason, format!("paid at the provider, {status} here"));
        assert_eq!(
            (t.key.as_str(), t.payment_no.as_deref()),
            ("P1", Some("P1"))
        );
    }
    for status in ["FAILED", "CLOSED"] {
        let p = pay("P1", Some("T1"), 100, status);
        let t = ticket(verdict(&r, Some(&p), None, 1));
        assert_eq!(
            (t.class, t.severity),
            (Class::StatusLag, Severity::High),
            "{status}"
        );
        assert!(!t.repairable, "the state machine cannot follow");
    }
}

#[test]
fn the_keys_exceptions_name_are_asked_once() {
    let ex = vec![
        (row(2, Some("T9"), Some("P9"), 1, "CNY"), None),
        (row(3, Some("T9"), None, 1, "CNY"), None),
        (row(4, Some("T1"), Some("P1"), 1, "CNY"), Some(0)),
        (row(5, Some("T8"), Some("P9"), 1, "CNY"), None),
    ];
    let named = Named::of(&ex);
    assert_eq!(named.txns, ["T8", "T9"], "the day's own are not asked");
    assert_eq!(named.nos, ["P1", "P9"]);
    assert_eq!(named.copies.get("T9"), Some(&2));
    assert_eq!(named.copies.get("T8"), Some(&1));
    let (txns, nos) = named.not_in(&ex[..2]);
    assert_eq!((txns, nos), (vec!["T8"], vec!["P1"]));
}

/// The day's payments, every row of a statement and each's class, with
/// the figures they add up to.
#[test]
fn every_row_and_every_payment_of_the_day_lands_in_one_class() {
    let mut day = DayPayments::default();
    day.push("P1", Some("T1"), 100, "CNY", "SUCCEEDED").unwrap(); // matched
    day.push("P2", Some("T2"), 200, "CNY", "SUCCEEDED").unwrap(); // listed twice
    day.push("P3", Some("T3"), 300, "CNY", "PENDING").unwrap(); // lags
    day.push("P4", Some("T4"), 400, "CNY", "SUCCEEDED").unwrap(); // absent: local only
    day.push("P5", None, 500, "CNY", "CREATED").unwrap(); // absent, unpaid: pending
    day.push("P6", Some("T6"), 600, "CNY", "SUCCEEDED").unwrap(); // one to many
    day.index();
    let mut m = super::super::matching::Matcher::new(day);
    for r in [
        row(2, Some("T1"), Some("P1"), 100, "CNY"),
        row(3, Some("T2"), None, 200, "CNY"),
        row(4, Some("T2"), None, 200, "CNY"),
        row(5, Some("T3"), None, 300, "CNY"),
        row(6, Some("T6"), Some("P7"), 600, "CNY"),
        row(7, Some("T9"), None, 900, "CNY"),
    ] {
        m.feed(r.borrowed());
    }
    let named = Named::of(&m.exceptions);
    let mut by_no = ByKey::new();
    by_no.insert("P7".into(), pay("P7", Some("T7"), 600, "SUCCEEDED"));
    let mut figures = Figures::default();
    let c = payments(
        &m.day,
        &m.exceptions,
        &named,
        &ByKey::new(),
        &by_no,
        &mut no_edges(),
        &mut figures,
    );
    let got: Vec<(Class, &str, Option<i64>, &[String])> = c
        .found
        .iter()
        .map(|f| (f.class, f.key.as_str(), f.line_no, f.hold.as_slice()))
        .collect();
    let held = |nos: &[&str]| nos.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    assert_eq!(
        got,
        [
            (Class::StatusLag, "P3", Some(5), &[][..]),
            (Class::OneToMany, "T6", Some(6), &held(&["P6", "P7"])[..]),
            (Class::ProviderOnly, "T9", Some(7), &[][..]),
            (Class::Duplicate, "T2", Some(4), &[][..]),
            (Class::LocalOnly, "P4", None, &held(&["P4"])[..]),
        ]
    );
    assert_eq!(c.lagging, ["P3"]);
    assert_eq!(figures.statement_rows, m.payment_rows);
    assert_eq!(figures.local_without_row, 2);
    // P1 matched; P5, unpaid and not listed, is pending and only that.
    assert_eq!((figures.matched, figures.pending), (1, 1), "P1, then P5");
    let classes: Vec<(&str, i64)> = figures.classes.iter().map(|(k, v)| (*k, *v)).collect();
    assert_eq!(
        classes,
        [
            ("DUPLICATE", 2),
            ("LOCAL_ONLY", 1),
            ("MATCHED", 1),
            ("ONE_TO_MANY", 1),
            ("PROVIDER_ONLY", 1),
            ("STATUS_LAG", 1),
        ]
    );
}

#[test]
fn refunds_that_differ_from_the_ledger_either_way_are_refund_mismatches() {
    let entry = |status: &str, amount: i64| Refund {
        refund_no: String::new(),
        payment_no: "P1".into(),
        amount_minor: amount,
        currency: "CNY".into(),
        status: status.into(),
        finished_at: None,
    };
    let mut ledger = hashbrown::HashMap::new();
    ledger.insert("R1".to_string(), entry("SUCCEEDED", 100));
    ledger.insert("R2".to_string(), entry("SUCCEEDED", 100));
    ledger.insert("R3".to_string(), entry("PENDING", 100));
    let rows = [
        refund_row(2, "R1", 100), // matched
        refund_row(3, "R2", 90),  // amount
        refund_row(4, "R3", 100), // its notification is missing
        refund_row(5, "R4", 100), // not requested
    ];
    let day = vec![
        Refund {
            refund_no: "R1".into(),
            ..entry("SUCCEEDED", 100)
        },
        Refund {
            refund_no: "R5".into(),
            ..entry("SUCCEEDED", 50)
        },
    ];
    let (mut figures, mut found) = (Figures::default(), Vec::new());
    refunds(
        &rows,
        &ledger,
        &hashbrown::HashSet::new(),
        day,
        &mut no_edges(),
        &mut figures,
        &mut found,
    );
    let got: Vec<(Class, &str, &str)> = found
        .iter()
        .map(|f| (f.class, f.key.as_str(), f.reason.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (
                Class::RefundMismatch,
                "R2",
                "statement 0.90 CNY, ledger 1.00 CNY"
            ),
            (
                Class::RefundMismatch,
                "R3",
                "refunded at the provider, PENDING here (its notification is missing)"
            ),
            (
                Class::RefundMismatch,
                "R4",
                "a refund in the statement Reckon did not request"
            ),
            (
                Class::RefundMismatch,
                "R5",
                "refund R5 succeeded here, absent from the provider's statement"
            ),
        ]
    );
    assert!(found.iter().all(|f| f.severity == Severity::High));
    assert_eq!(found[3].local, Some((50, "CNY".into(), "SUCCEEDED".into())));
    assert_eq!(found[3].provider_side, None);
    assert_eq!(found[2].payment_no.as_deref(), Some("P1"), "the row's own");
    assert_eq!((figures.statement_rows, figures.local_without_row), (4, 1));
    assert_eq!(figures.matched, 1);
    assert_eq!(figures.classes.get("REFUND_MISMATCH"), Some(&4));
}

/// Near the day's end, a paid payment and a succeeded refund the statement
/// does not list are in transit (pending, no ticket) while the next day is
/// to come; absent once it came without them; matched once it carried
/// them. Inside the day, absent at once.
#[test]
fn records_near_the_cut_wait_for_the_neighbouring_statement() {
    let end = T0 + DAY;
    let classify = |next_done: bool, arrived: bool| {
        let mut day = DayPayments::default();
        day.push("EDGE", Some("T1"), 100, "CNY", "SUCCEEDED")
            .unwrap();
        day.push("NOON", Some("T2"), 100, "CNY", "SUCCEEDED")
            .unwrap();
        day.index();
        let m = super::super::matching::Matcher::new(day);
        let mut edges = Edges::new(("p", "n"), (T0, end), DAY / 48, (false, next_done));
        edges.near_payment("EDGE", end - 2_000_000);
        if arrived {
            edges.state(PAYMENT, "EDGE", "ARRIVED");
            edges.state("refund", "R1", "ARRIVED");
        }
        let mut figures = Figures::default();
        let named = Named::of(&m.exceptions);
        let c = payments(
            &m.day,
            &m.exceptions,
            &named,
            &ByKey::new(),
            &ByKey::new(),
            &mut edges,
            &mut figures,
        );
        let refund = Refund {
            refund_no: "R1".into(),
            payment_no: "P1".into(),
            amount_minor: 10,
            currency: "CNY".into(),
            status: "SUCCEEDED".into(),
            finished_at: Some(end - 1),
        };
        let mut found = c.found;
        refunds(
            &[],
            &hashbrown::HashMap::new(),
            &hashbrown::HashSet::new(),
            vec![refund],
            &mut edges,
            &mut figures,
            &mut found,
        );
        let keys: Vec<(Class, String)> = found.iter().map(|f| (f.class, f.key.clone())).collect();
        (keys, figures)
    };
    let (keys, f) = classify(false, false);
    assert_eq!(keys, [(Class::LocalOnly, "NOON".to_string())]);
    assert_eq!((f.in_transit, f.pending), (2, 2));
    assert_eq!(f.classes.get("IN_TRANSIT"), Some(&2));
    let (keys, f) = classify(true, false);
    assert_eq!(
        keys,
        [
            (Class::LocalOnly, "EDGE".to_string()),
            (Class::LocalOnly, "NOON".to_string()),
            (Class::RefundMismatch, "R1".to_string())
        ]
    );
    assert_eq!(f.in_transit, 0);
    let (keys, f) = classify(true, true);
    assert_eq!(keys, [(Class::LocalOnly, "NOON".to_string())]);
    assert_eq!((f.edge_matched, f.matched, f.in_transit), (2, 2, 0));
}

#[test]
fn a_reference_finds_the_one_attempt_of_its_order_made_near_the_row() {
    let mut a = pay("P1", None, 1000, "CREATED");
    a.order = Some("ORD-1".into());
    let mut by_ref = ByOrder::new();
    by_ref.insert("ORD-1".into(), vec![a.clone()]);
    let mut r = row(2, Some("T9"), None, 1000, "CNY");
    assert_eq!(
        referenced(&r, &by_ref, DAY),
        Ok(None),
        "no reference stated"
    );
    r.reference = Some("ORD-1".into());
    assert_eq!(referenced(&r, &by_ref, DAY).unwrap(), Some(&a));
    // Made four days before the row: outside a window of three.
    let mut far = a.clone();
    far.created = Some(T0 - 4 * DAY);
    by_ref.insert("ORD-1".into(), vec![far]);
    assert_eq!(referenced(&r, &by_ref, 3 * DAY), Ok(None));
    // Two attempts of the order near the row: neither is it.
    let mut b = a.clone();
    b.no = "P2".into();
    by_ref.insert("ORD-1".into(), vec![a, b]);
    assert_eq!(referenced(&r, &by_ref, DAY).unwrap_err().len(), 2);
}
