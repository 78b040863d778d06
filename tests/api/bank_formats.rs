//! The bank side's other statement formats: SWIFT MT940 and BAI2, the same
//! day's Stripe payouts as the camt.053 journey (`bank`), matched with the
//! same outcomes; the banks' and the specification's published samples
//! imported; statements that do not add up refused with nothing stored,
//! over the API, the CLI and the bank page. Each on SQLite and PostgreSQL.

use crate::bank::{
    bank_tickets, count, fixture, payout_states, stripe_with_payouts, token, upload,
};
use crate::both_databases;
use crate::helpers::{Backend, TestApp};
use app::types::Role;
use serde_json::{Value, json};

/// 2026-12-01 as the `bank` journey's payouts have it.
const DAY_START: i64 = 1_796_083_200;

async fn entry_states(app: &TestApp) -> Vec<(i64, String)> {
    sqlx::query_as("SELECT line_no, state FROM bank_entries ORDER BY line_no")
        .fetch_all(&app.accounts.db.pool)
        .await
        .unwrap()
}

/// Imports `file` (its format told by its content) and checks every
/// decision is the camt.053 journey's: two payouts matched, one short, one
/// missing after the window, one Stripe credit the bank's only.
async fn matches_as_camt053_does(b: Backend, file: &str, format: &str) {
    let s = stripe_with_payouts(b).await;
    let app = &s.app;
    let token = token(app).await;
    let bytes = fixture(file);
    let res = upload(app, &token, file, bytes.clone()).await;
    assert_eq!(res.status(), 201);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["statement"]["format"], format, "{body}");
    assert_eq!(body["statement"]["entries"], 6, "{body}");
    assert_eq!(body["statement"]["credits"], 5, "{body}");
    assert_eq!(
        body["statement"]["account"], "DE89370400440532013000",
        "{body}"
    );
    assert_eq!(
        body["matching"],
        json!({"matched": 2, "amount_mismatch": 1, "missing": 0, "bank_only": 0, "net_differs": 1, "late": 0}),
        "{body}"
    );
    let again = upload(app, &token, "copy", bytes).await;
    assert_eq!(again.status(), 200);
    assert_eq!(count(app, "bank_statements").await, 1);
    assert_eq!(count(app, "bank_entries").await, 6);

    // A week on, past the window.
    s.clock.set((DAY_START + 8 * 86_400) * 1_000_000);
    let res = app
        .client
        .post(format!("{}/api/v1/bank/match", app.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.json::<Value>().await.unwrap(),
        json!({"matched": 0, "amount_mismatch": 0, "missing": 1, "bank_only": 1, "net_differs": 0, "late": 0})
    );
    assert_eq!(
        payout_states(app).await,
        [
            ("po_1QaPAYOUTbydate".into(), "PAYOUT_MATCHED".into()),
            ("po_1QaPAYOUTmatched".into(), "PAYOUT_MATCHED".into()),
            ("po_1QaPAYOUTmissing".into(), "PAYOUT_MISSING".into()),
            ("po_1QaPAYOUTshort".into(), "PAYOUT_AMOUNT_MISMATCH".into()),
        ]
    );
    let tickets = bank_tickets(app).await;
    let shown: Vec<(&str, Option<&str>)> = tickets
        .iter()
        .map(|(class, _, _, txn)| (class.as_str(), txn.as_deref()))
        .collect();
    assert_eq!(
        shown,
        [
            ("BANK_ONLY", Some("20261204-0002")),
            ("PAYOUT_AMOUNT_MISMATCH", Some("po_1QaPAYOUTshort")),
            ("PAYOUT_AMOUNT_MISMATCH", Some("po_1QaPAYOUTshort")),
            ("PAYOUT_MISSING", Some("po_1QaPAYOUTmissing")),
        ]
    );
    let states = entry_states(app).await;
    let states: Vec<(i64, &str)> = states.iter().map(|(n, s)| (*n, s.as_str())).collect();
    assert_eq!(
        states,
        [
            (1, "MATCHED"),
            (2, "MATCHED"),
            (3, "MATCHED"),
            (4, "BANK_ONLY"),
            (5, "OUT_OF_SCOPE"),
            (6, "OUT_OF_SCOPE"),
        ]
    );
    // Which credit settled which payout: by its id, by its id in the text,
    // by amount and descriptor.
    let pairs: Vec<(String, i64)> = sqlx::query_as(
        "SELECT p.payout_id, e.line_no FROM payouts p JOIN bank_entries e ON e.entry_id = p.entry_id ORDER BY p.payout_id",
    )
    .fetch_all(&app.accounts.db.pool)
    .await
    .unwrap();
    assert_eq!(
        pairs,
        [
            ("po_1QaPAYOUTbydate".into(), 3),
            ("po_1QaPAYOUTmatched".into(), 1),
            ("po_1QaPAYOUTshort".into(), 2),
        ]
    );
}

async fn an_mt940_statement_matches_stripe_payouts_as_camt053_does(b: Backend) {
    matches_as_camt053_does(b, "mt940_stripe.sta", "mt940").await;
}

async fn a_bai2_file_matches_stripe_payouts_as_camt053_does(b: Backend) {
    matches_as_camt053_does(b, "bai2_stripe.txt", "bai2").await;
}

/// The banks' and the specification's own samples are read whole; none of
/// their entries is a payment provider's, so none is matched or ticketed.
async fn published_samples_are_imported_and_none_of_theirs_is_a_payout(b: Backend) {
    let s = stripe_with_payouts(b).await;
    let app = &s.app;
    let token = token(app).await;
    let mut entries = 0;
    for (file, format, n, account) in [
        ("mt940_danske_dk.sta", "mt940", 89, "DABADKKK/1234567890"),
        ("mt940_rabobank.sta", "mt940", 4, "NL71RABO0123456789"),
        ("bai2_spec_example.txt", "bai2", 4, "0123456789"),
        ("bai2_cad_sample.txt", "bai2", 17, "10200123456"),
    ] {
        let res = upload(app, &token, file, fixture(file)).await;
        assert_eq!(res.status(), 201, "{file}");
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["statement"]["format"], format, "{file}: {body}");
        assert_eq!(body["statement"]["entries"], n, "{file}: {body}");
        assert_eq!(body["statement"]["account"], account, "{file}: {body}");
        assert_eq!(body["matching"]["matched"], 0, "{file}: {body}");
        entries += n;
    }
    assert_eq!(count(app, "bank_statements").await, 4);
    assert_eq!(count(app, "bank_entries").await, entries);
    assert!(
        entry_states(app)
            .await
            .iter()
            .all(|(_, s)| s == "OUT_OF_SCOPE")
    );
    // Amounts kept in the currency's minor units: DKK's first debit, the
    // BAI2 example's letter of credit in US cents.
    let kept: Vec<(i64, String, String)> = sqlx::query_as(
        "SELECT amount_minor, currency, direction FROM bank_entries WHERE bank_ref IN ('SP4738') OR (currency = 'DKK' AND line_no = 1) ORDER BY currency",
    )
    .fetch_all(&app.accounts.db.pool)
    .await
    .unwrap();
    assert_eq!(
        kept,
        [
            (82_941_978, "DKK".into(), "DBIT".into()),
            (20_000_000, "USD".into(), "CRDT".into()),
        ]
    );
}

/// A statement whose balances or control totals do not agree, or that is
/// cut short, is refused whole with its reason: over the API, the CLI and
/// the bank page; nothing is stored and no payout moves.
async fn a_statement_that_does_not_add_up_is_refused_and_nothing_is_stored(b: Backend) {
    let s = stripe_with_payouts(b).await;
    let app = &s.app;
    let token = token(app).await;
    let mt940 = String::from_utf8(fixture("mt940_stripe.sta")).unwrap();
    let bai2 = String::from_utf8(fixture("bai2_stripe.txt")).unwrap();
    let cases = [
        (
            "closing.sta",
            mt940.replace(":62F:C261204EUR40585,77", ":62F:C261204EUR40585,78"),
            "statement 2 (:20: \"STMT261204\", :28C: \"239/1\"): the opening balance 39,038.00 EUR and its 4 entries make 40,585.77 EUR, but its closing balance says 40,585.78 EUR",
        ),
        (
            "gap.sta",
            mt940.replace(":60F:C261203EUR39038,00", ":60F:C261203EUR39038,01"),
            "statement 2 (:20: \"STMT261204\", :28C: \"239/1\") opens at 39,038.01 EUR but the statement before it closed at 39,038.00 EUR",
        ),
        (
            "amount.sta",
            mt940.replace("CR777,77NTRF", "CR777.77NTRF"),
            "statement 2 line 22: :61: \"2612041204CR777.77NTRFNONREF//20261204-0002\" amount \"777.77\" is not an MT940 amount like 1234,56",
        ),
        (
            "account.txt",
            bai2.replace("49,9011931,6/", "49,9011932,6/"),
            "line 15: the account \"DE89370400440532013000\" (line 10)'s control total says \"9011932\", but its amounts sum to 9011931",
        ),
        (
            "detail.txt",
            bai2.replace("16,195,77777,", "16,195,77778,"),
            "line 15: the account",
        ),
        (
            "records.txt",
            bai2.replace("99,18223331,2,17/", "99,18223331,2,16/"),
            "line 17: the file says \"16\" records, but it holds 17",
        ),
        (
            "cut.txt",
            bai2[..bai2.find("98,9011931").unwrap()].to_owned(),
            "the file ends before its trailer (99)",
        ),
    ];
    for (name, file, start) in cases {
        let res = upload(app, &token, name, file.into_bytes()).await;
        assert_eq!(res.status(), 400, "{name}");
        let body: Value = res.json().await.unwrap();
        let error = body["error"].as_str().unwrap();
        assert!(error.starts_with(start), "{name}: {error}");
    }
    // A format named that the file is not.
    let form = reqwest::multipart::Form::new()
        .part(
            "file",
            reqwest::multipart::Part::bytes(fixture("mt940_stripe.sta")).file_name("x.sta"),
        )
        .text("format", "bai2");
    let res = app
        .client
        .post(format!("{}/api/v1/bank/statements", app.base))
        .bearer_auth(&token)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    let body: Value = res.json().await.unwrap();
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("is not a BAI2 record"),
        "{body}"
    );
    // The CLI says the same and fails.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.bai");
    std::fs::write(&path, bai2.replace("98,9211400,1,7/", "98,9211400,2,7/")).unwrap();
    let out = app.cli(&["bank", "import", path.to_str().unwrap()], None);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("refused: line 8: the group says \"2\" accounts, but it holds 1"),
        "{stderr}"
    );
    assert_eq!(count(app, "bank_statements").await, 0);
    assert_eq!(count(app, "bank_entries").await, 0);
    assert!(payout_states(app).await.iter().all(|(_, s)| s == "PENDING"));
    // And, a good file through the CLI with its format named, matched.
    let path = dir.path().join("good.bai");
    std::fs::write(&path, &bai2).unwrap();
    let out = app.cli(
        &["bank", "import", path.to_str().unwrap(), "--format", "bai2"],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let imported: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(imported["statement"]["format"], "bai2");
    assert_eq!(imported["matching"]["matched"], 2, "{imported}");
}

/// The bank page offers MT940 and BAI2; an operator imports each there,
/// and a statement that does not add up comes back with its reason.
async fn the_bank_page_takes_mt940_and_bai2(b: Backend) {
    let s = stripe_with_payouts(b).await;
    let app = &s.app;
    let password = "correct horse battery";
    app.add_user("olga", Role::Operator, password).await;
    let olga = crate::helpers::client();
    let res = app
        .call_with(
            &olga,
            "login",
            &[("username", "olga"), ("password", password)],
        )
        .await;
    assert!(res.status().is_success() || res.status().is_redirection());
    let page = olga
        .get(format!("{}/bank", app.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for option in [
        "<option value=\"mt940\">",
        "<option value=\"bai2\">",
        "camt.053, MT940, BAI2",
    ] {
        assert!(page.contains(option), "{option} on the bank page");
    }
    let post = |name: &str, bytes: Vec<u8>, format: &str| {
        let form = reqwest::multipart::Form::new()
            .part(
                "file",
                reqwest::multipart::Part::bytes(bytes).file_name(name.to_owned()),
            )
            .text("format", format.to_owned())
            .text("csv_columns", "");
        olga.post(format!("{}/bank/upload", app.base))
            .headers(app.origin())
            .multipart(form)
            .send()
    };
    let location = |res: reqwest::Response| {
        assert_eq!(res.status(), 303);
        res.headers()["location"].to_str().unwrap().to_owned()
    };
    let bad = String::from_utf8(fixture("bai2_stripe.txt"))
        .unwrap()
        .replace("49,9211400,5/", "49,9211400,4/");
    let to = location(post("bad.txt", bad.into_bytes(), "bai2").await.unwrap());
    assert!(to.starts_with("/bank?err="), "{to}");
    let page = olga
        .get(format!("{}{to}", app.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("records, but it holds 5"),
        "the reason is on the page"
    );
    assert_eq!(count(app, "bank_statements").await, 0);
    for (name, format) in [("mt940_stripe.sta", "mt940"), ("bai2_cad_sample.txt", "")] {
        let to = location(post(name, fixture(name), format).await.unwrap());
        assert!(to.starts_with("/bank?statement="), "{name}: {to}");
    }
    let page = olga
        .get(format!("{}/bank", app.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("mt940_stripe.sta") && page.contains("bai2_cad_sample.txt"));
    assert_eq!(count(app, "bank_statements").await, 2);
}

both_databases!(
    an_mt940_statement_matches_stripe_payouts_as_camt053_does,
    a_bai2_file_matches_stripe_payouts_as_camt053_does,
    published_samples_are_imported_and_none_of_theirs_is_a_payout,
    a_statement_that_does_not_add_up_is_refused_and_nothing_is_stored,
    the_bank_page_takes_mt940_and_bai2,
);
