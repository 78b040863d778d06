//! The second factor (TOTP with recovery codes): enrolment forced by role
//! right after the password; sign-in with a code, each time step taken
//! once; wrong codes counted towards the lock-out; recovery codes good
//! once; an admin's reset ending the user's sessions and forcing a new
//! enrolment; the half-signed-in state refused by every page, server
//! function and the API; the command line's status and reset.

use crate::both_databases;
use crate::helpers::{Backend, TestApp, spawn_app_with};
use app::mfa::{Enrolment, MfaStatus, SecondStep};
use app::types::{Role, SessionInfo};
use reckon::config::MfaRoles;
use reckon::context::{Clock, ManualClock};
use reckon::startup::Options;
use std::sync::Arc;
use totp_rs::{Algorithm, Secret, TOTP};

const PW: &str = "correct horse battery";

/// An app whose supervisors and admins need a second factor, its sessions
/// and codes timed by a clock the test moves.
async fn app_with_mfa(b: Backend) -> (TestApp, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::default());
    let app = spawn_app_with(
        b,
        |c| {
            c.sign_in.mfa = MfaRoles {
                supervisor: true,
                admin: true,
                ..MfaRoles::default()
            }
        },
        Options {
            session_clock: clock.clone(),
            workers: false,
            ..Options::default()
        },
    )
    .await;
    (app, clock)
}

fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(45))
        .build()
        .unwrap()
}

/// The code an authenticator app shows for `secret` (base32) at the
/// clock's time.
fn code(secret: &str, clock: &ManualClock) -> String {
    let bytes = Secret::Encoded(secret.to_owned()).to_bytes().unwrap();
    let totp = TOTP::new_unchecked(Algorithm::SHA1, 6, 1, 30, bytes, None, String::new());
    totp.generate((clock.now_micros() / 1_000_000) as u64)
}

async fn who(app: &TestApp, c: &reqwest::Client) -> Option<String> {
    let res = app.call_with(c, "session", &[]).await;
    assert_eq!(res.status(), 200);
    res.json::<SessionInfo>()
        .await
        .unwrap()
        .user
        .map(|u| u.username)
}

async fn password(app: &TestApp, c: &reqwest::Client, username: &str) -> reqwest::Response {
    app.call_with(c, "login", &[("username", username), ("password", PW)])
        .await
}

async fn step(app: &TestApp, c: &reqwest::Client) -> Option<SecondStep> {
    let res = app.call_with(c, "mfa/step", &[]).await;
    assert_eq!(res.status(), 200);
    res.json().await.unwrap()
}

async fn verify(app: &TestApp, c: &reqwest::Client, code: &str) -> u16 {
    app.call_with(c, "mfa/verify", &[("code", code)])
        .await
        .status()
        .as_u16()
}

/// Enrols the browser's user (signed in, or waiting to enrol): the secret
/// and the recovery codes. The clock then moves a step on, so the next
/// code is a new one.
async fn enrol(app: &TestApp, c: &reqwest::Client, clock: &ManualClock) -> (String, Vec<String>) {
    let res = app.call_with(c, "mfa/begin", &[]).await;
    assert_eq!(res.status(), 200);
    let e: Enrolment = res.json().await.unwrap();
    assert!(e.uri.starts_with("otpauth://totp/Reckon:"), "{}", e.uri);
    assert!(e.qr.starts_with("data:image/svg+xml;base64,"));
    let wrong = app.call_with(c, "mfa/confirm", &[("code", "000000")]).await;
    assert_eq!(wrong.status(), 401, "a wrong code confirms nothing");
    let res = app
        .call_with(c, "mfa/confirm", &[("code", &code(&e.secret, clock))])
        .await;
    assert_eq!(res.status(), 200);
    let codes: Vec<String> = res.json().await.unwrap();
    assert_eq!(codes.len(), 10);
    clock.advance_secs(30);
    (e.secret, codes)
}

/// Nothing but the second step reaches this browser: no user, server
/// functions and pages refused, the API's routes too.
async fn half_signed_in_reaches_nothing(app: &TestApp, c: &reqwest::Client) {
    assert_eq!(who(app, c).await, None);
    for endpoint in [
        "sessions/list",
        "users/list",
        "mfa/status",
        "mfa/mine",
        "mfa/recovery",
        "tickets/list",
    ] {
        let status = app
            .call_with(c, endpoint, &[("code", "123456")])
            .await
            .status();
        assert!(
            status == 401 || status == 400,
            "{endpoint} answered {status} to a half-signed-in browser"
        );
        assert_ne!(status, 200);
    }
    for page in ["/", "/security", "/users", "/sessions"] {
        let res = c
            .get(format!("{}{page}", app.base))
            .header("accept", "text/html")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 302, "{page}");
        assert_eq!(
            res.headers().get("location").and_then(|l| l.to_str().ok()),
            Some("/login"),
            "{page}"
        );
    }
    let api = c
        .get(format!("{}/api/v1/whoami", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(api.status(), 401);
}

async fn audit(app: &TestApp, action: &str) -> Vec<(String, serde_json::Value)> {
    let rows: Vec<(String, Option<String>)> =
        sqlx::query_as("SELECT actor, after_json FROM audit_log WHERE action = $1 ORDER BY seq")
            .bind(action)
            .fetch_all(&app.accounts.db.pool)
            .await
            .unwrap();
    rows.into_iter()
        .map(|(a, j)| {
            (
                a,
                j.map(|j| serde_json::from_str(&j).unwrap())
                    .unwrap_or_default(),
            )
        })
        .collect()
}

async fn a_role_that_needs_it_enrols_right_after_the_password(b: Backend) {
    let (app, clock) = app_with_mfa(b).await;
    app.add_user("root", Role::Admin, PW).await;
    app.add_user("olga", Role::Operator, PW).await;

    // An operator's role needs none: the password signs her in.
    let olga = browser();
    assert_eq!(password(&app, &olga, "olga").await.status(), 200);
    assert_eq!(who(&app, &olga).await.as_deref(), Some("olga"));

    let root = browser();
    assert_eq!(password(&app, &root, "root").await.status(), 200);
    assert_eq!(
        step(&app, &root).await,
        Some(SecondStep {
            username: "root".into(),
            enrol: true
        })
    );
    half_signed_in_reaches_nothing(&app, &root).await;
    // The code step is not this one's: there is nothing to check yet.
    assert_eq!(verify(&app, &root, "123456").await, 401);
    assert_eq!(who(&app, &root).await, None);

    let (secret, _) = enrol(&app, &root, &clock).await;
    assert_eq!(who(&app, &root).await.as_deref(), Some("root"));
    assert_eq!(step(&app, &root).await, None);
    let enrolled = audit(&app, "user.mfa_enrol").await;
    assert_eq!(enrolled.len(), 1);
    assert_eq!(enrolled[0].0, "root");
    let logins = audit(&app, "user.login").await;
    assert_eq!(logins.last().unwrap().1["second_factor"], "enrolled");

    // The secret is sealed: neither its base32 nor its bytes are stored.
    let (stored,): (String,) = sqlx::query_as("SELECT secret FROM user_mfa")
        .fetch_one(&app.accounts.db.pool)
        .await
        .unwrap();
    assert!(!stored.contains(&secret));
    let raw = Secret::Encoded(secret.clone()).to_bytes().unwrap();
    use base64::Engine as _;
    let sealed = base64::engine::general_purpose::STANDARD
        .decode(&stored)
        .unwrap();
    assert!(!sealed.windows(raw.len()).any(|w| w == raw.as_slice()));
}

async fn a_code_signs_in_once_and_a_replayed_one_is_refused(b: Backend) {
    let (app, clock) = app_with_mfa(b).await;
    app.add_user("olga", Role::Operator, PW).await;
    // An operator enrols of her own will, from her security page.
    let c = browser();
    assert_eq!(password(&app, &c, "olga").await.status(), 200);
    let res = app.call_with(&c, "mfa/mine", &[]).await;
    assert_eq!(res.status(), 200);
    let (secret, _) = enrol(&app, &c, &clock).await;
    let status: MfaStatus = app
        .call_with(&c, "mfa/status", &[])
        .await
        .json()
        .await
        .unwrap();
    assert!(status.enrolled && !status.required);
    assert_eq!(status.recovery_left, 10);
    assert_eq!(app.call_with(&c, "logout", &[]).await.status(), 200);

    // Enrolled, she gives a code after the password.
    assert_eq!(password(&app, &c, "olga").await.status(), 200);
    assert_eq!(step(&app, &c).await.map(|s| s.enrol), Some(false));
    half_signed_in_reaches_nothing(&app, &c).await;
    let now = code(&secret, &clock);
    assert_eq!(verify(&app, &c, "999999").await, 401);
    assert_eq!(verify(&app, &c, &now).await, 200);
    assert_eq!(who(&app, &c).await.as_deref(), Some("olga"));
    let logins = audit(&app, "user.login").await;
    assert_eq!(logins.last().unwrap().1["second_factor"], "totp");
    assert_eq!(app.call_with(&c, "logout", &[]).await.status(), 200);

    // The same code again, in the same 30 seconds: refused, and audited.
    assert_eq!(password(&app, &c, "olga").await.status(), 200);
    assert_eq!(verify(&app, &c, &now).await, 401);
    assert_eq!(who(&app, &c).await, None);
    let failed = audit(&app, "user.login_failed").await;
    let reasons: Vec<&str> = failed
        .iter()
        .map(|(_, a)| a["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["wrong_code", "replayed_code"]);
    assert!(failed[1].1["address"].as_str().is_some());
    // The next step's code is new: it signs in.
    clock.advance_secs(30);
    assert_eq!(verify(&app, &c, &code(&secret, &clock)).await, 200);
    assert_eq!(who(&app, &c).await.as_deref(), Some("olga"));

    // A code two steps old is too old.
    assert_eq!(app.call_with(&c, "logout", &[]).await.status(), 200);
    clock.advance_secs(30);
    let old = code(&secret, &clock);
    clock.advance_secs(60);
    assert_eq!(password(&app, &c, "olga").await.status(), 200);
    assert_eq!(verify(&app, &c, &old).await, 401);

    // A pending sign-in waits five minutes, no more.
    clock.advance_secs(6 * 60);
    assert_eq!(step(&app, &c).await, None);
    assert_eq!(verify(&app, &c, &code(&secret, &clock)).await, 401);
}

async fn wrong_codes_count_towards_the_lock_out(b: Backend) {
    let (app, clock) = app_with_mfa(b).await;
    app.add_user("sam", Role::Supervisor, PW).await;
    let c = browser();
    assert_eq!(password(&app, &c, "sam").await.status(), 200);
    let (secret, _) = enrol(&app, &c, &clock).await;
    assert_eq!(app.call_with(&c, "logout", &[]).await.status(), 200);

    // Three wrong codes; a right password again does not wipe them.
    assert_eq!(password(&app, &c, "sam").await.status(), 200);
    for _ in 0..3 {
        assert_eq!(verify(&app, &c, "111111").await, 401);
    }
    assert_eq!(password(&app, &c, "sam").await.status(), 200);
    for _ in 0..2 {
        assert_eq!(verify(&app, &c, "222222").await, 401);
    }
    // Five failures: the next attempt is locked out, right code or not.
    let res = app
        .call_with(&c, "mfa/verify", &[("code", &code(&secret, &clock))])
        .await;
    assert_eq!(res.status(), 429);
    assert_eq!(who(&app, &c).await, None);
    assert_eq!(password(&app, &c, "sam").await.status(), 429);
    let locks = audit(&app, "user.locked").await;
    assert_eq!(locks.len(), 1);
    assert_eq!(locks[0].1["username"], "sam");
    assert_eq!(audit(&app, "user.login_failed").await.len(), 5);
}

async fn a_recovery_code_signs_in_once(b: Backend) {
    let (app, clock) = app_with_mfa(b).await;
    app.add_user("sam", Role::Supervisor, PW).await;
    let c = browser();
    assert_eq!(password(&app, &c, "sam").await.status(), 200);
    let (_, codes) = enrol(&app, &c, &clock).await;
    assert_eq!(app.call_with(&c, "logout", &[]).await.status(), 200);

    assert_eq!(password(&app, &c, "sam").await.status(), 200);
    // As typed from paper: upper case, spaces for dashes.
    let typed = codes[3].to_uppercase().replace('-', " ");
    assert_eq!(verify(&app, &c, &typed).await, 200);
    assert_eq!(who(&app, &c).await.as_deref(), Some("sam"));
    let used = audit(&app, "user.mfa_recovery_used").await;
    assert_eq!(used.len(), 1);
    assert_eq!(used[0].1["recovery_codes_left"], 9);
    let logins = audit(&app, "user.login").await;
    assert_eq!(logins.last().unwrap().1["second_factor"], "recovery");
    let status: MfaStatus = app
        .call_with(&c, "mfa/status", &[])
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(status.recovery_left, 9);
    assert_eq!(app.call_with(&c, "logout", &[]).await.status(), 200);

    assert_eq!(password(&app, &c, "sam").await.status(), 200);
    assert_eq!(verify(&app, &c, &codes[3]).await, 401, "used once");
    assert_eq!(
        verify(&app, &c, &codes[4]).await,
        200,
        "another still works"
    );
}

async fn an_admins_reset_ends_the_sessions_and_the_user_enrols_again(b: Backend) {
    let (app, clock) = app_with_mfa(b).await;
    let root = app.add_user("root", Role::Admin, PW).await;
    let sam = app.add_user("sam", Role::Supervisor, PW).await;
    let admin = browser();
    assert_eq!(password(&app, &admin, "root").await.status(), 200);
    enrol(&app, &admin, &clock).await;
    let (laptop, phone) = (browser(), browser());
    assert_eq!(password(&app, &laptop, "sam").await.status(), 200);
    let (secret, _) = enrol(&app, &laptop, &clock).await;
    assert_eq!(password(&app, &phone, "sam").await.status(), 200);
    assert_eq!(verify(&app, &phone, &code(&secret, &clock)).await, 200);
    assert_eq!(who(&app, &phone).await.as_deref(), Some("sam"));

    // An admin cannot reset their own here; nor may a supervisor reset.
    let own = app
        .call_with(&admin, "users/mfa-reset", &[("user_id", &root.id)])
        .await;
    assert_eq!(own.status(), 403);
    let by_sam = app
        .call_with(&phone, "users/mfa-reset", &[("user_id", &root.id)])
        .await;
    assert_eq!(by_sam.status(), 403);

    let res = app
        .call_with(&admin, "users/mfa-reset", &[("user_id", &sam.id)])
        .await;
    assert_eq!(res.status(), 200);
    assert_eq!(who(&app, &laptop).await, None);
    assert_eq!(who(&app, &phone).await, None);
    let resets = audit(&app, "user.mfa_reset").await;
    assert_eq!(resets.len(), 1);
    assert_eq!(resets[0].0, "root");
    let ends = audit(&app, "session.end").await;
    assert_eq!(ends.len(), 2);
    assert!(ends.iter().all(|(_, a)| a["reason"] == "mfa_reset"));
    // Nothing left to reset.
    let again = app
        .call_with(&admin, "users/mfa-reset", &[("user_id", &sam.id)])
        .await;
    assert_eq!(again.status(), 400);

    // At the next sign-in, enrolment first; the old codes are gone.
    assert_eq!(password(&app, &laptop, "sam").await.status(), 200);
    assert_eq!(step(&app, &laptop).await.map(|s| s.enrol), Some(true));
    assert_eq!(verify(&app, &laptop, &code(&secret, &clock)).await, 401);
    let (_, _) = enrol(&app, &laptop, &clock).await;
    assert_eq!(who(&app, &laptop).await.as_deref(), Some("sam"));

    // The host's command line: status, and a reset audited as the host.
    let out = app.cli(&["user", "mfa", "sam"], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("second factor set up"), "{text}");
    assert!(text.contains("10 recovery codes left"), "{text}");
    let out = app.cli(&["user", "mfa-reset", "root"], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(who(&app, &admin).await, None);
    let resets = audit(&app, "user.mfa_reset").await;
    assert_eq!(resets.last().unwrap().0, "cli");
    let out = app.cli(&["user", "mfa", "root"], None);
    assert!(String::from_utf8_lossy(&out.stdout).contains("not set up"));
}

both_databases!(
    a_role_that_needs_it_enrols_right_after_the_password,
    a_code_signs_in_once_and_a_replayed_one_is_refused,
    wrong_codes_count_towards_the_lock_out,
    a_recovery_code_signs_in_once,
    an_admins_reset_ends_the_sessions_and_the_user_enrols_again,
);
