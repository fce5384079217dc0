//! What field history and the owner index add to the cost of a store write, and what history
//! costs on disk per change — the issue's targets: index + history add ≤ 50% to a write of a
//! 1 KiB object, ≤ 100% to a write of one changed item in a 10k-item list, and history records
//! only what changed.
//!
//! ```text
//! cargo bench --bench history                       # both workloads, storage, sync-on check
//! cargo bench --bench history -- cm                 # only the 1 KiB workload
//! cargo bench --bench history -- list --items 2000  # only the list workload, smaller
//! ```
//!
//! Four stores (each in its own temp dir, sync off so that the fsync does not hide the CPU
//! cost, no MVCC auto-compaction while measuring): (a) history off + index off — the baseline,
//! (b) history on, (c) owner index on, (d) both (the default). The same writes go to the four,
//! in interleaved rounds (each round measures a batch of writes on every store, the store order
//! rotating from round to round); a store's time per write is the median of its rounds, and a
//! ratio is the median of the rounds' ratios (the min-of-rounds ratio is printed too). Both
//! wall time and the CPU time of the whole process (every thread: the writer, the committer,
//! RocksDB's) are measured. Run it on one CPU (`taskset -c 1 cargo bench --bench history`) for
//! steady figures: unpinned, each store's committer thread lands on the writer's CPU or on the
//! other one, and a write costs about twice the wall *and* CPU time while it is on the other
//! one (cross-CPU wake-ups and spinning hand-offs), a regime that changes per store every few
//! seconds and swamps the differences measured here. `HISTORY_BENCH_ROUNDS=1` prints every
//! round's CPU time per write.
//!
//! - `cm`: a ConfigMap whose `data` holds 10 keys (~1 KiB of JSON), applied by one manager,
//!   each apply changing one key's value (alternating, so every apply writes). Also a sync-on
//!   pair, (a) vs (d).
//! - `list`: a CRD type whose `spec.items` is a map list keyed by `name` (items `{name,
//!   value}`), one object with `--items` (10,000) items; one item's value changes per write
//!   (alternating): a full apply by the applier, a strategic merge patch of the one item, and an
//!   update (PUT) of the whole object with the one item changed — each on its own object.
//! - supplements, the same on every store: the ConfigMap apply adding / removing an eleventh
//!   key, and the list apply adding / removing an item — writes whose field set changes, so
//!   that the owner index has rows to write (the value-only writes above leave every managed
//!   set as it was, and the index writes nothing for them).
//! - storage: after the writes, each store is closed and its RocksDB directory opened
//!   read-only with the `rocksdb` crate; key + value bytes of the `history` CF per record
//!   (creation records and change records apart), of the `owners` CF per object, and of the
//!   `objects` CF per version for scale.
//!
//! Options: `--cm-rounds` (201), `--cm-batch` (25), `--sync-rounds` (41), `--sync-batch` (10),
//! `--items` (10000), `--list-rounds` (25), `--list-batch` (1), `--warmup` (writes per store
//! and object before measuring; 20 for cm, 2 for list). Results: `benches/HISTORY_RESULTS.md`.

use fieldstore::engine::patch::PatchType;
use fieldstore::engine::store::{Collection, HistoryPolicy, ObjectKey, Options, Store, TypeSpec, WriteOptions};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

// The `fieldstore` binary runs on mimalloc; so do the benches.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "support/args.rs"]
mod args;
#[path = "support/shapes.rs"]
mod shapes;
#[path = "support/store_objects.rs"]
mod store_objects;
use shapes::{item_name, Shape};
use store_objects::{filler, NS};

const CM_RESOURCE: &str = "configmaps";
const LIST_RESOURCE: &str = "histlists.example.com";
const CM_NAME: &str = "cm-1k";
const CM_SET: &str = "cm-1k-set";
const CM_KEYS: usize = 10;
/// Length of each ConfigMap value: 10 × (`"key-0N":"…",`) ≈ 1 KiB of `data`.
const CM_VALUE_LEN: usize = 90;
/// The key whose value alternates.
const CM_CHANGED_KEY: usize = 3;
const LIST_APPLY: &str = "list-apply";
const LIST_PATCH: &str = "list-patch";
const LIST_UPDATE: &str = "list-update";
const LIST_SET: &str = "list-set";
const APPLIER: &str = "bench-applier";
const CONTROLLER: &str = "bench-controller";

#[repr(C)]
struct Timespec {
    tv_sec: i64,
    tv_nsec: i64,
}

extern "C" {
    // libc's, which std links on Linux.
    fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
}

/// `CLOCK_PROCESS_CPUTIME_ID` on Linux.
const CLOCK_PROCESS_CPUTIME_ID: i32 = 2;

/// CPU time of the whole process — every thread: the writer's, the store's committer and
/// RocksDB's background threads — in nanoseconds. Unlike wall time it does not count the time
/// the threads wait for a CPU the other jobs on the machine hold.
#[allow(unsafe_code, reason = "one libc call, with a valid out-pointer; std has no process CPU clock")]
fn cpu_ns() -> u64 {
    let mut ts = Timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec (two i64 on x86_64 / aarch64 Linux) for the call to fill.
    let rc = unsafe { clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(ts.tv_nsec).unwrap_or(0)
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn us(secs: f64) -> String {
    if secs.abs() >= 1e-2 {
        format!("{:.2} ms", secs * 1e3)
    } else {
        format!("{:.1} µs", secs * 1e6)
    }
}

/// One store configuration.
#[derive(Clone, Copy)]
struct Config {
    label: &'static str,
    history: bool,
    index: bool,
    sync: bool,
}

const CONFIGS: [Config; 4] = [
    Config { label: "(a) history off, index off", history: false, index: false, sync: false },
    Config { label: "(b) history on,  index off", history: true, index: false, sync: false },
    Config { label: "(c) history off, index on ", history: false, index: true, sync: false },
    Config { label: "(d) history on,  index on ", history: true, index: true, sync: false },
];

const SYNC_CONFIGS: [Config; 2] = [
    Config { label: "(a) sync on, history off, index off", history: false, index: false, sync: true },
    Config { label: "(d) sync on, history on,  index on ", history: true, index: true, sync: true },
];

/// A store of one configuration in its own temp dir.
struct Env {
    config: Config,
    dir: tempfile::TempDir,
    store: Option<Store>,
}

impl Env {
    fn open(config: Config) -> Env {
        let tag = config.label.split_whitespace().next().unwrap_or("x").trim_matches(|c| c == '(' || c == ')');
        // Under target/tmp: the workspace's file system, not the /tmp other jobs use.
        let dir = tempfile::Builder::new()
            .prefix(&format!("fieldstore-history-{tag}-{}-", if config.sync { "sync" } else { "nosync" }))
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .expect("tempdir");
        // No MVCC auto-compaction (and no retention pass) while measuring: its background work
        // would land in random rounds. History retention keeps everything here anyway
        // (100 changes per object *and* 30 days).
        let options = Options::default()
            .sync(config.sync)
            .owner_index(config.index)
            .retention(None)
            .compaction_interval(Duration::from_secs(24 * 3600));
        let store = Store::open(dir.path(), options).expect("open store");
        let policy = || if config.history { HistoryPolicy::default() } else { HistoryPolicy::off() };
        store
            .register(TypeSpec::new("", "v1", "ConfigMap", CM_RESOURCE).namespaced(true).with_history(policy()))
            .expect("register configmaps");
        store.register(TypeSpec::from_crd(&list_crd()).expect("CRD type").with_history(policy())).expect("register the list type");
        Env { config, dir, store: Some(store) }
    }

    fn store(&self) -> &Store {
        self.store.as_ref().expect("store open")
    }
}

// ---------------------------------------------------------------------------------------------
// Objects.

/// The ConfigMap apply configuration `name`; `flip` selects one of the two values of the changed
/// key, `extra` adds an eleventh key.
fn cm_config(name: &str, flip: bool, extra: bool) -> Value {
    let data: serde_json::Map<String, Value> = (0..CM_KEYS + usize::from(extra))
        .map(|i| {
            let seed = if i == CM_CHANGED_KEY && flip { 1_000 + i as u64 } else { i as u64 };
            (format!("key-{i:02}"), Value::String(filler(seed, CM_VALUE_LEN)))
        })
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS, "labels": {"app": "bench"}},
        "data": data,
    })
}

/// A CRD whose `spec.items` is a map list keyed by `name`, items `{name, value}`.
fn list_crd() -> Value {
    store_objects::map_list_crd("HistList", "histlists", json!({"value": {"type": "string"}}))
}

/// The value of item `i`; the changed item alternates between two values.
fn item_value(i: usize, changed: usize, flip: bool) -> String {
    if i == changed && flip {
        format!("changed-{i}")
    } else {
        format!("value-{i}")
    }
}

/// The list object `name` with `n` items (`flip`: item `n / 2` has its other value; `extra`: one
/// more item, at the end).
fn list_object(name: &str, n: usize, flip: bool, extra: bool) -> Value {
    let items: Vec<Value> =
        (0..n + usize::from(extra)).map(|i| json!({"name": item_name(Shape::List, i), "value": item_value(i, n / 2, flip)})).collect();
    json!({
        "apiVersion": "example.com/v1",
        "kind": "HistList",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"items": items},
    })
}

/// The strategic merge patch setting item `n / 2`'s value.
fn list_patch(n: usize, flip: bool) -> Value {
    json!({"spec": {"items": [{"name": item_name(Shape::List, n / 2), "value": item_value(n / 2, n / 2, flip)}]}})
}

/// A PUT body: the live object (without resourceVersion, so no precondition) with item `n / 2`
/// set to one of its two values.
fn update_body(live: &Value, n: usize, flip: bool) -> Value {
    let mut body = live.clone();
    if let Some(Value::Object(m)) = body.get_mut("metadata") {
        m.remove("resourceVersion");
    }
    body["spec"]["items"][n / 2]["value"] = json!(item_value(n / 2, n / 2, flip));
    body
}

fn check_list(obj: &Value, n: usize, flip: bool) {
    let items = obj.pointer("/spec/items").and_then(Value::as_array).expect("spec.items");
    assert_eq!(items.len(), n, "the write kept every item");
    assert_eq!(items[n / 2]["value"], json!(item_value(n / 2, n / 2, flip)), "the write changed the item");
}

// ---------------------------------------------------------------------------------------------
// Measurement.

/// One write of a workload: `write(store, k)` is the `k`-th write on that store.
type Write<'w> = dyn Fn(&Store, usize) + 'w;

#[derive(Default)]
struct Samples {
    /// Wall seconds per write, one per round.
    wall: Vec<f64>,
    /// Process CPU seconds per write, one per round.
    cpu: Vec<f64>,
    writes: usize,
}

impl Samples {
    fn extend(&mut self, other: Samples) {
        self.wall.extend(other.wall);
        self.cpu.extend(other.cpu);
        self.writes += other.writes;
    }
}

/// Interleaved rounds: in each round every store runs `batch` writes, starting from a store that
/// rotates (round `first_round + r` starts at store `(first_round + r) % stores`). The store's
/// revision must advance by one per write. Returns per-store samples.
fn measure(
    envs: &[Env],
    name: &str,
    write: &Write<'_>,
    batch: usize,
    rounds: usize,
    first_round: usize,
    counter: &mut [usize],
) -> Vec<Samples> {
    let mut out: Vec<Samples> = envs.iter().map(|_| Samples::default()).collect();
    for round in first_round..first_round + rounds {
        for j in 0..envs.len() {
            let i = (round + j) % envs.len();
            let store = envs[i].store();
            let rev0 = store.revision().0;
            let c0 = cpu_ns();
            let t0 = Instant::now();
            for _ in 0..batch {
                write(store, counter[i]);
                counter[i] += 1;
            }
            let dt = t0.elapsed();
            let cpu = cpu_ns().saturating_sub(c0);
            let written = store.revision().0 - rev0;
            assert_eq!(written as usize, batch, "{}: every write of {name} must write", envs[i].config.label);
            out[i].wall.push(dt.as_secs_f64() / batch as f64);
            out[i].cpu.push(cpu as f64 * 1e-9 / batch as f64);
            out[i].writes += batch;
        }
    }
    out
}

/// Median over rounds of `x[r] / base[r]`.
fn ratio(x: &[f64], base: &[f64]) -> f64 {
    median(&x.iter().zip(base).map(|(x, b)| x / b).collect::<Vec<_>>())
}

/// Prints one workload's table: time per write per store, ratios to store 0.
fn report(title: &str, envs: &[Env], samples: &[Samples]) {
    println!("==> {title}");
    println!(
        "    {:<36} {:>10} {:>10} {:>9} {:>9} | {:>10} {:>9} {:>10}",
        "store", "wall med", "wall min", "÷(a) med", "÷(a) min", "cpu med", "÷(a) med", "cpu added"
    );
    let base = &samples[0];
    if std::env::var_os("HISTORY_BENCH_ROUNDS").is_some() {
        for (e, s) in envs.iter().zip(samples) {
            let row: Vec<String> = s.cpu.iter().map(|c| format!("{:.0}", c * 1e6)).collect();
            println!("      {} cpu µs/write by round: {}", e.config.label, row.join(" "));
        }
    }
    for (e, s) in envs.iter().zip(samples) {
        println!(
            "    {:<36} {:>10} {:>10} {:>8.3}× {:>8.3}× | {:>10} {:>8.3}× {:>10}",
            e.config.label,
            us(median(&s.wall)),
            us(min(&s.wall)),
            ratio(&s.wall, &base.wall),
            min(&s.wall) / min(&base.wall),
            us(median(&s.cpu)),
            ratio(&s.cpu, &base.cpu),
            us(median(&s.cpu) - median(&base.cpu)),
        );
    }
    let n = base.wall.len();
    println!(
        "    ({n} rounds × {} writes per store. Per write: wall time, and CPU time of the whole process (every thread). \
         ÷(a) med: median over rounds of store ÷ (a) in the same round; ÷(a) min: min ÷ min)",
        base.writes / n.max(1)
    );
}

// ---------------------------------------------------------------------------------------------
// Storage.

#[derive(Default)]
struct CfBytes {
    records: usize,
    bytes: usize,
    /// Owner index only: the `M` rows among them.
    m_rows: usize,
    m_bytes: usize,
}

/// Per object name: the history records (revision, key + value bytes), the owner-index rows, the
/// object versions.
#[derive(Default)]
struct Storage {
    history: BTreeMap<String, Vec<(u64, usize)>>,
    owners: BTreeMap<String, CfBytes>,
    objects: BTreeMap<String, CfBytes>,
    cf_totals: Vec<(String, usize, usize)>,
}

/// `type id ‖ ns ‖ 0 ‖ name ‖ 0 ‖ !revision`: the name and revision.
fn parse_version_key(key: &[u8]) -> Option<(String, u64)> {
    let (prefix, rev) = key.split_at(key.len().checked_sub(8)?);
    let revision = !u64::from_be_bytes(rev.try_into().ok()?);
    let rest = prefix.get(4..)?.strip_suffix(&[0])?;
    let sep = rest.iter().position(|&b| b == 0)?;
    Some((String::from_utf8_lossy(&rest[sep + 1..]).into_owned(), revision))
}

fn read_storage(dir: &Path, names: &[&str]) -> Storage {
    let opts = rocksdb::Options::default();
    let cfs = rocksdb::DB::list_cf(&opts, dir).expect("list column families");
    let db = rocksdb::DB::open_cf_for_read_only(&opts, dir, &cfs, false).expect("open read-only");
    let mut s = Storage::default();
    for cf_name in &cfs {
        let cf = db.cf_handle(cf_name).expect("cf handle");
        let (mut n, mut bytes) = (0, 0);
        for item in db.iterator_cf(cf, rocksdb::IteratorMode::Start) {
            let (k, v) = item.expect("iterate");
            n += 1;
            bytes += k.len() + v.len();
            match cf_name.as_str() {
                "history" => {
                    if let Some((name, rev)) = parse_version_key(&k) {
                        s.history.entry(name).or_default().push((rev, k.len() + v.len()));
                    }
                }
                "objects" => {
                    if let Some((name, _)) = parse_version_key(&k) {
                        let e = s.objects.entry(name).or_default();
                        e.records += 1;
                        e.bytes += k.len() + v.len();
                    }
                }
                "owners" => {
                    // Every owners key ends with the object prefix: `… ns ‖ 0 ‖ name ‖ 0`; `M` rows
                    // (one per manager and object, holding the manager's whole field set) apart
                    // from the path rows (`G`: one per level of the manager's set; `P`: one per
                    // path no level holds).
                    if let Some(name) = names.iter().find(|name| k.ends_with(format!("{NS}\0{name}\0").as_bytes())) {
                        let e = s.owners.entry((*name).to_string()).or_default();
                        e.records += 1;
                        e.bytes += k.len() + v.len();
                        if k.first() == Some(&b'M') {
                            e.m_rows += 1;
                            e.m_bytes += k.len() + v.len();
                        }
                    }
                }
                _ => {}
            }
        }
        s.cf_totals.push((cf_name.clone(), n, bytes));
    }
    s
}

fn report_storage(label: &str, s: &Storage, names: &[&str]) {
    println!("    {label}");
    let totals: Vec<String> = s.cf_totals.iter().map(|(cf, n, b)| format!("{cf} {n} rows/{b} B")).collect();
    println!("      column families (key + value bytes): {}", totals.join(", "));
    for name in names {
        let mut recs = s.history.get(*name).cloned().unwrap_or_default();
        recs.sort_unstable();
        let objects = s.objects.get(*name);
        let versions = objects.map_or(0, |o| o.records);
        let per_version = objects.map_or(0.0, |o| o.bytes as f64 / o.records.max(1) as f64);
        let owners = s.owners.get(*name);
        let owner_txt = owners.map_or("owners: none".to_string(), |o| {
            format!(
                "owners: {} rows, {} B (M: {} row {} B; P: {} rows {} B)",
                o.records,
                o.bytes,
                o.m_rows,
                o.m_bytes,
                o.records - o.m_rows,
                o.bytes - o.m_bytes
            )
        });
        if recs.is_empty() {
            println!("      {name:<12} versions {versions:>4} ({per_version:>9.0} B each)  history: none  {owner_txt}");
            continue;
        }
        let create = recs[0].1;
        let changes: Vec<f64> = recs[1..].iter().map(|&(_, b)| b as f64).collect();
        let total: f64 = changes.iter().sum();
        println!(
            "      {name:<12} versions {versions:>4} ({per_version:>9.0} B each)  history: create record {create} B; {} change records, {:.1} B each (min {:.0}, max {:.0})  {owner_txt}",
            changes.len(),
            total / changes.len().max(1) as f64,
            min(&changes),
            changes.iter().copied().fold(0.0, f64::max),
        );
    }
}

// ---------------------------------------------------------------------------------------------

fn main() {
    let args = args::Args::parse(&["cm", "list"], &[]);
    let items = args.num("items", 10_000);
    println!("history bench: field history and the owner index on store writes (sync off unless noted)");
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let allowed = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap_or("?").trim().to_string();
    println!("    cpus usable: {} (allowed: {allowed})", std::thread::available_parallelism().map_or(0, |n| n.get()));

    let envs: Vec<Env> = CONFIGS.iter().map(|&c| Env::open(c)).collect();
    let mut names: Vec<&str> = Vec::new();

    if args.has("cm") {
        names.extend([CM_NAME, CM_SET]);
        let cfgs = [cm_config(CM_NAME, false, false), cm_config(CM_NAME, true, false)];
        let bytes = serde_json::to_vec(&cfgs[0]).expect("json").len();
        let data_bytes = serde_json::to_vec(&cfgs[0]["data"]).expect("json").len();
        let apply = WriteOptions::new(APPLIER);
        // Write k applies the config the store does not hold (k = 0 writes cfgs[1]).
        let write = |store: &Store, k: usize| {
            black_box(store.apply(&Collection::new(CM_RESOURCE, Some(NS)), &cfgs[(k + 1) % 2], &apply).expect("apply"));
        };
        let mut counter = vec![0usize; envs.len()];
        for e in &envs {
            e.store().apply(&Collection::new(CM_RESOURCE, Some(NS)), &cfgs[0], &apply).expect("create");
        }
        measure(&envs, "cm apply", &write, args.num("warmup", 20), 1, 0, &mut counter);
        let stored = envs[3].store().get(&ObjectKey::new(CM_RESOURCE, Some(NS), CM_NAME), &Default::default()).expect("get");
        let samples = measure(&envs, "cm apply", &write, args.num("cm-batch", 25), args.num("cm-rounds", 201), 0, &mut counter);
        report(
            &format!(
                "cm: apply of a ConfigMap ({bytes} B config, `data` {data_bytes} B in {CM_KEYS} keys, stored object {} B with managedFields), one key changed per apply",
                serde_json::to_vec(&stored).expect("json").len()
            ),
            &envs,
            &samples,
        );

        // Supplement: an apply that adds or removes an eleventh key (alternating), so that the
        // applier's field set changes and the owner index has rows to write.
        let set_cfgs = [cm_config(CM_SET, false, false), cm_config(CM_SET, false, true)];
        let set_write = |store: &Store, k: usize| {
            black_box(store.apply(&Collection::new(CM_RESOURCE, Some(NS)), &set_cfgs[(k + 1) % 2], &apply).expect("apply"));
        };
        let mut counter = vec![0usize; envs.len()];
        for e in &envs {
            e.store().apply(&Collection::new(CM_RESOURCE, Some(NS)), &set_cfgs[0], &apply).expect("create");
        }
        measure(&envs, "cm apply, key added/removed", &set_write, args.num("warmup", 20), 1, 0, &mut counter);
        let samples = measure(
            &envs,
            "cm apply, key added/removed",
            &set_write,
            args.num("cm-batch", 25),
            args.num("cm-rounds", 201),
            0,
            &mut counter,
        );
        report("cm (supplement): apply adding / removing an 11th key (the applier's field set changes every write)", &envs, &samples);

        // Sync on: (a) against (d), in their own stores.
        let sync_envs: Vec<Env> = SYNC_CONFIGS.iter().map(|&c| Env::open(c)).collect();
        let mut counter = vec![0usize; sync_envs.len()];
        for e in &sync_envs {
            e.store().apply(&Collection::new(CM_RESOURCE, Some(NS)), &cfgs[0], &apply).expect("create");
        }
        measure(&sync_envs, "cm apply (sync)", &write, 5, 1, 0, &mut counter);
        let samples =
            measure(&sync_envs, "cm apply (sync)", &write, args.num("sync-batch", 10), args.num("sync-rounds", 41), 0, &mut counter);
        report("cm, sync on (WAL fsync per write): (a) against (d)", &sync_envs, &samples);
    }

    if args.has("list") {
        names.extend([LIST_APPLY, LIST_PATCH, LIST_UPDATE, LIST_SET]);
        let t0 = Instant::now();
        let configs = [list_object(LIST_APPLY, items, false, false), list_object(LIST_APPLY, items, true, false)];
        let set_configs = [list_object(LIST_SET, items, false, false), list_object(LIST_SET, items, false, true)];
        let patches = [list_patch(items, false), list_patch(items, true)];
        let apply = WriteOptions::new(APPLIER);
        let ctl = WriteOptions::new(CONTROLLER);
        // Each store's update bodies come from its own created object (uid, timestamps).
        let mut update_bodies: Vec<[Value; 2]> = Vec::new();
        for e in &envs {
            let s = e.store();
            s.apply(&Collection::new(LIST_RESOURCE, Some(NS)), &configs[0], &apply).expect("create by apply");
            s.apply(&Collection::new(LIST_RESOURCE, Some(NS)), &set_configs[0], &apply).expect("create by apply");
            s.create(&Collection::new(LIST_RESOURCE, Some(NS)), &list_object(LIST_PATCH, items, false, false), &ctl)
                .expect("create for patch");
            let live = s
                .create(&Collection::new(LIST_RESOURCE, Some(NS)), &list_object(LIST_UPDATE, items, false, false), &ctl)
                .expect("create for update");
            update_bodies.push([update_body(&live, items, false), update_body(&live, items, true)]);
        }
        println!("    (list objects created in {:.1} s)", t0.elapsed().as_secs_f64());
        let stores: Vec<&Store> = envs.iter().map(Env::store).collect();
        let index_of = |s: &Store| stores.iter().position(|x| std::ptr::eq(*x, s)).expect("store");

        // Write k sets the changed item to the value it does not have (k even: flipped).
        let apply_write = |store: &Store, k: usize| {
            let flip = k.is_multiple_of(2);
            let out = store.apply(&Collection::new(LIST_RESOURCE, Some(NS)), &configs[usize::from(flip)], &apply).expect("apply");
            if k < 2 {
                check_list(&out, items, flip);
            }
            black_box(out);
        };
        let patch_write = |store: &Store, k: usize| {
            let flip = k.is_multiple_of(2);
            let out = store
                .patch(&ObjectKey::new(LIST_RESOURCE, Some(NS), LIST_PATCH), PatchType::Strategic, &patches[usize::from(flip)], &ctl)
                .expect("patch");
            if k < 2 {
                check_list(&out, items, flip);
            }
            black_box(out);
        };
        let update_write = |store: &Store, k: usize| {
            let flip = k.is_multiple_of(2);
            let out = store
                .update(&Collection::new(LIST_RESOURCE, Some(NS)), &update_bodies[index_of(store)][usize::from(flip)], &ctl)
                .expect("update");
            if k < 2 {
                check_list(&out, items, flip);
            }
            black_box(out);
        };
        // Write k adds the extra item (k even) or removes it.
        let set_write = |store: &Store, k: usize| {
            let extra = k.is_multiple_of(2);
            let out = store.apply(&Collection::new(LIST_RESOURCE, Some(NS)), &set_configs[usize::from(extra)], &apply).expect("apply");
            if k < 2 {
                let n = out.pointer("/spec/items").and_then(Value::as_array).map_or(0, Vec::len);
                assert_eq!(n, items + usize::from(extra), "the apply added or removed the item");
            }
            black_box(out);
        };
        let workloads: [(&str, &Write<'_>, String); 4] = [
            ("list apply", &apply_write, format!("list: apply of the full {items}-item config by its applier, one item's value changed")),
            ("list patch", &patch_write, format!("list: strategic merge patch of one item of {items} (by an Update manager)")),
            ("list update", &update_write, format!("list: update (PUT) of the whole {items}-item object, one item's value changed")),
            (
                "list apply set",
                &set_write,
                format!(
                    "list (supplement): apply of the full config adding / removing item {items} + 1 (the field set changes every write)"
                ),
            ),
        ];
        let batch = args.num("list-batch", 1);
        let rounds = args.num("list-rounds", 25);
        let mut counters: Vec<Vec<usize>> = workloads.iter().map(|_| vec![0usize; envs.len()]).collect();
        for ((name, write, _), c) in workloads.iter().zip(counters.iter_mut()) {
            measure(&envs, name, *write, args.num("warmup", 2), 1, 0, c);
        }
        // The write kinds interleave too: each round runs apply, patch, update, … on every
        // store, the store order rotating from round to round.
        let mut all: Vec<Vec<Samples>> = workloads.iter().map(|_| envs.iter().map(|_| Samples::default()).collect()).collect();
        for round in 0..rounds {
            for (wi, (name, write, _)) in workloads.iter().enumerate() {
                let s = measure(&envs, name, *write, batch, 1, round, &mut counters[wi]);
                for (acc, one) in all[wi].iter_mut().zip(s) {
                    acc.extend(one);
                }
            }
        }
        for ((_, _, title), s) in workloads.iter().zip(&all) {
            report(title, &envs, s);
        }
        for name in [LIST_APPLY, LIST_PATCH, LIST_UPDATE, LIST_SET] {
            let log = envs[3].store().object_log(&ObjectKey::new(LIST_RESOURCE, Some(NS), name), Some(1)).expect("object log");
            for e in &log {
                println!(
                    "    (d) {name} newest log entry: revision {} {} by {} ({}): {} changed fields",
                    e.by.revision, e.event, e.by.manager, e.by.operation, e.changed_fields
                );
            }
        }
    }

    // Storage: close every store, read its RocksDB directory.
    println!("==> storage (after the writes above; key + value bytes, read back with the rocksdb crate)");
    for mut e in envs {
        e.store.take();
        let s = read_storage(e.dir.path(), &names);
        report_storage(e.config.label, &s, &names);
    }
}
