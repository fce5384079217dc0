//! An unmodified kube-apiserver (the reference build, `reference/`: v1.37) keeping its cluster
//! in fieldstore through `fieldstore serve --etcd-api`, as in a real cluster: the etcd API on
//! TLS with client certificates (kube-apiserver's `--etcd-cafile/--etcd-certfile/--etcd-keyfile`),
//! kube-apiserver compacting every 10 s (`--etcd-compaction-interval`, 5 min by default).
//!
//! - `kube_apiserver_keeps_its_cluster_in_fieldstore`: kubectl (the one on PATH, and the oldest,
//!   `kubectl.1.27`, when installed) creates, patches, server-side applies, scales and deletes
//!   ConfigMaps and Deployments, defines a CustomResourceDefinition and writes a custom resource
//!   (apply, patch, scale subresource, delete) under `kubectl get -w` and a client-go informer
//!   (`tests/go/clientgo/cmd/informer`, when Go is installed); then `kubectl fieldstore blame` and
//!   `history` (the plugin, on fieldstore's own HTTP API beside the etcd API) name each field's
//!   writer — the manager kube-apiserver's managedFields say owns it — and its past values; after
//!   kube-apiserver's compaction the watches go on and the history is still there.
//! - `fieldstore_killed_under_kube_apiserver_load`: kubectl writes in a loop, fieldstore is
//!   killed (SIGKILL) and restarted on the same data directory and port; every write kubectl saw
//!   acknowledged is there afterwards (through kube-apiserver and in fieldstore's own objects),
//!   kube-apiserver is ready again without a restart of its own, the informer sees the writes
//!   made after, and a custom resource of a definition put before the kills is an object with
//!   its history after them.
//!
//! Skipped, saying why, without `$REFERENCE_BIN/kube-apiserver` (default `reference/bin/`, which
//! `make reference` builds and CI does not have), kubectl, openssl or bash. `make on-fieldstore`
//! runs them with their output (`--nocapture`); `KEEP=1` keeps each run's directory (logs,
//! data, kubeconfigs).

// Helpers outside #[test] functions unwrap too: a panic is a failed test with its message.
#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Each test starts a kube-apiserver: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// A program on PATH.
fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(name)).find(|p| p.is_file())
}

/// What a run needs, found; `None` (having said why) when something is missing.
struct Tools {
    kube_apiserver: PathBuf,
    /// The kubectls to drive the cluster with: (label, binary).
    kubectls: Vec<(&'static str, PathBuf)>,
    go: Option<PathBuf>,
}

fn tools() -> Option<Tools> {
    // A relative REFERENCE_BIN is the repository's (`make` runs there, cargo's tests in `server/`).
    let bin = repo().join(std::env::var_os("REFERENCE_BIN").map_or_else(|| PathBuf::from("reference/bin"), PathBuf::from));
    let kube_apiserver = bin.join("kube-apiserver");
    if !kube_apiserver.is_file() {
        eprintln!("skipped: no {} (the reference build: `make reference`, or REFERENCE_BIN=DIR)", kube_apiserver.display());
        return None;
    }
    for tool in ["kubectl", "openssl", "bash"] {
        if which(tool).is_none() {
            eprintln!("skipped: no `{tool}` on PATH");
            return None;
        }
    }
    let kubectl = which("kubectl")?;
    let mut kubectls = vec![("kubectl", kubectl.clone())];
    // The oldest kubectl: on PATH, or beside kubectl (Google Cloud SDK's dispatcher installs
    // kubectl.1.27 … next to it).
    let oldest =
        which("kubectl.1.27").or_else(|| Some(kubectl.canonicalize().ok()?.with_file_name("kubectl.1.27")).filter(|p| p.is_file()));
    match oldest {
        Some(k) => kubectls.push(("kubectl.1.27", k)),
        None => eprintln!("note: no kubectl.1.27 (the oldest kubectl): driving with kubectl only"),
    }
    let go = which("go").or_else(|| Some(PathBuf::from("/usr/local/go/bin/go")).filter(|p| p.is_file()));
    if go.is_none() {
        eprintln!("note: no `go`: no client-go informer");
    }
    Some(Tools { kube_apiserver, kubectls, go })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The etcd API's CA, its server certificate and kube-apiserver's client certificate, as files
/// in `dir` (`etcd-ca.pem`, `etcd-server{,-key}.pem`, `etcd-client{,-key}.pem`).
fn etcd_certificates(dir: &Path) {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    std::fs::write(dir.join("etcd-ca.pem"), ca.pem()).unwrap();
    for (name, names, usage) in [
        ("etcd-server", vec!["127.0.0.1".to_string(), "localhost".to_string()], rcgen::ExtendedKeyUsagePurpose::ServerAuth),
        ("etcd-client", vec!["kube-apiserver-etcd-client".to_string()], rcgen::ExtendedKeyUsagePurpose::ClientAuth),
    ] {
        let mut params = rcgen::CertificateParams::new(names).unwrap();
        params.extended_key_usages = vec![usage];
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &ca, &ca_key).unwrap();
        std::fs::write(dir.join(format!("{name}.pem")), cert.pem()).unwrap();
        std::fs::write(dir.join(format!("{name}-key.pem")), key.serialize_pem()).unwrap();
    }
}

/// fieldstore and kube-apiserver on it, stopped (both) when dropped.
struct Cluster {
    dir: tempfile::TempDir,
    etcd_port: u16,
    fieldstore: Option<Child>,
    apiserver: Child,
    /// kube-apiserver's kubeconfig.
    kubeconfig: PathBuf,
    /// fieldstore's HTTP API's kubeconfig (`fieldstore kubeconfig`), for the plugin.
    fieldstore_kubeconfig: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.apiserver.kill();
        let _ = self.apiserver.wait();
        self.kill_fieldstore();
        if std::env::var_os("KEEP").is_some() {
            eprintln!("kept: {}", self.dir.path().display());
            self.dir.disable_cleanup(true);
        }
    }
}

impl Cluster {
    /// Starts fieldstore then kube-apiserver, and waits for kube-apiserver's `/readyz`.
    fn start(tools: &Tools) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let certs = Command::new("bash").arg(repo().join("reference/run.sh")).arg("certs").arg(d).status().unwrap();
        assert!(certs.success(), "reference/run.sh certs");
        etcd_certificates(d);
        let t0 = Instant::now();
        let mut c = Cluster {
            etcd_port: free_port(),
            fieldstore: None,
            apiserver: Command::new("true").spawn().unwrap(),
            kubeconfig: d.join("kubeconfig"),
            fieldstore_kubeconfig: d.join("fieldstore.kubeconfig"),
            dir,
        };
        c.start_fieldstore();
        let sport = free_port();
        let p = |name: &str| c.dir.path().join(name).to_str().unwrap().to_string();
        let log = std::fs::File::create(c.dir.path().join("apiserver.log")).unwrap();
        c.apiserver = Command::new(&tools.kube_apiserver)
            .args(["--etcd-servers", &format!("https://127.0.0.1:{}", c.etcd_port)])
            .args([
                "--etcd-cafile",
                &p("etcd-ca.pem"),
                "--etcd-certfile",
                &p("etcd-client.pem"),
                "--etcd-keyfile",
                &p("etcd-client-key.pem"),
            ])
            .args(["--etcd-compaction-interval", "10s"])
            .args(["--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", &sport.to_string()])
            .args(["--tls-cert-file", &p("serving.crt"), "--tls-private-key-file", &p("serving.key")])
            .args(["--token-auth-file", &p("tokens.csv"), "--authorization-mode", "AlwaysAllow"])
            .args(["--service-account-key-file", &p("sa.pub"), "--service-account-signing-key-file", &p("sa.key")])
            .args(["--service-account-issuer", "https://kubernetes.default.svc", "--service-cluster-ip-range", "10.0.0.0/24"])
            .args(["--endpoint-reconciler-type", "none"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let token = std::fs::read_to_string(c.dir.path().join("token")).unwrap();
        let kubeconfig = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: \"https://127.0.0.1:{sport}\", certificate-authority: \"{}\"}}\nusers:\n- name: admin\n  user: {{token: \"{}\"}}\ncontexts:\n- name: c\n  context: {{cluster: c, user: admin}}\ncurrent-context: c\n",
            p("ca.crt"),
            token.trim()
        );
        std::fs::write(&c.kubeconfig, kubeconfig).unwrap();
        let ready = c.wait_ready(Duration::from_secs(120));
        assert!(ready.is_some(), "kube-apiserver not ready on fieldstore's etcd API: {}", c.apiserver_log_tail());
        eprintln!("kube-apiserver ready on fieldstore's etcd API (TLS, client certificates) in {} ms", t0.elapsed().as_millis());
        c
    }

    /// Starts (or restarts) fieldstore on the cluster's data directory and etcd API port, and
    /// writes its HTTP API's kubeconfig.
    fn start_fieldstore(&mut self) {
        let d = self.dir.path();
        let p = |name: &str| d.join(name).to_str().unwrap().to_string();
        let log = std::fs::OpenOptions::new().create(true).append(true).open(d.join("fieldstore.log")).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_fieldstore"))
            .arg("--data")
            .arg(d.join("data"))
            .args(["serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--etcd-api", &format!("127.0.0.1:{}", self.etcd_port)])
            .args([
                "--etcd-certfile",
                &p("etcd-server.pem"),
                "--etcd-keyfile",
                &p("etcd-server-key.pem"),
                "--etcd-cafile",
                &p("etcd-ca.pem"),
            ])
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        // Whatever else it prints is read, so that it never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        // "fieldstore: serving on ADDR (http; …, kubernetes API http://ADDR, …, etcd API https://ADDR)"
        let http = line.split("kubernetes API ").nth(1).and_then(|r| r.split(&[',', ')'][..]).next()).unwrap_or_else(|| panic!("{line}"));
        let kubeconfig = Command::new(env!("CARGO_BIN_EXE_fieldstore")).args(["kubeconfig", "--server", http.trim()]).output().unwrap();
        assert!(kubeconfig.status.success());
        std::fs::write(&self.fieldstore_kubeconfig, kubeconfig.stdout).unwrap();
        self.fieldstore = Some(child);
    }

    /// SIGKILL to fieldstore.
    fn kill_fieldstore(&mut self) {
        if let Some(mut f) = self.fieldstore.take() {
            let _ = f.kill();
            let _ = f.wait();
        }
    }

    /// Waits for kube-apiserver's `/readyz` to answer `ok`; how long it took.
    fn wait_ready(&mut self, timeout: Duration) -> Option<Duration> {
        let t0 = Instant::now();
        while t0.elapsed() < timeout {
            if let Ok(Some(status)) = self.apiserver.try_wait() {
                panic!("kube-apiserver exited ({status}): {}", self.apiserver_log_tail());
            }
            if self.kubectl(&PathBuf::from("kubectl"), &["get", "--raw", "/readyz", "--request-timeout=5s"], None).is_ok_and(|o| o == "ok")
            {
                return Some(t0.elapsed());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        None
    }

    fn apiserver_log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.path().join("apiserver.log")).unwrap_or_default();
        log.lines().rev().take(30).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n")
    }

    /// A kubectl run on kube-apiserver: its stdout, or its stderr when it failed.
    fn kubectl(&self, kubectl: &Path, args: &[&str], stdin: Option<&str>) -> Result<String, String> {
        run(Command::new(kubectl).env("KUBECONFIG", &self.kubeconfig).args(args), stdin)
    }

    /// [`Cluster::kubectl`], panicking on failure.
    fn ok(&self, kubectl: &Path, args: &[&str], stdin: Option<&str>) -> String {
        self.kubectl(kubectl, args, stdin).unwrap_or_else(|e| panic!("kubectl {args:?}: {e}"))
    }

    /// An object read through kube-apiserver.
    fn object(&self, resource: &str, name: &str) -> Value {
        serde_json::from_str(&self.ok(Path::new("kubectl"), &["get", resource, name, "-o", "json", "--show-managed-fields"], None)).unwrap()
    }

    /// `kubectl fieldstore ARGS -o json` on fieldstore's HTTP API: its answer.
    fn plugin(&self, args: &[&str]) -> Value {
        let plugin_dir = Path::new(env!("CARGO_BIN_EXE_kubectl-fieldstore")).parent().unwrap();
        let path = std::env::join_paths(
            std::iter::once(plugin_dir.to_path_buf()).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
        )
        .unwrap();
        let out = run(
            Command::new("kubectl")
                .env("PATH", path)
                .arg("fieldstore")
                .arg("--kubeconfig")
                .arg(&self.fieldstore_kubeconfig)
                .args(args)
                .args(["-o", "json"]),
            None,
        )
        .unwrap_or_else(|e| panic!("kubectl fieldstore {args:?}: {e}"));
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("kubectl fieldstore {args:?}: {e}: {out}"))
    }

    /// The value and manager fieldstore's blame gives `path` of an object.
    fn blamed(&self, resource: &str, name: &str, path: &str) -> (Value, String) {
        let blame = self.plugin(&["blame", resource, name]);
        let lines = blame.get("lines").unwrap_or(&blame).as_array().unwrap_or_else(|| panic!("{blame}")).clone();
        let line =
            lines.iter().find(|l| l["path"] == path).unwrap_or_else(|| panic!("no {path} in the blame of {resource}/{name}: {blame}"));
        let manager = line.get("manager").or_else(|| line.pointer("/lastChange/manager")).and_then(Value::as_str).unwrap_or_default();
        (line["value"].clone(), manager.to_string())
    }

    /// fieldstore's history of `path`: (manager, before, after), newest first.
    fn history(&self, resource: &str, name: &str, path: &str) -> Vec<(String, Value, Value)> {
        self.history_in("default", resource, name, path)
    }

    /// [`Cluster::history`] of an object of `namespace`.
    fn history_in(&self, namespace: &str, resource: &str, name: &str, path: &str) -> Vec<(String, Value, Value)> {
        let h = self.plugin(&["history", resource, name, "--path", path, "-n", namespace]);
        let events = h.get("events").and_then(Value::as_array).unwrap_or_else(|| panic!("{h}"));
        events
            .iter()
            .map(|e| {
                let manager = e["manager"].as_str().unwrap_or_default().to_string();
                (manager, e.get("before").cloned().unwrap_or(Value::Null), e.get("after").cloned().unwrap_or(Value::Null))
            })
            .collect()
    }
}

/// Runs a command: its stdout, or its stderr (and status) when it failed.
fn run(cmd: &mut Command, stdin: Option<&str>) -> Result<String, String> {
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(|e| e.to_string())?;
    let input = stdin.unwrap_or("").to_string();
    let mut pipe = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || std::io::Write::write_all(&mut pipe, input.as_bytes()));
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let _ = writer.join();
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
    } else {
        Err(format!("{}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim_end()))
    }
}

/// The managers whose managedFields entry (as kube-apiserver answers the object) owns the field
/// at `path` (`["spec", "replicas"]`).
fn owners(object: &Value, path: &[&str]) -> Vec<String> {
    let entries = object.pointer("/metadata/managedFields").and_then(Value::as_array).cloned().unwrap_or_default();
    entries
        .iter()
        .filter(|e| {
            let mut at = &e["fieldsV1"];
            path.iter().all(|p| {
                at = &at[format!("f:{p}")];
                at.is_object()
            })
        })
        .map(|e| e["manager"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// A process whose stdout lines are collected as they come: a watch, an informer.
struct Lines {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Lines {
    fn spawn(cmd: &mut Command) -> Lines {
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (out, into) = (child.stdout.take().unwrap(), lines.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                into.lock().unwrap().push(line);
            }
        });
        Lines { child, lines }
    }

    /// Waits (up to a minute) for a line containing every word of `want`.
    fn wait_for(&self, want: &[&str]) -> bool {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(60) {
            if self.lines.lock().unwrap().iter().any(|l| want.iter().all(|w| l.split_whitespace().any(|x| x == *w))) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }

    fn text(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The client-go informer (`tests/go/clientgo/cmd/informer`) on ConfigMaps of `namespace`,
/// built into `dir`; `None` without Go.
fn informer(tools: &Tools, c: &Cluster, namespace: &str) -> Option<Lines> {
    let go = tools.go.as_ref()?;
    let bin = c.dir.path().join("informer");
    if !bin.is_file() {
        let t0 = Instant::now();
        let built = Command::new(go)
            .current_dir(repo().join("tests/go/clientgo"))
            .args(["build", "-o"])
            .arg(&bin)
            .arg("./cmd/informer")
            .stderr(Stdio::inherit())
            .status()
            .unwrap();
        assert!(built.success(), "go build ./cmd/informer");
        eprintln!("client-go informer built in {} ms", t0.elapsed().as_millis());
    }
    let informer =
        Lines::spawn(Command::new(bin).arg("-kubeconfig").arg(&c.kubeconfig).args(["-resource", "configmaps", "-namespace", namespace]));
    assert!(informer.wait_for(&["synced"]), "the informer did not sync: {}", informer.text());
    Some(informer)
}

/// A Deployment, the ConfigMaps' blame and history, through each kubectl.
fn built_in_kinds(c: &Cluster, tools: &Tools) {
    for (label, k) in &tools.kubectls {
        let t0 = Instant::now();
        let tag = if *label == "kubectl" { "new" } else { "old" };
        let (cm, web, tmp, applier) = (format!("cm-{tag}"), format!("web-{tag}"), format!("tmp-{tag}"), format!("applier-{tag}"));
        c.ok(k, &["create", "configmap", &cm, "--from-literal=a=1", "--from-literal=b=1"], None);
        c.ok(k, &["patch", "configmap", &cm, "-p", r#"{"data":{"b":"2"}}"#], None);
        let applied = format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {cm}}}\ndata: {{c: \"3\"}}\n");
        c.ok(k, &["apply", "--server-side", "--field-manager", &applier, "-f", "-"], Some(&applied));
        c.ok(k, &["create", "deployment", &web, "--image=nginx", "--replicas=1"], None);
        c.ok(k, &["scale", "deployment", &web, "--replicas=3"], None);
        c.ok(k, &["label", "deployment", &web, "tier=front"], None);
        c.ok(k, &["create", "configmap", &tmp, "--from-literal=x=1"], None);
        c.ok(k, &["delete", "configmap", &tmp], None);
        let kube_ms = t0.elapsed().as_millis();

        // fieldstore's blame names the writer kube-apiserver's managedFields name.
        let live = c.object("configmap", &cm);
        for (field, value) in [("a", "1"), ("b", "2"), ("c", "3")] {
            let (v, manager) = c.blamed("configmaps", &cm, &format!(".data.{field}"));
            assert_eq!(v, value, "{label}: .data.{field}");
            assert_eq!(vec![manager.clone()], owners(&live, &["data", field]), "{label}: .data.{field} blamed on {manager}");
        }
        assert_eq!(c.blamed("configmaps", &cm, ".data.c").1, applier);
        assert_eq!(c.blamed("configmaps", &cm, ".data.b").1, "kubectl-patch");
        let b = c.history("configmaps", &cm, ".data.b");
        assert_eq!((b[0].0.as_str(), b[0].1.clone(), b[0].2.clone()), ("kubectl-patch", "1".into(), "2".into()), "{label}: {b:?}");
        let deploy = c.object("deployment", &web);
        let (replicas, scaler) = c.blamed("deployments", &web, ".spec.replicas");
        assert_eq!(replicas, 3);
        assert_eq!(vec![scaler.clone()], owners(&deploy, &["spec", "replicas"]), "{label}: .spec.replicas blamed on {scaler}");
        let replicas = c.history("deployments", &web, ".spec.replicas");
        assert_eq!((replicas[0].1.clone(), replicas[0].2.clone()), (1.into(), 3.into()), "{label}: {replicas:?}");
        let (tier, labeler) = c.blamed("deployments", &web, ".metadata.labels.tier");
        assert_eq!(tier, "front");
        assert_eq!(vec![labeler], owners(&deploy, &["metadata", "labels", "tier"]));
        let log = c.plugin(&["log", "configmaps", &tmp]);
        let events: Vec<&str> = log.as_array().unwrap_or_else(|| panic!("{log}")).iter().filter_map(|w| w["event"].as_str()).collect();
        assert_eq!(events, ["DELETED", "ADDED"], "{label}: the deleted ConfigMap's log");
        eprintln!(
            "{label}: ConfigMap created, patched, applied; Deployment created, scaled, labelled; ConfigMap deleted ({kube_ms} ms); blame names {scaler} for .spec.replicas (1 -> 3)"
        );
    }
}

/// The Widget CustomResourceDefinition (`widgets.example.com`, scale subresource on
/// `.spec.size`), created and established through kube-apiserver.
fn define_widgets(c: &Cluster) {
    const WIDGETS: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  names: {kind: Widget, plural: widgets, singular: widget}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    subresources: {status: {}, scale: {specReplicasPath: .spec.size, statusReplicasPath: .status.ready}}\n    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: integer}, color: {type: string}}}, status: {type: object, properties: {ready: {type: integer}}}}}}\n";
    let k = Path::new("kubectl");
    c.ok(k, &["apply", "-f", "-"], Some(WIDGETS));
    c.ok(k, &["wait", "--for", "condition=established", "crd/widgets.example.com", "--timeout=60s"], None);
}

/// A CustomResourceDefinition and a custom resource, under `kubectl get -w`; the definition
/// deleted at the end.
fn custom_resources(c: &Cluster) {
    let k = Path::new("kubectl");
    define_widgets(c);
    let watch = Lines::spawn(Command::new("kubectl").env("KUBECONFIG", &c.kubeconfig).args([
        "get",
        "widgets",
        "-w",
        "--output-watch-events",
        "--no-headers",
    ]));
    std::thread::sleep(Duration::from_secs(1));
    let w1 = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 1, color: blue}\n";
    c.ok(k, &["apply", "--server-side", "--field-manager", "widget-applier", "-f", "-"], Some(w1));
    c.ok(k, &["patch", "widget", "w1", "--type=merge", "-p", r#"{"spec":{"color":"red"}}"#], None);
    c.ok(k, &["scale", "widget", "w1", "--replicas=4"], None);
    let live = c.object("widget", "w1");
    assert_eq!(c.blamed("widgets.example.com", "w1", ".spec.color"), ("red".into(), "kubectl-patch".into()));
    let (size, scaler) = c.blamed("widgets.example.com", "w1", ".spec.size");
    assert_eq!(size, 4);
    assert_eq!(vec![scaler.clone()], owners(&live, &["spec", "size"]), ".spec.size blamed on {scaler}");
    let color = c.history("widgets.example.com", "w1", ".spec.color");
    assert_eq!(
        color.iter().map(|(m, b, a)| (m.as_str(), b.clone(), a.clone())).collect::<Vec<_>>()[0],
        ("kubectl-patch", "blue".into(), "red".into())
    );
    let size = c.history("widgets.example.com", "w1", ".spec.size");
    assert_eq!((size[0].1.clone(), size[0].2.clone()), (1.into(), 4.into()), "{size:?}");
    c.ok(k, &["delete", "widget", "w1"], None);
    for event in ["ADDED", "MODIFIED", "DELETED"] {
        assert!(watch.wait_for(&[event, "w1"]), "kubectl get -w missed {event}: {}", watch.text());
    }
    eprintln!(
        "custom resource: applied by widget-applier, patched, scaled (.spec.size blamed on {scaler}), deleted; kubectl get -w:\n{}",
        watch.text()
    );
    // Deleting the definition: kube-apiserver deletes its objects then its key; fieldstore no
    // longer serves the type, its objects' history stays (engine/tests/store_etcd_objects.rs).
    c.ok(k, &["delete", "crd", "widgets.example.com", "--timeout=60s"], None);
    let gone = run(Command::new("kubectl").env("KUBECONFIG", &c.fieldstore_kubeconfig).args(["get", "widgets.example.com"]), None);
    assert!(gone.is_err(), "fieldstore still serves widgets: {gone:?}");
}

/// Waits (up to two minutes) for kube-apiserver's compaction to pass `revision`: fieldstore
/// answers a list at it 410 Expired.
fn wait_compacted(c: &Cluster, revision: &str) -> Duration {
    let t0 = Instant::now();
    let path = format!("/api/v1/namespaces/default/configmaps?resourceVersion={revision}&resourceVersionMatch=Exact");
    loop {
        let r = run(Command::new("kubectl").env("KUBECONFIG", &c.fieldstore_kubeconfig).args(["get", "--raw", &path]), None);
        match r {
            Err(e) if e.contains("Expired") || e.contains("too old") || e.contains("410") => return t0.elapsed(),
            _ if t0.elapsed() > Duration::from_secs(120) => panic!("no compaction past {revision} after 2 minutes: {r:?}"),
            _ => std::thread::sleep(Duration::from_millis(500)),
        }
    }
}

#[test]
fn kube_apiserver_keeps_its_cluster_in_fieldstore() {
    let Some(tools) = tools() else { return };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let t0 = Instant::now();
    let c = Cluster::start(&tools);
    let k = Path::new("kubectl");
    let informer = informer(&tools, &c, "default");
    let watch = Lines::spawn(Command::new("kubectl").env("KUBECONFIG", &c.kubeconfig).args([
        "get",
        "configmaps",
        "-w",
        "--output-watch-events",
        "--no-headers",
    ]));
    c.ok(k, &["create", "configmap", "first", "--from-literal=v=1"], None);
    let first_rv = c.object("configmap", "first")["metadata"]["resourceVersion"].as_str().unwrap().to_string();

    built_in_kinds(&c, &tools);
    custom_resources(&c);

    // kube-apiserver compacts (every 10 s): the watches go on, fieldstore's history stays.
    let waited = wait_compacted(&c, &first_rv);
    c.ok(k, &["create", "configmap", "after-compaction", "--from-literal=v=1"], None);
    c.ok(k, &["patch", "configmap", "after-compaction", "-p", r#"{"data":{"v":"2"}}"#], None);
    assert!(watch.wait_for(&["MODIFIED", "after-compaction"]), "kubectl get -w after compaction: {}", watch.text());
    if let Some(informer) = &informer {
        assert!(informer.wait_for(&["update", "default/after-compaction"]), "the informer after compaction: {}", informer.text());
        assert!(informer.wait_for(&["delete", "default/tmp-new"]), "{}", informer.text());
    }
    assert_eq!(c.history("configmaps", "cm-new", ".data.b")[0].1, "1", "history outlives compaction");
    eprintln!(
        "compacted past revision {first_rv} {} ms after the checks; the watches (kubectl get -w{}) went on; history kept",
        waited.as_millis(),
        if informer.is_some() { ", client-go informer" } else { "" }
    );
    eprintln!("kube_apiserver_keeps_its_cluster_in_fieldstore: {} ms", t0.elapsed().as_millis());
}

#[test]
fn fieldstore_killed_under_kube_apiserver_load() {
    let Some(tools) = tools() else { return };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let t0 = Instant::now();
    let mut c = Cluster::start(&tools);
    c.ok(Path::new("kubectl"), &["create", "namespace", "load"], None);
    define_widgets(&c);
    let informer = informer(&tools, &c, "load");

    // The load: ConfigMaps created then updated by two writers, one kubectl at a time each;
    // what kubectl saw acknowledged is recorded (name, value).
    let acked: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let load: Vec<_> = (0..2)
        .map(|writer| {
            let (acked, stop, kubeconfig) = (acked.clone(), stop.clone(), c.kubeconfig.clone());
            std::thread::spawn(move || {
                let kubectl = |args: &[&str]| {
                    run(
                        Command::new("kubectl").env("KUBECONFIG", &kubeconfig).args(["-n", "load", "--request-timeout=30s"]).args(args),
                        None,
                    )
                };
                let mut failed = Vec::new();
                for i in 0.. {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let name = format!("load-{writer}-{i}");
                    match kubectl(&["create", "configmap", &name, "--from-literal=v=0"]) {
                        Ok(_) => acked.lock().unwrap().push((name.clone(), "0".into())),
                        Err(e) => failed.push(e),
                    }
                    match kubectl(&["patch", "configmap", &name, "-p", r#"{"data":{"v":"1"}}"#]) {
                        Ok(_) => acked.lock().unwrap().push((name, "1".into())),
                        Err(e) => failed.push(e),
                    }
                }
                failed
            })
        })
        .collect();
    let acks = || acked.lock().unwrap().len();
    let wait_acks = |n: usize| {
        let t = Instant::now();
        while acks() < n {
            assert!(t.elapsed() < Duration::from_secs(180), "only {} writes acknowledged", acks());
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    // Two kills, each under load, each followed by writes acknowledged again.
    let mut kills = Vec::new();
    for _ in 0..2 {
        wait_acks(acks() + 10);
        c.kill_fieldstore();
        let at_kill = acks();
        std::thread::sleep(Duration::from_secs(1));
        c.start_fieldstore();
        let recovered =
            c.wait_ready(Duration::from_secs(120)).unwrap_or_else(|| panic!("kube-apiserver not ready again: {}", c.apiserver_log_tail()));
        assert!(c.apiserver.try_wait().unwrap().is_none(), "kube-apiserver exited");
        kills.push(format!("after {at_kill} acknowledged writes, ready again {} ms after the restart", recovered.as_millis()));
    }
    wait_acks(acks() + 10);
    stop.store(true, Ordering::Relaxed);
    let failed: Vec<String> = load.into_iter().flat_map(|l| l.join().unwrap()).collect();

    // Every acknowledged write is there: through kube-apiserver, and as fieldstore's object.
    let mut last: std::collections::BTreeMap<String, String> = Default::default();
    for (name, v) in acked.lock().unwrap().iter() {
        last.insert(name.clone(), v.clone());
    }
    let k = Path::new("kubectl");
    let through_apiserver: Value = serde_json::from_str(&c.ok(k, &["get", "configmaps", "-n", "load", "-o", "json"], None)).unwrap();
    let in_fieldstore = run(
        Command::new("kubectl").env("KUBECONFIG", &c.fieldstore_kubeconfig).args(["get", "configmaps", "-n", "load", "-o", "json"]),
        None,
    );
    let in_fieldstore: Value = serde_json::from_str(&in_fieldstore.unwrap()).unwrap();
    for (what, list) in [("kube-apiserver", &through_apiserver), ("fieldstore", &in_fieldstore)] {
        let items: std::collections::BTreeMap<&str, &str> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| (o["metadata"]["name"].as_str().unwrap(), o["data"]["v"].as_str().unwrap_or("")))
            .collect();
        for (name, v) in &last {
            // A later write kubectl did not see acknowledged may have been made all the same.
            let found = items.get(name.as_str());
            assert!(found.is_some_and(|f| *f >= v.as_str()), "{what}: acknowledged {name} v={v}, found {found:?}");
        }
    }
    // kube-apiserver writes again, and the informer sees it.
    c.ok(k, &["create", "configmap", "after-restart", "-n", "load", "--from-literal=v=1"], None);
    if let Some(informer) = &informer {
        assert!(informer.wait_for(&["add", "load/after-restart"]), "the informer after the restart: {}", informer.text());
    }
    // The type the definition (put before the kills) defines is fieldstore's after them: a custom
    // resource written now is an object with its writers.
    let w = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w2, namespace: load}\nspec: {size: 2, color: green}\n";
    c.ok(k, &["apply", "--server-side", "--field-manager", "widget-applier", "-f", "-"], Some(w));
    c.ok(k, &["scale", "widget", "w2", "-n", "load", "--replicas=6"], None);
    let blame = c.plugin(&["blame", "widgets.example.com", "w2", "-n", "load"]);
    let size = blame.as_array().and_then(|l| l.iter().find(|l| l["path"] == ".spec.size")).unwrap_or_else(|| panic!("{blame}"));
    assert_eq!(size["value"], 6, "{blame}");
    assert_eq!(c.history_in("load", "widgets.example.com", "w2", ".spec.size")[0].1, 2);
    // Its history too: the first ConfigMap's value, 0 then 1, each by its writer.
    let v = c.history_in("load", "configmaps", "load-0-0", ".data.v");
    let v: Vec<_> = v.iter().map(|(m, b, a)| (m.as_str(), b.clone(), a.clone())).collect();
    assert_eq!(v, [("kubectl-patch", "0".into(), "1".into()), ("kubectl-create", Value::Null, "0".into())]);
    eprintln!(
        "kill -9 of fieldstore twice under kubectl load ({}); kube-apiserver not restarted; {} writes acknowledged in all, {} refused while down {failed:?}; all present, with their history{}",
        kills.join("; "),
        acks(),
        failed.len(),
        if informer.is_some() { "; the informer saw the writes after" } else { "" }
    );
    eprintln!("fieldstore_killed_under_kube_apiserver_load: {} ms", t0.elapsed().as_millis());
}
