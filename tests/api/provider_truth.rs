//! What a stored callback says about itself must be what happened to it,
//! however its delivery was batched. Each on SQLite and PostgreSQL.

use crate::both_databases;
use crate::engine_helpers::spawn_engine_app;
use crate::helpers::Backend;

async fn a_burst_for_unknown_payments_is_stored_failed_with_outcome_unknown_payment(b: Backend) {
    let e = spawn_engine_app(b).await;
    let known = e.payment("BURST-KNOWN", 100, "EUR").await;
    let e = &e;
    let mut posts = Vec::new();
    for i in 0..60 {
        let id = format!("evt-burst-{i}");
        let body = e.notice(
            &id,
            &format!("PAYUNKNOWN{i:04}"),
            "SUCCEEDED",
            "1.00",
            "EUR",
            &format!("T-{i}"),
        );
        posts.push(async move { (id.clone(), e.post_signed(&id, &body).await.status()) });
    }
    let known_body = e.notice("evt-burst-known", &known, "SUCCEEDED", "1.00", "EUR", "T-K");
    let (answers, known_answer) = tokio::join!(
        futures_util::future::join_all(posts),
        e.post_signed("evt-burst-known", &known_body)
    );
    assert_eq!(known_answer.status(), 200);
    assert!(answers.iter().all(|(_, s)| *s == 404), "{answers:?}");
    let rows: Vec<(String, String, Option<String>)> = sqlx::query_as(
        "SELECT callback_id, processing_status, outcome FROM payment_callbacks ORDER BY callback_id",
    )
    .fetch_all(e.pool())
    .await
    .unwrap();
    assert_eq!(rows.len(), 61);
    for (id, status, outcome) in &rows {
        if id == "evt-burst-known" {
            assert_eq!(
                (status.as_str(), outcome.as_deref()),
                ("SUCCESS", Some("applied"))
            );
        } else {
            assert_eq!(
                (status.as_str(), outcome.as_deref()),
                ("FAILED", Some("unknown_payment")),
                "{id}"
            );
        }
    }
    // Every redelivery is answered as the first delivery was.
    let body = e.notice(
        "evt-burst-7",
        "PAYUNKNOWN0007",
        "SUCCEEDED",
        "1.00",
        "EUR",
        "T-7",
    );
    assert_eq!(e.post_signed("evt-burst-7", &body).await.status(), 404);
    assert_eq!(e.status(&known).await, "SUCCEEDED");
}

both_databases!(a_burst_for_unknown_payments_is_stored_failed_with_outcome_unknown_payment);
