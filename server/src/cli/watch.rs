//! Watch verbs: `watch` (one line or one JSON event per event of a resource) and
//! `request-bookmark` (every open watch emits a bookmark).

use super::backend::Backend;
use super::error::Result;
use super::output::{s, Output};
use super::stdio::write_stdout;
use crate::api::Collection;
use clap::Args;
use fieldstore_engine::store::WatchOptions;
use serde_json::Value;

/// Arguments of `watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The resource.
    resource: String,
    /// The namespace (default: every namespace).
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// Start after this resourceVersion (default: the current state as ADDED events, then changes).
    #[arg(long)]
    resource_version: Option<String>,
    /// Ask for BOOKMARK events.
    #[arg(long)]
    bookmarks: bool,
    /// Label selector.
    #[arg(short = 'l', long)]
    selector: Option<String>,
    /// Stop after this many events.
    #[arg(long)]
    max_events: Option<usize>,
    /// `text`: one line per event (type, name, resourceVersion); `json`: one JSON event per line.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// `watch`.
pub fn watch(store: &dyn Backend, a: &WatchArgs) -> Result<()> {
    let spec = store.find_type(&a.resource)?;
    let opts = WatchOptions {
        resource_version: a.resource_version.clone(),
        label_selector: a.selector.clone(),
        allow_bookmarks: a.bookmarks,
        ..WatchOptions::default()
    };
    let mut seen = 0usize;
    let mut failed = None;
    store.watch(Collection::new(&spec.resource, a.namespace.as_deref()), &opts, &mut |ev: serde_json::Value| {
        let line = if a.output == Output::Json {
            serde_json::to_string(&ev).unwrap_or_default()
        } else {
            let o = &ev["object"];
            let m = |f: &str| o.pointer(&format!("/metadata/{f}")).and_then(Value::as_str).unwrap_or("").to_string();
            let name = if m("namespace").is_empty() { m("name") } else { format!("{}/{}", m("namespace"), m("name")) };
            let name = if s(&ev, "type") == "ERROR" { s(o, "message").to_string() } else { name };
            format!("{}\t{}\t{}", s(&ev, "type"), name, m("resourceVersion"))
        };
        if let Err(e) = write_stdout(format!("{line}\n").as_bytes()) {
            failed = Some(e);
            return false;
        }
        seen += 1;
        a.max_events.is_none_or(|max| seen < max)
    })?;
    failed.map_or(Ok(()), Err)
}

/// `request-bookmark`: makes every open watch emit a bookmark.
pub fn request_bookmark(store: &dyn Backend) -> Result<()> {
    write_stdout(format!("bookmark requested at revision {}\n", store.request_bookmark()?).as_bytes())
}
