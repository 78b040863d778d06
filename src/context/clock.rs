//! Time for the engine: the system clock, or a hand-moved one in tests so
//! retry schedules run without sleeping.

use std::sync::atomic::{AtomicI64, Ordering};

pub trait Clock: Send + Sync + 'static {
    /// Microseconds since the epoch, UTC.
    fn now_micros(&self) -> i64;
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn now_micros(&self) -> i64 {
        crate::store::now_micros()
    }
}

/// Starts at the real time; moves only when told.
pub struct ManualClock(AtomicI64);

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock(AtomicI64::new(crate::store::now_micros()))
    }
}

impl ManualClock {
    /// Sets the time (microseconds since the epoch, UTC).
    pub fn set(&self, micros: i64) {
        self.0.store(micros, Ordering::SeqCst);
    }

    pub fn advance_secs(&self, secs: i64) {
        self.0.fetch_add(secs * 1_000_000, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_micros(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}
