//! What every room works with: the database, the providers, the metrics,
//! the clock and the settings, and the wake-ups of the workers' lanes. The
//! payment engine holds one ([`crate::engine::Engine`] adds intake, calls
//! and `apply`); a room that moves no payment takes only this.

mod clock;
mod live;

pub use clock::{Clock, ManualClock, SystemClock};
pub use live::Live;

use crate::config::Settings;
use crate::metrics::Metrics;
use crate::providers::Providers;
use crate::store::Db;
use std::sync::Arc;
use tokio::sync::Notify;

#[derive(Clone)]
pub struct Context {
    pub db: Db,
    pub providers: Providers,
    pub metrics: Metrics,
    pub clock: Arc<dyn Clock>,
    /// The settings in force (the host's, with the adopted version's
    /// console-editable values): see [`Context::settings`].
    pub live: Arc<Live>,
    /// Wakes the workers' lanes when new work was just written.
    pub(crate) wake: Arc<Wake>,
}

impl Context {
    pub fn new(
        db: Db,
        providers: Providers,
        metrics: Metrics,
        clock: Arc<dyn Clock>,
        settings: Settings,
    ) -> Context {
        Context {
            db,
            providers,
            metrics,
            clock,
            live: Arc::new(Live::new(settings)),
            wake: Arc::default(),
        }
    }

    /// The settings in force now. A piece of work (a run, a pass) takes
    /// them once at its start and keeps them to its end.
    pub fn settings(&self) -> Arc<Settings> {
        self.live.get().0
    }

    /// The version of the money-deciding settings in force, if one was
    /// recorded.
    pub fn config_version(&self) -> Option<i64> {
        self.live.get().1
    }

    pub fn now(&self) -> i64 {
        self.clock.now_micros()
    }

    /// Lets the workers know new work (an outbox message) was written.
    pub fn wake_workers(&self) {
        self.wake.notify_one();
    }
}

/// One wake-up per lane of the workers: new work wakes them all, and each
/// lane that is busy finds its wake-up waiting when it next looks.
#[derive(Default)]
pub(crate) struct Wake {
    pub(crate) calls: Notify,
    pub(crate) repairs: Notify,
    pub(crate) callbacks: Notify,
    pub(crate) outbox: Notify,
}

impl Wake {
    pub(crate) fn notify_one(&self) {
        for lane in [&self.calls, &self.repairs, &self.callbacks, &self.outbox] {
            lane.notify_one();
        }
    }
}
