//! Rows handed from the reader to matching in batches, their text packed
//! in one buffer.

use super::row::{RowKind, RowRef};
use crate::domain::Money;

/// Rows as a reader hands them over: their text back to back in one
/// buffer, filled, emptied and filled again with no allocation per row
/// (three strings a row, made on the reader's thread and freed on the
/// matcher's, were a large share of both threads' time).
#[derive(Debug, Default)]
pub struct Chunk {
    text: String,
    rows: Vec<Packed>,
}

/// A row of a [`Chunk`]: its strings as places in the chunk's text.
#[derive(Debug)]
struct Packed {
    line_no: i64,
    kind: RowKind,
    money: Money,
    occurred_at: Option<i64>,
    fee: Option<crate::domain::Fee>,
    /// provider_txn_id, payment_no, refund_no, provider_refund_id, status,
    /// reference: (start, end), `ABSENT` for none.
    spans: [(usize, usize); 6],
}

const ABSENT: (usize, usize) = (usize::MAX, 0);

impl Chunk {
    pub fn with_capacity(rows: usize) -> Chunk {
        Chunk {
            text: String::with_capacity(rows * 48),
            rows: Vec::with_capacity(rows),
        }
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Empty again, its room kept.
    pub fn clear(&mut self) {
        self.text.clear();
        self.rows.clear();
    }

    pub fn push(&mut self, row: RowRef<'_>) {
        let text = &mut self.text;
        let mut put = |s: Option<&str>| match s {
            Some(s) => {
                let start = text.len();
                text.push_str(s);
                (start, text.len())
            }
            None => ABSENT,
        };
        let spans = [
            put(row.provider_txn_id),
            put(row.payment_no),
            put(row.refund_no),
            put(row.provider_refund_id),
            put(Some(row.status)),
            put(row.reference),
        ];
        self.rows.push(Packed {
            line_no: row.line_no,
            kind: row.kind,
            money: row.money,
            occurred_at: row.occurred_at,
            fee: row.fee,
            spans,
        });
    }

    /// The first of the last row's ids and status longer than `max`
    /// bytes, by name: what the reader refuses a row for. A few
    /// comparisons a row, nothing copied.
    pub fn last_too_long(&self, max: usize) -> Option<(&'static str, &str)> {
        const NAMES: [&str; 6] = [
            "provider_txn_id",
            "payment_no",
            "refund_no",
            "provider_refund_id",
            "status",
            "reference",
        ];
        let p = self.rows.last()?;
        let at = p
            .spans
            .iter()
            .position(|&(start, end)| start != ABSENT.0 && end - start > max)?;
        let (start, end) = p.spans[at];
        Some((NAMES[at], &self.text[start..end]))
    }

    /// The last row taken out again (a line refused after its row was
    /// made).
    pub fn pop(&mut self) {
        if let Some(p) = self.rows.pop() {
            let start = p
                .spans
                .iter()
                .find(|&&(start, _)| start != ABSENT.0)
                .map_or(self.text.len(), |&(start, _)| start);
            self.text.truncate(start);
        }
    }

    /// Row `i` (panics past the end, as indexing does).
    pub fn get(&self, i: usize) -> RowRef<'_> {
        let p = &self.rows[i];
        let at = |k: usize| match p.spans[k] {
            ABSENT => None,
            (start, end) => Some(&self.text[start..end]),
        };
        RowRef {
            line_no: p.line_no,
            kind: p.kind,
            provider_txn_id: at(0),
            payment_no: at(1),
            refund_no: at(2),
            provider_refund_id: at(3),
            money: p.money,
            status: at(4).unwrap_or_default(),
            occurred_at: p.occurred_at,
            fee: p.fee,
            reference: at(5),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = RowRef<'_>> {
        (0..self.len()).map(|i| self.get(i))
    }
}
