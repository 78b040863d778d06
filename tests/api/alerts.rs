//! Alerts, the dashboard's reconciliation and a supervisor's queue through
//! the console's server functions, with real sessions, on SQLite and
//! PostgreSQL: an SLA alert resolving when its ticket closes, the alert
//! list's filters, pages and bulk acknowledgement, the day's figures adding
//! up on a real reconciled day, and what waits for each supervisor.

use crate::both_databases;
use crate::helpers::Backend;
use crate::recon::{row, statement};
use crate::triage::{Desk, desk, desk_with};
use reckon::store::alerts::{NewAlert, raise_alert};
use serde_json::Value;

const HOUR: i64 = 3_600_000_000;

impl Desk {
    /// The alert list as `who` reads it with `form` (`filter[...]`).
    async fn alerts(&self, form: &[(&str, &str)]) -> Value {
        let (status, page) = self.call(&self.olga, "alerts/list", form).await;
        assert_eq!(status, 200, "{page}");
        page
    }

    /// Every alert `form` lists, page after page; the ids, in order.
    async fn all_alerts(&self, form: &[(&str, &str)]) -> Vec<String> {
        let mut ids = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let mut f = form.to_vec();
            if let Some(a) = after.as_deref() {
                f.push(("filter[after]", a));
            }
            let page = self.alerts(&f).await;
            let items = page["items"].as_array().unwrap();
            assert!(items.len() <= 50, "a page is at most 50");
            ids.extend(items.iter().map(|a| a["id"].as_str().unwrap().to_owned()));
            match page["next"].as_str() {
                Some(n) => after = Some(n.to_owned()),
                None => return ids,
            }
        }
    }

    /// `n` alerts of `kind` and `severity`, a second apart.
    async fn raise(&self, kind: &str, severity: &str, n: usize) {
        let engine = self.app.app_engine();
        for i in 0..n {
            let key = format!("{kind}:{i}");
            let message = format!("{kind} number {i}");
            raise_alert(
                &engine.db.pool,
                &NewAlert {
                    dedupe_key: &key,
                    kind: kind.parse().unwrap(),
                    severity: severity.parse().unwrap(),
                    payment_no: None,
                    message: &message,
                    trace_id: None,
                    now: engine.now(),
                },
            )
            .await
            .unwrap();
            self.app.clock.advance_secs(1);
        }
    }

    async fn dashboard(&self, who: &reqwest::Client, day: &str) -> Value {
        let (status, dash) = self
            .call(who, "dashboard", &[("day", day), ("provider", "sandbox")])
            .await;
        assert_eq!(status, 200, "{dash}");
        dash
    }
}

fn kind_count(dash: &Value, kind: &str) -> Option<i64> {
    dash["alerts_by_kind"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k[0] == kind)
        .map(|k| k[1].as_i64().unwrap())
}

async fn an_sla_alert_resolves_when_its_ticket_closes(b: Backend) {
    let d = desk_with(b, |c| {
        c.sla = reckon::domain::Sla::parse("PROVIDER_ONLY=1").unwrap()
    })
    .await;
    let ticket = d.provider_only("PAYSLA1", "SBX-SLA-1").await;
    let engine = d.app.app_engine();
    let later = engine.now() + 2 * HOUR;
    assert_eq!(
        reckon::triage::sla::raise_overdue(&engine, later)
            .await
            .unwrap(),
        1
    );
    d.app.clock.set(later);
    let key = reckon::triage::sla::sla_key(&ticket);
    let alert: String = sqlx::query_scalar("SELECT alert_id FROM alerts WHERE dedupe_key = $1")
        .bind(&key)
        .fetch_one(d.app.pool())
        .await
        .unwrap();

    // Open: listed as open, linked to its ticket, counted on the dashboard.
    let open = d
        .alerts(&[("filter[state]", "open"), ("filter[kind]", "sla_overdue")])
        .await;
    let items = open["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{open}");
    assert_eq!(items[0]["id"], alert.as_str());
    assert_eq!(items[0]["state"], "open");
    assert_eq!(items[0]["links"][0]["what"], "ticket", "{open}");
    assert_eq!(
        items[0]["links"][0]["href"],
        format!("/tickets/{ticket}").as_str()
    );
    let (day, _) = d.app.today();
    let dash = d.dashboard(&d.olga, &day).await;
    assert_eq!(kind_count(&dash, "sla_overdue"), Some(1), "{dash}");

    // The ticket closes: the alert is resolved with it, not left open.
    let (status, body) = d
        .call(
            &d.olga,
            "tickets/conclude",
            &[("id", &ticket), ("conclusion", "explained: a test row")],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let open = d
        .alerts(&[("filter[state]", "open"), ("filter[kind]", "sla_overdue")])
        .await;
    assert_eq!(open["items"].as_array().unwrap().len(), 0, "{open}");
    let resolved = d.alerts(&[("filter[state]", "resolved")]).await;
    let mine: Vec<&Value> = resolved["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["id"] == alert.as_str())
        .collect();
    assert_eq!(mine.len(), 1, "{resolved}");
    assert_eq!(mine[0]["state"], "resolved");
    assert_eq!(mine[0]["resolved_reason"], "ticket closed");
    assert_eq!(mine[0]["resolved_at"].as_i64(), Some(engine.now()));
    let dash = d.dashboard(&d.olga, &day).await;
    assert_eq!(kind_count(&dash, "sla_overdue"), None, "{dash}");
    // Nothing to acknowledge any more; another pass raises nothing again.
    let (status, _) = d
        .call(
            &d.olga,
            "alerts/acknowledge",
            &[("id", &alert), ("comment", "seen")],
        )
        .await;
    assert_eq!(status, 404);
    assert_eq!(
        reckon::triage::sla::raise_overdue(&engine, later + HOUR)
            .await
            .unwrap(),
        0
    );
}

async fn alerts_filter_page_and_are_acknowledged_in_bulk(b: Backend) {
    let d = desk(b).await;
    d.raise("queries_exhausted", "warning", 55).await;
    d.raise("out_of_order", "high", 5).await;
    let total: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM alerts")
        .fetch_one(d.app.pool())
        .await
        .unwrap();

    // An empty filter: every alert once, newest first, a page at a time.
    let first = d.alerts(&[]).await;
    assert_eq!(first["items"].as_array().unwrap().len(), 50);
    assert_eq!(first["items"][0]["kind"], "out_of_order", "newest first");
    assert!(
        first["kinds"].to_string().contains("queries_exhausted"),
        "{first}"
    );
    let all = d.all_alerts(&[]).await;
    assert_eq!(all.len() as i64, total);
    let mut unique = all.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), all.len(), "no repeats across pages");

    // By kind, by severity, by state.
    let b_ids = d.all_alerts(&[("filter[kind]", "out_of_order")]).await;
    assert_eq!(b_ids.len(), 5);
    let high = d.alerts(&[("filter[severity]", "high")]).await;
    assert!(
        high["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["severity"] == "high")
    );
    let a_open = d
        .all_alerts(&[
            ("filter[kind]", "queries_exhausted"),
            ("filter[state]", "open"),
        ])
        .await;
    assert_eq!(a_open.len(), 55);
    let (status, err) = d
        .call(&d.olga, "alerts/list", &[("filter[state]", "closed")])
        .await;
    assert_eq!(status, 400, "{err}");

    // Two ticked, one comment: both acknowledged, each audited.
    let ticked = [b_ids[0].as_str(), b_ids[1].as_str()];
    let (status, err) = d
        .call(
            &d.olga,
            "alerts/acknowledge-many",
            &[("ids[]", ticked[0]), ("ids[]", ticked[1]), ("comment", " ")],
        )
        .await;
    assert_eq!(status, 400, "a comment is required: {err}");
    let (status, err) = d
        .call(
            &d.olga,
            "alerts/acknowledge-many",
            &[("comment", "nothing ticked")],
        )
        .await;
    assert_eq!(status, 400, "{err}");
    assert!(err.to_string().contains("tick at least one alert"), "{err}");
    let (status, done) = d
        .call(
            &d.sam,
            "alerts/acknowledge-many",
            &[
                ("ids[]", ticked[0]),
                ("ids[]", ticked[1]),
                ("comment", "known: the out_of_order test"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["acknowledged"], serde_json::json!(ticked));
    assert_eq!(done["skipped"], serde_json::json!([]));
    let audited: Vec<String> = sqlx::query_scalar(
        "SELECT object_id FROM audit_log WHERE action = 'alert.acknowledge' AND actor = 'sam' ORDER BY seq",
    )
    .fetch_all(d.app.pool())
    .await
    .unwrap();
    assert_eq!(audited, ticked);
    let acked = d
        .alerts(&[
            ("filter[state]", "acknowledged"),
            ("filter[kind]", "out_of_order"),
        ])
        .await;
    let items = acked["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{acked}");
    assert!(
        items
            .iter()
            .all(|a| a["ack_comment"] == "known: the out_of_order test"
                && a["acknowledged_by"] == "sam"
                && a["state"] == "acknowledged")
    );
    let b_open = d
        .all_alerts(&[("filter[kind]", "out_of_order"), ("filter[state]", "open")])
        .await;
    assert_eq!(b_open, b_ids[2..]);
    // Again, with one still open: the acknowledged ones are left and named.
    let (_, again) = d
        .call(
            &d.olga,
            "alerts/acknowledge-many",
            &[
                ("ids[]", ticked[0]),
                ("ids[]", b_ids[2].as_str()),
                ("comment", "again"),
            ],
        )
        .await;
    assert_eq!(again["acknowledged"], serde_json::json!([b_ids[2]]));
    assert_eq!(again["skipped"], serde_json::json!([ticked[0]]));
    // The dashboard counts what is open, by kind.
    let (day, _) = d.app.today();
    let dash = d.dashboard(&d.olga, &day).await;
    assert_eq!(kind_count(&dash, "queries_exhausted"), Some(55));
    assert_eq!(kind_count(&dash, "out_of_order"), Some(2));
    let open: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM alerts WHERE acknowledged_at IS NULL AND resolved_at IS NULL",
    )
    .fetch_one(d.app.pool())
    .await
    .unwrap();
    assert_eq!(dash["open_alerts"].as_i64(), Some(open));
}

async fn the_figures_of_a_reconciled_day_add_up_or_say_why(b: Backend) {
    let d = desk(b).await;
    let (day, at) = d.app.today();
    // Matched; a transaction listed twice (DUPLICATE: two rows, one
    // ticket); an amount mismatch; provider-only (then concluded by a
    // person); paid here and absent there; created here and not paid.
    let a = d.app.paid_with("ADD-A", 1000, "10.00", "SBX-AA").await;
    let bb = d.app.paid_with("ADD-B", 2000, "20.00", "SBX-AB").await;
    let c = d.app.paid_with("ADD-C", 3000, "30.00", "SBX-AC").await;
    let _local_only = d.app.paid_with("ADD-D", 4000, "40.00", "SBX-AD").await;
    let _unpaid = d.app.payment("ADD-E", 500, "CNY").await;
    let rows = [
        row("payment", "SBX-AA", &a, ("", ""), "10.00", "CNY", &at),
        row("payment", "SBX-AB", &bb, ("", ""), "20.00", "CNY", &at),
        row("payment", "SBX-AB", &bb, ("", ""), "20.00", "CNY", &at),
        row("payment", "SBX-AC", &c, ("", ""), "31.00", "CNY", &at),
        row("payment", "SBX-AX", "PAYADDX", ("", ""), "5.00", "CNY", &at),
    ];
    let (status, run) = d.app.upload(&d.token, &day, &statement(&rows)).await;
    assert_eq!(status, 201, "{run}");
    let dash = d.dashboard(&d.olga, &day).await;
    let f = &dash["figures"];
    let n = |k: &str| f[k].as_i64().unwrap();
    assert_eq!(
        n("to_process"),
        7,
        "five rows and two payments without one: {f}"
    );
    assert_eq!(
        (n("matched"), n("pending"), n("repaired"), n("unknown")),
        (1, 1, 0, 4),
        "the unpaid payment is pending, not matched as well: {f}"
    );
    let differences = |f: &Value| -> Vec<(String, i64)> {
        serde_json::from_value(f["differences"].clone()).unwrap()
    };
    assert_eq!(
        differences(f),
        [("duplicate_rows".to_owned(), 1)],
        "two rows, one ticket: {f}"
    );

    // A person concludes the provider-only ticket: not unknown any more,
    // and the page says where it went.
    let x = d.ticket_of("PAYADDX", "PROVIDER_ONLY").await;
    let (status, body) = d
        .call(
            &d.olga,
            "tickets/conclude",
            &[("id", &x), ("conclusion", "explained: a test row")],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let dash = d.dashboard(&d.olga, &day).await;
    let f = &dash["figures"];
    let n = |k: &str| f[k].as_i64().unwrap();
    let open: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM discrepancies WHERE business_date = $1 AND provider = 'sandbox' AND status <> 'CLOSED'",
    )
    .bind(&day)
    .fetch_one(d.app.pool())
    .await
    .unwrap();
    assert_eq!(n("unknown"), open);
    assert_eq!(
        differences(f),
        [("decided".to_owned(), 1), ("duplicate_rows".to_owned(), 1)],
        "{f}"
    );
    let explained: i64 = differences(f).iter().map(|(_, n)| n).sum();
    assert_eq!(
        n("to_process"),
        n("matched") + n("pending") + n("repaired") + n("unknown") + explained,
        "{f}"
    );

    // Money beside the counts: gross and net as the run read them, and
    // what the open tickets are about (20.00 + 30.00 + 40.00).
    let figures: Value = serde_json::from_str(run["figures_json"].as_str().unwrap()).unwrap();
    let cny = &figures["fees_and_net"]["currencies"]["CNY"];
    let major = |minor: i64| format!("{}.{:02} CNY", minor / 100, minor % 100);
    assert_eq!(dash["money"][0]["currency"], "CNY", "{dash}");
    assert_eq!(
        dash["money"][0]["gross"],
        major(cny["gross_minor"].as_i64().unwrap()).as_str()
    );
    assert_eq!(
        dash["money"][0]["net"],
        major(cny["net_minor"].as_i64().unwrap()).as_str()
    );
    assert_eq!(dash["money"][0]["unknown"], "90.00 CNY", "{dash}");
    // As of now in the business zone, named; the days around it.
    let now = jiff::Timestamp::from_microsecond(d.app.app_engine().now()).unwrap();
    assert_eq!(
        dash["as_of"],
        format!("{} UTC", now.strftime("%Y-%m-%d %H:%M")).as_str()
    );
    let date: jiff::civil::Date = day.parse().unwrap();
    assert_eq!(
        dash["prev_day"],
        date.yesterday().unwrap().to_string().as_str()
    );
    assert_eq!(
        dash["next_day"],
        date.tomorrow().unwrap().to_string().as_str()
    );

    // The page says the same, without JavaScript.
    let html = d
        .olga
        .get(format!("{}/?day={day}&provider=sandbox", d.app.app.base))
        .header("accept", "text/html")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        html.contains("data-reason=\"decided\""),
        "the reasons are shown"
    );
    assert!(html.contains("id=\"as-of\""));
    assert!(html.contains("90.00"), "the open tickets' amount");
    assert!(
        html.contains(&format!(
            "href=\"/?day={}&amp;provider=sandbox\"",
            date.yesterday().unwrap()
        )) || html.contains(&format!(
            "href=\"/?day={}&provider=sandbox\"",
            date.yesterday().unwrap()
        ))
    );
}

async fn a_supervisor_sees_what_waits_for_them_not_their_own(b: Backend) {
    let d = desk(b).await;
    let (day, at) = d.app.today();
    let p1 = d.app.paid_with("Q-1", 10000, "100.00", "SBX-Q1").await;
    let p2 = d.app.paid_with("Q-2", 10000, "100.00", "SBX-Q2").await;
    let rows = [
        row("payment", "SBX-Q1", &p1, ("", ""), "101.00", "CNY", &at),
        row("payment", "SBX-Q2", &p2, ("", ""), "102.00", "CNY", &at),
    ];
    let (status, run) = d.app.upload(&d.token, &day, &statement(&rows)).await;
    assert_eq!(status, 201, "{run}");
    let t1 = d.ticket_of(&p1, "AMOUNT_MISMATCH").await;
    let t2 = d.ticket_of(&p2, "AMOUNT_MISMATCH").await;
    let propose = |who: &reqwest::Client, ticket: String| {
        let who = who.clone();
        let d = &d;
        async move {
            let (status, body) = d
                .call(
                    &who,
                    "fixes/propose",
                    &[
                        ("id", ticket.as_str()),
                        ("kind", "ACCEPT_AMOUNT"),
                        ("reason", "provider surcharge confirmed"),
                        ("evidence", "mail from the provider, ref 77"),
                    ],
                )
                .await;
            assert_eq!(status, 200, "{body}");
        }
    };
    propose(&d.olga, t1).await;
    d.app.clock.advance_secs(60);
    propose(&d.sam, t2).await;

    let queue = |who: &reqwest::Client| {
        let who = who.clone();
        let d = &d;
        async move { d.call(&who, "approvals/queue", &[]).await }
    };
    // sam may decide olga's, not his own; sue both.
    let (status, sam) = queue(&d.sam).await;
    assert_eq!(status, 200, "{sam}");
    assert_eq!(sam["waiting"], 1, "{sam}");
    let (_, sue) = queue(&d.sue).await;
    assert_eq!(sue["waiting"], 2, "{sue}");
    let (oldest, expiry): (i64, i64) = sqlx::query_as(
        "SELECT MIN(proposed_at), MIN(expires_at) FROM fix_proposals WHERE status = 'PENDING'",
    )
    .fetch_one(d.app.pool())
    .await
    .unwrap();
    assert_eq!(sue["oldest_at"].as_i64(), Some(oldest));
    assert_eq!(sue["next_expiry_at"].as_i64(), Some(expiry));
    assert!(sue["oldest"].as_str().unwrap().ends_with(" UTC"), "{sue}");
    // An operator decides nothing: refused.
    let (status, _) = queue(&d.olga).await;
    assert_eq!(status, 403);
    // The dashboard carries the viewer's queue, for supervisors only.
    assert_eq!(d.dashboard(&d.sue, &day).await["queue"], sue);
    assert_eq!(d.dashboard(&d.olga, &day).await["queue"], Value::Null);

    // The top bar carries the count, on any page, for supervisors only.
    let page = |who: &reqwest::Client| {
        let who = who.clone();
        let base = d.app.app.base.clone();
        async move {
            who.get(format!("{base}/alerts"))
                .header("accept", "text/html")
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        }
    };
    let html = page(&d.sam).await;
    let at = html.find("id=\"queue-badge\"").expect("the badge");
    let badge = &html[at..at + 200];
    assert!(badge.contains(">1</span>"), "{badge}");
    assert!(!page(&d.olga).await.contains("id=\"queue-badge\""));
}

both_databases!(
    an_sla_alert_resolves_when_its_ticket_closes,
    alerts_filter_page_and_are_acknowledged_in_bulk,
    the_figures_of_a_reconciled_day_add_up_or_say_why,
    a_supervisor_sees_what_waits_for_them_not_their_own,
);
