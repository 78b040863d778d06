//! Raw access: what was received, unmasked, only for a user an admin other
//! than themselves gave it to; every look in the audit log; taken away,
//! gone at the next look. Each on SQLite and PostgreSQL.

use crate::both_databases;
use crate::engine_helpers::spawn_engine_app;
use crate::helpers::{Backend, TestApp, client};
use app::error::AppError;
use app::types::Role;
use serde_json::Value;

const PW: &str = "correct horse battery";
const CARD: &str = "4111 1111 1111 1111";
const EMAIL: &str = "wang.li@example.com";

async fn signed_in(app: &TestApp, name: &str) -> reqwest::Client {
    let c = client();
    let res = app
        .call_with(&c, "login", &[("username", name), ("password", PW)])
        .await;
    assert_eq!(res.status(), 200, "{name} signs in");
    c
}

async fn looks(app: &TestApp, action: &str) -> Vec<(String, String)> {
    sqlx::query_as("SELECT actor, object_id FROM audit_log WHERE action = $1 ORDER BY seq")
        .bind(action)
        .fetch_all(&app.accounts.db.pool)
        .await
        .unwrap()
}

async fn raw_access_is_given_by_another_admin_and_each_look_is_audited(b: Backend) {
    // A server with the sandbox provider set up.
    let engine = spawn_engine_app(b).await;
    let app = &engine.app;
    app.add_user("ada", Role::Admin, PW).await;
    let olga = app.add_user("olga", Role::Operator, PW).await;
    let (admin, operator) = (signed_in(app, "ada").await, signed_in(app, "olga").await);

    // A webhook with no valid signature, carrying personal data: refused
    // and kept.
    let body = serde_json::json!({
        "type": "payment.succeeded",
        "data": { "payment_no": "P-RAW-1", "email": EMAIL, "card": CARD },
    })
    .to_string();
    let res = app.post_webhook("sandbox", "application/json", body).await;
    assert!(res.status().is_client_error(), "{}", res.status());
    let id: String = sqlx::query_scalar("SELECT id FROM refused_callbacks")
        .fetch_one(&app.accounts.db.pool)
        .await
        .unwrap();

    // Everyone sees it masked; asking for the raw copy is refused.
    let shown = app
        .call_with(&operator, "refused/show", &[("id", &id)])
        .await
        .text()
        .await
        .unwrap();
    assert!(shown.contains("P-RAW-1") && !shown.contains(EMAIL) && !shown.contains(CARD));
    for c in [&operator, &admin] {
        let res = app.call_with(c, "refused/raw", &[("id", &id)]).await;
        assert_eq!(res.status(), 403);
        assert_eq!(res.json::<AppError>().await.unwrap(), AppError::Forbidden);
    }
    // An admin cannot give it to themselves.
    let ada = app.accounts.by_username("ada").await.unwrap();
    let res = app
        .call_with(
            &admin,
            "users/view-raw",
            &[("user_id", &ada.id), ("allow", "true")],
        )
        .await;
    assert_eq!(
        res.json::<AppError>().await.unwrap(),
        AppError::NotOnYourself
    );
    // An operator cannot give it at all.
    let res = app
        .call_with(
            &operator,
            "users/view-raw",
            &[("user_id", &olga.id), ("allow", "true")],
        )
        .await;
    assert_eq!(res.status(), 403);
    assert!(looks(app, "user.view_raw").await.is_empty());

    // Given by the admin: the operator sees what was received, and the look
    // is in the audit log before it is shown.
    let res = app
        .call_with(
            &admin,
            "users/view-raw",
            &[("user_id", &olga.id), ("allow", "true")],
        )
        .await;
    assert_eq!(res.status(), 200);
    assert_eq!(
        looks(app, "user.view_raw").await,
        [("ada".into(), olga.id.clone())]
    );
    let res = app
        .call_with(&operator, "refused/raw", &[("id", &id)])
        .await;
    assert_eq!(res.status(), 200);
    let raw: Value = res.json().await.unwrap();
    let text = raw["body"].as_str().unwrap();
    assert!(text.contains(EMAIL) && text.contains(CARD), "{text}");
    assert_eq!(
        looks(app, "refused.view_raw").await,
        [("olga".into(), id.clone())]
    );
    // The masked view stays masked for them too.
    let shown = app
        .call_with(&operator, "refused/show", &[("id", &id)])
        .await
        .text()
        .await
        .unwrap();
    assert!(!shown.contains(EMAIL));
    // A made-up id is not found, and no look is recorded.
    let res = app
        .call_with(&operator, "callbacks/raw", &[("id", "no-such-id")])
        .await;
    assert_eq!(res.status(), 404);
    assert!(looks(app, "callback.view_raw").await.is_empty());

    // Taken away: the next look is refused.
    let res = app
        .call_with(
            &admin,
            "users/view-raw",
            &[("user_id", &olga.id), ("allow", "false")],
        )
        .await;
    assert_eq!(res.status(), 200);
    let res = app
        .call_with(&operator, "refused/raw", &[("id", &id)])
        .await;
    assert_eq!(res.status(), 403);
    assert_eq!(looks(app, "refused.view_raw").await.len(), 1);
    assert_eq!(looks(app, "user.view_raw").await.len(), 2);
}

both_databases!(raw_access_is_given_by_another_admin_and_each_look_is_audited);
