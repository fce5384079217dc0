//! Watch scale: 10,000 concurrent gRPC watch streams on one `fieldstore serve`, 1,000 changes fanned
//! out to all of them (10 million events), each delivered once and in order; the server's CPU per
//! delivered event and its memory are reported (issue 22; results in `benches/SERVED_RESULTS.md`).
//!
//! ```text
//! cargo build --release -p fieldstore-server     # the server binary this bench spawns
//! cargo bench --bench watch_scale
//! WATCH_SCALE_STREAMS=2000 WATCH_SCALE_CHANGES=500 cargo bench --bench watch_scale
//! ```
//!
//! One client process (this bench) with one tokio runtime opens `WATCH_SCALE_STREAMS` (10,000)
//! watch streams spread over `WATCH_SCALE_CONNECTIONS` (100) HTTP/2 connections, all on
//! `configmaps` in one namespace from the revision before the writes. Then one writer connection
//! creates `WATCH_SCALE_CHANGES` (1,000) small ConfigMaps (about 300 bytes), 8 at a time. Every
//! stream must receive exactly the revisions written, each once, in increasing order.
//!
//! Measured: wall time from the first write until the last stream has every event; the server's
//! CPU time (utime + stime from `/proc/PID/stat`) over that window, per delivered event; its
//! resident memory (`VmRSS`, `VmHWM` from `/proc/PID/status`) with every stream open and at the
//! end; the bench's own CPU per event (the client shares the machine's cores with the server).
//! `WATCH_SCALE_SERVER` points at another `fieldstore` binary.
#![allow(clippy::unwrap_used, reason = "a measurement whose setup fails has nothing to measure: it stops there")]

use fieldstore_server::proto::pb;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "support/spawned_server.rs"]
mod spawned_server;
use spawned_server::*;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const NS: &str = "scale";

fn env_num(k: &str, default: usize) -> usize {
    std::env::var(k).ok().map_or(default, |v| v.trim().parse().unwrap_or_else(|_| panic!("{k}: not a number: {v}")))
}

/// A line of `/proc/PID/status` in KiB (`VmRSS`, `VmHWM`).
fn status_kib(pid: u32, key: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines().find_map(|l| l.strip_prefix(key)?.trim_start_matches(':').trim().strip_suffix("kB")?.trim().parse().ok()).unwrap_or(0)
}

/// What one stream received: its revisions in order of arrival, and any error or early end.
#[derive(Default)]
struct Received {
    revisions: Vec<u64>,
    problem: Option<String>,
}

fn body(i: usize) -> pb::Body {
    let o = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("cm-{i}"), "namespace": NS},
        "data": {"value": format!("{i:0>200}")},
    });
    pb::Body { content_type: "application/json".into(), data: serde_json::to_vec(&o).unwrap().into() }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench --list` probing for tests
    }
    let streams = env_num("WATCH_SCALE_STREAMS", 10_000).max(1);
    let changes = env_num("WATCH_SCALE_CHANGES", 1_000).max(1);
    let conns = env_num("WATCH_SCALE_CONNECTIONS", 100).clamp(1, streams);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let bin = std::env::var_os("WATCH_SCALE_SERVER").map_or_else(|| root.join("target/release/fieldstore"), PathBuf::from);
    check_binary(&bin, "watch_scale");
    // The watch buffer (1,024 events) holds every change of the run: a stream the client has not
    // read yet is not a slow watcher here.
    assert!(changes <= 1024, "WATCH_SCALE_CHANGES above the server's watch buffer (1024) would end lagging streams with 410");
    let server = Server::start(&bin, "watch-scale", &["--max-watches-per-client".into(), (streams + 10).to_string()]);
    let pid = server.child.id();
    let load_start = loadavg();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut writer = server.client().await;
        let rev: u64 = writer.revision(pb::RevisionRequest {}).await.unwrap().into_inner().revision;
        let rss_idle = status_kib(pid, "VmRSS");

        // Open every stream (from `rev`, so none can miss a change however late it starts).
        let t_open = Instant::now();
        let mut clients = Vec::with_capacity(conns);
        for _ in 0..conns {
            clients.push(server.client().await);
        }
        let done = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::with_capacity(streams);
        for i in 0..streams {
            let mut c = clients[i % conns].clone();
            let req = pb::WatchRequest { resource: "configmaps".into(), namespace: NS.into(), resource_version: rev.to_string(), ..Default::default() };
            let mut stream = c.watch(req).await.unwrap_or_else(|e| panic!("stream {i}: {e}")).into_inner();
            let done = done.clone();
            tasks.push(tokio::spawn(async move {
                let mut r = Received { revisions: Vec::with_capacity(changes), problem: None };
                while r.revisions.len() < changes {
                    match stream.message().await {
                        Ok(Some(ev)) if ev.r#type == "ADDED" => r.revisions.push(ev.resource_version),
                        Ok(Some(ev)) => {
                            r.problem = Some(format!("unexpected {} event", ev.r#type));
                            break;
                        }
                        Ok(None) => {
                            r.problem = Some("the stream ended".into());
                            break;
                        }
                        Err(e) => {
                            r.problem = Some(e.to_string());
                            break;
                        }
                    }
                }
                done.fetch_add(1, Ordering::Relaxed);
                r
            }));
        }
        let opened = t_open.elapsed();
        let rss_open = status_kib(pid, "VmRSS");
        println!("watch_scale: {streams} streams over {conns} connections open in {:.2} s; server RSS {} MiB idle, {} MiB with the streams", opened.as_secs_f64(), rss_idle / 1024, rss_open / 1024);

        // The writes: 8 writers on one connection.
        let (cpu0, own0, t0) = (server.cpu(), own_cpu(), Instant::now());
        let next = Arc::new(AtomicU64::new(0));
        let writers: Vec<_> = (0..8)
            .map(|_| {
                let (mut w, next) = (writer.clone(), next.clone());
                tokio::spawn(async move {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                        if i >= changes {
                            return;
                        }
                        let req = pb::WriteRequest { resource: "configmaps".into(), namespace: NS.into(), body: Some(body(i)), ..Default::default() };
                        w.create(req).await.unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.await.unwrap();
        }
        let written = t0.elapsed();
        let mut results = Vec::with_capacity(streams);
        for t in tasks {
            results.push(t.await.unwrap());
        }
        let all = t0.elapsed();
        let (cpu, own) = (server.cpu() - cpu0, own_cpu() - own0);
        let (rss_end, hwm) = (status_kib(pid, "VmRSS"), status_kib(pid, "VmHWM"));

        // Every stream: exactly rev+1 ..= rev+changes, in order.
        let want: Vec<u64> = (rev + 1..=rev + changes as u64).collect();
        let (mut delivered, mut bad) = (0u64, Vec::new());
        for (i, r) in results.iter().enumerate() {
            delivered += r.revisions.len() as u64;
            if r.revisions != want || r.problem.is_some() {
                bad.push(format!("stream {i}: {} events, {:?}", r.revisions.len(), r.problem));
            }
        }
        let per = |d: Duration| d.as_secs_f64() * 1e6 / delivered.max(1) as f64;
        println!("watch_scale: {changes} changes written in {:.2} s; every stream had them after {:.2} s (load average {load_start} at the start, {} at the end)", written.as_secs_f64(), all.as_secs_f64(), loadavg());
        println!();
        println!("| streams | connections | changes | events delivered / expected | streams wrong | events/s | server CPU s | server CPU µs per event | bench (client) CPU µs per event | server RSS with streams open | RSS at end | peak RSS |");
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
        println!(
            "| {streams} | {conns} | {changes} | {delivered} / {} | {} | {:.0} | {:.1} | {:.2} | {:.2} | {} MiB | {} MiB | {} MiB |",
            streams as u64 * changes as u64,
            bad.len(),
            delivered as f64 / all.as_secs_f64(),
            cpu.as_secs_f64(),
            per(cpu),
            per(own),
            rss_open / 1024,
            rss_end / 1024,
            hwm / 1024
        );
        for b in bad.iter().take(5) {
            println!("  {b}");
        }
        assert!(bad.is_empty(), "{} streams did not receive every change once and in order; the server's log:\n{}", bad.len(), server.log_tail());
        println!("\n==> OK: {delivered} events, each delivered once and in order");
    });
    let mut server = server;
    let (status, took) = server.terminate();
    println!("watch_scale: SIGTERM -> {status:?} in {:.0} ms", took.as_secs_f64() * 1e3);
}
