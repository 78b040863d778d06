//! The provider-call lane: creates, status queries, closes and refunds, each
//! in a task of its own, at most `calls_per_account` at once per provider
//! account, each leased for its own call (renewed while it runs), so a
//! provider that hangs to its timeout holds up only its own calls (the
//! loop around them is `crate::workers`).

use super::{Applied, BATCH, Engine, Outcome, Source};
use crate::domain::{
    AlertKind, AlertSeverity, Currency, Money, PaymentNo, PaymentStatus, ProviderTxnId,
};
use crate::providers::{CallError, CreateRequest};
use crate::store;
use crate::store::tasks::{self, DueCall};
use crate::store::{alerts, payments};
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
    /// Each provider call due at `now` once (up to a batch), concurrently
    /// within each account's slots, one payment's calls in turn: one pass
    /// of the lane, for tests. Returns how many calls ran.
    pub async fn run_due_calls(&self, now: i64) -> store::Result<usize> {
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
    pub(crate) async fn call_lane(self) {
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
    ) -> store::Result<()> {
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

impl Engine {
    /// One create or status query (refunds are the refund module's), its
    /// clock read when it starts and again when the provider has answered.
    async fn run_task(&self, task: &tasks::TaskRow) -> store::Result<()> {
        if task.kind == tasks::REFUND || task.kind == tasks::REFUND_QUERY {
            return self.run_refund_task(task).await;
        }
        let now = self.now();
        let pool = &self.db.pool;
        let Some(p) = payments::get(pool, &task.payment_no).await? else {
            return tasks::close(pool, &task.task_id, "DONE", Some("payment missing"), now).await;
        };
        let status = p.status;
        let (Some(provider), Ok(payment_no), Ok(currency)) = (
            self.providers.get(&p.provider).cloned(),
            PaymentNo::parse(&p.payment_no),
            Currency::parse(&p.currency),
        ) else {
            return tasks::close(
                pool,
                &task.task_id,
                "DONE",
                Some("provider not configured"),
                now,
            )
            .await;
        };
        let local_money = Money::new(p.amount_minor, currency);
        let trace_id = format!("task-{}", task.task_id);
        let outcome = |target, money, txn, source| Outcome {
            payment_no: payment_no.clone(),
            provider: provider.name().clone(),
            provider_txn_id: txn,
            target,
            money,
            source,
            evidence: task.task_id.clone(),
            trace_id: trace_id.clone(),
            paid_at: None,
        };

        if task.kind == tasks::CREATE {
            if status != PaymentStatus::Created {
                return tasks::close(pool, &task.task_id, "DONE", None, now).await;
            }
            let first_delay = self
                .settings()
                .query_schedule
                .first()
                .copied()
                .unwrap_or(60_000_000);
            let Some(payments) = provider.payments() else {
                // The merchant's app creates it with the provider and the
                // provider reports by webhook; if none comes, ask.
                if provider.queries().is_some() {
                    tasks::schedule(pool, tasks::QUERY, &p.payment_no, now + first_delay, now)
                        .await?;
                }
                return tasks::close(
                    pool,
                    &task.task_id,
                    "DONE",
                    Some("the merchant creates it with the provider"),
                    now,
                )
                .await;
            };
            let req = CreateRequest {
                payment_no: &payment_no,
                money: local_money,
                description: p.description.as_deref(),
            };
            let answer = payments.create_payment(&req).await;
            let now = self.now();
            match answer {
                Ok(view) => {
                    let target = view.status.unwrap_or(PaymentStatus::Pending);
                    self.apply(&outcome(
                        target,
                        view.money,
                        view.provider_txn_id,
                        Source::Dispatch,
                    ))
                    .await?;
                }
                Err(CallError::Refused(reason)) => {
                    tracing::warn!(%reason, "provider refused the payment");
                    self.apply(&outcome(
                        PaymentStatus::Failed,
                        local_money,
                        None,
                        Source::Dispatch,
                    ))
                    .await?;
                    return tasks::close(pool, &task.task_id, "DONE", Some(&reason), now).await;
                }
                // Unknown: never a failure. Ask the provider later.
                Err(e) => {
                    tracing::warn!(error = %e, "create result unknown; a status query follows")
                }
            }
            tasks::schedule(pool, tasks::QUERY, &p.payment_no, now + first_delay, now).await?;
            return tasks::close(pool, &task.task_id, "DONE", None, now).await;
        }

        // A status query.
        if status.is_settled() {
            return tasks::close(pool, &task.task_id, "DONE", None, now).await;
        }
        let txn = p
            .provider_txn_id
            .as_deref()
            .and_then(|t| ProviderTxnId::parse(t).ok());
        let answer = match provider.queries() {
            Some(queries) => queries.query_payment(&payment_no, txn.as_ref()).await,
            None => Err(CallError::NotFound),
        };
        let now = self.now();
        let error = match answer {
            Ok(view) => {
                let target = view.status.unwrap_or(PaymentStatus::Pending);
                let applied = self
                    .apply(&outcome(
                        target,
                        view.money,
                        view.provider_txn_id,
                        Source::Query,
                    ))
                    .await?;
                if target.is_settled() || matches!(applied, Applied::Conflict { .. }) {
                    return tasks::close(pool, &task.task_id, "DONE", None, now).await;
                }
                None
            }
            Err(e) => Some(e.to_string()),
        };
        let next_index = usize::try_from(task.attempts + 1).unwrap_or(usize::MAX);
        match self.settings().query_schedule.get(next_index) {
            Some(delay) => {
                tasks::retry_at(pool, &task.task_id, now + delay, error.as_deref(), now).await
            }
            None => {
                payments::set_awaiting_recon(pool, &p.payment_no, now).await?;
                alerts::raise_alert(
                    pool,
                    &alerts::NewAlert {
                        dedupe_key: &format!("queries_exhausted:{}", p.payment_no),
                        kind: AlertKind::QueriesExhausted,
                        severity: AlertSeverity::High,
                        payment_no: Some(&p.payment_no),
                        message: &format!(
                            "payment {} still has no result after {} status queries; awaiting reconciliation",
                            p.payment_no,
                            task.attempts + 1
                        ),
                        trace_id: Some(&trace_id),
                        now,
                    },
                )
                .await?;
                tasks::close(pool, &task.task_id, "EXHAUSTED", error.as_deref(), now).await
            }
        }
    }
}
