//! A month of demo history, so a newcomer's dashboard has a trend from the
//! first minute: for each of the last 30 business days, payments made and
//! paid on that day (through `engine::apply`, on an engine whose clock is
//! set to that day), and that day's sandbox statement reconciled the next
//! morning — with a few discrepancies of every common kind. Runs once per
//! database (skipped when older runs exist).

use crate::context::ManualClock;
use crate::domain::{Currency, Money, PaymentNo, PaymentStatus, ProviderTxnId};
use crate::engine::{Engine, Outcome, Source};
use crate::providers::sandbox::PaymentData;
use crate::recon::{Import, Input};
use crate::sandbox_server::SandboxServer;
use crate::store::payments;
use std::sync::Arc;

const DAYS: i64 = 30;

pub async fn history(engine: Engine, sandbox: SandboxServer) -> anyhow::Result<()> {
    let tz = engine.settings().timezone.clone();
    let today = jiff::Timestamp::now().to_zoned(tz.clone()).date();
    let first = today.checked_sub(jiff::Span::new().days(DAYS))?;
    let written = payments::count_written(&engine.db.pool, "demo", "demo history").await?;
    if written > 0 {
        return Ok(());
    }
    let yesterday = today.yesterday()?;
    let started = std::time::Instant::now();
    let clock = Arc::new(ManualClock::default());
    let past = Engine::new(
        engine.db.clone(),
        engine.providers.clone(),
        engine.metrics.clone(),
        clock.clone(),
        (*engine.settings()).clone(),
    );
    let Some(sandbox_provider) = engine.providers.get("sandbox").cloned() else {
        return Ok(());
    };
    let cny = Currency::parse("CNY")?;
    let mut day = first;
    let mut n = 0u64;
    while day < today {
        let start = day.to_zoned(tz.clone())?.timestamp().as_microsecond();
        let date = day.to_string();
        let count = 24 + (day.day() as u64 * 7) % 20;
        // Yesterday's statement is the sandbox's own, pulled by the daily
        // schedule once the workers start; older ones are imported here.
        let pulled = day == yesterday;
        let mut rows = Vec::new();
        let mut total = 0i64;
        for i in 0..count {
            n += 1;
            let no = format!("PAYHIST{}{i:03}", day.strftime("%Y%m%d"));
            let txn = format!("SBXHIST{}{i:03}", day.strftime("%Y%m%d"));
            let minor = 500 + ((n * 7919) % 50_000) as i64;
            let at = start + (8 * 3600 + i as i64 * 1500) * 1_000_000;
            clock.set(at);
            payments::insert(
                &past.db.pool,
                &payments::NewPayment {
                    payment_no: &no,
                    order_no: &format!("HIST-{}-{i:03}", day.strftime("%Y%m%d")),
                    attempt_no: 1,
                    provider: "sandbox",
                    amount_minor: minor,
                    currency: "CNY",
                    description: Some("demo history"),
                    created_by: "demo",
                    now: at,
                },
            )
            .await?;
            // One in twelve is never paid here although the provider was:
            // the statement finds it (STATUS_LAG, repaired or not).
            let lagging = i % 12 == 5;
            let failed = i % 17 == 3;
            if !lagging {
                clock.set(at + 90_000_000);
                let outcome = Outcome {
                    payment_no: PaymentNo::parse(&no)?,
                    provider: sandbox_provider.name().clone(),
                    provider_txn_id: Some(ProviderTxnId::parse(&txn)?),
                    target: if failed {
                        PaymentStatus::Failed
                    } else {
                        PaymentStatus::Succeeded
                    },
                    money: Money::new(minor, cny),
                    source: Source::Callback,
                    evidence: "demo history".into(),
                    trace_id: format!("hist{n}"),
                    paid_at: None,
                };
                past.apply(&outcome).await?;
            } else if i % 24 == 5 {
                // The provider will answer a status query: repaired.
                sandbox.put(PaymentData {
                    payment_no: no.clone(),
                    txn_id: txn.clone(),
                    status: "SUCCEEDED".into(),
                    amount: Money::new(minor, cny).major_string(),
                    currency: "CNY".into(),
                });
            }
            if failed {
                continue;
            }
            // The statement: every paid one, one amount off now and then,
            // one missing now and then (LOCAL_ONLY).
            if i == 7 && day.day() % 3 == 0 {
                continue;
            }
            let stated = if i == 11 && day.day() % 4 == 1 {
                minor + 100
            } else {
                minor
            };
            total += stated;
            let when = jiff::Timestamp::from_microsecond(at + 90_000_000)?;
            if pulled {
                sandbox.put_settled(
                    PaymentData {
                        payment_no: no.clone(),
                        txn_id: txn.clone(),
                        status: "SUCCEEDED".into(),
                        amount: Money::new(stated, cny).major_string(),
                        currency: "CNY".into(),
                    },
                    when,
                );
            }
            rows.push(format!(
                "payment,{txn},{no},,,SUCCEEDED,{},CNY,{when}",
                Money::new(stated, cny).major_string()
            ));
        }
        // One the provider has that Reckon never heard of, every few days.
        if day.day() % 5 == 0 || pulled {
            let amount = 1234;
            total += amount;
            let when = jiff::Timestamp::from_microsecond(start + 12 * 3600 * 1_000_000)?;
            if pulled {
                sandbox.put_settled(
                    PaymentData {
                        payment_no: format!("PAYHISTX{}", day.strftime("%Y%m%d")),
                        txn_id: format!("SBXHISTX{}", day.strftime("%Y%m%d")),
                        status: "SUCCEEDED".into(),
                        amount: Money::new(amount, cny).major_string(),
                        currency: "CNY".into(),
                    },
                    when,
                );
            }
            rows.push(format!(
                "payment,SBXHISTX{0},PAYHISTX{0},,,SUCCEEDED,{1},CNY,{when}",
                day.strftime("%Y%m%d"),
                Money::new(amount, cny).major_string()
            ));
        }
        let file = format!(
            "kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at\n{}\n#summary,rows={},total_minor={total}\n",
            rows.join("\n"),
            rows.len()
        );
        if pulled {
            day = day.tomorrow()?;
            continue;
        }
        // Reconciled the next morning.
        clock.set(start + 27 * 3600 * 1_000_000);
        let name = format!("sandbox-{date}.csv");
        crate::recon::import_statement(
            &past,
            Import {
                provider: "sandbox",
                business_date: &date,
                source: "import",
                file_name: Some(&name),
                input: Input::Bytes(file.into_bytes()),
                started_by: "demo",
                accept_bad_lines: 0,
                run_id: None,
                hash: None,
            },
        )
        .await
        .map_err(|e| anyhow::anyhow!("demo history {date}: {e}"))?;
        day = day.tomorrow()?;
    }
    tracing::info!(
        days = DAYS,
        payments = n,
        millis = started.elapsed().as_millis() as u64,
        "demo history written"
    );
    Ok(())
}
