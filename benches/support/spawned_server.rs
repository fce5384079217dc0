//! A `fieldstore serve` process for the served-path benches (`grpc_load`, `watch_scale`): spawned
//! on a fresh data directory, its address, its CPU time from `/proc`, SIGTERM, and a warning when
//! its binary is older than the sources.

use fieldstore_server::proto::pb::store_client::StoreClient;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime};
use tonic::transport::Channel;

/// A spawned `fieldstore serve --no-http` on a fresh data directory, killed when dropped.
pub(crate) struct Server {
    pub(crate) child: Child,
    /// Where it serves gRPC (`host:port`).
    pub(crate) addr: String,
    _stdout: BufReader<ChildStdout>,
    dir: tempfile::TempDir,
}

impl Server {
    /// Starts `bin` with `extra` serve arguments; `tag` names its data directory.
    pub(crate) fn start(bin: &Path, tag: &str, extra: &[String]) -> Server {
        let dir = tempdir(tag, "server");
        let log = std::fs::File::create(dir.path().join("server.log")).expect("server log");
        let mut cmd = Command::new(bin);
        cmd.arg("--data").arg(dir.path().join("data")).args(["serve", "--listen", "127.0.0.1:0", "--no-http"]);
        cmd.args(extra);
        let mut child = cmd.stdout(Stdio::piped()).stderr(log).spawn().unwrap_or_else(|e| panic!("spawn {}: {e}", bin.display()));
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let addr = match line.strip_prefix("fieldstore: serving on ").and_then(|r| r.split_whitespace().next()) {
            Some(a) => a.to_string(),
            None => {
                let _ = child.kill();
                let log = std::fs::read_to_string(dir.path().join("server.log")).unwrap_or_default();
                panic!("the server printed no address (first line {line:?}); its log:\n{log}");
            }
        };
        Server { child, addr, _stdout: stdout, dir }
    }

    /// The server's CPU time so far.
    pub(crate) fn cpu(&self) -> Duration {
        cpu_of(&format!("/proc/{}/stat", self.child.id()))
    }

    /// A client on a connection of its own.
    pub(crate) async fn client(&self) -> StoreClient<Channel> {
        let ch = Channel::from_shared(format!("http://{}", self.addr)).unwrap().connect().await.expect("connect to the server");
        StoreClient::new(ch).max_decoding_message_size(64 << 20)
    }

    /// SIGTERM; the exit status (None: still running after 15 s) and how long it took.
    pub(crate) fn terminate(&mut self) -> (Option<ExitStatus>, Duration) {
        let t = Instant::now();
        Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().expect("kill -TERM");
        while t.elapsed() < Duration::from_secs(15) {
            if let Some(s) = self.child.try_wait().unwrap() {
                return (Some(s), t.elapsed());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        (None, t.elapsed())
    }

    /// The last lines of the server's log.
    pub(crate) fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(5)..].join("\n")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A fresh directory under target/tmp: the workspace's file system (fsync costs what it costs
/// there), not /tmp.
pub(crate) fn tempdir(bench: &str, tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("{bench}-{tag}-")).tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir")
}

/// CPU time (user + system, every thread) of a process, from its `/proc/PID/stat`.
pub(crate) fn cpu_of(stat: &str) -> Duration {
    let (user, system) = cpu_split_of(stat);
    user + system
}

/// User and system CPU time (every thread) of a process, from its `/proc/PID/stat`: what it ran
/// itself, and what the kernel ran for it (syscalls, loopback TCP, fsync, context switches).
pub(crate) fn cpu_split_of(stat: &str) -> (Duration, Duration) {
    let stat = std::fs::read_to_string(stat).unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest.split_whitespace().map(|s| s.parse().unwrap_or(0)).collect();
    // Fields 14 (utime) and 15 (stime) of proc(5); `rest` starts at field 3. Ticks of 10 ms.
    let tick = |i: usize| Duration::from_millis(f.get(i).copied().unwrap_or(0) * 10);
    (tick(11), tick(12))
}

/// This process's CPU time so far.
pub(crate) fn own_cpu() -> Duration {
    cpu_of("/proc/self/stat")
}

/// The machine's load averages (1, 5, 15 min).
pub(crate) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg").unwrap_or_default().split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// Warns when a source file the server is built from is newer than its binary.
pub(crate) fn check_binary(bin: &Path, bench: &str) {
    let Ok(built) = std::fs::metadata(bin).and_then(|m| m.modified()) else {
        eprintln!(
            "{bench}: no server binary at {}.\nBuild it first: cargo build --release -p fieldstore-server (or set the bench's *_SERVER variable to a fieldstore binary).",
            bin.display()
        );
        std::process::exit(2);
    };
    fn newest(dir: &Path, acc: &mut Option<(SystemTime, PathBuf)>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                newest(&p, acc);
            } else if let Ok(m) = e.metadata().and_then(|m| m.modified()) {
                if acc.as_ref().is_none_or(|(t, _)| m > *t) {
                    *acc = Some((m, p));
                }
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut acc = None;
    for d in ["server/src", "server/build.rs", "engine/src", "codec/src", "proto"] {
        let p = root.join(d);
        if p.is_file() {
            if let Ok(m) = std::fs::metadata(&p).and_then(|m| m.modified()) {
                if acc.as_ref().is_none_or(|(t, _)| m > *t) {
                    acc = Some((m, p));
                }
            }
        } else {
            newest(&p, &mut acc);
        }
    }
    if let Some((t, p)) = acc {
        if t > built {
            eprintln!(
                "{bench}: WARNING: {} is newer than {}; rebuild with cargo build --release -p fieldstore-server",
                p.display(),
                bin.display()
            );
        }
    }
}
