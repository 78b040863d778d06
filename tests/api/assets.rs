//! The console as a browser receives it: its compiled assets under their
//! fingerprint, cached for good and sent precompressed; its pages and data
//! compressed, never stored, never framed, running only the scripts the
//! page names. No database is involved: SQLite only.

use crate::helpers::{Backend, client, spawn_app_with};
use reckon::startup::Options;
use std::path::Path;

/// A site folder as the build writes it, with made-up bytes: each asset and
/// its brotli and gzip copies (told apart by their contents).
fn site(dir: &Path) {
    let pkg = dir.join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    for (name, body) in [
        (
            "reckon.js",
            "export default function init() {}\n".repeat(40),
        ),
        ("reckon_bg.wasm", "\0asm plain ".repeat(400)),
        ("reckon.css", "body { margin: 0 }\n".repeat(40)),
    ] {
        std::fs::write(pkg.join(name), &body).unwrap();
        std::fs::write(pkg.join(format!("{name}.br")), format!("br of {name}")).unwrap();
        std::fs::write(pkg.join(format!("{name}.gz")), format!("gz of {name}")).unwrap();
    }
}

fn header<'a>(res: &'a reqwest::Response, name: &str) -> &'a str {
    res.headers()
        .get(name)
        .map(|v| v.to_str().unwrap())
        .unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assets_are_fingerprinted_precompressed_and_pages_locked_down() {
    let dir = tempfile::tempdir().unwrap();
    site(dir.path());
    let site_dir = dir.path().to_path_buf();
    let app = spawn_app_with(
        Backend::Sqlite,
        |c| c.site_dir = site_dir,
        Options::default(),
    )
    .await;

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
        .expect("a stylesheet under /pkg/<fingerprint>/");
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
    assert_eq!(gz.text().await.unwrap(), "gz of reckon.js");
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
}
