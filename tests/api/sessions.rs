//! Console sessions in their register: ended by a password reset (console
//! and command line), a role change and a disable, and never brought back
//! by enabling again; the idle timeout and the absolute lifetime on the
//! server's clock; a user's and an admin's list and "end"; the sign-in
//! lock-out's length, and failed sign-ins and lock-outs in the audit log
//! with their address and browser.

use crate::both_databases;
use crate::helpers::{Backend, TestApp, spawn_app, spawn_app_with};
use app::error::AppError;
use app::sessions::SessionList;
use app::types::{Role, SessionInfo};
use reckon::context::{Clock, ManualClock};
use reckon::startup::Options;
use std::sync::Arc;

const PW: &str = "correct horse battery";
const MIN: i64 = 60;

/// A browser: its own cookies and User-Agent, no redirects followed.
fn browser(agent: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .user_agent(agent)
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(45))
        .build()
        .unwrap()
}

async fn sign_in(app: &TestApp, c: &reqwest::Client, username: &str, password: &str) {
    let res = app
        .call_with(
            c,
            "login",
            &[("username", username), ("password", password)],
        )
        .await;
    assert_eq!(res.status(), 200, "{username} signs in");
}

/// Who the server takes this browser for.
async fn who(app: &TestApp, c: &reqwest::Client) -> Option<String> {
    let res = app.call_with(c, "session", &[]).await;
    assert_eq!(res.status(), 200);
    res.json::<SessionInfo>()
        .await
        .unwrap()
        .user
        .map(|u| u.username)
}

/// Signed out for good: no user, its server functions refused, its pages
/// sent to the login page.
async fn thrown_out(app: &TestApp, c: &reqwest::Client) -> bool {
    let signed_out = who(app, c).await.is_none();
    let refused = app.call_with(c, "sessions/list", &[]).await.status() == 401;
    let page = c
        .get(format!("{}/", app.base))
        .header("accept", "text/html")
        .send()
        .await
        .unwrap();
    let sent_to_login = page.status() == 302
        && page.headers().get("location").and_then(|l| l.to_str().ok()) == Some("/login");
    signed_out && refused && sent_to_login
}

async fn audit(app: &TestApp, action: &str) -> Vec<(String, String, Option<String>)> {
    sqlx::query_as(
        "SELECT actor, object_id, after_json FROM audit_log WHERE action = $1 ORDER BY seq",
    )
    .bind(action)
    .fetch_all(&app.accounts.db.pool)
    .await
    .unwrap()
}

fn json(text: &Option<String>) -> serde_json::Value {
    serde_json::from_str(text.as_deref().unwrap()).unwrap()
}

async fn list(app: &TestApp, c: &reqwest::Client, user_id: Option<&str>) -> SessionList {
    let form: Vec<(&str, &str)> = user_id.map(|id| ("user_id", id)).into_iter().collect();
    let res = app.call_with(c, "sessions/list", &form).await;
    assert_eq!(res.status(), 200);
    res.json().await.unwrap()
}

/// An app whose sessions and sign-in locks run on a clock the test moves,
/// with these settings.
async fn on_clock(b: Backend, env: &[(&str, &str)]) -> (TestApp, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::default());
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut sign_in = reckon::config::Config::from_sources(|key| {
        env.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
    })
    .expect("the settings read")
    .sign_in;
    // These journeys sign in with a password alone.
    sign_in.mfa = Default::default();
    let app = spawn_app_with(
        b,
        |c| c.sign_in = sign_in,
        Options {
            session_clock: clock.clone(),
            workers: false,
            ..Options::default()
        },
    )
    .await;
    (app, clock)
}

async fn an_admins_password_reset_ends_every_session_of_the_user(b: Backend) {
    let app = spawn_app(b).await;
    app.add_user("root", Role::Admin, PW).await;
    let ulla = app.add_user("ulla", Role::Operator, PW).await;
    let admin = browser("admin-browser");
    let (laptop, phone) = (browser("laptop"), browser("phone"));
    sign_in(&app, &admin, "root", PW).await;
    sign_in(&app, &laptop, "ulla", PW).await;
    sign_in(&app, &phone, "ulla", PW).await;
    assert_eq!(who(&app, &laptop).await.as_deref(), Some("ulla"));

    let res = app
        .call_with(
            &admin,
            "users/password",
            &[("user_id", &ulla.id), ("password", "a new long password")],
        )
        .await;
    assert_eq!(res.status(), 200);
    assert!(thrown_out(&app, &laptop).await);
    assert!(thrown_out(&app, &phone).await);
    assert_eq!(who(&app, &admin).await.as_deref(), Some("root"));

    // Each end is in the audit log: who, and why.
    let ends = audit(&app, "session.end").await;
    assert_eq!(ends.len(), 2);
    for (actor, _, after) in &ends {
        assert_eq!(actor, "root");
        assert_eq!(json(after)["reason"], "password");
        assert_eq!(json(after)["user_id"], ulla.id.as_str());
    }
    // Signing in again works, with the new password.
    sign_in(&app, &laptop, "ulla", "a new long password").await;
    assert_eq!(who(&app, &laptop).await.as_deref(), Some("ulla"));
}

async fn a_users_own_password_change_needs_the_current_one_and_ends_every_session(b: Backend) {
    let app = spawn_app(b).await;
    let ulla = app.add_user("ulla", Role::Supervisor, PW).await;
    let (laptop, phone) = (browser("laptop"), browser("phone"));
    sign_in(&app, &laptop, "ulla", PW).await;
    sign_in(&app, &phone, "ulla", PW).await;
    let change = |current: &'static str, password: &'static str, repeat: &'static str| {
        let (app, laptop) = (&app, &laptop);
        async move {
            app.call_with(
                laptop,
                "account/password",
                &[
                    ("current", current),
                    ("password", password),
                    ("repeat", repeat),
                ],
            )
            .await
        }
    };
    const NEW: &str = "my own new password";

    // Refused, and nothing changes: a wrong current password (audited), a
    // repetition that differs, a weak new one.
    for (res, detail) in [
        (
            change("wrong horse battery", NEW, NEW).await,
            Some("the current password is wrong"),
        ),
        (
            change(PW, NEW, "my own new passwork").await,
            Some("the new password and its repetition differ"),
        ),
        (change(PW, "short", "short").await, None),
    ] {
        assert_eq!(res.status(), 400);
        let err: AppError = res.json().await.unwrap();
        match detail {
            Some(d) => assert_eq!(err, AppError::Invalid { detail: d.into() }),
            None => assert_eq!(err, AppError::WeakPassword { min: 12 }),
        }
    }
    assert_eq!(who(&app, &phone).await.as_deref(), Some("ulla"));
    let failed = audit(&app, "user.password_change_failed").await;
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].0, "ulla");
    assert_eq!(json(&failed[0].2)["agent"], "laptop");

    let res = change(PW, NEW, NEW).await;
    assert_eq!(res.status(), 200);
    // Both browsers are out, this one too; the old password is dead.
    assert!(thrown_out(&app, &laptop).await);
    assert!(thrown_out(&app, &phone).await);
    assert_eq!(app.login("ulla", PW).await.status(), 401);
    sign_in(&app, &phone, "ulla", NEW).await;
    // Their own change keeps their grant: no admin learnt the password.
    let user = app.accounts.user(&ulla.id).await.unwrap().unwrap();
    assert!(!user.grant.pending, "{:?}", user.grant);
    let changes = audit(&app, "user.password").await;
    assert_eq!(changes.len(), 1);
    assert_eq!(
        (changes[0].0.as_str(), changes[0].1.as_str()),
        ("ulla", ulla.id.as_str())
    );
    let ends = audit(&app, "session.end").await;
    assert_eq!(ends.len(), 2);
    assert!(
        ends.iter()
            .all(|(actor, _, after)| actor == "ulla" && json(after)["reason"] == "password")
    );
}

async fn wrong_current_passwords_lock_the_password_change_as_sign_ins_do(b: Backend) {
    let (app, _clock) = on_clock(b, &[("RECKON_LOGIN_MAX_FAILURES", "3")]).await;
    app.add_user("ulla", Role::Operator, PW).await;
    let laptop = browser("laptop");
    sign_in(&app, &laptop, "ulla", PW).await;
    let mut last = None;
    for _ in 0..4 {
        let res = app
            .call_with(
                &laptop,
                "account/password",
                &[
                    ("current", "guess guess guess"),
                    ("password", "my own new password"),
                    ("repeat", "my own new password"),
                ],
            )
            .await;
        last = Some(res.json::<AppError>().await.unwrap());
    }
    assert!(matches!(last, Some(AppError::Throttled { .. })), "{last:?}");
    // The username is locked for signing in too, even with the right password.
    assert_eq!(app.login("ulla", PW).await.status(), 429);
    assert_eq!(audit(&app, "user.locked").await.len(), 1);
}

async fn reckon_user_passwd_ends_every_session_of_the_user(b: Backend) {
    let app = spawn_app(b).await;
    app.add_user("ulla", Role::Operator, PW).await;
    let laptop = browser("laptop");
    sign_in(&app, &laptop, "ulla", PW).await;
    assert_eq!(who(&app, &laptop).await.as_deref(), Some("ulla"));

    let out = app.cli(
        &["user", "passwd", "--username", "ulla"],
        Some("the next long password\n"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(thrown_out(&app, &laptop).await);
    let ends = audit(&app, "session.end").await;
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0].0, "cli");
    assert_eq!(json(&ends[0].2)["reason"], "password");
}

async fn a_role_change_ends_every_session_of_the_user(b: Backend) {
    let app = spawn_app(b).await;
    app.add_user("root", Role::Admin, PW).await;
    let ulla = app.add_user("ulla", Role::Operator, PW).await;
    let (admin, laptop) = (browser("admin-browser"), browser("laptop"));
    sign_in(&app, &admin, "root", PW).await;
    sign_in(&app, &laptop, "ulla", PW).await;

    let res = app
        .call_with(
            &admin,
            "users/role",
            &[("user_id", &ulla.id), ("role", "supervisor")],
        )
        .await;
    assert_eq!(res.status(), 200);
    assert!(thrown_out(&app, &laptop).await);
    let ends = audit(&app, "session.end").await;
    assert_eq!(ends.len(), 1);
    assert_eq!(json(&ends[0].2)["reason"], "role");
}

async fn a_disabled_users_sessions_end_and_enabling_brings_none_back(b: Backend) {
    let app = spawn_app(b).await;
    app.add_user("root", Role::Admin, PW).await;
    let ulla = app.add_user("ulla", Role::Operator, PW).await;
    let (admin, laptop) = (browser("admin-browser"), browser("laptop"));
    sign_in(&app, &admin, "root", PW).await;
    sign_in(&app, &laptop, "ulla", PW).await;
    let disabled = |flag: &'static str| {
        let (app, admin, id) = (&app, &admin, ulla.id.clone());
        async move {
            app.call_with(
                admin,
                "users/disabled",
                &[("user_id", &id), ("disabled", flag)],
            )
            .await
            .status()
        }
    };

    assert_eq!(disabled("true").await, 200);
    assert!(thrown_out(&app, &laptop).await);
    assert_eq!(disabled("false").await, 200);
    assert!(
        thrown_out(&app, &laptop).await,
        "enabling the user again brings no session back"
    );
    let ends = audit(&app, "session.end").await;
    assert_eq!(ends.len(), 1);
    assert_eq!(json(&ends[0].2)["reason"], "disabled");
    // A new sign-in is a new session.
    sign_in(&app, &laptop, "ulla", PW).await;
    assert_eq!(who(&app, &laptop).await.as_deref(), Some("ulla"));
}

async fn an_idle_session_ends_and_activity_keeps_one_alive(b: Backend) {
    let (app, clock) = on_clock(b, &[]).await;
    app.add_user("ulla", Role::Operator, PW).await;
    let laptop = browser("laptop");
    sign_in(&app, &laptop, "ulla", PW).await;

    // Seen every 14 minutes, a session lives past the 15-minute timeout.
    for _ in 0..3 {
        clock.advance_secs(14 * MIN);
        assert_eq!(who(&app, &laptop).await.as_deref(), Some("ulla"));
    }
    // Unseen for 15 minutes, it is over.
    clock.advance_secs(15 * MIN);
    assert!(thrown_out(&app, &laptop).await);
    let (reason, ended_at, last_seen): (String, i64, i64) =
        sqlx::query_as("SELECT end_reason, ended_at, last_seen_at FROM user_sessions")
            .fetch_one(&app.accounts.db.pool)
            .await
            .unwrap();
    assert_eq!(reason, "idle");
    assert_eq!(
        ended_at - last_seen,
        15 * MIN * 1_000_000,
        "ended when it died"
    );
}

async fn a_session_ends_at_its_lifetime_however_active(b: Backend) {
    let (app, clock) = on_clock(b, &[("RECKON_SESSION_LIFETIME_HOURS", "2")]).await;
    let ulla = app.add_user("ulla", Role::Operator, PW).await;
    let laptop = browser("laptop");
    sign_in(&app, &laptop, "ulla", PW).await;
    // Busy all along — reading, and changing the language (a write) — for
    // just under two hours.
    for step in 0..11 {
        clock.advance_secs(10 * MIN);
        let lang = if step % 2 == 0 { "zh" } else { "en" };
        let res = app.call_with(&laptop, "language", &[("lang", lang)]).await;
        assert_eq!(res.status(), 200);
        assert_eq!(who(&app, &laptop).await.as_deref(), Some("ulla"));
    }
    clock.advance_secs(10 * MIN);
    assert!(thrown_out(&app, &laptop).await);
    let (reason,): (String,) =
        sqlx::query_as("SELECT end_reason FROM user_sessions WHERE user_id = $1")
            .bind(&ulla.id)
            .fetch_one(&app.accounts.db.pool)
            .await
            .unwrap();
    assert_eq!(reason, "lifetime");
}

async fn a_user_lists_their_sessions_and_ends_one_of_two(b: Backend) {
    let app = spawn_app(b).await;
    let root = app.add_user("root", Role::Admin, PW).await;
    let ulla = app.add_user("ulla", Role::Operator, PW).await;
    app.add_user("otto", Role::Operator, PW).await;
    let (laptop, phone, otto) = (
        browser("Laptop Browser/1.0"),
        browser("Phone Browser/2.0"),
        browser("otto-browser"),
    );
    sign_in(&app, &laptop, "ulla", PW).await;
    sign_in(&app, &phone, "ulla", PW).await;
    sign_in(&app, &otto, "otto", PW).await;

    let mine = list(&app, &laptop, None).await;
    assert!(mine.own);
    assert_eq!(mine.username, "ulla");
    assert_eq!(mine.items.len(), 2);
    let this = mine.items.iter().find(|s| s.current).expect("this one");
    assert_eq!(this.user_agent, "Laptop Browser/1.0");
    assert_eq!(this.address, "127.0.0.1");
    let other = mine.items.iter().find(|s| !s.current).unwrap();
    assert_eq!(other.user_agent, "Phone Browser/2.0");

    // Someone else can neither see nor end them.
    let res = app
        .call_with(&otto, "sessions/list", &[("user_id", &ulla.id)])
        .await;
    assert_eq!(res.status(), 403);
    let res = app
        .call_with(&otto, "sessions/end", &[("session_id", &other.id)])
        .await;
    assert_eq!(res.json::<AppError>().await.unwrap(), AppError::NotFound);
    assert_eq!(who(&app, &phone).await.as_deref(), Some("ulla"));

    let res = app
        .call_with(&laptop, "sessions/end", &[("session_id", &other.id)])
        .await;
    assert_eq!(res.status(), 200);
    assert!(thrown_out(&app, &phone).await);
    assert_eq!(who(&app, &laptop).await.as_deref(), Some("ulla"));
    let mine = list(&app, &laptop, None).await;
    assert_eq!(mine.items.len(), 1);
    assert!(mine.items[0].current);
    let ends = audit(&app, "session.end").await;
    assert_eq!(ends.len(), 1);
    assert_eq!(
        (ends[0].0.as_str(), ends[0].1.as_str()),
        ("ulla", other.id.as_str())
    );
    assert_eq!(json(&ends[0].2)["reason"], "ended");

    // The sign-ins carry where they came from.
    let logins = audit(&app, "user.login").await;
    let laptop_login = logins
        .iter()
        .find(|(_, _, after)| json(after)["session"] == this.id.as_str())
        .unwrap();
    assert_eq!(json(&laptop_login.2)["address"], "127.0.0.1");
    assert_eq!(json(&laptop_login.2)["agent"], "Laptop Browser/1.0");

    // An admin sees ulla's sessions and ends them all; their own stays.
    let admin = browser("admin-browser");
    sign_in(&app, &admin, "root", PW).await;
    let hers = list(&app, &admin, Some(&ulla.id)).await;
    assert!(!hers.own);
    assert_eq!(hers.items.len(), 1);
    assert!(!hers.items[0].current);
    let res = app
        .call_with(&admin, "sessions/end-all", &[("user_id", &ulla.id)])
        .await;
    assert_eq!(res.json::<u64>().await.unwrap(), 1);
    assert!(thrown_out(&app, &laptop).await);
    assert_eq!(who(&app, &admin).await.as_deref(), Some("root"));
    assert_eq!(list(&app, &admin, Some(&root.id)).await.items.len(), 1);
    let ends = audit(&app, "session.end").await;
    assert_eq!(ends.len(), 2);
    assert_eq!(ends[1].0, "root");
}

async fn the_cli_lists_and_ends_a_users_sessions(b: Backend) {
    let app = spawn_app(b).await;
    app.add_user("ulla", Role::Operator, PW).await;
    let (laptop, phone) = (browser("Laptop Browser/1.0"), browser("Phone Browser/2.0"));
    sign_in(&app, &laptop, "ulla", PW).await;
    sign_in(&app, &phone, "ulla", PW).await;

    let out = app.cli(&["user", "sessions", "ulla"], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(listed.lines().count(), 2, "{listed}");
    assert!(listed.contains("Laptop Browser/1.0") && listed.contains("Phone Browser/2.0"));
    assert!(listed.contains("from 127.0.0.1"), "{listed}");

    let out = app.cli(&["user", "end-sessions", "ulla"], None);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "ended 2 sessions of ulla"
    );
    assert!(thrown_out(&app, &laptop).await);
    assert!(thrown_out(&app, &phone).await);
    let ends = audit(&app, "session.end").await;
    assert_eq!(ends.len(), 2);
    assert!(ends.iter().all(|(actor, _, _)| actor == "cli"));

    let out = app.cli(&["user", "sessions", "ulla"], None);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "ulla has no live sessions"
    );
    let out = app.cli(&["user", "sessions", "nobody"], None);
    assert!(!out.status.success(), "an unknown user is an error");
}

async fn a_lock_out_lasts_its_configured_time_and_is_audited(b: Backend) {
    let (app, clock) = on_clock(b, &[("RECKON_LOCKOUT_MINUTES", "45")]).await;
    app.add_user("ulla", Role::Operator, PW).await;
    let locked_at = clock.now_micros();
    let laptop = browser("Attacker Browser/6.6");
    let attempt = |password: &'static str| {
        let (app, laptop) = (&app, &laptop);
        async move {
            app.call_with(
                laptop,
                "login",
                &[("username", "ulla"), ("password", password)],
            )
            .await
        }
    };
    for _ in 0..5 {
        assert_eq!(attempt("wrong horse battery").await.status(), 401);
    }
    for _ in 0..3 {
        let res = attempt(PW).await;
        assert_eq!(res.status(), 429);
        assert_eq!(
            res.json::<AppError>().await.unwrap(),
            AppError::Throttled { minutes: 45 }
        );
    }
    clock.advance_secs(44 * MIN);
    assert_eq!(attempt(PW).await.status(), 429, "still locked");
    clock.advance_secs(2 * MIN);
    assert_eq!(attempt(PW).await.status(), 200, "the lock has passed");

    let failed = audit(&app, "user.login_failed").await;
    assert_eq!(failed.len(), 5, "each checked failure, no more");
    for (actor, object, after) in &failed {
        let after = json(after);
        assert_eq!((actor.as_str(), object.as_str()), ("anonymous", "ulla"));
        assert_eq!(after["username"], "ulla");
        assert_eq!(after["address"], "127.0.0.1");
        assert_eq!(after["agent"], "Attacker Browser/6.6");
        assert_eq!(after["reason"], "wrong_password");
    }
    let locked = audit(&app, "user.locked").await;
    assert_eq!(locked.len(), 1, "the lock's start, once");
    assert_eq!(locked[0].1, "ulla");
    assert_eq!(json(&locked[0].2)["username"], "ulla");
    assert_eq!(json(&locked[0].2)["agent"], "Attacker Browser/6.6");
    let until = json(&locked[0].2)["locked_until"].as_i64().unwrap();
    assert_eq!(until, locked_at + 45 * MIN * 1_000_000);
    let everything: Vec<(Option<String>,)> = sqlx::query_as("SELECT after_json FROM audit_log")
        .fetch_all(&app.accounts.db.pool)
        .await
        .unwrap();
    assert!(
        everything
            .iter()
            .all(|(a,)| !a.as_deref().unwrap_or("").contains("wrong horse")),
        "no password in the log"
    );
}

async fn an_unknown_username_is_audited_as_tried(b: Backend) {
    let app = spawn_app(b).await;
    let c = browser("Curious/1.0");
    let res = app
        .call_with(&c, "login", &[("username", " Mallory "), ("password", PW)])
        .await;
    assert_eq!(res.status(), 401);
    let failed = audit(&app, "user.login_failed").await;
    assert_eq!(failed.len(), 1);
    let after = json(&failed[0].2);
    assert_eq!(after["username"], "mallory");
    assert_eq!(after["reason"], "unknown_user");
    assert_eq!(after["address"], "127.0.0.1");
    assert_eq!(after["agent"], "Curious/1.0");
}

both_databases!(
    an_admins_password_reset_ends_every_session_of_the_user,
    a_users_own_password_change_needs_the_current_one_and_ends_every_session,
    wrong_current_passwords_lock_the_password_change_as_sign_ins_do,
    reckon_user_passwd_ends_every_session_of_the_user,
    a_role_change_ends_every_session_of_the_user,
    a_disabled_users_sessions_end_and_enabling_brings_none_back,
    an_idle_session_ends_and_activity_keeps_one_alive,
    a_session_ends_at_its_lifetime_however_active,
    a_user_lists_their_sessions_and_ends_one_of_two,
    the_cli_lists_and_ends_a_users_sessions,
    a_lock_out_lasts_its_configured_time_and_is_audited,
    an_unknown_username_is_audited_as_tried,
);
