//! Sign-in through a real OpenID Provider — npm `oidc-provider`, started
//! here as a child process (end2end/oidc-provider.mjs) — driven as a
//! browser drives it: Reckon's start link, the provider's own login and
//! consent pages, the callback. Accounts made just in time with the role
//! the groups claim maps to, roles following the claims at each sign-in,
//! unmapped groups, disabled users, a replayed or foreign callback, an ID
//! token without the flow's nonce, a code without its PKCE verifier and the
//! provider's own refusal all refused with a page and an audit entry, and
//! password sign-in turned off with the first admin bound on the host.

use crate::both_databases;
use crate::helpers::{Backend, TestApp, spawn_app_with};
use app::types::{Role, SessionInfo};
use reckon::accounts::Actor;
use reckon::config::Oidc;
use reckon::startup::Options;
use serde_json::{Value, json};
use std::path::PathBuf;
use tokio::io::{AsyncBufReadExt, BufReader};

const CLIENT_ID: &str = "reckon-console";
const CLIENT_SECRET: &str = "op-test-secret-0123456789";

/// The provider, killed when dropped; its accounts in a file it reads at
/// every sign-in.
struct Op {
    issuer: String,
    accounts: PathBuf,
    _child: tokio::process::Child,
    _dir: tempfile::TempDir,
}

impl Op {
    async fn start(redirect_uri: &str, accounts: Value) -> Op {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("end2end");
        assert!(
            root.join("node_modules/oidc-provider").is_dir(),
            "npm oidc-provider is missing: run `npm ci` in end2end/ (the test command does)"
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("accounts.json");
        std::fs::write(&file, accounts.to_string()).unwrap();
        let mut child = tokio::process::Command::new("node")
            .arg(root.join("oidc-provider.mjs"))
            .current_dir(&root)
            .env("OIDC_PORT", "0")
            .env("OIDC_REDIRECT_URI", redirect_uri)
            .env("OIDC_CLIENT_ID", CLIENT_ID)
            .env("OIDC_CLIENT_SECRET", CLIENT_SECRET)
            .env("OIDC_ACCOUNTS", &file)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let issuer = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(issuer) = line.strip_prefix("issuer ") {
                    return issuer.to_owned();
                }
            }
            panic!("the provider ended before it listened");
        })
        .await
        .expect("the provider listens within 30 s");
        // Read on: a closed pipe would end the provider at its next line.
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("oidc-provider: {line}");
            }
        });
        Op {
            issuer,
            accounts: file,
            _child: child,
            _dir: dir,
        }
    }

    fn set_accounts(&self, accounts: Value) {
        std::fs::write(&self.accounts, accounts.to_string()).unwrap();
    }
}

fn settings(issuer: &str, base: &str, local_passwords: bool) -> Oidc {
    Oidc {
        issuer: issuer.to_owned(),
        client_id: CLIENT_ID.into(),
        client_secret: Some(CLIENT_SECRET.to_owned().into()),
        redirect_url: format!("{base}{}", reckon::config::OIDC_CALLBACK_PATH),
        scopes: vec!["openid".into(), "profile".into(), "email".into()],
        name: "Test IdP".into(),
        role_claim: "groups".into(),
        operator: vec!["reckon-operators".into()],
        supervisor: vec!["reckon-supervisors".into()],
        admin: vec!["reckon-admins".into()],
        local_passwords,
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Reckon on a port chosen first (the provider must know its redirect
/// URI), the provider, and Reckon configured for it.
async fn with_op(backend: Backend, accounts: Value, local_passwords: bool) -> (TestApp, Op) {
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let op = Op::start(
        &format!("{base}{}", reckon::config::OIDC_CALLBACK_PATH),
        accounts,
    )
    .await;
    let oidc = settings(&op.issuer, &base, local_passwords);
    let app = spawn_app_with(
        backend,
        move |c| {
            c.listen = format!("127.0.0.1:{port}").parse().unwrap();
            c.oidc = Some(oidc);
        },
        Options::default(),
    )
    .await;
    assert_eq!(app.base, base);
    (app, op)
}

fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .user_agent("oidc-test-browser/1.0")
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(45))
        .build()
        .unwrap()
}

fn location(res: &reqwest::Response) -> String {
    let loc = res
        .headers()
        .get("location")
        .expect("a redirect names where")
        .to_str()
        .unwrap();
    res.url().join(loc).unwrap().to_string()
}

/// `name="…" value="…"` of a hidden input, and the form's action.
fn form_of(html: &str) -> (String, Vec<(String, String)>) {
    let attr = |tag: &str, name: &str| {
        let start = tag.find(&format!("{name}=\""))? + name.len() + 2;
        Some(tag[start..][..tag[start..].find('"')?].to_owned())
    };
    let form = &html[html.find("<form").expect("a form")..];
    let action = attr(&form[..form.find('>').unwrap()], "action").expect("an action");
    let mut fields = Vec::new();
    for input in form.split("<input").skip(1) {
        let tag = &input[..input.find('>').unwrap()];
        if tag.contains("type=\"hidden\"")
            && let (Some(n), Some(v)) = (attr(tag, "name"), attr(tag, "value"))
        {
            fields.push((n, v));
        }
    }
    (action.replace("&amp;", "&"), fields)
}

/// From the console's "Sign in with …" link through the provider's login
/// and consent pages, as `login`: the callback URL the provider sends the
/// browser to (not yet followed).
async fn through_op(app: &TestApp, c: &reqwest::Client, login: &str) -> String {
    let res = c
        .get(format!("{}/auth/oidc/start", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status(),
        303,
        "the start sends the browser to the provider"
    );
    let mut res = c.get(location(&res)).send().await.unwrap();
    for _ in 0..16 {
        if res.status().is_redirection() {
            let next = location(&res);
            if next.starts_with(&app.base) {
                return next;
            }
            res = c.get(next).send().await.unwrap();
            continue;
        }
        assert_eq!(res.status(), 200, "a provider page");
        let url = res.url().clone();
        let html = res.text().await.unwrap();
        let (action, mut fields) = form_of(&html);
        if html.contains("name=\"login\"") {
            fields.push(("login".into(), login.into()));
            fields.push(("password".into(), "any password".into()));
        }
        res = c
            .post(url.join(&action).unwrap())
            .form(&fields)
            .send()
            .await
            .unwrap();
    }
    panic!("the provider never sent the browser back");
}

/// Signs `login` in through the provider; the callback's answer.
async fn sign_in(app: &TestApp, c: &reqwest::Client, login: &str) -> reqwest::Response {
    let callback = through_op(app, c, login).await;
    c.get(callback).send().await.unwrap()
}

async fn info(app: &TestApp, c: &reqwest::Client) -> SessionInfo {
    let res = app.call_with(c, "session", &[]).await;
    assert_eq!(res.status(), 200);
    res.json().await.unwrap()
}

async fn who(app: &TestApp, c: &reqwest::Client) -> Option<(String, Role)> {
    info(app, c).await.user.map(|u| (u.username, u.role))
}

/// The refusal page's reason, asserting it is one.
async fn refusal(res: reqwest::Response) -> (u16, String) {
    let status = res.status().as_u16();
    let html = res.text().await.unwrap();
    let at = html.find("data-reason=\"").expect("a refusal page") + 13;
    (
        status,
        html[at..][..html[at..].find('"').unwrap()].to_owned(),
    )
}

async fn audit(app: &TestApp, action: &str) -> Vec<(String, String, Value)> {
    let rows: Vec<(String, String, Option<String>)> = sqlx::query_as(
        "SELECT actor, object_id, after_json FROM audit_log WHERE action = $1 ORDER BY seq",
    )
    .bind(action)
    .fetch_all(&app.accounts.db.pool)
    .await
    .unwrap();
    rows.into_iter()
        .map(|(a, o, j)| {
            (
                a,
                o,
                serde_json::from_str(&j.unwrap_or("null".into())).unwrap(),
            )
        })
        .collect()
}

fn people() -> Value {
    json!({
        "alice": { "groups": ["reckon-admins"], "email": "alice@example.com" },
        "oscar": { "groups": ["staff", "reckon-operators"] },
        "sam": { "groups": ["reckon-supervisors"] },
        "mallory": { "groups": ["marketing"] },
    })
}

async fn accounts_are_made_with_the_mapped_role_and_follow_the_claims(backend: Backend) {
    let (app, op) = with_op(backend, people(), true).await;
    let actor = format!("oidc:{}", op.issuer);
    let c = browser();
    let ways = info(&app, &c).await.sign_in;
    assert!(ways.passwords);
    assert_eq!(ways.provider.as_deref(), Some("Test IdP"));
    let page = c
        .get(format!("{}/login", app.base))
        .header("accept", "text/html")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("Sign in with Test IdP") && page.contains("/auth/oidc/start"));
    assert!(
        page.contains("id=\"login-form\""),
        "passwords are still taken"
    );

    let res = sign_in(&app, &c, "alice").await;
    assert_eq!(res.status(), 200);
    assert!(res.text().await.unwrap().contains("sso-done"));
    assert_eq!(who(&app, &c).await, Some(("alice".into(), Role::Admin)));
    let alice = app.accounts.by_username("alice").await.unwrap();
    assert!(!alice.grant.pending, "the provider's grant is the host's");
    assert_eq!(alice.grant.confirmed_by.as_deref(), Some(actor.as_str()));
    // A page of the console, as that browser.
    let users = app.call_with(&c, "users/list", &[]).await;
    assert_eq!(users.status(), 200, "an admin's server function");

    let created = audit(&app, "user.create").await;
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].0, actor);
    assert_eq!(created[0].2["subject"], "alice");
    let logins = audit(&app, "user.login").await;
    assert_eq!(logins.len(), 1);
    assert_eq!(logins[0].0, "alice");
    assert_eq!(logins[0].2["via"], actor.as_str());
    assert_eq!(logins[0].2["agent"], "oidc-test-browser/1.0");
    assert_eq!(logins[0].2["address"], "127.0.0.1");

    // The same identity again: the same user, no second account.
    let again = browser();
    assert_eq!(sign_in(&app, &again, "alice").await.status(), 200);
    assert_eq!(who(&app, &again).await, Some(("alice".into(), Role::Admin)));
    assert_eq!(audit(&app, "user.create").await.len(), 1);

    let o = browser();
    assert_eq!(sign_in(&app, &o, "oscar").await.status(), 200);
    assert_eq!(who(&app, &o).await, Some(("oscar".into(), Role::Operator)));

    // Sam is a supervisor, then the provider moves sam to the operators:
    // the next sign-in changes the role, audited, and ends sam's other
    // sessions as a role change in the console does.
    let s1 = browser();
    assert_eq!(sign_in(&app, &s1, "sam").await.status(), 200);
    assert_eq!(who(&app, &s1).await, Some(("sam".into(), Role::Supervisor)));
    let mut moved = people();
    moved["sam"]["groups"] = json!(["reckon-operators"]);
    op.set_accounts(moved);
    let s2 = browser();
    assert_eq!(sign_in(&app, &s2, "sam").await.status(), 200);
    assert_eq!(who(&app, &s2).await, Some(("sam".into(), Role::Operator)));
    assert_eq!(who(&app, &s1).await, None, "the older session ended");
    let roles = audit(&app, "user.role").await;
    assert_eq!(roles.len(), 1);
    assert_eq!(roles[0].0, actor);
    assert_eq!(roles[0].2["role"], "operator");
    let ended = audit(&app, "session.end").await;
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0].2["reason"], "role");
}

async fn unmapped_groups_and_disabled_users_get_no_session(backend: Backend) {
    let (app, _op) = with_op(backend, people(), true).await;
    let c = browser();
    let (status, reason) = refusal(sign_in(&app, &c, "mallory").await).await;
    assert_eq!((status, reason.as_str()), (403, "no_role"));
    assert_eq!(who(&app, &c).await, None);
    assert!(
        app.accounts.by_username("mallory").await.is_err(),
        "no account made"
    );
    let failed = audit(&app, "user.login_failed").await;
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].0, "anonymous");
    assert_eq!(failed[0].2["reason"], "no_role");
    assert_eq!(failed[0].2["subject"], "mallory");

    let o = browser();
    assert_eq!(sign_in(&app, &o, "oscar").await.status(), 200);
    let oscar = app.accounts.by_username("oscar").await.unwrap();
    app.accounts
        .set_disabled(&Actor::cli(), &oscar.id, true)
        .await
        .unwrap();
    assert_eq!(who(&app, &o).await, None);
    let o2 = browser();
    let (status, reason) = refusal(sign_in(&app, &o2, "oscar").await).await;
    assert_eq!((status, reason.as_str()), (403, "disabled"));
    assert_eq!(who(&app, &o2).await, None);
    assert_eq!(
        audit(&app, "user.login_failed").await.last().unwrap().2["reason"],
        "disabled"
    );
}

async fn a_callback_is_taken_once_and_only_from_its_browser(backend: Backend) {
    let (app, _op) = with_op(backend, people(), true).await;
    // Begun in one browser, its callback opened in another: refused (the
    // login-CSRF case), and the flow is spent.
    let victim = browser();
    let callback = through_op(&app, &victim, "alice").await;
    let other = browser();
    let (status, reason) = refusal(other.get(&callback).send().await.unwrap()).await;
    assert_eq!((status, reason.as_str()), (400, "other_browser"));
    assert_eq!(who(&app, &other).await, None);
    let (status, reason) = refusal(victim.get(&callback).send().await.unwrap()).await;
    assert_eq!((status, reason.as_str()), (400, "unknown_state"));
    assert_eq!(who(&app, &victim).await, None);

    // A callback used once and replayed: the second finds no state.
    let c = browser();
    let callback = through_op(&app, &c, "alice").await;
    assert_eq!(c.get(&callback).send().await.unwrap().status(), 200);
    let (status, reason) = refusal(c.get(&callback).send().await.unwrap()).await;
    assert_eq!((status, reason.as_str()), (400, "unknown_state"));
    assert_eq!(audit(&app, "user.login").await.len(), 1);

    // The ID token must carry this flow's nonce, and the provider checks
    // the PKCE verifier against the challenge: either changed, no session.
    let pool = &app.accounts.db.pool;
    for tamper in [
        "UPDATE oidc_flows SET nonce = 'not-the-nonce-sent'",
        "UPDATE oidc_flows SET verifier = 'not-the-verifier-sent-not-the-verifier-sent-0123456789'",
    ] {
        let t = browser();
        let callback = through_op(&app, &t, "alice").await;
        sqlx::query(tamper).execute(pool).await.unwrap();
        let (status, reason) = refusal(t.get(&callback).send().await.unwrap()).await;
        assert_eq!((status, reason.as_str()), (502, "bad_token"), "{tamper}");
        assert_eq!(who(&app, &t).await, None);
    }
    assert_eq!(audit(&app, "user.login").await.len(), 1);

    // The provider's own refusal (the user pressed "deny").
    let d = browser();
    let start = d
        .get(format!("{}/auth/oidc/start", app.base))
        .send()
        .await
        .unwrap();
    let auth = reqwest::Url::parse(&location(&start)).unwrap();
    let state = auth
        .query_pairs()
        .find(|(k, _)| k == "state")
        .unwrap()
        .1
        .into_owned();
    let (status, reason) = refusal(
        d.get(format!(
            "{}/auth/oidc/callback?error=access_denied&state={state}",
            app.base
        ))
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!((status, reason.as_str()), (403, "provider_error"));
    let reasons: Vec<Value> = audit(&app, "user.login_failed")
        .await
        .into_iter()
        .map(|(_, _, after)| after["reason"].clone())
        .collect();
    assert_eq!(
        reasons,
        vec![
            json!("other_browser"),
            json!("unknown_state"),
            json!("unknown_state"),
            json!("bad_token"),
            json!("bad_token"),
            json!("provider_error")
        ]
    );
}

async fn passwords_off_leaves_the_provider_and_the_host_bound_admin(backend: Backend) {
    let mut accounts = people();
    accounts["boss-sub"] = json!({ "groups": ["reckon-admins"], "preferred_username": "boss" });
    let (app, op) = with_op(backend, accounts, false).await;
    // The first admin, bound on the host to the provider's subject.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("reckon.toml");
    std::fs::write(
        &config,
        format!(
            "[oidc]\nissuer = \"{}\"\nclient_id = \"{CLIENT_ID}\"\npublic_url = \"{}\"\nadmin = [\"reckon-admins\"]\nlocal_passwords = \"off\"\n",
            op.issuer, app.base
        ),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_reckon"))
        .args([
            "user",
            "add",
            "--username",
            "boss",
            "--role",
            "admin",
            "--oidc-subject",
            "boss-sub",
        ])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("RECKON_CONFIG", &config)
        .env("DATABASE_URL", &app.config.database_url)
        .env("RECKON_DATA_DIR", &app.config.data_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let boss = app.accounts.by_username("boss").await.unwrap();

    // A user with a password cannot use it.
    app.add_user("olivia", Role::Operator, "correct horse battery")
        .await;
    let c = browser();
    let ways = info(&app, &c).await.sign_in;
    assert!(!ways.passwords);
    let res = app
        .call_with(
            &c,
            "login",
            &[
                ("username", "olivia"),
                ("password", "correct horse battery"),
            ],
        )
        .await;
    assert_eq!(res.status(), 403);
    assert_eq!(who(&app, &c).await, None);
    let page = c
        .get(format!("{}/login", app.base))
        .header("accept", "text/html")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!page.contains("id=\"login-form\""), "no password form");
    assert!(page.contains("Sign in with Test IdP"));

    // The host-bound admin signs in through the provider as its subject.
    assert_eq!(sign_in(&app, &c, "boss-sub").await.status(), 200);
    assert_eq!(who(&app, &c).await, Some(("boss".into(), Role::Admin)));
    assert_eq!(app.accounts.by_username("boss").await.unwrap().id, boss.id);
    assert_eq!(
        audit(&app, "user.create").await.len(),
        2,
        "no account made for boss"
    );
}

both_databases!(
    accounts_are_made_with_the_mapped_role_and_follow_the_claims,
    unmapped_groups_and_disabled_users_get_no_session,
    a_callback_is_taken_once_and_only_from_its_browser,
    passwords_off_leaves_the_provider_and_the_host_bound_admin,
);
