//! The web app built into the binary: one file to deploy.
//!
//! `build.rs` embeds `web/dist` (made by `cargo xtask dist`) when it exists at build time;
//! otherwise nothing is embedded and every page says how to build the app. `serve` answers
//! with the embedded app unless `--static-dir` names a built app on disk (for development).
//!
//! The files are served as `tower_http::services::ServeDir` serves a folder: the content type
//! guessed from the extension by the same table (`.wasm` is `application/wasm`, `.js`
//! `text/javascript`), `ETag` and `Last-Modified` with `304 Not Modified` for a client that has
//! the file, `HEAD`, and a page with status 200 for every other path, so that client routes
//! such as `/scenarios/safe-retry` load the app: `staff.html` (the staff module) under
//! `/instructor` and `/author`, `index.html` (the student's module) everywhere else
//! ([`page_for`]). Ranges are not served: a browser never asks for part of the app.

use std::collections::HashMap;
use std::sync::OnceLock;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use include_dir::{Dir, DirEntry};
use sha2::{Digest, Sha256};

#[cfg(embedded_app)]
static DIST: Dir<'static> = include_dir::include_dir!("$PIPELINE_BUILDER_WEB_DIST");
#[cfg(not(embedded_app))]
static DIST: Dir<'static> = Dir::new("", &[]);

/// What `/` and every client route answer when the app was not built into the binary.
pub const NOT_BUILT_PAGE: &str =
    "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<title>Pipeline Builder: the app was not built</title>\n</head>\n<body>\n\
<h1>The app was not built</h1>\n\
<p>This server was compiled without the web app, so it serves the API only.</p>\n\
<p>To build the app into the server, run <code>cargo xtask dist</code> and then \
<code>cargo build --release -p server</code>; or start the server with \
<code>--static-dir web/dist</code> after <code>cargo xtask dist</code>.</p>\n\
</body>\n</html>\n";

/// Whether this binary carries the web app.
pub fn is_built() -> bool {
    DIST.get_file("index.html").is_some()
}

/// The app's pages: `index.html` loads the student's module, `staff.html` the staff module
/// (the instructor's pages and the author page).
pub const PAGES: [&str; 2] = ["index.html", "staff.html"];

/// The page that a client route loads, by its path: the staff module's under `/instructor`
/// and `/author`, the student's everywhere else.
pub fn page_for(path: &str) -> &'static str {
    let first = path.trim_start_matches('/').split('/').next().unwrap_or("");
    if first == "instructor" || first == "author" {
        PAGES[1]
    } else {
        PAGES[0]
    }
}

/// The embedded `index.html`, whose inline script the Content-Security-Policy allows.
pub fn index_html() -> Option<&'static str> {
    DIST.get_file("index.html").and_then(|f| f.contents_utf8())
}

/// Every embedded page (`index.html`, `staff.html`), whose inline scripts the
/// Content-Security-Policy allows.
pub fn pages() -> Vec<&'static str> {
    PAGES
        .iter()
        .filter_map(|page| DIST.get_file(page).and_then(|f| f.contents_utf8()))
        .collect()
}

/// How many files are embedded and their bytes, for the start-up log.
pub fn summary() -> (usize, usize) {
    let assets = assets();
    (
        assets.len(),
        assets.values().map(|a| a.contents.len()).sum(),
    )
}

struct Asset {
    contents: &'static [u8],
    content_type: HeaderValue,
    etag: HeaderValue,
    last_modified: Option<(DateTime<Utc>, HeaderValue)>,
}

/// Every embedded file by its path (`web_bg.wasm`, `snippets/…`), made once per process.
fn assets() -> &'static HashMap<String, Asset> {
    static ASSETS: OnceLock<HashMap<String, Asset>> = OnceLock::new();
    ASSETS.get_or_init(|| {
        let mut assets = HashMap::new();
        let mut folders = vec![&DIST];
        while let Some(folder) = folders.pop() {
            for entry in folder.entries() {
                match entry {
                    DirEntry::Dir(d) => folders.push(d),
                    DirEntry::File(f) => {
                        let path = f.path().to_string_lossy().replace('\\', "/");
                        assets.insert(path, asset(f));
                    }
                }
            }
        }
        assets
    })
}

fn asset(file: &'static include_dir::File<'static>) -> Asset {
    let contents = file.contents();
    let content_type = mime_guess::from_path(file.path())
        .first_raw()
        .map(HeaderValue::from_static)
        .unwrap_or_else(|| HeaderValue::from_static("application/octet-stream"));
    let digest = Sha256::digest(contents);
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    let etag = HeaderValue::from_str(&format!("\"{hex}\""))
        .unwrap_or_else(|_| HeaderValue::from_static("\"0\""));
    let last_modified = file
        .metadata()
        .and_then(|m| m.modified().duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| DateTime::<Utc>::from_timestamp(i64::try_from(d.as_secs()).ok()?, 0))
        .and_then(|t| {
            let text = t.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
            HeaderValue::from_str(&text).ok().map(|v| (t, v))
        });
    Asset {
        contents,
        content_type,
        etag,
        last_modified,
    }
}

/// The fallback of the router when the embedded app is served: a file, or `index.html` for a
/// client route, or the "not built" page.
pub async fn serve(method: Method, uri: Uri, headers: HeaderMap) -> Response {
    if method != Method::GET && method != Method::HEAD {
        let mut response = StatusCode::METHOD_NOT_ALLOWED.into_response();
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET,HEAD"));
        return response;
    }
    let path = uri.path().trim_start_matches('/');
    if !is_built() {
        return not_built(path);
    }
    let assets = assets();
    let asset = match assets.get(path) {
        Some(a) => a,
        // Client routes (and anything else) load the app, with status 200: the staff
        // module's page for theirs (the student's when a build has no staff page).
        None => match assets
            .get(page_for(path))
            .or_else(|| assets.get("index.html"))
        {
            Some(a) => a,
            None => return not_built(path),
        },
    };
    let mut response = if unchanged(asset, &headers) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut r = if method == Method::HEAD {
            Response::new(Body::empty())
        } else {
            Response::new(Body::from(asset.contents))
        };
        let h = r.headers_mut();
        h.insert(header::CONTENT_TYPE, asset.content_type.clone());
        h.insert(
            header::CONTENT_LENGTH,
            HeaderValue::from(asset.contents.len()),
        );
        r
    };
    let h = response.headers_mut();
    h.insert(header::ETAG, asset.etag.clone());
    if let Some((_, value)) = &asset.last_modified {
        h.insert(header::LAST_MODIFIED, value.clone());
    }
    response
}

/// Whether the client holds this version already: `If-None-Match` names its ETag, or (with
/// no `If-None-Match`) `If-Modified-Since` is no earlier than its modification time.
fn unchanged(asset: &Asset, headers: &HeaderMap) -> bool {
    if let Some(tags) = headers.get(header::IF_NONE_MATCH) {
        let etag = asset.etag.as_bytes();
        return tags.to_str().is_ok_and(|t| {
            t.split(',').any(|tag| {
                let tag = tag.trim();
                tag == "*" || tag.strip_prefix("W/").unwrap_or(tag).as_bytes() == etag
            })
        });
    }
    match (&asset.last_modified, headers.get(header::IF_MODIFIED_SINCE)) {
        (Some((modified, _)), Some(since)) => since
            .to_str()
            .ok()
            .and_then(|s| DateTime::parse_from_rfc2822(s).ok())
            .is_some_and(|since| since.with_timezone(&Utc) >= *modified),
        _ => false,
    }
}

/// Without an embedded app: the page that says how to build it for `/` and client routes,
/// 404 for a path that names a file (`/web.js`).
fn not_built(path: &str) -> Response {
    let last = path.rsplit('/').next().unwrap_or("");
    if last.contains('.') {
        return StatusCode::NOT_FOUND.into_response();
    }
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        )],
        NOT_BUILT_PAGE,
    )
        .into_response()
}
