//! The day's edge, on SQLite and PostgreSQL against a real server: a
//! payment (or refund) finished just before a business day's cut and
//! booked by the provider in the next day's statement — and the reverse —
//! is in transit, never a ticket, while the neighbouring statement is to
//! come; it matches when that statement carries it, whichever run comes
//! first, and is LOCAL_ONLY (REFUND_MISMATCH) with its hold and alert when
//! that statement comes without it. Re-runs of either day, in either
//! order, change none of it. A payment inside the day missing from its
//! statement is LOCAL_ONLY at once.

use crate::both_databases;
use crate::engine_helpers::{EngineApp, spawn_engine_app_with};
use crate::helpers::Backend;
use crate::recon::row;
use serde_json::json;

/// Two business days at the cut (UTC, the test server's zone): `d` is
/// yesterday, `d1` today, so every time used is in the recent past.
struct Edge {
    app: EngineApp,
    token: String,
    d: String,
    d1: String,
}

/// A payment's time as a statement writes it and as the clock takes it.
pub(crate) fn at(date: &str, time: &str) -> (String, i64) {
    let text = format!("{date}T{time}Z");
    let ts: jiff::Timestamp = text.parse().unwrap();
    (text, ts.as_microsecond())
}

impl Edge {
    async fn new(b: Backend) -> Edge {
        // The default window, 30 minutes, set as an operator would.
        // Days re-run here stay open: no close by itself.
        let app = spawn_engine_app_with(b, |c| {
            c.cut_window.minutes = 30;
            c.close_auto = false;
        })
        .await;
        let token = app.token().await;
        let (today, _) = app.today();
        let d1: jiff::civil::Date = today.parse().unwrap();
        Edge {
            d: d1.yesterday().unwrap().to_string(),
            d1: d1.to_string(),
            app,
            token,
        }
    }

    /// A payment of `minor` paid, as the clock says, at `when`.
    async fn paid_at(&self, order: &str, minor: i64, major: &str, when: i64) -> String {
        self.app.clock.set(when);
        self.app
            .paid_with(order, minor, major, &format!("SBX-{order}"))
            .await
    }

    /// A statement of `date` with `rows` run (`variant`: see
    /// `reconcile_day`); its figures.
    async fn run(&self, date: &str, rows: &[String], variant: usize) -> serde_json::Value {
        self.app
            .reconcile_day(&self.token, date, rows, variant)
            .await
    }

    /// The statement row of payment `no` (made for order `order`).
    fn row_of(order: &str, no: &str, major: &str, booked: &str) -> String {
        row(
            "payment",
            &format!("SBX-{order}"),
            no,
            ("", ""),
            major,
            "CNY",
            booked,
        )
    }

    /// Every reconciliation ticket: class, status, business day, payment;
    /// sorted.
    async fn tickets(&self) -> Vec<(String, String, String, Option<String>)> {
        let mut all: Vec<(String, String, String, Option<String>)> = sqlx::query_as(
            "SELECT class, status, business_date, payment_no FROM discrepancies WHERE source = 'recon'",
        )
        .fetch_all(self.app.pool())
        .await
        .unwrap();
        all.sort();
        all
    }

    async fn held(&self, no: &str) -> bool {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM payment_holds WHERE payment_no = $1")
            .bind(no)
            .fetch_one(self.app.pool())
            .await
            .unwrap();
        n > 0
    }

    /// The figures the API shows for a day now (its latest run's, with
    /// what is in transit as of now).
    async fn day(&self, date: &str) -> serde_json::Value {
        let res = self
            .app
            .app
            .client
            .get(format!(
                "{}/api/v1/recon/days?from={date}&to={date}",
                self.app.app.base
            ))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        let days: serde_json::Value = res.json().await.unwrap();
        days["days"][0]["figures"].clone()
    }

    /// A mid-day payment of `date`, listed by each statement of that day,
    /// so the day has something matched beside the edge.
    async fn midday(&self, date: &str, order: &str) -> String {
        let (booked, when) = at(date, "12:00:00");
        let no = self.paid_at(order, 100, "1.00", when).await;
        Edge::row_of(order, &no, "1.00", &booked)
    }
}

/// Before the cut, booked after: in transit in D (no ticket, hold or
/// alert; pending), matched when D+1's statement carries it — D first,
/// then D+1 first; re-runs of both days change nothing.
async fn paid_before_the_cut_and_booked_after_matches_across_the_two_runs(b: Backend) {
    let e = Edge::new(b).await;
    let m0 = e.midday(&e.d, "E1-M0").await;
    let m1 = e.midday(&e.d1, "E1-M1").await;
    let (_, when) = at(&e.d, "23:59:58");
    let p = e.paid_at("E1-P", 5000, "50.00", when).await;
    let (booked, _) = at(&e.d1, "00:00:03");
    let carried = Edge::row_of("E1-P", &p, "50.00", &booked);

    let f = e.run(&e.d, std::slice::from_ref(&m0), 0).await;
    assert_eq!(f["in_transit"], 1, "{f}");
    assert_eq!(f["classes"]["IN_TRANSIT"], 1, "{f}");
    assert!(f["pending"].as_i64().unwrap() >= 1, "{f}");
    assert!(f["classes"].get("LOCAL_ONLY").is_none(), "{f}");
    assert!(e.tickets().await.is_empty(), "{:?}", e.tickets().await);
    assert!(!e.held(&p).await);
    assert!(e.app.alert_kinds(&p).await.is_empty());

    let f = e.run(&e.d1, &[m1.clone(), carried.clone()], 0).await;
    assert_eq!(f["edge_arrived"], 1, "{f}");
    assert_eq!(f["matched"], 2, "{f}");
    assert!(e.tickets().await.is_empty(), "{:?}", e.tickets().await);
    // D's figures as of now: nothing in transit any more.
    let now = e.day(&e.d).await;
    assert_eq!(now["in_transit"], 0, "{now}");
    assert!(now["classes"].get("IN_TRANSIT").is_none(), "{now}");

    // Re-runs, D then D+1 then D again: the same, and nothing opened.
    let f = e.run(&e.d, std::slice::from_ref(&m0), 1).await;
    assert_eq!(f["edge_matched"], 1, "{f}");
    assert_eq!(f["in_transit"], 0, "{f}");
    assert_eq!(f["matched"], 2, "{f}");
    let f = e.run(&e.d1, &[carried, m1], 1).await;
    assert_eq!(f["edge_arrived"], 1, "{f}");
    assert!(e.tickets().await.is_empty(), "{:?}", e.tickets().await);
    assert!(!e.held(&p).await);
    assert_eq!(e.app.count("payment_effects", &p).await, 1);
}

/// D+1's statement reconciled before D's: it carries the payment, and D's
/// run then matches it at once.
async fn the_next_days_run_first_carries_it_and_the_day_then_matches(b: Backend) {
    let e = Edge::new(b).await;
    let (_, when) = at(&e.d, "23:59:58");
    let p = e.paid_at("E2-P", 5000, "50.00", when).await;
    let (booked, _) = at(&e.d1, "00:00:03");
    let f = e
        .run(&e.d1, &[Edge::row_of("E2-P", &p, "50.00", &booked)], 0)
        .await;
    assert_eq!(f["edge_arrived"], 1, "{f}");
    let f = e.run(&e.d, &[], 0).await;
    assert_eq!(
        (f["edge_matched"].as_i64(), f["in_transit"].as_i64()),
        (Some(1), Some(0)),
        "{f}"
    );
    assert_eq!(f["matched"], 1, "{f}");
    assert!(e.tickets().await.is_empty(), "{:?}", e.tickets().await);
    assert!(!e.held(&p).await);
}

/// D+1's statement without it: LOCAL_ONLY on D, held and alerted — found
/// by D+1's run after D's, or by D's run after D+1's. Re-runs keep one
/// ticket; a later statement of D+1 that carries it closes the ticket.
async fn the_next_statement_without_it_makes_it_local_only_in_either_order(b: Backend) {
    let e = Edge::new(b).await;
    let (_, when) = at(&e.d, "23:59:40");
    let p = e.paid_at("E3-P", 5000, "50.00", when).await;
    let (_, when) = at(&e.d, "23:59:50");
    let q = e.paid_at("E3-Q", 700, "7.00", when).await;
    let m1 = e.midday(&e.d1, "E3-M1").await;

    // P: D first (in transit), then D+1 without it.
    let f = e.run(&e.d, &[], 0).await;
    assert_eq!(f["in_transit"], 2, "{f}");
    assert!(e.tickets().await.is_empty());
    let f = e.run(&e.d1, std::slice::from_ref(&m1), 0).await;
    assert_eq!(f["edge_missing"], 2, "{f}");
    let want = |status: &str| {
        let mut t = vec![
            (
                "LOCAL_ONLY".to_owned(),
                status.to_owned(),
                e.d.clone(),
                Some(p.clone()),
            ),
            (
                "LOCAL_ONLY".to_owned(),
                "OPEN".to_owned(),
                e.d.clone(),
                Some(q.clone()),
            ),
        ];
        t.sort();
        t
    };
    assert_eq!(e.tickets().await, want("OPEN"));
    assert!(e.held(&p).await && e.held(&q).await);
    assert_eq!(e.app.alert_kinds(&p).await, ["local_only"]);
    // D's figures: no longer in transit.
    assert_eq!(e.day(&e.d).await["in_transit"], 0);

    // Re-runs of D and D+1 (other files, same rows): one ticket each still.
    let f = e.run(&e.d, &[], 1).await;
    assert_eq!(f["classes"]["LOCAL_ONLY"], 2, "{f}");
    assert_eq!(f["in_transit"], 0, "{f}");
    let f = e.run(&e.d1, std::slice::from_ref(&m1), 1).await;
    assert_eq!(f["edge_missing"], 0, "{f}");
    assert_eq!(e.tickets().await, want("OPEN"));
    assert_eq!(e.app.alert_kinds(&p).await, ["local_only"]);

    // A corrected statement of D+1 carries P after all: its ticket closes
    // (the hold stays for a person to release); Q's stays open.
    let (booked, _) = at(&e.d1, "00:00:01");
    let f = e
        .run(
            &e.d1,
            &[m1.clone(), Edge::row_of("E3-P", &p, "50.00", &booked)],
            0,
        )
        .await;
    assert_eq!(f["edge_arrived"], 1, "{f}");
    assert_eq!(e.tickets().await, want("CLOSED"));
    let conclusion: String =
        sqlx::query_scalar("SELECT conclusion FROM discrepancies WHERE payment_no = $1")
            .bind(&p)
            .fetch_one(e.app.pool())
            .await
            .unwrap();
    assert!(conclusion.contains(&e.d1), "{conclusion}");
    assert!(e.held(&p).await, "released only by a person");
    // And D again: P matched through D+1's statement, Q still absent.
    let f = e.run(&e.d, &[], 2).await;
    assert_eq!(f["edge_matched"], 1, "{f}");
    assert_eq!(f["classes"]["LOCAL_ONLY"], 1, "{f}");
    assert_eq!(e.tickets().await, want("CLOSED"));

    // The other order: D+1 reconciled first without R, then D.
    let e = Edge::new(b).await;
    let (_, when) = at(&e.d, "23:59:58");
    let r = e.paid_at("E3-R", 900, "9.00", when).await;
    let f = e.run(&e.d1, &[], 0).await;
    assert_eq!(f["edge_missing"], 0, "{f}");
    assert!(e.tickets().await.is_empty());
    let f = e.run(&e.d, &[], 0).await;
    assert_eq!(f["in_transit"], 0, "{f}");
    assert_eq!(
        e.tickets().await,
        [(
            "LOCAL_ONLY".to_owned(),
            "OPEN".to_owned(),
            e.d.clone(),
            Some(r.clone())
        )]
    );
    assert!(e.held(&r).await);
    assert_eq!(e.app.alert_kinds(&r).await, ["local_only"]);
}

/// Paid just after the cut (D+1 00:00:02), booked by the provider in D at
/// 23:59:59: D's row matches it (no PROVIDER_ONLY) and D+1's run does not
/// call it LOCAL_ONLY. D+1 reconciled first: such payments are in transit
/// (to D's statement); D's carries one (matched) and not the other
/// (LOCAL_ONLY on D+1, found by D's run); a re-run of D+1 keeps both so.
async fn paid_after_the_cut_and_booked_before_matches_the_earlier_statement(b: Backend) {
    let e = Edge::new(b).await;
    let (_, when) = at(&e.d1, "00:00:02");
    let p = e.paid_at("E4-P", 3000, "30.00", when).await;
    let (booked, _) = at(&e.d, "23:59:59");
    let early = Edge::row_of("E4-P", &p, "30.00", &booked);
    let f = e.run(&e.d, std::slice::from_ref(&early), 0).await;
    assert_eq!(
        (f["matched"].as_i64(), f["edge_arrived"].as_i64()),
        (Some(1), Some(1)),
        "{f}"
    );
    let f = e.run(&e.d1, &[], 0).await;
    assert_eq!(f["edge_matched"], 1, "{f}");
    assert!(f["classes"].get("LOCAL_ONLY").is_none(), "{f}");
    assert!(e.tickets().await.is_empty(), "{:?}", e.tickets().await);

    // D+1 first.
    let e = Edge::new(b).await;
    let (_, when) = at(&e.d1, "00:00:05");
    let q = e.paid_at("E4-Q", 400, "4.00", when).await;
    let (_, when) = at(&e.d1, "00:01:00");
    let s = e.paid_at("E4-S", 600, "6.00", when).await;
    let f = e.run(&e.d1, &[], 0).await;
    assert_eq!(f["in_transit"], 2, "{f}");
    assert!(e.tickets().await.is_empty(), "{:?}", e.tickets().await);
    assert_eq!(e.day(&e.d1).await["in_transit"], 2);
    let (booked, _) = at(&e.d, "23:59:58");
    let f = e
        .run(&e.d, &[Edge::row_of("E4-Q", &q, "4.00", &booked)], 0)
        .await;
    assert_eq!(
        (f["edge_arrived"].as_i64(), f["edge_missing"].as_i64()),
        (Some(1), Some(1)),
        "{f}"
    );
    assert_eq!(e.day(&e.d1).await["in_transit"], 0);
    let want = [(
        "LOCAL_ONLY".to_owned(),
        "OPEN".to_owned(),
        e.d1.clone(),
        Some(s.clone()),
    )];
    assert_eq!(e.tickets().await, want);
    assert!(e.held(&s).await && !e.held(&q).await);
    assert_eq!(e.app.alert_kinds(&s).await, ["local_only"]);
    let f = e.run(&e.d1, &[], 1).await;
    assert_eq!(
        (f["edge_matched"].as_i64(), f["in_transit"].as_i64()),
        (Some(1), Some(0)),
        "{f}"
    );
    assert_eq!(f["classes"]["LOCAL_ONLY"], 1, "{f}");
    assert_eq!(e.tickets().await, want);
}

/// The window hides no loss: a payment paid mid-day (or an hour before
/// the cut, outside the 30-minute window) and absent from its statement is
/// LOCAL_ONLY at once, with D+1 not reconciled yet.
async fn a_payment_inside_the_day_missing_is_local_only_at_once(b: Backend) {
    let e = Edge::new(b).await;
    let (_, noon) = at(&e.d, "12:00:00");
    let p = e.paid_at("E5-P", 1000, "10.00", noon).await;
    let (_, hour) = at(&e.d, "23:00:00");
    let q = e.paid_at("E5-Q", 1000, "10.00", hour).await;
    let f = e.run(&e.d, &[], 0).await;
    assert_eq!(f["in_transit"], 0, "{f}");
    let mut want = vec![
        (
            "LOCAL_ONLY".to_owned(),
            "OPEN".to_owned(),
            e.d.clone(),
            Some(p.clone()),
        ),
        (
            "LOCAL_ONLY".to_owned(),
            "OPEN".to_owned(),
            e.d.clone(),
            Some(q.clone()),
        ),
    ];
    want.sort();
    assert_eq!(e.tickets().await, want);
    assert!(e.held(&p).await && e.held(&q).await);
}

/// A refund succeeded just before the cut and booked in the next
/// statement: in transit, then matched; one that the next statement does
/// not carry is REFUND_MISMATCH on its own day.
async fn a_refund_at_the_edge_waits_for_the_next_statement(b: Backend) {
    let e = Edge::new(b).await;
    let (paid_booked, noon) = at(&e.d, "12:00:00");
    let p = e.paid_at("E6-P", 10000, "100.00", noon).await;
    let paid_row = Edge::row_of("E6-P", &p, "100.00", &paid_booked);
    let refund = |key: &'static str, minor: i64| {
        let app = &e.app;
        let token = &e.token;
        let p = p.clone();
        async move {
            let res = app
                .app
                .client
                .post(format!("{}/api/v1/payments/{p}/refunds", app.app.base))
                .bearer_auth(token)
                .header("idempotency-key", key)
                .json(&json!({"amount_minor": minor, "reason": "returned"}))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 201);
            let refund: serde_json::Value = res.json().await.unwrap();
            let no = refund["refund_no"].as_str().unwrap().to_owned();
            let engine = app.app_engine();
            reckon::workers::run_provider_tasks(&engine, engine.now())
                .await
                .unwrap();
            app.sandbox.settle_refund(&no, true);
            for _ in 0..200 {
                let s: String = crate::reads::refund_status(app.pool(), &no).await;
                if s == "SUCCEEDED" {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            let id = app.sandbox.refund(&no).unwrap().refund_id;
            (no, id)
        }
    };
    app_put(&e, &p, "E6-P");
    // The sandbox signs its refund callbacks with the real time.
    e.app.clock.set(jiff::Timestamp::now().as_microsecond());
    let (r1, id1) = refund("e6-r1", 2500).await;
    let (r2, _) = refund("e6-r2", 1000).await;
    // Both succeeded just before the cut (the sandbox signs its callbacks
    // with the real time, so they are settled now and dated here).
    let (_, when) = at(&e.d, "23:59:50");
    sqlx::query(
        "UPDATE refunds SET finished_at = $1 WHERE payment_no = $2 AND status = 'SUCCEEDED'",
    )
    .bind(when)
    .bind(&p)
    .execute(e.app.pool())
    .await
    .unwrap();

    let f = e.run(&e.d, std::slice::from_ref(&paid_row), 0).await;
    assert_eq!(f["in_transit"], 2, "{f}");
    assert!(e.tickets().await.is_empty(), "{:?}", e.tickets().await);
    let (booked, _) = at(&e.d1, "00:00:04");
    let refund_row = row(
        "refund",
        "SBX-E6-P",
        &p,
        (&id1, &r1),
        "25.00",
        "CNY",
        &booked,
    );
    let f = e.run(&e.d1, std::slice::from_ref(&refund_row), 0).await;
    assert_eq!(
        (f["edge_arrived"].as_i64(), f["edge_missing"].as_i64()),
        (Some(1), Some(1)),
        "{f}"
    );
    assert_eq!(f["matched"], 1, "{f}");
    assert_eq!(
        e.tickets().await,
        [(
            "REFUND_MISMATCH".to_owned(),
            "OPEN".to_owned(),
            e.d.clone(),
            Some(p.clone())
        )]
    );
    let key: String = sqlx::query_scalar("SELECT dedupe_key FROM discrepancies")
        .fetch_one(e.app.pool())
        .await
        .unwrap();
    assert!(key.ends_with(&r2), "{key}");
    // Re-runs of both days: the same one ticket.
    let f = e.run(&e.d, &[paid_row], 1).await;
    assert_eq!(
        (f["edge_matched"].as_i64(), f["in_transit"].as_i64()),
        (Some(1), Some(0)),
        "{f}"
    );
    e.run(&e.d1, &[refund_row], 1).await;
    assert_eq!(e.tickets().await.len(), 1);
}

/// In transit to a statement that never comes: once that statement is
/// overdue (its ready time, 02:00 the day after, plus the six
/// missing-statement hours), the pass makes the payment LOCAL_ONLY with its
/// hold and alert — once; the late statement that then carries it closes
/// the ticket.
async fn in_transit_to_an_overdue_statement_is_local_only(b: Backend) {
    let e = Edge::new(b).await;
    let m0 = e.midday(&e.d, "E7-M0").await;
    let (_, when) = at(&e.d, "23:50:00");
    let p = e.paid_at("E7-P", 700, "7.00", when).await;
    let f = e.run(&e.d, std::slice::from_ref(&m0), 0).await;
    assert_eq!(f["in_transit"], 1, "{f}");
    let engine = e.app.app_engine();
    let d2 =
        e.d1.parse::<jiff::civil::Date>()
            .unwrap()
            .tomorrow()
            .unwrap()
            .to_string();
    // Not yet overdue at 07:59 the day after D+1: nothing.
    let (_, early) = at(&d2, "07:59:00");
    assert_eq!(
        reckon::recon::expire_overdue(&engine, early).await.unwrap(),
        0
    );
    assert!(e.tickets().await.is_empty(), "{:?}", e.tickets().await);
    let (_, late) = at(&d2, "08:00:01");
    assert_eq!(
        reckon::recon::expire_overdue(&engine, late).await.unwrap(),
        1
    );
    assert_eq!(
        e.tickets().await,
        [(
            "LOCAL_ONLY".into(),
            "OPEN".into(),
            e.d.clone(),
            Some(p.clone())
        )]
    );
    assert!(e.held(&p).await);
    assert!(!e.app.alert_kinds(&p).await.is_empty());
    // Once: the record is MISSING now.
    assert_eq!(
        reckon::recon::expire_overdue(&engine, late).await.unwrap(),
        0
    );
    assert_eq!(e.day(&e.d).await["in_transit"], 0);
    // The late statement carries it after all: the ticket closes.
    let (booked, _) = at(&e.d1, "00:00:05");
    let m1 = e.midday(&e.d1, "E7-M1").await;
    e.run(&e.d1, &[Edge::row_of("E7-P", &p, "7.00", &booked), m1], 0)
        .await;
    assert_eq!(
        e.tickets().await,
        [(
            "LOCAL_ONLY".into(),
            "CLOSED".into(),
            e.d.clone(),
            Some(p.clone())
        )]
    );
}

/// The sandbox knows payment `no` as paid (its refunds go through).
fn app_put(e: &Edge, no: &str, order: &str) {
    e.app.sandbox.put(reckon::providers::sandbox::PaymentData {
        payment_no: no.to_owned(),
        txn_id: format!("SBX-{order}"),
        status: "SUCCEEDED".into(),
        amount: "100.00".into(),
        currency: "CNY".into(),
    });
}

both_databases!(
    paid_before_the_cut_and_booked_after_matches_across_the_two_runs,
    the_next_days_run_first_carries_it_and_the_day_then_matches,
    the_next_statement_without_it_makes_it_local_only_in_either_order,
    paid_after_the_cut_and_booked_before_matches_the_earlier_statement,
    a_payment_inside_the_day_missing_is_local_only_at_once,
    a_refund_at_the_edge_waits_for_the_next_statement,
    in_transit_to_an_overdue_statement_is_local_only,
);
