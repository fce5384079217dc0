//! The store on etcd (`Store::open_etcd`) beside the store on RocksDB and beside plain etcd
//! requests of the same bytes, in one run, printed as ratios.
//!
//! ```text
//! cargo bench --bench etcd_load                               # every scenario, its own etcd
//! cargo bench --bench etcd_load -- create list --n 4000
//! cargo bench --bench etcd_load -- --etcd http://127.0.0.1:2379,http://127.0.0.1:22379,…
//! ```
//!
//! Without `--etcd` the bench starts a single-member etcd (the `etcd` binary on PATH) with its
//! data in a temporary directory on disk (fsync as in production). Scenarios:
//! - `create`: `--n` ConfigMaps of ~1 KiB from `--threads` threads: the RocksDB store, the etcd
//!   store, and plain etcd puts of the same JSON (one client, the same threads); two rounds.
//! - `apply`: applies to one object whose map list has `--items` items, changing one item's
//!   value each time (the etcd store commits them staged: larger than one transaction).
//! - `list`: `--list-n` objects listed in pages of 500: both stores, and plain etcd ranges of
//!   500 whose values are parsed (what a client of etcd must do to have objects).
//! - `watch`: `--watchers` watches, `--changes` creates from 2 writers; every watcher must get
//!   every change; both stores, and plain etcd watches on a prefix with puts.
//! - `size`: etcd's bytes per change: the keys and values the store keeps per create and per
//!   apply (history and owner index included), and etcd's database growth for them.
//!
//! Results and their reading: `benches/STORE_RESULTS.md`, "etcd backend".

use etcd_client::{Client, GetOptions as EtcdGet, WatchOptions};
use fieldstore::engine::store::{
    Collection, GetOptions, ListOptions, ObjectKey, Options, Store, WatchEvent, WatchOptions as StoreWatch, WriteOptions,
};
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "support/args.rs"]
mod args;
#[path = "support/threads.rs"]
mod threads;
use args::Args;
use threads::run_threads;
#[path = "support/shapes.rs"]
mod shapes;
#[path = "support/store_objects.rs"]
mod store_objects;
use store_objects::{biglist_config, biglist_type, cm_name, configmap, configmaps, BIGLIST_RESOURCE, NS};

#[path = "../tests/support/etcd_member.rs"]
mod etcd_member;

/// The etcd under test: endpoints, and the member when the bench started it.
struct Etcd {
    endpoints: Vec<String>,
    _member: Option<etcd_member::Member>,
    _dir: Option<tempfile::TempDir>,
}

fn start_etcd(args: &Args) -> Etcd {
    if let Some(list) = args.text("etcd") {
        return Etcd { endpoints: list.split(',').map(String::from).collect(), _member: None, _dir: None };
    }
    // On disk (fsync as in production), not /dev/shm.
    let dir = tempfile::tempdir_in(std::env::temp_dir()).expect("tempdir");
    let quota = (8u64 << 30).to_string();
    let member = etcd_member::Member::single(dir.path().join("etcd"), &["--quota-backend-bytes", &quota]).expect("an etcd binary on PATH");
    Etcd { endpoints: vec![member.url()], _member: Some(member), _dir: Some(dir) }
}

/// A plain etcd client for the baselines, on its own runtime.
struct Plain {
    rt: tokio::runtime::Runtime,
    client: Client,
}

impl Plain {
    fn new(endpoints: &[String]) -> Plain {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
        let eps = endpoints.to_vec();
        let client = rt.block_on(Client::connect(eps, None)).expect("connect");
        Plain { rt, client }
    }
}

static NEXT_PREFIX: AtomicUsize = AtomicUsize::new(0);

fn etcd_store(etcd: &Etcd, options: Options) -> (Store, String) {
    let prefix = format!("/bench-{}-{}", std::process::id(), NEXT_PREFIX.fetch_add(1, Ordering::SeqCst));
    (Store::open_etcd(&etcd.endpoints, &prefix, options).expect("open etcd store"), prefix)
}

fn rocks_store(options: Options) -> (Store, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    (Store::open(dir.path(), options).expect("open store"), dir)
}

fn rate(n: usize, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn scenario_create(args: &Args, etcd: &Etcd) {
    let n = args.num("n", 2000);
    let threads = args.num("threads", 8);
    let plain = Plain::new(&etcd.endpoints);
    let w = WriteOptions::new("bench");
    println!(
        "create: {n} ConfigMaps of ~1 KiB from {threads} threads, 2 rounds: RocksDB store, etcd store, plain etcd puts of the same JSON"
    );
    for round in 0..2 {
        let (rocks, _dir) = rocks_store(Options::default());
        rocks.register(configmaps()).expect("register");
        let t_rocks = run_threads(threads, n, |i| {
            rocks.create(&Collection::new("configmaps", Some(NS)), &configmap(&cm_name("c", i), i as u64), &w).expect("create");
        });
        let (store, _) = etcd_store(etcd, Options::default());
        store.register(configmaps()).expect("register");
        let t_etcd = run_threads(threads, n, |i| {
            store.create(&Collection::new("configmaps", Some(NS)), &configmap(&cm_name("c", i), i as u64), &w).expect("create");
        });
        let key = format!("/plain-{}-{round}/", std::process::id());
        let t_plain = run_threads(threads, n, |i| {
            let mut kv = plain.client.kv_client();
            let (k, v) = (format!("{key}{}", cm_name("c", i)), serde_json::to_vec(&configmap(&cm_name("c", i), i as u64)).expect("json"));
            plain.rt.block_on(kv.put(k, v, None)).expect("put");
        });
        let (r, e, p) = (rate(n, t_rocks), rate(n, t_etcd), rate(n, t_plain));
        println!("==> create round {round}: RocksDB store {r:.0}/s, etcd store {e:.0}/s, plain etcd puts {p:.0}/s; etcd store / RocksDB store {:.2}, etcd store / plain etcd {:.2}", e / r, e / p);
    }
}

fn scenario_apply(args: &Args, etcd: &Etcd) {
    let items = args.num("items", 10_000);
    let reps = args.num("reps", 9);
    let w = WriteOptions::new("bench");
    let cfgs = [biglist_config("big", items, false), biglist_config("big", items, true)];
    let options = Options::default().max_object_bytes(64 << 20);
    let (rocks, _dir) = rocks_store(options.clone());
    let (store, _) = etcd_store(etcd, options);
    let mut times = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    for (k, s) in [&rocks, &store].into_iter().enumerate() {
        s.register(biglist_type(true)).expect("register");
        let t = Instant::now();
        s.apply(&Collection::new(BIGLIST_RESOURCE, Some(NS)), &cfgs[0], &w).expect("initial apply");
        times[2 + k].push(t.elapsed().as_secs_f64());
    }
    for r in 0..reps {
        let cfg = &cfgs[(r + 1) % 2];
        for (k, s) in [&rocks, &store].into_iter().enumerate() {
            let t = Instant::now();
            s.apply(&Collection::new(BIGLIST_RESOURCE, Some(NS)), cfg, &w).expect("apply");
            times[k].push(t.elapsed().as_secs_f64());
        }
    }
    let [r, e, rc, ec] = times.map(median);
    println!(
        "==> apply on a {items}-item list (one item changed, interleaved, median of {reps}): RocksDB store {:.1} ms, etcd store {:.1} ms; etcd / RocksDB {:.2}. Creation of the object: {:.1} ms vs {:.1} ms ({:.2})",
        r * 1e3,
        e * 1e3,
        e / r,
        rc * 1e3,
        ec * 1e3,
        ec / rc
    );
}

fn list_all(s: &Store, page: usize) -> usize {
    let mut token = None;
    let mut n = 0;
    loop {
        let l = s
            .list_json(
                &Collection::new("configmaps", Some(NS)),
                &ListOptions { limit: Some(page), continue_token: token.take(), ..Default::default() },
            )
            .expect("list");
        n += l.items.len();
        std::hint::black_box(&l.items);
        match l.continue_token {
            Some(t) => token = Some(t),
            None => return n,
        }
    }
}

fn scenario_list(args: &Args, etcd: &Etcd) {
    let n = args.num("list-n", 10_000);
    let page = 500;
    let w = WriteOptions::new("bench");
    let plain = Plain::new(&etcd.endpoints);
    let (rocks, _dir) = rocks_store(Options::default().sync(false));
    let (store, _) = etcd_store(etcd, Options::default());
    let key = format!("/plainlist-{}/", std::process::id());
    for s in [&rocks, &store] {
        s.register(configmaps()).expect("register");
        run_threads(8, n, |i| {
            s.create(&Collection::new("configmaps", Some(NS)), &configmap(&cm_name("l", i), i as u64), &w).expect("create");
        });
    }
    run_threads(8, n, |i| {
        let mut kv = plain.client.kv_client();
        let v = serde_json::to_vec(&configmap(&cm_name("l", i), i as u64)).expect("json");
        plain.rt.block_on(kv.put(format!("{key}{}", cm_name("l", i)), v, None)).expect("put");
    });
    println!("list: {n} ConfigMaps of ~1 KiB in pages of {page}, 3 passes interleaved: RocksDB store, etcd store (list_json), plain etcd ranges with each value parsed");
    let (mut r, mut e, mut p) = (vec![], vec![], vec![]);
    for _ in 0..3 {
        let t = Instant::now();
        assert_eq!(list_all(&rocks, page), n);
        r.push(rate(n, t.elapsed()));
        let t = Instant::now();
        assert_eq!(list_all(&store, page), n);
        e.push(rate(n, t.elapsed()));
        let t = Instant::now();
        let mut kv = plain.client.kv_client();
        let end = format!("{key}\u{7f}");
        let mut start = key.clone().into_bytes();
        let mut got = 0;
        loop {
            let resp = plain
                .rt
                .block_on(kv.get(start.clone(), Some(EtcdGet::new().with_range(end.clone()).with_limit(page as i64))))
                .expect("range");
            for kv in resp.kvs() {
                std::hint::black_box(serde_json::from_slice::<Value>(kv.value()).expect("json"));
            }
            got += resp.kvs().len();
            match resp.kvs().last() {
                Some(last) if resp.more() => {
                    start = last.key().to_vec();
                    start.push(0);
                }
                _ => break,
            }
        }
        assert_eq!(got, n);
        p.push(rate(n, t.elapsed()));
    }
    let (r, e, p) = (median(r), median(e), median(p));
    println!("==> list: RocksDB store {r:.0} objects/s, etcd store {e:.0}/s, plain etcd {p:.0}/s; etcd store / RocksDB store {:.2}, etcd store / plain etcd {:.2}", e / r, e / p);
}

fn store_fan_out(s: &Store, watchers: usize, changes: usize) -> Duration {
    let w = WriteOptions::new("bench");
    let from = s.revision().to_string();
    let got = AtomicUsize::new(0);
    let mut watches: Vec<_> = (0..watchers)
        .map(|_| {
            s.watch(&Collection::new("configmaps", Some(NS)), &StoreWatch { resource_version: Some(from.clone()), ..Default::default() })
                .expect("watch")
        })
        .collect();
    let t = Instant::now();
    std::thread::scope(|scope| {
        for chunk in watches.chunks_mut(watchers.div_ceil(4)) {
            let got = &got;
            scope.spawn(move || {
                for wt in chunk {
                    let mut n = 0;
                    while n < changes {
                        match wt.next_timeout(Duration::from_secs(60)).expect("event") {
                            WatchEvent::Added(_) => n += 1,
                            WatchEvent::Bookmark { .. } => {}
                            other => panic!("{other:?}"),
                        }
                    }
                    got.fetch_add(n, Ordering::SeqCst);
                }
            });
        }
        for k in 0..2 {
            scope.spawn(move || {
                for i in (k..changes).step_by(2) {
                    s.create(&Collection::new("configmaps", Some(NS)), &configmap(&cm_name("w", i), i as u64), &WriteOptions::new("bench"))
                        .expect("create");
                }
            });
        }
    });
    drop(w);
    assert_eq!(got.load(Ordering::SeqCst), watchers * changes);
    t.elapsed()
}

fn scenario_watch(args: &Args, etcd: &Etcd) {
    let watchers = args.num("watchers", 100);
    let changes = args.num("changes", 1000);
    let (rocks, _dir) = rocks_store(Options::default());
    rocks.register(configmaps()).expect("register");
    let (store, _) = etcd_store(etcd, Options::default());
    store.register(configmaps()).expect("register");
    let t_rocks = store_fan_out(&rocks, watchers, changes);
    let t_etcd = store_fan_out(&store, watchers, changes);
    // Plain etcd: watches on a prefix, puts from 2 threads.
    let plain = Plain::new(&etcd.endpoints);
    let key = format!("/plainwatch-{}/", std::process::id());
    let got = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..watchers {
        let (mut c, key, got) = (plain.client.clone(), key.clone(), got.clone());
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        tasks.push(plain.rt.spawn(async move {
            let (_w, mut stream) = c.watch(key, Some(WatchOptions::new().with_prefix())).await.expect("watch");
            ready_tx.send(()).expect("ready");
            let mut n = 0;
            while n < changes {
                let resp = stream.message().await.expect("watch message").expect("open");
                n += resp.events().len();
            }
            got.fetch_add(n, Ordering::SeqCst);
        }));
        ready_rx.recv().expect("watch created");
    }
    let t = Instant::now();
    run_threads(2, changes, |i| {
        let mut kv = plain.client.kv_client();
        let v = serde_json::to_vec(&configmap(&cm_name("w", i), i as u64)).expect("json");
        plain.rt.block_on(kv.put(format!("{key}{}", cm_name("w", i)), v, None)).expect("put");
    });
    for task in tasks {
        plain.rt.block_on(task).expect("watcher");
    }
    let t_plain = t.elapsed();
    assert_eq!(got.load(Ordering::SeqCst), watchers * changes);
    let ev = (watchers * changes) as f64;
    let (r, e, p) = (ev / t_rocks.as_secs_f64(), ev / t_etcd.as_secs_f64(), ev / t_plain.as_secs_f64());
    println!(
        "==> watch: {watchers} watchers × {changes} creates from 2 writers, every event delivered: RocksDB store {r:.0} events/s ({:.2} s), etcd store {e:.0}/s ({:.2} s), plain etcd {p:.0}/s ({:.2} s); etcd store / RocksDB store {:.2}, etcd store / plain etcd {:.2}",
        t_rocks.as_secs_f64(),
        t_etcd.as_secs_f64(),
        t_plain.as_secs_f64(),
        e / r,
        e / p
    );
}

/// The bytes of keys and values under `prefix`, by family letter (`o` objects, `h` history,
/// `w` owners, `c` changes, `x` the backend's own, …), and etcd's database size.
fn etcd_bytes(plain: &Plain, prefix: &str) -> (std::collections::BTreeMap<char, u64>, u64) {
    let mut kv = plain.client.kv_client().max_decoding_message_size(512 << 20);
    let mut m = plain.client.maintenance_client();
    let (mut start, end) = (prefix.as_bytes().to_vec(), format!("{prefix}\u{7f}"));
    let mut bytes = std::collections::BTreeMap::new();
    loop {
        let resp = plain.rt.block_on(kv.get(start.clone(), Some(EtcdGet::new().with_range(end.clone()).with_limit(1000)))).expect("range");
        for kv in resp.kvs() {
            let family = kv.key().get(prefix.len() + 1).map_or('?', |b| char::from(*b));
            *bytes.entry(family).or_insert(0) += (kv.key().len() + kv.value().len()) as u64;
        }
        match resp.kvs().last() {
            Some(last) if resp.more() => {
                start = last.key().to_vec();
                start.push(0);
            }
            _ => break,
        }
    }
    let db = plain.rt.block_on(m.status()).expect("status").db_size();
    (bytes, u64::try_from(db).unwrap_or(0))
}

type Sizes = (std::collections::BTreeMap<char, u64>, u64);

/// Bytes per change between two measures: in total, by family, and of etcd's database.
fn per_change((a, da): &Sizes, (b, db): &Sizes, changes: usize) -> String {
    let total = |m: &std::collections::BTreeMap<char, u64>| m.values().sum::<u64>();
    let by_family: Vec<String> = b
        .iter()
        .map(|(f, v)| (f, (v.saturating_sub(a.get(f).copied().unwrap_or(0))) as f64 / changes as f64))
        .filter(|(_, v)| *v >= 1.0)
        .map(|(f, v)| format!("{f} {v:.0}"))
        .collect();
    format!(
        "{:.0} B of keys+values ({}), {:.0} B of etcd db",
        (total(b).saturating_sub(total(a))) as f64 / changes as f64,
        by_family.join(", "),
        db.saturating_sub(*da) as f64 / changes as f64
    )
}

fn scenario_size(args: &Args, etcd: &Etcd) {
    let n = args.num("size-n", 1000);
    let items = args.num("items", 10_000);
    let plain = Plain::new(&etcd.endpoints);
    let w = WriteOptions::new("bench");
    let (store, prefix) = etcd_store(etcd, Options::default().max_object_bytes(64 << 20));
    store.register(configmaps()).expect("register");
    store.register(biglist_type(true)).expect("register");
    let s0 = etcd_bytes(&plain, &prefix);
    run_threads(8, n, |i| {
        store.create(&Collection::new("configmaps", Some(NS)), &configmap(&cm_name("s", i), i as u64), &w).expect("create");
    });
    let s1 = etcd_bytes(&plain, &prefix);
    // One change to each: a label added (a small update: a new version, history, the index).
    run_threads(8, n, |i| {
        let name = cm_name("s", i);
        let mut o = store.get(&ObjectKey::new("configmaps", Some(NS), &name), &GetOptions::default()).expect("get");
        o["metadata"]["labels"]["changed"] = Value::String("yes".into());
        store.update(&Collection::new("configmaps", Some(NS)), &o, &w).expect("update");
    });
    let s2 = etcd_bytes(&plain, &prefix);
    let cfgs = [biglist_config("big", items, false), biglist_config("big", items, true)];
    store.apply(&Collection::new(BIGLIST_RESOURCE, Some(NS)), &cfgs[0], &w).expect("apply");
    let s3 = etcd_bytes(&plain, &prefix);
    for r in 0..10 {
        store.apply(&Collection::new(BIGLIST_RESOURCE, Some(NS)), &cfgs[(r + 1) % 2], &w).expect("apply");
    }
    let s4 = etcd_bytes(&plain, &prefix);
    println!("==> size per 1 KiB ConfigMap create: {}", per_change(&s0, &s1, n));
    println!("==> size per small update (a label): {}", per_change(&s1, &s2, n));
    println!("==> size of a {items}-item object's creation: {}", per_change(&s2, &s3, 1));
    println!("==> size per one-item apply to it: {}", per_change(&s3, &s4, 10));
}

fn main() {
    let args = Args::parse(&["create", "apply", "list", "watch", "size"], &[]);
    let etcd = start_etcd(&args);
    println!(
        "etcd_load: {} on etcd {} (pid {}, {} CPUs); every ratio is from this run",
        args.sections.join(" "),
        etcd.endpoints.join(","),
        std::process::id(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    for s in &args.sections {
        let t = Instant::now();
        match s.as_str() {
            "create" => scenario_create(&args, &etcd),
            "apply" => scenario_apply(&args, &etcd),
            "list" => scenario_list(&args, &etcd),
            "watch" => scenario_watch(&args, &etcd),
            "size" => scenario_size(&args, &etcd),
            other => panic!("unknown scenario {other} (create, apply, list, watch, size)"),
        }
        println!("  ({s}: {:.1} s)", t.elapsed().as_secs_f64());
    }
}
