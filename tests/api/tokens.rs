//! API tokens: every `/api/v1` route against every kind of token (the
//! scope matrix), what a token's calls are audited as, its last use, and
//! the console's tokens page — each on SQLite and PostgreSQL.

use crate::both_databases;
use crate::engine_helpers::spawn_engine_app;
use crate::helpers::{Backend, TestApp, spawn_app};
use app::tokens::{CreatedToken, Scope, TokenRow};
use app::types::Role;
use reckon::accounts::{Actor, TokenRequest};
use serde_json::{Value, json};
use std::collections::BTreeSet;

const PW: &str = "correct horse battery";

/// The scope each `/api/v1` route needs (None: any usable token). Kept
/// here by hand: the routes come from the served OpenAPI document, and
/// one without a line here fails the test.
const EXPECTED: &[(&str, &str, Option<&str>)] = &[
    ("get", "/api/v1/whoami", None),
    ("post", "/api/v1/payments", Some("payments:write")),
    (
        "get",
        "/api/v1/payments/{payment_no}",
        Some("payments:read"),
    ),
    (
        "post",
        "/api/v1/payments/{payment_no}/close",
        Some("payments:write"),
    ),
    (
        "post",
        "/api/v1/payments/{payment_no}/refunds",
        Some("refunds:write"),
    ),
    ("get", "/api/v1/refunds/{refund_no}", Some("payments:read")),
    ("post", "/api/v1/recon/runs", Some("recon:write")),
    ("get", "/api/v1/recon/runs/{run_id}", Some("recon:read")),
    ("get", "/api/v1/recon/days", Some("recon:read")),
    ("get", "/api/v1/disputes", Some("recon:read")),
    ("post", "/api/v1/recon/pulls", Some("recon:write")),
    ("post", "/api/v1/recon/settlements", Some("recon:write")),
    // A preview writes nothing: reading is enough.
    ("post", "/api/v1/recon/previews", Some("recon:read")),
    (
        "post",
        "/api/v1/recon/runs/{run_id}/preview",
        Some("recon:read"),
    ),
    (
        "post",
        "/api/v1/recon/runs/{run_id}/resume",
        Some("recon:write"),
    ),
    (
        "get",
        "/api/v1/recon/runs/{run_id}/file",
        Some("statements:download"),
    ),
    (
        "get",
        "/api/v1/recon/runs/{run_id}/results.csv",
        Some("recon:read"),
    ),
    (
        "get",
        "/api/v1/recon/runs/{run_id}/results.parquet",
        Some("recon:read"),
    ),
    (
        "get",
        "/api/v1/recon/closes/{provider}/{date}",
        Some("recon:read"),
    ),
    ("post", "/api/v1/recon/closes/verify", Some("recon:read")),
    ("post", "/api/v1/bank/statements", Some("bank:write")),
    ("get", "/api/v1/bank/statements", Some("bank:read")),
    ("get", "/api/v1/bank/payouts", Some("bank:read")),
    ("post", "/api/v1/bank/match", Some("bank:write")),
    ("get", "/api/v1/bank/expected", Some("bank:read")),
    ("get", "/api/v1/bulk/jobs/{job_id}", Some("recon:read")),
    ("get", "/api/v1/outbox", Some("outbox:read")),
    ("get", "/api/v1/outbox/{message_id}", Some("outbox:read")),
    (
        "post",
        "/api/v1/outbox/{message_id}/resend",
        Some("outbox:write"),
    ),
    ("post", "/api/v1/outbox/resend", Some("outbox:write")),
    ("post", "/api/v1/outbox/recover", Some("outbox:write")),
    ("get", "/api/v1/outbox/jobs/{job_id}", Some("outbox:read")),
    (
        "post",
        "/api/v1/outbox/jobs/{job_id}/cancel",
        Some("outbox:write"),
    ),
    ("get", "/api/v1/sinks", Some("outbox:read")),
    ("post", "/api/v1/sinks/{name}/pause", Some("sinks:write")),
    ("post", "/api/v1/sinks/{name}/resume", Some("sinks:write")),
    ("post", "/api/v1/sinks/{name}/retry", Some("sinks:write")),
    ("get", "/api/v1/refused", Some("webhooks:read")),
    ("get", "/api/v1/refused/{id}", Some("webhooks:read")),
];

/// Who calls in the matrix.
#[derive(Clone, Debug)]
enum Caller {
    NoToken,
    Scoped(Scope),
    Expired,
    Revoked,
    OwnerDisabled,
    /// A token from before scopes: every scope.
    Legacy,
}

/// What a call must get: 401, 403, or past the token to its handler
/// (a 2xx, or the handler's own refusal of the made-up ids and bodies).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Unauthorized,
    Forbidden,
    Handled,
}

fn expected(caller: &Caller, need: Option<&str>) -> Outcome {
    match (caller, need) {
        (Caller::NoToken | Caller::Expired | Caller::Revoked | Caller::OwnerDisabled, _) => {
            Outcome::Unauthorized
        }
        (Caller::Legacy, _) | (Caller::Scoped(_), None) => Outcome::Handled,
        (Caller::Scoped(have), Some(need)) if have.as_str() == need => Outcome::Handled,
        (Caller::Scoped(_), Some(_)) => Outcome::Forbidden,
    }
}

fn every_scope(name: &str, owner_id: Option<String>) -> TokenRequest {
    TokenRequest {
        name: name.to_owned(),
        scopes: Scope::ALL.to_vec(),
        expires_days: None,
        owner_id,
    }
}

async fn make(app: &TestApp, req: TokenRequest) -> CreatedToken {
    app.accounts
        .create_token(&Actor::cli(), &req)
        .await
        .unwrap()
}

async fn exec(app: &TestApp, sql: &str, value: Option<i64>, name: &str) {
    sqlx::query(sql)
        .bind(value)
        .bind(name)
        .execute(&app.accounts.db.pool)
        .await
        .unwrap();
}

/// Every caller of the matrix with its token.
async fn callers(app: &TestApp) -> Vec<(Caller, Option<String>)> {
    let mut all = vec![(Caller::NoToken, None)];
    for scope in Scope::ALL {
        let made = make(
            app,
            TokenRequest {
                name: format!("only-{scope}"),
                scopes: vec![scope],
                expires_days: Some(30),
                owner_id: None,
            },
        )
        .await;
        all.push((Caller::Scoped(scope), Some(made.token)));
    }
    let expired = make(app, every_scope("expired", None)).await;
    let now = reckon::store::now_micros();
    exec(
        app,
        "UPDATE api_tokens SET expires_at = $1 WHERE name = $2",
        Some(now - 1),
        "expired",
    )
    .await;
    all.push((Caller::Expired, Some(expired.token)));

    let revoked = make(app, every_scope("revoked", None)).await;
    let row = app.accounts.token_by_name("revoked").await.unwrap();
    app.accounts
        .revoke_token(&Actor::cli(), &row.id)
        .await
        .unwrap();
    all.push((Caller::Revoked, Some(revoked.token)));

    let owner = app.add_user("leaver", Role::Operator, PW).await;
    let owned = make(app, every_scope("leavers", Some(owner.id.clone()))).await;
    app.accounts
        .set_disabled(&Actor::cli(), &owner.id, true)
        .await
        .unwrap();
    all.push((Caller::OwnerDisabled, Some(owned.token)));

    let legacy = make(app, every_scope("legacy", None)).await;
    exec(
        app,
        "UPDATE api_tokens SET scopes = NULL, expires_at = $1 WHERE name = $2",
        None,
        "legacy",
    )
    .await;
    all.push((Caller::Legacy, Some(legacy.token)));
    all
}

/// The document's operations that take a token, with the scopes each
/// states in its `security`.
fn documented(doc: &Value) -> Vec<(String, String, Vec<String>)> {
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let security = op["security"]
                .as_array()
                .expect("every operation states its security");
            // `[{}]`: open to anyone (the document itself).
            if security.iter().all(|r| r.as_object().unwrap().is_empty()) {
                continue;
            }
            let scopes = security[0]["bearer"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_owned())
                .collect();
            ops.push((method.clone(), path.clone(), scopes));
        }
    }
    ops
}

async fn call(app: &TestApp, method: &str, path: &str, token: Option<&str>) -> reqwest::Response {
    let url = format!("{}{}", app.base, path.replace(['{', '}'], "X"));
    let mut req = match method {
        "get" => app.client.get(&url),
        "post" => app.client.post(&url).json(&json!({})),
        other => panic!("a method the matrix does not know: {other}"),
    };
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    req.send().await.unwrap()
}

async fn every_api_route_answers_each_token_as_its_scope_says(b: Backend) {
    let engine = spawn_engine_app(b).await;
    let app = &engine.app;
    let doc: Value = app
        .client
        .get(format!("{}/api/v1/openapi.json", app.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let routes = documented(&doc);
    let mut wrong = Vec::new();

    // The routes: the document's, the server's table and this test's agree.
    let in_doc: BTreeSet<(String, String)> = routes
        .iter()
        .map(|(m, p, _)| (m.clone(), p.clone()))
        .collect();
    let in_test: BTreeSet<(String, String)> = EXPECTED
        .iter()
        .map(|(m, p, _)| ((*m).to_owned(), (*p).to_owned()))
        .collect();
    let in_server: BTreeSet<(String, String)> = reckon::web::bearer::ROUTES
        .iter()
        .map(|(m, p, _)| ((*m).to_owned(), (*p).to_owned()))
        .collect();
    for (m, p) in in_doc.difference(&in_test) {
        wrong.push(format!("{m} {p}: a route without a line in EXPECTED"));
    }
    for (m, p) in in_test.difference(&in_doc) {
        wrong.push(format!("{m} {p}: in EXPECTED but not served"));
    }
    assert_eq!(
        in_server, in_doc,
        "the server's scope table and the document"
    );
    for (method, path, scopes) in &routes {
        let need = EXPECTED
            .iter()
            .find(|(m, p, _)| m == method && p == path)
            .and_then(|(_, _, n)| *n);
        let stated: Vec<String> = need.map(str::to_owned).into_iter().collect();
        if *scopes != stated {
            wrong.push(format!(
                "{method} {path}: the document states {scopes:?}, expected {stated:?}"
            ));
        }
    }

    let callers = callers(app).await;
    let mut cells = 0;
    for (method, path, _) in &routes {
        let Some((_, _, need)) = EXPECTED.iter().find(|(m, p, _)| m == method && p == path) else {
            continue;
        };
        for (caller, token) in &callers {
            cells += 1;
            let res = call(app, method, path, token.as_deref()).await;
            let status = res.status().as_u16();
            let challenge = res
                .headers()
                .get("www-authenticate")
                .map(|v| v.to_str().unwrap().to_owned());
            let body: Value = res.json().await.unwrap_or(Value::Null);
            let got = match status {
                401 => Outcome::Unauthorized,
                403 => Outcome::Forbidden,
                _ => Outcome::Handled,
            };
            let want = expected(caller, *need);
            if got != want {
                wrong.push(format!(
                    "{method} {path} as {caller:?}: {status} {body}, expected {want:?}"
                ));
                continue;
            }
            match got {
                Outcome::Forbidden => {
                    let scope = need.unwrap();
                    let error = body["error"].as_str().unwrap_or_default();
                    if !error.contains(scope)
                        || challenge.as_deref()
                            != Some(&*format!(
                                "Bearer error=\"insufficient_scope\", scope=\"{scope}\""
                            ))
                    {
                        wrong.push(format!(
                            "{method} {path} as {caller:?}: the 403 does not name {scope}: {body} {challenge:?}"
                        ));
                    }
                }
                Outcome::Unauthorized if challenge.as_deref() != Some("Bearer") => {
                    wrong.push(format!(
                        "{method} {path} as {caller:?}: no Bearer challenge"
                    ));
                }
                Outcome::Handled if status >= 500 => {
                    wrong.push(format!("{method} {path} as {caller:?}: {status} {body}"));
                }
                _ => {}
            }
        }
    }
    assert_eq!(cells, EXPECTED.len() * (Scope::ALL.len() + 5));
    assert!(
        wrong.is_empty(),
        "{} of {cells} calls answered otherwise:\n{}",
        wrong.len(),
        wrong.join("\n")
    );

    // Each refusal says why, to whoever holds the token.
    for (caller, token) in &callers {
        let says = match caller {
            Caller::Expired => "expired",
            Caller::Revoked => "revoked",
            Caller::OwnerDisabled => "owner is disabled",
            _ => continue,
        };
        let res = call(app, "get", "/api/v1/whoami", token.as_deref()).await;
        let body: Value = res.json().await.unwrap();
        assert!(
            body["error"].as_str().unwrap().contains(says),
            "{caller:?}: {body}"
        );
    }
}

/// A token named as a user is: its writes are audited as the token.
async fn api_actions_are_audited_as_the_token(b: Backend) {
    let engine = spawn_engine_app(b).await;
    let app = &engine.app;
    app.add_user("sup1", Role::Supervisor, PW).await;
    let token = app
        .api_token_with("sup1", &[Scope::SinksWrite, Scope::BankWrite])
        .await;
    let res = app
        .client
        .post(format!("{}/api/v1/sinks/fulfilment/pause", app.base))
        .bearer_auth(&token)
        .json(&json!({ "reason": "the shop moves house" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let csv = "date,amount,currency,reference,counterparty,direction\n\
               2026-12-03,10.00,EUR,po_1,Stripe,C\n";
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(csv.as_bytes().to_vec()).file_name("bank.csv"),
    );
    let res = app
        .client
        .post(format!("{}/api/v1/bank/statements", app.base))
        .bearer_auth(&token)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201, "{}", res.text().await.unwrap());

    let audited: Vec<(String, String)> = sqlx::query_as(
        "SELECT action, actor FROM audit_log WHERE action IN ('sink.pause', 'bank.statement.import') ORDER BY seq",
    )
    .fetch_all(&app.accounts.db.pool)
    .await
    .unwrap();
    assert_eq!(
        audited,
        [
            ("sink.pause".to_owned(), "token:sup1".to_owned()),
            ("bank.statement.import".to_owned(), "token:sup1".to_owned()),
        ]
    );
    let paused_by: Option<String> =
        sqlx::query_scalar("SELECT paused_by FROM sink_state WHERE sink = 'fulfilment'")
            .fetch_one(&app.accounts.db.pool)
            .await
            .unwrap();
    assert_eq!(paused_by.as_deref(), Some("token:sup1"));
}

async fn last_used(app: &TestApp, name: &str) -> Option<i64> {
    app.accounts.token_by_name(name).await.unwrap().last_used_at
}

/// A call marks its token used, but a token used less than a minute ago
/// is not written again.
async fn a_token_is_marked_used_at_most_once_a_minute(b: Backend) {
    let app = spawn_app(b).await;
    let token = app.api_token_with("shop", &[Scope::PaymentsRead]).await;
    assert_eq!(last_used(&app, "shop").await, None);
    let whoami = || call(&app, "get", "/api/v1/whoami", Some(&token));
    assert_eq!(whoami().await.status(), 200);
    assert!(last_used(&app, "shop").await.is_some());

    let now = reckon::store::now_micros();
    let recent = now - 30_000_000;
    exec(
        &app,
        "UPDATE api_tokens SET last_used_at = $1 WHERE name = $2",
        Some(recent),
        "shop",
    )
    .await;
    assert_eq!(whoami().await.status(), 200);
    assert_eq!(last_used(&app, "shop").await, Some(recent));

    let long_ago = now - 120_000_000;
    exec(
        &app,
        "UPDATE api_tokens SET last_used_at = $1 WHERE name = $2",
        Some(long_ago),
        "shop",
    )
    .await;
    assert_eq!(whoami().await.status(), 200);
    assert!(last_used(&app, "shop").await.unwrap() >= now);
}

async fn audit_of_tokens(app: &TestApp) -> Vec<(String, String, String)> {
    sqlx::query_as(
        "SELECT actor, action, after_json FROM audit_log WHERE object_type = 'api_token' ORDER BY seq",
    )
    .fetch_all(&app.accounts.db.pool)
    .await
    .unwrap()
}

/// An admin makes a token in the console (theirs, shown once), it works
/// for its scope only, and revoking it stops it; both audited. Operators
/// and supervisors may do none of it.
async fn admins_make_and_revoke_tokens_in_the_console(b: Backend) {
    let app = spawn_app(b).await;
    let root = app.add_user("root", Role::Admin, PW).await;
    assert_eq!(app.login("root", PW).await.status(), 200);

    let res = app
        .call(
            "tokens/create",
            &[
                ("name", "shop-eu"),
                ("scopes[]", "payments:read"),
                ("scopes[]", "refunds:write"),
                ("expires_days", "90"),
            ],
        )
        .await;
    assert_eq!(res.status(), 200);
    let made: CreatedToken = res.json().await.unwrap();
    assert!(made.token.starts_with(&made.prefix));

    let listed: Vec<TokenRow> = app.call("tokens/list", &[]).await.json().await.unwrap();
    assert_eq!(listed.len(), 1);
    let row = &listed[0];
    assert_eq!(row.name, "shop-eu");
    assert_eq!(row.owner.as_deref(), Some("root"));
    assert_eq!(
        row.scopes,
        Some(vec![Scope::PaymentsRead, Scope::RefundsWrite])
    );
    let days = (row.expires_at.unwrap() - row.created_at) / (24 * 3600 * 1_000_000);
    assert_eq!(days, 90);
    assert_eq!((row.last_used_at, row.revoked_at), (None, None));
    let listed_text = serde_json::to_string(&listed).unwrap();
    assert!(
        !listed_text.contains(&made.token),
        "the token is shown once"
    );

    let refund = || {
        call(
            &app,
            "get",
            "/api/v1/refunds/{refund_no}",
            Some(&made.token),
        )
    };
    assert_eq!(refund().await.status(), 404, "read: past the token");
    assert_eq!(
        call(&app, "get", "/api/v1/recon/days", Some(&made.token))
            .await
            .status(),
        403
    );

    // Bad input is refused, naming what is wrong; nothing is made.
    for (form, says) in [
        (vec![("name", "no-scope")], "at least one scope"),
        (
            vec![("name", "odd"), ("scopes[]", "payments:delete")],
            "unknown scope",
        ),
        (
            vec![
                ("name", "soon"),
                ("scopes[]", "recon:read"),
                ("expires_days", "0"),
            ],
            "1 to 3650 days",
        ),
        (
            vec![("name", "shop-eu"), ("scopes[]", "recon:read")],
            "already exists",
        ),
    ] {
        let res = app.call("tokens/create", &form).await;
        assert_eq!(res.status(), 400, "{form:?}");
        assert!(res.text().await.unwrap().contains(says), "{form:?}");
    }

    // Operators and supervisors may neither list, make nor revoke.
    for (name, role) in [("olga", Role::Operator), ("sue", Role::Supervisor)] {
        let client = crate::helpers::client();
        app.add_user(name, role, PW).await;
        let login = app
            .call_with(&client, "login", &[("username", name), ("password", PW)])
            .await;
        assert_eq!(login.status(), 200);
        let list = app.call_with(&client, "tokens/list", &[]).await;
        assert_eq!(list.status(), 403, "{name}");
        let create = app
            .call_with(
                &client,
                "tokens/create",
                &[("name", name), ("scopes[]", "payments:read")],
            )
            .await;
        assert_eq!(create.status(), 403, "{name}");
        let revoke = app
            .call_with(&client, "tokens/revoke", &[("id", &row.id)])
            .await;
        assert_eq!(revoke.status(), 403, "{name}");
        let page = client
            .get(format!("{}/tokens", app.base))
            .send()
            .await
            .unwrap();
        assert_eq!(page.status(), 403, "{name}");
    }
    assert_eq!(refund().await.status(), 404, "still usable");

    let res = app.call("tokens/revoke", &[("id", &row.id)]).await;
    assert_eq!(res.status(), 200);
    let res = refund().await;
    assert_eq!(res.status(), 401);
    let again = app.call("tokens/revoke", &[("id", &row.id)]).await;
    assert_eq!(again.status(), 409);

    let audited = audit_of_tokens(&app).await;
    let actions: Vec<(&str, &str)> = audited
        .iter()
        .map(|(actor, action, _)| (actor.as_str(), action.as_str()))
        .collect();
    assert_eq!(
        actions,
        [("root", "token.create"), ("root", "token.revoke")]
    );
    let after: Value = serde_json::from_str(&audited[0].2).unwrap();
    assert_eq!(after["scopes"], json!(["payments:read", "refunds:write"]));
    assert_eq!(after["owner"], "root");
    assert!(!audited[0].2.contains(&made.token));

    // The token stops with its owner: disabled, the owner's token is refused.
    let res = app
        .call(
            "tokens/create",
            &[("name", "roots"), ("scopes[]", "payments:read")],
        )
        .await;
    let roots: CreatedToken = res.json().await.unwrap();
    let whoami = || call(&app, "get", "/api/v1/whoami", Some(&roots.token));
    assert_eq!(whoami().await.status(), 200);
    app.add_user("ann", Role::Admin, PW).await;
    app.accounts
        .set_disabled(&Actor::cli(), &root.id, true)
        .await
        .unwrap();
    assert_eq!(whoami().await.status(), 401);
    app.accounts
        .set_disabled(&Actor::cli(), &root.id, false)
        .await
        .unwrap();
    assert_eq!(whoami().await.status(), 200);
}

both_databases!(
    every_api_route_answers_each_token_as_its_scope_says,
    api_actions_are_audited_as_the_token,
    a_token_is_marked_used_at_most_once_a_minute,
    admins_make_and_revoke_tokens_in_the_console,
);
