//! The Users page's server functions, the rules that keep the console
//! administrable, and the audit trail they leave.

use crate::both_databases;
use crate::helpers::{Backend, spawn_app};
use app::error::AppError;
use app::types::{Role, User};
use reckon::store::audit;

const PW: &str = "correct horse battery";

async fn audit_rows(
    app: &crate::helpers::TestApp,
) -> Vec<(i64, String, String, Option<String>, Option<String>)> {
    sqlx::query_as("SELECT seq, actor, action, before_json, after_json FROM audit_log ORDER BY seq")
        .fetch_all(&app.accounts.db.pool)
        .await
        .unwrap()
}

async fn an_admin_manages_users_and_every_change_is_audited(b: Backend) {
    let app = spawn_app(b).await;
    app.add_user("root", Role::Admin, PW).await;
    assert_eq!(app.login("root", PW).await.status(), 200);

    let res = app
        .call(
            "users/create",
            &[
                ("username", "Oscar"),
                ("role", "operator"),
                ("password", PW),
            ],
        )
        .await;
    assert_eq!(res.status(), 200);
    let oscar: User = res.json().await.unwrap();
    assert_eq!(
        (oscar.username.as_str(), oscar.role),
        ("oscar", Role::Operator)
    );

    let res = app
        .call(
            "users/role",
            &[("user_id", &oscar.id), ("role", "supervisor")],
        )
        .await;
    assert_eq!(res.status(), 200);
    let res = app
        .call(
            "users/password",
            &[("user_id", &oscar.id), ("password", "another long secret")],
        )
        .await;
    assert_eq!(res.status(), 200);
    let res = app
        .call(
            "users/disabled",
            &[("user_id", &oscar.id), ("disabled", "true")],
        )
        .await;
    assert_eq!(res.status(), 200);

    let users: Vec<User> = app.call("users/list", &[]).await.json().await.unwrap();
    let listed = users.iter().find(|u| u.username == "oscar").unwrap();
    assert_eq!(listed.role, Role::Supervisor);
    assert!(listed.disabled);

    let rows = audit_rows(&app).await;
    let actions: Vec<_> = rows.iter().map(|r| (r.1.as_str(), r.2.as_str())).collect();
    assert_eq!(
        actions,
        [
            ("cli", "user.create"),
            ("root", "user.login"),
            ("root", "user.create"),
            ("root", "user.role"),
            ("root", "user.password"),
            ("root", "user.disable"),
        ]
    );
    let role_change = &rows[3];
    assert_eq!(role_change.3.as_deref(), Some(r#"{"role":"operator"}"#));
    // A role that decides, granted in the console: pending until a second
    // admin confirms it.
    assert_eq!(
        role_change.4.as_deref(),
        Some(r#"{"pending":true,"role":"supervisor"}"#)
    );
    let password_change = &rows[4];
    assert!(
        !password_change.4.as_deref().unwrap().contains("argon2"),
        "no hashes in the log"
    );

    let verdict = audit::verify(&app.accounts.db.pool, &app.accounts.db.audit, None)
        .await
        .unwrap();
    assert_eq!(verdict.entries, 6);
    assert_eq!(verdict.first_broken, None);
}

async fn bad_input_is_refused_with_a_reason_and_changes_nothing(b: Backend) {
    let app = spawn_app(b).await;
    let root = app.add_user("root", Role::Admin, PW).await;
    assert_eq!(app.login("root", PW).await.status(), 200);
    let app = &app;
    let create = |name: &'static str, pw: &'static str| async move {
        app.call(
            "users/create",
            &[("username", name), ("role", "operator"), ("password", pw)],
        )
        .await
    };
    let cases = [
        (create("x", PW).await, 400, AppError::InvalidUsername),
        (
            create("new.user", "short").await,
            400,
            AppError::WeakPassword { min: 12 },
        ),
        (create("root", PW).await, 409, AppError::UsernameTaken),
        (
            create("CLI", PW).await,
            400,
            AppError::Invalid {
                detail: "the username \"cli\" is reserved for Reckon's own actions".into(),
            },
        ),
        (
            app.call("users/role", &[("user_id", &root.id), ("role", "operator")])
                .await,
            403,
            AppError::NotOnYourself,
        ),
        (
            app.call(
                "users/disabled",
                &[("user_id", &root.id), ("disabled", "true")],
            )
            .await,
            403,
            AppError::NotOnYourself,
        ),
        (
            app.call(
                "users/role",
                &[("user_id", "no-such-id"), ("role", "operator")],
            )
            .await,
            404,
            AppError::NotFound,
        ),
    ];
    for (res, status, err) in cases {
        assert_eq!(res.status(), status, "{err:?}");
        assert_eq!(res.json::<AppError>().await.unwrap(), err);
    }
    let res = app
        .call("users/role", &[("user_id", &root.id), ("role", "emperor")])
        .await;
    assert!(res.status().is_client_error() || res.status().is_server_error());
    assert_eq!(app.accounts.list_users().await.unwrap().len(), 1);
    assert_eq!(audit_rows(app).await.len(), 2, "create by cli + login only");
}

async fn the_last_active_admin_can_neither_be_demoted_nor_disabled(b: Backend) {
    let app = spawn_app(b).await;
    let cli = reckon::accounts::Actor::cli();
    let only = app.add_user("only", Role::Admin, PW).await;
    assert_eq!(
        app.accounts.set_role(&cli, &only.id, Role::Operator).await,
        Err(AppError::LastAdmin)
    );
    assert_eq!(
        app.accounts.set_disabled(&cli, &only.id, true).await,
        Err(AppError::LastAdmin)
    );
    let second = app.add_user("second", Role::Admin, PW).await;
    app.accounts
        .set_disabled(&cli, &second.id, true)
        .await
        .unwrap();
    // A disabled admin does not count.
    assert_eq!(
        app.accounts.set_role(&cli, &only.id, Role::Operator).await,
        Err(AppError::LastAdmin)
    );
    app.accounts
        .set_disabled(&cli, &second.id, false)
        .await
        .unwrap();
    app.accounts
        .set_role(&cli, &only.id, Role::Operator)
        .await
        .unwrap();
    assert_eq!(
        app.accounts.user(&only.id).await.unwrap().unwrap().role,
        Role::Operator
    );
}

async fn concurrent_changes_keep_one_unbroken_audit_chain(b: Backend) {
    let app = spawn_app(b).await;
    let cli = reckon::accounts::Actor::cli();
    let mut ids = Vec::new();
    for i in 0..4 {
        ids.push(
            app.add_user(&format!("user{i}"), Role::Operator, PW)
                .await
                .id,
        );
    }
    let mut tasks = Vec::new();
    for round in 0..5 {
        for id in &ids {
            let accounts = app.accounts.clone();
            let (cli, id) = (cli.clone(), id.clone());
            let role = if round % 2 == 0 {
                Role::Supervisor
            } else {
                Role::Operator
            };
            tasks.push(tokio::spawn(async move {
                accounts.set_role(&cli, &id, role).await
            }));
        }
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let verdict = audit::verify(&app.accounts.db.pool, &app.accounts.db.audit, None)
        .await
        .unwrap();
    assert_eq!(verdict.entries, 4 + 20);
    assert_eq!(verdict.first_broken, None);
}

async fn an_edited_audit_row_breaks_the_chain_at_that_row(b: Backend) {
    let app = spawn_app(b).await;
    let cli = reckon::accounts::Actor::cli();
    let u = app.add_user("edith", Role::Operator, PW).await;
    app.accounts
        .set_role(&cli, &u.id, Role::Supervisor)
        .await
        .unwrap();
    app.accounts
        .set_role(&cli, &u.id, Role::Admin)
        .await
        .unwrap();
    let ok = app.cli(&["audit", "verify"], None);
    assert!(ok.status.success());
    // (Against the server's anchor too, once it has written one.)
    let said = String::from_utf8_lossy(&ok.stdout);
    assert!(said.starts_with("audit log intact: 3 entries"), "{said}");

    sqlx::query("UPDATE audit_log SET after_json = '{\"role\":\"operator\"}' WHERE seq = 2")
        .execute(&app.accounts.db.pool)
        .await
        .unwrap();
    let broken = app.cli(&["audit", "verify"], None);
    assert!(!broken.status.success());
    let err = String::from_utf8_lossy(&broken.stderr);
    assert!(err.contains("broken at entry 2"), "{err}");

    sqlx::query("DELETE FROM audit_log WHERE seq = 2")
        .execute(&app.accounts.db.pool)
        .await
        .unwrap();
    let verdict = audit::verify(&app.accounts.db.pool, &app.accounts.db.audit, None)
        .await
        .unwrap();
    assert_eq!(verdict.first_broken.map(|b| b.0), Some(3));

    // Cutting the tail off is caught too: the head remembers the last entry.
    sqlx::query("DELETE FROM audit_log WHERE seq >= 2")
        .execute(&app.accounts.db.pool)
        .await
        .unwrap();
    let verdict = audit::verify(&app.accounts.db.pool, &app.accounts.db.audit, None)
        .await
        .unwrap();
    assert_eq!(verdict.entries, 1);
    let (seq, why) = verdict.first_broken.expect("a truncated log is broken");
    assert_eq!(seq, 2);
    assert!(why.contains("3 were written"), "{why}");
}

/// Rewrites the audit chain from entry 2 on, as someone who can write the
/// database would: entry 2 edited, every later hash and the head
/// recomputed by `hash` (SHA-256 with no key, or the key itself).
async fn rewrite_chain(
    pool: &sqlx::AnyPool,
    hash: impl Fn(&audit::StoredEntry) -> (Option<String>, String),
) {
    let rows: Vec<audit::StoredEntry> = sqlx::query_as(
        "SELECT seq, at, actor, action, object_type, object_id, before_json, after_json, prev_hash, hash, key_id \
         FROM audit_log ORDER BY seq",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let mut prev = audit::GENESIS.to_owned();
    for mut row in rows {
        if row.seq == 2 {
            row.after_json = Some("{\"role\":\"operator\"}".into());
        }
        row.prev_hash = prev.clone();
        let (key_id, h) = hash(&row);
        sqlx::query(
            "UPDATE audit_log SET after_json = $1, prev_hash = $2, hash = $3, key_id = $4 WHERE seq = $5",
        )
        .bind(&row.after_json)
        .bind(&row.prev_hash)
        .bind(&h)
        .bind(&key_id)
        .bind(row.seq)
        .execute(pool)
        .await
        .unwrap();
        prev = h;
    }
    sqlx::query("UPDATE audit_head SET hash = $1 WHERE id = 1")
        .bind(&prev)
        .execute(pool)
        .await
        .unwrap();
}

async fn a_rewritten_audit_chain_is_caught_without_the_key_and_by_a_checkpoint_with_it(b: Backend) {
    use std::os::unix::fs::PermissionsExt;
    let mut app = spawn_app(b).await;
    let cli = reckon::accounts::Actor::cli();
    app.add_user("root", Role::Admin, PW).await;
    let u = app.add_user("edith", Role::Operator, PW).await;
    app.accounts
        .set_role(&cli, &u.id, Role::Supervisor)
        .await
        .unwrap();
    // The key was made at the first start, readable by its owner only.
    let key_file = app.config.data_dir.join("audit.key");
    let mode = std::fs::metadata(&key_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    let out = app.cli(&["audit", "checkpoint"], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let checkpoint = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(
        checkpoint.starts_with("reckon-audit-checkpoint v1 seq=3 "),
        "{checkpoint}"
    );
    let ok = app.cli(&["audit", "verify", "--against", &checkpoint], None);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(String::from_utf8_lossy(&ok.stdout).contains("unchanged up to entry 3"));
    app.accounts
        .set_role(&cli, &u.id, Role::Admin)
        .await
        .unwrap();
    let pool = app.accounts.db.pool.clone();

    // Without the key, recomputing the chain as plain SHA-256 (the way it
    // used to be hashed) no longer passes.
    rewrite_chain(&pool, |row| (None, row.unkeyed_hash())).await;
    let broken = app.cli(&["audit", "verify"], None);
    assert!(!broken.status.success());
    let err = String::from_utf8_lossy(&broken.stderr);
    assert!(err.contains("broken at entry 1: unkeyed"), "{err}");

    // With the key (read from the file), the chain can be recomputed; the
    // checkpoint kept elsewhere still shows the rewrite.
    let keys = reckon::store::audit_keys::Keys::load(&app.config.data_dir, 1, |_| None).unwrap();
    let key = keys.signing().unwrap().clone();
    rewrite_chain(&pool, |row| (Some(key.id.clone()), row.keyed_hash(&key))).await;
    let fooled = app.cli(&["audit", "verify"], None);
    assert!(fooled.status.success(), "the key recomputes a valid chain");
    let caught = app.cli(&["audit", "verify", "--against", &checkpoint], None);
    assert!(!caught.status.success());
    let err = String::from_utf8_lossy(&caught.stderr);
    assert!(
        err.contains("broken at entry 3: differs from the checkpoint"),
        "{err}"
    );
    // A checkpoint cannot be made up without the key either.
    let forged = checkpoint.replace("seq=3", "seq=2");
    let refused = app.cli(&["audit", "verify", "--against", &forged], None);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not genuine"));

    // Rotation: the new key signs from the next start, the old one still
    // verifies what it signed; without the old key, its entries are
    // unverifiable.
    let rotated = app.cli(&["audit", "rotate-key"], None);
    assert!(
        rotated.status.success(),
        "{}",
        String::from_utf8_lossy(&rotated.stderr)
    );
    app.restart().await;
    app.accounts
        .set_role(&cli, &u.id, Role::Admin)
        .await
        .unwrap();
    let ok = app.cli(&["audit", "verify"], None);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let new_key: Option<String> =
        sqlx::query_scalar("SELECT key_id FROM audit_log ORDER BY seq DESC LIMIT 1")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_ne!(
        new_key.as_deref(),
        Some(key.id.as_str()),
        "signed by the new key"
    );
    let text = std::fs::read_to_string(&key_file).unwrap();
    let first_key_line = text
        .lines()
        .find(|l| !l.starts_with('#') && !l.starts_with("keyed-from"))
        .unwrap();
    std::fs::write(&key_file, text.replace(&format!("{first_key_line}\n"), "")).unwrap();
    let lost = app.cli(&["audit", "verify"], None);
    assert!(!lost.status.success());
    let err = String::from_utf8_lossy(&lost.stderr);
    assert!(err.contains(&format!("signed by key {}", key.id)), "{err}");
}

both_databases!(
    an_admin_manages_users_and_every_change_is_audited,
    bad_input_is_refused_with_a_reason_and_changes_nothing,
    the_last_active_admin_can_neither_be_demoted_nor_disabled,
    concurrent_changes_keep_one_unbroken_audit_chain,
    an_edited_audit_row_breaks_the_chain_at_that_row,
    a_rewritten_audit_chain_is_caught_without_the_key_and_by_a_checkpoint_with_it,
);
