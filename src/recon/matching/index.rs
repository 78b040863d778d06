//! The day's payments by transaction id: an open-addressing table whose
//! places are known from a hash alone, so matching can fetch them ahead.

/// Payment indexes by transaction id hash: open addressing, linear
/// probing, at most two thirds full. Each entry holds the hash's top 32
/// bits and the payment's index + 1 (0: empty), so a probe reads one
/// 8-byte entry and touches a payment only when those bits agree — and an
/// entry's place is known from the hash alone (its low 32 bits scaled to
/// the table), so it can be fetched ahead (hashbrown's tables offer no
/// way to). Not sized to a power of two: at ten million payments that
/// rounding alone could double the table.
#[derive(Default)]
pub(super) struct TxnIndex {
    entries: Vec<u64>,
}

impl TxnIndex {
    const TAG: u64 = !0xFFFF_FFFF;

    pub(super) fn with_capacity(n: usize) -> TxnIndex {
        // Two thirds full at most: a miss then probes about three entries
        // (linear probing), most of them in the same cache line.
        let size = (n.max(4) * 3).div_ceil(2);
        TxnIndex {
            entries: vec![0; size],
        }
    }

    /// The first place for hash `h`: its low 32 bits scaled to the size
    /// (the tag is the top 32, so the two stay independent).
    fn home(&self, h: u64) -> usize {
        (((h & 0xFFFF_FFFF) * self.entries.len() as u64) >> 32) as usize
    }

    fn next(&self, at: usize) -> usize {
        if at + 1 == self.entries.len() {
            0
        } else {
            at + 1
        }
    }

    /// The payment whose transaction id has hash `h` and satisfies `is`.
    #[inline]
    pub(super) fn find(&self, h: u64, mut is: impl FnMut(u32) -> bool) -> Option<u32> {
        if self.entries.is_empty() {
            return None;
        }
        let mut at = self.home(h);
        loop {
            let e = self.entries[at];
            if e == 0 {
                return None;
            }
            let i = (e as u32) - 1;
            if e & Self::TAG == h & Self::TAG && is(i) {
                return Some(i);
            }
            at = self.next(at);
        }
    }

    /// Adds payment `i` (not yet in) under hash `h`.
    pub(super) fn insert(&mut self, h: u64, i: u32) {
        let mut at = self.home(h);
        while self.entries[at] != 0 {
            at = self.next(at);
        }
        self.entries[at] = (h & Self::TAG) | (u64::from(i) + 1);
    }

    /// The payment in `h`'s first place, if its bits agree (a guess, to
    /// fetch ahead: [`TxnIndex::find`] decides).
    #[inline]
    pub(super) fn first_guess(&self, h: u64) -> Option<u32> {
        let e = *self.entries.get(self.home(h))?;
        (e != 0 && e & Self::TAG == h & Self::TAG).then(|| (e as u32) - 1)
    }

    #[inline]
    pub(super) fn prefetch(&self, h: u64) {
        if let Some(e) = self.entries.get(self.home(h)) {
            prefetch(e);
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.entries.iter().filter(|e| **e != 0).count()
    }
}

/// A hint to the CPU: the cache line at `p` will be read soon.
#[inline(always)]
pub(super) fn prefetch<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch only hints; it reads nothing and cannot fault.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>((p as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
