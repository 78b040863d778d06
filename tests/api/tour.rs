//! What a person meets touring the console: a replay beside the callback's
//! original outcome, identical redeliveries counted apart from other bytes,
//! the outbox without a sink, a payment's outbox messages, the audit log's
//! business days and a comment on a proposal — through the server functions
//! and the pages over HTTP, on SQLite and PostgreSQL.

use crate::both_databases;
use crate::helpers::Backend;
use crate::triage::{Desk, desk, desk_with};

impl Desk {
    /// The console's page at `path` as `who` sees it without JavaScript.
    async fn html(&self, who: &reqwest::Client, path: &str) -> String {
        let res = who
            .get(format!("{}{path}", self.app.app.base))
            .header("accept", "text/html")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{path}");
        res.text().await.unwrap()
    }
}

async fn a_replay_is_listed_beside_the_original_outcome_it_leaves_alone(b: Backend) {
    let d = desk(b).await;
    let dead = d.dead_callback("PAYTOURRP1", "50.00").await;
    let (_, before) = d.call(&d.olga, "callbacks/show", &[("id", &dead)]).await;
    assert_eq!(before["original"]["status"], "DEAD", "{before}");
    assert!(before["replays"].as_array().unwrap().is_empty());
    d.late_payment("PAYTOURRP1", 5000).await;

    let (status, res) = d.call(&d.olga, "callbacks/replay", &[("id", &dead)]).await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["class"], "applied");
    let (status, res) = d.call(&d.sue, "callbacks/replay", &[("id", &dead)]).await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["class"], "duplicate");

    let (_, detail) = d.call(&d.olga, "callbacks/show", &[("id", &dead)]).await;
    // The callback as received: DEAD, its payment unknown then — unchanged.
    assert_eq!(detail["original"], before["original"], "{detail}");
    assert_eq!(detail["original"]["error"], "unknown payment");
    // Its processing now, and each replay's own result.
    assert_eq!(detail["summary"]["processing_status"], "SUCCESS");
    let replays = detail["replays"].as_array().unwrap();
    assert_eq!(replays.len(), 2, "{detail}");
    assert_eq!(replays[0]["actor"], "olga");
    assert_eq!(replays[0]["class"], "applied");
    assert!(
        replays[0]["detail"].as_str().unwrap().contains("SUCCEEDED"),
        "{detail}"
    );
    assert_eq!(replays[1]["actor"], "sue");
    assert_eq!(replays[1]["class"], "duplicate");
    assert_eq!(d.app.status("PAYTOURRP1").await, "SUCCEEDED");

    // The page says both.
    let html = d.html(&d.olga, &format!("/callbacks/{dead}")).await;
    let at = html.find("id=\"original-outcome\"").expect("the original");
    assert!(
        html[at..at + 300].contains("DEAD"),
        "{}",
        &html[at..at + 300]
    );
    let at = html.find("id=\"replays\"").expect("the replays");
    let list = &html[at..html[at..].find("</ul>").unwrap() + at];
    assert_eq!(list.matches("class=\"replay\"").count(), 2, "{list}");
    assert!(list.contains("olga") && list.contains("applied"), "{list}");
}

async fn identical_redeliveries_are_counted_apart_from_other_bytes(b: Backend) {
    let d = desk(b).await;
    let p = d.app.payment("TOUR-RD", 1200, "CNY").await;
    let body = d.app.notice(
        "evt-tour-rd",
        &p,
        "SUCCEEDED",
        "12.00",
        "CNY",
        "SBX-TOUR-RD",
    );
    for _ in 0..3 {
        assert_eq!(d.app.post_signed("evt-tour-rd", &body).await.status(), 200);
    }
    let spaced = body.replacen('{', "{ ", 1);
    assert_eq!(
        d.app.post_signed("evt-tour-rd", &spaced).await.status(),
        200
    );
    let id: String =
        sqlx::query_scalar("SELECT id FROM payment_callbacks WHERE callback_id = 'evt-tour-rd'")
            .fetch_one(d.app.pool())
            .await
            .unwrap();
    let (_, detail) = d.call(&d.olga, "callbacks/show", &[("id", &id)]).await;
    assert_eq!(detail["summary"]["duplicates"], 3, "{detail}");
    assert_eq!(detail["identical_redeliveries"], 2, "{detail}");
    let other = detail["redeliveries"].as_array().unwrap();
    assert_eq!(other.len(), 1, "{detail}");
    assert!(
        other[0]
            .as_str()
            .unwrap()
            .contains("same facts, new envelope")
    );
    let html = d.html(&d.olga, &format!("/callbacks/{id}")).await;
    assert!(
        html.contains("2 identical redeliveries (the same bytes)."),
        "{html}"
    );
    let at = html.find("id=\"redeliveries\"").expect("the other bytes");
    let list = &html[at..html[at..].find("</ul>").unwrap() + at];
    assert_eq!(list.matches("<li>").count(), 1, "{list}");
}

/// A payment paid by a signed callback; its row id and the outbox message
/// the payment produced.
async fn paid(d: &Desk, order: &str) -> (String, String) {
    let p = d.app.payment(order, 6660, "CNY").await;
    let evt = format!("evt-{order}");
    let body = d.app.notice(
        &evt,
        &p,
        "SUCCEEDED",
        "66.60",
        "CNY",
        &format!("SBX-{order}"),
    );
    assert_eq!(d.app.post_signed(&evt, &body).await.status(), 200);
    let message: String = crate::reads::message_of(d.app.pool(), &p).await;
    (p, message)
}

async fn without_a_sink_the_outbox_says_why_nothing_can_be_resent(b: Backend) {
    let d = desk_with(b, |c| c.outbox_sinks.clear()).await;
    let (_, message) = paid(&d, "TOUR-NOSINK").await;
    let (status, page) = d.call(&d.olga, "outbox/list", &[]).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["sinks_configured"], false, "{page}");
    for path in ["/outbox".to_owned(), format!("/outbox/{message}")] {
        let html = d.html(&d.olga, &path).await;
        assert!(html.contains("id=\"no-sink\""), "{path}: {html}");
        assert!(html.contains("RECKON_OUTBOX_SINKS"), "{path}");
        assert!(html.contains("href=\"/sinks\""), "{path}");
        for control in ["bulk-resend", "recover", "resend-all"] {
            assert!(
                !html.contains(&format!("id=\"{control}\"")),
                "{path} offers {control}"
            );
        }
    }
    // In Chinese too.
    let res = d
        .olga
        .get(format!("{}/outbox", d.app.app.base))
        .header("accept", "text/html")
        .header("accept-language", "zh-CN,zh;q=0.9")
        .send()
        .await
        .unwrap();
    let html = res.text().await.unwrap();
    assert!(html.contains("尚未配置任何推送端点"), "{html}");

    // With a sink, the controls are there and the sentence is not.
    let d = desk(Backend::Sqlite).await;
    let (_, page) = d.call(&d.olga, "outbox/list", &[]).await;
    assert_eq!(page["sinks_configured"], true, "{page}");
    let html = d.html(&d.olga, "/outbox").await;
    assert!(html.contains("id=\"bulk-resend\""));
    assert!(!html.contains("id=\"no-sink\""));
}

async fn the_payment_page_links_its_outbox_messages_and_payloads_read_as_json(b: Backend) {
    let d = desk(b).await;
    let (p, message) = paid(&d, "TOUR-OUTBOX").await;
    let (_, view) = d
        .call(&d.olga, "payments/show", &[("payment_no", &p)])
        .await;
    let outbox = view["outbox"].as_array().unwrap();
    assert_eq!(outbox.len(), 1, "{view}");
    assert_eq!(outbox[0]["link"], format!("/outbox/{message}"));
    assert!(
        outbox[0]["what"]
            .as_str()
            .unwrap()
            .contains("payment.succeeded"),
        "{view}"
    );
    assert!(
        outbox[0]["detail"].as_str().unwrap().contains("attempt"),
        "{view}"
    );
    let html = d.html(&d.olga, &format!("/payments/{p}")).await;
    assert!(
        html.contains(&format!("href=\"/outbox/{message}\"")),
        "{html}"
    );
    assert!(html.contains(&format!("href=\"/outbox?payment={p}\"")));

    // The message's payload, indented, one field a line.
    let html = d.html(&d.olga, &format!("/outbox/{message}")).await;
    let at = html.find("id=\"payload\"").expect("the payload");
    let start = at + html[at..].find('>').unwrap() + 1;
    let pre = &html[start..start + html[start..].find("</pre>").unwrap()];
    assert!(pre.starts_with("{\n  "), "{pre}");
    assert!(pre.lines().count() > 4, "{pre}");
    assert!(pre.contains(&p), "{pre}");
}

async fn audit_days_are_business_days(b: Backend) {
    let d = desk_with(b, |c| c.timezone = "Asia/Shanghai".into()).await;
    let p = d.app.payment("TOUR-AUDIT", 100, "CNY").await;
    let body = d.app.notice(
        "evt-tour-audit",
        &p,
        "SUCCEEDED",
        "1.00",
        "CNY",
        "SBX-TOUR-AUDIT",
    );
    assert_eq!(
        d.app.post_signed("evt-tour-audit", &body).await.status(),
        200
    );
    let row: String =
        sqlx::query_scalar("SELECT id FROM payment_callbacks WHERE callback_id = 'evt-tour-audit'")
            .fetch_one(d.app.pool())
            .await
            .unwrap();
    // Half an hour after the last local midnight (Shanghai is UTC+8 all
    // year): still the day before in UTC.
    const HOUR: i64 = 3_600_000_000;
    let now = d.app.app.engine.now();
    let midnight = (now + 8 * HOUR).div_euclid(24 * HOUR) * 24 * HOUR - 8 * HOUR;
    d.app.clock.set(midnight + HOUR / 2);
    let (status, res) = d.call(&d.olga, "callbacks/replay", &[("id", &row)]).await;
    assert_eq!(status, 200, "{res}");
    let day = |micros: i64, tz: &str| {
        jiff::Timestamp::from_microsecond(micros)
            .unwrap()
            .to_zoned(jiff::tz::TimeZone::get(tz).unwrap())
            .date()
            .to_string()
    };
    let (local, utc) = (
        day(midnight + HOUR / 2, "Asia/Shanghai"),
        day(midnight + HOUR / 2, "UTC"),
    );
    assert_ne!(local, utc);
    let found = |from: String, to: String| {
        let d = &d;
        async move {
            let (status, page) = d
                .call(
                    &d.sam,
                    "audit/list",
                    &[
                        ("filter[action]", "callback.replay"),
                        ("filter[from]", &from),
                        ("filter[to]", &to),
                    ],
                )
                .await;
            assert_eq!(status, 200, "{page}");
            page["items"].as_array().unwrap().len()
        }
    };
    assert_eq!(found(local.clone(), local.clone()).await, 1);
    assert_eq!(found(utc.clone(), utc.clone()).await, 0);
    assert_eq!(found(utc.clone(), local.clone()).await, 1);
    // A day that is not one is refused, not ignored.
    let (status, page) = d
        .call(
            &d.sam,
            "audit/list",
            &[("filter[from]", "2026-13-01"), ("filter[to]", "")],
        )
        .await;
    assert_eq!(status, 400, "{page}");
}

async fn the_ticket_page_shows_times_in_the_business_zone(b: Backend) {
    let d = desk_with(b, |c| c.timezone = "Asia/Shanghai".into()).await;
    let ticket = d.provider_only("PAYTOURZONE1", "SBXTOURZONE1").await;
    let (status, _) = d
        .call(
            &d.olga,
            "tickets/comment",
            &[("id", &ticket), ("text", "looking")],
        )
        .await;
    assert_eq!(status, 200);
    let html = d.html(&d.olga, &format!("/tickets/{ticket}")).await;
    for label in ["Found (Asia/Shanghai)", "Time (Asia/Shanghai)"] {
        assert!(html.contains(label), "{label}: {html}");
    }
    assert!(!html.contains("(UTC)"), "{html}");
    // A note names the zone it is written in.
    let at = html.find("id=\"notes\"").expect("the notes");
    assert!(html[at..].contains("Asia/Shanghai"));
}

/// Every list a person reads names the business zone its times are in;
/// none is left in UTC.
async fn every_list_shows_its_times_in_the_business_zone(b: Backend) {
    let d = desk_with(b, |c| c.timezone = "Asia/Shanghai".into()).await;
    d.provider_only("PAYTOURZONE2", "SBXTOURZONE2").await;
    let lists = [
        ("/tickets", "Found (Asia/Shanghai)"),
        ("/alerts", "Time (Asia/Shanghai)"),
        ("/refused", "Received (Asia/Shanghai)"),
    ];
    for (path, label) in lists {
        let html = d.html(&d.sam, path).await;
        assert!(html.contains(label), "{path}: {label}");
        assert!(!html.contains("(UTC)"), "{path} still says UTC");
    }
}

async fn a_proposal_is_commented_on_without_a_decision_and_decided_with_one(b: Backend) {
    let d = desk(b).await;
    let ticket = d.provider_only("PAYTOURCMT1", "SBXTOURCMT1").await;
    let proposal = d.propose_backfill(&d.olga, &ticket, "ORDER-TOUR-CMT").await;
    let since = d.audit_head().await;

    let (status, said) = d
        .call(
            &d.sam,
            "fixes/comment",
            &[("proposal", &proposal), ("text", "which order is it?")],
        )
        .await;
    assert_eq!(status, 200, "{said}");
    assert_eq!(said["author"], "sam");
    assert_eq!(said["text"], "which order is it?");
    // Nothing decided: the proposal waits, on its card with the comment.
    let (_, queue) = d.call(&d.sue, "fixes/list", &[("status", "PENDING")]).await;
    let card = queue
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == proposal.as_str())
        .expect("still in the queue");
    assert_eq!(card["status"], "PENDING");
    assert_eq!(card["comments"][0]["author"], "sam", "{card}");
    assert_eq!(card["comments"][0]["text"], "which order is it?");
    // On the ticket: a note, and the card there.
    let (_, detail) = d.call(&d.olga, "tickets/show", &[("id", &ticket)]).await;
    assert_eq!(detail["summary"]["status"], "AWAITING_APPROVAL");
    let notes = detail["notes"].to_string();
    assert!(notes.contains("which order is it?"), "{notes}");
    assert_eq!(
        detail["proposals"][0]["comments"][0]["text"],
        "which order is it?"
    );
    assert_eq!(
        d.audit_actions(since).await,
        vec![("sam".to_owned(), "proposal.comment".to_owned())]
    );
    // The ticket page shows it too.
    let html = d.html(&d.olga, &format!("/tickets/{ticket}")).await;
    assert!(html.contains("which order is it?"));

    // Bad input: an empty comment, an unknown proposal, a viewer's comment.
    let (status, _) = d
        .call(
            &d.sam,
            "fixes/comment",
            &[("proposal", &proposal), ("text", "  ")],
        )
        .await;
    assert_eq!(status, 400);
    let (status, _) = d
        .call(
            &d.sam,
            "fixes/comment",
            &[("proposal", "nope"), ("text", "hello")],
        )
        .await;
    assert_eq!(status, 404);

    // Rejected with a reason: the comment box's text is the decision's.
    let (status, res) = d
        .call(
            &d.sue,
            "fixes/reject",
            &[("proposal", &proposal), ("comment", "no order matches")],
        )
        .await;
    assert_eq!(status, 200, "{res}");
    let (_, all) = d.call(&d.sue, "fixes/list", &[("status", "ALL")]).await;
    let decided = all
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == proposal.as_str())
        .unwrap();
    assert_eq!(decided["status"], "REJECTED");
    assert_eq!(decided["decision_comment"], "no order matches");
}

both_databases!(
    a_replay_is_listed_beside_the_original_outcome_it_leaves_alone,
    identical_redeliveries_are_counted_apart_from_other_bytes,
    without_a_sink_the_outbox_says_why_nothing_can_be_resent,
    the_payment_page_links_its_outbox_messages_and_payloads_read_as_json,
    audit_days_are_business_days,
    the_ticket_page_shows_times_in_the_business_zone,
    every_list_shows_its_times_in_the_business_zone,
    a_proposal_is_commented_on_without_a_decision_and_decided_with_one,
);
