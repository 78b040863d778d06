//! Statement uploads that tell the truth, over real HTTP on SQLite and
//! PostgreSQL: a field of megabytes is refused with a short quote, and no
//! run stored before or since makes the runs pages large; another
//! provider's bill is named and starts no run; a file already reconciled
//! says so.

use crate::both_databases;
use crate::engine_helpers::EngineApp;
use crate::helpers::Backend;
use crate::recon::{row, statement};
use crate::triage::desk;
use serde_json::Value;

/// Larger than any page listing runs may be.
const PAGE_LIMIT: usize = 200 * 1024;

impl EngineApp {
    async fn run_count(&self) -> i64 {
        crate::reads::runs(self.pool()).await
    }

    /// The console's upload as a browser sends it: where it sends back to,
    /// decoded.
    async fn console_upload(
        &self,
        who: &reqwest::Client,
        provider: &str,
        date: &str,
        bytes: Vec<u8>,
    ) -> String {
        let form = reqwest::multipart::Form::new()
            .text("provider", provider.to_owned())
            .text("business_date", date.to_owned())
            .part(
                "file",
                reqwest::multipart::Part::bytes(bytes).file_name("bill.csv"),
            );
        let res = who
            .post(format!("{}/runs/upload", self.app.base))
            .headers(self.app.origin())
            .multipart(form)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 303);
        // The address as a person reads it: form-encoded ('+' a space).
        let to = res.headers()["location"]
            .to_str()
            .unwrap()
            .replace('+', " ");
        percent_encoding::percent_decode_str(&to)
            .decode_utf8_lossy()
            .into_owned()
    }
}

/// A page's body as a signed-in browser gets it, and its status.
async fn page(who: &reqwest::Client, app: &EngineApp, path: &str) -> (u16, String) {
    let res = who
        .get(format!("{}{path}", app.app.base))
        .header("accept", "text/html,application/xhtml+xml,*/*;q=0.8")
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

async fn a_field_of_megabytes_is_refused_with_a_short_quote_and_pages_stay_small(b: Backend) {
    let d = desk(b).await;
    let app = &d.app;
    let (date, at) = app.today();
    let big = "Z".repeat(5 * 1024 * 1024);
    let file = statement(&[
        row("payment", "SBX-B1", "PAY-B1", ("", ""), "1.00", "CNY", &at),
        row("payment", "SBX-B2", &big, ("", ""), "1.00", "CNY", &at),
    ]);
    let line = format!("payment,SBX-B2,{big},,,SUCCEEDED,1.00,CNY,{at}");
    let (status, answer) = app.upload_only(&d.token, &date, &file).await;
    assert_eq!(
        status,
        422,
        "{}",
        &answer.to_string()[..2000.min(answer.to_string().len())]
    );
    let error = answer["error"].as_str().unwrap();
    assert!(error.len() < 1024, "{} bytes", error.len());
    assert!(error.contains("line 3"), "{error}");
    let quoted = format!(
        "\"payment,SBX-B2,ZZZZ{}…\" ({} bytes)",
        "Z".repeat(100 - "payment,SBX-B2,ZZZZ".len()),
        reckon::domain::grouped(line.len() + 1)
    );
    assert!(error.contains(&quoted), "{error}");
    // The run says the same, as briefly, and is not offered for resume:
    // only a pull resumes.
    let (run_id, stored): (String, String) =
        sqlx::query_as("SELECT run_id, error FROM recon_runs WHERE status = 'FAILED'")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert!(stored.len() <= 2048 && stored.contains(&quoted), "{stored}");
    let res = app
        .app
        .client
        .post(format!(
            "{}/api/v1/recon/runs/{run_id}/resume",
            app.app.base
        ))
        .bearer_auth(&d.token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400, "an upload does not resume");

    // A run stored before errors and names were bounded: its 20 MB error,
    // name and summary make no page that lists it large.
    let huge = "E".repeat(20 * 1024 * 1024);
    sqlx::query(
        "UPDATE recon_runs SET error = $1, file_name = $2, summary_json = $3 WHERE run_id = $4",
    )
    .bind(&huge)
    .bind(&huge[..1024 * 1024])
    .bind(format!("{{\"checks\":[],\"skipped\":[\"{huge}\"]}}"))
    .bind(&run_id)
    .execute(app.pool())
    .await
    .unwrap();
    drop(huge);
    let (status, body) = page(&d.olga, app, "/runs").await;
    assert_eq!(status, 200);
    assert!(body.len() < PAGE_LIMIT, "/runs is {} bytes", body.len());
    assert!(body.contains(&run_id), "the run is listed");
    assert!(body.contains("EEEE"), "its error, cut");
    let row_of_run = body
        .split(&format!("data-run=\"{run_id}\""))
        .nth(1)
        .unwrap();
    let row_of_run = row_of_run.split("</tr>").next().unwrap();
    assert!(!row_of_run.contains("resume-submit"), "{row_of_run}");
    let res = app.app.call_with(&d.olga, "runs/list", &[]).await;
    assert_eq!(res.status(), 200);
    let listed = res.text().await.unwrap();
    assert!(
        listed.len() < PAGE_LIMIT,
        "runs/list is {} bytes",
        listed.len()
    );
    let res = app
        .app
        .client
        .get(format!("{}/api/v1/recon/runs/{run_id}", app.app.base))
        .bearer_auth(&d.token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let shown = res.text().await.unwrap();
    assert!(
        shown.len() < PAGE_LIMIT,
        "the API's run is {} bytes",
        shown.len()
    );
    let shown: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(shown["status"], "FAILED");

    // The server goes on answering: a good statement is read.
    let p = app.paid_with("BIG-OK", 100, "1.00", "SBX-OK").await;
    let good = statement(&[row("payment", "SBX-OK", &p, ("", ""), "1.00", "CNY", &at)]);
    let (status, run) = app.upload_only(&d.token, &date, &good).await;
    assert_eq!(status, 201, "{run}");
    assert_eq!(run["status"], "COMPLETED", "{run}");
    let (status, _) = page(&d.olga, app, "/runs").await;
    assert_eq!(status, 200);
}

/// A form field longer than any of its values is refused by its name,
/// not read whole.
async fn an_overlong_form_field_is_refused_by_its_name(b: Backend) {
    let d = desk(b).await;
    let app = &d.app;
    let (date, _) = app.today();
    let form = reqwest::multipart::Form::new()
        .text("provider", "p".repeat(100 * 1024))
        .text("business_date", date)
        .part("file", reqwest::multipart::Part::bytes(b"x\n".to_vec()));
    let res = app
        .app
        .client
        .post(format!("{}/api/v1/recon/runs", app.app.base))
        .bearer_auth(&d.token)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    let body = res.text().await.unwrap();
    assert!(body.len() < 1024, "{} bytes", body.len());
    assert!(body.contains("provider"), "{body}");
    assert_eq!(app.run_count().await, 0);
}

/// Another provider's bill is named, with where it belongs: no run is
/// started for it, through the API or the console.
async fn another_providers_bill_is_named_and_starts_no_run(b: Backend) {
    let app = crate::recon::bills::spawn(b).await;
    let token = app.token().await;
    let (date, at) = app.today();
    let wechat_all = crate::recon::bills::fixture("wechatpay_all.csv");
    // No WeChat Pay account here but this one: sent to Alipay's.
    let (status, answer) = app
        .upload_bill(&token, "alipay", &date, ("all.csv", wechat_all.clone()))
        .await;
    assert_eq!(status, 422, "{answer}");
    let error = answer["error"].as_str().unwrap();
    assert!(
        error.contains("this is a WeChat Pay ALL bill; you chose alipay: upload it for wechat"),
        "{error}"
    );
    let sandbox = statement(&[row(
        "payment",
        "SBX-W",
        "PAY-W",
        ("", ""),
        "1.00",
        "CNY",
        &at,
    )]);
    let (status, answer) = app
        .upload_bill(&token, "wechat", &date, ("s.csv", sandbox.into_bytes()))
        .await;
    assert_eq!(status, 422, "{answer}");
    let error = answer["error"].as_str().unwrap();
    assert!(
        error.contains(
            "this is a sandbox statement; you chose wechat (WeChat Pay): upload it for sandbox"
        ),
        "{error}"
    );
    assert_eq!(app.run_count().await, 0, "no run was started");
    // The console says the same, and starts no run either.
    let olga = crate::schedule::signed_in(&app).await;
    let to = app
        .console_upload(&olga, "alipay", &date, wechat_all.clone())
        .await;
    assert!(to.starts_with("/runs?err="), "{to}");
    assert!(!to.contains("run="), "{to}");
    assert!(to.contains("this is a WeChat Pay ALL bill"), "{to}");
    assert_eq!(app.run_count().await, 0);

    // A provider of which no account is configured.
    let only_sandbox = crate::engine_helpers::spawn_engine_app(b).await;
    let token = only_sandbox.token().await;
    let (status, answer) = only_sandbox
        .upload_bill(&token, "sandbox", &date, ("all.csv", wechat_all))
        .await;
    assert_eq!(status, 422, "{answer}");
    let error = answer["error"].as_str().unwrap();
    assert!(
        error.contains("this is a WeChat Pay ALL bill; no WeChat Pay account is configured"),
        "{error}"
    );
    assert_eq!(only_sandbox.run_count().await, 0);
}

/// The same file for the same day again: the earlier run, saying so.
async fn a_file_already_reconciled_says_so(b: Backend) {
    let d = desk(b).await;
    let app = &d.app;
    let (date, at) = app.today();
    let p = app.paid_with("SAME-1", 100, "1.00", "SBX-SAME").await;
    let file = statement(&[row("payment", "SBX-SAME", &p, ("", ""), "1.00", "CNY", &at)]);
    let (status, first) = app.upload_only(&d.token, &date, &file).await;
    assert_eq!(status, 201, "{first}");
    assert!(first.get("note").is_none(), "{first}");
    let (status, again) = app.upload_only(&d.token, &date, &file).await;
    assert_eq!(status, 200, "nothing created: {again}");
    assert_eq!(again["run_id"], first["run_id"]);
    let note = again["note"].as_str().unwrap();
    assert!(
        note.contains("already reconciled") && note.contains(first["run_id"].as_str().unwrap()),
        "{note}"
    );
    let to = app
        .console_upload(&d.olga, "sandbox", &date, file.into_bytes())
        .await;
    assert!(
        to.contains(&format!("run={}", first["run_id"].as_str().unwrap())),
        "{to}"
    );
    assert!(to.contains("already reconciled"), "{to}");
    assert_eq!(app.run_count().await, 1);
}

/// The console refuses an upload the import would refuse with the
/// import's own words, as the API does, and starts no run: a provider
/// not configured, a day that is not one.
async fn the_console_refuses_an_upload_in_the_imports_words(b: Backend) {
    let d = desk(b).await;
    let app = &d.app;
    let (date, at) = app.today();
    let file = statement(&[row(
        "payment",
        "SBX-W1",
        "PAY-W1",
        ("", ""),
        "1.00",
        "CNY",
        &at,
    )]);
    for (provider, day, says) in [
        (
            "nowhere",
            date.as_str(),
            "provider \"nowhere\" is not configured",
        ),
        (
            "sandbox",
            "2026-02-30",
            "business date \"2026-02-30\" is not YYYY-MM-DD",
        ),
    ] {
        let (status, answer) = app
            .upload_bill(
                &d.token,
                provider,
                day,
                ("s.csv", file.clone().into_bytes()),
            )
            .await;
        assert_eq!(status, 400, "{answer}");
        assert_eq!(answer["error"], says, "{answer}");
        let to = app
            .console_upload(&d.olga, provider, day, file.clone().into_bytes())
            .await;
        // The error, as the runs page reads it from its address.
        let err = to.strip_prefix("/runs?err=").expect(&to);
        let err: Value = serde_json::Deserializer::from_str(err)
            .into_iter()
            .next()
            .expect(&to)
            .unwrap();
        assert_eq!(err["Invalid"]["detail"], says, "{to}");
    }
    assert_eq!(app.run_count().await, 0, "no run was started");
}

fn gzipped(text: &str) -> Vec<u8> {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(text.as_bytes()).unwrap();
    gz.finish().unwrap()
}

fn zipped(entries: &[(&str, &str)]) -> Vec<u8> {
    use std::io::Write;
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, text) in entries {
        zip.start_file(*name, zip::write::SimpleFileOptions::default())
            .unwrap();
        zip.write_all(text.as_bytes()).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

/// A statement uploaded gzipped or zipped, as providers' portals hand
/// bills out, is read as the file inside: one run, whichever way it came
/// (the same statement sent again another way is already reconciled). A
/// damaged gzip and a zip of two statements are refused by name and start
/// no run.
async fn a_gzipped_or_zipped_statement_is_read_as_the_file_inside(b: Backend) {
    let d = desk(b).await;
    let app = &d.app;
    let (date, at) = app.today();
    let p = app.paid_with("GZ-1", 100, "1.00", "SBX-GZ").await;
    let file = statement(&[row("payment", "SBX-GZ", &p, ("", ""), "1.00", "CNY", &at)]);
    let broken = gzipped(&file)[..24].to_vec();
    let two = zipped(&[("a.csv", &file), ("b.csv", &file)]);
    for (name, bytes, says) in [
        ("bill.csv.gz", broken, "\"bill.csv.gz\": does not gunzip"),
        (
            "bills.zip",
            two,
            "\"bills.zip\": the zip holds 2 .csv files (\"a.csv\", \"b.csv\")",
        ),
    ] {
        let (status, answer) = app
            .upload_bill(&d.token, "sandbox", &date, (name, bytes))
            .await;
        assert_eq!(status, 400, "{answer}");
        let error = answer["error"].as_str().unwrap();
        assert!(error.starts_with(says), "{error}");
    }
    assert_eq!(app.run_count().await, 0, "no run was started");

    let (status, run) = app
        .upload_bill(&d.token, "sandbox", &date, ("bill.csv.gz", gzipped(&file)))
        .await;
    assert_eq!(status, 201, "{run}");
    assert_eq!(run["status"], "COMPLETED", "{run}");
    assert_eq!(run["rows_read"], 1, "{run}");
    assert_eq!(run["file_name"], "bill.csv", "{run}");
    for (name, bytes) in [
        ("bill.zip", zipped(&[("statement.csv", &file)])),
        ("bill.csv", file.clone().into_bytes()),
    ] {
        let (status, again) = app
            .upload_bill(&d.token, "sandbox", &date, (name, bytes))
            .await;
        assert_eq!(status, 200, "{name}: {again}");
        assert_eq!(again["run_id"], run["run_id"], "{name}: {again}");
    }
    assert_eq!(app.run_count().await, 1);
}

both_databases!(
    a_field_of_megabytes_is_refused_with_a_short_quote_and_pages_stay_small,
    an_overlong_form_field_is_refused_by_its_name,
    another_providers_bill_is_named_and_starts_no_run,
    a_file_already_reconciled_says_so,
    the_console_refuses_an_upload_in_the_imports_words,
    a_gzipped_or_zipped_statement_is_read_as_the_file_inside,
);
