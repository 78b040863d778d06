//! Ticket ageing and SLA on SQLite and PostgreSQL: the
//! tickets come from real reconciliations of the sandbox's statements, each
//! on its own day by the engine's hand-moved clock, are closed through the
//! console, and are read back through the dashboard and the tickets list's
//! server functions; the SLA pass is the one the worker runs.

use crate::both_databases;
use crate::engine_helpers::{EngineApp, spawn_engine_app_with};
use crate::helpers::Backend;
use crate::recon::{row, statement};
use app::types::Role;
use serde_json::Value;

const PASSWORD: &str = "correct horse battery";
const HOUR: i64 = 3_600_000_000;
const DAY: i64 = 24 * HOUR;

struct Desk {
    app: EngineApp,
    token: String,
    olga: reqwest::Client,
}

async fn desk(b: Backend, sla: &str) -> Desk {
    let sla = reckon::domain::Sla::parse(sla).unwrap();
    let app = spawn_engine_app_with(b, |c| c.sla = sla).await;
    let token = app.token().await;
    app.app.add_user("olga", Role::Operator, PASSWORD).await;
    let olga = crate::helpers::client();
    let res = app
        .app
        .call_with(
            &olga,
            "login",
            &[("username", "olga"), ("password", PASSWORD)],
        )
        .await;
    assert!(res.status().is_success() || res.status().is_redirection());
    Desk { app, token, olga }
}

/// Noon (UTC, the tests' business zone) of the day `days` before today.
fn noon_days_ago(days: i64) -> i64 {
    let today = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date();
    let day = today.checked_sub(jiff::Span::new().days(days)).unwrap();
    day.at(12, 0, 0, 0)
        .to_zoned(jiff::tz::TimeZone::UTC)
        .unwrap()
        .timestamp()
        .as_microsecond()
}

impl Desk {
    async fn call(&self, endpoint: &str, form: &[(&str, &str)]) -> (u16, Value) {
        let res = self.app.app.call_with(&self.olga, endpoint, form).await;
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    /// At `at`, reconciles that day against a statement of `rows` (each a
    /// payment the provider has: provider-only unless Reckon has it).
    async fn day_at(&self, at: i64, rows: &[String]) -> String {
        self.app.clock.set(at);
        let (date, _) = self.app.today();
        let (status, body) = self.app.upload(&self.token, &date, &statement(rows)).await;
        assert_eq!(status, 201, "{body}");
        date
    }

    /// A provider-only row for payment `no`, at the clock's time.
    fn provider_only(&self, no: &str) -> String {
        let (_, at) = self.app.today();
        row(
            "payment",
            &format!("SBX-{no}"),
            no,
            ("", ""),
            "66.60",
            "CNY",
            &at,
        )
    }

    async fn ticket_of(&self, payment_no: &str) -> String {
        sqlx::query_scalar("SELECT discrepancy_id FROM discrepancies WHERE payment_no = $1")
            .bind(payment_no)
            .fetch_one(self.app.pool())
            .await
            .unwrap()
    }

    async fn close(&self, ticket: &str, at: i64) {
        self.app.clock.set(at);
        let (status, body) = self
            .call(
                "tickets/conclude",
                &[("id", ticket), ("conclusion", "explained by the provider")],
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }

    async fn dashboard(&self, day: &str) -> Value {
        let (status, dash) = self.call("dashboard", &[("day", day)]).await;
        assert_eq!(status, 200, "{dash}");
        dash["ageing"].clone()
    }

    async fn list(&self, form: &[(&str, &str)]) -> (u16, Value) {
        self.call("tickets/list", form).await
    }
}

fn change(v: &Value) -> (String, i64, i64, i64) {
    (
        v["day"].as_str().unwrap().to_owned(),
        v["new"].as_i64().unwrap(),
        v["persisting"].as_i64().unwrap(),
        v["resolved"].as_i64().unwrap(),
    )
}

fn class_row<'a>(ageing: &'a Value, class: &str) -> &'a Value {
    ageing["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["class"] == class)
        .unwrap_or_else(|| panic!("no {class} in {ageing}"))
}

async fn ageing_buckets_and_new_persisting_resolved_across_three_days(b: Backend) {
    let d = desk(b, "").await;
    let d3 = noon_days_ago(1);
    let (d1, d2) = (d3 - 2 * DAY, d3 - DAY);
    // Older tickets: 45 days (stays open), 35 days (closed on day 3) and
    // 10 days (stays open).
    for (no, at) in [
        ("AGE-Z", d3 - 45 * DAY),
        ("AGE-A", d3 - 35 * DAY),
        ("AGE-B", d3 - 10 * DAY),
    ] {
        d.app.clock.set(at);
        d.day_at(at, &[d.provider_only(no)]).await;
    }
    // Day 1: two found.
    d.app.clock.set(d1);
    let day1 = d
        .day_at(d1, &[d.provider_only("AGE-C"), d.provider_only("AGE-E")])
        .await;
    // Day 2: one of day 1's closed; one provider-only and one amount
    // mismatch found.
    d.close(&d.ticket_of("AGE-C").await, d2).await;
    let m = d.app.paid_with("AGE-M", 10000, "100.00", "SBX-AGE-M").await;
    let (_, at) = d.app.today();
    let m_row = row("payment", "SBX-AGE-M", &m, ("", ""), "101.00", "CNY", &at);
    let day2 = d.day_at(d2, &[d.provider_only("AGE-F"), m_row]).await;
    // Day 3: the 35-day-old one closed; two found.
    d.close(&d.ticket_of("AGE-A").await, d3).await;
    let day3 = d
        .day_at(d3, &[d.provider_only("AGE-G"), d.provider_only("AGE-H")])
        .await;
    d.app.clock.set(d3 + HOUR);

    let ageing = d.dashboard(&day3).await;
    // Found that day; open at its end though found before; closed that day.
    assert_eq!(change(&ageing["day"]), (day3.clone(), 2, 5, 1), "{ageing}");
    assert_eq!(
        change(&ageing["before"]),
        (day2.clone(), 2, 4, 1),
        "{ageing}"
    );
    let earlier = d.dashboard(&day2).await;
    assert_eq!(change(&earlier["day"]), (day2, 2, 4, 1), "{earlier}");
    assert_eq!(change(&earlier["before"]), (day1, 2, 3, 0), "{earlier}");

    // Open now by age: 0–1 (F, G, H), 2–7 (E), 8–30 (B), > 30 (Z); past
    // the 24 h SLA of PROVIDER_ONLY: Z, B, E, F.
    let po = class_row(&ageing, "PROVIDER_ONLY");
    assert_eq!(po["buckets"], serde_json::json!([3, 1, 1, 1]), "{ageing}");
    assert_eq!(po["overdue"], 4);
    assert_eq!(po["sla_hours"], 24);
    // AMOUNT_MISMATCH: 25 hours old, inside its 48 hours.
    let am = class_row(&ageing, "AMOUNT_MISMATCH");
    assert_eq!(am["buckets"], serde_json::json!([1, 0, 0, 0]), "{ageing}");
    assert_eq!(am["overdue"], 0);

    // The list filters by the same buckets, open tickets only.
    for (age, want) in [("0-1", 4), ("2-7", 1), ("8-30", 1), ("31+", 1)] {
        let (status, page) = d.list(&[("filter[age]", age)]).await;
        assert_eq!(status, 200, "{page}");
        assert_eq!(page["total"], want, "{age}: {page}");
    }
    let (_, old) = d.list(&[("filter[age]", "31+")]).await;
    let z = &old["items"][0];
    assert_eq!(z["payment_no"], "AGE-Z");
    assert_eq!(z["age_days"], 45);
    assert_eq!(z["overdue"], true);
    let (_, fresh) = d
        .list(&[("filter[age]", "0-1"), ("filter[class]", "PROVIDER_ONLY")])
        .await;
    assert_eq!(fresh["total"], 3);
    let g = fresh["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["payment_no"] == "AGE-G")
        .unwrap();
    assert_eq!(
        (g["age_days"].as_i64(), g["overdue"].as_bool()),
        (Some(0), Some(false))
    );
    // A closed ticket has no age.
    let (_, closed) = d.list(&[("filter[status]", "CLOSED")]).await;
    assert_eq!(closed["total"], 2);
    assert!(closed["items"][0]["age_days"].is_null());
    // A bucket that is not one is refused, not an empty list.
    let (status, body) = d.list(&[("filter[age]", "7")]).await;
    assert_ne!(status, 200, "{body}");
    assert!(body.to_string().contains("age"), "{body}");
}

async fn an_sla_alert_is_raised_once_when_crossed_and_not_before(b: Backend) {
    let d = desk(b, "PROVIDER_ONLY=2").await;
    let t = noon_days_ago(1);
    d.app.clock.set(t);
    let m = d.app.paid_with("SLA-M", 10000, "100.00", "SBX-SLA-M").await;
    let (_, at) = d.app.today();
    let rows = [
        d.provider_only("SLA-X"),
        d.provider_only("SLA-CLOSED"),
        row("payment", "SBX-SLA-M", &m, ("", ""), "101.00", "CNY", &at),
    ];
    d.day_at(t, &rows).await;
    let x = d.ticket_of("SLA-X").await;
    let mismatch = d.ticket_of(&m).await;
    // Closed before its SLA ran out: never alerted.
    d.close(&d.ticket_of("SLA-CLOSED").await, t + HOUR).await;
    let engine = d.app.app_engine();
    let pass = |now| reckon::triage::sla::raise_overdue(&engine, now);

    // A minute before the two hours: nothing.
    assert_eq!(pass(t + 2 * HOUR - 60_000_000).await.unwrap(), 0);
    assert_eq!(d.app.app.alert_count("sla_overdue").await, 0);
    d.app.clock.set(t + 2 * HOUR - 60_000_000);
    let (_, shown) = d.call("tickets/show", &[("id", &x)]).await;
    assert_eq!(shown["summary"]["overdue"], false, "{shown}");
    assert_eq!(shown["summary"]["sla_due_at"], t + 2 * HOUR);

    // At two hours: the PROVIDER_ONLY ticket, once; the closed one never;
    // the AMOUNT_MISMATCH (48 h) not yet.
    assert_eq!(pass(t + 2 * HOUR).await.unwrap(), 1);
    assert_eq!(pass(t + 3 * HOUR).await.unwrap(), 0);
    assert_eq!(d.app.app.alert_count("sla_overdue").await, 1);
    let (key, payment): (String, Option<String>) =
        sqlx::query_as("SELECT dedupe_key, payment_no FROM alerts WHERE kind = 'sla_overdue'")
            .fetch_one(d.app.pool())
            .await
            .unwrap();
    assert_eq!(key, reckon::triage::sla::sla_key(&x));
    assert_eq!(payment.as_deref(), Some("SLA-X"));
    d.app.clock.set(t + 3 * HOUR);
    let (_, shown) = d.call("tickets/show", &[("id", &x)]).await;
    assert_eq!(shown["summary"]["overdue"], true, "{shown}");
    assert!(
        shown["timeline"].to_string().contains("sla overdue"),
        "{shown}"
    );

    // Two passes at once past 48 hours: the mismatch's alert raised once.
    let (a, b2) = tokio::join!(pass(t + 49 * HOUR), pass(t + 49 * HOUR));
    assert_eq!(a.unwrap() + b2.unwrap(), 1);
    assert_eq!(d.app.app.alert_count("sla_overdue").await, 2);
    let alerted: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM discrepancies WHERE sla_alerted_at IS NOT NULL")
            .fetch_one(d.app.pool())
            .await
            .unwrap();
    assert_eq!(alerted, 2);
    let marked: Option<i64> =
        sqlx::query_scalar("SELECT sla_alerted_at FROM discrepancies WHERE discrepancy_id = $1")
            .bind(&mismatch)
            .fetch_one(d.app.pool())
            .await
            .unwrap();
    assert_eq!(marked, Some(t + 49 * HOUR));
}

both_databases!(
    ageing_buckets_and_new_persisting_resolved_across_three_days,
    an_sla_alert_is_raised_once_when_crossed_and_not_before,
);
