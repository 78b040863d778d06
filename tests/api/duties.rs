//! Segregation of duties over real HTTP with real sessions, on SQLite and
//! PostgreSQL: a role that decides, granted by an admin in the console,
//! decides nothing until a second admin confirms it (nor after an admin
//! set that user's password); no one decides what
//! was proposed by an account they created or whose role they granted or
//! confirmed — fixes, bulk proposals and a day's reopening alike; and the
//! command line proposes a hold's release instead of releasing it.
//!
//! Users made with `add_user` are made as the command line makes them (the
//! server's host: confirmed at once, vouching for no one); the others are
//! made by admins in the console, as the test says.

use crate::both_databases;
use crate::bulk::{finished, lagging, propose_all};
use crate::helpers::Backend;
use crate::recon::row;
use crate::triage::{Desk, desk};
use app::types::{Role, User};
use serde_json::{Value, json};

const PW: &str = "correct horse battery";

/// A console session of `name`.
async fn session(d: &Desk, name: &str) -> reqwest::Client {
    let client = crate::helpers::client();
    let res = d
        .app
        .app
        .call_with(&client, "login", &[("username", name), ("password", PW)])
        .await;
    assert_eq!(res.status(), 200, "{name} signs in");
    client
}

/// An admin made on the server's host (as the first admin is), signed in.
async fn host_admin(d: &Desk, name: &str) -> reqwest::Client {
    d.app.app.add_user(name, Role::Admin, PW).await;
    session(d, name).await
}

/// `admin` creates `name` with `role` in the console.
async fn created(d: &Desk, admin: &reqwest::Client, name: &str, role: &str) -> User {
    let (status, user) = d
        .call(
            admin,
            "users/create",
            &[("username", name), ("role", role), ("password", PW)],
        )
        .await;
    assert_eq!(status, 200, "{user}");
    serde_json::from_value(user).unwrap()
}

/// The user `name` as the users page lists it.
async fn listed(d: &Desk, admin: &reqwest::Client, name: &str) -> User {
    let (status, users) = d.call(admin, "users/list", &[]).await;
    assert_eq!(status, 200, "{users}");
    let users: Vec<User> = serde_json::from_value(users).unwrap();
    users.into_iter().find(|u| u.username == name).unwrap()
}

async fn id_of(d: &Desk, name: &str) -> String {
    d.app.app.accounts.by_username(name).await.unwrap().id
}

/// `admin` changes `name`'s role in the console.
async fn grant(d: &Desk, admin: &reqwest::Client, name: &str, role: &str) {
    let id = id_of(d, name).await;
    let (status, body) = d
        .call(admin, "users/role", &[("user_id", &id), ("role", role)])
        .await;
    assert_eq!(status, 200, "{name} made {role}: {body}");
}

/// `admin` confirms `name`'s grant of `role`: the answer.
async fn confirm(d: &Desk, admin: &reqwest::Client, name: &str, role: &str) -> (u16, Value) {
    let id = id_of(d, name).await;
    d.call(admin, "users/confirm", &[("user_id", &id), ("role", role)])
        .await
}

/// `who` approves (or rejects) `proposal`: the answer.
async fn decide(d: &Desk, who: &reqwest::Client, endpoint: &str, proposal: &str) -> (u16, Value) {
    d.call(
        who,
        endpoint,
        &[("proposal", proposal), ("comment", "checked")],
    )
    .await
}

fn not_independent(proposer: &str, link: &str) -> Value {
    json!({ "NotIndependent": { "proposer": proposer, "link": link } })
}

/// The users page as `who` sees it, without JavaScript.
async fn users_page(d: &Desk, who: &reqwest::Client) -> String {
    who.get(format!("{}/users", d.app.app.base))
        .header("accept", "text/html")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// One admin makes an operator and a supervisor and plays both: the
/// supervisor's grant is pending, so the BACKFILL is refused and nothing
/// moves; neither that admin nor a grantee confirms a grant; a second
/// admin does, and then the supervisor's approval executes.
async fn one_admin_alone_cannot_satisfy_the_two_person_rule(b: Backend) {
    let d = desk(b).await;
    let root = host_admin(&d, "root").await;
    let oleg = created(&d, &root, "oleg", "operator").await;
    let sid = created(&d, &root, "sid", "supervisor").await;
    assert!(
        !oleg.grant.pending,
        "an operator decides nothing: no grant to confirm"
    );
    assert!(sid.grant.pending, "{sid:?}");
    assert_eq!(sid.grant.granted_by.as_deref(), Some("root"));
    assert_eq!(sid.grant.created_by.as_deref(), Some("root"));
    let root_user = listed(&d, &root, "root").await;
    assert!(!root_user.grant.pending, "the host's grant is confirmed");
    assert_eq!(root_user.grant.confirmed_by.as_deref(), Some("cli"));
    let oleg_c = session(&d, "oleg").await;
    let sid_c = session(&d, "sid").await;

    let ticket = d.provider_only("PAYSOD1", "SBX-SOD-1").await;
    let proposal = d.propose_backfill(&oleg_c, &ticket, "ORDER-SOD-1").await;
    let start = d.audit_head().await;
    for endpoint in ["fixes/approve", "fixes/reject"] {
        let (status, err) = decide(&d, &sid_c, endpoint, &proposal).await;
        assert_eq!(status, 403, "{endpoint}: {err}");
        assert_eq!(err, json!("GrantPending"), "{endpoint}");
    }
    assert_eq!(d.app.count("payments", "PAYSOD1").await, 0, "no payment");
    assert_eq!(
        d.app.count("outbox_events", "PAYSOD1").await,
        0,
        "no outbox message"
    );
    assert!(d.audit_actions(start).await.is_empty(), "nothing decided");
    let (_, queue) = d.call(&sid_c, "fixes/list", &[("status", "PENDING")]).await;
    assert_eq!(queue[0]["id"], proposal.as_str(), "still waiting");

    // Not by its granter; not by its grantee; not by an admin whose own
    // grant is pending, who grants no deciding role either.
    assert_eq!(
        confirm(&d, &root, "sid", "supervisor").await,
        (403, json!("OwnGrant"))
    );
    created(&d, &root, "ava", "admin").await;
    let ava = session(&d, "ava").await;
    assert_eq!(
        confirm(&d, &ava, "ava", "admin").await,
        (403, json!("OwnGrant"))
    );
    assert_eq!(
        confirm(&d, &ava, "sid", "supervisor").await,
        (403, json!("GrantPending"))
    );
    let (status, err) = d
        .call(
            &ava,
            "users/create",
            &[
                ("username", "sly"),
                ("role", "supervisor"),
                ("password", PW),
            ],
        )
        .await;
    assert_eq!((status, err), (403, json!("GrantPending")));
    assert!(d.app.app.accounts.by_username("sly").await.is_err());
    // A supervisor cannot confirm anything, least of all their own grant.
    assert_eq!(
        confirm(&d, &sid_c, "sid", "supervisor").await,
        (403, json!("Forbidden"))
    );

    // The page offers "confirm" to a second admin only; the granter may
    // revoke.
    let ada = host_admin(&d, "ada").await;
    assert!(users_page(&d, &ada).await.contains("confirm-grant"));
    let roots = users_page(&d, &root).await;
    assert!(roots.contains("waiting for a second admin"), "{roots}");
    assert!(!roots.contains("confirm-grant") && roots.contains("revoke-grant"));

    // A second admin confirms the grant they saw (not another role).
    assert_eq!(
        confirm(&d, &ada, "sid", "admin").await,
        (409, json!("NoGrantPending"))
    );
    assert_eq!(confirm(&d, &ada, "sid", "supervisor").await.0, 200);
    let sid = listed(&d, &ada, "sid").await;
    assert!(!sid.grant.pending);
    assert_eq!(sid.grant.confirmed_by.as_deref(), Some("ada"));
    assert_eq!(
        confirm(&d, &ada, "sid", "supervisor").await,
        (409, json!("NoGrantPending")),
        "confirmed once"
    );

    let (status, done) = decide(&d, &sid_c, "fixes/approve", &proposal).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["class"], "executed");
    assert_eq!(d.app.status("PAYSOD1").await, "SUCCEEDED");
    assert_eq!(d.effects("PAYSOD1").await, 1);
    assert_eq!(d.app.count("outbox_events", "PAYSOD1").await, 1);

    // root sets sid's password, and so could sign in as sid: sid's role is
    // root's pending grant again, until a second admin — or the host —
    // confirms it.
    let (status, body) = d
        .call(
            &root,
            "users/password",
            &[
                ("user_id", &id_of(&d, "sid").await),
                ("password", "a new long secret"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let sid = listed(&d, &ada, "sid").await;
    assert!(sid.grant.pending, "{sid:?}");
    assert_eq!(sid.grant.granted_by.as_deref(), Some("root"));
    assert_eq!(
        confirm(&d, &root, "sid", "supervisor").await,
        (403, json!("OwnGrant"))
    );
    let out = d.app.app.cli(
        &["user", "role", "--username", "sid", "--role", "supervisor"],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("confirmed from the command line"));
    let sid = listed(&d, &ada, "sid").await;
    assert_eq!(
        (sid.grant.pending, sid.grant.confirmed_by.as_deref()),
        (false, Some("cli"))
    );

    // A pending grant revoked: the user is an operator again.
    let (status, body) = d
        .call(
            &ada,
            "users/revoke",
            &[("user_id", &id_of(&d, "ava").await), ("role", "admin")],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let ava_user = listed(&d, &ada, "ava").await;
    assert_eq!(
        (ava_user.role, ava_user.grant.pending),
        (Role::Operator, false)
    );

    let actions: Vec<(String, String)> = sqlx::query_as(
        "SELECT actor, action FROM audit_log WHERE action LIKE 'user.grant.%' ORDER BY seq",
    )
    .fetch_all(d.app.pool())
    .await
    .unwrap();
    assert_eq!(
        actions,
        [
            ("ada".to_owned(), "user.grant.confirm".to_owned()),
            ("ada".to_owned(), "user.grant.revoke".to_owned()),
        ]
    );
    let made: String = sqlx::query_scalar(
        "SELECT after_json FROM audit_log WHERE action = 'user.create' AND object_id = $1",
    )
    .bind(&id_of(&d, "sid").await)
    .fetch_one(d.app.pool())
    .await
    .unwrap();
    assert!(made.contains(r#""pending":true"#), "{made}");
}

/// root makes oleg, grants olga her supervisor role, and becomes a
/// confirmed supervisor himself; ada confirms olga's grant and becomes one
/// too. Neither decides oleg's or olga's proposals — single or bulk — and
/// supervisors who vouched for neither do.
async fn whoever_vouched_for_a_proposer_never_decides_their_proposals(b: Backend) {
    let d = desk(b).await;
    let root = host_admin(&d, "root").await;
    let ada = host_admin(&d, "ada").await;
    let abe = host_admin(&d, "abe").await;
    let cal = host_admin(&d, "cal").await;
    created(&d, &root, "oleg", "operator").await;
    let oleg = session(&d, "oleg").await;
    grant(&d, &root, "olga", "supervisor").await;
    assert_eq!(confirm(&d, &ada, "olga", "supervisor").await.0, 200);
    grant(&d, &ada, "root", "supervisor").await;
    assert_eq!(confirm(&d, &abe, "root", "supervisor").await.0, 200);
    grant(&d, &abe, "ada", "supervisor").await;
    assert_eq!(confirm(&d, &cal, "ada", "supervisor").await.0, 200);
    // A role change ends the user's sessions: they sign in again.
    let (root, ada, olga) = (
        session(&d, "root").await,
        session(&d, "ada").await,
        session(&d, "olga").await,
    );

    let (_, at) = d.app.today();
    let rows = [
        row(
            "payment",
            "SBX-VOUCH-1",
            "PAYVOUCH1",
            ("", ""),
            "66.60",
            "CNY",
            &at,
        ),
        row(
            "payment",
            "SBX-VOUCH-2",
            "PAYVOUCH2",
            ("", ""),
            "66.60",
            "CNY",
            &at,
        ),
    ];
    assert_eq!(d.reconcile(&rows, "PROVIDER_ONLY").await.len(), 2);
    let t1 = d.ticket_of("PAYVOUCH1", "PROVIDER_ONLY").await;
    let t2 = d.ticket_of("PAYVOUCH2", "PROVIDER_ONLY").await;
    let by_oleg = d.propose_backfill(&oleg, &t1, "ORDER-VOUCH-1").await;
    let by_olga = d.propose_backfill(&olga, &t2, "ORDER-VOUCH-2").await;

    for endpoint in ["fixes/approve", "fixes/reject"] {
        assert_eq!(
            decide(&d, &root, endpoint, &by_oleg).await,
            (403, not_independent("oleg", "created")),
            "{endpoint}"
        );
        assert_eq!(
            decide(&d, &root, endpoint, &by_olga).await,
            (403, not_independent("olga", "granted")),
            "{endpoint}"
        );
        assert_eq!(
            decide(&d, &ada, endpoint, &by_olga).await,
            (403, not_independent("olga", "confirmed")),
            "{endpoint}"
        );
    }
    assert_eq!(d.app.count("payments", "PAYVOUCH1").await, 0);
    assert_eq!(d.app.count("payments", "PAYVOUCH2").await, 0);
    // Their queue badge does not count what is not theirs to decide.
    let waiting: i64 = reckon::store::proposals::waiting_for(
        d.app.pool(),
        &id_of(&d, "root").await,
        d.app.app_engine().now(),
    )
    .await
    .unwrap()
    .0;
    assert_eq!(waiting, 0);

    // ada did not vouch for oleg; sam for neither.
    let (status, done) = decide(&d, &ada, "fixes/approve", &by_oleg).await;
    assert_eq!(status, 200, "{done}");
    let (status, done) = decide(&d, &d.sam, "fixes/approve", &by_olga).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(d.app.status("PAYVOUCH1").await, "SUCCEEDED");
    assert_eq!(d.app.status("PAYVOUCH2").await, "SUCCEEDED");

    // A bulk proposal of oleg's: not root's to decide, whole or by item.
    let payments = lagging(&d, "VOUCHB", 3).await;
    let bulk = propose_all(&d, &oleg, 3).await;
    for endpoint in ["bulk/approve", "bulk/reject"] {
        let (status, err) = d
            .call(&root, endpoint, &[("bulk", &bulk), ("comment", "ok")])
            .await;
        assert_eq!(
            (status, err),
            (403, not_independent("oleg", "created")),
            "{endpoint}"
        );
    }
    let (_, detail) = d.call(&d.sue, "bulk/show", &[("id", &bulk)]).await;
    let item = detail["items"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        decide(&d, &root, "fixes/approve", &item).await,
        (403, not_independent("oleg", "created"))
    );
    for p in &payments {
        assert_eq!(d.app.status(p).await, "CREATED", "nothing moved");
    }
    let (status, started) = d
        .call(
            &d.sue,
            "bulk/approve",
            &[("bulk", &bulk), ("comment", "ok")],
        )
        .await;
    assert_eq!(status, 200, "{started}");
    let job = finished(&d, started["job_id"].as_str().unwrap()).await;
    assert_eq!(
        (job["status"].clone(), job["done"].clone()),
        (json!("DONE"), json!(3))
    );
    for p in &payments {
        assert_eq!(d.app.status(p).await, "SUCCEEDED");
    }
}

/// `closes/act` as `who`: the answer.
async fn act(d: &Desk, who: &reqwest::Client, what: &str, day: &str) -> (u16, Value) {
    d.call(
        who,
        "closes/act",
        &[
            ("what", what),
            ("provider", "sandbox"),
            ("day", day),
            ("reason", "the provider sent a corrected bill"),
        ],
    )
    .await
}

async fn day_state(d: &Desk, day: &str) -> String {
    let (status, list) = d.call(&d.sam, "closes/list", &[("day", day)]).await;
    assert_eq!(status, 200, "{list}");
    list[0]["state"].as_str().unwrap().to_owned()
}

/// Reopening a closed day: a pending supervisor approves nothing, and
/// whoever created the proposer's account does not approve it even once
/// confirmed; a supervisor who vouched for no one does.
async fn reopening_a_day_follows_the_same_rule(b: Backend) {
    let d = desk(b).await;
    let (date, at) = d.app.today();
    let p = d
        .app
        .paid_with("SOD-DAY", 1000, "10.00", "SBX-SOD-DAY")
        .await;
    let rows = [row(
        "payment",
        "SBX-SOD-DAY",
        &p,
        ("", ""),
        "10.00",
        "CNY",
        &at,
    )];
    d.reconcile(&rows, "PROVIDER_ONLY").await;
    assert_eq!(day_state(&d, &date).await, "CLOSED", "closed by itself");

    let root = host_admin(&d, "root").await;
    let ada = host_admin(&d, "ada").await;
    let abe = host_admin(&d, "abe").await;
    created(&d, &root, "sid", "supervisor").await;
    assert_eq!(confirm(&d, &ada, "sid", "supervisor").await.0, 200);
    let sid = session(&d, "sid").await;
    let (status, body) = act(&d, &sid, "propose_reopen", &date).await;
    assert_eq!(status, 200, "{body}");

    grant(&d, &ada, "root", "supervisor").await;
    // The role change ended root's sessions.
    let root = session(&d, "root").await;
    let (status, body) = act(&d, &root, "approve_reopen", &date).await;
    assert_eq!((status, body), (403, json!("GrantPending")));
    assert_eq!(confirm(&d, &abe, "root", "supervisor").await.0, 200);
    for what in ["approve_reopen", "reject_reopen"] {
        let (status, body) = act(&d, &root, what, &date).await;
        assert_eq!(
            (status, body),
            (403, not_independent("sid", "created")),
            "{what}"
        );
    }
    assert_eq!(day_state(&d, &date).await, "CLOSED", "still closed");
    let (status, body) = act(&d, &d.sue, "approve_reopen", &date).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(day_state(&d, &date).await, "REOPENED");
}

/// `reckon payment release` proposes; the hold stays until a supervisor
/// approves in the console. A ticket closed with the payment still held
/// is reopened for the decision. `--actor` names no one any more.
async fn the_command_line_proposes_a_release_and_a_supervisor_decides_it(b: Backend) {
    let d = desk(b).await;
    let (_, at) = d.app.today();
    let held = d
        .app
        .paid_with("SOD-HELD", 1000, "10.00", "SBX-SOD-HELD")
        .await;
    let listed_one = d
        .app
        .paid_with("SOD-LISTED", 500, "5.00", "SBX-SOD-LISTED")
        .await;
    let rows = [row(
        "payment",
        "SBX-SOD-LISTED",
        &listed_one,
        ("", ""),
        "5.00",
        "CNY",
        &at,
    )];
    let tickets = d.reconcile(&rows, "LOCAL_ONLY").await;
    assert_eq!(tickets.len(), 1);
    assert!(d.held(&held).await.is_some(), "reconciliation holds it");
    // Concluded with the payment still held.
    let (status, body) = d
        .call(
            &d.olga,
            "tickets/conclude",
            &[("id", &tickets[0]), ("conclusion", "asked the provider")],
        )
        .await;
    assert_eq!(status, 200, "{body}");

    let out = d.app.app.cli(
        &[
            "payment",
            "release",
            &held,
            "--note",
            "sam asked",
            "--actor",
            "sam",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--actor is no longer taken"));
    let start = d.audit_head().await;
    let out = d.app.app.cli(
        &[
            "payment",
            "release",
            &held,
            "--note",
            "the provider confirms the payment",
            "--evidence",
            "provider case 8812",
        ],
        None,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("reopened ticket {}", tickets[0])),
        "{stdout}"
    );
    assert!(stdout.contains("until a supervisor approves"), "{stdout}");
    assert!(d.held(&held).await.is_some(), "still held");
    assert_eq!(
        d.audit_actions(start).await,
        [
            ("cli".to_owned(), "ticket.reopen".to_owned()),
            ("cli".to_owned(), "fix.propose".to_owned()),
        ]
    );

    let (_, queue) = d.call(&d.sue, "fixes/list", &[("status", "PENDING")]).await;
    assert_eq!(queue[0]["kind"], "RELEASE_HOLD", "{queue}");
    assert_eq!(queue[0]["proposer"], "cli", "{queue}");
    let proposal = queue[0]["id"].as_str().unwrap().to_owned();
    let (status, done) = decide(&d, &d.sue, "fixes/approve", &proposal).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(d.held(&held).await, None, "released by the approval");

    let out = d
        .app
        .app
        .cli(&["payment", "release", &held, "--note", "again"], None);
    assert_eq!(out.status.code(), Some(2), "not held any more");
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not held"));
}

both_databases!(
    one_admin_alone_cannot_satisfy_the_two_person_rule,
    whoever_vouched_for_a_proposer_never_decides_their_proposals,
    reopening_a_day_follows_the_same_rule,
    the_command_line_proposes_a_release_and_a_supervisor_decides_it,
);
