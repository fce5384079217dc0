//! `fieldstore import --from-etcd URL,… [--prefix /registry] [--keep-going]`: every object a
//! kube-apiserver kept in its etcd, written into the store as it was (uid, creationTimestamp,
//! generation, managedFields, status), each with one `ADDED` history record noted
//! [`NOTE`].
//!
//! - The keys are read at one etcd revision (the first request's), in pages of [`PAGE`] keys,
//!   so the import is a consistent snapshot even while kube-apiserver runs (unless etcd compacts
//!   that revision before the last page: then the import stops and says so).
//! - A key's value says what it holds, not the key (kube-apiserver's layout has historical
//!   names: `services/specs`, `minions`, `controllers`): the `k8s\x00` protobuf envelope of a
//!   built-in kind, or JSON (custom resources, CustomResourceDefinitions, aggregated APIs),
//!   decoded as the etcd API decodes it (`fieldstore_engine::store::etcd_api::object_of_value`).
//! - CustomResourceDefinitions are imported first (a first pass over the keys), so that the types
//!   they define are registered before their objects come; then everything else, in key order.
//!   The store writes a CRD's `status` as its own (accepted names from `spec.names`,
//!   `NamesAccepted` and `Established`, the storage version stored), replacing the imported one.
//! - Keys that hold no object of a type the store has are skipped and counted by reason (not an
//!   object, encrypted at rest, no `metadata.name`, no type); each is named on stderr, and the
//!   final summary on stdout counts them. An object the store refuses stops the import (exit
//!   status 1, naming the key), or with `--keep-going` is counted with the skipped keys.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use clap::Args;
use etcd_client::{Client, ConnectOptions, GetOptions, GetResponse, KvClient};
use fieldstore_engine::store::etcd_api::{kind_name, object_of_value, Undecoded};
use fieldstore_engine::store::{Collection, Options, Store};
use serde_json::Value;

use super::error::{CliError, Result};
use super::stdio::write_stdout;
use crate::location::Location;

/// The history note of every imported object.
pub(super) const NOTE: &str = "imported from etcd";
/// Keys per range request, as kube-apiserver pages its own lists.
const PAGE: i64 = 500;
/// How long the first request may take to answer: an etcd that does not answer by then is
/// reported unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one page may take.
const PAGE_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest response accepted; a page of larger values is asked for again with half the keys.
const MAX_RESPONSE_BYTES: usize = 64 << 20;
const CRD_KIND: &str = "CustomResourceDefinition";
const CRD_GROUP: &str = "apiextensions.k8s.io";

/// `fieldstore import` arguments.
#[derive(Debug, Args)]
pub(super) struct ImportArgs {
    /// Read the objects from this etcd cluster (client URLs, comma-separated; plaintext
    /// `http://` only).
    #[arg(long = "from-etcd", value_name = "URL,URL,…")]
    from_etcd: String,
    /// The key prefix kube-apiserver keeps its objects under (its `--etcd-prefix`).
    #[arg(long, default_value = "/registry")]
    prefix: String,
    /// Count objects the store refuses with the skipped keys and go on, instead of stopping at
    /// the first.
    #[arg(long)]
    keep_going: bool,
}

/// Imports every object under the prefix into the store at `location`, then prints the summary.
///
/// # Errors
/// [`CliError::Usage`] when the source etcd cannot be read (bad URL, unreachable, compacted
/// while read) or overlaps the destination; [`CliError::Engine`] when the store cannot be
/// opened; [`CliError::ImportRefused`] for the first object the store refuses (without
/// `--keep-going`, or for any failure of the store itself).
pub(super) fn run(location: &Location, args: &ImportArgs) -> Result<()> {
    let endpoints: Vec<String> = args.from_etcd.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
    if endpoints.is_empty() {
        return Err(CliError::Usage("--from-etcd needs at least one client URL".into()));
    }
    let prefix = format!("{}/", args.prefix.trim_end_matches('/'));
    refuse_overlap(location, &endpoints, &prefix)?;
    // The source first: a bad URL creates no data directory.
    let source = Source::connect(&endpoints, &prefix)?;
    eprintln!("reading {} keys under {prefix} at etcd revision {}", source.count, source.revision);
    // The CLI is short-lived: no background compaction.
    let store = location.open(Options::default().retention(None).keep_revisions(None))?;
    let mut import = Import { store: &store, keep_going: args.keep_going, tally: Tally::default() };

    // Pass 1: CustomResourceDefinitions, whose types the rest may need.
    let mut definitions = BTreeSet::new();
    source.for_each(|key, value| {
        if !contains(value, CRD_KIND.as_bytes()) {
            return Ok(());
        }
        if let Ok(object) = decode(value) {
            if is_definition(&object) {
                definitions.insert(key.to_vec());
                import.one(key, object)?;
            }
        }
        Ok(())
    })?;
    // Pass 2: everything else, in key order.
    source.for_each(|key, value| {
        if definitions.contains(key) {
            return Ok(());
        }
        match decode(value) {
            Ok(object) => import.one(key, object),
            Err(skip) => {
                import.tally.skip(key, skip);
                Ok(())
            }
        }
    })?;
    let mut line = import.tally.summary(source.revision);
    line.push('\n');
    write_stdout(line.as_bytes())
}

/// Refuses a destination in the same etcd under the source prefix (or holding it): the import
/// would read its own writes.
fn refuse_overlap(location: &Location, endpoints: &[String], source_prefix: &str) -> Result<()> {
    let Location::Etcd { endpoints: to, prefix } = location else { return Ok(()) };
    let dest = format!("{}/", prefix.trim_end_matches('/'));
    let shared = to.iter().any(|u| endpoints.contains(u));
    if shared && (dest.starts_with(source_prefix) || source_prefix.starts_with(&dest)) {
        return Err(CliError::Usage(format!(
            "the destination --etcd-prefix {prefix} overlaps the source prefix {}: choose another --etcd-prefix",
            source_prefix.trim_end_matches('/')
        )));
    }
    Ok(())
}

/// The source etcd, read at one revision.
struct Source {
    rt: tokio::runtime::Runtime,
    kv: KvClient,
    /// Keeps the connection's background tasks alive.
    _client: Client,
    endpoints: String,
    start: Vec<u8>,
    end: Vec<u8>,
    revision: i64,
    count: i64,
}

impl Source {
    /// Connects and counts the keys under `prefix`, which fixes the revision read.
    fn connect(endpoints: &[String], prefix: &str) -> Result<Source> {
        let list = endpoints.join(",");
        let unusable = |why: String| CliError::Usage(format!("cannot read etcd at {list}: {why}"));
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| unusable(e.to_string()))?;
        let options = ConnectOptions::new().with_connect_timeout(CONNECT_TIMEOUT).with_timeout(PAGE_TIMEOUT);
        let eps = endpoints.to_vec();
        let client = rt.block_on(async move { Client::connect(eps, Some(options)).await }).map_err(|e| unusable(describe(&e)))?;
        let kv = client.kv_client().max_decoding_message_size(MAX_RESPONSE_BYTES);
        let start = prefix.as_bytes().to_vec();
        let end = prefix_end(&start);
        let mut source = Source { rt, kv, _client: client, endpoints: list.clone(), start, end, revision: 0, count: 0 };
        let first = source.range(&source.start.clone(), GetOptions::new().with_count_only(), CONNECT_TIMEOUT).map_err(|e| match e {
            Failure::Timeout => unusable(format!("no answer within {}s", CONNECT_TIMEOUT.as_secs())),
            Failure::Etcd(e) => unusable(describe(&e)),
        })?;
        source.revision = first.header().map_or(0, |h| h.revision());
        source.count = first.count();
        Ok(source)
    }

    /// Calls `f` with every key under the prefix and its value, in key order, at the revision.
    fn for_each(&self, mut f: impl FnMut(&[u8], &[u8]) -> Result<()>) -> Result<()> {
        let mut start = self.start.clone();
        let mut limit = PAGE;
        loop {
            let page = GetOptions::new().with_limit(limit).with_revision(self.revision);
            let mut resp = match self.range(&start, page, PAGE_TIMEOUT) {
                Ok(resp) => resp,
                Err(Failure::Etcd(etcd_client::Error::GRpcStatus(s))) if s.message().contains("compacted") => {
                    return Err(CliError::Usage(format!(
                        "etcd at {} compacted revision {} while the import read it; run it again (with the kube-apiserver stopped, it cannot happen)",
                        self.endpoints, self.revision
                    )));
                }
                // A page larger than a response may be: fewer keys.
                Err(Failure::Etcd(etcd_client::Error::GRpcStatus(s))) if s.code() == tonic::Code::OutOfRange && limit > 1 => {
                    limit = (limit / 2).max(1);
                    continue;
                }
                Err(Failure::Timeout) => {
                    return Err(CliError::Usage(format!("etcd at {} did not answer within {}s", self.endpoints, PAGE_TIMEOUT.as_secs())))
                }
                Err(Failure::Etcd(e)) => return Err(CliError::Usage(format!("reading etcd at {}: {}", self.endpoints, describe(&e)))),
            };
            let more = resp.more();
            let kvs = resp.take_kvs();
            for kv in &kvs {
                f(kv.key(), kv.value())?;
            }
            match kvs.last() {
                Some(last) if more => {
                    start = last.key().to_vec();
                    start.push(0);
                }
                _ => return Ok(()),
            }
        }
    }

    /// One range request from `from` to the end of the prefix, waited for at most `timeout`.
    fn range(&self, from: &[u8], options: GetOptions, timeout: Duration) -> Result<GetResponse, Failure> {
        let mut kv = self.kv.clone();
        let (from, options) = (from.to_vec(), options.with_range(self.end.clone()));
        // The client's own timeout covers a connected endpoint; this one also an endpoint that
        // never connects.
        match self.rt.block_on(async move { tokio::time::timeout(timeout, kv.get(from, Some(options))).await }) {
            Ok(Ok(resp)) => Ok(resp),
            Ok(Err(e)) => Err(Failure::Etcd(e)),
            Err(_) => Err(Failure::Timeout),
        }
    }
}

/// Why a range request failed.
enum Failure {
    Etcd(etcd_client::Error),
    Timeout,
}

/// An etcd client error in one line: a gRPC status as its code and message (without tonic's
/// metadata dump).
fn describe(e: &etcd_client::Error) -> String {
    match e {
        etcd_client::Error::GRpcStatus(s) => format!("{:?}: {}", s.code(), s.message()),
        etcd_client::Error::InvalidArgs(why) if why.contains("HTTPS") => {
            "only plaintext http:// client URLs are supported (no TLS client); restore a snapshot into a local etcd and import from it"
                .into()
        }
        other => other.to_string(),
    }
}

/// The first key after every key that starts with `prefix`.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // Only 0xff bytes: to the end of the keyspace.
    vec![0]
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn is_definition(object: &Value) -> bool {
    let s = |k: &str| object.get(k).and_then(Value::as_str).unwrap_or("");
    s("kind") == CRD_KIND && s("apiVersion").split('/').next() == Some(CRD_GROUP)
}

/// Why a key was not imported.
#[derive(Debug)]
enum Skip {
    /// Neither an envelope nor a JSON object with apiVersion and kind (an allocator's bitmap).
    NotAnObject,
    /// Encrypted at rest by kube-apiserver: only its key could read it.
    Encrypted,
    /// An envelope or object that does not decode.
    Undecodable(String),
    /// An object without `metadata.name`: kube-apiserver's own record (a master lease).
    Unnamed(String),
    /// A built-in kind this build has no protobuf schema for.
    NoProtobuf(String),
    /// A kind the store has no type for.
    NoType(String),
    /// The store refused the object (with `--keep-going`).
    Refused(fieldstore_engine::Error),
}

impl Skip {
    /// The reason as the summary groups it.
    fn label(&self) -> String {
        match self {
            Skip::NotAnObject => "not an object".into(),
            Skip::Encrypted => "encrypted at rest".into(),
            Skip::Undecodable(_) => "undecodable".into(),
            Skip::Unnamed(_) => "no metadata.name".into(),
            Skip::NoProtobuf(kind) | Skip::NoType(kind) => format!("no type for {kind}"),
            Skip::Refused(e) => format!("refused ({})", e.reason().as_str()),
        }
    }

    /// The reason with its details, for the key's own line: the label first.
    fn detail(&self) -> String {
        let label = self.label();
        match self {
            Skip::NotAnObject => format!("{label}: neither a k8s\\x00 envelope nor JSON with apiVersion and kind"),
            Skip::Encrypted => format!("{label} (k8s:enc:…): only kube-apiserver's encryption key reads it"),
            Skip::Undecodable(why) => format!("{label}: {why}"),
            Skip::Unnamed(kind) => format!("{label}: a {kind} of kube-apiserver's own (a master lease, an allocator)"),
            Skip::NoProtobuf(_) => format!("{label} (no protobuf schema for it in this build)"),
            Skip::NoType(_) => label,
            Skip::Refused(e) => format!("{label}: {e}"),
        }
    }
}

/// The object a value holds (see [`object_of_value`]), or why the key is skipped.
fn decode(value: &[u8]) -> Result<Value, Skip> {
    object_of_value(value).map_err(Skip::from)
}

impl From<Undecoded> for Skip {
    fn from(u: Undecoded) -> Skip {
        match u {
            Undecoded::NotAnObject => Skip::NotAnObject,
            Undecoded::Encrypted => Skip::Encrypted,
            Undecoded::Undecodable(why) => Skip::Undecodable(why),
            Undecoded::Unnamed(kind) => Skip::Unnamed(kind),
            Undecoded::NoProtobuf(kind) => Skip::NoProtobuf(kind),
        }
    }
}

/// The import under way: the store and what happened so far.
struct Import<'a> {
    store: &'a Store,
    keep_going: bool,
    tally: Tally,
}

impl Import<'_> {
    /// Imports one decoded object, or counts why not.
    fn one(&mut self, key: &[u8], object: Value) -> Result<()> {
        let s = |k: &str| object.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let (api_version, kind) = (s("apiVersion"), s("kind"));
        let spec = match self.store.type_of(&object) {
            Ok(spec) => spec,
            Err(_) => {
                self.tally.skip(key, Skip::NoType(kind_name(&api_version, &kind)));
                return Ok(());
            }
        };
        let namespace = object.pointer("/metadata/namespace").and_then(Value::as_str).filter(|s| !s.is_empty());
        match self.store.import(&Collection::new(spec.resource(), namespace), &object, NOTE) {
            Ok(_) => {
                self.tally.imported += 1;
                self.tally.kinds.insert((api_version, kind));
                Ok(())
            }
            // The store failing (I/O, etcd unreachable) is no refusal of this object.
            Err(e) if self.keep_going && e.reason().code() < 500 => {
                self.tally.skip(key, Skip::Refused(e));
                Ok(())
            }
            Err(source) => Err(CliError::ImportRefused { key: String::from_utf8_lossy(key).into_owned(), source }),
        }
    }
}

/// What the import did.
#[derive(Debug, Default)]
struct Tally {
    imported: usize,
    kinds: BTreeSet<(String, String)>,
    skipped: BTreeMap<String, usize>,
}

impl Tally {
    /// Counts a skipped key and names it on stderr.
    fn skip(&mut self, key: &[u8], why: Skip) {
        let detail = why.detail().split_whitespace().collect::<Vec<_>>().join(" ");
        eprintln!("skipped {}: {detail}", String::from_utf8_lossy(key));
        *self.skipped.entry(why.label()).or_default() += 1;
    }

    /// `imported N objects of K kinds at etcd revision R, skipped M keys: 2 not an object, …`
    /// (reasons by count, most first).
    fn summary(&self, revision: i64) -> String {
        let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut line = format!(
            "imported {} of {} at etcd revision {revision}, skipped {}",
            plural(self.imported, "object", "objects"),
            plural(self.kinds.len(), "kind", "kinds"),
            plural(self.skipped.values().sum(), "key", "keys"),
        );
        let mut reasons: Vec<(&String, &usize)> = self.skipped.iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        if !reasons.is_empty() {
            let parts: Vec<String> = reasons.iter().map(|(label, n)| format!("{n} {label}")).collect();
            line.push_str(": ");
            line.push_str(&parts.join(", "));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prefix_end_is_the_next_key() {
        assert_eq!(prefix_end(b"/registry/"), b"/registry0");
        assert_eq!(prefix_end(b"a\xff"), b"b");
        assert_eq!(prefix_end(b"\xff"), b"\0");
    }

    #[test]
    fn values_that_are_no_objects_are_skipped_with_their_reason() {
        assert!(matches!(decode(b"\x01\x02\xff"), Err(Skip::NotAnObject)));
        assert!(matches!(decode(b"[1,2]"), Err(Skip::NotAnObject)));
        assert!(matches!(decode(br#"{"kind":"ConfigMap"}"#), Err(Skip::NotAnObject)));
        assert!(matches!(decode(b"k8s:enc:aescbc:v1:key1:\x00\x01"), Err(Skip::Encrypted)));
        assert!(matches!(decode(b"k8s\x00\x0a"), Err(Skip::Undecodable(_))));
        assert!(matches!(decode(br#"{"apiVersion":"v1","kind":"Endpoints","metadata":{}}"#), Err(Skip::Unnamed(_))));
        let object = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
        assert_eq!(decode(object.to_string().as_bytes()).ok(), Some(object));
    }

    #[test]
    fn definitions_are_known_by_group_and_kind() {
        assert!(is_definition(&json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition"})));
        assert!(!is_definition(&json!({"apiVersion": "example.com/v1", "kind": "CustomResourceDefinition"})));
    }

    #[test]
    fn summary_counts_reasons_most_first() {
        let mut tally = Tally { imported: 1, ..Tally::default() };
        tally.kinds.insert(("v1".into(), "ConfigMap".into()));
        tally.skip(b"/registry/ranges/serviceips", Skip::NotAnObject);
        tally.skip(b"/registry/a", Skip::NoType("v1 RangeAllocation".into()));
        tally.skip(b"/registry/b", Skip::NoType("v1 RangeAllocation".into()));
        assert_eq!(
            tally.summary(7),
            "imported 1 object of 1 kind at etcd revision 7, skipped 3 keys: 2 no type for v1 RangeAllocation, 1 not an object"
        );
    }
}
