//! Repairs: what reconciliation does about what it found, after the run.
//! A STATUS_LAG payment (paid at the provider, still CREATED or PENDING
//! here) is repaired by the worker — its stored verified callback
//! replayed, else the provider asked, through `engine::apply` — and its
//! ticket says what was done; a held payment is released by a person's
//! RELEASE_HOLD fix, approved by a second (`triage::fixes`).
//! Nothing here changes an amount or a currency.

use crate::domain::{PaymentNo, PaymentStatus, ProviderTxnId};
use crate::engine::{Applied, Engine, Source};
use crate::providers::{CallError, Notification, Provider};
use crate::store;
use crate::store::recon_reads::{self, StoredCallback};
use crate::store::tasks::{self, TaskRow};
use crate::store::{proposals, recon_runs, tickets};
use futures_util::{StreamExt, TryStreamExt};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Repairs leased per pass of the worker's lane.
pub const REPAIRS_PER_PASS: i64 = 50;
/// Longer than a batch of repairs, so a lease only lapses when its holder
/// died.
const LEASE_US: i64 = 30_000_000;
/// STATUS_LAG repairs tried at once (each its own `apply`; a provider's
/// status query may wait on the network).
const REPAIRS_AT_ONCE: usize = 8;

/// One pass of the worker's repair lane: leases a batch of due
/// reconciliation repairs and makes them. Returns how many it leased.
pub async fn run_repairs(engine: &Engine, now: i64) -> store::Result<usize> {
    let pool = &engine.db.pool;
    if !tasks::any_due(pool, tasks::RECON_REPAIR, now).await? {
        return Ok(0);
    }
    let due = tasks::lease_due(
        pool,
        tasks::RECON_REPAIR,
        now,
        now + LEASE_US,
        REPAIRS_PER_PASS,
        engine.db.skip_locked(),
    )
    .await?;
    let repairs: Vec<&TaskRow> = due.iter().collect();
    if let Err(e) = repair_tasks(engine, &repairs, engine.now()).await {
        tracing::error!(error = %e, tasks = repairs.len(), "reconciliation repairs failed; retried after their lease");
    }
    Ok(due.len())
}

/// STATUS_LAG repairs a run queued (`recon_repair` tasks), as the worker
/// leased them: each payment's stored verified callback replayed, else the
/// provider asked, through `apply`, a few at a time. What was done goes on
/// the payment's open STATUS_LAG ticket, which closes when the payment is
/// paid, and a repair counts in its run's figures; tickets, figures and
/// tasks in one commit.
async fn repair_tasks(engine: &Engine, due: &[&TaskRow], now: i64) -> store::Result<()> {
    if due.is_empty() {
        return Ok(());
    }
    // What each needs, read for all at once: the payment's provider and
    // bound transaction, and its stored verified callbacks, oldest first.
    let db = &engine.db;
    let nos: Vec<&str> = due.iter().map(|t| t.payment_no.as_str()).collect();
    let known: hashbrown::HashMap<String, (Option<String>, String)> =
        recon_reads::bound_payments(&db.pool, db.kind, &nos)
            .await?
            .into_iter()
            .map(|b| (b.payment_no, (b.provider_txn_id, b.provider)))
            .collect();
    let mut stored: hashbrown::HashMap<String, Vec<StoredCallback>> = hashbrown::HashMap::new();
    for c in recon_reads::verified_callbacks(&db.pool, db.kind, &nos).await? {
        if known
            .get(&c.payment_no)
            .is_none_or(|(_, p)| *p != c.provider)
        {
            continue;
        }
        stored.entry(c.payment_no.clone()).or_default().push(c);
    }
    let mut notes: hashbrown::HashMap<&str, &str> = hashbrown::HashMap::new();
    let mut tries = Vec::new();
    for task in due {
        let no = task.payment_no.as_str();
        match known.get(no) {
            None => {
                notes.insert(&task.task_id, "payment missing");
            }
            Some((txn, provider)) => match engine.providers.get(provider).cloned() {
                None => {
                    notes.insert(&task.task_id, "provider not configured");
                }
                Some(p) => tries.push(repair_one(
                    engine,
                    p,
                    no.to_owned(),
                    txn.clone(),
                    stored.remove(no).unwrap_or_default(),
                )),
            },
        }
    }
    let tried: Vec<(String, Vec<serde_json::Value>, bool)> = futures_util::stream::iter(tries)
        .buffered(REPAIRS_AT_ONCE)
        .try_collect::<Vec<_>>()
        .await?;
    // What was done, on the tickets and the runs' figures.
    let mut tx = db.begin_write().await?;
    // Per run: (repaired, no longer pending). A repair that did not fix the
    // payment leaves its ticket to a person: unknown now, not pending.
    let mut by_run: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    let mut fixed_nos = hashbrown::HashSet::new();
    for (payment_no, actions, fixed) in &tried {
        let entries = actions
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let touched =
            tickets::record_repair(&mut tx, payment_no, &entries, *fixed, engine.now()).await?;
        if *fixed {
            fixed_nos.insert(payment_no.as_str());
        }
        for (ticket, run) in &touched {
            if *fixed {
                proposals::supersede_pending(&mut tx, ticket, "auto-repaired").await?;
            }
            if let Some(run) = run {
                let counts = by_run.entry(run.clone()).or_default();
                counts.0 += i64::from(*fixed);
                counts.1 += 1;
            }
        }
    }
    for (run, (repaired, settled)) in by_run {
        // Guarded on the figures read: another worker's repairs to the
        // same run (PostgreSQL, two instances) are read again, not lost.
        loop {
            let Some(Some(figures)) = recon_runs::figures(&mut *tx, &run).await? else {
                break;
            };
            let mut f: serde_json::Value = serde_json::from_str(&figures).unwrap_or_default();
            f["repaired"] = (f["repaired"].as_i64().unwrap_or(0) + repaired).into();
            f["pending"] = (f["pending"].as_i64().unwrap_or(0) - settled).max(0).into();
            if recon_runs::swap_figures(&mut *tx, &run, &figures, &f.to_string()).await? {
                break;
            }
        }
    }
    for task in due {
        let note = notes.get(task.task_id.as_str()).copied().or(
            if fixed_nos.contains(task.payment_no.as_str()) {
                None
            } else {
                Some("not repaired: the ticket waits for a person")
            },
        );
        tasks::close(&mut *tx, &task.task_id, "DONE", note, now).await?;
    }
    tx.commit().await
}

/// One lagging payment (bound to `txn`, if at all): its stored
/// verified callback replayed, else the provider asked, through
/// `apply`. What was done, and whether the payment is now paid.
async fn repair_one(
    engine: &Engine,
    provider: Arc<dyn Provider>,
    payment_no: String,
    txn: Option<String>,
    stored: Vec<StoredCallback>,
) -> store::Result<(String, Vec<serde_json::Value>, bool)> {
    let Ok(no) = PaymentNo::parse(&payment_no) else {
        return Ok((payment_no, Vec::new(), false));
    };
    let mut actions = Vec::new();
    let mut applied = None;
    // 1. A stored verified callback that did not get through.
    for StoredCallback {
        id,
        headers_json,
        payload,
        trace_id,
        ..
    } in stored
    {
        let headers = crate::engine::headers_from_json(&headers_json);
        if let Ok(Notification::Payment(n)) = provider.parse(&headers, &payload)
            && n.status == PaymentStatus::Succeeded
        {
            let mut o = crate::engine::notice_outcome(&n, provider.name(), &id, &trace_id);
            o.source = Source::ReconRepair;
            let a = engine.apply(&o).await?;
            actions.push(json!({"action": "replayed stored callback", "callback": id, "result": a.class(), "at": engine.now()}));
            applied = Some(a);
            break;
        }
    }
    // 2. Else the provider, asked now.
    if applied.is_none() {
        let txn = txn.as_deref().and_then(|t| ProviderTxnId::parse(t).ok());
        let answer = match provider.queries() {
            Some(queries) => queries.query_payment(&no, txn.as_ref()).await,
            None => Err(CallError::NotFound),
        };
        match answer {
            Ok(view) => {
                let o = crate::engine::view_outcome(
                    view,
                    no.clone(),
                    provider.name(),
                    Source::ReconRepair,
                    "reconciliation: STATUS_LAG repair",
                );
                let a = engine.apply(&o).await?;
                actions.push(
                    json!({"action": "status query", "result": a.class(), "at": engine.now()}),
                );
                applied = Some(a);
            }
            Err(e) => actions.push(
                json!({"action": "status query", "result": e.to_string(), "at": engine.now()}),
            ),
        }
    }
    // Paid now — by this repair, or meanwhile by a status query or a
    // callback of another lane: either way the lag is gone.
    let fixed = matches!(
        applied,
        Some(
            Applied::Moved {
                to: PaymentStatus::Succeeded,
                ..
            } | Applied::Duplicate {
                status: PaymentStatus::Succeeded
                    | PaymentStatus::Refunding
                    | PaymentStatus::Refunded,
            }
        )
    );
    Ok((payment_no, actions, fixed))
}
