//! The day's payments held compactly and the statement streamed against
//! them: a day read in parts is the day read whole, a chunk matches as its
//! rows one by one, and the limits hold.

use super::*;
use crate::domain::{Currency, Money};

fn row(line: i64, txn: &str, no: Option<&str>, minor: i64, currency: &str) -> StatementRow {
    StatementRow {
        reference: None,
        line_no: line,
        kind: RowKind::Payment,
        provider_txn_id: Some(txn.into()),
        payment_no: no.map(Into::into),
        refund_no: None,
        provider_refund_id: None,
        money: Money::new(minor, Currency::parse(currency).unwrap()),
        status: "SUCCEEDED".into(),
        occurred_at: None,
        fee: None,
    }
}

#[test]
fn a_day_read_in_parts_is_the_day_read_whole() {
    let payments: Vec<(String, Option<String>, i64, &str, &str)> = (0..70_000)
        .map(|i| {
            (
                format!("PAY{i:06}"),
                (i % 7 != 0).then(|| format!("TXN{i:06}-{}", "x".repeat(i % 40))),
                i as i64,
                if i % 3 == 0 { "USD" } else { "CNY" },
                if i % 5 == 0 { "PENDING" } else { "SUCCEEDED" },
            )
        })
        .collect();
    let push = |day: &mut DayPayments, p: &[(String, Option<String>, i64, &str, &str)]| {
        for (no, txn, amount, currency, status) in p {
            day.push(no, txn.as_deref(), *amount, currency, status)
                .unwrap();
        }
    };
    let mut whole = DayPayments::default();
    push(&mut whole, &payments);
    // The second part meets its currencies and statuses in another
    // order (CNY, SUCCEEDED first; the first part USD, PENDING), and
    // the first part ends mid-block.
    let mut first = DayPayments::default();
    push(&mut first, &payments[..40_001]);
    let mut second = DayPayments::default();
    push(&mut second, &payments[40_001..]);
    first.append(second).unwrap();
    assert_eq!(first.len(), whole.len());
    assert!(first.arena.len() > 1, "identifiers span blocks");
    for i in whole.indexes() {
        assert_eq!(first.no_of(i), whole.no_of(i));
        assert_eq!(first.txn(i), whole.txn(i));
        assert_eq!(first.status_of(i), whole.status_of(i));
        let (a, b) = (first.pay(i), whole.pay(i));
        assert_eq!((a.amount, a.currency), (b.amount, b.currency));
    }
    first.index();
    assert_eq!(first.find_txn("TXN069999-"), None);
    let t = payments[69_998].1.as_deref().unwrap();
    assert_eq!(first.find_txn(t), Some(69_998));
}

#[test]
fn plain_rows_are_counted_and_the_rest_kept() {
    let mut day = DayPayments::default();
    day.push("P1", Some("T1"), 100, "CNY", "SUCCEEDED").unwrap();
    day.push("P2", Some("T2"), 200, "CNY", "PENDING").unwrap();
    day.push("P3", None, 300, "CNY", "SUCCEEDED").unwrap();
    day.push("P4", Some("T4"), 400, "CNY", "REFUNDED").unwrap();
    assert_eq!(day.len(), 4);
    assert_eq!(day.txn(0), Some(&b"T1"[..]));
    assert_eq!(day.txn(2), None);
    day.index();
    let mut m = Matcher::new(day);
    m.feed(row(1, "T1", Some("P1"), 100, "CNY").borrowed()); // plain
    m.feed(row(2, "T2", None, 200, "CNY").borrowed()); // lags: exception
    m.feed(row(3, "T9", Some("P3"), 300, "CNY").borrowed()); // unknown txn
    m.feed(row(4, "T4", None, 400, "CNY").borrowed()); // plain (refunded since)
    m.feed(row(5, "T4", None, 400, "USD").borrowed()); // a second row: kept
    assert_eq!(m.payment_rows, 5);
    let kept: Vec<(i64, Option<u32>)> = m.exceptions.iter().map(|(r, i)| (r.line_no, *i)).collect();
    assert_eq!(kept, vec![(2, Some(1)), (3, None), (5, Some(3))]);
    assert_eq!(
        (0..4).map(|i| m.day.rows(i)).collect::<Vec<_>>(),
        vec![1, 1, 0, 2]
    );
    assert!(!m.day.had_exception(0) && m.day.had_exception(3));
    assert_eq!(m.day.last_line(3), Some(5));
    assert_eq!(m.day.last_line(0), None);
    assert_eq!(m.day.pay(1).status, "PENDING");
}

#[test]
fn a_payment_named_by_many_rows_keeps_their_count_and_last_line() {
    let mut day = DayPayments::default();
    day.push("P1", Some("T1"), 100, "CNY", "SUCCEEDED").unwrap();
    day.push("P2", Some("T2"), 200, "CNY", "SUCCEEDED").unwrap();
    day.index();
    let mut m = Matcher::new(day);
    for line in [2, 5, 9] {
        m.feed(row(line, "T1", Some("P1"), 100, "CNY").borrowed());
    }
    m.feed(row(11, "T2", Some("P2"), 200, "CNY").borrowed());
    assert_eq!((m.day.rows(0), m.day.last_line(0)), (3, Some(9)));
    assert_eq!((m.day.rows(1), m.day.last_line(1)), (1, None));
    assert!(m.exceptions.is_empty());
    assert_eq!(m.day.many.len(), 1, "only the payment named more than once");
}

#[test]
fn a_statement_that_mostly_does_not_match_is_refused_before_memory_runs_out() {
    let mut m = Matcher::new(DayPayments::default());
    for i in 0..EXCEPTIONS_FLOOR as i64 {
        m.feed(row(i + 2, &format!("T{i}"), None, 100, "CNY").borrowed());
    }
    assert!(m.within_bounds().is_ok());
    m.feed(row(EXCEPTIONS_FLOOR as i64 + 2, "T-last", None, 100, "CNY").borrowed());
    let e = m.within_bounds().unwrap_err().to_string();
    assert!(
        e.contains("more than 200000") && e.contains("do not match") && e.contains("200001"),
        "{e}"
    );
}

#[test]
fn the_exceptions_allowed_grow_with_the_day() {
    assert_eq!(exception_limit(EXCEPTIONS_FLOOR, 0), 200_000);
    assert_eq!(exception_limit(EXCEPTIONS_FLOOR, 1_000_000), 200_000);
    assert_eq!(exception_limit(EXCEPTIONS_FLOOR, 4_000_000), 200_000);
    assert_eq!(exception_limit(EXCEPTIONS_FLOOR, 5_000_000), 250_000);
    // A day of ten million with 2% not matching runs (its 5% is 500,000).
    assert_eq!(exception_limit(EXCEPTIONS_FLOOR, 10_000_000), 500_000);
    assert!(exception_limit(EXCEPTIONS_FLOOR, 10_000_000) > 200_000 * 2);
}

/// A day of `n` payments P<i> / T<i> of 100 CNY, paid, indexed.
fn day_of(n: usize) -> DayPayments {
    let mut day = DayPayments::default();
    for i in 0..n {
        day.push(
            &format!("P{i}"),
            Some(&format!("T{i}")),
            100,
            "CNY",
            "SUCCEEDED",
        )
        .unwrap();
    }
    day.index();
    day
}

/// The rule at a small scale (a floor of 1,000 instead of 200,000): a day
/// of 40,000 payments may have 2,000 exceptions — above the floor, which
/// alone refused such a day — and a statement of another day is refused
/// once past them.
#[test]
fn a_day_above_the_floor_runs_and_another_days_statement_is_still_refused() {
    let floor = 1_000;
    let mut m = Matcher::new(day_of(40_000));
    m.floor = floor;
    // 1,900 rows of the day's 40,000 state another amount: exceptions.
    for i in 0..40_000i64 {
        let minor = if i % 20 == 0 && i < 38_000 { 101 } else { 100 };
        m.feed(
            row(
                i + 2,
                &format!("T{i}"),
                Some(&format!("P{i}")),
                minor,
                "CNY",
            )
            .borrowed(),
        );
        m.within_bounds().unwrap();
    }
    assert_eq!(m.exceptions.len(), 1_900);
    assert!(m.exceptions.len() > floor);
    // Another day's statement: none of its rows is a payment of this day.
    let mut m = Matcher::new(day_of(40_000));
    m.floor = floor;
    let mut refused = None;
    for i in 0..40_000i64 {
        m.feed(row(i + 2, &format!("OTHER{i}"), None, 100, "CNY").borrowed());
        if let Err(e) = m.within_bounds() {
            refused = Some((i, e.to_string()));
            break;
        }
    }
    let (at, e) = refused.expect("refused");
    assert_eq!(at, 2_000, "refused at the 2,001st exception: {e}");
    assert!(
        e.contains("more than 2000") && e.contains("No ticket was written"),
        "{e}"
    );
}

/// Matching a chunk at once (fetching ahead) is matching its rows one
/// by one: same exceptions, same counts on the same payments — with
/// spread hashes and with every hash alike (each guess wrong but one).
#[test]
fn a_chunk_is_matched_as_its_rows_one_by_one() {
    for all_clash in [false, true] {
        let day = || {
            let mut day = DayPayments {
                all_clash,
                ..Default::default()
            };
            for k in 0..50i64 {
                let txn = (k % 7 != 0).then(|| format!("T{k}"));
                let status = if k % 5 == 0 { "PENDING" } else { "SUCCEEDED" };
                day.push(&format!("P{k}"), txn.as_deref(), 100 + k, "CNY", status)
                    .unwrap();
            }
            day.index();
            day
        };
        let mut rows = Vec::new();
        for k in 0..130i64 {
            let p = k % 60;
            let no = match k % 4 {
                0 => None,
                1 => Some(format!("P{}", p + 1)),
                _ => Some(format!("P{p}")),
            };
            let minor = if k % 9 == 0 { 1 } else { 100 + p };
            let mut r = row(k + 2, &format!("T{p}"), no.as_deref(), minor, "CNY");
            if k % 11 == 0 {
                r.kind = RowKind::Refund;
            }
            if k % 13 == 0 {
                r.provider_txn_id = None;
            }
            rows.push(r);
        }
        let mut one = Matcher::new(day());
        for r in &rows {
            one.feed(r.borrowed());
        }
        let mut chunked = Matcher::new(day());
        let mut c = Chunk::default();
        for part in rows.chunks(17) {
            for r in part {
                c.push(r.borrowed());
            }
            assert_eq!(c.len(), part.len());
            assert_eq!(c.get(part.len() - 1).owned(), part[part.len() - 1]);
            chunked.feed_chunk(&mut c);
            assert!(c.is_empty());
        }
        assert_eq!(one.exceptions, chunked.exceptions, "all_clash {all_clash}");
        assert_eq!(one.refunds, chunked.refunds);
        assert_eq!(one.payment_rows, chunked.payment_rows);
        assert!(one.exceptions.iter().any(|(_, s)| s.is_some()));
        assert!(one.exceptions.iter().any(|(_, s)| s.is_none()));
        for i in one.day.indexes() {
            let (a, b) = (&one.day, &chunked.day);
            assert_eq!(
                (a.rows(i), a.last_line(i), a.slot(i).flags),
                (b.rows(i), b.last_line(i), b.slot(i).flags),
                "payment {i}"
            );
        }
        assert!(one.day.indexes().any(|i| one.day.rows(i) > 1));
    }
}

#[test]
fn transaction_ids_whose_hashes_clash_are_still_told_apart() {
    let mut day = DayPayments {
        all_clash: true,
        ..Default::default()
    };
    for k in 1..=3 {
        day.push(
            &format!("P{k}"),
            Some(&format!("T{k}")),
            k,
            "CNY",
            "SUCCEEDED",
        )
        .unwrap();
    }
    // The same transaction again on another payment: the first keeps it.
    day.push("P4", Some("T2"), 4, "CNY", "SUCCEEDED").unwrap();
    day.index();
    assert_eq!(day.by_txn.len(), 3);
    assert_eq!(day.find_txn("T1"), Some(0));
    assert_eq!(day.find_txn("T2"), Some(1));
    assert_eq!(day.find_txn("T3"), Some(2));
    assert_eq!(day.find_txn("T9"), None);
}

/// What the edges of a day keep of the payments near its cuts: only those
/// no row listed — told by the day's index, payment_no and all.
#[test]
fn a_payment_is_listed_only_if_a_row_named_it() {
    let mut day = DayPayments::default();
    day.push("P1", Some("T1"), 100, "CNY", "SUCCEEDED").unwrap();
    day.push("P2", Some("T2"), 100, "CNY", "SUCCEEDED").unwrap();
    day.push("P3", None, 100, "CNY", "SUCCEEDED").unwrap();
    // A second payment of transaction T1: the first keeps it.
    day.push("P4", Some("T1"), 100, "CNY", "SUCCEEDED").unwrap();
    day.index();
    let mut m = Matcher::new(day);
    m.feed(row(2, "T1", Some("P1"), 100, "CNY").borrowed());
    let day = &m.day;
    assert!(day.listed("P1", Some("T1")));
    assert!(!day.listed("P2", Some("T2")), "no row named it");
    assert!(!day.listed("P3", None), "without a transaction id");
    assert!(!day.listed("P4", Some("T1")), "its transaction is P1's");
    assert!(!day.listed("P9", Some("T9")), "not among the day's");
}
