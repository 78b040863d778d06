//! The keys after the identifiers, against a real server on SQLite and
//! PostgreSQL. The amount key: a provider-only row and the day's one
//! unlisted payment of its amount made within the window are one payment —
//! matched when both sides say paid, only proposed (a grouped match of one,
//! two people) when Reckon has it unpaid; outside the window, or with two
//! candidates, nothing pairs and the ticket says why; without the key the
//! day is as it was, and a rule change adding it is previewed exactly. The
//! reference key: a row's merchant reference finds the payment of that
//! order.

use crate::both_databases;
use crate::config_versions::{decide, propose, view};
use crate::engine_helpers::{EngineApp, spawn_engine_app, spawn_engine_app_with};
use crate::helpers::Backend;
use crate::recon::{row, statement};
use crate::triage::{Desk, desk_with};
use app::types::Role;
use reckon::config::MatchKey;
use serde_json::{Value, json};

const HOUR: i64 = 3_600_000_000;

/// The clock at noon UTC today, far from the day's cuts.
fn at_noon(app: &EngineApp) {
    let now = jiff::Timestamp::from_microsecond(app.app.engine.now()).unwrap();
    let noon: jiff::Timestamp = format!("{}T12:00:00Z", now.strftime("%Y-%m-%d"))
        .parse()
        .unwrap();
    app.clock.set(noon.as_microsecond());
}

/// A desk whose rules end with the amount key, its window `hours`.
async fn amount_desk(b: Backend, hours: i64) -> Desk {
    let d = desk_with(b, |c| {
        c.matching.keys.push(MatchKey::Amount);
        c.matching.window_us = hours * HOUR;
    })
    .await;
    at_noon(&d.app);
    d
}

/// The fix proposals: (kind, ticket, required approvals, status).
async fn proposals(app: &EngineApp) -> Vec<(String, String, String, i64, String)> {
    sqlx::query_as(
        "SELECT proposal_id, kind, discrepancy_id, required_approvals, status \
         FROM fix_proposals ORDER BY proposed_at",
    )
    .fetch_all(app.pool())
    .await
    .unwrap()
}

/// The grouped matches' members by payment_no, per group.
async fn group_members(app: &EngineApp) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT payment_no FROM match_group_members WHERE payment_no IS NOT NULL ORDER BY payment_no",
    )
    .fetch_all(app.pool())
    .await
    .unwrap()
}

/// The run's tickets of `class`: (id, txn, details).
async fn tickets(app: &EngineApp, class: &str) -> Vec<(String, Option<String>, String)> {
    sqlx::query_as(
        "SELECT discrepancy_id, provider_txn_id, details FROM discrepancies \
         WHERE class = $1 AND status <> 'CLOSED' ORDER BY provider_txn_id",
    )
    .bind(class)
    .fetch_all(app.pool())
    .await
    .unwrap()
}

async fn run(d: &Desk, rows: &[String]) -> Value {
    let (date, _) = d.app.today();
    d.app.reconcile_day(&d.token, &date, rows, 0).await
}

/// Within the window, the one CREATED payment of a row's amount is
/// proposed, not paid: a GROUP_MATCH of that payment alone on the row's
/// PROVIDER_ONLY ticket, two approvals; the grouped search, which would
/// find two other payments summing to the row, proposes nothing for it.
/// A row two and a half hours after its payment, outside a window of one
/// hour, pairs with nothing. Approved, the payment is paid through the
/// engine.
async fn a_row_pairs_by_amount_within_the_window_only_as_a_proposal(b: Backend) {
    let d = amount_desk(b, 1).await;
    let far = d.app.payment("ORDER-AK-FAR", 1_234, "CNY").await;
    d.app.clock.advance_secs(2 * 3600);
    let near = d.app.payment("ORDER-AK-NEAR", 5_678, "CNY").await;
    // Together the row's amount too, in the grouped search's reach.
    d.app.payment("ORDER-AK-G1", 5_000, "CNY").await;
    d.app.payment("ORDER-AK-G2", 678, "CNY").await;
    d.app.clock.advance_secs(30 * 60);
    let (_, at) = d.app.today();
    let rows = [
        row("payment", "SBX-AK-FAR", "", ("", ""), "12.34", "CNY", &at),
        row("payment", "SBX-AK-NEAR", "", ("", ""), "56.78", "CNY", &at),
    ];
    let figures = run(&d, &rows).await;
    assert_eq!(figures["classes"]["PROVIDER_ONLY"], 2, "{figures}");
    assert_eq!(
        figures["matched"], 0,
        "an unpaid pair is no match: {figures}"
    );
    assert_eq!(
        figures["by_key"],
        json!({ "amount": { "proposed": 1 } }),
        "{figures}"
    );
    let t = tickets(&d.app, "PROVIDER_ONLY").await;
    assert_eq!(t.len(), 2, "{t:?}");
    let (far_ticket, near_ticket) = (&t[0], &t[1]);
    assert_eq!(far_ticket.1.as_deref(), Some("SBX-AK-FAR"));
    assert!(!far_ticket.2.contains("by amount"), "{far_ticket:?}");
    assert!(
        near_ticket.2.contains(&format!("it is payment {near}"))
            && near_ticket
                .2
                .contains("nothing is paid until people approve"),
        "{near_ticket:?}"
    );
    let found = proposals(&d.app).await;
    assert_eq!(found.len(), 1, "{found:?}");
    let (proposal, kind, on, required, status) = found[0].clone();
    assert_eq!(
        (kind.as_str(), on.as_str(), required, status.as_str()),
        ("GROUP_MATCH", near_ticket.0.as_str(), 2, "PENDING")
    );
    assert_eq!(group_members(&d.app).await, vec![near.clone()]);
    assert_ne!(
        d.app.status(&near).await,
        "SUCCEEDED",
        "not paid by the pairing"
    );
    assert_ne!(d.app.status(&far).await, "SUCCEEDED");

    for who in [&d.sam, &d.sue] {
        let (status, done) = d
            .call(
                who,
                "fixes/approve",
                &[("proposal", &proposal), ("comment", "the order checked")],
            )
            .await;
        assert_eq!(status, 200, "{done}");
    }
    assert_eq!(d.app.status(&near).await, "SUCCEEDED");
    assert_eq!(d.effects(&near).await, 1);
    assert_ne!(d.app.status(&far).await, "SUCCEEDED");
}

/// Two payments of the row's amount within the window: nothing is paired
/// or proposed, and the ticket names both. One payment that is the only
/// candidate of two rows: neither pairs, each ticket names the other row.
async fn a_row_with_two_candidates_pairs_nothing_and_says_why(b: Backend) {
    let d = amount_desk(b, 72).await;
    let p1 = d.app.payment("ORDER-AK-A1", 2_500, "CNY").await;
    let p2 = d.app.payment("ORDER-AK-A2", 2_500, "CNY").await;
    let p3 = d.app.payment("ORDER-AK-A3", 700, "CNY").await;
    let (_, at) = d.app.today();
    let rows = [
        row("payment", "SBX-AK-A", "", ("", ""), "25.00", "CNY", &at),
        row("payment", "SBX-AK-B1", "", ("", ""), "7.00", "CNY", &at),
        row("payment", "SBX-AK-B2", "", ("", ""), "7.00", "CNY", &at),
    ];
    let figures = run(&d, &rows).await;
    assert_eq!(figures["classes"]["PROVIDER_ONLY"], 3, "{figures}");
    assert_eq!(
        figures["by_key"],
        json!({ "amount": { "ambiguous": 3 } }),
        "{figures}"
    );
    assert!(proposals(&d.app).await.is_empty());
    let t = tickets(&d.app, "PROVIDER_ONLY").await;
    let reason = &t[0].2;
    assert!(
        reason.contains("not paired by amount: 2 of the day's unlisted payments")
            && reason.contains(&p1)
            && reason.contains(&p2),
        "{reason}"
    );
    // Lines 3 and 4 (the header is line 1).
    for (ticket, other_line) in [(&t[1], 4), (&t[2], 3)] {
        assert!(
            ticket.2.contains(&format!(
                "payment {p3} (7.00 CNY, CREATED) is also a candidate of statement line {other_line};"
            )),
            "{ticket:?}"
        );
    }
    for p in [&p1, &p2, &p3] {
        assert_ne!(d.app.status(p).await, "SUCCEEDED");
    }
}

/// Without the amount key (the default rules) a paid payment without its
/// transaction and a row of its amount are a LOCAL_ONLY and a
/// PROVIDER_ONLY, as always. A change adding the key is previewed as one
/// row more matched and both tickets fewer; approved, the day's next run
/// finds exactly that, counted under the key.
async fn adding_the_amount_key_is_previewed_and_matches_a_paid_pair(b: Backend) {
    let app = spawn_engine_app(b).await;
    at_noon(&app);
    let token = app.token().await;
    let (date, at) = app.today();
    let plain = app
        .paid_with("ORDER-AK-P1", 1000, "10.00", "SBX-AK-P1")
        .await;
    let paid = app
        .paid_with("ORDER-AK-P2", 4200, "42.00", "SBX-AK-P2")
        .await;
    // Paid here without the provider's transaction (as a manual fix may
    // leave it): only its amount can find its row.
    sqlx::query("UPDATE payments SET provider_txn_id = NULL WHERE payment_no = $1")
        .bind(&paid)
        .execute(app.pool())
        .await
        .unwrap();
    let rows = [
        row(
            "payment",
            "SBX-AK-P1",
            &plain,
            ("", ""),
            "10.00",
            "CNY",
            &at,
        ),
        row("payment", "SBX-AK-OTHER", "", ("", ""), "42.00", "CNY", &at),
    ];
    let (status, first) = app.upload(&token, &date, &statement(&rows)).await;
    assert_eq!(status, 201, "{first}");
    let before: Value = serde_json::from_str(first["figures_json"].as_str().unwrap()).unwrap();
    assert_eq!(
        before["classes"],
        json!({ "MATCHED": 1, "LOCAL_ONLY": 1, "PROVIDER_ONLY": 1 }),
        "{before}"
    );
    assert!(before.get("by_key").is_none(), "{before}");

    let sup1 = app.app.signed_in("sup1", Role::Supervisor).await;
    let sup2 = app.app.signed_in("sup2", Role::Supervisor).await;
    let (status, body) = propose(&app, &sup1, &[("match_keys", "txn, payment_no, amounts")]).await;
    assert_ne!(status, 200, "an unknown key is refused: {body}");
    assert!(body.contains("is no matching key"), "{body}");
    let (status, body) = propose(&app, &sup1, &[("match_keys", "txn, payment_no, amount")]).await;
    assert_eq!(status, 200, "{body}");
    let preview = view(&app, &sup2).await["pending"]["preview"][0].clone();
    assert_eq!(
        preview,
        json!({
            "provider": "sandbox",
            "business_date": date,
            "run_id": first["run_id"],
            "matched_now": 1,
            "tickets_now": 2,
            "matched_proposed": 2,
            "tickets_proposed": 0,
            "classes_more": { "MATCHED": 1, "LOCAL_ONLY": -1, "PROVIDER_ONLY": -1 },
            "tickets_more": { "LOCAL_ONLY CRITICAL": -1, "PROVIDER_ONLY HIGH": -1 },
            "by_key_proposed": { "amount": { "matched": 1 } },
            "error": null,
        }),
        "{preview}"
    );
    let (status, body) = decide(&app, &sup2, "approve").await;
    assert_eq!(status, 200, "{body}");
    let (status, run) = app.upload(&token, &date, &(statement(&rows) + "\n")).await;
    assert_eq!(status, 201, "{run}");
    let after: Value = serde_json::from_str(run["figures_json"].as_str().unwrap()).unwrap();
    assert_eq!(after["classes"], json!({ "MATCHED": 2 }), "{after}");
    assert_eq!(after["matched"], preview["matched_proposed"], "{after}");
    assert_eq!(after["by_key"], json!({ "amount": { "matched": 1 } }));
    let all: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM discrepancies WHERE source = 'recon'")
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(all, 2, "no ticket more: the first run's two only");
    // Matched, never changed: the pairing bound or moved nothing.
    let (status, txn): (String, Option<String>) =
        sqlx::query_as("SELECT status, provider_txn_id FROM payments WHERE payment_no = $1")
            .bind(&paid)
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!((status.as_str(), txn), ("SUCCEEDED", None));
}

/// The reference key: a row whose transaction and payment_no name nothing
/// but which states the merchant's order finds that order's one payment
/// made within the window — paid there, CREATED here: a STATUS_LAG, as if
/// its payment_no had found it; the order's other payment of the same
/// amount stays pending. Without the key the row is PROVIDER_ONLY.
async fn a_reference_finds_the_payment_of_its_order(b: Backend) {
    let app = spawn_engine_app_with(b, |c| {
        c.matching.keys = vec![MatchKey::Txn, MatchKey::PaymentNo, MatchKey::Reference];
    })
    .await;
    at_noon(&app);
    let token = app.token().await;
    let p = app.payment("ORDER-REF-1", 3_300, "CNY").await;
    let other = app.payment("ORDER-REF-2", 3_300, "CNY").await;
    let (date, at) = app.today();
    let file = format!(
        "kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at,reference\n\
         payment,SBX-REF-1,,,,SUCCEEDED,33.00,CNY,{at},ORDER-REF-1\n\
         #summary,rows=1,total_minor=3300\n"
    );
    let (status, run) = app.upload_only(&token, &date, &file).await;
    assert_eq!(status, 201, "{run}");
    let figures: Value = serde_json::from_str(run["figures_json"].as_str().unwrap()).unwrap();
    assert_eq!(figures["classes"], json!({ "STATUS_LAG": 1 }), "{figures}");
    // The other payment not listed, counted once; pending with the
    // STATUS_LAG's repair queued.
    assert_eq!(figures["local_without_row"], 1, "{other}: {figures}");
    assert_eq!(figures["pending"], 2, "{figures}");
    assert_eq!(figures["by_key"], json!({ "reference": { "found": 1 } }));
    let (class, no): (String, Option<String>) =
        sqlx::query_as("SELECT class, payment_no FROM discrepancies WHERE source = 'recon'")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!((class.as_str(), no), ("STATUS_LAG", Some(p.clone())));

    // Without the key, the same statement: the row is the provider's only.
    let engine = app.app_engine();
    let run_id = run["run_id"].as_str().unwrap();
    let off = reckon::recon::preview_run(&engine, run_id, Some(&Default::default()))
        .await
        .unwrap();
    assert_eq!(
        off.classes,
        [("PROVIDER_ONLY".to_owned(), 1)].into_iter().collect(),
        "{off:?}"
    );
    assert!(off.by_key.is_empty(), "{off:?}");
    let on = reckon::recon::preview_run(&engine, run_id, None)
        .await
        .unwrap();
    assert_eq!(on.by_key["reference"]["found"], 1, "{on:?}");
}

both_databases!(
    a_reference_finds_the_payment_of_its_order,
    a_row_pairs_by_amount_within_the_window_only_as_a_proposal,
    a_row_with_two_candidates_pairs_nothing_and_says_why,
    adding_the_amount_key_is_previewed_and_matches_a_paid_pair,
);
