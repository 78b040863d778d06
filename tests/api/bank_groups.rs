//! Grouped matches on the bank side, on SQLite and PostgreSQL: Stripe
//! payouts pulled from the balance transactions list (the fake in
//! `stripe`), a camt.053 statement uploaded over HTTP; one credit that sums
//! three payouts (N:1) and one payout paid as two credits (1:N) are each
//! one GROUP_MATCH proposal on the tickets, executed only when two
//! supervisors approve it; two covering sets propose nothing.

use crate::bank::{payout_txn, token, upload};
use crate::both_databases;
use crate::helpers::{Backend, TestApp};
use crate::stripe::{StripeApp, spawn_stripe_app_with};
use app::types::Role;
use serde_json::{Value, json};

/// 2026-12-01 00:00 UTC; the payouts arrive 2026-12-03.
const DAY_START: i64 = 1_796_083_200;
const DEC_3: i64 = DAY_START + 2 * 86_400;

/// A Stripe account whose day 2026-12-01 pulled `payouts` (id, amount in
/// cents), each arriving 2026-12-03 and settling a charge of its amount.
async fn stripe_paying_out(b: Backend, payouts: &[(&str, i64)]) -> StripeApp {
    let s = spawn_stripe_app_with(b, |c| c.timezone = "UTC".into()).await;
    s.clock.set((DAY_START + 8 * 3600) * 1_000_000);
    let t = DAY_START + 3600;
    *s.stripe.balance.lock().unwrap() = payouts
        .iter()
        .enumerate()
        .map(|(i, (id, amount))| payout_txn(id, *amount, DEC_3, None, t + i as i64))
        .collect();
    {
        let mut settled = s.stripe.settled.lock().unwrap();
        for (id, amount) in payouts {
            let charge = json!({"id": format!("txn_{id}_0"), "object": "balance_transaction",
                "amount": amount, "fee": 0, "net": amount, "currency": "eur", "created": t - 86_400,
                "type": "charge", "source": null});
            settled.insert(
                (*id).to_owned(),
                vec![charge, payout_txn(id, *amount, DEC_3, None, t)],
            );
        }
    }
    let run = reckon::recon::pull_statement(&s.app.engine, "stripe-eu", "2026-12-01", "test")
        .await
        .unwrap();
    assert_eq!(run.status, "COMPLETED", "{run:?}");
    s
}

/// A camt.053.001.02 statement (laid out as `camt053_v02_stripe.xml`, see
/// tests/fixtures/bank/SOURCES.md) of Stripe's credits: (amount, booking
/// day, end-to-end id, remittance text).
fn camt(id: &str, credits: &[(&str, &str, &str, &str)]) -> Vec<u8> {
    let entries: String = credits
        .iter()
        .enumerate()
        .map(|(i, (amount, day, e2e, text))| {
            format!(
                r#"<Ntry><NtryRef>{n}</NtryRef><Amt Ccy="EUR">{amount}</Amt><CdtDbtInd>CRDT</CdtDbtInd><Sts>BOOK</Sts>
<BookgDt><Dt>{day}</Dt></BookgDt><ValDt><Dt>{day}</Dt></ValDt><AcctSvcrRef>{id}-{n}</AcctSvcrRef>
<NtryDtls><TxDtls><Refs><EndToEndId>{e2e}</EndToEndId></Refs>
<RltdPties><Dbtr><Nm>STRIPE PAYMENTS EUROPE LTD</Nm></Dbtr></RltdPties>
<RmtInf><Ustrd>{text}</Ustrd></RmtInf></TxDtls></NtryDtls></Ntry>
"#,
                n = i + 1
            )
        })
        .collect();
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.02">
<BkToCstmrStmt><GrpHdr><MsgId>{id}</MsgId><CreDtTm>2026-12-05T06:00:00+01:00</CreDtTm></GrpHdr>
<Stmt><Id>{id}</Id><CreDtTm>2026-12-05T06:00:00+01:00</CreDtTm>
<Acct><Id><IBAN>DE89370400440532013000</IBAN></Id><Ccy>EUR</Ccy></Acct>
{entries}</Stmt></BkToCstmrStmt></Document>
"#
    )
    .into_bytes()
}

/// A matching pass on day `day` of December 2026, over the API.
async fn match_on(s: &StripeApp, token: &str, day: i64) -> Value {
    s.clock
        .set((DAY_START + (day - 1) * 86_400 + 8 * 3600) * 1_000_000);
    let res = s
        .app
        .client
        .post(format!("{}/api/v1/bank/match", s.app.base))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    res.json().await.unwrap()
}

async fn payouts(app: &TestApp) -> Vec<(String, String, Option<String>, Option<String>)> {
    sqlx::query_as("SELECT payout_id, state, entry_id, group_id FROM payouts ORDER BY payout_id")
        .fetch_all(&app.accounts.db.pool)
        .await
        .unwrap()
}

async fn entries(app: &TestApp) -> Vec<(i64, String, Option<String>)> {
    sqlx::query_as("SELECT line_no, state, group_id FROM bank_entries ORDER BY line_no")
        .fetch_all(&app.accounts.db.pool)
        .await
        .unwrap()
}

/// The bank tickets: (class, status, provider_txn_id, id), by class and txn.
async fn tickets(app: &TestApp) -> Vec<(String, String, Option<String>, String)> {
    sqlx::query_as(
        "SELECT class, status, provider_txn_id, discrepancy_id FROM discrepancies WHERE source = 'bank' \
         ORDER BY class, provider_txn_id",
    )
    .fetch_all(&app.accounts.db.pool)
    .await
    .unwrap()
}

/// The fix proposals: (id, kind, ticket, proposer, required approvals, status).
async fn proposals(app: &TestApp) -> Vec<(String, String, String, String, i64, String)> {
    sqlx::query_as(
        "SELECT proposal_id, kind, discrepancy_id, proposer_name, required_approvals, status \
         FROM fix_proposals ORDER BY proposed_at",
    )
    .fetch_all(&app.accounts.db.pool)
    .await
    .unwrap()
}

async fn decide(app: &TestApp, who: &reqwest::Client, proposal: &str) -> (u16, Value) {
    let res = app
        .call_with(
            who,
            "fixes/approve",
            &[
                ("proposal", proposal),
                ("comment", "bank statement checked"),
            ],
        )
        .await;
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// One credit of 9,000.00 that is three payouts: proposed on its BANK_ONLY
/// ticket and shown on each payout's PAYOUT_MISSING ticket; one supervisor's
/// approval executes nothing (nobody proposed it, so two people approve);
/// the second's settles the payouts by that credit and closes all four
/// tickets; the next day's pass raises nothing new.
async fn three_payouts_summing_to_one_credit_settle_when_two_people_approve(b: Backend) {
    let s = stripe_paying_out(
        b,
        &[
            ("po_1QaGROUPa", 300_000),
            ("po_1QaGROUPb", 450_000),
            ("po_1QaGROUPc", 150_000),
        ],
    )
    .await;
    let app = &s.app;
    let token = token(app).await;
    let file = camt(
        "STMT-GROUP-1",
        &[("9000.00", "2026-12-03", "NOTPROVIDED", "STRIPE PAYOUTS")],
    );
    let res = upload(app, &token, "group.xml", file).await;
    assert_eq!(res.status(), 201);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["matching"]["matched"], 0, "{body}");
    assert!(
        proposals(app).await.is_empty(),
        "inside the window nothing is proposed"
    );

    let figures = match_on(&s, &token, 8).await;
    assert_eq!(
        (
            &figures["missing"],
            &figures["bank_only"],
            &figures["matched"]
        ),
        (&json!(3), &json!(1), &json!(0)),
        "{figures}"
    );
    let all = tickets(app).await;
    assert_eq!(all.len(), 4, "{all:?}");
    let bank_only = all.iter().find(|t| t.0 == "BANK_ONLY").unwrap().3.clone();
    let missing_a = all
        .iter()
        .find(|t| t.2.as_deref() == Some("po_1QaGROUPa"))
        .unwrap()
        .3
        .clone();
    let found = proposals(app).await;
    assert_eq!(found.len(), 1, "one proposal for the group: {found:?}");
    let (proposal, kind, on, proposer, required, status) = found[0].clone();
    assert_eq!(
        (
            kind.as_str(),
            on.as_str(),
            proposer.as_str(),
            required,
            status.as_str()
        ),
        ("GROUP_MATCH", bank_only.as_str(), "reckon", 2, "PENDING")
    );
    let (before, after): (String, String) =
        sqlx::query_as("SELECT before_json, after_json FROM fix_proposals WHERE proposal_id = $1")
            .bind(&proposal)
            .fetch_one(&app.accounts.db.pool)
            .await
            .unwrap();
    let (before, after): (Value, Value) = (
        serde_json::from_str(&before).unwrap(),
        serde_json::from_str(&after).unwrap(),
    );
    assert_eq!(after["shape"], "N_TO_ONE");
    assert_eq!(after["amount_minor"], 900_000);
    assert_eq!(after["currency"], "EUR");
    let members: Vec<(&str, i64)> = after["payouts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["payout_id"].as_str().unwrap(),
                p["amount_minor"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        members,
        [
            ("po_1QaGROUPa", 300_000),
            ("po_1QaGROUPb", 450_000),
            ("po_1QaGROUPc", 150_000)
        ]
    );
    assert_eq!(after["credits"][0]["day"], "2026-12-03");
    assert_eq!(before["payouts"][0]["state"], "PAYOUT_MISSING");

    // Each member's ticket shows the proposal with its approve button.
    let sam = app.signed_in("sam", Role::Supervisor).await;
    let html = sam
        .get(format!("{}/tickets/{missing_a}", app.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        html.contains(&format!("data-proposal=\"{proposal}\"")),
        "{html}"
    );
    let card = &html[html
        .find("proposal-sentence")
        .expect("the proposal's sentence")..];
    for member in [
        "po_1QaGROUPa",
        "po_1QaGROUPb",
        "po_1QaGROUPc",
        "together 9,000.00 EUR",
    ] {
        assert!(card.contains(member), "{member} on the card: {card}");
    }
    assert!(
        card.contains("approve-submit"),
        "the approve button: {card}"
    );

    // One approval of two: recorded, nothing settled.
    let (status, done) = decide(app, &sam, &proposal).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["class"], "approved", "{done}");
    assert!(payouts(app).await.iter().all(|p| p.1 == "PAYOUT_MISSING"));
    let (status, again) = decide(app, &sam, &proposal).await;
    assert_ne!(
        status, 200,
        "the same person twice is one approval: {again}"
    );
    assert!(payouts(app).await.iter().all(|p| p.1 == "PAYOUT_MISSING"));

    let sue = app.signed_in("sue", Role::Supervisor).await;
    let (status, done) = decide(app, &sue, &proposal).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["class"], "executed", "{done}");

    let entry: String = sqlx::query_scalar("SELECT entry_id FROM bank_entries")
        .fetch_one(&app.accounts.db.pool)
        .await
        .unwrap();
    let settled = payouts(app).await;
    let group = settled[0].3.clone().expect("settled in a group");
    for (id, state, by, in_group) in &settled {
        assert_eq!(state, "PAYOUT_MATCHED", "{id}");
        assert_eq!(
            by.as_deref(),
            Some(entry.as_str()),
            "{id} settled by the credit"
        );
        assert_eq!(in_group.as_deref(), Some(group.as_str()));
    }
    assert_eq!(
        entries(app).await,
        [(1, "MATCHED".into(), Some(group.clone()))]
    );
    assert!(
        tickets(app).await.iter().all(|t| t.1 == "CLOSED"),
        "every member's ticket closes: {:?}",
        tickets(app).await
    );
    let status: String = sqlx::query_scalar("SELECT status FROM match_groups WHERE group_id = $1")
        .bind(&group)
        .fetch_one(&app.accounts.db.pool)
        .await
        .unwrap();
    assert_eq!(status, "MATCHED");

    // The next day's pass raises nothing new for them.
    let next = match_on(&s, &token, 9).await;
    assert_eq!(
        next,
        json!({"matched": 0, "amount_mismatch": 0, "missing": 0, "bank_only": 0, "net_differs": 0, "late": 0})
    );
    assert_eq!(tickets(app).await.len(), 4);
    assert!(tickets(app).await.iter().all(|t| t.1 == "CLOSED"));
    assert_eq!(proposals(app).await.len(), 1);
}

/// One payout of 10,000.00 paid as two credits: proposed on its
/// PAYOUT_MISSING ticket; approved by two, the payout is settled and both
/// credits matched in the group, the three tickets closed.
async fn one_payout_paid_as_two_credits_settles_when_approved(b: Backend) {
    let s = stripe_paying_out(b, &[("po_1QaSPLIT", 1_000_000)]).await;
    let app = &s.app;
    let token = token(app).await;
    let file = camt(
        "STMT-SPLIT-1",
        &[
            (
                "6000.00",
                "2026-12-03",
                "NOTPROVIDED",
                "STRIPE PAYOUT PART 1",
            ),
            (
                "4000.00",
                "2026-12-04",
                "NOTPROVIDED",
                "STRIPE PAYOUT PART 2",
            ),
            // A customer's transfer of the same amount is no provider's.
            ("4000.00", "2026-12-04", "INV-77", "CUSTOMER"),
        ],
    );
    let mut text = String::from_utf8(file).unwrap();
    text = text.replacen(
        "<Nm>STRIPE PAYMENTS EUROPE LTD</Nm></Dbtr></RltdPties>\n<RmtInf><Ustrd>CUSTOMER",
        "<Nm>ACME GMBH</Nm></Dbtr></RltdPties>\n<RmtInf><Ustrd>CUSTOMER",
        1,
    );
    assert_eq!(
        upload(app, &token, "split.xml", text.into_bytes())
            .await
            .status(),
        201
    );
    let figures = match_on(&s, &token, 8).await;
    assert_eq!(
        (&figures["missing"], &figures["bank_only"]),
        (&json!(1), &json!(2)),
        "{figures}"
    );
    let all = tickets(app).await;
    let missing = all
        .iter()
        .find(|t| t.0 == "PAYOUT_MISSING")
        .unwrap()
        .3
        .clone();
    let found = proposals(app).await;
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (found[0].1.as_str(), found[0].2.as_str()),
        ("GROUP_MATCH", missing.as_str())
    );
    let sam = app.signed_in("sam", Role::Supervisor).await;
    let sue = app.signed_in("sue", Role::Supervisor).await;
    assert_eq!(decide(app, &sam, &found[0].0).await.1["class"], "approved");
    let (status, done) = decide(app, &sue, &found[0].0).await;
    assert_eq!(
        (status, done["class"].as_str()),
        (200, Some("executed")),
        "{done}"
    );
    let settled = payouts(app).await;
    assert_eq!(settled[0].1, "PAYOUT_MATCHED");
    assert_eq!(
        settled[0].2, None,
        "two credits settle it: no one credit is named"
    );
    let group = settled[0].3.clone().unwrap();
    assert_eq!(
        entries(app).await,
        [
            (1, "MATCHED".into(), Some(group.clone())),
            (2, "MATCHED".into(), Some(group.clone())),
            (3, "OUT_OF_SCOPE".into(), None),
        ]
    );
    assert_eq!(tickets(app).await.len(), 3);
    assert!(tickets(app).await.iter().all(|t| t.1 == "CLOSED"));
    let next = match_on(&s, &token, 9).await;
    assert_eq!(
        (&next["missing"], &next["bank_only"]),
        (&json!(0), &json!(0))
    );
    assert_eq!(tickets(app).await.len(), 3);
}

/// Four payouts where two different sets make the credit: nothing is
/// proposed, the credit's ticket says why (once), every ticket stays open.
async fn two_covering_sets_propose_nothing_and_say_so(b: Backend) {
    let s = stripe_paying_out(
        b,
        &[
            ("po_1QaAMBa", 10_000),
            ("po_1QaAMBb", 20_000),
            ("po_1QaAMBc", 30_000),
            ("po_1QaAMBd", 30_000),
        ],
    )
    .await;
    let app = &s.app;
    let token = token(app).await;
    let file = camt(
        "STMT-AMB-1",
        &[("600.00", "2026-12-03", "NOTPROVIDED", "STRIPE")],
    );
    assert_eq!(upload(app, &token, "amb.xml", file).await.status(), 201);
    let figures = match_on(&s, &token, 8).await;
    assert_eq!(
        (&figures["missing"], &figures["bank_only"]),
        (&json!(4), &json!(1))
    );
    assert!(
        proposals(app).await.is_empty(),
        "{:?}",
        proposals(app).await
    );
    let bank_only = tickets(app)
        .await
        .into_iter()
        .find(|t| t.0 == "BANK_ONLY")
        .unwrap()
        .3;
    let notes = || async {
        sqlx::query_scalar::<_, String>(
            "SELECT body FROM ticket_notes WHERE discrepancy_id = $1 AND body LIKE 'grouped match%'",
        )
        .bind(&bank_only)
        .fetch_all(&app.accounts.db.pool)
        .await
        .unwrap()
    };
    let said = notes().await;
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].contains("3 sets sum exactly"), "{}", said[0]);
    match_on(&s, &token, 9).await;
    assert_eq!(notes().await.len(), 1, "said once");
    assert!(proposals(app).await.is_empty());
    assert!(payouts(app).await.iter().all(|p| p.1 == "PAYOUT_MISSING"));
    assert!(tickets(app).await.iter().all(|t| t.1 == "OPEN"));
}

/// A group people reject is not proposed again by the next pass; the
/// credit's ticket offers it to a person, whose proposal needs the policy's
/// one approver, as any fix does.
async fn a_rejected_group_is_not_proposed_again_but_a_person_may_propose_it(b: Backend) {
    let s = stripe_paying_out(b, &[("po_1QaREJa", 40_000), ("po_1QaREJb", 60_000)]).await;
    let app = &s.app;
    let token = token(app).await;
    let file = camt(
        "STMT-REJ-1",
        &[("1000.00", "2026-12-03", "NOTPROVIDED", "STRIPE")],
    );
    assert_eq!(upload(app, &token, "rej.xml", file).await.status(), 201);
    match_on(&s, &token, 8).await;
    let found = proposals(app).await;
    assert_eq!(found.len(), 1, "{found:?}");
    let (proposal, ticket) = (found[0].0.clone(), found[0].2.clone());
    let sam = app.signed_in("sam", Role::Supervisor).await;
    let res = app
        .call_with(
            &sam,
            "fixes/reject",
            &[
                ("proposal", proposal.as_str()),
                ("comment", "po_1QaREJb went elsewhere"),
            ],
        )
        .await;
    assert_eq!(res.status(), 200);
    match_on(&s, &token, 9).await;
    let after = proposals(app).await;
    assert_eq!(after.len(), 1, "not proposed again: {after:?}");
    assert_eq!(after[0].5, "REJECTED");
    assert!(payouts(app).await.iter().all(|p| p.1 == "PAYOUT_MISSING"));

    let olga = app.signed_in("olga", Role::Operator).await;
    let res = app
        .call_with(
            &olga,
            "fixes/propose",
            &[
                ("id", ticket.as_str()),
                ("kind", "GROUP_MATCH"),
                ("reason", "the bank confirmed both payouts in one transfer"),
                ("evidence", "bank's advice of 2026-12-03"),
            ],
        )
        .await;
    assert_eq!(res.status(), 200);
    let again: String = res
        .json::<Value>()
        .await
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned();
    let required: i64 =
        sqlx::query_scalar("SELECT required_approvals FROM fix_proposals WHERE proposal_id = $1")
            .bind(&again)
            .fetch_one(&app.accounts.db.pool)
            .await
            .unwrap();
    assert_eq!(required, 1, "a person proposed it: the policy's count");
    let (status, done) = decide(app, &sam, &again).await;
    assert_eq!(
        (status, done["class"].as_str()),
        (200, Some("executed")),
        "{done}"
    );
    assert!(payouts(app).await.iter().all(|p| p.1 == "PAYOUT_MATCHED"));
    assert!(tickets(app).await.iter().all(|t| t.1 == "CLOSED"));
}

/// A member settled by a credit of its own while the group waits: the
/// approval executes nothing, the proposal fails with why, and the other
/// members stay as they were.
async fn a_group_whose_member_was_matched_meanwhile_fails_and_changes_nothing(b: Backend) {
    let s = stripe_paying_out(b, &[("po_1QaLATEa", 40_000), ("po_1QaLATEb", 60_000)]).await;
    let app = &s.app;
    let token = token(app).await;
    let file = camt(
        "STMT-LATE-1",
        &[("1000.00", "2026-12-03", "NOTPROVIDED", "STRIPE")],
    );
    assert_eq!(upload(app, &token, "late.xml", file).await.status(), 201);
    match_on(&s, &token, 8).await;
    let proposal = proposals(app).await[0].0.clone();
    // The bank's next statement pays A by name.
    let file = camt(
        "STMT-LATE-2",
        &[("400.00", "2026-12-09", "po_1QaLATEa", "STRIPE")],
    );
    assert_eq!(upload(app, &token, "late2.xml", file).await.status(), 201);
    let states = payouts(app).await;
    assert_eq!(
        (states[0].1.as_str(), states[1].1.as_str()),
        ("PAYOUT_MATCHED", "PAYOUT_MISSING")
    );
    let sam = app.signed_in("sam", Role::Supervisor).await;
    let sue = app.signed_in("sue", Role::Supervisor).await;
    assert_eq!(decide(app, &sam, &proposal).await.1["class"], "approved");
    let (status, refused) = decide(app, &sue, &proposal).await;
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused
            .to_string()
            .contains("po_1QaLATEa is no longer waiting"),
        "{refused}"
    );
    assert_eq!(proposals(app).await[0].5, "FAILED");
    let states = payouts(app).await;
    assert_eq!(states[1].1, "PAYOUT_MISSING", "B is not settled");
    assert_eq!(states[1].3, None);
    let credit: String =
        sqlx::query_scalar("SELECT state FROM bank_entries WHERE amount_minor = 100000")
            .fetch_one(&app.accounts.db.pool)
            .await
            .unwrap();
    assert_eq!(credit, "BANK_ONLY");
    let group: String = sqlx::query_scalar("SELECT status FROM match_groups")
        .fetch_one(&app.accounts.db.pool)
        .await
        .unwrap();
    assert_eq!(group, "PROPOSED", "the failed approval rolled back");
}

both_databases!(
    three_payouts_summing_to_one_credit_settle_when_two_people_approve,
    one_payout_paid_as_two_credits_settles_when_approved,
    two_covering_sets_propose_nothing_and_say_so,
    a_rejected_group_is_not_proposed_again_but_a_person_may_propose_it,
    a_group_whose_member_was_matched_meanwhile_fails_and_changes_nothing,
);
