//! The console's compiled assets (`pkg/`: the WebAssembly, its loader, the
//! style sheet) under a path that changes with their content,
//! `/pkg/<fingerprint>/…`, so a browser keeps them a year and never asks
//! again until a new build; the brotli and gzip copies the build writes
//! beside each file go to browsers that accept them.
//!
//! They come from the binary itself (a release build embeds the site the
//! build wrote, `build.rs`), or from a folder: `RECKON_SITE_DIR`, or a
//! development build's `target/site` when the binary embeds none.

use axum::Router;
use axum::extract::{Path as UrlPath, Request};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rust_embed::{EmbeddedFile, RustEmbed};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use tower_http::services::ServeDir;

const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// The site this binary was built with (an empty folder when none was).
#[derive(RustEmbed)]
#[folder = "$RECKON_EMBEDDED_SITE"]
struct Built;

/// A set of files built into the binary, by their path in the site
/// (`pkg/reckon.js`, `favicon.svg`).
#[derive(Clone)]
pub struct Embedded(Arc<BTreeMap<String, EmbeddedFile>>);

impl Embedded {
    /// The files of an embedded folder (a test embeds a fixture).
    pub fn of<E: RustEmbed>() -> Embedded {
        let files = E::iter()
            .filter_map(|name| Some((name.to_string(), E::get(&name)?)))
            .collect();
        Embedded(Arc::new(files))
    }

    /// The site built into this binary.
    pub fn built() -> Embedded {
        Embedded::of::<Built>()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn fingerprint(&self) -> Option<String> {
        let pkg = self
            .0
            .iter()
            .filter_map(|(name, file)| Some((name.strip_prefix("pkg/")?, file)))
            .filter(|(name, _)| !name.contains('/') && !is_copy(name))
            .map(|(name, file)| (name.to_owned(), file.data.to_vec()));
        hash_files(pkg)
    }
}

impl fmt::Debug for Embedded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Embedded({} files)", self.0.len())
    }
}

/// Where the console's compiled files are served from.
#[derive(Clone, Debug)]
pub enum Site {
    Embedded(Embedded),
    Dir(PathBuf),
}

impl Site {
    /// A folder named by the settings (`RECKON_SITE_DIR`) wins; else the
    /// files built into the binary; else, for a build that embeds none (a
    /// debug build), the site beside it (`fallback`), if any.
    pub fn choose(dir: Option<&Path>, embedded: Embedded, fallback: Option<PathBuf>) -> Site {
        match (dir, fallback) {
            (Some(dir), _) => Site::Dir(dir.to_path_buf()),
            (None, Some(beside)) if embedded.is_empty() => Site::Dir(beside),
            (None, _) => Site::Embedded(embedded),
        }
    }

    /// The hash of `pkg/`'s files (names and bytes, in name order; not their
    /// compressed copies): 16 hex digits, or none without a build.
    pub fn fingerprint(&self) -> Option<String> {
        match self {
            Site::Embedded(files) => files.fingerprint(),
            Site::Dir(dir) => fingerprint(dir),
        }
    }

    /// What the console's fallback serves files from: the folder, or for
    /// the embedded site a path under which nothing can be (a file), so
    /// nothing on the host's disk is served.
    pub fn root(&self) -> PathBuf {
        match self {
            Site::Embedded(_) => PathBuf::from("/dev/null"),
            Site::Dir(dir) => dir.clone(),
        }
    }

    /// `/pkg/<fingerprint>/…`, precompressed where the build wrote the
    /// copies, cached for good only when found; for the embedded site also
    /// its other files (`/favicon.svg`), which a folder's are served by the
    /// console's fallback.
    pub fn router<S: Clone + Send + Sync + 'static>(&self, fingerprint: &str) -> Router<S> {
        match self {
            Site::Dir(dir) => router(dir, fingerprint),
            Site::Embedded(files) => embedded_router(files, fingerprint),
        }
    }
}

fn is_copy(name: &str) -> bool {
    let ext = Path::new(name).extension().and_then(|e| e.to_str());
    matches!(ext, Some("br" | "gz"))
}

/// `site/pkg`'s fingerprint, read once per site folder and process — a
/// build replaces the folder and restarts the server.
pub fn fingerprint(site: &Path) -> Option<String> {
    static SEEN: OnceLock<Mutex<HashMap<PathBuf, Option<String>>>> = OnceLock::new();
    let seen = SEEN.get_or_init(Default::default);
    let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
    seen.entry(site.to_path_buf())
        .or_insert_with(|| hash_pkg(&site.join("pkg")))
        .clone()
}

fn hash_pkg(dir: &Path) -> Option<String> {
    let names: Vec<_> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !is_copy(n))
        .collect();
    let mut files = Vec::with_capacity(names.len());
    for name in names {
        let bytes = std::fs::read(dir.join(&name)).ok()?;
        files.push((name, bytes));
    }
    hash_files(files.into_iter())
}

/// The same hash for a folder's files and the embedded ones, so a site
/// keeps its fingerprint whichever way it is served.
fn hash_files(files: impl Iterator<Item = (String, Vec<u8>)>) -> Option<String> {
    let mut files: Vec<_> = files.collect();
    if files.is_empty() {
        return None;
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let mut hash = Sha256::new();
    for (name, bytes) in files {
        hash.update(name.as_bytes());
        hash.update([0]);
        hash.update(bytes);
    }
    Some(hex::encode(&hash.finalize()[..8]))
}

/// `/pkg/<fingerprint>/…` from `site/pkg`.
pub fn router<S: Clone + Send + Sync + 'static>(site: &Path, fingerprint: &str) -> Router<S> {
    let files = ServeDir::new(site.join("pkg"))
        .precompressed_br()
        .precompressed_gzip();
    Router::new()
        .nest_service(&format!("/pkg/{fingerprint}"), files)
        .layer(middleware::from_fn(cached_for_good))
}

fn embedded_router<S: Clone + Send + Sync + 'static>(
    files: &Embedded,
    fingerprint: &str,
) -> Router<S> {
    let pkg = files.clone();
    let mut router = Router::new()
        .route(
            &format!("/pkg/{fingerprint}/{{*file}}"),
            get(move |UrlPath(file): UrlPath<String>, headers: HeaderMap| {
                let files = pkg.clone();
                async move { serve(&files, &format!("pkg/{file}"), &headers) }
            }),
        )
        .layer(middleware::from_fn(cached_for_good));
    // The site's other files (the icon) at their own path, looked at again
    // on each visit as the fallback serves a folder's.
    for name in files.0.keys() {
        if name.starts_with("pkg/") || is_copy(name) {
            continue;
        }
        let (files, path) = (files.clone(), name.clone());
        router = router.route(
            &format!("/{name}"),
            get(move |headers: HeaderMap| {
                let (files, path) = (files.clone(), path.clone());
                async move {
                    let mut res = serve(&files, &path, &headers);
                    let h = res.headers_mut();
                    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
                    h.insert(
                        header::X_CONTENT_TYPE_OPTIONS,
                        HeaderValue::from_static("nosniff"),
                    );
                    res
                }
            }),
        );
    }
    router
}

/// One embedded file, as the browser prefers it among the copies there are
/// (`Accept-Encoding` with its weights; brotli before gzip at equal weight).
fn serve(files: &Embedded, path: &str, headers: &HeaderMap) -> Response {
    let Some(plain) = files.0.get(path) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let accepted = accepted_encodings(headers);
    let mut chosen: Option<(&str, &EmbeddedFile, f32)> = None;
    for (coding, ext) in [("br", "br"), ("gzip", "gz")] {
        let weight = weight_of(&accepted, coding);
        if weight <= 0.0 {
            continue;
        }
        if let Some(copy) = files.0.get(&format!("{path}.{ext}"))
            && chosen.is_none_or(|(_, _, best)| weight > best)
        {
            chosen = Some((coding, copy, weight));
        }
    }
    let (encoding, file) = match chosen {
        Some((coding, copy, _)) => (Some(coding), copy),
        None => (None, plain),
    };
    let mut res = Response::new(axum::body::Body::from(file.data.clone()));
    let h = res.headers_mut();
    if let Ok(kind) = HeaderValue::from_str(plain.metadata.mimetype()) {
        h.insert(header::CONTENT_TYPE, kind);
    }
    if let Some(coding) = encoding {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static(coding));
    }
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    res
}

/// `Accept-Encoding`'s codings with their weights (`q`, 1 when absent).
fn accepted_encodings(headers: &HeaderMap) -> Vec<(String, f32)> {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|item| {
            let mut parts = item.split(';');
            let coding = parts.next()?.trim().to_ascii_lowercase();
            if coding.is_empty() {
                return None;
            }
            let mut weight = 1.0;
            for param in parts {
                if let Some((key, value)) = param.split_once('=')
                    && key.trim().eq_ignore_ascii_case("q")
                {
                    weight = value.trim().parse().unwrap_or(0.0);
                }
            }
            Some((coding, weight))
        })
        .collect()
}

/// A coding's weight: its own entry, else `*`'s, else 0 (not accepted).
fn weight_of(accepted: &[(String, f32)], coding: &str) -> f32 {
    let named = accepted.iter().find(|(c, _)| c == coding);
    let any = accepted.iter().find(|(c, _)| c == "*");
    named.or(any).map_or(0.0, |(_, w)| *w)
}

/// Cached for good when found; and, as the copy sent depends on
/// `Accept-Encoding`, a shared cache told so (ServeDir does not say it).
async fn cached_for_good(req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    if res.status() == StatusCode::OK {
        res.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static(IMMUTABLE));
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_str(value).unwrap(),
        );
        h
    }

    #[test]
    fn weights_decide_and_zero_refuses() {
        let a = accepted_encodings(&accept("gzip;q=0.8, br;q=0.5, identity"));
        assert_eq!(weight_of(&a, "gzip"), 0.8);
        assert_eq!(weight_of(&a, "br"), 0.5);
        let a = accepted_encodings(&accept("br;q=0, *"));
        assert_eq!(weight_of(&a, "br"), 0.0);
        assert_eq!(weight_of(&a, "gzip"), 1.0);
        assert_eq!(weight_of(&accepted_encodings(&HeaderMap::new()), "br"), 0.0);
    }
}
