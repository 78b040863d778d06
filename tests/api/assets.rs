//! The console as a browser receives it: its compiled assets under their
//! fingerprint, cached for good and sent precompressed; its pages and data
//! compressed, never stored, never framed, running only the scripts the
//! page names. No database is involved: SQLite only.

use crate::helpers::{Backend, client, spawn_app_with};
use reckon::startup::Options;
use reckon::web::assets::{Embedded, Site};
use std::path::{Path, PathBuf};

/// `tests/fixtures/site`: a site as `.ci/lib.sh` writes it (`pkg/` with a
/// brotli and a gzip copy beside each file, `public/`'s icon at the top),
/// with made-up bytes: each copy says which it is, so a test sees which one
/// went out. Embedded here as a release build embeds `target/site`.
#[derive(rust_embed::RustEmbed)]
#[folder = "tests/fixtures/site"]
struct Fixture;

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/site")
}

fn header<'a>(res: &'a reqwest::Response, name: &str) -> &'a str {
    res.headers()
        .get(name)
        .map(|v| v.to_str().unwrap())
        .unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assets_are_fingerprinted_precompressed_and_pages_locked_down() {
    // A site folder (RECKON_SITE_DIR), a copy of the fixture.
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture_dir(), dir.path());
    let site_dir = dir.path().to_path_buf();
    let app = spawn_app_with(
        Backend::Sqlite,
        |c| c.site_dir = Some(site_dir),
        Options::default(),
    )
    .await;
    serves_the_console(&app).await;
}

/// What a release binary does with no RECKON_SITE_DIR: the files built
/// into it, with the same fingerprint, negotiation and caching.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_site_is_served_as_the_folder_is() {
    let embedded = Embedded::of::<Fixture>();
    assert!(!embedded.is_empty());
    let folder = Site::Dir(fixture_dir()).fingerprint().unwrap();
    assert_eq!(
        Site::Embedded(embedded.clone()).fingerprint(),
        Some(folder.clone())
    );
    // No folder named: the embedded files win over a build beside the binary.
    let chosen = Site::choose(None, embedded.clone(), Some(fixture_dir()));
    assert!(matches!(chosen, Site::Embedded(_)), "{chosen:?}");
    let app = spawn_app_with(
        Backend::Sqlite,
        |c| c.site_dir = None,
        Options {
            embedded,
            ..Options::default()
        },
    )
    .await;
    let fingerprint = serves_the_console(&app).await;
    assert_eq!(fingerprint, folder);
    // Nothing of the host's disk is served in its place.
    let http = client();
    for path in ["/Cargo.toml", "/pkg/reckon.js", "/etc/passwd"] {
        let res = http
            .get(format!("{}{path}", app.base))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 404, "{path}");
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The console's pages and assets as a browser receives them; the
/// fingerprint the page names.
async fn serves_the_console(app: &crate::helpers::TestApp) -> String {
    // The sign-in page names its assets by fingerprint.
    let page = app.get("/login").await;
    assert_eq!(page.status(), 200);
    assert_eq!(header(&page, "x-frame-options"), "DENY");
    assert_eq!(header(&page, "x-content-type-options"), "nosniff");
    assert_eq!(header(&page, "cache-control"), "no-store");
    let policy = header(&page, "content-security-policy").to_owned();
    let html = page.text().await.unwrap();
    let fingerprint = html
        .split("href=\"/pkg/")
        .filter_map(|rest| rest.split('"').next())
        .find_map(|href| href.strip_suffix("/reckon.css"))
        .expect("a stylesheet under /pkg/<fingerprint>/")
        .to_owned();
    assert_eq!(fingerprint.len(), 16, "{fingerprint}");
    assert!(html.contains(&format!("/pkg/{fingerprint}/reckon.js")));
    // Its inline scripts carry the nonce the policy allows, and only those run.
    let nonce = policy
        .split("'nonce-")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .expect("a nonce in the policy");
    assert!(nonce.len() >= 16, "{policy}");
    assert!(html.contains(&format!("nonce=\"{nonce}\"")), "{html}");
    for directive in [
        "frame-ancestors 'none'",
        "object-src 'none'",
        "'wasm-unsafe-eval'",
    ] {
        assert!(policy.contains(directive), "{policy}");
    }
    let scripts = policy
        .split(';')
        .find(|d| d.trim_start().starts_with("script-src"))
        .unwrap();
    assert!(!scripts.contains("'unsafe-inline'") && !scripts.contains("'unsafe-eval'"));
    // Another page, another nonce.
    let again = app.get("/login").await;
    assert_ne!(header(&again, "content-security-policy"), policy);

    // The asset: the browser's preferred copy, cached for good.
    let http = client();
    let url = |path: &str| format!("{}{path}", app.base);
    let wasm = http
        .get(url(&format!("/pkg/{fingerprint}/reckon_bg.wasm")))
        .header("accept-encoding", "gzip, deflate, br")
        .send()
        .await
        .unwrap();
    assert_eq!(wasm.status(), 200);
    assert_eq!(header(&wasm, "content-encoding"), "br");
    assert_eq!(header(&wasm, "content-type"), "application/wasm");
    assert_eq!(
        header(&wasm, "cache-control"),
        "public, max-age=31536000, immutable"
    );
    assert_eq!(wasm.text().await.unwrap(), "br of reckon_bg.wasm");
    let gz = http
        .get(url(&format!("/pkg/{fingerprint}/reckon.js")))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(header(&gz, "content-encoding"), "gzip");
    assert!(
        header(&gz, "vary")
            .to_ascii_lowercase()
            .contains("accept-encoding")
    );
    assert_eq!(gz.text().await.unwrap(), "gz of reckon.js");
    // A coding refused by weight 0 is not sent, however preferred.
    let refused = http
        .get(url(&format!("/pkg/{fingerprint}/reckon.js")))
        .header("accept-encoding", "br;q=0, gzip;q=0.5")
        .send()
        .await
        .unwrap();
    assert_eq!(header(&refused, "content-encoding"), "gzip");
    assert_eq!(refused.text().await.unwrap(), "gz of reckon.js");
    let plain = http
        .get(url(&format!("/pkg/{fingerprint}/reckon.css")))
        .send()
        .await
        .unwrap();
    assert_eq!(header(&plain, "content-encoding"), "");
    assert!(
        plain
            .text()
            .await
            .unwrap()
            .starts_with("body { margin: 0 }")
    );
    // An old build's fingerprint is not this one: not found, not cached.
    let stale = http
        .get(url("/pkg/0123456789abcdef/reckon_bg.wasm"))
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), 404);
    assert_ne!(
        header(&stale, "cache-control"),
        "public, max-age=31536000, immutable"
    );

    // Pages and data are compressed for a browser that takes it.
    let compressed = http
        .get(url("/login"))
        .header("accept-encoding", "br")
        .send()
        .await
        .unwrap();
    assert_eq!(header(&compressed, "content-encoding"), "br");
    // An API error is still the one JSON shape, compressed or not.
    let missing = http
        .get(url("/api/v1/no-such-route"))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    assert_eq!(header(&missing, "content-type"), "application/json");

    // The site's icon, at its own path, looked at again on each visit.
    let icon = http.get(url("/favicon.svg")).send().await.unwrap();
    assert_eq!(icon.status(), 200);
    assert_eq!(header(&icon, "content-type"), "image/svg+xml");
    assert_eq!(header(&icon, "cache-control"), "no-cache");
    assert_eq!(header(&icon, "x-content-type-options"), "nosniff");
    assert!(icon.text().await.unwrap().contains("<svg"));
    fingerprint
}
