//! `reckon serve --demo` against each database: a month of history, live
//! payments and refunds, and today's reconciled day with tickets to triage.

use crate::both_databases;
use crate::helpers::Backend;

/// The README's run command: the demo's in-process sandbox and traffic
/// move payments to a result and refund some of them, with real workers.
async fn the_demo_moves_payments_and_refunds_some(b: Backend) {
    let app = crate::helpers::spawn_app_with(
        b,
        |_| {},
        reckon::startup::Options {
            demo: true,
            demo_recon_after: std::time::Duration::from_secs(12),
            ..reckon::startup::Options::default()
        },
    )
    .await;
    let pool = &app.accounts.db.pool;
    let mut settled = (0, 0);
    for _ in 0..300 {
        settled = sqlx::query_as(
            "SELECT (SELECT COUNT(*) FROM payments WHERE status IN ('SUCCEEDED', 'FAILED', 'REFUNDING', 'REFUNDED') \
                      AND description = 'demo order'), \
                    (SELECT COUNT(*) FROM refunds WHERE status = 'SUCCEEDED')",
        )
        .fetch_one(pool)
        .await
        .unwrap();
        if settled.0 >= 2 && settled.1 >= 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(settled.0 >= 2 && settled.1 >= 1, "{settled:?}");
    // A month of history: each of the last 30 days reconciled (yesterday's
    // by the daily pull, once it is past 02:00).
    let today = jiff::Timestamp::now().strftime("%Y-%m-%d").to_string();
    let days: i64 = sqlx::query_scalar(
        "SELECT COUNT(DISTINCT business_date) FROM recon_runs WHERE status = 'COMPLETED' AND business_date < $1",
    )
    .bind(&today)
    .fetch_one(pool)
    .await
    .unwrap();
    assert!(days >= 29, "{days} days of history");
    // Today reconciled too, with tickets of several classes to triage (a
    // run writes its tickets in batches: wait for the three staged ones,
    // not for any three).
    let staged = ["AMOUNT_MISMATCH", "LOCAL_ONLY", "PROVIDER_ONLY"];
    let mut classes: Vec<String> = Vec::new();
    for _ in 0..300 {
        classes = sqlx::query_scalar(
            "SELECT DISTINCT class FROM discrepancies WHERE source = 'recon' AND business_date = $1 ORDER BY class",
        )
        .bind(&today)
        .fetch_all(pool)
        .await
        .unwrap();
        if staged.iter().all(|s| classes.iter().any(|c| c == s)) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    for class in staged {
        assert!(classes.iter().any(|c| c == class), "{classes:?}");
    }
    let ledger: i64 = crate::reads::ledger_entries(pool).await;
    assert!(ledger >= 1);
}

both_databases!(the_demo_moves_payments_and_refunds_some);
