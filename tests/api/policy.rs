//! The approval policy over real HTTP with real sessions, on SQLite and
//! PostgreSQL: by default one approver as before; a threshold makes a
//! large BACKFILL wait for two distinct supervisors and execute once, after
//! the second; two approvals at the same moment execute it once; a change
//! of policy needs another admin and applies to proposals made after it;
//! the floor holds in the text and in the database; a day's reopening
//! follows the same count.

use crate::both_databases;
use crate::helpers::Backend;
use crate::recon::row;
use crate::triage::{Desk, desk};
use app::types::Role;
use serde_json::{Value, json};

const PW: &str = "correct horse battery";

/// A payment of `amount` CNY the provider lists and Reckon lacks: its
/// PROVIDER_ONLY ticket.
async fn missing(d: &Desk, no: &str, amount: &str) -> String {
    let (_, at) = d.app.today();
    let txn = format!("SBX-{no}");
    let rows = [row("payment", &txn, no, ("", ""), amount, "CNY", &at)];
    d.reconcile(&rows, "PROVIDER_ONLY").await;
    d.ticket_of(no, "PROVIDER_ONLY").await
}

/// `who` approves `proposal`: the answer.
async fn approve(d: &Desk, who: &reqwest::Client, proposal: &str) -> (u16, Value) {
    d.call(
        who,
        "fixes/approve",
        &[
            ("proposal", proposal),
            ("comment", "checked against the bill"),
        ],
    )
    .await
}

/// The proposal as the approval queue shows it.
async fn queued(d: &Desk, proposal: &str) -> Value {
    let (status, list) = d.call(&d.sam, "fixes/list", &[("status", "ALL")]).await;
    assert_eq!(status, 200, "{list}");
    list.as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == proposal)
        .cloned()
        .unwrap()
}

/// What payment `no` has: (payments, outbox messages).
async fn effects(d: &Desk, no: &str) -> (i64, i64) {
    (
        d.app.count("payments", no).await,
        d.app.count("outbox_events", no).await,
    )
}

async fn policy(d: &Desk, who: &reqwest::Client) -> Value {
    let (status, page) = d.call(who, "policy/show", &[]).await;
    assert_eq!(status, 200, "{page}");
    page
}

async fn propose_policy(d: &Desk, who: &reqwest::Client, text: &str) -> (u16, Value) {
    d.call(
        who,
        "policy/propose",
        &[
            ("text", text),
            ("reason", "finance: large amounts need two people"),
        ],
    )
    .await
}

async fn decide_policy(d: &Desk, who: &reqwest::Client, id: &str, what: &str) -> (u16, Value) {
    d.call(
        who,
        "policy/decide",
        &[
            ("id", id),
            ("what", what),
            ("comment", "agreed with finance"),
        ],
    )
    .await
}

/// `root` proposes `text` and `ada` approves it: the version now in force.
async fn put_in_force(d: &Desk, root: &reqwest::Client, ada: &reqwest::Client, text: &str) -> i64 {
    let (status, id) = propose_policy(d, root, text).await;
    assert_eq!(status, 200, "{id}");
    let (status, said) = decide_policy(d, ada, id.as_str().unwrap(), "approve").await;
    assert_eq!(status, 200, "{said}");
    let page = policy(d, ada).await;
    assert!(page["pending"].is_null(), "{page}");
    page["active"]["version"].as_i64().unwrap()
}

const TWO_ABOVE: &str = "BACKFILL 1\nBACKFILL 2 above 10000.00 CNY\n";

/// With no policy ever approved, version 0 is in force: one approver for
/// everything, a large BACKFILL included, as before the policy existed.
async fn the_default_policy_is_one_approver_as_before(b: Backend) {
    let d = desk(b).await;
    let page = policy(&d, &d.sam).await;
    assert_eq!(page["active"]["version"], 0);
    let text = page["active"]["text"].as_str().unwrap();
    for action in [
        "BACKFILL 1",
        "RELEASE_HOLD 1",
        "BULK 1",
        "REOPEN_DAY 1",
        "POLICY_CHANGE 1",
    ] {
        assert!(text.lines().any(|l| l == action), "{action} in {text}");
    }
    let out = d.app.app.cli(&["policy", "show"], None);
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("approval policy version 0"), "{said}");
    // An operator does not see the policy page's data.
    let (status, _) = d.call(&d.olga, "policy/show", &[]).await;
    assert_eq!(status, 403);

    let ticket = missing(&d, "PAYPOL0", "12000.00").await;
    let proposal = d.propose_backfill(&d.olga, &ticket, "ORDER-POL-0").await;
    assert_eq!(queued(&d, &proposal).await["required"], 1);
    let (status, done) = approve(&d, &d.sam, &proposal).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["class"], "executed", "{done}");
    assert_eq!(effects(&d, "PAYPOL0").await, (1, 1));
}

/// Above 10,000.00 CNY a BACKFILL needs two distinct supervisors: the
/// proposer never counts, nor the same supervisor twice; nothing moves
/// after the first approval; the second executes it, once. Below the
/// threshold one approval executes at once.
async fn above_the_threshold_two_distinct_supervisors_execute_once(b: Backend) {
    let d = desk(b).await;
    let root = d.app.app.signed_in("root", Role::Admin).await;
    let ada = d.app.app.signed_in("ada", Role::Admin).await;
    assert_eq!(put_in_force(&d, &root, &ada, TWO_ABOVE).await, 1);
    let out = d.app.app.cli(&["policy", "show"], None);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("approval policy version 1"), "{said}");
    assert!(said.contains("BACKFILL 2 above 10000.00 CNY"), "{said}");

    // Below (and at) the threshold: one approval executes.
    let small = missing(&d, "PAYPOL1", "10000.00").await;
    let proposal = d.propose_backfill(&d.olga, &small, "ORDER-POL-1").await;
    assert_eq!(queued(&d, &proposal).await["required"], 1);
    let (status, done) = approve(&d, &d.sam, &proposal).await;
    assert_eq!(
        (status, &done["class"]),
        (200, &json!("executed")),
        "{done}"
    );
    assert_eq!(effects(&d, "PAYPOL1").await, (1, 1));

    // Above it: two.
    let large = missing(&d, "PAYPOL2", "10000.01").await;
    let proposal = d.propose_backfill(&d.olga, &large, "ORDER-POL-2").await;
    assert_eq!(queued(&d, &proposal).await["required"], 2);
    let start = d.audit_head().await;
    let (status, first) = approve(&d, &d.sam, &proposal).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["class"], "approved", "{first}");
    assert!(
        first["detail"].as_str().unwrap().starts_with("1 of 2"),
        "{first}"
    );
    assert_eq!(effects(&d, "PAYPOL2").await, (0, 0), "nothing moved yet");
    let p = queued(&d, &proposal).await;
    assert_eq!(
        (p["status"].as_str(), &p["approved_by"]),
        (Some("PENDING"), &json!(["sam"]))
    );

    // The same supervisor again counts for nothing.
    let (status, again) = approve(&d, &d.sam, &proposal).await;
    assert_eq!((status, again), (409, json!("AlreadyApproved")));
    assert_eq!(effects(&d, "PAYPOL2").await, (0, 0));
    // The ticket page says where it stands.
    let page = d
        .sam
        .get(format!("{}/tickets/{large}", d.app.app.base))
        .header("accept", "text/html")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("1 of 2 approvals (by sam)"), "{page}");

    let (status, done) = approve(&d, &d.sue, &proposal).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["class"], "executed", "{done}");
    assert_eq!(effects(&d, "PAYPOL2").await, (1, 1), "executed once");
    let (status, late) = approve(&d, &d.sue, &proposal).await;
    assert_eq!((status, late), (409, json!("ProposalDecided")));
    assert_eq!(effects(&d, "PAYPOL2").await, (1, 1));
    let p = queued(&d, &proposal).await;
    assert_eq!(p["status"], "EXECUTED");
    assert_eq!(p["approved_by"], json!(["sam", "sue"]));
    let actions = d.audit_actions(start).await;
    assert!(
        actions.contains(&("sam".into(), "fix.approval".into())),
        "{actions:?}"
    );
    assert!(
        actions.contains(&("sue".into(), "fix.approve".into())),
        "{actions:?}"
    );

    // A supervisor's own proposal: they never count for it.
    let own = missing(&d, "PAYPOL3", "20000.00").await;
    let proposal = d.propose_backfill(&d.sam, &own, "ORDER-POL-3").await;
    let (status, err) = approve(&d, &d.sam, &proposal).await;
    assert_eq!((status, err), (403, json!("OwnProposal")));
    let (status, one) = approve(&d, &d.sue, &proposal).await;
    assert_eq!((status, &one["class"]), (200, &json!("approved")), "{one}");
    assert_eq!(
        effects(&d, "PAYPOL3").await,
        (0, 0),
        "the proposer is no second"
    );

    // An approver who stops being one no longer counts: sam approves,
    // is disabled, and sue's approval is then the only one.
    let later = missing(&d, "PAYPOL4", "30000.00").await;
    let proposal = d.propose_backfill(&d.olga, &later, "ORDER-POL-4").await;
    let (status, first) = approve(&d, &d.sam, &proposal).await;
    assert_eq!(
        (status, &first["class"]),
        (200, &json!("approved")),
        "{first}"
    );
    let sam = d.app.app.accounts.by_username("sam").await.unwrap();
    d.app
        .app
        .accounts
        .set_disabled(&reckon::accounts::Actor::cli(), &sam.id, true)
        .await
        .unwrap();
    let (status, second) = approve(&d, &d.sue, &proposal).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["class"], "approved", "{second}");
    assert!(
        second["detail"].as_str().unwrap().starts_with("1 of 2"),
        "{second}"
    );
    assert_eq!(effects(&d, "PAYPOL4").await, (0, 0), "one approver left");
    let sid = d.app.app.signed_in("sid", Role::Supervisor).await;
    let (status, done) = approve(&d, &sid, &proposal).await;
    assert_eq!(
        (status, &done["class"]),
        (200, &json!("executed")),
        "{done}"
    );
    assert_eq!(effects(&d, "PAYPOL4").await, (1, 1));
}

/// Two supervisors approve at the same moment a proposal that needs two:
/// both count and it executes once. Three at once on one that needs two:
/// it executes once, and one of them finds it decided.
async fn approvals_at_the_same_moment_execute_once(b: Backend) {
    let d = desk(b).await;
    let root = d.app.app.signed_in("root", Role::Admin).await;
    let ada = d.app.app.signed_in("ada", Role::Admin).await;
    let sid = d.app.app.signed_in("sid", Role::Supervisor).await;
    put_in_force(&d, &root, &ada, TWO_ABOVE).await;

    let ticket = missing(&d, "PAYRACE1", "50000.00").await;
    let proposal = d.propose_backfill(&d.olga, &ticket, "ORDER-RACE-1").await;
    let (a, b2) = tokio::join!(
        approve(&d, &d.sam, &proposal),
        approve(&d, &d.sue, &proposal)
    );
    let mut classes = vec![a.1["class"].clone(), b2.1["class"].clone()];
    classes.sort_by_key(|c| c.to_string());
    assert_eq!(
        classes,
        vec![json!("approved"), json!("executed")],
        "{a:?} {b2:?}"
    );
    assert_eq!(effects(&d, "PAYRACE1").await, (1, 1), "executed once");
    assert_eq!(queued(&d, &proposal).await["status"], "EXECUTED");

    let ticket = missing(&d, "PAYRACE2", "50000.00").await;
    let proposal = d.propose_backfill(&d.olga, &ticket, "ORDER-RACE-2").await;
    let (x, y, z) = tokio::join!(
        approve(&d, &d.sam, &proposal),
        approve(&d, &d.sue, &proposal),
        approve(&d, &sid, &proposal)
    );
    let executed = [&x, &y, &z]
        .iter()
        .filter(|(s, v)| *s == 200 && v["class"] == "executed")
        .count();
    assert_eq!(executed, 1, "{x:?} {y:?} {z:?}");
    assert_eq!(effects(&d, "PAYRACE2").await, (1, 1), "executed once");
    let p = queued(&d, &proposal).await;
    assert_eq!(p["status"], "EXECUTED");
    assert_eq!(p["approved_by"].as_array().unwrap().len(), 2, "{p}");
}

/// A change of policy: only admins propose and decide it, never its
/// proposer; it applies to proposals made after it, not to one already
/// waiting, and once in force its own POLICY_CHANGE count governs the
/// next change. Every step is audited.
async fn a_policy_change_needs_another_admin_and_applies_to_later_proposals(b: Backend) {
    let d = desk(b).await;
    let root = d.app.app.signed_in("root", Role::Admin).await;
    let ada = d.app.app.signed_in("ada", Role::Admin).await;
    let abe = d.app.app.signed_in("abe", Role::Admin).await;

    // Proposed under the default: it keeps needing one.
    let before = missing(&d, "PAYCHG1", "30000.00").await;
    let early = d.propose_backfill(&d.olga, &before, "ORDER-CHG-1").await;

    let text = format!("{TWO_ABOVE}POLICY_CHANGE 2\n");
    let (status, _) = propose_policy(&d, &d.sam, &text).await;
    assert_eq!(status, 403, "a supervisor proposes no policy");
    let start = d.audit_head().await;
    let (status, id) = propose_policy(&d, &root, &text).await;
    assert_eq!(status, 200, "{id}");
    let id = id.as_str().unwrap().to_owned();
    let (status, again) = propose_policy(&d, &ada, "BACKFILL 3").await;
    assert_eq!(status, 409, "one change at a time: {again}");
    assert_eq!(
        decide_policy(&d, &root, &id, "approve").await,
        (403, json!("OwnProposal"))
    );
    assert_eq!(decide_policy(&d, &d.sam, &id, "approve").await.0, 403);
    let page = policy(&d, &d.sam).await;
    assert_eq!(page["active"]["version"], 0, "not in force while waiting");
    assert_eq!(page["pending"]["id"], id.as_str());
    assert_eq!(page["pending"]["required"], 1);

    // Made while the change waits: the policy in force counts.
    let waiting = missing(&d, "PAYCHG2", "30000.00").await;
    let meanwhile = d.propose_backfill(&d.olga, &waiting, "ORDER-CHG-2").await;
    assert_eq!(queued(&d, &meanwhile).await["required"], 1);

    let (status, said) = decide_policy(&d, &ada, &id, "approve").await;
    assert_eq!((status, said), (200, json!("version 1 is in force")));
    let page = policy(&d, &abe).await;
    assert_eq!(page["active"]["version"], 1);
    assert_eq!(page["active"]["approved_by"], json!(["ada"]));
    assert_eq!(page["active"]["proposer"], "root");
    assert_eq!(page["active"]["digest"].as_str().unwrap().len(), 64);
    let actions: Vec<(String, String)> = d
        .audit_actions(start)
        .await
        .into_iter()
        .filter(|(_, a)| a.starts_with("policy.") || a.starts_with("fix."))
        .collect();
    assert_eq!(
        actions,
        vec![
            ("root".into(), "policy.propose".into()),
            ("olga".into(), "fix.propose".into()),
            ("ada".into(), "policy.approve".into()),
        ]
    );

    // Proposed before: still one approver.
    for p in [&early, &meanwhile] {
        let (status, done) = approve(&d, &d.sam, p).await;
        assert_eq!(
            (status, &done["class"]),
            (200, &json!("executed")),
            "{done}"
        );
    }
    // Proposed after: two.
    let after = missing(&d, "PAYCHG3", "30000.00").await;
    let late = d.propose_backfill(&d.olga, &after, "ORDER-CHG-3").await;
    assert_eq!(queued(&d, &late).await["required"], 2);

    // The next change needs two admins besides its proposer.
    let (status, id2) = propose_policy(&d, &root, "BACKFILL 1").await;
    assert_eq!(status, 200, "{id2}");
    let id2 = id2.as_str().unwrap().to_owned();
    let (status, said) = decide_policy(&d, &ada, &id2, "approve").await;
    assert_eq!((status, said), (200, json!("1 of 2 approvals")));
    assert_eq!(
        decide_policy(&d, &ada, &id2, "approve").await,
        (409, json!("AlreadyApproved"))
    );
    assert_eq!(policy(&d, &ada).await["active"]["version"], 1);
    let (status, said) = decide_policy(&d, &abe, &id2, "approve").await;
    assert_eq!((status, said), (200, json!("version 2 is in force")));
    let page = policy(&d, &abe).await;
    assert_eq!(page["active"]["approved_by"], json!(["ada", "abe"]));
    assert_eq!(page["history"][1]["status"], "RETIRED", "{page}");
    // The proposal made under version 1 keeps its two.
    assert_eq!(queued(&d, &late).await["required"], 2);

    // A rejection by another admin ends a change.
    let (_, id3) = propose_policy(&d, &ada, "MERGE 2").await;
    let id3 = id3.as_str().unwrap().to_owned();
    assert_eq!(decide_policy(&d, &root, &id3, "reject").await.0, 200);
    assert!(policy(&d, &root).await["pending"].is_null());
    assert_eq!(policy(&d, &root).await["active"]["version"], 2);
}

/// No action needs fewer than one approver: text that says so is refused
/// with a clear error and nothing is stored; neither table accepts a
/// count below one, whatever writes it.
async fn the_floor_is_enforced(b: Backend) {
    let d = desk(b).await;
    let root = d.app.app.signed_in("root", Role::Admin).await;
    for (text, says) in [
        ("BACKFILL 0", "below the floor"),
        ("POLICY_CHANGE 0", "below the floor"),
        ("RELEASE_HOLD -1", "below the floor"),
        ("BACKFILL 2 above 100.00 XYZ", "unknown currency"),
        ("BACKFILL 2 above 1.001 CNY", "more decimals"),
        ("REFUND 1", "unknown action"),
        ("BACKFILL 3\nBACKFILL 2 above 5.00 USD", "fewer than"),
    ] {
        let (status, err) = propose_policy(&d, &root, text).await;
        assert_eq!(status, 400, "{text}: {err}");
        let detail = err["Invalid"]["detail"].as_str().unwrap_or_default();
        assert!(detail.contains(says), "{text}: {err}");
    }
    assert!(
        policy(&d, &root).await["pending"].is_null(),
        "nothing stored"
    );

    let ticket = missing(&d, "PAYFLOOR", "10.00").await;
    let proposal = d.propose_backfill(&d.olga, &ticket, "ORDER-FLOOR").await;
    let refused =
        sqlx::query("UPDATE fix_proposals SET required_approvals = 0 WHERE proposal_id = $1")
            .bind(&proposal)
            .execute(d.app.pool())
            .await;
    assert!(refused.is_err(), "the table keeps the floor");
    assert_eq!(queued(&d, &proposal).await["required"], 1);
}

/// `closes/act` as `who`.
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

/// Reopening a closed day under a policy of two: the first approval
/// leaves it closed, the same supervisor again is refused, the second
/// reopens it.
async fn reopening_a_day_counts_distinct_approvers(b: Backend) {
    let d = desk(b).await;
    let root = d.app.app.signed_in("root", Role::Admin).await;
    let ada = d.app.app.signed_in("ada", Role::Admin).await;
    let sid = d.app.app.signed_in("sid", Role::Supervisor).await;
    put_in_force(&d, &root, &ada, "REOPEN_DAY 2").await;
    let (date, at) = d.app.today();
    let p = d
        .app
        .paid_with("POL-DAY", 1000, "10.00", "SBX-POL-DAY")
        .await;
    let rows = [row(
        "payment",
        "SBX-POL-DAY",
        &p,
        ("", ""),
        "10.00",
        "CNY",
        &at,
    )];
    d.reconcile(&rows, "PROVIDER_ONLY").await;
    assert_eq!(day_state(&d, &date).await, "CLOSED");

    let (status, body) = act(&d, &sid, "propose_reopen", &date).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = act(&d, &d.sam, "approve_reopen", &date).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(day_state(&d, &date).await, "CLOSED", "one of two");
    let (_, list) = d.call(&d.sam, "closes/list", &[("day", &date)]).await;
    assert_eq!(list[0]["reopen"]["approved_by"], json!(["sam"]), "{list}");
    assert_eq!(list[0]["reopen"]["required"], 2, "{list}");
    let (status, body) = act(&d, &d.sam, "approve_reopen", &date).await;
    assert_eq!(status, 400, "the same supervisor again: {body}");
    assert_eq!(day_state(&d, &date).await, "CLOSED");
    let (status, body) = act(&d, &d.sue, "approve_reopen", &date).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(day_state(&d, &date).await, "REOPENED");
}

/// `who` proposes the settings in force with SLA hours `sla`: the answer.
async fn propose_settings(d: &Desk, who: &reqwest::Client, sla: &str) -> (u16, Value) {
    let (status, page) = d.call(who, "settings/view", &[]).await;
    assert_eq!(status, 200, "{page}");
    let e = &page["editable"];
    let field = |k: &str| e[k].as_str().unwrap().to_owned();
    let form = [
        ("sla_hours", sla.to_owned()),
        ("cut_window_minutes", field("cut_window_minutes")),
        ("bank_window_days", field("bank_window_days")),
        ("statement_missing_hours", field("statement_missing_hours")),
        ("close_allow_open", field("close_allow_open")),
        ("reason", "month-end".to_owned()),
    ];
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    d.call(who, "settings/propose", &form).await
}

/// The settings page's pending change (status, approvers, needed) and
/// the version in force.
async fn settings_state(d: &Desk, who: &reqwest::Client) -> (Value, i64) {
    let (status, page) = d.call(who, "settings/view", &[]).await;
    assert_eq!(status, 200, "{page}");
    (page["pending"].clone(), page["in_force"].as_i64().unwrap())
}

async fn decide_settings(d: &Desk, who: &reqwest::Client, id: &str) -> (u16, Value) {
    d.call(who, "settings/decide", &[("id", id), ("what", "approve")])
        .await
}

/// `who` confirms `user`'s grant of `role`: the answer.
async fn confirm(d: &Desk, who: &reqwest::Client, user: &str, role: &str) -> (u16, Value) {
    d.call(who, "users/confirm", &[("user_id", user), ("role", role)])
        .await
}

/// Under "SETTINGS_CHANGE 2" a change of the settings waits after its
/// first approval and is adopted at the second, by another person; under
/// "ROLE_GRANT 2" a supervisor created in the console decides nothing
/// after one admin's confirmation, the same admin cannot count twice, and
/// a second admin's confirmation makes the role decide. A grant made under
/// the earlier policy keeps the count it was made with.
async fn settings_and_role_grants_need_the_policys_count(b: Backend) {
    let d = desk(b).await;
    let root = d.app.app.signed_in("root", Role::Admin).await;
    let ada = d.app.app.signed_in("ada", Role::Admin).await;
    let cy = d.app.app.signed_in("cy", Role::Admin).await;
    // A grant made under the default: one confirmation.
    let (status, early) = d
        .call(
            &root,
            "users/create",
            &[
                ("username", "early"),
                ("role", "supervisor"),
                ("password", PW),
            ],
        )
        .await;
    assert_eq!(status, 200, "{early}");
    assert_eq!(early["grant"]["confirmations_required"], 1, "{early}");
    put_in_force(&d, &root, &ada, "SETTINGS_CHANGE 2\nROLE_GRANT 2\n").await;

    let (_, page) = d.call(&d.sam, "settings/view", &[]).await;
    assert_eq!(
        page["approvals_needed"], 2,
        "the page says what a change needs"
    );
    // Settings: sam proposes, sue approves (1 of 2), ada approves (adopted).
    let (_, before) = settings_state(&d, &d.sam).await;
    let (status, said) = propose_settings(&d, &d.sam, "*=36").await;
    assert_eq!(status, 200, "{said}");
    let (pending, _) = settings_state(&d, &d.sam).await;
    assert_eq!(pending["required"], 2, "{pending}");
    let id = pending["id"].as_str().unwrap().to_owned();
    let (status, said) = decide_settings(&d, &d.sue, &id).await;
    assert_eq!(status, 200, "{said}");
    let (pending, in_force) = settings_state(&d, &d.sam).await;
    assert_eq!(in_force, before, "one approval of two changes nothing");
    assert_eq!(pending["approved_by"], json!(["sue"]), "{pending}");
    let (status, said) = decide_settings(&d, &d.sue, &id).await;
    assert_eq!(status, 409, "the same approver twice: {said}");
    let (status, said) = decide_settings(&d, &d.sam, &id).await;
    assert_eq!(status, 403, "never the proposer: {said}");
    let (status, said) = decide_settings(&d, &ada, &id).await;
    assert_eq!(status, 200, "{said}");
    let (pending, in_force) = settings_state(&d, &d.sam).await;
    assert!(pending.is_null(), "{pending}");
    assert_eq!(in_force, before + 1, "adopted at the second approval");

    // Role grants: root creates sid as a supervisor; ada confirms (1 of 2).
    let (status, sid) = d
        .call(
            &root,
            "users/create",
            &[
                ("username", "sid"),
                ("role", "supervisor"),
                ("password", PW),
            ],
        )
        .await;
    assert_eq!(status, 200, "{sid}");
    assert_eq!(sid["grant"]["confirmations_required"], 2, "{sid}");
    let sid_id = sid["id"].as_str().unwrap().to_owned();
    let (status, said) = confirm(&d, &ada, &sid_id, "supervisor").await;
    assert_eq!(status, 200, "{said}");
    let sid_now = d.app.app.accounts.by_username("sid").await.unwrap();
    assert!(
        sid_now.grant.pending,
        "one confirmation of two: {sid_now:?}"
    );
    assert_eq!(sid_now.grant.confirmations, 1);
    let (status, said) = confirm(&d, &ada, &sid_id, "supervisor").await;
    assert_eq!(status, 409, "the same admin twice: {said}");
    let (status, said) = confirm(&d, &root, &sid_id, "supervisor").await;
    assert_eq!(status, 403, "never the granter: {said}");
    let (status, said) = confirm(&d, &cy, &sid_id, "supervisor").await;
    assert_eq!(status, 200, "{said}");
    let sid_now = d.app.app.accounts.by_username("sid").await.unwrap();
    assert!(!sid_now.grant.pending, "{sid_now:?}");
    assert_eq!(sid_now.grant.confirmed_by.as_deref(), Some("cy"));

    // The earlier grant keeps its count of one.
    let early_id = early["id"].as_str().unwrap().to_owned();
    let (status, said) = confirm(&d, &ada, &early_id, "supervisor").await;
    assert_eq!(status, 200, "{said}");
    assert!(
        !d.app
            .app
            .accounts
            .by_username("early")
            .await
            .unwrap()
            .grant
            .pending
    );
}

both_databases!(
    settings_and_role_grants_need_the_policys_count,
    the_default_policy_is_one_approver_as_before,
    above_the_threshold_two_distinct_supervisors_execute_once,
    approvals_at_the_same_moment_execute_once,
    a_policy_change_needs_another_admin_and_applies_to_later_proposals,
    the_floor_is_enforced,
    reopening_a_day_counts_distinct_approvers,
);
