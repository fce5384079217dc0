//! Chaos on a fieldstore running on an etcd cluster: a 3-member etcd on 127.0.0.1, two
//! `fieldstore serve --etcd …` processes, 4 writers spread over both, 4 watchers. The etcd
//! leader is killed (-9) and restarted, then one fieldstore server is killed (-9); writers
//! and watchers of the dead server move to the other one. Then:
//! - every acknowledged write is readable at its revision, with its content;
//! - revisions are linearizable (a write acknowledged before another began has the smaller
//!   revision) and gap-free (watchers see consecutive revisions);
//! - each watcher's events are strictly increasing, without gap or duplicate across its
//!   reconnects, up to the last revision;
//! - the surviving server served throughout: it acknowledged writes after each fault. The
//!   longest pause between its acknowledgements is printed (`--nocapture`).
//!
//! Run alone: `cargo test --release -p fieldstore-server --test etcd_cluster -- --nocapture`.
//! Needs `etcd` and `etcdctl` (Debian's etcd-server and etcd-client); without them it prints
//! the reason and passes.

#![allow(clippy::unwrap_used)]

use fieldstore_server::proto::pb::{self, store_client::StoreClient};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tonic::transport::Channel;

#[path = "../../tests/support/etcd_member.rs"]
mod etcd_member;
use etcd_member::Member;

fn have(binary: &str) -> bool {
    Command::new(binary).arg("version").env("ETCDCTL_API", "3").output().is_ok_and(|o| o.status.success())
        || Command::new(binary).arg("--version").output().is_ok_and(|o| o.status.success())
}

/// Fast elections on loopback.
const TIMING: [&str; 4] = ["--heartbeat-interval", "50", "--election-timeout", "500"];

/// The member id of the leader, from `etcdctl endpoint status`, as the index of the member.
fn leader(members: &[Member]) -> Option<usize> {
    let endpoints: Vec<String> = members.iter().map(Member::url).collect();
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args(["endpoint", "status", "-w", "json", "--endpoints", &endpoints.join(",")])
        .output()
        .ok()?;
    let statuses: Value = serde_json::from_slice(&out.stdout).ok()?;
    let statuses = statuses.as_array()?;
    let leader = statuses.iter().find_map(|s| s["Status"]["leader"].as_u64())?;
    let endpoint = statuses.iter().find(|s| s["Status"]["header"]["member_id"].as_u64() == Some(leader))?["Endpoint"].as_str()?.to_string();
    members.iter().position(|m| m.url() == endpoint)
}

/// A `fieldstore serve` on the cluster.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(etcd: &str) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_fieldstore"))
            .args(["--etcd", etcd, "--etcd-prefix", "/chaos", "serve", "--listen", "127.0.0.1:0", "--no-http"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let addr = line.split_whitespace().nth(3).unwrap_or_else(|| panic!("no address in {line:?}")).to_string();
        Server { child, addr }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn client(addr: &str) -> Option<StoreClient<Channel>> {
    let ch = Channel::from_shared(format!("http://{addr}")).unwrap().connect_timeout(Duration::from_secs(1)).connect().await.ok()?;
    Some(StoreClient::new(ch).max_decoding_message_size(64 << 20))
}

fn body(v: &Value) -> Option<pb::Body> {
    Some(pb::Body { content_type: "application/json".into(), data: serde_json::to_vec(v).unwrap().into() })
}

fn object(b: Option<pb::Body>) -> Value {
    serde_json::from_slice(&b.unwrap().data).unwrap()
}

/// An acknowledged write.
#[derive(Debug, Clone)]
struct Ack {
    name: String,
    revision: u64,
    began: Instant,
    ended: Instant,
    server: usize,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_and_watches_survive_an_etcd_leader_and_a_server_killed() {
    if !have("etcd") || !have("etcdctl") {
        eprintln!("skipped: needs `etcd` and `etcdctl` on PATH (Debian: etcd-server, etcd-client)");
        return;
    }
    let root = tempfile::tempdir_in(etcd_member::fast_dir()).unwrap();
    let mut members: Vec<Member> = (0..3).map(|i| Member::new(&format!("m{i}"), root.path().join(format!("m{i}")))).collect();
    let cluster = members.iter().map(Member::cluster_entry).collect::<Vec<_>>().join(",");
    for m in &mut members {
        m.start(&cluster, "new", &TIMING);
    }
    let endpoints = members.iter().map(Member::url).collect::<Vec<_>>().join(",");
    let deadline = Instant::now() + Duration::from_secs(30);
    while leader(&members).is_none() {
        assert!(Instant::now() < deadline, "the etcd cluster did not elect a leader");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut servers = [Server::start(&endpoints), Server::start(&endpoints)];
    let addrs: Vec<String> = servers.iter().map(|s| s.addr.clone()).collect();
    let mut c0 = client(&addrs[0]).await.unwrap();
    let first = c0
        .create(pb::WriteRequest {
            resource: "configmaps".into(),
            namespace: "ns".into(),
            body: body(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "first"}})),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let start_rv: u64 = object(first.object)["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    // Set once every writer has stopped: watchers then read the last revision.
    let done = Arc::new(AtomicBool::new(false));
    let dead = Arc::new(Mutex::new(Vec::<usize>::new()));
    let acks = Arc::new(Mutex::new(Vec::<Ack>::new()));
    let t0 = Instant::now();

    // Writers: creates of unique names; on a failed request, the next name on the other
    // server when theirs is dead (a failed write's outcome is unknown: not counted).
    let mut writers = Vec::new();
    for w in 0..4usize {
        let (stop, dead, acks, addrs) = (stop.clone(), dead.clone(), acks.clone(), addrs.clone());
        writers.push(tokio::spawn(async move {
            let mut server = w % 2;
            let mut c = client(&addrs[server]).await.unwrap();
            let mut i = 0;
            while !stop.load(Ordering::SeqCst) {
                if dead.lock().unwrap().contains(&server) {
                    server = 1 - server;
                    c = client(&addrs[server]).await.unwrap();
                }
                let name = format!("w{w}-{i}");
                i += 1;
                let began = Instant::now();
                let req = pb::WriteRequest {
                    resource: "configmaps".into(),
                    namespace: "ns".into(),
                    body: body(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"w": w.to_string()}})),
                    ..Default::default()
                };
                match tokio::time::timeout(Duration::from_secs(90), c.create(req)).await {
                    Ok(Ok(resp)) => {
                        let o = object(resp.into_inner().object);
                        let revision = o["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
                        acks.lock().unwrap().push(Ack { name, revision, began, ended: Instant::now(), server });
                    }
                    _ => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        }));
    }

    // Watchers: from the first write on, reconnecting (to the other server when theirs is
    // dead) from the last revision seen.
    let mut watchers = Vec::new();
    for w in 0..4usize {
        let (done, dead, addrs) = (done.clone(), dead.clone(), addrs.clone());
        watchers.push(tokio::spawn(async move {
            let mut server = w % 2;
            let mut last = start_rv;
            let mut seen = Vec::<u64>::new();
            let mut reconnects = 0;
            let mut until: Option<u64> = None;
            loop {
                if dead.lock().unwrap().contains(&server) {
                    server = 1 - server;
                }
                let Some(mut c) = client(&addrs[server]).await else {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                };
                let req = pb::WatchRequest {
                    resource: "configmaps".into(),
                    namespace: "ns".into(),
                    resource_version: last.to_string(),
                    allow_watch_bookmarks: true,
                    ..Default::default()
                };
                let Ok(resp) = c.watch(req).await else {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    reconnects += 1;
                    continue;
                };
                let mut stream = resp.into_inner();
                loop {
                    if done.load(Ordering::SeqCst) && until.is_none() {
                        // The last revision: asked of the surviving server once writers stopped.
                        let mut c = client(&addrs[0]).await.unwrap();
                        until = Some(c.revision(pb::RevisionRequest::default()).await.unwrap().into_inner().revision);
                    }
                    if until.is_some_and(|u| last >= u) {
                        return (seen, reconnects);
                    }
                    match tokio::time::timeout(Duration::from_secs(2), stream.message()).await {
                        Ok(Ok(Some(ev))) if ev.r#type == "BOOKMARK" => {}
                        Ok(Ok(Some(ev))) if ev.r#type == "ADDED" => {
                            seen.push(ev.resource_version);
                            last = ev.resource_version;
                        }
                        Ok(Ok(Some(ev))) => panic!("watcher {w}: unexpected {} event", ev.r#type),
                        // Timeout: look at the stop flag again.
                        Err(_) => {}
                        // The stream broke (its server died): reconnect.
                        Ok(_) => {
                            reconnects += 1;
                            break;
                        }
                    }
                }
            }
        }));
    }

    // The faults.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let l = leader(&members).expect("a leader");
    let t_leader_killed = t0.elapsed();
    members[l].kill();
    tokio::time::sleep(Duration::from_secs(3)).await;
    members[l].start(&cluster, "existing", &TIMING);
    let t_leader_back = t0.elapsed();
    tokio::time::sleep(Duration::from_secs(3)).await;
    dead.lock().unwrap().push(1);
    servers[1].kill();
    let t_server_killed = t0.elapsed();
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::SeqCst);
    for w in writers {
        w.await.unwrap();
    }
    done.store(true, Ordering::SeqCst);
    let mut results = Vec::new();
    for w in watchers {
        results.push(tokio::time::timeout(Duration::from_secs(60), w).await.expect("watchers catch up").unwrap());
    }

    let mut acks = acks.lock().unwrap().clone();
    acks.sort_by_key(|a| a.revision);
    assert!(acks.len() > 20, "only {} writes acknowledged", acks.len());
    // Every acknowledged write is readable at its revision, with its content.
    let mut c = client(&addrs[0]).await.unwrap();
    for a in &acks {
        let got = c
            .get(pb::GetRequest {
                object: Some(pb::ObjectRef { resource: "configmaps".into(), namespace: "ns".into(), name: a.name.clone() }),
                resource_version: a.revision.to_string(),
                resource_version_match: "Exact".into(),
                ..Default::default()
            })
            .await
            .unwrap_or_else(|e| panic!("{} at {}: {e}", a.name, a.revision))
            .into_inner();
        let o = object(got.object);
        assert_eq!(o["metadata"]["name"], json!(a.name));
        assert_eq!(o["metadata"]["resourceVersion"], json!(a.revision.to_string()));
    }
    // Distinct revisions; linearizable: an ack before another began has the smaller revision.
    for pair in acks.windows(2) {
        assert!(pair[0].revision < pair[1].revision, "{pair:?}");
    }
    let mut by_end = acks.clone();
    by_end.sort_by_key(|a| a.ended);
    for a in &acks {
        for b in by_end.iter().take_while(|b| b.ended < a.began) {
            assert!(b.revision < a.revision, "{b:?} ended before {a:?} began");
        }
    }
    // Watchers: strictly increasing, consecutive (no gap, no duplicate) up to the end.
    let last = acks.last().unwrap().revision;
    for (w, (seen, reconnects)) in results.iter().enumerate() {
        assert_eq!(seen.first(), Some(&(start_rv + 1)), "watcher {w}");
        for pair in seen.windows(2) {
            assert_eq!(pair[1], pair[0] + 1, "watcher {w}: a gap or duplicate");
        }
        assert!(*seen.last().unwrap() >= last, "watcher {w} stopped at {:?}", seen.last());
        println!("watcher {w}: {} events, {reconnects} reconnects", seen.len());
    }
    // The surviving server served throughout: acknowledgements after each fault; the longest
    // pause between its acknowledgements.
    let survivor: Vec<&Ack> = by_end.iter().filter(|a| a.server == 0).collect();
    for (what, at) in
        [("the leader was killed", t_leader_killed), ("it came back", t_leader_back), ("server 1 was killed", t_server_killed)]
    {
        assert!(survivor.iter().any(|a| a.ended.duration_since(t0) > at), "no write acknowledged after {what}");
    }
    let stall = survivor.windows(2).map(|p| p[1].ended.duration_since(p[0].ended)).max().unwrap_or_default();
    println!(
        "{} writes acknowledged (revisions {}..={last}); leader killed at {t_leader_killed:.1?}, back at {t_leader_back:.1?}, \
         server 1 killed at {t_server_killed:.1?}; longest pause between the surviving server's acknowledgements: {stall:.2?}",
        acks.len(),
        start_rv + 1,
    );
}
