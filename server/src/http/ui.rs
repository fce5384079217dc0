//! The web view of history at `/ui/`: static pages (plain HTML, CSS and JavaScript under
//! `server/ui/`, embedded in the binary) that read the HTTP API of the same listener — blame,
//! field timelines, the object at a revision, owners and watches — with the caller's token.
//!
//! The assets themselves need no token (they hold no data); every call the page makes is
//! authenticated and authorized as any other request. Served with a strict Content Security
//! Policy: nothing is loaded from anywhere but this listener.

use axum::extract::Path;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use http::{header, HeaderValue, StatusCode};

/// One embedded file: its name under `/ui/`, content type and bytes.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static str,
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the web view. `index.html` loads the scripts in this order.
const ASSETS: &[Asset] = &[
    Asset { name: "index.html", content_type: "text/html; charset=utf-8", body: include_str!("../../ui/index.html") },
    Asset { name: "app.css", content_type: "text/css; charset=utf-8", body: include_str!("../../ui/app.css") },
    Asset { name: "api.js", content_type: JS, body: include_str!("../../ui/api.js") },
    Asset { name: "render.js", content_type: JS, body: include_str!("../../ui/render.js") },
    Asset { name: "object.js", content_type: JS, body: include_str!("../../ui/object.js") },
    Asset { name: "pages.js", content_type: JS, body: include_str!("../../ui/pages.js") },
    Asset { name: "app.js", content_type: JS, body: include_str!("../../ui/app.js") },
];

/// The policy every asset is served with: scripts and calls from this origin only (inline style
/// attributes carry the managers' colours).
const CSP: &str = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

/// The routes of the web view: `/ui` (redirects), `/ui/` (the page) and `/ui/FILE`.
pub fn router() -> Router {
    Router::new()
        .route("/ui", get(|| async { Redirect::permanent("/ui/") }))
        .route("/ui/", get(|| async { asset("index.html") }))
        .route("/ui/:file", get(|Path(file): Path<String>| async move { asset(&file) }))
}

fn asset(name: &str) -> Response {
    let Some(a) = ASSETS.iter().find(|a| a.name == name) else {
        return (StatusCode::NOT_FOUND, "not found").into_response();
    };
    let mut r = a.body.into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(a.content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_script_the_page_loads_is_embedded() {
        let index = ASSETS.iter().find(|a| a.name == "index.html").map(|a| a.body).unwrap_or_default();
        for a in ASSETS.iter().filter(|a| a.name != "index.html") {
            assert!(index.contains(&format!("\"{}\"", a.name)), "index.html does not load {}", a.name);
        }
        assert_eq!(asset("nothing.js").status(), StatusCode::NOT_FOUND);
        let r = asset("app.js");
        assert_eq!(r.headers().get(header::CONTENT_TYPE).map(HeaderValue::as_bytes), Some(JS.as_bytes()));
    }
}
