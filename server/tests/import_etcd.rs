//! `fieldstore import --from-etcd` end to end: a real single-member etcd filled as a
//! kube-apiserver fills it (built-in kinds as `k8s\x00` protobuf envelopes under kube-apiserver's
//! keys, CustomResourceDefinitions and custom resources as JSON, and keys that hold no object),
//! imported by the built binary into a data directory and into a store on etcd, then read back
//! in-process.
//!
//! The objects are upstream's round-trip fixtures (k8s.io/api `testdata/HEAD`, Apache-2.0; the
//! copies in `codec/tests/fixtures/k8s-api/`, see its README), one per kind the store has as a
//! built-in, adjusted as kube-apiserver would have stored them (see [`adjust`]).

// Helpers outside #[test] functions unwrap too: a panic is a failed test with its message.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};

use fieldstore_engine::store::{builtin_types, GetOptions, ObjectKey, Options, Store, TypeSpec};
use serde_json::{json, Value};

/// The history note the import gives every object.
const NOTE: &str = "imported from etcd";
/// The namespace of every namespaced object.
const NS: &str = "fixtures";

// --- etcd -------------------------------------------------------------------------------------

#[path = "../../tests/support/etcd_member.rs"]
mod etcd_member;

/// A single-member etcd on free 127.0.0.1 ports, stopped (and its data removed) when dropped.
struct Etcd {
    url: String,
    _member: etcd_member::Member,
}

/// Starts etcd, or says why not (no `etcd` on PATH) and gives `None`.
fn start_etcd() -> Option<Etcd> {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir =
        etcd_member::fast_dir().join(format!("fieldstore-import-etcd-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst)));
    if !etcd_member::available() {
        return None;
    }
    let mut member = etcd_member::Member::new("t", dir);
    member.remove_dir = true;
    let cluster = member.cluster_entry();
    member.start(&cluster, "new", &[]);
    member.wait_ready();
    Some(Etcd { url: member.url(), _member: member })
}

/// Writes `keys` into etcd at `url`, as kube-apiserver's storage layer would.
fn put_all(url: &str, keys: &[(String, Vec<u8>)]) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut client = etcd_client::Client::connect([url], None).await.unwrap();
        for (key, value) in keys {
            client.put(key.as_str(), value.clone(), None).await.unwrap();
        }
    });
}

// --- what a kube-apiserver would have stored ---------------------------------------------------

/// One object put into etcd and expected in the store afterwards.
struct Expected {
    key: String,
    /// The store's name for its resource (`deployments.apps`).
    resource: String,
    namespace: Option<String>,
    name: String,
    /// The object as kube-apiserver would have served it (the adjusted fixture).
    object: Value,
    /// Kept as JSON (CRDs and custom resources), not as a protobuf envelope.
    json: bool,
    /// The value as kube-apiserver wrote it, when it is not `object` encoded (a definition
    /// stored at v1beta1).
    raw: Option<Vec<u8>>,
}

impl Expected {
    fn is_definition(&self) -> bool {
        self.object["kind"] == "CustomResourceDefinition"
    }
}

fn fixture_dir() -> String {
    format!("{}/../codec/tests/fixtures/k8s-api", env!("CARGO_MANIFEST_DIR"))
}

/// An upstream fixture's file stem: `core.v1.ConfigMap`, `apps.v1.Deployment`.
fn fixture_stem(spec: &TypeSpec) -> String {
    let group = if spec.group.is_empty() { "core" } else { spec.group.as_str() };
    format!("{group}.{}.{}", spec.version, spec.kind)
}

/// A fuzz-filled fixture made into an object kube-apiserver would have stored: a DNS name
/// (`<kind>-fixture`) instead of `nameValue`, the namespace [`NS`] (none for cluster-scoped
/// kinds), no resourceVersion (etcd's revision is the resourceVersion; kube-apiserver never
/// writes one into the value), a distinct uid, and managedFields entries with a real
/// operation, fieldsType and apiVersion. The CRD fixture also gets a group, names, scope,
/// version and schema that make a type. Everything else (finalizers, deletionTimestamp,
/// ownerReferences, status, every spec field) stays as upstream filled it.
fn adjust(mut object: Value, spec: &TypeSpec, n: usize) -> Value {
    let api_version = object["apiVersion"].clone();
    let name = if spec.kind == "CustomResourceDefinition" {
        "fixturethings.fixtures.example.com".to_string()
    } else {
        format!("{}-fixture", spec.kind.to_lowercase())
    };
    let meta = object["metadata"].as_object_mut().expect("fixture metadata");
    meta.insert("name".into(), json!(name));
    if spec.namespaced {
        meta.insert("namespace".into(), json!(NS));
    } else {
        meta.remove("namespace");
    }
    meta.remove("resourceVersion");
    meta.insert("uid".into(), json!(format!("00000000-0000-4000-8000-{n:012}")));
    for entry in meta.get_mut("managedFields").and_then(Value::as_array_mut).into_iter().flatten() {
        entry["operation"] = json!("Update");
        entry["fieldsType"] = json!("FieldsV1");
        entry["apiVersion"] = api_version.clone();
    }
    if spec.kind == "CustomResourceDefinition" {
        let s = &mut object["spec"];
        s["group"] = json!("fixtures.example.com");
        s["names"] = json!({"plural": "fixturethings", "singular": "fixturething", "shortNames": ["ft"],
            "kind": "FixtureThing", "listKind": "FixtureThingList", "categories": ["all"]});
        s["scope"] = json!("Namespaced");
        s.as_object_mut().unwrap().remove("preserveUnknownFields");
        s["conversion"] = json!({"strategy": "None"});
        let v = &mut s["versions"][0];
        v["name"] = json!("v1");
        v["schema"] = json!({"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"color": {"type": "string"}}}}}});
        v["subresources"]["scale"] = json!({"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"});
        v["additionalPrinterColumns"] = json!([{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}]);
        v["selectableFields"] = json!([{"jsonPath": ".spec.color"}]);
    }
    object
}

/// The key kube-apiserver keeps an object under: `/registry/<resource>/[<namespace>/]<name>`,
/// with its historical resource names, and built-in groups' resources without their group
/// (its default storage prefixes); CRDs and custom resources under their group.
fn apiserver_key(spec: &TypeSpec, namespace: Option<&str>, name: &str) -> String {
    let resource = match (spec.group.as_str(), spec.plural.as_str()) {
        ("", "services") => "services/specs".to_string(),
        ("", "endpoints") => "services/endpoints".to_string(),
        ("", "nodes") => "minions".to_string(),
        ("", "replicationcontrollers") => "controllers".to_string(),
        ("networking.k8s.io", "ingresses") => "ingress".to_string(),
        ("apiextensions.k8s.io", plural) => format!("apiextensions.k8s.io/{plural}"),
        (_, plural) => plural.to_string(),
    };
    match namespace {
        Some(ns) => format!("/registry/{resource}/{ns}/{name}"),
        None => format!("/registry/{resource}/{name}"),
    }
}

/// A CRD as kube-apiserver keeps it (JSON), and one custom resource of it under a group that
/// sorts before `apiextensions.k8s.io`: its key comes first, so only importing definitions
/// first lets it find its type.
fn widget_crd_and_object() -> (Value, Value) {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.acme.example.com", "uid": "00000000-0000-4000-8000-00000000a001",
            "creationTimestamp": "2024-05-01T10:00:00Z", "generation": 1,
            "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "apiextensions.k8s.io/v1",
                "time": "2024-05-01T10:00:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:group": {}, "f:names": {"f:kind": {}, "f:plural": {}}, "f:scope": {}, "f:versions": {}}}}]},
        "spec": {"group": "acme.example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}, "color": {"type": "string"}}},
                    "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}}}}]},
        "status": {"acceptedNames": {"plural": "widgets", "kind": "Widget"}, "storedVersions": ["v1"],
            "conditions": [{"type": "Established", "status": "True", "lastTransitionTime": "2024-05-01T10:00:01Z",
                "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}]}});
    let widget = json!({"apiVersion": "acme.example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1", "namespace": NS, "uid": "00000000-0000-4000-8000-00000000a002",
            "creationTimestamp": "2024-05-02T11:00:00Z", "generation": 3, "labels": {"app": "shop"},
            "managedFields": [
                {"manager": "kubectl", "operation": "Apply", "apiVersion": "acme.example.com/v1", "time": "2024-05-02T11:00:00Z",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:size": {}, "f:color": {}}}},
                {"manager": "widget-controller", "operation": "Update", "apiVersion": "acme.example.com/v1",
                 "time": "2024-05-02T11:00:05Z", "fieldsType": "FieldsV1", "subresource": "status",
                 "fieldsV1": {"f:status": {"f:ready": {}}}}]},
        "spec": {"size": 3, "color": "blue"}, "status": {"ready": true}});
    (crd, widget)
}

/// The kinds whose fixtures are no storable objects of the store's built-in types are simply
/// not among [`builtin_types`]: ConversionReview, the *Options, Status, WatchEvent, Eviction,
/// Binding, RangeAllocation, APIGroup, APIVersions, SerializedReference. `events.k8s.io`
/// Events are left out: kube-apiserver stores them as core/v1 Events, under the same keys.
fn objects() -> Vec<Expected> {
    let mut out = Vec::new();
    for (n, spec) in builtin_types().iter().enumerate() {
        if spec.group == "events.k8s.io" {
            continue;
        }
        let path = format!("{}/{}.json", fixture_dir(), fixture_stem(spec));
        let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e} (every built-in kind has an upstream fixture)"));
        let object = adjust(serde_json::from_slice(&text).unwrap(), spec, n + 1);
        let name = object["metadata"]["name"].as_str().unwrap().to_string();
        let namespace = spec.namespaced.then(|| NS.to_string());
        out.push(Expected {
            key: apiserver_key(spec, namespace.as_deref(), &name),
            resource: spec.resource(),
            namespace,
            name,
            object,
            json: false,
            raw: None,
        });
    }
    let (crd, widget) = widget_crd_and_object();
    out.push(Expected {
        key: "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.acme.example.com".into(),
        resource: "customresourcedefinitions.apiextensions.k8s.io".into(),
        namespace: None,
        name: "widgets.acme.example.com".into(),
        object: crd,
        json: true,
        raw: None,
    });
    out.push(Expected {
        key: format!("/registry/acme.example.com/widgets/{NS}/w1"),
        resource: "widgets.acme.example.com".into(),
        namespace: Some(NS.into()),
        name: "w1".into(),
        object: widget,
        json: true,
        raw: None,
    });
    // A definition as kube-apiserver 1.37 stores it whatever version it was written at:
    // apiextensions.k8s.io/v1beta1 (captured from the reference build), imported in its v1 form.
    let raw = std::fs::read(format!("{}/../engine/tests/fixtures/kube-apiserver/gadgets.crd.json", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let mut v1: Value = serde_json::from_slice(&raw).unwrap();
    assert_eq!(v1["apiVersion"], "apiextensions.k8s.io/v1beta1");
    v1["apiVersion"] = json!("apiextensions.k8s.io/v1");
    for beta_only in ["version", "preserveUnknownFields"] {
        v1["spec"].as_object_mut().unwrap().remove(beta_only);
    }
    v1["spec"]["versions"][0]["additionalPrinterColumns"] = json!([{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]);
    out.push(Expected {
        key: "/registry/apiextensions.k8s.io/customresourcedefinitions/gadgets.example.com".into(),
        resource: "customresourcedefinitions.apiextensions.k8s.io".into(),
        namespace: None,
        name: "gadgets.example.com".into(),
        object: v1,
        json: true,
        raw: Some(raw),
    });
    out
}

/// Keys of a kube-apiserver's etcd that hold no object the store can take, with the reason
/// the import's summary gives.
fn not_objects() -> Vec<(String, Vec<u8>, &'static str)> {
    // An allocator bitmap stand-in: bytes that are neither an envelope nor JSON.
    let mut x: u32 = 0x2545_f491;
    let random: Vec<u8> = (0..64)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8 | 0x80
        })
        .collect();
    let envelope = |object: Value| fieldstore_codec::k8s_protobuf::encode_envelope_value(&object).unwrap();
    // kube-apiserver's master lease: an Endpoints without name or namespace.
    let lease = envelope(json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"generation": 4},
        "subsets": [{"addresses": [{"ip": "192.168.0.10"}]}]}));
    // The service node port allocator: a RangeAllocation, also without a name.
    let ports = envelope(json!({"apiVersion": "v1", "kind": "RangeAllocation",
        "metadata": {"creationTimestamp": "2024-05-01T09:59:00Z"}, "range": "30000-32767", "data": "AAE="}));
    // kube-aggregator keeps APIServices as JSON; the store has no such type.
    let api_service = serde_json::to_vec(&json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1.apps", "uid": "00000000-0000-4000-8000-00000000b001", "creationTimestamp": "2024-05-01T09:59:00Z"},
        "spec": {"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15}}))
    .unwrap();
    let mut sealed = b"k8s:enc:aescbc:v1:key1:".to_vec();
    sealed.extend_from_slice(&random);
    vec![
        ("/registry/ranges/serviceips".into(), random, "not an object"),
        ("/registry/masterleases/192.168.0.10".into(), lease, "no metadata.name"),
        ("/registry/ranges/servicenodeports".into(), ports, "no metadata.name"),
        ("/registry/apiregistration.k8s.io/apiservices/v1.apps".into(), api_service, "no type for apiregistration.k8s.io/v1 APIService"),
        (format!("/registry/secrets/{NS}/sealed"), sealed, "encrypted at rest"),
    ]
}

/// Fills etcd at `url` as a kube-apiserver would have: built-in kinds as protobuf envelopes,
/// CRDs and custom resources as JSON, and the keys of [`not_objects`].
fn fill(url: &str) -> Vec<Expected> {
    let objects = objects();
    let mut keys = Vec::new();
    for e in &objects {
        let value = if let Some(raw) = &e.raw {
            raw.clone()
        } else if e.json {
            serde_json::to_vec(&e.object).unwrap()
        } else {
            let pb = fieldstore_codec::k8s_protobuf::encode_envelope_value(&e.object).unwrap_or_else(|err| panic!("{}: {err}", e.key));
            // The envelope carries exactly the object (what kube-apiserver reads back).
            assert_eq!(fieldstore_codec::k8s_protobuf::object_of_envelope(&pb).unwrap(), e.object, "{}", e.key);
            pb
        };
        keys.push((e.key.clone(), value));
    }
    for (key, value, _) in not_objects() {
        keys.push((key, value));
    }
    put_all(url, &keys);
    objects
}

fn fieldstore(args: &[&str]) -> Output {
    let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    common::fieldstore(&args, b"")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The summary line the import prints for [`fill`]'s keys.
fn expected_summary(objects: &[Expected]) -> String {
    let kinds: std::collections::BTreeSet<(String, String)> =
        objects.iter().map(|e| (e.object["apiVersion"].to_string(), e.object["kind"].to_string())).collect();
    format!(
        "imported {} objects of {} kinds at etcd revision {{R}}, skipped 5 keys: 2 no metadata.name, 1 encrypted at rest, \
         1 no type for apiregistration.k8s.io/v1 APIService, 1 not an object",
        objects.len(),
        kinds.len()
    )
}

/// Checks the summary line, whatever etcd's revision.
fn assert_summary(stdout: &str, objects: &[Expected]) {
    let line = stdout.trim_end();
    assert_eq!(line.lines().count(), 1, "{stdout}");
    let expected = expected_summary(objects);
    let (head, tail) = expected.split_once("{R}").unwrap();
    assert!(line.starts_with(head) && line.ends_with(tail), "summary:\n  {line}\nexpected:\n  {expected}");
}

fn resource_version(object: &Value) -> u64 {
    object["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

/// Checks every object of `objects` in `store` against what was put into etcd.
fn assert_imported(store: &Store, objects: &[Expected]) {
    let get = |e: &Expected| {
        store
            .get(&ObjectKey::new(&e.resource, e.namespace.as_deref(), &e.name), &GetOptions::default())
            .unwrap_or_else(|err| panic!("{}: {err}", e.key))
    };
    for e in objects {
        let got = get(e);
        let mut expected = e.object.clone();
        // The store's own resourceVersion (its revision), not etcd's.
        expected["metadata"]["resourceVersion"] = got["metadata"]["resourceVersion"].clone();
        if e.is_definition() {
            // The store keeps a CRD's status as its own CRD controllers would have set it:
            // acceptedNames = spec.names, NamesAccepted and Established, storedVersions = the
            // storage version; the rest is as given.
            assert_eq!(got["status"]["acceptedNames"], e.object["spec"]["names"], "{}", e.key);
            let conditions = got["status"]["conditions"].as_array().unwrap();
            assert!(conditions.iter().any(|c| c["type"] == "Established" && c["status"] == "True"), "{}: {conditions:?}", e.key);
            assert_eq!(got["status"]["storedVersions"], json!(["v1"]), "{}", e.key);
            expected["status"] = got["status"].clone();
        }
        assert_eq!(got, expected, "{}", e.key);
        // Spelled out: what another store set is kept.
        for field in ["uid", "creationTimestamp", "managedFields", "labels", "generation"] {
            assert_eq!(got["metadata"][field], e.object["metadata"][field], "{}: metadata.{field}", e.key);
        }
        let log = store.object_log(&ObjectKey::new(&e.resource, e.namespace.as_deref(), &e.name), None).unwrap();
        assert_eq!(log.len(), 1, "{}: {log:?}", e.key);
        assert_eq!((log[0].event.as_str(), log[0].note.as_str()), ("ADDED", NOTE), "{}", e.key);
    }
    // Definitions came first: the custom resource's key sorts before its CRD's, and it was
    // written after every definition.
    let widget = objects.iter().find(|e| e.name == "w1").unwrap();
    let crd_key = "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.acme.example.com";
    assert!(widget.key.as_str() < crd_key);
    let last_definition = objects.iter().filter(|e| e.is_definition()).map(|e| resource_version(&get(e))).max().unwrap();
    let first_other = objects.iter().filter(|e| !e.is_definition()).map(|e| resource_version(&get(e))).min().unwrap();
    assert!(last_definition < first_other, "definitions up to {last_definition}, other objects from {first_other}");
    assert_eq!(resource_version(&get(widget)), first_other, "the custom resource is the first key after the definitions");
}

// --- the tests -----------------------------------------------------------------------------------

/// Every built-in kind's fixture, a CRD and its custom resource, and a CRD as kube-apiserver 1.37
/// stores it (at v1beta1) go into a data directory as kube-apiserver kept them; the keys that
/// are no objects are skipped and counted. Importing again stops at the first object (exit
/// status 1, naming its key), or with --keep-going counts every one as refused.
#[test]
fn import_from_etcd_into_a_data_directory() {
    let Some(etcd) = start_etcd() else { return };
    let objects = fill(&etcd.url);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();

    let out = fieldstore(&["--data", data, "import", "--from-etcd", &etcd.url]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    println!("{stdout}{stderr}");
    assert_summary(&stdout, &objects);
    // Each skipped key is named on stderr with its reason.
    for (key, _, reason) in not_objects() {
        assert!(stderr.lines().any(|l| l.starts_with(&format!("skipped {key}: ")) && l.contains(reason)), "{key}: {stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");

    {
        let store = Store::open(Path::new(data), Options::default()).unwrap();
        assert_imported(&store, &objects);
    }

    // Again: the first key imported (the first definition) already exists.
    let again = fieldstore(&["--data", data, "import", "--from-etcd", &etcd.url]);
    let stderr = text(&again.stderr);
    assert_eq!(again.status.code(), Some(1), "{stderr}");
    let first = objects.iter().filter(|e| e.is_definition()).map(|e| e.key.as_str()).min().unwrap();
    let error = stderr.lines().last().unwrap_or("");
    assert!(error.starts_with(&format!("error: importing {first}: AlreadyExists (409): ")), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    let keep_going = fieldstore(&["--data", data, "import", "--from-etcd", &etcd.url, "--keep-going"]);
    let (stdout, stderr) = (text(&keep_going.stdout), text(&keep_going.stderr));
    assert!(keep_going.status.success(), "{stderr}");
    let refused = format!("{} refused (AlreadyExists)", objects.len());
    assert!(
        stdout.starts_with("imported 0 objects of 0 kinds at etcd revision ")
            && stdout.contains(&format!("skipped {} keys: {refused}, ", objects.len() + 5)),
        "{stdout}"
    );
    // Nothing was written twice.
    let store = Store::open(Path::new(data), Options::default()).unwrap();
    assert_imported(&store, &objects);
}

/// The destination is a store on etcd (here the same etcd, under its own prefix).
#[test]
fn import_from_etcd_into_a_store_on_etcd() {
    let Some(etcd) = start_etcd() else { return };
    let objects = fill(&etcd.url);
    let out = fieldstore(&["--etcd", &etcd.url, "--etcd-prefix", "/fs-import", "import", "--from-etcd", &etcd.url]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert_summary(&stdout, &objects);

    let store = Store::open_etcd(std::slice::from_ref(&etcd.url), "/fs-import", Options::default()).unwrap();
    for name in ["configmap-fixture", "deployment-fixture", "w1"] {
        let e = objects.iter().find(|e| e.name == name).unwrap();
        let got = store.get(&ObjectKey::new(&e.resource, e.namespace.as_deref(), &e.name), &GetOptions::default()).unwrap();
        let mut expected = e.object.clone();
        expected["metadata"]["resourceVersion"] = got["metadata"]["resourceVersion"].clone();
        assert_eq!(got, expected, "{}", e.key);
    }
    assert_imported(&store, &objects);

    // A destination under the source prefix would read its own writes: refused before reading.
    let out = fieldstore(&["--etcd", &etcd.url, "--etcd-prefix", "/registry/fs", "import", "--from-etcd", &etcd.url]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("overlaps the source prefix /registry"), "{}", text(&out.stderr));
}

/// An etcd that is not there: one clear line, a failure status, no data directory, no panic.
#[test]
fn import_from_an_unreachable_etcd_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    for url in ["http://127.0.0.1:1", "not a url", "https://127.0.0.1:1"] {
        let out = fieldstore(&["--data", data.to_str().unwrap(), "import", "--from-etcd", url]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{url}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{url}: {stderr}");
        assert!(stderr.starts_with(&format!("error: cannot read etcd at {url}: ")), "{url}: {stderr}");
        assert!(!stderr.contains("panicked"));
        assert!(!data.exists(), "{url}: no store is created for a source that cannot be read");
    }
}
