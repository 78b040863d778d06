//! The demo's live traffic: payments and refunds every few seconds through
//! the in-process sandbox, and a reconciled day with fresh disagreements
//! every ten minutes.

use crate::engine::Engine;
use crate::sandbox_server::SandboxServer;
use std::time::Duration;

/// The demo's steady trickle of payments through the in-process sandbox,
/// and now and then a refund of one paid a few seconds before: every fifth
/// payment is partly refunded, every tenth in full.
pub(super) async fn payments(engine: Engine) {
    let currencies = ["CNY", "CNY", "USD", "EUR"];
    let run = uuid::Uuid::new_v4().simple().to_string();
    let mut recent: std::collections::VecDeque<(String, i64)> = Default::default();
    for n in 1u64.. {
        let amount_minor = 100 + (n as i64 * 7919) % 99_900;
        let req = crate::engine::CreatePayment {
            order_no: format!("DEMO-{}-{n:05}", &run[..6]),
            provider: "sandbox".into(),
            amount_minor,
            currency: currencies[(n % 4) as usize].into(),
            description: Some("demo order".into()),
        };
        match engine
            .create_payment("demo", &format!("demo-{run}-{n}"), &req)
            .await
        {
            Ok(payment) => recent.push_back((payment.payment_no, amount_minor)),
            Err(e) => tracing::warn!(error = %e, "demo payment not created"),
        }
        if n % 5 != 0 {
            if recent.len() > 3 {
                recent.pop_front();
            }
        } else {
            // The oldest recent payment that takes a refund: one held by
            // reconciliation (the demo's own disagreements hold some) or
            // not yet paid is passed over for the next.
            while recent.len() > 1
                && let Some((payment_no, amount)) = recent.pop_front()
            {
                let refund = crate::engine::CreateRefund {
                    amount_minor: if n % 10 == 0 { amount } else { amount / 2 },
                    currency: None,
                    reason: "demo: customer returned the goods".into(),
                };
                match engine
                    .request_refund(
                        "demo",
                        &format!("demo-refund-{run}-{payment_no}"),
                        &payment_no,
                        &refund,
                    )
                    .await
                {
                    Ok(_) => break,
                    Err(crate::engine::MerchantError::Refused(r)) => {
                        tracing::info!(refusal = %r.error, "demo refund not taken")
                    }
                    Err(e) => tracing::warn!(error = %e, "demo refund not requested"),
                }
            }
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
}

/// The demo's reconciled day: a minute in, the sandbox is made to disagree
/// with Reckon in three ways a finance team meets — a payment only the
/// provider has, one the provider now calls failed, one with another
/// amount — and today's statement is pulled and reconciled; again every
/// ten minutes with fresh cases, so the console always has tickets to triage.
pub(super) async fn disagreements(engine: Engine, sandbox: SandboxServer, after: Duration) {
    use crate::providers::sandbox::PaymentData;
    tokio::time::sleep(after).await;
    for round in 1u32.. {
        // Two paid payments to make disagree (a minute at most to get them).
        let mut paid: Vec<(String, i64, String, Option<String>)> = Vec::new();
        for _ in 0..30 {
            paid = crate::store::payments::latest_paid(&engine.db.pool, "sandbox", 2)
                .await
                .unwrap_or_default();
            if paid.len() == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        let tag = uuid::Uuid::new_v4().simple().to_string()[..8].to_ascii_uppercase();
        sandbox.put(PaymentData {
            payment_no: format!("PAYFOREIGN{tag}"),
            txn_id: format!("SBXFOREIGN{tag}"),
            status: "SUCCEEDED".into(),
            amount: "66.60".into(),
            currency: "CNY".into(),
        });
        for (i, (payment_no, minor, currency, txn)) in paid.into_iter().enumerate() {
            let Ok(cur) = crate::domain::Currency::parse(&currency) else {
                continue;
            };
            let (status, minor) = if i == 0 {
                ("FAILED", minor)
            } else {
                ("SUCCEEDED", minor + 100)
            };
            sandbox.put(PaymentData {
                payment_no,
                txn_id: txn.unwrap_or_default(),
                status: status.into(),
                amount: crate::domain::Money::new(minor, cur).major_string(),
                currency,
            });
        }
        let today = jiff::Timestamp::now()
            .to_zoned(engine.settings().timezone.clone())
            .date()
            .to_string();
        match crate::recon::pull_statement(&engine, "sandbox", &today, "demo").await {
            Ok(run) => tracing::info!(run_id = %run.run_id, round, "demo day reconciled"),
            Err(e) => tracing::warn!(error = %e, "demo reconciliation"),
        }
        tokio::time::sleep(Duration::from_secs(600)).await;
    }
}
