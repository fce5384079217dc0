//! `fieldstore serve --etcd-api` with etcd's own client: `etcdctl` (3.4, `ETCDCTL_API=3`) runs
//! one script of commands — puts and gets (prefix, limit, keys only, old revisions,
//! sorting, binary and large values), deletes, transactions, watches from a revision,
//! leases (grant, keep-alive, time-to-live, revoke, expiry deleting keys), compaction and what
//! follows it, endpoint status and health, and the errors etcd sends — against fieldstore and,
//! when an `etcd` binary is installed, against a real etcd: the two transcripts, with
//! revisions taken relative to each server's first one and lease ids, cluster ids and timings
//! blanked, must be equal. Without etcd, the transcript's key lines are checked on their own.
//! Skipped (with the reason) when `etcdctl` is missing.

// Helpers outside #[test] functions unwrap too: a panic is a failed test with its message.
#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

#[path = "../../tests/support/etcd_member.rs"]
mod etcd_member;

/// Stops the server when the test ends, failed or not.
struct Stop(std::process::Child);

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn etcdctl_available() -> bool {
    let ok = Command::new("etcdctl").arg("version").env("ETCDCTL_API", "3").output().is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: no `etcdctl` on PATH (Debian: apt-get install etcd-client)");
    }
    ok
}

/// Starts `fieldstore serve --etcd-api 127.0.0.1:0`; its etcd endpoint.
fn start_fieldstore(dir: &std::path::Path) -> (Stop, String) {
    let (stop, endpoint, _) = start_fieldstore_with(dir, &[]);
    (stop, endpoint)
}

/// [`start_fieldstore`] with more `serve` flags; also the line it printed.
fn start_fieldstore_with(dir: &std::path::Path, flags: &[&str]) -> (Stop, String, String) {
    let mut server = Command::new(env!("CARGO_BIN_EXE_fieldstore"))
        .arg("--data")
        .arg(dir.join("data"))
        .args(["serve", "--listen", "127.0.0.1:0", "--no-http", "--etcd-api", "127.0.0.1:0"])
        .args(flags)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn fieldstore serve");
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap()).read_line(&mut line).unwrap();
    // "fieldstore: serving on ADDR (…, etcd API http://ADDR)"
    let endpoint = line.split("etcd API http://").nth(1).and_then(|r| r.split(&[')', ','][..]).next()).expect("the etcd API's address");
    (Stop(server), endpoint.trim().to_string(), line)
}

/// One server under test.
struct Target {
    endpoint: String,
    /// Its revision before the script.
    base: i64,
}

/// An etcdctl run: exit status, stdout, stderr without the client's retry log lines.
fn etcdctl(endpoint: &str, args: &[&str], stdin: &[u8]) -> (i32, String, String) {
    let mut child = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .arg(format!("--endpoints={endpoint}"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).lines().filter(|l| !l.starts_with("{\"level\"")).collect::<Vec<_>>().join("\n");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
}

impl Target {
    fn new(endpoint: String) -> Target {
        let (_, out, _) = etcdctl(&endpoint, &["get", "/", "-w", "json"], b"");
        let v: Value = serde_json::from_str(&out).unwrap();
        Target { endpoint, base: v["header"]["revision"].as_i64().unwrap_or(0) }
    }

    fn run(&self, args: &[&str], stdin: &[u8]) -> String {
        let (code, out, err) = etcdctl(&self.endpoint, args, stdin);
        format!(
            "$ etcdctl {}\n{}{}{}",
            self.shown(args),
            self.normalise(&out),
            self.normalise(&err),
            if code == 0 { String::new() } else { format!("\n[exit {code}]") }
        )
    }

    /// A command line as the transcript shows it: revisions relative to the base.
    fn shown(&self, args: &[&str]) -> String {
        let relative = |n: &str| n.parse::<i64>().map_or(n.to_string(), |n| format!("base+{}", n - self.base));
        let mut shown = Vec::new();
        for (i, a) in args.iter().enumerate() {
            shown.push(match a.strip_prefix("--rev=") {
                Some(n) => format!("--rev={}", relative(n)),
                None if i > 0 && args[i - 1] == "compaction" => relative(a),
                None if a.len() == 16 && a.chars().all(|c| c.is_ascii_hexdigit()) => "<lease>".into(),
                None => (*a).to_string(),
            });
        }
        shown.join(" ")
    }

    /// The revision `n` steps after the base, as etcdctl takes it.
    fn rev(&self, n: i64) -> String {
        (self.base + n).to_string()
    }

    /// Revisions relative to the base; ids, lease ids, versions and timings blanked.
    fn normalise(&self, text: &str) -> String {
        let mut out = Vec::new();
        let text = text.replace(&self.endpoint, "<endpoint>");
        for line in text.split('\n') {
            if let Ok(mut v) = serde_json::from_str::<Value>(line) {
                if v.is_object() || v.is_array() {
                    self.normalise_json(&mut v);
                    out.push(v.to_string());
                    continue;
                }
            }
            let mut words: Vec<String> = line.split(' ').map(str::to_string).collect();
            for i in 0..words.len() {
                let prev = if i > 0 { words[i - 1].clone() } else { String::new() };
                if prev == "lease" || words[i].len() == 16 && words[i].chars().all(|c| c.is_ascii_hexdigit()) {
                    words[i] = "<lease>".into();
                } else if prev == "revision" {
                    if let Ok(n) = words[i].parse::<i64>() {
                        words[i] = format!("base+{}", n - self.base);
                    }
                } else if prev == "=" && words.get(i.wrapping_sub(2)).is_some_and(|w| w == "took") {
                    words[i] = "<took>".into();
                } else if words[i].starts_with("remaining(") {
                    words[i] = "remaining(<s>),".into();
                }
            }
            out.push(words.join(" "));
        }
        out.join("\n")
    }

    fn normalise_json(&self, v: &mut Value) {
        match v {
            Value::Object(m) => {
                for k in ["cluster_id", "member_id", "raft_term", "ID", "lease"] {
                    if m.get(k).is_some_and(|x| x.as_i64() != Some(0)) {
                        m.insert(k.into(), "<id>".into());
                    }
                }
                for k in ["revision", "create_revision", "mod_revision", "compact_revision"] {
                    if let Some(n) = m.get(k).and_then(Value::as_i64).filter(|n| *n > 0) {
                        m.insert(k.into(), format!("base+{}", n - self.base).into());
                    }
                }
                for (_, x) in m.iter_mut() {
                    self.normalise_json(x);
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.normalise_json(x)),
            _ => {}
        }
    }

    /// A watch from revision `from`, for as long as it takes to print `lines` lines (at most
    /// 20 s): its output.
    fn watch(&self, args: &[&str], lines: usize) -> String {
        let mut child = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .arg(format!("--endpoints={}", self.endpoint))
            .arg("watch")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut got = Vec::new();
        while got.len() < lines {
            match rx.recv_timeout(Duration::from_secs(20)) {
                Ok(l) => got.push(l),
                Err(_) => break,
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        format!("$ etcdctl watch {}\n{}", self.shown(args), self.normalise(&got.join("\n")))
    }
}

/// The script, run against one server: its transcript.
fn script(t: &Target) -> Vec<String> {
    let mut out = Vec::new();
    let mut run = |args: &[&str], stdin: &[u8]| out.push(t.run(args, stdin));
    run(&["put", "/a/1", "x"], b""); // base+1
    run(&["put", "/a/2", "y"], b""); // base+2
    run(&["put", "/a/1", "x2"], b""); // base+3
    run(&["put", "/bin"], b"a\x00b\xff\x00"); // base+4
    run(&["get", "/a/", "--prefix", "-w", "json"], b"");
    run(&["get", "/a/", "--prefix", "--limit=1", "-w", "json"], b"");
    run(&["get", "/a/", "--prefix", "--keys-only"], b"");
    run(&["get", "/a/1", &format!("--rev={}", t.rev(1))], b"");
    run(&["get", "/a/", "--prefix", "--sort-by=MODIFY", "--order=DESCEND"], b"");
    run(&["get", "/a/", "--from-key", "-w", "json"], b"");
    run(&["get", "/bin", "-w", "json"], b"");
    run(&["get", "/a/1", &format!("--rev={}", t.rev(100))], b"");
    // Transactions: create if absent (twice), then compares of each kind.
    let create = b"mod(\"/t\") = \"0\"\n\nput /t created\n\nget /t\n\n";
    run(&["txn"], create); // base+5
    run(&["txn"], create);
    run(
        &["txn", "-w", "json"],
        b"value(\"/t\") = \"created\"\nversion(\"/t\") > \"0\"\ncreate(\"/t\") < \"100000\"\n\nput /t v2\ndel /nothing\n\nget /t\n\n",
    ); // base+6
    run(&["txn"], format!("mod(\"/t\") = \"{}\"\n\nput /t v3\n\nget /t\n\n", t.rev(5)).as_bytes());
    run(&["del", "/a/", "--prefix", "--prev-kv"], b""); // base+7
    run(&["del", "/a/", "--prefix"], b"");
    // Watches from a revision: the replay, with and without prev_kv.
    run(&["put", "/w/a", "1"], b""); // base+8
    run(&["put", "/w/a", "2"], b""); // base+9
    run(&["del", "/w/a"], b""); // base+10
    out.push(t.watch(&["--prefix", "/w/", &format!("--rev={}", t.rev(8)), "--prev-kv"], 11));
    out.push(t.watch(&["/w/a", &format!("--rev={}", t.rev(8))], 9));
    // Leases.
    let (_, granted, _) = etcdctl(&t.endpoint, &["lease", "grant", "100"], b"");
    out.push(t.normalise(&granted));
    let id = granted.split_whitespace().nth(1).unwrap().to_string();
    let mut run = |args: &[&str], stdin: &[u8]| out.push(t.run(args, stdin));
    run(&["put", "--lease", &id, "/l/k", "v"], b""); // base+11
    run(&["lease", "timetolive", &id, "--keys"], b"");
    run(&["lease", "keep-alive", "--once", &id], b"");
    run(&["lease", "list"], b"");
    run(&["lease", "revoke", &id], b""); // base+12
    run(&["get", "/l/k"], b"");
    run(&["lease", "timetolive", &id], b"");
    run(&["put", "--lease", &id, "/l/k", "v"], b"");
    // Errors etcd sends.
    run(&["put", "", "v"], b"");
    run(&["put", "/huge"], &vec![b'a'; 2_000_000]);
    // Compaction, and reads and watches before it.
    run(&["compaction", &t.rev(9)], b"");
    run(&["get", "/w/a", &format!("--rev={}", t.rev(8))], b"");
    run(&["get", "/t", &format!("--rev={}", t.rev(9)), "-w", "json"], b"");
    run(&["watch", "/w/a", &format!("--rev={}", t.rev(8))], b"");
    run(&["compaction", &t.rev(9)], b"");
    run(&["endpoint", "health"], b"");
    out
}

/// Leases expire: a key attached to a 2 s lease is gone once the lease has run out.
fn expiry(t: &Target) -> String {
    let (_, granted, _) = etcdctl(&t.endpoint, &["lease", "grant", "2"], b"");
    let id = granted.split_whitespace().nth(1).unwrap().to_string();
    etcdctl(&t.endpoint, &["put", "--lease", &id, "/exp/k", "v"], b"");
    let before = t.run(&["get", "/exp/k"], b"");
    // Up to 20 s for the lease to run out and be revoked.
    let mut after = String::new();
    for _ in 0..40 {
        std::thread::sleep(Duration::from_millis(500));
        after = t.run(&["get", "/exp/k", "-w", "json"], b"");
        if !after.contains("\"kvs\"") {
            break;
        }
    }
    format!("{}\n{before}\n{after}", t.normalise(&granted))
}

#[test]
fn etcdctl_sees_fieldstore_as_etcd() {
    if !etcdctl_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (_server, endpoint) = start_fieldstore(dir.path());
    let ours = Target::new(endpoint);
    let transcript = script(&ours);
    let text = transcript.join("\n");
    // What must hold whatever etcd says.
    for expected in [
        "$ etcdctl get /a/ --prefix --keys-only\n/a/1\n\n/a/2\n",
        "$ etcdctl txn\nSUCCESS\n\nOK\n",
        "$ etcdctl txn\nFAILURE\n\n/t\ncreated\n",
        "$ etcdctl del /a/ --prefix --prev-kv\n2\n/a/1\nx2\n/a/2\ny\n",
        "Error: etcdserver: mvcc: required revision has been compacted",
        "Error: etcdserver: mvcc: required revision is a future revision",
        "Error: etcdserver: key is not provided",
        "Error: etcdserver: request is too large",
        "lease <lease> already expired",
        "is healthy: successfully committed proposal: took = <took>",
        "compacted revision base+9",
    ] {
        assert!(text.contains(expected), "{expected:?} not in\n{text}");
    }
    // The binary value comes back byte for byte.
    let (_, bin, _) = etcdctl(&ours.endpoint, &["get", "/bin", "-w", "json"], b"");
    let v: Value = serde_json::from_str(&bin).unwrap();
    assert_eq!(v["kvs"][0]["value"], "YQBi/wA=", "base64 of a\\0b\\xff\\0");
    let status = etcdctl(&ours.endpoint, &["endpoint", "status", "-w", "json"], b"").1;
    let status: Value = serde_json::from_str(&status).unwrap();
    assert!(status[0]["Status"]["leader"] == status[0]["Status"]["header"]["member_id"], "{status}");
    let ours_expiry = expiry(&ours);
    let last_get = ours_expiry.rsplit("$ etcdctl get /exp/k -w json").next().unwrap();
    assert!(ours_expiry.contains("/exp/k\nv") && !last_get.contains("kvs"), "the key outlived its lease:\n{ours_expiry}");
    // The same script against etcd itself.
    let Some(member) =
        etcd_member::Member::single(etcd_member::fast_dir().join(format!("fieldstore-etcd-api-{}", std::process::id())), &[])
    else {
        return;
    };
    let reference = Target::new(member.url().trim_start_matches("http://").to_string());
    let theirs = script(&reference);
    for (a, b) in transcript.iter().zip(&theirs) {
        assert_eq!(a, b, "fieldstore (left) and etcd (right) differ");
    }
    assert_eq!(transcript.len(), theirs.len());
    let theirs_expiry = expiry(&reference);
    assert_eq!(ours_expiry, theirs_expiry);
    let _ = std::fs::remove_dir_all(&member.dir);
}

/// The watch protocol as etcd's Go-derived Rust client (`etcd-client`) speaks it, with the
/// same expectations of fieldstore and of etcd: several watches on one stream (ids picked from
/// 0, or given), a replay with prev_kv, `RequestProgress` (answered with watch id -1 at a
/// revision where everything was sent), cancel, a start before the compacted revision
/// (created, then canceled with `compact_revision`), and fragments of large responses.
async fn watch_protocol(url: &str) {
    use etcd_client::{Client, CompactionOptions, WatchOptions};
    let mut c = Client::connect([url], None).await.unwrap();
    let r1 = c.put("/p/a", "1", None).await.unwrap().header().unwrap().revision();
    c.put("/p/a", "2", None).await.unwrap();
    let (mut watcher, mut stream) =
        c.watch("/p/", Some(WatchOptions::new().with_prefix().with_start_revision(r1).with_prev_key())).await.unwrap();
    // The client reads the "created" answer itself: the first watch of a stream has id 0.
    assert_eq!(watcher.watch_id(), 0);
    let replay = stream.message().await.unwrap().unwrap();
    let values: Vec<_> = replay.events().iter().map(|e| e.kv().unwrap().value().to_vec()).collect();
    assert_eq!(values, vec![b"1".to_vec(), b"2".to_vec()]);
    assert_eq!(replay.events()[1].prev_kv().unwrap().value(), b"1");
    watcher.watch("/q", Some(WatchOptions::new().with_watch_id(7))).await.unwrap();
    let second = stream.message().await.unwrap().unwrap();
    assert!(second.created() && second.watch_id() == 7, "{second:?}");
    watcher.request_progress().await.unwrap();
    let progress = stream.message().await.unwrap().unwrap();
    let current = c.get("/p/a", None).await.unwrap().header().unwrap().revision();
    assert_eq!((progress.watch_id(), progress.events().len(), progress.header().unwrap().revision()), (-1, 0, current));
    watcher.cancel_by_id(7).await.unwrap();
    let canceled = stream.message().await.unwrap().unwrap();
    assert!(canceled.canceled() && canceled.watch_id() == 7, "{canceled:?}");
    let r3 = c.delete("/p/a", None).await.unwrap().header().unwrap().revision();
    let live = stream.message().await.unwrap().unwrap();
    assert_eq!((live.watch_id(), live.events().len()), (0, 1));
    assert_eq!(live.events()[0].kv().unwrap().mod_revision(), r3);
    // Large values: with `fragment`, responses of at most --max-request-bytes (1.5 MiB).
    let big = vec![b'v'; 700_000];
    let rf = c.put("/f/1", big.clone(), None).await.unwrap().header().unwrap().revision();
    c.put("/f/2", big.clone(), None).await.unwrap();
    c.put("/f/3", big.clone(), None).await.unwrap();
    let (_fw, mut fragments) =
        c.watch("/f/", Some(WatchOptions::new().with_prefix().with_start_revision(rf).with_fragment())).await.unwrap();
    let (mut responses, mut events) = (0, 0);
    while events < 3 {
        let m = fragments.message().await.unwrap().unwrap();
        responses += 1;
        events += m.events().len();
        assert!(m.events().iter().all(|e| e.kv().unwrap().value() == big.as_slice()));
    }
    assert_eq!((responses, events), (2, 3), "two fragments of at most 1.5 MiB");
    // A watch before the compacted revision.
    c.compact(r3, Some(CompactionOptions::new().with_physical())).await.unwrap();
    let (_w, mut old) = c.watch("/p/", Some(WatchOptions::new().with_prefix().with_start_revision(r1))).await.unwrap();
    let gone = old.message().await.unwrap().unwrap();
    assert!(gone.canceled() && gone.compact_revision() == r3, "{gone:?}");
}

#[test]
fn the_watch_protocol_is_etcds() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (_server, endpoint) = start_fieldstore(dir.path());
    rt.block_on(watch_protocol(&format!("http://{endpoint}")));
    let Some(member) =
        etcd_member::Member::single(etcd_member::fast_dir().join(format!("fieldstore-etcd-watch-{}", std::process::id())), &[])
    else {
        return;
    };
    rt.block_on(watch_protocol(&member.url()));
    let _ = std::fs::remove_dir_all(&member.dir);
}

/// A CA, and a certificate it signs for `names` with the given extended key usage: (PEM
/// certificate, PEM key).
fn signed(ca: &rcgen::Certificate, ca_key: &rcgen::KeyPair, names: &[&str], usage: rcgen::ExtendedKeyUsagePurpose) -> (String, String) {
    let mut params = rcgen::CertificateParams::new(names.iter().map(|n| (*n).to_string()).collect::<Vec<_>>()).unwrap();
    params.extended_key_usages = vec![usage];
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, ca, ca_key).unwrap();
    (cert.pem(), key.serialize_pem())
}

#[test]
fn client_certificates_as_kube_apiserver_presents_them() {
    if !etcdctl_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let (server_cert, server_key) = signed(&ca, &ca_key, &["127.0.0.1", "localhost"], rcgen::ExtendedKeyUsagePurpose::ServerAuth);
    let (client_cert, client_key) = signed(&ca, &ca_key, &["apiserver-etcd-client"], rcgen::ExtendedKeyUsagePurpose::ClientAuth);
    let file = |name: &str, pem: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, pem).unwrap();
        p.to_str().unwrap().to_string()
    };
    let (ca_pem, cert, key) = (file("ca.pem", &ca.pem()), file("server.pem", &server_cert), file("server-key.pem", &server_key));
    let (ccert, ckey) = (file("client.pem", &client_cert), file("client-key.pem", &client_key));
    let mut server = Command::new(env!("CARGO_BIN_EXE_fieldstore"))
        .arg("--data")
        .arg(dir.path().join("data"))
        .args(["serve", "--listen", "127.0.0.1:0", "--no-http", "--etcd-api", "127.0.0.1:0"])
        .args(["--etcd-certfile", &cert, "--etcd-keyfile", &key, "--etcd-cafile", &ca_pem])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let _stop = Stop(server);
    let endpoint = line.split("etcd API ").nth(1).and_then(|r| r.split(&[')', ','][..]).next()).unwrap().trim().to_string();
    assert!(endpoint.starts_with("https://"), "{line}");
    let with_cert = ["--cacert", &ca_pem, "--cert", &ccert, "--key", &ckey, "--command-timeout=5s"];
    let put = etcdctl(&endpoint, &[&with_cert[..], &["put", "/registry/tls", "ok"]].concat(), b"");
    assert_eq!((put.0, put.1.as_str()), (0, "OK\n"), "{put:?}");
    let get = etcdctl(&endpoint, &[&with_cert[..], &["get", "/registry/tls", "--print-value-only"]].concat(), b"");
    assert_eq!(get.1, "ok\n", "{get:?}");
    // Without a client certificate the handshake fails.
    let refused = etcdctl(&endpoint, &["--cacert", &ca_pem, "--command-timeout=3s", "get", "/registry/tls"], b"");
    assert_ne!(refused.0, 0, "{refused:?}");
}

/// Puts, transactions and ranges per second through etcd's API, fieldstore against etcd (both
/// on the same fast directory, `/dev/shm` when there is one); prints a table, asserts nothing.
/// `cargo test --release --test etcd_api -- --ignored --nocapture speed`; results in
/// `benches/ETCD_API_RESULTS.md`.
#[test]
#[ignore = "a measurement, not a test"]
fn speed_against_etcd() {
    use etcd_client::{Client, Compare, CompareOp, GetOptions, Txn, TxnOp};
    use std::time::Instant;
    async fn measure(url: &str) -> Vec<(String, f64)> {
        let c = Client::connect([url], None).await.unwrap();
        let value = vec![b'v'; 256];
        let mut out = Vec::new();
        let start = Instant::now();
        let mut one = c.clone();
        for i in 0..1000 {
            one.put(format!("/seq/{i:05}"), value.clone(), None).await.unwrap();
        }
        out.push(("put, 1 client (ops/s)".to_string(), 1000.0 / start.elapsed().as_secs_f64()));
        for clients in [16usize, 64] {
            let start = Instant::now();
            let per = 4000 / clients;
            let tasks: Vec<_> = (0..clients)
                .map(|t| {
                    let (mut c, value) = (c.clone(), value.clone());
                    tokio::spawn(async move {
                        for i in 0..per {
                            c.put(format!("/par/{t}/{i:05}"), value.clone(), None).await.unwrap();
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
            out.push((format!("put, {clients} clients (ops/s)"), (per * clients) as f64 / start.elapsed().as_secs_f64()));
        }
        // kube-apiserver's update: compare the mod revision read, then put, else get.
        let start = Instant::now();
        let tasks: Vec<_> = (0..16)
            .map(|t| {
                let mut c = c.clone();
                tokio::spawn(async move {
                    let key = format!("/par/{t}/00000");
                    let mut rev = c.get(key.as_str(), None).await.unwrap().kvs()[0].mod_revision();
                    for i in 0..200 {
                        let txn = Txn::new()
                            .when([Compare::mod_revision(key.as_str(), CompareOp::Equal, rev)])
                            .and_then([TxnOp::put(key.as_str(), format!("v{i}"), None)])
                            .or_else([TxnOp::get(key.as_str(), None)]);
                        rev = c.txn(txn).await.unwrap().header().unwrap().revision();
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        out.push(("update txn, 16 clients (ops/s)".to_string(), 3200.0 / start.elapsed().as_secs_f64()));
        let start = Instant::now();
        let mut one = c.clone();
        for _ in 0..100 {
            let r = one.get("/seq/", Some(GetOptions::new().with_prefix())).await.unwrap();
            assert_eq!(r.kvs().len(), 1000);
        }
        out.push(("range of 1,000 keys (ms)".to_string(), start.elapsed().as_secs_f64() * 1000.0 / 100.0));
        out
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir_in(etcd_member::fast_dir()).unwrap();
    let (_server, endpoint) = start_fieldstore(dir.path());
    let ours = rt.block_on(measure(&format!("http://{endpoint}")));
    let Some(member) =
        etcd_member::Member::single(etcd_member::fast_dir().join(format!("fieldstore-etcd-speed-{}", std::process::id())), &[])
    else {
        return;
    };
    let theirs = rt.block_on(measure(&member.url()));
    println!("| measure | fieldstore | etcd 3.4 | ratio |\n|---|---|---|---|");
    for ((name, a), (_, b)) in ours.iter().zip(&theirs) {
        println!("| {name} | {a:.1} | {b:.1} | {:.2} |", a / b);
    }
    let _ = std::fs::remove_dir_all(&member.dir);
}

/// A message whose field 1 is a varint where etcd's requests have bytes (a key).
#[derive(Clone, PartialEq, prost::Message)]
struct Malformed {
    #[prost(uint64, tag = "1")]
    key: u64,
}

#[test]
fn malformed_and_oversized_requests_are_refused_and_the_server_goes_on() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (_server, endpoint) = start_fieldstore(dir.path());
    rt.block_on(async {
        let channel = tonic::transport::Channel::from_shared(format!("http://{endpoint}")).unwrap().connect().await.unwrap();
        for method in ["/etcdserverpb.KV/Range", "/etcdserverpb.KV/Put", "/etcdserverpb.KV/DeleteRange", "/etcdserverpb.KV/Txn"] {
            let mut grpc = tonic::client::Grpc::new(channel.clone());
            grpc.ready().await.unwrap();
            let codec = tonic::codec::ProstCodec::<Malformed, ()>::default();
            let path = http::uri::PathAndQuery::from_static(method);
            let answer = grpc.unary(tonic::Request::new(Malformed { key: 7 }), path, codec).await;
            assert_eq!(answer.map(|_| ()).unwrap_err().code(), tonic::Code::Internal, "{method}");
        }
        // Above etcd's request limit plus its gRPC allowance (2 MiB): refused by the transport.
        let mut client = etcd_client::Client::connect([format!("http://{endpoint}")], None).await.unwrap();
        let refused = client.put("/big", vec![0u8; 3 << 20], None).await;
        assert!(refused.is_err(), "{refused:?}");
        // A transaction nested deeper than prost's recursion limit is a decoding error too.
        let mut txn = etcd_client::Txn::new();
        for _ in 0..200 {
            txn = etcd_client::Txn::new().and_then([etcd_client::TxnOp::txn(txn)]);
        }
        assert!(client.txn(txn).await.is_err());
        // And the server still answers.
        client.put("/after", "ok", None).await.unwrap();
        assert_eq!(client.get("/after", None).await.unwrap().kvs()[0].value(), b"ok");
    });
}

/// The etcd door is one of the server's doors: its requests are counted in the server's metrics
/// by etcd method, and its connections are under the per-client cap the other listeners keep.
#[test]
fn the_etcd_door_shares_the_metrics_and_connection_limits() {
    use std::io::Read;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (_server, endpoint, line) = start_fieldstore_with(dir.path(), &["--metrics", "127.0.0.1:0", "--max-connections-per-client", "2"]);
    let metrics = line.split("metrics http://").nth(1).and_then(|r| r.split(&[')', ',', '/'][..]).next()).unwrap().trim().to_string();
    rt.block_on(async {
        // One connection for the client.
        let mut client = etcd_client::Client::connect([format!("http://{endpoint}")], None).await.unwrap();
        client.put("/counted", "1", None).await.unwrap();
        assert_eq!(client.get("/counted", None).await.unwrap().kvs()[0].value(), b"1");
        // A second connection is within the cap; a third is closed at once.
        let second = std::net::TcpStream::connect(&endpoint).unwrap();
        let mut third = std::net::TcpStream::connect(&endpoint).unwrap();
        third.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 16];
        assert!(matches!(third.read(&mut buf), Ok(0) | Err(_)), "a connection beyond the cap stayed open");
        drop(second);
        // The client's own connection still works.
        client.put("/counted", "2", None).await.unwrap();
    });
    let mut conn = std::net::TcpStream::connect(&metrics).unwrap();
    conn.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
    let mut text = String::new();
    conn.read_to_string(&mut text).unwrap();
    for method in ["etcdserverpb.KV/Put", "etcdserverpb.KV/Range"] {
        let counted = text.lines().find(|l| {
            l.starts_with("fieldstore_requests_total") && l.contains(&format!("method=\"{method}\"")) && l.contains("code=\"0\"")
        });
        let n: u64 = counted.and_then(|l| l.rsplit(' ').next()).and_then(|n| n.parse().ok()).unwrap_or(0);
        assert!(n >= 1, "{method} not counted in:\n{text}");
    }
    assert!(text.contains("method=\"etcdserverpb.KV/Put\",code=\"0\"} 2"), "two puts counted:\n{text}");
}
