//! Load test of `fieldstore serve` over loopback gRPC (the issue's "N concurrent clients applying
//! to distinct and to shared objects plus 100 watchers; throughput, p50/p99 latency, and that no
//! event was lost"), with an embedded `Store` doing the same applies in the same process run as
//! the baseline.
//!
//! ```text
//! cargo build --release -p fieldstore-server     # the server binary this bench spawns
//! cargo bench --bench grpc_load
//! GRPC_LOAD_CLIENTS=16 GRPC_LOAD_OPS=4000 cargo bench --bench grpc_load
//! ```
//!
//! The bench spawns `target/release/fieldstore` (or `$GRPC_LOAD_SERVER`) as
//! `fieldstore --data DIR serve --listen 127.0.0.1:0`; it is another package's binary, so cargo
//! does not build it for this bench: build it first (the bench warns when a source file under
//! `server/`, `engine/`, `codec/` or `proto/` is newer than the binary).
//!
//! Workload, identical in every phase: `GRPC_LOAD_OPS` applies (2,000) split over
//! `GRPC_LOAD_CLIENTS` clients (8), each its own connection (or thread, embedded) issuing its
//! applies one after another. A client's even-numbered applies go to its own objects
//! `c{client}-{i % 50}` (`data`: `seq` = i and a 1,000-character `payload`), the odd-numbered ones
//! to the shared objects `shared-{i % 4}`, where each client owns the key `c{client}` (a
//! 1,000-character value starting with i) as field manager `client-{client}`, so there are no
//! conflicts (force off) and every apply writes a revision. Request bodies are built before the
//! clock starts; latency is client-side, from the call to its acknowledgement.
//!
//! Phases, each on a fresh data directory under `target/tmp` (sync on, the store's and the
//! server's default):
//! 1. `embedded`: `Store::apply` from N threads; the baseline. It runs three times (first, between
//!    the two gRPC phases, last) and the median round is reported and used for the ratios.
//! 2. `embedded+W`: the same with W (`GRPC_LOAD_WATCHERS`, 100) in-process watchers draining
//!    `Store::watch` (what fan-out costs without gRPC).
//! 3. `grpc`: N gRPC clients against a fresh server, no watchers.
//! 4. `grpc+W`: the load test proper: W gRPC watchers (own connections, `configmaps` in `ns` from
//!    the revision the `Revision` RPC reports, bookmarks allowed), then the N clients. After the
//!    writers finish, wait (at most `GRPC_LOAD_CATCHUP_SECS`, 30) until every watcher has
//!    received every write; then SIGTERM the server and check that it exits 0 and that every
//!    watch stream ended.
//!
//! Watch check (phases 2 and 4): the revisions written are final − starting revision and must
//! equal the set of resourceVersions the applies acknowledged; each watcher must receive exactly
//! that set as ADDED/MODIFIED events, in strictly increasing order, without duplicates. Reported:
//! events delivered, lost (expected but never received), duplicates, out-of-order, ERROR events;
//! the delivery time of each event (receipt − acknowledgement of the write, negative when the
//! event beat the acknowledgement to the client) and the catch-up lag (last watcher's receipt of
//! the last revision − last acknowledgement).
//!
//! `GRPC_LOAD_PHASES` (a comma-separated subset of `embedded,embedded+W,grpc,grpc+W`) runs only
//! some phases; the ratios need `embedded`.
//!
//! CPU: the bench process's (clients, watchers, or the embedded store) and the server's, from
//! `/proc/PID/stat`, from the start of the writes until every watcher caught up; per apply.
//! The machine's load average is printed at the start and the end. Results: `benches/GRPC_LOAD_RESULTS.md`.
#![allow(clippy::unwrap_used, reason = "a measurement whose setup fails has nothing to measure: it stops there")]

use fieldstore::engine::store::{Collection, Options, Store, WatchEvent, WatchOptions, WriteOptions};
use fieldstore_server::proto::pb::{self, store_client::StoreClient};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tonic::transport::Channel;

#[path = "support/grpc_watchers.rs"]
mod grpc_watchers;
use grpc_watchers::*;
#[path = "support/spawned_server.rs"]
mod spawned_server;
use spawned_server::*;

// The `fieldstore` binary runs on mimalloc; so does the bench (the embedded store runs here).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const NS: &str = "ns";
const RESOURCE: &str = "configmaps";
const DISTINCT_PER_CLIENT: usize = 50;
const SHARED: usize = 4;
const VALUE_CHARS: usize = 1000;
/// One object is written here before the watches start, so that their starting revision is not
/// 0: a watch from resourceVersion "0" (or unset) starts with the current objects as synthetic
/// ADDED events (Kubernetes' semantics), not from revision 0.
const SETUP_NS: &str = "setup";

fn setup_object() -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "setup", "namespace": SETUP_NS}, "data": {"k": "v"}})
}

struct Config {
    clients: usize,
    ops: usize,
    watchers: usize,
    catchup: Duration,
    server: PathBuf,
}

fn env_num(k: &str, default: usize) -> usize {
    std::env::var(k).ok().map_or(default, |v| v.trim().parse().unwrap_or_else(|_| panic!("{k}: not a number: {v}")))
}

impl Config {
    fn from_env() -> Config {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        Config {
            clients: env_num("GRPC_LOAD_CLIENTS", 8).max(1),
            ops: env_num("GRPC_LOAD_OPS", 2000).max(1),
            watchers: env_num("GRPC_LOAD_WATCHERS", 100),
            catchup: Duration::from_secs(env_num("GRPC_LOAD_CATCHUP_SECS", 30) as u64),
            server: std::env::var_os("GRPC_LOAD_SERVER").map_or_else(|| root.join("target/release/fieldstore"), PathBuf::from),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The workload.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Distinct,
    Shared,
}

struct Op {
    kind: Kind,
    manager: String,
    config: Value,
    body: Vec<u8>,
}

fn value(seed: usize, tag: &str) -> String {
    let mut s = format!("{seed:08}-{tag}-");
    let alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut i = seed;
    while s.len() < VALUE_CHARS {
        s.push(alphabet[i % alphabet.len()] as char);
        i = i.wrapping_mul(31).wrapping_add(7);
    }
    s
}

/// The applies of client `c`, in order.
fn plan(c: usize, n: usize) -> Vec<Op> {
    let manager = format!("client-{c}");
    (0..n)
        .map(|j| {
            let i = j / 2;
            let (kind, name, data) = if j % 2 == 0 {
                let name = format!("c{c}-{}", i % DISTINCT_PER_CLIENT);
                let payload = value(c * 1000 + i % DISTINCT_PER_CLIENT, &name);
                (Kind::Distinct, name, json!({"seq": i.to_string(), "payload": payload}))
            } else {
                let name = format!("shared-{}", i % SHARED);
                (Kind::Shared, name, json!({ format!("c{c}"): value(i, &manager) }))
            };
            let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS}, "data": data});
            let body = serde_json::to_vec(&config).unwrap();
            Op { kind, manager: manager.clone(), config, body }
        })
        .collect()
}

fn plans(cfg: &Config) -> Vec<Vec<Op>> {
    (0..cfg.clients).map(|c| plan(c, cfg.ops / cfg.clients + usize::from(c < cfg.ops % cfg.clients))).collect()
}

/// What one writer saw.
#[derive(Default)]
struct WriterOut {
    started: Option<Instant>,
    distinct: Vec<Duration>,
    shared: Vec<Duration>,
    /// (resourceVersion, acknowledged at)
    acks: Vec<(u64, Instant)>,
    errors: Vec<String>,
    /// Largest response object, per kind (distinct, shared).
    bytes: [usize; 2],
}

impl WriterOut {
    fn record(&mut self, kind: Kind, t0: Instant, t1: Instant, rv: u64, bytes: usize) {
        self.started.get_or_insert(t0);
        let k = usize::from(kind == Kind::Shared);
        if kind == Kind::Distinct { &mut self.distinct } else { &mut self.shared }.push(t1 - t0);
        self.acks.push((rv, t1));
        self.bytes[k] = self.bytes[k].max(bytes);
    }
}

// ---------------------------------------------------------------------------------------------
// Phases.

struct Shutdown {
    status: Option<ExitStatus>,
    took: Duration,
    watchers_ended: usize,
    watchers_last_bookmark: usize,
    watchers_failed: usize,
}

struct PhaseResult {
    name: String,
    ops: usize,
    errors: Vec<String>,
    wall: Duration,
    distinct: Vec<Duration>,
    shared: Vec<Duration>,
    bytes: [usize; 2],
    revisions: u64,
    acked_unique: usize,
    /// CPU of the bench process and of the server, from the start of the writes until every
    /// watcher caught up.
    cpu_self: Duration,
    cpu_server: Option<Duration>,
    watch: Option<WatchReport>,
    shutdown: Option<Shutdown>,
}

fn merge(name: &str, outs: Vec<WriterOut>, revisions: u64) -> (PhaseResult, HashMap<u64, Instant>, Instant) {
    let start = outs.iter().filter_map(|o| o.started).min().unwrap_or_else(Instant::now);
    let last_ack = outs.iter().flat_map(|o| o.acks.iter().map(|a| a.1)).max().unwrap_or(start);
    let mut r = PhaseResult {
        name: name.to_string(),
        ops: 0,
        errors: Vec::new(),
        wall: last_ack - start,
        distinct: Vec::new(),
        shared: Vec::new(),
        bytes: [0, 0],
        revisions,
        acked_unique: 0,
        cpu_self: Duration::ZERO,
        cpu_server: None,
        watch: None,
        shutdown: None,
    };
    let mut acks = HashMap::new();
    for o in outs {
        r.ops += o.acks.len();
        r.errors.extend(o.errors);
        r.distinct.extend(o.distinct);
        r.shared.extend(o.shared);
        r.bytes = [r.bytes[0].max(o.bytes[0]), r.bytes[1].max(o.bytes[1])];
        for (rv, at) in o.acks {
            acks.insert(rv, at);
        }
    }
    r.acked_unique = acks.len();
    r.distinct.sort();
    r.shared.sort();
    (r, acks, last_ack)
}

fn open_store() -> (tempfile::TempDir, Store) {
    let dir = tempdir("grpc-load", "embedded");
    let store = Store::open(dir.path().join("data"), Options::default()).expect("open store");
    (dir, store)
}

fn embedded_phase(cfg: &Config, watchers: usize) -> PhaseResult {
    let (_dir, store) = open_store();
    let plans = plans(cfg);
    store.apply(&Collection::new(RESOURCE, Some(SETUP_NS)), &setup_object(), &WriteOptions::new("setup")).expect("setup write");
    let rev0 = store.revision().0;
    let stop = AtomicBool::new(false);
    let progress: Vec<Arc<Progress>> = (0..watchers).map(|_| Arc::default()).collect();
    let barrier = std::sync::Barrier::new(cfg.clients + 1);
    let registered = std::sync::Barrier::new(watchers + 1);
    std::thread::scope(|s| {
        let watcher_handles: Vec<_> = progress.iter().map(|p| s.spawn(|| embedded_watcher(&store, rev0, p, &stop, &registered))).collect();
        // As in the gRPC phase, every watcher is registered before the first write.
        registered.wait();
        let writers: Vec<_> = plans
            .into_iter()
            .map(|ops| {
                let (store, barrier) = (&store, &barrier);
                s.spawn(move || {
                    let mut out = WriterOut::default();
                    barrier.wait();
                    for op in ops {
                        let opts = WriteOptions::new(op.manager.as_str());
                        let t0 = Instant::now();
                        let res = store.apply(&Collection::new(RESOURCE, Some(NS)), &op.config, &opts);
                        let t1 = Instant::now();
                        match res {
                            Ok(v) => {
                                let rv = v
                                    .pointer("/metadata/resourceVersion")
                                    .and_then(Value::as_str)
                                    .and_then(|s| s.parse().ok())
                                    .unwrap_or(0);
                                // Object sizes are reported from the gRPC responses only.
                                out.record(op.kind, t0, t1, rv, 0);
                            }
                            Err(e) => out.errors.push(e.to_string()),
                        }
                    }
                    out
                })
            })
            .collect();
        let cpu0 = own_cpu();
        barrier.wait();
        let outs: Vec<WriterOut> = writers.into_iter().map(|h| h.join().unwrap()).collect();
        let revisions = store.revision().0 - rev0;
        let (mut r, acks, last_ack) = merge(if watchers > 0 { "embedded+W" } else { "embedded" }, outs, revisions);
        if watchers > 0 {
            let t = Instant::now();
            while !caught_up(&progress, revisions) && t.elapsed() < cfg.catchup {
                std::thread::sleep(Duration::from_millis(1));
            }
            let (ok, wait) = (caught_up(&progress, revisions), t.elapsed());
            r.cpu_self = own_cpu() - cpu0;
            stop.store(true, Ordering::Release);
            let outs: Vec<WatcherOut> = watcher_handles.into_iter().map(|h| h.join().unwrap()).collect();
            r.watch = Some(check_watchers(&outs, &acks, last_ack, ok, wait));
        } else {
            r.cpu_self = own_cpu() - cpu0;
        }
        r
    })
}

async fn grpc_phase(cfg: &Config, watchers: usize) -> PhaseResult {
    let extra = if watchers > 100 { vec!["--max-watches-per-client".to_string(), watchers.to_string()] } else { Vec::new() };
    let mut server = Server::start(&cfg.server, "grpc-load", &extra);
    let mut control = server.client().await;
    let setup = pb::WriteRequest {
        resource: RESOURCE.into(),
        namespace: SETUP_NS.into(),
        body: Some(pb::Body { content_type: "application/json".into(), data: serde_json::to_vec(&setup_object()).unwrap().into() }),
        field_manager: "setup".into(),
        ..Default::default()
    };
    control.apply(setup).await.expect("setup write");
    let rev0 = control.revision(pb::RevisionRequest {}).await.expect("Revision").into_inner().revision;

    // Watchers first, each on its own connection, registered before any write.
    let mut progress = Vec::new();
    let mut watcher_tasks = Vec::new();
    for _ in 0..watchers {
        let p = Arc::new(Progress::default());
        let (tx, rx) = tokio::sync::oneshot::channel();
        watcher_tasks.push(tokio::spawn(grpc_watcher(server.client().await, rev0, p.clone(), tx)));
        let _ = rx.await;
        progress.push(p);
    }
    let refused = progress.iter().filter(|p| p.done.load(Ordering::Acquire)).count();
    if refused > 0 {
        eprintln!("grpc_load: {refused} watches were refused or ended at once");
    }

    // Writers: own connections, connected (and warmed by one Revision call) before the start.
    let barrier = Arc::new(tokio::sync::Barrier::new(cfg.clients + 1));
    let mut writers = Vec::new();
    for ops in plans(cfg) {
        let mut client = server.client().await;
        client.revision(pb::RevisionRequest {}).await.expect("Revision");
        let barrier = barrier.clone();
        writers.push(tokio::spawn(async move {
            let mut out = WriterOut::default();
            barrier.wait().await;
            for op in ops {
                let req = pb::WriteRequest {
                    resource: RESOURCE.into(),
                    namespace: NS.into(),
                    body: Some(pb::Body { content_type: "application/json".into(), data: op.body.into() }),
                    field_manager: op.manager,
                    ..Default::default()
                };
                let t0 = Instant::now();
                let res = client.apply(req).await;
                let t1 = Instant::now();
                match res {
                    Ok(resp) => {
                        let data = resp.into_inner().object.map(|b| b.data).unwrap_or_default();
                        let rv =
                            serde_json::from_slice::<Head>(&data).ok().and_then(|h| h.metadata.resource_version.parse().ok()).unwrap_or(0);
                        out.record(op.kind, t0, t1, rv, data.len());
                    }
                    Err(e) => out.errors.push(format!("{:?}: {}", e.code(), e.message())),
                }
            }
            out
        }));
    }
    let (cpu0, scpu0) = (own_cpu(), server.cpu());
    barrier.wait().await;
    let mut outs = Vec::new();
    for w in writers {
        outs.push(w.await.expect("writer task"));
    }
    let rev1 = control.revision(pb::RevisionRequest {}).await.expect("Revision").into_inner().revision;
    let (mut r, acks, last_ack) = merge(if watchers > 0 { "grpc+W" } else { "grpc" }, outs, rev1 - rev0);

    let mut watch_wait = (true, Duration::ZERO);
    if watchers > 0 {
        let t = Instant::now();
        while !caught_up(&progress, r.revisions) && t.elapsed() < cfg.catchup {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        watch_wait = (caught_up(&progress, r.revisions), t.elapsed());
    }
    r.cpu_self = own_cpu() - cpu0;
    r.cpu_server = Some(server.cpu() - scpu0);
    drop(control);

    // Shutdown: SIGTERM; the server must exit 0 and end every watch stream.
    let (status, took) = tokio::task::block_in_place(|| server.terminate());
    let mut wouts = Vec::new();
    for t in watcher_tasks {
        match tokio::time::timeout(Duration::from_secs(10), t).await {
            Ok(Ok(o)) => wouts.push(o),
            Ok(Err(e)) => panic!("watcher task: {e}"),
            Err(_) => wouts.push(WatcherOut { errors: vec!["the stream did not end within 10 s of SIGTERM".into()], ..Default::default() }),
        }
    }
    if status.is_none_or(|s| !s.success()) {
        eprintln!("grpc_load: server exit {status:?}; log tail:\n{}", server.log_tail());
    }
    r.shutdown = Some(Shutdown {
        status,
        took,
        watchers_ended: wouts.iter().filter(|o| o.ended_cleanly).count(),
        watchers_last_bookmark: wouts.iter().filter(|o| o.last_was_bookmark).count(),
        watchers_failed: wouts.iter().filter(|o| !o.errors.is_empty()).count(),
    });
    if watchers > 0 {
        // The final shutdown bookmark is not an error; only what arrived is judged.
        r.watch = Some(check_watchers(&wouts, &acks, last_ack, watch_wait.0, watch_wait.1));
    }
    r
}

// ---------------------------------------------------------------------------------------------
// Reporting.

fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let n = sorted.len();
    sorted[((p * n as f64).ceil() as usize).clamp(1, n) - 1]
}

fn pctf(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let n = sorted.len();
    sorted[((p * n as f64).ceil() as usize).clamp(1, n) - 1]
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

fn msf(s: f64) -> String {
    format!("{:.2}", s * 1e3)
}

fn throughput(r: &PhaseResult) -> f64 {
    r.ops as f64 / r.wall.as_secs_f64().max(1e-9)
}

fn report(cfg: &Config, results: &[PhaseResult], load_start: &str) {
    let base = results.iter().find(|r| r.name == "embedded").map(throughput);
    println!();
    println!(
        "grpc_load: {} clients, {} applies ({} distinct objects, {} shared), {} watchers; load average {} at the start, {} at the end",
        cfg.clients,
        cfg.ops,
        (0..cfg.clients)
            .map(|c| DISTINCT_PER_CLIENT.min((cfg.ops / cfg.clients + usize::from(c < cfg.ops % cfg.clients)).div_ceil(2)))
            .sum::<usize>(),
        SHARED,
        cfg.watchers,
        load_start,
        loadavg()
    );
    println!();
    println!("| phase | applies | wall s | applies/s | ÷ embedded | distinct p50 | p90 | p99 | max | shared p50 | p90 | p99 | max | CPU ms/apply bench + server |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in results {
        let tp = throughput(r);
        let ratio = base.map_or("-".into(), |b| format!("{:.2}×", tp / b));
        let cpu = match r.cpu_server {
            Some(s) => format!("{} + {}", ms(r.cpu_self / r.ops.max(1) as u32), ms(s / r.ops.max(1) as u32)),
            None => ms(r.cpu_self / r.ops.max(1) as u32),
        };
        println!(
            "| {} | {} | {:.2} | {:.0} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.name,
            r.ops,
            r.wall.as_secs_f64(),
            tp,
            ratio,
            ms(pct(&r.distinct, 0.5)),
            ms(pct(&r.distinct, 0.9)),
            ms(pct(&r.distinct, 0.99)),
            ms(pct(&r.distinct, 1.0)),
            ms(pct(&r.shared, 0.5)),
            ms(pct(&r.shared, 0.9)),
            ms(pct(&r.shared, 0.99)),
            ms(pct(&r.shared, 1.0)),
            cpu
        );
    }
    println!("(latencies in ms, client side; CPU from the start of the writes until every watcher caught up)");
    println!();
    println!("| phase | revisions written | acked (unique) | errors | largest object distinct / shared |");
    println!("|---|---|---|---|---|");
    for r in results {
        let sizes = if r.bytes == [0, 0] { "-".to_string() } else { format!("{} B / {} B", r.bytes[0], r.bytes[1]) };
        println!("| {} | {} | {} | {} | {sizes} |", r.name, r.revisions, r.acked_unique, r.errors.len());
    }
    for r in results {
        if let Some(e) = r.errors.first() {
            println!("  {}: first error: {e}", r.name);
        }
    }
    if results.iter().any(|r| r.watch.is_some()) {
        println!();
        println!("| phase | watchers | events expected | delivered | lost | dup | out of order | unexpected | watchers with errors | caught up (wait s) | lag ms | delivery p50 | p90 | p99 | max ms | bookmarks |");
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        for r in results {
            let Some(w) = &r.watch else { continue };
            println!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} ({:.3}) | {} | {} | {} | {} | {} | {} |",
                r.name,
                w.watchers,
                w.expected,
                w.delivered,
                w.lost,
                w.duplicates,
                w.out_of_order,
                w.unexpected,
                w.error_watchers,
                if w.caught_up { "yes" } else { "NO" },
                w.wait.as_secs_f64(),
                w.lag.map_or("-".into(), msf),
                msf(pctf(&w.delivery, 0.5)),
                msf(pctf(&w.delivery, 0.9)),
                msf(pctf(&w.delivery, 0.99)),
                msf(pctf(&w.delivery, 1.0)),
                w.bookmarks
            );
            if let Some(e) = &w.first_error {
                println!("  {}: first watcher error: {e}", r.name);
            }
            for a in &w.anomalies {
                println!("  {}: {a}", r.name);
            }
        }
        println!("(delivery: receipt − acknowledgement of the write, per event; negative when the event beat the ack. lag: last watcher's receipt of the last revision − last ack)");
    }
    for r in results {
        if let Some(s) = &r.shutdown {
            println!(
                "{}: SIGTERM -> exit {} in {} ms; watch streams ended {}/{} ({} with a final bookmark, {} failed)",
                r.name,
                s.status.map_or("NONE (still running)".into(), |st| st.code().map_or(format!("{st}"), |c| c.to_string())),
                ms(s.took),
                s.watchers_ended,
                r.watch.as_ref().map_or(0, |w| w.watchers),
                s.watchers_last_bookmark,
                s.watchers_failed
            );
        }
    }
    let verdict = results.iter().all(|r| {
        r.errors.is_empty()
            && r.acked_unique as u64 == r.revisions
            && r.ops == cfg.ops
            && r.watch.as_ref().is_none_or(|w| {
                w.lost == 0 && w.duplicates == 0 && w.out_of_order == 0 && w.unexpected == 0 && w.error_watchers == 0 && w.caught_up
            })
            && r.shutdown.as_ref().is_none_or(|s| s.status.is_some_and(|st| st.success()) && s.watchers_failed == 0)
    });
    println!();
    println!(
        "==> {}",
        if verdict {
            "OK: every apply acknowledged, one revision each; every watcher received every revision once, in order; clean shutdown"
        } else {
            "FAILED: see above"
        }
    );
    if let (Some(b), Some(g), Some(gw)) = (base, results.iter().find(|r| r.name == "grpc"), results.iter().find(|r| r.name == "grpc+W")) {
        println!(
            "==> gRPC ÷ embedded throughput: {:.2}× without watchers, {:.2}× with {} watchers",
            throughput(g) / b,
            throughput(gw) / b,
            cfg.watchers
        );
    }
}

fn main() {
    let cfg = Config::from_env();
    let phases = std::env::var("GRPC_LOAD_PHASES").unwrap_or_else(|_| "embedded,embedded+W,grpc,grpc+W".into());
    let on = |p: &str| phases.split(',').any(|x| x.trim() == p) && (!p.ends_with("+W") || cfg.watchers > 0);
    if on("grpc") || on("grpc+W") {
        check_binary(&cfg.server, "grpc_load");
    }
    let load_start = loadavg();
    println!("grpc_load: server {}, load average {load_start}", cfg.server.display());
    let mut results = Vec::new();
    let mut baseline = Vec::new();
    let run = |r: PhaseResult, results: &mut Vec<PhaseResult>| {
        println!("  {} done: {:.0} applies/s (load average {})", r.name, throughput(&r), loadavg());
        results.push(r);
    };
    let base = |baseline: &mut Vec<PhaseResult>| {
        if on("embedded") {
            baseline.push(embedded_phase(&cfg, 0));
            println!(
                "  embedded #{} done: {:.0} applies/s (load average {})",
                baseline.len(),
                throughput(baseline.last().unwrap()),
                loadavg()
            );
        }
    };
    // The embedded baseline runs three times (first, between the gRPC phases, last); the ratios
    // use the median of the three.
    base(&mut baseline);
    if on("embedded+W") {
        run(embedded_phase(&cfg, cfg.watchers), &mut results);
    }
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    if on("grpc") {
        run(rt.block_on(grpc_phase(&cfg, 0)), &mut results);
    }
    base(&mut baseline);
    if on("grpc+W") {
        run(rt.block_on(grpc_phase(&cfg, cfg.watchers)), &mut results);
    }
    drop(rt);
    base(&mut baseline);
    if !baseline.is_empty() {
        let rounds: Vec<String> = baseline.iter().map(|r| format!("{:.0}", throughput(r))).collect();
        baseline.sort_by(|a, b| throughput(a).total_cmp(&throughput(b)));
        let mut median = baseline.swap_remove(1);
        median.name = "embedded".into();
        println!("  embedded baseline: {} applies/s in its three rounds; the median round is reported", rounds.join(", "));
        results.insert(0, median);
    }
    report(&cfg, &results, &load_start);
}
