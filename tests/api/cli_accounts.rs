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
    let out = app.cli(
        &["token", "create", "--name", "shop-eu", "--scope", "all"],
        None,
    );
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
    let dup = app.cli(
        &["token", "create", "--name", "shop-eu", "--scope", "all"],
        None,
    );
    assert!(!dup.status.success());
    assert!(String::from_utf8_lossy(&dup.stderr).contains("already exists"));
}

fn stdout(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// `token create` needs its scopes (`all` said out loud), takes an owner
/// and an expiry; `token list` shows every token but never one itself;
/// `token revoke` stops it at once, audited as the command line.
async fn tokens_are_scoped_listed_and_revoked_on_the_command_line(b: Backend) {
    let app = spawn_app(b).await;
    app.add_user("ada", Role::Admin, PW).await;
    let whoami = |token: String| {
        app.client
            .get(format!("{}/api/v1/whoami", app.base))
            .bearer_auth(token)
            .send()
    };

    // No scope: a usage error, nothing made; an unknown one, named.
    let none = app.cli(&["token", "create", "--name", "bare"], None);
    assert_eq!(none.status.code(), Some(2));
    let odd = app.cli(
        &[
            "token",
            "create",
            "--name",
            "odd",
            "--scope",
            "payments:read,payments:delete",
        ],
        None,
    );
    assert!(!odd.status.success());
    let err = String::from_utf8_lossy(&odd.stderr);
    assert!(err.contains("unknown scope `payments:delete`"), "{err}");
    let stranger = app.cli(
        &[
            "token", "create", "--name", "x", "--scope", "all", "--owner", "nobody",
        ],
        None,
    );
    assert!(!stranger.status.success());
    assert!(String::from_utf8_lossy(&stranger.stderr).contains("no user named `nobody`"));

    let shop = stdout(&app.cli(
        &[
            "token",
            "create",
            "--name",
            "shop",
            "--scope",
            "payments:read,refunds:write",
            "--expires-days",
            "30",
            "--owner",
            "ada",
        ],
        None,
    ));
    let shop = shop.trim().to_owned();
    let ops = stdout(&app.cli(
        &["token", "create", "--name", "ops", "--scope", "all"],
        None,
    ));
    assert_eq!(whoami(shop.clone()).await.unwrap().status(), 200);

    let list = stdout(&app.cli(&["token", "list"], None));
    assert!(
        !list.contains(&shop) && !list.contains(ops.trim()),
        "{list}"
    );
    let line = |name: &str| {
        list.lines()
            .find(|l| l.starts_with(&format!("{name}\t")))
            .unwrap_or_else(|| panic!("{name} is not listed:\n{list}"))
            .split('\t')
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let shop_line = line("shop");
    assert_eq!(shop_line[1], &shop[..10]);
    assert_eq!(shop_line[2], "ada");
    assert_eq!(shop_line[3], "payments:read,refunds:write");
    assert_ne!(shop_line[5], "never", "it expires");
    assert_ne!(shop_line[6], "never", "it was used");
    assert_eq!(shop_line[7], "-", "not revoked");
    let ops_line = line("ops");
    assert_eq!(ops_line[2], "-");
    assert_eq!(
        ops_line[3].split(',').count(),
        app::tokens::Scope::ALL.len(),
        "all: every scope, written out"
    );
    assert_eq!(ops_line[5], "never");

    assert_eq!(
        stdout(&app.cli(&["token", "revoke", "shop"], None)).trim(),
        "revoked token shop"
    );
    let refused = whoami(shop.clone()).await.unwrap();
    assert_eq!(refused.status(), 401);
    let again = app.cli(&["token", "revoke", "shop"], None);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already revoked"));
    let unknown = app.cli(&["token", "revoke", "nope"], None);
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no token named `nope`"));
    let list = stdout(&app.cli(&["token", "list"], None));
    assert_ne!(
        list.lines()
            .find(|l| l.starts_with("shop\t"))
            .unwrap()
            .rsplit('\t')
            .next(),
        Some("-")
    );

    let audited: Vec<(String, String)> = sqlx::query_as(
        "SELECT actor, action FROM audit_log WHERE object_type = 'api_token' ORDER BY seq",
    )
    .fetch_all(&app.accounts.db.pool)
    .await
    .unwrap();
    let audited: Vec<(&str, &str)> = audited
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    assert_eq!(
        audited,
        [
            ("cli", "token.create"),
            ("cli", "token.create"),
            ("cli", "token.revoke")
        ]
    );
}

both_databases!(
    the_cli_adds_a_user_who_can_then_sign_in,
    an_api_token_is_printed_once_and_stored_hashed,
    tokens_are_scoped_listed_and_revoked_on_the_command_line,
);
