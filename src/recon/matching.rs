//! The matching core: the business day's local payments held compactly in
//! memory, and the statement's rows streamed against them.
//!
//! A payment row whose transaction id names one of the day's payments, with
//! the same payment_no (or none), amount and currency, paid on both sides,
//! is only counted: nothing about it is kept but the count on its payment
//! (a second row for the same transaction makes both DUPLICATE). Every
//! other row is an *exception*, kept whole and classified at the end, with
//! what the database says about the payments it names. Memory is the day's
//! payments (about 70 bytes each: 40 for the payment, its two identifiers,
//! 5 in the hash table) plus the exceptions — it does not grow with the
//! rows that match.

use super::statement::{RowKind, StatementRow};
use std::hash::BuildHasher;

/// The statuses in which the money has arrived.
pub(super) fn paid(status: &str) -> bool {
    matches!(status, "SUCCEEDED" | "REFUNDING" | "REFUNDED")
}

/// A payment as classification sees it.
#[derive(Clone, Debug)]
pub(super) struct Pay {
    pub no: String,
    pub order: Option<String>,
    pub amount: i64,
    pub currency: String,
    pub status: String,
    pub txn: Option<String>,
    /// Known for payments read from the database (the time window of a
    /// match by payment_no); not needed for the day's own.
    pub created: Option<i64>,
}

/// A payment of the day: 40 bytes, and its two identifiers in the arena.
struct Slot {
    /// payment_no, then the transaction id, in the arena.
    at: u32,
    no_len: u16,
    txn_len: u16,
    currency: u16,
    status: u16,
    flags: u8,
    rows: u32,
    amount: i64,
    /// The line of the last statement row found for it.
    last_line: i64,
}

const HAS_TXN: u8 = 1;
/// A row found for it did not plainly match: it is among the exceptions.
const EXCEPTION: u8 = 2;

/// The few distinct currencies and statuses, numbered.
#[derive(Default)]
struct Names(Vec<String>);

impl Names {
    fn id(&mut self, name: &str) -> u16 {
        match self.0.iter().position(|n| n == name) {
            Some(i) => i as u16,
            None => {
                self.0.push(name.to_owned());
                (self.0.len() - 1) as u16
            }
        }
    }
    fn find(&self, name: &str) -> Option<u16> {
        self.0.iter().position(|n| n == name).map(|i| i as u16)
    }
    fn get(&self, id: u16) -> &str {
        &self.0[usize::from(id)]
    }
}

/// Storage grown in fixed blocks: growing never copies what is there (a
/// doubling `Vec` briefly holds both copies — 100 MB more at the peak for
/// a million payments).
const ARENA_BLOCK: usize = 1 << 20;
const SLOT_BLOCK: usize = 1 << 16;

/// The business day's local payments of one provider.
#[derive(Default)]
pub(super) struct DayPayments {
    /// Blocks of `ARENA_BLOCK` bytes; an identifier never spans two.
    arena: Vec<Vec<u8>>,
    slots: Vec<Vec<Slot>>,
    len: u32,
    /// Indexes of the payments with a transaction id, by its hash (4
    /// bytes each), built by [`DayPayments::index`].
    by_txn: hashbrown::HashTable<u32>,
    hasher: hashbrown::DefaultHashBuilder,
    names: Names,
    /// Tests: every transaction id hashes alike.
    #[cfg(test)]
    all_clash: bool,
}

impl DayPayments {
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Adds one payment of the day.
    pub fn push(
        &mut self,
        no: &str,
        txn: Option<&str>,
        amount: i64,
        currency: &str,
        status: &str,
    ) -> Result<(), String> {
        let ids = no.len() + txn.map_or(0, str::len);
        if no.len() > 1024 || txn.is_some_and(|t| t.len() > 1024) {
            return Err(format!(
                "payment {no}: an identifier longer than 1024 bytes"
            ));
        }
        if self
            .arena
            .last()
            .is_none_or(|b| b.len() + ids > ARENA_BLOCK)
        {
            if self.arena.len() >= (u32::MAX as usize) / ARENA_BLOCK {
                return Err("more than 4 GiB of payment identifiers in one business day".into());
            }
            self.arena.push(Vec::with_capacity(ARENA_BLOCK));
        }
        let block = self.arena.len() - 1;
        let last = &mut self.arena[block];
        let at = (block * ARENA_BLOCK + last.len()) as u32;
        last.extend_from_slice(no.as_bytes());
        last.extend_from_slice(txn.unwrap_or("").as_bytes());
        let index = self.len;
        self.len = index
            .checked_add(1)
            .ok_or_else(|| "more than 4 billion payments in one business day".to_string())?;
        let (currency, status) = (self.names.id(currency), self.names.id(status));
        self.push_slot(Slot {
            at,
            no_len: no.len() as u16,
            txn_len: txn.map_or(0, |t| t.len() as u16),
            currency,
            status,
            flags: if txn.is_some() { HAS_TXN } else { 0 },
            rows: 0,
            amount,
            last_line: 0,
        });
        Ok(())
    }

    fn push_slot(&mut self, slot: Slot) {
        if self.slots.last().is_none_or(|b| b.len() == SLOT_BLOCK) {
            self.slots.push(Vec::with_capacity(SLOT_BLOCK));
        }
        self.slots.last_mut().expect("a block").push(slot);
    }

    /// Adds every payment of `other` after these (a day read in parts, at
    /// once): its identifiers' blocks are moved, not copied, its slots
    /// copied one block at a time as it goes. Before [`DayPayments::index`].
    pub fn append(&mut self, other: DayPayments) -> Result<(), String> {
        debug_assert!(self.by_txn.is_empty() && other.by_txn.is_empty());
        let blocks = self.arena.len() + other.arena.len();
        if blocks > (u32::MAX as usize) / ARENA_BLOCK {
            return Err("more than 4 GiB of payment identifiers in one business day".into());
        }
        self.len = self
            .len
            .checked_add(other.len)
            .ok_or_else(|| "more than 4 billion payments in one business day".to_string())?;
        let shift = (self.arena.len() * ARENA_BLOCK) as u32;
        let names: Vec<u16> = other.names.0.iter().map(|n| self.names.id(n)).collect();
        self.arena.extend(other.arena);
        for block in other.slots {
            for mut slot in block {
                slot.at += shift;
                slot.currency = names[usize::from(slot.currency)];
                slot.status = names[usize::from(slot.status)];
                self.push_slot(slot);
            }
        }
        Ok(())
    }

    /// Indexes the payments by transaction id, once all are in (the
    /// table sized once: growing it would hash every id again).
    pub fn index(&mut self) {
        let mut by_txn = hashbrown::HashTable::with_capacity(self.len as usize);
        for i in 0..self.len {
            let Some(txn) = self.txn(i) else { continue };
            let h = self.hash(txn);
            // The same transaction on two payments: the first keeps it.
            if by_txn.find(h, |&j| self.txn(j) == Some(txn)).is_none() {
                by_txn.insert_unique(h, i, |_| unreachable!("sized for every payment"));
            }
        }
        self.by_txn = by_txn;
    }

    fn hash(&self, txn: &[u8]) -> u64 {
        #[cfg(test)]
        if self.all_clash {
            return 7;
        }
        self.hasher.hash_one(txn)
    }

    fn slot(&self, i: u32) -> &Slot {
        &self.slots[i as usize / SLOT_BLOCK][i as usize % SLOT_BLOCK]
    }

    fn slot_mut(&mut self, i: u32) -> &mut Slot {
        &mut self.slots[i as usize / SLOT_BLOCK][i as usize % SLOT_BLOCK]
    }

    fn no(&self, i: u32) -> &[u8] {
        let s = self.slot(i);
        bytes_in(&self.arena, s.at as usize, s.no_len)
    }

    fn txn(&self, i: u32) -> Option<&[u8]> {
        let s = self.slot(i);
        (s.flags & HAS_TXN != 0).then(|| {
            bytes_in(
                &self.arena,
                s.at as usize + usize::from(s.no_len),
                s.txn_len,
            )
        })
    }

    fn find_txn(&self, txn: &str) -> Option<u32> {
        let txn = txn.as_bytes();
        self.by_txn
            .find(self.hash(txn), |&i| self.txn(i) == Some(txn))
            .copied()
    }

    /// Payment `i` as classification sees it (its order_no is not held:
    /// a ticket reads it from the payment).
    pub fn pay(&self, i: u32) -> Pay {
        let s = self.slot(i);
        Pay {
            no: self.no_of(i).to_owned(),
            order: None,
            amount: s.amount,
            currency: self.names.get(s.currency).to_owned(),
            status: self.names.get(s.status).to_owned(),
            txn: self.txn(i).map(|t| String::from_utf8_lossy(t).into_owned()),
            created: None,
        }
    }

    pub fn rows(&self, i: u32) -> u32 {
        self.slot(i).rows
    }

    pub fn last_line(&self, i: u32) -> i64 {
        self.slot(i).last_line
    }

    pub fn had_exception(&self, i: u32) -> bool {
        self.slot(i).flags & EXCEPTION != 0
    }

    pub fn indexes(&self) -> impl Iterator<Item = u32> + use<> {
        0..self.len
    }

    /// payment_no of payment `i`, borrowed.
    pub fn no_of(&self, i: u32) -> &str {
        // Only whole `&str`s are written to the arena.
        std::str::from_utf8(self.no(i)).unwrap_or_default()
    }

    pub fn status_of(&self, i: u32) -> &str {
        self.names.get(self.slot(i).status)
    }
}

/// The identifier at `at` (a global arena offset) of `len` bytes.
fn bytes_in(arena: &[Vec<u8>], at: usize, len: u16) -> &[u8] {
    let block = &arena[at / ARENA_BLOCK];
    let from = at % ARENA_BLOCK;
    &block[from..from + usize::from(len)]
}

/// The statement streamed against the day's payments.
pub(super) struct Matcher {
    pub day: DayPayments,
    /// Payment rows that did not plainly match, in statement order, with
    /// the day's payment their transaction id names, if any.
    pub exceptions: Vec<(StatementRow, Option<u32>)>,
    pub refunds: Vec<StatementRow>,
    pub payment_rows: i64,
    /// When the run started reading, for its figures.
    pub started: Option<std::time::Instant>,
    succeeded: Option<u16>,
}

/// Rows that do not plainly match, at most: each is held until the end
/// (about 200 bytes, and a ticket's worth more when classified). A
/// statement beyond this is refused — almost surely another day's or
/// another provider's file, whose tickets would bury the triage queue.
pub(super) const MAX_EXCEPTIONS: usize = 200_000;

impl Matcher {
    /// Refuses the statement once more rows fail to match plainly than
    /// [`MAX_EXCEPTIONS`].
    pub fn within_bounds(&self) -> Result<(), super::ReconError> {
        let n = self.exceptions.len() + self.refunds.len();
        if n > MAX_EXCEPTIONS {
            return Err(super::ReconError::Refused(format!(
                "more than {MAX_EXCEPTIONS} of the statement's rows do not match a payment of this day \
                 plainly ({n} by row {}): is it this provider's statement of this day? No ticket was written",
                self.payment_rows + self.refunds.len() as i64
            )));
        }
        Ok(())
    }

    pub fn new(day: DayPayments) -> Matcher {
        Matcher {
            succeeded: day.names.find("SUCCEEDED"),
            day,
            exceptions: Vec::new(),
            refunds: Vec::new(),
            payment_rows: 0,
            started: None,
        }
    }

    pub fn feed(&mut self, row: StatementRow) {
        if row.kind == RowKind::Refund {
            self.refunds.push(row);
            return;
        }
        self.payment_rows += 1;
        let Some(i) = row
            .provider_txn_id
            .as_deref()
            .and_then(|t| self.day.find_txn(t))
        else {
            self.exceptions.push((row, None));
            return;
        };
        let day = &self.day;
        let slot = day.slot(i);
        let plain = row
            .payment_no
            .as_deref()
            .is_none_or(|n| n.as_bytes() == day.no(i))
            && row.money.minor == slot.amount
            && row.money.currency.code() == day.names.get(slot.currency)
            && row.status == "SUCCEEDED"
            && (Some(slot.status) == self.succeeded || paid(day.names.get(slot.status)));
        let slot = self.day.slot_mut(i);
        slot.rows = slot.rows.saturating_add(1);
        slot.last_line = row.line_no;
        if !plain {
            slot.flags |= EXCEPTION;
            self.exceptions.push((row, Some(i)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Currency, Money};

    fn row(line: i64, txn: &str, no: Option<&str>, minor: i64, currency: &str) -> StatementRow {
        StatementRow {
            line_no: line,
            kind: RowKind::Payment,
            provider_txn_id: Some(txn.into()),
            payment_no: no.map(Into::into),
            refund_no: None,
            provider_refund_id: None,
            money: Money::new(minor, Currency::parse(currency).unwrap()),
            status: "SUCCEEDED".into(),
            occurred_at: None,
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
        m.feed(row(1, "T1", Some("P1"), 100, "CNY")); // plain
        m.feed(row(2, "T2", None, 200, "CNY")); // lags: exception
        m.feed(row(3, "T9", Some("P3"), 300, "CNY")); // unknown txn
        m.feed(row(4, "T4", None, 400, "CNY")); // plain (refunded since)
        m.feed(row(5, "T4", None, 400, "USD")); // a second row: kept
        assert_eq!(m.payment_rows, 5);
        let kept: Vec<(i64, Option<u32>)> =
            m.exceptions.iter().map(|(r, i)| (r.line_no, *i)).collect();
        assert_eq!(kept, vec![(2, Some(1)), (3, None), (5, Some(3))]);
        assert_eq!(
            (0..4).map(|i| m.day.rows(i)).collect::<Vec<_>>(),
            vec![1, 1, 0, 2]
        );
        assert!(!m.day.had_exception(0) && m.day.had_exception(3));
        assert_eq!(m.day.last_line(3), 5);
        assert_eq!(m.day.pay(1).status, "PENDING");
    }

    #[test]
    fn a_statement_that_mostly_does_not_match_is_refused_before_memory_runs_out() {
        let mut m = Matcher::new(DayPayments::default());
        for i in 0..MAX_EXCEPTIONS as i64 {
            m.feed(row(i + 2, &format!("T{i}"), None, 100, "CNY"));
        }
        assert!(m.within_bounds().is_ok());
        m.feed(row(MAX_EXCEPTIONS as i64 + 2, "T-last", None, 100, "CNY"));
        let e = m.within_bounds().unwrap_err().to_string();
        assert!(e.contains("do not match") && e.contains("200001"), "{e}");
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
}
