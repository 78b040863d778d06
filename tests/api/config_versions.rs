//! The settings that decide money as evidence, against a real server on
//! SQLite and PostgreSQL: the first start records version 1 from the host
//! and a restart with the same settings records nothing, a changed host
//! setting records the next version; a console change proposed by one
//! supervisor and approved by another is adopted at once, the next run
//! records it and decides by it (a clean day no longer closes by itself);
//! the proposer cannot approve; a bad value is refused naming its variable
//! and nothing is stored; a close records the version in its signed body.

use crate::both_databases;
use crate::engine_helpers::{EngineApp, spawn_engine_app};
use crate::helpers::Backend;
use crate::recon::{row, statement};
use app::types::Role;
use serde_json::Value;

/// (number, source, status) of every version and proposal, oldest first.
async fn versions(app: &EngineApp) -> Vec<(Option<i64>, String, String)> {
    sqlx::query_as(
        "SELECT version, source, status FROM config_versions \
         ORDER BY COALESCE(version, 1000000), created_at, id",
    )
    .fetch_all(app.pool())
    .await
    .unwrap()
}

async fn audit_actions(app: &EngineApp) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT action FROM audit_log WHERE object_type = 'config_version' ORDER BY seq",
    )
    .fetch_all(app.pool())
    .await
    .unwrap()
}

/// The Settings page's data as `who` sees it.
pub(crate) async fn view(app: &EngineApp, who: &reqwest::Client) -> Value {
    let res = app.app.call_with(who, "settings/view", &[]).await;
    assert_eq!(res.status(), 200);
    res.json().await.unwrap()
}

/// Proposes the settings in force — every field the page offers — with
/// `changes` over them.
pub(crate) async fn propose(
    app: &EngineApp,
    who: &reqwest::Client,
    changes: &[(&str, &str)],
) -> (u16, String) {
    let page = view(app, who).await;
    let mut form: Vec<(String, String)> = page["editable"]
        .as_object()
        .expect("the page's editable settings")
        .iter()
        .filter_map(|(k, in_force)| {
            let given = changes.iter().find(|(c, _)| c == k).map(|(_, v)| *v);
            // A field the page leaves empty (null) stays as in force.
            let v = given.or_else(|| in_force.as_str())?;
            Some((k.clone(), v.to_owned()))
        })
        .collect();
    form.push(("reason".into(), "month-end policy".into()));
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let res = app.app.call_with(who, "settings/propose", &form).await;
    (res.status().as_u16(), res.text().await.unwrap())
}

pub(crate) async fn decide(app: &EngineApp, who: &reqwest::Client, what: &str) -> (u16, String) {
    let pending: String =
        sqlx::query_scalar("SELECT id FROM config_versions WHERE status = 'PENDING'")
            .fetch_one(app.pool())
            .await
            .unwrap();
    let res = app
        .app
        .call_with(who, "settings/decide", &[("id", &pending), ("what", what)])
        .await;
    (res.status().as_u16(), res.text().await.unwrap())
}

/// Uploads a statement carrying one paid payment (no ticket).
async fn clean_day(app: &EngineApp, token: &str, order: &str) -> Value {
    let (date, at) = app.today();
    let txn = format!("SBX-{order}");
    let p = app.paid_with(order, 1000, "10.00", &txn).await;
    let rows = [row("payment", &txn, &p, ("", ""), "10.00", "CNY", &at)];
    let (status, run) = app.upload(token, &date, &statement(&rows)).await;
    assert_eq!(status, 201, "{run}");
    assert_eq!(run["status"], "COMPLETED", "{run}");
    run
}

async fn close_report(app: &EngineApp, token: &str) -> (u16, Value) {
    let (date, _) = app.today();
    let res = app
        .app
        .client
        .get(format!(
            "{}/api/v1/recon/closes/sandbox/{date}",
            app.app.base
        ))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.json().await.unwrap_or_default())
}

/// Version 1 at the first start, nothing at a restart with the same
/// settings, version 2 when a host setting changed.
async fn the_host_records_a_version_only_when_its_settings_change(b: Backend) {
    let mut app = spawn_engine_app(b).await;
    assert_eq!(
        versions(&app).await,
        vec![(Some(1), "host".into(), "ADOPTED".into())]
    );
    assert_eq!(app.app.engine.config_version(), Some(1));
    // The first version is the baseline: its row, no audit entry.
    assert!(audit_actions(&app).await.is_empty());

    app.app.restart().await;
    assert_eq!(
        versions(&app).await.len(),
        1,
        "the same settings: nothing new"
    );
    assert_eq!(app.app.engine.config_version(), Some(1));

    app.app.config.bank_window_days = 9;
    app.app.restart().await;
    assert_eq!(
        versions(&app).await,
        vec![
            (Some(1), "host".into(), "ADOPTED".into()),
            (Some(2), "host".into(), "ADOPTED".into()),
        ]
    );
    assert_eq!(app.app.engine.config_version(), Some(2));
    assert_eq!(app.app.engine.settings().pulls.bank_window_days, 9);
    // A change from the baseline is audited.
    assert_eq!(audit_actions(&app).await, vec!["config.version.host"]);
    let sup = app.app.signed_in("sup1", Role::Supervisor).await;
    let page = view(&app, &sup).await;
    assert_eq!(page["in_force"], 2, "{page}");
    let latest = &page["history"][0];
    assert_eq!(
        latest["changes"][0]["setting"], "bank_window_days",
        "{page}"
    );
    assert_eq!(latest["changes"][0]["before"], "3", "{page}");
    assert_eq!(latest["changes"][0]["after"], "9", "{page}");
}

/// A clean day closes by itself under version 1 and its close records it;
/// a supervisor proposes that no day close by itself, the proposer cannot
/// approve, a second supervisor does: version 2 is in force at once, the
/// next run records it and its day stays open. A restart keeps the console
/// version; a changed host setting overrides it.
async fn a_console_change_approved_by_another_decides_the_next_run(b: Backend) {
    let mut app = spawn_engine_app(b).await;
    let token = app.token().await;
    let run = clean_day(&app, &token, "CV-1").await;
    assert_eq!(run["config_version"], 1, "{run}");
    let (status, doc) = close_report(&app, &token).await;
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["report"]["config_version"], 1, "{doc}");

    let sup1 = app.app.signed_in("sup1", Role::Supervisor).await;
    let sup2 = app.app.signed_in("sup2", Role::Supervisor).await;
    let (status, body) = propose(&app, &sup1, &[("close_allow_open", "OFF")]).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = decide(&app, &sup1, "approve").await;
    assert_ne!(status, 200, "the proposer cannot approve: {body}");
    assert_eq!(app.app.engine.config_version(), Some(1));
    let (status, body) = decide(&app, &sup2, "approve").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(app.app.engine.config_version(), Some(2));
    assert!(!app.app.engine.settings().closing.auto);
    assert_eq!(
        audit_actions(&app).await,
        vec!["config.version.propose", "config.version.approve"]
    );
    let page = view(&app, &sup2).await;
    assert_eq!(page["history"][0]["decided_by"], "sup2", "{page}");
    assert_eq!(page["history"][0]["proposed_by"], "sup1", "{page}");
    assert_eq!(
        page["history"][0]["changes"][0]["setting"], "close_allow_open",
        "{page}"
    );

    // The next day's run, under version 2: recorded, and the day stays
    // open although it left nothing open.
    app.clock.advance_secs(24 * 3600);
    let run = clean_day(&app, &token, "CV-2").await;
    assert_eq!(run["config_version"], 2, "{run}");
    let (status, doc) = close_report(&app, &token).await;
    assert_eq!(status, 404, "auto-close is off under version 2: {doc}");

    // A restart with the host's settings unchanged keeps version 2.
    app.app.restart().await;
    assert_eq!(app.app.engine.config_version(), Some(2));
    assert!(!app.app.engine.settings().closing.auto);
    assert_eq!(versions(&app).await.len(), 2);

    // The host's own values changed: they win, all of them.
    app.app.config.statement_missing_hours = 12;
    app.app.restart().await;
    assert_eq!(app.app.engine.config_version(), Some(3));
    assert!(app.app.engine.settings().closing.auto);
}

/// A bad value is refused naming its variable, and nothing is stored; a
/// second proposal while one waits is refused.
async fn bad_values_are_refused_and_nothing_is_stored(b: Backend) {
    let app = spawn_engine_app(b).await;
    let sup = app.app.signed_in("sup1", Role::Supervisor).await;
    for (key, bad, named) in [
        (
            "cut_window_minutes",
            "30, nobody=5",
            "RECKON_CUT_WINDOW_MINUTES",
        ),
        ("cut_window_minutes", "999", "RECKON_CUT_WINDOW_MINUTES"),
        ("sla_hours", "LOCAL_ONLY=0", "RECKON_SLA_HOURS"),
        ("sla_hours", "NO_SUCH_CLASS=5", "RECKON_SLA_HOURS"),
        ("bank_window_days", "61", "RECKON_BANK_WINDOW_DAYS"),
        (
            "statement_missing_hours",
            "",
            "RECKON_STATEMENT_MISSING_HOURS",
        ),
        ("close_allow_open", "SOMETIMES", "RECKON_CLOSE_ALLOW_OPEN"),
    ] {
        let (status, body) = propose(&app, &sup, &[(key, bad)]).await;
        assert_eq!(status, 400, "{key}={bad}: {body}");
        assert!(body.contains(named), "{key}={bad}: {body}");
    }
    let (status, body) = propose(&app, &sup, &[]).await;
    assert_eq!(status, 400, "nothing changed: {body}");
    assert_eq!(versions(&app).await.len(), 1, "nothing stored");
    assert!(audit_actions(&app).await.is_empty());

    let (status, body) = propose(&app, &sup, &[("bank_window_days", "5")]).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = propose(&app, &sup, &[("bank_window_days", "6")]).await;
    assert_ne!(status, 200, "one proposal waits at a time: {body}");
    // An operator cannot see or change the settings.
    let op = app.app.signed_in("op1", Role::Operator).await;
    let res = app.app.call_with(&op, "settings/view", &[]).await;
    assert_eq!(res.status(), 403);
    // The proposer withdraws their own.
    let (status, body) = decide(&app, &sup, "reject").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        versions(&app).await[1],
        (None, "console".into(), "REJECTED".into())
    );
    assert_eq!(app.app.engine.config_version(), Some(1));
}

both_databases!(
    the_host_records_a_version_only_when_its_settings_change,
    a_console_change_approved_by_another_decides_the_next_run,
    bad_values_are_refused_and_nothing_is_stored,
);
