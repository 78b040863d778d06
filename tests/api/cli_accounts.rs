//! Users and API tokens made on the command line, against each database.

use crate::both_databases;
use crate::helpers::{Backend, spawn_app};
use app::types::Role;

const PW: &str = "correct horse battery";

async fn the_cli_adds_a_user_who_can_then_sign_in(b: Backend) {
    let app = spawn_app(b).await;
    let out = app.cli(
        &["user", "add", "--username", "ada", "--role", "supervisor"],
        Some("a password from stdin\n"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "created user ada (supervisor)"
    );
    assert_eq!(
        app.login("ada", "a password from stdin").await.status(),
        200
    );
    assert_eq!(app.session_user().await.unwrap().role, Role::Supervisor);

    let out = app.cli(
        &["user", "passwd", "--username", "ada"],
        Some("the next password\n"),
    );
    assert!(out.status.success());
    assert_eq!(
        app.login("ada", "a password from stdin").await.status(),
        401
    );
    assert_eq!(app.login("ada", "the next password").await.status(), 200);

    let out = app.cli(&["user", "disable", "--username", "ada"], None);
    assert!(out.status.success());
    assert_eq!(app.session_user().await, None);

    // A password on the command line is not an option at all.
    let out = app.cli(
        &[
            "user",
            "add",
            "--username",
            "eve",
            "--role",
            "admin",
            "--password",
            "x",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let out = app.cli(
        &["user", "add", "--username", "eve", "--role", "admin"],
        Some(""),
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no password given"));
    let out = app.cli(
        &["user", "add", "--username", "eve", "--role", "root"],
        Some(PW),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(app.accounts.by_username("eve").await.is_err());
}

async fn an_api_token_is_printed_once_and_stored_hashed(b: Backend) {
    let app = spawn_app(b).await;
    let out = app.cli(&["token", "create", "--name", "shop-eu"], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let token = stdout.trim();
    assert_eq!(stdout.lines().count(), 1, "the token alone on stdout");
    assert!(token.starts_with("rk_") && token.len() == 67);
    let stored: Vec<String> = sqlx::query_scalar("SELECT token_hash FROM api_tokens")
        .fetch_all(&app.accounts.db.pool)
        .await
        .unwrap();
    assert_eq!(stored, [reckon::auth::token_hash(token)]);

    let call = |auth: String| {
        app.client
            .get(format!("{}/api/v1/whoami", app.base))
            .header("authorization", auth)
            .send()
    };
    let ok = call(format!("Bearer {token}")).await.unwrap();
    assert_eq!(ok.status(), 200);
    assert_eq!(
        ok.json::<serde_json::Value>().await.unwrap()["token"],
        "shop-eu"
    );
    assert_eq!(call("Bearer rk_forged".into()).await.unwrap().status(), 401);
    let dup = app.cli(&["token", "create", "--name", "shop-eu"], None);
    assert!(!dup.status.success());
}

both_databases!(
    the_cli_adds_a_user_who_can_then_sign_in,
    an_api_token_is_printed_once_and_stored_hashed,
);
