//! The payment engine: [`apply`] (the one rule), callback intake, the
//! passes of the worker lanes that are its own (callback retries, provider
//! calls; the loop is `crate::workers`), and the merchant operations
//! (create, close, refund). It knows nothing of HTTP routing,
//! Leptos or reconciliation; the web layer hands it bytes and headers.

mod amount;
mod apply;
mod calls;
pub mod disputes;
mod ingest;
mod intake;
mod merchant;
mod redelivery;
mod refund_outcome;
mod refund_requests;
mod refund_tickets;
mod refunds;
mod refused;
mod replay;
mod retries;

pub use amount::{AmountChange, change_amount_in};
pub use apply::{Applied, Outcome, Source, apply, apply_in};
pub use intake::{FETCHED_HEADER, Fetched, Refusal, notice_outcome, view_outcome};
pub use merchant::{CreatePayment, MerchantError, PaymentDetail, Refused, RefusedKind};
pub use refund_requests::{CreateRefund, RefundBalance, RefundDetail};
pub use refunds::{RefundApplied, RefundOutcome, apply_refund_in, refund_late_success_in};
pub use refused::WEBHOOKS_REFUSED_SPIKE;
pub use replay::{ActionError, ActionOutcome, describe};
pub use retries::headers_from_json;

use crate::config::{Settings, Sink};
use crate::context::{Clock, Context};
use crate::metrics::Metrics;
use crate::providers::Providers;
use crate::store;
use crate::store::{Db, DbKind};
use std::sync::Arc;

/// Rows a pass of one of the engine's worker lanes takes at most
/// (callback retries, outbox deliveries, provider calls).
pub const BATCH: i64 = 50;

/// A callback retry's or an outbox delivery's lease: longer than a batch
/// of them, so a lease only lapses when its holder died.
pub(crate) const LEASE_US: i64 = 30_000_000;

/// 2^n minutes after the n-th failure, at most 64 minutes.
pub(crate) fn retry_delay(failures: i64) -> i64 {
    let minutes = 1i64 << failures.clamp(0, 6);
    minutes * 60_000_000
}

/// The payment engine: its context and what only it has — the outbox
/// routes `apply` writes events to, the provider-call slots, the intake's
/// group-commit writer and the refusal counters. It reads its context as
/// its own fields (`engine.db`), and a room that moves no payment is handed
/// just the context (`&engine` where a `&Context` is asked for).
#[derive(Clone)]
pub struct Engine {
    ctx: Context,
    /// Each sink's name and the event types it wants.
    sink_names: Arc<Vec<crate::store::sinks::Route>>,
    /// Free call slots per provider account.
    slots: Arc<calls::Slots>,
    /// The group-commit writer of callback intake.
    ingest: tokio::sync::mpsc::Sender<ingest::Job>,
    /// Refusals stored in the current minute: (minute, count).
    refused_gate: Arc<std::sync::Mutex<(i64, u32)>>,
    /// Verification failures counted here before they are written.
    refused_tally: Arc<refused::Tallies>,
}

impl Engine {
    /// Builds the engine and starts its intake writer (inside a runtime).
    pub fn new(
        db: Db,
        providers: Providers,
        metrics: Metrics,
        clock: Arc<dyn Clock>,
        settings: Settings,
    ) -> Engine {
        let (ingest, rx) = ingest::channel();
        let rx = Arc::new(tokio::sync::Mutex::new(rx));
        let engine = Engine {
            sink_names: Arc::new(settings.sinks.iter().map(Sink::route).collect()),
            slots: Arc::new(calls::Slots::new(settings.calls_per_account)),
            ctx: Context::new(db, providers, metrics, clock, settings),
            ingest,
            refused_gate: Arc::default(),
            refused_tally: Arc::default(),
        };
        // The writer's own copy holds no sender of its queue, so the writer
        // stops once every other copy of the engine is gone.
        let writer = Engine {
            ingest: ingest::channel().0,
            ..engine.clone()
        };
        let answers = tokio::runtime::Handle::current();
        match writer.db.kind {
            // On SQLite the writer is the bottleneck: on a thread of its
            // own, its statements on its own connection (and its waits on
            // sqlx's worker thread for the rest) queue behind no HTTP task.
            DbKind::Sqlite => {
                let spawned = std::thread::Builder::new()
                    .name("reckon-intake".into())
                    .spawn(move || {
                        match tokio::runtime::Builder::new_current_thread()
                            .enable_all()
                            .build()
                        {
                            Ok(rt) => rt.block_on(writer.write_batches(rx, answers)),
                            Err(e) => tracing::error!(error = %e, "intake writer could not start"),
                        }
                    });
                if let Err(e) = spawned {
                    tracing::error!(error = %e, "intake writer thread could not start");
                }
            }
            // PostgreSQL commits batches side by side: a few writers, each
            // on its own connection of the pool.
            DbKind::Postgres => {
                for _ in 0..ingest::POSTGRES_WRITERS {
                    tokio::spawn(writer.clone().write_batches(rx.clone(), answers.clone()));
                }
            }
        }
        engine
    }

    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The outbox sinks a new message is delivered to, each with the
    /// event types it wants.
    pub fn sink_names(&self) -> Arc<Vec<crate::store::sinks::Route>> {
        self.sink_names.clone()
    }

    /// `apply` with this engine's sinks and clock, counted by class.
    pub async fn apply(&self, outcome: &Outcome) -> store::Result<Applied> {
        let applied = apply::apply(&self.db, &self.sink_names, outcome, self.now()).await?;
        self.metrics.applied(applied.class());
        if matches!(applied, Applied::Moved { .. }) {
            self.wake.notify_one();
        }
        Ok(applied)
    }
}

impl std::ops::Deref for Engine {
    type Target = Context;

    fn deref(&self) -> &Context {
        &self.ctx
    }
}

#[cfg(test)]
mod tests {
    use super::retry_delay;

    #[test]
    fn retries_back_off_to_an_hour() {
        let minutes: Vec<i64> = (1..=10).map(|n| retry_delay(n) / 60_000_000).collect();
        assert_eq!(minutes, [2, 4, 8, 16, 32, 64, 64, 64, 64, 64]);
    }
}
