//! Triage and the two-person rule through the console's server functions,
//! called directly over HTTP with real sessions, on SQLite and PostgreSQL:
//! tickets come from a real reconciliation of the sandbox's statement.

use crate::both_databases;
use crate::engine_helpers::{EngineApp, spawn_engine_app_with};
use crate::helpers::Backend;
use crate::recon::{row, statement};
use app::types::Role;
use serde_json::Value;

const PASSWORD: &str = "correct horse battery";

pub(crate) struct Desk {
    pub app: EngineApp,
    pub token: String,
    /// operator, and two supervisors
    pub olga: reqwest::Client,
    pub sam: reqwest::Client,
    pub sue: reqwest::Client,
}

pub(crate) async fn desk(b: Backend) -> Desk {
    desk_with(b, |_| {}).await
}

/// The same, with the configuration adjusted first.
pub(crate) async fn desk_with(
    b: Backend,
    adjust: impl FnOnce(&mut reckon::config::Config),
) -> Desk {
    let app = spawn_engine_app_with(b, adjust).await;
    let token = app.token().await;
    let mut clients = Vec::new();
    for (name, role) in [
        ("olga", Role::Operator),
        ("sam", Role::Supervisor),
        ("sue", Role::Supervisor),
    ] {
        app.app.add_user(name, role, PASSWORD).await;
        let client = crate::helpers::client();
        let res = app
            .app
            .call_with(
                &client,
                "login",
                &[("username", name), ("password", PASSWORD)],
            )
            .await;
        assert!(res.status().is_success() || res.status().is_redirection());
        clients.push(client);
    }
    let sue = clients.pop().unwrap();
    let sam = clients.pop().unwrap();
    let olga = clients.pop().unwrap();
    Desk {
        app,
        token,
        olga,
        sam,
        sue,
    }
}

impl Desk {
    pub(crate) async fn call(
        &self,
        who: &reqwest::Client,
        endpoint: &str,
        form: &[(&str, &str)],
    ) -> (u16, Value) {
        let res = self.app.app.call_with(who, endpoint, form).await;
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    /// Reconciles today against a statement of `rows`; returns the open
    /// tickets of `class`, by id.
    pub(crate) async fn reconcile(&self, rows: &[String], class: &str) -> Vec<String> {
        let (date, _) = self.app.today();
        let (status, body) = self.app.upload(&self.token, &date, &statement(rows)).await;
        assert_eq!(status, 201, "{body}");
        sqlx::query_scalar(
            "SELECT discrepancy_id FROM discrepancies WHERE class = $1 AND status <> 'CLOSED' ORDER BY found_at",
        )
        .bind(class)
        .fetch_all(self.app.pool())
        .await
        .unwrap()
    }

    /// A payment the provider's statement lists and Reckon does not have.
    pub(crate) async fn provider_only(&self, no: &str, txn: &str) -> String {
        let (_, at) = self.app.today();
        let rows = [row("payment", txn, no, ("", ""), "66.60", "CNY", &at)];
        let tickets = self.reconcile(&rows, "PROVIDER_ONLY").await;
        assert_eq!(tickets.len(), 1);
        tickets[0].clone()
    }

    pub(crate) async fn audit_actions(&self, since: i64) -> Vec<(String, String)> {
        sqlx::query_as("SELECT actor, action FROM audit_log WHERE seq > $1 ORDER BY seq")
            .bind(since)
            .fetch_all(self.app.pool())
            .await
            .unwrap()
    }

    pub(crate) async fn audit_head(&self) -> i64 {
        sqlx::query_scalar("SELECT seq FROM audit_head WHERE id = 1")
            .fetch_one(self.app.pool())
            .await
            .unwrap()
    }

    pub(crate) async fn propose_backfill(
        &self,
        who: &reqwest::Client,
        ticket: &str,
        order: &str,
    ) -> String {
        let (status, body) = self
            .call(
                who,
                "fixes/propose",
                &[
                    ("id", ticket),
                    ("kind", "BACKFILL"),
                    ("reason", "paid at the provider, the callback was lost"),
                    ("evidence", "provider console screenshot #4411"),
                    ("order_no", order),
                ],
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body.as_str().unwrap().to_owned()
    }

    /// A payment paid 100.00 here that the statement lists at 101.00 (as
    /// transaction `txn`): the payment and its AMOUNT_MISMATCH ticket.
    pub(crate) async fn amount_mismatch(&self, order: &str, txn: &str) -> (String, String) {
        let (_, at) = self.app.today();
        let p = self.app.paid_with(order, 10000, "100.00", txn).await;
        let rows = [row("payment", txn, &p, ("", ""), "101.00", "CNY", &at)];
        let tickets = self.reconcile(&rows, "AMOUNT_MISMATCH").await;
        assert_eq!(tickets.len(), 1);
        (p, tickets[0].clone())
    }

    /// olga proposes to accept the provider's amount; the proposal.
    pub(crate) async fn propose_accept_amount(&self, ticket: &str) -> String {
        let (status, proposal) = self
            .call(
                &self.olga,
                "fixes/propose",
                &[
                    ("id", ticket),
                    ("kind", "ACCEPT_AMOUNT"),
                    ("reason", "provider surcharge confirmed"),
                    ("evidence", "mail from the provider, ref 77"),
                ],
            )
            .await;
        assert_eq!(status, 200, "{proposal}");
        proposal.as_str().unwrap().to_owned()
    }

    /// sam approves an ACCEPT_AMOUNT proposal on payment `p` (100.00) that
    /// is stale: refused, nothing executed, the proposal back in the queue;
    /// why it is stale.
    pub(crate) async fn approved_but_stale(&self, proposal: &str, p: &str) -> String {
        let (status, err) = self
            .call(
                &self.sam,
                "fixes/approve",
                &[("proposal", proposal), ("comment", "fine")],
            )
            .await;
        assert_eq!(status, 409, "{err}");
        assert!(err.get("ProposalStale").is_some(), "{err}");
        let amount: i64 = crate::reads::payment_amount(self.app.pool(), p).await;
        assert_eq!(amount, 10000, "nothing executed");
        let (_, queue) = self
            .call(&self.sam, "fixes/list", &[("status", "PENDING")])
            .await;
        assert_eq!(queue[0]["id"], proposal, "back in the queue");
        queue[0]["stale_reason"].as_str().unwrap().to_owned()
    }

    pub(crate) async fn ticket_of(&self, payment_no: &str, class: &str) -> String {
        sqlx::query_scalar(
            "SELECT discrepancy_id FROM discrepancies WHERE class = $1 AND payment_no = $2",
        )
        .bind(class)
        .bind(payment_no)
        .fetch_one(self.app.pool())
        .await
        .unwrap()
    }

    /// Holds a payment, as reconciliation would.
    pub(crate) async fn hold(&self, payment_no: &str, reason: &str) {
        sqlx::query("INSERT INTO payment_holds (payment_no, reason, held_at) VALUES ($1, $2, 1)")
            .bind(payment_no)
            .bind(reason)
            .execute(self.app.pool())
            .await
            .unwrap();
    }

    pub(crate) async fn held(&self, payment_no: &str) -> Option<String> {
        sqlx::query_scalar("SELECT reason FROM payment_holds WHERE payment_no = $1")
            .bind(payment_no)
            .fetch_optional(self.app.pool())
            .await
            .unwrap()
    }

    /// olga proposes `kind`, sue approves; what it did.
    pub(crate) async fn decide(&self, ticket: &str, kind: &str) -> String {
        let (status, proposal) = self
            .call(
                &self.olga,
                "fixes/propose",
                &[
                    ("id", ticket),
                    ("kind", kind),
                    ("reason", "checked"),
                    ("evidence", "provider ticket 9"),
                ],
            )
            .await;
        assert_eq!(status, 200, "{kind}: {proposal}");
        let (status, done) = self
            .call(
                &self.sue,
                "fixes/approve",
                &[
                    ("proposal", proposal.as_str().unwrap()),
                    ("comment", "agreed"),
                ],
            )
            .await;
        assert_eq!(status, 200, "{kind}: {done}");
        done["detail"].as_str().unwrap().to_owned()
    }

    pub(crate) async fn effects(&self, payment_no: &str) -> i64 {
        self.app.count("payment_effects", payment_no).await
    }
}

async fn two_people_backfill_a_provider_only_payment_exactly_once(b: Backend) {
    let d = desk(b).await;
    let ticket = d.provider_only("PAYLOSTCB1", "SBX-LOST-1").await;
    let start = d.audit_head().await;

    // The operator finds the ticket through the filtered list.
    let (status, page) = d
        .call(
            &d.olga,
            "tickets/list",
            &[("filter[class]", "PROVIDER_ONLY"), ("filter[q]", "PAYLOST")],
        )
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["total"], 1);
    assert_eq!(page["items"][0]["id"], ticket.as_str());

    let proposal = d.propose_backfill(&d.olga, &ticket, "ORDER-LOST-1").await;
    let (_, detail) = d.call(&d.olga, "tickets/show", &[("id", &ticket)]).await;
    assert_eq!(detail["summary"]["status"], "AWAITING_APPROVAL");

    // An operator may not approve at all, least of all their own proposal.
    let (status, err) = d
        .call(
            &d.olga,
            "fixes/approve",
            &[("proposal", &proposal), ("comment", "looks right")],
        )
        .await;
    assert_eq!(status, 403, "{err}");
    assert_eq!(err, serde_json::json!("Forbidden"));
    // A comment is required.
    let (status, _) = d
        .call(
            &d.sam,
            "fixes/approve",
            &[("proposal", &proposal), ("comment", " ")],
        )
        .await;
    assert_eq!(status, 400);

    let (status, done) = d
        .call(
            &d.sam,
            "fixes/approve",
            &[
                ("proposal", &proposal),
                ("comment", "matches the provider's record"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["class"], "executed");
    assert_eq!(d.app.status("PAYLOSTCB1").await, "SUCCEEDED");
    assert_eq!(d.effects("PAYLOSTCB1").await, 1);
    let order: String =
        sqlx::query_scalar("SELECT order_no FROM payments WHERE payment_no = 'PAYLOSTCB1'")
            .fetch_one(d.app.pool())
            .await
            .unwrap();
    assert_eq!(order, "ORDER-LOST-1");

    // Decided once: a second approval changes nothing.
    let (status, err) = d
        .call(
            &d.sue,
            "fixes/approve",
            &[("proposal", &proposal), ("comment", "me too")],
        )
        .await;
    assert_eq!(status, 409, "{err}");
    assert_eq!(err, serde_json::json!("ProposalDecided"));
    assert_eq!(d.effects("PAYLOSTCB1").await, 1);

    let (_, detail) = d.call(&d.olga, "tickets/show", &[("id", &ticket)]).await;
    assert_eq!(detail["summary"]["status"], "CLOSED");
    assert!(
        detail["conclusion"]
            .as_str()
            .unwrap()
            .contains("matches the provider's record")
    );
    assert_eq!(
        d.audit_actions(start).await,
        [
            ("olga".to_owned(), "fix.propose".to_owned()),
            ("sam".to_owned(), "fix.approve".to_owned()),
            ("sam".to_owned(), "fix.execute".to_owned()),
            ("sam".to_owned(), "ticket.close".to_owned()),
        ]
    );

    // Editing the approval's entry afterwards breaks the chain right there.
    let seq: i64 = sqlx::query_scalar("SELECT seq FROM audit_log WHERE action = 'fix.approve'")
        .fetch_one(d.app.pool())
        .await
        .unwrap();
    assert_eq!(
        d.app.app.cli(&["audit", "verify"], None).status.code(),
        Some(0)
    );
    sqlx::query("UPDATE audit_log SET actor = 'olga' WHERE seq = $1")
        .bind(seq)
        .execute(d.app.pool())
        .await
        .unwrap();
    let out = d.app.app.cli(&["audit", "verify"], None);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("broken at entry {seq}")), "{err}");
}

async fn a_supervisor_never_decides_their_own_proposal(b: Backend) {
    let d = desk(b).await;
    let ticket = d.provider_only("PAYOWNPROP1", "SBX-OWN-1").await;
    let proposal = d.propose_backfill(&d.sam, &ticket, "ORDER-OWN-1").await;
    for endpoint in ["fixes/approve", "fixes/reject"] {
        let (status, err) = d
            .call(
                &d.sam,
                endpoint,
                &[("proposal", &proposal), ("comment", "my own")],
            )
            .await;
        assert_eq!(status, 403, "{endpoint}: {err}");
        assert_eq!(err, serde_json::json!("OwnProposal"));
    }
    // Not even a direct write gets past the database.
    let sam_id: String = sqlx::query_scalar("SELECT id FROM users WHERE username = 'sam'")
        .fetch_one(d.app.pool())
        .await
        .unwrap();
    let direct = sqlx::query(
        "UPDATE fix_proposals SET decided_by_id = $1, status = 'EXECUTED' WHERE proposal_id = $2",
    )
    .bind(&sam_id)
    .bind(&proposal)
    .execute(d.app.pool())
    .await;
    assert!(
        direct.is_err(),
        "the CHECK constraint must refuse a self-decision"
    );
    assert!(d.app.count("payments", "PAYOWNPROP1").await == 0);
    // Another supervisor may reject it, with a comment; the ticket is worked again.
    let (status, _) = d
        .call(
            &d.sue,
            "fixes/reject",
            &[("proposal", &proposal), ("comment", "need the bank slip")],
        )
        .await;
    assert_eq!(status, 200);
    let (_, detail) = d.call(&d.sam, "tickets/show", &[("id", &ticket)]).await;
    assert_eq!(detail["summary"]["status"], "IN_PROGRESS");
    assert_eq!(detail["proposals"][0]["status"], "REJECTED");
}

async fn two_supervisors_approving_at_once_execute_once(b: Backend) {
    let d = desk(b).await;
    let ticket = d.provider_only("PAYRACE1", "SBX-RACE-1").await;
    let proposal = d.propose_backfill(&d.olga, &ticket, "ORDER-RACE-1").await;
    let form = [("proposal", proposal.as_str()), ("comment", "ok")];
    let (a, b2) = tokio::join!(
        d.call(&d.sam, "fixes/approve", &form),
        d.call(&d.sue, "fixes/approve", &form)
    );
    let mut codes = [a.0, b2.0];
    codes.sort();
    assert_eq!(codes, [200, 409], "{a:?} {b2:?}");
    assert_eq!(d.app.status("PAYRACE1").await, "SUCCEEDED");
    assert_eq!(d.effects("PAYRACE1").await, 1);
    let executions: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM audit_log WHERE action = 'fix.execute'")
            .fetch_one(d.app.pool())
            .await
            .unwrap();
    assert_eq!(executions, 1);
}

async fn stale_and_expired_proposals_are_refused(b: Backend) {
    let d = desk(b).await;
    // A paid payment the statement lists with one yuan more.
    let (p, ticket) = d.amount_mismatch("TRI-AMT", "SBX-AMT-1").await;
    let proposal = d.propose_accept_amount(&ticket).await;
    // The payment changes after the proposal (as any concurrent write would).
    sqlx::query("UPDATE payments SET version = version + 1 WHERE payment_no = $1")
        .bind(&p)
        .execute(d.app.pool())
        .await
        .unwrap();
    let stale = d.approved_but_stale(&proposal, &p).await;
    assert!(stale.contains("version"), "{stale}");
    let (status, _) = d
        .call(
            &d.sue,
            "fixes/approve",
            &[("proposal", &proposal), ("comment", "again")],
        )
        .await;
    assert_eq!(status, 409, "a stale proposal stays refused");
    let fails: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM audit_log WHERE action = 'fix.fail'")
        .fetch_one(d.app.pool())
        .await
        .unwrap();
    assert_eq!(fails, 1);

    // Proposed again on the current version, it executes: the amount is
    // the provider's, the difference on record, the outbox told.
    d.decide(&ticket, "ACCEPT_AMOUNT").await;
    let (before, after, diff): (i64, i64, i64) = sqlx::query_as(
        "SELECT before_minor, after_minor, difference_minor FROM payment_adjustments WHERE payment_no = $1",
    )
    .bind(&p)
    .fetch_one(d.app.pool())
    .await
    .unwrap();
    assert_eq!((before, after, diff), (10000, 10100, 100));
    let adjusted: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM outbox_events WHERE aggregate_id = $1 AND event_type = 'payment.amount_adjusted'",
    )
    .bind(&p)
    .fetch_one(d.app.pool())
    .await
    .unwrap();
    assert_eq!(adjusted, 1);

    // Expired: 72 hours pass without a decision.
    let ticket = d.provider_only("PAYEXPIRE1", "SBX-EXP-1").await;
    let proposal = d.propose_backfill(&d.olga, &ticket, "ORDER-EXP-1").await;
    d.app.clock.advance_secs(72 * 3600 + 1);
    let (status, err) = d
        .call(
            &d.sam,
            "fixes/approve",
            &[("proposal", &proposal), ("comment", "late")],
        )
        .await;
    assert_eq!(status, 409, "{err}");
    assert_eq!(err, serde_json::json!("ProposalExpired"));
    assert_eq!(d.app.count("payments", "PAYEXPIRE1").await, 0);
}

async fn a_held_callback_is_replayed_from_its_status_lag_ticket(b: Backend) {
    let d = desk(b).await;
    let (_, at) = d.app.today();
    let p = d.app.payment("TRI-LAG", 5000, "CNY").await;
    // Held (as reconciliation holds a payment) when its callback arrives:
    // stored, verified, not applied.
    d.hold(&p, "test hold").await;
    let body = d
        .app
        .notice("evt-lag", &p, "SUCCEEDED", "50.00", "CNY", "SBX-LAG-1");
    assert_eq!(d.app.post_signed("evt-lag", &body).await.status(), 200);
    assert_eq!(d.app.status(&p).await, "CREATED");
    // The provider cannot be asked; the statement says paid.
    d.app.sandbox_down(true);
    let rows = [row(
        "payment",
        "SBX-LAG-1",
        &p,
        ("", ""),
        "50.00",
        "CNY",
        &at,
    )];
    let tickets = d.reconcile(&rows, "STATUS_LAG").await;
    assert_eq!(tickets.len(), 1, "the automatic repair could not settle it");
    // The test's own hold lifted as it was placed, by hand: a RELEASE_HOLD
    // fix would close the ticket this test replays from.
    sqlx::query("DELETE FROM payment_holds WHERE payment_no = $1")
        .bind(&p)
        .execute(d.app.pool())
        .await
        .unwrap();

    let (_, detail) = d
        .call(&d.olga, "tickets/show", &[("id", &tickets[0])])
        .await;
    let callback = detail["callbacks"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(detail["callbacks"][0]["verify_result"], "VERIFIED");
    let (status, res) = d
        .call(
            &d.olga,
            "tickets/replay",
            &[("id", &tickets[0]), ("callback", &callback)],
        )
        .await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["class"], "applied");
    assert_eq!(d.app.status(&p).await, "SUCCEEDED");
    assert_eq!(d.effects(&p).await, 1);
    let (_, detail) = d
        .call(&d.olga, "tickets/show", &[("id", &tickets[0])])
        .await;
    assert_eq!(detail["summary"]["status"], "CLOSED");
    let replays: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM audit_log WHERE action = 'callback.replay' AND actor = 'olga'",
    )
    .fetch_one(d.app.pool())
    .await
    .unwrap();
    assert_eq!(replays, 1);
    // A closed ticket takes no more actions; the callback itself replays as
    // a duplicate and changes nothing.
    let (status, _) = d
        .call(
            &d.olga,
            "tickets/replay",
            &[("id", &tickets[0]), ("callback", &callback)],
        )
        .await;
    assert_eq!(status, 409);
    let again = d
        .app
        .app_engine()
        .replay_callback(&callback, "test", None)
        .await
        .unwrap();
    assert_eq!(again.class, "duplicate");
    assert_eq!(d.effects(&p).await, 1);
}

async fn operators_work_tickets_and_export_them(b: Backend) {
    let d = desk(b).await;
    let ticket = d.provider_only("PAYWORK1", "SBX-WORK-1").await;
    for (endpoint, form) in [
        (
            "tickets/assign",
            vec![("id", ticket.as_str()), ("owner", "olga")],
        ),
        (
            "tickets/comment",
            vec![("id", ticket.as_str()), ("text", "asked the provider")],
        ),
        (
            "tickets/evidence",
            vec![
                ("id", ticket.as_str()),
                ("kind", "reference"),
                ("text", "CASE-1234"),
            ],
        ),
    ] {
        let (status, body) = d.call(&d.olga, endpoint, &form).await;
        assert_eq!(status, 200, "{endpoint}: {body}");
    }
    let (status, err) = d
        .call(
            &d.olga,
            "tickets/assign",
            &[("id", &ticket), ("owner", "nobody")],
        )
        .await;
    assert_eq!(
        status, 400,
        "only active operators and supervisors own tickets"
    );
    assert_eq!(
        err["Invalid"]["detail"], "nobody is not an active operator or supervisor",
        "{err}"
    );
    let (_, page) = d
        .call(
            &d.sue,
            "tickets/list",
            &[("filter[owner]", "olga"), ("filter[status]", "IN_PROGRESS")],
        )
        .await;
    assert_eq!(page["total"], 1);
    let (_, detail) = d.call(&d.sue, "tickets/show", &[("id", &ticket)]).await;
    let kinds: Vec<&str> = detail["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["assign", "comment", "evidence_ref"]);

    // The CSV of the filtered list, for signed-in users only.
    let csv = d
        .olga
        .get(format!(
            "{}/tickets.csv?class=PROVIDER_ONLY",
            d.app.app.base
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(csv.status(), 200);
    let text = csv.text().await.unwrap();
    assert!(text.starts_with("ticket_id,class,"), "{text}");
    assert!(text.contains("PAYWORK1"), "{text}");
    assert_eq!(text.lines().count(), 2);
    let anonymous = crate::helpers::client()
        .get(format!("{}/tickets.csv", d.app.app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);

    // Closed with a conclusion when no money changes; then it takes no more.
    let (status, _) = d
        .call(
            &d.olga,
            "tickets/conclude",
            &[("id", &ticket), ("conclusion", "explained: test row")],
        )
        .await;
    assert_eq!(status, 200);
    let (status, err) = d
        .call(
            &d.olga,
            "tickets/comment",
            &[("id", &ticket), ("text", "late")],
        )
        .await;
    assert_eq!((status, err), (409, serde_json::json!("TicketClosed")));
}

async fn held_payments_are_closed_merged_or_released_by_two_people(b: Backend) {
    let d = desk(b).await;
    let (_, at) = d.app.today();
    // LOCAL_ONLY twice: paid here, absent from the statement (held).
    let gone = d.app.paid_with("TRI-GONE", 3000, "30.00", "SBX-GONE").await;
    let fine = d.app.paid_with("TRI-FINE", 4000, "40.00", "SBX-FINE").await;
    // ONE_TO_MANY: the statement ties transaction SBX-KEEP (bound to `keep`)
    // to the payment_no of another, unpaid payment `twin`.
    let keep = d.app.paid_with("TRI-KEEP", 700, "7.00", "SBX-KEEP").await;
    let twin = d.app.payment("TRI-TWIN", 700, "CNY").await;
    let rows = [row(
        "payment",
        "SBX-KEEP",
        &twin,
        ("", ""),
        "7.00",
        "CNY",
        &at,
    )];
    d.reconcile(&rows, "ONE_TO_MANY").await;
    for no in [&gone, &fine, &keep, &twin] {
        assert!(d.held(no).await.is_some(), "{no} is held");
    }

    // Close the payment the provider does not know: its hold goes, and the
    // close is an effect like any other (the paid effect stays on record).
    d.decide(&d.ticket_of(&gone, "LOCAL_ONLY").await, "CLOSE_PAYMENT")
        .await;
    assert_eq!(d.app.status(&gone).await, "CLOSED");
    assert_eq!(d.held(&gone).await, None);
    assert_eq!(d.effects(&gone).await, 2);

    // Release only: nothing else changes.
    d.decide(&d.ticket_of(&fine, "LOCAL_ONLY").await, "RELEASE_HOLD")
        .await;
    assert_eq!(d.app.status(&fine).await, "SUCCEEDED");
    assert_eq!(d.held(&fine).await, None);
    assert_eq!(d.effects(&fine).await, 1);

    // Merge: the payment bound to the transaction stays, the twin closes.
    let detail = d
        .decide(&d.ticket_of(&keep, "ONE_TO_MANY").await, "MERGE")
        .await;
    assert!(detail.contains(&twin), "{detail}");
    assert_eq!(d.app.status(&keep).await, "SUCCEEDED");
    assert_eq!(d.app.status(&twin).await, "CLOSED");
    assert_eq!(d.held(&keep).await, None);
    assert_eq!(d.held(&twin).await, None);

    // A fix that does not fit the ticket is refused before it is proposed.
    let ticket = d.provider_only("PAYNOFIT1", "SBX-NOFIT-1").await;
    let (status, err) = d
        .call(
            &d.olga,
            "fixes/propose",
            &[
                ("id", &ticket),
                ("kind", "CLOSE_PAYMENT"),
                ("reason", "x"),
                ("evidence", "y"),
            ],
        )
        .await;
    assert_eq!(status, 400, "{err}");
    assert!(err.get("FixNotApplicable").is_some(), "{err}");
    let (status, err) = d
        .call(
            &d.olga,
            "fixes/propose",
            &[
                ("id", &ticket),
                ("kind", "BACKFILL"),
                ("reason", "x"),
                ("evidence", "y"),
            ],
        )
        .await;
    assert_eq!(
        status, 400,
        "a backfill of a payment Reckon lacks needs its order: {err}"
    );
}

async fn evidence_files_and_a_requery_are_kept_on_the_ticket(b: Backend) {
    let d = desk(b).await;
    let (_, at) = d.app.today();
    // STATUS_LAG the automatic repair could not settle: the provider was down.
    let p = d.app.payment("TRI-RQ", 2500, "CNY").await;
    d.app.sandbox_knows(&p, "SUCCEEDED", "25.00", "CNY");
    d.app.sandbox_down(true);
    let rows = [row(
        "payment",
        &format!("SBX-{p}"),
        &p,
        ("", ""),
        "25.00",
        "CNY",
        &at,
    )];
    let tickets = d.reconcile(&rows, "STATUS_LAG").await;
    assert_eq!(tickets.len(), 1);
    let ticket = tickets[0].clone();

    // A file as evidence, through the plain multipart form.
    let upload = |bytes: Vec<u8>| {
        let form = reqwest::multipart::Form::new().part(
            "file",
            reqwest::multipart::Part::bytes(bytes)
                .file_name("bank-slip.pdf")
                .mime_str("application/pdf")
                .unwrap(),
        );
        d.olga
            .post(format!("{}/tickets/{ticket}/evidence", d.app.app.base))
            .headers(d.app.app.origin())
            .multipart(form)
            .send()
    };
    let res = upload(b"%PDF-1.4 slip".to_vec()).await.unwrap();
    assert_eq!(res.status(), 303);
    assert_eq!(res.headers()["location"], format!("/tickets/{ticket}"));
    let too_big = upload(vec![b'x'; 260 * 1024]).await.unwrap();
    assert_eq!(too_big.status(), 303);
    let to = too_big.headers()["location"].to_str().unwrap().to_owned();
    assert!(to.contains("err=") && to.contains("FileTooLarge"), "{to}");
    let (_, detail) = d.call(&d.olga, "tickets/show", &[("id", &ticket)]).await;
    let files: Vec<&Value> = detail["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["kind"] == "evidence_file")
        .collect();
    assert_eq!(files.len(), 1, "the refused file left nothing");
    assert_eq!(files[0]["file_size"], 13);
    let got = d
        .olga
        .get(format!(
            "{}/evidence/{}",
            d.app.app.base,
            files[0]["id"].as_str().unwrap()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(got.status(), 200);
    assert!(
        got.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .starts_with("attachment")
    );
    assert_eq!(got.bytes().await.unwrap().as_ref(), b"%PDF-1.4 slip");

    // The provider answers again: one click re-queries, apply moves the
    // payment, the lag ticket closes with what happened.
    d.app.sandbox_down(false);
    let (status, res) = d.call(&d.olga, "tickets/requery", &[("id", &ticket)]).await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["class"], "applied");
    assert_eq!(d.app.status(&p).await, "SUCCEEDED");
    assert_eq!(d.effects(&p).await, 1);
    let (_, detail) = d.call(&d.olga, "tickets/show", &[("id", &ticket)]).await;
    assert_eq!(detail["summary"]["status"], "CLOSED");
    let audited: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM audit_log WHERE action IN ('ticket.requery', 'ticket.evidence') AND object_id = $1",
    )
    .bind(&ticket)
    .fetch_one(d.app.pool())
    .await
    .unwrap();
    assert_eq!(audited, 2);
}

async fn a_closed_ticket_takes_no_fix_and_a_merge_keeps_paid_payments(b: Backend) {
    let d = desk(b).await;
    let (_, at) = d.app.today();
    // A live proposal holds the ticket: no conclusion meanwhile.
    let ticket = d.provider_only("PAYLIVE1", "SBX-LIVE-1").await;
    let proposal = d.propose_backfill(&d.olga, &ticket, "ORDER-LIVE-1").await;
    let (status, err) = d
        .call(
            &d.olga,
            "tickets/conclude",
            &[("id", &ticket), ("conclusion", "explained")],
        )
        .await;
    assert_eq!((status, err), (409, serde_json::json!("AlreadyProposed")));
    // Once it expires, the ticket may be closed; the dead proposal goes
    // with it and can never be approved.
    d.app.clock.advance_secs(72 * 3600 + 1);
    let (status, _) = d
        .call(
            &d.olga,
            "tickets/conclude",
            &[("id", &ticket), ("conclusion", "explained: test row")],
        )
        .await;
    assert_eq!(status, 200);
    let (_, detail) = d.call(&d.olga, "tickets/show", &[("id", &ticket)]).await;
    assert_eq!(detail["proposals"][0]["status"], "SUPERSEDED");
    assert_eq!(detail["fixes"], serde_json::json!([]));
    let (status, _) = d
        .call(
            &d.sam,
            "fixes/approve",
            &[("proposal", &proposal), ("comment", "late")],
        )
        .await;
    assert_eq!(status, 409);
    let (status, _) = d
        .call(
            &d.olga,
            "fixes/propose",
            &[
                ("id", &ticket),
                ("kind", "BACKFILL"),
                ("reason", "x"),
                ("evidence", "y"),
                ("order_no", "O"),
            ],
        )
        .await;
    assert_eq!(status, 409, "a closed ticket takes no proposal");
    assert_eq!(d.app.count("payments", "PAYLIVE1").await, 0);

    // ONE_TO_MANY where both payments are paid: a merge would close a paid
    // payment, and is refused; keeping the unbound one is refused too.
    let keep = d.app.paid_with("TRI-PK", 700, "7.00", "SBX-PK").await;
    let other = d.app.paid_with("TRI-PO", 700, "7.00", "SBX-PO").await;
    let rows = [row(
        "payment",
        "SBX-PK",
        &other,
        ("", ""),
        "7.00",
        "CNY",
        &at,
    )];
    d.reconcile(&rows, "ONE_TO_MANY").await;
    let ticket = d.ticket_of(&keep, "ONE_TO_MANY").await;
    let (status, err) = d
        .call(
            &d.olga,
            "fixes/propose",
            &[
                ("id", &ticket),
                ("kind", "MERGE"),
                ("reason", "x"),
                ("evidence", "y"),
            ],
        )
        .await;
    assert_eq!(status, 400, "{err}");
    assert!(
        err["FixNotApplicable"]["detail"]
            .as_str()
            .unwrap()
            .contains("paid"),
        "{err}"
    );
    let (status, err) = d
        .call(
            &d.olga,
            "fixes/propose",
            &[
                ("id", &ticket),
                ("kind", "MERGE"),
                ("reason", "x"),
                ("evidence", "y"),
                ("keep", &other),
            ],
        )
        .await;
    assert_eq!(status, 400, "{err}");
    assert!(
        err["FixNotApplicable"]["detail"]
            .as_str()
            .unwrap()
            .contains("bound"),
        "{err}"
    );
    assert_eq!(d.app.status(&keep).await, "SUCCEEDED");
    assert_eq!(d.app.status(&other).await, "SUCCEEDED");
}

/// A hold is a row of its own and leaves the payment's version alone, so
/// the approval compares the hold the proposal saw with the one there is.
async fn a_fix_proposed_before_a_hold_is_refused_after_it(b: Backend) {
    let d = desk(b).await;
    let (p, ticket) = d.amount_mismatch("TRI-HLD", "SBX-HLD-1").await;
    let proposal = d.propose_accept_amount(&ticket).await;
    let version = || async {
        sqlx::query_scalar::<_, i64>("SELECT version FROM payments WHERE payment_no = $1")
            .bind(&p)
            .fetch_one(d.app.pool())
            .await
            .unwrap()
    };
    let before = version().await;
    // Held meanwhile, as a later reconciliation holds a payment.
    d.hold(&p, "LOCAL_ONLY in a later run").await;
    assert_eq!(version().await, before, "a hold leaves the version alone");
    let stale = d.approved_but_stale(&proposal, &p).await;
    assert!(
        stale.contains("held (LOCAL_ONLY in a later run)"),
        "{stale}"
    );
    assert!(stale.contains("saw it not held"), "{stale}");
    // Proposed again, seeing the hold, it executes.
    d.decide(&ticket, "ACCEPT_AMOUNT").await;
    let amount: i64 = crate::reads::payment_amount(d.app.pool(), &p).await;
    assert_eq!(amount, 10100);
}

/// "Assign to me" is the assignment with the caller's own name: the ticket
/// becomes theirs, in progress, with its note and audit entry; a role that
/// does not work tickets is refused and changes nothing.
async fn assigning_a_ticket_to_oneself_is_audited_and_other_roles_are_refused(b: Backend) {
    let d = desk(b).await;
    let ticket = d.provider_only("PAYSELF1", "SBX-SELF-1").await;
    let before = d.audit_head().await;
    let (status, body) = d
        .call(
            &d.sam,
            "tickets/assign",
            &[("id", &ticket), ("owner", "sam")],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, detail) = d.call(&d.olga, "tickets/show", &[("id", &ticket)]).await;
    assert_eq!(detail["summary"]["owner"], "sam", "{detail}");
    assert_eq!(detail["summary"]["status"], "IN_PROGRESS", "{detail}");
    assert_eq!(
        d.audit_actions(before).await,
        [("sam".to_owned(), "ticket.assign".to_owned())]
    );
    let after: String = sqlx::query_scalar(
        "SELECT after_json FROM audit_log WHERE action = 'ticket.assign' AND object_id = $1",
    )
    .bind(&ticket)
    .fetch_one(d.app.pool())
    .await
    .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&after).unwrap()["owner"],
        "sam"
    );

    // An admin reads tickets but does not work them.
    d.app.app.add_user("ada", Role::Admin, PASSWORD).await;
    let ada = crate::helpers::client();
    let res = d
        .app
        .app
        .call_with(
            &ada,
            "login",
            &[("username", "ada"), ("password", PASSWORD)],
        )
        .await;
    assert!(res.status().is_success() || res.status().is_redirection());
    let head = d.audit_head().await;
    let (status, err) = d
        .call(&ada, "tickets/assign", &[("id", &ticket), ("owner", "ada")])
        .await;
    assert_eq!(status, 403, "{err}");
    let (status, _) = d
        .call(
            &crate::helpers::client(),
            "tickets/assign",
            &[("id", &ticket), ("owner", "olga")],
        )
        .await;
    assert_eq!(status, 401);
    let (_, detail) = d.call(&d.olga, "tickets/show", &[("id", &ticket)]).await;
    assert_eq!(detail["summary"]["owner"], "sam", "{detail}");
    assert_eq!(d.audit_head().await, head, "a refusal writes nothing");
}

both_databases!(
    two_people_backfill_a_provider_only_payment_exactly_once,
    a_fix_proposed_before_a_hold_is_refused_after_it,
    a_supervisor_never_decides_their_own_proposal,
    two_supervisors_approving_at_once_execute_once,
    stale_and_expired_proposals_are_refused,
    a_held_callback_is_replayed_from_its_status_lag_ticket,
    operators_work_tickets_and_export_them,
    held_payments_are_closed_merged_or_released_by_two_people,
    evidence_files_and_a_requery_are_kept_on_the_ticket,
    a_closed_ticket_takes_no_fix_and_a_merge_keeps_paid_payments,
    assigning_a_ticket_to_oneself_is_audited_and_other_roles_are_refused,
);
