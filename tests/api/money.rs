//! Money and times as the console serves them to people: a run's checks,
//! a ticket's amounts and reason in major units with the currency and
//! grouped digits; audit entries linked to their object's page; the
//! business time zone in the session every page reads.

use crate::both_databases;
use crate::helpers::Backend;
use crate::recon::{row, statement};
use crate::triage::{desk, desk_with};
use serde_json::Value;

async fn a_runs_checks_and_its_tickets_read_in_major_units(b: Backend) {
    let d = desk(b).await;
    let (day, at) = d.app.today();
    // Paid 99,898.84 here; the statement says 99,898.85.
    let p = d
        .app
        .paid_with("MONEY-A", 9_989_884, "99898.84", "SBX-MA")
        .await;
    let rows = [row(
        "payment",
        "SBX-MA",
        &p,
        ("", ""),
        "99898.85",
        "CNY",
        &at,
    )];
    let (status, run) = d.app.upload(&d.token, &day, &statement(&rows)).await;
    assert_eq!(status, 201, "{run}");

    // The runs page: the total with its currency, the count as it is; the
    // statement's own name of the figure kept beside.
    let (status, runs) = d.call(&d.olga, "runs/list", &[]).await;
    assert_eq!(status, 200, "{runs}");
    let checks = runs["items"][0]["checks"].as_array().unwrap().clone();
    let check = |what: &str| -> Value {
        checks
            .iter()
            .find(|c| c["what"] == what)
            .cloned()
            .unwrap_or_else(|| panic!("a {what} check: {checks:?}"))
    };
    let total = check("total_minor");
    assert_eq!(total["label"], "total", "{total}");
    assert_eq!(total["stated_text"], "99,898.85 CNY", "{total}");
    assert_eq!(total["read_text"], "99,898.85 CNY", "{total}");
    assert_eq!(total["stated"], 9_989_885, "the figure itself is unchanged");
    assert_eq!(total["holds"], true);
    let count = check("rows");
    assert_eq!(
        (&count["stated_text"], &count["read_text"]),
        (&Value::from("1"), &Value::from("1"))
    );

    // The ticket: both amounts and its reason in major units.
    let (status, list) = d
        .call(
            &d.olga,
            "tickets/list",
            &[("filter[class]", "AMOUNT_MISMATCH")],
        )
        .await;
    assert_eq!(status, 200, "{list}");
    let t = &list["items"][0];
    assert_eq!(t["local_amount"], "99,898.84 CNY", "{t}");
    assert_eq!(t["provider_amount"], "99,898.85 CNY", "{t}");
    let id = t["id"].as_str().unwrap().to_owned();
    let (status, detail) = d.call(&d.olga, "tickets/show", &[("id", &id)]).await;
    assert_eq!(status, 200, "{detail}");
    assert_eq!(
        detail["reason"], "statement 99,898.85 CNY, local 99,898.84 CNY",
        "{detail}"
    );
    assert!(
        !detail.to_string().contains("minor units"),
        "no figure in minor units: {detail}"
    );

    // A proposal's audit entry links to its ticket; a payment's, to it.
    let (status, proposal) = d
        .call(
            &d.olga,
            "fixes/propose",
            &[
                ("id", &id),
                ("kind", "ACCEPT_AMOUNT"),
                ("reason", "provider surcharge confirmed"),
                ("evidence", "mail from the provider, ref 78"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{proposal}");
    let (status, audit) = d.call(&d.sam, "audit/list", &[]).await;
    assert_eq!(status, 200, "{audit}");
    let entries = audit["items"].as_array().unwrap();
    let proposed = entries
        .iter()
        .find(|e| e["object_type"] == "proposal" && e["object_id"] == proposal)
        .unwrap_or_else(|| panic!("the proposal's entry: {audit}"));
    assert_eq!(proposed["link"], format!("/tickets/{id}"), "{proposed}");
    for e in entries.iter().filter(|e| e["object_type"] == "ticket") {
        assert_eq!(
            e["link"],
            format!("/tickets/{}", e["object_id"].as_str().unwrap())
        );
    }
}

async fn the_session_carries_the_business_time_zone(b: Backend) {
    let d = desk_with(b, |c| c.timezone = "Asia/Shanghai".into()).await;
    let (status, session) = d.call(&d.olga, "session", &[]).await;
    assert_eq!(status, 200, "{session}");
    let zone: app::format::Zone = serde_json::from_value(session["zone"].clone()).unwrap();
    assert_eq!(zone.name(), "Asia/Shanghai");
    // 2026-12-04 09:05 UTC is 17:05 in Shanghai, and the page says where.
    assert_eq!(
        zone.named(1_796_375_130_000_000),
        "2026-12-04 17:05 Asia/Shanghai"
    );
    // Signed out, the login page reads times the same way.
    let anonymous = crate::helpers::client();
    let res = d.app.app.call_with(&anonymous, "session", &[]).await;
    let session: Value = res.json().await.unwrap();
    assert_eq!(session["zone"]["name"], "Asia/Shanghai", "{session}");
}

both_databases!(
    a_runs_checks_and_its_tickets_read_in_major_units,
    the_session_carries_the_business_time_zone,
);
