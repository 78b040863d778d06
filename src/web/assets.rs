//! The console's compiled assets (`pkg/`: the WebAssembly, its loader, the
//! style sheet) under a path that changes with their content,
//! `/pkg/<fingerprint>/…`, so a browser keeps them a year and never asks
//! again until a new build; the brotli and gzip copies the build writes
//! beside each file go to browsers that accept them.

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use tower_http::services::ServeDir;

const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// The hash of `site/pkg`'s files (names and bytes, in name order; not
/// their compressed copies): 16 hex digits, or none without a build. One
/// reading per site folder and process — a build replaces the folder and
/// restarts the server.
pub fn fingerprint(site: &Path) -> Option<String> {
    static SEEN: OnceLock<Mutex<HashMap<PathBuf, Option<String>>>> = OnceLock::new();
    let seen = SEEN.get_or_init(Default::default);
    let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
    seen.entry(site.to_path_buf())
        .or_insert_with(|| hash_pkg(&site.join("pkg")))
        .clone()
}

fn hash_pkg(dir: &Path) -> Option<String> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name())
        .filter(|n| {
            let ext = Path::new(n).extension().and_then(|e| e.to_str());
            !matches!(ext, Some("br" | "gz"))
        })
        .collect();
    if names.is_empty() {
        return None;
    }
    names.sort();
    let mut hash = Sha256::new();
    for name in names {
        hash.update(name.as_encoded_bytes());
        hash.update([0]);
        hash.update(std::fs::read(dir.join(&name)).ok()?);
    }
    Some(hex::encode(&hash.finalize()[..8]))
}

/// `/pkg/<fingerprint>/…` from `site/pkg`, precompressed where the build
/// wrote the copies; cached for good only when found.
pub fn router<S: Clone + Send + Sync + 'static>(site: &Path, fingerprint: &str) -> Router<S> {
    let files = ServeDir::new(site.join("pkg"))
        .precompressed_br()
        .precompressed_gzip();
    Router::new()
        .nest_service(&format!("/pkg/{fingerprint}"), files)
        .layer(middleware::from_fn(cached_for_good))
}

async fn cached_for_good(req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    if res.status() == StatusCode::OK {
        res.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static(IMMUTABLE));
    }
    res
}
