//! The console's callbacks, payments, runs, alerts and dashboard through
//! their server functions and routes, with real sessions, on SQLite and
//! PostgreSQL.

use crate::both_databases;
use crate::helpers::Backend;
use crate::recon::{row, statement};
use crate::triage::{Desk, desk};
use serde_json::Value;

impl Desk {
    /// A verified callback for a payment Reckon does not have yet, retried
    /// until it is DEAD; returns its row id.
    pub(crate) async fn dead_callback(&self, payment_no: &str, major: &str) -> String {
        let id = format!("evt-dead-{payment_no}");
        let body = self.app.notice(
            &id,
            payment_no,
            "SUCCEEDED",
            major,
            "CNY",
            &format!("SBX-{payment_no}"),
        );
        self.app.post_signed(&id, &body).await;
        let engine = self.app.app_engine();
        for _ in 0..12 {
            let status: String = sqlx::query_scalar(
                "SELECT processing_status FROM payment_callbacks WHERE callback_id = $1",
            )
            .bind(&id)
            .fetch_one(self.app.pool())
            .await
            .unwrap();
            if status == "DEAD" {
                break;
            }
            self.app.clock.advance_secs(65 * 60);
            engine.retry_callbacks(engine.now()).await.unwrap();
        }
        sqlx::query_scalar(
            "SELECT id FROM payment_callbacks WHERE callback_id = $1 AND processing_status = 'DEAD'",
        )
        .bind(&id)
        .fetch_one(self.app.pool())
        .await
        .expect("the callback went DEAD")
    }

    /// The payment's row appears late (as when its insert failed and was
    /// redone from the order system): CREATED, unpaid.
    pub(crate) async fn late_payment(&self, payment_no: &str, minor: i64) {
        let now = self.app.app.engine.now();
        sqlx::query(
            "INSERT INTO payments (payment_no, order_no, attempt_no, provider, amount_minor, currency, status, version, \
               created_by, awaiting_recon, created_at, updated_at) \
             VALUES ($1, $2, 1, 'sandbox', $3, 'CNY', 'CREATED', 0, 'test', 0, $4, $4)",
        )
        .bind(payment_no)
        .bind(format!("ORDER-{payment_no}"))
        .bind(minor)
        .bind(now)
        .execute(self.app.pool())
        .await
        .unwrap();
    }
}

async fn a_dead_callback_replayed_moves_its_payment_once(b: Backend) {
    let d = desk(b).await;
    let dead = d.dead_callback("PAYDEADCB1", "50.00").await;
    d.late_payment("PAYDEADCB1", 5000).await;

    let (_, list) = d
        .call(&d.olga, "callbacks/list", &[("filter[status]", "DEAD")])
        .await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    assert_eq!(list["items"][0]["id"], dead.as_str());

    let (status, res) = d.call(&d.olga, "callbacks/replay", &[("id", &dead)]).await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["class"], "applied");
    assert_eq!(d.app.status("PAYDEADCB1").await, "SUCCEEDED");
    assert_eq!(d.effects("PAYDEADCB1").await, 1);
    let (_, detail) = d.call(&d.olga, "callbacks/show", &[("id", &dead)]).await;
    assert_eq!(detail["summary"]["processing_status"], "SUCCESS");
    assert!(
        detail["produced"][0]
            .as_str()
            .unwrap()
            .contains("SUCCEEDED")
    );

    // Again: a duplicate, nothing moves.
    let (status, res) = d.call(&d.sue, "callbacks/replay", &[("id", &dead)]).await;
    assert_eq!(status, 200);
    assert_eq!(res["class"], "duplicate");
    assert_eq!(d.effects("PAYDEADCB1").await, 1);
    let replays: Vec<(String, String)> = sqlx::query_as(
        "SELECT actor, after_json FROM audit_log WHERE action = 'callback.replay' AND object_id = $1 ORDER BY seq",
    )
    .bind(&dead)
    .fetch_all(d.app.pool())
    .await
    .unwrap();
    assert_eq!(replays.len(), 2);
    assert_eq!(replays[0].0, "olga");
    assert!(replays[1].1.contains("duplicate"));
    let metrics = d
        .olga
        .get(format!("{}/metrics", d.app.app.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("callback_replay_total{class=\"applied\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("callback_replay_total{class=\"duplicate\"} 1"));
}

async fn a_callback_that_failed_verification_is_never_replayed(b: Backend) {
    let d = desk(b).await;
    let p = d.app.payment("CON-UNV", 700, "CNY").await;
    let now = d.app.app.engine.now();
    sqlx::query(
        "INSERT INTO payment_callbacks (id, callback_id, provider, payment_no, provider_txn_id, callback_status, \
           headers_json, payload, payload_hash, verify_result, processing_status, retry_count, trace_id, received_at) \
         VALUES ('cb-unverified', 'evt-forged', 'sandbox', $1, 'SBX-F', 'SUCCEEDED', '{}', $2, 'h', 'UNVERIFIED', 'DEAD', 0, 't', $3)",
    )
    .bind(&p)
    .bind(
        d.app
            .notice("evt-forged", &p, "SUCCEEDED", "7.00", "CNY", "SBX-F")
            .into_bytes(),
    )
    .bind(now)
    .execute(d.app.pool())
    .await
    .unwrap();
    let (status, err) = d
        .call(&d.olga, "callbacks/replay", &[("id", "cb-unverified")])
        .await;
    assert_eq!(status, 409, "{err}");
    assert_eq!(err, serde_json::json!("NotReplayable"));
    assert_eq!(d.app.status(&p).await, "CREATED");
    assert_eq!(d.effects(&p).await, 0);
    let (_, detail) = d
        .call(&d.olga, "callbacks/show", &[("id", "cb-unverified")])
        .await;
    assert_eq!(detail["replayable"], false);
    // A supervisor cannot either, and an admin may not replay at all.
    let (status, _) = d
        .call(&d.sam, "callbacks/replay", &[("id", "cb-unverified")])
        .await;
    assert_eq!(status, 409);
}

async fn bulk_replay_of_dead_callbacks_runs_as_a_job(b: Backend) {
    let d = desk(b).await;
    let (first_day, _) = d.app.today();
    let mut nos = Vec::new();
    for i in 1..=3 {
        let no = format!("PAYBULK{i}");
        d.dead_callback(&no, "12.00").await;
        d.late_payment(&no, 1200).await;
        nos.push(no);
    }
    // Each went DEAD hours after the one before (the retries' back-off).
    let (day, _) = d.app.today();
    let (status, job) = d
        .call(
            &d.olga,
            "callbacks/bulk-replay",
            &[("provider", "sandbox"), ("from", &first_day), ("to", &day)],
        )
        .await;
    assert_eq!(status, 200, "{job}");
    let job = job.as_str().unwrap().to_owned();
    let mut last = Value::Null;
    for _ in 0..100 {
        let (_, jobs) = d.call(&d.sue, "callbacks/replay-jobs", &[]).await;
        last = jobs
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["id"] == job.as_str())
            .cloned()
            .unwrap();
        if last["status"] == "DONE" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(last["status"], "DONE", "{last}");
    assert_eq!(
        (last["total"].as_i64(), last["done"].as_i64()),
        (Some(3), Some(3))
    );
    assert_eq!(last["classes"], serde_json::json!([["applied", 3]]));
    for no in &nos {
        assert_eq!(d.app.status(no).await, "SUCCEEDED");
        assert_eq!(d.effects(no).await, 1);
    }
    // Nothing DEAD is left in the range: a second job finds nothing.
    let (_, again) = d
        .call(
            &d.olga,
            "callbacks/bulk-replay",
            &[("provider", "sandbox"), ("from", &first_day), ("to", &day)],
        )
        .await;
    let again = again.as_str().unwrap().to_owned();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let (_, jobs) = d.call(&d.sue, "callbacks/replay-jobs", &[]).await;
    let second = jobs
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["id"] == again.as_str())
        .unwrap()
        .clone();
    assert_eq!(second["total"], 0, "{second}");
    let (status, err) = d
        .call(
            &d.olga,
            "callbacks/bulk-replay",
            &[("provider", "nowhere"), ("from", &day), ("to", &day)],
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        err["Invalid"]["detail"], "provider nowhere is not configured",
        "{err}"
    );
}

async fn the_dashboard_says_what_the_database_says(b: Backend) {
    let d = desk(b).await;
    let (day, at) = d.app.today();
    // A day: two matched, one provider-only, one amount mismatch, one
    // paid here and absent there; one callback delivered twice.
    let a = d.app.paid_with("DASH-A", 1000, "10.00", "SBX-DA").await;
    let bb = d.app.paid_with("DASH-B", 2000, "20.00", "SBX-DB").await;
    let c = d.app.paid_with("DASH-C", 3000, "30.00", "SBX-DC").await;
    let _local_only = d.app.paid_with("DASH-D", 4000, "40.00", "SBX-DD").await;
    let body = d
        .app
        .notice("evt-DASH-A", &a, "SUCCEEDED", "10.00", "CNY", "SBX-DA");
    assert_eq!(d.app.post_signed("evt-DASH-A", &body).await.status(), 200);
    let rows = [
        row("payment", "SBX-DA", &a, ("", ""), "10.00", "CNY", &at),
        row("payment", "SBX-DB", &bb, ("", ""), "20.00", "CNY", &at),
        row("payment", "SBX-DC", &c, ("", ""), "31.00", "CNY", &at),
        row(
            "payment",
            "SBX-DX",
            "PAYDASHX",
            ("", ""),
            "5.00",
            "CNY",
            &at,
        ),
    ];
    let (status, run) = d.app.upload(&d.token, &day, &statement(&rows)).await;
    assert_eq!(status, 201, "{run}");

    let (status, dash) = d
        .call(
            &d.olga,
            "dashboard",
            &[("day", &day), ("provider", "sandbox")],
        )
        .await;
    assert_eq!(status, 200, "{dash}");
    let f = &dash["figures"];
    let pool = d.app.pool();
    let open: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM discrepancies WHERE business_date = $1 AND provider = 'sandbox' AND status <> 'CLOSED'",
    )
    .bind(&day)
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(f["unknown"].as_i64(), Some(open));
    let by_class: Vec<(String, i64)> = sqlx::query_as(
        "SELECT class, COUNT(*) FROM discrepancies WHERE business_date = $1 AND provider = 'sandbox' GROUP BY class ORDER BY class",
    )
    .bind(&day)
    .fetch_all(pool)
    .await
    .unwrap();
    assert_eq!(
        by_class,
        [
            ("AMOUNT_MISMATCH".to_owned(), 1),
            ("LOCAL_ONLY".to_owned(), 1),
            ("PROVIDER_ONLY".to_owned(), 1)
        ]
    );
    let classes: Vec<(String, i64)> = serde_json::from_value(f["classes"].clone()).unwrap();
    for (class, n) in &by_class {
        assert!(
            classes.contains(&(class.clone(), *n)),
            "{class}: {classes:?}"
        );
    }
    // Every line the run read; the run keeps only the rows behind tickets.
    let statement_rows: i64 =
        sqlx::query_scalar("SELECT rows_read FROM recon_runs WHERE run_id = $1")
            .bind(run["run_id"].as_str().unwrap())
            .fetch_one(pool)
            .await
            .unwrap();
    assert_eq!(statement_rows, 4);
    let kept: Vec<i64> =
        sqlx::query_scalar("SELECT line_no FROM recon_rows WHERE run_id = $1 ORDER BY line_no")
            .bind(run["run_id"].as_str().unwrap())
            .fetch_all(pool)
            .await
            .unwrap();
    assert_eq!(
        kept.len(),
        2,
        "the AMOUNT_MISMATCH and PROVIDER_ONLY rows: {kept:?}"
    );
    let local_without_row: i64 = 1; // DASH-D
    assert_eq!(
        f["to_process"].as_i64(),
        Some(statement_rows + local_without_row)
    );
    assert_eq!(f["matched"].as_i64(), Some(2));
    // Each record in one figure: they add up, nothing to explain.
    let n = |k: &str| f[k].as_i64().unwrap();
    assert_eq!(
        n("to_process"),
        n("matched") + n("pending") + n("repaired") + n("unknown"),
        "{f}"
    );
    assert_eq!(f["differences"], serde_json::json!([]), "{f}");
    assert_eq!(
        classes.iter().map(|c| c.1).sum::<i64>(),
        statement_rows + local_without_row
    );

    let (start, end) = reckon::recon::day_range(&day, &jiff::tz::TimeZone::UTC).unwrap();
    let (received, dup, dead): (i64, i64, i64) = sqlx::query_as(
        "SELECT COUNT(*), CAST(COALESCE(SUM(duplicates), 0) AS BIGINT), \
           CAST(COALESCE(SUM(CASE WHEN processing_status = 'DEAD' THEN 1 ELSE 0 END), 0) AS BIGINT) \
         FROM payment_callbacks WHERE received_at >= $1 AND received_at < $2",
    )
    .bind(start)
    .bind(end)
    .fetch_one(pool)
    .await
    .unwrap();
    let cb = &dash["callbacks"];
    assert_eq!(cb["received"].as_i64(), Some(received));
    assert_eq!(received, 4);
    assert_eq!(dup, 1, "the second delivery of evt-DASH-A");
    assert_eq!(cb["duplicates"].as_i64(), Some(dup));
    assert_eq!(cb["dead"].as_i64(), Some(dead));
    let mut took: Vec<i64> = sqlx::query_scalar(
        "SELECT processed_at - received_at FROM payment_callbacks WHERE received_at >= $1 AND received_at < $2 AND processed_at IS NOT NULL",
    )
    .bind(start)
    .bind(end)
    .fetch_all(pool)
    .await
    .unwrap();
    took.sort();
    let p99 = took[((took.len() - 1) as f64 * 0.99).floor() as usize] as f64 / 1000.0;
    assert_eq!(cb["p99_ms"].as_f64(), Some(p99));
    // 30 days of trend, the chosen day last and reconciled.
    let trend = dash["trend"].as_array().unwrap();
    assert_eq!(trend.len(), 30);
    assert_eq!(trend[29]["day"], day.as_str());
    assert_eq!(trend[29]["matched"].as_i64(), f["matched"].as_i64());
    assert_eq!(trend[28]["reconciled"], false);
    // The LOCAL_ONLY alert is open, counted by its kind.
    let alerts: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM alerts WHERE acknowledged_at IS NULL AND resolved_at IS NULL",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(dash["open_alerts"].as_i64(), Some(alerts));
    assert!(
        dash["alerts_by_kind"].to_string().contains("local_only"),
        "{dash}"
    );
    // The page renders the same numbers, with the chart, without JavaScript.
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
    let at = html.find("id=\"fig-matched\"").expect("the matched figure");
    let figure = &html[at..at + 300];
    assert!(figure.contains("status=SUCCEEDED"), "{figure}");
    assert!(figure.contains("<span class=\"n\">2</span>"), "{figure}");
    assert!(
        html.contains("<svg id=\"trend\""),
        "the chart is in the page"
    );
    let line = html
        .find("class=\"series-matched\"")
        .expect("the matched line");
    assert!(
        html[..line]
            .rfind("<polyline")
            .is_some_and(|p| line - p < 1000 && !html[p..line].contains('>')),
        "a polyline"
    );
}

async fn callback_details_show_no_secret_and_alerts_are_acknowledged(b: Backend) {
    let d = desk(b).await;
    let p = d.app.payment("CON-MASK", 900, "CNY").await;
    let body = d
        .app
        .notice("evt-mask", &p, "SUCCEEDED", "9.00", "CNY", "SBX-MASK");
    assert_eq!(d.app.post_signed("evt-mask", &body).await.status(), 200);
    let id: String =
        sqlx::query_scalar("SELECT id FROM payment_callbacks WHERE callback_id = 'evt-mask'")
            .fetch_one(d.app.pool())
            .await
            .unwrap();
    let headers: String =
        sqlx::query_scalar("SELECT headers_json FROM payment_callbacks WHERE id = $1")
            .bind(&id)
            .fetch_one(d.app.pool())
            .await
            .unwrap();
    let stored: Value = serde_json::from_str(&headers).unwrap();
    let signature = stored["webhook-signature"].as_str().unwrap().to_owned();
    assert!(signature.len() > 20);
    let res = d
        .app
        .app
        .call_with(&d.olga, "callbacks/show", &[("id", &id)])
        .await;
    let text = res.text().await.unwrap();
    assert!(
        !text.contains(&signature),
        "the signature is masked: {text}"
    );
    let detail: Value = serde_json::from_str(&text).unwrap();
    let shown = detail["headers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h[0] == "webhook-signature")
        .unwrap()[1]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(shown.contains("****"), "{shown}");
    assert!(detail["payload"].as_str().unwrap().contains(&p));
    assert!(
        detail["facts"].as_str().unwrap().contains(&p),
        "{}",
        detail["facts"]
    );

    // A redelivery with other bytes and the same facts is listed as such.
    let spaced = body.replacen('{', "{ ", 1);
    assert_ne!(spaced, body);
    assert_eq!(d.app.post_signed("evt-mask", &spaced).await.status(), 200);
    let res = d
        .app
        .app
        .call_with(&d.olga, "callbacks/show", &[("id", &id)])
        .await;
    let detail: Value = res.json().await.unwrap();
    let redeliveries = detail["redeliveries"].as_array().unwrap();
    assert_eq!(redeliveries.len(), 1, "{detail}");
    assert!(
        redeliveries[0]
            .as_str()
            .unwrap()
            .contains("same facts, new envelope")
    );
    assert_eq!(detail["summary"]["duplicates"], 1);

    // The payment's record has the callback, the state change and the effect.
    let (_, view) = d
        .call(&d.olga, "payments/show", &[("payment_no", &p)])
        .await;
    assert_eq!(view["summary"]["status"], "SUCCEEDED");
    assert_eq!(view["callbacks"].as_array().unwrap().len(), 1);
    assert_eq!(view["effects"][0]["what"], "ORDER_PAID");
    assert_eq!(view["history"].as_array().unwrap().len(), 1);
    let (_, list) = d
        .call(
            &d.olga,
            "payments/list",
            &[("filter[amount]", "9.00"), ("filter[status]", "SUCCEEDED")],
        )
        .await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    assert_eq!(list["items"][0]["payment_no"], p.as_str());
    let (status, err) = d
        .call(&d.olga, "payments/list", &[("filter[amount]", "9,00")])
        .await;
    assert_eq!(status, 400, "a malformed amount is refused with the reason");
    assert_eq!(err["Invalid"]["detail"], "an amount is like 66.60", "{err}");

    // An alert acknowledged with a comment, audited; without one, refused.
    d.provider_only("PAYALERT1", "SBX-ALERT-1").await;
    let alert: String = sqlx::query_scalar(
        "SELECT alert_id FROM alerts WHERE acknowledged_at IS NULL ORDER BY created_at LIMIT 1",
    )
    .fetch_one(d.app.pool())
    .await
    .unwrap();
    let (status, _) = d
        .call(
            &d.olga,
            "alerts/acknowledge",
            &[("id", &alert), ("comment", "")],
        )
        .await;
    assert_eq!(status, 400);
    let (status, _) = d
        .call(
            &d.olga,
            "alerts/acknowledge",
            &[("id", &alert), ("comment", "known: provider sandbox test")],
        )
        .await;
    assert_eq!(status, 200);
    let (_, open) = d
        .call(&d.olga, "alerts/list", &[("filter[state]", "open")])
        .await;
    assert!(
        open["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["id"] != alert.as_str())
    );
    let audited: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM audit_log WHERE action = 'alert.acknowledge' AND object_id = $1 AND actor = 'olga'",
    )
    .bind(&alert)
    .fetch_one(d.app.pool())
    .await
    .unwrap();
    assert_eq!(audited, 1);
}

async fn a_statement_uploaded_in_the_console_runs_in_the_background(b: Backend) {
    let d = desk(b).await;
    let (day, at) = d.app.today();
    let a = d.app.paid_with("UP-A", 1000, "10.00", "SBX-UA").await;
    let file = statement(&[
        row("payment", "SBX-UA", &a, ("", ""), "10.00", "CNY", &at),
        row("payment", "SBX-UX", "PAYUPX", ("", ""), "1.00", "CNY", &at),
    ]);
    let upload = |bytes: Vec<u8>| {
        let form = reqwest::multipart::Form::new()
            .text("provider", "sandbox")
            .text("business_date", day.clone())
            .part(
                "file",
                reqwest::multipart::Part::bytes(bytes).file_name("sandbox.csv"),
            );
        d.olga
            .post(format!("{}/runs/upload", d.app.app.base))
            .headers(d.app.app.origin())
            .multipart(form)
            .send()
    };
    let res = upload(file.clone().into_bytes()).await.unwrap();
    assert_eq!(res.status(), 303);
    let to = res.headers()["location"].to_str().unwrap().to_owned();
    let run = to
        .strip_prefix("/runs?run=")
        .expect("the run to watch")
        .to_owned();
    let mut found = Value::Null;
    for _ in 0..100 {
        let (_, page) = d.call(&d.sue, "runs/list", &[]).await;
        if let Some(r) = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == run.as_str())
            && r["status"] != "RUNNING"
        {
            found = r.clone();
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(found["status"], "COMPLETED", "{found}");
    assert_eq!(found["rows_read"], 2);
    assert_eq!(found["source"], "upload");
    let classes: Vec<(String, i64)> = serde_json::from_value(found["classes"].clone()).unwrap();
    assert!(
        classes.contains(&("PROVIDER_ONLY".into(), 1)),
        "{classes:?}"
    );
    // The upload was hashed as it arrived, as any import hashes a file:
    // the same file imported through the API or the CLI is the same file.
    let kept: String = sqlx::query_scalar("SELECT file_hash FROM recon_runs WHERE run_id = $1")
        .bind(&run)
        .fetch_one(d.app.pool())
        .await
        .unwrap();
    assert_eq!(
        kept,
        reckon::recon::Input::Bytes(file.clone().into_bytes())
            .hash()
            .unwrap()
    );
    // The same file again shows the same run, saying so; a broken one
    // says why.
    let again = upload(file.into_bytes()).await.unwrap();
    let shown = again.headers()["location"].to_str().unwrap();
    assert!(shown.starts_with(&format!("{to}&err=")), "{shown}");
    let said = form_urlencoded::parse(shown.split_once('?').unwrap().1.as_bytes())
        .find(|(k, _)| k == "err")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    assert!(said.contains("already reconciled"), "{shown}");
    let empty = upload(Vec::new()).await.unwrap();
    let to = empty.headers()["location"].to_str().unwrap().to_owned();
    assert!(to.starts_with("/runs?err="), "{to}");
    assert!(
        to.contains("Invalid") && to.contains("empty"),
        "an empty file is invalid input, not a fix that does not apply: {to}"
    );
    // An admin reads runs but may not upload.
    let admin = crate::helpers::client();
    d.app
        .app
        .add_user("ada", app::types::Role::Admin, "correct horse battery")
        .await;
    d.app
        .app
        .call_with(
            &admin,
            "login",
            &[("username", "ada"), ("password", "correct horse battery")],
        )
        .await;
    let res = admin
        .post(format!("{}/runs/upload", d.app.app.base))
        .headers(d.app.app.origin())
        .multipart(reqwest::multipart::Form::new().text("provider", "sandbox"))
        .send()
        .await
        .unwrap();
    assert!(
        res.headers()["location"]
            .to_str()
            .unwrap()
            .contains("Forbidden")
    );
}

/// The console reads a statement upload as the API does: a field the form
/// does not have, or an `accept_bad_lines` that is not a whole number,
/// refuses it with the reason (the API with its 400), and no run starts.
async fn the_console_and_the_api_refuse_the_same_upload_forms(b: Backend) {
    let d = desk(b).await;
    let (day, at) = d.app.today();
    let a = d.app.paid_with("UP-F", 1000, "10.00", "SBX-UF").await;
    let file = statement(&[row("payment", "SBX-UF", &a, ("", ""), "10.00", "CNY", &at)]);
    let form = |extra: (&'static str, &'static str)| {
        reqwest::multipart::Form::new()
            .text("provider", "sandbox")
            .text("business_date", day.clone())
            .text(extra.0, extra.1)
            .part(
                "file",
                reqwest::multipart::Part::bytes(file.clone().into_bytes()).file_name("sandbox.csv"),
            )
    };
    for (extra, says) in [
        (("x_note", "hello"), "unknown field \"x_note\""),
        (
            ("accept_bad_lines", "abc"),
            "accept_bad_lines must be a whole number",
        ),
    ] {
        let res = d
            .olga
            .post(format!("{}/runs/upload", d.app.app.base))
            .headers(d.app.app.origin())
            .multipart(form(extra))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 303);
        let to = res.headers()["location"].to_str().unwrap().to_owned();
        assert!(to.starts_with("/runs?err="), "{to}");
        let err = form_urlencoded::parse(to.trim_start_matches("/runs?").as_bytes())
            .find(|(k, _)| k == "err")
            .map(|(_, v)| serde_json::from_str::<Value>(&v).unwrap())
            .unwrap();
        assert_eq!(err["Invalid"]["detail"], says, "{err}");
        let res = d
            .app
            .app
            .client
            .post(format!("{}/api/v1/recon/runs", d.app.app.base))
            .bearer_auth(&d.token)
            .multipart(form(extra))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 400);
        let body: Value = res.json().await.unwrap();
        assert_eq!(body, serde_json::json!({ "error": says }));
    }
    let runs: i64 = crate::reads::runs(d.app.pool()).await;
    assert_eq!(runs, 0, "a refused form starts no run");
}

async fn lists_page_by_keyset_without_gaps_or_repeats(b: Backend) {
    let d = desk(b).await;
    let (_, at) = d.app.today();
    let rows: Vec<String> = (0..63)
        .map(|i| {
            row(
                "payment",
                &format!("SBX-PG-{i:03}"),
                &format!("PAYPG{i:03}"),
                ("", ""),
                "1.00",
                "CNY",
                &at,
            )
        })
        .collect();
    assert_eq!(d.reconcile(&rows, "PROVIDER_ONLY").await.len(), 63);
    for i in 0..55 {
        d.app.payment(&format!("PG-{i:03}"), 100 + i, "CNY").await;
        d.app.clock.advance_secs(1);
    }
    // Tickets: 50, then the rest, each once.
    let (_, first) = d
        .call(
            &d.olga,
            "tickets/list",
            &[("filter[class]", "PROVIDER_ONLY")],
        )
        .await;
    assert_eq!(first["total"], 63);
    let mut seen: Vec<String> = first["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(seen.len(), 50);
    let next = first["next"].as_str().unwrap().to_owned();
    let (_, second) = d
        .call(
            &d.olga,
            "tickets/list",
            &[("filter[class]", "PROVIDER_ONLY"), ("filter[after]", &next)],
        )
        .await;
    assert!(second["next"].is_null());
    seen.extend(
        second["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_owned()),
    );
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!((seen.len(), unique.len()), (63, 63));
    // Payments, newest first: the same.
    let (status, first) = d
        .call(&d.olga, "payments/list", &[("filter[q]", " ")])
        .await;
    assert_eq!(status, 200, "{first}");
    let mut seen: Vec<String> = first["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["payment_no"].as_str().unwrap().to_owned())
        .collect();
    let next = first["next"].as_str().unwrap().to_owned();
    let (_, second) = d
        .call(&d.olga, "payments/list", &[("filter[after]", &next)])
        .await;
    assert!(second["next"].is_null());
    seen.extend(
        second["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["payment_no"].as_str().unwrap().to_owned()),
    );
    assert_eq!(seen.len(), 55);
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 55);
    // A cursor that is not one is ignored: the first page again.
    let (status, page) = d
        .call(&d.olga, "payments/list", &[("filter[after]", "x.y")])
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        page["items"][0]["payment_no"],
        first["items"][0]["payment_no"]
    );
}

/// The hydrated console calls a list with an empty form when its filter is
/// empty (reached by a click, or after *Clear*): an empty filter is a
/// filter, answered as on a full page load.
async fn every_list_answers_an_empty_filter(b: Backend) {
    let d = desk(b).await;
    for (endpoint, who) in [
        ("tickets/list", &d.olga),
        ("callbacks/list", &d.olga),
        ("payments/list", &d.olga),
        ("outbox/list", &d.olga),
        ("refused/list", &d.olga),
        ("alerts/list", &d.olga),
        ("audit/list", &d.sam),
    ] {
        let (status, page) = d.call(who, endpoint, &[]).await;
        assert_eq!(status, 200, "{endpoint}: {page}");
        assert!(page["items"].is_array(), "{endpoint}: {page}");
    }
}

/// Each page's data is read once per load, so the page is drawn from the
/// same answer the browser hydrates with. The server renders what is inside
/// the signed-in frame more than once; a resource made there was fetched on
/// every pass, and a run that moved between two passes left the page's
/// WebAssembly hydrating one answer over HTML drawn from another.
async fn every_page_reads_its_data_once_per_load(b: Backend) {
    let d = desk(b).await;
    let (_, at) = d.app.today();
    let a = d.app.paid_with("ONCE-A", 1000, "10.00", "SBX-ONCE").await;
    let rows = [
        row("payment", "SBX-ONCE", &a, ("", ""), "10.00", "CNY", &at),
        row(
            "payment",
            "SBX-ONCE-X",
            "PAYONCEX",
            ("", ""),
            "1.00",
            "CNY",
            &at,
        ),
    ];
    assert_eq!(d.reconcile(&rows, "PROVIDER_ONLY").await.len(), 1);
    for (path, who) in [
        ("/", &d.olga),
        ("/tickets", &d.olga),
        ("/callbacks", &d.olga),
        ("/payments", &d.olga),
        ("/runs", &d.olga),
        ("/alerts", &d.olga),
        ("/approvals", &d.sam),
        ("/outbox", &d.olga),
        ("/refused", &d.olga),
        ("/bank", &d.olga),
        ("/audit", &d.sam),
        (&format!("/payments/{a}"), &d.olga),
    ] {
        let res = who
            .get(format!("{}{path}", d.app.app.base))
            .header("accept", "text/html")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{path}");
        let html = res.text().await.unwrap();
        let mut shapes: Vec<String> = Vec::new();
        for data in resolved_resources(&html) {
            // A page's own data is an object of several fields; what the
            // frame itself carries (the session) is read once, outside it.
            let Some(fields) = data
                .get("Ok")
                .and_then(Value::as_object)
                .filter(|o| o.len() > 1)
            else {
                continue;
            };
            let mut keys: Vec<&str> = fields.keys().map(String::as_str).collect();
            keys.sort_unstable();
            shapes.push(keys.join(","));
        }
        assert!(!shapes.is_empty(), "{path}: no data in the page");
        let mut seen = std::collections::BTreeSet::new();
        for shape in &shapes {
            assert!(seen.insert(shape), "{path}: read more than once: {shape}");
        }
    }
}

/// The values a server-rendered page hands to its WebAssembly, parsed.
fn resolved_resources(html: &str) -> Vec<Value> {
    const MARK: &str = "__RESOLVED_RESOURCES[";
    let mut found = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find(MARK) {
        rest = &rest[at + MARK.len()..];
        let Some(open) = rest.find("] = \"") else {
            continue;
        };
        let literal = &rest[open + 4..];
        let mut end = 1;
        let bytes = literal.as_bytes();
        while end < bytes.len() && bytes[end] != b'"' {
            end += if bytes[end] == b'\\' { 2 } else { 1 };
        }
        let text: String = serde_json::from_str(&literal[..=end]).expect("a JSON string");
        found.push(serde_json::from_str(&text).unwrap_or(Value::Null));
        rest = &literal[end..];
    }
    found
}

both_databases!(
    a_dead_callback_replayed_moves_its_payment_once,
    a_callback_that_failed_verification_is_never_replayed,
    bulk_replay_of_dead_callbacks_runs_as_a_job,
    the_dashboard_says_what_the_database_says,
    callback_details_show_no_secret_and_alerts_are_acknowledged,
    a_statement_uploaded_in_the_console_runs_in_the_background,
    the_console_and_the_api_refuse_the_same_upload_forms,
    lists_page_by_keyset_without_gaps_or_repeats,
    every_list_answers_an_empty_filter,
    every_page_reads_its_data_once_per_load,
);
