//! The console's authorization matrix: every server function, every page
//! and every download or upload route, called as anonymous, with an API
//! token instead of a session, and as each role, against the table kept
//! here by hand; and every `/api/v1` route called with a console session
//! but no token. The server functions come from the server's own registry
//! and its routes from the served OpenAPI document, so one without a line
//! here fails the test. Each on SQLite and PostgreSQL.

use crate::both_databases;
use crate::helpers::{Backend, TestApp, client, spawn_app};
use app::error::AppError;
use app::types::Role;
use std::collections::BTreeSet;

const PW: &str = "correct horse battery";

/// Who may call: anyone (signing in, the session, the language), anyone
/// signed in, or the roles listed. A user holds one role: an admin is not
/// also a supervisor or an operator.
#[derive(Clone, Copy, Debug)]
enum May {
    Anyone,
    Signed,
    Only(&'static [Role]),
    /// Only a sign-in waiting for its second factor, which none of the
    /// callers is (tests/api/mfa.rs has one).
    SecondStep,
}

const WORK: &[Role] = &[Role::Operator, Role::Supervisor];
const SUPERVISOR: &[Role] = &[Role::Supervisor];
const ADMIN: &[Role] = &[Role::Admin];
const OVERSIGHT: &[Role] = &[Role::Supervisor, Role::Admin];
/// No role: only users an admin gave raw access, which none of the
/// callers has (tests/api/view_raw.rs gives it).
const RAW_ACCESS: &[Role] = &[];

/// A made-up id no row has: the handlers past the guard answer 404 or
/// refuse the input, so the matrix moves nothing.
const NONE: &str = "no-such-id";

/// Where `OTHER` stands in a form: the id of a user who is none of the
/// callers.
const OTHER: &str = "{other}";
/// Where `FRESH` stands: a name no one has used yet (a created user or
/// token).
const FRESH: &str = "{fresh}";

/// A form: the pairs a server function's arguments parse from.
type Form = &'static [(&'static str, &'static str)];

/// Every server function: its endpoint, a form its arguments parse from,
/// and who may call it.
const SERVER_FUNCTIONS: &[(&str, Form, May)] = &[
    ("session", &[], May::Anyone),
    (
        "login",
        &[("username", "nobody"), ("password", "x")],
        May::Anyone,
    ),
    ("language", &[("lang", "en")], May::Anyone),
    ("dashboard", &[], May::Signed),
    ("bank/view", &[], May::Signed),
    (
        "bulk/action",
        &[("action", "assign"), ("text", "x"), ("scope", "ids")],
        May::Only(WORK),
    ),
    (
        "bulk/propose",
        &[
            ("kind", "BACKFILL"),
            ("reason", "x"),
            ("evidence", "x"),
            ("scope", "ids"),
        ],
        May::Only(WORK),
    ),
    (
        "bulk/approve",
        &[("bulk", NONE), ("comment", "x")],
        May::Only(SUPERVISOR),
    ),
    (
        "bulk/reject",
        &[("bulk", NONE), ("comment", "x")],
        May::Only(SUPERVISOR),
    ),
    ("bulk/proposals", &[], May::Signed),
    ("bulk/show", &[("id", NONE)], May::Signed),
    ("bulk/job", &[("id", NONE)], May::Signed),
    ("bulk/jobs", &[], May::Signed),
    ("bulk/cancel", &[("id", NONE)], May::Only(WORK)),
    ("bulk/undo", &[("id", NONE)], May::Only(WORK)),
    ("closes/list", &[("day", "2026-01-01")], May::Signed),
    (
        "closes/act",
        &[
            ("what", "close"),
            ("provider", "nope"),
            ("day", "2026-01-01"),
        ],
        May::Only(SUPERVISOR),
    ),
    ("callbacks/list", &[], May::Signed),
    ("callbacks/show", &[("id", NONE)], May::Signed),
    ("callbacks/raw", &[("id", NONE)], May::Only(RAW_ACCESS)),
    ("callbacks/replay", &[("id", NONE)], May::Only(WORK)),
    (
        "callbacks/bulk-replay",
        &[
            ("provider", "nope"),
            ("from", "2026-01-01"),
            ("to", "2026-01-02"),
        ],
        May::Only(WORK),
    ),
    ("callbacks/replay-jobs", &[], May::Signed),
    ("payments/list", &[], May::Signed),
    ("payments/show", &[("payment_no", NONE)], May::Signed),
    ("runs/list", &[], May::Signed),
    ("runs/resume", &[("id", NONE)], May::Only(WORK)),
    ("alerts/list", &[], May::Signed),
    (
        "alerts/acknowledge",
        &[("id", NONE), ("comment", "x")],
        May::Only(WORK),
    ),
    (
        "alerts/acknowledge-many",
        &[("comment", "x")],
        May::Only(WORK),
    ),
    ("approvals/queue", &[], May::Only(SUPERVISOR)),
    ("users/list", &[], May::Only(ADMIN)),
    (
        "users/create",
        &[("username", FRESH), ("role", "operator"), ("password", PW)],
        May::Only(ADMIN),
    ),
    (
        "users/role",
        &[("user_id", NONE), ("role", "operator")],
        May::Only(ADMIN),
    ),
    (
        "users/confirm",
        &[("user_id", NONE), ("role", "supervisor")],
        May::Only(ADMIN),
    ),
    (
        "users/revoke",
        &[("user_id", NONE), ("role", "supervisor")],
        May::Only(ADMIN),
    ),
    (
        "users/password",
        &[("user_id", NONE), ("password", PW)],
        May::Only(ADMIN),
    ),
    (
        "users/view-raw",
        &[("user_id", OTHER), ("allow", "true")],
        May::Only(ADMIN),
    ),
    (
        "users/disabled",
        &[("user_id", NONE), ("disabled", "true")],
        May::Only(ADMIN),
    ),
    ("outbox/list", &[], May::Signed),
    ("outbox/show", &[("id", NONE)], May::Signed),
    ("outbox/resend", &[("id", NONE)], May::Only(WORK)),
    ("outbox/bulk-resend", &[], May::Only(WORK)),
    (
        "outbox/recover",
        &[("sink", "nope"), ("since", "2026-01-01")],
        May::Only(WORK),
    ),
    ("outbox/jobs", &[], May::Signed),
    ("outbox/jobs/cancel", &[("id", NONE)], May::Only(WORK)),
    ("refused/list", &[], May::Signed),
    ("refused/show", &[("id", NONE)], May::Signed),
    ("refused/raw", &[("id", NONE)], May::Only(RAW_ACCESS)),
    // Another user's sessions: admins only; one's own: anyone signed in
    // (the sessions tests).
    ("sessions/list", &[("user_id", OTHER)], May::Only(ADMIN)),
    ("sessions/end", &[("session_id", NONE)], May::Signed),
    ("sessions/end-all", &[("user_id", OTHER)], May::Only(ADMIN)),
    // The two new passwords differ: refused past the guard, nothing changed.
    (
        "account/password",
        &[
            ("current", PW),
            ("password", "a new one!!!!"),
            ("repeat", "x"),
        ],
        May::Signed,
    ),
    ("sinks/list", &[], May::Signed),
    (
        "sinks/pause",
        &[("name", "nope"), ("reason", "x"), ("pause", "true")],
        May::Only(WORK),
    ),
    (
        "sinks/retry",
        &[("name", "nope"), ("reason", "x")],
        May::Only(WORK),
    ),
    ("tickets/list", &[], May::Signed),
    ("tickets/show", &[("id", NONE)], May::Signed),
    (
        "tickets/neighbours",
        &[("id", NONE), ("filter[status]", "OPEN")],
        May::Signed,
    ),
    (
        "tickets/assign",
        &[("id", NONE), ("owner", "x")],
        May::Only(WORK),
    ),
    (
        "tickets/comment",
        &[("id", NONE), ("text", "x")],
        May::Only(WORK),
    ),
    (
        "tickets/evidence",
        &[("id", NONE), ("kind", "note"), ("text", "x")],
        May::Only(WORK),
    ),
    (
        "tickets/conclude",
        &[("id", NONE), ("conclusion", "x")],
        May::Only(WORK),
    ),
    ("tickets/requery", &[("id", NONE)], May::Only(WORK)),
    (
        "tickets/replay",
        &[("id", NONE), ("callback", NONE)],
        May::Only(WORK),
    ),
    (
        "fixes/propose",
        &[
            ("id", NONE),
            ("kind", "BACKFILL"),
            ("reason", "x"),
            ("evidence", "x"),
        ],
        May::Only(WORK),
    ),
    ("fixes/list", &[("status", "PENDING")], May::Signed),
    (
        "fixes/comment",
        &[("proposal", NONE), ("text", "x")],
        May::Only(WORK),
    ),
    (
        "fixes/approve",
        &[("proposal", NONE), ("comment", "x")],
        May::Only(SUPERVISOR),
    ),
    (
        "fixes/reject",
        &[("proposal", NONE), ("comment", "x")],
        May::Only(SUPERVISOR),
    ),
    ("audit/list", &[], May::Only(OVERSIGHT)),
    ("tokens/list", &[], May::Only(ADMIN)),
    ("tokens/create", &[("name", FRESH)], May::Only(ADMIN)),
    ("tokens/revoke", &[("id", NONE)], May::Only(ADMIN)),
    // The second factor: the sign-in's second step, and one's own.
    ("mfa/step", &[], May::Anyone),
    ("mfa/verify", &[("code", "000000")], May::SecondStep),
    ("mfa/status", &[], May::Signed),
    ("mfa/mine", &[], May::Signed),
    ("mfa/begin", &[], May::Signed),
    ("mfa/confirm", &[("code", "000000")], May::Signed),
    ("mfa/recovery", &[("code", "000000")], May::Signed),
    ("users/mfa-reset", &[("user_id", OTHER)], May::Only(ADMIN)),
    // The approval policy: read by those who decide or oversee, changed
    // by admins (below the floor: refused past the guard).
    ("policy/show", &[], May::Only(OVERSIGHT)),
    (
        "policy/propose",
        &[("text", "BACKFILL 0"), ("reason", "x")],
        May::Only(ADMIN),
    ),
    (
        "policy/decide",
        &[("id", NONE), ("what", "approve")],
        May::Only(ADMIN),
    ),
    // Actions held for approval: seen and decided by those who decide
    // (whether this one may is the database's to say: none here).
    ("held/list", &[], May::Only(OVERSIGHT)),
    (
        "held/decide",
        &[("id", NONE), ("what", "approve")],
        May::Only(OVERSIGHT),
    ),
    // The settings' versions (nothing changed: refused past the guard).
    ("settings/view", &[], May::Only(OVERSIGHT)),
    (
        "settings/propose",
        &[
            ("sla_hours", ""),
            ("cut_window_minutes", ""),
            ("bank_window_days", ""),
            ("statement_missing_hours", ""),
            ("close_allow_open", ""),
            ("reason", "x"),
        ],
        May::Only(OVERSIGHT),
    ),
    (
        "settings/decide",
        &[("id", NONE), ("what", "approve")],
        May::Only(OVERSIGHT),
    ),
    // Last: it ends the caller's session.
    ("logout", &[], May::Signed),
];

/// Every page (with made-up ids where it shows one row).
const PAGES: &[(&str, May)] = &[
    ("/", May::Signed),
    ("/callbacks", May::Signed),
    ("/callbacks/no-such-id", May::Signed),
    ("/payments", May::Signed),
    ("/payments/no-such-id", May::Signed),
    ("/runs", May::Signed),
    ("/alerts", May::Signed),
    ("/users", May::Only(ADMIN)),
    ("/tickets", May::Signed),
    ("/tickets/no-such-id", May::Signed),
    // Proposals are for everyone to read; the queue on it that waits for
    // the viewer's decision is a supervisor's (approvals/queue).
    ("/approvals", May::Signed),
    ("/approvals/bulk/no-such-id", May::Signed),
    ("/audit", May::Only(OVERSIGHT)),
    ("/bank", May::Signed),
    ("/outbox", May::Signed),
    ("/outbox/no-such-id", May::Signed),
    ("/sinks", May::Signed),
    ("/refused", May::Signed),
    ("/refused/no-such-id", May::Signed),
    ("/tokens", May::Only(ADMIN)),
    ("/sessions", May::Signed),
    ("/security", May::Signed),
    ("/policy", May::Only(OVERSIGHT)),
    ("/settings", May::Only(OVERSIGHT)),
];

/// The console's plain routes: downloads (GET) and uploads (POST,
/// multipart).
const DOWNLOADS: &[(&str, May)] = &[
    ("/tickets.csv", May::Signed),
    ("/evidence/no-such-id", May::Signed),
    ("/runs/no-such-id/file", May::Signed),
    ("/closes/sandbox/2026-01-01", May::Signed),
];
const UPLOADS: &[(&str, May)] = &[
    ("/tickets/no-such-id/evidence", May::Only(WORK)),
    ("/runs/upload", May::Only(WORK)),
    ("/bank/upload", May::Only(WORK)),
];

/// How a plain route is asked for.
#[derive(Clone, Copy, Debug)]
enum Plain {
    Page,
    Download,
    Upload,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Caller {
    Anonymous,
    /// An API token with every scope, and no session.
    Token,
    As(Role),
}

const CALLERS: [Caller; 5] = [
    Caller::Anonymous,
    Caller::Token,
    Caller::As(Role::Operator),
    Caller::As(Role::Supervisor),
    Caller::As(Role::Admin),
];

/// What a call must get: sent to sign in (401, or a page's redirect to
/// /login), refused for the role (403 `Forbidden`), or past the guard to
/// its handler (whatever the handler then says of the made-up input).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    SignIn,
    Forbidden,
    Handled,
}

fn expected(caller: Caller, may: May) -> Outcome {
    match (may, caller) {
        (May::Anyone, _) => Outcome::Handled,
        (May::SecondStep, _) => Outcome::SignIn,
        (_, Caller::Anonymous | Caller::Token) => Outcome::SignIn,
        (May::Signed, Caller::As(_)) => Outcome::Handled,
        (May::Only(roles), Caller::As(role)) if roles.contains(&role) => Outcome::Handled,
        (May::Only(_), Caller::As(_)) => Outcome::Forbidden,
    }
}

struct Callers {
    clients: Vec<(Caller, reqwest::Client)>,
    token: String,
    /// A user who calls nothing, for forms that name another user.
    bystander: String,
}

impl Callers {
    async fn new(app: &TestApp) -> Callers {
        let mut clients = vec![(Caller::Anonymous, client()), (Caller::Token, client())];
        for (name, role) in [
            ("olga", Role::Operator),
            ("sven", Role::Supervisor),
            ("ada", Role::Admin),
        ] {
            app.add_user(name, role, PW).await;
            let c = client();
            let res = app
                .call_with(&c, "login", &[("username", name), ("password", PW)])
                .await;
            assert_eq!(res.status(), 200, "{name} signs in");
            clients.push((Caller::As(role), c));
        }
        Callers {
            clients,
            token: app.api_token("matrix").await,
            bystander: app.add_user("bea", Role::Operator, PW).await.id,
        }
    }

    fn request(
        &self,
        app: &TestApp,
        caller: Caller,
        c: &reqwest::Client,
        method: reqwest::Method,
        path: &str,
    ) -> reqwest::RequestBuilder {
        let r = c
            .request(method, format!("{}{path}", app.base))
            .headers(app.origin());
        if caller == Caller::Token {
            r.bearer_auth(&self.token)
        } else {
            r
        }
    }
}

/// What a server function's answer was.
async fn outcome_of_call(res: reqwest::Response) -> (Outcome, String) {
    let status = res.status().as_u16();
    let body = res.text().await.unwrap_or_default();
    let err = serde_json::from_str::<AppError>(&body).ok();
    let outcome = match (status, &err) {
        (401, Some(AppError::Unauthenticated)) => Outcome::SignIn,
        (403, Some(AppError::Forbidden)) => Outcome::Forbidden,
        _ => Outcome::Handled,
    };
    (outcome, format!("{status} {}", clip(&body)))
}

fn clip(s: &str) -> &str {
    &s[..s.len().min(160)]
}

/// What a page's answer was: the login page, the forbidden note, or the
/// page (a row's page for a made-up id says it is not found).
async fn outcome_of_page(res: reqwest::Response) -> (Outcome, String) {
    let status = res.status().as_u16();
    let location = res
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let body = res.text().await.unwrap_or_default();
    let outcome = match status {
        302 | 303 if location == "/login" => Outcome::SignIn,
        403 if body.contains("id=\"forbidden\"") => Outcome::Forbidden,
        _ => Outcome::Handled,
    };
    (outcome, format!("{status} {location}"))
}

/// The refusal a plain form's redirect carries in its address.
fn refusal_in(location: &str) -> Option<AppError> {
    let query = location.split_once('?')?.1;
    form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == app::ERROR_PARAM)
        .and_then(|(_, v)| serde_json::from_str(&v).ok())
}

/// What a plain route's answer was: 401, a 403, or a redirect back with
/// the refusal in its address (the uploads, which work as plain forms).
async fn outcome_of_route(res: reqwest::Response) -> (Outcome, String) {
    let status = res.status().as_u16();
    let location = res
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let outcome = match status {
        401 => Outcome::SignIn,
        403 => Outcome::Forbidden,
        302 | 303 if refusal_in(&location) == Some(AppError::Forbidden) => Outcome::Forbidden,
        _ => Outcome::Handled,
    };
    (outcome, format!("{status} {location}"))
}

async fn the_console_answers_each_caller_as_the_matrix_says(b: Backend) {
    let app = spawn_app(b).await;
    let callers = Callers::new(&app).await;

    // The table names every server function the server has, and only those.
    let registered: BTreeSet<String> = leptos::server_fn::axum::server_fn_paths()
        .map(|(path, _)| path.trim_start_matches("/api/").to_owned())
        .collect();
    let listed: BTreeSet<String> = SERVER_FUNCTIONS
        .iter()
        .map(|(e, _, _)| (*e).to_owned())
        .collect();
    assert_eq!(
        registered, listed,
        "each server function needs a line in SERVER_FUNCTIONS"
    );

    let mut wrong = Vec::new();
    let mut calls = 0;
    for (n, (endpoint, form, may)) in SERVER_FUNCTIONS.iter().enumerate() {
        for (caller, c) in &callers.clients {
            let fresh = format!("m{n}{}", callers.clients.len() + calls);
            let form: Vec<(&str, &str)> = form
                .iter()
                .map(|(k, v)| match *v {
                    OTHER => (*k, callers.bystander.as_str()),
                    FRESH => (*k, fresh.as_str()),
                    v => (*k, v),
                })
                .collect();
            let res = callers
                .request(
                    &app,
                    *caller,
                    c,
                    reqwest::Method::POST,
                    &format!("/api/{endpoint}"),
                )
                .form(&form)
                .send()
                .await
                .unwrap();
            calls += 1;
            let (got, seen) = outcome_of_call(res).await;
            let want = expected(*caller, *may);
            if got != want {
                wrong.push(format!(
                    "{endpoint} as {caller:?}: want {want:?}, got {got:?} ({seen})"
                ));
            }
        }
    }
    // Signed out by the last function: sign in again for the pages.
    let mut again = Vec::new();
    for (caller, c) in &callers.clients {
        if let Caller::As(role) = caller {
            let name = match role {
                Role::Operator => "olga",
                Role::Supervisor => "sven",
                Role::Admin => "ada",
            };
            let res = app
                .call_with(c, "login", &[("username", name), ("password", PW)])
                .await;
            assert_eq!(res.status(), 200);
        }
        again.push((*caller, c));
    }
    // Pages as a browser asks for them, downloads, and uploads as the
    // console's plain forms post them.
    let routes = PAGES
        .iter()
        .map(|(p, m)| (Plain::Page, *p, *m))
        .chain(DOWNLOADS.iter().map(|(p, m)| (Plain::Download, *p, *m)))
        .chain(UPLOADS.iter().map(|(p, m)| (Plain::Upload, *p, *m)));
    for (kind, path, may) in routes {
        for (caller, c) in &again {
            let req = match kind {
                Plain::Page => callers
                    .request(&app, *caller, c, reqwest::Method::GET, path)
                    .header("accept", "text/html"),
                Plain::Download => callers.request(&app, *caller, c, reqwest::Method::GET, path),
                Plain::Upload => callers
                    .request(&app, *caller, c, reqwest::Method::POST, path)
                    .multipart(reqwest::multipart::Form::new().part(
                        "file",
                        reqwest::multipart::Part::bytes(b"x".to_vec()).file_name("x.csv"),
                    )),
            };
            let res = req.send().await.unwrap();
            calls += 1;
            let (got, seen) = match kind {
                Plain::Page => outcome_of_page(res).await,
                Plain::Download | Plain::Upload => outcome_of_route(res).await,
            };
            let want = expected(*caller, may);
            if got != want {
                wrong.push(format!(
                    "{kind:?} {path} as {caller:?}: want {want:?}, got {got:?} ({seen})"
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {calls} calls not as the matrix says:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    // The matrix's size, as the notes give it.
    assert_eq!(
        calls,
        CALLERS.len() * (SERVER_FUNCTIONS.len() + PAGES.len() + DOWNLOADS.len() + UPLOADS.len())
    );
}

/// A console session is not an API credential: every `/api/v1` route but
/// the public OpenAPI document answers 401 to a signed-in browser with no
/// token, whatever its role.
async fn the_api_refuses_a_console_session_without_a_token(b: Backend) {
    let app = spawn_app(b).await;
    let callers = Callers::new(&app).await;
    let doc: serde_json::Value = app
        .client
        .get(format!("{}/api/v1/openapi.json", app.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut routes = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        // The document itself is public.
        if path == "/api/v1/openapi.json" {
            continue;
        }
        for method in item.as_object().unwrap().keys() {
            routes.push((method.to_uppercase(), path.replace(['{', '}'], "")));
        }
    }
    assert!(routes.len() >= 30, "{} routes", routes.len());
    let mut wrong = Vec::new();
    for (caller, c) in &callers.clients {
        if !matches!(caller, Caller::As(_)) {
            continue;
        }
        for (method, path) in &routes {
            let res = c
                .request(method.parse().unwrap(), format!("{}{path}", app.base))
                .headers(app.origin())
                .send()
                .await
                .unwrap();
            if res.status() != 401 {
                wrong.push(format!("{method} {path} as {caller:?}: {}", res.status()));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

both_databases!(
    the_console_answers_each_caller_as_the_matrix_says,
    the_api_refuses_a_console_session_without_a_token,
);
