//! Bulk work through the console's server functions over real HTTP with
//! real sessions, on SQLite and PostgreSQL: a bulk proposal of backfills
//! decided by a second supervisor (whole or item by item), a job cancelled
//! half-way, bulk assign / comment / close by the list's filter, and a bulk
//! close undone within its window (and refused after it).

use crate::both_databases;
use crate::helpers::Backend;
use crate::recon::row;
use crate::triage::{Desk, desk};
use app::types::Role;
use serde_json::Value;
use std::time::Duration;

/// `n` payments Reckon has as CREATED that the provider's statement lists
/// as paid — with the provider unreachable, each a STATUS_LAG ticket a
/// BACKFILL fixes. Returns the payments, in order.
pub(crate) async fn lagging(d: &Desk, prefix: &str, n: usize) -> Vec<String> {
    let (_, at) = d.app.today();
    d.app.sandbox_down(true);
    let mut payments = Vec::new();
    let mut rows = Vec::new();
    for i in 0..n {
        let p = d
            .app
            .payment(&format!("{prefix}-{i:02}"), 5000, "CNY")
            .await;
        rows.push(row(
            "payment",
            &format!("SBX-{prefix}-{i:02}"),
            &p,
            ("", ""),
            "50.00",
            "CNY",
            &at,
        ));
        payments.push(p);
    }
    let tickets = d.reconcile(&rows, "STATUS_LAG").await;
    assert_eq!(tickets.len(), n, "one STATUS_LAG ticket each");
    payments
}

/// Polls a job until it ends; the job.
pub(crate) async fn finished(d: &Desk, job: &str) -> Value {
    for _ in 0..1200 {
        let (status, j) = d.call(&d.sam, "bulk/job", &[("id", job)]).await;
        assert_eq!(status, 200, "{j}");
        if !matches!(j["status"].as_str(), Some("RUNNING" | "CANCELLING")) {
            return j;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("job {job} did not end");
}

/// `who` proposes one BACKFILL for every STATUS_LAG ticket; the bulk
/// proposal, once all its items are proposed.
pub(crate) async fn propose_all(d: &Desk, who: &reqwest::Client, n: i64) -> String {
    let (status, started) = d
        .call(
            who,
            "bulk/propose",
            &[
                ("kind", "BACKFILL"),
                (
                    "reason",
                    "paid at the provider, callbacks lost in the outage",
                ),
                ("evidence", "provider statement of the day"),
                ("scope", "filter"),
                ("filter[class]", "STATUS_LAG"),
                ("filter[status]", "ACTIVE"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["total"], n);
    let job = finished(d, started["job_id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "DONE", "{job}");
    assert_eq!(job["done"], n, "{job}");
    started["bulk_id"].as_str().unwrap().to_owned()
}

async fn show(d: &Desk, bulk: &str) -> Value {
    let (status, detail) = d.call(&d.sue, "bulk/show", &[("id", bulk)]).await;
    assert_eq!(status, 200, "{detail}");
    detail
}

async fn count(d: &Desk, sql: &str, bind: &str) -> i64 {
    sqlx::query_scalar(sql)
        .bind(bind)
        .fetch_one(d.app.pool())
        .await
        .unwrap()
}

async fn a_bulk_backfill_is_approved_by_another_supervisor_and_a_stale_item_skipped(b: Backend) {
    let d = desk(b).await;
    let payments = lagging(&d, "BULK", 20).await;
    let bulk = propose_all(&d, &d.olga, 20).await;
    let detail = show(&d, &bulk).await;
    assert_eq!(detail["bulk"]["items"], 20);
    assert_eq!(detail["bulk"]["pending"], 20);
    assert_eq!(detail["bulk"]["proposer"], "olga");
    // Each item with its own before and after.
    let items = detail["items"].as_array().unwrap();
    for item in items {
        let no = item["payment_no"].as_str().unwrap();
        assert!(item["before"].as_str().unwrap().contains(no), "{item}");
        assert!(
            item["before"].as_str().unwrap().contains("CREATED"),
            "{item}"
        );
        assert!(
            item["after"].as_str().unwrap().contains("SUCCEEDED"),
            "{item}"
        );
    }
    // The single-proposal queue is not flooded with the items.
    let (_, queue) = d.call(&d.sam, "fixes/list", &[("status", "PENDING")]).await;
    assert_eq!(queue.as_array().unwrap().len(), 0, "{queue}");

    // One payment moves before the decision: its callback arrives late.
    let moved = &payments[7];
    let body = d.app.notice(
        "evt-bulk-7",
        moved,
        "SUCCEEDED",
        "50.00",
        "CNY",
        "SBX-BULK-07",
    );
    assert_eq!(d.app.post_signed("evt-bulk-7", &body).await.status(), 200);
    assert_eq!(d.app.status(moved).await, "SUCCEEDED");
    assert_eq!(d.effects(moved).await, 1);

    // The proposer is a different person from the approver: an operator may
    // not decide at all, and olga's own bulk is never hers to approve.
    let (status, err) = d
        .call(
            &d.olga,
            "bulk/approve",
            &[("bulk", &bulk), ("comment", "ok")],
        )
        .await;
    assert_eq!(status, 403, "{err}");
    let start = d.audit_head().await;
    let (status, started) = d
        .call(
            &d.sam,
            "bulk/approve",
            &[("bulk", &bulk), ("comment", "matches the statement")],
        )
        .await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["total"], 20);
    let job = finished(&d, started["job_id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "DONE", "{job}");
    assert_eq!(
        (
            &job["done"],
            &job["skipped"],
            &job["failed"],
            &job["pending"]
        ),
        (
            &Value::from(19),
            &Value::from(1),
            &Value::from(0),
            &Value::from(0)
        ),
        "{job}"
    );
    // The stale item is reported with why.
    let exceptions = job["exceptions"].as_array().unwrap();
    assert_eq!(exceptions.len(), 1, "{job}");
    let stale_item = items
        .iter()
        .find(|i| i["payment_no"] == moved.as_str())
        .unwrap();
    assert_eq!(exceptions[0][0], stale_item["id"]);
    assert_eq!(exceptions[0][1], "SKIPPED");
    assert!(
        exceptions[0][2].as_str().unwrap().contains("stale"),
        "{job}"
    );

    // Every other payment paid once: one effect, one outbox message.
    for p in &payments {
        assert_eq!(d.app.status(p).await, "SUCCEEDED", "{p}");
        assert_eq!(d.effects(p).await, 1, "{p}");
        assert_eq!(
            count(
                &d,
                "SELECT COUNT(*) FROM outbox_events WHERE aggregate_id = $1 AND event_type = 'payment.succeeded'",
                p
            )
            .await,
            1,
            "{p}"
        );
    }
    let detail = show(&d, &bulk).await;
    assert_eq!(detail["bulk"]["executed"], 19, "{}", detail["bulk"]);
    assert_eq!(detail["bulk"]["stale"], 1, "{}", detail["bulk"]);
    // Audited per item, by the approver.
    let actions = d.audit_actions(start).await;
    let by = |a: &str| {
        actions
            .iter()
            .filter(|(who, x)| who == "sam" && x == a)
            .count()
    };
    assert_eq!(by("bulk.start"), 1);
    assert_eq!(by("fix.approve"), 19);
    assert_eq!(by("fix.execute"), 19);
    assert_eq!(by("ticket.close"), 19);
    assert_eq!(by("fix.fail"), 1, "the stale item's entry");

    // Approving again executes nothing more: only the stale item waits.
    let (status, again) = d
        .call(
            &d.sue,
            "bulk/approve",
            &[("bulk", &bulk), ("comment", "again")],
        )
        .await;
    assert_eq!(status, 200, "{again}");
    let job = finished(&d, again["job_id"].as_str().unwrap()).await;
    assert_eq!(job["total"], 1, "{job}");
    assert_eq!(job["skipped"], 1, "{job}");
    for p in &payments {
        assert_eq!(d.effects(p).await, 1, "{p}");
    }
}

async fn a_bulk_proposal_is_decided_item_by_item(b: Backend) {
    let d = desk(b).await;
    let payments = lagging(&d, "ITEM", 3).await;
    // sam proposes; sam may then decide none of it.
    let bulk = propose_all(&d, &d.sam, 3).await;
    let detail = show(&d, &bulk).await;
    let ids: Vec<String> = detail["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_owned())
        .collect();
    let (status, err) = d
        .call(
            &d.sam,
            "fixes/approve",
            &[("proposal", &ids[0]), ("comment", "mine")],
        )
        .await;
    assert_eq!((status, err), (403, Value::from("OwnProposal")));
    let (status, err) = d
        .call(
            &d.sam,
            "bulk/approve",
            &[("bulk", &bulk), ("comment", "mine")],
        )
        .await;
    assert_eq!((status, err), (403, Value::from("OwnProposal")));

    // sue approves the first, rejects the second, leaves the third.
    let (status, done) = d
        .call(
            &d.sue,
            "fixes/approve",
            &[("proposal", &ids[0]), ("comment", "checked")],
        )
        .await;
    assert_eq!(status, 200, "{done}");
    let (status, _) = d
        .call(
            &d.sue,
            "fixes/reject",
            &[("proposal", &ids[1]), ("comment", "not this one")],
        )
        .await;
    assert_eq!(status, 200);
    let detail = show(&d, &bulk).await;
    let b = &detail["bulk"];
    assert_eq!(
        (&b["executed"], &b["rejected"], &b["pending"]),
        (&Value::from(1), &Value::from(1), &Value::from(1)),
        "{b}"
    );
    let item_of = |p: &str| {
        detail["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["payment_no"] == p)
            .unwrap()["status"]
            .clone()
    };
    assert_eq!(item_of(&payments[0]), "EXECUTED");
    assert_eq!(item_of(&payments[1]), "REJECTED");
    assert_eq!(item_of(&payments[2]), "PENDING");
    assert_eq!(d.app.status(&payments[0]).await, "SUCCEEDED");
    assert_eq!(d.app.status(&payments[1]).await, "CREATED");
    assert_eq!(d.effects(&payments[1]).await, 0);

    // "Approve all" then takes only the one still waiting.
    let (status, started) = d
        .call(
            &d.sue,
            "bulk/approve",
            &[("bulk", &bulk), ("comment", "the rest")],
        )
        .await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["total"], 1);
    let job = finished(&d, started["job_id"].as_str().unwrap()).await;
    assert_eq!(job["done"], 1, "{job}");
    assert_eq!(d.app.status(&payments[2]).await, "SUCCEEDED");
    assert_eq!(d.app.status(&payments[1]).await, "CREATED");
    for p in [&payments[0], &payments[2]] {
        assert_eq!(d.effects(p).await, 1);
    }
    // Nothing waits any more.
    let (status, err) = d
        .call(
            &d.sue,
            "bulk/approve",
            &[("bulk", &bulk), ("comment", "again")],
        )
        .await;
    assert_eq!((status, err), (409, Value::from("ProposalDecided")));
}

async fn a_bulk_job_cancelled_half_way_keeps_what_it_did_once(b: Backend) {
    let d = desk(b).await;
    let payments = lagging(&d, "STOP", 20).await;
    let bulk = propose_all(&d, &d.olga, 20).await;
    let (status, started) = d
        .call(
            &d.sue,
            "bulk/approve",
            &[("bulk", &bulk), ("comment", "go")],
        )
        .await;
    assert_eq!(status, 200, "{started}");
    let job_id = started["job_id"].as_str().unwrap().to_owned();
    // Cancelled once a few items are done.
    loop {
        let (_, j) = d.call(&d.sue, "bulk/job", &[("id", &job_id)]).await;
        if j["done"].as_i64().unwrap() >= 3 {
            break;
        }
        assert_eq!(j["status"], "RUNNING", "{j}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // olga neither started it nor supervises.
    let (status, _) = d.call(&d.olga, "bulk/cancel", &[("id", &job_id)]).await;
    assert_eq!(status, 403);
    let (status, err) = d.call(&d.sue, "bulk/cancel", &[("id", &job_id)]).await;
    assert_eq!(status, 200, "{err}");
    let job = finished(&d, &job_id).await;
    assert_eq!(job["status"], "CANCELLED", "{job}");
    let done = job["done"].as_i64().unwrap();
    let pending = job["pending"].as_i64().unwrap();
    assert!(done >= 3 && pending > 0, "{job}");
    assert_eq!(done + pending, 20, "{job}");
    assert_eq!(job["skipped"], 0);
    assert_eq!(job["failed"], 0);

    // What ran, ran once; the rest is untouched and still waits.
    let mut paid = 0;
    for p in &payments {
        match d.app.status(p).await.as_str() {
            "SUCCEEDED" => {
                paid += 1;
                assert_eq!(d.effects(p).await, 1, "{p}");
            }
            "CREATED" => assert_eq!(d.effects(p).await, 0, "{p}"),
            other => panic!("{p} is {other}"),
        }
    }
    assert_eq!(paid, done);
    let detail = show(&d, &bulk).await;
    assert_eq!(detail["bulk"]["executed"], done);
    assert_eq!(detail["bulk"]["pending"], pending);
    // The API reads the same job with a token.
    let res = crate::helpers::client()
        .get(format!("{}/api/v1/bulk/jobs/{job_id}", d.app.app.base))
        .bearer_auth(&d.token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let read: Value = res.json().await.unwrap();
    assert_eq!(read["status"], "CANCELLED");
    assert_eq!(
        (&read["done"], &read["pending"]),
        (&job["done"], &job["pending"])
    );
    // A cancelled job stays cancelled; the audit log says who stopped it.
    let (status, _) = d.call(&d.sue, "bulk/cancel", &[("id", &job_id)]).await;
    assert_eq!(status, 409);
    assert_eq!(
        count(
            &d,
            "SELECT COUNT(*) FROM audit_log WHERE action = 'bulk.cancel' AND object_id = $1",
            &job_id
        )
        .await,
        1
    );
}

async fn bulk_assign_comment_and_close_work_every_ticket_of_a_filter(b: Backend) {
    let d = desk(b).await;
    let (_, at) = d.app.today();
    let rows: Vec<String> = (0..5)
        .map(|i| {
            row(
                "payment",
                &format!("SBX-ONLY-{i}"),
                &format!("PAYONLY{i}"),
                ("", ""),
                "12.00",
                "CNY",
                &at,
            )
        })
        .collect();
    let only = d.reconcile(&rows, "PROVIDER_ONLY").await;
    assert_eq!(only.len(), 5);
    // One of them awaits a decision: closing it is not a bulk's to do.
    let waiting = &only[2];
    d.propose_backfill(&d.olga, waiting, "ORDER-WAIT").await;
    // A ticket of another class the filter does not match.
    let (other_p, other) = d.amount_mismatch("ORDER-OTHER", "SBX-OTHER").await;
    let filter = [("scope", "filter"), ("filter[class]", "PROVIDER_ONLY")];
    let start = d.audit_head().await;

    let run = |action: &'static str, text: &'static str| {
        let mut form = vec![("action", action), ("text", text)];
        form.extend(filter);
        let d = &d;
        async move {
            let (status, started) = d.call(&d.olga, "bulk/action", &form).await;
            assert_eq!(status, 200, "{started}");
            assert_eq!(started["total"], 5);
            finished(d, started["job_id"].as_str().unwrap()).await
        }
    };
    let job = run("ASSIGN", "sam").await;
    assert_eq!(job["done"], 5, "{job}");
    let job = run("COMMENT", "checked against the bank").await;
    assert_eq!(job["done"], 5, "{job}");
    let job = run("CLOSE", "test payments of the provider's sandbox").await;
    assert_eq!(
        (&job["done"], &job["skipped"]),
        (&Value::from(4), &Value::from(1)),
        "{job}"
    );
    assert_eq!(job["exceptions"][0][0], waiting.as_str());

    for t in &only {
        let (_, detail) = d.call(&d.olga, "tickets/show", &[("id", t)]).await;
        assert_eq!(detail["summary"]["owner"], "sam", "{t}");
        let expected = if t == waiting {
            "AWAITING_APPROVAL"
        } else {
            "CLOSED"
        };
        assert_eq!(detail["summary"]["status"], expected, "{t}");
        let comments = count(
            &d,
            "SELECT COUNT(*) FROM ticket_notes WHERE discrepancy_id = $1 AND kind = 'comment'",
            t,
        )
        .await;
        assert_eq!(comments, 1, "{t}");
    }
    let (_, detail) = d.call(&d.olga, "tickets/show", &[("id", &other)]).await;
    assert_eq!(detail["summary"]["status"], "OPEN", "untouched: {other_p}");
    // Audited per ticket, by the person who started it.
    let actions = d.audit_actions(start).await;
    let by = |a: &str| {
        actions
            .iter()
            .filter(|(who, x)| who == "olga" && x == a)
            .count()
    };
    assert_eq!(
        (
            by("bulk.start"),
            by("ticket.assign"),
            by("ticket.comment"),
            by("ticket.close")
        ),
        (3, 5, 5, 4)
    );

    // Bad input is refused before anything is written.
    let (status, err) = d
        .call(
            &d.olga,
            "bulk/action",
            &[
                ("action", "ASSIGN"),
                ("text", "nobody"),
                ("scope", "filter"),
                ("filter[class]", "PROVIDER_ONLY"),
            ],
        )
        .await;
    assert_eq!(status, 400, "{err}");
    let (status, err) = d
        .call(
            &d.olga,
            "bulk/action",
            &[("action", "CLOSE"), ("text", "x"), ("scope", "")],
        )
        .await;
    assert_eq!(status, 400, "{err}");
    let many: String = (0..1001).map(|i| format!("T{i},")).collect();
    let (status, err) = d
        .call(
            &d.olga,
            "bulk/action",
            &[
                ("action", "COMMENT"),
                ("text", "x"),
                ("scope", "ids"),
                ("ids", &many),
            ],
        )
        .await;
    assert_eq!(status, 400, "{err}");
    assert!(err.to_string().contains("1000"), "{err}");
    assert_eq!(
        d.audit_actions(start).await.len(),
        actions.len(),
        "nothing written"
    );
    // Ticked tickets, by id: an unknown one is skipped and named.
    let ids = format!("{},NO-SUCH-TICKET", other);
    let (status, started) = d
        .call(
            &d.olga,
            "bulk/action",
            &[
                ("action", "COMMENT"),
                ("text", "see the bank"),
                ("scope", "ids"),
                ("ids", &ids),
            ],
        )
        .await;
    assert_eq!(status, 200, "{started}");
    let job = finished(&d, started["job_id"].as_str().unwrap()).await;
    assert_eq!(
        (&job["done"], &job["skipped"]),
        (&Value::from(1), &Value::from(1)),
        "{job}"
    );
    assert_eq!(job["exceptions"][0][0], "NO-SUCH-TICKET");
}

/// `n` PROVIDER_ONLY tickets of transactions `SBX-{prefix}-i`, in order.
async fn provider_only(d: &Desk, prefix: &str, n: usize) -> Vec<String> {
    let (_, at) = d.app.today();
    let rows: Vec<String> = (0..n)
        .map(|i| {
            row(
                "payment",
                &format!("SBX-{prefix}-{i}"),
                &format!("PAY{prefix}{i}"),
                ("", ""),
                "12.00",
                "CNY",
                &at,
            )
        })
        .collect();
    let tickets = d.reconcile(&rows, "PROVIDER_ONLY").await;
    assert_eq!(tickets.len(), n);
    tickets
}

/// `who` closes the tickets `ids` with one conclusion; the ended job.
async fn bulk_close(d: &Desk, who: &reqwest::Client, ids: &[String], conclusion: &str) -> Value {
    let ids = ids.join(",");
    let (status, started) = d
        .call(
            who,
            "bulk/action",
            &[
                ("action", "CLOSE"),
                ("text", conclusion),
                ("scope", "ids"),
                ("ids", &ids),
            ],
        )
        .await;
    assert_eq!(status, 200, "{started}");
    finished(d, started["job_id"].as_str().unwrap()).await
}

/// A ticket's status, conclusion and close time.
async fn ticket_state(d: &Desk, id: &str) -> (String, Option<String>, Option<i64>) {
    sqlx::query_as(
        "SELECT status, conclusion, closed_at FROM discrepancies WHERE discrepancy_id = $1",
    )
    .bind(id)
    .fetch_one(d.app.pool())
    .await
    .unwrap()
}

/// Whether ticket `id`'s SLA alert stands unresolved.
async fn sla_alert_open(d: &Desk, id: &str) -> bool {
    let key = reckon::triage::sla::sla_key(id);
    let sql = "SELECT COUNT(*) FROM alerts WHERE dedupe_key = $1 AND resolved_at IS NULL";
    count(d, sql, &key).await == 1
}

async fn a_bulk_close_undone_in_its_window_reopens_only_the_tickets_it_closed(b: Backend) {
    let d = desk(b).await;
    let t = provider_only(&d, "UNDO", 5).await;
    // Every ticket is overdue and alerted.
    let engine = d.app.app_engine();
    let overdue = engine.now() + 30 * 24 * 3_600_000_000;
    let alerted = reckon::triage::sla::raise_overdue(&engine, overdue)
        .await
        .unwrap();
    assert_eq!(alerted, 5);
    // One awaits a decision (the close skips it); one was closed by hand
    // before (the close skips it too). Neither is the undo's to reopen.
    let waiting = &t[2];
    d.propose_backfill(&d.olga, waiting, "ORDER-UNDO-WAIT")
        .await;
    let by_hand = &t[4];
    let (status, err) = d
        .call(
            &d.sam,
            "tickets/conclude",
            &[
                ("id", by_hand),
                ("conclusion", "duplicate of another ticket"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{err}");
    // Nothing ticked: refused, nothing written.
    let start = d.audit_head().await;
    let (status, err) = d
        .call(
            &d.olga,
            "bulk/action",
            &[
                ("action", "CLOSE"),
                ("text", "x"),
                ("scope", "ids"),
                ("ids", ""),
            ],
        )
        .await;
    assert_eq!(status, 400, "{err}");
    assert!(d.audit_actions(start).await.is_empty(), "nothing written");

    let conclusion = "sandbox test charges";
    let job = bulk_close(&d, &d.olga, &t, conclusion).await;
    assert_eq!(
        (&job["done"], &job["skipped"]),
        (&Value::from(3), &Value::from(2)),
        "{job}"
    );
    let close_job = job["id"].as_str().unwrap().to_owned();
    let ended = job["finished_at"].as_i64().unwrap();
    assert_eq!(job["undo_until"], ended + 10 * 60 * 1_000_000, "{job}");
    let closed = [&t[0], &t[1], &t[3]];
    for id in closed {
        assert_eq!(ticket_state(&d, id).await.0, "CLOSED", "{id}");
        assert!(
            !sla_alert_open(&d, id).await,
            "closing resolves {id}'s alert"
        );
    }

    // Nine minutes on, olga (who started it) undoes it.
    d.app.clock.advance_secs(9 * 60);
    let start = d.audit_head().await;
    let (status, started) = d.call(&d.olga, "bulk/undo", &[("id", &close_job)]).await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["total"], 3, "{started}");
    let reopening = finished(&d, started["job_id"].as_str().unwrap()).await;
    assert_eq!(reopening["kind"], "REOPEN", "{reopening}");
    assert_eq!(
        (
            &reopening["done"],
            &reopening["skipped"],
            &reopening["failed"]
        ),
        (&Value::from(3), &Value::from(0), &Value::from(0)),
        "{reopening}"
    );
    for id in closed {
        assert_eq!(
            ticket_state(&d, id).await,
            ("IN_PROGRESS".to_owned(), None, None),
            "{id}"
        );
        let notes = count(
            &d,
            "SELECT COUNT(*) FROM ticket_notes WHERE discrepancy_id = $1 AND kind = 'reopen'",
            id,
        )
        .await;
        assert_eq!(notes, 1, "{id}");
        assert!(
            sla_alert_open(&d, id).await,
            "reopening brings {id}'s alert back"
        );
    }
    assert!(
        !sla_alert_open(&d, by_hand).await,
        "closed by hand: stays resolved"
    );
    assert!(sla_alert_open(&d, waiting).await);
    assert_eq!(ticket_state(&d, waiting).await.0, "AWAITING_APPROVAL");
    let (status, kept, closed_at) = ticket_state(&d, by_hand).await;
    assert_eq!(
        (status.as_str(), kept.as_deref()),
        ("CLOSED", Some("duplicate of another ticket"))
    );
    assert!(closed_at.is_some());
    // Audited: the undo on the close job, the reopening job, each ticket.
    let actions = d.audit_actions(start).await;
    let by = |a: &str| {
        actions
            .iter()
            .filter(|(who, x)| who == "olga" && x == a)
            .count()
    };
    assert_eq!(
        (by("bulk.undo"), by("bulk.start"), by("ticket.reopen")),
        (1, 1, 3),
        "{actions:?}"
    );
    assert_eq!(actions.len(), 5, "{actions:?}");
    let (_, job) = d.call(&d.olga, "bulk/job", &[("id", &close_job)]).await;
    assert_eq!(job["undone_by"], reopening["id"], "{job}");
    assert_eq!(job["undo_until"], Value::Null, "{job}");

    // Once only: a second undo is refused and writes nothing.
    let start = d.audit_head().await;
    let (status, err) = d.call(&d.sam, "bulk/undo", &[("id", &close_job)]).await;
    assert_eq!(status, 409, "{err}");
    assert!(d.audit_actions(start).await.is_empty());
    // Reopened tickets are worked again: closing them again is allowed.
    let again = bulk_close(&d, &d.olga, &[t[0].clone()], "closed after all").await;
    assert_eq!(again["done"], 1, "{again}");
}

async fn a_bulk_close_is_not_undone_after_its_window_nor_by_another_operator(b: Backend) {
    let d = desk(b).await;
    let t = provider_only(&d, "LATE", 2).await;
    let job = bulk_close(&d, &d.olga, &t, "test payments").await;
    assert_eq!(job["done"], 2, "{job}");
    let close_job = job["id"].as_str().unwrap().to_owned();

    // Neither another operator nor a comment job's undo.
    d.app
        .app
        .add_user("otto", Role::Operator, "correct horse battery")
        .await;
    let otto = crate::helpers::client();
    let res = d
        .app
        .app
        .call_with(
            &otto,
            "login",
            &[("username", "otto"), ("password", "correct horse battery")],
        )
        .await;
    assert!(res.status().is_success() || res.status().is_redirection());
    let (status, _) = d.call(&otto, "bulk/undo", &[("id", &close_job)]).await;
    assert_eq!(status, 403);
    let ids = t.join(",");
    let (status, started) = d
        .call(
            &d.olga,
            "bulk/action",
            &[
                ("action", "COMMENT"),
                ("text", "checked"),
                ("scope", "ids"),
                ("ids", &ids),
            ],
        )
        .await;
    assert_eq!(status, 200, "{started}");
    let comment_job = finished(&d, started["job_id"].as_str().unwrap()).await;
    assert_eq!(comment_job["undo_until"], Value::Null);
    let (status, err) = d
        .call(
            &d.olga,
            "bulk/undo",
            &[("id", comment_job["id"].as_str().unwrap())],
        )
        .await;
    assert_eq!(status, 400, "{err}");

    // Ten minutes and a second after it ended: too late, nothing written.
    d.app.clock.advance_secs(10 * 60 + 1);
    let (_, job) = d.call(&d.olga, "bulk/job", &[("id", &close_job)]).await;
    assert_eq!(job["undo_until"], Value::Null, "no longer offered: {job}");
    let start = d.audit_head().await;
    let (status, err) = d.call(&d.sam, "bulk/undo", &[("id", &close_job)]).await;
    assert_eq!(
        (status, &err),
        (
            409,
            &serde_json::json!({ "UndoExpired": { "minutes": 10 } })
        )
    );
    assert!(d.audit_actions(start).await.is_empty(), "nothing written");
    for id in &t {
        assert_eq!(ticket_state(&d, id).await.0, "CLOSED", "{id}");
    }
    let (_, job) = d.call(&d.olga, "bulk/job", &[("id", &close_job)]).await;
    assert_eq!(job["undone_by"], Value::Null, "{job}");
}

both_databases!(
    a_bulk_backfill_is_approved_by_another_supervisor_and_a_stale_item_skipped,
    a_bulk_proposal_is_decided_item_by_item,
    a_bulk_job_cancelled_half_way_keeps_what_it_did_once,
    bulk_assign_comment_and_close_work_every_ticket_of_a_filter,
    a_bulk_close_undone_in_its_window_reopens_only_the_tickets_it_closed,
    a_bulk_close_is_not_undone_after_its_window_nor_by_another_operator,
);
