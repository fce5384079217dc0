//! An etcd member on 127.0.0.1 for tests and benches: the `etcd` binary on PATH (3.4, Debian's
//! `etcd-server`), on free ports, alone or in a cluster. One file, included with `#[path]` by
//! the engine's test support and its etcd unit tests, the server's etcd tests and
//! `benches/etcd_load.rs`.
//!
//! A shell holds the etcd process and kills it (-9) when its standard input closes: when the
//! member is killed or dropped, and also when this process ends without dropping it (a member
//! kept in a `static` for a whole test binary).
#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Whether an `etcd` binary runs here; prints why not when it does not.
pub fn available() -> bool {
    let found = Command::new("etcd").arg("--version").output().is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("skipped: no `etcd` binary on PATH (Debian: apt-get install etcd-server)");
    }
    found
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("its address").port()
}

/// A directory for member data: on `/dev/shm` when there is one (tests), else the temp dir.
pub fn fast_dir() -> PathBuf {
    if std::path::Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    }
}

/// One etcd member.
pub struct Member {
    pub name: String,
    pub client: u16,
    pub peer: u16,
    pub dir: PathBuf,
    /// Remove `dir` when the member stops.
    pub remove_dir: bool,
    shell: Option<Child>,
}

impl Member {
    /// A member named `name` keeping its data in `dir`, on free ports; not started.
    pub fn new(name: &str, dir: PathBuf) -> Member {
        Member { name: name.into(), client: free_port(), peer: free_port(), dir, remove_dir: false, shell: None }
    }

    /// A single-member cluster started in `dir` with `extra` flags, ready; `None` (with the
    /// reason printed) without an etcd binary.
    pub fn single(dir: PathBuf, extra: &[&str]) -> Option<Member> {
        if !available() {
            return None;
        }
        let mut m = Member::new("solo", dir);
        let cluster = m.cluster_entry();
        m.start(&cluster, "new", extra);
        m.wait_ready();
        Some(m)
    }

    /// The client URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client)
    }

    /// `name=peer URL`, this member's entry of `--initial-cluster`.
    pub fn cluster_entry(&self) -> String {
        format!("{}=http://127.0.0.1:{}", self.name, self.peer)
    }

    /// Starts the member in `cluster` (`--initial-cluster`), `state` `new` or `existing`.
    pub fn start(&mut self, cluster: &str, state: &str, extra: &[&str]) {
        let peer = format!("http://127.0.0.1:{}", self.peer);
        let mut args = vec![
            "etcd".to_string(),
            "--name".into(),
            self.name.clone(),
            "--data-dir".into(),
            self.dir.display().to_string(),
            "--listen-client-urls".into(),
            self.url(),
            "--advertise-client-urls".into(),
            self.url(),
            "--listen-peer-urls".into(),
            peer.clone(),
            "--initial-advertise-peer-urls".into(),
            peer,
            "--initial-cluster".into(),
            cluster.into(),
            "--initial-cluster-state".into(),
            state.into(),
            "--initial-cluster-token".into(),
            "fieldstore-test".into(),
            "--log-level".into(),
            "error".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let quoted: Vec<String> = args.iter().map(|a| format!("'{}'", a.replace('\'', "'\\''"))).collect();
        let cleanup = if self.remove_dir { format!("; rm -rf '{}'", self.dir.display()) } else { String::new() };
        let script = format!("{} >/dev/null 2>&1 & pid=$!; cat >/dev/null; kill -9 $pid; wait $pid 2>/dev/null{cleanup}", quoted.join(" "));
        let shell = Command::new("sh").arg("-c").arg(script).stdin(Stdio::piped()).spawn().expect("start a shell for etcd");
        self.shell = Some(shell);
    }

    /// Waits (up to 20 s) until the member takes client connections.
    pub fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", self.client)).is_err() {
            assert!(Instant::now() < deadline, "etcd did not start on {}", self.url());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills the member (-9) and waits until it is gone.
    pub fn kill(&mut self) {
        if let Some(mut shell) = self.shell.take() {
            if let Some(mut stdin) = shell.stdin.take() {
                let _ = stdin.flush();
            }
            let _ = shell.wait();
        }
    }

    /// Leaves the member running until this process ends (for a member kept in a `static`).
    pub fn keep_until_exit(mut self) {
        if let Some(shell) = self.shell.take() {
            // The shell's stdin (this process's pipe) stays open until the process ends.
            std::mem::forget(shell);
        }
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.kill();
    }
}
