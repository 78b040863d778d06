//! Named reads of what the tests check in the database: one SQL text each,
//! so a test says what it reads and a renamed column is one edit here.

use sqlx::AnyPool;

/// A payment's status.
pub async fn payment_status(pool: &AnyPool, payment_no: &str) -> String {
    sqlx::query_scalar("SELECT status FROM payments WHERE payment_no = $1")
        .bind(payment_no)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// A payment's amount in minor units.
pub async fn payment_amount(pool: &AnyPool, payment_no: &str) -> i64 {
    sqlx::query_scalar("SELECT amount_minor FROM payments WHERE payment_no = $1")
        .bind(payment_no)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// The provider's transaction id a payment carries, if any.
pub async fn payment_txn(pool: &AnyPool, payment_no: &str) -> Option<String> {
    sqlx::query_scalar("SELECT provider_txn_id FROM payments WHERE payment_no = $1")
        .bind(payment_no)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// (refunded, reserved) on a payment, in minor units.
pub async fn refund_figures(pool: &AnyPool, payment_no: &str) -> (i64, i64) {
    sqlx::query_as("SELECT refunded_minor, reserved_minor FROM payments WHERE payment_no = $1")
        .bind(payment_no)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// (status, refunded, reserved) of a payment.
pub async fn payment_refund_state(pool: &AnyPool, payment_no: &str) -> (String, i64, i64) {
    sqlx::query_as(
        "SELECT status, refunded_minor, reserved_minor FROM payments WHERE payment_no = $1",
    )
    .bind(payment_no)
    .fetch_one(pool)
    .await
    .unwrap()
}

/// How many payments are SUCCEEDED.
pub async fn succeeded_payments(pool: &AnyPool) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM payments WHERE status = 'SUCCEEDED'")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// A payment's downstream effects (one is right).
pub async fn effects_of(pool: &AnyPool, payment_no: &str) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM payment_effects WHERE payment_no = $1")
        .bind(payment_no)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// A refund's status.
pub async fn refund_status(pool: &AnyPool, refund_no: &str) -> String {
    sqlx::query_scalar("SELECT status FROM refunds WHERE refund_no = $1")
        .bind(refund_no)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Entries in the refund ledger, of every payment.
pub async fn ledger_entries(pool: &AnyPool) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM refund_ledger")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Entries in the refund ledger of one payment.
pub async fn ledger_entries_of(pool: &AnyPool, payment_no: &str) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM refund_ledger WHERE payment_no = $1")
        .bind(payment_no)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Reconciliation runs, of any status.
pub async fn runs(pool: &AnyPool) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM recon_runs")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// A run's summary as stored (JSON text).
pub async fn run_summary(pool: &AnyPool, run_id: &str) -> String {
    sqlx::query_scalar("SELECT summary_json FROM recon_runs WHERE run_id = $1")
        .bind(run_id)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// The classes of a payment's tickets.
pub async fn classes_of(pool: &AnyPool, payment_no: &str) -> Vec<String> {
    sqlx::query_scalar("SELECT class FROM discrepancies WHERE payment_no = $1")
        .bind(payment_no)
        .fetch_all(pool)
        .await
        .unwrap()
}

/// (class, severity) of a payment's tickets.
pub async fn tickets_of(pool: &AnyPool, payment_no: &str) -> Vec<(String, String)> {
    sqlx::query_as("SELECT class, severity FROM discrepancies WHERE payment_no = $1")
        .bind(payment_no)
        .fetch_all(pool)
        .await
        .unwrap()
}

/// The outbox message announcing an aggregate (a payment), when it has one.
pub async fn message_of(pool: &AnyPool, aggregate_id: &str) -> String {
    sqlx::query_scalar("SELECT message_id FROM outbox_events WHERE aggregate_id = $1")
        .bind(aggregate_id)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Outbox messages of one type about an aggregate.
pub async fn events_of(pool: &AnyPool, aggregate_id: &str, event_type: &str) -> i64 {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM outbox_events WHERE aggregate_id = $1 AND event_type = $2",
    )
    .bind(aggregate_id)
    .bind(event_type)
    .fetch_one(pool)
    .await
    .unwrap()
}
