//! The provider-call lane: creates, status queries, closes and refunds, each
//! in a task of its own, at most `calls_per_account` at once per provider
//! account, each leased for its own call (renewed while it runs), so a
//! provider that hangs to its timeout holds up only its own calls. The
//! reconciliation repairs keep their batch, in a lane of their own.

use super::Engine;
use super::workers::BATCH;
use crate::store::tasks::{self, DueCall};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::task::{Id, JoinSet};

/// A call's lease. It is renewed every [`RENEW_EVERY`] while the call runs,
/// so it lapses only when its holder died, whatever the provider's timeout.
const LEASE_US: i64 = 30_000_000;
const RENEW_EVERY: Duration = Duration::from_secs(10);

/// Free call slots per provider account, made on first use.
pub(super) struct Slots {
    per_account: usize,
    accounts: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl Slots {
    pub(super) fn new(per_account: usize) -> Slots {
        Slots {
            per_account: per_account.max(1),
            accounts: Mutex::default(),
        }
    }

    fn of(&self, account: &str) -> Arc<Semaphore> {
        let mut accounts = self.accounts.lock().unwrap_or_else(|e| e.into_inner());
        accounts
            .entry(account.to_owned())
            .or_insert_with(|| Arc::new(Semaphore::new(self.per_account)))
            .clone()
    }

    /// Accounts whose slots are all taken.
    fn full(&self) -> Vec<String> {
        let accounts = self.accounts.lock().unwrap_or_else(|e| e.into_inner());
        accounts
            .iter()
            .filter(|(_, s)| s.available_permits() == 0)
            .map(|(name, _)| name.clone())
            .collect()
    }
}

/// The account a call goes to; calls of a vanished payment share one.
fn account(call: &DueCall) -> &str {
    call.provider.as_deref().unwrap_or("")
}

/// Stops a lease's renewal when the call ends, however it ends.
struct StopOnDrop(tokio::task::JoinHandle<()>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Engine {
    /// One pass over the work due at `now`, for tests and the command
    /// line: the reconciliation repairs, then each due provider call once
    /// (up to a batch), concurrently within each account's slots, one
    /// payment's calls in turn. Returns how many tasks ran.
    pub async fn run_provider_tasks(&self, now: i64) -> sqlx::Result<usize> {
        // Repairs first, as before the lanes: a repair finds its payment
        // as the run left it, and its ticket says what the repair did.
        let repairs = self.run_repairs(now).await?;
        Ok(repairs + self.run_due_calls(now).await?)
    }

    /// Leases and runs a batch of due reconciliation repairs.
    pub(super) async fn run_repairs(&self, now: i64) -> sqlx::Result<usize> {
        crate::recon::run_repairs(self, now).await
    }

    async fn run_due_calls(&self, now: i64) -> sqlx::Result<usize> {
        let due = tasks::due_calls(&self.db.pool, now, BATCH, &[]).await?;
        let mut order: Vec<Vec<DueCall>> = Vec::new();
        let mut of_payment: HashMap<String, usize> = HashMap::new();
        for call in due {
            let i = *of_payment
                .entry(call.payment_no.clone())
                .or_insert_with(|| {
                    order.push(Vec::new());
                    order.len() - 1
                });
            order[i].push(call);
        }
        let mut running = JoinSet::new();
        for calls in order {
            let engine = self.clone();
            running.spawn(async move {
                let mut ran = 0;
                for call in calls {
                    let slot = engine.slots.of(account(&call)).acquire_owned().await;
                    if engine.lease_and_call(&call, now).await {
                        ran += 1;
                    }
                    drop(slot);
                }
                ran
            });
        }
        let mut ran = 0;
        while let Some(done) = running.join_next().await {
            match done {
                Ok(n) => ran += n,
                Err(e) => tracing::error!(error = %e, "provider call task ended abnormally"),
            }
        }
        Ok(ran)
    }

    /// The provider-call lane, until the process stops: every due call
    /// that has a free slot on its account starts in a task of its own;
    /// it looks again when a call ends, new work is written, or every 500 ms.
    pub(super) async fn call_lane(self) {
        let mut running: JoinSet<()> = JoinSet::new();
        // Payments with a call in flight: one call per payment at a time.
        let mut busy: HashMap<Id, String> = HashMap::new();
        loop {
            if let Err(e) = self.start_calls(&mut running, &mut busy).await {
                tracing::error!(error = %e, "provider call lane");
            }
            tokio::select! {
                Some(done) = running.join_next_with_id() => {
                    let id = match done {
                        Ok((id, ())) => id,
                        Err(e) => {
                            tracing::error!(error = %e, "provider call task ended abnormally");
                            e.id()
                        }
                    };
                    busy.remove(&id);
                }
                _ = self.wake.calls.notified() => {}
                _ = tokio::time::sleep(Duration::from_millis(500)) => {}
            }
        }
    }

    async fn start_calls(
        &self,
        running: &mut JoinSet<()>,
        busy: &mut HashMap<Id, String>,
    ) -> sqlx::Result<()> {
        let full = self.slots.full();
        let skip: Vec<&str> = full.iter().map(String::as_str).collect();
        let now = self.now();
        let due = tasks::due_calls(&self.db.pool, now, BATCH, &skip).await?;
        let mut in_flight: HashSet<String> = busy.values().cloned().collect();
        for call in due {
            if in_flight.contains(&call.payment_no) {
                continue;
            }
            let Ok(slot) = self.slots.of(account(&call)).try_acquire_owned() else {
                continue;
            };
            in_flight.insert(call.payment_no.clone());
            let engine = self.clone();
            let payment_no = call.payment_no.clone();
            let handle = running.spawn(async move {
                let _slot = slot;
                engine.lease_and_call(&call, engine.now()).await;
            });
            busy.insert(handle.id(), payment_no);
        }
        Ok(())
    }

    /// Leases one call (still due at `due_at`) and makes it, renewing the
    /// lease while it runs. False when another worker or instance took it
    /// first, or the lease could not be written.
    async fn lease_and_call(&self, call: &DueCall, due_at: i64) -> bool {
        let pool = &self.db.pool;
        let leased = tasks::lease_call(
            pool,
            &call.task_id,
            due_at,
            self.now() + LEASE_US,
            self.db.skip_locked(),
        )
        .await;
        let task = match leased {
            Ok(Some(task)) => task,
            Ok(None) => return false,
            Err(e) => {
                tracing::error!(error = %e, task = %call.task_id, "provider task not leased");
                return false;
            }
        };
        // Its own task, not a branch beside the call: the call may hold
        // SQLite's write lock in `apply` while a renewal waits for it.
        let engine = self.clone();
        let task_id = task.task_id.clone();
        let _renewal = StopOnDrop(tokio::spawn(async move {
            loop {
                tokio::time::sleep(RENEW_EVERY).await;
                let until = engine.now() + LEASE_US;
                if let Err(e) = tasks::extend_lease(&engine.db.pool, &task_id, until).await {
                    tracing::warn!(error = %e, task = %task_id, "provider task lease not renewed");
                }
            }
        }));
        if let Err(e) = self.run_task(&task).await {
            tracing::error!(error = %e, task = %task.task_id, "provider task failed; retried after its lease");
        }
        true
    }
}
