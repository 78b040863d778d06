//! Grouped matches of payments against the sandbox's statement rows, on
//! SQLite and PostgreSQL: one row that is two of the day's payments
//! together (a combined payment) is one GROUP_MATCH proposal on its
//! PROVIDER_ONLY ticket, executed only when two supervisors approve it —
//! both payments SUCCEEDED through apply, one effect each — and the same
//! statement run again opens nothing; two covering sets propose nothing.

use crate::both_databases;
use crate::helpers::Backend;
use crate::recon::{row, statement};
use crate::triage::{Desk, desk};
use serde_json::Value;

/// The fix proposals: (id, kind, ticket, proposer, required approvals, status).
async fn proposals(d: &Desk) -> Vec<(String, String, String, String, i64, String)> {
    sqlx::query_as(
        "SELECT proposal_id, kind, discrepancy_id, proposer_name, required_approvals, status \
         FROM fix_proposals ORDER BY proposed_at",
    )
    .fetch_all(d.app.pool())
    .await
    .unwrap()
}

/// The run's tickets not closed: (class, payment_no).
async fn open_tickets(d: &Desk) -> Vec<(String, Option<String>)> {
    sqlx::query_as(
        "SELECT class, payment_no FROM discrepancies WHERE source = 'recon' AND status <> 'CLOSED' \
         ORDER BY class, payment_no",
    )
    .fetch_all(d.app.pool())
    .await
    .unwrap()
}

async fn notes(d: &Desk, ticket: &str) -> Vec<String> {
    sqlx::query_scalar("SELECT body FROM ticket_notes WHERE discrepancy_id = $1 ORDER BY at")
        .bind(ticket)
        .fetch_all(d.app.pool())
        .await
        .unwrap()
}

async fn approve(d: &Desk, who: &reqwest::Client, proposal: &str) -> (u16, Value) {
    d.call(
        who,
        "fixes/approve",
        &[
            ("proposal", proposal),
            ("comment", "the combined payment's sub-orders checked"),
        ],
    )
    .await
}

/// The combined row of 100.00 CNY the statement lists, under a
/// transaction and a combined order no Reckon has neither of.
fn combined(at: &str) -> Vec<String> {
    vec![row(
        "payment",
        "SBX-COMBINED-1",
        "PAYCOMBINED1",
        ("", ""),
        "100.00",
        "CNY",
        at,
    )]
}

async fn one_row_that_is_two_payments_settles_both_when_two_people_approve(b: Backend) {
    let d = desk(b).await;
    let a = d.app.payment("ORDER-GRP-A", 6_000, "CNY").await;
    let b_ = d.app.payment("ORDER-GRP-B", 4_000, "CNY").await;
    // Of the day too, but no part of the sum.
    let c = d.app.payment("ORDER-GRP-C", 3_000, "CNY").await;
    let (date, at) = d.app.today();
    let rows = combined(&at);
    let provider_only = d.reconcile(&rows, "PROVIDER_ONLY").await;
    assert_eq!(provider_only.len(), 1);
    let ticket = provider_only[0].clone();

    let found = proposals(&d).await;
    assert_eq!(found.len(), 1, "one proposal for the group: {found:?}");
    let (proposal, kind, on, proposer, required, status) = found[0].clone();
    assert_eq!(
        (
            kind.as_str(),
            on.as_str(),
            proposer.as_str(),
            required,
            status.as_str()
        ),
        ("GROUP_MATCH", ticket.as_str(), "reckon", 2, "PENDING")
    );
    let after: String =
        sqlx::query_scalar("SELECT after_json FROM fix_proposals WHERE proposal_id = $1")
            .bind(&proposal)
            .fetch_one(d.app.pool())
            .await
            .unwrap();
    let after: Value = serde_json::from_str(&after).unwrap();
    assert_eq!(after["shape"], "PAYMENTS_TO_ROW");
    assert_eq!(after["amount_minor"], 10_000);
    assert_eq!(after["row"]["provider_txn_id"], "SBX-COMBINED-1");
    let mut members: Vec<(String, i64, bool)> = after["payments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["payment_no"].as_str().unwrap().to_owned(),
                p["amount_minor"].as_i64().unwrap(),
                p["pay"].as_bool().unwrap(),
            )
        })
        .collect();
    members.sort();
    let mut want = vec![(a.clone(), 6_000, true), (b_.clone(), 4_000, true)];
    want.sort();
    assert_eq!(members, want);

    // The same statement again, while the proposal waits: nothing new.
    let (status, body) = d
        .app
        .upload(&d.token, &date, &(statement(&rows) + "\n"))
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(proposals(&d).await.len(), 1);

    // One approval of two: recorded, nothing paid.
    let (status, done) = approve(&d, &d.sam, &proposal).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["class"], "approved", "{done}");
    assert_ne!(d.app.status(&a).await, "SUCCEEDED");
    let (status, done) = approve(&d, &d.sue, &proposal).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["class"], "executed", "{done}");
    for p in [&a, &b_] {
        assert_eq!(d.app.status(p).await, "SUCCEEDED", "{p}");
        assert_eq!(d.effects(p).await, 1, "{p}: one effect");
    }
    assert_ne!(d.app.status(&c).await, "SUCCEEDED", "not a member");
    assert!(
        open_tickets(&d).await.is_empty(),
        "{:?}",
        open_tickets(&d).await
    );
    let status: String =
        sqlx::query_scalar("SELECT status FROM match_groups WHERE shape = 'PAYMENTS_TO_ROW'")
            .fetch_one(d.app.pool())
            .await
            .unwrap();
    assert_eq!(status, "MATCHED");

    // The same statement run again finds the row and both payments matched.
    let (status, run) = d
        .app
        .upload(&d.token, &date, &(statement(&rows) + "\n\n"))
        .await;
    assert_eq!(status, 201, "{run}");
    assert_eq!(run["status"], "COMPLETED", "{run}");
    assert!(
        open_tickets(&d).await.is_empty(),
        "{:?}",
        open_tickets(&d).await
    );
    assert_eq!(proposals(&d).await.len(), 1);
    for p in [&a, &b_] {
        assert_eq!(d.effects(p).await, 1, "{p}: still one effect");
    }
    let figures: Value = serde_json::from_str(run["figures_json"].as_str().unwrap()).unwrap();
    // The row and its two payments matched; the third still pending.
    assert_eq!(
        (&figures["classes"], &figures["pending"]),
        (&serde_json::json!({"MATCHED": 3}), &serde_json::json!(1)),
        "{figures}"
    );
}

async fn two_sets_alike_propose_nothing_and_say_so(b: Backend) {
    let d = desk(b).await;
    for (order, minor) in [
        ("ORDER-AMB-A", 6_000),
        ("ORDER-AMB-B", 4_000),
        ("ORDER-AMB-C", 4_000),
    ] {
        d.app.payment(order, minor, "CNY").await;
    }
    let (_, at) = d.app.today();
    let tickets = d.reconcile(&combined(&at), "PROVIDER_ONLY").await;
    assert_eq!(tickets.len(), 1);
    assert!(proposals(&d).await.is_empty(), "{:?}", proposals(&d).await);
    let notes = notes(&d, &tickets[0]).await;
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("grouped match not proposed: 2 sets")),
        "{notes:?}"
    );
    let status: String = sqlx::query_scalar("SELECT status FROM match_groups")
        .fetch_one(d.app.pool())
        .await
        .unwrap();
    assert_eq!(status, "AMBIGUOUS");
}

/// A member paid by its own notification after the proposal: the approval
/// that completes the count changes nothing, and says why.
async fn a_group_whose_member_was_paid_meanwhile_changes_nothing(b: Backend) {
    let d = desk(b).await;
    let a = d.app.payment("ORDER-LATE-A", 6_000, "CNY").await;
    let b_ = d.app.payment("ORDER-LATE-B", 4_000, "CNY").await;
    let (_, at) = d.app.today();
    let ticket = d.reconcile(&combined(&at), "PROVIDER_ONLY").await[0].clone();
    let found = proposals(&d).await;
    assert_eq!(found.len(), 1, "{found:?}");
    let proposal = found[0].0.clone();
    // The sandbox bound A's transaction when it was created (the run's
    // provider tasks): its notification names it.
    let txn: String =
        sqlx::query_scalar("SELECT provider_txn_id FROM payments WHERE payment_no = $1")
            .bind(&a)
            .fetch_one(d.app.pool())
            .await
            .unwrap();
    let body = d
        .app
        .notice("evt-late-a", &a, "SUCCEEDED", "60.00", "CNY", &txn);
    assert_eq!(d.app.post_signed("evt-late-a", &body).await.status(), 200);
    d.app.wait_for_status(&a, "SUCCEEDED").await;

    let (status, done) = approve(&d, &d.sam, &proposal).await;
    assert_eq!((status, &done["class"]), (200, &Value::from("approved")));
    let (status, refused) = approve(&d, &d.sue, &proposal).await;
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused.to_string().contains("the group no longer holds"),
        "{refused}"
    );
    assert_ne!(d.app.status(&b_).await, "SUCCEEDED", "B is not paid");
    assert_eq!(d.effects(&a).await, 1, "A's own notification only");
    assert_eq!(d.effects(&b_).await, 0);
    let group: String = sqlx::query_scalar("SELECT status FROM match_groups")
        .fetch_one(d.app.pool())
        .await
        .unwrap();
    assert_eq!(group, "PROPOSED", "the failed approval rolled back");
    let open: String =
        sqlx::query_scalar("SELECT status FROM discrepancies WHERE discrepancy_id = $1")
            .bind(&ticket)
            .fetch_one(d.app.pool())
            .await
            .unwrap();
    assert_ne!(open, "CLOSED");
}

both_databases!(
    one_row_that_is_two_payments_settles_both_when_two_people_approve,
    two_sets_alike_propose_nothing_and_say_so,
    a_group_whose_member_was_paid_meanwhile_changes_nothing,
);
