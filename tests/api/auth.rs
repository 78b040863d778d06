//! Signing in and out, throttling, sessions, the role guard, the Origin check.

use crate::both_databases;
use crate::helpers::{Backend, client, spawn_app};
use app::error::AppError;
use app::types::Role;

const PW: &str = "correct horse battery";

async fn login_with_the_right_password_opens_a_session(b: Backend) {
    let app = spawn_app(b).await;
    app.add_user("alice", Role::Operator, PW).await;
    assert_eq!(app.session_user().await, None);

    let res = app.login("Alice", PW).await;
    assert_eq!(res.status(), 200);
    let cookie = res
        .headers()
        .get("set-cookie")
        .expect("a session cookie")
        .to_str()
        .unwrap()
        .to_owned();
    assert!(cookie.starts_with("reckon_session="), "{cookie}");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );

    let user = app.session_user().await.expect("signed in");
    assert_eq!(user.username, "alice");
    assert_eq!(user.role, Role::Operator);

    let page = app.get("/").await;
    assert_eq!(page.status(), 200);
    assert!(
        page.text()
            .await
            .unwrap()
            .contains("<strong>alice</strong>")
    );

    assert_eq!(app.call("logout", &[]).await.status(), 200);
    assert_eq!(app.session_user().await, None);
    // A page now sends the visitor to the login page.
    let page = app.get("/").await;
    assert_eq!(page.status(), 302);
    assert_eq!(page.headers()["location"], "/login");
}

async fn login_with_a_wrong_password_is_refused(b: Backend) {
    let app = spawn_app(b).await;
    app.add_user("alice", Role::Operator, PW).await;
    for (user, pw) in [("alice", "wrong horse battery"), ("nobody", PW), ("", "")] {
        let res = app.login(user, pw).await;
        assert_eq!(res.status(), 401, "{user}");
        let err: AppError = res.json().await.unwrap();
        assert_eq!(err, AppError::BadCredentials);
    }
    assert_eq!(app.session_user().await, None);
}

async fn five_failures_lock_the_username_even_for_the_right_password(b: Backend) {
    let app = spawn_app(b).await;
    app.add_user("alice", Role::Operator, PW).await;
    app.add_user("bob", Role::Operator, PW).await;
    for _ in 0..5 {
        assert_eq!(
            app.login("alice", "wrong horse battery").await.status(),
            401
        );
    }
    let res = app.login("alice", PW).await;
    assert_eq!(res.status(), 429);
    assert_eq!(
        res.json::<AppError>().await.unwrap(),
        AppError::Throttled { minutes: 30 }
    );
    assert_eq!(app.session_user().await, None);
    // Another user from the same address is not locked by alice's failures.
    assert_eq!(app.login("bob", PW).await.status(), 200);
}

async fn twenty_failures_from_one_address_lock_the_address(b: Backend) {
    let app = spawn_app(b).await;
    app.add_user("carol", Role::Operator, PW).await;
    for i in 0..20 {
        let res = app.login(&format!("guess{i}"), "wrong horse battery").await;
        assert_eq!(res.status(), 401);
    }
    let res = app.login("carol", PW).await;
    assert_eq!(res.status(), 429);
}

async fn a_session_survives_a_server_restart(b: Backend) {
    let mut app = spawn_app(b).await;
    app.add_user("alice", Role::Admin, PW).await;
    assert_eq!(app.login("alice", PW).await.status(), 200);
    let before = app.base.clone();
    app.restart().await;
    assert_ne!(before, app.base, "a new server on a new port");
    let user = app
        .session_user()
        .await
        .expect("session kept in the database");
    assert_eq!(user.username, "alice");
    assert_eq!(app.call("users/list", &[]).await.status(), 200);
}

async fn an_operator_gets_403_from_admin_server_functions(b: Backend) {
    let app = spawn_app(b).await;
    app.add_user("olga", Role::Operator, PW).await;
    let anonymous = app.call("users/list", &[]).await;
    assert_eq!(anonymous.status(), 401);

    assert_eq!(app.login("olga", PW).await.status(), 200);
    let res = app.call("users/list", &[]).await;
    assert_eq!(res.status(), 403);
    assert_eq!(res.json::<AppError>().await.unwrap(), AppError::Forbidden);
    let res = app
        .call(
            "users/create",
            &[("username", "mallory"), ("role", "admin"), ("password", PW)],
        )
        .await;
    assert_eq!(res.status(), 403);
    assert!(
        app.accounts.by_username("mallory").await.is_err(),
        "nothing created"
    );

    // The page itself answers 403 and shows no user list.
    let page = app.get("/users").await;
    assert_eq!(page.status(), 403);
    let html = page.text().await.unwrap();
    assert!(html.contains("id=\"forbidden\"") && !html.contains("id=\"users\""));
    assert!(!html.contains("nav-users"), "no Users link for an operator");
}

async fn a_post_without_a_matching_origin_is_refused(b: Backend) {
    let app = spawn_app(b).await;
    app.add_user("alice", Role::Admin, PW).await;
    let url = format!("{}/api/login", app.base);
    let form = [("username", "alice"), ("password", PW)];
    let evil = client()
        .post(&url)
        .header("origin", "http://evil.example")
        .form(&form)
        .send()
        .await
        .unwrap();
    assert_eq!(evil.status(), 403);
    let none = client().post(&url).form(&form).send().await.unwrap();
    assert_eq!(none.status(), 403);
    let bad_referer = client()
        .post(&url)
        .header("referer", "http://evil.example/login")
        .form(&form)
        .send()
        .await
        .unwrap();
    assert_eq!(bad_referer.status(), 403);
    // The same request from the console's own origin (or its Referer) works.
    let ok = client()
        .post(&url)
        .header("referer", format!("{}/login", app.base))
        .form(&form)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
}

async fn a_plain_form_post_comes_back_with_the_error_in_the_address(b: Backend) {
    let app = spawn_app(b).await;
    app.add_user("alice", Role::Admin, PW).await;
    let post = |pw: &'static str| {
        app.client
            .post(format!("{}/api/login", app.base))
            .headers(app.origin())
            .header("accept", "text/html")
            .header("referer", format!("{}/login", app.base))
            .form(&[("username", "alice"), ("password", pw)])
            .send()
    };
    let res = post("wrong horse battery").await.unwrap();
    assert_eq!(res.status(), 302);
    let location = res.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.starts_with("/login?err="), "{location}");
    let page = app.get(&location).await.text().await.unwrap();
    assert!(
        page.contains("Wrong username or password."),
        "error shown on the page"
    );
    // Words in an address that this server did not seal are not shown: no
    // seal, a made-up one, or a real seal on other words.
    let seal = form_urlencoded::parse(location.split_once('?').unwrap().1.as_bytes())
        .find(|(k, _)| k == "errseal")
        .map(|(_, v)| v.into_owned())
        .expect("the error is sealed");
    let forged =
        form_urlencoded::byte_serialize(br#"{"Refused":{"detail":"locked: call +1 555 0100"}}"#)
            .collect::<String>();
    for query in [
        format!("err={forged}"),
        format!("err={forged}&errseal={}", "0".repeat(64)),
        format!("err={forged}&errseal={seal}"),
    ] {
        let page = app
            .get(&format!("/login?{query}"))
            .await
            .text()
            .await
            .unwrap();
        assert!(!page.contains("555 0100"), "{query}");
        assert!(!page.contains("role=\"alert\""), "{query}");
    }

    // A Referer whose path reads as another host to a browser: the
    // redirect stays on this console.
    for path in [
        "//evil.example/login",
        "/\\evil.example/login",
        "///evil.example",
    ] {
        let res = app
            .client
            .post(format!("{}/api/login", app.base))
            .headers(app.origin())
            .header("accept", "text/html")
            .header("referer", format!("{}{path}", app.base))
            .form(&[("username", "alice"), ("password", "wrong horse battery")])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 302, "{path}");
        let location = res.headers()["location"].to_str().unwrap();
        assert!(
            location.starts_with('/')
                && !location.starts_with("//")
                && !location.starts_with("/\\"),
            "{path} -> {location}"
        );
        if path.starts_with("//evil") {
            assert!(
                location.starts_with("/evil.example/login?err="),
                "{location}"
            );
        }
    }

    let res = post(PW).await.unwrap();
    assert_eq!(res.status(), 302);
    assert_eq!(res.headers()["location"], "/");
    assert!(app.session_user().await.is_some());
}

async fn malformed_server_function_arguments_are_a_400(b: Backend) {
    let app = spawn_app(b).await;
    app.add_user("alice", Role::Admin, PW).await;
    // Without a session: a missing argument, an ill-typed one, a body that
    // is not a form at all.
    let missing = app.call("login", &[("username", "alice")]).await;
    assert_eq!(missing.status(), 400);
    let body = missing.text().await.unwrap();
    assert!(body.contains("Transport"), "{body}");
    let not_a_form = app
        .client
        .post(format!("{}/api/login", app.base))
        .headers(app.origin())
        .header("content-type", "application/x-www-form-urlencoded")
        .body("%%%\u{0}")
        .send()
        .await
        .unwrap();
    assert_eq!(not_a_form.status(), 400);
    // Signed in, a function whose argument is missing.
    assert_eq!(app.login("alice", PW).await.status(), 200);
    assert_eq!(app.call("callbacks/show", &[]).await.status(), 400);
    // Well-formed calls answer as before.
    assert_eq!(
        app.call("callbacks/show", &[("id", "nope")]).await.status(),
        404
    );
}

async fn a_disabled_users_session_stops_at_once(b: Backend) {
    let app = spawn_app(b).await;
    let bob = app.add_user("bob", Role::Operator, PW).await;
    assert_eq!(app.login("bob", PW).await.status(), 200);
    assert!(app.session_user().await.is_some());
    app.accounts
        .set_disabled(&reckon::accounts::Actor::cli(), &bob.id, true)
        .await
        .unwrap();
    assert_eq!(app.session_user().await, None);
    assert_eq!(app.login("bob", PW).await.status(), 401);
}

async fn the_language_follows_the_browser_then_the_users_choice(b: Backend) {
    let app = spawn_app(b).await;
    app.add_user("li", Role::Admin, PW).await;
    let zh = app
        .client
        .get(format!("{}/login", app.base))
        .header("accept-language", "zh-CN,zh;q=0.9,en;q=0.5")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(zh.contains("用户名") && zh.contains("lang=\"zh-CN\""));

    assert_eq!(app.login("li", PW).await.status(), 200);
    assert_eq!(app.call("language", &[("lang", "zh")]).await.status(), 200);
    assert_eq!(
        app.session_user().await.unwrap().lang,
        Some(app::types::Lang::Zh)
    );
    // A new session on another client, with an English browser, stays Chinese.
    let other = client();
    assert_eq!(
        app.call_with(&other, "login", &[("username", "li"), ("password", PW)])
            .await
            .status(),
        200
    );
    let page = other
        .get(format!("{}/users", app.base))
        .header("accept-language", "en")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("用户管理"), "Users page in Chinese");
}

/// A client whose connections come from `addr` (any 127.x.y.z is this
/// machine), so the server sees another address.
fn client_from(addr: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(addr.parse::<std::net::IpAddr>().unwrap())
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(45))
        .build()
        .unwrap()
}

/// The address the audit log recorded for `action`'s latest entry.
async fn audited_address(app: &crate::helpers::TestApp, action: &str) -> String {
    let after: String = sqlx::query_scalar(
        "SELECT after_json FROM audit_log WHERE action = $1 ORDER BY seq DESC LIMIT 1",
    )
    .bind(action)
    .fetch_one(&app.engine.db.pool)
    .await
    .unwrap();
    let after: serde_json::Value = serde_json::from_str(&after).unwrap();
    after["address"].as_str().unwrap().to_owned()
}

/// A sign-in through `client` claiming to be forwarded for `forwarded`.
async fn login_via(
    app: &crate::helpers::TestApp,
    client: &reqwest::Client,
    forwarded: &str,
    name: &str,
    password: &str,
) -> u16 {
    client
        .post(format!("{}/api/login", app.base))
        .headers(app.origin())
        .header("x-forwarded-for", forwarded)
        .form(&[("username", name), ("password", password)])
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Behind a trusted proxy (127.0.0.1 here) the client is the address the
/// proxy forwarded for: the audit log records it, and twenty failures
/// lock that address, not the proxy every other client comes through.
/// From anywhere else the header is anyone's and is not believed.
async fn behind_a_trusted_proxy_the_forwarded_client_is_seen(b: Backend) {
    let app = crate::helpers::spawn_app_with(
        b,
        |c| c.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()],
        reckon::startup::Options::default(),
    )
    .await;
    app.add_user("alice", Role::Operator, PW).await;
    let proxy = crate::helpers::client();
    assert_eq!(
        login_via(&app, &proxy, "1.2.3.4, 203.0.113.7", "alice", PW).await,
        200
    );
    assert_eq!(audited_address(&app, "user.login").await, "203.0.113.7");
    for i in 0..20 {
        let status = login_via(
            &app,
            &proxy,
            "203.0.113.9",
            &format!("guess{i}"),
            "wrong horse battery",
        )
        .await;
        assert_eq!(status, 401);
    }
    assert_eq!(
        login_via(&app, &proxy, "203.0.113.9", "alice", PW).await,
        429,
        "that client is locked"
    );
    assert_eq!(
        login_via(&app, &crate::helpers::client(), "203.0.113.7", "alice", PW).await,
        200,
        "another client through the same proxy is not"
    );
    let elsewhere = client_from("127.0.0.2");
    assert_eq!(
        login_via(&app, &elsewhere, "203.0.113.7", "alice", PW).await,
        200
    );
    assert_eq!(
        audited_address(&app, "user.login").await,
        "127.0.0.2",
        "not a trusted proxy"
    );
}

/// How many sign-ins the server counted with this outcome.
fn logins(app: &crate::helpers::TestApp, outcome: &str) -> u64 {
    let series = format!("reckon_login_attempts_total{{outcome=\"{outcome}\"}}");
    crate::helpers::metric(&app.accounts.metrics, &series)
}

async fn concurrent_wrong_sign_ins_for_one_user_check_at_most_five(b: Backend) {
    let app = spawn_app(b).await;
    app.add_user("alice", Role::Operator, PW).await;
    let attempts = (0..200).map(|_| {
        let c = client();
        let url = format!("{}/api/login", app.base);
        let origin = app.base.clone();
        async move {
            c.post(url)
                .header("origin", origin)
                .form(&[("username", "alice"), ("password", "wrong horse battery")])
                .send()
                .await
                .unwrap()
        }
    });
    let answers = futures_util::future::join_all(attempts).await;
    let (mut wrong, mut refused) = (0, 0);
    for res in answers {
        match res.status().as_u16() {
            401 => wrong += 1,
            429 => {
                assert_eq!(res.headers()["retry-after"], "1800");
                assert_eq!(
                    res.json::<AppError>().await.unwrap(),
                    AppError::Throttled { minutes: 30 }
                );
                refused += 1;
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!((wrong, refused), (5, 195), "five checked, the rest refused");
    assert_eq!(logins(&app, "bad_credentials"), 5, "five passwords hashed");
    assert_eq!(logins(&app, "throttled"), 195);

    // The lock is the username's: the right password from another address
    // is refused too, until the lock has passed.
    let fresh = client_from("127.0.0.2");
    let sign_in = || async {
        fresh
            .post(format!("{}/api/login", app.base))
            .header("origin", &app.base)
            .form(&[("username", "alice"), ("password", PW)])
            .send()
            .await
            .unwrap()
            .status()
    };
    assert_eq!(sign_in().await, 429);
    let past = reckon::store::now_micros() - 1;
    sqlx::query(
        "UPDATE login_throttle SET locked_until = $1, first_failure_at = $1 - 900000000 \
         WHERE throttle_key = 'user:alice'",
    )
    .bind(past)
    .execute(&app.accounts.db.pool)
    .await
    .unwrap();
    assert_eq!(sign_in().await, 200, "the lock has passed");
}

async fn sign_ins_beyond_the_hash_queue_are_told_to_come_back(b: Backend) {
    let app = spawn_app(b).await;
    app.add_user("dave", Role::Operator, PW).await;
    // Each from its own address and for its own name, so no throttle stops
    // them: only the bound on concurrent password checks does.
    let attempts = (0..150).map(|i| {
        let c = client_from(&format!("127.0.{}.{}", 1 + i / 200, 10 + i % 200));
        let url = format!("{}/api/login", app.base);
        let origin = app.base.clone();
        async move {
            let res = c
                .post(url)
                .header("origin", origin)
                .form(&[("username", format!("guest{i}")), ("password", PW.into())])
                .send()
                .await
                .unwrap();
            (i, res)
        }
    });
    let answers = futures_util::future::join_all(attempts).await;
    let (mut checked, mut busy) = (0, vec![]);
    for (i, res) in answers {
        match res.status().as_u16() {
            401 => checked += 1,
            503 => {
                assert_eq!(res.headers()["retry-after"], "1");
                assert_eq!(
                    res.json::<AppError>().await.unwrap(),
                    AppError::Busy { seconds: 1 }
                );
                busy.push(i);
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert!(checked >= 2, "some were checked: {checked}");
    assert!(
        !busy.is_empty(),
        "beyond the queue, callers are turned away"
    );
    assert_eq!(logins(&app, "busy"), busy.len() as u64);
    // A turned-away attempt was not a failure: its username and address
    // have no attempt counted.
    let i = busy[0];
    let counted: Vec<i64> =
        sqlx::query_scalar("SELECT failures FROM login_throttle WHERE throttle_key IN ($1, $2)")
            .bind(format!("user:guest{i}"))
            .bind(format!("addr:127.0.{}.{}", 1 + i / 200, 10 + i % 200))
            .fetch_all(&app.accounts.db.pool)
            .await
            .unwrap();
    assert!(counted.iter().all(|n| *n == 0), "{counted:?}");
    // Once the flood has passed, signing in works.
    assert_eq!(app.login("dave", PW).await.status(), 200);
}

both_databases!(
    login_with_the_right_password_opens_a_session,
    login_with_a_wrong_password_is_refused,
    five_failures_lock_the_username_even_for_the_right_password,
    twenty_failures_from_one_address_lock_the_address,
    behind_a_trusted_proxy_the_forwarded_client_is_seen,
    concurrent_wrong_sign_ins_for_one_user_check_at_most_five,
    sign_ins_beyond_the_hash_queue_are_told_to_come_back,
    a_session_survives_a_server_restart,
    an_operator_gets_403_from_admin_server_functions,
    a_post_without_a_matching_origin_is_refused,
    a_plain_form_post_comes_back_with_the_error_in_the_address,
    a_disabled_users_session_stops_at_once,
    malformed_server_function_arguments_are_a_400,
    the_language_follows_the_browser_then_the_users_choice,
);
