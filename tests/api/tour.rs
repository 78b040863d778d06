//! What a person meets touring the console: a replay beside the callback's
//! original outcome, identical redeliveries counted apart from other bytes,
//! the outbox without a sink, a payment's outbox messages, the audit log's
//! business days and a comment on a proposal — through the server functions
//! and the pages over HTTP, on SQLite and PostgreSQL.

use crate::both_databases;
use crate::helpers::Backend;
use crate::triage::{Desk, desk};

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

both_databases!(
    a_replay_is_listed_beside_the_original_outcome_it_leaves_alone,
    identical_redeliveries_are_counted_apart_from_other_bytes,
);
