//! Actions the approval policy holds, over real HTTP with real sessions on
//! SQLite and PostgreSQL. Under a policy that holds a sink's pause, a bulk
//! resend above 0 deliveries, a user's creation and a token that can
//! write: each is held (409 naming the held action) and nothing happens;
//! its proposer cannot approve it, a supervisor cannot approve a user or a
//! token; another person's approval runs it, once, as its proposer. A new
//! token's secret does not work until then; a read-only token is never
//! held. With no policy (the default) the same actions run at once.

use crate::both_databases;
use crate::engine_helpers::{EngineApp, spawn_engine_app};
use crate::helpers::Backend;
use app::types::Role;
use serde_json::Value;

const PW: &str = "correct horse battery";

async fn call(
    app: &EngineApp,
    who: &reqwest::Client,
    endpoint: &str,
    form: &[(&str, &str)],
) -> (u16, Value) {
    let res = app.app.call_with(who, endpoint, form).await;
    let status = res.status().as_u16();
    let text = res.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// The held action a 409 named.
fn held_id(answer: &Value) -> String {
    answer["Held"]["action_id"]
        .as_str()
        .unwrap_or_else(|| panic!("held: {answer}"))
        .to_owned()
}

async fn decide(app: &EngineApp, who: &reqwest::Client, id: &str, what: &str) -> (u16, Value) {
    call(app, who, "held/decide", &[("id", id), ("what", what)]).await
}

async fn paused(app: &EngineApp) -> bool {
    let n: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM sink_state WHERE sink = 'fulfilment' AND paused_at IS NOT NULL",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    n > 0
}

async fn count(app: &EngineApp, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(app.pool()).await.unwrap()
}

/// A GET with a bearer token: its status.
async fn with_token(app: &EngineApp, token: &str) -> u16 {
    reqwest::Client::new()
        .get(format!("{}/api/v1/outbox", app.app.base))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn held_actions_wait_for_another_persons_approval(b: Backend) {
    let app = spawn_engine_app(b).await;
    let root = app.app.signed_in("root", Role::Admin).await;
    let ada = app.app.signed_in("ada", Role::Admin).await;
    let sam = app.app.signed_in("sam", Role::Supervisor).await;
    let sue = app.app.signed_in("sue", Role::Supervisor).await;

    // The default holds nothing: a user is created at once.
    let (status, made) = call(
        &app,
        &root,
        "users/create",
        &[
            ("username", "first"),
            ("role", "operator"),
            ("password", PW),
        ],
    )
    .await;
    assert_eq!(status, 200, "{made}");

    let text = "SINK_PAUSE 1\nBULK_RESEND 1 above 0 deliveries\nUSER_CREATE 1\nTOKEN_CREATE 1\n";
    let (status, id) = call(
        &app,
        &root,
        "policy/propose",
        &[("text", text), ("reason", "month-end controls")],
    )
    .await;
    assert_eq!(status, 200, "{id}");
    let (status, said) = call(
        &app,
        &ada,
        "policy/decide",
        &[("id", id.as_str().unwrap()), ("what", "approve")],
    )
    .await;
    assert_eq!(status, 200, "{said}");

    // A sink's pause: held; the proposer cannot approve; another can.
    let (status, answer) = call(
        &app,
        &sam,
        "sinks/pause",
        &[
            ("name", "fulfilment"),
            ("reason", "consumer broken"),
            ("pause", "true"),
        ],
    )
    .await;
    assert_eq!(status, 409, "{answer}");
    let pause = held_id(&answer);
    assert!(!paused(&app).await, "held, not paused");
    let (status, again) = call(
        &app,
        &sam,
        "sinks/pause",
        &[
            ("name", "fulfilment"),
            ("reason", "again"),
            ("pause", "true"),
        ],
    )
    .await;
    assert_eq!(status, 409, "one pending pause per sink: {again}");
    assert!(again.get("Refused").is_some(), "{again}");
    let (status, said) = decide(&app, &sam, &pause, "approve").await;
    assert_eq!(
        (status, said.clone()),
        (403, serde_json::json!("OwnProposal")),
        "{said}"
    );
    let (status, said) = decide(&app, &sue, &pause, "approve").await;
    assert_eq!(status, 200, "{said}");
    assert!(paused(&app).await, "paused at the approval");
    let (status, _) = decide(&app, &ada, &pause, "approve").await;
    assert_eq!(status, 409, "decided already");
    let by: String = sqlx::query_scalar("SELECT actor FROM audit_log WHERE action = 'sink.pause'")
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(by, "sam", "run as its proposer");

    // A bulk resend above 0 deliveries: held, then one job.
    let p = app.payment("ORDER-HELD-1", 1000, "EUR").await;
    let body = app.notice("evt_held_1", &p, "SUCCEEDED", "10.00", "EUR", "TXN-HELD-1");
    assert_eq!(app.post_signed("evt_held_1", &body).await.status(), 200);
    sqlx::query("UPDATE outbox_deliveries SET status = 'DEAD' WHERE sink = 'fulfilment'")
        .execute(app.pool())
        .await
        .unwrap();
    let (status, answer) = call(
        &app,
        &sam,
        "outbox/bulk-resend",
        &[("filter[sink]", "fulfilment")],
    )
    .await;
    assert_eq!(status, 409, "{answer}");
    let resend = held_id(&answer);
    let jobs = "SELECT COUNT(*) FROM outbox_jobs";
    assert_eq!(count(&app, jobs).await, 0, "held: no job");
    let (status, said) = decide(&app, &sue, &resend, "approve").await;
    assert_eq!(status, 200, "{said}");
    assert_eq!(
        count(&app, jobs).await,
        1,
        "one job at the approval: {said}"
    );

    // A user: held; a supervisor may not approve it; an admin does.
    let (status, answer) = call(
        &app,
        &root,
        "users/create",
        &[
            ("username", "newbie"),
            ("role", "operator"),
            ("password", PW),
        ],
    )
    .await;
    assert_eq!(status, 409, "{answer}");
    let user = held_id(&answer);
    let res = app
        .app
        .call_with(
            &crate::helpers::client(),
            "login",
            &[("username", "newbie"), ("password", PW)],
        )
        .await;
    assert_eq!(res.status(), 401, "no such user yet");
    let (status, said) = decide(&app, &sam, &user, "approve").await;
    assert_eq!(
        (status, said.clone()),
        (403, serde_json::json!("Forbidden")),
        "{said}"
    );
    let (status, said) = decide(&app, &ada, &user, "approve").await;
    assert_eq!(status, 200, "{said}");
    let res = app
        .app
        .call_with(
            &crate::helpers::client(),
            "login",
            &[("username", "newbie"), ("password", PW)],
        )
        .await;
    assert_eq!(
        res.status(),
        200,
        "the password chosen at the proposal works"
    );
    let created_by: String =
        sqlx::query_scalar("SELECT created_by FROM users WHERE username = 'newbie'")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(created_by, "root");
    let hashes = "SELECT COUNT(*) FROM held_actions WHERE params_json LIKE '%argon2%'";
    assert_eq!(count(&app, hashes).await, 0, "the hash left the held row");

    // A token that can write: shown now, works once approved.
    let (status, made) = call(
        &app,
        &root,
        "tokens/create",
        &[
            ("name", "erp"),
            ("scopes[]", "outbox:read"),
            ("scopes[]", "outbox:write"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{made}");
    let token = made["token"].as_str().unwrap().to_owned();
    let held = made["held_action"].as_str().unwrap().to_owned();
    assert_eq!(
        with_token(&app, &token).await,
        401,
        "held: no such token yet"
    );
    let (status, said) = decide(&app, &root, &held, "approve").await;
    assert_eq!(status, 403, "not its proposer: {said}");
    let (status, said) = decide(&app, &ada, &held, "approve").await;
    assert_eq!(status, 200, "{said}");
    assert_eq!(with_token(&app, &token).await, 200, "approved: it works");
    // A token that only reads is never held.
    let (status, made) = call(
        &app,
        &root,
        "tokens/create",
        &[("name", "bi"), ("scopes[]", "outbox:read")],
    )
    .await;
    assert_eq!(status, 200, "{made}");
    assert!(made["held_action"].is_null(), "{made}");
    assert_eq!(with_token(&app, made["token"].as_str().unwrap()).await, 200);

    // Withdrawn by its proposer: nothing runs.
    let (status, answer) = call(
        &app,
        &root,
        "users/create",
        &[
            ("username", "never"),
            ("role", "operator"),
            ("password", PW),
        ],
    )
    .await;
    assert_eq!(status, 409, "{answer}");
    let never = held_id(&answer);
    let (status, said) = decide(&app, &root, &never, "reject").await;
    assert_eq!(status, 200, "{said}");
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM users WHERE username = 'never'").await,
        0
    );
    let (status, list) = call(&app, &sam, "held/list", &[]).await;
    assert_eq!(status, 200, "{list}");
    let statuses: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == "DONE").count(),
        4,
        "{list}"
    );
    assert!(statuses.contains(&"WITHDRAWN"), "{list}");
}

both_databases!(held_actions_wait_for_another_persons_approval);
