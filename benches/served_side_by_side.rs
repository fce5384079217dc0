//! `side_by_side.py`'s workload (`../shared/oracle/etcd`) with clients that cost little: etcd 3.4
//! and `fieldstore serve` in one run, driven by the same Rust gRPC clients, so that the servers,
//! not the clients, bound the throughput (issue 22; results in `benches/SERVED_RESULTS.md`).
//!
//! ```text
//! cargo build --release -p fieldstore-server     # the server binary this bench spawns
//! cargo bench --bench served_side_by_side                      # 8 and 32 clients, 2 rounds
//! cargo bench --bench served_side_by_side -- --n 20000 --clients 8,32 --rounds 2
//! ```
//!
//! Python grpcio clients spend 450–580 µs of CPU per create, more than either server, and share the
//! machine's two cores with it, so `side_by_side.py` measures its clients as much as the servers.
//! Here each client is a task on one tokio runtime (two threads) with its own HTTP/2 connection,
//! issuing one request at a time, as each Python process does. Per round and server (fresh, on
//! disk, fsync on; the order alternates between rounds):
//! - `creates`: `--n` (20,000) ConfigMap-shaped JSON objects of 1 KiB (the same bytes as
//!   side_by_side.py's `cm(i)`), split over `--clients` clients: etcd `Put` of
//!   `/registry/configmaps/<ns>/<name>`, fieldstore `Create`.
//! - `list`: one client lists them all in pages of 500 at one revision and parses every object
//!   (`serde_json::Value`), as side_by_side.py's client does with `json.loads`.
//!
//! Reported: throughput, the server's user and system CPU per request (`/proc/PID/stat`), and the
//! bench's own CPU per request. `--servers fieldstore` (or `etcd`) runs one side, e.g. under a
//! profiler. `SERVED_SIDE_BY_SIDE_SERVER` points at another `fieldstore` binary;
//! `etcd` must be on PATH.
#![allow(clippy::unwrap_used, reason = "a measurement whose setup fails has nothing to measure: it stops there")]

use fieldstore_server::proto::pb;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[path = "support/spawned_server.rs"]
#[allow(dead_code, reason = "the support module serves several benches; this one reads CPU split")]
mod spawned_server;
use spawned_server::*;
#[path = "support/args.rs"]
mod args;
#[path = "../tests/support/etcd_member.rs"]
mod etcd_member;
#[path = "support/threads.rs"]
mod threads;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Page size of the lists, as side_by_side.py.
const PAGE: i64 = 500;

/// side_by_side.py's `cm(i)`: namespace, name and a 1 KiB JSON ConfigMap.
fn cm(i: usize) -> (String, String, Vec<u8>) {
    let (ns, name) = (format!("ns-{}", i % 100), format!("name-{i}"));
    let mut o =
        serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": {"payload": ""}});
    // Python's json.dumps puts a space after ':' and ','; serde_json does not. Pad to 1,024 bytes
    // of this encoding.
    let pad = 1024usize.saturating_sub(serde_json::to_vec(&o).unwrap().len());
    o["data"]["payload"] = serde_json::Value::String("x".repeat(pad));
    (ns, name, serde_json::to_vec(&o).unwrap())
}

/// A server under test: which, its process, and how clients reach it.
enum Target {
    Etcd { member: etcd_member::Member, pid: u32, _dir: tempfile::TempDir },
    Fieldstore(Server),
}

impl Target {
    fn name(&self) -> &'static str {
        match self {
            Target::Etcd { .. } => "etcd",
            Target::Fieldstore(_) => "fieldstore",
        }
    }

    fn cpu(&self) -> (Duration, Duration) {
        let pid = match self {
            Target::Etcd { pid, .. } => *pid,
            Target::Fieldstore(s) => s.child.id(),
        };
        cpu_split_of(&format!("/proc/{pid}/stat"))
    }
}

/// The pid of the etcd listening on `url` (the member runs under a shell).
fn etcd_pid(url: &str) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let args: Vec<&[u8]> = cmd.split(|b| *b == 0).collect();
            if args.first().is_some_and(|a| a.ends_with(b"etcd")) && args.contains(&url.as_bytes()) {
                return pid;
            }
        }
        assert!(Instant::now() < deadline, "no etcd process serving {url}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn start(kind: &str, bin: &std::path::Path) -> Target {
    if kind == "etcd" {
        let dir = tempdir("served_side_by_side", "etcd");
        let member = etcd_member::Member::single(dir.path().join("etcd"), &[]).expect("an etcd binary on PATH");
        let pid = etcd_pid(&member.url());
        Target::Etcd { member, pid, _dir: dir }
    } else {
        Target::Fieldstore(Server::start(bin, "served_side_by_side", &[]))
    }
}

/// One phase's figures.
#[derive(Clone, Copy, Default)]
struct Phase {
    rate: f64,
    user_us: f64,
    system_us: f64,
    client_us: f64,
}

impl Phase {
    fn server_us(&self) -> f64 {
        self.user_us + self.system_us
    }
}

fn measure(t: &Target, n: usize, work: impl FnOnce()) -> Phase {
    let ((u0, s0), c0, start) = (t.cpu(), own_cpu(), Instant::now());
    work();
    let (wall, (u1, s1), c1) = (start.elapsed(), t.cpu(), own_cpu());
    let per = |d: Duration| 1e6 * d.as_secs_f64() / n as f64;
    Phase { rate: n as f64 / wall.as_secs_f64(), user_us: per(u1 - u0), system_us: per(s1 - s0), client_us: per(c1 - c0) }
}

async fn creates(t: &Target, n: usize, clients: usize) {
    let per = n / clients;
    let mut tasks = Vec::new();
    for c in 0..clients {
        let range = c * per..(c + 1) * per;
        match t {
            Target::Etcd { member, .. } => {
                let client = etcd_client::Client::connect([member.url()], None).await.expect("connect to etcd");
                tasks.push(tokio::spawn(async move {
                    let mut kv = client.kv_client();
                    for i in range {
                        let (ns, name, v) = cm(i);
                        kv.put(format!("/registry/configmaps/{ns}/{name}"), v, None).await.expect("put");
                    }
                }));
            }
            Target::Fieldstore(s) => {
                let mut client = s.client().await;
                tasks.push(tokio::spawn(async move {
                    for i in range {
                        let (ns, _, v) = cm(i);
                        let body = pb::Body { content_type: "application/json".into(), data: v.into() };
                        let req = pb::WriteRequest { resource: "configmaps".into(), namespace: ns, body: Some(body), ..Default::default() };
                        client.create(req).await.expect("create");
                    }
                }));
            }
        }
    }
    for task in tasks {
        task.await.unwrap();
    }
}

/// The transport's floor: `n` requests that do next to nothing on the server, from `clients`
/// clients as the creates: fieldstore's `Revision`, etcd's serializable `Range` of a missing key
/// (answered by the member without consensus).
async fn floor(t: &Target, n: usize, clients: usize) {
    let per = n / clients;
    let mut tasks = Vec::new();
    for _ in 0..clients {
        match t {
            Target::Etcd { member, .. } => {
                let client = etcd_client::Client::connect([member.url()], None).await.expect("connect to etcd");
                tasks.push(tokio::spawn(async move {
                    let mut kv = client.kv_client();
                    for _ in 0..per {
                        kv.get("/registry/none", Some(etcd_client::GetOptions::new().with_serializable())).await.expect("range");
                    }
                }));
            }
            Target::Fieldstore(s) => {
                let mut client = s.client().await;
                tasks.push(tokio::spawn(async move {
                    for _ in 0..per {
                        client.revision(pb::RevisionRequest {}).await.expect("revision");
                    }
                }));
            }
        }
    }
    for task in tasks {
        task.await.unwrap();
    }
}

/// The same creates on the store embedded in this process (`Store::create` from `clients` threads,
/// each body parsed from its bytes as the server does): the engine's own CPU per create, without
/// a transport. Its "server" CPU is this process's.
fn embedded(n: usize, clients: usize) -> Phase {
    let dir = tempdir("served_side_by_side", "embedded");
    let store = fieldstore::engine::store::Store::open(dir.path(), Default::default()).expect("open the store");
    let w = fieldstore::engine::store::WriteOptions::new("bench");
    let n = n / clients * clients;
    let (u0, s0) = cpu_split_of("/proc/self/stat");
    let wall = threads::run_threads(clients, n, |i| {
        let (ns, _, v) = cm(i);
        let object: serde_json::Value = serde_json::from_slice(&v).unwrap();
        store.create(&fieldstore::engine::store::Collection::new("configmaps", Some(&ns)), &object, &w).expect("create");
    });
    let (u1, s1) = cpu_split_of("/proc/self/stat");
    let per = |d: Duration| 1e6 * d.as_secs_f64() / n as f64;
    Phase { rate: n as f64 / wall.as_secs_f64(), user_us: per(u1 - u0), system_us: per(s1 - s0), client_us: 0.0 }
}

/// Lists every object in pages, parsing each; returns how many.
async fn list(t: &Target) -> usize {
    let mut n = 0;
    match t {
        Target::Etcd { member, .. } => {
            let client = etcd_client::Client::connect([member.url()], None).await.expect("connect to etcd");
            let mut kv = client.kv_client();
            let (mut key, end, mut rev) = (b"/registry/configmaps/".to_vec(), b"/registry/configmaps0".to_vec(), 0);
            loop {
                let opts = etcd_client::GetOptions::new().with_range(end.clone()).with_limit(PAGE).with_revision(rev);
                let r = kv.get(key.clone(), Some(opts)).await.expect("range");
                if rev == 0 {
                    rev = r.header().unwrap().revision();
                }
                for x in r.kvs() {
                    let _: serde_json::Value = serde_json::from_slice(x.value()).expect("a JSON value");
                }
                n += r.kvs().len();
                if !r.more() {
                    break;
                }
                key = r.kvs().last().unwrap().key().to_vec();
                key.push(0);
            }
        }
        Target::Fieldstore(s) => {
            let mut client = s.client().await;
            let mut cont = String::new();
            loop {
                let req = pb::ListRequest { resource: "configmaps".into(), limit: PAGE as u64, r#continue: cont, ..Default::default() };
                let r = client.list(req).await.expect("list").into_inner();
                let doc: serde_json::Value = serde_json::from_slice(&r.list.unwrap().data).expect("a JSON list");
                n += doc["items"].as_array().unwrap().len();
                cont = doc["metadata"]["continue"].as_str().unwrap_or("").to_string();
                if cont.is_empty() {
                    break;
                }
            }
        }
    }
    n
}

fn main() {
    let args = args::Args::parse(&[], &[]);
    let n = args.num("n", 20_000);
    let rounds = args.num("rounds", 2);
    let clients: Vec<usize> =
        args.text("clients").unwrap_or("8,32").split(',').map(|c| c.trim().parse().expect("--clients: numbers")).collect();
    // `--servers fieldstore` (or etcd) runs one side only, e.g. under a profiler.
    let servers: Vec<&str> = args.text("servers").unwrap_or("etcd,fieldstore").split(',').collect();
    let bin = std::env::var_os("SERVED_SIDE_BY_SIDE_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/fieldstore"));
    check_binary(&bin, "served_side_by_side");
    if !etcd_member::available() {
        eprintln!("served_side_by_side: no etcd binary on PATH");
        std::process::exit(2);
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    println!("served_side_by_side: {n} creates of 1 KiB, then a paged list ({PAGE}/page, every object parsed); load average {}", loadavg());
    let row = |p: &Phase| {
        format!(
            "{:>9.0}/s  server {:>6.1} µs ({:>6.1} user + {:>6.1} system)  client {:>5.1} µs",
            p.rate,
            p.server_us(),
            p.user_us,
            p.system_us,
            p.client_us
        )
    };
    let mut summary = Vec::new();
    for &c in &clients {
        let mut got: [Vec<(Phase, Phase, Phase)>; 2] = [Vec::new(), Vec::new()];
        for round in 0..rounds {
            let order = if round % 2 == 0 { ["etcd", "fieldstore"] } else { ["fieldstore", "etcd"] };
            for kind in order.into_iter().filter(|k| servers.contains(k)) {
                let t = start(kind, &bin);
                let base = measure(&t, n / c * c, || rt.block_on(floor(&t, n, c)));
                let create = measure(&t, n / c * c, || rt.block_on(creates(&t, n, c)));
                let mut listed = 0;
                let l = measure(&t, n / c * c, || listed = rt.block_on(list(&t)));
                assert_eq!(listed, n / c * c, "{}: listed {listed}", t.name());
                println!("  {c:>2} clients, round {}, {:<10} floor  {}", round + 1, t.name(), row(&base));
                println!("  {c:>2} clients, round {}, {:<10} create {}", round + 1, t.name(), row(&create));
                println!("  {c:>2} clients, round {}, {:<10} list   {}  (per object)", round + 1, t.name(), row(&l));
                got[usize::from(kind == "fieldstore")].push((create, l, base));
                if let Target::Fieldstore(mut s) = t {
                    s.terminate();
                }
            }
        }
        let embedded: Vec<Phase> = (0..rounds).map(|_| embedded(n, c)).collect();
        for (round, e) in embedded.iter().enumerate() {
            println!("  {c:>2} threads, round {}, embedded   create {}", round + 1, row(e));
        }
        summary.push((c, got, embedded));
    }
    println!("\nfieldstore / etcd, per round (load average {}):", loadavg());
    for (c, [e, f], emb) in &summary {
        if !f.is_empty() {
            let (floor, served): (Vec<String>, Vec<String>) = f
                .iter()
                .zip(emb)
                .map(|(f, m)| {
                    (
                        format!("{:.2}", (f.0.server_us() - f.2.server_us()) / m.server_us()),
                        format!("{:.2}", f.0.server_us() / m.server_us()),
                    )
                })
                .unzip();
            println!(
                "  {c:>2} clients: fieldstore served CPU per create / embedded {}; (served − floor request) / embedded {}",
                served.join(", "),
                floor.join(", ")
            );
        }
        if e.is_empty() || f.is_empty() {
            continue;
        }
        let ratios = |pick: &dyn Fn(&(Phase, Phase, Phase)) -> f64| {
            f.iter().zip(e).map(|(f, e)| format!("{:.2}", pick(f) / pick(e))).collect::<Vec<_>>().join(", ")
        };
        println!(
            "  {c:>2} clients: creates/s {}; server CPU per create {} (user {}); per create above the floor request {}; paged list objects/s {}; server CPU per listed object {}",
            ratios(&|p| p.0.rate),
            ratios(&|p| p.0.server_us()),
            ratios(&|p| p.0.user_us),
            ratios(&|p| p.0.server_us() - p.2.server_us()),
            ratios(&|p| p.1.rate),
            ratios(&|p| p.1.server_us())
        );
    }
}
