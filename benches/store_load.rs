//! Load generator for the object store: the scenarios of the store's speed issue, each measured
//! against a raw-RocksDB baseline in the same process run, printed as ratios.
//!
//! ```text
//! cargo bench --bench store_load                        # every scenario, default sizes
//! cargo bench --bench store_load -- create list         # some scenarios
//! cargo bench --bench store_load -- watch --watchers 10 --changes 1000
//! ```
//!
//! Scenarios (one `==>` line each, details indented below it):
//! - `create`: N ConfigMaps of ~1 KiB created from T threads with sync on (the store's default),
//!   and sequentially; baseline: raw RocksDB puts of the same JSON bytes under `namespace/name`,
//!   synced, into a database with the store's options (WAL recycling among them). Rounds of
//!   interleaved raw/store runs on fresh databases; the ratio is the median of the rounds'.
//!   Attribution: the store with field history off.
//! - `wal`: raw sequential synced puts with RocksDB's default options, with WAL recycling on a
//!   fresh database, and with a WAL that really is a recycled file (the issue's 450 vs 5,000/s).
//! - `list`: N objects listed in pages of 500 (limit + continue); baseline: a raw scan of the same
//!   key/value pairs (the objects' JSON as the store returns them) in pages of 500, each value
//!   parsed and the page serialised, which is what the store must do to produce JSON.
//! - `watch`: W watchers from the current revision, C creates from a few writers (sync off);
//!   every watcher must receive every change exactly once, in order; the cost per delivered
//!   event. The same writes without watchers are the baseline.
//! - `apply10k`: apply to one object whose map list holds N items, changing one item's value
//!   (alternating, so every apply writes); baseline: `FieldManager::apply` alone on the same live
//!   object and config, measured interleaved with the store's applies (sync on, sync off, sync
//!   off without field history, and without the owner index too), and the same apply repeated
//!   (a no-op: nothing written), merge and store.
//!
//! Options: `--n` (create objects, 10000), `--threads` (8), `--seq-n` (sequential creates, 2000),
//! `--rounds` (create and wal rounds, 5 and 3), `--wal-n` (1000), `--list-n` (100000), `--page` (500),
//! `--passes` (list passes, 3), `--watchers` (100), `--changes` (10000), `--writers` (2),
//! `--watch-sync` (sync on for the watch writes), `--items` (10000), `--reps` (31).
//! Results and their reading: `benches/STORE_RESULTS.md`.

use fieldstore::engine::fieldmanager::Time;
use fieldstore::engine::store::{
    Collection, GetOptions, ListOptions, ListStream, ObjectKey, Options, Revision, Store, WatchEvent, WatchOptions, WriteOptions,
};
use fieldstore::engine::Error;
use serde_json::Value;
use std::collections::HashMap;
use std::hint::black_box;
use std::path::Path;
use std::sync::Barrier;
use std::time::{Duration, Instant};

// The `fieldstore` binary runs on mimalloc; so do the benches.
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
use store_objects::{
    biglist_config, biglist_field_manager, biglist_type, cm_name, configmap, configmaps, configmaps_no_history, open_raw, raw_key,
    raw_page, write_opts, BIGLIST_RESOURCE, NS,
};

// The etcd 3.4 anchors of the issue (1 KiB values, same machine).
const ETCD_PUTS_8: f64 = 2_670.0;
const ETCD_PUTS_SEQ: f64 = 1_376.0;
const ETCD_LIST_PER_S: f64 = 100_000.0 / 2.4;
const ETCD_WATCH_S: f64 = 24.6;

/// CPU time of the whole process (every thread, RocksDB's included), from `/proc/self/stat`.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest.split_whitespace().map(|s| s.parse().unwrap_or(0)).collect();
    // Fields 14 (utime) and 15 (stime) of proc(5); `rest` starts at field 3. Ticks of 10 ms.
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn ms(d: f64) -> String {
    format!("{:.3} ms", d * 1e3)
}

fn tempdir(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("fieldstore-load-{tag}-")).tempdir().expect("tempdir")
}

fn open_store(dir: &Path, options: Options) -> Store {
    open_store_with(dir, options, true)
}

fn open_store_with(dir: &Path, options: Options, history: bool) -> Store {
    let store = Store::open(dir, options).expect("open store");
    store.register(if history { configmaps() } else { configmaps_no_history() }).expect("register configmaps");
    store
}

/// Makes the WAL in use a recycled file at least `bytes` long. Raw: unsynced puts, then a flush
/// (the flushed WAL goes to the recycle list, the next WAL reuses it).
fn warm_raw_wal(db: &rocksdb::DB, bytes: usize) {
    let v = vec![b'x'; 64 << 10];
    for i in 0..bytes / v.len() + 1 {
        db.put_opt(format!("warm/{i:08}"), &v, &write_opts(false)).expect("warm put");
    }
    db.flush().expect("flush");
    // A second round so the WAL after the flush is written over (and the file is long enough).
    for i in 0..bytes / v.len() + 1 {
        db.put_opt(format!("warm/{i:08}"), &v, &write_opts(false)).expect("warm put");
    }
    db.flush().expect("flush");
}

fn wal_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
                .map(|e| e.metadata().map_or(0, |m| m.len()))
                .sum()
        })
        .unwrap_or(0)
}

fn wal_files(dir: &Path) -> String {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
                .map(|e| format!("{}={}KiB", e.file_name().to_string_lossy(), e.metadata().map_or(0, |m| m.len()) >> 10))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v.join(",")
}

// ------------------------------------------------------------------------------------------------
// create

fn per_s(v: &[f64]) -> String {
    v.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join(", ")
}

fn ratios(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x / y).collect()
}

fn fmt_ratios(v: &[f64]) -> String {
    v.iter().map(|x| format!("{x:.2}")).collect::<Vec<_>>().join(", ")
}

fn scenario_create(args: &Args) {
    let n = args.num("n", 10_000);
    let threads = args.num("threads", 8);
    let seq_n = args.num("seq-n", 2_000);
    let rounds = args.num("rounds", 5);
    let objects: Vec<Value> = (0..n.max(seq_n)).map(|i| configmap(&cm_name("cm", i), i as u64)).collect();
    let bytes: Vec<(Vec<u8>, Vec<u8>)> =
        objects.iter().map(|o| (raw_key(o["metadata"]["name"].as_str().expect("name")), serde_json::to_vec(o).expect("json"))).collect();
    let avg = bytes.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>() / bytes.len();
    println!(
        "create: {n} objects from {threads} threads and {seq_n} sequentially, ~{avg} B of key+JSON each, sync on, fresh databases; \
         {rounds} rounds of raw/store/raw/store/store-without-history, interleaved; medians"
    );

    let raw = |threads: usize, n: usize| {
        let dir = tempdir("raw");
        let db = open_raw(dir.path());
        let wo = write_opts(true);
        let cpu = cpu_time();
        let t = run_threads(threads, n, |i| db.put_opt(&bytes[i].0, &bytes[i].1, &wo).expect("raw put"));
        let cpu = cpu_time() - cpu;
        drop(db);
        let wal = wal_bytes(dir.path());
        (n as f64 / t.as_secs_f64(), cpu.as_secs_f64() * 1e6 / n as f64, wal as f64 / n as f64)
    };
    let store = |threads: usize, n: usize, history: bool| {
        let dir = tempdir("store");
        let store = open_store_with(dir.path(), Options::default(), history);
        let w = WriteOptions::new("bench");
        let cpu = cpu_time();
        let t = run_threads(threads, n, |i| {
            store.create(&Collection::new("configmaps", Some(NS)), &objects[i], &w).expect("create");
        });
        let cpu = cpu_time() - cpu;
        drop(store);
        let wal = wal_bytes(dir.path());
        (n as f64 / t.as_secs_f64(), cpu.as_secs_f64() * 1e6 / n as f64, wal as f64 / n as f64)
    };

    let (mut r8, mut s8, mut r1, mut s1, mut h8) = (vec![], vec![], vec![], vec![], vec![]);
    let (mut cpu, mut wal) = (HashMap::<&str, Vec<f64>>::new(), HashMap::<&str, f64>::new());
    for _ in 0..rounds {
        for (label, v, (rate, c, w)) in [
            ("raw8", &mut r8, raw(threads, n)),
            ("store8", &mut s8, store(threads, n, true)),
            ("raw1", &mut r1, raw(1, seq_n)),
            ("store1", &mut s1, store(1, seq_n, true)),
            ("nohist8", &mut h8, store(threads, n, false)),
        ] {
            v.push(rate);
            cpu.entry(label).or_default().push(c);
            wal.insert(label, w);
        }
    }
    let (q8, q1, qh) = (ratios(&s8, &r8), ratios(&s1, &r1), ratios(&s8, &h8));
    let c = |l: &str| median(&mut cpu[l].clone());
    println!("  raw   {threads} threads: {} puts/s     (CPU {:.0} µs/put, WAL {:.0} B/put)", per_s(&r8), c("raw8"), wal["raw8"]);
    println!("  store {threads} threads: {} creates/s  (CPU {:.0} µs/create, WAL {:.0} B/create)", per_s(&s8), c("store8"), wal["store8"]);
    println!(
        "  store {threads} threads, field history off: {} creates/s (CPU {:.0} µs/create, WAL {:.0} B/create)",
        per_s(&h8),
        c("nohist8"),
        wal["nohist8"]
    );
    println!("  raw   1 thread:  {} puts/s     (CPU {:.0} µs/put)", per_s(&r1), c("raw1"));
    println!("  store 1 thread:  {} creates/s  (CPU {:.0} µs/create)", per_s(&s1), c("store1"));
    println!(
        "  store/raw per round: {threads} threads {}; sequential {}; history on/off ({threads} threads) {}",
        fmt_ratios(&q8),
        fmt_ratios(&q1),
        fmt_ratios(&qh)
    );
    let (mr8, ms8, mr1, ms1) = (median(&mut r8), median(&mut s8), median(&mut r1), median(&mut s1));
    println!(
        "==> create/{threads}t: store {ms8:.0}/s raw {mr8:.0}/s store/raw {:.2} (median of rounds; target >= 0.50) | store/etcd(2670) {:.2} (aim >= 5) | raw/etcd {:.2}",
        median(&mut q8.clone()),
        ms8 / ETCD_PUTS_8,
        mr8 / ETCD_PUTS_8
    );
    println!(
        "==> create/seq: store {ms1:.0}/s raw {mr1:.0}/s store/raw {:.2} (median of rounds) | store/etcd(1376) {:.2} | raw/etcd {:.2}",
        median(&mut q1.clone()),
        ms1 / ETCD_PUTS_SEQ,
        mr1 / ETCD_PUTS_SEQ
    );
}

// ------------------------------------------------------------------------------------------------
// wal

/// Raw sequential synced puts: RocksDB's default options, the store's options (WAL recycling on)
/// on a fresh database, and the store's options once the WAL in use is a recycled file. A fresh
/// database never reuses a WAL: RocksDB only recycles WALs of the running session that a flush
/// made obsolete.
fn scenario_wal(args: &Args) {
    let n = args.num("wal-n", 1_000);
    let rounds = args.num("rounds", 3);
    println!(
        "wal: {n} sequential synced raw puts of ~1 KiB per run, {rounds} rounds of default/recycling-fresh/recycling-warm, interleaved"
    );
    let value = serde_json::to_vec(&configmap("cm-0", 0)).expect("json");
    let run = |mode: u8| {
        let dir = tempdir("wal");
        let db = if mode == 0 { store_objects::open_raw_default(dir.path()) } else { open_raw(dir.path()) };
        if mode == 2 {
            warm_raw_wal(&db, 32 << 20);
        }
        let wo = write_opts(true);
        let t = Instant::now();
        for i in 0..n {
            db.put_opt(format!("{NS}/cm-{i:07}"), &value, &wo).expect("put");
        }
        let rate = n as f64 / t.elapsed().as_secs_f64();
        // Listed while open: closing truncates a WAL to what was written.
        let files = wal_files(dir.path());
        drop(db);
        let log = std::fs::read_to_string(dir.path().join("LOG")).unwrap_or_default();
        let recycled = log.lines().filter(|l| l.contains("to recycle list")).count();
        (rate, format!("{files}; {recycled} WAL(s) put on the recycle list"))
    };
    let (mut d, mut f, mut w) = (vec![], vec![], vec![]);
    let mut files = Vec::new();
    for _ in 0..rounds {
        let (a, _) = run(0);
        let (b, _) = run(1);
        let (c, wf) = run(2);
        d.push(a);
        f.push(b);
        w.push(c);
        files = vec![wf];
    }
    println!("  default options:          {} puts/s", per_s(&d));
    println!("  recycling, fresh WAL:     {} puts/s", per_s(&f));
    println!("  recycling, recycled WAL:  {} puts/s  (WAL files at the end of the warm run: {})", per_s(&w), files.join(" "));
    println!("  per round: fresh/default {}; recycled/default {}", fmt_ratios(&ratios(&f, &d)), fmt_ratios(&ratios(&w, &d)));
    println!(
        "==> wal/seq: default {:.0}/s, recycling on a fresh WAL {:.0}/s ({:.2}x), on a recycled WAL {:.0}/s ({:.2}x)",
        median(&mut d.clone()),
        median(&mut f.clone()),
        median(&mut ratios(&f, &d)),
        median(&mut w.clone()),
        median(&mut ratios(&w, &d))
    );
}

// ------------------------------------------------------------------------------------------------
// list

fn scenario_list(args: &Args) {
    let n = args.num("list-n", 100_000);
    let page = args.num("page", 500);
    let passes = args.num("passes", 3);
    println!(
        "list: {n} objects in pages of {page}; store filled with sync off; {passes} passes each, interleaved, after one warm-up pass each"
    );
    let sdir = tempdir("list-store");
    let store = open_store(sdir.path(), Options::default().sync(false));
    let w = WriteOptions::new("bench");
    let fill = Instant::now();
    let created: Vec<std::sync::Mutex<Option<Vec<u8>>>> = (0..n).map(|_| std::sync::Mutex::new(None)).collect();
    run_threads(2, n, |i| {
        let o = store.create(&Collection::new("configmaps", Some(NS)), &configmap(&cm_name("cm", i), i as u64), &w).expect("create");
        *created[i].lock().expect("lock") = Some(serde_json::to_vec(&o).expect("json"));
    });
    let fill_s = fill.elapsed().as_secs_f64();
    let rdir = tempdir("list-raw");
    let db = open_raw(rdir.path());
    let mut stored_bytes = 0usize;
    for chunk in created.chunks(1000) {
        let mut wb = rocksdb::WriteBatch::default();
        for c in chunk {
            let v = c.lock().expect("lock").take().expect("created");
            stored_bytes += v.len();
            let name = serde_json::from_slice::<Value>(&v).expect("json")["metadata"]["name"].as_str().expect("name").to_string();
            wb.put(raw_key(&name), v);
        }
        db.write_opt(wb, &write_opts(false)).expect("raw batch");
    }
    drop(created);
    println!(
        "  filled the store in {fill_s:.1} s ({:.0} creates/s, sync off, 2 threads); objects as returned: {} B avg JSON",
        n as f64 / fill_s,
        stored_bytes / n
    );

    let store_pass = |serialise: bool| -> (f64, usize, usize) {
        let start = Instant::now();
        let mut opts = ListOptions { limit: Some(page), ..Default::default() };
        let (mut count, mut out_bytes) = (0usize, 0usize);
        loop {
            // Serialised pages are read as text (`list_json`), as the server answers a list.
            let next = if serialise {
                let l = store.list_json(&Collection::new("configmaps", Some(NS)), &opts).expect("list");
                count += l.items.len();
                out_bytes += l.to_json_bytes("v1", "ConfigMap").len();
                l.continue_token
            } else {
                let l = store.list(&Collection::new("configmaps", Some(NS)), &opts).expect("list");
                count += l.items.len();
                black_box(&l.items);
                l.continue_token
            };
            match next {
                Some(c) => opts.continue_token = Some(c),
                None => break,
            }
        }
        (start.elapsed().as_secs_f64(), count, out_bytes)
    };
    // The whole list unpaged, read as a server streams it (`list_stream`, chunks of 64 KiB of
    // JSON items into one reused buffer): bounded memory, the same items.
    let stream_pass = || -> (f64, usize) {
        let start = Instant::now();
        let mut stream = store.list_stream(&Collection::new("configmaps", Some(NS)), &ListOptions::default()).expect("stream");
        let (mut count, mut chunk) = (0usize, Vec::with_capacity(ListStream::CHUNK_BYTES + 8192));
        loop {
            chunk.clear();
            let meta = stream
                .next_chunk(ListStream::CHUNK_BYTES, &mut |item| {
                    chunk.extend_from_slice(item);
                    count += 1;
                    Ok(())
                })
                .expect("chunk");
            black_box(&chunk);
            if meta.is_some() {
                break;
            }
        }
        (start.elapsed().as_secs_f64(), count)
    };
    // Attribution of the baseline: the scan alone (values copied), and with each value parsed.
    let raw_scan_only = |parse: bool| -> f64 {
        let start = Instant::now();
        let mut ro = rocksdb::ReadOptions::default();
        ro.set_iterate_upper_bound(format!("{NS}0").into_bytes());
        let mut it = db.raw_iterator_opt(ro);
        it.seek(format!("{NS}/").as_bytes());
        let mut count = 0usize;
        while let Some((_, v)) = it.item() {
            if parse {
                black_box(serde_json::from_slice::<Value>(v).expect("json"));
            } else {
                black_box(v.to_vec());
            }
            count += 1;
            it.next();
        }
        assert_eq!(count, n);
        start.elapsed().as_secs_f64()
    };
    let raw_pass = || -> (f64, usize, usize) {
        let start = Instant::now();
        let mut from = format!("{NS}/").into_bytes();
        let (mut count, mut out_bytes) = (0usize, 0usize);
        loop {
            let (bytes, got, next) = raw_page(&db, &from, page);
            count += got;
            out_bytes += bytes.len();
            match next {
                Some(k) => from = k,
                None => break,
            }
        }
        (start.elapsed().as_secs_f64(), count, out_bytes)
    };
    // Warm-up (caches, page cache), then interleaved passes.
    let _ = raw_pass();
    let _ = store_pass(true);
    let (mut raw_t, mut st_t, mut stj_t, mut sts_t) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut raw_bytes, mut store_bytes) = (0, 0);
    for _ in 0..passes {
        let (t, c, b) = raw_pass();
        assert_eq!(c, n, "raw scan saw every object");
        raw_bytes = b;
        raw_t.push(t);
        let (t, c, b) = store_pass(true);
        assert_eq!(c, n, "store list saw every object");
        store_bytes = b;
        stj_t.push(t);
        let (t, c, _) = store_pass(false);
        assert_eq!(c, n, "store list saw every object");
        st_t.push(t);
        let (t, c) = stream_pass();
        assert_eq!(c, n, "store list_stream saw every object");
        sts_t.push(t);
    }
    let (mut scan_t, mut parse_t) = (Vec::new(), Vec::new());
    for _ in 0..passes {
        scan_t.push(raw_scan_only(false));
        parse_t.push(raw_scan_only(true));
    }
    let (raw_s, stj_s, st_s, sts_s) = (median(&mut raw_t), median(&mut stj_t), median(&mut st_t), median(&mut sts_t));
    let (scan_s, parse_s) = (median(&mut scan_t), median(&mut parse_t));
    let per = |s: f64| n as f64 / s;
    println!(
        "  raw scan only (one iterator, values copied): {:.3} s ({:.0} objects/s); scan + parse each value: {:.3} s ({:.0} objects/s)",
        scan_s,
        per(scan_s),
        parse_s,
        per(parse_s)
    );
    println!("  raw scan + parse + serialise: {:.3} s  ({:.0} objects/s, {} MB of JSON out)", raw_s, per(raw_s), raw_bytes >> 20);
    println!("  store list_json (text pages): {:.3} s  ({:.0} objects/s, {} MB of JSON out)", stj_s, per(stj_s), store_bytes >> 20);
    println!("  store list (Values only):     {:.3} s  ({:.0} objects/s)", st_s, per(st_s));
    println!("  store list_stream (unpaged, 64 KiB chunks): {:.3} s  ({:.0} objects/s)", sts_s, per(sts_s));
    println!(
        "==> list/{n}/{page}: store+json {:.0}/s raw+json {:.0}/s ratio {:.2} (target >= 0.50) | store (Values) / raw+json {:.2} | store+json/etcd(41667/s) {:.2} (aim >= 5)",
        per(stj_s),
        per(raw_s),
        raw_s / stj_s,
        raw_s / st_s,
        per(stj_s) / ETCD_LIST_PER_S
    );
}

// ------------------------------------------------------------------------------------------------
// watch

fn scenario_watch(args: &Args) {
    let watchers = args.num("watchers", 100);
    let changes = args.num("changes", 10_000);
    let writers = args.num("writers", 2);
    let sync = args.on("watch-sync");
    println!("watch: {watchers} watchers, {changes} creates of ~1 KiB from {writers} writers, sync {}", if sync { "on" } else { "off" });
    let dir = tempdir("watch");
    let store = open_store(dir.path(), Options::default().sync(sync));
    let w = WriteOptions::new("bench");
    let objects: Vec<Value> = (0..changes).map(|i| configmap(&cm_name("w", i), i as u64)).collect();
    let base_objects: Vec<Value> = (0..changes).map(|i| configmap(&cm_name("base", i), i as u64)).collect();

    // Baseline: the same writes with no watcher (another namespace, before any watch exists).
    let base_cpu = cpu_time();
    let base = run_threads(writers, changes, |i| {
        store
            .create(
                &Collection::new("configmaps", Some("base")),
                &{
                    let mut o = base_objects[i].clone();
                    o["metadata"]["namespace"] = Value::from("base");
                    o
                },
                &w,
            )
            .expect("create");
    });
    let base_cpu = cpu_time() - base_cpu;

    let from = store.revision().0;
    let wopts = WatchOptions { resource_version: Some(from.to_string()), ..Default::default() };
    let mut handles: Vec<_> =
        (0..watchers).map(|_| store.watch(&Collection::new("configmaps", Some(NS)), &wopts).expect("watch")).collect();
    let barrier = Barrier::new(watchers + writers + 1);
    let cpu = cpu_time();
    let (wall, writes_done, results) = std::thread::scope(|s| {
        let mut ws = Vec::new();
        for mut watch in handles.drain(..) {
            let (barrier, store, wopts) = (&barrier, &store, &wopts);
            ws.push(s.spawn(move || {
                barrier.wait();
                let mut expected = from + 1;
                let (mut got, mut rewatches) = (0usize, 0usize);
                while got < changes {
                    match watch.next_timeout(Duration::from_secs(60)) {
                        Some(e @ (WatchEvent::Added(_) | WatchEvent::Modified(_))) => {
                            assert_eq!(e.revision(), Some(Revision(expected)), "events in order, none lost or repeated");
                            expected += 1;
                            got += 1;
                        }
                        Some(WatchEvent::Bookmark { .. }) => {}
                        Some(WatchEvent::Error(Error::Expired(_))) | None if rewatches < 1000 => {
                            // Fell behind (or ended): watch again from the last revision received,
                            // as a reflector would.
                            assert!(watch.is_ended(), "watch timed out without ending");
                            rewatches += 1;
                            let o = WatchOptions { resource_version: Some((expected - 1).to_string()), ..wopts.clone() };
                            watch = store.watch(&Collection::new("configmaps", Some(NS)), &o).expect("re-watch");
                        }
                        other => panic!("unexpected watch event {other:?}"),
                    }
                }
                (Instant::now(), got, rewatches)
            }));
        }
        let mut writer_handles = Vec::new();
        for t in 0..writers {
            let (barrier, store, objects, w) = (&barrier, &store, &objects, &w);
            writer_handles.push(s.spawn(move || {
                barrier.wait();
                for i in (t..changes).step_by(writers) {
                    store.create(&Collection::new("configmaps", Some(NS)), &objects[i], w).expect("create");
                }
                Instant::now()
            }));
        }
        barrier.wait();
        let start = Instant::now();
        let writes_done = writer_handles.into_iter().map(|h| h.join().expect("writer")).max().expect("writers") - start;
        let results: Vec<(Instant, usize, usize)> = ws.into_iter().map(|h| h.join().expect("watcher")).collect();
        let end = results.iter().map(|r| r.0).max().expect("watchers");
        (end - start, writes_done, results)
    });
    let cpu = cpu_time() - cpu;
    let delivered: usize = results.iter().map(|r| r.1).sum();
    let rewatches: usize = results.iter().map(|r| r.2).sum();
    let all = results.iter().all(|r| r.1 == changes);
    assert!(all && delivered == watchers * changes, "every watcher received every event");
    let wall_s = wall.as_secs_f64();
    let per_event = wall_s / delivered as f64;
    println!(
        "  writes alone (no watcher): {:.3} s ({:.0} creates/s, CPU {:.1} µs/create)",
        base.as_secs_f64(),
        changes as f64 / base.as_secs_f64(),
        base_cpu.as_secs_f64() * 1e6 / changes as f64
    );
    println!(
        "  with {watchers} watchers: writes done in {:.3} s, all delivered in {wall_s:.3} s; {delivered} events delivered ({} per watcher, all in order: {all}); re-watches after falling behind: {rewatches}",
        writes_done.as_secs_f64(),
        delivered / watchers
    );
    println!(
        "  per delivered event: {:.3} µs wall, {:.3} µs CPU; marginal over the writes alone: {:.3} µs wall",
        per_event * 1e6,
        cpu.as_secs_f64() * 1e6 / delivered as f64,
        (wall_s - base.as_secs_f64()) * 1e6 / delivered as f64
    );
    // The etcd anchor is 100 watchers x 10k puts; other sizes do not compare.
    let etcd = if (watchers, changes) == (100, 10_000) { format!("{:.1}x", ETCD_WATCH_S / wall_s) } else { "n/a (other sizes)".into() };
    println!(
        "==> watch/{watchers}x{changes}: {wall_s:.3} s, {:.3} µs/event, {:.0} events/s, all delivered: {all} | etcd(24.6 s)/store {etcd} | wall/(writes alone) {:.2}",
        per_event * 1e6,
        delivered as f64 / wall_s,
        wall_s / base.as_secs_f64()
    );
}

// ------------------------------------------------------------------------------------------------
// apply10k

fn scenario_apply(args: &Args) {
    let n = args.num("items", 10_000);
    let reps = args.num("reps", 31);
    let name = "big";
    let cfgs = [biglist_config(name, n, false), biglist_config(name, n, true)];
    let body = serde_json::to_vec(&cfgs[0]).expect("json").len();
    let fm = biglist_field_manager();
    let w = WriteOptions::new("bench");
    let mut stores = Vec::new();
    let mut dirs = Vec::new();
    for (sync, history, owners) in [(true, true, true), (false, true, true), (false, false, true), (false, false, false)] {
        let dir = tempdir("apply");
        let store = open_store(dir.path(), Options::default().sync(sync).owner_index(owners).max_object_bytes(64 << 20));
        store.register(biglist_type(history)).expect("register");
        store.apply(&Collection::new(BIGLIST_RESOURCE, Some(NS)), &cfgs[0], &w).expect("initial apply");
        stores.push(store);
        dirs.push(dir);
    }
    let live0 = stores[0].get(&ObjectKey::new(BIGLIST_RESOURCE, Some(NS), name), &GetOptions::default()).expect("get");
    let view = serde_json::to_vec(&live0).expect("json").len();
    println!("apply{n}: one object, a map list of {n} items ({body} B config, {view} B object with managedFields); {reps} applies each, alternating one item's value; interleaved: merge, store sync on, store sync off, store sync off without field history, and also without the owner index");
    let now = Time::from_unix_seconds(1_750_000_000);
    let (mut merge, mut st_sync, mut st_nosync, mut st_nohist, mut st_bare, mut get, mut ser, mut eq) =
        (vec![], vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    let (mut merge_noop, mut st_noop) = (vec![], vec![]);
    let mut rv = None;
    for k in 0..reps + 1 {
        let cfg = &cfgs[(k + 1) % 2];
        // The merge alone, on the live object the store's apply will read.
        let t = Instant::now();
        let live = stores[0].get(&ObjectKey::new(BIGLIST_RESOURCE, Some(NS), name), &GetOptions::default()).expect("get");
        let t_get = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let out = fm.apply(Some(&live), cfg, "bench", false, &now).expect("merge");
        let t_merge = t.elapsed().as_secs_f64();
        assert!(out.object_changed, "every apply changes the object");
        let t = Instant::now();
        black_box(serde_json::to_vec(&out.object).expect("json"));
        let t_ser = t.elapsed().as_secs_f64();
        let t = Instant::now();
        black_box(out.object == live);
        let t_eq = t.elapsed().as_secs_f64();
        drop((live, out));
        let t = Instant::now();
        let a = stores[0].apply(&Collection::new(BIGLIST_RESOURCE, Some(NS)), cfg, &w).expect("store apply (sync)");
        let t_sync = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let b = stores[1].apply(&Collection::new(BIGLIST_RESOURCE, Some(NS)), cfg, &w).expect("store apply (no sync)");
        let t_nosync = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let c = stores[2].apply(&Collection::new(BIGLIST_RESOURCE, Some(NS)), cfg, &w).expect("store apply (no sync, no history)");
        let t_nohist = t.elapsed().as_secs_f64();
        drop(c);
        let t = Instant::now();
        let d = stores[3]
            .apply(&Collection::new(BIGLIST_RESOURCE, Some(NS)), cfg, &w)
            .expect("store apply (no sync, no history, no owner index)");
        let t_bare = t.elapsed().as_secs_f64();
        drop(d);
        let new_rv = a["metadata"]["resourceVersion"].clone();
        assert_ne!(Some(&new_rv), rv.as_ref(), "every apply writes a new version");
        rv = Some(new_rv);
        // The same apply again: nothing changes, nothing is written (sync on).
        let t = Instant::now();
        let again = fm.apply(Some(&a), cfg, "bench", false, &now).expect("merge (no-op)");
        let t_merge_noop = t.elapsed().as_secs_f64();
        assert!(again.is_noop(), "a repeated apply changes nothing");
        drop(again);
        let t = Instant::now();
        let again = stores[0].apply(&Collection::new(BIGLIST_RESOURCE, Some(NS)), cfg, &w).expect("store apply (no-op)");
        let t_noop = t.elapsed().as_secs_f64();
        assert_eq!(again, a, "a no-op apply returns the live object");
        drop((a, b, again));
        if k == 0 {
            continue; // warm-up
        }
        merge.push(t_merge);
        merge_noop.push(t_merge_noop);
        st_noop.push(t_noop);
        st_sync.push(t_sync);
        st_nosync.push(t_nosync);
        st_nohist.push(t_nohist);
        st_bare.push(t_bare);
        get.push(t_get);
        ser.push(t_ser);
        eq.push(t_eq);
    }
    let mins = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let (m_min, s_min, u_min, h_min, b_min) = (mins(&merge), mins(&st_sync), mins(&st_nosync), mins(&st_nohist), mins(&st_bare));
    let (m, s, u, h, b) = (median(&mut merge), median(&mut st_sync), median(&mut st_nosync), median(&mut st_nohist), median(&mut st_bare));
    let (g, sr, e) = (median(&mut get), median(&mut ser), median(&mut eq));
    println!("  merge alone (FieldManager::apply): median {} min {}", ms(m), ms(m_min));
    println!(
        "  store apply, sync on:              median {} min {}  overhead (store-merge)/merge = {:.2} (min-based {:.2})",
        ms(s),
        ms(s_min),
        (s - m) / m,
        (s_min - m_min) / m_min
    );
    println!(
        "  store apply, sync off:             median {} min {}  overhead (store-merge)/merge = {:.2} (min-based {:.2})",
        ms(u),
        ms(u_min),
        (u - m) / m,
        (u_min - m_min) / m_min
    );
    println!(
        "  store apply, sync off, no history: median {} min {}  overhead (store-merge)/merge = {:.2} (min-based {:.2})",
        ms(h),
        ms(h_min),
        (h - m) / m,
        (h_min - m_min) / m_min
    );
    println!(
        "  store apply, sync off, no history, no owner index: median {} min {}  overhead (store-merge)/merge = {:.2} (min-based {:.2})",
        ms(b),
        ms(b_min),
        (b - m) / m,
        (b_min - m_min) / m_min
    );
    let (mn, sn) = (median(&mut merge_noop), median(&mut st_noop));
    println!("  no-op re-apply (sync on): merge {} store {}  overhead (store-merge)/merge = {:.2}", ms(mn), ms(sn), (sn - mn) / mn);
    println!("  shares of the sync-off apply, in merges: field history {:.2}, owner index {:.2}, the rest of the store {:.2}, fsync (sync on - off) {:.2}", (u - h) / m, (h - b) / m, (b - m) / m, (s - u) / m);
    println!("  hints from outside the store: get (read + decode the record) {}, serde_json::to_vec of the result {}, one full Value comparison {}", ms(g), ms(sr), ms(e));
    println!(
        "==> apply{n}: merge {} store(sync) {} store(no sync) {} | overhead/merge sync {:.2} no-sync {:.2} (target <= 1.0) | no history {:.2}, no history nor owner index {:.2}",
        ms(m),
        ms(s),
        ms(u),
        (s - m) / m,
        (u - m) / m,
        (h - m) / m,
        (b - m) / m
    );
}

fn main() {
    let args = Args::parse(&["create", "wal", "list", "watch", "apply10k"], &["watch-sync"]);
    println!(
        "store_load: {} (pid {}, {} CPUs); every ratio is from this run",
        args.sections.join(" "),
        std::process::id(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    for s in &args.sections {
        let t = Instant::now();
        match s.as_str() {
            "create" => scenario_create(&args),
            "wal" => scenario_wal(&args),
            "list" => scenario_list(&args),
            "watch" => scenario_watch(&args),
            "apply10k" | "apply" => scenario_apply(&args),
            other => panic!("unknown scenario {other} (create, wal, list, watch, apply10k)"),
        }
        println!("  ({s}: {:.1} s)", t.elapsed().as_secs_f64());
    }
}
