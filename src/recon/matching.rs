//! The matching core: the business day's local payments held compactly in
//! memory, and the statement's rows streamed against them.
//!
//! A payment row whose transaction id names one of the day's payments, with
//! the same payment_no (or none), amount and currency, paid on both sides,
//! is only counted: nothing about it is kept but a mark on its payment
//! (a second row for the same transaction makes both DUPLICATE: those
//! counts and lines are kept aside). Every other row is an *exception*,
//! kept whole and classified at the end, with what the database says about
//! the payments it names. Memory is the day's payments (24 bytes each, its
//! two identifiers, 12 in the hash table) plus the exceptions — it does not
//! grow with the rows that match.

mod index;

use crate::statement::{Chunk, RowKind, RowRef, StatementRow};
use index::{TxnIndex, prefetch};
use std::hash::BuildHasher;

/// The statuses in which the money has arrived.
pub(super) fn paid(status: &str) -> bool {
    matches!(status, "SUCCEEDED" | "REFUNDING" | "REFUNDED")
}

/// Payments by payment_no or transaction id.
pub(super) type ByKey = hashbrown::HashMap<String, Pay>;

/// A payment as classification sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
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
    /// When it was paid, for payments read from the database (whether it
    /// is a neighbouring day's, near the cut).
    pub paid: Option<i64>,
}

/// A payment of the day: 24 bytes, and its two identifiers in the arena.
/// How many statement rows named it is a mark (none, one, more); the
/// payments named more than once (DUPLICATE, rare) keep their count and
/// last line in [`DayPayments::many`].
struct Slot {
    amount: i64,
    /// payment_no, then the transaction id, in the arena.
    at: u32,
    no_len: u16,
    txn_len: u16,
    currency: u8,
    status: u8,
    flags: u8,
}

const HAS_TXN: u8 = 1;
/// A row found for it did not plainly match: it is among the exceptions.
const EXCEPTION: u8 = 2;
/// One statement row named it.
const SEEN: u8 = 4;
/// More than one did: see [`DayPayments::many`].
const MANY: u8 = 8;

/// A payment more than one statement row named: how many, and the line of
/// the last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Many {
    rows: u32,
    last_line: i64,
}

/// The few distinct currencies and statuses, numbered.
#[derive(Default)]
struct Names(Vec<String>);

impl Names {
    /// A name's number; a day with more than 256 distinct currencies or
    /// statuses is not a day of payments.
    fn id(&mut self, name: &str) -> Result<u8, String> {
        match self.0.iter().position(|n| n == name) {
            Some(i) => Ok(i as u8),
            None if self.0.len() > usize::from(u8::MAX) => Err(format!(
                "more than 256 distinct currencies or statuses (at {})",
                crate::domain::quote(name)
            )),
            None => {
                self.0.push(name.to_owned());
                Ok((self.0.len() - 1) as u8)
            }
        }
    }
    fn find(&self, name: &str) -> Option<u8> {
        self.0.iter().position(|n| n == name).map(|i| i as u8)
    }
    fn get(&self, id: u8) -> &str {
        &self.0[usize::from(id)]
    }
}

/// Storage grown in fixed blocks: growing never copies what is there (a
/// doubling `Vec` briefly holds both copies, at the run's peak).
const ARENA_BLOCK: usize = 1 << 20;
const SLOT_BLOCK: usize = 1 << 16;

/// The business day's local payments of one provider.
#[derive(Default)]
pub(super) struct DayPayments {
    /// Blocks of `ARENA_BLOCK` bytes; an identifier never spans two.
    arena: Vec<Vec<u8>>,
    slots: Vec<Vec<Slot>>,
    len: u32,
    /// The payments with a transaction id, by its hash, built by
    /// [`DayPayments::index`].
    by_txn: TxnIndex,
    hasher: hashbrown::DefaultHashBuilder,
    names: Names,
    /// The payments more than one row named.
    many: hashbrown::HashMap<u32, Many>,
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
            .is_none_or(|b| b.len() + ids.max(1) > ARENA_BLOCK)
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
        let (currency, status) = (self.names.id(currency)?, self.names.id(status)?);
        self.push_slot(Slot {
            at,
            no_len: no.len() as u16,
            txn_len: txn.map_or(0, |t| t.len() as u16),
            currency,
            status,
            flags: if txn.is_some() { HAS_TXN } else { 0 },
            amount,
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
        debug_assert!(self.many.is_empty() && other.many.is_empty());
        let names = other
            .names
            .0
            .iter()
            .map(|n| self.names.id(n))
            .collect::<Result<Vec<u8>, String>>()?;
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
        // A batch's places in the table are all asked of memory before the
        // first is filled: the table is 16 MiB at a million payments, and
        // each place a cache miss, which the CPU then waits for together.
        const BATCH: u32 = 32;
        let mut by_txn = TxnIndex::with_capacity(self.len as usize);
        let mut hashes = [0u64; BATCH as usize];
        let mut from = 0;
        while from < self.len {
            let to = from.saturating_add(BATCH).min(self.len);
            for (i, h) in (from..to).zip(hashes.iter_mut()) {
                if let Some(txn) = self.txn(i) {
                    *h = self.hash(txn);
                    by_txn.prefetch(*h);
                }
            }
            for (i, &h) in (from..to).zip(hashes.iter()) {
                let Some(txn) = self.txn(i) else { continue };
                // The same transaction on two payments: the first keeps it.
                if by_txn.find(h, |j| self.txn(j) == Some(txn)).is_none() {
                    by_txn.insert(h, i);
                }
            }
            from = to;
        }
        self.by_txn = by_txn;
    }

    /// Whether a statement row listed payment `no` of transaction `txn`
    /// (by the index: a payment without a transaction id, or whose id the
    /// day holds for another, no row named).
    pub fn listed(&self, no: &str, txn: Option<&str>) -> bool {
        txn.and_then(|t| self.find_txn(t))
            .is_some_and(|i| self.no(i) == no.as_bytes() && self.rows(i) > 0)
    }

    /// The index by transaction id, once no row is matched any more.
    pub fn drop_index(&mut self) {
        self.by_txn = TxnIndex::default();
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
        self.find_hashed(txn, self.hash(txn.as_bytes()))
    }

    fn find_hashed(&self, txn: &str, h: u64) -> Option<u32> {
        let txn = txn.as_bytes();
        self.by_txn.find(h, |i| self.txn(i) == Some(txn))
    }

    /// Asks the CPU to fetch what matching payment `i` will read: its
    /// slot and, once the slot is at hand, its identifiers.
    fn prefetch_slot(&self, i: u32) {
        prefetch(self.slot(i));
    }

    fn prefetch_ids(&self, i: u32) {
        let at = self.slot(i).at as usize;
        // (Two empty identifiers may sit just past their block's end.)
        if let Some(b) = self
            .arena
            .get(at / ARENA_BLOCK)
            .and_then(|block| block.get(at % ARENA_BLOCK))
        {
            prefetch(b);
        }
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
            paid: None,
        }
    }

    pub fn rows(&self, i: u32) -> u32 {
        let flags = self.slot(i).flags;
        if flags & MANY != 0 {
            self.many.get(&i).map_or(0, |m| m.rows)
        } else {
            u32::from(flags & SEEN != 0)
        }
    }

    /// The line of the last row that named payment `i`, if more than one
    /// did (only a DUPLICATE's ticket needs it).
    pub fn last_line(&self, i: u32) -> Option<i64> {
        self.many.get(&i).map(|m| m.last_line)
    }

    /// One more statement row (at `line`) named payment `i`.
    fn named_by(&mut self, i: u32, line: i64) {
        let slot = self.slot_mut(i);
        if slot.flags & (SEEN | MANY) == 0 {
            slot.flags |= SEEN;
            return;
        }
        slot.flags |= MANY;
        let m = self.many.entry(i).or_insert(Many {
            rows: 1,
            last_line: 0,
        });
        m.rows = m.rows.saturating_add(1);
        m.last_line = line;
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

    /// The amount and currency of payment `i`, borrowed.
    pub fn money_of(&self, i: u32) -> (i64, &str) {
        let s = self.slot(i);
        (s.amount, self.names.get(s.currency))
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
    /// What the database said about the payments the first exceptions
    /// name, asked while the statement was still being read.
    pub early: Early,
    /// The day's gross, refunds, fees and net, and the fees checked, as
    /// every row goes by.
    pub fees: super::fees::DayFees,
    succeeded: Option<u8>,
    /// The fewest exceptions refused ([`EXCEPTIONS_FLOOR`]; tests lower it).
    floor: usize,
}

/// The payments the first `looked_up` exceptions name: by the transaction
/// id of those not among the day's, by payment_no.
#[derive(Default)]
pub(super) struct Early {
    pub looked_up: usize,
    pub by_txn: ByKey,
    pub by_no: ByKey,
}

/// Rows that do not plainly match, at most: one in [`EXCEPTIONS_SHARE`]
/// of the day's rows (its payments, or the statement's rows read so far if
/// more), and never fewer than [`EXCEPTIONS_FLOOR`]. A statement beyond
/// this is refused — almost surely another day's or another provider's
/// file (nearly all of its rows would be exceptions), whose tickets would
/// bury the triage queue. A real day, even a bad one, stays at a few
/// percent; each exception is held until the end (some 200 bytes, and a
/// ticket's worth more when classified: at one in 20 that is under the
/// day's own 60 bytes a payment).
pub(super) const EXCEPTIONS_FLOOR: usize = 200_000;
pub(super) const EXCEPTIONS_SHARE: usize = 20;

/// The most exceptions a day of `rows` rows may have (see
/// [`EXCEPTIONS_FLOOR`]), never fewer than `floor`.
pub(super) fn exception_limit(floor: usize, rows: usize) -> usize {
    floor.max(rows / EXCEPTIONS_SHARE)
}

impl Matcher {
    /// Refuses the statement once more rows fail to match plainly than
    /// [`exception_limit`] allows.
    pub fn within_bounds(&self) -> Result<(), super::run::ReconError> {
        let n = self.exceptions.len() + self.refunds.len();
        let read = self.payment_rows as usize + self.refunds.len();
        let limit = exception_limit(self.floor, self.day.len().max(read));
        if n > limit {
            return Err(super::run::ReconError::Refused(format!(
                "more than {limit} of the statement's rows (1 in {EXCEPTIONS_SHARE} of the day's, at least \
                 {floor}) do not match a payment of this day plainly ({n} by row {read}): is it this \
                 provider's statement of this day? No ticket was written",
                floor = self.floor,
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
            early: Early::default(),
            fees: Default::default(),
            floor: EXCEPTIONS_FLOOR,
        }
    }

    /// A chunk of rows, in order, as [`Matcher::feed`] would take them one
    /// by one, but with what each row's match reads fetched a few rows
    /// ahead: found one at a time, the hash table's entry, the payment and
    /// its identifiers were three cache misses in a row, and matching spent
    /// most of its time waiting on memory.
    /// The chunk is left empty, its room kept.
    pub fn feed_chunk(&mut self, rows: &mut Chunk) {
        const AHEAD: usize = 4;
        let hashes: Vec<Option<u64>> = rows
            .iter()
            .map(|r| match (r.kind, r.provider_txn_id) {
                (RowKind::Payment, Some(t)) => Some(self.day.hash(t.as_bytes())),
                _ => None,
            })
            .collect();
        // Row k's table entry is fetched 3 * AHEAD rows before it is
        // matched, its payment's slot 2 * AHEAD before, its identifiers
        // AHEAD before.
        let n = rows.len();
        let day = &self.day;
        let mut guesses: Vec<Option<u32>> = vec![None; n];
        let mut found: Vec<Option<u32>> = vec![None; n];
        for k in 0..n + 3 * AHEAD {
            if let Some(Some(h)) = hashes.get(k) {
                day.by_txn.prefetch(*h);
            }
            if let Some(j) = k.checked_sub(AHEAD)
                && let Some(Some(h)) = hashes.get(j)
                && let Some(i) = day.by_txn.first_guess(*h)
            {
                guesses[j] = Some(i);
                day.prefetch_slot(i);
            }
            if let Some(j) = k.checked_sub(2 * AHEAD)
                && let Some(Some(i)) = guesses.get(j)
            {
                day.prefetch_ids(*i);
            }
            if let Some(j) = k.checked_sub(3 * AHEAD)
                && let Some(Some(h)) = hashes.get(j)
            {
                found[j] = rows
                    .get(j)
                    .provider_txn_id
                    .and_then(|t| day.find_hashed(t, *h));
            }
        }
        for (row, found) in rows.iter().zip(found) {
            self.feed_found(row, found);
        }
        rows.clear();
    }

    pub fn feed(&mut self, row: RowRef<'_>) {
        let found = match row.kind {
            RowKind::Payment => row.provider_txn_id.and_then(|t| self.day.find_txn(t)),
            RowKind::Refund => None,
        };
        self.feed_found(row, found);
    }

    /// A row, and the day's payment its transaction id names (found). Only
    /// the rows kept get strings of their own.
    fn feed_found(&mut self, row: RowRef<'_>, found: Option<u32>) {
        self.fees.add(&row);
        if row.kind == RowKind::Refund {
            self.refunds.push(row.owned());
            return;
        }
        self.payment_rows += 1;
        let Some(i) = found else {
            self.exceptions.push((row.owned(), None));
            return;
        };
        let day = &self.day;
        let slot = day.slot(i);
        let plain = row.payment_no.is_none_or(|n| n.as_bytes() == day.no(i))
            && row.money.minor == slot.amount
            && row.money.currency.code() == day.names.get(slot.currency)
            && row.status == "SUCCEEDED"
            && (Some(slot.status) == self.succeeded || paid(day.names.get(slot.status)));
        self.day.named_by(i, row.line_no);
        if !plain {
            self.day.slot_mut(i).flags |= EXCEPTION;
            self.exceptions.push((row.owned(), Some(i)));
        }
    }
}

#[cfg(test)]
mod tests;
