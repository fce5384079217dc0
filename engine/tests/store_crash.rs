//! Durability: a child process writes with sync on and is killed (SIGKILL) at a random moment;
//! after reopening, every acknowledged revision is present and readable, nothing torn.
//!
//! The child is this test binary run again with `FIELDSTORE_CRASH_CHILD` set to the data
//! directory: it runs only [`crash_child`], which writes and prints `ack <revision> <name> <v>`
//! after each acknowledged write.
// Needs the RocksDB-backed store (the engine's `store` feature).
#![cfg(feature = "store")]

use fieldstore_engine::store::{Collection, GetOptions, ObjectKey, Options, ResourceVersionMatch, Revision, Store, TypeSpec, WriteOptions};
use rand::Rng;
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const CHILD_ENV: &str = "FIELDSTORE_CRASH_CHILD";

/// The writer run in the child process (a no-op in a normal test run).
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else { return };
    let store = Store::open(&dir, Options::default()).unwrap();
    if store.types().is_empty() {
        store.register(TypeSpec::new("", "v1", "ConfigMap", "configmaps").namespaced(true)).unwrap();
    }
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (store, out) = (store.clone(), out.clone());
            std::thread::spawn(move || {
                for i in 0u64.. {
                    let name = format!("o-{t}-{}", i % 50);
                    let v = format!("{}-{i}", std::process::id());
                    let cfg = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": v, "pad": "x".repeat(512)}});
                    let o = store.apply(&Collection::new("configmaps", Some("ns")), &cfg, &WriteOptions::new("crash").force(true)).unwrap();
                    let rv = o["metadata"]["resourceVersion"].as_str().unwrap().to_string();
                    let mut out = out.lock().unwrap();
                    writeln!(out, "ack {rv} {name} {v}").unwrap();
                    out.flush().unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn every_acknowledged_write_survives_kill_9() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand::thread_rng();
    let mut total_acks = 0;
    for round in 0..3 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let acks = Arc::new(Mutex::new(Vec::new()));
        let reader = {
            let acks = acks.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    let parts: Vec<&str> = line.split_whitespace().collect();
                    if let ["ack", rv, name, v] = parts[..] {
                        acks.lock().unwrap().push((rv.parse::<u64>().unwrap(), name.to_string(), v.to_string()));
                    }
                }
            })
        };
        // Let it get going (open + first writes), then kill at a random moment.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while acks.lock().unwrap().len() < 20 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(rng.gen_range(50..500)));
        child.kill().unwrap();
        child.wait().unwrap();
        reader.join().unwrap();
        let acks = acks.lock().unwrap().clone();
        assert!(acks.len() >= 20, "round {round}: the child acknowledged only {} writes", acks.len());
        total_acks += acks.len();

        let store = Store::open(dir.path(), Options::default()).unwrap();
        let max = acks.iter().map(|a| a.0).max().unwrap();
        assert!(store.revision() >= Revision(max), "round {round}: revision {} < acknowledged {max}", store.revision());
        for (rv, name, v) in &acks {
            let o = store
                .get(
                    &ObjectKey::new("configmaps", Some("ns"), name),
                    &GetOptions { resource_version: Some(rv.to_string()), resource_version_match: Some(ResourceVersionMatch::Exact) },
                )
                .unwrap_or_else(|e| panic!("round {round}: revision {rv} of {name} lost: {e}"));
            assert_eq!(o["data"]["v"], json!(v), "round {round}: revision {rv}");
            assert_eq!(o["metadata"]["resourceVersion"], json!(rv.to_string()));
        }
        // Every revision up to the current one is a readable, untorn version.
        let list = store.list(&Collection::new("configmaps", Some("ns")), &Default::default()).unwrap();
        assert_eq!(list.resource_version, store.revision());
        for item in &list.items {
            assert_eq!(item["data"]["pad"].as_str().unwrap().len(), 512);
        }
    }
    assert!(total_acks >= 60);
}
